/*
 * fanout.c — the fan-out profiler plugin: NCCL and RCCL load one profiler;
 * this one loads several (PROXYTRACE_FANOUT_PLUGINS, in order) and forwards
 * every event to each of them.
 *
 * Children are loaded at the first init, through the project's loader with
 * the rules of the host the fan-out runs in (fanout_host(): the profile
 * PROXYTRACE_FANOUT_HOST names, else the host's ncclGetVersion and whether
 * it is RCCL, else the newest release of the API version the host called),
 * so each child is spoken to in the newest API version both know. They are
 * unloaded, in reverse order, when the last communicator is finalized, as a
 * host unloads its plugin.
 *
 * Handles. The host gets one fan-out handle per event, holding each
 * child's handle. Handles live in rings allocated with the communicator:
 * one for the application thread's events (API, Group, Coll, P2p, launch,
 * CE), one of ProxyOps each with NCCL_STEPS (8) ProxyStep slots, chosen by
 * step id, and one for the rest (ProxyCtrl, KernelCh, NetPlugin,
 * KernelPhase, steps without a parent). A ring slot is taken by an atomic
 * cursor and a compare-and-swap and freed at stop; a freed slot is reused
 * only when the cursor comes round again, so a parent stopped before its
 * children start (Coll before its ProxyOps) still maps to the children's
 * handles. No allocation, lock or system call on the event path.
 *
 * A child that returns an error from an event call is disabled for that
 * communicator, with one warning; the host never sees the error.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fanout/children.h"
#include "fanout/fanout.h"
#include "nccl/common.h"
#include "plugin/plugin.h"
#include "proxytrace/loader.h"

#define FO_STEP_SLOTS 8      /* NCCL_STEPS: steps of one op in flight */
#define FO_TASK_RING 512     /* powers of two */
#define FO_PROXY_RING 512
#define FO_MISC_RING 512
#define FO_MAX_COMMS 1024
#define FO_MAGIC 0x54554f4e414655ull

typedef struct fo_ctx fo_ctx;

typedef struct fo_handle {
  uint64_t magic;
  fo_ctx* ctx;
  atomic_uint busy; /* ring slots: taken */
  unsigned sent;    /* children that got the start */
  void* h[FO_MAX_CHILDREN];
} fo_handle;

typedef struct {
  fo_handle op;
  fo_handle steps[FO_STEP_SLOTS];
} fo_op;

struct fo_ctx {
  atomic_uint active; /* children live for this communicator */
  unsigned inited;    /* children whose init succeeded */
  int api;            /* the version of the table the host called */
  ncclDebugLogger_t log;
  int rank;
  void* child_ctx[FO_MAX_CHILDREN];
  atomic_uint task_cur, proxy_cur, misc_cur;
  fo_handle task[FO_TASK_RING];
  fo_op proxy[FO_PROXY_RING];
  fo_handle misc[FO_MISC_RING];
};

typedef struct {
  char entry[FO_ENTRY_MAX];
  pt_result* res;
  int version;
  const ncclProfiler_v6_t* table; /* every version has the same six members */
  ncclProfilerProxyTraceDump_t dump;
  int mask;       /* the child's activation mask (one per process, as a host has) */
  int keep;       /* bits its adapter lets it keep */
  atomic_uint types; /* event types (bit index of the type) the host would
                        send it, from its mask at the latest init */
} fo_child;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static fo_child g_child[FO_MAX_CHILDREN];
static int g_nchild;
static int g_loaded;  /* children loaded (for g_api) */
static int g_api;     /* API version children are spoken to at most */
static int g_rccl;
static int g_refs;    /* live communicators */
static _Atomic(fo_ctx*) g_live[FO_MAX_COMMS];
static atomic_int g_live_n;
static pid_t g_pid;
static atomic_long g_dropped; /* events declined: ring full, foreign, unknown context */

/* ---- logging (cold) ----------------------------------------------------- */

static void fo_warn(ncclDebugLogger_t log, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void fo_warn(ncclDebugLogger_t log, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (log) log(pt_host_warn_level(log), 0x4000 /* NCCL_PROFILE */, __FILE__, __LINE__, "%s: %s", FO_NAME, msg);
  else fprintf(stderr, "%s: %s\n", FO_NAME, msg);
}

/* ---- fork: the lock is taken around fork so a child starts with it free */

static void fo_prepare(void) { pthread_mutex_lock(&g_lock); }
static void fo_release(void) { pthread_mutex_unlock(&g_lock); }
static void fo_child_after_fork(void) {
  pthread_mutex_unlock(&g_lock);
  g_pid = getpid();
}
static void fo_once(void) {
  g_pid = getpid();
  pthread_atfork(fo_prepare, fo_release, fo_child_after_fork);
}

/* ---- which host, which children ----------------------------------------- */

static const char* const kDefaultHost[8] = {NULL,        "nccl-2.23", "nccl-2.25", "nccl-2.26",
                                            "nccl-2.27", "nccl-2.28", "nccl-2.30", "nccl-2.32"};

static int host_for_api(const char* text, int api, pt_host* out) {
  pt_host h;
  if (!text || pt_host_parse(text, &h) != PT_OK) return 0;
  const pt_host_info* info = pt_host_info_of(h);
  if (!info || info->native_version != api) return 0;
  *out = h;
  return 1;
}

static pt_host fanout_host(int api, ncclDebugLogger_t log) {
  pt_host h;
  const char* v = getenv("PROXYTRACE_FANOUT_HOST");
  if (v && *v) {
    if (host_for_api(v, api, &h)) return h;
    fo_warn(log, "PROXYTRACE_FANOUT_HOST=%.64s is not a host profile of profiler API v%d "
            "(accepted: the names `proxytrace probe --host` takes); using the host's own version",
            v, api);
  }
  char buf[32];
  if (pt_host_rccl_symbol(log)) {
    if (host_for_api(api >= 7 ? "rccl-2.31" : "rccl", api, &h)) return h;
  } else {
    int code = pt_host_version(log);
    if (code >= 22300) {
      snprintf(buf, sizeof buf, "nccl-%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
      if (host_for_api(buf, api, &h)) return h;
    }
  }
  if (!host_for_api(kDefaultHost[api], api, &h)) h = PT_HOST_NCCL_2_30;
  return h;
}

static const void* const kOwnTables[8];

static int is_fanout(const pt_result* res) {
  for (int v = 1; v <= 7; v++)
    if (res->table == kOwnTables[v]) return 1;
  if (res->handle && dlsym(res->handle, FO_MARKER)) return 1;
  const char* name = *(const char* const*)res->table;
  return name && !strcmp(name, FO_NAME);
}

/* The reason the first refused candidate gives (the loader's words). */
static const char* refusal(const pt_result* res) {
  for (size_t i = 0; i < res->n_candidates; i++)
    if (res->candidates[i].reason && res->candidates[i].reason[0]) return res->candidates[i].reason;
  return pt_strerror(res->status);
}

/* Under g_lock. */
static void load_children(int api, ncclDebugLogger_t log) {
  pt_host host = fanout_host(api, log);
  g_api = api;
  g_rccl = !strncmp(pt_host_name(host), "rccl", 4);
  g_nchild = 0;
  fo_list list;
  fo_list_parse(getenv("PROXYTRACE_FANOUT_PLUGINS"), &list);
  if (list.too_long) {
    fo_warn(log, "PROXYTRACE_FANOUT_PLUGINS is longer than %d bytes: ignored", FO_LIST_MAX - 1);
    return;
  }
  if (list.entry_too_long)
    fo_warn(log, "%d entr%s of PROXYTRACE_FANOUT_PLUGINS longer than %d bytes ignored",
            list.entry_too_long, list.entry_too_long == 1 ? "y" : "ies", FO_ENTRY_MAX - 1);
  if (list.ignored)
    fo_warn(log, "more than %d profilers in PROXYTRACE_FANOUT_PLUGINS: '%s' and later ignored",
            FO_MAX_CHILDREN, list.ignored);
  if (!list.n) {
    fo_warn(log, "PROXYTRACE_FANOUT_PLUGINS names no profiler: nothing to forward to");
    return;
  }
  for (int k = 0; k < list.n; k++) {
    fo_child* c = &g_child[g_nchild];
    memset(c, 0, sizeof *c);
    snprintf(c->entry, sizeof c->entry, "%s", list.entry[k]);
    pt_request req;
    fo_child_request(&req, c->entry);
    pt_result* res = NULL;
    int rc = pt_load(&req, host, &res);
    if (!res) {
      fo_warn(log, "'%s' not loaded: %s", c->entry, pt_strerror(rc));
      continue;
    }
    if (rc != PT_OK) {
      fo_warn(log, "'%s' not loaded under the %s rules: %s (%s)", c->entry, pt_host_name(host),
              pt_strerror(rc), refusal(res));
      pt_result_free(res);
      continue;
    }
    if (is_fanout(res)) {
      fo_warn(log, "'%s' (%s) is a fan-out: refused, it would forward to itself",
              c->entry, res->path);
      pt_result_close(res);
      pt_result_free(res);
      continue;
    }
    c->res = res;
    c->version = res->api_version;
    c->table = res->table;
    c->dump = (ncclProfilerProxyTraceDump_t)(void (*)(void))res->dump_hook;
    c->keep = fo_mask_keep(api, c->version, g_rccl);
    g_nchild++;
  }
}

/* Under g_lock: in reverse order, as they were loaded. */
static void unload_children(void) {
  for (int i = g_nchild - 1; i >= 0; i--) {
    pt_result_close(g_child[i].res);
    pt_result_free(g_child[i].res);
    g_child[i].res = NULL;
  }
  g_nchild = 0;
  g_loaded = 0;
}

/* ---- live communicators ------------------------------------------------- */

static int ctx_register(fo_ctx* c) {
  int n = atomic_load(&g_live_n);
  for (int i = 0; i < FO_MAX_COMMS; i++) {
    fo_ctx* z = NULL;
    if (atomic_compare_exchange_strong(&g_live[i], &z, c)) {
      while (n < i + 1 && !atomic_compare_exchange_weak(&g_live_n, &n, i + 1)) {
      }
      return 1;
    }
  }
  return 0;
}

/* The context if it is one of ours and alive (PXN hands over another
 * process's pointers; ProxyCtrl of a shared proxy may name a finalized one). */
static fo_ctx* ctx_lookup(void* p) {
  int n = atomic_load_explicit(&g_live_n, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (p && atomic_load_explicit(&g_live[i], memory_order_acquire) == p) return p;
  return NULL;
}

static void ctx_unregister(fo_ctx* c) {
  for (int i = 0; i < FO_MAX_COMMS; i++) {
    fo_ctx* want = c;
    if (atomic_compare_exchange_strong(&g_live[i], &want, NULL)) return;
  }
}

/* ---- init / finalize ---------------------------------------------------- */

static void init_handles(fo_handle* h, fo_ctx* c) {
  h->magic = FO_MAGIC;
  h->ctx = c;
}

static fo_ctx* ctx_new(int api, ncclDebugLogger_t log, int rank) {
  fo_ctx* c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->api = api;
  c->log = log;
  c->rank = rank;
  for (int i = 0; i < FO_TASK_RING; i++) init_handles(&c->task[i], c);
  for (int i = 0; i < FO_MISC_RING; i++) init_handles(&c->misc[i], c);
  for (int i = 0; i < FO_PROXY_RING; i++) {
    init_handles(&c->proxy[i].op, c);
    for (int s = 0; s < FO_STEP_SLOTS; s++) init_handles(&c->proxy[i].steps[s], c);
  }
  return c;
}

static ncclResult_t child_init(const fo_child* ch, fo_child* mut, void** cctx, uint64_t commId,
                               const char* commName, int nNodes, int nranks, int rank,
                               ncclDebugLogger_t log) {
  int* mask = &mut->mask;
  switch (ch->version) {
    case 1: case 2: case 3: return ((const ncclProfiler_v1_t*)ch->table)->init(cctx, mask);
    case 4:
      return ((const ncclProfiler_v4_t*)ch->table)->init(cctx, mask, commName, commId, nNodes, nranks, rank, log);
    default:
      return ch->table->init(cctx, commId, mask, commName, nNodes, nranks, rank, log);
  }
}

static ncclResult_t fo_init(int api, void** context, int* mask, uint64_t commId, const char* commName,
                            int nNodes, int nranks, int rank, ncclDebugLogger_t log) {
  pthread_once(&g_once, fo_once);
  if (!context || !mask) return ncclInvalidArgument;
  *context = NULL;
  pthread_mutex_lock(&g_lock);
  if (g_loaded && g_api != api) {
    pthread_mutex_unlock(&g_lock);
    fo_warn(log, "the host called API v%d after v%d: refused", api, g_api);
    return ncclInvalidUsage;
  }
  if (!g_loaded) {
    load_children(api, log);
    g_loaded = 1;
  }
  fo_ctx* c = ctx_new(api, log, rank);
  if (!c || !ctx_register(c)) {
    pthread_mutex_unlock(&g_lock);
    free(c);
    fo_warn(log, "no memory (or more than %d communicators) for a communicator: %s", FO_MAX_COMMS,
            strerror(ENOMEM));
    return ncclSystemError;
  }
  g_refs++;
  int all = 0;
  for (int i = 0; i < g_nchild; i++) {
    fo_child* ch = &g_child[i];
    void* cctx = NULL;
    ncclResult_t r = child_init(ch, ch, &cctx, commId, commName, nNodes, nranks, rank, log);
    if (r != ncclSuccess) {
      fo_warn(log, "'%s' failed init (error %d) on rank %d: dropped for this communicator",
              ch->entry, (int)r, rank);
      continue;
    }
    int m = __atomic_and_fetch(&ch->mask, ch->keep, __ATOMIC_RELAXED);
    /* What the host's gating and the child's adapter let through, once
     * here rather than at every event. */
    unsigned types = 0;
    for (int b = 0; b < 32; b++)
      if (fo_gate(api, g_rccl, 1ull << b, m) && fo_forwards_type(api, ch->version, 1ull << b))
        types |= 1u << b;
    atomic_store_explicit(&ch->types, types, memory_order_relaxed);
    c->child_ctx[i] = cctx;
    c->inited |= 1u << i;
    all |= __atomic_load_n(&ch->mask, __ATOMIC_RELAXED);
  }
  atomic_store(&c->active, c->inited);
  /* The host's mask is one int for the process: the union of what every
   * child asked for, written as each communicator initialises. */
  for (int i = 0; i < g_nchild; i++) all |= __atomic_load_n(&g_child[i].mask, __ATOMIC_RELAXED);
  pt_set_mask(mask, all);
  pthread_mutex_unlock(&g_lock);
  *context = c;
  return ncclSuccess;
}

static ncclResult_t fo_finalize(void* context) {
  fo_ctx* c = ctx_lookup(context);
  if (!c) return ncclSuccess;
  pthread_mutex_lock(&g_lock);
  ctx_unregister(c);
  for (int i = g_nchild - 1; i >= 0; i--)
    if (c->inited & (1u << i)) g_child[i].table->finalize(c->child_ctx[i]);
  if (--g_refs == 0) unload_children();
  pthread_mutex_unlock(&g_lock);
  free(c);
  return ncclSuccess;
}

/* ---- events ------------------------------------------------------------- */

static void disable(fo_ctx* c, int i, const char* call, ncclResult_t r) {
  unsigned bit = 1u << i;
  if (atomic_fetch_and(&c->active, ~bit) & bit)
    fo_warn(c->log, "'%s' returned error %d from %s on rank %d: disabled for this communicator",
            g_child[i].entry, (int)r, call, c->rank);
}

static fo_handle* ring_take(fo_handle* base, size_t stride, atomic_uint* cur, unsigned n) {
  for (int tries = 0; tries < 64; tries++) {
    unsigned i = atomic_fetch_add_explicit(cur, 1, memory_order_relaxed) & (n - 1);
    fo_handle* h = (fo_handle*)(void*)((char*)base + (size_t)i * stride);
    unsigned z = 0;
    if (!atomic_load_explicit(&h->busy, memory_order_relaxed) &&
        atomic_compare_exchange_strong_explicit(&h->busy, &z, 1, memory_order_acquire,
                                                memory_order_relaxed))
      return h;
  }
  return NULL;
}

static inline fo_handle* ours(void* p) {
  fo_handle* h = p;
  return h && h->magic == FO_MAGIC ? h : NULL;
}

/* A ProxyOp slot of its communicator's ring (the only handles with step
 * slots), not a step slot or another ring's handle. */
static inline int is_op_slot(const fo_handle* h) {
  const char* p = (const char*)h;
  const char* base = (const char*)h->ctx->proxy;
  return p >= base && p < (const char*)(h->ctx->proxy + FO_PROXY_RING) &&
         (size_t)(p - base) % sizeof(fo_op) == 0;
}

static inline void* map_parent(void* p, int i) {
  fo_handle* h = ours(p);
  if (!h) return p; /* NULL, or another process's (PXN): as the host gave it */
  return (h->sent & (1u << i)) ? h->h[i] : NULL;
}

static size_t descr_size(int v) {
  static const size_t n[8] = {0,
                              sizeof(ncclProfilerEventDescr_v1_t),
                              sizeof(ncclProfilerEventDescr_v2_t),
                              sizeof(ncclProfilerEventDescr_v3_t),
                              sizeof(ncclProfilerEventDescr_v4_t),
                              sizeof(ncclProfilerEventDescr_v5_t),
                              sizeof(ncclProfilerEventDescr_v6_t),
                              sizeof(ncclProfilerEventDescr_v7_t)};
  return n[v];
}

static ncclResult_t fo_start(int api, void* context, void** eHandle, void* descr) {
  if (!eHandle) return ncclSuccess;
  *eHandle = NULL;
  if (!descr) return ncclSuccess;
  const ncclProfilerEventDescr_v4_t* hd = descr;
  uint64_t type = api >= 5 ? ((const ncclProfilerEventDescr_v5_t*)descr)->type : hd->type;
  fo_handle* parent = type == ncclProfileProxyStep ? ours(hd->parentObj) : NULL;
  fo_ctx* c;
  fo_handle* w;
  if (parent && is_op_slot(parent)) {
    c = parent->ctx;
    /* The step slot of its op, by step id. */
    w = &((fo_op*)(void*)parent)->steps[(unsigned)hd->proxyStep.step & (FO_STEP_SLOTS - 1)];
  } else {
    if (type == ncclProfileProxyOp && hd->proxyOp.pid != g_pid) {
      atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
      return ncclSuccess; /* PXN: another process's context */
    }
    c = ctx_lookup(context);
    if (!c) {
      atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
      return ncclSuccess;
    }
    if (type == ncclProfileProxyOp)
      w = ring_take(&c->proxy[0].op, sizeof(fo_op), &c->proxy_cur, FO_PROXY_RING);
    else if (type & (ncclProfileProxyStep | ncclProfileProxyCtrl | ncclProfileKernelCh |
                     ncclProfileNetPlugin | ncclProfileKernelPhase))
      w = ring_take(c->misc, sizeof(fo_handle), &c->misc_cur, FO_MISC_RING);
    else
      w = ring_take(c->task, sizeof(fo_handle), &c->task_cur, FO_TASK_RING);
    if (!w) {
      atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
      return ncclSuccess;
    }
  }
  unsigned sent = 0;
  unsigned todo = atomic_load_explicit(&c->active, memory_order_relaxed);
  const unsigned type_bit = type < (1ull << 32) ? (unsigned)type : 0;
  fo_event ev;
  int widened = 0;
  for (int i = 0; todo; i++, todo >>= 1) {
    if (!(todo & 1)) continue;
    const fo_child* ch = &g_child[i];
    if (!(atomic_load_explicit(&ch->types, memory_order_relaxed) & type_bit)) continue;
    const int v = ch->version;
    fo_any_descr d;
    if (v == api) {
      /* The host's own layout; a step needs only its header and step id. */
      memcpy(&d, descr, type == ncclProfileProxyStep ? 32 : descr_size(api));
    } else {
      if (!widened) {
        fo_widen(&ev, api, descr);
        widened = 1;
      }
      fo_narrow(&d, api, v, &ev);
    }
    void** slots[2];
    int ns = fo_parent_slots(&d, v, type, slots);
    for (int s = 0; s < ns; s++) *slots[s] = map_parent(*slots[s], i);
    void* h = NULL;
    ncclResult_t r = ch->table->startEvent(c->child_ctx[i], &h, (ncclProfilerEventDescr_v6_t*)(void*)&d);
    if (r != ncclSuccess) {
      disable(c, i, "startEvent", r);
      continue;
    }
    w->h[i] = h;
    sent |= 1u << i;
  }
  w->sent = sent;
  *eHandle = w;
  return ncclSuccess;
}

static ncclResult_t fo_record(int api, void* eHandle, int state, void* args) {
  fo_handle* w = ours(eHandle);
  if (!w) return ncclSuccess;
  fo_ctx* c = w->ctx;
  unsigned todo = w->sent & atomic_load_explicit(&c->active, memory_order_relaxed);
  for (int i = 0; todo; i++, todo >>= 1) {
    if (!(todo & 1)) continue;
    const fo_child* ch = &g_child[i];
    fo_any_args buf;
    void* a;
    if (ch->version == api) a = args; /* native: the host's args */
    else if (!fo_narrow_state(api, ch->version, g_rccl, state, args, &buf, &a)) continue;
    ncclResult_t r = ch->table->recordEventState(w->h[i], (ncclProfilerEventState_t)state, a);
    if (r != ncclSuccess) disable(c, i, "recordEventState", r);
  }
  return ncclSuccess;
}

static ncclResult_t fo_stop(void* eHandle) {
  fo_handle* w = ours(eHandle);
  if (!w) return ncclSuccess;
  fo_ctx* c = w->ctx;
  unsigned todo = w->sent & atomic_load_explicit(&c->active, memory_order_relaxed);
  for (int i = 0; todo; i++, todo >>= 1) {
    if (!(todo & 1)) continue;
    ncclResult_t r = g_child[i].table->stopEvent(w->h[i]);
    if (r != ncclSuccess) disable(c, i, "stopEvent", r);
  }
  /* A ring slot is free again; its child handles stay until it is reused,
   * for children that start later with it as their parent. */
  atomic_store_explicit(&w->busy, 0, memory_order_release);
  return ncclSuccess;
}

/* ---- the exported tables ------------------------------------------------ */

static ncclResult_t init_v1(void** ctx, int* mask) { return fo_init(1, ctx, mask, 0, NULL, 0, 0, -1, NULL); }
static ncclResult_t init_v2(void** ctx, int* mask) { return fo_init(2, ctx, mask, 0, NULL, 0, 0, -1, NULL); }
static ncclResult_t init_v3(void** ctx, int* mask) { return fo_init(3, ctx, mask, 0, NULL, 0, 0, -1, NULL); }
static ncclResult_t init_v4(void** ctx, int* mask, const char* name, uint64_t hash, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t log) {
  return fo_init(4, ctx, mask, hash, name, nnodes, nranks, rank, log);
}
static ncclResult_t init_v5(void** ctx, uint64_t id, int* mask, const char* name, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t log) {
  return fo_init(5, ctx, mask, id, name, nnodes, nranks, rank, log);
}
static ncclResult_t init_v6(void** ctx, uint64_t id, int* mask, const char* name, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t log) {
  return fo_init(6, ctx, mask, id, name, nnodes, nranks, rank, log);
}
static ncclResult_t init_v7(void** ctx, uint64_t id, int* mask, const char* name, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t log) {
  return fo_init(7, ctx, mask, id, name, nnodes, nranks, rank, log);
}

#define FO_EVENTS(N)                                                                          \
  static ncclResult_t start_v##N(void* ctx, void** h, ncclProfilerEventDescr_v##N##_t* d) {   \
    return fo_start(N, ctx, h, d);                                                           \
  }                                                                                          \
  static ncclResult_t record_v##N(void* h, ncclProfilerEventState_v##N##_t s,                \
                                  ncclProfilerEventStateArgs_v##N##_t* a) {                  \
    return fo_record(N, h, (int)s, a);                                                       \
  }
FO_EVENTS(1)
FO_EVENTS(2)
FO_EVENTS(3)
FO_EVENTS(4)
FO_EVENTS(5)
FO_EVENTS(6)
FO_EVENTS(7)

#define FO_TABLE(N)                                                                                \
  PT_EXPORT const ncclProfiler_v##N##_t ncclProfiler_v##N = {FO_NAME, init_v##N, start_v##N, fo_stop, \
                                                             record_v##N, fo_finalize};
FO_TABLE(1)
FO_TABLE(2)
FO_TABLE(3)
FO_TABLE(4)
FO_TABLE(5)
FO_TABLE(6)
FO_TABLE(7)

static const void* const kOwnTables[8] = {NULL,           &ncclProfiler_v1, &ncclProfiler_v2,
                                          &ncclProfiler_v3, &ncclProfiler_v4, &ncclProfiler_v5,
                                          &ncclProfiler_v6, &ncclProfiler_v7};

/* The mark by which a fan-out is known in a list of children. */
PT_EXPORT const int proxytraceFanout = 1;

/* RCCL's dump hook: each child that exports one dumps its own records. */
PT_EXPORT void ncclProfilerProxyTraceDump(void* context, ncclDebugLogger_t log);
void ncclProfilerProxyTraceDump(void* context, ncclDebugLogger_t log) {
  fo_ctx* c = ctx_lookup(context);
  if (!c) return;
  unsigned todo = atomic_load(&c->active);
  for (int i = 0; todo; i++, todo >>= 1)
    if ((todo & 1) && g_child[i].dump) g_child[i].dump(c->child_ctx[i], log);
}
