/*
 * jsonl.c — the plugin's dump JSON lines (docs/dump-json.md, schema 1) into
 * dumps.
 *
 * A dump is a "dump" header line, its "op" lines and an "end" line; files
 * are appended dump after dump. Op and end lines name their dump by
 * dumpSeq, so the open dumps of a file are keyed by it. A dump without its
 * end line was cut (a crash, a full disk): its records are used and the cut
 * is reported. Objects of another "type" are skipped (later schemas may add
 * some); a newer schema is read for the fields of schema 1, with one note.
 * An op line that lacks a field the analysis needs, or whose values are out
 * of range, is reported with its line and skipped.
 */
#include <pthread.h>
#include <string.h>

#include "analyze/inputs.h"
#include "format/format.h"

/* The counters' paths in an op line, in counter-kind order. */
#define PATH(i, name) [i] = "counters." name,
static const char* const counter_path[AN_C_COUNT] = {PT_FORMAT_COUNTERS(PATH)};
#undef PATH

static void get_i64(const an_jobj* o, const char* path, int64_t* out) {
  int64_t v;
  if (an_json_i64(o, path, &v) == 0) *out = v;
}

static void get_int(const an_jobj* o, const char* path, int* out) {
  int64_t v;
  if (an_json_i64(o, path, &v) == 0 && v >= -2147483647 - 1 && v <= 2147483647) *out = (int)v;
}

static void get_str(const an_jobj* o, const char* path, char* out, size_t n) {
  const char* s = an_json_str(o, path);
  if (s) snprintf(out, n, "%s", s);
}

/* "userTag":"0x…" (docs/dump-json.md); "unknown" or anything else that is
 * no hexadecimal number: tagged, tag unknown. */
static void user_tag(const char* s, an_op* op) {
  if (!s) return;
  op->tag_known = -1;
  if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2]) return;
  uint64_t v = 0;
  for (const char* q = s + 2; *q; q++) {
    const int d = *q >= '0' && *q <= '9' ? *q - '0' : *q >= 'a' && *q <= 'f' ? *q - 'a' + 10 : -1;
    if (d < 0 || q - (s + 2) >= 16) return;
    v = v << 4 | (uint64_t)d;
  }
  op->user_tag = v;
  op->tag_known = 1;
}

static void dump_line(an_parser* p, const an_jobj* o, uint32_t lineno) {
  pt_analysis* a = p->a;
  int64_t seq = -1;
  get_i64(o, "dumpSeq", &seq);
  an_open* prev = an_parser_find(p, (uint64_t)seq);
  if (prev) {
    an_input_error(a, p->input, prev->d->line, "dump %lld has no end line: cut (crash or full disk?)",
                   (long long)seq);
    prev->d->cut = 1;
    an_parser_close(p, prev);
  }
  an_dump* d = an_dump_new(a, p->input, lineno, AN_FMT_JSONL);
  if (!d) return;
  d->seq = seq;
  d->ns_times = 1;
  int64_t schema = 0;
  get_i64(o, "schema", &schema);
  if (schema > PT_FORMAT_DUMP_SCHEMA && !p->warned_schema++)
    an_input_error(a, p->input, lineno, "dump schema %lld is newer than %d: reading the fields of schema %d",
                   (long long)schema, PT_FORMAT_DUMP_SCHEMA, PT_FORMAT_DUMP_SCHEMA);
  get_str(o, "host", d->host, sizeof d->host);
  get_str(o, "commName", d->comm_name, sizeof d->comm_name);
  get_int(o, "pid", &d->pid);
  get_int(o, "rank", &d->rank);
  get_int(o, "nRanks", &d->nranks);
  get_int(o, "nNodes", &d->nnodes);
  get_int(o, "profilerApi", &d->api);
  get_str(o, "hostLib", d->host_lib, sizeof d->host_lib);
  const char* unit = an_json_str(o, "stepUnit");
  if (unit) d->step_unit = an_unit_parse(unit, strlen(unit));
  if (an_json_u64(o, "commHash", &d->comm) == 0) d->has_comm = 1;
  const char* trig = an_json_str(o, "trigger");
  if (trig) d->trigger = an_trigger_parse(trig);
  get_i64(o, "time_ns", &d->time_ns);
  get_i64(o, "stallMs", &d->stall_ms);
  get_i64(o, "round", &d->round);
  get_i64(o, "activeOps", &d->announced_active);
  get_i64(o, "finishedOps", &d->announced_finished);
  get_i64(o, "rotatedDumps", &d->rotated);
  const an_jfield* off = an_json_get(o, "maskOff");
  d->mask_off = off && off->type == AN_JV_BOOL && off->truth;
  const an_jfield* changed = an_json_get(o, "maskChangedByHost");
  d->mask_changed = d->mask_off || (changed && changed->type == AN_JV_BOOL && changed->truth);
  if (d->rotated < 0) d->rotated = 0;
  for (int i = 0; i < AN_DROP_COUNT; i++) {
    char path[40];
    snprintf(path, sizeof path, "drops.%s", an_drop_names[i]);
    int64_t v;
    if (an_json_i64(o, path, &v) == 0) {
      d->drops[i] = v;
      d->has_drops = 1;
    }
  }
  if (p->summary) an_summary_dump(p, o, d);
  an_parser_open(p, (uint64_t)seq, d);
}

static int dir_of(const char* s) {
  if (!s) return -1;
  if (!strcmp(s, "send")) return 1;
  if (!strcmp(s, "recv")) return 0;
  return -1;
}

static int state_of(const char* s) {
  if (!s || !strcmp(s, "active")) return AN_ST_ACTIVE;
  if (!strcmp(s, "finished")) return AN_ST_FINISHED;
  if (!strcmp(s, "detached")) return AN_ST_DETACHED;
  return -1;
}

/* A record read (op.line and op.input set here) into the dump `seq` of
 * the file. In a summary a record is where its node read it: its dump's
 * input, at src_line. */
static void op_add(an_parser* p, const an_op* in, int64_t seq, uint32_t lineno, int64_t src_line) {
  pt_analysis* a = p->a;
  an_op op = *in;
  op.line = lineno;
  op.input = p->input;
  an_open* od = an_parser_find(p, (uint64_t)seq);
  if (od && p->summary && src_line > 0 && src_line <= UINT32_MAX) {
    op.input = od->d->input;
    op.line = (uint32_t)src_line;
  }
  if (!od) {
    /* Its header is not in this file (cut at the front, or concatenated
     * halfway): keep the records in a dump of their own. */
    an_input_error(a, p->input, lineno, "op line of dump %lld, whose header line is missing", (long long)seq);
    an_dump* d = an_dump_new(a, p->input, lineno, AN_FMT_JSONL);
    if (!d) return;
    d->seq = seq;
    d->ns_times = 1;
    d->rank = op.rank;
    d->comm = op.comm;
    d->has_comm = 1;
    d->lost = 1; /* its header */
    od = an_parser_open(p, (uint64_t)seq, d);
    if (!od) return;
  }
  an_op* slot = an_dump_add_op(a, od->d);
  if (slot) *slot = op;
}

/* Fields are read in the order the writer puts them (the lookups then
 * find each where the last one ended). */
static void op_line(an_parser* p, const an_jobj* o, uint32_t lineno) {
  pt_analysis* a = p->a;
  an_op op;
  an_op_init(&op);
  int64_t seq = -1, v[3];
  get_i64(o, "dumpSeq", &seq);
  static const char* const need[] = {"rank", "peer", "channel"};
  for (int i = 0; i < 3; i++)
    if (an_json_i64(o, need[i], &v[i]) != 0) {
      an_input_error(a, p->input, lineno, "op line without an integer '%s': skipped", need[i]);
      return;
    }
  if (v[0] < 0 || v[0] > AN_MAX_RANK || v[1] < 0 || v[1] > AN_MAX_RANK || v[2] < 0 || v[2] > 1 << 16) {
    an_input_error(a, p->input, lineno, "op line with rank, peer or channel out of range: skipped");
    return;
  }
  op.rank = (int32_t)v[0];
  op.peer = (int32_t)v[1];
  op.channel = (int32_t)v[2];
  int dir = dir_of(an_json_str(o, "dir"));
  if (dir < 0) {
    an_input_error(a, p->input, lineno, "op line whose \"dir\" is not \"send\" or \"recv\": skipped");
    return;
  }
  op.is_send = (int8_t)dir;
  if (an_json_u64(o, "commHash", &op.comm) != 0) {
    an_input_error(a, p->input, lineno, "op line without a commHash: skipped");
    return;
  }
  if (an_json_i64(o, "opCount", &op.op_count) != 0) {
    an_input_error(a, p->input, lineno, "op line without an integer 'opCount': skipped");
    return;
  }
  get_i64(o, "opId", &op.op_id);
  int st = state_of(an_json_str(o, "state"));
  if (st < 0) {
    an_input_error(a, p->input, lineno, "op line with an unknown \"state\": skipped");
    return;
  }
  op.state = (int8_t)st;
  const char* status = an_json_str(o, "status");
  if (status) op.status = (int8_t)an_status_parse(status, strlen(status));
  if (an_json_i64(o, "nSteps", &op.n_steps) != 0) {
    an_input_error(a, p->input, lineno, "op line without an integer 'nSteps': skipped");
    return;
  }
  const char* unit = an_json_str(o, "stepUnit");
  if (unit) op.step_unit = (int8_t)an_unit_parse(unit, strlen(unit));
  int64_t x = 0;
  if (an_json_i64(o, "nBytes", &x) == 0 && x >= 0) op.nbytes = (uint64_t)x;
  get_int(o, "func", &op.func);
  get_int(o, "proto", &op.proto);
  get_int(o, "pattern", &op.pattern);
  if (an_json_i64(o, "totalBytes", &x) == 0 && x >= 0) op.total_bytes = (uint64_t)x;
  if (an_json_i64(o, "chunkSize", &x) == 0 && x >= 0) op.chunk = (uint64_t)x;
  get_str(o, "coll", op.coll, sizeof op.coll);
  get_i64(o, "seq", &op.coll_seq);
  user_tag(an_json_str(o, "userTag"), &op);
  if (!an_json_get(o, counter_path[AN_C_POSTED]) || !an_json_get(o, counter_path[AN_C_DONE])) {
    an_input_error(a, p->input, lineno, "op line without counters.posted/done: skipped");
    return;
  }
  for (int k = 0; k < AN_C_COUNT; k++) get_i64(o, counter_path[k], &op.cnt[k]);
  const char* last = an_json_str(o, "lastCounter");
  for (int k = 0; last && k < AN_C_COUNT; k++)
    if (!strcmp(last, an_counter_json[k])) op.last_counter = (int8_t)k;
  get_i64(o, "create_ns", &op.create_ns);
  get_i64(o, "last_ns", &op.last_ns);
  get_i64(o, "posted_ns", &op.posted_ns);
  get_i64(o, "send_ns", &op.send_ns);
  get_i64(o, "progress_ns", &op.progress_ns);
  int64_t src_line = 0;
  if (p->summary) get_i64(o, "srcLine", &src_line);
  op_add(p, &op, seq, lineno, src_line);
}

/* ---- the op lines the plugin writes, read in one pass ----------------------
 *
 * Almost every line of a dump file is an op line, and the plugin writes
 * them in one shape (docs/dump-json.md): one flat object of integers,
 * null, and ASCII strings without escapes, with the counters in one nested
 * object, no spaces. fast_scan() reads such a line in a single pass into
 * the values of the keys the analysis uses, without the general parser's
 * field list and lookups; fast_op() then takes a record from them by the
 * rules of op_line(). A line off that shape — an escape, a fraction, a
 * space, a duplicate key, other nesting, a value op_line() would refuse —
 * is left to the general parser, so a line reads the same either way
 * (tests/analyze/test_parse.c compares the two on every field). */
enum { /* in the order the plugin writes them */
  F_TYPE, F_DUMPSEQ, F_RANK, F_PEER, F_CHANNEL, F_DIR, F_COMM, F_OPCOUNT, F_OPID, F_KEY, F_STATE, F_STATUS,
  F_NSTEPS, F_STEPUNIT, F_NBYTES, F_FUNC, F_PROTO, F_PATTERN, F_TOTAL, F_CHUNK, F_OPCOUNTFROM, F_COLL, F_SEQ, F_USERTAG,
  F_COUNTERS, F_LASTCOUNTER, F_CREATE, F_LAST, F_POSTED, F_SEND, F_PROGRESS, F_SRCLINE /* summaries */,
  F_TOP, /* then the counters */
  F_COUNT = F_TOP + AN_C_COUNT
};
static const char* const fast_keys[F_TOP] = {
    "type",      "dumpSeq",   "rank",        "peer",     "channel",    "dir",     "commHash",  "opCount",
    "opId",      "key",       "state",       "status",   "nSteps",     "stepUnit", "nBytes",  "func",      "proto",
    "pattern",   "totalBytes", "chunkSize",  "opCountFrom", "coll",    "seq",     "userTag",   "counters",
    "lastCounter", "create_ns", "last_ns",   "posted_ns", "send_ns",   "progress_ns", "srcLine"};

typedef struct {
  const char* s;
  uint32_t n;
  char t; /* 0 absent, 'i' integer, 's' string, 'z' null, 'b' true or false, 'o' the counters */
  int8_t fits; /* 'i': the integer is an int64_t, iv */
  int64_t iv;
} an_fv;

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* A JSON integer at p (a sign or a digit) into x, its value with it when
 * it fits an int64_t (as an_json_i64 takes it: at most 20 characters);
 * where it ends, or NULL when it is no integer (a fraction, an exponent,
 * a leading zero). */
static const char* scan_int(const char* p, const char* e, an_fv* x) {
  const int neg = *p == '-';
  const char* q = p + neg;
  if (q >= e || !is_digit(*q) || (*q == '0' && q + 1 < e && is_digit(q[1]))) return NULL;
  uint64_t v = 0;
  int over = 0;
  for (; q < e && is_digit(*q); q++) {
    const uint64_t d = (uint64_t)(*q - '0');
    if (v > (UINT64_MAX - d) / 10) over = 1;
    else v = v * 10 + d;
  }
  if (q < e && (*q == '.' || *q == 'e' || *q == 'E')) return NULL;
  x->s = p;
  x->n = (uint32_t)(q - p);
  x->t = 'i';
  over |= x->n > 20 || (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX);
  x->fits = (int8_t)!over;
  x->iv = over ? 0 : neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  return q;
}

/* A plain string (no escape, no control or non-ASCII byte) from p (on its
 * opening quote) to its closing quote; NULL when it is not one. */
static const char* plain_string(const char* p, const char* e) {
  for (p++; p < e && *p != '"'; p++)
    if (*p == '\\' || (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x80) return NULL;
  return p < e ? p : NULL;
}

/* A scalar at p the one-pass readers take — a plain string, an integer,
 * null, true or false — into x; where it ends, or NULL when it is none of
 * them (the general parser then reads the line). */
static const char* scan_scalar(const char* p, const char* e, an_fv* x) {
  x->s = p;
  if (*p == '"') {
    const char* q = plain_string(p, e);
    if (!q) return NULL;
    x->s = p + 1;
    x->n = (uint32_t)(q - x->s);
    x->t = 's';
    return q + 1;
  }
  if (*p == '-' || is_digit(*p)) return scan_int(p, e, x);
  if (e - p >= 4 && !memcmp(p, "null", 4)) {
    x->t = 'z';
    return p + 4;
  }
  if (e - p >= 4 && !memcmp(p, "true", 4)) {
    x->t = 'b';
    return p + 4;
  }
  if (e - p >= 5 && !memcmp(p, "false", 5)) {
    x->t = 'b';
    return p + 5;
  }
  return NULL;
}

/* name == k[0..n) (a key holds no NUL: the scan stops at name's end). */
static inline int key_is(const char* name, const char* k, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (name[i] != k[i]) return 0;
  return !name[n];
}

/* The key's index among fast_keys (depth 0) or the counters (depth 1),
 * -1 when the analysis does not read it; *next: where to look first (the
 * key after the last one found, which is where the writer's order puts
 * the next). */
static int fast_key(const char* k, size_t n, int depth, int* next) {
  const int lo = depth ? F_TOP : 0, hi = depth ? F_COUNT : F_TOP;
  for (int c = 0, i = *next; c < hi - lo; c++, i = i + 1 < hi ? i + 1 : lo) {
    const char* name = depth ? an_counter_json[i - F_TOP] : fast_keys[i];
    if (key_is(name, k, n)) {
      *next = i + 1 < hi ? i + 1 : lo;
      return i;
    }
  }
  return -1;
}

/* a[0..n) == b[0..n), for the short keys (a call to memcmp costs more). */
static inline int same_bytes(const char* a, const char* b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* The keys' lengths, by index (set once). */
static uint8_t key_len[F_COUNT];
static pthread_once_t key_len_once = PTHREAD_ONCE_INIT;
static void set_key_len(void) {
  for (int i = 0; i < F_COUNT; i++) key_len[i] = (uint8_t)strlen(i < F_TOP ? fast_keys[i] : an_counter_json[i - F_TOP]);
}

/* 0 when the line has the plugin's shape (v filled), -1 when it is left
 * to the general parser. */
static int fast_scan(const char* s, size_t len, an_fv* v) {
  const char* p = s;
  const char* const e = s + len;
  if (len > 8192 || *p++ != '{') return -1;
  int depth = 0, fields = 0, next_top = 0, next_cnt = F_TOP;
  memset(v, 0, F_COUNT * sizeof *v);
  pthread_once(&key_len_once, set_key_len);
  for (;;) {
    if (p >= e || *p != '"') return -1;
    const char* k = ++p;
    int* const next = depth ? &next_cnt : &next_top;
    const int lo = depth ? F_TOP : 0, hi = depth ? F_COUNT : F_TOP;
    /* the key the writer's order puts here, compared at once */
    const char* guess = *next < F_TOP ? fast_keys[*next] : an_counter_json[*next - F_TOP];
    const size_t gn = key_len[*next];
    int idx;
    if ((size_t)(e - p) > gn && p[gn] == '"' && same_bytes(p, guess, gn)) {
      idx = *next;
      *next = idx + 1 < hi ? idx + 1 : lo;
      p += gn;
      if (p + 1 >= e || p[1] != ':' || ++fields > 200) return -1;
      p += 2;
    } else {
      while (p < e && *p != '"') {
        if (*p == '\\' || *p == '.' || (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x80) return -1;
        p++;
      }
      if (p + 1 >= e || p[1] != ':' || ++fields > 200) return -1;
      const size_t kn = (size_t)(p - k);
      p += 2;
      idx = fast_key(k, kn, depth, next);
    }
    if (idx >= 0 && v[idx].t) return -1; /* a duplicate: which one counts is the general parser's call */
    if (idx == F_COUNTERS && *p != '{') return -1; /* counters that are not an object */
    an_fv skip, *const x = idx >= 0 ? &v[idx] : &skip; /* written in place: no copy of it to stall on */
    if (*p == '{') {
      if (idx != F_COUNTERS || p + 1 >= e || p[1] == '}') return -1;
      v[idx].t = 'o';
      depth = 1;
      p++;
      continue;
    }
    if (!(p = scan_scalar(p, e, x))) return -1;
    while (p < e && *p == '}') {
      p++;
      if (!depth) return p == e ? 0 : -1;
      depth = 0;
    }
    if (p >= e || *p != ',') return -1;
    p++;
  }
}

/* An integer value as an_json_i64 takes it; -1 when it is not one. */
static int fv_i64(const an_fv* f, int64_t* out) {
  if (f->t != 'i' || !f->fits) return -1;
  *out = f->iv;
  return 0;
}

/* An optional integer: absent or null leaves *out; 0, or -1 for another value. */
static int fv_opt(const an_fv* f, int64_t* out) {
  if (!f->t || f->t == 'z') return 0;
  return fv_i64(f, out);
}

static int fv_is(const an_fv* f, const char* word) {
  return f->t == 's' && f->n == strlen(word) && !memcmp(f->s, word, f->n);
}

/* The record of a line fast_scan() read, by op_line()'s rules; -1 where
 * op_line() would refuse it or read it another way (it then reads it). */
static int fast_op(const an_fv* v, an_op* op, int64_t* seq) {
  an_op_init(op);
  *seq = -1;
  int64_t r[3], x;
  if (fv_opt(&v[F_DUMPSEQ], seq)) return -1;
  for (int i = 0; i < 3; i++)
    if (fv_i64(&v[F_RANK + i], &r[i])) return -1;
  if (r[0] < 0 || r[0] > AN_MAX_RANK || r[1] < 0 || r[1] > AN_MAX_RANK || r[2] < 0 || r[2] > 1 << 16) return -1;
  op->rank = (int32_t)r[0];
  op->peer = (int32_t)r[1];
  op->channel = (int32_t)r[2];
  if (fv_is(&v[F_DIR], "send")) op->is_send = 1;
  else if (!fv_is(&v[F_DIR], "recv")) return -1;
  const an_fv* h = &v[F_COMM]; /* a decimal string (or integer) of at most 20 digits, below 2^64 */
  if ((h->t != 's' && h->t != 'i') || !h->n || h->n > 20 || h->s[0] == '-') return -1;
  uint64_t comm = 0;
  for (uint32_t i = 0; i < h->n; i++) {
    if (!is_digit(h->s[i])) return -1;
    const uint64_t d = (uint64_t)(h->s[i] - '0');
    if (comm > (UINT64_MAX - d) / 10) return -1;
    comm = comm * 10 + d;
  }
  op->comm = comm;
  if (fv_i64(&v[F_OPCOUNT], &op->op_count) || fv_opt(&v[F_OPID], &op->op_id)) return -1;
  if (!v[F_STATE].t || fv_is(&v[F_STATE], "active")) op->state = AN_ST_ACTIVE;
  else if (fv_is(&v[F_STATE], "finished")) op->state = AN_ST_FINISHED;
  else if (fv_is(&v[F_STATE], "detached")) op->state = AN_ST_DETACHED;
  else return -1;
  if (v[F_STATUS].t == 's') op->status = (int8_t)an_status_parse(v[F_STATUS].s, v[F_STATUS].n);
  else if (v[F_STATUS].t && v[F_STATUS].t != 'z') return -1;
  if (fv_i64(&v[F_NSTEPS], &op->n_steps)) return -1;
  if (v[F_STEPUNIT].t == 's') op->step_unit = (int8_t)an_unit_parse(v[F_STEPUNIT].s, v[F_STEPUNIT].n);
  uint64_t* const sizes[3] = {&op->nbytes, &op->total_bytes, &op->chunk};
  static const int size_key[3] = {F_NBYTES, F_TOTAL, F_CHUNK};
  for (int i = 0; i < 3; i++) {
    x = -1;
    if (fv_opt(&v[size_key[i]], &x)) return -1;
    if (x >= 0) *sizes[i] = (uint64_t)x;
  }
  int32_t* const ints[3] = {&op->func, &op->proto, &op->pattern};
  for (int i = 0; i < 3; i++) {
    x = *ints[i];
    if (fv_opt(&v[F_FUNC + i], &x) || x < -2147483647 - 1 || x > 2147483647) return -1;
    *ints[i] = (int32_t)x;
  }
  if (v[F_COLL].t == 's') snprintf(op->coll, sizeof op->coll, "%.*s", (int)v[F_COLL].n, v[F_COLL].s);
  else if (v[F_COLL].t && v[F_COLL].t != 'z') return -1;
  if (fv_opt(&v[F_SEQ], &op->coll_seq)) return -1;
  if (v[F_USERTAG].t == 's') {
    char tag[40];
    if (v[F_USERTAG].n >= sizeof tag) return -1;
    snprintf(tag, sizeof tag, "%.*s", (int)v[F_USERTAG].n, v[F_USERTAG].s);
    user_tag(tag, op);
  } else if (v[F_USERTAG].t && v[F_USERTAG].t != 'z') {
    return -1;
  }
  if (!v[F_TOP + AN_C_POSTED].t || !v[F_TOP + AN_C_DONE].t) return -1;
  for (int k = 0; k < AN_C_COUNT; k++)
    if (fv_opt(&v[F_TOP + k], &op->cnt[k])) return -1;
  if (v[F_LASTCOUNTER].t == 's') {
    for (int k = 0; k < AN_C_COUNT; k++)
      if (fv_is(&v[F_LASTCOUNTER], an_counter_json[k])) op->last_counter = (int8_t)k;
  } else if (v[F_LASTCOUNTER].t && v[F_LASTCOUNTER].t != 'z') {
    return -1;
  }
  int64_t* const times[5] = {&op->create_ns, &op->last_ns, &op->posted_ns, &op->send_ns, &op->progress_ns};
  for (int i = 0; i < 5; i++)
    if (fv_opt(&v[F_CREATE + i], times[i])) return -1;
  return 0;
}

/* 1 when the line was read here. */
static int fast_op_line(an_parser* p, const char* line, size_t len, uint32_t lineno) {
  an_fv v[F_COUNT];
  an_op op;
  int64_t seq;
  int64_t src_line = 0;
  if (fast_scan(line, len, v) != 0 || fast_op(v, &op, &seq) != 0 || fv_opt(&v[F_SRCLINE], &src_line) != 0) return 0;
  op_add(p, &op, seq, lineno, p->summary ? src_line : 0);
  return 1;
}

static void end_of(an_parser* p, int64_t seq, int64_t records, uint32_t lineno) {
  an_open* od = an_parser_find(p, (uint64_t)seq);
  if (!od) {
    an_input_error(p->a, p->input, lineno, "end line of dump %lld, which was not opened", (long long)seq);
    return;
  }
  if (records >= 0 && (uint64_t)records != od->d->n_ops)
    an_input_error(p->a, p->input, lineno, "dump %lld: the end line counts %lld records, %zu were read",
                   (long long)seq, (long long)records, od->d->n_ops);
  an_parser_close(p, od);
}

static void end_line(an_parser* p, const an_jobj* o, uint32_t lineno) {
  int64_t seq = -1, records = -1;
  get_i64(o, "dumpSeq", &seq);
  get_i64(o, "records", &records);
  end_of(p, seq, records, lineno);
}

/* A line of a step metrics file (docs/metrics.md): its header, an edge, its
 * end. Edge lines hold hundreds of fields, more than a dump line's parser
 * keeps: the metrics reader (mset.c) takes them whole. */
static int starts(const char* s, const char* prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static int metrics_line(an_parser* p, const char* line, uint32_t lineno) {
  const int header = starts(line, "{\"type\":\"metrics\"");
  if (!header && !starts(line, "{\"type\":\"edge\"") && !starts(line, "{\"type\":\"end\",\"edges\""))
    return 0;
  /* A header first: edges with no header before them in the same input
   * (a document's example) are not a metrics file's. */
  if (!header && !p->metrics_header) {
    an_input_error(p->a, p->input, lineno, "metrics line with no metrics header before it: skipped");
    return 1;
  }
  if (p->a->defer) { /* a reading thread's: the analysis reads this file itself */
    p->a->serial_needed = 1;
    return 1;
  }
  const int r = pt_mset_line(&p->a->mset, line);
  if (r < 0) return -1;
  if (r == 0) { /* the reader takes whole lines only */
    an_input_error(p->a, p->input, lineno, "metrics line that is not a whole JSON object (cut?): skipped");
    return 1;
  }
  p->metrics_header |= header;
  an_input* in = &p->a->inputs[p->input];
  if (!in->dumps) in->format = "metrics";
  return 1;
}

static int json_i64(const an_fields* f, const char* key, int64_t* out) { return an_json_i64(f->src, key, out); }
static const char* json_str(const an_fields* f, const char* key, char* buf, size_t n) {
  (void)buf;
  (void)n;
  return an_json_str(f->src, key);
}

/* A progress line (progress.c) of an open dump. */
static void progress_of(an_parser* p, int64_t seq, const char* type, const an_fields* f, uint32_t lineno) {
  an_open* od = an_parser_find(p, (uint64_t)seq);
  if (!od || !od->d) {
    an_input_error(p->a, p->input, lineno, "%s line of dump %lld, which was not opened: skipped", type,
                   (long long)seq);
    return;
  }
  if (an_progress_line(p->a, od->d, type, f, lineno) != 0)
    an_input_error(p->a, p->input, lineno, "out of memory: a progress line is lost");
}

static void progress_line(an_parser* p, const an_jobj* o, const char* type, uint32_t lineno) {
  int64_t seq = -1;
  get_i64(o, "dumpSeq", &seq);
  const an_fields f = {.i64 = json_i64, .str = json_str, .src = o};
  progress_of(p, seq, type, &f, lineno);
}

/* ---- flat lines: progress and end lines in one pass ------------------------
 *
 * The progress lines ("progress", "coll", "p2p", "kernelCh") and the end
 * line are flat objects of integers, null, booleans and ASCII strings
 * without escapes. flat_scan() reads such a line into (key, value) spans,
 * which the same routines then read through an_fields; a line of any other
 * shape (nesting, an escape, a fraction, a space, a duplicate key, a key
 * with a dot) goes to the general parser, which reads it the same way. */
#define AN_FLAT_MAX 32

typedef struct {
  const char* k[AN_FLAT_MAX];
  uint32_t kn[AN_FLAT_MAX];
  an_fv v[AN_FLAT_MAX];
  int n;
} an_flat;

static const an_fv* flat_get(const an_flat* o, const char* key) {
  for (int i = 0; i < o->n; i++)
    if (o->k[i][0] == key[0] && !strncmp(o->k[i], key, o->kn[i]) && !key[o->kn[i]]) return &o->v[i];
  return NULL;
}

static int flat_scan(const char* s, size_t len, an_flat* o) {
  const char* p = s;
  const char* const e = s + len;
  o->n = 0;
  if (len > 4096 || *p++ != '{') return -1;
  for (;;) {
    if (p >= e || *p != '"' || o->n == AN_FLAT_MAX) return -1;
    const char* ke = plain_string(p, e);
    if (!ke || ke + 1 >= e || ke[1] != ':' || ke - p - 1 > 40 || memchr(p + 1, '.', (size_t)(ke - p - 1))) return -1;
    const char* k = p + 1;
    const uint32_t kn = (uint32_t)(ke - k);
    for (int i = 0; i < o->n; i++)
      if (o->kn[i] == kn && !memcmp(o->k[i], k, kn)) return -1; /* a duplicate: the general parser's call */
    p = ke + 2;
    an_fv x = {.s = p};
    if (!(p = scan_scalar(p, e, &x))) return -1;
    o->k[o->n] = k;
    o->kn[o->n] = kn;
    o->v[o->n++] = x;
    if (p < e && *p == '}') return p + 1 == e ? 0 : -1;
    if (p >= e || *p != ',') return -1;
    p++;
  }
}

static int flat_i64(const an_fields* f, const char* key, int64_t* out) {
  const an_fv* v = flat_get(f->src, key);
  return v ? fv_i64(v, out) : -1;
}

static const char* flat_str(const an_fields* f, const char* key, char* buf, size_t n) {
  const an_fv* v = flat_get(f->src, key);
  if (!v || v->t != 's' || !n) return NULL;
  const size_t m = v->n < n - 1 ? v->n : n - 1; /* cut to fit, as the callers' copies are */
  memcpy(buf, v->s, m);
  buf[m] = 0;
  return buf;
}

static void flat_seq(const an_flat* o, const char* key, int64_t* out) {
  const an_fv* v = flat_get(o, key);
  int64_t x;
  if (v && fv_i64(v, &x) == 0) *out = x;
}

/* 1 when a progress or end line was read here. */
static int flat_line(an_parser* p, const char* line, size_t len, uint32_t lineno) {
  an_flat o;
  if (flat_scan(line, len, &o) != 0 || !o.n || o.kn[0] != 4 || memcmp(o.k[0], "type", 4) || o.v[0].t != 's') return 0;
  static const char* const types[] = {"end", "progress", "coll", "p2p", "kernelCh"};
  const char* type = NULL;
  for (size_t i = 0; i < sizeof types / sizeof *types && !type; i++)
    if (o.v[0].n == strlen(types[i]) && same_bytes(o.v[0].s, types[i], o.v[0].n)) type = types[i];
  if (!type) return 0;
  int64_t seq = -1;
  flat_seq(&o, "dumpSeq", &seq);
  if (!strcmp(type, "end")) {
    int64_t records = -1;
    flat_seq(&o, "records", &records);
    end_of(p, seq, records, lineno);
    return 1;
  }
  const an_fields f = {.i64 = flat_i64, .str = flat_str, .src = &o};
  progress_of(p, seq, type, &f, lineno);
  return 1;
}

void an_jsonl_line(an_parser* p, const char* line, size_t len, uint32_t lineno) {
  if (len > 13 && !memcmp(line, "{\"type\":\"op\",", 13) && fast_op_line(p, line, len, lineno)) return;
  const int m = metrics_line(p, line, lineno);
  if (m < 0) an_input_error(p->a, p->input, lineno, "out of memory reading a metrics line: skipped");
  if (m) return;
  if (len > 12 && !memcmp(line, "{\"type\":\"", 9) && (line[9] == 'e' || line[9] == 'c' || line[9] == 'p' || line[9] == 'k') &&
      flat_line(p, line, len, lineno))
    return;
  an_jobj* o = &p->json;
  char err[200];
  if (an_json_parse(line, len, o, err, sizeof err) != 0) {
    an_input_error(p->a, p->input, lineno, "malformed JSON line: %s", err);
    return;
  }
  const char* type = an_json_str(o, "type");
  if (!type) {
    an_input_error(p->a, p->input, lineno, "JSON line without a \"type\": skipped");
    return;
  }
  if (!strcmp(type, "op")) op_line(p, o, lineno);
  else if (!strcmp(type, "dump")) dump_line(p, o, lineno);
  else if (!strcmp(type, "end")) end_line(p, o, lineno);
  else if (!strcmp(type, "summary") && lineno == 1 && p->a->defer) p->a->serial_needed = 1;
  else if (!strcmp(type, "summary") && lineno == 1) an_summary_line(p, o);
  else if (!strcmp(type, "input") && p->summary) an_summary_input(p, o);
  else if (!strcmp(type, "progress") || !strcmp(type, "coll") || !strcmp(type, "p2p") || !strcmp(type, "kernelCh"))
    progress_line(p, o, type, lineno);
  /* other types: later additions, skipped */
}
