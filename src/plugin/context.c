/*
 * context.c — one context per communicator, and the registry of live
 * contexts.
 *
 * The registry exists for the dump: RCCL calls the dump hook from the thread
 * destroying a communicator and ncclCommDump from any thread (a watchdog), so
 * a dump can race with finalize of the same context. The registry lock only
 * guards the list and the reference counts; no foreign code runs under it.
 * A dump takes a reference to a registered context under the lock and then
 * runs — and calls the host's logger — with no lock held, so a logger may
 * re-enter the plugin (dump this or another communicator, even finalize
 * one), a slow logger delays no other communicator's init or finalize, and
 * a fork() during a dump leaves the lock free in the child. Finalize
 * unregisters the context and drops the registry's reference; whoever drops
 * the last one (finalize, or a dump still running) frees it. Later dumps of
 * a finalized context are no-ops. Fork handlers hold the lock across fork(),
 * so the child never inherits it taken. The event path never takes it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/plugin.h"

#define PT_CTX_MAGIC 0x70747478u /* "ptctx" */
#define PT_CTX_DEAD 0xdeadc7c7u

struct pt_ctx {
  _Atomic uint32_t magic;
  pt_trace* trace;
  uint64_t comm_hash;
  int rank, nranks, nnodes;
  char name[64];
  ncclDebugLogger_t log;
  int refs; /* the registry's (until finalize) + one per running dump; registry lock */
  pt_ctx* next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pt_ctx* registry;

/* ---- pid cache ---- */

static _Atomic pid_t self_pid;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void before_fork(void) { pthread_mutex_lock(&registry_lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&registry_lock); }
static void after_fork_child(void) {
  atomic_store(&self_pid, getpid());
  pthread_mutex_unlock(&registry_lock);
}
static void init_pid(void) {
  atomic_store(&self_pid, getpid());
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

pid_t pt_self_pid(void) { return atomic_load_explicit(&self_pid, memory_order_relaxed); }

/* ---- host flavour ---- */

static _Atomic int warn_level;

int pt_host_warn_level(void) {
  int l = atomic_load_explicit(&warn_level, memory_order_relaxed);
  if (l) return l;
  /* RCCL exports rcclGetVersion; NVIDIA NCCL does not. */
  l = dlsym(RTLD_DEFAULT, "rcclGetVersion") ? RCCL_LOG_WARN : NCCL_LOG_WARN;
  atomic_store_explicit(&warn_level, l, memory_order_relaxed);
  return l;
}

/* ---- contexts ---- */

pt_ctx* pt_ctx_create(uint64_t comm_hash, const char* comm_name, int nnodes, int nranks, int rank,
                      ncclDebugLogger_t log) {
  pthread_once(&pid_once, init_pid);
  pt_plugin_config cfg;
  pt_config_load(&cfg, log);
  pt_ctx* c = calloc(1, sizeof *c);
  if (!c) {
    PT_LOG_WARN(log, "proxytrace: out of memory creating the context of rank %d; not tracing it",
                rank);
    return NULL;
  }
  if (pt_trace_create(&c->trace, &cfg.trace, rank) != 0) {
    PT_LOG_WARN(log,
                "proxytrace: cannot allocate %u operation slots for rank %d; not tracing it "
                "(lower PROXYTRACE_MAX_OPS)",
                cfg.trace.max_ops, rank);
    free(c);
    return NULL;
  }
  c->comm_hash = comm_hash;
  c->rank = rank;
  c->nranks = nranks;
  c->nnodes = nnodes;
  c->log = log;
  if (comm_name) {
    strncpy(c->name, comm_name, sizeof c->name - 1);
  }
  atomic_store(&c->magic, PT_CTX_MAGIC);
  pthread_mutex_lock(&registry_lock);
  c->refs = 1;
  c->next = registry;
  registry = c;
  pthread_mutex_unlock(&registry_lock);
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

/* Drops a reference; the last one frees the context. */
static void ctx_unref(pt_ctx* c) {
  pthread_mutex_lock(&registry_lock);
  const int last = --c->refs == 0;
  pthread_mutex_unlock(&registry_lock);
  if (!last) return;
  pt_trace_destroy(c->trace);
  free(c);
}

void pt_ctx_destroy(pt_ctx* c) {
  if (!c) return;
  pthread_mutex_lock(&registry_lock);
  int found = unlink_locked(c) == 0;
  if (found) atomic_store(&c->magic, PT_CTX_DEAD);
  pthread_mutex_unlock(&registry_lock);
  if (found) ctx_unref(c); /* not ours, or finalized twice: left alone */
}

pt_trace* pt_ctx_trace(void* ctx) {
  pt_ctx* c = ctx;
  /* Acquire: pairs with the store that published the context, so the fields
   * read after the check (trace, comm_hash) are the ones written before it,
   * whichever thread created the context and however the host passed it on. */
  if (!c || atomic_load_explicit(&c->magic, memory_order_acquire) != PT_CTX_MAGIC) return NULL;
  return c->trace;
}

uint64_t pt_ctx_comm_hash(void* ctx) { return pt_ctx_trace(ctx) ? ((pt_ctx*)ctx)->comm_hash : 0; }

int pt_ctx_dump(void* ctx, pt_line_fn emit, void* arg) {
  pthread_mutex_lock(&registry_lock);
  pt_ctx* c = registry;
  while (c && c != ctx) c = c->next;
  if (c) c->refs++;
  pthread_mutex_unlock(&registry_lock);
  if (!c) return -1;
  const int rc = pt_trace_dump(c->trace, emit, arg); /* the logger runs here, unlocked */
  ctx_unref(c);
  return rc;
}
