/*
 * demo.c — `proxytrace demo`: the emulated job of `make demo`.
 *
 * Runs the emulator's default job (2 nodes x 4 ranks, ring all-reduce and
 * send/recv on 2 channels, emulated RCCL) with the plugin of this build (or
 * of the installation it belongs to) and one injected fault — rank 3's GPU
 * stops producing data on channel 0 from transfer 5 (raw step 10) of the
 * last all-reduce. The hung job is held for a while, as a real hang lasts,
 * so the plugin's stall watchdog (PROXYTRACE_STALL_MS, 1 s here) dumps
 * every rank to its files while the job is stuck. Then it says in a few
 * lines what ran, where each rank's dump is, which ops the stall dumps show
 * stuck, and, when the analyzer is in the build, its verdict.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "sim/sim.h"

/* The analyzer is another command of the CLI; builds without it still run
 * the demo. */
int pt_cmd_analyze(int argc, char** argv);
#pragma weak pt_cmd_analyze

#define PLUGIN_FILE "librccl-profiler-proxytrace.so"

static void usage(FILE* f) {
  fprintf(f,
          "usage: proxytrace demo [options]\n"
          "\n"
          "Runs an emulated 8-rank RCCL job with the proxytrace plugin and one stalled GPU,\n"
          "keeps it hung for " "2 s so the plugin's stall watchdog dumps every rank while it\n"
          "hangs, and summarises what the dumps show.\n"
          "\n"
          "  --build-dir DIR   where the plugin was built (default: beside this program,\n"
          "                    else ../lib of an installation)\n"
          "  --plugin PATH     the plugin to load (default: DIR/" PLUGIN_FILE ")\n"
          "  --out DIR         where the dumps go (default: demo-out)\n"
          "  -h, --help        this help\n");
}

#define DEMO_STALL_MS "1000"
#define DEMO_HOLD_S 2.0

/* The plugin's text file of rank r in `out` written by this process. */
static FILE* open_rank_file(const char* out, int r) {
  char tag[64], path[PATH_MAX];
  snprintf(tag, sizeof tag, "-%d-r%d-", (int)getpid(), r);
  DIR* d = opendir(out);
  FILE* f = NULL;
  for (struct dirent* e; d && !f && (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "proxytrace-", 11) || !strstr(e->d_name, tag) || n < 4 ||
        strcmp(e->d_name + n - 4, ".txt"))
      continue;
    snprintf(path, sizeof path, "%s/%s", out, e->d_name);
    f = fopen(path, "r");
  }
  if (d) closedir(d);
  return f;
}

/* Prints the lines of stuck ops (status other than DONE) of each rank's
 * first stall dump. */
static int print_stuck(const char* out, int nranks) {
  int found = 0;
  for (int r = 0; r < nranks; r++) {
    FILE* f = open_rank_file(out, r);
    if (!f) continue;
    char line[2048];
    int in_stall = 0;
    while (fgets(line, sizeof line, f)) {
      if (!strncmp(line, "proxytrace dump ", 16)) {
        if (in_stall) break; /* the first stall dump is enough */
        in_stall = strstr(line, " trigger=stall ") != NULL;
        continue;
      }
      const char* st = strstr(line, "status:");
      if (!in_stall || !st || !strncmp(st, "status:DONE", 11)) continue;
      /* the interesting part: from the key on, without the times */
      const char* key = strchr(line, '<');
      printf("    rank %d: %s", r, key ? key : line);
      found++;
    }
    fclose(f);
  }
  return found;
}

int pt_cmd_demo(int argc, char** argv) {
  const char* build_dir = NULL;
  const char* plugin = NULL;
  const char* out = "demo-out";
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    const char** slot = !strcmp(a, "--build-dir") ? &build_dir
                        : !strcmp(a, "--plugin")  ? &plugin
                        : !strcmp(a, "--out")     ? &out
                                                  : NULL;
    if (!slot) {
      fprintf(stderr, "proxytrace demo: unknown option '%s' (see proxytrace demo --help)\n", a);
      return 2;
    }
    if (i + 1 >= argc || !argv[i + 1][0]) {
      fprintf(stderr, "proxytrace demo: %s needs a value\n", a);
      return 2;
    }
    if (argv[i + 1][0] == '-') { /* an option, not this one's value */
      fprintf(stderr, "proxytrace demo: %s needs a value, but the next argument '%s' is an option\n",
              a, argv[i + 1]);
      return 2;
    }
    *slot = argv[++i];
  }
  char plugin_path[PATH_MAX + 64];
  if (!plugin && build_dir) {
    snprintf(plugin_path, sizeof plugin_path, "%s/%s", build_dir, PLUGIN_FILE);
    plugin = plugin_path;
  } else if (!plugin) {
    if (!pt_sim_own_plugin(plugin_path, sizeof plugin_path)) {
      fprintf(stderr,
              "proxytrace demo: no %s beside this program or in its ../lib: run `make` first, "
              "or give --plugin\n",
              PLUGIN_FILE);
      return 1;
    }
    plugin = plugin_path;
  }
  struct stat sb;
  if (stat(plugin, &sb) != 0) {
    fprintf(stderr, "proxytrace demo: plugin %s: %s (run `make` first, or give --plugin)\n", plugin,
            strerror(errno));
    return 1;
  }
  /* dlopen takes a name without '/' from the library path: keep the path. */
  char abs[PATH_MAX];
  if (!strchr(plugin, '/') && realpath(plugin, abs)) plugin = abs;

  pt_sim_config c;
  pt_sim_config_init(&c);
  c.host = PT_HOST_RCCL;
  c.plugin = plugin;
  c.debug_level = PT_SIM_LOG_WARN;
  c.dump_dir = out; /* rank logs, and PROXYTRACE_DUMP_DIR */
  c.quiet = 1;
  c.hold_s = DEMO_HOLD_S;
  c.env[c.n_env++] = "PROXYTRACE_STALL_MS=" DEMO_STALL_MS;
  c.faults[0] = (pt_sim_fault){.kind = PT_FAULT_STALL, .rank = 3, .channel = 0, .step = 5};
  c.n_faults = 1;

  printf("proxytrace demo: an emulated RCCL job with the proxytrace plugin and one stalled GPU\n");
  pt_sim_result res;
  if (pt_sim_run(&c, &res, stderr) != 0) {
    pt_sim_result_free(&res);
    return 1;
  }
  char truth[PATH_MAX];
  snprintf(truth, sizeof truth, "%s/truth.txt", out);
  FILE* tf = fopen(truth, "w");
  if (tf) {
    pt_sim_truth_print(&c, &res.job, tf);
    fclose(tf);
  }
  /* The same truth for the analyzer to check its verdict against. */
  char truth_json[PATH_MAX];
  snprintf(truth_json, sizeof truth_json, "%s/truth.json", out);
  if ((tf = fopen(truth_json, "w")) != NULL) {
    pt_sim_truth_json(&c, &res.job, tf);
    fclose(tf);
  }
  printf("\nWhat ran\n");
  pt_sim_summary(&c, &res, stdout);
  printf("\nWhere the dumps are\n");
  pt_sim_dump_summary(&c, &res, stdout);
  printf("  (.txt: the legacy lines, .jsonl: JSON lines — docs/dump-json.md; first the stall\n"
         "  watchdog's dumps, %s ms after the last progress, then RCCL's dump hook at destroy)\n"
         "  %s (what the emulator knows happened)\n", DEMO_STALL_MS, truth);
  printf("\nStuck ops, as the stall watchdog's dumps show them\n");
  int n = print_stuck(out, res.job.nranks);
  if (!n) printf("    none — the dumps show no stuck op\n");
  printf("\nVerdict\n");
  if (pt_cmd_analyze) {
    /* From the dump files alone, then checked against the ground truth. */
    char* av[] = {"analyze", "--expect", truth_json, (char*)out, NULL};
    fflush(stdout);
    pt_cmd_analyze(4, av);
  } else {
    printf("    the analyzer is not in this build; by the emulator's ground truth, rank 3's GPU\n"
           "    stopped producing data on channel 0 from transfer 5 (see %s)\n", truth);
  }
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
  return 0;
}
