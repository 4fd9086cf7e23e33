/*
 * trace.c — the per-communicator trace: slot allocation, the op lifecycle and
 * the recording hot path (start, register, counter update, step handles,
 * stop). Everything here runs on the host's proxy progress threads, each
 * writing its own lane of the trace (slab.h), touches only memory allocated
 * by pt_trace_create(), takes no lock and makes no system call — but where a
 * thread writes a trace for the first time (claim_lane); readers synchronise
 * through the record seqlock (record.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef PT_DEBUG
#include <stdio.h>
#endif

#include "format/format.h"
#include "trace/clock.h"
#include "trace/metrics.h"
#include "trace/progress.h"
#include "trace/slab.h"
#include "trace/vmem.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- slot lists (slab.h): each lane's own, its writer only ---- */

static void list_push(pt_op* slab, pt_slot_list* l, uint32_t i) {
  pt_op* op = &slab[i];
  l->len++;
  op->next = PT_NO_SLOT;
  op->prev = l->tail;
  if (l->tail == PT_NO_SLOT) l->head = i;
  else slab[l->tail].next = i;
  l->tail = i;
}

static void list_unlink(pt_op* slab, pt_slot_list* l, uint32_t i) {
  const pt_op* op = &slab[i];
  l->len--;
  if (op->prev == PT_NO_SLOT) l->head = op->next;
  else slab[op->prev].next = op->next;
  if (op->next == PT_NO_SLOT) l->tail = op->prev;
  else slab[op->next].prev = op->prev;
}

static uint32_t list_pop(pt_op* slab, pt_slot_list* l) {
  const uint32_t i = l->head;
  if (i != PT_NO_SLOT) list_unlink(slab, l, i);
  return i;
}

/* The list of its lane a slot of this state is in (NULL: ACTIVE, DETACHED). */
static pt_slot_list* list_of(pt_lane* l, uint8_t state) {
  switch (state) {
    case PT_SLOT_FREE: return &l->free;
    case PT_SLOT_STARTED: return &l->started;
    case PT_SLOT_FINISHED:
    case PT_SLOT_IGNORED: return &l->done;
    default: return NULL;
  }
}

static inline uint32_t index_of(const pt_trace* t, const pt_op* op) {
  return (uint32_t)(op - t->slab);
}

/* ---- the process-wide memory budget (slab.h) ---- */

static _Atomic uint64_t budget_bytes = (uint64_t)PT_DEFAULT_MAX_MEMORY_MB << 20;
static _Atomic uint64_t charged_bytes;

void pt_trace_set_memory_budget(uint64_t bytes) { atomic_store_explicit(&budget_bytes, bytes, RLX); }
uint64_t pt_trace_memory_budget(void) { return atomic_load_explicit(&budget_bytes, RLX); }
uint64_t pt_trace_memory_charged(void) { return atomic_load_explicit(&charged_bytes, RLX); }

#define PT_CHUNK_BYTES ((uint64_t)PT_CHUNK_SLOTS * PT_SLOT_BYTES)

/* One more chunk of slots for t, if the budget has room: one atomic add. */
static int charge_chunk(void) {
  const uint64_t before = atomic_fetch_add_explicit(&charged_bytes, PT_CHUNK_BYTES, RLX);
  if (LIKELY(before + PT_CHUNK_BYTES <= atomic_load_explicit(&budget_bytes, RLX))) return 1;
  atomic_fetch_sub_explicit(&charged_bytes, PT_CHUNK_BYTES, RLX);
  return 0;
}

static inline uint32_t slots_used(uint64_t w) { return (uint32_t)w; }
static inline uint32_t slots_charged(uint64_t w) { return (uint32_t)(w >> 32); }

/* ---- lanes (slab.h) ---- */

/* The calling thread, as a lane's owner: its thread pointer (one register
 * read, no call; unique among live threads), else pthread_self(). */
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer) && (defined(__x86_64__) || defined(__aarch64__))
#define PT_THREAD_POINTER 1
#endif
#endif
static inline uintptr_t self_thread(void) {
#ifdef PT_THREAD_POINTER
  return (uintptr_t)__builtin_thread_pointer();
#else
  return (uintptr_t)pthread_self();
#endif
}

/* Sets up lane i for its writer: empty lists, an id table, a reset ring.
 * 0, or -1 when the id table cannot be reserved. */
static int lane_init(pt_trace* t, int i) {
  pt_lane* l = t->lane[i];
  l->trace = t;
  l->index = i;
  l->free = l->started = l->done = (pt_slot_list){PT_NO_SLOT, PT_NO_SLOT, 0};
  if (pt_idmap_init(&l->ids, t->nslots) != 0) return -1;
  pt_vmem_lead_init(&l->ids_lead, sizeof(pt_idmap_entry), PT_IDS_PREFAULT_MIN, PT_IDS_PREFAULT_MIN,
                    PT_IDS_PREFAULT_MAX);
  l->metrics = i == 0 ? t->metrics : NULL;
  for (int k = 0; k < PT_FINISHED_RING; k++) pt_rec_reset(&l->ring[k]);
  return 0;
}

/* The calling thread's lane of t, claimed at its first op start there: a
 * free owner entry taken with a compare-and-swap, set up, then published to
 * readers. Once per thread and trace (an mmap for its id table), never on
 * the step path. NULL when every lane is taken or the table cannot be had
 * (the op is dropped, counted). */
__attribute__((noinline, cold)) static pt_lane* claim_lane(pt_trace* t, uintptr_t self) {
  for (int i = 0; i < PT_MAX_LANES; i++) {
    uintptr_t owner = atomic_load_explicit(&t->owner[i], memory_order_acquire);
    if (owner == 0 && atomic_compare_exchange_strong_explicit(&t->owner[i], &owner, self, memory_order_acq_rel,
                                                              memory_order_acquire)) {
      pt_lane* l = t->lane[i];
      l->writer_tid = (int)gettid();
      if (pthread_getname_np(pthread_self(), l->writer_name, sizeof l->writer_name) != 0) l->writer_name[0] = 0;
      /* Lane 0 was set up with the trace; another, now, then published.
       * One whose id table could not be had stays taken and unready: its
       * thread's ops are dropped. */
      if (i > 0) {
        if (lane_init(t, i) != 0) return NULL;
        atomic_fetch_or_explicit(&t->ready, 1u << i, memory_order_release);
      }
      return l;
    }
    if (owner == self) return (pt_trace_lanes_ready(t) >> i & 1) ? t->lane[i] : NULL;
  }
  return NULL;
}

/* The lane of the calling thread: lane 0 is the first writer's (the
 * communicator's own proxy thread, as a rule), found with one load. */
static inline pt_lane* lane_of_caller(pt_trace* t) {
  const uintptr_t self = self_thread();
  if (LIKELY(atomic_load_explicit(&t->owner[0], RLX) == self)) return t->lane[0];
  return claim_lane(t, self);
}

/* ---- lifecycle ---- */

void pt_trace_config_default(pt_trace_config* cfg) {
  cfg->max_ops = PT_DEFAULT_MAX_OPS;
  cfg->metrics = PT_METRICS_OFF;
}

int pt_trace_create(pt_trace** out, const pt_trace_config* cfg_in, int my_rank) {
  pt_trace_config cfg;
  if (cfg_in) cfg = *cfg_in;
  else pt_trace_config_default(&cfg);
  *out = NULL;
  if (cfg.max_ops < PT_MIN_MAX_OPS || cfg.max_ops > PT_MAX_MAX_OPS) {
    errno = EINVAL;
    return -1;
  }
  pt_clock_init();
  pt_trace* t = calloc(1, sizeof *t);
  if (!t) return -1;
  pt_clock_lock(); /* the clock's source is fixed while a trace exists */
  const size_t bytes = (size_t)cfg.max_ops * PT_SLOT_BYTES;
  t->slab = pt_vmem_reserve(bytes); /* zeroed, page-aligned, backed only where written */
  t->more = pt_vmem_reserve((PT_MAX_LANES - 1) * sizeof(pt_lane)); /* a lane's pages: once claimed */
  t->lane[0] = &t->lane0;
  for (int i = 1; i < PT_MAX_LANES && t->more; i++) t->lane[i] = &t->more[i - 1];
  /* Handles keep generation bits above the address (slab.h): a slab the
   * system placed that high cannot carry them. */
  const int tags_fit = t->slab && (((uintptr_t)t->slab + bytes - 1) & ~PT_ADDR_MASK) == 0;
  if (!tags_fit || !t->more) {
    pt_vmem_release(t->slab, bytes);
    pt_vmem_release(t->more, (PT_MAX_LANES - 1) * sizeof(pt_lane));
    free(t);
    errno = ENOMEM;
    return -1;
  }
  t->nslots = cfg.max_ops;
  /* pt_trace_prefault populates nothing before it is called */
  pt_vmem_lead_init(&t->slab_lead, PT_SLOT_BYTES, PT_PREFAULT_MIN, PT_CHUNK_SLOTS, PT_PREFAULT_MAX);
  PT_STORE(t->my_rank, my_rank);
  t->progress = pt_progress_create(t); /* without it, only the proxy ops are traced */
  if (cfg.metrics && !(t->metrics = pt_metrics_create(cfg.metrics == PT_METRICS_CHANNELS))) {
    pt_trace_destroy(t);
    errno = ENOMEM;
    return -1;
  }
  /* Lane 0 is set up now, so a trace that one thread writes (the rule)
   * makes no system call at its first op; its owner is that thread, from
   * its first op start (pt_op_start). */
  if (lane_init(t, 0) != 0) {
    pt_trace_destroy(t);
    errno = ENOMEM;
    return -1;
  }
  atomic_store_explicit(&t->ready, 1u, memory_order_release);
  *out = t;
  return 0;
}

void pt_trace_destroy(pt_trace* t) {
  if (!t) return;
  pt_metrics_destroy(t->metrics);
  pt_progress_destroy(t->progress);
  pt_trace_tags_free(t);
  for (uint32_t m = PT_LOAD(t->ready); m; m &= m - 1) pt_idmap_free(&t->lane[__builtin_ctz(m)]->ids);
  atomic_fetch_sub_explicit(&charged_bytes, (uint64_t)slots_charged(PT_LOAD(t->slots)) * PT_SLOT_BYTES, RLX);
  pt_vmem_release(t->slab, (size_t)t->nslots * PT_SLOT_BYTES);
  pt_vmem_release(t->more, (PT_MAX_LANES - 1) * sizeof(pt_lane));
  free(t);
  pt_clock_unlock();
}

/* The pages of the next slots and of the next op id table entries (idmap.h),
 * populated ahead of the recording thread: its first write to a fresh slot
 * or bucket then takes no page fault. Pages stay populated until the trace
 * is destroyed, as the slots in them do. Id table pages are not touched
 * where the kernel cannot populate them: their first byte may be any field
 * of an entry, which the proxy thread writes plainly. */
static int prefault(pt_trace* t) {
  int rc = pt_vmem_lead_populate(&t->slab_lead, t->slab, pt_trace_slots_used(t), t->nslots, 1);
  for (uint32_t m = pt_trace_lanes_ready(t); m; m &= m - 1) {
    pt_lane* l = t->lane[__builtin_ctz(m)];
    if (pt_vmem_lead_populate(&l->ids_lead, l->ids.e, pt_idmap_top(&l->ids), l->ids.mask + 1, 0) < 0) rc = -1;
  }
  return rc < 0 ? -1 : 0;
}

int pt_trace_prefault(pt_trace* t) {
  /* One thread at a time; another that comes meanwhile (a dumper thread
   * ending while the init of a next first communicator populates its own)
   * has nothing to add. */
  if (atomic_exchange_explicit(&t->prefaulting, 1, memory_order_acquire)) return 0;
  const int rc = prefault(t);
  atomic_store_explicit(&t->prefaulting, 0, memory_order_release);
  return rc;
}

/* ---- counters of refused events ---- */

/* Events that cannot name their trace — a pointer that is no handle of ours
 * (it must not be dereferenced), a foreign process's context — are counted
 * process-wide and reported by every trace. */
static _Atomic uint64_t global_drops[PT_DROP_NUM];

void pt_trace_count(pt_trace* t, pt_drop_reason r) {
  if ((unsigned)r >= PT_DROP_NUM) return;
  atomic_fetch_add_explicit(t ? &t->drops[r] : &global_drops[r], 1, RLX);
}

const char* pt_drop_name(pt_drop_reason r) {
#define NAME(i, name) [i] = name,
  static const char* const names[PT_DROP_NUM] = {PT_FORMAT_DROPS(NAME)}; /* src/format/format.h */
#undef NAME
  _Static_assert(PT_DROP_NUM == PT_FORMAT_DROP_COUNT, "one list of drop reasons");
  return (unsigned)r < PT_DROP_NUM ? names[r] : "?";
}

void pt_trace_drops(const pt_trace* t, pt_drop_stats* out) {
  for (int i = 0; i < PT_DROP_NUM; i++)
    out->n[i] = atomic_load_explicit(&t->drops[i], RLX) + atomic_load_explicit(&global_drops[i], RLX);
}

static void count_bad_handle(void) { pt_trace_count(NULL, PT_DROP_BAD_HANDLE); }

/* Of every ready lane, as one: read by the watchdog and the dumps. */
uint32_t pt_trace_active_ops(const pt_trace* t) {
  uint32_t n = 0;
  for (uint32_t m = pt_trace_lanes_ready(t); m; m &= m - 1) n += PT_LOAD(t->lane[__builtin_ctz(m)]->n_active);
  return n;
}
uint32_t pt_trace_waiting_ops(const pt_trace* t) {
  uint32_t n = 0;
  for (uint32_t m = pt_trace_lanes_ready(t); m; m &= m - 1) {
    const pt_lane* l = t->lane[__builtin_ctz(m)];
    n += PT_LOAD(l->n_active) - PT_LOAD(l->n_detached);
  }
  return n;
}
uint64_t pt_trace_last_progress(const pt_trace* t) {
  uint64_t last = 0;
  for (uint32_t m = pt_trace_lanes_ready(t); m; m &= m - 1) {
    const uint64_t p = PT_LOAD(t->lane[__builtin_ctz(m)]->t_progress);
    if (p > last) last = p;
  }
  return last;
}
uint32_t pt_trace_id_buckets(const pt_trace* t) {
  uint32_t n = 0;
  for (uint32_t m = pt_trace_lanes_ready(t); m; m &= m - 1) n += PT_LOAD(t->lane[__builtin_ctz(m)]->n_buckets);
  return n;
}
int pt_trace_rank(const pt_trace* t) { return PT_LOAD(t->my_rank); }

void pt_trace_learn_rank(pt_trace* t, int rank) {
  if (PT_LOAD(t->my_rank) < 0 && rank >= 0) PT_STORE(t->my_rank, rank);
}
size_t pt_op_slot_bytes(void) { return sizeof(pt_op); }

size_t pt_trace_reserved_bytes(const pt_trace* t) {
  size_t n = sizeof *t + (size_t)slots_charged(PT_LOAD(t->slots)) * sizeof(pt_op);
  for (uint32_t m = pt_trace_lanes_ready(t); m; m &= m - 1) {
    const int i = __builtin_ctz(m); /* lane 0 is in sizeof *t */
    n += (i ? sizeof(pt_lane) : 0) + pt_idmap_bytes(&t->lane[i]->ids);
  }
  return n;
}

uint32_t pt_trace_slots_used(const pt_trace* t) {
  return slots_used(atomic_load_explicit(&((pt_trace*)t)->slots, memory_order_acquire));
}

/* ---- one writer per lane (debug builds) ---- */

/* The record sequence, the lane's slot lists, its id table and counters are
 * load-then-store: correct only while one thread writes a lane — the thread
 * that claimed it at its first op start; every later event of an op comes
 * from the thread that started it (the proxy thread that runs the op,
 * docs/plugin.md, "Which thread writes which trace"). Debug builds (PT_DEBUG:
 * every sanitizer build, and DEBUG=1) check it on every recording call: an
 * event of an op from another thread than its lane's aborts the process
 * with both threads named. Dumps are readers and are not checked. Release
 * builds compile none of it. */
#ifdef PT_DEBUG
__attribute__((noinline, cold, noreturn)) static void writer_violation(const pt_lane* l) {
  char name[16] = "?";
  pthread_getname_np(pthread_self(), name, sizeof name);
  fprintf(stderr,
          "proxytrace: trace of rank %d written by thread %ld (%s), but thread %d (%s) writes it "
          "(lane %d, which started the op): one thread writes each lane of a trace (docs/plugin.md)\n",
          PT_LOAD(l->trace->my_rank), (long)gettid(), name, l->writer_tid, l->writer_name, l->index);
  abort();
}

__attribute__((noinline)) static void pt_writer_check(const pt_lane* l) {
  const pt_trace* t = l->trace;
  if (atomic_load_explicit(&t->owner[l->index], memory_order_acquire) != self_thread())
    writer_violation(l);
}
#define WRITER(l) pt_writer_check(l)
#else
#define WRITER(l) ((void)0)
#endif

/* ---- handles (slab.h) ---- */

static inline uintptr_t tag_of(uint32_t gen) {
  return (uintptr_t)(gen & PT_TAG_MASK) << PT_TAG_SHIFT;
}

static inline pt_handle op_handle(const pt_op* op) {
  const uintptr_t off = (op->gen >> PT_OFF_GEN_SHIFT) & PT_OP_OFF_MASK;
  return (pt_handle)(((uintptr_t)op + off) | tag_of(op->gen));
}

static inline pt_handle step_handle(const pt_op* op, const pt_step_slot* s) {
  return (pt_handle)((uintptr_t)s | tag_of(op->gen));
}

/* Bit 63 set: a Coll/P2p task handle (trace.h) or no handle of ours. */
static inline int not_ours_high(pt_handle h) { return ((uintptr_t)h >> (8 * sizeof h - 1)) != 0; }

static inline pt_op* slot_of(pt_handle h) {
  return (pt_op*)((uintptr_t)h & PT_ADDR_MASK & ~(uintptr_t)(PT_SLOT_BYTES - 1));
}

pt_handle_kind_t pt_handle_kind(pt_handle h) {
  if (pt_is_task_handle(h)) return PT_HANDLE_TASK;
  /* Small integers (and NULL), and anything else with bit 63 set (no op or
   * step handle has it: slab.h), are no slot: never dereferenced. */
  if (((uintptr_t)h & PT_ADDR_MASK) < PT_SLOT_BYTES || not_ours_high(h)) return PT_HANDLE_INVALID;
  uintptr_t off = (uintptr_t)h & (PT_SLOT_BYTES - 1);
  if (off <= PT_OP_OFF_MASK) return PT_HANDLE_OP;
  if (off >= PT_STEP_BASE && (off - PT_STEP_BASE) % sizeof(pt_step_slot) == 0)
    return PT_HANDLE_STEP;
  return PT_HANDLE_INVALID;
}

/* The trace of the slot a stale handle names, for its count: NULL when
 * the slot was never claimed by a lane (a handle the plugin never gave,
 * or one from a slab area no lane has reached; counted process-wide). */
static pt_trace* stale_trace(const pt_op* op) {
  const pt_lane* ln = op->lane;
  return ln ? ln->trace : NULL;
}

/* The live op a handle names, or NULL (counted). */
static inline pt_op* live_op(pt_handle h) {
  if (UNLIKELY(!h)) return NULL;
  if (UNLIKELY(((uintptr_t)h & (PT_SLOT_BYTES - 1)) > PT_OP_OFF_MASK ||
               ((uintptr_t)h & PT_ADDR_MASK) < PT_SLOT_BYTES || not_ours_high(h))) {
    count_bad_handle(); /* a step or task handle, or no handle at all */
    return NULL;
  }
  pt_op* op = slot_of(h);
  if (UNLIKELY(h != op_handle(op) || PT_LOAD(op->state) == PT_SLOT_FREE)) {
    pt_trace_count(stale_trace(op), PT_DROP_STALE_HANDLE);
    return NULL;
  }
  WRITER(op->lane);
  return op;
}

static inline void set_state(pt_op* op, uint8_t s) {
  const uint32_t w = pt_rec_write_begin(&op->rec);
  PT_STORE(op->state, s);
  pt_rec_write_end(&op->rec, w);
}

/* The host is done with the slot (stop): back to its lane's free list, last. */
static void free_slot(pt_op* op) {
  pt_lane* ln = op->lane;
  pt_op* slab = ln->trace->slab;
  pt_slot_list* l = list_of(ln, PT_LOAD(op->state));
  if (l) list_unlink(slab, l, index_of(ln->trace, op));
  set_state(op, PT_SLOT_FREE);
  list_push(slab, &ln->free, index_of(ln->trace, op));
}

/* A slot never used before, for lane l, charged to the budget a chunk at a
 * time. Lanes share the slab's high-water mark: the slot and, where it
 * opens a chunk, the charge are taken with one compare-and-swap of both
 * (a charge made for a swap that lost is given back). Only where a lane
 * grows: while it has PT_REUSE_MIN slots free, a new op takes one of them. */
static uint32_t fresh_slot(pt_trace* t, pt_lane* l) {
  uint64_t w = PT_LOAD(t->slots);
  for (;;) {
    const uint32_t i = slots_used(w);
    uint32_t charged = slots_charged(w);
    if (i >= t->nslots) return PT_NO_SLOT;
    const int charge = i >= charged;
    if (charge) {
      if (!charge_chunk()) return PT_NO_SLOT;
      charged += PT_CHUNK_SLOTS;
    }
    /* release: readers that acquire the count see the slots below it zeroed or set up */
    if (atomic_compare_exchange_weak_explicit(&t->slots, &w, (uint64_t)(i + 1) | (uint64_t)charged << 32,
                                              memory_order_release, RLX)) {
      t->slab[i].lane = l;
      return i;
    }
    if (charge) atomic_fetch_sub_explicit(&charged_bytes, PT_CHUNK_BYTES, RLX);
  }
}

/* A slot for a new op: a fresh one while few are free (memory follows the
 * ops in flight, slab.h), else the oldest free one; when neither is left
 * (the cap or the budget reached, nothing free), one whose record no dump
 * needs (finished or ignored, never stopped), else the op started longest
 * ago and never registered (NCCL starts ProxyOps for CollNet and
 * copy-engine transports that it never progresses nor stops) — whatever its
 * age, so such ops never crowd out network ops. Registered ops are never
 * taken: a stuck op is what a dump is for. */
static uint32_t take_slot(pt_trace* t, pt_lane* l) {
  pt_op* slab = t->slab;
  uint32_t i = PT_NO_SLOT;
  if (LIKELY(l->free.len >= PT_REUSE_MIN)) i = list_pop(slab, &l->free);
  if (i == PT_NO_SLOT) i = fresh_slot(t, l);
  if (i == PT_NO_SLOT) i = list_pop(slab, &l->free);
  if (LIKELY(i != PT_NO_SLOT)) return i;
  i = list_pop(slab, &l->done);
  if (i == PT_NO_SLOT) i = list_pop(slab, &l->started);
  if (i != PT_NO_SLOT) pt_trace_count(t, PT_DROP_OPS_RECLAIMED);
  return i;
}

/* ---- recording ---- */

pt_handle pt_op_start(pt_trace* t, const pt_op_info* info) {
  pt_lane* l = lane_of_caller(t);
  const uint32_t idx = UNLIKELY(!l) ? PT_NO_SLOT : take_slot(t, l);
  if (UNLIKELY(idx == PT_NO_SLOT)) {
    /* Every slot handed out holds a registered op, and no fresh one was
     * given: the cap is reached, or below it the budget is spent — or the
     * calling thread has no lane (PT_MAX_LANES threads write the trace). A
     * lane reclaims only its own slots: another lane's are another
     * thread's. */
    pt_trace_count(t, PT_DROP_OPS_DROPPED);
    if (l && pt_trace_slots_used(t) < t->nslots) pt_trace_count(t, PT_DROP_OVER_BUDGET);
    return NULL;
  }
  pt_op* op = &t->slab[idx];
  op->gen++; /* every handle of the slot's previous op is stale from here */
  PT_STORE(op->step_driven, info->step_driven == PT_STEPS_NO_DIAG ? PT_STEPS_NO_DIAG : info->step_driven ? 1 : 0);
  pt_rec* r = &op->rec;
  const uint32_t w = pt_rec_write_begin(r);
  PT_STORE(r->op_type, info->is_send ? PT_OP_SEND : PT_OP_RECV);
  PT_STORE(r->last_kind, PT_CNT_UNINITIALIZED);
  PT_STORE(r->window, 0);
  PT_STORE(r->origin, (uint8_t)info->origin);
  PT_STORE(r->channel, info->channel);
  PT_STORE(r->nsteps, info->nsteps);
  PT_STORE(r->peer, info->peer);
  PT_STORE(r->nbytes, info->nbytes);
  PT_STORE(r->comm_hash, info->comm_hash);
  PT_STORE(r->op_count, info->op_count);
  PT_STORE(r->op_id, -1);
  PT_STORE(r->p2p_seq, info->p2p_seq);
  PT_STORE(r->func_idx, info->func_idx);
  PT_STORE(r->protocol, info->protocol);
  PT_STORE(r->pattern, info->pattern);
  PT_STORE(r->total_bytes, info->total_bytes);
  PT_STORE(r->chunk_size, info->chunk_size);
  PT_STORE(r->tag_ref, info->tag_ref);
  PT_UNROLL for (int k = 0; k < PT_CNT_NUM; k++) PT_STORE(r->counters[k], 0);
  PT_STORE(r->counters[PT_CNT_FIFO_SZ_OR_HEAD_CACHE], -1);
  PT_STORE(r->t_create, pt_ticks()); /* start time until registration */
  PT_STORE(r->t_last, 0);
  PT_STORE(r->t_posted, 0);
  PT_STORE(r->t_kernel, 0);
  PT_STORE(r->t_progress, 0);
  PT_UNROLL for (int s = 0; s < PT_NCCL_STEPS; s++) PT_STORE(op->steps[s].state, 0);
  PT_STORE(op->state, PT_SLOT_STARTED);
  pt_rec_write_end(r, w);
  list_push(t->slab, &l->started, idx);
  return op_handle(op);
}

/* Op ids count per (commHash, opCount) in the lane's own table (idmap.h):
 * a trace one thread writes numbers its ops as legacy does; where another
 * thread runs some of a communicator's ops (PXN), its ops count in its
 * lane, so a send it runs and a receive of the same opCount may share an
 * id — records told apart by direction, both printed. */
void pt_op_register(pt_handle h) {
  pt_op* op = live_op(h);
  if (!op) return;
  pt_lane* l = op->lane;
  pt_trace* t = l->trace;
  if (UNLIKELY(PT_LOAD(op->state) != PT_SLOT_STARTED)) {
    pt_trace_count(t, PT_DROP_BAD_STATE); /* registered twice */
    return;
  }
  pt_rec* r = &op->rec;
  list_unlink(t->slab, &l->started, index_of(t, op));
  if (PT_LOAD(r->nsteps) <= 0) {
    /* Legacy ignores nSteps == 0 but hands out its id anyway, so later
     * updates land on another op (bug 5). Here nothing is registered and the
     * handle's updates are dropped. */
    set_state(op, PT_SLOT_IGNORED);
    list_push(t->slab, &l->done, index_of(t, op));
    pt_trace_count(t, PT_DROP_ZERO_STEPS);
    return;
  }
  int64_t id = pt_idmap_acquire(&l->ids, PT_LOAD(r->comm_hash), PT_LOAD(r->op_count));
  const uint64_t now = pt_ticks();
  const uint32_t w = pt_rec_write_begin(r);
  PT_STORE(r->op_id, (int32_t)id);
  PT_STORE(r->t_create, now);
  PT_STORE(op->state, PT_SLOT_ACTIVE);
  pt_rec_write_end(r, w);
  PT_STORE(l->n_active, PT_LOAD(l->n_active) + 1);
  PT_STORE(l->t_progress, now); /* a new op: the stall clock starts here */
  PT_STORE(l->n_buckets, l->ids.buckets);
  if (l->metrics) pt_metrics_op_begin(l->metrics, op, now);
  else if (t->metrics) pt_metrics_unmeasured_add(t->metrics); /* another lane: not measured (metrics.h) */
}

/* DONE reached nSteps: freeze the record into the lane's ring and drop it
 * from the active set; its id bucket goes when it was the bucket's last
 * record. */
__attribute__((noinline, cold)) static void complete(pt_op* op) {
  pt_lane* l = op->lane;
  if (op->mop) pt_metrics_op_end(l->metrics, op, pt_ticks());
  pt_rec_view v;
  pt_rec_to_view(&op->rec, &v);
  uint64_t head = PT_LOAD(l->ring_head);
  pt_rec* e = &l->ring[head % PT_FINISHED_RING];
  const uint32_t w = pt_rec_write_begin(e);
  pt_rec_from_view(e, &v);
  pt_rec_write_end(e, w);
  atomic_store_explicit(&l->ring_head, head + 1, memory_order_release);
  set_state(op, PT_SLOT_FINISHED);
  list_push(l->trace->slab, &l->done, index_of(l->trace, op));
  pt_idmap_release(&l->ids, v.comm_hash, v.op_count);
  PT_STORE(l->n_active, PT_LOAD(l->n_active) - 1);
  PT_STORE(l->n_buckets, l->ids.buckets);
}

static inline int is_progress_counter(unsigned kind) {
  return kind == PT_CNT_POSTED || kind == PT_CNT_RECEIVED || kind == PT_CNT_TRANSMITTED ||
         kind == PT_CNT_DONE;
}

/* One counter update on an active op (kind already checked), from `old`,
 * the counter's value now, stamped `now`; `sent` also stamps sendT (the
 * isend that took a stock send step). Inlined into pt_op_update, the
 * hottest entry point, and into each stock step event with its kind and
 * flags constant, so each gets only the code its update needs. */
static inline __attribute__((always_inline)) void update_at(pt_op* op, unsigned kind, int64_t old,
                                                            int64_t value, unsigned flags,
                                                            uint64_t now, int sent) {
  pt_rec* r = &op->rec;
  const int store = !(flags & PT_FLAG_COUNTER_SKIP);
  const uint32_t w = pt_rec_write_begin(r);
  if (store) {
    if (is_progress_counter(kind) && old != value) {
      PT_STORE(r->t_progress, now);
      PT_STORE(op->lane->t_progress, now); /* what the stall watchdog reads (of every lane) */
    }
    PT_STORE(r->counters[kind], value);
    PT_STORE(r->t_last, now);
    PT_STORE(r->last_kind, (uint8_t)kind);
  }
  if (flags & PT_FLAG_TIMESTAMP) {
    if (kind == PT_CNT_POSTED) PT_STORE(r->t_posted, now);
    else if (kind == PT_CNT_KERNEL_COPY_READY) PT_STORE(r->t_kernel, now);
  }
  if (sent) PT_STORE(r->t_kernel, now);
  pt_rec_write_end(r, w);
  if (op->mop && store && ((PT_M_KINDS >> kind) & 1))
    pt_metrics_counter(op->lane->metrics, op, kind, old, value, now);
  if (store && kind == PT_CNT_DONE && value == (int64_t)PT_LOAD(r->nsteps)) complete(op);
}

/* An RCCL ProxyDiag update. RCCL reports each poll of a waiting op as a
 * burst of counters emitted back to back (send: RECV_TAIL, TAIL_OR_HEAD,
 * FIFO_SZ; recv: TAIL_OR_HEAD, FIFO_SZ — spec rccl-proxytrace.md §2.4). The
 * burst's first update reads the clock; the rest reuse its time,
 * nanoseconds apart, saving most clock reads on the busiest path. Only
 * lastT is affected, and only by those ns. */
static inline __attribute__((always_inline)) void update(pt_op* op, unsigned kind, int64_t value,
                                                         unsigned flags) {
  pt_rec* r = &op->rec;
  const int same_poll = !(flags & (PT_FLAG_COUNTER_SKIP | PT_FLAG_TIMESTAMP)) &&
                        (kind == PT_CNT_FIFO_SZ_OR_HEAD_CACHE ||
                         (kind == PT_CNT_TAIL_OR_HEAD && PT_LOAD(r->op_type) == PT_OP_SEND));
  uint64_t now = same_poll ? PT_LOAD(r->t_last) : 0;
  if (!now) now = pt_ticks();
  update_at(op, kind, PT_LOAD(r->counters[kind]), value, flags, now, 0);
}

/* The active op a handle names, counting why not otherwise. */
static inline pt_op* active_op(pt_handle h) {
  pt_op* op = live_op(h);
  if (UNLIKELY(!op)) return NULL;
  if (UNLIKELY(PT_LOAD(op->state) != PT_SLOT_ACTIVE)) {
    /* Not registered or stopped before completing: counted. Ignored (nSteps
     * 0) or complete: nothing was lost — stock NCCL 2.23-2.26 send the
     * ProxyOp SendDone state after the last step stop has completed the op,
     * and a count here would make every healthy dump report refusals. */
    const uint8_t st = PT_LOAD(op->state);
    if (st != PT_SLOT_IGNORED && st != PT_SLOT_FINISHED)
      pt_trace_count(pt_op_trace(op), PT_DROP_UNTRACKED);
    return NULL;
  }
  return op;
}

void pt_op_update(pt_handle h, unsigned kind, int64_t value, unsigned flags) {
  pt_op* op = active_op(h);
  if (UNLIKELY(!op)) return;
  if (UNLIKELY(kind >= PT_CNT_NUM)) {
    pt_trace_count(pt_op_trace(op), PT_DROP_BAD_COUNTER);
    return;
  }
  if (UNLIKELY(PT_LOAD(op->step_driven) == PT_STEPS_NO_DIAG)) return; /* the host's ProxyDiag is not trusted */
  update(op, kind, value, flags);
}

/* ---- stock NCCL: counters from step events and ProxyOp states ---- */

/* The status rules compare POSTED with DONE + NCCL_STEPS, in raw steps.
 * Stock NCCL 2.24+ count a step-driven op in transfers of sliceSteps raw
 * steps, so its window is NCCL_STEPS / sliceSteps transfers — 4 for ring
 * all-reduce, all-gather and reduce-scatter (sliceSteps NCCL_STEPS/4 = 2),
 * 8 for the rest (sliceSteps 1; v2.28.9-1 src/include/collectives.h:17-26)
 * — and no descriptor field says sliceSteps. The window is learnt from the
 * widest POSTED - DONE gap seen: up to 4 it is 4, beyond it 8. A stuck
 * all-reduce send with a full window of 4 then reads WAITING_GPU, as NCCL's
 * own rule in raw steps says, not POSTING. */
static inline __attribute__((always_inline)) void learn_window(pt_op* op, int64_t posted) {
  int64_t gap; /* DONE is whatever the host last set: the difference may not fit */
  if (__builtin_sub_overflow(posted, PT_LOAD(op->rec.counters[PT_CNT_DONE]), &gap))
    gap = posted > 0 ? INT64_MAX : INT64_MIN;
  const uint8_t w = gap > PT_NCCL_STEPS / 2 ? PT_NCCL_STEPS : PT_NCCL_STEPS / 2;
  if (w > PT_LOAD(op->rec.window)) PT_STORE(op->rec.window, w);
}

/* Step-driven counters only move up: NCCL 2.24-2.26 stop the wrong step
 * handle in the receive loop (NVIDIA/nccl#1658) and 2.23-2.26 report the
 * same progress through ProxyOp states and step events both. */
static inline __attribute__((always_inline)) void advance(pt_op* op, unsigned kind, int64_t value,
                                                          unsigned flags) {
  const int64_t old = PT_LOAD(op->rec.counters[kind]);
  if (value > old) {
    if (kind == PT_CNT_POSTED) learn_window(op, value);
    update_at(op, kind, old, value, flags, pt_ticks(), 0);
  }
}

/* The steps done once a step slot's step is: its full step number + 1.
 * Slots keep 16 bits, and every step in flight is within NCCL_STEPS of the
 * DONE counter. Saturates: DONE is whatever the host last set (a ProxyDiag
 * update may set it to anything), and the sum must stay defined. */
static inline int64_t steps_through(const pt_op* op, const pt_step_slot* s) {
  const int64_t done = PT_LOAD(op->rec.counters[PT_CNT_DONE]);
  const int64_t ahead = (int16_t)(uint16_t)(PT_LOAD(s->step) - (uint16_t)done) + 1;
  int64_t n;
  if (__builtin_add_overflow(done, ahead, &n)) n = ahead > 0 ? INT64_MAX : INT64_MIN;
  return n;
}

/* The network took a send: legacy's KERNEL_COPY_READY timestamp (sendT),
 * always, and TRANSMITTED where it moves up — one clock read, one write. */
static inline __attribute__((always_inline)) void isend_accepted(pt_op* op, int64_t transmitted,
                                                                 uint64_t now) {
  const int64_t old = PT_LOAD(op->rec.counters[PT_CNT_TRANSMITTED]);
  update_at(op, PT_CNT_TRANSMITTED, old, transmitted, transmitted > old ? 0 : PT_FLAG_COUNTER_SKIP,
            now, 1);
}

void pt_op_progress(pt_handle h, int state, int64_t steps, int64_t trans_size) {
  pt_op* op = active_op(h);
  if (!op) return;
  if (op->mop && trans_size >= 0) pt_metrics_size(op->lane->metrics, op, trans_size, 1);
  switch (state) {
    case 0: advance(op, PT_CNT_POSTED, steps, PT_FLAG_TIMESTAMP); return;       /* SendPosted */
    case 1: advance(op, PT_CNT_KERNEL_COPY_READY, steps, 0); return;            /* SendRemFifoWait */
    case 2: isend_accepted(op, steps, pt_ticks()); return;                      /* SendTransmitted */
    case 3: case 7: advance(op, PT_CNT_DONE, steps, 0); return;                 /* Send/RecvDone */
    case 4: advance(op, PT_CNT_POSTED, steps, 0); return;                       /* RecvPosted */
    case 5: advance(op, PT_CNT_RECEIVED, steps, 0); return;                     /* RecvReceived */
    case 6: advance(op, PT_CNT_TRANSMITTED, steps, 0); return;                  /* RecvTransmitted */
    default: pt_trace_count(pt_op_trace(op), PT_DROP_BAD_STATE); return;
  }
}

/* Stock NCCL's send step start and any step's stop: counters they move. */
static inline __attribute__((always_inline)) void step_posted(pt_op* op, int step) {
  advance(op, PT_CNT_POSTED, (int64_t)step + 1, PT_FLAG_TIMESTAMP);
}

static inline __attribute__((always_inline)) void step_done(pt_op* op, const pt_step_slot* s) {
  advance(op, PT_CNT_DONE, steps_through(op, s), 0);
}

pt_handle pt_step_start(pt_trace* t, pt_handle parent, int step) {
  if (UNLIKELY(!parent)) return NULL;
  /* The parent must be an op of this trace: checked on the address alone,
   * so the slab of another communicator — maybe finalized — is never read. */
  if (UNLIKELY(!t || (uintptr_t)slot_of(parent) - (uintptr_t)t->slab >=
                         (uintptr_t)t->nslots * PT_SLOT_BYTES)) {
    pt_trace_count(t, PT_DROP_WRONG_CONTEXT);
    return NULL;
  }
  pt_op* op = live_op(parent); /* counts a parent that is no live op handle */
  if (UNLIKELY(!op)) return NULL;
  pt_step_slot* s = &op->steps[(unsigned)step % PT_NCCL_STEPS];
  PT_STORE(s->step, (uint16_t)step);
  PT_STORE(s->state, 1);
  /* Stock NCCL starts a send step when it posts the buffer to the GPU. */
  if (PT_LOAD(op->step_driven) && PT_LOAD(op->state) == PT_SLOT_ACTIVE && PT_LOAD(op->rec.op_type) == PT_OP_SEND)
    step_posted(op, step);
  return step_handle(op, s);
}

/* 1 when the address alone says `h` is a step handle (pt_handle_kind, for
 * the one kind the step path takes: one test of the low byte and the top). */
static inline int is_step_handle(pt_handle h) {
  const uintptr_t v = (uintptr_t)h, off = v & (PT_SLOT_BYTES - 1);
  return off >= PT_STEP_BASE && (off - PT_STEP_BASE) % sizeof(pt_step_slot) == 0 &&
         (v & PT_ADDR_MASK) >= PT_SLOT_BYTES && !not_ours_high(h);
}

/* The step slot a handle of step kind names. */
static inline pt_step_slot* step_slot_of(pt_handle h) {
  return (pt_step_slot*)((uintptr_t)h & PT_ADDR_MASK);
}

/* The state of the op a handle of step kind belongs to (PT_SLOT_*) when
 * the step is in flight, else PT_SLOT_FREE (counted): one load of it. */
static inline uint8_t live_step(pt_handle h) {
  const pt_op* op = slot_of(h);
  const uint8_t st = PT_LOAD(op->state);
  if (UNLIKELY(h != step_handle(op, step_slot_of(h)) || PT_LOAD(step_slot_of(h)->state) == 0 ||
               st == PT_SLOT_FREE)) {
    pt_trace_count(stale_trace(op), PT_DROP_STALE_HANDLE);
    return PT_SLOT_FREE;
  }
  WRITER(op->lane);
  return st;
}

/* The transfer's bytes at SendWait and RecvFlushWait: NCCL 2.27+, and
 * RCCL's receive (RecvFlushWait) below. */
static inline void step_bytes(pt_op* op, int64_t trans_size) {
  if (op->mop && trans_size >= 0) pt_metrics_size(op->lane->metrics, op, trans_size, 0);
}

/* What a stock NCCL step state other than SendGPUWait says about an active
 * op's counters (spec nccl-profiler-abi.md §6.6-§6.7). Out of line:
 * pt_step_state, which returns before it on the RCCL path and for
 * SendGPUWait, then needs no stack frame.
 *
 * NCCL records SendPeerWait right before it calls isend and SendWait right
 * after isend took the data (v2.27.3-1 src/transport/net.cc:1204-1215,
 * v2.29.7-1 :1334-1347): the SendWait of the step whose SendPeerWait was
 * the trace's last takes that time (sendT, TRANSMITTED) instead of reading
 * the clock again — one clock read fewer per send step, the time the isend
 * was tried rather than the time it returned. NCCL records SendPeerWait
 * again on every poll whose isend finds no credit; such a retry of the
 * same step reads no clock (it moves no counter): the step's SendWait then
 * reads it once, the time the isend that succeeded returned. So the isend's
 * time costs a send step one clock read without a retry and two with any
 * number of them (reading it at each retry cost 0.7 ns a callback more in
 * make bench's row of two retries a step). */
static __attribute__((noinline)) void step_progress(pt_op* op, const pt_step_slot* s, pt_handle h,
                                                    int state, int64_t trans_size) {
  pt_lane* t = op->lane;
  if (state == 20) { /* SendPeerWait: data ready; NCCL calls isend next */
    const int64_t n = steps_through(op, s), old = PT_LOAD(op->rec.counters[PT_CNT_KERNEL_COPY_READY]);
    const uint16_t stepno = PT_LOAD(s->step);
    if (t->isend_step == h && t->isend_stepno == stepno && n <= old) {
      t->isend_retried = 1; /* the same step tried again */
      return;
    }
    const uint64_t now = pt_ticks();
    t->isend_step = h;
    t->isend_stepno = stepno;
    t->isend_ticks = now;
    t->isend_retried = 0;
    if (n > old) update_at(op, PT_CNT_KERNEL_COPY_READY, old, n, 0, now, 0);
  } else if (state == 9) { /* SendWait: that isend took it, stamped with the time it was tried */
    const int same = t->isend_step == h && t->isend_stepno == PT_LOAD(s->step) && !t->isend_retried;
    const uint64_t now = same ? t->isend_ticks : pt_ticks();
    t->isend_step = NULL;
    step_bytes(op, trans_size);
    isend_accepted(op, steps_through(op, s), now);
  } else if (state == 10) { /* RecvWait: irecv posted */
    advance(op, PT_CNT_POSTED, steps_through(op, s), 0);
  } else if (state == 11) { /* RecvFlushWait: received */
    step_bytes(op, trans_size);
    advance(op, PT_CNT_RECEIVED, steps_through(op, s), 0);
  } else if (state == 12) { /* RecvGPUWait: handed to the GPU */
    advance(op, PT_CNT_TRANSMITTED, steps_through(op, s), 0);
  }
}

void pt_step_state(pt_handle h, int state, int64_t trans_size) {
  if (UNLIKELY(!is_step_handle(h))) {
    if (h) pt_handle_count(h, PT_DROP_BAD_STATE); /* no step: a state it does not take */
    return;
  }
  const uint8_t st = live_step(h);
  if (st == PT_SLOT_FREE) return;
  pt_step_slot* s = step_slot_of(h);
  PT_STORE(s->state, (uint8_t)(state > 1 && state < 255 ? state : 1));
  pt_op* op = slot_of(h);
  /* SendGPUWait (8) moves nothing: a send step is posted at its start. */
  if (st != PT_SLOT_ACTIVE || state == 8) return;
  if (UNLIKELY(!PT_LOAD(op->step_driven))) {
    /* RCCL: the ProxyDiag updates move the counters, but a receive's size
     * is in no update (its FIFO_SZ_OR_HEAD_CACHE is the head, not a size):
     * RecvFlushWait carries the bytes received, recorded just before the
     * RECEIVED update that adds them to the edge (recvProxyProgress in
     * RCCL's src/transport/net.cc sets sub->transSize to the size received,
     * records RecvFlushWait, then advances `received`). */
    if (state == 11) step_bytes(op, trans_size);
    return;
  }
  step_progress(op, s, h, state, trans_size);
}

void pt_handle_stop(pt_handle h) {
  if (LIKELY(is_step_handle(h))) { /* the most frequent stop: tested first */
    const uint8_t st = live_step(h);
    if (st == PT_SLOT_FREE) return;
    pt_op* op = slot_of(h);
    pt_step_slot* s = step_slot_of(h);
    PT_STORE(s->state, 0);
    /* Stock NCCL stops a step when the transfer is complete (send) or the
     * GPU has consumed it (recv). */
    if (st == PT_SLOT_ACTIVE && PT_LOAD(op->step_driven)) step_done(op, s);
    return;
  }
  switch (pt_handle_kind(h)) {
    case PT_HANDLE_OP: {
      pt_op* op = live_op(h);
      if (!op) return;
      switch (PT_LOAD(op->state)) {
        case PT_SLOT_ACTIVE:
          /* Stopped before DONE reached nSteps (abort, error path): keep the
           * record in the dumps — legacy does too — but the handle is gone,
           * and the host no longer waits on it. */
          if (op->mop) pt_metrics_op_end(op->lane->metrics, op, pt_ticks());
          set_state(op, PT_SLOT_DETACHED);
          PT_STORE(op->lane->n_detached, PT_LOAD(op->lane->n_detached) + 1);
          return;
        case PT_SLOT_DETACHED:
          pt_trace_count(pt_op_trace(op), PT_DROP_STALE_HANDLE); /* stopped twice */
          return;
        default:
          free_slot(op);
          return;
      }
    }
    case PT_HANDLE_TASK:
      return; /* a value: the host stops every Coll/P2p handle */
    default:
      if (pt_is_kch_handle(h)) pt_progress_kch_stop(h); /* a KernelCh event (progress.c) */
      else if (h) count_bad_handle();
      return;
  }
}

void pt_handle_count(pt_handle h, pt_drop_reason r) {
  switch (pt_handle_kind(h)) {
    case PT_HANDLE_INVALID:
      if (pt_is_kch_handle(h)) pt_progress_count(h, r);
      else count_bad_handle();
      return;
    case PT_HANDLE_TASK: pt_trace_count(NULL, r); return; /* no trace to name */
    default: pt_trace_count(stale_trace(slot_of(h)), r); return;
  }
}

int pt_op_read(const pt_op* op, uint8_t* state, pt_rec_view* v) {
  return pt_rec_read(&op->rec, v, &op->state, state, NULL);
}

/* ---- RCCL ProxyDiag evidence (cold; the proxy thread) ---- */

void pt_trace_diag_evidence(const pt_trace* t, pt_diag_evidence* e) {
  *e = (pt_diag_evidence){0};
  if (!t) return;
  /* Every slot handed out keeps its last op's record until reused, stopped
   * or not: enough to see whether any registered op was ever updated. */
  uint32_t used = pt_trace_slots_used(t);
  if (used > PT_DIAG_EVIDENCE_SLOTS) used = PT_DIAG_EVIDENCE_SLOTS;
  for (uint32_t i = 0; i < used; i++) {
    const pt_op* op = &t->slab[i];
    if (PT_LOAD(op->rec.op_id) < 0) continue; /* never registered */
    if (PT_LOAD(op->step_driven)) e->stock++;
    else if (PT_LOAD(op->rec.last_kind) != PT_CNT_UNINITIALIZED) e->updated++;
    else e->silent++;
  }
  e->bad_counters = PT_LOAD(((pt_trace*)t)->drops[PT_DROP_BAD_COUNTER]);
}
