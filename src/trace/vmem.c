/*
 * vmem.c — slab reservations (vmem.h). An anonymous private mapping reads as
 * zeros and gets a page of memory at the first write to it (Linux mmap(2),
 * MAP_ANONYMOUS, MAP_NORESERVE); trace creation and destruction call here,
 * and the thread that populates a slab ahead of its recording thread
 * (pt_trace_prefault), never the recording path.
 */
#include "trace/vmem.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 (include/uapi/asm-generic/mman-common.h) */
#endif

void* pt_vmem_reserve(size_t bytes) {
  void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void pt_vmem_release(void* p, size_t bytes) {
  if (p) munmap(p, bytes);
}

size_t pt_vmem_page(void) {
  static _Atomic size_t page;
  size_t n = atomic_load_explicit(&page, memory_order_relaxed);
  if (!n) {
    const long v = sysconf(_SC_PAGESIZE);
    n = v > 0 ? (size_t)v : 4096;
    atomic_store_explicit(&page, n, memory_order_relaxed);
  }
  return n;
}

void pt_vmem_touch(void* p, size_t bytes) {
  const size_t page = pt_vmem_page();
  unsigned char* a = (unsigned char*)((uintptr_t)p & ~(uintptr_t)(page - 1));
  unsigned char* end = (unsigned char*)p + bytes;
  for (; a < end; a += page) __atomic_fetch_add(a, 0, __ATOMIC_RELAXED);
}

/* 0 until a populate call found MADV_POPULATE_WRITE missing or inert. */
static _Atomic int no_populate;

/* 1 when the page at `p` is resident (mincore(2)). */
static int resident(void* p) {
  unsigned char v = 0;
  return mincore(p, 1, &v) == 0 && (v & 1);
}

int pt_vmem_populate(void* p, size_t bytes, int may_touch) {
  const size_t page = pt_vmem_page();
  unsigned char* a = (unsigned char*)((uintptr_t)p & ~(uintptr_t)(page - 1));
  unsigned char* end = (unsigned char*)p + bytes;
  if (a >= end) return 0;
  if (!atomic_load_explicit(&no_populate, memory_order_relaxed)) {
    /* The last page tells whether it worked: kernels before 5.14 refuse
     * the advice (EINVAL), and an emulator (qemu-user) may accept it and
     * do nothing. */
    const int rc = madvise(a, (size_t)(end - a), MADV_POPULATE_WRITE);
    if (rc == 0 && resident((void*)((uintptr_t)(end - 1) & ~(uintptr_t)(page - 1)))) return 0;
    if (rc != 0 && errno != EINVAL) return -1; /* ENOMEM: the recording path faults instead */
    atomic_store_explicit(&no_populate, 1, memory_order_relaxed);
  }
  if (may_touch) pt_vmem_touch(a, (size_t)(end - a));
  return 1;
}

void pt_vmem_lead_init(pt_vmem_lead* l, size_t unit, uint32_t ahead, uint32_t step, uint32_t max) {
  *l = (pt_vmem_lead){.unit = unit, .ahead = ahead, .step = step, .max = max};
}

int pt_vmem_lead_populate(pt_vmem_lead* l, void* base, uint32_t used, uint32_t cap, int may_touch) {
  const uint32_t grown = used - l->seen;
  l->seen = used;
  if (grown > l->ahead / 2) { /* a lead of twice the last growth, whole steps */
    const uint64_t ahead = ((uint64_t)grown * 2 + l->step - 1) / l->step * l->step;
    l->ahead = ahead < l->max ? (uint32_t)ahead : l->max;
  }
  const uint32_t target = cap - used < l->ahead ? cap : used + l->ahead;
  if (target <= l->ready) return 0;
  const uint32_t from = l->ready > used ? l->ready : used; /* below: written already */
  if (pt_vmem_populate((char*)base + (size_t)from * l->unit, (size_t)(target - from) * l->unit, may_touch) < 0)
    return -1;
  l->ready = target;
  return 0;
}
