/*
 * parse.c — one input's lines, each to the reader of its format: a line
 * that opens a JSON object to jsonl.c, any other to legacy.c; at the end
 * of the input, its open dumps committed (stream.c). It sits above the
 * readers it calls, as they sit above the streams they share.
 */
#include <stddef.h>
#include <string.h>

#include "analyze/inputs.h"

/* A parser is 38 KB, most of it the scratch of one JSON line: one is kept
 * for the next input (a->spare_parser), so that a job of 100 000 files
 * does not clear 3.8 GB of it. Only what comes before the scratch is reset. */
an_parser* an_parser_new(pt_analysis* a, uint32_t input) {
  an_parser* p = a->spare_parser;
  if (p) {
    a->spare_parser = NULL;
    memset(p, 0, offsetof(an_parser, json));
  } else if (!(p = an_alloc(&a->mem, sizeof *p))) {
    return NULL;
  }
  p->a = a;
  p->input = input;
  return p;
}

void an_parser_line(an_parser* p, char* line, size_t len, uint32_t lineno) {
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
  if (i == len) return;
  if (line[i] == '{') {
    if (an_parser_among_text(p, 0, lineno)) return;
    p->saw_json = 1;
    an_jsonl_line(p, line + i, len - i, lineno);
  } else {
    an_legacy_line(p, line, len, lineno);
  }
}

void an_parser_finish(an_parser* p) {
  pt_analysis* a = p->a;
  for (int i = 0; i < p->n_open; i++) {
    an_open* o = &p->open[i];
    if (o->d && o->d->format == AN_FMT_JSONL) {
      an_input_error(a, p->input, o->d->line, "dump %lld has no end line: cut (crash or full disk?)",
                     (long long)o->d->seq);
      o->d->cut = 1;
    }
    an_parser_commit(p, o);
  }
  an_input* in = &a->inputs[p->input];
  if (p->summary) in->format = "summary";
  else if (in->dumps) in->format = p->saw_json ? "jsonl" : "text";
  if (a->spare_parser) an_free(&a->mem, p);
  else a->spare_parser = p;
}
