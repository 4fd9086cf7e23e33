/*
 * test_fork.c — a child forked at any moment can use the plugin. The
 * parent's dumper thread writes dump files and metrics files every
 * millisecond (each under its own lock: the dump files' and the metrics
 * files'), while the main thread forks again and again; every child, under
 * an alarm, creates a communicator of its own, dumps it to files, exports
 * its metrics and finalizes it, then checks that its own files are on disk.
 * A lock inherited held (taken by a thread that does not exist in the
 * child) blocks one of those steps for ever: the alarm kills that child and
 * the test fails. The built plugin is driven through the real ABI
 * (rccl_host.c).
 *
 * Under ThreadSanitizer a child may start no thread (TSan cannot tell the
 * child's new thread from the parent's that had its id), and the metrics
 * need the dumper thread: there the children create, dump and finalize,
 * and TSan checks the parent's locks and fork handlers. Under
 * AddressSanitizer the test is skipped: GCC's libasan (12) has no fork
 * handler of its own, so a child forked while another thread is inside
 * its allocator hangs in that allocator's lock (seen: 1 child in 200),
 * whatever the plugin does.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rccl_host.h"

#define FORKS 200
#if defined(__SANITIZE_THREAD__)
#define CHILD_METRICS 0
#else
#define CHILD_METRICS 1
#endif
#define CHILD_ALARM_S 20 /* a child that has not finished by then is hung, however busy the machine */

static rh_plugin plugin;
static char dir[256];
static atomic_int logged;

/* The host's logger: counts (every periodic dump says where it went). */
static void quiet_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                         const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
  atomic_fetch_add(&logged, 1);
}

static void* comm(uint64_t hash, int rank, int ops) {
  void* ctx = NULL;
  int mask = 0;
  if (plugin.p->init(&ctx, hash, &mask, "fork", 2, 8, rank, quiet_logger) != ncclSuccess || !ctx) return NULL;
  /* Many ops waiting at step 2: every dump and export has work to do, so
   * their locks are held a good part of each millisecond. */
  static rh_op op[256];
  for (int i = 0; i < ops && i < 256; i++) {
    rh_op_desc d = {.comm_hash = hash, .op_count = 1 + i / 8, .channel = i % 8, .peer = 1, .is_send = i % 2,
                    .raw_nsteps = 16, .slice_steps = 2, .nbytes = 1 << 20, .func = 4, .proto = 2,
                    .pattern = 1, .total_bytes = 1 << 24, .chunk_size = 1 << 19};
    rh_op_active(&plugin, ctx, &op[i], &d, 4, i % 2 ? 0 : 2, i % 2 ? 2 : 0, 2, 1);
  }
  return ctx;
}

/* A file of `dir` whose name starts with `prefix` and holds "-<pid>-". */
static int has_file(const char* prefix, pid_t pid) {
  char mid[32];
  snprintf(mid, sizeof mid, "-%ld-", (long)pid);
  DIR* d = opendir(dir);
  if (!d) return 0;
  int found = 0;
  for (struct dirent* e; !found && (e = readdir(d)) != NULL;)
    found = !strncmp(e->d_name, prefix, strlen(prefix)) && strstr(e->d_name, mid) != NULL;
  closedir(d);
  return found;
}

/* The child: its own communicator, dumped, exported, finalized; 0 when its
 * dump and metrics files are there. */
static int child(void* parents) {
  alarm(CHILD_ALARM_S); /* SIGALRM kills a hung child */
  unsetenv("PROXYTRACE_DUMP_INTERVAL_MS");
  /* metrics on, the export being finalize's (the dumper thread idles) */
  setenv("PROXYTRACE_METRICS_INTERVAL_MS", CHILD_METRICS ? "600000" : "0", 1);
  plugin.p->finalize(parents); /* the parent's copy: nothing to do */
  void* ctx = comm(0xc0de, 1, 8);
  if (!ctx) return 3;
  plugin.dump(ctx, quiet_logger); /* the hook's lines, and the dump files */
  plugin.p->finalize(ctx);        /* the final metrics export */
  if (CHILD_METRICS && !has_file("proxytrace-metrics-", getpid())) return 5;
  if (!has_file("proxytrace-", getpid())) return 6;
  return 0;
}

/* The child's status within 60 s (its alarm fires long before). */
static int child_status(pid_t pid) {
  int status = -1;
  for (int ms = 0; ms < 60000; ms++) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    usleep(1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return status;
}

static void test_fork_while_files_are_written(void** state) {
  (void)state;
  const char* emu = getenv("PROXYTRACE_EMULATOR");
  if (emu && *emu) {
    /* qemu-user runs every guest thread as a host thread and forks them all
     * through its own locks: a child hung there says nothing of ours */
    fprintf(stderr, "skipped under an emulator (%s): fork of a threaded process is not reliable there\n", emu);
    skip();
  }
#if defined(__SANITIZE_ADDRESS__)
  fprintf(stderr, "skipped under AddressSanitizer: its allocator is not fork-safe (see the top of this file)\n");
  skip();
#endif
  setenv("PROXYTRACE_STALL_MS", "0", 1);
  setenv("PROXYTRACE_DUMP_DIR", dir, 1);
  setenv("PROXYTRACE_DUMP_INTERVAL_MS", "1", 1);
  setenv("PROXYTRACE_METRICS_INTERVAL_MS", "1", 1);
  void* a = comm(0xf0a, 0, 256);
  void* b = comm(0xf0b, 1, 256);
  assert_non_null(a);
  assert_non_null(b);
  unsigned seed = (unsigned)time(NULL);
  int hung = 0, failed = 0, forks = 0;
  for (int i = 0; i < FORKS; i++) {
    usleep((unsigned)(rand_r(&seed) % 1500)); /* anywhere in the dumper's millisecond */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(child(a));
    forks++;
    int st = child_status(pid);
    if (WIFSIGNALED(st)) {
      hung++;
      fprintf(stderr, "fork %d: the child was killed by signal %d (hung)\n", i, WTERMSIG(st));
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      failed++;
      fprintf(stderr, "fork %d: the child exited with %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
  }
  plugin.p->finalize(a);
  plugin.p->finalize(b);
  fprintf(stderr, "forks tried: %d, children hung: %d, failed: %d; parent log lines: %d\n", forks, hung, failed,
          atomic_load(&logged));
  assert_int_equal(hung, 0);
  assert_int_equal(failed, 0);
  assert_true(atomic_load(&logged) > 0); /* the parent did dump meanwhile */
}

static int setup(void** state) {
  (void)state;
  rh_open(&plugin, NULL);
  snprintf(dir, sizeof dir, "/tmp/pt-fork-XXXXXX");
  assert_non_null(mkdtemp(dir));
  return 0;
}

static int teardown(void** state) {
  (void)state;
  rh_close(&plugin);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
  return 0;
}

int main(void) {
  if (!getenv("PT_PLUGIN_SO")) {
    fprintf(stderr, "PT_PLUGIN_SO is not set (run through make test)\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fork_while_files_are_written, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
