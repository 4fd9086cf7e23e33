/*
 * steps.c — an op's steps in one unit, network transfers, whichever host
 * wrote the dump (docs/analyze.md, "Steps").
 *
 * Hosts send different units for the same operation (docs/dump-json.md,
 * "Step units"): NCCL 2.23 and RCCL's ProxyDiag records count raw steps,
 * NCCL 2.24+ network transfers of sliceSteps raw steps. Dumps of this
 * version name the unit; older ones do not, and the unit is then what the
 * record and its dump show of the host: RCCL's trace fields (func set)
 * mean rawProxyNsteps, profiler API v1 means NCCL 2.23, v2+ transfers.
 *
 * sliceSteps is in no record. It is NCCL's rule for the call (NCCL
 * src/include/collectives.h, v2.28.9-1 :17-26; the chunking of
 * src/enqueue.cc): NCCL_STEPS/4 = 2 for a ring all-reduce, all-gather or
 * reduce-scatter under SIMPLE, 1 under LL and LL128; the call comes from
 * RCCL's record (func, proto, pattern) or the dump's Coll event (algo,
 * proto). Elsewhere it is not known and the raw count is left as it is.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analyze/evidence.h"
#include "format/format.h"

int an_op_step_unit(const an_dump* d, const an_op* op) {
  if (op->step_unit != AN_UNIT_UNKNOWN) return op->step_unit;
  if (d && d->step_unit != AN_UNIT_UNKNOWN) return d->step_unit;
  if (op->func >= 0) return AN_UNIT_RAW; /* RCCL's trace fields: rawProxyNsteps */
  if (d && d->api == 1) return AN_UNIT_RAW;
  if (d && d->api >= 2) return AN_UNIT_TRANSFERS;
  return AN_UNIT_UNKNOWN;
}

/* The dump's Coll event of op's call, or NULL. */
static const an_task* call_of(const an_dump* d, const an_op* op, const char* coll) {
  if (!d || op->coll_seq < 0) return NULL;
  for (int i = 0; i < d->n_tasks; i++) {
    const an_task* t = &d->tasks[i];
    if (!t->is_p2p && t->seq == op->coll_seq && !strcmp(t->func, coll)) return t;
  }
  return NULL;
}

int an_op_slice_steps(const an_dump* d, const an_op* op) {
  const char* coll = an_op_coll(op);
  if (!coll) return 0;
  const int sliced = !strcmp(coll, "AllReduce") || !strcmp(coll, "AllGather") || !strcmp(coll, "ReduceScatter");
  if (op->proto >= 0) { /* RCCL's record: its protocol and pattern (ncclPattern_t Ring 0, RingTwice 1) */
    if (op->proto != AN_PROTO_SIMPLE) return 1;
    return sliced && (op->pattern == 0 || op->pattern == AN_PATTERN_RING_TWICE) ? 2 : 0;
  }
  const an_task* t = call_of(d, op, coll);
  if (!t || !t->proto[0]) return 0;
  if (strcmp(t->proto, "SIMPLE") != 0) return 1;
  return sliced && !strcmp(t->algo, "RING") ? 2 : 0;
}

int64_t an_op_transfers(const an_dump* d, const an_op* op, int k) {
  return an_value_transfers(d, op, k == AN_C_COUNT ? op->n_steps : op->cnt[k]);
}

int64_t an_value_transfers(const an_dump* d, const an_op* op, int64_t v) {
  const int unit = an_op_step_unit(d, op);
  if (unit == AN_UNIT_TRANSFERS) return v;
  if (unit != AN_UNIT_RAW) return -1;
  const int s = an_op_slice_steps(d, op);
  if (s <= 0) return -1;
  return v > 0 ? (v + s - 1) / s : v; /* DIVUP, as the host converts nSteps */
}

void an_put_steps(FILE* f, const an_dump* d, const an_op* op) {
  const char* unit = an_unit_name(an_op_step_unit(d, op));
  fputs(",\"stepUnit\":", f);
  if (unit) an_put_str(f, unit);
  else fputs("null", f);
  const int slice = an_op_slice_steps(d, op);
  if (slice > 0) fprintf(f, ",\"sliceSteps\":%d", slice);
  else fputs(",\"sliceSteps\":null", f);
  fputs(",\"transfers\":", f);
  if (an_op_transfers(d, op, AN_C_COUNT) < 0) {
    fputs("null", f);
    return;
  }
  static const int step_counters[] = {AN_C_POSTED, AN_C_KERNEL_COPY_READY, AN_C_RECEIVED, AN_C_TRANSMITTED,
                                      AN_C_FLUSHED, AN_C_DONE};
  fprintf(f, "{\"nSteps\":%" PRId64, an_op_transfers(d, op, AN_C_COUNT));
  for (size_t i = 0; i < sizeof step_counters / sizeof step_counters[0]; i++)
    fprintf(f, ",\"%s\":%" PRId64, an_counter_json[step_counters[i]], an_op_transfers(d, op, step_counters[i]));
  fputc('}', f);
}
