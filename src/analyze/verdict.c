/*
 * verdict.c — the run: the per-communicator evidence built (comms.c), the
 * judgements made in their order (pair, explain, slow from the dumps and
 * from the step metrics, the ranks without a dump, desync), the culprits
 * ordered across communicators (origin.c), then one verdict — unusable,
 * hang, slow or ok — and what the input could not show (complete.c), which
 * may make it incomplete.
 */
#include "analyze/verdict.h"

/* The ranks without a dump, each with the stuck ops that wait on it: one
 * pass over the ranks and one over the ops (a job of 100 000 ranks read
 * from a few of its dumps has nearly as many missing ranks). */
static int find_missing(pt_analysis* a) {
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    an_comm* c = &a->comms[ci];
    for (size_t i = c->first_item; i < c->first_item + c->n_items; i++) {
      const an_item* x = &a->items[i];
      if (x->stuck && x->wait == AN_W_PEER_MISSING && x->op->peer >= 0 && x->op->peer < c->nranks)
        c->ranks[x->op->peer].waited_on++;
    }
    for (int r = 0; r < c->nranks; r++) {
      if (c->ranks[r].present) continue;
      an_rank_ref* m = an_grow(&a->mem, (void**)&a->missing, &a->n_missing, &a->cap_missing, sizeof *m);
      if (!m) return PT_AN_ENOMEM;
      m->comm = c->comm;
      m->rank = r;
      m->referenced = c->ranks[r].waited_on;
    }
  }
  return 0;
}

int pt_analysis_run(pt_analysis* a) {
  if (!a || a->ran) return PT_AN_EINVAL;
  a->ran = 1;
  double t0 = an_now();
  int rc = an_outcome(a, 0); /* an input not read whole: no verdict */
  if (!rc) rc = an_build(a);
  if (!rc) rc = an_pair(a);
  if (!rc) rc = an_explain(a);
  double ts = an_now();
  if (!rc) rc = an_slow(a);
  a->slow_seconds = an_now() - ts;
  if (!rc) rc = an_slow_metrics(a);
  if (!rc) rc = find_missing(a);
  if (!rc) rc = an_desync(a);
  if (!rc) rc = an_origin(a);
  rc = an_outcome(a, rc);
  /* Pointers into the culprit array, now that it no longer moves. */
  for (size_t k = 0; k < a->n_culprits; k++) {
    an_culprit* q = &a->culprits[k];
    q->pub.candidates = q->cand;
    q->pub.host = q->host;
    q->pub.summary = q->summary;
    q->pub.chain = q->chain;
    q->pub.cause_name = pt_cause_name(q->pub.cause);
  }
  /* Out of memory: no verdict rather than one from part of the records. */
  if (rc || (a->n_comms == 0 && a->n_empty == 0 && a->mset.n == 0)) a->verdict = PT_VERDICT_UNUSABLE;
  else if (a->n_stuck || a->n_desync) a->verdict = PT_VERDICT_HANG;
  else if (a->n_slow || a->n_metric_culprits) a->verdict = PT_VERDICT_SLOW;
  else a->verdict = PT_VERDICT_OK;
  /* What the input could not show: gaps, possible culprits, incomplete. */
  if (a->verdict != PT_VERDICT_UNUSABLE && (rc = an_outcome(a, an_complete(a))) != 0) a->verdict = PT_VERDICT_UNUSABLE;
  a->analyze_seconds = an_now() - t0;
  return rc;
}

pt_verdict pt_analysis_verdict(const pt_analysis* a) { return a ? a->verdict : PT_VERDICT_UNUSABLE; }
