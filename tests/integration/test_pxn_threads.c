/*
 * test_pxn_threads.c — one process driving eight GPUs (JAX and other
 * single-controller runtimes) with PXN on: eight communicators, one per
 * rank, each with its own proxy thread, and every proxy thread also runs
 * the network sends of its neighbour's communicator (PXN hands a rank's
 * sends to the proxy of another local rank: same pid, so the plugin records
 * them into the neighbour's trace from a second thread). For a bounded time
 * (PT_PXN_MS, default 1500 ms; CI runs it under TSan too):
 *
 *   - eight proxy threads: receives of their own communicator and sends of
 *     the next one, RCCL's ProxyDiag counters and step events, six ops of
 *     each kind in flight, advanced in lock step;
 *   - two dumping threads dumping every communicator, round robin, and the
 *     main thread sending the dump signal every few ms (the dumper thread
 *     writes dump files meanwhile);
 *   - a churn thread creating a communicator, running ops on it from two
 *     threads at once (stock NCCL steps on one, RCCL counters on the
 *     other), dumping and destroying it.
 *
 * Every dump is checked as test_stress.c checks it: a consistent record has
 * done <= trans <= po <= done + 1 <= ns; an op live for the whole dump is in
 * it, whichever thread runs it; nothing is dropped or refused. At the end,
 * with every thread stopped, each communicator's dump holds exactly the ops
 * left in flight, with the counters they were left at, and the churn
 * rounds' dumps held exactly the ops both threads ran. A trace with one
 * slot list and one op id table for both threads fails this within the
 * first second: the id table two threads probe and shift at once is
 * corrupted, and proxy threads loop in it for good (the test times out).
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rccl_host.h"

enum { N_RANKS = 8, WINDOW = 6, NSTEPS = 8, N_DUMPERS = 2, TRACK = 1 << 14, LEFT = 3 };

static rh_plugin plugin;
static atomic_int stop_flag;
static char dump_dir[64];

/* One communicator: its receives run on its own proxy thread (opCounts
 * 2k), its sends on the previous rank's (PXN, opCounts 2k + 1). */
typedef struct {
  void* ctx;
  uint64_t hash;
  /* per direction (0 recv, 1 send): ops [lo, hi) by their k are registered
   * and not completed */
  _Atomic long lo[2], hi[2];
  atomic_long ops;
} comm;

static comm comms[N_RANKS];
/* The end: each proxy thread leaves its ops in flight (left), the main
 * thread checks the dumps, then lets them stop their ops (release): an
 * op's events come from the thread that started it. */
static atomic_int left, release;
static void* _Atomic churn_ctx;
static atomic_long churn_rounds, churn_bad, starts_refused;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the proxy threads ---- */

typedef struct {
  rh_op op[WINDOW];
  int64_t step[WINDOW];
  int n;
  long next;
} lane_ops;

static void fill(comm* c, lane_ops* l, int dir, int peer) {
  while (l->n < WINDOW) {
    rh_op_desc d = {.comm_hash = c->hash, .op_count = 2 * l->next + dir, .channel = (int)(l->next % 4),
                    .peer = peer, .is_send = dir, .raw_nsteps = NSTEPS, .slice_steps = 1,
                    .nbytes = 64, .chunk_size = 64};
    rh_op_start(&plugin, c->ctx, &l->op[l->n], &d);
    if (!l->op[l->n].handle) { /* dropped: the final checks say so */
      atomic_fetch_add(&starts_refused, 1);
      return;
    }
    rh_op_in_progress(&l->op[l->n]);
    /* its first step posted at once, as the hosts' progress functions do:
     * an op registered without updates is what RCCL's missing ProxyDiag
     * looks like (diag.c checks every 8 ops) */
    rh_advance(&l->op[l->n], 1, 0, 0, 0, 0);
    l->step[l->n++] = 0;
    atomic_store_explicit(&c->hi[dir], ++l->next, memory_order_release);
  }
}

/* One step of every op in flight (the oldest completes first), then the
 * completed ones stopped. */
static void step_all(comm* c, lane_ops* l, int dir) {
  for (int i = 0; i < l->n; i++) {
    if (l->step[i] == NSTEPS) continue;
    const int64_t s = ++l->step[i];
    rh_op* op = &l->op[i];
    if (s == NSTEPS) atomic_store_explicit(&c->lo[dir], op->d.op_count / 2 + 1, memory_order_release);
    if (dir) rh_advance(op, s, 0, s, s, 1);
    else rh_advance(op, s, s, s, s, 1);
  }
  while (l->n && l->step[0] == NSTEPS) {
    rh_op_stop(&l->op[0]);
    memmove(&l->op[0], &l->op[1], (size_t)(l->n - 1) * sizeof l->op[0]);
    memmove(&l->step[0], &l->step[1], (size_t)(l->n - 1) * sizeof l->step[0]);
    l->n--;
    atomic_fetch_add_explicit(&c->ops, 1, memory_order_relaxed);
  }
}

typedef struct {
  int rank;
  lane_ops recv, send; /* left in flight at the end: checked by the final dumps */
} proxy;

static proxy proxies[N_RANKS];

static void* proxy_loop(void* p) {
  proxy* px = p;
  char name[16];
  snprintf(name, sizeof name, "NCCL Progress %d", px->rank);
  pthread_setname_np(pthread_self(), name);
  comm* own = &comms[px->rank];
  comm* pxn = &comms[(px->rank + 1) % N_RANKS]; /* its sends run here */
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    fill(own, &px->recv, 0, (px->rank + N_RANKS - 1) % N_RANKS);
    fill(pxn, &px->send, 1, (px->rank + 2) % N_RANKS);
    step_all(own, &px->recv, 0);
    step_all(pxn, &px->send, 1);
  }
  /* Leave LEFT ops of each kind in flight at known counters: every op
   * completed and stopped but the last LEFT started, which are advanced to
   * step 2 at least (step[]). */
  fill(own, &px->recv, 0, (px->rank + N_RANKS - 1) % N_RANKS);
  fill(pxn, &px->send, 1, (px->rank + 2) % N_RANKS);
  for (lane_ops* l = &px->recv; l; l = l == &px->recv ? &px->send : NULL) {
    while (l->n > LEFT) {
      rh_op* op = &l->op[0];
      if (op->d.is_send) rh_advance(op, NSTEPS, 0, NSTEPS, NSTEPS, 0);
      else rh_advance(op, NSTEPS, NSTEPS, NSTEPS, NSTEPS, 0);
      rh_op_stop(op);
      memmove(&l->op[0], &l->op[1], (size_t)(l->n - 1) * sizeof l->op[0]);
      memmove(&l->step[0], &l->step[1], (size_t)(l->n - 1) * sizeof l->step[0]);
      l->n--;
    }
    for (int i = 0; i < l->n; i++)
      if (l->step[i] < 2) {
        rh_op* op = &l->op[i];
        if (op->d.is_send) rh_advance(op, 2, 0, 2, 2, 0);
        else rh_advance(op, 2, 2, 2, 2, 0);
        l->step[i] = 2;
      }
  }
  atomic_fetch_add(&left, 1);
  while (!atomic_load(&release)) usleep(1000);
  for (int i = 0; i < px->recv.n; i++) rh_op_stop(&px->recv.op[i]);
  for (int i = 0; i < px->send.n; i++) rh_op_stop(&px->send.op[i]);
  return NULL;
}

/* ---- dumping and checking ---- */

typedef rh_capture capture;
#define MAX_RECORDS (2 * N_RANKS * WINDOW + 64)

static void dump_into(capture* c, void* ctx) { rh_capture_dump(&plugin, ctx, c); }

/* The opCount of a record line ("..., <hash:opCount:id>, ..."), -1 if none. */
static long op_count_of(const char* l) {
  const char* kp = strstr(l, ", <");
  const char* colon = kp ? strchr(kp + 3, ':') : NULL;
  return colon ? strtol(colon + 1, NULL, 10) : -1;
}

static int has_op(const capture* c, uint64_t hash, long op_count, const char* status) {
  char key[64];
  snprintf(key, sizeof key, "<%llu:%ld:", (unsigned long long)hash, op_count);
  for (int i = 0; i < c->nrec; i++)
    if (strstr(c->rec[i], key) && (!status || strstr(c->rec[i], status))) return 1;
  return 0;
}

typedef struct {
  int id;
  long dumps, lines, mid_write, bad;
  char why[256];
} dumper_state;

static void bad(dumper_state* st, const char* fmt, ...) {
  if (st->bad++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->why, sizeof st->why, fmt, ap);
    va_end(ap);
  }
}

static void check_dump(dumper_state* st, int k, const capture* c, const long lo2[2], const long hi1[2]) {
  if (!c->header_ok) bad(st, "rank %d: no header", k);
  if (c->drop_line) bad(st, "rank %d: %s", k, c->drops);
  for (int dir = 0; dir < 2; dir++)
    for (long want = lo2[dir]; want < hi1[dir]; want++) /* live for the whole dump */
      if (!has_op(c, comms[k].hash, 2 * want + dir, NULL))
        bad(st, "rank %d: live %s op %ld (run by the %s proxy thread) missing from a dump", k,
            dir ? "send" : "recv", 2 * want + dir, dir ? "PXN" : "own");
  for (int i = 0; i < c->nrec; i++) {
    const char* l = c->rec[i];
    const long opc = op_count_of(l);
    if (opc < 0) {
      bad(st, "rank %d: no key: %s", k, l);
      continue;
    }
    char key[64];
    snprintf(key, sizeof key, " <%llu:%ld:", (unsigned long long)comms[k].hash, opc);
    const long po = rh_field(l, " po:"), tr = rh_field(l, " trans:"), dn = rh_field(l, " done:"), ns = rh_field(l, " ns:");
    const int mid = c->mid_write && strstr(c->mid_keys, key);
    if (!mid && !(dn <= tr && tr <= po && po <= dn + 1 && po <= ns && ns == NSTEPS))
      bad(st, "rank %d: torn record: %s", k, l);
    /* op ids count per lane: one op per opCount, so every id is 0 */
    if (!strstr(l, ":0>")) bad(st, "rank %d: an id other than 0: %s", k, l);
  }
}

static void* dump_loop(void* p) {
  dumper_state* st = p;
  capture* c = rh_capture_new(MAX_RECORDS);
  for (int round = 0; !atomic_load(&stop_flag); round++) {
    const int k = (round + st->id) % (N_RANKS + 1);
    if (k == N_RANKS) { /* the churn communicator: maybe being destroyed */
      dump_into(c, atomic_load(&churn_ctx));
      if (c->lines && !c->header_ok) bad(st, "churn: no header");
    } else {
      long hi1[2], lo2[2];
      for (int d = 0; d < 2; d++) hi1[d] = atomic_load_explicit(&comms[k].hi[d], memory_order_acquire);
      dump_into(c, comms[k].ctx);
      for (int d = 0; d < 2; d++) lo2[d] = atomic_load_explicit(&comms[k].lo[d], memory_order_acquire);
      check_dump(st, k, c, lo2, hi1);
    }
    st->dumps++;
    st->lines += c->lines;
    st->mid_write += c->mid_write;
  }
  rh_capture_free(c);
  return NULL;
}

/* ---- churn: a communicator that two threads write, made and destroyed ---- */

typedef struct {
  void* ctx;
  uint64_t hash;
  int stock; /* stock NCCL steps (counters from step events), else RCCL counters */
} churn_arg;

/* Stock NCCL (v6 table, RCCL fields zero): one send op through every step
 * state, stopped. DONE follows the step stops. */
static void stock_send(void* ctx) {
  void* op = rh_stock_op_active(&plugin, ctx, 1, 4, 1);
  for (int s = 0; s < 4; s++) {
    ncclProfilerEventDescr_v6_t e;
    memset(&e, 0, sizeof e);
    e.type = ncclProfileProxyStep;
    e.parentObj = op;
    e.proxyStep.step = s;
    void* h = NULL;
    plugin.p->startEvent(ctx, &h, &e);
    assert_non_null(h);
    ncclProfilerEventStateArgs_v6_t a = {.proxyStep = {.transSize = 4096}};
    plugin.p->recordEventState(h, ncclProfilerProxyStepSendGPUWait, &a);
    plugin.p->recordEventState(h, ncclProfilerProxyStepSendPeerWait_v4, &a);
    plugin.p->recordEventState(h, ncclProfilerProxyStepSendWait, &a);
    plugin.p->stopEvent(h);
  }
  plugin.p->stopEvent(op);
}

static void* churn_writer(void* p) {
  churn_arg* a = p;
  if (a->stock) {
    stock_send(a->ctx);
  } else {
    rh_op_desc d = {.comm_hash = a->hash, .op_count = 7, .peer = 1, .is_send = 0, .raw_nsteps = 4,
                    .slice_steps = 1};
    rh_run_full(&plugin, a->ctx, &d, 1);
  }
  return NULL;
}

static void* churn_loop(void* p) {
  (void)p;
  capture* c = rh_capture_new(MAX_RECORDS);
  for (long round = 0; !atomic_load(&stop_flag); round++) {
    void* ctx = NULL;
    int mask = 0;
    const uint64_t hash = 900 + (uint64_t)round;
    plugin.p->init(&ctx, hash, &mask, "churn", 1, 2, 0, NULL);
    assert_non_null(ctx);
    atomic_store(&churn_ctx, ctx);
    churn_arg args[2] = {{ctx, hash, 1}, {ctx, hash, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, churn_writer, &args[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    /* Both ops finished, one from each thread: both in the ring. */
    dump_into(c, ctx);
    if (c->nrec != 2 || !has_op(c, hash, 7, "status:DONE") || c->drop_line) atomic_fetch_add(&churn_bad, 1);
    plugin.p->finalize(ctx); /* the dumpers may be dumping it right now */
    atomic_fetch_add(&churn_rounds, 1);
  }
  rh_capture_free(c);
  return NULL;
}

/* ---- the test ---- */

static int count_signal_dumps(void) { return rh_count_in_files(dump_dir, ".txt", "trigger=signal"); }

static void test_pxn_threads(void** state) {
  (void)state;
  const char* e = getenv("PT_PXN_MS");
  const double ms = e ? atof(e) : 1500.0;
  for (int k = 0; k < N_RANKS; k++) {
    comms[k].hash = 500 + (uint64_t)k;
    comms[k].ctx = rh_init(&plugin, comms[k].hash, k, N_RANKS);
    proxies[k].rank = k;
  }
  atomic_store(&stop_flag, 0);
  atomic_store(&left, 0);
  atomic_store(&release, 0);
  pthread_t pt[N_RANKS], dt[N_DUMPERS], ct;
  static dumper_state ds[N_DUMPERS];
  for (int k = 0; k < N_RANKS; k++) assert_int_equal(pthread_create(&pt[k], NULL, proxy_loop, &proxies[k]), 0);
  for (int i = 0; i < N_DUMPERS; i++) {
    memset(&ds[i], 0, sizeof ds[i]);
    ds[i].id = i;
    assert_int_equal(pthread_create(&dt[i], NULL, dump_loop, &ds[i]), 0);
  }
  assert_int_equal(pthread_create(&ct, NULL, churn_loop, NULL), 0);
  const double t0 = now_ms();
  long signals = 0;
  while (now_ms() - t0 < ms) {
    usleep(5000);
    if (++signals % 4 == 0) raise(SIGUSR1); /* every 20 ms: the dumper thread dumps every communicator */
  }
  atomic_store(&stop_flag, 1);
  while (atomic_load(&left) < N_RANKS) usleep(1000);
  for (int i = 0; i < N_DUMPERS; i++) pthread_join(dt[i], NULL);
  pthread_join(ct, NULL);
  long ops = 0, dumps = 0, lines = 0, mid = 0;
  for (int k = 0; k < N_RANKS; k++) ops += atomic_load(&comms[k].ops);
  for (int i = 0; i < N_DUMPERS; i++) {
    if (ds[i].bad) print_message("      dumper %d: %ld bad, first: %s\n", i, ds[i].bad, ds[i].why);
    dumps += ds[i].dumps;
    lines += ds[i].lines;
    mid += ds[i].mid_write;
  }
  print_message("      %.0f ms: %ld ops on %d communicators by %d proxy threads (half by PXN), %ld dumps "
                "(%ld lines checked, %ld with a record copied mid-write), %ld churn rounds\n",
                ms, ops, N_RANKS, N_RANKS, dumps, lines, mid, atomic_load(&churn_rounds));
  for (int i = 0; i < N_DUMPERS; i++) assert_int_equal(ds[i].bad, 0);
  assert_int_equal(atomic_load(&starts_refused), 0);
  assert_int_equal(atomic_load(&churn_bad), 0);
  assert_true(ops > 0 && dumps > 0 && atomic_load(&churn_rounds) > 0);

  /* Exactly the ops left in flight, at their counters, both threads' ops
   * in each communicator's dump, no drop line. */
  capture* c = rh_capture_new(MAX_RECORDS);
  for (int k = 0; k < N_RANKS; k++) {
    dump_into(c, comms[k].ctx);
    assert_true(c->header_ok);
    if (c->drop_line) fail_msg("rank %d: %s", k, c->drops);
    const lane_ops* own = &proxies[k].recv;
    const lane_ops* pxn = &proxies[(k + N_RANKS - 1) % N_RANKS].send;
    int active = 0;
    for (int i = 0; i < c->nrec; i++) active += strstr(c->rec[i], "status:DONE") == NULL;
    assert_int_equal(active, own->n + pxn->n);
    assert_int_equal(own->n, LEFT);
    assert_int_equal(pxn->n, LEFT);
    for (int i = 0; i < own->n; i++) {
      const char* want = NULL;
      for (int j = 0; j < c->nrec && !want; j++)
        if (op_count_of(c->rec[j]) == own->op[i].d.op_count) want = c->rec[j];
      assert_non_null(want);
      assert_int_equal(rh_field(want, " po:"), own->step[i]);
      assert_int_equal(rh_field(want, " recvd:"), own->step[i]);
      assert_int_equal(rh_field(want, " done:"), own->step[i]);
    }
    for (int i = 0; i < pxn->n; i++) {
      const char* want = NULL;
      for (int j = 0; j < c->nrec && !want; j++)
        if (op_count_of(c->rec[j]) == pxn->op[i].d.op_count) want = c->rec[j];
      if (!want) fail_msg("rank %d: PXN send %lld not in the final dump", k, (long long)pxn->op[i].d.op_count);
      assert_int_equal(rh_field(want, " po:"), pxn->step[i]);
      assert_int_equal(rh_field(want, " trans:"), pxn->step[i]);
      assert_int_equal(rh_field(want, " done:"), pxn->step[i]);
    }
  }
  rh_capture_free(c);
  atomic_store(&release, 1);
  for (int k = 0; k < N_RANKS; k++) pthread_join(pt[k], NULL);
  /* The dump signal was taken at least once (files in PROXYTRACE_DUMP_DIR;
   * counted once the proxy threads are gone: a fork of fewer threads). */
  for (int i = 0; i < 200 && count_signal_dumps() == 0; i++) usleep(10000);
  const int signal_dumps = count_signal_dumps();
  print_message("      %d signal dumps\n", signal_dumps);
  assert_true(signal_dumps > 0);
  for (int k = 0; k < N_RANKS; k++) plugin.p->finalize(comms[k].ctx);
}

static int setup(void** state) {
  (void)state;
  snprintf(dump_dir, sizeof dump_dir, "/tmp/pt-pxn-threads-XXXXXX");
  assert_non_null(mkdtemp(dump_dir));
  /* before any thread: read at each init */
  setenv("PROXYTRACE_DUMP_DIR", dump_dir, 1);
  setenv("PROXYTRACE_DUMP_SIGNAL", "USR1", 1);
  setenv("PROXYTRACE_MAX_OPS", "256", 1);
  rh_open(&plugin, NULL);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  rh_close(&plugin);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dump_dir);
  if (system(cmd) != 0) return -1;
  unsetenv("PROXYTRACE_DUMP_DIR");
  unsetenv("PROXYTRACE_DUMP_SIGNAL");
  unsetenv("PROXYTRACE_MAX_OPS");
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pxn_threads)};
  return cmocka_run_group_tests_name("pxn_threads", tests, setup, teardown);
}
