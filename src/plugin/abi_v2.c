/*
 * abi_v2.c — the ncclProfiler_v2 table for stock NCCL (see abi_stock.h):
 * what NCCL 2.24-2.25 binds natively, and what any newer NCCL adapts when no
 * newer table is found. It answers the Group event with a non-NULL
 * handle, without which 2.24-2.25 send no proxy event (abi_stock.h).
 */
#include "nccl/profiler_v2.h"
#include "plugin/abi_stock.h"

PT_STOCK_INIT_NOCOMM(v2, 2)
PT_STOCK_CALLBACKS(v2, 2, ncclProfilerEventDescr_v2_t, ncclProfilerEventStateArgs_v2_t,
                   ncclProfilerEventState_v2_t, 1, 1, PT_STEPS_V1, PT_COLL_MAXCH, PT_P2P_NOCH, PT_KCH_NONE,
                   PT_HASH_IN_DESCR)

PT_EXPORT ncclProfiler_v2_t ncclProfiler_v2 = {
    .name = "ProxyTrace",
    .init = v2_init,
    .startEvent = v2_start,
    .stopEvent = v2_stop,
    .recordEventState = v2_record,
    .finalize = v2_finalize,
};
