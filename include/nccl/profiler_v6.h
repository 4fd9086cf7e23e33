/*
 * profiler_v6.h — profiler API v6 (NCCL 2.29+, RCCL), RCCL's layout.
 *
 * Written from spec/nccl-profiler-abi.md §2.8 and spec/rccl-proxytrace.md
 * §1.3–§1.5. RCCL appends eight proxy-trace fields to the proxyOp arm (after
 * isSend, ending at offset 88, inside the 88-byte union) and grows the state
 * args to 24 bytes with a proxyDiag arm. Every NVIDIA v6 offset is unchanged,
 * so a plugin built on this header reads NVIDIA descriptors correctly as long
 * as it treats the RCCL fields as meaningful only under RCCL (NVIDIA leaves
 * them zero) and reads proxyDiag only for state 31 (which NVIDIA never sends).
 */
#ifndef PT_NCCL_PROFILER_V6_H
#define PT_NCCL_PROFILER_V6_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profiler.h"

typedef struct {
  uint64_t type; /* exactly one ncclProfile* bit */
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
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
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct pt_proxy_op_arm proxyOp; /* profiler.h: NVIDIA's fields, then RCCL's */
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
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

typedef union pt_state_args_v6 {
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
  struct { /* RCCL only, state 31 */
    uint8_t counterKind;
    uint8_t reserved;
    uint16_t flags;
    int64_t value;
    int64_t value2;
  } proxyDiag;
} ncclProfilerEventStateArgs_v6_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v6_t eState,
                                   ncclProfilerEventStateArgs_v6_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v6_t;

/* RCCL's optional dump hook (spec/rccl-proxytrace.md §4.3). */
typedef void (*ncclProfilerProxyTraceDump_t)(void* context, ncclDebugLogger_t logfn);

#define PT_V6_OFF(m) offsetof(ncclProfilerEventDescr_v6_t, m)
_Static_assert(sizeof(pid_t) == 4, "pid_t is int on Linux");
_Static_assert(sizeof(ncclProfilerEventDescr_v6_t) == 112, "v6 descriptor is 112 bytes");
_Static_assert(_Alignof(ncclProfilerEventDescr_v6_t) == 8, "v6 descriptor aligned to 8");
_Static_assert(PT_V6_OFF(type) == 0 && PT_V6_OFF(parentObj) == 8 && PT_V6_OFF(rank) == 16,
               "v6 header");
_Static_assert(PT_V6_OFF(groupApi.graphCaptured) == 24 && PT_V6_OFF(groupApi.groupDepth) == 28,
               "v6 groupApi");
_Static_assert(PT_V6_OFF(collApi.func) == 24 && PT_V6_OFF(collApi.count) == 32 &&
                   PT_V6_OFF(collApi.datatype) == 40 && PT_V6_OFF(collApi.root) == 48 &&
                   PT_V6_OFF(collApi.stream) == 56 && PT_V6_OFF(collApi.graphCaptured) == 64,
               "v6 collApi");
_Static_assert(PT_V6_OFF(p2pApi.func) == 24 && PT_V6_OFF(p2pApi.count) == 32 &&
                   PT_V6_OFF(p2pApi.datatype) == 40 && PT_V6_OFF(p2pApi.stream) == 48 &&
                   PT_V6_OFF(p2pApi.graphCaptured) == 56,
               "v6 p2pApi");
_Static_assert(PT_V6_OFF(kernelLaunch.stream) == 24, "v6 kernelLaunch");
_Static_assert(PT_V6_OFF(coll.seqNumber) == 24 && PT_V6_OFF(coll.func) == 32 &&
                   PT_V6_OFF(coll.sendBuff) == 40 && PT_V6_OFF(coll.recvBuff) == 48 &&
                   PT_V6_OFF(coll.count) == 56 && PT_V6_OFF(coll.root) == 64 &&
                   PT_V6_OFF(coll.datatype) == 72 && PT_V6_OFF(coll.nChannels) == 80 &&
                   PT_V6_OFF(coll.nWarps) == 81 && PT_V6_OFF(coll.algo) == 88 &&
                   PT_V6_OFF(coll.proto) == 96 && PT_V6_OFF(coll.parentGroup) == 104,
               "v6 coll");
_Static_assert(PT_V6_OFF(p2p.func) == 24 && PT_V6_OFF(p2p.buff) == 32 &&
                   PT_V6_OFF(p2p.datatype) == 40 && PT_V6_OFF(p2p.count) == 48 &&
                   PT_V6_OFF(p2p.peer) == 56 && PT_V6_OFF(p2p.nChannels) == 60 &&
                   PT_V6_OFF(p2p.parentGroup) == 64,
               "v6 p2p");
_Static_assert(PT_V6_OFF(proxyOp.pid) == 24 && PT_V6_OFF(proxyOp.channelId) == 28 &&
                   PT_V6_OFF(proxyOp.peer) == 32 && PT_V6_OFF(proxyOp.nSteps) == 36 &&
                   PT_V6_OFF(proxyOp.chunkSize) == 40 && PT_V6_OFF(proxyOp.isSend) == 44,
               "v6 proxyOp (NVIDIA part)");
_Static_assert(PT_V6_OFF(proxyOp.commHash) == 48 && PT_V6_OFF(proxyOp.opCount) == 56 &&
                   PT_V6_OFF(proxyOp.traceFuncIdx) == 64 &&
                   PT_V6_OFF(proxyOp.traceProtocol) == 68 &&
                   PT_V6_OFF(proxyOp.tracePattern) == 72 &&
                   PT_V6_OFF(proxyOp.traceTotalBytes) == 76 &&
                   PT_V6_OFF(proxyOp.proxyNbytes) == 80 &&
                   PT_V6_OFF(proxyOp.rawProxyNsteps) == 84,
               "v6 proxyOp (RCCL part)");
_Static_assert(PT_V6_OFF(proxyStep.step) == 24, "v6 proxyStep");
_Static_assert(PT_V6_OFF(kernelCh.channelId) == 24 && PT_V6_OFF(kernelCh.pTimer) == 32,
               "v6 kernelCh");
_Static_assert(PT_V6_OFF(netPlugin.id) == 24 && PT_V6_OFF(netPlugin.data) == 32, "v6 netPlugin");
_Static_assert(PT_V6_OFF(ceColl.seqNumber) == 24 && PT_V6_OFF(ceColl.func) == 32 &&
                   PT_V6_OFF(ceColl.sendBuff) == 40 && PT_V6_OFF(ceColl.recvBuff) == 48 &&
                   PT_V6_OFF(ceColl.count) == 56 && PT_V6_OFF(ceColl.root) == 64 &&
                   PT_V6_OFF(ceColl.datatype) == 72 && PT_V6_OFF(ceColl.syncStrategy) == 80 &&
                   PT_V6_OFF(ceColl.intraBatchSync) == 88 && PT_V6_OFF(ceColl.batchSize) == 92 &&
                   PT_V6_OFF(ceColl.numBatches) == 96 && PT_V6_OFF(ceColl.ceSeqNum) == 100 &&
                   PT_V6_OFF(ceColl.stream) == 104,
               "v6 ceColl");
_Static_assert(PT_V6_OFF(ceCollSync.isComplete) == 24 && PT_V6_OFF(ceCollSync.nRanks) == 28,
               "v6 ceCollSync");
_Static_assert(PT_V6_OFF(ceCollBatch.numOps) == 24 && PT_V6_OFF(ceCollBatch.totalBytes) == 32 &&
                   PT_V6_OFF(ceCollBatch.useIntraSync) == 40,
               "v6 ceCollBatch");
#undef PT_V6_OFF

#define PT_V6_ARG_OFF(m) offsetof(ncclProfilerEventStateArgs_v6_t, m)
_Static_assert(sizeof(ncclProfilerEventStateArgs_v6_t) == 24, "RCCL v6 state args are 24 bytes");
_Static_assert(PT_V6_ARG_OFF(proxyDiag.counterKind) == 0 && PT_V6_ARG_OFF(proxyDiag.reserved) == 1 &&
                   PT_V6_ARG_OFF(proxyDiag.flags) == 2 && PT_V6_ARG_OFF(proxyDiag.value) == 8 &&
                   PT_V6_ARG_OFF(proxyDiag.value2) == 16,
               "RCCL proxyDiag args");
_Static_assert(PT_V6_ARG_OFF(proxyStep.transSize) == 0 && PT_V6_ARG_OFF(proxyCtrl.appendedProxyOps) == 0,
               "v6 args arms start at 0");
#undef PT_V6_ARG_OFF

_Static_assert(sizeof(ncclProfiler_v6_t) == 48, "function table is 6 pointers");

#endif
