/*
 * lines.c — inputs, read as streams of lines.
 *
 * A path is a file or a directory, read recursively in name order (files
 * and folders interleaved), at most AN_MAX_DEPTH levels below the path
 * given. Links are followed, to files and to directories; a directory
 * reached again below itself (a loop) is not read again, and a file reached
 * twice is read once. Hidden entries (".name"), entries deeper than the
 * limit and anything but regular files and directories are skipped, each
 * noted with why (`analyze -v` lists them). Each file is read in blocks and cut into lines;
 * nothing holds more than one block and the line being assembled, so the
 * input's size does not matter — only what the merge keeps does. A line
 * longer than AN_MAX_LINE is reported and skipped; a NUL byte ends nothing
 * (the line is handed on with its length); "\r\n" endings are accepted.
 *
 * The file name may say which rank wrote it (`rank3.log`, the plugin's
 * `proxytrace-host-pid-r3-hash.txt`): a dump with no record and no header
 * naming its rank then still counts as that rank's dump.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/internal.h"

#define AN_BLOCK 65536
#define AN_MAX_DEPTH 8
#define AN_MAX_DEPTH_TEXT "8"
#define AN_MAX_LINE (1u << 20)

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

/* One line to whoever reads the stream: the parser, or the skim below.
 * `line` NULL: an over-long line, skipped (len its length so far). */
typedef void (*an_line_fn)(void* ctx, char* line, size_t len, uint32_t lineno, int unterminated);

/* Calls fn for each complete line of buf[0..len); returns how many bytes
 * were used (the tail, an unfinished line, stays). */
static size_t feed(an_line_fn fn, void* ctx, char* buf, size_t len, uint32_t* lineno, int at_end) {
  size_t start = 0;
  for (;;) {
    char* nl = memchr(buf + start, '\n', len - start);
    if (!nl) break;
    size_t n = (size_t)(nl - (buf + start));
    if (n && buf[start + n - 1] == '\r') n--;
    buf[start + n] = 0;
    fn(ctx, buf + start, n, ++*lineno, 0);
    start = (size_t)(nl - buf) + 1;
  }
  if (at_end && start < len) {
    size_t n = len - start;
    if (n && buf[start + n - 1] == '\r') n--;
    buf[start + n] = 0;
    fn(ctx, buf + start, n, ++*lineno, 1);
    start = len;
  }
  return start;
}

static void count_input(pt_analysis* a, uint32_t input, uint64_t lines, uint64_t bytes, double t0) {
  a->parse_seconds += an_now() - t0;
  if (!a->inputs[input].dumps && !lines) a->inputs[input].format = "empty";
  a->inputs[input].lines = lines;
  a->inputs[input].bytes = bytes;
  if (a->inputs[input].summary) return; /* its figures are those of its node's inputs */
  a->lines += lines;
  a->bytes += bytes;
}

/* Reads f to its end in blocks, line by line, numbering lines from
 * *lineno + 1; *bytes gets what was read. 0, or PT_AN_ENOMEM. */
static int each_line(pt_analysis* a, uint32_t input, FILE* f, an_line_fn fn, void* ctx, uint32_t* lineno,
                     uint64_t* bytes) {
  /* One buffer for every file (a job's 100 000 files would each zero a
   * new one); one grown for a long line stays grown. */
  size_t cap = a->block ? a->block_cap : AN_BLOCK + 1;
  char* buf = a->block ? a->block : an_alloc(&a->mem, cap);
  if (!buf) return PT_AN_ENOMEM;
  a->block = NULL;
  size_t have = 0;
  int skipping = 0; /* inside an over-long line: drop up to its newline */
  for (;;) {
    if (have == cap - 1) { /* full, and no line end in it */
      char* nb = cap - 1 < AN_MAX_LINE ? an_realloc(&a->mem, buf, cap * 2) : NULL;
      if (nb) {
        buf = nb;
        cap *= 2;
      } else {
        fn(ctx, NULL, cap - 1, ++*lineno, 0);
        have = 0;
        skipping = 1;
      }
    }
    size_t got = fread(buf + have, 1, cap - 1 - have, f);
    *bytes += got;
    int end = got == 0;
    if (end && ferror(f) && !an_mem_errno(&a->mem, errno))
      an_input_error(a, input, *lineno + 1, "read error: %s", strerror(errno));
    if (skipping) {
      char* nl = memchr(buf, '\n', got);
      if (!nl) {
        if (end) break;
        continue;
      }
      size_t drop = (size_t)(nl - buf) + 1;
      memmove(buf, buf + drop, got - drop);
      have = got - drop;
      skipping = 0;
    } else {
      have += got;
    }
    size_t used = feed(fn, ctx, buf, have, lineno, end);
    memmove(buf, buf + used, have - used);
    have -= used;
    if (end) break;
  }
  a->block = buf;
  a->block_cap = cap;
  return 0;
}

static void parse_line(void* ctx, char* line, size_t len, uint32_t lineno, int unterminated) {
  an_parser* p = ctx;
  if (!line) {
    an_input_error(p->a, p->input, lineno, "line longer than %zu bytes: skipped", len);
    return;
  }
  p->unterminated = unterminated;
  an_parser_line(p, line, len, lineno);
  p->unterminated = 0;
}

/* Parses f from where it stands; lines are numbered from lineno + 1. */
static int parse_stream(pt_analysis* a, uint32_t input, FILE* f, uint32_t* lineno, uint64_t* bytes) {
  an_parser* p = an_parser_new(a, input);
  if (!p) return PT_AN_ENOMEM;
  int rc = each_line(a, input, f, parse_line, p, lineno, bytes);
  an_parser_finish(p);
  return rc;
}

int an_read_stream(pt_analysis* a, uint32_t input, FILE* f) {
  double t0 = an_now();
  uint32_t lineno = 0;
  uint64_t bytes = 0;
  int rc = parse_stream(a, input, f, &lineno, &bytes);
  count_input(a, input, lineno, bytes, t0);
  return rc;
}

/* ---- the latest dumps of a dump file, the older ones passed over ----------
 *
 * The plugin appends a communicator's dumps on one rank to one JSON-lines
 * file, in time order (docs/dump-json.md; a file may begin with the kept
 * first stall dump, which is older). Only the latest dump of a rank and the
 * one before it count (merge.c), so of such a file only its last two dumps
 * are parsed: a first pass reads the lines without parsing them — where
 * each dump starts, and whether the file has the plugin's shape — and the
 * second parses from the start of the last dump but one. A file of another
 * shape (a log, several ranks or communicators, a line that is not one of
 * the plugin's three kinds, a dump without its end line before the last,
 * an over-long line) is parsed whole, as before. The dumps passed over are
 * counted as read (dumps, records, lines); what is inside them is not
 * looked at. */
#define AN_TAIL_DUMPS 2

typedef struct {
  int shaped;               /* every line so far fits the plugin's file */
  int after_end;            /* the last line was an end line (or none yet) */
  uint32_t dumps, ops;      /* dump headers and op lines seen */
  char ident[96];           /* the first header's rank and commHash, as written */
  uint64_t at[AN_TAIL_DUMPS]; /* offsets of the last dump headers (ring) */
  uint32_t line_at[AN_TAIL_DUMPS];
  uint32_t ops_at[AN_TAIL_DUMPS]; /* op lines before each */
  uint64_t offset;          /* of the line being looked at */
} an_skim;

static int starts_with(const char* s, size_t n, const char* p) {
  size_t k = strlen(p);
  return n >= k && !memcmp(s, p, k);
}

/* "rank":R ... "commHash":"H" of a header line, as written. */
static int header_ident(const char* s, char* out, size_t n) {
  const char* r = strstr(s, ",\"rank\":");
  const char* h = strstr(s, ",\"commHash\":\"");
  if (!r || !h || r[8] == '-') return -1;
  size_t rl = strspn(r + 8, "0123456789"), hl = strspn(h + 13, "0123456789");
  if (!rl || !hl || rl + hl + 2 > n) return -1;
  snprintf(out, n, "%.*s:%.*s", (int)rl, r + 8, (int)hl, h + 13);
  return 0;
}

static void skim_line(void* ctx, char* line, size_t len, uint32_t lineno, int unterminated) {
  an_skim* k = ctx;
  const uint64_t here = k->offset;
  if (!line) { /* over-long: the whole parse reports it */
    k->shaped = 0;
    k->offset += len;
    return;
  }
  k->offset += len + !unterminated; /* a "\r\n" file ends off by its line count: parsed whole */
  if (!k->shaped) return;
  if (starts_with(line, len, "{\"type\":\"op\",")) {
    k->ops++;
    k->after_end = 0;
  } else if (starts_with(line, len, "{\"type\":\"end\",")) {
    k->after_end = 1;
  } else if (starts_with(line, len, "{\"type\":\"dump\",")) {
    char ident[96];
    if (!k->after_end || header_ident(line, ident, sizeof ident) != 0 ||
        (k->dumps && strcmp(ident, k->ident) != 0)) {
      k->shaped = 0;
      return;
    }
    if (!k->dumps) memcpy(k->ident, ident, sizeof ident);
    const int slot = (int)(k->dumps % AN_TAIL_DUMPS);
    k->at[slot] = here;
    k->line_at[slot] = lineno;
    k->ops_at[slot] = k->ops;
    k->dumps++;
    k->after_end = 0;
  } else {
    k->shaped = 0;
  }
}

/* 1 when f was read here (its last dumps parsed), 0 when it should be
 * parsed whole (rewound), <0 an error. */
static int read_latest(pt_analysis* a, uint32_t input, FILE* f, double t0) {
  an_skim k = {.shaped = 1, .after_end = 1};
  uint32_t lines = 0;
  uint64_t bytes = 0;
  int rc = each_line(a, input, f, skim_line, &k, &lines, &bytes);
  if (rc) return rc;
  if (!k.shaped || k.dumps <= AN_TAIL_DUMPS || k.offset != bytes || ferror(f)) {
    rewind(f);
    return 0;
  }
  const int first = (int)(k.dumps % AN_TAIL_DUMPS); /* the oldest of the ring */
  if (fseeko(f, (off_t)k.at[first], SEEK_SET) != 0) {
    rewind(f);
    return 0;
  }
  const uint32_t passed_dumps = k.dumps - AN_TAIL_DUMPS, passed_ops = k.ops_at[first];
  a->dumps += passed_dumps;
  a->inputs[input].dumps += passed_dumps;
  a->records += passed_ops;
  a->inputs[input].records += passed_ops;
  a->passed_over += passed_dumps;
  uint32_t lineno = k.line_at[first] - 1;
  uint64_t tail = 0;
  rc = parse_stream(a, input, f, &lineno, &tail);
  count_input(a, input, lines, bytes, t0);
  return rc ? rc : 1;
}

int an_read_buffer(pt_analysis* a, uint32_t input, const char* data, size_t len) {
  double t0 = an_now();
  an_parser* p = an_parser_new(a, input);
  if (!p) return PT_AN_ENOMEM;
  uint32_t lineno = 0;
  size_t pos = 0;
  char* line = NULL;
  size_t line_cap = 0;
  int rc = 0;
  while (pos < len) {
    const char* nl = memchr(data + pos, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - (data + pos)) : len - pos;
    if (n >= AN_MAX_LINE) {
      an_input_error(a, input, ++lineno, "line longer than %u bytes: skipped", AN_MAX_LINE);
    } else {
      if (n + 1 > line_cap) {
        char* nb = an_realloc(&a->mem, line, n + 1);
        if (!nb) {
          rc = PT_AN_ENOMEM;
          break;
        }
        line = nb;
        line_cap = n + 1;
      }
      memcpy(line, data + pos, n);
      size_t m = n;
      if (m && line[m - 1] == '\r') m--;
      line[m] = 0;
      p->unterminated = !nl;
      an_parser_line(p, line, m, ++lineno);
      p->unterminated = 0;
    }
    pos += n + (nl ? 1 : 0);
  }
  an_free(&a->mem, line);
  an_parser_finish(p);
  count_input(a, input, lineno, len, t0);
  return rc;
}

/* A file reached twice (a link to it, a directory given twice, a file
 * given beside its directory) is read once: its dumps would count twice. */
static uint64_t file_key(uint64_t dev, uint64_t ino) { return an_mix(an_mix(0xf11e, dev), ino); }

static int seen_file(pt_analysis* a, const struct stat* sb) {
  if (!a->file_index.cap) return -1;
  const uint64_t key = file_key((uint64_t)sb->st_dev, (uint64_t)sb->st_ino);
  for (int32_t i = an_map_first(&a->file_index, key); i >= 0; i = an_map_next(&a->file_index, i))
    if (a->inputs[i].has_id && a->inputs[i].dev == (uint64_t)sb->st_dev && a->inputs[i].ino == (uint64_t)sb->st_ino)
      return (int)i;
  return -1;
}

#define AN_SKIPS_KEPT 1000

static int skip(pt_analysis* a, const char* path, const char* why) {
  if (a->n_skipped >= AN_SKIPS_KEPT) return 0; /* the first ones say why; the list stays bounded */
  an_skip* k = an_grow(&a->mem, (void**)&a->skipped, &a->n_skipped, &a->cap_skipped, sizeof *k);
  if (!k) return PT_AN_ENOMEM;
  k->path = an_strdup(&a->mem, path);
  k->why = why;
  if (!k->path) {
    a->n_skipped--;
    return PT_AN_ENOMEM;
  }
  return 0;
}

static int add_file(pt_analysis* a, const char* path, const struct stat* sb) {
  if (sb && seen_file(a, sb) >= 0) return skip(a, path, "the same file as an input read before: read once");
  uint32_t in;
  int rc = an_input_add(a, path, &in);
  if (rc) return rc;
  if (sb) {
    if (!a->file_index.cap && an_map_init(&a->mem, &a->file_index, 64) != 0) return PT_AN_ENOMEM;
    a->inputs[in].dev = (uint64_t)sb->st_dev;
    a->inputs[in].ino = (uint64_t)sb->st_ino;
    a->inputs[in].has_id = 1;
    if (an_map_add(&a->mem, &a->file_index, file_key(a->inputs[in].dev, a->inputs[in].ino), (int32_t)in) != 0)
      return PT_AN_ENOMEM;
  }
  FILE* f = fopen(path, "rb");
  if (!f) {
    if (an_mem_errno(&a->mem, errno)) return PT_AN_ENOMEM; /* the FILE itself */
    char buf[256];
    snprintf(buf, sizeof buf, "cannot open: %s", strerror(errno));
    a->inputs[in].error = an_strdup(&a->mem, buf);
    a->inputs[in].format = "unreadable";
    a->errors++;
    return 0;
  }
  rc = 0;
  if (!a->all_dumps) {
    double t0 = an_now();
    rc = read_latest(a, in, f, t0);
    if (rc == 1) {
      fclose(f);
      return 0;
    }
  }
  if (rc == 0) rc = an_read_stream(a, in, f);
  fclose(f);
  return rc;
}

/* The plugin writes each dump twice, as JSON lines and as text, from one
 * snapshot (docs/dump-json.md: X.jsonl and X.txt). The JSON copy is the
 * richer one the merge would keep; the text file is read only when the
 * JSON file beside it is not whole (cut, a line unreadable, no dump), since
 * then the text copy may be the whole reading of a dump. In name order
 * X.jsonl comes just before X.txt. */
static int text_twin_of_whole_json(const pt_analysis* a, const char* path) {
  const size_t n = strlen(path);
  if (a->all_dumps || n < 5 || strcmp(path + n - 4, ".txt") != 0 || !a->n_inputs) return 0;
  const an_input* in = &a->inputs[a->n_inputs - 1];
  const size_t m = strlen(in->path);
  if (m != n + 2 || strncmp(in->path, path, n - 4) != 0 || strcmp(in->path + n - 4, ".jsonl") != 0) return 0;
  return !in->error && !in->n_errors && in->dumps && !strcmp(in->format, "jsonl");
}

static int by_name(const void* x, const void* y) { return strcmp(*(char* const*)x, *(char* const*)y); }

/* A directory and the ones it leads to, for loop detection: a directory
 * reached again below itself (a link up the tree) is not read again. */
typedef struct an_dir_chain {
  uint64_t dev, ino;
  const struct an_dir_chain* up;
} an_dir_chain;

static int add_dir(pt_analysis* a, const char* path, const struct stat* sb, const an_dir_chain* up, int depth) {
  for (const an_dir_chain* c = up; c; c = c->up)
    if (c->dev == (uint64_t)sb->st_dev && c->ino == (uint64_t)sb->st_ino)
      return skip(a, path, "a link back to a directory above it (a loop): not read again");
  if (depth > AN_MAX_DEPTH) return skip(a, path, "deeper than " AN_MAX_DEPTH_TEXT " levels below the path given: not read");
  const an_dir_chain here = {(uint64_t)sb->st_dev, (uint64_t)sb->st_ino, up};
  DIR* dir = opendir(path);
  if (!dir && an_mem_errno(&a->mem, errno)) return PT_AN_ENOMEM;
  if (!dir) return add_file(a, path, NULL); /* recorded as unreadable, with why */
  char** names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  const size_t plen = strlen(path);
  for (struct dirent* e; (e = readdir(dir)) != NULL;) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    size_t len = plen + strlen(e->d_name) + 2;
    char* full = an_alloc(&a->mem, len);
    char** slot = full ? an_grow(&a->mem, (void**)&names, &n, &cap, sizeof *names) : NULL;
    if (!slot) {
      an_free(&a->mem, full);
      rc = PT_AN_ENOMEM;
      break;
    }
    snprintf(full, len, "%s%s%s", path, plen && path[plen - 1] == '/' ? "" : "/", e->d_name);
    *slot = full;
  }
  closedir(dir);
  if (names) qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    const char* base = names[i] + strlen(names[i]) - strlen(strrchr(names[i], '/') + 1);
    struct stat fb;
    if (rc) {
      /* out of memory: the rest is not read */
    } else if (base[0] == '.') {
      rc = skip(a, names[i], "hidden: not read");
    } else if (stat(names[i], &fb) != 0) {
      rc = skip(a, names[i], errno == ENOENT ? "a link to nothing: not read" : "cannot be looked at: not read");
    } else if (S_ISDIR(fb.st_mode)) {
      rc = add_dir(a, names[i], &fb, &here, depth + 1);
    } else if (S_ISREG(fb.st_mode)) {
      if (text_twin_of_whole_json(a, names[i])) {
        a->twins++;
        rc = skip(a, names[i], "the text copy of the JSON file beside it, which was read whole: not read");
      } else {
        rc = add_file(a, names[i], &fb);
      }
    } else {
      rc = skip(a, names[i], "not a regular file (a fifo, socket or device): not read");
    }
    an_free(&a->mem, names[i]);
  }
  an_free(&a->mem, names);
  return rc;
}

/* Each pt_analysis_add_* answers PT_AN_ENOMEM once an allocation of the
 * analysis has failed (memory.h): its inputs are then not read whole. */
int pt_analysis_add_path(pt_analysis* a, const char* path) {
  if (!a || !path || a->ran) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  struct stat sb;
  if (stat(path, &sb) != 0) return an_outcome(a, add_file(a, path, NULL));
  if (!S_ISDIR(sb.st_mode)) return an_outcome(a, add_file(a, path, &sb));
  return an_outcome(a, add_dir(a, path, &sb, NULL, 0));
}

int pt_analysis_add_stream(pt_analysis* a, const char* name, FILE* f) {
  if (!a || !f || a->ran) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  uint32_t in;
  int rc = an_input_add(a, name ? name : "(stream)", &in);
  return an_outcome(a, rc ? rc : an_read_stream(a, in, f));
}

int pt_analysis_add_buffer(pt_analysis* a, const char* name, const char* data, size_t len) {
  if (!a || (!data && len) || a->ran) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  uint32_t in;
  int rc = an_input_add(a, name ? name : "(buffer)", &in);
  return an_outcome(a, rc ? rc : an_read_buffer(a, in, data ? data : "", len));
}
