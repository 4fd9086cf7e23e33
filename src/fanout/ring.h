/*
 * ring.h — the fan-out's event handles and the rings that hold them.
 *
 * The host gets one fan-out handle per event; it holds the handle each
 * child returned for it (h[], one per child loaded: a handle costs 24 bytes
 * plus 8 per child). Handles live in rings of slots, one ring per kind of
 * event and communicator: application-thread events (task), ProxyOps (a
 * slot is the op's handle followed by NCCL_STEPS = 8 step handles, chosen
 * by step id) and the rest (misc).
 *
 * A slot is taken by an atomic cursor and a compare-and-swap and freed at
 * stop; a freed slot is reused only when the cursor comes round again, so a
 * parent stopped before its children start (a Coll before its ProxyOps)
 * still maps to the children's handles for `cap` takes.
 *
 * Memory follows the events in flight: a ring starts with no slots or one
 * chunk of `base`, and doubles (one more chunk, as large as all before it)
 * up to `max` when it gets crowded — a take met a busy slot, or the slot
 * half a ring ahead of the cursor is still busy. Chunks are allocated only
 * by fo_ring_tend, which the fan-out calls from application-thread events
 * (init, Group, Coll, P2p, API starts), never from the proxy thread's: the
 * hot path takes and frees slots, nothing else. A chunk stays until the
 * communicator is finalized.
 */
#ifndef PT_FANOUT_RING_H
#define PT_FANOUT_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define FO_MAGIC 0x464f4e55u /* "UNOF" */
#define FO_STEP_SLOTS 8      /* NCCL_STEPS: steps of one op in flight */
#define FO_RING_CHUNKS 12    /* chunk k > 0 holds base << (k - 1) slots */
#define FO_TAKE_TRIES 64

typedef struct fo_ctx fo_ctx;

enum { FO_KIND_TASK = 1, FO_KIND_OP, FO_KIND_STEP, FO_KIND_MISC };

typedef struct fo_handle {
  uint32_t magic;
  atomic_uint busy; /* the slot is taken (op slots: by the op) */
  fo_ctx* ctx;
  uint8_t kind;
  uint8_t offered; /* children the host would have sent this event to */
  uint8_t sent;    /* of those, children that returned a (non-NULL) handle: its stop goes to them */
  uint8_t rec;     /* children its states go to */
  uint8_t epoch;   /* the children's masks it was started under (RAS, fanout.c) */
  void* h[];       /* each child's handle, by child index */
} fo_handle;

typedef struct {
  atomic_uint cur;  /* cursor: the next slot to try */
  atomic_uint cap;  /* slots usable, a power of two (0: none yet) */
  atomic_int crowded; /* a take met a busy slot since the last growth */
  atomic_flag growing;
  unsigned base_log, max; /* first chunk: 1 << base_log slots; at most max */
  unsigned per_slot;      /* handles per slot: 1, or 1 + FO_STEP_SLOTS for ops */
  size_t hsize;           /* bytes of one handle */
  size_t stride;          /* bytes of one slot */
  uint8_t kind;
  fo_ctx* ctx;
  unsigned nchunks;
  char* chunk[FO_RING_CHUNKS];
} fo_ring;

/* Bytes of one handle for `nchild` children. */
static inline size_t fo_handle_size(int nchild) { return sizeof(fo_handle) + (size_t)nchild * sizeof(void*); }

/* A ring of no slots yet: `base` and `max` are powers of two. */
void fo_ring_init(fo_ring* r, fo_ctx* ctx, uint8_t kind, unsigned base, unsigned max, unsigned per_slot,
                  size_t hsize);
/* Adds a chunk (the first, or one doubling the ring). 0, or -1 when the
 * ring is at max or out of memory. Off the hot path. */
int fo_ring_grow(fo_ring* r);
/* Grows the ring if it is crowded (or empty and `wanted`). Off the hot
 * path: from application-thread events. Returns 1 when it grew. */
int fo_ring_tend(fo_ring* r, int wanted);
/* Bytes the ring's chunks hold. */
size_t fo_ring_bytes(const fo_ring* r);
void fo_ring_free(fo_ring* r);

/* Slot i (< cap) of the ring. */
static inline fo_handle* fo_ring_slot(const fo_ring* r, unsigned i) {
  unsigned q = i >> r->base_log;
  unsigned k = q ? 32u - (unsigned)__builtin_clz(q) : 0u;
  unsigned first = k ? 1u << (r->base_log + k - 1) : 0u;
  return (fo_handle*)(void*)(r->chunk[k] + (size_t)(i - first) * r->stride);
}

/* A free slot, taken; NULL when FO_TAKE_TRIES slots in a row were busy
 * (or the ring has none). No allocation, lock or system call. */
static inline fo_handle* fo_ring_take(fo_ring* r) {
  unsigned cap = atomic_load_explicit(&r->cap, memory_order_acquire);
  if (!cap) return NULL;
  for (int tries = 0; tries < FO_TAKE_TRIES; tries++) {
    unsigned i = atomic_fetch_add_explicit(&r->cur, 1, memory_order_relaxed) & (cap - 1);
    fo_handle* h = fo_ring_slot(r, i);
    unsigned z = 0;
    if (!atomic_load_explicit(&h->busy, memory_order_relaxed) &&
        atomic_compare_exchange_strong_explicit(&h->busy, &z, 1, memory_order_acquire, memory_order_relaxed))
      return h;
    if (!atomic_load_explicit(&r->crowded, memory_order_relaxed))
      atomic_store_explicit(&r->crowded, 1, memory_order_relaxed);
  }
  return NULL;
}

static inline void fo_ring_put(fo_handle* h) { atomic_store_explicit(&h->busy, 0, memory_order_release); }

#endif
