/*
 * bench_plugin.c — `make bench`: the plugin's hot path and memory, measured
 * side by side with an empty plugin driven through the same ABI calls in
 * the same run (this machine is shared and noisy: only the differences and
 * ratios mean something).
 *
 * Every callback is timed on its own with the recording clock (the TSC or
 * the aarch64 counter, or CLOCK_MONOTONIC); the timer's own cost is in both
 * columns and cancels in the difference. `make bench` runs it once with the
 * default clock and once with PROXYTRACE_CLOCK=monotonic, and it prints the
 * cost of one read of each clock. The
 * two plugins run in alternating rounds so drift hits both alike. `make
 * bench-base BENCH_BASE=...` puts another build's plugin in the empty
 * one's place: two builds side by side in one run.
 *
 *   diag path   recordEventState(ProxyOp, 31): RCCL's per-step counters and
 *               per-poll counters of full send/recv ops (completion included)
 *   step path   ProxyStep startEvent, its state records, stopEvent (RCCL:
 *               steps carry no counters; stock NCCL: they drive them)
 *   task path   a Coll event's start and stop, and its KernelCh events on
 *               2 channels (start, KernelChStop, stop): the progress state
 *
 * The step metrics (PROXYTRACE_METRICS_INTERVAL_MS) are measured the same
 * way: a second copy of the plugin, initialised with metrics on, runs in the
 * same rounds, and its cost is shown against the plugin without them.
 *
 * Also: heap allocations per step (malloc is interposed here), bytes per op
 * record, resident memory of 1 and 1000 communicators at rest and of one
 * with 4096 / 65536 / 262144 ops in flight and after they finish (slots are
 * mapped on use, so /proc/self/statm, not the malloc count, says it), heap
 * growth over a long run, the time to dump 10 000 active ops through the
 * hook, one dump of 10 000 and of 100 000 active ops as snapshot, text and
 * JSON, and the time of each of 1000 inits.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "nccl/profiler_v6.h"
#include "proxytrace/trace.h"
#include "trace/clock.h"

/* ---- counting allocator (the plugin's malloc binds to these) ---- */
extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);
static long n_alloc;
static long live_bytes;
void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  if (p) { n_alloc++; live_bytes += (long)malloc_usable_size(p); }
  return p;
}
void* calloc(size_t a, size_t b) {
  void* p = __libc_calloc(a, b);
  if (p) { n_alloc++; live_bytes += (long)malloc_usable_size(p); }
  return p;
}
void* realloc(void* q, size_t n) {
  if (q) live_bytes -= (long)malloc_usable_size(q);
  void* p = __libc_realloc(q, n);
  if (p) { n_alloc++; live_bytes += (long)malloc_usable_size(p); }
  return p;
}
void* aligned_alloc(size_t al, size_t n) {
  void* p = __libc_memalign(al, n);
  if (p) { n_alloc++; live_bytes += (long)malloc_usable_size(p); }
  return p;
}
void free(void* p) {
  if (p) live_bytes -= (long)malloc_usable_size(p);
  __libc_free(p);
}

typedef struct {
  const char* name;
  void* so;
  ncclProfiler_v6_t* p;
  ncclProfilerProxyTraceDump_t dump;
  void* ctx;
} plugin;

static double first_init_us; /* the process's first init of the plugin */
/* The table timed: 6, or 7 (PT_BENCH_TABLE=7). The callbacks timed take
 * only ProxyOp and ProxyStep descriptors, whose arms v6 and v7 share, so
 * one descriptor type serves both; a plugin without v7 is timed on v6. */
static int table_version = 6;

static void open_plugin(plugin* pl, const char* name, const char* path) {
  pl->name = name;
  pl->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!pl->so) { fprintf(stderr, "bench: %s\n", dlerror()); exit(2); }
  pl->p = table_version == 7 ? dlsym(pl->so, "ncclProfiler_v7") : NULL;
  if (!pl->p) pl->p = dlsym(pl->so, "ncclProfiler_v6");
  pl->dump = (ncclProfilerProxyTraceDump_t)dlsym(pl->so, "ncclProfilerProxyTraceDump");
  int mask = 0;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pl->p->init(&pl->ctx, 0xbeef, &mask, "bench", 2, 8, 0, NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  first_init_us = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
}

/* ---- sample store ---- */
#define MAXS (1 << 22)
typedef struct { uint32_t* v; size_t n; } samples;
static void add(samples* s, uint64_t t) { if (s->n < MAXS) s->v[s->n++] = (uint32_t)t; }
static int cmpu(const void* a, const void* b) {
  uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return x < y ? -1 : x > y;
}
static double pct(samples* s, double q, double ns_per_tick) {
  qsort(s->v, s->n, sizeof *s->v, cmpu);
  return s->v[(size_t)(q * (double)(s->n - 1))] * ns_per_tick;
}

/* Two passes: per-call timing (each callback alone: the tail, quantised to
 * the timer's resolution) and block timing (a run of callbacks timed
 * together and divided, once per callback: the typical cost, at sub-tick
 * precision, stored in 1/16 ticks). */
static int block_mode;
#define TIMED(S, call) do { if (block_mode) { call; } else { uint64_t t0_ = pt_ticks(); call; \
    add((S), (pt_ticks() - t0_) * 16); } } while (0)
#define BLOCK_BEGIN() uint64_t b0_ = block_mode ? pt_ticks() : 0
#define BLOCK_END(S, ncalls) do { if (block_mode) { uint64_t per_ = (pt_ticks() - b0_) * 16 / (ncalls); \
    for (int i_ = 0; i_ < (ncalls); i_++) add((S), per_); } } while (0)

/* One RCCL-like op: InProgress, then per step POSTED (+3 polls while the GPU
 * works), KERNEL_COPY_READY twice, TRANSMITTED, DONE; step events around. */
static int stock_mode; /* 1: NVIDIA NCCL — no RCCL fields, no diag updates; 2: the same, each send
                        * step's SendPeerWait tried twice more (isend found no credit) */

static void run_op(plugin* pl, int64_t opcount, int nsteps, samples* diag, samples* step, samples* opev,
                   long* steps_done) {
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyOp;
  d.proxyOp.pid = getpid();
  d.proxyOp.peer = 1;
  d.proxyOp.isSend = 1;
  d.proxyOp.nSteps = nsteps;
  if (!stock_mode) {
    d.proxyOp.commHash = 0xbeef;
    d.proxyOp.opCount = opcount;
    d.proxyOp.rawProxyNsteps = nsteps;
    d.proxyOp.proxyNbytes = 1 << 20;
  }
  void* op = NULL;
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  {
    BLOCK_BEGIN();
    TIMED(opev, pl->p->startEvent(pl->ctx, &op, &d));
    TIMED(opev, pl->p->recordEventState(op, ncclProfilerProxyOpInProgress_v4, &a));
    BLOCK_END(opev, 2);
  }
  ncclProfilerEventDescr_v6_t sd;
  memset(&sd, 0, sizeof sd);
  sd.type = ncclProfileProxyStep;
  sd.parentObj = op;
#define DIAG(k, v, f) do { if (stock_mode) break; a.proxyDiag.counterKind = (k); a.proxyDiag.value = (v); \
    a.proxyDiag.flags = (f); TIMED(diag, pl->p->recordEventState(op, ncclProfilerProxyDiagUpdate, &a)); } while (0)
  ncclProfilerEventStateArgs_v6_t sa = {.proxyStep = {.transSize = 1 << 20}};
  const int retries = stock_mode == 2 ? 2 : 0;
  if (block_mode) {
    /* Every step event of the op in one block (a block of a few events is
     * a few timer ticks: too coarse on a CPU whose counter advances in
     * steps of 10 ns), before the op's ProxyDiag updates (their blocks
     * follow): the step events of an RCCL op move no counter, so their
     * order against the updates changes nothing. */
    BLOCK_BEGIN();
    for (int s = 0; s < nsteps; s++) {
      void* sh = NULL;
      sd.proxyStep.step = s;
      pl->p->startEvent(pl->ctx, &sh, &sd);
      pl->p->recordEventState(sh, ncclProfilerProxyStepSendGPUWait, &sa);
      pl->p->recordEventState(sh, ncclProfilerProxyStepSendPeerWait_v4, &sa);
      for (int k = 0; k < retries; k++) pl->p->recordEventState(sh, ncclProfilerProxyStepSendPeerWait_v4, &sa);
      pl->p->recordEventState(sh, ncclProfilerProxyStepSendWait, &sa);
      pl->p->stopEvent(sh);
    }
    BLOCK_END(step, (5 + retries) * nsteps);
  }
  for (int s = 1; s <= nsteps; s++) {
    void* sh = NULL;
    sd.proxyStep.step = s - 1;
    if (!block_mode) {
      TIMED(step, pl->p->startEvent(pl->ctx, &sh, &sd));
      TIMED(step, pl->p->recordEventState(sh, ncclProfilerProxyStepSendGPUWait, &sa));
    }
    {
      BLOCK_BEGIN();
      DIAG(ncclProxyDiagPosted, s, NCCL_PROXY_DIAG_FLAG_TIMESTAMP);
      for (int poll = 0; poll < 3; poll++) {
        DIAG(ncclProxyDiagRecvTail, 100 + s, 0);
        DIAG(ncclProxyDiagTailOrHead, 100 + s - 1, 0);
        DIAG(ncclProxyDiagFifoSzOrHeadCache, -1, 0);
      }
      BLOCK_END(diag, 10);
    }
    if (!block_mode) {
      TIMED(step, pl->p->recordEventState(sh, ncclProfilerProxyStepSendPeerWait_v4, &sa));
      for (int k = 0; k < retries; k++) TIMED(step, pl->p->recordEventState(sh, ncclProfilerProxyStepSendPeerWait_v4, &sa));
    }
    {
      BLOCK_BEGIN();
      DIAG(ncclProxyDiagKernelCopyReady, s, 0);
      DIAG(ncclProxyDiagKernelCopyReady, 0, NCCL_PROXY_DIAG_FLAG_TIMESTAMP | NCCL_PROXY_DIAG_FLAG_COUNTER_SKIP);
      BLOCK_END(diag, 2);
    }
    if (!block_mode) TIMED(step, pl->p->recordEventState(sh, ncclProfilerProxyStepSendWait, &sa));
    {
      BLOCK_BEGIN();
      DIAG(ncclProxyDiagTransmitted, s, 0);
      DIAG(ncclProxyDiagDone, s, 0);
      BLOCK_END(diag, 2);
    }
    if (!block_mode) TIMED(step, pl->p->stopEvent(sh));
    (*steps_done)++;
  }
  {
    BLOCK_BEGIN();
    TIMED(opev, pl->p->stopEvent(op));
    BLOCK_END(opev, 1);
  }
#undef DIAG
}

/* `n` tasks as NVIDIA NCCL 2.29+ sends them through the v6 table: each
 * one's Coll event (started and stopped at once), then on each of its 2
 * channels the kernel-channel events (start, KernelChStop with the GPU's
 * time, stop). The block pass times all Coll events together, then all
 * kernel-channel events: a block of one task's few events is a few timer
 * ticks. */
#define TASK_CHANNELS 2
static void run_tasks(plugin* pl, uint64_t seq0, int n, samples* coll, samples* kch) {
  enum { MAXT = 64 };
  void* c[MAXT];
  if (n > MAXT) n = MAXT;
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.coll.func = "AllReduce";
  d.coll.count = 1 << 20;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = TASK_CHANNELS;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  {
    BLOCK_BEGIN();
    for (int i = 0; i < n; i++) {
      d.coll.seqNumber = seq0 + (uint64_t)i;
      TIMED(coll, pl->p->startEvent(pl->ctx, &c[i], &d));
      TIMED(coll, pl->p->stopEvent(c[i]));
    }
    BLOCK_END(coll, 2 * n);
  }
  ncclProfilerEventDescr_v6_t k;
  memset(&k, 0, sizeof k);
  k.type = ncclProfileKernelCh;
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  BLOCK_BEGIN();
  for (int i = 0; i < n; i++) {
    void* h[TASK_CHANNELS] = {NULL};
    k.parentObj = c[i];
    for (int ch = 0; ch < TASK_CHANNELS; ch++) {
      k.kernelCh.channelId = (uint8_t)ch;
      k.kernelCh.pTimer = seq0 + (uint64_t)i;
      TIMED(kch, pl->p->startEvent(pl->ctx, &h[ch], &k));
    }
    for (int ch = 0; ch < TASK_CHANNELS; ch++) {
      a.kernelCh.pTimer = seq0 + (uint64_t)i + 1;
      TIMED(kch, pl->p->recordEventState(h[ch], ncclProfilerKernelChStop, &a));
      TIMED(kch, pl->p->stopEvent(h[ch]));
    }
  }
  BLOCK_END(kch, 3 * TASK_CHANNELS * n);
}

static void null_logger(ncclDebugLogLevel l, unsigned long f, const char* file, int line,
                        const char* fmt, ...) {
  (void)l; (void)f; (void)file; (void)line;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap); /* the host formats every line */
  va_end(ap);
}

/* Two rows: median (block pass) and p99 (per-call pass), plugin `x` vs
 * plugin `y` (0 proxytrace, 1 empty, 2 proxytrace with metrics). */
static void report_pair(const char* what, samples s[3][2], double ns, int x, int y, int t_med, int t_p99) {
  const struct { const char* label; int pass; double q; int target; } rows[] = {
      {"median", 1, 0.5, t_med}, {"p99", 0, 0.99, t_p99}};
  for (int r = 0; r < 2; r++) {
    double a = pct(&s[x][rows[r].pass], rows[r].q, ns), b = pct(&s[y][rows[r].pass], rows[r].q, ns);
    char name[64];
    snprintf(name, sizeof name, "%s, %s", what, rows[r].label);
    printf("%-34s %10.1f %10.1f %10.1f %8.2f   target added <= %d\n", name, a, b, a - b, a / b,
           rows[r].target);
  }
}

static void report(const char* what, samples s[3][2], double ns, int t_med) {
  report_pair(what, s, ns, 0, 1, t_med, 50);
}

/* ns per clock read, best of 5 runs of 1M reads: the CPU counter read the
 * way the hot path reads it (pt_counter_read: rdtsc on x86, isb + cntvct_el0
 * on aarch64) and clock_gettime(CLOCK_MONOTONIC), what PROXYTRACE_CLOCK=
 * monotonic or a machine without a usable counter gets. */
static double ns_per_read(int counter) {
  double best = 1e9;
  for (int run = 0; run < 5; run++) {
    struct timespec a, b, ts;
    uint64_t sink = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 1000000; i++) {
#if PT_CLOCK_HAS_COUNTER
      if (counter) { sink += pt_counter_read(); continue; }
#endif
      clock_gettime(CLOCK_MONOTONIC, &ts);
      sink += (uint64_t)ts.tv_nsec;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    __asm__ __volatile__("" : : "r"(sink));
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e6;
    if (ns < best) best = ns;
  }
  return best;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A dump file's buffer (pt_out, as src/plugin/sink.c gives the formatters),
 * large enough for the whole dump: the lines are written in place; a flush
 * (never needed here) would reuse it. write() is not measured. */
static void out_reuse(pt_out* o) { o->len = 0; }

/* One dump of n active ops: the snapshot, then the text and the JSON
 * printed from it, as a dump file gets them: into its buffer (best of 5
 * each; the first of the five also on its own: it pays for the memory the
 * snapshot touches first, as the first dump of a process does). */
static void dump_formats(uint32_t n) {
  pt_trace* t;
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = n;
  if (pt_trace_create(&t, &cfg, 3) != 0) return;
  for (uint32_t i = 0; i < n; i++) {
    pt_op_info info = {.comm_hash = 0x1234567890ull, .op_count = i / 16, .channel = (int)(i % 16), .peer = 4,
                       .nsteps = 64, .is_send = (int)(i & 1), .nbytes = 1 << 20, .func_idx = 4, .protocol = 2,
                       .pattern = 1, .total_bytes = 1u << 24, .chunk_size = 1 << 19};
    void* h = pt_op_start(t, &info);
    pt_op_register(h);
    for (unsigned k = 0; k < PT_CNT_NUM; k++) pt_op_update(h, k, 3 + k, PT_FLAG_TIMESTAMP);
  }
  const size_t cap = (size_t)n * 1200 + (1 << 20);
  pt_out b = {.buf = __libc_malloc(cap), .cap = cap, .flush = out_reuse};
  memset(b.buf, 0, cap); /* the file buffer is warm: only the dump's own memory is first-touched */
  pt_dump_meta m = {.host = "node0", .pid = 1, .nranks = 64, .nnodes = 8, .comm_hash = 0x1234567890ull,
                    .comm_name = "bench", .host_lib = "rccl", .profiler_api = 6, .trigger = "stall", .seq = 1,
                    .round = 1, .stall_ms = 10000, .last_progress_ticks = pt_trace_last_progress(t)};
  double best[3] = {1e9, 1e9, 1e9}, first[3] = {0, 0, 0};
  size_t text_bytes = 0, json_bytes = 0;
  int lines = 0;
  for (int i = 0; i < 5; i++) {
    double t0 = now_ms();
    pt_dump* d = pt_trace_snapshot(t);
    double t1 = now_ms();
    b.len = 0;
    lines = pt_dump_text_out(d, &b);
    text_bytes = b.len;
    double t2 = now_ms();
    b.len = 0;
    pt_dump_json_out(d, &m, &b);
    json_bytes = b.len;
    double t3 = now_ms();
    pt_dump_free(d);
    if (i == 0) {
      first[0] = t1 - t0;
      first[1] = t2 - t1;
      first[2] = t3 - t2;
    }
    if (t1 - t0 < best[0]) best[0] = t1 - t0;
    if (t2 - t1 < best[1]) best[1] = t2 - t1;
    if (t3 - t2 < best[2]) best[2] = t3 - t2;
  }
  printf("dump of %6u active ops           snapshot+sort %.2f ms; text %.2f ms (%.2f M lines/s, %zu KiB); "
         "JSON %.2f ms (%.2f M lines/s, %zu KiB); total text %.2f ms, JSON %.2f ms (target <= 15 at 100000); "
         "first dump: total text %.2f ms, JSON %.2f ms\n",
         n, best[0], best[1], lines / best[1] / 1e3, text_bytes >> 10, best[2], lines / best[2] / 1e3,
         json_bytes >> 10, best[0] + best[1], best[0] + best[2], first[0] + first[1], first[0] + first[2]);
  __libc_free(b.buf);
  pt_trace_destroy(t);
}

/* Resident memory of the process, from /proc/self/statm (pages in RAM). */
static long rss_bytes(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
    fclose(f);
  }
  return res * sysconf(_SC_PAGESIZE);
}

/* Memory of communicators at rest and of one communicator with many ops in
 * flight: resident bytes added (malloc heap and mapped slots alike). */
static void memory(plugin* pl) {
  enum { NCOMM = 1000 };
  static void* ctx[NCOMM];
  int mask = 0;
  long r0 = rss_bytes();
  pl->p->init(&ctx[0], 0x7000, &mask, "mem", 2, 8, 0, NULL);
  long r1 = rss_bytes();
  for (int i = 1; i < NCOMM; i++) pl->p->init(&ctx[i], 0x7000u + (uint64_t)i, &mask, "mem", 2, 8, i % 8, NULL);
  long rn = rss_bytes();
  printf("memory after init of 1 / %d comms  %.1f KiB / %.1f MiB (%.1f KiB each; targets <= 64 KiB, <= 64 MB)\n",
         NCOMM, (double)(r1 - r0) / 1024.0, (double)(rn - r0) / 1048576.0, (double)(rn - r0) / NCOMM / 1024.0);
  for (int i = 0; i < NCOMM; i++) pl->p->finalize(ctx[i]);
  /* one communicator, ops in flight */
  static const uint32_t counts[] = {4096, 65536, 262144};
  pt_trace* t;
  pt_trace_config cfg;
  pt_trace_config_default(&cfg);
  cfg.max_ops = 262144;
  if (pt_trace_create(&t, &cfg, 0) != 0) return;
  static pt_handle h[262144];
  long base = rss_bytes();
  uint32_t started = 0;
  printf("memory with N active ops           ");
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    for (; started < counts[k]; started++) {
      pt_op_info in = {.comm_hash = 9, .op_count = started / 16, .peer = 1, .nsteps = 1, .is_send = 1};
      h[started] = pt_op_start(t, &in);
      pt_op_register(h[started]);
    }
    pt_drop_stats ds;
    pt_trace_drops(t, &ds);
    printf("%u: %.1f MiB (%llu dropped)%s", counts[k], (double)(rss_bytes() - base) / 1048576.0,
           (unsigned long long)ds.n[PT_DROP_OPS_DROPPED], k + 1 < sizeof counts / sizeof counts[0] ? "; " : "\n");
  }
  for (uint32_t i = 0; i < started; i++) {
    pt_op_update(h[i], PT_CNT_DONE, 1, 0);
    pt_handle_stop(h[i]);
  }
  long done = rss_bytes() - base;
  for (uint32_t i = 0; i < 262144; i++) { /* a second wave reuses the slots */
    pt_op_info in = {.comm_hash = 9, .op_count = i / 16, .peer = 1, .nsteps = 1, .is_send = 1};
    pt_handle x = pt_op_start(t, &in);
    pt_op_register(x);
    pt_op_update(x, PT_CNT_DONE, 1, 0);
    pt_handle_stop(x);
  }
  printf("memory after they finish           %.1f MiB (kept for reuse until the communicator ends); "
         "after 262144 more ops %.1f MiB (reused, no growth)\n",
         (double)done / 1048576.0, (double)(rss_bytes() - base) / 1048576.0);
  pt_trace_destroy(t);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* init then finalize of `n` communicators, one at a time: the time of each
 * init (the first one of the process included). */
static void init_times(plugin* pl, int n) {
  double* us = __libc_malloc((size_t)n * sizeof *us);
  for (int i = 0; i < n; i++) {
    void* ctx = NULL;
    int mask = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pl->p->init(&ctx, 0x5000u + (uint64_t)i, &mask, "init", 2, 8, i % 8, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    us[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
    pl->p->finalize(ctx);
  }
  qsort(us, (size_t)n, sizeof *us, cmp_double);
  printf("init per communicator (us)         median %.1f, max %.1f over %d; the process's first %.1f "
         "(target <= 50)\n", us[n / 2], us[n - 1], n, first_init_us);
  __libc_free(us);
}

int main(int argc, char** argv) {
  const char* real_path = argc > 1 ? argv[1] : "build/librccl-profiler-proxytrace.so";
  const char* empty_path = argc > 2 ? argv[2] : "build/bench/libempty-profiler.so";
  int rounds = argc > 3 ? atoi(argv[3]) : 40;
  const char* table = getenv("PT_BENCH_TABLE");
  if (table && !strcmp(table, "7")) table_version = 7;
  pt_clock_init();
  pt_clock_cal cal;

  long heap0 = live_bytes, alloc0 = n_alloc;
  plugin real, empty, metered;
  open_plugin(&real, "proxytrace", real_path);
  const double real_first_init_us = first_init_us;
  long heap_init = live_bytes - heap0;
  (void)alloc0;
  open_plugin(&empty, "empty", empty_path);
  memory(&real); /* first: later runs leave freed memory resident */
  /* The same plugin with step metrics: a copy of the library (a second
   * dlopen of one path is the same instance), initialised with them on. */
  char mdir[] = "/tmp/proxytrace-bench-XXXXXX", mcopy[64];
  if (!mkdtemp(mdir)) { perror("bench: mkdtemp"); return 2; }
  snprintf(mcopy, sizeof mcopy, "%s/libmetrics.so", mdir);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", real_path, mcopy);
  if (system(cmd) != 0) { fprintf(stderr, "bench: cannot copy %s\n", real_path); return 2; }
  setenv("PROXYTRACE_METRICS_INTERVAL_MS", "86400000", 1);
  setenv("PROXYTRACE_METRICS_DIR", mdir, 1);
  long heap_m0 = live_bytes;
  open_plugin(&metered, "proxytrace+metrics", mcopy);
  long heap_metrics = live_bytes - heap_m0;
  unsetenv("PROXYTRACE_METRICS_INTERVAL_MS");
  unsetenv("PROXYTRACE_METRICS_DIR");

  /* [plugin][pass]: plugins proxytrace, empty, with metrics; pass 0 per call, pass 1 blocks */
  static samples diag[3][2], step[3][2], sstep[3][2], rstep[3][2], opev[3][2], coll[3][2], kch[3][2];
  samples* all[] = {&diag[0][0], &step[0][0], &sstep[0][0], &rstep[0][0], &opev[0][0], &coll[0][0], &kch[0][0]};
  for (int k = 0; k < 7; k++)
    for (int i = 0; i < 6; i++) {
      all[k][i].v = __libc_malloc(MAXS * sizeof(uint32_t));
      memset(all[k][i].v, 0, MAXS * sizeof(uint32_t)); /* its page faults not in the rounds' count */
    }
  long steps_real = 0, steps_empty = 0, steps_metered = 0, dummy = 0;
  samples junk = {__libc_malloc(MAXS * sizeof(uint32_t)), 0};
  for (int i = 0; i < 50; i++) { /* warm-up */
    run_op(&real, i, 64, &junk, &junk, &junk, &dummy);
    run_op(&metered, i, 64, &junk, &junk, &junk, &dummy);
    junk.n = 0;
  }
  long heap_steady0 = live_bytes;
  long allocs_before = n_alloc;
  struct rusage ru0, ru1;
  getrusage(RUSAGE_THREAD, &ru0);
  /* RCCL (diag counters), then stock NCCL (the same step events drive the
   * counters), then stock NCCL whose isends find no credit at first (two
   * SendPeerWait retries a step, as its polls record them): alternating
   * rounds of both plugins, passes alternating too. */
  for (stock_mode = 0; stock_mode < 3; stock_mode++) {
    samples (*st)[2] = stock_mode == 2 ? rstep : stock_mode ? sstep : step;
    for (int r = 0; r < rounds; r++) {
      int m = block_mode = r & 1;
      for (int k = 0; k < 40; k++)
        run_op(&real, 1000 + r * 40 + k, 64, &diag[0][m], &st[0][m], &opev[0][m], &steps_real);
      for (int k = 0; k < 40; k++)
        run_op(&empty, r * 40 + k, 64, &diag[1][m], &st[1][m], &opev[1][m], &steps_empty);
      for (int k = 0; k < 40; k++)
        run_op(&metered, 1000 + r * 40 + k, 64, &diag[2][m], &st[2][m], &opev[2][m], &steps_metered);
      plugin* pls[3] = {&real, &empty, &metered};
      for (int p = 0; p < 3; p++) /* the task and kernel events of as many collectives */
        run_tasks(pls[p], (uint64_t)r * 40, 40, &coll[p][m], &kch[p][m]);
    }
  }
  stock_mode = 0;
  getrusage(RUSAGE_THREAD, &ru1);
  long allocs_real = n_alloc - allocs_before; /* the empty plugin allocates nothing either */
  long heap_growth = live_bytes - heap_steady0;
  pt_clock_calibration(&cal);
  double npt = cal.ns_per_tick / 16.0;
  printf("proxytrace bench (ncclProfiler_v%d table, %s clock, %.3f ns/tick; %zu diag and %zu step callbacks timed one by one per plugin)\n",
         table_version, pt_clock_source(), cal.ns_per_tick, diag[0][0].n, step[0][0].n);
  printf("medians from runs of callbacks timed together, p99 from callbacks timed alone (timer included in both columns)\n");
  /* another build's plugin in the second column (make bench-base): "base" */
  const char* second = strstr(empty_path, "empty") ? "empty" : "base";
  printf("%-34s %10s %10s %10s %8s\n", "per callback (ns)", "proxytrace", second, "added", "ratio");
  report("diag update", diag, npt, 15);
  report("step event", step, npt, 5);
  report("stock NCCL step", sstep, npt, 5);
  report("stock step, 2 isend retries", rstep, npt, 5);
  report("ProxyOp start/register/stop", opev, npt, 15);
  report("Coll start/stop", coll, npt, 5);
  report("KernelCh start/state/stop", kch, npt, 5);
  printf("%-34s %10s %10s %10s %8s\n", "step metrics (ns)", "+metrics", "proxytrace", "added", "ratio");
  report_pair("diag update", diag, npt, 2, 0, 3, 50);
  report_pair("step event", step, npt, 2, 0, 3, 50);
  report_pair("stock NCCL step", sstep, npt, 2, 0, 3, 50);
  report_pair("ProxyOp start/register/stop", opev, npt, 2, 0, 50, 200);
#if PT_CLOCK_HAS_COUNTER
  double c_ns = ns_per_read(1), m_ns = ns_per_read(0);
  printf("clock read (ns)                    %s %.1f, CLOCK_MONOTONIC %.1f (%.2fx)\n",
         PT_CLOCK_COUNTER_NAME, c_ns, m_ns, m_ns / c_ns);
#else
  printf("clock read (ns)                    CLOCK_MONOTONIC %.1f (no CPU counter here)\n",
         ns_per_read(0));
#endif
  printf("heap allocations per step          %.4f (%ld over %ld steps; target 0)\n",
         (double)allocs_real / (double)steps_real, allocs_real, steps_real);
  printf("page faults in the timed rounds    %ld (the recording thread, all three plugins; target 0)\n",
         ru1.ru_minflt - ru0.ru_minflt);
  printf("bytes per op record                %zu (one slab slot; target <= 256)\n", pt_op_slot_bytes());
  printf("malloc heap of the first init      %.2f KiB (slots and id table are mapped, not malloc'd: see memory below)\n",
         (double)heap_init / 1024.0);
  printf("heap growth over %ld ops            %ld bytes (target 0: flat over run length)\n",
         (long)rounds * 40, heap_growth);
  {
    /* The metrics' own memory, from the core: idle, then with 64 peers in
     * both directions (the dumper's part done here). */
    pt_trace_config mc;
    pt_trace_config_default(&mc);
    mc.metrics = PT_METRICS_ON;
    pt_trace* mt = NULL;
    if (pt_trace_create(&mt, &mc, 0) == 0) {
      size_t idle = pt_trace_metrics_bytes(mt);
      for (int round = 0; round < 64; round++) {
        pt_trace_metrics_service(mt);
        for (int peer = 0; peer < 64; peer++)
          for (int send = 0; send < 2; send++) {
            pt_op_info info = {.comm_hash = 1, .op_count = round, .peer = peer, .nsteps = 1, .is_send = send};
            void* h = pt_op_start(mt, &info);
            pt_op_register(h);
            pt_op_update(h, PT_CNT_DONE, 1, 0);
            pt_handle_stop(h);
          }
      }
      printf("metrics memory per communicator    %zu bytes idle, %zu with 64 peers both ways (%zu per edge, %zu per "
             "op in flight; heap of the metrics plugin's init less the plain one's: %ld)\n",
             idle, pt_trace_metrics_bytes(mt), pt_metric_edge_bytes(), pt_metric_op_bytes(), heap_metrics - heap_init);
      pt_trace_destroy(mt);
    }
  }
  printf("metrics allocations per step       %.4f (%ld steps, the metrics plugin included above)\n",
         (double)allocs_real / (double)(steps_real + steps_metered), steps_real + steps_metered);

  /* dump of 10 000 active ops */
  void* big = NULL;
  int mask = 0;
  real.p->init(&big, 0xfeed, &mask, "big", 2, 8, 0, NULL);
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyOp;
  d.proxyOp.pid = getpid();
  d.proxyOp.rawProxyNsteps = 64;
  d.proxyOp.commHash = 0xfeed;
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  for (int i = 0; i < 10000; i++) {
    void* h = NULL;
    d.proxyOp.opCount = i / 16;
    d.proxyOp.channelId = (uint8_t)(i % 16);
    real.p->startEvent(big, &h, &d);
    real.p->recordEventState(h, ncclProfilerProxyOpInProgress_v4, &a);
    a.proxyDiag.counterKind = ncclProxyDiagPosted;
    a.proxyDiag.value = 3;
    real.p->recordEventState(h, ncclProfilerProxyDiagUpdate, &a);
  }
  double best = 1e9;
  for (int i = 0; i < 5; i++) {
    double t0 = now_ms();
    real.dump(big, null_logger);
    double t = now_ms() - t0;
    if (t < best) best = t;
  }
  printf("dump of 10000 active ops           %.2f ms (best of 5, host formatting included)\n", best);
  real.p->finalize(big);
  real.p->finalize(real.ctx);
  metered.p->finalize(metered.ctx);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", mdir);
  if (system(cmd) != 0) fprintf(stderr, "bench: could not remove %s\n", mdir);
  dump_formats(10000);
  dump_formats(100000);
  first_init_us = real_first_init_us;
  init_times(&real, 1000);
  return 0;
}
