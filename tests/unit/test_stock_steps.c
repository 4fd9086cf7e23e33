/*
 * test_stock_steps.c — what stock NCCL's step events do to an op's record:
 * the counters and times of a send step, the SendWait that takes the time
 * of the SendPeerWait tried right before it (and reads the clock when that
 * was not its own, or was tried again), and step states handed a handle of
 * another kind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxytrace/trace.h"
#include "trace/clock.h"
#include "trace/slab.h"

enum { GPU_WAIT = 8, SEND_WAIT = 9, PEER_WAIT = 20 };

static pt_trace* new_trace(void) {
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, NULL, 0), 0);
  return t;
}

/* A registered stock send op of `nsteps` steps. */
static pt_handle stock_send(pt_trace* t, int nsteps) {
  pt_op_info in = {.comm_hash = 5, .op_count = -1, .peer = 1, .nsteps = nsteps, .is_send = 1,
                   .step_driven = 1, .origin = PT_ORIGIN_NONE};
  pt_handle op = pt_op_start(t, &in);
  assert_non_null(op);
  pt_op_register(op);
  return op;
}

static pt_rec_view view(pt_handle op) {
  const pt_op* o = (const pt_op*)((uintptr_t)op & PT_ADDR_MASK & ~(uintptr_t)(PT_SLOT_BYTES - 1));
  pt_rec_view v;
  uint8_t st;
  assert_int_equal(pt_op_read(o, &st, &v), PT_READ_CONSISTENT);
  return v;
}

/* Waits until the recording clock has moved past `t`: times taken after
 * this differ from `t` even on a coarse counter. */
static void clock_past(uint64_t t) {
  while (pt_ticks() <= t) {
  }
}

static uint64_t drops(const pt_trace* t, pt_drop_reason r) {
  pt_drop_stats d;
  pt_trace_drops(t, &d);
  return d.n[r];
}

/* One send step as NCCL 2.27+ records it: POSTED at start, KERNEL_COPY_READY
 * at SendPeerWait, TRANSMITTED and sendT at SendWait stamped with the
 * SendPeerWait's time, DONE at stop. */
static void test_send_step(void** state) {
  (void)state;
  pt_trace* t = new_trace();
  pt_handle op = stock_send(t, 2);
  pt_handle s = pt_step_start(t, op, 0);
  assert_non_null(s);
  pt_rec_view v = view(op);
  assert_int_equal(v.counters[PT_CNT_POSTED], 1);
  assert_true(v.t_posted != 0);
  assert_int_equal(v.t_posted, v.t_last);
  pt_step_state(s, GPU_WAIT, -1);
  clock_past(v.t_posted);
  pt_step_state(s, PEER_WAIT, -1);
  v = view(op);
  assert_int_equal(v.counters[PT_CNT_KERNEL_COPY_READY], 1);
  const uint64_t ready = v.t_last;
  assert_true(ready > v.t_posted);
  clock_past(ready);
  pt_step_state(s, SEND_WAIT, 1 << 20);
  v = view(op);
  assert_int_equal(v.counters[PT_CNT_TRANSMITTED], 1);
  assert_int_equal(v.t_kernel, ready);   /* the time the isend was tried */
  assert_int_equal(v.t_last, ready);
  assert_int_equal(v.t_progress, ready);
  assert_int_equal(pt_trace_last_progress(t), ready);
  clock_past(ready);
  pt_handle_stop(s);
  v = view(op);
  assert_int_equal(v.counters[PT_CNT_DONE], 1);
  assert_true(v.t_last > ready);
  assert_int_equal(pt_trace_active_ops(t), 1);
  pt_handle_stop(op);
  pt_trace_destroy(t);
}

/* A SendPeerWait retried (isend found no credit): the retry reads no clock,
 * and the SendWait reads it itself — the time the isend that succeeded
 * returned, after every retry; KERNEL_COPY_READY and lastT stay where the
 * first one put them until then. */
static void test_send_wait_after_retries(void** state) {
  (void)state;
  pt_trace* t = new_trace();
  pt_handle op = stock_send(t, 4);
  pt_handle s = pt_step_start(t, op, 0);
  pt_step_state(s, PEER_WAIT, -1);
  const uint64_t first = view(op).t_last;
  clock_past(first);
  pt_step_state(s, PEER_WAIT, -1); /* the retries */
  pt_step_state(s, PEER_WAIT, -1);
  const uint64_t after_retries = pt_ticks();
  pt_rec_view v = view(op);
  assert_int_equal(v.t_last, first);
  assert_int_equal(v.counters[PT_CNT_KERNEL_COPY_READY], 1);
  clock_past(after_retries);
  pt_step_state(s, SEND_WAIT, -1);
  v = view(op);
  assert_true(v.t_kernel > after_retries); /* the SendWait's own clock read */
  assert_int_equal(v.t_last, v.t_kernel);
  assert_int_equal(v.counters[PT_CNT_TRANSMITTED], 1);
  pt_handle_stop(s);
  pt_handle_stop(op);
  pt_trace_destroy(t);
}

/* A SendWait whose step's SendPeerWait was not the trace's last one (another
 * step's came between, or there was none: NCCL 2.23-2.26 have no
 * SendPeerWait) reads the clock. */
static void test_send_wait_reads_the_clock_otherwise(void** state) {
  (void)state;
  pt_trace* t = new_trace();
  pt_handle op = stock_send(t, 4);
  pt_handle s0 = pt_step_start(t, op, 0);
  pt_handle s1 = pt_step_start(t, op, 1);
  pt_step_state(s0, PEER_WAIT, -1);
  const uint64_t ready0 = view(op).t_last;
  clock_past(ready0);
  pt_step_state(s1, PEER_WAIT, -1);
  const uint64_t ready1 = view(op).t_last;
  assert_true(ready1 > ready0);
  clock_past(ready1);
  pt_step_state(s0, SEND_WAIT, -1);
  pt_rec_view v = view(op);
  assert_int_equal(v.counters[PT_CNT_TRANSMITTED], 1);
  assert_true(v.t_kernel > ready1); /* a clock read after both */
  const uint64_t sent0 = v.t_kernel;
  clock_past(sent0);
  pt_step_state(s1, SEND_WAIT, -1); /* its SendPeerWait was the last, but a SendWait */
  v = view(op);                     /* came between */
  assert_int_equal(v.counters[PT_CNT_TRANSMITTED], 2);
  assert_true(v.t_kernel > sent0);
  /* a SendWait with no SendPeerWait at all */
  pt_handle s2 = pt_step_start(t, op, 2);
  clock_past(v.t_kernel);
  pt_step_state(s2, SEND_WAIT, -1);
  const pt_rec_view w = view(op);
  assert_int_equal(w.counters[PT_CNT_TRANSMITTED], 3);
  assert_true(w.t_kernel > v.t_kernel);
  pt_handle_stop(s0);
  pt_handle_stop(s1);
  pt_handle_stop(s2);
  pt_handle_stop(op);
  pt_trace_destroy(t);
}

/* A step state handed an op handle counts a bad state on the op's trace, a
 * task handle a process-wide bad state, anything else a bad handle; none
 * touches a record. */
static void test_step_state_on_other_handles(void** state) {
  (void)state;
  pt_trace* t = new_trace();
  pt_handle op = stock_send(t, 4);
  const uint64_t bad_state = drops(t, PT_DROP_BAD_STATE), bad_handle = drops(t, PT_DROP_BAD_HANDLE);
  pt_step_state(op, PEER_WAIT, -1);
  assert_int_equal(drops(t, PT_DROP_BAD_STATE), bad_state + 1);
  assert_int_equal(view(op).counters[PT_CNT_KERNEL_COPY_READY], 0);
  pt_step_state(pt_task_handle(0, 3, 7), SEND_WAIT, -1);
  assert_int_equal(drops(t, PT_DROP_BAD_STATE), bad_state + 2);
  static char not_ours[512] __attribute__((aligned(256)));
  pt_step_state(&not_ours[384], PEER_WAIT, -1); /* offset 128: neither op nor step */
  assert_int_equal(drops(t, PT_DROP_BAD_HANDLE), bad_handle + 1);
  pt_step_state(NULL, PEER_WAIT, -1); /* nothing to count */
  assert_int_equal(drops(t, PT_DROP_BAD_HANDLE), bad_handle + 1);
  assert_int_equal(drops(t, PT_DROP_BAD_STATE), bad_state + 2);
  pt_handle_stop(op);
  pt_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_send_step),
      cmocka_unit_test(test_send_wait_after_retries),
      cmocka_unit_test(test_send_wait_reads_the_clock_otherwise),
      cmocka_unit_test(test_step_state_on_other_handles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
