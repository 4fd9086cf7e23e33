/*
 * slow_metrics.c — slow, not hung, from the step metrics files
 * (docs/metrics.md): the culprits mset.c names — a rank's GPU, the rank
 * (or link) where slow network edges meet, or a rank's proxy thread — as
 * culprits of the analysis, causes slow_gpu, slow_link and slow_host, each
 * with its factor against the median of the comparable edges. The
 * judgement is statistical, as slow.c's is, with the same three stages
 * and the same test (slow_test.c): evidence, each edge's histograms of GPU
 * wait and network time per step; statistics, the comparable edges pooled
 * with the edge left out; the test, the edge's share of steps above the
 * others' median against theirs, a claim only at
 * AN_SLOW_ALPHA over the pairs tested. No fixed factor decides (a median
 * PT_MS_MIN_FACTOR times the others' at least is the floor of what is worth
 * naming, or --slow-factor where it is given); too few steps is "not enough
 * data yet", never "not slow".
 *
 * The metrics time every step of every edge, GPU wait and network apart;
 * the dumps time only the ops they still hold, whole. So when metrics
 * files are among the inputs their verdict replaces the slow ranks that op
 * durations suggested (slow.c); a hang found in the dumps still comes
 * first, and the slow edges of the metrics are then only listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/judge.h"

/* A culprit's steps, beside its factor (which compares one part of a step,
 * a wait, and so can be far larger than the step's own slowdown: on the
 * emulator a GPU 8x slow made an edge's GPU waits 26x the others' and its
 * steps 4x as long): over
 * the (peer, direction) edges of its rank (a link: those with its peer),
 * the upper medians of their step time p50 and of its ratio to their
 * comparable edges' (pt_mset_ratios; 0: none to compare with). */
typedef struct {
  uint64_t comm;
  int rank;
  size_t i;
} rank_edge;

static int by_comm_rank(const void* x, const void* y) {
  const rank_edge* a = x;
  const rank_edge* b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

static int cmp_u64(const void* x, const void* y) {
  const uint64_t a = *(const uint64_t*)x, b = *(const uint64_t*)y;
  return (a > b) - (a < b);
}

static int cmp_dbl(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

typedef struct {
  rank_edge* ix;  /* the set's (peer, direction) edges by communicator and rank */
  size_t n;
  double* ratio;  /* per edge of the set: its step p50 over its comparable edges' */
  uint64_t* p50;  /* room for one rank's edges */
  double* f;
} step_index;

static void steps_of(const pt_analysis* a, const step_index* x, const pt_ms_culprit* c, uint64_t* p50,
                     double* factor) {
  size_t lo = 0, hi = x->n;
  while (lo < hi) { /* the first edge of (comm, rank) */
    const size_t mid = lo + (hi - lo) / 2;
    const rank_edge* m = &x->ix[mid];
    if (m->comm < c->comm || (m->comm == c->comm && m->rank < c->rank)) lo = mid + 1;
    else hi = mid;
  }
  size_t np = 0, nf = 0;
  for (size_t k = lo; k < x->n && x->ix[k].comm == c->comm && x->ix[k].rank == c->rank; k++) {
    const pt_ms_edge* e = &a->mset.e[x->ix[k].i];
    if ((c->peer >= 0 && e->peer != c->peer) || !e->p50_ns[PT_MS_STEP]) continue;
    x->p50[np++] = e->p50_ns[PT_MS_STEP];
    if (x->ratio[x->ix[k].i] > 0) x->f[nf++] = x->ratio[x->ix[k].i];
  }
  *p50 = 0;
  *factor = 0;
  if (np) {
    qsort(x->p50, np, sizeof *x->p50, cmp_u64);
    *p50 = x->p50[np / 2];
  }
  if (nf) {
    qsort(x->f, nf, sizeof *x->f, cmp_dbl);
    *factor = x->f[nf / 2];
  }
}

/* "; its steps take 5.8x as long as comparable edges' (step time p50 21.0 ms)" */
static void steps_words(char* b, size_t n, uint64_t p50, double factor) {
  if (!p50) b[0] = 0;
  else if (factor > 0)
    snprintf(b, n, "; its steps take %.1fx as long as comparable edges' (step time p50 %.3g ms)", factor,
             (double)p50 / 1e6);
  else
    snprintf(b, n, "; its step time p50 %.3g ms", (double)p50 / 1e6);
}

static void summary(an_culprit* q, const pt_ms_culprit* c, uint64_t step_p50, double step_factor) {
  char where[96] = "", steps[128];
  if (q->host[0]) snprintf(where, sizeof where, " (%s)", q->host);
  steps_words(steps, sizeof steps, step_p50, step_factor);
  if (c->side == PT_MS_HOST)
    snprintf(q->summary, sizeof q->summary,
             "rank %d%s: its proxy thread is slow — every wait it times is long, for its GPU and in the network "
             "alike: %.2fx comparable edges' (the median of each wait, %zu edge side%s)%s, and its peers wait for "
             "it (a starved or descheduled proxy thread: CPU contention; or a slow GPU and a slow NIC at once)",
             c->rank, where, c->factor, c->edges, c->edges == 1 ? "" : "s", steps);
  else if (c->side == PT_MS_GPU)
    snprintf(q->summary, sizeof q->summary,
             "rank %d%s: its GPU is slow — the time its steps wait for the GPU is %.2fx comparable edges' (the "
             "median of that wait, %zu edge%s)%s",
             c->rank, where, c->factor, c->edges, c->edges == 1 ? "" : "s", steps);
  else if (c->peer >= 0)
    snprintf(q->summary, sizeof q->summary,
             "rank %d%s: its network link to rank %d is slow — the time its steps spend in the network is %.2fx "
             "comparable edges' (the median of that time)%s; it is slow with rank %d only, so either end may be "
             "the slow one",
             c->rank, where, c->peer, c->factor, steps, c->peer);
  else {
    snprintf(q->summary, sizeof q->summary,
             "rank %d%s: its network links are slow — the time steps to and from it spend in the network is "
             "%.2fx comparable edges' (the median of that time, %zu edge%s)%s",
             c->rank, where, c->factor, c->edges, c->edges == 1 ? "" : "s", steps);
    an_slow_tied_words(q); /* its peers as slow (pt_ms_culprit.tie) */
  }
}

/* Whether the metrics could have named `rank` of `comm` on `sides`: an
 * edge through it whose side the test had samples enough for
 * (pt_ms_verdict.able). */
static int judged(const pt_analysis* a, uint64_t comm, int rank, unsigned sides) {
  return pt_ms_rank_able(&a->mset, &a->mslow, comm, rank, sides, 1) > 0;
}

/* An op-duration slow culprit the metrics could have named, and did not
 * (theirs are added after). */
static int cleared(const pt_analysis* a, const an_culprit* q) {
  /* a slow link shows on the network side: GPU waits that could have
   * stood out do not clear it */
  return q->pub.cause == PT_CAUSE_SLOW_LINK && judged(a, q->pub.comm_hash, q->pub.rank, 1u << PT_MS_NET);
}

int an_slow_metrics(pt_analysis* a) {
  if (!a->mset.n) return 0;
  if (pt_mset_judge(&a->mset, AN_SLOW_ALPHA, a->slow_factor_given ? a->slow_factor : PT_MS_MIN_FACTOR,
                    &a->mslow) != 0) return PT_AN_ENOMEM;
  if (a->n_stuck) return 0;
  /* The metrics' verdict replaces the one from op durations where the
   * metrics could have found it: a rank slow by its op durations stays
   * when no edge of the metrics through it had samples enough for the
   * test to name it (a short job: few ops, each of a few steps), since
   * finding nothing there is no evidence that it is not slow. */
  an_drop_culprits(a, cleared);
  size_t edges = 0;
  for (size_t i = 0; i < a->n_slow; i++) {
    const an_slow_edge* e = &a->slow[i];
    int kept = 0;
    for (size_t k = 0; k < a->n_culprits && !kept; k++) {
      const pt_culprit* p = &a->culprits[k].pub;
      kept = p->cause == PT_CAUSE_SLOW_LINK && p->comm_hash == e->comm && (p->rank == e->sender || p->rank == e->receiver);
    }
    if (kept) a->slow[edges++] = *e;
  }
  a->n_slow = edges;
  step_index x = {0};
  if (a->mslow.n_culprits) {
    x.ix = an_alloc(&a->mem, (a->mset.n + 1) * sizeof *x.ix);
    x.ratio = an_alloc(&a->mem, (a->mset.n + 1) * sizeof *x.ratio);
    x.p50 = an_alloc(&a->mem, (a->mset.n + 1) * sizeof *x.p50);
    x.f = an_alloc(&a->mem, (a->mset.n + 1) * sizeof *x.f);
    if (!x.ix || !x.ratio || !x.p50 || !x.f || pt_mset_ratios(&a->mset, PT_MS_STEP, x.ratio) != 0) goto oom;
    for (size_t i = 0; i < a->mset.n; i++)
      if (a->mset.e[i].channel < 0) x.ix[x.n++] = (rank_edge){a->mset.e[i].comm, a->mset.e[i].rank, i};
    qsort(x.ix, x.n, sizeof *x.ix, by_comm_rank);
  }
  for (size_t i = 0; i < a->mslow.n_culprits; i++) {
    const pt_ms_culprit* c = &a->mslow.culprits[i];
    uint64_t step_p50;
    double step_factor;
    steps_of(a, &x, c, &step_p50, &step_factor);
    /* A wait that is longer than comparable edges' in steps that are not
     * slower than theirs slows nothing: the step would have waited that
     * long anyway (a ring's receive whose GPU waits on the hold downstream
     * of a slow rank elsewhere, a little more on a busy node), and the
     * step time says so. Listed among the slow edges, not a culprit. */
    if (step_factor > 0 && step_factor < PT_MS_MIN_FACTOR) continue;
    an_culprit* q = an_slow_culprit(a, c->comm, c->rank);
    if (!q) goto oom;
    pt_culprit* p = &q->pub;
    p->cause = c->side == PT_MS_GPU ? PT_CAUSE_SLOW_GPU : c->side == PT_MS_HOST ? PT_CAUSE_SLOW_HOST : PT_CAUSE_SLOW_LINK;
    p->peer = c->peer;
    p->slow_factor = c->factor;
    if (c->peer >= 0) {
      q->cand[1] = c->peer;
      p->n_candidates = 2;
    } else if (c->side == PT_MS_NET && an_slow_tied(a, q, c->tie, c->n_tie) != 0) { /* it, or its peers as slow */
      goto oom;
    }
    if (!q->host[0]) an_copy(q->host, sizeof q->host, c->host);
    if (!p->pid) p->pid = (int)c->pid;
    summary(q, c, step_p50, step_factor);
    a->n_metric_culprits++;
  }
  an_free(&a->mem, x.ix);
  an_free(&a->mem, x.ratio);
  an_free(&a->mem, x.p50);
  an_free(&a->mem, x.f);
  return 0;
oom:
  an_free(&a->mem, x.ix);
  an_free(&a->mem, x.ratio);
  an_free(&a->mem, x.p50);
  an_free(&a->mem, x.f);
  return PT_AN_ENOMEM;
}
