/*
 * test_faults.c — faults injected into the plugin through its real ABI:
 * every allocation of init failing in turn, the dump's allocation failing,
 * finalize with ops and steps in flight. An interposed allocator (this
 * program's malloc family, forwarding to the next one — libc's or a
 * sanitizer's: tests/common/failalloc.c) fails the Nth call while armed. Each fault has a defined
 * outcome: init opts out of the communicator with one warning and frees
 * what it took; a dump says it had no memory and loses nothing; finalize
 * frees everything (ASan's leak check runs at exit).
 *
 * TSan's runtime allocates before a replacement malloc can find the next
 * one, so under TSan (a build for data races; nothing here is threaded)
 * the allocation cases are skipped; they run in the plain and ASan builds.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "failalloc.h"
#include "rccl_host.h"

/* ---- a logger that allocates nothing ---- */

enum { MAX_LINES = 64 };
static char lines[MAX_LINES][1024];
static int n_lines, n_all;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER; /* the dumper thread logs too */

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&log_lock);
  if (n_lines < MAX_LINES) vsnprintf(lines[n_lines++], sizeof lines[0], fmt, ap);
  n_all++;
  pthread_mutex_unlock(&log_lock);
  va_end(ap);
}

static void clear_log(void) { n_lines = n_all = 0; }

static int logged(const char* needle) {
  int k = 0;
  pthread_mutex_lock(&log_lock);
  for (int i = 0; i < n_lines; i++) k += strstr(lines[i], needle) != NULL;
  pthread_mutex_unlock(&log_lock);
  return k;
}

static rh_plugin plugin;

static int setup(void** state) {
  (void)state;
  /* No dumper thread unless a test asks for one: its allocations would
   * count in init's. */
  setenv("PROXYTRACE_STALL_MS", "0", 1);
  rh_open(&plugin, NULL);
  /* Warm up what is done once per process: the clock, and the host's log
   * level, looked up with dlsym at the first warning (a bad value gives
   * one) — glibc keeps a dlerror buffer per thread. */
  void* ctx = NULL;
  int mask = 0;
  setenv("PROXYTRACE_CLOCK", "warm-up", 1);
  plugin.p->init(&ctx, 1, &mask, "warm", 1, 1, 0, logger);
  unsetenv("PROXYTRACE_CLOCK");
  plugin.dump(ctx, logger);
  plugin.p->finalize(ctx);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  rh_close(&plugin);
  return 0;
}

static void* init_ctx(uint64_t hash) {
  void* ctx = (void*)0x1;
  int mask = 0;
  assert_int_equal(plugin.p->init(&ctx, hash, &mask, "faulty", 2, 4, 1, logger), ncclSuccess);
  if (!ctx) assert_int_equal(mask, 0); /* opted out: mask untouched */
  return ctx;
}

/* Every allocation init makes fails in turn. Either init opts out of the
 * communicator (NULL context, mask untouched, success) saying why in one
 * warning and giving back whatever it had taken, or the allocation was not
 * one the context needs and init goes on. Then memory that stays short:
 * init opts out. (No dumper thread here: PROXYTRACE_STALL_MS=0.) */
static void test_init_allocation_failures(void** state) {
  (void)state;
  if (!FA_INTERPOSED) skip();
  int opted_out = 0, survived = 0;
  for (long n = 1; n < 64; n++) {
    clear_log();
    fa_arm(n, 0);
    void* ctx = init_ctx(7);
    const long made = fa_calls(), was_failed = fa_failed();
    fa_disarm();
    if (!was_failed) { /* past the last allocation: a working context */
      assert_non_null(ctx);
      assert_int_equal(n_all, 0);
      plugin.p->finalize(ctx);
      print_message("      init allocates %ld times (the libc included): %d failures opt out, %d "
                    "are survived\n", made,
                    opted_out, survived);
      break;
    }
    if (ctx) {
      survived++;
      fa_track_only(); /* what init kept must go with finalize */
      plugin.p->finalize(ctx);
      fa_disarm();
    } else {
      opted_out++;
      assert_int_equal(n_all, 1);
      assert_true(logged("proxytrace: out of memory") + logged("proxytrace: cannot allocate") == 1);
    }
    /* Nothing kept. (Less than nothing happens: the libc's dlerror buffer,
     * when the failing allocation was the libc's own inside dlsym, is let go
     * instead of replaced.) */
    assert_true(fa_live_bytes() <= 0);
  }
  assert_true(opted_out >= 3); /* context, trace, slab, id table */
  clear_log();
  fa_arm(1, 1);
  void* ctx = init_ctx(7);
  fa_disarm();
  assert_null(ctx);
  assert_int_equal(n_all, 1);
  assert_true(fa_live_bytes() <= 0);
}

static void* ctx_with_ops(uint64_t hash, rh_op* ops, int n) {
  void* ctx = init_ctx(hash);
  assert_non_null(ctx);
  for (int i = 0; i < n; i++) {
    rh_op_desc d = {.comm_hash = hash, .op_count = i, .peer = 1, .is_send = 1, .raw_nsteps = 8,
                    .slice_steps = 1, .chunk_size = 64};
    rh_op_active(&plugin, ctx, &ops[i], &d, 2, 0, 1, 0, 0);
  }
  return ctx;
}

/* Each allocation a dump makes fails in turn: the dump is whole (it found
 * memory on a second try) or it is the header and a line saying there was
 * no memory. Memory that stays short: that line, every time. Nothing is
 * lost: once memory is back, the dump has every record. */
static void test_dump_allocation_failure(void** state) {
  (void)state;
  if (!FA_INTERPOSED) skip();
  rh_op ops[3];
  void* ctx = ctx_with_ops(8, ops, 3);
  int whole = 0, short_dumps = 0;
  for (long n = 1; n < 16; n++) {
    clear_log();
    fa_arm(n, 0);
    plugin.dump(ctx, logger);
    const long was_failed = fa_failed();
    fa_disarm();
    if (!was_failed) break;
    assert_non_null(strstr(lines[0], "commDump for all active ops"));
    if (n_all == 4) {
      whole++;
      assert_int_equal(logged("status:"), 3);
    } else {
      short_dumps++;
      assert_int_equal(n_all, 2);
      assert_non_null(strstr(lines[1], "proxytrace: no memory for a dump of"));
    }
  }
  clear_log();
  fa_arm(1, 1);
  plugin.dump(ctx, logger);
  fa_disarm();
  assert_int_equal(n_all, 2);
  assert_non_null(strstr(lines[1], "proxytrace: no memory for a dump of"));
  print_message("      dump with its Nth allocation failing: %d whole, %d short; short memory: "
                "one line\n", whole, short_dumps + 1);
  clear_log();
  plugin.dump(ctx, logger);
  assert_int_equal(n_all, 4);
  assert_int_equal(logged("status:"), 3);
  for (int i = 0; i < 3; i++) rh_op_stop(&ops[i]);
  plugin.p->finalize(ctx);
}

/* The dumper thread's periodic dumps while memory is short: skipped, said
 * once; once memory is back they have every record again. */
static void test_dumper_allocation_failure(void** state) {
  (void)state;
  if (!FA_INTERPOSED) skip();
  setenv("PROXYTRACE_DUMP_INTERVAL_MS", "20", 1);
  rh_op ops[2];
  void* ctx = ctx_with_ops(9, ops, 2);
  unsetenv("PROXYTRACE_DUMP_INTERVAL_MS");
  usleep(100 * 1000);
  clear_log();
  fa_arm(1, 1);
  usleep(200 * 1000); /* about ten periodic rounds, every one short of memory */
  fa_disarm();
  const int said = logged("no memory for a dump; dumps are skipped");
  const int records_meanwhile = logged("status:");
  clear_log();
  usleep(200 * 1000);
  const int records_after = logged("status:");
  for (int i = 0; i < 2; i++) rh_op_stop(&ops[i]);
  plugin.p->finalize(ctx);
  print_message("      dumper short of memory: said %d time(s), %d records meanwhile; %d after\n",
                said, records_meanwhile, records_after);
  assert_int_equal(said, 1);
  assert_true(records_after >= 2);
}

/* Finalize with ops in every state and steps in flight: everything is
 * freed (ASan's leak check), nothing is touched afterwards, and a new
 * communicator works. */
static void test_finalize_with_steps_in_flight(void** state) {
  (void)state;
  for (int round = 0; round < 3; round++) {
    void* ctx = NULL;
    int mask = 0;
    plugin.p->init(&ctx, 9, &mask, "busy", 2, 2, 0, logger);
    assert_non_null(ctx);
    rh_op ops[6];
    for (int i = 0; i < 6; i++) {
      rh_op_desc d = {.comm_hash = 9, .op_count = i, .peer = 1, .is_send = i % 2,
                      .raw_nsteps = 16, .slice_steps = 1, .chunk_size = 64};
      if (i == 0) {
        rh_op_start(&plugin, ctx, &ops[i], &d); /* never registered */
        continue;
      }
      /* active with steps started and not stopped: posted ahead of done */
      rh_op_active(&plugin, ctx, &ops[i], &d, 8, i % 2 ? 0 : 6, 4, 2, 1);
      if (i == 2) rh_op_stop(&ops[i]); /* detached */
      if (i == 3) {                     /* finished, never stopped */
        rh_advance(&ops[i], 16, 0, 16, 16, 0);
      }
    }
    assert_int_equal(plugin.p->finalize(ctx), ncclSuccess);
  }
  void* ctx = rh_init(&plugin, 10, 0, 2);
  rh_op_desc d = {.comm_hash = 10, .op_count = 0, .peer = 1, .is_send = 1, .raw_nsteps = 4,
                  .slice_steps = 1};
  rh_run_full(&plugin, ctx, &d, 1);
  assert_int_equal(rh_dump(&plugin, ctx), 2);
  plugin.p->finalize(ctx);
  rh_log_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_allocation_failures),
      cmocka_unit_test(test_dump_allocation_failure),
      cmocka_unit_test(test_dumper_allocation_failure),
      cmocka_unit_test(test_finalize_with_steps_in_flight),
  };
  return cmocka_run_group_tests_name("faults", tests, setup, teardown);
}
