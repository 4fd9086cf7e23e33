/*
 * test_pipeline.c — a pipeline's step (tools/sim/pipeline.c): the 1F1B
 * schedule as slots, each an exchange of two neighbouring stages, and
 * where each stage stops when an exchange is held or a stage stays out.
 * Each stage's own calls are written out here from Megatron-LM's schedule
 * (warm-up, steady 1F1B rounds, cool-down) and compared with the slots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

#define MAXK 4096

static int imin(int a, int b) { return a < b ? a : b; }

/* Stage s's calls, in order: (with the next stage: 1, else 0) and the
 * directions of the exchange. */
static int expected(int P, int M, int s, int* next, int* dirs) {
  const int W = imin(P - s - 1, M), R = M - W;
  int n = 0;
  for (int i = 0; i < W; i++) {
    if (s > 0) next[n] = 0, dirs[n++] = PT_PIPE_FWD;     /* recv_forward */
    if (s < P - 1) next[n] = 1, dirs[n++] = PT_PIPE_FWD; /* send_forward */
  }
  if (R > 0 && s > 0) next[n] = 0, dirs[n++] = PT_PIPE_FWD;
  for (int i = 0; i < R; i++) {
    if (s < P - 1) next[n] = 1, dirs[n++] = PT_PIPE_FWD | PT_PIPE_BWD; /* send_forward_recv_backward */
    if (s > 0) next[n] = 0, dirs[n++] = PT_PIPE_BWD | (i < R - 1 ? PT_PIPE_FWD : 0);
  }
  for (int i = 0; i < W; i++) {
    if (s < P - 1) next[n] = 1, dirs[n++] = PT_PIPE_BWD; /* recv_backward */
    if (s > 0) next[n] = 0, dirs[n++] = PT_PIPE_BWD;     /* send_backward */
  }
  return n;
}

static void schedule_keeps_every_stage_order(void** state) {
  (void)state;
  static int lo[MAXK], dirs[MAXK], en[MAXK], ed[MAXK];
  for (int P = 2; P <= 12; P++)
    for (int M = 1; M <= 12; M++) {
      const int K = pt_sim_pipe_slots(P, M);
      assert_true(K > 0 && K <= MAXK);
      assert_int_equal(pt_sim_pipe_schedule(P, M, lo, dirs), K);
      for (int s = 0; s < P; s++) {
        const int n = expected(P, M, s, en, ed);
        int k = 0;
        for (int j = 0; j < K; j++) {
          if (lo[j] != s && lo[j] + 1 != s) continue;
          assert_true(k < n);
          assert_int_equal(lo[j] == s, en[k]); /* with the next stage, or the one before */
          assert_int_equal(dirs[j], ed[k]);
          k++;
        }
        assert_int_equal(k, n); /* every call of the stage, none more */
      }
    }
  assert_int_equal(pt_sim_pipe_slots(1, 4), 0);
  assert_int_equal(pt_sim_pipe_schedule(1, 4, lo, dirs), -1);
}

static void stops_hold_the_pipeline(void** state) {
  (void)state;
  enum { P = 4, M = 4 };
  static int lo[MAXK], dirs[MAXK];
  const int K = pt_sim_pipe_schedule(P, M, lo, dirs);
  int enters[P] = {1, 1, 1, 1}, stop[P];
  pt_sim_pipe_stops(P, K, lo, enters, NULL, stop);
  for (int s = 0; s < P; s++) assert_int_equal(stop[s], K); /* nothing holds it: every stage completes */

  /* Stage 2's first call with a send is held: it and stage 3 stop there,
   * stages 1 and 0 at their next exchange that needs the stage stopped. */
  const int j = pt_sim_pipe_fault_slot(K, lo, dirs, 2, PT_FAULT_STALL, 0);
  assert_true(j >= 0);
  assert_int_equal(lo[j], 2);
  assert_true(dirs[j] & PT_PIPE_FWD);
  unsigned char held[MAXK] = {0};
  held[j] = (unsigned char)pt_sim_pipe_held(lo, dirs, j, 2, PT_FAULT_STALL, 1, 4, 8);
  assert_int_equal(held[j], PT_PIPE_HOLD_LO | PT_PIPE_HOLD_HI); /* a stall holds both stages */
  pt_sim_pipe_stops(P, K, lo, enters, held, stop);
  assert_int_equal(stop[2], j);
  assert_int_equal(stop[3], j);
  assert_true(stop[1] > j && stop[1] < K && lo[stop[1]] == 1); /* waits on stage 2 */
  assert_true(stop[0] < K && lo[stop[0]] == 0);                 /* waits on stage 1 */

  /* A stage that dies in its last call, a recv_backward: the gradient sent
   * to it fits the buffers it posted (4 transfers, NCCL_STEPS 8), so its
   * neighbour gets through that exchange and stops only at its next one
   * with it — none: it completes the step; sent from it, the data stops. */
  const int last = pt_sim_pipe_fault_slot(K, lo, dirs, 0, PT_FAULT_KILL, M + imin(P - 1, M) - 1); /* its 7 calls */
  assert_true(last >= 0 && dirs[last] == PT_PIPE_BWD);
  memset(held, 0, sizeof held);
  held[last] = (unsigned char)pt_sim_pipe_held(lo, dirs, last, 0, PT_FAULT_KILL, 0, 4, 8);
  assert_int_equal(held[last], PT_PIPE_HOLD_LO);
  pt_sim_pipe_stops(P, K, lo, enters, held, stop);
  assert_int_equal(stop[0], last);
  for (int s = 1; s < P; s++) assert_int_equal(stop[s], K);
  assert_int_equal(pt_sim_pipe_held(lo, dirs, last, 0, PT_FAULT_KILL, 0, 12, 8), PT_PIPE_HOLD_LO | PT_PIPE_HOLD_HI);
  const int fwd = pt_sim_pipe_fault_slot(K, lo, dirs, 0, PT_FAULT_KILL, 0); /* a send_forward of the dead stage */
  assert_int_equal(pt_sim_pipe_held(lo, dirs, fwd, 0, PT_FAULT_KILL, 2, 4, 8), PT_PIPE_HOLD_LO | PT_PIPE_HOLD_HI);
  assert_int_equal(pt_sim_pipe_held(lo, dirs, fwd, 0, PT_FAULT_KILL, 4, 4, 8), PT_PIPE_HOLD_LO);

  /* A stage out of the step: it enters none, its neighbours stop at their
   * first exchange with it. */
  enters[1] = 0;
  pt_sim_pipe_stops(P, K, lo, enters, NULL, stop);
  assert_int_equal(stop[1], -1);
  int first0 = -1, first2 = -1;
  for (int k = 0; k < K; k++) {
    if (first0 < 0 && lo[k] == 0) first0 = k;
    if (first2 < 0 && lo[k] == 1) first2 = k;
  }
  assert_int_equal(stop[0], first0);
  assert_int_equal(stop[2], first2);

  /* A no-recv strikes a call with a receive: the last stage's are all
   * with the stage before, the first one its recv_forward. */
  const int r = pt_sim_pipe_fault_slot(K, lo, dirs, P - 1, PT_FAULT_NO_RECV, 0);
  assert_int_equal(lo[r], P - 2);
  assert_int_equal(dirs[r], PT_PIPE_FWD);
  /* the first stage receives only backward: its first such call */
  const int b = pt_sim_pipe_fault_slot(K, lo, dirs, 0, PT_FAULT_NO_RECV, 0);
  assert_true(dirs[b] & PT_PIPE_BWD);
  /* no call past the stage's own */
  assert_int_equal(pt_sim_pipe_fault_slot(K, lo, dirs, 0, PT_FAULT_KILL, 2 * M + 1), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(schedule_keeps_every_stage_order),
      cmocka_unit_test(stops_hold_the_pipeline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
