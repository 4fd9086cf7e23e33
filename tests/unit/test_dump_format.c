/*
 * test_dump_format.c — the dump's hand-written formatting and binary
 * sort key against what they replace: every integer of a record line and a
 * key, at its extremes and at random, prints the bytes printf prints (the
 * legacy formats, quoted here as the reference), a short buffer gets
 * snprintf's truncation, and a dump prints its records in the byte order of
 * their key strings (strcmp), including negative ids, prefixes ("12" and
 * "123") and keys that differ only in commHash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxytrace/trace.h"
#include "trace/format.h"
#include "trace/numfmt.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_lines_and_keys),
      cmocka_unit_test(test_print_order_is_byte_order),
  };
  return cmocka_run_group_tests_name("dump formatting", tests, NULL, NULL);
}
