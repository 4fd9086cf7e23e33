/*
 * test_fanout.c — the fan-out profiler (libnccl-profiler-fanout.so) under
 * the emulator, on every host profile, forwarding to the test children
 * (child_plugin.c, libchild-v1.so … libchild-v7.so).
 *
 * The yardstick is the emulator itself: a child loaded by the emulator
 * directly gets each event through the emulator's own copy of the host's
 * version adapter; loaded under the fan-out, together with every other
 * child version the host knows, each asking for a different mask, it must
 * see the same events with the same fields, parents and states.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "nccl/profiler.h"
#include "nccl/profiler_v6.h"
#include "sim_helpers.h"

typedef void (*setup_fn)(int mask, int fail_rank, long fail_call);
typedef char* (*lines_fn)(void);
typedef void (*counts_fn)(long* out);
typedef void (*null_fn)(int types);

typedef struct {
  void* dl;
  setup_fn setup;
  lines_fn lines;
  counts_fn counts;
  null_fn null_types;
  char path[512];
} child;

static child kids[8];

static const char* fo_path(const char* file) {
  static char buf[8][512];
  static int k;
  char* b = buf[k++ % 8];
  snprintf(b, 512, "%s/%s", FO_DIR, file);
  return b;
}

static child* kid(int v) {
  child* k = &kids[v];
  if (!k->dl) {
    char file[64];
    snprintf(file, sizeof file, v == 0 ? "libchild-dump.so" : "libchild-v%d.so", v);
    snprintf(k->path, sizeof k->path, "%s", fo_path(file));
    k->dl = dlopen(k->path, RTLD_NOW | RTLD_LOCAL);
    if (!k->dl) fail_msg("cannot open %s: %s", k->path, dlerror());
    k->setup = (setup_fn)dlsym(k->dl, "child_setup");
    k->lines = (lines_fn)dlsym(k->dl, "child_lines");
    k->counts = (counts_fn)dlsym(k->dl, "child_counts");
    k->null_types = (null_fn)dlsym(k->dl, "child_null");
    assert_non_null(k->setup);
  }
  return k;
}

/* What each child version asks for: different masks, none with ProxyCtrl
 * (its Idle/Sleep cycles follow the scheduler). */
static int mask_of(int v, pt_host h) {
  const int proxy = ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep;
  int rccl = h == PT_HOST_RCCL || h == PT_HOST_RCCL_2_31;
  switch (v) {
    case 1: return proxy;
    case 2: return ncclProfileGroup | ncclProfileColl;
    case 3: return ncclProfileColl | ncclProfileKernelCh | ncclProfileP2p;
    case 4: return proxy | ncclProfileKernelCh;
    case 5: return ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi | ncclProfileKernelLaunch | proxy;
    case 6: return (0x7fff & ~ncclProfileProxyCtrl) | (rccl ? ncclProfileProxyDiag | ncclProfileProxyDiag_v7 : 0);
    default: return 0x1ffff & ~ncclProfileProxyCtrl;
  }
}

static void run(pt_sim_config* c) {
  pt_sim_result res;
  assert_int_equal(pt_sim_run(c, &res, stderr), 0);
  assert_int_equal(res.status, 0);
  assert_true(res.loaded);
  pt_sim_result_free(&res);
}

static char env_list[4096], env_host[128];

static void fanout_config(pt_sim_config* c, pt_host h, const char* list) {
  st_config(c, h, FO_LIB);
  snprintf(env_list, sizeof env_list, "PROXYTRACE_FANOUT_PLUGINS=%s", list);
  snprintf(env_host, sizeof env_host, "PROXYTRACE_FANOUT_HOST=%s", pt_host_name(h));
  c->env[c->n_env++] = env_list;
  c->env[c->n_env++] = env_host;
}

static int count_lines(const char* s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static void expect_same(const char* want, const char* got, const char* what) {
  if (strcmp(want, got)) {
    const char* keep = getenv("FO_TEST_KEEP"); /* a folder: both runs' lines go there */
    if (keep) {
      char f[512];
      snprintf(f, sizeof f, "%s/direct.txt", keep);
      FILE* o = fopen(f, "w");
      if (o) fputs(want, o), fclose(o);
      snprintf(f, sizeof f, "%s/fanned.txt", keep);
      o = fopen(f, "w");
      if (o) fputs(got, o), fclose(o);
    }
    /* Print the first line that differs. */
    const char* a = want;
    const char* b = got;
    while (*a && *a == *b) a++, b++;
    while (a > want && a[-1] != '\n') a--, b--;
    fail_msg("%s: direct and fanned runs differ at\n  direct: %.300s\n  fanned: %.300s", what, a, b);
  }
}

/* NCCL 2.26's v1 adapter sets trafficBytes to 0, "removed in v3"
 * (v2.26.2-1 src/plugin/profiler/profiler_v1.cc), as the fan-out does; the
 * emulator passes the byte count on. Cuts " tb=N" out of `s`, and counts
 * the values that were not 0. */
static int strip_traffic(char* s) {
  int nonzero = 0;
  for (char* p = strstr(s, " tb="); p; p = strstr(p, " tb=")) {
    char* e = p + 4;
    nonzero += *e != '0' || (e[1] >= '0' && e[1] <= '9');
    while (*e >= '0' && *e <= '9') e++;
    memmove(p, e, strlen(e) + 1);
  }
  return nonzero;
}

/* What a test asks of each child: its version, its mask (0: mask_of) and
 * the event types it returns NULL handles for. */
typedef struct {
  int v, mask, nulls;
} kid_plan;

typedef void (*config_fn)(pt_sim_config* c);

static void setup_kid(const kid_plan* k, pt_host h) {
  kid(k->v)->setup(k->mask ? k->mask : mask_of(k->v, h), -2, -1);
  kid(k->v)->null_types(k->nulls);
}

/* Runs each child of `plan` alone under host h (the emulator loading it),
 * then all of them under the fan-out, in the order given, each with the
 * same mask and NULL handles, and the same job (`extra` adds to it): each
 * child must see exactly what it saw alone. Returns how many lines of the
 * fanned runs hold `needle` (NULL: 0). */
static int same_as_alone(pt_host h, const kid_plan* plan, int n, config_fn extra, const char* needle) {
  char* direct[8] = {0};
  for (int k = 0; k < n; k++) {
    pt_sim_config c;
    st_config(&c, h, kid(plan[k].v)->path);
    if (extra) extra(&c);
    for (int u = 1; u <= 7; u++) kid(u)->setup(0, -2, -1);
    setup_kid(&plan[k], h);
    run(&c);
    direct[k] = kid(plan[k].v)->lines();
    assert_true(count_lines(direct[k]) > 0);
  }
  char list[4096] = "";
  for (int k = 0; k < n; k++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%s", len ? "," : "", kid(plan[k].v)->path);
    setup_kid(&plan[k], h);
  }
  pt_sim_config c;
  fanout_config(&c, h, list);
  if (extra) extra(&c);
  run(&c);
  int found = 0;
  for (int k = 0; k < n; k++) {
    const int v = plan[k].v;
    char* got = kid(v)->lines();
    char what[96];
    snprintf(what, sizeof what, "%s, child v%d", pt_host_name(h), v);
    if (h == PT_HOST_NCCL_2_26 && v == 1) {
      strip_traffic(direct[k]);
      assert_int_equal(strip_traffic(got), 0);
    }
    expect_same(direct[k], got, what);
    for (const char* p = needle ? strstr(got, needle) : NULL; p; p = strstr(p + 1, needle)) found++;
    long cnt[5];
    kid(v)->counts(cnt);
    assert_int_equal(cnt[0], 4); /* one init per rank */
    assert_int_equal(cnt[1], 4); /* one finalize per rank */
    free(got);
    free(direct[k]);
  }
  return found;
}

static int skip_host(pt_host h) {
  const char* only = getenv("FO_TEST_HOST"); /* one profile, when debugging */
  return h == PT_HOST_NCCL_2_27_3 || (only && strcmp(only, pt_host_name(h)));
}

/* Every host profile (but 2.27.3, which opens no path), every child version
 * it knows, all at once under the fan-out. */
static void test_each_child_as_if_alone(void** state) {
  for (int hi = 0; hi < PT_HOST_COUNT; hi++) {
    pt_host h = (pt_host)hi;
    if (skip_host(h)) continue;
    int native = pt_host_info_of(h)->native_version;
    kid_plan plan[8];
    int n = 0;
    for (int v = native; v >= 1; v--) plan[n++] = (kid_plan){v, 0, 0};
    same_as_alone(h, plan, n, NULL, NULL);
  }
}

/* Children that return NULL handles: the host sends nothing more for such
 * an event, and on 2.23-2.27 starts no Coll/P2p under a NULL Group handle
 * and no step under a NULL ProxyOp handle (on every release: no step
 * states); on 2.23-2.25 a task whose Coll/P2p a child was not offered
 * carries no ops for it. Another child that returns handles keeps the
 * fan-out's handles non-NULL, so each child's NULLs are the fan-out's to
 * honour. On every host, against the child alone. */
static void test_null_handles(void** state) {
  const int m = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep;
  for (int hi = 0; hi < PT_HOST_COUNT; hi++) {
    pt_host h = (pt_host)hi;
    if (skip_host(h)) continue;
    int native = pt_host_info_of(h)->native_version;
    if (native == 1) {
      kid_plan one[] = {{1, m, ncclProfileGroup}};
      assert_true(same_as_alone(h, one, 1, NULL, " null") > 0);
      continue;
    }
    kid_plan plan[] = {{native, m, ncclProfileGroup | ncclProfileProxyOp},
                       {native - 1, m, ncclProfileColl | ncclProfileP2p}};
    assert_true(same_as_alone(h, plan, 2, NULL, " null") > 0);
  }
}

/* PXN: rank 0's sends are progressed by rank 1's proxy, with rank 0's
 * context and parents; the fan-out forwards them as the host does, with
 * the context it was given, to each child that asked for ProxyOps. */
static void pxn_job(pt_sim_config* c) {
  c->faults[c->n_faults++] = (pt_sim_fault){.kind = PT_FAULT_PXN, .rank = 0, .channel = -1, .step = 0, .arg = 1};
}
static void test_pxn(void** state) {
  static const pt_host hosts[] = {PT_HOST_NCCL_2_25, PT_HOST_NCCL_2_27, PT_HOST_NCCL_2_30, PT_HOST_NCCL_2_32};
  for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
    pt_host h = hosts[i];
    if (skip_host(h)) continue;
    int native = pt_host_info_of(h)->native_version;
    kid_plan plan[] = {{native, 0, 0}, {1, 0, 0}};
    assert_true(same_as_alone(h, plan, 2, pxn_job, "ctx=foreign") > 0);
  }
}

/* 2.31+: RAS sets every rank's mask (ncclras CONTROL PROFILER_MASK) after
 * the children's inits; each child then gets what it gets alone under that
 * mask, as its own. From the first call: the emulator's ranks share one
 * host mask, and a change later in the run would reach ranks a call apart. */
static void ras_job(pt_sim_config* c) {
  c->ras[0].batch = 0;
  c->ras[0].mask = ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep |
                   ncclProfileKernelCh | ncclProfileGroupApi | ncclProfileCollApi;
  c->n_ras = 1;
}
static void test_ras_mask(void** state) {
  static const pt_host hosts[] = {PT_HOST_NCCL_2_31, PT_HOST_RCCL_2_31};
  for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
    if (skip_host(hosts[i])) continue;
    /* Masks far from RAS's, so that each child's events change with it. */
    kid_plan plan[] = {{7, ncclProfileGroup | ncclProfileColl, 0},
                       {6, ncclProfileProxyOp | ncclProfileProxyStep, 0},
                       {4, ncclProfileKernelCh | ncclProfileP2p, 0}};
    same_as_alone(hosts[i], plan, 3, ras_job, NULL);
  }
}

static st_capture cap;

/* A child that fails init on one rank, and one that errors mid-run: each
 * warned about once per communicator it is dropped from; the other child
 * sees what it sees alone. */
static void test_failing_children(void** state) {
  pt_host h = PT_HOST_NCCL_2_30;
  pt_sim_config c;
  st_config(&c, h, kid(6)->path);
  kid(6)->setup(mask_of(6, h), -2, -1);
  run(&c);
  char* alone = kid(6)->lines();

  char list[2048];
  snprintf(list, sizeof list, "%s,%s,%s", kid(5)->path, kid(6)->path, kid(4)->path);
  kid(5)->setup(mask_of(5, h), 1, -1); /* init fails on rank 1 */
  kid(6)->setup(mask_of(6, h), -2, -1);
  kid(4)->setup(mask_of(4, h), -2, 100); /* its 100th event call errs */
  fanout_config(&c, h, list);
  st_capture_init(&cap, &c, 4);
  run(&c);
  char* got = kid(6)->lines();
  expect_same(alone, got, "the healthy child");
  free(got);
  free(alone);

  int failed_init = 0, disabled = 0;
  for (int r = 0; r <= 4; r++) {
    failed_init += st_capture_count(&cap, r, "failed init");
    disabled += st_capture_count(&cap, r, "disabled for this communicator");
  }
  assert_int_equal(failed_init, 1);
  assert_int_equal(disabled, 1);
  long k[5];
  kid(5)->counts(k);
  assert_int_equal(k[0], 4);
  assert_int_equal(k[1], 3); /* finalized where init succeeded */
  char* l5 = kid(5)->lines();
  assert_true(count_lines(l5) > 0);
  assert_null(strstr(l5, " r=1 ")); /* nothing of rank 1 */
  free(l5);
  kid(4)->counts(k);
  assert_int_equal(k[1], 4); /* still finalized everywhere */
  st_capture_free(&cap);
}

/* A missing child and the fan-out itself as a child: each refused with a
 * warning that says why; the child after them is served as alone. */
static void test_missing_and_loop(void** state) {
  pt_host h = PT_HOST_NCCL_2_32;
  pt_sim_config c;
  st_config(&c, h, kid(7)->path);
  kid(7)->setup(mask_of(7, h), -2, -1);
  run(&c);
  char* alone = kid(7)->lines();

  char list[2048];
  snprintf(list, sizeof list, "%s/no-such-profiler.so, %s ,%s", FO_DIR,
           FO_LIB, kid(7)->path);
  kid(7)->setup(mask_of(7, h), -2, -1);
  fanout_config(&c, h, list);
  st_capture_init(&cap, &c, 4);
  run(&c);
  char* got = kid(7)->lines();
  long k[5];
  kid(7)->counts(k);
  assert_int_equal(k[0], 4);
  expect_same(alone, got, "the child after a missing one and a loop");
  int missing = 0, loop = 0;
  for (int r = 0; r <= 4; r++) {
    missing += st_capture_count(&cap, r, "no-such-profiler.so' not loaded");
    loop += st_capture_count(&cap, r, "is a fan-out: refused");
  }
  assert_int_equal(missing, 1);
  assert_int_equal(loop, 1);
  st_capture_free(&cap);
  free(got);
  free(alone);
}

/* RCCL's dump hook reaches each child that exports one, once per rank. */
static void test_dump_hook(void** state) {
  pt_host h = PT_HOST_RCCL;
  char list[2048];
  snprintf(list, sizeof list, "%s,%s", kid(0)->path, kid(6)->path);
  kid(0)->setup(mask_of(6, h), -2, -1);
  kid(6)->setup(mask_of(6, h), -2, -1);
  pt_sim_config c;
  fanout_config(&c, h, list);
  pt_sim_result res;
  assert_int_equal(pt_sim_run(&c, &res, stderr), 0);
  assert_true(res.has_dump_hook);
  pt_sim_result_free(&res);
  long k[5];
  kid(0)->counts(k);
  assert_int_equal(k[4], 4);
  kid(6)->counts(k);
  assert_int_equal(k[4], 0); /* exports no hook */
}

/* A ProxyStep under `parent`: started (a handle back), one state, stopped. */
static void one_step(const ncclProfiler_v6_t* t, void* ctx, void* parent, int step) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyStep;
  d.parentObj = parent;
  d.proxyStep.step = step;
  void* h = NULL;
  assert_int_equal(t->startEvent(ctx, &h, &d), ncclSuccess);
  assert_non_null(h);
  assert_int_equal(t->recordEventState(h, ncclProfilerProxyStepSendWait, NULL), ncclSuccess);
  assert_int_equal(t->stopEvent(h), ncclSuccess);
}

/* What the host may pass that the fan-out must survive: NULL handles and
 * arguments, a context it never made, another process's ProxyOp (PXN), a
 * step whose parent is not a ProxyOp. Each is a no-op that returns
 * success; the child sees none of them. */
static void test_odd_host_input(void** state) {
  setenv("PROXYTRACE_FANOUT_PLUGINS", kid(6)->path, 1);
  setenv("PROXYTRACE_FANOUT_HOST", "nccl-2.30", 1);
  kid(6)->setup(0x7fff, -2, -1);
  void* dl = dlopen(FO_LIB, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(dl);
  const ncclProfiler_v6_t* t = dlsym(dl, "ncclProfiler_v6");
  assert_non_null(t);
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(t->init(&ctx, 7, &mask, "odd", 1, 1, 0, NULL), ncclSuccess);
  assert_int_equal(mask, 0x7fff & ~ncclProfileKernelPhase);
  assert_int_equal(t->init(NULL, 7, &mask, "odd", 1, 1, 0, NULL), ncclInvalidArgument);
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  void* h = (void*)&d;
  assert_int_equal(t->startEvent(ctx, NULL, &d), ncclSuccess);
  assert_int_equal(t->startEvent(ctx, &h, NULL), ncclSuccess);
  assert_null(h);
  d.type = ncclProfileGroup;
  int not_ours;
  h = (void*)&d;
  assert_int_equal(t->startEvent(&not_ours, &h, &d), ncclSuccess);
  assert_null(h);
  /* PXN: another process's op, with its context and parent, which must
   * reach the child as they are and never be read (an unreadable page). */
  void* far = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(far != MAP_FAILED);
  d.type = ncclProfileProxyOp;
  d.parentObj = far;
  d.proxyOp.pid = getpid() + 1;
  d.proxyOp.nSteps = 1;
  assert_int_equal(t->startEvent(far, &h, &d), ncclSuccess);
  assert_non_null(h);
  one_step(t, far, h, 5);
  assert_int_equal(t->stopEvent(h), ncclSuccess);
  memset(&d, 0, sizeof d);
  /* A step under a Group handle: served from the general ring, not from
   * a ProxyOp's step slots. */
  void* group = NULL;
  d.type = ncclProfileGroup;
  assert_int_equal(t->startEvent(ctx, &group, &d), ncclSuccess);
  assert_non_null(group);
  one_step(t, ctx, group, 3);
  assert_int_equal(t->stopEvent(group), ncclSuccess);
  assert_int_equal(t->stopEvent(NULL), ncclSuccess);
  assert_int_equal(t->recordEventState(NULL, ncclProfilerProxyStepSendWait, NULL), ncclSuccess);
  assert_int_equal(t->finalize(&not_ours), ncclSuccess);
  char* lines = kid(6)->lines();
  assert_int_equal(count_lines(lines), 4); /* the PXN op and its step, the Group and its step */
  assert_non_null(strstr(lines, "t=16 r=0 step=3 <t=1 r=0>  9:- stops=1"));
  assert_non_null(strstr(lines, "t=16 r=0 step=5 ctx=foreign <t=8 r=0 pid="));
  assert_non_null(strstr(lines, "ns=1 chunk=0 send=0 h=0 oc=0 fi=0 pr=0 pa=0 tb=0 nb=0 raw=0 ctx=foreign <foreign>"));
  munmap(far, 4096);
  free(lines);
  long k[5];
  kid(6)->counts(k);
  assert_int_equal(k[1], 0);
  assert_int_equal(t->finalize(ctx), ncclSuccess);
  kid(6)->counts(k);
  assert_int_equal(k[1], 1);
  dlclose(dl);
  unsetenv("PROXYTRACE_FANOUT_PLUGINS");
  unsetenv("PROXYTRACE_FANOUT_HOST");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_each_child_as_if_alone),
      cmocka_unit_test(test_null_handles),
      cmocka_unit_test(test_pxn),
      cmocka_unit_test(test_ras_mask),
      cmocka_unit_test(test_failing_children),
      cmocka_unit_test(test_missing_and_loop),
      cmocka_unit_test(test_dump_hook),
      cmocka_unit_test(test_odd_host_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
