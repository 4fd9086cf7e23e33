/*
 * progress.c — the plugin's progress lines (docs/dump-json.md, "Progress")
 * into their dump: the "progress" summary, the last "coll" and "p2p" calls
 * and each channel's "kernelCh" state, from JSON lines or from the text
 * dump's `proxytrace <type>: key=value …` lines.
 *
 * One routine reads both formats through a field getter (an_fields), as
 * the plugin writes both from one routine: the same names, the same
 * values. A line of an unknown type or with a field out of range is
 * skipped; the lines say what the rank did, never how a record reads, so
 * a bad one costs only the desync judgement of that rank.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/evidence.h"

static int64_t get(const an_fields* f, const char* key, int64_t dflt) {
  int64_t v;
  return f->i64(f, key, &v) == 0 ? v : dflt;
}

static void get_name(const an_fields* f, const char* key, char* out, size_t n) {
  char buf[64];
  const char* s = f->str(f, key, buf, sizeof buf);
  an_copy(out, n, s ? s : "");
}

int an_progress_line(pt_analysis* a, an_dump* d, const char* type, const an_fields* f, uint32_t line) {
  if (!strcmp(type, "progress")) {
    d->has_progress = 1;
    d->n_calls[0] = get(f, "colls", 0);
    d->n_calls[1] = get(f, "p2ps", 0);
    d->n_tasks = 0;
    d->n_kch = 0;
    return 0;
  }
  if (!strcmp(type, "coll") || !strcmp(type, "p2p")) {
    if (!d->has_progress || d->n_tasks >= AN_TASKS_KEPT) return 0;
    if (!d->tasks && !(d->tasks = an_alloc(&a->mem, AN_TASKS_KEPT * sizeof *d->tasks))) return -1;
    const int p2p = type[0] == 'p';
    an_task* t = &d->tasks[d->n_tasks];
    memset(t, 0, sizeof *t);
    t->is_p2p = (int8_t)p2p;
    t->seq = get(f, "seq", -1);
    t->count = (uint64_t)get(f, "count", 0);
    t->root_or_peer = (int32_t)get(f, p2p ? "peer" : "root", -1);
    t->start_ns = get(f, "start_ns", 0);
    get_name(f, "func", t->func, sizeof t->func);
    get_name(f, "datatype", t->dtype, sizeof t->dtype);
    if (!p2p) {
      get_name(f, "algo", t->algo, sizeof t->algo);
      get_name(f, "proto", t->proto, sizeof t->proto);
    }
    t->line = line;
    /* Oldest first, the last 8 of each kind: the k-th line of a kind is
     * call n - kept + k; `index` is fixed once the kind's lines are all
     * read (an_desync), here it counts them. */
    int64_t k = 0;
    for (int i = 0; i < d->n_tasks; i++) k += d->tasks[i].is_p2p == p2p;
    t->index = k;
    if (t->seq < 0 || !t->func[0]) return 0;
    d->n_tasks++;
    return 0;
  }
  if (!strcmp(type, "kernelCh")) {
    if (!d->has_progress) return 0;
    const int64_t ch = get(f, "channel", -1);
    if (ch < 0 || ch > 255) return 0;
    an_kch* k = an_grow(&a->mem, (void**)&d->kch, &d->n_kch, &d->cap_kch, sizeof *k);
    if (!k) return -1;
    memset(k, 0, sizeof *k);
    k->channel = (int32_t)ch;
    k->starts = get(f, "starts", 0);
    k->stops = get(f, "stops", 0);
    get_name(f, "startFunc", k->start_func, sizeof k->start_func);
    get_name(f, "stopFunc", k->stop_func, sizeof k->stop_func);
    k->start_seq = get(f, "startSeq", -1);
    k->stop_seq = get(f, "stopSeq", -1);
    char kind[8];
    get_name(f, "startKind", kind, sizeof kind);
    k->start_p2p = !strcmp(kind, "p2p");
    get_name(f, "stopKind", kind, sizeof kind);
    k->stop_p2p = !strcmp(kind, "p2p");
    return 0;
  }
  return 0;
}

const char* an_progress_text_type(const char* s, const char** rest) {
  static const char* const types[] = {"progress", "coll", "p2p", "kernelCh"};
  const char* hit = strstr(s, "proxytrace ");
  if (!hit) return NULL;
  hit += strlen("proxytrace ");
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    const size_t n = strlen(types[i]);
    if (!strncmp(hit, types[i], n) && hit[n] == ':') {
      *rest = hit + n + 1;
      return types[i];
    }
  }
  return NULL;
}

/* " key=value" in the words; the value's start and length, or NULL. */
static const char* word(const char* words, const char* key, size_t* len) {
  const size_t n = strlen(key);
  for (const char* p = words; (p = strstr(p, key)) != NULL; p += n) {
    if ((p == words || p[-1] == ' ') && p[n] == '=') {
      const char* v = p + n + 1;
      *len = strcspn(v, " \r\n");
      return v;
    }
  }
  return NULL;
}

static int text_i64(const an_fields* f, const char* key, int64_t* out) {
  size_t len;
  const char* v = word(f->src, key, &len);
  if (!v || !len) return -1;
  char* end;
  const long long x = strtoll(v, &end, 10);
  if (end != v + len) return -1;
  *out = x;
  return 0;
}

static const char* text_str(const an_fields* f, const char* key, char* buf, size_t n) {
  size_t len;
  const char* v = word(f->src, key, &len);
  if (!v || !n) return NULL;
  if (len >= n) len = n - 1;
  memcpy(buf, v, len);
  buf[len] = 0;
  return buf;
}

void an_progress_text_fields(an_fields* f, const char* words) {
  f->i64 = text_i64;
  f->str = text_str;
  f->src = words;
}
