/*
 * test_v7.c — the ncclProfiler_v7 table through the real ABI, as NVIDIA
 * NCCL 2.31+ drives it (include/nccl/profiler_v7.h): the mask it asks for,
 * the userTag of a Coll or P2p carried into its ops' records, KernelPhase
 * declined, no pointer into a descriptor or state args kept past a call —
 * every descriptor and args object is poisoned as soon as the call
 * returns, as a host's stack frame would be reused — and the host's mask
 * read at each dump when it is the host's static int, never when it is not;
 * and every event type a v7 host can start, in one table: the handle, the
 * dump line, the mask change or refusal each leaves.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nccl/profiler_v7.h"
#include "rccl_host.h"

static rh_plugin plugin;
static char dir[] = "/tmp/pt-v7-XXXXXX";

#define STOCK_MASK (ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep)

static int setup(void** state) {
  (void)state;
  assert_non_null(mkdtemp(dir));
  setenv("PROXYTRACE_DUMP_DIR", dir, 1); /* read when the first context is created */
  setenv("PROXYTRACE_STALL_MS", "0", 1);
  rh_open(&plugin, NULL);
  return 0;
}

static int teardown(void** state) {
  (void)state;
  rh_log_clear();
  rh_close(&plugin);
  DIR* d = opendir(dir);
  for (struct dirent* e; d && (e = readdir(d));) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (e->d_name[0] != '.') unlink(p);
  }
  if (d) closedir(d);
  rmdir(dir);
  return 0;
}

static ncclProfiler_v7_t* v7(void) {
  ncclProfiler_v7_t* t = dlsym(plugin.so, "ncclProfiler_v7");
  assert_non_null(t);
  return t;
}

/* startEvent on a copy, poisoned when the call returns. */
static void* start(void* ctx, const ncclProfilerEventDescr_v7_t* in) {
  ncclProfilerEventDescr_v7_t d = *in;
  void* h = (void*)0x1;
  assert_int_equal(v7()->startEvent(ctx, &h, &d), ncclSuccess);
  memset(&d, 0xCD, sizeof d);
  return h;
}

static void record(void* h, int state, size_t trans) {
  ncclProfilerEventStateArgs_v7_t a;
  memset(&a, 0, sizeof a);
  a.proxyStep.transSize = trans;
  v7()->recordEventState(h, (ncclProfilerEventState_v7_t)state, &a);
  memset(&a, 0xCD, sizeof a);
}

static void* init(uint64_t hash, int rank) {
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(v7()->init(&ctx, hash, &mask, "v7", 2, 8, rank, rh_logger), ncclSuccess);
  assert_non_null(ctx);
  /* ProxyDiag as RCCL 2.31 numbers it (bit 16); never bit 15, NVIDIA's
   * KernelPhase, which would turn kernel-channel profiling on too. */
  assert_int_equal(mask, STOCK_MASK | ncclProfileKernelCh | ncclProfileProxyDiag_v7);
  assert_int_equal(mask & ncclProfileKernelPhase, 0);
  return ctx;
}

static void* coll(void* ctx, uint64_t seq, uint64_t tag) {
  ncclProfilerEventDescr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.kernelVariant = "sym";
  d.coll.isSymColl = true;
  d.coll.userTag = tag;
  void* h = start(ctx, &d);
  assert_non_null(h);
  return h;
}

static void* proxy_op(void* ctx, void* parent, int peer, int is_send, int nsteps) {
  ncclProfilerEventDescr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyOp;
  d.parentObj = parent;
  d.rank = 1;
  d.proxyOp.pid = getpid();
  d.proxyOp.channelId = 0;
  d.proxyOp.peer = peer;
  d.proxyOp.nSteps = nsteps;
  d.proxyOp.chunkSize = 1 << 19;
  d.proxyOp.isSend = is_send;
  void* h = start(ctx, &d);
  assert_non_null(h);
  record(h, ncclProfilerProxyOpInProgress_v4, 0);
  return h;
}

static void* step(void* ctx, void* op, int s) {
  ncclProfilerEventDescr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyStep;
  d.parentObj = op;
  d.proxyStep.step = s;
  void* h = start(ctx, &d);
  assert_non_null(h);
  return h;
}

/* The JSON dump file of this test's process, read whole (NULL if none). */
static char* json_file(void) { return rh_take_jsonl(dir, ""); }

static void test_user_tag_from_parent(void** state) {
  (void)state;
  void* ctx = init(0xabc, 1);
  void* c = coll(ctx, 7, 0x5eed0001);
  void* op = proxy_op(ctx, c, 2, 1, 4);
  v7()->stopEvent(c); /* NCCL stops the parent before its ops */
  void* st = step(ctx, op, 0);
  record(st, ncclProfilerProxyStepSendGPUWait, 0);
  /* Another task tagged alike shares the tag; an untagged one has none. */
  void* c2 = coll(ctx, 8, 0);
  void* op2 = proxy_op(ctx, c2, 3, 0, 4);
  (void)op2;
  /* The opCount came from the parent through the poisoned copies:
   * seqNumber 7 of AllReduce (4) is 7 * 16 + 4. */
  rh_dump(&plugin, ctx);
  int found = 0;
  for (int i = 0; i < rh_captured.n; i++) found += strstr(rh_captured.text[i], "<2748:116:0>") != NULL;
  assert_int_equal(found, 1);
  v7()->finalize(ctx); /* ops still waiting: the files get a finalize dump */
  char* j = json_file();
  assert_non_null(j);
  assert_non_null(strstr(j, "\"profilerApi\":7"));
  assert_non_null(strstr(j, "\"diag\":\"ok\""));
  /* Each dump in the file (the hook's, finalize's) has the tagged op's
   * userTag, and the untagged op none: every userTag is the one tag. */
  int tags = 0, ops = 0;
  for (char* line = strtok(j, "\n"); line; line = strtok(NULL, "\n")) {
    if (!strstr(line, "\"type\":\"op\"")) continue; /* the coll lines say the tags they were called with */
    ops++;
    const char* q = strstr(line, "\"userTag\":");
    if (!q) continue;
    tags++;
    assert_memory_equal(q, "\"userTag\":\"0x5eed0001\"", sizeof "\"userTag\":\"0x5eed0001\"" - 1);
  }
  assert_true(tags >= 1);
  assert_int_equal(ops, 2 * tags);
  free(j);
}

static void test_p2p_user_tag_and_lost_parent(void** state) {
  (void)state;
  void* ctx = init(0xdef, 2);
  ncclProfilerEventDescr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileP2p;
  d.p2p.func = "Send";
  d.p2p.peer = 5;
  d.p2p.userTag = 0x7fffffffffffffffull;
  void* p = start(ctx, &d);
  assert_non_null(p);
  proxy_op(ctx, p, 5, 1, 2);
  proxy_op(ctx, NULL, 6, 1, 2); /* no parent (a host that dropped P2p from the mask) */
  v7()->finalize(ctx);
  char* j = json_file();
  assert_non_null(j);
  assert_non_null(strstr(j, "\"userTag\":\"0x7fffffffffffffff\""));
  assert_non_null(strstr(j, "\"opCountFrom\":\"p2p\""));
  assert_non_null(strstr(j, "\"opCountFrom\":\"none\"")); /* said in the record */
  free(j);
}

static void test_kernel_phase_declined_and_mask_change_noted(void** state) {
  (void)state;
  void* ctx = init(0x123, 3);
  rh_dump(&plugin, ctx);
  for (int i = 0; i < rh_captured.n; i++) assert_null(strstr(rh_captured.text[i], "proxytrace host:"));
  ncclProfilerEventDescr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileKernelPhase; /* only a mask we never ask for starts it */
  d.kernelPhase.phaseName = "compute";
  assert_null(start(ctx, &d));
  rh_dump(&plugin, ctx);
  assert_true(rh_captured.n >= 2);
  assert_string_equal(rh_captured.text[1], "proxytrace host: mask: changed by the host");
  for (int i = 0; i < rh_captured.n; i++) assert_null(strstr(rh_captured.text[i], "badState"));
  v7()->finalize(ctx);
}

/* Every event type a v7 host can start, one row each: what the table
 * answers (a handle or NULL), and what a dump then says — the record or
 * progress line a traced type leaves, "mask: changed by the host" for a
 * type only a mask the plugin never asks for starts, a refusal (badState)
 * for what is no event type at all. Each descriptor is a poisoned copy, as
 * in the tests above. */
typedef struct {
  const char* name;
  uint64_t type;
  int handle;         /* startEvent gives a handle */
  const char* line;   /* a dump line that shows it, or NULL */
  int mask_changed;   /* the dump says the host changed the mask */
  int refused;        /* counted as a refusal (badState) */
} v7_row;

static const v7_row v7_rows[] = {
    {"Group", ncclProfileGroup, 0, NULL, 0, 0},
    {"Coll", ncclProfileColl, 1, "proxytrace coll: rank=1 seq=7 func=AllReduce", 0, 0},
    {"P2p", ncclProfileP2p, 1, "proxytrace p2p: rank=1 seq=0 func=Send", 0, 0},
    {"ProxyOp", ncclProfileProxyOp, 1, ", 1->5(S), chan:0, status:", 0, 0},
    {"ProxyStep", ncclProfileProxyStep, 1, ", done:1", 0, 0},
    {"ProxyCtrl", ncclProfileProxyCtrl, 0, NULL, 1, 0},
    {"KernelCh", ncclProfileKernelCh, 1, "proxytrace kernelCh: rank=1 channel=3 starts=1 stops=1", 0, 0},
    {"NetPlugin", ncclProfileNetPlugin, 0, NULL, 0, 0},
    {"GroupApi", ncclProfileGroupApi, 0, NULL, 0, 0},
    {"CollApi", ncclProfileCollApi, 0, NULL, 0, 0},
    {"P2pApi", ncclProfileP2pApi, 0, NULL, 0, 0},
    {"KernelLaunch", ncclProfileKernelLaunch, 0, NULL, 1, 0},
    {"CeColl", ncclProfileCeColl, 0, NULL, 1, 0},
    {"CeSync", ncclProfileCeSync, 0, NULL, 1, 0},
    {"CeBatch", ncclProfileCeBatch, 0, NULL, 1, 0},
    {"KernelPhase", ncclProfileKernelPhase, 0, NULL, 1, 0},
    {"ProxyDiag_v7 (a mask bit, never an event)", ncclProfileProxyDiag_v7, 0, NULL, 0, 1},
    {"no type", 0, 0, NULL, 0, 1},
    {"two types", ncclProfileColl | ncclProfileP2p, 0, NULL, 0, 1},
};

static int logged(const char* what) {
  for (int i = 0; i < rh_captured.n; i++)
    if (strstr(rh_captured.text[i], what)) return 1;
  return 0;
}

static void test_every_event_type(void** state) {
  (void)state;
  for (size_t r = 0; r < sizeof v7_rows / sizeof v7_rows[0]; r++) {
    const v7_row* row = &v7_rows[r];
    void* ctx = NULL;
    int mask = 0;
    assert_int_equal(v7()->init(&ctx, 0x7000 + r, &mask, "v7", 2, 8, 1, rh_logger), ncclSuccess);
    ncclProfilerEventDescr_v7_t d;
    memset(&d, 0, sizeof d);
    d.type = row->type;
    d.rank = 1;
    void* parent = NULL;
    if (row->type == ncclProfileProxyStep) { /* a step of an op */
      parent = proxy_op(ctx, coll(ctx, 1, 0), 5, 1, 4);
      d.parentObj = parent;
      d.proxyStep.step = 0;
    } else if (row->type == ncclProfileKernelCh) { /* a channel of a collective */
      d.parentObj = coll(ctx, 9, 0);
      d.kernelCh.channelId = 3;
      d.kernelCh.pTimer = 1000;
    } else if (row->type == ncclProfileColl) {
      d.coll.seqNumber = 7;
      d.coll.func = "AllReduce";
      d.coll.datatype = "ncclFloat32";
      d.coll.count = 1024;
    } else if (row->type == ncclProfileP2p) {
      d.p2p.func = "Send";
      d.p2p.peer = 5;
      d.p2p.datatype = "ncclInt8";
      d.p2p.count = 64;
    } else if (row->type == ncclProfileProxyOp) {
      d.parentObj = coll(ctx, 2, 0);
      d.proxyOp.pid = getpid();
      d.proxyOp.peer = 5;
      d.proxyOp.nSteps = 4;
      d.proxyOp.isSend = 1;
    } else if (row->type == ncclProfileKernelPhase) {
      d.kernelPhase.phaseName = "compute";
    }
    void* h = start(ctx, &d);
    if (row->handle) assert_non_null(h);
    else assert_null(h);
    if (h && row->type == ncclProfileProxyStep) {
      record(h, ncclProfilerProxyStepSendGPUWait, 0);
      record(h, ncclProfilerProxyStepSendPeerWait_v4, 0);
      record(h, ncclProfilerProxyStepSendWait, 4096);
      v7()->stopEvent(h);
    } else if (h && row->type == ncclProfileKernelCh) {
      ncclProfilerEventStateArgs_v7_t a;
      memset(&a, 0, sizeof a);
      a.kernelCh.pTimer = 2000;
      v7()->recordEventState(h, ncclProfilerKernelChStop, &a);
      memset(&a, 0xCD, sizeof a);
      v7()->stopEvent(h);
    } else if (h && row->type == ncclProfileProxyOp) {
      record(h, ncclProfilerProxyOpInProgress_v4, 0);
    } else if (h) {
      v7()->stopEvent(h); /* the host stops a task at once */
    }
    rh_log_clear();
    rh_dump(&plugin, ctx);
    if (row->line && !logged(row->line)) {
      for (int i = 0; i < rh_captured.n; i++) print_message("  | %s\n", rh_captured.text[i]);
      fail_msg("%s: no dump line with '%s'", row->name, row->line);
    }
    if (logged("proxytrace host: mask: changed by the host") != row->mask_changed)
      fail_msg("%s: the mask change %s said", row->name, row->mask_changed ? "is not" : "is");
    if (logged("badState") != row->refused) fail_msg("%s: the refusal %s counted", row->name, row->refused ? "is not" : "is");
    v7()->finalize(ctx);
  }
  free(json_file());
}

/* The host's process-wide mask, as NCCL's ncclProfilerEventMask: static. */
static int host_mask;

static int says_off(void* ctx) {
  rh_log_clear();
  rh_dump(&plugin, ctx);
  int off = 0;
  for (int i = 0; i < rh_captured.n; i++)
    off += !strcmp(rh_captured.text[i],
                   "proxytrace host: mask: changed by the host, proxy events off (calls since are not recorded)");
  return off;
}

/* RAS sets the mask init was handed: the plugin reads it at each dump and
 * says when the proxy events are off (a mask of 0 sends no event that
 * could show it), and no more once they are back. A mask on init's stack
 * is never kept: it may be gone by the dump. */
static void test_host_mask_read_at_dump(void** state) {
  (void)state;
  for (char* old; (old = json_file());) free(old); /* the files of the tests before */
  void* ctx = NULL;
  assert_int_equal(v7()->init(&ctx, 0x456, &host_mask, "v7", 2, 8, 4, rh_logger), ncclSuccess);
  assert_non_null(ctx);
  proxy_op(ctx, coll(ctx, 1, 0), 5, 1, 4); /* an op, so that the dump has a record */
  assert_int_equal(says_off(ctx), 0);
  __atomic_store_n(&host_mask, 0, __ATOMIC_RELAXED); /* ncclras CONTROL PROFILER_MASK 0 */
  assert_int_equal(says_off(ctx), 1);
  __atomic_store_n(&host_mask, ncclProfileCollApi, __ATOMIC_RELAXED); /* no proxy events either */
  assert_int_equal(says_off(ctx), 1);
  __atomic_store_n(&host_mask, STOCK_MASK, __ATOMIC_RELAXED);
  assert_int_equal(says_off(ctx), 0);
  __atomic_store_n(&host_mask, 0, __ATOMIC_RELAXED);
  v7()->finalize(ctx);
  char* j = json_file();
  assert_non_null(j);
  assert_non_null(strstr(j, "\"maskChangedByHost\":true,\"maskOff\":true"));
  free(j);
  /* the same on a stack int: not kept, so nothing is claimed */
  void* ctx2 = init(0x789, 5); /* init()'s mask is its local */
  proxy_op(ctx2, coll(ctx2, 1, 0), 6, 1, 4);
  assert_int_equal(says_off(ctx2), 0);
  v7()->finalize(ctx2);
  free(json_file());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_user_tag_from_parent),
      cmocka_unit_test(test_p2p_user_tag_and_lost_parent),
      cmocka_unit_test(test_kernel_phase_declined_and_mask_change_noted),
      cmocka_unit_test(test_host_mask_read_at_dump),
      cmocka_unit_test(test_every_event_type),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
