/*
 * metrics.h — why a job is slow, measured where the steps happen (internal
 * to src/trace; the public view is in include/proxytrace/trace.h).
 *
 * Per communicator, per edge — a (peer, direction), and with channels on
 * also a (peer, direction, channel) — counts, sums and log-scale histograms
 * of every step's time waiting for its GPU, its network time and its whole
 * time, bytes per step, and the time the edge had ops in flight (for
 * throughput). The counters come from the op's own counters as the trace
 * records them (trace.c calls in here once per phase counter update), so
 * RCCL's ProxyDiag updates and stock NCCL's step events feed the same code.
 *
 * A step is one transfer: counters advanced by one update. For step s:
 *
 *   send  GPU wait  POSTED(s) → KERNEL_COPY_READY(s)  (the GPU produced it),
 *                   from TRANSMITTED(s-1) if later: the proxy looks at a
 *                   step's data only once the step before it went out, so
 *                   a slow network does not show as a slow GPU
 *         network   KERNEL_COPY_READY(s) → DONE(s)   (receiver's credit,
 *                   isend, completion; the credit part is also summed)
 *   recv  network   POSTED(s) → RECEIVED(s)          (irecv posted → arrived)
 *         GPU wait  TRANSMITTED(s) → DONE(s)         (handed to the GPU →
 *                   consumed)
 *   both  step      POSTED(s) → DONE(s)
 *
 * Memory follows use. Nothing is allocated, locked or entered in the kernel
 * on the recording thread: the per-op scratch (the entry times of the steps
 * in flight) comes from a pool of chunks and the edges from a few spares,
 * both refilled by the dumper thread (pt_metrics_service) when the
 * recording thread says it ran low; until then an op that finds none is not
 * measured, and counted (unmeasuredOps). The edge table is the recording
 * thread's own; a bigger one is handed over the same way.
 */
#ifndef PT_TRACE_METRICS_H
#define PT_TRACE_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "proxytrace/trace.h"

struct pt_op;

#define PT_M_WINDOW 8       /* steps of one op in flight at most (NCCL_STEPS) */
#define PT_M_SPARES 8       /* spare edges waiting for the recording thread */
#define PT_M_CHUNKS 11      /* scratch chunks: chunk k holds 32 << k entries */
#define PT_M_CHUNK0 32
#define PT_M_TABLE0 16      /* first edge table: slots (power of two) */

/* One edge: written by the recording thread only, read by the exporter
 * (relaxed loads of atomics; a copy may be a few steps behind itself). */
typedef struct pt_medge {
  int32_t peer;
  int16_t channel; /* -1: every channel */
  uint8_t is_send;
  uint8_t reserved;
  struct pt_medge* next; /* the export list, newest first; set before publishing */
  _Atomic uint64_t ops, steps, sized_steps, bytes;
  _Atomic uint64_t sum_ns[PT_METRIC_TIMES]; /* GPU wait, network, step */
  _Atomic uint64_t credit_ns;               /* send: data ready -> isend posted */
  _Atomic uint64_t busy_ticks;   /* closed intervals with ops in flight */
  _Atomic uint64_t busy_since;   /* tick the open interval started */
  _Atomic uint32_t in_flight;
  _Atomic uint64_t h[PT_METRIC_TIMES][PT_METRIC_TIME_BUCKETS];
  _Atomic uint64_t hb[PT_METRIC_BYTE_BUCKETS];
} pt_medge;

/* The scratch of one measured op: its edges and the entry times of the
 * steps in flight, by step % 8 (0: none). */
typedef struct {
  pt_medge* e[2];            /* the (peer, dir) edge; the channel edge or NULL */
  uint64_t ta[PT_M_WINDOW];  /* POSTED */
  uint64_t tb[PT_M_WINDOW];  /* send: data ready; recv: handed to the GPU */
  uint64_t t_head;           /* send: when the last step went to the network */
  int64_t cum;               /* last cumulative transSize (NCCL 2.23-2.26); -1 none */
  int64_t pending;           /* bytes of the next transfer; -1 unknown */
  uint8_t tid[PT_M_WINDOW];  /* which POSTED update posted the step: the steps of one transfer share it */
  uint16_t next_free;
  uint8_t is_send;
  uint8_t posts;             /* POSTED updates so far (wraps; only neighbours are compared) */
  uint8_t reserved[4];
} pt_mop;

struct pt_metrics {
  uint64_t mult;   /* ns per tick << 32 */
  int channels;    /* also per (peer, direction, channel) */
  /* recording thread only */
  pt_medge** table;
  uint32_t table_cap, n_edges;
  uint16_t free_head;        /* scratch free list (index + 1; 0 = empty) */
  uint16_t linked;           /* chunks taken into the free list */
  uint32_t n_free;           /* entries on the free list */
  /* handed over by the dumper (release), taken by the recorder (acquire) */
  _Atomic(pt_mop*) chunk[PT_M_CHUNKS];
  _Atomic(pt_medge*) spare[PT_M_SPARES];
  _Atomic(pt_medge**) spare_table; /* a bigger table (spare_table_cap slots) */
  _Atomic uint32_t spare_table_cap;
  _Atomic uint32_t table_cap_pub;  /* table_cap, for the dumper to size the next */
  _Atomic(pt_medge**) retired_table; /* the recorder's old table, for the dumper to free */
  _Atomic uint32_t want;     /* PT_M_WANT_*: what the recorder ran out of */
  /* published to readers */
  _Atomic(pt_medge*) head;
  _Atomic uint64_t unmeasured;
  _Atomic uint64_t unmeasured_lanes; /* ops of lanes other than 0: any of them adds (atomic) */
  _Atomic uint64_t bytes;    /* allocated now (written by whoever allocates: create, service) */
};

enum { PT_M_WANT_SCRATCH = 1, PT_M_WANT_EDGE = 2, PT_M_WANT_TABLE = 4 };

/* Counter kinds the recorder hands in (trace.c checks the mask inline). */
#define PT_M_KINDS                                                                          \
  ((1u << PT_CNT_POSTED) | (1u << PT_CNT_KERNEL_COPY_READY) | (1u << PT_CNT_RECEIVED) |    \
   (1u << PT_CNT_TRANSMITTED) | (1u << PT_CNT_DONE) | (1u << PT_CNT_FIFO_SZ_OR_HEAD_CACHE))

pt_metrics* pt_metrics_create(int channels);
void pt_metrics_destroy(pt_metrics* m);

/* ---- the recording thread ---- */

/* An op registered (its record holds peer, channel, direction): binds it to
 * its edges and a scratch entry; sets op->mop, or leaves it 0 (counted). */
void pt_metrics_op_begin(pt_metrics* m, struct pt_op* op, uint64_t now);
/* A counter of kind `kind` (PT_M_KINDS) went from `old` to `value`. */
void pt_metrics_counter(pt_metrics* m, struct pt_op* op, unsigned kind, int64_t old, int64_t value,
                        uint64_t now);
/* The host said how many bytes the op's transfer moves: `cumulative` (NCCL
 * 2.23-2.26 ProxyOp states: the op's total so far) or this transfer's. */
void pt_metrics_size(pt_metrics* m, struct pt_op* op, int64_t bytes, int cumulative);
/* An op of a lane other than lane 0 registered: metrics are recorded by
 * lane 0's thread only (the edge table and the scratch pool are its own),
 * so the op is counted as unmeasured. Any thread. */
void pt_metrics_unmeasured_add(pt_metrics* m);
/* The op completed or was stopped: its scratch goes back. */
void pt_metrics_op_end(pt_metrics* m, struct pt_op* op, uint64_t now);

#endif
