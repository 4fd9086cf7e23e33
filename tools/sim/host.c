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
 * ProxyDiag additions and its own logger levels. 2.31, 2.32 and RCCL 2.31
 * each say where their facts come from, field by field, in their row. Each
 * release's facts live in its row; the code asks the row, never the name.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const sim_host hosts[] = {
    /* v1 (every step fact: docs/sim.md, "One send step and one receive step"):
     * ProxyOp started at the first progress call, states 0-7 {steps, transSize} with the step
     *   events (v2.23.4-1 src/transport/net.cc:1047,1085,1127,1136,1169 send; :1236,1302,1347,
     *   1404,1444 recv);
     * sliceSteps step events per transfer, steps counted raw (net.cc:1069,1261;
     *   src/misc/profiler.cc:403-441);
     * transSize added up, after the send's records (net.cc:1136-1138; recv :1346);
     * a failed init turns profiling off;
     * init(context, eActivationMask) has no comm arguments: rank and commHash come with the first
     *   event (v2.23.4-1 src/include/nccl_profiler.h:117) */
    {.host = PT_HOST_NCCL_2_23, .name = "nccl-2.23", .minor = 23, .native = 1, .gate = SIM_GATE_2_23,
     .old_op_states = 1, .raw_step_events = 1, .size_after_send_records = 1,
     .init_fail = SIM_INITFAIL_DISABLE, .warn_level = NCCL_LOG_WARN, .comm_from_events = 1},
    /* v2: ProxyOp states with the step events (v2.24.3-1 net.cc:1086,1125,1173,1183,1204;
     *   :1266,1344,1376,1440,1477);
     * transSize added up, before SendTransmitted (net.cc:1181,1374);
     * consumption stops the batch's first step only (net.cc:1460,1476; NVIDIA/nccl#1658);
     * the v1->v2 adapter drops init's result (src/misc/profiler.cc:113-120);
     * init has no comm arguments (v2.24.3-1 src/include/nccl_profiler.h:207) */
    {.host = PT_HOST_NCCL_2_24, .name = "nccl-2.24", .minor = 24, .native = 2, .gate = SIM_GATE_2_23,
     .old_op_states = 1, .recv_stop_bug = 1, .init_fail = SIM_INITFAIL_DISABLE,
     .warn_level = NCCL_LOG_WARN, .v1_init_ignored = 1, .comm_from_events = 1},
    /* as 2.24, line for line (v2.25.1-1 src/transport/net.cc, src/misc/profiler.cc) */
    {.host = PT_HOST_NCCL_2_25, .name = "nccl-2.25", .minor = 25, .native = 2, .gate = SIM_GATE_2_23,
     .old_op_states = 1, .recv_stop_bug = 1, .init_fail = SIM_INITFAIL_DISABLE,
     .warn_level = NCCL_LOG_WARN, .v1_init_ignored = 1, .comm_from_events = 1},
    /* v3; gates of v2.26.6-1 src/plugin/profiler.cc:211,236,274;
     * ProxyOp states with the step events (net.cc:1104,1143,1191,1202,1223; :1285,1366,1398,
     *   1462,1499); transSize added up (net.cc:1199,1396);
     * consumption stops the batch's first step only (net.cc:1482,1498);
     * init has no comm arguments (src/include/plugin/profiler/profiler_v3.h:84) */
    {.host = PT_HOST_NCCL_2_26, .name = "nccl-2.26", .minor = 26, .native = 3, .gate = SIM_GATE_2_26,
     .old_op_states = 1, .recv_stop_bug = 1, .init_fail = SIM_INITFAIL_DISABLE,
     .warn_level = NCCL_LOG_WARN, .comm_from_events = 1},
    /* v4; the op registers at state 19 (InProgress_v4); short names only (loader) */
    {.host = PT_HOST_NCCL_2_27_3, .name = "nccl-2.27.3", .minor = 27, .native = 4,
     .gate = SIM_GATE_2_26, .init_fail = SIM_INITFAIL_DISABLE, .warn_level = NCCL_LOG_WARN},
    /* v4 (v2.27.7-1 src/plugin/profiler.cc:216,241,277);
     * InProgress (19) at the first call, SendPeerWait (20) before every isend try, transSize
     *   the last transfer's (net.cc:1118,1204,1213; :1296,1405);
     * consumption stops each step, its id read in the loop (net.cc:1503,1505);
     * steps start only under a ProxyOp handle (src/plugin/profiler.cc:357,376) */
    {.host = PT_HOST_NCCL_2_27, .name = "nccl-2.27", .minor = 27, .native = 4, .gate = SIM_GATE_2_26,
     .init_fail = SIM_INITFAIL_DISABLE, .warn_level = NCCL_LOG_WARN},
    /* v5; API events; a failed init logged; finalize only with a context (v2.28.9-1
     * src/plugin/profiler.cc:219,267,292,398,433); steps start on the mask alone (:511,530);
     * the step sequence of 2.27 (net.cc:1228,1314,1325,1346; :1409,1491,1520,1585,1620) */
    {.host = PT_HOST_NCCL_2_28, .name = "nccl-2.28", .minor = 28, .native = 5, .gate = SIM_GATE_2_28,
     .api_events = 1, .init_fail = SIM_INITFAIL_LOG, .finalize_needs_ctx = 1,
     .warn_level = NCCL_LOG_WARN},
    /* v6; the mask log line; CE bits in the GroupApi/CollApi gates (v2.29.7-1
     * src/plugin/profiler.cc:252,329); the step sequence of 2.28 (net.cc:1248,1334,1345,1366;
     * :1429,1511,1540,1605,1640) */
    {.host = PT_HOST_NCCL_2_29, .name = "nccl-2.29", .minor = 29, .native = 6, .gate = SIM_GATE_2_28,
     .api_events = 1, .init_fail = SIM_INITFAIL_LOG, .finalize_needs_ctx = 1, .log_mask = 1,
     .warn_level = NCCL_LOG_WARN, .api_ce = 1},
    /* as 2.29; a failed init unloads the plugin (v2.30.7-1 src/plugin/profiler.cc,
     * ncclProfilerPluginInit); the step sequence of 2.28 (net.cc:1315,1407,1422,1444;
     * :1511,1603,1632,1707,1745) */
    {.host = PT_HOST_NCCL_2_30, .name = "nccl-2.30", .minor = 30, .native = 6, .gate = SIM_GATE_2_28,
     .api_events = 1, .init_fail = SIM_INITFAIL_UNLOAD, .finalize_needs_ctx = 1, .log_mask = 1,
     .warn_level = NCCL_LOG_WARN, .api_ce = 1},
    /* the 2.29 core with ProxyDiag (bit 15, state 31) and RCCL's logger levels (ROCm/rocm-systems
     * projects/rccl @1a905b50: its v6 profiler header and profiler.cc) */
    {.host = PT_HOST_RCCL, .name = "rccl", .minor = 29, .native = 6, .rccl = 1, .gate = SIM_GATE_2_28,
     .api_events = 1, .init_fail = SIM_INITFAIL_LOG, .finalize_needs_ctx = 1, .log_mask = 1,
     .warn_level = RCCL_LOG_WARN, .api_ce = 1, .diag_bit = ncclProfileProxyDiag,
     .diag_state = ncclProfilerProxyDiagUpdate},
    /* 2.31: the step sequence of 2.30 (2.31.0a7-1 db761c88 src/transport/net.cc and
     * src/plugin/profiler.cc: the progress functions and step glue unchanged; 2.31.2 inferred);
     * API v7 (v2.31 src/include/plugin/profiler/profiler_v7.h @889806836); v6 through
     * the adapter (src/plugin/profiler/profiler_v6.cc: stack copies, KernelPhase dropped, bit 15
     * cleared after init, state 31 dropped); kernel-channel events from the profiler thread
     * (src/plugin/profiler.cc struct ncclProfilerThread); RAS mask re-applied after each init
     * (ncclProfilerPluginInit); the init-failure path of 2.30 (ncclProfilerPluginUnload). */
    {.host = PT_HOST_NCCL_2_31, .name = "nccl-2.31", .minor = 31, .native = 7, .gate = SIM_GATE_2_28,
     .api_events = 1, .init_fail = SIM_INITFAIL_UNLOAD, .finalize_needs_ctx = 1, .log_mask = 1,
     .warn_level = NCCL_LOG_WARN, .api_ce = 1, .kernel_thread = 1, .ras = 1},
    /* 2.32: as 2.31 (release commits 12df1a1 v2.32.3-1, ad2d192 v2.32.6-1; their profiler
     * and net.cc sources were not read line by line: taken as 2.31's, step sequence included). */
    {.host = PT_HOST_NCCL_2_32, .name = "nccl-2.32", .minor = 32, .native = 7, .gate = SIM_GATE_2_28,
     .api_events = 1, .init_fail = SIM_INITFAIL_UNLOAD, .finalize_needs_ctx = 1, .log_mask = 1,
     .warn_level = NCCL_LOG_WARN, .api_ce = 1, .kernel_thread = 1, .ras = 1},
    /* RCCL 2.31: the 2.31 core with RCCL's additions; ProxyDiag as bit 16 (RCCL's
     * NCCL_PROFILE_EVENT_MASK reference: 65536), its update state 32 (inferred: 31 is
     * KernelPhaseStop); its v6 layer clears bit 15 (same reference) and is taken to pass RCCL's
     * fields and state 32 through (inferred). */
    {.host = PT_HOST_RCCL_2_31, .name = "rccl-2.31", .minor = 31, .native = 7, .rccl = 1,
     .gate = SIM_GATE_2_28, .api_events = 1, .init_fail = SIM_INITFAIL_LOG, .finalize_needs_ctx = 1,
     .log_mask = 1, .warn_level = RCCL_LOG_WARN, .api_ce = 1, .kernel_thread = 1, .ras = 1,
     .diag_bit = ncclProfileProxyDiag_v7, .diag_state = ncclProfilerProxyDiagUpdate_v7},
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
  return (m & (PO | PS | NP | h->diag_bit)) != 0;
}
/* RCCL starts steps under the ProxyDiag bit too (profiler.cc
 * ncclProfilerStart{Send,Recv}ProxyStepEvent, ROCm/rocm-systems
 * projects/rccl @1a905b50). */
int sim_gate_proxy_step(const sim_host* h, int m, const void* op_handle) {
  if (h->gate == SIM_GATE_2_23) return op_handle && (m & PS);
  if (h->gate == SIM_GATE_2_26) return op_handle && (m & (PS | NP));
  return (m & (PS | NP | h->diag_bit)) != 0;
}
/* Step states need the ProxyOp handle on every release (on 2.23-2.27 the
 * step is not even started without it). */
int sim_gate_step_state(const sim_host* h, const void* op_handle) {
  (void)h;
  return op_handle != NULL;
}
int sim_gate_kernel_ch(const sim_host* h, int m) { return h->native >= 3 && (m & KC); }
/* v7 hosts: KernelPhase needs KernelCh, which the host turns on for it
 * (v2.31 src/plugin/profiler.cc ncclProfilerEnforceMaskDeps). */
int sim_gate_kernel_phase(const sim_host* h, int m) {
  return h->native >= 7 && (m & ncclProfileKernelPhase) && (m & KC);
}
int sim_gate_diag(const sim_host* h, int m, const void* op_handle) {
  return h->diag_bit && (m & h->diag_bit) && op_handle;
}

void sim_mask_words(const sim_host* h, int mask, char* buf, size_t len) {
  static const char* words[] = {"Group",   "Coll",      "P2p",      "ProxyOp",  "ProxyStep",
                                "ProxyCtrl", "KernelCh", "NetPlugin", "GroupApi", "CollApi",
                                "P2pApi",  "KernelLaunch", "CeColl", "CeSync",   "CeBatch",
                                "ProxyDiag", "ProxyDiag"};
  /* bit 15: RCCL's ProxyDiag before 2.31, KernelPhase on v7 hosts; bit 16: RCCL 2.31's ProxyDiag */
  size_t n = h->native >= 7 ? (h->rccl ? 17 : 16) : h->rccl ? 16 : 15, off = 0;
  buf[0] = 0;
  for (size_t i = 0; i < n && off < len; i++) {
    if (!(mask & (1 << i))) continue;
    if (i == 15 && h->native >= 7) {
      int w = snprintf(buf + off, len - off, "KernelPhase ");
      if (w < 0) break;
      off += (size_t)w;
      continue;
    }
    int w = snprintf(buf + off, len - off, "%s ", words[i]);
    if (w < 0) break;
    off += (size_t)w;
  }
}
