/*
 * compare.c — the analysis against a ground truth (`proxytrace sim
 * --truth-json`): the same verdict, and every culprit the truth expects.
 *
 * An expected culprit marked "exact" must be named as it is by at least
 * one culprit: same rank, same cause (a GPU that stopped producing or
 * consuming is one: a stalled GPU of a ring forwards nothing, so it
 * consumes nothing more either, and its proxy ops show whichever they
 * wait for), same channel (when the fault has one). One marked not exact is a fault the proxy records cannot place on
 * its rank — a GPU inside a node's part of a ring, a send progressed by
 * another process's proxy (PXN) — so a culprit on the same channel whose
 * rank, or whose candidate ranks on the node, include it is enough. A
 * culprit that matches no expected one even that way makes the comparison
 * fail (a fault on every channel may show exactly on one channel and at
 * node level on another: both match) — slow culprits included, beside a
 * hang too: the analysis names no slowness it cannot prove.
 *
 * Within a documented limit (PT_TRUTH_LIMIT): a culprit the truth marks
 * "seen":false, not named (a fault whose stop shows on no network op: the
 * GPU stops on transfers inside its node); one with a "limit" of the
 * records (a rank whose dumps name no rank), named by its rank with
 * another cause; one not named where the truth says a dead rank of its
 * node may be named in its place ("namedInstead") and is; a hang the
 * truth says shows only as missing dumps ("hangShows": every stuck op is
 * a dead rank's), read ok or incomplete with every dead rank listed
 * without a dump and no culprit; a slow link or GPU the
 * analysis did not judge because the evidence a timing judgement needs is
 * not there (millisecond times, too few or too short timed ops: slow.c),
 * a slow GPU or proxy thread that op durations name as its rank's slow
 * links (only the step metrics tell the GPU's wait from the network's; no
 * metrics, or none that could test the rank's edges), and a slow proxy
 * thread named by the one side of its waits the metrics could test (both
 * sides slow are what tell it from a slow GPU or NIC).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/render.h"

#define MAX_EXPECT 32

typedef struct {
  int rank, channel, exact;
  int unseen; /* "seen":false: no dump can show it (the emulator's truth says why) */
  const char* cause;
  const char* limit; /* why the records cannot show it as it is (the truth's words), or NULL */
  int named_instead;  /* a dead rank the records may name in its place, -1 */
} expect;

static void say(char* why, size_t n, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char* why, size_t n, const char* fmt, ...) {
  if (!why || !n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
}

static int has_candidate(const pt_culprit* q, int rank) {
  for (int i = 0; i < q->n_candidates; i++)
    if (q->candidates[i] == rank) return 1;
  return 0;
}

/* The channel: any where the truth names none; else the same one, or none
 * at all from a culprit that names its rank only where the truth says the
 * records cannot name it exactly (a receive never called reads as a call
 * not reached: a rank behind, on no channel). */
static int channel_ok(const expect* e, const pt_culprit* q) {
  return e->channel < 0 || q->channel == e->channel || (q->channel < 0 && !e->exact);
}

/* The same cause: one name, or a GPU that stopped — producing or
 * consuming, whichever its proxy ops show (a stalled GPU of a ring,
 * which consumes what it forwards, does neither). */
static int same_cause(const char* got, const char* want) {
  if (!strcmp(got, want)) return 1;
  int g = !strcmp(got, "gpu_not_producing") || !strcmp(got, "gpu_not_consuming");
  int w = !strcmp(want, "gpu_not_producing") || !strcmp(want, "gpu_not_consuming");
  return g && w;
}

/* A rank the analysis lists among the possible culprits of a hang for
 * want of its dump ("possible culprits too"). */
static int possible_missing(const pt_analysis* a, int rank) {
  for (size_t g = 0; g < a->n_gaps; g++) {
    const pt_gap* p = &a->gaps[g].pub;
    const int last = p->rank_last > p->rank ? p->rank_last : p->rank;
    if (p->kind == PT_GAP_MISSING && p->may_hold_fault && rank >= p->rank && rank <= last) return 1;
  }
  return 0;
}

/* A culprit names `rank` as a rank without a dump. */
static int names_missing(const pt_analysis* a, int rank) {
  for (size_t k = 0; k < a->n_culprits; k++)
    if (a->culprits[k].pub.cause == PT_CAUSE_RANK_MISSING && a->culprits[k].pub.rank == rank) return 1;
  return 0;
}

/* Every dead rank of the truth is among the ranks the analysis lists
 * without a dump. */
static int dead_listed(const pt_analysis* a, const an_jobj* o) {
  int any = 0;
  for (int i = 0;; i++) {
    char p[32];
    int64_t r;
    snprintf(p, sizeof p, "deadRanks.%d", i);
    if (an_json_i64(o, p, &r) != 0) break;
    int found = 0;
    for (size_t m = 0; m < a->n_missing && !found; m++) found = a->missing[m].rank == r;
    if (!found) return 0;
    any = 1;
  }
  return any;
}

/* The rank's own aggregate edges the step metrics could test on `side`. */
static int able_edges(const pt_analysis* a, uint64_t comm, int rank, int side) {
  int n = 0;
  for (size_t i = 0; i < a->mset.n && a->mslow.able; i++) {
    const pt_ms_edge* e = &a->mset.e[i];
    n += e->comm == comm && e->rank == rank && e->channel < 0 && (a->mslow.able[i] & (1u << side));
  }
  return n;
}

/* A slow proxy thread (slow_host) the analysis names by one side only —
 * its GPU (slow_gpu) or its network (slow_link) — where the step metrics
 * could test fewer than two of the rank's own edges on the other side: the
 * thread is told from a slow GPU or NIC only by both sides slow, on two
 * edges at least (mset.c, host_side: one edge slow on both sides may be a
 * GPU and the link it feeds), so no more could be said. Not where the
 * other side was tested on two edges and found healthy, nor where neither
 * side was (op durations named it: the limit of the op times). */
static int slow_side_only(const pt_analysis* a, uint64_t comm, int rank) {
  for (size_t k = 0; k < a->n_culprits; k++) {
    const pt_culprit* q = &a->culprits[k].pub;
    if (q->rank != rank || (q->cause != PT_CAUSE_SLOW_GPU && q->cause != PT_CAUSE_SLOW_LINK)) continue;
    const int side = q->cause == PT_CAUSE_SLOW_GPU ? PT_MS_GPU : PT_MS_NET;
    if (pt_ms_rank_able(&a->mset, &a->mslow, comm, rank, 1u << side, 0) > 0 &&
        able_edges(a, comm, rank, PT_MS_GPU + PT_MS_NET - side) < 2)
      return 1;
  }
  return 0;
}

/* 2: names it exactly; 1: at its node (its rank or a candidate on the
 * node); 0: not this one. */
static int matches(const expect* e, const pt_culprit* q) {
  if (!channel_ok(e, q)) return 0;
  if (q->rank == e->rank && same_cause(pt_cause_name(q->cause), e->cause)) return 2;
  if (q->rank == e->rank || has_candidate(q, e->rank)) return 1;
  return 0;
}

int pt_analysis_compare_truth(const pt_analysis* a, const char* truth, char* why, size_t why_len) {
  if (!a || !truth) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  an_mem scratch = {0}; /* its failure leaves the analysis whole */
  an_jobj* o = an_alloc(&scratch, sizeof *o);
  if (!o) return PT_AN_ENOMEM;
  char err[200];
  int rc = PT_AN_EINVAL;
  const char* type;
  const char* verdict;
  if (an_json_parse(truth, strlen(truth), o, err, sizeof err) != 0) {
    say(why, why_len, "not a ground truth document: %s", err);
    goto out;
  }
  type = an_json_str(o, "type");
  verdict = an_json_str(o, "verdict");
  if (!type || strcmp(type, "truth") || !verdict) {
    say(why, why_len, "not a ground truth document (no \"type\":\"truth\" and \"verdict\")");
    goto out;
  }
  expect e[MAX_EXPECT];
  int n = 0;
  for (; n < MAX_EXPECT; n++) {
    char p[48];
    int64_t rank, ch;
    snprintf(p, sizeof p, "culprits.%d.rank", n);
    if (an_json_i64(o, p, &rank) != 0) break;
    snprintf(p, sizeof p, "culprits.%d.channel", n);
    if (an_json_i64(o, p, &ch) != 0) ch = -1;
    snprintf(p, sizeof p, "culprits.%d.cause", n);
    e[n].cause = an_json_str(o, p);
    snprintf(p, sizeof p, "culprits.%d.exact", n);
    const an_jfield* ex = an_json_get(o, p);
    e[n].exact = !ex || ex->truth;
    snprintf(p, sizeof p, "culprits.%d.seen", n);
    const an_jfield* seen = an_json_get(o, p);
    e[n].unseen = seen && !seen->truth;
    snprintf(p, sizeof p, "culprits.%d.limit", n);
    e[n].limit = an_json_str(o, p);
    snprintf(p, sizeof p, "culprits.%d.namedInstead", n);
    int64_t instead;
    e[n].named_instead = an_json_i64(o, p, &instead) == 0 ? (int)instead : -1;
    e[n].rank = (int)rank;
    e[n].channel = (int)ch;
    if (!e[n].cause) e[n].cause = "";
  }
  const char* got = pt_verdict_name(a->verdict);
  char unjudged[256];
  an_slow_judgement_words(a, unjudged, sizeof unjudged);
  if (a->mset.n) pt_ms_verdict_words(&a->mslow, unjudged, sizeof unjudged); /* the metrics' judgement stands */
  if (strcmp(got, verdict) != 0) {
    const char* shows = an_json_str(o, "hangShows");
    if (!strcmp(verdict, "hang") && shows && !strcmp(shows, "missing") &&
        (a->verdict == PT_VERDICT_OK || a->verdict == PT_VERDICT_INCOMPLETE) && !a->n_culprits &&
        dead_listed(a, o)) {
      say(why, why_len, "within a documented limit: hang; %s — the analysis lists the dead rank%s without a dump",
          an_json_str(o, "limit") ? an_json_str(o, "limit") : "the hang shows only as missing dumps",
          an_json_get(o, "deadRanks.1") ? "s" : "");
      rc = PT_TRUTH_LIMIT;
      goto out;
    }
    const char* ch = an_json_str(o, "commHash");
    const uint64_t truth_comm = ch ? strtoull(ch, NULL, 10) : 0;
    int all_unseen = n > 0, unable = n > 0 && a->mset.n, own_side = n > 0 && !a->mset.n;
    for (int i = 0; i < n; i++) {
      all_unseen &= e[i].unseen;
      own_side &= !strcmp(e[i].cause, "slow_gpu") || !strcmp(e[i].cause, "slow_host");
      /* the step metrics could not have found its edges slow, however slow */
      const unsigned sides = !strcmp(e[i].cause, "slow_gpu")    ? 1u << PT_MS_GPU
                             : !strcmp(e[i].cause, "slow_link") ? 1u << PT_MS_NET
                                                                : 1u << PT_MS_GPU | 1u << PT_MS_NET;
      unable &= pt_ms_rank_able(&a->mset, &a->mslow, truth_comm, e[i].rank, sides, 0) == 0;
    }
    if (!strcmp(verdict, "slow") && all_unseen && a->verdict == PT_VERDICT_OK) {
      say(why, why_len,
          "within a documented limit: slow; no culprit of the ground truth shows in a record — rank %d: %s",
          e[0].rank, an_json_str(o, "culprits.0.limit") ? an_json_str(o, "culprits.0.limit") : "seen: false");
      rc = PT_TRUTH_LIMIT;
    } else if (!strcmp(verdict, "slow") && unjudged[0] && !a->n_metric_culprits && a->verdict == PT_VERDICT_OK) {
      say(why, why_len, "within a documented limit: a slow link or GPU is expected; not judged: %s", unjudged);
      rc = PT_TRUTH_LIMIT;
    } else if (!strcmp(verdict, "slow") && own_side && a->verdict == PT_VERDICT_OK) {
      /* op durations time links: a GPU's or a proxy thread's slowness is
       * the op's own side only, which the comparison of whole ops may not
       * single out (the step metrics time each side) */
      say(why, why_len,
          "within a documented limit: slow; rank %d's %s, without step metrics: op durations time whole ops, which a "
          "GPU or proxy thread slows on its own side only — the step metrics time each side",
          e[0].rank, !strcmp(e[0].cause, "slow_gpu") ? "slow GPU" : "slow proxy thread");
      rc = PT_TRUTH_LIMIT;
    } else if (!strcmp(verdict, "slow") && unable && a->verdict == PT_VERDICT_OK) {
      say(why, why_len,
          "within a documented limit: slow; rank %d's edges had too few samples to stand out beyond chance however "
          "slow (the steps of one op, up to %d, count as one sample), and the analysis does not clear them",
          e[0].rank, PT_MS_STEPS_PER_SAMPLE);
      rc = PT_TRUTH_LIMIT;
    } else {
      say(why, why_len, "the verdict is %s, the ground truth says %s", got, verdict);
      rc = PT_TRUTH_DIFFERS;
    }
    goto out;
  }
  int worst = PT_TRUTH_EXACT;
  int unseen = -1; /* an expected culprit no dump can show, not named */
  int listed = -1; /* a dead rank not named, listed among the possible culprits */
  int limited = -1; /* named by its rank only, where the truth says the records cannot do more */
  int instead = -1;  /* not named, a dead rank of its node named in its place */
  int one_side = -1; /* a slow proxy thread named by the one side its metrics could judge */
  int not_judged = -1; /* a slow fault not named, beside one named, where op durations could not judge */
  const char* comm_text = an_json_str(o, "commHash");
  const uint64_t comm = comm_text ? strtoull(comm_text, NULL, 10) : 0;
  for (int i = 0; i < n; i++) {
    int best = 0;
    for (size_t k = 0; k < a->n_culprits; k++) {
      int m = matches(&e[i], &a->culprits[k].pub);
      if (m > best) best = m;
    }
    if (best == 1 && (!strcmp(e[i].cause, "slow_gpu") || !strcmp(e[i].cause, "slow_host")) &&
        (!a->mset.n || pt_ms_rank_able(&a->mset, &a->mslow, comm, e[i].rank, 1u << PT_MS_GPU | 1u << PT_MS_NET, 0) <= 0)) {
      /* op durations time the op, not which side of it waits (the step
       * metrics, where there are some, could test no edge of the rank) */
      int slow_rank = 0;
      for (size_t k = 0; k < a->n_culprits; k++)
        slow_rank |= a->culprits[k].pub.cause == PT_CAUSE_SLOW_LINK &&
                     (a->culprits[k].pub.rank == e[i].rank || has_candidate(&a->culprits[k].pub, e[i].rank));
      if (slow_rank) {
        worst = PT_TRUTH_LIMIT;
        continue;
      }
    }
    if (best == 1 && !strcmp(e[i].cause, "slow_host") && a->mset.n && slow_side_only(a, comm, e[i].rank)) {
      worst = PT_TRUTH_LIMIT;
      if (one_side < 0) one_side = i;
      continue;
    }
    if (!best && e[i].unseen) {
      worst = PT_TRUTH_LIMIT;
      if (unseen < 0) unseen = i;
      continue;
    }
    if (!best && !a->mset.n && unjudged[0] && a->n_culprits &&
        (!strcmp(e[i].cause, "slow_link") || !strcmp(e[i].cause, "slow_gpu") || !strcmp(e[i].cause, "slow_host"))) {
      /* without step metrics, where the analysis says op durations could
       * not judge the links (only a ring's ops were timed: they all wait
       * for its slowest edge), a second slow rank shows in no op's time */
      worst = PT_TRUTH_LIMIT;
      if (not_judged < 0) not_judged = i;
      continue;
    }
    if ((!best || (best == 1 && e[i].exact)) && e[i].named_instead >= 0 && names_missing(a, e[i].named_instead)) {
      /* the dead rank named in its place: it alone, or it with this rank
       * among its candidates */
      worst = PT_TRUTH_LIMIT;
      if (!best && instead < 0) instead = i;
      if (best && limited < 0) limited = i;
      continue;
    }
    if (!best && !strcmp(e[i].cause, "rank_missing") && a->n_stuck && a->n_culprits && possible_missing(a, e[i].rank)) {
      worst = PT_TRUTH_LIMIT;
      if (listed < 0) listed = i;
      continue;
    }
    if (!best || (best == 1 && e[i].exact)) {
      say(why, why_len, "no culprit names rank %d (channel %d, %s) as the ground truth does", e[i].rank,
          e[i].channel, e[i].cause);
      rc = PT_TRUTH_DIFFERS;
      goto out;
    }
    if (best == 1 && e[i].limit && !e[i].unseen) {
      worst = PT_TRUTH_LIMIT;
      if (limited < 0) limited = i;
      continue;
    }
    if (best == 1 && worst < PT_TRUTH_NODE) worst = PT_TRUTH_NODE;
  }
  for (size_t k = 0; k < a->n_culprits; k++) {
    const pt_culprit* q = &a->culprits[k].pub;
    if (q->consequence_of >= 0) continue; /* waits on another culprit: named as its consequence */
    int ok = 0;
    for (int i = 0; i < n && !ok; i++) ok = matches(&e[i], q) > 0;
    if (!ok) {
      say(why, why_len, "culprit %zu is not in the ground truth: %s", k + 1, q->summary);
      rc = PT_TRUTH_DIFFERS;
      goto out;
    }
  }
  if (worst == PT_TRUTH_LIMIT && unseen >= 0)
    say(why, why_len,
        "within a documented limit: %s; the fault of rank %d (channel %d, %s) stops no network op first-hand — the "
        "ground truth marks it as one no dump can show",
        verdict, e[unseen].rank, e[unseen].channel, e[unseen].cause);
  else if (worst == PT_TRUTH_LIMIT && instead >= 0)
    say(why, why_len, "within a documented limit: %s; rank %d (channel %d, %s) is not named — %s (rank %d is)",
        verdict, e[instead].rank, e[instead].channel, e[instead].cause, e[instead].limit ? e[instead].limit : "",
        e[instead].named_instead);
  else if (worst == PT_TRUTH_LIMIT && limited >= 0)
    say(why, why_len, "within a documented limit: %s; rank %d (%s) is named by its rank only — %s", verdict,
        e[limited].rank, e[limited].cause, e[limited].limit);
  else if (worst == PT_TRUTH_LIMIT && not_judged >= 0)
    say(why, why_len,
        "within a documented limit: %s; rank %d (%s) is not named beside the slowness that is — op durations could "
        "not judge the links (%s)",
        verdict, e[not_judged].rank, e[not_judged].cause, unjudged);
  else if (worst == PT_TRUTH_LIMIT && one_side >= 0)
    say(why, why_len,
        "within a documented limit: %s; rank %d's slow proxy thread is named by the side of its waits the step "
        "metrics could judge — its edges on the other side could not be tested (too few samples or comparable "
        "edges), and only both sides slow tell a late thread from a slow GPU or NIC",
        verdict, e[one_side].rank);
  else if (worst == PT_TRUTH_LIMIT && listed >= 0)
    say(why, why_len,
        "within a documented limit: %s; rank %d died, and every stuck op beside it waits on another culprit: it is "
        "listed among the possible culprits (no dump), not named",
        verdict, e[listed].rank);
  else if (worst == PT_TRUTH_LIMIT)
    say(why, why_len,
        "within a documented limit: %s; a slow GPU or proxy thread is named as its rank's slow links — op "
        "durations cannot tell a GPU's wait or a late thread from the network's (the step metrics can, where they "
        "test the rank's edges)",
        verdict);
  else if (worst == PT_TRUTH_EXACT)
    say(why, why_len, "agrees with the ground truth: %s%s", verdict, n ? ", every culprit by rank, channel and cause" : "");
  else
    say(why, why_len,
        "agrees with the ground truth at node level: %s; a faulty GPU inside a node's part of the ring, or a send "
        "on another process's proxy, has no proxy record of its own, and a receive never called reads as a call "
        "not reached",
        verdict);
  rc = worst;
out:
  an_free(&scratch, o);
  return rc;
}
