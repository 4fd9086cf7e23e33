/*
 * complete.c — what the input could not show, so that the verdict never
 * claims more than the dumps prove.
 *
 * "Nothing is stuck" is only true of the records read. It speaks for the
 * job when every rank of every communicator left its latest dump whole;
 * otherwise the analysis says what it did not see (the gaps):
 *   - missing   a rank of the communicator with no dump at all;
 *   - cut       a rank's latest dump without its end (no JSON "end" line,
 *               or its file ends inside a line);
 *   - short     a rank's latest dump holds fewer records than its header
 *               announces (activeOps, finishedOps), or lines of it could
 *               not be read;
 *   - stale     a rank's latest dump is older than the newest of its
 *               peers' by more than the stall time (it may have moved on
 *               since) — not a whole finalize dump, which is final;
 *   - unreadable  an input that could not be read.
 * A verdict that found nothing becomes "incomplete" when there is any gap,
 * and also when every stuck op it found is on a rank whose dump is cut,
 * short or stale (a part of one dump is not a hang). A hang or a slow link
 * found on whole dumps is still reported; each culprit whose evidence
 * touches a rank with a gap is marked `possible`, with those ranks
 * (mark_possible says which ranks its evidence touches), and every rank
 * with a gap may hold the fault. A stall dump that is older than its
 * peers' is taken when its rank no longer moved: it does not make a
 * culprit possible by itself.
 *
 * Dumps whose rank the plugin did not know are kept apart (unknown.c);
 * an_cover_unknown lets them stand for ranks without a dump.
 *
 * A rank whose latest dump is a finalize dump with no active op, whole,
 * finished cleanly; when every rank did, the report says so ("ok — N/N
 * ranks finished cleanly").
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/judge.h"

static const char* const gap_names[PT_GAP_COUNT] = {"missing", "cut", "short", "stale", "unreadable", "mask-off"};

/* ---- gaps -------------------------------------------------------------------- */

static an_gap* add_gap(pt_analysis* a, pt_gap_kind kind, uint64_t comm, int rank) {
  an_gap* g = an_grow(&a->mem, (void**)&a->gaps, &a->n_gaps, &a->cap_gaps, sizeof *g);
  if (!g) return NULL;
  g->pub.kind = kind;
  g->pub.kind_name = gap_names[kind];
  g->pub.comm_hash = comm;
  g->pub.rank = g->pub.rank_last = rank;
  g->pub.dump_seq = g->pub.announced = g->pub.read = g->pub.behind_ms = g->pub.stall_ms = -1;
  g->pub.may_hold_fault = kind != PT_GAP_UNREADABLE;
  g->pub.read_instead = -1;
  return g;
}

static void where(const pt_analysis* a, an_gap* g, const an_dump* d) {
  g->pub.path = a->inputs[d->input].path;
  g->pub.line = d->line;
  g->pub.dump_seq = d->seq;
}

static size_t active_ops(const an_dump* d) {
  size_t n = 0;
  for (size_t i = 0; i < d->n_ops; i++) n += d->ops[i].state != AN_ST_FINISHED;
  return n;
}

static int finished_cleanly(const an_dump* d) {
  return d->trigger == AN_TRIG_FINALIZE && !an_dump_damaged(d) && active_ops(d) == 0 && d->announced_active <= 0;
}

static int gpu_cause(pt_cause c) { return c == PT_CAUSE_GPU_NOT_PRODUCING || c == PT_CAUSE_GPU_NOT_CONSUMING; }

/* 1 when rank r of c has a gap that can hide a fault: missing, cut,
 * short, or stale and not a stall dump. */
static int touches(const an_comm* c, int r) {
  if (r < 0 || r >= c->nranks) return 0;
  return c->ranks[r].gap;
}

/* A rank whose latest dump has ms times only (legacy text; say the JSON
 * copy was damaged and its text twin kept) among dumps with ns times:
 * its ops are not timed, so a slow judgement does not see them. */
static int untimed(const pt_analysis* a, const an_comm* c, int r) {
  return a->slow_possible && r >= 0 && r < c->nranks && c->ranks[r].dump && !c->ranks[r].dump->ns_times;
}

static void because(const pt_analysis* a, an_culprit* q, const an_comm* c, int r, int slow) {
  if (q->n_because > AN_BECAUSE || (!touches(c, r) && !(slow && untimed(a, c, r)))) return;
  for (int i = 0; i < q->n_because && i < AN_BECAUSE; i++)
    if (q->because[i] == r) return;
  if (q->n_because < AN_BECAUSE) q->because[q->n_because] = r;
  q->n_because++; /* AN_BECAUSE + 1: more than the list holds */
}

/* Marks each culprit whose evidence touches a rank with a gap, and says
 * which: the culprit rank, its peer, its candidates; for a GPU cause every
 * rank of its node (the GPU-to-GPU hops there have no proxy op), and every
 * rank whose node no host name of its own says (a missing rank is placed
 * by its neighbours, or nodes are inferred from numbering); for a slow
 * one every rank of its communicator with a gap or whose dump has no ns
 * times — slowness is judged against the other ops of the operation, and
 * those of a rank unseen or untimed are not among them. A rank_missing
 * culprit is possible by its nature. One list of the communicator's ranks
 * with a gap serves all its culprits, and a list stops at AN_BECAUSE + 1
 * ranks, so that a job of many ranks without a dump costs O(ranks +
 * culprits). */
static int mark_possible(pt_analysis* a) {
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    const an_comm* c = &a->comms[ci];
    int* gaps = NULL;
    size_t n = 0;
    for (size_t k = 0; k < a->n_culprits; k++) {
      an_culprit* q = &a->culprits[k];
      pt_culprit* p = &q->pub;
      if (p->comm_hash != c->comm) continue;
      q->n_because = 0;
      const int slow = an_slow_cause(p->cause);
      because(a, q, c, p->rank, slow);
      if (p->cause == PT_CAUSE_RANK_MISSING) {
        p->possible = 1;
        continue;
      }
      because(a, q, c, p->peer, slow);
      for (int i = 0; i < p->n_candidates; i++) because(a, q, c, q->cand[i], slow);
      if (slow || gpu_cause(p->cause)) {
        if (!gaps) {
          gaps = an_alloc(&a->mem, ((size_t)c->nranks + 1) * sizeof *gaps);
          if (!gaps) return PT_AN_ENOMEM;
          for (int r = 0; r < c->nranks; r++)
            if (touches(c, r) || untimed(a, c, r)) gaps[n++] = r;
        }
        const int node = p->rank >= 0 && p->rank < c->nranks ? c->ranks[p->rank].node : -1;
        for (size_t i = 0; i < n && q->n_because <= AN_BECAUSE; i++) {
          /* a rank whose node its own dump does not name may be on any node */
          const an_rank* rk = &c->ranks[gaps[i]];
          const int maybe_here = node < 0 || rk->node < 0 || rk->placed || rk->numbered || rk->node == node;
          if (slow || maybe_here) because(a, q, c, gaps[i], slow);
        }
      }
      p->possible = q->n_because > 0;
    }
    an_free(&a->mem, gaps);
  }
  return 0;
}

static int slow_cause(const pt_analysis* a, const an_culprit* q) {
  (void)a;
  return an_slow_cause(q->pub.cause);
}

int64_t an_comm_newest(const an_comm* c) {
  int64_t newest = 0;
  for (int r = 0; r < c->nranks; r++)
    if (c->ranks[r].dump && c->ranks[r].dump->time_ns > newest) newest = c->ranks[r].dump->time_ns;
  return newest;
}

int an_rank_stale(const pt_analysis* a, const an_comm* c, int r, int64_t newest, int64_t out[2]) {
  const an_dump* d = r >= 0 && r < c->nranks ? c->ranks[r].dump : NULL;
  if (!d || (d->trigger == AN_TRIG_FINALIZE && !an_dump_damaged(d))) return 0;
  int64_t stall_ms = a->stall_ms >= 0 ? a->stall_ms : d->stall_ms > 0 ? d->stall_ms : 1000;
  if (stall_ms > 86400000) stall_ms = 86400000; /* a dump's own value may be anything: a day at most */
  /* times from the input: a difference that would not fit is behind by more than any stall time */
  const uint64_t behind = newest >= d->time_ns ? (uint64_t)newest - (uint64_t)d->time_ns : 0;
  if (out) {
    out[0] = (int64_t)(behind / 1000000u);
    out[1] = stall_ms;
  }
  return d->time_ns && behind > (uint64_t)stall_ms * 1000000u;
}

int an_complete(pt_analysis* a) {
  a->clean_ranks = a->all_ranks = 0;
  for (size_t i = 0; i < a->n_inputs; i++)
    if (a->inputs[i].error) {
      an_gap* g = add_gap(a, PT_GAP_UNREADABLE, 0, -1);
      if (!g) return PT_AN_ENOMEM;
      g->pub.path = a->inputs[i].path;
    }
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    an_comm* c = &a->comms[ci];
    const int64_t newest = an_comm_newest(c);
    int clean = 0;
    for (int r = 0; r < c->nranks; r++) {
      an_rank* k = &c->ranks[r];
      const an_dump* d = k->dump;
      if (!k->present) {
        k->gap = 1;
        an_gap* last = a->n_gaps ? &a->gaps[a->n_gaps - 1] : NULL;
        if (last && last->pub.kind == PT_GAP_MISSING && last->pub.comm_hash == c->comm && last->pub.rank_last == r - 1) {
          last->pub.rank_last = r;
        } else if (!add_gap(a, PT_GAP_MISSING, c->comm, r)) {
          return PT_AN_ENOMEM;
        }
        continue;
      }
      if (!d) continue; /* a dump without records: an empty or rank-unknown one */
      if (k->cut) { /* named; the whole dump before it is judged below */
        an_gap* g = add_gap(a, k->cut->cut ? PT_GAP_CUT : PT_GAP_SHORT, c->comm, r);
        if (!g) return PT_AN_ENOMEM;
        where(a, g, k->cut);
        g->pub.may_hold_fault = 0;
        g->pub.read_instead = d->seq >= 0 ? d->seq : 0;
      }
      if (d->cut) {
        an_gap* g = add_gap(a, PT_GAP_CUT, c->comm, r);
        if (!g) return PT_AN_ENOMEM;
        where(a, g, d);
        k->gap = 1;
      }
      const int64_t missing = an_dump_short(d);
      if (missing > 0 || d->lost) {
        an_gap* g = add_gap(a, PT_GAP_SHORT, c->comm, r);
        if (!g) return PT_AN_ENOMEM;
        where(a, g, d);
        g->pub.read = (int64_t)d->n_ops;
        if (d->announced_active >= 0 || d->announced_finished >= 0)
          g->pub.announced = (d->announced_active > 0 ? d->announced_active : 0) +
                             (d->announced_finished > 0 ? d->announced_finished : 0);
        k->gap = 1;
      }
      /* The host's mask left the proxy events out when it was taken (RAS):
       * calls since ran unrecorded, a hang among them too. */
      if (d->mask_off) {
        an_gap* g = add_gap(a, PT_GAP_MASK_OFF, c->comm, r);
        if (!g) return PT_AN_ENOMEM;
        where(a, g, d);
        k->gap = 1;
        continue;
      }
      if (finished_cleanly(d)) {
        clean++;
        continue;
      }
      /* A finalize dump is final: the communicator was destroyed there and
       * its rank has nothing newer to show, however long its peers took to
       * finalize after it. */
      int64_t ms[2];
      if (an_rank_stale(a, c, r, newest, ms)) {
        an_gap* g = add_gap(a, PT_GAP_STALE, c->comm, r);
        if (!g) return PT_AN_ENOMEM;
        where(a, g, d);
        g->pub.behind_ms = ms[0];
        g->pub.stall_ms = ms[1];
        if (d->trigger != AN_TRIG_STALL) k->gap = 1;
        else g->pub.may_hold_fault = 0;
      }
    }
    /* ranks the rank-unknown dumps stand for, that finished there */
    int covered = 0;
    for (int r = 0; r < c->nranks; r++) covered += c->ranks[r].unknown;
    clean += covered < c->unknown_finished ? covered : c->unknown_finished;
    a->clean_ranks += clean;
    a->all_ranks += c->nranks;
  }
  if (mark_possible(a) != 0) return PT_AN_ENOMEM;
  /* A hang seen only on ranks whose dumps are damaged or old is not
   * proven: the rest of those dumps may show it moving. */
  if (a->verdict == PT_VERDICT_HANG) {
    int whole = a->n_desync > 0; /* ranks that disagree (desync.c): shown by the dumps that are there */
    for (size_t ci = 0; ci < a->n_comms && !whole; ci++) {
      const an_comm* c = &a->comms[ci];
      for (size_t i = c->first_item; i < c->first_item + c->n_items && !whole; i++) {
        const an_item* x = &a->items[i];
        if (!x->stuck) continue;
        whole = !touches(c, x->op->rank);
      }
    }
    if (!whole) a->verdict = PT_VERDICT_INCOMPLETE;
  }
  if (a->verdict == PT_VERDICT_OK && a->n_gaps) a->verdict = PT_VERDICT_INCOMPLETE;
  /* Slow edges do not show that nothing is stuck where the dumps do not
   * reach (a rank not seen, the proxy events off in the hung call): the
   * job may be hung there, and an edge read slow before it is no culprit
   * of that. The edges stay, as what was read; their culprits go. */
  int unseen = 0;
  for (size_t i = 0; i < a->n_gaps && !unseen; i++) unseen = a->gaps[i].pub.may_hold_fault;
  if (a->verdict == PT_VERDICT_SLOW && unseen) {
    a->verdict = PT_VERDICT_INCOMPLETE;
    an_drop_culprits(a, slow_cause);
    a->n_metric_culprits = 0;
  }
  return 0;
}

void an_complete_free(pt_analysis* a) {
  an_free(&a->mem, a->gaps);
  a->gaps = NULL;
  a->n_gaps = a->cap_gaps = 0;
}

void an_gap_summary(const pt_analysis* a, char* buf, size_t n) {
  static const char* const one[PT_GAP_COUNT] = {"rank without a dump", "cut dump", "dump short of records",
                                                "dump older than its peers'", "unreadable input",
                                                "dump with the proxy events off"};
  static const char* const many[PT_GAP_COUNT] = {"ranks without a dump", "cut dumps", "dumps short of records",
                                                 "dumps older than their peers'", "unreadable inputs",
                                                 "dumps with the proxy events off"};
  size_t count[PT_GAP_COUNT] = {0};
  for (size_t i = 0; i < a->n_gaps; i++) {
    const pt_gap* g = &a->gaps[i].pub;
    count[g->kind] += g->kind == PT_GAP_MISSING ? (size_t)(g->rank_last - g->rank + 1) : 1;
  }
  size_t used = 0;
  buf[0] = 0;
  for (int k = 0; k < PT_GAP_COUNT; k++) {
    if (!count[k] || used >= n) continue;
    int w = snprintf(buf + used, n - used, "%s%zu %s", used ? ", " : "", count[k], count[k] == 1 ? one[k] : many[k]);
    if (w > 0) used += (size_t)w;
  }
}

/* ---- the API ---------------------------------------------------------------- */

size_t pt_analysis_gap_count(const pt_analysis* a) { return a ? a->n_gaps : 0; }

const pt_gap* pt_analysis_gap(const pt_analysis* a, size_t i) { return a && i < a->n_gaps ? &a->gaps[i].pub : NULL; }

void pt_analysis_finished(const pt_analysis* a, int* clean, int* ranks) {
  if (clean) *clean = a ? a->clean_ranks : 0;
  if (ranks) *ranks = a ? a->all_ranks : 0;
}
