/*
 * plugin.h — what the profiler plugin's files share: the per-communicator
 * context, its configuration, the normalized events every ABI version is
 * translated into (event.c), and the host logger helpers.
 *
 * Reading order for one proxy step: abi_v6.c (the host's call) → event.c
 * (one normalized event) → src/trace/trace.c (the record) → src/trace/dump.c
 * (the printed line, via dump_hook.c).
 */
#ifndef PT_PLUGIN_H
#define PT_PLUGIN_H

#include <stdint.h>
#include <sys/types.h>

#include "nccl/common.h"
#include "proxytrace/trace.h"

#define PT_EXPORT __attribute__((visibility("default")))

/* Events the plugin asks for: ProxyOp | ProxyStep | ProxyDiag (0x8018);
 * tables of API v1-v5 (stock NCCL only) leave out RCCL's ProxyDiag bit. */
#define PT_EVENT_MASK 0x8018
#define PT_EVENT_MASK_STOCK 0x18

/* The activation mask is one process-wide int that every communicator's
 * init writes and the host reads with relaxed atomic loads, possibly while
 * another communicator initialises: write it atomically too. */
static inline void pt_set_mask(int* mask, int value) {
  __atomic_store_n(mask, value, __ATOMIC_RELAXED);
}

/* ---- configuration (config.c) ---- */

typedef struct {
  pt_trace_config trace;
} pt_plugin_config;

/* Reads PROXYTRACE_* variables. A bad value is reported once per process
 * through `log` (with the accepted values and the default used) and the
 * default applies. */
void pt_config_load(pt_plugin_config* cfg, ncclDebugLogger_t log);
/* Parses an unsigned decimal in [lo, hi]; 0 on success, -1 otherwise. */
int pt_parse_uint(const char* s, unsigned long lo, unsigned long hi, unsigned long* out);

/* ---- logging into the host ---- */

/* The host's WARN level: 3 under RCCL, 2 under NVIDIA NCCL (the enums
 * differ; spec/rccl-proxytrace.md §1.6). */
int pt_host_warn_level(void);
#define PT_LOG_WARN(log, ...) \
  do { \
    if (log) (log)(pt_host_warn_level(), NCCL_ALL, __func__, __LINE__, __VA_ARGS__); \
  } while (0)
/* INFO is the level after WARN in both enums (NCCL 3, RCCL 4); shown with
 * NCCL_DEBUG=INFO when `flags` is in NCCL_DEBUG_SUBSYS (INIT is by default). */
#define PT_LOG_INFO(log, flags, ...) \
  do { \
    if (log) (log)(pt_host_warn_level() + 1, (flags), __func__, __LINE__, __VA_ARGS__); \
  } while (0)

/* ---- per-communicator context (context.c) ---- */

typedef struct pt_ctx pt_ctx;

/* NULL on failure, reported through `log`; never fatal to the host.
 * `rank` < 0 when the host does not say (API v1-v3). */
pt_ctx* pt_ctx_create(uint64_t comm_hash, const char* comm_name, int nnodes, int nranks, int rank,
                      ncclDebugLogger_t log);
void pt_ctx_destroy(pt_ctx* ctx);
/* The context's trace if `ctx` is a live context of this process, else NULL.
 * Cheap: a magic check, no lock (for the event path). */
pt_trace* pt_ctx_trace(void* ctx);
/* The commHash the host gave at init (0 for API v1-v3). */
uint64_t pt_ctx_comm_hash(void* ctx);
/* Runs `emit` over the dump of a live context; holds the registry lock so a
 * concurrent finalize waits. -1 if `ctx` is not a live context. */
int pt_ctx_dump(void* ctx, pt_line_fn emit, void* arg);
/* This process's pid, cached (getpid is a system call). */
pid_t pt_self_pid(void);

/* ---- normalized events (event.c) ---- */

/* ProxyOp started by the host; `pid` is the enqueuing process. */
void* pt_event_op_start(void* ctx, pid_t pid, const pt_op_info* info);
/* The per-step events map one to one onto the core; inline, so the hottest
 * callbacks cost one call into the core. */
static inline void* pt_event_step_start(void* parent_op, int step) {
  return parent_op ? pt_step_start(parent_op, step) : NULL;
}
static inline void pt_event_op_in_progress(void* op) { pt_op_register(op); }
static inline void pt_event_diag(void* op, unsigned counter_kind, unsigned flags, int64_t value) {
  pt_op_update(op, counter_kind, value, flags);
}
static inline void pt_event_stop(void* handle) {
  if (handle) pt_handle_stop(handle);
}
/* A stock NVIDIA NCCL ProxyOp: no RCCL trace fields, so the key is
 * <context commHash : -1 : sequence> and the counters follow the step
 * events (and, on 2.23-2.26, the ProxyOp states). `rank` is the descriptor's,
 * used where init gave none (API v1-v3). */
void* pt_event_stock_op_start(void* ctx, pid_t pid, int rank, int channel, int peer, int nsteps,
                              int chunk_size, int is_send);
/* Any state on one of our handles, except RCCL's ProxyDiag update:
 * 19 registers an op, 0-7 move a stock op's counters (`steps` < 0 when the
 * host gave no args), 8-12/20 are step states. Others are refused. */
void pt_event_state(void* handle, int state, int64_t steps);
/* init of every table: a context (NULL when we opt out — never a failure)
 * and, when there is one, the events we want. */
void pt_event_init(void** context, int* mask, int event_mask, uint64_t comm_hash,
                   const char* comm_name, int nnodes, int nranks, int rank, ncclDebugLogger_t log);
/* startEvent of a type we do not trace: fine if it is a known type,
 * refused and counted otherwise. The caller sets *eHandle = NULL. */
void pt_event_other_type(void* ctx, uint64_t type);
/* A state the handle's kind does not take, or an event type we do not know. */
void pt_event_refused(void* ctx_or_null, void* handle_or_null);

/* The Group handle of the v1-v2 tables (abi_stock.h): a sentinel, never
 * allocated, whose stop and states are ignored. */
extern const char pt_group_sentinel __attribute__((visibility("hidden")));
static inline void* pt_group_handle(void) { return (void*)&pt_group_sentinel; }

/* ---- exported entry points ---- */

PT_EXPORT void ncclProfilerProxyTraceDump(void* context, ncclDebugLogger_t logfn);

#endif
