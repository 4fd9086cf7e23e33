/*
 * test_core.c — the trace core on its own: status rules, the proxyOpId
 * table, the record line, handle checks and the bounded slab.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/plugin.h"
#include "proxytrace/trace.h"
#include "trace/format.h"
#include "trace/idmap.h"
#include "trace/slab.h"

/* ---- status rules, spec §3.6 ---- */

static void test_status_send(void** state) {
  (void)state;
  /* posted < N and posted < done + 8 */
  assert_int_equal(pt_status_of(PT_OP_SEND, 3, 0, 0, 0, 16, 0), PT_STATUS_POSTING);
  assert_int_equal(pt_status_of(PT_OP_SEND, 8, 0, 0, 0, 16, 0), PT_STATUS_WAITING_GPU);
  assert_int_equal(pt_status_of(PT_OP_SEND, 10, 0, 4, 3, 16, 0), PT_STATUS_POSTING);
  assert_int_equal(pt_status_of(PT_OP_SEND, 16, 0, 12, 10, 16, 0), PT_STATUS_WAITING_GPU);
  assert_int_equal(pt_status_of(PT_OP_SEND, 16, 0, 16, 10, 16, 0), PT_STATUS_SENDING);
  assert_int_equal(pt_status_of(PT_OP_SEND, 16, 0, 16, 16, 16, 0), PT_STATUS_DONE);
  /* a fresh op computes to POSTING, never INIT */
  assert_int_equal(pt_status_of(PT_OP_SEND, 0, 0, 0, 0, 4, 0), PT_STATUS_POSTING);
  /* counted in transfers of 2 raw steps: a window of 4 is full at done + 4 */
  assert_int_equal(pt_status_of(PT_OP_SEND, 7, 0, 3, 3, 28, 4), PT_STATUS_WAITING_GPU);
  assert_int_equal(pt_status_of(PT_OP_SEND, 7, 0, 3, 3, 28, 0), PT_STATUS_POSTING);
  assert_int_equal(pt_status_of(PT_OP_SEND, 6, 0, 3, 3, 28, 4), PT_STATUS_POSTING);
  /* done near INT_MAX (any ProxyDiag value; fuzz_abi): done + 8 wraps as
   * legacy's int sum, no signed overflow (UBSan stops on one) */
  assert_int_equal(pt_status_of(PT_OP_SEND, 10, 0, 4, 2147483646, 16, 0), PT_STATUS_WAITING_GPU);
  assert_int_equal(pt_status_of(PT_OP_SEND, 10, 0, 4, 2147483646, 16, 4), PT_STATUS_WAITING_GPU);
  assert_int_equal(pt_status_of(PT_OP_RECV, 10, 0, 4, 2147483600, 16, 0), PT_STATUS_POSTING);
}

static void test_status_recv(void** state) {
  (void)state;
  assert_int_equal(pt_status_of(PT_OP_RECV, 2, 0, 0, 0, 16, 0), PT_STATUS_POSTING);
  assert_int_equal(pt_status_of(PT_OP_RECV, 8, 4, 0, 0, 16, 0), PT_STATUS_RECEIVING);
  assert_int_equal(pt_status_of(PT_OP_RECV, 8, 8, 9, 0, 16, 0), PT_STATUS_RECEIVING);
  assert_int_equal(pt_status_of(PT_OP_RECV, 8, 8, 6, 0, 16, 0), PT_STATUS_FLUSHING);
  assert_int_equal(pt_status_of(PT_OP_RECV, 12, 12, 12, 4, 16, 0), PT_STATUS_WAITING_GPU);
  assert_int_equal(pt_status_of(PT_OP_RECV, 16, 16, 16, 16, 16, 0), PT_STATUS_DONE);
  /* counters compare as int, as legacy casts them */
  assert_int_equal(pt_status_of(PT_OP_RECV, 0x100000002ll, 0, 0, 0, 16, 0), PT_STATUS_POSTING);
}

static void test_status_names(void** state) {
  (void)state;
  assert_string_equal(pt_status_name(PT_STATUS_WAITING_GPU), "WAITING_GPU");
  assert_string_equal(pt_status_name(PT_STATUS_UNINITIALIZED), "ILLEGAL");
  assert_string_equal(pt_status_name((pt_status)99), "");
}

/* ---- proxyOpId table ---- */

static void test_idmap_restart(void** state) {
  (void)state;
  pt_idmap m;
  assert_int_equal(pt_idmap_init(&m, 16), 0);
  assert_int_equal(pt_idmap_acquire(&m, 1, 6), 0);
  assert_int_equal(pt_idmap_acquire(&m, 1, 6), 1);
  assert_int_equal(pt_idmap_acquire(&m, 1, 7), 0);
  assert_int_equal(pt_idmap_acquire(&m, 2, 6), 0);
  assert_int_equal(m.buckets, 3);
  pt_idmap_release(&m, 1, 6);
  assert_int_equal(pt_idmap_acquire(&m, 1, 6), 2); /* bucket still live: ids go on */
  pt_idmap_release(&m, 1, 6);
  pt_idmap_release(&m, 1, 6);
  assert_int_equal(m.buckets, 2);
  assert_int_equal(pt_idmap_acquire(&m, 1, 6), 0); /* emptied: restart at 0 */
  pt_idmap_release(&m, 9, 9); /* absent: no effect */
  assert_int_equal(m.buckets, 3);
  pt_idmap_free(&m);
}

/* Random churn against a plain reference table: deletion must never lose a
 * bucket that sits later in a probe run. */
static void test_idmap_churn(void** state) {
  (void)state;
  enum { N = 64 };
  pt_idmap m;
  assert_int_equal(pt_idmap_init(&m, N), 0);
  struct { int64_t c; uint32_t live, next; } ref[N];
  memset(ref, 0, sizeof ref);
  unsigned seed = 12345;
  uint32_t total_live = 0;
  for (int it = 0; it < 200000; it++) {
    seed = seed * 1103515245u + 12345u;
    int k = (int)((seed >> 16) % N);
    int acquire = total_live < N && ((seed >> 8) & 1);
    if (acquire) {
      if (ref[k].live == 0) ref[k].next = 0;
      assert_int_equal(pt_idmap_acquire(&m, 0xabcdef, k), ref[k].next);
      ref[k].next++;
      ref[k].live++;
      total_live++;
    } else if (ref[k].live) {
      pt_idmap_release(&m, 0xabcdef, k);
      ref[k].live--;
      total_live--;
    }
  }
  uint32_t buckets = 0;
  for (int k = 0; k < N; k++) buckets += ref[k].live > 0;
  assert_int_equal(m.buckets, buckets);
  pt_idmap_free(&m);
}

/* ---- the record line, with a clock where one tick is one millisecond ---- */

static void test_format_line(void** state) {
  (void)state;
  pt_rec r;
  pt_rec_reset(&r);
  pt_rec_view v;
  pt_rec_to_view(&r, &v);
  v.comm_hash = 1234567890;
  v.op_count = 6;
  v.op_id = 0;
  v.func_idx = 4;
  v.protocol = 2;
  v.pattern = 1;
  v.chunk_size = 1048576;
  v.peer = 11;
  v.channel = 2;
  v.nsteps = 64;
  v.nbytes = 524288;
  v.op_type = PT_OP_SEND;
  v.last_kind = 10;
  v.counters[PT_CNT_POSTED] = 16;
  v.counters[PT_CNT_KERNEL_COPY_READY] = 8;
  v.counters[PT_CNT_TAIL_OR_HEAD] = 88;
  v.counters[PT_CNT_RECV_TAIL] = 88;
  v.counters[PT_CNT_TRANSMITTED] = 8;
  v.counters[PT_CNT_DONE] = 8;
  v.t_create = 123;
  v.t_last = 456;
  v.t_posted = 400;
  v.t_kernel = 450;
  pt_clock_cal cal = {.tick0 = 0, .real_ns0 = 1750000000000ll * 1000000ll, .ns_per_tick = 1e6};
  char key[PT_KEY_MAX], line[PT_LINE_MAX];
  pt_format_key(key, sizeof key, &v);
  assert_string_equal(key, "<1234567890:6:0>");
  pt_format_record(line, sizeof line, &v, key, 3, &cal);
  /* The example line of spec §3.7. */
  assert_string_equal(
      line,
      "createT:1750000000123, lastT:1750000000456, postT:1750000000400, sendT:1750000000450, "
      "cntNm:10, <1234567890:6:0>, [fu,pr,pa,tb,ck]:4,2,1,0,1048576, 3->11(S), chan:2, "
      "status:WAITING_GPU, ns:64, nb:524288, po:16, ke:8, tail/h:88, recvT:88, connSz/h:-1, "
      "trans:8, flushed:0, recvd:0, done:8");
  /* unset timestamps print 0 */
  v.t_posted = 0;
  pt_format_record(line, sizeof line, &v, key, 3, &cal);
  assert_non_null(strstr(line, "postT:0, sendT:1750000000450"));
  pt_format_header(line, sizeof line, 0.0149);
  assert_string_equal(line, "commDump for all active ops mapSizeMB:0.01");
}

/* ---- handles and the slab ---- */

static pt_op_info info_of(int64_t opcount, int nsteps) {
  pt_op_info i = {.comm_hash = 1, .op_count = opcount, .channel = 0, .peer = 1,
                  .nsteps = nsteps, .is_send = 1};
  return i;
}

static void test_handles(void** state) {
  (void)state;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, NULL, 0), 0);
  pt_op_info i = info_of(0, 4);
  pt_handle op = pt_op_start(t, &i);
  assert_int_equal(pt_handle_kind(op), PT_HANDLE_OP);
  pt_handle st = pt_step_start(t, op, 9);
  assert_int_equal(pt_handle_kind(st), PT_HANDLE_STEP);
  /* the step handle lives inside the op's own slot */
  assert_true((char*)st > (char*)op && (char*)st < (char*)op + 256);
  assert_ptr_equal(pt_step_start(t, op, 1), st); /* 9 % 8 == 1: same slot */
  pt_drop_stats d0, d1;
  pt_trace_drops(t, &d0);
  pt_op_update(st, PT_CNT_POSTED, 1, 0); /* a step handle is no op handle */
  pt_trace_drops(t, &d1);
  assert_int_equal(d1.n[PT_DROP_BAD_HANDLE], d0.n[PT_DROP_BAD_HANDLE] + 1);
  pt_handle_stop(st);
  pt_handle_stop(st); /* stopped twice */
  pt_trace_drops(t, &d1);
  assert_int_equal(d1.n[PT_DROP_STALE_HANDLE], d0.n[PT_DROP_STALE_HANDLE] + 1);
  pt_handle_stop(op);
  /* the slot is reused with a new generation: the old handle is stale */
  pt_handle op2 = pt_op_start(t, &i);
  assert_ptr_not_equal(op2, op);
  pt_op_register(op);
  pt_trace_drops(t, &d1);
  assert_int_equal(d1.n[PT_DROP_STALE_HANDLE], d0.n[PT_DROP_STALE_HANDLE] + 2);
  assert_int_equal(pt_trace_active_ops(t), 0);
  pt_op_register(op2);
  assert_int_equal(pt_trace_active_ops(t), 1);
  pt_op_register(op2); /* twice */
  pt_trace_drops(t, &d1);
  assert_int_equal(d1.n[PT_DROP_BAD_STATE], d0.n[PT_DROP_BAD_STATE] + 1);
  pt_op_update(op2, PT_CNT_NUM, 1, 0);
  pt_op_update(op2, 200, 1, 0);
  pt_trace_drops(t, &d1);
  assert_int_equal(d1.n[PT_DROP_BAD_COUNTER], d0.n[PT_DROP_BAD_COUNTER] + 2);
  pt_op_update(NULL, PT_CNT_DONE, 4, 0); /* NULL: nothing, no crash */
  pt_handle_stop(NULL);
  assert_null(pt_step_start(t, NULL, 0));
  pt_op_update(op2, PT_CNT_DONE, 4, 0);
  assert_int_equal(pt_trace_active_ops(t), 0);
  /* After a normal completion nothing is lost (stock NCCL 2.23-2.26 send
   * SendDone after the last step stop): not counted. */
  pt_op_update(op2, PT_CNT_DONE, 4, 0);
  pt_op_progress(op2, 3, 4, -1);
  pt_trace_drops(t, &d1);
  assert_int_equal(d1.n[PT_DROP_UNTRACKED], d0.n[PT_DROP_UNTRACKED]);
  /* An op stopped before completing is gone for good: counted. */
  pt_handle op3 = pt_op_start(t, &i);
  pt_op_register(op3);
  pt_handle_stop(op3);
  pt_op_update(op3, PT_CNT_POSTED, 1, 0);
  pt_trace_drops(t, &d1);
  assert_int_equal(d1.n[PT_DROP_UNTRACKED], d0.n[PT_DROP_UNTRACKED] + 1);
  pt_trace_destroy(t);
}

/* A slab full of live ops drops new ones (counted); finished-but-unstopped
 * slots come back as soon as there are some. */
static void test_slab_full_of_live_ops(void** state) {
  (void)state;
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 16;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  pt_handle h[16];
  for (int i = 0; i < 16; i++) {
    pt_op_info in = info_of(i, 2);
    h[i] = pt_op_start(t, &in);
    assert_non_null(h[i]);
    pt_op_register(h[i]);
  }
  pt_op_info in = info_of(99, 2);
  for (int i = 0; i < 100; i++) assert_null(pt_op_start(t, &in));
  pt_drop_stats d;
  pt_trace_drops(t, &d);
  assert_int_equal(d.n[PT_DROP_OPS_DROPPED], 100);
  assert_int_equal(d.n[PT_DROP_OPS_RECLAIMED], 0);
  /* 4 complete without being stopped: their slots are reclaimed at once */
  for (int i = 0; i < 4; i++) pt_op_update(h[i], PT_CNT_DONE, 2, 0);
  for (int i = 0; i < 4; i++) {
    pt_handle n = pt_op_start(t, &in);
    assert_non_null(n);
    pt_op_register(n);
  }
  assert_null(pt_op_start(t, &in));
  pt_trace_drops(t, &d);
  assert_int_equal(d.n[PT_DROP_OPS_RECLAIMED], 4);
  assert_int_equal(d.n[PT_DROP_OPS_DROPPED], 101);
  /* the reclaimed ops' handles are stale; the live ones still work */
  uint64_t stale = d.n[PT_DROP_STALE_HANDLE];
  pt_handle_stop(h[0]);
  pt_trace_drops(t, &d);
  assert_int_equal(d.n[PT_DROP_STALE_HANDLE], stale + 1);
  assert_int_equal(pt_trace_active_ops(t), 16); /* 12 old, 4 new */
  pt_op_update(h[15], PT_CNT_DONE, 2, 0);
  assert_int_equal(pt_trace_active_ops(t), 15);
  assert_true(pt_trace_reserved_bytes(t) >= 16 * 256);
  pt_trace_destroy(t);
  assert_int_equal(pt_op_slot_bytes(), 256);
}

/* Ops started but never registered (CollNet, p2p copy-engine transports)
 * give their slots to new ops as soon as the slab is full, oldest first. */
static void test_slab_reclaims_unregistered(void** state) {
  (void)state;
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 16;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  pt_op_info in = info_of(1, 2);
  pt_handle first = pt_op_start(t, &in);
  pt_handle second = pt_op_start(t, &in);
  for (int i = 2; i < 16; i++) assert_non_null(pt_op_start(t, &in));
  pt_handle again = pt_op_start(t, &in);
  assert_non_null(again);
  pt_drop_stats d;
  pt_trace_drops(t, &d);
  assert_int_equal(d.n[PT_DROP_OPS_RECLAIMED], 1);
  assert_int_equal(d.n[PT_DROP_OPS_DROPPED], 0);
  pt_op_register(first); /* reclaimed: stale, registers nothing */
  assert_int_equal(pt_trace_active_ops(t), 0);
  pt_op_register(second); /* the next oldest is still there */
  assert_int_equal(pt_trace_active_ops(t), 1);
  pt_trace_drops(t, &d);
  assert_int_equal(d.n[PT_DROP_STALE_HANDLE], 1);
  pt_trace_destroy(t);
}

static void test_config_bounds(void** state) {
  (void)state;
  pt_trace* t = (pt_trace*)0x1;
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 3;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), -1);
  assert_null(t);
  unsigned long v;
  assert_int_equal(pt_parse_uint("4096", 16, 100000, &v), 0);
  assert_int_equal(v, 4096);
  assert_int_equal(pt_parse_uint("4k", 16, 100000, &v), -1);
  assert_int_equal(pt_parse_uint("-5", 16, 100000, &v), -1);
  assert_int_equal(pt_parse_uint("", 16, 100000, &v), -1);
  assert_int_equal(pt_parse_uint("8", 16, 100000, &v), -1);
  assert_int_equal(pt_parse_uint("99999999999999999999999", 16, 100000, &v), -1);
  assert_string_equal(pt_drop_name(PT_DROP_OPS_DROPPED), "opsDropped");
  assert_string_equal(pt_drop_name(PT_DROP_NUM), "?");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_send),  cmocka_unit_test(test_status_recv),
      cmocka_unit_test(test_status_names), cmocka_unit_test(test_idmap_restart),
      cmocka_unit_test(test_idmap_churn),  cmocka_unit_test(test_format_line),
      cmocka_unit_test(test_handles),      cmocka_unit_test(test_slab_full_of_live_ops),
      cmocka_unit_test(test_slab_reclaims_unregistered),
      cmocka_unit_test(test_config_bounds),
  };
  return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
