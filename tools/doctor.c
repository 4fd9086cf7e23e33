/*
 * doctor.c — `proxytrace doctor`: run inside a job's environment (the same
 * shell, modules, conda or venv, variables), it says whether that job would
 * record and keep its proxy dumps, one line per check:
 *
 *   host       the NCCL or RCCL the job will load: torch's own when torch
 *              is importable (torch.cuda.nccl.version(), torch.version.hip),
 *              else libnccl.so.2 / librccl.so.1 as the dynamic linker finds
 *              them (ncclGetVersion), or --host
 *   plugin     the loader's answer for that release (pt_probe: the files
 *              only, no plugin code runs): which file, which ncclProfiler_vN
 *   dump dir   PROXYTRACE_DUMP_DIR (and PROXYTRACE_METRICS_DIR): exists,
 *              writable, and whether its filesystem is one other nodes can
 *              read (NFS, Lustre, GPFS, BeeGFS, CephFS, ...) or node-local
 *   log level  NCCL_DEBUG as RCCL needs it (WARN or more verbose)
 *   variables  every PROXYTRACE_* set, a name the code does not read refused,
 *              each value judged by the plugin's own reading of its
 *              environment (src/plugin/config.c, run here with a logger
 *              that keeps what it says): a value it rejects fails
 *   clock      the tick source the plugin would use (PROXYTRACE_CLOCK), and
 *              whether the system clock is synchronised (dump times of
 *              different nodes are compared)
 *
 * Each line starts with "ok", "warn" or "FAIL"; a FAIL line ends with the
 * fix. What comes from the environment or the command line (values, names,
 * --host) is printed escaped (src/escape/): no control byte or invalid
 * UTF-8 reaches the terminal. Exit status 0 when nothing failed, 1 otherwise, 2 for a bad option.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/timex.h>
#include <unistd.h>

#include "commands.h"
#include "escape/escape.h"
#include "job_host.h"
#include "plugin/plugin.h"
#include "proxytrace/loader.h"
#include "trace/clock.h"

extern char** environ;

/* Every PROXYTRACE_* variable proxytrace's code reads (README, "Environment"). */
static const char* const known_vars[] = {
    "PROXYTRACE_MAX_OPS",        "PROXYTRACE_MAX_MEMORY_MB",       "PROXYTRACE_CLOCK",
    "PROXYTRACE_STALL_MS",       "PROXYTRACE_DUMP_SIGNAL",         "PROXYTRACE_DUMP_INTERVAL_MS",
    "PROXYTRACE_DUMP_DIR",       "PROXYTRACE_DUMP_MAX_MB",         "PROXYTRACE_METRICS_INTERVAL_MS",
    "PROXYTRACE_METRICS_DIR",    "PROXYTRACE_METRICS_CHANNELS",    "PROXYTRACE_RCCL_DIAG",
    "PROXYTRACE_HOME",           "PROXYTRACE_LOADER_DEBUG",        "PROXYTRACE_EMULATOR",
    "PROXYTRACE_LOADER_LIBRARY", "PROXYTRACE_CLI",            "PROXYTRACE_FANOUT_PLUGINS",
    "PROXYTRACE_FANOUT_HOST",
};

static int failures;

static void say(const char* level, const char* check, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(const char* level, const char* check, const char* fmt, ...) {
  /* values from the environment, torch and --host are in the line:
   * escaped as a whole, one rule for every check */
  char line[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  printf("%-4s %-10s ", level, check);
  pt_text_str(stdout, line);
  putchar('\n');
  if (!strcmp(level, "FAIL")) failures++;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: proxytrace doctor [options]\n"
          "\n"
          "Run it inside the job's environment (same shell, modules, venv, variables):\n"
          "checks that the job would load the plugin and keep its dumps, one line per\n"
          "check, each FAIL with its fix.\n"
          "\n"
          "  host       the NCCL/RCCL the job loads: torch's own when torch is importable\n"
          "             by the Python below, else libnccl.so.2 / librccl.so.1 on the\n"
          "             dynamic linker's search path (LD_LIBRARY_PATH, ld.so.cache)\n"
          "  plugin     whether that release loads the plugin, which file, which API\n"
          "             (the loader's answer, as `proxytrace probe`; no plugin code runs)\n"
          "  dump dir   PROXYTRACE_DUMP_DIR and PROXYTRACE_METRICS_DIR: exist, writable,\n"
          "             shared with other nodes (NFS, Lustre, ...) or node-local\n"
          "  log level  NCCL_DEBUG: RCCL logs its dumps at WARN\n"
          "  variables  every PROXYTRACE_* set; a name proxytrace does not read fails\n"
          "  clock      the plugin's tick source; the system clock's synchronisation\n"
          "\n"
          "Options:\n"
          "  --host PROFILE   the release instead of finding it (as `probe --host`)\n"
          "  --python EXE     the Python whose torch is asked (default python3 on PATH;\n"
          "                   `python3 -m proxytrace doctor` passes its own)\n"
          "  --no-torch       do not ask Python for torch\n"
          "  --rccl-dir DIR   the directory of the librccl in use (RCCL's auto-load)\n"
          "  -h, --help       this text\n"
          "\n"
          "Exit status: 0 no check failed (warn lines are advice), 1 a check failed,\n"
          "2 a bad option.\n");
}

/* Filesystems other nodes can read (statfs f_type), by name. */
static const char* fs_name(long type, int* shared) {
  static const struct {
    long type;
    const char* name;
    int shared; /* 1 shared, 0 node-local, -1 cannot tell */
  } fs[] = {
      {0x6969, "nfs", 1},          {0xFF534D42, "cifs", 1},   {0xFE534D42, "smb2", 1},
      {0x0BD00BD0, "lustre", 1},   {0x47504653, "gpfs", 1},   {0x19830326, "beegfs", 1},
      {0x00C36400, "cephfs", 1},   {0x6B414653, "afs", 1},    {0x01021997, "9p", -1},
      {0x65735546, "fuse", -1},    {0x01021994, "tmpfs", 0},  {0xEF53, "ext2/3/4", 0},
      {0x58465342, "xfs", 0},      {0x9123683E, "btrfs", 0},  {0x794C7630, "overlay", 0},
      {0x2FC12FC1, "zfs", -1},     {0x858458F6, "ramfs", 0},  {0x73717368, "squashfs", 0},
  };
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
    if ((unsigned long)fs[i].type == ((unsigned long)type & 0xFFFFFFFFul)) {
      *shared = fs[i].shared;
      return fs[i].name;
    }
  *shared = -1;
  return NULL;
}

static void check_dir(const char* var, const char* fallback_note) {
  const char* dir = getenv(var);
  if (!dir || !dir[0]) {
    if (fallback_note) say("warn", "dump dir", "%s is unset: %s", var, fallback_note);
    return;
  }
  struct stat st;
  if (stat(dir, &st) != 0) {
    say("FAIL", "dump dir", "%s=%s: %s — fix: mkdir -p '%s' (on every node) before the job starts", var, dir,
        strerror(errno), dir);
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    say("FAIL", "dump dir", "%s=%s is not a directory — fix: name a directory", var, dir);
    return;
  }
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/.proxytrace-doctor-XXXXXX", dir);
  int fd = mkstemp(probe);
  if (fd < 0) {
    say("FAIL", "dump dir", "%s=%s is not writable (%s) — fix: a directory this user can write", var, dir,
        strerror(errno));
    return;
  }
  close(fd);
  unlink(probe);
  struct statfs sf;
  int shared = -1;
  const char* name = statfs(dir, &sf) == 0 ? fs_name((long)sf.f_type, &shared) : NULL;
  char fsw[64];
  if (name) snprintf(fsw, sizeof fsw, "%s", name);
  else snprintf(fsw, sizeof fsw, "filesystem type 0x%lx", statfs(dir, &sf) == 0 ? (unsigned long)sf.f_type : 0ul);
  if (shared == 1)
    say("ok", "dump dir", "%s=%s: writable, shared (%s): other nodes read it too; give each node a folder of its own",
        var, dir, fsw);
  else if (shared == 0)
    say("warn", "dump dir",
        "%s=%s: writable, node-local (%s): other nodes cannot read it — for a job of several nodes, copy every"
        " node's folder to one place before `proxytrace analyze` (or name a shared folder)",
        var, dir, fsw);
  else
    say("ok", "dump dir", "%s=%s: writable (%s): cannot tell whether other nodes read it", var, dir, fsw);
}

static void check_plugin(const pt_job_host* h, const char* rccl_dir_opt) {
  pt_host host;
  if (pt_host_parse(h->profile, &host) != PT_OK) {
    say("FAIL", "plugin",
        "%s loads no profiler plugin proxytrace knows (NCCL 2.23 or later, RCCL) — fix: a release from NCCL 2.23 on"
        " (or --host PROFILE if the job loads another one)",
        h->what);
    return;
  }
  pt_request req;
  pt_request_init(&req);
  pt_request_from_environment(&req);
  const char* rd = rccl_dir_opt ? rccl_dir_opt : h->rccl_dir[0] ? h->rccl_dir : NULL;
  if (rd) req.rccl_dir = rd;
  pt_result* res = NULL;
  int rc = pt_probe(&req, host, &res);
  if (!res) {
    say("FAIL", "plugin", "the loader ran out of memory");
    return;
  }
  const int rccl = pt_host_info_of(host) && (pt_host_info_of(host)->flags & PT_HOSTF_AUTOLOAD);
  if (rc == PT_OK && res->via_home) {
    /* found, but only where the job's NCCL will not look: it will not load */
    const char* file = res->realpath ? res->realpath : res->path;
    say("FAIL", "plugin",
        "%s would load no plugin: %s is found only through PROXYTRACE_HOME, which NCCL and RCCL never read — fix: "
        "export NCCL_PROFILER_PLUGIN=%s",
        pt_host_name(host), file, file);
  } else if (rc == PT_OK) {
    say("ok", "plugin", "%s loads %s (ncclProfiler_v%d%s)", pt_host_name(host), res->realpath ? res->realpath : res->path,
        res->api_version, res->has_dump_hook ? ", with the ProxyTrace dump hook" : "");
  } else {
    const char* why = "";
    for (size_t i = 0; i < res->n_candidates; i++)
      if (res->candidates[i].outcome != PT_CAND_NOT_FOUND && res->candidates[i].reason && res->candidates[i].reason[0]) {
        why = res->candidates[i].reason;
        break;
      }
    say("FAIL", "plugin", "%s loads no profiler plugin (%s%s%s) — fix: %s", pt_host_name(host), pt_err_name(rc),
        why[0] ? ": " : "", why,
        rccl ? "export RCCL_ENABLE_PROXY_TRACE=1 with librccl-profiler-proxytrace.so beside librccl, or "
               "NCCL_PROFILER_PLUGIN=/path/to/librccl-profiler-proxytrace.so"
             : "export NCCL_PROFILER_PLUGIN=/path/to/librccl-profiler-proxytrace.so (`proxytrace probe` says why each"
               " file was refused)");
  }
  pt_result_free(res);
}

static void check_log_level(const pt_job_host* h) {
  const char* d = getenv("NCCL_DEBUG");
  int warn_or_more = d && (!strcasecmp(d, "WARN") || !strcasecmp(d, "INFO") || !strcasecmp(d, "TRACE"));
  const char* dir = getenv("PROXYTRACE_DUMP_DIR");
  int rccl = !strcmp(h->profile, "rccl");
  if (warn_or_more) say("ok", "log level", "NCCL_DEBUG=%s: the plugin's warnings and log dumps show", d);
  else if (rccl)
    say("FAIL", "log level", "NCCL_DEBUG=%s: RCCL logs its ProxyTrace dumps and the plugin's warnings at WARN — fix: export NCCL_DEBUG=WARN",
        d ? d : "(unset)");
  else if (!dir || !dir[0])
    say("warn", "log level", "NCCL_DEBUG=%s and no PROXYTRACE_DUMP_DIR: dumps go to NCCL's log, shown from WARN on —"
                             " export PROXYTRACE_DUMP_DIR (or NCCL_DEBUG=WARN)",
        d ? d : "(unset)");
  else say("ok", "log level", "NCCL_DEBUG=%s: not needed, the dumps go to PROXYTRACE_DUMP_DIR", d ? d : "(unset)");
}

/* What the plugin's reading of its environment (pt_config_load, the one
 * parser of its variables) warns about, kept: each warning names its
 * variable first ("proxytrace: NAME='value' is not ..."). */
#define SAID_MAX 32
static char plugin_said[SAID_MAX][768];
static int n_said;

static void keep_warning(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
                         ...) {
  (void)flags, (void)file, (void)line;
  if ((int)level != pt_host_warn_level(keep_warning) || n_said == SAID_MAX) return; /* its INFO line: the clock */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(plugin_said[n_said++], sizeof plugin_said[0], fmt, ap);
  va_end(ap);
}

/* The plugin's warning about variable name[0..len), without its
 * "proxytrace: " prefix, or NULL. */
static const char* plugin_warning(const char* name, size_t len) {
  for (int i = 0; i < n_said; i++) {
    const char* w = plugin_said[i];
    if (!strncmp(w, "proxytrace: ", 12)) w += 12;
    if (!strncmp(w, name, len) && (w[len] == '=' || w[len] == ' ')) return w;
  }
  return NULL;
}

static void check_variables(void) {
  pt_plugin_config cfg;
  n_said = 0;
  pt_config_load(&cfg, keep_warning);
  int n = 0;
  for (char** e = environ; *e; e++) {
    if (strncmp(*e, "PROXYTRACE_", 11) != 0) continue;
    const char* eq = strchr(*e, '=');
    size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    int known = 0;
    for (size_t i = 0; i < sizeof known_vars / sizeof known_vars[0] && !known; i++)
      known = strlen(known_vars[i]) == len && !strncmp(known_vars[i], *e, len);
    n++;
    const char* said = known ? plugin_warning(*e, len) : NULL;
    if (!known)
      say("FAIL", "variables", "%.*s is not a variable proxytrace reads — fix: check the name (README, \"Environment\")",
          (int)len, *e);
    else if (!strncmp(*e, "PROXYTRACE_CLOCK=", 17) && pt_clock_parse(eq + 1) == PT_CLOCK_BAD)
      say("FAIL", "variables", "PROXYTRACE_CLOCK=%s is not a clock of this machine — fix: %s, or unset it", eq + 1,
          pt_clock_accepted());
    else if (said && strstr(said, "using the default"))
      say("FAIL", "variables", "%s rejected by the plugin: %s — fix: a value it accepts, or unset it", *e, said);
    else if (said)
      say("warn", "variables", "%s: %s", *e, said);
    else
      say("ok", "variables", "%s", *e);
  }
  if (!n) say("ok", "variables", "no PROXYTRACE_* variable set: every default applies");
}

static void check_clock(void) {
  char what[160];
  pt_clock_init();
  pt_clock_describe(what, sizeof what);
  struct timex tx;
  memset(&tx, 0, sizeof tx);
  int state = adjtimex(&tx);
  if (state == TIME_ERROR || (state >= 0 && (tx.status & STA_UNSYNC)))
    say("warn", "clock",
        "%s; the system clock is not synchronised (NTP/PTP): dump times of different nodes may disagree"
        " — fix: chronyd or ntpd on every node",
        what);
  else if (state < 0)
    say("ok", "clock", "%s; synchronisation of the system clock unknown (%s)", what, strerror(errno));
  else
    say("ok", "clock", "%s; system clock synchronised (max error %ld us)", what, tx.maxerror);
}

int pt_cmd_doctor(int argc, char** argv) {
  const char* host_opt = NULL;
  const char* python = "python3";
  const char* rccl_dir = NULL;
  int torch = 1;
  for (int i = 1; i < argc; i++) {
    const char* s = argv[i];
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(s, "--no-torch")) {
      torch = 0;
    } else if (!strcmp(s, "--host") || !strcmp(s, "--python") || !strcmp(s, "--rccl-dir")) {
      if (i + 1 >= argc || !argv[i + 1][0]) {
        fprintf(stderr, "proxytrace doctor: %s needs a value (see --help)\n", s);
        return 2;
      }
      const char* v = argv[++i];
      if (!strcmp(s, "--host")) host_opt = v;
      else if (!strcmp(s, "--python")) python = v;
      else rccl_dir = v;
    } else {
      fprintf(stderr, "proxytrace doctor: unknown option '%s' (see --help)\n", PT_TEXT(s, 256));
      return 2;
    }
  }
  if (host_opt) {
    pt_host h;
    if (pt_host_parse(host_opt, &h) != PT_OK) {
      fprintf(stderr, "proxytrace doctor: --host %s is not a profile (see proxytrace probe --help)\n",
              PT_TEXT(host_opt, 256));
      return 2;
    }
  }
  failures = 0;
  pt_job_host h;
  memset(&h, 0, sizeof h);
  if (host_opt) {
    snprintf(h.profile, sizeof h.profile, "%s", host_opt);
    snprintf(h.what, sizeof h.what, "%s (--host)", host_opt);
  } else if (pt_job_host_find(torch ? python : NULL, &h) != 0) {
    char none[512];
    pt_job_host_none(none, sizeof none, torch ? python : NULL);
    say("FAIL", "host",
        "%s — fix: run this in the job's environment (modules, venv, LD_LIBRARY_PATH), or name the release with --host",
        none);
  }
  if (h.profile[0]) {
    say("ok", "host", "%s", h.what);
    check_plugin(&h, rccl_dir);
    check_log_level(&h);
  }
  check_dir("PROXYTRACE_DUMP_DIR", "dumps go to the host's log only — export PROXYTRACE_DUMP_DIR=DIR"
                                   " for dump files `proxytrace analyze` reads");
  check_dir("PROXYTRACE_METRICS_DIR", NULL);
  check_variables();
  check_clock();
  printf("%s\n", failures ? "doctor: a check failed; fix it before the job starts" : "doctor: ready");
  fflush(stdout);
  return failures ? 1 : 0;
}
