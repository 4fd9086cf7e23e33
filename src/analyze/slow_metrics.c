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
#include <string.h>

#include "analyze/internal.h"

static void summary(an_culprit* q, const pt_ms_culprit* c) {
  char where[96] = "";
  if (q->host[0]) snprintf(where, sizeof where, " (%s)", q->host);
  if (c->side == PT_MS_HOST)
    snprintf(q->summary, sizeof q->summary,
             "rank %d%s: its proxy thread is slow — every wait it times is long, for its GPU and in the network "
             "alike: %.2fx as long as comparable edges' (median, %zu edge side%s), and its peers wait for it (a "
             "starved or descheduled proxy thread: CPU contention; or a slow GPU and a slow NIC at once)",
             c->rank, where, c->factor, c->edges, c->edges == 1 ? "" : "s");
  else if (c->side == PT_MS_GPU)
    snprintf(q->summary, sizeof q->summary,
             "rank %d%s: its GPU is slow — its steps wait %.2fx as long for the GPU as comparable edges' "
             "(median, %zu edge%s)",
             c->rank, where, c->factor, c->edges, c->edges == 1 ? "" : "s");
  else if (c->peer >= 0)
    snprintf(q->summary, sizeof q->summary,
             "rank %d%s: its network link to rank %d is slow — steps take %.2fx as long in the network as comparable "
             "edges' (median); it is slow with rank %d only, so either end may be the slow one",
             c->rank, where, c->peer, c->factor, c->peer);
  else
    snprintf(q->summary, sizeof q->summary,
             "rank %d%s: its network links are slow — steps to and from it take %.2fx as long in the network as "
             "comparable edges' (median, %zu edge%s)",
             c->rank, where, c->factor, c->edges, c->edges == 1 ? "" : "s");
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
  for (size_t i = 0; i < a->mslow.n_culprits; i++) {
    const pt_ms_culprit* c = &a->mslow.culprits[i];
    an_culprit* q = an_slow_culprit(a, c->comm, c->rank);
    if (!q) return PT_AN_ENOMEM;
    pt_culprit* p = &q->pub;
    p->cause = c->side == PT_MS_GPU ? PT_CAUSE_SLOW_GPU : c->side == PT_MS_HOST ? PT_CAUSE_SLOW_HOST : PT_CAUSE_SLOW_LINK;
    p->peer = c->peer;
    p->slow_factor = c->factor;
    if (c->peer >= 0) {
      q->cand[1] = c->peer;
      p->n_candidates = 2;
    }
    if (!q->host[0]) an_copy(q->host, sizeof q->host, c->host);
    if (!p->pid) p->pid = (int)c->pid;
    summary(q, c);
    a->n_metric_culprits++;
  }
  return 0;
}
