/*
 * progress.h — the per-communicator progress state (trace.h, "progress")
 * as it lives in a trace, and the copy a dump prints (internal to
 * src/trace: progress.c records and copies it, dump.c and json.c print it).
 */
#ifndef PT_TRACE_PROGRESS_H
#define PT_TRACE_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

#include "proxytrace/trace.h"
#include "trace/seqlock.h"

#define PT_PROG_MAGIC 0x70726f67u /* "prog" */
#define PT_PROG_TASK_WORDS 6
#define PT_PROG_CH_WORDS 10

/* One entry, written under its seqlock as a few words. */
typedef struct {
  pt_seq seq;
  _Atomic uint64_t w[PT_PROG_TASK_WORDS];
} pt_prog_task_slot;

typedef struct {
  pt_seq seq;
  _Atomic uint64_t w[PT_PROG_CH_WORDS];
} pt_prog_ch_slot;

/* Aligned to 256 bytes: a kernel-channel handle is its address with the
 * channel in the low byte (progress.c). */
typedef struct pt_progress {
  _Atomic uint32_t magic;
  struct pt_trace* trace;
  void* raw; /* what calloc gave (progress.c) */
  _Atomic uint64_t head[2]; /* tasks started so far: collectives, p2p */
  pt_prog_task_slot task[2][PT_PROG_OPS];
  pt_prog_ch_slot ch[PT_PROG_CHANNELS];
} pt_progress;

/* What the dump prints. */
typedef struct {
  pt_task_info info;
  uint64_t t_start; /* ticks */
} pt_prog_task_view;

typedef struct {
  uint8_t channel;
  uint64_t starts, stops;
  /* The last start and stop: the task's kind (0 coll, 1 p2p, 2 unknown),
   * function, sequence, host ticks and GPU ns (0: none given). */
  uint8_t start_kind, start_func, stop_kind, stop_func;
  uint64_t start_seq, t_start, gpu_start;
  uint64_t stop_seq, t_stop, gpu_stop;
} pt_prog_ch_view;

typedef struct {
  uint64_t n_tasks[2];                        /* collectives, p2p started */
  uint32_t n_kept[2];                         /* entries in task[] */
  pt_prog_task_view task[2][PT_PROG_OPS];     /* oldest first */
  uint32_t n_ch;                              /* channels that ever started */
  pt_prog_ch_view ch[PT_PROG_CHANNELS];
  uint64_t kch_starts, kch_stops;
  uint32_t torn;                              /* entries kept busy past the reader's patience: left out */
} pt_progress_view;

pt_progress* pt_progress_create(struct pt_trace* t);
void pt_progress_destroy(pt_progress* p);
/* A consistent copy (each entry exactly one of its versions); any thread. */
void pt_progress_read(const pt_progress* p, pt_progress_view* v);
/* 1 when the communicator has seen a task or kernel event: only then do
 * the dumps print the progress. */
static inline int pt_progress_any(const pt_progress_view* v) {
  return v->n_tasks[0] || v->n_tasks[1] || v->kch_starts;
}
/* A refused event on a kernel-channel handle, counted on its trace. */
void pt_progress_count(pt_handle h, pt_drop_reason r);

#endif
