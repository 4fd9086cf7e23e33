/*
 * truth.c — the oracle: how far every op gets once the faults strike, and
 * what a correct dump must therefore say about it.
 *
 * The faults hit one batch (one call of one iteration). For that batch the
 * oracle follows the data the way the GPUs and proxies pass it on, in
 * transfers (profiler steps):
 *
 *   ring allreduce, per channel, every position q of the ring (intra-node
 *   edges too, they carry the data around): q can send transfer u when
 *     - its GPU has not stopped (stall, death: u < F[q]),
 *     - for every ring step but the first of a loop, it has received the
 *       same slice of the previous ring step (u - k) from q-1,
 *     - the receiver q+1 has a buffer posted for it: u < done + NCCL_STEPS
 *       transfers, where done is what q+1's GPU consumed, and receives are
 *       posted at all (no-recv);
 *   and q+1 consumes a received transfer when it forwards it (sends u + k)
 *   or, for the last ring step of a loop, once it sent its own last slice.
 *   The greatest fixed point of these rules gives each edge's transfers
 *   sent; every send op is then limited there, every receive op to what
 *   arrives and what its GPU consumes.
 *
 *   sendrecv, per (channel, pair): the same rules without forwarding; the
 *   receiver's GPU consumes all that arrives unless its rank died (a stall
 *   stops a GPU's sends only: NCCL's p2p kernel receives beside them).
 *
 * From those limits follow each op's final counters, its legacy status
 * (rccl-proxytrace.md §3.6) and the reason it stops. Batches before the
 * faulty one complete; if it hangs, later ones never run.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int imin(int a, int b) { return a < b ? a : b; }

const char* pt_sim_why_name(pt_why why) {
  switch (why) {
    case PT_WHY_NONE: return "completes";
    case PT_WHY_GPU: return "waits for its GPU to produce data";
    case PT_WHY_CREDIT: return "waits for the receiver to post a buffer";
    case PT_WHY_DATA: return "waits for data from the sender";
    case PT_WHY_CONSUME: return "waits for its GPU to consume data";
    case PT_WHY_POST: return "receives are never posted";
    case PT_WHY_DEAD: return "its rank died";
    default: return "never ran: the job hung before this call";
  }
}

const char* pt_sim_status(int is_send, int raw, int64_t posted, int64_t received,
                          int64_t transmitted, int64_t done) {
  const int S = 8; /* NCCL_STEPS */
  int po = (int)posted, re = (int)received, tr = (int)transmitted, dn = (int)done, N = raw;
  if (po < N && po < dn + S) return "POSTING";
  if (is_send) {
    if (tr < po) return "WAITING_GPU";
    if (dn < tr) return "SENDING";
    return "DONE";
  }
  if (re < po) return "RECEIVING";
  if (re < tr) return "RECEIVING";
  if (tr < re) return "FLUSHING";
  if (dn < tr) return "WAITING_GPU";
  return "DONE";
}

const char* pt_sim_op_status(const pt_sim_op* op) {
  const int64_t* c = op->seen.cnt;
  return pt_sim_status(op->is_send, op->raw, c[ncclProxyDiagPosted], c[ncclProxyDiagReceived],
                       c[ncclProxyDiagTransmitted], c[ncclProxyDiagDone]);
}

/* Faults that strike from a step: that step must be one the op has. */
static int has_step(const pt_sim_fault* f) {
  return f->kind == PT_FAULT_STALL || f->kind == PT_FAULT_NO_RECV || f->kind == PT_FAULT_KILL;
}

static int step_beyond(const pt_sim_config* c, const pt_sim_fault* f, int ch, int fi,
                       const pt_sim_op* op, FILE* err) {
  if (!has_step(f) || f->step < op->n) return 0;
  char opt[64];
  sim_fault_option(f, opt, sizeof opt);
  fprintf(err,
          "proxytrace sim: %s: the ops of call %d (%s, iteration %d) on channel %d have "
          "transfers 0..%d (raw steps 0..%d, sliceSteps %d): give a step in 0..%d\n",
          opt, c->fault_call, pt_sim_call_name(c->calls[c->fault_call].kind), fi, ch, op->n - 1,
          op->raw - 1, op->slice, op->n - 1);
  return 1;
}

const pt_sim_op* sim_fault_op(const pt_sim_config* c, const pt_sim_job* job, const pt_sim_fault* f) {
  int fi = c->fault_iter < 0 ? c->iters - 1 : c->fault_iter;
  int fb = f >= c->faults && f < c->faults + PT_SIM_MAX_FAULTS ? job->fault_batch[f - c->faults]
                                                              : fi * c->n_calls + c->fault_call;
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch == fb && op->kind == PT_OPK_NET && op->rank == f->rank &&
        (f->channel < 0 || op->channel == f->channel))
      return op;
  }
  return NULL;
}

void sim_fault_line(const pt_sim_config* c, const pt_sim_job* job, const pt_sim_fault* f, char* buf, size_t len) {
  const pt_sim_op* op = sim_fault_op(c, job, f);
  sim_fault_describe(f, op ? op->slice : 0, op ? sim_dump_scale(c, op) : 0, buf, len);
}

int sim_dump_scale(const pt_sim_config* c, const pt_sim_op* op) {
  const sim_host* h = sim_host_of(c->host);
  return !h || h->rccl || h->raw_step_events ? op->slice : 1;
}

/* Under NVIDIA NCCL, seqNumber x 16 + function (AllReduce 4) for a
 * collective, the p2p sequence to that peer x 16 + 5 for a send or a
 * receive (both the op's func_seq): workload.c's opCount is RCCL's, the
 * collective or p2p count shifted left once. */
int64_t sim_dump_op_count(const pt_sim_config* c, const pt_sim_op* op) {
  const sim_host* h = sim_host_of(c->host);
  if (!h || h->rccl) return op->op_count;
  const int kind = c->calls[op->call].kind;
  return op->func_seq * 16 + (pt_sim_ring_coll(kind) ? pt_sim_coll_func_idx(kind) : 5);
}

typedef struct {
  int* F;        /* GPU stops producing at transfer F (per position)      */
  int* post_lim; /* receives posted at most (per receiving position)      */
  int* sent;     /* transfers sent on edge q -> q+1                       */
  int* gpu;      /* transfers q's GPU produces                            */
  int* cons;     /* transfers q consumed from edge q-1 -> q               */
} ringstate;

/* Ring step of transfer u (0 … S-1). */
static int ring_step(int u, int k, int S) { return (u / k) % S; }

/* First transfer q cannot send because q-1 sent only `a`: a send of ring
 * step j forwards what step j-1 brought in, one step (k transfers) behind;
 * step 0 of a loop sends the rank's own data, but its kernel takes it up
 * only once the loop before has ended with its last receive (runRing is
 * one sequence of sends and receives), so only the first loop's step 0
 * needs nothing — with two ranks (one step a loop), a reduce-scatter's or
 * an all-gather's every later send waits for the receive before it. */
static int limit_up(int a, int U, int k) { return imin(a + k, U); }

/* Consumed prefix of what arrived (`a`) at a position that sent `s`. */
static int consumed(int a, int s, int k, int S) {
  int lo = s - k > 0 ? s - k : 0, v1 = a, v2 = a;
  for (int v = lo; v < a; v++)
    if (ring_step(v, k, S) < S - 1) { v1 = v; break; }
  for (int v = s; v < a; v++)
    if (ring_step(v, k, S) == S - 1) { v2 = v; break; }
  return imin(a, imin(v1, v2));
}

static void ring_fixed_point(ringstate* st, int n, int U, int k, int S, int W) {
  for (int q = 0; q < n; q++) st->sent[q] = U;
  for (int iter = 0; iter < 64 * n + 64; iter++) {
    int changed = 0;
    for (int q = 0; q < n; q++) {
      int prev = (q - 1 + n) % n, next = (q + 1) % n;
      int g = imin(st->F[q], limit_up(st->sent[prev], U, k));
      int done_next = consumed(st->sent[q], st->sent[next], k, S);
      int posted_next = imin(U, imin(done_next + W, st->post_lim[next]));
      int s = imin(g, posted_next);
      st->gpu[q] = g;
      if (s < st->sent[q]) {
        st->sent[q] = s;
        changed = 1;
      }
    }
    if (!changed) break;
  }
  for (int q = 0; q < n; q++) {
    int prev = (q - 1 + n) % n;
    st->gpu[q] = imin(st->F[q], limit_up(st->sent[prev], U, k));
    st->cons[q] = consumed(st->sent[prev], st->sent[q], k, S);
  }
}

/* Whether a stall (or kill) stops the ring at position p: p sent no
 * further than its GPU went. */
static int gpu_binds(const ringstate* st, int U, int p) { return st->F[p] < U && st->sent[p] == st->F[p]; }

/* Whether the ring position sends no further than a fault there (a stall or
 * a kill: its GPU) or at the next position (a receive never posted) lets
 * it: where the stop of the channel's data is that fault's doing. */
static int binds_at(const ringstate* st, int n, int U, int p) {
  const int next = (p + 1) % n;
  return gpu_binds(st, U, p) || (st->post_lim[next] < U && st->sent[p] == st->post_lim[next]);
}

/* The network send of the batch on the ring edge from position p, or NULL
 * (an edge inside a node has none). */
static const pt_sim_op* edge_send(const pt_sim_job* job, int fb, int ch, const int* ring, int n, int p) {
  const int a = ring[p], b = ring[(p + 1) % n];
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch == fb && op->channel == ch && op->kind == PT_OPK_NET && op->is_send && op->rank == a &&
        op->peer == b)
      return op;
  }
  return NULL;
}

/* A network op of the batch on the ring edge from position p, stuck. */
static int edge_stuck(const pt_sim_job* job, int fb, int ch, const int* ring, int n, int p) {
  const int a = ring[p], b = ring[(p + 1) % n];
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch != fb || op->channel != ch || op->kind != PT_OPK_NET) continue;
    if (!(op->is_send ? op->rank == a && op->peer == b : op->rank == b && op->peer == a)) continue;
    if (op->why != PT_WHY_NONE && op->why != PT_WHY_NOT_RUN) return 1;
  }
  return 0;
}

/* Whether the network send on the ring edge from position p waits for its
 * receiver's buffer: the edge is held from downstream, and what it and
 * the edges past it show is not the doing of a fault upstream of it. */
static int edge_held(const pt_sim_job* job, int fb, int ch, const int* ring, int n, int p) {
  const pt_sim_op* op = edge_send(job, fb, ch, ring, n, p);
  return op && op->why == PT_WHY_CREDIT;
}

/* Whether the send that takes the data out of position q's node (the
 * first network edge from q on) waits for its receiver's buffer: held
 * from downstream. A stall upstream inside the node then shows only in how
 * far the node's receive consumed — which that hold explains as well, but
 * for the room of the hops inside the node, which no record shows. */
static int egress_held(const pt_sim_job* job, int fb, int ch, const int* ring, int n, int q) {
  for (int k = 0, p = q; k < n; k++, p = (p + 1) % n)
    if (edge_send(job, fb, ch, ring, n, p)) return edge_held(job, fb, ch, ring, n, p);
  return 0;
}


/* Whether the ring edge from position p has a network op (an edge inside
 * a node has none). */
static int edge_on_net(const pt_sim_job* job, int fb, int ch, const int* ring, int n, int p) {
  const int a = ring[p], b = ring[(p + 1) % n];
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch == fb && op->channel == ch && op->kind == PT_OPK_NET &&
        ((op->rank == a && op->peer == b) || (op->rank == b && op->peer == a)))
      return 1;
  }
  return 0;
}

/* The sign of a GPU at position p that stopped forwarding (a stall there,
 * or a sender whose receiver posts nothing): what arrives is no longer
 * consumed, and back-pressure climbs the edges inside the node (no proxy
 * op) to the first network edge upstream, whose receive then holds data
 * its GPU does not consume. */
static int upstream_sign(const pt_sim_job* job, int fb, int ch, const int* ring, int n, int p) {
  int e = (p - 1 + n) % n;
  for (int k = 0; k < n && !edge_on_net(job, fb, ch, ring, n, e); k++) e = (e - 1 + n) % n;
  /* its receive holds data it does not consume (one that waits for data
   * shows a stop upstream of it, not this one) */
  const int a = ring[e], b = ring[(e + 1) % n];
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch == fb && op->channel == ch && op->kind == PT_OPK_NET && !op->is_send && op->rank == b &&
        op->peer == a)
      return op->why == PT_WHY_CONSUME;
  }
  return 0;
}

/* Where each fault that struck on this ring shows first-hand: on a stuck
 * network op of the edges its stop reaches before another fault's stop
 * takes over — from its position (a stall, with the edge into it, whose
 * receive its GPU no longer consumes; a receive never posted: from the
 * sender before it) downstream to the next position where another fault
 * binds, the edge into that fault's position excluded (its GPU no longer
 * consumes: the other fault's first-hand sign), and no further than an
 * edge whose send waits for its receiver's buffer (held from downstream:
 * the same with the fault or without it). The edge into a stall is
 * its own sign only where its node's data leaves freely: with the node's
 * outgoing send held from downstream, how far the receive consumed says
 * nothing the hold does not explain. A fault whose stretch of the ring
 * holds no network op, or only edges a fault upstream stopped first, is
 * one no dump can show: the proxies see the ring stop where the other
 * fault stopped it. */
/* Whether position q consumed less from the edge into it than it would
 * without its stall: the same ring, the stall taken out (the hold and
 * every other fault kept). -1: out of memory. */
static int below_hold(const ringstate* st, int n, int U, int k, int S, int W, int q) {
  int* F = malloc(sizeof(int) * (size_t)n * 5);
  if (!F) return -1;
  ringstate alt = {F, F + n, F + 2 * n, F + 3 * n, F + 4 * n};
  memcpy(alt.F, st->F, sizeof(int) * (size_t)n);
  memcpy(alt.post_lim, st->post_lim, sizeof(int) * (size_t)n);
  alt.F[q] = U;
  ring_fixed_point(&alt, n, U, k, S, W);
  const int below = st->cons[q] < alt.cons[q];
  free(F);
  return below;
}

static void ring_shown(const pt_sim_config* c, pt_sim_job* job, int fb, int ch, const int* ring, const ringstate* st,
                       int U, int k_xfers, int S, int W) {
  const int n = job->nranks;
  for (int f = 0; f < c->n_faults; f++) {
    const pt_sim_fault* ft = &c->faults[f];
    if (!(job->fault_struck[f] >> ch & 1) || (ft->kind != PT_FAULT_STALL && ft->kind != PT_FAULT_NO_RECV)) continue;
    int q = 0;
    while (q < n && ring[q] != ft->rank) q++;
    if (q == n) continue;
    const int start = ft->kind == PT_FAULT_STALL ? q : (q - 1 + n) % n;
    /* Upstream: a stall's own receive, or — where the edge into a rank
     * that posts no receive stays inside the node — its sender's. */
    int shown = ft->kind == PT_FAULT_STALL ? edge_stuck(job, fb, ch, ring, n, (q - 1 + n) % n)
                                           : !edge_on_net(job, fb, ch, ring, n, start) &&
                                                 upstream_sign(job, fb, ch, ring, n, start);
    if (shown && egress_held(job, fb, ch, ring, n, q)) {
      shown = 0;
      job->fault_held[f] |= 1ull << ch;
      /* unless the hold alone would have let it consume more: a channel
       * of the same ring and hold, not stalled, shows how much (below) */
      if (ft->kind == PT_FAULT_STALL && ft->channel >= 0 && below_hold(st, n, U, k_xfers, S, W, q) == 1)
        job->fault_below[f] |= 1ull << ch;
    }
    for (int k = 0, p = start; k < n && !shown; k++, p = (p + 1) % n) {
      if (st->sent[p] >= U) break;           /* all its data passed: not stopped here */
      if (k && binds_at(st, n, U, p)) break; /* another fault's stretch */
      const int next = (p + 1) % n;
      if (k && ring[next] != ft->rank && gpu_binds(st, U, next)) break; /* the edge into another stall */
      if (k && edge_held(job, fb, ch, ring, n, p)) break;                /* held from downstream */
      shown = edge_stuck(job, fb, ch, ring, n, p);
    }
    if (shown) job->fault_shown[f] |= 1ull << ch;
  }
}

/* W: NCCL_STEPS raw steps, so NCCL_STEPS / sliceSteps transfers in flight. */
static void set_send(pt_sim_op* op, int gpu, int sent, int W) {
  W /= op->slice;
  op->lim_ready = gpu;
  op->lim_tx = sent;
  op->exp_trans = op->exp_done = sent;
  op->exp_posted = imin(op->n, sent + W);
  op->why = sent == op->n ? PT_WHY_NONE : sent == gpu ? PT_WHY_GPU : PT_WHY_CREDIT;
}

static void set_recv(pt_sim_op* op, int post_lim, int arrived, int cons, int W) {
  W /= op->slice;
  op->lim_post = imin(op->n, post_lim);
  op->lim_recv = arrived;
  op->lim_consume = cons;
  op->exp_recvd = op->exp_trans = arrived;
  op->exp_done = cons;
  op->exp_posted = imin(op->n, imin(cons + W, op->lim_post));
  if (cons == op->n) op->why = PT_WHY_NONE;
  else if (arrived > cons) op->why = PT_WHY_CONSUME;
  else if (op->exp_posted < imin(op->n, cons + W)) op->why = PT_WHY_POST;
  else op->why = PT_WHY_DATA;
}

static void complete(pt_sim_op* op) {
  op->lim_post = op->lim_ready = op->lim_tx = op->lim_recv = op->lim_consume = op->n;
  op->exp_posted = op->exp_trans = op->exp_recvd = op->exp_done = op->n;
  op->why = PT_WHY_NONE;
}

static void not_run(pt_sim_op* op) {
  op->lim_post = op->lim_ready = op->lim_tx = op->lim_recv = op->lim_consume = 0;
  op->exp_posted = op->exp_trans = op->exp_recvd = op->exp_done = 0;
  op->why = PT_WHY_NOT_RUN;
}

static int fault_hits(const pt_sim_fault* f, int rank, int ch) {
  return f->rank == rank && (f->channel < 0 || f->channel == ch);
}

/* A send/recv pair's transfers sent (the sendrecv rules): A's GPU
 * produces up to gpu, B posts up to post_lim and consumes up to cons_lim
 * of what arrives, NCCL_STEPS ahead of what it consumed. */
static int pair_sent(int U, int gpu, int post_lim, int cons_lim, int W) {
  int sent = U;
  for (int it = 0; it < U + 2; it++) {
    const int s = imin(gpu, imin(U, imin(imin(sent, cons_lim) + W, post_lim)));
    if (s == sent) break;
    sent = s;
  }
  return sent;
}

/* A pipeline (pipeline.c): in the faulty iteration each stage stops at its
 * first exchange that does not complete. One that a hanging fault strikes
 * (its stage's fault_p2p_call-th call that fits it) is held; a stage out of
 * the step (--skip) enters none. An exchange both stages reached follows
 * the sendrecv rules with the faults; one only a stage reached leaves its
 * send without credit and its receive without data. Every stage runs no
 * further than its stop, or than the iteration's end. */
static int pipe_truth(const pt_sim_config* c, pt_sim_job* job, int fi, FILE* err) {
  const int n = job->nranks, K = job->iter_batches, W = job->window, base_b = fi * K;
  int* enters = malloc(sizeof(int) * (size_t)n * 2);
  unsigned char* held = calloc((size_t)K, 1);
  if (!enters || !held) {
    free(enters);
    free(held);
    return -1;
  }
  int* stop = enters + n;
  for (int r = 0; r < n; r++) enters[r] = 1;
  for (int f = 0; f < c->n_faults; f++)
    if (c->faults[f].kind == PT_FAULT_SKIP && c->faults[f].rank >= 0 && c->faults[f].rank < n) enters[c->faults[f].rank] = 0;
  int hung = 0;
  for (int f = 0; f < c->n_faults; f++) {
    const pt_sim_fault* ft = &c->faults[f];
    if (ft->kind == PT_FAULT_SKIP) {
      hung = 1;
      job->fault_struck[f] = ~0ull;
      continue;
    }
    /* (a stage out of the step, dead or not, strikes nowhere in it) */
    if ((ft->kind != PT_FAULT_STALL && ft->kind != PT_FAULT_NO_RECV && ft->kind != PT_FAULT_KILL) || !enters[ft->rank])
      continue;
    const int j = pt_sim_pipe_fault_slot(K, job->pipe_lo, job->pipe_dirs, ft->rank, ft->kind, c->fault_p2p_call);
    if (j < 0) {
      char opt[64];
      sim_fault_option(ft, opt, sizeof opt);
      fprintf(err, "proxytrace sim: %s: stage %d has no call %d in a step that fits it (--fault-p2p-call counts "
                   "its calls %s)\n",
              opt, ft->rank, c->fault_p2p_call,
              ft->kind == PT_FAULT_STALL ? "with a send" : ft->kind == PT_FAULT_NO_RECV ? "with a receive" : "");
      free(enters);
      free(held);
      return -2;
    }
    job->fault_batch[f] = base_b + j;
    const pt_sim_op* any = sim_fault_op(c, job, ft);
    if (any && step_beyond(c, ft, any->channel, fi, any, err)) {
      free(enters);
      free(held);
      return -2;
    }
    held[j] |= (unsigned char)pt_sim_pipe_held(job->pipe_lo, job->pipe_dirs, j, ft->rank, ft->kind, ft->step,
                                               any ? any->n : 1, W);
    hung = 1;
    if (job->hung_batch < 0 || base_b + j < job->hung_batch) job->hung_batch = base_b + j;
  }
  pt_sim_pipe_stops(n, K, job->pipe_lo, enters, held, stop);
  int first_stop = -1;
  for (int r = 0; r < n; r++)
    if (stop[r] < K) {
      hung = 1;
      if (stop[r] >= 0 && (first_stop < 0 || stop[r] < first_stop)) first_stop = stop[r];
    }
  if (job->hung_batch < 0 && hung) job->hung_batch = base_b + (first_stop >= 0 ? first_stop : 0);
  for (int r = 0; r < n && hung; r++)
    job->last_batch[r] = stop[r] < 0 ? base_b - 1 : stop[r] < K ? base_b + stop[r] : base_b + K - 1;
  for (size_t i = 0; i < job->n_ops && hung; i++) {
    pt_sim_op* op = &job->ops[i];
    if (op->batch > job->last_batch[op->rank]) {
      not_run(op);
      continue;
    }
    if (op->kind != PT_OPK_NET) continue;
    const int j = op->batch - base_b, peer_in = j >= 0 && stop[op->peer] == j;
    if (j < 0 || j != stop[op->rank]) continue; /* a call it completed */
    const int U = op->n, A = op->is_send ? op->rank : op->peer, B = op->is_send ? op->peer : op->rank;
    if (!peer_in) { /* the other stage never reached this exchange */
      if (op->is_send) set_send(op, U, 0, W);
      else set_recv(op, U, 0, 0, W);
    } else {
      int gpu = U, post_lim = U, cons = U;
      for (int f = 0; f < c->n_faults; f++) {
        const pt_sim_fault* ft = &c->faults[f];
        if (job->fault_batch[f] != op->batch || !fault_hits(ft, ft->rank, op->channel)) continue;
        if ((ft->kind == PT_FAULT_STALL || ft->kind == PT_FAULT_KILL) && ft->rank == A) gpu = imin(gpu, ft->step);
        if (ft->kind == PT_FAULT_KILL && ft->rank == B) cons = imin(cons, ft->step);
        if (ft->kind == PT_FAULT_NO_RECV && ft->rank == B) post_lim = imin(post_lim, ft->step);
      }
      const int sent = pair_sent(U, gpu, post_lim, cons, W / op->slice);
      for (int f = 0; f < c->n_faults && op->channel < 64; f++) { /* as sendrecv's */
        const pt_sim_fault* ft = &c->faults[f];
        if (job->fault_batch[f] != op->batch || !fault_hits(ft, ft->rank, op->channel) || ft->step >= U) continue;
        const int end = ft->kind == PT_FAULT_STALL ? A : ft->kind == PT_FAULT_NO_RECV ? B : -1;
        if (end == ft->rank && sent == ft->step) job->fault_struck[f] |= job->fault_shown[f] |= 1ull << op->channel;
      }
      if (op->is_send) {
        set_send(op, gpu, sent, W);
      } else {
        set_recv(op, post_lim, sent, imin(sent, cons), W);
        if (post_lim == 0) op->absent = 1;
      }
    }
    if (job->dead_rank[op->rank]) {
      op->dead = 1;
      if (op->why != PT_WHY_NONE) op->why = PT_WHY_DEAD;
    }
  }
  free(enters);
  free(held);
  return 0;
}

int pt_sim_truth_compute(const pt_sim_config* c, pt_sim_job* job, FILE* err) {
  int n = job->nranks, W = job->window;
  int fi = c->fault_iter < 0 ? c->iters - 1 : c->fault_iter;
  int fb = fi * c->n_calls + c->fault_call;
  int hang_faults = 0;
  for (int f = 0; f < c->n_faults; f++) {
    const pt_sim_fault* ft = &c->faults[f];
    if (ft->kind == PT_FAULT_STALL || ft->kind == PT_FAULT_NO_RECV || ft->kind == PT_FAULT_KILL ||
        ft->kind == PT_FAULT_SKIP || ft->kind == PT_FAULT_MISMATCH)
      hang_faults++;
    if (ft->kind == PT_FAULT_MISMATCH && c->calls[c->fault_call].kind != PT_SIM_ALLREDUCE) {
      fprintf(err, "proxytrace sim: --mismatch needs an all-reduce as the faulty call (--fault-call)\n");
      return -2;
    }
    if (ft->kind == PT_FAULT_KILL) job->dead_rank[ft->rank] = 1;
  }
  if (fb >= job->n_batches) {
    fprintf(err, "proxytrace sim: the faults' batch %d is past the job's %d batches\n", fb, job->n_batches);
    return -1;
  }
  /* Everything completes unless the faulty batch says otherwise. */
  for (size_t i = 0; i < job->n_ops; i++) {
    pt_sim_op* op = &job->ops[i];
    if (op->kind == PT_OPK_LEAK) {
      not_run(op);
      op->why = PT_WHY_NONE;
      continue;
    }
    complete(op);
    for (int f = 0; f < c->n_faults; f++) {
      /* A slow link slows both ends of its transfers, a slow GPU only what
       * that rank's own GPU does. */
      const pt_sim_fault* ft = &c->faults[f];
      if (ft->kind == PT_FAULT_SLOW_LINK && (op->rank == ft->rank || op->peer == ft->rank)) {
        op->slow = ft->factor;
        op->slow_from_s = ft->start_s;
      }
      if (ft->kind == PT_FAULT_SLOW_GPU && op->rank == ft->rank) {
        op->slow_gpu = ft->factor;
        op->slow_gpu_from_s = ft->start_s;
      }
      /* A slow proxy thread sees every phase of its own ops late; its
       * peers wait in the network for its late posts and sends. */
      if (ft->kind == PT_FAULT_SLOW_HOST && op->rank == ft->rank) {
        op->slow_host = ft->factor;
        op->slow_host_from_s = ft->start_s;
      } else if (ft->kind == PT_FAULT_SLOW_HOST && op->peer == ft->rank) {
        op->slow = ft->factor;
        op->slow_from_s = ft->start_s;
      }
    }
  }
  if (!hang_faults) return 0;
  if (job->pipe_lo) return pipe_truth(c, job, fi, err);

  int hung = 0;
  const pt_sim_call* call = &c->calls[c->fault_call];
  int* F = malloc(sizeof(int) * (size_t)n * 6);
  if (!F) return -1;
  ringstate st = {F, F + n, F + 2 * n, F + 3 * n, F + 4 * n};
  /* Per rank, the transfers its GPU consumes at most on a send/recv: only
   * a death stops it. A stalled GPU stops producing, not consuming: the
   * p2p kernel's receives run beside its sends, and take up all that
   * arrives. (In a ring a transfer is consumed by being forwarded, so the
   * ring's rules stop a stalled GPU's receive where its sends stop.) */
  int* C = F + 5 * n;
  for (int ch = 0; ch < job->channels; ch++) {
    /* The batch's ops of this channel share the geometry. */
    pt_sim_op* any = NULL;
    for (size_t i = 0; i < job->n_ops && !any; i++)
      if (job->ops[i].batch == fb && job->ops[i].channel == ch && job->ops[i].kind == PT_OPK_NET)
        any = &job->ops[i];
    if (!any) continue;
    int U = any->n;
    for (int f = 0; f < c->n_faults; f++)
      if (fault_hits(&c->faults[f], c->faults[f].rank, ch) &&
          step_beyond(c, &c->faults[f], ch, fi, any, err)) {
        free(F);
        return -2;
      }
    for (int r = 0; r < n; r++) {
      F[r] = C[r] = U;
      st.post_lim[r] = U;
    }
    /* Per rank first (F, post_lim indexed by rank), moved to ring
     * positions below for allreduce. */
    for (int f = 0; f < c->n_faults; f++) {
      const pt_sim_fault* ft = &c->faults[f];
      if (!fault_hits(ft, ft->rank, ch)) continue;
      if (ft->kind == PT_FAULT_STALL || ft->kind == PT_FAULT_KILL)
        F[ft->rank] = imin(F[ft->rank], ft->step);
      if (ft->kind == PT_FAULT_KILL) C[ft->rank] = imin(C[ft->rank], ft->step);
      if (ft->kind == PT_FAULT_NO_RECV) st.post_lim[ft->rank] = imin(st.post_lim[ft->rank], ft->step);
      /* A rank out of the call (--skip, --mismatch) sends and posts nothing. */
      if (ft->kind == PT_FAULT_SKIP || ft->kind == PT_FAULT_MISMATCH) {
        F[ft->rank] = 0;
        st.post_lim[ft->rank] = 0;
        job->fault_struck[f] |= 1ull << ch;
      }
    }
    if (pt_sim_ring_coll(call->kind)) {
      int k = any->chunk_xfers > 0 ? any->chunk_xfers : 1, S = pt_sim_ring_steps(call->kind, n);
      int* byrank = malloc(sizeof(int) * (size_t)n * 2);
      if (!byrank) {
        free(F);
        return -1;
      }
      memcpy(byrank, F, sizeof(int) * (size_t)n);
      memcpy(byrank + n, st.post_lim, sizeof(int) * (size_t)n);
      const int* ring = &job->ring[ch * n];
      for (int q = 0; q < n; q++) {
        F[q] = byrank[ring[q]];
        st.post_lim[q] = byrank[n + ring[q]];
      }
      free(byrank);
      ring_fixed_point(&st, n, U, k, S, W / any->slice);
      for (int q = 0; q < n; q++)
        if (st.sent[q] < U) hung = 1;
      /* A fault struck where the data reached its step: a stall where its
       * position sent up to that step, a no-recv where the sender before
       * it did. Below that, something upstream stopped the edge first. */
      for (int f = 0; f < c->n_faults && ch < 64; f++) {
        const pt_sim_fault* ft = &c->faults[f];
        if ((ft->kind != PT_FAULT_STALL && ft->kind != PT_FAULT_NO_RECV) || !fault_hits(ft, ft->rank, ch) ||
            ft->step >= U)
          continue;
        int q = 0;
        while (q < n && ring[q] != ft->rank) q++;
        if (q == n) continue;
        const int prev = (q - 1 + n) % n;
        const int reached = ft->kind == PT_FAULT_STALL ? st.sent[q] : st.sent[prev];
        /* A stall whose step is also all the data from upstream allows (a
         * tie) stops nothing of its own: starved, the GPU would stop there
         * anyway, and no record tells the two apart. */
        int starved = ft->kind == PT_FAULT_STALL && limit_up(st.sent[prev], U, k) <= ft->step;
        /* ... and a receive never posted, on an edge inside a node (no op
         * of its own shows it), from the step its sender's data runs out
         * at stops nothing either: the sender had no more */
        if (ft->kind == PT_FAULT_NO_RECV && !edge_on_net(job, fb, ch, ring, n, prev))
          starved = imin(st.F[prev], limit_up(st.sent[(prev - 1 + n) % n], U, k)) <= ft->step;
        if (reached == ft->step && !starved) job->fault_struck[f] |= 1ull << ch;
      }
      for (size_t i = 0; i < job->n_ops; i++) {
        pt_sim_op* op = &job->ops[i];
        if (op->batch != fb || op->channel != ch || op->kind != PT_OPK_NET) continue;
        int q = 0;
        while (ring[q] != op->rank) q++;
        if (op->is_send) set_send(op, st.gpu[q], st.sent[q], W);
        else set_recv(op, st.post_lim[q], st.sent[(q - 1 + n) % n], st.cons[q], W);
      }
      if (ch < 64) ring_shown(c, job, fb, ch, ring, &st, U, k, S, W / any->slice);
    } else {
      for (size_t i = 0; i < job->n_ops; i++) {
        pt_sim_op* op = &job->ops[i];
        if (op->batch != fb || op->channel != ch || op->kind != PT_OPK_NET) continue;
        int A = op->is_send ? op->rank : op->peer, B = op->is_send ? op->peer : op->rank;
        const int gpu = imin(U, F[A]), post_lim = st.post_lim[B], sent = pair_sent(U, gpu, post_lim, C[B], W / op->slice);
        if (sent < U) hung = 1;
        for (int f = 0; f < c->n_faults && ch < 64; f++) { /* as for the ring, on this pair */
          const pt_sim_fault* ft = &c->faults[f];
          if (!fault_hits(ft, ft->rank, ch) || ft->step >= U) continue;
          const int end = ft->kind == PT_FAULT_STALL ? A : ft->kind == PT_FAULT_NO_RECV ? B : -1;
          if (end == ft->rank && sent == ft->step) job->fault_struck[f] |= job->fault_shown[f] |= 1ull << ch;
        }
        if (op->is_send) {
          set_send(op, gpu, sent, W);
        } else {
          set_recv(op, post_lim, sent, imin(sent, C[B]), W);
          /* A rank that never posts a receive for the whole call never
           * calls ncclRecv: there is no op at all. */
          if (post_lim == 0) op->absent = 1;
        }
      }
    }
  }
  free(F);
  /* A call inside one node (NVLink: no op of it leaves the node): a GPU
   * that stops in it holds the ring inside the node, and every rank's
   * kernel stays in the call. No proxy record shows which GPU; a host that
   * records kernel channels (API v3 and later) shows the hang through them,
   * at node level. */
  int net = 0;
  for (size_t i = 0; i < job->n_ops && !net; i++)
    net = job->ops[i].batch == fb && job->ops[i].kind == PT_OPK_NET;
  const sim_host* hh = sim_host_of(c->host);
  for (int f = 0; f < c->n_faults && !net && job->nranks > 1; f++) {
    const pt_sim_fault* ft = &c->faults[f];
    if (ft->kind != PT_FAULT_STALL) continue;
    hung = 1;
    const uint64_t bits = ft->channel < 0 || ft->channel >= 64 ? ~0ull : 1ull << ft->channel;
    job->fault_struck[f] |= bits;
    if (hh && sim_gate_kernel_ch(hh, ~0)) job->fault_shown[f] |= bits;
  }
  /* A stall held from downstream shows where its receive consumed less
   * than the hold allows and a channel of the same ring, the same hold and
   * no stall shows how much that is: the records compare the two. */
  for (int f = 0; f < c->n_faults; f++) {
    const pt_sim_fault* ft = &c->faults[f];
    for (int ch = 0; ch < job->channels && ch < 64; ch++) {
      if (!(job->fault_below[f] >> ch & 1)) continue;
      const int* ring = &job->ring[ch * n];
      int q = 0;
      while (q < n && ring[q] != ft->rank) q++;
      for (int o = 0; o < job->channels && o < 64 && q < n; o++)
        if (o != ch && !(job->fault_struck[f] >> o & 1) && !memcmp(ring, &job->ring[o * n], sizeof(int) * (size_t)n) &&
            egress_held(job, fb, o, ring, n, q)) {
          job->fault_shown[f] |= 1ull << ch;
          break;
        }
    }
  }
  /* The dead, and what never runs after a hang. A rank out of the call
   * (--skip, --mismatch) holds the others in it whatever the transport,
   * also where no op of the call leaves a node. */
  for (int r = 0; r < n; r++)
    if (job->dead_rank[r]) hung = 1;
  for (int f = 0; f < c->n_faults; f++)
    if (c->faults[f].kind == PT_FAULT_SKIP || c->faults[f].kind == PT_FAULT_MISMATCH) hung = 1;
  for (size_t i = 0; i < job->n_ops; i++) {
    pt_sim_op* op = &job->ops[i];
    /* a rank out of the call has no op of it at all */
    if (op->batch == fb && op->kind == PT_OPK_NET && sim_fault_desync(c, op->rank, fb)) {
      not_run(op);
      op->absent = 1;
    }
    if (op->batch == fb && (job->dead_rank[op->proxy_rank] || job->dead_rank[op->rank])) {
      op->dead = 1;
      if (op->why != PT_WHY_NONE) op->why = PT_WHY_DEAD;
    }
    if (op->batch > fb && hung) not_run(op);
  }
  job->hung_batch = hung ? fb : -1;
  job->hung_no_net = 1;
  for (size_t i = 0; i < job->n_ops && hung; i++)
    if (job->ops[i].batch == fb && job->ops[i].kind == PT_OPK_NET) job->hung_no_net = 0;
  return 0;
}

/* Does a dump show the hang: some network op stopped, or a rank died (its
 * dumps are missing)? A stall on a rank's last transfers that stay inside
 * its node stops the GPUs, but every network op completes: the proxies
 * record a finished call and no stall dump comes. */
static int hang_seen(const pt_sim_config* c, const pt_sim_job* job) {
  if (job->hung_batch < 0) return 0;
  /* a GPU that stopped in a call inside one node: its ranks' kernels stay
   * in the call, where the host records them (truth compute) */
  for (int f = 0; f < c->n_faults && job->hung_no_net; f++)
    if (c->faults[f].kind == PT_FAULT_STALL && job->fault_shown[f]) return 1;
  for (int r = 0; r < job->nranks; r++)
    if (job->dead_rank[r]) return 1;
  /* a rank out of the call: the progress lines show its peers in it */
  for (int f = 0; f < c->n_faults; f++)
    if (c->faults[f].kind == PT_FAULT_SKIP || c->faults[f].kind == PT_FAULT_MISMATCH) return 1;
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch == job->hung_batch && op->kind == PT_OPK_NET && op->why != PT_WHY_NONE &&
        op->why != PT_WHY_NOT_RUN)
      return 1;
  }
  return 0;
}

/* Whether a stall or no-recv that struck shows on a network op: a stuck
 * network op whose stop is its doing (ring_shown; on a pair, the pair's
 * op). One that struck only on transfers that stay inside a node (a stall
 * on the last transfers of a rank without a network op there: the ring's
 * network ops have all their data by then), or only where another fault
 * upstream had stopped the network ops first, stops the call where no
 * proxy records it — no dump can show it, whatever another fault of the
 * job shows. */
static int fault_shows(const pt_sim_job* job, int fi) { return job->fault_shown[fi] != 0; }

/* A fault that does not show, where network ops of its channels are stuck
 * all the same: another fault upstream stopped them first (ring_shown). */
static int fault_hidden(const pt_sim_job* job, int fi) {
  const uint64_t struck = job->fault_struck[fi];
  for (size_t i = 0; i < job->n_ops && struck; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch != job->hung_batch || op->kind != PT_OPK_NET || op->channel >= 64 || !(struck >> op->channel & 1))
      continue;
    if (op->why != PT_WHY_NONE && op->why != PT_WHY_NOT_RUN) return 1;
  }
  return 0;
}

/* Whether a network op of the job is rank r's, or progressed by its proxy
 * thread. */
static int rank_has_net_ops(const pt_sim_job* job, int r) {
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->kind == PT_OPK_NET && !op->absent && (op->rank == r || op->proxy_rank == r)) return 1;
  }
  return 0;
}

/* Slow faults (links, GPUs, proxy threads) on two ranks or more that slow
 * half or more of the job's network ops: the analysis compares each edge
 * with comparable ones, taking most of them to be healthy — here the slow
 * ones are as many, their times are the baseline, and no test can tell the
 * slow side from the fast (three send/recv pairs, two of them slow). */
static int slow_majority(const pt_sim_config* c, const pt_sim_job* job) {
  if (job->hung_batch >= 0) return 0;
  int n_timing = 0;
  for (int i = 0; i < c->n_faults; i++) n_timing += sim_fault_timing(c->faults[i].kind) != 0;
  if (n_timing < 2) return 0;
  size_t net = 0, slowed = 0;
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->kind != PT_OPK_NET || op->absent) continue;
    net++;
    slowed += op->slow > 1 || op->slow_gpu > 1 || op->slow_host > 1;
  }
  return net && 2 * slowed >= net;
}

/* A stall or no-recv of the hung call that no dump can show, or a slow
 * link, GPU or proxy thread of a rank without a network op (a rank inside
 * its node's part of every ring: its data never meets its proxy, and the
 * emulator carries no rank's slowness into another's op times) or among
 * as many slow ranks as healthy ones (slow_majority): the truth marks its
 * culprit "seen":false, and --truth says so. */
static int fault_unseen(const pt_sim_config* c, const pt_sim_job* job, int fi) {
  const int k = c->faults[fi].kind;
  if (job->hung_batch < 0 && sim_fault_timing(k))
    return !rank_has_net_ops(job, c->faults[fi].rank) || slow_majority(c, job);
  return job->hung_batch >= 0 && (k == PT_FAULT_STALL || k == PT_FAULT_NO_RECV) && job->fault_struck[fi] &&
         !fault_shows(job, fi);
}

#define UNSEEN_FAULT "it stops no network op: its GPU stops on transfers that stay inside its node"
#define HIDDEN_FAULT                                                                                \
  "it stops no network op first-hand: every network op its stop would reach is held at an earlier " \
  "step by another fault"

#define HELD_FAULT                                                                                 \
  "it shows only in how far its node's receive consumed, which another fault's hold on the node's " \
  "outgoing send explains as well: the records do not show the room of the hops inside a node"

#define NO_NET_FAULT                                                                                       \
  "its rank has no network op: no proxy record times its link, GPU or proxy thread (the emulator does not " \
  "carry one rank's slowness into another's op times)"

#define SLOW_MAJORITY_FAULT                                                                                  \
  "the slow faults slow half or more of the job's network ops: comparable edges are as often slow as not, so " \
  "their times are the baseline, and no test can tell the slow side from the fast"

/* Why a fault no dump can show is one. */
static const char* unseen_why(const pt_sim_config* c, const pt_sim_job* job, int fi) {
  if (job->hung_batch < 0) return rank_has_net_ops(job, c->faults[fi].rank) ? SLOW_MAJORITY_FAULT : NO_NET_FAULT;
  if (job->fault_held[fi]) return HELD_FAULT;
  return fault_hidden(job, fi) ? HIDDEN_FAULT : UNSEEN_FAULT;
}

/* A hang whose every stuck network op is a dead rank's (or none is
 * stuck): the others finish the call, and the dead rank writes nothing —
 * the hang shows only as its missing dumps. */
static int only_dead_stuck(const pt_sim_job* job) {
  if (job->hung_batch < 0) return 0;
  int dead = 0;
  for (int r = 0; r < job->nranks; r++) dead |= job->dead_rank[r];
  if (!dead) return 0;
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch == job->hung_batch && op->kind == PT_OPK_NET && op->why != PT_WHY_NONE &&
        op->why != PT_WHY_NOT_RUN && !job->dead_rank[op->rank] && !job->dead_rank[op->proxy_rank])
      return 0;
  }
  return 1;
}

/* A dead rank on the node of a stalled GPU, or -1: a send of the node that
 * waits for its GPU may wait on the dead rank's hop inside the node, which
 * no record shows; the dead rank is then named in the stall's place. */
static int dead_on_node(const pt_sim_job* job, int rank) {
  for (int r = 0; r < job->nranks; r++)
    if (job->dead_rank[r] && r != rank && r / job->rpn == rank / job->rpn) return r;
  return -1;
}

#define DEAD_BESIDE_LIMIT                                                                                  \
  "a rank of its node died: a send of the node waiting for its GPU may wait on the dead rank's hop inside " \
  "the node, and the dead rank may be named in its place"

#define ONLY_DEAD_LIMIT                                                                                      \
  "every stuck op is on a rank that died: the others finish the call, and the hang shows only as the dead " \
  "rank's missing dumps"

#define UNSEEN_LIMIT                                                                                   \
  "no network op stops: the GPUs stop on transfers that stay inside a node, so every proxy op "      \
  "completes and no dump can show this hang"

static const char* op_status(const pt_sim_op* op) {
  int s = op->slice;
  if (op->absent) return "ABSENT";
  if (op->why == PT_WHY_NOT_RUN) return "NOT_RUN";
  return pt_sim_status(op->is_send, op->raw, (int64_t)op->exp_posted * s, (int64_t)op->exp_recvd * s,
                       (int64_t)op->exp_trans * s, (int64_t)op->exp_done * s);
}

static void print_op(const pt_sim_config* c, const pt_sim_op* op, const char* tag, FILE* f) {
  int s = sim_dump_scale(c, op);
  fprintf(f,
          "truth: %s rank=%d peer=%d chan=%d %s batch=%d %s commHash=%llu opCount=%lld ns=%d "
          "po=%lld recvd=%lld trans=%lld done=%lld status=%s",
          tag, op->rank, op->peer, op->channel, op->is_send ? "S" : "R", op->batch,
          pt_sim_call_name(c->calls[op->call].kind), (unsigned long long)op->comm_hash,
          (long long)sim_dump_op_count(c, op), op->n * s, (long long)op->exp_posted * s, op->is_send ? 0LL : (long long)op->exp_recvd * s,
          (long long)op->exp_trans * s, (long long)op->exp_done * s, op_status(op));
  if (op->why != PT_WHY_NONE) fprintf(f, " why=\"%s\"", pt_sim_why_name(op->why));
  if (op->foreign) fprintf(f, " pxn-proxy=%d", op->proxy_rank);
  else if (op->proxy_rank != op->rank) fprintf(f, " pxn-thread=%d", op->proxy_rank); /* same process: recorded */
  fputc('\n', f);
}

void pt_sim_truth_print(const pt_sim_config* c, const pt_sim_job* job, FILE* f) {
  fprintf(f, "truth: job %d nodes x %d ranks, %d channels, %d calls, commHash %llu\n", job->nodes, job->rpn,
          job->channels, job->n_batches, (unsigned long long)job->comm_hash);
  for (int i = 0; i < c->n_faults; i++) {
    char d[200];
    sim_fault_line(c, job, &c->faults[i], d, sizeof d);
    fprintf(f, "truth: fault: %s\n", d);
    if (fault_unseen(c, job, i))
      fprintf(f, "truth: fault %d: %s (no dump can show it)\n", i, unseen_why(c, job, i));
  }
  size_t not_run = 0, leaked = 0;
  if (job->hung_batch >= 0) {
    int b = job->hung_batch;
    fprintf(f, "truth: the job hangs in call %d (%s, iteration %d)\n", b % job->iter_batches % c->n_calls,
            pt_sim_call_name(c->calls[b % job->iter_batches % c->n_calls].kind), b / job->iter_batches);
    for (int r = 0; r < job->nranks; r++)
      if (job->dead_rank[r]) fprintf(f, "truth: rank %d is dead: it dumps nothing\n", r);
    if (!hang_seen(c, job)) fputs("truth: " UNSEEN_LIMIT "\n", f);
    for (size_t i = 0; i < job->n_ops; i++) {
      const pt_sim_op* op = &job->ops[i];
      if (op->kind == PT_OPK_NET && op->why != PT_WHY_NONE && op->why != PT_WHY_NOT_RUN)
        print_op(c, op, "stuck", f);
    }
  } else {
    fprintf(f, "truth: the job completes\n");
  }
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->kind != PT_OPK_NET) {
      if (job->hung_batch < 0 || op->batch <= job->hung_batch) leaked++;
      continue;
    }
    if (op->why == PT_WHY_NOT_RUN) {
      not_run++;
      continue;
    }
    print_op(c, op, "op", f);
  }
  if (not_run) fprintf(f, "truth: %zu ops of later calls never ran\n", not_run);
  if (leaked) fprintf(f, "truth: %zu non-network ops were started and never stopped\n", leaked);
}

/* ---- the ground truth as JSON ---------------------------------------------- */

/* Does the fault stop an op of the hung call, and does that op show it on
 * the faulty rank itself — a network op its own proxy records? (Ops inside
 * a node have no proxy ops; PXN sends through another process's proxy
 * are recorded by nobody; a receive
 * never posted shows on the sender's side, which names the rank.) */
/* A receive never called (a no-recv's absent op) shows as such only where
 * its rank made the call otherwise: a send of the same call and channel
 * that it did make, which every rank of a send/recv call makes alike. A
 * pipeline's stages exchange in groups of their own: nothing ties a
 * stage's send to the receive its neighbour's group waits for, so the
 * records cannot tell a receive never posted from a call never reached. */
static int sends_too(const pt_sim_job* job, const pt_sim_op* recv) {
  if (job->pipe_lo) return 0;
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch == recv->batch && op->rank == recv->rank && op->is_send && op->channel == recv->channel &&
        op->kind == PT_OPK_NET)
      return 1;
  }
  return 0;
}

static void fault_effect(const pt_sim_job* job, int fi, const pt_sim_fault* f, int* hits, int* exact) {
  *hits = *exact = 0;
  if (f->kind == PT_FAULT_KILL) {
    *hits = *exact = job->dead_rank[f->rank];
    return;
  }
  /* Only where it struck (a stall on a rank with no network op there
   * still stops the ring inside its node); where a fault upstream starved
   * the rank before its step came, the stop is not its doing. */
  const uint64_t struck = job->fault_struck[fi];
  *hits = struck != 0;
  for (size_t i = 0; i < job->n_ops && struck; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->batch != job->hung_batch || op->kind != PT_OPK_NET || op->rank != f->rank) continue;
    if (op->channel >= 64 || !(struck >> op->channel & 1)) continue;
    if (f->kind == PT_FAULT_STALL && op->is_send && !op->foreign && op->why == PT_WHY_GPU) *exact = 1;
    if (f->kind == PT_FAULT_NO_RECV && !op->is_send && ((op->why == PT_WHY_POST && !op->absent) || (op->absent && sends_too(job, op))))
      *exact = 1;
  }
}



/* A rank that skips the job's first call starts no operation at all: on
 * a host whose init has no comm arguments it never learns its rank or its
 * communicator, and its dumps name neither (r-1): the records show a rank
 * without a dump, alive or dead, not which call it did not make. */
static int unnamed_rank(const pt_sim_config* c, const pt_sim_fault* f) {
  const sim_host* h = sim_host_of(c->host);
  const int fi = c->fault_iter < 0 ? c->iters - 1 : c->fault_iter;
  return h && h->comm_from_events && f->kind == PT_FAULT_SKIP && fi * c->n_calls + c->fault_call == 0;
}

#define NO_RANK_FAULT                                                                                        \
  "it started no operation, and NCCL 2.23-2.26 tell a rank its number and communicator with its first one: " \
  "its dumps name neither (r-1), and it reads as a rank without a dump"

void pt_sim_truth_json(const pt_sim_config* c, const pt_sim_job* job, FILE* f) {
  int slow = 0;
  for (int i = 0; i < c->n_faults; i++)
    slow |= sim_fault_timing(c->faults[i].kind);
  const char* verdict = job->hung_batch >= 0 ? "hang" : slow ? "slow" : "ok";
  fprintf(f,
          "{\"type\":\"truth\",\"schema\":1,\"commHash\":\"%llu\",\"nRanks\":%d,\"nodes\":%d,\"ranksPerNode\":%d,"
          "\"channels\":%d,\"verdict\":\"%s\",",
          (unsigned long long)job->comm_hash, job->nranks, job->nodes, job->rpn, job->channels, verdict);
  const pt_sim_op* hung_op = NULL; /* a network op of the hung call: its opCount */
  for (size_t i = 0; job->hung_batch >= 0 && i < job->n_ops && !hung_op; i++)
    if (job->ops[i].batch == job->hung_batch && job->ops[i].kind == PT_OPK_NET) hung_op = &job->ops[i];
  if (job->hung_batch >= 0) {
    int b = job->hung_batch;
    fprintf(f, "\"hungCall\":%d,\"hungIteration\":%d,\"hungCallKind\":\"%s\",", b % job->iter_batches % c->n_calls,
            b / job->iter_batches, pt_sim_call_name(c->calls[b % job->iter_batches % c->n_calls].kind));
  } else {
    fputs("\"hungCall\":null,\"hungIteration\":null,\"hungCallKind\":null,", f);
  }
  if (hung_op) fprintf(f, "\"hungOpCount\":%lld,", (long long)sim_dump_op_count(c, hung_op));
  else fputs("\"hungOpCount\":null,", f);
  const sim_host* h = sim_host_of(c->host);
  fprintf(f, "\"stepUnit\":\"%s\",", !h || h->rccl || h->raw_step_events ? "raw" : "transfer");
  fputs("\"faults\":[", f);
  for (int i = 0; i < c->n_faults; i++) {
    const pt_sim_fault* ft = &c->faults[i];
    const pt_sim_op* op = sim_fault_op(c, job, ft);
    fprintf(f, "%s{\"kind\":\"%s\",\"rank\":%d,\"channel\":%d,\"step\":%d,\"arg\":%d,\"dumpStep\":%d", i ? "," : "",
            sim_fault_name(ft->kind), ft->rank, ft->channel, ft->step, ft->arg,
            ft->step * (op ? sim_dump_scale(c, op) : 1));
    if (sim_fault_timing(ft->kind)) fprintf(f, ",\"factor\":%g,\"start_s\":%g", ft->factor, ft->start_s);
    fputc('}', f);
  }
  fputs("],\"deadRanks\":[", f);
  for (int r = 0, n = 0; r < job->nranks; r++)
    if (job->dead_rank[r]) fprintf(f, "%s%d", n++ ? "," : "", r);
  fputs("],\"culprits\":[", f);
  int n = 0;
  const int seen = hang_seen(c, job);
  /* Whether the records can show what the culprits did at all: a hang
   * that every network op finishes cannot, whatever the fault; a job that
   * does not hang shows its slowness in the times of the ops it runs (a
   * rank without any is "seen": false on its own). */
  const int shows = job->hung_batch < 0 || seen;
  for (int i = 0; i < c->n_faults; i++) {
    const pt_sim_fault* ft = &c->faults[i];
    const char* cause = NULL;
    const char* limit = NULL; /* a limit of the records, though the fault shows */
    int hits = 0, exact = 0, channel = ft->channel;
    if (job->hung_batch >= 0) {
      if (ft->kind == PT_FAULT_STALL) cause = "gpu_not_producing";
      else if (ft->kind == PT_FAULT_NO_RECV) cause = "no_receive_posted";
      else if (ft->kind == PT_FAULT_KILL) {
        cause = "rank_missing";
        channel = -1;
      } else if (ft->kind == PT_FAULT_SKIP || ft->kind == PT_FAULT_MISMATCH) {
        /* what each rank called is in its dump's progress lines, wherever
         * its data goes: the plugin sees every Coll event */
        cause = ft->kind == PT_FAULT_SKIP ? "not_entered" : "mismatch";
        channel = -1;
      }
      if (cause) fault_effect(job, i, ft, &hits, &exact);
      /* Exact where the dumps can tell: a skipped all-reduce (p2p calls
       * are counted per peer, not aligned), a mismatch with a majority
       * (two ranks that disagree cannot say which one is out of step). */
      if (ft->kind == PT_FAULT_SKIP || ft->kind == PT_FAULT_MISMATCH) {
        hits = job->fault_struck[i] != 0;
        exact = hits && (ft->kind == PT_FAULT_SKIP ? pt_sim_ring_coll(c->calls[c->fault_call].kind) : job->nranks >= 3);
        if (hits && unnamed_rank(c, ft)) {
          limit = NO_RANK_FAULT;
          exact = 0;
        }
      }
    } else if (ft->kind == PT_FAULT_SLOW_LINK) {
      /* Not exact: one link's ops time both of its ends alike, and the
       * records may show a slow link on one of its links only — a
       * pipelined ring's edges all wait for its slowest one, and a rank's
       * send/recv edges may hold too few steps to judge — so naming the
       * link with either end is all they may allow (the analysis names
       * the rank where two of its links show it). */
      cause = "slow_link";
      hits = 1;
      exact = 0;
      channel = -1;
    } else if (ft->kind == PT_FAULT_SLOW_GPU || ft->kind == PT_FAULT_SLOW_HOST) {
      /* A GPU wait is the rank's own, and so are all the waits its proxy
       * thread times: the step metrics name it exactly. */
      cause = ft->kind == PT_FAULT_SLOW_GPU ? "slow_gpu" : "slow_host";
      hits = exact = 1;
      channel = -1;
    }
    if (!cause || !hits) continue;
    /* "seen":false — a culprit no dump can show; the analysis that does
     * not name it is within a documented limit. */
    const int unseen = fault_unseen(c, job, i);
    fprintf(f, "%s{\"rank\":%d,\"channel\":%d,\"cause\":\"%s\",\"exact\":%s,\"fault\":%d", n++ ? "," : "",
            ft->rank, channel, cause, exact && shows && !unseen ? "true" : "false", i);
    const int beside = ft->kind == PT_FAULT_STALL && job->hung_batch >= 0 ? dead_on_node(job, ft->rank) : -1;
    if (unseen) fprintf(f, ",\"seen\":false,\"limit\":\"%s\"", unseen_why(c, job, i));
    else if (limit) fprintf(f, ",\"limit\":\"%s\"", limit);
    else if (beside >= 0) fprintf(f, ",\"namedInstead\":%d,\"limit\":\"" DEAD_BESIDE_LIMIT "\"", beside);
    fputc('}', f);
  }
  fputs("]", f);
  if (job->hung_batch >= 0) fprintf(f, ",\"hangSeen\":%s", seen ? "true" : "false");
  else fputs(",\"hangSeen\":null", f);
  if (job->hung_batch >= 0 && !seen) fputs(",\"limit\":\"" UNSEEN_LIMIT "\"", f);
  else if (only_dead_stuck(job)) fputs(",\"hangShows\":\"missing\",\"limit\":\"" ONLY_DEAD_LIMIT "\"", f);
  fputs("}\n", f);
}
