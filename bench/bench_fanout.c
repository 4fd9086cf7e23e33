/*
 * bench_fanout.c — `make bench`: what the fan-out adds per event, with
 * proxytrace as its only child, side by side with proxytrace loaded
 * directly, in the same run (alternating rounds; only the differences mean
 * something on a shared machine), and the heap allocations the fan-out
 * makes on the step path (malloc is interposed here; want 0).
 *
 * The step path: ProxyStep startEvent, SendGPUWait, SendPeerWait, SendWait,
 * stopEvent — five host calls per step, under one ProxyOp of one Coll, on
 * the v6 table (NCCL 2.29/2.30). Usage: bench_fanout CHILD.so FANOUT.so
 * [FORWARD.so] (CHILD: proxytrace, or the empty plugin to see the fan-out's
 * own cost; FORWARD: bench/forward_plugin.c, the floor of any plugin in
 * between: one more call per event).
 *
 * Each round runs one op on every side in turn; what is printed per side is
 * the median over rounds, and the added cost is the median of the per-round
 * differences, which a machine busy with other work disturbs far less than
 * the difference of two medians.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl/profiler_v6.h"

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
static long n_alloc;
void* malloc(size_t n) {
  n_alloc++;
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  n_alloc++;
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  n_alloc++;
  return __libc_realloc(p, n);
}

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

typedef struct {
  const ncclProfiler_v6_t* t;
  void* ctx;
  void* coll;
  int mask;
} side;

static side open_side(const char* path, uint64_t comm) {
  void* dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    fprintf(stderr, "bench_fanout: %s\n", dlerror());
    exit(1);
  }
  side s = {0};
  s.t = dlsym(dl, "ncclProfiler_v6");
  if (!s.t || s.t->init(&s.ctx, comm, &s.mask, "bench", 1, 2, 0, logger) != ncclSuccess) {
    fprintf(stderr, "bench_fanout: %s does not initialise\n", path);
    exit(1);
  }
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.nChannels = 1;
  s.t->startEvent(s.ctx, &s.coll, &d);
  s.t->stopEvent(s.coll);
  return s;
}

#define STEPS 64 /* steps per op */

/* One op of STEPS steps; returns ns per step. */
static double one_op(side* s) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyOp;
  d.parentObj = s->coll;
  d.proxyOp.pid = getpid();
  d.proxyOp.peer = 1;
  d.proxyOp.nSteps = STEPS;
  d.proxyOp.chunkSize = 1 << 17;
  d.proxyOp.isSend = 1;
  void* op = NULL;
  s->t->startEvent(s->ctx, &op, &d);
  s->t->recordEventState(op, ncclProfilerProxyOpInProgress_v4, NULL);
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  a.proxyStep.transSize = 1 << 17;
  double t0 = now_ns();
  for (int i = 0; i < STEPS; i++) {
    ncclProfilerEventDescr_v6_t sd;
    memset(&sd, 0, 32);
    sd.type = ncclProfileProxyStep;
    sd.parentObj = op;
    sd.proxyStep.step = i;
    void* st = NULL;
    s->t->startEvent(s->ctx, &st, &sd);
    s->t->recordEventState(st, ncclProfilerProxyStepSendGPUWait, &a);
    s->t->recordEventState(st, ncclProfilerProxyStepSendPeerWait_v4, &a);
    s->t->recordEventState(st, ncclProfilerProxyStepSendWait, &a);
    s->t->stopEvent(st);
  }
  double t1 = now_ns();
  s->t->stopEvent(op);
  return (t1 - t0) / STEPS;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp);
  return v[n / 2];
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: bench_fanout PLUGIN.so FANOUT.so [FORWARD.so]\n");
    return 2;
  }
  setenv("PROXYTRACE_FANOUT_PLUGINS", argv[1], 1);
  setenv("PROXYTRACE_FANOUT_HOST", "nccl-2.30", 1);
  setenv("BENCH_FORWARD_TO", argv[1], 1);
  const int nside = argc - 1;
  side sd[3];
  sd[0] = open_side(argv[1], 1);
  sd[1] = open_side(argv[2], 2);
  if (nside == 3) sd[2] = open_side(argv[3], 3);
  enum { ROUNDS = 400 };
  static double ns[3][ROUNDS], diff[3][ROUNDS];
  for (int r = 0; r < 20; r++)
    for (int k = 0; k < nside; k++) one_op(&sd[k]); /* warm */
  long allocs = 0;
  for (int r = 0; r < ROUNDS; r++) {
    for (int k = 0; k < nside; k++) {
      long before = n_alloc;
      ns[k][r] = one_op(&sd[k]);
      if (k == 1) allocs += n_alloc - before;
    }
    for (int k = 1; k < nside; k++) diff[k][r] = ns[k][r] - ns[0][r];
  }
  const char* base = strrchr(argv[1], '/');
  base = base ? base + 1 : argv[1];
  printf("fan-out, step path (5 host calls per step, v6, medians of %d rounds of one %d-step op per side):\n",
         ROUNDS, STEPS);
  static const char* const what[3] = {"directly", "via the fan-out", "via a bare forwarder"};
  for (int k = 0; k < nside; k++) {
    double m = median(ns[k], ROUNDS);
    if (!k) {
      printf("  %-30s %-22s %7.1f ns/step\n", base, what[k], m);
      continue;
    }
    double d = median(diff[k], ROUNDS);
    printf("  %-30s %-22s %7.1f ns/step   +%.1f ns/step, +%.1f ns per call\n", base, what[k], m, d, d / 5);
  }
  printf("  heap allocations in the fan-out's rounds: %ld (the op and step paths of %d ops)\n", allocs, ROUNDS);
  for (int k = 0; k < nside; k++) sd[k].t->finalize(sd[k].ctx);
  return 0;
}
