/*
 * profiler_v3.h — profiler API v3 (NCCL 2.26).
 *
 * Written from spec/nccl-profiler-abi.md §2.5. Versus v2: coll loses
 * trafficBytes; new arms kernelCh {channelId} and netPlugin {id, data} for
 * the new KernelCh (64) and NetPlugin (128) events. States (0–18), state
 * args and init are unchanged.
 */
#ifndef PT_NCCL_PROFILER_V3_H
#define PT_NCCL_PROFILER_V3_H

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
    struct {
      uint8_t channelId;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v3_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v3_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v3_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v3_t eState,
                                   ncclProfilerEventStateArgs_v3_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v3_t;

#define PT_V3_OFF(m) offsetof(ncclProfilerEventDescr_v3_t, m)
_Static_assert(sizeof(ncclProfilerEventDescr_v3_t) == 120, "v3 descriptor is 120 bytes");
_Static_assert(PT_V3_OFF(type) == 0 && PT_V3_OFF(parentObj) == 8 && PT_V3_OFF(rank) == 16,
               "v3 header");
_Static_assert(PT_V3_OFF(coll.name) == 24 && PT_V3_OFF(coll.commHash) == 32 &&
                   PT_V3_OFF(coll.seqNumber) == 40 && PT_V3_OFF(coll.func) == 48 &&
                   PT_V3_OFF(coll.sendBuff) == 56 && PT_V3_OFF(coll.recvBuff) == 64 &&
                   PT_V3_OFF(coll.count) == 72 && PT_V3_OFF(coll.root) == 80 &&
                   PT_V3_OFF(coll.datatype) == 88 && PT_V3_OFF(coll.nMaxChannels) == 96 &&
                   PT_V3_OFF(coll.nWarps) == 97 && PT_V3_OFF(coll.algo) == 104 &&
                   PT_V3_OFF(coll.proto) == 112,
               "v3 coll");
_Static_assert(PT_V3_OFF(p2p.name) == 24 && PT_V3_OFF(p2p.commHash) == 32 &&
                   PT_V3_OFF(p2p.func) == 40 && PT_V3_OFF(p2p.buff) == 48 &&
                   PT_V3_OFF(p2p.datatype) == 56 && PT_V3_OFF(p2p.count) == 64 &&
                   PT_V3_OFF(p2p.peer) == 72,
               "v3 p2p");
_Static_assert(PT_V3_OFF(proxyOp.pid) == 24 && PT_V3_OFF(proxyOp.channelId) == 28 &&
                   PT_V3_OFF(proxyOp.peer) == 32 && PT_V3_OFF(proxyOp.nSteps) == 36 &&
                   PT_V3_OFF(proxyOp.chunkSize) == 40 && PT_V3_OFF(proxyOp.isSend) == 44,
               "v3 proxyOp");
_Static_assert(PT_V3_OFF(proxyStep.step) == 24, "v3 proxyStep");
_Static_assert(PT_V3_OFF(kernelCh.channelId) == 24, "v3 kernelCh");
_Static_assert(PT_V3_OFF(netPlugin.id) == 24 && PT_V3_OFF(netPlugin.data) == 32, "v3 netPlugin");
#undef PT_V3_OFF
_Static_assert(sizeof(ncclProfiler_v3_t) == 48, "function table is 6 pointers");

#endif
