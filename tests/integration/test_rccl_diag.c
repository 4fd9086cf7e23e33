/*
 * test_rccl_diag.c — RCCL's ProxyDiag where the plugin cannot see the
 * host's numbering or layout (src/plugin/diag.c): RCCL 2.31's state 32
 * accepted like 31; updates under a state the plugin does not expect, or
 * ProxyOps whose RCCL fields break an invariant the host keeps, give one
 * WARN per problem, "diag: missing" / "diag: mismatch" in the dump, and
 * counters from the step events — never a dump whose zeros look healthy.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static rh_op_desc desc(uint64_t hash, int64_t opcount, int peer, int send) {
  rh_op_desc d = {.comm_hash = hash, .op_count = opcount, .channel = 0, .peer = peer, .is_send = send,
                  .raw_nsteps = 8, .slice_steps = 1, .nbytes = 8 * 4096u, .func = 4, .proto = 2,
                  .pattern = 1, .chunk_size = 4096};
  return d;
}

/* Lines the plugin logged at RCCL's WARN (3) containing `text`. */
static int warned(const char* text) {
  int n = 0;
  for (int i = 0; i < rh_captured.n; i++) n += rh_captured.level[i] == 3 && strstr(rh_captured.text[i], text);
  return n;
}

/* The dump line holding `key`, or NULL. */
static const char* line_of(void* ctx, const char* key) {
  rh_dump(&plugin, ctx);
  for (int i = 1; i < rh_captured.n; i++)
    if (strstr(rh_captured.text[i], key)) return rh_captured.text[i];
  return NULL;
}

/* An RCCL known by its symbols (and, from its ncclGetVersion, 2.31) whose
 * ProxyOps come without RCCL's fields: it did not take the ProxyDiag bit we
 * asked for. Said once, at RCCL's WARN, and in the dump. First: the host's
 * version is read with the process's first communicator. */
static void test_rccl_without_fields_is_missing(void** state) {
  (void)state;
  void* so = dlopen(PT_FAKEHOST_DIR "/libfakehost-rccl.so", RTLD_NOW | RTLD_LOCAL);
  assert_non_null(so);
  ncclDebugLogger_t log = (ncclDebugLogger_t)dlsym(so, "fakehost_log");
  int (*lines)(int) = (int (*)(int))dlsym(so, "fakehost_lines");
  assert_non_null(log);
  assert_non_null(lines);
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(plugin.p->init(&ctx, 3, &mask, "rccl", 2, 4, 0, log), ncclSuccess);
  assert_non_null(ctx);
  void* ops[9];
  for (int i = 0; i < 9; i++) ops[i] = rh_stock_op_active(&plugin, ctx, 1, 4, 1);
  assert_int_equal(lines(3), 0); /* nothing said on the recording thread */
  rh_dump(&plugin, ctx);
  assert_int_equal(lines(3), 1); /* the WARN, through the host's logger, at RCCL's level */
  assert_non_null(line_of(ctx, "proxytrace host: diag: missing"));
  for (int i = 0; i < 9; i++) plugin.p->stopEvent(ops[i]);
  plugin.p->finalize(ctx);
  assert_int_equal(lines(3), 1);
  dlclose(so);
}

static void test_state_32_and_a_bad_override(void** state) {
  (void)state;
  /* Read once, with the first communicator: a bad value is said, with the
   * accepted ones, and the defaults stay. */
  setenv("PROXYTRACE_RCCL_DIAG", "99:1", 1);
  rh_log_clear();
  void* ctx = rh_init(&plugin, 5, 0, 4);
  unsetenv("PROXYTRACE_RCCL_DIAG");
  int said = 0; /* at the WARN level of the host the logger's library is (NVIDIA's here) */
  for (int i = 0; i < rh_captured.n; i++) said += strstr(rh_captured.text[i], "PROXYTRACE_RCCL_DIAG='99:1' is not BIT:STATE") != NULL;
  assert_int_equal(said, 1);
  /* RCCL 2.31 numbering: updates as state 32 */
  rh_diag_state = ncclProfilerProxyDiagUpdate_v7;
  for (int i = 0; i < 12; i++) {
    rh_op_desc d = desc(5, i, 1, i % 2);
    rh_run_full(&plugin, ctx, &d, 1);
  }
  rh_op op;
  rh_op_desc d = desc(5, 12, 2, 1);
  rh_op_active(&plugin, ctx, &op, &d, 3, 0, 2, 1, 0);
  const char* l = line_of(ctx, "<5:12:0>");
  assert_non_null(l);
  assert_non_null(strstr(l, " po:3,"));
  assert_non_null(strstr(l, " done:1"));
  for (int i = 0; i < rh_captured.n; i++) assert_null(strstr(rh_captured.text[i], "proxytrace host:"));
  rh_op_stop(&op);
  plugin.p->finalize(ctx);
  rh_diag_state = ncclProfilerProxyDiagUpdate;
}

static void test_unexpected_numbering_is_missing(void** state) {
  (void)state;
  rh_diag_state = 40; /* a numbering this plugin was not told about */
  void* ctx = rh_init(&plugin, 6, 0, 4);
  rh_log_clear();
  rh_op ops[12];
  for (int i = 0; i < 12; i++) {
    rh_op_desc d = desc(6, i, 1, 1);
    rh_op_active(&plugin, ctx, &ops[i], &d, 4, 0, 2, 0, 0);
  }
  assert_int_equal(warned("ProxyDiag"), 0);
  rh_dump(&plugin, ctx);
  assert_int_equal(warned("ProxyDiag updates are missing"), 0); /* once per process: the first test said it */
  assert_true(rh_captured.n > 2);
  assert_string_equal(rh_captured.text[1], /* after the header */
                      "proxytrace host: diag: missing (no RCCL ProxyDiag update arrived: counters "
                      "come from step events)");
  /* Ops after the verdict are counted from their steps (their RCCL fields
   * are not read: no opCount from them), not left at zero. */
  int from_steps = 0;
  for (int i = 2; i < rh_captured.n; i++)
    from_steps += strstr(rh_captured.text[i], "<6:-1:") && strstr(rh_captured.text[i], " po:4,");
  assert_true(from_steps >= 4);
  for (int i = 0; i < 12; i++) rh_op_stop(&ops[i]);
  /* A second communicator finds it too; the WARN is not said again. */
  void* ctx2 = rh_init(&plugin, 16, 1, 4);
  rh_log_clear();
  for (int i = 0; i < 12; i++) {
    rh_op_desc d = desc(16, i, 2, 0);
    rh_op_active(&plugin, ctx2, &ops[i], &d, 2, 0, 0, 0, 0);
  }
  assert_int_equal(warned("ProxyDiag"), 0);
  assert_non_null(line_of(ctx2, "proxytrace host: diag: missing"));
  for (int i = 0; i < 12; i++) rh_op_stop(&ops[i]);
  plugin.p->finalize(ctx);
  plugin.p->finalize(ctx2);
  rh_diag_state = ncclProfilerProxyDiagUpdate;
}

/* Each broken invariant on a communicator of its own: one WARN in all,
 * "diag: mismatch" on each, the op recorded from its steps, and updates
 * of such ops ignored. */
static void test_layout_mismatch(void** state) {
  (void)state;
  rh_log_clear();
  struct {
    uint64_t op_hash;
    int peer, is_send, channel;
  } bad[] = {{8, 1, 1, 0}, {7, 4, 1, 0}, {7, -1, 1, 0}, {7, 1, 2, 0}, {7, 1, 1, 64}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    void* ctx = rh_init(&plugin, 7, 0, 4);
    rh_op op, good;
    rh_op_desc d = desc(bad[k].op_hash, 3, bad[k].peer, bad[k].is_send);
    d.channel = bad[k].channel;
    rh_op_active(&plugin, ctx, &op, &d, 2, 0, 0, 0, 0);
    rh_op_desc g = desc(7, 4, 1, 1);
    rh_op_active(&plugin, ctx, &good, &g, 3, 0, 0, 0, 0); /* fine, but no longer read */
    rh_dump(&plugin, ctx);
    if (k == 0) assert_int_equal(warned("layout does not match: a ProxyOp's commHash"), 1);
    else assert_int_equal(warned("layout"), 0);
    assert_non_null(line_of(ctx, "proxytrace host: diag: mismatch"));
    const char* l = line_of(ctx, "<7:-1:1>"); /* the good op: stock key, steps' counters */
    assert_non_null(l);
    assert_non_null(strstr(l, " po:3,"));
    assert_null(line_of(ctx, "<7:4:"));
    rh_op_stop(&op);
    rh_op_stop(&good);
    plugin.p->finalize(ctx);
  }
  void* ctx = rh_init(&plugin, 7, 0, 4); /* once said, never again in this process */
  rh_op op;
  rh_op_desc d = desc(9, 3, 1, 1);
  rh_op_active(&plugin, ctx, &op, &d, 1, 0, 0, 0, 0);
  rh_dump(&plugin, ctx);
  assert_int_equal(warned("layout does not match"), 0);
  assert_non_null(line_of(ctx, "diag: mismatch"));
  rh_op_stop(&op);
  plugin.p->finalize(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rccl_without_fields_is_missing),
      cmocka_unit_test(test_state_32_and_a_bad_override),
      cmocka_unit_test(test_unexpected_numbering_is_missing),
      cmocka_unit_test(test_layout_mismatch),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
