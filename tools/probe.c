/*
 * probe.c — `proxytrace probe`: which profiler plugin would a given NCCL or
 * RCCL release load with this environment, and why (or why not)?
 *
 * By default it runs pt_probe(): the files are read, no plugin code runs.
 * With --deep it runs pt_load() in a child process started with the same
 * environment, so a plugin's missing dependencies or crashing constructors
 * show up there and never in the caller. VAR=VALUE arguments change the
 * environment of this command (and of that child) the way env(1) does, so
 * `proxytrace probe NCCL_PROFILER_PLUGIN=x` answers for that setting.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "exec.h"
#include "job_host.h"
#include "fanout/explain.h"
#include "proxytrace/loader.h"

enum {
  EXIT_FOUND = 0,
  EXIT_INTERNAL = 1,
  EXIT_USAGE = 2,
  EXIT_NOT_FOUND = 3,
  EXIT_DISABLED = 4,
  EXIT_REFUSED = 5,
  EXIT_LOAD_ERROR = 6,
  EXIT_TOO_LONG = 7
};

static void usage(FILE* f) {
  fprintf(f,
          "usage: proxytrace probe [options] [VAR=VALUE ...]\n"
          "\n"
          "Show which profiler plugin a host would load with the current environment\n"
          "(changed by the VAR=VALUE arguments), every file it would try in order, and\n"
          "why each was refused. No plugin code runs unless --deep is given.\n"
          "\n"
          "Options:\n"
          "  --host PROFILE      nccl-2.23 ... nccl-2.32, nccl-2.27.3, rccl, rccl-2.31, or a\n"
          "                      release (2.28.9); default: the NCCL or RCCL a job here\n"
          "                      loads, found as proxytrace doctor finds it (the torch of\n"
          "                      --python, else libnccl.so.2 / librccl.so.1 on the\n"
          "                      search path), else rccl; said on stderr\n"
          "  --python EXE        the Python whose torch is asked for the default host\n"
          "                      (default python3 on PATH; `python3 -m proxytrace probe`\n"
          "                      passes its own)\n"
          "  --plugin VALUE      the NCCL_PROFILER_PLUGIN value to use\n"
          "  --path FILE         an explicit plugin path (must contain '/')\n"
          "  --name NAME         a short name: the host tries libnccl-profiler-NAME.so\n"
          "  --rccl-dir DIR      directory of the librccl in use, for the\n"
          "                      RCCL_ENABLE_PROXY_TRACE auto-load (a file: its directory)\n"
          "  --home DIR          PROXYTRACE_HOME: also search DIR/lib, DIR/lib64, DIR\n"
          "  --net-plugin VALUE  NCCL_NET_PLUGIN: the net plugin library (or list) the host\n"
          "                      loads; 2.28+ look for the profiler there when no profiler\n"
          "                      library opened (default: the environment)\n"
          "  --major N           plugin major required under --home (default: this build's)\n"
          "  -i, --ignore-environment\n"
          "                      start from an empty environment (only VAR=VALUE)\n"
          "  --no-conf           do not read the host's config files (NCCL_CONF_FILE or\n"
          "                      ~/.nccl.conf, /etc/nccl.conf; RCCL ~/.rccl.conf, /etc/rccl.conf)\n"
          "  --deep              load the plugin for real, in a child process\n"
          "  --timeout SECONDS   with --deep: give up on (and kill) a child that has not\n"
          "                      finished loading after this long (default 60)\n"
          "  --fanout            explain the fan-out profiler instead: each entry of\n"
          "                      PROXYTRACE_FANOUT_PLUGINS, the file it resolves to, the API\n"
          "                      version it would be spoken to, or why it would be refused\n"
          "  --json              print one JSON object\n"
          "  -q, --quiet         print nothing; only the exit status\n"
          "  -h, --help          this text\n"
          "An option's value may also be written --option=VALUE (needed for a value that\n"
          "starts with '-').\n"
          "\n"
          "Variables read: NCCL_PROFILER_PLUGIN, RCCL_ENABLE_PROXY_TRACE, NCCL_NET_PLUGIN,\n"
          "NCCL_CONF_FILE, HOME, NCCL_ENV_PLUGIN, LD_LIBRARY_PATH, and three that no host reads:\n"
          "PROXYTRACE_HOME (also search DIR/lib, DIR/lib64, DIR; the report says when the\n"
          "answer rests on it), PROXYTRACE_LOADER_DEBUG=1 (trace every decision on stderr)\n"
          "and, with --deep, PROXYTRACE_EMULATOR (the command that starts the child, e.g.\n"
          "qemu-aarch64, for a build of another architecture run under an emulator).\n"
          "\n"
          "Exit status:\n"
          "  0  a plugin would be loaded\n"
          "  1  internal error (out of memory; the --deep child crashed or hung past\n"
          "     --timeout: with --json a {\"status\":\"crashed\"} or {\"status\":\"hung\"}\n"
          "     object says so)\n"          "  2  usage error or contradictory request\n"
          "  3  no plugin found\n"
          "  4  disabled (NCCL_PROFILER_PLUGIN=none)\n"
          "  5  a plugin was found, but this host would not use it (wrong major,\n"
          "     no ncclProfiler_vN it knows, invalid table)\n"
          "  6  a file was found, but the dynamic loader refused it\n"
          "  7  NCCL_PROFILER_PLUGIN is longer than this host accepts\n");
}

static int exit_code(int status) {
  switch (status) {
    case PT_OK: return EXIT_FOUND;
    case PT_EINVAL: return EXIT_USAGE;
    case PT_ENOTFOUND: return EXIT_NOT_FOUND;
    case PT_EDISABLED: return EXIT_DISABLED;
    case PT_EINCOMPATIBLE:
    case PT_EBADPLUGIN: return EXIT_REFUSED;
    case PT_ELOAD: return EXIT_LOAD_ERROR;
    case PT_ENAMETOOLONG: return EXIT_TOO_LONG;
    default: return EXIT_INTERNAL;
  }
}

typedef struct {
  const char* host;
  const char* plugin;
  const char* path;
  const char* name;
  const char* rccl_dir;
  const char* home;
  const char* net_plugin;
  const char* python;
  int major;
  int timeout_s; /* --deep: seconds the child may take */
  int ignore_env, no_conf, deep, in_process, json, quiet, fanout;
  int host_given; /* --host on the command line; else found (job_host.c) */
  unsigned char* env_arg; /* env_arg[i]: argv[i] is -i, --deep or VAR=VALUE */
} options;

/* The value of an option: after '=' in "--opt=VALUE", else the next
 * argument — unless that one is an option itself (it is not swallowed). */
static const char* need_arg(int argc, char** argv, int* i, const char* inline_value) {
  if (inline_value) return inline_value;
  const char* opt = argv[*i];
  if (*i + 1 >= argc) {
    fprintf(stderr, "proxytrace probe: %s needs a value (see --help)\n", opt);
    return NULL;
  }
  const char* v = argv[*i + 1];
  if (v[0] == '-' && v[1]) {
    fprintf(stderr,
            "proxytrace probe: %s needs a value, but the next argument '%s' is an option (write "
            "%s=%s if that is really the value)\n",
            opt, v, opt, v);
    return NULL;
  }
  return argv[++*i];
}

/* Parses options; applies -i and VAR=VALUE to this process's environment
 * (single-threaded here, and the --deep child inherits it). */
static int parse(int argc, char** argv, options* o) {
  memset(o, 0, sizeof *o);
  o->host = "rccl";
  o->timeout_s = 60;
  o->env_arg = calloc((size_t)argc + 1, 1);
  if (!o->env_arg) return -1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-i") || !strcmp(argv[i], "--ignore-environment")) o->ignore_env = 1;
  }
  if (o->ignore_env) {
    /* PROXYTRACE_EMULATOR is how this program runs, not part of what it
     * answers for: it survives -i, for the --deep child (tools/exec.c). */
    const char* e = getenv("PROXYTRACE_EMULATOR");
    char* emu = e ? strdup(e) : NULL;
    clearenv();
    if (emu) setenv("PROXYTRACE_EMULATOR", emu, 1);
    free(emu);
  }
  for (int i = 1; i < argc; i++) {
    char name[64];
    const char* a = argv[i];
    const char* inline_value = NULL;
    const char* eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
    if (eq && (size_t)(eq - a) < sizeof name) { /* --opt=VALUE */
      snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
      a = name;
      inline_value = eq + 1;
    }
    const char** dst = NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "-i") || !strcmp(a, "--ignore-environment")) {
      o->env_arg[i] = 1;
      continue;
    } else if (!strcmp(a, "--host")) {
      dst = &o->host;
      o->host_given = 1;
    } else if (!strcmp(a, "--plugin")) {
      dst = &o->plugin;
    } else if (!strcmp(a, "--path")) {
      dst = &o->path;
    } else if (!strcmp(a, "--name")) {
      dst = &o->name;
    } else if (!strcmp(a, "--rccl-dir")) {
      dst = &o->rccl_dir;
    } else if (!strcmp(a, "--home")) {
      dst = &o->home;
    } else if (!strcmp(a, "--net-plugin")) {
      dst = &o->net_plugin;
    } else if (!strcmp(a, "--python")) {
      dst = &o->python;
    } else if (!strcmp(a, "--major")) {
      const char* v = need_arg(argc, argv, &i, inline_value);
      char* end;
      if (!v) return -1;
      long m = strtol(v, &end, 10);
      if (*end || m < 1 || m > 1000) {
        fprintf(stderr, "proxytrace probe: --major needs a positive number, got '%s'\n", v);
        return -1;
      }
      o->major = (int)m;
    } else if (!strcmp(a, "--timeout")) {
      o->env_arg[i] = 1; /* the child does not wait for anything */
      const char* v = need_arg(argc, argv, &i, inline_value);
      char* end;
      if (!v) return -1;
      o->env_arg[i] = 1;
      long t = strtol(v, &end, 10);
      if (*end || end == v || t < 1 || t > 86400) {
        fprintf(stderr,
                "proxytrace probe: --timeout needs whole seconds in 1..86400, got '%s' (default "
                "60)\n",
                v);
        return -1;
      }
      o->timeout_s = (int)t;
    } else if (!strcmp(a, "--no-conf")) {
      o->no_conf = 1;
    } else if (!strcmp(a, "--deep")) {
      o->deep = 1;
      o->env_arg[i] = 1;
    } else if (!strcmp(a, "--in-process")) {
      o->in_process = 1;
    } else if (!strcmp(a, "--fanout")) {
      o->fanout = 1;
    } else if (!strcmp(a, "--json")) {
      o->json = 1;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      o->quiet = 1;
    } else if (a[0] != '-' && strchr(a, '=') && a[0] != '=') {
      const char* sep = strchr(a, '=');
      char var[256];
      if ((size_t)(sep - a) >= sizeof var) {
        fprintf(stderr, "proxytrace probe: variable name too long in '%.40s...'\n", a);
        return -1;
      }
      snprintf(var, sizeof var, "%.*s", (int)(sep - a), a);
      o->env_arg[i] = 1;
      if (setenv(var, sep + 1, 1) != 0) {
        fprintf(stderr, "proxytrace probe: cannot set %s: %s\n", var, strerror(errno));
        return -1;
      }
    } else if (a[0] == '-') {
      fprintf(stderr, "proxytrace probe: unknown option '%s' (see proxytrace probe --help)\n", a);
      return -1;
    } else {
      fprintf(stderr, "proxytrace probe: unexpected argument '%s': options start with -, variables are VAR=VALUE (see proxytrace probe --help)\n", argv[i]);
      return -1;
    }
    if (dst && !(*dst = need_arg(argc, argv, &i, inline_value))) return -1;
    if (!dst && inline_value && strcmp(a, "--major") != 0) {
      fprintf(stderr, "proxytrace probe: %s takes no value\n", a);
      return -1;
    }
  }
  return 0;
}

/* Waits for the child at most `seconds`; kills it after that. 0 when it
 * ended by itself (status in *st), -1 when it was killed or lost. */
static int wait_child(pid_t pid, int seconds, int* st) {
  struct timespec t0, now, nap = {0, 10 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    pid_t r = waitpid(pid, st, WNOHANG);
    if (r == pid) return 0;
    if (r < 0 && errno != EINTR) {
      fprintf(stderr, "proxytrace probe: waitpid: %s\n", strerror(errno));
      return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double waited = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
    if (waited >= seconds) break;
    nanosleep(&nap, NULL);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, st, 0) < 0 && errno == EINTR) {
  }
  return -1;
}

/* --deep: the same command, loading in a fresh process (a fresh dynamic
 * linker state, and LD_LIBRARY_PATH as set here). */
static int run_deep(int argc, char** argv, const options* o, pt_host host) {
  char** args = calloc((size_t)argc + 5, sizeof *args);
  if (!args) return EXIT_INTERNAL;
  int n = 0;
  args[n++] = "proxytrace";
  args[n++] = "probe";
  args[n++] = "--in-process";
  for (int i = 1; i < argc; i++)
    if (!o->env_arg[i]) args[n++] = argv[i]; /* the environment is inherited */
  if (!o->host_given) { /* the host found here, not found again */
    args[n++] = "--host";
    args[n++] = (char*)o->host;
  }
  args[n] = NULL;
  /* Through PROXYTRACE_EMULATOR when this program runs under one. */
  const char* file;
  char** child = pt_exec_argv("/proc/self/exe", args, &file);
  free(args);
  if (!child) {
    fprintf(stderr, "proxytrace probe: cannot start the deep probe: %s\n", strerror(errno));
    return EXIT_INTERNAL;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "proxytrace probe: fork: %s\n", strerror(errno));
    free(child);
    return EXIT_INTERNAL;
  }
  if (pid == 0) {
    execv(file, child);
    fprintf(stderr, "proxytrace probe: cannot start the deep probe: %s\n", strerror(errno));
    _exit(EXIT_INTERNAL);
  }
  free(child);
  int st;
  if (wait_child(pid, o->timeout_s, &st) != 0) {
    const char* what = "loading the plugin did not finish: the plugin or one of its "
                       "constructors hangs (the child was killed; --timeout changes the limit)";
    if (!o->quiet) fprintf(stderr, "proxytrace probe: %s (after %d s)\n", what, o->timeout_s);
    if (o->json && !o->quiet)
      printf("{\"version\":\"%s\",\"host\":\"%s\",\"mode\":\"load\",\"status\":\"hung\","
             "\"message\":\"%s\",\"ok\":false,\"timeout_s\":%d,\"candidates\":[],"
             "\"notes\":[]}\n",
             pt_version(), pt_host_name(host), what, o->timeout_s);
    return EXIT_INTERNAL;
  }
  if (WIFSIGNALED(st)) {
    const char* what = "loading the plugin killed the process: the plugin or one of its "
                       "constructors crashes";
    if (!o->quiet) fprintf(stderr, "proxytrace probe: %s (signal %d)\n", what, WTERMSIG(st));
    if (o->json && !o->quiet) /* the answer scripts read, also for this one */
      printf("{\"version\":\"%s\",\"host\":\"%s\",\"mode\":\"load\",\"status\":\"crashed\","
             "\"message\":\"%s\",\"ok\":false,\"signal\":%d,\"candidates\":[],\"notes\":[]}\n",
             pt_version(), pt_host_name(host), what, WTERMSIG(st));
    return EXIT_INTERNAL;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_INTERNAL;
}

/* Fill the request from the environment and the options. */
static int build_request(const options* o, pt_request* req, char* rccl_dir, size_t n) {
  pt_request_init(req);
  pt_request_from_environment(req);
  if (o->no_conf) req->flags &= ~(unsigned)PT_REQ_CONF_FILES;
  req->plugin = o->plugin;
  req->path = o->path;
  req->name = o->name;
  req->home = o->home;
  req->net_plugin = o->net_plugin;
  req->major = o->major;
  if (o->rccl_dir) {
    struct stat st;
    if (stat(o->rccl_dir, &st) != 0) {
      fprintf(stderr, "proxytrace probe: --rccl-dir %s: %s\n", o->rccl_dir, strerror(errno));
      return -1;
    }
    snprintf(rccl_dir, n, "%s", o->rccl_dir);
    if (!S_ISDIR(st.st_mode)) { /* the librccl file itself: take its directory */
      char* slash = strrchr(rccl_dir, '/');
      if (slash)
        *slash = '\0';
      else
        snprintf(rccl_dir, n, ".");
    }
    req->rccl_dir = rccl_dir;
  }
  return 0;
}

static int probe_main(int argc, char** argv, const options* o) {
  pt_host host;
  if (pt_host_parse(o->host, &host) != PT_OK) {
    fprintf(stderr,
            "proxytrace probe: unknown host profile '%s': use nccl-2.23 ... nccl-2.32, "
            "nccl-2.27.3, rccl or rccl-2.31\n",
            o->host);
    return EXIT_USAGE;
  }
  char note[256];
  if (!o->quiet && !o->in_process && pt_host_parse_note(o->host, note, sizeof note))
    fprintf(stderr, "proxytrace probe: note: %s\n", note);
  if (!o->quiet && !o->in_process && o->rccl_dir &&
      !(pt_host_info_of(host)->flags & PT_HOSTF_AUTOLOAD))
    fprintf(stderr, "proxytrace probe: note: --rccl-dir does nothing for %s: only RCCL auto-loads\n",
            pt_host_name(host));
  if (o->fanout) return exit_code(pt_fanout_explain(host, o->quiet ? NULL : stdout));
  if (o->deep) return run_deep(argc, argv, o, host);

  char rccl_dir[4096];
  pt_request req;
  if (build_request(o, &req, rccl_dir, sizeof rccl_dir) != 0) return EXIT_USAGE;
  pt_result* res = NULL;
  int rc = o->in_process ? pt_load(&req, host, &res) : pt_probe(&req, host, &res);
  if (!res) {
    fprintf(stderr, "proxytrace probe: %s\n", pt_strerror(rc));
    return EXIT_INTERNAL;
  }
  if (!o->quiet) {
    if (o->json)
      pt_result_print_json(res, stdout);
    else
      pt_result_print(res, stdout);
  }
  pt_result_free(res);
  return exit_code(rc);
}

/* Whether argv names the host itself, or asks only for help: then no
 * host is looked for (and *python: the --python given, else python3).
 * Read before parse(), which changes the environment (-i, VAR=VALUE): the
 * host is found in the environment this command was started in, as the
 * job's. */
static int host_named(int argc, char** argv, const char** python) {
  int named = 0;
  *python = "python3";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--host") || !strncmp(argv[i], "--host=", 7) || !strcmp(argv[i], "-h") ||
        !strcmp(argv[i], "--help") || !strcmp(argv[i], "--in-process"))
      named = 1;
    if (!strncmp(argv[i], "--python=", 9) && argv[i][9]) *python = argv[i] + 9;
    else if (!strcmp(argv[i], "--python") && i + 1 < argc && argv[i + 1][0] && argv[i + 1][0] != '-')
      *python = argv[i + 1];
  }
  return named;
}

int pt_cmd_probe(int argc, char** argv) {
  options o;
  pt_job_host found;
  const char* python;
  int have = 0;
  if (!host_named(argc, argv, &python)) have = pt_job_host_find(python, &found) == 0;
  int rc = parse(argc, argv, &o);
  if (rc == 0 && !o.host_given) {
    if (have) o.host = found.profile;
    if (!o.quiet) {
      char none[512];
      if (!have) pt_job_host_none(none, sizeof none, python);
      fprintf(stderr, "proxytrace probe: host %s: %s%s (--host names another)\n", have ? found.profile : o.host,
              have ? found.what : none, have ? ", as proxytrace doctor finds it" : "; the default");
    }
  }
  rc = rc == 0 ? probe_main(argc, argv, &o) : EXIT_USAGE;
  free(o.env_arg);
  return rc;
}
