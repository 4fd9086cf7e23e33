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
 * Each child is treated as the host would treat it alone:
 *  - it gets an event only if its own mask passes the host's gating and its
 *    version's adapter forwards the type (g_want: per event type, the
 *    children that get it, worked out at init, not per event);
 *  - a handle it returns as NULL gets no states and no stop, and no child
 *    events where the host would start none under a NULL parent (2.23-2.27:
 *    Coll/P2p under the Group, steps under the ProxyOp; every release:
 *    step states only under a non-NULL ProxyOp handle); the host gets NULL
 *    when no child was offered the event;
 *  - a ProxyOp of another process's rank (PXN: its pid is not ours) comes
 *    with that process's context and parent, which the fan-out passes on as
 *    the host does, and takes its handles from a process-wide ring;
 *  - on 2.31+ a mask RAS writes over the host's (ncclras CONTROL
 *    PROFILER_MASK) is every child's mask from then on, as it would be with
 *    that child alone (noticed at application-thread events).
 *
 * The hot path (ProxyStep start, states, stop; ring.h for the handles)
 * loads a handle, its communicator's active children and the per-type
 * want mask, and calls each child through a flat table of its functions;
 * a child of the host's own version gets the host's descriptor (a copy
 * with the parent mapped) and args as they are. No allocation, lock or
 * system call on that path.
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
#include "fanout/ring.h"
#include "nccl/common.h"
#include "plugin/plugin.h"
#include "proxytrace/loader.h"

/* Ring sizes, in slots (powers of two): the first chunk and the most. Task
 * handles are parents after their stop (a Coll of its ProxyOps), so their
 * ring starts at the reuse distance; ops and the rest follow what is in
 * flight. */
#define FO_TASK_BASE 512
#define FO_TASK_MAX 4096
#define FO_OP_BASE 64
#define FO_OP_MAX 4096
#define FO_MISC_BASE 64
#define FO_MISC_MAX 4096
#define FO_PXN_BASE 8
#define FO_MAX_COMMS 1024
#define FO_NTYPES 32 /* event type bits the fan-out knows by index */
#define FO_EPOCHS 4  /* want tables: the children's own masks, and 3 RAS masks */

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

struct fo_ctx {
  atomic_uint active; /* children live for this communicator */
  unsigned inited;    /* children whose init succeeded */
  int foreign;        /* the PXN context: children get the host's context */
  int api;            /* the version of the table the host called */
  ncclDebugLogger_t log;
  int rank;
  void* child_ctx[FO_MAX_CHILDREN];
  fo_ring task, op, misc;
};

typedef ncclResult_t (*fo_start_fn)(void*, void**, ncclProfilerEventDescr_v6_t*);
typedef ncclResult_t (*fo_record_fn)(void*, ncclProfilerEventState_v6_t, ncclProfilerEventStateArgs_v6_t*);
typedef ncclResult_t (*fo_stop_fn)(void*);

typedef struct {
  char entry[FO_ENTRY_MAX];
  pt_result* res;
  int version;
  const ncclProfiler_v6_t* table; /* every version has the same six members */
  ncclProfilerProxyTraceDump_t dump;
  int mask; /* the child's activation mask (one per process, as a host has) */
  int keep; /* bits its adapter lets it keep */
} fo_child;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static fo_child g_child[FO_MAX_CHILDREN];
static int g_nchild;
static int g_loaded; /* children loaded (for g_api) */
static int g_api;    /* API version children are spoken to at most */
static int g_rccl;
static int g_ras;    /* 2.31+: RAS may rewrite the host's mask */
static int g_refs;   /* live communicators */
static _Atomic(fo_ctx*) g_live[FO_MAX_COMMS];
static atomic_int g_live_n;
static pid_t g_pid;
static atomic_long g_dropped; /* events no child got: ring full, unknown context */
static fo_ctx* g_pxn;         /* handles of other processes' ProxyOps (PXN) */

/* The hot path's view of the children, flat and together (a step touches
 * two cache lines of it): their functions, which of them need
 * translation, and per event type (bit index) which get it. */
static struct {
  struct {
    fo_start_fn start;
    fo_record_fn record;
    fo_stop_fn stop;
  } fn[FO_MAX_CHILDREN];
  unsigned translated; /* children of another version than the host's */
  atomic_uint epoch;   /* which want[] holds the children's masks now */
  /* Children that get an event of type 1 << t: want[0] under the masks
   * the children wrote at init, want[1..3] under masks RAS set (one
   * table per mask, kept: RAS that turns profiling off and on again
   * switches tables and rewrites none). An event follows the table of
   * its parent (a ProxyOp its Coll's, a step its op's), as the host
   * gates a task's events with the mask it sampled for the task. */
  atomic_uint want[FO_EPOCHS][FO_NTYPES];
  atomic_int epoch_mask[FO_EPOCHS]; /* the RAS mask of want[e] (e > 0) */
  unsigned epoch_next;              /* the table a new RAS mask takes (g_mask_busy) */
  atomic_uint rings;                /* FO_RING_*: rings some child's events need */
} g_hot __attribute__((aligned(64)));
#define g_rings g_hot.rings
#define g_translated g_hot.translated

/* The host's mask (2.31+, for RAS) and what the fan-out last wrote there
 * or took from there. */
static int* _Atomic g_host_mask;
static atomic_int g_mask_seen;
static atomic_flag g_mask_busy = ATOMIC_FLAG_INIT;

static void ctx_free(fo_ctx* c);

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

/* Under g_lock: no child, no event wanted, no RAS mask seen. */
static void reset_hot(void) {
  g_translated = 0;
  for (int e = 0; e < FO_EPOCHS; e++) {
    for (int t = 0; t < FO_NTYPES; t++) atomic_store(&g_hot.want[e][t], 0);
    atomic_store(&g_hot.epoch_mask[e], -1);
  }
  atomic_store(&g_hot.epoch, 0);
  g_hot.epoch_next = 0;
  atomic_store(&g_rings, 0);
}

/* Under g_lock. */
static void load_children(int api, ncclDebugLogger_t log) {
  reset_hot();
  pt_host host = fanout_host(api, log);
  g_api = api;
  g_rccl = !strncmp(pt_host_name(host), "rccl", 4);
  g_ras = pt_host_info_of(host)->native_version >= 7; /* 2.31+ */
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
    g_hot.fn[g_nchild].start = c->table->startEvent;
    g_hot.fn[g_nchild].record = c->table->recordEventState;
    g_hot.fn[g_nchild].stop = c->table->stopEvent;
    if (c->version != api) g_translated |= 1u << g_nchild;
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
  reset_hot();
  ctx_free(g_pxn);
  g_pxn = NULL;
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

/* ---- which child gets which event --------------------------------------- */

static inline int type_index(uint64_t type) {
  return type && !(type & (type - 1)) && type < (1ull << FO_NTYPES) ? __builtin_ctzll(type) : -1;
}

#define TASK_TYPES                                                                                 \
  (ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileGroupApi | ncclProfileCollApi | \
   ncclProfileP2pApi | ncclProfileKernelLaunch | ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch)
#define OP_TYPES (ncclProfileProxyOp | ncclProfileProxyStep)

/* Under g_lock or g_mask_busy: child i gets, from now on, what the host
 * sends a plugin whose mask is m. */
static void set_types(int i, int m, unsigned e) {
  const unsigned bit = 1u << i;
  for (int t = 0; t < FO_NTYPES; t++) {
    uint64_t type = 1ull << t;
    int get = fo_gate(g_api, g_rccl, type, m) && fo_forwards_type(g_api, g_child[i].version, type);
    if (get) atomic_fetch_or_explicit(&g_hot.want[e][t], bit, memory_order_relaxed);
    else atomic_fetch_and_explicit(&g_hot.want[e][t], ~bit, memory_order_relaxed);
  }
}

static inline unsigned want_of(unsigned e, int t) {
  return atomic_load_explicit(&g_hot.want[e & (FO_EPOCHS - 1)][t], memory_order_relaxed);
}
static inline unsigned epoch_now(void) { return atomic_load_explicit(&g_hot.epoch, memory_order_acquire); }

enum { FO_RING_TASK = 1, FO_RING_OP = 2, FO_RING_MISC = 4 };

/* After set_types: which rings some child's events need (ctx_tend). */
static void update_rings(void) {
  unsigned r = 0;
  for (int t = 0; t < FO_NTYPES; t++) {
    if (!want_of(epoch_now(), t)) continue;
    uint64_t type = 1ull << t;
    r |= type & TASK_TYPES ? FO_RING_TASK : type & OP_TYPES ? FO_RING_OP : FO_RING_MISC;
  }
  atomic_store_explicit(&g_rings, r, memory_order_relaxed);
}

/* ---- init / finalize ---------------------------------------------------- */

static void ctx_rings_init(fo_ctx* c) {
  size_t hs = fo_handle_size(g_nchild);
  fo_ring_init(&c->task, c, FO_KIND_TASK, FO_TASK_BASE, FO_TASK_MAX, 1, hs);
  fo_ring_init(&c->op, c, FO_KIND_OP, FO_OP_BASE, FO_OP_MAX, 1 + FO_STEP_SLOTS, hs);
  fo_ring_init(&c->misc, c, FO_KIND_MISC, FO_MISC_BASE, FO_MISC_MAX, 1, hs);
}

/* The rings' memory follows what the children want and what is in flight
 * (ring.h). Application-thread events and init only. */
static void ctx_tend(fo_ctx* c) {
  const unsigned want = atomic_load_explicit(&g_rings, memory_order_relaxed);
  fo_ring_tend(&c->task, want & FO_RING_TASK);
  fo_ring_tend(&c->op, want & FO_RING_OP);
  /* Steps under no ProxyOp of ours come from the misc ring. */
  fo_ring_tend(&c->misc, want & (FO_RING_MISC | FO_RING_OP));
}

static void ctx_free(fo_ctx* c) {
  if (!c) return;
  fo_ring_free(&c->task);
  fo_ring_free(&c->op);
  fo_ring_free(&c->misc);
  free(c);
}

static fo_ctx* ctx_new(int api, ncclDebugLogger_t log, int rank) {
  fo_ctx* c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->api = api;
  c->log = log;
  c->rank = rank;
  ctx_rings_init(c);
  return c;
}

static ncclResult_t child_init(const fo_child* ch, void** cctx, int* mask, uint64_t commId,
                               const char* commName, int nNodes, int nranks, int rank,
                               ncclDebugLogger_t log) {
  switch (ch->version) {
    case 1: case 2: case 3: return ((const ncclProfiler_v1_t*)ch->table)->init(cctx, mask);
    case 4:
      return ((const ncclProfiler_v4_t*)ch->table)->init(cctx, mask, commName, commId, nNodes, nranks, rank, log);
    default:
      return ch->table->init(cctx, commId, mask, commName, nNodes, nranks, rank, log);
  }
}

/* Under g_lock, after the children are loaded: the PXN context, whose
 * children's contexts are the host's (another process's) ones. */
static void pxn_ctx(int api, ncclDebugLogger_t log) {
  if (g_pxn || !g_nchild) return;
  g_pxn = ctx_new(api, log, -1);
  if (!g_pxn) return;
  g_pxn->foreign = 1;
  /* Few ops come from other processes: a small first chunk. */
  fo_ring_init(&g_pxn->op, g_pxn, FO_KIND_OP, FO_PXN_BASE, FO_OP_MAX, 1 + FO_STEP_SLOTS, fo_handle_size(g_nchild));
  g_pxn->inited = (1u << g_nchild) - 1;
  atomic_store(&g_pxn->active, g_pxn->inited);
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
    pxn_ctx(api, log);
  }
  fo_ctx* c = ctx_new(api, log, rank);
  if (!c || !ctx_register(c)) {
    pthread_mutex_unlock(&g_lock);
    ctx_free(c);
    fo_warn(log, "no memory (or more than %d communicators) for a communicator: %s", FO_MAX_COMMS,
            strerror(ENOMEM));
    return ncclSystemError;
  }
  g_refs++;
  for (int i = 0; i < g_nchild; i++) {
    fo_child* ch = &g_child[i];
    void* cctx = NULL;
    ncclResult_t r = child_init(ch, &cctx, &ch->mask, commId, commName, nNodes, nranks, rank, log);
    if (r != ncclSuccess) {
      fo_warn(log, "'%s' failed init (error %d) on rank %d: dropped for this communicator",
              ch->entry, (int)r, rank);
      continue;
    }
    /* What the host's gating and the child's adapter let through, once
     * here rather than at every event. */
    set_types(i, __atomic_and_fetch(&ch->mask, ch->keep, __ATOMIC_RELAXED), 0);
    c->child_ctx[i] = cctx;
    c->inited |= 1u << i;
  }
  /* The children's own masks again (2.31+: until the host re-applies a
   * mask RAS set, which tend() notices). */
  atomic_store_explicit(&g_hot.epoch, 0, memory_order_release);
  update_rings();
  atomic_store(&c->active, c->inited);
  /* The host's mask is one int for the process: the union of what every
   * child asked for, written as each communicator initialises. */
  int all = 0;
  for (int i = 0; i < g_nchild; i++) all |= __atomic_load_n(&g_child[i].mask, __ATOMIC_RELAXED);
  pt_set_mask(mask, all);
  if (g_ras) {
    atomic_store(&g_mask_seen, all);
    atomic_store(&g_host_mask, mask);
  }
  ctx_tend(c);
  if (g_pxn) fo_ring_tend(&g_pxn->op, atomic_load_explicit(&g_rings, memory_order_relaxed) & FO_RING_OP);
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
  if (--g_refs == 0) {
    long lost = atomic_exchange(&g_dropped, 0);
    if (lost)
      fo_warn(c->log, "%ld events reached no child: more in flight than the fan-out holds "
              "(%d ProxyOps, %d other events per communicator), or of no live communicator",
              lost, FO_OP_MAX, FO_TASK_MAX);
    atomic_store(&g_host_mask, NULL);
    unload_children();
  }
  pthread_mutex_unlock(&g_lock);
  ctx_free(c);
  return ncclSuccess;
}

/* ---- RAS (2.31+) ---------------------------------------------------------- */

/* A mask other than the one the fan-out wrote is in the host's int: RAS
 * set it for every rank, and a plugin alone would have it as its own. */
static void __attribute__((noinline)) take_ras_mask(int m) {
  if (atomic_flag_test_and_set_explicit(&g_mask_busy, memory_order_acquire)) return;
  if (atomic_load_explicit(&g_mask_seen, memory_order_relaxed) != m) {
    unsigned e = 1;
    while (e < FO_EPOCHS && atomic_load_explicit(&g_hot.epoch_mask[e], memory_order_relaxed) != m) e++;
    if (e == FO_EPOCHS) { /* a mask not seen yet: the next table, round robin */
      e = 1 + g_hot.epoch_next++ % (FO_EPOCHS - 1);
      for (int i = 0; i < g_nchild; i++) set_types(i, m, e);
      atomic_store_explicit(&g_hot.epoch_mask[e], m, memory_order_relaxed);
    }
    for (int i = 0; i < g_nchild; i++) __atomic_store_n(&g_child[i].mask, m, __ATOMIC_RELAXED);
    atomic_store_explicit(&g_hot.epoch, e, memory_order_release);
    update_rings();
    atomic_store_explicit(&g_mask_seen, m, memory_order_relaxed);
  }
  atomic_flag_clear_explicit(&g_mask_busy, memory_order_release);
}

/* Application-thread events: RAS's mask, and the rings' memory. */
static void tend(fo_ctx* c) {
  int* hm = atomic_load_explicit(&g_host_mask, memory_order_relaxed);
  if (hm) {
    int m = __atomic_load_n(hm, __ATOMIC_RELAXED);
    if (m != atomic_load_explicit(&g_mask_seen, memory_order_relaxed)) take_ras_mask(m);
  }
  ctx_tend(c);
  if (g_pxn) fo_ring_tend(&g_pxn->op, atomic_load_explicit(&g_rings, memory_order_relaxed) & FO_RING_OP);
}

/* ---- events ------------------------------------------------------------- */

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

static void __attribute__((noinline, cold)) disable(fo_ctx* c, int i, const char* call, ncclResult_t r) {
  unsigned bit = 1u << i;
  if (atomic_fetch_and(&c->active, ~bit) & bit)
    fo_warn(c->log, "'%s' returned error %d from %s on rank %d: disabled for this communicator",
            g_child[i].entry, (int)r, call, c->rank);
}

static inline fo_handle* ours(void* p) {
  fo_handle* h = p;
  return h && h->magic == FO_MAGIC ? h : NULL;
}

static inline void* map_parent(void* p, int i) {
  fo_handle* h = ours(p);
  if (!h) return p; /* NULL, or another process's (PXN): as the host gave it */
  return (h->sent & (1u << i)) ? h->h[i] : NULL;
}

static inline void* child_ctx(const fo_ctx* c, void* host_ctx, int i) {
  return c->foreign ? host_ctx : c->child_ctx[i];
}

/* Calls the children in `todo` with the event; writes their handles into w
 * and returns the children that gave one. `step` is set for a ProxyStep
 * under one of our ProxyOps (only a header and a step id to copy). */
static __attribute__((noinline)) unsigned start_children(int api, fo_ctx* c, void* host_ctx, fo_handle* w,
                                                          unsigned todo,
                                      const void* descr, uint64_t type, int step, int map) {
  unsigned sent = 0;
  fo_event ev;
  int widened = 0;
  const size_t native_bytes = step ? 32 : descr_size(api);
  while (todo) {
    const int i = __builtin_ctz(todo);
    todo &= todo - 1;
    const int v = g_child[i].version;
    fo_any_descr d;
    if (likely(v == api)) {
      memcpy(&d, descr, native_bytes);
    } else {
      if (!widened) {
        fo_widen(&ev, api, descr);
        widened = 1;
      }
      fo_narrow(&d, api, v, &ev);
    }
    if (likely(map)) { /* a PXN op's parent is the other process's */
      void** slots[2];
      int ns = fo_parent_slots(&d, v, type, slots);
      for (int s = 0; s < ns; s++) *slots[s] = map_parent(*slots[s], i);
    }
    void* h = NULL;
    ncclResult_t r = g_hot.fn[i].start(child_ctx(c, host_ctx, i), &h, (ncclProfilerEventDescr_v6_t*)(void*)&d);
    if (unlikely(r != ncclSuccess)) {
      disable(c, i, "startEvent", r);
      continue;
    }
    w->h[i] = h;
    if (h) sent |= 1u << i;
  }
  return sent;
}

/* A ProxyStep under one of our ProxyOps: its handle is the op slot's step
 * slot by step id. The step path, kept short. */
static inline __attribute__((always_inline)) ncclResult_t start_step(int api, void* context, void** eHandle,
                                                                    const void* descr, fo_handle* op) {
  fo_ctx* c = op->ctx;
  const ncclProfilerEventDescr_v4_t* hd = descr;
  const size_t hs = c->op.hsize;
  fo_handle* w = (fo_handle*)(void*)((char*)op + (1 + ((unsigned)hd->proxyStep.step & (FO_STEP_SLOTS - 1))) * hs);
  unsigned todo = want_of(op->epoch, __builtin_ctz(ncclProfileProxyStep)) &
                  atomic_load_explicit(&c->active, memory_order_relaxed);
  /* 2.23-2.27 start no step under a NULL ProxyOp handle. */
  if (api <= 4) todo &= op->sent;
  const unsigned offered = todo;
  unsigned sent = 0;
  if (likely(todo && !(todo & (todo - 1)) && !(todo & g_translated))) {
    /* One child, of the host's version: its header and step id, with the
     * parent its own op handle; field by field, not memcpy: the child
     * reads these fields at once, and a load from a wide (vector) store
     * just made stalls where a load from a store of its own width does
     * not. */
    const int i = __builtin_ctz(todo);
    fo_any_descr d;
    if (api >= 5) d.v6.type = ((const ncclProfilerEventDescr_v5_t*)descr)->type;
    else d.v4.type = hd->type;
    d.v4.parentObj = (op->sent & todo) ? op->h[i] : NULL;
    d.v4.rank = hd->rank;
    d.v4.proxyStep.step = hd->proxyStep.step;
    void* h = NULL;
    ncclResult_t r = g_hot.fn[i].start(child_ctx(c, context, i), &h, &d.v6);
    if (unlikely(r != ncclSuccess)) disable(c, i, "startEvent", r);
    else if (h) sent = todo;
    w->h[i] = h;
  } else if (todo) {
    sent = start_children(api, c, context, w, todo, descr, ncclProfileProxyStep, 1, 1);
  }
  w->offered = (uint8_t)offered;
  w->epoch = op->epoch;
  w->sent = (uint8_t)sent;
  /* Every release records step states only under a non-NULL op handle. */
  w->rec = (uint8_t)(sent & op->sent);
  *eHandle = offered ? w : NULL;
  return ncclSuccess;
}

/* Every start but a step under one of our ops. */
static __attribute__((noinline)) ncclResult_t start_other(int api, void* context, void** eHandle, void* descr,
                                                          uint64_t type) {
  const ncclProfilerEventDescr_v4_t* hd = descr;
  const int t = type_index(type);
  if (t < 0) return ncclSuccess;
  fo_ctx* c;
  /* PXN: another process's op, context and parent (never dereferenced). */
  const int pxn = type == ncclProfileProxyOp && hd->proxyOp.pid != g_pid;
  if (pxn) c = g_pxn;
  else c = ctx_lookup(context);
  if (!c) {
    atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
    return ncclSuccess;
  }
  fo_ring* ring;
  unsigned epoch;
  fo_handle* parent = pxn ? NULL : ours(hd->parentObj);
  if ((1ull << t) & TASK_TYPES) {
    tend(c);
    ring = &c->task;
    epoch = epoch_now();
  } else {
    ring = type == ncclProfileProxyOp ? &c->op : &c->misc;
    /* Under its parent's masks (a ProxyOp its task's, a KernelCh its
     * Coll's, a KernelPhase its KernelCh's), as the host gates it. */
    epoch = parent ? parent->epoch : epoch_now();
  }
  unsigned todo = want_of(epoch, t) & atomic_load_explicit(&c->active, memory_order_relaxed);
  if (api <= 4 && (type == ncclProfileColl || type == ncclProfileP2p)) {
    /* 2.23-2.27 start no Coll or P2p under a NULL Group handle. */
    todo &= parent ? parent->sent : 0u;
  } else if (api <= 2 && type == ncclProfileProxyOp && !pxn) {
    /* 2.23-2.25 give a task its mask only where they started its Coll or
     * P2p event: ops of a task a child was not offered carry no mask. */
    todo &= parent ? parent->offered : 0u;
  }
  if (!todo) return ncclSuccess;
  fo_handle* w = fo_ring_take(ring);
  if (!w) {
    atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
    return ncclSuccess;
  }
  w->offered = (uint8_t)todo;
  w->epoch = (uint8_t)epoch;
  unsigned sent = start_children(api, c, context, w, todo, descr, type, 0, !pxn);
  w->sent = (uint8_t)sent;
  w->rec = (uint8_t)sent;
  /* Non-NULL even if every child returned NULL: the children's events
   * that follow still need to know who was offered this one. */
  *eHandle = w;
  return ncclSuccess;
}

/* Inline in each version's table: a step under one of our ops straight
 * through, the rest out of line. */
static inline __attribute__((always_inline)) ncclResult_t fo_start(int api, void* context, void** eHandle,
                                                                  void* descr) {
  if (unlikely(!eHandle)) return ncclSuccess;
  *eHandle = NULL;
  if (unlikely(!descr)) return ncclSuccess;
  const ncclProfilerEventDescr_v4_t* hd = descr;
  const uint64_t type = api >= 5 ? ((const ncclProfilerEventDescr_v5_t*)descr)->type : hd->type;
  if (likely(type == ncclProfileProxyStep)) {
    fo_handle* op = ours(hd->parentObj);
    if (likely(op && op->kind == FO_KIND_OP)) return start_step(api, context, eHandle, descr, op);
  }
  return start_other(api, context, eHandle, descr, type);
}

/* States for several children, or for one of another version. */
static ncclResult_t __attribute__((noinline)) record_many(int api, fo_handle* w, unsigned todo, int state,
                                                          void* args) {
  while (todo) {
    const int i = __builtin_ctz(todo);
    todo &= todo - 1;
    fo_any_args buf;
    void* a;
    if (g_child[i].version == api) a = args; /* native: the host's args */
    else if (!fo_narrow_state(api, g_child[i].version, g_rccl, state, args, &buf, &a)) continue;
    ncclResult_t r = g_hot.fn[i].record(w->h[i], (ncclProfilerEventState_v6_t)state, a);
    if (unlikely(r != ncclSuccess)) disable(w->ctx, i, "recordEventState", r);
  }
  return ncclSuccess;
}

/* The common case inline and short (one child of the host's version:
 * nothing but the handle and the child's index kept across the call);
 * the rest out of line, so this path saves no other register. */
static inline ncclResult_t fo_record(int api, void* eHandle, int state, void* args) {
  fo_handle* w = ours(eHandle);
  if (unlikely(!w)) return ncclSuccess;
  const unsigned todo = w->rec & atomic_load_explicit(&w->ctx->active, memory_order_relaxed);
  if (unlikely((todo & (todo - 1)) | (todo & g_translated))) return record_many(api, w, todo, state, args);
  if (!todo) return ncclSuccess;
  const int i = __builtin_ctz(todo);
  ncclResult_t r = g_hot.fn[i].record(w->h[i], (ncclProfilerEventState_v6_t)state, args);
  if (unlikely(r != ncclSuccess)) disable(w->ctx, i, "recordEventState", r);
  return ncclSuccess;
}

static ncclResult_t __attribute__((noinline)) stop_many(fo_handle* w, unsigned todo) {
  while (todo) {
    const int i = __builtin_ctz(todo);
    todo &= todo - 1;
    ncclResult_t r = g_hot.fn[i].stop(w->h[i]);
    if (unlikely(r != ncclSuccess)) disable(w->ctx, i, "stopEvent", r);
  }
  if (w->kind != FO_KIND_STEP) fo_ring_put(w);
  return ncclSuccess;
}

static ncclResult_t fo_stop(void* eHandle) {
  fo_handle* w = ours(eHandle);
  if (unlikely(!w)) return ncclSuccess;
  const unsigned todo = w->sent & atomic_load_explicit(&w->ctx->active, memory_order_relaxed);
  if (unlikely(todo & (todo - 1))) return stop_many(w, todo);
  if (todo) {
    const int i = __builtin_ctz(todo);
    ncclResult_t r = g_hot.fn[i].stop(w->h[i]);
    if (unlikely(r != ncclSuccess)) disable(w->ctx, i, "stopEvent", r);
  }
  /* A ring slot is free again; its child handles stay until it is reused,
   * for children that start later with it as their parent. A step slot
   * belongs to its op's slot. */
  if (w->kind != FO_KIND_STEP) fo_ring_put(w);
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
