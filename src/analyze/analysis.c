/*
 * analysis.c — the public API (include/proxytrace/analyze.h): an analysis
 * object, its options, and the accessors the CLI and other languages use.
 * The run and its verdict are verdict.c's; the inputs are added by
 * lines.c's pt_analysis_add_*, the reports written by the renderers'
 * pt_analysis_write_*.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/render.h"

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

int pt_analysis_set_timeline_file(pt_analysis* a, const char* path) {
  const size_t n = path ? strlen(path) : 0;
  if (!a || !n || n >= sizeof a->timeline_file) return PT_AN_EINVAL;
  memcpy(a->timeline_file, path, n + 1);
  return 0;
}

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

