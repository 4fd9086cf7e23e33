/*
 * profiler.h — event-type bits and the state enum shared by profiler API
 * versions v1…v6 (spec/nccl-profiler-abi.md §2.2.5–§2.2.6), with RCCL's
 * additions: the ProxyDiag mask bit 15 and state 31 (spec/rccl-proxytrace.md
 * §1.1–§1.2, §2). Version-specific layouts live in profiler_vN.h.
 */
#ifndef PT_NCCL_PROFILER_H
#define PT_NCCL_PROFILER_H

#include <stdint.h>
#include <sys/types.h>

#include "common.h"

enum {
  ncclProfileGroup = (1 << 0),
  ncclProfileColl = (1 << 1),
  ncclProfileP2p = (1 << 2),
  ncclProfileProxyOp = (1 << 3),
  ncclProfileProxyStep = (1 << 4),
  ncclProfileProxyCtrl = (1 << 5),
  ncclProfileKernelCh = (1 << 6),
  ncclProfileNetPlugin = (1 << 7),
  ncclProfileGroupApi = (1 << 8),
  ncclProfileCollApi = (1 << 9),
  ncclProfileP2pApi = (1 << 10),
  ncclProfileKernelLaunch = (1 << 11),
  ncclProfileCeColl = (1 << 12),
  ncclProfileCeSync = (1 << 13),
  ncclProfileCeBatch = (1 << 14),
  ncclProfileProxyDiag = (1 << 15), /* RCCL before 2.31: mask bit, never a started event */
  /* NVIDIA NCCL 2.31+ (API v7): a kernel barrier phase, under KernelCh
   * (NVIDIA/nccl 889806836 src/include/plugin/nccl_profiler.h) */
  ncclProfileKernelPhase = (1 << 15),
  /* RCCL 2.31+: ProxyDiag moved past the kernel-phase bit (RCCL's
   * NCCL_PROFILE_EVENT_MASK reference: 65536 = proxy diagnostics) */
  ncclProfileProxyDiag_v7 = (1 << 16)
};

typedef enum {
  ncclProfilerProxyOpSendPosted = 0, /* 0–7: emitted by NCCL 2.23–2.26 only */
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyOpInProgress_v4 = 19,

  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,

  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,

  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupStartApiStop = 23,
  ncclProfilerGroupEndApiStart = 24,
  ncclProfilerCeCollStart = 25, /* 25–30: defined, never emitted */
  ncclProfilerCeCollComplete = 26,
  ncclProfilerCeSyncStart = 27,
  ncclProfilerCeSyncComplete = 28,
  ncclProfilerCeBatchStart = 29,
  ncclProfilerCeBatchComplete = 30,

  ncclProfilerProxyDiagUpdate = 31, /* RCCL before 2.31 */
  /* NVIDIA 2.31+ (API v7): the stop of a KernelPhase event, same number */
  ncclProfilerKernelPhaseStop = 31,
  /* RCCL 2.31+: the ProxyDiag update's state. Inferred, not read in any
   * source: 31 became KernelPhaseStop, so RCCL's update needs the next
   * number. The plugin accepts 31 too, and PROXYTRACE_RCCL_DIAG sets it. */
  ncclProfilerProxyDiagUpdate_v7 = 32
} ncclProfilerEventState_t;

typedef ncclProfilerEventState_t ncclProfilerEventState_v1_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v2_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v3_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v7_t;

_Static_assert(sizeof(ncclProfilerEventState_t) == 4, "state enum is int-sized");

/* The proxyOp arm of the v6 and v7 descriptors: NVIDIA's six fields (the
 * same at the same offsets in every version, spec nccl-profiler-abi.md
 * §2.2.10), then the eight proxy-trace fields RCCL appends (zero unless the
 * ProxyDiag bit is active; NVIDIA leaves them zero). */
struct pt_proxy_op_arm {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
  uint64_t commHash;
  int64_t opCount;
  int32_t traceFuncIdx;
  int32_t traceProtocol;
  int32_t tracePattern;
  uint32_t traceTotalBytes;
  uint32_t proxyNbytes;
  int rawProxyNsteps;
};

/* RCCL ProxyDiag counter kinds (spec/rccl-proxytrace.md §2.2). */
enum {
  ncclProxyDiagPosted = 0,
  ncclProxyDiagKernelCopyReady = 1,
  ncclProxyDiagRtrRecv = 2, /* defined, never emitted */
  ncclProxyDiagRtsSend = 3, /* defined, never emitted */
  ncclProxyDiagReceived = 4,
  ncclProxyDiagTransmitted = 5,
  ncclProxyDiagFlushed = 6,
  ncclProxyDiagDone = 7,
  ncclProxyDiagRecvTail = 8,
  ncclProxyDiagTailOrHead = 9,
  ncclProxyDiagFifoSzOrHeadCache = 10,
  ncclProxyDiagNumKinds = 11
};

#define NCCL_PROXY_DIAG_FLAG_TIMESTAMP 1u    /* stamp the time for this counter */
#define NCCL_PROXY_DIAG_FLAG_COUNTER_SKIP 2u /* timestamp only, value not stored */

#endif
