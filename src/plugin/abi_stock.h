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
 *   - KernelCh (v3-v5: NCCL 2.26-2.28) gets a kernel-channel handle
 *     (progress.c); v4-v5 carry the GPU's start time in the descriptor and
 *     its stop time in the KernelChStop args. v1-v2 have no such event.
 * `type` is one byte in v1-v4 and eight in v5; each is compared in its own
 * width.
 */
#ifndef PT_PLUGIN_ABI_STOCK_H
#define PT_PLUGIN_ABI_STOCK_H

#include "plugin/plugin.h"

/* start / stop / record / finalize of table API (1-5) for descriptor type
 * DESCR, state-args type ARGS; REGISTER_AT_START for v1-v3; GROUP_HANDLE
 * for v1-v4; STEPS_ARG(args) yields the ProxyOp `steps` argument or -1
 * where the version has none; COLL(d) and P2P(d) the pt_task_info of a
 * Coll / P2p descriptor; KCH(ctx, d) the KernelCh start (v3+), or NULL;
 * HASH(d, arm) is the Coll/P2p commHash (v1-v3) or 0. */
#define PT_STOCK_CALLBACKS(V, API, DESCR, ARGS, STATE, REGISTER_AT_START, GROUP_HANDLE, STEPS_ARG,   \
                           COLL, P2P, KCH, HASH)                                                    \
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
      const pt_task_info ti = COLL(d);                                                             \
      *handle = pt_event_coll_start(context, d->rank, &ti, HASH(d, coll));                         \
    } else if (d->type == ncclProfileP2p) {                                                        \
      const pt_task_info ti = P2P(d);                                                              \
      *handle = pt_event_p2p_start(context, d->rank, &ti, HASH(d, p2p));                           \
    } else if (API >= 3 && d->type == ncclProfileKernelCh) {                                       \
      *handle = KCH(context, d);                                                                   \
    } else if (GROUP_HANDLE && d->type == ncclProfileGroup) {                                      \
      *handle = pt_group_handle();                                                                 \
    } else {                                                                                       \
      pt_event_other_type(context, d->type, API);                                                  \
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
/* v1 carries codes, not names. */
#define PT_V1_CODE(v, n) ((uint8_t)((unsigned)(v) < (n) ? (v) : PT_CODE_NONE))
#define PT_COLL_V1(d)                                                                              \
  ((pt_task_info){.func = (uint8_t)((d)->coll.func < PT_FUNC_NUM ? (d)->coll.func : PT_FUNC_UNKNOWN), \
                  .dtype = PT_V1_CODE((d)->coll.datatype, 12), .algo = PT_V1_CODE((d)->coll.algo, 7), \
                  .proto = PT_V1_CODE((d)->coll.proto, 3), .nchannels = (d)->coll.nMaxChannels,     \
                  .root_or_peer = (d)->coll.root, .seq = (d)->coll.seqNumber, .count = (d)->coll.count})
#define PT_P2P_V1(d)                                                                               \
  ((pt_task_info){.is_p2p = 1,                                                                     \
                  .func = (uint8_t)((d)->p2p.func < PT_FUNC_NUM ? (d)->p2p.func : PT_FUNC_UNKNOWN), \
                  .dtype = PT_V1_CODE((d)->p2p.datatype, 12), .algo = PT_CODE_NONE,                 \
                  .proto = PT_CODE_NONE, .root_or_peer = (d)->p2p.peer, .count = (d)->p2p.count})
#define PT_COLL_MAXCH(d) PT_COLL_INFO((d)->coll, (d)->coll.nMaxChannels, 0) /* v2-v3 */
#define PT_P2P_NOCH(d) PT_P2P_INFO((d)->p2p, 0, 0)                          /* v2-v3 */
#define PT_COLL_NCH(d) PT_COLL_INFO((d)->coll, (d)->coll.nChannels, 0)      /* v4-v5 */
#define PT_P2P_NCH(d) PT_P2P_INFO((d)->p2p, (d)->p2p.nChannels, 0)          /* v4-v5 */
#define PT_KCH_NONE(c, d) NULL
#define PT_KCH_V3(c, d) pt_event_kch_start((c), (d)->parentObj, (d)->kernelCh.channelId, 0)
#define PT_KCH_V4(c, d) pt_event_kch_start((c), (d)->parentObj, (d)->kernelCh.channelId, (d)->kernelCh.pTimer)
#define PT_HASH_IN_DESCR(d, arm) ((d)->arm.commHash)
#define PT_HASH_AT_INIT(d, arm) 0

#endif
