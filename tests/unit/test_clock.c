/*
 * test_clock.c — the recording clock: PROXYTRACE_CLOCK's names on this
 * architecture (and the other one's refused), the source each value gives,
 * and ticks that advance at the rate the dump converts with.
 *
 * The clock is chosen once per process, so each choice is checked in a
 * forked child that sets PROXYTRACE_CLOCK first; the parent initialises the
 * clock only in the tests after those.
 */
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "trace/clock.h"

static void test_names(void** state) {
  (void)state;
  assert_int_equal(pt_clock_parse(NULL), PT_CLOCK_DEFAULT);
  assert_int_equal(pt_clock_parse(""), PT_CLOCK_DEFAULT);
  assert_int_equal(pt_clock_parse("monotonic"), PT_CLOCK_MONOTONIC);
  assert_int_equal(pt_clock_parse("sundial"), PT_CLOCK_BAD);
  assert_int_equal(pt_clock_parse("TSC"), PT_CLOCK_BAD);
#if defined(__x86_64__) || defined(__i386__)
  assert_int_equal(pt_clock_parse("tsc"), PT_CLOCK_COUNTER);
  assert_int_equal(pt_clock_parse("counter"), PT_CLOCK_BAD); /* aarch64's name */
  assert_string_equal(pt_clock_accepted(), "'tsc' or 'monotonic'");
#elif defined(__aarch64__)
  assert_int_equal(pt_clock_parse("counter"), PT_CLOCK_COUNTER);
  assert_int_equal(pt_clock_parse("tsc"), PT_CLOCK_BAD); /* x86's name */
  assert_string_equal(pt_clock_accepted(), "'counter' or 'monotonic'");
#else
  assert_int_equal(pt_clock_parse("tsc"), PT_CLOCK_BAD);
  assert_int_equal(pt_clock_parse("counter"), PT_CLOCK_BAD);
#endif
}

/* In a child with PROXYTRACE_CLOCK = `value` (NULL: unset): the source
 * chosen and the description, written into the buffers. */
static void source_with(const char* value, char* source, size_t ns, char* text, size_t nt) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    if (value) setenv("PROXYTRACE_CLOCK", value, 1);
    else unsetenv("PROXYTRACE_CLOCK");
    char line[512];
    char what[256];
    pt_clock_describe(what, sizeof what);
    int n = snprintf(line, sizeof line, "%s\n%s\n", pt_clock_source(), what);
    _exit(write(fds[1], line, (size_t)n) == n ? 0 : 1);
  }
  close(fds[1]);
  char buf[512];
  size_t got = 0;
  ssize_t k;
  while (got < sizeof buf - 1 && (k = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0)
    got += (size_t)k;
  buf[got] = 0;
  close(fds[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  char* nl = strchr(buf, '\n');
  assert_non_null(nl);
  *nl = 0;
  assert_true(strlen(buf) < ns && strlen(nl + 1) < nt);
  strcpy(source, buf);
  strcpy(text, nl + 1);
}

static void test_monotonic_forced(void** state) {
  (void)state;
  char src[64], text[256];
  source_with("monotonic", src, sizeof src, text, sizeof text);
  assert_string_equal(src, "monotonic");
  assert_non_null(strstr(text, "PROXYTRACE_CLOCK=monotonic"));
}

/* The default, the machine's own name, and the other machine's name (which
 * the plugin reports, then ignores) all give the same source. */
static void test_default_and_names(void** state) {
  (void)state;
  char def[64], named[64], other[64], text[256];
  source_with(NULL, def, sizeof def, text, sizeof text);
  assert_non_null(strstr(text, def));
#if defined(__aarch64__)
  /* Linux lets every EL0 program read the virtual counter. */
  assert_string_equal(def, "counter");
  assert_non_null(strstr(text, "MHz"));
  source_with("counter", named, sizeof named, text, sizeof text);
  source_with("tsc", other, sizeof other, text, sizeof text);
#elif defined(__x86_64__) || defined(__i386__)
  /* "tsc" where the TSC is invariant; otherwise the reason is given. */
  if (strcmp(def, "tsc") != 0) {
    assert_string_equal(def, "monotonic");
    assert_non_null(strstr(text, "not invariant"));
  }
  source_with("tsc", named, sizeof named, text, sizeof text);
  source_with("counter", other, sizeof other, text, sizeof text);
#else
  assert_string_equal(def, "monotonic");
  snprintf(named, sizeof named, "%s", def);
  source_with("tsc", other, sizeof other, text, sizeof text);
#endif
  assert_string_equal(named, def);
  assert_string_equal(other, def);
}

static uint64_t real_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* From here on this process's clock is initialised (default source). Ticks
 * never go back, 50 ms of sleep converts to about 50 ms, and a tick converts
 * to the Unix time it was taken at. */
static void test_ticks_advance_at_the_converted_rate(void** state) {
  (void)state;
  pt_clock_init();
  uint64_t prev = pt_ticks();
  for (int i = 0; i < 100000; i++) {
    uint64_t t = pt_ticks();
    assert_true(t >= prev);
    prev = t;
  }
  uint64_t r0 = real_ms();
  uint64_t t0 = pt_ticks();
  struct timespec d = {0, 50 * 1000000L};
  nanosleep(&d, NULL);
  uint64_t t1 = pt_ticks();
  uint64_t r1 = real_ms();
  pt_clock_cal cal;
  pt_clock_calibration(&cal);
  double ms = pt_ticks_to_ms(&cal, t0, t1);
  /* a loaded machine (or an emulator) may oversleep, never undersleep */
  if (ms < 49.0 || ms > 1000.0) fail_msg("50 ms of sleep measured as %.3f ms", ms);
  int64_t u0 = pt_ticks_to_unix_ms(&cal, t0);
  if (u0 < (int64_t)r0 - 5 || u0 > (int64_t)r1 + 5)
    fail_msg("tick converts to %lld ms, taken between %llu and %llu", (long long)u0,
             (unsigned long long)r0, (unsigned long long)r1);
  uint64_t per_second = pt_ms_to_ticks(1000);
  assert_true(per_second > 0);
  assert_int_equal(pt_ticks_to_unix_ms(&cal, 0), 0);
}

/* Emulated time (pt_clock_emulate, the emulator's table): every tick is the
 * emulator's value, conversions are exact against its epoch, thresholds are
 * its nanoseconds; it is refused while a trace exists, and the last trace's
 * end brings the machine's source back. */
static void test_emulated(void** state) {
  (void)state;
  pt_clock_init();
  char before[64];
  snprintf(before, sizeof before, "%s", pt_clock_source());
  static _Atomic uint64_t now = 5000000000ull; /* 5 s */
  const int64_t epoch = 1767225600000000000ll;
  assert_int_equal(pt_clock_emulate(&now, epoch), 0);
  assert_string_equal(pt_clock_source(), "emulated");
  assert_int_equal(pt_ticks(), 5000000000ull);
  atomic_store(&now, 5000000123ull);
  assert_int_equal(pt_ticks(), 5000000123ull);
  pt_clock_cal cal;
  pt_clock_calibration(&cal);
  assert_int_equal(pt_ticks_to_unix_ns(&cal, pt_ticks()), epoch + 5000000123ll);
  assert_int_equal(pt_ticks_to_unix_ms(&cal, 5002000000ull), (epoch + 5002000000ll) / 1000000);
  assert_int_equal(pt_clock_realtime_ns(), epoch + 5000000123ll);
  assert_int_equal(pt_clock_monotonic_ms(), 5000u);
  assert_int_equal(pt_ms_to_ticks(250), 250000000ull);
  assert_true(pt_ticks_to_ms(&cal, 1000000ull, 3500000ull) == 2.5);
  char text[256];
  pt_clock_describe(text, sizeof text);
  assert_non_null(strstr(text, "emulated"));
  /* A trace exists: the source stays. */
  pt_clock_lock();
  static _Atomic uint64_t other = 7;
  assert_int_equal(pt_clock_emulate(&other, 0), -1);
  assert_int_equal(pt_ticks(), 5000000123ull);
  pt_clock_unlock(); /* the last trace: real time again */
  assert_string_equal(pt_clock_source(), before);
  const uint64_t a = pt_ticks();
  assert_true(a != 5000000123ull);
  /* And it can be emulated again, then ended before any trace. */
  assert_int_equal(pt_clock_emulate(&other, 0), 0);
  assert_int_equal(pt_ticks(), 7u);
  assert_int_equal(pt_clock_emulate(NULL, 0), 0);
  assert_string_equal(pt_clock_source(), before);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_monotonic_forced),
      cmocka_unit_test(test_default_and_names),
      cmocka_unit_test(test_ticks_advance_at_the_converted_rate),
      cmocka_unit_test(test_emulated),
  };
  return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
