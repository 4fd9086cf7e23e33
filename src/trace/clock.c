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
 * Nothing waits at start-up (the first init used to spin 2 ms measuring the
 * rate, far longer on a loaded machine). A constructor takes an anchor — the
 * counter, CLOCK_MONOTONIC and CLOCK_REALTIME together — when the library is
 * loaded, and the rate is measured from that anchor to now whenever it is
 * needed: at a dump the baseline is the process's age, good to far below the
 * millisecond legacy prints and the nanoseconds of JSON ticks near the
 * anchor-to-now span. A dump in the first 2 ms after loading sleeps (never
 * spins) until the baseline is 2 ms long. Where the CPU states its rate
 * (aarch64's CNTFRQ_EL0; x86 CPUID leaf 0x15 on CPUs that fill it in), that
 * rate is used while the baseline is under a second and agrees with it within
 * 5 %: it is exact, and a short measurement on a busy machine is not;
 * firmware that programs a wrong value is off by far more.
 *
 * Thresholds (pt_ms_to_ticks: the stall time, the age after which a
 * never-registered slot is reclaimed) are set without waiting: from the
 * stated rate, else the baseline so far once it is 100 µs long, else from an
 * 8 GHz counter — faster than any shipped TSC, so a threshold taken in the
 * first 100 µs after loading on such a CPU is longer than asked, never
 * shorter. PROXYTRACE_CLOCK=monotonic forces the portable source; a bad value
 * is reported by the plugin's configuration (src/plugin/config.c) and the
 * default applies here.
 *
 * Emulated time (pt_clock_emulate) replaces every source: an emulator that
 * drives the plugin (proxytrace sim) hands it a clock it alone advances, in
 * nanoseconds, and an epoch; ticks are then that clock's value, one tick a
 * nanosecond, and nothing here reads the machine's clocks. The counter's
 * path in pt_ticks() is untouched: the emulated clock is read only where
 * the counter is off, which an emulator sets before the first trace.
 */
#include "trace/clock.h"

#include <pthread.h>
#include <stdatomic.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__has_include)
#if __has_include(<sys/platform/x86.h>) /* glibc 2.33+ */
#include <sys/platform/x86.h>
#define PT_GLIBC_X86_FEATURES 1
#endif
#endif
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pt_clock_counter;
const _Atomic uint64_t* pt_clock_emu;
static int64_t emu_epoch_ns;       /* Unix-epoch ns at emulated time 0 */
static _Atomic int clock_locked;   /* traces that exist: the source is fixed */
static int counter_chosen;         /* pt_clock_counter as init_once chose it */

static pthread_once_t once = PTHREAD_ONCE_INIT;
/* The anchor: the counter (raw, whatever the source), CLOCK_MONOTONIC and
 * CLOCK_REALTIME read together, at load time or at the first init. */
static uint64_t anchor_counter;
static uint64_t anchor_mono_ns;
static int64_t anchor_real_ns;
static _Atomic int anchored;
static uint64_t anchor_tick;         /* anchor_counter or anchor_mono_ns, by source */
static pthread_once_t stated_once = PTHREAD_ONCE_INIT;
static double nominal_ns_per_tick;   /* the CPU's stated rate; 0 if none (stated_once) */
static const char* why_monotonic = ""; /* why the counter is not used */

#define SETTLE_NS 2000000ull    /* shortest baseline a dump converts with */
#define PROVISIONAL_NS 100000ull /* shortest baseline a threshold is set from */
#define FASTEST_NS_PER_TICK 0.125 /* an 8 GHz counter */

static uint64_t now_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t raw_counter(void) {
#if PT_CLOCK_HAS_COUNTER
  return pt_counter_read();
#else
  return 0;
#endif
}

static void take_anchor(void) {
  (void)raw_counter(); /* first reads fault pages in (or, under an emulator, */
  (void)now_ns(CLOCK_MONOTONIC); /* translate code): not in the anchor */
  anchor_mono_ns = now_ns(CLOCK_MONOTONIC);
  anchor_counter = raw_counter();
  anchor_real_ns = (int64_t)now_ns(CLOCK_REALTIME);
  atomic_store(&anchored, 1);
}

/* At load: the baseline then starts long before the first communicator. */
__attribute__((constructor)) static void anchor_at_load(void) { take_anchor(); }

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

/* Whether the CPU counter can be used here. x86: CPUID's invariant-TSC bit
 * (leaf 0x80000007 EDX bit 8, from which Linux sets constant_tsc and
 * nonstop_tsc), read from glibc's copy of CPUID (taken when the process
 * started) where glibc offers it: a CPUID instruction in a virtual machine
 * traps to the hypervisor (about 10 µs each here), and the first init must
 * not pay for several. */
static int counter_usable(void) {
#if defined(__x86_64__) || defined(__i386__)
#ifdef PT_GLIBC_X86_FEATURES
  const int ok = CPU_FEATURE_PRESENT(INVARIANT_TSC);
#else
  unsigned a, b, c, d;
  const int ok = __get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u &&
                 __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8));
#endif
  if (!ok) why_monotonic = "this CPU's TSC is not invariant";
  return ok;
#elif defined(__aarch64__)
  return 1;
#else
  return 0;
#endif
}

/* The counter's rate as the CPU states it, in Hz, or 0: x86 CPUID leaf
 * 0x15 (TSC/crystal ratio times the crystal's Hz) where the CPU fills it
 * in, aarch64 CNTFRQ_EL0. Asked once, when a dump or a threshold first
 * needs it, not at init. */
static void stated_rate(void) {
  uint64_t hz = 0;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if ((unsigned)__get_cpuid_max(0, NULL) >= 0x15u && __get_cpuid(0x15u, &a, &b, &c, &d) && a && b && c)
    hz = (uint64_t)c * b / a;
#elif defined(__aarch64__)
  uint64_t f;
  __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
  hz = f & 0xffffffffu; /* bits 63:32 are RES0 */
#endif
  nominal_ns_per_tick = pt_clock_counter && hz ? 1e9 / (double)hz : 0.0;
}

static void init_once(void) {
  if (!atomic_load(&anchored)) take_anchor();
  pt_clock_choice want = pt_clock_parse(getenv("PROXYTRACE_CLOCK"));
  if (want == PT_CLOCK_MONOTONIC) why_monotonic = "PROXYTRACE_CLOCK=monotonic";
  else if (!PT_CLOCK_HAS_COUNTER) why_monotonic = "no CPU counter is read on " PT_CLOCK_ARCH;
  else pt_clock_counter = counter_usable();
  counter_chosen = pt_clock_counter;
  anchor_tick = pt_clock_counter ? anchor_counter : anchor_mono_ns;
}

void pt_clock_init(void) { pthread_once(&once, init_once); }

void pt_clock_lock(void) { atomic_fetch_add(&clock_locked, 1); }
/* The last trace gone: emulated time ends with the emulator's job (its
 * clock may be gone next), and the source chosen at init applies again. */
void pt_clock_unlock(void) {
  if (atomic_fetch_sub(&clock_locked, 1) == 1 && pt_clock_emu) {
    pt_clock_emu = NULL;
    pt_clock_counter = counter_chosen;
  }
}

int pt_clock_emulate(const _Atomic uint64_t* now, int64_t epoch_ns) {
  pt_clock_init();
  if (atomic_load(&clock_locked) > 0) return -1;
  emu_epoch_ns = epoch_ns;
  pt_clock_emu = now;
  pt_clock_counter = now ? 0 : counter_chosen;
  return 0;
}

int64_t pt_clock_realtime_ns(void) {
  if (pt_clock_emu) return emu_epoch_ns + (int64_t)atomic_load(pt_clock_emu);
  return (int64_t)now_ns(CLOCK_REALTIME);
}

uint64_t pt_clock_monotonic_ms(void) {
  if (pt_clock_emu) return atomic_load(pt_clock_emu) / 1000000u;
  return now_ns(CLOCK_MONOTONIC) / 1000000u;
}

const char* pt_clock_source(void) {
  pt_clock_init();
  if (pt_clock_emu) return "emulated";
#if PT_CLOCK_HAS_COUNTER
  if (pt_clock_counter) return PT_CLOCK_COUNTER_NAME;
#endif
  return "monotonic";
}

/* The rate from the anchor to now, or 0 while the baseline is shorter than
 * min_ns (or the counter has not moved). *how says where it came from. */
static double rate_now(uint64_t min_ns, const char** how) {
  if (!pt_clock_counter) {
    *how = "";
    return 1.0;
  }
  const uint64_t mono = now_ns(CLOCK_MONOTONIC), tick = pt_ticks();
  const uint64_t span = mono - anchor_mono_ns;
  const double measured =
      span >= min_ns && tick > anchor_tick ? (double)span / (double)(tick - anchor_tick) : 0.0;
  pthread_once(&stated_once, stated_rate);
  const double nominal = nominal_ns_per_tick;
  if (nominal > 0.0 && span < 1000000000ull &&
      (measured == 0.0 || (measured > nominal * 0.95 && measured < nominal * 1.05))) {
    *how = "stated by the CPU";
    return nominal;
  }
  *how = nominal > 0.0 ? "measured; the CPU's stated rate disagrees" : "measured";
  return measured;
}

int pt_clock_describe(char* buf, size_t n) {
  pt_clock_init();
  if (pt_clock_emu) return snprintf(buf, n, "emulated (the emulator's clock, 1 ns a tick)");
  if (!pt_clock_counter)
    return snprintf(buf, n, "monotonic (CLOCK_MONOTONIC; %s)", why_monotonic);
  const char* how;
  const double r = rate_now(PROVISIONAL_NS, &how);
  if (r > 0.0) return snprintf(buf, n, "%s (%.3f MHz, %s)", pt_clock_source(), 1e3 / r, how);
  return snprintf(buf, n, "%s (rate measured against CLOCK_MONOTONIC from load time on)",
                  pt_clock_source());
}

void pt_clock_calibration(pt_clock_cal* cal) {
  pt_clock_init();
  if (pt_clock_emu) {
    cal->tick0 = 0;
    cal->real_ns0 = emu_epoch_ns;
    cal->ns_per_tick = 1.0;
    return;
  }
  cal->tick0 = anchor_tick;
  cal->real_ns0 = anchor_real_ns;
  const char* how;
  double r = rate_now(SETTLE_NS, &how);
  if (r == 0.0) {
    /* Within 2 ms of loading: sleep out the rest of the baseline. */
    const uint64_t span = now_ns(CLOCK_MONOTONIC) - anchor_mono_ns;
    if (span < SETTLE_NS) {
      struct timespec d = {0, (long)(SETTLE_NS - span)};
      while (nanosleep(&d, &d) != 0) {
      }
    }
    r = rate_now(SETTLE_NS, &how);
  }
  cal->ns_per_tick = r > 0.0 ? r : 1.0;
}

double pt_ticks_to_ms(const pt_clock_cal* cal, uint64_t a, uint64_t b) {
  return ((double)b - (double)a) * cal->ns_per_tick / 1e6;
}

uint64_t pt_ms_to_ticks(uint32_t ms) {
  pt_clock_init();
  if (pt_clock_emu) return (uint64_t)ms * 1000000u;
  const char* how;
  double r = rate_now(PROVISIONAL_NS, &how);
  if (r == 0.0) r = FASTEST_NS_PER_TICK;
  return (uint64_t)((double)ms * 1e6 / r);
}
