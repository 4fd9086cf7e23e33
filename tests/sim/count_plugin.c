/*
 * count_plugin.c — a profiler plugin for the emulator's tests: it counts
 * every callback, checks the calling thread's role, and keeps per-op and
 * per-step records (count_plugin.h). It exports the ncclProfiler_vN tables
 * selected by COUNT_EXPORTS (bit N = vN) and, with all of them, RCCL's dump
 * hook. Built with COUNT_NULL_GROUP it answers the Group event with NULL, as
 * a plugin that does not trace groups may. Nothing is allocated: handles
 * point into static arrays.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "count_plugin.h"
#include "nccl/profiler_v1.h"
#include "nccl/profiler_v2.h"
#include "nccl/profiler_v3.h"
#include "nccl/profiler_v4.h"
#include "nccl/profiler_v5.h"
#include "nccl/profiler_v6.h"

#ifndef COUNT_EXPORTS
#define COUNT_EXPORTS 0x7e
#endif
#ifndef COUNT_NULL_GROUP
#define COUNT_NULL_GROUP 0
#endif
#define EXPORT __attribute__((visibility("default")))
#define UNUSED __attribute__((unused)) /* unused when the table is not exported */

enum { TAG_OP = 0x0b0b, TAG_STEP = 0x5757 };

static count_results R;
static atomic_int want_mask = -1;
static atomic_int fail_rank = -1;
static atomic_int fail_nth = -1;
static atomic_int init_seq;
static atomic_int lazy_handles;

typedef struct {
  int tag;
  count_op* op;
  int step;
  atomic_int stopped;
} step_rec;

#define MAX_STEP_RECS (1 << 18)
static step_rec steps[MAX_STEP_RECS];
static atomic_long n_steps;
static int type_tags[COUNT_NTYPES]; /* handles of all other events */

typedef struct {
  int magic;
  int rank;
  ncclDebugLogger_t logfn;
} context;
#define CTX_MAGIC 0x6374780a
static context contexts[1024];
static atomic_int n_contexts;
static atomic_long seq;

EXPORT count_results* count_results_get(void);
EXPORT void count_reset(int mask);
EXPORT void count_fail_rank(int rank);
EXPORT void count_fail_nth(int nth);
EXPORT void count_lazy_handles(int on);

/* A careless plugin: startEvent of Group events leaves *eHandle alone. */
void count_lazy_handles(int on) { atomic_store(&lazy_handles, on); }

/* init of `rank` fails (ncclInternalError, context NULL) until reset. */
void count_fail_rank(int rank) { atomic_store(&fail_rank, rank); }

/* The nth init call (from 0) fails, whatever its version knows of ranks. */
void count_fail_nth(int nth) { atomic_store(&fail_nth, nth); }

count_results* count_results_get(void) { return &R; }

void count_reset(int mask) {
  memset(&R, 0, sizeof R);
  memset(steps, 0, sizeof steps);
  atomic_store(&n_steps, 0);
  atomic_store(&n_contexts, 0);
  atomic_store(&seq, 0);
  atomic_store(&R.last_arg23_byte, -2);
  atomic_store(&want_mask, mask);
  atomic_store(&fail_rank, -1);
  atomic_store(&fail_nth, -1);
  atomic_store(&init_seq, 0);
  atomic_store(&lazy_handles, 0);
}

/* --- thread roles ------------------------------------------------------- */

enum { ROLE_OTHER, ROLE_INIT, ROLE_APP, ROLE_PROXY };
static _Thread_local int tl_role = -1;

static int role(void) {
  if (tl_role < 0) {
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    tl_role = !strncmp(name, "sim-init", 8)        ? ROLE_INIT
              : !strncmp(name, "sim-app", 7)       ? ROLE_APP
              : !strncmp(name, "NCCL Progress", 13) ? ROLE_PROXY
                                                   : ROLE_OTHER;
  }
  return tl_role;
}

static int bit_index(uint64_t type) {
  for (int i = 0; i < COUNT_NTYPES; i++)
    if (type == (1ull << i)) return i;
  return -1;
}

static void check_role(int bit, int want) {
  if (role() != want) {
    atomic_fetch_add(&R.wrong_thread, 1);
    if (bit >= 0) atomic_fetch_add(&R.wrong_thread_type[bit], 1);
  }
}

static int role_of_type(uint64_t type) {
  switch (type) {
    case ncclProfileProxyOp:
    case ncclProfileProxyStep:
    case ncclProfileProxyCtrl:
    case ncclProfileKernelCh: return ROLE_PROXY;
    default: return ROLE_APP;
  }
}

static int valid_ctx(void* c) {
  context* x = c;
  return x >= contexts && x < contexts + 1024 && x->magic == CTX_MAGIC;
}

/* --- the common part ---------------------------------------------------- */

static ncclResult_t common_init(void** ctx, int* mask, int rank, ncclDebugLogger_t logfn) {
  check_role(-1, ROLE_INIT);
  atomic_fetch_add(&R.init_calls, 1);
  int now = atomic_fetch_add(&R.init_now, 1) + 1;
  int mx = atomic_load(&R.init_max_concurrent);
  while (now > mx && !atomic_compare_exchange_weak(&R.init_max_concurrent, &mx, now)) {
  }
  static _Thread_local int inited_here;
  if (!inited_here++) atomic_fetch_add(&R.init_threads_distinct, 1);
  /* Inside until another init is inside too (each rank's init runs on a
   * thread of its own, at once): once two overlapped, none waits; a host
   * that calls them one after another leaves each here for 2 s, and the
   * count stays 1. Not a fixed sleep: under qemu or a loaded machine a
   * thread may take longer than any sleep to start. */
  for (int waited = 0; atomic_load(&R.init_max_concurrent) < 2 && waited < 2000; waited++) usleep(1000);
  atomic_fetch_sub(&R.init_now, 1);
  int nth = atomic_fetch_add(&init_seq, 1);
  if ((rank >= 0 && rank == atomic_load(&fail_rank)) || nth == atomic_load(&fail_nth)) {
    *ctx = NULL;
    atomic_fetch_add(&R.init_fails, 1);
    return ncclInternalError;
  }
  int i = atomic_fetch_add(&n_contexts, 1);
  if (i >= 1024) {
    *ctx = NULL;
    atomic_fetch_add(&R.init_fails, 1);
    return ncclSuccess;
  }
  contexts[i] = (context){CTX_MAGIC, rank, logfn};
  *ctx = &contexts[i];
  int m = atomic_load(&want_mask);
  if (m < 0) m = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |
                 ncclProfileProxyStep | ncclProfileProxyCtrl;
  /* The mask is one int for the whole process, and inits run concurrently:
   * write it atomically, as the host reads it. */
  __atomic_store_n(mask, m, __ATOMIC_RELAXED);
  atomic_store(&R.mask_seen, m);
  return ncclSuccess;
}

typedef struct {
  uint64_t type;
  void* parent;
  int rank;
  /* proxyOp (same offsets in every version) */
  pid_t pid;
  int channel, peer, nsteps, chunk, is_send;
  int step;
  uint64_t comm_hash;
  int64_t op_count;
  int raw;
} common_descr;

static ncclResult_t common_start(void* ctx, void** eHandle, const common_descr* d, int version) {
  int bit = bit_index(d->type);
  if (d->type == ncclProfileGroup && atomic_load(&lazy_handles)) return ncclSuccess;
  *eHandle = NULL;
  if (bit < 0) return ncclSuccess;
  atomic_fetch_add(&R.starts[bit], 1);
  check_role(bit, role_of_type(d->type));
  if (COUNT_NULL_GROUP && d->type == ncclProfileGroup) return ncclSuccess;
  if (d->type == ncclProfileProxyOp) {
    if (d->pid != getpid()) {
      /* PXN: neither the context nor the parent is ours; touch neither. */
      atomic_fetch_add(&R.foreign_ops, 1);
      return ncclSuccess;
    }
    if (!valid_ctx(ctx)) atomic_fetch_add(&R.bad_ctx, 1);
    long i = atomic_fetch_add(&R.n_ops, 1);
    if (i >= COUNT_MAX_OPS) return ncclSuccess;
    count_op* op = &R.ops[i];
    op->version = version;
    op->rank = d->rank;
    op->channel = d->channel;
    op->peer = d->peer;
    op->is_send = d->is_send;
    op->nsteps = d->nsteps;
    op->chunk = d->chunk;
    op->pid = d->pid;
    op->ctx = ctx;
    op->parent = d->parent;
    op->comm_hash = d->comm_hash;
    op->op_count = d->op_count;
    op->raw = d->raw;
    op->diag[10] = -1;
    op->diag_last_kind = 100;
    op->diag_posted_at_tail = -1;
    for (int k = 0; k <= COUNT_NSTATES; k++) op->starts_at_first[k] = -1;
    for (int k = 0; k < COUNT_MAX_STEPS; k++) op->post_trans[k] = -1;
    for (int k = 0; k < 8; k++) op->op_trans[k] = op->op_steps[k] = -1;
    op->seq = atomic_fetch_add(&seq, 1);
    op->tag = TAG_OP;
    *eHandle = op;
    return ncclSuccess;
  }
  if (d->type == ncclProfileProxyStep) {
    count_op* op = d->parent;
    if (!op || op->tag != TAG_OP) return ncclSuccess;
    long i = atomic_fetch_add(&n_steps, 1);
    if (i >= MAX_STEP_RECS) return ncclSuccess;
    step_rec* s = &steps[i];
    s->tag = TAG_STEP;
    s->op = op;
    s->step = d->step;
    if (d->step >= 0 && d->step < COUNT_MAX_STEPS) {
      op->step_calls[d->step]++;
      op->step_started[d->step]++;
      if (op->step_starts[d->step]++ > 0) op->unstopped_restarts++;
    }
    if (d->step + 1 > op->step_max) op->step_max = d->step + 1;
    op->starts_total++;
    if (++op->open_now > op->open_max) op->open_max = op->open_now;
    *eHandle = s;
    return ncclSuccess;
  }
  if (!valid_ctx(ctx)) atomic_fetch_add(&R.bad_ctx, 1);
  *eHandle = &type_tags[bit];
  return ncclSuccess;
}

static int is_type_tag(void* h) { return (int*)h >= type_tags && (int*)h < type_tags + COUNT_NTYPES; }

static ncclResult_t count_stop(void* h) {
  if (!h) return ncclSuccess;
  if (is_type_tag(h)) {
    int bit = (int)((int*)h - type_tags);
    atomic_fetch_add(&R.stops[bit], 1);
    check_role(bit, role_of_type(1ull << bit));
    return ncclSuccess;
  }
  int tag = *(int*)h;
  if (tag == TAG_OP) {
    count_op* op = h;
    atomic_fetch_add(&R.stops[3], 1);
    check_role(3, ROLE_PROXY);
    atomic_fetch_add(&op->stops, 1);
  } else if (tag == TAG_STEP) {
    step_rec* s = h;
    atomic_fetch_add(&R.stops[4], 1);
    check_role(4, ROLE_PROXY);
    if (s->step >= 0 && s->step < COUNT_MAX_STEPS) s->op->step_calls[s->step]++;
    if (atomic_fetch_add(&s->stopped, 1) > 0) {
      s->op->double_stops++;
    } else {
      s->op->open_now--;
      s->op->step_stops++;
      if (s->step >= 0 && s->step < COUNT_MAX_STEPS) s->op->step_starts[s->step]--;
    }
  }
  return ncclSuccess;
}

/* `args` is the version's args object; `diag` is non-NULL for RCCL v6. */
static void common_record(void* h, int state, const void* args, const ncclProfilerEventStateArgs_v6_t* diag,
                          size_t trans_size, int has_trans) {
  if (state < 0 || state > COUNT_NSTATES) state = COUNT_NSTATES;
  atomic_fetch_add(&R.records[state], 1);
  if (!args) atomic_fetch_add(&R.null_args[state], 1);
  if (state == ncclProfilerProxyOpInProgress_v4)
    atomic_store(&R.last_arg19_byte, args ? *(const unsigned char*)args : -1);
  if (state == ncclProfilerGroupStartApiStop)
    atomic_store(&R.last_arg23_byte, args ? *(const unsigned char*)args : -1);
  if (!h) return;
  if (is_type_tag(h)) {
    int bit = (int)((int*)h - type_tags);
    check_role(bit, role_of_type(1ull << bit));
    return;
  }
  int tag = *(int*)h;
  if (tag == TAG_OP) {
    count_op* op = h;
    check_role(3, ROLE_PROXY);
    atomic_fetch_add(&op->states[state], 1);
    if (op->starts_at_first[state] < 0) op->starts_at_first[state] = op->starts_total;
    if (state < 8 && args) {
      /* v1-v3 ProxyOp states: {transSize, steps} */
      const ncclProfilerEventStateArgs_v1_t* a = args;
      op->op_trans[state] = (int64_t)a->proxyOp.transSize;
      op->op_steps[state] = a->proxyOp.steps;
      /* The posted step is started before SendPosted names it. */
      int s = a->proxyOp.steps - 1;
      if (state == ncclProfilerProxyOpSendPosted && s >= 0 && s < COUNT_MAX_STEPS && !op->step_started[s])
        op->posted_before_start++;
    }
    if (state == ncclProfilerProxyDiagUpdate && diag) {
      int k = diag->proxyDiag.counterKind;
      if (k < 11 && !(diag->proxyDiag.flags & NCCL_PROXY_DIAG_FLAG_COUNTER_SKIP)) {
        op->diag[k] = diag->proxyDiag.value;
        op->diag_last_kind = k;
      }
      if (k == ncclProxyDiagPosted) op->diag_posted++;
      if (k == ncclProxyDiagRecvTail && op->is_send && op->diag_posted_at_tail < 0)
        op->diag_posted_at_tail = op->diag_posted;
      /* A send's TRANSMITTED follows the SendWait of its step. */
      if (k == ncclProxyDiagTransmitted && op->is_send && op->send_waits <= op->diag_transmitted++)
        op->diag_before_state++;
    }
  } else if (tag == TAG_STEP) {
    step_rec* s = h;
    count_op* op = s->op;
    check_role(4, ROLE_PROXY);
    if (s->step >= 0 && s->step < COUNT_MAX_STEPS) op->step_calls[s->step]++;
    if (has_trans && trans_size) atomic_fetch_add(&R.step_transsize_set, 1);
    if (op->starts_at_first[state] < 0) op->starts_at_first[state] = op->starts_total;
    if (state == ncclProfilerProxyStepSendWait) op->send_waits++;
    op->step_states[state]++;
    if ((state == ncclProfilerProxyStepSendGPUWait || state == ncclProfilerProxyStepRecvWait) && s->step >= 0 &&
        s->step < COUNT_MAX_STEPS && op->post_trans[s->step] < 0 && args)
      op->post_trans[s->step] = (int64_t)trans_size;
  }
}

static ncclResult_t common_finalize(void* ctx) {
  atomic_fetch_add(&R.finalize_calls, 1);
  check_role(-1, ROLE_OTHER);
  if (ctx && !valid_ctx(ctx)) atomic_fetch_add(&R.bad_ctx, 1);
  return ncclSuccess;
}

static void note_coll(void* parent) {
  if (is_type_tag(parent)) {
    int bit = (int)((int*)parent - type_tags);
    if (bit == 0) atomic_fetch_add(&R.parent_is_group, 1);
    if (bit == 9 || bit == 10) atomic_fetch_add(&R.parent_is_api, 1);
  }
}

/* --- one table per version --------------------------------------------- */

#define FILL_PROXY(d, e)                  \
  do {                                    \
    (d).pid = (e)->proxyOp.pid;           \
    (d).channel = (e)->proxyOp.channelId; \
    (d).peer = (e)->proxyOp.peer;         \
    (d).nsteps = (e)->proxyOp.nSteps;     \
    (d).chunk = (e)->proxyOp.chunkSize;   \
    (d).is_send = (e)->proxyOp.isSend;    \
  } while (0)

UNUSED static ncclResult_t init_v1(void** ctx, int* mask) { return common_init(ctx, mask, -1, NULL); }

UNUSED static ncclResult_t start_v1(void* ctx, void** h, ncclProfilerEventDescr_v1_t* e) {
  common_descr d = {.type = e->type, .parent = e->parentObj, .rank = e->rank};
  if (e->type == ncclProfileProxyOp) FILL_PROXY(d, e);
  if (e->type == ncclProfileProxyStep) d.step = e->proxyStep.step;
  if (e->type == ncclProfileColl) {
    if (e->coll.name || e->coll.commHash) atomic_fetch_add(&R.coll_named, 1);
    note_coll(e->parentObj);
  }
  return common_start(ctx, h, &d, 1);
}
UNUSED static ncclResult_t record_v1(void* h, ncclProfilerEventState_v1_t s, ncclProfilerEventStateArgs_v1_t* a) {
  common_record(h, s, a, NULL, a ? a->proxyOp.transSize : 0, s >= 8 && s <= 12);
  return ncclSuccess;
}
UNUSED static ncclResult_t start_v2(void* ctx, void** h, ncclProfilerEventDescr_v2_t* e) {
  common_descr d = {.type = e->type, .parent = e->parentObj, .rank = e->rank};
  if (e->type == ncclProfileProxyOp) FILL_PROXY(d, e);
  if (e->type == ncclProfileProxyStep) d.step = e->proxyStep.step;
  if (e->type == ncclProfileColl) {
    if (e->coll.name || e->coll.commHash) atomic_fetch_add(&R.coll_named, 1);
    note_coll(e->parentObj);
  }
  return common_start(ctx, h, &d, 2);
}
UNUSED static ncclResult_t start_v3(void* ctx, void** h, ncclProfilerEventDescr_v3_t* e) {
  common_descr d = {.type = e->type, .parent = e->parentObj, .rank = e->rank};
  if (e->type == ncclProfileProxyOp) FILL_PROXY(d, e);
  if (e->type == ncclProfileProxyStep) d.step = e->proxyStep.step;
  if (e->type == ncclProfileColl) {
    if (e->coll.name || e->coll.commHash) atomic_fetch_add(&R.coll_named, 1);
    note_coll(e->parentObj);
  }
  return common_start(ctx, h, &d, 3);
}

UNUSED static ncclResult_t init_v4(void** ctx, int* mask, const char* name, uint64_t hash, int nnodes, int nranks,
                            int rank, ncclDebugLogger_t logfn) {
  return common_init(ctx, mask, rank, logfn);
}
UNUSED static ncclResult_t start_v4(void* ctx, void** h, ncclProfilerEventDescr_v4_t* e) {
  common_descr d = {.type = e->type, .parent = e->parentObj, .rank = e->rank};
  if (e->type == ncclProfileProxyOp) FILL_PROXY(d, e);
  if (e->type == ncclProfileProxyStep) d.step = e->proxyStep.step;
  if (e->type == ncclProfileP2p) atomic_store(&R.last_p2p_nch, e->p2p.nChannels);
  if (e->type == ncclProfileColl) note_coll(e->parentObj);
  return common_start(ctx, h, &d, 4);
}
UNUSED static ncclResult_t record_v4(void* h, ncclProfilerEventState_v4_t s, ncclProfilerEventStateArgs_v4_t* a) {
  common_record(h, s, a, NULL, a ? a->proxyStep.transSize : 0, (s >= 8 && s <= 12) || s == 20);
  return ncclSuccess;
}

UNUSED static ncclResult_t init_v5(void** ctx, uint64_t id, int* mask, const char* name, int nnodes, int nranks, int rank,
                            ncclDebugLogger_t logfn) {
  return common_init(ctx, mask, rank, logfn);
}
UNUSED static ncclResult_t start_v5(void* ctx, void** h, ncclProfilerEventDescr_v5_t* e) {
  common_descr d = {.type = e->type, .parent = e->parentObj, .rank = e->rank};
  if (e->type == ncclProfileProxyOp) FILL_PROXY(d, e);
  if (e->type == ncclProfileProxyStep) d.step = e->proxyStep.step;
  if (e->type == ncclProfileColl || e->type == ncclProfileP2p) note_coll(e->parentObj);
  return common_start(ctx, h, &d, 5);
}
UNUSED static ncclResult_t record_v5(void* h, ncclProfilerEventState_v5_t s, ncclProfilerEventStateArgs_v5_t* a) {
  common_record(h, s, a, NULL, a ? a->proxyStep.transSize : 0, (s >= 8 && s <= 12) || s == 20);
  return ncclSuccess;
}

UNUSED static ncclResult_t start_v6(void* ctx, void** h, ncclProfilerEventDescr_v6_t* e) {
  common_descr d = {.type = e->type, .parent = e->parentObj, .rank = e->rank};
  if (e->type == ncclProfileProxyOp) {
    FILL_PROXY(d, e);
    d.comm_hash = e->proxyOp.commHash;
    d.op_count = e->proxyOp.opCount;
    d.raw = e->proxyOp.rawProxyNsteps;
  }
  if (e->type == ncclProfileProxyStep) d.step = e->proxyStep.step;
  if (e->type == ncclProfileColl || e->type == ncclProfileP2p) note_coll(e->parentObj);
  return common_start(ctx, h, &d, 6);
}
UNUSED static ncclResult_t record_v6(void* h, ncclProfilerEventState_v6_t s, ncclProfilerEventStateArgs_v6_t* a) {
  common_record(h, s, a, s == ncclProfilerProxyDiagUpdate ? a : NULL, a ? a->proxyStep.transSize : 0,
                (s >= 8 && s <= 12) || s == 20);
  return ncclSuccess;
}

#if COUNT_EXPORTS & 0x02
EXPORT const ncclProfiler_v1_t ncclProfiler_v1 = {"Count-v1", init_v1, start_v1, count_stop, record_v1, common_finalize};
#endif
#if COUNT_EXPORTS & 0x04
EXPORT const ncclProfiler_v2_t ncclProfiler_v2 = {"Count-v2", init_v1, start_v2, count_stop, record_v1, common_finalize};
#endif
#if COUNT_EXPORTS & 0x08
EXPORT const ncclProfiler_v3_t ncclProfiler_v3 = {"Count-v3", init_v1, start_v3, count_stop, record_v1, common_finalize};
#endif
#if COUNT_EXPORTS & 0x10
EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {"Count-v4", init_v4, start_v4, count_stop, record_v4, common_finalize};
#endif
#if COUNT_EXPORTS & 0x20
EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {"Count-v5", init_v5, start_v5, count_stop, record_v5, common_finalize};
#endif
#if COUNT_EXPORTS & 0x40
EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {"Count-v6", init_v5, start_v6, count_stop, record_v6, common_finalize};

EXPORT void ncclProfilerProxyTraceDump(void* ctx, ncclDebugLogger_t logfn);
void ncclProfilerProxyTraceDump(void* ctx, ncclDebugLogger_t logfn) {
  atomic_fetch_add(&R.dump_calls, 1);
  check_role(-1, ROLE_OTHER);
  if (!valid_ctx(ctx)) {
    atomic_fetch_add(&R.bad_ctx, 1);
    return;
  }
  context* c = ctx;
  if (logfn) logfn(3, ~0UL, "ncclProfilerProxyTraceDump", __LINE__, "count dump rank %d", c->rank);
}
#endif
