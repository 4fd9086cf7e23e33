/*
 * heap_tune.h — the C library's heap settings for a process that runs one
 * large analysis (`proxytrace analyze`, and bench_analyze, which measures
 * it). Not the library's to set: they are the whole process's.
 *
 * Why. The reading threads build each file's records and the analysis
 * frees what a newer dump replaces, tens of thousands of times. With
 * glibc's defaults the heap top is handed back to the kernel as soon as
 * 128 KiB lie free at it and grown again a moment later, each time through
 * a system call and fresh zeroed pages. Keeping freed memory for reuse
 * (the process ends, or in --follow reuses it, soon after) and growing by
 * 64 MiB at a time took a generated 100 000-rank job from 15.6-16.9 s to
 * 12.8-14.1 s on two cores, for the same peak. A C library without
 * mallopt's settings keeps its own.
 */
#ifndef PT_TOOLS_HEAP_TUNE_H
#define PT_TOOLS_HEAP_TUNE_H

#if defined(__GLIBC__)
#include <malloc.h>
static inline void pt_heap_tune_for_analysis(void) {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
}
#else
static inline void pt_heap_tune_for_analysis(void) {}
#endif

#endif
