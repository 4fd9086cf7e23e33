/*
 * test_dump_format.c — the dump's hand-written formatting and binary
 * sort key against what they replace: every integer of a record line and a
 * key, at its extremes and at random, prints the bytes printf prints (the
 * legacy formats, quoted here as the reference), also through the memo that
 * successive lines share; a short buffer gets snprintf's truncation; the
 * radix sort of the binary keys gives the order qsort gives the key strings
 * by strcmp, equal keys in their given order; every text and JSON line of a
 * dump of many records is the printf reference of its snapshot entry; and
 * a dump prints its records in the byte order of their key strings,
 * including negative ids, prefixes ("12" and "123") and keys that differ
 * only in commHash.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <inttypes.h>

#include "proxytrace/trace.h"
#include "trace/dump.h"
#include "trace/format.h"
#include "trace/numfmt.h"
#include "trace/order.h"
#include "trace/slab.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* A value of every width: 0, extremes, or random with a random digit count. */
static uint64_t any_u64(void) {
  static const uint64_t edge[] = {0, 1, 9, 10, 99, 100, 4294967295ull, 9223372036854775807ull,
                                  9223372036854775808ull, 18446744073709551615ull};
  uint64_t r = next();
  if (r % 4 == 0) return edge[(r >> 8) % (sizeof edge / sizeof edge[0])];
  return next() >> (r % 64);
}

static void test_integers(void** state) {
  (void)state;
  for (int i = 0; i < 200000; i++) {
    uint64_t u = any_u64();
    char a[32], b[32];
    *pt_put_u64(a, u) = 0;
    snprintf(b, sizeof b, "%llu", (unsigned long long)u);
    assert_string_equal(a, b);
    int64_t s = (int64_t)u;
    *pt_put_i64(a, s) = 0;
    snprintf(b, sizeof b, "%lld", (long long)s);
    assert_string_equal(a, b);
    snprintf(b, sizeof b, "%llu", (unsigned long long)u);
    assert_int_equal(pt_num_digits(u), strlen(b));
  }
}

/* Through the memos: runs of values that share their digits above 10^8,
 * and values that do not, in any order; sizes that repeat or change. */
static void test_integers_memo(void** state) {
  (void)state;
  pt_num_memo mu = {0}, mi = {0};
  uint64_t base = 1764000000000000000ull;
  for (int i = 0; i < 200000; i++) {
    uint64_t r = next();
    uint64_t u = r % 3 == 0 ? any_u64() : base + (next() % 300000000ull);
    if (r % 97 == 0) base = any_u64() >> 1;
    char a[32], b[32];
    *pt_put_u64_memo(a, u, &mu) = 0;
    snprintf(b, sizeof b, "%llu", (unsigned long long)u);
    assert_string_equal(a, b);
    int64_t s = (int64_t)(r % 5 == 0 ? u : u >> 1);
    *pt_put_i64_memo(a, s, &mi) = 0;
    snprintf(b, sizeof b, "%lld", (long long)s);
    assert_string_equal(a, b);
    /* sizes: repeated, or any (the memo of the last value below 10^8) */
    static pt_size_memo ms;
    static uint64_t size = 1 << 20;
    if (r % 7 == 0) size = r % 11 == 0 ? any_u64() : next() % 200000000;
    *pt_put_u64_same(a, size, &ms) = 0;
    snprintf(b, sizeof b, "%llu", (unsigned long long)size);
    assert_string_equal(a, b);
  }
}

static void fill(pt_rec_view* v) {
  v->op_type = next() & 1 ? PT_OP_SEND : PT_OP_RECV;
  v->last_kind = (uint8_t)next();
  v->window = (uint8_t)next();
  v->channel = (int32_t)any_u64();
  v->nsteps = (int32_t)any_u64();
  v->peer = (int32_t)any_u64();
  v->nbytes = (uint32_t)any_u64();
  v->comm_hash = any_u64();
  v->op_count = (int64_t)any_u64();
  v->op_id = (int64_t)any_u64();
  v->func_idx = (int32_t)any_u64();
  v->protocol = (int32_t)any_u64();
  v->pattern = (int32_t)any_u64();
  v->total_bytes = (uint32_t)any_u64();
  v->chunk_size = (uint32_t)any_u64();
  for (int k = 0; k < PT_CNT_NUM; k++) v->counters[k] = (int64_t)any_u64();
  v->t_create = any_u64() >> 1;
  v->t_last = any_u64() >> 1;
  v->t_posted = any_u64() >> 1;
  v->t_kernel = any_u64() >> 1;
}

/* The legacy line, as RCCL's printf prints it (src/misc/proxytrace.cc). */
static int reference_line(char* buf, size_t n, const pt_rec_view* v, const char* key, int rank,
                          const pt_clock_cal* cal) {
  const int64_t* c = v->counters;
  return snprintf(
      buf, n,
      "createT:%lld, lastT:%lld, postT:%lld, sendT:%lld, cntNm:%d, %s, "
      "[fu,pr,pa,tb,ck]:%d,%d,%d,%u,%u, %d->%d(%s), chan:%d, status:%s, ns:%d, nb:%u, "
      "po:%lld, ke:%lld, tail/h:%lld, recvT:%lld, connSz/h:%lld, trans:%lld, flushed:%lld, "
      "recvd:%lld, done:%lld",
      (long long)pt_ticks_to_unix_ms(cal, v->t_create), (long long)pt_ticks_to_unix_ms(cal, v->t_last),
      (long long)pt_ticks_to_unix_ms(cal, v->t_posted), (long long)pt_ticks_to_unix_ms(cal, v->t_kernel),
      (int)v->last_kind, key, v->func_idx, v->protocol, v->pattern, v->total_bytes, v->chunk_size, rank,
      v->peer, v->op_type == PT_OP_SEND ? "S" : "R", v->channel, pt_status_name(pt_rec_status(v)),
      v->nsteps, v->nbytes, (long long)c[PT_CNT_POSTED], (long long)c[PT_CNT_KERNEL_COPY_READY],
      (long long)c[PT_CNT_TAIL_OR_HEAD], (long long)c[PT_CNT_RECV_TAIL],
      (long long)c[PT_CNT_FIFO_SZ_OR_HEAD_CACHE], (long long)c[PT_CNT_TRANSMITTED],
      (long long)c[PT_CNT_FLUSHED], (long long)c[PT_CNT_RECEIVED], (long long)c[PT_CNT_DONE]);
}

static void test_lines_and_keys(void** state) {
  (void)state;
  const pt_clock_cal cal = {.tick0 = 1000, .real_ns0 = 1750000000000ll * 1000000ll, .ns_per_tick = 0.37};
  for (int i = 0; i < 20000; i++) {
    pt_rec_view v;
    memset(&v, 0, sizeof v);
    fill(&v);
    char key[PT_KEY_MAX], ref_key[PT_KEY_MAX];
    int kn = pt_format_key(key, sizeof key, &v);
    int rn = snprintf(ref_key, sizeof ref_key, "<%llu:%lld:%lld>", (unsigned long long)v.comm_hash,
                      (long long)v.op_count, (long long)v.op_id);
    assert_int_equal(kn, rn);
    assert_string_equal(key, ref_key);
    char line[PT_LINE_MAX], ref[PT_LINE_MAX + 256];
    const int rank = (int)any_u64();
    int ln = pt_format_record(line, sizeof line, &v, key, rank, &cal);
    int refn = reference_line(ref, sizeof ref, &v, key, rank, &cal);
    assert_true(refn < PT_LINE_MAX); /* the widest line fits */
    assert_int_equal(ln, refn);
    assert_string_equal(line, ref);
    /* a short buffer: snprintf's truncation, full length returned */
    char small[40], ref_small[40];
    ln = pt_format_record(small, sizeof small, &v, key, rank, &cal);
    refn = reference_line(ref_small, sizeof ref_small, &v, key, rank, &cal);
    assert_int_equal(ln, refn);
    assert_string_equal(small, ref_small);
    kn = pt_format_key(small, 8, &v);
    rn = snprintf(ref_small, 8, "%s", ref_key);
    assert_int_equal(kn, rn);
    assert_string_equal(small, ref_small);
  }
}

/* ---- print order ---- */

typedef struct {
  char keys[4096][PT_KEY_MAX];
  int n;
} key_list;

static void collect_key(void* arg, const char* line, int len) {
  key_list* k = arg;
  const char* lt = memchr(line, '<', (size_t)len);
  if (!lt || strncmp(line, "createT:", 8) != 0) return;
  const char* gt = memchr(lt, '>', (size_t)(line + len - lt));
  assert_non_null(gt);
  assert_true(k->n < 4096);
  memcpy(k->keys[k->n], lt, (size_t)(gt - lt + 1));
  k->keys[k->n][gt - lt + 1] = 0;
  k->n++;
}

static void test_print_order_is_byte_order(void** state) {
  (void)state;
  static const int64_t counts[] = {0, 1, 2, 9, 10, 12, 100, 123, 1234, 99, 1000000007, -1, -12, -2,
                                   INT64_MAX, INT64_MIN};
  static const uint64_t hashes[] = {1, 12, 123, 2, 18446744073709551615ull, 10};
  pt_trace* t;
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 2048;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  int started = 0;
  for (size_t h = 0; h < sizeof hashes / sizeof hashes[0]; h++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
      for (int rep = 0; rep < 3; rep++) { /* ids 0, 1, 2 of one (hash, opCount) */
        pt_op_info info = {.comm_hash = hashes[h], .op_count = counts[c], .peer = 1, .nsteps = 8,
                           .is_send = rep & 1};
        pt_handle op = pt_op_start(t, &info);
        assert_non_null(op);
        pt_op_register(op);
        started++;
      }
  static key_list got;
  got.n = 0;
  assert_true(pt_trace_dump(t, collect_key, &got) > 0);
  assert_int_equal(got.n, started);
  for (int i = 1; i < got.n; i++)
    if (strcmp(got.keys[i - 1], got.keys[i]) > 0)
      fail_msg("%s printed before %s", got.keys[i - 1], got.keys[i]);
  pt_trace_destroy(t);
}

/* The finished ring merged among live records copied in print order: every
 * key printed in byte order, a finished record before a live one of the
 * same key, finished ones of one key in completion order, live ones of one
 * key in slot order. Finished keys fall before the first live key, between
 * live keys, on live keys and after the last one. */
typedef struct {
  int n;
  char key[2560][PT_KEY_MAX];
  char state[2560][16];
  int peer[2560];
} json_ops;

static void collect_op(void* arg, const char* line, int len) {
  json_ops* o = arg;
  (void)len;
  if (strncmp(line, "{\"type\":\"op\"", 12) != 0) return;
  assert_true(o->n < 2560);
  const char* k = strstr(line, "\"key\":\"");
  const char* st = strstr(line, "\"state\":\"");
  const char* pe = strstr(line, "\"peer\":");
  assert_true(k && st && pe);
  assert_int_equal(sscanf(k + 7, "%[^\"]", o->key[o->n]), 1);
  assert_int_equal(sscanf(st + 9, "%15[^\"]", o->state[o->n]), 1);
  o->peer[o->n] = atoi(pe + 7);
  o->n++;
}

static pt_handle start_op(pt_trace* t, uint64_t hash, int64_t count, int peer) {
  pt_op_info info = {.comm_hash = hash, .op_count = count, .peer = peer, .nsteps = 1, .is_send = 1};
  pt_handle h = pt_op_start(t, &info);
  assert_non_null(h);
  pt_op_register(h);
  return h;
}

static void finish_op(pt_handle h) {
  pt_op_update(h, PT_CNT_DONE, 1, 0);
  pt_handle_stop(h);
}

static void test_ring_merged_in_print_order(void** state) {
  (void)state;
  pt_trace* t;
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 256;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  /* finished: <7:5:0> twice (peers 1, 2: the id restarts once its bucket
   * empties), <7:0:0>, <7:3:0>, <7:9:0>; live: <7:5:0> (peer 3), <7:2:0>,
   * <7:4:0>, <7:10:0>, <7:5:1> (peer 5: the bucket is live again) */
  finish_op(start_op(t, 7, 5, 1));
  finish_op(start_op(t, 7, 9, 10));
  start_op(t, 7, 4, 20);
  finish_op(start_op(t, 7, 5, 2));
  finish_op(start_op(t, 7, 0, 11));
  start_op(t, 7, 5, 3);
  start_op(t, 7, 10, 21);
  start_op(t, 7, 2, 22);
  finish_op(start_op(t, 7, 3, 12));
  start_op(t, 7, 5, 5);
  static const struct {
    const char* key;
    const char* state;
    int peer;
  } want[] = {{"<7:0:0>", "finished", 11}, {"<7:10:0>", "active", 21}, {"<7:2:0>", "active", 22},
              {"<7:3:0>", "finished", 12}, {"<7:4:0>", "active", 20},  {"<7:5:0>", "finished", 1},
              {"<7:5:0>", "finished", 2},  {"<7:5:0>", "active", 3},   {"<7:5:1>", "active", 5},
              {"<7:9:0>", "finished", 10}};
  pt_dump* d = pt_trace_snapshot(t);
  assert_non_null(d);
  static json_ops got;
  got.n = 0;
  pt_dump_meta m = {.host = "h", .host_lib = "rccl", .trigger = "test", .seq = 1};
  pt_dump_json(d, &m, collect_op, &got);
  pt_dump_free(d);
  assert_int_equal(got.n, (int)(sizeof want / sizeof want[0]));
  for (int i = 0; i < got.n; i++) {
    assert_string_equal(got.key[i], want[i].key);
    assert_string_equal(got.state[i], want[i].state);
    assert_int_equal(got.peer[i], want[i].peer);
  }
  pt_trace_destroy(t);
}

/* Dumps taken while the proxy thread starts and finishes ops (slots reused
 * by ops of other keys between a snapshot's order and its copies, which
 * then orders the copies again): each dump's keys in byte order, finished
 * before live among equal keys. */
typedef struct {
  pt_trace* t;
  _Atomic int stop;
  _Atomic uint64_t ops; /* started so far */
} churn_arg;

static void* churn(void* p) {
  churn_arg* a = p;
  pt_handle live[64] = {0};
  /* never finished: every dump has them, and copies them while the churn
   * goes on (this thread writes the trace: one writer per trace) */
  for (int i = 0; i < 2000; i++) { /* no cmocka assertion off the test's thread: the dumps count them */
    pt_op_info info = {.comm_hash = 3, .op_count = 1000 + i, .peer = 2, .nsteps = 1, .is_send = 1};
    pt_handle h = pt_op_start(a->t, &info);
    if (h) pt_op_register(h);
  }
  for (uint64_t i = 0; !atomic_load(&a->stop); i++) {
    atomic_store(&a->ops, i);
    const unsigned s = (unsigned)(i * 7919u % 64u);
    if (live[s]) finish_op(live[s]);
    pt_op_info info = {.comm_hash = 3, .op_count = (int64_t)(i % 1000), .peer = 1, .nsteps = 1, .is_send = 1};
    live[s] = pt_op_start(a->t, &info);
    if (live[s]) pt_op_register(live[s]);
  }
  for (int s = 0; s < 64; s++)
    if (live[s]) finish_op(live[s]);
  return NULL;
}

static void test_order_under_churn(void** state) {
  (void)state;
  churn_arg a = {0};
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 2000 + 64; /* no spare slot: a finished op's slot is the next op's */
  assert_int_equal(pt_trace_create(&a.t, &cfg, 0), 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, churn, &a), 0);
  while (atomic_load(&a.ops) < 1000) sched_yield(); /* under way */
  pt_dump_meta m = {.host = "h", .host_lib = "rccl", .trigger = "test", .seq = 1};
  static json_ops got;
  for (int dump = 0; dump < 100; dump++) {
    pt_dump* d = pt_trace_snapshot(a.t);
    assert_non_null(d);
    got.n = 0;
    pt_dump_json(d, &m, collect_op, &got);
    pt_dump_free(d);
    assert_true(got.n >= 2000);
    for (int i = 1; i < got.n; i++) {
      const int c = strcmp(got.key[i - 1], got.key[i]);
      if (c > 0 || (c == 0 && strcmp(got.state[i - 1], "finished") != 0 && strcmp(got.state[i], "finished") == 0))
        fail_msg("dump %d: %s (%s) printed before %s (%s)", dump, got.key[i - 1], got.state[i - 1], got.key[i],
                 got.state[i]);
    }
  }
  atomic_store(&a.stop, 1);
  pthread_join(th, NULL);
  pt_trace_destroy(a.t);
}

/* ---- the radix sort against qsort of the key strings ---- */

typedef struct {
  char s[PT_KEY_MAX];
  uint32_t pos; /* the tie order */
} ref_key;

static int ref_cmp(const void* a, const void* b) {
  const ref_key *x = a, *y = b;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* n keys drawn by `draw`, given to the sort in a shuffled tie order. */
static void check_sort(size_t n, void (*draw)(pt_rec_view*)) {
  pt_rec_view* v = calloc(n ? n : 1, sizeof *v);
  pt_order_key* k = calloc(n ? n : 1, sizeof *k);
  uint32_t* ord = calloc(n ? n : 1, sizeof *ord);
  ref_key* ref = calloc(n ? n : 1, sizeof *ref);
  void* scratch = malloc(pt_order_scratch_bytes(n) + 8);
  assert_true(v && k && ord && ref && scratch);
  pt_order_cache cache = {0};
  for (size_t i = 0; i < n; i++) {
    draw(&v[i]);
    pt_order_key_make(&k[i], &v[i], &cache);
    ord[i] = (uint32_t)i;
  }
  for (size_t i = n; i > 1; i--) { /* a tie order that is not the index order */
    size_t j = next() % i;
    uint32_t t = ord[i - 1];
    ord[i - 1] = ord[j];
    ord[j] = t;
  }
  for (size_t p = 0; p < n; p++) {
    pt_format_key(ref[p].s, sizeof ref[p].s, &v[ord[p]]);
    ref[p].pos = (uint32_t)p;
  }
  uint32_t* given = malloc((n ? n : 1) * sizeof *given);
  assert_non_null(given);
  memcpy(given, ord, n * sizeof *ord);
  pt_order_sort(k, n, ord, scratch);
  qsort(ref, n, sizeof *ref, ref_cmp);
  for (size_t i = 0; i < n; i++) {
    char got[PT_KEY_MAX];
    pt_format_key(got, sizeof got, &v[ord[i]]);
    if (strcmp(got, ref[i].s) != 0 || ord[i] != given[ref[i].pos])
      fail_msg("position %zu of %zu: %s (index %u), expected %s (index %u)", i, n, got, ord[i], ref[i].s,
               given[ref[i].pos]);
  }
  free(given);
  free(scratch);
  free(ref);
  free(ord);
  free(k);
  free(v);
}

/* One communicator: one commHash, short opCounts and ids, many equal keys. */
static void draw_narrow(pt_rec_view* v) {
  memset(v, 0, sizeof *v);
  v->comm_hash = 0x1234567890abcdefull;
  v->op_count = (int64_t)(next() % 3000);
  v->op_id = (int64_t)(next() % 20);
}

/* Anything: every width, negatives, a few commHashes (more than eight
 * bytes of the key vary: several groups of radix passes). */
static void draw_wide(pt_rec_view* v) {
  static const uint64_t hashes[] = {1, 12, 123, 2, 18446744073709551615ull, 10, 9223372036854775808ull};
  memset(v, 0, sizeof *v);
  v->comm_hash = next() % 4 ? hashes[next() % 7] : any_u64();
  v->op_count = (int64_t)any_u64();
  v->op_id = next() % 3 ? (int64_t)(next() % 40) - 20 : (int64_t)any_u64();
}

/* Prefixes of each other: "1", "10", "100", "19", "2", "-1", "-10" ... */
static void draw_prefixes(pt_rec_view* v) {
  static const int64_t vals[] = {0, 1, 10, 100, 1000, 19, 199, 2, 20, -1, -10, -100, -19, -2, 9, 99, 999,
                                 INT64_MAX, INT64_MIN, 1000000000000000000ll};
  memset(v, 0, sizeof *v);
  v->comm_hash = next() % 2 ? 1 : 10;
  v->op_count = vals[next() % 20];
  v->op_id = vals[next() % 20];
}

static void draw_same(pt_rec_view* v) {
  memset(v, 0, sizeof *v);
  v->comm_hash = 5;
  v->op_count = 12;
  v->op_id = -3;
}

static void test_sort_matches_qsort(void** state) {
  (void)state;
  check_sort(0, draw_narrow);
  check_sort(1, draw_wide);
  check_sort(2, draw_prefixes);
  for (int rep = 0; rep < 5; rep++) {
    check_sort(1 + next() % 300, draw_prefixes);
    check_sort(20000, draw_narrow);
    check_sort(20000, draw_wide);
    check_sort(5000, draw_prefixes);
  }
  /* all keys equal: the given order stays */
  check_sort(100, draw_same);
}

/* ---- every line of a dump against its printf reference ---- */

typedef struct {
  char* buf;
  size_t n, cap;
  int lines;
  size_t* starts;
} line_sink;

static void keep_line(void* arg, const char* line, int len) {
  line_sink* s = arg;
  assert_true(s->n + (size_t)len + 1 <= s->cap);
  s->starts[s->lines++] = s->n;
  memcpy(s->buf + s->n, line, (size_t)len);
  s->n += (size_t)len;
  s->buf[s->n++] = 0;
}

static void put_time_ref(char* b, size_t n, const char* key, const pt_clock_cal* cal, uint64_t ticks) {
  size_t l = strlen(b);
  if (ticks) snprintf(b + l, n - l, ",\"%s\":%" PRId64, key, pt_ticks_to_unix_ns(cal, ticks));
  else snprintf(b + l, n - l, ",\"%s\":null", key);
}

/* The op line of schema 1 as printf formats (docs/dump-json.md). */
static void reference_json(char* b, size_t n, const pt_dump* d, const pt_dump_entry* e, uint64_t seq,
                           int stock_raw) {
  static const char* const names[PT_CNT_NUM] = {"posted",      "kernelCopyReady", "rtrRecv",  "rtsSend",
                                                "received",    "transmitted",     "flushed",  "done",
                                                "recvTail",    "tailOrHead",      "fifoSzOrHeadCache"};
  const pt_rec_view* v = &e->v;
  char key[PT_KEY_MAX];
  pt_format_key(key, sizeof key, v);
  const char* origin = v->origin == PT_ORIGIN_HOST ? "host" : v->origin == PT_ORIGIN_COLL ? "coll"
                     : v->origin == PT_ORIGIN_P2P  ? "p2p"
                                                   : "none";
  int l = snprintf(b, n,
                   "{\"type\":\"op\",\"dumpSeq\":%" PRIu64 ",\"rank\":%d,\"peer\":%d,\"channel\":%d,\"dir\":\"%s\","
                   "\"commHash\":\"%" PRIu64 "\",\"opCount\":%" PRId64 ",\"opId\":%" PRId64 ",\"key\":\"%s\","
                   "\"state\":\"%s\",\"status\":\"%s\",\"nSteps\":%d,\"stepUnit\":\"%s\",\"nBytes\":%u,\"func\":%d,\"proto\":%d,"
                   "\"pattern\":%d,\"totalBytes\":%u,\"chunkSize\":%u,\"opCountFrom\":\"%s\",\"coll\":",
                   seq, d->rank, v->peer, v->channel, v->op_type == PT_OP_SEND ? "send" : "recv", v->comm_hash,
                   v->op_count, v->op_id, key,
                   e->state == PT_SLOT_FINISHED   ? "finished"
                   : e->state == PT_SLOT_DETACHED ? "detached"
                                                  : "active",
                   pt_status_name(pt_rec_status(v)), v->nsteps,
                   v->origin == PT_ORIGIN_HOST || stock_raw ? "rawSteps" : "transfers", v->nbytes, v->func_idx, v->protocol, v->pattern,
                   v->total_bytes, v->chunk_size, origin);
  if (v->origin == PT_ORIGIN_COLL)
    l += snprintf(b + l, n - (size_t)l, "\"%s\",\"seq\":%" PRId64, pt_func_name((int)(v->op_count % PT_FUNC_NUM)),
                  v->op_count / PT_FUNC_NUM);
  else if (v->origin == PT_ORIGIN_P2P)
    l += snprintf(b + l, n - (size_t)l, "\"%s\",\"seq\":%" PRId64, v->op_type == PT_OP_SEND ? "Send" : "Recv",
                  v->op_count / PT_FUNC_NUM);
  else
    l += snprintf(b + l, n - (size_t)l, "null,\"seq\":null");
  l += snprintf(b + l, n - (size_t)l, ",\"counters\":{");
  for (int k = 0; k < PT_CNT_NUM; k++)
    l += snprintf(b + l, n - (size_t)l, "%s\"%s\":%" PRId64, k ? "," : "", names[k], v->counters[k]);
  l += snprintf(b + l, n - (size_t)l, "},\"lastCounter\":");
  if (v->last_kind < PT_CNT_NUM) snprintf(b + l, n - (size_t)l, "\"%s\"", names[v->last_kind]);
  else snprintf(b + l, n - (size_t)l, "null");
  put_time_ref(b, n, "create_ns", &d->cal, v->t_create);
  put_time_ref(b, n, "last_ns", &d->cal, v->t_last);
  put_time_ref(b, n, "posted_ns", &d->cal, v->t_posted);
  put_time_ref(b, n, "send_ns", &d->cal, v->t_kernel);
  put_time_ref(b, n, "progress_ns", &d->cal, v->t_progress);
  l = (int)strlen(b);
  snprintf(b + l, n - (size_t)l, "%s}", e->mid_write ? ",\"midWrite\":true" : "");
}

/* A dump file's buffer of the smallest size, flushed into one string. */
typedef struct {
  char* all;
  size_t n, cap;
  int flushes;
} flushed;

static void flush_into(pt_out* o) {
  flushed* f = o->arg;
  assert_true(f->n + o->len <= f->cap);
  memcpy(f->all + f->n, o->buf, o->len);
  f->n += o->len;
  f->flushes++;
  o->len = 0;
}

/* The lines a pt_line_fn got, each with its newline: what the buffer path
 * must hold. */
static void joined(const line_sink* s, int first, char* out, size_t* n) {
  *n = 0;
  for (int i = first; i < s->lines; i++) {
    size_t l = strlen(s->buf + s->starts[i]);
    memcpy(out + *n, s->buf + s->starts[i], l);
    *n += l;
    out[(*n)++] = '\n';
  }
}

static void test_dump_lines_match_printf(void** state) {
  (void)state;
  const uint32_t nops = 3000;
  pt_trace* t;
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = nops;
  assert_int_equal(pt_trace_create(&t, &cfg, 5), 0);
  for (uint32_t i = 0; i < nops; i++) {
    pt_op_info info = {.comm_hash = i % 7 ? 0xfeedfacecafebeefull : any_u64(),
                       .op_count = (int64_t)(next() % 500) - 3,
                       .channel = (int)(next() % 64),
                       .peer = (int)(next() % 1024),
                       .nsteps = (int)(next() % 200) + 1,
                       .is_send = (int)(i & 1),
                       .nbytes = (uint32_t)any_u64(),
                       .func_idx = (int)(next() % 16),
                       .protocol = (int)(next() % 3),
                       .pattern = (int)(next() % 9),
                       .total_bytes = (uint32_t)any_u64(),
                       .chunk_size = (uint32_t)any_u64()};
    pt_handle h = pt_op_start(t, &info);
    assert_non_null(h);
    pt_op_register(h);
    for (unsigned k = 0; k < PT_CNT_NUM; k++)
      if (next() % 3) pt_op_update(h, k, (int64_t)any_u64(), next() % 2 ? PT_FLAG_TIMESTAMP : 0);
    if (i % 5 == 0) { /* some complete: the finished ring */
      pt_op_update(h, PT_CNT_POSTED, info.nsteps, PT_FLAG_TIMESTAMP);
      pt_op_update(h, PT_CNT_DONE, info.nsteps, PT_FLAG_TIMESTAMP);
    }
  }
  pt_dump* d = pt_trace_snapshot(t);
  assert_non_null(d);
  assert_true(d->n > nops / 2);
  static char text[8 << 20], json[16 << 20];
  static size_t text_starts[8192], json_starts[8192];
  line_sink ts = {text, 0, sizeof text, 0, text_starts}, js = {json, 0, sizeof json, 0, json_starts};
  /* names at their longest once escaped: a header line of about 2.7 KiB */
  static char host[256], name[256];
  memset(host, 0xff, 255);
  memset(name, '"', 255);
  pt_dump_meta m = {.host = host, .pid = 1, .comm_hash = 1, .comm_name = name, .host_lib = "rccl",
                    .trigger = "api", .seq = 9};
  assert_true(d->n + 8 < 8192);
  const int tl = pt_dump_text(d, keep_line, &ts);
  const int jl = pt_dump_json(d, &m, keep_line, &js);
  assert_int_equal(jl, (int)d->n + 2);
  const int first_text = tl - (int)d->n; /* header (and drops) before the records */
  assert_true(first_text >= 1);
  char ref[4096];
  for (size_t i = 0; i < d->n; i++) {
    const pt_dump_entry* e = pt_dump_at(d, i);
    char key[PT_KEY_MAX];
    pt_format_key(key, sizeof key, &e->v);
    reference_line(ref, sizeof ref, &e->v, key, d->rank, &d->cal);
    assert_string_equal(text + text_starts[first_text + (int)i], ref);
    reference_json(ref, sizeof ref, d, e, m.seq, m.stock_raw_steps);
    assert_string_equal(json + json_starts[1 + i], ref);
  }
  /* the same bytes written in place into a file's buffer, flushed when full */
  static char want[16 << 20], got[16 << 20], obuf[PT_OUT_MIN];
  size_t wn;
  flushed f = {got, 0, sizeof got, 0};
  pt_out o = {.buf = obuf, .cap = sizeof obuf, .flush = flush_into, .arg = &f};
  assert_int_equal(pt_dump_text_out(d, &o), tl);
  flush_into(&o);
  joined(&ts, 0, want, &wn);
  assert_true(f.flushes > 10);
  assert_int_equal(f.n, wn);
  assert_memory_equal(got, want, wn);
  f = (flushed){got, 0, sizeof got, 0};
  assert_int_equal(pt_dump_json_out(d, &m, &o), jl);
  flush_into(&o);
  joined(&js, 0, want, &wn);
  assert_int_equal(f.n, wn);
  assert_memory_equal(got, want, wn);
  assert_true(strlen(json) > 2500); /* the header, whole: longer than a record line may be */
  pt_dump_free(d);
  pt_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_integers_memo),
      cmocka_unit_test(test_sort_matches_qsort),
      cmocka_unit_test(test_dump_lines_match_printf),
      cmocka_unit_test(test_lines_and_keys),
      cmocka_unit_test(test_print_order_is_byte_order),
      cmocka_unit_test(test_ring_merged_in_print_order),
      cmocka_unit_test(test_order_under_churn),
  };
  return cmocka_run_group_tests_name("dump formatting", tests, NULL, NULL);
}
