/*
 * test_handles.c — handles the host should not hand back and slabs under
 * pressure: a stale op handle after 10 000 reuses of its slot, a stale step
 * handle of the slot's previous op, a step whose parent is an op of another
 * (even finalized) trace, never-registered ops giving way to network ops,
 * and step arithmetic at the ends of int64.
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
#include "trace/format.h"
#include "trace/slab.h"

static pt_trace* new_trace(uint32_t slots) {
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = slots;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  return t;
}

static pt_op_info info(int64_t opcount, int nsteps, int step_driven) {
  pt_op_info i = {.comm_hash = 3, .op_count = opcount, .channel = 0, .peer = 1,
                  .nsteps = nsteps, .is_send = 1, .step_driven = step_driven};
  return i;
}

static uint64_t drops(const pt_trace* t, pt_drop_reason r) {
  pt_drop_stats d;
  pt_trace_drops(t, &d);
  return d.n[r];
}

static uintptr_t slot_addr(pt_handle h) {
  return (uintptr_t)h & PT_ADDR_MASK & ~(uintptr_t)(PT_SLOT_BYTES - 1);
}

static int64_t counter(pt_handle op, int kind) {
  const pt_op* o = (const pt_op*)slot_addr(op);
  return atomic_load(&o->rec.counters[kind]);
}

/* All slots but one hold registered ops, so every new op lands in that one. */
static void fill_all_but_one(pt_trace* t, uint32_t slots) {
  for (uint32_t i = 1; i < slots; i++) {
    pt_op_info in = info(1000 + i, 4, 0);
    pt_handle h = pt_op_start(t, &in);
    assert_non_null(h);
    pt_op_register(h);
  }
}

/* ---- stale op handles ---- */

static void test_stale_op_handle_after_10000_reuses(void** state) {
  (void)state;
  pt_trace* t = new_trace(16);
  pt_op_info in = info(1, 4, 0);
  pt_handle old = pt_op_start(t, &in); /* slot 0: first on the free list */
  pt_op_register(old);
  pt_op_update(old, PT_CNT_DONE, 4, 0);
  pt_handle_stop(old);
  fill_all_but_one(t, 16);
  pt_handle h = NULL;
  /* The slot of `old`, 10 240 times over: a multiple of 64, where 6-bit
   * generations would make the first handle equal the live one again. */
  enum { REUSES = 10240 };
  for (int i = 0; i < REUSES; i++) {
    pt_op_info ni = info(2, 4, 0);
    h = pt_op_start(t, &ni);
    assert_true(slot_addr(h) == slot_addr(old));
    assert_ptr_not_equal(h, old);
    pt_op_register(h);
    if (i < REUSES - 1) {
      pt_op_update(h, PT_CNT_DONE, 4, 0);
      pt_handle_stop(h);
    }
  }
  /* The slot's latest op is live; a late stop of its first one fails. */
  const uint64_t stale = drops(t, PT_DROP_STALE_HANDLE);
  const uint32_t active = pt_trace_active_ops(t);
  pt_handle_stop(old);
  pt_op_update(old, PT_CNT_POSTED, 3, 0);
  pt_op_register(old);
  assert_int_equal(drops(t, PT_DROP_STALE_HANDLE), stale + 3);
  assert_int_equal(pt_trace_active_ops(t), active);
  assert_int_equal(counter(h, PT_CNT_POSTED), 0);
  /* ... and the live op still takes its own handle */
  pt_op_update(h, PT_CNT_POSTED, 2, 0);
  assert_int_equal(counter(h, PT_CNT_POSTED), 2);
  pt_trace_destroy(t);
}

static int cmp_handles(const void* a, const void* b) {
  const uintptr_t x = (uintptr_t) * (void* const*)a, y = (uintptr_t) * (void* const*)b;
  return x < y ? -1 : x > y;
}

/* Not just the latest: every handle a slot gave out in 70 000 reuses differs
 * from every other (21 generation bits: none repeats before 2 097 152). */
static void test_no_handle_repeats_within_a_slot(void** state) {
  (void)state;
  enum { N = 70000 };
  pt_trace* t = new_trace(16);
  fill_all_but_one(t, 16);
  pt_handle* seen = malloc(N * sizeof *seen);
  assert_non_null(seen);
  for (int i = 0; i < N; i++) {
    pt_op_info in = info(5, 4, 0);
    seen[i] = pt_op_start(t, &in);
    assert_true(slot_addr(seen[i]) == slot_addr(seen[0]));
    pt_handle_stop(seen[i]);
  }
  qsort(seen, N, sizeof *seen, cmp_handles);
  for (int i = 1; i < N; i++) assert_ptr_not_equal(seen[i], seen[i - 1]);
  free(seen);
  pt_trace_destroy(t);
}

/* A free slot comes back only after every other free slot: 16 ops started
 * and stopped one after the other take 16 different slots. */
static void test_reuse_spreads_over_slots(void** state) {
  (void)state;
  pt_trace* t = new_trace(16);
  uintptr_t addr[16];
  for (int i = 0; i < 16; i++) {
    pt_op_info in = info(i, 4, 0);
    pt_handle h = pt_op_start(t, &in);
    addr[i] = slot_addr(h);
    pt_handle_stop(h);
    for (int j = 0; j < i; j++) assert_true(addr[j] != addr[i]);
  }
  pt_op_info in = info(99, 4, 0);
  pt_handle h = pt_op_start(t, &in);
  assert_true(slot_addr(h) == addr[0]); /* then round again, oldest first */
  pt_trace_destroy(t);
}

/* ---- stale step handles ---- */

/* Op A's step 3 is stopped late, after A's slot went to op B, which has its
 * own step 3 in flight in the same step slot: the late stop is refused and
 * B's counters do not move. */
static void test_stale_step_handle_of_previous_op(void** state) {
  (void)state;
  pt_trace* t = new_trace(16);
  fill_all_but_one(t, 16);
  pt_op_info in = info(7, 16, 1);
  pt_handle a = pt_op_start(t, &in);
  pt_op_register(a);
  pt_handle sa = pt_step_start(t, a, 3);
  assert_non_null(sa);
  pt_handle sa_done = pt_step_start(t, a, 0);
  pt_handle_stop(sa_done);
  pt_op_update(a, PT_CNT_DONE, 16, 0); /* complete: A's slot is FINISHED */
  pt_handle_stop(a);                   /* and stopped: free */
  pt_handle b = pt_op_start(t, &in);   /* B takes the same slot */
  assert_true(slot_addr(b) == slot_addr(a));
  pt_op_register(b);
  pt_handle sb = pt_step_start(t, b, 3);
  assert_true(((uintptr_t)sb & PT_ADDR_MASK) == ((uintptr_t)sa & PT_ADDR_MASK));
  assert_ptr_not_equal(sb, sa);
  const uint64_t stale = drops(t, PT_DROP_STALE_HANDLE);
  pt_handle_stop(sa);    /* late stop of A's step 3 */
  pt_step_state(sa, 12, -1); /* and a late state */
  assert_int_equal(drops(t, PT_DROP_STALE_HANDLE), stale + 2);
  assert_int_equal(counter(b, PT_CNT_DONE), 0);
  assert_int_equal(counter(b, PT_CNT_TRANSMITTED), 0);
  pt_handle_stop(sb); /* B's own step: DONE = 4 */
  assert_int_equal(counter(b, PT_CNT_DONE), 4);
  assert_int_equal(drops(t, PT_DROP_STALE_HANDLE), stale + 2);
  pt_trace_destroy(t);
}

/* ---- a step's parent from another trace ---- */

static void test_step_parent_of_another_trace(void** state) {
  (void)state;
  pt_trace* x = new_trace(16);
  pt_trace* y = new_trace(16);
  pt_op_info in = info(1, 8, 1);
  pt_handle opx = pt_op_start(x, &in);
  pt_handle opy = pt_op_start(y, &in);
  pt_op_register(opx);
  pt_op_register(opy);
  assert_null(pt_step_start(x, opy, 0));
  assert_int_equal(drops(x, PT_DROP_WRONG_CONTEXT), 1);
  assert_int_equal(drops(y, PT_DROP_WRONG_CONTEXT), 0);
  assert_int_equal(counter(opy, PT_CNT_POSTED), 0);
  assert_non_null(pt_step_start(x, opx, 0));
  /* Y finalized: its op handle is checked without reading Y's memory (ASan
   * would report a use after free). */
  pt_trace_destroy(y);
  assert_null(pt_step_start(x, opy, 1));
  assert_int_equal(drops(x, PT_DROP_WRONG_CONTEXT), 2);
  /* no trace at all (a context that is not live): counted process-wide */
  const uint64_t before = drops(x, PT_DROP_WRONG_CONTEXT);
  assert_null(pt_step_start(NULL, opx, 1));
  assert_int_equal(drops(x, PT_DROP_WRONG_CONTEXT), before + 1);
  pt_trace_destroy(x);
}

/* ---- never-registered ops under pressure ---- */

/* CollNet-like ops are started and never progressed nor stopped, one per
 * network op: no network op is ever dropped, the never-registered ones give
 * way whatever their age. */
static void test_unregistered_ops_never_starve_network_ops(void** state) {
  (void)state;
  pt_trace* t = new_trace(64);
  for (int i = 0; i < 10000; i++) {
    pt_op_info never = info(-2, 4, 0);
    pt_op_start(t, &never); /* never registered, never stopped */
    pt_op_info net = info(i, 4, 0);
    pt_handle h = pt_op_start(t, &net);
    assert_non_null(h);
    pt_op_register(h);
    pt_op_update(h, PT_CNT_DONE, 4, 0);
    pt_handle_stop(h);
  }
  assert_int_equal(drops(t, PT_DROP_OPS_DROPPED), 0);
  assert_true(drops(t, PT_DROP_OPS_RECLAIMED) > 0);
  pt_trace_destroy(t);
}

/* Slab of 16: 14 stuck network ops, 2 never-registered ones. The next two
 * network ops take the never-registered slots (oldest first); only then is
 * one dropped. Drops counted equal drops caused. */
static void test_drop_only_when_every_slot_is_registered(void** state) {
  (void)state;
  pt_trace* t = new_trace(16);
  pt_op_info never = info(-2, 4, 0);
  pt_handle n1 = pt_op_start(t, &never);
  pt_handle n2 = pt_op_start(t, &never);
  for (int i = 0; i < 14; i++) {
    pt_op_info net = info(i, 4, 0);
    pt_handle h = pt_op_start(t, &net);
    pt_op_register(h);
  }
  pt_op_info net = info(100, 4, 0);
  pt_handle a = pt_op_start(t, &net);
  assert_true(slot_addr(a) == slot_addr(n1));
  pt_op_register(a);
  pt_handle b = pt_op_start(t, &net);
  assert_true(slot_addr(b) == slot_addr(n2));
  pt_op_register(b);
  assert_int_equal(drops(t, PT_DROP_OPS_DROPPED), 0);
  for (int i = 0; i < 5; i++) assert_null(pt_op_start(t, &net));
  assert_int_equal(drops(t, PT_DROP_OPS_DROPPED), 5);
  assert_int_equal(drops(t, PT_DROP_OPS_RECLAIMED), 2);
  assert_int_equal(pt_trace_active_ops(t), 16);
  pt_trace_destroy(t);
}

/* ---- int64 ends ---- */

/* A step-driven op whose DONE a ProxyDiag update set near INT64_MAX, then a
 * step stop: the step arithmetic saturates (UBSan: no signed overflow). */
static void test_step_arithmetic_saturates(void** state) {
  (void)state;
  pt_trace* t = new_trace(16);
  pt_op_info in = info(1, 8, 1);
  pt_handle op = pt_op_start(t, &in);
  pt_op_register(op);
  pt_op_update(op, PT_CNT_DONE, INT64_MAX - 3, 0);
  pt_handle s = pt_step_start(t, op, 5);
  pt_step_state(s, 12, -1);
  pt_handle_stop(s);
  assert_true(counter(op, PT_CNT_DONE) == INT64_MAX);
  pt_op_update(op, PT_CNT_DONE, INT64_MIN + 2, 0);
  s = pt_step_start(t, op, 0x7ffe);
  pt_step_state(s, 11, -1);
  pt_handle_stop(s);
  assert_true(counter(op, PT_CNT_DONE) >= INT64_MIN + 2);
  pt_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stale_op_handle_after_10000_reuses),
      cmocka_unit_test(test_no_handle_repeats_within_a_slot),
      cmocka_unit_test(test_reuse_spreads_over_slots),
      cmocka_unit_test(test_stale_step_handle_of_previous_op),
      cmocka_unit_test(test_step_parent_of_another_trace),
      cmocka_unit_test(test_unregistered_ops_never_starve_network_ops),
      cmocka_unit_test(test_drop_only_when_every_slot_is_registered),
      cmocka_unit_test(test_step_arithmetic_saturates),
  };
  return cmocka_run_group_tests_name("handles", tests, NULL, NULL);
}
