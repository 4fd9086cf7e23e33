/*
 * gen_job.c — a job of N ranks made from the dump files of two emulated
 * jobs of T ranks, so that the analyzer's figures for 16 384 or 100 000
 * ranks are measured without running that many emulated ranks.
 *
 *   gen_job HUNG HEALTHY N FAULT OUT
 *
 * HUNG and HEALTHY are dump folders of `proxytrace sim` runs of the same
 * shape (T ranks, nodes of R ranks): HUNG's GPU stall on rank 3 (its
 * fault), HEALTHY none. The output job has N ranks (a multiple of T) in
 * blocks of T: the block holding rank FAULT is HUNG's, turned so that
 * its rank 3 becomes FAULT; every other block is HEALTHY's. Each block is
 * its own ring of one communicator of N ranks (peers are renumbered
 * within the block), so the job has one culprit and every rank's op
 * counts are those of an emulated rank. Renumbered: ranks and peers, the
 * communicator hash (one for the job), the host (node<k>, R ranks each,
 * the template's nodes kept together), the pid (one process per rank),
 * nRanks and nNodes; the healthy block's times are moved by a whole
 * number of milliseconds onto the hung job's, so that no dump looks
 * older than its peers'. Only the plugin's files are written, JSON and
 * text (its default with PROXYTRACE_DUMP_DIR), each node in its own
 * folder OUT/node<k>/; a template's logs are left out.
 *
 * Lines are rewritten as text: JSON keys and text fields the renumbering
 * touches; everything else is copied as it is.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FAULT_RANK 3 /* the rank whose GPU stalls in the hung template */
#define OUT_HASH UINT64_C(7046029254386353131)
#define PID_BASE 1000

typedef struct {
  char* path;
  int rank;
  char suffix[16]; /* ".jsonl", ".1.txt", … */
} tfile;

typedef struct {
  tfile* f;
  size_t n;
  int nranks, rpn;
  int64_t t0; /* the latest dump time of the job, ns */
} tmpl;

/* Where a rewritten line goes: which output rank a template rank is. */
typedef struct {
  int base, shift, T, N, rpn;
  int64_t shift_ns;
} mapping;

static int out_rank(const mapping* m, int t) { return t < 0 ? t : m->base + (t + m->shift) % m->T; }
/* Nodes follow the template's: template rank t is on node t / rpn of its block. */
static int out_node(const mapping* m, int t) { return (m->base + (t / m->rpn) * m->rpn) / m->rpn; }

static void die(const char* what) {
  fprintf(stderr, "gen_job: %s\n", what);
  exit(2);
}

/* proxytrace-<host>-<pid>-r<rank>-<hash><suffix> */
static int parse_name(const char* name, int* rank, char* suffix, size_t n) {
  if (strncmp(name, "proxytrace-", 11) || !strncmp(name, "proxytrace-metrics-", 19)) return -1;
  const char* r = strstr(name, "-r");
  while (r && !(r[2] >= '0' && r[2] <= '9')) r = strstr(r + 2, "-r");
  if (!r) return -1;
  *rank = atoi(r + 2);
  const char* h = strchr(r + 2, '-');
  if (!h) return -1;
  const char* dot = strchr(h, '.');
  if (!dot || strlen(dot) >= n) return -1;
  snprintf(suffix, n, "%s", dot);
  return 0;
}

static int64_t latest_time(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  char line[1 << 16];
  int64_t t = 0;
  while (fgets(line, sizeof line, f)) {
    const char* p = strstr(line, "\"time_ns\":");
    if (!strncmp(line, "{\"type\":\"dump\"", 14) && p) {
      int64_t v = strtoll(p + 10, NULL, 10);
      if (v > t) t = v;
    }
  }
  fclose(f);
  return t;
}

static void load(tmpl* t, const char* dir) {
  DIR* d = opendir(dir);
  if (!d) die("cannot open a template folder");
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    int rank;
    char suffix[16];
    if (parse_name(e->d_name, &rank, suffix, sizeof suffix) || rank < 0) continue;
    t->f = realloc(t->f, (t->n + 1) * sizeof *t->f);
    if (!t->f) die("out of memory");
    tfile* f = &t->f[t->n++];
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    f->path = malloc(len);
    if (!f->path) die("out of memory");
    snprintf(f->path, len, "%s/%s", dir, e->d_name);
    f->rank = rank;
    snprintf(f->suffix, sizeof f->suffix, "%s", suffix);
    if (rank + 1 > t->nranks) t->nranks = rank + 1;
    if (strstr(suffix, "jsonl")) {
      int64_t x = latest_time(f->path);
      if (x > t->t0) t->t0 = x;
    }
  }
  closedir(d);
  if (!t->n) die("a template folder holds no dump file");
}

/* The template's ranks per node: its dumps' nRanks / nNodes. */
static int ranks_per_node(const tmpl* t) {
  for (size_t i = 0; i < t->n; i++) {
    if (!strstr(t->f[i].suffix, "jsonl")) continue;
    FILE* f = fopen(t->f[i].path, "r");
    char line[1 << 16];
    int rpn = 0;
    if (f && fgets(line, sizeof line, f)) {
      const char* r = strstr(line, "\"nRanks\":");
      const char* n = strstr(line, "\"nNodes\":");
      if (r && n && atoi(n + 9) > 0) rpn = atoi(r + 9) / atoi(n + 9);
    }
    if (f) fclose(f);
    if (rpn > 0) return rpn;
  }
  return 1;
}

/* ---- rewriting ---------------------------------------------------------- */

static int starts(const char* s, const char* p) { return !strncmp(s, p, strlen(p)); }

/* A JSON line: the value after each key the renumbering touches. */
static void json_line(FILE* o, const char* s, const mapping* m, int rank, int tnode) {
  while (*s) {
    if (*s != '"') {
      fputc(*s++, o);
      continue;
    }
    const char* k = s + 1;
    const char* ke = strchr(k, '"');
    if (!ke || ke[1] != ':') { /* a string value, not a key: copied whole */
      const char* e = k;
      while (*e && *e != '"') e += *e == '\\' && e[1] ? 2 : 1;
      fwrite(s, 1, (size_t)(e - s) + (*e ? 1 : 0), o);
      s = e + (*e ? 1 : 0);
      continue;
    }
    size_t kl = (size_t)(ke - k);
    fwrite(s, 1, kl + 3, o); /* "key": */
    const char* v = ke + 2;
    char* end;
#define KEY(name) (kl == sizeof name - 1 && !strncmp(k, name, kl))
    if ((KEY("rank") || KEY("peer")) && (*v == '-' || (*v >= '0' && *v <= '9'))) {
      long x = strtol(v, &end, 10);
      fprintf(o, "%d", out_rank(m, (int)x));
      s = end;
    } else if (KEY("pid") && *v >= '0' && *v <= '9') {
      strtol(v, &end, 10);
      fprintf(o, "%d", PID_BASE + rank);
      s = end;
    } else if (KEY("nRanks") && *v >= '0' && *v <= '9') {
      strtol(v, &end, 10);
      fprintf(o, "%d", m->N);
      s = end;
    } else if (KEY("nNodes") && *v >= '0' && *v <= '9') {
      strtol(v, &end, 10);
      fprintf(o, "%d", m->N / m->rpn);
      s = end;
    } else if (KEY("commHash") && *v == '"') {
      fprintf(o, "\"%" PRIu64 "\"", OUT_HASH);
      s = strchr(v + 1, '"') + 1;
    } else if (KEY("key") && *v == '"' && v[1] == '<') {
      const char* c = strchr(v, ':');
      const char* e = c ? strchr(c, '"') : NULL;
      if (!e) die("a key string without its end");
      fprintf(o, "\"<%" PRIu64 "%.*s\"", OUT_HASH, (int)(e - c), c);
      s = e + 1;
    } else if (KEY("host") && *v == '"') {
      fprintf(o, "\"node%05d\"", tnode);
      const char* e = v + 1;
      while (*e && *e != '"') e += *e == '\\' && e[1] ? 2 : 1;
      s = e + 1;
    } else if (kl > 3 && !strncmp(ke - 3, "_ns", 3) && *v >= '0' && *v <= '9') {
      long long x = strtoll(v, &end, 10);
      fprintf(o, "%lld", x + (long long)m->shift_ns);
      s = end;
    } else {
      s = v;
    }
#undef KEY
  }
}

/* A legacy text line: the header's key=value fields, a record's times,
 * key and ranks. */
static void text_line(FILE* o, const char* s, const mapping* m, int rank, int tnode) {
  if (starts(s, "proxytrace dump ")) {
    char tok[256];
    const char* p = s;
    while (*p) {
      size_t n = strcspn(p, " \n");
      snprintf(tok, sizeof tok, "%.*s", (int)n, p);
      if (starts(tok, "time_ns=")) fprintf(o, "time_ns=%lld", strtoll(tok + 8, NULL, 10) + (long long)m->shift_ns);
      else if (starts(tok, "host=")) fprintf(o, "host=node%05d", tnode);
      else if (starts(tok, "pid=")) fprintf(o, "pid=%d", PID_BASE + rank);
      else if (starts(tok, "rank=")) fprintf(o, "rank=%d", out_rank(m, atoi(tok + 5)));
      else if (starts(tok, "nRanks=")) fprintf(o, "nRanks=%d", m->N);
      else if (starts(tok, "nNodes=")) fprintf(o, "nNodes=%d", m->N / m->rpn);
      else if (starts(tok, "commHash=")) fprintf(o, "commHash=%" PRIu64, OUT_HASH);
      else fputs(tok, o);
      p += n;
      while (*p == ' ' || *p == '\n') fputc(*p++, o);
    }
    return;
  }
  if (!starts(s, "createT:")) {
    fputs(s, o);
    return;
  }
  const int64_t shift_ms = m->shift_ns / 1000000;
  const char* p = s;
  while (*p) {
    size_t n = strcspn(p, ",\n");
    const char* f = p;
    while (*f == ' ') fputc(*f++, o);
    char* end;
    if ((starts(f, "createT:") || starts(f, "lastT:") || starts(f, "postT:") || starts(f, "sendT:"))) {
      const char* c = strchr(f, ':') + 1;
      long long x = strtoll(c, &end, 10);
      fwrite(f, 1, (size_t)(c - f), o);
      fprintf(o, "%lld", x ? x + (long long)shift_ms : 0);
      fwrite(end, 1, (size_t)(p + n - end), o);
    } else if (*f == '<') {
      const char* c = strchr(f, ':');
      fprintf(o, "<%" PRIu64, OUT_HASH);
      fwrite(c, 1, (size_t)(p + n - c), o);
    } else if (*f >= '0' && *f <= '9' && strstr(f, "->") && strstr(f, "->") < p + n) {
      long a = strtol(f, &end, 10);
      long b = strtol(end + 2, &end, 10);
      fprintf(o, "%d->%d", out_rank(m, (int)a), out_rank(m, (int)b));
      fwrite(end, 1, (size_t)(p + n - end), o);
    } else {
      fwrite(f, 1, (size_t)(p + n - f), o);
    }
    p += n;
    if (*p) fputc(*p++, o);
  }
}

static void mkdirs(const char* path) {
  if (mkdir(path, 0755) != 0 && errno != EEXIST) die("cannot make an output folder");
}

static void write_block(const tmpl* t, const mapping* m, const char* out) {
  static char line[1 << 20];
  for (size_t i = 0; i < t->n; i++) {
    const tfile* tf = &t->f[i];
    const int r = out_rank(m, tf->rank);
    const int node = out_node(m, tf->rank);
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/node%05d", out, node);
    mkdirs(dir);
    snprintf(path, sizeof path, "%s/proxytrace-node%05d-%d-r%d-%" PRIu64 "%s", dir, node, PID_BASE + r, r, OUT_HASH,
             tf->suffix);
    FILE* in = fopen(tf->path, "r");
    FILE* o = fopen(path, "w");
    if (!in || !o) die("cannot read a template file or write an output file");
    const int json = strstr(tf->suffix, "jsonl") != NULL;
    while (fgets(line, sizeof line, in)) {
      if (json) json_line(o, line, m, r, node);
      else text_line(o, line, m, r, node);
    }
    fclose(in);
    if (fclose(o) != 0) die("cannot write an output file (disk full?)");
  }
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: gen_job HUNG HEALTHY N FAULT OUT\n");
    return 2;
  }
  tmpl hung = {0}, ok = {0};
  load(&hung, argv[1]);
  load(&ok, argv[2]);
  const int N = atoi(argv[3]), fault = atoi(argv[4]);
  const int T = hung.nranks, rpn = ranks_per_node(&hung);
  if (ok.nranks != T || T % rpn) die("the two templates differ in shape");
  if (N <= 0 || N % T) die("N must be a multiple of the templates' ranks");
  if (fault < 0 || fault >= N) die("FAULT must be a rank of the job");
  mkdirs(argv[5]);
  const int fault_block = fault / T;
  for (int b = 0; b < N / T; b++) {
    mapping m = {.base = b * T, .T = T, .N = N, .rpn = rpn};
    if (b == fault_block) {
      m.shift = ((fault - b * T) - FAULT_RANK + T) % T;
      write_block(&hung, &m, argv[5]);
    } else {
      m.shift_ns = (hung.t0 - ok.t0) / 1000000 * 1000000;
      write_block(&ok, &m, argv[5]);
    }
  }
  for (tmpl* t = &hung; t; t = t == &hung ? &ok : NULL) {
    for (size_t i = 0; i < t->n; i++) free(t->f[i].path);
    free(t->f);
  }
  return 0;
}
