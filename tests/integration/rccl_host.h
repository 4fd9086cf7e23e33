/*
 * rccl_host.h — a small RCCL stand-in for the integration tests: it dlopens a
 * built plugin and drives it through the real v6 ABI with the event sequence
 * RCCL emits for network proxy ops (spec/rccl-proxytrace.md §2.4–§2.5),
 * including the per-poll counters, and captures what the plugin logs.
 */
#ifndef PT_TEST_RCCL_HOST_H
#define PT_TEST_RCCL_HOST_H

#include <stdatomic.h>
#include <stdint.h>

#include "nccl/profiler_v6.h"

typedef struct {
  void* so;
  ncclProfiler_v6_t* p;
  ncclProfilerProxyTraceDump_t dump;
} rh_plugin;

/* Opens $PT_PLUGIN_SO (or `path`); fails the test if it cannot. */
void rh_open(rh_plugin* h, const char* path);
void rh_close(rh_plugin* h);
/* init with commHash and rank; asserts success and the requested mask. */
void* rh_init(rh_plugin* h, uint64_t comm_hash, int rank, int nranks);

typedef struct {
  uint64_t comm_hash;
  int64_t op_count;
  int channel, peer, is_send;
  int raw_nsteps;  /* rawProxyNsteps */
  int slice_steps; /* raw steps per network step (RCCL advances counters by it) */
  uint32_t nbytes;
  int32_t func, proto, pattern;
  uint32_t total_bytes;
  int chunk_size;
} rh_op_desc;

/* One proxy op as the host sees it: its handle and its counters so far. */
typedef struct {
  rh_plugin* h;
  void* handle;
  void* ctx; /* the context the op was started on: its steps start there too */
  rh_op_desc d;
  int64_t posted, received, transmitted, done, flushed;
  int next_step;
  void* steps[8];
} rh_op;

void rh_op_start(rh_plugin* h, void* ctx, rh_op* op, const rh_op_desc* d);
void rh_op_in_progress(rh_op* op);
/* The state rh_diag sends a ProxyDiag update as (31, RCCL before 2.31). */
extern int rh_diag_state;
void rh_diag(rh_op* op, int kind, int64_t value, unsigned flags);
/* Advance an op through RCCL's per-step sequence until its counters reach
 * the targets (raw units), with `polls` per-poll counter updates per step. */
void rh_advance(rh_op* op, int64_t posted, int64_t received, int64_t transmitted, int64_t done,
                int polls);
/* Start an op, put it in progress and advance it to the given counters. */
void rh_op_active(rh_plugin* h, void* ctx, rh_op* op, const rh_op_desc* d, int64_t posted,
                  int64_t received, int64_t transmitted, int64_t done, int polls);
/* An op as NVIDIA NCCL 2.29+ starts it through the v6 table (RCCL fields
 * zero: counters follow its steps), put in progress; its handle. */
void* rh_stock_op_active(rh_plugin* h, void* ctx, int peer, int nsteps, int is_send);
/* The whole op: start, in-progress, every step, stop. */
void rh_run_full(rh_plugin* h, void* ctx, const rh_op_desc* d, int polls);
void rh_op_stop(rh_op* op);

/* ---- captured log ---- */
/* NCCL's and RCCL's loggers may be called from any thread (the plugin's
 * dump thread says its warnings too): lines are appended under a lock and
 * published by n, so a test reading lines 0..n-1 sees them whole. */
#define RH_MAX_LINES 4096
typedef struct {
  _Atomic int n;
  int level[RH_MAX_LINES];
  char* text[RH_MAX_LINES];
  char* file[RH_MAX_LINES];
} rh_log;
extern rh_log rh_captured;
void rh_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
               const char* fmt, ...);
void rh_log_clear(void);
/* The captured dump's drop line ("proxytrace dropped…"), after the header
 * and the host notes line where there is one (and a WARN the plugin said
 * before the dump); "" when there is none. */
const char* rh_drop_line(void);
/* The first JSON dump file in `dir` whose name holds `tag` ("" for any),
 * read whole and removed; NULL if there is none. Caller frees. */
char* rh_take_jsonl(const char* dir, const char* tag);
/* cmocka setup and teardown that open and close `rh_the_plugin`. */
extern rh_plugin rh_the_plugin;
int rh_setup(void** state);
int rh_teardown(void** state);

/* The captured lines but the progress lines after the records
 * ("proxytrace progress:" and those after it). */
int rh_legacy_lines(void);
/* Dump into rh_captured (cleared first); returns the line count. */
int rh_dump(rh_plugin* h, void* ctx);
/* The captured lines joined with '\n', timestamps masked: a non-zero
 * createT/lastT/postT/sendT value becomes "T" (0 stays 0). Caller frees. */
char* rh_masked_dump(void);
/* Compares `text` with tests/golden/<name>.txt; PT_UPDATE_GOLDEN=1 rewrites
 * the file instead. Returns 0 when equal, prints a diff otherwise. */
int rh_golden(const char* name, const char* text);

/* ---- dumps captured by threads of their own (the stress tests) ---- */
/* One dump's lines, as the dumping thread's logger got them: the header,
 * the drop line, a mid-write note, and up to `max` record lines. */
typedef struct {
  int lines, header_ok, drop_line, mid_write;
  char drops[1024];
  char mid_keys[1024];
  int nrec, max;
  char (*rec)[1024];
} rh_capture;
rh_capture* rh_capture_new(int max_records);
void rh_capture_free(rh_capture* c);
/* Dumps ctx through the hook into c (cleared first), on this thread: any
 * number of threads may capture at once, each into its own. */
void rh_capture_dump(rh_plugin* h, void* ctx, rh_capture* c);
/* The number after `name` in a line (" po:" -> its value), -999 if none. */
long rh_field(const char* line, const char* name);
/* Lines with `needle` in the files *suffix of folder d. */
int rh_count_in_files(const char* d, const char* suffix, const char* needle);

#endif
