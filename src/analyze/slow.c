/*
 * slow.c — slow, not hung: ranks whose links are much slower than the
 * others'.
 *
 * Needs ns times (JSON dumps): legacy ms times cannot time an op that takes
 * microseconds. Every op that completed, in the latest dumps, has a
 * duration (creation to last progress). Ops that move the same bytes the
 * same way (communicator, call, pattern, bytes, steps and direction: not
 * one opCount, since the periodic dumps of different ranks hold different
 * operations) should take about as long. A rank is slow when its ops — those it sends or
 * receives, and its peers' ops with it — take at least `slow-factor` times
 * the median of the *other* ops of their operation (leaving the rank out,
 * so that a slow rank among few, half of whose edges it touches, still
 * stands out): slow when at least a quarter of its ops, and two of two
 * operations, are (a pipelined ring's ops hide a slow link, below; the
 * ops of one operation alone may be a thread that was not scheduled). The rank slow against the most
 * peers is taken first, and its ops leave the comparison, so that a peer
 * slow only with it is explained. Each slow rank is a culprit; the edges it
 * touches are listed. A rank slow with one peer only is a slow link between
 * the two: the same ops time both ends, so the culprit names both. With no slow rank, an edge at
 * least half of whose ops take `slow-factor` times their operation's
 * median is a culprit of its own.
 *
 * A pipelined ring hides a slow link (every edge waits for the slowest, so
 * all take as long); point-to-point operations show it. An operation needs
 * at least four timed ops for its median to mean something.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/judge.h"

/* A timed op. Its rank and create time are copied from the op while the
 * items are read in order (evidence), so that the passes over operations
 * (concurrent) do not chase op pointers across the records. */
typedef struct {
  int32_t item;
  int32_t rank;
  uint64_t group;
  int64_t dur;
  int64_t create;
} timed;

typedef struct {
  uint64_t group;
  int rank;
  int32_t q; /* index into the sorted timed array */
} touch;

typedef struct {
  uint64_t comm;
  int64_t op_count; /* the operation the op belongs to */
  int rank, peer;
  double ratio;
  double p; /* the chance that another op of its operation is as slow (below) */
} rank_ratio;

static int by_group_dur(const void* x, const void* y) {
  const timed* a = x;
  const timed* b = y;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  return (a->dur > b->dur) - (a->dur < b->dur);
}

static int by_group_rank(const void* x, const void* y) {
  const touch* a = x;
  const touch* b = y;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  if (a->rank != b->rank) return a->rank - b->rank;
  return a->q - b->q;
}

static int by_rank_ratio(const void* x, const void* y) {
  const rank_ratio* a = x;
  const rank_ratio* b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->rank != b->rank) return a->rank - b->rank;
  if (a->ratio != b->ratio) return (a->ratio > b->ratio) - (a->ratio < b->ratio);
  return a->peer - b->peer;
}

static int sender(const an_op* op) { return op->is_send ? op->rank : op->peer; }
static int receiver(const an_op* op) { return op->is_send ? op->peer : op->rank; }

/* One end of a transfer on an edge: the edge (index into a->slow), the
 * operation, and where the op is in the timed array. */
typedef struct {
  int32_t edge;
  int32_t q;
  int64_t op_count;
} transfer_end;

static int by_edge_transfer(const void* x, const void* y) {
  const transfer_end* a = x;
  const transfer_end* b = y;
  if (a->edge != b->edge) return a->edge - b->edge;
  if (a->op_count != b->op_count) return a->op_count < b->op_count ? -1 : 1;
  return a->q - b->q;
}

/* The edge of an op in a->slow (added if new), through the index. */
static an_slow_edge* edge_of(pt_analysis* a, an_map* idx, const an_op* op) {
  uint64_t key = an_mix(an_mix(an_mix(0x5ed9e, op->comm), (uint64_t)(uint32_t)op->channel),
                        ((uint64_t)(uint32_t)sender(op) << 32) | (uint32_t)receiver(op));
  for (int32_t k = an_map_first(idx, key); k >= 0; k = an_map_next(idx, k)) {
    an_slow_edge* e = &a->slow[k];
    if (e->comm == op->comm && e->sender == sender(op) && e->receiver == receiver(op) && e->channel == op->channel)
      return e;
  }
  an_slow_edge* e = an_grow(&a->mem, (void**)&a->slow, &a->n_slow, &a->cap_slow, sizeof *e);
  if (!e) return NULL;
  if (an_map_add(&a->mem, idx, key, (int32_t)(a->n_slow - 1)) != 0) {
    a->n_slow--;
    return NULL;
  }
  e->comm = op->comm;
  e->sender = sender(op);
  e->receiver = receiver(op);
  e->channel = op->channel;
  return e;
}

/* A slow culprit whose slowness the other slow ranks explain (an_slow
 * marks it so, then drops it). */
#define SLOW_EXPLAINED (-2)

static int explained(const pt_analysis* a, const an_culprit* q) {
  (void)a;
  return q->pub.rank == SLOW_EXPLAINED;
}

/* q slow with one peer only: the link between the two, and the records
 * cannot say which end is slow (a pair's ops are the same ops) — its
 * candidates (three slots at least: an_slow_culprit, an_slow_tied) are
 * the two ends. */
static void slow_pair(an_culprit* q, int peer) {
  q->pub.peer = peer;
  q->cand[0] = q->pub.rank;
  q->cand[1] = peer;
  q->cand[2] = -1;
  q->pub.n_candidates = 2;
}

void an_drop_culprits(pt_analysis* a, int (*drop)(const pt_analysis* a, const an_culprit* q)) {
  size_t keep = 0;
  for (size_t k = 0; k < a->n_culprits; k++)
    if (!drop(a, &a->culprits[k])) a->culprits[keep++] = a->culprits[k];
    else an_free(&a->mem, a->culprits[k].cand);
  a->n_culprits = keep;
}

an_culprit* an_slow_culprit(pt_analysis* a, uint64_t comm, int rank) {
  an_culprit* q = an_grow(&a->mem, (void**)&a->culprits, &a->n_culprits, &a->cap_culprits, sizeof *q);
  if (!q) return NULL;
  q->cand = an_alloc(&a->mem, 3 * sizeof *q->cand);
  if (!q->cand) {
    a->n_culprits--;
    return NULL;
  }
  q->cand[0] = rank;
  q->cand[1] = q->cand[2] = -1;
  q->origin = -1;
  pt_culprit* p = &q->pub;
  p->cause = PT_CAUSE_SLOW_LINK;
  p->comm_hash = comm;
  p->rank = rank;
  p->peer = p->channel = p->is_send = -1;
  p->op_count = p->step = p->n_steps = -1;
  p->n_candidates = 1;
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    const an_comm* c = &a->comms[ci];
    if (c->comm != comm) continue;
    q->comm_index = (int)ci;
    const an_dump* d = rank >= 0 && rank < c->nranks ? c->ranks[rank].dump : NULL;
    an_copy(q->host, sizeof q->host, d ? d->host : "");
    p->pid = d ? d->pid : 0;
  }
  return q;
}

/* Peers as slow as q's rank (the records cannot tell which of them are
 * the slow ones): its candidates after its own rank. 0, or PT_AN_ENOMEM. */
int an_slow_tied(pt_analysis* a, an_culprit* q, const int* peers, int n) {
  if (n <= 0) return 0;
  int* cand = an_alloc(&a->mem, (size_t)(n + 2) * sizeof *cand);
  if (!cand) return PT_AN_ENOMEM;
  cand[0] = q->pub.rank;
  memcpy(cand + 1, peers, (size_t)n * sizeof *cand);
  cand[n + 1] = -1;
  an_free(&a->mem, q->cand);
  q->cand = cand;
  q->pub.n_candidates = n + 1;
  return 0;
}

/* Appends to q's summary the peers an_slow_tied made its candidates. */
void an_slow_tied_words(an_culprit* q) {
  const pt_culprit* p = &q->pub;
  if (p->peer >= 0 || p->n_candidates < 2) return;
  size_t len = strlen(q->summary);
  int w = snprintf(q->summary + len, sizeof q->summary - len, "; or the slow ones are its peer%s",
                   p->n_candidates == 2 ? ", rank" : "s, ranks");
  for (int c = 1; c < p->n_candidates && w >= 0 && (size_t)w < sizeof q->summary - len; c++) {
    len += (size_t)w;
    w = snprintf(q->summary + len, sizeof q->summary - len, "%s %d", c > 1 ? "," : "", q->cand[c]);
  }
  len = strlen(q->summary);
  snprintf(q->summary + len, sizeof q->summary - len,
           ", whose links are as slow: they meet each other's, so the records cannot tell which of them are slow");
}

/* Whether an op touches a rank already found slow (culprits first …
 * upto-1, but for `skip`). */
static int touches_slow(const pt_analysis* a, size_t first, size_t upto, size_t skip, const an_op* op) {
  for (size_t k = first; k < upto; k++) {
    if (k == skip) continue;
    const pt_culprit* p = &a->culprits[k].pub;
    if (p->comm_hash == op->comm && (p->rank == op->rank || p->rank == op->peer)) return 1;
  }
  return 0;
}

/* Leave one rank out: each rank's ops against the median of the other ops
 * of their operation, ops that touch the ranks already found slow (the
 * culprits first … upto-1, but for `skip`) left out of everything. Fills
 * rr (sorted by comm, rank, ratio) and, per timed op, its highest such
 * ratio in loo; returns how many ratios. */
static size_t rank_ratios(const pt_analysis* a, const timed* t, size_t n, size_t first, size_t upto, size_t skip,
                          touch* tc, rank_ratio* rr, double* loo, int32_t* kept, int32_t* pos) {
  size_t ntc = 0;
  for (size_t q = 0; q < n; q++) {
    loo[q] = 0;
    const an_op* op = a->items[t[q].item].op;
    pos[q] = -1;
    if (touches_slow(a, first, upto, skip, op)) continue;
    tc[ntc++] = (touch){t[q].group, op->rank, (int32_t)q};
    if (op->peer != op->rank) tc[ntc++] = (touch){t[q].group, op->peer, (int32_t)q};
  }
  qsort(tc, ntc, sizeof *tc, by_group_rank);
  size_t nrr = 0, gs = 0, i = 0;
  while (i < ntc) {
    /* One group: its ops still compared, in duration order. */
    while (gs < n && t[gs].group != tc[i].group) gs++; /* groups come in the same order */
    size_t ge = gs, m = 0;
    for (; ge < n && t[ge].group == tc[i].group; ge++)
      if (!touches_slow(a, first, upto, skip, a->items[t[ge].item].op)) {
        pos[ge] = (int32_t)m;
        kept[m++] = (int32_t)ge;
      }
    /* Each rank of it: the middle of the others, its own ops skipped
     * (their positions ascend, so each one at or below the mark moves it
     * up by one). */
    while (i < ntc && tc[i].group == t[gs].group) {
      size_t j = i;
      while (j < ntc && tc[j].group == tc[i].group && tc[j].rank == tc[i].rank) j++;
      size_t k = j - i;
      if (m >= 4 && m - k >= 2) {
        size_t at = (m - k) / 2;
        for (size_t r = i; r < j; r++)
          if ((size_t)pos[tc[r].q] <= at) at++;
        int64_t base = t[kept[at]].dur;
        /* The null: how often an op of this operation that does not touch
         * the rank is `slow-factor` times their median — the others at or
         * above it (kept is in duration order), its own left out, with one
         * slow and one not added (Laplace), so that few ops claim no
         * certainty. */
        double thr = a->slow_factor * (double)base;
        size_t lo = 0, hi = m;
        while (lo < hi) {
          size_t mid = (lo + hi) / 2;
          if ((double)t[kept[mid]].dur >= thr) hi = mid;
          else lo = mid + 1;
        }
        size_t slow_others = m - lo;
        for (size_t r = i; r < j; r++) slow_others -= (double)t[tc[r].q].dur >= thr;
        double p = ((double)slow_others + 1) / ((double)(m - k) + 2);
        for (size_t q = i; q < j && base > 0; q++) {
          const an_op* op = a->items[t[tc[q].q].item].op;
          double x = (double)t[tc[q].q].dur / (double)base;
          rr[nrr++] = (rank_ratio){op->comm, an_op_call(op), tc[q].rank,
                                   op->rank == tc[q].rank ? op->peer : op->rank, x, p};
          if (x > loo[tc[q].q]) loo[tc[q].q] = x;
        }
      }
      i = j;
    }
    gs = ge;
  }
  qsort(rr, nrr, sizeof *rr, by_rank_ratio);
  return nrr;
}

/* Whether slow ops belong to two operations at least. A thread that was
 * not scheduled for a while slows every op it had in flight — those of
 * one operation, on every channel and peer at once; a slow link or GPU
 * slows each operation that crosses it. */
static int in_two_operations(const rank_ratio* r, size_t n) {
  for (size_t k = 1; k < n; k++)
    if (r[k].op_count != r[0].op_count) return 1;
  return 0;
}

static int by_int(const void* x, const void* y) { return (*(const int*)x > *(const int*)y) - (*(const int*)x < *(const int*)y); }

/* Evidence: the ops that may time an edge. A completed op of a dump with ns
 * times, with a creation and a last progress; in a communicator that hangs,
 * only those that ended before the first stuck op of the communicator was
 * created — an op in flight once the hang began spent its time waiting
 * behind it, which says nothing of its own link. */
static size_t evidence(pt_analysis* a, timed* t) {
  size_t n = 0;
  an_slow_evidence* ev = &a->slow_ev;
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    const an_comm* c = &a->comms[ci];
    int64_t cut = 0; /* the hang's start; 0: no hang */
    for (size_t i = c->first_item; i < c->first_item + c->n_items; i++) {
      const an_item* x = &a->items[i];
      if (x->stuck && x->op->create_ns && (!cut || x->op->create_ns < cut)) cut = x->op->create_ns;
      if (x->stuck && !x->op->create_ns) cut = INT64_MIN; /* a stuck op of unknown start: nothing is before it */
    }
    for (size_t i = c->first_item; i < c->first_item + c->n_items; i++) {
      const an_op* op = a->items[i].op;
      if (!a->items[i].dump->ns_times || an_op_call(op) < 0 || op->n_steps <= 0 || op->cnt[AN_C_DONE] < op->n_steps)
        continue;
      int64_t end = op->progress_ns ? op->progress_ns : op->last_ns;
      if (!op->create_ns || end <= op->create_ns) continue;
      ev->timed++;
      if (cut && end >= cut) {
        ev->after_hang++;
        continue;
      }
      /* Ops that move the same bytes the same way at the same time: one
       * operation (its call: an_op_call), call kind, size, step count and
       * direction.
       * The ops of one operation run together, so whatever else slowed the
       * machine then — a busy CPU, a thread not scheduled — slowed them
       * alike; a slow link slows its own. */
      uint64_t g = an_mix(an_mix(0x5105, op->comm), (uint64_t)an_op_call(op));
      for (const char* k = an_op_coll(op); k && *k; k++) g = an_mix(g, (unsigned char)*k);
      g = an_mix(an_mix(an_mix(g, (uint64_t)(uint32_t)op->pattern), op->nbytes), (uint64_t)op->n_steps);
      g = an_mix(g, (uint64_t)op->is_send);
      t[n++] = (timed){(int32_t)i, op->rank, g, end - op->create_ns, op->create_ns};
    }
  }
  return n;
}

/* The ops of one operation that ran at the same time: each operation's ops
 * (t sorted by group and duration) split, in the order they were created,
 * into windows of AN_SLOW_WINDOW times the operation's median duration —
 * a window closes only once it holds AN_SLOW_MIN_GROUP ops of
 * AN_SLOW_WINDOW_RANKS ranks of ordinary speed, and a last one with fewer
 * joins the one before, so that a rank that lags behind (a slow one does),
 * whose late ops would make a window of their own, is still compared with
 * the others. The ranks of a large job are far apart in time — one may run an operation seconds after another, while the machine
 * was otherwise busy — and what slowed the machine then slowed the ops
 * that ran with it alike. `when` is scratch for the largest operation's ops. */
typedef struct {
  int64_t create;
  size_t q;
} when_t;

static int by_create(const void* x, const void* y) {
  const when_t* a = x;
  const when_t* b = y;
  if (a->create != b->create) return a->create < b->create ? -1 : 1;
  return (a->q > b->q) - (a->q < b->q);
}

static void concurrent(const pt_analysis* a, timed* t, size_t n, when_t* when) {
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && t[j].group == t[i].group) j++;
    const int64_t mid = t[i + (j - i) / 2].dur; /* from the input: may be anything */
    const uint64_t w = mid <= 0 ? 0 : mid > INT64_MAX / AN_SLOW_WINDOW ? INT64_MAX : (uint64_t)mid * AN_SLOW_WINDOW;
    size_t m = j - i;
    for (size_t q = i; q < j; q++) when[q - i] = (when_t){t[q].create, q};
    qsort(when, m, sizeof *when, by_create);
    uint64_t win = 0;
    size_t in_win = 0, last_start = 0;
    int ranks[AN_SLOW_WINDOW_RANKS], n_ranks = 0; /* its first distinct ranks */
    int64_t start = when[0].create;
    for (size_t k = 0; k < m; k++) {
      if (in_win >= AN_SLOW_MIN_GROUP && n_ranks >= AN_SLOW_WINDOW_RANKS && (uint64_t)when[k].create - (uint64_t)start > w) { /* sorted: no wrap */
        win++;
        in_win = 0;
        n_ranks = 0;
        start = when[k].create;
        last_start = k;
      }
      when[k].create = (int64_t)win; /* reused: its window */
      /* Only ops of ordinary speed make a window: a slow link's or GPU's
       * ops and its peers' with it lag behind together, and counted here
       * they would make a window, and a baseline, of their own — one slow
       * rank's ops the measure of another's. */
      if ((double)t[when[k].q].dur >= a->slow_factor * (double)mid) continue;
      in_win++;
      int r = t[when[k].q].rank, seen = 0;
      for (int x = 0; x < n_ranks && !seen; x++) seen = ranks[x] == r;
      if (!seen && n_ranks < AN_SLOW_WINDOW_RANKS) ranks[n_ranks++] = r;
    }
    if (win > 0 && (in_win < AN_SLOW_MIN_GROUP || n_ranks < AN_SLOW_WINDOW_RANKS))
      for (size_t k = last_start; k < m; k++) when[k].create = (int64_t)win - 1;
    for (size_t k = 0; k < m; k++) t[when[k].q].group = an_mix(t[when[k].q].group, (uint64_t)when[k].create);
    i = j;
  }
}

/* Statistics: each operation's baseline, the median of its timed ops —
 * given AN_SLOW_MIN_GROUP of them at least, and a median of
 * AN_SLOW_MIN_SPAN_NS or more (shorter spans are of the order of a thread
 * that was not scheduled, or of the clock's own steps: a factor between
 * them is noise). The ops of operations without a baseline leave t;
 * global[q] is each kept op's duration over its baseline. Returns how many
 * ops are kept. */
static size_t baselines(pt_analysis* a, timed* t, size_t n, double* global, double* gp) {
  an_slow_evidence* ev = &a->slow_ev;
  size_t kept = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && t[j].group == t[i].group) j++;
    int64_t med = t[i + (j - i) / 2].dur;
    ev->groups++;
    if (j - i < AN_SLOW_MIN_GROUP) {
      ev->few_groups++;
    } else if (med < AN_SLOW_MIN_SPAN_NS) {
      ev->short_groups++;
      if (med > ev->short_median_ns) ev->short_median_ns = med;
    } else {
      /* each op's null: the others of its operation as slow (Laplace) */
      size_t slow = 0;
      for (size_t q = i; q < j; q++) slow += (double)t[q].dur >= a->slow_factor * (double)med;
      for (size_t q = i; q < j; q++) {
        ev->used_p2p += (uint64_t)an_op_p2p(a->items[t[q].item].op);
        global[kept] = (double)t[q].dur / (double)med;
        gp[kept] = ((double)slow - (global[kept] >= a->slow_factor) + 1) / ((double)(j - i - 1) + 2);
        t[kept++] = t[q];
      }
    }
    i = j;
  }
  ev->used = kept;
  if (kept && !ev->used_p2p) ev->state = AN_SJ_RING;
  else if (kept) ev->state = ev->few_groups || ev->short_groups ? AN_SJ_PARTIAL : AN_SJ_JUDGED;
  else if (!ev->timed) ev->state = AN_SJ_NONE;
  else if (ev->after_hang == ev->timed) ev->state = AN_SJ_HANG;
  else if (ev->short_groups) ev->state = AN_SJ_SHORT;
  else ev->state = AN_SJ_FEW;
  return kept;
}

void an_slow_judgement_words(const pt_analysis* a, char* buf, size_t n) {
  const an_slow_evidence* ev = &a->slow_ev;
  if (!n) return;
  buf[0] = 0;
  if (!a->slow_possible) {
    snprintf(buf, n, "the dumps have millisecond times only, too coarse to time ops");
    return;
  }
  switch (ev->state) {
    case AN_SJ_JUDGED: break;
    case AN_SJ_NONE: snprintf(buf, n, "no completed op with ns times to time"); break;
    case AN_SJ_HANG:
      snprintf(buf, n, "every one of the %llu completed ops ended once the hang had begun: their time is waiting",
               (unsigned long long)ev->timed);
      break;
    case AN_SJ_SHORT:
      snprintf(buf, n,
               "the ops are too short to time: their median is %.0f us, under the %d us a timing judgement needs "
               "(unpaced emulated ops last microseconds)",
               (double)ev->short_median_ns / 1e3, AN_SLOW_MIN_SPAN_NS / 1000);
      break;
    case AN_SJ_PARTIAL:
      snprintf(buf, n,
               "%u of %u operations could not be timed (%u with fewer than %d timed ops, %u too short: median up to "
               "%.0f us, under %d us)",
               ev->few_groups + ev->short_groups, ev->groups, ev->few_groups, AN_SLOW_MIN_GROUP, ev->short_groups,
               (double)ev->short_median_ns / 1e3, AN_SLOW_MIN_SPAN_NS / 1000);
      break;
    case AN_SJ_ALONE:
      snprintf(buf, n, "every timed op touches the same ranks: no rank has ops of others to be compared with");
      break;
    case AN_SJ_RING:
      snprintf(buf, n,
               "only ring ops were timed: a pipelined ring waits for its slowest edge on every edge, which hides a "
               "slow link (point-to-point ops show it)");
      break;
    case AN_SJ_FEW:
      snprintf(buf, n, "too few timed ops: %llu, and no operation with the %d a baseline needs",
               (unsigned long long)(ev->timed - ev->after_hang), AN_SLOW_MIN_GROUP);
      break;
  }
}

/* Per-peer tallies of one rank's ratios: peer * 2 + slow, sorted. The
 * peers with whom a quarter of its ops, and two at least, are slow: how
 * many, the first `max` of them in list[], in peer order. */
static size_t majority_peers(int* pk, size_t np, int* list, size_t max) {
  qsort(pk, np, sizeof *pk, by_int);
  size_t peers = 0;
  for (size_t k = 0; k < np;) {
    size_t m = k, slow = 0;
    while (m < np && pk[m] / 2 == pk[k] / 2) slow += pk[m++] & 1;
    if (slow >= 2 && slow * 4 >= m - k) {
      if (peers < max) list[peers] = pk[k] / 2;
      peers++;
    }
    k = m;
  }
  return peers;
}

int an_slow(pt_analysis* a) {
  memset(&a->slow_ev, 0, sizeof a->slow_ev);
  if (!a->slow_possible) return 0;
  /* The scratch of the judgement, each sized by what it holds: the timed
   * ops, then the ops kept against a baseline (often far fewer: at
   * 100 000 ranks the per-op arrays sized by every op were the analysis'
   * largest block). */
  size_t cap = a->n_items + 1;
  timed* t = an_alloc(&a->mem, cap * sizeof *t);
  touch* tc = NULL;
  rank_ratio* rr = NULL;
  double *global = NULL, *gp = NULL, *pv = NULL, *loo = NULL, *xmin = NULL;
  double* dp = an_alloc(&a->mem, (AN_SLOW_DP_MAX + 1) * sizeof *dp); /* an_upper_tail: k <= AN_SLOW_DP_MAX */
  when_t* when = NULL;
  int32_t *kept = NULL, *pos = NULL;
  int* peers_of = NULL;
  an_map idx;
  int rc = an_map_init(&a->mem, &idx, 64);
  if (!t || !dp || rc) {
    rc = PT_AN_ENOMEM;
    goto out;
  }
  size_t n = evidence(a, t);
  cap = n + 1;
  global = an_alloc(&a->mem, cap * sizeof *global); /* per timed op: against its operation */
  gp = an_alloc(&a->mem, cap * sizeof *gp);         /* per timed op: its null chance of that */
  if (!global || !gp) {
    rc = PT_AN_ENOMEM;
    goto out;
  }
  qsort(t, n, sizeof *t, by_group_dur);
  size_t largest = 1; /* concurrent() takes one operation at a time */
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i; j < n && t[j].group == t[i].group; j++) {
    }
    if (j - i > largest) largest = j - i;
  }
  if (!(when = an_alloc(&a->mem, largest * sizeof *when))) {
    rc = PT_AN_ENOMEM;
    goto out;
  }
  concurrent(a, t, n, when);
  qsort(t, n, sizeof *t, by_group_dur);
  n = baselines(a, t, n, global, gp);
  cap = n + 1;
  tc = an_alloc(&a->mem, 2 * cap * sizeof *tc);
  rr = an_alloc(&a->mem, 2 * cap * sizeof *rr);
  pv = an_alloc(&a->mem, 2 * cap * sizeof *pv);     /* one rank's null chances */
  loo = an_alloc(&a->mem, cap * sizeof *loo);       /* against the others, its rank left out */
  kept = an_alloc(&a->mem, cap * sizeof *kept);     /* scratch of rank_ratios */
  pos = an_alloc(&a->mem, cap * sizeof *pos);
  peers_of = an_alloc(&a->mem, 2 * cap * sizeof *peers_of);
  if (!tc || !rr || !pv || !loo || !kept || !pos || !peers_of) {
    rc = PT_AN_ENOMEM;
    goto out;
  }

  /* Slow ranks, one at a time: the one slow against the most peers first;
   * then its ops leave the comparison, so a peer slow only with it is
   * explained. */
  size_t first = a->n_culprits;
  /* Each rank's slow peers before any rank was named (round 0): a named
   * rank's slow peers with as many slow peers of their own explain its
   * slow ops as well — three ranks whose links all run slow, two of them
   * slow, read the same whichever two — so they are its candidates. */
  typedef struct {
    uint64_t comm;
    int rank;
    size_t peers;
  } rank_peers;
  rank_peers* r0 = NULL;
  size_t n_r0 = 0;
  enum { MAX_TIED = 8 };
  for (int round = 0; round < 64 && rc == 0; round++) {
    int best = -1;
    uint64_t best_comm = 0;
    size_t best_peers = 0, best_slow = 0;
    int best_peer = -1;
    double best_med = 0;
    int best_list[MAX_TIED];
    size_t n_best_list = 0;
    size_t nrr = rank_ratios(a, t, n, first, a->n_culprits, SIZE_MAX, tc, rr, loo, kept, pos);
    if (round == 0 && nrr && !(r0 = an_alloc(&a->mem, nrr * sizeof *r0))) {
      rc = PT_AN_ENOMEM;
      break;
    }
    /* every op touches the same ranks (two ranks, or each with one peer
     * whose ops are all it has): none has others to be compared with */
    if (round == 0 && !nrr && n) a->slow_ev.state = AN_SJ_ALONE;
    /* The ranks tested: each at AN_SLOW_ALPHA over their number, so that
     * the chance of naming any rank of a job without a slow one stays
     * within AN_SLOW_ALPHA (Bonferroni). */
    size_t tested = 0;
    for (size_t i = 0; i < nrr; i++) tested += i == 0 || rr[i].comm != rr[i - 1].comm || rr[i].rank != rr[i - 1].rank;
    for (size_t i = 0; i < nrr;) {
      size_t j = i;
      while (j < nrr && rr[j].comm == rr[i].comm && rr[j].rank == rr[i].rank) j++;
      /* Slow in a quarter of its ops at least, and AN_SLOW_MIN_RANK_SLOW
       * of them in two operations (a slow link shows in its point-to-point
       * ops; a pipelined ring's hide it; the ops of one operation alone
       * may be a thread that was not scheduled): the factor is the median
       * of those. Its peers count where a quarter of its ops with them,
       * and two, are slow: one slow op beside a peer is not a slow link. */
      size_t slow = 0;
      for (size_t k = i; k < j; k++) slow += rr[k].ratio >= a->slow_factor;
      double med = slow ? rr[j - slow + slow / 2].ratio : 0;
      if (slow < AN_SLOW_MIN_RANK_SLOW || slow * 4 < j - i || !in_two_operations(rr + j - slow, slow)) med = 0;
      /* … and more slow ops than chance gives: were each of its ops as
       * likely slow as the others of its operation, `slow` of them would
       * be slow with a chance of at most AN_SLOW_ALPHA / tested. */
      if (med > 0) {
        for (size_t k = i; k < j; k++) pv[k - i] = rr[k].p;
        if (!an_slow_claim(an_upper_tail(pv, 0, j - i, slow, dp), tested, AN_SLOW_ALPHA)) med = 0;
      }
      size_t np = 0;
      for (size_t k = i; k < j; k++) peers_of[np++] = rr[k].peer * 2 + (rr[k].ratio >= a->slow_factor);
      int plist[MAX_TIED];
      size_t peers = med > 0 ? majority_peers(peers_of, np, plist, MAX_TIED) : 0;
      if (round == 0) r0[n_r0++] = (rank_peers){rr[i].comm, rr[i].rank, peers};
      if (med >= a->slow_factor && peers > 0 &&
          (peers > best_peers || (peers == best_peers && (slow > best_slow || (slow == best_slow && med > best_med))))) {
        best = rr[i].rank;
        best_comm = rr[i].comm;
        best_peers = peers;
        best_slow = slow;
        best_peer = plist[0];
        best_med = med;
        n_best_list = peers < MAX_TIED ? peers : MAX_TIED; /* its slow peers */
        memcpy(best_list, plist, n_best_list * sizeof *plist);
      }
      i = j;
    }
    if (best < 0) break;
    an_culprit* q = an_slow_culprit(a, best_comm, best);
    if (!q) {
      rc = PT_AN_ENOMEM;
      break;
    }
    q->pub.slow_factor = best_med;
    if (best_peers == 1) {
      slow_pair(q, best_peer);
    } else {
      /* its own slow peers before any rank was named — or, where it
       * passed no test then (the other slow ranks' ops raised the chance
       * of a slow op past what its own showed), when it was named */
      size_t own = 0;
      for (size_t k = 0; k < n_r0; k++)
        if (r0[k].comm == best_comm && r0[k].rank == best) own = r0[k].peers;
      if (!own) own = best_peers;
      int tied[MAX_TIED];
      int n_tied = 0;
      for (size_t b = 0; b < n_best_list; b++)
        for (size_t k = 0; k < n_r0; k++)
          if (r0[k].comm == best_comm && r0[k].rank == best_list[b] && r0[k].peers >= own && n_tied < MAX_TIED)
            tied[n_tied++] = best_list[b];
      if ((rc = an_slow_tied(a, q, tied, n_tied)) != 0) break;
    }
  }
  an_free(&a->mem, r0);
  /* Each slow rank's peers again, the ops that touch the other slow ranks
   * left out — those named after it too: a rank between two slow ones is
   * slow with both, and named first it took their slowness for its own.
   * Slow with one peer once the others explain the rest, it is the link
   * between the two, either end (as a pair found so at once); slow with
   * none, the others explain all of it, and it is no culprit. */
  for (size_t k = first; a->n_culprits - first >= 2 && k < a->n_culprits && rc == 0; k++) {
    an_culprit* q = &a->culprits[k];
    if (q->pub.peer >= 0) continue;
    size_t nrr = rank_ratios(a, t, n, first, a->n_culprits, k, tc, rr, loo, kept, pos);
    size_t np = 0;
    for (size_t i = 0; i < nrr; i++)
      if (rr[i].comm == q->pub.comm_hash && rr[i].rank == q->pub.rank)
        peers_of[np++] = rr[i].peer * 2 + (rr[i].ratio >= a->slow_factor);
    int plist[MAX_TIED];
    size_t peers = majority_peers(peers_of, np, plist, MAX_TIED);
    if (peers == 1) slow_pair(q, plist[0]);
    else if (peers == 0) q->pub.rank = SLOW_EXPLAINED;
  }
  if (rc == 0) an_drop_culprits(a, explained);
  /* Each op's ratio with its rank left out (no rank excluded), for the
   * edges of the slow ranks. */
  if (a->n_culprits > first) rank_ratios(a, t, n, first, first, SIZE_MAX, tc, rr, loo, kept, pos);
  /* With no slow rank, an edge's op counts slow only where every timed end
   * of its transfer is: a slow link times both ends of its transfers
   * alike, while a proxy thread that lost the CPU, or one heavy-tailed
   * step, stretches one end's op only (the two ends of one transfer are
   * one piece of evidence, not two). xmin: per timed op, the least ratio
   * among the ends of its transfer. */
  if (a->n_culprits == first && rc == 0) {
    transfer_end* te = an_alloc(&a->mem, cap * sizeof *te);
    xmin = an_alloc(&a->mem, cap * sizeof *xmin);
    if (!te || !xmin) {
      an_free(&a->mem, te);
      rc = PT_AN_ENOMEM;
      goto out;
    }
    size_t m = 0;
    for (size_t q = 0; q < n; q++) {
      if (global[q] == 0) continue;
      const an_op* op = a->items[t[q].item].op;
      an_slow_edge* e = edge_of(a, &idx, op);
      if (!e) {
        rc = PT_AN_ENOMEM;
        break;
      }
      te[m++] = (transfer_end){(int32_t)(e - a->slow), (int32_t)q, an_op_call(op)};
    }
    qsort(te, m, sizeof *te, by_edge_transfer);
    for (size_t i = 0, j; i < m; i = j) {
      double lo = global[te[i].q];
      for (j = i; j < m && te[j].edge == te[i].edge && te[j].op_count == te[i].op_count; j++)
        if (global[te[j].q] < lo) lo = global[te[j].q];
      for (size_t k = i; k < j; k++) xmin[te[k].q] = lo;
    }
    an_free(&a->mem, te);
  }
  /* Their edges; or, with no slow rank, the edges that are slow alone. */
  for (size_t q = 0; q < n && rc == 0; q++) {
    const an_op* op = a->items[t[q].item].op;
    int touched = touches_slow(a, first, a->n_culprits, SIZE_MAX, op);
    if (a->n_culprits > first ? !touched : global[q] == 0) continue;
    an_slow_edge* e = edge_of(a, &idx, op);
    if (!e) {
      rc = PT_AN_ENOMEM;
      break;
    }
    double x = a->n_culprits > first ? loo[q] : global[q];
    if (!e->ops) e->slow_op_count = -1;
    e->ops++;
    e->p_sum += a->n_culprits > first ? 0 : gp[q];
    if (x >= a->slow_factor && (!xmin || xmin[q] >= a->slow_factor)) {
      e->slow_ops++;
      if (x > e->ratio) e->ratio = x;
      if (e->slow_op_count < 0) e->slow_op_count = an_op_call(op);
      if (!e->slow_operations) e->slow_operations = 1;
      if (an_op_call(op) != e->slow_op_count) e->slow_operations = 2;
    }
  }
  if (a->n_culprits == first) {
    /* an edge slow on its own: half of its ops, AN_SLOW_MIN_EDGE of them,
     * slow in two operations, and more than chance gives (its ops' mean
     * null chance; AN_SLOW_ALPHA over the edges tested) */
    size_t left = 0, tested = a->n_slow;
    for (size_t k = 0; k < a->n_slow; k++) {
      const an_slow_edge* e = &a->slow[k];
      if (e->ops >= AN_SLOW_MIN_EDGE && e->slow_ops * 2 >= e->ops && e->slow_operations >= 2 &&
          an_slow_claim(an_upper_tail(NULL, e->p_sum / e->ops, e->ops, e->slow_ops, dp), tested, AN_SLOW_ALPHA))
        a->slow[left++] = a->slow[k];
    }
    a->n_slow = left;
    for (size_t k = 0; k < a->n_slow && rc == 0; k++) {
      an_slow_edge* e = &a->slow[k];
      an_culprit* q = an_slow_culprit(a, e->comm, e->sender);
      if (!q) {
        rc = PT_AN_ENOMEM;
        break;
      }
      q->pub.peer = e->receiver;
      q->cand[1] = e->receiver; /* one edge's ops time both of its ends */
      q->pub.n_candidates = 2;
      q->pub.channel = e->channel;
      q->pub.is_send = 1;
      q->pub.slow_factor = e->ratio;
    }
  }
  for (size_t k = first; k < a->n_culprits; k++) {
    an_culprit* q = &a->culprits[k];
    const pt_culprit* p = &q->pub;
    size_t edges = 0;
    for (size_t m = 0; m < a->n_slow; m++)
      edges += a->slow[m].comm == p->comm_hash && (a->slow[m].sender == p->rank || a->slow[m].receiver == p->rank);
    if (p->n_candidates == 2 && p->peer >= 0) {
      snprintf(q->summary, sizeof q->summary,
               "rank %d%s%s%s: its network link to rank %d is slow — its slow ops take %.1fx as long as the "
               "others of their operation; it is slow with rank %d only, so either end may be the slow one",
               p->rank, q->host[0] ? " (" : "", q->host, q->host[0] ? ")" : "", p->peer, p->slow_factor, p->peer);
    } else if (p->peer < 0) {
      snprintf(q->summary, sizeof q->summary,
               "rank %d%s%s%s: its network links are slow — its slow ops take %.1fx as long as the others of "
               "their operation (%zu edges)",
               p->rank, q->host[0] ? " (" : "", q->host, q->host[0] ? ")" : "", p->slow_factor, edges);
      an_slow_tied_words(q); /* peers as slow as it (above) */
    } else {
      snprintf(q->summary, sizeof q->summary,
               "link rank %d -> rank %d, channel %d is slow: its ops take up to %.1fx the median of their operation",
               p->rank, p->peer, p->channel, p->slow_factor);
    }
  }
out:
  an_free(&a->mem, t);
  an_free(&a->mem, tc);
  an_free(&a->mem, rr);
  an_free(&a->mem, global);
  an_free(&a->mem, loo);
  an_free(&a->mem, kept);
  an_free(&a->mem, pos);
  an_free(&a->mem, peers_of);
  an_free(&a->mem, gp);
  an_free(&a->mem, pv);
  an_free(&a->mem, dp);
  an_free(&a->mem, when);
  an_free(&a->mem, xmin);
  an_map_free(&a->mem, &idx);
  return rc;
}

void an_ok_words(const pt_analysis* a, char* buf, size_t n, int listed) {
  char head[64], lone[160], why[256];
  if (a->all_ranks && a->clean_ranks == a->all_ranks)
    snprintf(head, sizeof head, "%d/%d ranks finished cleanly", a->clean_ranks, a->all_ranks);
  else snprintf(head, sizeof head, "no op is stuck");
  if (an_unexplained_slow(a, lone, sizeof lone)) {
    snprintf(buf, n, "%s; %s%s", head, lone, listed ? " (listed below)" : "");
    return;
  }
  if (a->mset.n) { /* step metrics: their judgement stands for the op durations' */
    pt_ms_verdict_words(&a->mslow, why, sizeof why);
    const size_t unable = pt_ms_unable(&a->mslow);
    if (why[0]) snprintf(buf, n, "%s; slow links not judged: %s", head, why);
    else if (unable)
      snprintf(buf, n,
               "%s, no link is slow among the edges that could show one; %zu edge side%s had too few samples to "
               "stand out beyond chance however slow (not cleared)",
               head, unable, unable == 1 ? "" : "s");
    else snprintf(buf, n, "%s, no link is slow", head);
    return;
  }
  if (!a->slow_possible) { /* millisecond times: no claim either way */
    snprintf(buf, n, "%s", head);
    return;
  }
  an_slow_judgement_words(a, why, sizeof why);
  if (!why[0]) snprintf(buf, n, "%s, no link is slow", head);
  else if (a->slow_ev.state == AN_SJ_PARTIAL || a->slow_ev.state == AN_SJ_RING)
    snprintf(buf, n, "%s, no link is slow in the operations timed; %s", head, why);
  else snprintf(buf, n, "%s; slow links not judged: %s", head, why);
}

size_t an_unexplained_slow(const pt_analysis* a, char* buf, size_t n) {
  if (buf && n) buf[0] = 0;
  const size_t k = a->verdict == PT_VERDICT_OK ? a->n_slow + a->mslow.n_edges : 0;
  if (k && buf)
    snprintf(buf, n, "%zu edge%s slower than %s comparable edges beyond chance, too little to name a culprit", k,
             k == 1 ? " is" : "s are", k == 1 ? "its" : "their");
  return k;
}
