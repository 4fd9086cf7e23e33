/*
 * report_json.c — the analysis as one JSON document (schema 1,
 * docs/analyze.md "JSON output"). Field names are stable within a schema
 * version; new fields may be added, none renamed or dropped.
 */
#include <inttypes.h>
#include <string.h>

#include "analyze/render.h"

static void op_json(FILE* f, const pt_analysis* a, int32_t i) {
  if (i < 0) {
    fputs("null", f);
    return;
  }
  const an_item* x = &a->items[i];
  const an_op* op = x->op;
  fprintf(f, "{\"rank\":%d,\"peer\":%d,\"dir\":\"%s\",\"opId\":%" PRId64 ",\"state\":\"%s\",\"status\":", op->rank,
          op->peer, op->is_send ? "send" : "recv", op->op_id,
          an_state_name(op->state));
  if (op->status >= 0) an_put_str(f, an_status_names[op->status]);
  else fputs("null", f);
  fprintf(f, ",\"stuck\":%s,\"moving\":%s,\"wait\":", x->stuck ? "true" : "false", x->moving ? "true" : "false");
  if (x->stuck) an_put_str(f, an_wait_name((an_wait)x->wait));
  else fputs("null", f);
  fprintf(f, ",\"origin\":%s,\"nSteps\":%" PRId64 ",\"counters\":{", x->origin ? "true" : "false", op->n_steps);
  for (int k = 0; k < AN_C_COUNT; k++)
    fprintf(f, "%s\"%s\":%" PRId64, k ? "," : "", an_counter_json[k], op->cnt[k]);
  fputs("},\"create_ns\":", f);
  an_put_time(f, op->create_ns);
  fputs(",\"progress_ns\":", f);
  an_put_time(f, op->progress_ns ? op->progress_ns : x->dump->ns_times ? 0 : op->last_ns);
  fputs(",\"source\":", f);
  char src[600];
  snprintf(src, sizeof src, "%s:%u", a->inputs[op->input].path, op->line);
  an_put_str(f, src);
  fputc('}', f);
}

/* The process of a rank's latest dump of a communicator — {"host", "pid",
 * "dev"} — or null: slow-edge evidence is the process's as much as the
 * rank's (ranks are renumbered from job to job; a host, pid and GPU are
 * where to look). */
static void process_json(FILE* f, const pt_analysis* a, uint64_t comm, int rank) {
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    const an_comm* c = &a->comms[ci];
    if (c->comm != comm || rank < 0 || rank >= c->nranks || !c->ranks[rank].dump) continue;
    const an_dump* d = c->ranks[rank].dump;
    fputs("{\"host\":", f);
    if (d->host[0]) an_put_str(f, d->host);
    else fputs("null", f);
    fprintf(f, ",\"pid\":");
    if (d->pid) fprintf(f, "%d", d->pid);
    else fputs("null", f);
    fprintf(f, ",\"dev\":");
    if (d->dev >= 0) fprintf(f, "%d", d->dev);
    else fputs("null", f);
    fputc('}', f);
    return;
  }
  fputs("null", f);
}

/* The process of a rank named by the step metrics: its dump's, else the
 * metrics file's (host and pid; no device). */
static void metrics_process_json(FILE* f, const pt_analysis* a, uint64_t comm, int rank) {
  for (size_t ci = 0; ci < a->n_comms; ci++)
    if (a->comms[ci].comm == comm && rank >= 0 && rank < a->comms[ci].nranks && a->comms[ci].ranks[rank].dump) {
      process_json(f, a, comm, rank);
      return;
    }
  for (size_t i = 0; i < a->mset.n; i++) {
    const pt_ms_edge* e = &a->mset.e[i];
    if (e->comm != comm || e->rank != rank) continue;
    fputs("{\"host\":", f);
    if (e->host[0]) an_put_str(f, e->host);
    else fputs("null", f);
    if (e->pid > 0) fprintf(f, ",\"pid\":%ld,\"dev\":null}", e->pid);
    else fputs(",\"pid\":null,\"dev\":null}", f);
    return;
  }
  fputs("null", f);
}

/* A slow edge of the step metrics, its object left open; with its sender
 * and receiver (>= 0) as in slow_edges. */
static void metrics_slow_edge_json(FILE* f, const pt_ms_slow_edge* e, int sender, int receiver) {
  fputs("{\"commHash\":", f);
  an_put_hash(f, e->comm);
  if (sender >= 0) fprintf(f, ",\"source\":\"metrics\",\"sender\":%d,\"receiver\":%d", sender, receiver);
  fprintf(f, ",\"rank\":%d,\"peer\":%d,\"channel\":", e->rank, e->peer);
  if (e->channel >= 0) fprintf(f, "%d", e->channel);
  else fputs("null", f);
  fprintf(f,
          ",\"direction\":\"%s\",\"side\":\"%s\",\"factor\":%.2f,\"p50_ns\":%llu,\"median_ns\":%llu,"
          "\"samples\":%llu,\"above\":%llu,\"share\":%.4f,\"tail\":%.3g",
          e->send ? "send" : "recv", e->side == PT_MS_GPU ? "gpu" : "network", e->factor,
          (unsigned long long)e->p50_ns, (unsigned long long)e->median_ns, (unsigned long long)e->samples,
          (unsigned long long)e->above, e->share, e->tail);
}

static void culprit_json(FILE* f, const pt_analysis* a, const an_culprit* q) {
  const pt_culprit* p = &q->pub;
  fputs("{\"commHash\":", f);
  an_put_hash(f, p->comm_hash);
  fprintf(f, ",\"rank\":%d,\"host\":", p->rank);
  if (p->host && p->host[0]) an_put_str(f, p->host);
  else fputs("null", f);
  fputs(",\"pid\":", f);
  if (p->pid) fprintf(f, "%d", p->pid);
  else fputs("null", f);
  fputs(",\"peer\":", f);
  if (p->peer >= 0) fprintf(f, "%d", p->peer);
  else fputs("null", f);
  fputs(",\"channel\":", f);
  if (p->channel >= 0) fprintf(f, "%d", p->channel);
  else fputs("null", f);
  fputs(",\"consequenceOf\":", f); /* 1-based, as the text report numbers culprits */
  if (p->consequence_of >= 0) fprintf(f, "%d", p->consequence_of + 1);
  else fputs("null", f);
  fputs(",\"chain\":", f);
  if (p->consequence_of >= 0) an_put_str(f, q->chain);
  else fputs("null", f);
  fprintf(f, ",\"direction\":%s,\"cause\":", p->is_send < 0 ? "null" : p->is_send ? "\"send\"" : "\"recv\"");
  an_put_str(f, pt_cause_name(p->cause));
  fputs(",\"opCount\":", f);
  if (p->op_count >= 0) fprintf(f, "%" PRId64, p->op_count);
  else fputs("null", f);
  const char* coll = q->origin >= 0 ? an_op_coll(a->items[q->origin].op) : NULL;
  fputs(",\"coll\":", f);
  if (coll) an_put_str(f, coll);
  else fputs("null", f);
  fputs(",\"step\":", f);
  if (p->step >= 0) fprintf(f, "%" PRId64, p->step);
  else fputs("null", f);
  fputs(",\"nSteps\":", f);
  if (p->n_steps >= 0) fprintf(f, "%" PRId64, p->n_steps);
  else fputs("null", f);
  fprintf(f, ",\"scope\":\"%s\",\"candidates\":[", p->scope_node ? "node" : "rank");
  for (int i = 0; i < p->n_candidates; i++) fprintf(f, "%s%d", i ? "," : "", p->candidates[i]);
  fprintf(f, "],\"dependents\":%d,\"slowFactor\":", p->dependents);
  if (an_slow_cause(p->cause)) fprintf(f, "%.2f", p->slow_factor);
  else fputs("null", f);
  fprintf(f, ",\"possible\":%s,\"possibleBecause\":[", p->possible ? "true" : "false");
  for (int i = 0; i < q->n_because && i < AN_BECAUSE; i++) fprintf(f, "%s%d", i ? "," : "", q->because[i]);
  fprintf(f, "],\"possibleBecauseMore\":%s,\"summary\":", q->n_because > AN_BECAUSE ? "true" : "false");
  an_put_str(f, p->summary);
  fputs(",\"evidence\":[", f);
  if (q->origin >= 0) {
    op_json(f, a, q->origin);
    if (a->items[q->origin].partner >= 0) {
      fputc(',', f);
      op_json(f, a, a->items[q->origin].partner);
    }
  }
  fputs("]}", f);
}

typedef struct {
  FILE* f;
  size_t* k;
} no_comm_arg;

/* One process whose dumps name neither rank nor communicator. */
static void no_comm_json(const char* host, int pid, size_t dumps, void* arg) {
  no_comm_arg* n = arg;
  fputs((*n->k)++ ? ",{\"host\":" : "{\"host\":", n->f);
  an_put_str(n->f, host);
  fprintf(n->f, ",\"pid\":%d,\"dumps\":%zu}", pid, dumps);
}

int pt_analysis_write_json(const pt_analysis* a, FILE* f) {
  if (!a || !f) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  fprintf(f, "{\"schema\":%d,\"tool\":\"proxytrace analyze\",\"version\":\"%d.%d.%d\",\"verdict\":\"%s\",\"summary\":",
          PT_ANALYZE_SCHEMA, PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH, pt_verdict_name(a->verdict));
  char summary[400];
  if (a->n_culprits) {
    an_put_str(f, a->culprits[0].summary);
  } else if (a->verdict == PT_VERDICT_INCOMPLETE) {
    char what[256];
    an_gap_summary(a, what, sizeof what);
    snprintf(summary, sizeof summary, "%s in what was read, but the dumps do not show the whole job: %s",
             a->n_stuck ? "ops are stuck only" : "nothing is stuck", what);
    an_put_str(f, summary);
  } else if (a->verdict == PT_VERDICT_OK) {
    an_ok_words(a, summary, sizeof summary, 0);
    an_put_str(f, summary);
  } else if (a->verdict == PT_VERDICT_SLOW) { /* as the text's headline */
    const size_t n = a->n_slow + a->mslow.n_edges;
    snprintf(summary, sizeof summary, "nothing is stuck, but %zu edge%s %s slow", n, n == 1 ? "" : "s",
             n == 1 ? "is" : "are");
    an_put_str(f, summary);
  } else if (a->verdict == PT_VERDICT_HANG) {
    snprintf(summary, sizeof summary, "%zu op%s stuck", a->n_stuck, a->n_stuck == 1 ? "" : "s");
    an_put_str(f, summary);
  } else {
    an_put_str(f, "no input held a dump");
  }
  fputs(",\n\"culprits\":[", f);
  for (size_t k = 0; k < a->n_culprits; k++) {
    fputs(k ? ",\n" : "\n", f);
    culprit_json(f, a, &a->culprits[k]);
  }
  fputs("],\n\"stuck_edges\":[", f);
  int first = 1;
  for (size_t i = 0; i < a->n_items; i++) {
    const an_item* x = &a->items[i];
    if (!x->stuck) continue;
    if (x->partner >= 0 && a->items[x->partner].stuck && (size_t)x->partner < i) continue;
    const an_op* op = x->op;
    int32_t s = op->is_send ? (int32_t)i : x->partner, r = op->is_send ? x->partner : (int32_t)i;
    fputs(first ? "\n" : ",\n", f);
    first = 0;
    fputs("{\"commHash\":", f);
    an_put_hash(f, op->comm);
    fprintf(f, ",\"sender\":%d,\"receiver\":%d,\"channel\":%d,\"opCount\":", op->is_send ? op->rank : op->peer,
            op->is_send ? op->peer : op->rank, op->channel);
    if (op->op_count >= 0) fprintf(f, "%" PRId64, op->op_count);
    else fputs("null", f);
    fputs(",\"culprit\":", f);
    if (x->culprit >= 0) fprintf(f, "%d", x->culprit);
    else fputs("null", f);
    fputs(",\"send\":", f);
    op_json(f, a, s);
    fputs(",\"recv\":", f);
    op_json(f, a, r);
    fputc('}', f);
  }
  fputs("],\n\"missing_ranks\":[", f);
  /* consecutive ranks nothing waits on as one run (rank..rankLast): a
   * communicator whose size is a rank number read from a dump may have
   * millions without one */
  for (size_t i = 0, j; i < a->n_missing; i = j) {
    const an_rank_ref* m = &a->missing[i];
    for (j = i + 1; j < a->n_missing && !m->referenced && !a->missing[j].referenced && a->missing[j].comm == m->comm &&
                    a->missing[j].rank == a->missing[j - 1].rank + 1;
         j++) {
    }
    fputs(i ? "," : "", f);
    fputs("{\"commHash\":", f);
    an_put_hash(f, m->comm);
    fprintf(f, ",\"rank\":%d,\"rankLast\":%d,\"waitedOnBy\":%d}", m->rank, a->missing[j - 1].rank, m->referenced);
  }
  fputs("],\n\"behind_ranks\":[", f);
  for (size_t i = 0; i < a->n_behind; i++) {
    fputs(i ? "," : "", f);
    fputs("{\"commHash\":", f);
    an_put_hash(f, a->behind[i].comm);
    fprintf(f, ",\"rank\":%d,\"lastOpCount\":%" PRId64 ",\"waitedInOpCount\":%" PRId64 "}", a->behind[i].rank,
            a->behind[i].last_op_count, a->behind[i].needed);
  }
  /* Every slow edge, by op durations ("source":"ops") and by the step
   * metrics ("metrics"), with the fields both have — sender, receiver,
   * channel, factor, the two processes — and those of its kind; the
   * metrics ones again, alone, under metrics_slow_edges. */
  fputs("],\n\"slow_edges\":[", f);
  for (size_t i = 0; i < a->n_slow; i++) {
    const an_slow_edge* e = &a->slow[i];
    fputs(i ? "," : "", f);
    fputs("{\"commHash\":", f);
    an_put_hash(f, e->comm);
    fprintf(f, ",\"source\":\"ops\",\"sender\":%d,\"receiver\":%d,\"channel\":%d,\"ops\":%u,\"slowOps\":%u,\"factor\":%.2f",
            e->sender, e->receiver, e->channel, e->ops, e->slow_ops, e->ratio);
    fputs(",\"senderProcess\":", f);
    process_json(f, a, e->comm, e->sender);
    fputs(",\"receiverProcess\":", f);
    process_json(f, a, e->comm, e->receiver);
    fputc('}', f);
  }
  for (size_t i = 0; i < a->mslow.n_edges; i++) {
    const pt_ms_slow_edge* e = &a->mslow.edges[i];
    const int sender = e->send ? e->rank : e->peer, receiver = e->send ? e->peer : e->rank;
    fputs(i || a->n_slow ? "," : "", f);
    metrics_slow_edge_json(f, e, sender, receiver);
    fputs(",\"senderProcess\":", f);
    metrics_process_json(f, a, e->comm, sender);
    fputs(",\"receiverProcess\":", f);
    metrics_process_json(f, a, e->comm, receiver);
    fputc('}', f);
  }
  fputs("],\n\"metrics_slow_edges\":[", f);
  for (size_t i = 0; i < a->mslow.n_edges; i++) {
    fputs(i ? "," : "", f);
    metrics_slow_edge_json(f, &a->mslow.edges[i], -1, -1);
    fputc('}', f);
  }
  fputs("],\n\"communicators\":[", f);
  for (size_t i = 0; i < a->n_comms; i++) {
    const an_comm* c = &a->comms[i];
    size_t stuck = 0;
    for (size_t j = c->first_item; j < c->first_item + c->n_items; j++) stuck += a->items[j].stuck;
    fputs(i ? "," : "", f);
    fputs("{\"commHash\":", f);
    an_put_hash(f, c->comm);
    fprintf(f, ",\"nRanks\":%d,\"ranksWithDump\":%d,\"ops\":%zu,\"stuckOps\":%zu,\"stuckOpCount\":", c->nranks,
            c->with_dump, c->n_items, stuck);
    if (c->stuck_op_count >= 0) fprintf(f, "%" PRId64, c->stuck_op_count);
    else fputs("null", f);
    fputs(",\"coll\":", f);
    if (c->coll[0]) an_put_str(f, c->coll);
    else fputs("null", f);
    if (c->tag_known > 0) fprintf(f, ",\"userTag\":\"0x%" PRIx64 "\"", c->user_tag);
    else if (c->tag_known < 0) fputs(",\"userTag\":\"unknown\"", f);
    fputc('}', f);
  }
  fputs("],\n\"gaps\":[", f);
  for (size_t i = 0; i < a->n_gaps; i++) {
    const pt_gap* g = &a->gaps[i].pub;
    fputs(i ? ",\n" : "\n", f);
    fputs("{\"kind\":", f);
    an_put_str(f, g->kind_name);
    fputs(",\"commHash\":", f);
    if (g->kind == PT_GAP_UNREADABLE) fputs("null", f);
    else an_put_hash(f, g->comm_hash);
    fputs(",\"rank\":", f);
    if (g->rank >= 0) fprintf(f, "%d,\"rankLast\":%d", g->rank, g->rank_last);
    else fputs("null,\"rankLast\":null", f);
    fputs(",\"source\":", f);
    if (g->path) {
      char src[600];
      if (g->line) snprintf(src, sizeof src, "%s:%u", g->path, g->line);
      else snprintf(src, sizeof src, "%s", g->path);
      an_put_str(f, src);
    } else {
      fputs("null", f);
    }
    fputs(",\"dumpSeq\":", f);
    if (g->dump_seq >= 0) fprintf(f, "%lld", (long long)g->dump_seq);
    else fputs("null", f);
    fprintf(f, ",\"announced\":");
    if (g->announced >= 0) fprintf(f, "%lld", (long long)g->announced);
    else fputs("null", f);
    fprintf(f, ",\"read\":");
    if (g->read >= 0) fprintf(f, "%lld", (long long)g->read);
    else fputs("null", f);
    fprintf(f, ",\"behindMs\":");
    if (g->behind_ms >= 0) fprintf(f, "%lld,\"stallMs\":%lld", (long long)g->behind_ms, (long long)g->stall_ms);
    else fputs("null,\"stallMs\":null", f);
    fprintf(f, ",\"mayHoldFault\":%s,\"readInstead\":", g->may_hold_fault ? "true" : "false");
    if (g->read_instead >= 0) fprintf(f, "%lld}", (long long)g->read_instead);
    else fputs("null}", f);
  }
  fprintf(f, "],\n\"finished\":{\"cleanRanks\":%d,\"ranks\":%d},\n\"unknown_rank_dumps\":[", a->clean_ranks,
          a->all_ranks);
  for (size_t i = 0, k = 0; i < a->n_comms; i++) {
    const an_comm* c = &a->comms[i];
    if (!c->unknown_dumps) continue;
    int covered = 0;
    for (int r = 0; r < c->nranks; r++) covered += c->ranks[r].unknown;
    fputs(k++ ? ",{\"commHash\":" : "{\"commHash\":", f);
    an_put_hash(f, c->comm);
    fprintf(f, ",\"ranks\":%d,\"standFor\":[", c->unknown_dumps);
    for (int r = 0, n = 0; r < c->nranks; r++)
      if (c->ranks[r].unknown) fprintf(f, "%s%d", n++ ? "," : "", r);
    fprintf(f, "],\"covered\":%s}", covered ? "true" : "false");
  }
  fputs("],\n\"no_communicator_dumps\":[", f);
  size_t k = 0;
  an_no_comm_processes(a, no_comm_json, &(no_comm_arg){f, &k});
  fputs("],\n\"skipped\":[", f);
  for (size_t i = 0; i < a->n_skipped; i++) {
    fputs(i ? ",{\"path\":" : "{\"path\":", f);
    an_put_str(f, a->skipped[i].path);
    fputs(",\"why\":", f);
    an_put_str(f, a->skipped[i].why);
    fputc('}', f);
  }
  fprintf(f,
          "],\n\"counts\":{\"stuckOps\":%zu,\"movingOps\":%zu,\"leakedOps\":%zu,\"unmatchedStuckOps\":%zu,"
          "\"slowDetection\":%s,\"metricsEdges\":%zu},\n",
          a->n_stuck, a->n_moving, a->n_leaked, a->n_unmatched, a->slow_possible || a->mset.n ? "true" : "false",
          a->mset.n);
  /* The slow-edge judgement's evidence (docs/analyze.md, "Slow, not hung") */
  static const char* const states[] = {"judged", "no_timed_ops", "hang", "too_few", "too_short", "partial", "ring_only", "alone"};
  const an_slow_evidence* ev = &a->slow_ev;
  char unjudged[256];
  an_slow_judgement_words(a, unjudged, sizeof unjudged);
  fprintf(f,
          "\"slow_judgement\":{\"state\":\"%s\",\"why\":",
          !a->slow_possible ? "no_ns_times" : states[ev->state]);
  if (unjudged[0]) an_put_str(f, unjudged);
  else fputs("null", f);
  fprintf(f,
          ",\"timedOps\":%llu,\"afterHang\":%llu,\"usedOps\":%llu,\"operations\":%u,\"fewOperations\":%u,"
          "\"shortOperations\":%u,\"minOps\":%d,\"minSpan_ns\":%d,\"minRankSlowOps\":%d,\"minEdgeOps\":%d},\n",
          (unsigned long long)ev->timed, (unsigned long long)ev->after_hang, (unsigned long long)ev->used, ev->groups,
          ev->few_groups, ev->short_groups, AN_SLOW_MIN_GROUP, AN_SLOW_MIN_SPAN_NS, AN_SLOW_MIN_RANK_SLOW,
          AN_SLOW_MIN_EDGE);
  char mwords[256];
  pt_ms_verdict_words(&a->mslow, mwords, sizeof mwords);
  const pt_ms_verdict* mv = &a->mslow;
  fprintf(f, "\"metrics_judgement\":{\"state\":\"%s\",\"why\":",
          a->mset.n ? pt_ms_verdict_state(mv) : "no_metrics");
  if (a->mset.n && mwords[0]) an_put_str(f, mwords);
  else fputs("null", f);
  fprintf(f,
          ",\"tested\":%zu,\"fewSamples\":%zu,\"fewEdges\":%zu,\"shortEdges\":%zu,\"minSamples\":%d,"
          "\"minEdges\":%d,\"minSpan_ns\":%d,\"minFactor\":%.2f,\"alpha\":%.3f},\n\"inputs\":[",
          mv->tested, mv->few_samples, mv->few_edges, mv->short_edges, PT_MS_MIN_SAMPLES, PT_MS_MIN_EDGES,
          PT_MS_MIN_SPAN_NS, a->slow_factor_given ? a->slow_factor : PT_MS_MIN_FACTOR, AN_SLOW_ALPHA);
  for (size_t i = 0; i < a->n_inputs; i++) {
    const an_input* in = &a->inputs[i];
    fputs(i ? ",\n" : "\n", f);
    fputs("{\"path\":", f);
    an_put_str(f, in->path);
    fputs(",\"format\":", f);
    an_put_str(f, in->format);
    fprintf(f,
            ",\"lines\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"records\":%" PRIu64 ",\"dumps\":%" PRIu64
            ",\"duplicates\":%" PRIu64 ",\"error\":",
            in->lines, in->bytes, in->records, in->dumps, in->duplicates);
    if (in->error) an_put_str(f, in->error);
    else fputs("null", f);
    fputs(",\"errors\":[", f);
    for (int e = 0; in->errors && e < in->n_errors && e < AN_MAX_ERRORS_KEPT; e++) {
      fprintf(f, "%s{\"line\":%u,\"message\":", e ? "," : "", in->errors[e].line);
      an_put_str(f, in->errors[e].message);
      fputc('}', f);
    }
    fprintf(f, "],\"moreErrors\":%d}", in->n_errors > AN_MAX_ERRORS_KEPT ? in->n_errors - AN_MAX_ERRORS_KEPT : 0);
  }
  fprintf(f,
          "],\n\"stats\":{\"files\":%zu,\"lines\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"records\":%" PRIu64
          ",\"dumps\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"errors\":%" PRIu64
          ",\"parseSeconds\":%.6f,\"analyzeSeconds\":%.6f,\"slowSeconds\":%.6f,\"peakBytes\":%zu,\"rotatedDumps\":%" PRIu64
          ",\"passedOver\":%" PRIu64 ",\"textCopiesNotRead\":%" PRIu64 "}}\n",
          a->n_inputs, a->lines, a->bytes, a->records, a->dumps, a->duplicates, a->errors, a->parse_seconds,
          a->analyze_seconds, a->slow_seconds, a->mem.peak, an_rotated_dumps(a), a->passed_over, a->twins);
  return ferror(f) ? PT_AN_EIO : 0;
}
