/*
 * failalloc.c — the program's malloc family, failing the Nth call while
 * armed (failalloc.h says how to use it).
 */
#include "failalloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int armed, persistent;
static _Atomic long calls, fail_at, failed, live_bytes;

#if FA_INTERPOSED
static void* (*real_malloc)(size_t);
static void* (*real_calloc)(size_t, size_t);
static void* (*real_realloc)(void*, size_t);
static void* (*real_aligned_alloc)(size_t, size_t);
static void (*real_free)(void*);

/* dlsym may allocate before the real functions are known. */
static _Alignas(16) char boot[4096];
static size_t boot_used;

static void* boot_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (boot_used + n > sizeof boot) return NULL;
  void* p = boot + boot_used;
  boot_used += n;
  return p;
}

static int is_boot(const void* p) {
  return (const char*)p >= boot && (const char*)p < boot + sizeof boot;
}

static void resolve(void) {
  static int resolving;
  if (real_free || resolving) return;
  resolving = 1;
  real_malloc = dlsym(RTLD_NEXT, "malloc");
  real_calloc = dlsym(RTLD_NEXT, "calloc");
  real_realloc = dlsym(RTLD_NEXT, "realloc");
  real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
  real_free = dlsym(RTLD_NEXT, "free");
  resolving = 0;
}

/* Armed: count allocations; fail the one numbered fail_at (1-based), or
 * with `persistent` every one from there on (memory that stays short). */
static int should_fail(void) {
  if (!atomic_load(&armed)) return 0;
  long n = atomic_fetch_add(&calls, 1) + 1;
  if (atomic_load(&persistent) ? n < atomic_load(&fail_at) : n != atomic_load(&fail_at)) return 0;
  atomic_fetch_add(&failed, 1);
  return 1;
}

/* A failing call does what the libc's does: NULL, errno ENOMEM. */
static void* enomem(void) {
  errno = ENOMEM;
  return NULL;
}

static void track(void* p, int sign) {
  if (p && atomic_load(&armed)) atomic_fetch_add(&live_bytes, sign * (long)malloc_usable_size(p));
}

void* malloc(size_t n) {
  resolve();
  if (!real_malloc) return boot_alloc(n);
  if (should_fail()) return enomem();
  void* p = real_malloc(n);
  track(p, 1);
  return p;
}

void* calloc(size_t a, size_t b) {
  resolve();
  if (!real_calloc) {
    void* p = boot_alloc(a * b);
    if (p) memset(p, 0, a * b);
    return p;
  }
  if (should_fail()) return enomem();
  void* p = real_calloc(a, b);
  track(p, 1);
  return p;
}

void* realloc(void* q, size_t n) {
  resolve();
  if (should_fail()) return enomem();
  track(q, -1);
  void* p = real_realloc(q, n);
  track(p, 1);
  return p;
}

void* aligned_alloc(size_t al, size_t n) {
  resolve();
  if (should_fail()) return enomem();
  void* p = real_aligned_alloc(al, n);
  track(p, 1);
  return p;
}

void free(void* p) {
  if (!p || is_boot(p)) return;
  resolve();
  track(p, -1);
  real_free(p);
}
#endif

void fa_arm(long n, int always) {
  atomic_store(&persistent, always);
  atomic_store(&calls, 0);
  atomic_store(&failed, 0);
  atomic_store(&live_bytes, 0);
  atomic_store(&fail_at, n);
  atomic_store(&armed, 1);
}

void fa_track_only(void) {
  atomic_store(&persistent, 0);
  atomic_store(&fail_at, 0);
  atomic_store(&armed, 1);
}
void fa_disarm(void) { atomic_store(&armed, 0); }
long fa_calls(void) { return atomic_load(&calls); }
long fa_failed(void) { return atomic_load(&failed); }
long fa_live_bytes(void) { return atomic_load(&live_bytes); }
