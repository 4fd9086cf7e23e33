/*
 * test_rccl_dump.c — golden dumps: the built plugin driven through the v6 ABI
 * with RCCL's event sequence, its dump compared byte for byte (timestamps
 * masked) with tests/golden/. Each golden file was checked by hand against
 * spec/rccl-proxytrace.md §3.6–§3.8; PT_UPDATE_GOLDEN=1 rewrites them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rccl_host.h"

static rh_plugin plugin;

static int setup(void** state) {
  (void)state;
  rh_open(&plugin, NULL);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  rh_log_clear();
  rh_close(&plugin);
  return 0;
}

static rh_op_desc desc(uint64_t hash, int64_t opcount, int chan, int peer, int send, int nsteps) {
  rh_op_desc d = {.comm_hash = hash, .op_count = opcount, .channel = chan, .peer = peer,
                  .is_send = send, .raw_nsteps = nsteps, .slice_steps = 1,
                  .nbytes = (uint32_t)nsteps * 4096u, .func = 4, .proto = 2, .pattern = 1,
                  .total_bytes = 0, .chunk_size = 131072};
  return d;
}

static void check_golden(void* ctx, const char* name) {
  rh_dump(&plugin, ctx);
  /* Every line is its own WARN (RCCL level 3) from the dump function. */
  for (int i = 0; i < rh_captured.n; i++) {
    assert_int_equal(rh_captured.level[i], 3);
    assert_string_equal(rh_captured.file[i], "ncclProfilerProxyTraceDump");
    assert_null(strchr(rh_captured.text[i], '\n'));
    assert_true(strlen(rh_captured.text[i]) < 900);
  }
  char* text = rh_masked_dump();
  assert_int_equal(rh_golden(name, text), 0);
  free(text);
}

/* Active ops in every status the rules of §3.6 can reach, send and recv. */
static void test_statuses(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 1234567890ull, 3, 16);
  rh_op op[7];
  rh_op_desc d;
  /* send POSTING: posted 4 of 16 */
  d = desc(1234567890ull, 6, 0, 11, 1, 16);
  rh_op_active(&plugin, ctx, &op[0], &d, 4, 0, 0, 0, 2);
  /* send WAITING_GPU: posted 8 (window full), transmitted 4 */
  d = desc(1234567890ull, 6, 1, 11, 1, 16);
  rh_op_active(&plugin, ctx, &op[1], &d, 8, 0, 4, 0, 3);
  /* send SENDING: all 8 posted and transmitted, 4 done */
  d = desc(1234567890ull, 6, 2, 11, 1, 8);
  rh_op_active(&plugin, ctx, &op[2], &d, 8, 0, 8, 4, 1);
  /* recv POSTING */
  d = desc(1234567890ull, 6, 0, 5, 0, 16);
  rh_op_active(&plugin, ctx, &op[3], &d, 2, 0, 0, 0, 0);
  /* recv RECEIVING: window full, 4 received */
  d = desc(1234567890ull, 6, 1, 5, 0, 16);
  rh_op_active(&plugin, ctx, &op[4], &d, 8, 4, 0, 0, 0);
  /* recv FLUSHING: 8 received, 6 handed to the GPU */
  d = desc(1234567890ull, 6, 2, 5, 0, 16);
  rh_op_active(&plugin, ctx, &op[5], &d, 8, 8, 6, 0, 0);
  /* recv WAITING_GPU: 12 posted/received/transmitted, 4 consumed */
  d = desc(1234567890ull, 6, 3, 5, 0, 16);
  rh_op_active(&plugin, ctx, &op[6], &d, 4, 4, 4, 4, 2);
  rh_advance(&op[6], 12, 12, 12, 4, 2);
  check_golden(ctx, "statuses");
  /* The legacy status names, in that order of proxyOpId. */
  const char* want[] = {"POSTING", "WAITING_GPU", "SENDING", "POSTING", "RECEIVING", "FLUSHING",
                        "WAITING_GPU"};
  for (int i = 0; i < 7; i++) assert_non_null(strstr(rh_captured.text[1 + i], want[i]));
  /* Times are Unix-epoch milliseconds of now, ordered createT <= lastT. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const long long now_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  for (int i = 1; i <= 7; i++) {
    long long c = strtoll(strstr(rh_captured.text[i], "createT:") + 8, NULL, 10);
    long long l = strtoll(strstr(rh_captured.text[i], "lastT:") + 6, NULL, 10);
    assert_true(c > now_ms - 60000 && c <= now_ms + 1000);
    assert_true(l >= c && l <= now_ms + 1000);
  }
  /* A started op that never entered progress is not in the dump. */
  rh_op idle;
  d = desc(1234567890ull, 8, 0, 1, 1, 4);
  rh_op_start(&plugin, ctx, &idle, &d);
  assert_int_equal(rh_dump(&plugin, ctx), 8);
  for (int i = 0; i < 7; i++) rh_op_stop(&op[i]);
  rh_op_stop(&idle);
  plugin.p->finalize(ctx);
}

/* Completed ops move to the finished ring; sends keep postT/sendT, recvs
 * never get them; active and finished records sort together. */
static void test_finished(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 42, 0, 8);
  rh_op_desc d = desc(42, 0, 0, 4, 1, 6);
  rh_run_full(&plugin, ctx, &d, 2);
  d = desc(42, 0, 0, 4, 0, 6);
  rh_run_full(&plugin, ctx, &d, 2);
  d = desc(42, 2, 1, 4, 1, 20);
  d.slice_steps = 2;
  rh_run_full(&plugin, ctx, &d, 1);
  rh_op live;
  d = desc(42, 4, 0, 4, 1, 10);
  rh_op_active(&plugin, ctx, &live, &d, 3, 0, 1, 0, 1);
  check_golden(ctx, "finished");
  rh_op_stop(&live);
  plugin.p->finalize(ctx);
}

/* More than 32 completed ops: the ring keeps the newest 32. */
static void test_ring_overflow(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 7, 1, 4);
  for (int i = 0; i < 40; i++) {
    rh_op_desc d = desc(7, 2 * i, i % 4, 0, i % 2, 2);
    rh_run_full(&plugin, ctx, &d, 0);
  }
  check_golden(ctx, "ring_overflow");
  assert_int_equal(rh_captured.n, 1 + 32);
  /* opCounts 0..14 (the first 8 ops) are gone, 16.. are there. */
  char* text = rh_masked_dump();
  assert_null(strstr(text, "<7:14:0>"));
  assert_non_null(strstr(text, "<7:16:0>"));
  assert_non_null(strstr(text, "<7:78:0>"));
  free(text);
  plugin.p->finalize(ctx);
}

/* Keys sort as strings: opCount 10 before 2; several commHashes. */
static void test_sort_and_comms(void** state) {
  (void)state;
  /* Ops of several commHashes in one context: only where init gave the
   * context no commHash (0) — else an op of another communicator breaks
   * an invariant RCCL keeps, and its fields are not read (test_rccl_diag). */
  void* ctx = rh_init(&plugin, 0, 2, 4);
  rh_op ops[6];
  const uint64_t hashes[] = {900, 18446744073709551615ull, 900, 31, 900, 31};
  const int64_t counts[] = {2, 10, 10, 2, 2, 10};
  for (int i = 0; i < 6; i++) {
    rh_op_desc d = desc(hashes[i], counts[i], i, 3, i % 2, 4);
    rh_op_active(&plugin, ctx, &ops[i], &d, 1, 0, 0, 0, 0);
  }
  check_golden(ctx, "sort_and_comms");
  char* text = rh_masked_dump();
  char* a = strstr(text, "<900:10:0>");
  char* b = strstr(text, "<900:2:0>");
  assert_non_null(a);
  assert_non_null(b);
  assert_true(a < b);
  assert_non_null(strstr(text, "<900:2:1>")); /* second op of the same bucket */
  free(text);
  for (int i = 0; i < 6; i++) rh_op_stop(&ops[i]);
  plugin.p->finalize(ctx);
}

/* nSteps == 0: not registered, no id consumed, its updates touch nothing. */
static void test_zero_steps(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 5, 0, 2);
  rh_op zero, real;
  rh_op_desc d = desc(5, 3, 0, 1, 1, 0);
  rh_op_start(&plugin, ctx, &zero, &d);
  rh_op_in_progress(&zero);
  d = desc(5, 3, 1, 1, 1, 8);
  rh_op_active(&plugin, ctx, &real, &d, 2, 0, 1, 0, 0);
  /* Legacy would have given `zero` id 0 and `real` id 0 too, so these updates
   * would corrupt `real`'s counters. */
  rh_diag(&zero, ncclProxyDiagPosted, 99, NCCL_PROXY_DIAG_FLAG_TIMESTAMP);
  rh_diag(&zero, ncclProxyDiagDone, 8, 0);
  check_golden(ctx, "zero_steps");
  assert_non_null(strstr(rh_captured.text[1], "<5:3:0>"));
  assert_non_null(strstr(rh_captured.text[1], "po:2,"));
  rh_op_stop(&zero);
  rh_op_stop(&real);
  plugin.p->finalize(ctx);
}

/* Ids restart at 0 when an opCount's bucket empties; the live op with the
 * recycled key is printed after the finished one, not hidden by it. */
static void test_id_restart(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 77, 1, 2);
  rh_op_desc d = desc(77, 12, 0, 0, 1, 4);
  rh_run_full(&plugin, ctx, &d, 1); /* <77:12:0>, finished: bucket empties */
  rh_op again;
  d = desc(77, 12, 1, 0, 0, 4);
  rh_op_start(&plugin, ctx, &again, &d);
  rh_op_in_progress(&again); /* <77:12:0> again, active */
  rh_advance(&again, 2, 1, 0, 0, 0);
  check_golden(ctx, "id_restart");
  assert_int_equal(rh_captured.n, 3);
  assert_non_null(strstr(rh_captured.text[1], "<77:12:0>"));
  assert_non_null(strstr(rh_captured.text[1], "status:DONE"));
  assert_non_null(strstr(rh_captured.text[2], "<77:12:0>"));
  assert_non_null(strstr(rh_captured.text[2], "status:POSTING"));
  rh_op_stop(&again);
  plugin.p->finalize(ctx);
}

/* A full pool drops the op, counts it, and the dump says so. */
static void test_pool_full(void** state) {
  (void)state;
  setenv("PROXYTRACE_MAX_OPS", "16", 1);
  void* ctx = rh_init(&plugin, 9, 0, 2);
  unsetenv("PROXYTRACE_MAX_OPS");
  rh_op ops[20];
  int got = 0;
  for (int i = 0; i < 20; i++) {
    rh_op_desc d = desc(9, 0, i % 8, 1, 1, 4);
    rh_op_start(&plugin, ctx, &ops[i], &d);
    if (ops[i].handle) got++;
    rh_op_in_progress(&ops[i]); /* a NULL handle: ignored */
    rh_advance(&ops[i], 1, 0, 0, 0, 0);
  }
  assert_int_equal(got, 16);
  check_golden(ctx, "pool_full");
  assert_non_null(strstr(rh_drop_line(), "opsDropped:4"));
  /* Once ops finish and stop, slots come back. */
  for (int i = 0; i < 16; i++) {
    rh_advance(&ops[i], 4, 0, 4, 4, 0);
    rh_op_stop(&ops[i]);
  }
  rh_op more;
  rh_op_desc d = desc(9, 2, 0, 1, 1, 4);
  rh_op_start(&plugin, ctx, &more, &d);
  assert_non_null(more.handle);
  rh_op_stop(&more);
  plugin.p->finalize(ctx);
}

/* The process-wide budget (PROXYTRACE_MAX_MEMORY_MB) spent below a
 * communicator's cap: the ops past it are dropped, and the drop line tells
 * them (opsOverBudget) from those dropped at a cap. */
static void test_budget_spent(void** state) {
  (void)state;
  setenv("PROXYTRACE_MAX_MEMORY_MB", "1", 1); /* 4096 slots, charged 64 at a time */
  setenv("PROXYTRACE_MAX_OPS", "16", 1);
  void* capped = rh_init(&plugin, 10, 0, 2);
  unsetenv("PROXYTRACE_MAX_OPS");
  void* big = rh_init(&plugin, 11, 0, 2);
  unsetenv("PROXYTRACE_MAX_MEMORY_MB");
  static rh_op ops[4040];
  for (int i = 0; i < 20; i++) { /* one chunk charged: 16 slots, then the cap */
    rh_op_desc d = desc(10, i, 0, 1, 1, 4);
    rh_op_start(&plugin, capped, &ops[i], &d);
    rh_op_in_progress(&ops[i]);
  }
  rh_dump(&plugin, capped);
  assert_non_null(strstr(rh_drop_line(), " opsDropped:4 "));
  assert_non_null(strstr(rh_drop_line(), " opsOverBudget:0"));
  int got = 0;
  for (int i = 0; i < 4040; i++) { /* 63 chunks left: 4032 slots */
    rh_op_desc d = desc(11, i, 0, 1, 1, 4);
    rh_op_start(&plugin, big, &ops[i], &d);
    if (ops[i].handle) got++;
    rh_op_in_progress(&ops[i]);
  }
  assert_int_equal(got, 4032);
  rh_dump(&plugin, big);
  assert_non_null(strstr(rh_drop_line(), " opsDropped:8 "));
  assert_non_null(strstr(rh_drop_line(), " opsOverBudget:8"));
  plugin.p->finalize(capped);
  plugin.p->finalize(big);
  setenv("PROXYTRACE_MAX_MEMORY_MB", "1024", 1); /* the default again, for what follows */
  void* c = rh_init(&plugin, 12, 0, 2);
  unsetenv("PROXYTRACE_MAX_MEMORY_MB");
  plugin.p->finalize(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_statuses),   cmocka_unit_test(test_finished),
      cmocka_unit_test(test_ring_overflow), cmocka_unit_test(test_sort_and_comms),
      cmocka_unit_test(test_zero_steps), cmocka_unit_test(test_id_restart),
      cmocka_unit_test(test_pool_full), cmocka_unit_test(test_budget_spent),
  };
  return cmocka_run_group_tests_name("rccl_dump", tests, setup, teardown);
}
