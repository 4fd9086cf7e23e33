/*
 * abi.c — the host's half of the profiler ABI, for every API version.
 *
 * The host describes an event once, in its own terms (sim_event, sim_args);
 * this file turns it into the descriptor and state arguments of the table
 * the plugin exports, exactly as the host would hand them over: natively
 * when the plugin speaks the host's version, otherwise through the host's
 * version adapter with its filters and quirks (spec nccl-profiler-abi.md §3):
 *
 *   native      descriptor zeroed, then filled (§2.2.10);
 *   v6 on v7    (2.31+) a zeroed v6 copy on the adapter's stack, v6's
 *               fields only: userTag, kernelVariant and isSymColl dropped,
 *               KernelPhase declined, state 31 dropped, zeroed args with one
 *               member copied, bit 15 cleared after init (NVIDIA/nccl
 *               889806836 src/plugin/profiler/profiler_v6.cc); the copy is
 *               overwritten after every call, as the next call's stack frame
 *               would (a plugin that keeps the pointer reads garbage);
 *   v5 on v6    un-zeroed v5 copy, CE types declined, states 19/23/24 with
 *               uninitialised args, 25-31 dropped;
 *   v4 on v5+   un-zeroed v4 copy, API/launch/CE types dropped, Coll/P2p
 *               parent := the legacy Group handle, p2p.nChannels left
 *               unset, 23/24+ dropped, 19 with uninitialised args;
 *   v1-v3 on v4+ zeroed, *eHandle preset to NULL, name NULL, commHash 0,
 *               codes for v1, only ctrl and step states 8-12 (zeroed args);
 *   v1-v2 on 2.24-2.26  converted descriptor, states passed through.
 *
 * "Unset" bytes are zero normally and SIM_GARBAGE under --strict, so a
 * plugin that reads them is caught. Under --strict the bytes after the end
 * of the host's state-args object are garbage too (a plugin built for
 * RCCL's 24-byte args that reads proxyDiag under NVIDIA reads them).
 */
#include <stdbool.h>
#include <string.h>

#include "internal.h"
#include "nccl/profiler_v1.h"
#include "nccl/profiler_v2.h"
#include "nccl/profiler_v3.h"
#include "nccl/profiler_v4.h"
#include "nccl/profiler_v5.h"
#include "nccl/profiler_v7.h"

enum {
  SIM_MODE_NATIVE = 0,
  SIM_MODE_V6_ON_V7,
  SIM_MODE_V5_ON_V6,
  SIM_MODE_V4_ON_NEW,
  SIM_MODE_OLD_ON_NEW,
  SIM_MODE_OLD_ON_OLD
};

typedef union {
  ncclProfilerEventDescr_v1_t v1;
  ncclProfilerEventDescr_v2_t v2;
  ncclProfilerEventDescr_v3_t v3;
  ncclProfilerEventDescr_v4_t v4;
  ncclProfilerEventDescr_v5_t v5;
  ncclProfilerEventDescr_v6_t v6;
  ncclProfilerEventDescr_v7_t v7;
  unsigned char b[136];
} any_descr;

typedef union {
  ncclProfilerEventStateArgs_v1_t v1;
  ncclProfilerEventStateArgs_v4_t v4;
  ncclProfilerEventStateArgs_v5_t v5;
  ncclProfilerEventStateArgs_v6_t v6;
  unsigned char b[32];
} any_args;

void sim_abi_bind(sim_plugin* p) {
  const sim_host* h = p->host;
  if (p->version == h->native) p->start_mode = SIM_MODE_NATIVE;
  else if (p->version == 6 && h->native == 7) p->start_mode = SIM_MODE_V6_ON_V7;
  else if (p->version == 5 && h->native >= 6) p->start_mode = SIM_MODE_V5_ON_V6;
  else if (p->version == 4) p->start_mode = SIM_MODE_V4_ON_NEW;
  else if (h->native >= 4) p->start_mode = SIM_MODE_OLD_ON_NEW;
  else p->start_mode = SIM_MODE_OLD_ON_OLD;
  p->record_mode = p->start_mode;
  /* Every version's table has the same six members in the same order. */
  const ncclProfiler_v6_t* t = p->table;
  p->start = (ncclResult_t(*)(void*, void**, void*))(void (*)(void))t->startEvent;
  p->stop = t->stopEvent;
  p->record = (ncclResult_t(*)(void*, int, void*))(void (*)(void))t->recordEventState;
  p->finalize = t->finalize;
}

ncclResult_t sim_abi_init(sim_plugin* p, void** ctx, uint64_t comm_hash, const char* comm_name,
                          int nnodes, int nranks, int rank, ncclDebugLogger_t logfn) {
  int* mask = (int*)&p->mask;
  ncclResult_t r;
  switch (p->version) {
    case 1: case 2: case 3: {
      /* The v1-v3 init knows no communicator; adapters discard it all. */
      const ncclProfiler_v1_t* t = p->table;
      r = t->init(ctx, mask);
      /* 2.24-2.25 call a v1 plugin through an adapter that drops the
       * result (v2.24.3-1 src/misc/profiler.cc:113-120): the profiler
       * stays on, with whatever context init left. */
      if (p->version == 1 && p->host->v1_init_ignored) r = ncclSuccess;
      break;
    }
    case 4: {
      const ncclProfiler_v4_t* t = p->table;
      r = t->init(ctx, mask, comm_name, comm_hash, nnodes, nranks, rank, logfn);
      break;
    }
    case 5: {
      const ncclProfiler_v5_t* t = p->table;
      r = t->init(ctx, comm_hash, mask, comm_name, nnodes, nranks, rank, logfn);
      break;
    }
    default: {
      const ncclProfiler_v6_t* t = p->table;
      r = t->init(ctx, comm_hash, mask, comm_name, nnodes, nranks, rank, logfn);
      break;
    }
  }
  const sim_host* h = p->host;
  if (r == ncclSuccess && p->version < h->native) {
    /* Adapters strip what the plugin's version cannot receive: the CE bits
     * (NVIDIA v5 adapter), KernelPhase (v6 adapter of 2.31+) and, in RCCL,
     * ProxyDiag below v6. */
    int strip = 0;
    if (h->native >= 6 && p->version < 6) strip |= ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch;
    if (h->native >= 7) strip |= ncclProfileKernelPhase;
    if (h->rccl && p->version < 6) strip |= h->diag_bit;
    atomic_fetch_and_explicit(&p->mask, ~strip, memory_order_relaxed);
  }
  /* 2.31+: a mask RAS set job-wide is re-applied after every init
   * (v2.31 src/plugin/profiler.cc ncclProfilerPluginInit). */
  const int ras = atomic_load_explicit(&p->ras_mask, memory_order_relaxed);
  if (h->ras && ras >= 0) atomic_store_explicit(&p->mask, ras, memory_order_relaxed);
  return r;
}

/* --- descriptor filling -------------------------------------------------- */

static uint8_t func_code(const char* f) {
  static const char* names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                "AllReduce", "SendRecv", "Send", "Recv"};
  for (uint8_t i = 0; f && i < 8; i++)
    if (!strcmp(f, names[i])) return i;
  return 6; /* unknown func -> Send */
}
static uint8_t dtype_code(const char* d) {
  static const char* names[] = {"ncclInt8",   "ncclUint8",  "ncclInt32",   "ncclUint32",
                                "ncclInt64",  "ncclUint64", "ncclFloat16", "ncclFloat32",
                                "ncclFloat64", "ncclBfloat16"};
  for (uint8_t i = 0; d && i < 10; i++)
    if (!strcmp(d, names[i])) return i;
  return 8; /* unknown -> Float64 */
}
static uint8_t algo_code(const char* a) {
  static const char* names[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                "NVLS", "NVLS_TREE", "PAT"};
  for (uint8_t i = 0; a && i < 7; i++)
    if (!strcmp(a, names[i])) return i;
  return 6; /* unknown -> PAT */
}
static uint8_t proto_code(const char* p) {
  static const char* names[] = {"LL", "LL128", "SIMPLE"};
  for (uint8_t i = 0; p && i < 3; i++)
    if (!strcmp(p, names[i])) return i;
  return 2; /* unknown -> SIMPLE */
}

/* `adapted`: under a v4+ core (name/commHash/trafficBytes/op cleared). */
/* The proxyOp arm has the same fields at the same offsets in every version
 * (spec nccl-profiler-abi.md §2.2.10); only the descriptor's C type differs. */
#define FILL_PROXY_OP(d, e)                         \
  do {                                              \
    (d)->proxyOp.pid = (e)->op.pid;                 \
    (d)->proxyOp.channelId = (uint8_t)(e)->op.ch;   \
    (d)->proxyOp.peer = (e)->op.peer;               \
    (d)->proxyOp.nSteps = (e)->op.nsteps;           \
    (d)->proxyOp.chunkSize = (e)->op.chunk;         \
    (d)->proxyOp.isSend = (e)->op.is_send;          \
  } while (0)

static void fill_v1(ncclProfilerEventDescr_v1_t* d, const sim_event* e, int adapted) {
  d->type = (uint8_t)e->type;
  d->parentObj = e->parent;
  d->rank = e->rank;
  switch (e->type) {
    case ncclProfileColl:
      d->parentObj = e->coll.group;
      d->coll.name = adapted ? NULL : e->coll.name;
      d->coll.commHash = adapted ? 0 : e->coll.comm_hash;
      d->coll.seqNumber = e->coll.seq;
      d->coll.func = func_code(e->coll.func);
      d->coll.sendBuff = e->coll.sbuf;
      d->coll.recvBuff = e->coll.rbuf;
      d->coll.count = e->coll.count;
      d->coll.root = e->coll.root;
      d->coll.datatype = dtype_code(e->coll.dtype);
      d->coll.op = 0; /* sum */
      d->coll.trafficBytes = adapted ? 0 : e->coll.traffic;
      d->coll.nMaxChannels = e->coll.nch;
      d->coll.nWarps = e->coll.nwarps;
      d->coll.algo = algo_code(e->coll.algo);
      d->coll.proto = proto_code(e->coll.proto);
      d->coll.isCollnet = 0;
      d->coll.isNvls = 0;
      break;
    case ncclProfileP2p:
      d->parentObj = e->p2p.group;
      d->p2p.name = adapted ? NULL : e->p2p.name;
      d->p2p.commHash = adapted ? 0 : e->p2p.comm_hash;
      d->p2p.func = func_code(e->p2p.func);
      d->p2p.buff = e->p2p.buff;
      d->p2p.datatype = dtype_code(e->p2p.dtype);
      d->p2p.count = e->p2p.count;
      d->p2p.peer = e->p2p.peer;
      break;
    case ncclProfileProxyOp:
      FILL_PROXY_OP(d, e);
      break;
    case ncclProfileProxyStep: d->proxyStep.step = e->step.step; break;
    default: break;
  }
}

/* v2 and v3 coll/p2p arms: strings for func/datatype/algo/proto, and the
 * name/commHash that the v1-v3 adapter of a v4+ core clears. */
#define FILL_COLL_V2_V3(d, e, adapted)                                      \
  do {                                                                      \
    (d)->parentObj = (e)->coll.group;                                       \
    (d)->coll.name = (adapted) ? NULL : (e)->coll.name;                     \
    (d)->coll.commHash = (adapted) ? 0 : (e)->coll.comm_hash;               \
    (d)->coll.seqNumber = (e)->coll.seq;                                    \
    (d)->coll.func = (e)->coll.func;                                        \
    (d)->coll.sendBuff = (e)->coll.sbuf;                                    \
    (d)->coll.recvBuff = (e)->coll.rbuf;                                    \
    (d)->coll.count = (e)->coll.count;                                      \
    (d)->coll.root = (e)->coll.root;                                        \
    (d)->coll.datatype = (e)->coll.dtype;                                   \
    (d)->coll.nMaxChannels = (e)->coll.nch;                                 \
    (d)->coll.nWarps = (e)->coll.nwarps;                                    \
    (d)->coll.algo = (e)->coll.algo;                                        \
    (d)->coll.proto = (e)->coll.proto;                                      \
  } while (0)

#define FILL_P2P_V2_V3(d, e, adapted)                                       \
  do {                                                                      \
    (d)->parentObj = (e)->p2p.group;                                        \
    (d)->p2p.name = (adapted) ? NULL : (e)->p2p.name;                       \
    (d)->p2p.commHash = (adapted) ? 0 : (e)->p2p.comm_hash;                 \
    (d)->p2p.func = (e)->p2p.func;                                          \
    (d)->p2p.buff = (e)->p2p.buff;                                          \
    (d)->p2p.datatype = (e)->p2p.dtype;                                     \
    (d)->p2p.count = (e)->p2p.count;                                        \
    (d)->p2p.peer = (e)->p2p.peer;                                          \
  } while (0)

static void fill_v2(ncclProfilerEventDescr_v2_t* d, const sim_event* e, int adapted) {
  d->type = (uint8_t)e->type;
  d->parentObj = e->parent;
  d->rank = e->rank;
  switch (e->type) {
    case ncclProfileColl:
      FILL_COLL_V2_V3(d, e, adapted);
      d->coll.trafficBytes = adapted ? 0 : e->coll.traffic;
      break;
    case ncclProfileP2p:
      FILL_P2P_V2_V3(d, e, adapted);
      break;
    case ncclProfileProxyOp:
      FILL_PROXY_OP(d, e);
      break;
    case ncclProfileProxyStep: d->proxyStep.step = e->step.step; break;
    default: break;
  }
}

static void fill_v3(ncclProfilerEventDescr_v3_t* d, const sim_event* e, int adapted) {
  d->type = (uint8_t)e->type;
  d->parentObj = e->parent;
  d->rank = e->rank;
  switch (e->type) {
    case ncclProfileColl:
      FILL_COLL_V2_V3(d, e, adapted);
      break;
    case ncclProfileP2p:
      FILL_P2P_V2_V3(d, e, adapted);
      break;
    case ncclProfileProxyOp:
      FILL_PROXY_OP(d, e);
      break;
    case ncclProfileProxyStep: d->proxyStep.step = e->step.step; break;
    case ncclProfileKernelCh: d->kernelCh.channelId = (uint8_t)e->kch.ch; break;
    default: break;
  }
}

/* v4 and v5 coll/p2p arms (v5 adds parentGroup) and the v4+ kernelCh arm. */
#define FILL_COLL_V4_V5(d, e)                  \
  do {                                         \
    (d)->coll.seqNumber = (e)->coll.seq;       \
    (d)->coll.func = (e)->coll.func;           \
    (d)->coll.sendBuff = (e)->coll.sbuf;       \
    (d)->coll.recvBuff = (e)->coll.rbuf;       \
    (d)->coll.count = (e)->coll.count;         \
    (d)->coll.root = (e)->coll.root;           \
    (d)->coll.datatype = (e)->coll.dtype;      \
    (d)->coll.nChannels = (e)->coll.nch;       \
    (d)->coll.nWarps = (e)->coll.nwarps;       \
    (d)->coll.algo = (e)->coll.algo;           \
    (d)->coll.proto = (e)->coll.proto;         \
  } while (0)

#define FILL_P2P_V4_V5(d, e)                   \
  do {                                         \
    (d)->p2p.func = (e)->p2p.func;             \
    (d)->p2p.buff = (e)->p2p.buff;             \
    (d)->p2p.datatype = (e)->p2p.dtype;        \
    (d)->p2p.count = (e)->p2p.count;           \
    (d)->p2p.peer = (e)->p2p.peer;             \
  } while (0)

#define FILL_KERNEL_CH(d, e)                             \
  do {                                                   \
    (d)->kernelCh.channelId = (uint8_t)(e)->kch.ch;      \
    (d)->kernelCh.pTimer = (e)->kch.ptimer;              \
  } while (0)

/* `adapter`: the v4 adapter on a v5+ core (parent := Group handle,
 * p2p.nChannels not copied). */
static void fill_v4(ncclProfilerEventDescr_v4_t* d, const sim_event* e, int adapter) {
  d->type = (uint8_t)e->type;
  d->parentObj = e->parent;
  d->rank = e->rank;
  switch (e->type) {
    case ncclProfileColl:
      if (adapter) d->parentObj = e->coll.group;
      FILL_COLL_V4_V5(d, e);
      break;
    case ncclProfileP2p:
      if (adapter) d->parentObj = e->p2p.group;
      FILL_P2P_V4_V5(d, e);
      if (!adapter) d->p2p.nChannels = e->p2p.nch;
      break;
    case ncclProfileProxyOp:
      FILL_PROXY_OP(d, e);
      break;
    case ncclProfileProxyStep: d->proxyStep.step = e->step.step; break;
    case ncclProfileKernelCh:
      FILL_KERNEL_CH(d, e);
      break;
    default: break;
  }
}

static void fill_v5(ncclProfilerEventDescr_v5_t* d, const sim_event* e) {
  d->type = e->type;
  d->parentObj = e->parent;
  d->rank = e->rank;
  switch (e->type) {
    case ncclProfileGroupApi:
      d->groupApi.graphCaptured = false;
      d->groupApi.groupDepth = e->group_api.depth;
      break;
    case ncclProfileCollApi:
      d->collApi.func = e->api.func;
      d->collApi.count = e->api.count;
      d->collApi.datatype = e->api.dtype;
      d->collApi.root = e->api.root;
      d->collApi.stream = e->api.stream;
      d->collApi.graphCaptured = false;
      break;
    case ncclProfileP2pApi:
      d->p2pApi.func = e->api.func;
      d->p2pApi.count = e->api.count;
      d->p2pApi.datatype = e->api.dtype;
      d->p2pApi.stream = e->api.stream;
      d->p2pApi.graphCaptured = false;
      break;
    case ncclProfileKernelLaunch: d->kernelLaunch.stream = e->launch.stream; break;
    case ncclProfileColl:
      FILL_COLL_V4_V5(d, e);
      d->coll.parentGroup = e->coll.group;
      break;
    case ncclProfileP2p:
      FILL_P2P_V4_V5(d, e);
      d->p2p.nChannels = e->p2p.nch;
      d->p2p.parentGroup = e->p2p.group;
      break;
    case ncclProfileProxyOp:
      FILL_PROXY_OP(d, e);
      break;
    case ncclProfileProxyStep: d->proxyStep.step = e->step.step; break;
    case ncclProfileKernelCh:
      FILL_KERNEL_CH(d, e);
      break;
    default: break;
  }
}

/* v6: the v5 arms at the same offsets, plus RCCL's proxyOp fields. */
static void fill_v6(ncclProfilerEventDescr_v6_t* d, const sim_event* e) {
  _Static_assert(sizeof(ncclProfilerEventDescr_v5_t) == sizeof(ncclProfilerEventDescr_v6_t),
                 "v5 is a layout prefix of v6");
  fill_v5((ncclProfilerEventDescr_v5_t*)(void*)d, e);
  if (e->type == ncclProfileProxyOp && e->op.diag) {
    d->proxyOp.commHash = e->op.comm_hash;
    d->proxyOp.opCount = e->op.op_count;
    d->proxyOp.traceFuncIdx = e->op.func_idx;
    d->proxyOp.traceProtocol = e->op.proto;
    d->proxyOp.tracePattern = e->op.pattern;
    d->proxyOp.traceTotalBytes = e->op.total_bytes;
    d->proxyOp.proxyNbytes = e->op.nbytes;
    d->proxyOp.rawProxyNsteps = e->op.raw;
  }
}

/* v7: v6's arms at v6's offsets, and what v7 adds. */
static void fill_v7(ncclProfilerEventDescr_v7_t* d, const sim_event* e) {
  _Static_assert(offsetof(ncclProfilerEventDescr_v7_t, coll.parentGroup) ==
                     offsetof(ncclProfilerEventDescr_v6_t, coll.parentGroup),
                 "v6's arms are a layout prefix of v7's");
  fill_v6((ncclProfilerEventDescr_v6_t*)(void*)d, e);
  switch (e->type) {
    case ncclProfileCollApi: d->collApi.userTag = e->api.user_tag; break;
    case ncclProfileP2pApi: d->p2pApi.userTag = e->api.user_tag; break;
    case ncclProfileColl:
      d->coll.kernelVariant = "ring_simple";
      d->coll.isSymColl = false;
      d->coll.userTag = e->coll.user_tag;
      break;
    case ncclProfileP2p: d->p2p.userTag = e->p2p.user_tag; break;
    case ncclProfileKernelPhase:
      d->kernelPhase.channelId = (uint8_t)e->kphase.ch;
      d->kernelPhase.phaseId = (uint8_t)e->kphase.phase;
      d->kernelPhase.phaseName = e->kphase.phase == 0   ? "initial_sync"
                                 : e->kphase.phase == 1 ? "compute"
                                                        : "final_sync";
      d->kernelPhase.pTimer = e->kphase.ptimer;
      break;
    default: break;
  }
}

static const uint64_t kTypesV1 = ncclProfileGroup | ncclProfileColl | ncclProfileP2p |
                                 ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileProxyCtrl;
static const uint64_t kTypesV3 = kTypesV1 | ncclProfileKernelCh | ncclProfileNetPlugin;

int sim_abi_forwards_type(const sim_plugin* p, uint64_t type) {
  switch (p->start_mode) {
    case SIM_MODE_NATIVE: return 1;
    case SIM_MODE_V6_ON_V7: return type != ncclProfileKernelPhase;
    case SIM_MODE_V5_ON_V6: return type < ncclProfileCeColl;
    case SIM_MODE_V4_ON_NEW: return (type & kTypesV3) != 0;
    default: return (type & (p->version >= 3 ? kTypesV3 : kTypesV1)) != 0;
  }
}

static size_t descr_size(int version) {
  switch (version) {
    case 1: return sizeof(ncclProfilerEventDescr_v1_t);
    case 2: return sizeof(ncclProfilerEventDescr_v2_t);
    case 3: return sizeof(ncclProfilerEventDescr_v3_t);
    case 4: return sizeof(ncclProfilerEventDescr_v4_t);
    case 5: return sizeof(ncclProfilerEventDescr_v5_t);
    case 6: return sizeof(ncclProfilerEventDescr_v6_t);
    default: return sizeof(ncclProfilerEventDescr_v7_t);
  }
}

/* A handle value a plugin will never return: tells whether it wrote one. */
static char unwritten_mark;

void* sim_abi_start(sim_plugin* p, void* ctx, const sim_event* e, uint64_t* calls) {
  if (!sim_abi_forwards_type(p, e->type)) return NULL;
  any_descr d;
  int mode = p->start_mode;
  /* Un-zeroed copies are built by the v4/v5 adapters only. */
  int unzeroed = (mode == SIM_MODE_V5_ON_V6 || mode == SIM_MODE_V4_ON_NEW);
  memset(&d, unzeroed && p->strict ? SIM_GARBAGE : 0, descr_size(p->version));
  switch (p->version) {
    case 1: fill_v1(&d.v1, e, mode == SIM_MODE_OLD_ON_NEW); break;
    case 2: fill_v2(&d.v2, e, mode == SIM_MODE_OLD_ON_NEW); break;
    case 3: fill_v3(&d.v3, e, mode == SIM_MODE_OLD_ON_NEW); break;
    case 4: fill_v4(&d.v4, e, mode == SIM_MODE_V4_ON_NEW); break;
    case 5: fill_v5(&d.v5, e); break;
    case 6: fill_v6(&d.v6, e); break;
    default: fill_v7(&d.v7, e); break;
  }
  /* Pre-v4 cores (and v4+ cores, for v1-v3 adapters) give NULL; otherwise
   * the slot is the host's own, which --strict marks to see whether the
   * plugin writes it as the contract asks (nccl-profiler-abi.md §2.10). */
  void* h = (p->strict && mode != SIM_MODE_OLD_ON_NEW) ? (void*)&unwritten_mark : NULL;
  p->start(ctx, &h, &d);
  (*calls)++;
  /* The descriptor was on the host's stack (2.31's v6 adapter: its own
   * copy): gone once the call returns. Poisoned, so a plugin that kept a
   * pointer into it reads garbage, which the tests can see. */
  if (p->strict || mode == SIM_MODE_V6_ON_V7) memset(&d, SIM_GARBAGE, sizeof d);
  if (h == (void*)&unwritten_mark) {
    atomic_fetch_add_explicit(&p->unwritten, 1, memory_order_relaxed);
    h = NULL;
  }
  return h;
}

int sim_abi_forwards_state(const sim_plugin* p, int s) {
  switch (p->record_mode) {
    case SIM_MODE_NATIVE:
    case SIM_MODE_OLD_ON_OLD: return 1;
    case SIM_MODE_V6_ON_V7: return s != ncclProfilerKernelPhaseStop;
    case SIM_MODE_V5_ON_V6:
      return (s >= 8 && s <= 24) || s == ncclProfilerProxyOpInProgress_v4;
    case SIM_MODE_V4_ON_NEW: return s >= 8 && s <= 22;
    default: return s >= 8 && s <= 18;
  }
}

/* The host's args object size, natively. */
static size_t args_size(const sim_plugin* p) {
  if (p->host->native <= 3) return sizeof(ncclProfilerEventStateArgs_v1_t);
  if (p->host->native >= 6 && p->host->rccl) return sizeof(ncclProfilerEventStateArgs_v6_t);
  return sizeof(ncclProfilerEventStateArgs_v5_t);
}

void sim_abi_record(sim_plugin* p, void* h, int s, const sim_args* a, uint64_t* calls) {
  if (!sim_abi_forwards_state(p, s)) return;
  any_args buf;
  void* argp = &buf;
  unsigned char fill = p->strict ? SIM_GARBAGE : 0;
  switch (p->record_mode) {
    case SIM_MODE_NATIVE:
    case SIM_MODE_OLD_ON_OLD: {
      if (a->kind == SIM_ARGS_NULL) {
        argp = NULL;
        break;
      }
      size_t n = args_size(p);
      memset(buf.b, 0, n);
      memset(buf.b + n, fill, sizeof buf.b - n);
      switch (a->kind) {
        case SIM_ARGS_OP:
          buf.v1.proxyOp.transSize = a->trans_size;
          buf.v1.proxyOp.steps = a->steps;
          break;
        case SIM_ARGS_STEP:
          if (p->host->native <= 3) buf.v1.proxyOp.transSize = a->trans_size;
          else buf.v4.proxyStep.transSize = a->trans_size;
          break;
        case SIM_ARGS_CTRL: buf.v4.proxyCtrl.appendedProxyOps = a->appended; break;
        case SIM_ARGS_KCH: buf.v4.kernelCh.pTimer = a->ptimer; break;
        case SIM_ARGS_DIAG:
          buf.v6.proxyDiag.counterKind = a->diag_kind;
          buf.v6.proxyDiag.flags = a->diag_flags;
          buf.v6.proxyDiag.value = a->diag_value;
          break;
        default: break;
      }
      break;
    }
    case SIM_MODE_V6_ON_V7:
      /* The adapter's own args, zeroed ({}) and passed even where the
       * host gave none, with the member of the state copied; RCCL's layer
       * taken to copy proxyDiag too (inferred). */
      memset(buf.b, 0, sizeof(ncclProfilerEventStateArgs_v6_t));
      memset(buf.b + sizeof(ncclProfilerEventStateArgs_v6_t), fill,
             sizeof buf.b - sizeof(ncclProfilerEventStateArgs_v6_t));
      if (a->kind == SIM_ARGS_STEP) buf.v4.proxyStep.transSize = a->trans_size;
      else if (a->kind == SIM_ARGS_CTRL) buf.v4.proxyCtrl.appendedProxyOps = a->appended;
      else if (a->kind == SIM_ARGS_KCH) buf.v4.kernelCh.pTimer = a->ptimer;
      else if (a->kind == SIM_ARGS_DIAG && p->host->rccl) {
        buf.v6.proxyDiag.counterKind = a->diag_kind;
        buf.v6.proxyDiag.flags = a->diag_flags;
        buf.v6.proxyDiag.value = a->diag_value;
      }
      break;
    case SIM_MODE_V5_ON_V6:
    case SIM_MODE_V4_ON_NEW:
      /* The adapter's own local args: uninitialised, one member copied. */
      memset(buf.b, fill, sizeof buf.b);
      if ((s >= 8 && s <= 12) || s == ncclProfilerProxyStepSendPeerWait_v4) {
        buf.v4.proxyStep.transSize = a->kind == SIM_ARGS_STEP ? a->trans_size : 0;
      } else if (s >= 13 && s <= 18) {
        buf.v4.proxyCtrl.appendedProxyOps = a->kind == SIM_ARGS_CTRL ? a->appended : 0;
      } else if (s == ncclProfilerKernelChStop) {
        buf.v4.kernelCh.pTimer = a->ptimer;
      } else if (s == ncclProfilerNetPluginUpdate) {
        buf.v4.netPlugin.data = NULL;
      }
      break;
    default: /* v1-v3 on a v4+ core: zeroed args, appendedProxyOps only */
      memset(buf.b, 0, sizeof(ncclProfilerEventStateArgs_v1_t));
      memset(buf.b + sizeof(ncclProfilerEventStateArgs_v1_t), fill,
             sizeof buf.b - sizeof(ncclProfilerEventStateArgs_v1_t));
      if (s >= 13 && s <= 18 && a->kind == SIM_ARGS_CTRL)
        buf.v1.proxyCtrl.appendedProxyOps = a->appended;
      break;
  }
  p->record(h, s, argp);
  (*calls)++;
  if (p->strict || p->record_mode == SIM_MODE_V6_ON_V7) memset(&buf, SIM_GARBAGE, sizeof buf);
}

void sim_abi_stop(sim_plugin* p, void* h, uint64_t* calls) {
  p->stop(h);
  (*calls)++;
}
