/*
 * op.c — what one op record says by itself, before any stage reads it: a
 * blank record, the call it belongs to, whether it is point-to-point, and
 * how far it has moved.
 */
#include <string.h>

#include "analyze/internal.h"

void an_op_init(an_op* op) {
  memset(op, 0, sizeof *op);
  op->op_count = -1;
  op->op_id = -1;
  op->rank = op->peer = op->channel = -1;
  op->status = -1;
  op->last_counter = -1;
  op->n_steps = -1;
  op->func = op->proto = op->pattern = -1;
  op->cnt[AN_C_FIFO] = -1;
  op->coll_seq = -1;
}

const char* an_op_coll(const an_op* op) {
  if (op->coll[0]) return op->coll;
  return an_func_name(op->func);
}

/* Point-to-point (ncclSend/ncclRecv): the GPU sends from and receives into
 * the user's buffers, nothing it forwards. Unknown (legacy text) counts as
 * a ring. */
int an_op_p2p(const an_op* op) {
  const char* k = an_op_coll(op);
  return k && (!strcmp(k, "Send") || !strcmp(k, "Recv") || !strcmp(k, "SendRecv"));
}

/* Which call of its communicator the op belongs to, the same on every
 * rank: a send's or receive's per-peer sequence where the record gives it
 * (docs/dump-json.md, "Pairing sends with receives"), as NVIDIA NCCL's
 * derived opCount writes it (sequence x 16 + 5); else its opCount. RCCL's
 * own opCount of a p2p op is its rank's count of p2p calls on the channel
 * (NCCL src/enqueue.cc, uploadProxyOps: comm->sharedRes->p2pOpCount):
 * the peer's differs wherever the two made other p2p calls (a pipeline's
 * stages do). */
int64_t an_op_call(const an_op* op) {
  return op->coll_seq >= 0 && an_op_p2p(op) ? op->coll_seq * 16 + 5 : op->op_count;
}

int64_t an_dump_p2p_latest(const an_dump* d, int peer, int is_send) {
  int64_t last = -1;
  for (size_t i = 0; i < d->n_ops; i++) {
    const an_op* y = &d->ops[i];
    if (y->peer == peer && y->is_send == is_send && y->coll_seq > last && an_op_p2p(y)) last = y->coll_seq;
  }
  return last;
}

int64_t an_op_progress(const an_op* op) {
  return op->is_send ? op->cnt[AN_C_TRANSMITTED] : op->cnt[AN_C_RECEIVED];
}
