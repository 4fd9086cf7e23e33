/*
 * child_plugin.c — a profiler plugin of one API version (CHILD_V, 1..7),
 * built for the fan-out's tests as libchild-vN.so.
 *
 * It exports only ncclProfiler_v<CHILD_V>, asks for the mask the test sets
 * (child_setup), and writes down every call: each event's descriptor fields
 * as this version defines them, its parent (by the parent's own fields, or
 * "none"/"foreign"), its states with their args, and whether it was
 * stopped. child_lines() gives one line per event, sorted, so a run through
 * the fan-out can be compared with a run where the emulator loads the child
 * itself. Consecutive identical states are written once: how often a
 * proxy thread polls a peer depends on scheduling, not on the forwarding.
 * It can be told to fail init on a rank, to return an error from its Nth
 * event call, or to return a NULL handle for events of some types
 * (child_null: the event is written down, with "null", and the host must
 * then send it no state, no stop, and the children events it would not
 * start under a NULL parent). A ProxyOp or ProxyStep may come with a
 * context that is not this plugin's (PXN: another process's rank): it is
 * written down with "ctx=foreign". Built with CHILD_DUMP it also exports
 * RCCL's dump hook.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/profiler_v1.h"
#include "nccl/profiler_v2.h"
#include "nccl/profiler_v3.h"
#include "nccl/profiler_v4.h"
#include "nccl/profiler_v5.h"
#include "nccl/profiler_v6.h"
#include "nccl/profiler_v7.h"

#ifndef CHILD_V
#define CHILD_V 6
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define DESCR CAT(CAT(ncclProfilerEventDescr_v, CHILD_V), _t)
#define ARGS CAT(CAT(ncclProfilerEventStateArgs_v, CHILD_V), _t)
#define TABLE CAT(CAT(ncclProfiler_v, CHILD_V), _t)
#define EXPORT __attribute__((visibility("default")))

#define MAX_EV 200000
#define DESC_LEN 200
#define STATES_LEN 400

typedef struct {
  char desc[DESC_LEN];
  char parent[DESC_LEN];
  char states[STATES_LEN];
  int slen;
  char last[64];
  int stops;
} ev;

static ev* evs;
static atomic_long nev;
static atomic_long calls, inits, finals, fails_seen, dumps;
static int want_mask = 0;
static int fail_init_rank = -2; /* -1: every init fails */
static long fail_at = -1;       /* event call number that returns an error */
static int null_types;          /* event types it returns a NULL handle for */
static int ctx_tag;

EXPORT void child_setup(int mask, int fail_rank, long fail_call);
void child_setup(int mask, int fail_rank, long fail_call) {
  if (!evs) evs = calloc(MAX_EV, sizeof *evs);
  atomic_store(&nev, 0);
  atomic_store(&calls, 0);
  atomic_store(&inits, 0);
  atomic_store(&finals, 0);
  atomic_store(&dumps, 0);
  want_mask = mask;
  fail_init_rank = fail_rank;
  fail_at = fail_call;
  null_types = 0;
}

EXPORT void child_null(int types);
void child_null(int types) { null_types = types; }

EXPORT void child_counts(long* out);
void child_counts(long* out) {
  out[0] = atomic_load(&inits);
  out[1] = atomic_load(&finals);
  out[2] = atomic_load(&calls);
  out[3] = atomic_load(&nev);
  out[4] = atomic_load(&dumps);
}

static int cmp(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

/* One malloc'd string: the sorted lines, '\n'-separated. */
EXPORT char* child_lines(void);
char* child_lines(void) {
  long n = atomic_load(&nev);
  if (n > MAX_EV) n = MAX_EV;
  char** l = calloc((size_t)n + 1, sizeof *l);
  size_t total = 1;
  for (long i = 0; i < n; i++) {
    size_t len = strlen(evs[i].desc) + strlen(evs[i].parent) + strlen(evs[i].states) + 32;
    l[i] = malloc(len);
    snprintf(l[i], len, "%s <%s> %s stops=%d", evs[i].desc, evs[i].parent, evs[i].states, evs[i].stops);
    total += strlen(l[i]) + 1;
  }
  qsort(l, (size_t)n, sizeof *l, cmp);
  char* out = malloc(total);
  out[0] = '\0';
  char* p = out;
  for (long i = 0; i < n; i++) {
    size_t k = strlen(l[i]);
    memcpy(p, l[i], k);
    p[k] = '\n';
    p += k + 1;
    free(l[i]);
  }
  *p = '\0';
  free(l);
  return out;
}

static int failing_call(void) {
  long c = atomic_fetch_add(&calls, 1) + 1;
  if (fail_at > 0 && c == fail_at) {
    atomic_fetch_add(&fails_seen, 1);
    return 1;
  }
  return 0;
}

static int mine(void* h) { return evs && (ev*)h >= evs && (ev*)h < evs + MAX_EV; }

#define S(x) ((x) ? (x) : "(null)")

static void describe(char* b, size_t n, const DESCR* d) {
  int t = (int)d->type;
  int o = snprintf(b, n, "t=%d r=%d", t, d->rank);
  b += o;
  n -= (size_t)o;
  switch (d->type) {
    case ncclProfileColl:
#if CHILD_V == 1
      snprintf(b, n, " %s %llx seq=%llu f=%d c=%zu root=%d dt=%d op=%u tb=%zu nch=%d nw=%d a=%d p=%d",
               S(d->coll.name), (unsigned long long)d->coll.commHash,
               (unsigned long long)d->coll.seqNumber, d->coll.func, d->coll.count, d->coll.root,
               d->coll.datatype, d->coll.op, d->coll.trafficBytes, d->coll.nMaxChannels,
               d->coll.nWarps, d->coll.algo, d->coll.proto);
#elif CHILD_V <= 3
      snprintf(b, n, " %s %llx seq=%llu %s c=%zu root=%d %s nch=%d nw=%d %s %s", S(d->coll.name),
               (unsigned long long)d->coll.commHash, (unsigned long long)d->coll.seqNumber,
               S(d->coll.func), d->coll.count, d->coll.root, S(d->coll.datatype),
               d->coll.nMaxChannels, d->coll.nWarps, S(d->coll.algo), S(d->coll.proto));
#else
      o = snprintf(b, n, " seq=%llu %s c=%zu root=%d %s nch=%d nw=%d %s %s",
                   (unsigned long long)d->coll.seqNumber, S(d->coll.func), d->coll.count,
                   d->coll.root, S(d->coll.datatype), d->coll.nChannels, d->coll.nWarps,
                   S(d->coll.algo), S(d->coll.proto));
#if CHILD_V == 7
      snprintf(b + o, n - (size_t)o, " kv=%s sym=%d tag=%llu", S(d->coll.kernelVariant),
               d->coll.isSymColl, (unsigned long long)d->coll.userTag);
#endif
#endif
      break;
    case ncclProfileP2p:
#if CHILD_V == 1
      snprintf(b, n, " %s %llx f=%d dt=%d c=%zu peer=%d", S(d->p2p.name),
               (unsigned long long)d->p2p.commHash, d->p2p.func, d->p2p.datatype, d->p2p.count,
               d->p2p.peer);
#elif CHILD_V <= 3
      snprintf(b, n, " %s %llx %s %s c=%zu peer=%d", S(d->p2p.name),
               (unsigned long long)d->p2p.commHash, S(d->p2p.func), S(d->p2p.datatype),
               d->p2p.count, d->p2p.peer);
#else
      o = snprintf(b, n, " %s %s c=%zu peer=%d nch=%d", S(d->p2p.func), S(d->p2p.datatype),
                   d->p2p.count, d->p2p.peer, d->p2p.nChannels);
#if CHILD_V == 7
      snprintf(b + o, n - (size_t)o, " tag=%llu", (unsigned long long)d->p2p.userTag);
#endif
#endif
      break;
    case ncclProfileProxyOp:
      o = snprintf(b, n, " pid=%d ch=%d peer=%d ns=%d chunk=%d send=%d", (int)d->proxyOp.pid,
                   d->proxyOp.channelId, d->proxyOp.peer, d->proxyOp.nSteps, d->proxyOp.chunkSize,
                   d->proxyOp.isSend);
#if CHILD_V >= 6
      snprintf(b + o, n - (size_t)o, " h=%llx oc=%lld fi=%d pr=%d pa=%d tb=%u nb=%u raw=%d",
               (unsigned long long)d->proxyOp.commHash, (long long)d->proxyOp.opCount,
               d->proxyOp.traceFuncIdx, d->proxyOp.traceProtocol, d->proxyOp.tracePattern,
               d->proxyOp.traceTotalBytes, d->proxyOp.proxyNbytes, d->proxyOp.rawProxyNsteps);
#endif
      break;
    case ncclProfileProxyStep: snprintf(b, n, " step=%d", d->proxyStep.step); break;
#if CHILD_V >= 3
    case ncclProfileKernelCh:
#if CHILD_V >= 4
      snprintf(b, n, " ch=%d timer=%d", d->kernelCh.channelId, d->kernelCh.pTimer != 0);
#else
      snprintf(b, n, " ch=%d", d->kernelCh.channelId);
#endif
      break;
    case ncclProfileNetPlugin: snprintf(b, n, " id=%lld", (long long)d->netPlugin.id); break;
#endif
#if CHILD_V >= 5
    case ncclProfileGroupApi:
      snprintf(b, n, " gc=%d depth=%d", d->groupApi.graphCaptured, d->groupApi.groupDepth);
      break;
    case ncclProfileCollApi:
      o = snprintf(b, n, " %s c=%zu %s root=%d gc=%d", S(d->collApi.func), d->collApi.count,
                   S(d->collApi.datatype), d->collApi.root, d->collApi.graphCaptured);
#if CHILD_V == 7
      snprintf(b + o, n - (size_t)o, " tag=%llu", (unsigned long long)d->collApi.userTag);
#endif
      break;
    case ncclProfileP2pApi:
      o = snprintf(b, n, " %s c=%zu %s gc=%d", S(d->p2pApi.func), d->p2pApi.count,
                   S(d->p2pApi.datatype), d->p2pApi.graphCaptured);
#if CHILD_V == 7
      snprintf(b + o, n - (size_t)o, " tag=%llu", (unsigned long long)d->p2pApi.userTag);
#endif
      break;
#endif
#if CHILD_V == 7
    case ncclProfileKernelPhase:
      snprintf(b, n, " ch=%d ph=%d %s timer=%d", d->kernelPhase.channelId, d->kernelPhase.phaseId,
               S(d->kernelPhase.phaseName), d->kernelPhase.pTimer != 0);
      break;
#endif
    default: break;
  }
}

static ncclResult_t start(void* ctx, void** h, DESCR* d) {
  const int foreign = ctx != &ctx_tag;
  if (foreign && d->type != ncclProfileProxyOp && d->type != ncclProfileProxyStep) return ncclInvalidArgument;
  if (failing_call()) return ncclInternalError;
  long i = atomic_fetch_add(&nev, 1);
  if (i >= MAX_EV) {
    *h = NULL;
    return ncclSuccess;
  }
  ev* e = &evs[i];
  memset(e, 0, sizeof *e);
  describe(e->desc, sizeof e->desc, d);
  if (foreign) {
    size_t k = strlen(e->desc);
    snprintf(e->desc + k, sizeof e->desc - k, " ctx=foreign");
  }
  if (!d->parentObj) snprintf(e->parent, sizeof e->parent, "none");
  else if (mine(d->parentObj)) snprintf(e->parent, sizeof e->parent, "%s", ((ev*)d->parentObj)->desc);
  else snprintf(e->parent, sizeof e->parent, "foreign");
#if CHILD_V >= 5
  /* v5+ coll/p2p also carry the legacy Group handle. */
  void* g = d->type == ncclProfileColl ? d->coll.parentGroup
            : d->type == ncclProfileP2p ? d->p2p.parentGroup : NULL;
  if (d->type == ncclProfileColl || d->type == ncclProfileP2p) {
    size_t k = strlen(e->parent);
    snprintf(e->parent + k, sizeof e->parent - k, " g=%s", !g ? "none" : mine(g) ? ((ev*)g)->desc : "foreign");
  }
#endif
  if ((int)d->type & null_types) {
    snprintf(e->states, sizeof e->states, " null");
    *h = NULL;
    return ncclSuccess;
  }
  *h = e;
  return ncclSuccess;
}

static ncclResult_t stop(void* h) {
  if (failing_call()) return ncclInternalError;
  if (mine(h)) ((ev*)h)->stops++;
  return ncclSuccess;
}

static ncclResult_t record(void* h, ncclProfilerEventState_t s, ARGS* a) {
  if (failing_call()) return ncclInternalError;
  if (!mine(h)) return ncclSuccess;
  ev* e = h;
  char one[64];
  int si = (int)s;
  if (!a) snprintf(one, sizeof one, " %d:-", si);
#if CHILD_V <= 3
  else snprintf(one, sizeof one, " %d:%zu/%d", si, a->proxyOp.transSize, a->proxyOp.steps);
#else
  else if (si == 19 || si == 23 || si == 24) snprintf(one, sizeof one, " %d", si);
  else if ((si >= 8 && si <= 12) || si == 20) snprintf(one, sizeof one, " %d:%zu", si, a->proxyStep.transSize);
  else if (si >= 13 && si <= 18) snprintf(one, sizeof one, " %d:%d", si, a->proxyCtrl.appendedProxyOps);
  else if (si == 22) snprintf(one, sizeof one, " %d:%d", si, a->kernelCh.pTimer != 0); /* a clock */
#if CHILD_V == 7
  else if (si == 31) snprintf(one, sizeof one, " %d", si); /* KernelPhaseStop: a clock */
#endif
#if CHILD_V >= 6
  else if (si == 31 || si == 32)
    snprintf(one, sizeof one, " %d:%d/%d/%lld", si, a->proxyDiag.counterKind, a->proxyDiag.flags,
             (long long)a->proxyDiag.value);
#endif
  else snprintf(one, sizeof one, " %d", si);
#endif
  if (!strcmp(one, e->last)) return ncclSuccess;
  snprintf(e->last, sizeof e->last, "%s", one);
  size_t k = strlen(one);
  if (e->slen + (int)k < STATES_LEN - 1) {
    memcpy(e->states + e->slen, one, k + 1);
    e->slen += (int)k;
  }
  return ncclSuccess;
}

static ncclResult_t common_init(void** ctx, int* mask, int rank) {
  atomic_fetch_add(&inits, 1);
  if (fail_init_rank == -1 || (fail_init_rank >= 0 && rank == fail_init_rank)) return ncclInternalError;
  *ctx = &ctx_tag;
  __atomic_store_n(mask, want_mask, __ATOMIC_RELAXED);
  return ncclSuccess;
}

static ncclResult_t finalize(void* ctx) {
  atomic_fetch_add(&finals, 1);
  return ncclSuccess;
}

#if CHILD_V <= 3
static ncclResult_t init(void** ctx, int* mask) { return common_init(ctx, mask, -1); }
#elif CHILD_V == 4
static ncclResult_t init(void** ctx, int* mask, const char* name, uint64_t hash, int nn, int nr, int rank,
                         ncclDebugLogger_t log) {
  return common_init(ctx, mask, rank);
}
#else
static ncclResult_t init(void** ctx, uint64_t id, int* mask, const char* name, int nn, int nr, int rank,
                         ncclDebugLogger_t log) {
  return common_init(ctx, mask, rank);
}
#endif

EXPORT const TABLE CAT(ncclProfiler_v, CHILD_V) = {"test-child", init, start, stop, record, finalize};

#ifdef CHILD_DUMP
/* RCCL's dump hook (built as libchild-dump.so): counts the calls that name
 * a context of this plugin. */
EXPORT void ncclProfilerProxyTraceDump(void* ctx, ncclDebugLogger_t log);
void ncclProfilerProxyTraceDump(void* ctx, ncclDebugLogger_t log) {
  if (ctx == &ctx_tag) atomic_fetch_add(&dumps, 1);
}
#endif
