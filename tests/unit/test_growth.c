/*
 * test_growth.c — memory that follows the ops in flight (slab.h): a trace
 * holds no slot until an op needs one, grows past the old fixed size
 * without a drop while another thread dumps it, stops at its cap, and the
 * process-wide budget (PROXYTRACE_MAX_MEMORY_MB) drops exactly the ops past
 * it, counted apart from those dropped at the cap, and takes back what a
 * destroyed trace held. The pages of the next slots are populated off the
 * recording thread (pt_trace_prefault, the dumper thread's part): first the
 * first 64 slots' (an idle trace holds no more), then ahead of the
 * high-water mark as it grows, and the recording thread's first write to
 * such a slot takes no page fault. Residence is read with mincore(2),
 * faults with getrusage(2) (tests/faults.h); the fallback for kernels
 * without MADV_POPULATE_WRITE (before 5.14) is tested directly.
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

#include <cmocka.h>

#include <sys/mman.h>

#include "../faults.h"
#include "proxytrace/trace.h"
#include "trace/slab.h"
#include "trace/vmem.h"

#define CHUNK_BYTES (64u * 256u) /* slots are charged 64 at a time */

static pt_trace* new_trace(uint32_t max_ops) {
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = max_ops;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  return t;
}

/* Starts and registers n ops (op counts from `first`); returns how many got a handle. */
static int start_ops(pt_trace* t, int first, int n) {
  int got = 0;
  for (int i = 0; i < n; i++) {
    pt_op_info in = {.comm_hash = 7, .op_count = first + i, .peer = 1, .nsteps = 4, .is_send = 1};
    pt_handle h = pt_op_start(t, &in);
    if (!h) continue;
    pt_op_register(h);
    got++;
  }
  return got;
}

static uint64_t drops(const pt_trace* t, pt_drop_reason r) {
  pt_drop_stats s;
  pt_trace_drops(t, &s);
  return s.n[r];
}

static void test_idle_trace_holds_no_slot(void** state) {
  (void)state;
  const uint64_t before = pt_trace_memory_charged();
  pt_trace* t = new_trace(PT_DEFAULT_MAX_OPS);
  assert_int_equal(pt_trace_slots_used(t), 0);
  assert_int_equal(pt_trace_memory_charged(), before);
  assert_int_equal(start_ops(t, 0, 1), 1);
  assert_int_equal(pt_trace_slots_used(t), 1);
  assert_int_equal(pt_trace_memory_charged(), before + CHUNK_BYTES);
  pt_trace_destroy(t);
  assert_int_equal(pt_trace_memory_charged(), before);
}

/* Runs n one-step ops to completion, one in flight at a time, op counts
 * from `first`. */
static void run_ops(pt_trace* t, int64_t first, int n) {
  for (int i = 0; i < n; i++) {
    pt_op_info in = {.comm_hash = 7, .op_count = first + i, .peer = 1, .nsteps = 1, .is_send = 1};
    pt_handle h = pt_op_start(t, &in);
    assert_non_null(h);
    pt_op_register(h);
    pt_op_update(h, PT_CNT_DONE, 1, 0);
    pt_handle_stop(h);
  }
}

/* Ops that finish and are stopped are replaced without growth: the trace
 * keeps about the ops in flight plus the reuse reserve. */
static void test_reuse_bounds_growth(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_DEFAULT_MAX_OPS);
  run_ops(t, 0, 10000);
  assert_true(pt_trace_slots_used(t) <= 2 * 64);
  pt_trace_destroy(t);
}

/* ---- growth while another thread dumps ---- */

typedef struct {
  pt_trace* t;
  _Atomic int done;
  int dumps;
  uint32_t last_seen;
  int monotonic;
} dumper_arg;

static void* dump_loop(void* p) {
  dumper_arg* a = p;
  a->monotonic = 1;
  while (!atomic_load(&a->done)) {
    pt_dump* d = pt_trace_snapshot(a->t);
    assert_non_null(d);
    const uint32_t n = pt_dump_active(d);
    if (n < a->last_seen) a->monotonic = 0; /* ops are only added: never fewer */
    a->last_seen = n;
    a->dumps++;
    pt_dump_free(d);
  }
  return NULL;
}

static void test_growth_under_concurrent_dumps(void** state) {
  (void)state;
  enum { N = 30000 }; /* past the old fixed 4096 slots */
  pt_trace* t = new_trace(PT_DEFAULT_MAX_OPS);
  dumper_arg a = {.t = t};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, dump_loop, &a), 0);
  assert_int_equal(start_ops(t, 0, N), N);
  atomic_store(&a.done, 1);
  pthread_join(th, NULL);
  assert_true(a.monotonic);
  assert_true(a.dumps > 0);
  assert_int_equal(drops(t, PT_DROP_OPS_DROPPED), 0);
  assert_int_equal(drops(t, PT_DROP_OPS_RECLAIMED), 0);
  assert_int_equal(pt_trace_active_ops(t), N);
  pt_dump* d = pt_trace_snapshot(t);
  assert_int_equal(pt_dump_active(d), N);
  pt_dump_free(d);
  pt_trace_destroy(t);
}

/* ---- the cap and the budget ---- */

static void test_cap_per_trace(void** state) {
  (void)state;
  pt_trace* t = new_trace(100);
  assert_int_equal(start_ops(t, 0, 130), 100);
  assert_int_equal(drops(t, PT_DROP_OPS_DROPPED), 30);
  assert_int_equal(drops(t, PT_DROP_OVER_BUDGET), 0); /* all at the cap */
  pt_trace_destroy(t);
}

typedef struct {
  char line[2][2048];
  int n;
} first_lines;

static void keep_line(void* arg, const char* line, int len) {
  first_lines* l = arg;
  if (l->n < 2) snprintf(l->line[l->n], sizeof l->line[0], "%.*s", len, line);
  l->n++;
}

/* Both causes in one trace: the budget first, then the cap. */
static void test_drop_causes(void** state) {
  (void)state;
  const uint64_t saved = pt_trace_memory_budget();
  const uint64_t base = pt_trace_memory_charged();
  pt_trace_set_memory_budget(base + 2 * CHUNK_BYTES); /* room for 128 slots */
  pt_trace* t = new_trace(192);
  assert_int_equal(start_ops(t, 0, 135), 128);
  assert_int_equal(drops(t, PT_DROP_OPS_DROPPED), 7);
  assert_int_equal(drops(t, PT_DROP_OVER_BUDGET), 7);
  pt_trace_set_memory_budget(saved); /* room again: the trace grows to its cap */
  assert_int_equal(start_ops(t, 135, 75), 64);
  assert_int_equal(drops(t, PT_DROP_OPS_DROPPED), 7 + 11);
  assert_int_equal(drops(t, PT_DROP_OVER_BUDGET), 7);
  /* the text dump's drop line and the JSON header say both */
  pt_dump* d = pt_trace_snapshot(t);
  assert_non_null(d);
  first_lines text = {0}, json = {0};
  pt_dump_text(d, keep_line, &text);
  assert_true(text.n >= 2);
  assert_non_null(strstr(text.line[1], "proxytrace dropped or refused events (max ops 192):"));
  assert_non_null(strstr(text.line[1], " opsDropped:18 "));
  assert_non_null(strstr(text.line[1], " opsOverBudget:7"));
  pt_dump_meta m = {.host = "h", .pid = 1, .host_lib = "nccl", .profiler_api = 6, .trigger = "api"};
  pt_dump_json(d, &m, keep_line, &json);
  assert_true(json.n >= 1);
  assert_non_null(strstr(json.line[0], "\"drops\":{\"opsDropped\":18,"));
  assert_non_null(strstr(json.line[0], ",\"opsOverBudget\":7}"));
  pt_dump_free(d);
  pt_trace_destroy(t);
  assert_int_equal(pt_trace_memory_charged(), base);
}

static void find_drops(void* arg, const char* line, int len) {
  (void)len;
  if (strstr(line, "proxytrace dropped or refused events") && strstr(line, " opsDropped:100") &&
      strstr(line, " opsOverBudget:100"))
    ++*(int*)arg;
}

static void test_budget(void** state) {
  (void)state;
  const uint64_t saved = pt_trace_memory_budget();
  const uint64_t base = pt_trace_memory_charged();
  pt_trace_set_memory_budget(base + 4 * CHUNK_BYTES); /* room for 256 slots */
  pt_trace* a = new_trace(1024);
  pt_trace* b = new_trace(1024);
  assert_int_equal(start_ops(a, 0, 200), 200); /* 4 chunks: the whole budget */
  assert_int_equal(pt_trace_memory_charged(), base + 4 * CHUNK_BYTES);
  /* b has no slot and none free: every op is dropped, each counted */
  assert_int_equal(start_ops(b, 0, 100), 0);
  assert_int_equal(drops(b, PT_DROP_OPS_DROPPED), 100);
  assert_int_equal(drops(b, PT_DROP_OVER_BUDGET), 100);
  /* a fills its 4 chunks, then drops exactly what is past them */
  assert_int_equal(start_ops(a, 200, 60), 56);
  assert_int_equal(drops(a, PT_DROP_OPS_DROPPED), 4);
  assert_int_equal(drops(a, PT_DROP_OVER_BUDGET), 4);
  assert_int_equal(pt_trace_memory_charged(), base + 4 * CHUNK_BYTES);
  /* the dump says so */
  int said = 0;
  pt_trace_dump(b, find_drops, &said);
  assert_int_equal(said, 1);
  /* a's chunks come back with a; b grows into them */
  pt_trace_destroy(a);
  assert_int_equal(pt_trace_memory_charged(), base);
  assert_int_equal(start_ops(b, 100, 100), 100);
  assert_int_equal(drops(b, PT_DROP_OPS_DROPPED), 100);
  pt_trace_destroy(b);
  pt_trace_set_memory_budget(saved);
  assert_int_equal(pt_trace_memory_charged(), base);
}

/* ---- slab pages populated off the recording thread (pt_trace_prefault) ---- */

/* Resident pages among those of bytes [from, to) after `base` (mincore). */
static size_t resident(const void* base, size_t from, size_t to) {
  const size_t page = pt_vmem_page();
  const uintptr_t a = ((uintptr_t)base + from) & ~(uintptr_t)(page - 1);
  const uintptr_t b = (uintptr_t)base + to;
  const size_t n = (b - a + page - 1) / page;
  unsigned char v[4096];
  assert_true(n <= sizeof v);
  assert_int_equal(mincore((void*)a, b - a, v), 0);
  size_t r = 0;
  for (size_t i = 0; i < n; i++) r += v[i] & 1;
  return r;
}

/* Resident pages among the slab pages of slots [from, to). */
static size_t resident_slots(const pt_trace* t, uint32_t from, uint32_t to) {
  return resident(t->slab, (size_t)from * PT_SLOT_BYTES, (size_t)to * PT_SLOT_BYTES);
}

static size_t pages_of(uint32_t slots) { return (size_t)slots * PT_SLOT_BYTES / pt_vmem_page(); }

/* Starts n ops (not registered: only their slots are written). */
static void start_unregistered(pt_trace* t, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    pt_op_info in = {.comm_hash = 1, .op_count = i, .peer = 1, .nsteps = 4, .is_send = 1};
    assert_non_null(pt_op_start(t, &in));
  }
}

/* Creation populates nothing (not the init caller's work); the first
 * prefault populates the first 64 slots' pages and no more; the first 64
 * ops then take no fault. */
static void test_first_ops_take_no_fault(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_DEFAULT_MAX_OPS);
  assert_int_equal(t->slab_lead.ready, 0);
  assert_int_equal(resident_slots(t, 0, 4 * PT_PREFAULT_MIN), 0);
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->slab_lead.ready, PT_PREFAULT_MIN);
  assert_int_equal(resident_slots(t, 0, PT_PREFAULT_MIN), pages_of(PT_PREFAULT_MIN));
  assert_int_equal(resident_slots(t, PT_PREFAULT_MIN, 4 * PT_PREFAULT_MIN), 0);
  const long f0 = pt_test_thread_faults();
  start_unregistered(t, PT_PREFAULT_MIN);
  const long faults = pt_test_thread_faults() - f0;
  if (pt_test_faults_counted()) assert_int_equal(faults, 0);
  assert_int_equal(pt_trace_slots_used(t), PT_PREFAULT_MIN);
  assert_int_equal(resident_slots(t, PT_PREFAULT_MIN, 4 * PT_PREFAULT_MIN), 0);
  pt_trace_destroy(t);
}

/* Registration writes the op id table too (idmap.h): the first prefault
 * populates its first entries' pages as well, so a new communicator's first
 * 64 ops — started and registered, each with its own opCount, as
 * collectives and p2p ops count them (opCount << 1 | p2p) — take no fault. */
static void test_first_registered_ops_take_no_fault(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_DEFAULT_MAX_OPS);
  assert_int_equal(pt_trace_prefault(t), 0);
  const long f0 = pt_test_thread_faults();
  for (int i = 0; i < (int)PT_PREFAULT_MIN; i++) {
    pt_op_info in = {.comm_hash = 0xbeef, .op_count = i, .peer = 1, .nsteps = 4, .is_send = 1};
    pt_handle h = pt_op_start(t, &in);
    assert_non_null(h);
    pt_op_register(h);
  }
  const long faults = pt_test_thread_faults() - f0;
  if (pt_test_faults_counted()) assert_int_equal(faults, 0);
  assert_int_equal(pt_trace_active_ops(t), PT_PREFAULT_MIN);
  pt_trace_destroy(t);
}

/* Past the populated slots the recording thread faults (what the prefault
 * saves); after a prefault, a lead of twice that growth is populated and
 * the next ops within it take no fault. */
static void test_prefault_follows_growth(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_DEFAULT_MAX_OPS);
  assert_int_equal(pt_trace_prefault(t), 0);
  long f0 = pt_test_thread_faults();
  start_unregistered(t, 256); /* 192 slots past the first 64: 12 pages faulted here */
  if (pt_test_faults_counted()) assert_true(pt_test_thread_faults() - f0 >= (long)pages_of(256 - PT_PREFAULT_MIN));
  assert_int_equal(pt_trace_prefault(t), 0); /* the dumper's part */
  assert_int_equal(t->slab_lead.ready, 256 + 512);   /* twice the 256 taken since creation */
  assert_int_equal(resident_slots(t, 256, 256 + 512), pages_of(512));
  assert_int_equal(resident_slots(t, 256 + 512, 256 + 1024), 0);
  f0 = pt_test_thread_faults();
  start_unregistered(t, 512);
  if (pt_test_faults_counted()) assert_int_equal(pt_test_thread_faults() - f0, 0);
  /* the lead stays within PT_PREFAULT_MAX however fast the trace grows */
  start_unregistered(t, 4096);
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->slab_lead.ready, 256 + 512 + 4096 + PT_PREFAULT_MAX);
  /* nothing to do when nothing was taken */
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->slab_lead.ready, 256 + 512 + 4096 + PT_PREFAULT_MAX);
  pt_trace_destroy(t);
}

/* 1 where the kernel populates pages on request (MADV_POPULATE_WRITE,
 * Linux 5.14+, not an emulator that accepts it and does nothing): only
 * there is the id table, which is never touched instead, populated ahead. */
static int populate_works(void) {
  const size_t page = pt_vmem_page();
  void* p = pt_vmem_reserve(page);
  assert_non_null(p);
  const int rc = pt_vmem_populate(p, page, 0);
  pt_vmem_release(p, page);
  return rc == 0;
}

/* Resident pages among the op id table's pages of entries [from, to). */
static size_t resident_ids(const pt_trace* t, uint32_t from, uint32_t to) {
  return resident(t->lane[0]->ids.e, (size_t)from * sizeof(pt_idmap_entry), (size_t)to * sizeof(pt_idmap_entry));
}

/* The id table's lead follows the highest opCount as the slab's follows
 * n_init: ops that finish (their buckets go) still move it, and after a
 * prefault the next opCounts within twice that growth take no fault. */
static void test_id_table_prefault_follows_opcounts(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_DEFAULT_MAX_OPS);
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->lane[0]->ids_lead.ready, PT_IDS_PREFAULT_MIN);
  assert_int_equal(resident_ids(t, PT_IDS_PREFAULT_MIN + 512, PT_IDS_PREFAULT_MIN + 4096), 0);
  run_ops(t, 0, 2047); /* one opCount each: the top moves though one op lives at a time */
  run_ops(t, -1, 1);    /* an op without an opCount (-1, at the table's end) does not move it */
  assert_int_equal(pt_trace_active_ops(t), 0);
  assert_int_equal(pt_idmap_top(&t->lane[0]->ids), 2048); /* the last bucket's entry, and the one after it */
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->lane[0]->ids_lead.ready, 2048 + 4096); /* twice the growth */
  if (populate_works())
    assert_true(resident_ids(t, 2048, 2048 + 4096) >= 4096 * sizeof(pt_idmap_entry) / pt_vmem_page());
  else
    print_message("no MADV_POPULATE_WRITE here (old kernel or an emulator): the id table's residence is not checked\n");
  const long f0 = pt_test_thread_faults();
  run_ops(t, 2047, 4096);
  if (pt_test_faults_counted()) assert_int_equal(pt_test_thread_faults() - f0, 0);
  pt_trace_destroy(t);
}

/* Never past the communicator's cap. */
static void test_prefault_stops_at_the_cap(void** state) {
  (void)state;
  pt_trace* t = new_trace(100);
  start_unregistered(t, 90);
  assert_int_equal(pt_trace_prefault(t), 0);
  assert_int_equal(t->slab_lead.ready, 100);
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
  const int rc = pt_vmem_populate(p + 7 * page, page, 1);
  assert_true(rc == 0 || rc == 1);
  assert_int_equal(mincore(p, 8 * page, v), 0);
  assert_int_equal(v[7] & 1, 1);
  pt_vmem_release(p, 8 * page);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idle_trace_holds_no_slot),
      cmocka_unit_test(test_reuse_bounds_growth),
      cmocka_unit_test(test_growth_under_concurrent_dumps),
      cmocka_unit_test(test_cap_per_trace),
      cmocka_unit_test(test_budget),
      cmocka_unit_test(test_drop_causes),
      cmocka_unit_test(test_first_ops_take_no_fault),
      cmocka_unit_test(test_first_registered_ops_take_no_fault),
      cmocka_unit_test(test_prefault_follows_growth),
      cmocka_unit_test(test_prefault_stops_at_the_cap),
      cmocka_unit_test(test_id_table_prefault_follows_opcounts),
      cmocka_unit_test(test_touch_fallback),
  };
  return cmocka_run_group_tests_name("growth", tests, NULL, NULL);
}
