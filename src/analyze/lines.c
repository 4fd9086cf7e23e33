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
 * A directory's files are parsed on several threads and merged in the
 * order of this walk ("reading a directory's files on several threads",
 * below).
 *
 * The file name may say which rank wrote it (`rank3.log`, the plugin's
 * `proxytrace-host-pid-r3-hash.txt`): a dump with no record and no header
 * naming its rank then still counts as that rank's dump.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/inputs.h"

#define AN_BLOCK 65536
#define AN_MAX_DEPTH 8
#define AN_MAX_DEPTH_TEXT "8"

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

/* Counts the dumps of a file of the plugin's shape before its last two as
 * read, without their contents; returns the ring slot of the first dump
 * that is parsed. */
static int pass_over(pt_analysis* a, uint32_t input, const an_skim* k) {
  const int first = (int)(k->dumps % AN_TAIL_DUMPS); /* the oldest of the ring */
  const uint32_t passed_dumps = k->dumps - AN_TAIL_DUMPS, passed_ops = k->ops_at[first];
  a->dumps += passed_dumps;
  a->inputs[input].dumps += passed_dumps;
  a->records += passed_ops;
  a->inputs[input].records += passed_ops;
  a->passed_over += passed_dumps;
  return first;
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
  pass_over(a, input, &k);
  uint32_t lineno = k.line_at[first] - 1;
  uint64_t tail = 0;
  rc = parse_stream(a, input, f, &lineno, &tail);
  count_input(a, input, lines, bytes, t0);
  return rc ? rc : 1;
}

/* ---- a small file, read once ------------------------------------------------
 *
 * A file of at most AN_MAX_LINE bytes (a rank's dump file, mostly) is read
 * into the block whole, skimmed there and parsed from there: one read
 * instead of two, with the same lines, numbers and counts as the reading
 * above (no line of such a file can be over-long). */

/* 1: f is in a->block (*len bytes, room for a NUL after); 0: too large, or
 * a read error (rewound: the reading above reports it); <0: out of memory. */
static int slurp(pt_analysis* a, FILE* f, size_t* len) {
  size_t cap = a->block ? a->block_cap : AN_BLOCK + 1, have = 0;
  char* buf = a->block ? a->block : an_alloc(&a->mem, cap);
  if (!buf) return PT_AN_ENOMEM;
  a->block = buf;
  a->block_cap = cap;
  for (;;) {
    if (have == cap - 1) {
      if (cap - 1 >= AN_MAX_LINE) break;
      char* nb = an_realloc(&a->mem, buf, cap * 2);
      if (!nb) return PT_AN_ENOMEM;
      a->block = buf = nb;
      a->block_cap = cap = cap * 2;
    }
    const size_t got = fread(buf + have, 1, cap - 1 - have, f);
    have += got;
    if (got) continue;
    if (ferror(f)) break;
    *len = have;
    return 1;
  }
  clearerr(f);
  rewind(f);
  return 0;
}

/* skim_line over each line of buf[0..len), which is left as it was. */
static uint32_t skim_buffer(an_skim* k, char* buf, size_t len) {
  uint32_t lineno = 0;
  for (size_t start = 0; start < len;) {
    char* nl = memchr(buf + start, '\n', len - start);
    const size_t end = nl ? (size_t)(nl - buf) : len;
    size_t n = end - start;
    if (n && buf[start + n - 1] == '\r') n--;
    const char saved = buf[start + n];
    buf[start + n] = 0;
    skim_line(k, buf + start, n, ++lineno, !nl);
    buf[start + n] = saved;
    start = end + (nl != NULL);
  }
  return lineno;
}

/* read_latest() of a file slurp() read. */
static int read_latest_buffer(pt_analysis* a, uint32_t input, size_t len, double t0) {
  char* buf = a->block;
  an_skim k = {.shaped = 1, .after_end = 1};
  const uint32_t lines = skim_buffer(&k, buf, len);
  size_t from = 0;
  uint32_t lineno = 0;
  const int tail = k.shaped && k.dumps > AN_TAIL_DUMPS && k.offset == len;
  if (tail) {
    const int first = pass_over(a, input, &k);
    from = (size_t)k.at[first];
    lineno = k.line_at[first] - 1;
  }
  an_parser* p = an_parser_new(a, input);
  if (!p) return PT_AN_ENOMEM;
  feed(parse_line, p, buf + from, len - from, &lineno, 1);
  an_parser_finish(p);
  count_input(a, input, tail ? lines : lineno, len, t0);
  return 0;
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
#define SAME_FILE "the same file as an input read before: read once"
#define TWIN_TEXT "the text copy of the JSON file beside it, which was read whole: not read"

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

/* Opens and parses input `in`. */
static int read_file(pt_analysis* a, uint32_t in, const char* path) {
  FILE* f;
  const int opened = an_open_regular(path, &f, NULL);
  if (opened != 0) {
    if (opened < 0 && an_mem_errno(&a->mem, errno)) return PT_AN_ENOMEM; /* the FILE itself */
    char buf[256];
    if (opened > 0) snprintf(buf, sizeof buf, "%s: not read", AN_NOT_REGULAR);
    else snprintf(buf, sizeof buf, "cannot open: %s", strerror(errno));
    a->inputs[in].error = an_strdup(&a->mem, buf);
    a->inputs[in].format = "unreadable";
    a->errors++;
    return 0;
  }
  int rc = 0;
  if (!a->all_dumps) {
    double t0 = an_now();
    size_t len;
    rc = slurp(a, f, &len);
    if (rc == 1) {
      fclose(f);
      return read_latest_buffer(a, in, len, t0);
    }
    if (rc == 0) rc = read_latest(a, in, f, t0);
    if (rc == 1) {
      fclose(f);
      return 0;
    }
  }
  if (rc == 0) rc = an_read_stream(a, in, f);
  fclose(f);
  return rc;
}

/* A new input for `path`, with the identity of the file (dev, ino) when
 * known, in the index of files read. */
static int new_input(pt_analysis* a, const char* path, int has_id, uint64_t dev, uint64_t ino, uint32_t* in) {
  int rc = an_input_add(a, path, in);
  if (rc || !has_id) return rc;
  if (!a->file_index.cap && an_map_init(&a->mem, &a->file_index, 64) != 0) return PT_AN_ENOMEM;
  a->inputs[*in].dev = dev;
  a->inputs[*in].ino = ino;
  a->inputs[*in].has_id = 1;
  return an_map_add(&a->mem, &a->file_index, file_key(dev, ino), (int32_t)*in) != 0 ? PT_AN_ENOMEM : 0;
}

static int add_file(pt_analysis* a, const char* path, const struct stat* sb) {
  if (sb && seen_file(a, sb) >= 0) return skip(a, path, SAME_FILE);
  uint32_t in;
  int rc = new_input(a, path, sb != NULL, sb ? (uint64_t)sb->st_dev : 0, sb ? (uint64_t)sb->st_ino : 0, &in);
  return rc ? rc : read_file(a, in, path);
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

/* ---- reading a directory's files on several threads ------------------------
 *
 * A directory's walk (add_dir) lists its files and notes in the order a
 * serial reading meets them; then `threads` threads parse the files, each
 * into a partial analysis of its own (`defer`: the dumps a file yields are
 * kept, not merged), while the analysis merges the files' results in that
 * order — input numbers, arrival order, notes, errors and counts as a
 * serial reading gives them (tests/analyze/test_threads.c compares the
 * two). A file whose lines need the analysis itself (step metrics, a
 * summary) is read again by it, in its place. The threads run at most
 * AN_WINDOW files per thread ahead of the merge, so what waits to be
 * merged stays small. X.txt right after X.jsonl is read, as serially,
 * only when the JSON copy is not whole: one thread reads both. */
#define AN_WINDOW 4
#define AN_MAX_THREADS 64

static void pend_free(pt_analysis* a) {
  for (size_t i = 0; i < a->n_pending; i++) an_free(&a->mem, a->pending[i].path);
  an_free(&a->mem, a->pending);
  a->pending = NULL;
  a->n_pending = a->cap_pending = 0;
  an_map_free(&a->mem, &a->pending_index);
  memset(&a->pending_index, 0, sizeof a->pending_index);
}

static int pend(pt_analysis* a, const char* path, const char* why, const struct stat* sb, int twin) {
  an_pending* e = an_grow(&a->mem, (void**)&a->pending, &a->n_pending, &a->cap_pending, sizeof *e);
  if (!e) return PT_AN_ENOMEM;
  e->path = an_strdup(&a->mem, path);
  e->skip_why = why;
  e->twin = twin;
  if (!e->path) {
    a->n_pending--;
    return PT_AN_ENOMEM;
  }
  if (sb) {
    e->dev = (uint64_t)sb->st_dev;
    e->ino = (uint64_t)sb->st_ino;
    e->has_id = 1;
  }
  /* every entry is an item of the index (items are numbered in order);
   * one without a file identity under key 0, and pending_seen() passes
   * over it */
  if (!a->pending_index.cap && an_map_init(&a->mem, &a->pending_index, 256) != 0) return PT_AN_ENOMEM;
  const uint64_t key = sb ? file_key(e->dev, e->ino) : 0;
  return an_map_add(&a->mem, &a->pending_index, key, (int32_t)(a->n_pending - 1)) != 0 ? PT_AN_ENOMEM : 0;
}

static int pending_seen(const pt_analysis* a, const struct stat* sb) {
  if (!a->pending_index.cap) return 0;
  const uint64_t dev = (uint64_t)sb->st_dev, ino = (uint64_t)sb->st_ino;
  for (int32_t i = an_map_first(&a->pending_index, file_key(dev, ino)); i >= 0; i = an_map_next(&a->pending_index, i))
    if (a->pending[i].has_id && a->pending[i].dev == dev && a->pending[i].ino == ino) return 1;
  return 0;
}

/* The walk's notes and files: at once when reading serially, else listed. */
static int walk_skip(pt_analysis* a, const char* path, const char* why) {
  return a->threads > 1 ? pend(a, path, why, NULL, 0) : skip(a, path, why);
}

/* X.txt right after the file X.jsonl in the list. */
static int twin_of_last(const pt_analysis* a, const char* path) {
  const size_t n = strlen(path);
  if (a->all_dumps || n < 5 || strcmp(path + n - 4, ".txt") != 0) return 0;
  for (size_t i = a->n_pending; i-- > 0;) {
    const an_pending* e = &a->pending[i];
    if (e->skip_why) continue;
    return !e->twin && strlen(e->path) == n + 2 && !strncmp(e->path, path, n - 4) && !strcmp(e->path + n - 4, ".jsonl");
  }
  return 0;
}

static int walk_file(pt_analysis* a, const char* path, const struct stat* sb) {
  if (a->threads <= 1) {
    if (sb && text_twin_of_whole_json(a, path)) {
      a->twins++;
      return skip(a, path, TWIN_TEXT);
    }
    return add_file(a, path, sb);
  }
  /* serially, a text copy is looked at as such before as a file read twice */
  const int twin = sb && twin_of_last(a, path), dup = sb && (seen_file(a, sb) >= 0 || pending_seen(a, sb));
  if (dup && !twin) return pend(a, path, SAME_FILE, NULL, 0);
  int rc = pend(a, path, NULL, dup ? NULL : sb, twin);
  if (!rc) a->pending[a->n_pending - 1].dup = dup;
  return rc;
}

typedef struct {
  size_t first, n;     /* pending entries: a note, a file, or X.jsonl and X.txt */
  pt_analysis* part;   /* the partial analysis its files were parsed into */
  const char* second_note; /* X.txt was not read: why */
  int rc, done;
} an_unit;

typedef struct {
  pt_analysis* a;
  an_unit* units;
  size_t n_units, next, merged, window;
  int readers_waiting, merge_waiting; /* wake only who waits: a unit is often a few ms */
  pthread_mutex_t mu;
  pthread_cond_t work, done;
} an_pool;

/* Parses a unit's files into a partial analysis (a reading thread). */
static void parse_unit(pt_analysis* a, an_unit* u, char** block, size_t* block_cap, an_parser** spare) {
  if (a->pending[u->first].skip_why) return;
  pt_analysis* part = an_alloc(&a->mem, sizeof *part);
  if (!part) {
    u->rc = PT_AN_ENOMEM;
    return;
  }
  part->mem.parent = &a->mem;
  part->defer = 1;
  part->threads = 1;
  part->all_dumps = a->all_dumps;
  part->block = *block;
  part->block_cap = *block_cap;
  part->spare_parser = *spare;
  u->part = part;
  for (size_t i = u->first; i < u->first + u->n && !u->rc && !part->serial_needed; i++) {
    const an_pending* e = &a->pending[i];
    if (e->twin && text_twin_of_whole_json(part, e->path)) {
      part->twins++;
      u->second_note = TWIN_TEXT;
      continue;
    }
    if (e->dup) {
      u->second_note = SAME_FILE;
      continue;
    }
    const char* base = strrchr(e->path, '/');
    if (!strncmp(base ? base + 1 : e->path, "proxytrace-metrics-", 19)) { /* the plugin's metrics file: the analysis' */
      part->serial_needed = 1;
      break;
    }
    uint32_t in;
    u->rc = an_input_add(part, e->path, &in);
    if (!u->rc) {
      part->inputs[in].dev = e->dev;
      part->inputs[in].ino = e->ino;
      part->inputs[in].has_id = e->has_id;
      u->rc = read_file(part, in, e->path);
    }
  }
  *block = part->block;
  *block_cap = part->block_cap;
  part->block = NULL;
  *spare = part->spare_parser;
  part->spare_parser = NULL;
}

static void* reader(void* arg) {
  an_pool* pool = arg;
  pt_analysis* a = pool->a;
  char* block = NULL;
  size_t cap = 0;
  an_parser* spare = NULL;
  pthread_mutex_lock(&pool->mu);
  for (;;) {
    while (pool->next < pool->n_units && pool->next >= pool->merged + pool->window) {
      pool->readers_waiting++;
      pthread_cond_wait(&pool->work, &pool->mu);
      pool->readers_waiting--;
    }
    if (pool->next >= pool->n_units) break;
    an_unit* u = &pool->units[pool->next++];
    pthread_mutex_unlock(&pool->mu);
    parse_unit(a, u, &block, &cap, &spare);
    pthread_mutex_lock(&pool->mu);
    u->done = 1;
    if (pool->merge_waiting) pthread_cond_signal(&pool->done);
  }
  pthread_mutex_unlock(&pool->mu);
  an_free(&a->mem, block);
  an_free(&a->mem, spare);
  return NULL;
}

/* Frees a partial analysis and what it still holds. */
static void part_free(pt_analysis* a, pt_analysis* part) {
  for (size_t i = 0; i < part->n_handoffs; i++) an_dump_free(a, part->handoffs[i].d);
  an_free(&a->mem, part->handoffs);
  for (size_t i = 0; i < part->n_inputs; i++) an_input_free(a, &part->inputs[i]);
  an_free(&a->mem, part->inputs);
  an_free(&a->mem, part->block);
  an_free(&a->mem, part->spare_parser);
  an_free(&a->mem, part);
}

/* Merges a parsed unit into the analysis, as a serial reading would have. */
static int merge_unit(pt_analysis* a, an_unit* u) {
  const an_pending* e = &a->pending[u->first];
  pt_analysis* part = u->part;
  int rc = u->rc;
  if (e->skip_why) return skip(a, e->path, e->skip_why);
  if (!part) return rc;
  if (part->serial_needed && !rc) { /* read again by the analysis, as serially */
    part_free(a, part);
    u->part = NULL;
    for (size_t i = u->first; i < u->first + u->n && !rc; i++) {
      e = &a->pending[i];
      if (e->twin && text_twin_of_whole_json(a, e->path)) {
        a->twins++;
        rc = skip(a, e->path, TWIN_TEXT);
        continue;
      }
      if (e->dup) {
        rc = skip(a, e->path, SAME_FILE);
        continue;
      }
      uint32_t in;
      rc = new_input(a, e->path, e->has_id, e->dev, e->ino, &in);
      if (!rc) rc = read_file(a, in, e->path);
    }
    return rc;
  }
  const uint32_t base = (uint32_t)a->n_inputs;
  for (size_t i = 0; i < part->n_inputs && !rc; i++) {
    an_input* x = &part->inputs[i];
    uint32_t in;
    rc = new_input(a, x->path, x->has_id, x->dev, x->ino, &in);
    if (rc) break;
    an_free(&a->mem, a->inputs[in].path);
    a->inputs[in] = *x;
    memset(x, 0, sizeof *x); /* its strings are the analysis' now */
  }
  a->lines += part->lines;
  a->bytes += part->bytes;
  a->records += part->records;
  a->dumps += part->dumps;
  a->errors += part->errors;
  a->passed_over += part->passed_over;
  a->twins += part->twins;
  a->parse_seconds += part->parse_seconds;
  const uint64_t order = a->order;
  a->order += part->order;
  for (size_t i = 0; i < part->n_handoffs; i++) {
    an_handoff h = part->handoffs[i];
    part->handoffs[i].d = NULL;
    if (rc) {
      an_dump_free(a, h.d);
      continue;
    }
    h.d->order += order;
    h.d->input += base;
    for (size_t k = 0; k < h.d->n_ops; k++) h.d->ops[k].input += base;
    if (h.kind == AN_HAND_MERGE) {
      an_merge(a, h.d);
    } else {
      if (h.kind == AN_HAND_EMPTY) an_merge_empty_rank(a, h.d);
      else an_unknown_rank(a, h.d);
      an_dump_free(a, h.d);
    }
  }
  if (u->second_note && !rc) rc = skip(a, a->pending[u->first + 1].path, u->second_note);
  part_free(a, part);
  u->part = NULL;
  return rc;
}

/* Reads the files the walk listed, on a->threads threads, and merges them
 * in order. */
static int read_pending(pt_analysis* a) {
  int rc = 0;
  an_pool pool = {.a = a};
  size_t n_units = 0;
  for (size_t i = 0; i < a->n_pending; i += 1 + (i + 1 < a->n_pending && a->pending[i + 1].twin)) n_units++;
  pool.units = an_alloc(&a->mem, (n_units + 1) * sizeof *pool.units);
  if (!pool.units) {
    pend_free(a);
    return PT_AN_ENOMEM;
  }
  for (size_t i = 0, u = 0; i < a->n_pending; u++) {
    const size_t n = 1 + (i + 1 < a->n_pending && a->pending[i + 1].twin && !a->pending[i].skip_why);
    pool.units[u].first = i;
    pool.units[u].n = n;
    i += n;
    pool.n_units = u + 1;
  }
  /* The calling thread reads too, when the file it merges next is not
   * read yet: `threads` readers in all, so that on a machine of N cores N
   * threads parse and none waits for a core. */
  size_t want = (size_t)a->threads < pool.n_units ? (size_t)a->threads : pool.n_units;
  pool.window = AN_WINDOW * (want ? want : 1);
  pthread_t tid[AN_MAX_THREADS];
  size_t started = 0;
  pthread_mutex_init(&pool.mu, NULL);
  pthread_cond_init(&pool.work, NULL);
  pthread_cond_init(&pool.done, NULL);
  for (; started + 1 < want; started++)
    if (pthread_create(&tid[started], NULL, reader, &pool) != 0) break;
  char* block = NULL;
  size_t block_cap = 0;
  an_parser* spare = NULL;
  for (size_t u = 0; u < pool.n_units; u++) {
    an_unit* x = &pool.units[u];
    pthread_mutex_lock(&pool.mu);
    while (!x->done) {
      if (pool.next < pool.n_units && pool.next < pool.merged + pool.window) { /* read one here */
        an_unit* y = &pool.units[pool.next++];
        pthread_mutex_unlock(&pool.mu);
        parse_unit(a, y, &block, &block_cap, &spare);
        pthread_mutex_lock(&pool.mu);
        y->done = 1;
        continue;
      }
      pool.merge_waiting = 1;
      pthread_cond_wait(&pool.done, &pool.mu);
      pool.merge_waiting = 0;
    }
    pthread_mutex_unlock(&pool.mu);
    const int r = merge_unit(a, x);
    if (!rc) rc = r;
    pthread_mutex_lock(&pool.mu);
    pool.merged = u + 1;
    if (pool.readers_waiting) pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);
  }
  for (size_t t = 0; t < started; t++) pthread_join(tid[t], NULL);
  an_free(&a->mem, block);
  an_free(&a->mem, spare);
  pthread_mutex_destroy(&pool.mu);
  pthread_cond_destroy(&pool.work);
  pthread_cond_destroy(&pool.done);
  an_free(&a->mem, pool.units);
  pend_free(a);
  return rc;
}

/* The threads that read a directory's files: the option, or one per
 * processor (at most AN_MAX_THREADS). */
static int reading_threads(const pt_analysis* a) {
  if (a->threads) return a->threads;
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > AN_MAX_THREADS ? AN_MAX_THREADS : (int)n;
}

static int add_dir(pt_analysis* a, const char* path, const struct stat* sb, const an_dir_chain* up, int depth) {
  for (const an_dir_chain* c = up; c; c = c->up)
    if (c->dev == (uint64_t)sb->st_dev && c->ino == (uint64_t)sb->st_ino)
      return walk_skip(a, path, "a link back to a directory above it (a loop): not read again");
  if (depth > AN_MAX_DEPTH)
    return walk_skip(a, path, "deeper than " AN_MAX_DEPTH_TEXT " levels below the path given: not read");
  const an_dir_chain here = {(uint64_t)sb->st_dev, (uint64_t)sb->st_ino, up};
  DIR* dir = opendir(path);
  if (!dir && an_mem_errno(&a->mem, errno)) return PT_AN_ENOMEM;
  if (!dir) return walk_file(a, path, NULL); /* recorded as unreadable, with why */
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
      rc = walk_skip(a, names[i], "hidden: not read");
    } else if (stat(names[i], &fb) != 0) {
      rc = walk_skip(a, names[i], errno == ENOENT ? "a link to nothing: not read" : "cannot be looked at: not read");
    } else if (S_ISDIR(fb.st_mode)) {
      rc = add_dir(a, names[i], &fb, &here, depth + 1);
    } else if (an_not_regular(&fb)) {
      rc = walk_skip(a, names[i], AN_NOT_REGULAR ": not read");
    } else {
      rc = walk_file(a, names[i], &fb);
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
  const int threads = a->threads;
  a->threads = reading_threads(a);
  int rc = add_dir(a, path, &sb, NULL, 0);
  if (a->n_pending) {
    const int r = rc ? (pend_free(a), 0) : read_pending(a);
    rc = rc ? rc : r;
  }
  a->threads = threads;
  return an_outcome(a, rc);
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
