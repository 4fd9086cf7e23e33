/*
 * test_writer.c — one writer per lane. Any number of threads may record
 * into one trace, each into its own lane (PXN in a process that drives
 * several GPUs); an op's events come from the thread that started it.
 * Debug builds (PT_DEBUG: sanitizer builds and DEBUG=1) stop the process
 * when another thread records an event of an op, naming both threads;
 * release builds compile no check. Either way, dumping from other threads
 * is not writing. Each case runs in a forked child, so an abort is an
 * outcome to check, not the end of the test.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proxytrace/trace.h"

static pt_trace* trace;
static pt_handle op;

static void* first_writer(void* p) {
  (void)p;
  pthread_setname_np(pthread_self(), "pt-first");
  pt_op_info info = {.comm_hash = 9, .op_count = 0, .peer = 1, .nsteps = 4, .is_send = 1};
  op = pt_op_start(trace, &info);
  pt_op_register(op);
  return NULL;
}

static void ignore_line(void* arg, const char* line, int len) {
  (void)arg;
  (void)line;
  (void)len;
}

static void* dumper(void* p) {
  (void)p;
  pt_trace_dump(trace, ignore_line, NULL);
  return NULL;
}

static int dump_lines;
static void count_line(void* arg, const char* line, int len) {
  (void)arg;
  if (memmem(line, (size_t)len, "<9:", 3)) dump_lines++; /* the line is not terminated */
}

/* In a child: `first_writer` records on its own thread, then this (another)
 * thread: with `second_thread_writes` 1, an update of the first thread's
 * op; with 2, an op of its own, which must then be in the dump beside the
 * first (the child exits 14 if not). Returns the wait status; stderr is
 * captured into err. */
static int run_child(int second_thread_writes, char* err, size_t n) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    if (pt_trace_create(&trace, NULL, 3) != 0) _exit(10);
    pthread_t th;
    if (pthread_create(&th, NULL, first_writer, NULL) != 0) _exit(11);
    pthread_join(th, NULL);
    if (!op) _exit(12);
    if (pthread_create(&th, NULL, dumper, NULL) != 0) _exit(13); /* a reader: fine */
    pthread_join(th, NULL);
    pt_trace_dump(trace, ignore_line, NULL);
    if (second_thread_writes == 1) {
      pthread_setname_np(pthread_self(), "pt-second"); /* the message names both threads */
      pt_op_update(op, PT_CNT_POSTED, 1, 0);
    }
    if (second_thread_writes == 2) {
      pt_op_info info = {.comm_hash = 9, .op_count = 0, .peer = 2, .nsteps = 4, .is_send = 0};
      pt_handle mine = pt_op_start(trace, &info);
      pt_op_register(mine);
      pt_op_update(mine, PT_CNT_POSTED, 1, 0);
      pt_trace_dump(trace, count_line, NULL);
      if (!mine || dump_lines != 2 || pt_trace_active_ops(trace) != 2) _exit(14);
    }
    _exit(0);
  }
  close(fds[1]);
  size_t got = 0;
  ssize_t k;
  while (got < n - 1 && (k = read(fds[0], err + got, n - 1 - got)) > 0) got += (size_t)k;
  err[got] = 0;
  close(fds[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return st;
}

static void test_readers_on_other_threads(void** state) {
  (void)state;
  char err[2048];
  int st = run_child(0, err, sizeof err);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("child status %d: %s", st, err);
}

static void test_second_writer(void** state) {
  (void)state;
  char err[2048];
  int st = run_child(1, err, sizeof err);
#ifdef PT_DEBUG
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) fail_msg("child status %d, want SIGABRT", st);
  assert_non_null(strstr(err, "proxytrace: trace of rank 3 written by thread"));
  assert_non_null(strstr(err, " (pt-second), but thread "));
  assert_non_null(strstr(err, "(pt-first) writes it (lane 0, which started the op): one thread writes each lane"));
#else
  /* no check in release builds: the update is simply recorded */
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("child status %d: %s", st, err);
  assert_null(strstr(err, "one thread writes each lane"));
#endif
}

/* A second thread that starts ops of its own writes its own lane: allowed
 * in every build, and a dump reads both lanes as one trace. */
static void test_second_lane(void** state) {
  (void)state;
  char err[2048];
  int st = run_child(2, err, sizeof err);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("child status %d: %s", st, err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_readers_on_other_threads),
      cmocka_unit_test(test_second_writer),
      cmocka_unit_test(test_second_lane),
  };
  return cmocka_run_group_tests_name("writer", tests, NULL, NULL);
}
