/*
 * memory.h — the one way the analyzer allocates (memory.c).
 *
 * Every block an analysis, its step metrics set or its slow-edge verdict
 * holds comes from an_alloc / an_realloc and goes back with an_free,
 * counted against an an_mem: the bytes held now and the peak (the scale
 * figures and tests read them), and whether any allocation failed. That
 * flag is sticky: a stage that could not get memory may go on with less
 * (a dump dropped, a message lost), but the analysis then knows it is not
 * whole, and the public API says out of memory instead of a verdict
 * (docs/analyze.md, "Out of memory"). The counts are kept with atomic
 * operations: the threads that read files at once allocate against one
 * counter. What the C library allocates for
 * itself (a FILE, a DIR) is reported with an_mem_errno when it fails with
 * ENOMEM.
 */
#ifndef PT_ANALYZE_MEMORY_H
#define PT_ANALYZE_MEMORY_H

#include <stddef.h>

typedef struct an_mem {
  size_t held, peak;
  int failed; /* an allocation failed since the counter was made */
  /* A counter that counts into another: the one of the analysis a reading
   * thread parses for (lines.c). Counts are atomic, so threads share one. */
  struct an_mem* parent;
} an_mem;

void* an_alloc(an_mem* m, size_t n); /* zeroed; NULL when out of memory */
void* an_realloc(an_mem* m, void* p, size_t n);
void an_free(an_mem* m, void* p);
char* an_strdup(an_mem* m, const char* s);
/* Makes room for one more item of `size` bytes in *v (n items, cap
 * capacity); returns the new item, zeroed, or NULL. */
void* an_grow(an_mem* m, void** v, size_t* n, size_t* cap, size_t size);
/* A C library call failed with `err`: ENOMEM marks the counter failed.
 * Returns whether it did. */
int an_mem_errno(an_mem* m, int err);

#endif
