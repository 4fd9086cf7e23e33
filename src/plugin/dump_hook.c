/*
 * dump_hook.c — RCCL's optional dump entry point (spec/rccl-proxytrace.md
 * §4.3–§4.4), called on every communicator destroy and by ncclCommDump.
 *
 * One logger call per line at RCCL's WARN level (3), so the host's 1 KiB
 * message buffer never cuts a dump; `file` is this function's name, as in
 * RCCL's plugin, so every line carries "ncclProfilerProxyTraceDump:<line>".
 * With PROXYTRACE_DUMP_DIR the same dump also goes to the files (sink.c),
 * trigger "hook" — or "api" when a program calls the hook under a host that
 * does not (NVIDIA NCCL never does).
 */
#include "nccl/profiler_v6.h"
#include "plugin/plugin.h"

static void log_line(void* arg, const char* line, int len) {
  ncclDebugLogger_t log = *(ncclDebugLogger_t*)arg;
  log(RCCL_LOG_WARN, NCCL_ALL, "ncclProfilerProxyTraceDump", __LINE__, "%.*s", len, line);
}

PT_EXPORT void ncclProfilerProxyTraceDump(void* context, ncclDebugLogger_t logfn) {
  if (!context || !logfn) return;
  pt_ctx_dump_hook(context, log_line, &logfn);
}
