/*
 * idmap.c — the (commHash, opCount) → next proxyOpId table (idmap.h).
 */
#include "trace/idmap.h"

#include "trace/vmem.h"

static inline uint32_t slot_of(const pt_idmap* m, uint64_t h, int64_t c) {
  (void)h; /* the ops of a trace share their communicator's hash (idmap.h) */
  return (uint32_t)c & m->mask;
}

int pt_idmap_init(pt_idmap* m, uint32_t max_live) {
  uint32_t cap = 16;
  while (cap < 2u * max_live) cap <<= 1;
  /* Reserved, not allocated: a page costs memory once a bucket in it is
   * used (an idle communicator's table costs nothing; slab.h). */
  m->e = pt_vmem_reserve((size_t)cap * sizeof *m->e);
  if (!m->e) return -1;
  m->mask = cap - 1;
  m->buckets = 0;
  atomic_store_explicit(&m->top, 0, memory_order_relaxed);
  return 0;
}

void pt_idmap_free(pt_idmap* m) {
  pt_vmem_release(m->e, pt_idmap_bytes(m));
  m->e = NULL;
}

static pt_idmap_entry* find(pt_idmap* m, uint64_t h, int64_t c, uint32_t* at) {
  uint32_t i = slot_of(m, h, c);
  for (;;) {
    pt_idmap_entry* e = &m->e[i];
    if (e->live == 0 || (e->comm_hash == h && e->op_count == c)) {
      *at = i;
      return e;
    }
    i = (i + 1) & m->mask;
  }
}

int64_t pt_idmap_acquire(pt_idmap* m, uint64_t h, int64_t c) {
  uint32_t at;
  pt_idmap_entry* e = find(m, h, c, &at);
  if (e->live == 0) {
    e->comm_hash = h;
    e->op_count = c;
    e->next_id = 0;
    m->buckets++;
    /* release reads the entry after the last one of a run, here at + 1;
     * an op without an opCount (-1: stock NCCL without a parent task) sits
     * at the table's end and would stop the lead there: not counted */
    const uint32_t reach = at + 2 < m->mask + 1 ? at + 2 : m->mask + 1;
    if (c >= 0 && reach > atomic_load_explicit(&m->top, memory_order_relaxed))
      atomic_store_explicit(&m->top, reach, memory_order_relaxed);
  }
  e->live++;
  return (int64_t)e->next_id++;
}

void pt_idmap_release(pt_idmap* m, uint64_t h, int64_t c) {
  uint32_t i;
  pt_idmap_entry* e = find(m, h, c, &i);
  if (e->live == 0) return; /* not present: nothing to release */
  if (--e->live > 0) return;
  m->buckets--;
  /* Backward-shift deletion: pull later members of the probe run into the
   * hole so lookups never stop early at it. */
  uint32_t hole = i, j = i;
  for (;;) {
    j = (j + 1) & m->mask;
    pt_idmap_entry* n = &m->e[j];
    if (n->live == 0) break;
    uint32_t home = slot_of(m, n->comm_hash, n->op_count);
    /* n may move to the hole if its home is not in (hole, j] cyclically. */
    int in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!in_range) {
      m->e[hole] = *n;
      hole = j;
    }
  }
  m->e[hole].live = 0;
}

size_t pt_idmap_bytes(const pt_idmap* m) { return (size_t)(m->mask + 1) * sizeof(pt_idmap_entry); }

uint32_t pt_idmap_top(const pt_idmap* m) { return atomic_load_explicit(&m->top, memory_order_relaxed); }
