/*
 * test_progress.c — the progress state through the real ABI: Coll, P2p and
 * KernelCh events of each table as its NCCL release sends them, and what
 * the text and JSON dumps say of them (docs/dump-json.md, "Progress").
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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
#include "nccl/profiler_v4.h"
#include "nccl/profiler_v6.h"
#include "nccl/profiler_v7.h"
#include "rccl_host.h"

#define plugin rh_the_plugin
static char dump_dir[64];

static void* table(const char* name) {
  void* t = dlsym(plugin.so, name);
  assert_non_null(t);
  return t;
}

/* The index of the first captured line holding every one of the strings
 * (NULL-terminated), or -1. */
static int find_line(const char* s, ...) {
  for (int i = 0; i < rh_captured.n; i++) {
    va_list ap;
    va_start(ap, s);
    int all = 1;
    for (const char* p = s; p && all; p = va_arg(ap, const char*))
      if (!strstr(rh_captured.text[i], p)) all = 0;
    va_end(ap);
    if (all) return i;
  }
  return -1;
}

static int count_lines(const char* s) {
  int n = 0;
  for (int i = 0; i < rh_captured.n; i++) n += strstr(rh_captured.text[i], s) != NULL;
  return n;
}

/* ---- NCCL 2.27-2.28: the v4 table ---- */

static void* v4_coll(void* ctx, uint64_t seq, const char* func, size_t count, const char* dtype) {
  ncclProfilerEventDescr_v4_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.rank = 2;
  d.coll.seqNumber = seq;
  d.coll.func = func;
  d.coll.count = count;
  d.coll.root = 0;
  d.coll.datatype = dtype;
  d.coll.nChannels = 2;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  void* h = NULL;
  ((ncclProfiler_v4_t*)table("ncclProfiler_v4"))->startEvent(ctx, &h, &d);
  assert_non_null(h);
  ((ncclProfiler_v4_t*)table("ncclProfiler_v4"))->stopEvent(h); /* NCCL stops it at once */
  return h;
}

static void* v4_kch(void* ctx, void* parent, int channel, uint64_t gpu_ns) {
  ncclProfilerEventDescr_v4_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileKernelCh;
  d.parentObj = parent;
  d.rank = 2;
  d.kernelCh.channelId = (uint8_t)channel;
  d.kernelCh.pTimer = gpu_ns;
  void* h = NULL;
  ((ncclProfiler_v4_t*)table("ncclProfiler_v4"))->startEvent(ctx, &h, &d);
  return h;
}

static void v4_kch_stop(void* h, uint64_t gpu_ns) {
  ncclProfiler_v4_t* t = table("ncclProfiler_v4");
  ncclProfilerEventStateArgs_v4_t a = {.kernelCh = {.pTimer = gpu_ns}};
  t->recordEventState(h, ncclProfilerKernelChStop, &a);
  t->stopEvent(h);
}

static void test_v4_tasks_and_channels(void** state) {
  (void)state;
  ncclProfiler_v4_t* t = table("ncclProfiler_v4");
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(t->init(&ctx, &mask, "c", 0xabc, 2, 8, 2, rh_logger), ncclSuccess);
  assert_true(mask & ncclProfileKernelCh); /* asked for from v3 on */
  /* A network op first: its legacy line must come before every progress line. */
  rh_stock_op_active(&plugin, ctx, 3, 4, 1);
  void* c117 = v4_coll(ctx, 117, "AllReduce", 1 << 20, "ncclFloat32");
  void* k0 = v4_kch(ctx, c117, 0, 1000);
  void* k1 = v4_kch(ctx, c117, 1, 1001);
  assert_non_null(k0);
  assert_non_null(k1);
  v4_kch_stop(k0, 2000);
  v4_kch_stop(k1, 2001);
  void* c118 = v4_coll(ctx, 118, "AllGather", 4096, "ncclBfloat16");
  void* k0b = v4_kch(ctx, c118, 0, 3000);
  v4_kch_stop(k0b, 4000);
  v4_kch(ctx, c118, 1, 3001); /* channel 1 never finishes AllGather 118 */
  ncclProfilerEventDescr_v4_t p;
  memset(&p, 0, sizeof p);
  p.type = ncclProfileP2p;
  p.rank = 2;
  p.p2p.func = "Send";
  p.p2p.datatype = "ncclInt8";
  p.p2p.count = 77;
  p.p2p.peer = 5;
  p.p2p.nChannels = 1;
  void* ph = NULL;
  t->startEvent(ctx, &ph, &p);
  assert_non_null(ph);

  rh_dump(&plugin, ctx);
  const int rec = find_line("createT:", NULL);
  const int prog = find_line("proxytrace progress: rank=2 colls=2 p2ps=1 kernelChStarts=4 kernelChStops=3", NULL);
  assert_true(rec > 0);
  assert_true(prog > rec);
  assert_true(find_line("proxytrace coll: rank=2 seq=117 func=AllReduce count=1048576 datatype=float32 "
                        "root=0 algo=RING proto=SIMPLE nChannels=2 start_ns=", NULL) > prog);
  assert_true(find_line("proxytrace coll: rank=2 seq=118 func=AllGather count=4096 datatype=bfloat16", NULL) > prog);
  assert_true(find_line("proxytrace p2p: rank=2 seq=0 func=Send count=77 datatype=int8 peer=5 nChannels=1", NULL) >
              prog);
  assert_true(find_line("proxytrace kernelCh: rank=2 channel=0 starts=2 stops=2 startKind=coll "
                        "startFunc=AllGather startSeq=118", "gpuStart_ns=3000",
                        "stopKind=coll stopFunc=AllGather stopSeq=118", "gpuStop_ns=4000", NULL) > prog);
  const int ch1 = find_line("proxytrace kernelCh: rank=2 channel=1 starts=2 stops=1 startKind=coll "
                            "startFunc=AllGather startSeq=118", NULL);
  assert_true(ch1 > prog);
  /* Its last stop is the AllReduce's. */
  assert_non_null(strstr(rh_captured.text[ch1], "stopKind=coll stopFunc=AllReduce stopSeq=117"));
  assert_non_null(strstr(rh_captured.text[ch1], "gpuStop_ns=2001"));
  /* No record line after the progress lines. */
  for (int i = prog; i < rh_captured.n; i++) assert_null(strstr(rh_captured.text[i], "createT:"));
  t->finalize(ctx);
}

/* The ring keeps the last PT_PROG_OPS (8) collectives, oldest first. */
static void test_ring_keeps_the_last(void** state) {
  (void)state;
  ncclProfiler_v4_t* t = table("ncclProfiler_v4");
  void* ctx = NULL;
  int mask = 0;
  t->init(&ctx, &mask, "c", 0xabd, 1, 8, 2, rh_logger);
  for (int s = 0; s < 20; s++) v4_coll(ctx, (uint64_t)s, "AllReduce", 8, "ncclFloat16");
  rh_dump(&plugin, ctx);
  assert_int_equal(count_lines("proxytrace coll: "), 8);
  assert_true(find_line("colls=20 p2ps=0", NULL) >= 0);
  const int first = find_line("proxytrace coll: rank=2 seq=12 ", NULL);
  assert_true(first > 0);
  assert_int_equal(find_line("proxytrace coll: rank=2 seq=19 ", NULL), first + 7);
  assert_int_equal(find_line("proxytrace coll: rank=2 seq=11 ", NULL), -1);
  t->finalize(ctx);
}

/* A communicator with no task or kernel event prints no progress line. */
static void test_nothing_without_events(void** state) {
  (void)state;
  ncclProfiler_v4_t* t = table("ncclProfiler_v4");
  void* ctx = NULL;
  int mask = 0;
  t->init(&ctx, &mask, "c", 0xabe, 1, 8, 2, rh_logger);
  rh_stock_op_active(&plugin, ctx, 3, 4, 1);
  rh_dump(&plugin, ctx);
  assert_int_equal(find_line("proxytrace progress", NULL), -1);
  assert_int_equal(find_line("proxytrace kernelCh", NULL), -1);
  t->finalize(ctx);
}

/* Odd input: a channel out of range, a kernel-channel handle stopped
 * after its state, a handle given to the wrong callback. */
static void test_kernel_channel_bad_input(void** state) {
  (void)state;
  ncclProfiler_v4_t* t = table("ncclProfiler_v4");
  void* ctx = NULL;
  int mask = 0;
  t->init(&ctx, &mask, "c", 0xabf, 1, 8, 2, rh_logger);
  assert_null(v4_kch(ctx, NULL, 200, 0)); /* channelId is a byte: 128 and up are no channel */
  void* k = v4_kch(ctx, (void*)0x1234, 3, 0); /* a parent that is no task handle: an unknown task */
  assert_non_null(k);
  ncclProfilerEventStateArgs_v4_t a = {.proxyStep = {.transSize = 1}};
  t->recordEventState(k, ncclProfilerProxyStepSendGPUWait, &a); /* a step state: refused */
  t->recordEventState(k, ncclProfilerKernelChStop, NULL);       /* no args: no GPU time */
  t->stopEvent(k);
  rh_dump(&plugin, ctx);
  assert_true(find_line("proxytrace kernelCh: rank=2 channel=3 starts=1 stops=1 start_ns=", NULL) > 0);
  assert_int_equal(find_line("gpuStop_ns", NULL), -1);
  const char* drops = rh_drop_line();
  /* the channel out of range and the step state: states its kind does not take */
  assert_non_null(strstr(drops, "badState:2"));
  assert_non_null(strstr(drops, "badHandle:0"));
  t->finalize(ctx);
}

/* ---- NCCL 2.23-2.25: v1 (codes) and v2 (names, nMaxChannels); no KernelCh ---- */

static void test_v1_codes(void** state) {
  (void)state;
  ncclProfiler_v1_t* t = table("ncclProfiler_v1");
  void* ctx = NULL;
  int mask = 0;
  t->init(&ctx, &mask);
  assert_false(mask & ncclProfileKernelCh);
  ncclProfilerEventDescr_v1_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.rank = 4;
  d.coll.commHash = 0x77;
  d.coll.seqNumber = 9;
  d.coll.func = 1; /* Reduce */
  d.coll.count = 100;
  d.coll.root = 3;
  d.coll.datatype = 8; /* float64 */
  d.coll.nMaxChannels = 4;
  d.coll.algo = 0; /* TREE */
  d.coll.proto = 40; /* no protocol */
  void* h = NULL;
  t->startEvent(ctx, &h, &d);
  assert_non_null(h);
  rh_dump(&plugin, ctx);
  assert_true(find_line("proxytrace coll: rank=4 seq=9 func=Reduce count=100 datatype=float64 root=3 algo=TREE "
                        "nChannels=4 start_ns=", NULL) > 0);
  t->finalize(ctx);
}

static void test_v2_names(void** state) {
  (void)state;
  ncclProfiler_v2_t* t = table("ncclProfiler_v2");
  void* ctx = NULL;
  int mask = 0;
  t->init(&ctx, &mask);
  assert_false(mask & ncclProfileKernelCh);
  ncclProfilerEventDescr_v2_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.rank = 1;
  d.coll.commHash = 0x78;
  d.coll.seqNumber = 5;
  d.coll.func = "Broadcast";
  d.coll.count = 10;
  d.coll.root = 2;
  d.coll.datatype = "ncclMystery"; /* a name the plugin does not know */
  d.coll.nMaxChannels = 3;
  d.coll.algo = "NVLS_TREE";
  d.coll.proto = "LL128";
  void* h = NULL;
  t->startEvent(ctx, &h, &d);
  rh_dump(&plugin, ctx);
  assert_true(find_line("proxytrace coll: rank=1 seq=5 func=Broadcast count=10 root=2 algo=NVLS_TREE proto=LL128 "
                        "nChannels=3", NULL) > 0);
  t->finalize(ctx);
}

/* ---- NCCL 2.31: the v7 table, userTags, and the JSON lines ---- */

static void test_v7_json(void** state) {
  (void)state;
  ncclProfiler_v7_t* t = table("ncclProfiler_v7");
  void* ctx = NULL;
  int mask = 0;
  t->init(&ctx, 0x99, &mask, "w", 1, 8, 6, rh_logger);
  assert_true(mask & ncclProfileKernelCh);
  ncclProfilerEventDescr_v7_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.rank = 6;
  d.coll.seqNumber = 42;
  d.coll.func = "ReduceScatter";
  d.coll.count = 256;
  d.coll.datatype = "ncclUint64";
  d.coll.nChannels = 1;
  d.coll.algo = "PAT";
  d.coll.proto = "LL";
  d.coll.userTag = 0xbeef;
  void* c = NULL;
  t->startEvent(ctx, &c, &d);
  assert_non_null(c);
  memset(&d, 0, sizeof d);
  d.type = ncclProfileKernelCh;
  d.parentObj = c;
  d.kernelCh.channelId = 0;
  d.kernelCh.pTimer = 5555;
  void* k = NULL;
  t->startEvent(ctx, &k, &d);
  assert_non_null(k);
  rh_dump(&plugin, ctx);
  assert_true(find_line("proxytrace coll: rank=6 seq=42 func=ReduceScatter count=256 datatype=uint64 root=0 "
                        "algo=PAT proto=LL nChannels=1 userTag=0xbeef", NULL) > 0);
  char* j = rh_take_jsonl(dump_dir, "-r6-153.");
  assert_non_null(j);
  assert_non_null(strstr(j, "{\"type\":\"progress\",\"dumpSeq\":"));
  assert_non_null(strstr(j, ",\"rank\":6,\"colls\":1,\"p2ps\":0,\"kernelChStarts\":1,\"kernelChStops\":0,\"busy\":0}"));
  assert_non_null(strstr(j, ",\"rank\":6,\"seq\":42,\"func\":\"ReduceScatter\",\"count\":256,\"datatype\":\"uint64\","
                            "\"root\":0,\"algo\":\"PAT\",\"proto\":\"LL\",\"nChannels\":1,\"userTag\":\"0xbeef\","
                            "\"start_ns\":"));
  assert_non_null(strstr(j, ",\"rank\":6,\"channel\":0,\"starts\":1,\"stops\":0,\"startKind\":\"coll\","
                            "\"startFunc\":\"ReduceScatter\",\"startSeq\":42,\"start_ns\":"));
  assert_non_null(strstr(j, ",\"gpuStart_ns\":5555,\"stopKind\":null,\"stopFunc\":null,\"stopSeq\":null,"
                            "\"stop_ns\":null,\"gpuStop_ns\":null}"));
  /* The progress lines sit before the end line, which counts op lines only. */
  const char* end = strstr(j, "{\"type\":\"end\"");
  assert_non_null(end);
  assert_true(strstr(j, "{\"type\":\"kernelCh\"") < end);
  assert_non_null(strstr(end, "\"records\":0}"));
  free(j);
  t->finalize(ctx);
}

/* Recording on two threads (tasks on the launching one, kernel channels
 * on the proxy one) while a third dumps: every copy is one version of
 * each entry — a channel never shows more stops than starts, nor a stop
 * of a task after the one it started last, and the collectives' seqs
 * follow one another. */
typedef struct {
  void* ctx;
  _Atomic int stop;
  void* handles[4096];
  _Atomic int made;
} race;

static void* launcher(void* arg) {
  race* r = arg;
  for (int s = 0; s < 4096; s++) {
    r->handles[s] = v4_coll(r->ctx, (uint64_t)s, "AllReduce", 1024, "ncclFloat32");
    atomic_store(&r->made, s + 1);
  }
  return NULL;
}

static void* poller(void* arg) {
  race* r = arg;
  for (int s = 0; s < 4096; s++) {
    while (atomic_load(&r->made) <= s) sched_yield();
    for (int ch = 0; ch < 2; ch++) v4_kch_stop(v4_kch(r->ctx, r->handles[s], ch, (uint64_t)s + 1), (uint64_t)s + 2);
  }
  atomic_store(&r->stop, 1);
  return NULL;
}

static void test_recording_while_dumping(void** state) {
  (void)state;
  ncclProfiler_v4_t* t = table("ncclProfiler_v4");
  static race r;
  memset(&r, 0, sizeof r);
  int mask = 0;
  t->init(&r.ctx, &mask, "c", 0xac0, 1, 8, 2, rh_logger);
  pthread_t a, b;
  assert_int_equal(pthread_create(&a, NULL, launcher, &r), 0);
  assert_int_equal(pthread_create(&b, NULL, poller, &r), 0);
  int dumps = 0;
  while (!atomic_load(&r.stop) || dumps < 3) {
    rh_dump(&plugin, r.ctx);
    dumps++;
    long prev = -1;
    for (int i = 0; i < rh_captured.n; i++) {
      const char* l = rh_captured.text[i];
      const char* p;
      if ((p = strstr(l, "proxytrace coll: rank=2 seq="))) {
        const long seq = strtol(p + strlen("proxytrace coll: rank=2 seq="), NULL, 10);
        if (prev >= 0) assert_int_equal(seq, prev + 1);
        prev = seq;
      } else if (strstr(l, "proxytrace kernelCh:")) {
        const long starts = strtol(strstr(l, " starts=") + 8, NULL, 10), stops = strtol(strstr(l, " stops=") + 7, NULL, 10);
        assert_true(stops <= starts && starts <= stops + 1);
        const char* ss = strstr(l, "startSeq=");
        const char* ps = strstr(l, "stopSeq=");
        assert_non_null(ss);
        if (ps) {
          const long a1 = strtol(ss + 9, NULL, 10), b1 = strtol(ps + 8, NULL, 10);
          assert_true(b1 == a1 || (starts == stops + 1 && b1 == a1 - 1));
          assert_int_equal(a1, starts - 1); /* task s is the channel's start number s + 1 */
        }
      }
    }
  }
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  rh_dump(&plugin, r.ctx);
  assert_true(find_line("proxytrace progress: rank=2 colls=4096 p2ps=0 kernelChStarts=8192 kernelChStops=8192", NULL) > 0);
  t->finalize(r.ctx);
}

int main(void) {
  snprintf(dump_dir, sizeof dump_dir, "/tmp/pt-progress-XXXXXX");
  if (!mkdtemp(dump_dir)) return 1;
  setenv("PROXYTRACE_DUMP_DIR", dump_dir, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_v4_tasks_and_channels, rh_setup, rh_teardown),
      cmocka_unit_test_setup_teardown(test_ring_keeps_the_last, rh_setup, rh_teardown),
      cmocka_unit_test_setup_teardown(test_nothing_without_events, rh_setup, rh_teardown),
      cmocka_unit_test_setup_teardown(test_kernel_channel_bad_input, rh_setup, rh_teardown),
      cmocka_unit_test_setup_teardown(test_v1_codes, rh_setup, rh_teardown),
      cmocka_unit_test_setup_teardown(test_v2_names, rh_setup, rh_teardown),
      cmocka_unit_test_setup_teardown(test_v7_json, rh_setup, rh_teardown),
      cmocka_unit_test_setup_teardown(test_recording_while_dumping, rh_setup, rh_teardown),
  };
  const int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(dump_dir);
  return rc;
}
