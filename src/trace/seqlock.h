/*
 * seqlock.h — the sequence lock that lets a dump copy a record on any thread
 * while the record's one writer (the trace's proxy thread) changes it. Used
 * by record.h/record.c; the only place its memory orders are written.
 *
 * The same text is compiled by the model check (tests/model/seqlock_model.cpp)
 * with the Relacy verifier's atomics in place of C11's: the orders verified
 * are the orders built, and the model shows that weakening any one of the
 * four below lets a reader accept a torn or stale copy.
 *
 *   writer                              reader
 *   s = seq (relaxed)                   s1 = seq               (A) acquire
 *   seq = s + 1 (relaxed): odd          s1 odd: retry
 *   fence (W) release                   copy the fields (relaxed loads)
 *   store the fields (relaxed)          fence                  (R) acquire
 *   seq = s + 2     (E) release         s2 = seq (relaxed); s2 != s1: retry
 *
 * Why the copy is exactly version s1 when the reader accepts it (C11
 * 7.17.4 fences, 5.1.2.4 happens-before):
 *  - Nothing older. s1 was written by the release store E that ended the
 *    write producing version s1, and A reads it, so that write's field
 *    stores happen before the reader's loads; by coherence a load cannot
 *    return a value older than those. Without E or A (relaxed), the reader
 *    can see the new sequence with old fields.
 *  - Nothing newer. If a field load returns a value stored by a later write,
 *    the release fence W before that store synchronizes with the acquire
 *    fence R after the load, so that write's "seq = odd" happens before the
 *    reader's s2 load, which then cannot return s1: the copy is retried.
 *    Without W or R the reader can take a later write's field and still see
 *    s2 == s1.
 * x86 keeps stores in order and loads in order, so only the compiler could
 * break this there; aarch64 reorders both, and W and R become dmb
 * instructions (A and E: ldar and stlr). TSan does not model fences, hence
 * the model check; tests/unit/test_seqlock.c stresses the real code, which
 * can fail only on hardware that reorders (run it on aarch64).
 */
#ifndef PT_TRACE_SEQLOCK_H
#define PT_TRACE_SEQLOCK_H

#include <stdint.h>

#ifndef PT_SEQ_MODEL /* the C build; the model defines these itself */
#include <stdatomic.h>
typedef _Atomic uint32_t pt_seq;
#define PT_SEQ_LOAD(p, mo) atomic_load_explicit((p), mo)
#define PT_SEQ_STORE(p, v, mo) atomic_store_explicit((p), (v), mo)
#define PT_SEQ_FENCE(mo) atomic_thread_fence(mo)
#endif

/* Returns the odd value it stored, for pt_seq_write_end: the one writer
 * knows the sequence, so the end does not load it again (a load that would
 * wait for the store just made, on every write). */
static inline uint32_t pt_seq_write_begin(pt_seq* seq) {
  uint32_t s = PT_SEQ_LOAD(seq, memory_order_relaxed) + 1;
  PT_SEQ_STORE(seq, s, memory_order_relaxed);
  PT_SEQ_FENCE(memory_order_release); /* W */
  return s;
}

static inline void pt_seq_write_end(pt_seq* seq, uint32_t odd) {
  PT_SEQ_STORE(seq, odd + 1, memory_order_release); /* E */
}

/* The version a copy starts from; odd while a write is in progress. */
static inline uint32_t pt_seq_read_begin(const pt_seq* seq) {
  return PT_SEQ_LOAD(seq, memory_order_acquire); /* A */
}

/* After the copy: 1 when it is exactly version `s1`, 0 to retry. */
static inline int pt_seq_read_end(const pt_seq* seq, uint32_t s1) {
  PT_SEQ_FENCE(memory_order_acquire); /* R */
  return PT_SEQ_LOAD(seq, memory_order_relaxed) == s1;
}

#endif
