/*
 * vmem.c — slab reservations (vmem.h). An anonymous private mapping reads as
 * zeros and gets a page of memory at the first write to it (Linux mmap(2),
 * MAP_ANONYMOUS, MAP_NORESERVE); only trace creation and destruction call
 * here, never the recording path.
 */
#include "trace/vmem.h"

#include <sys/mman.h>

void* pt_vmem_reserve(size_t bytes) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void pt_vmem_release(void* p, size_t bytes) {
  if (p) munmap(p, bytes);
}
