/*
 * fuzz_env.c — libFuzzer target: every environment variable the plugin and
 * the loader parse, with arbitrary values, and the nccl.conf file with
 * arbitrary contents.
 *
 * The input is split at NUL bytes into the values of, in order:
 * PROXYTRACE_MAX_OPS, PROXYTRACE_CLOCK, PROXYTRACE_STALL_MS,
 * PROXYTRACE_DUMP_INTERVAL_MS, PROXYTRACE_DUMP_SIGNAL, PROXYTRACE_DUMP_DIR,
 * NCCL_PROFILER_PLUGIN,
 * RCCL_ENABLE_PROXY_TRACE, PROXYTRACE_HOME, LD_LIBRARY_PATH,
 * PROXYTRACE_LOADER_DEBUG, NCCL_NET_PLUGIN, NCCL_ENV_PLUGIN, a host profile
 * name, and the contents of the config files (NCCL_CONF_FILE's, or with
 * HOME pointed at a scratch directory ~/.nccl.conf and RCCL's
 * ~/.rccl.conf). A missing field leaves its variable unset.
 *
 * Checks, besides no crash, leak or sanitizer report: the plugin's numbers
 * equal a plain reference parse (a whole decimal in range, else the
 * default); the loader's version and parameter parsers agree with their
 * references; a probe always gives a result whose status is its return
 * value and whose candidates all have a known outcome and source, and its
 * text and JSON reports print. PROXYTRACE_LOADER_DEBUG output is sent to
 * /dev/null while the probe runs (set PT_FUZZ_VERBOSE=1 to see it).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "fuzz_result.h"
#include "loader/internal.h"
#include "plugin/plugin.h"

enum {
  F_MAX_OPS, F_CLOCK, F_STALL, F_INTERVAL, F_SIGNAL, F_DIR, F_PLUGIN, F_RCCL, F_HOME, F_LDPATH,
  F_DEBUG, F_NET, F_ENVP, F_HOST, F_CONF, F_NUM
};
static const char* const vars[F_CONF] = {
    "PROXYTRACE_MAX_OPS",      "PROXYTRACE_CLOCK",        "PROXYTRACE_STALL_MS",
    "PROXYTRACE_DUMP_INTERVAL_MS", "PROXYTRACE_DUMP_SIGNAL", "PROXYTRACE_DUMP_DIR",
    "NCCL_PROFILER_PLUGIN",    "RCCL_ENABLE_PROXY_TRACE", "PROXYTRACE_HOME",
    "LD_LIBRARY_PATH",         "PROXYTRACE_LOADER_DEBUG", "NCCL_NET_PLUGIN",
    "NCCL_ENV_PLUGIN",         NULL};

static char scratch[64];
static char conf_path[128], rccl_conf_path[128];
static int devnull = -1;

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc, (void)argv;
  snprintf(scratch, sizeof scratch, "/tmp/pt-fuzz-env.XXXXXX");
  if (!mkdtemp(scratch)) abort();
  snprintf(conf_path, sizeof conf_path, "%s/.nccl.conf", scratch);
  snprintf(rccl_conf_path, sizeof rccl_conf_path, "%s/.rccl.conf", scratch);
  setenv("HOME", scratch, 1);
  devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  return 0;
}

/* A whole decimal number in [lo, hi], as PROXYTRACE_* numbers must be. */
static int ref_parse_uint(const char* s, unsigned long lo, unsigned long hi, unsigned long* out) {
  if (!*s) return -1;
  unsigned long v = 0;
  for (const char* p = s; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    unsigned d = (unsigned)(*p - '0');
    if (v > (ULONG_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  if (v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* "N", "N.N" or "N.N.N", each N a decimal that fits an unsigned long. */
static int ref_version(const char* s, unsigned long v[3]) {
  int n = 0;
  const char* p = s;
  for (;;) {
    if (n == 3 || !isdigit((unsigned char)*p)) return 0;
    unsigned long x = 0;
    for (; isdigit((unsigned char)*p); p++) {
      unsigned d = (unsigned)(*p - '0');
      if (x > (ULONG_MAX - d) / 10) return 0;
      x = x * 10 + d;
    }
    v[n++] = x;
    if (!*p) return n;
    if (*p++ != '.') return 0;
  }
}

static void warn_sink(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                      const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

/* A whole decimal in [lo, hi] when set and not empty, else `def`. */
static unsigned long ref_number(const char* v, unsigned long lo, unsigned long hi,
                                unsigned long def) {
  unsigned long n;
  return v && *v && ref_parse_uint(v, lo, hi, &n) == 0 ? n : def;
}

/* USR1, USR2 (with or without SIG, any case), or a number 1..SIGRTMAX that
 * is not one the kernel sends for a fault or that cannot be caught; else 0. */
static int ref_signal(const char* v) {
  if (!v || !*v) return 0;
  if (!strncasecmp(v, "SIG", 3)) v += 3;
  if (!strcasecmp(v, "USR1")) return SIGUSR1;
  if (!strcasecmp(v, "USR2")) return SIGUSR2;
  unsigned long n;
  if (ref_parse_uint(v, 1, (unsigned long)SIGRTMAX, &n) != 0) return 0;
  static const int refused[] = {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE,
                                SIGILL,  SIGTRAP, SIGSYS,  SIGABRT};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    if ((int)n == refused[i]) return 0;
  return (int)n;
}

static void check_plugin_config(const char* const* field) {
  pt_plugin_config cfg;
  pt_config_load(&cfg, warn_sink);
  CHECK(cfg.trace.max_ops ==
        ref_number(field[F_MAX_OPS], PT_MIN_MAX_OPS, PT_MAX_MAX_OPS, PT_DEFAULT_MAX_OPS));
  CHECK(cfg.stall_ms == ref_number(field[F_STALL], 0, PT_MAX_DUMP_MS, PT_DEFAULT_STALL_MS));
  CHECK(cfg.interval_ms == ref_number(field[F_INTERVAL], 0, PT_MAX_DUMP_MS, 0));
  CHECK(cfg.dump_signal == ref_signal(field[F_SIGNAL]));
  const char* dir = field[F_DIR];
  if (dir && *dir && strlen(dir) < sizeof cfg.dump_dir) CHECK(!strcmp(cfg.dump_dir, dir));
  else CHECK(cfg.dump_dir[0] == '\0');
}

static void check_parsers(const char* s) {
  unsigned long a, b;
  const unsigned long lo = s[0] ? (unsigned char)s[0] : 0, hi = lo * 1000 + 7;
  const int ra = pt_parse_uint(s, lo, hi, &a), rb = ref_parse_uint(s, lo, hi, &b);
  CHECK(ra == rb);
  if (ra == 0) CHECK(a == b);
  unsigned long v1[3], v2[3];
  const int n1 = pt_version_parse(s, v1), n2 = ref_version(s, v2);
  CHECK(n1 == n2);
  for (int i = 0; i < n1; i++) CHECK(v1[i] == v2[i]);
  /* RCCL_ENABLE_PROXY_TRACE and friends: what the host's strtoll(text, NULL,
   * 0) gives, the default on overflow. */
  long long p;
  const int kind = pt_parse_param(s, 42, &p);
  char* end;
  errno = 0;
  const long long ref = strtoll(s, &end, 0);
  if (errno == ERANGE) CHECK(kind == PT_PARAM_RANGE && p == 42);
  else if (end == s) CHECK(kind == PT_PARAM_NO_DIGITS && p == 0);
  else CHECK(p == ref && kind == (*end ? PT_PARAM_TRAILING : PT_PARAM_NUMBER));
}

static void check_probe(const char* host_text) {
  pt_host host = PT_HOST_RCCL;
  if (host_text && pt_host_parse(host_text, &host) != PT_OK) host = PT_HOST_RCCL;
  pt_request req;
  pt_request_init(&req);
  pt_request_from_environment(&req);
  const int quiet = !getenv("PT_FUZZ_VERBOSE") && devnull >= 0;
  int saved = quiet ? dup(2) : -1;
  if (saved >= 0) dup2(devnull, 2);
  pt_result* res = NULL;
  const int rc = pt_probe(&req, host, &res);
  if (saved >= 0) {
    dup2(saved, 2);
    close(saved);
  }
  if (rc == PT_ENOMEM && !res) return;
  fz_check_result(res, rc);
  pt_result_free(res);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  const char* field[F_NUM] = {0};
  char* p = buf;
  for (int i = 0; i < F_NUM && p <= buf + size; i++) {
    field[i] = p;
    p += strlen(p) + 1;
  }
  for (int i = 0; i < F_CONF; i++) {
    if (!vars[i]) continue;
    if (field[i]) setenv(vars[i], field[i], 1);
    else unsetenv(vars[i]);
  }
  if (field[F_CONF]) {
    for (int i = 0; i < 2; i++) {
      FILE* f = fopen(i ? rccl_conf_path : conf_path, "w");
      if (!f) continue;
      fputs(field[F_CONF], f);
      fclose(f);
    }
    setenv("NCCL_CONF_FILE", (field[F_CONF][0] & 1) ? conf_path : "", 1);
  } else {
    unlink(conf_path);
    unlink(rccl_conf_path);
    unsetenv("NCCL_CONF_FILE");
  }
  check_plugin_config(field);
  for (int i = 0; i < F_NUM; i++)
    if (field[i]) check_parsers(field[i]);
  check_probe(field[F_HOST]);
  free(buf);
  return 0;
}
