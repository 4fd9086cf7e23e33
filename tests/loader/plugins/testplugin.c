/*
 * testplugin.c — the profiler plugins the loader tests are made of. One
 * source, built many times with different -D flags (mk/loader.mk):
 *
 *   PT_TEST_EXPORTS=0xNN   bit N set: export ncclProfiler_vN (N = 1..6)
 *   PT_TEST_DUMP           export ncclProfilerProxyTraceDump
 *   PT_TEST_MAJOR=N        pt_test_major (to tell copies apart)
 *   PT_TEST_NULL_INIT      the tables' init pointer is NULL
 *   PT_TEST_SMALL_TABLE    ncclProfiler_v6 is a 16-byte object
 *   PT_TEST_FUNC_TABLE     ncclProfiler_v6 is a function, not a table
 *   PT_TEST_UNDEFINED      needs a symbol nothing defines (RTLD_NOW fails)
 *   PT_TEST_CRASH          its constructor aborts the process
 *   PT_TEST_HANG           its constructor never returns
 *
 * The functions do nothing: the loader never calls them. A constructor
 * counts how often the library was initialised, so tests can check that a
 * plugin was loaded once (or not at all, by the probe).
 */
#define PT_API __attribute__((visibility("default")))

#ifndef PT_TEST_EXPORTS
#define PT_TEST_EXPORTS 0
#endif
#ifndef PT_TEST_MAJOR
#define PT_TEST_MAJOR 1
#endif

typedef struct {
  const char* name;
  int (*init)(void);
  int (*start_event)(void);
  int (*stop_event)(void);
  int (*record_event_state)(void);
  int (*finalize)(void);
} table_t;

__attribute__((unused)) static int nop(void) { return 0; }

#ifdef PT_TEST_NULL_INIT
#define INIT_FN 0
#else
#define INIT_FN nop
#endif

#define TABLE(n) \
  PT_API const table_t ncclProfiler_v##n = {"test-v" #n, INIT_FN, nop, nop, nop, nop};

#if PT_TEST_EXPORTS & (1 << 1)
TABLE(1)
#endif
#if PT_TEST_EXPORTS & (1 << 2)
TABLE(2)
#endif
#if PT_TEST_EXPORTS & (1 << 3)
TABLE(3)
#endif
#if PT_TEST_EXPORTS & (1 << 4)
TABLE(4)
#endif
#if PT_TEST_EXPORTS & (1 << 5)
TABLE(5)
#endif
#if PT_TEST_EXPORTS & (1 << 6)
#if defined(PT_TEST_SMALL_TABLE)
PT_API const struct {
  const char* name;
  int (*init)(void);
} ncclProfiler_v6 = {"small", nop};
#elif defined(PT_TEST_FUNC_TABLE)
PT_API int ncclProfiler_v6(void) { return 0; }
#else
TABLE(6)
#endif
#endif

#if PT_TEST_EXPORTS & (1 << 7)
TABLE(7)
#endif

#ifdef PT_TEST_DUMP
PT_API void ncclProfilerProxyTraceDump(void* context, void* logfn) { (void)context, (void)logfn; }
#endif

#ifdef PT_TEST_UNDEFINED
extern int pt_test_symbol_nobody_defines(void);
PT_API int pt_test_use_undefined(void) { return pt_test_symbol_nobody_defines(); }
#endif

PT_API int pt_test_major = PT_TEST_MAJOR;
PT_API int pt_test_ctor_runs;
#ifdef PT_TEST_CRASH
#include <stdlib.h>
#endif
#ifdef PT_TEST_HANG
#include <unistd.h>
#endif
__attribute__((constructor)) static void count_ctor(void) {
  pt_test_ctor_runs++;
#ifdef PT_TEST_CRASH
  abort();
#endif
#ifdef PT_TEST_HANG
  for (;;) pause();
#endif
}
