/*
 * slow.c — slow, not hung: links much slower than their peers.
 *
 * Needs ns times (JSON dumps): legacy ms times cannot time an op that takes
 * microseconds. Every op that completed, in the latest dumps, has a
 * duration (creation to last progress). Ops of one operation (same
 * communicator, opCount and channel) move the same bytes, so they should
 * take about as long: an op slower than `slow-factor` times the median of
 * its operation's ops is slow. An edge (sender, receiver, channel) is slow
 * when at least half of its ops are; a rank that every slow edge touches is
 * the culprit ("its link is slow"); otherwise each slow edge is one.
 *
 * A pipelined ring hides a slow link (every edge waits for the slowest, so
 * all take as long); point-to-point operations show it. An operation needs
 * at least four ops for a median to mean something.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"

typedef struct {
  int32_t item;
  uint64_t group;
  int64_t dur;
} timed;

static int by_group_dur(const void* x, const void* y) {
  const timed* a = x;
  const timed* b = y;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  return (a->dur > b->dur) - (a->dur < b->dur);
}

static int sender(const an_op* op) { return op->is_send ? op->rank : op->peer; }
static int receiver(const an_op* op) { return op->is_send ? op->peer : op->rank; }

static int cmp_double(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

int an_slow(pt_analysis* a) {
  if (!a->slow_possible) return 0;
  timed* t = an_alloc(&a->mem, (a->n_items + 1) * sizeof *t);
  double* ratio = an_alloc(&a->mem, (a->n_items + 1) * sizeof *ratio);
  if (!t || !ratio) {
    an_free(&a->mem, t);
    an_free(&a->mem, ratio);
    return PT_AN_ENOMEM;
  }
  size_t n = 0;
  for (size_t i = 0; i < a->n_items; i++) {
    const an_op* op = a->items[i].op;
    if (!a->items[i].dump->ns_times || op->op_count < 0 || op->n_steps <= 0 || op->cnt[AN_C_DONE] < op->n_steps)
      continue;
    int64_t end = op->progress_ns ? op->progress_ns : op->last_ns;
    if (!op->create_ns || end <= op->create_ns) continue;
    uint64_t g = an_mix(an_mix(an_mix(0x5105, op->comm), (uint64_t)op->op_count), (uint64_t)(uint32_t)op->channel);
    t[n++] = (timed){(int32_t)i, g, end - op->create_ns};
  }
  qsort(t, n, sizeof *t, by_group_dur);
  for (size_t i = 0; i < a->n_items; i++) ratio[i] = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && t[j].group == t[i].group) j++;
    if (j - i >= 4) {
      int64_t med = t[i + (j - i) / 2].dur;
      for (size_t q = i; q < j && med > 0; q++) ratio[t[q].item] = (double)t[q].dur / (double)med;
    }
    i = j;
  }
  /* Edges. */
  int rc = 0;
  for (size_t q = 0; q < n && rc == 0; q++) {
    const an_op* op = a->items[t[q].item].op;
    if (ratio[t[q].item] == 0) continue;
    an_slow_edge* e = NULL;
    for (size_t k = 0; k < a->n_slow && !e; k++)
      if (a->slow[k].comm == op->comm && a->slow[k].sender == sender(op) && a->slow[k].receiver == receiver(op) &&
          a->slow[k].channel == op->channel)
        e = &a->slow[k];
    if (!e) {
      e = an_grow(&a->mem, (void**)&a->slow, &a->n_slow, &a->cap_slow, sizeof *e);
      if (!e) {
        rc = PT_AN_ENOMEM;
        break;
      }
      e->comm = op->comm;
      e->sender = sender(op);
      e->receiver = receiver(op);
      e->channel = op->channel;
    }
    e->ops++;
    if (ratio[t[q].item] >= a->slow_factor) {
      e->slow_ops++;
      if (ratio[t[q].item] > e->ratio) e->ratio = ratio[t[q].item];
    }
  }
  /* Keep the slow edges only. */
  size_t kept = 0;
  for (size_t k = 0; k < a->n_slow; k++)
    if (a->slow[k].slow_ops * 2 >= a->slow[k].ops && a->slow[k].slow_ops > 0) a->slow[kept++] = a->slow[k];
  a->n_slow = kept;
  an_free(&a->mem, t);

  /* Culprits: a rank every slow edge of a communicator touches, or the edges. */
  for (size_t ci = 0; ci < a->n_comms && rc == 0 && a->n_slow; ci++) {
    const an_comm* c = &a->comms[ci];
    size_t edges = 0;
    for (size_t k = 0; k < a->n_slow; k++) edges += a->slow[k].comm == c->comm;
    if (!edges) continue;
    int best = -1;
    size_t best_n = 0;
    for (int r = 0; r < c->nranks; r++) {
      size_t touch = 0;
      for (size_t k = 0; k < a->n_slow; k++)
        touch += a->slow[k].comm == c->comm && (a->slow[k].sender == r || a->slow[k].receiver == r);
      if (touch > best_n) {
        best_n = touch;
        best = r;
      }
    }
    int whole_rank = best >= 0 && best_n == edges && edges >= 2;
    for (size_t k = 0; k < a->n_slow && rc == 0; k++) {
      const an_slow_edge* e = &a->slow[k];
      if (e->comm != c->comm) continue;
      if (whole_rank && k != 0) {
        /* one culprit for the rank: only the first edge makes it */
        int first = 1;
        for (size_t q = 0; q < k; q++) first &= a->slow[q].comm != c->comm;
        if (!first) continue;
      }
      an_culprit* q = an_grow(&a->mem, (void**)&a->culprits, &a->n_culprits, &a->cap_culprits, sizeof *q);
      if (!q) {
        rc = PT_AN_ENOMEM;
        break;
      }
      pt_culprit* p = &q->pub;
      p->cause = PT_CAUSE_SLOW_LINK;
      p->cause_name = pt_cause_name(p->cause);
      p->comm_hash = c->comm;
      p->rank = whole_rank ? best : e->sender;
      p->peer = whole_rank ? -1 : e->receiver;
      p->channel = whole_rank ? -1 : e->channel;
      p->is_send = whole_rank ? -1 : 1;
      p->op_count = -1;
      p->step = p->n_steps = -1;
      q->origin = -1;
      q->comm_index = (int)ci;
      /* The factor: median of the worst ratios of the edges it covers. */
      double rs[64];
      int nr = 0;
      for (size_t m = 0; m < a->n_slow && nr < 64; m++) {
        const an_slow_edge* f = &a->slow[m];
        if (f->comm != c->comm) continue;
        if (whole_rank ? (f->sender == best || f->receiver == best) : m == k) rs[nr++] = f->ratio;
      }
      qsort(rs, (size_t)nr, sizeof rs[0], cmp_double);
      p->slow_factor = nr ? rs[nr / 2] : 0;
      const an_dump* d = p->rank >= 0 && p->rank < c->nranks ? c->ranks[p->rank].dump : NULL;
      snprintf(q->host, sizeof q->host, "%s", d ? d->host : "");
      p->pid = d ? d->pid : 0;
      q->cand = an_alloc(&a->mem, 2 * sizeof *q->cand);
      if (q->cand) {
        q->cand[0] = p->rank;
        q->cand[1] = -1;
        p->n_candidates = 1;
      }
      if (whole_rank)
        snprintf(q->summary, sizeof q->summary,
                 "rank %d%s%s%s: its network links are slow — its ops take %.1fx as long as the median of their "
                 "operation (%zu slow edges, all touching rank %d)",
                 p->rank, q->host[0] ? " (" : "", q->host, q->host[0] ? ")" : "", p->slow_factor, edges, p->rank);
      else
        snprintf(q->summary, sizeof q->summary,
                 "link rank %d -> rank %d, channel %d is slow: its ops take %.1fx as long as the median of their "
                 "operation (%u of %u ops)",
                 e->sender, e->receiver, e->channel, e->ratio, e->slow_ops, e->ops);
      p->candidates = q->cand;
      p->host = q->host;
      p->summary = q->summary;
    }
  }
  an_free(&a->mem, ratio);
  return rc;
}
