/*
 * abi_v4.c — the ncclProfiler_v4 table for stock NCCL 2.27 (see
 * abi_stock.h). init learns the communicator; commHash is its 4th argument
 * here (2nd from v5 on). It answers the Group event with a non-NULL handle,
 * without which 2.27 sends no Coll or P2p event (abi_stock.h).
 */
#include "nccl/profiler_v4.h"
#include "plugin/abi_stock.h"

static ncclResult_t v4_init(void** context, int* mask, const char* comm_name, uint64_t comm_hash,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t log) {
  pt_event_init(context, mask, PT_EVENT_MASK_STOCK, 4, comm_hash, comm_name, nnodes, nranks, rank, log);
  return ncclSuccess;
}

PT_STOCK_CALLBACKS(v4, 4, ncclProfilerEventDescr_v4_t, ncclProfilerEventStateArgs_v4_t,
                   ncclProfilerEventState_v4_t, 0, 1, PT_STEPS_NONE, PT_COLL_NCH, PT_P2P_NCH, PT_KCH_V4,
                   PT_HASH_AT_INIT)

PT_EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {
    .name = "ProxyTrace",
    .init = v4_init,
    .startEvent = v4_start,
    .stopEvent = v4_stop,
    .recordEventState = v4_record,
    .finalize = v4_finalize,
};
