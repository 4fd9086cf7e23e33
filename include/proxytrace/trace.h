/*
 * trace.h — the proxy-trace core: one trace per communicator, holding a record
 * for every network proxy operation (one send or receive of one channel to one
 * peer) with its step counters and timestamps, and a ring of the last 32
 * finished operations. It is the model behind RCCL's ProxyTrace dump
 * (spec/rccl-proxytrace.md §3); the profiler plugin feeds it, the tests drive
 * it directly.
 *
 * Threads. Any number of threads may record into one trace (the host's
 * proxy progress threads: PXN in a process that drives several GPUs), each
 * into a lane of its own, claimed at its first pt_op_start() there; every
 * later call on an op's handle comes from the thread that started the op.
 * Recording never blocks, allocates or enters the kernel — but a thread's
 * first op start on a trace other than the first thread's (its lane's id
 * table). pt_trace_dump() may run on any thread at any time, concurrently
 * with recording; pt_trace_destroy() must not race with either.
 *
 * Memory. Everything is allocated by pt_trace_create(): a slab of
 * `max_ops` 256-byte operation slots, an id table, the finished ring. When the
 * slab is full, slots whose record is already complete, then slots of ops that
 * were never registered (oldest first), are reclaimed; if none can be — every
 * slot holds a registered op — the new operation is dropped and counted, and
 * every dump says so.
 */
#ifndef PROXYTRACE_TRACE_H
#define PROXYTRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Legacy enums, same numbering as RCCL's ProxyTrace (spec §3.1). */
typedef enum {
  PT_STATUS_INIT = 0,
  PT_STATUS_POSTING = 1,
  PT_STATUS_SENDING = 2,
  PT_STATUS_RECEIVING = 3,
  PT_STATUS_WAITING_GPU = 4,
  PT_STATUS_FLUSHING = 5,
  PT_STATUS_DONE = 6,
  PT_STATUS_UNINITIALIZED = 7
} pt_status;

typedef enum {
  PT_CNT_POSTED = 0,
  PT_CNT_KERNEL_COPY_READY = 1,
  PT_CNT_RTR_RECV = 2,
  PT_CNT_RTS_SEND = 3,
  PT_CNT_RECEIVED = 4,
  PT_CNT_TRANSMITTED = 5,
  PT_CNT_FLUSHED = 6,
  PT_CNT_DONE = 7,
  PT_CNT_RECV_TAIL = 8,
  PT_CNT_TAIL_OR_HEAD = 9,
  PT_CNT_FIFO_SZ_OR_HEAD_CACHE = 10,
  PT_CNT_NUM = 11,
  PT_CNT_UNINITIALIZED = 100
} pt_counter;

typedef enum { PT_OP_SEND = 0, PT_OP_RECV = 1 } pt_op_type;

/* Where an op's opCount comes from. */
typedef enum {
  PT_ORIGIN_HOST = 0, /* the host's ProxyOp descriptor (RCCL) */
  PT_ORIGIN_NONE = 1, /* stock NCCL, no parent Coll/P2p event known: -1 */
  PT_ORIGIN_COLL = 2, /* stock NCCL: the parent Coll's seqNumber and function */
  PT_ORIGIN_P2P = 3   /* stock NCCL: the parent P2p's per-peer sequence */
} pt_origin;

#define PT_NCCL_STEPS 8      /* NCCL_STEPS: steps of one op in flight at most */
#define PT_FINISHED_RING 32  /* kFinishedProxyOpItems */
#define PT_DEFAULT_MAX_OPS 65536 /* a cap per communicator: slots cost memory only once used */
#define PT_MIN_MAX_OPS 16
#define PT_MAX_MAX_OPS (1u << 20)
#define PT_DEFAULT_MAX_MEMORY_MB 1024 /* process-wide budget of op slots */
#define PT_MAX_MEMORY_MB (1u << 20)

/* Diag update flags (RCCL's NCCL_PROXY_DIAG_FLAG_*). */
#define PT_FLAG_TIMESTAMP 1u
#define PT_FLAG_COUNTER_SKIP 2u

typedef struct pt_trace pt_trace;

/* A handle the host holds for one ProxyOp or one ProxyStep. It is an address
 * in the trace's slab (never a separate allocation) tagged with the slot's
 * generation in bits the address does not use, so a stale or repeated use is
 * detected instead of touching another op. Opaque: never dereference it. */
typedef void* pt_handle;

typedef struct {
  uint32_t max_ops; /* cap on slots; PT_MIN_MAX_OPS..PT_MAX_MAX_OPS */
  uint32_t metrics; /* PT_METRICS_*: step metrics (below) */
} pt_trace_config;

/* The process-wide budget, in bytes, of the op slots of every trace
 * (PROXYTRACE_MAX_MEMORY_MB; slab.h): past it a new op is dropped, counted
 * as opsDropped, unless a slot of its own trace is free or reclaimable.
 * Slots are charged 64 (16 KiB) at a time and given back when their trace
 * is destroyed. */
void pt_trace_set_memory_budget(uint64_t bytes);
uint64_t pt_trace_memory_budget(void);
uint64_t pt_trace_memory_charged(void);

#define PT_STEPS_NO_DIAG 2 /* pt_op_info.step_driven */

/* What the host told us about a proxy operation when it started it. */
typedef struct {
  uint64_t comm_hash;
  int64_t op_count;
  int channel;
  int peer;
  int nsteps; /* steps in the unit the DONE counter counts (RCCL: rawProxyNsteps) */
  int is_send;
  uint32_t nbytes;
  int32_t func_idx;
  int32_t protocol;
  int32_t pattern;
  uint32_t total_bytes;
  uint32_t chunk_size;
  /* 0: counters come as RCCL ProxyDiag updates (pt_op_update).
   * 1: stock NCCL: counters follow the op's ProxyStep events and, on NCCL
   *    2.23-2.26, its ProxyOp states (pt_op_progress); nsteps is the
   *    descriptor's nSteps, in the unit of its step numbers.
   * PT_STEPS_NO_DIAG: as 1, under an RCCL whose ProxyDiag cannot be
   *    trusted: its updates are ignored. */
  int step_driven;
  pt_origin origin;
  uint32_t tag_ref; /* the parent task's userTag (pt_task_tag_ref), 0 = none */
  uint32_t p2p_seq; /* the host's opCount (RCCL) on a send or receive: PT_P2P_SEQ_SET | its
                       parent P2p task's per-peer sequence (pt_task_p2p_seq), 0 = none */
} pt_op_info;

/* Events refused or dropped, by reason. Counted, never fatal. */
typedef enum {
  PT_DROP_OPS_DROPPED = 0, /* no free or reclaimable slot, none fresh: op not recorded */
  PT_DROP_OPS_RECLAIMED,   /* slots taken back from finished or never-registered ops */
  PT_DROP_ZERO_STEPS,      /* registered with nSteps == 0: ignored, as legacy does */
  PT_DROP_STALE_HANDLE,    /* handle of a stopped or reclaimed op or step */
  PT_DROP_BAD_HANDLE,      /* pointer that is not a handle of ours */
  PT_DROP_UNTRACKED,       /* counter update for an op that is not active */
  PT_DROP_BAD_COUNTER,     /* counterKind out of range */
  PT_DROP_BAD_STATE,       /* state or event type that does not apply */
  PT_DROP_FOREIGN,         /* events of another process (PXN) */
  PT_DROP_WRONG_CONTEXT,   /* ProxyStep whose parent op is not of the step's communicator */
  PT_DROP_OVER_BUDGET,     /* of OPS_DROPPED, those below the communicator's cap
                            * (PROXYTRACE_MAX_OPS): the process-wide budget
                            * (PROXYTRACE_MAX_MEMORY_MB) was spent; the rest
                            * found the cap reached */
  PT_DROP_NUM
} pt_drop_reason;

typedef struct {
  uint64_t n[PT_DROP_NUM];
} pt_drop_stats;

/* Short camelCase name of a reason, as printed in the dump ("opsDropped"). */
const char* pt_drop_name(pt_drop_reason r);

/* ---- lifecycle (not thread-safe against recording or dumping) ---- */

void pt_trace_config_default(pt_trace_config* cfg);
/* 0 on success; -1 with errno (EINVAL bad config, ENOMEM). */
int pt_trace_create(pt_trace** out, const pt_trace_config* cfg, int my_rank);
void pt_trace_destroy(pt_trace* t);

/* ---- recording: the proxy thread's hot path ---- */

/* Takes a slot for a new op. NULL when dropped (counted). */
pt_handle pt_op_start(pt_trace* t, const pt_op_info* info);
/* The op entered progress (ncclProfilerProxyOpInProgress_v4): registers it as
 * legacy addNewProxyOp does — proxyOpId per (commHash, opCount). */
void pt_op_register(pt_handle op);
/* One ProxyDiag update: store value and/or stamp the time per flags. */
void pt_op_update(pt_handle op, unsigned kind, int64_t value, unsigned flags);
/* Stock NCCL 2.23-2.26 ProxyOp progress states (ncclProfilerProxyOpSendPosted
 * ... RecvDone, 0..7) with their `steps` argument: counters only move up.
 * `trans_size` is the args' cumulative transSize (-1: none). */
void pt_op_progress(pt_handle op, int proxy_op_state, int64_t steps, int64_t trans_size);
/* A step of op `parent` starts on trace `t` (the context the host passed):
 * returns a handle inside the op's own storage. NULL when the parent is NULL,
 * stale, or an op of another trace (counted, its memory never read). */
pt_handle pt_step_start(pt_trace* t, pt_handle parent, int step);
/* `trans_size`: the state args' transSize (NCCL 2.27+: the transfer's bytes
 * at SendWait and RecvFlushWait), -1 when the host gave none. Handed an op
 * or task handle, counts a bad state (a state that kind does not take), on
 * the op's trace for an op handle; anything else that is no step handle
 * counts a bad handle. */
void pt_step_state(pt_handle step, int state, int64_t trans_size);
/* Stop an op or a step handle. */
void pt_handle_stop(pt_handle h);
/* Count an event the caller refused (PXN foreign, unknown state...). With
 * t == NULL the count is process-wide: every trace's dump reports it. */
void pt_trace_count(pt_trace* t, pt_drop_reason r);
/* Count against the trace a handle belongs to (bad handle if it is none). */
void pt_handle_count(pt_handle h, pt_drop_reason r);

/* Kind of a handle as recorded by pt_handle_kind(). */
typedef enum {
  PT_HANDLE_INVALID = 0,
  PT_HANDLE_OP = 1,
  PT_HANDLE_STEP = 2,
  PT_HANDLE_TASK = 3 /* a Coll/P2p task handle (below): a value, nothing to stop */
} pt_handle_kind_t;
pt_handle_kind_t pt_handle_kind(pt_handle h);

/* ---- stock NCCL: opCounts from the parent Coll / P2p event ----
 *
 * NVIDIA NCCL gives a ProxyOp no opCount, only its parent: the handle the
 * plugin returned for the Coll or P2p event of the same task. That handle
 * is a self-describing value, never storage: the function code and a
 * sequence number packed into an address no process can map (bit 63 set —
 * kernel half on x86-64 — and bit 55 set — the TTBR1 half on AArch64, top
 * byte tags or not), so it needs no allocation, cannot go stale when the
 * host stops the parent before its children (it always does) or replays a
 * CUDA graph, and is told apart from op and step handles by its top 12
 * bits. Bits 48..51 hold the function, 37..47 the task's userTag
 * reference (below), 0..36 the sequence (2^37 calls per function before
 * it wraps, the same on every rank). opCount = sequence * 16 + function code: collectives use the Coll
 * event's seqNumber (NCCL's per-function counter), p2p a per-(peer,
 * direction) count of P2p events with the code of SendRecv (5) on both
 * sides, so a send and the receive it pairs with get the same opCount. */
_Static_assert(sizeof(void*) == 8, "task handles need 64-bit pointers");
#define PT_FUNC_NUM 16      /* NCCL's ncclFunc_t codes 0..14, and 15 */
#define PT_FUNC_UNKNOWN 15
#define PT_FUNC_SENDRECV 5
#define PT_FUNC_SEND 6
#define PT_FUNC_RECV 7
#define PT_TASK_SEQ_BITS 37
#define PT_TASK_REF_SHIFT 37 /* bits 37..47: the task's userTag reference */
#define PT_TASK_REF_MASK 0x7ffull
#define PT_TASK_TAG_COLL 0xAA9ull
#define PT_TASK_TAG_P2P 0xAAAull

/* NCCL's function name ("AllReduce", ncclFuncToString) -> code; unknown or
 * NULL -> PT_FUNC_UNKNOWN. And back ("?" for unknown codes). */
int pt_func_code(const char* name);
const char* pt_func_name(int code);

/* `tag_ref`: the task's userTag as pt_trace_tag_ref() gave it (0 = none). */
static inline pt_handle pt_task_handle_tagged(int is_p2p, int func, uint64_t seq, uint32_t tag_ref) {
  const uint64_t tag = is_p2p ? PT_TASK_TAG_P2P : PT_TASK_TAG_COLL;
  return (pt_handle)(uintptr_t)((tag << 52) | ((uint64_t)(func & (PT_FUNC_NUM - 1)) << 48) |
                                (((uint64_t)tag_ref & PT_TASK_REF_MASK) << PT_TASK_REF_SHIFT) |
                                (seq & ((1ull << PT_TASK_SEQ_BITS) - 1)));
}
static inline pt_handle pt_task_handle(int is_p2p, int func, uint64_t seq) {
  return pt_task_handle_tagged(is_p2p, func, seq, 0);
}

static inline int pt_is_task_handle(const void* h) {
  return ((uint64_t)(uintptr_t)h >> 52) - PT_TASK_TAG_COLL < 2;
}

/* The opCount a ProxyOp gets from its parent, and where it comes from. */
static inline pt_origin pt_task_op_count(const void* parent, int64_t* op_count) {
  const uint64_t v = (uint64_t)(uintptr_t)parent;
  const uint64_t seq = v & ((1ull << PT_TASK_SEQ_BITS) - 1);
  switch (v >> 52) {
    case PT_TASK_TAG_COLL:
      *op_count = (int64_t)(seq * PT_FUNC_NUM + ((v >> 48) & (PT_FUNC_NUM - 1)));
      return PT_ORIGIN_COLL;
    case PT_TASK_TAG_P2P:
      *op_count = (int64_t)(seq * PT_FUNC_NUM + PT_FUNC_SENDRECV);
      return PT_ORIGIN_P2P;
    default:
      *op_count = -1;
      return PT_ORIGIN_NONE;
  }
}
/* A P2p task handle's per-peer sequence, as pt_op_info.p2p_seq holds it:
 * 0x80000000 | its low 31 bits; 0 for anything else. */
static inline uint32_t pt_task_p2p_seq(const void* parent) {
  const uint64_t v = (uint64_t)(uintptr_t)parent;
  return v >> 52 == PT_TASK_TAG_P2P ? 0x80000000u | (uint32_t)(v & 0x7fffffffu) : 0u;
}
/* The userTag reference a task handle carries (0 for anything else). */
static inline uint32_t pt_task_tag_ref(const void* parent) {
  const uint64_t v = (uint64_t)(uintptr_t)parent;
  return pt_is_task_handle(parent) ? (uint32_t)((v >> PT_TASK_REF_SHIFT) & PT_TASK_REF_MASK) : 0;
}

/* ---- userTags: what an application tagged a call with (NCCL 2.31+) ----
 *
 * profiler API v7 gives Coll and P2p events the call's userTag
 * (ncclCollConfig_t.userProfilerTag; 0 = untagged). A 64-bit tag does not
 * fit a task handle, so each trace keeps the distinct tags it has seen, up
 * to PT_TAG_MAX, in a table allocated the first time a task is tagged (8
 * KiB; an untagged job never allocates it), and the handle and the op
 * record carry the tag's reference: its index + 1. Past PT_TAG_MAX distinct
 * tags a tagged task gets PT_TAG_REF_LOST and its ops say "tag unknown". */
#define PT_TAG_MAX 1024u
#define PT_TAG_REF_LOST 0x7ffu
/* The reference of `user_tag` on `t` (0 for tag 0): any thread, lock-free,
 * called where the host starts a Coll/P2p event. */
uint32_t pt_trace_tag_ref(pt_trace* t, uint64_t user_tag);
/* The tag of a reference; 0 when it is none, 1 with *tag set, -1 when lost
 * (PT_TAG_REF_LOST or never given). */
int pt_trace_tag_of(const pt_trace* t, uint32_t ref, uint64_t* tag);

/* ---- progress: where each communicator's operations and kernels are ----
 *
 * Beside the proxy ops, a trace keeps a small fixed state of the
 * communicator's work as the host's task and kernel events tell it
 * (progress.c), on every rank, network op or not: the last PT_PROG_OPS
 * collectives and the last PT_PROG_OPS point-to-point operations started
 * (Coll / P2p events: what was called, with its sequence number), and per
 * channel the last kernel-channel start and stop (KernelCh events: the GPU
 * picked up a task's work on that channel, and finished it). Allocated with
 * the trace; recording takes no lock and allocates nothing. Tasks are
 * recorded on the thread that launches them, kernel channels on the proxy
 * (or, NCCL 2.31+, the profiler) thread; a dump copies both under their
 * seqlocks. */
#define PT_PROG_OPS 8
#define PT_PROG_CHANNELS 128 /* channelId is one byte; NCCL uses < 64, RCCL < 128 */
#define PT_CODE_NONE 0xff    /* a datatype / algorithm / protocol not given or unknown */

/* One Coll or P2p event as the host described it. */
typedef struct {
  uint8_t is_p2p;
  uint8_t func;       /* NCCL's ncclFunc_t code (PT_FUNC_*) */
  uint8_t dtype;      /* NCCL's ncclDataType_t code, or PT_CODE_NONE */
  uint8_t algo;       /* NCCL_ALGO_* code, or PT_CODE_NONE (p2p: none) */
  uint8_t proto;      /* NCCL_PROTO_* code, or PT_CODE_NONE */
  uint8_t nchannels;  /* 0 when not given */
  int32_t root_or_peer; /* a collective's root, a p2p's peer */
  uint64_t seq;       /* Coll: seqNumber; P2p: the per-(peer, direction) sequence */
  uint64_t count;     /* elements */
  uint64_t user_tag;  /* API v7, else 0 */
} pt_task_info;

/* Codes from the names the v2+ descriptors carry (ncclDatatypeToString,
 * ncclAlgoToString, ncclProtoToString) and back; PT_CODE_NONE / "?" for
 * NULL or unknown. The lookups remember the last pointer they were given
 * (the host passes the same literals every time), so a repeat costs one
 * compare. */
int pt_dtype_code(const char* name);
int pt_algo_code(const char* name);
int pt_proto_code(const char* name);
const char* pt_dtype_name(int code); /* "float32", "bfloat16", ... (short names) */
const char* pt_algo_name(int code);  /* "RING", "TREE", ... as NCCL prints them */
const char* pt_proto_name(int code); /* "LL", "LL128", "SIMPLE" */
/* The four codes of a task in one call (the Coll and P2p events' hot
 * path): function, datatype, algorithm, protocol in bytes 0..3. */
uint32_t pt_task_codes(const char* func, const char* dtype, const char* algo, const char* proto);

/* A Coll or P2p event started. */
void pt_progress_task(pt_trace* t, const pt_task_info* ti);
/* A KernelCh event started on `channel`, child of `parent` (a task handle,
 * from which the task's function and sequence follow; anything else: an
 * unknown task). `gpu_ns`: the GPU's start time (API v4+), else 0. Returns
 * the event's handle (a tagged value naming the channel's slot), or NULL
 * for a channel out of range (counted as a bad state). */
pt_handle pt_progress_kch_start(pt_trace* t, const void* parent, int channel, uint64_t gpu_ns);
/* 1 if `h` is a kernel-channel handle of pt_progress_kch_start. */
static inline int pt_is_kch_handle(const void* h) { return ((uint64_t)(uintptr_t)h >> 52) == 0xAABull; }
/* KernelChStop (state 22): the GPU's stop time. */
void pt_progress_kch_gpu_stop(pt_handle h, uint64_t gpu_ns);
/* stopEvent of a kernel-channel handle: the channel finished the task. */
void pt_progress_kch_stop(pt_handle h);

/* What the records say about RCCL's ProxyDiag updates (plugin's diag.c):
 * registered ops counted from their host's fields that got an update, that
 * got none, ops counted from step events, and counter kinds refused. Reads
 * the first PT_DIAG_EVIDENCE_SLOTS slots; cold, on the recording thread. */
#define PT_DIAG_EVIDENCE_SLOTS 4096u
typedef struct {
  uint32_t updated, silent, stock;
  uint64_t bad_counters;
} pt_diag_evidence;
void pt_trace_diag_evidence(const pt_trace* t, pt_diag_evidence* e);

/* ---- what the host did that the records cannot show (the dump header) ---- */
typedef enum {
  PT_NOTE_DIAG_MISSING = 1u << 0,  /* RCCL sent ProxyOps but no ProxyDiag update followed */
  PT_NOTE_DIAG_MISMATCH = 1u << 1, /* RCCL's ProxyOp fields broke an invariant: not read */
  PT_NOTE_MASK_CHANGED = 1u << 2,  /* events show the host changed the event mask */
  PT_NOTE_MASK_OFF = 1u << 3       /* at this dump the host's mask leaves ProxyOp and
                                      ProxyStep out: later calls are not recorded */
} pt_note;
/* Adds notes to `t`, or with t == NULL to every trace of the process. */
void pt_trace_note(pt_trace* t, unsigned notes);
/* Takes notes of `t` back (one that holds for the moment only). */
void pt_trace_unnote(pt_trace* t, unsigned notes);
/* The notes of `t` and the process-wide ones. */
unsigned pt_trace_notes(const pt_trace* t);
/* The text line the dump prints after its header for these notes, or 0
 * when there are none (a clean dump prints what legacy prints). */
int pt_format_notes(char* buf, size_t n, unsigned notes);

/* ---- reading: any thread ---- */

void pt_trace_drops(const pt_trace* t, pt_drop_stats* out);
uint32_t pt_trace_active_ops(const pt_trace* t);
/* What the stall watchdog reads: ops the host is still progressing
 * (registered, neither complete nor stopped), and the tick of the last
 * progress of any op of the trace (POSTED/RECEIVED/TRANSMITTED/DONE
 * changing) or of the last registration, 0 if none. */
uint32_t pt_trace_waiting_ops(const pt_trace* t);
uint64_t pt_trace_last_progress(const pt_trace* t);
int pt_trace_rank(const pt_trace* t);
/* Hosts whose init gives no rank (API v1-v3): the first op's rank is used. */
void pt_trace_learn_rank(pt_trace* t, int rank);

/* Legacy dump (spec §3.8): header, an optional line of drop counts, then one
 * record per line sorted by key string; where an active and a finished record
 * share a key both are printed, finished first. `emit` gets each line without
 * its trailing newline. Returns the number of lines emitted, -1 on ENOMEM
 * (after emitting the header and an error line). */
typedef void (*pt_line_fn)(void* arg, const char* line, int len);
int pt_trace_dump(pt_trace* t, pt_line_fn emit, void* arg);

/* ---- snapshots: one read of a trace, printed as text and as JSON ----
 *
 * pt_trace_snapshot() copies every record a dump prints (the same records
 * pt_trace_dump prints, in the same order) with the header figures, once;
 * the formatters below print that copy, so the text and the JSON of one
 * dump say the same thing. Any thread, concurrently with recording. */
typedef struct pt_dump pt_dump;
/* NULL when out of memory. */
pt_dump* pt_trace_snapshot(pt_trace* t);
void pt_dump_free(pt_dump* d);
/* Op records (active and detached), finished records, and which origins
 * (bit 1 << pt_origin) the records have. */
uint32_t pt_dump_active(const pt_dump* d);
uint32_t pt_dump_finished(const pt_dump* d);
unsigned pt_dump_origins(const pt_dump* d);
int pt_dump_rank(const pt_dump* d);
/* CLOCK_REALTIME ns when the snapshot was taken. */
int64_t pt_dump_time_ns(const pt_dump* d);

/* The legacy lines (as pt_trace_dump). Returns the number of lines. */
int pt_dump_text(const pt_dump* d, pt_line_fn emit, void* arg);

/* A caller's buffer (a dump file's) that the formatters write whole lines
 * into, each ending in '\n', with no copy per line. `flush` must empty it
 * (len back to 0); it is called whenever the next line might not fit, and
 * what is left at the end is the caller's to flush. cap >= PT_OUT_MIN. */
#define PT_OUT_MIN 8192
typedef struct pt_out {
  char* buf;
  size_t cap, len;
  void (*flush)(struct pt_out* o);
  void* arg;
} pt_out;
/* The lines pt_dump_text would emit (formatted, not emitted). */
int pt_dump_text_lines(const pt_dump* d);
/* pt_dump_text and pt_dump_json (below) into a buffer: the same lines. */
int pt_dump_text_out(const pt_dump* d, pt_out* o);

/* What a dump says about where it comes from (docs/dump-json.md). */
typedef struct {
  const char* host;      /* host name */
  long pid;
  int nranks, nnodes;    /* 0 = the host did not say */
  const char* rank_from; /* "init", "event" (learned from one) or "unknown"; NULL = "unknown" */
  uint64_t comm_hash;
  const char* comm_name; /* NULL = none */
  const char* host_lib;  /* "rccl", "nccl" or "unknown" */
  int profiler_api;      /* N of the ncclProfiler_vN the host bound */
  int stock_raw_steps;   /* 1: the host counts a stock op's steps raw (NCCL 2.23, API v1); 0: in
                            network transfers (2.24+). Ops from RCCL's ProxyDiag fields (origin
                            host) count raw steps either way (docs/dump-json.md, "Step units") */
  const char* trigger;   /* "stall", "signal", "periodic", "finalize", "hook", "api" */
  uint64_t seq;          /* per process, one per dump of one communicator */
  uint64_t round;        /* per process, one per trigger (dumps taken together) */
  uint32_t stall_ms;     /* the stall watchdog's setting, 0 = off */
  uint64_t lost_dumps;   /* dumps lost to write errors so far (process) */
  uint64_t rotated_dumps; /* dumps of this communicator's files removed by rotation so far */
  uint64_t episode_seq;   /* the seq of the stall dump that began the stall episode this dump is in, in
                             these files; 0 none (no episode, or its dump was lost) */
  uint64_t last_progress_ticks; /* pt_trace_last_progress() at the snapshot */
} pt_dump_meta;

/* "proxytrace dump seq=… trigger=… time_ns=… host=… pid=… rank=… nRanks=…
 * commHash=… hostLib=… lines=…": the line before each dump in a text file;
 * lines= counts the dump's lines after it (pt_dump_text_lines), so that a
 * reader knows a dump cut between two lines. */
int pt_dump_banner(const pt_dump* d, const pt_dump_meta* m, char* buf, size_t n);
/* The same with lines= given (pt_dump_text_lines(d), counted once by a
 * caller that writes the dump more than once). */
int pt_dump_banner_lines(const pt_dump* d, const pt_dump_meta* m, int lines, char* buf, size_t n);
/* The unit of the nSteps and step counters of an op of origin `origin`
 * in a dump described by m: "rawSteps" or "transfers". */
const char* pt_step_unit_name(const pt_dump_meta* m, int origin);
/* The unit of a dump's ops: theirs when they agree, "mixed" when not; a
 * dump without ops, the unit its host's ops come in. */
const char* pt_dump_step_unit(const pt_dump* d, const pt_dump_meta* m);
/* JSON lines, schema 1: one "dump" header, one "op" per record, one "end".
 * Returns the number of lines. */
int pt_dump_json(const pt_dump* d, const pt_dump_meta* m, pt_line_fn emit, void* arg);
int pt_dump_json_out(const pt_dump* d, const pt_dump_meta* m, pt_out* o);

/* Status and names (spec §3.6, §3.1). `window` is the steps an op may have
 * in flight, in the counters' unit: NCCL_STEPS (pass 0) for RCCL and raw
 * steps; fewer for stock NCCL ops counted in transfers (learnt, trace.c). */
pt_status pt_status_of(pt_op_type type, int64_t posted, int64_t received, int64_t transmitted,
                       int64_t done, int nsteps, int window);
const char* pt_status_name(pt_status s);

/* ---- step metrics: why a job is slow (docs/metrics.md) ----
 *
 * With pt_trace_config.metrics on, every registered op's steps are timed
 * per edge of the communicator: a (peer, direction), and with
 * PT_METRICS_CHANNELS also a (peer, direction, channel). Times are
 * histogrammed in nanoseconds in log-scale buckets, four per power of two
 * (bucket i holds values in (upper(i-1), upper(i)]), bytes in one bucket per
 * power of two. Recording allocates nothing; pt_trace_metrics_service()
 * (any one thread, e.g. the dumper) hands over the memory the recording
 * thread asked for. */
enum { PT_METRICS_OFF = 0, PT_METRICS_ON = 1, PT_METRICS_CHANNELS = 2 };
enum { PT_METRIC_GPU = 0, PT_METRIC_NET = 1, PT_METRIC_STEP = 2, PT_METRIC_TIMES = 3 };
#define PT_METRIC_TIME_BUCKETS 122 /* <=128 ns, 4 per octave up to 2^37 ns, overflow */
#define PT_METRIC_BYTE_BUCKETS 42  /* <=1 B, 1 per octave up to 2^40 B, overflow */
typedef struct pt_metrics pt_metrics;

/* A copy of one edge, as the exporter prints it. */
typedef struct {
  int peer;
  int channel; /* -1: every channel */
  int is_send;
  uint64_t ops, steps, sized_steps, bytes;
  uint32_t in_flight;
  double busy_ns;                      /* time with ops in flight, the open interval included */
  uint64_t sum_ns[PT_METRIC_TIMES];    /* GPU wait, network, step */
  uint64_t credit_ns;                  /* send: data ready -> isend posted (in network) */
  uint64_t h[PT_METRIC_TIMES][PT_METRIC_TIME_BUCKETS];
  uint64_t hb[PT_METRIC_BYTE_BUCKETS];
} pt_metric_edge;

/* Upper bound (inclusive) of a bucket; UINT64_MAX for the overflow bucket. */
uint64_t pt_metric_time_upper_ns(int bucket);
uint64_t pt_metric_bytes_upper(int bucket);
/* The bucket of a value. */
int pt_metric_time_bucket(uint64_t ns);
int pt_metric_bytes_bucket(uint64_t bytes);
/* The q-quantile (0..1) of a histogram, as its bucket's upper bound (the
 * overflow bucket answers its lower bound); 0 when empty. */
uint64_t pt_metric_time_quantile(const uint64_t h[PT_METRIC_TIME_BUCKETS], double q);

/* 1 when the trace measures steps. */
int pt_trace_metrics_on(const pt_trace* t);
/* Calls `fn` with a copy of every edge, newest first; returns how many.
 * Any thread, concurrently with recording. */
typedef void (*pt_metric_edge_fn)(void* arg, const pt_metric_edge* e);
size_t pt_trace_metric_edges(const pt_trace* t, pt_metric_edge_fn fn, void* arg);
/* Ops that could not be measured (no scratch or edge memory yet). */
uint64_t pt_trace_metrics_unmeasured(const pt_trace* t);
/* Memory the metrics hold now, in bytes (edges, scratch, tables, spares). */
size_t pt_trace_metrics_bytes(const pt_trace* t);
/* Hands the recording thread what it asked for: scratch chunks, spare
 * edges, a bigger edge table; frees the table it gave back. One thread at a
 * time (the dumper); 0, or -1 when an allocation failed (retried later). */
int pt_trace_metrics_service(pt_trace* t);
/* One read of every edge of a trace, printed as Prometheus text and as
 * JSON lines (docs/metrics.md). NULL when out of memory. */
typedef struct pt_metrics_snap pt_metrics_snap;
pt_metrics_snap* pt_trace_metrics_snapshot(const pt_trace* t);
void pt_metrics_snap_free(pt_metrics_snap* s);
size_t pt_metrics_snap_edges(const pt_metrics_snap* s);
/* What the files say about where the metrics come from. */
typedef struct {
  const char* host;
  long pid;
  int rank, nranks;
  uint64_t comm_hash;
  const char* comm_name; /* NULL = none */
  const char* host_lib;  /* "rccl", "nccl", "unknown" */
  uint32_t interval_ms;
  int final;             /* the communicator's last export (finalize) */
} pt_metrics_meta;
/* Prometheus text exposition format 0.0.4; returns the lines emitted. */
int pt_metrics_prom(const pt_metrics_snap* s, const pt_metrics_meta* m, pt_line_fn emit, void* arg);
/* JSON lines: one "metrics" header, one "edge" per edge, one "end". */
int pt_metrics_json(const pt_metrics_snap* s, const pt_metrics_meta* m, pt_line_fn emit, void* arg);
/* Bytes of one edge and of one op's scratch (docs). */
size_t pt_metric_edge_bytes(void);
size_t pt_metric_op_bytes(void);

/* Populates the slab pages the trace's next new ops will take (twice as
 * many slots ahead of the high-water mark as it took since the last call,
 * 64..1024), so that the recording thread's first write to a fresh slot
 * takes no page fault. System calls: any thread but the recording one
 * (the dumper thread; the init caller where none runs), concurrently with
 * recording; a call while another runs on the same trace returns at once.
 * 0, or -1 when the system had no memory for them (the recording thread's
 * first writes fault them in instead, as without). */
int pt_trace_prefault(pt_trace* t);

/* Memory the trace holds, in bytes (its slots in use so far, the id table
 * and the trace itself), and the per-slot size. */
size_t pt_trace_reserved_bytes(const pt_trace* t);
/* Slots handed out so far (the high-water mark of ops in flight, rounded
 * up by the reuse reserve). */
uint32_t pt_trace_slots_used(const pt_trace* t);
size_t pt_op_slot_bytes(void);

#ifdef __cplusplus
}
#endif
#endif
