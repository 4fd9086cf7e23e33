/*
 * abi_v7.c — the ncclProfiler_v7 table (NVIDIA NCCL 2.31+, RCCL 2.31+;
 * include/nccl/profiler_v7.h).
 *
 * v7 is v6 with a userTag on Coll and P2p (and their API events), which
 * this table carries into the task handle and from there into every op the
 * task starts (trace.h "userTags"), and a KernelPhase event (bit 15), which
 * the plugin does not ask for: it would make NCCL turn kernel-channel
 * profiling on as well (NVIDIA/nccl 889806836 src/plugin/profiler.cc,
 * ncclProfilerEnforceMaskDeps), for phases of the GPU kernel that say
 * nothing about a network op. kernelVariant and isSymColl are not kept
 * either: neither names a proxy op's fate. The ProxyOp arm and the state
 * args are v6's, so stop, record and finalize are v6's (abi_v6.c). As in
 * v6, no pointer into a descriptor is kept past the call (2.31's v6
 * adapter passes copies on its stack; NCCL's own descriptors are locals).
 */
#include "nccl/profiler_v7.h"
#include "plugin/plugin.h"

static ncclResult_t v7_init(void** context, uint64_t comm_id, int* mask, const char* comm_name,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t log) {
  pt_event_init(context, mask, PT_EVENT_MASK_STOCK, 7, comm_id, comm_name, nnodes, nranks, rank, log);
  return ncclSuccess;
}

static ncclResult_t v7_start_other(void* context, void** handle, ncclProfilerEventDescr_v7_t* d);

static ncclResult_t v7_start(void* context, void** handle, ncclProfilerEventDescr_v7_t* d) {
  if (handle && d && d->type == ncclProfileProxyStep) {
    *handle = pt_event_step_start(context, d->parentObj, d->proxyStep.step);
    return ncclSuccess;
  }
  return v7_start_other(context, handle, d);
}

static __attribute__((noinline)) ncclResult_t v7_start_other(void* context, void** handle,
                                                             ncclProfilerEventDescr_v7_t* d) {
  if (!handle) return ncclSuccess;
  *handle = NULL;
  if (!d) return ncclSuccess;
  switch (d->type) {
    case ncclProfileProxyOp:
      *handle = pt_event_host_op_start(context, d->rank, &d->proxyOp, d->parentObj);
      return ncclSuccess;
    case ncclProfileColl: {
      const pt_task_info ti = PT_COLL_INFO(d->coll, d->coll.nChannels, d->coll.userTag);
      *handle = pt_event_coll_start(context, d->rank, &ti, 0);
      return ncclSuccess;
    }
    case ncclProfileP2p: {
      const pt_task_info ti = PT_P2P_INFO(d->p2p, d->p2p.nChannels, d->p2p.userTag);
      *handle = pt_event_p2p_start(context, d->rank, &ti, 0);
      return ncclSuccess;
    }
    case ncclProfileKernelCh:
      *handle = pt_event_kch_start(context, d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer);
      return ncclSuccess;
    default:
      pt_event_other_type(context, d->type, 7); /* Group/API/KernelPhase/...: not traced */
      return ncclSuccess;
  }
}

PT_EXPORT ncclProfiler_v7_t ncclProfiler_v7 = {
    .name = "ProxyTrace",
    .init = v7_init,
    .startEvent = v7_start,
    .stopEvent = pt_v6_stop,
    .recordEventState = pt_v6_record,
    .finalize = pt_v6_finalize,
};
