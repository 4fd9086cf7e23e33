/*
 * comms.c — the per-communicator evidence every judgement reads: per
 * communicator, every rank's latest dump, its node, what it is missing,
 * and one item per op of the latest dumps, with whether it is stuck.
 *
 * Which ops are stuck: active ops of the latest dumps, except
 *   - ops that moved since the rank's previous dump, or less than the stall
 *     time before the dump (JSON: their progress time; text with a dump
 *     time: lastT, their last update), when that dump was taken on
 *     demand or periodically (a watchdog, hook or finalize dump is taken
 *     when the job no longer moves);
 *   - ops that never progressed to a peer on the same node: those are not
 *     network ops (NCCL leaves some non-network proxy ops unstopped).
 *
 * Ranks with no dump are placed on a node when the ranks next to them in
 * number are on one node that has fewer ranks than the others: ranks are
 * numbered node by node in practice, and a dead rank's node then still
 * explains the stall it causes there. When the host names cannot tell the
 * nodes apart (every rank on one machine), the dumps' nNodes and that
 * numbering, or the largest blocks of ranks that no network op joins, give
 * each rank its node.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/evidence.h"

static uint64_t name_key(const char* s) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then mixed */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return an_mix(h, 0);
}

int an_host_id(pt_analysis* a, const char* host) {
  if (!host || !host[0]) return -1;
  an_hosts* hs = &a->hosts;
  if (!hs->index.cap && an_map_init(&a->mem, &hs->index, 16) != 0) return -1;
  const uint64_t key = name_key(host);
  for (int32_t i = an_map_first(&hs->index, key); i >= 0; i = an_map_next(&hs->index, i))
    if (!strcmp(hs->names[i], host)) return (int)i;
  char** slot = an_grow(&a->mem, (void**)&hs->names, &hs->n, &hs->cap, sizeof *slot);
  if (!slot) return -1;
  *slot = an_strdup(&a->mem, host);
  if (!*slot || an_map_add(&a->mem, &hs->index, key, (int32_t)(hs->n - 1)) != 0) {
    an_free(&a->mem, *slot);
    hs->n--;
    return -1;
  }
  return (int)(hs->n - 1);
}

static int terminal_trigger(int t) { return t == AN_TRIG_STALL || t == AN_TRIG_FINALIZE || t == AN_TRIG_HOOK || t == AN_TRIG_UNKNOWN; }

static uint64_t prev_key(uint64_t comm, int rank, const an_op* op) {
  uint64_t h = an_mix(an_mix(0x9e, comm), (uint64_t)(int64_t)rank);
  h = an_mix(h, (uint64_t)op->op_count);
  h = an_mix(h, (uint64_t)op->op_id);
  return an_mix(h, ((uint64_t)(uint32_t)op->channel << 33) | ((uint64_t)(uint32_t)op->peer << 1) | (uint64_t)op->is_send);
}

/* The op of `prev` that is `op`, or NULL. */
static const an_op* previous_of(const an_dump* prev, const an_map* idx, const an_op* const* prev_ops, uint64_t comm,
                                int rank, const an_op* op) {
  if (!prev) return NULL;
  for (int32_t i = an_map_first(idx, prev_key(comm, rank, op)); i >= 0; i = an_map_next(idx, i)) {
    const an_op* q = prev_ops[i];
    if (q->op_count == op->op_count && q->op_id == op->op_id && q->channel == op->channel && q->peer == op->peer &&
        q->is_send == op->is_send && q->comm == comm && q->rank == rank)
      return q;
  }
  return NULL;
}

static int moved(const an_op* a, const an_op* b) {
  return a->cnt[AN_C_POSTED] != b->cnt[AN_C_POSTED] || a->cnt[AN_C_RECEIVED] != b->cnt[AN_C_RECEIVED] ||
         a->cnt[AN_C_TRANSMITTED] != b->cnt[AN_C_TRANSMITTED] || a->cnt[AN_C_DONE] != b->cnt[AN_C_DONE];
}

static int cmp_comm(const void* x, const void* y) {
  const an_slot* const* a = x;
  const an_slot* const* b = y;
  if ((*a)->comm != (*b)->comm) return (*a)->comm < (*b)->comm ? -1 : 1;
  return ((*a)->rank > (*b)->rank) - ((*a)->rank < (*b)->rank);
}

/* Places ranks without a dump on a node (see the file comment). */
static void place_missing(pt_analysis* a, an_comm* c) {
  int nodes = 0;
  for (int r = 0; r < c->nranks; r++)
    if (c->ranks[r].node + 1 > nodes) nodes = c->ranks[r].node + 1;
  if (nodes == 0) return;
  int* count = an_alloc(&a->mem, (size_t)nodes * sizeof *count);
  /* near[2r], near[2r+1]: the node of the nearest rank below and above r
   * whose dump names one (-1: none). Two passes, so that a communicator of
   * many ranks with few dumps (a corrupt rank number, say) costs O(ranks),
   * not O(ranks^2). */
  int* near = an_alloc(&a->mem, 2 * (size_t)c->nranks * sizeof *near);
  if (!count || !near) { /* the analysis is marked: no verdict from it */
    an_free(&a->mem, count);
    an_free(&a->mem, near);
    return;
  }
  int most = 0;
  for (int r = 0; r < c->nranks; r++)
    if (c->ranks[r].node >= 0 && ++count[c->ranks[r].node] > most) most = count[c->ranks[r].node];
  for (int r = 0, last = -1; r < c->nranks; r++) {
    near[2 * r] = last;
    if (c->ranks[r].dump && c->ranks[r].node >= 0) last = c->ranks[r].node;
  }
  for (int r = c->nranks - 1, last = -1; r >= 0; r--) {
    near[2 * r + 1] = last;
    if (c->ranks[r].dump && c->ranks[r].node >= 0) last = c->ranks[r].node;
  }
  for (int r = 0; r < c->nranks; r++) {
    an_rank* k = &c->ranks[r];
    if (k->present || k->node >= 0) continue;
    const int lo = near[2 * r], hi = near[2 * r + 1];
    int node = lo >= 0 && (hi < 0 || hi == lo) ? lo : hi >= 0 && lo < 0 ? hi : lo >= 0 && count[lo] < most ? lo : hi;
    if (node >= 0 && count[node] < most) {
      k->node = node;
      k->placed = 1;
      count[node]++;
    }
  }
  an_free(&a->mem, count);
  an_free(&a->mem, near);
}

/* Two ranks joined by a network op (one that progressed: a never-started
 * op may be a non-network one) are on different nodes. */
static int joined_in_block(const an_comm* c, const an_slot** slots, size_t n, int block) {
  for (size_t k = 0; k < n; k++) {
    const an_dump* d = slots[k]->latest;
    for (size_t q = 0; q < d->n_ops; q++) {
      const an_op* op = &d->ops[q];
      if (op->peer < 0 || op->peer >= c->nranks || op->peer == op->rank) continue;
      if (!op->cnt[AN_C_POSTED] && !op->cnt[AN_C_RECEIVED] && !op->cnt[AN_C_TRANSMITTED] && !op->cnt[AN_C_DONE])
        continue;
      if (block ? op->rank / block == op->peer / block : c->ranks[op->rank].node == c->ranks[op->peer].node)
        return 1;
    }
  }
  return 0;
}

/* Nodes when the dumps' host names cannot tell them apart: a network op
 * joins two ranks of one host name (every rank of a job on one machine;
 * containers may share a name), or names are missing. Ranks
 * are then taken to be numbered node by node: by the dumps' nNodes when
 * they give it, else in the largest blocks that no network op joins. */
static void number_nodes(pt_analysis* a, an_comm* c, const an_slot** slots, size_t n) {
  int named = 1;
  for (int r = 0; r < c->nranks; r++)
    if (c->ranks[r].present && c->ranks[r].node < 0) named = 0;
  if (named && !joined_in_block(c, slots, n, 0)) return;
  int nnodes = 0, block = 0;
  for (size_t k = 0; k < n; k++)
    if (slots[k]->latest->nnodes > nnodes) nnodes = slots[k]->latest->nnodes;
  if (nnodes > 1 && c->nranks % nnodes == 0 && !joined_in_block(c, slots, n, c->nranks / nnodes))
    block = c->nranks / nnodes;
  for (int b = c->nranks / 2; !block && b >= 1; b--)
    if (c->nranks % b == 0 && !joined_in_block(c, slots, n, b)) block = b;
  if (!block) return;
  for (int r = 0; r < c->nranks; r++) {
    char name[64]; /* one name per block, whatever host the rank's dump named */
    snprintf(name, sizeof name, "#node%d", r / block);
    c->ranks[r].node = an_host_id(a, name);
    c->ranks[r].placed = !c->ranks[r].present;
    c->ranks[r].numbered = 1;
  }
}

/* Foreign-pid refusals, per node: every rank of a node gets the most any
 * rank of it refused (its dump's count, or what it was given without a
 * dump), where that is more than its own. One pass for the nodes' most,
 * one to hand it out (a scan of the ranks per rank that refused was
 * quadratic in the ranks of one communicator). */
static int spread_foreign(pt_analysis* a, an_comm* c) {
  int nodes = 0, any = 0;
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    const int64_t fp = d && d->has_drops ? d->drops[8] : c->ranks[r].foreign;
    if (!fp || c->ranks[r].node < 0) continue;
    any = 1;
    if (c->ranks[r].node + 1 > nodes) nodes = c->ranks[r].node + 1;
  }
  if (!any) return 0;
  int64_t* most = an_alloc(&a->mem, (size_t)nodes * sizeof *most);
  char* has = an_alloc(&a->mem, (size_t)nodes);
  if (!most || !has) {
    an_free(&a->mem, most);
    an_free(&a->mem, has);
    return -1;
  }
  for (int r = 0; r < c->nranks; r++) {
    const an_dump* d = c->ranks[r].dump;
    const int64_t fp = d && d->has_drops ? d->drops[8] : c->ranks[r].foreign;
    const int node = c->ranks[r].node;
    if (!fp || node < 0) continue;
    if (!has[node] || fp > most[node]) most[node] = fp;
    has[node] = 1;
  }
  for (int q = 0; q < c->nranks; q++) {
    const int node = c->ranks[q].node;
    if (node >= 0 && node < nodes && has[node] && c->ranks[q].foreign < most[node]) c->ranks[q].foreign = most[node];
  }
  an_free(&a->mem, most);
  an_free(&a->mem, has);
  return 0;
}

/* owned[e]: empty_ranks[e]'s process has a dump as that rank in some
 * communicator (so the empty dump is that communicator's). NULL with no
 * empty rank; *rc on failure. */
static unsigned char* empty_owned(pt_analysis* a, int* rc) {
  if (!a->n_empty) return NULL;
  unsigned char* owned = an_alloc(&a->mem, a->n_empty);
  an_map by;
  if (!owned || an_map_init(&a->mem, &by, a->n_slots + 1) != 0) {
    an_free(&a->mem, owned);
    *rc = PT_AN_ENOMEM;
    return NULL;
  }
  memset(owned, 0, a->n_empty);
  for (size_t i = 0; i < a->n_slots; i++) {
    const an_dump* d = a->slots[i].latest;
    if (d && d->pid && an_map_add(&a->mem, &by, an_rank_proc_key(a->slots[i].rank, d->host, d->pid), (int32_t)i)) {
      *rc = PT_AN_ENOMEM;
      break;
    }
  }
  for (size_t e = 0; e < a->n_empty && *rc == 0; e++) {
    const an_empty* em = &a->empty_ranks[e];
    if (!em->pid) continue;
    for (int32_t j = an_map_first(&by, an_rank_proc_key(em->rank, em->host, em->pid)); j >= 0 && !owned[e];
         j = an_map_next(&by, j)) {
      const an_dump* d = a->slots[j].latest;
      owned[e] = a->slots[j].rank == em->rank && d->pid == em->pid && !strcmp(d->host, em->host);
    }
  }
  an_map_free(&a->mem, &by);
  return owned;
}

int an_build(pt_analysis* a) {
  int orc = 0;
  unsigned char* owned = empty_owned(a, &orc);
  if (orc) return orc;
  /* Slots in communicator order. */
  const an_slot** order = an_alloc(&a->mem, (a->n_slots + 1) * sizeof *order);
  if (!order) {
    an_free(&a->mem, owned);
    return PT_AN_ENOMEM;
  }
  size_t n_items = 0, n_prev = 0;
  for (size_t i = 0; i < a->n_slots; i++) {
    order[i] = &a->slots[i];
    if (a->slots[i].latest) n_items += a->slots[i].latest->n_ops;
    if (a->slots[i].previous) n_prev += a->slots[i].previous->n_ops;
  }
  qsort(order, a->n_slots, sizeof *order, cmp_comm);
  size_t n_comms = 0;
  for (size_t i = 0; i < a->n_slots; i++)
    if (i == 0 || order[i]->comm != order[i - 1]->comm) n_comms++;
  a->comms = an_alloc(&a->mem, (n_comms + 1) * sizeof *a->comms);
  a->items = an_alloc(&a->mem, (n_items + 1) * sizeof *a->items);
  /* The previous dumps' ops, indexed, to see which active ops moved. */
  const an_op** prev_ops = an_alloc(&a->mem, (n_prev + 1) * sizeof *prev_ops);
  an_map prev_idx;
  int rc = an_map_init(&a->mem, &prev_idx, n_prev + 1);
  if (!a->comms || !a->items || !prev_ops || rc) {
    an_free(&a->mem, owned);
    an_free(&a->mem, order);
    an_free(&a->mem, prev_ops);
    an_map_free(&a->mem, &prev_idx);
    return PT_AN_ENOMEM;
  }
  size_t np = 0;
  for (size_t i = 0; i < a->n_slots; i++) {
    const an_dump* p = a->slots[i].previous;
    for (size_t j = 0; p && j < p->n_ops; j++) {
      prev_ops[np] = &p->ops[j];
      if (an_map_add(&a->mem, &prev_idx, prev_key(a->slots[i].comm, a->slots[i].rank, &p->ops[j]), (int32_t)np) != 0) {
        rc = PT_AN_ENOMEM;
        break;
      }
      np++;
    }
  }

  size_t it = 0;
  for (size_t i = 0; i < a->n_slots && rc == 0;) {
    size_t j = i;
    while (j < a->n_slots && order[j]->comm == order[i]->comm) j++;
    const size_t next = j;
    an_comm* c = &a->comms[a->n_comms++];
    c->comm = order[i]->comm;
    c->stuck_op_count = -1;
    c->first_item = it;
    /* The size the dumps state (nRanks) bounds the communicator: a rank or
     * peer beyond it is a corrupt number, which would otherwise make one
     * communicator of millions of ranks without a dump. Without a stated
     * size (or when no dump's rank is within it), the highest rank or peer
     * seen gives it. */
    int stated = 0, nranks = 0, within = 0;
    for (size_t k = i; k < j; k++)
      if (order[k]->latest->nranks > stated) stated = order[k]->latest->nranks;
    for (size_t k = i; k < j; k++) within |= order[k]->rank < stated;
    if (!within) stated = 0;
    size_t kept = i;
    for (size_t k = i; k < j; k++) {
      const an_dump* d = order[k]->latest;
      if (stated && order[k]->rank >= stated) {
        an_input_error(a, d->input, d->line,
                       "dump of rank %d, beyond the %d ranks its communicator's dumps state: skipped", order[k]->rank,
                       stated);
        continue;
      }
      order[kept++] = order[k];
      if (order[k]->rank + 1 > nranks) nranks = order[k]->rank + 1;
      for (size_t q = 0; q < d->n_ops; q++) {
        if (stated && d->ops[q].peer >= stated)
          an_input_error(a, d->ops[q].input, d->ops[q].line,
                         "op with peer %d, beyond the %d ranks its communicator's dumps state", d->ops[q].peer, stated);
        else if (d->ops[q].peer + 1 > nranks)
          nranks = d->ops[q].peer + 1;
      }
    }
    j = kept;
    for (size_t e = 0; e < a->n_empty; e++)
      if (a->empty_ranks[e].rank + 1 > nranks) nranks = a->empty_ranks[e].rank + 1;
    if (stated) nranks = stated;
    c->nranks = nranks;
    c->ranks = an_alloc(&a->mem, ((size_t)nranks + 1) * sizeof *c->ranks);
    if (!c->ranks) {
      rc = PT_AN_ENOMEM;
      break;
    }
    for (int r = 0; r < nranks; r++) {
      c->ranks[r].node = -1;
      c->ranks[r].max_op_count = -1;
    }
    for (size_t k = i; k < j; k++) {
      const an_dump* d = order[k]->latest;
      an_rank* rk = &c->ranks[order[k]->rank];
      rk->dump = d;
      rk->cut = order[k]->cut;
      rk->present = 1;
      rk->node = an_host_id(a, d->host);
      for (size_t q = 0; q < d->n_ops; q++) {
        if (d->ops[q].op_count > rk->max_op_count) rk->max_op_count = d->ops[q].op_count;
        if (d->ops[q].func >= 0) rk->host_counts = 1; /* RCCL's trace info came with it */
      }
      if (d->host_lib[0]) rk->host_counts = !strcmp(d->host_lib, "rccl");
      rk->seen_ns = d->time_ns;
      c->with_dump++;
      if (d->ns_times) a->slow_possible = 1;
    }
    /* A rank whose dump named no communicator (nothing recorded) — unless
     * its process has a dump as that rank in some communicator: the empty
     * dump is that one's (a process of a 3D-parallel job holds rank 1 of
     * its TP group and rank 0 of its DP group; its empty TP dump says
     * nothing of rank 1 of the DP group). */
    for (size_t e = 0; e < a->n_empty; e++) {
      const an_empty* em = &a->empty_ranks[e];
      int r = em->rank;
      if (r < 0 || r >= nranks || c->ranks[r].present || (owned && owned[e])) continue;
      c->ranks[r].present = 1;
      c->ranks[r].node = an_host_id(a, em->host);
      c->ranks[r].foreign = em->foreign;
      c->with_dump++;
    }
    number_nodes(a, c, order + i, j - i);
    if (spread_foreign(a, c) != 0) {
      rc = PT_AN_ENOMEM;
      break;
    }
    place_missing(a, c);
    an_cover_unknown(a, c); /* ranks a rank-unknown dump stands for */

    for (size_t k = i; k < j; k++) {
      const an_slot* s = order[k];
      const an_dump* d = s->latest;
      for (size_t q = 0; q < d->n_ops; q++) {
        an_item* x = &a->items[it++];
        const an_op* op = &d->ops[q];
        x->op = op;
        x->dump = d;
        x->partner = x->next = x->culprit = -1;
        x->node = c->ranks[s->rank].node;
        if (op->state != AN_ST_ACTIVE || op->n_steps <= 0 || op->cnt[AN_C_DONE] >= op->n_steps) continue;
        int peer_node = op->peer >= 0 && op->peer < nranks ? c->ranks[op->peer].node : -1;
        if (op->cnt[AN_C_POSTED] == 0 && op->cnt[AN_C_RECEIVED] == 0 && op->cnt[AN_C_TRANSMITTED] == 0 &&
            op->cnt[AN_C_DONE] == 0 && peer_node >= 0 && peer_node == x->node && op->peer != op->rank) {
          x->leaked = 1;
          a->n_leaked++;
          continue;
        }
        if (!terminal_trigger(d->trigger)) {
          const an_op* before = previous_of(s->previous, &prev_idx, prev_ops, s->comm, s->rank, op);
          int64_t stall_ns = (a->stall_ms >= 0 ? a->stall_ms : d->stall_ms > 0 ? d->stall_ms : 1000) * 1000000;
          /* legacy text has no progress time, only lastT (ms, refreshed by
           * every update): an op updated within the stall time may move */
          const int64_t last = d->ns_times ? op->progress_ns : op->last_ns;
          if ((before && moved(before, op)) || (d->time_ns && last && d->time_ns - last < stall_ns)) {
            x->moving = 1;
            a->n_moving++;
            continue;
          }
        }
        x->stuck = 1;
        a->n_stuck++;
      }
    }
    c->n_items = it - c->first_item;
    i = next;
  }
  an_free(&a->mem, order);
  an_free(&a->mem, prev_ops);
  an_free(&a->mem, owned);
  an_map_free(&a->mem, &prev_idx);
  a->n_items = it;
  return rc;
}
