/*
 * test_reader.c — a dump never misses a live op, whatever the proxy thread
 * is doing while it is taken: the seqlock reader (record.c) against a writer
 * held inside a write — deterministically, by the writer's own primitive,
 * from this thread and from a second one — and against a writer rewriting
 * the record without pause.
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
#include <time.h>

#include <cmocka.h>

#include "proxytrace/trace.h"
#include "trace/format.h"
#include "trace/slab.h"

/* ---- a dump captured into lines ---- */

typedef struct {
  int n;
  char line[64][PT_LINE_MAX];
} captured;

static void capture(void* arg, const char* line, int len) {
  captured* c = arg;
  if (c->n < 64) snprintf(c->line[c->n++], PT_LINE_MAX, "%.*s", len, line);
}

/* Lines that contain `needle`. */
static int count_lines(const captured* c, const char* needle) {
  int k = 0;
  for (int i = 0; i < c->n; i++) k += strstr(c->line[i], needle) != NULL;
  return k;
}

static long field(const char* line, const char* name) {
  const char* p = strstr(line, name);
  return p ? strtol(p + strlen(name), NULL, 10) : -999;
}

static const char* line_with(const captured* c, const char* needle) {
  for (int i = 0; i < c->n; i++)
    if (strstr(c->line[i], needle)) return c->line[i];
  return NULL;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The slot behind an op handle (the writer's side of the test). */
static pt_op* slot_of_handle(pt_handle h) {
  return (pt_op*)((uintptr_t)h & PT_ADDR_MASK & ~(uintptr_t)(PT_SLOT_BYTES - 1));
}

static pt_trace* new_trace(void) {
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 16;
  pt_trace* t;
  assert_int_equal(pt_trace_create(&t, &cfg, 0), 0);
  return t;
}

static pt_handle active_op(pt_trace* t, int64_t opcount) {
  pt_op_info i = {.comm_hash = 7, .op_count = opcount, .channel = 1, .peer = 2, .nsteps = 64,
                  .is_send = 1};
  pt_handle h = pt_op_start(t, &i);
  assert_non_null(h);
  pt_op_register(h);
  return h;
}

/* ---- a writer stopped inside a write ---- */

/* The proxy thread preempted between the two halves of a counter update:
 * the sequence stays odd for as long as the test likes. The dump waits out
 * its patience, then prints the record anyway, says it was copied mid-write
 * and shows each field from before or after that one update. */
static void test_writer_stopped_mid_write_same_thread(void** state) {
  (void)state;
  pt_trace* t = new_trace();
  pt_handle h = active_op(t, 3);
  pt_op_update(h, PT_CNT_POSTED, 10, 0);
  pt_op* op = slot_of_handle(h);
  const uint32_t w_ = pt_rec_write_begin(&op->rec); /* the writer enters an update ... */
  PT_STORE(op->rec.counters[PT_CNT_POSTED], 11); /* ... stores half of it ... */
  captured c = {0};
  double t0 = now_ms();
  int lines = pt_trace_dump(t, capture, &c); /* ... and is preempted here */
  double took = now_ms() - t0;
  assert_int_equal(lines, 3);
  assert_int_equal(count_lines(&c, "<7:3:0>"), 2); /* the note names it, and its line */
  assert_non_null(strstr(c.line[1], "proxytrace: 1 record copied while the proxy thread was "
                                     "inside a write to it"));
  long po = field(c.line[2], " po:");
  assert_true(po == 10 || po == 11);
  assert_true(took >= PT_READ_PATIENCE_NS / 1e6 * 0.9);
  assert_true(took < 2000.0); /* patience, not a hang */
  pt_rec_write_end(&op->rec, w_); /* the writer resumes */
  c.n = 0;
  assert_int_equal(pt_trace_dump(t, capture, &c), 2);
  assert_int_equal(count_lines(&c, "proxytrace:"), 0);
  assert_int_equal(field(c.line[1], " po:"), 11);
  pt_trace_destroy(t);
}

typedef struct {
  pt_op* op;
  atomic_int holding, release;
} holder_arg;

static void* hold_odd(void* p) {
  holder_arg* a = p;
  const uint32_t w_ = pt_rec_write_begin(&a->op->rec);
  PT_STORE(a->op->rec.counters[PT_CNT_DONE], 5);
  atomic_store(&a->holding, 1);
  while (!atomic_load(&a->release)) sched_yield();
  pt_rec_write_end(&a->op->rec, w_);
  return NULL;
}

/* The same from a second thread that holds the sequence odd for the whole
 * dump, with other ops around it: every op is printed, and only the held one
 * is named as copied mid-write. */
static void test_writer_stopped_mid_write_other_thread(void** state) {
  (void)state;
  pt_trace* t = new_trace();
  pt_handle held = active_op(t, 1);
  for (int i = 2; i <= 5; i++) active_op(t, i);
  holder_arg a = {.op = slot_of_handle(held)};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, hold_odd, &a), 0);
  while (!atomic_load(&a.holding)) sched_yield();
  captured c = {0};
  assert_int_equal(pt_trace_dump(t, capture, &c), 7);
  atomic_store(&a.release, 1);
  pthread_join(th, NULL);
  for (int i = 1; i <= 5; i++) {
    char key[32];
    snprintf(key, sizeof key, "<7:%d:0>", i);
    assert_int_equal(count_lines(&c, key), i == 1 ? 2 : 1);
  }
  const char* note = line_with(&c, "proxytrace: 1 record copied");
  assert_non_null(note);
  assert_non_null(strstr(note, ": <7:1:0>"));
  long done = field(line_with(&c, "<7:1:0>, "), " done:");
  assert_true(done == 0 || done == 5);
  pt_trace_destroy(t);
}

/* ---- a writer that never pauses ---- */

typedef struct {
  pt_trace* t;
  atomic_int stop;
  atomic_long updates;
} busy_arg;

/* RCCL's poll of a stuck send, back to back: RECV_TAIL then TAIL_OR_HEAD,
 * both k, with no gap between one poll and the next. A consistent copy has
 * tail/h == recvT or tail/h == recvT - 1. */
static void* busy_writer(void* p) {
  busy_arg* a = p;
  pt_handle h = active_op(a->t, 9); /* this thread is the trace's one writer */
  for (int64_t k = 1; !atomic_load_explicit(&a->stop, memory_order_relaxed); k++) {
    pt_op_update(h, PT_CNT_RECV_TAIL, k, 0);
    pt_op_update(h, PT_CNT_TAIL_OR_HEAD, k, 0);
    atomic_fetch_add_explicit(&a->updates, 2, memory_order_relaxed);
  }
  return NULL;
}

static void test_writer_never_pauses(void** state) {
  (void)state;
  pt_trace* t = new_trace();
  busy_arg a = {.t = t};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, busy_writer, &a), 0);
  while (atomic_load(&a.updates) < 1000) sched_yield(); /* registered, writing at full speed */
  long last_tail = 0, mid = 0;
  for (int d = 0; d < 200; d++) {
    captured c = {0};
    pt_trace_dump(t, capture, &c);
    const char* rec = line_with(&c, "<7:9:0>, ");
    assert_non_null(rec); /* never missing */
    long tail = field(rec, " tail/h:"), recv_tail = field(rec, " recvT:");
    if (line_with(&c, "copied while the proxy thread")) {
      mid++; /* one update partly applied: one counter may lead by one */
      assert_true(recv_tail - tail >= -1 && recv_tail - tail <= 2);
    } else {
      assert_true(recv_tail == tail || recv_tail == tail + 1);
      assert_true(tail >= last_tail); /* never backwards */
      last_tail = tail;
    }
  }
  atomic_store(&a.stop, 1);
  pthread_join(th, NULL);
  print_message("      200 dumps against %ld updates, %ld copied mid-write\n",
                atomic_load(&a.updates), mid);
  pt_trace_destroy(t);
}

/* ---- the reader routine itself ---- */

/* Every outcome of pt_rec_read on a bare record: even and still
 * (consistent, with its version), odd and still (mid-write after the
 * patience, no version), and the copy it keeps in both. */
static void test_rec_read_outcomes(void** state) {
  (void)state;
  pt_rec r;
  memset(&r, 0, sizeof r); /* sequence 0: no write yet */
  pt_rec_reset(&r);
  PT_STORE(r.op_count, 42);
  pt_rec_view v;
  uint32_t version = 7;
  assert_int_equal(pt_rec_read(&r, &v, NULL, NULL, &version), PT_READ_CONSISTENT);
  assert_int_equal(v.op_count, 42);
  assert_int_equal(version, PT_LOAD(r.seq));
  const uint32_t w_ = pt_rec_write_begin(&r);
  PT_STORE(r.op_count, 43);
  version = 7;
  assert_int_equal(pt_rec_read(&r, &v, NULL, NULL, &version), PT_READ_MID_WRITE);
  assert_int_equal(v.op_count, 43);
  assert_int_equal(version, 7); /* no version for a copy that is none */
  pt_rec_write_end(&r, w_);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rec_read_outcomes),
      cmocka_unit_test(test_writer_stopped_mid_write_same_thread),
      cmocka_unit_test(test_writer_stopped_mid_write_other_thread),
      cmocka_unit_test(test_writer_never_pauses),
  };
  return cmocka_run_group_tests_name("reader", tests, NULL, NULL);
}
