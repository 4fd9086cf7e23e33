/*
 * test_metrics.c — the step metrics of the trace core (src/trace/metrics.c):
 * buckets and quantiles, what each host's events measure (RCCL ProxyDiag
 * counters, stock NCCL step events, NCCL 2.23-2.26 ProxyOp states), bytes,
 * busy time, memory handed over by the service, and readers running while
 * the proxy thread records.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "proxytrace/trace.h"
#include "trace/metrics.h"
#include "trace/slab.h"

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static pt_trace* new_trace(int metrics) {
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 256;
  cfg.metrics = (uint32_t)metrics;
  pt_trace* t = NULL;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  return t;
}

static pt_handle start(pt_trace* t, int peer, int ch, int send, int nsteps, int stock) {
  pt_op_info info = {.comm_hash = 7, .op_count = 1, .channel = ch, .peer = peer, .nsteps = nsteps,
                     .is_send = send, .nbytes = 1 << 20, .func_idx = 4, .protocol = 2, .pattern = 1,
                     .chunk_size = 1 << 19, .step_driven = stock};
  pt_handle h = pt_op_start(t, &info);
  assert_non_null(h);
  pt_op_register(h);
  return h;
}

typedef struct {
  pt_metric_edge e[64];
  int n;
} edges;

static void keep(void* arg, const pt_metric_edge* e) {
  edges* x = arg;
  if (x->n < 64) x->e[x->n++] = *e;
}

static const pt_metric_edge* find(edges* x, const pt_trace* t, int peer, int ch, int send) {
  x->n = 0;
  pt_trace_metric_edges(t, keep, x);
  for (int i = 0; i < x->n; i++)
    if (x->e[i].peer == peer && x->e[i].channel == ch && x->e[i].is_send == send) return &x->e[i];
  return NULL;
}

/* Starts an op and says whether it is measured (the unmeasured count did
 * not move). */
static pt_handle start_measured(pt_trace* t, int peer, int ch, int send, int nsteps, int* measured) {
  const uint64_t before = pt_trace_metrics_unmeasured(t);
  pt_handle h = start(t, peer, ch, send, nsteps, 0);
  *measured = pt_trace_metrics_unmeasured(t) == before;
  return h;
}

static uint64_t count(const uint64_t* h, int nb) {
  uint64_t n = 0;
  for (int i = 0; i < nb; i++) n += h[i];
  return n;
}

/* ---- buckets ---- */

static void test_time_buckets(void** state) {
  (void)state;
  assert_int_equal(pt_metric_time_bucket(0), 0);
  assert_int_equal(pt_metric_time_bucket(128), 0);
  assert_int_equal(pt_metric_time_bucket(129), 1);
  assert_int_equal(pt_metric_time_bucket(160), 1);
  assert_int_equal(pt_metric_time_bucket(161), 2);
  assert_int_equal(pt_metric_time_bucket(256), 4);
  assert_int_equal(pt_metric_time_bucket(257), 5);
  assert_int_equal(pt_metric_time_bucket(1ull << 37), PT_METRIC_TIME_BUCKETS - 2);
  assert_int_equal(pt_metric_time_bucket((1ull << 37) + 1), PT_METRIC_TIME_BUCKETS - 1);
  assert_int_equal(pt_metric_time_bucket(UINT64_MAX), PT_METRIC_TIME_BUCKETS - 1);
  /* every value lies in (upper(b-1), upper(b)], buckets 4 per octave */
  for (uint64_t v = 100; v < (1ull << 37); v = v * 9 / 7 + 3) {
    int b = pt_metric_time_bucket(v);
    assert_true(v <= pt_metric_time_upper_ns(b));
    assert_true(b == 0 || v > pt_metric_time_upper_ns(b - 1));
  }
  for (int b = 0; b + 4 < PT_METRIC_TIME_BUCKETS - 1; b += 4)
    assert_int_equal(pt_metric_time_upper_ns(b + 4), 2 * pt_metric_time_upper_ns(b));
  assert_true(pt_metric_time_upper_ns(PT_METRIC_TIME_BUCKETS - 1) == UINT64_MAX);
}

static void test_byte_buckets(void** state) {
  (void)state;
  assert_int_equal(pt_metric_bytes_bucket(1), 0);
  assert_int_equal(pt_metric_bytes_bucket(2), 1);
  assert_int_equal(pt_metric_bytes_bucket(3), 2);
  /* a power of two is its own bucket's bound: le="524288" counts 512 KiB steps */
  assert_int_equal(pt_metric_bytes_upper(pt_metric_bytes_bucket(524288)), 524288);
  assert_int_equal(pt_metric_bytes_upper(pt_metric_bytes_bucket(524289)), 1048576);
  assert_int_equal(pt_metric_bytes_bucket((1ull << 40) + 1), PT_METRIC_BYTE_BUCKETS - 1);
}

static void test_quantile(void** state) {
  (void)state;
  uint64_t h[PT_METRIC_TIME_BUCKETS] = {0};
  assert_int_equal(pt_metric_time_quantile(h, 0.5), 0);
  h[pt_metric_time_bucket(1000)] = 98;
  h[pt_metric_time_bucket(100000)] = 2;
  assert_int_equal(pt_metric_time_quantile(h, 0.5), pt_metric_time_upper_ns(pt_metric_time_bucket(1000)));
  assert_int_equal(pt_metric_time_quantile(h, 0.98), pt_metric_time_upper_ns(pt_metric_time_bucket(1000)));
  assert_int_equal(pt_metric_time_quantile(h, 0.99), pt_metric_time_upper_ns(pt_metric_time_bucket(100000)));
}

/* ---- what the events measure ---- */

/* RCCL send: POSTED (timestamp), polls with FIFO_SZ, KERNEL_COPY_READY,
 * TRANSMITTED, DONE, in raw steps with slices of 2. The GPU is slow (3 ms),
 * the network fast. */
static void test_rccl_send(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_METRICS_ON);
  pt_handle h = start(t, 5, 0, 1, 4, 0);
  for (int x = 1; x <= 2; x++) { /* two transfers of 2 raw steps */
    pt_op_update(h, PT_CNT_POSTED, 2 * x, PT_FLAG_TIMESTAMP);
    pt_op_update(h, PT_CNT_FIFO_SZ_OR_HEAD_CACHE, -1, 0);
    sleep_us(3000);
    pt_op_update(h, PT_CNT_FIFO_SZ_OR_HEAD_CACHE, 1 << 20, 0);
    pt_op_update(h, PT_CNT_KERNEL_COPY_READY, 2 * x, 0);
    pt_op_update(h, PT_CNT_KERNEL_COPY_READY, 0, PT_FLAG_TIMESTAMP | PT_FLAG_COUNTER_SKIP);
    pt_op_update(h, PT_CNT_TRANSMITTED, 2 * x, 0);
    sleep_us(200);
    pt_op_update(h, PT_CNT_DONE, 2 * x, 0);
  }
  edges x;
  const pt_metric_edge* e = find(&x, t, 5, -1, 1);
  assert_non_null(e);
  assert_int_equal(e->ops, 1);
  assert_int_equal(e->in_flight, 0); /* completed */
  assert_int_equal(e->steps, 2);     /* one per transfer, not per raw step */
  assert_int_equal(count(e->h[PT_METRIC_GPU], PT_METRIC_TIME_BUCKETS), 2);
  assert_int_equal(count(e->h[PT_METRIC_NET], PT_METRIC_TIME_BUCKETS), 2);
  assert_true(pt_metric_time_quantile(e->h[PT_METRIC_GPU], 0.5) >= 3000000);
  assert_true(e->sum_ns[PT_METRIC_NET] >= 2 * 200000);
  /* each 3 ms wait is the GPU's (not GPU > network: on a busy machine a
   * 200 us sleep may last longer than 3 ms) */
  assert_true(e->sum_ns[PT_METRIC_GPU] >= 2 * 3000000);
  assert_true(e->sum_ns[PT_METRIC_STEP] >= e->sum_ns[PT_METRIC_GPU] + e->sum_ns[PT_METRIC_NET] - 1000);
  assert_int_equal(e->bytes, 2u << 20);
  assert_int_equal(e->sized_steps, 2);
  assert_int_equal(e->hb[pt_metric_bytes_bucket(1 << 20)], 2);
  assert_true(e->busy_ns >= 6.4e6);
  assert_int_equal(pt_trace_metrics_unmeasured(t), 0);
  pt_handle_stop(h);
  pt_trace_destroy(t);
}

/* RCCL recv: POSTED, RECEIVED (network slow), TRANSMITTED (to the GPU),
 * DONE (GPU fast); the size received comes with the step's RecvFlushWait,
 * just before RECEIVED (no ProxyDiag update carries it). A RecvFlushWait
 * without args sizes nothing. */
static void test_rccl_recv(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_METRICS_ON);
  pt_handle h = start(t, 3, 1, 0, 3, 0);
  for (int s = 1; s <= 3; s++) {
    pt_op_update(h, PT_CNT_POSTED, s, 0);
    pt_handle st = pt_step_start(t, h, s - 1);
    pt_step_state(st, 10, 777); /* RecvWait: a stale size, ignored */
    sleep_us(2000);
    pt_step_state(st, 11, s == 3 ? -1 : 4096 * s); /* RecvFlushWait: the bytes received */
    pt_op_update(h, PT_CNT_RECEIVED, s, 0);
    pt_step_state(st, 12, 4096); /* RecvGPUWait: the same size again, ignored */
    pt_op_update(h, PT_CNT_TRANSMITTED, s, 0);
    pt_handle_stop(st);
    pt_op_update(h, PT_CNT_DONE, s, 0);
  }
  edges x;
  const pt_metric_edge* e = find(&x, t, 3, -1, 0);
  assert_non_null(e);
  assert_int_equal(e->steps, 3);
  assert_true(pt_metric_time_quantile(e->h[PT_METRIC_NET], 0.5) >= 2000000);
  assert_true(e->sum_ns[PT_METRIC_GPU] < e->sum_ns[PT_METRIC_NET]);
  assert_int_equal(e->bytes, 4096 + 8192);
  assert_int_equal(e->sized_steps, 2);
  assert_null(find(&x, t, 3, 1, 0)); /* no channel edges unless asked */
  pt_trace_destroy(t);
}

/* Stock NCCL 2.27+: step events drive the counters; transSize at SendWait. */
static void test_stock_steps(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_METRICS_CHANNELS);
  pt_handle h = start(t, 9, 2, 1, 2, 1);
  for (int s = 0; s < 2; s++) {
    pt_handle st = pt_step_start(t, h, s); /* POSTED */
    pt_step_state(st, 8, 777);          /* SendGPUWait: a stale size, ignored */
    sleep_us(1500);
    pt_step_state(st, 20, -1);          /* SendPeerWait: data ready */
    pt_step_state(st, 9, 65536);        /* SendWait: this transfer's size */
    pt_handle_stop(st);                 /* DONE */
  }
  edges x;
  const pt_metric_edge* e = find(&x, t, 9, -1, 1);
  assert_non_null(e);
  assert_int_equal(e->steps, 2);
  assert_true(pt_metric_time_quantile(e->h[PT_METRIC_GPU], 0.5) >= 1500000);
  assert_int_equal(e->bytes, 2 * 65536);
  const pt_metric_edge* c = find(&x, t, 9, 2, 1); /* and its channel */
  assert_non_null(c);
  assert_int_equal(c->steps, 2);
  assert_int_equal(c->bytes, 2 * 65536);
  pt_trace_destroy(t);
}

/* NCCL 2.23-2.26: ProxyOp states carry the op's cumulative transSize,
 * which starts where the previous op of the proxy args left it. */
static void test_cumulative_sizes(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_METRICS_ON);
  pt_handle h = start(t, 1, 0, 0, 3, 1);
  const int64_t inherited = 5000;
  for (int s = 1; s <= 3; s++) {
    pt_op_progress(h, 4, s, inherited + (s - 1) * 1000); /* RecvPosted */
    pt_op_progress(h, 5, s, inherited + s * 1000);       /* RecvReceived: +1000 */
    pt_op_progress(h, 6, s, inherited + s * 1000);       /* RecvTransmitted */
    pt_op_progress(h, 7, s, inherited + s * 1000);       /* RecvDone */
  }
  edges x;
  const pt_metric_edge* e = find(&x, t, 1, -1, 0);
  assert_non_null(e);
  assert_int_equal(e->steps, 3);
  assert_int_equal(e->sized_steps, 3);
  assert_int_equal(e->bytes, 3000);
  pt_trace_destroy(t);
}

/* An op stopped before completing leaves the edge idle. */
static void test_detached(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_METRICS_ON);
  pt_handle h = start(t, 2, 0, 1, 8, 0);
  pt_op_update(h, PT_CNT_POSTED, 1, PT_FLAG_TIMESTAMP);
  edges x;
  assert_int_equal(find(&x, t, 2, -1, 1)->in_flight, 1);
  sleep_us(1000);
  double busy1 = find(&x, t, 2, -1, 1)->busy_ns; /* the open interval counts */
  assert_true(busy1 >= 1e6);
  pt_handle_stop(h);
  const pt_metric_edge* e = find(&x, t, 2, -1, 1);
  assert_int_equal(e->in_flight, 0);
  assert_int_equal(e->steps, 0);
  sleep_us(1000);
  assert_true(find(&x, t, 2, -1, 1)->busy_ns < busy1 + 1e6); /* closed */
  pt_trace_destroy(t);
}

/* Out of edges, an op is not measured (counted); the service hands over
 * spares and a bigger table, and every later op is measured. Recording
 * never allocates. */
static void test_memory_handover(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_METRICS_ON);
  size_t before = pt_trace_metrics_bytes(t);
  assert_true(before > 0 && before < 64 * 1024);
  int unmeasured = 0, ok;
  for (int peer = 0; peer < 40; peer++) {
    pt_handle h = start_measured(t, peer, 0, 1, 1, &ok);
    unmeasured += !ok;
    pt_op_update(h, PT_CNT_POSTED, 1, 0);
    pt_op_update(h, PT_CNT_DONE, 1, 0);
    pt_handle_stop(h);
  }
  assert_true(unmeasured > 0);
  assert_int_equal(pt_trace_metrics_unmeasured(t), (uint64_t)unmeasured);
  /* the dumper's part, as often as it takes: new peers until one misses */
  int peer = 1000, got = 0, round = 0;
  for (; round < 64 && got < 60; round++) {
    assert_int_equal(pt_trace_metrics_service(t), 0);
    for (;;) {
      pt_handle h = start_measured(t, peer++, 0, 0, 1, &ok);
      pt_op_update(h, PT_CNT_DONE, 1, 0);
      pt_handle_stop(h);
      if (!ok) break;
      got++;
    }
  }
  assert_true(got >= 60);
  edges x;
  x.n = 0;
  size_t n = pt_trace_metric_edges(t, keep, &x);
  assert_true(n >= (size_t)got);
  assert_true(pt_trace_metrics_bytes(t) > before);
  /* a peer seen before keeps its one edge */
  pt_handle h = start_measured(t, 1000, 0, 0, 1, &ok);
  assert_true(ok);
  pt_op_update(h, PT_CNT_DONE, 1, 0);
  assert_int_equal(pt_trace_metric_edges(t, keep, &x), n);
  pt_trace_destroy(t);
}

/* Ops in flight beyond the first scratch chunk: asked for, handed over. */
static void test_scratch_growth(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_METRICS_ON);
  pt_handle hs[200];
  int measured = 0;
  for (int i = 0; i < 200; i++) {
    int ok;
    hs[i] = start_measured(t, 1, i % 8, 1, 4, &ok);
    measured += ok;
    if (i % 16 == 15) pt_trace_metrics_service(t);
  }
  assert_true(measured > PT_M_CHUNK0);
  edges x;
  assert_int_equal(find(&x, t, 1, -1, 1)->in_flight, (uint32_t)measured);
  for (int i = 0; i < 200; i++) pt_handle_stop(hs[i]);
  assert_int_equal(find(&x, t, 1, -1, 1)->in_flight, 0);
  pt_trace_destroy(t);
}

static void test_off(void** state) {
  (void)state;
  pt_trace* t = new_trace(PT_METRICS_OFF);
  pt_handle h = start(t, 1, 0, 1, 1, 0);
  pt_op_update(h, PT_CNT_POSTED, 1, 0);
  pt_op_update(h, PT_CNT_DONE, 1, 0);
  edges x = {.n = 0};
  assert_int_equal(pt_trace_metric_edges(t, keep, &x), 0);
  assert_false(pt_trace_metrics_on(t));
  assert_int_equal(pt_trace_metrics_bytes(t), 0);
  pt_metrics_snap* snap = pt_trace_metrics_snapshot(t);
  assert_non_null(snap);
  assert_int_equal(pt_metrics_snap_edges(snap), 0);
  pt_metrics_snap_free(snap);
  pt_trace_destroy(t);
}

/* ---- readers while the proxy thread records ---- */

typedef struct {
  pt_trace* t;
  _Atomic int stop, reading;
} race;

static void* recorder(void* arg) {
  race* r = arg;
  /* not before the reader runs: on a busy machine the reader's thread may
   * otherwise first run once every op is recorded, and read nothing
   * while they were */
  while (!atomic_load(&r->reading)) sched_yield();
  for (int i = 0; i < 3000; i++) {
    pt_handle h = start(r->t, i % 50, i % 4, i & 1, 8, 0);
    for (int s = 1; s <= 8; s++) {
      pt_op_update(h, PT_CNT_POSTED, s, PT_FLAG_TIMESTAMP);
      pt_op_update(h, PT_CNT_FIFO_SZ_OR_HEAD_CACHE, 4096, 0);
      pt_op_update(h, PT_CNT_KERNEL_COPY_READY, s, 0);
      pt_op_update(h, PT_CNT_RECEIVED, s, 0);
      pt_op_update(h, PT_CNT_TRANSMITTED, s, 0);
      pt_op_update(h, PT_CNT_DONE, s, 0);
    }
    pt_handle_stop(h);
  }
  atomic_store(&r->stop, 1);
  return NULL;
}

static void add_steps(void* arg, const pt_metric_edge* e) {
  ((uint64_t*)arg)[e->channel < 0 ? 0 : 1] += e->steps;
}

static void print_nothing(void* arg, const char* line, int len) {
  (void)line;
  *(long*)arg += len;
}

static void test_concurrent_readers(void** state) {
  (void)state;
  race r = {.t = new_trace(PT_METRICS_CHANNELS)};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, recorder, &r), 0);
  long bytes = 0;
  pt_metrics_meta m = {.host = "h", .pid = 1, .rank = 0, .nranks = 64, .comm_hash = 7, .host_lib = "rccl"};
  atomic_store(&r.reading, 1);
  do {
    pt_trace_metrics_service(r.t);
    pt_metrics_snap* s = pt_trace_metrics_snapshot(r.t);
    assert_non_null(s);
    pt_metrics_prom(s, &m, print_nothing, &bytes);
    pt_metrics_json(s, &m, print_nothing, &bytes);
    pt_metrics_snap_free(s);
  } while (!atomic_load(&r.stop));
  pthread_join(th, NULL);
  pt_trace_metrics_service(r.t);
  uint64_t sums[2] = {0, 0}; /* steps of the (peer, direction) edges, of the channel edges */
  pt_trace_metric_edges(r.t, add_steps, sums);
  const uint64_t steps = sums[0];
  assert_int_equal(sums[1], sums[0]); /* every measured step is in one edge of each kind */
  assert_int_equal(steps + pt_trace_metrics_unmeasured(r.t) * 8, 3000 * 8);
  assert_true(bytes > 0);
  pt_trace_destroy(r.t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_time_buckets),     cmocka_unit_test(test_byte_buckets),
      cmocka_unit_test(test_quantile),         cmocka_unit_test(test_rccl_send),
      cmocka_unit_test(test_rccl_recv),        cmocka_unit_test(test_stock_steps),
      cmocka_unit_test(test_cumulative_sizes), cmocka_unit_test(test_detached),
      cmocka_unit_test(test_memory_handover),  cmocka_unit_test(test_scratch_growth),
      cmocka_unit_test(test_off),              cmocka_unit_test(test_concurrent_readers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
