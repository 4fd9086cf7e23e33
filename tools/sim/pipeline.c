/*
 * pipeline.c — a pipeline-parallel communicator's training step: the
 * 1F1B schedule of M microbatches over P stages, as Megatron-LM runs it
 * (megatron/core/pipeline_parallel/schedules.py,
 * forward_backward_pipelining_without_interleaving, with batched p2p:
 * each exchange one ncclGroupStart … ncclGroupEnd of a ncclSend and/or
 * a ncclRecv).
 *
 * Stage s (rank s of the communicator) warms up with W = min(P-s-1, M)
 * forward passes, runs R = M - W steady one-forward-one-backward rounds
 * and cools down with W backward passes. Its p2p calls, in order:
 *
 *   warmup    W x  recv_forward (from s-1), send_forward (to s+1)
 *   R > 0          recv_forward
 *   steady    R x  send_forward_recv_backward (s+1, one group),
 *                  send_backward_recv_forward (s-1, one group; the last
 *                  round send_backward only)
 *   cooldown  W x  recv_backward (from s+1), send_backward (to s-1)
 *
 * (the first stage has no s-1, the last no s+1: those calls are none).
 * Each call is with one neighbour, and the neighbour's matching call moves
 * the same directions: s's send_forward meets s+1's recv_forward, s's
 * send_forward_recv_backward s+1's send_backward_recv_forward, s's
 * recv_backward s+1's send_backward. So the step is a list of exchanges
 * of a pair (s, s+1), each moving forward (s to s+1), backward (s+1 to
 * s) or both: a slot. The slots are put in one order that keeps every
 * stage's own order (pt_sim_pipe_schedule); the emulator runs each slot as
 * a batch in which only its two stages make a call.
 *
 * A stage stops at its first call that does not complete: an exchange
 * completes once both stages reached it, unless a fault holds it
 * (pt_sim_pipe_stops). A stopped stage holds every later exchange it has
 * a part in, so one stage that stops holds the whole pipeline, its
 * neighbours first.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int imin(int a, int b) { return a < b ? a : b; }

/* Stage s's calls, in its order: side (0: with s-1, 1: with s+1) and the
 * slot's directions (PT_PIPE_FWD, PT_PIPE_BWD). n calls; returns n. */
static int stage_calls(int P, int M, int s, int* side, int* dirs) {
  const int W = imin(P - s - 1, M), R = M - W;
  int n = 0;
#define CALL(sd, d) (side[n] = (sd), dirs[n] = (d), n++)
  for (int i = 0; i < W; i++) {
    if (s > 0) CALL(0, PT_PIPE_FWD);
    if (s < P - 1) CALL(1, PT_PIPE_FWD);
  }
  if (R > 0 && s > 0) CALL(0, PT_PIPE_FWD);
  for (int i = 0; i < R; i++) {
    if (s < P - 1) CALL(1, PT_PIPE_FWD | PT_PIPE_BWD);
    if (s > 0) CALL(0, PT_PIPE_BWD | (i < R - 1 ? PT_PIPE_FWD : 0));
  }
  for (int i = 0; i < W; i++) {
    if (s < P - 1) CALL(1, PT_PIPE_BWD);
    if (s > 0) CALL(0, PT_PIPE_BWD);
  }
#undef CALL
  return n;
}

int pt_sim_pipe_slots(int P, int M) {
  if (P < 2 || M < 1) return 0;
  int k = 0;
  for (int s = 0; s < P - 1; s++) k += M + imin(P - s - 1, M);
  return k;
}

int pt_sim_pipe_schedule(int P, int M, int* lo, int* dirs) {
  const int K = pt_sim_pipe_slots(P, M);
  if (K <= 0) return -1;
  /* every stage's calls: 2W + (R > 0) + 2R + 2W <= 4M + 1 */
  const int per = 4 * M + 2;
  int* side = malloc(sizeof(int) * (size_t)P * (size_t)per * 2 + sizeof(int) * (size_t)P * 2);
  if (!side) return -1;
  int* d = side + (size_t)P * (size_t)per;
  int* count = d + (size_t)P * (size_t)per;
  int* at = count + P;
  for (int s = 0; s < P; s++) {
    count[s] = stage_calls(P, M, s, side + (size_t)s * per, d + (size_t)s * per);
    at[s] = 0;
  }
  /* Each round, the lowest pair whose next calls meet exchanges: an order
   * that keeps every stage's own (a pair never waits on a later slot). */
  int k = 0;
  while (k < K) {
    int s = 0;
    for (; s < P - 1; s++) {
      const size_t a = (size_t)s * per + (size_t)at[s], b = (size_t)(s + 1) * per + (size_t)at[s + 1];
      if (at[s] < count[s] && at[s + 1] < count[s + 1] && side[a] == 1 && side[b] == 0 && d[a] == d[b]) break;
    }
    if (s == P - 1) break; /* no pair meets: not a schedule (cannot happen) */
    lo[k] = s;
    dirs[k] = d[(size_t)s * per + (size_t)at[s]];
    at[s]++, at[s + 1]++, k++;
  }
  free(side);
  return k == K ? K : -1;
}

void pt_sim_pipe_stops(int P, int K, const int* lo, const int* enters, const unsigned char* held, int* stop) {
  for (int s = 0; s < P; s++) stop[s] = enters[s] ? K : -1;
  /* The slots in order: each stage has decided its earlier ones. A stage
   * gets through an exchange that both reached unless the fault holds it. */
  for (int j = 0; j < K; j++) {
    const int a = lo[j], b = lo[j] + 1;
    const int ra = stop[a] == K, rb = stop[b] == K; /* still running */
    const int h = held ? held[j] : 0;
    if (ra && !(rb && !(h & PT_PIPE_HOLD_LO))) stop[a] = j;
    if (rb && !(ra && !(h & PT_PIPE_HOLD_HI))) stop[b] = j;
  }
}

int pt_sim_pipe_held(const int* lo, const int* dirs, int j, int rank, pt_fault_kind kind, int step, int U, int W) {
  const int low = rank == lo[j];
  const int mine = low ? PT_PIPE_HOLD_LO : PT_PIPE_HOLD_HI, other = low ? PT_PIPE_HOLD_HI : PT_PIPE_HOLD_LO;
  if (kind != PT_FAULT_KILL) return mine | other;
  /* A stage that dies stops its GPU at `step`: the data it sends its
   * neighbour stops there, and what it receives fills the buffers it had
   * posted, NCCL_STEPS beyond what it consumed (truth.c, sendrecv). */
  const int sends = dirs[j] & (low ? PT_PIPE_FWD : PT_PIPE_BWD), recvs = dirs[j] & (low ? PT_PIPE_BWD : PT_PIPE_FWD);
  return mine | ((sends && step < U) || (recvs && U > step + W) ? other : 0);
}

int pt_sim_pipe_fault_slot(int K, const int* lo, const int* dirs, int rank, pt_fault_kind kind, int nth) {
  for (int j = 0; j < K; j++) {
    const int a = lo[j], b = lo[j] + 1;
    if (rank != a && rank != b) continue;
    /* the rank's own sends and receives in this slot */
    const int sends = rank == a ? dirs[j] & PT_PIPE_FWD : dirs[j] & PT_PIPE_BWD;
    const int recvs = rank == a ? dirs[j] & PT_PIPE_BWD : dirs[j] & PT_PIPE_FWD;
    const int fits = kind == PT_FAULT_STALL ? sends != 0 : kind == PT_FAULT_NO_RECV ? recvs != 0 : 1;
    if (fits && nth-- == 0) return j;
  }
  return -1;
}

int sim_iter_batches(const pt_sim_config* c) {
  if (c->n_calls == 1 && c->calls[0].kind == PT_SIM_PIPELINE)
    return pt_sim_pipe_slots(c->nodes * c->ranks_per_node, c->microbatches);
  return c->n_calls;
}
