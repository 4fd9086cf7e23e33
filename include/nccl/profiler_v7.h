/*
 * profiler_v7.h — profiler API v7 (NVIDIA NCCL 2.31+; RCCL 2.31+).
 *
 * NVIDIA's layout as NVIDIA/nccl defines it at commit 889806836 (2.31.x),
 * src/include/plugin/profiler/profiler_v7.h, with the event bits and states
 * of src/include/plugin/nccl_profiler.h there: v6's function table and
 * arms, plus a 64-bit userTag at the end of collApi, p2pApi, coll, p2p and
 * ceColl (0 = untagged), kernelVariant and isSymColl on coll, and a
 * kernelPhase arm (event bit 15, stop state 31; its stop reuses the
 * kernelCh args). The coll arm grows the union to 112 bytes and the
 * descriptor to 136.
 *
 * RCCL's v7 proxyOp: inferred, not read in any source we could reach — the
 * proxy-trace fields are taken to follow isSend as in RCCL's v6 (they fit
 * inside the union, whose size the coll arm sets), and the state args to
 * keep v6's 24-byte proxyDiag arm. The plugin checks both at run time
 * (docs/plugin.md, "RCCL's ProxyDiag: what the plugin cannot see").
 */
#ifndef PT_NCCL_PROFILER_V7_H
#define PT_NCCL_PROFILER_V7_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profiler.h"
#include "profiler_v6.h"

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
      uint64_t userTag;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
      uint64_t userTag;
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
      const char* kernelVariant;
      bool isSymColl;
      uint64_t userTag;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
      uint64_t userTag;
    } p2p;
    struct pt_proxy_op_arm proxyOp;
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
      uint64_t userTag;
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
    struct {
      uint8_t channelId;
      uint8_t phaseId; /* 0 initial sync, 1 compute, 2 final sync */
      const char* phaseName;
      uint64_t pTimer;
    } kernelPhase;
  };
} ncclProfilerEventDescr_v7_t;

/* NVIDIA's v7 args are v6's first four arms (8 bytes); RCCL's proxyDiag
 * arm is inferred to stay (24 bytes). */
typedef ncclProfilerEventStateArgs_v6_t ncclProfilerEventStateArgs_v7_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v7_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v7_t eState,
                                   ncclProfilerEventStateArgs_v7_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v7_t;

#define PT_V7_OFF(m) offsetof(ncclProfilerEventDescr_v7_t, m)
_Static_assert(sizeof(ncclProfilerEventDescr_v7_t) == 136, "v7 descriptor is 136 bytes");
_Static_assert(_Alignof(ncclProfilerEventDescr_v7_t) == 8, "v7 descriptor aligned to 8");
_Static_assert(PT_V7_OFF(type) == 0 && PT_V7_OFF(parentObj) == 8 && PT_V7_OFF(rank) == 16,
               "v7 header");
_Static_assert(PT_V7_OFF(collApi.graphCaptured) == 64 && PT_V7_OFF(collApi.userTag) == 72,
               "v7 collApi");
_Static_assert(PT_V7_OFF(p2pApi.graphCaptured) == 56 && PT_V7_OFF(p2pApi.userTag) == 64,
               "v7 p2pApi");
_Static_assert(PT_V7_OFF(coll.seqNumber) == 24 && PT_V7_OFF(coll.func) == 32 &&
                   PT_V7_OFF(coll.nChannels) == 80 && PT_V7_OFF(coll.algo) == 88 &&
                   PT_V7_OFF(coll.parentGroup) == 104 && PT_V7_OFF(coll.kernelVariant) == 112 &&
                   PT_V7_OFF(coll.isSymColl) == 120 && PT_V7_OFF(coll.userTag) == 128,
               "v7 coll");
_Static_assert(PT_V7_OFF(p2p.func) == 24 && PT_V7_OFF(p2p.peer) == 56 &&
                   PT_V7_OFF(p2p.nChannels) == 60 && PT_V7_OFF(p2p.parentGroup) == 64 &&
                   PT_V7_OFF(p2p.userTag) == 72,
               "v7 p2p");
_Static_assert(PT_V7_OFF(proxyOp.pid) == 24 && PT_V7_OFF(proxyOp.channelId) == 28 &&
                   PT_V7_OFF(proxyOp.peer) == 32 && PT_V7_OFF(proxyOp.nSteps) == 36 &&
                   PT_V7_OFF(proxyOp.chunkSize) == 40 && PT_V7_OFF(proxyOp.isSend) == 44 &&
                   PT_V7_OFF(proxyOp.commHash) == 48 && PT_V7_OFF(proxyOp.rawProxyNsteps) == 84,
               "v7 proxyOp: v6's offsets");
_Static_assert(PT_V7_OFF(proxyStep.step) == 24, "v7 proxyStep");
_Static_assert(PT_V7_OFF(kernelCh.channelId) == 24 && PT_V7_OFF(kernelCh.pTimer) == 32,
               "v7 kernelCh");
_Static_assert(PT_V7_OFF(ceColl.stream) == 104 && PT_V7_OFF(ceColl.userTag) == 112, "v7 ceColl");
_Static_assert(PT_V7_OFF(kernelPhase.channelId) == 24 && PT_V7_OFF(kernelPhase.phaseId) == 25 &&
                   PT_V7_OFF(kernelPhase.phaseName) == 32 && PT_V7_OFF(kernelPhase.pTimer) == 40,
               "v7 kernelPhase");
#undef PT_V7_OFF
_Static_assert(sizeof(ncclProfiler_v7_t) == 48, "function table is 6 pointers");

#endif
