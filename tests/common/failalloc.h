/*
 * failalloc.h — a malloc that fails the Nth call, for the fault tests of
 * the plugin (tests/integration/test_faults.c) and of the analyzer
 * (tests/analyze/test_oom.c).
 *
 * failalloc.c, linked into a test program, defines the program's malloc,
 * calloc, realloc, aligned_alloc and free; each forwards to the next one
 * (the libc's, or a sanitizer's). While armed it counts the allocations of
 * every thread, fails the one numbered `n` (1-based) — or, persistent,
 * every one from `n` on: memory that stays short — and sums the bytes
 * allocated minus the bytes freed (malloc_usable_size), so that a test
 * sees what a call kept.
 *
 * TSan's runtime allocates before a replacement malloc can find the next
 * one: under TSan nothing is interposed (FA_INTERPOSED is 0) and the tests
 * that need it skip. The plain and ASan builds interpose.
 */
#ifndef PT_TESTS_FAILALLOC_H
#define PT_TESTS_FAILALLOC_H

#if defined(__SANITIZE_THREAD__)
#define FA_INTERPOSED 0
#else
#define FA_INTERPOSED 1
#endif

/* Counts from 0 and fails call `n` (persistent: every call from `n` on). */
void fa_arm(long n, int persistent);
/* Keeps counting bytes (and failing nothing) across what follows. */
void fa_track_only(void);
void fa_disarm(void);
long fa_calls(void);      /* allocations since fa_arm */
long fa_failed(void);     /* of which failed */
long fa_live_bytes(void); /* bytes allocated minus bytes freed since fa_arm */

#endif
