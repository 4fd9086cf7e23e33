/*
 * workload.c — the job and its schedule.
 *
 * N ranks on M nodes (ranks numbered node by node), one communicator, C
 * channels. The job runs `iters` iterations of the configured calls; each
 * call of each iteration is one batch. For every batch the schedule lists
 * each rank's proxy ops — one per (channel, peer, direction) — and only
 * edges that leave the node have them, as only the network transport has
 * proxy ops (spec rccl-proxytrace.md §4.5).
 *
 *   allreduce  ring algorithm. Channel c's ring visits the nodes in order
 *              and, inside node n, the local ranks starting at local index
 *              c mod rpn, so different channels put different ranks on the
 *              network. The rank leaving a node sends to the rank entering
 *              the next one. nSteps follows NCCL's ring schedule: per
 *              channel, loops of nranks chunks, 2(nranks-1) ring steps per
 *              loop, chunkSteps raw steps per ring step.
 *   sendrecv   every rank sends to the rank with its local index on the next
 *              node and receives from the one on the previous node, on every
 *              channel, SIMPLE protocol, one raw step per transfer.
 *   reducescatter, allgather  the same ring, n-1 ring steps a loop
 *              (the all-reduce's two halves), SIZE the whole buffer of all
 *              ranks' parts; pattern Ring; chunks and slices as the
 *              all-reduce's (REDUCESCATTER_/ALLGATHER_CHUNKSTEPS, _SLICESTEPS).
 *              NCCL numbers each function's calls apart (seqNumber): the
 *              op keeps its function's count (func_seq).
 *   alltoall   one group of sends and receives (ncclGroupStart, a ncclSend
 *              and a ncclRecv per peer, ncclGroupEnd, as PyTorch's
 *              all_to_all and an expert-parallel MoE layer make it): every
 *              rank sends SIZE/ranks to every other rank, on every channel,
 *              peers in NCCL's p2p rounds (round d: send to r+d, receive
 *              from r-d), as sendrecv otherwise. Each peer is a connection
 *              of its own, with its own step base, which sendrecv's share.
 *              A p2p call's opCount is its channel's p2p count, the same for
 *              every peer of the group.
 *
 * Step sizes are NCCL's buffer per step: SIMPLE 4 MiB / 8 steps, LL 32 KiB
 * of data, LL128 576000 bytes of data. Allreduce on SIMPLE moves chunks of
 * 4 raw steps in slices of 2 (ALLREDUCE_CHUNKSTEPS, _SLICESTEPS).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NCCL_STEPS 8

const char* pt_sim_call_name(int kind) {
  switch (kind) {
    case PT_SIM_ALLREDUCE: return "allreduce";
    case PT_SIM_ALLTOALL: return "alltoall";
    case PT_SIM_REDUCESCATTER: return "reducescatter";
    case PT_SIM_ALLGATHER: return "allgather";
    case PT_SIM_PIPELINE: return "pipeline";
    default: return "sendrecv";
  }
}

int pt_sim_ring_coll(int kind) {
  return kind == PT_SIM_ALLREDUCE || kind == PT_SIM_REDUCESCATTER || kind == PT_SIM_ALLGATHER;
}

/* An all-reduce's ring runs a reduce-scatter then an all-gather: 2(n-1)
 * steps a loop; each of those alone n-1 (runRing, src/device/all_reduce.h,
 * reduce_scatter.h, all_gather.h). */
int pt_sim_ring_steps(int kind, int n) { return kind == PT_SIM_ALLREDUCE ? 2 * (n - 1) : n - 1; }

/* ncclFunc_t's collectives, by index (src/include/nccl_common.h) */
static const char* const nccl_funcs[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};

int pt_sim_coll_func_idx(int kind) {
  return kind == PT_SIM_REDUCESCATTER ? 3 : kind == PT_SIM_ALLGATHER ? 2 : 4;
}

const char* pt_sim_coll_func(int kind) { return nccl_funcs[pt_sim_coll_func_idx(kind)]; }

int pt_sim_func_index(const char* name) {
  for (int i = 0; i < (int)(sizeof nccl_funcs / sizeof *nccl_funcs); i++)
    if (!strcmp(name, nccl_funcs[i])) return i;
  return -1;
}
const char* pt_sim_proto_name(int proto) {
  return proto == PT_SIM_PROTO_LL ? "LL" : proto == PT_SIM_PROTO_LL128 ? "LL128" : "SIMPLE";
}

static int proto_step_bytes(int proto) {
  switch (proto) {
    case PT_SIM_PROTO_LL: return 32768;
    case PT_SIM_PROTO_LL128: return 576000;
    default: return (4 << 20) / NCCL_STEPS;
  }
}

typedef struct {
  pt_sim_op* v;
  size_t n, cap;
} opvec;

static pt_sim_op* push(opvec* v) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 256;
    pt_sim_op* nv = realloc(v->v, cap * sizeof *nv);
    if (!nv) return NULL;
    v->v = nv;
    v->cap = cap;
  }
  pt_sim_op* op = &v->v[v->n++];
  memset(op, 0, sizeof *op);
  for (int k = 0; k < 11; k++) op->seen.cnt[k] = 0;
  op->seen.cnt[10] = -1; /* FIFO_SZ_OR_HEAD_CACHE starts at -1 */
  op->seen.last_kind = 100;
  op->slow = 1;
  op->slow_gpu = 1;
  op->slow_host = 1;
  return op;
}

/* A network op of rank r with `peer` on channel ch, a send (dir 0) or a
 * receive (dir 1), of batch b and call `call`, next in schedule order. */
static pt_sim_op* push_net(opvec* v, const pt_sim_job* job, int r, int peer, int ch, int dir, int b, int call,
                           int* seq) {
  pt_sim_op* op = push(v);
  if (!op) return NULL;
  op->rank = op->proxy_rank = r;
  op->peer = peer;
  op->channel = ch;
  op->is_send = !dir;
  op->batch = b;
  op->call = call;
  op->seq = (*seq)++;
  op->kind = PT_OPK_NET;
  op->comm_hash = job->comm_hash;
  return op;
}

static int by_batch_then_proxy(const void* a, const void* b) {
  const pt_sim_op* x = a;
  const pt_sim_op* y = b;
  if (x->batch != y->batch) return x->batch < y->batch ? -1 : 1;
  if (x->proxy_rank != y->proxy_rank) return x->proxy_rank < y->proxy_rank ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq); /* schedule order */
}

/* A pipeline's ops (pipeline.c): per slot, the forward send of its lower
 * stage and the receive of its upper one, the backward send the other
 * way, on every channel, as sendrecv's. A stage's connections to its two
 * neighbours have step bases of their own; its p2p calls are counted per
 * stage (RCCL's opCount: its channels' p2p count) and per peer and
 * direction (NVIDIA's). */
static int pipe_ops(const pt_sim_config* c, pt_sim_job* job, opvec* v, int* seq) {
  const int n = job->nranks, C = job->channels, K = job->iter_batches;
  int64_t* base = calloc((size_t)n * (size_t)C * 4, sizeof *base); /* [r][c][side][dir] */
  int64_t* calls = calloc((size_t)n * 5, sizeof *calls);            /* [r]: calls; [r][side][dir] */
  if (!base || !calls) {
    free(base);
    free(calls);
    return -1;
  }
  const size_t bytes = c->calls[0].bytes ? c->calls[0].bytes : 1;
  const size_t chan_bytes = (bytes + (size_t)C - 1) / (size_t)C;
  const int step_bytes = proto_step_bytes(PT_SIM_PROTO_SIMPLE);
  int raw = (int)((chan_bytes + (size_t)step_bytes - 1) / (size_t)step_bytes);
  if (raw < 1) raw = 1;
  for (int b = 0; b < job->n_batches; b++) {
    const int lo = job->pipe_lo[b] = job->pipe_lo[b % K], dirs = job->pipe_dirs[b] = job->pipe_dirs[b % K];
    for (int r = lo; r <= lo + 1; r++) {
      const int side = r == lo, peer = r == lo ? lo + 1 : lo; /* side 1: with the next stage */
      for (int dir = 1; dir >= 0; dir--) { /* a receive, then a send */
        const int fwd = (r == lo) == !dir;  /* the lower stage sends forward */
        if (!(dirs & (fwd ? PT_PIPE_FWD : PT_PIPE_BWD))) continue;
        for (int ch = 0; ch < C; ch++) {
          pt_sim_op* op = push_net(v, job, r, peer, ch, dir, b, 0, seq);
          if (!op) goto oom;
          op->op_count = (calls[r] << 1) | 1;
          op->func_seq = calls[(size_t)n + ((size_t)r * 2 + (size_t)side) * 2 + (size_t)dir];
          op->proto = PT_SIM_PROTO_SIMPLE;
          op->func_idx = op->is_send ? 6 : 7;
          op->pattern = op->is_send ? 13 : 14;
          op->total_bytes = (uint32_t)bytes;
          op->nbytes = (uint32_t)chan_bytes;
          op->raw = op->n = raw;
          op->slice = op->chunk_xfers = 1;
          op->step_bytes = op->chunk_size = op->xfer_bytes = step_bytes;
          size_t rest = chan_bytes - (size_t)(raw - 1) * (size_t)step_bytes;
          op->last_bytes = rest > 0 && rest < (size_t)step_bytes ? (int)rest : step_bytes;
          int64_t* bp = &base[(((size_t)r * (size_t)C + (size_t)ch) * 2 + (size_t)side) * 2 + (size_t)dir];
          op->base = *bp;
          *bp += raw;
        }
      }
    }
    for (int r = lo; r <= lo + 1; r++) { /* the calls each made */
      const int side = r == lo;
      calls[r]++;
      for (int dir = 0; dir < 2; dir++) {
        const int fwd = (r == lo) == !dir;
        if (dirs & (fwd ? PT_PIPE_FWD : PT_PIPE_BWD)) calls[(size_t)n + ((size_t)r * 2 + (size_t)side) * 2 + (size_t)dir]++;
      }
    }
  }
  free(base);
  free(calls);
  return 0;
oom:
  free(base);
  free(calls);
  return -1;
}

int pt_sim_job_build(const pt_sim_config* c, pt_sim_job* job, FILE* err) {
  memset(job, 0, sizeof *job);
  job->nodes = c->nodes;
  job->rpn = c->ranks_per_node;
  job->nranks = c->nodes * c->ranks_per_node;
  job->channels = c->channels;
  job->n_calls = c->n_calls;
  job->iter_batches = sim_iter_batches(c);
  job->n_batches = c->iters * job->iter_batches;
  job->window = NCCL_STEPS;
  job->hung_batch = -1;
  const int pipeline = c->calls[0].kind == PT_SIM_PIPELINE;
  /* One communicator: every rank has the same hash. */
  job->comm_hash = sim_mix(c->seed ^ 0x70726f7879747261ull) & 0x7fffffffffffffffull;
  int n = job->nranks, C = job->channels;
  if (n < 1 || C < 1 || job->n_batches < 1) {
    fprintf(err, "proxytrace sim: empty job\n");
    return -1;
  }
  /* Every op is kept, with its ground truth: bound the job, not the run. */
  double estimate = 0;
  for (int b = 0; b < job->n_batches; b++)
    estimate += (double)(pipeline ? 2 : n) * C * 2 * (c->calls[b % c->n_calls].kind == PT_SIM_ALLTOALL ? n - 1 : 1);
  if (estimate > PT_SIM_MAX_OPS) {
    fprintf(err,
            "proxytrace sim: the job has about %.0f proxy ops, more than the %d the emulator keeps; "
            "use fewer iterations or channels (larger messages give longer ops)\n",
            estimate, PT_SIM_MAX_OPS);
    return -1;
  }
  opvec v = {0};
  int64_t* conn = NULL;
  int64_t* peer_seq = NULL; /* with an all-to-all: p2p calls so far per (rank, peer, direction) */
  int* edges = NULL;
  job->ring = malloc((size_t)C * (size_t)n * sizeof *job->ring);
  job->dead_rank = calloc((size_t)n, sizeof *job->dead_rank);
  int64_t* base = calloc((size_t)n * (size_t)C * 4, sizeof *base); /* [r][c][kind][dir] */
  int64_t* p2p_count = calloc((size_t)C, sizeof *p2p_count);
  job->last_batch = malloc(sizeof(int) * (size_t)n);
  if (!job->ring || !job->dead_rank || !base || !p2p_count || !job->last_batch) goto oom;
  for (int r = 0; r < n; r++) job->last_batch[r] = job->n_batches - 1;
  for (int f = 0; f < PT_SIM_MAX_FAULTS; f++)
    job->fault_batch[f] = (c->fault_iter < 0 ? c->iters - 1 : c->fault_iter) * job->iter_batches + c->fault_call;
  for (int ch = 0; ch < C; ch++) {
    int q = 0;
    for (int node = 0; node < job->nodes; node++)
      for (int i = 0; i < job->rpn; i++) job->ring[ch * n + q++] = node * job->rpn + (ch + i) % job->rpn;
  }

  /* With an all-to-all, a rank's p2p connections are one per peer: a
   * step base per (rank, channel, peer, direction), which sendrecv's
   * connections share. */
  int a2a = 0;
  for (int k = 0; k < c->n_calls; k++) a2a |= c->calls[k].kind == PT_SIM_ALLTOALL;
  if (a2a) {
    if (n > PT_SIM_ALLTOALL_MAX_RANKS) {
      fprintf(err, "proxytrace sim: an alltoall job has at most %d ranks, not %d\n", PT_SIM_ALLTOALL_MAX_RANKS, n);
      free(base);
      free(p2p_count);
      return -1;
    }
    conn = calloc((size_t)n * (size_t)n * (size_t)C * 2, sizeof *conn);
    peer_seq = calloc((size_t)n * (size_t)n * 2, sizeof *peer_seq);
    if (!conn || !peer_seq) goto oom;
  }

  int64_t coll_count = 0, func_count[5] = {0};
  int seq = 0;
  if (pipeline) {
    job->pipe_lo = malloc(sizeof(int) * (size_t)job->n_batches);
    job->pipe_dirs = malloc(sizeof(int) * (size_t)job->n_batches);
    if (!job->pipe_lo || !job->pipe_dirs) goto oom;
    if (pt_sim_pipe_schedule(n, c->microbatches, job->pipe_lo, job->pipe_dirs) != job->iter_batches) {
      fprintf(err, "proxytrace sim: no 1F1B schedule for %d stages and %d microbatches\n", n, c->microbatches);
      free(base);
      free(p2p_count);
      return -1;
    }
    if (pipe_ops(c, job, &v, &seq) != 0) goto oom;
  }
  edges = malloc(sizeof(int) * 2 * (size_t)(2 * n + 2)); /* (peer, dir) of one rank and channel */
  if (!edges) goto oom;
  for (int b = 0; b < job->n_batches && !pipeline; b++) {
    const pt_sim_call* call = &c->calls[b % c->n_calls];
    const int ar = pt_sim_ring_coll(call->kind), all = call->kind == PT_SIM_ALLTOALL;
    int64_t p2p_base_count[64];
    if (!ar)
      for (int ch = 0; ch < C && ch < 64; ch++) p2p_base_count[ch] = p2p_count[ch]++;
    int64_t coll_op = coll_count, func_seq = func_count[call->kind];
    if (ar) coll_count++, func_count[call->kind]++;
    /* an all-to-all sends bytes/n to each rank */
    size_t peer_bytes = all ? call->bytes / (size_t)n : call->bytes;
    if (peer_bytes < 1) peer_bytes = 1;
    size_t chan_bytes = (peer_bytes + (size_t)C - 1) / (size_t)C;
    for (int r = 0; r < n; r++) {
      for (int ch = 0; ch < C; ch++) {
        /* The edges of this rank on this channel that leave its node, a
         * receive before its send: the ring's neighbours; sendrecv's next
         * and previous node; an all-to-all's peers in NCCL's p2p rounds
         * (round d: send to r+d, receive from r-d). */
        int ne = 0;
        if (ar) {
          if (n >= 2 && job->nodes >= 2) {
            int q = -1;
            for (int i = 0; i < n; i++)
              if (job->ring[ch * n + i] == r) q = i;
            for (int dir = 1; dir >= 0; dir--) {
              int nq = dir ? (q - 1 + n) % n : (q + 1) % n;
              edges[2 * ne] = job->ring[ch * n + nq];
              edges[2 * ne++ + 1] = dir;
            }
          }
        } else if (!all) {
          if (job->nodes >= 2) {
            edges[0] = (r - job->rpn + n) % n, edges[1] = 1;
            edges[2] = (r + job->rpn) % n, edges[3] = 0;
            ne = 2;
          }
        } else {
          for (int d = 1; d < n; d++) {
            edges[2 * ne] = (r - d + n) % n, edges[2 * ne++ + 1] = 1;
            edges[2 * ne] = (r + d) % n, edges[2 * ne++ + 1] = 0;
          }
        }
        for (int e = 0; e < ne; e++) {
          const int peer = edges[2 * e], dir = edges[2 * e + 1];
          if (peer / job->rpn == r / job->rpn) continue; /* intra-node edge: no proxy op */
          int slice, chunk_steps, step_bytes, raw, proto;
          int64_t op_count;
          if (ar) {
            proto = c->proto;
            slice = proto == PT_SIM_PROTO_SIMPLE ? 2 : 1;
            chunk_steps = proto == PT_SIM_PROTO_SIMPLE ? 4 : 1;
            step_bytes = proto_step_bytes(proto);
            size_t loop_bytes = (size_t)n * (size_t)step_bytes * (size_t)chunk_steps;
            size_t loops = (chan_bytes + loop_bytes - 1) / loop_bytes;
            if (loops < 1) loops = 1;
            raw = (int)(loops * (size_t)pt_sim_ring_steps(call->kind, n) * (size_t)chunk_steps);
            op_count = coll_op << 1;
          } else {
            proto = PT_SIM_PROTO_SIMPLE;
            slice = 1;
            chunk_steps = 1;
            step_bytes = proto_step_bytes(proto);
            raw = (int)((chan_bytes + (size_t)step_bytes - 1) / (size_t)step_bytes);
            if (raw < 1) raw = 1;
            op_count = (p2p_base_count[ch < 64 ? ch : 63] << 1) | 1;
          }
          pt_sim_op* op = push_net(&v, job, r, peer, ch, dir, b, b % c->n_calls, &seq);
          if (!op) goto oom;
          op->op_count = op_count;
          /* NVIDIA numbers p2p calls per peer and direction: with fixed
           * peers (sendrecv alone) that is the channel's p2p count */
          op->func_seq = ar ? func_seq
                         : peer_seq ? peer_seq[((size_t)r * (size_t)n + (size_t)peer) * 2 + (size_t)dir]
                                    : p2p_base_count[ch < 64 ? ch : 63];
          op->proto = proto;
          if (ar) {
            op->func_idx = pt_sim_coll_func_idx(call->kind);
            op->pattern = call->kind == PT_SIM_ALLREDUCE ? 1 : 0; /* RingTwice, Ring */
            op->total_bytes = 0;
          } else {
            op->func_idx = op->is_send ? 6 : 7; /* Send / Recv when diag is on */
            op->pattern = op->is_send ? 13 : 14;
            op->total_bytes = (uint32_t)peer_bytes;
          }
          op->nbytes = (uint32_t)chan_bytes;
          op->raw = raw;
          op->slice = slice;
          op->n = raw / slice;
          op->step_bytes = step_bytes;
          op->chunk_size = step_bytes * chunk_steps;
          op->xfer_bytes = step_bytes * slice;
          op->chunk_xfers = chunk_steps / slice;
          op->last_bytes = op->xfer_bytes;
          if (!ar) {
            size_t rest = chan_bytes - (size_t)(op->n - 1) * (size_t)op->xfer_bytes;
            if (rest > 0 && rest < (size_t)op->xfer_bytes) op->last_bytes = (int)rest;
          }
          int64_t* bp = !ar && conn ? &conn[(((size_t)r * (size_t)n + (size_t)peer) * (size_t)C + (size_t)ch) * 2 + (size_t)dir]
                                    : &base[(((size_t)r * (size_t)C + (size_t)ch) * 2 + (size_t)!ar) * 2 + (size_t)dir];
          op->base = *bp;
          *bp += raw;
        }
      }
    }
    /* The p2p calls each rank made (app.c): sendrecv's two, where ranks
     * have network ops, an all-to-all's to every other rank. */
    for (int r = 0; peer_seq && !ar && r < n; r++) {
      if (all) {
        for (int q = 0; q < n; q++)
          if (q != r) peer_seq[((size_t)r * (size_t)n + (size_t)q) * 2]++, peer_seq[((size_t)r * (size_t)n + (size_t)q) * 2 + 1]++;
      } else if (job->nodes >= 2) {
        peer_seq[((size_t)r * (size_t)n + (size_t)((r + job->rpn) % n)) * 2]++;
        peer_seq[((size_t)r * (size_t)n + (size_t)((r - job->rpn + n) % n)) * 2 + 1]++;
      }
    }
  }
  free(edges);
  free(conn);
  free(peer_seq);
  edges = NULL;
  conn = NULL;
  peer_seq = NULL;
  /* Faults that move or add ops. */
  for (int f = 0; f < c->n_faults; f++) {
    const pt_sim_fault* ft = &c->faults[f];
    if (ft->kind == PT_FAULT_PXN) {
      for (size_t i = 0; i < v.n; i++)
        if (v.v[i].rank == ft->rank && v.v[i].is_send && v.v[i].kind == PT_OPK_NET &&
            (ft->channel < 0 || v.v[i].channel == ft->channel)) {
          v.v[i].proxy_rank = ft->arg;
          /* another process's proxy: its plugin refuses the op (pid) */
          v.v[i].foreign = ft->arg / c->ranks_per_process != ft->rank / c->ranks_per_process;
        }
    } else if (ft->kind == PT_FAULT_LEAK_OPS) {
      for (int b = 0; b < job->n_batches; b++)
        for (int r = 0; r < n; r++) {
          if ((ft->rank >= 0 && r != ft->rank) || !sim_job_calls(job, r, b)) continue;
          for (int k = 0; k < ft->arg; k++) {
            pt_sim_op* op = push(&v);
            if (!op) goto oom;
            op->rank = op->proxy_rank = r;
            op->peer = (r / job->rpn) * job->rpn + (r % job->rpn + 1) % job->rpn;
            op->channel = k % C;
            op->is_send = 0;
            op->batch = b;
            op->call = b % c->n_calls;
            op->seq = seq++;
            op->kind = PT_OPK_LEAK;
            op->comm_hash = job->comm_hash;
            op->n = op->raw = op->slice = 1;
            op->step_bytes = op->xfer_bytes = op->last_bytes = proto_step_bytes(PT_SIM_PROTO_SIMPLE);
            op->chunk_size = op->step_bytes;
            op->chunk_xfers = 1;
          }
        }
    }
  }
  if (v.n) qsort(v.v, v.n, sizeof *v.v, by_batch_then_proxy); /* a job inside one node has no op */
  job->ops = v.v;
  job->n_ops = v.n;
  size_t cells = (size_t)job->n_batches * (size_t)n;
  job->first = calloc(cells, sizeof *job->first);
  job->count = calloc(cells, sizeof *job->count);
  if (!job->first || !job->count) goto oom;
  for (size_t i = v.n; i-- > 0;) {
    size_t cell = (size_t)v.v[i].batch * (size_t)n + (size_t)v.v[i].proxy_rank;
    job->first[cell] = i;
    job->count[cell]++;
  }
  free(base);
  free(p2p_count);
  return 0;
oom:
  free(base);
  free(p2p_count);
  free(conn);
  free(peer_seq);
  free(edges);
  free(v.v);
  fprintf(err, "proxytrace sim: out of memory building the job\n");
  return -1;
}

void pt_sim_job_free(pt_sim_job* job) {
  free(job->ops);
  free(job->first);
  free(job->count);
  free(job->dead_rank);
  free(job->ring);
  free(job->pipe_lo);
  free(job->pipe_dirs);
  free(job->last_batch);
  memset(job, 0, sizeof *job);
}
