/*
 * record.c — copies between the atomic record and its plain view, and the
 * reader side of the seqlock (record.h explains the protocol), shared by the
 * live slots and the finished ring.
 */
#include "trace/record.h"

#include <sched.h>
#include <string.h>
#include <time.h>

void pt_rec_to_view(const pt_rec* r, pt_rec_view* v) {
  v->op_type = PT_LOAD(r->op_type);
  v->last_kind = PT_LOAD(r->last_kind);
  v->window = PT_LOAD(r->window);
  v->origin = PT_LOAD(r->origin);
  v->channel = PT_LOAD(r->channel);
  v->nsteps = PT_LOAD(r->nsteps);
  v->peer = PT_LOAD(r->peer);
  v->nbytes = PT_LOAD(r->nbytes);
  v->comm_hash = PT_LOAD(r->comm_hash);
  v->op_count = PT_LOAD(r->op_count);
  v->op_id = PT_LOAD(r->op_id);
  const uint32_t ps = PT_LOAD(r->p2p_seq);
  v->p2p_seq = ps & PT_P2P_SEQ_SET ? (int64_t)(ps & ~PT_P2P_SEQ_SET) : -1;
  v->func_idx = PT_LOAD(r->func_idx);
  v->protocol = PT_LOAD(r->protocol);
  v->pattern = PT_LOAD(r->pattern);
  v->total_bytes = PT_LOAD(r->total_bytes);
  v->chunk_size = PT_LOAD(r->chunk_size);
  v->tag_ref = PT_LOAD(r->tag_ref);
  PT_UNROLL for (int k = 0; k < PT_CNT_NUM; k++) v->counters[k] = PT_LOAD(r->counters[k]);
  v->t_create = PT_LOAD(r->t_create);
  v->t_last = PT_LOAD(r->t_last);
  v->t_posted = PT_LOAD(r->t_posted);
  v->t_kernel = PT_LOAD(r->t_kernel);
  v->t_progress = PT_LOAD(r->t_progress);
}

void pt_rec_from_view(pt_rec* r, const pt_rec_view* v) {
  PT_STORE(r->op_type, v->op_type);
  PT_STORE(r->last_kind, v->last_kind);
  PT_STORE(r->window, v->window);
  PT_STORE(r->origin, v->origin);
  PT_STORE(r->channel, v->channel);
  PT_STORE(r->nsteps, v->nsteps);
  PT_STORE(r->peer, v->peer);
  PT_STORE(r->nbytes, v->nbytes);
  PT_STORE(r->comm_hash, v->comm_hash);
  PT_STORE(r->op_count, v->op_count);
  PT_STORE(r->op_id, (int32_t)v->op_id);
  PT_STORE(r->p2p_seq, v->p2p_seq >= 0 ? ((uint32_t)v->p2p_seq & ~PT_P2P_SEQ_SET) | PT_P2P_SEQ_SET : 0u);
  PT_STORE(r->func_idx, v->func_idx);
  PT_STORE(r->protocol, v->protocol);
  PT_STORE(r->pattern, v->pattern);
  PT_STORE(r->total_bytes, v->total_bytes);
  PT_STORE(r->chunk_size, v->chunk_size);
  PT_STORE(r->tag_ref, v->tag_ref);
  PT_UNROLL for (int k = 0; k < PT_CNT_NUM; k++) PT_STORE(r->counters[k], v->counters[k]);
  PT_STORE(r->t_create, v->t_create);
  PT_STORE(r->t_last, v->t_last);
  PT_STORE(r->t_posted, v->t_posted);
  PT_STORE(r->t_kernel, v->t_kernel);
  PT_STORE(r->t_progress, v->t_progress);
}

static void pause_cpu(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Writes a copy overlapped, from the sequence before (s1) and after (s2):
 * each write makes the sequence odd, then even. */
static uint32_t writes_overlapped(uint32_t s1, uint32_t s2) {
  const uint32_t d = s2 - s1;
  return (s1 & 1u) ? 1 + d / 2 : (d + 1) / 2;
}

/* Spin a little (a write takes nanoseconds), then yield to a writer that may
 * share this CPU, until the patience runs out. While spinning, an odd
 * sequence is only waited on; after that every try is copied, and a try
 * that is not consistent is kept if it overlapped no more writes than the
 * best so far: with the writer stopped inside one write the sequence stays
 * the same odd value for the whole copy, which is then the record with that
 * one write partly applied. */
int pt_rec_read(const pt_rec* r, pt_rec_view* v, const _Atomic uint8_t* state,
                uint8_t* state_out, uint32_t* version) {
  pt_rec_view tmp;
  uint8_t best_state = 0;
  uint32_t best = UINT32_MAX; /* writes overlapped by the copy in *v */
  uint64_t deadline = 0;
  for (unsigned tries = 0;; tries++) {
    const uint32_t s1 = pt_seq_read_begin(&r->seq);
    if (!(s1 & 1u) || tries >= 64) {
      pt_rec_view* into = best == UINT32_MAX ? v : &tmp;
      const uint8_t st = state ? PT_LOAD(*state) : 0;
      pt_rec_to_view(r, into);
      const int same = pt_seq_read_end(&r->seq, s1);
      if (same && !(s1 & 1u)) {
        if (into != v) *v = tmp;
        if (state) *state_out = st;
        if (version) *version = s1;
        return PT_READ_CONSISTENT;
      }
      const uint32_t w = same ? 1 : writes_overlapped(s1, PT_LOAD(r->seq));
      if (w <= best) {
        if (into != v) *v = tmp;
        best_state = st;
        best = w;
      }
    }
    if (tries < 64) {
      pause_cpu();
      continue;
    }
    const uint64_t now = monotonic_ns();
    if (!deadline) {
      deadline = now + PT_READ_PATIENCE_NS;
    } else if (now >= deadline) {
      if (state) *state_out = best_state;
      return PT_READ_MID_WRITE;
    }
    sched_yield();
  }
}

void pt_rec_reset(pt_rec* r) {
  pt_rec_view v = {0};
  v.op_type = PT_OP_SEND;
  v.last_kind = PT_CNT_UNINITIALIZED;
  v.channel = -1;
  v.nsteps = -1;
  v.peer = -1;
  v.op_count = -1;
  v.op_id = -1;
  v.p2p_seq = -1;
  v.func_idx = -1;
  v.protocol = -1;
  v.pattern = -1;
  v.counters[PT_CNT_FIFO_SZ_OR_HEAD_CACHE] = -1;
  pt_rec_from_view(r, &v);
}
