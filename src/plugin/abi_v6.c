/*
 * abi_v6.c — the ncclProfiler_v6 table (NCCL 2.29+ and RCCL), in RCCL's
 * layout: the proxy-trace fields of the proxyOp arm and the 24-byte state
 * args with proxyDiag (include/nccl/profiler_v6.h).
 *
 * Under RCCL the ProxyOp carries its commHash/opCount/raw step count and the
 * counters arrive as ProxyDiag updates (state 31). Under NVIDIA NCCL those
 * fields are zero (NCCL zeroes every descriptor): the op is traced from its
 * step events instead (pt_event_stock_op_start), and their opCount from
 * the task handle this table returned for the parent Coll or P2p event.
 * Group/API events, which hosts send whatever the mask says, get a NULL
 * handle at no cost.
 */
#include "nccl/profiler_v6.h"
#include "plugin/plugin.h"

static ncclResult_t v6_init(void** context, uint64_t comm_id, int* mask, const char* comm_name,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t log) {
  /* Never fail init (spec nccl-profiler-abi.md §4.3): opt out with a NULL
   * context and leave the mask alone instead. */
  pt_event_init(context, mask, PT_EVENT_MASK, 6, comm_id, comm_name, nnodes, nranks, rank, log);
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
    case ncclProfileProxyOp: {
      if (d->proxyOp.commHash == 0 && d->proxyOp.opCount == 0 && d->proxyOp.rawProxyNsteps == 0) {
        /* NVIDIA NCCL 2.29+: no RCCL fields (it zeroes the descriptor). */
        *handle = pt_event_stock_op_start(context, d->proxyOp.pid, d->rank, d->proxyOp.channelId,
                                          d->proxyOp.peer, d->proxyOp.nSteps,
                                          d->proxyOp.chunkSize, d->proxyOp.isSend, d->parentObj);
        return ncclSuccess;
      }
      const pt_op_info info = {
          .comm_hash = d->proxyOp.commHash,
          .op_count = d->proxyOp.opCount,
          .channel = d->proxyOp.channelId,
          .peer = d->proxyOp.peer,
          .nsteps = d->proxyOp.rawProxyNsteps, /* the DONE counter counts raw steps */
          .is_send = d->proxyOp.isSend,
          .nbytes = d->proxyOp.proxyNbytes,
          .func_idx = d->proxyOp.traceFuncIdx,
          .protocol = d->proxyOp.traceProtocol,
          .pattern = d->proxyOp.tracePattern,
          .total_bytes = d->proxyOp.traceTotalBytes,
          .chunk_size = (uint32_t)d->proxyOp.chunkSize,
      };
      *handle = pt_event_op_start(context, d->proxyOp.pid, &info);
      return ncclSuccess;
    }
    case ncclProfileColl: /* the parents of NVIDIA's ProxyOps: their opCount */
      *handle = pt_event_coll_start(context, d->rank, pt_func_code(d->coll.func), d->coll.seqNumber, 0);
      return ncclSuccess;
    case ncclProfileP2p:
      *handle = pt_event_p2p_start(context, d->rank, pt_func_code(d->p2p.func), d->p2p.peer, 0);
      return ncclSuccess;
    default:
      pt_event_other_type(context, d->type); /* Group/API/...: not traced */
      return ncclSuccess;
  }
}

static ncclResult_t v6_stop(void* handle) {
  pt_event_stop(handle);
  return ncclSuccess;
}

static ncclResult_t v6_record(void* handle, ncclProfilerEventState_v6_t state,
                              ncclProfilerEventStateArgs_v6_t* args) {
  if (!handle) return ncclSuccess; /* declined events and net-plugin callbacks */
  if (state == ncclProfilerProxyDiagUpdate) { /* the hottest callback: checks are in the core */
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

static ncclResult_t v6_finalize(void* context) {
  pt_ctx_destroy(context);
  return ncclSuccess;
}

PT_EXPORT ncclProfiler_v6_t ncclProfiler_v6 = {
    .name = "ProxyTrace",
    .init = v6_init,
    .startEvent = v6_start,
    .stopEvent = v6_stop,
    .recordEventState = v6_record,
    .finalize = v6_finalize,
};
