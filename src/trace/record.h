/*
 * record.h — the binary record of one proxy operation, shared by live slots
 * and the finished ring, and the seqlock that lets a dump read it from another
 * thread while the proxy thread writes it.
 *
 * One writer (the trace's proxy thread) and any number of readers. The writer
 * makes the sequence odd, stores, then makes it even again; a reader retries
 * while the sequence is odd or changed under it (seqlock.h: the protocol, its
 * memory orders and why each is needed), and never waits on the writer for
 * longer than its patience (pt_rec_read): a preempted writer cannot hide a
 * record from a dump. Every field is an atomic accessed with relaxed
 * ordering — plain moves on x86 and ARM — so concurrent reads are well
 * defined and sanitizer-clean; the seqlock gives the ordering.
 * Strings are never stored: the dump formats a plain-data snapshot.
 */
#ifndef PT_TRACE_RECORD_H
#define PT_TRACE_RECORD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proxytrace/trace.h"
#include "trace/seqlock.h"

#define RLX memory_order_relaxed
#define PT_LOAD(x) atomic_load_explicit(&(x), RLX)
#define PT_STORE(x, v) atomic_store_explicit(&(x), (v), RLX)
/* Before a fixed-length loop of relaxed atomic loads or stores, which
 * compilers do not unroll by themselves (the record's counters, a slot's
 * step states): unrolled, an access each and no loop overhead. */
#if defined(__clang__)
#define PT_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define PT_UNROLL _Pragma("GCC unroll 16")
#else
#define PT_UNROLL
#endif

typedef struct {
  pt_seq seq; /* even: stable; odd: being written */
  _Atomic uint8_t op_type;   /* pt_op_type */
  _Atomic uint8_t last_kind; /* cntNm: last counter updated, PT_CNT_UNINITIALIZED if none */
  _Atomic uint8_t window;    /* steps in flight at most, in the counters' unit; 0 = NCCL_STEPS */
  _Atomic uint8_t origin;    /* pt_origin: where op_count comes from */
  _Atomic int32_t channel;
  _Atomic int32_t nsteps;
  _Atomic int32_t peer;
  _Atomic uint32_t nbytes;
  _Atomic uint64_t comm_hash;
  _Atomic int64_t op_count;
  _Atomic int32_t op_id; /* proxyOpId: counts per (commHash, opCount), small */
  /* A send or receive whose opCount is the host's (RCCL): PT_P2P_SEQ_SET |
   * the per-peer sequence of its parent P2p task, 0 = none. The host's
   * opCount is its rank's own count (of p2p calls on the channel: NCCL
   * src/enqueue.cc uploadProxyOps), so where ranks make different p2p calls
   * (a pipeline's stages) only this pairs a send with its receive. */
  _Atomic uint32_t p2p_seq;
  _Atomic int32_t func_idx;
  _Atomic int32_t protocol;
  _Atomic int32_t pattern;
  _Atomic uint32_t total_bytes;
  _Atomic uint32_t chunk_size;
  _Atomic uint32_t tag_ref;  /* the task's userTag (trace.h "userTags"): 0 = none; fills a hole */
  _Atomic int64_t counters[PT_CNT_NUM];
  _Atomic uint64_t t_create;   /* registration (legacy startTs) */
  _Atomic uint64_t t_last;     /* last counter update (legacy lastUpdateTs) */
  _Atomic uint64_t t_posted;   /* timestamps[POSTED] */
  _Atomic uint64_t t_kernel;   /* timestamps[KERNEL_COPY_READY] */
  _Atomic uint64_t t_progress; /* last change of POSTED/RECEIVED/TRANSMITTED/DONE */
} pt_rec;
_Static_assert(sizeof(pt_rec) == 200, "tag_ref fills the hole before counters[]");

#define PT_P2P_SEQ_SET 0x80000000u /* pt_rec.p2p_seq: set (the sequence is 31 bits) */

/* A plain copy of a record, taken by a reader. */
typedef struct {
  uint8_t op_type, last_kind, window, origin;
  int32_t channel, nsteps, peer;
  uint32_t nbytes;
  uint64_t comm_hash;
  int64_t op_count, op_id;
  int64_t p2p_seq; /* -1 = none */
  int32_t func_idx, protocol, pattern;
  uint32_t total_bytes, chunk_size;
  uint32_t tag_ref;
  int64_t counters[PT_CNT_NUM];
  uint64_t t_create, t_last, t_posted, t_kernel, t_progress;
} pt_rec_view;

/* A write: w = pt_rec_write_begin(r); stores; pt_rec_write_end(r, w). */
static inline uint32_t pt_rec_write_begin(pt_rec* r) { return pt_seq_write_begin(&r->seq); }
static inline void pt_rec_write_end(pt_rec* r, uint32_t w) { pt_seq_write_end(&r->seq, w); }

/* Record <-> view copies; the writer-side copy is also how a finished op is
 * frozen into the ring. */
void pt_rec_to_view(const pt_rec* r, pt_rec_view* v);
void pt_rec_from_view(pt_rec* r, const pt_rec_view* v);

/* What a reader got. A reader never gives up without a copy: a record is
 * never missing from a dump because its writer was busy or preempted.
 *   PT_READ_CONSISTENT  the record between two writes, as the writer left it;
 *   PT_READ_MID_WRITE   the writer stayed inside a write for the whole of the
 *                       reader's patience (PT_READ_PATIENCE_NS: preempted, or
 *                       rewriting the record without pause): the copy that
 *                       overlapped the fewest writes, normally one — each
 *                       value is then from just before or just after it.
 * A caller prints such a copy saying so (a live op), or leaves it out (a
 * finished-ring entry being rewritten: pt_ring_snapshot). */
enum { PT_READ_CONSISTENT = 0, PT_READ_MID_WRITE = 1 };
#define PT_READ_PATIENCE_NS 10000000ull /* 10 ms */

/* A snapshot of a record under its seqlock. With `state` (may be NULL),
 * *state_out is read inside the same snapshot (a slot's lifecycle byte,
 * which the writer changes inside the record's write section); with
 * `version` (may be NULL), *version is the sequence value of a consistent
 * copy (left unset for a mid-write one). */
int pt_rec_read(const pt_rec* r, pt_rec_view* v, const _Atomic uint8_t* state,
                uint8_t* state_out, uint32_t* version);
/* Legacy defaults: counters 0 except FIFO_SZ_OR_HEAD_CACHE = -1, ids -1. */
void pt_rec_reset(pt_rec* r);

#endif
