/*
 * test_stock_nccl.c — the plugin under stock NVIDIA NCCL: every table
 * v1..v6 driven with the event sequence of the NCCL release that binds it
 * (spec nccl-profiler-abi.md §6.5-§6.7 for 2.27+, §6.6 "2.23-2.26 sequence"),
 * no RCCL fields and no ProxyDiag. The counters must follow the steps.
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

#include "nccl/profiler_v1.h"
#include "nccl/profiler_v2.h"
#include "nccl/profiler_v3.h"
#include "nccl/profiler_v4.h"
#include "nccl/profiler_v5.h"
#include "rccl_host.h"

static rh_plugin plugin;

/* What the stock tables ask for: the proxy events and their parents, and
 * from v3 on the kernel channels. */
#define STOCK_MASK (ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep)
#define STOCK_MASK_V3 (STOCK_MASK | ncclProfileKernelCh)

static int setup(void** state) {
  (void)state;
  rh_open(&plugin, NULL);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  rh_log_clear();
  rh_close(&plugin);
  return 0;
}

/* The dump line holding `key`, or fail. */
static const char* line_of(void* ctx, const char* key) {
  rh_dump(&plugin, ctx);
  for (int i = 1; i < rh_captured.n; i++)
    if (strstr(rh_captured.text[i], key)) return rh_captured.text[i];
  fail_msg("no dump line with %s", key);
  return NULL;
}

static long field(const char* line, const char* name) {
  const char* p = strstr(line, name);
  assert_non_null(p);
  return strtol(p + strlen(name), NULL, 10);
}

/* ---- NCCL 2.27 with the v4 table ---- */

static ncclProfiler_v4_t* v4(void) {
  ncclProfiler_v4_t* t = dlsym(plugin.so, "ncclProfiler_v4");
  assert_non_null(t);
  return t;
}

static void* v4_op(void* ctx, int is_send, int nsteps) {
  ncclProfilerEventDescr_v4_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyOp;
  d.rank = 2;
  d.proxyOp.pid = getpid();
  d.proxyOp.channelId = 1;
  d.proxyOp.peer = 6;
  d.proxyOp.nSteps = nsteps;
  d.proxyOp.chunkSize = 1 << 19;
  d.proxyOp.isSend = is_send;
  void* h = NULL;
  v4()->startEvent(ctx, &h, &d);
  assert_non_null(h);
  ncclProfilerEventStateArgs_v4_t a;
  memset(&a, 0xAB, sizeof a); /* the v5 adapter passes uninitialised args with 19 */
  v4()->recordEventState(h, ncclProfilerProxyOpInProgress_v4, &a);
  return h;
}

static void* v4_step(void* ctx, void* op, int step) {
  ncclProfilerEventDescr_v4_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyStep;
  d.parentObj = op;
  d.proxyStep.step = step;
  void* h = NULL;
  v4()->startEvent(ctx, &h, &d);
  assert_non_null(h);
  return h;
}

static void v4_state(void* h, int state) {
  ncclProfilerEventStateArgs_v4_t a = {.proxyStep = {.transSize = 1 << 19}};
  v4()->recordEventState(h, (ncclProfilerEventState_v4_t)state, &a);
}

static void test_v4_send_and_recv(void** state) {
  (void)state;
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(v4()->init(&ctx, &mask, "c", 0xabc, 2, 8, 2, rh_logger), ncclSuccess);
  assert_int_equal(mask, STOCK_MASK_V3);
  /* Known types we do not trace get NULL silently; a non-type is refused. */
  ncclProfilerEventDescr_v4_t other;
  memset(&other, 0, sizeof other);
  void* h = (void*)0x1;
  other.type = ncclProfileProxyCtrl;
  v4()->startEvent(ctx, &h, &other);
  assert_null(h);
  h = (void*)0x1;
  other.type = 0;
  v4()->startEvent(ctx, &h, &other);
  assert_null(h);
  rh_dump(&plugin, ctx);
  assert_int_equal(rh_captured.n, 3);
  /* ProxyCtrl comes only under its own bit, which the plugin never asks for */
  assert_string_equal(rh_captured.text[1], "proxytrace host: mask: changed by the host");
  assert_non_null(strstr(rh_captured.text[2], "badState:1"));
  void* send = v4_op(ctx, 1, 4);
  void* st[4];
  /* send: start+GPUWait posts; PeerWait (retried) = data ready; SendWait =
   * isend accepted; stop = done. Three steps posted, two sent, one done. */
  for (int s = 0; s < 3; s++) {
    st[s] = v4_step(ctx, send, s);
    v4_state(st[s], ncclProfilerProxyStepSendGPUWait);
  }
  for (int s = 0; s < 2; s++) {
    v4_state(st[s], ncclProfilerProxyStepSendPeerWait_v4);
    v4_state(st[s], ncclProfilerProxyStepSendPeerWait_v4);
    v4_state(st[s], ncclProfilerProxyStepSendWait);
  }
  v4()->stopEvent(st[0]);
  const char* l = line_of(ctx, "<2748:-1:0>");
  assert_non_null(strstr(l, "2->6(S)"));
  assert_non_null(strstr(l, "[fu,pr,pa,tb,ck]:-1,-1,-1,0,524288"));
  assert_int_equal(field(l, " po:"), 3);
  assert_int_equal(field(l, " ke:"), 2);
  assert_int_equal(field(l, " trans:"), 2);
  assert_int_equal(field(l, " done:"), 1);
  assert_int_equal(field(l, " ns:"), 4);
  assert_null(strstr(l, "postT:0,")); /* posting stamps postT, isend stamps sendT */
  assert_null(strstr(l, "sendT:0,"));
  assert_non_null(strstr(l, "status:POSTING"));
  /* recv: start, RecvWait = posted, FlushWait = received, GPUWait = handed
   * to the GPU, stop = consumed */
  void* recv = v4_op(ctx, 0, 2);
  void* r0 = v4_step(ctx, recv, 0);
  void* r1 = v4_step(ctx, recv, 1);
  v4_state(r0, ncclProfilerProxyStepRecvWait);
  v4_state(r1, ncclProfilerProxyStepRecvWait);
  v4_state(r0, ncclProfilerProxyStepRecvFlushWait);
  v4_state(r1, ncclProfilerProxyStepRecvFlushWait);
  v4_state(r0, ncclProfilerProxyStepRecvGPUWait);
  l = line_of(ctx, "<2748:-1:1>");
  assert_non_null(strstr(l, "2->6(R)"));
  assert_int_equal(field(l, " po:"), 2);
  assert_int_equal(field(l, " recvd:"), 2);
  assert_int_equal(field(l, " trans:"), 1);
  assert_non_null(strstr(l, "status:FLUSHING"));
  v4()->stopEvent(r0);
  v4_state(r1, ncclProfilerProxyStepRecvGPUWait);
  v4()->stopEvent(r1); /* done == nSteps: finished */
  l = line_of(ctx, "<2748:-1:1>");
  assert_non_null(strstr(l, "status:DONE"));
  assert_int_equal(field(l, " done:"), 2);
  /* finish the send */
  for (int s = 1; s < 3; s++) v4()->stopEvent(st[s]);
  st[3] = v4_step(ctx, send, 3);
  v4_state(st[2], ncclProfilerProxyStepSendPeerWait_v4);
  v4_state(st[2], ncclProfilerProxyStepSendWait);
  v4_state(st[3], ncclProfilerProxyStepSendPeerWait_v4);
  v4_state(st[3], ncclProfilerProxyStepSendWait);
  v4()->stopEvent(st[3]);
  l = line_of(ctx, "<2748:-1:0>");
  assert_non_null(strstr(l, "status:DONE"));
  assert_int_equal(field(l, " done:"), 4);
  v4()->stopEvent(send);
  v4()->stopEvent(recv);
  v4()->finalize(ctx);
}

/* ---- NCCL 2.23-2.26 with the v1 table: ProxyOp states carry `steps` ---- */

static void test_v1_proxyop_states(void** state) {
  (void)state;
  ncclProfiler_v1_t* t = dlsym(plugin.so, "ncclProfiler_v1");
  assert_non_null(t);
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(t->init(&ctx, &mask), ncclSuccess);
  assert_int_equal(mask, STOCK_MASK);
  ncclProfilerEventDescr_v1_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyOp;
  d.rank = 5; /* v1 init gives no rank: the descriptor's is learnt */
  d.proxyOp.pid = getpid();
  d.proxyOp.peer = 1;
  d.proxyOp.nSteps = 3;
  d.proxyOp.isSend = 1;
  void* op = NULL;
  t->startEvent(ctx, &op, &d); /* registered at start: no state 19 in 2.23-2.26 */
  assert_non_null(op);
  ncclProfilerEventStateArgs_v1_t a = {.proxyOp = {.transSize = 4096, .steps = 2}};
  t->recordEventState(op, ncclProfilerProxyOpSendPosted, &a);
  /* step events carry NULL args in these releases */
  ncclProfilerEventDescr_v1_t sd;
  memset(&sd, 0, sizeof sd);
  sd.type = ncclProfileProxyStep;
  sd.parentObj = op;
  void* s0 = NULL;
  t->startEvent(ctx, &s0, &sd);
  t->recordEventState(s0, ncclProfilerProxyStepSendGPUWait, NULL);
  a.proxyOp.steps = 1;
  t->recordEventState(op, ncclProfilerProxyOpSendTransmitted, &a);
  const char* l = line_of(ctx, "<0:-1:0>");
  assert_non_null(strstr(l, "5->1(S)"));
  assert_int_equal(field(l, " po:"), 2);
  assert_int_equal(field(l, " trans:"), 1);
  assert_non_null(strstr(l, "status:POSTING"));
  t->recordEventState(op, ncclProfilerProxyOpSendPosted, NULL); /* no args: nothing */
  a.proxyOp.steps = 3;
  t->recordEventState(op, ncclProfilerProxyOpSendPosted, &a);
  t->recordEventState(op, ncclProfilerProxyOpSendTransmitted, &a);
  t->stopEvent(s0);
  l = line_of(ctx, "<0:-1:0>");
  assert_int_equal(field(l, " done:"), 1); /* the step stop counted one */
  t->recordEventState(op, ncclProfilerProxyOpSendDone, &a);
  l = line_of(ctx, "<0:-1:0>");
  assert_non_null(strstr(l, "status:DONE"));
  assert_int_equal(rh_captured.n, 2);
  t->stopEvent(op);
  t->finalize(ctx);
}

/* ---- the Group handle: 2.23-2.25 gate every proxy event behind it ---- */

/* Starts a Group event through table `name` (v1..v6) and returns the handle
 * the plugin gave. The descriptors of v1-v4 put a one-byte type first, v5-v6
 * an eight-byte one; every version's `parentObj` follows at offset 8. */
static void* group_handle_of(const char* name, void* ctx) {
  typedef ncclResult_t (*start_fn)(void*, void**, void*);
  typedef ncclResult_t (*stop_fn)(void*);
  struct table { const char* name; void* init; start_fn start; stop_fn stop; void* rec; } *t;
  t = dlsym(plugin.so, name);
  assert_non_null(t);
  uint64_t descr[32];
  memset(descr, 0, sizeof descr);
  descr[0] = ncclProfileGroup; /* little-endian: the low byte is the v1-v4 type */
  void* h = (void*)0x1;
  assert_int_equal(t->start(ctx, &h, descr), ncclSuccess);
  if (h) assert_int_equal(t->stop(h), ncclSuccess);
  return h;
}

static void test_group_handle_per_table(void** state) {
  (void)state;
  ncclProfiler_v1_t* t1 = dlsym(plugin.so, "ncclProfiler_v1");
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(t1->init(&ctx, &mask), ncclSuccess);
  /* NCCL 2.23 (v1) and 2.24-2.25 (v2) give a task its activation mask only
   * under a non-NULL Group handle, and 2.23-2.27 (v1..v4) send Coll and P2p
   * events only under one; 2.28+ (v5, v6) need it for neither. */
  void* g1 = group_handle_of("ncclProfiler_v1", ctx);
  void* g2 = group_handle_of("ncclProfiler_v2", ctx);
  assert_non_null(g1);
  assert_non_null(g2);
  assert_non_null(group_handle_of("ncclProfiler_v3", ctx));
  assert_non_null(group_handle_of("ncclProfiler_v4", ctx));
  assert_null(group_handle_of("ncclProfiler_v5", ctx));
  assert_null(group_handle_of("ncclProfiler_v6", ctx));
  /* Many groups, stopped and given states: nothing allocated, refused or
   * disturbed; a ProxyOp of the task still records. */
  ncclProfilerEventStateArgs_v1_t a = {.proxyOp = {.transSize = 1, .steps = 1}};
  for (int i = 0; i < 1000; i++) {
    void* g = group_handle_of("ncclProfiler_v2", ctx);
    assert_ptr_equal(g, g2);
    t1->recordEventState(g, ncclProfilerProxyOpSendPosted, &a);
  }
  ncclProfilerEventDescr_v1_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyOp;
  d.parentObj = NULL; /* no Coll handle: no opCount */
  d.rank = 0;
  d.proxyOp.pid = getpid();
  d.proxyOp.peer = 1;
  d.proxyOp.nSteps = 2;
  d.proxyOp.isSend = 1;
  void* op = NULL;
  t1->startEvent(ctx, &op, &d);
  assert_non_null(op);
  assert_ptr_not_equal(op, g1);
  t1->recordEventState(op, ncclProfilerProxyOpSendPosted, &a);
  const char* l = line_of(ctx, "<0:-1:0>");
  assert_int_equal(field(l, " po:"), 1);
  assert_int_equal(rh_captured.n, 2); /* header and the op: no drop line */
  t1->stopEvent(op);
  t1->finalize(ctx);
}

/* The Group sentinel handed to a table that never gives it out (a host
 * mixing tables; found by fuzz_abi): counted as a bad handle, never read as
 * a slot, and it is no step parent either. */
static void test_group_handle_in_other_tables(void** state) {
  (void)state;
  ncclProfiler_v1_t* t1 = dlsym(plugin.so, "ncclProfiler_v1");
  void* c1 = NULL;
  int mask = 0;
  t1->init(&c1, &mask);
  void* g = group_handle_of("ncclProfiler_v1", c1);
  assert_non_null(g);
  void* ctx = rh_init(&plugin, 31, 0, 2);
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  plugin.p->recordEventState(g, ncclProfilerProxyDiagUpdate, &a);
  plugin.p->recordEventState(g, ncclProfilerProxyStepSendWait, &a);
  plugin.p->stopEvent(g);
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyStep;
  e.parentObj = g;
  void* h = (void*)0x1;
  plugin.p->startEvent(ctx, &h, &e);
  assert_null(h);
  rh_dump(&plugin, ctx);
  assert_non_null(strstr(rh_captured.text[1], " badHandle:3 "));
  assert_non_null(strstr(rh_captured.text[1], " wrongContext:1"));
  plugin.p->finalize(ctx);
  t1->finalize(c1);
}

/* A Coll task handle where an op handle belongs (a host mixing handles;
 * with its sequence number in the low bits it looks like an op handle's
 * offset): a ProxyDiag update, a step state and a stop on it, and a step
 * started under it, are refused without reading it as a slot. */
static void test_task_handle_where_an_op_is_expected(void** state) {
  (void)state;
  void* ctx = rh_init(&plugin, 32, 0, 2);
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileColl;
  e.coll.func = "AllReduce";
  e.coll.seqNumber = 2; /* low byte 2: an op handle's offset range */
  void* task = NULL;
  plugin.p->startEvent(ctx, &task, &e);
  assert_non_null(task);
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  a.proxyDiag.counterKind = ncclProxyDiagPosted;
  a.proxyDiag.value = 1;
  plugin.p->recordEventState(task, ncclProfilerProxyDiagUpdate, &a);
  plugin.p->recordEventState(task, ncclProfilerProxyStepSendWait, &a);
  plugin.p->stopEvent(task);
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyStep;
  e.parentObj = task;
  void* h = (void*)0x1;
  plugin.p->startEvent(ctx, &h, &e);
  assert_null(h);
  rh_dump(&plugin, ctx);
  assert_non_null(strstr(rh_captured.text[1], " wrongContext:1"));
  plugin.p->finalize(ctx);
}

/* ---- NCCL 2.26 (v3): SendDone after the last step stop is no refusal ---- */

static void test_v3_done_after_last_step(void** state) {
  (void)state;
  ncclProfiler_v3_t* t = dlsym(plugin.so, "ncclProfiler_v3");
  assert_non_null(t);
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(t->init(&ctx, &mask), ncclSuccess);
  for (int is_send = 1; is_send >= 0; is_send--) {
    ncclProfilerEventDescr_v3_t d;
    memset(&d, 0, sizeof d);
    d.type = ncclProfileProxyOp;
    d.proxyOp.pid = getpid();
    d.proxyOp.peer = 1;
    d.proxyOp.nSteps = 2;
    d.proxyOp.isSend = is_send;
    void* op = NULL;
    t->startEvent(ctx, &op, &d);
    assert_non_null(op);
    ncclProfilerEventStateArgs_v3_t a = {.proxyOp = {.transSize = 4096, .steps = 2}};
    /* both steps posted and through the network, as the op's states say */
    if (is_send) {
      t->recordEventState(op, ncclProfilerProxyOpSendPosted, &a);
      t->recordEventState(op, ncclProfilerProxyOpSendTransmitted, &a);
    } else {
      t->recordEventState(op, ncclProfilerProxyOpRecvPosted, &a);
      t->recordEventState(op, ncclProfilerProxyOpRecvReceived, &a);
      t->recordEventState(op, ncclProfilerProxyOpRecvTransmitted, &a);
    }
    for (int s = 0; s < 2; s++) {
      ncclProfilerEventDescr_v3_t sd;
      memset(&sd, 0, sizeof sd);
      sd.type = ncclProfileProxyStep;
      sd.parentObj = op;
      sd.proxyStep.step = s;
      void* h = NULL;
      t->startEvent(ctx, &h, &sd);
      assert_non_null(h);
      t->stopEvent(h); /* the last stop completes the op */
    }
    /* then the ProxyOp's own Done state, as net.cc sends it */
    t->recordEventState(op, is_send ? ncclProfilerProxyOpSendDone : ncclProfilerProxyOpRecvDone,
                        &a);
    t->stopEvent(op);
  }
  rh_dump(&plugin, ctx);
  for (int i = 0; i < rh_captured.n; i++)
    assert_null(strstr(rh_captured.text[i], "dropped or refused"));
  assert_int_equal(rh_captured.n, 3); /* header and the two finished ops */
  assert_non_null(strstr(rh_captured.text[1], "status:DONE"));
  assert_non_null(strstr(rh_captured.text[2], "status:DONE"));
  t->finalize(ctx);
}

/* ---- NCCL 2.29+ through the v6 table: RCCL fields are zero ---- */

static void test_v6_under_nvidia(void** state) {
  (void)state;
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(plugin.p->init(&ctx, 77, &mask, "c", 2, 4, 1, rh_logger), ncclSuccess);
  void* op = rh_stock_op_active(&plugin, ctx, 3, 2, 0);
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  ncclProfilerEventDescr_v6_t sd;
  memset(&sd, 0, sizeof sd);
  sd.type = ncclProfileProxyStep;
  sd.parentObj = op;
  void* s0 = NULL;
  plugin.p->startEvent(ctx, &s0, &sd);
  plugin.p->recordEventState(s0, ncclProfilerProxyStepRecvWait, &a);
  const char* l = line_of(ctx, "<77:-1:0>");
  assert_non_null(strstr(l, "1->3(R)"));
  assert_int_equal(field(l, " po:"), 1);
  assert_non_null(strstr(l, "postT:0,")); /* recv posts carry no timestamp, as in RCCL */
  plugin.p->stopEvent(s0); /* stop without the intermediate states still counts done */
  l = line_of(ctx, "<77:-1:0>");
  assert_int_equal(field(l, " done:"), 1);
  plugin.p->stopEvent(op);
  plugin.p->finalize(ctx);
}

/* ---- step numbers past 16 bits ---- */

/* ---- opCounts from the parent Coll/P2p events ---- */

/* NCCL 2.23 (v1): numeric function codes, and the commHash in the Coll
 * descriptor, which v1 init does not give. */
static void test_v1_opcounts_from_parents(void** state) {
  (void)state;
  ncclProfiler_v1_t* t = dlsym(plugin.so, "ncclProfiler_v1");
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(t->init(&ctx, &mask), ncclSuccess);
  ncclProfilerEventDescr_v1_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.coll.commHash = 0x99;
  d.coll.seqNumber = 2;
  d.coll.func = 4; /* AllReduce */
  void* coll = NULL;
  t->startEvent(ctx, &coll, &d);
  assert_non_null(coll);
  memset(&d, 0, sizeof d);
  d.type = ncclProfileP2p;
  d.p2p.func = 7; /* Recv */
  d.p2p.peer = 5;
  void* p2p[2] = {NULL, NULL};
  t->startEvent(ctx, &p2p[0], &d);
  t->startEvent(ctx, &p2p[1], &d); /* the second Recv from 5 */
  assert_non_null(p2p[1]);
  t->stopEvent(coll); /* stopped before the children: nothing to free, nothing refused */
  t->stopEvent(p2p[0]);
  t->stopEvent(p2p[1]);
  void* parents[] = {coll, p2p[1]};
  void* ops[2];
  for (int i = 0; i < 2; i++) {
    memset(&d, 0, sizeof d);
    d.type = ncclProfileProxyOp;
    d.parentObj = parents[i];
    d.rank = 1;
    d.proxyOp.pid = getpid();
    d.proxyOp.peer = 5;
    d.proxyOp.nSteps = 2;
    d.proxyOp.isSend = i == 0;
    t->startEvent(ctx, &ops[i], &d);
    assert_non_null(ops[i]);
  }
  line_of(ctx, "<153:36:0>"); /* commHash 0x99 learned; 2 * 16 + 4 */
  line_of(ctx, "<153:21:0>"); /* the second p2p: 1 * 16 + 5 */
  assert_int_equal(rh_legacy_lines(), 3); /* header and the two ops: nothing refused */
  /* a state the host never sends to a Coll handle is refused, not followed */
  ncclProfilerEventStateArgs_v1_t a = {.proxyOp = {.transSize = 1, .steps = 1}};
  t->recordEventState(coll, ncclProfilerProxyOpSendPosted, &a);
  rh_dump(&plugin, ctx);
  assert_non_null(strstr(rh_captured.text[1], "badState:1"));
  t->stopEvent(ops[0]);
  t->stopEvent(ops[1]);
  t->finalize(ctx);
}

static void test_long_op(void** state) {
  (void)state;
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(v4()->init(&ctx, &mask, "c", 9, 2, 2, 0, NULL), ncclSuccess);
  const int n = 70000;
  void* op = v4_op(ctx, 1, n);
  for (int s = 0; s < n; s++) {
    void* h = v4_step(ctx, op, s);
    v4_state(h, ncclProfilerProxyStepSendGPUWait);
    v4_state(h, ncclProfilerProxyStepSendPeerWait_v4);
    v4_state(h, ncclProfilerProxyStepSendWait);
    v4()->stopEvent(h);
  }
  const char* l = line_of(ctx, "<9:-1:0>");
  assert_non_null(strstr(l, "status:DONE"));
  assert_int_equal(field(l, " done:"), n);
  assert_int_equal(field(l, " trans:"), n);
  v4()->stopEvent(op);
  v4()->finalize(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v4_send_and_recv),
      cmocka_unit_test(test_v1_proxyop_states),
      cmocka_unit_test(test_group_handle_per_table),
      cmocka_unit_test(test_v3_done_after_last_step),
      cmocka_unit_test(test_v6_under_nvidia),
      cmocka_unit_test(test_v1_opcounts_from_parents),
      cmocka_unit_test(test_long_op),
      /* last: bad handles are counted process-wide, in every later dump */
      cmocka_unit_test(test_group_handle_in_other_tables),
      cmocka_unit_test(test_task_handle_where_an_op_is_expected),
  };
  return cmocka_run_group_tests_name("stock_nccl", tests, setup, teardown);
}
