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
#include <string.h>

#include "analyze/internal.h"

/* JSON key names of the counters, in counter-kind order, and their paths
 * in an op line. */
const char* const an_counter_json[AN_C_COUNT] = {
    "posted", "kernelCopyReady", "rtrRecv",   "rtsSend",    "received",         "transmitted",
    "flushed", "done",           "recvTail", "tailOrHead", "fifoSzOrHeadCache"};
static const char* const counter_path[AN_C_COUNT] = {
    "counters.posted",   "counters.kernelCopyReady", "counters.rtrRecv",    "counters.rtsSend",
    "counters.received", "counters.transmitted",     "counters.flushed",    "counters.done",
    "counters.recvTail", "counters.tailOrHead",      "counters.fifoSzOrHeadCache"};

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
static void user_tag(const an_jobj* o, an_op* op) {
  const char* s = an_json_str(o, "userTag");
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
  if (schema > 1 && !p->warned_schema++)
    an_input_error(a, p->input, lineno, "dump schema %lld is newer than 1: reading the fields of schema 1",
                   (long long)schema);
  get_str(o, "host", d->host, sizeof d->host);
  get_int(o, "pid", &d->pid);
  get_int(o, "rank", &d->rank);
  get_int(o, "nRanks", &d->nranks);
  get_int(o, "nNodes", &d->nnodes);
  get_int(o, "profilerApi", &d->api);
  get_str(o, "hostLib", d->host_lib, sizeof d->host_lib);
  if (an_json_u64(o, "commHash", &d->comm) == 0) d->has_comm = 1;
  const char* trig = an_json_str(o, "trigger");
  if (trig) d->trigger = an_trigger_parse(trig);
  get_i64(o, "time_ns", &d->time_ns);
  get_i64(o, "stallMs", &d->stall_ms);
  get_i64(o, "round", &d->round);
  get_i64(o, "activeOps", &d->announced_active);
  get_i64(o, "finishedOps", &d->announced_finished);
  get_i64(o, "rotatedDumps", &d->rotated);
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
  int64_t x = 0;
  if (an_json_i64(o, "nBytes", &x) == 0 && x >= 0) op.nbytes = (uint64_t)x;
  get_int(o, "func", &op.func);
  get_int(o, "proto", &op.proto);
  get_int(o, "pattern", &op.pattern);
  if (an_json_i64(o, "totalBytes", &x) == 0 && x >= 0) op.total_bytes = (uint64_t)x;
  if (an_json_i64(o, "chunkSize", &x) == 0 && x >= 0) op.chunk = (uint64_t)x;
  get_str(o, "coll", op.coll, sizeof op.coll);
  get_i64(o, "seq", &op.coll_seq);
  user_tag(o, &op);
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
  op.line = lineno;
  op.input = p->input;

  an_open* od = an_parser_find(p, (uint64_t)seq);
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

static void end_line(an_parser* p, const an_jobj* o, uint32_t lineno) {
  int64_t seq = -1, records = -1;
  get_i64(o, "dumpSeq", &seq);
  get_i64(o, "records", &records);
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

/* A line of a step metrics file (docs/metrics.md): its header, an edge, its
 * end. Edge lines hold hundreds of fields, more than a dump line's parser
 * keeps: the metrics reader (mset.c) takes them whole. */
static int starts(const char* s, const char* prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static int metrics_line(an_parser* p, const char* line) {
  if (!starts(line, "{\"type\":\"metrics\"") && !starts(line, "{\"type\":\"edge\"") &&
      !starts(line, "{\"type\":\"end\",\"edges\""))
    return 0;
  if (pt_mset_line(&p->a->mset, line) < 0) return -1;
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
static void progress_line(an_parser* p, const an_jobj* o, const char* type, uint32_t lineno) {
  int64_t seq = -1;
  get_i64(o, "dumpSeq", &seq);
  an_open* od = an_parser_find(p, (uint64_t)seq);
  if (!od || !od->d) {
    an_input_error(p->a, p->input, lineno, "%s line of dump %lld, which was not opened: skipped", type,
                   (long long)seq);
    return;
  }
  const an_fields f = {.i64 = json_i64, .str = json_str, .src = o};
  if (an_progress_line(p->a, od->d, type, &f, lineno) != 0)
    an_input_error(p->a, p->input, lineno, "out of memory: a progress line is lost");
}

void an_jsonl_line(an_parser* p, const char* line, size_t len, uint32_t lineno) {
  const int m = metrics_line(p, line);
  if (m < 0) an_input_error(p->a, p->input, lineno, "out of memory reading a metrics line: skipped");
  if (m) return;
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
  else if (!strcmp(type, "progress") || !strcmp(type, "coll") || !strcmp(type, "p2p") || !strcmp(type, "kernelCh"))
    progress_line(p, o, type, lineno);
  /* other types: later additions, skipped */
}
