/*
 * dumpmem.c — one kept region for the next snapshot (dumpmem.h). Dumps of
 * different communicators can run at once (the dumper thread, the host's
 * dump hook): each takes the kept region or maps its own; the last one
 * handed back is kept, any other unmapped.
 */
#include "trace/dumpmem.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>

#define UNIT ((size_t)64 << 10)
#define SHRINK_BELOW ((size_t)2 << 20) /* a region this small is kept whatever dumps need */
#define SHRINK_AFTER 16                /* dumps in a row that needed under a quarter of it */

/* At the start of each region: its mapped size. */
typedef struct {
  size_t size;
  size_t pad[7]; /* what follows starts on a cache line */
} region;

static _Atomic(region*) kept;
static _Atomic unsigned small_dumps; /* in a row, that needed under a quarter of the kept region */

static void unmap(region* r) {
  if (r) munmap(r, r->size);
}

void* pt_dumpmem_get(size_t bytes) {
  const size_t need = bytes + sizeof(region);
  region* r = atomic_exchange(&kept, NULL);
  if (r && r->size >= need) {
    /* Communicators of different sizes take turns: a region far larger than
     * needed is given back only once many dumps in a row were small. */
    if (r->size / 4 <= (need > SHRINK_BELOW ? need : SHRINK_BELOW)) atomic_store(&small_dumps, 0);
    else if (atomic_fetch_add(&small_dumps, 1) + 1 >= SHRINK_AFTER) {
      atomic_store(&small_dumps, 0);
      unmap(r);
      r = NULL;
    }
  } else if (r) {
    unmap(r); /* too small */
    r = NULL;
  }
  if (!r) {
    const size_t len = (need + UNIT - 1) / UNIT * UNIT;
    void* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    r = p;
    r->size = len;
  }
  return r + 1;
}

void pt_dumpmem_put(void* p) {
  if (!p) return;
  unmap(atomic_exchange(&kept, (region*)p - 1));
}

__attribute__((destructor)) static void dumpmem_at_unload(void) { unmap(atomic_exchange(&kept, NULL)); }
