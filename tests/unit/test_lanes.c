/*
 * test_lanes.c — a trace written by several threads, a lane each (slab.h):
 * the lanes share the slab's cap, each keeps its own finished ring and id
 * table, and readers see every lane as one trace — live records of all,
 * the newest 32 finished of all by completion time, active counts summed,
 * the last progress of any. Past PT_MAX_LANES threads an op is dropped and
 * counted. Threads run one after another, each kept alive until the case
 * ends (a thread that ended would leave its thread pointer, and so its
 * lane, to the next), so every count is exact.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxytrace/trace.h"
#include "trace/slab.h"

typedef struct {
  pt_trace* t;
  int first, n;     /* opCounts first .. first + n - 1 */
  int complete;     /* run each op to DONE, then stop it; else leave it live */
  int started;      /* ops that got a handle */
  pt_handle h[256];
  pthread_t th;
  atomic_int done;
} job;

static atomic_int release;

static void* run(void* p) {
  job* j = p;
  for (int i = 0; i < j->n; i++) {
    pt_op_info info = {.comm_hash = 7, .op_count = j->first + i, .peer = 1, .nsteps = 2, .is_send = 1};
    pt_handle h = pt_op_start(j->t, &info);
    if (!h) continue;
    j->h[j->started++] = h;
    pt_op_register(h);
    pt_op_update(h, PT_CNT_POSTED, j->complete ? 2 : 1, 0);
    if (j->complete) {
      pt_op_update(h, PT_CNT_TRANSMITTED, 2, 0);
      pt_op_update(h, PT_CNT_DONE, 2, 0);
      pt_handle_stop(h);
    }
  }
  atomic_store(&j->done, 1);
  while (!atomic_load(&release)) usleep(100);
  return NULL;
}

/* Runs j on a thread of its own and waits until it has recorded. */
static void on_thread(job* j) {
  atomic_store(&release, 0);
  assert_int_equal(pthread_create(&j->th, NULL, run, j), 0);
  while (!atomic_load(&j->done)) usleep(100);
}

static void end_threads(job* js, int n) {
  atomic_store(&release, 1);
  for (int i = 0; i < n; i++) pthread_join(js[i].th, NULL);
}

typedef struct {
  int finished, active;
  long first_finished; /* opCount of the first finished line, in completion order */
  int seen[512];
} dump_count;

static void count_line(void* arg, const char* text, int len) {
  dump_count* c = arg;
  char line[1024]; /* the line is not terminated */
  snprintf(line, sizeof line, "%.*s", len, text);
  const char* k = strstr(line, "<7:");
  if (!k) return;
  const long opc = strtol(k + 3, NULL, 10);
  if (opc >= 0 && opc < 512) c->seen[opc]++;
  if (strstr(line, "status:DONE")) c->finished++;
  else c->active++;
}

/* Two threads, 20 completed ops each, one after the other: the dump keeps
 * the newest 32 of the 40 — the second thread's 20 and the first's last 12. */
static void test_finished_rings_merge(void** state) {
  (void)state;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, NULL, 0), 0);
  static job j[2];
  j[0] = (job){.t = t, .first = 0, .n = 20, .complete = 1};
  j[1] = (job){.t = t, .first = 100, .n = 20, .complete = 1};
  on_thread(&j[0]);
  on_thread(&j[1]);
  end_threads(j, 2);
  assert_int_equal(pt_trace_lanes_ready(t), 3u); /* two lanes */
  dump_count c = {0};
  pt_trace_dump(t, count_line, &c);
  assert_int_equal(c.finished, 32);
  assert_int_equal(c.active, 0);
  for (int i = 0; i < 20; i++) assert_int_equal(c.seen[100 + i], 1);
  for (int i = 0; i < 8; i++) assert_int_equal(c.seen[i], 0);
  for (int i = 8; i < 20; i++) assert_int_equal(c.seen[i], 1);
  assert_int_equal(pt_trace_ring_finished(t), 32);
  pt_trace_destroy(t);
}

/* Live ops of two lanes: every one in the dump, counts summed, ids per lane
 * (both lanes' first op of opCount 5 has id 0). */
static void test_live_ops_of_every_lane(void** state) {
  (void)state;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, NULL, 0), 0);
  static job j[2];
  j[0] = (job){.t = t, .first = 0, .n = 6};
  j[1] = (job){.t = t, .first = 3, .n = 6};
  on_thread(&j[0]);
  on_thread(&j[1]);
  end_threads(j, 2);
  assert_int_equal(pt_trace_active_ops(t), 12);
  assert_int_equal(pt_trace_waiting_ops(t), 12);
  assert_true(pt_trace_last_progress(t) >= PT_LOAD(t->lane[0]->t_progress));
  assert_int_equal(pt_trace_last_progress(t), PT_LOAD(t->lane[1]->t_progress)); /* the later lane's */
  dump_count c = {0};
  pt_trace_dump(t, count_line, &c);
  assert_int_equal(c.active, 12);
  for (int i = 0; i < 3; i++) assert_int_equal(c.seen[i], 1);
  for (int i = 3; i < 6; i++) assert_int_equal(c.seen[i], 2); /* one of each lane, each id 0 */
  for (int i = 6; i < 9; i++) assert_int_equal(c.seen[i], 1);
  assert_int_equal(pt_trace_id_buckets(t), 12);
  pt_trace_destroy(t);
}

/* The cap is the trace's: 40 live ops on one lane, 40 on another, cap 64:
 * the second lane gets the 24 slots left and drops 16 (counted); it never
 * takes the first lane's slots. */
static void test_lanes_share_the_cap(void** state) {
  (void)state;
  pt_trace* t;
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 64;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  static job j[2];
  j[0] = (job){.t = t, .first = 0, .n = 40};
  j[1] = (job){.t = t, .first = 200, .n = 40};
  on_thread(&j[0]);
  on_thread(&j[1]);
  end_threads(j, 2);
  assert_int_equal(pt_trace_lanes_ready(t), 3u);
  assert_int_equal(j[0].started, 40);
  assert_int_equal(j[1].started, 24);
  pt_drop_stats d;
  pt_trace_drops(t, &d);
  assert_int_equal(d.n[PT_DROP_OPS_DROPPED], 16);
  assert_int_equal(d.n[PT_DROP_OPS_RECLAIMED], 0);
  assert_int_equal(pt_trace_slots_used(t), 64);
  assert_int_equal(pt_trace_active_ops(t), 64);
  pt_trace_destroy(t);
}

/* PT_MAX_LANES threads write the trace; the next one's op is dropped and
 * counted, and the others' records are untouched. */
static void test_more_threads_than_lanes(void** state) {
  (void)state;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, NULL, 0), 0);
  static job j[PT_MAX_LANES + 1];
  for (int i = 0; i <= PT_MAX_LANES; i++) {
    j[i] = (job){.t = t, .first = i, .n = 1};
    on_thread(&j[i]);
  }
  end_threads(j, PT_MAX_LANES + 1);
  assert_int_equal(pt_trace_lanes_ready(t), (1u << PT_MAX_LANES) - 1);
  for (int i = 0; i < PT_MAX_LANES; i++) assert_int_equal(j[i].started, 1);
  assert_int_equal(j[PT_MAX_LANES].started, 0);
  pt_drop_stats d;
  pt_trace_drops(t, &d);
  assert_int_equal(d.n[PT_DROP_OPS_DROPPED], 1);
  assert_int_equal(d.n[PT_DROP_OVER_BUDGET], 0); /* no lane: not the budget */
  dump_count c = {0};
  pt_trace_dump(t, count_line, &c);
  assert_int_equal(c.active, PT_MAX_LANES);
  pt_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_finished_rings_merge),
      cmocka_unit_test(test_live_ops_of_every_lane),
      cmocka_unit_test(test_lanes_share_the_cap),
      cmocka_unit_test(test_more_threads_than_lanes),
  };
  return cmocka_run_group_tests_name("lanes", tests, NULL, NULL);
}
