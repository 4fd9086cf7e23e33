/*
 * fixtures.c — see fixtures.h.
 */
#include "fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec.h"

static void die(const char* what, const char* arg) {
  fprintf(stderr, "fixture: %s %s: %s\n", what, arg, strerror(errno));
  exit(99);
}

static const char* self_dir(void) {
  static char dir[4096];
  if (!dir[0]) {
    ssize_t k = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (k <= 0) die("readlink", "/proc/self/exe");
    dir[k] = '\0';
    *strrchr(dir, '/') = '\0';
  }
  return dir;
}

const char* fx_fmt(const char* fmt, ...) {
  static char bufs[16][8192];
  static int next;
  char* b = bufs[next++ % 16];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, sizeof bufs[0], fmt, ap);
  va_end(ap);
  return b;
}

const char* fx_plugin(const char* name) { return fx_fmt("%s/plugins/%s.so", self_dir(), name); }

const char* fx_built(const char* rel) {
  static char path[4096];
  if (!realpath(fx_fmt("%s/%s", self_dir(), rel), path)) die("realpath", rel);
  return path;
}

static char* tmpdirs[64];
static int ntmp;

static int rm_entry(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st, (void)flag, (void)ftw;
  chmod(path, 0700);
  remove(path);
  return 0;
}

static void cleanup(void) {
  for (int i = 0; i < ntmp; i++) nftw(tmpdirs[i], rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char* fx_tmpdir(void) {
  const char* base = getenv("TMPDIR");
  char* t = strdup(fx_fmt("%s/pt-loader-XXXXXX", base && *base ? base : "/tmp"));
  if (!t || !mkdtemp(t)) die("mkdtemp", base ? base : "/tmp");
  chmod(t, 0755);
  if (ntmp == 0) atexit(cleanup);
  if (ntmp < 64) tmpdirs[ntmp++] = t;
  return t;
}

void fx_mkdirs(const char* path) {
  char p[8192];
  snprintf(p, sizeof p, "%s", path);
  for (char* s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST) die("mkdir", p);
    *s = '/';
  }
  if (mkdir(p, 0755) != 0 && errno != EEXIST) die("mkdir", p);
}

void fx_copy(const char* from, const char* to) {
  int in = open(from, O_RDONLY);
  if (in < 0) die("open", from);
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
  if (out < 0) die("create", to);
  char buf[65536];
  ssize_t k;
  while ((k = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)k) != k) die("write", to);
  close(in);
  close(out);
}

void fx_symlink(const char* target, const char* link) {
  unlink(link);
  if (symlink(target, link) != 0) die("symlink", link);
}

void fx_write(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (!f) die("create", path);
  fputs(text, f);
  fclose(f);
}

int fx_run(char* const argv[], char* const envp[], const char* cwd, int drop_root, char* out,
           size_t n) {
  /* A build for another architecture runs its children through the
   * emulator too (tools/exec.c). */
  const char* file;
  char** child = pt_exec_argv(argv[0], argv, &file);
  if (!child) die("prepare to run", argv[0]);
  int fds[2];
  if (pipe(fds) != 0) die("pipe", "");
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) die("fork", "");
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    if (cwd && chdir(cwd) != 0) die("chdir", cwd);
    if (drop_root && geteuid() == 0) {
      if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
        die("drop privileges", "");
    }
    execve(file, child, envp);
    die("execve", file);
  }
  free(child);
  close(fds[1]);
  size_t got = 0;
  ssize_t k;
  while ((k = read(fds[0], out + got, n - 1 - got)) > 0) {
    got += (size_t)k;
    if (got == n - 1) break;
  }
  out[got] = '\0';
  char drain[4096];
  while (read(fds[0], drain, sizeof drain) > 0) {
  }
  close(fds[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return WEXITSTATUS(st);
}
