/*
 * abi_v5.c — the ncclProfiler_v5 table for stock NCCL 2.28 (see
 * abi_stock.h). Same init as v6; the descriptor is a layout prefix of v6's.
 */
#include "nccl/profiler_v5.h"
#include "plugin/abi_stock.h"

static ncclResult_t v5_init(void** context, uint64_t comm_id, int* mask, const char* comm_name,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t log) {
  pt_event_init(context, mask, PT_EVENT_MASK_STOCK, 5, comm_id, comm_name, nnodes, nranks, rank, log);
  return ncclSuccess;
}

PT_STOCK_CALLBACKS(v5, 5, ncclProfilerEventDescr_v5_t, ncclProfilerEventStateArgs_v5_t,
                   ncclProfilerEventState_v5_t, 0, 0, PT_STEPS_NONE, PT_COLL_NCH, PT_P2P_NCH, PT_KCH_V4,
                   PT_HASH_AT_INIT)

PT_EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
    .name = "ProxyTrace",
    .init = v5_init,
    .startEvent = v5_start,
    .stopEvent = v5_stop,
    .recordEventState = v5_record,
    .finalize = v5_finalize,
};
