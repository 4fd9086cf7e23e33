/*
 * profiler_v5.h — profiler API v5 (NCCL 2.28).
 *
 * Written from spec/nccl-profiler-abi.md §2.7. The event type widens to
 * uint64_t; API-level arms (groupApi, collApi, p2pApi, kernelLaunch) are
 * added in front of the union (every arm still starts at 24); coll and p2p
 * gain parentGroup because their parentObj is now the CollApi/P2pApi
 * handle. init takes commId second (v4 had commHash fourth). State args
 * have the v4 layout.
 */
#ifndef PT_NCCL_PROFILER_V5_H
#define PT_NCCL_PROFILER_V5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profiler.h"

typedef struct {
  uint64_t type;
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
} ncclProfilerEventDescr_v5_t;

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
} ncclProfilerEventStateArgs_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask,
                       const char* commName, int nNodes, int nranks, int rank,
                       ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

#define PT_V5_OFF(m) offsetof(ncclProfilerEventDescr_v5_t, m)
_Static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 112, "v5 descriptor is 112 bytes");
_Static_assert(PT_V5_OFF(type) == 0 && PT_V5_OFF(parentObj) == 8 && PT_V5_OFF(rank) == 16,
               "v5 header");
_Static_assert(PT_V5_OFF(groupApi.graphCaptured) == 24 && PT_V5_OFF(groupApi.groupDepth) == 28,
               "v5 groupApi");
_Static_assert(PT_V5_OFF(collApi.func) == 24 && PT_V5_OFF(collApi.count) == 32 &&
                   PT_V5_OFF(collApi.datatype) == 40 && PT_V5_OFF(collApi.root) == 48 &&
                   PT_V5_OFF(collApi.stream) == 56 && PT_V5_OFF(collApi.graphCaptured) == 64,
               "v5 collApi");
_Static_assert(PT_V5_OFF(p2pApi.func) == 24 && PT_V5_OFF(p2pApi.count) == 32 &&
                   PT_V5_OFF(p2pApi.datatype) == 40 && PT_V5_OFF(p2pApi.stream) == 48 &&
                   PT_V5_OFF(p2pApi.graphCaptured) == 56,
               "v5 p2pApi");
_Static_assert(PT_V5_OFF(kernelLaunch.stream) == 24, "v5 kernelLaunch");
_Static_assert(PT_V5_OFF(coll.seqNumber) == 24 && PT_V5_OFF(coll.func) == 32 &&
                   PT_V5_OFF(coll.sendBuff) == 40 && PT_V5_OFF(coll.recvBuff) == 48 &&
                   PT_V5_OFF(coll.count) == 56 && PT_V5_OFF(coll.root) == 64 &&
                   PT_V5_OFF(coll.datatype) == 72 && PT_V5_OFF(coll.nChannels) == 80 &&
                   PT_V5_OFF(coll.nWarps) == 81 && PT_V5_OFF(coll.algo) == 88 &&
                   PT_V5_OFF(coll.proto) == 96 && PT_V5_OFF(coll.parentGroup) == 104,
               "v5 coll");
_Static_assert(PT_V5_OFF(p2p.func) == 24 && PT_V5_OFF(p2p.buff) == 32 &&
                   PT_V5_OFF(p2p.datatype) == 40 && PT_V5_OFF(p2p.count) == 48 &&
                   PT_V5_OFF(p2p.peer) == 56 && PT_V5_OFF(p2p.nChannels) == 60 &&
                   PT_V5_OFF(p2p.parentGroup) == 64,
               "v5 p2p");
_Static_assert(PT_V5_OFF(proxyOp.pid) == 24 && PT_V5_OFF(proxyOp.channelId) == 28 &&
                   PT_V5_OFF(proxyOp.peer) == 32 && PT_V5_OFF(proxyOp.nSteps) == 36 &&
                   PT_V5_OFF(proxyOp.chunkSize) == 40 && PT_V5_OFF(proxyOp.isSend) == 44,
               "v5 proxyOp");
_Static_assert(PT_V5_OFF(proxyStep.step) == 24, "v5 proxyStep");
_Static_assert(PT_V5_OFF(kernelCh.channelId) == 24 && PT_V5_OFF(kernelCh.pTimer) == 32,
               "v5 kernelCh");
_Static_assert(PT_V5_OFF(netPlugin.id) == 24 && PT_V5_OFF(netPlugin.data) == 32, "v5 netPlugin");
#undef PT_V5_OFF

_Static_assert(sizeof(ncclProfilerEventStateArgs_v5_t) == 8, "v5 state args are 8 bytes");
_Static_assert(offsetof(ncclProfilerEventStateArgs_v5_t, proxyStep.transSize) == 0 &&
                   offsetof(ncclProfilerEventStateArgs_v5_t, proxyCtrl.appendedProxyOps) == 0 &&
                   offsetof(ncclProfilerEventStateArgs_v5_t, netPlugin.data) == 0 &&
                   offsetof(ncclProfilerEventStateArgs_v5_t, kernelCh.pTimer) == 0,
               "v5 state args arms start at 0");
_Static_assert(sizeof(ncclProfiler_v5_t) == 48, "function table is 6 pointers");

#endif
