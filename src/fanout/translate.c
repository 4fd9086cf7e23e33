/*
 * translate.c — descriptors and state arguments between profiler API
 * versions, for the fan-out.
 *
 * Widening (host -> canonical) copies every field the host's version has.
 * Narrowing (canonical -> child) does what the host's own adapter would do
 * for a plugin of the child's version (spec nccl-profiler-abi.md §3;
 * NVIDIA/nccl src/plugin/profiler/profiler_v1.cc … profiler_v6.cc of
 * v2.26.2-1 … v2.30.7-1, and profiler_v6.cc of 2.31's 889806836):
 *
 *   v7 child on v7, vN on vN   the host's descriptor and args as they are;
 *   v6 on v7                   v6's fields only, KernelPhase declined,
 *                              state 31 dropped, zeroed args, one member;
 *   v5 on v6+                  CE events declined, states 8-24 and 19 with
 *                              one args member, 25 and up dropped;
 *   v4 on v5+                  API/launch/CE declined, Coll/P2p parent :=
 *                              the Group handle, p2p.nChannels not copied,
 *                              states 8-22;
 *   v1-v3 on v4+               Group/Coll/P2p/ProxyOp/ProxyStep/ProxyCtrl
 *                              (+KernelCh, NetPlugin for v3), parent :=
 *                              Group, name NULL, commHash 0, v1 codes,
 *                              states 8-18 with zeroed args (only
 *                              appendedProxyOps copied);
 *   v1-v2 on 2.24-2.26         converted descriptor, states passed.
 *
 * Where an adapter leaves bytes uninitialised, the fan-out writes zeros.
 */
#include <string.h>

#include "fanout/fanout.h"

/* ---- widening ----------------------------------------------------------- */

/* v1-v3 coll/p2p arms share names; v1 has codes where v2+ have strings. */
#define WIDEN_OLD_COLL(e, s)                        \
  do {                                              \
    (e)->name = (s)->coll.name;                     \
    (e)->commHash = (s)->coll.commHash;             \
    (e)->d.coll.seqNumber = (s)->coll.seqNumber;    \
    (e)->d.coll.sendBuff = (s)->coll.sendBuff;      \
    (e)->d.coll.recvBuff = (s)->coll.recvBuff;      \
    (e)->d.coll.count = (s)->coll.count;            \
    (e)->d.coll.root = (s)->coll.root;              \
    (e)->d.coll.nChannels = (s)->coll.nMaxChannels; \
    (e)->d.coll.nWarps = (s)->coll.nWarps;          \
    (e)->d.coll.parentGroup = (s)->parentObj;       \
  } while (0)
#define WIDEN_OLD_P2P(e, s)                    \
  do {                                         \
    (e)->name = (s)->p2p.name;                 \
    (e)->commHash = (s)->p2p.commHash;         \
    (e)->d.p2p.buff = (s)->p2p.buff;           \
    (e)->d.p2p.count = (s)->p2p.count;         \
    (e)->d.p2p.peer = (s)->p2p.peer;           \
    (e)->d.p2p.parentGroup = (s)->parentObj;   \
  } while (0)
#define COPY_PROXY_OP(d, s)                    \
  do {                                         \
    (d)->proxyOp.pid = (s)->proxyOp.pid;       \
    (d)->proxyOp.channelId = (s)->proxyOp.channelId; \
    (d)->proxyOp.peer = (s)->proxyOp.peer;     \
    (d)->proxyOp.nSteps = (s)->proxyOp.nSteps; \
    (d)->proxyOp.chunkSize = (s)->proxyOp.chunkSize; \
    (d)->proxyOp.isSend = (s)->proxyOp.isSend; \
  } while (0)

/* Arms whose fields have the same names in v4 and v7 (either direction). */
#define COPY_COLL_V4(d, s)                     \
  do {                                         \
    (d)->coll.seqNumber = (s)->coll.seqNumber; \
    (d)->coll.func = (s)->coll.func;           \
    (d)->coll.sendBuff = (s)->coll.sendBuff;   \
    (d)->coll.recvBuff = (s)->coll.recvBuff;   \
    (d)->coll.count = (s)->coll.count;         \
    (d)->coll.root = (s)->coll.root;           \
    (d)->coll.datatype = (s)->coll.datatype;   \
    (d)->coll.nChannels = (s)->coll.nChannels; \
    (d)->coll.nWarps = (s)->coll.nWarps;       \
    (d)->coll.algo = (s)->coll.algo;           \
    (d)->coll.proto = (s)->coll.proto;         \
  } while (0)
#define COPY_P2P_V4(d, s)                      \
  do {                                         \
    (d)->p2p.func = (s)->p2p.func;             \
    (d)->p2p.buff = (s)->p2p.buff;             \
    (d)->p2p.datatype = (s)->p2p.datatype;     \
    (d)->p2p.count = (s)->p2p.count;           \
    (d)->p2p.peer = (s)->p2p.peer;             \
  } while (0)
/* The v2 and v3 coll arms from the canonical event (v2 adds trafficBytes). */
#define NARROW_COLL_V23(c, s, e)                    \
  do {                                              \
    (c)->coll.name = (e)->name;                     \
    (c)->coll.commHash = (e)->commHash;             \
    (c)->coll.seqNumber = (s)->coll.seqNumber;      \
    (c)->coll.func = (s)->coll.func;                \
    (c)->coll.sendBuff = (s)->coll.sendBuff;        \
    (c)->coll.recvBuff = (s)->coll.recvBuff;        \
    (c)->coll.count = (s)->coll.count;              \
    (c)->coll.root = (s)->coll.root;                \
    (c)->coll.datatype = (s)->coll.datatype;        \
    (c)->coll.nMaxChannels = (s)->coll.nChannels;   \
    (c)->coll.nWarps = (s)->coll.nWarps;            \
    (c)->coll.algo = (s)->coll.algo;                \
    (c)->coll.proto = (s)->coll.proto;              \
  } while (0)

/* Codes of a v1 descriptor (spec nccl-profiler-abi.md §2.2.8), the names
 * v2+ use for them, and the adapter's fallback for a name it has no code
 * for (NVIDIA/nccl src/plugin/profiler/profiler_v1.cc). */
static const char* const kFunc[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                    "AllReduce", "SendRecv", "Send", "Recv"};
static const char* const kType[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",  "ncclUint32",
                                    "ncclInt64",   "ncclUint64",  "ncclFloat16", "ncclFloat32",
                                    "ncclFloat64", "ncclBfloat16"};
static const char* const kAlgo[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                    "NVLS", "NVLS_TREE", "PAT"};
static const char* const kProto[] = {"LL", "LL128", "SIMPLE"};
#define NAMES(a) a, sizeof a / sizeof a[0]

static uint8_t code_of(const char* s, const char* const* names, size_t n, uint8_t fallback) {
  for (size_t i = 0; s && i < n; i++)
    if (!strcmp(s, names[i])) return (uint8_t)i;
  return fallback;
}

void fo_widen(fo_event* e, int host, const void* descr) {
  memset(e, 0, sizeof *e);
  if (host >= 5) {
    /* v5 and v6 are layout prefixes of v7 (the static_asserts of
     * nccl/profiler_v6.h and _v7.h pin the offsets). */
    memcpy(&e->d, descr, host >= 7 ? sizeof(ncclProfilerEventDescr_v7_t)
                                   : sizeof(ncclProfilerEventDescr_v6_t));
    if (host < 7 && e->d.type == ncclProfileCeColl) e->d.ceColl.userTag = 0;
    return;
  }
  /* v1-v4: a one-byte type, then the same header. */
  const ncclProfilerEventDescr_v4_t* h = descr;
  e->d.type = h->type;
  e->d.parentObj = h->parentObj;
  e->d.rank = h->rank;
  if (h->type == ncclProfileProxyOp) {
    COPY_PROXY_OP(&e->d, h);
    return;
  }
  if (h->type == ncclProfileProxyStep) {
    e->d.proxyStep.step = h->proxyStep.step;
    return;
  }
  if (host == 4) {
    switch (h->type) {
      case ncclProfileColl:
        COPY_COLL_V4(&e->d, h);
        e->d.coll.parentGroup = h->parentObj;
        break;
      case ncclProfileP2p:
        COPY_P2P_V4(&e->d, h);
        e->d.p2p.nChannels = h->p2p.nChannels;
        e->d.p2p.parentGroup = h->parentObj;
        break;
      case ncclProfileKernelCh:
        e->d.kernelCh.channelId = h->kernelCh.channelId;
        e->d.kernelCh.pTimer = h->kernelCh.pTimer;
        break;
      case ncclProfileNetPlugin:
        e->d.netPlugin.id = h->netPlugin.id;
        e->d.netPlugin.data = h->netPlugin.data;
        break;
      default: break;
    }
    return;
  }
  if (host == 1) {
    const ncclProfilerEventDescr_v1_t* s = descr;
    if (s->type == ncclProfileColl) {
      WIDEN_OLD_COLL(e, s);
      e->d.coll.func = s->coll.func < 8 ? kFunc[s->coll.func] : "Invalid";
      e->d.coll.datatype = s->coll.datatype < 10 ? kType[s->coll.datatype] : "Unknown";
      e->d.coll.algo = s->coll.algo < 7 ? kAlgo[s->coll.algo] : "Unknown";
      e->d.coll.proto = s->coll.proto < 3 ? kProto[s->coll.proto] : "Unknown";
      e->trafficBytes = s->coll.trafficBytes;
    } else if (s->type == ncclProfileP2p) {
      WIDEN_OLD_P2P(e, s);
      e->d.p2p.func = s->p2p.func < 8 ? kFunc[s->p2p.func] : "Invalid";
      e->d.p2p.datatype = s->p2p.datatype < 10 ? kType[s->p2p.datatype] : "Unknown";
    }
    return;
  }
  /* v2 and v3: the same strings; v2 also has trafficBytes. */
  const ncclProfilerEventDescr_v3_t* s = descr;
  const ncclProfilerEventDescr_v2_t* s2 = descr;
  if (s->type == ncclProfileColl) {
    if (host == 2) {
      WIDEN_OLD_COLL(e, s2);
      e->d.coll.func = s2->coll.func;
      e->d.coll.datatype = s2->coll.datatype;
      e->d.coll.algo = s2->coll.algo;
      e->d.coll.proto = s2->coll.proto;
      e->trafficBytes = s2->coll.trafficBytes;
    } else {
      WIDEN_OLD_COLL(e, s);
      e->d.coll.func = s->coll.func;
      e->d.coll.datatype = s->coll.datatype;
      e->d.coll.algo = s->coll.algo;
      e->d.coll.proto = s->coll.proto;
    }
  } else if (s->type == ncclProfileP2p) {
    WIDEN_OLD_P2P(e, s);
    e->d.p2p.func = s->p2p.func;
    e->d.p2p.datatype = s->p2p.datatype;
  } else if (host == 3 && s->type == ncclProfileKernelCh) {
    e->d.kernelCh.channelId = s->kernelCh.channelId;
  } else if (host == 3 && s->type == ncclProfileNetPlugin) {
    e->d.netPlugin.id = s->netPlugin.id;
    e->d.netPlugin.data = s->netPlugin.data;
  }
}

/* ---- which events and states an adapter forwards ------------------------ */

static const uint64_t kTypesV1 = ncclProfileGroup | ncclProfileColl | ncclProfileP2p |
                                 ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileProxyCtrl;
static const uint64_t kTypesV3 = kTypesV1 | ncclProfileKernelCh | ncclProfileNetPlugin;

int fo_forwards_type(int host, int child, uint64_t type) {
  if (child == host) return 1;
  if (child == 6) return type != ncclProfileKernelPhase;  /* v6 on v7 */
  if (child == 5) return type < ncclProfileCeColl;        /* v5 on v6+ */
  if (child == 4) return (type & kTypesV3) != 0;          /* v4 on v5+ */
  if (host <= 3) return (type & kTypesV1) != 0;           /* 2.24-2.26 */
  return (type & (child == 3 ? kTypesV3 : kTypesV1)) != 0; /* v1-v3 on v4+ */
}

int fo_gate(int api, int rccl, uint64_t type, int m) {
  enum {
    G = ncclProfileGroup, C = ncclProfileColl, P = ncclProfileP2p, PO = ncclProfileProxyOp,
    PS = ncclProfileProxyStep, KC = ncclProfileKernelCh, NP = ncclProfileNetPlugin,
    GA = ncclProfileGroupApi, CA = ncclProfileCollApi, PA = ncclProfileP2pApi,
    KL = ncclProfileKernelLaunch,
    CE = ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch
  };
  if (api <= 2) { /* 2.23-2.25 (v2.25.1-1 src/misc/profiler.cc) */
    switch (type) {
      case ncclProfileGroup: return (m & (C | P | PO | PS)) != 0;
      case ncclProfileColl:
      case ncclProfileP2p: return (m & (PO | PS | C)) != 0;
      case ncclProfileProxyOp: return (m & (PO | PS)) != 0;
      default: return (m & (int)type) != 0;
    }
  }
  /* RCCL starts ops and steps for its ProxyDiag bit too. */
  const int diag = !rccl ? 0 : api >= 7 ? ncclProfileProxyDiag_v7 : ncclProfileProxyDiag;
  switch (type) {
    case ncclProfileGroupApi: return (m & (GA | PA | CA | KL | G | C | P | PO | PS | KC | NP | CE)) != 0;
    case ncclProfileCollApi: return (m & (CA | C | PO | PS | KC | NP | CE)) != 0;
    case ncclProfileP2pApi: return (m & (PA | P | PO | PS | KC | NP)) != 0;
    case ncclProfileGroup: return (m & (G | C | P | PO | PS | KC | NP)) != 0;
    case ncclProfileColl: return (m & (C | PO | PS | KC | NP)) != 0;
    /* 2.26-2.27 gate P2p without the NetPlugin bit; 2.28 added it */
    case ncclProfileP2p: return (m & (P | PO | PS | KC | (api >= 5 ? NP : 0))) != 0;
    case ncclProfileProxyOp: return (m & (PO | PS | NP | diag)) != 0;
    case ncclProfileProxyStep: return (m & (PS | NP | diag)) != 0;
    case ncclProfileCeColl: return (m & CE) != 0;
    case ncclProfileKernelPhase: return api >= 7 && (m & ncclProfileKernelPhase) && (m & KC);
    default: return (m & (int)type) != 0; /* ProxyCtrl, KernelCh, NetPlugin, CeSync, … */
  }
}

int fo_mask_keep(int host, int child, int rccl) {
  int keep = ~0;
  if (child >= host) return keep;
  if (host >= 6 && child < 6) keep &= ~(ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch);
  if (host >= 7) keep &= ~ncclProfileKernelPhase;
  if (rccl && child < 6) keep &= ~(ncclProfileProxyDiag | ncclProfileProxyDiag_v7);
  return keep;
}

/* ---- narrowing ---------------------------------------------------------- */

static void narrow_old(fo_any_descr* out, int child, const fo_event* e) {
  /* v1-v3 (under any newer host): v3's arms, with trafficBytes for v2 and
   * codes for v1. */
  const ncclProfilerEventDescr_v7_t* s = &e->d;
  ncclProfilerEventDescr_v3_t* d = &out->v3;
  d->type = (uint8_t)s->type;
  d->parentObj = s->parentObj;
  d->rank = s->rank;
  switch (s->type) {
    case ncclProfileColl:
      d->parentObj = s->coll.parentGroup;
      if (child == 1) {
        ncclProfilerEventDescr_v1_t* c = &out->v1;
        c->coll.name = e->name;
        c->coll.commHash = e->commHash;
        c->coll.seqNumber = s->coll.seqNumber;
        c->coll.func = code_of(s->coll.func, NAMES(kFunc), 6);
        c->coll.sendBuff = s->coll.sendBuff;
        c->coll.recvBuff = s->coll.recvBuff;
        c->coll.count = s->coll.count;
        c->coll.root = s->coll.root;
        c->coll.datatype = code_of(s->coll.datatype, NAMES(kType), 8);
        c->coll.trafficBytes = e->trafficBytes;
        c->coll.nMaxChannels = s->coll.nChannels;
        c->coll.nWarps = s->coll.nWarps;
        c->coll.algo = code_of(s->coll.algo, NAMES(kAlgo), 6);
        c->coll.proto = code_of(s->coll.proto, NAMES(kProto), 2);
      } else if (child == 2) {
        ncclProfilerEventDescr_v2_t* c = &out->v2;
        NARROW_COLL_V23(c, s, e);
        c->coll.trafficBytes = e->trafficBytes;
      } else {
        NARROW_COLL_V23(d, s, e);
      }
      break;
    case ncclProfileP2p:
      d->parentObj = s->p2p.parentGroup;
      if (child == 1) {
        ncclProfilerEventDescr_v1_t* c = &out->v1;
        c->p2p.name = e->name;
        c->p2p.commHash = e->commHash;
        c->p2p.func = code_of(s->p2p.func, NAMES(kFunc), 6);
        c->p2p.buff = s->p2p.buff;
        c->p2p.datatype = code_of(s->p2p.datatype, NAMES(kType), 8);
        c->p2p.count = s->p2p.count;
        c->p2p.peer = s->p2p.peer;
      } else { /* v2 and v3 p2p arms are the same */
        d->p2p.name = e->name;
        d->p2p.commHash = e->commHash;
        d->p2p.func = s->p2p.func;
        d->p2p.buff = s->p2p.buff;
        d->p2p.datatype = s->p2p.datatype;
        d->p2p.count = s->p2p.count;
        d->p2p.peer = s->p2p.peer;
      }
      break;
    case ncclProfileProxyOp: COPY_PROXY_OP(d, s); break;
    case ncclProfileProxyStep: d->proxyStep.step = s->proxyStep.step; break;
    case ncclProfileKernelCh: d->kernelCh.channelId = s->kernelCh.channelId; break;
    case ncclProfileNetPlugin:
      d->netPlugin.id = s->netPlugin.id;
      d->netPlugin.data = s->netPlugin.data;
      break;
    default: break;
  }
}

void fo_narrow(fo_any_descr* out, int host, int child, const fo_event* e) {
  const ncclProfilerEventDescr_v7_t* s = &e->d;
  if (child >= 5) {
    /* v5, v6: the v7 arms they have sit at the same offsets. */
    size_t n = child >= 7 ? sizeof(ncclProfilerEventDescr_v7_t) : sizeof(ncclProfilerEventDescr_v6_t);
    memcpy(out, s, n);
    if (child < 7 && host >= 7) {
      /* v6 lacks userTag, kernelVariant and isSymColl: past its arms, or
       * inside them where v7 grew an arm (collApi/p2pApi/p2p userTag). */
      if (s->type == ncclProfileCollApi) memset(&out->v6.collApi.graphCaptured + 1, 0,
                                                sizeof out->v6 - offsetof(ncclProfilerEventDescr_v6_t, collApi.graphCaptured) - 1);
      if (s->type == ncclProfileP2pApi) memset(&out->v6.p2pApi.graphCaptured + 1, 0,
                                               sizeof out->v6 - offsetof(ncclProfilerEventDescr_v6_t, p2pApi.graphCaptured) - 1);
      if (s->type == ncclProfileP2p) memset(&out->v6.p2p.parentGroup + 1, 0,
                                            sizeof out->v6 - offsetof(ncclProfilerEventDescr_v6_t, p2p.parentGroup) - sizeof(void*));
    }
    if (child == 5 && s->type == ncclProfileProxyOp) {
      /* v5's proxyOp arm ends at isSend. */
      struct pt_proxy_op_arm* a = &out->v6.proxyOp;
      memset(&a->commHash, 0, sizeof *a - offsetof(struct pt_proxy_op_arm, commHash));
    }
    return;
  }
  memset(out, 0, sizeof *out);
  if (child <= 3) {
    narrow_old(out, child, e);
    return;
  }
  /* v4: its own arms; under a v5+ core the adapter takes parentGroup as
   * the parent and leaves p2p.nChannels out. */
  ncclProfilerEventDescr_v4_t* d = &out->v4;
  d->type = (uint8_t)s->type;
  d->parentObj = s->parentObj;
  d->rank = s->rank;
  switch (s->type) {
    case ncclProfileColl:
      d->parentObj = s->coll.parentGroup;
      COPY_COLL_V4(d, s);
      break;
    case ncclProfileP2p:
      d->parentObj = s->p2p.parentGroup;
      COPY_P2P_V4(d, s);
      if (host == 4) d->p2p.nChannels = s->p2p.nChannels;
      break;
    case ncclProfileProxyOp: COPY_PROXY_OP(d, s); break;
    case ncclProfileProxyStep: d->proxyStep.step = s->proxyStep.step; break;
    case ncclProfileKernelCh:
      d->kernelCh.channelId = s->kernelCh.channelId;
      d->kernelCh.pTimer = s->kernelCh.pTimer;
      break;
    case ncclProfileNetPlugin:
      d->netPlugin.id = s->netPlugin.id;
      d->netPlugin.data = s->netPlugin.data;
      break;
    default: break;
  }
}

/* ---- states ------------------------------------------------------------- */

int fo_narrow_state(int host, int child, int rccl, int s, void* args, fo_any_args* buf,
                    void** out_args) {
  *out_args = args;
  if (child == host || host <= 3) return 1; /* native, or 2.24-2.26 pass-through */
  const ncclProfilerEventStateArgs_v6_t* a = args;
  if (child == 6) { /* v6 on v7 */
    if (s == ncclProfilerKernelPhaseStop) return 0;
    memset(buf, 0, sizeof(ncclProfilerEventStateArgs_v6_t));
    if (a) {
      if ((s >= 8 && s <= 12) || s == ncclProfilerProxyStepSendPeerWait_v4)
        buf->v4.proxyStep.transSize = a->proxyStep.transSize;
      else if (s >= 13 && s <= 18) buf->v4.proxyCtrl.appendedProxyOps = a->proxyCtrl.appendedProxyOps;
      else if (s == ncclProfilerKernelChStop) buf->v4.kernelCh.pTimer = a->kernelCh.pTimer;
      else if (s == ncclProfilerNetPluginUpdate) buf->v4.netPlugin.data = a->netPlugin.data;
      else if (rccl) buf->v6.proxyDiag = a->proxyDiag;
    }
    *out_args = buf;
    return 1;
  }
  if (child >= 4) { /* v5 on v6+, v4 on v5+: the adapter's own args */
    int ok = child == 5 ? (s >= 8 && s <= 24) || s == ncclProfilerProxyOpInProgress_v4
                        : s >= 8 && s <= 22;
    if (!ok) return 0;
    memset(buf, 0, sizeof(ncclProfilerEventStateArgs_v4_t));
    if (a) {
      if ((s >= 8 && s <= 12) || s == ncclProfilerProxyStepSendPeerWait_v4)
        buf->v4.proxyStep.transSize = a->proxyStep.transSize;
      else if (s >= 13 && s <= 18) buf->v4.proxyCtrl.appendedProxyOps = a->proxyCtrl.appendedProxyOps;
      else if (s == ncclProfilerKernelChStop) buf->v4.kernelCh.pTimer = a->kernelCh.pTimer;
      else if (s == ncclProfilerNetPluginUpdate) buf->v4.netPlugin.data = a->netPlugin.data;
    }
    *out_args = buf;
    return 1;
  }
  /* v1-v3 on v4+: ctrl and step states, zeroed args, appendedProxyOps. */
  if (s < 8 || s > 18) return 0;
  memset(buf, 0, sizeof(ncclProfilerEventStateArgs_v1_t));
  if (a && s >= 13) buf->v1.proxyCtrl.appendedProxyOps = a->proxyCtrl.appendedProxyOps;
  *out_args = buf;
  return 1;
}
