/*
 * proxy.c — one proxy progress thread per rank ("NCCL Progress N"): it takes
 * the ops the application thread posts, appends them, and progresses them
 * with the host's event sequence, until every op is done or the job hangs.
 *
 * Each op is its own proxy args with one sub, as in NCCL for ring
 * connections and for one p2p peer per channel (ProxyAppend groups only ops
 * of a shared connection with the same opCount: v2.25.1-1 src/proxy.cc:
 * 422-437), and each progress call runs net.cc's progress function for it:
 *
 *   send  post a buffer slot to the GPU (step start, SendGPUWait, POSTED)
 *         and go on to the next op; else, once the GPU's data is there
 *         (polled: RECV_TAIL, TAIL_OR_HEAD, FIFO_SZ), SendPeerWait and
 *         KERNEL_COPY_READY, and if isend takes it (KERNEL_COPY_READY
 *         timestamp, SendWait, TRANSMITTED) go on; else test the oldest
 *         send (step stop, DONE);
 *   recv  post a receive (step start — again, without a stop, when irecv
 *         returns no request — RecvWait, POSTED) and return; else a
 *         receive completed (RecvFlushWait, RECEIVED, [FLUSHED]) and
 *         return; else the flush is done (RecvGPUWait, TRANSMITTED,
 *         RECV_TAIL) and return; else poll what the GPU consumed
 *         (TAIL_OR_HEAD, FIFO_SZ) and stop every step it freed (DONE).
 *
 * So one phase moves per call (v2.28.9-1 src/transport/net.cc:1269,1329,
 * 1497,1570,1598), and posting comes first: up to NCCL_STEPS raw steps are
 * posted, with as many step handles open, before the first transfer. The
 * ProxyOp is stopped in the call that completes its last step.
 *
 * 2.23-2.26 add the ProxyOp states 0-7 (steps, cumulative transSize), send
 * step states with NULL args, start the ProxyOp at the first progress call
 * instead of at append; 2.23 sends sliceSteps step events per transfer;
 * 2.24-2.26 stop only the first step of a consumed receive batch
 * (NVIDIA/nccl#1658). The ProxyDiag updates (state 31) go out only under
 * RCCL with the ProxyDiag bit.
 *
 * The args come from a pool that the host recycles LIFO without clearing
 * (proxy.cc allocateArgs/removeOp; ncclProxyOpToArgs keeps its memset
 * commented out): an op inherits the sub's transSize and step-handle slots
 * of the op that held the element before. The emulator keeps that pool per
 * proxy thread and drives every step handle through its slots, with the
 * host's guards.
 *
 * A phase that waits draws its polls from the op's own generator (faults.c:
 * 0..jitter, --noise, slow links and GPUs); the
 * oracle's limits (truth.c) say where each phase stops for good. One round
 * calls every op once; when every unfinished op is blocked for
 * --hang-polls rounds (and then --hold seconds, run.c), the job is hung and
 * the thread leaves, as a proxy does when the communicator is aborted.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define NCCL_STEPS 8

/* The phases an op waits in: the GPU's (producing a send's data, consuming
 * a receive's) and the network's (the receiver's credit, the send's
 * completion, the receive's arrival, the flush). */
enum { PH_GPU, PH_TX, PH_NET, PH_RECV, PH_FLUSH, PH_CONS, PH_NUM };

/* One element of the host's proxy-args pool, as far as events go. */
typedef struct {
  size_t trans_size;       /* sub->transSize                               */
  void* steps[NCCL_STEPS]; /* the sub's step handle slots                  */
} pool_elem;

typedef struct {
  pt_sim_op* op;
  void* h;          /* sub->opEventHandle                                  */
  int e;            /* its pool element; -1 = none (never-progressed op)   */
  void* ctx;        /* context given with this op's events                 */
  void* parent;     /* the task handle (Coll / P2p)                        */
  int mask;         /* the task's copy of the activation mask              */
  int posted, trans, done, recvd; /* in transfers (profiler steps)         */
  int w[PH_NUM];    /* polls the phase still waits; -1 = not drawn          */
  uint64_t due[PH_NUM]; /* paced: when the phase is ready (sim_now_ns) */
  int post_tries, peer_waits;
  /* Paced, the GPU's consumption is a queue: each step handed to it is
   * consumed a draw after it arrived or after the step before it was
   * consumed, whichever is later (gpu_queue). */
  uint64_t handed[NCCL_STEPS]; /* when each step in flight reached the GPU */
  uint64_t gpu_due;            /* when the GPU consumes step `done` (0: not drawn) */
  uint64_t gpu_free;           /* when it consumed the step before        */
  int inprogress, finished;
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
  uint64_t next_due; /* --pace: the earliest phase due after this round    */
  uint64_t noise_rng; /* --noise-deschedule's draws, seeded per rank         */
  uint64_t desched_at; /* when the thread is next descheduled (0: not drawn) */
  pop* ops;
  int n, cap;
  pool_elem* pool;  /* every element this proxy allocated                  */
  int* free_elems;  /* LIFO of free elements                               */
  int n_pool, n_free, cap_pool;
} proxy;

static int imin(int a, int b) { return a < b ? a : b; }

/* 1 when the head of a phase is ready this poll. The caller resets
 * o->w[ph] to -1 once the phase is over. With --pace the draw is a time:
 * ready when it has passed. What it waits is the faults' (faults.c). */
static int countdown(proxy* px, pop* o, int ph) {
  const int pace = px->c->pace_us;
  if (o->w[ph] < 0) {
    const uint64_t now = sim_now_ns(px->run);
    const double polls = sim_phase_polls(px->c, o->op, ph == PH_GPU || ph == PH_CONS, (double)now / 1e9, &o->rng);
    o->w[ph] = (int)(polls + 0.5);
    if (pace > 0) o->due[ph] = now + (uint64_t)(polls * (double)pace * 1000.0);
  }
  if (pace > 0) {
    if (sim_now_ns(px->run) >= o->due[ph]) {
      o->w[ph] = 0; /* over: blocked() reads it so */
      return 1;
    }
    if (o->due[ph] < px->next_due) px->next_due = o->due[ph];
    return 0;
  }
  if (o->w[ph] > 0) {
    o->w[ph]--;
    return 0;
  }
  return 1;
}

static size_t xfer_size(const pt_sim_op* op, int t) {
  return (size_t)(t == op->n - 1 ? op->last_bytes : op->xfer_bytes);
}

/* Transfers in flight: NCCL_STEPS raw steps. */
static int window(const pt_sim_op* op) { return NCCL_STEPS / op->slice; }

/* 2.23 counts in raw steps, later releases in transfers. */
static int units(proxy* px, const pop* o, int transfers) {
  return px->h->raw_step_events ? transfers * o->op->slice : transfers;
}

/* Step events per transfer: 2.23 one per raw step. */
static int per_transfer(const proxy* px, const pop* o) { return px->h->raw_step_events ? o->op->slice : 1; }

/* --- the pool of proxy args --------------------------------------------- */

/* allocateArgs: the last element given back, or a new (zeroed) one. */
static int pool_take(proxy* px) {
  if (px->n_free > 0) return px->free_elems[--px->n_free];
  if (px->n_pool == px->cap_pool) {
    int cap = px->cap_pool ? px->cap_pool * 2 : 64;
    pool_elem* np = realloc(px->pool, (size_t)cap * sizeof *np);
    if (!np) return -1;
    px->pool = np;
    int* nf = realloc(px->free_elems, (size_t)cap * sizeof *nf);
    if (!nf) return -1;
    px->free_elems = nf;
    px->cap_pool = cap;
  }
  memset(&px->pool[px->n_pool], 0, sizeof px->pool[0]);
  return px->n_pool++;
}

static void** slot(proxy* px, const pop* o, int id) { return &px->pool[o->e].steps[id % NCCL_STEPS]; }

/* sub->transSize after a transfer of `size` bytes: 2.23-2.26 add it up
 * (v2.25.1-1 src/transport/net.cc:1181,1374), later releases keep the last
 * one (v2.28.9-1 :1325,1520). */
static void add_size(proxy* px, pop* o, size_t size) {
  size_t* ts = &px->pool[o->e].trans_size;
  *ts = px->h->old_op_states ? *ts + size : size;
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
  /* args->chunkSize on 2.23 (v2.23.4-1 src/misc/profiler.cc:361), times
   * sliceSteps from 2.24 (v2.25.1-1 :475). */
  e.op.chunk = px->h->raw_step_events ? op->chunk_size : op->chunk_size * op->slice;
  e.op.is_send = op->kind == PT_OPK_NET && op->is_send;
  e.op.diag = px->h->diag_bit && (o->mask & px->h->diag_bit);
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

/* A ProxyOp state of 2.23-2.26: {transSize, steps}. */
static void op_state(proxy* px, pop* o, int state, int steps) {
  if (!o->h) return;
  sim_args a = {.kind = SIM_ARGS_OP, .trans_size = px->pool[o->e].trans_size, .steps = units(px, o, steps)};
  sim_abi_record(px->p, o->h, state, &a, &px->calls);
}

/* The host writes each handle into the element's slot, over whatever was
 * there; gated off, it leaves the slot alone. */
static void step_start(proxy* px, pop* o, int t) {
  if (!sim_gate_proxy_step(px->h, o->mask, o->h)) return;
  int per = per_transfer(px, o);
  sim_event e; /* a ProxyStep descriptor reads these fields only */
  e.type = ncclProfileProxyStep;
  e.parent = o->h;
  e.rank = o->op->rank;
  for (int i = 0; i < per; i++) {
    e.step.step = t * per + i;
    *slot(px, o, e.step.step) = sim_abi_start(px->p, o->ctx, &e, &px->calls);
  }
}

/* A step state, with the sub's transSize from 2.27 and NULL args before;
 * only under a ProxyOp handle, and only to a slot that holds a handle. */
static void step_state(proxy* px, pop* o, int t, int state) {
  if (!sim_gate_step_state(px->h, o->h)) return;
  int per = per_transfer(px, o);
  sim_args a = {.kind = px->h->old_op_states ? SIM_ARGS_NULL : SIM_ARGS_STEP,
                .trans_size = px->pool[o->e].trans_size};
  for (int i = 0; i < per; i++) {
    void* h = *slot(px, o, t * per + i);
    if (h) sim_abi_record(px->p, h, state, &a, &px->calls);
  }
}

/* Stops and clears the slots of transfer t, whatever the op's handle. */
static void step_stop(proxy* px, pop* o, int t) {
  int per = per_transfer(px, o);
  for (int i = 0; i < per; i++) {
    void** s = slot(px, o, t * per + i);
    if (*s) sim_abi_stop(px->p, *s, &px->calls);
    *s = NULL;
  }
}

static void diag(proxy* px, pop* o, int kind, int64_t value, unsigned flags) {
  if (!px->diag_ok || !sim_gate_diag(px->h, o->mask, o->h)) return;
  sim_args a = {.kind = SIM_ARGS_DIAG, .diag_kind = (uint8_t)kind, .diag_flags = (uint16_t)flags,
                .diag_value = value};
  sim_abi_record(px->p, o->h, px->h->diag_state, &a, &px->calls);
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

/* The op's last step is done: its ProxyOp is stopped in the same call and
 * its args go back to the pool. */
static void finish(proxy* px, pop* o) {
  o->finished = 1;
  if (o->h) {
    sim_abi_stop(px->p, o->h, &px->calls);
    o->op->seen.stopped = 1;
    o->h = NULL;
  }
  if (o->e >= 0) px->free_elems[px->n_free++] = o->e;
  o->e = -1;
}

/* --- the two progress functions ------------------------------------------ */

static void send_progress(proxy* px, pop* o) {
  pt_sim_op* op = o->op;
  const sim_host* h = px->h;
  int slice = op->slice, n = op->n;
  if (!o->inprogress) first_progress(px, o);
  /* Post a buffer slot to the GPU: the step starts before SendPosted
   * (v2.25.1-1 src/transport/net.cc:1108,1125). */
  if (o->posted < n && o->posted < o->done + window(op)) {
    int t = o->posted++;
    step_start(px, o, t);
    if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpSendPosted, o->posted);
    step_state(px, o, t, ncclProfilerProxyStepSendGPUWait);
    diag(px, o, ncclProxyDiagPosted, (int64_t)o->posted * slice, NCCL_PROXY_DIAG_FLAG_TIMESTAMP);
    return;
  }
  if (o->trans < o->posted) {
    int t = o->trans;
    int ready = t < op->lim_ready && countdown(px, o, PH_GPU);
    int tail = ready ? imin(o->posted, op->lim_ready) : t;
    diag(px, o, ncclProxyDiagRecvTail, op->base + (int64_t)tail * slice, 0);
    diag(px, o, ncclProxyDiagTailOrHead, op->base + (int64_t)t * slice, 0);
    diag(px, o, ncclProxyDiagFifoSzOrHeadCache, ready ? (int64_t)xfer_size(op, t) : -1, 0);
    if (ready) {
      /* Before every isend try: repeated while isend returns no request.
       * 2.23-2.26 pass DIVUP(transmitted + sliceSteps, sliceSteps)
       * (v2.25.1-1 net.cc:1173; raw on 2.23, v2.23.4-1 :1127). */
      uint64_t before = px->calls;
      if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpSendRemFifoWait, t + 1);
      else step_state(px, o, t, ncclProfilerProxyStepSendPeerWait_v4);
      if (o->peer_waits++ > 0) op->seen.retries += (int64_t)(px->calls - before);
      diag(px, o, ncclProxyDiagKernelCopyReady, (int64_t)t * slice + slice, 0);
      if (t < op->lim_tx && countdown(px, o, PH_TX)) {
        diag(px, o, ncclProxyDiagKernelCopyReady, 0,
             NCCL_PROXY_DIAG_FLAG_TIMESTAMP | NCCL_PROXY_DIAG_FLAG_COUNTER_SKIP);
        /* transSize grows before the records from 2.24, after them on
         * 2.23 (v2.23.4-1 net.cc:1136-1138). */
        if (!h->size_after_send_records) add_size(px, o, xfer_size(op, t));
        o->trans++;
        o->w[PH_GPU] = o->w[PH_TX] = -1;
        o->peer_waits = 0;
        if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpSendTransmitted, o->trans);
        step_state(px, o, t, ncclProfilerProxyStepSendWait);
        if (h->size_after_send_records) add_size(px, o, xfer_size(op, t));
        /* RCCL: SendWait, then TRANSMITTED (net.cc sendProxyProgress). */
        diag(px, o, ncclProxyDiagTransmitted, (int64_t)o->trans * slice, 0);
        return;
      }
    }
  }
  if (o->done < o->trans && countdown(px, o, PH_NET)) {
    int t = o->done++;
    o->w[PH_NET] = -1;
    step_stop(px, o, t);
    if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpSendDone, o->done);
    diag(px, o, ncclProxyDiagDone, (int64_t)o->done * slice, 0);
    if (o->done == n) finish(px, o);
  }
}

static double unit_draw(uint64_t* s) { return (double)(sim_rand(s) >> 11) * (1.0 / 9007199254740992.0); }

/* Paced (a poll lasts) and without --gpu-batch: the GPU consumes its steps
 * one after another, each a draw after it arrived or after the GPU freed
 * itself from the step before, a draw SIM_GPU_SPEEDUP times shorter than
 * the network's (a GPU moves a step's data faster than the network brings
 * it; twice as fast keeps a 16x slow GPU plain in its ops' durations). An idle GPU consumes a step that arrives late at once, as a real
 * one does: the per-step consumption time does not grow when the data
 * trickles in (a slow sender), which a batch model — everything available
 * consumed a draw after the first — made it do, reading as the receiver's
 * GPU slow; nor does a healthy GPU queue the steps a fast link brings. */
#define SIM_GPU_SPEEDUP 2.0
static int gpu_queue(const proxy* px) { return px->c->pace_us > 0 && px->c->gpu_batch == 0; }

/* How many of the `avail` steps handed to the GPU it has consumed by now. */
static int gpu_consumed(proxy* px, pop* o, int avail) {
  const uint64_t now = sim_now_ns(px->run), pace_ns = (uint64_t)px->c->pace_us * 1000u;
  int k = 0;
  while (k < avail) {
    if (!o->gpu_due) {
      const uint64_t arrived = o->handed[(o->done + k) % NCCL_STEPS];
      const uint64_t start = arrived > o->gpu_free ? arrived : o->gpu_free;
      const double polls = sim_phase_polls(px->c, o->op, 1, (double)start / 1e9, &o->rng);
      o->gpu_due = start + (uint64_t)(polls * (double)pace_ns / SIM_GPU_SPEEDUP);
    }
    if (o->gpu_due > now) {
      if (o->gpu_due < px->next_due) px->next_due = o->gpu_due;
      break;
    }
    o->gpu_free = o->gpu_due;
    o->gpu_due = 0;
    k++;
  }
  return k;
}

static void recv_progress(proxy* px, pop* o) {
  pt_sim_op* op = o->op;
  const sim_host* h = px->h;
  const pt_sim_config* c = px->c;
  int slice = op->slice, n = op->n;
  if (!o->inprogress) first_progress(px, o);
  /* Post a receive. A refused irecv is no progress: the step was started
   * and is started again next time, without a stop. */
  if (o->posted < n && o->posted < o->done + window(op)) {
    int t = o->posted;
    uint64_t before = px->calls;
    step_start(px, o, t);
    if (o->post_tries++ > 0) op->seen.retries += (int64_t)(px->calls - before);
    int ok = t < op->lim_post && !(c->recv_retry > 0 && unit_draw(&o->rng) < c->recv_retry);
    if (ok) {
      o->posted++;
      o->post_tries = 0;
      if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpRecvPosted, o->posted);
      step_state(px, o, t, ncclProfilerProxyStepRecvWait);
      diag(px, o, ncclProxyDiagPosted, (int64_t)o->posted * slice, 0);
      return;
    }
  }
  /* A receive completed; with GPU-direct RDMA a flush is posted. */
  if (o->recvd < o->posted && o->recvd < op->lim_recv && countdown(px, o, PH_RECV)) {
    int t = o->recvd++;
    o->w[PH_RECV] = -1;
    add_size(px, o, xfer_size(op, t));
    if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpRecvReceived, o->recvd);
    step_state(px, o, t, ncclProfilerProxyStepRecvFlushWait);
    diag(px, o, ncclProxyDiagReceived, (int64_t)o->recvd * slice, 0);
    if (c->gdr_flush) diag(px, o, ncclProxyDiagFlushed, (int64_t)o->recvd * slice, 0);
    return;
  }
  /* The flush completed (or none was needed): the data goes to the GPU. */
  if (o->trans < o->recvd && (!c->gdr_flush || countdown(px, o, PH_FLUSH))) {
    int t = o->trans++;
    o->w[PH_FLUSH] = -1;
    o->handed[t % NCCL_STEPS] = sim_now_ns(px->run);
    if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpRecvTransmitted, o->trans);
    step_state(px, o, t, ncclProfilerProxyStepRecvGPUWait);
    diag(px, o, ncclProxyDiagTransmitted, (int64_t)o->trans * slice, 0);
    diag(px, o, ncclProxyDiagRecvTail, op->base + (int64_t)o->trans * slice, 0);
    return;
  }
  /* What the GPU consumed since the last poll, each step stopped: net.cc
   * stops every step up to the GPU's head in one call (v2.28.9-1
   * net.cc:1608-1620). A GPU that keeps up with its proxy has consumed all
   * it was handed, a slow GPU one step per period, and --gpu-batch N draws
   * 1..N. */
  if (o->done < o->trans) {
    int avail = imin(o->trans, op->lim_consume) - o->done, k = 0;
    if (gpu_queue(px)) {
      k = gpu_consumed(px, o, avail);
    } else if (avail > 0 && countdown(px, o, PH_CONS)) {
      if (c->gpu_batch > 0) k = 1 + (c->gpu_batch > 1 ? (int)(sim_rand(&o->rng) % (uint64_t)c->gpu_batch) : 0);
      else k = op->slow_gpu > 1 ? 1 : avail;
      k = imin(k, avail);
      o->w[PH_CONS] = -1;
    }
    diag(px, o, ncclProxyDiagTailOrHead, op->base + (int64_t)(o->done + k) * slice, 0);
    diag(px, o, ncclProxyDiagFifoSzOrHeadCache, op->base + (int64_t)o->done * slice, 0);
    int first = o->done;
    for (int i = 0; i < k; i++) {
      int t = o->done++;
      if (h->recv_stop_bug) {
        /* 2.24-2.26 stop the batch's first step id every time (v2.25.1-1
         * net.cc:1460,1476): the first stop clears its slot
         * (src/misc/profiler.cc:560), so the rest of the batch is never
         * stopped (NVIDIA/nccl#1658). */
        if (i > 0 && *slot(px, o, t)) op->seen.left_open++;
        step_stop(px, o, first);
      } else {
        step_stop(px, o, t);
      }
      if (h->old_op_states) op_state(px, o, ncclProfilerProxyOpRecvDone, o->done);
      diag(px, o, ncclProxyDiagDone, (int64_t)o->done * slice, 0);
    }
    if (o->done == n) finish(px, o);
  }
}

static int blocked(const pop* o) {
  const pt_sim_op* op = o->op;
  int W = window(op);
  if (o->finished) return 0;
  /* A send held by its receiver's credit still shows its GPU filling the
   * slot it waits to send (KernelCopyReady of that step) where the oracle
   * lets the GPU go that far: until that shows, the op still moves (a job
   * cut short before it left the dumps a state no hung job holds). */
  if (op->is_send)
    return !(o->posted < imin(op->n, o->done + W)) && !(o->trans < o->posted && o->trans < op->lim_tx) &&
           !(o->trans < o->posted && o->trans < op->lim_ready && o->w[PH_GPU] != 0) && !(o->done < o->trans);
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

/* Paced: after a round in which no op moved, sleep until the earliest
 * phase is due (a poll's time when none is), as a proxy thread with nothing
 * to progress yields the CPU; emulated, a round that moved lasts
 * SIM_ROUND_NS. */
static void pace_idle(proxy* px, int64_t moved) {
  for (int i = 0; i < px->n; i++) moved += px->ops[i].posted + px->ops[i].trans + px->ops[i].done + px->ops[i].recvd;
  sim_sched* s = &px->run->sched;
  if (moved) {
    /* Under emulated time a round that moved costs its thread's time too. */
    if (s->on) sim_sched_sleep_until(s, sim_sched_now(s) + SIM_ROUND_NS);
    return;
  }
  const uint64_t now = sim_sched_now(s), poll = (uint64_t)px->c->pace_us * 1000u;
  uint64_t until = px->next_due == UINT64_MAX || px->next_due > now + poll ? now + poll : px->next_due;
  if (until <= now) return;
  sim_sched_sleep_until(s, until);
}

/* The GPU's timer: Unix-epoch ns (the emulated epoch under emulated time). */
static uint64_t gpu_timer(proxy* px) {
  if (px->run->sched.on) return SIM_EPOCH_NS + sim_now_ns(px->run);
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
    int go = 1;
    while (rk->posted <= b && !rk->app_done && go) go = sim_wait(run, rk);
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
  int err = 0;
  void* ctl = ctrl_start(px);
  ctrl_record(px, ctl, ncclProfilerProxyCtrlAppend, 0);
  for (int i = 0; i < cnt; i++) {
    pt_sim_op* op = &job->ops[job->first[cell] + (size_t)i];
    if (op->absent || op->why == PT_WHY_NOT_RUN) continue;
    pop* o = &px->ops[px->n++];
    memset(o, 0, sizeof *o);
    o->op = op;
    for (int ph = 0; ph < PH_NUM; ph++) o->w[ph] = -1;
    o->rng = sim_mix(px->c->seed ^ sim_mix(((uint64_t)op->batch << 32) ^ ((uint64_t)op->rank << 16) ^
                                           ((uint64_t)op->channel << 2) ^ (uint64_t)op->is_send ^
                                           ((uint64_t)op->kind << 1)));
    if (!o->rng) o->rng = 1;
    sim_rank* origin = &run->ranks[op->rank];
    o->mask = origin->task_mask[b];
    /* Network ops take a proxy args from the pool. */
    o->e = -1;
    if (op->kind == PT_OPK_NET && (o->e = pool_take(px)) < 0) {
      px->n--;
      err = -1;
      break;
    }
    if (op->foreign) {
      o->ctx = sim_foreign_ptr(run, op->rank, 0);
      o->parent = sim_foreign_ptr(run, op->rank, 1);
    } else {
      o->ctx = origin->ctx;
      o->parent = run->cfg->calls[op->call].kind == PT_SIM_ALLTOALL
                      ? op->task
                      : origin->task_handle[(size_t)b * 2 + (op->is_send ? 0 : 1)];
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
  return err;
}

/* v7 hosts with KernelPhase on: each channel's three barrier phases, as
 * sub-events of its KernelCh event, stopped with state 31 and the kernelCh
 * args (NVIDIA/nccl 889806836 src/include/plugin/nccl_profiler.h,
 * profiler/profiler_v7.h). */
static void kernel_phases(proxy* px, int b, void* parent, int ch) {
  if (!sim_gate_kernel_phase(px->h, px->rk->task_mask[b])) return;
  for (int phase = 0; phase < 3; phase++) {
    sim_event e;
    memset(&e, 0, sizeof e);
    e.type = ncclProfileKernelPhase;
    e.parent = parent;
    e.kphase.ch = ch;
    e.kphase.phase = phase;
    e.kphase.ptimer = gpu_timer(px);
    void* h = sim_abi_start(px->p, px->rk->ctx, &e, &px->calls);
    if (!h) continue;
    sim_args a = {.kind = SIM_ARGS_KCH, .ptimer = gpu_timer(px)};
    sim_abi_record(px->p, h, ncclProfilerKernelPhaseStop, &a, &px->calls);
    sim_abi_stop(px->p, h, &px->calls);
  }
}

typedef struct {
  proxy* px;
  int b, stop;
  void** kch;
  uint64_t calls;
} kernel_pass;

static void* kernel_ch_pass(void* arg) {
  kernel_pass* k = arg;
  proxy* px = k->px;
  sim_rank* rk = px->rk;
  uint64_t* calls = &k->calls;
  sim_log_set_rank(rk->rank);
  sim_log_set_tid(SIM_TID_KERNEL + rk->rank);
  for (int ch = 0; ch < px->run->job->channels && ch < 64; ch++) {
    if (!k->stop) {
      sim_event e;
      memset(&e, 0, sizeof e);
      e.type = ncclProfileKernelCh;
      e.parent = rk->task_handle[(size_t)k->b * 2];
      e.kch.ch = ch;
      e.kch.ptimer = gpu_timer(px);
      k->kch[ch] = sim_abi_start(px->p, rk->ctx, &e, calls);
    } else if (k->kch[ch]) {
      kernel_phases(px, k->b, k->kch[ch], ch);
      if (px->h->native >= 4) {
        sim_args a = {.kind = SIM_ARGS_KCH, .ptimer = gpu_timer(px)};
        sim_abi_record(px->p, k->kch[ch], ncclProfilerKernelChStop, &a, calls);
      }
      sim_abi_stop(px->p, k->kch[ch], calls);
    }
  }
  return NULL;
}

/* The kernel-channel events of batch b. From 2.31 NCCL sends them from a
 * profiler thread of its own (v2.31 src/plugin/profiler.cc struct
 * ncclProfilerThread; NVIDIA/nccl#2355), not the proxy thread: the
 * emulator runs each pass on a thread of its own, which the proxy thread
 * waits for, so the order stays the emulator's and the thread is another. */
static void kernel_ch(proxy* px, int b, void** kch, int stop) {
  if (!sim_gate_kernel_ch(px->h, px->rk->task_mask[b])) return;
  /* a rank that skipped the call, or made another one (--skip,
   * --mismatch): its GPU takes up nothing its peers wait on */
  if (sim_fault_desync(px->run->cfg, px->rk->rank, b)) return;
  kernel_pass k = {.px = px, .b = b, .stop = stop, .kch = kch};
  pthread_t t;
  if (px->h->kernel_thread && pthread_create(&t, NULL, kernel_ch_pass, &k) == 0) {
    pthread_join(t, NULL);
  } else {
    kernel_ch_pass(&k);
  }
  px->calls += k.calls;
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
  px.noise_rng = sim_mix(run->cfg->seed ^ sim_mix(0x6e6f697365ull ^ (uint64_t)rk->rank)) | 1;
  px.diag_ok = run->host->diag_bit && sim_abi_forwards_state(&run->plugin, run->host->diag_state);
  void* kch[64];
  int hung = 0;
  for (int b = 0; b <= rk->last_batch && !hung; b++) {
    if (!sim_job_calls(run->job, rk->rank, b)) { /* a pipeline's slot of two other stages */
      pthread_mutex_lock(&rk->mu);
      rk->finished = b + 1;
      sim_broadcast(run, rk);
      pthread_mutex_unlock(&rk->mu);
      continue;
    }
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
      int64_t moved = 0; /* --pace: the counters' sum before and after the round */
      for (int i = 0; i < px.n && px.c->pace_us > 0; i++)
        moved -= px.ops[i].posted + px.ops[i].trans + px.ops[i].done + px.ops[i].recvd;
      px.next_due = UINT64_MAX;
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
      /* A hung call with no op that leaves a node (a communicator inside
       * one node): the kernel of a rank in it waits for the one out of it,
       * and never ends. */
      if (all_done && px.n == 0 && b == run->job->hung_batch && run->job->hung_no_net &&
          !sim_fault_desync(px.c, rk->rank, b))
        all_done = 0;
      if (all_done) break;
      if (px.c->pace_us > 0) pace_idle(&px, moved);
      else if (run->sched.on) sim_sched_sleep_until(&run->sched, sim_now_ns(run) + SIM_ROUND_NS);
      if (px.c->desched_rate > 0 && sim_now_ns(run) >= px.desched_at) {
        /* --noise-deschedule: the thread loses the CPU for a while, at
         * times of a Poisson process of the given rate */
        if (px.desched_at) sim_sched_sleep_until(&run->sched, sim_now_ns(run) + (uint64_t)(px.c->desched_ms * 1e6));
        px.desched_at = sim_now_ns(run) + (uint64_t)(-log(1.0 - unit_draw(&px.noise_rng)) / px.c->desched_rate * 1e9);
      }
      if (sim_sched_quit(&run->sched)) {
        hung = 1;
        break;
      }
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
    sim_broadcast(run, rk);
    pthread_mutex_unlock(&rk->mu);
  }
  if (hung) atomic_store(&run->hung, 1);
  ctrl_once(&px, ncclProfilerProxyCtrlIdle);
  free(px.ops);
  free(px.pool);
  free(px.free_elems);
  pthread_mutex_lock(&rk->mu);
  rk->stop = 1;
  rk->calls += px.calls;
  sim_broadcast(run, rk);
  pthread_mutex_unlock(&rk->mu);
  /* Wake proxies waiting on this rank's posts (PXN helpers). */
  for (int r = 0; r < run->nranks; r++) {
    sim_rank* o = &run->ranks[r];
    pthread_mutex_lock(&o->mu);
    sim_broadcast(run, o);
    pthread_mutex_unlock(&o->mu);
  }
  sim_rank_thread_ended(run, rk);
  return NULL;
}
