/*
 * merge.c — dumps by (communicator, rank): the latest, the one before it,
 * and duplicates.
 *
 * Of all the dumps of one communicator on one rank only the latest tells
 * where the rank stands; the one before it tells whether its active ops
 * still moved. So each (communicator, rank) keeps the latest dump, the
 * active records of the one before, and frees the rest as soon as they are
 * superseded: memory follows the records of one dump per rank, however many
 * dumps the inputs hold.
 *
 * Which is later: a process's finalize dump of the rank (its last word)
 * over a dump of an earlier round of that process; else the dump times
 * when both have one (JSON, the plugin's text header); else the dump
 * sequence of the same process; else the latest record time (legacy lines
 * carry ms times only); else the order read. A dump that reaches the analysis twice — a rank's JSON file and its
 * text file, or its file and the job's log — has the same records with the
 * same counters and times (compared at the legacy ms precision, so a JSON
 * dump and its text twin match): it counts once, and the JSON copy, with
 * ns times and op states, is the one kept.
 *
 * With the option "all-dumps" (for `analyze --records --all-dumps`) a copy
 * of every dump is kept besides, under the same rules for copies; memory
 * then follows the inputs' records.
 */
#include <string.h>

#include "analyze/evidence.h"

static uint64_t slot_key(uint64_t comm, int rank) { return an_mix(an_mix(0x510, comm), (uint64_t)(int64_t)rank); }

static uint64_t op_hash(const an_op* op) {
  uint64_t h = an_mix(0x0b, op->comm);
  h = an_mix(h, (uint64_t)op->op_count);
  h = an_mix(h, (uint64_t)op->op_id);
  h = an_mix(h, ((uint64_t)(uint32_t)op->rank << 32) | (uint32_t)op->peer);
  h = an_mix(h, ((uint64_t)(uint32_t)op->channel << 1) | (uint64_t)op->is_send);
  h = an_mix(h, (uint64_t)op->n_steps);
  static const int kinds[] = {AN_C_POSTED, AN_C_KERNEL_COPY_READY, AN_C_RECEIVED, AN_C_TRANSMITTED,
                              AN_C_FLUSHED, AN_C_DONE, AN_C_RECV_TAIL, AN_C_TAIL_OR_HEAD, AN_C_FIFO};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) h = an_mix(h, (uint64_t)op->cnt[kinds[k]]);
  h = an_mix(h, (uint64_t)(op->create_ns / 1000000));
  h = an_mix(h, (uint64_t)(op->last_ns / 1000000));
  return h;
}

/* Independent of record order: a sum and a xor of the records' hashes. */
uint64_t an_dump_fingerprint(const an_dump* d) {
  uint64_t sum = 0, x = 0;
  for (size_t i = 0; i < d->n_ops; i++) {
    uint64_t h = op_hash(&d->ops[i]);
    sum += h;
    x ^= an_mix(h, 0x77);
  }
  return an_mix(an_mix(sum, x), (uint64_t)d->n_ops);
}

/* 1 when `x` was taken after `y`. Two different readings of one dump
 * (same process, sequence and time: a file and its copy, one of them cut
 * or damaged) are not two moments: the whole one counts, then the JSON one,
 * then the one with more records. */
static int later(const an_dump* x, const an_dump* y) {
  if (x->seq >= 0 && x->seq == y->seq && x->pid == y->pid && x->time_ns == y->time_ns) {
    const int dx = an_dump_damaged(x), dy = an_dump_damaged(y);
    if (dx != dy) return dy;
    if (x->format != y->format) return x->format == AN_FMT_JSONL;
    if (x->n_ops != y->n_ops) return x->n_ops > y->n_ops;
  }
  /* A process's finalize dump is the rank's last word: a dump of a round
   * that began before the finalize (a lower round number: rounds count up
   * per process) and was written after it (earlier builds of the plugin
   * wrote such dumps) does not supersede it. A later round is a later
   * communicator under the same name, and its dumps are later. */
  const int xf = x->trigger == AN_TRIG_FINALIZE, yf = y->trigger == AN_TRIG_FINALIZE;
  if (xf != yf && x->pid == y->pid && x->pid > 0 && x->round >= 0 && y->round >= 0 && !strcmp(x->host, y->host)) {
    const an_dump* f = xf ? x : y;
    const an_dump* o = xf ? y : x;
    const int final = f->round > o->round || f->time_ns > o->time_ns;
    return xf ? final : !final;
  }
  if (x->time_ns && y->time_ns && x->time_ns != y->time_ns) return x->time_ns > y->time_ns;
  if (x->seq >= 0 && y->seq >= 0 && x->pid == y->pid && x->seq != y->seq) return x->seq > y->seq;
  if (x->max_last_ns != y->max_last_ns && x->max_last_ns && y->max_last_ns) return x->max_last_ns > y->max_last_ns;
  return x->order > y->order;
}

/* Two copies of one dump: the same records, and — where both say — the same
 * dump sequence of the same process, or the same dump time. (A hung job's
 * successive dumps have the same records too; they are not copies.) */
static int same_dump(const an_dump* x, const an_dump* y) {
  if (x->fingerprint != y->fingerprint) return 0;
  if (x->seq >= 0 && y->seq >= 0) return x->seq == y->seq && x->pid == y->pid;
  if (x->time_ns && y->time_ns) return x->time_ns == y->time_ns;
  return 1;
}

/* The richer of two copies of one dump: JSON over text. */
static int richer(const an_dump* x, const an_dump* y) { return x->format == AN_FMT_JSONL && y->format != AN_FMT_JSONL; }

static an_slot* slot_for(pt_analysis* a, uint64_t comm, int rank) {
  uint64_t key = slot_key(comm, rank);
  for (int32_t i = an_map_first(&a->slot_index, key); i >= 0; i = an_map_next(&a->slot_index, i))
    if (a->slots[i].comm == comm && a->slots[i].rank == rank) return &a->slots[i];
  an_slot* s = an_grow(&a->mem, (void**)&a->slots, &a->n_slots, &a->cap_slots, sizeof *s);
  if (!s) return NULL;
  if (an_map_add(&a->mem, &a->slot_index, key, (int32_t)(a->n_slots - 1)) != 0) {
    a->n_slots--;
    return NULL;
  }
  s->comm = comm;
  s->rank = rank;
  return s;
}

const an_slot* an_slot_find(const pt_analysis* a, uint64_t comm, int rank) {
  uint64_t key = slot_key(comm, rank);
  for (int32_t i = an_map_first(&a->slot_index, key); i >= 0; i = an_map_next(&a->slot_index, i))
    if (a->slots[i].comm == comm && a->slots[i].rank == rank) return &a->slots[i];
  return NULL;
}

/* A dump that is no longer the latest only tells which active ops moved:
 * its finished records go, and so do its calls and kernel channels (the
 * calls the rank made are read from its latest dump: desync.c), which at
 * 100 000 ranks held 115 MB. */
static void keep_active(pt_analysis* a, an_dump* d) {
  an_free(&a->mem, d->tasks);
  d->tasks = NULL;
  d->n_tasks = 0;
  an_free(&a->mem, d->kch);
  d->kch = NULL;
  d->n_kch = d->cap_kch = 0;
  size_t n = 0;
  d->announced_finished = -1; /* no longer held: not missing */
  for (size_t i = 0; i < d->n_ops; i++)
    if (d->ops[i].state == AN_ST_ACTIVE) d->ops[n++] = d->ops[i];
  d->n_ops = n;
  if (n < d->cap_ops) {
    an_op* small = n ? an_realloc(&a->mem, d->ops, n * sizeof *small) : NULL;
    if (small || !n) {
      if (!n) an_free(&a->mem, d->ops);
      d->ops = small;
      d->cap_ops = n;
    }
  }
}

static void duplicate(pt_analysis* a, an_dump** kept, an_dump* d) {
  a->duplicates++;
  a->inputs[d->input].duplicates++;
  if (richer(d, *kept)) {
    an_dump* old = *kept;
    d->order = old->order > d->order ? old->order : d->order;
    *kept = d;
    an_dump_free(a, old);
  } else {
    an_dump_free(a, d);
  }
}

static an_dump* copy_of(pt_analysis* a, const an_dump* d) {
  an_dump* c = an_alloc(&a->mem, sizeof *c);
  if (!c) return NULL;
  *c = *d;
  c->ops = d->n_ops ? an_alloc(&a->mem, d->n_ops * sizeof *c->ops) : NULL;
  if (d->n_ops && !c->ops) {
    an_free(&a->mem, c);
    return NULL;
  }
  if (d->n_ops) memcpy(c->ops, d->ops, d->n_ops * sizeof *c->ops);
  c->cap_ops = d->n_ops;
  c->kch = d->n_kch ? an_alloc(&a->mem, d->n_kch * sizeof *c->kch) : NULL; /* its kernel channels, its own too */
  if (d->n_kch && !c->kch) {
    an_free(&a->mem, c->ops);
    an_free(&a->mem, c);
    return NULL;
  }
  if (d->n_kch) memcpy(c->kch, d->kch, d->n_kch * sizeof *c->kch);
  c->cap_kch = d->n_kch;
  c->tasks = d->n_tasks ? an_alloc(&a->mem, (size_t)d->n_tasks * sizeof *c->tasks) : NULL;
  if (d->n_tasks && !c->tasks) {
    an_free(&a->mem, c->kch);
    an_free(&a->mem, c->ops);
    an_free(&a->mem, c);
    return NULL;
  }
  if (d->n_tasks) memcpy(c->tasks, d->tasks, (size_t)d->n_tasks * sizeof *c->tasks);
  return c;
}

/* "all-dumps": keeps a copy of `d`, or of the richer of it and a copy of
 * the same dump kept before (which keeps its place). */
static void keep_every(pt_analysis* a, const an_dump* d) {
  uint64_t key = an_mix(slot_key(d->comm, d->rank), d->fingerprint);
  for (int32_t i = an_map_first(&a->every_index, key); i >= 0; i = an_map_next(&a->every_index, i)) {
    an_dump* x = a->every[i];
    if (x->comm != d->comm || x->rank != d->rank || !same_dump(x, d)) continue;
    if (richer(d, x)) {
      an_dump* c = copy_of(a, d);
      if (!c) break;
      an_dump_free(a, x);
      a->every[i] = c;
    }
    return;
  }
  an_dump* c = copy_of(a, d);
  an_dump** at = c ? an_grow(&a->mem, (void**)&a->every, &a->n_every, &a->cap_every, sizeof *at) : NULL;
  if (at && an_map_add(&a->mem, &a->every_index, key, (int32_t)(a->n_every - 1)) == 0) {
    *at = c;
    return;
  }
  if (at) a->n_every--;
  an_dump_free(a, c);
  an_input_error(a, d->input, d->line, "out of memory: this dump's records are not among the records kept");
}

static int same_process(const an_dump* x, const an_dump* y) {
  return x->pid > 0 && x->pid == y->pid && !strcmp(x->host, y->host);
}

static void keep_cut(pt_analysis* a, an_slot* s, an_dump* d) {
  if (s->cut && !later(d, s->cut)) {
    an_dump_free(a, d);
    return;
  }
  an_dump_free(a, s->cut);
  keep_active(a, d); /* kept to be named, not read */
  s->cut = d;
}

/* A damaged dump (cut, short: its file was cut or lost lines) written
 * after a whole one of the same process proves that the file was damaged,
 * nothing about the rank: what it lacks is not what the rank lacked (no
 * progress lines read is not "no collective call", records cut off are not
 * ops that never started). The whole dump stays the rank's word, and the
 * damaged one is kept aside to be reported (complete.c). 1 if d was taken
 * here. */
static int set_aside(pt_analysis* a, an_slot* s, an_dump* d) {
  an_dump* l = s->latest;
  if (!l || !same_process(d, l)) return 0;
  const int dd = an_dump_damaged(d), dl = an_dump_damaged(l);
  if (dd && !dl && later(d, l)) {
    keep_cut(a, s, d);
    return 1;
  }
  /* the whole dump read after the damaged one: it takes the latest's
   * place, unless a dump between them is kept (previous: its finished ops
   * are no longer held) */
  if (!dd && dl && later(l, d) && (!s->previous || later(d, s->previous))) {
    s->latest = d;
    keep_cut(a, s, l);
    return 1;
  }
  return 0;
}

void an_merge(pt_analysis* a, an_dump* d) {
  if (d->n_ops && d->n_ops < d->cap_ops) { /* no growth slack in what is kept */
    an_op* fit = an_realloc(&a->mem, d->ops, d->n_ops * sizeof *fit);
    if (fit) {
      d->ops = fit;
      d->cap_ops = d->n_ops;
    }
  }
  if (d->tasks && d->n_tasks < AN_TASKS_KEPT) { /* the calls kept, no more room */
    an_task* fit = d->n_tasks ? an_realloc(&a->mem, d->tasks, (size_t)d->n_tasks * sizeof *fit) : NULL;
    if (fit || !d->n_tasks) {
      if (!d->n_tasks) an_free(&a->mem, d->tasks);
      d->tasks = fit;
    }
  }
  for (size_t i = 0; i < d->n_ops; i++)
    if (d->ops[i].last_ns > d->max_last_ns) d->max_last_ns = d->ops[i].last_ns;
  d->fingerprint = an_dump_fingerprint(d);
  an_slot* s = slot_for(a, d->comm, d->rank);
  if (!s) {
    an_input_error(a, d->input, d->line, "out of memory: a dump is lost");
    an_dump_free(a, d);
    return;
  }
  s->n_dumps++;
  an_note_round(a, d);
  if (a->all_dumps) keep_every(a, d);
  if (s->latest && same_dump(s->latest, d)) {
    duplicate(a, &s->latest, d);
    return;
  }
  if (s->previous && same_dump(s->previous, d)) {
    duplicate(a, &s->previous, d);
    keep_active(a, s->previous);
    return;
  }
  if (set_aside(a, s, d)) return;
  if (!s->latest || later(d, s->latest)) {
    an_dump_free(a, s->previous);
    s->previous = s->latest;
    if (s->previous) keep_active(a, s->previous);
    s->latest = d;
  } else if (!s->previous || later(d, s->previous)) {
    an_dump_free(a, s->previous);
    s->previous = d;
    keep_active(a, d);
  } else {
    an_dump_free(a, d);
  }
  if (s->cut && s->latest && later(s->latest, s->cut)) { /* a whole dump after the damaged one */
    an_dump_free(a, s->cut);
    s->cut = NULL;
  }
}

uint64_t an_rank_proc_key(int rank, const char* host, int64_t pid) {
  return an_mix(an_mix(an_mix(0xe3, (uint64_t)(int64_t)rank), (uint64_t)pid), an_mix_str(host));
}

/* A rank that dumped no record, by rank and process (a map: a job of
 * 100 000 ranks may log that many empty dumps). */
void an_merge_empty_rank(pt_analysis* a, const an_dump* d) {
  an_empty* e = NULL;
  const uint64_t key = an_rank_proc_key(d->rank, d->host, d->pid);
  if (!a->empty_index.cap && an_map_init(&a->mem, &a->empty_index, 64) != 0) return;
  for (int32_t i = an_map_first(&a->empty_index, key); i >= 0 && !e; i = an_map_next(&a->empty_index, i))
    if (a->empty_ranks[i].rank == d->rank && a->empty_ranks[i].pid == d->pid && !strcmp(a->empty_ranks[i].host, d->host))
      e = &a->empty_ranks[i];
  if (!e) {
    e = an_grow(&a->mem, (void**)&a->empty_ranks, &a->n_empty, &a->cap_empty, sizeof *e);
    if (!e) return;
    memset(e, 0, sizeof *e);
    if (an_map_add(&a->mem, &a->empty_index, key, (int32_t)(a->n_empty - 1)) != 0) {
      a->n_empty--;
      return;
    }
  }
  e->rank = d->rank;
  an_copy(e->host, sizeof e->host, d->host);
  e->pid = d->pid;
  if (d->has_drops && d->drops[8] > e->foreign) e->foreign = d->drops[8];
}

void an_merge_free(pt_analysis* a) {
  for (size_t i = 0; i < a->n_slots; i++) {
    an_dump_free(a, a->slots[i].latest);
    an_dump_free(a, a->slots[i].previous);
    an_dump_free(a, a->slots[i].cut);
  }
  an_free(&a->mem, a->slots);
  a->slots = NULL;
  a->n_slots = a->cap_slots = 0;
  an_map_free(&a->mem, &a->slot_index);
  for (size_t i = 0; i < a->n_every; i++) an_dump_free(a, a->every[i]);
  an_free(&a->mem, a->every);
  a->every = NULL;
  a->n_every = a->cap_every = 0;
  an_map_free(&a->mem, &a->every_index);
  an_free(&a->mem, a->empty_ranks);
  a->empty_ranks = NULL;
  a->n_empty = a->cap_empty = 0;
  an_map_free(&a->mem, &a->empty_index);
}

uint64_t an_rotated_dumps(const pt_analysis* a) {
  uint64_t n = 0;
  for (size_t i = 0; i < a->n_slots; i++)
    if (a->slots[i].latest && a->slots[i].latest->rotated > 0) n += (uint64_t)a->slots[i].latest->rotated;
  return n;
}
