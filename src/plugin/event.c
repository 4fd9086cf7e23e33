/*
 * event.c — normalized events: what every ABI version's callbacks are
 * translated into, checked once here and handed to the trace core.
 *
 * The checks are the ones the host makes necessary (spec
 * nccl-profiler-abi.md §2.10, §6.12): a ProxyOp of another process (PXN)
 * carries that process's context pointer, so its pid is compared before the
 * context is touched; a NULL context (the plugin opted out of a communicator)
 * gives a NULL handle; every handle is decoded by the core, which catches
 * stale and foreign ones.
 */
#include <dlfcn.h>

#include "nccl/profiler.h"
#include "plugin/plugin.h"

_Alignas(256) const char pt_group_sentinel[256] = {'G'};

/* The trace of a context of this process, or NULL: a ProxyOp of another
 * process (PXN) carries that process's context pointer, so the pid is
 * compared before the context is touched. */
static pt_trace* own_trace(void* ctx, pid_t pid) {
  if (__builtin_expect(pid != pt_self_pid(), 0)) {
    pt_trace_count(NULL, PT_DROP_FOREIGN);
    return NULL;
  }
  return pt_ctx_trace(ctx);
}

void* pt_event_op_start(void* ctx, pid_t pid, const pt_op_info* info) {
  pt_trace* t = own_trace(ctx, pid);
  return t ? pt_op_start(t, info) : NULL;
}

/* `steps`: 1, or PT_STEPS_NO_DIAG where RCCL's ProxyDiag is not trusted. */
static void* stock_op_start(pt_trace* t, void* ctx, int rank, int channel, int peer, int nsteps,
                            int chunk_size, int is_send, void* parent, int steps) {
  pt_trace_learn_rank(t, rank);
  pt_op_info info = {
      .comm_hash = pt_ctx_comm_hash(ctx), .op_count = -1, .channel = channel, .peer = peer,
      .nsteps = nsteps, .is_send = is_send, .nbytes = 0, .func_idx = -1, .protocol = -1,
      .pattern = -1, .total_bytes = 0, .chunk_size = (uint32_t)chunk_size, .step_driven = steps,
      .tag_ref = pt_task_tag_ref(parent)};
  info.origin = pt_task_op_count(parent, &info.op_count);
  return pt_op_start(t, &info);
}

void* pt_event_stock_op_start(void* ctx, pid_t pid, int rank, int channel, int peer, int nsteps,
                              int chunk_size, int is_send, void* parent) {
  pt_trace* t = own_trace(ctx, pid);
  return t ? stock_op_start(t, ctx, rank, channel, peer, nsteps, chunk_size, is_send, parent, 1) : NULL;
}

void* pt_event_host_op_start(void* ctx, int rank, const struct pt_proxy_op_arm* a, void* parent) {
  pt_trace* t = own_trace(ctx, a->pid);
  if (!t) return NULL;
  pt_ctx* c = ctx;
  if (a->commHash == 0 && a->opCount == 0 && a->rawProxyNsteps == 0) {
    /* No RCCL fields: NVIDIA NCCL (it zeroes the descriptor), or an RCCL
     * that did not take the ProxyDiag bit we asked for. */
    int steps = 1;
    if (__builtin_expect(atomic_load_explicit(&c->host_lib, memory_order_relaxed) == PT_HOSTLIB_RCCL, 0) &&
        !pt_diag_count_op(c, 0))
      steps = PT_STEPS_NO_DIAG;
    return stock_op_start(t, ctx, rank, a->channelId, a->peer, a->nSteps, a->chunkSize, a->isSend, parent,
                          steps);
  }
  if (!pt_diag_fields_fit(c, a) || !pt_diag_count_op(c, 1))
    return stock_op_start(t, ctx, rank, a->channelId, a->peer, a->nSteps, a->chunkSize, a->isSend, parent,
                          PT_STEPS_NO_DIAG);
  const pt_op_info info = {
      .comm_hash = a->commHash,
      .op_count = a->opCount,
      .channel = a->channelId,
      .peer = a->peer,
      .nsteps = a->rawProxyNsteps, /* the DONE counter counts raw steps */
      .is_send = a->isSend,
      .nbytes = a->proxyNbytes,
      .func_idx = a->traceFuncIdx,
      .protocol = a->traceProtocol,
      .pattern = a->tracePattern,
      .total_bytes = a->traceTotalBytes,
      .chunk_size = (uint32_t)a->chunkSize,
      .tag_ref = pt_task_tag_ref(parent),
      .p2p_seq = pt_task_p2p_seq(parent),
  };
  return pt_op_start(t, &info);
}

void* pt_event_coll_start(void* ctx, int rank, const pt_task_info* ti, uint64_t comm_hash) {
  pt_trace* t = pt_ctx_trace(ctx);
  if (!t) return NULL;
  pt_trace_learn_rank(t, rank);
  pt_ctx_learn_comm_hash(ctx, comm_hash);
  pt_progress_task(t, ti);
  return pt_task_handle_tagged(0, ti->func, ti->seq, pt_trace_tag_ref(t, ti->user_tag));
}

void* pt_event_p2p_start(void* ctx, int rank, const pt_task_info* ti, uint64_t comm_hash) {
  pt_trace* t = pt_ctx_trace(ctx);
  if (!t) return NULL;
  pt_trace_learn_rank(t, rank);
  pt_ctx_learn_comm_hash(ctx, comm_hash);
  const int64_t seq = pt_ctx_p2p_next(ctx, ti->root_or_peer, ti->func == PT_FUNC_RECV);
  if (seq < 0) return NULL;
  pt_task_info with_seq = *ti;
  with_seq.seq = (uint64_t)seq;
  pt_progress_task(t, &with_seq);
  return pt_task_handle_tagged(1, ti->func, (uint64_t)seq, pt_trace_tag_ref(t, ti->user_tag));
}

void* pt_event_kch_start(void* ctx, void* parent, int channel, uint64_t gpu_ns) {
  pt_trace* t = pt_ctx_trace(ctx);
  return t ? pt_progress_kch_start(t, parent, channel, gpu_ns) : NULL;
}

void pt_event_op_state(void* h, int state, int64_t steps, int64_t trans_size) {
  const pt_handle_kind_t kind = pt_handle_kind(h);
  switch (state) {
    case 19: /* ncclProfilerProxyOpInProgress_v4 */
      if (kind != PT_HANDLE_OP) break;
      pt_op_register(h);
      return;
    case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: /* ProxyOp states, v1-v3 */
      if (kind != PT_HANDLE_OP) break;
      if (steps >= 0) pt_op_progress(h, state, steps, trans_size);
      return;
    case 22: /* ncclProfilerKernelChStop: its args' first word is the GPU's stop time */
      if (!pt_is_kch_handle(h)) break;
      pt_progress_kch_gpu_stop(h, trans_size > 0 ? (uint64_t)trans_size : 0);
      return;
    default: /* the step states (8-12, 20) went to the core (plugin.h) */
      break;
  }
  pt_event_refused(NULL, h);
}

void pt_event_init(void** context, int* mask, int event_mask, int api, uint64_t comm_hash,
                   const char* comm_name, int nnodes, int nranks, int rank, ncclDebugLogger_t log) {
  if (!context) return;
  *context = pt_ctx_create(comm_hash, comm_name, nnodes, nranks, rank, api, log);
  if (api >= 3) event_mask |= PT_EVENT_MASK_KERNEL;
  if (api >= 6) event_mask |= pt_diag_mask_bits(api); /* after the context read the settings */
  if (*context && mask) pt_set_mask(mask, event_mask);
  /* From API v7 the host hands init its process-wide mask, which RAS may
   * set at run time (2.31+: ncclras CONTROL PROFILER_MASK; the host reads
   * only that int, v2.31 src/plugin/profiler.cc ncclProfilerEventMask):
   * kept, to tell at a dump whether the host still sends proxy events —
   * a mask of 0 sends nothing that could show it. Only an int in the static
   * storage of a loaded object (dladdr), as NCCL's is: one on a stack or
   * the heap may be gone by the dump. */
  pt_ctx* c = *context;
  Dl_info where;
  if (c && mask && api >= 7 && dladdr(mask, &where)) {
    /* the dumper thread may read them already: the context is published */
    __atomic_store_n(&c->asked_mask, event_mask, __ATOMIC_RELAXED);
    __atomic_store_n(&c->host_mask, mask, __ATOMIC_RELEASE);
  }
}

void pt_event_mask_at_dump(pt_ctx* c) {
  const int proxy = ncclProfileProxyOp | ncclProfileProxyStep;
  int* host = c ? __atomic_load_n(&c->host_mask, __ATOMIC_ACQUIRE) : NULL;
  if (!host) return;
  const int asked = __atomic_load_n(&c->asked_mask, __ATOMIC_RELAXED);
  if (!(asked & proxy)) return;
  const int now = __atomic_load_n(host, __ATOMIC_RELAXED);
  /* Any other mask than the one asked for (RAS took bits away, as it may
   * give them back): some events were not sent, so the calls recorded on
   * one rank and on another cannot be compared (the analyzer's desync
   * judgement steps aside). It stays said. */
  if (now != asked) pt_trace_note(c->trace, PT_NOTE_MASK_CHANGED);
  if (now & proxy) pt_trace_unnote(c->trace, PT_NOTE_MASK_OFF);
  else pt_trace_note(c->trace, PT_NOTE_MASK_CHANGED | PT_NOTE_MASK_OFF);
}

/* Events only a mask bit the plugin never asks for starts (ProxyCtrl,
 * KernelLaunch, the CE events, v7's KernelPhase; KernelCh in the tables
 * that do not ask for it, API v1-v2): their arrival shows that the host
 * changed the mask (RAS on NCCL 2.31+). Group and the API events come
 * whatever the mask says on some releases. */
#define PT_UNASKED_TYPES (ncclProfileProxyCtrl | ncclProfileKernelLaunch | ncclProfileCeColl | \
                          ncclProfileCeSync | ncclProfileCeBatch)

void pt_event_other_type(void* ctx, uint64_t type, int api) {
  /* One of the bits 0..14 (15 in v7: KernelPhase) is a known event we do
   * not trace; anything else (no bit, several, RCCL's ProxyDiag mask bits,
   * higher bits) is refused. */
  const uint64_t last = api >= 7 ? (uint64_t)ncclProfileKernelPhase : (uint64_t)ncclProfileCeBatch;
  const int known = type && !(type & (type - 1)) && type <= last;
  if (!known) pt_event_refused(ctx, NULL);
  else if ((type & PT_UNASKED_TYPES) || (api < 3 && type == ncclProfileKernelCh) ||
           (api >= 7 && type == ncclProfileKernelPhase))
    pt_event_mask_changed(ctx);
}

void pt_event_mask_changed(void* ctx) {
  pt_trace* t = pt_ctx_trace(ctx);
  if (t && !(pt_trace_notes(t) & PT_NOTE_MASK_CHANGED)) pt_trace_note(t, PT_NOTE_MASK_CHANGED);
}

void pt_event_refused(void* ctx, void* handle) {
  if (handle) pt_handle_count(handle, PT_DROP_BAD_STATE);
  else pt_trace_count(pt_ctx_trace(ctx), PT_DROP_BAD_STATE);
}
