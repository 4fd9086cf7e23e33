/*
 * run.c — one emulated job from start to end, as the host runs it:
 *
 *   1. build the schedule and its ground truth (workload.c, truth.c);
 *   2. load the plugin once through the loader (plugin.c) — a failure ends
 *      the run with the loader's report, since there is nothing to drive;
 *   3. init every communicator on its own thread, all at once, as grouped
 *      or non-blocking inits do (spec nccl-profiler-abi.md §4.1);
 *   4. per rank, an application thread (app.c) and a proxy progress thread
 *      (proxy.c), until the job completes or hangs — and, with --hold,
 *      stays hung that long; --signal-after sends the dump signal meanwhile;
 *   5. destroy every communicator from this thread: RCCL's dump hook, then
 *      finalize, then unload (rccl-proxytrace.md §4.4).
 *
 * A rank that dies dumps nothing: its process would be gone. All ranks live
 * in this one process, so its communicator is finalized as soon as its
 * threads end — the only way to take it out of the sight of a plugin's
 * process-wide machinery (a watchdog, a signal handler) that a real dead
 * process would have taken with it. Under NVIDIA hosts a plugin that dumps
 * at finalize still dumps it then.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "proxytrace/emulator.h"

#define SIM_GUARD_SLOTS 8 /* foreign pointers per rank */

void* sim_foreign_ptr(sim_run* run, int r, int what) {
  sim_plugin* p = &run->plugin;
  size_t off = ((size_t)r * SIM_GUARD_SLOTS + (size_t)what) * 64 + 64;
  if (!p->guard || off >= p->guard_len) return NULL;
  return p->guard + off;
}

/* ---- the job's threads on its clock (sched.c) ---- */

int sim_wait(sim_run* run, sim_rank* rk) {
  if (!run->sched.on) {
    pthread_cond_wait(&rk->cv, &rk->mu);
    return 1;
  }
  if (sim_sched_quit(&run->sched)) return 0;
  pthread_mutex_unlock(&rk->mu);
  sim_sched_block(&run->sched, &rk->waiters);
  pthread_mutex_lock(&rk->mu);
  return !sim_sched_quit(&run->sched);
}

void sim_broadcast(sim_run* run, sim_rank* rk) {
  pthread_cond_broadcast(&rk->cv);
  sim_sched_wake(&run->sched, &rk->waiters);
}

/* A dead rank's communicator is finalized when its threads end, and what
 * its plugin wrote meanwhile is taken back (see the top of this file). */
static void destroy_dead(sim_run* run, sim_rank* rk) {
  sim_log_set_rank(-1);
  sim_files_mark mark;
  sim_files_mark_rank(run->files_dir, rk->rank, &mark);
  sim_comm_destroy(run, rk, 0);
  sim_files_undo(run->files_dir, rk->rank, rk->gone_mark ? rk->gone_mark : &mark);
  free(rk->gone_mark);
  rk->gone_mark = NULL;
  rk->destroyed = 1;
}

/* pt_sim_config.gone_at_ns: once the clock has passed it, the files of
 * the ranks whose process died then, as they were (before the plugin's
 * timers write more); destroy_dead takes back what came after. */
static void mark_gone(sim_run* run) {
  const pt_sim_config* c = run->cfg;
  if (!c->gone_at_ns || !c->rank_gone || sim_now_ns(run) < c->gone_at_ns) return;
  for (int r = 0; r < run->nranks; r++) {
    sim_rank* rk = &run->ranks[r];
    if (!c->rank_gone[r] || rk->gone_mark || rk->destroyed || !(rk->gone_mark = malloc(sizeof *rk->gone_mark)))
      continue;
    sim_files_mark_rank(run->files_dir, r, rk->gone_mark);
  }
}

void sim_rank_thread_ended(sim_run* run, sim_rank* rk) {
  if (!run->sched.on || !rk->dead || rk->destroyed) return;
  pthread_mutex_lock(&rk->mu);
  const int both = rk->app_done && rk->stop;
  pthread_mutex_unlock(&rk->mu);
  if (both) destroy_dead(run, rk);
  sim_log_set_rank(rk->rank);
}

/* ---- a hung job, held ---- */

int sim_hang_abort(sim_run* run, int stuck) {
  if (stuck <= run->cfg->hang_polls) return 0;
  if (run->cfg->hold_s <= 0) return 1;
  const int64_t t = (int64_t)sim_now_ns(run) + 1;
  int64_t first = 0;
  if (!atomic_compare_exchange_strong(&run->hang_ns, &first, t) &&
      (double)(t - first) >= run->cfg->hold_s * 1e9)
    return 1;
  /* the host's proxy spins; 64 emulated ones on a few cores must not */
  sim_sched_sleep_until(&run->sched, sim_now_ns(run) + 1000000u);
  return 0;
}

/* ---- --signal-after: the dump signal, and the host's own handler ---- */

/* PROXYTRACE_DUMP_SIGNAL as the plugin reads it: USR1, USR2 (SIG prefix
 * optional) or a number. */
static int dump_signal_of_env(void) {
  const char* v = getenv("PROXYTRACE_DUMP_SIGNAL");
  if (!v || !*v) return -1;
  if (!strncasecmp(v, "SIG", 3)) v += 3;
  if (!strcasecmp(v, "USR1")) return SIGUSR1;
  if (!strcasecmp(v, "USR2")) return SIGUSR2;
  char* end;
  long n = strtol(v, &end, 10);
  return *end || n <= 0 || n > SIGRTMAX ? -1 : (int)n;
}

static _Atomic long host_handler_calls;
static void host_handler(int sig) {
  (void)sig;
  atomic_fetch_add(&host_handler_calls, 1);
}

typedef struct {
  sim_run* run;
  int sig;
  int sent;
} signal_timer;

static void* signal_main(void* arg) {
  signal_timer* st = arg;
  sim_run* run = st->run;
  pthread_setname_np(pthread_self(), "sim-signal");
  const uint64_t at = (uint64_t)(run->cfg->signal_after_s * 1e9);
  if (run->sched.on) {
    /* Emulated: at its time, to this thread (delivered before the call
     * returns), then the plugin's timers run at once, as its dumper thread
     * would wake. */
    sim_sched_sleep_until(&run->sched, at);
    if (sim_sched_quit(&run->sched)) return NULL;
    pthread_kill(pthread_self(), st->sig);
    st->sent = 1;
    if (run->has_dumper) sim_sched_wake_thread(&run->sched, run->dumper);
    return NULL;
  }
  while (!atomic_load(&run->done) && sim_now_ns(run) < at) usleep(2000);
  if (!atomic_load(&run->done)) {
    kill(getpid(), st->sig);
    st->sent = 1;
  }
  return NULL;
}

/* Emulated: the plugin's dumper thread, whose timers run in its tick(),
 * at the times it asks for. */
static void* dumper_main(void* arg) {
  sim_run* run = arg;
  const proxytraceEmulator_v1_t* emu = run->emu;
  pthread_setname_np(pthread_self(), "proxytrace dump");
  sim_log_set_rank(-1);
  /* --noise-late-dumps: each wake-up late by a draw of 0..MS */
  uint64_t rng = sim_mix(run->cfg->seed ^ 0x6c617465ull) | 1;
  const double late_ns = run->cfg->late_dumps_ms * 1e6;
  while (!sim_sched_quit(&run->sched)) {
    mark_gone(run);
    const uint64_t next = emu->tick(); /* on the plugin's clock */
    if (next == UINT64_MAX) {
      sim_sched_block(&run->sched, &run->dumper_idle);
      continue;
    }
    uint64_t at = next > SIM_CLOCK0_NS ? next - SIM_CLOCK0_NS : 0;
    if (late_ns > 0) at += (uint64_t)(late_ns * (double)(sim_rand(&rng) >> 11) * (1.0 / 9007199254740992.0));
    sim_sched_sleep_until(&run->sched, at);
  }
  return NULL;
}

static void* init_main(void* arg) {
  sim_rank* rk = arg;
  char name[32]; /* thread names hold 15 characters */
  snprintf(name, sizeof name, "sim-init %d", rk->rank);
  name[15] = 0;
  pthread_setname_np(pthread_self(), name);
  sim_log_set_rank(rk->rank);
  sim_log_set_tid(SIM_TID_INIT + rk->rank);
  if (!rk->run->sched.on) pthread_barrier_wait(&rk->run->init_barrier);
  sim_comm_init(rk->run, rk);
  return NULL;
}

/* RCCL's ncclCommDump from a watchdog (rccl-proxytrace.md §4.4): any thread,
 * any time, concurrently with recording. `comm_dumps` rounds over every
 * rank, 200 us apart, while the job runs; rounds left when it ends run
 * before the communicators are destroyed. */
static void* watchdog_main(void* arg) {
  sim_run* run = arg;
  pthread_setname_np(pthread_self(), "sim-watchdog");
  sim_plugin* p = &run->plugin;
  for (int round = 0; round < run->cfg->comm_dumps; round++) {
    for (int r = 0; r < run->nranks; r++) {
      sim_rank* rk = &run->ranks[r];
      if (rk->dead || !rk->ctx || !p->dump_hook) continue;
      sim_log_set_rank(r);
      sim_host_log(PT_SIM_LOG_WARN, "ncclCommDump() proxy-trace (profiler plugin):");
      p->dump_hook(rk->ctx, sim_logger);
    }
    if (run->sched.on) sim_sched_sleep_until(&run->sched, sim_now_ns(run) + 200000u);
    else if (!atomic_load(&run->done)) usleep(200);
  }
  sim_log_set_rank(-1);
  return NULL;
}

static int setup_ranks(sim_run* run) {
  pt_sim_job* job = run->job;
  int n = run->nranks, B = job->n_batches;
  run->ranks = calloc((size_t)n, sizeof *run->ranks);
  if (!run->ranks) return -1;
  for (int r = 0; r < n; r++) {
    sim_rank* rk = &run->ranks[r];
    rk->run = run;
    rk->rank = r;
    rk->dead = job->dead_rank[r];
    rk->last_batch = job->hung_batch < 0 ? B - 1 : job->pipe_lo ? job->last_batch[r] : job->hung_batch;
    pthread_mutex_init(&rk->mu, NULL);
    pthread_cond_init(&rk->cv, NULL);
    rk->task_handle = calloc((size_t)B * 2, sizeof *rk->task_handle);
    rk->task_mask = calloc((size_t)B, sizeof *rk->task_mask);
    rk->has_dir = calloc((size_t)B, sizeof *rk->has_dir);
    if (!rk->task_handle || !rk->task_mask || !rk->has_dir) return -1;
  }
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->absent || op->kind != PT_OPK_NET) continue;
    run->ranks[op->rank].has_dir[op->batch] |= op->is_send ? 1 : 2;
  }
  return 0;
}

static void free_ranks(sim_run* run) {
  for (int r = 0; run->ranks && r < run->nranks; r++) {
    sim_rank* rk = &run->ranks[r];
    pthread_mutex_destroy(&rk->mu);
    pthread_cond_destroy(&rk->cv);
    free(rk->task_handle);
    free(rk->task_mask);
    free(rk->has_dir);
    free(rk->gone_mark);
  }
  free(run->ranks);
}

int pt_sim_run(const pt_sim_config* c, pt_sim_result* res, FILE* err) {
  memset(res, 0, sizeof *res);
  res->status = 1;
  const sim_host* host = sim_host_of(c->host);
  if (!host) {
    fprintf(err, "proxytrace sim: unknown host profile\n");
    return 1;
  }
  if (pt_sim_job_build(c, &res->job, err) != 0) return 1;
  int truth = pt_sim_truth_compute(c, &res->job, err);
  if (truth != 0) return res->status = truth == -2 ? 2 : 1; /* -2: a fault the job cannot have */
  for (int i = 0; i < c->n_env; i++) {
    const char* eq = strchr(c->env[i], '=');
    char name[256];
    size_t len = (size_t)(eq - c->env[i]);
    if (!eq || len >= sizeof name) continue;
    memcpy(name, c->env[i], len);
    name[len] = 0;
    setenv(name, eq + 1, 1);
  }
  /* --dump-dir is where the plugin's own dump files go too, unless the
   * environment says otherwise; this run's setting ends with it. */
  if (c->dump_dir && !c->line_fn && !getenv("PROXYTRACE_DUMP_DIR")) {
    setenv("PROXYTRACE_DUMP_DIR", c->dump_dir, 1);
    res->plugin_dump_dir = 1;
  }
  const char* files_dir = getenv("PROXYTRACE_DUMP_DIR");
  snprintf(res->files_dir, sizeof res->files_dir, "%s", files_dir ? files_dir : "");
  res->hung_at = -1;
  res->signal = -1;
  struct sigaction host_old;
  int host_sig = -1;
  if (c->signal_after_s >= 0) {
    host_sig = dump_signal_of_env();
    if (host_sig < 0) {
      fprintf(err, "proxytrace sim: --signal-after needs PROXYTRACE_DUMP_SIGNAL (USR1, USR2 or a signal "
                   "number; set it with --env)\n");
      if (res->plugin_dump_dir) unsetenv("PROXYTRACE_DUMP_DIR");
      return 1;
    }
    /* The application's handler, installed before the plugin loads: a
     * plugin must chain to it, and the signal must not end the process. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = host_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    atomic_store(&host_handler_calls, 0);
    sigaction(host_sig, &sa, &host_old);
    res->signal = host_sig;
  }

  /* Static, as NCCL's process-wide mask (run.plugin.mask) is a static of the
   * library: a v7 plugin may keep init's pointer to it (one run at a time). */
  static sim_run run;
  memset(&run, 0, sizeof run);
  run.cfg = c;
  run.host = host;
  run.job = &res->job;
  run.nranks = res->job.nranks;
  run.pid = getpid();
  sim_plugin* p = &run.plugin;
  p->host = host;
  p->strict = c->strict;
  atomic_store(&p->ras_mask, -1);
  pthread_mutex_init(&p->mu, NULL);
  pt_request_init(&p->req);
  if (c->plugin) p->req.plugin = c->plugin;
  else pt_request_from_environment(&p->req);
  p->guard_len = (size_t)(run.nranks + 1) * SIM_GUARD_SLOTS * 64 + 4096;
  p->guard_len = (p->guard_len + 4095) & ~(size_t)4095;
  void* g = mmap(NULL, p->guard_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  p->guard = g == MAP_FAILED ? NULL : g;

  sim_log_setup(c, host, run.nranks, res->job.rpn);
  int rc = 1;
  if (sim_log_open_dumps(c, run.nranks, err) != 0) goto out;
  if (pt_loader_new(&p->loader) != PT_OK || setup_ranks(&run) != 0) {
    fprintf(err, "proxytrace sim: out of memory\n");
    goto out;
  }
  if (sim_plugin_load(p) != 0) {
    fprintf(err, "proxytrace sim: no profiler plugin loaded for host %s\n", host->name);
    if (p->loaded) pt_result_print(p->loaded, err);
    goto out;
  }
  res->loaded = 1;
  /* v1-v3 give the plugin no logger: NCCL 2.23-2.26 leave its lines to
   * the process's standard error, which is the job's log. */
  if (p->version <= 3) sim_log_capture_stderr();
  res->api_version = p->version;
  res->has_dump_hook = p->dump_hook != NULL;
  snprintf(res->plugin_path, sizeof res->plugin_path, "%s", p->loaded->path ? p->loaded->path : "");
  snprintf(res->plugin_name, sizeof res->plugin_name, "%s", p->loaded->plugin_name ? p->loaded->plugin_name : "");

  /* Emulated time: the plugin's own table, attached before the first
   * communicator (include/proxytrace/emulator.h); v2's starts as v1's. */
  const proxytraceEmulator_v1_t* emu = NULL;
  if (!c->real_time && p->loaded->handle) {
    emu = dlsym(p->loaded->handle, PT_EMULATOR_SYMBOL);
    if (!emu) emu = dlsym(p->loaded->handle, PT_EMULATOR_SYMBOL_V1);
  }
  if (emu && emu->attach(&run.sched.now, (int64_t)(SIM_EPOCH_NS - SIM_CLOCK0_NS)) != 0) emu = NULL;
  run.emu = emu;
  res->emulated = emu != NULL;
  sim_sched_init(&run.sched, emu != NULL);
  sim_log_use_clock(&run.sched);
  sim_log_set_tid(SIM_TID_MAIN);
  run.files_dir = res->files_dir[0] ? res->files_dir : NULL;

  /* Communicator inits: one thread each, released together (emulated: one
   * after another, in rank order). */
  if (!emu) {
    pthread_barrier_init(&run.init_barrier, NULL, (unsigned)run.nranks);
    for (int r = 0; r < run.nranks; r++) pthread_create(&run.ranks[r].init_thread, NULL, init_main, &run.ranks[r]);
    for (int r = 0; r < run.nranks; r++) pthread_join(run.ranks[r].init_thread, NULL);
    pthread_barrier_destroy(&run.init_barrier);
  } else {
    for (int r = 0; r < run.nranks; r++) {
      pthread_create(&run.ranks[r].init_thread, NULL, init_main, &run.ranks[r]);
      pthread_join(run.ranks[r].init_thread, NULL);
    }
  }
  sim_plugin_unload(p); /* the reference taken above for the report */
  res->mask = atomic_load(&p->mask);

  if (emu) run.has_dumper = sim_sched_spawn(&run.sched, 0, dumper_main, &run, &run.dumper) == 0;
  pthread_t watchdog;
  int dog = host->rccl && p->dump_hook && c->comm_dumps > 0;
  if (dog) dog = sim_sched_spawn(&run.sched, 0, watchdog_main, &run, &watchdog) == 0;
  signal_timer st = {.run = &run, .sig = host_sig};
  pthread_t signaller;
  int timer = host_sig > 0 && sim_sched_spawn(&run.sched, 0, signal_main, &st, &signaller) == 0;
  for (int r = 0; r < run.nranks; r++) {
    sim_sched_spawn(&run.sched, 1, sim_proxy_main, &run.ranks[r], &run.ranks[r].proxy_thread);
    sim_sched_spawn(&run.sched, 1, sim_app_main, &run.ranks[r], &run.ranks[r].app_thread);
  }
  if (sim_sched_run(&run.sched) != 0) res->deadlock = 1;
  /* The dead first: their threads end at once, and their communicators
   * go with them (see the top of this file; emulated, when they end). */
  for (int pass = 1; pass >= 0; pass--)
    for (int r = 0; r < run.nranks; r++) {
      sim_rank* rk = &run.ranks[r];
      if (rk->dead != pass) continue;
      pthread_join(rk->app_thread, NULL);
      pthread_join(rk->proxy_thread, NULL);
      if (pass && !rk->destroyed) destroy_dead(&run, rk);
    }
  res->seconds = (double)sim_sched_latest(&run.sched) * 1e-9;
  atomic_store(&run.done, 1);
  if (run.has_dumper) pthread_join(run.dumper, NULL);
  if (dog) pthread_join(watchdog, NULL);
  if (timer) pthread_join(signaller, NULL);
  res->signals_sent = st.sent;
  const int64_t hang_ns = atomic_load(&run.hang_ns);
  if (hang_ns) res->hung_at = (double)(hang_ns - 1) * 1e-9;
  res->hung = res->job.hung_batch >= 0;
  res->batches_run = res->job.hung_batch >= 0 ? res->job.hung_batch + 1 : res->job.n_batches;
  for (int r = 0; r < run.nranks; r++) res->callbacks += run.ranks[r].calls + run.ranks[r].app_calls;
  res->unwritten_handles = atomic_load(&p->unwritten);

  /* Destroy the live ranks' communicators, in order; a rank whose
   * process is gone by now (rank_gone) finalizes nothing it could write. */
  for (int r = 0; r < run.nranks; r++) {
    sim_rank* rk = &run.ranks[r];
    if (rk->destroyed) continue;
    if (c->rank_gone && c->rank_gone[r]) {
      destroy_dead(&run, rk);
      continue;
    }
    sim_log_set_rank(r);
    sim_comm_destroy(&run, rk, 1);
  }
  sim_log_set_rank(-1);
  res->status = 0;
  rc = 0;
out:
  if (host_sig > 0) {
    res->signals_seen = atomic_load(&host_handler_calls);
    sigaction(host_sig, &host_old, NULL);
  }
  if (res->plugin_dump_dir) unsetenv("PROXYTRACE_DUMP_DIR");
  pt_loader_free(p->loader);
  free_ranks(&run);
  if (p->guard) munmap(p->guard, p->guard_len);
  pthread_mutex_destroy(&p->mu);
  if (run.sched.actors) sim_sched_free(&run.sched);
  sim_log_use_clock(NULL);
  sim_log_close();
  return rc;
}

void pt_sim_result_free(pt_sim_result* res) { pt_sim_job_free(&res->job); }
