/*
 * config.c — the plugin's environment variables.
 *
 *   PROXYTRACE_MAX_OPS   operation slots per communicator (default 4096,
 *                        16..1048576); 256 bytes each
 *   PROXYTRACE_CLOCK     x86: tsc (default, where the CPU's TSC is invariant)
 *                        or monotonic; aarch64: counter (default) or
 *                        monotonic; read by src/trace/clock.c, checked here
 *
 * A bad value never stops the host: it is reported once per process, with
 * the accepted values and the default used, and the default applies. The
 * clock in use is said once per process, at INFO level.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin.h"
#include "trace/clock.h"

int pt_parse_uint(const char* s, unsigned long lo, unsigned long hi, unsigned long* out) {
  if (!s || *s < '0' || *s > '9') return -1;
  char* end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static atomic_flag warned_max_ops = ATOMIC_FLAG_INIT;
static atomic_flag warned_clock = ATOMIC_FLAG_INIT;
static atomic_flag told_clock = ATOMIC_FLAG_INIT;

void pt_config_load(pt_plugin_config* cfg, ncclDebugLogger_t log) {
  pt_trace_config_default(&cfg->trace);
  const char* v = getenv("PROXYTRACE_MAX_OPS");
  unsigned long n;
  if (v && *v) {
    if (pt_parse_uint(v, PT_MIN_MAX_OPS, PT_MAX_MAX_OPS, &n) == 0) {
      cfg->trace.max_ops = (uint32_t)n;
    } else if (!atomic_flag_test_and_set(&warned_max_ops)) {
      PT_LOG_WARN(log,
                  "proxytrace: PROXYTRACE_MAX_OPS='%s' is not a whole number in %u..%u; "
                  "using the default %u",
                  v, PT_MIN_MAX_OPS, PT_MAX_MAX_OPS, PT_DEFAULT_MAX_OPS);
    }
  }
  v = getenv("PROXYTRACE_CLOCK");
  if (pt_clock_parse(v) == PT_CLOCK_BAD && !atomic_flag_test_and_set(&warned_clock)) {
    PT_LOG_WARN(log,
                "proxytrace: PROXYTRACE_CLOCK='%s' is not a clock of this machine (%s): accepted "
                "%s; using the default (%s)",
                v, PT_CLOCK_ARCH, pt_clock_accepted(), pt_clock_default());
  }
  if (log && !atomic_flag_test_and_set(&told_clock)) {
    char what[160];
    pt_clock_describe(what, sizeof what);
    PT_LOG_INFO(log, NCCL_INIT | NCCL_PROFILE, "proxytrace: clock %s", what);
  }
}
