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
#include <stdint.h>
#include <string.h>

#include "proxytrace/trace.h"

static const char* const func_names[PT_FUNC_NUM] = {
    "Broadcast", "Reduce",   "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
    "Send",      "Recv",     "AlltoAll",  "Scatter",       "Gather",    "AllGatherV",
    "PutSignal", "Signal",   "WaitSignal", NULL};

/* What a name's exact comparison needs (below): its bytes and their
 * terminator as two words, and which bytes of each count. Made once from
 * the tables, at load. */
typedef struct {
  uint64_t w[2], m[2];
} name_key;
#define PT_NAME_KEYS 16
typedef struct {
  const char* const* names;
  int n;
  name_key key[PT_NAME_KEYS];
} name_table;

static inline int lookup(_Atomic uint64_t* memo, const char* name, const name_table* t, int none);
static _Atomic uint64_t func_memo, dtype_memo, algo_memo, proto_memo;
static name_table funcs = {.names = func_names, .n = PT_FUNC_UNKNOWN};

int pt_func_code(const char* name) {
  return lookup(&func_memo, name, &funcs, PT_FUNC_UNKNOWN);
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

static name_table dtypes = {.names = dtype_host, .n = PT_DTYPE_NUM};
static name_table algos = {.names = algo_names, .n = PT_ALGO_NUM};
static name_table protos = {.names = proto_names, .n = PT_PROTO_NUM};

__attribute__((constructor)) static void make_keys(void) {
  name_table* const all[] = {&funcs, &dtypes, &algos, &protos};
  for (size_t t = 0; t < sizeof all / sizeof all[0]; t++)
    for (int i = 0; i < all[t]->n; i++) {
      const char* s = all[t]->names[i];
      if (!s) continue;
      const size_t len = strlen(s) + 1; /* with its terminator */
      if (len > 16) continue; /* no key: compared with strcmp */
      unsigned char b[16] = {0};
      memcpy(b, s, len);
      name_key* k = &all[t]->key[i];
      memcpy(k->w, b, 16);
      for (size_t j = 0; j < len; j++) k->m[j / 8] |= 0xffull << (8 * (j % 8));
    }
}

/* `s` is the name of key `k`: its bytes up to and including the
 * terminator are the key's — what strcmp says, read as two words with no
 * call. The words may reach past the end of `s` but never past its page
 * (a name near a page's end is compared byte by byte): the bytes beyond
 * its terminator are read and left out of the comparison, which is why
 * the address sanitizer is told to let this function be. */
__attribute__((no_sanitize_address)) static int same_name(const char* s, const name_key* k, const char* name) {
  if (((uintptr_t)s & 4095) > 4096 - 16 || !k->m[0]) return !strcmp(s, name);
  uint64_t a, b;
  memcpy(&a, s, 8);
  memcpy(&b, s + 8, 8);
  return !(((a ^ k->w[0]) & k->m[0]) | ((b ^ k->w[1]) & k->m[1]));
}

/* A name -> code lookup that remembers the last pointer it resolved, packed
 * with its code in one word: the host hands the same literal every call,
 * so a repeat is one relaxed load and one exact comparison of the name
 * (which keeps a host that reuses a buffer for another name right), on
 * any thread. */
static inline __attribute__((always_inline)) int lookup(_Atomic uint64_t* memo, const char* name,
                                                        const name_table* t, int none) {
  if (!name) return none;
  const uint64_t p = (uint64_t)(uintptr_t)name;
  const uint64_t m = atomic_load_explicit(memo, memory_order_relaxed);
  const unsigned c = (unsigned)(m & 0xff);
  if (p >> 56 == 0 && m >> 8 == p && same_name(name, &t->key[c], t->names[c])) return (int)c;
  for (int i = 0; i < t->n; i++)
    if (t->names[i] && !strcmp(name, t->names[i])) {
      if (p >> 56 == 0) atomic_store_explicit(memo, p << 8 | (uint64_t)i, memory_order_relaxed);
      return i;
    }
  return none;
}

int pt_dtype_code(const char* name) { return lookup(&dtype_memo, name, &dtypes, PT_CODE_NONE); }
int pt_algo_code(const char* name) { return lookup(&algo_memo, name, &algos, PT_CODE_NONE); }
int pt_proto_code(const char* name) { return lookup(&proto_memo, name, &protos, PT_CODE_NONE); }

uint32_t pt_task_codes(const char* func, const char* dtype, const char* algo, const char* proto) {
  return (uint32_t)lookup(&func_memo, func, &funcs, PT_FUNC_UNKNOWN) |
         (uint32_t)lookup(&dtype_memo, dtype, &dtypes, PT_CODE_NONE) << 8 |
         (uint32_t)lookup(&algo_memo, algo, &algos, PT_CODE_NONE) << 16 |
         (uint32_t)lookup(&proto_memo, proto, &protos, PT_CODE_NONE) << 24;
}
const char* pt_dtype_name(int code) { return code >= 0 && code < PT_DTYPE_NUM ? dtype_short[code] : "?"; }
const char* pt_algo_name(int code) { return code >= 0 && code < PT_ALGO_NUM ? algo_names[code] : "?"; }
const char* pt_proto_name(int code) { return code >= 0 && code < PT_PROTO_NUM ? proto_names[code] : "?"; }
