/*
 * context.c — one context per communicator, and the registry of live
 * contexts.
 *
 * The registry exists for the dump: RCCL calls the dump hook from the thread
 * destroying a communicator and ncclCommDump from any thread (a watchdog), so
 * a dump can race with finalize of the same context. A dump runs under the
 * registry lock after checking the context is still registered; finalize
 * unregisters under the same lock, so it waits for a running dump and later
 * dumps of that context become no-ops. The event path never takes the lock.
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
  pt_ctx* next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pt_ctx* registry;

/* ---- pid cache ---- */

static _Atomic pid_t self_pid;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void refresh_pid(void) { atomic_store(&self_pid, getpid()); }
static void init_pid(void) {
  refresh_pid();
  pthread_atfork(NULL, NULL, refresh_pid);
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

void pt_ctx_destroy(pt_ctx* c) {
  if (!c) return;
  pthread_mutex_lock(&registry_lock);
  int found = unlink_locked(c) == 0;
  if (found) atomic_store(&c->magic, PT_CTX_DEAD);
  pthread_mutex_unlock(&registry_lock);
  if (!found) return; /* not ours, or finalized twice */
  pt_trace_destroy(c->trace);
  free(c);
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
  int rc = c ? pt_trace_dump(c->trace, emit, arg) : -1;
  pthread_mutex_unlock(&registry_lock);
  return rc;
}
