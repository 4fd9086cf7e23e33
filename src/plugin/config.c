/*
 * config.c — the plugin's environment variables.
 *
 *   PROXYTRACE_MAX_OPS          cap on the operation slots of one
 *                               communicator (default 65536, 16..1048576);
 *                               256 bytes each, taken only as ops need them
 *   PROXYTRACE_MAX_MEMORY_MB    process-wide budget of operation slots, in
 *                               MiB (default 1024, 1..1048576): past it new
 *                               ops are dropped, counted
 *   PROXYTRACE_CLOCK            x86: tsc (default, where the CPU's TSC is
 *                               invariant) or monotonic; aarch64: counter
 *                               (default) or monotonic; read by
 *                               src/trace/clock.c, checked here
 *   PROXYTRACE_STALL_MS         stall watchdog: dump every communicator when
 *                               one has ops waiting and none progressed for
 *                               this long (default 10000; 0 = off)
 *   PROXYTRACE_DUMP_SIGNAL      USR1, USR2 or a signal number: dump on that
 *                               signal (default: none)
 *   PROXYTRACE_DUMP_INTERVAL_MS dump every communicator this often (default
 *                               0 = never)
 *   PROXYTRACE_DUMP_DIR         write dumps to files there, text and JSON
 *                               (default: none, dumps go to the host log)
 *   PROXYTRACE_DUMP_MAX_MB      cap of each dump file, MiB with up to two
 *                               decimals (default 0.1, 0.01..1048576): past
 *                               it the files are rotated (sink.c)
 *   PROXYTRACE_METRICS_INTERVAL_MS  measure every step and write the
 *                               metrics files this often (default 0 = off)
 *   PROXYTRACE_METRICS_DIR      where the metrics files go (default:
 *                               PROXYTRACE_DUMP_DIR; with neither, metrics
 *                               stay off, said once)
 *   PROXYTRACE_METRICS_CHANNELS 1: also per channel (default 0)
 *   PROXYTRACE_RCCL_DIAG        BIT:STATE — the event-mask bit (15..30) and
 *                               the state (31..63) that carry RCCL's ProxyDiag
 *                               updates on a release not known (default:
 *                               unset — bits 15 and 16, states 31 and 32;
 *                               diag.c)
 *
 * A bad value never stops the host: it is reported once per process, with
 * the accepted values and the default used, and the default applies. The
 * clock in use is said once per process, at INFO level.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int pt_parse_signal(const char* s) {
  if (!s) return -1;
  if (!strncasecmp(s, "SIG", 3)) s += 3;
  if (!strcasecmp(s, "USR1")) return SIGUSR1;
  if (!strcasecmp(s, "USR2")) return SIGUSR2;
  unsigned long n;
  if (pt_parse_uint(s, 1, (unsigned long)SIGRTMAX, &n) != 0) return -1;
  /* Not the uncatchable ones, nor those the kernel sends for a fault of the
   * thread itself: chaining those after a dump would hide the fault. */
  switch ((int)n) {
    case SIGKILL: case SIGSTOP: case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP:
    case SIGSYS: case SIGABRT:
      return -1;
    default:
      return (int)n;
  }
}

enum { W_MAX_OPS, W_CLOCK, W_STALL, W_INTERVAL, W_SIGNAL, W_DIR, W_MEMORY, W_METRICS, W_MDIR, W_MNODIR, W_MCHAN,
       W_DUMP_MAX, W_DIAG, W_COUNT };
/* One "said once" flag per variable; static storage starts them clear
 * (ATOMIC_FLAG_INIT is all-zero on every target we build for). */
static atomic_flag warned[W_COUNT];

/* "12", "0.5", "0.25": hundredths of a MiB in lo..hi; 0, or -1 when not
 * such a number. */
static int parse_mb100(const char* s, unsigned long lo, unsigned long hi, unsigned long* out) {
  char whole[24];
  const char* dot = s ? strchr(s, '.') : NULL;
  size_t n = dot ? (size_t)(dot - s) : s ? strlen(s) : 0;
  if (!s || n == 0 || n >= sizeof whole) return -1;
  memcpy(whole, s, n);
  whole[n] = 0;
  unsigned long w, frac = 0;
  if (pt_parse_uint(whole, 0, hi / 100, &w) != 0) return -1;
  if (dot) {
    const char* f = dot + 1;
    size_t k = strlen(f);
    if (k < 1 || k > 2 || f[0] < '0' || f[0] > '9' || (k == 2 && (f[1] < '0' || f[1] > '9'))) return -1;
    frac = (unsigned long)(f[0] - '0') * 10 + (k == 2 ? (unsigned long)(f[1] - '0') : 0);
  }
  const unsigned long v = w * 100 + frac;
  if (v < lo || v > hi) return -1;
  *out = v;
  return 0;
}
static atomic_flag told_clock = ATOMIC_FLAG_INIT;

/* A whole number in lo..hi from `name`, or `def` (reported once). */
static uint32_t env_ms(const char* name, uint32_t def, int which, ncclDebugLogger_t log) {
  const char* v = getenv(name);
  unsigned long n;
  if (!v || !*v) return def;
  if (pt_parse_uint(v, 0, PT_MAX_DUMP_MS, &n) == 0) return (uint32_t)n;
  if (!atomic_flag_test_and_set(&warned[which]))
    PT_LOG_WARN(log,
                "proxytrace: %s='%s' is not a whole number of milliseconds in 0..%u (0 = off); "
                "using the default %u",
                name, v, PT_MAX_DUMP_MS, def);
  return def;
}

/* The step metrics: on with an interval and a directory to write to. */
static void load_metrics(pt_plugin_config* cfg, ncclDebugLogger_t log) {
  cfg->metrics_ms = env_ms("PROXYTRACE_METRICS_INTERVAL_MS", 0, W_METRICS, log);
  const char* v = getenv("PROXYTRACE_METRICS_DIR");
  if (v && *v) {
    if (strlen(v) < sizeof cfg->metrics_dir) strcpy(cfg->metrics_dir, v);
    else if (!atomic_flag_test_and_set(&warned[W_MDIR]))
      PT_LOG_WARN(log,
                  "proxytrace: PROXYTRACE_METRICS_DIR is %zu bytes long, more than the %zu a file path "
                  "inside it leaves room for; using the default (PROXYTRACE_DUMP_DIR)",
                  strlen(v), sizeof cfg->metrics_dir - 1);
  }
  if (!cfg->metrics_dir[0]) memcpy(cfg->metrics_dir, cfg->dump_dir, sizeof cfg->metrics_dir);
  int channels = 0;
  v = getenv("PROXYTRACE_METRICS_CHANNELS");
  if (v && *v) {
    if (!strcmp(v, "0") || !strcmp(v, "1")) channels = *v == '1';
    else if (!atomic_flag_test_and_set(&warned[W_MCHAN]))
      PT_LOG_WARN(log,
                  "proxytrace: PROXYTRACE_METRICS_CHANNELS='%s' is not 0 or 1; using the default 0 "
                  "(metrics per peer and direction, not per channel)",
                  v);
  }
  if (cfg->metrics_ms && !cfg->metrics_dir[0]) {
    if (!atomic_flag_test_and_set(&warned[W_MNODIR]))
      PT_LOG_WARN(log,
                  "proxytrace: PROXYTRACE_METRICS_INTERVAL_MS=%u but neither PROXYTRACE_METRICS_DIR nor "
                  "PROXYTRACE_DUMP_DIR names a directory for the metrics files; metrics stay off",
                  cfg->metrics_ms);
    cfg->metrics_ms = 0;
  }
  cfg->trace.metrics = !cfg->metrics_ms ? PT_METRICS_OFF : channels ? PT_METRICS_CHANNELS : PT_METRICS_ON;
}

int pt_parse_diag(const char* s, int* bit, int* state) {
  const char* colon = s ? strchr(s, ':') : NULL;
  char b[8];
  unsigned long nb, ns;
  if (!colon || colon - s >= (long)sizeof b) return -1;
  memcpy(b, s, (size_t)(colon - s));
  b[colon - s] = 0;
  if (pt_parse_uint(b, PT_DIAG_BIT_MIN, PT_DIAG_BIT_MAX, &nb) != 0 ||
      pt_parse_uint(colon + 1, PT_DIAG_STATE_MIN, PT_DIAG_STATE_MAX, &ns) != 0)
    return -1;
  *bit = (int)nb;
  *state = (int)ns;
  return 0;
}

/* PROXYTRACE_RCCL_DIAG: BIT:STATE, or 0:0 (the defaults, diag.c). */
static void load_diag(pt_plugin_config* cfg, ncclDebugLogger_t log) {
  const char* v = getenv("PROXYTRACE_RCCL_DIAG");
  if (!v || !*v) return;
  if (pt_parse_diag(v, &cfg->diag_bit, &cfg->diag_state) == 0) return;
  cfg->diag_bit = cfg->diag_state = 0;
  if (!atomic_flag_test_and_set(&warned[W_DIAG]))
    PT_LOG_WARN(log,
                "proxytrace: PROXYTRACE_RCCL_DIAG='%s' is not BIT:STATE with BIT in %d..%d and STATE in "
                "%d..%d (e.g. 16:32); using the default (ProxyDiag asked for as bits 15 and 16, states "
                "31 and 32 accepted)",
                v, PT_DIAG_BIT_MIN, PT_DIAG_BIT_MAX, PT_DIAG_STATE_MIN, PT_DIAG_STATE_MAX);
}

void pt_config_load(pt_plugin_config* cfg, ncclDebugLogger_t log) {
  memset(cfg, 0, sizeof *cfg);
  pt_trace_config_default(&cfg->trace);
  const char* v = getenv("PROXYTRACE_MAX_OPS");
  unsigned long n;
  if (v && *v) {
    if (pt_parse_uint(v, PT_MIN_MAX_OPS, PT_MAX_MAX_OPS, &n) == 0) {
      cfg->trace.max_ops = (uint32_t)n;
    } else if (!atomic_flag_test_and_set(&warned[W_MAX_OPS])) {
      PT_LOG_WARN(log,
                  "proxytrace: PROXYTRACE_MAX_OPS='%s' is not a whole number in %u..%u; "
                  "using the default %u",
                  v, PT_MIN_MAX_OPS, PT_MAX_MAX_OPS, PT_DEFAULT_MAX_OPS);
    }
  }
  v = getenv("PROXYTRACE_MAX_MEMORY_MB");
  if (v && *v) {
    if (pt_parse_uint(v, 1, PT_MAX_MEMORY_MB, &n) == 0) {
      pt_trace_set_memory_budget((uint64_t)n << 20);
    } else if (!atomic_flag_test_and_set(&warned[W_MEMORY])) {
      PT_LOG_WARN(log,
                  "proxytrace: PROXYTRACE_MAX_MEMORY_MB='%s' is not a whole number in 1..%u; "
                  "using the default %u",
                  v, PT_MAX_MEMORY_MB, PT_DEFAULT_MAX_MEMORY_MB);
    }
  }
  v = getenv("PROXYTRACE_CLOCK");
  if (pt_clock_parse(v) == PT_CLOCK_BAD && !atomic_flag_test_and_set(&warned[W_CLOCK])) {
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
  cfg->stall_ms = env_ms("PROXYTRACE_STALL_MS", PT_DEFAULT_STALL_MS, W_STALL, log);
  cfg->interval_ms = env_ms("PROXYTRACE_DUMP_INTERVAL_MS", 0, W_INTERVAL, log);
  v = getenv("PROXYTRACE_DUMP_SIGNAL");
  if (v && *v) {
    cfg->dump_signal = pt_parse_signal(v);
    if (cfg->dump_signal < 0) {
      cfg->dump_signal = 0;
      if (!atomic_flag_test_and_set(&warned[W_SIGNAL]))
        PT_LOG_WARN(log,
                    "proxytrace: PROXYTRACE_DUMP_SIGNAL='%s' is not USR1, USR2 or a signal number "
                    "1..%d other than KILL, STOP, SEGV, BUS, FPE, ILL, TRAP, SYS, ABRT; using the "
                    "default (no dump signal)",
                    v, SIGRTMAX);
    }
  }
  v = getenv("PROXYTRACE_DUMP_DIR");
  if (v && *v) {
    if (strlen(v) < sizeof cfg->dump_dir) {
      strcpy(cfg->dump_dir, v);
    } else if (!atomic_flag_test_and_set(&warned[W_DIR])) {
      PT_LOG_WARN(log,
                  "proxytrace: PROXYTRACE_DUMP_DIR is %zu bytes long, more than the %zu a file "
                  "path inside it leaves room for; using the default (dumps go to the host log)",
                  strlen(v), sizeof cfg->dump_dir - 1);
    }
  }
  unsigned long mb100 = PT_DEFAULT_DUMP_MAX_MB100;
  v = getenv("PROXYTRACE_DUMP_MAX_MB");
  if (v && *v && parse_mb100(v, 1, PT_MAX_DUMP_MAX_MB100, &mb100) != 0) {
    mb100 = PT_DEFAULT_DUMP_MAX_MB100;
    if (!atomic_flag_test_and_set(&warned[W_DUMP_MAX]))
      PT_LOG_WARN(log,
                  "proxytrace: PROXYTRACE_DUMP_MAX_MB='%s' is not a number of MiB in 0.01..%u with at "
                  "most two decimals; using the default %u.%02u",
                  v, PT_MAX_DUMP_MAX_MB100 / 100, PT_DEFAULT_DUMP_MAX_MB100 / 100, PT_DEFAULT_DUMP_MAX_MB100 % 100);
  }
  cfg->dump_max_bytes = ((uint64_t)mb100 << 20) / 100;
  load_metrics(cfg, log);
  load_diag(cfg, log);
}
