/*
 * profiler_v1.h — profiler API v1 (NCCL 2.23).
 *
 * Written from spec/nccl-profiler-abi.md §2.3. The first version: a one-byte
 * event type, collective and p2p descriptors that carry the communicator
 * name and hash themselves and numeric func/datatype/algo/proto codes
 * (§2.2.8), and 16-byte state args whose proxyOp arm holds {transSize,
 * steps} for the ProxyOp states 0–7 that 2.23–2.26 emit. init knows nothing
 * about the communicator.
 */
#ifndef PT_NCCL_PROFILER_V1_H
#define PT_NCCL_PROFILER_V1_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profiler.h"

typedef struct {
  uint8_t type; /* one ncclProfile* bit (bits 0–5) */
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func; /* ncclFunc_t code */
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype; /* ncclDataType_t code */
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;  /* algorithm code */
      uint8_t proto; /* protocol code */
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
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
} ncclProfilerEventDescr_v1_t;

typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncclProfilerEventStateArgs_v1_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v1_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v1_t eState,
                                   ncclProfilerEventStateArgs_v1_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v1_t;

#define PT_V1_OFF(m) offsetof(ncclProfilerEventDescr_v1_t, m)
_Static_assert(sizeof(ncclProfilerEventDescr_v1_t) == 120, "v1 descriptor is 120 bytes");
_Static_assert(PT_V1_OFF(type) == 0 && PT_V1_OFF(parentObj) == 8 && PT_V1_OFF(rank) == 16,
               "v1 header");
_Static_assert(PT_V1_OFF(coll.name) == 24 && PT_V1_OFF(coll.commHash) == 32 &&
                   PT_V1_OFF(coll.seqNumber) == 40 && PT_V1_OFF(coll.func) == 48 &&
                   PT_V1_OFF(coll.sendBuff) == 56 && PT_V1_OFF(coll.recvBuff) == 64 &&
                   PT_V1_OFF(coll.count) == 72 && PT_V1_OFF(coll.root) == 80 &&
                   PT_V1_OFF(coll.datatype) == 84 && PT_V1_OFF(coll.op) == 88 &&
                   PT_V1_OFF(coll.trafficBytes) == 96 && PT_V1_OFF(coll.nMaxChannels) == 104 &&
                   PT_V1_OFF(coll.nWarps) == 105 && PT_V1_OFF(coll.algo) == 106 &&
                   PT_V1_OFF(coll.proto) == 107 && PT_V1_OFF(coll.isCollnet) == 108 &&
                   PT_V1_OFF(coll.isNvls) == 112,
               "v1 coll");
_Static_assert(PT_V1_OFF(p2p.name) == 24 && PT_V1_OFF(p2p.commHash) == 32 &&
                   PT_V1_OFF(p2p.func) == 40 && PT_V1_OFF(p2p.buff) == 48 &&
                   PT_V1_OFF(p2p.datatype) == 56 && PT_V1_OFF(p2p.count) == 64 &&
                   PT_V1_OFF(p2p.peer) == 72,
               "v1 p2p");
_Static_assert(PT_V1_OFF(proxyOp.pid) == 24 && PT_V1_OFF(proxyOp.channelId) == 28 &&
                   PT_V1_OFF(proxyOp.peer) == 32 && PT_V1_OFF(proxyOp.nSteps) == 36 &&
                   PT_V1_OFF(proxyOp.chunkSize) == 40 && PT_V1_OFF(proxyOp.isSend) == 44,
               "v1 proxyOp");
_Static_assert(PT_V1_OFF(proxyStep.step) == 24, "v1 proxyStep");
#undef PT_V1_OFF

_Static_assert(sizeof(ncclProfilerEventStateArgs_v1_t) == 16, "v1 state args are 16 bytes");
_Static_assert(offsetof(ncclProfilerEventStateArgs_v1_t, proxyOp.transSize) == 0 &&
                   offsetof(ncclProfilerEventStateArgs_v1_t, proxyOp.steps) == 8 &&
                   offsetof(ncclProfilerEventStateArgs_v1_t, proxyCtrl.appendedProxyOps) == 0,
               "v1 state args");
_Static_assert(sizeof(ncclProfiler_v1_t) == 48, "function table is 6 pointers");

#endif
