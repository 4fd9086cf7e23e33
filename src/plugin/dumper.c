/*
 * dumper.c — the dumper thread: one per process, started with the first
 * live communicator and joined at the last finalize, that dumps every live
 * communicator when a trigger fires:
 *
 *   stall     (PROXYTRACE_STALL_MS, default 10 s): a communicator has ops
 *             the host still progresses and none of them made progress —
 *             POSTED, RECEIVED, TRANSMITTED or DONE moving, or a new op
 *             registering — for that long. It reads what the proxy thread
 *             writes anyway (the trace's last-progress tick and its op
 *             counts), every stall/20 (5..250 ms). One dump per stall
 *             episode; while the same episode lasts it dumps again after
 *             2, 4, 8 … times the stall time (a job hung for an hour at the
 *             default writes 8 stall dumps); progress ends the episode.
 *             Every communicator with ops waiting when a stall dump is
 *             taken counts as dumped for its own episode, so ranks that
 *             stall a few milliseconds apart give one dump, not one each.
 *   signal    (PROXYTRACE_DUMP_SIGNAL): the handler (dump_signal.c) sets a
 *             flag and writes to the wake fd; signals that arrive while a
 *             dump runs make one more dump.
 *   periodic  (PROXYTRACE_DUMP_INTERVAL_MS).
 *   prefault  not a dump: every 50 ms, and right after a communicator is
 *             created, each live communicator's next slab pages are
 *             populated ahead of its proxy thread, whose first write to a
 *             fresh slot then takes no page fault (slab.h).
 *   metrics   (PROXYTRACE_METRICS_INTERVAL_MS): not a dump: every live
 *             communicator's step metrics files are rewritten
 *             (metrics_sink.c); and every 20 ms the recording threads get
 *             the metrics memory they asked for (src/trace/metrics.c), so
 *             the hot path never allocates.
 *
 * The thread blocks every signal, so the process's signals keep going to
 * the application's threads, and never touches the proxy threads: dumps
 * read the records under their seqlocks (src/trace/dump.c). It is stopped
 * by the last finalize, by the library's destructor when the process exits
 * (or the library is unloaded) without one, and does not exist in a fork
 * child until that child creates a communicator.
 *
 * Stopping waits for the dump in progress, which calls the host's logger:
 * foreign code that may be slow, never return, or create a communicator.
 * So the last finalize asks the thread to stop under the lifecycle lock but
 * waits for it after releasing that lock (pt_dumper_wait), and at most
 * PT_FINALIZE_WAIT_MS; past that the thread is let go (detached) and ends
 * its dump on its own. Until the stopped thread has ended — "draining" — a
 * first communicator does not start another (two would share the contexts'
 * stall state): its settings are kept, and whoever sees the thread end (the
 * waiting finalize, or the thread itself when let go) starts the next one.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format/format.h"
#include "plugin/plugin.h"
#include "proxytrace/emulator.h"
#include "trace/clock.h"

#define SERVICE_MS 20  /* metrics memory handed to the recording threads */
#define PREFAULT_MS 50 /* slab pages populated ahead of the recording threads */
#define CHECK_MIN_MS 5
#define CHECK_MAX_MS 250
#define BACKOFF_MAX_SHIFT 30
#define PT_FINALIZE_WAIT_MS 2000 /* the last finalize waits no longer for a dump */
#define PT_UNLOAD_WAIT_MS 2000   /* nor does the library's destructor */

static pt_dump_settings settings; /* changed only while no thread runs */
/* thread_lock guards everything below but gen. Lock order: context.c's
 * lifecycle lock, its registry lock, then this one. */
static pthread_mutex_t thread_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t thread_ended = PTHREAD_COND_INITIALIZER;
static int running;  /* a thread runs and was not asked to stop */
static int draining; /* a thread was asked to stop and has not ended */
static int ended;    /* ... it has (it is returning) */
static int let_go;   /* ... it is detached: it ends the drain itself */
static int wanted;   /* a first communicator came while draining: */
static pt_plugin_config wanted_cfg; /* its settings */
static pthread_t thread;
static _Atomic unsigned gen; /* a thread runs while gen is the one it was started with */
static _Atomic int prefault_asked; /* a new context's first pages (pt_dumper_prefault_soon) */

const pt_dump_settings* pt_dump_settings_get(void) { return &settings; }

const char* pt_trigger_name(pt_trigger t) {
#define NAME(i, name) [i] = name,
  static const char* const names[] = {PT_FORMAT_TRIGGERS(NAME)}; /* src/format/format.h */
#undef NAME
  _Static_assert(PT_TRIG_API + 1 == PT_FORMAT_TRIGGER_COUNT, "one list of triggers");
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* ---- triggers ---- */

typedef struct {
  pt_trigger trig;
  uint64_t round;
  uint64_t now, stall_ticks; /* stall rounds */
  int due;
} round_arg;

static void dump_one(pt_ctx* c, void* arg) {
  round_arg* a = arg;
  pt_sink_dump(c, a->trig, a->round, NULL, NULL);
  if (a->trig != PT_TRIG_STALL) return;
  pt_stall_state* s = &c->stall;
  if (pt_trace_waiting_ops(c->trace) == 0) return;
  const uint64_t last = pt_trace_last_progress(c->trace);
  if (s->mark == last) {
    s->dumps++; /* the same episode, dumped again after its back-off */
  } else {
    s->mark = last;
    s->dumps = 1;
  }
  const unsigned shift = s->dumps < BACKOFF_MAX_SHIFT ? s->dumps : BACKOFF_MAX_SHIFT;
  s->next = a->now + (a->stall_ticks << shift);
}

static void dump_round(pt_trigger trig, uint64_t stall_ticks) {
  round_arg a = {.trig = trig, .round = pt_dump_next_round(), .now = pt_ticks(), .stall_ticks = stall_ticks};
  pt_ctx_for_each(dump_one, &a);
}

static void check_one(pt_ctx* c, void* arg) {
  round_arg* a = arg;
  pt_diag_report(c);
  pt_stall_state* s = &c->stall;
  if (pt_trace_waiting_ops(c->trace) == 0) {
    s->mark = 0; /* nothing waits: no episode */
    s->dumps = 0;
    return;
  }
  const uint64_t last = pt_trace_last_progress(c->trace);
  if (s->mark && s->mark != last) {
    s->mark = 0; /* progress since the episode's dump: it is over */
    s->dumps = 0;
  }
  if (last >= a->now || a->now - last < a->stall_ticks) return;
  if (!s->mark || a->now >= s->next) a->due = 1;
}

static void prefault_one(pt_ctx* c, void* arg) {
  (void)arg;
  pt_trace_prefault(c->trace);
}

static void write_metrics(pt_ctx* c, void* arg) {
  (void)arg;
  pt_metrics_write(c, 0);
}

static void check_stall(uint64_t stall_ticks) {
  round_arg a = {.now = pt_ticks(), .stall_ticks = stall_ticks};
  pt_ctx_for_each(check_one, &a);
  if (a.due) dump_round(PT_TRIG_STALL, stall_ticks);
}

/* ---- the timers, shared by the thread and the emulator ---- */

typedef struct {
  uint64_t stall_ticks;
  uint32_t check_ms;
  uint64_t next_periodic, next_check, next_metrics, next_service, next_prefault; /* ms */
} timers;

static void timers_start(timers* tm, uint64_t t) {
  tm->stall_ticks = settings.stall_ms ? pt_ms_to_ticks(settings.stall_ms) : 0;
  tm->check_ms = settings.stall_ms / 20;
  if (tm->check_ms < CHECK_MIN_MS) tm->check_ms = CHECK_MIN_MS;
  if (tm->check_ms > CHECK_MAX_MS) tm->check_ms = CHECK_MAX_MS;
  tm->next_periodic = settings.interval_ms ? t + settings.interval_ms : UINT64_MAX;
  tm->next_check = settings.stall_ms ? t + tm->check_ms : UINT64_MAX;
  tm->next_metrics = settings.metrics_ms ? t + settings.metrics_ms : UINT64_MAX;
  tm->next_service = settings.metrics_ms ? t + SERVICE_MS : UINT64_MAX;
  tm->next_prefault = t + PREFAULT_MS;
}

static uint64_t timers_next(const timers* tm) {
  uint64_t next = tm->next_periodic < tm->next_check ? tm->next_periodic : tm->next_check;
  if (tm->next_metrics < next) next = tm->next_metrics;
  if (tm->next_service < next) next = tm->next_service;
  if (tm->next_prefault < next) next = tm->next_prefault;
  return next;
}

/* Runs a signal's dump and every timer due; returns when the next is due. */
static uint64_t timers_run(timers* tm) {
  if (pt_signal_take()) dump_round(PT_TRIG_SIGNAL, tm->stall_ticks);
  uint64_t t = pt_clock_monotonic_ms();
  if (atomic_exchange(&prefault_asked, 0)) tm->next_prefault = t;
  if (t >= tm->next_periodic) {
    dump_round(PT_TRIG_PERIODIC, tm->stall_ticks);
    tm->next_periodic = pt_clock_monotonic_ms() + settings.interval_ms;
  }
  if (t >= tm->next_check) {
    check_stall(tm->stall_ticks);
    tm->next_check = pt_clock_monotonic_ms() + tm->check_ms;
  }
  if (t >= tm->next_service) {
    pt_metrics_service_all();
    tm->next_service = pt_clock_monotonic_ms() + SERVICE_MS;
  }
  if (t >= tm->next_prefault) {
    pt_ctx_for_each(prefault_one, NULL);
    tm->next_prefault = pt_clock_monotonic_ms() + PREFAULT_MS;
  }
  if (t >= tm->next_metrics) {
    pt_ctx_for_each(write_metrics, NULL);
    tm->next_metrics = pt_clock_monotonic_ms() + settings.metrics_ms;
  }
  return timers_next(tm);
}

/* ---- the thread ---- */

static void end_drain(void);

static void* dumper_main(void* arg) {
  const unsigned mine = (unsigned)(uintptr_t)arg;
  pthread_setname_np(pthread_self(), "proxytrace dump");
  const int fd = pt_signal_wake_fd();
  timers tm;
  timers_start(&tm, pt_clock_monotonic_ms());
  uint64_t next = timers_next(&tm);
  while (atomic_load(&gen) == mine) {
    const uint64_t t = pt_clock_monotonic_ms();
    int timeout = next == UINT64_MAX ? -1 : next <= t ? 0 : (int)(next - t > 60000 ? 60000 : next - t);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, fd >= 0 ? 1 : 0, timeout) > 0 && (p.revents & POLLIN)) {
      uint64_t v;
      ssize_t r = read(fd, &v, sizeof v);
      (void)r;
    }
    if (atomic_load(&gen) != mine) break;
    next = timers_run(&tm);
  }
  pthread_mutex_lock(&thread_lock);
  ended = 1;
  pthread_cond_broadcast(&thread_ended);
  if (let_go) end_drain(); /* nobody joins this thread: it hands over itself */
  pthread_mutex_unlock(&thread_lock);
  return NULL;
}

/* ---- emulated time (include/proxytrace/emulator.h) ----
 *
 * Under the emulator's clock (pt_clock_emu set: attach() succeeded, and no
 * thread is ever started) its one thread runs the timers in tick(), while
 * no other thread calls the plugin: emu_running stands for the thread, and
 * the same settings, triggers and lifecycle apply (a first communicator
 * starts the timers, the last stops them). */

static int emu_running; /* the timers run (between a first and a last communicator) */
static timers emu_timers;

static int emu_attach(const _Atomic uint64_t* now, int64_t epoch_ns) {
  pthread_mutex_lock(&thread_lock);
  const int rc = running || draining || emu_running ? -1 : pt_clock_emulate(now, epoch_ns);
  pthread_mutex_unlock(&thread_lock);
  return rc;
}

static uint64_t emu_tick(void) {
  pthread_mutex_lock(&thread_lock);
  const int on = emu_running;
  pthread_mutex_unlock(&thread_lock);
  if (!on) return UINT64_MAX;
  /* Outside the lock, as the thread runs them: a dump calls the host's
   * logger, which may create or destroy a communicator. */
  const uint64_t next = timers_run(&emu_timers);
  return next == UINT64_MAX || next > UINT64_MAX / 1000000u ? UINT64_MAX : next * 1000000u;
}

PT_EXPORT const proxytraceEmulator_v2_t proxytraceEmulator_v2 = {
    .name = "proxytrace",
    .attach = emu_attach,
    .tick = emu_tick,
    .process = pt_sink_name_thread_process,
};

/* The same table for an emulator that knows v1 only: no host names. */
PT_EXPORT const proxytraceEmulator_v1_t proxytraceEmulator_v1 = {
    .name = "proxytrace",
    .attach = emu_attach,
    .tick = emu_tick,
};

/* Wakes the thread from its poll. */
static void wake(void) {
  int fd = pt_signal_wake_fd();
  if (fd >= 0) {
    const uint64_t one = 1;
    ssize_t w = write(fd, &one, sizeof one);
    (void)w;
  }
}

static void start_thread(ncclDebugLogger_t log) {
  if (pt_clock_emu) {
    emu_running = 1;
    timers_start(&emu_timers, pt_clock_monotonic_ms());
    return;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* inherited: the dumper takes no signal */
  const unsigned mine = atomic_load(&gen);
  int rc = pthread_create(&thread, NULL, dumper_main, (void*)(uintptr_t)mine);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc == 0) {
    running = 1;
    return;
  }
  PT_LOG_WARN(log,
              "proxytrace: cannot start the dumper thread (%s): no stall, signal or periodic "
              "dumps; the dump hook and finalize still dump",
              strerror(rc));
}

/* Asks the running thread to stop (thread_lock held): it is draining. On
 * the thread itself (the last finalize came from a logger it called) it is
 * let go at once. Returns whether there is a thread to wait for. */
static int stop_thread(void) {
  emu_running = 0;
  if (!running) return 0;
  running = 0;
  atomic_fetch_add(&gen, 1);
  wake();
  draining = 1;
  ended = 0;
  let_go = 0;
  if (!pthread_equal(pthread_self(), thread)) return 1;
  pthread_detach(thread);
  let_go = 1;
  return 0;
}

int pt_dumper_prefault_soon(void) {
  pthread_mutex_lock(&thread_lock);
  const int r = running || emu_running;
  pthread_mutex_unlock(&thread_lock);
  if (!r) return 0;
  atomic_store(&prefault_asked, 1);
  wake();
  return 1;
}

/* Settings of a first communicator; the thread if a trigger needs it
 * (thread_lock held, no thread running or draining). */
static void apply(const pt_plugin_config* cfg, ncclDebugLogger_t log) {
  settings.stall_ms = cfg->stall_ms;
  settings.interval_ms = cfg->interval_ms;
  settings.dump_signal = cfg->dump_signal;
  memcpy(settings.dump_dir, cfg->dump_dir, sizeof settings.dump_dir);
  settings.dump_max_bytes = cfg->dump_max_bytes;
  settings.metrics_ms = cfg->metrics_ms;
  memcpy(settings.metrics_dir, cfg->metrics_dir, sizeof settings.metrics_dir);
  if (cfg->dump_signal) pt_signal_install(cfg->dump_signal, log);
  if (cfg->stall_ms || cfg->interval_ms || cfg->dump_signal || cfg->metrics_ms) start_thread(log);
}

/* The draining thread has ended (thread_lock held): a first communicator
 * that came meanwhile gets its thread now. */
static void end_drain(void) {
  draining = ended = let_go = 0;
  if (!wanted) return;
  wanted = 0;
  apply(&wanted_cfg, NULL);
}

/* Waits up to `ms` for the draining thread (thread_lock held); joins it if
 * it ended, else lets it go. A thread let go already ends the drain itself. */
static void wait_drained(int ms) {
  if (!draining || pthread_equal(pthread_self(), thread)) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  while (draining && !ended && pthread_cond_timedwait(&thread_ended, &thread_lock, &ts) == 0) {
  }
  if (!draining || let_go) return;
  if (ended) {
    pthread_join(thread, NULL); /* past its last use of the lock: at once */
    end_drain();
  } else {
    pthread_detach(thread); /* still inside the host's logger */
    let_go = 1;
  }
}

void pt_dumper_first(const pt_plugin_config* cfg, ncclDebugLogger_t log) {
  pthread_mutex_lock(&thread_lock);
  if (draining) {
    wanted = 1;
    wanted_cfg = *cfg;
  } else if (!running) {
    apply(cfg, log);
  }
  pthread_mutex_unlock(&thread_lock);
}

int pt_dumper_last(void) {
  pthread_mutex_lock(&thread_lock);
  wanted = 0;
  const int wait = stop_thread();
  pt_signal_uninstall();
  pthread_mutex_unlock(&thread_lock);
  return wait;
}

void pt_dumper_wait(void) {
  pthread_mutex_lock(&thread_lock);
  wait_drained(PT_FINALIZE_WAIT_MS);
  pthread_mutex_unlock(&thread_lock);
}

void pt_dumper_before_fork(void) { pthread_mutex_lock(&thread_lock); }
void pt_dumper_after_fork_parent(void) { pthread_mutex_unlock(&thread_lock); }

void pt_dumper_after_fork_child(void) {
  /* Only the forking thread exists in the child; no thread waits there. */
  running = draining = ended = let_go = wanted = emu_running = 0;
  pthread_cond_init(&thread_ended, NULL);
  pt_signal_reset_after_fork();
  pthread_mutex_unlock(&thread_lock);
}

__attribute__((destructor)) static void dumper_at_unload(void) {
  pthread_mutex_lock(&thread_lock);
  wanted = 0; /* the process, or the library, is going: no next thread */
  stop_thread();
  /* At exit: a dumper stuck in the host's logger must not hang the exit. */
  wait_drained(PT_UNLOAD_WAIT_MS);
  pt_signal_uninstall();
  pthread_mutex_unlock(&thread_lock);
}
