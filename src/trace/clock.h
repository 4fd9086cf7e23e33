/*
 * clock.h — the recording clock. The hot path stores raw ticks (the TSC on
 * x86 when it is invariant, CLOCK_MONOTONIC nanoseconds elsewhere) and the
 * dump converts them to Unix-epoch milliseconds, the unit legacy ProxyTrace
 * prints (spec/rccl-proxytrace.md §3.7, bug 16: we use CLOCK_REALTIME
 * explicitly for the epoch). A tick value of 0 means "never set".
 */
#ifndef PT_TRACE_CLOCK_H
#define PT_TRACE_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* Set once by pt_clock_init(), before any recording. Hidden: read directly,
 * not through the GOT, on the hot path. */
extern int pt_clock_tsc __attribute__((visibility("hidden")));

static inline uint64_t pt_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_expect(pt_clock_tsc, 1)) return __rdtsc();
#endif
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Conversion from ticks to wall-clock time, valid for one dump. */
typedef struct {
  uint64_t tick0;   /* anchor taken at pt_clock_init() */
  int64_t real_ns0; /* CLOCK_REALTIME at the anchor */
  double ns_per_tick;
} pt_clock_cal;

/* Idempotent and thread-safe; chooses the tick source and anchors it. */
void pt_clock_init(void);
/* Best calibration available now (refined from the anchor as time passes). */
void pt_clock_calibration(pt_clock_cal* cal);
/* Unix-epoch nanoseconds of a tick value; 0 stays 0. */
int64_t pt_ticks_to_unix_ns(const pt_clock_cal* cal, uint64_t ticks);
/* Unix-epoch milliseconds (truncated) of a tick value; 0 stays 0. */
int64_t pt_ticks_to_unix_ms(const pt_clock_cal* cal, uint64_t ticks);
/* The tick source in use: "tsc" or "monotonic". */
const char* pt_clock_source(void);
/* Milliseconds between two tick values (b - a), for ages and durations. */
double pt_ticks_to_ms(const pt_clock_cal* cal, uint64_t a, uint64_t b);
/* Ticks in `ms` milliseconds, from the start-up calibration. */
uint64_t pt_ms_to_ticks(uint32_t ms);

#endif
