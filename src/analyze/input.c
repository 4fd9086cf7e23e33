/*
 * input.c — the inputs of an analysis: each file, stream or buffer read,
 * the rank its name suggests, and the errors noted against it (the first
 * AN_MAX_ERRORS_KEPT kept, all counted). Every stage may note an error
 * against the input a piece of evidence came from.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analyze/internal.h"

void an_input_error(pt_analysis* a, uint32_t input, uint32_t line, const char* fmt, ...) {
  an_input* in = &a->inputs[input];
  in->n_errors++;
  a->errors++;
  if (in->n_errors > AN_MAX_ERRORS_KEPT) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (!in->errors && !(in->errors = an_alloc(&a->mem, AN_MAX_ERRORS_KEPT * sizeof *in->errors))) return;
  an_error* e = &in->errors[in->n_errors - 1];
  e->line = line;
  e->message = an_strdup(&a->mem, buf);
}

/* rank<R>.…, …-r<R>-… : the rank a file name says, or -1. */
/* A rank number in a file name: digits, at most AN_MAX_RANK; -1 if not. */
static int hint_number(const char* s) {
  long v = 0;
  for (; *s >= '0' && *s <= '9'; s++)
    if ((v = v * 10 + (*s - '0')) > AN_MAX_RANK) return -1;
  return (int)v;
}

static int rank_hint(const char* path) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char* p = strstr(base, "rank");
  if (p && p[4] >= '0' && p[4] <= '9') return hint_number(p + 4);
  for (p = base; (p = strstr(p, "-r")) != NULL; p += 2) {
    if (p[2] < '0' || p[2] > '9') continue;
    const char* e = p + 2;
    while (*e >= '0' && *e <= '9') e++;
    if (*e == '-' || *e == '.') return hint_number(p + 2);
  }
  return -1;
}

void an_input_free(pt_analysis* a, an_input* in) {
  an_free(&a->mem, in->path);
  an_free(&a->mem, in->error);
  for (int e = 0; in->errors && e < in->n_errors && e < AN_MAX_ERRORS_KEPT; e++) an_free(&a->mem, in->errors[e].message);
  an_free(&a->mem, in->errors);
}

int an_input_add(pt_analysis* a, const char* path, uint32_t* out) {
  an_input* in = an_grow(&a->mem, (void**)&a->inputs, &a->n_inputs, &a->cap_inputs, sizeof *in);
  if (!in) return PT_AN_ENOMEM;
  in->path = an_strdup(&a->mem, path ? path : "");
  if (!in->path) {
    a->n_inputs--;
    return PT_AN_ENOMEM;
  }
  in->format = "none";
  in->rank_hint = rank_hint(in->path);
  *out = (uint32_t)(a->n_inputs - 1);
  return 0;
}
