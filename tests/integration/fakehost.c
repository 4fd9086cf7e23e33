/*
 * fakehost.c — a stand-in for the host library a plugin logs into: a
 * logger that counts lines per level, and, built with -DFAKE_RCCL, the
 * symbol by which the plugin tells RCCL (mscclLoadAlgo, which RCCL exports
 * and no NVIDIA NCCL release does) and RCCL 2.31's ncclGetVersion.
 * test_host_detect.c loads one of each, test_rccl_diag.c the RCCL one.
 */
#include <stdarg.h>
#include <stdatomic.h>

static _Atomic int lines[8];

__attribute__((visibility("default"))) void fakehost_log(int level, unsigned long flags, const char* file,
                                                         int line, const char* fmt, ...) {
  (void)flags;
  (void)file;
  (void)line;
  (void)fmt;
  if (level >= 0 && level < 8) atomic_fetch_add(&lines[level], 1);
}

__attribute__((visibility("default"))) int fakehost_lines(int level) {
  return level >= 0 && level < 8 ? atomic_load(&lines[level]) : 0;
}

#ifdef FAKE_RCCL
/* RCCL 2.31.0's NCCL_VERSION_CODE. */
__attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  *version = 23100;
  return 0;
}

__attribute__((visibility("default"))) int mscclLoadAlgo(const char* path, void* handle, int rank) {
  (void)path;
  (void)handle;
  (void)rank;
  return 0;
}
#endif
