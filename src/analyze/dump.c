/*
 * dump.c — a dump as the readers build it: its records, what its header
 * announces of them, and whether it is whole. The readers fill dumps
 * (jsonl.c, legacy.c, summary_read.c); the merge keeps them (merge.c).
 */
#include <stddef.h>
#include <string.h>

#include "analyze/evidence.h"

int64_t an_dump_short(const an_dump* d) {
  int64_t active = 0, finished = 0, missing = 0;
  for (size_t i = 0; i < d->n_ops; i++) {
    if (d->ops[i].state == AN_ST_FINISHED) finished++;
    else active++;
  }
  if (d->announced_active > active) missing += d->announced_active - active;
  if (d->announced_finished > finished) missing += d->announced_finished - finished;
  return missing;
}

int an_dump_damaged(const an_dump* d) { return d->cut || d->lost || an_dump_short(d) > 0; }

an_dump* an_dump_new(pt_analysis* a, uint32_t input, uint32_t line, int format) {
  an_dump* d = an_alloc(&a->mem, sizeof *d);
  if (!d) return NULL;
  d->rank = -1;
  d->dev = -1;
  d->seq = -1;
  d->stall_ms = -1;
  d->round = -1;
  d->announced_active = d->announced_finished = -1;
  d->format = format;
  d->input = input;
  d->line = line;
  d->order = ++a->order;
  return d;
}

void an_dump_free(pt_analysis* a, an_dump* d) {
  if (!d) return;
  an_free(&a->mem, d->ops);
  an_free(&a->mem, d->kch);
  an_free(&a->mem, d->tasks);
  an_free(&a->mem, d);
}

an_op* an_dump_add_op(pt_analysis* a, an_dump* d) {
  an_op* op = an_grow(&a->mem, (void**)&d->ops, &d->n_ops, &d->cap_ops, sizeof *op);
  if (!op) {
    an_input_error(a, d->input, d->line, "out of memory: a record of this dump is lost");
    return NULL;
  }
  a->records++;
  a->inputs[d->input].records++;
  return op;
}
