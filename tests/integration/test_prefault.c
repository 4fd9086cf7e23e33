/*
 * test_prefault.c — through the plugin: a new communicator's first slab
 * pages are populated by the dumper thread, not by the init caller and not
 * by the proxy thread's first ops. Faults are counted with getrusage(2) of
 * the recording thread, in builds without a sanitizer (a sanitizer's shadow
 * memory takes faults of its own).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <cmocka.h>

#include "rccl_host.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Faults are counted only natively and without a sanitizer: an emulator
 * (qemu-user, PROXYTRACE_EMULATOR) takes faults of its own for the code it
 * translates, a sanitizer for its shadow memory. */
static int faults_counted(void) {
  const char* emu = getenv("PROXYTRACE_EMULATOR");
  return !SANITIZED && !(emu && *emu);
}

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

static long thread_faults(void) {
  struct rusage u;
  assert_int_equal(getrusage(RUSAGE_THREAD, &u), 0);
  return u.ru_minflt;
}

/* Starts `n` ProxyOps (not in progress: only their slots are written) and
 * returns the faults the calls took. The code and the test's own memory are
 * touched first (a warm-up communicator's op, `ops` written): their first
 * use faults too, once per process. */
static long start_ops(void* ctx, rh_op* ops, int n, uint64_t hash) {
  rh_op_desc d = {.comm_hash = hash, .peer = 1, .is_send = 1, .raw_nsteps = 4, .slice_steps = 1};
  memset(ops, 0, (size_t)n * sizeof *ops);
  void* warm = rh_init(&plugin, hash + 1000, 0, 2);
  rh_op w;
  rh_op_start(&plugin, warm, &w, &d);
  plugin.p->finalize(warm);
  const long f0 = thread_faults();
  for (int i = 0; i < n; i++) {
    d.op_count = i;
    rh_op_start(&plugin, ctx, &ops[i], &d);
  }
  return thread_faults() - f0;
}

static void test_first_ops_take_no_fault(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 41, 0, 2); /* the dumper runs: the stall watchdog is on */
  struct timespec pause = {0, 300 * 1000 * 1000}; /* its wake-up, and six 50 ms rounds */
  nanosleep(&pause, NULL);
  static rh_op ops[64];
  const long faults = start_ops(ctx, ops, 64, 41); /* 64 slots: 16 KiB populated */
  if (faults_counted()) assert_int_equal(faults, 0);
  for (int i = 0; i < 64; i++) assert_non_null(ops[i].handle);
  plugin.p->finalize(ctx);
}

/* Without the dumper thread (every trigger off) the init caller populates
 * them: still none on the recording thread. */
static void test_without_a_dumper(void** state) {
  (void)state;
  setenv("PROXYTRACE_STALL_MS", "0", 1);
  void* ctx = rh_init(&plugin, 42, 0, 2);
  unsetenv("PROXYTRACE_STALL_MS");
  static rh_op ops[64];
  const long faults = start_ops(ctx, ops, 64, 42);
  if (faults_counted()) assert_int_equal(faults, 0);
  plugin.p->finalize(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_ops_take_no_fault),
      cmocka_unit_test(test_without_a_dumper),
  };
  return cmocka_run_group_tests_name("prefault", tests, setup, teardown);
}
