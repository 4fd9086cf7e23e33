/*
 * test_sched.c — the emulator's schedule (tools/sim/sched.c): real threads
 * that act one at a time, in an order fixed by their wake times and the
 * order they were spawned in, on a clock only the schedule moves. Each test
 * records what the actors did (who, at what emulated time) and checks the
 * sequence itself, and that two runs give the same one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

#define MAX_LOG 256

typedef struct {
  sim_sched* s;
  int id;
  int n;              /* steps to take */
  uint64_t step_ns;   /* emulated time between them */
  int* log_n;
  int* log_id;
  uint64_t* log_t;
  int running;        /* actors inside their turn at once (must stay 1) */
  int* inside;
  int* most_inside;
} actor_arg;

static void note(actor_arg* a) {
  const int k = (*a->log_n)++;
  if (k < MAX_LOG) {
    a->log_id[k] = a->id;
    a->log_t[k] = sim_sched_now(a->s);
  }
}

static void* stepper(void* p) {
  actor_arg* a = p;
  for (int i = 0; i < a->n; i++) {
    if (++*a->inside > *a->most_inside) *a->most_inside = *a->inside;
    note(a);
    --*a->inside;
    sim_sched_sleep_until(a->s, sim_sched_now(a->s) + a->step_ns);
  }
  return NULL;
}

/* Three actors stepping 1.5, 2.5 and 3.5 quanta apart (SIM_QUANTUM_NS:
 * each step a turn of its own): the log is the merge of their times,
 * ties to the first spawned, one actor at a time, and the same twice. */
static void run_steppers(int* n, int* ids, uint64_t* ts, int* most) {
  sim_sched s;
  sim_sched_init(&s, 1);
  int inside = 0;
  *most = 0;
  *n = 0;
  actor_arg a[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    a[i] = (actor_arg){.s = &s, .id = i, .n = 6, .step_ns = (uint64_t)SIM_QUANTUM_NS * (3 + 2 * (uint64_t)i) / 2, .log_n = n,
                       .log_id = ids, .log_t = ts, .inside = &inside, .most_inside = most};
    assert_int_equal(sim_sched_spawn(&s, 1, stepper, &a[i], &t[i]), 0);
  }
  assert_int_equal(sim_sched_run(&s), 0);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  sim_sched_free(&s);
}

static void test_order_is_the_clock_and_the_same_twice(void** state) {
  (void)state;
  int n1, n2, id1[MAX_LOG], id2[MAX_LOG], most;
  uint64_t t1[MAX_LOG], t2[MAX_LOG];
  run_steppers(&n1, id1, t1, &most);
  assert_int_equal(n1, 18);
  assert_int_equal(most, 1);
  for (int k = 1; k < n1; k++) {
    assert_true(t1[k] >= t1[k - 1]); /* the clock never goes back between turns of 1.5 quanta or more */
    if (t1[k] == t1[k - 1]) assert_true(id1[k] > id1[k - 1]); /* ties: the first spawned first */
  }
  assert_int_equal(t1[0], 0);
  assert_int_equal(id1[0], 0);
  /* actor 2's steps at 0, 3.5, 7 ... quanta */
  int seen = 0;
  for (int k = 0; k < n1; k++)
    if (id1[k] == 2) assert_int_equal(t1[k], (uint64_t)SIM_QUANTUM_NS * 7 / 2 * (uint64_t)seen++);
  run_steppers(&n2, id2, t2, &most);
  assert_int_equal(n2, n1);
  assert_memory_equal(id1, id2, sizeof(int) * (size_t)n1);
  assert_memory_equal(t1, t2, sizeof(uint64_t) * (size_t)n1);
}

typedef struct {
  sim_sched* s;
  sim_waitq q;
  int value;      /* what the waiter waits for */
  uint64_t seen_at;
  int quit_seen;
} handoff;

static void* waiter(void* p) {
  handoff* h = p;
  while (!h->value && !sim_sched_quit(h->s)) sim_sched_block(h->s, &h->q);
  h->seen_at = sim_sched_now(h->s);
  return NULL;
}

static void* poster(void* p) {
  handoff* h = p;
  sim_sched_sleep_until(h->s, 5000000u); /* 5 ms */
  h->value = 1;
  sim_sched_wake(h->s, &h->q);
  return NULL;
}

static void* timer(void* p) { /* a daemon: ticks until the job is over */
  handoff* h = p;
  while (!sim_sched_quit(h->s)) sim_sched_sleep_until(h->s, sim_sched_now(h->s) + 1000000u);
  h->quit_seen = 1;
  return NULL;
}

/* A blocked actor runs when woken, at the waker's time; a daemon that
 * would tick forever is let go when the job's actors end; the job's
 * length is the latest time reached. */
static void test_block_wake_and_daemons(void** state) {
  (void)state;
  sim_sched s;
  sim_sched_init(&s, 1);
  handoff h = {.s = &s};
  pthread_t t[3];
  assert_int_equal(sim_sched_spawn(&s, 0, timer, &h, &t[0]), 0);
  assert_int_equal(sim_sched_spawn(&s, 1, waiter, &h, &t[1]), 0);
  assert_int_equal(sim_sched_spawn(&s, 1, poster, &h, &t[2]), 0);
  assert_int_equal(sim_sched_run(&s), 0);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  assert_int_equal(h.value, 1);
  assert_int_equal(h.seen_at, 5000000u);
  assert_int_equal(h.quit_seen, 1);
  assert_int_equal(sim_sched_latest(&s), 5000000u);
  sim_sched_free(&s);
}

/* Every actor waiting on another: the schedule says so and ends. */
static void* stuck(void* p) {
  handoff* h = p;
  while (!sim_sched_quit(h->s)) sim_sched_block(h->s, &h->q);
  return NULL;
}

static void test_deadlock_ends_the_job(void** state) {
  (void)state;
  sim_sched s;
  sim_sched_init(&s, 1);
  handoff h = {.s = &s};
  pthread_t t;
  assert_int_equal(sim_sched_spawn(&s, 1, stuck, &h, &t), 0);
  assert_int_equal(sim_sched_run(&s), -1);
  pthread_join(t, NULL);
  sim_sched_free(&s);
}

/* Real time: plain threads, the machine's clock. */
static void test_real_time(void** state) {
  (void)state;
  sim_sched s;
  sim_sched_init(&s, 0);
  const uint64_t t0 = sim_sched_now(&s);
  sim_sched_sleep_until(&s, t0 + 2000000u);
  assert_true(sim_sched_now(&s) >= t0 + 2000000u);
  sim_sched_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_is_the_clock_and_the_same_twice),
      cmocka_unit_test(test_block_wake_and_daemons),
      cmocka_unit_test(test_deadlock_ends_the_job),
      cmocka_unit_test(test_real_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
