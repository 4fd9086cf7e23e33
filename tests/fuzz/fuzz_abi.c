/*
 * fuzz_abi.c — libFuzzer target: the plugin's ABI as a host could drive it,
 * and worse. The input is a program of calls — init of any API version
 * (v1..v6), startEvent, recordEventState, stopEvent, the dump hook, finalize —
 * with random event types, states, descriptor bytes and state args, and
 * handles drawn from everything the plugin ever returned: live, stopped
 * (stale), NULL, the Group sentinel, Coll/P2p task handles, handles of
 * another communicator, and op handles of communicators already finalized
 * as step parents.
 *
 * What the host contract forbids is not generated: a handle of a finalized
 * communicator passed to stop/record (the plugin cannot tell it from live
 * memory without a lookup on the hot path), pointers the plugin never gave
 * out, a function name that is not a string. Everything else must hold:
 *   - no crash, no sanitizer report, no leak (LeakSanitizer at exit of each
 *     input: every context is finalized);
 *   - every dump is well formed (header, optional drop and mid-write lines,
 *     then records) and has exactly one line per active op plus the finished
 *     ring: nothing live is missing, nothing is printed twice;
 *   - a ProxyOp of this process on a live context is dropped only when every
 *     slot holds a registered op;
 *   - the logger is never called with a lock held (it re-enters the dump).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "nccl/profiler_v1.h"
#include "nccl/profiler_v2.h"
#include "nccl/profiler_v3.h"
#include "nccl/profiler_v4.h"
#include "nccl/profiler_v5.h"
#include "nccl/profiler_v6.h"
#include "plugin/plugin.h"
#include "trace/slab.h"

extern ncclProfiler_v1_t ncclProfiler_v1;
extern ncclProfiler_v2_t ncclProfiler_v2;
extern ncclProfiler_v3_t ncclProfiler_v3;
extern ncclProfiler_v4_t ncclProfiler_v4;
extern ncclProfiler_v5_t ncclProfiler_v5;
extern ncclProfiler_v6_t ncclProfiler_v6;

/* ---- reading the program ---- */

static void fill(fz_input* in, void* dst, size_t k) {
  unsigned char* d = dst;
  for (size_t i = 0; i < k; i++) d[i] = fz_u8(in);
}

/* ---- what the program holds ---- */

enum { MAX_CTX = 4, MAX_HANDLES = 96 };

typedef struct {
  void* ctx;  /* NULL: free, or an init that opted out */
  int version;
  int used;
} ctx_slot;

typedef struct {
  void* h;
  int ctx;   /* index of the context it was started on */
  long epoch; /* that context's life: handles of a finalized one are dead */
} handle_slot;

static ctx_slot ctxs[MAX_CTX];
static long ctx_epoch[MAX_CTX];
static handle_slot handles[MAX_HANDLES];
static int n_handles;

static void keep_handle(void* h, int ctx) {
  if (!h) return;
  handle_slot* s = &handles[n_handles < MAX_HANDLES ? n_handles++ : (int)((uintptr_t)h % MAX_HANDLES)];
  s->h = h;
  s->ctx = ctx;
  s->epoch = ctx_epoch[ctx];
}

static int handle_alive(const handle_slot* s) {
  return ctxs[s->ctx].used && ctx_epoch[s->ctx] == s->epoch;
}

/* A handle for stop/record: one of a live context (stale or not), NULL, the
 * Group sentinel, or a small integer. */
static void* pick_handle(fz_input* in) {
  const uint8_t k = fz_u8(in);
  switch (k % 8) {
    case 0: return NULL;
    case 1: return pt_group_handle();
    case 2: return (void*)(uintptr_t)(k >> 3); /* small integers: never a slot */
    default: break;
  }
  if (!n_handles) return NULL;
  handle_slot* s = &handles[fz_u8(in) % n_handles];
  return handle_alive(s) ? s->h : NULL;
}

/* A step parent: any handle ever returned, dead contexts included. */
static void* pick_parent(fz_input* in) {
  const uint8_t k = fz_u8(in);
  if (k % 5 == 0 || !n_handles) return k % 2 ? NULL : pt_group_handle();
  return handles[fz_u8(in) % n_handles].h;
}

static int pick_ctx(fz_input* in) { return fz_u8(in) % MAX_CTX; }

/* ---- the dump check ---- */

typedef struct {
  int lines, records, header_ok, bad, reentered;
  void* ctx;
} dump_check;

static dump_check* cur_dump;

static void checking_logger(ncclDebugLogLevel level, unsigned long flags, const char* file,
                            int line, const char* fmt, ...) {
  (void)level, (void)flags, (void)line;
  if (!cur_dump || strcmp(file, "ncclProfilerProxyTraceDump") != 0) return; /* warnings */
  va_list ap;
  va_start(ap, fmt);
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  dump_check* d = cur_dump;
  if (d->lines++ == 0) {
    d->header_ok = strncmp(buf, "commDump for all active ops mapSizeMB:", 38) == 0;
    return;
  }
  if (!strncmp(buf, "createT:", 8)) {
    d->records++;
    if (!strstr(buf, ", status:") || !strstr(buf, ", done:")) d->bad++;
  } else if (strncmp(buf, "proxytrace dropped or refused events", 36) != 0 &&
             strncmp(buf, "proxytrace: ", 12) != 0 && strncmp(buf, "proxytrace host:", 16) != 0 &&
             strncmp(buf, "proxytrace progress: ", 21) != 0 && strncmp(buf, "proxytrace coll: ", 17) != 0 &&
             strncmp(buf, "proxytrace p2p: ", 16) != 0 && strncmp(buf, "proxytrace kernelCh: ", 21) != 0) {
    d->bad++; /* none of: a record, the drop line, a note, what the host did (diag, mask), the progress
               * lines (the calls made, the kernel channels) */
  }
  /* A host logger may re-enter the plugin: a dump of another context from
   * inside the logger must not deadlock (once per dump, no recursion). */
  if (!d->reentered) {
    d->reentered = 1;
    dump_check* outer = cur_dump;
    cur_dump = NULL;
    for (int i = 0; i < MAX_CTX; i++)
      if (ctxs[i].used && ctxs[i].ctx != d->ctx) ncclProfilerProxyTraceDump(ctxs[i].ctx, checking_logger);
    cur_dump = outer;
  }
}

static void do_dump(int k) {
  void* ctx = ctxs[k].used ? ctxs[k].ctx : NULL;
  dump_check d = {.ctx = ctx};
  cur_dump = &d;
  ncclProfilerProxyTraceDump(ctx, checking_logger);
  cur_dump = NULL;
  pt_trace* t = pt_ctx_trace(ctx);
  if (!t) {
    CHECK(d.lines == 0);
    return;
  }
  CHECK(d.header_ok);
  CHECK(d.bad == 0);
  CHECK((uint64_t)d.records == pt_trace_active_ops(t) + pt_trace_ring_finished(t));
}

/* ---- the calls ---- */

static char names[MAX_CTX][32];

static void do_init(fz_input* in, int k) {
  if (ctxs[k].used) return;
  const int v = 1 + fz_u8(in) % 6;
  const uint8_t flags = fz_u8(in);
  const uint64_t hash = fz_bytes(in, 2);
  const int nranks = (int)(fz_u8(in) % 9), rank = (int)(int8_t)fz_u8(in);
  snprintf(names[k], sizeof names[k], "c%u", fz_u8(in));
  const char* name = flags & 1 ? names[k] : NULL;
  ncclDebugLogger_t log = flags & 2 ? checking_logger : NULL;
  int mask = 0;
  int* maskp = flags & 4 ? NULL : &mask;
  void* ctx = NULL;
  ncclResult_t rc = ncclInternalError;
  switch (v) {
    case 1: rc = ncclProfiler_v1.init(&ctx, maskp); break;
    case 2: rc = ncclProfiler_v2.init(&ctx, maskp); break;
    case 3: rc = ncclProfiler_v3.init(&ctx, maskp); break;
    case 4: rc = ncclProfiler_v4.init(&ctx, maskp, name, hash, 2, nranks, rank, log); break;
    case 5: rc = ncclProfiler_v5.init(&ctx, hash, maskp, name, 2, nranks, rank, log); break;
    case 6: rc = ncclProfiler_v6.init(&ctx, hash, maskp, name, 2, nranks, rank, log); break;
  }
  CHECK(rc == ncclSuccess);
  CHECK(ctx != NULL); /* memory is there: init must not opt out */
  ctxs[k] = (ctx_slot){.ctx = ctx, .version = v, .used = 1};
  ctx_epoch[k]++;
}

static void do_finalize(int k) {
  if (!ctxs[k].used) return;
  void* ctx = ctxs[k].ctx;
  ncclResult_t rc = ncclSuccess;
  switch (ctxs[k].version) {
    case 1: rc = ncclProfiler_v1.finalize(ctx); break;
    case 2: rc = ncclProfiler_v2.finalize(ctx); break;
    case 3: rc = ncclProfiler_v3.finalize(ctx); break;
    case 4: rc = ncclProfiler_v4.finalize(ctx); break;
    case 5: rc = ncclProfiler_v5.finalize(ctx); break;
    case 6: rc = ncclProfiler_v6.finalize(ctx); break;
  }
  CHECK(rc == ncclSuccess);
  ctxs[k].used = 0;
  ctxs[k].ctx = NULL;
}

/* The host passes its names as strings (v2+; v1 codes): the function,
 * datatype, algorithm and protocol (v2/v3 also the communicator's name)
 * — ones NCCL prints, ones it does not, or NULL, never a random pointer. */
static void set_names(int version, uint64_t type, void* d, uint8_t k) {
  static const char* const names[] = {"AllReduce", "Broadcast", "Send", "Recv", "SendRecv",
                                      "NoSuchFunction", "", NULL};
  static const char* const types[] = {"ncclFloat32", "ncclInt8", "float16", "NoSuchType", "", NULL};
  static const char* const algos[] = {"RING", "TREE", "NVLS", "NoSuchAlgo", "", NULL};
  static const char* const protos[] = {"SIMPLE", "LL", "LL128", "NoSuchProto", "", NULL};
#define PICK(list, x) list[(x) % (sizeof list / sizeof list[0])]
  const char* name = PICK(names, k);
  const char* dtype = PICK(types, k / 8u);
  const char* algo = PICK(algos, k / 3u);
  const char* proto = PICK(protos, k / 5u);
#undef PICK
  const int coll = type == ncclProfileColl, p2p = type == ncclProfileP2p;
  if (version == 1 || !(coll || p2p)) return;
#define SET_NAMES(V)                                                     \
  do {                                                                   \
    ncclProfilerEventDescr_##V##_t* x = d;                               \
    if (coll) {                                                          \
      x->coll.func = name;                                               \
      x->coll.datatype = dtype;                                          \
      x->coll.algo = algo;                                               \
      x->coll.proto = proto;                                             \
    } else {                                                             \
      x->p2p.func = name;                                                \
      x->p2p.datatype = dtype;                                           \
    }                                                                    \
  } while (0)
#define SET_COMM_NAME(V)                                                 \
  do {                                                                   \
    ncclProfilerEventDescr_##V##_t* x = d;                               \
    if (coll) x->coll.name = "NCCL";                                     \
    else x->p2p.name = "NCCL";                                           \
  } while (0)
  switch (version) {
    case 2: SET_NAMES(v2); SET_COMM_NAME(v2); break;
    case 3: SET_NAMES(v3); SET_COMM_NAME(v3); break;
    case 4: SET_NAMES(v4); break;
    case 5: SET_NAMES(v5); break;
    default: SET_NAMES(v6); break;
  }
#undef SET_NAMES
#undef SET_COMM_NAME
}

/* A descriptor of any version: every version has type at 0 (1 byte up to
 * v4, 8 from v5), parentObj at 8, rank at 16, the proxy arms at 24. */
static void do_start(fz_input* in) {
  const int k = pick_ctx(in);
  const int version = ctxs[k].used ? ctxs[k].version : 1 + fz_u8(in) % 6;
  void* ctx = ctxs[k].used ? ctxs[k].ctx : NULL;
  union {
    ncclProfilerEventDescr_v1_t v1;
    ncclProfilerEventDescr_v6_t v6;
    unsigned char raw[512];
  } d;
  fill(in, d.raw, 88); /* up to the end of v6's proxyOp arm */
  memset(d.raw + 88, 0, sizeof d.raw - 88);
  const uint8_t sel = fz_u8(in);
  uint64_t type;
  switch (sel % 10) {
    case 0: case 1: case 2: type = ncclProfileProxyOp; break;
    case 3: case 4: case 5: type = ncclProfileProxyStep; break;
    case 6: type = ncclProfileGroup; break;
    case 7: type = ncclProfileColl; break; /* task handles, parents of ProxyOps */
    case 8: type = ncclProfileP2p; break;
    default: type = fz_bytes(in, 8); break;
  }
  void* parent = pick_parent(in);
  const int own_pid = (sel & 0x70) != 0x70;
  const int zero_rccl = sel & 0x80; /* NVIDIA NCCL 2.29+ zeroes RCCL's fields */
  if (version <= 4) {
    d.v1.type = (uint8_t)type;
    d.v1.parentObj = parent;
    if (own_pid) d.v1.proxyOp.pid = getpid();
    d.v1.proxyOp.nSteps %= 64;
  } else {
    d.v6.type = type;
    d.v6.parentObj = parent;
    if (own_pid) d.v6.proxyOp.pid = getpid();
    d.v6.proxyOp.nSteps %= 64;
    if (zero_rccl) {
      d.v6.proxyOp.commHash = 0;
      d.v6.proxyOp.opCount = 0;
      d.v6.proxyOp.rawProxyNsteps = 0;
    } else {
      d.v6.proxyOp.rawProxyNsteps %= 64;
    }
  }
  set_names(version, version <= 4 ? (uint8_t)type : type, &d, fz_u8(in)); /* the type it sees */
  void* h = (void*)0x1;
  void** hp = fz_u8(in) == 0xff ? NULL : &h;
  void* descr = fz_u8(in) == 0xfe ? NULL : &d;
  ncclResult_t rc = ncclInternalError;
  switch (version) {
    case 1: rc = ncclProfiler_v1.startEvent(ctx, hp, descr); break;
    case 2: rc = ncclProfiler_v2.startEvent(ctx, hp, descr); break;
    case 3: rc = ncclProfiler_v3.startEvent(ctx, hp, descr); break;
    case 4: rc = ncclProfiler_v4.startEvent(ctx, hp, descr); break;
    case 5: rc = ncclProfiler_v5.startEvent(ctx, hp, descr); break;
    case 6: rc = ncclProfiler_v6.startEvent(ctx, hp, descr); break;
  }
  CHECK(rc == ncclSuccess);
  if (!hp) return;
  CHECK(h != (void*)0x1); /* always written */
  if (h && h != pt_group_handle()) keep_handle(h, k);
  /* A ProxyOp of this process on a live context is dropped only when every
   * slot holds a registered op. */
  pt_trace* t = pt_ctx_trace(ctx);
  if (descr && type == ncclProfileProxyOp && own_pid && t && !h)
    CHECK(pt_trace_active_ops(t) == t->nslots);
}

static void do_record(fz_input* in) {
  const int version = 1 + fz_u8(in) % 6;
  void* h = pick_handle(in);
  const uint8_t sel = fz_u8(in);
  int state;
  switch (sel % 4) {
    case 0: state = ncclProfilerProxyDiagUpdate; break;
    case 1: state = 19; break;
    case 2: state = (int)(sel >> 2) % 24; break;
    default: state = (int)(int32_t)fz_bytes(in, 4); break;
  }
  union {
    ncclProfilerEventStateArgs_v1_t v1;
    ncclProfilerEventStateArgs_v6_t v6;
    unsigned char raw[64];
  } a;
  fill(in, a.raw, 24);
  if (state == ncclProfilerProxyDiagUpdate && (sel & 0x10)) a.v6.proxyDiag.counterKind %= 12;
  void* args = (sel & 0xe0) == 0xe0 ? NULL : &a;
  ncclResult_t rc = ncclInternalError;
  switch (version) {
    case 1: rc = ncclProfiler_v1.recordEventState(h, state, args); break;
    case 2: rc = ncclProfiler_v2.recordEventState(h, state, args); break;
    case 3: rc = ncclProfiler_v3.recordEventState(h, state, args); break;
    case 4: rc = ncclProfiler_v4.recordEventState(h, state, args); break;
    case 5: rc = ncclProfiler_v5.recordEventState(h, state, args); break;
    case 6: rc = ncclProfiler_v6.recordEventState(h, state, args); break;
  }
  CHECK(rc == ncclSuccess);
}

static void do_stop(fz_input* in) {
  const int version = 1 + fz_u8(in) % 6;
  void* h = pick_handle(in);
  ncclResult_t rc = ncclInternalError;
  switch (version) {
    case 1: rc = ncclProfiler_v1.stopEvent(h); break;
    case 2: rc = ncclProfiler_v2.stopEvent(h); break;
    case 3: rc = ncclProfiler_v3.stopEvent(h); break;
    case 4: rc = ncclProfiler_v4.stopEvent(h); break;
    case 5: rc = ncclProfiler_v5.stopEvent(h); break;
    case 6: rc = ncclProfiler_v6.stopEvent(h); break;
  }
  CHECK(rc == ncclSuccess);
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc, (void)argv;
  setenv("PROXYTRACE_MAX_OPS", "16", 1); /* small slabs: pressure comes fast */
  /* No dumper thread: a run is one thread, so a finding replays the same
   * (the dumper's concurrency is what test_stress and test_dumps are for). */
  setenv("PROXYTRACE_STALL_MS", "0", 1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fz_input in = {data, size};
  memset(ctxs, 0, sizeof ctxs);
  n_handles = 0;
  for (int steps = 0; in.n && steps < 4096; steps++) {
    const uint8_t op = fz_u8(&in);
    switch (op % 16) {
      case 0: case 1: do_init(&in, pick_ctx(&in)); break;
      case 2: case 3: case 4: case 5: do_start(&in); break;
      case 6: case 7: case 8: case 9: do_record(&in); break;
      case 10: case 11: case 12: do_stop(&in); break;
      case 13: case 14: do_dump(pick_ctx(&in)); break;
      default: do_finalize(pick_ctx(&in)); break;
    }
  }
  for (int k = 0; k < MAX_CTX; k++) {
    do_dump(k);
    do_finalize(k);
  }
  return 0;
}
