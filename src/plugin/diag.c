/*
 * diag.c — RCCL's ProxyDiag on releases the plugin was not built against.
 *
 * RCCL sends the legacy counters of every op as ProxyDiag updates: a mask
 * bit the plugin asks for and a state number on the op's handle. Up to
 * RCCL 2.30 those are bit 15 and state 31 (spec rccl-proxytrace.md §1).
 * RCCL 2.31 took bit 15 for NVIDIA's KernelPhase and, by its own
 * environment-variable reference, moved ProxyDiag to bit 16; its state is
 * in no source we could read, and 31 is NVIDIA's KernelPhaseStop there.
 * A wrong guess costs every counter, silently — so the plugin
 *
 *   - asks for both numberings where that is harmless: bits 15 and 16 in
 *     the v6 table (RCCL 2.31's v6 layer clears 15; older RCCL knows no
 *     16), bit 16 alone in v7 (15 is KernelPhase there, and asking for it
 *     makes NCCL turn kernel-channel profiling on too);
 *   - takes state 31 and state 32 (or PROXYTRACE_RCCL_DIAG's) as updates:
 *     neither is a state NVIDIA sends to a ProxyOp handle;
 *   - checks every ProxyOp that carries RCCL's fields against what the host
 *     guarantees (pt_diag_fields_fit), and every 8 ops whether updates
 *     arrived at all (pt_diag_count_op).
 *
 * When a check fails it says so once per process and problem, at WARN (at
 * the next dump, dumper round or finalize, off the recording thread), marks every dump of the
 * communicator (pt_trace_note: "diag: mismatch" / "diag: missing"), and
 * records its ops from here on from the stock step events, which need no
 * RCCL field, ignoring any ProxyDiag update they get (PT_STEPS_NO_DIAG). The
 * host's ncclGetVersion says which numbering is primary: the one the WARN
 * names and the one PROXYTRACE_RCCL_DIAG's absence implies.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "plugin/plugin.h"

_Atomic int pt_diag_state_v = ncclProfilerProxyDiagUpdate_v7;
static _Atomic int override_bit; /* 0: none */
static _Atomic int host_version = -1;
static atomic_flag set_up = ATOMIC_FLAG_INIT;
static atomic_flag warned[2] = {ATOMIC_FLAG_INIT, ATOMIC_FLAG_INIT}; /* missing, mismatch */

#define PT_DIAG_CHECK_EVERY 8u
#define PT_DIAG_CHECK_UNTIL 4096u /* then undecided stays so */

void pt_diag_setup(const pt_plugin_config* cfg, ncclDebugLogger_t log) {
  if (atomic_flag_test_and_set(&set_up)) return;
  if (cfg->diag_bit) {
    atomic_store(&override_bit, cfg->diag_bit);
    atomic_store(&pt_diag_state_v, cfg->diag_state);
  }
  atomic_store(&host_version, pt_host_version(log));
}

int pt_diag_mask_bits(int api) {
  const int bit = atomic_load(&override_bit);
  if (bit) return 1 << bit;
  return api >= 7 ? ncclProfileProxyDiag_v7 : ncclProfileProxyDiag | ncclProfileProxyDiag_v7;
}

/* "bit 16, state 32 (RCCL 2.31+)" as this host's release implies. */
static const char* primary(void) {
  if (atomic_load(&override_bit)) return "PROXYTRACE_RCCL_DIAG sets";
  const int v = atomic_load(&host_version);
  if (v < 0) return "bits 15 and 16, states 31 and 32 (the host's release is unknown)";
  return v >= 23100 ? "bit 16, state 32 (RCCL 2.31+; state inferred)" : "bit 15, state 31 (RCCL before 2.31)";
}

/* The verdict is reached on the recording thread, where nothing may be
 * formatted or logged: it is left for the next cold moment (a dump, the
 * dumper thread's round, finalize: pt_diag_report). */
static void say_once(pt_ctx* c, int verdict, const char* what) {
  atomic_store_explicit(&c->diag_why, what, memory_order_relaxed);
  atomic_store_explicit(&c->diag_unsaid, verdict, memory_order_release);
}

/* Only RCCL sends ProxyDiag: its WARN level, whatever the symbol check
 * found (host.c). */
void pt_diag_report(pt_ctx* c) {
  const int verdict = atomic_exchange_explicit(&c->diag_unsaid, 0, memory_order_acquire);
  if (!verdict || atomic_flag_test_and_set(&warned[verdict == PT_DIAG_MISMATCH]) || !c->log) return;
  const char* what = atomic_load_explicit(&c->diag_why, memory_order_relaxed);
  char version[32] = "unknown";
  const int v = atomic_load(&host_version);
  if (v > 0) snprintf(version, sizeof version, "%d", v);
  c->log(RCCL_LOG_WARN, NCCL_ALL, __func__, __LINE__,
         "proxytrace: RCCL's ProxyDiag %s; the counters of later ops come from step events, and every "
         "dump's header says so. ProxyDiag was asked for as %s (host version %s); set "
         "PROXYTRACE_RCCL_DIAG=BIT:STATE for this release",
         what, primary(), version);
}

/* Per communicator: each finds out on its own ops, and a wrong op of one
 * costs no other its counters. */
static void mismatch(pt_ctx* c, const char* what) {
  pt_trace_note(c->trace, PT_NOTE_DIAG_MISMATCH);
  atomic_store_explicit(&c->diag_verdict, PT_DIAG_MISMATCH, memory_order_relaxed);
  say_once(c, PT_DIAG_MISMATCH, what);
}

int pt_diag_fields_fit(pt_ctx* c, const struct pt_proxy_op_arm* a) {
  if (atomic_load_explicit(&c->diag_verdict, memory_order_relaxed) == PT_DIAG_MISMATCH) return 0;
  const uint64_t hash = pt_ctx_comm_hash(c);
  const char* broken = NULL;
  if (hash && a->commHash != hash) broken = "layout does not match: a ProxyOp's commHash is not its communicator's";
  else if (a->peer < 0 || (c->nranks > 0 && a->peer >= c->nranks)) broken = "layout does not match: a ProxyOp's peer is out of range";
  else if (a->channelId >= 64) broken = "layout does not match: a ProxyOp's channel is 64 or more";
  else if (a->isSend != 0 && a->isSend != 1) broken = "layout does not match: a ProxyOp's isSend is neither 0 nor 1";
  if (!broken) return 1;
  mismatch(c, broken);
  return 0;
}

static __attribute__((noinline)) void check(pt_ctx* c, int fields) {
  pt_diag_evidence e;
  pt_trace_diag_evidence(c->trace, &e);
  if (e.bad_counters) {
    mismatch(c, "layout does not match: updates carry counter kinds out of range");
  } else if (e.updated) {
    atomic_store_explicit(&c->diag_verdict, PT_DIAG_OK, memory_order_relaxed);
  } else if (e.silent || (!fields && e.stock)) {
    atomic_store_explicit(&c->diag_verdict, PT_DIAG_MISSING, memory_order_relaxed);
    pt_trace_note(c->trace, PT_NOTE_DIAG_MISSING);
    say_once(c, PT_DIAG_MISSING, "updates are missing: ProxyOps arrived and no ProxyDiag update followed");
  }
}

int pt_diag_count_op(pt_ctx* c, int fields) {
  if (atomic_load_explicit(&c->diag_verdict, memory_order_relaxed) == PT_DIAG_UNDECIDED) {
    const uint32_t n = atomic_load_explicit(&c->diag_ops, memory_order_relaxed) + 1;
    atomic_store_explicit(&c->diag_ops, n, memory_order_relaxed);
    if (n % PT_DIAG_CHECK_EVERY == 0 && n <= PT_DIAG_CHECK_UNTIL) check(c, fields);
  }
  const int v = atomic_load_explicit(&c->diag_verdict, memory_order_relaxed);
  return v != PT_DIAG_MISSING && v != PT_DIAG_MISMATCH;
}
