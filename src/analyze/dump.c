/*
 * dump.c — dumps as they are read: the parser's open streams, a dump's
 * records, and the hand-over to the merge once a dump is complete.
 *
 * A file may hold several dumps in turn and, for logs, several streams at
 * once (one per process and device). Each stream has at most one open
 * dump; a dump ends when its stream starts the next one, when its JSON
 * "end" line comes, or when the file ends. A finished dump is split by
 * (communicator, rank) — a legacy dump of a proxy shared by split
 * communicators holds several — and each part goes to the merge (merge.c),
 * which keeps it or frees it at once.
 */
#include <stddef.h>
#include <string.h>

#include "analyze/internal.h"

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

/* ---- the parser's streams -------------------------------------------------- */

/* A parser is 38 KB, most of it the scratch of one JSON line: one is kept
 * for the next input (a->spare_parser), so that a job of 100 000 files
 * does not clear 3.8 GB of it. Only what comes before the scratch is reset. */
an_parser* an_parser_new(pt_analysis* a, uint32_t input) {
  an_parser* p = a->spare_parser;
  if (p) {
    a->spare_parser = NULL;
    memset(p, 0, offsetof(an_parser, json));
  } else if (!(p = an_alloc(&a->mem, sizeof *p))) {
    return NULL;
  }
  p->a = a;
  p->input = input;
  return p;
}

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

void an_parser_line(an_parser* p, char* line, size_t len, uint32_t lineno) {
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
  if (i == len) return;
  if (line[i] == '{') {
    if (an_parser_among_text(p, 0, lineno)) return;
    p->saw_json = 1;
    an_jsonl_line(p, line + i, len - i, lineno);
  } else {
    an_legacy_line(p, line, len, lineno);
  }
}

void an_parser_finish(an_parser* p) {
  pt_analysis* a = p->a;
  for (int i = 0; i < p->n_open; i++) {
    an_open* o = &p->open[i];
    if (o->d && o->d->format == AN_FMT_JSONL) {
      an_input_error(a, p->input, o->d->line, "dump %lld has no end line: cut (crash or full disk?)",
                     (long long)o->d->seq);
      o->d->cut = 1;
    }
    an_parser_commit(p, o);
  }
  an_input* in = &a->inputs[p->input];
  if (p->summary) in->format = "summary";
  else if (in->dumps) in->format = p->saw_json ? "jsonl" : "text";
  if (a->spare_parser) an_free(&a->mem, p);
  else a->spare_parser = p;
}

/* ---- commit ------------------------------------------------------------------ */

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
