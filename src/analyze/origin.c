/*
 * origin.c — the origin of a hang across the communicators of one job.
 *
 * A process of a parallel job holds several communicators (tensor,
 * pipeline, data parallel, the world). When one GPU stops, every
 * communicator hangs: the data-parallel all-reduce waits on a rank that
 * never entered it, because its process is still in its pipeline send,
 * which waits on a stage whose tensor-parallel all-reduce never finished.
 * Each communicator's own judgement (explain.c, desync.c) then names a
 * rank that is only waiting elsewhere.
 *
 * The evidence is keyed by process as well as by communicator: a rank's
 * dumps name its host and pid (and GPU, where the log prefix gives it), the
 * same for every communicator the process holds. A culprit that is a rank
 * behind the others (its records stop before the call: rank_behind) or one
 * that never entered the call (not_entered) says only where that rank is
 * not; where the same process has stuck ops in another communicator, it is
 * there, and the culprit those ops lead to is what it waits on. Following
 * those edges from culprit to culprit gives one wait graph over processes;
 * the culprits none leads out of are the origins. Each other culprit is a
 * consequence of the origin its edges reach (consequence_of), never a
 * culprit of its own; the origins come first, each with the chain that
 * leads to it from every communicator it holds up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/verdict.h"

/* The process of (comm, rank): its latest dump's host, pid and GPU. 0 when
 * the dump does not say (no host or no pid). */
static int process_of(const pt_analysis* a, size_t ci, int rank, const an_dump** out) {
  const an_comm* c = &a->comms[ci];
  if (rank < 0 || rank >= c->nranks) return 0;
  const an_dump* d = c->ranks[rank].dump;
  if (!d || !d->host[0] || d->pid <= 0) return 0;
  *out = d;
  return 1;
}

static int same_process(const an_dump* x, const an_dump* y) {
  return x->pid == y->pid && !strcmp(x->host, y->host) && (x->dev < 0 || y->dev < 0 || x->dev == y->dev);
}

static uint64_t process_key(const an_dump* d) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (const char* s = d->host; *s; s++) h = an_mix(h, (uint64_t)(unsigned char)*s);
  return an_mix(h, (uint64_t)(uint32_t)d->pid);
}

/* A send or receive whose peer has not reached it (a culprit that says
 * only where that peer is not) where the peer has stuck ops of its own in
 * the same communicator: it is in another call of its own there — a
 * pipeline's stage, whose exchanges with its two neighbours alternate,
 * waits in one with the other. The culprit those ops lead to (not k); -1
 * when it has none. A collective's ranks all make the same call: there a
 * rank behind is stuck in another communicator or outside them. */
static int32_t own_call_stuck(const pt_analysis* a, size_t k) {
  const an_culprit* q = &a->culprits[k];
  if (q->origin < 0 || (size_t)q->origin >= a->n_items || !an_op_p2p(a->items[q->origin].op)) return -1;
  const an_comm* c = &a->comms[q->comm_index];
  for (size_t i = c->first_item; i < c->first_item + c->n_items; i++) {
    const an_item* x = &a->items[i];
    if (x->stuck && x->op->rank == q->pub.rank && x->culprit >= 0 && (size_t)x->culprit != k) return x->culprit;
  }
  return -1;
}

/* Whether `rank` made the last call any rank of the communicator made:
 * it is inside the call its communicator hangs in. */
static int in_last_call(const an_comm* c, int rank) {
  const int64_t top = an_top_call(c);
  const an_dump* d = c->ranks[rank].dump;
  return top > 0 && d && d->has_progress && d->n_calls[0] == top;
}

/* Where a process is stuck in communicator ci (as `rank`): the culprit
 * its stuck ops there lead to, the one that names that rank, or — inside
 * the call the communicator hangs in, with no op of its own stuck (a
 * communicator inside one node has none) — the communicator's first
 * culprit; -1 if it is stuck nowhere there. */
static int32_t stuck_in(const pt_analysis* a, size_t ci, int rank) {
  const an_comm* c = &a->comms[ci];
  for (size_t i = c->first_item; i < c->first_item + c->n_items; i++) {
    const an_item* x = &a->items[i];
    if (x->stuck && x->op->rank == rank && x->culprit >= 0) return x->culprit;
  }
  int32_t first = -1;
  for (size_t k = 0; k < a->n_culprits; k++) {
    const pt_culprit* p = &a->culprits[k].pub;
    if (p->comm_hash != c->comm) continue;
    if (p->rank == rank) {
      if (a->culprits[k].absent) return -1; /* absent there too: not stuck there */
      return (int32_t)k;
    }
    if (first < 0) first = (int32_t)k;
  }
  return first >= 0 && in_last_call(c, rank) ? first : -1;
}

void an_comm_words(const pt_analysis* a, size_t ci, char* out, size_t n) {
  if (ci >= a->n_comms) {
    snprintf(out, n, "a communicator");
    return;
  }
  const an_comm* c = &a->comms[ci];
  const char* name = "";
  for (int r = 0; r < c->nranks && !name[0]; r++)
    if (c->ranks[r].dump) name = c->ranks[r].dump->comm_name;
  if (name[0]) snprintf(out, n, "communicator %s (%llu)", name, (unsigned long long)c->comm);
  else snprintf(out, n, "communicator %llu", (unsigned long long)c->comm);
}

/* A send or receive its peer has no op for, where the peer's records of
 * that pair and direction reach the op's per-peer sequence on another
 * channel: the peer made the call, and left this channel's part out — a
 * fault of its own, not a sign of where it is. */
static int made_the_call(const pt_analysis* a, const an_culprit* q) {
  if (q->origin < 0 || (size_t)q->origin >= a->n_items) return 0;
  const an_op* op = a->items[q->origin].op;
  if (op->coll_seq < 0 || !an_op_p2p(op) || q->comm_index < 0 || (size_t)q->comm_index >= a->n_comms) return 0;
  const an_comm* c = &a->comms[q->comm_index];
  if (op->peer < 0 || op->peer >= c->nranks || !c->ranks[op->peer].dump) return 0;
  return an_dump_p2p_latest(c->ranks[op->peer].dump, op->rank, !op->is_send) >= op->coll_seq;
}

/* Whether culprit q says only where its rank is not — behind, never
 * entered, or without the op its peer waits for (no record of the send, or
 * of any receive: it never called ncclRecv) — an_culprit.absent, which
 * an_origin fills. */
static int absent_only(const pt_analysis* a, const an_culprit* q) {
  const pt_cause c = q->pub.cause;
  if (c == PT_CAUSE_RANK_BEHIND || c == PT_CAUSE_NOT_ENTERED) return 1;
  if (c == PT_CAUSE_SEND_MISSING) return !made_the_call(a, q);
  return c == PT_CAUSE_NO_RECEIVE_POSTED && q->origin >= 0 && (size_t)q->origin < a->n_items &&
         a->items[q->origin].wait == AN_W_PEER_NO_OP && !made_the_call(a, q);
}

/* The time of rank's latest op record in communicator ci (its last
 * update, or its creation), 0 where it has none. */
static int64_t latest_record(const pt_analysis* a, size_t ci, int rank) {
  const an_comm* c = &a->comms[ci];
  int64_t t = 0;
  for (size_t i = c->first_item; i < c->first_item + c->n_items; i++) {
    const an_op* op = a->items[i].op;
    if (op->rank != rank) continue;
    if (op->last_ns > t) t = op->last_ns;
    if (op->create_ns > t) t = op->create_ns;
  }
  return t;
}

/* A send or receive's culprit that says only where its rank is not, beside
 * another culprit of the same rank in the same communicator: one fact
 * about that rank — it is in one call, absent from the others' — not a
 * culprit per channel or peer. The rank's culprit that names a fault of
 * its own (it posted no buffer, its GPU stopped), else its first one that
 * says only where it is not; -1 when k is that one or the rank has none
 * other. */
static int32_t same_rank_culprit(const pt_analysis* a, size_t k) {
  const an_culprit* q = &a->culprits[k];
  if (q->origin < 0 || (size_t)q->origin >= a->n_items || !an_op_p2p(a->items[q->origin].op)) return -1;
  int32_t absent = -1;
  for (size_t m = 0; m < a->n_culprits; m++) {
    const an_culprit* o = &a->culprits[m];
    if (m == k || o->comm_index != q->comm_index || o->pub.rank != q->pub.rank) continue;
    if (!o->absent) return (int32_t)m;
    if (absent < 0 && m < k) absent = (int32_t)m;
  }
  return absent;
}

/* What an_origin's search needs: every (communicator, rank) of a process. */
typedef struct {
  const pt_analysis* a;
  const an_map* procs;
  const int64_t* slot; /* ci << 32 | rank */
  int32_t dead;        /* the culprit that stands for a dead process (dead_group), -1 */
  int dead_node;       /* the node its ranks are placed on, -1 */
} proc_index;

/* When communicator ci came to wait: when the last of its ranks with a
 * dump, other than `rank`, began its latest call there (its last coll or
 * p2p line's start, or its latest op's creation, whichever is later; host
 * clocks); 0 where no such rank's dumps give a time. A rank held up
 * elsewhere, never come to that call, began its latest call there
 * earlier: it does not move the time. */
static int64_t waiting_since(const pt_analysis* a, size_t ci, int rank) {
  const an_comm* c = &a->comms[ci];
  int64_t since = 0;
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    if (!d || r == rank) continue;
    for (size_t i = 0; i < d->n_ops; i++)
      if (d->ops[i].create_ns > since) since = d->ops[i].create_ns;
    for (int i = 0; i < d->n_tasks; i++)
      if (d->tasks[i].start_ns > since) since = d->tasks[i].start_ns;
  }
  return since;
}

/* The ranks of a communicator whose dumps stop: without a dump, or whose
 * latest is stale (an_rank_stale) — 0, 1 (that one in *which), or 2
 * (more). A process that dies leaves no dump after its death: where it
 * dumped before, its latest is stale. */
static int stopped_ranks(const pt_analysis* a, const an_comm* c, int* which) {
  const int64_t newest = an_comm_newest(c);
  int stopped = 0;
  for (int r = 0; r < c->nranks && stopped < 2; r++)
    if (!c->ranks[r].present || an_rank_stale(a, c, r, newest, NULL)) {
      stopped++;
      *which = r;
    }
  return stopped;
}

/* A process that dies writes no dump after it, in any communicator it
 * holds: each shows one rank whose dumps stop (stopped_ranks: none, or
 * its latest stale), named by a culprit of its own. Where every
 * communicator with a culprit naming such a rank lacks that one rank
 * only, those that place the rank on a node (one inside a node) agree on
 * the node, and those with a dump of it name one process, the ranks are
 * likely one process (said as likely: the ranks without a dump name none).
 * It stopped in one call; every other of those communicators came to a
 * call it never made later, and began to wait there later: the culprit of
 * the communicator whose ranks began to wait first stands for it
 * (waiting_since, host clocks; the first of them where a communicator's
 * dumps give no time). That culprit, the node (or -1) in *node, and each
 * culprit of the group (the first of each communicator) marked in
 * member[]; -1 when there is none or the culprits disagree. */
static int32_t dead_group(const pt_analysis* a, size_t n, int* node, int8_t* member) {
  int32_t first = -1, earliest = -1;
  int64_t earliest_ns = 0;
  int timed = 1;
  const an_dump* who = NULL; /* the process, where a dump of it names one */
  *node = -1;
  memset(member, 0, n);
  for (size_t k = 0; k < n; k++) {
    const an_culprit* q = &a->culprits[k];
    const size_t ci = (size_t)q->comm_index;
    if (ci >= a->n_comms || q->pub.rank < 0 || q->pub.rank >= a->comms[ci].nranks) continue;
    const an_comm* c = &a->comms[ci];
    int which = -1;
    const int stopped = stopped_ranks(a, c, &which);
    if (stopped != 1 || which != q->pub.rank) {
      /* a rank without a dump where more than it stopped: no one process */
      if (stopped && q->pub.cause == PT_CAUSE_RANK_MISSING) return -1;
      continue;
    }
    const int at = c->ranks[q->pub.rank].node;
    const an_dump* d = c->ranks[q->pub.rank].dump;
    if ((at >= 0 && *node >= 0 && at != *node) || (d && who && !same_process(d, who))) return -1;
    int seen = 0;
    for (size_t m2 = 0; m2 < k && !seen; m2++) seen = member[m2] && a->culprits[m2].comm_index == q->comm_index;
    if (seen) continue;
    member[k] = 1;
    if (at >= 0) *node = at;
    if (d) who = d;
    if (first < 0) first = (int32_t)k;
    const int64_t since = waiting_since(a, ci, q->pub.rank);
    timed &= since > 0;
    if (since > 0 && (earliest < 0 || since < earliest_ns)) {
      earliest = (int32_t)k;
      earliest_ns = since;
    }
  }
  return timed && earliest >= 0 ? earliest : first;
}

/* A culprit (not `self`) that names process d as absent from one of its
 * communicators; -1 if none does. */
static int32_t absent_culprit(const pt_analysis* a, const an_dump* d, int32_t self) {
  for (size_t k = 0; k < a->n_culprits; k++) {
    const an_culprit* q = &a->culprits[k];
    const an_dump* e;
    if ((int32_t)k != self && q->absent && (size_t)q->comm_index < a->n_comms &&
        process_of(a, (size_t)q->comm_index, q->pub.rank, &e) && same_process(d, e))
      return (int32_t)k;
  }
  return -1;
}

/* Whether `rank` has stuck ops in communicator ci. */
static int has_stuck_ops(const pt_analysis* a, size_t ci, int rank) {
  const an_comm* c = &a->comms[ci];
  for (size_t i = c->first_item; i < c->first_item + c->n_items; i++)
    if (a->items[i].stuck && a->items[i].op->rank == rank) return 1;
  return 0;
}

/* Whether rank `gone` of c may be the dead process of px: the same
 * process as the dead culprit's rank where both have a dump, else on its
 * node where both are placed. */
static int is_dead(const proc_index* px, const an_comm* c, int gone) {
  const pt_analysis* a = px->a;
  const an_culprit* q = &a->culprits[px->dead];
  const an_dump* d = c->ranks[gone].dump;
  const an_dump* e;
  if (d && process_of(a, (size_t)q->comm_index, q->pub.rank, &e)) return same_process(d, e);
  return c->ranks[gone].node < 0 || px->dead_node < 0 || c->ranks[gone].node == px->dead_node;
}

/* Where process d is stuck, outside communicator `skip`: the culprit it
 * waits on (not `self`), with the communicator and rank it is there as.
 * Inside a communicator's last call where no culprit is named (one inside
 * a node, on a host whose dumps cannot show its kernels in the call), it
 * waits on the members that did not make that call: where their process
 * is stuck, `depth` hops on, or — stuck nowhere the dumps show — the
 * culprit that names it absent elsewhere (its own fault, or one more step
 * of the same search). -1: stuck nowhere the dumps show. */
static int32_t process_stuck(const proc_index* px, const an_dump* d, size_t skip, int32_t self, int depth,
                             size_t* via_ci, int* via_rank) {
  const pt_analysis* a = px->a;
  for (int32_t j = an_map_first(px->procs, process_key(d)); j >= 0; j = an_map_next(px->procs, j)) {
    const size_t cj = (size_t)(px->slot[j] >> 32);
    const int r = (int)(px->slot[j] & 0xffffffff);
    const an_dump* e;
    if (cj == skip || !process_of(a, cj, r, &e) || !same_process(d, e)) continue;
    const int32_t t = stuck_in(a, cj, r);
    if (t >= 0 && t != self) {
      *via_ci = cj;
      *via_rank = r;
      return t;
    }
    if (t >= 0 || depth <= 0) continue;
    const an_comm* c = &a->comms[cj];
    /* Inside the communicator's last call, or with ops stuck there that
     * name no culprit (they wait on a peer whose latest dump, stale,
     * shows its side still moving): the one rank of the communicator
     * whose dumps stop — none, or its latest older than its peers' by
     * more than the stall time — where it is the dead process (its
     * node, or its dump's process): likely that process. */
    const int last = in_last_call(c, r);
    if (!last && !has_stuck_ops(a, cj, r)) continue;
    int gone = -1;
    if (px->dead >= 0 && stopped_ranks(a, c, &gone) == 1 && gone != r && is_dead(px, c, gone) && px->dead != self) {
      *via_ci = cj;
      *via_rank = r;
      return px->dead;
    }
    if (!last) continue;
    const int64_t top = c->ranks[r].dump->n_calls[0];
    for (int r2 = 0; r2 < c->nranks; r2++) {
      const an_dump* d2 = c->ranks[r2].dump;
      size_t ci2;
      int rank2;
      if (r2 == r || !d2 || !d2->has_progress || d2->n_calls[0] >= top || !process_of(a, cj, r2, &d2)) continue;
      int32_t t2 = process_stuck(px, d2, cj, self, depth - 1, &ci2, &rank2);
      if (t2 < 0) t2 = absent_culprit(a, d2, self);
      if (t2 >= 0) {
        *via_ci = cj;
        *via_rank = r;
        return t2;
      }
    }
  }
  return -1;
}

int an_origin(pt_analysis* a) {
  const size_t n = a->n_culprits;
  for (size_t k = 0; k < n; k++) {
    an_culprit* q = &a->culprits[k];
    q->pub.consequence_of = q->waits_in = q->via_rank = q->via_comm = -1;
    q->chain[0] = 0;
  }
  a->n_origins = n;
  for (size_t k = 0; k < n; k++) a->culprits[k].absent = (int8_t)absent_only(a, &a->culprits[k]);
  if (n < 2) return 0;
  int32_t* next = an_alloc(&a->mem, n * sizeof *next);   /* the culprit this one's rank waits in */
  int32_t* via = an_alloc(&a->mem, n * sizeof *via);     /* the rank of its process there */
  int32_t* via_comm = an_alloc(&a->mem, n * sizeof *via_comm); /* and that communicator */
  int32_t* origin = an_alloc(&a->mem, n * sizeof *origin);
  int32_t* order = an_alloc(&a->mem, n * sizeof *order);
  int32_t* where = an_alloc(&a->mem, n * sizeof *where);
  int8_t* member = NULL; /* the culprits of a dead process (dead_group) */
  an_map procs;
  int rc = next && via && via_comm && origin && order && where ? an_map_init(&a->mem, &procs, 64) : PT_AN_ENOMEM;
  if (rc) goto out;
  /* Every (communicator, rank) under its process. */
  size_t n_slots = 0;
  for (size_t ci = 0; ci < a->n_comms; ci++) n_slots += (size_t)a->comms[ci].nranks;
  int64_t* slot = an_alloc(&a->mem, (n_slots + 1) * sizeof *slot); /* ci << 32 | rank */
  if (!slot) {
    rc = PT_AN_ENOMEM;
    goto out_map;
  }
  size_t m = 0;
  for (size_t ci = 0; ci < a->n_comms && !rc; ci++)
    for (int r = 0; r < a->comms[ci].nranks && !rc; r++) {
      const an_dump* d;
      if (!process_of(a, ci, r, &d)) continue;
      slot[m] = (int64_t)ci << 32 | (uint32_t)r;
      rc = an_map_add(&a->mem, &procs, process_key(d), (int32_t)m++);
    }
  int dead_node = -1;
  member = an_alloc(&a->mem, n);
  if (!member) {
    rc = PT_AN_ENOMEM;
    goto out_slot;
  }
  const int32_t dead = dead_group(a, n, &dead_node, member);
  /* Each culprit that says only where its rank is not: where its process
   * is stuck instead. */
  for (size_t k = 0; k < n && !rc; k++) {
    next[k] = via[k] = via_comm[k] = -1;
    const an_culprit* q = &a->culprits[k];
    const size_t ci = (size_t)q->comm_index;
    const an_dump* d;
    if (!q->absent || ci >= a->n_comms) continue;
    int32_t own = own_call_stuck(a, k);
    if (own < 0) own = same_rank_culprit(a, k);
    if (own >= 0) {
      next[k] = own;
      via[k] = q->pub.rank;
      via_comm[k] = (int32_t)ci;
      continue;
    }
    if (!process_of(a, ci, q->pub.rank, &d)) continue;
    const proc_index px = {a, &procs, slot, dead, dead_node};
    size_t via_ci = 0;
    int via_rank = -1;
    const int32_t t = process_stuck(&px, d, ci, (int32_t)k, 4, &via_ci, &via_rank);
    if (t >= 0) {
      next[k] = t;
      via[k] = via_rank;
      via_comm[k] = (int32_t)via_ci;
    }
  }
  /* One process absent from several communicators and stuck in none of
   * them the dumps show (in the application, in a call whose ops are
   * missing or never made, or in a communicator whose dumps are not
   * here): one fault. It stopped before the first call it did not make:
   * where the others came to wait first (waiting_since), each other
   * communicator having come to a call it never made later. That culprit
   * stands for it, the others follow it. Where a communicator's dumps
   * give no time: it left every communicator after its latest record
   * there, so it is furthest on where its latest record is (the first of
   * them where none is later). */
  for (size_t k = 0; k < n && !rc; k++) {
    const an_culprit* q = &a->culprits[k];
    const size_t ci = (size_t)q->comm_index;
    const an_dump* d;
    if (next[k] >= 0 || !q->absent || ci >= a->n_comms || !process_of(a, ci, q->pub.rank, &d))
      continue;
    int32_t best = (int32_t)k, first = (int32_t)k;
    int64_t best_ns = latest_record(a, ci, q->pub.rank), first_ns = waiting_since(a, ci, q->pub.rank);
    int timed = first_ns > 0;
    for (size_t m2 = 0; m2 < n; m2++) {
      const an_culprit* o = &a->culprits[m2];
      const size_t cj = (size_t)o->comm_index;
      const an_dump* e;
      if (m2 == k || next[m2] >= 0 || !o->absent || cj >= a->n_comms || cj == ci ||
          !process_of(a, cj, o->pub.rank, &e) || !same_process(d, e))
        continue;
      const int64_t ns = latest_record(a, cj, o->pub.rank), since = waiting_since(a, cj, o->pub.rank);
      if (ns > best_ns || (ns == best_ns && (int32_t)m2 < best)) {
        best = (int32_t)m2;
        best_ns = ns;
      }
      timed &= since > 0;
      if (since > 0 && (since < first_ns || (since == first_ns && (int32_t)m2 < first))) {
        first = (int32_t)m2;
        first_ns = since;
      }
    }
    if (timed) best = first;
    if (best != (int32_t)k) {
      next[k] = best;
      via[k] = -2; /* the same process, absent there too */
    }
  }
  /* The dead process's other ranks whose dumps stop follow the one that
   * stands for it (dead_group). */
  for (size_t k = 0; dead >= 0 && k < n; k++) {
    if (!member[k] || next[k] >= 0 || (int32_t)k == dead) continue;
    next[k] = dead;
    via[k] = -3; /* likely the same process, dead */
  }
  /* Follow the edges to where the waiting starts (a cycle: where it closes). */
  for (size_t k = 0; k < n; k++) {
    int32_t j = (int32_t)k;
    for (size_t steps = 0; next[j] >= 0 && steps < n; steps++) j = next[j];
    origin[k] = next[j] >= 0 ? (int32_t)k : j;
  }
  /* Origins first (in their order), each followed by nothing: the
   * consequences after every origin, in theirs. */
  size_t o = 0;
  for (size_t k = 0; k < n; k++)
    if (origin[k] == (int32_t)k) order[o++] = (int32_t)k;
  const size_t n_origins = o;
  if (n_origins == n) goto out_slot;
  for (size_t k = 0; k < n; k++)
    if (origin[k] != (int32_t)k) order[o++] = (int32_t)k;
  for (size_t i = 0; i < n; i++) where[order[i]] = (int32_t)i;
  an_culprit* sorted = an_alloc(&a->mem, n * sizeof *sorted);
  if (!sorted) {
    rc = PT_AN_ENOMEM;
    goto out_slot;
  }
  for (size_t i = 0; i < n; i++) {
    an_culprit* q = &sorted[i];
    *q = a->culprits[order[i]];
    const int32_t k = order[i];
    q->pub.consequence_of = origin[k] == k ? -1 : where[origin[k]];
    q->waits_in = next[k] >= 0 ? where[next[k]] : -1;
    q->via_rank = via[k];
    q->via_comm = via_comm[k];
  }
  memcpy(a->culprits, sorted, n * sizeof *sorted);
  an_free(&a->mem, sorted);
  for (size_t i = 0; i < a->n_items; i++)
    if (a->items[i].culprit >= 0 && (size_t)a->items[i].culprit < n) a->items[i].culprit = where[a->items[i].culprit];
  /* The chain of each consequence, from it to its origin. */
  for (size_t i = n_origins; i < n; i++) {
    an_culprit* q = &a->culprits[i];
    size_t len = 0;
    int32_t j = (int32_t)i;
    for (size_t steps = 0; a->culprits[j].waits_in >= 0 && steps < n; steps++) {
      const an_culprit* s = &a->culprits[j];
      const an_culprit* t = &a->culprits[s->waits_in];
      const size_t ci = (size_t)s->comm_index, cj = s->via_comm >= 0 ? (size_t)s->via_comm : (size_t)t->comm_index;
      const an_dump* d = NULL;
      if (ci < a->n_comms) process_of(a, ci, s->pub.rank, &d);
      char gpu[24] = "";
      if (d && d->dev >= 0) snprintf(gpu, sizeof gpu, " (GPU %d)", d->dev);
      char from[96], to[96], in[48] = "";
      an_comm_words(a, ci, from, sizeof from);
      an_comm_words(a, cj, to, sizeof to);
      if (cj < a->n_comms && a->comms[cj].stuck_op_count >= 0)
        snprintf(in, sizeof in, ", stuck in opCount %lld", (long long)a->comms[cj].stuck_op_count);
      int w = s->via_rank == -3
                  ? snprintf(q->chain + len, sizeof q->chain - len,
                             "%s%s waits on rank %d, whose dumps stop -> likely the same process as rank %d of %s, "
                             "whose dumps stop too: a process that dies writes no dump after it in any "
                             "communicator it holds, and each of these lacks that one rank only",
                             len ? " -> " : "", from, s->pub.rank, t->pub.rank, to)
              : cj == ci && s->via_rank == s->pub.rank
                  ? snprintf(q->chain + len, sizeof q->chain - len,
                             "%s%s waits on rank %d -> it is in another call of its own there%s", len ? " -> " : "",
                             from, s->pub.rank, in)
              : s->via_rank == -2
                  ? snprintf(q->chain + len, sizeof q->chain - len,
                             "%s%s waits on rank %d -> its process %s:%d%s is absent from %s too, and stuck in "
                             "none of the communicators it holds",
                             len ? " -> " : "", from, s->pub.rank, d ? d->host : "?", d ? d->pid : 0, gpu, to)
                  : snprintf(q->chain + len, sizeof q->chain - len,
                             "%s%s waits on rank %d -> its process %s:%d%s is rank %d of %s%s", len ? " -> " : "",
                             from, s->pub.rank, d ? d->host : "?", d ? d->pid : 0, gpu, s->via_rank, to, in);
      if (w < 0 || (size_t)w >= sizeof q->chain - len) break;
      len += (size_t)w;
      j = s->waits_in;
    }
    snprintf(q->chain + len, sizeof q->chain - len, " -> culprit %d", q->pub.consequence_of + 1);
  }
  a->n_origins = n_origins;
out_slot:
  an_free(&a->mem, member);
  an_free(&a->mem, slot);
out_map:
  an_map_free(&a->mem, &procs);
out:
  an_free(&a->mem, next);
  an_free(&a->mem, via);
  an_free(&a->mem, via_comm);
  an_free(&a->mem, origin);
  an_free(&a->mem, order);
  an_free(&a->mem, where);
  return rc;
}
