/*
 * func.c — NCCL's collective function names and codes, for the opCounts of
 * stock NCCL ops (trace.h, "task handles").
 *
 * The codes are NCCL's ncclFunc_t (v2.30.7-1 src/include/nccl_common.h:
 * Broadcast 0 … WaitSignal 14) and the names what ncclFuncToString gives
 * (src/collectives.cc), which is what the v2+ Coll and P2p descriptors
 * carry; the v1 descriptor carries the code itself.
 */
#include <stdatomic.h>
#include <string.h>

#include "proxytrace/trace.h"

static const char* const func_names[PT_FUNC_NUM] = {
    "Broadcast", "Reduce",   "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
    "Send",      "Recv",     "AlltoAll",  "Scatter",       "Gather",    "AllGatherV",
    "PutSignal", "Signal",   "WaitSignal", NULL};

static int lookup(_Atomic uint64_t* memo, const char* name, const char* const* names, int n, int none);

int pt_func_code(const char* name) {
  static _Atomic uint64_t memo;
  return lookup(&memo, name, func_names, PT_FUNC_UNKNOWN, PT_FUNC_UNKNOWN);
}

const char* pt_func_name(int code) {
  return code >= 0 && code < PT_FUNC_UNKNOWN ? func_names[code] : "?";
}

/* NCCL's ncclDataType_t (nccl.h: ncclInt8 0 … ncclFloat8e5m2 11), the names
 * ncclDatatypeToString gives (src/collectives.cc; it has none for Uint8,
 * which it prints "Unknown"), and the short names the dumps print. The
 * algorithm and protocol codes are NCCL_ALGO_* and NCCL_PROTO_*
 * (src/include/plugin/nccl_tuner.h), named as ncclAlgoToString and
 * ncclProtoToString print them (v2.30.7-1). */
#define PT_DTYPE_NUM 12
static const char* const dtype_host[PT_DTYPE_NUM] = {
    "ncclInt8",    "ncclUint8",   "ncclInt32",    "ncclUint32",     "ncclInt64",     "ncclUint64",
    "ncclFloat16", "ncclFloat32", "ncclFloat64",  "ncclBfloat16",   "ncclFloat8e4m3", "ncclFloat8e5m2"};
static const char* const dtype_short[PT_DTYPE_NUM] = {
    "int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
    "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
#define PT_ALGO_NUM 7
static const char* const algo_names[PT_ALGO_NUM] = {"TREE", "RING",     "COLLNET_DIRECT", "COLLNET_CHAIN",
                                                    "NVLS", "NVLS_TREE", "PAT"};
#define PT_PROTO_NUM 3
static const char* const proto_names[PT_PROTO_NUM] = {"LL", "LL128", "SIMPLE"};

/* A name -> code lookup that remembers the last pointer it resolved, packed
 * with its code in one word: the host hands the same literal every call,
 * so a repeat is one relaxed load and one string compare (which keeps a
 * host that reuses a buffer for another name right), on any thread. */
static int lookup(_Atomic uint64_t* memo, const char* name, const char* const* names, int n, int none) {
  if (!name) return none;
  const uint64_t p = (uint64_t)(uintptr_t)name;
  const uint64_t m = atomic_load_explicit(memo, memory_order_relaxed);
  if (p >> 56 == 0 && m >> 8 == p && !strcmp(name, names[m & 0xff])) return (int)(m & 0xff);
  for (int i = 0; i < n; i++)
    if (names[i] && !strcmp(name, names[i])) {
      if (p >> 56 == 0) atomic_store_explicit(memo, p << 8 | (uint64_t)i, memory_order_relaxed);
      return i;
    }
  return none;
}

int pt_dtype_code(const char* name) {
  static _Atomic uint64_t memo;
  return lookup(&memo, name, dtype_host, PT_DTYPE_NUM, PT_CODE_NONE);
}
int pt_algo_code(const char* name) {
  static _Atomic uint64_t memo;
  return lookup(&memo, name, algo_names, PT_ALGO_NUM, PT_CODE_NONE);
}
int pt_proto_code(const char* name) {
  static _Atomic uint64_t memo;
  return lookup(&memo, name, proto_names, PT_PROTO_NUM, PT_CODE_NONE);
}
const char* pt_dtype_name(int code) { return code >= 0 && code < PT_DTYPE_NUM ? dtype_short[code] : "?"; }
const char* pt_algo_name(int code) { return code >= 0 && code < PT_ALGO_NUM ? algo_names[code] : "?"; }
const char* pt_proto_name(int code) { return code >= 0 && code < PT_PROTO_NUM ? proto_names[code] : "?"; }
