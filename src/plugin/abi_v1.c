/*
 * abi_v1.c — the ncclProfiler_v1 table for stock NCCL (see abi_stock.h):
 * what NCCL 2.23 binds natively, and what any newer NCCL adapts when no
 * newer table is found. It answers the Group event with a non-NULL
 * handle, without which 2.23 send no proxy event (abi_stock.h).
 */
#include "nccl/profiler_v1.h"
#include "plugin/abi_stock.h"

PT_STOCK_INIT_NOCOMM(v1, 1)
PT_STOCK_CALLBACKS(v1, 1, ncclProfilerEventDescr_v1_t, ncclProfilerEventStateArgs_v1_t,
                   ncclProfilerEventState_v1_t, 1, 1, PT_STEPS_V1, PT_COLL_V1, PT_P2P_V1, PT_KCH_NONE,
                   PT_HASH_IN_DESCR)

PT_EXPORT ncclProfiler_v1_t ncclProfiler_v1 = {
    .name = "ProxyTrace",
    .init = v1_init,
    .startEvent = v1_start,
    .stopEvent = v1_stop,
    .recordEventState = v1_record,
    .finalize = v1_finalize,
};
