/*
 * unknown.c — dumps whose rank the plugin did not know, and the processes
 * that dumped under rank numbers: the evidence complete.c and the reports
 * read to say which ranks such dumps stand for.
 *
 * Dumps whose rank the plugin did not know (`rank` -1; NCCL 2.23–2.26
 * tell a rank its number with its first network op, so a rank with none
 * never learns it) hold no record. They are kept per communicator as
 * rank-unknown dumps: each stands for a rank the communicator has, not
 * one that is missing. How many ranks they stand for is counted from what
 * they hold: the stall watchdog, the signal and the periodic timer dump
 * every communicator of a process in one round, so per process (host,
 * pid) the rank-unknown dumps of its latest such round are ranks that had
 * not learned their number then — none, when the process dumped the
 * communicator under numbers in a later such round (the early dumps of
 * ranks that learned it later). When they stand for exactly as many
 * ranks as have no dump, those ranks are "rank unknown", not missing;
 * otherwise every rank without a dump stays missing: which of them the
 * dumps belong to cannot be told (fewer: some ranks are missing; more: the
 * communicator is larger than its records show — a size no dump states is
 * the highest rank or peer they name — or dumps are missing).
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/evidence.h"

size_t an_no_comm_processes(const pt_analysis* a, void (*fn)(const char* host, int pid, size_t dumps, void* arg),
                            void* arg) {
  size_t n = 0;
  for (size_t i = 0; i < a->n_unknown && a->n_no_comm; i++) {
    const an_unknown* u = &a->unknown[i];
    if (u->comm) continue;
    int seen = 0; /* the process listed already (few: each is a rank that never started an op) */
    for (size_t j = 0; j < i && !seen; j++)
      seen = !a->unknown[j].comm && a->unknown[j].pid == u->pid && !strcmp(a->unknown[j].host, u->host);
    if (seen) continue;
    size_t dumps = 0;
    for (size_t j = i; j < a->n_unknown; j++)
      dumps += !a->unknown[j].comm && a->unknown[j].pid == u->pid && !strcmp(a->unknown[j].host, u->host);
    if (fn) fn(u->host, u->pid, dumps, arg);
    n++;
  }
  return n;
}

static uint64_t unknown_key(uint64_t comm, const char* host, int pid, int64_t seq) {
  uint64_t h = an_mix(an_mix(0x7e1, comm), (uint64_t)(uint32_t)pid);
  for (const char* c = host; *c; c++) h = an_mix(h, (unsigned char)*c);
  return an_mix(h, (uint64_t)seq);
}

void an_unknown_rank(pt_analysis* a, const an_dump* d) {
  if (!a->unknown_index.cap && an_map_init(&a->mem, &a->unknown_index, 64) != 0) return;
  const uint64_t key = unknown_key(d->comm, d->host, d->pid, d->seq);
  for (int32_t i = an_map_first(&a->unknown_index, key); i >= 0; i = an_map_next(&a->unknown_index, i)) {
    const an_unknown* u = &a->unknown[i];
    /* the same dump twice (its JSON and its text): once; a dump without a
     * sequence is its own */
    if (d->seq >= 0 && u->comm == d->comm && u->pid == d->pid && u->seq == d->seq && !strcmp(u->host, d->host)) {
      if (d->round >= 0) a->unknown[i].round = d->round;
      if (d->trigger != AN_TRIG_UNKNOWN) a->unknown[i].trigger = d->trigger;
      return;
    }
  }
  an_unknown* u = an_grow(&a->mem, (void**)&a->unknown, &a->n_unknown, &a->cap_unknown, sizeof *u);
  if (!u) return;
  if (an_map_add(&a->mem, &a->unknown_index, key, (int32_t)(a->n_unknown - 1)) != 0) {
    a->n_unknown--;
    return;
  }
  u->comm = d->comm;
  a->n_no_comm += !d->comm;
  an_copy(u->host, sizeof u->host, d->host);
  u->pid = d->pid;
  u->seq = d->seq;
  u->round = d->round;
  u->trigger = d->trigger;
}

/* The stall watchdog, the dump signal and the periodic timer dump every
 * communicator of a process in one round; finalize, hook and api dumps
 * are of one communicator. */
static int every_comm(int trigger) {
  return trigger == AN_TRIG_STALL || trigger == AN_TRIG_SIGNAL || trigger == AN_TRIG_PERIODIC;
}

static uint64_t process_key(uint64_t comm, const char* host, int pid) { return unknown_key(comm, host, pid, -7); }

/* The latest every-communicator round in which a process dumped `comm`
 * under a rank number (-1: none such, but some dump under a number). */
void an_note_round(pt_analysis* a, const an_dump* d) {
  if (d->rank < 0) return;
  if (!a->process_index.cap && an_map_init(&a->mem, &a->process_index, 64) != 0) return;
  const uint64_t key = process_key(d->comm, d->host, d->pid);
  const int64_t round = every_comm(d->trigger) ? d->round : -1;
  for (int32_t i = an_map_first(&a->process_index, key); i >= 0; i = an_map_next(&a->process_index, i)) {
    an_process* q = &a->processes[i];
    if (q->comm == d->comm && q->pid == d->pid && !strcmp(q->host, d->host)) {
      if (round > q->round) q->round = round;
      return;
    }
  }
  an_process* q = an_grow(&a->mem, (void**)&a->processes, &a->n_processes, &a->cap_processes, sizeof *q);
  if (!q) return;
  if (an_map_add(&a->mem, &a->process_index, key, (int32_t)(a->n_processes - 1)) != 0) {
    a->n_processes--;
    return;
  }
  q->comm = d->comm;
  an_copy(q->host, sizeof q->host, d->host);
  q->pid = d->pid;
  q->round = round;
}

static const an_process* process_of(const pt_analysis* a, uint64_t comm, const char* host, int pid) {
  if (!a->process_index.cap) return NULL;
  for (int32_t i = an_map_first(&a->process_index, process_key(comm, host, pid)); i >= 0;
       i = an_map_next(&a->process_index, i))
    if (a->processes[i].comm == comm && a->processes[i].pid == pid && !strcmp(a->processes[i].host, host))
      return &a->processes[i];
  return NULL;
}

static int by_process_round(const void* x, const void* y) {
  const an_unknown* p = *(const an_unknown* const*)x;
  const an_unknown* q = *(const an_unknown* const*)y;
  int c = strcmp(p->host, q->host);
  if (c) return c;
  if (p->pid != q->pid) return p->pid < q->pid ? -1 : 1;
  if (p->round != q->round) return p->round < q->round ? -1 : 1;
  return (p->seq > q->seq) - (p->seq < q->seq);
}

/* Ranks the rank-unknown dumps of `comm` stand for (the file comment),
 * and how many of those finished (finalize dumps of rank -1). Per
 * process: the rank-unknown dumps of its latest every-communicator round
 * — unless it dumped the communicator under rank numbers only in a later
 * such round (its ranks had learned their numbers by then). A process
 * whose rank-unknown dumps have no such round stands for one rank when it
 * wrote nothing under a number, else for none. */
static int unknown_ranks(pt_analysis* a, uint64_t comm, int* finished) {
  *finished = 0;
  size_t n = 0;
  for (size_t i = 0; i < a->n_unknown; i++) n += a->unknown[i].comm == comm;
  if (!n) return 0;
  const an_unknown** v = an_alloc(&a->mem, n * sizeof *v);
  if (!v) return 0;
  n = 0;
  for (size_t i = 0; i < a->n_unknown; i++)
    if (a->unknown[i].comm == comm) v[n++] = &a->unknown[i];
  qsort(v, n, sizeof *v, by_process_round);
  int total = 0, done = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && v[j]->pid == v[i]->pid && !strcmp(v[j]->host, v[i]->host)) j++;
    int64_t last = -1; /* its latest every-communicator round of rank-unknown dumps */
    int fin = 0;
    for (size_t k = i; k < j; k++) {
      if (every_comm(v[k]->trigger) && v[k]->round > last) last = v[k]->round;
      fin += v[k]->trigger == AN_TRIG_FINALIZE;
    }
    const an_process* numbered = process_of(a, comm, v[i]->host, v[i]->pid);
    int stand = 0;
    if (last >= 0) {
      if (!numbered || numbered->round <= last)
        for (size_t k = i; k < j; k++) stand += every_comm(v[k]->trigger) && v[k]->round == last;
    } else {
      stand = !numbered;
    }
    total += stand;
    done += fin < stand ? fin : stand;
    i = j;
  }
  an_free(&a->mem, v);
  *finished = done;
  return total;
}

void an_cover_unknown(pt_analysis* a, an_comm* c) {
  int finished;
  const int u = unknown_ranks(a, c->comm, &finished);
  c->unknown_dumps = u;
  c->unknown_finished = finished;
  if (!u) return;
  int missing = 0;
  for (int r = 0; r < c->nranks; r++) missing += !c->ranks[r].present;
  if (missing == 0 || u != missing) return; /* the numbers disagree: which is which cannot be told */
  for (int r = 0; r < c->nranks; r++) {
    an_rank* k = &c->ranks[r];
    if (k->present) continue;
    k->present = 1; /* a rank with a dump that holds no record */
    k->unknown = 1;
    c->with_dump++;
  }
}

void an_unknown_free(pt_analysis* a) {
  an_free(&a->mem, a->unknown);
  a->unknown = NULL;
  a->n_unknown = a->cap_unknown = 0;
  an_map_free(&a->mem, &a->unknown_index);
  an_free(&a->mem, a->processes);
  a->processes = NULL;
  a->n_processes = a->cap_processes = 0;
  an_map_free(&a->mem, &a->process_index);
}
