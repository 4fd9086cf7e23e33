/*
 * clock.c — chooses the tick source once per process and converts ticks to
 * wall-clock time at dump time.
 *
 * x86: the TSC is used only when the CPU says it is invariant (constant_tsc
 * and nonstop_tsc), because then one rate holds for every core and every
 * sleep state. aarch64: the generic timer's virtual counter always runs at
 * one rate on every core (CNTFRQ_EL0, which firmware programs); Linux lets
 * EL0 read it, and on CPUs with a timer erratum it traps the read and
 * emulates it, which is still correct and no slower than the system call
 * CLOCK_MONOTONIC then needs (those kernels disable the vDSO clock).
 *
 * The rate is measured against CLOCK_MONOTONIC for 2 ms at start-up (on
 * aarch64 CNTFRQ_EL0 is used when the measurement agrees with it within 5%:
 * it is exact, and a 2 ms measurement on a busy machine is not; firmware that
 * programs a wrong value is off by far more)
 * and refined at every dump from the start-up anchor, so a long run converts
 * with a long baseline. PROXYTRACE_CLOCK=monotonic forces the portable
 * source; a bad value is reported by the plugin's configuration
 * (src/plugin/config.c) and the default applies here.
 */
#include "trace/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pt_clock_counter;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t anchor_tick;
static uint64_t anchor_mono_ns;
static int64_t anchor_real_ns;
static double startup_ns_per_tick = 1.0;
static const char* rate_source = "";  /* how startup_ns_per_tick was found */
static const char* why_monotonic = ""; /* why the counter is not used */

static uint64_t now_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

pt_clock_choice pt_clock_parse(const char* v) {
  if (!v || !*v) return PT_CLOCK_DEFAULT;
  if (!strcmp(v, "monotonic")) return PT_CLOCK_MONOTONIC;
#if PT_CLOCK_HAS_COUNTER
  if (!strcmp(v, PT_CLOCK_COUNTER_NAME)) return PT_CLOCK_COUNTER;
#endif
  return PT_CLOCK_BAD;
}

const char* pt_clock_accepted(void) {
#if PT_CLOCK_HAS_COUNTER
  return "'" PT_CLOCK_COUNTER_NAME "' or 'monotonic'";
#else
  return "'monotonic'";
#endif
}

const char* pt_clock_default(void) {
#if defined(__x86_64__) || defined(__i386__)
  return "the TSC where it is invariant, else CLOCK_MONOTONIC";
#elif defined(__aarch64__)
  return "the generic timer's counter";
#else
  return "CLOCK_MONOTONIC";
#endif
}

/* Whether the CPU counter can be used here; *hz is its nominal rate when the
 * CPU states one (0: measure it). */
static int counter_usable(uint64_t* hz) {
  *hz = 0;
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
  if (!ok) why_monotonic = "this CPU's TSC is not invariant";
  return ok;
#elif defined(__aarch64__)
  uint64_t f;
  __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
  *hz = f & 0xffffffffu; /* bits 63:32 are RES0 */
  return 1;
#else
  return 0;
#endif
}

/* ~2 ms against CLOCK_MONOTONIC: good to a few ppm of a tick rate, far
 * below the millisecond the dump prints. 0 if the counter did not move. */
static double measure_ns_per_tick(void) {
  (void)now_ns(CLOCK_MONOTONIC); /* first calls fault pages in (or, under an */
  (void)pt_ticks();              /* emulator, translate code): not in the span */
  uint64_t m0 = now_ns(CLOCK_MONOTONIC), t0 = pt_ticks(), m1, t1;
  do {
    m1 = now_ns(CLOCK_MONOTONIC);
    t1 = pt_ticks();
  } while (m1 - m0 < 2000000ull);
  return t1 > t0 ? (double)(m1 - m0) / (double)(t1 - t0) : 0.0;
}

static void init_once(void) {
  pt_clock_choice want = pt_clock_parse(getenv("PROXYTRACE_CLOCK"));
  uint64_t hz = 0;
  if (want == PT_CLOCK_MONOTONIC) why_monotonic = "PROXYTRACE_CLOCK=monotonic";
  else if (!PT_CLOCK_HAS_COUNTER) why_monotonic = "no CPU counter is read on " PT_CLOCK_ARCH;
  else pt_clock_counter = counter_usable(&hz);
  if (pt_clock_counter) {
    double measured = measure_ns_per_tick();
    double nominal = hz ? 1e9 / (double)hz : 0.0;
    if (measured <= 0.0) {
      pt_clock_counter = 0;
      why_monotonic = "the CPU counter did not advance";
    } else if (nominal > 0.0 && measured > nominal * 0.95 && measured < nominal * 1.05) {
      startup_ns_per_tick = nominal;
      rate_source = "cntfrq_el0";
    } else {
      startup_ns_per_tick = measured;
      rate_source = hz ? "measured; cntfrq_el0 disagrees" : "measured";
    }
  }
  if (!pt_clock_counter) startup_ns_per_tick = 1.0;
  anchor_mono_ns = now_ns(CLOCK_MONOTONIC);
  anchor_tick = pt_ticks();
  anchor_real_ns = (int64_t)now_ns(CLOCK_REALTIME);
}

void pt_clock_init(void) { pthread_once(&once, init_once); }

const char* pt_clock_source(void) {
  pt_clock_init();
#if PT_CLOCK_HAS_COUNTER
  if (pt_clock_counter) return PT_CLOCK_COUNTER_NAME;
#endif
  return "monotonic";
}

int pt_clock_describe(char* buf, size_t n) {
  pt_clock_init();
  if (!pt_clock_counter)
    return snprintf(buf, n, "monotonic (CLOCK_MONOTONIC; %s)", why_monotonic);
  return snprintf(buf, n, "%s (%.3f MHz, %s)", pt_clock_source(), 1e3 / startup_ns_per_tick,
                  rate_source);
}

void pt_clock_calibration(pt_clock_cal* cal) {
  pt_clock_init();
  cal->tick0 = anchor_tick;
  cal->real_ns0 = anchor_real_ns;
  cal->ns_per_tick = startup_ns_per_tick;
  if (!pt_clock_counter) return;
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

double pt_ticks_to_ms(const pt_clock_cal* cal, uint64_t a, uint64_t b) {
  return ((double)b - (double)a) * cal->ns_per_tick / 1e6;
}

uint64_t pt_ms_to_ticks(uint32_t ms) {
  pt_clock_init();
  return (uint64_t)((double)ms * 1e6 / startup_ns_per_tick);
}
