/*
 * test_concurrency.c — recording on the proxy thread while other threads
 * dump (RCCL dumps from the destroying thread, ncclCommDump from any thread),
 * concurrent init of several communicators, and a finalize racing a dump.
 * Run under TSan in CI; here each dump is also checked for torn records.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rccl_host.h"

static rh_plugin plugin;
static atomic_int stop_flag;
static atomic_long dumps_done, lines_checked;

static int setup(void** state) {
  (void)state;
  rh_open(&plugin, NULL);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  rh_close(&plugin);
  return 0;
}

/* Thread-local line checks: every record line must be self-consistent —
 * counters never above nSteps, done <= transmitted <= posted for sends. */
typedef struct {
  long lines;
  int bad;
  int header_ok;
} check_state;

static _Thread_local check_state* cur;

static long field(const char* line, const char* name) {
  const char* p = strstr(line, name);
  return p ? strtol(p + strlen(name), NULL, 10) : -999;
}

static void checking_logger(ncclDebugLogLevel level, unsigned long flags, const char* file,
                            int line, const char* fmt, ...) {
  (void)flags;
  (void)file;
  (void)line;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (level != 3) cur->bad++;
  if (getenv("PT_TEST_VERBOSE")) fprintf(stderr, "%s\n", buf);
  if (cur->lines++ == 0) {
    cur->header_ok = strncmp(buf, "commDump for all active ops mapSizeMB:", 38) == 0;
    return;
  }
  if (strncmp(buf, "createT:", 8) != 0) return;
  long ns = field(buf, " ns:"), po = field(buf, " po:"), tr = field(buf, " trans:"),
       dn = field(buf, " done:");
  int send = strstr(buf, "(S)") != NULL;
  if (po > ns || tr > ns || dn > ns || dn > tr || (send && tr > po)) cur->bad++;
  if (!strstr(buf, "status:")) cur->bad++;
}

typedef struct {
  void* ctx;
  int rounds;
} rec_arg;

static void* recorder(void* p) {
  rec_arg* a = p;
  for (int r = 0; r < a->rounds; r++) {
    /* a completed op, and a few left active at various points */
    rh_op_desc d = {.comm_hash = 5, .op_count = 2 * r, .channel = r % 4, .peer = 1,
                    .is_send = r % 2, .raw_nsteps = 16, .slice_steps = 1, .nbytes = 64,
                    .chunk_size = 64};
    rh_run_full(&plugin, a->ctx, &d, 2);
    rh_op op;
    d.op_count = 2 * r + 1;
    rh_op_active(&plugin, a->ctx, &op, &d, 8, d.is_send ? 0 : 8, 6, 3, 1);
    rh_advance(&op, 8, d.is_send ? 0 : 8, 8, 8, 1); /* at most 8 steps in flight */
    rh_advance(&op, 16, d.is_send ? 0 : 16, 16, 16, 1);
    rh_op_stop(&op);
  }
  atomic_store(&stop_flag, 1);
  return NULL;
}

static void* dumper(void* p) {
  void* ctx = p;
  check_state st = {0};
  cur = &st;
  int bad = 0;
  while (!atomic_load(&stop_flag)) {
    memset(&st, 0, sizeof st);
    plugin.dump(ctx, checking_logger);
    if (st.lines > 0 && (!st.header_ok || st.bad)) bad++;
    atomic_fetch_add(&dumps_done, 1);
    atomic_fetch_add(&lines_checked, st.lines);
  }
  return (void*)(intptr_t)bad;
}

static void test_record_while_dumping(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 5, 0, 2);
  atomic_store(&stop_flag, 0);
  atomic_store(&dumps_done, 0);
  pthread_t rec, d1, d2;
  rec_arg a = {ctx, 3000};
  assert_int_equal(pthread_create(&d1, NULL, dumper, ctx), 0);
  assert_int_equal(pthread_create(&d2, NULL, dumper, ctx), 0);
  assert_int_equal(pthread_create(&rec, NULL, recorder, &a), 0);
  void* r1;
  void* r2;
  pthread_join(rec, NULL);
  pthread_join(d1, &r1);
  pthread_join(d2, &r2);
  assert_int_equal((intptr_t)r1, 0);
  assert_int_equal((intptr_t)r2, 0);
  assert_true(atomic_load(&dumps_done) > 0);
  /* after recording: 32 finished ops and nothing active */
  check_state st = {0};
  cur = &st;
  plugin.dump(ctx, checking_logger);
  assert_int_equal(st.lines, 1 + 32);
  assert_int_equal(st.bad, 0);
  plugin.p->finalize(ctx);
}

typedef struct {
  uint64_t hash;
  void* ctx;
} init_arg;

static void* init_one(void* p) {
  init_arg* a = p;
  int mask = 0;
  plugin.p->init(&a->ctx, a->hash, &mask, "c", 2, 8, (int)a->hash, NULL);
  return NULL;
}

/* Several communicators initialised at once (grouped inits use one thread
 * each), then each recorded and finalized independently. */
static void test_concurrent_init(void** state) {
  (void)state;
  enum { N = 8 };
  init_arg a[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    a[i].hash = (uint64_t)i + 100;
    a[i].ctx = NULL;
    assert_int_equal(pthread_create(&th[i], NULL, init_one, &a[i]), 0);
  }
  for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < N; i++) {
    assert_non_null(a[i].ctx);
    for (int j = 0; j < i; j++) assert_ptr_not_equal(a[i].ctx, a[j].ctx);
    rh_op op;
    rh_op_desc d = {.comm_hash = a[i].hash, .op_count = 0, .peer = 1, .is_send = 1,
                    .raw_nsteps = 4, .slice_steps = 1};
    rh_op_active(&plugin, a[i].ctx, &op, &d, 1, 0, 0, 0, 0);
  }
  for (int i = 0; i < N; i++) {
    rh_dump(&plugin, a[i].ctx);
    assert_int_equal(rh_captured.n, 2);
    char key[64];
    snprintf(key, sizeof key, "<%d:0:0>", i + 100);
    assert_non_null(strstr(rh_captured.text[1], key));
    plugin.p->finalize(a[i].ctx);
  }
  rh_log_clear();
}

static void* dump_forever(void* p) {
  void* ctx = p;
  check_state st = {0};
  cur = &st;
  while (!atomic_load(&stop_flag)) {
    plugin.dump(ctx, checking_logger);
    atomic_fetch_add(&dumps_done, 1);
  }
  return NULL;
}

/* ncclCommDump from a watchdog while the communicator is destroyed: the
 * dump either completes or does nothing; finalize waits for it. */
static void test_finalize_races_dump(void** state) {
  (void)state;
  for (int round = 0; round < 20; round++) {
    void* ctx = rh_init(&plugin, 8, 0, 2);
    rh_op_desc d = {.comm_hash = 8, .op_count = 0, .peer = 1, .is_send = 1, .raw_nsteps = 4,
                    .slice_steps = 1};
    rh_op op;
    rh_op_start(&plugin, ctx, &op, &d);
    rh_op_in_progress(&op);
    atomic_store(&stop_flag, 0);
    atomic_store(&dumps_done, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, dump_forever, ctx), 0);
    while (atomic_load(&dumps_done) < 2) sched_yield();
    plugin.p->finalize(ctx); /* op never stopped: freed with the context */
    long after = atomic_load(&dumps_done);
    while (atomic_load(&dumps_done) < after + 2) sched_yield(); /* dumps of a dead ctx */
    atomic_store(&stop_flag, 1);
    pthread_join(th, NULL);
  }
}

/* The host creates a context on one thread (init) and its proxy thread then
 * uses it, handed over through the host's own structures. Here the hand-over
 * is a relaxed atomic, which orders nothing: the plugin's own check of the
 * context must make the context's fields visible (an acquire load of its
 * magic number). Under TSan a relaxed check is a reported data race on
 * those fields; elsewhere the op must simply be recorded. */
static _Atomic(void*) handed;

static void* create_and_hand_over(void* p) {
  (void)p;
  void* ctx = NULL;
  int mask = 0;
  plugin.p->init(&ctx, 21, &mask, "handed", 2, 2, 0, NULL);
  atomic_store_explicit(&handed, ctx, memory_order_relaxed);
  return NULL;
}

static void* use_handed(void* p) {
  void* ctx;
  while (!(ctx = atomic_load_explicit(&handed, memory_order_relaxed))) sched_yield();
  rh_op_desc d = {.comm_hash = 21, .op_count = 0, .peer = 1, .is_send = 1, .raw_nsteps = 4,
                  .slice_steps = 1};
  rh_op_start(&plugin, ctx, p, &d);
  rh_op_in_progress(p);
  return NULL;
}

static void test_context_handed_over(void** state) {
  (void)state;
  atomic_store(&handed, NULL);
  rh_op op;
  pthread_t user, creator;
  assert_int_equal(pthread_create(&user, NULL, use_handed, &op), 0); /* first: no order */
  assert_int_equal(pthread_create(&creator, NULL, create_and_hand_over, NULL), 0);
  pthread_join(creator, NULL);
  pthread_join(user, NULL);
  assert_non_null(op.handle);
  void* ctx = atomic_load(&handed);
  rh_dump(&plugin, ctx);
  assert_int_equal(rh_captured.n, 2);
  assert_non_null(strstr(rh_captured.text[1], "<21:0:0>"));
  plugin.p->finalize(ctx);
  rh_log_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_record_while_dumping),
      cmocka_unit_test(test_concurrent_init),
      cmocka_unit_test(test_finalize_races_dump),
      cmocka_unit_test(test_context_handed_over),
  };
  return cmocka_run_group_tests_name("concurrency", tests, setup, teardown);
}
