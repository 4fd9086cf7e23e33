/*
 * clock.c — chooses the tick source once per process and converts ticks to
 * wall-clock time at dump time.
 *
 * The TSC is used only when the CPU says it is invariant (constant_tsc and
 * nonstop_tsc), because then one rate holds for every core and every sleep
 * state. Its rate is measured against CLOCK_MONOTONIC for a short while at
 * start-up and refined at every dump from the start-up anchor, so a long run
 * converts with a long baseline. PROXYTRACE_CLOCK=monotonic forces the
 * portable source.
 */
#include "trace/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pt_clock_tsc;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t anchor_tick;
static uint64_t anchor_mono_ns;
static int64_t anchor_real_ns;
static double startup_ns_per_tick = 1.0;

static uint64_t now_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cpu_has_invariant_tsc(void) {
#if defined(__x86_64__) || defined(__i386__)
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  char line[4096];
  int ok = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) != 0) continue;
    ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
    break;
  }
  fclose(f);
  return ok;
#else
  return 0;
#endif
}

static void init_once(void) {
  const char* force = getenv("PROXYTRACE_CLOCK");
  int want_tsc = !(force && !strcmp(force, "monotonic"));
  pt_clock_tsc = want_tsc && cpu_has_invariant_tsc();
  if (pt_clock_tsc) {
    /* ~2 ms against CLOCK_MONOTONIC: good to a few ppm of a tick rate, which
     * is far below the millisecond the dump prints. */
    uint64_t m0 = now_ns(CLOCK_MONOTONIC), t0 = pt_ticks(), m1, t1;
    do {
      m1 = now_ns(CLOCK_MONOTONIC);
      t1 = pt_ticks();
    } while (m1 - m0 < 2000000ull);
    if (t1 > t0) startup_ns_per_tick = (double)(m1 - m0) / (double)(t1 - t0);
    else pt_clock_tsc = 0;
  }
  if (!pt_clock_tsc) startup_ns_per_tick = 1.0;
  anchor_mono_ns = now_ns(CLOCK_MONOTONIC);
  anchor_tick = pt_ticks();
  anchor_real_ns = (int64_t)now_ns(CLOCK_REALTIME);
}

void pt_clock_init(void) { pthread_once(&once, init_once); }

void pt_clock_calibration(pt_clock_cal* cal) {
  pt_clock_init();
  cal->tick0 = anchor_tick;
  cal->real_ns0 = anchor_real_ns;
  cal->ns_per_tick = startup_ns_per_tick;
  if (!pt_clock_tsc) return;
  uint64_t mono = now_ns(CLOCK_MONOTONIC), tick = pt_ticks();
  /* After a second, the anchor-to-now baseline beats the 2 ms start-up one. */
  if (mono - anchor_mono_ns >= 1000000000ull && tick > anchor_tick)
    cal->ns_per_tick = (double)(mono - anchor_mono_ns) / (double)(tick - anchor_tick);
}

int64_t pt_ticks_to_unix_ns(const pt_clock_cal* cal, uint64_t ticks) {
  if (ticks == 0) return 0;
  double delta_ns = ((double)ticks - (double)cal->tick0) * cal->ns_per_tick;
  return cal->real_ns0 + (int64_t)delta_ns;
}

int64_t pt_ticks_to_unix_ms(const pt_clock_cal* cal, uint64_t ticks) {
  return pt_ticks_to_unix_ns(cal, ticks) / 1000000;
}

const char* pt_clock_source(void) {
  pt_clock_init();
  return pt_clock_tsc ? "tsc" : "monotonic";
}

double pt_ticks_to_ms(const pt_clock_cal* cal, uint64_t a, uint64_t b) {
  return ((double)b - (double)a) * cal->ns_per_tick / 1e6;
}

uint64_t pt_ms_to_ticks(uint32_t ms) {
  pt_clock_init();
  return (uint64_t)((double)ms * 1e6 / startup_ns_per_tick);
}
