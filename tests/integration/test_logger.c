/*
 * test_logger.c — the host's logger is foreign code: the plugin calls it
 * with no lock held. A logger that re-enters the plugin during a dump
 * (dumps this and another communicator, creates and finalizes one, even
 * finalizes the communicator being dumped), the same from the dumper
 * thread's periodic dumps, a slow logger while other threads create and
 * destroy communicators, and fork() from inside a dump and from another
 * thread during one: each completes, within a watchdog alarm that fails the
 * test if anything deadlocks. And the last finalize with the dumper thread
 * inside the logger: bounded when the logger does not return, and no
 * deadlock when that logger creates a communicator meanwhile.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rccl_host.h"

static rh_plugin plugin;

static void watchdog(int sig) {
  (void)sig;
  static const char msg[] = "test_logger: deadlock (watchdog alarm)\n";
  if (write(2, msg, sizeof msg - 1) < 0) {
  }
  _exit(99);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void* new_ctx(uint64_t hash, int active_ops) {
  void* ctx = NULL;
  int mask = 0;
  plugin.p->init(&ctx, hash, &mask, "log", 2, 2, 0, NULL);
  assert_non_null(ctx);
  for (int i = 0; i < active_ops; i++) {
    rh_op op;
    rh_op_desc d = {.comm_hash = hash, .op_count = i, .peer = 1, .is_send = 1, .raw_nsteps = 8,
                    .slice_steps = 1, .chunk_size = 64};
    rh_op_active(&plugin, ctx, &op, &d, 2, 0, 1, 0, 0);
  }
  return ctx;
}

/* ---- a logger that calls back into the plugin ---- */

static void* ctx_a;
static void* ctx_b;
static atomic_int outer_lines, inner_lines, reentered;
static int finalize_inside;

static void counting_logger(ncclDebugLogLevel level, unsigned long flags, const char* file,
                            int line, const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
  atomic_fetch_add(&inner_lines, 1);
}

static void reentrant_logger(ncclDebugLogLevel level, unsigned long flags, const char* file,
                             int line, const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
  atomic_fetch_add(&outer_lines, 1);
  if (atomic_exchange(&reentered, 1)) return;
  plugin.dump(ctx_a, counting_logger); /* the communicator being dumped */
  plugin.dump(ctx_b, counting_logger); /* another one */
  void* c = new_ctx(77, 1);             /* a new one, dumped and finalized */
  plugin.dump(c, counting_logger);
  plugin.p->finalize(c);
  if (finalize_inside) plugin.p->finalize(ctx_a); /* the one being dumped */
}

static void test_logger_reenters_the_plugin(void** state) {
  (void)state;
  for (finalize_inside = 0; finalize_inside < 2; finalize_inside++) {
    ctx_a = new_ctx(70, 3);
    ctx_b = new_ctx(71, 2);
    atomic_store(&outer_lines, 0);
    atomic_store(&inner_lines, 0);
    atomic_store(&reentered, 0);
    alarm(20);
    plugin.dump(ctx_a, reentrant_logger);
    alarm(0);
    assert_int_equal(atomic_load(&outer_lines), 4);     /* header + 3 ops, all of them */
    assert_int_equal(atomic_load(&inner_lines), 4 + 3 + 2); /* a, b, the new one */
    if (!finalize_inside) plugin.p->finalize(ctx_a);
    /* finalized (inside the logger or here): later dumps print nothing */
    atomic_store(&inner_lines, 0);
    plugin.dump(ctx_a, counting_logger);
    assert_int_equal(atomic_load(&inner_lines), 0);
    plugin.p->finalize(ctx_b);
  }
}

/* ---- a slow logger ---- */

static atomic_int slow_started;

static void slow_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                        const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
  atomic_store(&slow_started, 1);
  usleep(100 * 1000);
}

static void* slow_dump(void* p) {
  plugin.dump(p, slow_logger);
  return NULL;
}

/* A dump whose logger takes 100 ms a line (half a second in all) does not
 * hold up other communicators' init and finalize on other threads. */
static void test_slow_logger_blocks_nobody(void** state) {
  (void)state;
  void* ctx = new_ctx(80, 4);
  atomic_store(&slow_started, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, slow_dump, ctx), 0);
  while (!atomic_load(&slow_started)) sched_yield();
  double worst = 0;
  alarm(20);
  for (int i = 0; i < 20; i++) {
    const double t0 = now_ms();
    void* c = new_ctx(81 + (uint64_t)i, 1);
    plugin.p->finalize(c);
    const double took = now_ms() - t0;
    if (took > worst) worst = took;
  }
  /* and the communicator being dumped can be finalized meanwhile */
  const double t0 = now_ms();
  plugin.p->finalize(ctx);
  const double fin = now_ms() - t0;
  pthread_join(th, NULL);
  alarm(0);
  print_message("      slowest init+finalize during the dump: %.1f ms; finalize of the dumped "
                "communicator: %.1f ms\n",
                worst, fin);
  assert_true(worst < 90.0); /* less than one logger call */
  assert_true(fin < 90.0);
}

/* ---- fork ---- */

/* The child of a fork taken during a dump creates, dumps and finalizes a
 * communicator of its own, and exits 0 — unless something it inherited is
 * held, when the watchdog makes it exit 99. */
static void child_work(void) {
  alarm(10);
  void* c = NULL;
  int mask = 0;
  plugin.p->init(&c, 90, &mask, "child", 1, 1, 0, NULL);
  if (!c) _exit(2);
  atomic_store(&inner_lines, 0);
  plugin.dump(c, counting_logger);
  plugin.p->finalize(c);
  _exit(atomic_load(&inner_lines) == 1 ? 0 : 3);
}

static int wait_status(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static atomic_int forked_status = -1;

static void forking_logger(ncclDebugLogLevel level, unsigned long flags, const char* file,
                           int line, const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
  if (atomic_load(&forked_status) != -1) return;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) child_work();
  atomic_store(&forked_status, wait_status(pid));
}

static void* fork_during(void* p) {
  (void)p;
  while (!atomic_load(&slow_started)) sched_yield();
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) child_work();
  atomic_store(&forked_status, wait_status(pid));
  return NULL;
}

static void test_fork_during_a_dump(void** state) {
  (void)state;
  void* ctx = new_ctx(91, 2);
  /* from inside the logger */
  atomic_store(&forked_status, -1);
  alarm(20);
  plugin.dump(ctx, forking_logger);
  assert_int_equal(atomic_load(&forked_status), 0);
  /* from another thread while a slow logger runs */
  atomic_store(&forked_status, -1);
  atomic_store(&slow_started, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, fork_during, NULL), 0);
  plugin.dump(ctx, slow_logger);
  pthread_join(th, NULL);
  alarm(0);
  assert_int_equal(atomic_load(&forked_status), 0);
  plugin.p->finalize(ctx);
}

/* ---- the dumper thread's logger ---- */

static atomic_int dumper_lines, dumper_reentered;
static void* dumper_ctx;

static void dumper_logger(ncclDebugLogLevel level, unsigned long flags, const char* file,
                          int line, const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
  atomic_fetch_add(&dumper_lines, 1);
  if (atomic_exchange(&dumper_reentered, 1)) return;
  plugin.dump(dumper_ctx, counting_logger); /* what ncclCommDump does */
  void* c = new_ctx(96, 1);
  plugin.dump(c, counting_logger);
  plugin.p->finalize(c);
  atomic_store(&dumper_reentered, 2);
}

/* Periodic dumps by the dumper thread go to the communicator's logger; one
 * that re-enters the plugin there (dumps, creates and finalizes) does not
 * stop the dumper, nor anyone else. */
static void test_dumper_logger_reenters(void** state) {
  (void)state;
  setenv("PROXYTRACE_DUMP_INTERVAL_MS", "20", 1);
  void* ctx = NULL;
  int mask = 0;
  plugin.p->init(&ctx, 95, &mask, "dumper", 2, 2, 0, dumper_logger);
  unsetenv("PROXYTRACE_DUMP_INTERVAL_MS");
  assert_non_null(ctx);
  dumper_ctx = ctx;
  rh_op op;
  rh_op_desc d = {.comm_hash = 95, .op_count = 0, .peer = 1, .is_send = 1, .raw_nsteps = 8,
                  .slice_steps = 1, .chunk_size = 64};
  rh_op_active(&plugin, ctx, &op, &d, 2, 0, 1, 0, 0);
  alarm(20);
  while (atomic_load(&dumper_reentered) != 2) usleep(1000);
  const int before = atomic_load(&dumper_lines);
  while (atomic_load(&dumper_lines) < before + 4) usleep(1000); /* and it goes on */
  rh_op_stop(&op);
  plugin.p->finalize(ctx); /* the last one: joins the dumper */
  alarm(0);
}

/* ---- the last finalize and the dumper thread ---- */

static int on_dumper_thread(void) {
  char name[32] = "";
  pthread_getname_np(pthread_self(), name, sizeof name);
  return !strcmp(name, "proxytrace dump");
}

static atomic_int gate, entered, released, left, finalizing, late_lines;
static void* late_ctx;

/* Holds the dumper thread's first line until released (10 s at most). */
static void stuck_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                         const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
  if (!on_dumper_thread() || !atomic_exchange(&gate, 0)) return;
  atomic_store(&entered, 1);
  for (int i = 0; i < 10000 && !atomic_load(&released); i++) usleep(1000);
  atomic_store(&left, 1);
}

static void late_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                        const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
  if (on_dumper_thread()) atomic_fetch_add(&late_lines, 1);
}

/* On the dumper thread, once the last finalize has begun: creates a
 * communicator (with an op waiting, so that its periodic dumps print). */
static void init_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                        const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
  if (!on_dumper_thread() || !atomic_exchange(&gate, 0)) return;
  atomic_store(&entered, 1);
  while (!atomic_load(&finalizing)) usleep(1000);
  usleep(50 * 1000); /* finalize is waiting for this thread by now */
  int mask = 0;
  void* c = NULL;
  plugin.p->init(&c, 111, &mask, "late", 2, 2, 0, late_logger);
  late_ctx = c;
  atomic_store(&left, 1);
}

static void* dumped_ctx(uint64_t hash, ncclDebugLogger_t log, rh_op* op) {
  void* ctx = NULL;
  int mask = 0;
  plugin.p->init(&ctx, hash, &mask, "last", 2, 2, 0, log);
  assert_non_null(ctx);
  rh_op_desc d = {.comm_hash = hash, .op_count = 0, .peer = 1, .is_send = 1, .raw_nsteps = 8,
                  .slice_steps = 1, .chunk_size = 64};
  rh_op_active(&plugin, ctx, op, &d, 2, 0, 1, 0, 0);
  return ctx;
}

static void reset_gate(void) {
  atomic_store(&entered, 0);
  atomic_store(&released, 0);
  atomic_store(&left, 0);
  atomic_store(&finalizing, 0);
  atomic_store(&late_lines, 0);
  atomic_store(&gate, 1);
}

/* The dumper thread is inside the host's logger, which does not return, when
 * the last communicator is finalized: finalize waits for it a bounded time
 * (PT_FINALIZE_WAIT_MS, 2 s), not for the logger. The dump then ends on its
 * own, and the next communicator gets a dumper thread again. */
static void test_last_finalize_bounded(void** state) {
  (void)state;
  setenv("PROXYTRACE_DUMP_INTERVAL_MS", "20", 1);
  rh_op op;
  reset_gate();
  void* ctx = dumped_ctx(100, stuck_logger, &op);
  alarm(30);
  while (!atomic_load(&entered)) usleep(1000);
  rh_op_stop(&op);
  const double t0 = now_ms();
  plugin.p->finalize(ctx);
  const double took = now_ms() - t0;
  atomic_store(&released, 1);
  while (!atomic_load(&left)) usleep(1000);
  /* a dumper again for the next communicator */
  atomic_store(&late_lines, 0);
  ctx = dumped_ctx(101, late_logger, &op);
  while (atomic_load(&late_lines) < 4) usleep(1000);
  rh_op_stop(&op);
  plugin.p->finalize(ctx);
  alarm(0);
  unsetenv("PROXYTRACE_DUMP_INTERVAL_MS");
  print_message("      last finalize with the dumper stuck in the logger: %.0f ms\n", took);
  assert_true(took >= 1500 && took < 3500);
}

/* The dumper thread's logger creates a communicator while the last
 * finalize waits for that thread: neither waits for the other, and the new
 * communicator has a dumper thread (its periodic dumps print). */
static void test_dumper_logger_inits_during_last_finalize(void** state) {
  (void)state;
  setenv("PROXYTRACE_DUMP_INTERVAL_MS", "20", 1);
  rh_op op;
  reset_gate();
  late_ctx = NULL;
  void* ctx = dumped_ctx(110, init_logger, &op);
  alarm(20);
  while (!atomic_load(&entered)) usleep(1000);
  rh_op_stop(&op);
  atomic_store(&finalizing, 1);
  const double t0 = now_ms();
  plugin.p->finalize(ctx);
  const double took = now_ms() - t0;
  while (!atomic_load(&left)) usleep(1000);
  assert_non_null(late_ctx);
  rh_op late_op;
  rh_op_desc d = {.comm_hash = 111, .op_count = 0, .peer = 1, .is_send = 1, .raw_nsteps = 8,
                  .slice_steps = 1, .chunk_size = 64};
  rh_op_active(&plugin, late_ctx, &late_op, &d, 2, 0, 1, 0, 0);
  while (atomic_load(&late_lines) < 4) usleep(1000);
  rh_op_stop(&late_op);
  plugin.p->finalize(late_ctx);
  alarm(0);
  unsetenv("PROXYTRACE_DUMP_INTERVAL_MS");
  print_message("      last finalize while the dumper's logger creates a communicator: %.0f ms\n", took);
  assert_true(took < 1500);
}

static int setup(void** state) {
  (void)state;
  /* No dumper thread unless a test asks for one (a fork child of a process
   * with threads must not start any under TSan). */
  setenv("PROXYTRACE_STALL_MS", "0", 1);
  signal(SIGALRM, watchdog);
  rh_open(&plugin, NULL);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  rh_close(&plugin);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_logger_reenters_the_plugin),
      cmocka_unit_test(test_slow_logger_blocks_nobody),
      cmocka_unit_test(test_fork_during_a_dump),
      cmocka_unit_test(test_dumper_logger_reenters),
      cmocka_unit_test(test_last_finalize_bounded),
      cmocka_unit_test(test_dumper_logger_inits_during_last_finalize),
  };
  return cmocka_run_group_tests_name("logger", tests, setup, teardown);
}
