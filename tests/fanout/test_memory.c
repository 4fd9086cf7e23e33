/*
 * test_memory.c — what the fan-out's handles cost (src/fanout/ring.h):
 * memory that follows what the children asked for and what is in flight,
 * grown only from application-thread events, bounded, and a clean outcome
 * when memory runs out. The bytes are the allocator's own count
 * (tests/common/failalloc.c: allocated minus freed).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/failalloc.h"
#include "fanout/ring.h"
#include "nccl/profiler_v6.h"

typedef void (*setup_fn)(int mask, int fail_rank, long fail_call);

static const ncclProfiler_v6_t* t;
static setup_fn child_setup;

static void open_fanout(void) {
  static char path[512];
  snprintf(path, sizeof path, "%s/libchild-v6.so", FO_DIR);
  setenv("PROXYTRACE_FANOUT_PLUGINS", path, 1);
  setenv("PROXYTRACE_FANOUT_HOST", "nccl-2.30", 1);
  void* kid = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(kid);
  child_setup = (setup_fn)dlsym(kid, "child_setup");
  void* dl = dlopen(FO_LIB, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(dl);
  t = dlsym(dl, "ncclProfiler_v6");
  assert_non_null(t);
  /* One communicator for the whole run: the children stay loaded, so what
   * a test measures is a communicator's, not the loading's. */
  static void* keep;
  int m = 0;
  child_setup(ncclProfileColl, -2, -1);
  assert_int_equal(t->init(&keep, 99, &m, "keep", 1, 1, 0, NULL), ncclSuccess);
}

static const int kProxy = ncclProfileGroup | ncclProfileColl | ncclProfileProxyOp | ncclProfileProxyStep;

/* Bytes one communicator's init keeps, for a child asking for `mask`. */
static long init_bytes(int mask, void** ctx) {
  child_setup(mask, -2, -1); /* the child's own storage first */
  int m = 0;
  fa_arm(0, 0);
  fa_track_only();
  assert_int_equal(t->init(ctx, 1, &m, "mem", 1, 1, 0, NULL), ncclSuccess);
  long b = fa_live_bytes();
  fa_disarm();
  return b;
}

static void* start(void* ctx, uint64_t type, void* parent) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = type;
  d.parentObj = parent;
  if (type == ncclProfileProxyOp) {
    d.proxyOp.pid = getpid();
    d.proxyOp.nSteps = 4;
  }
  void* h = NULL;
  assert_int_equal(t->startEvent(ctx, &h, &d), ncclSuccess);
  return h;
}

/* An application-thread event: where the rings grow. */
static void* coll(void* ctx) {
  void* c = start(ctx, ncclProfileColl, NULL);
  assert_non_null(c);
  assert_int_equal(t->stopEvent(c), ncclSuccess);
  return c;
}

/* A communicator whose child asks for proxy events, a Coll for its ops'
 * parent, and the allocator counting the bytes from here. */
static void* proxy_comm(void** ctx) {
  init_bytes(kProxy, ctx);
  void* parent = coll(*ctx);
  fa_arm(0, 0);
  fa_track_only();
  return parent;
}

/* An idle communicator costs what its children's events need: no op ring
 * for a child without proxy events, a first chunk of each otherwise — tens
 * of KiB, where handles for everything cost 540 KiB. */
static void test_idle_communicator(void** state) {
  if (!FA_INTERPOSED) skip();
  void* a = NULL;
  void* b = NULL;
  long tasks_only = init_bytes(ncclProfileGroup | ncclProfileColl, &a);
  long proxy = init_bytes(kProxy, &b);
  const long h = (long)fo_handle_size(1);
  print_message("idle communicator: %ld bytes (Group, Coll), %ld bytes (+ ProxyOp, ProxyStep)\n", tasks_only,
                proxy);
  assert_true(tasks_only >= 512 * h && tasks_only < 512 * h + 8192); /* the task ring, a context */
  assert_true(proxy >= tasks_only + 64 * 9 * h);                     /* + 64 ops with their steps */
  assert_true(proxy < 64 * 1024);
  assert_int_equal(t->finalize(a), ncclSuccess);
  assert_int_equal(t->finalize(b), ncclSuccess);
}

/* ProxyOps in flight beyond the first chunk: the ring doubles at the next
 * application-thread event, ahead of need, so none is lost; once they are
 * stopped, as many again in turn take no more memory. */
static void test_grows_with_ops_in_flight(void** state) {
  if (!FA_INTERPOSED) skip();
  void* ctx = NULL;
  void* parent = proxy_comm(&ctx);
  enum { N = 1000 };
  static void* op[N];
  int got = 0;
  for (int i = 0; i < N; i++) {
    if (i % 32 == 0) coll(ctx);
    op[i] = start(ctx, ncclProfileProxyOp, parent);
    got += op[i] != NULL;
  }
  long grown = fa_live_bytes();
  assert_int_equal(got, N);
  const long slot = 9 * (long)fo_handle_size(1);
  print_message("%d ops in flight: %ld bytes more\n", N, grown);
  /* It doubles once half full: at most about twice what is in flight. */
  assert_true(grown >= (N - 64) * slot && grown <= 2 * N * slot + 65536);
  for (int i = 0; i < N; i++) assert_int_equal(t->stopEvent(op[i]), ncclSuccess);
  for (int i = 0; i < 20 * N; i++) {
    if (i % 32 == 0) coll(ctx);
    void* o = start(ctx, ncclProfileProxyOp, parent);
    assert_non_null(o);
    assert_int_equal(t->stopEvent(o), ncclSuccess);
  }
  assert_int_equal(fa_live_bytes(), grown);
  fa_disarm();
  assert_int_equal(t->finalize(ctx), ncclSuccess);
}

/* Past FO_OP_MAX ops in flight an op is dropped (no child sees it), and
 * the memory stops growing there. Without application-thread events the
 * proxy thread never allocates: ops past the first chunk are dropped. */
static void test_bounded(void** state) {
  if (!FA_INTERPOSED) skip();
  void* ctx = NULL;
  void* parent = proxy_comm(&ctx);
  enum { N = 5000 };
  static void* op[N];
  int got = 0;
  for (int i = 0; i < 100; i++) got += (op[i] = start(ctx, ncclProfileProxyOp, parent)) != NULL;
  assert_int_equal(got, 64);
  assert_int_equal(fa_live_bytes(), 0);
  for (int i = 100; i < N; i++) {
    if (i % 16 == 0) coll(ctx);
    got += (op[i] = start(ctx, ncclProfileProxyOp, parent)) != NULL;
  }
  const long slot = 9 * (long)fo_handle_size(1);
  assert_int_equal(got, 4096);
  assert_true(fa_live_bytes() <= 4096 * slot);
  fa_disarm();
  for (int i = 0; i < N; i++) assert_int_equal(t->stopEvent(op[i]), ncclSuccess);
  assert_int_equal(t->finalize(ctx), ncclSuccess);
}

/* Out of memory: an init that cannot allocate fails with a system error
 * (the host goes on without the profiler for that communicator); a ring
 * that cannot grow keeps what it has and drops what does not fit. */
static void test_out_of_memory(void** state) {
  if (!FA_INTERPOSED) skip();
  void* ctx = NULL;
  int m = 0;
  child_setup(kProxy, -2, -1);
  fa_arm(1, 1);
  assert_int_equal(t->init(&ctx, 2, &m, "mem", 1, 1, 0, NULL), ncclSystemError);
  assert_null(ctx);
  fa_disarm();
  assert_int_equal(t->init(&ctx, 3, &m, "mem", 1, 1, 0, NULL), ncclSuccess);
  void* parent = coll(ctx);
  fa_arm(1, 1); /* every growth fails from here */
  int got = 0;
  for (int i = 0; i < 200; i++) {
    if (i % 16 == 0) coll(ctx);
    got += start(ctx, ncclProfileProxyOp, parent) != NULL;
  }
  long failed = fa_failed();
  fa_disarm();
  assert_int_equal(got, 64);
  assert_true(failed > 0);
  assert_int_equal(t->finalize(ctx), ncclSuccess);
}

/* The ring itself: a slot's address follows from its index across chunks
 * of 4, 4, 8, 16; every handle of a slot is initialised, an op slot's
 * followed by its step handles; a take needs a free slot. */
static void test_ring_slots(void** state) {
  fo_ring r;
  const size_t hs = fo_handle_size(2);
  fo_ring_init(&r, (fo_ctx*)(void*)&r, FO_KIND_OP, 4, 32, 1 + FO_STEP_SLOTS, hs);
  assert_null(fo_ring_take(&r));
  assert_int_equal(fo_ring_tend(&r, 0), 0);
  assert_int_equal(fo_ring_tend(&r, 1), 1);
  assert_int_equal(atomic_load(&r.cap), 4);
  fo_handle* taken[32];
  for (int i = 0; i < 4; i++) assert_non_null(taken[i] = fo_ring_take(&r));
  assert_null(fo_ring_take(&r)); /* all busy */
  assert_int_equal(atomic_load(&r.crowded), 1);
  unsigned n = 4;
  for (unsigned want = 8; want <= 32; want *= 2) {
    assert_int_equal(fo_ring_tend(&r, 1), 1);
    assert_int_equal(atomic_load(&r.cap), want);
    while (n < want) assert_non_null(taken[n++] = fo_ring_take(&r));
    assert_null(fo_ring_take(&r)); /* full again: crowded */
  }
  assert_int_equal(fo_ring_tend(&r, 1), 0); /* at max */
  assert_int_equal(fo_ring_bytes(&r), 32 * r.stride);
  for (unsigned i = 0; i < 32; i++) {
    fo_handle* h = fo_ring_slot(&r, i);
    for (unsigned j = 0; j < i; j++) assert_true(fo_ring_slot(&r, j) != h);
    assert_int_equal(h->magic, FO_MAGIC);
    assert_int_equal(h->kind, FO_KIND_OP);
    assert_ptr_equal(h->ctx, &r);
    fo_handle* step = (fo_handle*)(void*)((char*)h + FO_STEP_SLOTS * hs);
    assert_int_equal(step->kind, FO_KIND_STEP);
    assert_int_equal(step->magic, FO_MAGIC);
  }
  fo_ring_put(taken[5]);
  assert_ptr_equal(fo_ring_take(&r), taken[5]);
  fo_ring_free(&r);
  assert_int_equal(atomic_load(&r.cap), 0);
}

int main(void) {
  open_fanout();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ring_slots),
      cmocka_unit_test(test_idle_communicator),
      cmocka_unit_test(test_grows_with_ops_in_flight),
      cmocka_unit_test(test_bounded),
      cmocka_unit_test(test_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
