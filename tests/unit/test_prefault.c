/*
 * test_prefault.c — the slab pages of a trace's next ops are populated off
 * the recording thread (pt_trace_prefault, the dumper thread's part): first
 * the first 64 slots' (an idle trace holds no more), then ahead of the
 * high-water mark as it grows; the recording thread's first write to such
 * a slot takes no page fault. Residence is read with mincore(2); faults with getrusage(2) of the
 * thread, in builds without a sanitizer (a sanitizer's shadow memory takes
 * faults of its own). The fallback for kernels without
 * MADV_POPULATE_WRITE (before 5.14) is tested directly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "proxytrace/trace.h"
#include "trace/slab.h"
#include "trace/vmem.h"

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

/* Resident pages among the slab pages of slots [from, to). */
static size_t resident_slots(const pt_trace* t, uint32_t from, uint32_t to) {
  const size_t page = pt_vmem_page();
  const uintptr_t a = ((uintptr_t)t->slab + (size_t)from * PT_SLOT_BYTES) & ~(uintptr_t)(page - 1);
  const uintptr_t b = (uintptr_t)t->slab + (size_t)to * PT_SLOT_BYTES;
  const size_t n = (b - a + page - 1) / page;
  unsigned char v[4096];
  assert_true(n <= sizeof v);
  assert_int_equal(mincore((void*)a, b - a, v), 0);
  size_t r = 0;
  for (size_t i = 0; i < n; i++) r += v[i] & 1;
  return r;
}

static size_t pages_of(uint32_t slots) { return (size_t)slots * PT_SLOT_BYTES / pt_vmem_page(); }

static long thread_faults(void) {
  struct rusage u;
  assert_int_equal(getrusage(RUSAGE_THREAD, &u), 0);
  return u.ru_minflt;
}

/* Starts n ops (not registered: only their slots are written). */
static void start_ops(pt_trace* t, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    pt_op_info in = {.comm_hash = 1, .op_count = i, .peer = 1, .nsteps = 4, .is_send = 1};
    assert_non_null(pt_op_start(t, &in));
  }
}

static pt_trace* new_trace(uint32_t max_ops) {
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = max_ops;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  return t;
}

/* Creation populates nothing (not the init caller's work); the first
 * prefault the first 64 slots' pages and no more; the first 64 ops then
 * take no fault. */
static void test_first_ops_take_no_fault(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_DEFAULT_MAX_OPS);
  assert_int_equal(t->n_ready, 0);
  assert_int_equal(resident_slots(t, 0, 4 * PT_PREFAULT_MIN), 0);
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->n_ready, PT_PREFAULT_MIN);
  assert_int_equal(resident_slots(t, 0, PT_PREFAULT_MIN), pages_of(PT_PREFAULT_MIN));
  assert_int_equal(resident_slots(t, PT_PREFAULT_MIN, 4 * PT_PREFAULT_MIN), 0);
  const long f0 = thread_faults();
  start_ops(t, PT_PREFAULT_MIN);
  const long faults = thread_faults() - f0;
  if (faults_counted()) assert_int_equal(faults, 0);
  assert_int_equal(pt_trace_slots_used(t), PT_PREFAULT_MIN);
  assert_int_equal(resident_slots(t, PT_PREFAULT_MIN, 4 * PT_PREFAULT_MIN), 0);
  pt_trace_destroy(t);
}

/* Past the populated slots the recording thread faults (what the prefault
 * saves); after a prefault, a lead of twice that growth is populated and
 * the next ops within it take no fault. */
static void test_prefault_follows_growth(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_DEFAULT_MAX_OPS);
  assert_int_equal(pt_trace_prefault(t), 0);
  long f0 = thread_faults();
  start_ops(t, 256); /* 192 slots past the first 64: 12 pages faulted here */
  if (faults_counted()) assert_true(thread_faults() - f0 >= (long)pages_of(256 - PT_PREFAULT_MIN));
  assert_int_equal(pt_trace_prefault(t), 0); /* the dumper's part */
  assert_int_equal(t->n_ready, 256 + 512);   /* twice the 256 taken since creation */
  assert_int_equal(resident_slots(t, 256, 256 + 512), pages_of(512));
  assert_int_equal(resident_slots(t, 256 + 512, 256 + 1024), 0);
  f0 = thread_faults();
  start_ops(t, 512);
  if (faults_counted()) assert_int_equal(thread_faults() - f0, 0);
  /* the lead stays within PT_PREFAULT_MAX however fast the trace grows */
  start_ops(t, 4096);
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->n_ready, 256 + 512 + 4096 + PT_PREFAULT_MAX);
  /* nothing to do when nothing was taken */
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->n_ready, 256 + 512 + 4096 + PT_PREFAULT_MAX);
  pt_trace_destroy(t);
}

/* Never past the communicator's cap. */
static void test_prefault_stops_at_the_cap(void** state) {
  (void)state;
  pt_trace* t = new_trace(100);
  start_ops(t, 90);
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->n_ready, 100);
  assert_int_equal(resident_slots(t, 0, 100), pages_of(100) + (100 * PT_SLOT_BYTES % pt_vmem_page() != 0));
  pt_trace_destroy(t);
}

/* The fallback: each page written with an atomic add of 0 — populated, and
 * not a byte changed. */
static void test_touch_fallback(void** state) {
  (void)state;
  const size_t page = pt_vmem_page();
  unsigned char* p = pt_vmem_reserve(8 * page);
  assert_non_null(p);
  p[0] = 0x5a;
  p[page + 1] = 0xa5;
  unsigned char v[8];
  assert_int_equal(mincore(p, 8 * page, v), 0);
  assert_int_equal(v[2] & 1, 0);
  pt_vmem_touch(p + 1, 6 * page); /* pages 0..6: the start is rounded down */
  assert_int_equal(mincore(p, 8 * page, v), 0);
  for (int i = 0; i < 7; i++) assert_int_equal(v[i] & 1, 1);
  assert_int_equal(v[7] & 1, 0);
  assert_int_equal(p[0], 0x5a);
  assert_int_equal(p[page + 1], 0xa5);
  for (size_t i = 2 * page; i < 7 * page; i++)
    if (p[i] != 0) fail_msg("byte %zu changed", i);
  /* and the kernel's way, where it has one (1: it has none, touched) */
  const int rc = pt_vmem_populate(p + 7 * page, page);
  assert_true(rc == 0 || rc == 1);
  assert_int_equal(mincore(p, 8 * page, v), 0);
  assert_int_equal(v[7] & 1, 1);
  pt_vmem_release(p, 8 * page);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_ops_take_no_fault),
      cmocka_unit_test(test_prefault_follows_growth),
      cmocka_unit_test(test_prefault_stops_at_the_cap),
      cmocka_unit_test(test_touch_fallback),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
