/*
 * record.c — copies between the atomic record and its plain view, and the
 * reader side of the seqlock (record.h explains the protocol).
 */
#include "trace/record.h"

#include <sched.h>

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
  v->func_idx = PT_LOAD(r->func_idx);
  v->protocol = PT_LOAD(r->protocol);
  v->pattern = PT_LOAD(r->pattern);
  v->total_bytes = PT_LOAD(r->total_bytes);
  v->chunk_size = PT_LOAD(r->chunk_size);
  for (int k = 0; k < PT_CNT_NUM; k++) v->counters[k] = PT_LOAD(r->counters[k]);
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
  PT_STORE(r->op_id, v->op_id);
  PT_STORE(r->func_idx, v->func_idx);
  PT_STORE(r->protocol, v->protocol);
  PT_STORE(r->pattern, v->pattern);
  PT_STORE(r->total_bytes, v->total_bytes);
  PT_STORE(r->chunk_size, v->chunk_size);
  for (int k = 0; k < PT_CNT_NUM; k++) PT_STORE(r->counters[k], v->counters[k]);
  PT_STORE(r->t_create, v->t_create);
  PT_STORE(r->t_last, v->t_last);
  PT_STORE(r->t_posted, v->t_posted);
  PT_STORE(r->t_kernel, v->t_kernel);
  PT_STORE(r->t_progress, v->t_progress);
}

int pt_rec_read(const pt_rec* r, pt_rec_view* v, const _Atomic uint8_t* state,
                uint8_t* state_out, uint32_t* version) {
  for (int tries = 0; tries < 1000; tries++) {
    uint32_t s1 = pt_seq_read_begin(&r->seq);
    if (s1 & 1u) {
      if (tries > 100) sched_yield();
      continue;
    }
    if (state) *state_out = PT_LOAD(*state);
    pt_rec_to_view(r, v);
    if (pt_seq_read_end(&r->seq, s1)) {
      if (version) *version = s1;
      return 0;
    }
  }
  return -1;
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
  v.func_idx = -1;
  v.protocol = -1;
  v.pattern = -1;
  v.counters[PT_CNT_FIFO_SZ_OR_HEAD_CACHE] = -1;
  pt_rec_from_view(r, &v);
}
