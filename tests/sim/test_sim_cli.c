/*
 * test_sim_cli.c — `proxytrace sim` options: every option is documented in
 * --help, every bad option or value is refused with a message naming it
 * (exit status 2), scenario files read like the command line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim_helpers.h"

static char out_buf[16384], err_buf[4096];

/* Parses argv (NULL-terminated, without argv[0]); keeps stdout/stderr text. */
static int parse(pt_sim_config* c, const char* const* args) {
  char* argv[32] = {"sim"};
  int argc = 1;
  for (int i = 0; args[i]; i++) argv[argc++] = (char*)args[i];
  FILE* out = tmpfile();
  FILE* err = tmpfile();
  pt_sim_config_init(c);
  int rc = pt_sim_parse_args(c, argc, argv, out, err);
  rewind(out);
  rewind(err);
  size_t n = fread(out_buf, 1, sizeof out_buf - 1, out);
  out_buf[n] = 0;
  n = fread(err_buf, 1, sizeof err_buf - 1, err);
  err_buf[n] = 0;
  fclose(out);
  fclose(err);
  return rc;
}

static void test_help_documents_every_option(void** state) {
  (void)state;
  pt_sim_config c;
  const char* args[] = {"--help", NULL};
  assert_int_equal(parse(&c, args), 1);
  assert_non_null(strstr(out_buf, "usage: proxytrace sim"));
  int n = 0, takes;
  for (const char* name; (name = pt_sim_option(n, &takes)) != NULL; n++) {
    char want[64];
    snprintf(want, sizeof want, "--%s", name);
    if (!strstr(out_buf, want)) fail_msg("--help does not mention %s", want);
  }
  assert_true(n >= 30);
  const char* dash_h[] = {"-h", NULL};
  assert_int_equal(parse(&c, dash_h), 1);
}

static void expect_bad(const char* opt, const char* val, const char* mention) {
  pt_sim_config c;
  const char* args[] = {opt, val, NULL};
  int rc = parse(&c, args);
  if (rc != 2) fail_msg("%s %s: status %d, want 2", opt, val ? val : "", rc);
  if (!strstr(err_buf, mention)) fail_msg("%s %s: message '%s' does not mention '%s'", opt, val ? val : "", err_buf, mention);
  pt_sim_config_release(&c);
}

static void test_bad_options_exit_2(void** state) {
  (void)state;
  expect_bad("--bogus", NULL, "--bogus");
  expect_bad("plain", NULL, "plain");
  expect_bad("--nodes", "0", "--nodes");
  expect_bad("--nodes", "two", "--nodes");
  expect_bad("--ranks-per-node", "65", "--ranks-per-node");
  expect_bad("--channels", "65", "--channels");
  expect_bad("--iters", "-3", "--iters");
  expect_bad("--ops", "broadcast:1M", "--ops");
  expect_bad("--ops", "allreduce", "--ops");
  expect_bad("--ops", "allreduce:0", "--ops");
  expect_bad("--proto", "FAST", "--proto");
  expect_bad("--seed", "-1", "--seed");
  expect_bad("--jitter", "x", "--jitter");
  expect_bad("--recv-retry", "1.5", "--recv-retry");
  expect_bad("--gpu-batch", "9", "--gpu-batch");
  expect_bad("--hang-polls", "-1", "--hang-polls");
  expect_bad("--debug", "LOUD", "--debug");
  expect_bad("--host", "nccl-2.99", "--host");
  expect_bad("--env", "NOEQUALS", "--env");
  expect_bad("--stall", "1:2", "--stall");
  expect_bad("--stall", "1:x:2", "--stall");
  expect_bad("--no-recv", "a", "--no-recv");
  expect_bad("--slow-link", "1:1", "--slow-link");
  expect_bad("--slow-gpu", "1:1001", "--slow-gpu takes RANK:FACTOR[:START] with FACTOR 1.01..1000");
  expect_bad("--slow-link", "1:1.5:soon", "START seconds 0..86400");
  expect_bad("--slow-link", "1:1.5:-1", "--slow-link");
  expect_bad("--slow-link", "1:1.5:2:3", "--slow-link");
  expect_bad("--slow-gpu", "1", "--slow-gpu");
  expect_bad("--slow-host", "1:0.5", "--slow-host takes RANK:FACTOR[:START] with FACTOR 1.01..1000");
  expect_bad("--pace", "200000", "microseconds 0..100000");
  expect_bad("--kill", "1", "--kill");
  expect_bad("--pxn", "1", "--pxn");
  expect_bad("--ranks-per-process", "0", "--ranks-per-process");
  expect_bad("--ranks-per-process", "65", "--ranks-per-process");
  expect_bad("--leak-ops", "0", "--leak-ops");
  expect_bad("--fault-iter", "x", "--fault-iter");
  expect_bad("--scenario", "/nonexistent/scenario.txt", "/nonexistent/scenario.txt");
  expect_bad("--nodes", NULL, "--nodes needs a value");
  expect_bad("--strict=1", NULL, "takes no value");
  /* A value is never the next option: --dump-dir --quiet made a folder. */
  expect_bad("--dump-dir", "--quiet", "the next argument '--quiet' is an option");
  expect_bad("--truth-file", "-h", "is an option");
}

/* The option is kept for a value that does start with '-'. */
static void test_value_that_starts_with_dash(void** state) {
  (void)state;
  pt_sim_config c;
  const char* args[] = {"--dump-dir=--odd", NULL};
  assert_int_equal(parse(&c, args), 0);
  assert_string_equal(c.dump_dir, "--odd");
}

/* A fault step the op does not have is refused (-2: exit 2), with the
 * op's range in transfers and raw steps; the last step is accepted. */
static void test_step_beyond_the_op(void** state) {
  (void)state;
  pt_sim_config c;
  st_config(&c, PT_HOST_RCCL, NULL);
  pt_sim_job job;
  assert_int_equal(pt_sim_job_build(&c, &job, stderr), 0);
  int n = 0;
  for (size_t i = 0; i < job.n_ops && !n; i++)
    if (job.ops[i].channel == 0 && job.ops[i].kind == PT_OPK_NET && job.ops[i].call == 0) n = job.ops[i].n;
  pt_sim_job_free(&job);
  assert_true(n > 1);
  static const pt_fault_kind kinds[] = {PT_FAULT_STALL, PT_FAULT_NO_RECV, PT_FAULT_KILL};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    c.faults[0] = (pt_sim_fault){.kind = kinds[k], .rank = 1, .channel = 0, .step = n};
    c.n_faults = 1;
    FILE* err = tmpfile();
    assert_int_equal(pt_sim_job_build(&c, &job, stderr), 0);
    assert_int_equal(pt_sim_truth_compute(&c, &job, err), -2);
    pt_sim_job_free(&job);
    rewind(err);
    size_t got = fread(err_buf, 1, sizeof err_buf - 1, err);
    err_buf[got] = 0;
    fclose(err);
    char want[64];
    snprintf(want, sizeof want, "have transfers 0..%d", n - 1);
    if (!strstr(err_buf, want)) fail_msg("fault %zu: '%s' lacks '%s'", k, err_buf, want);
    c.faults[0].step = n - 1; /* the last step exists */
    assert_int_equal(pt_sim_job_build(&c, &job, stderr), 0);
    assert_int_equal(pt_sim_truth_compute(&c, &job, stderr), 0);
    pt_sim_job_free(&job);
  }
}

static void test_faults_checked_against_job(void** state) {
  (void)state;
  pt_sim_config c;
  const char* r1[] = {"--stall", "8:0:1", NULL}; /* 8 ranks: 0..7 */
  assert_int_equal(parse(&c, r1), 2);
  assert_non_null(strstr(err_buf, "rank 8"));
  const char* r2[] = {"--stall", "1:2:1", NULL}; /* 2 channels */
  assert_int_equal(parse(&c, r2), 2);
  assert_non_null(strstr(err_buf, "channel 2"));
  const char* r3[] = {"--pxn", "1:5", NULL}; /* another node */
  assert_int_equal(parse(&c, r3), 2);
  assert_non_null(strstr(err_buf, "same node"));
  const char* r4[] = {"--fault-iter", "4", NULL}; /* 4 iterations: 0..3 */
  assert_int_equal(parse(&c, r4), 2);
  assert_non_null(strstr(err_buf, "--fault-iter"));
  const char* r5[] = {"--fault-call", "2", NULL}; /* 2 calls */
  assert_int_equal(parse(&c, r5), 2);
  /* one process a node: it drives whole nodes' worth of ranks, or a share */
  const char* r6[] = {"--ranks-per-process", "3", NULL}; /* 4 ranks a node */
  assert_int_equal(parse(&c, r6), 2);
  assert_non_null(strstr(err_buf, "--ranks-per-process 3 must divide --ranks-per-node 4"));
  /* a rank of a process does not die alone while its sends run on another
   * thread of the process; another process's helper is fine */
  const char* r7[] = {"--ranks-per-process", "4", "--pxn", "1:0", "--kill", "1:0", NULL};
  assert_int_equal(parse(&c, r7), 2);
  assert_non_null(strstr(err_buf, "cannot die alone"));
  const char* r8[] = {"--ranks-per-process", "2", "--pxn", "1:2", "--kill", "1:0", NULL};
  assert_int_equal(parse(&c, r8), 0);
  assert_int_equal(c.ranks_per_process, 2);
  pt_sim_config_release(&c);
  const char* ok[] = {"--pxn", "1:2", "--stall", "3:all:0", "--kill", "7:0", "--leak-ops", "2:1", "--no-recv", "2",
                      "--slow-link", "5:10", "--fault-iter=1", "--fault-call", "1", "--slow-gpu", "6:3",
                      "--pace", "250", NULL};
  assert_int_equal(parse(&c, ok), 0);
  assert_int_equal(c.n_faults, 7);
  assert_int_equal(c.faults[6].kind, PT_FAULT_SLOW_GPU);
  assert_int_equal(c.faults[6].rank, 6);
  assert_int_equal(c.faults[6].arg, 3);
  assert_int_equal(c.pace_us, 250);
  assert_int_equal(c.faults[0].kind, PT_FAULT_PXN);
  assert_int_equal(c.faults[0].arg, 2);
  assert_int_equal(c.faults[1].channel, -1);
  assert_int_equal(c.faults[3].rank, 2);
  assert_int_equal(c.faults[3].arg, 1);
  assert_int_equal(c.faults[4].channel, -1);
  assert_int_equal(c.faults[4].step, 0);
  assert_int_equal(c.faults[5].arg, 10);
  assert_true(c.faults[5].factor == 10.0 && c.faults[5].start_s == 0);
  assert_int_equal(c.fault_iter, 1);
  assert_int_equal(c.noise, 0);
  /* fractional factors, a start time, healthy noise */
  pt_sim_config_init(&c);
  const char* mild[] = {"--slow-link", "1:1.2", "--slow-gpu", "2:1.5:30", "--slow-host", "3:1.3:5", "--noise", NULL};
  assert_int_equal(parse(&c, mild), 0);
  assert_int_equal(c.n_faults, 3);
  assert_true(c.faults[0].factor == 1.2 && c.faults[0].start_s == 0);
  assert_true(c.faults[1].factor == 1.5 && c.faults[1].start_s == 30);
  assert_int_equal(c.faults[2].kind, PT_FAULT_SLOW_HOST);
  assert_true(c.faults[2].factor == 1.3 && c.faults[2].start_s == 5 && c.faults[2].rank == 3);
  assert_int_equal(c.noise, 1);
}

static void test_values_parse(void** state) {
  (void)state;
  size_t v;
  assert_int_equal(pt_sim_parse_size("64M", &v), 0);
  assert_int_equal(v, (size_t)64 << 20);
  assert_int_equal(pt_sim_parse_size("1G", &v), 0);
  assert_int_equal(v, (size_t)1 << 30);
  assert_int_equal(pt_sim_parse_size("2KiB", &v), 0);
  assert_int_equal(v, 2048);
  assert_int_equal(pt_sim_parse_size("4096", &v), 0);
  assert_int_equal(v, 4096);
  assert_int_equal(pt_sim_parse_size("0", &v), -1);
  assert_int_equal(pt_sim_parse_size("-1M", &v), -1);
  assert_int_equal(pt_sim_parse_size("12X", &v), -1);
  pt_sim_config c;
  const char* args[] = {"--host", "nccl-2.26", "--ops", "sendrecv:3M,allreduce:1G", "--proto", "ll128",
                        "--debug", "info", "--env", "A=B", "--seed", "0x10", NULL};
  assert_int_equal(parse(&c, args), 0);
  assert_int_equal(c.host, PT_HOST_NCCL_2_26);
  assert_int_equal(c.n_calls, 2);
  assert_int_equal(c.calls[0].kind, PT_SIM_SENDRECV);
  assert_int_equal(c.calls[0].bytes, (size_t)3 << 20);
  assert_int_equal(c.calls[1].kind, PT_SIM_ALLREDUCE);
  assert_int_equal(c.proto, PT_SIM_PROTO_LL128);
  assert_int_equal(c.debug_level, PT_SIM_LOG_INFO);
  assert_int_equal(c.n_env, 1);
  assert_int_equal(c.seed, 16);
}

static void test_scenario_files(void** state) {
  (void)state;
  pt_sim_config c;
  const char* good[] = {"--scenario", ST_SRC_DIR "/scenarios/stall.txt", NULL};
  assert_int_equal(parse(&c, good), 0);
  assert_int_equal(c.nodes, 3);
  assert_int_equal(c.ranks_per_node, 2);
  assert_int_equal(c.channels, 3);
  assert_int_equal(c.hang_polls, 10);
  assert_int_equal(c.print_truth, 1);
  assert_int_equal(c.n_faults, 1);
  assert_int_equal(c.faults[0].kind, PT_FAULT_STALL);
  assert_int_equal(c.faults[0].rank, 4);
  assert_int_equal(c.faults[0].channel, 1);
  assert_int_equal(c.faults[0].step, 2);
  pt_sim_config_release(&c);
  /* Options after the file override it. */
  const char* over[] = {"--scenario", ST_SRC_DIR "/scenarios/stall.txt", "--nodes", "4", NULL};
  assert_int_equal(parse(&c, over), 0);
  assert_int_equal(c.nodes, 4);
  pt_sim_config_release(&c);
  const char* bad[] = {"--scenario", ST_SRC_DIR "/scenarios/bad-value.txt", NULL};
  assert_int_equal(parse(&c, bad), 2);
  assert_non_null(strstr(err_buf, "--channels"));
  assert_non_null(strstr(err_buf, "line 2"));
  pt_sim_config_release(&c);
  const char* nested[] = {"--scenario", ST_SRC_DIR "/scenarios/nested.txt", NULL};
  assert_int_equal(parse(&c, nested), 2);
  assert_non_null(strstr(err_buf, "cannot include"));
  pt_sim_config_release(&c);
}

/* --truth says how the faults end the job, op by op. */
static void test_truth_print(void** state) {
  (void)state;
  pt_sim_config c;
  st_config(&c, PT_HOST_RCCL, NULL);
  pt_sim_job job;
  FILE* f = tmpfile();
  assert_int_equal(pt_sim_job_build(&c, &job, stderr), 0);
  assert_int_equal(pt_sim_truth_compute(&c, &job, stderr), 0);
  assert_int_equal(job.hung_batch, -1);
  pt_sim_truth_print(&c, &job, f);
  pt_sim_job_free(&job);
  c.faults[0] = (pt_sim_fault){.kind = PT_FAULT_STALL, .rank = 1, .channel = 0, .step = 2};
  c.n_faults = 1;
  assert_int_equal(pt_sim_job_build(&c, &job, stderr), 0);
  assert_int_equal(pt_sim_truth_compute(&c, &job, stderr), 0);
  assert_int_equal(job.hung_batch, (c.iters - 1) * c.n_calls); /* the last iteration's first call */
  pt_sim_truth_print(&c, &job, f);
  pt_sim_job_free(&job);
  rewind(f);
  size_t n = fread(out_buf, 1, sizeof out_buf - 1, f);
  out_buf[n] = 0;
  fclose(f);
  assert_non_null(strstr(out_buf, "truth: the job completes"));
  assert_non_null(strstr(out_buf, "truth: the job hangs in call 0 (allreduce, iteration 1)"));
  assert_non_null(strstr(out_buf, "truth: stuck rank=1 peer=2 chan=0 S"));
  assert_non_null(strstr(out_buf, "why=\"waits for its GPU to produce data\""));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help_documents_every_option),
      cmocka_unit_test(test_bad_options_exit_2),
      cmocka_unit_test(test_value_that_starts_with_dash),
      cmocka_unit_test(test_step_beyond_the_op),
      cmocka_unit_test(test_faults_checked_against_job),
      cmocka_unit_test(test_values_parse),
      cmocka_unit_test(test_scenario_files),
      cmocka_unit_test(test_truth_print),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
