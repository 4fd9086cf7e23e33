/*
 * test_probe_env.c — pt_probe_env(): the probe answers for a given
 * environment (what a process started with it would load) and never for
 * this process's own, which it leaves as it was. The Python binding's
 * probe(env=...) is this function; the loader matrix runs it on every case
 * (tests/python/test_matrix.py), these are the rules it relies on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"
#include "proxytrace/loader.h"

static const char* D; /* fixture folder */

static int setup(void** state) {
  (void)state;
  D = fx_tmpdir();
  fx_copy(fx_plugin("good"), fx_fmt("%s/good.so", D));
  fx_mkdirs(fx_fmt("%s/lib", D));
  fx_copy(fx_plugin("v1only"), fx_fmt("%s/lib/libnccl-profiler-proxytrace.so", D));
  fx_mkdirs(fx_fmt("%s/home", D));
  fx_write(fx_fmt("%s/home/.nccl.conf", D),
           fx_fmt("NCCL_PROFILER_PLUGIN=%s/lib/libnccl-profiler-proxytrace.so\n", D));
  fx_write(fx_fmt("%s/named.conf", D), fx_fmt("NCCL_PROFILER_PLUGIN=%s/good.so\n", D));
  /* This process says something else for every variable the probe reads. */
  setenv("NCCL_PROFILER_PLUGIN", fx_fmt("%s/missing.so", D), 1);
  setenv("RCCL_ENABLE_PROXY_TRACE", "1", 1);
  fx_copy(fx_plugin("v5only"), fx_fmt("%s/net.so", D));
  setenv("NCCL_NET_PLUGIN", fx_fmt("%s/net.so", D), 1);
  setenv("LD_LIBRARY_PATH", fx_fmt("%s/nowhere", D), 1);
  setenv("NCCL_CONF_FILE", fx_fmt("%s/no.conf", D), 1);
  setenv("HOME", fx_fmt("%s/nohome", D), 1);
  fx_mkdirs(fx_fmt("%s/phome/lib", D));
  fx_copy(fx_plugin("good"), fx_fmt("%s/phome/lib/librccl-profiler-proxytrace.so.1", D));
  setenv("PROXYTRACE_HOME", fx_fmt("%s/phome", D), 1);
  return 0;
}

/* Probe from the environment envp on `host`, without the request flags
 * `drop`. */
static pt_result* probe_flags(const char* host, const char* const* envp, unsigned drop) {
  pt_host h;
  assert_int_equal(pt_host_parse(host, &h), PT_OK);
  pt_request req;
  pt_request_init(&req);
  pt_request_from_environment(&req);
  req.flags &= ~drop;
  pt_result* r = NULL;
  int rc = pt_probe_env(&req, h, envp, &r);
  assert_non_null(r);
  assert_int_equal(rc, r->status);
  return r;
}

static pt_result* probe_in(const char* host, const char* const* envp) {
  return probe_flags(host, envp, 0);
}

static void test_value_from_envp(void** state) {
  (void)state;
  char var[4096];
  snprintf(var, sizeof var, "NCCL_PROFILER_PLUGIN=%s/good.so", D);
  const char* envp[] = {"NCCL_PROFILER_PLUGIN_X=ignored", "NOEQUALS", var,
                        "NCCL_PROFILER_PLUGIN=second-is-ignored", "NCCL_NET_PLUGIN=none", NULL};
  pt_result* r = probe_in("nccl-2.30", envp);
  assert_int_equal(r->status, PT_OK);
  assert_string_equal(r->value, fx_fmt("%s/good.so", D));
  assert_string_equal(r->value_origin, "environment");
  assert_int_equal(r->api_version, 6);
  assert_int_equal(r->n_candidates, 1);
  pt_result_free(r);
  /* The process environment is as it was. */
  assert_string_equal(getenv("NCCL_PROFILER_PLUGIN"), fx_fmt("%s/missing.so", D));
}

static void test_missing_from_envp_is_unset(void** state) {
  (void)state;
  /* Empty environment: the process's NCCL_PROFILER_PLUGIN,
   * RCCL_ENABLE_PROXY_TRACE, NCCL_NET_PLUGIN and PROXYTRACE_HOME (which
   * holds a plugin) are not consulted: the default name, then the host's
   * default net library. (The config files are left out: without HOME the
   * probe reads the user's real one.) */
  const char* envp[] = {NULL};
  pt_result* r = probe_flags("rccl", envp, PT_REQ_CONF_FILES);
  assert_null(r->value);
  assert_null(r->net_value);
  assert_int_equal(r->n_candidates, 2);
  assert_string_equal(r->candidates[0].name, "libnccl-profiler.so");
  assert_int_equal(r->candidates[1].source, PT_SRC_NET_PLUGIN);
  assert_string_equal(r->candidates[1].name, "librccl-net.so");
  pt_result_free(r);
}

static void test_null_envp_is_the_process(void** state) {
  (void)state;
  pt_result* a = probe_flags("rccl", NULL, PT_REQ_CONF_FILES);
  pt_host h;
  assert_int_equal(pt_host_parse("rccl", &h), PT_OK);
  pt_request req;
  pt_request_init(&req);
  pt_request_from_environment(&req);
  req.flags &= ~(unsigned)PT_REQ_CONF_FILES;
  pt_result* b = NULL;
  pt_probe(&req, h, &b);
  assert_non_null(b);
  assert_string_equal(a->value, fx_fmt("%s/missing.so", D));
  assert_string_equal(a->value, b->value);
  assert_int_equal(a->status, b->status);
  assert_int_equal(a->n_candidates, b->n_candidates);
  assert_true(a->n_candidates >= 2); /* the value, then PROXYTRACE_HOME's plugin */
  pt_result_free(a);
  pt_result_free(b);
}

static void test_conf_files_from_envp(void** state) {
  (void)state;
  char conf[4096], home[4096];
  snprintf(conf, sizeof conf, "NCCL_CONF_FILE=%s/named.conf", D);
  snprintf(home, sizeof home, "HOME=%s/home", D);
  const char* with_conf[] = {conf, home, NULL};
  pt_result* r = probe_in("nccl-2.28", with_conf);
  assert_int_equal(r->status, PT_OK);
  assert_string_equal(r->value_origin, fx_fmt("%s/named.conf", D));
  assert_string_equal(r->path, fx_fmt("%s/good.so", D));
  pt_result_free(r);

  const char* with_home[] = {home, NULL}; /* 2.30 takes ~ from $HOME */
  r = probe_in("nccl-2.30", with_home);
  assert_int_equal(r->status, PT_OK);
  assert_string_equal(r->value_origin, fx_fmt("%s/home/.nccl.conf", D));
  assert_int_equal(r->api_version, 1);
  pt_result_free(r);
}

static void test_search_path_from_envp(void** state) {
  (void)state;
  char ld[4096];
  snprintf(ld, sizeof ld, "LD_LIBRARY_PATH=%s/lib", D);
  const char* envp[] = {"NCCL_PROFILER_PLUGIN=proxytrace", ld, NULL};
  pt_result* r = probe_in("nccl-2.30", envp);
  assert_int_equal(r->status, PT_OK);
  assert_string_equal(r->realpath, fx_fmt("%s/lib/libnccl-profiler-proxytrace.so", D));
  pt_result_free(r);
}

static void test_argument_beats_envp(void** state) {
  (void)state;
  pt_host h;
  assert_int_equal(pt_host_parse("rccl", &h), PT_OK);
  pt_request req;
  pt_request_init(&req);
  pt_request_from_environment(&req);
  req.path = fx_fmt("%s/good.so", D);
  const char* envp[] = {"NCCL_PROFILER_PLUGIN=/elsewhere.so", NULL};
  pt_result* r = NULL;
  assert_int_equal(pt_probe_env(&req, h, envp, &r), PT_OK);
  assert_string_equal(r->value_origin, "argument");
  pt_result_free(r);
  assert_int_equal(pt_probe_env(&req, h, envp, NULL), PT_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_value_from_envp),
      cmocka_unit_test(test_missing_from_envp_is_unset),
      cmocka_unit_test(test_null_envp_is_the_process),
      cmocka_unit_test(test_conf_files_from_envp),
      cmocka_unit_test(test_search_path_from_envp),
      cmocka_unit_test(test_argument_beats_envp),
  };
  return cmocka_run_group_tests_name("pt_probe_env: the environment of another process", tests,
                                     setup, NULL);
}
