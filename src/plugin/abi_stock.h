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
 *   - v1-v2 (NCCL 2.23-2.25) answer the Group event with a non-NULL handle:
 *     those releases give a task its activation mask, which every ProxyOp
 *     and ProxyStep of the task inherits, only when the Group handle is
 *     non-NULL (v2.23.4-1 src/misc/profiler.cc:272,299,318; v2.24.3-1 and
 *     v2.25.1-1 :384,408,427). With NULL they send no proxy event at all.
 *     The handle is a sentinel (pt_group_handle): nothing is allocated, and
 *     its stop and states are ignored. Newer releases gate proxy events
 *     without it, so their tables keep answering NULL.
 * `type` is one byte in v1-v4 and eight in v5; each is compared in its own
 * width.
 */
#ifndef PT_PLUGIN_ABI_STOCK_H
#define PT_PLUGIN_ABI_STOCK_H

#include "plugin/plugin.h"

/* start / stop / record / finalize for descriptor type DESCR, state-args
 * type ARGS; REGISTER_AT_START for v1-v3; GROUP_HANDLE for v1-v2;
 * STEPS_ARG(args) yields the ProxyOp `steps` argument or -1 where the
 * version has none. */
#define PT_STOCK_CALLBACKS(V, DESCR, ARGS, STATE, REGISTER_AT_START, GROUP_HANDLE, STEPS_ARG)     \
  static ncclResult_t V##_start(void* context, void** handle, DESCR* d) {                         \
    if (!handle) return ncclSuccess;                                                               \
    *handle = NULL;                                                                                \
    if (!d) return ncclSuccess;                                                                    \
    if (d->type == ncclProfileProxyOp) {                                                           \
      *handle = pt_event_stock_op_start(context, d->proxyOp.pid, d->rank, d->proxyOp.channelId,    \
                                        d->proxyOp.peer, d->proxyOp.nSteps,                        \
                                        d->proxyOp.chunkSize, d->proxyOp.isSend);                  \
      if (REGISTER_AT_START) pt_event_op_in_progress(*handle);                                     \
    } else if (d->type == ncclProfileProxyStep) {                                                  \
      *handle = pt_event_step_start(d->parentObj, d->proxyStep.step);                              \
    } else if (GROUP_HANDLE && d->type == ncclProfileGroup) {                                      \
      *handle = pt_group_handle();                                                                 \
    } else {                                                                                       \
      pt_event_other_type(context, d->type);                                                       \
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
    if (handle) pt_event_state(handle, state, args ? (int64_t)(STEPS_ARG(args)) : -1);             \
    return ncclSuccess;                                                                            \
  }                                                                                                \
  static ncclResult_t V##_finalize(void* context) {                                                \
    pt_ctx_destroy(context);                                                                       \
    return ncclSuccess;                                                                            \
  }

/* init for v1-v3, which learn nothing about the communicator. */
#define PT_STOCK_INIT_NOCOMM(V)                                                                    \
  static ncclResult_t V##_init(void** context, int* mask) {                                        \
    pt_event_init(context, mask, PT_EVENT_MASK_STOCK, 0, NULL, 0, 0, -1, NULL);                  \
    return ncclSuccess;                                                                            \
  }

#define PT_STEPS_V1(a) ((a)->proxyOp.steps)
#define PT_STEPS_NONE(a) (-1)

#endif
