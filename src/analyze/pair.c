/*
 * pair.c — every send of the latest dumps paired with its receive.
 *
 * Pairing rule (docs/dump-json.md): the send on rank r to peer p on channel
 * c and the receive on p from r on c belong to the same call of the same
 * communicator (an_op_call: the opCount, or a send's or receive's per-peer
 * sequence). Several ops of one (call, channel, sender, receiver) pair in
 * opId order. Records without an opCount (-1: stock NCCL through a plugin that
 * does not derive one) pair only among active ops, by (channel, sender,
 * receiver): exact while one operation per channel and peer is in flight,
 * which is what a hung job leaves.
 *
 * The per-communicator view it pairs in is comms.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/judge.h"

/* ---- pairing ------------------------------------------------------------------ */

static uint64_t pair_key(uint64_t comm, int64_t opc, int ch, int s, int d) {
  uint64_t h = an_mix(an_mix(0x9a1, comm), (uint64_t)opc);
  return an_mix(an_mix(h, (uint64_t)(uint32_t)ch), ((uint64_t)(uint32_t)s << 32) | (uint32_t)d);
}

static int sender(const an_op* op) { return op->is_send ? op->rank : op->peer; }
static int receiver(const an_op* op) { return op->is_send ? op->peer : op->rank; }

static int pairable(const an_item* x) { return an_op_call(x->op) >= 0 || x->op->state == AN_ST_ACTIVE; }

static int by_op_id(const void* x, const void* y, void* arg) {
  const an_item* items = arg;
  const an_op* a = items[*(const int32_t*)x].op;
  const an_op* b = items[*(const int32_t*)y].op;
  if (a->op_id != b->op_id) return a->op_id < b->op_id ? -1 : 1;
  return (*(const int32_t*)x > *(const int32_t*)y) - (*(const int32_t*)x < *(const int32_t*)y);
}

int an_pair(pt_analysis* a) {
  an_map idx;
  if (an_map_init(&a->mem, &idx, a->n_items + 1) != 0) return PT_AN_ENOMEM;
  char* seen = an_alloc(&a->mem, a->n_items + 1);
  int32_t* sends = an_alloc(&a->mem, (a->n_items + 1) * sizeof *sends);
  int32_t* recvs = an_alloc(&a->mem, (a->n_items + 1) * sizeof *recvs);
  int rc = seen && sends && recvs ? 0 : PT_AN_ENOMEM;
  for (size_t i = 0; i < a->n_items && rc == 0; i++) {
    const an_op* op = a->items[i].op;
    if (!pairable(&a->items[i])) continue;
    if (an_map_add(&a->mem, &idx, pair_key(op->comm, an_op_call(op), op->channel, sender(op), receiver(op)), (int32_t)i))
      rc = PT_AN_ENOMEM;
  }
  for (size_t i = 0; i < a->n_items && rc == 0; i++) {
    if (seen[i] || !pairable(&a->items[i])) continue;
    const an_op* op = a->items[i].op;
    int s = sender(op), d = receiver(op);
    size_t ns = 0, nr = 0;
    const int64_t call = an_op_call(op);
    for (int32_t j = an_map_first(&idx, pair_key(op->comm, call, op->channel, s, d)); j >= 0;
         j = an_map_next(&idx, j)) {
      const an_op* q = a->items[j].op;
      if (q->comm != op->comm || an_op_call(q) != call || q->channel != op->channel || sender(q) != s ||
          receiver(q) != d || !pairable(&a->items[j]))
        continue;
      seen[j] = 1;
      if (q->is_send) sends[ns++] = j;
      else recvs[nr++] = j;
    }
    qsort_r(sends, ns, sizeof *sends, by_op_id, a->items);
    qsort_r(recvs, nr, sizeof *recvs, by_op_id, a->items);
    for (size_t k = 0; k < ns && k < nr; k++) {
      a->items[sends[k]].partner = recvs[k];
      a->items[recvs[k]].partner = sends[k];
    }
  }
  for (size_t i = 0; i < a->n_items; i++)
    if (a->items[i].stuck && a->items[i].partner < 0) a->n_unmatched++;
  an_free(&a->mem, seen);
  an_free(&a->mem, sends);
  an_free(&a->mem, recvs);
  an_map_free(&a->mem, &idx);
  return rc;
}
