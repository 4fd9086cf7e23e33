/*
 * abi_stock.h — the callbacks of the stock-NCCL tables (API v1-v5), written
 * once and stamped out per version by abi_v1.c ... abi_v5.c.
 *
 * Every version puts `type` at offset 0, `parentObj` at 8, `rank` at 16 and
 * the proxyOp/proxyStep arms at 24 with the same fields, so the translation
 * differs only in the C types (spec nccl-profiler-abi.md §2.2.10):
 *   - v1-v3 (NCCL 2.23-2.26): init has no communicator arguments; a ProxyOp
 *     is started when the op enters progress, so it is registered at start;
 *     its progress also comes as ProxyOp states 0-7 with a `steps` argument.
 *   - v4-v5 (NCCL 2.27-2.28): the op is registered at InProgress (19);
 *     progress comes from the step states.
 *   - v1-v4 (NCCL 2.23-2.27) answer the Group event with a non-NULL handle:
 *     2.23-2.25 give a task its activation mask, which every ProxyOp and
 *     ProxyStep of the task inherits, only when the Group handle is
 *     non-NULL (v2.23.4-1 src/misc/profiler.cc:272,299,318; v2.24.3-1 and
 *     v2.25.1-1 :384,408,427) — with NULL they send no proxy event at all —
 *     and 2.23-2.27 send the Coll and P2p events only under a non-NULL
 *     Group handle (v2.26.2-1 and v2.27.3-1 src/plugin/profiler.cc,
 *     ncclProfilerStartTaskEvents). The handle is a sentinel
 *     (pt_group_handle): nothing is allocated, and its stop and states are
 *     ignored. 2.28+ need it for neither; the v5 table answers NULL.
 *   - Coll and P2p get a task handle (trace.h): the parent of their
 *     ProxyOps, from which an op's opCount follows. v1-v3 descriptors also
 *     carry the commHash, which their init does not give.
 * `type` is one byte in v1-v4 and eight in v5; each is compared in its own
 * width.
 */
#ifndef PT_PLUGIN_ABI_STOCK_H
#define PT_PLUGIN_ABI_STOCK_H

#include "plugin/plugin.h"

/* start / stop / record / finalize for descriptor type DESCR, state-args
 * type ARGS; REGISTER_AT_START for v1-v3; GROUP_HANDLE for v1-v4;
 * STEPS_ARG(args) yields the ProxyOp `steps` argument or -1 where the
 * version has none; FUNC(f) turns the Coll/P2p `func` field into a code
 * (v1: a code already, v2+: a name); HASH(d, arm) is the Coll/P2p commHash
 * (v1-v3) or 0. */
#define PT_STOCK_CALLBACKS(V, DESCR, ARGS, STATE, REGISTER_AT_START, GROUP_HANDLE, STEPS_ARG, FUNC,  \
                           HASH)                                                                   \
  static ncclResult_t V##_start(void* context, void** handle, DESCR* d) {                         \
    if (!handle) return ncclSuccess;                                                               \
    *handle = NULL;                                                                                \
    if (!d) return ncclSuccess;                                                                    \
    if (d->type == ncclProfileProxyStep) { /* the most frequent start: tested first */            \
      *handle = pt_event_step_start(context, d->parentObj, d->proxyStep.step);                     \
    } else if (d->type == ncclProfileProxyOp) {                                                    \
      *handle = pt_event_stock_op_start(context, d->proxyOp.pid, d->rank, d->proxyOp.channelId,    \
                                        d->proxyOp.peer, d->proxyOp.nSteps,                        \
                                        d->proxyOp.chunkSize, d->proxyOp.isSend, d->parentObj);    \
      if (REGISTER_AT_START) pt_event_op_in_progress(*handle);                                     \
    } else if (d->type == ncclProfileColl) {                                                       \
      *handle = pt_event_coll_start(context, d->rank, FUNC(d->coll.func), d->coll.seqNumber,       \
                                   HASH(d, coll), 0);                                              \
    } else if (d->type == ncclProfileP2p) {                                                        \
      *handle = pt_event_p2p_start(context, d->rank, FUNC(d->p2p.func), d->p2p.peer,               \
                                   HASH(d, p2p), 0);                                               \
    } else if (GROUP_HANDLE && d->type == ncclProfileGroup) {                                      \
      *handle = pt_group_handle();                                                                 \
    } else {                                                                                       \
      pt_event_other_type(context, d->type, 5);                                                    \
    }                                                                                              \
    return ncclSuccess;                                                                            \
  }                                                                                                \
  static ncclResult_t V##_stop(void* handle) {                                                     \
    if (GROUP_HANDLE && handle == pt_group_handle()) return ncclSuccess;                           \
    pt_event_stop(handle);                                                                         \
    return ncclSuccess;                                                                            \
  }                                                                                                \
  static ncclResult_t V##_record(void* handle, STATE state, ARGS* args) {                          \
    if (GROUP_HANDLE && handle == pt_group_handle()) return ncclSuccess;                           \
    if (handle)                                                                                    \
      pt_event_state(handle, state, args ? (int64_t)(STEPS_ARG(args)) : -1, pt_args_trans_size(args)); \
    return ncclSuccess;                                                                            \
  }                                                                                                \
  static ncclResult_t V##_finalize(void* context) {                                                \
    pt_ctx_destroy(context);                                                                       \
    return ncclSuccess;                                                                            \
  }

/* init for v1-v3, which learn nothing about the communicator. */
#define PT_STOCK_INIT_NOCOMM(V, API)                                                               \
  static ncclResult_t V##_init(void** context, int* mask) {                                        \
    pt_event_init(context, mask, PT_EVENT_MASK_STOCK, API, 0, NULL, 0, 0, -1, NULL);             \
    return ncclSuccess;                                                                            \
  }

#define PT_STEPS_V1(a) ((a)->proxyOp.steps)
#define PT_STEPS_NONE(a) (-1)
#define PT_FUNC_BY_CODE(f) ((int)(f) < PT_FUNC_NUM ? (int)(f) : PT_FUNC_UNKNOWN)
#define PT_FUNC_BY_NAME(f) pt_func_code(f)
#define PT_HASH_IN_DESCR(d, arm) ((d)->arm.commHash)
#define PT_HASH_AT_INIT(d, arm) 0

#endif
