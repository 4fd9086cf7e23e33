/*
 * explain.c — why each stuck op waits, and where the waiting starts.
 *
 * An op's wait is read from both sides' counters (posted, transmitted,
 * received, done, and the data-ready count where the host gives it):
 *
 *   send, all transmitted, not done     the network (completion)
 *   send, receiver posted <= transmitted   the receiver to post a buffer
 *   send, data ready, buffer posted      the network (not sent)
 *   send, otherwise                      its GPU to produce data
 *   recv, consumed < received            its GPU to consume the data
 *   recv, received < posted, the sender transmitted more   the network
 *   recv, received < posted              the sender's data
 *   recv, posted = received = consumed   its own proxy to post receives
 *   either, no matching op               the peer: no dump, behind, no op
 *
 * Each wait points at another stuck op or ends the chain (an origin):
 *
 *   waits for the receiver's buffer  -> the receive on the peer
 *   waits for the sender's data      -> the send on the peer
 *   waits for its GPU's data         -> a receive starved of data on the
 *     same node, channel and operation (in a ring the GPU forwards what the
 *     node receives; hops inside a node have no proxy ops, so the node is
 *     the unit) — or, if none, its GPU is where the data stops
 *   waits for its GPU to consume     -> a stuck send on the same node,
 *     channel and operation (the GPU consumes by forwarding) — or its GPU
 *
 * Following the pointers from every stuck op gives the origins; a cycle
 * with no origin gets one (the op in it that moved least). Origins with
 * the same cause on the same rank and channel make one culprit; culprits
 * are ranked by how many stuck ops wait on them.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/judge.h"

static int64_t C(const an_op* op, int k) { return op->cnt[k]; }

static int sender(const an_op* op) { return op->is_send ? op->rank : op->peer; }
static int receiver(const an_op* op) { return op->is_send ? op->peer : op->rank; }

/* The sends and receives of a communicator whose records give their
 * per-peer sequence, by (rank, peer, direction): built when first asked. */
typedef struct {
  an_map m;
  int built;
  uint8_t* stuck; /* per rank: it has stuck ops of its own in the communicator */
} p2p_index;

static uint64_t p2p_key(int rank, int peer, int is_send) {
  return an_mix(an_mix(an_mix(0x9259, (uint64_t)(int64_t)rank), (uint64_t)(int64_t)peer), (uint64_t)is_send);
}

/* The latest per-peer sequence of rank's sends to (is_send) or receives
 * from `peer` that its records show; -1 when they show none. */
static int64_t p2p_latest(const pt_analysis* a, const an_comm* c, p2p_index* px, int rank, int peer, int is_send) {
  if (!px->built) {
    px->built = 1;
    px->stuck = an_alloc((an_mem*)&a->mem, (size_t)c->nranks + 1);
    if (!px->stuck || an_map_init((an_mem*)&a->mem, &px->m, 64) != 0) return -1;
    for (size_t j = c->first_item; j < c->first_item + c->n_items; j++) {
      const an_op* y = a->items[j].op;
      if (a->items[j].stuck && y->rank >= 0 && y->rank < c->nranks) px->stuck[y->rank] = 1;
      if (y->coll_seq >= 0 && an_op_p2p(y) &&
          an_map_add((an_mem*)&a->mem, &px->m, p2p_key(y->rank, y->peer, y->is_send), (int32_t)(j - c->first_item)) != 0)
        return -1;
    }
  }
  int64_t best = -1;
  if (!px->m.cap) return best;
  for (int32_t k = an_map_first(&px->m, p2p_key(rank, peer, is_send)); k >= 0; k = an_map_next(&px->m, k)) {
    const an_op* y = a->items[c->first_item + (size_t)k].op;
    if (y->rank == rank && y->peer == peer && y->is_send == is_send && y->coll_seq > best) best = y->coll_seq;
  }
  return best;
}

/* The peer has no op to pair with `op`: missing, behind, or no such op.
 * A send or receive whose record gives its per-peer sequence: where the
 * peer's records of the other end reach it on another channel, the peer
 * made the call and left this channel's part out (no such op); where they
 * stop before it (NCCL matches the k-th send to a peer with the peer's
 * k-th receive) and the peer is stuck in ops of its own, it is behind, in
 * another call (a pipeline's stage, in its exchange with its other
 * neighbour). Else, with the host's opCounts
 * (RCCL: one order for every call the ranks all make), its records stop
 * at a lower opCount; with opCounts
 * derived per function or per peer (NVIDIA NCCL), they cannot be compared
 * across operations, so: its latest dump was taken before this op began.
 * A send missing where the node refused foreign ops is PXN's, not a rank
 * behind. */
static an_wait peer_wait(const pt_analysis* a, const an_comm* c, p2p_index* px, const an_op* op, int want_send) {
  int peer = op->peer;
  if (peer < 0 || peer >= c->nranks || !c->ranks[peer].present) return AN_W_PEER_MISSING;
  const an_rank* r = &c->ranks[peer];
  if (want_send && r->foreign > 0) return AN_W_PEER_NO_OP;
  /* A cut dump ends where its file does: its records stop there, not the
   * rank's operations. */
  if (r->dump && r->dump->cut) return AN_W_PEER_CUT;
  if (op->coll_seq >= 0 && an_op_p2p(op)) {
    const int64_t latest = p2p_latest(a, c, px, peer, op->rank, want_send);
    /* the peer made the call, on another channel: not this channel's part */
    if (latest >= op->coll_seq) return AN_W_PEER_NO_OP;
    if (px->stuck && px->stuck[peer]) return AN_W_PEER_BEHIND;
  }
  const an_rank* me = op->rank >= 0 && op->rank < c->nranks ? &c->ranks[op->rank] : NULL;
  if (r->host_counts && (!me || me->host_counts))
    return op->op_count >= 0 && r->max_op_count < op->op_count ? AN_W_PEER_BEHIND : AN_W_PEER_NO_OP;
  if (!r->dump || (r->seen_ns && op->create_ns && r->seen_ns < op->create_ns)) return AN_W_PEER_BEHIND;
  return AN_W_PEER_NO_OP;
}

/* The host reports the data its GPU made ready ahead of transmission
 * (kernelCopyReady): every profiler API and RCCL. NCCL 2.23-2.26 record
 * the ProxyOp state SendRemFifoWait with transmitted + sliceSteps once the
 * step's data is ready, before each isend try (v2.25.1-1
 * src/transport/net.cc:1173); 2.27+ the step state SendPeerWait there. A
 * dump that names no API (legacy text) says nothing of its own. */
static int data_ready_known(const an_dump* d) { return d->api >= 1 || !strcmp(d->host_lib, "rccl"); }

static an_wait wait_of(const pt_analysis* a, const an_comm* c, p2p_index* px, const an_item* x) {
  const an_op* op = x->op;
  const an_op* pa = x->partner >= 0 ? a->items[x->partner].op : NULL;
  int64_t N = op->n_steps;
  if (op->is_send) {
    int64_t T = C(op, AN_C_TRANSMITTED), K = C(op, AN_C_KERNEL_COPY_READY);
    /* Without its receive because the peer wrote no dump (a dead peer): a
     * send whose proxy has buffers posted to its GPU that hold no data yet
     * waits for the GPU, whatever the peer — the GPU has somewhere to
     * write (the proxy posts up to NCCL_STEPS ahead of completion,
     * NVIDIA/nccl src/transport/net.cc sendProxyProgress) and has not
     * written. A peer with a dump but no receive never posted one: that is
     * what the send waits for first. */
    if (!pa) {
      an_wait w = peer_wait(a, c, px, op, 0);
      if (w == AN_W_PEER_MISSING && T < N && C(op, AN_C_POSTED) > T && K <= T && data_ready_known(x->dump))
        return AN_W_GPU;
      return w;
    }
    if (T >= N) return AN_W_NETWORK;
    /* No buffer left: the receiver gates it, whatever its GPU has (when
     * both bind, the chain through the receiver reaches the same origin;
     * a GPU that stopped as well is named below). */
    if (C(pa, AN_C_POSTED) <= T) return AN_W_CREDIT;
    return K > T ? AN_W_NETWORK : AN_W_GPU;
  }
  int64_t P = C(op, AN_C_POSTED), R = C(op, AN_C_RECEIVED), D = C(op, AN_C_DONE);
  if (R < P || (P == 0 && !pa)) {
    if (!pa) return peer_wait(a, c, px, op, 1);
    if (C(pa, AN_C_TRANSMITTED) > R) return AN_W_NETWORK;
    return AN_W_DATA;
  }
  /* Data its GPU has not consumed — unless its proxy also stopped posting:
   * a ring's receive posts buffers NCCL_STEPS raw steps past what its GPU
   * consumed (recvProxyProgress: posted < done + maxDepth), at least 4 in
   * any unit (8 raw steps, sliced 2 a transfer), whatever the GPU does; one
   * that posted fewer stopped on its own. (Point-to-point receives may
   * share buffers over their peers, a depth of 1 or 2: not judged.) */
  if (D < R) return !an_op_p2p(op) && P < N && P < D + 4 ? AN_W_NOT_POSTING : AN_W_CONSUME;
  return AN_W_NOT_POSTING;
}

/* A receive that brings no more data into its node: it waits for the
 * sender, the network or the peer, or posts no buffer. */
static int starved_recv(const an_item* x) {
  return !x->op->is_send && (x->wait == AN_W_DATA || x->wait == AN_W_NETWORK || x->wait == AN_W_PEER_MISSING ||
                             x->wait == AN_W_PEER_BEHIND || x->wait == AN_W_PEER_NO_OP || x->wait == AN_W_PEER_CUT ||
                             x->wait == AN_W_NOT_POSTING);
}

/* What explain_comm() looks up per communicator, worked out once rather
 * than by a scan of its ranks or ops per stuck op or culprit (100 000 ranks
 * of one communicator made each such scan a quadratic cost). */
typedef struct {
  size_t n_nodes;       /* a->hosts.n: nodes are host ids */
  int32_t* per_node;    /* the comm's ranks per node */
  int32_t* missing;     /* per node: its lowest rank without a dump, -1 */
  int32_t* node_first;  /* per node n: its ranks, ascending, are */
  int32_t* node_ranks;  /*   node_ranks[node_first[n] .. node_first[n + 1]) */
  int mask_changed;     /* a rank's dump says the host changed the event mask */
  an_map unrecorded;    /* stuck receives whose send is not in the dumps, by the sender's node; built when first asked */
  an_map culprits;      /* the comm's culprits by (cause, rank, channel): index - first */
  size_t first;         /* the comm's first culprit */
  an_map behind;        /* the comm's ranks behind, by rank: index - first_behind; made when first needed */
  size_t first_behind;  /* the comm's first entry of a->behind */
} comm_nodes;

static uint64_t peer_node_key(uint64_t comm, int ch, int64_t op_count, int node) {
  uint64_t h = an_mix(an_mix(0x5e4d, comm), (uint64_t)(int64_t)node);
  return an_mix(an_mix(h, (uint64_t)(uint32_t)ch), (uint64_t)op_count);
}

static int unrecorded_recv(const an_comm* c, const an_item* y) {
  return y->stuck && !y->op->is_send &&
         (y->wait == AN_W_PEER_NO_OP || y->wait == AN_W_PEER_BEHIND || y->wait == AN_W_PEER_CUT) && y->op->peer >= 0 &&
         y->op->peer < c->nranks && c->ranks[y->op->peer].node >= 0;
}

/* A stuck receive elsewhere whose send, from a rank of x's node, is not in
 * the dumps (PXN): x's node cannot forward to it either. The first such
 * receive of the comm's ops; the receives are indexed when first asked
 * (their waits are all known by then). */
static int32_t unrecorded_send_from_node(pt_analysis* a, const an_comm* c, comm_nodes* cn, const an_item* x, int* rc) {
  if (x->node < 0) return -1;
  an_map* idx = &cn->unrecorded;
  if (!idx->cap) {
    if (an_map_init(&a->mem, idx, 64) != 0) {
      *rc = PT_AN_ENOMEM;
      return -1;
    }
    for (size_t j = c->first_item; j < c->first_item + c->n_items; j++) {
      const an_item* y = &a->items[j];
      if (!unrecorded_recv(c, y)) continue;
      const uint64_t key = peer_node_key(y->op->comm, y->op->channel, y->op->op_count, c->ranks[y->op->peer].node);
      if (an_map_add(&a->mem, idx, key, (int32_t)(j - c->first_item)) != 0) {
        *rc = PT_AN_ENOMEM;
        return -1;
      }
    }
  }
  const uint64_t key = peer_node_key(x->op->comm, x->op->channel, x->op->op_count, x->node);
  for (int32_t k = an_map_first(idx, key); k >= 0; k = an_map_next(idx, k)) {
    const size_t j = c->first_item + (size_t)k;
    const an_item* y = &a->items[j];
    if (y->op->comm == x->op->comm && y->op->channel == x->op->channel && y->op->op_count == x->op->op_count &&
        c->ranks[y->op->peer].node == x->node)
      return (int32_t)j;
  }
  return -1;
}

/* The key of x's node (its rank where the node is not known), a channel
 * and x's operation. */
static uint64_t node_key_on(const an_item* x, int ch) {
  int64_t node = x->node >= 0 ? x->node : -2 - (int64_t)x->op->rank;
  uint64_t h = an_mix(an_mix(0x40de, x->op->comm), (uint64_t)node);
  return an_mix(an_mix(h, (uint64_t)(uint32_t)ch), (uint64_t)x->op->op_count);
}

static uint64_t node_key(const an_item* x) { return node_key_on(x, x->op->channel); }

static int same_place(const an_item* x, const an_item* y) {
  return x->op->comm == y->op->comm && x->op->channel == y->op->channel && x->op->op_count == y->op->op_count &&
         (x->node >= 0 ? x->node == y->node : x->op->rank == y->op->rank);
}

/* A stuck op on x's node, channel and operation for which want(x, item,
 * hops) holds; one on x's own rank first. */
static int32_t on_node(const pt_analysis* a, const an_map* idx, const an_item* x,
                       int (*want)(const an_item*, const an_item*, int64_t), int64_t hops) {
  int32_t other = -1;
  for (int32_t j = an_map_first(idx, node_key(x)); j >= 0; j = an_map_next(idx, j)) {
    const an_item* y = &a->items[j];
    /* never the op's own partner: that one waits on x */
    if (y == x || (x->partner >= 0 && y == &a->items[x->partner]) || !same_place(x, y) || !want(x, y, hops))
      continue;
    if (y->op->rank == x->op->rank) return j;
    if (other < 0) other = j;
  }
  return other;
}

/* A send held from downstream: it waits for its receiver's buffer, or on
 * a receiver without a dump (a dead rank holds it the same way). */
static int held_from_downstream(const an_item* s) { return s->wait == AN_W_CREDIT || s->wait == AN_W_PEER_MISSING; }

/* A stuck ring receive x holding data its GPU has not consumed, whose
 * node's send on the channel (s) is held from downstream: the
 * hold explains the unconsumed data only as far as it holds alike on the
 * other channels of the operation. Another channel whose send is held as
 * far back or further, and whose receive of the same rank from the same
 * peer consumed more than x did — stuck, or finished with all its data
 * (fin: the comm's finished receives, by node_key) — shows that the hold
 * lets the node take that much in: x's GPU stopped short of it on its
 * own. */
/* y: x's receive (rank, peer, operation) on channel ch, which consumed more */
static int consumed_more_on(const an_op* x, const an_op* y, int ch) {
  return !y->is_send && y->comm == x->comm && y->op_count == x->op_count && y->channel == ch && y->rank == x->rank &&
         y->peer == x->peer && C(y, AN_C_DONE) > C(x, AN_C_DONE);
}

static int held_alike_consumed_more(const pt_analysis* a, const an_map* idx, const an_map* fin, const an_item* x,
                                    const an_item* s, int max_channel) {
  if (!held_from_downstream(s)) return 0;
  const int64_t T = C(s->op, AN_C_TRANSMITTED);
  for (int ch = 0; ch <= max_channel; ch++) {
    if (ch == x->op->channel) continue;
    int recv_more = 0, held_too = 0;
    for (int32_t j = an_map_first(fin, node_key_on(x, ch)); j >= 0 && !recv_more; j = an_map_next(fin, j))
      recv_more = consumed_more_on(x->op, a->items[j].op, ch);
    for (int32_t j = an_map_first(idx, node_key_on(x, ch)); j >= 0; j = an_map_next(idx, j)) {
      const an_item* y = &a->items[j];
      if (y->op->comm != x->op->comm || y->op->op_count != x->op->op_count || y->op->channel != ch) continue;
      if (consumed_more_on(x->op, y->op, ch)) recv_more = 1;
      if (y->op->is_send && y->op->rank == s->op->rank && y->op->peer == s->op->peer && y->wait == s->wait &&
          C(y->op, AN_C_TRANSMITTED) <= T)
        held_too = 1;
    }
    if (recv_more && held_too) return 1;
  }
  return 0;
}

static int stuck_send(const an_item* x, const an_item* y, int64_t hops);

/* Whether a stuck receive x that holds received data its GPU has not
 * consumed is explained without its GPU (1; also for any other op). One
 * that waits on its sender (the data, the network, a peer without a dump
 * or behind): in a ring, by a stuck send of its node on the channel and
 * operation that holds the forward back — not one that waits for its
 * GPU's data, which holds nothing back (it waits for the very data this
 * receive holds: two GPU stalls in one ring, one upstream of the node and
 * one in it, show so); point-to-point, by nothing. One that waits for its
 * GPU to consume in a ring (resolve() follows its node's send): by that
 * send. Either way a hold from downstream explains the data only as far
 * as it holds alike on the other channels (held_alike_consumed_more(): a
 * dead rank or a receive never posted downstream, beside a stall). */
static int unconsumed_explained(const pt_analysis* a, const an_map* idx, const an_map* fin, const an_item* x,
                                int max_channel) {
  const an_op* op = x->op;
  if (!x->stuck || op->is_send || x->wait == AN_W_NOT_POSTING || C(op, AN_C_DONE) >= C(op, AN_C_RECEIVED)) return 1;
  const int ring = !an_op_p2p(op);
  int32_t held;
  if (starved_recv(x))
    return ring && (held = on_node(a, idx, x, stuck_send, 0)) >= 0 && a->items[held].wait != AN_W_GPU &&
           !held_alike_consumed_more(a, idx, fin, x, &a->items[held], max_channel);
  if (x->wait != AN_W_CONSUME || x->origin || !ring) return 1;
  held = on_node(a, idx, x, stuck_send, 0);
  return held < 0 || !held_alike_consumed_more(a, idx, fin, x, &a->items[held], max_channel);
}

static int stuck_send(const an_item* x, const an_item* y, int64_t hops) {
  (void)hops;
  return x && y->op->is_send;
}

static int stuck_recv(const an_item* x, const an_item* y, int64_t hops) {
  (void)hops;
  return x && !y->op->is_send;
}

/* A receive y that may starve x's send: it brings no more data in, and it
 * stopped far enough before x's step. In a ring a send's transfer u
 * forwards data the node received in an earlier transfer (at least one
 * hop back), so a receive that holds as many transfers as the send has
 * sent, or more, has already brought in everything that send needs: the
 * data stops between them, inside the node. In a ring all-reduce every
 * rank the data passes adds its own step on top of what it received (its
 * first send of a loop needs nothing received, each later one the step
 * before: runRing, v2.28.9-1 src/device/all_reduce.h:13-75), a step being
 * a chunk of one or more transfers (ring_hops), so `hops` transfers
 * between the two let the send go that far or more past the receive: a
 * send short of that waits for a GPU inside the node, whatever the receive
 * is short of — two faults, one upstream of the node and one in it, show
 * so. */
static int starving(const an_item* x, const an_item* y, int64_t hops) {
  return starved_recv(y) && C(y->op, AN_C_RECEIVED) + hops <= C(x->op, AN_C_TRANSMITTED);
}

/* The collective call of x's op among its dump's progress lines (the
 * host's Coll event: algorithm and protocol by name), or NULL. */
static const an_task* coll_task(const an_item* x) {
  const an_op* op = x->op;
  if (!x->dump || op->coll_seq < 0 || !op->coll[0]) return NULL;
  for (int i = 0; i < x->dump->n_tasks; i++) {
    const an_task* t = &x->dump->tasks[i];
    if (!t->is_p2p && t->seq == op->coll_seq && !strcmp(t->func, op->coll)) return t;
  }
  return NULL;
}

/* The transfers of one step of a ring all-reduce: its chunk,
 * ALLREDUCE_CHUNKSTEPS / ALLREDUCE_SLICESTEPS = 2 slices under SIMPLE
 * (v2.28.9-1 src/include/collectives.h; the proxy counts a slice as a
 * transfer), one under LL and LL128, whose chunk is one step (the
 * chunking of src/enqueue.cc). The protocol comes with RCCL's op records
 * or from the call's Coll event (NVIDIA); where
 * neither says, 1 — the least any ring allows. Counters in raw steps (RCCL,
 * NCCL 2.23: the record's step unit) count 2 to a SIMPLE transfer, so a
 * chunk is 4 of them; of an unknown unit, transfers (the smaller bound). */
static int64_t chunk_transfers(const an_item* x, const an_task* t) {
  const int simple = x->op->proto >= 0 ? x->op->proto == AN_PROTO_SIMPLE : t && !strcmp(t->proto, "SIMPLE");
  /* counters in raw steps (the unit the record names): a SIMPLE transfer is 2 */
  return simple ? (x->op->step_unit == AN_UNIT_RAW ? 4 : 2) : 1;
}

/* The transfers a ring all-reduce's data gains on x's node, from the
 * receive that brings it in to the send that takes it out: a step per rank
 * of the communicator there (NCCL's rings visit a node's GPUs one after
 * the other; `per_node`, counted once per communicator), of
 * chunk_transfers each. 1 — one hop, what any ring allows — for other
 * operations, and for a ring all-reduce whose pattern or algorithm the
 * host names other than a ring. */
static int64_t ring_hops(const int32_t* per_node, size_t n_nodes, const an_item* x) {
  const an_op* op = x->op;
  const char* k = an_op_coll(op);
  const int all_reduce = k && !strcmp(k, "AllReduce");
  const int ring_half = k && (!strcmp(k, "ReduceScatter") || !strcmp(k, "AllGather"));
  if (x->node < 0 || (size_t)x->node >= n_nodes || !(all_reduce || ring_half) ||
      (op->pattern != -1 && op->pattern != (all_reduce ? AN_PATTERN_RING_TWICE : AN_PATTERN_RING)))
    return 1;
  const an_task* t = op->pattern == -1 ? coll_task(x) : NULL;
  if (t && t->algo[0] && strcmp(t->algo, "RING") != 0) return 1;
  return (per_node[x->node] > 0 ? per_node[x->node] : 1) * chunk_transfers(x, t);
}

/* Whether a receive of x's node, channel and operation has all its data:
 * the GPUs of the node had what x's send needs. The comm's finished
 * receives are indexed when first asked (a map, not a scan per send: a
 * job may hold many such sends). */
static int index_finished_recvs(pt_analysis* a, const an_comm* c, an_map* fin) {
  if (fin->cap) return 0;
  if (an_map_init(&a->mem, fin, c->n_items + 1) != 0) return PT_AN_ENOMEM;
  for (size_t i = c->first_item; i < c->first_item + c->n_items; i++) {
    const an_item* y = &a->items[i];
    if (!y->stuck && !y->op->is_send && y->node >= 0 && y->op->n_steps > 0 &&
        C(y->op, AN_C_RECEIVED) >= y->op->n_steps && an_map_add(&a->mem, fin, node_key(y), (int32_t)i) != 0)
      return PT_AN_ENOMEM;
  }
  return 0;
}

static int finished_recv_on_node(pt_analysis* a, const an_comm* c, an_map* fin, const an_item* x, int* rc) {
  if (x->node < 0) return 0;
  if ((*rc = index_finished_recvs(a, c, fin)) != 0) return 0;
  for (int32_t j = an_map_first(fin, node_key(x)); j >= 0; j = an_map_next(fin, j))
    if (same_place(x, &a->items[j])) return 1;
  return 0;
}

/* A rank of x's node without a dump (placed there by number), or -1. */
static int missing_on_node(const an_comm* c, const comm_nodes* cn, int node) {
  if (node < 0) return -1;
  if ((size_t)node < cn->n_nodes) return cn->missing[node];
  for (int r = 0; r < c->nranks; r++)
    if (!c->ranks[r].present && c->ranks[r].node == node) return r;
  return -1;
}

/* The per-node tables of cn for communicator c. 0 or PT_AN_ENOMEM. */
static int comm_nodes_init(pt_analysis* a, const an_comm* c, comm_nodes* cn) {
  memset(cn, 0, sizeof *cn);
  const size_t nn = a->hosts.n;
  cn->n_nodes = nn;
  cn->per_node = an_alloc(&a->mem, (nn + 1) * sizeof *cn->per_node);
  cn->missing = an_alloc(&a->mem, (nn + 1) * sizeof *cn->missing);
  cn->node_first = an_alloc(&a->mem, (nn + 2) * sizeof *cn->node_first);
  cn->node_ranks = an_alloc(&a->mem, ((size_t)c->nranks + 1) * sizeof *cn->node_ranks);
  if (!cn->per_node || !cn->missing || !cn->node_first || !cn->node_ranks ||
      an_map_init(&a->mem, &cn->culprits, 16) != 0)
    return PT_AN_ENOMEM;
  for (size_t n = 0; n < nn; n++) cn->missing[n] = -1;
  for (int r = 0; r < c->nranks; r++) {
    const int node = c->ranks[r].node;
    cn->mask_changed |= c->ranks[r].dump && c->ranks[r].dump->mask_changed;
    if (node < 0 || (size_t)node >= nn) continue;
    cn->per_node[node]++;
    if (!c->ranks[r].present && cn->missing[node] < 0) cn->missing[node] = r;
  }
  for (size_t n = 0; n < nn; n++) cn->node_first[n + 1] = cn->node_first[n] + cn->per_node[n];
  int32_t* at = an_alloc(&a->mem, (nn + 1) * sizeof *at);
  if (!at) return PT_AN_ENOMEM;
  memcpy(at, cn->node_first, nn * sizeof *at);
  for (int r = 0; r < c->nranks; r++) {
    const int node = c->ranks[r].node;
    if (node >= 0 && (size_t)node < nn) cn->node_ranks[at[node]++] = r;
  }
  an_free(&a->mem, at);
  return 0;
}

static void comm_nodes_free(pt_analysis* a, comm_nodes* cn) {
  an_free(&a->mem, cn->per_node);
  an_free(&a->mem, cn->missing);
  an_free(&a->mem, cn->node_first);
  an_free(&a->mem, cn->node_ranks);
  an_map_free(&a->mem, &cn->unrecorded);
  an_map_free(&a->mem, &cn->culprits);
  an_map_free(&a->mem, &cn->behind);
}

static uint64_t culprit_key(int cause, int rank, int channel) {
  return an_mix(an_mix(an_mix(0xc1, (uint64_t)(int64_t)cause), (uint64_t)(int64_t)rank), (uint64_t)(int64_t)channel);
}

/* The comm's first culprit of (cause, rank, channel), or -1. */
static int32_t culprit_of(const pt_analysis* a, const comm_nodes* cn, int cause, int rank, int channel) {
  for (int32_t k = an_map_first(&cn->culprits, culprit_key(cause, rank, channel)); k >= 0;
       k = an_map_next(&cn->culprits, k)) {
    const an_culprit* q = &a->culprits[cn->first + (size_t)k];
    if ((int)q->pub.cause == cause && q->pub.rank == rank && q->pub.channel == channel) return (int32_t)(cn->first + (size_t)k);
  }
  return -1;
}

/* A new culprit of the comm, zeroed but for its key, or NULL. */
static an_culprit* add_culprit(pt_analysis* a, comm_nodes* cn, int cause, int rank, int channel) {
  an_culprit* q = an_grow(&a->mem, (void**)&a->culprits, &a->n_culprits, &a->cap_culprits, sizeof *q);
  if (!q) return NULL;
  if (an_map_add(&a->mem, &cn->culprits, culprit_key(cause, rank, channel), (int32_t)(a->n_culprits - 1 - cn->first)) !=
      0) {
    a->n_culprits--;
    return NULL;
  }
  q->pub.cause = (pt_cause)cause;
  q->pub.rank = rank;
  q->pub.channel = channel;
  return q;
}

typedef struct {
  int cause;
  int rank; /* the culprit rank */
} origin_of;

static void set_origin(an_item* x, origin_of* o, int cause, int rank) {
  x->origin = 1;
  x->next = -1;
  x->cause = (int8_t)cause;
  o->cause = cause;
  o->rank = rank;
}

static void resolve(pt_analysis* a, const an_comm* c, const an_map* idx, comm_nodes* cn, size_t i, origin_of* org,
                    int* rc) {
  an_item* x = &a->items[i];
  const an_op* op = x->op;
  int32_t pa = x->partner;
  int pa_stuck = pa >= 0 && a->items[pa].stuck;
  int32_t j;
  int m;
  switch ((an_wait)x->wait) {
    case AN_W_GPU:
      if (an_op_p2p(op)) set_origin(x, org, PT_CAUSE_GPU_NOT_PRODUCING, op->rank);
      else if ((j = on_node(a, idx, x, starving, ring_hops(cn->per_node, cn->n_nodes, x))) >= 0) x->next = j;
      else if ((m = missing_on_node(c, cn, x->node)) >= 0) set_origin(x, org, PT_CAUSE_RANK_MISSING, m);
      else set_origin(x, org, PT_CAUSE_GPU_NOT_PRODUCING, op->rank);
      break;
    case AN_W_CONSUME:
      /* point-to-point: the GPU consumes into the user's buffer, nothing
       * downstream holds it — except its own stalled GPU, whose send on
       * this rank, waiting for it, says so */
      if (an_op_p2p(op) && (j = on_node(a, idx, x, stuck_send, 0)) >= 0 && a->items[j].op->rank == op->rank &&
          a->items[j].wait == AN_W_GPU)
        x->next = j;
      else if (an_op_p2p(op)) set_origin(x, org, PT_CAUSE_GPU_NOT_CONSUMING, op->rank);
      else if ((j = on_node(a, idx, x, stuck_send, 0)) >= 0) x->next = j;
      else if ((j = unrecorded_send_from_node(a, c, cn, x, rc)) >= 0) x->next = j;
      else if ((m = missing_on_node(c, cn, x->node)) >= 0) set_origin(x, org, PT_CAUSE_RANK_MISSING, m);
      else set_origin(x, org, PT_CAUSE_GPU_NOT_CONSUMING, op->rank);
      break;
    case AN_W_CREDIT:
      if (pa_stuck) x->next = pa;
      else set_origin(x, org, PT_CAUSE_NO_RECEIVE_POSTED, op->peer);
      break;
    case AN_W_DATA:
      if (pa_stuck) x->next = pa;
      else if (pa >= 0 && a->items[pa].moving) set_origin(x, org, PT_CAUSE_NONE, op->rank);
      else set_origin(x, org, PT_CAUSE_NETWORK, op->peer);
      break;
    case AN_W_NETWORK: set_origin(x, org, PT_CAUSE_NETWORK, sender(op)); break;
    case AN_W_NOT_POSTING: set_origin(x, org, PT_CAUSE_NO_RECEIVE_POSTED, op->rank); break;
    case AN_W_PEER_MISSING: set_origin(x, org, PT_CAUSE_RANK_MISSING, op->peer); break;
    case AN_W_PEER_BEHIND: case AN_W_PEER_CUT: set_origin(x, org, PT_CAUSE_RANK_BEHIND, op->peer); break;
    case AN_W_PEER_NO_OP:
      set_origin(x, org, op->is_send ? PT_CAUSE_NO_RECEIVE_POSTED : PT_CAUSE_SEND_MISSING, op->peer);
      break;
    default: set_origin(x, org, PT_CAUSE_NONE, op->rank); break;
  }
}

/* Step of an op in the terms of its wait. */
static int64_t step_of(const an_item* x) {
  const an_op* op = x->op;
  switch ((an_wait)x->wait) {
    case AN_W_CONSUME: return C(op, AN_C_DONE);
    case AN_W_NOT_POSTING: return C(op, AN_C_POSTED);
    default: return an_op_progress(op);
  }
}

/* A GPU that stopped as well as what its op waits on (the two loops of
 * an_explain below): a culprit of `cause` for the rank and channel of item
 * i, unless the comm's culprits (cn) have one of `cause` or `also`
 * there. In a ring the GPU is one of its node's: where a rank of that node
 * wrote no dump, it is that rank, missing (as resolve() reads a node's GPU
 * that holds an op up). 0, or PT_AN_ENOMEM. */
static int gpu_too(pt_analysis* a, const an_comm* c, comm_nodes* cn, size_t i, size_t ci, pt_cause cause,
                   pt_cause also) {
  const an_op* op = a->items[i].op;
  int rank = op->rank, channel = op->channel;
  const int m = an_op_p2p(op) ? -1 : missing_on_node(c, cn, a->items[i].node);
  if (m >= 0) {
    cause = also = PT_CAUSE_RANK_MISSING;
    rank = m;
    channel = -1;
  }
  if (culprit_of(a, cn, cause, rank, channel) >= 0 || (also != cause && culprit_of(a, cn, also, rank, channel) >= 0))
    return 0;
  an_culprit* q = add_culprit(a, cn, cause, rank, channel);
  if (!q) return PT_AN_ENOMEM;
  q->origin = (int32_t)i;
  q->comm_index = (int)ci;
  return 0;
}

/* ---- culprits ------------------------------------------------------------------- */

static void describe(pt_analysis* a, const an_comm* c, const comm_nodes* cn, an_culprit* k, const an_item* o);
static int own_gpu_too(pt_analysis* a, size_t lo, size_t hi, size_t k);
static int appendf(char* buf, size_t n, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

static int cmp_culprits(const void* x, const void* y) {
  const an_culprit* a = x;
  const an_culprit* b = y;
  if (a->pub.dependents != b->pub.dependents) return b->pub.dependents - a->pub.dependents;
  if (a->comm_index != b->comm_index) return a->comm_index - b->comm_index;
  if (a->pub.rank != b->pub.rank) return a->pub.rank - b->pub.rank;
  return a->pub.channel - b->pub.channel;
}

/* The comm's ranks behind are its own entries of a->behind (a comm's
 * hash is its own), indexed by rank in cn. */
static void add_behind(pt_analysis* a, const an_comm* c, comm_nodes* cn, int rank, int64_t needed) {
  const uint64_t key = an_mix(0xbe, (uint64_t)(int64_t)rank);
  if (!cn->behind.cap && an_map_init(&a->mem, &cn->behind, 16) != 0) return;
  for (int32_t k = an_map_first(&cn->behind, key); k >= 0; k = an_map_next(&cn->behind, k)) {
    an_behind* b = &a->behind[cn->first_behind + (size_t)k];
    if (b->comm == c->comm && b->rank == rank) {
      if (needed < b->needed) b->needed = needed;
      return;
    }
  }
  an_behind* b = an_grow(&a->mem, (void**)&a->behind, &a->n_behind, &a->cap_behind, sizeof *b);
  if (!b) return;
  if (an_map_add(&a->mem, &cn->behind, key, (int32_t)(a->n_behind - 1 - cn->first_behind)) != 0) {
    a->n_behind--;
    return;
  }
  b->comm = c->comm;
  b->rank = rank;
  b->last_op_count = c->ranks[rank].max_op_count;
  b->needed = needed;
}

/* The opCounts of the stuck ops of items [lo, hi), in the order of their
 * first stuck op: that op and how many stuck ops have the opCount. */
typedef struct {
  int32_t first;
  int32_t n;
} op_count_vote;

static op_count_vote* op_count_votes(pt_analysis* a, size_t lo, size_t hi, size_t* n_votes, int* rc) {
  op_count_vote* v = NULL;
  size_t n = 0, cap = 0;
  an_map idx;
  *n_votes = 0;
  if (an_map_init(&a->mem, &idx, 16) != 0) {
    *rc = PT_AN_ENOMEM;
    return NULL;
  }
  for (size_t i = lo; i < hi; i++) {
    if (!a->items[i].stuck) continue;
    const int64_t oc = a->items[i].op->op_count;
    const uint64_t key = an_mix(0x0c, (uint64_t)oc);
    int32_t k = an_map_first(&idx, key);
    while (k >= 0 && a->items[v[k].first].op->op_count != oc) k = an_map_next(&idx, k);
    if (k >= 0) {
      v[k].n++;
      continue;
    }
    op_count_vote* e = an_grow(&a->mem, (void**)&v, &n, &cap, sizeof *e);
    if (!e || an_map_add(&a->mem, &idx, key, (int32_t)(n - 1)) != 0) {
      an_free(&a->mem, v);
      v = NULL;
      n = 0;
      *rc = PT_AN_ENOMEM;
      break;
    }
    e->first = (int32_t)i;
    e->n = 1;
  }
  an_map_free(&a->mem, &idx);
  *n_votes = n;
  return v;
}

static int explain_comm(pt_analysis* a, size_t ci) {
  an_comm* c = &a->comms[ci];
  size_t lo = c->first_item, hi = lo + c->n_items;
  an_map idx;
  if (an_map_init(&a->mem, &idx, c->n_items + 1) != 0) return PT_AN_ENOMEM;
  an_map fin = {0}; /* the node's finished receives, indexed when first asked */
  p2p_index p2p = {0}; /* the comm's sends and receives by peer, when first asked */
  origin_of* org = an_alloc(&a->mem, (c->n_items + 1) * sizeof *org);
  int32_t* root = an_alloc(&a->mem, (c->n_items + 1) * sizeof *root);
  int32_t* stack = an_alloc(&a->mem, (c->n_items + 1) * sizeof *stack);
  char* state = an_alloc(&a->mem, c->n_items + 1);
  comm_nodes cn;
  int rc = comm_nodes_init(a, c, &cn);
  cn.first = a->n_culprits;
  cn.first_behind = a->n_behind;
  if (!org || !root || !stack || !state) rc = PT_AN_ENOMEM;
  int max_channel = 0;
  for (size_t i = lo; i < hi && rc == 0; i++) {
    an_item* x = &a->items[i];
    if (!x->stuck) continue;
    if (x->op->channel > max_channel) max_channel = x->op->channel;
    x->wait = (int8_t)wait_of(a, c, &p2p, x);
    if (an_map_add(&a->mem, &idx, node_key(x), (int32_t)i) != 0) rc = PT_AN_ENOMEM;
  }
  for (size_t i = lo; i < hi && rc == 0; i++)
    if (a->items[i].stuck) resolve(a, c, &idx, &cn, i, &org[i - lo], &rc);

  /* Roots: follow `next`; a cycle gets the op in it that moved least. */
  for (size_t i = lo; i < hi && rc == 0; i++) {
    if (!a->items[i].stuck || state[i - lo]) continue;
    size_t n = 0;
    int32_t j = (int32_t)i, r = -1;
    for (;;) {
      char s = state[j - lo];
      if (s == 2) {
        r = root[j - lo];
        break;
      }
      if (s == 1) { /* a cycle: from j to the top of the stack */
        size_t from = n;
        while (from > 0 && stack[from - 1] != j) from--;
        from = from > 0 ? from - 1 : 0;
        int32_t least = stack[from];
        for (size_t q = from; q < n; q++)
          if (an_op_progress(a->items[stack[q]].op) < an_op_progress(a->items[least].op)) least = stack[q];
        set_origin(&a->items[least], &org[least - lo], PT_CAUSE_CIRCULAR, a->items[least].op->rank);
        r = least;
        break;
      }
      state[j - lo] = 1;
      stack[n++] = j;
      if (a->items[j].next < 0) {
        r = j;
        break;
      }
      j = a->items[j].next;
    }
    for (size_t q = 0; q < n; q++) {
      state[stack[q] - lo] = 2;
      root[stack[q] - lo] = r;
    }
  }

  /* Culprits: origins grouped by (cause, rank, channel). */
  size_t first = a->n_culprits;
  for (size_t i = lo; i < hi && rc == 0; i++) {
    an_item* x = &a->items[i];
    if (!x->stuck || !x->origin || org[i - lo].cause == PT_CAUSE_NONE) continue;
    const origin_of* o = &org[i - lo];
    /* A rank missing or behind is one culprit, whichever channels wait. */
    int channel = o->cause == PT_CAUSE_RANK_MISSING || o->cause == PT_CAUSE_RANK_BEHIND ? -1 : x->op->channel;
    const int32_t found = culprit_of(a, &cn, o->cause, o->rank, channel);
    size_t k = found >= 0 ? (size_t)found : a->n_culprits;
    if (found < 0) {
      an_culprit* q = add_culprit(a, &cn, o->cause, o->rank, channel);
      if (!q) {
        rc = PT_AN_ENOMEM;
        break;
      }
      q->origin = (int32_t)i;
      q->comm_index = (int)ci;
    } else if (x->op->rank == o->rank && a->items[a->culprits[k].origin].op->rank != o->rank) {
      a->culprits[k].origin = (int32_t)i; /* prefer the culprit's own op as evidence */
    }
    x->culprit = (int32_t)k; /* provisional: the group */
  }
  /* A point-to-point send that waits for the receiver's buffer and whose
   * own buffers hold no data: its GPU stopped too (with credit withheld, a
   * GPU that runs still fills the buffers its proxy posted from the user's
   * buffer). Its wait leads to the receiver; the GPU is a culprit of its
   * own. The same where the receiver, with a dump, has no matching receive
   * at all (it never posted one: no buffer either). A ring's GPU may hold
   * back for want of received data, which a finished or moving receive of
   * its node need not show: there only a stuck receive of the node that
   * holds what the send needs (starving() does not hold) shows the GPU
   * stopped with its data there. */
  for (size_t i = lo; i < hi && rc == 0; i++) {
    an_item* x = &a->items[i];
    const an_op* op = x->op;
    int64_t T = C(op, AN_C_TRANSMITTED);
    const int no_buffer = x->wait == AN_W_CREDIT || (x->wait == AN_W_PEER_NO_OP && an_op_p2p(op));
    if (!x->stuck || !op->is_send || !no_buffer || T >= op->n_steps || C(op, AN_C_POSTED) <= T ||
        C(op, AN_C_KERNEL_COPY_READY) > T || !data_ready_known(x->dump))
      continue;
    if (!an_op_p2p(op)) {
      const int32_t j = on_node(a, &idx, x, stuck_recv, 0);
      if (j >= 0 ? starving(x, &a->items[j], ring_hops(cn.per_node, cn.n_nodes, x)) : !finished_recv_on_node(a, c, &fin, x, &rc)) continue;
    }
    rc = gpu_too(a, c, &cn, i, ci, PT_CAUSE_GPU_NOT_PRODUCING, PT_CAUSE_GPU_NOT_PRODUCING);
  }
  /* A receive that holds received data its GPU has not consumed: its GPU
   * stopped too — a GPU that runs consumes what arrived (point-to-point
   * into the user's buffer, a ring by forwarding it) — unless its node's
   * send on the channel and operation, held from downstream, explains it
   * (unconsumed_explained()). Its wait leads elsewhere; the GPU is a
   * culprit of its own (in a ring, one of its node's, as describe()
   * says). */
  if (rc == 0) rc = index_finished_recvs(a, c, &fin);
  for (size_t i = lo; i < hi && rc == 0; i++)
    if (!unconsumed_explained(a, &idx, &fin, &a->items[i], max_channel))
      rc = gpu_too(a, c, &cn, i, ci, PT_CAUSE_GPU_NOT_CONSUMING, PT_CAUSE_GPU_NOT_PRODUCING);
  for (size_t i = lo; i < hi && rc == 0; i++) {
    an_item* x = &a->items[i];
    if (!x->stuck) continue;
    int32_t r = root[i - lo];
    x->culprit = r >= 0 ? a->items[r].culprit : -1;
    /* Ops that wait on the culprit: every op of its chains but its own. */
    if (x->culprit >= 0 && x->op->rank != a->culprits[x->culprit].pub.rank) a->culprits[x->culprit].pub.dependents++;
    /* (a send or receive with its per-peer sequence: its culprit says how
     * far the peer got with this rank; opCounts are not comparable) */
    if (x->wait == AN_W_PEER_BEHIND && x->op->peer >= 0 && x->op->peer < c->nranks &&
        !(x->op->coll_seq >= 0 && an_op_p2p(x->op)))
      add_behind(a, c, &cn, x->op->peer, x->op->op_count);
  }
  /* The opCount most stuck ops are in, and its collective's name: of the
   * opCounts with the most stuck ops, the one whose first stuck op comes
   * first. Counted per opCount, once (a scan of the comm's ops per stuck op
   * took minutes when 100 000 ranks of one communicator were stuck). */
  int64_t best = -1;
  int best_n = 0;
  size_t n_votes = 0;
  op_count_vote* votes = rc == 0 ? op_count_votes(a, lo, hi, &n_votes, &rc) : NULL;
  for (size_t v = 0; v < n_votes; v++) {
    const size_t i = (size_t)votes[v].first;
    const int n = votes[v].n;
    if (n > best_n) {
      best_n = n;
      best = a->items[i].op->op_count;
      const char* name = an_op_coll(a->items[i].op);
      snprintf(c->coll, sizeof c->coll, "%s", name ? name : "");
      c->tag_known = a->items[i].op->tag_known; /* the task's userTag: the user's phase */
      c->user_tag = a->items[i].op->user_tag;
    }
    if (best_n * 2 > (int)c->n_items) break;
  }
  an_free(&a->mem, votes);
  c->stuck_op_count = best;
  for (size_t k = first; k < a->n_culprits && rc == 0; k++) describe(a, c, &cn, &a->culprits[k], &a->items[a->culprits[k].origin]);
  for (size_t k = first; k < a->n_culprits && rc == 0; k++)
    if (a->culprits[k].pub.cause == PT_CAUSE_RANK_MISSING) rc = own_gpu_too(a, lo, hi, k);
  /* A cycle names no origin of its own: the op that moved least is a
   * guess, so every rank of its ops is a candidate, and in a ring every
   * rank of their nodes (the hops inside a node have no proxy ops). */
  for (size_t k = first; k < a->n_culprits && rc == 0; k++) {
    an_culprit* q = &a->culprits[k];
    if (q->pub.cause != PT_CAUSE_CIRCULAR) continue;
    size_t n = (size_t)c->nranks;
    int* cand = an_alloc(&a->mem, (n + 2) * sizeof *cand);
    char* in_cycle = an_alloc(&a->mem, n + a->hosts.n + 1); /* ranks, then nodes */
    if (!cand || !in_cycle) {
      an_free(&a->mem, cand);
      an_free(&a->mem, in_cycle);
      rc = PT_AN_ENOMEM;
      break;
    }
    memset(in_cycle, 0, n + a->hosts.n + 1);
    for (size_t i = lo; i < hi; i++) {
      const an_item* x = &a->items[i];
      if (!x->stuck || x->culprit != (int32_t)k) continue;
      if (x->op->rank >= 0 && x->op->rank < c->nranks) in_cycle[x->op->rank] = 1;
      if (!an_op_p2p(x->op) && x->node >= 0 && (size_t)x->node < a->hosts.n) in_cycle[n + (size_t)x->node] = 1;
    }
    int m = 0;
    cand[m++] = q->pub.rank;
    for (int r = 0; r < c->nranks; r++) {
      int node = c->ranks[r].node;
      if (r != q->pub.rank && (in_cycle[r] || (node >= 0 && (size_t)node < a->hosts.n && in_cycle[n + (size_t)node])))
        cand[m++] = r;
    }
    an_free(&a->mem, in_cycle);
    cand[m] = -1;
    an_free(&a->mem, q->cand);
    q->cand = cand;
    q->pub.n_candidates = m;
    q->pub.scope_node = m > 1;
    appendf(q->summary, sizeof q->summary, "; the cycle's ranks, any of which may be where it began:");
    for (int j = 0; j < m; j++) appendf(q->summary, sizeof q->summary, "%s %d", j ? "," : "", cand[j]);
  }
  an_free(&a->mem, org);
  an_free(&a->mem, root);
  an_free(&a->mem, stack);
  an_free(&a->mem, state);
  an_free(&a->mem, p2p.stuck);
  comm_nodes_free(a, &cn);
  an_map_free(&a->mem, &idx);
  an_map_free(&a->mem, &fin);
  if (p2p.m.cap) an_map_free(&a->mem, &p2p.m);
  return rc;
}

int an_explain(pt_analysis* a) {
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    int rc = explain_comm(a, ci);
    if (rc) return rc;
  }
  /* Most dependents first; item links follow the new order. */
  if (a->n_culprits > 1) {
    int32_t* where = an_alloc(&a->mem, a->n_culprits * sizeof *where);
    if (!where) return PT_AN_ENOMEM;
    for (size_t k = 0; k < a->n_culprits; k++) a->culprits[k].sort_index = (int)k;
    qsort(a->culprits, a->n_culprits, sizeof *a->culprits, cmp_culprits);
    for (size_t k = 0; k < a->n_culprits; k++) where[a->culprits[k].sort_index] = (int32_t)k;
    for (size_t i = 0; i < a->n_items; i++)
      if (a->items[i].culprit >= 0) a->items[i].culprit = where[a->items[i].culprit];
    an_free(&a->mem, where);
  }
  return 0;
}

/* ---- the culprit in words ----------------------------------------------------------- */

static int appendf(char* buf, size_t n, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static int appendf(char* buf, size_t n, const char* fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= n) return 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, n - len, fmt, ap);
  va_end(ap);
  return 0;
}

static void who(char* buf, size_t n, const an_comm* c, int rank) {
  const an_dump* d = rank >= 0 && rank < c->nranks ? c->ranks[rank].dump : NULL;
  if (d && d->host[0] && d->pid) snprintf(buf, n, "rank %d (%s, pid %d)", rank, d->host, d->pid);
  else if (d && d->host[0]) snprintf(buf, n, "rank %d (%s)", rank, d->host);
  else snprintf(buf, n, "rank %d", rank);
}

static void op_words(char* buf, size_t n, const an_op* op) {
  const char* coll = an_op_coll(op);
  if (op->op_count >= 0 && coll) snprintf(buf, n, "opCount %lld (%s)", (long long)op->op_count, coll);
  else if (op->op_count >= 0) snprintf(buf, n, "opCount %lld", (long long)op->op_count);
  else snprintf(buf, n, "the operation in flight");
}

/* The smallest of v[0..m) above prev; INT_MAX when none. */
static int next_above(const int* v, int m, int prev) {
  int best = INT_MAX;
  for (int i = 0; i < m; i++)
    if (v[i] > prev && v[i] < best) best = v[i];
  return best;
}

/* Ranks in ascending runs: "24-31", "0, 2, 5-7". */
static void rank_runs(char* buf, size_t n, const int* v, int m) {
  buf[0] = 0;
  for (int r = next_above(v, m, INT_MIN), first = 1; r != INT_MAX; r = next_above(v, m, r), first = 0) {
    int e = r, nx;
    while ((nx = next_above(v, m, e)) == e + 1) e = nx;
    appendf(buf, n, "%s%d", first ? "" : ", ", r);
    if (e > r) appendf(buf, n, "%s%d", e == r + 1 ? ", " : "-", e);
    r = e;
  }
}

/* A GPU culprit the records place on a node but on none of its ranks: the
 * hops inside a node have no proxy ops, so a stall anywhere on the node's
 * stretch of the ring looks the same as one at the rank whose op shows it.
 * The node and its ranks come first, so that the line a person reads first
 * names no rank alone; then the op that shows it, and what in the dumps
 * could tell the ranks apart (desync.c reads the progress lines: a rank
 * that never called the collective, a GPU that never took it up). */
static void node_level(const pt_analysis* a, const an_comm* c, const comm_nodes* cn, an_culprit* k, const an_op* op, const char* me,
                       const char* opw) {
  const pt_culprit* p = &k->pub;
  const an_rank* rk = &c->ranks[p->rank]; /* scope_node: a rank with a node */
  char* s = k->summary;
  const size_t n = sizeof k->summary;
  char runs[256];
  rank_runs(runs, sizeof runs, k->cand, p->n_candidates);
  appendf(s, n, "a GPU of %s%s — one of ranks %s, the records cannot tell which: channel %d stops inside the node, "
                "where the data passes GPU to GPU without proxy ops; ",
          a->hosts.names[rk->node], rk->numbered ? " (nodes by rank numbering)" : "", runs, op->channel);
  if (p->cause == PT_CAUSE_GPU_NOT_PRODUCING)
    appendf(s, n, "%s sends to rank %d off the node and waits for its GPU's data at step %lld/%lld of %s", me, op->peer,
            (long long)p->step, (long long)op->n_steps, opw);
  else
    appendf(s, n, "%s receives from rank %d off the node: %lld received, %lld consumed of %lld steps, %s", me, op->peer,
            (long long)C(op, AN_C_RECEIVED), (long long)p->step, (long long)op->n_steps, opw);
  if (p->dependents > 0) appendf(s, n, "; %d stuck op%s wait%s on it", p->dependents, p->dependents == 1 ? "" : "s",
                                 p->dependents == 1 ? "s" : "");
  int kernel = 0, any = 0, changed = 0;
  for (int i = 0; i < p->n_candidates; i++) {
    const an_dump* d = k->cand[i] >= 0 && k->cand[i] < c->nranks ? c->ranks[k->cand[i]].dump : NULL;
    any |= d && d->has_progress;
    kernel |= d && d->n_kch;
  }
  changed = cn->mask_changed;
  if (changed)
    appendf(s, n, "; the plugin's progress lines cannot tell which either: the host changed the event mask during the "
                  "job, so the calls each rank recorded cannot be compared");
  else if (!any)
    appendf(s, n, "; their dumps hold no calls (the host sent the plugin no Coll event): with Coll and kernel-channel "
                  "events (NCCL 2.26+) the plugin's progress lines name a rank that never called the collective or "
                  "whose GPU never took it up");
  else if (!kernel)
    appendf(s, n, "; their dumps hold no kernel-channel events (NCCL before 2.26, or a mask without KernelCh): with "
                  "them the plugin's progress lines name a GPU that never took the collective up");
  else
    appendf(s, n, "; the plugin's progress lines cannot tell which either: each of them called the collective and "
                  "its kernels took it up, so they wait on each other inside it");
}

/* A rank without a dump named where a ring receive of its node holds data
 * its own GPU never consumed (resolve(): the node's send that would take
 * it on has no record, the missing rank's hop may hold it): that rank's
 * GPU, stopped, holds it the same way, and its own records say so — a
 * candidate too, with what they show. 0 or PT_AN_ENOMEM. */
static int own_gpu_too(pt_analysis* a, size_t lo, size_t hi, size_t k) {
  an_culprit* q = &a->culprits[k];
  for (size_t i = lo; i < hi; i++) {
    const an_item* x = &a->items[i];
    const an_op* op = x->op;
    if (!x->stuck || !x->origin || x->culprit != (int32_t)k || x->wait != AN_W_CONSUME || op->is_send ||
        an_op_p2p(op) || op->rank == q->pub.rank)
      continue;
    int have = 0;
    for (int j = 0; j < q->pub.n_candidates && !have; j++) have = q->cand[j] == op->rank;
    if (have) continue;
    int* cand = an_alloc(&a->mem, ((size_t)q->pub.n_candidates + 2) * sizeof *cand);
    if (!cand) return PT_AN_ENOMEM;
    memcpy(cand, q->cand, (size_t)q->pub.n_candidates * sizeof *cand);
    cand[q->pub.n_candidates] = op->rank;
    cand[q->pub.n_candidates + 1] = -1;
    an_free(&a->mem, q->cand);
    q->cand = cand;
    q->pub.n_candidates++;
    appendf(q->summary, sizeof q->summary,
            "; or rank %d's GPU stopped: its own receive from rank %d on channel %d holds %lld received steps, %lld "
            "consumed, and a GPU stopped there holds its node's data the same way",
            op->rank, op->peer, op->channel, (long long)C(op, AN_C_RECEIVED), (long long)C(op, AN_C_DONE));
  }
  return 0;
}

static void describe(pt_analysis* a, const an_comm* c, const comm_nodes* cn, an_culprit* k, const an_item* o) {
  const an_op* op = o->op;
  pt_culprit* p = &k->pub;
  p->comm_hash = c->comm;
  p->op_count = op->op_count;
  p->n_steps = op->n_steps;
  /* a GPU that stopped consuming: where it stopped, whatever the op waits on */
  p->step = p->cause == PT_CAUSE_GPU_NOT_CONSUMING && !o->op->is_send ? C(o->op, AN_C_DONE) : step_of(o);
  p->slow_factor = 0;
  p->peer = op->rank == p->rank ? op->peer : op->rank;
  switch (p->cause) {
    case PT_CAUSE_GPU_NOT_PRODUCING: case PT_CAUSE_NETWORK: p->is_send = 1; break;
    case PT_CAUSE_GPU_NOT_CONSUMING: case PT_CAUSE_NO_RECEIVE_POSTED: p->is_send = 0; break;
    case PT_CAUSE_RANK_MISSING: case PT_CAUSE_RANK_BEHIND: case PT_CAUSE_SEND_MISSING:
      p->is_send = op->rank == p->rank ? op->is_send : !op->is_send;
      break;
    default: p->is_send = op->is_send; break;
  }
  if (p->cause == PT_CAUSE_NETWORK) p->peer = receiver(op);
  const an_rank* rk = p->rank >= 0 && p->rank < c->nranks ? &c->ranks[p->rank] : NULL;
  snprintf(k->host, sizeof k->host, "%s", rk && rk->dump ? rk->dump->host : "");
  p->pid = rk && rk->dump ? rk->dump->pid : 0;
  /* Candidates: the culprit's rank, then the other ranks of its node when
   * the records cannot tell them apart. */
  int node = rk ? rk->node : -1;
  int ncand = 1;
  /* the node's ranks, ascending (comm_nodes_init) */
  const int32_t* of_node = node >= 0 && (size_t)node < cn->n_nodes ? cn->node_ranks + cn->node_first[node] : NULL;
  const int n_of_node = of_node ? cn->per_node[node] : 0;
  if ((p->cause == PT_CAUSE_GPU_NOT_PRODUCING || p->cause == PT_CAUSE_GPU_NOT_CONSUMING) && node >= 0 && !an_op_p2p(op))
    for (int r = 0; r < n_of_node; r++) ncand += of_node[r] != p->rank;
  k->cand = an_alloc(&a->mem, ((size_t)ncand + 1) * sizeof *k->cand);
  if (k->cand) {
    int n = 0;
    k->cand[n++] = p->rank;
    if (ncand > 1)
      for (int r = 0; r < n_of_node; r++)
        if (of_node[r] != p->rank) k->cand[n++] = of_node[r];
    k->cand[n] = -1;
    p->n_candidates = n;
  }
  p->scope_node = p->n_candidates > 1;

  char me[160], other[160], opw[96];
  who(me, sizeof me, c, p->rank);
  op_words(opw, sizeof opw, op);
  char* s = k->summary;
  size_t n = sizeof k->summary;
  s[0] = 0;
  long long N = (long long)op->n_steps, st = (long long)p->step;
  if (p->scope_node) { /* GPU causes only: a cycle's candidates come after (explain_comm) */
    node_level(a, c, cn, k, op, me, opw);
    return;
  }
  switch (p->cause) {
    case PT_CAUSE_GPU_NOT_PRODUCING:
      appendf(s, n, "%s, channel %d: its GPU stopped producing data — its send to rank %d is at step %lld/%lld of %s",
              me, op->channel, op->peer, st, N, opw);
      break;
    case PT_CAUSE_GPU_NOT_CONSUMING:
      appendf(s, n,
              "%s, channel %d: its GPU stopped consuming received data — its receive from rank %d has %lld received, "
              "%lld consumed of %lld steps, %s",
              me, op->channel, op->peer, (long long)C(op, AN_C_RECEIVED), st, N, opw);
      break;
    case PT_CAUSE_NO_RECEIVE_POSTED:
      if (op->rank == p->rank) {
        char held[128] = "all of them received and consumed";
        if (C(op, AN_C_DONE) < C(op, AN_C_RECEIVED))
          snprintf(held, sizeof held, "%lld received and %lld consumed: its proxy posts 4 or more past what the GPU consumed",
                   (long long)C(op, AN_C_RECEIVED), (long long)C(op, AN_C_DONE));
        appendf(s, n,
                "%s, channel %d: posts no more receive buffers for rank %d — its receive stopped at %lld posted of %lld "
                "steps, %s, %s",
                me, op->channel, op->peer, (long long)C(op, AN_C_POSTED), N, held, opw);
      }
      else
        appendf(s, n,
                "%s, channel %d: has no receive posted for rank %d in %s — rank %d's send waits for a buffer at step "
                "%lld/%lld",
                me, op->channel, op->rank, opw, op->rank, st, N);
      break;
    case PT_CAUSE_NETWORK:
      appendf(s, n, "link rank %d -> rank %d, channel %d: data was sent but did not arrive, or the send never completed — ",
              sender(op), receiver(op), op->channel);
      if (o->partner >= 0) {
        const an_op* s_op = op->is_send ? op : a->items[o->partner].op;
        const an_op* r_op = op->is_send ? a->items[o->partner].op : op;
        appendf(s, n, "rank %d transmitted %lld, rank %d received %lld of %lld steps, %s", s_op->rank,
                (long long)C(s_op, AN_C_TRANSMITTED), r_op->rank, (long long)C(r_op, AN_C_RECEIVED), N, opw);
      } else {
        appendf(s, n, "rank %d is at step %lld/%lld of %s", op->rank, st, N, opw);
      }
      break;
    case PT_CAUSE_RANK_MISSING:
      who(other, sizeof other, c, op->rank);
      appendf(s, n, "rank %d wrote no dump (it died, or its dump is not among the inputs%s) — %s waits for it on channel %d "
              "in %s at step %lld/%lld",
              p->rank,
              a->n_no_comm ? ", or it is one of the processes whose dumps name no communicator: "
                                                    "alive, never having entered"
                                                  : "",
              other, op->channel, opw, (long long)an_op_progress(op), N);
      if (rk && rk->placed) appendf(s, n, "; by rank numbering it is on %s", a->hosts.names[rk->node]);
      break;
    case PT_CAUSE_RANK_BEHIND:
      if (rk && rk->dump && rk->dump->cut)
        appendf(s, n,
                "%s: its dump is cut (\"not seen\" below) before anything of %s — rank %d waits for it there on "
                "channel %d; whether it reached the operation is not in the file",
                me, opw, op->rank, op->channel);
      else if (rk && rk->dump && op->coll_seq >= 0 && an_op_p2p(op)) {
        /* a send or receive: the k-th of its pair, against the peer's */
        const char* other_end = op->is_send ? "receive" : "send";
        const int64_t last = an_dump_p2p_latest(rk->dump, op->rank, !op->is_send);
        appendf(s, n, "%s is behind: it has not called its %s #%lld %s rank %d (not reached, or never made), which "
                "rank %d's %s waits for on channel %d in %s (",
                me, other_end, (long long)op->coll_seq, op->is_send ? "from" : "to", op->rank, op->rank,
                op->is_send ? "send" : "receive", op->channel, opw);
        if (last >= 0) appendf(s, n, "its records of them stop at #%lld)", (long long)last);
        else appendf(s, n, "its records hold none)");
      } else if (rk && rk->host_counts)
        appendf(s, n, "%s is behind: its records stop at opCount %lld — rank %d waits for it on channel %d in %s", me,
                (long long)rk->max_op_count, op->rank, op->channel, opw);
      else
        appendf(s, n,
                "%s is behind: its latest dump was taken before rank %d began %s on channel %d, which waits for "
                "it (it never reached the operation, or has not dumped since)",
                me, op->rank, opw, op->channel);
      break;
    case PT_CAUSE_SEND_MISSING:
      appendf(s, n,
              "%s has no record of a send to rank %d on channel %d in %s — rank %d's receive waits for data at step "
              "%lld/%lld",
              me, op->rank, op->channel, opw, op->rank, st, N);
      if (rk && rk->foreign > 0)
        appendf(s, n,
                "; its node's plugins refused %lld ops of another process (PXN: a rank's sends run on a peer's proxy, "
                "which does not record them), so the send may be one of those",
                (long long)rk->foreign);
      break;
    case PT_CAUSE_CIRCULAR:
      appendf(s, n, "%s, channel %d: every stuck op waits on another (a cycle); this one moved least: step %lld/%lld of %s",
              me, op->channel, st, N, opw);
      break;
    default: break;
  }
  if (p->dependents > 0) appendf(s, n, "; %d stuck op%s wait%s on it", p->dependents, p->dependents == 1 ? "" : "s",
                                 p->dependents == 1 ? "s" : "");
}
