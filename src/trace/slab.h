/*
 * slab.h — the trace object and its operation slots (internal to src/trace).
 *
 * An operation slot is 256 bytes, 256-aligned: a small lifecycle header, the
 * record, and storage for the NCCL_STEPS (8) step handles the host may hold
 * for this op at once. Handles are addresses inside the slot:
 *   op handle   = slot + (gen & 63)          — offsets 0..63
 *   step handle = &slot->steps[step % 8]     — offsets >= PT_STEP_BASE
 * so the kind of a handle and its slot follow from the address alone, and the
 * generation in the low bits catches a handle used after its op was stopped
 * and the slot reused. Step slots carry the low byte of their op's
 * generation for the same reason.
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

#define PT_SLOT_BYTES 256u
#define PT_GEN_MASK 63u

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
  _Atomic uint8_t opgen; /* low byte of the op's generation at step start */
  _Atomic uint16_t step; /* low 16 bits of the step number */
} pt_step_slot;

typedef struct pt_op {
  alignas(PT_SLOT_BYTES) _Atomic uint8_t state; /* PT_SLOT_*; changed inside the record seqlock */
  uint8_t step_driven; /* pt_op_info.step_driven */
  uint16_t mop;        /* its metrics scratch, index + 1; 0 = not measured (metrics.h) */
  uint32_t gen;
  uint32_t next_free;
  uint32_t reserved2;
  struct pt_trace* trace;
  pt_rec rec;
  pt_step_slot steps[PT_NCCL_STEPS];
} pt_op;

#define PT_STEP_BASE offsetof(pt_op, steps)

struct pt_trace {
  pt_op* slab;
  uint32_t nslots;
  uint32_t free_head;         /* index of the first free slot, PT_NO_SLOT if none */
  uint32_t drops_since_scan;  /* drops since the slab was last found full */
  uint32_t finished_since_scan; /* ops that became reclaimable since the last scan */
  uint64_t reclaim_ticks;     /* age after which an unregistered slot is reclaimable */
  pt_idmap ids;               /* proxy thread only */
  _Atomic int my_rank;
  _Atomic uint32_t n_active;  /* ACTIVE + DETACHED slots */
  _Atomic uint32_t n_detached; /* DETACHED slots (they never leave) */
  _Atomic uint64_t t_progress; /* last progress of any op, or last registration */
  _Atomic uint32_t n_buckets; /* mirror of ids.buckets for readers */
  _Atomic uint64_t ring_head; /* finished records pushed so far */
  pt_rec ring[PT_FINISHED_RING];
  _Atomic uint64_t drops[PT_DROP_NUM];
  pt_metrics* metrics; /* step metrics, NULL when off (metrics.h) */
  /* Debug builds (PT_DEBUG): the thread that writes this trace, claimed by
   * its first write; see pt_writer_check in trace.c. */
  _Atomic uintptr_t writer;
  int writer_tid;
  char writer_name[16];
};

#define PT_NO_SLOT UINT32_MAX

_Static_assert(sizeof(pt_op) == PT_SLOT_BYTES, "an op slot is 256 bytes");
_Static_assert(PT_STEP_BASE > PT_GEN_MASK, "op-handle offsets stay below the step slots");

/* Slot state and record, read consistently. 0 on success. */
int pt_op_read(const pt_op* op, uint8_t* state, pt_rec_view* v);
/* The finished records of completions [head - 32, head) (those that exist),
 * oldest first, each a consistent copy of exactly that completion; entries
 * rewritten since `head` was read (acquire) are skipped. out[] and order[]
 * (completion numbers) hold PT_FINISHED_RING; returns how many were copied. */
size_t pt_ring_snapshot(const pt_trace* t, uint64_t head, pt_rec_view* out, uint64_t* order);

#endif
