/*
 * summary_read.c — a summary's own lines read back (summary.c writes
 * them; docs/analyze.md, "Past one machine"): the "summary" line's figures,
 * the inputs with a problem, what each dump was on its node and the input
 * it was read from there. jsonl.c reads the dumps' lines and hands these
 * over.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/inputs.h"

/* The input a summary's dump was read from on its node: one entry per
 * path, made when the first of its dumps arrives, so that the evidence
 * still names the file and line. */
int an_summary_source(an_parser* p, const char* path) {
  pt_analysis* a = p->a;
  const uint64_t key = an_mix(0x5c, an_mix_str(path));
  if (!a->source_index.cap && an_map_init(&a->mem, &a->source_index, 64) != 0) return -1;
  for (int32_t i = an_map_first(&a->source_index, key); i >= 0; i = an_map_next(&a->source_index, i))
    if (!strcmp(a->inputs[a->sources[i]].path, path)) return (int)a->sources[i];
  uint32_t in;
  uint32_t* s = an_grow(&a->mem, (void**)&a->sources, &a->n_sources, &a->cap_sources, sizeof *s);
  if (!s || an_input_add(a, path, &in) != 0) {
    if (s) a->n_sources--;
    return -1;
  }
  if (an_map_add(&a->mem, &a->source_index, key, (int32_t)(a->n_sources - 1)) != 0) {
    a->n_sources--;
    return -1;
  }
  *s = in;
  a->inputs[in].format = "summarized";
  a->inputs[in].rank_hint = -1;
  return (int)in;
}

/* The "summary" line: the node's figures join the analysis's; the records
 * and dumps it carries are counted again as they are read. */
void an_summary_line(an_parser* p, const an_jobj* o) {
  pt_analysis* a = p->a;
  an_input* in = &a->inputs[p->input];
  p->summary = 1;
  in->summary = 1;
  in->rank_hint = -1;
  uint64_t v[11] = {0};
  static const char* const keys[11] = {"files", "lines", "bytes", "records", "dumps", "duplicates",
                                       "errors", "passedOver", "textCopiesNotRead", "dumpsCarried", "recordsCarried"};
  for (int i = 0; i < 11; i++) (void)an_json_u64(o, keys[i], &v[i]);
  a->summaries++;
  a->summarized_files += v[0];
  a->lines += v[1];
  a->bytes += v[2];
  a->records += v[3] > v[10] ? v[3] - v[10] : 0;
  a->dumps += v[4] > v[9] ? v[4] - v[9] : 0;
  a->duplicates += v[5];
  a->errors += v[6];
  a->passed_over += v[7];
  a->twins += v[8];
}

/* An "input" line: an input of the node that could not be read, or had
 * problems, with them (counted already in the summary line). */
void an_summary_input(an_parser* p, const an_jobj* o) {
  pt_analysis* a = p->a;
  const char* path = an_json_str(o, "path");
  if (!path) return;
  const int i = an_summary_source(p, path);
  if (i < 0) return;
  an_input* in = &a->inputs[i];
  const char* err = an_json_str(o, "error");
  if (err && !in->error) {
    in->error = an_strdup(&a->mem, err);
    in->format = "unreadable";
  }
  int64_t n = 0;
  if (an_json_i64(o, "problems", &n) != 0 || n <= 0 || n > INT32_MAX) return;
  if (!in->errors && !(in->errors = an_alloc(&a->mem, AN_MAX_ERRORS_KEPT * sizeof *in->errors))) return;
  for (int e = 0; e < n && e < AN_MAX_ERRORS_KEPT; e++) {
    char key[48];
    int64_t line = 0;
    snprintf(key, sizeof key, "problem%d.line", e);
    (void)an_json_i64(o, key, &line);
    snprintf(key, sizeof key, "problem%d.message", e);
    const char* m = an_json_str(o, key);
    in->errors[e].line = line > 0 && line <= UINT32_MAX ? (uint32_t)line : 0;
    in->errors[e].message = an_strdup(&a->mem, m ? m : "");
  }
  in->n_errors = (int)n;
}

/* A dump header's "summary" object: what the dump was where it was read. */
void an_summary_dump(an_parser* p, const an_jobj* o, an_dump* d) {
  const char* fmt = an_json_str(o, "summary.format");
  if (fmt && !strcmp(fmt, "text")) d->format = AN_FMT_TEXT;
  const an_jfield* ns = an_json_get(o, "summary.nsTimes");
  if (ns && ns->type == AN_JV_BOOL) d->ns_times = ns->truth;
  const an_jfield* cut = an_json_get(o, "summary.cut");
  if (cut && cut->type == AN_JV_BOOL) d->cut = cut->truth;
  int64_t v;
  if (an_json_i64(o, "summary.lost", &v) == 0 && v >= 0 && v <= UINT32_MAX) d->lost = (uint32_t)v;
  if (an_json_i64(o, "summary.dev", &v) == 0 && v >= -1 && v <= INT32_MAX) d->dev = (int)v;
  const char* src = an_json_str(o, "summary.source");
  if (src && an_json_i64(o, "summary.line", &v) == 0 && v > 0 && v <= UINT32_MAX) {
    const int in = an_summary_source(p, src);
    if (in >= 0) {
      d->input = (uint32_t)in;
      d->line = (uint32_t)v;
    }
  }
}
