/*
 * proxy.c — one proxy progress thread per rank ("NCCL Progress N"): it takes
 * the ops the application thread posts, appends them, and progresses them
 * step by step with the host's event sequence, until every op is done or
 * the job hangs (spec nccl-profiler-abi.md §6.5-§6.8, rccl-proxytrace.md
 * §2.4-§2.5).
 *
 * Each op is a small state machine in the shape of NCCL's net transport:
 *
 *   send  post a buffer slot to the GPU (step start, SendGPUWait, POSTED) ·
 *         poll for the GPU's data (RECV_TAIL, TAIL_OR_HEAD, FIFO_SZ) · data
 *         ready (SendPeerWait, KERNEL_COPY_READY) · isend accepted
 *         (KERNEL_COPY_READY timestamp, TRANSMITTED, SendWait) · test done
 *         (step stop, DONE);
 *   recv  post a receive (step start; again, without a stop, when irecv
 *         returns no request; RecvWait, POSTED) · data arrived (RecvFlushWait,
 *         RECEIVED) · [GPU-direct flush (FLUSHED)] · handed to the GPU
 *         (RecvGPUWait, TRANSMITTED, RECV_TAIL) · poll for the GPU
 *         (TAIL_OR_HEAD, FIFO_SZ) · consumed (step stop, DONE).
 *
 * 2.23-2.26 add the ProxyOp states 0-7 around the same points (with NULL
 * step args), start the ProxyOp at the first progress call instead of at
 * append, and 2.23 emits sliceSteps step events per transfer. The ProxyDiag
 * updates (state 31) go out only under RCCL with the ProxyDiag bit.
 *
 * Every phase advances at most one transfer per progress call, after a
 * delay of 0..jitter polls drawn from the op's own generator; the oracle's
 * limits (truth.c) say where each phase stops for good. One round calls
 * every op once; when every unfinished op is blocked for --hang-polls
 * rounds (and then --hold seconds, run.c), the job is hung and the thread
 * leaves, as a proxy does when the communicator is aborted.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define NCCL_STEPS 8

typedef struct {
  pt_sim_op* op;
  void* h;          /* ProxyOp handle                                     */
  void* steps[NCCL_STEPS];
  void* ctx;        /* context given with this op's events                */
  void* parent;     /* the task handle (Coll / P2p)                        */
  int mask;         /* the task's copy of the activation mask              */
  int group;        /* proxy args it belongs to                            */
  int posted, trans, done, recvd;
  int w_gpu, w_tx, w_net, w_recv, w_flush, w_cons; /* -1 = not drawn     */
  int flush_pending, post_tries, peer_waits;
  int inprogress, finished, stopped;
  size_t trans_size; /* sub->transSize: the last known size              */
  uint64_t rng;
} pop;

typedef struct {
  sim_run* run;
  sim_rank* rk;
  sim_plugin* p;
  const sim_host* h;
  const pt_sim_config* c;
  uint64_t calls;
  int diag_ok;      /* state 31 reaches the plugin                         */
  pop* ops;
  int n, cap;
} proxy;

static int imin(int a, int b) { return a < b ? a : b; }

static int draw(proxy* px, pop* o) {
  int j = px->c->jitter, f = o->op->slow;
  int d = j > 0 ? (int)(sim_rand(&o->rng) % (uint64_t)(j + 1)) : 0;
  return f > 1 ? d * f + f : d;
}

/* 1 when the head of a phase is ready this poll. */
static int countdown(proxy* px, pop* o, int* w) {
  if (*w < 0) *w = draw(px, o);
  if (*w > 0) {
    (*w)--;
    return 0;
  }
  return 1;
}

static size_t xfer_size(const pt_sim_op* op, int t) {
  return (size_t)(t == op->n - 1 ? op->last_bytes : op->xfer_bytes);
}

/* 2.23 counts in raw steps, later releases in transfers. */
static int units(proxy* px, const pop* o, int transfers) {
  return px->h->raw_step_events ? transfers * o->op->slice : transfers;
}

/* --- events -------------------------------------------------------------- */

static void op_start(proxy* px, pop* o) {
  pt_sim_op* op = o->op;
  o->h = NULL;
  if (!sim_gate_proxy_op(px->h, o->mask)) return;
  sim_event e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyOp;
  e.parent = o->parent;
  e.rank = op->rank;
  e.op.pid = op->foreign ? px->run->pid + 1 + op->rank : px->run->pid;
  e.op.ch = op->channel;
  e.op.peer = op->peer;
  e.op.nsteps = px->h->raw_step_events ? op->raw : op->n;
  e.op.chunk = px->h->raw_step_events ? op->step_bytes : op->step_bytes * op->slice;
  e.op.is_send = op->kind == PT_OPK_NET && op->is_send;
  e.op.diag = px->h->rccl && (o->mask & ncclProfileProxyDiag);
  e.op.comm_hash = op->comm_hash;
  e.op.op_count = op->op_count;
  e.op.func_idx = op->func_idx;
  e.op.proto = op->proto;
  e.op.pattern = op->pattern;
  e.op.total_bytes = op->total_bytes;
  e.op.nbytes = op->nbytes;
  e.op.raw = op->raw;
  uint64_t before = px->calls;
  o->h = sim_abi_start(px->p, o->ctx, &e, &px->calls);
  if (px->calls != before) op->seen.started = 1;
}

static void op_state(proxy* px, pop* o, int state, int steps) {
  if (!o->h) return;
  sim_args a = {.kind = SIM_ARGS_OP, .trans_size = o->trans_size, .steps = units(px, o, steps)};
  sim_abi_record(px->p, o->h, state, &a, &px->calls);
}

static void step_start(proxy* px, pop* o, int t) {
  int per = px->h->raw_step_events ? o->op->slice : 1;
  for (int i = 0; i < per; i++) {
    int id = t * per + i;
    void** slot = &o->steps[id % NCCL_STEPS];
    *slot = NULL;
    if (!sim_gate_proxy_step(px->h, o->mask, o->h)) continue;
    sim_event e;
    e.type = ncclProfileProxyStep;
    e.parent = o->h;
    e.rank = o->op->rank;
    e.step.step = id;
    *slot = sim_abi_start(px->p, o->ctx, &e, &px->calls);
  }
}

/* A step state; old hosts pass NULL args, later ones {transSize}. Returns
 * the number of callbacks made. */
static int step_state(proxy* px, pop* o, int t, int state, size_t trans_size) {
  if (!sim_gate_step_state(px->h, o->h)) return 0;
  int per = px->h->raw_step_events ? o->op->slice : 1;
  uint64_t before = px->calls;
  sim_args a = {.kind = px->h->old_op_states ? SIM_ARGS_NULL : SIM_ARGS_STEP, .trans_size = trans_size};
  for (int i = 0; i < per; i++) {
    void* h = o->steps[(t * per + i) % NCCL_STEPS];
    if (h) sim_abi_record(px->p, h, state, &a, &px->calls);
  }
  return (int)(px->calls - before);
}

static void step_stop(proxy* px, pop* o, int t) {
  int per = px->h->raw_step_events ? o->op->slice : 1;
  for (int i = 0; i < per; i++) {
    void** slot = &o->steps[(t * per + i) % NCCL_STEPS];
    if (*slot) sim_abi_stop(px->p, *slot, &px->calls);
  }
}

static void diag(proxy* px, pop* o, int kind, int64_t value, unsigned flags) {
  if (!px->diag_ok || !sim_gate_diag(px->h, o->mask, o->h)) return;
  sim_args a = {.kind = SIM_ARGS_DIAG, .diag_kind = (uint8_t)kind, .diag_flags = (uint16_t)flags,
                .diag_value = value};
  sim_abi_record(px->p, o->h, ncclProfilerProxyDiagUpdate, &a, &px->calls);
  pt_sim_seen* s = &o->op->seen;
  if (!(flags & NCCL_PROXY_DIAG_FLAG_COUNTER_SKIP)) {
    s->cnt[kind] = value;
    s->last_kind = kind;
  }
  if (flags & NCCL_PROXY_DIAG_FLAG_TIMESTAMP) {
    if (kind == ncclProxyDiagPosted) s->post_ts = 1;
    if (kind == ncclProxyDiagKernelCopyReady) s->send_ts = 1;
  }
}

static void first_progress(proxy* px, pop* o) {
  o->inprogress = 1;
  if (px->h->old_op_states) {
    /* 2.23-2.26: started by the net progress function, so the start is
     * the op's entry into progress. */
    op_start(px, o);
    o->op->seen.registered = o->op->seen.started;
    return;
  }
  if (!o->h) return;
  uint64_t before = px->calls;
  sim_args a = {.kind = SIM_ARGS_ZERO};
  sim_abi_record(px->p, o->h, ncclProfilerProxyOpInProgress_v4, &a, &px->calls);
  if (px->calls != before) o->op->seen.registered = 1;
}

/* --- the two progress functions ------------------------------------------ */

static void send_progress(proxy* px, pop* o) {
  pt_sim_op* op = o->op;
  const sim_host* h = px->h;
  int slice = op->slice, n = op->n, W = NCCL_STEPS / slice;
  if (!o->inprogress) first_progress(px, o);
  if (o->posted < n && o->posted < o->done + W) {
    int t = o->posted++;
    if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpSendPosted, o->posted);
    step_start(px, o, t);
    step_state(px, o, t, ncclProfilerProxyStepSendGPUWait, o->trans_size);
    diag(px, o, ncclProxyDiagPosted, (int64_t)o->posted * slice, NCCL_PROXY_DIAG_FLAG_TIMESTAMP);
  }
  if (o->trans < o->posted) {
    int t = o->trans;
    int ready = t < op->lim_ready && countdown(px, o, &o->w_gpu);
    int tail = ready ? imin(o->posted, op->lim_ready) : t;
    diag(px, o, ncclProxyDiagRecvTail, op->base + (int64_t)tail * slice, 0);
    diag(px, o, ncclProxyDiagTailOrHead, op->base + (int64_t)t * slice, 0);
    diag(px, o, ncclProxyDiagFifoSzOrHeadCache, ready ? (int64_t)xfer_size(op, t) : -1, 0);
    if (ready) {
      int made;
      if (h->old_op_states) {
        uint64_t before = px->calls;
        op_state(px, o, ncclProfilerProxyOpSendRemFifoWait, o->trans);
        made = (int)(px->calls - before);
      } else {
        made = step_state(px, o, t, ncclProfilerProxyStepSendPeerWait_v4, o->trans_size);
      }
      if (o->peer_waits++ > 0) op->seen.retries += made;
      diag(px, o, ncclProxyDiagKernelCopyReady, (int64_t)t * slice + slice, 0);
      if (t < op->lim_tx && countdown(px, o, &o->w_tx)) {
        diag(px, o, ncclProxyDiagKernelCopyReady, 0,
             NCCL_PROXY_DIAG_FLAG_TIMESTAMP | NCCL_PROXY_DIAG_FLAG_COUNTER_SKIP);
        o->trans++;
        o->trans_size = xfer_size(op, t);
        o->w_gpu = o->w_tx = -1;
        o->peer_waits = 0;
        diag(px, o, ncclProxyDiagTransmitted, (int64_t)o->trans * slice, 0);
        if (h->old_op_states) {
          op_state(px, o, ncclProfilerProxyOpSendTransmitted, o->trans);
          step_state(px, o, t, ncclProfilerProxyStepSendWait, 0);
        } else {
          step_state(px, o, t, ncclProfilerProxyStepSendWait, o->trans_size);
        }
      }
    }
  }
  if (o->done < o->trans && countdown(px, o, &o->w_net)) {
    int t = o->done++;
    o->w_net = -1;
    step_stop(px, o, t);
    if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpSendDone, o->done);
    diag(px, o, ncclProxyDiagDone, (int64_t)o->done * slice, 0);
  }
  if (o->done == n) o->finished = 1;
}

static double unit_draw(uint64_t* s) { return (double)(sim_rand(s) >> 11) * (1.0 / 9007199254740992.0); }

static void recv_progress(proxy* px, pop* o) {
  pt_sim_op* op = o->op;
  const sim_host* h = px->h;
  const pt_sim_config* c = px->c;
  int slice = op->slice, n = op->n, W = NCCL_STEPS / slice;
  if (!o->inprogress) first_progress(px, o);
  if (o->posted < n && o->posted < o->done + W) {
    int t = o->posted;
    uint64_t before = px->calls;
    step_start(px, o, t); /* started again, without a stop, after a failed irecv */
    if (o->post_tries++ > 0) op->seen.retries += (int64_t)(px->calls - before);
    int ok = t < op->lim_post && !(c->recv_retry > 0 && unit_draw(&o->rng) < c->recv_retry);
    if (ok) {
      o->posted++;
      o->post_tries = 0;
      if (h->old_op_states) {
        op_state(px, o, ncclProfilerProxyOpRecvPosted, o->posted);
        step_state(px, o, t, ncclProfilerProxyStepRecvWait, 0);
      } else {
        step_state(px, o, t, ncclProfilerProxyStepRecvWait, o->trans_size);
      }
      diag(px, o, ncclProxyDiagPosted, (int64_t)o->posted * slice, 0);
    }
  }
  if (o->recvd < o->posted && o->recvd < op->lim_recv && countdown(px, o, &o->w_recv)) {
    int t = o->recvd++;
    o->w_recv = -1;
    o->trans_size = xfer_size(op, t);
    if (h->old_op_states) {
      op_state(px, o, ncclProfilerProxyOpRecvReceived, o->recvd);
      step_state(px, o, t, ncclProfilerProxyStepRecvFlushWait, 0);
    } else {
      step_state(px, o, t, ncclProfilerProxyStepRecvFlushWait, o->trans_size);
    }
    diag(px, o, ncclProxyDiagReceived, (int64_t)o->recvd * slice, 0);
  }
  if (o->trans < o->recvd) {
    int t = o->trans, flushed = 1;
    if (c->gdr_flush) {
      flushed = 0;
      if (!o->flush_pending) {
        o->flush_pending = 1;
        diag(px, o, ncclProxyDiagFlushed, (int64_t)o->recvd * slice, 0);
      } else if (countdown(px, o, &o->w_flush)) {
        flushed = 1;
      }
    }
    if (flushed) {
      o->trans++;
      o->flush_pending = 0;
      o->w_flush = -1;
      if (h->old_op_states) {
        op_state(px, o, ncclProfilerProxyOpRecvTransmitted, o->trans);
        step_state(px, o, t, ncclProfilerProxyStepRecvGPUWait, 0);
      } else {
        step_state(px, o, t, ncclProfilerProxyStepRecvGPUWait, o->trans_size);
      }
      diag(px, o, ncclProxyDiagTransmitted, (int64_t)o->trans * slice, 0);
      diag(px, o, ncclProxyDiagRecvTail, op->base + (int64_t)o->trans * slice, 0);
    }
  }
  if (o->done < o->trans) {
    int avail = imin(o->trans, op->lim_consume) - o->done, k = 0;
    if (avail > 0 && countdown(px, o, &o->w_cons)) {
      k = 1 + (c->gpu_batch > 1 ? (int)(sim_rand(&o->rng) % (uint64_t)c->gpu_batch) : 0);
      k = imin(k, avail);
      o->w_cons = -1;
    }
    diag(px, o, ncclProxyDiagTailOrHead, op->base + (int64_t)(o->done + k) * slice, 0);
    diag(px, o, ncclProxyDiagFifoSzOrHeadCache, op->base + (int64_t)o->done * slice, 0);
    int first = o->done;
    for (int i = 0; i < k; i++) {
      int t = o->done++;
      /* 2.24-2.26 stopped the first step of the batch every time. */
      if (h->recv_stop_bug && t != first) {
        uint64_t before = px->calls;
        step_stop(px, o, first);
        if (px->calls != before) op->seen.misdirected++;
      } else {
        step_stop(px, o, t);
      }
      if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpRecvDone, o->done);
      diag(px, o, ncclProxyDiagDone, (int64_t)o->done * slice, 0);
    }
  }
  if (o->done == n) o->finished = 1;
}

static int blocked(const pop* o) {
  const pt_sim_op* op = o->op;
  int W = NCCL_STEPS / op->slice;
  if (o->finished) return 0;
  if (op->is_send)
    return !(o->posted < imin(op->n, o->done + W)) && !(o->trans < o->posted && o->trans < op->lim_tx) &&
           !(o->done < o->trans);
  return !(o->posted < imin(op->n, imin(o->done + W, op->lim_post))) &&
         !(o->recvd < o->posted && o->recvd < op->lim_recv) && !(o->trans < o->recvd) &&
         !(o->done < o->trans && o->done < op->lim_consume);
}

/* --- ProxyCtrl ------------------------------------------------------------ */

static int ctrl_on(proxy* px) {
  return atomic_load_explicit(&px->p->mask, memory_order_relaxed) & ncclProfileProxyCtrl;
}

static void* ctrl_start(proxy* px) {
  if (!ctrl_on(px)) return NULL;
  sim_event e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyCtrl;
  return sim_abi_start(px->p, px->rk->ctx, &e, &px->calls);
}

static void ctrl_record(proxy* px, void* h, int state, int appended) {
  if (!h || !ctrl_on(px)) return;
  sim_args a = {.kind = SIM_ARGS_CTRL, .appended = appended};
  sim_abi_record(px->p, h, state, &a, &px->calls);
}

static void ctrl_once(proxy* px, int state) {
  void* h = ctrl_start(px);
  ctrl_record(px, h, state, 0);
  if (h) sim_abi_stop(px->p, h, &px->calls);
}

/* --- the thread ----------------------------------------------------------- */

static uint64_t gpu_timer(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits until every rank whose ops this proxy runs in batch b posted it
 * (its own application thread, and PXN origins). 0 when one never will. */
static int wait_posted(sim_run* run, sim_rank* self, int b) {
  pt_sim_job* job = run->job;
  size_t cell = (size_t)b * (size_t)run->nranks + (size_t)self->rank;
  for (int i = -1; i < job->count[cell]; i++) {
    sim_rank* rk = i < 0 ? self : &run->ranks[job->ops[job->first[cell] + (size_t)i].rank];
    pthread_mutex_lock(&rk->mu);
    while (rk->posted <= b && !rk->app_done) pthread_cond_wait(&rk->cv, &rk->mu);
    int ok = rk->posted > b;
    pthread_mutex_unlock(&rk->mu);
    if (!ok) return 0;
  }
  return 1;
}

static int append(proxy* px, int b) {
  sim_run* run = px->run;
  pt_sim_job* job = run->job;
  size_t cell = (size_t)b * (size_t)run->nranks + (size_t)px->rk->rank;
  int cnt = job->count[cell];
  if (cnt > px->cap) {
    pop* nv = realloc(px->ops, (size_t)cnt * sizeof *nv);
    if (!nv) return -1;
    px->ops = nv;
    px->cap = cnt;
  }
  px->n = 0;
  void* ctl = ctrl_start(px);
  ctrl_record(px, ctl, ncclProfilerProxyCtrlAppend, 0);
  for (int i = 0; i < cnt; i++) {
    pt_sim_op* op = &job->ops[job->first[cell] + (size_t)i];
    if (op->absent || op->why == PT_WHY_NOT_RUN) continue;
    pop* o = &px->ops[px->n++];
    memset(o, 0, sizeof *o);
    o->op = op;
    o->w_gpu = o->w_tx = o->w_net = o->w_recv = o->w_flush = o->w_cons = -1;
    o->rng = sim_mix(px->c->seed ^ sim_mix(((uint64_t)op->batch << 32) ^ ((uint64_t)op->rank << 16) ^
                                           ((uint64_t)op->channel << 2) ^ (uint64_t)op->is_send ^
                                           ((uint64_t)op->kind << 1)));
    if (!o->rng) o->rng = 1;
    sim_rank* origin = &run->ranks[op->rank];
    o->mask = origin->task_mask[b];
    o->group = (op->kind == PT_OPK_LEAK ? 4 : 0) + (op->foreign ? 2 : 0) + (op->is_send ? 0 : 1);
    if (op->foreign) {
      o->ctx = sim_foreign_ptr(run, op->rank, 0);
      o->parent = sim_foreign_ptr(run, op->rank, 1);
    } else {
      o->ctx = origin->ctx;
      o->parent = origin->task_handle[(size_t)b * 2 + (op->is_send ? 0 : 1)];
    }
    /* 2.27+ start the ProxyOp while appending; older hosts in progress,
     * and only for the network transport. */
    if (!px->h->old_op_states) {
      uint64_t before = px->calls;
      op_start(px, o);
      op->seen.callbacks += (int64_t)(px->calls - before);
    }
    if (op->kind == PT_OPK_LEAK) o->finished = 1; /* never progressed, never stopped */
  }
  ctrl_record(px, ctl, ncclProfilerProxyCtrlAppendEnd, px->n);
  if (ctl) sim_abi_stop(px->p, ctl, &px->calls);
  return 0;
}

/* Stops every op of a proxy-args group once all of the group is done. */
static void stop_groups(proxy* px) {
  for (int g = 0; g < 4; g++) {
    int any = 0, all = 1;
    for (int i = 0; i < px->n; i++) {
      pop* o = &px->ops[i];
      if (o->group != g) continue;
      any = 1;
      if (!o->finished) all = 0;
    }
    if (!any || !all) continue;
    for (int i = 0; i < px->n; i++) {
      pop* o = &px->ops[i];
      if (o->group != g || o->stopped) continue;
      o->stopped = 1;
      if (o->h) {
        sim_abi_stop(px->p, o->h, &px->calls);
        o->op->seen.stopped = 1;
        o->op->seen.callbacks++;
      }
    }
  }
}

static void kernel_ch(proxy* px, int b, void** kch, int stop) {
  sim_rank* rk = px->rk;
  if (!sim_gate_kernel_ch(px->h, rk->task_mask[b])) return;
  for (int ch = 0; ch < px->run->job->channels && ch < 64; ch++) {
    if (!stop) {
      sim_event e;
      memset(&e, 0, sizeof e);
      e.type = ncclProfileKernelCh;
      e.parent = rk->task_handle[(size_t)b * 2];
      e.kch.ch = ch;
      e.kch.ptimer = gpu_timer();
      kch[ch] = sim_abi_start(px->p, rk->ctx, &e, &px->calls);
    } else if (kch[ch]) {
      if (px->h->native >= 4) {
        sim_args a = {.kind = SIM_ARGS_KCH, .ptimer = gpu_timer()};
        sim_abi_record(px->p, kch[ch], ncclProfilerKernelChStop, &a, &px->calls);
      }
      sim_abi_stop(px->p, kch[ch], &px->calls);
    }
  }
}

void* sim_proxy_main(void* arg) {
  sim_rank* rk = arg;
  sim_run* run = rk->run;
  char name[32]; /* thread names hold 15 characters */
  snprintf(name, sizeof name, "NCCL Progress%2d", rk->rank % run->job->rpn);
  name[15] = 0;
  pthread_setname_np(pthread_self(), name);
  sim_log_set_rank(rk->rank);
  proxy px = {.run = run, .rk = rk, .p = &run->plugin, .h = run->host, .c = run->cfg};
  px.diag_ok = run->host->rccl && sim_abi_forwards_state(&run->plugin, ncclProfilerProxyDiagUpdate);
  void* kch[64];
  int hung = 0;
  for (int b = 0; b <= rk->last_batch && !hung; b++) {
    /* Nothing to do: the loop goes idle and sleeps until ops are posted. */
    ctrl_once(&px, ncclProfilerProxyCtrlIdle);
    void* sl = ctrl_start(&px);
    ctrl_record(&px, sl, ncclProfilerProxyCtrlSleep, 0);
    int got = wait_posted(run, rk, b);
    ctrl_record(&px, sl, ncclProfilerProxyCtrlWakeup, 0);
    if (sl) sim_abi_stop(px.p, sl, &px.calls);
    if (!got || atomic_load(&run->plugin.off)) break;
    if (append(&px, b) != 0) break;
    ctrl_once(&px, ncclProfilerProxyCtrlActive);
    kernel_ch(&px, b, kch, 0);
    int stuck = 0;
    uint64_t rounds = 0;
    for (;;) {
      int all_done = 1, all_blocked = 1;
      for (int i = 0; i < px.n; i++) {
        pop* o = &px.ops[i];
        if (o->finished) continue;
        uint64_t before = px.calls;
        if (o->op->is_send) send_progress(&px, o);
        else recv_progress(&px, o);
        o->op->seen.callbacks += (int64_t)(px.calls - before);
        if (!o->finished) all_done = 0;
        if (!o->finished && !blocked(o)) all_blocked = 0;
      }
      stop_groups(&px);
      for (int i = 0; i < px.n; i++)
        if (!px.ops[i].finished || (px.ops[i].op->kind == PT_OPK_NET && !px.ops[i].stopped)) all_done = 0;
      if (all_done) break;
      if (all_blocked && (rk->dead || sim_hang_abort(run, ++stuck))) {
        hung = 1;
        break;
      }
      if (++rounds > 100000000ull) { /* a schedule that cannot finish: a bug */
        sim_host_log(PT_SIM_LOG_WARN, "emulated proxy: rank %d made no progress in batch %d", rk->rank, b);
        hung = 1;
        break;
      }
    }
    if (!hung) kernel_ch(&px, b, kch, 1);
    pthread_mutex_lock(&rk->mu);
    rk->finished = b + 1;
    pthread_cond_broadcast(&rk->cv);
    pthread_mutex_unlock(&rk->mu);
  }
  if (hung) atomic_store(&run->hung, 1);
  ctrl_once(&px, ncclProfilerProxyCtrlIdle);
  free(px.ops);
  pthread_mutex_lock(&rk->mu);
  rk->stop = 1;
  rk->calls += px.calls;
  pthread_cond_broadcast(&rk->cv);
  pthread_mutex_unlock(&rk->mu);
  /* Wake proxies waiting on this rank's posts (PXN helpers). */
  for (int r = 0; r < run->nranks; r++) {
    sim_rank* o = &run->ranks[r];
    pthread_mutex_lock(&o->mu);
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
  }
  return NULL;
}
