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

/* The unit of a stock op's nSteps and step numbers, by the profiler API
 * the host bound: one row per version, its source beside it. RCCL's
 * ProxyDiag ops are counted in raw steps whatever the table
 * (rawProxyNsteps, the values of its ProxyDiag updates: RCCL's
 * plugins/profiler/proxytrace/proxytrace_plugin.cc); the trace core knows
 * them by their origin. */
static const struct {
  int api;
  int raw_steps; /* 1: raw steps (sliceSteps to a network transfer); 0: network transfers */
} step_units[] = {
    /* 2.23: nSteps = sub->nsteps, step = the raw stepId, sliceSteps step
     * events per transfer (v2.23.4-1 src/misc/profiler.cc:403-441) */
    {1, 1},
    /* 2.24-2.25: nSteps = DIVUP(sub->nsteps, sliceSteps), step =
     * DIVUP(stepId, sliceSteps) (v2.24.3-1 src/misc/profiler.cc:474-475) */
    {2, 0},
    /* 2.26: as 2.24 (v2.26.6-1 src/plugin/profiler.cc, ncclProfilerStartProxyOpEvent) */
    {3, 0},
    /* 2.27: as 2.24 (v2.27.7-1 src/plugin/profiler.cc, ncclProfilerStartProxyOpEvent) */
    {4, 0},
    /* 2.28: as 2.24 (v2.28.9-1 src/plugin/profiler.cc, ncclProfilerStartProxyOpEvent) */
    {5, 0},
    /* 2.29-2.30, and RCCL's ops without ProxyDiag fields: as 2.24
     * (v2.29.7-1 src/plugin/profiler.cc; RCCL's src/plugin/profiler.cc
     * sets the same DIVUP for its ProxyOp events) */
    {6, 0},
    /* 2.31-2.32: as 2.29 (v2.31 src/plugin/profiler.cc) */
    {7, 0},
};

int pt_api_raw_steps(int api) {
  for (size_t i = 0; i < sizeof step_units / sizeof step_units[0]; i++)
    if (step_units[i].api == api) return step_units[i].raw_steps;
  return 0;
}
