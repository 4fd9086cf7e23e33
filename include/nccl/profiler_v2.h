/*
 * profiler_v2.h — profiler API v2 (NCCL 2.24 and 2.25).
 *
 * Written from spec/nccl-profiler-abi.md §2.4. Versus v1: func, datatype,
 * algo and proto become strings (§2.2.7); op, isCollnet and isNvls are gone.
 * The proxyOp/proxyStep arms, the state args and init are unchanged.
 */
#ifndef PT_NCCL_PROFILER_V2_H
#define PT_NCCL_PROFILER_V2_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profiler.h"
#include "profiler_v1.h"

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
  };
} ncclProfilerEventDescr_v2_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v2_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v2_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v2_t eState,
                                   ncclProfilerEventStateArgs_v2_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v2_t;

#define PT_V2_OFF(m) offsetof(ncclProfilerEventDescr_v2_t, m)
_Static_assert(sizeof(ncclProfilerEventDescr_v2_t) == 128, "v2 descriptor is 128 bytes");
_Static_assert(PT_V2_OFF(type) == 0 && PT_V2_OFF(parentObj) == 8 && PT_V2_OFF(rank) == 16,
               "v2 header");
_Static_assert(PT_V2_OFF(coll.name) == 24 && PT_V2_OFF(coll.commHash) == 32 &&
                   PT_V2_OFF(coll.seqNumber) == 40 && PT_V2_OFF(coll.func) == 48 &&
                   PT_V2_OFF(coll.sendBuff) == 56 && PT_V2_OFF(coll.recvBuff) == 64 &&
                   PT_V2_OFF(coll.count) == 72 && PT_V2_OFF(coll.root) == 80 &&
                   PT_V2_OFF(coll.datatype) == 88 && PT_V2_OFF(coll.trafficBytes) == 96 &&
                   PT_V2_OFF(coll.nMaxChannels) == 104 && PT_V2_OFF(coll.nWarps) == 105 &&
                   PT_V2_OFF(coll.algo) == 112 && PT_V2_OFF(coll.proto) == 120,
               "v2 coll");
_Static_assert(PT_V2_OFF(p2p.name) == 24 && PT_V2_OFF(p2p.commHash) == 32 &&
                   PT_V2_OFF(p2p.func) == 40 && PT_V2_OFF(p2p.buff) == 48 &&
                   PT_V2_OFF(p2p.datatype) == 56 && PT_V2_OFF(p2p.count) == 64 &&
                   PT_V2_OFF(p2p.peer) == 72,
               "v2 p2p");
_Static_assert(PT_V2_OFF(proxyOp.pid) == 24 && PT_V2_OFF(proxyOp.channelId) == 28 &&
                   PT_V2_OFF(proxyOp.peer) == 32 && PT_V2_OFF(proxyOp.nSteps) == 36 &&
                   PT_V2_OFF(proxyOp.chunkSize) == 40 && PT_V2_OFF(proxyOp.isSend) == 44,
               "v2 proxyOp");
_Static_assert(PT_V2_OFF(proxyStep.step) == 24, "v2 proxyStep");
#undef PT_V2_OFF
_Static_assert(sizeof(ncclProfiler_v2_t) == 48, "function table is 6 pointers");

#endif
