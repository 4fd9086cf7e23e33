/*
 * app.c — one application thread per rank: the NCCL API calls of the job
 * and the events the host sends from that thread (spec
 * nccl-profiler-abi.md §6.3-§6.4, §6.13).
 *
 * A bare ncclAllReduce is its own group (depth 1); send/recv is
 * ncclGroupStart, ncclSend, ncclRecv, ncclGroupEnd (depth 2 at the first
 * call); an all-to-all the same with a ncclSend and a ncclRecv for each
 * other rank in turn, as PyTorch's all_to_all calls them, each its own P2p
 * task, whose handle the proxy ops of that peer carry. Per call, with the
 * mask sampled at the API call:
 *
 *   GroupApi start · 23 · CollApi|P2pApi start/stop … · 24 · KernelLaunch
 *   start/stop · Group start · Coll|P2p start … · (upload the proxy ops) ·
 *   Coll|P2p stop … · Group stop · GroupApi stop
 *
 * API events exist from 2.28; before, only Group/Coll/P2p, whose parent is
 * the Group handle. The proxy ops get the task's handle and mask — on
 * 2.23-2.25 the mask only when the Group handle is non-NULL; the
 * thread then posts the batch to its proxy thread and may run one batch
 * ahead of it.
 */
#include <string.h>

#include "internal.h"

typedef struct {
  sim_run* run;
  sim_rank* rk;
  sim_plugin* p;
  const sim_host* h;
  uint64_t calls;
} app;

static void* start(app* a, sim_event* e) { return sim_abi_start(a->p, a->rk->ctx, e, &a->calls); }
static void stop(app* a, void* h) {
  if (h) sim_abi_stop(a->p, h, &a->calls);
}
static void record_null(app* a, void* h, int state) {
  if (!h) return;
  sim_args args = {.kind = SIM_ARGS_NULL};
  sim_abi_record(a->p, h, state, &args, &a->calls);
}

/* The mask the tasks of batch b sample: the host's, or from a --ras-mask
 * batch on, what RAS set on every rank (2.31+: `ncclras CONTROL
 * PROFILER_MASK`, NVIDIA/nccl docs/userguide/source/troubleshooting/ras.rst).
 * Per batch, not per moment, so every rank sees the change at the same
 * call and the run stays deterministic. */
static int ras_mask(app* a, int b) {
  const pt_sim_config* c = a->run->cfg;
  int set = -1, at = -1;
  for (int i = 0; a->h->ras && i < c->n_ras; i++)
    if (c->ras[i].batch <= b && c->ras[i].batch >= at) {
      at = c->ras[i].batch;
      set = c->ras[i].mask;
    }
  if (set < 0) return atomic_load_explicit(&a->p->mask, memory_order_relaxed);
  if (atomic_exchange_explicit(&a->p->ras_mask, set, memory_order_relaxed) != set)
    atomic_store_explicit(&a->p->mask, set, memory_order_relaxed);
  return set;
}

static void batch(app* a, int b) {
  sim_run* run = a->run;
  sim_rank* rk = a->rk;
  const pt_sim_config* c = run->cfg;
  const sim_host* h = a->h;
  const pt_sim_call* call = &c->calls[b % c->n_calls];
  int ar = pt_sim_ring_coll(call->kind), all = call->kind == PT_SIM_ALLTOALL;
  /* A pipeline's slot is a call of its two stages only. */
  if (!sim_job_calls(run->job, rk->rank, b)) {
    pthread_mutex_lock(&rk->mu);
    rk->posted = b + 1;
    sim_broadcast(run, rk);
    pthread_mutex_unlock(&rk->mu);
    return;
  }
  int m = ras_mask(a, b);
  int n = run->nranks, rpn = run->job->rpn;
  int dirs = rk->has_dir[b];
  /* The peers of its sends and receives: sendrecv's one each (where the
   * call has one), an all-to-all's every other rank. */
  int sp[PT_SIM_ALLTOALL_MAX_RANKS], rp[PT_SIM_ALLTOALL_MAX_RANKS], ns = 0, nr = 0;
  if (all) {
    for (int q = 0; q < n && q < PT_SIM_ALLTOALL_MAX_RANKS; q++)
      if (q != rk->rank) sp[ns++] = rp[nr++] = q;
  } else if (run->job->pipe_lo) { /* the other stage of the slot, each way it moves data */
    const int lo = run->job->pipe_lo[b], peer = rk->rank == lo ? lo + 1 : lo;
    if (dirs & 1) sp[ns++] = peer;
    if (dirs & 2) rp[nr++] = peer;
  } else if (!ar) {
    if ((dirs & 1) || run->job->nodes < 2) sp[ns++] = (rk->rank + rpn) % n;
    if ((dirs & 2) || run->job->nodes < 2) rp[nr++] = (rk->rank - rpn + n) % n;
  }
  const int np = ns > nr ? ns : nr;
  size_t count = (all ? call->bytes / (size_t)n : call->bytes) / 4;
  /* A desync (--skip, --mismatch): this rank never makes the call, or
   * makes another collective (faults.c). */
  const pt_sim_fault* desync = sim_fault_desync(c, rk->rank, b);
  if (desync && desync->kind == PT_FAULT_SKIP) {
    pthread_mutex_lock(&rk->mu);
    rk->posted = b + 1; /* nothing: its proxy has no op of the call */
    sim_broadcast(run, rk);
    pthread_mutex_unlock(&rk->mu);
    return;
  }
  /* ncclReduceScatter's count is what each rank receives, ncclAllGather's
   * what each sends: SIZE / ranks */
  const char* coll_func = pt_sim_coll_func(call->kind);
  size_t coll_count = call->kind == PT_SIM_ALLREDUCE ? count : count / (size_t)n;
  if (desync) sim_mismatch_call(desync->arg, count, n, &coll_func, &coll_count);
  void* stream = sim_foreign_ptr(run, rk->rank, 2);
  /* The application tags each call with its phase (v7 hosts carry it:
   * ncclCollConfig_t.userProfilerTag): 0x100 x (the call's index + 1). */
  const uint64_t tag = 0x100u * (uint64_t)(b % c->n_calls + 1);
  sim_event e;
  void *ga = NULL, *ca = NULL, *g = NULL, *coll = NULL;
  void *pas[PT_SIM_ALLTOALL_MAX_RANKS], *par[PT_SIM_ALLTOALL_MAX_RANKS];
  void *ps[PT_SIM_ALLTOALL_MAX_RANKS], *pr[PT_SIM_ALLTOALL_MAX_RANKS];
  for (int i = 0; i < np; i++) pas[i] = par[i] = ps[i] = pr[i] = NULL;

  if (h->api_events) {
    if (sim_gate_group_api(h, m)) {
      memset(&e, 0, sizeof e);
      e.type = ncclProfileGroupApi;
      e.group_api.depth = ar ? 1 : 2;
      ga = start(a, &e);
      record_null(a, ga, ncclProfilerGroupStartApiStop);
    }
    if (ar && sim_gate_coll_api(h, m)) {
      memset(&e, 0, sizeof e);
      e.type = ncclProfileCollApi;
      e.parent = ga;
      e.api.func = coll_func;
      e.api.count = coll_count;
      e.api.dtype = "ncclFloat32";
      e.api.stream = stream;
      e.api.user_tag = tag;
      ca = start(a, &e);
      stop(a, ca);
    }
    if (!ar && sim_gate_p2p_api(h, m)) {
      memset(&e, 0, sizeof e);
      e.type = ncclProfileP2pApi;
      e.parent = ga;
      e.api.count = count;
      e.api.dtype = "ncclFloat32";
      e.api.stream = stream;
      e.api.user_tag = tag;
      for (int i = 0; i < np; i++) {
        if (i < ns) {
          e.api.func = "Send";
          pas[i] = start(a, &e);
          stop(a, pas[i]);
        }
        if (i < nr) {
          e.api.func = "Recv";
          par[i] = start(a, &e);
          stop(a, par[i]);
        }
      }
    }
    record_null(a, ga, ncclProfilerGroupEndApiStart);
    if (sim_gate_kernel_launch(h, m)) {
      memset(&e, 0, sizeof e);
      e.type = ncclProfileKernelLaunch;
      e.parent = ga;
      e.launch.stream = stream;
      stop(a, start(a, &e));
    }
  }
  /* hostStreamPlanTask */
  if (sim_gate_group(h, m)) {
    memset(&e, 0, sizeof e);
    e.type = ncclProfileGroup;
    g = start(a, &e);
  }
  /* NCCL numbers every collective, profiled or not (the mask may have
   * been 0 for some: --ras-mask). */
  /* (per function: a mismatched call counts in its own function's) */
  const int fi = pt_sim_func_index(coll_func);
  const uint64_t seq = ar && fi >= 0 ? rk->coll_seq[fi]++ : 0;
  if (ar && sim_gate_coll(h, m, g)) {
    memset(&e, 0, sizeof e);
    e.type = ncclProfileColl;
    e.parent = h->api_events ? ca : g;
    e.rank = rk->rank;
    e.coll.name = c->comm_name;
    e.coll.comm_hash = run->job->comm_hash;
    e.coll.seq = seq;
    e.coll.func = coll_func;
    e.coll.sbuf = sim_foreign_ptr(run, rk->rank, 3);
    e.coll.rbuf = sim_foreign_ptr(run, rk->rank, 4);
    e.coll.count = coll_count;
    e.coll.root = 0;
    e.coll.dtype = "ncclFloat32";
    e.coll.traffic = call->bytes;
    e.coll.nch = (uint8_t)run->job->channels;
    e.coll.nwarps = 16;
    e.coll.algo = "RING";
    e.coll.proto = pt_sim_proto_name(c->proto);
    e.coll.group = g;
    e.coll.user_tag = tag;
    coll = start(a, &e);
  }
  if (!ar && sim_gate_p2p(h, m, g)) {
    memset(&e, 0, sizeof e);
    e.type = ncclProfileP2p;
    e.rank = rk->rank;
    e.p2p.name = c->comm_name;
    e.p2p.comm_hash = run->job->comm_hash;
    e.p2p.buff = sim_foreign_ptr(run, rk->rank, 3);
    e.p2p.dtype = "ncclFloat32";
    e.p2p.count = count;
    e.p2p.nch = (uint8_t)run->job->channels;
    e.p2p.group = g;
    e.p2p.user_tag = tag;
    for (int i = 0; i < np; i++) {
      if (i < ns) {
        e.parent = h->api_events ? pas[i] : g;
        e.p2p.func = "Send";
        e.p2p.peer = sp[i];
        ps[i] = start(a, &e);
      }
      if (i < nr) {
        e.parent = h->api_events ? par[i] : g;
        e.p2p.func = "Recv";
        e.p2p.peer = rp[i];
        pr[i] = start(a, &e);
      }
    }
  }
  /* Upload the proxy ops: each carries the task's handle and mask (on
   * 2.23-2.25 a mask only under a Group handle). */
  pthread_mutex_lock(&rk->mu);
  rk->task_handle[(size_t)b * 2] = ar ? coll : ps[0];
  rk->task_handle[(size_t)b * 2 + 1] = ar ? coll : pr[0];
  rk->task_mask[b] = sim_task_mask(h, m, g);
  if (all) { /* each op the task of its peer (on its node's proxies: PXN) */
    const pt_sim_job* job = run->job;
    for (int q = rk->rank / rpn * rpn; q < (rk->rank / rpn + 1) * rpn; q++) {
      const size_t cell = (size_t)b * (size_t)n + (size_t)q;
      for (size_t i = 0; i < (size_t)job->count[cell]; i++) {
        pt_sim_op* op = &job->ops[job->first[cell] + i];
        if (op->rank != rk->rank || op->peer == rk->rank) continue;
        const int at = op->peer < rk->rank ? op->peer : op->peer - 1;
        op->task = op->is_send ? ps[at] : pr[at];
      }
    }
  }
  pthread_mutex_unlock(&rk->mu);
  stop(a, coll);
  for (int i = 0; i < np; i++) {
    stop(a, ps[i]);
    stop(a, pr[i]);
  }
  stop(a, g);
  stop(a, ga);
  pthread_mutex_lock(&rk->mu);
  rk->posted = b + 1;
  sim_broadcast(run, rk);
  pthread_mutex_unlock(&rk->mu);
}

void* sim_app_main(void* arg) {
  sim_rank* rk = arg;
  sim_run* run = rk->run;
  char name[32]; /* thread names hold 15 characters */
  snprintf(name, sizeof name, "sim-app %d", rk->rank);
  name[15] = 0;
  pthread_setname_np(pthread_self(), name);
  sim_log_set_rank(rk->rank);
  app a = {.run = run, .rk = rk, .p = &run->plugin, .h = run->host};
  for (int b = 0; b <= rk->last_batch; b++) {
    /* At most one call ahead of the proxy thread. */
    pthread_mutex_lock(&rk->mu);
    int go = 1;
    while (rk->finished < b - 1 && !rk->stop && go) go = sim_wait(run, rk);
    go = go && !rk->stop;
    pthread_mutex_unlock(&rk->mu);
    if (!go || atomic_load(&run->plugin.off)) break;
    if (run->cfg->iter_every_ns) /* a layout's step: its calls in other communicators come between */
      sim_sched_sleep_until(&run->sched, run->cfg->iter_at_ns +
                                             (uint64_t)(b / sim_iter_batches(run->cfg)) * run->cfg->iter_every_ns);
    batch(&a, b);
  }
  pthread_mutex_lock(&rk->mu);
  rk->app_done = 1;
  rk->app_calls += a.calls;
  sim_broadcast(run, rk);
  pthread_mutex_unlock(&rk->mu);
  sim_rank_thread_ended(run, rk);
  return NULL;
}
