/*
 * context.c — one context per communicator, and the registry of live
 * contexts.
 *
 * The registry exists for the dumps: RCCL calls the dump hook from the
 * thread destroying a communicator and ncclCommDump from any thread (a
 * watchdog), and the dumper thread (dumper.c) dumps every live context when
 * a trigger fires, so a dump can race with finalize of the same context.
 *
 * No foreign code runs under a lock of this file: the host's logger may
 * re-enter the plugin (dump, create or finalize a communicator), be slow, or
 * fork. The registry lock guards only the list and each context's
 * reference count. A dump takes a reference to a registered context under
 * the lock and runs with no lock held; finalize unregisters the context and
 * drops the registry's reference, and whoever drops the last one —
 * finalize, or a dump still running — frees it. Later dumps of a finalized
 * context are no-ops. The event path never takes a lock.
 *
 * A second lock orders the lifecycle: the first context added starts the
 * dumper, the last one removed stops it (outside the registry lock, which
 * the dumper needs between contexts) and waits for it once both locks are
 * released (its logger may create a communicator meanwhile). Warnings raised while it
 * is held are kept and logged after it is released. Fork handlers take every
 * lock of the plugin (these two, the dumper's, and those held while dump and
 * metrics files are written), so a child never inherits one held and can
 * create, dump, export and destroy communicators of its own; the dumper thread does not survive the fork,
 * and the child's registry starts empty (the parent's contexts are frozen
 * copies there: a finalize of one in the child does nothing).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/plugin.h"

#define PT_P2P_PEERS_UNKNOWN 4096 /* peers whose p2p sequences are kept when init gives no size */

static pthread_mutex_t lifecycle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pt_ctx* registry;

/* ---- pid cache and fork ---- */

static _Atomic pid_t self_pid;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

/* Every lock of the plugin, in the one order it is ever nested: lifecycle,
 * registry, the dumper's, then the two leaf locks held while files are
 * written (dump files, metrics files), under which no other lock is taken. */
static void before_fork(void) {
  pthread_mutex_lock(&lifecycle_lock);
  pthread_mutex_lock(&registry_lock);
  pt_dumper_before_fork();
  pt_sink_fork_lock();
pt_metrics_fork_lock();
}
static void after_fork_parent(void) {
pt_metrics_fork_unlock();
  pt_sink_fork_unlock();
  pt_dumper_after_fork_parent();
  pthread_mutex_unlock(&registry_lock);
  pthread_mutex_unlock(&lifecycle_lock);
}
/* A fork child's copies of the parent's contexts: frozen (no proxy thread
 * records them here), not the child's to dump; kept reachable, not freed. */
static pt_ctx* parents_contexts;

static void after_fork_child(void) {
  atomic_store(&self_pid, getpid());
pt_metrics_fork_unlock();
  pt_sink_fork_unlock();
  pt_dumper_after_fork_child();
  if (registry) {
    pt_ctx** tail = &registry;
    while (*tail) tail = &(*tail)->next;
    *tail = parents_contexts;
    parents_contexts = registry;
    registry = NULL;
  }
  pthread_mutex_unlock(&registry_lock);
  pthread_mutex_unlock(&lifecycle_lock);
}
static void init_process(void) {
  atomic_store(&self_pid, getpid());
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

pid_t pt_self_pid(void) { return atomic_load_explicit(&self_pid, memory_order_relaxed); }

/* ---- warnings raised under the lifecycle lock ---- */

/* pt_dumper_first logs through the logger it is given; under the lifecycle
 * lock it gets this one, which keeps the messages (the lock serializes its
 * callers), and the host's logger gets them once the lock is released. */
enum { DEFERRED_MAX = 4 };
static char deferred[DEFERRED_MAX][512];
static int n_deferred;

static void defer_log(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                      const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  if (n_deferred == DEFERRED_MAX) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(deferred[n_deferred++], sizeof deferred[0], fmt, ap);
  va_end(ap);
}

/* Takes the kept messages (lifecycle lock held); returns how many. */
static int take_deferred(char out[DEFERRED_MAX][512]) {
  const int n = n_deferred;
  memcpy(out, deferred, sizeof deferred);
  n_deferred = 0;
  return n;
}

static void log_deferred(ncclDebugLogger_t log, char msgs[DEFERRED_MAX][512], int n) {
  for (int i = 0; i < n; i++) PT_LOG_WARN(log, "%s", msgs[i]);
}

/* ---- contexts ---- */

static void ctx_free(pt_ctx* c) {
  pt_trace_destroy(c->trace);
  free((void*)c->p2p_seq);
  free(c);
}

/* Drops a reference; the last one frees the context. */
static void ctx_unref(pt_ctx* c) {
  pthread_mutex_lock(&registry_lock);
  const int last = --c->refs == 0;
  pthread_mutex_unlock(&registry_lock);
  if (last) ctx_free(c);
}

pt_ctx* pt_ctx_create(uint64_t comm_hash, const char* comm_name, int nnodes, int nranks, int rank,
                      int api, ncclDebugLogger_t log) {
  pthread_once(&process_once, init_process);
  pt_plugin_config cfg;
  pt_config_load(&cfg, log);
  pt_diag_setup(&cfg, log);
  pt_ctx* c = calloc(1, sizeof *c);
  if (c) {
    c->p2p_peers = nranks > 0 ? (uint32_t)nranks : PT_P2P_PEERS_UNKNOWN;
    c->p2p_seq = calloc((size_t)c->p2p_peers * 2, sizeof *c->p2p_seq);
  }
  if (!c || !c->p2p_seq) {
    PT_LOG_WARN(log, "proxytrace: out of memory creating the context of rank %d; not tracing it",
                rank);
    free(c);
    return NULL;
  }
  if (pt_trace_create(&c->trace, &cfg.trace, rank) != 0) {
    PT_LOG_WARN(log,
                "proxytrace: cannot allocate %u operation slots for rank %d; not tracing it "
                "(lower PROXYTRACE_MAX_OPS)",
                cfg.trace.max_ops, rank);
    free((void*)c->p2p_seq);
    free(c);
    return NULL;
  }
  atomic_store(&c->comm_hash, comm_hash);
  c->rank = rank;
  c->nranks = nranks;
  c->nnodes = nnodes;
  c->api = api;
  c->log = log;
  /* RCCL binds only the v6 table; under v6 without an RCCL symbol the ops
   * tell (sink.c). */
  atomic_store(&c->host_lib, pt_host_rccl_symbol(log) ? PT_HOSTLIB_RCCL
                             : api < 6                ? PT_HOSTLIB_NCCL
                                                      : PT_HOSTLIB_UNKNOWN);
  if (comm_name) strncpy(c->name, comm_name, sizeof c->name - 1);
  pt_sink_thread_host(c->host);
  atomic_store(&c->magic, PT_CTX_MAGIC);
  char msgs[DEFERRED_MAX][512];
  pthread_mutex_lock(&lifecycle_lock);
  pthread_mutex_lock(&registry_lock);
  const int first = registry == NULL;
  c->refs = 1; /* the registry's */
  c->next = registry;
  registry = c;
  pthread_mutex_unlock(&registry_lock);
  if (first) pt_dumper_first(&cfg, defer_log);
  /* The first slab pages, populated off the init caller's thread where a
   * dumper thread runs (madvise costs it tens of µs in a virtual machine). */
  if (!pt_dumper_prefault_soon()) pt_trace_prefault(c->trace);
  const int n = take_deferred(msgs);
  pthread_mutex_unlock(&lifecycle_lock);
  log_deferred(log, msgs, n);
  return c;
}

static int unlink_locked(pt_ctx* c) {
  for (pt_ctx** p = &registry; *p; p = &(*p)->next) {
    if (*p == c) {
      *p = c->next;
      return 0;
    }
  }
  return -1;
}

void pt_ctx_destroy(pt_ctx* c) {
  if (!c) return;
  pthread_mutex_lock(&lifecycle_lock);
  pthread_mutex_lock(&registry_lock);
  const int found = unlink_locked(c) == 0;
  if (found) atomic_store(&c->magic, PT_CTX_DEAD);
  const int last = found && registry == NULL;
  pthread_mutex_unlock(&registry_lock);
  const int wait = last && pt_dumper_last();
  pthread_mutex_unlock(&lifecycle_lock);
  /* Its dump in progress calls the host's logger, which may create a
   * communicator (the lifecycle lock) or not return: waited for unlocked,
   * and a bounded time (dumper.c). */
  if (wait) pt_dumper_wait();
  if (!found) return; /* not ours, or finalized twice: left alone */
  pt_diag_report(c);
  /* Stock NCCL has no dump hook: a communicator destroyed (or aborted) with
   * ops still waiting leaves them in a dump — taken here, unlocked, on the
   * registry's reference. With dump files on, every communicator under
   * every host leaves one, also with nothing waiting: its finalize record
   * says the rank finished cleanly (or what was still waiting), so "no
   * dump" only ever means the plugin never ran. sink.c keeps RCCL's, whose
   * hook dumped just before, out of the log. */
  if (pt_dump_settings_get()->dump_dir[0] ||
      (atomic_load(&c->host_lib) != PT_HOSTLIB_RCCL && pt_trace_waiting_ops(c->trace) > 0))
    pt_sink_dump(c, PT_TRIG_FINALIZE, pt_dump_next_round(), NULL, NULL);
  /* The communicator's last figures stay on disk (metrics_sink.c). */
  if (pt_trace_metrics_on(c->trace)) pt_metrics_write(c, 1);
  ctx_unref(c);
}

uint64_t pt_ctx_comm_hash(void* ctx) {
  return pt_ctx_trace(ctx) ? atomic_load_explicit(&((pt_ctx*)ctx)->comm_hash, memory_order_relaxed) : 0;
}

void pt_ctx_learn_comm_hash(void* ctx, uint64_t comm_hash) {
  if (!comm_hash || !pt_ctx_trace(ctx)) return;
  uint64_t zero = 0;
  atomic_compare_exchange_strong(&((pt_ctx*)ctx)->comm_hash, &zero, comm_hash);
}

int64_t pt_ctx_p2p_next(void* ctx, int peer, int is_recv) {
  pt_ctx* c = ctx;
  if (!pt_ctx_trace(ctx) || peer < 0 || (uint32_t)peer >= c->p2p_peers) return -1;
  return atomic_fetch_add_explicit(&c->p2p_seq[(size_t)peer * 2 + (is_recv ? 1 : 0)], 1,
                                   memory_order_relaxed);
}

int pt_ctx_dump_hook(void* ctx, pt_line_fn emit, void* arg) {
  pthread_mutex_lock(&registry_lock);
  pt_ctx* c = registry;
  while (c && c != ctx) c = c->next;
  if (c) c->refs++;
  pthread_mutex_unlock(&registry_lock);
  if (!c) return -1;
  const int rc = pt_sink_dump(c, PT_TRIG_HOOK, pt_dump_next_round(), emit, arg); /* unlocked */
  ctx_unref(c);
  return rc;
}

/* Each registered context once, `fn` called on a reference with no lock
 * held. Contexts added meanwhile may be visited or not; one finalized
 * meanwhile is still visited if it was reached first. The walk goes on
 * from the context just visited while it is still registered, else starts
 * over from the head, skipping contexts stamped with this walk's number. */
int pt_ctx_for_each(void (*fn)(pt_ctx* c, void* arg), void* arg) {
  static uint64_t walks; /* registry lock; one walk at a time (the dumper thread) */
  int n = 0;
  pthread_mutex_lock(&registry_lock);
  const uint64_t walk = ++walks;
  pt_ctx* c = registry;
  for (;;) {
    while (c && c->walk == walk) c = c->next;
    if (!c) break;
    c->walk = walk;
    c->refs++;
    pthread_mutex_unlock(&registry_lock);
    fn(c, arg);
    n++;
    pthread_mutex_lock(&registry_lock);
    pt_ctx* p = registry;
    while (p && p != c) p = p->next;
    pt_ctx* next = p ? c->next : registry; /* still registered: go on; else start over */
    const int last = --c->refs == 0;
    if (last) {
      pthread_mutex_unlock(&registry_lock);
      ctx_free(c);
      pthread_mutex_lock(&registry_lock);
      next = registry; /* the list may have changed while unlocked */
    }
    c = next;
  }
  pthread_mutex_unlock(&registry_lock);
  return n;
}
