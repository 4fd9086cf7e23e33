/*
 * test_dump_reader.c — the dump's reading of the finished ring while the
 * proxy thread keeps completing ops: a ring entry that cannot be copied
 * consistently is left out (never printed torn), an entry rewritten after
 * the dump read the ring's head is left out (never printed as the wrong
 * completion, out of order), and under a live writer every copied entry is
 * exactly the completion the dump took it for.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxytrace/trace.h"
#include "trace/slab.h"

#define HASH 77

/* One op from start to completion; its opCount is `k`, so each finished
 * record says which completion it is. */
static void complete_op(pt_trace* t, int64_t k) {
  pt_op_info info = {.comm_hash = HASH, .op_count = k, .channel = 0, .peer = 1, .nsteps = 1,
                     .is_send = 1};
  pt_handle h = pt_op_start(t, &info);
  assert_non_null(h);
  pt_op_register(h);
  pt_op_update(h, PT_CNT_DONE, 1, 0);
  pt_handle_stop(h);
}

typedef struct {
  int n;
  char lines[64][512];
} capture;

static void collect(void* arg, const char* line, int len) {
  capture* c = arg;
  if (c->n < 64) snprintf(c->lines[c->n++], sizeof c->lines[0], "%.*s", len, line);
}

static int lines_with(const capture* c, const char* s) {
  int n = 0;
  for (int i = 0; i < c->n; i++) n += strstr(c->lines[i], s) != NULL;
  return n;
}

/* A finished-ring entry whose writer never finished its write (the sequence
 * stays odd) is not printed — not even the mid-write copy the reader keeps
 * after its patience (a live slot's would be). */
static void test_torn_finished_entry_is_left_out(void** state) {
  (void)state;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, NULL, 0), 0);
  for (int k = 0; k < 5; k++) complete_op(t, k);
  pt_rec* torn = &t->lane[0]->ring[2]; /* completion 2 */
  const uint32_t w_ = pt_rec_write_begin(torn);
  PT_STORE(torn->op_count, 99); /* half-written: a new opCount, old everything else */
  pt_rec_view v;
  assert_int_equal(pt_rec_read(torn, &v, NULL, NULL, NULL), PT_READ_MID_WRITE);

  capture c = {0};
  assert_int_equal(pt_trace_dump(t, collect, &c), 1 + 4);
  assert_int_equal(c.n, 5);
  assert_int_equal(lines_with(&c, ":99:"), 0);
  assert_int_equal(lines_with(&c, "<77:2:"), 0);
  for (int k = 0; k < 5; k++) {
    if (k == 2) continue;
    char key[32];
    snprintf(key, sizeof key, "<77:%d:", k);
    assert_int_equal(lines_with(&c, key), 1);
  }
  /* once the write completes, the entry is a newer record: still not
   * completion 2, and the dump says so by leaving it out */
  pt_rec_write_end(torn, w_);
  c.n = 0;
  assert_int_equal(pt_trace_dump(t, collect, &c), 1 + 4);
  pt_trace_destroy(t);
}

/* The dump read the head at 40 (ring = completions 8..39); five more
 * completions then overwrote the slots of 8..12 before the copy. Only 13..39
 * come back, each as itself. */
static void test_entries_overwritten_after_the_head_are_left_out(void** state) {
  (void)state;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, NULL, 0), 0);
  for (int k = 0; k < 40; k++) complete_op(t, k);
  uint64_t head = atomic_load(&t->lane[0]->ring_head);
  assert_int_equal(head, 40);
  for (int k = 40; k < 45; k++) complete_op(t, k);

  pt_rec_view v[PT_FINISHED_RING];
  uint64_t order[PT_FINISHED_RING];
  size_t n = pt_ring_snapshot(t->lane[0], head, v, order);
  assert_int_equal(n, 27);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(order[i], 13 + i);
    assert_int_equal(v[i].op_count, (int64_t)order[i]);
  }
  /* the head as it is now: the full window 13..44 */
  n = pt_ring_snapshot(t->lane[0], atomic_load(&t->lane[0]->ring_head), v, order);
  assert_int_equal(n, 32);
  assert_int_equal(order[0], 13);
  assert_int_equal(v[31].op_count, 44);
  /* fewer completions than ring slots: only those */
  pt_trace* u;
  assert_int_equal(pt_trace_create(&u, NULL, 0), 0);
  for (int k = 0; k < 3; k++) complete_op(u, k);
  assert_int_equal(pt_ring_snapshot(u->lane[0], atomic_load(&u->lane[0]->ring_head), v, order), 3);
  assert_int_equal(v[2].op_count, 2);
  pt_trace_destroy(u);
  pt_trace_destroy(t);
}

/* ---- with a live writer ---- */

typedef struct {
  pt_trace* t;
  int ops;
  atomic_int done;
} writer_arg;

static void* writer(void* p) {
  writer_arg* a = p;
  for (int k = 0; k < a->ops; k++) {
    pt_op_info info = {.comm_hash = HASH, .op_count = k, .peer = 1, .nsteps = 1, .is_send = 1};
    pt_handle h = pt_op_start(a->t, &info);
    if (!h) continue;
    pt_op_register(h);
    pt_op_update(h, PT_CNT_DONE, 1, 0);
    pt_handle_stop(h);
  }
  atomic_store(&a->done, 1);
  return NULL;
}

/* Copies taken while the writer laps the ring: every entry returned is the
 * completion its number says (opCount == completion number), in order. */
static void test_ring_copies_under_a_live_writer(void** state) {
  (void)state;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, NULL, 0), 0);
  writer_arg a = {.t = t, .ops = 200000};
  atomic_init(&a.done, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, writer, &a), 0);
  long copies = 0, entries = 0, wrong = 0, disorder = 0;
  pt_rec_view v[PT_FINISHED_RING];
  uint64_t order[PT_FINISHED_RING];
  /* Until a copy taken after the writer is done (a starved reader may see
   * the writer's whole run between two of its copies). */
  for (int last = 0; !last;) {
    last = atomic_load(&a.done);
    uint64_t head = atomic_load_explicit(&t->lane[0]->ring_head, memory_order_acquire);
    size_t n = pt_ring_snapshot(t->lane[0], head, v, order);
    for (size_t i = 0; i < n; i++) {
      if (v[i].op_count != (int64_t)order[i]) wrong++;
      if (order[i] >= head || (i && order[i] <= order[i - 1])) disorder++;
    }
    entries += (long)n;
    copies++;
  }
  pthread_join(th, NULL);
  printf("# %ld ring copies, %ld entries, %ld wrong, %ld out of order\n", copies, entries, wrong,
         disorder);
  assert_int_equal(wrong, 0);
  assert_int_equal(disorder, 0);
  assert_true(entries > 0);
  pt_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_torn_finished_entry_is_left_out),
      cmocka_unit_test(test_entries_overwritten_after_the_head_are_left_out),
      cmocka_unit_test(test_ring_copies_under_a_live_writer),
  };
  return cmocka_run_group_tests_name("dump_reader", tests, NULL, NULL);
}
