/*
 * empty_plugin.c — a v6 profiler plugin that does nothing: the baseline the
 * benchmark subtracts, driven through the same ABI calls as the real one.
 */
#include "nccl/profiler_v6.h"

static char dummy[256];

void ncclProfilerProxyTraceDump(void* c, ncclDebugLogger_t l);

static ncclResult_t e_init(void** c, uint64_t id, int* mask, const char* n, int nn, int nr, int r,
                           ncclDebugLogger_t l) {
  (void)id; (void)n; (void)nn; (void)nr; (void)r; (void)l;
  *c = dummy;
  *mask = 0x8018;
  return ncclSuccess;
}
static ncclResult_t e_start(void* c, void** h, ncclProfilerEventDescr_v6_t* d) {
  (void)c; (void)d;
  *h = dummy;
  return ncclSuccess;
}
static ncclResult_t e_stop(void* h) { (void)h; return ncclSuccess; }
static ncclResult_t e_record(void* h, ncclProfilerEventState_v6_t s,
                             ncclProfilerEventStateArgs_v6_t* a) {
  (void)h; (void)s; (void)a;
  return ncclSuccess;
}
static ncclResult_t e_fini(void* c) { (void)c; return ncclSuccess; }

__attribute__((visibility("default"))) ncclProfiler_v6_t ncclProfiler_v6 = {
    "Empty", e_init, e_start, e_stop, e_record, e_fini};
__attribute__((visibility("default"))) void ncclProfilerProxyTraceDump(void* c,
                                                                       ncclDebugLogger_t l) {
  (void)c; (void)l;
}
