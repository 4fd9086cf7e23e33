/*
 * host.c — what differs between the hosts the emulator plays: NCCL 2.23 …
 * 2.30 and RCCL. One table row per host; the gating functions turn a task's
 * sampled activation mask into "does the host start this event", release by
 * release (spec nccl-profiler-abi.md §5.2, rccl-proxytrace.md §2.3).
 *
 * The rows follow each release's code: v1 2.23, v2 2.24-2.25, v3 2.26, v4
 * 2.27, v5 2.28, v6 2.29+; ProxyOp states 0-7 and the op started inside the
 * net progress function up to 2.26; sliceSteps step events per transfer in
 * 2.23; the receive-stop bug of 2.24-2.26 (NVIDIA/nccl#1658); init failures
 * by release; finalize only with a context from 2.28; the mask log line from
 * 2.29; the CE bits in the GroupApi/CollApi gates from 2.29 (v2.28.9-1
 * src/plugin/profiler.cc:219,292 have none); and the v1->v2 adapter of
 * 2.24-2.25, which drops a v1 plugin's init result (v2.24.3-1
 * src/misc/profiler.cc:113-120). RCCL is taken as the 2.29 core with the
 * ProxyDiag additions and its own logger levels.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const sim_host hosts[] = {
    {PT_HOST_NCCL_2_23, "nccl-2.23", 23, 1, 0, SIM_GATE_2_23, 1, 1, 0, 0, SIM_INITFAIL_DISABLE, 0, 0, NCCL_LOG_WARN, 0, 0},
    {PT_HOST_NCCL_2_24, "nccl-2.24", 24, 2, 0, SIM_GATE_2_23, 1, 0, 1, 0, SIM_INITFAIL_DISABLE, 0, 0, NCCL_LOG_WARN, 0, 1},
    {PT_HOST_NCCL_2_25, "nccl-2.25", 25, 2, 0, SIM_GATE_2_23, 1, 0, 1, 0, SIM_INITFAIL_DISABLE, 0, 0, NCCL_LOG_WARN, 0, 1},
    {PT_HOST_NCCL_2_26, "nccl-2.26", 26, 3, 0, SIM_GATE_2_26, 1, 0, 1, 0, SIM_INITFAIL_DISABLE, 0, 0, NCCL_LOG_WARN, 0, 0},
    {PT_HOST_NCCL_2_27_3, "nccl-2.27.3", 27, 4, 0, SIM_GATE_2_26, 0, 0, 0, 0, SIM_INITFAIL_DISABLE, 0, 0, NCCL_LOG_WARN, 0, 0},
    {PT_HOST_NCCL_2_27, "nccl-2.27", 27, 4, 0, SIM_GATE_2_26, 0, 0, 0, 0, SIM_INITFAIL_DISABLE, 0, 0, NCCL_LOG_WARN, 0, 0},
    {PT_HOST_NCCL_2_28, "nccl-2.28", 28, 5, 0, SIM_GATE_2_28, 0, 0, 0, 1, SIM_INITFAIL_LOG, 1, 0, NCCL_LOG_WARN, 0, 0},
    {PT_HOST_NCCL_2_29, "nccl-2.29", 29, 6, 0, SIM_GATE_2_28, 0, 0, 0, 1, SIM_INITFAIL_LOG, 1, 1, NCCL_LOG_WARN, 1, 0},
    {PT_HOST_NCCL_2_30, "nccl-2.30", 30, 6, 0, SIM_GATE_2_28, 0, 0, 0, 1, SIM_INITFAIL_UNLOAD, 1, 1, NCCL_LOG_WARN, 1, 0},
    {PT_HOST_RCCL, "rccl", 29, 6, 1, SIM_GATE_2_28, 0, 0, 0, 1, SIM_INITFAIL_LOG, 1, 1, RCCL_LOG_WARN, 1, 0},
};

const sim_host* sim_host_of(pt_host h) {
  for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++)
    if (hosts[i].host == h) return &hosts[i];
  return NULL;
}

int sim_host_level(const sim_host* h, int level) {
  if (h->rccl) {
    /* RCCL: NONE 0, ERROR 1, VERSION 2, WARN 3, INFO 4, ABORT 5, TRACE 6. */
    if (level < 0) return PT_SIM_LOG_NONE;
    return level > PT_SIM_LOG_TRACE ? PT_SIM_LOG_TRACE : level;
  }
  /* NVIDIA: NONE 0, VERSION 1, WARN 2, INFO 3, ABORT 4, TRACE 5. */
  switch (level) {
    case NCCL_LOG_NONE: return PT_SIM_LOG_NONE;
    case NCCL_LOG_VERSION: return PT_SIM_LOG_VERSION;
    case NCCL_LOG_WARN: return PT_SIM_LOG_WARN;
    case NCCL_LOG_INFO: return PT_SIM_LOG_INFO;
    case NCCL_LOG_ABORT: return PT_SIM_LOG_ABORT;
    default: return level < 0 ? PT_SIM_LOG_NONE : PT_SIM_LOG_TRACE;
  }
}

enum {
  G = ncclProfileGroup,
  C = ncclProfileColl,
  P = ncclProfileP2p,
  PO = ncclProfileProxyOp,
  PS = ncclProfileProxyStep,
  PC = ncclProfileProxyCtrl,
  KC = ncclProfileKernelCh,
  NP = ncclProfileNetPlugin,
  GA = ncclProfileGroupApi,
  CA = ncclProfileCollApi,
  PA = ncclProfileP2pApi,
  KL = ncclProfileKernelLaunch,
  CE = ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch,
  PD = ncclProfileProxyDiag
};

int sim_gate_group_api(const sim_host* h, int m) {
  return h->api_events && (m & (GA | PA | CA | KL | G | C | P | PO | PS | KC | NP | (h->api_ce ? CE : 0)));
}
int sim_gate_coll_api(const sim_host* h, int m) {
  return h->api_events && (m & (CA | C | PO | PS | KC | NP | (h->api_ce ? CE : 0)));
}
int sim_gate_p2p_api(const sim_host* h, int m) {
  return h->api_events && (m & (PA | P | PO | PS | KC | NP));
}
int sim_gate_kernel_launch(const sim_host* h, int m) { return h->api_events && (m & KL); }

int sim_gate_group(const sim_host* h, int m) {
  if (h->gate == SIM_GATE_2_23) return (m & (C | P | PO | PS)) != 0;
  return (m & (G | C | P | PO | PS | KC | NP)) != 0;
}
/* 2.23-2.25: one `enable` for Coll and P2p, under the Group handle
 * (v2.25.1-1 src/misc/profiler.cc:383-384). */
static int enable_2_23(int m, const void* group) { return group && (m & (PO | PS | C)); }
int sim_gate_coll(const sim_host* h, int m, const void* group) {
  if (h->gate == SIM_GATE_2_23) return enable_2_23(m, group);
  if (h->gate == SIM_GATE_2_26) return group && (m & (C | PO | PS | KC | NP));
  return (m & (C | PO | PS | KC | NP)) != 0;
}
/* 2.26-2.27 gate P2p without the NetPlugin bit (v2.26.6-1
 * src/plugin/profiler.cc:274, v2.27.7-1 :277); 2.28 added it (:433). */
int sim_gate_p2p(const sim_host* h, int m, const void* group) {
  if (h->gate == SIM_GATE_2_23) return enable_2_23(m, group);
  if (h->gate == SIM_GATE_2_26) return group && (m & (P | PO | PS | KC));
  return (m & (P | PO | PS | KC | NP)) != 0;
}
/* 2.23-2.25 give a task its mask only where they start its Coll/P2p event
 * (v2.23.4-1 src/misc/profiler.cc:272,299,318; v2.24.3-1 and v2.25.1-1
 * :384,408,427): without a Group handle the proxy ops carry 0 and send
 * nothing. 2.26+ copy the mask into the task at enqueue. */
int sim_task_mask(const sim_host* h, int m, const void* group) {
  if (h->gate == SIM_GATE_2_23) return enable_2_23(m, group) ? m : 0;
  return m;
}
int sim_gate_proxy_op(const sim_host* h, int m) {
  if (h->gate == SIM_GATE_2_23) return (m & (PO | PS)) != 0;
  return (m & (PO | PS | NP | (h->rccl ? PD : 0))) != 0;
}
/* RCCL starts steps under the ProxyDiag bit too (profiler.cc
 * ncclProfilerStart{Send,Recv}ProxyStepEvent, ROCm/rocm-systems
 * projects/rccl @1a905b50). */
int sim_gate_proxy_step(const sim_host* h, int m, const void* op_handle) {
  if (h->gate == SIM_GATE_2_23) return op_handle && (m & PS);
  if (h->gate == SIM_GATE_2_26) return op_handle && (m & (PS | NP));
  return (m & (PS | NP | (h->rccl ? PD : 0))) != 0;
}
/* Step states need the ProxyOp handle on every release (on 2.23-2.27 the
 * step is not even started without it). */
int sim_gate_step_state(const sim_host* h, const void* op_handle) {
  (void)h;
  return op_handle != NULL;
}
int sim_gate_kernel_ch(const sim_host* h, int m) { return h->native >= 3 && (m & KC); }
int sim_gate_diag(const sim_host* h, int m, const void* op_handle) {
  return h->rccl && (m & PD) && op_handle;
}

void sim_mask_words(const sim_host* h, int mask, char* buf, size_t len) {
  static const char* words[] = {"Group",   "Coll",      "P2p",      "ProxyOp",  "ProxyStep",
                                "ProxyCtrl", "KernelCh", "NetPlugin", "GroupApi", "CollApi",
                                "P2pApi",  "KernelLaunch", "CeColl", "CeSync",   "CeBatch",
                                "ProxyDiag"};
  size_t n = h->rccl ? 16 : 15, off = 0;
  buf[0] = 0;
  for (size_t i = 0; i < n && off < len; i++) {
    if (!(mask & (1 << i))) continue;
    int w = snprintf(buf + off, len - off, "%s ", words[i]);
    if (w < 0) break;
    off += (size_t)w;
  }
}
