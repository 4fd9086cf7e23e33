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
 * and joined by the last finalize, by the library's destructor when the
 * process exits (or the library is unloaded) without one, and does not
 * exist in a fork child until that child creates a communicator.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin/plugin.h"
#include "trace/clock.h"

#define SERVICE_MS 20  /* metrics memory handed to the recording threads */
#define PREFAULT_MS 50 /* slab pages populated ahead of the recording threads */
#define CHECK_MIN_MS 5
#define CHECK_MAX_MS 250
#define BACKOFF_MAX_SHIFT 30

static pt_dump_settings settings;
static pthread_mutex_t thread_lock = PTHREAD_MUTEX_INITIALIZER; /* running, thread */
static int running;
static pthread_t thread;
static _Atomic int stop;
static _Atomic int prefault_asked; /* a new context's first pages (pt_dumper_prefault_soon) */

const pt_dump_settings* pt_dump_settings_get(void) { return &settings; }

const char* pt_trigger_name(pt_trigger t) {
  static const char* const names[] = {"stall", "signal", "periodic", "finalize", "hook", "api"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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

/* ---- the thread ---- */

static void* dumper_main(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "proxytrace dump");
  const int fd = pt_signal_wake_fd();
  const uint64_t stall_ticks = settings.stall_ms ? pt_ms_to_ticks(settings.stall_ms) : 0;
  uint32_t check_ms = settings.stall_ms / 20;
  if (check_ms < CHECK_MIN_MS) check_ms = CHECK_MIN_MS;
  if (check_ms > CHECK_MAX_MS) check_ms = CHECK_MAX_MS;
  uint64_t t = now_ms();
  uint64_t next_periodic = settings.interval_ms ? t + settings.interval_ms : UINT64_MAX;
  uint64_t next_check = settings.stall_ms ? t + check_ms : UINT64_MAX;
  uint64_t next_metrics = settings.metrics_ms ? t + settings.metrics_ms : UINT64_MAX;
  uint64_t next_service = settings.metrics_ms ? t + SERVICE_MS : UINT64_MAX;
  uint64_t next_prefault = t + PREFAULT_MS;
  while (!atomic_load(&stop)) {
    t = now_ms();
    uint64_t next = next_periodic < next_check ? next_periodic : next_check;
    if (next_metrics < next) next = next_metrics;
    if (next_service < next) next = next_service;
    if (next_prefault < next) next = next_prefault;
    int timeout = next == UINT64_MAX ? -1 : next <= t ? 0 : (int)(next - t > 60000 ? 60000 : next - t);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, fd >= 0 ? 1 : 0, timeout) > 0 && (p.revents & POLLIN)) {
      uint64_t v;
      ssize_t r = read(fd, &v, sizeof v);
      (void)r;
    }
    if (atomic_load(&stop)) break;
    if (pt_signal_take()) dump_round(PT_TRIG_SIGNAL, stall_ticks);
    t = now_ms();
    if (atomic_exchange(&prefault_asked, 0)) next_prefault = t;
    if (t >= next_periodic) {
      dump_round(PT_TRIG_PERIODIC, stall_ticks);
      next_periodic = now_ms() + settings.interval_ms;
    }
    if (t >= next_check) {
      check_stall(stall_ticks);
      next_check = now_ms() + check_ms;
    }
    if (t >= next_service) {
      pt_metrics_service_all();
      next_service = now_ms() + SERVICE_MS;
    }
    if (t >= next_prefault) {
      pt_ctx_for_each(prefault_one, NULL);
      next_prefault = now_ms() + PREFAULT_MS;
    }
    if (t >= next_metrics) {
      pt_ctx_for_each(write_metrics, NULL);
      next_metrics = now_ms() + settings.metrics_ms;
    }
  }
  return NULL;
}

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
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* inherited: the dumper takes no signal */
  atomic_store(&stop, 0);
  int rc = pthread_create(&thread, NULL, dumper_main, NULL);
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

static void stop_thread(int wait_ms) {
  if (!running) return;
  atomic_store(&stop, 1);
  wake();
  if (pthread_equal(pthread_self(), thread)) {
    pthread_detach(thread); /* the last finalize came from a logger the dumper called */
  } else if (wait_ms < 0) {
    pthread_join(thread, NULL);
  } else {
    /* At exit: a dumper stuck in the host's logger must not hang the exit. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += wait_ms / 1000;
    ts.tv_nsec += (long)(wait_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    if (pthread_timedjoin_np(thread, NULL, &ts) != 0) pthread_detach(thread);
  }
  running = 0;
}

int pt_dumper_prefault_soon(void) {
  pthread_mutex_lock(&thread_lock);
  const int r = running;
  pthread_mutex_unlock(&thread_lock);
  if (!r) return 0;
  atomic_store(&prefault_asked, 1);
  wake();
  return 1;
}

void pt_dumper_first(const pt_plugin_config* cfg, ncclDebugLogger_t log) {
  pthread_mutex_lock(&thread_lock);
  settings.stall_ms = cfg->stall_ms;
  settings.interval_ms = cfg->interval_ms;
  settings.dump_signal = cfg->dump_signal;
  memcpy(settings.dump_dir, cfg->dump_dir, sizeof settings.dump_dir);
  settings.metrics_ms = cfg->metrics_ms;
  memcpy(settings.metrics_dir, cfg->metrics_dir, sizeof settings.metrics_dir);
  if (cfg->dump_signal) pt_signal_install(cfg->dump_signal, log);
  if (!running && (cfg->stall_ms || cfg->interval_ms || cfg->dump_signal || cfg->metrics_ms)) start_thread(log);
  pthread_mutex_unlock(&thread_lock);
}

void pt_dumper_last(void) {
  pthread_mutex_lock(&thread_lock);
  stop_thread(-1);
  pt_signal_uninstall();
  pthread_mutex_unlock(&thread_lock);
}

void pt_dumper_after_fork_child(void) {
  /* Only the forking thread exists in the child; thread_lock is taken only
   * under context.c's lifecycle lock, which the fork handlers hold. */
  running = 0;
  pt_signal_reset_after_fork();
}

__attribute__((destructor)) static void dumper_at_unload(void) {
  pthread_mutex_lock(&thread_lock);
  stop_thread(2000);
  pt_signal_uninstall();
  pthread_mutex_unlock(&thread_lock);
}
