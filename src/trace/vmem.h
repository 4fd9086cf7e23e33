/*
 * vmem.h — address space reserved for a trace's slab, backed by memory only
 * where it is written (slab.h: memory that follows the ops in flight), and
 * populated ahead of the recording thread so that its writes take no page
 * fault (pt_trace_prefault).
 */
#ifndef PT_TRACE_VMEM_H
#define PT_TRACE_VMEM_H

#include <stddef.h>
#include <stdint.h>

/* `bytes` of zeroed, page-aligned, read-write address space that costs no
 * memory until written (MAP_NORESERVE: no commit charge either); NULL when
 * the system refuses. */
void* pt_vmem_reserve(size_t bytes);
/* Gives back a reservation (NULL: nothing). */
void pt_vmem_release(void* p, size_t bytes);
/* The system's page size. */
size_t pt_vmem_page(void);
/* Backs every page of [p, p + bytes) of a reservation with memory, without
 * changing a byte of it, while another thread may be writing there: with
 * madvise(MADV_POPULATE_WRITE) (Linux 5.14+), checked with mincore(2) on
 * the last page, else, where `may_touch`, with pt_vmem_touch (memory whose
 * first byte of a page the other thread may write non-atomically must not
 * be touched). System calls: never on the recording path. 0 populated, 1
 * populated by touching or, without `may_touch`, left as it was (the kernel
 * has no MADV_POPULATE_WRITE, or it did nothing: an emulator), -1 not
 * populated (out of memory: the recording thread's writes fault the pages
 * in). */
int pt_vmem_populate(void* p, size_t bytes, int may_touch);
/* The fallback: an atomic add of 0 to the first byte of each page, a write
 * that faults the page in and changes nothing. Atomic, so it is safe while
 * another thread stores to that byte — which that thread must then do
 * atomically too (a slab slot's state, at the start of every page). */
void pt_vmem_touch(void* p, size_t bytes);

/* Pages populated ahead of a high-water mark: an array of `unit`-byte
 * elements whose writer takes elements below `used`, kept populated up to
 * `ready`, a lead of `ahead` elements past `used` — at first the lead it was
 * created with, then twice the growth of `used` between two calls, in whole
 * `step`s, at most `max`. One thread at a time calls pt_vmem_lead_populate
 * (pt_trace_prefault); the array's writer never does. */
typedef struct {
  size_t unit;
  uint32_t ready, ahead, seen, step, max;
} pt_vmem_lead;

void pt_vmem_lead_init(pt_vmem_lead* l, size_t unit, uint32_t ahead, uint32_t step, uint32_t max);
/* Populates the pages of elements [max(ready, used), used + ahead) of the
 * `cap` elements at `base` (pt_vmem_populate; `may_touch` as there). 0 or
 * -1 as pt_vmem_populate (1 counts as 0: nothing more to do there). */
int pt_vmem_lead_populate(pt_vmem_lead* l, void* base, uint32_t used, uint32_t cap, int may_touch);

#endif
