/*
 * abi_v3.c — the ncclProfiler_v3 table for stock NCCL (see abi_stock.h):
 * what NCCL 2.26 binds natively, and what any newer NCCL adapts when no
 * newer table is found. It answers the Group event with a non-NULL handle,
 * without which 2.26 sends no Coll or P2p event (abi_stock.h).
 */
#include "nccl/profiler_v3.h"
#include "plugin/abi_stock.h"

PT_STOCK_INIT_NOCOMM(v3, 3)
PT_STOCK_CALLBACKS(v3, 3, ncclProfilerEventDescr_v3_t, ncclProfilerEventStateArgs_v3_t,
                   ncclProfilerEventState_v3_t, 1, 1, PT_STEPS_V1, PT_COLL_MAXCH, PT_P2P_NOCH, PT_KCH_V3,
                   PT_HASH_IN_DESCR)

PT_EXPORT ncclProfiler_v3_t ncclProfiler_v3 = {
    .name = "ProxyTrace",
    .init = v3_init,
    .startEvent = v3_start,
    .stopEvent = v3_stop,
    .recordEventState = v3_record,
    .finalize = v3_finalize,
};
