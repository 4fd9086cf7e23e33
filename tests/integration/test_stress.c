/*
 * test_stress.c — the plugin under load from every side at once, for a
 * bounded time (PT_STRESS_MS, default 1500 ms; CI runs it under TSan too):
 *
 *   - three recording threads, each the proxy thread of its own
 *     communicator (several GPUs per process), each keeping six ops in
 *     flight and advancing them in lock step with RCCL's per-step counters;
 *   - two dumping threads dumping every communicator, round robin;
 *   - a churn thread creating, recording on, dumping and finalizing
 *     short-lived communicators, which the dumpers also dump (a dump of a
 *     communicator being destroyed), and filling one of them past its slab
 *     to inject a known number of drops.
 *
 * Every record is self-checking. A recorder advances each op by writing
 * POSTED = s, then TRANSMITTED = s, then DONE = s, so a consistent record has
 * done <= trans <= po <= done + 1 <= ns; a torn record breaks that. Each
 * recorder publishes the opCounts it has registered and not yet completed;
 * an op in that range both before and after a dump was live for the whole
 * dump and must be in it. A dumper remembers the last DONE it saw per op:
 * it must never go backwards. Drops counted must equal drops injected, and
 * the recorders' communicators must report nothing dropped or refused.
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
#include <unistd.h>

#include <cmocka.h>

#include "rccl_host.h"

enum { N_REC = 3, WINDOW = 6, NSTEPS = 16, N_DUMPERS = 2, TRACK = 1 << 14, SLOTS = 64 };

static rh_plugin plugin;
static atomic_int stop_flag;

typedef struct {
  void* ctx;
  uint64_t hash;
  _Atomic long lo, hi; /* opCounts in [lo, hi): registered, not completed */
  atomic_long ops, updates;
} recorder;

static recorder recs[N_REC];
static void* _Atomic churn_ctx; /* a communicator the churn thread may destroy at any time */
static atomic_long churn_rounds, churn_drops_injected, churn_drops_counted;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- recording ---- */

static void* record_loop(void* p) {
  recorder* r = p;
  rh_op ops[WINDOW];
  int64_t step[WINDOW];
  long next = 0;
  int n = 0; /* ops in flight: ops[0] the oldest */
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    while (n < WINDOW) {
      rh_op_desc d = {.comm_hash = r->hash, .op_count = next, .channel = (int)(next % 4),
                      .peer = 1, .is_send = 1, .raw_nsteps = NSTEPS, .slice_steps = 1,
                      .nbytes = 64, .chunk_size = 64};
      rh_op_start(&plugin, r->ctx, &ops[n], &d);
      assert_non_null(ops[n].handle);
      rh_op_in_progress(&ops[n]);
      step[n] = 0;
      n++;
      atomic_store_explicit(&r->hi, ++next, memory_order_release);
    }
    /* one step of every op in flight; the oldest completes first */
    for (int i = 0; i < n; i++) {
      if (step[i] == NSTEPS) continue;
      const int64_t s = ++step[i];
      rh_diag(&ops[i], ncclProxyDiagPosted, s, 0);
      rh_diag(&ops[i], ncclProxyDiagTransmitted, s, 0);
      rh_diag(&ops[i], ncclProxyDiagRecvTail, s, 0); /* a poll between the counters */
      if (s == NSTEPS) /* completes with this update: no longer live for dumps */
        atomic_store_explicit(&r->lo, ops[i].d.op_count + 1, memory_order_release);
      rh_diag(&ops[i], ncclProxyDiagDone, s, 0);
      atomic_fetch_add_explicit(&r->updates, 4, memory_order_relaxed);
    }
    while (n && step[0] == NSTEPS) {
      rh_op_stop(&ops[0]);
      memmove(&ops[0], &ops[1], (size_t)(n - 1) * sizeof ops[0]);
      memmove(&step[0], &step[1], (size_t)(n - 1) * sizeof step[0]);
      n--;
      atomic_fetch_add_explicit(&r->ops, 1, memory_order_relaxed);
    }
  }
  for (int i = 0; i < n; i++) rh_op_stop(&ops[i]);
  return NULL;
}

/* ---- dumping and checking ---- */

typedef rh_capture capture;

typedef struct {
  int id;
  long dumps, lines, mid_write, bad;
  char why[256];
  int64_t last_done[N_REC][TRACK];
  long last_tag[N_REC][TRACK]; /* opCount + 1 of last_done's op */
  long dump_tag[N_REC][TRACK]; /* dumps + 1 of the dump that set it */
} dumper_state;

static void bad(dumper_state* st, const char* fmt, ...) {
  if (st->bad++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->why, sizeof st->why, fmt, ap);
    va_end(ap);
  }
}

static void check_recorder_dump(dumper_state* st, int k, const capture* c, long lo2, long hi1) {
  if (!c->header_ok) bad(st, "rec %d: no header", k);
  if (c->drop_line) bad(st, "rec %d: a drop line: something was dropped or refused", k);
  for (long want = lo2; want < hi1; want++) { /* live for the whole dump */
    char key[64];
    snprintf(key, sizeof key, "<%llu:%ld:0>,", (unsigned long long)recs[k].hash, want);
    int found = 0;
    for (int i = 0; i < c->nrec && !found; i++) found = strstr(c->rec[i], key) != NULL;
    if (!found) bad(st, "rec %d: live op %ld missing from a dump", k, want);
  }
  for (int i = 0; i < c->nrec; i++) {
    const char* l = c->rec[i];
    const char* kp = strstr(l, ", <");
    long opc = kp ? strtol(strchr(kp + 3, ':') + 1, NULL, 10) : -1;
    long po = rh_field(l, " po:"), tr = rh_field(l, " trans:"), dn = rh_field(l, " done:"),
         ns = rh_field(l, " ns:");
    char key[64];
    snprintf(key, sizeof key, " <%llu:%ld:0>", (unsigned long long)recs[k].hash, opc);
    const int mid = c->mid_write && strstr(c->mid_keys, key);
    if (!mid && !(dn <= tr && tr <= po && po <= dn + 1 && po <= ns && ns == NSTEPS))
      bad(st, "rec %d: torn record: %s", k, l);
    if (opc < 0) {
      bad(st, "rec %d: no key: %s", k, l);
      continue;
    }
    /* An op that completes while the dump is taken may be in it twice, its
     * finished line (sorted first) and its active one: within one dump
     * the most advanced line counts; across dumps it never goes back. */
    long* tag = &st->last_tag[k][opc % TRACK];
    int64_t* last = &st->last_done[k][opc % TRACK];
    long* seen = &st->dump_tag[k][opc % TRACK];
    if (*seen == st->dumps + 1) {
      if (dn > *last) *last = dn;
      continue;
    }
    if (*tag == opc + 1 && dn < *last)
      bad(st, "rec %d: op %ld went back: done %ld after %lld", k, opc, dn, (long long)*last);
    *tag = opc + 1;
    *seen = st->dumps + 1;
    *last = dn;
  }
}

static void* dump_loop(void* p) {
  dumper_state* st = p;
  capture* c = rh_capture_new(64);
  for (int round = 0; !atomic_load(&stop_flag); round++) {
    const int k = (round + st->id) % (N_REC + 1);
    if (k == N_REC) { /* the churn thread's communicator: maybe being destroyed */
      rh_capture_dump(&plugin, atomic_load(&churn_ctx), c);
      if (c->lines && !c->header_ok) bad(st, "churn: no header");
    } else {
      const long hi1 = atomic_load_explicit(&recs[k].hi, memory_order_acquire);
      rh_capture_dump(&plugin, recs[k].ctx, c);
      const long lo2 = atomic_load_explicit(&recs[k].lo, memory_order_acquire);
      check_recorder_dump(st, k, c, lo2, hi1);
    }
    st->dumps++;
    st->lines += c->lines;
    st->mid_write += c->mid_write;
  }
  rh_capture_free(c);
  return NULL;
}

/* ---- churn: communicators created and destroyed while others dump ---- */

static unsigned long drop_field(const capture* c, const char* name) {
  const char* p = strstr(c->drops, name);
  return p ? strtoul(p + strlen(name), NULL, 10) : 0;
}

static void* churn_loop(void* p) {
  (void)p;
  capture* c = rh_capture_new(64);
  for (long round = 0; !atomic_load(&stop_flag); round++) {
    void* ctx = NULL;
    int mask = 0;
    plugin.p->init(&ctx, 900 + (uint64_t)round, &mask, "churn", 2, 2, 0, NULL);
    assert_non_null(ctx);
    atomic_store(&churn_ctx, ctx);
    rh_op op;
    rh_op_desc d = {.comm_hash = 900 + (uint64_t)round, .op_count = 0, .peer = 1, .is_send = 1,
                    .raw_nsteps = 4, .slice_steps = 1};
    rh_run_full(&plugin, ctx, &d, 1);
    if (round % 4 == 0) { /* fill the slab with live ops, then inject drops */
      static rh_op live[SLOTS];
      for (int i = 0; i < SLOTS; i++) {
        d.op_count = i + 1;
        rh_op_start(&plugin, ctx, &live[i], &d);
        rh_op_in_progress(&live[i]);
      }
      const int inject = 1 + (int)(round % 7);
      for (int i = 0; i < inject; i++) {
        rh_op extra;
        rh_op_start(&plugin, ctx, &extra, &d);
        assert_null(extra.handle);
      }
      rh_capture_dump(&plugin, ctx, c);
      atomic_fetch_add(&churn_drops_injected, inject);
      atomic_fetch_add(&churn_drops_counted, (long)drop_field(c, " opsDropped:"));
      assert_int_equal(drop_field(c, " opsReclaimed:"), 0);
    } else {
      rh_op_start(&plugin, ctx, &op, &d); /* finalized with an op in flight */
      rh_op_in_progress(&op);
    }
    plugin.p->finalize(ctx); /* the dumpers may be dumping it right now */
    atomic_fetch_add(&churn_rounds, 1);
  }
  rh_capture_free(c);
  return NULL;
}

static void test_stress(void** state) {
  (void)state;
  const char* e = getenv("PT_STRESS_MS");
  const double ms = e ? atof(e) : 1500.0;
  for (int k = 0; k < N_REC; k++) {
    recs[k].hash = 100 + (uint64_t)k;
    recs[k].ctx = rh_init(&plugin, recs[k].hash, k, N_REC);
  }
  atomic_store(&stop_flag, 0);
  pthread_t rt[N_REC], dt[N_DUMPERS], ct;
  static dumper_state ds[N_DUMPERS];
  for (int k = 0; k < N_REC; k++) assert_int_equal(pthread_create(&rt[k], NULL, record_loop, &recs[k]), 0);
  for (int i = 0; i < N_DUMPERS; i++) {
    memset(&ds[i], 0, sizeof ds[i]);
    ds[i].id = i;
    assert_int_equal(pthread_create(&dt[i], NULL, dump_loop, &ds[i]), 0);
  }
  assert_int_equal(pthread_create(&ct, NULL, churn_loop, NULL), 0);
  const double t0 = now_ms();
  while (now_ms() - t0 < ms) usleep(10000);
  atomic_store(&stop_flag, 1);
  for (int k = 0; k < N_REC; k++) pthread_join(rt[k], NULL);
  for (int i = 0; i < N_DUMPERS; i++) pthread_join(dt[i], NULL);
  pthread_join(ct, NULL);
  long ops = 0, updates = 0, dumps = 0, lines = 0, mid = 0;
  for (int k = 0; k < N_REC; k++) {
    ops += atomic_load(&recs[k].ops);
    updates += atomic_load(&recs[k].updates);
  }
  for (int i = 0; i < N_DUMPERS; i++) {
    if (ds[i].bad) print_message("      dumper %d: %ld bad, first: %s\n", i, ds[i].bad, ds[i].why);
    dumps += ds[i].dumps;
    lines += ds[i].lines;
    mid += ds[i].mid_write;
  }
  print_message("      %.0f ms: %ld ops (%ld counter updates) on %d communicators, %ld dumps "
                "(%ld lines checked, %ld with a record copied mid-write), %ld communicators "
                "created and destroyed, %ld drops injected, %ld counted\n",
                ms, ops, updates, N_REC, dumps, lines, mid, atomic_load(&churn_rounds),
                atomic_load(&churn_drops_injected), atomic_load(&churn_drops_counted));
  for (int i = 0; i < N_DUMPERS; i++) assert_int_equal(ds[i].bad, 0);
  assert_int_equal(atomic_load(&churn_drops_counted), atomic_load(&churn_drops_injected));
  assert_true(ops > 0 && dumps > 0 && atomic_load(&churn_rounds) > 0);
  for (int k = 0; k < N_REC; k++) plugin.p->finalize(recs[k].ctx);
}

static int setup(void** state) {
  (void)state;
  setenv("PROXYTRACE_MAX_OPS", "64", 1); /* before any thread: read at each init */
  rh_open(&plugin, NULL);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  rh_close(&plugin);
  unsetenv("PROXYTRACE_MAX_OPS");
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_stress)};
  return cmocka_run_group_tests_name("stress", tests, setup, teardown);
}
