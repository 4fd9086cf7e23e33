/*
 * analysis.c — the public API (include/proxytrace/analyze.h): an analysis
 * object, its options, the run (build, pair, explain, slow), the verdict
 * and the accessors the CLI and other languages use.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/internal.h"

int pt_analysis_new(pt_analysis** out) {
  if (!out) return PT_AN_EINVAL;
  *out = NULL;
  an_mem mem = {0};
  pt_analysis* a = an_alloc(&mem, sizeof *a);
  if (!a) return PT_AN_ENOMEM;
  a->mem = mem;
  a->slow_factor = 3.0;
  a->stall_ms = -1;
  a->verdict = PT_VERDICT_UNUSABLE;
  if (an_map_init(&a->mem, &a->slot_index, 64) != 0) {
    an_mem m = a->mem;
    an_free(&m, a);
    return PT_AN_ENOMEM;
  }
  *out = a;
  return 0;
}

void pt_analysis_free(pt_analysis* a) {
  if (!a) return;
  an_merge_free(a);
  an_complete_free(a);
  an_unknown_free(a);
  pt_mset_free(&a->mset);
  pt_ms_verdict_free(&a->mslow);
  for (size_t i = 0; i < a->n_inputs; i++) an_input_free(a, &a->inputs[i]);
  an_free(&a->mem, a->inputs);
  an_free(&a->mem, a->block);
  an_free(&a->mem, a->spare_parser);
  an_free(&a->mem, a->sources);
  an_map_free(&a->mem, &a->source_index);
  an_map_free(&a->mem, &a->file_index);
  an_map_free(&a->mem, &a->pending_index);
  an_free(&a->mem, a->pending);
  for (size_t i = 0; i < a->n_skipped; i++) an_free(&a->mem, a->skipped[i].path);
  an_free(&a->mem, a->skipped);
  for (size_t i = 0; i < a->n_comms; i++) an_free(&a->mem, a->comms[i].ranks);
  an_free(&a->mem, a->comms);
  an_free(&a->mem, a->items);
  for (size_t i = 0; i < a->n_culprits; i++) an_free(&a->mem, a->culprits[i].cand);
  an_free(&a->mem, a->culprits);
  an_free(&a->mem, a->missing);
  an_free(&a->mem, a->behind);
  an_free(&a->mem, a->slow);
  for (size_t i = 0; i < a->hosts.n; i++) an_free(&a->mem, a->hosts.names[i]);
  an_free(&a->mem, a->hosts.names);
  an_map_free(&a->mem, &a->hosts.index);
  an_mem m = a->mem;
  an_free(&m, a);
}

int pt_analysis_set_option(pt_analysis* a, const char* name, const char* value) {
  if (!a || !name || !value || a->ran) return PT_AN_EINVAL;
  char* end;
  errno = 0;
  double v = strtod(value, &end);
  if (errno || end == value || *end || !isfinite(v)) return PT_AN_EINVAL;
  if (!strcmp(name, "slow-factor")) {
    if (v < 1.5 || v > 1000) return PT_AN_EINVAL;
    a->slow_factor = v;
    a->slow_factor_given = 1;
    return 0;
  }
  if (!strcmp(name, "stall-ms")) {
    if (v < 0 || v > 86400000.0 || v != floor(v)) return PT_AN_EINVAL;
    a->stall_ms = (int64_t)v;
    return 0;
  }
  if (!strcmp(name, "threads")) { /* reading threads (lines.c); 0: one per processor */
    if (v < 0 || v > 64 || v != floor(v)) return PT_AN_EINVAL;
    a->threads = (int)v;
    return 0;
  }
  if (!strcmp(name, "all-dumps")) { /* before the first input: the merge keeps the copies */
    if ((v != 0 && v != 1) || a->n_inputs) return PT_AN_EINVAL;
    if (v == 1 && !a->every_index.cap && an_map_init(&a->mem, &a->every_index, 64) != 0) return PT_AN_ENOMEM;
    a->all_dumps = (int)v;
    return 0;
  }
  return PT_AN_EINVAL;
}

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

size_t pt_analysis_culprit_count(const pt_analysis* a) { return a ? a->n_culprits : 0; }

const pt_culprit* pt_analysis_culprit(const pt_analysis* a, size_t i) {
  return a && i < a->n_culprits ? &a->culprits[i].pub : NULL;
}

size_t pt_analysis_input_count(const pt_analysis* a) { return a ? a->n_inputs : 0; }

int pt_analysis_input(const pt_analysis* a, size_t i, pt_analysis_input_info* out) {
  if (!a || !out || i >= a->n_inputs) return PT_AN_EINVAL;
  const an_input* in = &a->inputs[i];
  out->path = in->path;
  out->format = in->format;
  out->lines = in->lines;
  out->bytes = in->bytes;
  out->records = in->records;
  out->dumps = in->dumps;
  out->duplicates = in->duplicates;
  out->n_errors = in->n_errors;
  out->error = in->error;
  return 0;
}

void pt_analysis_get_stats(const pt_analysis* a, pt_analysis_stats* out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!a) return;
  out->files = a->n_inputs;
  out->lines = a->lines;
  out->bytes = a->bytes;
  out->records = a->records;
  out->dumps = a->dumps;
  out->duplicates = a->duplicates;
  out->errors = a->errors;
  out->parse_seconds = a->parse_seconds;
  out->analyze_seconds = a->analyze_seconds;
  out->bytes_held = a->mem.held;
  out->peak_bytes = a->mem.peak;
}

void pt_analysis_string_free(char* s) { free(s); }

char* pt_analysis_json(const pt_analysis* a) {
  if (!a || an_failed(a)) return NULL;
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return NULL;
  int rc = pt_analysis_write_json(a, f);
  if (fclose(f) != 0 || rc != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

