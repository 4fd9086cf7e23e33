/*
 * report_text.c — the analysis for a person: the verdict first, then the
 * culprits (the one most ops wait on first), then a compact table of the
 * stuck edges, then what was read. `verbose` adds the evidence lines, every
 * input, missing and behind ranks, slow edges and all input errors.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/render.h"
#include "escape/escape.h"

#define PATH_SHOWN 1024 /* bytes of a file name shown; a longer one is cut */

#define TABLE_ROWS 40 /* stuck-edge rows without -v */
#define ERRORS_SHOWN 10

static void waits_for(char* buf, size_t n, const pt_analysis* a, const an_item* x) {
  const an_op* op = x->op;
  const an_op* pa = x->partner >= 0 ? a->items[x->partner].op : NULL;
  const an_comm* c = NULL;
  for (size_t i = 0; i < a->n_comms && !c; i++)
    if (a->comms[i].comm == op->comm) c = &a->comms[i];
  switch ((an_wait)x->wait) {
    case AN_W_GPU: snprintf(buf, n, "its GPU to produce data"); break;
    case AN_W_CREDIT: snprintf(buf, n, "rank %d to post a buffer (posted %" PRId64 ")", op->peer, pa ? pa->cnt[AN_C_POSTED] : 0); break;
    case AN_W_NETWORK:
      if (op->is_send) snprintf(buf, n, "the network (%s)", op->cnt[AN_C_TRANSMITTED] >= op->n_steps ? "sent, not completed" : "data ready, not sent");
      else snprintf(buf, n, "the network (rank %d sent %" PRId64 ")", op->peer, pa ? pa->cnt[AN_C_TRANSMITTED] : 0);
      break;
    case AN_W_DATA: snprintf(buf, n, "data from rank %d", op->peer); break;
    case AN_W_CONSUME: snprintf(buf, n, "its GPU to consume data (received %" PRId64 ")", op->cnt[AN_C_RECEIVED]); break;
    case AN_W_NOT_POSTING: snprintf(buf, n, "its proxy to post receives"); break;
    case AN_W_PEER_MISSING: snprintf(buf, n, "rank %d, which wrote no dump", op->peer); break;
    case AN_W_PEER_BEHIND:
      if (c && op->peer < c->nranks && c->ranks[op->peer].host_counts)
        snprintf(buf, n, "rank %d, whose records stop at opCount %" PRId64, op->peer, c->ranks[op->peer].max_op_count);
      else
        snprintf(buf, n, "rank %d, whose latest dump is older than this op", op->peer);
      break;
    case AN_W_PEER_NO_OP: snprintf(buf, n, "rank %d, which has no matching %s", op->peer, op->is_send ? "receive" : "send"); break;
    case AN_W_PEER_CUT: snprintf(buf, n, "rank %d, whose dump is cut before it could show the %s", op->peer, op->is_send ? "receive" : "send"); break;
    default: snprintf(buf, n, "-"); break;
  }
}

static void side(FILE* f, const pt_analysis* a, int32_t i, int is_send, int first, const char* lead) {
  char step[48], w[160], tag[48] = "";
  const char* dir = is_send ? "send" : "recv";
  int pad = first ? 0 : (int)strlen(lead);
  if (i < 0) {
    fprintf(f, "%s%*s%s  %-9s %-12s (no record)\n", first ? lead : "", pad, "", dir, "-", "-");
    return;
  }
  const an_item* x = &a->items[i];
  const an_op* op = x->op;
  snprintf(step, sizeof step, "%" PRId64 "/%" PRId64, an_op_progress(op), op->n_steps);
  if (x->stuck) waits_for(w, sizeof w, a, x);
  else snprintf(w, sizeof w, "%s", x->moving ? "(still moving)" : op->state == AN_ST_FINISHED ? "(done)" : "-");
  if (x->culprit >= 0) snprintf(tag, sizeof tag, "  [%d%s]", x->culprit + 1, x->origin ? ", origin" : "");
  fprintf(f, "%s%*s%s  %-9s %-12s %s%s\n", first ? lead : "", pad, "", dir, step,
          op->status >= 0 ? an_status_names[op->status] : "?", w, tag);
}

/* Table order: edges holding an origin first, then by culprit, channel,
 * opCount and sender. */
static int edge_has_origin(const pt_analysis* a, int32_t i) {
  const an_item* x = &a->items[i];
  return x->origin || (x->partner >= 0 && a->items[x->partner].stuck && a->items[x->partner].origin);
}

static int by_row(const void* p, const void* q, void* arg) {
  const pt_analysis* a = arg;
  int32_t i = *(const int32_t*)p, j = *(const int32_t*)q;
  const an_item* x = &a->items[i];
  const an_item* y = &a->items[j];
  int oi = !edge_has_origin(a, i), oj = !edge_has_origin(a, j);
  if (oi != oj) return oi - oj;
  uint32_t ci = (uint32_t)x->culprit, cj = (uint32_t)y->culprit; /* -1 last */
  if (ci != cj) return ci < cj ? -1 : 1;
  if (x->op->channel != y->op->channel) return x->op->channel - y->op->channel;
  if (x->op->op_count != y->op->op_count) return x->op->op_count < y->op->op_count ? -1 : 1;
  int si = x->op->is_send ? x->op->rank : x->op->peer, sj = y->op->is_send ? y->op->rank : y->op->peer;
  return si - sj;
}

static void culprit_block(FILE* f, const pt_analysis* a, size_t k, int verbose) {
  const an_culprit* q = &a->culprits[k];
  if (q->pub.consequence_of >= 0) { /* only waiting in another communicator its process holds */
    fprintf(f, "follows %d: %s\n", q->pub.consequence_of + 1, PT_TEXT(q->summary, sizeof q->summary));
    fprintf(f, "    because %s\n", PT_TEXT(q->chain, sizeof q->chain));
  } else {
    fprintf(f, "%s %zu: %s\n", k == 0 ? "culprit" : "also   ", k + 1, PT_TEXT(q->summary, sizeof q->summary));
    /* the communicators it holds up: each consequence's, once */
    size_t held = 0;
    for (size_t j = 0; j < a->n_culprits; j++) {
      const an_culprit* o = &a->culprits[j];
      if (o->pub.consequence_of != (int)k) continue;
      size_t i = 0;
      while (i < j && !(a->culprits[i].pub.consequence_of == (int)k && a->culprits[i].pub.comm_hash == o->pub.comm_hash))
        i++;
      held += i == j;
    }
    if (held) {
      char in[128];
      an_comm_words(a, (size_t)q->comm_index, in, sizeof in);
      fprintf(f, "    in %s; it holds up %zu other communicator%s, whose culprits follow from it (\"follows %zu\")\n",
              in, held, held == 1 ? "" : "s", k + 1);
    }
  }
  if (q->pub.possible && q->n_because) {
    fprintf(f, "    possible only: its evidence touches rank%s", q->n_because == 1 ? "" : "s");
    for (int i = 0; i < q->n_because && i < AN_BECAUSE; i++) fprintf(f, "%s %d", i ? "," : "", q->because[i]);
    if (q->n_because > AN_BECAUSE) fprintf(f, " and more");
    fprintf(f, ", whose dumps are missing, cut, short or old (\"not seen\" below)%s\n",
            an_slow_cause(q->pub.cause) ? ", or without ns times" : "");
  } else if (q->pub.possible) {
    fprintf(f, "    possible only: its dump is not among the inputs\n");
  }
  if (!verbose || q->origin < 0) return;
  const an_item* o = &a->items[q->origin];
  fprintf(f, "    evidence: %s:%u\n", PT_TEXT(a->inputs[o->op->input].path, PATH_SHOWN), o->op->line);
  if (o->partner >= 0) {
    const an_op* p = a->items[o->partner].op;
    fprintf(f, "    partner:  %s:%u\n", PT_TEXT(a->inputs[p->input].path, PATH_SHOWN), p->line);
  }
  int shown = 0;
  for (size_t i = 0; i < a->n_items && shown < 12; i++) {
    const an_item* x = &a->items[i];
    if (x->culprit != (int32_t)k || x->origin) continue;
    char w[160];
    waits_for(w, sizeof w, a, x);
    fprintf(f, "    waits on it: rank %d %s %s %d, channel %d: %s\n", x->op->rank, x->op->is_send ? "send" : "recv",
            x->op->is_send ? "to" : "from", x->op->peer, x->op->channel, w);
    shown++;
  }
}

#define GAPS_SHOWN 20

#define NO_COMM_SHOWN 8
typedef struct {
  FILE* f;
  size_t n;
} no_comm_ctx;

static void no_comm_line(const char* host, int pid, size_t dumps, void* arg) {
  no_comm_ctx* c = arg;
  if (c->n++ < NO_COMM_SHOWN)
    fprintf(c->f, "%s %s pid %d (%zu dump%s)", c->n > 1 ? "," : "", PT_TEXT(host, 64), pid, dumps, dumps == 1 ? "" : "s");
}

/* "not seen": the gaps (complete.c), then the rank-unknown dumps and, with
 * -v, what the directories held unread. */

/* A missing rank already named as a culprit of its communicator is not a
 * possible culprit "too". */
static int named_missing(const pt_analysis* a, const pt_gap* g) {
  if (g->rank_last > g->rank) return 0;
  for (size_t k = 0; k < a->n_culprits; k++) {
    const pt_culprit* c = &a->culprits[k].pub;
    if (c->cause == PT_CAUSE_RANK_MISSING && c->rank == g->rank && c->comm_hash == g->comm_hash) return 1;
  }
  return 0;
}
static void gaps_block(FILE* f, const pt_analysis* a, int verbose) {
  if (a->n_gaps) {
    fprintf(f, "\nnot seen (the verdict cannot speak for these):\n");
    for (size_t i = 0; i < a->n_gaps && (verbose || i < GAPS_SHOWN); i++) {
      const pt_gap* g = &a->gaps[i].pub;
      char seq[32] = "its latest dump";
      if (g->dump_seq >= 0) snprintf(seq, sizeof seq, "dump %lld", (long long)g->dump_seq);
      switch (g->kind) {
        case PT_GAP_MISSING:
          if (g->rank_last > g->rank) fprintf(f, "  ranks %d-%d", g->rank, g->rank_last);
          else fprintf(f, "  rank %d", g->rank);
          fprintf(f, " of communicator %" PRIu64 ": no dump\n", g->comm_hash);
          break;
        case PT_GAP_CUT: fprintf(f, "  rank %d: %s has no end: cut (%s:%u)", g->rank, seq, PT_TEXT(g->path, PATH_SHOWN), g->line); break;
        case PT_GAP_SHORT:
          if (g->announced >= 0)
            fprintf(f, "  rank %d: %s announces %lld records, %lld were read (%s:%u)", g->rank, seq,
                    (long long)g->announced, (long long)g->read, PT_TEXT(g->path, PATH_SHOWN), g->line);
          else
            fprintf(f, "  rank %d: lines of %s could not be read (%s:%u)", g->rank, seq, PT_TEXT(g->path, PATH_SHOWN),
                    g->line);
          break;
        case PT_GAP_STALE:
          fprintf(f, "  rank %d: %s is %lld ms older than its peers' latest (stall time %lld ms; %s:%u)\n", g->rank, seq,
                  (long long)g->behind_ms, (long long)g->stall_ms, PT_TEXT(g->path, PATH_SHOWN), g->line);
          break;
        case PT_GAP_UNREADABLE: fprintf(f, "  %s: could not be read\n", PT_TEXT(g->path, PATH_SHOWN)); break;
        case PT_GAP_MASK_OFF:
          fprintf(f, "  rank %d: %s was taken while the host's profiler mask left the proxy events out (RAS): "
                  "calls since are not recorded (%s:%u)\n", g->rank, seq, PT_TEXT(g->path, PATH_SHOWN), g->line);
          break;
        default: break;
      }
      if (g->kind == PT_GAP_CUT || g->kind == PT_GAP_SHORT) {
        if (g->read_instead >= 0)
          fprintf(f, "; dump %lld before it, whole, is read instead", (long long)g->read_instead);
        fputc('\n', f);
      }
    }
    if (!verbose && a->n_gaps > GAPS_SHOWN) fprintf(f, "  … %zu more (-v lists them all)\n", a->n_gaps - GAPS_SHOWN);
    if (a->n_stuck) {
      int n = 0;
      for (size_t i = 0; i < a->n_gaps && (verbose || n < 32); i++) {
        const pt_gap* g = &a->gaps[i].pub;
        if (!g->may_hold_fault || g->rank < 0 || named_missing(a, g)) continue;
        fprintf(f, n++ ? ", " : "possible culprits too (the dumps cannot clear them): ");
        if (g->rank_last > g->rank) fprintf(f, "ranks %d-%d", g->rank, g->rank_last);
        else fprintf(f, "rank %d", g->rank);
      }
      if (n) fputc('\n', f);
    }
  }
  for (size_t i = 0; i < a->n_comms; i++) {
    const an_comm* c = &a->comms[i];
    int covered = 0;
    for (int r = 0; r < c->nranks; r++) covered += c->ranks[r].unknown;
    if (covered)
      fprintf(f, "\nrank unknown: dumps of communicator %" PRIu64 " that do not name their rank (the plugin was not told"
                 " it) stand for its %d rank%s without a dump of their own\n",
              c->comm, covered, covered == 1 ? "" : "s");
    else if (c->unknown_dumps)
      fprintf(f, "\nrank unknown: %d rank%s of communicator %" PRIu64 " left dumps that do not name their rank; they may"
                 " be some of the ranks without a dump\n",
              c->unknown_dumps, c->unknown_dumps == 1 ? "" : "s", c->comm);
  }
  const size_t anon = an_no_comm_processes(a, NULL, NULL);
  if (anon) {
    fprintf(f, "\nno communicator: %zu process%s left dumps that name neither their rank nor their communicator (NCCL"
               " 2.23-2.26 tell a rank both with its first operation, so each is a rank that started none):",
            anon, anon == 1 ? "" : "es");
    no_comm_ctx nc = {f, 0};
    an_no_comm_processes(a, no_comm_line, &nc);
    if (nc.n > NO_COMM_SHOWN) fprintf(f, " … %zu more", nc.n - NO_COMM_SHOWN);
    int missing = 0;
    for (size_t i = 0; i < a->n_gaps && !missing; i++) missing = a->gaps[i].pub.kind == PT_GAP_MISSING;
    fprintf(f, "%s\n", missing ? "; a rank without a dump above may be one of them, alive and never having entered" : "");
  }
  if (verbose && a->n_skipped) {
    fprintf(f, "\nskipped in the directories read:\n");
    for (size_t i = 0; i < a->n_skipped; i++) fprintf(f, "  %s: %s\n", PT_TEXT(a->skipped[i].path, PATH_SHOWN), a->skipped[i].why);
  }
}

/* Slow edges listed without -v: beside an incomplete verdict with nothing
 * stuck read (the edges are all the records have to say), and beside an OK
 * that names no culprit for them. */
static int slow_listed(const pt_analysis* a) {
  return (a->verdict == PT_VERDICT_INCOMPLETE && !a->n_stuck) || an_unexplained_slow(a, NULL, 0);
}

int pt_analysis_write_text(const pt_analysis* a, FILE* f, int verbose) {
  if (!a || !f) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  /* The table's rows, before the first byte: short of memory, nothing is
   * written rather than part of the report. */
  an_mem scratch = {0};
  int32_t* rows = a->n_stuck ? an_alloc(&scratch, (a->n_items + 1) * sizeof *rows) : NULL;
  if (a->n_stuck && !rows) return PT_AN_ENOMEM;
  const char* v = a->verdict == PT_VERDICT_HANG ? "HANG" : a->verdict == PT_VERDICT_SLOW ? "SLOW"
                  : a->verdict == PT_VERDICT_OK ? "OK" : a->verdict == PT_VERDICT_INCOMPLETE ? "INCOMPLETE" : "NO DUMP";
  fprintf(f, "proxytrace analyze: %s", v);
  if (a->verdict == PT_VERDICT_HANG) {
    int all_missing = a->n_culprits > 0;
    for (size_t k = 0; k < a->n_culprits; k++) all_missing &= a->culprits[k].pub.cause == PT_CAUSE_RANK_MISSING;
    if (a->n_stuck || !a->n_desync) fprintf(f, " — %zu op%s stuck", a->n_stuck, a->n_stuck == 1 ? "" : "s");
    else if (all_missing) fputs(" — ranks wait in a call on a rank that wrote no dump", f);
    else fputs(" — ranks disagree about their calls", f);
    for (size_t i = 0; i < a->n_comms; i++) {
      const an_comm* c = &a->comms[i];
      if (c->stuck_op_count < 0 && !c->coll[0]) continue;
      fprintf(f, "; communicator %" PRIu64 " (%d ranks, %d with a dump)", c->comm, c->nranks, c->with_dump);
      if (c->stuck_op_count >= 0) fprintf(f, " in opCount %" PRId64, c->stuck_op_count);
      if (c->coll[0]) fprintf(f, " (%s)", PT_TEXT(c->coll, sizeof c->coll));
      if (c->tag_known > 0) fprintf(f, " in userTag 0x%" PRIx64 " (your phase)", c->user_tag);
      else if (c->tag_known < 0) fputs(" in a userTag the dump lost", f);
    }
    fputc('\n', f);
  } else if (a->verdict == PT_VERDICT_SLOW) {
    const size_t n = a->n_slow + a->mslow.n_edges;
    fprintf(f, " — nothing is stuck, but %zu edge%s %s slow\n", n, n == 1 ? "" : "s", n == 1 ? "is" : "are");
  } else if (a->verdict == PT_VERDICT_OK) {
    char words[640];
    an_ok_words(a, words, sizeof words, 1);
    fprintf(f, " — %s\n", words);
  } else if (a->verdict == PT_VERDICT_INCOMPLETE) {
    char what[256];
    an_gap_summary(a, what, sizeof what);
    const size_t n_slow = a->n_slow + a->mslow.n_edges;
    fprintf(f, " — %s in what was read, but the dumps do not show the whole job: %s",
            a->n_stuck ? "ops are stuck only" : "nothing is stuck", what);
    if (n_slow) fprintf(f, "; %zu edge%s slow in what was read", n_slow, n_slow == 1 ? " is" : "s are");
    fputc('\n', f);
  } else {
    fprintf(f, " — no input held a dump\n");
  }
  for (size_t k = 0; k < a->n_culprits; k++) {
    /* A communicator's consequences of one culprit: the first, with its
     * chain, and how many more (its other channels and ranks wait the
     * same way); --verbose lists each. */
    const an_culprit* q = &a->culprits[k];
    if (!verbose && q->pub.consequence_of >= 0) {
      size_t seen = 0, more = 0;
      for (size_t j = 0; j < a->n_culprits; j++) {
        const an_culprit* o = &a->culprits[j];
        if (o->pub.consequence_of != q->pub.consequence_of || o->pub.comm_hash != q->pub.comm_hash) continue;
        if (j < k) seen++;
        else if (j > k) more++;
      }
      if (seen) continue;
      culprit_block(f, a, k, verbose);
      if (more) fprintf(f, "    and %zu more of that communicator alike (--verbose lists them)\n", more);
      continue;
    }
    culprit_block(f, a, k, verbose);
  }
  gaps_block(f, a, verbose);

  if (a->n_stuck) {
    fprintf(f, "\nstuck edges (each side's step, status and what it waits for; [n] = culprit n)\n");
    fprintf(f, "  ch  opCount  sender -> receiver\n");
    size_t n_rows = 0, skipped = 0;
    for (size_t i = 0; i < a->n_items; i++) {
      const an_item* x = &a->items[i];
      if (!x->stuck) continue;
      if (x->partner >= 0 && a->items[x->partner].stuck && (size_t)x->partner < i) continue;
      rows[n_rows++] = (int32_t)i;
    }
    qsort_r(rows, n_rows, sizeof *rows, by_row, (void*)a);
    for (size_t r = 0; r < n_rows; r++) {
      size_t i = (size_t)rows[r];
      const an_item* x = &a->items[i];
      if (!verbose && r >= TABLE_ROWS) {
        skipped++;
        continue;
      }
      const an_op* op = x->op;
      int32_t s = op->is_send ? (int32_t)i : x->partner, rv = op->is_send ? x->partner : (int32_t)i;
      char lead[64], oc[24];
      if (op->op_count >= 0) snprintf(oc, sizeof oc, "%" PRId64, op->op_count);
      else snprintf(oc, sizeof oc, "?");
      snprintf(lead, sizeof lead, "  %2d  %7s  %6d -> %-8d  ", op->channel, oc, op->is_send ? op->rank : op->peer,
               op->is_send ? op->peer : op->rank);
      side(f, a, s, 1, 1, lead);
      side(f, a, rv, 0, 0, lead);
    }
    if (skipped) fprintf(f, "  … %zu more edges (-v shows them all)\n", skipped);
  }
  for (size_t i = 0; i < a->n_behind; i++)
    fprintf(f, "behind: rank %d's records stop at opCount %" PRId64 "; its peers wait for it in opCount %" PRId64 "\n",
            a->behind[i].rank, a->behind[i].last_op_count, a->behind[i].needed);
  if (a->n_slow && (verbose || a->verdict == PT_VERDICT_SLOW || slow_listed(a))) {
    fprintf(f, "\nslow edges (ops at least %.1fx the median of their operation):\n", a->slow_factor);
    for (size_t i = 0; i < a->n_slow; i++)
      fprintf(f, "  rank %d -> rank %d, channel %d: %u of %u ops slow, up to %.1fx\n", a->slow[i].sender,
              a->slow[i].receiver, a->slow[i].channel, a->slow[i].slow_ops, a->slow[i].ops, a->slow[i].ratio);
  }
  if (a->mslow.n_edges && (verbose || a->verdict == PT_VERDICT_SLOW || slow_listed(a))) {
    fprintf(f,
            "\nslow edges in the step metrics (slower than comparable edges beyond chance: %zu edge sides tested, "
            "%.0f%% false alarms per judgement):\n",
            a->mslow.tested, AN_SLOW_ALPHA * 100);
    for (size_t i = 0; i < a->mslow.n_edges; i++) {
      const pt_ms_slow_edge* e = &a->mslow.edges[i];
      char ch[32] = "";
      if (e->channel >= 0) snprintf(ch, sizeof ch, ", channel %d", e->channel);
      fprintf(f, "  rank %d %s rank %d%s: %s %.2fx (median %.3f ms, others %.3f ms; %llu of %llu steps above "
              "the others' median, chance %.2g)\n", e->rank,
              e->send ? "send to" : "recv from", e->peer, ch, e->side == PT_MS_GPU ? "GPU wait" : "network",
              e->factor, (double)e->p50_ns / 1e6, (double)e->median_ns / 1e6, (unsigned long long)e->above,
              (unsigned long long)e->samples, e->tail);
    }
  }
  if (!a->slow_possible && a->verdict != PT_VERDICT_UNUSABLE && verbose)
    fprintf(f, "\nslow links: not checked — the dumps have millisecond times only (JSON dumps carry ns)\n");
  else if (a->slow_possible && a->verdict != PT_VERDICT_OK && a->slow_ev.state != AN_SJ_JUDGED && !a->mset.n) {
    char unjudged[256];
    an_slow_judgement_words(a, unjudged, sizeof unjudged);
    fprintf(f, "\nslow links: not judged — %s\n", unjudged);
  }
  if (verbose && (a->n_moving || a->n_leaked))
    fprintf(f, "\nnot counted as stuck: %zu op%s still moving, %zu never-progressed op%s to a peer on the same node\n",
            a->n_moving, a->n_moving == 1 ? "" : "s", a->n_leaked, a->n_leaked == 1 ? "" : "s");

  fprintf(f, "\ninputs: %zu file%s, %" PRIu64 " lines, %" PRIu64 " records, %" PRIu64 " dumps (%" PRIu64
             " seen twice), %" PRIu64 " problem%s\n",
          a->n_inputs, a->n_inputs == 1 ? "" : "s", a->lines, a->records, a->dumps, a->duplicates, a->errors,
          a->errors == 1 ? "" : "s");
  if (a->passed_over || a->twins)
    fprintf(f, "  not parsed: %" PRIu64 " older dump%s of dump files (not the latest two of a rank), %" PRIu64
               " text file%s whose JSON copy was read whole\n",
            a->passed_over, a->passed_over == 1 ? "" : "s", a->twins, a->twins == 1 ? "" : "s");
  const uint64_t rotated = an_rotated_dumps(a);
  if (verbose && rotated)
    fprintf(f, "  rotation (PROXYTRACE_DUMP_MAX_MB) had removed %" PRIu64 " older dump%s from these files (rotatedDumps)\n",
            rotated, rotated == 1 ? "" : "s");
  int shown = 0;
  for (size_t i = 0; i < a->n_inputs; i++) {
    const an_input* in = &a->inputs[i];
    if (verbose)
      fprintf(f, "  %s: %s, %" PRIu64 " lines, %" PRIu64 " records, %" PRIu64 " dumps\n", PT_TEXT(in->path, PATH_SHOWN), in->format,
              in->lines, in->records, in->dumps);
    if (in->error && (verbose || shown++ < ERRORS_SHOWN)) fprintf(f, "  %s: %s\n", PT_TEXT(in->path, PATH_SHOWN), PT_TEXT(in->error, 512));
    for (int e = 0; in->errors && e < in->n_errors && e < AN_MAX_ERRORS_KEPT; e++)
      if (verbose || shown++ < ERRORS_SHOWN) fprintf(f, "  %s:%u: %s\n", PT_TEXT(in->path, PATH_SHOWN), in->errors[e].line,
                                                     PT_TEXT(in->errors[e].message, 512));
    if (in->n_errors > AN_MAX_ERRORS_KEPT && verbose)
      fprintf(f, "  %s: … %d more problems\n", PT_TEXT(in->path, PATH_SHOWN), in->n_errors - AN_MAX_ERRORS_KEPT);
  }
  if (!verbose && shown > ERRORS_SHOWN) fprintf(f, "  … (-v lists every problem)\n");
  an_free(&scratch, rows);
  return ferror(f) ? PT_AN_EIO : 0;
}
