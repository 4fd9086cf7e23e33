/*
 * test_oom.c — `proxytrace analyze` with its Nth allocation failing, for
 * every N: the same report, or the out-of-memory outcome, and nothing else.
 *
 * The inputs are real: emulated jobs (the plugin of this build, in a child
 * process) write every rank's dumps as the plugin and the host write them —
 * JSON lines, legacy text, the ranks' logs, so that each dump is also seen
 * twice — and, for a slow GPU, the step metrics files. The command runs in
 * this process (pt_cmd_analyze, standard output and error to files) under
 * an interposed allocator (tests/common/failalloc.c) that fails the Nth
 * call of the whole program — the analyzer's, the command's and the C
 * library's (a FILE, a directory stream, stdio buffers). For each N, one of:
 *
 *   same     the exit status, standard output and standard error of the
 *            run without failure (the allocation was one the libc can do
 *            without);
 *   no mem   exit status 2, nothing on standard output, and one line on
 *            standard error: "proxytrace analyze: out of memory";
 *
 * and in both cases every byte allocated is freed (the allocator's count;
 * ASan's leak check at exit too). A crash, a hang, another verdict or a
 * partial report fails. Then memory that stays short (every call from N
 * on fails), the same way. Every N from 1 to the count of allocations is
 * tried up to SWEEP; past that the first 60, the last 10 and a stride
 * between. Under TSan nothing is interposed (failalloc.h) and this skips.
 * The folders are read on this machine's reading threads (the order of the
 * allocations then varies from run to run; the outcome may not); under ASan
 * on one, since ASan's runtime starts each thread with a call to
 * pthread_getattr_np, which allocates and aborts the process when that
 * fails.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "commands.h"
#include "failalloc.h"
#include "fixtures.h"
#include "proxytrace/analyze.h"
#include "sim.h"

#define SWEEP 1500

#if defined(__SANITIZE_ADDRESS__)
#define READING "--threads", "1",
#define N_READING 2
#define READING_THREADS "1"
#else
#define READING
#define N_READING 0
#define READING_THREADS "0"
#endif
#define OUT_MAX (1 << 20)

static char* hang_dir;
static char* slow_dir;

/* An emulated job with `args` (space-separated), its dumps in `dir`; in a
 * child, so that the plugin's threads and memory stay out of this one. */
static void job(const char* dir, const char* args) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char buf[512];
    snprintf(buf, sizeof buf, "sim --quiet --dump-dir %s %s", dir, args);
    char* argv[40];
    int argc = 0;
    for (char* save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 39; t = strtok_r(NULL, " ", &save))
      argv[argc++] = t;
    pt_sim_config c;
    pt_sim_config_init(&c);
    c.plugin = getenv("PT_PLUGIN_SO");
    pt_sim_result res;
    int rc = pt_sim_parse_args(&c, argc, argv, stdout, stderr) == 0 && pt_sim_run(&c, &res, stderr) == 0 ? 0 : 1;
    _exit(rc);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int setup(void** state) {
  (void)state;
  hang_dir = at_mkdtemp();
  slow_dir = at_mkdtemp();
  if (!hang_dir || !slow_dir) return -1;
  job(hang_dir, "--nodes 2 --ranks-per-node 2 --channels 2 --stall 3:0:5");
  job(slow_dir, "--host rccl --nodes 3 --ranks-per-node 2 --channels 2 --iters 6 --ops sendrecv:8M --poll-us 400 "
                "--slow-gpu 1:4 --env PROXYTRACE_METRICS_INTERVAL_MS=60000");
  return 0;
}

static int teardown(void** state) {
  (void)state;
  at_rmdir(hang_dir);
  at_rmdir(slow_dir);
  return 0;
}

/* ---- one run of the command, its output captured ---- */

typedef struct {
  int rc;
  char out[OUT_MAX], err[4096];
} result;

static int out_fd = -1, err_fd = -1;

static void slurp(int fd, char* buf, size_t cap) {
  off_t end = lseek(fd, 0, SEEK_CUR);
  lseek(fd, 0, SEEK_SET);
  size_t n = 0;
  for (ssize_t got; n + 1 < cap && (got = read(fd, buf + n, cap - 1 - n)) > 0;) n += (size_t)got;
  buf[n] = 0;
  assert_true((off_t)n == end); /* all of it fits */
}

/* The command with argv, standard output and error to files; no allocation
 * of its own between arming and disarming. */
static void run(char** argv, int argc, long fail_at, int persistent, result* r) {
  if (out_fd < 0) { /* two unnamed files in a scratch directory */
    char* dir = at_mkdtemp();
    assert_non_null(dir);
    out_fd = open(at_write(dir, "out", ""), O_RDWR);
    err_fd = open(at_write(dir, "err", ""), O_RDWR);
    at_rmdir(dir);
    assert_true(out_fd >= 0 && err_fd >= 0);
  }
  fflush(stdout);
  fflush(stderr);
  int saved_out = dup(1), saved_err = dup(2);
  assert_int_equal(ftruncate(out_fd, 0), 0);
  assert_int_equal(ftruncate(err_fd, 0), 0);
  lseek(out_fd, 0, SEEK_SET);
  lseek(err_fd, 0, SEEK_SET);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  fa_arm(fail_at, persistent);
  r->rc = pt_cmd_analyze(argc, argv);
  fflush(stdout);
  fflush(stderr);
  fa_disarm();
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  slurp(out_fd, r->out, sizeof r->out);
  slurp(err_fd, r->err, sizeof r->err);
}

static const char OOM_LINE[] = "proxytrace analyze: out of memory\n";

static result base, got;

/* Fails allocation n (persistent: every one from n on) and checks the
 * outcome; 1 if it was the out-of-memory one. */
static int check(char** argv, int argc, long n, int persistent) {
  run(argv, argc, n, persistent, &got);
  const long live = fa_live_bytes();
  const int same = got.rc == base.rc && !strcmp(got.out, base.out) && !strcmp(got.err, base.err);
  const int oom = got.rc == 2 && !got.out[0] && !strcmp(got.err, OOM_LINE);
  if ((!same && !oom) || live != 0) {
    print_error("allocation %ld failing%s: exit %d (without failure %d), %ld bytes kept\n--- stdout:\n%s"
                "--- stderr:\n%s--- stdout without failure:\n%s",
                n, persistent ? " and every one after" : "", got.rc, base.rc, live, got.out, got.err, base.out);
    fail();
  }
  return oom;
}

/* The sweep over one command line. */
static void sweep(const char* what, char** argv, int argc, int want_rc) {
  run(argv, argc, 0, 0, &base); /* warm-up: what the libc does once */
  run(argv, argc, 0, 0, &base);
  const long total = fa_calls();
  assert_int_equal(fa_live_bytes(), 0);
  assert_int_equal(base.rc, want_rc);
  assert_non_null(strstr(base.out, "proxytrace analyze: ")); /* a report, not nothing */
  const long stride = total <= SWEEP ? 1 : (total - 70) / (SWEEP - 70) + 1;
  int tried = 0, oom = 0, short_oom = 0, short_tried = 0;
  for (long n = 1; n <= total; n++) {
    if (!(n <= 60 || n > total - 10 || n % stride == 0)) continue;
    tried++;
    oom += check(argv, argc, n, 0);
    if (n % (8 * stride) == 1 || n == total) {
      short_tried++;
      short_oom += check(argv, argc, n, 1);
    }
  }
  print_message("      %s: %ld allocations; %d failed in turn: %d out of memory, %d the same report; "
                "memory short from %d points on: %d out of memory\n",
                what, total, tried, oom, tried - oom, short_tried, short_oom);
  assert_true(oom > 0);
  /* Short from the first allocation on, the analysis cannot start. */
  assert_int_equal(check(argv, argc, 1, 1), 1);
}

/* Under TSan: says why, and skips. */
static void need_interposed_malloc(void) {
  if (FA_INTERPOSED) return;
  print_message("      skipped: TSan's runtime cannot have malloc interposed (tests/common/failalloc.h); "
                "the plain and ASan builds run this\n");
  skip();
}

static void test_hang(void** state) {
  (void)state;
  need_interposed_malloc();
  char* argv[] = {"analyze", READING hang_dir};
  sweep("hang, 4 ranks (JSON lines, text, logs)", argv, 2 + N_READING, 1);
}

static void test_hang_records(void** state) {
  (void)state;
  need_interposed_malloc();
  char* argv[] = {"analyze", READING "--records", "--all-dumps", hang_dir};
  const int argc = 4 + N_READING;
  run(argv, argc, 0, 0, &base);
  assert_int_equal(base.rc, 0);
  assert_non_null(strstr(base.out, "{\"type\":\"op\","));
  /* The records are JSON lines, not a report: the sweep's check of the
   * report is for the others. */
  run(argv, argc, 0, 0, &base);
  const long total = fa_calls();
  int oom = 0, tried = 0;
  for (long n = 1; n <= total; n += total > SWEEP ? total / SWEEP + 1 : 1, tried++)
    oom += check(argv, argc, n, 0);
  print_message("      --records --all-dumps: %ld allocations; %d failed in turn: %d out of memory\n", total,
                tried, oom);
  assert_true(oom > 0);
}

static void test_slow_metrics(void** state) {
  (void)state;
  need_interposed_malloc();
  char* argv[] = {"analyze", READING "-v", slow_dir};
  sweep("slow GPU, 6 ranks, step metrics", argv, 3 + N_READING, 1);
}

/* --html (src/analyze/report_html.c) on the slow job: its wait graph, its
 * heatmap and the text report it embeds, with each allocation failing in
 * turn: the same report (and page), or "out of memory" and no page. */
static void test_html(void** state) {
  (void)state;
  need_interposed_malloc();
  char* dir = at_mkdtemp();
  assert_non_null(dir);
  char page[4096];
  snprintf(page, sizeof page, "%s/report.html", dir);
  char* argv[] = {"analyze", READING "--html", page, slow_dir};
  sweep("--html, slow GPU, 6 ranks, step metrics", argv, 4 + N_READING, 1);
  at_rmdir(dir);
}

/* --html on the hang: its chain, its culprit's node and the strip. */
static void test_html_hang(void** state) {
  (void)state;
  need_interposed_malloc();
  char* dir = at_mkdtemp();
  assert_non_null(dir);
  char page[4096];
  snprintf(page, sizeof page, "%s/report.html", dir);
  char* argv[] = {"analyze", READING "--html", page, hang_dir};
  sweep("--html, GPU stall, 4 ranks", argv, 4 + N_READING, 1);
  at_rmdir(dir);
}

/* The library's side: once an allocation failed, no call answers as if the
 * analysis were whole, and freeing it gives everything back. */
static void test_library_after_failure(void** state) {
  (void)state;
  need_interposed_malloc();
  pt_analysis* a;
  fa_arm(0, 0);
  assert_int_equal(pt_analysis_new(&a), 0);
  assert_int_equal(pt_analysis_set_option(a, "threads", READING_THREADS), 0);
  assert_int_equal(pt_analysis_add_path(a, hang_dir), 0);
  const long total = fa_calls();
  pt_analysis_free(a);
  fa_disarm();
  int checked = 0;
  for (long n = 3; n <= total; n += total / 16 + 1) {
    assert_int_equal(pt_analysis_new(&a), 0);
    assert_int_equal(pt_analysis_set_option(a, "threads", READING_THREADS), 0);
    fa_arm(n, 0);
    const int rc = pt_analysis_add_path(a, hang_dir);
    fa_disarm();
    if (rc == 0) { /* an allocation the libc did without */
      pt_analysis_free(a);
      continue;
    }
    checked++;
    assert_int_equal(rc, PT_AN_ENOMEM);
    assert_int_equal(pt_analysis_add_path(a, hang_dir), PT_AN_ENOMEM);
    assert_int_equal(pt_analysis_run(a), PT_AN_ENOMEM);
    assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_UNUSABLE);
    char buf[64] = "";
    FILE* f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    assert_int_equal(pt_analysis_write_text(a, f, 1), PT_AN_ENOMEM);
    assert_int_equal(pt_analysis_write_json(a, f), PT_AN_ENOMEM);
    assert_int_equal(pt_analysis_write_records(a, f), PT_AN_ENOMEM);
    assert_int_equal(ftell(f), 0);
    fclose(f);
    assert_null(pt_analysis_json(a));
    pt_analysis_free(a); /* ASan's leak check: all of it */
  }
  assert_true(checked > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hang),
      cmocka_unit_test(test_hang_records),
      cmocka_unit_test(test_slow_metrics),
      cmocka_unit_test(test_html),
      cmocka_unit_test(test_html_hang),
      cmocka_unit_test(test_library_after_failure),
  };
  return cmocka_run_group_tests_name("analyze out of memory", tests, setup, teardown);
}
