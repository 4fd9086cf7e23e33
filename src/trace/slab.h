/*
 * slab.h — the trace object and its operation slots (internal to src/trace).
 *
 * An operation slot is 256 bytes, 256-aligned: a small lifecycle header, the
 * record, and storage for the NCCL_STEPS (8) step handles the host may hold
 * for this op at once. Handles are addresses inside the slot, tagged with the
 * slot's generation (bumped at every op start):
 *   op handle   = slot + ((gen >> 15) & 63)       — offsets 0..63
 *   step handle = &slot->steps[step % 8]          — offsets >= PT_STEP_BASE
 * and both carry gen & 0x7fff in address bits 48..62, which no user-space
 * address has (x86-64 and AArch64 map user memory below 2^47 / 2^48 unless a
 * program asks for more with an mmap hint; pt_trace_create checks its slab).
 * Bit 63 stays clear: Coll/P2p task handles (trace.h) have it set, so the
 * three kinds never meet. So the kind of a handle and its slot follow from
 * the address alone, an op handle stays distinguishable from its successors
 * for 2^21 reuses of its slot and a step handle for 2^15, and the free list
 * is first-in first-out,
 * so a slot comes back only after every other free slot has been used.
 * The host treats handles as opaque and never dereferences them.
 *
 * Memory follows the ops in flight. The slab is one reservation of address
 * space for the communicator's cap (PROXYTRACE_MAX_OPS slots), mapped
 * without backing: a page costs memory only once a slot in it is used.
 * Slots are handed out from the low end (`n_init`, the high-water mark),
 * charged to the process-wide budget (PROXYTRACE_MAX_MEMORY_MB) a chunk of
 * PT_CHUNK_SLOTS at a time by one atomic add; a new op takes a fresh slot
 * while fewer than PT_REUSE_MIN slots are free, else the oldest free one —
 * so an idle communicator holds the slot pages populated after creation (below)
 * and a busy one about as many
 * slots as it has ops in flight, plus PT_REUSE_MIN. Nothing is allocated,
 * locked or called on the way: the kernel supplies a zeroed page at the
 * first write to it (a page fault, no system call). Dumps read slots below
 * `n_init` only. That fault is taken off the recording path where it can
 * be: pt_trace_prefault, called by the dumper thread right after creation
 * and then every 50 ms, populates the pages of the next slots ahead of `n_init`
 * (`slab_lead`), at least PT_PREFAULT_MIN slots and twice what the trace took
 * since the last call, up to PT_PREFAULT_MAX; and so the pages of the op id
 * table (idmap.h) ahead of its top entry (`ids_lead`).
 *
 * A slot belongs to the lane (below) that first took it, for good, and is
 * in exactly one list of that lane, by state: FREE slots in `free`,
 * STARTED ones in `started` (oldest first), FINISHED and IGNORED ones —
 * whose records no dump needs — in `done`; ACTIVE and DETACHED in none. When
 * the free list is empty a new op takes the oldest `done` slot, else the
 * oldest `started` one (an op the host never registered: CollNet and
 * copy-engine transports start ProxyOps they never progress nor stop), and
 * is dropped only when every slot up to the cap or the budget holds a
 * registered op (of its lane: a lane never takes another's slots, which
 * are another thread's to write).
 */
#ifndef PT_TRACE_SLAB_H
#define PT_TRACE_SLAB_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proxytrace/trace.h"
#include "trace/idmap.h"
#include "trace/record.h"
#include "trace/vmem.h"

#define PT_SLOT_BYTES 256u
#define PT_OP_OFF_MASK 63u /* op-handle offsets carry 6 generation bits */
#if UINTPTR_MAX > 0xffffffffu
#define PT_TAG_SHIFT 48     /* generation bits 0..14 in address bits 48..62 */
#define PT_TAG_MASK 0x7fffu
#define PT_OFF_GEN_SHIFT 15 /* generation bits 15..20 in the op-handle offset */
#define PT_ADDR_MASK (((uintptr_t)1 << PT_TAG_SHIFT) - 1)
#else /* no spare address bits: 6 generation bits, in the offset */
#define PT_TAG_SHIFT 0
#define PT_TAG_MASK 0u
#define PT_OFF_GEN_SHIFT 0
#define PT_ADDR_MASK UINTPTR_MAX
#endif

/* Lifecycle of a slot. */
enum {
  PT_SLOT_FREE = 0,
  PT_SLOT_STARTED,  /* handle given out, op not registered yet */
  PT_SLOT_ACTIVE,   /* registered: in every dump until it completes */
  PT_SLOT_DETACHED, /* stopped before completing: stays in dumps as active */
  PT_SLOT_FINISHED, /* completed (copied to the ring), handle not stopped yet */
  PT_SLOT_IGNORED   /* registered with nSteps <= 0: recorded nowhere */
};

typedef struct {
  _Atomic uint8_t state; /* 0 = not in flight, 1 = started, else last ProxyStep state */
  uint8_t reserved;
  _Atomic uint16_t step; /* low 16 bits of the step number */
} pt_step_slot;

struct pt_lane;

typedef struct pt_op {
  alignas(PT_SLOT_BYTES) _Atomic uint8_t state; /* PT_SLOT_*; changed inside the record seqlock */
  _Atomic uint8_t step_driven; /* pt_op_info.step_driven (relaxed: diag evidence reads every lane's) */
  uint16_t mop;        /* its metrics scratch, index + 1; 0 = not measured (metrics.h) */
  uint32_t gen;
  uint32_t next, prev; /* links of the slot's list (PT_NO_SLOT at the ends) */
  struct pt_lane* lane; /* the lane that started the op (its trace: lane->trace) */
  pt_rec rec;
  pt_step_slot steps[PT_NCCL_STEPS];
} pt_op;

#define PT_STEP_BASE offsetof(pt_op, steps)

typedef struct {
  uint32_t head, tail; /* oldest, newest; PT_NO_SLOT when empty */
  uint32_t len;
} pt_slot_list;

#define PT_CHUNK_SLOTS 64u /* slots charged to the budget at a time (16 KiB) */
#define PT_PREFAULT_MIN 64u    /* slots populated ahead of n_init at least (16 KiB)... */
#define PT_PREFAULT_MAX 1024u  /* ... and at most (256 KiB) */
#define PT_IDS_PREFAULT_MIN 512u  /* op id table entries populated ahead at least (12 KiB)... */
#define PT_IDS_PREFAULT_MAX 8192u /* ... and at most (192 KiB) */
#define PT_REUSE_MIN 64u   /* free slots kept before one is reused */

/* One writing thread's part of a trace: everything recording changes with
 * a load and a store — the slot lists, the op id table, the active counts,
 * the finished ring, the last SendPeerWait — so that each stays
 * single-writer when several proxy threads record into one trace (PXN in a
 * process that drives several GPUs: docs/plugin.md, "Which thread writes
 * which trace"). The thread that first starts an op on the trace claims
 * lane 0; another thread, its own lane at its first op start; an op's
 * slot names its lane, so every later event of the op writes that lane.
 * Dumps and the watchdog read every ready lane as one. */
typedef struct pt_lane {
  struct pt_trace* trace;
  pt_slot_list free, started, done; /* the lane's writer only */
  pt_idmap ids;                     /* the lane's writer only */
  pt_vmem_lead ids_lead;            /* its pages ahead of the table's top (pt_trace_prefault) */
  /* The last stock SendPeerWait: its step handle, step number and time,
   * which the SendWait of the same step right after it takes as its own,
   * and whether it was tried again (isend found no credit: the SendWait
   * then reads the clock itself; trace.c, step_progress). The lane's writer
   * only. */
  pt_handle isend_step;
  uint64_t isend_ticks;
  uint16_t isend_stepno;
  uint8_t isend_retried;
  pt_metrics* metrics;         /* lane 0: the trace's step metrics (NULL when off); others NULL */
  _Atomic uint32_t n_active;   /* ACTIVE + DETACHED slots */
  _Atomic uint32_t n_detached; /* DETACHED slots (they never leave) */
  _Atomic uint32_t n_buckets;  /* mirror of ids.buckets for readers */
  _Atomic uint64_t t_progress; /* last progress of any op, or last registration */
  _Atomic uint64_t ring_head;  /* finished records pushed so far */
  int index;
  int writer_tid;              /* the thread that claimed it (debug builds' messages) */
  char writer_name[16];
  pt_rec ring[PT_FINISHED_RING];
} pt_lane;

#define PT_MAX_LANES 16 /* writing threads per trace: a node's proxy threads, with room */

struct pt_trace {
  pt_op* slab;
  uint32_t nslots;           /* the cap: slots reserved */
  /* Slots handed out so far (low 32 bits: readers acquire) and slots
   * charged to the budget (high 32, PT_CHUNK_SLOTS multiples): one word,
   * so lanes take fresh slots with one compare-and-swap (fresh_slot). */
  _Atomic uint64_t slots;
  /* Slots whose pages are populated ahead of the slots handed out
   * (pt_trace_prefault, under `prefaulting`). */
  pt_vmem_lead slab_lead;
  _Atomic int prefaulting; /* 1 while a thread is in pt_trace_prefault */
  _Atomic int my_rank;
  /* Lanes: lane[0] is lane0, in the trace's own allocation (the lane of
   * every trace); lane[1..] lie in address space reserved for them
   * (`more`), whose pages cost memory once a lane is claimed. owner[i] is
   * the thread (its thread pointer) that claimed lane i (0: free), `ready`
   * the bit mask of lanes whose setup is published (release; readers
   * acquire). */
  pt_lane* lane[PT_MAX_LANES];
  pt_lane* more;
  _Atomic uintptr_t owner[PT_MAX_LANES];
  _Atomic uint32_t ready;
  _Atomic uint64_t drops[PT_DROP_NUM];
  _Atomic(_Atomic uint64_t*) tags; /* userTags (tags.c), NULL until one is seen */
  _Atomic unsigned notes;          /* pt_note */
  pt_metrics* metrics; /* step metrics, NULL when off (metrics.h); lane 0 records them */
  struct pt_progress* progress; /* tasks and kernel channels (progress.h); NULL if it could not be had */
  pt_lane lane0;
};

/* The trace a slot belongs to. */
static inline struct pt_trace* pt_op_trace(const pt_op* op) { return op->lane->trace; }

/* The ready lanes, for readers: `for (pt_lane* l = ...)` over the mask. */
static inline uint32_t pt_trace_lanes_ready(const struct pt_trace* t) {
  return atomic_load_explicit(&((struct pt_trace*)t)->ready, memory_order_acquire);
}

/* Frees the userTag table (tags.c); with the trace. */
void pt_trace_tags_free(struct pt_trace* t);

#define PT_NO_SLOT UINT32_MAX

_Static_assert(sizeof(pt_op) == PT_SLOT_BYTES, "an op slot is 256 bytes");
_Static_assert(PT_STEP_BASE > PT_OP_OFF_MASK, "op-handle offsets stay below the step slots");

/* Slot state and record, read under the record's seqlock (pt_rec_read):
 * PT_READ_CONSISTENT, or PT_READ_MID_WRITE for the best copy the writer
 * allowed within the reader's patience. */
int pt_op_read(const pt_op* op, uint8_t* state, pt_rec_view* v);
/* The finished records of completions [head - 32, head) (those that exist),
 * oldest first, each a consistent copy of exactly that completion; entries
 * rewritten since `head` was read (acquire) are skipped. out[] and order[]
 * (completion numbers) hold PT_FINISHED_RING; returns how many were copied. */
size_t pt_ring_snapshot(const pt_lane* l, uint64_t head, pt_rec_view* out, uint64_t* order);
/* The last PT_FINISHED_RING completions of every lane as one ring: each
 * ready lane's ring (pt_ring_snapshot, its head read with acquire), then,
 * with more than one lane, the newest PT_FINISHED_RING of them by their
 * completion time (t_last), oldest first. Returns how many. */
size_t pt_trace_ring_snapshot(const pt_trace* t, pt_rec_view* out);
/* Of the trace's lanes: finished records in the rings, op id buckets. */
uint64_t pt_trace_ring_finished(const pt_trace* t);
uint32_t pt_trace_id_buckets(const pt_trace* t);

#endif
