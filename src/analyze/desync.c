/*
 * desync.c — ranks of one communicator that disagree about their calls,
 * from the plugin's progress lines (progress.c): what each rank last
 * called, and where each of its kernel channels is. Proxy records cannot
 * show these: a rank whose data stays inside its node has no network op,
 * and a rank that called something else, or nothing, has no op of the
 * call its peers wait in.
 *
 *   mismatch     at the same place in their sequences of collective calls
 *                (the k-th collective of each rank), a rank called another
 *                function, count, datatype or root than the most ranks did;
 *                every rank that differs is named, with what it called and
 *                what the others called.
 *   not_entered  the job is stuck, and a rank made fewer collective calls
 *                than its peers: it never called the one they are in.
 *   stopped      the job is stuck, the rank called that collective, but on
 *                a channel where its peers' kernels took it up, its kernel
 *                did not (its last start there is an earlier call): its GPU
 *                stopped before the collective.
 *
 * The collectives are aligned by the count of calls each rank made (the
 * "progress" line's `colls`), not by seqNumber, which NCCL keeps per
 * function: a rank that called AllReduce where its peers called AllGather
 * has another AllReduce seqNumber than theirs. "Stuck" is the analysis's
 * own: ops stuck on the communicator, or its ranks' stall dumps; periodic
 * dumps of a running job, taken at slightly different times, differ by a
 * call without anything wrong.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/judge.h"

/* The collective call #idx of a dump, or NULL when its ring no longer (or
 * never) held it. */
static const an_task* coll_at(const an_dump* d, int64_t idx) {
  int kept = 0;
  for (int i = 0; i < d->n_tasks; i++) kept += !d->tasks[i].is_p2p;
  const int64_t first = d->n_calls[0] - kept;
  if (idx < first || idx >= d->n_calls[0]) return NULL;
  int64_t k = first;
  for (int i = 0; i < d->n_tasks; i++) {
    if (d->tasks[i].is_p2p) continue;
    if (k++ == idx) return &d->tasks[i];
  }
  return NULL;
}

static uint64_t dtype_bytes(const char* t) {
  if (strstr(t, "64")) return 8;
  if (strstr(t, "32")) return 4;
  if (strstr(t, "16")) return 2;
  if (strstr(t, "8")) return 1;
  return 0;
}

/* "AllReduce 4 MiB float32 root 0" */
static void call_words(char* out, size_t n, const an_task* t, int with_root) {
  const uint64_t b = t->count * dtype_bytes(t->dtype);
  char size[48];
  if (b && b % (1u << 20) == 0) snprintf(size, sizeof size, "%" PRIu64 " MiB", b >> 20);
  else if (b && b % 1024 == 0) snprintf(size, sizeof size, "%" PRIu64 " KiB", b >> 10);
  else snprintf(size, sizeof size, "%" PRIu64 " elements", t->count);
  int len = snprintf(out, n, "%s %s%s%s", t->func, size, t->dtype[0] ? " " : "", t->dtype);
  if (with_root && len > 0 && (size_t)len < n) snprintf(out + len, n - (size_t)len, " root %d", t->root_or_peer);
}

/* "0-4, 6-7" of the ranks whose flag is `val`. */
static void rank_list(char* out, size_t n, const unsigned char* in, unsigned char val, int nranks) {
  size_t len = 0;
  out[0] = 0;
  for (int r = 0; r < nranks && len + 24 < n;) {
    if (in[r] != val) {
      r++;
      continue;
    }
    int e = r;
    while (e + 1 < nranks && in[e + 1] == val) e++;
    len += (size_t)snprintf(out + len, n - len, "%s%d", len ? ", " : "", r);
    if (e > r) len += (size_t)snprintf(out + len, n - len, "%s%d", e == r + 1 ? ", " : "-", e);
    r = e + 1;
  }
}

static an_culprit* add(pt_analysis* a, size_t ci, int rank, pt_cause cause) {
  const an_comm* c = &a->comms[ci];
  an_culprit* q = an_grow(&a->mem, (void**)&a->culprits, &a->n_culprits, &a->cap_culprits, sizeof *q);
  if (!q) return NULL;
  q->cand = an_alloc(&a->mem, sizeof *q->cand);
  if (!q->cand) return NULL;
  q->cand[0] = rank;
  q->origin = -1;
  q->comm_index = (int)ci;
  pt_culprit* p = &q->pub;
  p->cause = cause;
  p->comm_hash = c->comm;
  p->rank = rank;
  p->peer = p->channel = p->is_send = -1;
  p->op_count = p->step = p->n_steps = -1;
  p->n_candidates = 1;
  const an_dump* d = c->ranks[rank].dump;
  an_copy(q->host, sizeof q->host, d ? d->host : "");
  p->pid = d ? d->pid : 0;
  a->n_desync++;
  return q;
}

/* Room for n candidates of culprit q, in place of its one: the array, its
 * count 0 (the caller fills both); NULL when out of memory. */
static int* candidates(pt_analysis* a, an_culprit* q, int n) {
  int* cand = an_alloc(&a->mem, (size_t)n * sizeof *cand);
  if (!cand) return NULL;
  an_free(&a->mem, q->cand);
  q->cand = cand;
  q->pub.n_candidates = 0;
  return cand;
}

/* Ranks that disagree at call #idx with no call of most ranks: one
 * culprit naming the first rank, every rank there a candidate. */
static int tie(pt_analysis* a, size_t ci, int64_t idx) {
  const an_comm* c = &a->comms[ci];
  char words[512];
  size_t len = 0;
  int first = -1, n = 0;
  for (int r = 0; r < c->nranks; r++) {
    const an_task* t = c->ranks[r].dump && c->ranks[r].dump->has_progress ? coll_at(c->ranks[r].dump, idx) : NULL;
    if (!t) continue;
    if (first < 0) first = r;
    n++;
    char w[96];
    call_words(w, sizeof w, t, 1);
    if (len + 128 < sizeof words)
      len += (size_t)snprintf(words + len, sizeof words - len, "%srank %d called %s (seq %" PRId64 ")", len ? "; " : "", r,
                              w, t->seq);
  }
  an_culprit* q = add(a, ci, first, PT_CAUSE_MISMATCH);
  int* cand = q ? candidates(a, q, n) : NULL;
  if (!cand) return -1;
  for (int r = 0; r < c->nranks; r++)
    if (c->ranks[r].dump && c->ranks[r].dump->has_progress && coll_at(c->ranks[r].dump, idx))
      cand[q->pub.n_candidates++] = r;
  snprintf(q->summary, sizeof q->summary,
           "ranks disagree about collective call #%" PRId64 " and no call has most of them: %s — any of them may be "
           "the one out of step (desync)", idx, words);
  return 1;
}

/* One kept collective call of one rank: its place in the rank's sequence,
 * and a hash of the call (call_key) to sort by without comparing names. */
typedef struct {
  int64_t idx;
  const an_task* t;
  int rank;
  uint64_t key;
} call_at;

static int cmp_call(const an_task* x, const an_task* y) {
  int c = strcmp(x->func, y->func);
  if (c) return c;
  if (x->count != y->count) return x->count < y->count ? -1 : 1;
  if ((c = strcmp(x->dtype, y->dtype))) return c;
  return (x->root_or_peer > y->root_or_peer) - (x->root_or_peer < y->root_or_peer);
}

/* By place, then by call, then by rank: each place's ranks that made the
 * same call stand together, lowest rank first. */
static int by_place_call_rank(const void* pa, const void* pb) {
  const call_at *a = pa, *b = pb;
  if (a->idx != b->idx) return a->idx < b->idx ? -1 : 1;
  const int c = cmp_call(a->t, b->t);
  if (c) return c;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The same, with the call's hash for the call: equal calls stand together
 * as well (in another order of calls, which the vote does not use), and no
 * name is compared. 100 000 ranks keep 1.6 M calls: the names' compares
 * were most of the desync judgement. */
static int by_place_key_rank(const void* pa, const void* pb) {
  const call_at *a = pa, *b = pb;
  if (a->idx != b->idx) return a->idx < b->idx ? -1 : 1;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

static uint64_t call_key(const an_task* t) {
  uint64_t h = an_mix(an_mix(an_mix_str(t->func), t->count), an_mix_str(t->dtype));
  return an_mix(h, (uint64_t)(int64_t)t->root_or_peer);
}

/* Sorts v by place, call and rank: by hash, then, at a place where two
 * different calls share a hash, by the calls themselves (that place as
 * the sort by calls would have it). */
static void sort_calls(call_at* v, size_t n) {
  qsort(v, n, sizeof *v, by_place_key_rank);
  for (size_t g = 0; g < n;) {
    size_t e = g + 1;
    int collide = 0;
    for (; e < n && v[e].idx == v[g].idx; e++)
      collide |= v[e].key == v[e - 1].key && cmp_call(v[e].t, v[e - 1].t) != 0;
    if (collide) qsort(v + g, e - g, sizeof *v, by_place_call_rank);
    g = e;
  }
}

/* The first collective call two ranks disagree on: its culprits. Every
 * kept call of every rank is sorted once by (place, call, rank), so the
 * vote at each place is a count of runs: O(calls log calls), not a
 * comparison of every rank with every other (100 000 ranks keep 1.6 M
 * calls). */
static int mismatch(pt_analysis* a, size_t ci, unsigned char* mark) {
  const an_comm* c = &a->comms[ci];
  size_t n = 0;
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    if (d && d->has_progress) n += (size_t)d->n_tasks;
  }
  if (n < 2) return 0;
  call_at* v = an_alloc(&a->mem, n * sizeof *v);
  if (!v) return -1;
  n = 0;
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    if (!d || !d->has_progress) continue;
    int kept = 0;
    for (int i = 0; i < d->n_tasks; i++) kept += !d->tasks[i].is_p2p;
    int64_t idx = d->n_calls[0] - kept; /* the ring holds the last calls, in order (coll_at) */
    for (int i = 0; i < d->n_tasks; i++) {
      if (d->tasks[i].is_p2p) continue;
      if (idx >= 0) v[n++] = (call_at){idx, &d->tasks[i], r, call_key(&d->tasks[i])};
      idx++;
    }
  }
  sort_calls(v, n);
  int rc = 0;
  for (size_t g = 0; g < n && !rc;) {
    size_t e = g;
    while (e < n && v[e].idx == v[g].idx) e++; /* [g, e): one place */
    /* The call most ranks made there; a tie goes to the lowest rank's
     * (each run's first rank is its lowest). */
    size_t best = g, best_n = 0, n_best = 0;
    for (size_t k = g, m; k < e; k = m) {
      for (m = k; m < e && !cmp_call(v[m].t, v[k].t); m++) {
      } /* [k, m): one call */
      if (m - k > best_n) {
        best = k;
        best_n = m - k;
        n_best = 1;
      } else if (m - k == best_n) {
        n_best++;
        if (v[k].rank < v[best].rank) best = k;
      }
    }
    const int ties = n_best > 1;
    const size_t seen = e - g;
    const int64_t idx = v[g].idx;
    if (seen < 2 || best_n == seen) {
      g = e;
      continue;
    }
    /* No call has most ranks (two ranks, or groups as large): the ranks
     * disagree, and which side is wrong cannot be told. One culprit, every
     * rank there a candidate. */
    if (ties) {
      rc = tie(a, ci, idx);
      break;
    }
    /* mark: 1 the ranks that made the call most made, 2 the others there. */
    const an_task* want = v[best].t;
    memset(mark, 0, (size_t)c->nranks);
    for (size_t k = g; k < e; k++) mark[v[k].rank] = cmp_call(v[k].t, want) ? 2 : 1;
    char others[256], theirs[96];
    rank_list(others, sizeof others, mark, 1, c->nranks);
    /* The culprits in rank order: each rank whose call differs. */
    for (int r = 0; r < c->nranks; r++) {
      if (mark[r] != 2) continue;
      const an_task* t = coll_at(c->ranks[r].dump, idx);
      const int roots = strcmp(t->func, want->func) == 0 && t->root_or_peer != want->root_or_peer;
      char mine[96];
      call_words(mine, sizeof mine, t, roots);
      call_words(theirs, sizeof theirs, want, roots);
      an_culprit* q = add(a, ci, r, PT_CAUSE_MISMATCH);
      if (!q) {
        rc = -1;
        break;
      }
      snprintf(q->summary, sizeof q->summary,
               "rank %d called %s as collective call #%" PRId64 " (seq %" PRId64 "); rank%s %s called %s (seq %" PRId64
               ") — ranks disagree about the collective (desync)",
               r, mine, idx, t->seq, best_n == 1 ? "" : "s", others, theirs, want->seq);
    }
    if (rc == 0) rc = 1;
  }
  an_free(&a->mem, v);
  return rc;
}

/* Whether the dump shows the kernel of the call `seq` of `func` started
 * and not ended on a channel. */
static int kernel_inside(const an_dump* d, const an_task* call) {
  if (!call) return 0;
  for (size_t k = 0; k < d->n_kch; k++) {
    const an_kch* x = &d->kch[k];
    if (!x->start_p2p && !strcmp(x->start_func, call->func) && x->start_seq == call->seq &&
        x->stops < x->starts)
      return 1;
  }
  return 0;
}

/* Whether the dump was taken at the communicator's end (finalize: PyTorch's
 * watchdog aborts a communicator whose call timed out) with the kernel of
 * its last call inside it. */
static int ended_inside(const an_dump* d, const an_task* call) {
  return d->trigger == AN_TRIG_FINALIZE && kernel_inside(d, call);
}

/* Whether the communicator is stuck in its ranks' last call `top`, as far
 * as the analysis can say: ops stuck on it, or every rank that made that
 * call dumped because it stalled (a rank that never made it has nothing
 * waiting, so no stall dump of its own), or was ended with its kernel
 * still inside that call (a communicator inside one node has no proxy op
 * to stall on: its kernels show where it is). */
static int stuck(const an_comm* c, int64_t top) {
  if (c->stuck_op_count >= 0) return 1;
  int stall = 0, dumps = 0;
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    if (!d || !d->has_progress || d->n_calls[0] != top) continue;
    dumps++;
    stall += d->trigger == AN_TRIG_STALL || ended_inside(d, coll_at(d, top - 1));
  }
  return dumps && stall == dumps;
}

/* A rank's kernel channel that took a call up. */
typedef struct {
  int32_t channel;
  int rank;
} chan_rank;

static int by_chan_rank(const void* pa, const void* pb) {
  const chan_rank *a = pa, *b = pb;
  if (a->channel != b->channel) return a->channel < b->channel ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Whether a rank other than `rank` took the call up on `channel`. */
static int taken_up_by_peer(const chan_rank* up, size_t n, int32_t channel, int rank) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (up[mid].channel < channel) lo = mid + 1;
    else hi = mid;
  }
  for (; lo < n && up[lo].channel == channel; lo++)
    if (up[lo].rank != rank) return 1;
  return 0;
}

/* Ranks that never called the collective their peers are in, and ranks
 * whose GPU never took it up. */
int64_t an_top_call(const an_comm* c) {
  int64_t top = 0;
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    if (d && d->has_progress && d->n_calls[0] > top) top = d->n_calls[0];
  }
  return top;
}

#define MISSING_NAMED 16 /* ranks without a dump named one by one (behind()) */

static int behind(pt_analysis* a, size_t ci, unsigned char* mark) {
  const an_comm* c = &a->comms[ci];
  const int64_t top = an_top_call(c);
  if (!top || !stuck(c, top)) return 0;
  const an_task* call = NULL; /* the collective the most advanced ranks are in */
  memset(mark, 0, (size_t)c->nranks);
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    if (!d || !d->has_progress || d->n_calls[0] != top) continue;
    mark[r] = 1;
    if (!call) call = coll_at(d, top - 1);
  }
  if (!call) return 0;
  char in[256], what[96];
  rank_list(in, sizeof in, mark, 1, c->nranks);
  call_words(what, sizeof what, call, 0);
  int found = 0;
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    if (!d || !d->has_progress || d->n_calls[0] >= top) continue;
    an_culprit* q = add(a, ci, r, PT_CAUSE_NOT_ENTERED);
    if (!q) return -1;
    snprintf(q->summary, sizeof q->summary,
             "rank %d never called %s, collective call #%" PRId64 " (seq %" PRId64 ") that rank%s %s %s in: it made %" PRId64
             " collective call%s",
             r, what, top - 1, call->seq, strchr(in, ',') || strchr(in, '-') ? "s" : "", in,
             strchr(in, ',') || strchr(in, '-') ? "are" : "is", d->n_calls[0], d->n_calls[0] == 1 ? "" : "s");
    found++;
  }
  /* A rank without any dump, where no op is stuck (a communicator inside
   * one node has none: its ranks' kernels show the hang): the ranks in the
   * call wait on it as on one that never called it — it died, or its files
   * are not among the inputs. Where ops are stuck, their waits name it
   * (explain.c). */
  /* (One culprit each; past MISSING_NAMED, the rest are said with the
   * last one named: a large communicator missing many dumps is a folder
   * short of them.) */
  int missing = 0;
  for (int r = 0; r < c->nranks && c->stuck_op_count < 0; r++) missing += !c->ranks[r].present;
  for (int r = 0, named = 0; r < c->nranks && c->stuck_op_count < 0 && named < MISSING_NAMED; r++) {
    if (c->ranks[r].present) continue;
    an_culprit* q = add(a, ci, r, PT_CAUSE_RANK_MISSING);
    if (!q) return -1;
    q->pub.possible = 1;
    const int more = ++named == MISSING_NAMED ? missing - named : 0, many = strchr(in, ',') || strchr(in, '-');
    char rest[64] = "";
    if (more > 0) snprintf(rest, sizeof rest, " (and %d more ranks without a dump)", more);
    snprintf(q->summary, sizeof q->summary,
             "rank %d wrote no dump (it died, or its dump is not among the inputs)%s — rank%s %s %s in %s, "
             "collective call #%" PRId64 " (seq %" PRId64 "), and wait%s there",
             r, rest, many ? "s" : "", in, many ? "are" : "is", what, top - 1, call->seq, many ? "" : "s");
    found++;
  }
  /* Among the ranks in it: a channel whose kernel took it up on a peer
   * but not here. The (channel, rank) pairs whose kernel took the call up,
   * sorted once, answer each rank's question by a binary search. */
  size_t n_up = 0;
  for (int r = 0; r < c->nranks; r++)
    if (mark[r]) n_up += c->ranks[r].dump->n_kch;
  chan_rank* up = an_alloc(&a->mem, (n_up ? n_up : 1) * sizeof *up);
  if (!up) return -1;
  n_up = 0;
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* e = c->ranks[r].dump;
    if (!mark[r]) continue;
    for (size_t j = 0; j < e->n_kch; j++)
      if (!e->kch[j].start_p2p && !strcmp(e->kch[j].start_func, call->func) && e->kch[j].start_seq >= call->seq)
        up[n_up++] = (chan_rank){e->kch[j].channel, r};
  }
  qsort(up, n_up, sizeof *up, by_chan_rank);
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    if (!mark[r] || !d->n_kch) continue;
    for (size_t k = 0; k < d->n_kch; k++) {
      const an_kch* mine = &d->kch[k];
      /* Judged only against the same function's earlier call: a start of
       * another function, or of a p2p, cannot be put before or after it. */
      const int before_it = !mine->start_p2p && !strcmp(mine->start_func, call->func) && mine->start_seq < call->seq;
      if (!before_it || !taken_up_by_peer(up, n_up, mine->channel, r)) continue;
      an_culprit* q = add(a, ci, r, PT_CAUSE_STOPPED);
      if (!q) {
        an_free(&a->mem, up);
        return -1;
      }
      q->pub.channel = mine->channel;
      snprintf(q->summary, sizeof q->summary,
               "rank %d called %s (collective call #%" PRId64 ", seq %" PRId64 "), but its GPU never took it up on channel %d, "
               "where its peers' did: the channel's last kernel start is %s seq %" PRId64 " — its GPU stopped before it",
               r, what, top - 1, call->seq, mine->channel, mine->start_func, mine->start_seq);
      found++;
      break; /* one culprit per rank */
    }
  }
  an_free(&a->mem, up);
  /* Every rank in the call, each with a dump that ends inside it (its
   * kernel started there and never ended), none missing, no GPU that
   * never took it up, and no op of it stuck or anywhere: a call inside one
   * node (NVLink), held by a GPU that stopped in it, or its link. No proxy
   * record shows which one: the node's culprit, every rank a candidate. */
  int in_call = 0;
  for (int r = 0; r < c->nranks; r++) in_call += mark[r] && kernel_inside(c->ranks[r].dump, call);
  if (!found && in_call == c->nranks && c->stuck_op_count < 0 && !c->n_items && c->nranks > 1) {
    an_culprit* q = add(a, ci, 0, PT_CAUSE_STOPPED);
    int* cand = q ? candidates(a, q, c->nranks) : NULL;
    if (!cand) return -1;
    for (int r = 0; r < c->nranks; r++) cand[q->pub.n_candidates++] = r;
    const an_dump* d = c->ranks[0].dump;
    snprintf(q->summary, sizeof q->summary,
             "the call hangs inside %s: every rank (%s) is in %s, collective call #%" PRId64 " (seq %" PRId64
             "), its kernels started there and never ended, and none of its ops leaves the node — a GPU of the "
             "node stopped in it (or their link): no proxy record shows which, so every rank is a candidate",
             d && d->host[0] ? d->host : "one node", in, what, top - 1, call->seq);
    found++;
  }
  return found;
}

/* A rank's dump without progress lines beside peers' with them: the host
 * sends the task events (its peers got them), so the rank has made no call
 * yet — the plugin prints the lines from the first one on. Not a cut dump:
 * its progress lines come after its records, and the cut may have taken
 * them. */
static void no_call_yet(const an_comm* c) {
  int any = 0;
  for (int r = 0; r < c->nranks && !any; r++) any = c->ranks[r].dump && c->ranks[r].dump->has_progress;
  for (int r = 0; r < c->nranks && any; r++) {
    an_dump* d = (an_dump*)c->ranks[r].dump;
    if (d && !d->has_progress && !d->cut) d->has_progress = 1; /* n_calls 0, no task, no channel */
  }
}

/* 1 when a rank of the communicator saw the host change the event mask
 * (RAS, NCCL 2.31+): ranks apply a new mask a batch apart, so the calls
 * one rank recorded and another did not say nothing about what they
 * called. The proxy records are judged as ever; the calls are not. */
static int mask_changed(const an_comm* c) {
  for (int r = 0; r < c->nranks; r++)
    if (c->ranks[r].dump && c->ranks[r].dump->mask_changed) return 1;
  return 0;
}

/* 1 when a rank's kept collective calls skip a seqNumber of one function:
 * the host counts each function's calls whether or not it tells the
 * plugin, so a gap is a call the plugin never saw (a mask that was off
 * for a while, a replayed graph). Its count of calls is then short, and
 * aligning it with its peers' would make up a desync. */
static int calls_gapped(const an_comm* c) {
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    if (!d || !d->has_progress) continue;
    for (int i = 0; i < d->n_tasks; i++) {
      const an_task* t = &d->tasks[i];
      if (t->is_p2p) continue;
      for (int j = i + 1; j < d->n_tasks; j++) { /* the next call of the same function */
        const an_task* u = &d->tasks[j];
        if (u->is_p2p || strcmp(u->func, t->func)) continue;
        if (u->seq != t->seq + 1) return 1;
        break;
      }
    }
  }
  return 0;
}

static int has_cand(const an_culprit* q, int rank) {
  for (int i = 0; i < q->pub.n_candidates; i++)
    if (q->cand[i] == rank) return 1;
  return 0;
}

/* Whether the desync culprit d explains the proxy culprit k: a rank out of
 * the call (never called it, or called another) posts, sends and forwards
 * nothing of it, so its peers wait on it — a receive it never posted, a
 * send it never made — and inside its node the GPUs next to it have no
 * data from it: a GPU culprit of its node whose candidates hold it. A GPU
 * that never took the call up on a channel explains the same on that
 * channel. Two ranks that disagree with no majority (a tie) explain
 * nothing: which one is out of step is not known. */
static int explains(const an_culprit* d, const an_culprit* k) {
  if (d->comm_index != k->comm_index || k->origin < 0 || d->pub.n_candidates != 1) return 0;
  if (d->pub.cause == PT_CAUSE_STOPPED && k->pub.channel != d->pub.channel) return 0;
  const int gpu = k->pub.cause == PT_CAUSE_GPU_NOT_PRODUCING || k->pub.cause == PT_CAUSE_GPU_NOT_CONSUMING;
  return k->pub.rank == d->pub.rank || (gpu && has_cand(k, d->pub.rank));
}

/* The proxy culprits a desync culprit (the first `added`) explains are
 * folded into it: their stuck ops wait on it, and they are not named apart
 * — a GPU that "stopped" next to a rank that never called the collective
 * waits for that rank (a wrong lead otherwise). */
static void fold(pt_analysis* a, size_t added) {
  size_t keep = added;
  int32_t* where = an_alloc(&a->mem, (a->n_culprits + 1) * sizeof *where);
  if (!where) return; /* a->mem failed: the analysis reports it */
  for (size_t k = 0; k < added; k++) where[k] = (int32_t)k;
  for (size_t k = added; k < a->n_culprits; k++) {
    size_t d = 0;
    while (d < added && !explains(&a->culprits[d], &a->culprits[k])) d++;
    if (d < added) {
      where[k] = (int32_t)d;
      an_free(&a->mem, a->culprits[k].cand);
      continue;
    }
    where[k] = (int32_t)keep;
    a->culprits[keep++] = a->culprits[k];
  }
  if (keep == a->n_culprits) {
    an_free(&a->mem, where);
    return;
  }
  a->n_culprits = keep;
  for (size_t k = 0; k < keep; k++) a->culprits[k].pub.dependents = 0;
  for (size_t i = 0; i < a->n_items; i++) {
    an_item* x = &a->items[i];
    if (x->culprit < 0) continue;
    x->culprit = where[x->culprit];
    an_culprit* q = &a->culprits[x->culprit];
    if (x->stuck && x->op->rank != q->pub.rank) q->pub.dependents++;
  }
  an_free(&a->mem, where);
  for (size_t d = 0; d < added; d++) {
    an_culprit* q = &a->culprits[d];
    const size_t len = strlen(q->summary);
    if (q->pub.dependents > 0 && len + 1 < sizeof q->summary)
      snprintf(q->summary + len, sizeof q->summary - len, "; %d stuck op%s wait%s on it", q->pub.dependents,
               q->pub.dependents == 1 ? "" : "s", q->pub.dependents == 1 ? "s" : "");
  }
}

int an_desync(pt_analysis* a) {
  const size_t before = a->n_culprits;
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    const an_comm* c = &a->comms[ci];
    if (c->nranks <= 1 || mask_changed(c) || calls_gapped(c)) continue;
    no_call_yet(c);
    unsigned char* mark = an_alloc(&a->mem, (size_t)c->nranks);
    if (!mark) return PT_AN_ENOMEM;
    int rc = mismatch(a, ci, mark);
    if (rc == 0) rc = behind(a, ci, mark);
    an_free(&a->mem, mark);
    if (rc < 0) return PT_AN_ENOMEM;
  }
  const size_t added = a->n_culprits - before;
  if (!added) return 0;
  /* The desync culprits first: they are why the rest waits. The ops'
   * culprit numbers follow. */
  an_culprit tmp;
  for (size_t k = 0; k < added; k++) {
    tmp = a->culprits[before + k];
    memmove(&a->culprits[k + 1], &a->culprits[k], (before + k - k) * sizeof tmp);
    a->culprits[k] = tmp;
  }
  for (size_t i = 0; i < a->n_items; i++)
    if (a->items[i].culprit >= 0) a->items[i].culprit += (int32_t)added;
  fold(a, added);
  return 0;
}
