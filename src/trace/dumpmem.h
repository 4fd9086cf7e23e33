/*
 * dumpmem.h — the working memory of a dump's snapshot (the copies of the
 * records, their keys, the print order), kept from one dump to the next.
 *
 * A snapshot of 100 000 records needs about 26 MB. Fresh memory costs a page
 * fault per 4 KiB page at its first write (zeroed by the kernel): on a
 * virtual machine that alone took longer than formatting the whole dump
 * (malloc gives big blocks fresh from mmap each time until its thresholds
 * adapt, and never above 32 MiB). So the memory of the last snapshot is
 * kept, one region per process, and handed to the next snapshot that fits
 * in it. A kept region is given back when a snapshot needs more, after 16
 * snapshots in a row that needed less than a quarter of it (the memory
 * follows the dumps' sizes, while communicators of different sizes that
 * are dumped in turn share one region), and when the library is unloaded. Transparent huge pages (MADV_HUGEPAGE) were tried:
 * with the kernel's default defrag they made the first dump three times
 * slower (compaction at the fault) for a few percent on later ones.
 */
#ifndef PT_TRACE_DUMPMEM_H
#define PT_TRACE_DUMPMEM_H

#include <stddef.h>

/* At least `bytes` of memory (not zeroed, 64-aligned); NULL when the system
 * refuses. */
void* pt_dumpmem_get(size_t bytes);
/* Hands back what pt_dumpmem_get gave (NULL: nothing). */
void pt_dumpmem_put(void* p);

#endif
