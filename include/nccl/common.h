/*
 * common.h — types shared by every NCCL/RCCL plugin ABI version.
 *
 * As NVIDIA/nccl src/nccl.h.in and src/include/nccl_common.h define them
 * (the result codes as of v2.30.3-1 src/nccl.h.in:44-53, the release that
 * added ncclTimeout). The log-level numbers differ
 * between NVIDIA NCCL and RCCL (RCCL inserts ERROR = 1), so both sets are
 * spelled out and a plugin must pick the right one for the host it logs
 * into.
 */
#ifndef PT_NCCL_COMMON_H
#define PT_NCCL_COMMON_H

#include <stdint.h>
#include <stddef.h>

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8, /* NCCL 2.30+ */
  ncclNumResults = 9
} ncclResult_t;

/* The logger's level parameter is a C enum: an int on every target ABI. */
typedef int ncclDebugLogLevel;

/* NVIDIA NCCL levels. */
enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
};

/* RCCL levels: ERROR = 1 shifts everything above it by one. */
enum {
  RCCL_LOG_NONE = 0,
  RCCL_LOG_ERROR = 1,
  RCCL_LOG_VERSION = 2,
  RCCL_LOG_WARN = 3,
  RCCL_LOG_INFO = 4,
  RCCL_LOG_ABORT = 5,
  RCCL_LOG_TRACE = 6
};

/* Subsystem flags (the ones the plugin uses). */
#define NCCL_INIT 0x1UL
#define NCCL_PROFILE 0x4000UL
#define NCCL_ALL (~0UL)

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags,
                                  const char* file, int line, const char* fmt, ...);

_Static_assert(sizeof(ncclResult_t) == 4, "ncclResult_t is a 4-byte enum");

#endif
