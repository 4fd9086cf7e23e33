/*
 * test_bad_input.c — what the host may hand the plugin that it should not
 * (spec nccl-profiler-abi.md §2.10, §6.12; rccl-proxytrace.md §6.2): each case
 * has a defined outcome — ignored and counted, never a crash, never another
 * op's record touched. Counts are read back from the dump's drop line.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rccl_host.h"

static rh_plugin plugin;

/* This machine's name for its CPU counter in PROXYTRACE_CLOCK. */
#if defined(__aarch64__)
#define CLOCK_NAME "counter"
#else
#define CLOCK_NAME "tsc"
#endif

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

static rh_op_desc desc(int64_t opcount, int nsteps) {
  rh_op_desc d = {.comm_hash = 11, .op_count = opcount, .channel = 0, .peer = 1, .is_send = 1,
                  .raw_nsteps = nsteps, .slice_steps = 1, .nbytes = 100, .chunk_size = 64};
  return d;
}

/* The value of `name:` in the dump's drop line, 0 if there is no such line. */
static unsigned long drop_count(void* ctx, const char* name) {
  rh_dump(&plugin, ctx);
  const char* line = rh_drop_line();
  if (!*line) return 0;
  char pat[64];
  snprintf(pat, sizeof pat, " %s:", name);
  const char* p = strstr(line, pat);
  assert_non_null(p);
  return strtoul(p + strlen(pat), NULL, 10);
}

/* The one live op's line must still read po:<posted>. */
static void assert_op_posted(void* ctx, int posted) {
  rh_dump(&plugin, ctx);
  char want[32];
  snprintf(want, sizeof want, "po:%d,", posted);
  int found = 0;
  for (int i = 1; i < rh_captured.n; i++) found += strstr(rh_captured.text[i], want) != NULL;
  assert_int_equal(found, 1);
}

static void test_null_arguments(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 11, 0, 2);
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyOp;
  /* NULL handle pointer, NULL descriptor */
  assert_int_equal(plugin.p->startEvent(ctx, NULL, &e), ncclSuccess);
  void* h = (void*)0x1234;
  assert_int_equal(plugin.p->startEvent(ctx, &h, NULL), ncclSuccess);
  assert_null(h);
  /* NULL handles */
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  assert_int_equal(plugin.p->stopEvent(NULL), ncclSuccess);
  assert_int_equal(plugin.p->recordEventState(NULL, ncclProfilerProxyDiagUpdate, &a), ncclSuccess);
  assert_int_equal(plugin.p->recordEventState(NULL, ncclProfilerProxyOpInProgress_v4, NULL),
                   ncclSuccess);
  /* NULL args on a diag update of a live op: refused, op untouched */
  rh_op op;
  rh_op_desc d = desc(0, 8);
  rh_op_active(&plugin, ctx, &op, &d, 3, 0, 0, 0, 0);
  assert_int_equal(plugin.p->recordEventState(op.handle, ncclProfilerProxyDiagUpdate, NULL),
                   ncclSuccess);
  assert_int_equal(drop_count(ctx, "badState"), 1);
  assert_op_posted(ctx, 3);
  /* init with NULL out-pointers; finalize and dump of NULL */
  int mask = 0;
  assert_int_equal(plugin.p->init(NULL, 1, &mask, NULL, 1, 1, 0, rh_logger), ncclSuccess);
  void* c2 = NULL;
  assert_int_equal(plugin.p->init(&c2, 1, NULL, NULL, 1, 1, 0, NULL), ncclSuccess);
  assert_non_null(c2);
  assert_int_equal(plugin.p->finalize(c2), ncclSuccess);
  assert_int_equal(plugin.p->finalize(NULL), ncclSuccess);
  plugin.dump(NULL, rh_logger);
  plugin.dump(ctx, NULL);
  rh_op_stop(&op);
  plugin.p->finalize(ctx);
}

static void test_unknown_types_and_states(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 11, 0, 2);
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  void* h = (void*)0x1;
  /* Group/API events get NULL, silently: hosts send them anyway (Coll and
   * P2p get task handles: test_stock_nccl; KernelCh kernel-channel
   * handles: test_progress) */
  const uint64_t known[] = {ncclProfileGroup, ncclProfileProxyCtrl, ncclProfileNetPlugin,
                            ncclProfileGroupApi, ncclProfileCollApi, ncclProfileP2pApi,
                            ncclProfileKernelLaunch, ncclProfileCeColl, ncclProfileCeSync,
                            ncclProfileCeBatch};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    e.type = known[i];
    h = (void*)0x1;
    plugin.p->startEvent(ctx, &h, &e);
    assert_null(h);
  }
  assert_int_equal(drop_count(ctx, "badState"), 0);
  /* an unknown type (two bits, or bit 40) is refused and counted */
  e.type = 3;
  plugin.p->startEvent(ctx, &h, &e);
  assert_null(h);
  e.type = 1ull << 40;
  plugin.p->startEvent(ctx, &h, &e);
  assert_null(h);
  e.type = 0; /* no type at all */
  plugin.p->startEvent(ctx, &h, &e);
  e.type = ncclProfileProxyDiag; /* a mask bit, never a started event */
  plugin.p->startEvent(ctx, &h, &e);
  assert_int_equal(drop_count(ctx, "badState"), 4);
  /* unknown state, and states that belong to the other kind of handle */
  rh_op op;
  rh_op_desc d = desc(0, 8);
  rh_op_active(&plugin, ctx, &op, &d, 2, 0, 0, 0, 0);
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  plugin.p->recordEventState(op.handle, (ncclProfilerEventState_v6_t)77, &a);
  plugin.p->recordEventState(op.handle, ncclProfilerProxyStepSendWait, &a); /* step state on op */
  plugin.p->recordEventState(op.steps[1], ncclProfilerProxyOpInProgress_v4, &a); /* op on step */
  /* the most negative state, on both kinds (fuzz_abi: the step-state range
   * check overflowed, undefined behaviour that UBSan stops on) */
  plugin.p->recordEventState(op.handle, (ncclProfilerEventState_v6_t)INT_MIN, &a);
  plugin.p->recordEventState(op.steps[1], (ncclProfilerEventState_v6_t)INT_MIN, &a);
  assert_int_equal(drop_count(ctx, "badState"), 9);
  assert_int_equal(drop_count(ctx, "badHandle"), 0);
  /* counterKind out of range */
  rh_diag(&op, 11, 5, 0);
  rh_diag(&op, 255, 5, 0);
  assert_int_equal(drop_count(ctx, "badCounterKind"), 2);
  assert_op_posted(ctx, 2);
  rh_op_stop(&op);
  plugin.p->finalize(ctx);
}

static void test_lifecycle_misuse(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 11, 0, 2);
  rh_op a, b;
  rh_op_desc d = desc(0, 8);
  /* diag update for an op that never entered progress: untracked */
  rh_op_start(&plugin, ctx, &a, &d);
  rh_diag(&a, ncclProxyDiagPosted, 1, 0);
  assert_int_equal(drop_count(ctx, "untrackedUpdate"), 1);
  /* stop without start: a handle that was stopped and its slot reused */
  rh_op_stop(&a);
  rh_op_active(&plugin, ctx, &b, &d, 4, 0, 0, 0, 0);
  rh_op_stop(&a); /* stale: must not stop b */
  rh_diag(&a, ncclProxyDiagPosted, 7, 0);
  assert_op_posted(ctx, 4);
  assert_true(drop_count(ctx, "staleHandle") >= 2);
  /* double stop of an op that is still active: it stays in the dump */
  rh_op_stop(&b);
  rh_op_stop(&b);
  assert_op_posted(ctx, 4);
  assert_true(drop_count(ctx, "staleHandle") >= 3);
  /* a stopped op takes no more updates */
  rh_diag(&b, ncclProxyDiagPosted, 6, 0);
  assert_op_posted(ctx, 4);
  plugin.p->finalize(ctx);
}

/* PXN: a ProxyOp of another process carries that process's context pointer;
 * it must not be touched. */
static void test_foreign_pid(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 11, 0, 2);
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyOp;
  e.proxyOp.pid = getpid() + 1;
  e.proxyOp.rawProxyNsteps = 4;
  void* h = (void*)0x1;
  /* the context is garbage on purpose: the pid check comes first */
  assert_int_equal(plugin.p->startEvent((void*)0x10, &h, &e), ncclSuccess);
  assert_null(h);
  assert_int_equal(drop_count(ctx, "foreignPid"), 1);
  /* a step whose parent is NULL (what we returned) gets NULL */
  e.type = ncclProfileProxyStep;
  e.parentObj = NULL;
  h = (void*)0x1;
  plugin.p->startEvent((void*)0x10, &h, &e);
  assert_null(h);
  plugin.p->finalize(ctx);
}

/* A ProxyStep started on communicator X with a parent op of communicator Y
 * — live, then finalized — is refused and counted against X; Y's freed
 * memory is never read (ASan: no use after free). */
static void test_step_parent_of_another_context(void** state) {
  (void)state;
  void* x = rh_init(&plugin, 21, 0, 2);
  void* y = rh_init(&plugin, 22, 0, 2);
  rh_op opy;
  rh_op_desc d = desc(0, 8);
  d.comm_hash = 22;
  rh_op_active(&plugin, y, &opy, &d, 1, 0, 0, 0, 0);
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyStep;
  e.parentObj = opy.handle;
  e.proxyStep.step = 1;
  void* h = (void*)0x1;
  assert_int_equal(plugin.p->startEvent(x, &h, &e), ncclSuccess);
  assert_null(h);
  assert_int_equal(drop_count(x, "wrongContext"), 1);
  assert_int_equal(drop_count(y, "wrongContext"), 0);
  plugin.p->finalize(y);
  h = (void*)0x1;
  assert_int_equal(plugin.p->startEvent(x, &h, &e), ncclSuccess);
  assert_null(h);
  assert_int_equal(drop_count(x, "wrongContext"), 2);
  plugin.p->finalize(x);
}

/* A stock-NCCL op (zeroed RCCL fields) whose DONE a ProxyDiag update set
 * near INT64_MAX, then a step stop: defined arithmetic (UBSan), the counter
 * saturates. */
static void test_step_stop_after_huge_counter(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 23, 0, 2);
  void* op = rh_stock_op_active(&plugin, ctx, 1, 8, 1);
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  a.proxyDiag.counterKind = ncclProxyDiagDone;
  a.proxyDiag.value = INT64_MAX - 3;
  plugin.p->recordEventState(op, ncclProfilerProxyDiagUpdate, &a);
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyStep;
  e.parentObj = op;
  e.proxyStep.step = 5;
  void* st = NULL;
  plugin.p->startEvent(ctx, &st, &e);
  assert_non_null(st);
  plugin.p->recordEventState(st, ncclProfilerProxyStepRecvGPUWait, NULL);
  plugin.p->stopEvent(st);
  rh_dump(&plugin, ctx);
  int found = 0;
  for (int i = 1; i < rh_captured.n; i++)
    found += strstr(rh_captured.text[i], " done:9223372036854775807") != NULL;
  assert_int_equal(found, 1);
  plugin.p->stopEvent(op);
  plugin.p->finalize(ctx);
}

/* A context the plugin opted out of (NULL) gets NULL handles. */
static void test_null_context(void** state) {
  (void)state;
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyOp;
  e.proxyOp.pid = getpid();
  e.proxyOp.rawProxyNsteps = 4;
  void* h = (void*)0x1;
  assert_int_equal(plugin.p->startEvent(NULL, &h, &e), ncclSuccess);
  assert_null(h);
}

/* A bad PROXYTRACE_MAX_OPS is reported once, with the accepted range, and
 * the default applies. */
static void test_bad_env(void** state) {
  (void)state;
  rh_log_clear();
  setenv("PROXYTRACE_MAX_OPS", "lots", 1);
  setenv("PROXYTRACE_CLOCK", "sundial", 1);
  setenv("PROXYTRACE_MAX_MEMORY_MB", "0", 1);
  void* c1 = rh_init(&plugin, 1, 0, 2);
  void* c2 = rh_init(&plugin, 2, 1, 2);
  unsetenv("PROXYTRACE_MAX_OPS");
  unsetenv("PROXYTRACE_CLOCK");
  unsetenv("PROXYTRACE_MAX_MEMORY_MB");
  int warnings = 0, clock_warnings = 0, memory_warnings = 0;
  for (int i = 0; i < rh_captured.n; i++) {
    if (strstr(rh_captured.text[i], "PROXYTRACE_MAX_OPS='lots'")) {
      warnings++;
      assert_non_null(strstr(rh_captured.text[i], "16..1048576"));
      assert_non_null(strstr(rh_captured.text[i], "default 65536"));
    }
    if (strstr(rh_captured.text[i], "PROXYTRACE_MAX_MEMORY_MB='0'")) {
      memory_warnings++;
      assert_non_null(strstr(rh_captured.text[i], "1..1048576"));
      assert_non_null(strstr(rh_captured.text[i], "default 1024"));
    }
    if (strstr(rh_captured.text[i], "PROXYTRACE_CLOCK='sundial'")) {
      clock_warnings++;
      assert_non_null(strstr(rh_captured.text[i], "accepted '" CLOCK_NAME "' or 'monotonic'"));
      assert_non_null(strstr(rh_captured.text[i], "using the default"));
    }
  }
  assert_int_equal(warnings, 1);
  assert_int_equal(clock_warnings, 1);
  assert_int_equal(memory_warnings, 1);
  /* the defaults: 20 000 live ops fit in one communicator (the slab grows) */
  rh_op_desc d = desc(0, 2);
  static rh_op ops[20000];
  for (int i = 0; i < 20000; i++) {
    rh_op_start(&plugin, c1, &ops[i], &d);
    assert_non_null(ops[i].handle);
    rh_op_in_progress(&ops[i]);
  }
  assert_int_equal(drop_count(c1, "opsDropped"), 0);
  plugin.p->finalize(c1);
  plugin.p->finalize(c2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_null_arguments),   cmocka_unit_test(test_unknown_types_and_states),
      cmocka_unit_test(test_lifecycle_misuse), cmocka_unit_test(test_foreign_pid),
      cmocka_unit_test(test_null_context),     cmocka_unit_test(test_bad_env),
      cmocka_unit_test(test_step_parent_of_another_context),
      cmocka_unit_test(test_step_stop_after_huge_counter),
  };
  return cmocka_run_group_tests_name("bad_input", tests, setup, teardown);
}
