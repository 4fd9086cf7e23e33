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
#include "format/format.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A histogram entry: (bucket << 56) | count. */
#define BUCKET(x) ((int)((x) >> 56))
#define COUNT(x) ((x) & ((1ull << 56) - 1))

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

_Static_assert(PT_MS_BUCKETS == PT_METRIC_TIME_BUCKET_COUNT, "the plugin's buckets");

uint64_t pt_ms_bucket_upper_ns(int b) { return pt_metric_time_bound_ns(b); }

int pt_ms_bucket_of(uint64_t ub) {
  const int b = pt_metric_time_bucket_of(ub);
  return pt_metric_time_bound_ns(b) == ub ? b : -1; /* an exact bound falls in its own bucket */
}

/* One histogram's "buckets":[[upper,count],…] (upper null above the
 * last) into the set's pool. 0, or -1 out of memory; a bound that is not
 * one of the plugin's ends the list (the line is a newer or a damaged one). */
static int read_hist(pt_mset* s, const char* o, pt_ms_hist* h) {
  h->at = (uint32_t)s->n_buckets;
  h->n = 0;
  const char* p = after(o, "buckets");
  if (!p || *p != '[') return 0;
  p++;
  while (*p == '[') {
    p++;
    uint64_t ub = UINT64_MAX;
    char* end;
    if (!strncmp(p, "null", 4)) end = (char*)p + 4;
    else ub = strtoull(p, &end, 10);
    if (*end != ',') break;
    const uint64_t n = strtoull(end + 1, &end, 10);
    const int b = pt_ms_bucket_of(ub);
    if (*end != ']' || b < 0) break;
    uint64_t* at = an_grow(&s->mem, (void**)&s->buckets, &s->n_buckets, &s->cap_buckets, sizeof *at);
    if (!at) return -1;
    *at = (uint64_t)b << 56 | (n & ((1ull << 56) - 1));
    h->n++;
    p = end + 1;
    if (*p == ',') p++;
  }
  return 0;
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
  /* The plugin writes each line whole: one cut short (a file being
   * rewritten, a document's example spread over lines) is none of its. */
  if (!an_json_whole(line, strlen(line))) return 0;
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
    if (read_hist(s, o, &e->hist[w]) != 0) return -1;
  }
  return 1;
}

/* The next line of f into *line (grown as needed, its '\n' dropped, NUL
 * terminated): 1, 0 at the end, -1 out of memory. A line longer than
 * AN_MAX_LINE is read past to its end, kept to nothing, and *too_long
 * set: what a planted file costs is one such line, however long its
 * lines. A NUL byte is a byte like any other (the line is then not a
 * metrics line). */
static int next_line(an_mem* m, FILE* f, char** line, size_t* cap, int* too_long) {
  size_t n = 0;
  int c;
  *too_long = 0;
  while ((c = getc_unlocked(f)) != EOF && c != '\n') {
    if (*too_long) continue;
    if (n == AN_MAX_LINE) {
      *too_long = 1;
      continue;
    }
    if (*cap - n < 2) {
      size_t k = *cap ? *cap * 2 : 4096;
      if (k > AN_MAX_LINE + 1) k = AN_MAX_LINE + 1;
      char* nl = an_realloc(m, *line, k);
      if (!nl) return -1;
      *line = nl;
      *cap = k;
    }
    (*line)[n++] = (char)c;
  }
  if (c == EOF && n == 0 && !*too_long) return 0;
  if (*too_long) n = 0;
  if (*cap < 1) {
    char* nl = an_realloc(m, *line, 4096);
    if (!nl) return -1;
    *line = nl;
    *cap = 4096;
  }
  (*line)[n] = 0;
  return 1;
}

/* One metrics file: a file that is not a regular one (a FIFO, a link to
 * a device, left in a shared folder) is passed over, counted. */
static int read_file(pt_mset* s, const char* path) {
  FILE* f;
  const int opened = an_open_regular(path, &f, NULL);
  if (opened > 0) {
    s->not_regular++;
    return 0;
  }
  if (opened < 0) {
    an_mem_errno(&s->mem, errno);
    return -1;
  }
  char* line = NULL;
  size_t cap = 0;
  int rc = 0, got, too_long;
  while ((got = next_line(&s->mem, f, &line, &cap, &too_long)) > 0) {
    if (too_long) {
      s->bad_lines++;
      continue;
    }
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
  if (!S_ISDIR(st.st_mode)) {
    if (!an_not_regular(&st)) return read_file(s, path);
    errno = ENOTDIR; /* neither the folder asked for nor a metrics file */
    return -1;
  }
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
  an_free(&s->mem, s->buckets);
  memset(s, 0, sizeof *s);
}

/* ---- windows ---- */

static uint64_t edge_key(const pt_ms_edge* e) {
  uint64_t k = an_mix(an_mix(an_mix(0xed9e, e->comm), (uint64_t)(uint32_t)e->rank), (uint64_t)(uint32_t)e->peer);
  return an_mix(an_mix(an_mix(k, (uint64_t)(uint32_t)e->channel), (uint64_t)e->send), (uint64_t)e->pid);
}

static int same_edge(const pt_ms_edge* a, const pt_ms_edge* b) {
  return a->comm == b->comm && a->rank == b->rank && a->peer == b->peer && a->channel == b->channel &&
         a->send == b->send && a->pid == b->pid && !strcmp(a->host, b->host);
}

/* h of `now` less g of `then` (both in bucket order) into out's pool;
 * 0, 1 when a count went down (another process), -1 out of memory. */
static int hist_less(pt_mset* out, const pt_mset* now, const pt_ms_hist* h, const pt_mset* then,
                     const pt_ms_hist* g, pt_ms_hist* o) {
  o->at = (uint32_t)out->n_buckets;
  o->n = 0;
  uint32_t j = 0;
  for (uint32_t i = 0; i < h->n; i++) {
    const uint64_t x = now->buckets[h->at + i];
    uint64_t n = COUNT(x);
    while (g && j < g->n && BUCKET(then->buckets[g->at + j]) < BUCKET(x)) return 1; /* a bucket went away */
    if (g && j < g->n && BUCKET(then->buckets[g->at + j]) == BUCKET(x)) {
      const uint64_t was = COUNT(then->buckets[g->at + j++]);
      if (was > n) return 1;
      n -= was;
    }
    if (!n) continue;
    uint64_t* at = an_grow(&out->mem, (void**)&out->buckets, &out->n_buckets, &out->cap_buckets, sizeof *at);
    if (!at) return -1;
    *at = (uint64_t)BUCKET(x) << 56 | n;
    o->n++;
  }
  return g && j < g->n ? 1 : 0;
}

/* The bucket bound at which a sparse histogram reaches quantile q. */
static uint64_t hist_quantile(const pt_mset* s, const pt_ms_hist* h, uint64_t n, double q) {
  uint64_t cum = 0;
  for (uint32_t i = 0; i < h->n; i++) {
    cum += COUNT(s->buckets[h->at + i]);
    if ((double)cum >= q * (double)n) {
      const int b = BUCKET(s->buckets[h->at + i]);
      return pt_ms_bucket_upper_ns(b < PT_MS_BUCKETS - 1 ? b : PT_MS_BUCKETS - 2);
    }
  }
  return 0;
}

int pt_mset_since(const pt_mset* now, const pt_mset* then, pt_mset* out) {
  memset(out, 0, sizeof *out);
  an_map idx;
  if (an_map_init(&out->mem, &idx, then ? then->n + 1 : 1) != 0) return -1;
  int rc = -1;
  for (size_t i = 0; then && i < then->n; i++)
    if (an_map_add(&out->mem, &idx, edge_key(&then->e[i]), (int32_t)i) != 0) goto out;
  out->files = now->files;
  for (size_t i = 0; i < now->n; i++) {
    const pt_ms_edge* e = &now->e[i];
    const pt_ms_edge* was = NULL;
    for (int32_t k = then ? an_map_first(&idx, edge_key(e)) : -1; k >= 0 && !was; k = an_map_next(&idx, k))
      if (same_edge(&then->e[k], e)) was = &then->e[k];
    pt_ms_edge* d = an_grow(&out->mem, (void**)&out->e, &out->n, &out->cap, sizeof *d);
    if (!d) goto out;
    *d = *e;
    const size_t mark = out->n_buckets;
    int gone = was && (was->steps > e->steps || was->ops > e->ops);
    for (int w = 0; w < PT_MS_TIMES && !gone; w++) {
      const int r = hist_less(out, now, &e->hist[w], was ? then : NULL, was ? &was->hist[w] : NULL, &d->hist[w]);
      if (r < 0) goto out;
      gone = r;
    }
    if (gone) { /* counts went down: another process under the same name; whole */
      out->n_buckets = mark;
      for (int w = 0; w < PT_MS_TIMES; w++)
        if (hist_less(out, now, &e->hist[w], NULL, NULL, &d->hist[w]) < 0) goto out;
      continue;
    }
    if (!was) continue;
    d->ops -= was->ops;
    d->steps -= was->steps;
    d->sized_steps -= was->sized_steps < d->sized_steps ? was->sized_steps : d->sized_steps;
    d->bytes -= was->bytes < d->bytes ? was->bytes : d->bytes;
    d->busy_ns -= was->busy_ns < d->busy_ns ? was->busy_ns : d->busy_ns;
    d->credit_ns -= was->credit_ns < d->credit_ns ? was->credit_ns : d->credit_ns;
    for (int w = 0; w < PT_MS_TIMES; w++) {
      d->count[w] -= was->count[w] < d->count[w] ? was->count[w] : d->count[w];
      d->sum_ns[w] -= was->sum_ns[w] < d->sum_ns[w] ? was->sum_ns[w] : d->sum_ns[w];
      d->p50_ns[w] = hist_quantile(out, &d->hist[w], d->count[w], 0.5);
      d->p99_ns[w] = hist_quantile(out, &d->hist[w], d->count[w], 0.99);
    }
  }
  rc = 0;
out:
  an_map_free(&out->mem, &idx);
  if (rc) pt_mset_free(out);
  return rc;
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

/* The median factor of a culprit's slow aggregate edges: a GPU's, its
 * rank's own GPU-slow ones; a proxy thread's (PT_MS_HOST), its rank's own,
 * either side; a network culprit's, those through `rank` (and `peer`, when
 * one); not those `skip` marks. f: room for sl->n factors. */
static double median_factor(const vec* sl, uint64_t comm, int side, int rank, int peer, const char* skip,
                            double* f, size_t* count) {
  size_t k = 0;
  for (size_t i = 0; i < sl->n; i++) {
    const pt_ms_slow_edge* e = &sl->v[i];
    if (e->comm != comm || (side != PT_MS_HOST && e->side != side) || e->channel >= 0 || (skip && skip[i]))
      continue;
    const int touches = side != PT_MS_NET ? e->rank == rank
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

/* ---- the test (mset.h) ---- */

/* An edge's comparable group: communicator, direction, granularity, and
 * bytes per step by octave (0 where the edge has no sizes). */
typedef struct {
  uint64_t comm;
  int send, per_channel, size_class;
} group_key;

static group_key key_of(const pt_ms_edge* e) {
  const uint64_t per = e->sized_steps ? e->bytes / e->sized_steps : 0;
  return (group_key){e->comm, e->send, e->channel >= 0, per ? 64 - __builtin_clzll(per) : 0};
}

static int key_cmp(group_key a, group_key b) {
  if (a.comm != b.comm) return a.comm < b.comm ? -1 : 1;
  if (a.send != b.send) return a.send - b.send;
  if (a.per_channel != b.per_channel) return a.per_channel - b.per_channel;
  return a.size_class - b.size_class;
}

static int by_key(const void* x, const void* y, void* arg) {
  const pt_mset* s = arg;
  const size_t i = *(const size_t*)x, j = *(const size_t*)y;
  const int c = key_cmp(key_of(&s->e[i]), key_of(&s->e[j]));
  return c ? c : (i > j) - (i < j);
}

/* The value at quantile q of a dense histogram of n samples, geometric
 * within its bucket (the buckets are four per octave). */
static double quantile(const uint64_t* h, uint64_t n, double q) {
  if (!n) return 0;
  const double rank = q * (double)n;
  uint64_t cum = 0;
  for (int b = 0; b < PT_MS_BUCKETS; b++) {
    if (!h[b]) continue;
    if ((double)(cum + h[b]) >= rank) {
      const double hi = b == PT_MS_BUCKETS - 1 ? 2.0 * (double)pt_ms_bucket_upper_ns(b - 1)
                                               : (double)pt_ms_bucket_upper_ns(b);
      const double lo = b ? (double)pt_ms_bucket_upper_ns(b - 1) : hi / 2;
      const double f = ((rank - (double)cum) / (double)h[b]);
      return lo * pow(hi / lo, f < 0 ? 0 : f > 1 ? 1 : f);
    }
    cum += h[b];
  }
  return (double)pt_ms_bucket_upper_ns(PT_MS_BUCKETS - 2);
}

static void add_hist(const pt_mset* s, const pt_ms_hist* h, uint64_t* d, int sign) {
  for (uint32_t k = 0; k < h->n; k++) {
    const uint64_t x = s->buckets[h->at + k];
    d[BUCKET(x)] += sign > 0 ? COUNT(x) : (uint64_t)-(int64_t)COUNT(x);
  }
}

double pt_ms_median_ns(const pt_mset* s, const pt_ms_edge* e, int side) {
  uint64_t h[PT_MS_BUCKETS] = {0}, n = 0;
  add_hist(s, &e->hist[side], h, 1);
  for (int b = 0; b < PT_MS_BUCKETS; b++) n += h[b];
  return quantile(h, n, 0.5);
}

/* The test of one edge's side against its group's pool (the edge in it):
 * 1 slow, 0 not, -1 too few steps. Fills x. own: scratch of PT_MS_BUCKETS. */
static int test_edge(const pt_mset* s, const pt_ms_edge* e, int side, const uint64_t* pool, uint64_t pool_n,
                     uint64_t* own, size_t tested, double alpha, double min_factor, pt_ms_slow_edge* x) {
  for (int b = 0; b < PT_MS_BUCKETS; b++) own[b] = 0;
  add_hist(s, &e->hist[side], own, 1);
  uint64_t n = 0;
  for (int b = 0; b < PT_MS_BUCKETS; b++) n += own[b];
  if (n < PT_MS_MIN_SAMPLES || pool_n - n < PT_MS_MIN_SAMPLES) return -1;
  /* The others: the pool less the edge; the bucket of their median, their
   * share above it (one above and one not added: few samples claim no
   * certainty), and the edge's steps above it. */
  const uint64_t others = pool_n - n, half = (others + 1) / 2;
  uint64_t cum = 0, above = 0;
  int m = 0;
  for (; m < PT_MS_BUCKETS; m++) {
    cum += pool[m] - own[m];
    if (cum >= half) break;
  }
  for (int b = m + 1; b < PT_MS_BUCKETS; b++) above += own[b];
  const double share = ((double)(others - cum) + 1) / ((double)others + 2);
  uint64_t* rest = own; /* reused: the others' histogram, for their median */
  double mine = quantile(own, n, 0.5);
  for (int b = 0; b < PT_MS_BUCKETS; b++) rest[b] = pool[b] - own[b];
  const double theirs = quantile(rest, others, 0.5);
  /* The steps of one op share its moment (a thread not scheduled, a busy
   * link slow them together): up to PT_MS_STEPS_PER_SAMPLE of them count as
   * one sample, so the test does not take them for independent. */
  uint64_t d = e->ops ? e->steps / e->ops : 1;
  d = d < 1 ? 1 : d > PT_MS_STEPS_PER_SAMPLE ? PT_MS_STEPS_PER_SAMPLE : d;
  *x = (pt_ms_slow_edge){e->comm, e->rank, e->peer, e->channel, e->send, side, theirs > 0 ? mine / theirs : 0,
                         (uint64_t)mine, (uint64_t)theirs, n, above, share, an_binomial_tail(n / d, above / d, share),
                         an_slow_claim(an_binomial_tail(n / d, n / d, share), tested, alpha)};
  return x->factor >= min_factor && an_slow_claim(x->tail, tested, alpha);
}

/* The slow (edge, side) pairs of s into sl; v counts what it had; conf:
 * per edge and side (conf[2 i + side]), its factor where its tail is
 * PT_MS_CONFIRM or less, 0 where it was tested and is not, -1 where it
 * could not be tested; can[2 i + side]: 1 where it had the samples to be
 * found slow (every step above the others' median would pass the test). */
static int slow_edges(const pt_mset* s, double alpha, double min_factor, pt_ms_verdict* v, vec* sl, double* conf,
                      unsigned char* can) {
  an_mem* m = &v->mem;
  size_t* ix = an_alloc(m, (s->n + 1) * sizeof *ix);
  uint64_t* pool = an_alloc(m, 2 * PT_MS_BUCKETS * sizeof *pool);
  uint64_t* own = an_alloc(m, PT_MS_BUCKETS * sizeof *own);
  signed char* ok = an_alloc(m, 2 * (s->n + 1));
  int rc = -1;
  if (!ix || !pool || !own || !ok) goto out;
  for (size_t i = 0; i < s->n; i++) {
    ix[i] = i;
    conf[2 * i] = conf[2 * i + 1] = -1;
    can[2 * i] = can[2 * i + 1] = 0;
  }
  qsort_r(ix, s->n, sizeof *ix, by_key, (void*)s);
  /* Two passes: count the pairs that can be tested (Bonferroni's
   * denominator), then test them. */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < s->n;) {
      size_t j = i;
      while (j < s->n && !key_cmp(key_of(&s->e[ix[i]]), key_of(&s->e[ix[j]]))) j++;
      for (int side = 0; side < 2; side++) {
        uint64_t* p = pool + side * PT_MS_BUCKETS, pn = 0;
        size_t enough = 0;
        for (int b = 0; b < PT_MS_BUCKETS; b++) p[b] = 0;
        for (size_t q = i; q < j; q++) {
          const pt_ms_edge* e = &s->e[ix[q]];
          add_hist(s, &e->hist[side], p, 1);
          enough += e->count[side] >= PT_MS_MIN_SAMPLES;
        }
        for (int b = 0; b < PT_MS_BUCKETS; b++) pn += p[b];
        const double med = quantile(p, pn, 0.5);
        for (size_t q = i; q < j; q++) {
          const pt_ms_edge* e = &s->e[ix[q]];
          if (pass == 0) {
            const int shorter = med < PT_MS_MIN_SPAN_NS;
            const size_t need = side == PT_MS_NET ? PT_MS_MIN_NET_EDGES : PT_MS_MIN_EDGES;
            ok[2 * ix[q] + side] = e->count[side] >= PT_MS_MIN_SAMPLES && enough >= need && !shorter;
            if (ok[2 * ix[q] + side]) v->tested++, v->tested_side[side]++;
            else if (e->count[side] < PT_MS_MIN_SAMPLES) v->few_samples++;
            else if (enough < need) v->few_edges++;
            else {
              v->short_edges++;
              if ((uint64_t)med > v->short_median_ns) v->short_median_ns = (uint64_t)med;
            }
            continue;
          }
          if (!ok[2 * ix[q] + side]) continue;
          pt_ms_slow_edge x;
          const int slow = test_edge(s, e, side, p, pn, own, v->tested, alpha, min_factor, &x);
          if (slow >= 0) conf[2 * ix[q] + side] = x.tail <= PT_MS_CONFIRM ? x.factor : 0;
          if (slow >= 0) can[2 * ix[q] + side] = (unsigned char)x.able;
          if (slow >= 0 && x.able) {
            v->able_side[side]++;
            if (!v->able && !(v->able = an_alloc(m, s->n + 1))) goto out;
            v->able[ix[q]] |= (unsigned char)(1u << side);
          }
          if (slow == 1 && push(m, sl, &x) != 0) goto out;
        }
      }
      i = j;
    }
  }
  rc = 0;
out:
  an_free(m, ix);
  an_free(m, pool);
  an_free(m, own);
  an_free(m, ok);
  return rc;
}

const char* pt_ms_verdict_state(const pt_ms_verdict* v) {
  if (pt_ms_judged(v)) return v->able_side[PT_MS_NET] ? "judged" : "gpu_only";
  if (v->tested) return "too_few_samples";
  return v->short_edges && !v->few_samples && !v->few_edges ? "too_short" : "not_enough_data";
}

void pt_ms_verdict_words(const pt_ms_verdict* v, char* buf, size_t n) {
  if (!n) return;
  buf[0] = 0;
  const char* state = pt_ms_verdict_state(v);
  if (!strcmp(state, "judged")) return;
  if (!strcmp(state, "gpu_only"))
    snprintf(buf, n,
             "no network wait could stand out beyond chance (%zu edge sides tested; too few samples, or groups "
             "of fewer than %d comparable edges: a slow NIC slows two of a ring's three); the GPU waits were judged",
             v->tested_side[PT_MS_NET], PT_MS_MIN_NET_EDGES);
  else if (!strcmp(state, "too_few_samples"))
    snprintf(buf, n,
             "too few samples: none of the %zu edge sides tested could stand out beyond chance, however slow "
             "(the steps of one op, up to %d, count as one sample)",
             v->tested, PT_MS_STEPS_PER_SAMPLE);
  else if (!strcmp(state, "too_short"))
    snprintf(buf, n,
             "the steps are too short to time: their median is up to %.1f us, under the %d us a judgement needs "
             "(unpaced emulated steps last microseconds)",
             (double)v->short_median_ns / 1e3, PT_MS_MIN_SPAN_NS / 1000);
  else
    snprintf(buf, n,
             "not enough data yet: %zu edge sides with fewer than %d steps, %zu in groups of fewer than %d "
             "comparable edges, %zu in groups whose steps are too short to time (under %d us)",
             v->few_samples, PT_MS_MIN_SAMPLES, v->few_edges, PT_MS_MIN_EDGES, v->short_edges,
             PT_MS_MIN_SPAN_NS / 1000);
}

int pt_ms_rank_able(const pt_mset* s, const pt_ms_verdict* v, uint64_t comm, int rank, unsigned sides,
                    int as_peer) {
  int has = -1;
  for (size_t i = 0; i < s->n; i++) {
    const pt_ms_edge* e = &s->e[i];
    if (e->comm != comm || (e->rank != rank && !(as_peer && e->peer == rank))) continue;
    if (v->able && (v->able[i] & sides)) return 1;
    has = 0;
  }
  return has;
}

int pt_mset_slow(const pt_mset* s, pt_ms_verdict* v) { return pt_mset_judge(s, AN_SLOW_ALPHA, PT_MS_MIN_FACTOR, v); }

/* Per rank of a communicator, what the explanation counts: its comparable
 * aggregate edges and those of them tested, per side (own[side],
 * tested[side]), the least factor of the tested ones at the confirmation
 * level (0 where one is not slow at it), its slow network edges not yet
 * explained (both ends count), whether its GPU was named, and one edge of
 * its own (where). */
typedef struct {
  uint64_t comm;
  int rank;
  size_t own[2], tested[2], able[2], net, net0; /* net0: net before any edge was explained */
  double least[2];
  int gpu_named;
  int64_t edge; /* an edge of s of this rank, -1 */
} tally;

typedef struct {
  an_mem* m;
  an_map idx;
  tally* t;
  size_t n, cap;
} tallies;

static uint64_t rank_key(uint64_t comm, int rank) { return an_mix(an_mix(0x7a11, comm), (uint64_t)(uint32_t)rank); }

/* The tally of (comm, rank); added when `add`, else NULL when absent. */
static tally* tally_of(tallies* ts, uint64_t comm, int rank, int add) {
  for (int32_t k = an_map_first(&ts->idx, rank_key(comm, rank)); k >= 0; k = an_map_next(&ts->idx, k))
    if (ts->t[k].comm == comm && ts->t[k].rank == rank) return &ts->t[k];
  if (!add) return NULL;
  tally* t = an_grow(ts->m, (void**)&ts->t, &ts->n, &ts->cap, sizeof *t);
  if (!t) return NULL;
  if (an_map_add(ts->m, &ts->idx, rank_key(comm, rank), (int32_t)(ts->n - 1)) != 0) {
    ts->n--;
    return NULL;
  }
  *t = (tally){comm, rank, {0, 0}, {0, 0}, {0, 0}, 0, 0, {HUGE_VAL, HUGE_VAL}, 0, -1};
  return t;
}

/* The other end's record of a transfer: edges of s by (comm, rank, peer,
 * channel, direction), every process. */
static uint64_t link_key(uint64_t comm, int rank, int peer, int channel, int send) {
  return an_mix(an_mix(an_mix(an_mix(an_mix(0x11c, comm), (uint64_t)(uint32_t)rank), (uint64_t)(uint32_t)peer),
                       (uint64_t)(uint32_t)channel),
                (uint64_t)send);
}

/* The other end's record of the same transfers is network-slow too, or
 * absent (its rank's file is not among the inputs): its median the floor's
 * factor over its group's at least, beyond chance at PT_MS_CONFIRM (a
 * confirmation of a claim made, not a claim of its own). conf: as
 * slow_edges fills it. */
static int other_end_agrees(const pt_mset* s, const an_map* links, const double* conf, const pt_ms_slow_edge* e) {
  const uint64_t key = link_key(e->comm, e->peer, e->rank, e->channel, !e->send);
  for (int32_t k = an_map_first(links, key); k >= 0; k = an_map_next(links, k)) {
    const pt_ms_edge* x = &s->e[k];
    if (x->comm == e->comm && x->rank == e->peer && x->peer == e->rank && x->send != e->send &&
        x->channel == e->channel && comparable(x, PT_MS_NET))
      return conf[2 * k + PT_MS_NET] >= PT_MS_MIN_FACTOR;
  }
  return 1;
}

static int by_rank_factor(const void* x, const void* y) {
  const pt_ms_slow_edge* a = x;
  const pt_ms_slow_edge* b = y;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->rank != b->rank) return a->rank - b->rank;
  return (a->factor > b->factor) - (a->factor < b->factor);
}

/* An edge of a rank's own that could be judged on `side` (too few samples
 * say nothing either way: they neither confirm nor clear its GPU). */
static int own_edge(const pt_ms_edge* x, int side) {
  return x->channel < 0 && comparable(x, side) && x->count[side] >= PT_MS_MIN_SAMPLES;
}

/* A culprit named on one side whose own records are slow on the other side
 * too — every own aggregate edge it has there tested, two at least, each
 * slow at the confirmation level (the claim was made on the first side),
 * and most of them, two at least, by half the first side's factor at
 * least, in octaves (the square root: a thread late to see every end
 * slows both alike; not each of them: a pipelined ring's edge is compared
 * with the ring's other edges, which wait on the same slow thread, so its
 * factor comes out small, 2.1x beside three edges of 15x or more from a
 * 16x thread) — is its proxy thread: every wait the thread times is long, GPU and network alike. A
 * slow GPU leaves its own network waits alone, a slow NIC its GPU waits
 * (a ring's send GPU wait rises beside a slow link, its receive's does
 * not; a 4x GPU on a busy machine once read as its thread, its own network
 * waits a little slow beyond chance at the confirmation level), and
 * whichever side passes the test first while the thread slows down, the
 * same rank and side come out. Where none of its own edges on the other
 * side could have been found slow (none tested, or none with the samples
 * to stand out however slow), the culprit says so (other_untested): that
 * side says nothing either way. */
static void host_side(const pt_mset* s, const double* conf, const vec* sl, const tally* t, double min_factor,
                      double* factors, pt_ms_culprit* c) {
  const int other = c->side == PT_MS_GPU ? PT_MS_NET : PT_MS_GPU;
  c->other_untested = t->able[other] == 0;
  const double floor = fmax(min_factor, sqrt(c->factor));
  if (t->own[other] < 2 || t->tested[other] < t->own[other] || t->least[other] < min_factor) return;
  size_t high = 0; /* its own edges there (as the tally counts them) at the floor */
  for (size_t q = 0; q < s->n; q++) {
    const pt_ms_edge* x = &s->e[q];
    high += x->comm == c->comm && x->rank == c->rank && own_edge(x, other) && conf[2 * q + other] >= floor;
  }
  if (high < 2 || 2 * high <= t->own[other]) return;
  c->side = PT_MS_HOST;
  c->peer = -1;
  c->factor = median_factor(sl, c->comm, PT_MS_HOST, c->rank, -1, NULL, factors, &c->edges);
}

static void where(const pt_mset* s, const tally* t, pt_ms_culprit* c) {
  if (!t || t->edge < 0) return;
  memcpy(c->host, s->e[t->edge].host, sizeof c->host);
  c->pid = s->e[t->edge].pid;
}

int pt_mset_judge(const pt_mset* s, double alpha, double min_factor, pt_ms_verdict* v) {
  memset(v, 0, sizeof *v);
  vec sl = {0};
  char* skip = NULL;
  double* factors = NULL;
  pt_ms_slow_edge* gpu = NULL;
  double* conf = an_alloc(&v->mem, 2 * (s->n + 1) * sizeof *conf);
  unsigned char* can = an_alloc(&v->mem, 2 * (s->n + 1));
  tallies ts = {.m = &v->mem};
  an_map links;
  int rc = -1, maps = 0;
  if (!conf || !can || slow_edges(s, alpha, min_factor, v, &sl, conf, can) != 0) goto out;
  factors = an_alloc(&v->mem, (sl.n + 1) * sizeof *factors);
  gpu = an_alloc(&v->mem, (sl.n + 1) * sizeof *gpu);
  skip = an_alloc(&v->mem, sl.n + 1);
  if (!factors || !gpu || !skip || an_map_init(&v->mem, &ts.idx, 2 * sl.n + 8) != 0) goto out;
  if (an_map_init(&v->mem, &links, sl.n ? s->n + 1 : 1) != 0) {
    an_map_free(&v->mem, &ts.idx);
    goto out;
  }
  maps = 1;
  /* The ranks the slow edges touch; then their own edges, one pass. */
  for (size_t i = 0; i < sl.n; i++)
    if (!tally_of(&ts, sl.v[i].comm, sl.v[i].rank, 1) || !tally_of(&ts, sl.v[i].comm, sl.v[i].peer, 1)) goto out;
  for (size_t q = 0; q < s->n && sl.n; q++) {
    const pt_ms_edge* x = &s->e[q];
    if (an_map_add(&v->mem, &links, link_key(x->comm, x->rank, x->peer, x->channel, x->send), (int32_t)q) != 0) goto out;
    tally* t = tally_of(&ts, x->comm, x->rank, 0);
    if (!t) continue;
    if (t->edge < 0) t->edge = (int64_t)q;
    /* its own edges that could be judged (too few samples say nothing
     * either way: they neither confirm nor clear its GPU) */
    for (int side = PT_MS_GPU; side <= PT_MS_NET; side++)
      if (own_edge(x, side)) {
        const double f = conf[2 * q + side];
        t->own[side]++;
        t->tested[side] += f >= 0;
        t->able[side] += can[2 * q + side];
        if (f >= 0 && f < t->least[side]) t->least[side] = f;
      }
  }
  /* GPU-side: each rank whose own edges wait for its GPU — its GPU-slow
   * aggregate edges together (sorted by rank), the upper median of their
   * factors. An edge far slower in the network than for its GPU — by the
   * square of its GPU factor at least, twice the octaves — says nothing of
   * its GPU: a network that hands the GPU its data a step at a time makes
   * each step's wait its own instead of overlapped with the next's (the
   * network-side rule, with the other end's confirmation, judges such
   * edges). Both sides alike is its thread (host-side, below), a GPU the
   * slower its GPU. */
  an_map netslow;
  if (an_map_init(&v->mem, &netslow, sl.n + 1) != 0) goto out;
  for (size_t i = 0; i < sl.n; i++)
    if (sl.v[i].side == PT_MS_NET && sl.v[i].channel < 0 &&
        an_map_add(&v->mem, &netslow, link_key(sl.v[i].comm, sl.v[i].rank, sl.v[i].peer, -1, sl.v[i].send),
                   (int32_t)i) != 0) {
      an_map_free(&v->mem, &netslow);
      goto out;
    }
  size_t ng = 0;
  for (size_t i = 0; i < sl.n; i++) {
    const pt_ms_slow_edge* e = &sl.v[i];
    if (e->side != PT_MS_GPU || e->channel >= 0) continue;
    int both = 0; /* its network side slow, by the square of its GPU side */
    for (int32_t k = an_map_first(&netslow, link_key(e->comm, e->rank, e->peer, -1, e->send)); k >= 0 && !both;
         k = an_map_next(&netslow, k))
      both = sl.v[k].comm == e->comm && sl.v[k].rank == e->rank && sl.v[k].peer == e->peer &&
             sl.v[k].send == e->send && sl.v[k].factor >= e->factor * e->factor;
    if (!both) gpu[ng++] = *e;
  }
  an_map_free(&v->mem, &netslow);
  qsort(gpu, ng, sizeof *gpu, by_rank_factor);
  for (size_t i = 0; i < ng;) {
    size_t j = i;
    while (j < ng && gpu[j].comm == gpu[i].comm && gpu[j].rank == gpu[i].rank) j++;
    tally* t = tally_of(&ts, gpu[i].comm, gpu[i].rank, 0);
    pt_ms_culprit c = {.comm = gpu[i].comm, .rank = gpu[i].rank, .peer = -1, .side = PT_MS_GPU, .edges = j - i};
    c.factor = gpu[i + (j - i - 1) / 2 + ((j - i) % 2 == 0)].factor; /* the upper median: how much slower it is */
    /* Two slow edges, or every edge the rank has that could be found slow
     * (one too short of samples to pass the test whatever its steps says
     * nothing either way): one edge of several may be a thread that was
     * not scheduled. */
    if (c.edges >= 2 || c.edges >= t->able[PT_MS_GPU]) {
      t->gpu_named = 1;
      host_side(s, conf, &sl, t, min_factor, factors, &c);
      where(s, t, &c);
      if (add_culprit(v, &c) != 0) goto out;
    }
    i = j;
  }
  /* Network-side: the rank most slow edges meet at, one at a time; edges
   * into or out of a slow GPU are explained by it. */
  for (size_t i = 0; i < sl.n; i++) {
    const pt_ms_slow_edge* e = &sl.v[i];
    skip[i] = e->side != PT_MS_NET || e->channel >= 0 || tally_of(&ts, e->comm, e->rank, 0)->gpu_named ||
              tally_of(&ts, e->comm, e->peer, 0)->gpu_named;
    /* Both ends time the same transfers: a slow network shows on the
     * sender's record and on the receiver's. One end alone is that rank's
     * thread, or its peer's GPU (a credit wait), not the network. */
    if (!skip[i] && !other_end_agrees(s, &links, conf, e)) skip[i] = 1;
    if (skip[i]) continue;
    tally_of(&ts, e->comm, e->rank, 0)->net++;
    tally_of(&ts, e->comm, e->peer, 0)->net++;
  }
  for (size_t k = 0; k < ts.n; k++) ts.t[k].net0 = ts.t[k].net;
  for (;;) {
    /* the most slow edges; ties: the lower communicator, then rank */
    tally* best = NULL;
    for (size_t k = 0; k < ts.n; k++) {
      tally* t = &ts.t[k];
      if (!best || t->net > best->net ||
          (t->net == best->net && (t->comm < best->comm || (t->comm == best->comm && t->rank < best->rank))))
        best = t;
    }
    /* A slow NIC slows both ends of its transfers: two slow edges at least
     * (one alone may be a thread that was not scheduled). */
    if (!best || best->net < 2) break;
    const uint64_t comm = best->comm;
    const int r = best->rank;
    /* One peer only: the link between the two. */
    int other = -2;
    for (size_t q = 0; q < sl.n; q++) {
      if (skip[q] || sl.v[q].comm != comm || (sl.v[q].rank != r && sl.v[q].peer != r)) continue;
      const int o = sl.v[q].rank == r ? sl.v[q].peer : sl.v[q].rank;
      other = other == -2 || other == o ? o : -1;
    }
    pt_ms_culprit c = {.comm = comm, .rank = r, .peer = other >= 0 ? other : -1, .side = PT_MS_NET};
    c.factor = median_factor(&sl, comm, PT_MS_NET, r, -1, skip, factors, &c.edges);
    for (size_t q = 0; q < sl.n && other < 0; q++) { /* its peers as slow as it: either side */
      if (skip[q] || sl.v[q].comm != comm || (sl.v[q].rank != r && sl.v[q].peer != r)) continue;
      const int o = sl.v[q].rank == r ? sl.v[q].peer : sl.v[q].rank;
      int known = 0;
      for (int j = 0; j < c.n_tie; j++) known |= c.tie[j] == o;
      if (!known && c.n_tie < PT_MS_MAX_TIE && tally_of(&ts, comm, o, 0)->net0 >= best->net0) c.tie[c.n_tie++] = o;
    }
    const tally* at = best;
    host_side(s, conf, &sl, at, min_factor, factors, &c);
    if (c.side == PT_MS_NET && c.peer >= 0) { /* a link: either end's thread */
      pt_ms_culprit h = c;
      h.rank = c.peer;
      at = tally_of(&ts, comm, c.peer, 0);
      host_side(s, conf, &sl, at, min_factor, factors, &h);
      if (h.side == PT_MS_HOST) c = h;
      else at = best;
    }
    where(s, at, &c);
    if (add_culprit(v, &c) != 0) goto out;
    for (size_t q = 0; q < sl.n; q++)
      if (!skip[q] && sl.v[q].comm == comm && (sl.v[q].rank == r || sl.v[q].peer == r)) {
        skip[q] = 1;
        tally_of(&ts, comm, sl.v[q].rank, 0)->net--;
        tally_of(&ts, comm, sl.v[q].peer, 0)->net--;
      }
  }
  v->edges = sl.v;
  v->n_edges = sl.n;
  sl.v = NULL;
  rc = 0;
out:
  if (maps) an_map_free(&v->mem, &links);
  if (maps) an_map_free(&v->mem, &ts.idx);
  an_free(&v->mem, ts.t);
  an_free(&v->mem, conf);
  an_free(&v->mem, can);
  an_free(&v->mem, skip);
  an_free(&v->mem, factors);
  an_free(&v->mem, gpu);
  an_free(&v->mem, sl.v);
  if (rc) pt_ms_verdict_free(v);
  return rc;
}

/* ---- change points (mset.h) ---- */

int pt_mset_changed(const pt_mset* win, const pt_mset* before, double alpha, double min_factor, pt_ms_verdict* v) {
  memset(v, 0, sizeof *v);
  an_mem* m = &v->mem;
  vec sl = {0};
  an_map idx;
  int32_t* was = an_alloc(m, (win->n + 1) * sizeof *was);
  uint64_t* pool = an_alloc(m, PT_MS_BUCKETS * sizeof *pool);
  uint64_t* own = an_alloc(m, PT_MS_BUCKETS * sizeof *own);
  int rc = -1;
  if (!was || !pool || !own || an_map_init(m, &idx, before->n + 1) != 0) goto out;
  for (size_t i = 0; i < before->n; i++)
    if (an_map_add(m, &idx, edge_key(&before->e[i]), (int32_t)i) != 0) goto maps;
  /* Each aggregate edge of the window, its own earlier record; one whose
   * bytes per step moved to another octave carries other transfers now
   * (the workload changed, not the edge): no history to compare. */
  for (size_t i = 0; i < win->n; i++) {
    const pt_ms_edge* e = &win->e[i];
    was[i] = -1;
    if (e->channel >= 0) continue;
    for (int32_t k = an_map_first(&idx, edge_key(e)); k >= 0 && was[i] < 0; k = an_map_next(&idx, k))
      if (same_edge(&before->e[k], e) && !key_cmp(key_of(&before->e[k]), key_of(e))) was[i] = k;
  }
  /* Two passes, as for the comparable edges: count the sides that can be
   * tested, then test them against their own history. */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < win->n; i++) {
      if (was[i] < 0) continue;
      const pt_ms_edge *e = &win->e[i], *h = &before->e[was[i]];
      for (int side = 0; side < 2; side++) {
        const int few = e->count[side] < PT_MS_MIN_SAMPLES || h->count[side] < PT_MS_MIN_SAMPLES;
        const uint64_t med = few ? 0 : hist_quantile(before, &h->hist[side], h->count[side], 0.5);
        if (pass == 0) {
          if (few) v->few_samples++;
          else if (med < PT_MS_MIN_SPAN_NS) {
            v->short_edges++;
            if (med > v->short_median_ns) v->short_median_ns = med;
          } else v->tested++;
          continue;
        }
        if (few || med < PT_MS_MIN_SPAN_NS) continue;
        /* the pool: its history and itself (test_edge leaves itself out) */
        uint64_t pn = 0;
        for (int b = 0; b < PT_MS_BUCKETS; b++) pool[b] = 0;
        add_hist(before, &h->hist[side], pool, 1);
        add_hist(win, &e->hist[side], pool, 1);
        for (int b = 0; b < PT_MS_BUCKETS; b++) pn += pool[b];
        pt_ms_slow_edge x;
        if (test_edge(win, e, side, pool, pn, own, v->tested, alpha, min_factor, &x) == 1 && push(m, &sl, &x) != 0)
          goto maps;
      }
    }
  }
  v->edges = sl.v;
  v->n_edges = sl.n;
  sl.v = NULL;
  rc = 0;
maps:
  an_map_free(m, &idx);
out:
  an_free(m, was);
  an_free(m, pool);
  an_free(m, own);
  an_free(m, sl.v);
  if (rc) pt_ms_verdict_free(v);
  return rc;
}

void pt_ms_verdict_free(pt_ms_verdict* v) {
  an_free(&v->mem, v->able);
  v->able = NULL;
  an_free(&v->mem, v->edges);
  an_free(&v->mem, v->culprits);
  memset(v, 0, sizeof *v);
}
