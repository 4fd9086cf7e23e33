/*
 * abi_v6.c — the ncclProfiler_v6 table (NCCL 2.29+ and RCCL), in RCCL's
 * layout: the proxy-trace fields of the proxyOp arm and the 24-byte state
 * args with proxyDiag (include/nccl/profiler_v6.h). Its stop, record and
 * finalize serve the v7 table too (abi_v7.c): the state args are the same.
 *
 * Under RCCL the ProxyOp carries its commHash/opCount/raw step count and the
 * counters arrive as ProxyDiag updates (state 31, or 32 from RCCL 2.31:
 * diag.c). Under NVIDIA NCCL those fields are zero (NCCL zeroes every
 * descriptor, and 2.31's v6 adapter builds a zeroed stack copy): the op is
 * traced from its step events instead, and their opCount from the task
 * handle this table returned for the parent Coll or P2p event
 * (pt_event_host_op_start). KernelCh events go to the progress state
 * (progress.c). Group/API events, which hosts send whatever the
 * mask says, get a NULL handle at no cost. No pointer into a descriptor or
 * state args is kept past the call.
 */
#include "nccl/profiler_v6.h"
#include "plugin/plugin.h"

static ncclResult_t v6_init(void** context, uint64_t comm_id, int* mask, const char* comm_name,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t log) {
  /* Never fail init (spec nccl-profiler-abi.md §4.3): opt out with a NULL
   * context and leave the mask alone instead. */
  pt_event_init(context, mask, PT_EVENT_MASK_STOCK, 6, comm_id, comm_name, nnodes, nranks, rank, log);
  return ncclSuccess;
}

static ncclResult_t v6_start_other(void* context, void** handle, ncclProfilerEventDescr_v6_t* d);

/* The most frequent start, a ProxyStep, is tested first, in a function of
 * its own so that it costs no stack frame. */
static ncclResult_t v6_start(void* context, void** handle, ncclProfilerEventDescr_v6_t* d) {
  if (handle && d && d->type == ncclProfileProxyStep) {
    *handle = pt_event_step_start(context, d->parentObj, d->proxyStep.step);
    return ncclSuccess;
  }
  return v6_start_other(context, handle, d);
}

static __attribute__((noinline)) ncclResult_t v6_start_other(void* context, void** handle,
                                                             ncclProfilerEventDescr_v6_t* d) {
  if (!handle) return ncclSuccess;
  *handle = NULL;
  if (!d) return ncclSuccess;
  switch (d->type) {
    case ncclProfileProxyOp:
      *handle = pt_event_host_op_start(context, d->rank, &d->proxyOp, d->parentObj);
      return ncclSuccess;
    case ncclProfileColl: { /* the parents of NVIDIA's ProxyOps: their opCount */
      const pt_task_info ti = PT_COLL_INFO(d->coll, d->coll.nChannels, 0);
      *handle = pt_event_coll_start(context, d->rank, &ti, 0);
      return ncclSuccess;
    }
    case ncclProfileP2p: {
      const pt_task_info ti = PT_P2P_INFO(d->p2p, d->p2p.nChannels, 0);
      *handle = pt_event_p2p_start(context, d->rank, &ti, 0);
      return ncclSuccess;
    }
    case ncclProfileKernelCh:
      *handle = pt_event_kch_start(context, d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer);
      return ncclSuccess;
    default:
      pt_event_other_type(context, d->type, 6); /* Group/API/...: not traced */
      return ncclSuccess;
  }
}

ncclResult_t pt_v6_stop(void* handle) {
  pt_event_stop(handle);
  return ncclSuccess;
}

ncclResult_t pt_v6_record(void* handle, ncclProfilerEventState_t state,
                          ncclProfilerEventStateArgs_v6_t* args) {
  if (!handle) return ncclSuccess; /* declined events and net-plugin callbacks */
  /* The hottest callback: one compare for every NVIDIA state (<= 31) but
   * 31; the checks are in the core. */
  if (state >= ncclProfilerProxyDiagUpdate && pt_diag_is_update(state)) {
    if (args)
      pt_event_diag(handle, args->proxyDiag.counterKind, args->proxyDiag.flags,
                    args->proxyDiag.value);
    else
      pt_event_refused(NULL, handle);
    return ncclSuccess;
  }
  pt_event_state(handle, state, -1, pt_args_trans_size(args));
  return ncclSuccess;
}

ncclResult_t pt_v6_finalize(void* context) {
  pt_ctx_destroy(context);
  return ncclSuccess;
}

PT_EXPORT ncclProfiler_v6_t ncclProfiler_v6 = {
    .name = "ProxyTrace",
    .init = v6_init,
    .startEvent = v6_start,
    .stopEvent = pt_v6_stop,
    .recordEventState = pt_v6_record,
    .finalize = pt_v6_finalize,
};
