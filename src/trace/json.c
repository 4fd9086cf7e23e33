/*
 * json.c — a snapshot (dump.h) as JSON lines, schema 1 (docs/dump-json.md),
 * and the banner line that starts each dump in a text file.
 *
 * One object per line: a "dump" header, one "op" per record in the order
 * the text dump prints them, an "end" trailer — a dump without its trailer
 * was cut. Integers are printed in full (64-bit, where the legacy line
 * truncates to int), commHash as a decimal string (it may exceed
 * INT64_MAX), times as Unix-epoch nanoseconds or null when never set.
 * Strings are escaped; bytes that are not UTF-8 become U+FFFD.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "format/format.h"
#include "trace/dump.h"
#include "trace/format.h"
#include "trace/jline.h"
#include "trace/numfmt.h"
#include "trace/slab.h"

/* "key":ns or "key":null */
static void put_time(pt_jline* j, const char* key, const pt_clock_cal* cal, uint64_t ticks) {
  if (ticks) pt_jput(j, ",\"%s\":%" PRId64, key, pt_ticks_to_unix_ns(cal, ticks));
  else pt_jput(j, ",\"%s\":null", key);
}

/* The counters in index order with their JSON names, once for both uses
 * below: the name table and the unrolled "counters" object. */
#define COUNTERS(X) PT_FORMAT_COUNTERS(X) /* src/format/format.h */
_Static_assert(PT_CNT_NUM == PT_FORMAT_COUNTER_COUNT && PT_CNT_FIFO_SZ_OR_HEAD_CACHE == 10, "one counter order");

#define NAME_AT(k, name) [k] = PT_NAME(name),
static const pt_name counter_names[PT_CNT_NUM] = {COUNTERS(NAME_AT)};
#undef NAME_AT

static const pt_name* state_name(uint8_t s) {
  static const pt_name names[] = {PT_NAME("active"), PT_NAME("detached"), PT_NAME("finished")};
  return &names[s == PT_SLOT_FINISHED ? 2 : s == PT_SLOT_DETACHED];
}

static const pt_name* origin_name(uint8_t o) {
  static const pt_name names[] = {PT_NAME("none"), PT_NAME("host"), PT_NAME("coll"), PT_NAME("p2p")};
  switch (o) {
    case PT_ORIGIN_HOST: return &names[1];
    case PT_ORIGIN_COLL: return &names[2];
    case PT_ORIGIN_P2P: return &names[3];
    default: return &names[0];
  }
}

static void header(pt_jline* j, const pt_dump* d, const pt_dump_meta* m) {
  /* Hundredths by hand: printf's %f follows the host's LC_NUMERIC, which may
   * print a comma. */
  const long long mb100 = (long long)(d->map_size_mb * 100.0 + 0.5);
  pt_jput(j, "{\"type\":\"dump\",\"schema\":" PT_FORMAT_STR(PT_FORMAT_DUMP_SCHEMA) ",\"tool\":\"proxytrace\",\"version\":\"%d.%d.%d\",\"host\":",
      PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH);
  pt_jput_str(j, m->host, 255);
  pt_jput(j, ",\"pid\":%ld,\"rank\":%d,\"rankFrom\":\"%s\",\"nRanks\":%d,\"nNodes\":%d,\"commHash\":\"%" PRIu64
         "\",\"commName\":",
      m->pid, d->rank, d->rank < 0 || !m->rank_from ? "unknown" : m->rank_from, m->nranks, m->nnodes, m->comm_hash);
  pt_jput_str(j, m->comm_name && *m->comm_name ? m->comm_name : NULL, 255);
  pt_jput(j, ",\"hostLib\":\"%s\",\"profilerApi\":%d,\"clock\":\"%s\",\"trigger\":\"%s\",\"dumpSeq\":%" PRIu64
         ",\"round\":%" PRIu64 ",\"time_ns\":%" PRId64 ",\"activeOps\":%u,\"finishedOps\":%u,"
         "\"mapSizeMB\":%lld.%02lld,\"stallMs\":%u",
      m->host_lib, m->profiler_api, pt_clock_source(), m->trigger, m->seq, m->round, d->time_ns,
      d->n_active, d->n_finished, mb100 / 100, mb100 % 100, m->stall_ms);
  put_time(j, "lastProgress_ns", &d->cal, m->last_progress_ticks);
  pt_jput(j, ",\"diag\":\"%s\",\"maskChangedByHost\":%s,\"maskOff\":%s",
      (d->notes & PT_NOTE_DIAG_MISMATCH) ? "mismatch" : (d->notes & PT_NOTE_DIAG_MISSING) ? "missing" : "ok",
      (d->notes & (PT_NOTE_MASK_CHANGED | PT_NOTE_MASK_OFF)) ? "true" : "false",
      (d->notes & PT_NOTE_MASK_OFF) ? "true" : "false");
  pt_jput(j, ",\"stepUnit\":\"%s\"", pt_dump_step_unit(d, m));
  pt_jput(j, ",\"lostDumps\":%" PRIu64 ",\"rotatedDumps\":%" PRIu64, m->lost_dumps, m->rotated_dumps);
  if (m->episode_seq) pt_jput(j, ",\"stallEpisodeSeq\":%" PRIu64, m->episode_seq);
  else pt_jput(j, ",\"stallEpisodeSeq\":null");
  pt_jput(j, ",\"maxOps\":%u,\"drops\":{", d->nslots);
  for (int i = 0; i < PT_DROP_NUM; i++)
    pt_jput(j, "%s\"%s\":%" PRIu64, i ? "," : "", pt_drop_name((pt_drop_reason)i), d->drops.n[i]);
  pt_jput(j, "}}");
}

/* Appends the literal s. */
#define LIT(q, s) (memcpy((q), s, sizeof s - 1), (q) += sizeof s - 1)

/* ns or null, written at q */
static char* time_ns(char* q, const pt_clock_cal* cal, uint64_t ticks, pt_num_memo* memo) {
  if (ticks) return pt_put_i64_memo(q, pt_ticks_to_unix_ns(cal, ticks), memo);
  LIT(q, "null");
  return q;
}
/* ,"k":ns or ,"k":null */
#define TIME(q, k, cal, t, memo) (LIT((q), ",\"" k "\":"), (q) = time_ns((q), (cal), (t), (memo)))

/* The `len` bytes at s, written earlier in this line, again at q: 16 bytes
 * copied when they fit (numfmt.h's room rule; memmove: s + 16 may reach q). */
static inline char* again(char* q, const char* s, size_t len) {
  if (len <= 16) memmove(q, s, 16);
  else memmove(q, s, len);
  return q + len;
}

/* ,"userTag":"0x…" of a tagged op, or "unknown" when its tag was lost. */
static __attribute__((noinline)) char* user_tag(char* q, const pt_dump* d, const pt_rec_view* v) {
  uint64_t tag;
  LIT(q, ",\"userTag\":\"");
  if (pt_dump_user_tag(d, v, &tag) == 1) {
    static const char hex[] = "0123456789abcdef";
    char digits[16];
    int n = 0;
    do digits[n++] = hex[tag & 15]; while ((tag >>= 4) && n < 16);
    LIT(q, "0x");
    while (n) *q++ = digits[--n];
  } else {
    LIT(q, "unknown");
  }
  *q++ = '"';
  return q;
}

/* One op line, written by hand (numfmt.h) at q: the bytes the printf
 * formats of schema 1 gave, at a fraction of their cost. Its longest form is
 * about 1.3 KiB (fixed names, one key, integers of at most 20 digits):
 * PT_LINES_ROOM holds it. Returns its end. */
/* Ops of origin "host" carry RCCL's rawProxyNsteps and ProxyDiag values,
 * raw steps (RCCL's plugins/profiler/proxytrace/proxytrace_plugin.cc); the others the host's
 * descriptor nSteps and step numbers, whose unit the plugin takes from the
 * profiler API the host bound (src/plugin/host.c). */
static int raw_steps(const pt_dump_meta* m, int origin) { return origin == PT_ORIGIN_HOST || m->stock_raw_steps; }

static char* op(char* q, const pt_dump* d, const pt_dump_entry* e, uint64_t seq, const pt_dump_meta* m,
               pt_line_memo* memo) {
  const pt_rec_view* v = &e->v;
  LIT(q, "{\"type\":\"op\",\"dumpSeq\":");
  q = pt_put_u64(q, seq);
  LIT(q, ",\"rank\":");
  q = pt_put_i64(q, d->rank);
  LIT(q, ",\"peer\":");
  q = pt_put_i64(q, v->peer);
  LIT(q, ",\"channel\":");
  q = pt_put_i64(q, v->channel);
  if (v->op_type == PT_OP_SEND) LIT(q, ",\"dir\":\"send\",\"commHash\":\"");
  else LIT(q, ",\"dir\":\"recv\",\"commHash\":\"");
  const char* hash = q;
  q = pt_put_u64_memo(q, v->comm_hash, &memo->hash);
  const size_t hash_len = (size_t)(q - hash);
  LIT(q, "\",\"opCount\":");
  const char* count = q;
  q = pt_put_i64(q, v->op_count);
  const size_t count_len = (size_t)(q - count);
  LIT(q, ",\"opId\":");
  const char* id = q;
  q = pt_put_i64(q, v->op_id);
  const size_t id_len = (size_t)(q - id);
  /* the key: the same three numbers, copied from where they were just written */
  LIT(q, ",\"key\":\"<");
  q = again(q, hash, hash_len);
  *q++ = ':';
  q = again(q, count, count_len);
  *q++ = ':';
  q = again(q, id, id_len);
  *q++ = '>';
  LIT(q, "\",\"state\":\"");
  q = pt_put_name(q, state_name(e->state));
  LIT(q, "\",\"status\":\"");
  q = pt_put_name(q, pt_status_label(pt_rec_status(v)));
  LIT(q, "\",\"nSteps\":");
  q = pt_put_i64(q, v->nsteps);
  if (raw_steps(m, v->origin)) LIT(q, ",\"stepUnit\":\"rawSteps\"");
  else LIT(q, ",\"stepUnit\":\"transfers\"");
  LIT(q, ",\"nBytes\":");
  q = pt_put_u64_same(q, v->nbytes, &memo->size[0]);
  LIT(q, ",\"func\":");
  q = pt_put_i64(q, v->func_idx);
  LIT(q, ",\"proto\":");
  q = pt_put_i64(q, v->protocol);
  LIT(q, ",\"pattern\":");
  q = pt_put_i64(q, v->pattern);
  LIT(q, ",\"totalBytes\":");
  q = pt_put_u64_same(q, v->total_bytes, &memo->size[1]);
  LIT(q, ",\"chunkSize\":");
  q = pt_put_u64_same(q, v->chunk_size, &memo->size[2]);
  LIT(q, ",\"opCountFrom\":\"");
  q = pt_put_name(q, origin_name(v->origin));
  LIT(q, "\",\"coll\":");
  if (v->origin == PT_ORIGIN_COLL || v->origin == PT_ORIGIN_P2P) {
    *q++ = '"';
    q = pt_put_str(q, v->origin == PT_ORIGIN_COLL ? pt_func_name((int)(v->op_count % PT_FUNC_NUM))
                      : v->op_type == PT_OP_SEND  ? "Send"
                                                  : "Recv");
    LIT(q, "\",\"seq\":");
    q = pt_put_i64(q, v->op_count / PT_FUNC_NUM);
  } else if (v->p2p_seq >= 0) { /* the host's opCount: the parent P2p task's sequence */
    *q++ = '"';
    q = pt_put_str(q, v->op_type == PT_OP_SEND ? "Send" : "Recv");
    LIT(q, "\",\"seq\":");
    q = pt_put_i64(q, v->p2p_seq);
  } else {
    LIT(q, "null,\"seq\":null");
  }
  if (__builtin_expect(v->tag_ref != 0, 0)) q = user_tag(q, d, v);
  /* the names as literals: one store each, no loop over their bytes */
  LIT(q, ",\"counters\":{");
#define COUNTER(k, name) (LIT(q, "\"" name "\":"), q = pt_put_i64(q, v->counters[k]), *q++ = ',');
  COUNTERS(COUNTER)
#undef COUNTER
  q--; /* the last ',' */  LIT(q, "},\"lastCounter\":");
  if (v->last_kind < PT_CNT_NUM) {
    *q++ = '"';
    q = pt_put_name(q, &counter_names[v->last_kind]);
    *q++ = '"';
  } else {
    LIT(q, "null");
  }
  TIME(q, "create_ns", &d->cal, v->t_create, &memo->t[0]);
  TIME(q, "last_ns", &d->cal, v->t_last, &memo->t[1]);
  TIME(q, "posted_ns", &d->cal, v->t_posted, &memo->t[2]);
  TIME(q, "send_ns", &d->cal, v->t_kernel, &memo->t[3]);
  TIME(q, "progress_ns", &d->cal, v->t_progress, &memo->t[4]);
  if (e->mid_write) LIT(q, ",\"midWrite\":true"); /* only then: see docs/dump-json.md */
  *q++ = '}';
  return q;
}


static int print_json(const pt_dump* d, const pt_dump_meta* m, pt_lines* l) {
  char buf[4096]; /* longest line: the header, with a 255-byte host name escaped */
  pt_jline j = {buf, sizeof buf, 0};
  header(&j, d, m);
  pt_lines_put(l, j.b, (int)(j.len < j.cap ? j.len : j.cap - 1));
  pt_line_memo memo = {0};
  for (size_t i = 0; i < d->n; i++) {
    pt_dump_prefetch(d, i + PT_DUMP_PREFETCH);
    char* q = pt_lines_begin(l, PT_LINES_ROOM);
    pt_lines_end(l, op(q, d, pt_dump_at(d, i), m->seq, m, &memo));
  }
  const int progress = pt_progress_json(d, m, l); /* progress_out.c */
  j.len = 0;
  pt_jput(&j, "{\"type\":\"end\",\"dumpSeq\":%" PRIu64 ",\"records\":%zu}", m->seq, d->n);
  pt_lines_put(l, j.b, (int)(j.len < j.cap ? j.len : j.cap - 1));
  return (int)d->n + 2 + progress;
}

int pt_dump_json(const pt_dump* d, const pt_dump_meta* m, pt_line_fn emit, void* arg) {
  pt_lines l = {.emit = emit, .arg = arg};
  return print_json(d, m, &l);
}

int pt_dump_json_out(const pt_dump* d, const pt_dump_meta* m, pt_out* o) {
  pt_lines l = {.o = o};
  return print_json(d, m, &l);
}

const char* pt_step_unit_name(const pt_dump_meta* m, int origin) {
  return raw_steps(m, origin) ? PT_FORMAT_UNIT_RAW_STEPS : PT_FORMAT_UNIT_TRANSFERS;
}

const char* pt_dump_step_unit(const pt_dump* d, const pt_dump_meta* m) {
  const unsigned host = 1u << PT_ORIGIN_HOST;
  const unsigned o = d->origins;
  if (!o) /* no ops: those of an RCCL whose ProxyDiag fields are taken, else stock ones */
    return pt_step_unit_name(m, m->host_lib && !strcmp(m->host_lib, "rccl") &&
                                        !(d->notes & (PT_NOTE_DIAG_MISSING | PT_NOTE_DIAG_MISMATCH))
                                    ? PT_ORIGIN_HOST
                                    : PT_ORIGIN_NONE);
  if (!(o & ~host)) return pt_step_unit_name(m, PT_ORIGIN_HOST);
  if (!(o & host) || m->stock_raw_steps) return pt_step_unit_name(m, PT_ORIGIN_NONE);
  return "mixed";
}

int pt_dump_banner(const pt_dump* d, const pt_dump_meta* m, char* buf, size_t n) {
  return pt_dump_banner_lines(d, m, pt_dump_text_lines(d), buf, n);
}

int pt_dump_banner_lines(const pt_dump* d, const pt_dump_meta* m, int lines, char* buf, size_t n) {
  int len = snprintf(buf, n,
                     "proxytrace dump seq=%" PRIu64 " trigger=%s time_ns=%" PRId64
                     " host=%s pid=%ld rank=%d nRanks=%d commHash=%" PRIu64 " hostLib=%s lines=%d stepUnit=%s",
                     m->seq, m->trigger, d->time_ns, m->host ? m->host : "?", m->pid, d->rank, m->nranks,
                     m->comm_hash, m->host_lib, lines, pt_dump_step_unit(d, m));
  return len < (int)n ? len : (int)n - 1;
}
