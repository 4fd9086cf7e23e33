/*
 * context.c — one context per communicator, and the registry of live
 * contexts.
 *
 * The registry exists for the dumps: RCCL calls the dump hook from the
 * thread destroying a communicator and ncclCommDump from any thread (a
 * watchdog), and the dumper thread (dumper.c) dumps every live context when
 * a trigger fires, so a dump can race with finalize of the same context. A
 * dump runs under the registry lock after checking the context is still
 * registered; finalize unregisters under the same lock, so it waits for a
 * running dump and later dumps of that context become no-ops. The event
 * path never takes the lock.
 *
 * A second lock orders the lifecycle: the first context added starts the
 * dumper, the last one removed stops and joins it (outside the registry
 * lock, which the dumper needs to finish its round). Fork handlers take
 * both, so a child never inherits them held and can create and destroy
 * communicators of its own; the dumper thread does not survive the fork,
 * and the child's registry starts empty (the parent's contexts are frozen
 * copies there: a finalize of one in the child does nothing).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/plugin.h"

#define PT_CTX_MAGIC 0x70747478u /* "ptctx" */
#define PT_CTX_DEAD 0xdeadc7c7u
#define PT_P2P_PEERS_UNKNOWN 4096 /* peers whose p2p sequences are kept when init gives no size */

static pthread_mutex_t lifecycle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pt_ctx* registry;

/* ---- pid cache and fork ---- */

static _Atomic pid_t self_pid;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void before_fork(void) {
  pthread_mutex_lock(&lifecycle_lock);
  pthread_mutex_lock(&registry_lock);
}
static void after_fork_parent(void) {
  pthread_mutex_unlock(&registry_lock);
  pthread_mutex_unlock(&lifecycle_lock);
}
/* A fork child's copies of the parent's contexts: frozen (no proxy thread
 * records them here), not the child's to dump; kept reachable, not freed. */
static pt_ctx* parents_contexts;

static void after_fork_child(void) {
  atomic_store(&self_pid, getpid());
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

/* ---- contexts ---- */

static void ctx_free(pt_ctx* c) {
  pt_trace_destroy(c->trace);
  free((void*)c->p2p_seq);
  free(c);
}

pt_ctx* pt_ctx_create(uint64_t comm_hash, const char* comm_name, int nnodes, int nranks, int rank,
                      int api, ncclDebugLogger_t log) {
  pthread_once(&process_once, init_process);
  pt_plugin_config cfg;
  pt_config_load(&cfg, log);
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
  atomic_store(&c->magic, PT_CTX_MAGIC);
  pthread_mutex_lock(&lifecycle_lock);
  pthread_mutex_lock(&registry_lock);
  const int first = registry == NULL;
  c->next = registry;
  registry = c;
  pthread_mutex_unlock(&registry_lock);
  if (first) pt_dumper_first(&cfg, log);
  pthread_mutex_unlock(&lifecycle_lock);
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
  pt_ctx* p = registry;
  while (p && p != c) p = p->next;
  if (p) {
    /* Stock NCCL has no dump hook: a communicator destroyed (or aborted)
     * with ops still waiting leaves them in a dump. sink.c skips RCCL,
     * whose hook dumped just before. */
    if (atomic_load(&c->host_lib) != PT_HOSTLIB_RCCL && pt_trace_waiting_ops(c->trace) > 0)
      pt_sink_dump(c, PT_TRIG_FINALIZE, pt_dump_next_round(), NULL, NULL);
    /* The communicator's last figures stay on disk (metrics_sink.c). */
    if (pt_trace_metrics_on(c->trace)) pt_metrics_write(c, 1);
    unlink_locked(c);
    atomic_store(&c->magic, PT_CTX_DEAD);
  }
  const int last = p && registry == NULL;
  pthread_mutex_unlock(&registry_lock);
  if (last) pt_dumper_last();
  pthread_mutex_unlock(&lifecycle_lock);
  if (p) ctx_free(c); /* not ours, or finalized twice: left alone */
}

pt_trace* pt_ctx_trace(void* ctx) {
  pt_ctx* c = ctx;
  /* Acquire: pairs with the store that published the context, so the fields
   * read after the check (trace, comm_hash) are the ones written before it,
   * whichever thread created the context and however the host passed it on. */
  if (!c || atomic_load_explicit(&c->magic, memory_order_acquire) != PT_CTX_MAGIC) return NULL;
  return c->trace;
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
  int rc = c ? pt_sink_dump(c, PT_TRIG_HOOK, pt_dump_next_round(), emit, arg) : -1;
  pthread_mutex_unlock(&registry_lock);
  return rc;
}

int pt_ctx_for_each(void (*fn)(pt_ctx* c, void* arg), void* arg) {
  int n = 0;
  pthread_mutex_lock(&registry_lock);
  for (pt_ctx* c = registry; c; c = c->next, n++) fn(c, arg);
  pthread_mutex_unlock(&registry_lock);
  return n;
}
