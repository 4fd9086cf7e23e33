/*
 * forward_plugin.c — the least a plugin between the host and another can
 * do: a v6 profiler that forwards each call to the v6 plugin named by
 * BENCH_FORWARD_TO and checks its result (as the fan-out must, to disable a
 * failing child). bench_fanout runs it beside the fan-out, so the fan-out's
 * cost reads against the floor of one more indirect call per event.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "nccl/profiler_v6.h"

static const ncclProfiler_v6_t* to;
static long errors;

static ncclResult_t f_init(void** c, uint64_t id, int* mask, const char* n, int nn, int nr, int r,
                           ncclDebugLogger_t l) {
  const char* path = getenv("BENCH_FORWARD_TO");
  void* dl = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  to = dl ? dlsym(dl, "ncclProfiler_v6") : NULL;
  if (!to) {
    fprintf(stderr, "forward_plugin: BENCH_FORWARD_TO=%s: no ncclProfiler_v6\n", path ? path : "(unset)");
    return ncclInvalidUsage;
  }
  return to->init(c, id, mask, n, nn, nr, r, l);
}
static ncclResult_t f_start(void* c, void** h, ncclProfilerEventDescr_v6_t* d) {
  if (__builtin_expect(to->startEvent(c, h, d) != ncclSuccess, 0)) errors++;
  return ncclSuccess;
}
static ncclResult_t f_stop(void* h) {
  if (__builtin_expect(to->stopEvent(h) != ncclSuccess, 0)) errors++;
  return ncclSuccess;
}
static ncclResult_t f_record(void* h, ncclProfilerEventState_v6_t s, ncclProfilerEventStateArgs_v6_t* a) {
  if (__builtin_expect(to->recordEventState(h, s, a) != ncclSuccess, 0)) errors++;
  return ncclSuccess;
}
static ncclResult_t f_fini(void* c) { return to->finalize(c); }

__attribute__((visibility("default"))) const ncclProfiler_v6_t ncclProfiler_v6 = {
    "bench-forward", f_init, f_start, f_stop, f_record, f_fini};
