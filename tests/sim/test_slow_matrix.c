/*
 * test_slow_matrix.c — slow edges named from the step metrics
 * (src/analyze/mset.c) over a matrix of emulated jobs: every --slow-link,
 * --slow-gpu and --slow-host, on RCCL and on NCCL profiles of each ABI
 * family, in send/recv and ring all-reduce jobs of 3 nodes, at two
 * slowdowns, must name exactly its rank, network-side, GPU-side or its
 * proxy thread (both); a healthy job must name
 * nothing (6 iterations: 12 ops an edge, which the test counts as 24
 * samples). The jobs run on emulated time (--poll-us 1000: a poll lasts 1
 * emulated ms), so step times follow the faults alone, in every build, under
 * qemu too, and under any load. Prints the matrix and its accuracy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analyze/mset.h"
#include "sim.h"

static void quiet(void* arg, int rank, const char* line) {
  (void)arg;
  (void)rank;
  (void)line;
}

typedef struct {
  const char* host;
  const char* ops;
  const char* fault; /* NULL, "slow-link", "slow-gpu" or "slow-host" */
  int rank, factor;
} job;

/* Runs one job with metrics into a fresh directory; the verdict. */
static void run(const job* j, pt_ms_verdict* v, char* dir, size_t dirlen) {
  snprintf(dir, dirlen, "/tmp/pt-slow-matrix-XXXXXX");
  assert_non_null(mkdtemp(dir));
  char env_dir[600], fault[32];
  snprintf(env_dir, sizeof env_dir, "PROXYTRACE_METRICS_DIR=%s", dir);
  snprintf(fault, sizeof fault, "%d:%d", j->rank, j->factor);
  const char* argv[32] = {"sim", "--host", j->host, "--nodes", "3", "--ranks-per-node", "2", "--channels", "2",
                          "--iters", "6", "--ops", j->ops, "--poll-us", "1000", "--env",
                          "PROXYTRACE_METRICS_INTERVAL_MS=60000", "--env", env_dir, "--quiet"};
  int argc = 20;
  if (j->fault) {
    char opt[32];
    snprintf(opt, sizeof opt, "--%s", j->fault);
    argv[argc++] = strdup(opt);
    argv[argc++] = fault;
  }
  pt_sim_config c;
  pt_sim_config_init(&c);
  FILE* devnull = fopen("/dev/null", "w");
  assert_int_equal(pt_sim_parse_args(&c, argc, (char**)argv, devnull, stderr), 0);
  c.plugin = getenv("PT_PLUGIN_SO");
  c.line_fn = quiet;
  pt_sim_result res;
  assert_int_equal(pt_sim_run(&c, &res, stderr), 0);
  assert_false(res.hung);
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
  fclose(devnull);
  if (j->fault) free((void*)argv[20]);
  pt_mset s = {0};
  assert_int_equal(pt_mset_read(&s, dir), 0);
  assert_int_equal(s.files, 6);
  assert_int_equal(pt_mset_slow(&s, v), 0);
  pt_mset_free(&s);
}

static void rm_dir(const char* dir) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void test_matrix(void** state) {
  (void)state;
  if (!getenv("PT_PLUGIN_SO")) skip();
  static const char* const hosts[] = {"rccl", "nccl-2.25", "nccl-2.28", "nccl-2.30"};
  static const char* const ops[] = {"sendrecv:8M", "allreduce:8M"};
  static const struct {
    const char* fault;
    int rank;
  } faults[] = {{NULL, -1}, {"slow-link", 1}, {"slow-link", 4}, {"slow-gpu", 2}, {"slow-gpu", 5}, {"slow-host", 3}};
  static const int factors[] = {4, 8};
  int cases = 0, right = 0, healthy = 0, healthy_right = 0;
  char dir[512];
  for (size_t h = 0; h < sizeof hosts / sizeof *hosts; h++)
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
      for (size_t f = 0; f < sizeof faults / sizeof *faults; f++)
        for (size_t x = 0; x < (faults[f].fault ? sizeof factors / sizeof *factors : 1); x++) {
          const job j = {hosts[h], ops[o], faults[f].fault, faults[f].rank, factors[x]};
          pt_ms_verdict v;
          run(&j, &v, dir, sizeof dir);
          int ok;
          if (!j.fault) {
            healthy++;
            ok = v.n_culprits == 0;
            healthy_right += ok;
          } else {
            const int side = !strcmp(j.fault, "slow-gpu")    ? PT_MS_GPU
                             : !strcmp(j.fault, "slow-host") ? PT_MS_HOST
                                                             : PT_MS_NET;
            ok = v.n_culprits == 1 && v.culprits[0].rank == j.rank && v.culprits[0].side == side &&
                 v.culprits[0].peer < 0 && v.culprits[0].factor >= 2.0; /* 4x, 8x: the network phases, not all of a step */
          }
          cases++;
          right += ok;
          printf("%-10s %-13s %-10s %2d x%d: %s", j.host, j.ops, j.fault ? j.fault : "healthy", j.rank,
                 j.fault ? j.factor : 1, ok ? "right" : "WRONG");
          for (size_t k = 0; k < v.n_culprits; k++)
            printf("  [rank %d%s%.0d %s %.1fx, %zu edges]", v.culprits[k].rank, v.culprits[k].peer >= 0 ? "-" : "",
                   v.culprits[k].peer >= 0 ? v.culprits[k].peer : 0,
                   v.culprits[k].side == PT_MS_GPU    ? "GPU"
                   : v.culprits[k].side == PT_MS_HOST ? "proxy thread"
                                                      : "network",
                   v.culprits[k].factor, v.culprits[k].edges);
          printf("\n");
          if (!ok) printf("   metrics kept in %s\n", dir);
          else rm_dir(dir);
          pt_ms_verdict_free(&v);
        }
  printf("slow-edge naming: %d/%d jobs right (%d/%d faults named, %d/%d healthy jobs name nothing)\n", right, cases,
         right - healthy_right, cases - healthy, healthy_right, healthy);
  assert_int_equal(right, cases);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_matrix)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
