/*
 * host.c — which host the plugin runs in, RCCL or NVIDIA NCCL, for the one
 * thing that differs at run time outside the ABI: the number of the WARN
 * level in the host's logger (RCCL 3, NVIDIA 2; RCCL inserts ERROR = 1 —
 * spec/rccl-proxytrace.md §1.6). Logging at 2 under RCCL is its VERSION
 * level.
 *
 * RCCL is told by a symbol only RCCL exports. RCCL has no rcclGetVersion;
 * it does export mscclLoadAlgo (ROCm/rccl since rocm-5.7.0,
 * src/collectives/msccl.cc, later src/msccl.cc; newer releases keep it as a
 * stub that warns it is deprecated) and ncclAllToAllv (src/collectives.cc),
 * and no NVIDIA NCCL release from v2.23.4-1 to v2.30.7-1 defines either
 * (neither name occurs anywhere in their sources). The symbols are looked up first in the library the host's
 * logger belongs to — found with dladdr, so it works when the host library
 * was opened RTLD_LOCAL — then in the global scope. Only cold paths call
 * this (init, a bad variable); each communicator keeps its answer.
 */
#include <dlfcn.h>
#include <stdint.h>

#include "plugin/plugin.h"

static const char* const rccl_only[] = {"mscclLoadAlgo", "ncclAllToAllv"};

static int exports_rccl_symbol(void* handle) {
  for (size_t i = 0; i < sizeof rccl_only / sizeof rccl_only[0]; i++)
    if (dlsym(handle, rccl_only[i])) return 1;
  return 0;
}

/* The library the host's logger belongs to, opened again (RTLD_NOLOAD), or
 * NULL; the caller closes it. */
static void* logger_library(ncclDebugLogger_t log) {
  Dl_info info;
  if (log && dladdr((void*)log, &info) && info.dli_fname && info.dli_fname[0])
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  return NULL;
}

int pt_host_rccl_symbol(ncclDebugLogger_t log) {
  void* h = logger_library(log);
  if (h) {
    int found = exports_rccl_symbol(h);
    dlclose(h);
    if (found) return 1;
  }
  return exports_rccl_symbol(RTLD_DEFAULT);
}

/* ncclGetVersion(int*) returns ncclResult_t and writes NCCL_VERSION_CODE
 * (major*10000 + minor*100 + patch from 2.9) — in RCCL too. */
int pt_host_version(ncclDebugLogger_t log) {
  typedef int (*get_version_fn)(int*);
  void* h = logger_library(log);
  get_version_fn f = h ? (get_version_fn)(uintptr_t)dlsym(h, "ncclGetVersion") : NULL;
  if (!f) f = (get_version_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "ncclGetVersion");
  int v = -1;
  if (!f || f(&v) != 0) v = -1;
  if (h) dlclose(h);
  return v;
}


int pt_host_warn_level(ncclDebugLogger_t log) {
  return pt_host_rccl_symbol(log) ? RCCL_LOG_WARN : NCCL_LOG_WARN;
}
