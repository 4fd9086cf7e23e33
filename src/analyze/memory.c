/*
 * memory.c — every allocation of an analysis, counted.
 *
 * The analysis promises memory proportional to the records it keeps (the
 * latest two dumps per communicator and rank), not to the input it reads.
 * Counting each block against the analysis lets the scale check and the
 * tests hold it to that: pt_analysis_get_stats() reports the bytes held now
 * and the peak. Each block carries its size in a small header. This is the
 * only place the analyzer calls the allocator, and the one place a failure
 * is noted (memory.h says what follows from it).
 */
#include "analyze/memory.h"
#include "analyze/internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef union {
  size_t size;
  max_align_t align;
} header;

/* The counter counts go to (the analysis', for a reading thread's). */
static an_mem* root(an_mem* m) { return m->parent ? m->parent : m; }

static void fail(an_mem* m) { __atomic_store_n(&root(m)->failed, 1, __ATOMIC_RELAXED); }

static void count(an_mem* m, size_t add, size_t sub) {
  m = root(m);
  const size_t held = __atomic_add_fetch(&m->held, add - sub, __ATOMIC_RELAXED);
  size_t peak = __atomic_load_n(&m->peak, __ATOMIC_RELAXED);
  while (held > peak && !__atomic_compare_exchange_n(&m->peak, &peak, held, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

void* an_alloc(an_mem* m, size_t n) {
  header* h = n <= SIZE_MAX - sizeof *h ? calloc(1, sizeof *h + n) : NULL;
  if (!h) {
    fail(m);
    return NULL;
  }
  h->size = n;
  count(m, n, 0);
  return h + 1;
}

void* an_realloc(an_mem* m, void* p, size_t n) {
  if (!p) return an_alloc(m, n);
  header* h = (header*)p - 1;
  size_t old = h->size;
  header* nh = n <= SIZE_MAX - sizeof *nh ? realloc(h, sizeof *nh + n) : NULL;
  if (!nh) {
    fail(m);
    return NULL;
  }
  if (n > old) memset((char*)(nh + 1) + old, 0, n - old);
  nh->size = n;
  count(m, n, old);
  return nh + 1;
}

void an_free(an_mem* m, void* p) {
  if (!p) return;
  header* h = (header*)p - 1;
  count(m, 0, h->size);
  free(h);
}

char* an_strdup(an_mem* m, const char* s) {
  size_t n = strlen(s);
  char* d = an_alloc(m, n + 1);
  if (d) memcpy(d, s, n);
  return d;
}

void* an_grow(an_mem* m, void** v, size_t* n, size_t* cap, size_t size) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 8;
    void* nv = an_realloc(m, *v, nc * size);
    if (!nv) return NULL;
    *v = nv;
    *cap = nc;
  }
  void* item = (char*)*v + (*n)++ * size;
  memset(item, 0, size);
  return item;
}

int an_mem_errno(an_mem* m, int err) {
  if (err != ENOMEM) return 0;
  fail(m);
  return 1;
}

/* The analysis is not whole when any of its allocators failed: its own,
 * the metrics set's or the metrics verdict's. */
int an_failed(const pt_analysis* a) { return a->mem.failed || a->mset.mem.failed || a->mslow.mem.failed; }

int an_outcome(const pt_analysis* a, int rc) { return an_failed(a) ? PT_AN_ENOMEM : rc; }
