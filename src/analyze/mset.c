/*
 * mset.c — reading the step metrics files back and naming the slow edges
 * (mset.h says how).
 *
 * The plugin writes the JSON lines itself (src/trace/metrics_out.c): keys
 * without spaces, each once per object, nested objects "gpuWait",
 * "network", "step". The reader looks up the keys it needs in that text; a
 * line that is not a metrics line is counted and skipped.
 */
#include "analyze/mset.h"

#include "analyze/internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- reading ---- */

/* The value after "key": at or after `from`, or NULL. */
static const char* after(const char* from, const char* key) {
  if (!from) return NULL;
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char* p = strstr(from, k);
  return p ? p + strlen(k) : NULL;
}

static uint64_t u64(const char* from, const char* key) {
  const char* p = after(from, key);
  if (!p) return 0;
  if (*p == '"') p++; /* commHash is a decimal string */
  return strtoull(p, NULL, 10);
}

static int64_t i64(const char* from, const char* key, int64_t def) {
  const char* p = after(from, key);
  if (!p || !strncmp(p, "null", 4)) return def;
  return strtoll(p, NULL, 10);
}

/* The header's host, decoded as every JSON string the analyzer reads
 * (json.c: escapes such as \u001b become the characters they stand for,
 * which the outputs then escape for their reader); "" when the line does
 * not parse. */
static void header_host(an_mem* m, const char* line, char* out, size_t n) {
  an_jobj* o = an_alloc(m, sizeof *o); /* once per file; too large for a small stack */
  out[0] = 0;
  if (!o) return; /* counted: the analysis then says out of memory */
  char err[80];
  const char* h = an_json_parse(line, strlen(line), o, err, sizeof err) == 0 ? an_json_str(o, "host") : NULL;
  if (h) snprintf(out, n, "%s", h);
  an_free(m, o);
}

int pt_mset_line(pt_mset* s, const char* line) {
  if (!strncmp(line, "{\"type\":\"metrics\"", 17)) {
    s->files++;
    s->comm = u64(line, "commHash");
    header_host(&s->mem, line, s->host, sizeof s->host);
    s->pid = (long)i64(line, "pid", 0);
    s->rank = (int)i64(line, "rank", -1);
    s->time_ns = i64(line, "time_ns", 0);
    return 1;
  }
  if (strncmp(line, "{\"type\":\"edge\"", 14) != 0) return strncmp(line, "{\"type\":\"end\"", 13) ? 0 : 1;
  pt_ms_edge* e = an_grow(&s->mem, (void**)&s->e, &s->n, &s->cap, sizeof *s->e);
  if (!e) return -1;
  e->comm = s->comm;
  memcpy(e->host, s->host, sizeof e->host);
  e->pid = s->pid;
  e->time_ns = s->time_ns;
  e->rank = (int)i64(line, "rank", s->rank);
  e->peer = (int)i64(line, "peer", -1);
  e->channel = (int)i64(line, "channel", -1);
  const char* d = after(line, "dir");
  e->send = d && !strncmp(d, "\"send\"", 6);
  e->ops = u64(line, "ops");
  e->steps = u64(line, "steps");
  e->sized_steps = u64(line, "sizedSteps");
  e->bytes = u64(line, "bytes");
  e->busy_ns = u64(line, "busy_ns");
  e->throughput = u64(line, "throughput_Bps");
  e->credit_ns = u64(line, "creditWait_ns");
  static const char* const obj[PT_MS_TIMES] = {"gpuWait", "network", "step"};
  for (int w = 0; w < PT_MS_TIMES; w++) {
    const char* o = after(line, obj[w]);
    e->count[w] = u64(o, "count");
    e->sum_ns[w] = u64(o, "sum_ns");
    e->p50_ns[w] = u64(o, "p50_ns");
    e->p99_ns[w] = u64(o, "p99_ns");
  }
  return 1;
}

/* The next line of f into *line (grown as needed): 1, 0 at the end, -1
 * out of memory. */
static int next_line(an_mem* m, FILE* f, char** line, size_t* cap) {
  size_t n = 0;
  for (;;) {
    if (*cap - n < 2) {
      size_t c = *cap ? *cap * 2 : 4096;
      char* nl = an_realloc(m, *line, c);
      if (!nl) return -1;
      *line = nl;
      *cap = c;
    }
    if (!fgets(*line + n, (int)(*cap - n), f)) return n > 0;
    n += strlen(*line + n);
    if (n && (*line)[n - 1] == '\n') return 1;
  }
}

static int read_file(pt_mset* s, const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) {
    an_mem_errno(&s->mem, errno);
    return -1;
  }
  char* line = NULL;
  size_t cap = 0;
  int rc = 0, got;
  while ((got = next_line(&s->mem, f, &line, &cap)) > 0) {
    int r = pt_mset_line(s, line);
    if (r < 0) break;
    if (r == 0) s->bad_lines++;
  }
  if (got < 0 || s->mem.failed) {
    rc = -1;
    errno = ENOMEM;
  }
  an_free(&s->mem, line);
  fclose(f);
  return rc;
}

static int is_metrics_name(const char* name) {
  size_t len = strlen(name);
  return !strncmp(name, "proxytrace-metrics-", 19) && len > 6 && !strcmp(name + len - 6, ".jsonl");
}

int pt_mset_read(pt_mset* s, const char* path) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return read_file(s, path);
  DIR* d = opendir(path);
  if (!d) {
    an_mem_errno(&s->mem, errno);
    return -1;
  }
  struct dirent* de;
  int rc = 0;
  while ((de = readdir(d)) && rc == 0) {
    if (!is_metrics_name(de->d_name)) continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", path, de->d_name);
    if (read_file(s, p) != 0 && errno == ENOMEM) rc = -1;
  }
  closedir(d);
  return rc;
}

void pt_mset_free(pt_mset* s) {
  an_free(&s->mem, s->e);
  memset(s, 0, sizeof *s);
}

/* ---- comparing ---- */

typedef struct {
  const pt_mset* s;
  int which;
} sort_ctx;

static int group_cmp(const pt_ms_edge* a, const pt_ms_edge* b) {
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->send != b->send) return a->send - b->send;
  return (a->channel >= 0) - (b->channel >= 0);
}

static int by_group_value(const void* x, const void* y, void* arg) {
  const sort_ctx* g = arg;
  const pt_ms_edge* a = &g->s->e[*(const size_t*)x];
  const pt_ms_edge* b = &g->s->e[*(const size_t*)y];
  int c = group_cmp(a, b);
  if (c) return c;
  uint64_t va = a->p50_ns[g->which], vb = b->p50_ns[g->which];
  return (va > vb) - (va < vb);
}

static int comparable(const pt_ms_edge* e, int which) {
  return e->steps >= PT_MS_MIN_STEPS && e->count[which] > 0;
}

int pt_mset_ratios(const pt_mset* s, int which, double* ratio) {
  an_mem scratch = {0};
  size_t* ix = an_alloc(&scratch, (s->n + 1) * sizeof *ix);
  for (size_t i = 0; i < s->n; i++) ratio[i] = 0;
  if (!ix) return -1;
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++)
    if (comparable(&s->e[i], which)) ix[k++] = i;
  sort_ctx g = {s, which};
  qsort_r(ix, k, sizeof *ix, by_group_value, &g);
  for (size_t i = 0; i < k;) {
    size_t j = i;
    while (j < k && !group_cmp(&s->e[ix[i]], &s->e[ix[j]])) j++;
    if (j - i >= PT_MS_MIN_EDGES) {
      const uint64_t med = s->e[ix[i + (j - i - 1) / 2]].p50_ns[which]; /* the lower median */
      for (size_t q = i; q < j && med; q++) ratio[ix[q]] = (double)s->e[ix[q]].p50_ns[which] / (double)med;
    }
    i = j;
  }
  an_free(&scratch, ix);
  return 0;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef struct {
  pt_ms_slow_edge* v;
  size_t n, cap;
} vec;

static int push(an_mem* m, vec* v, const pt_ms_slow_edge* e) {
  pt_ms_slow_edge* at = an_grow(m, (void**)&v->v, &v->n, &v->cap, sizeof *v->v);
  if (!at) return -1;
  *at = *e;
  return 0;
}

static int add_culprit(pt_ms_verdict* v, const pt_ms_culprit* c) {
  pt_ms_culprit* at = an_grow(&v->mem, (void**)&v->culprits, &v->n_culprits, &v->cap_culprits, sizeof *at);
  if (!at) return -1;
  *at = *c;
  return 0;
}

/* The median factor of the slow edges of side `side` that `match` selects;
 * f: room for sl->n factors. */
static double median_factor(const vec* sl, uint64_t comm, int side, int rank, int peer, const char* skip,
                            double* f, size_t* count) {
  size_t k = 0;
  for (size_t i = 0; i < sl->n; i++) {
    const pt_ms_slow_edge* e = &sl->v[i];
    if (e->comm != comm || e->side != side || e->channel >= 0 || (skip && skip[i])) continue;
    const int touches = side == PT_MS_GPU ? e->rank == rank
                                          : (e->rank == rank || e->peer == rank) &&
                                                (peer < 0 || e->rank == peer || e->peer == peer);
    if (touches) f[k++] = e->factor;
  }
  double m = 0;
  if (k) {
    qsort(f, k, sizeof *f, cmp_double);
    m = f[(k - 1) / 2 + (k % 2 == 0)]; /* the upper median: how much slower it is */
  }
  *count = k;
  return m;
}

/* The other end's record of the same transfers is network-slow too, or
 * absent (its rank's file is not among the inputs). */
static int other_end_agrees(const pt_mset* s, const vec* sl, const pt_ms_slow_edge* e) {
  int present = 0;
  for (size_t i = 0; i < s->n && !present; i++) {
    const pt_ms_edge* x = &s->e[i];
    present = x->comm == e->comm && x->rank == e->peer && x->peer == e->rank && x->send != e->send &&
              x->channel == e->channel && comparable(x, PT_MS_NET);
  }
  if (!present) return 1;
  for (size_t k = 0; k < sl->n; k++) {
    const pt_ms_slow_edge* y = &sl->v[k];
    if (y->side == PT_MS_NET && y->comm == e->comm && y->rank == e->peer && y->peer == e->rank &&
        y->send != e->send && y->channel == e->channel)
      return 1;
  }
  return 0;
}

static void where(const pt_mset* s, uint64_t comm, int rank, pt_ms_culprit* c) {
  for (size_t i = 0; i < s->n; i++)
    if (s->e[i].comm == comm && s->e[i].rank == rank) {
      memcpy(c->host, s->e[i].host, sizeof c->host);
      c->pid = s->e[i].pid;
      return;
    }
}

int pt_mset_slow(const pt_mset* s, double factor, pt_ms_verdict* v) {
  memset(v, 0, sizeof *v);
  double* r[2] = {an_alloc(&v->mem, (s->n + 1) * sizeof(double)), an_alloc(&v->mem, (s->n + 1) * sizeof(double))};
  vec sl = {0};
  char* skip = NULL;
  double* factors = NULL;
  int rc = -1;
  if (!r[0] || !r[1]) goto out;
  if (pt_mset_ratios(s, PT_MS_GPU, r[0]) != 0 || pt_mset_ratios(s, PT_MS_NET, r[1]) != 0) goto out;
  for (size_t i = 0; i < s->n; i++) {
    const pt_ms_edge* e = &s->e[i];
    for (int side = 0; side < 2; side++) {
      if (r[side][i] < factor) continue;
      const pt_ms_slow_edge x = {e->comm, e->rank, e->peer, e->channel, e->send, side, r[side][i],
                                 e->p50_ns[side], (uint64_t)((double)e->p50_ns[side] / r[side][i])};
      if (push(&v->mem, &sl, &x) != 0) goto out;
    }
  }
  factors = an_alloc(&v->mem, (sl.n + 1) * sizeof *factors);
  if (!factors) goto out;
  /* GPU-side: each rank whose own edges wait for its GPU. */
  for (size_t i = 0; i < sl.n; i++) {
    const pt_ms_slow_edge* e = &sl.v[i];
    if (e->side != PT_MS_GPU || e->channel >= 0) continue;
    int seen = 0;
    for (size_t k = 0; k < v->n_culprits && !seen; k++)
      seen = v->culprits[k].comm == e->comm && v->culprits[k].rank == e->rank && v->culprits[k].side == PT_MS_GPU;
    if (seen) continue;
    pt_ms_culprit c = {.comm = e->comm, .rank = e->rank, .peer = -1, .side = PT_MS_GPU};
    c.factor = median_factor(&sl, e->comm, PT_MS_GPU, e->rank, -1, NULL, factors, &c.edges);
    /* Two slow edges, or every edge the rank has: one edge of several may
     * be a thread that was not scheduled. */
    size_t own = 0;
    for (size_t q = 0; q < s->n; q++)
      own += s->e[q].comm == e->comm && s->e[q].rank == e->rank && s->e[q].channel < 0 && comparable(&s->e[q], PT_MS_GPU);
    if (c.edges < 2 && c.edges < own) continue;
    where(s, e->comm, e->rank, &c);
    if (add_culprit(v, &c) != 0) goto out;
  }
  const size_t n_gpu = v->n_culprits;
  /* Network-side: the rank most slow edges meet at, one at a time; edges
   * into or out of a slow GPU are explained by it. */
  skip = an_alloc(&v->mem, sl.n + 1);
  if (!skip) goto out;
  for (size_t i = 0; i < sl.n; i++) {
    const pt_ms_slow_edge* e = &sl.v[i];
    skip[i] = e->side != PT_MS_NET || e->channel >= 0;
    for (size_t k = 0; k < n_gpu && !skip[i]; k++)
      skip[i] = v->culprits[k].comm == e->comm && (v->culprits[k].rank == e->rank || v->culprits[k].rank == e->peer);
    /* Both ends time the same transfers: a slow network shows on the
     * sender's record and on the receiver's. One end alone is that rank's
     * thread, or its peer's GPU (a credit wait), not the network. */
    if (!skip[i] && !other_end_agrees(s, &sl, e)) skip[i] = 1;
  }
  for (;;) {
    uint64_t comm = 0;
    int best = -1;
    size_t best_n = 0;
    for (size_t i = 0; i < sl.n; i++) {
      if (skip[i]) continue;
      for (int end = 0; end < 2; end++) {
        const int x = end ? sl.v[i].peer : sl.v[i].rank;
        size_t n = 0;
        for (size_t q = 0; q < sl.n; q++)
          n += !skip[q] && sl.v[q].comm == sl.v[i].comm && (sl.v[q].rank == x || sl.v[q].peer == x);
        if (n > best_n || (n == best_n && sl.v[i].comm == comm && x < best)) {
          best_n = n;
          best = x;
          comm = sl.v[i].comm;
        }
      }
    }
    /* A slow NIC slows both ends of its transfers: two slow edges at least
     * (one alone may be a thread that was not scheduled). */
    if (best < 0 || best_n < 2) break;
    /* One peer only: the link between the two. */
    int other = -2;
    for (size_t q = 0; q < sl.n; q++) {
      if (skip[q] || sl.v[q].comm != comm || (sl.v[q].rank != best && sl.v[q].peer != best)) continue;
      const int o = sl.v[q].rank == best ? sl.v[q].peer : sl.v[q].rank;
      other = other == -2 || other == o ? o : -1;
    }
    pt_ms_culprit c = {.comm = comm, .rank = best, .peer = other >= 0 ? other : -1, .side = PT_MS_NET};
    c.factor = median_factor(&sl, comm, PT_MS_NET, best, -1, skip, factors, &c.edges);
    where(s, comm, best, &c);
    if (add_culprit(v, &c) != 0) goto out;
    for (size_t q = 0; q < sl.n; q++)
      if (!skip[q] && sl.v[q].comm == comm && (sl.v[q].rank == best || sl.v[q].peer == best)) skip[q] = 1;
  }
  v->edges = sl.v;
  v->n_edges = sl.n;
  sl.v = NULL;
  rc = 0;
out:
  an_free(&v->mem, r[0]);
  an_free(&v->mem, r[1]);
  an_free(&v->mem, skip);
  an_free(&v->mem, factors);
  an_free(&v->mem, sl.v);
  if (rc) pt_ms_verdict_free(v);
  return rc;
}

void pt_ms_verdict_free(pt_ms_verdict* v) {
  an_free(&v->mem, v->edges);
  an_free(&v->mem, v->culprits);
  memset(v, 0, sizeof *v);
}
