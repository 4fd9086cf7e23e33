/*
 * ring.c — growing the fan-out's handle rings (ring.h), off the hot path.
 *
 * A ring grows by one chunk at a time, each as large as all chunks before
 * it, so a slot's chunk follows from its index alone (fo_ring_slot) and a
 * take that read the old capacity still lands in memory that exists. The
 * new chunk's handles are written before the capacity that makes them
 * reachable is published (release; takes read it with acquire).
 */
#include <stdlib.h>

#include "fanout/ring.h"

void fo_ring_init(fo_ring* r, fo_ctx* ctx, uint8_t kind, unsigned base, unsigned max, unsigned per_slot,
                  size_t hsize) {
  atomic_init(&r->cur, 0);
  atomic_init(&r->cap, 0);
  atomic_init(&r->crowded, 0);
  atomic_flag_clear(&r->growing);
  r->base_log = (unsigned)__builtin_ctz(base);
  r->max = max;
  r->per_slot = per_slot;
  r->hsize = hsize;
  r->stride = hsize * per_slot;
  r->kind = kind;
  r->ctx = ctx;
  r->nchunks = 0;
  for (int k = 0; k < FO_RING_CHUNKS; k++) r->chunk[k] = NULL;
}

/* Slots chunk k holds. */
static unsigned chunk_slots(const fo_ring* r, unsigned k) {
  return k ? 1u << (r->base_log + k - 1) : 1u << r->base_log;
}

int fo_ring_grow(fo_ring* r) {
  unsigned cap = atomic_load_explicit(&r->cap, memory_order_relaxed);
  unsigned k = r->nchunks;
  unsigned n = chunk_slots(r, k);
  if (k >= FO_RING_CHUNKS || cap + n > r->max) return -1;
  char* mem = calloc(n, r->stride);
  if (!mem) return -1;
  for (unsigned s = 0; s < n; s++)
    for (unsigned j = 0; j < r->per_slot; j++) {
      fo_handle* h = (fo_handle*)(void*)(mem + s * r->stride + j * r->hsize);
      h->magic = FO_MAGIC;
      h->ctx = r->ctx;
      h->kind = j ? FO_KIND_STEP : r->kind;
    }
  r->chunk[k] = mem;
  r->nchunks = k + 1;
  atomic_store_explicit(&r->crowded, 0, memory_order_relaxed);
  atomic_store_explicit(&r->cap, cap + n, memory_order_release);
  return 0;
}

int fo_ring_tend(fo_ring* r, int wanted) {
  unsigned cap = atomic_load_explicit(&r->cap, memory_order_acquire);
  if (cap >= r->max) return 0;
  int grow;
  if (!cap) {
    grow = wanted;
  } else {
    grow = atomic_load_explicit(&r->crowded, memory_order_relaxed);
    if (!grow) {
      /* Half a ring ahead of the cursor still busy: the ring will be. */
      unsigned i = (atomic_load_explicit(&r->cur, memory_order_relaxed) + cap / 2) & (cap - 1);
      grow = atomic_load_explicit(&fo_ring_slot(r, i)->busy, memory_order_relaxed) != 0;
    }
  }
  if (!grow || atomic_flag_test_and_set_explicit(&r->growing, memory_order_acquire)) return 0;
  int grew = fo_ring_grow(r) == 0;
  atomic_flag_clear_explicit(&r->growing, memory_order_release);
  return grew;
}

size_t fo_ring_bytes(const fo_ring* r) {
  return (size_t)atomic_load_explicit(&r->cap, memory_order_relaxed) * r->stride;
}

void fo_ring_free(fo_ring* r) {
  for (unsigned k = 0; k < r->nchunks; k++) free(r->chunk[k]);
  r->nchunks = 0;
  atomic_store_explicit(&r->cap, 0, memory_order_relaxed);
}
