/*
 * profiler_v4.h — profiler API v4 (NCCL 2.27).
 *
 * Written from spec/nccl-profiler-abi.md §2.6. init now receives the
 * communicator (name, hash, nNodes, nranks, rank) and the host's logger —
 * note commHash is the 4th argument here and the 2nd in v5/v6. The coll and
 * p2p arms lose name/commHash (given at init), nMaxChannels becomes
 * nChannels, p2p gains nChannels, kernelCh gains pTimer. State args shrink
 * to 8 bytes; the ProxyOp states 0–7 are no longer emitted (state 19
 * instead).
 */
#ifndef PT_NCCL_PROFILER_V4_H
#define PT_NCCL_PROFILER_V4_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profiler.h"

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
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
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncclProfilerEventStateArgs_v4_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName,
                       uint64_t commHash, int nNodes, int nranks, int rank,
                       ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v4_t eState,
                                   ncclProfilerEventStateArgs_v4_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v4_t;

#define PT_V4_OFF(m) offsetof(ncclProfilerEventDescr_v4_t, m)
_Static_assert(sizeof(ncclProfilerEventDescr_v4_t) == 104, "v4 descriptor is 104 bytes");
_Static_assert(PT_V4_OFF(type) == 0 && PT_V4_OFF(parentObj) == 8 && PT_V4_OFF(rank) == 16,
               "v4 header");
_Static_assert(PT_V4_OFF(coll.seqNumber) == 24 && PT_V4_OFF(coll.func) == 32 &&
                   PT_V4_OFF(coll.sendBuff) == 40 && PT_V4_OFF(coll.recvBuff) == 48 &&
                   PT_V4_OFF(coll.count) == 56 && PT_V4_OFF(coll.root) == 64 &&
                   PT_V4_OFF(coll.datatype) == 72 && PT_V4_OFF(coll.nChannels) == 80 &&
                   PT_V4_OFF(coll.nWarps) == 81 && PT_V4_OFF(coll.algo) == 88 &&
                   PT_V4_OFF(coll.proto) == 96,
               "v4 coll");
_Static_assert(PT_V4_OFF(p2p.func) == 24 && PT_V4_OFF(p2p.buff) == 32 &&
                   PT_V4_OFF(p2p.datatype) == 40 && PT_V4_OFF(p2p.count) == 48 &&
                   PT_V4_OFF(p2p.peer) == 56 && PT_V4_OFF(p2p.nChannels) == 60,
               "v4 p2p");
_Static_assert(PT_V4_OFF(proxyOp.pid) == 24 && PT_V4_OFF(proxyOp.channelId) == 28 &&
                   PT_V4_OFF(proxyOp.peer) == 32 && PT_V4_OFF(proxyOp.nSteps) == 36 &&
                   PT_V4_OFF(proxyOp.chunkSize) == 40 && PT_V4_OFF(proxyOp.isSend) == 44,
               "v4 proxyOp");
_Static_assert(PT_V4_OFF(proxyStep.step) == 24, "v4 proxyStep");
_Static_assert(PT_V4_OFF(kernelCh.channelId) == 24 && PT_V4_OFF(kernelCh.pTimer) == 32,
               "v4 kernelCh");
_Static_assert(PT_V4_OFF(netPlugin.id) == 24 && PT_V4_OFF(netPlugin.data) == 32, "v4 netPlugin");
#undef PT_V4_OFF

_Static_assert(sizeof(ncclProfilerEventStateArgs_v4_t) == 8, "v4 state args are 8 bytes");
_Static_assert(offsetof(ncclProfilerEventStateArgs_v4_t, proxyStep.transSize) == 0 &&
                   offsetof(ncclProfilerEventStateArgs_v4_t, proxyCtrl.appendedProxyOps) == 0 &&
                   offsetof(ncclProfilerEventStateArgs_v4_t, netPlugin.data) == 0 &&
                   offsetof(ncclProfilerEventStateArgs_v4_t, kernelCh.pTimer) == 0,
               "v4 state args arms start at 0");
_Static_assert(sizeof(ncclProfiler_v4_t) == 48, "function table is 6 pointers");

#endif
