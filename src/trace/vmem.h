/*
 * vmem.h — address space reserved for a trace's slab, backed by memory only
 * where it is written (slab.h: memory that follows the ops in flight), and
 * populated ahead of the recording thread so that its writes take no page
 * fault (pt_trace_prefault).
 */
#ifndef PT_TRACE_VMEM_H
#define PT_TRACE_VMEM_H

#include <stddef.h>

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
 * the last page, else with pt_vmem_touch. System calls: never on the
 * recording path. 0 populated, 1 populated by touching (the kernel has no
 * MADV_POPULATE_WRITE, or it did nothing: an emulator), -1 not populated
 * (out of memory: the recording thread's writes fault the pages in). */
int pt_vmem_populate(void* p, size_t bytes);
/* The fallback: an atomic add of 0 to the first byte of each page, a write
 * that faults the page in and changes nothing. Atomic, so it is safe while
 * another thread stores to that byte — which that thread must then do
 * atomically too (a slab slot's state, at the start of every page). */
void pt_vmem_touch(void* p, size_t bytes);

#endif
