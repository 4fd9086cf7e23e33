/*
 * func.c — NCCL's collective function names and codes, for the opCounts of
 * stock NCCL ops (trace.h, "task handles").
 *
 * The codes are NCCL's ncclFunc_t (v2.30.7-1 src/include/nccl_common.h:
 * Broadcast 0 … WaitSignal 14) and the names what ncclFuncToString gives
 * (src/collectives.cc), which is what the v2+ Coll and P2p descriptors
 * carry; the v1 descriptor carries the code itself.
 */
#include <string.h>

#include "proxytrace/trace.h"

static const char* const names[PT_FUNC_NUM] = {
    "Broadcast", "Reduce",   "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
    "Send",      "Recv",     "AlltoAll",  "Scatter",       "Gather",    "AllGatherV",
    "PutSignal", "Signal",   "WaitSignal", NULL};

int pt_func_code(const char* name) {
  if (!name) return PT_FUNC_UNKNOWN;
  for (int i = 0; i < PT_FUNC_UNKNOWN; i++)
    if (!strcmp(name, names[i])) return i;
  return PT_FUNC_UNKNOWN;
}

const char* pt_func_name(int code) {
  return code >= 0 && code < PT_FUNC_UNKNOWN ? names[code] : "?";
}
