/*
 * vmem.h — address space reserved for a trace's slab, backed by memory only
 * where it is written (slab.h: memory that follows the ops in flight).
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

#endif
