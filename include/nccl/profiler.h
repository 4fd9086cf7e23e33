/*
 * profiler.h — event-type bits and the state enum shared by profiler API
 * versions v1…v6 (spec/nccl-profiler-abi.md §2.2.5–§2.2.6), with RCCL's
 * additions: the ProxyDiag mask bit 15 and state 31 (spec/rccl-proxytrace.md
 * §1.1–§1.2, §2). Version-specific layouts live in profiler_vN.h.
 */
#ifndef PT_NCCL_PROFILER_H
#define PT_NCCL_PROFILER_H

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
  ncclProfileProxyDiag = (1 << 15) /* RCCL only: mask bit, never a started event */
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

  ncclProfilerProxyDiagUpdate = 31 /* RCCL only */
} ncclProfilerEventState_t;

typedef ncclProfilerEventState_t ncclProfilerEventState_v1_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v2_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v3_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;

_Static_assert(sizeof(ncclProfilerEventState_t) == 4, "state enum is int-sized");

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
