/*
 * stream.c — the parser's open streams, and the hand-over of each finished
 * dump to the merge.
 *
 * A file may hold several dumps in turn and, for logs, several streams at
 * once (one per process and device). Each stream has at most one open
 * dump; a dump ends when its stream starts the next one, when its JSON
 * "end" line comes, or when the file ends. A finished dump is split by
 * (communicator, rank) — a legacy dump of a proxy shared by split
 * communicators holds several — and each part goes to the merge (merge.c),
 * which keeps it or frees it at once. The readers of each format (jsonl.c,
 * legacy.c) open and close streams here; parse.c hands them their lines.
 */
#include <stddef.h>
#include <string.h>

#include "analyze/inputs.h"

an_open* an_parser_find(an_parser* p, uint64_t key) {
  for (int i = 0; i < p->n_open; i++)
    if (p->open[i].key == key) return &p->open[i];
  return NULL;
}

an_open* an_parser_open(an_parser* p, uint64_t key, an_dump* d) {
  if (p->n_open == AN_MAX_OPEN) {
    /* More streams at once than any log holds: the oldest dump ends. */
    an_parser_close(p, &p->open[0]);
  }
  an_open* o = &p->open[p->n_open++];
  memset(o, 0, sizeof *o);
  o->key = key;
  o->d = d;
  return o;
}

void an_parser_commit(an_parser* p, an_open* o) {
  /* A text dump cut between two lines ends short of what its banner said. */
  if (o->d && o->announced && o->lines_left > 0 && !o->d->cut) {
    an_input_error(p->a, p->input, o->d->line, "dump %lld is %lld line%s short of what its banner announces: cut",
                   (long long)o->d->seq, (long long)o->lines_left, o->lines_left == 1 ? "" : "s");
    o->d->cut = 1;
  }
  o->announced = 0;
  if (o->d) an_dump_commit(p, o->d);
  o->d = NULL;
}

void an_parser_close(an_parser* p, an_open* o) {
  an_parser_commit(p, o);
  size_t i = (size_t)(o - p->open);
  memmove(&p->open[i], &p->open[i + 1], (size_t)(p->n_open - 1 - (int)i) * sizeof *o);
  p->n_open--;
  p->last = NULL;
}

/* Is a dump-like line (with a host log prefix or not) text among other
 * text, not a dump? An input whose first dump-like line has no host log
 * prefix and comes after a line of neither (prose: a document, an example,
 * a script's output) holds no dump: the plugin's files start with a dump,
 * the host's logger puts its prefix on every dump line, and a copy of a
 * dump is dump lines alone. The first such line is noted, and nothing of
 * them is read: no rank, no communicator. */
int an_parser_among_text(an_parser* p, int prefixed, uint32_t lineno) {
  if (prefixed || !p->after_text || p->accepted) {
    p->accepted = 1;
    return 0;
  }
  if (!p->refused++)
    an_input_error(p->a, p->input, lineno,
                   "dump-like lines without a host log prefix after other text (a document, an example, an "
                   "excerpt?): this and any later such line not read as a dump");
  return 1;
}

static an_dump* part_of(pt_analysis* a, const an_dump* d, uint64_t comm, int rank) {
  an_dump* x = an_dump_new(a, d->input, d->line, d->format);
  if (!x) return NULL;
  an_op* ops = NULL;
  *x = *d;
  x->ops = ops;
  x->n_ops = x->cap_ops = 0;
  /* the progress lines say one rank's calls: not a part's */
  x->has_progress = 0;
  x->n_tasks = 0;
  x->tasks = NULL;
  x->n_calls[0] = x->n_calls[1] = 0;
  x->kch = NULL;
  x->n_kch = x->cap_kch = 0;
  x->comm = comm;
  x->has_comm = 1;
  x->rank = rank;
  return x;
}

/* To the merge, or, in a reading thread's partial analysis, kept for it
 * (lines.c merges those in file order). */
static void hand_off(pt_analysis* a, int kind, an_dump* d) {
  if (a->defer) {
    an_handoff* h = an_grow(&a->mem, (void**)&a->handoffs, &a->n_handoffs, &a->cap_handoffs, sizeof *h);
    if (h) {
      h->d = d;
      h->kind = kind;
    } else {
      an_dump_free(a, d); /* the failure is noted: the analysis answers out of memory */
    }
    return;
  }
  if (kind == AN_HAND_MERGE) {
    an_merge(a, d);
    return;
  }
  if (kind == AN_HAND_EMPTY) an_merge_empty_rank(a, d);
  else an_unknown_rank(a, d);
  an_dump_free(a, d);
}

void an_dump_commit(an_parser* p, an_dump* d) {
  pt_analysis* a = p->a;
  a->dumps++;
  a->inputs[d->input].dumps++;
  if (d->rank < -1 || d->rank > AN_MAX_RANK) {
    an_input_error(a, d->input, d->line, "dump header with rank %d out of range: the rank is taken as unknown",
                   d->rank);
    d->rank = -1;
  }
  if (d->nranks < 0 || d->nranks > AN_MAX_RANK + 1) {
    an_input_error(a, d->input, d->line, "dump header with nRanks %d out of range: taken as unknown", d->nranks);
    d->nranks = 0;
  }
  if (d->rank < 0 && d->n_ops == 0) d->rank = a->inputs[d->input].rank_hint;
  if (d->n_ops == 0) {
    if (d->has_comm && d->rank >= 0) hand_off(a, AN_HAND_MERGE, d);
    else if (d->rank >= 0) hand_off(a, AN_HAND_EMPTY, d);
    /* the plugin did not know its rank (commHash 0: nor its communicator) */
    else if (d->has_comm) hand_off(a, AN_HAND_UNKNOWN, d);
    else an_dump_free(a, d);
    return;
  }
  uint64_t comm = d->ops[0].comm;
  int rank = d->ops[0].rank, mixed = 0;
  for (size_t i = 1; i < d->n_ops && !mixed; i++)
    mixed = d->ops[i].comm != comm || d->ops[i].rank != rank;
  if (!mixed) {
    d->comm = comm;
    d->has_comm = 1;
    d->rank = rank;
    hand_off(a, AN_HAND_MERGE, d);
    return;
  }
  /* Split: one part per (communicator, rank), in order of appearance. */
  char* done = an_alloc(&a->mem, d->n_ops);
  if (!done) {
    an_input_error(a, d->input, d->line, "out of memory: a dump is lost");
    an_dump_free(a, d);
    return;
  }
  for (size_t i = 0; i < d->n_ops; i++) {
    if (done[i]) continue;
    an_dump* x = part_of(a, d, d->ops[i].comm, d->ops[i].rank);
    if (!x) break;
    for (size_t j = i; j < d->n_ops; j++) {
      if (done[j] || d->ops[j].comm != x->comm || d->ops[j].rank != x->rank) continue;
      done[j] = 1;
      an_op* op = an_grow(&a->mem, (void**)&x->ops, &x->n_ops, &x->cap_ops, sizeof *op);
      if (op) *op = d->ops[j];
    }
    hand_off(a, AN_HAND_MERGE, x);
  }
  an_free(&a->mem, done);
  an_dump_free(a, d);
}
