/*
 * plugin.h — what the profiler plugin's files share: the per-communicator
 * context, its configuration, the normalized events every ABI version is
 * translated into (event.c), the dumps (dumper.c, dump_signal.c, sink.c)
 * and the host logger helpers.
 *
 * Reading order for one proxy step: abi_v6.c (the host's call) → event.c
 * (one normalized event) → src/trace/trace.c (the record) → src/trace/dump.c
 * (the snapshot and its text; json.c its JSON) → sink.c (files, the host's
 * logger), from dump_hook.c (the host asks) or dumper.c (a trigger).
 */
#ifndef PT_PLUGIN_H
#define PT_PLUGIN_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl/common.h"
#include "nccl/profiler.h"
#include "proxytrace/trace.h"

#define PT_EXPORT __attribute__((visibility("default")))

/* KernelCh (bit 6), asked for by the tables of API v3+ (NCCL 2.26+ and
 * RCCL): the start and end of a task's work on each channel, the one view
 * of a rank whose data does not cross the network (progress.c; its cost to
 * the host: docs/plugin.md). */
#define PT_EVENT_MASK_KERNEL 0x40

/* Events the plugin asks for: Coll | P2p | ProxyOp | ProxyStep, and in the
 * v6 and v7 tables, which RCCL binds, RCCL's ProxyDiag (diag.c: bits 15
 * and 16 in v6, bit 16 in v7, where bit 15 is NVIDIA's KernelPhase); the
 * tables of API v1-v5 (stock NCCL only) leave it out. Coll and P2p are the
 * parents that give stock NCCL ops their opCount (trace.h "task handles");
 * every release sends them whenever ProxyOp is asked for anyway (spec
 * nccl-profiler-abi.md §5.2), so asking costs nothing more. */
#define PT_EVENT_MASK_STOCK 0x1E

/* The activation mask is one process-wide int that every communicator's
 * init writes and the host reads with relaxed atomic loads, possibly while
 * another communicator initialises: write it atomically too. */
static inline void pt_set_mask(int* mask, int value) {
  __atomic_store_n(mask, value, __ATOMIC_RELAXED);
}

/* ---- configuration (config.c) ---- */

#define PT_DEFAULT_STALL_MS 10000u
#define PT_MAX_DUMP_MS 86400000u /* one day */
#define PT_DUMP_DIR_MAX 3840     /* leaves room for a file name within PATH_MAX */
/* PROXYTRACE_DUMP_MAX_MB: MiB with up to two decimals, 0.01..1048576. */
#define PT_DEFAULT_DUMP_MAX_MB100 10u        /* 0.10 MiB */
#define PT_MAX_DUMP_MAX_MB100 104857600u     /* 1 TiB */

typedef struct {
  pt_trace_config trace;
  uint32_t stall_ms;    /* PROXYTRACE_STALL_MS; 0 = off */
  uint32_t interval_ms; /* PROXYTRACE_DUMP_INTERVAL_MS; 0 = off */
  int dump_signal;      /* PROXYTRACE_DUMP_SIGNAL; 0 = none */
  char dump_dir[PT_DUMP_DIR_MAX]; /* PROXYTRACE_DUMP_DIR; "" = none */
  uint64_t dump_max_bytes; /* PROXYTRACE_DUMP_MAX_MB: the cap of each dump file */
  uint32_t metrics_ms;  /* PROXYTRACE_METRICS_INTERVAL_MS; 0 = off (then trace.metrics is off) */
  char metrics_dir[PT_DUMP_DIR_MAX]; /* PROXYTRACE_METRICS_DIR, else PROXYTRACE_DUMP_DIR */
  int diag_bit, diag_state; /* PROXYTRACE_RCCL_DIAG; 0 = the defaults (diag.c) */
} pt_plugin_config;

#define PT_DIAG_BIT_MIN 15
#define PT_DIAG_BIT_MAX 30
#define PT_DIAG_STATE_MIN 31
#define PT_DIAG_STATE_MAX 63
/* "BIT:STATE" within the ranges above; 0 on success, -1 otherwise. */
int pt_parse_diag(const char* s, int* bit, int* state);

/* Reads PROXYTRACE_* variables. A bad value is reported once per process
 * through `log` (with the accepted values and the default used) and the
 * default applies. */
void pt_config_load(pt_plugin_config* cfg, ncclDebugLogger_t log);
/* Parses an unsigned decimal in [lo, hi]; 0 on success, -1 otherwise. */
int pt_parse_uint(const char* s, unsigned long lo, unsigned long hi, unsigned long* out);
/* "USR1", "SIGUSR2", "10", …: the signal number, or -1 when it is not one a
 * dump may take (KILL, STOP, the fault signals). */
int pt_parse_signal(const char* s);

/* ---- the host (host.c) ---- */

/* 1 when the host is RCCL: the library the logger `log` belongs to, or the
 * process's global scope, exports a symbol only RCCL has. */
int pt_host_rccl_symbol(ncclDebugLogger_t log);
/* The host library's ncclGetVersion (NCCL_VERSION_CODE, e.g. 23102 for
 * 2.31.2), from the library the logger belongs to, else the global scope;
 * -1 when there is none. Cold. */
int pt_host_version(ncclDebugLogger_t log);
/* The host's WARN level: 3 under RCCL, 2 under NVIDIA NCCL (the enums
 * differ; spec/rccl-proxytrace.md §1.6). */
int pt_host_warn_level(ncclDebugLogger_t log);
/* 1 when a host bound to ncclProfiler_v`api` counts a stock op's steps raw
 * (v1: NCCL 2.23), 0 when in network transfers (v2+; host.c, one row per
 * version). */
int pt_api_raw_steps(int api);
#define PT_LOG_WARN(log, ...) \
  do { \
    if (log) (log)(pt_host_warn_level(log), NCCL_ALL, __func__, __LINE__, __VA_ARGS__); \
  } while (0)
/* INFO is the level after WARN in both enums (NCCL 3, RCCL 4); shown with
 * NCCL_DEBUG=INFO when `flags` is in NCCL_DEBUG_SUBSYS (INIT is by default). */
#define PT_LOG_INFO(log, flags, ...) \
  do { \
    if (log) (log)(pt_host_warn_level(log) + 1, (flags), __func__, __LINE__, __VA_ARGS__); \
  } while (0)

/* ---- per-communicator context (context.c) ---- */

enum { PT_HOSTLIB_UNKNOWN = 0, PT_HOSTLIB_NCCL = 1, PT_HOSTLIB_RCCL = 2 };

/* The stall watchdog's state of one communicator (dumper thread only). */
typedef struct {
  uint64_t mark;  /* last-progress tick of the episode already dumped, 0 = none */
  uint64_t next;  /* tick of the episode's next dump (back-off) */
  uint32_t dumps; /* dumps taken in this episode */
} pt_stall_state;

/* A communicator's dump files as the sink keeps them (sink.c, under its
 * files lock): the dumps each generation holds — the file itself (0) and
 * its older generation, `….1.txt` / `….1.jsonl` (1) — those rotation
 * removed, and where the first dump of the current stall episode lies. */
typedef struct {
  int rank;           /* the files these are: named by rank and commHash, */
  uint64_t comm_hash; /* which NCCL 2.23-2.26 learn late */
  uint32_t dumps[2];
  uint64_t rotated;
  int episode_gen;            /* 0: no stall episode; 1: in the file itself; 2: in its .1 */
  uint64_t episode_progress;  /* the episode: its last-progress tick */
  uint64_t episode_seq;       /* the episode: its first dump's seq */
  uint64_t episode_off[2], episode_len[2]; /* per format (text, JSON) */
  int closed; /* its finalize dump is written: the rank's last word, nothing follows it */
} pt_dump_files;

typedef struct pt_ctx {
  _Atomic uint32_t magic;
  pt_trace* trace;
  _Atomic uint64_t comm_hash; /* from init; API v1-v3: learned from Coll/P2p events */
  int rank, nranks, nnodes;
  int api;                    /* N of the ncclProfiler_vN the host bound */
  char name[64];
  char host[64]; /* an emulator's name for its host (pt_sink_name_thread_host); "": the machine's */
  ncclDebugLogger_t log;
  _Atomic int host_lib;       /* PT_HOSTLIB_* */
  _Atomic uint32_t* p2p_seq;  /* per (peer, direction): P2p events so far */
  uint32_t p2p_peers;
  pt_stall_state stall;
  pt_dump_files files;
  int refs;      /* the registry's (until finalize) + one per running dump; registry lock */
  uint64_t walk; /* the last pt_ctx_for_each walk that visited it; registry lock */
  int metrics_final; /* its last metrics files are written (metrics_sink.c's lock) */
  /* RCCL's ProxyDiag (diag.c), from the threads that start ops. */
  /* Written by whichever proxy thread starts an op (several under PXN in
   * one process): relaxed atomics; a count lost to two threads at once only
   * moves the next check by an op. */
  _Atomic uint32_t diag_ops;   /* ProxyOps started under an RCCL host so far */
  _Atomic int diag_verdict;    /* PT_DIAG_* */
  _Atomic(const char*) diag_why; /* what the verdict's WARN says (a literal) */
  _Atomic int diag_unsaid;    /* a verdict whose WARN is still to be said */
  /* v7 hosts: the host's mask, which RAS may change at run time (init's
   * pointer: NCCL's process-wide ncclProfilerEventMask), and what we asked. */
  int* host_mask;
  int asked_mask;
  struct pt_ctx* next;
} pt_ctx;

/* NULL on failure, reported through `log`; never fatal to the host.
 * `rank` < 0 when the host does not say (API v1-v3). */
pt_ctx* pt_ctx_create(uint64_t comm_hash, const char* comm_name, int nnodes, int nranks, int rank,
                      int api, ncclDebugLogger_t log);
/* Under stock NCCL, a communicator destroyed with ops still waiting dumps
 * them first (trigger "finalize"). */
void pt_ctx_destroy(pt_ctx* ctx);
#define PT_CTX_MAGIC 0x70747478u /* "ptctx": a live context */
#define PT_CTX_DEAD 0xdeadc7c7u  /* finalized */

/* The context's trace if `ctx` is a live context of this process, else NULL.
 * Cheap: a magic check, no lock, inline (for the event path). Acquire:
 * pairs with the store that published the context, so the fields read after
 * the check (trace, comm_hash) are the ones written before it, whichever
 * thread created the context and however the host passed it on. */
static inline pt_trace* pt_ctx_trace(void* ctx) {
  pt_ctx* c = ctx;
  if (!c || atomic_load_explicit(&c->magic, memory_order_acquire) != PT_CTX_MAGIC) return NULL;
  return c->trace;
}
/* The commHash the host gave at init, or learned (0 if none). */
uint64_t pt_ctx_comm_hash(void* ctx);
void pt_ctx_learn_comm_hash(void* ctx, uint64_t comm_hash);
/* The next sequence number of P2p events to `peer` in one direction, or -1
 * when the peer is out of range. */
int64_t pt_ctx_p2p_next(void* ctx, int peer, int is_recv);
/* The dump hook: a dump of a live context, its legacy lines to `log` (RCCL's
 * logger, unchanged) and to the dump files, on a reference to the context
 * with no lock held (the logger may call back into the plugin). -1 if `ctx`
 * is not live. */
int pt_ctx_dump_hook(void* ctx, pt_line_fn emit, void* arg);
/* Runs `fn` once on every live context, each on a reference with no lock
 * held (a concurrent finalize does not wait; the last reference frees).
 * One caller at a time: the dumper thread. Returns the number of calls. */
int pt_ctx_for_each(void (*fn)(pt_ctx* c, void* arg), void* arg);
/* This process's pid, cached (getpid is a system call). */
pid_t pt_self_pid(void);

/* ---- RCCL's ProxyDiag: the numbering and whether to trust it (diag.c) ---- */

enum { PT_DIAG_UNDECIDED = 0, PT_DIAG_OK, PT_DIAG_MISSING, PT_DIAG_MISMATCH };
/* The settings of PROXYTRACE_RCCL_DIAG (the first context's) and what the
 * host's ncclGetVersion says; once per process, from context.c. */
void pt_diag_setup(const pt_plugin_config* cfg, ncclDebugLogger_t log);
/* The mask bits that ask for ProxyDiag in table `api` (6 or 7). */
int pt_diag_mask_bits(int api);
/* The state besides 31 that is a ProxyDiag update (32, or the override's).
 * Read on the hot path (states 31 and up only): one relaxed load. */
extern _Atomic int pt_diag_state_v;
static inline int pt_diag_is_update(int state) {
  return state == ncclProfilerProxyDiagUpdate ||
         state == atomic_load_explicit(&pt_diag_state_v, memory_order_relaxed);
}
/* A ProxyOp with RCCL's fields: 1 when they keep the host's invariants
 * (commHash is the context's where init gave one, 0 <= peer < nRanks,
 * channel < 64, isSend 0 or 1), else 0 — then the layout is taken as wrong
 * on this communicator (said once per process, noted in its dumps) and the
 * fields are no longer read. */
int pt_diag_fields_fit(pt_ctx* c, const struct pt_proxy_op_arm* a);
/* Counts a ProxyOp of an RCCL host (`fields`: it carried RCCL's fields);
 * every 8 ops, until decided, looks at the records for ProxyDiag updates
 * (pt_trace_diag_evidence). 1 while the fields may be read on `c`. */
int pt_diag_count_op(pt_ctx* c, int fields);
/* Says the WARN of a verdict reached since (once per process and problem);
 * cold: dumps, the dumper thread's rounds, finalize. */
void pt_diag_report(pt_ctx* c);

/* ---- dumps: triggers (dumper.c), the signal (dump_signal.c), sinks (sink.c) ---- */

typedef enum {
  PT_TRIG_STALL = 0,
  PT_TRIG_SIGNAL,
  PT_TRIG_PERIODIC,
  PT_TRIG_FINALIZE,
  PT_TRIG_HOOK, /* the dump hook, called by RCCL */
  PT_TRIG_API   /* the dump hook, called by a program under another host */
} pt_trigger;

const char* pt_trigger_name(pt_trigger t);

/* The settings every dump follows, process-wide: those of the environment
 * when the first live communicator was created. */
typedef struct {
  uint32_t stall_ms, interval_ms;
  int dump_signal;
  char dump_dir[PT_DUMP_DIR_MAX];
  uint64_t dump_max_bytes;
  uint32_t metrics_ms;
  char metrics_dir[PT_DUMP_DIR_MAX];
} pt_dump_settings;
const pt_dump_settings* pt_dump_settings_get(void);

/* Called by context.c with its lifecycle lock held: a context was added to
 * an empty registry (start the dumper thread if a trigger needs it, install
 * the signal handler), or the last one was removed (ask the thread to stop;
 * 1: then call pt_dumper_wait once the lock is released). */
void pt_dumper_first(const pt_plugin_config* cfg, ncclDebugLogger_t log);
int pt_dumper_last(void);
/* Waits for the stopped thread's dump in progress, at most
 * PT_FINALIZE_WAIT_MS (dumper.c); with no lock of context.c held. */
void pt_dumper_wait(void);
/* Called by context.c with its lifecycle lock held, for a context just
 * registered: asks the dumper thread to populate its first slab pages now
 * (pt_trace_prefault) and returns 1, or returns 0 when no dumper thread
 * runs (the caller populates them itself). */
int pt_dumper_prefault_soon(void);
/* Fork (context.c's handlers, after its own locks): the dumper's lock is
 * held across the fork; the thread does not survive it. It is stopped
 * before the library goes away. */
void pt_dumper_before_fork(void);
void pt_dumper_after_fork_parent(void);
void pt_dumper_after_fork_child(void);

/* The signal: a handler that only sets a flag and writes to the wake fd,
 * chained to the handler installed before it. */
int pt_signal_wake_fd(void);           /* created once; -1 if it cannot be */
void pt_signal_reset_after_fork(void); /* a fresh wake fd for the child */
int pt_signal_install(int sig, ncclDebugLogger_t log);
void pt_signal_uninstall(void);
int pt_signal_take(void); /* 1 when the signal came since the last call */

/* One communicator's dump to its sinks: files under PROXYTRACE_DUMP_DIR
 * (text and JSON) and the host logger — RCCL's dump hook prints its legacy
 * lines to `hook_emit` unchanged; other triggers print to the logger unless
 * the files took the dump, then the logger gets one line saying where.
 * Called with no lock held, on a reference to `c`. -1 when out of memory. */
int pt_sink_dump(pt_ctx* c, pt_trigger trig, uint64_t round, pt_line_fn hook_emit, void* hook_arg);
/* One dump of `c` to two open files, text and JSON, as the dump files get
 * it: 0, -1 out of memory, -2 lost to a write error (counted, said once). */
int pt_sink_write_fds(pt_ctx* c, pt_trigger trig, int txt_fd, int json_fd);
/* The fork handlers (context.c): the dump files' lock, taken before a fork
 * and released after it in the parent and in the child. */
void pt_sink_fork_lock(void);
void pt_sink_fork_unlock(void);
/* Dumps lost to write errors so far in this process. */
uint64_t pt_sink_lost(void);
/* The host library's name for the files ("rccl", "nccl", "unknown"). */
const char* pt_sink_host_lib(pt_ctx* c);
/* The host name of `c`'s files as they carry it ('/' and ' ' replaced):
 * the one an emulator named for the thread that created it, else the
 * machine's. */
const char* pt_sink_host_name(const pt_ctx* c);
/* An emulator's host name for the communicators this thread creates from
 * now on (proxytraceEmulator_v2.host); NULL or "": the machine's. */
void pt_sink_name_thread_host(const char* name);
/* Copies the name set for this thread into `out` (64 bytes), "" if none:
 * at a context's creation. */
void pt_sink_thread_host(char out[64]);

/* ---- step metrics files (metrics_sink.c) ---- */

/* Writes `c`'s metrics — Prometheus text and JSON lines — to
 * PROXYTRACE_METRICS_DIR/proxytrace-metrics-<host>-<pid>-r<rank>-<commHash>
 * .prom and .jsonl, each through a temporary file and a rename. `final`: the
 * communicator's last export (finalize); no export follows it. Called on a
 * reference to `c`, with no lock held. 0, or -1 (said once through the host
 * log). */
int pt_metrics_write(pt_ctx* c, int final);
/* Hands every live context's recording thread the memory it asked for. */
void pt_metrics_service_all(void);
/* The fork handlers (context.c): the metrics files' lock, likewise. */
void pt_metrics_fork_lock(void);
void pt_metrics_fork_unlock(void);
/* A per-process round number for dumps taken together. */
uint64_t pt_dump_next_round(void);

/* ---- normalized events (event.c) ---- */

/* ProxyOp started by the host; `pid` is the enqueuing process. */
void* pt_event_op_start(void* ctx, pid_t pid, const pt_op_info* info);
/* The per-step events map one to one onto the core; inline, so the hottest
 * callbacks cost one call into the core. A step's parent must be an op of
 * the context the step is started on (checked by the core without reading
 * the parent); a NULL parent — what a declined or PXN op got — never
 * touches the context, which may be another process's. */
static inline void* pt_event_step_start(void* ctx, void* parent_op, int step) {
  return parent_op ? pt_step_start(pt_ctx_trace(ctx), parent_op, step) : NULL;
}
static inline void pt_event_op_in_progress(void* op) { pt_op_register(op); }
static inline void pt_event_diag(void* op, unsigned counter_kind, unsigned flags, int64_t value) {
  pt_op_update(op, counter_kind, value, flags);
}
static inline void pt_event_stop(void* handle) {
  if (handle) pt_handle_stop(handle);
}
/* A stock NVIDIA NCCL ProxyOp: no RCCL trace fields, so the key is
 * <context commHash : opCount from `parent` (the Coll/P2p task handle;
 * -1 when there is none) : id> and the counters follow the step events
 * (and, on 2.23-2.26, the ProxyOp states). `rank` is the descriptor's,
 * used where init gave none (API v1-v3). */
void* pt_event_stock_op_start(void* ctx, pid_t pid, int rank, int channel, int peer, int nsteps,
                              int chunk_size, int is_send, void* parent);
/* The ProxyOp of a v6 or v7 table: with RCCL's fields, recorded from them
 * where they keep the host's invariants (diag.c), else — NVIDIA NCCL, or
 * an RCCL whose fields or updates cannot be trusted — from step events as
 * pt_event_stock_op_start. The arm is read during the call only. */
void* pt_event_host_op_start(void* ctx, int rank, const struct pt_proxy_op_arm* a, void* parent);
/* Coll and P2p events: a task handle (trace.h) for the ProxyOps of the
 * task to name as parent. `comm_hash` is the descriptor's (API v1-v3),
 * else 0; `rank` the descriptor's, learned where init gave none (API
 * v1-v3: NCCL 2.23-2.26 fill it in every Coll and P2p event, so a rank
 * with no network op learns it too); `user_tag` the v7 descriptor's,
 * else 0. NULL when the plugin opted out of the communicator. */
void* pt_event_coll_start(void* ctx, int rank, const pt_task_info* ti, uint64_t comm_hash);
void* pt_event_p2p_start(void* ctx, int rank, const pt_task_info* ti, uint64_t comm_hash);
/* The pt_task_info of a Coll / P2p arm (trace.h) whose function, datatype,
 * algorithm and protocol are names (API v2+); `nch` its channel count
 * (0 where the arm has none). The p2p sequence is the plugin's own. */
static inline pt_task_info pt_task_info_of(int is_p2p, uint32_t codes, int nch, int root_or_peer, uint64_t seq,
                                           uint64_t count, uint64_t tag) {
  return (pt_task_info){.is_p2p = (uint8_t)is_p2p, .func = (uint8_t)codes, .dtype = (uint8_t)(codes >> 8),
                        .algo = (uint8_t)(codes >> 16), .proto = (uint8_t)(codes >> 24), .nchannels = (uint8_t)nch,
                        .root_or_peer = root_or_peer, .seq = seq, .count = count, .user_tag = tag};
}
#define PT_COLL_INFO(c, nch, tag)                                                                         \
  pt_task_info_of(0, pt_task_codes((c).func, (c).datatype, (c).algo, (c).proto), (nch), (c).root,          \
                  (c).seqNumber, (c).count, (tag))
/* (a P2p has no algorithm or protocol: NULL gives PT_CODE_NONE) */
#define PT_P2P_INFO(p, nch, tag) \
  pt_task_info_of(1, pt_task_codes((p).func, (p).datatype, NULL, NULL), (nch), (p).peer, 0, (p).count, (tag))
/* KernelCh events (API v3+): the GPU took up a task's work on `channel`
 * (`parent`: the task handle) at `gpu_ns` (API v4+; 0 without). A handle
 * whose state 22 (KernelChStop, with the GPU's stop time) and stop the
 * trace core hands to progress.c; NULL when the plugin opted out. */
void* pt_event_kch_start(void* ctx, void* parent, int channel, uint64_t gpu_ns);
/* Any state on one of our handles, except RCCL's ProxyDiag update:
 * 19 registers an op, 0-7 move a stock op's counters (`steps` < 0 when the
 * host gave no args), 8-12/20 are step states. Others are refused.
 * `trans_size` is the args' transSize (pt_args_trans_size), -1 without.
 * The step states, one per ProxyStep callback, go straight to the core,
 * which checks the handle's kind itself (inline: one call per callback). */
void pt_event_op_state(void* handle, int state, int64_t steps, int64_t trans_size);
static inline void pt_event_state(void* handle, int state, int64_t steps, int64_t trans_size) {
  if ((unsigned)state - 8u <= 12u - 8u || state == 20) pt_step_state(handle, state, trans_size);
  else pt_event_op_state(handle, state, steps, trans_size);
}
/* The transSize of any version's state args: the first member of both the
 * proxyOp (v1-v3) and proxyStep (v4+) arms; -1 for NULL args. */
static inline int64_t pt_args_trans_size(const void* args) {
  if (!args) return -1;
  uint64_t v;
  __builtin_memcpy(&v, args, sizeof v);
  return v > (uint64_t)INT64_MAX ? -1 : (int64_t)v;
}
/* init of every table: a context (NULL when we opt out — never a failure)
 * and, when there is one, the events we want. `api` is the table's version. */
void pt_event_init(void** context, int* mask, int event_mask, int api, uint64_t comm_hash,
                   const char* comm_name, int nnodes, int nranks, int rank, ncclDebugLogger_t log);
/* startEvent of a type we do not trace, in table `api`: fine if it is a
 * known type, refused and counted otherwise; a type only a bit we never ask
 * for starts notes that the host changed the mask. The caller sets
 * *eHandle = NULL. */
void pt_event_other_type(void* ctx, uint64_t type, int api);
/* Evidence that the host changed the event mask under us (dump header). */
void pt_event_mask_changed(void* ctx);
/* Before a dump: whether the host's mask still lets the proxy events through. */
void pt_event_mask_at_dump(pt_ctx* c);
/* A state the handle's kind does not take, or an event type we do not know. */
void pt_event_refused(void* ctx_or_null, void* handle_or_null);

/* The Group handle of the v1-v4 tables (abi_stock.h): a sentinel, never
 * allocated, whose stop and states are ignored. Its address sits at an
 * offset no trace handle has (slab.h), so any other table that is handed it
 * counts it as a bad handle without reading it. */
extern const char pt_group_sentinel[256] __attribute__((visibility("hidden")));
static inline void* pt_group_handle(void) { return (void*)&pt_group_sentinel[128]; }

/* ---- the v6 callbacks the v7 table shares (abi_v6.c) ---- */

ncclResult_t pt_v6_stop(void* handle);
union pt_state_args_v6; /* ncclProfilerEventStateArgs_v6_t (and _v7_t) */
ncclResult_t pt_v6_record(void* handle, ncclProfilerEventState_t state, union pt_state_args_v6* args);
ncclResult_t pt_v6_finalize(void* context);

/* ---- exported entry points ---- */

PT_EXPORT void ncclProfilerProxyTraceDump(void* context, ncclDebugLogger_t logfn);

#endif
