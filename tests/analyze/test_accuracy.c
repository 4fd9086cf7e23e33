/*
 * test_accuracy.c — the analyzer against the emulator's ground truth, over
 * every fault the emulator injects.
 *
 * Each case runs an emulated job in this process with the plugin of this
 * build, writes every rank's dump to its file (rank<R>.log, as --dump-dir
 * does; a dead rank writes none), analyzes the files alone, and
 * compares the analysis with the ground truth the emulator computed
 * (pt_sim_truth_json -> pt_analysis_compare_truth): the same verdict, and
 * every expected culprit named by rank, channel and cause — or, where the
 * truth says the dumps cannot show the faulty rank itself ("exact":
 * false: a GPU inside a node's part of a ring, a PXN send), by its node.
 *
 * The matrix: hosts rccl and NVIDIA NCCL 2.26, 2.28, 2.29, 2.30 (NVIDIA
 * hosts never call the dump hook: the test calls it at destroy, as RCCL
 * would); topologies 2 nodes x 4 ranks, 4 x 1 and 3 x 2; 1, 2 and 4
 * channels; faults stall (on the node's exit rank, entry rank, a middle
 * rank, every channel), no-recv (allreduce and send/recv), kill,
 * slow-link, pxn with a stall, leak-ops with a stall (2.27+ and rccl: NCCL
 * starts never-progressed ops only from 2.27), and none; two seeds;
 * the fault in the last iteration or the first. It prints the accuracy per
 * host and fault, and fails on any case that differs. Sanitizer builds run
 * every third case, and so does a build run under an emulator (qemu). To look closer: AT_MATRIX_HOST=rccl runs one host,
 * AT_MATRIX_VERBOSE=1 prints every case, AT_MATRIX_JSON=1 adds the JSON
 * document of a case that differs.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"
#include "nccl/profiler_v6.h"
#include "sim.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* Every case, or every third under a sanitizer or an emulator (a build for
 * another architecture run under qemu: PROXYTRACE_EMULATOR, which make test
 * sets), where each case costs many times more. */
static int stride(void) {
  const char* emu = getenv("PROXYTRACE_EMULATOR");
  return SANITIZED || (emu && emu[strspn(emu, " ")]) ? 3 : 1;
}

static const struct {
  pt_host host;
  const char* name;
} hosts[] = {{PT_HOST_RCCL, "rccl"},
             {PT_HOST_NCCL_2_30, "nccl-2.30"},
             {PT_HOST_NCCL_2_29, "nccl-2.29"},
             {PT_HOST_NCCL_2_28, "nccl-2.28"},
             {PT_HOST_NCCL_2_26, "nccl-2.26"},
             {PT_HOST_NCCL_2_31, "nccl-2.31"},
             {PT_HOST_NCCL_2_32, "nccl-2.32"},
             {PT_HOST_RCCL_2_31, "rccl-2.31"}};
#define N_HOSTS (sizeof hosts / sizeof hosts[0])

static const struct {
  int nodes, rpn;
} topos[] = {{2, 4}, {4, 1}, {3, 2}};

/* Fault templates. %E: the exit rank of node 0 on channel 0 (rpn-1), %N:
 * its entry rank (0), %M: a middle rank (1 if rpn > 2), %L: a rank of the
 * last node, %H: another rank of node 0 (PXN helper). */
static const struct {
  const char* kind; /* for the table */
  const char* args;
  int min_rpn, min_channels;
} faults[] = {
    {"none", "", 1, 1},
    {"stall", "--stall %E:0:5", 1, 1},
    {"stall", "--stall %N:0:3", 1, 1},
    {"stall", "--stall %M:0:4", 3, 1},
    {"stall", "--stall %L:all:2", 1, 1},
    {"stall", "--stall %E:1:6", 1, 2},
    {"stall", "--stall %E:0:2 --fault-call 1", 1, 1},
    {"no-recv", "--no-recv %N:0:3", 1, 1},
    {"no-recv", "--no-recv %L --fault-call 1", 1, 1},
    {"no-recv", "--no-recv %N:0:2 --fault-call 1", 1, 1},
    {"kill", "--kill %E:4", 1, 1},
    {"kill", "--kill %L:2", 1, 1},
    {"slow-link", "--slow-link %L:8", 1, 1},
    {"pxn+stall", "--pxn %E:%H --stall %E:0:5", 2, 1},
    {"pxn", "--pxn %E:%H", 2, 1},
    {"leak+stall", "--leak-ops 2 --stall %E:0:4", 1, 1},
};
#define N_FAULTS (sizeof faults / sizeof faults[0])
static const char* kinds[] = {"none", "stall", "no-recv", "kill", "slow-link", "pxn", "pxn+stall", "leak+stall"};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

static int tally[N_HOSTS][N_KINDS][4]; /* exact, node, limit, differs */
static int failures;

static void expand(const char* tmpl, int nodes, int rpn, char* out, size_t n) {
  size_t o = 0;
  for (const char* p = tmpl; *p && o + 16 < n; p++) {
    if (*p != '%') {
      out[o++] = *p;
      continue;
    }
    int v = 0;
    switch (*++p) {
      case 'E': v = rpn - 1; break;
      case 'N': v = 0; break;
      case 'M': v = 1; break;
      case 'L': v = (nodes - 1) * rpn; break;
      case 'H': v = rpn > 1 ? rpn - 2 : 0; break;
    }
    o += (size_t)snprintf(out + o, n - o, "%d", v);
  }
  out[o] = 0;
}

static void dump_at_destroy(void* arg, int rank, void* ctx, ncclDebugLogger_t logfn) {
  (void)rank;
  ncclProfilerProxyTraceDump_t dump = (ncclProfilerProxyTraceDump_t)arg;
  if (ctx) dump(ctx, logfn);
}

/* Each rank's logger lines to dir/rank<R>.log, as --dump-dir writes them;
 * the host's own lines (no rank), which NVIDIA profiles log at INFO, are
 * dropped. */
typedef struct {
  const char* dir;
  FILE* f[64];
} rank_files;

static void to_rank_file(void* arg, int rank, const char* line) {
  rank_files* rf = arg;
  if (rank < 0 || rank >= 64) return;
  if (!rf->f[rank]) {
    char p[4200];
    snprintf(p, sizeof p, "%s/rank%d.log", rf->dir, rank);
    rf->f[rank] = fopen(p, "w");
  }
  if (rf->f[rank]) fprintf(rf->f[rank], "%s\n", line);
}

static int kind_index(const char* k) {
  for (size_t i = 0; i < N_KINDS; i++)
    if (!strcmp(kinds[i], k)) return (int)i;
  return 0;
}

static void run_case(size_t h, int nodes, int rpn, int channels, int seed, int first_iter, size_t f, void* hook) {
  char fargs[256], line[512];
  expand(faults[f].args, nodes, rpn, fargs, sizeof fargs);
  char* dir = at_mkdtemp();
  assert_non_null(dir);
  snprintf(line, sizeof line, "--nodes %d --ranks-per-node %d --channels %d --seed %d --iters 2 --hang-polls 20 %s %s",
           nodes, rpn, channels, seed, first_iter ? "--fault-iter 0" : "", fargs);
  char* argv[40] = {"sim"};
  int argc = 1;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", line);
  for (char* save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 39; t = strtok_r(NULL, " ", &save))
    argv[argc++] = t;
  pt_sim_config c;
  pt_sim_config_init(&c);
  c.host = hosts[h].host;
  c.plugin = getenv("PT_PLUGIN_SO");
  FILE* devnull = fopen("/dev/null", "w");
  int prc = pt_sim_parse_args(&c, argc, argv, devnull, stderr);
  fclose(devnull);
  assert_int_equal(prc, 0);
  rank_files rf = {dir, {NULL}};
  c.line_fn = to_rank_file;
  c.line_arg = &rf;
  c.quiet = 1;
  if (hook) {
    c.at_destroy = dump_at_destroy;
    c.at_destroy_arg = hook;
    c.debug_level = PT_SIM_LOG_INFO; /* the plugin logs at RCCL's WARN, NVIDIA's INFO */
  } else {
    c.debug_level = PT_SIM_LOG_WARN;
  }
  pt_sim_result res;
  assert_int_equal(pt_sim_run(&c, &res, stderr), 0);
  for (int r = 0; r < 64; r++)
    if (rf.f[r]) fclose(rf.f[r]);
  char* truth = NULL;
  size_t tlen = 0;
  FILE* tf = open_memstream(&truth, &tlen);
  pt_sim_truth_json(&c, &res.job, tf);
  fclose(tf);
  pt_analysis* a = at_analyze_path(dir);
  assert_non_null(a);
  char why[512];
  int m = pt_analysis_compare_truth(a, truth, why, sizeof why);
  assert_true(m >= 0);
  tally[h][kind_index(faults[f].kind)][m]++;
  if (m == PT_TRUTH_DIFFERS || getenv("AT_MATRIX_VERBOSE")) {
    if (m == PT_TRUTH_DIFFERS) failures++;
    printf("%s %s: %s: %s\n", m == PT_TRUTH_DIFFERS ? "DIFFERS" : "ok", hosts[h].name, line, why);
    if (m == PT_TRUTH_DIFFERS) {
      printf("  truth: %s", truth);
      pt_analysis_write_text(a, stdout, 0);
      if (getenv("AT_MATRIX_JSON")) pt_analysis_write_json(a, stdout);
    }
  }
  pt_analysis_free(a);
  free(truth);
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
  at_rmdir(dir);
}

static void test_accuracy(void** state) {
  (void)state;
  const char* only = getenv("AT_MATRIX_HOST");
  void* so = dlopen(getenv("PT_PLUGIN_SO"), RTLD_NOW | RTLD_LOCAL);
  assert_non_null(so);
  void* hook = dlsym(so, "ncclProfilerProxyTraceDump");
  assert_non_null(hook);
  const int step = stride();
  int n = 0, run = 0;
  for (size_t h = 0; h < N_HOSTS; h++) {
    if (only && strcmp(only, hosts[h].name)) continue;
    for (size_t t = 0; t < sizeof topos / sizeof topos[0]; t++)
      for (int channels = 1; channels <= 4; channels *= 2)
        for (size_t f = 0; f < N_FAULTS; f++) {
          if (topos[t].rpn < faults[f].min_rpn || channels < faults[f].min_channels) continue;
          for (int seed = 1; seed <= 2; seed++)
            for (int first = 0; first <= 1; first++) {
              /* rccl gets every combination; NVIDIA hosts one seed and
               * the last iteration */
              if (hosts[h].host != PT_HOST_RCCL && (seed > 1 || first)) continue; /* rccl-2.31 too */
              /* before 2.27 a never-progressed op is never started */
              if (hosts[h].host == PT_HOST_NCCL_2_26 && strstr(faults[f].args, "leak")) continue;
              if (n++ % step) continue;
              run++;
              run_case(h, topos[t].nodes, topos[t].rpn, channels, seed, first, f,
                       hosts[h].host == PT_HOST_RCCL || hosts[h].host == PT_HOST_RCCL_2_31 ? NULL : hook);
            }
        }
  }
  printf("\naccuracy over %d cases (exact / node level / documented limit / differs):\n", run);
  for (size_t h = 0; h < N_HOSTS; h++)
    for (size_t k = 0; k < N_KINDS; k++) {
      int* t = tally[h][k];
      if (t[0] + t[1] + t[2] + t[3] == 0) continue;
      printf("  %-10s %-11s %4d / %4d / %4d / %4d\n", hosts[h].name, kinds[k], t[0], t[1], t[2], t[3]);
    }
  dlclose(so);
  assert_int_equal(failures, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_accuracy)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
