/*
 * result.c — storage of a pt_result: the public struct plus the growable
 * arrays and the strings it points to. Every string a result shows is
 * copied into it, so a result outlives the request, the environment and
 * the files it describes. Out-of-memory is remembered (`nomem`) instead of
 * being checked at every call site; the final status then says PT_ENOMEM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>

#include "internal.h"

pt_res* pt_res_new(pt_host host, int probed) {
  pt_res* r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->pub.host = host;
  r->pub.probed = probed;
  r->pub.path = "";
  r->pub.realpath = "";
  r->pub.plugin_name = "";
  r->pub.value_origin = "";
  r->pub.net_value_origin = "";
  r->pub.candidates = NULL;
  r->pub.notes = NULL;
  return r;
}

static int grow(void** p, size_t* cap, size_t need, size_t elem) {
  if (need <= *cap) return 1;
  size_t c = *cap ? *cap * 2 : 8;
  while (c < need) c *= 2;
  void* q = realloc(*p, c * elem);
  if (!q) return 0;
  memset((char*)q + *cap * elem, 0, (c - *cap) * elem);
  *p = q;
  *cap = c;
  return 1;
}

static char* own(pt_res* r, char* s) {
  if (!s) {
    r->nomem = 1;
    return NULL;
  }
  if (!grow((void**)&r->owned, &r->cap_owned, r->n_owned + 1, sizeof *r->owned)) {
    free(s);
    r->nomem = 1;
    return NULL;
  }
  r->owned[r->n_owned++] = s;
  return s;
}

const char* pt_res_keep(pt_res* r, const char* s) {
  if (!s) return NULL;
  const char* k = own(r, strdup(s));
  return k ? k : "";
}

static char* vformat(const char* fmt, va_list ap) {
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  if (n < 0) return NULL;
  char* s = malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

const char* pt_res_keepf(pt_res* r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const char* k = own(r, vformat(fmt, ap));
  va_end(ap);
  return k ? k : "";
}

void pt_res_note(pt_res* r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = own(r, vformat(fmt, ap));
  va_end(ap);
  if (!s) return;
  if (!grow((void**)&r->notes, &r->cap_notes, r->pub.n_notes + 1, sizeof *r->notes)) {
    r->nomem = 1;
    return;
  }
  r->notes[r->pub.n_notes++] = s;
  r->pub.notes = r->notes;
}

pt_candidate* pt_res_add(pt_res* r, const char* name, pt_source src, int phase) {
  size_t n = r->pub.n_candidates;
  size_t cap = r->cap_cands;
  if (!grow((void**)&r->cands, &cap, n + 1, sizeof *r->cands) ||
      !grow((void**)&r->priv, &r->cap_cands, n + 1, sizeof *r->priv)) {
    r->nomem = 1;
    return NULL;
  }
  pt_candidate* c = &r->cands[n];
  memset(c, 0, sizeof *c);
  memset(&r->priv[n], 0, sizeof r->priv[n]);
  c->name = pt_res_keep(r, name);
  c->file = "";
  c->reason = "";
  c->source = src;
  c->outcome = PT_CAND_NOT_TRIED;
  r->priv[n].phase = phase;
  r->pub.n_candidates = n + 1;
  r->pub.candidates = r->cands;
  return c;
}

void pt_res_refuse(pt_res* r, size_t i, pt_outcome o, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char* s = own(r, vformat(fmt, ap));
  va_end(ap);
  r->cands[i].outcome = o;
  r->cands[i].reason = s ? s : "";
}

void pt_result_free(pt_result* res) {
  if (!res) return;
  pt_res* r = (pt_res*)res;
  for (size_t i = 0; i < r->n_owned; i++) free(r->owned[i]);
  free(r->owned);
  free(r->cands);
  free(r->priv);
  free(r->notes);
  free(r);
}

int pt_result_close(pt_result* res) {
  if (!res || !res->handle) return PT_OK;
  int rc = dlclose(res->handle) == 0 ? PT_OK : PT_ELOAD;
  res->handle = NULL;
  res->table = NULL;
  res->dump_hook = NULL;
  return rc;
}
