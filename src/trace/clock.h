/*
 * clock.h — the recording clock. The hot path stores raw ticks of the CPU's
 * own counter where there is a usable one — the TSC on x86 when it is
 * invariant, the generic timer's virtual counter (cntvct_el0) on aarch64 —
 * and CLOCK_MONOTONIC nanoseconds elsewhere or when asked. The dump converts
 * ticks to Unix-epoch milliseconds, the unit legacy ProxyTrace prints, with
 * CLOCK_REALTIME taken explicitly for the epoch. A tick value of 0 means
 * "never set".
 *
 * PROXYTRACE_CLOCK names the source per architecture: x86 `tsc` or
 * `monotonic`, aarch64 `counter` or `monotonic`, any other machine only
 * `monotonic`. pt_clock_parse() is the one place that knows the names.
 */
#ifndef PT_TRACE_CLOCK_H
#define PT_TRACE_CLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#define PT_CLOCK_HAS_COUNTER 1
#define PT_CLOCK_COUNTER_NAME "tsc"
#define PT_CLOCK_ARCH "x86"
static inline uint64_t pt_counter_read(void) { return __rdtsc(); }
#elif defined(__aarch64__)
#define PT_CLOCK_HAS_COUNTER 1
#define PT_CLOCK_COUNTER_NAME "counter"
#define PT_CLOCK_ARCH "aarch64"
/* The Arm architecture lets a read of CNTVCT_EL0 execute speculatively and
 * out of order with the instructions around it (Arm ARM DDI 0487, "The
 * Generic Timer in AArch64 state": an ISB orders the read after the
 * instructions before it). Without it a timestamp can be taken before the
 * work it is meant to follow. The ISB costs a pipeline refill; Linux's vDSO
 * pays the same (arch/arm64/include/asm/arch_timer.h,
 * __arch_counter_get_cntvct). */
static inline uint64_t pt_counter_read(void) {
  uint64_t v;
  __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
  return v;
}
#else
#define PT_CLOCK_HAS_COUNTER 0
#define PT_CLOCK_COUNTER_NAME NULL
#define PT_CLOCK_ARCH "this architecture"
#endif

/* Set once by pt_clock_init(), before any recording: 1 when ticks come from
 * the CPU counter. Hidden: read directly, not through the GOT, on the hot
 * path. */
extern int pt_clock_counter __attribute__((visibility("hidden")));
/* Emulated time (pt_clock_emulate): the emulator's clock, in nanoseconds,
 * which it alone advances; NULL otherwise. Only read where the counter is
 * off, so the counter's path pays nothing for it. */
extern const _Atomic uint64_t* pt_clock_emu __attribute__((visibility("hidden")));

static inline uint64_t pt_ticks(void) {
#if PT_CLOCK_HAS_COUNTER
  if (__builtin_expect(pt_clock_counter, 1)) return pt_counter_read();
#endif
  if (pt_clock_emu) return atomic_load_explicit(pt_clock_emu, memory_order_relaxed);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A PROXYTRACE_CLOCK value. */
typedef enum {
  PT_CLOCK_DEFAULT = 0, /* unset or empty: the counter where usable */
  PT_CLOCK_COUNTER,     /* this machine's counter name (tsc / counter) */
  PT_CLOCK_MONOTONIC,   /* "monotonic" */
  PT_CLOCK_BAD          /* anything else, including the other machine's name */
} pt_clock_choice;

pt_clock_choice pt_clock_parse(const char* value);
/* "'tsc' or 'monotonic'" — the values this build accepts, for messages. */
const char* pt_clock_accepted(void);
/* What applies when PROXYTRACE_CLOCK is unset or bad, in words. */
const char* pt_clock_default(void);

/* Conversion from ticks to wall-clock time, valid for one dump. */
typedef struct {
  uint64_t tick0;   /* anchor taken when the library was loaded */
  int64_t real_ns0; /* CLOCK_REALTIME at the anchor */
  double ns_per_tick;
} pt_clock_cal;

/* Idempotent and thread-safe; chooses the tick source (from
 * PROXYTRACE_CLOCK and the CPU). Measures nothing: it takes microseconds. */
void pt_clock_init(void);
/* Emulated time: from now on every tick is the value at `now_ns` (the
 * emulator's clock, nanoseconds; it alone advances it), and wall-clock time
 * is epoch_ns plus it, until the last trace is destroyed (NULL: at once).
 * For an emulator driving the plugin (include/proxytrace/emulator.h), while
 * no trace exists; 0 on success, -1 while one does (its ticks came from the
 * source in use). */
int pt_clock_emulate(const _Atomic uint64_t* now_ns, int64_t epoch_ns);
/* A trace is created / destroyed: while one exists the source is fixed. */
void pt_clock_lock(void);
void pt_clock_unlock(void);
/* Unix-epoch nanoseconds now (CLOCK_REALTIME, or the emulated epoch plus
 * the emulated clock), for the times a dump or metrics file states. */
int64_t pt_clock_realtime_ns(void);
/* Milliseconds of CLOCK_MONOTONIC (or of the emulated clock), for timers. */
uint64_t pt_clock_monotonic_ms(void);
/* The source in use: "tsc", "counter", "monotonic" or "emulated". */
const char* pt_clock_source(void);
/* One line for a log: the source, its rate, and why when it is not the one
 * asked for (e.g. "monotonic (PROXYTRACE_CLOCK=tsc, but this CPU's TSC is not
 * invariant)"). Returns the length written (snprintf's). */
int pt_clock_describe(char* buf, size_t n);
/* Best calibration available now: the rate over the load-time anchor to now.
 * Within 2 ms of loading it sleeps out the rest of those 2 ms (dumps only;
 * never on init or the hot path). */
void pt_clock_calibration(pt_clock_cal* cal);
/* Unix-epoch nanoseconds of a tick value; 0 stays 0. Inline: a dump
 * converts four or five timestamps per line. */
static inline int64_t pt_ticks_to_unix_ns(const pt_clock_cal* cal, uint64_t ticks) {
  if (ticks == 0) return 0;
  double delta_ns = ((double)ticks - (double)cal->tick0) * cal->ns_per_tick;
  return cal->real_ns0 + (int64_t)delta_ns;
}
/* Unix-epoch milliseconds (truncated) of a tick value; 0 stays 0. */
static inline int64_t pt_ticks_to_unix_ms(const pt_clock_cal* cal, uint64_t ticks) {
  return pt_ticks_to_unix_ns(cal, ticks) / 1000000;
}
/* Milliseconds between two tick values (b - a), for ages and durations. */
double pt_ticks_to_ms(const pt_clock_cal* cal, uint64_t a, uint64_t b);
/* Ticks in `ms` milliseconds, without waiting: from the CPU's stated rate,
 * else the anchor-to-now baseline once 100 µs long, else an upper bound (an
 * 8 GHz counter), so a threshold is never shorter than asked. */
uint64_t pt_ms_to_ticks(uint32_t ms);

#endif
