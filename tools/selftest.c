/*
 * selftest.c — `proxytrace selftest`: a tiny job of N processes whose data
 * goes through NCCL's network proxy, with the plugin loaded, checked end to
 * end (healthy, a GPU stall, a rank that never enters, the cost).
 *
 * The checks are Python (python/proxytrace/_selftest.py): the jobs are
 * torch.distributed processes, and the same checks run on the emulator
 * with --emulate. This command only finds a Python and the package and
 * runs `PYTHON -m proxytrace selftest ARGS` in its place, with this program
 * as the package's `proxytrace` command (PROXYTRACE_CLI, for analyze and
 * sim) and, unless --plugin says another, the plugin of this build or
 * installation — so the checks judge the build that was asked.
 *
 * The package is looked for where this program's other parts are, from
 * its own folder: ../python (the build folder of a source checkout), then
 * ../lib/python3/dist-packages and ../lib/python3.X/{dist,site}-packages
 * (`make install`); the first that holds it goes first on PYTHONPATH, else
 * the interpreter's own path (pip) is trusted. No Python, or a Python that
 * cannot import the package, is the selftest's "cannot run here" status.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "escape/escape.h"
#include "sim/sim.h"

#define SELFTEST_CANNOT_RUN 3 /* proxytrace/_selftest.py EXIT_CANNOT_RUN */

static void usage(FILE* f) {
  fprintf(f,
          "usage: proxytrace selftest [options]\n"
          "\n"
          "Runs a tiny job of N processes whose data goes through NCCL's network proxy\n"
          "(each process poses as a host: NCCL_HOSTID, P2P and SHM off, sockets over\n"
          "loopback, so one GPU is enough) with the plugin loaded, and checks end to end,\n"
          "one line per check, each FAIL with its fix:\n"
          "\n"
          "  healthy      every process's dumps show its network ops, counters consistent,\n"
          "               nothing dropped; the step metrics agree with the bytes the\n"
          "               all-reduces carried; analyze says ok\n"
          "  gpu-stall    one rank's GPU spins before a collective, longer than the stall\n"
          "               time: the watchdog dumps while it hangs; analyze names that\n"
          "               rank, its GPU not producing data (or never taking the\n"
          "               collective up), the channel, no other culprit\n"
          "  not-entered  one rank sleeps instead of calling the collective: analyze names\n"
          "               it not_entered\n"
          "  cost         the same all-reduce loop without and with the plugin, side by\n"
          "               side, several rounds\n"
          "\n"
          "It needs Python with torch (CUDA or ROCm build, NCCL/RCCL) and a GPU; --emulate\n"
          "runs the same checks on the emulator (proxytrace sim), anywhere.\n"
          "\n"
          "Options:\n"
          "  --emulate          run the jobs on the emulator, not torch + NCCL on a GPU\n"
          "  --ranks N          processes of each job, 2..8 (default 2)\n"
          "  --checks LIST      the checks to run, comma-separated (default\n"
          "                     healthy,gpu-stall,not-entered,cost)\n"
          "  --out DIR          each job's dumps, logs and results (default selftest-out;\n"
          "                     a folder of other files is refused)\n"
          "  --json FILE        verdicts and figures as JSON (default OUT/selftest.json)\n"
          "  --stall-ms MS      PROXYTRACE_STALL_MS of the jobs, 100..60000 (default 2000)\n"
          "  --hang-s S         how long a planted fault holds the job (default: the stall\n"
          "                     time x 3, at least the stall time + 6 s)\n"
          "  --rounds N         cost: rounds of the timed loop without and with the plugin,\n"
          "                     1..20 (default 3)\n"
          "  --max-overhead P   cost: the most the plugin may add to the loop's best time,\n"
          "                     in %% (default 10)\n"
          "  --plugin PATH      the plugin to load (default: the one of this build or\n"
          "                     installation)\n"
          "  --host PROFILE     --emulate: the release it plays (default nccl-2.28)\n"
          "  --python EXE       the Python that runs it, with the job's torch (default\n"
          "                     python3 on PATH; python3 -m proxytrace selftest: itself)\n"
          "  -h, --help         this text\n"
          "\n"
          "Exit status: 0 every check passed (a skipped check says why), 1 a check failed,\n"
          "2 a bad option, 3 it cannot run here (no Python with the proxytrace package, no\n"
          "torch, no GPU, no NCCL in torch, no plugin).\n");
}

/* The first folder from this program's that holds proxytrace/_selftest.py. */
static int find_package(char* out, size_t n) {
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) return 0;
  exe[k] = '\0';
  const char* dir = dirname(exe);
  static const char* const places[] = {"/../python", "/../lib/python3/dist-packages",
                                       "/../lib/python3.*/dist-packages", "/../lib/python3.*/site-packages"};
  for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
    char pattern[PATH_MAX + 64];
    snprintf(pattern, sizeof pattern, "%s%s/proxytrace/_selftest.py", dir, places[i]);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0) continue;
    char real[PATH_MAX];
    int found = g.gl_pathc > 0 && realpath(g.gl_pathv[0], real) != NULL;
    globfree(&g);
    if (!found) continue;
    /* .../proxytrace/_selftest.py -> ... */
    *strrchr(real, '/') = '\0';
    *strrchr(real, '/') = '\0';
    snprintf(out, n, "%s", real);
    return 1;
  }
  return 0;
}

/* Runs argv, its output discarded; its exit status, or 127 with errno set
 * when it could not be started (errno 0 otherwise). */
static int run_and_wait(char* const argv[]) {
  int pipefd[2]; /* the child's exec error comes back through it (close-on-exec) */
  if (pipe2(pipefd, O_CLOEXEC) != 0) return 127;
  pid_t pid = fork();
  if (pid < 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    return 127;
  }
  if (pid == 0) {
    close(pipefd[0]);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) { /* a failed import's traceback: the message below says it */
      dup2(null, 1);
      dup2(null, 2);
      close(null);
    }
    execvp(argv[0], argv);
    int e = errno;
    if (write(pipefd[1], &e, sizeof e) < 0) _exit(127);
    _exit(127);
  }
  close(pipefd[1]);
  int e = 0;
  ssize_t got = read(pipefd[0], &e, sizeof e);
  close(pipefd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (got == (ssize_t)sizeof e) {
    errno = e;
    return 127;
  }
  errno = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int pt_cmd_selftest(int argc, char** argv) {
  const char* python = "python3";
  int has_plugin = 0;
  /* the options this command reads; every other goes to the Python side */
  char** pass = calloc((size_t)argc + 8, sizeof *pass);
  if (!pass) {
    fprintf(stderr, "proxytrace selftest: out of memory\n");
    return 2;
  }
  int np = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      free(pass);
      return 0;
    }
    if (!strcmp(a, "--python")) {
      if (i + 1 >= argc || !argv[i + 1][0]) {
        fprintf(stderr, "proxytrace selftest: --python needs a value (see --help)\n");
        free(pass);
        return 2;
      }
      python = argv[++i];
      continue;
    }
    if (!strncmp(a, "--python=", 9)) {
      python = a + 9;
      if (!*python) {
        fprintf(stderr, "proxytrace selftest: --python needs a value (see --help)\n");
        free(pass);
        return 2;
      }
      continue;
    }
    if (!strcmp(a, "--plugin") || !strncmp(a, "--plugin=", 9)) has_plugin = 1;
    pass[np++] = argv[i];
  }

  char pkg[PATH_MAX] = "";
  if (find_package(pkg, sizeof pkg)) {
    const char* old = getenv("PYTHONPATH");
    size_t len = strlen(pkg) + (old ? strlen(old) + 1 : 0) + 1;
    char* pp = malloc(len);
    if (pp) {
      snprintf(pp, len, "%s%s%s", pkg, old && *old ? ":" : "", old ? old : "");
      setenv("PYTHONPATH", pp, 1);
      free(pp);
    }
  }
  char self[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k > 0) {
    self[k] = '\0';
    setenv("PROXYTRACE_CLI", self, 0); /* one set by the user wins */
  }
  char plugin[PATH_MAX];
  char* extra[2] = {NULL, NULL};
  if (!has_plugin && pt_sim_own_plugin(plugin, sizeof plugin)) {
    extra[0] = "--plugin";
    extra[1] = plugin;
  }

  char* probe[] = {(char*)python, "-c", "import proxytrace._selftest", NULL};
  int rc = run_and_wait(probe);
  if (rc == 127 && errno) {
    fprintf(stderr,
            "proxytrace selftest: cannot run here: no Python '%s' (%s) — fix: install python3, or name the job's "
            "Python with --python EXE\n",
            PT_TEXT(python, 512), strerror(errno));
    free(pass);
    return SELFTEST_CANNOT_RUN;
  }
  if (rc != 0) {
    fprintf(stderr,
            "proxytrace selftest: cannot run here: %s cannot import the proxytrace package (%s) — fix: `make "
            "install-python PYTHON=%s PYTHON_SITE=1`, or PYTHONPATH=<the folder holding proxytrace/>\n",
            PT_TEXT(python, 512), pkg[0] ? "looked in its path and beside this program" : "looked in its path",
            PT_TEXT(python, 512));
    free(pass);
    return SELFTEST_CANNOT_RUN;
  }

  char** args = calloc((size_t)np + 8, sizeof *args);
  if (!args) {
    fprintf(stderr, "proxytrace selftest: out of memory\n");
    free(pass);
    return 2;
  }
  int n = 0;
  args[n++] = (char*)python;
  args[n++] = "-m";
  args[n++] = "proxytrace";
  args[n++] = "selftest";
  if (extra[0]) {
    args[n++] = extra[0];
    args[n++] = extra[1];
  }
  for (int i = 0; i < np; i++) args[n++] = pass[i];
  args[n] = NULL;
  fflush(stdout);
  fflush(stderr);
  execvp(python, args);
  fprintf(stderr, "proxytrace selftest: cannot run here: cannot start '%s': %s\n", PT_TEXT(python, 512),
          strerror(errno));
  free(args);
  free(pass);
  return SELFTEST_CANNOT_RUN;
}
