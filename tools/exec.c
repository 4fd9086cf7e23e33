/*
 * exec.c — starting a program of this build through PROXYTRACE_EMULATOR.
 *
 * A build for another architecture (make ARCH=aarch64) runs on the build
 * machine under a user-mode emulator such as qemu-aarch64. The emulator runs
 * the one program it was given; when that program starts another —
 * `proxytrace probe --deep` re-executes itself, the loader tests start
 * children — the kernel can run the new program only where binfmt_misc hands
 * foreign executables to the emulator, which containers and CI machines
 * often lack. PROXYTRACE_EMULATOR names the command to start them through
 * (words split on spaces); unset or empty, programs start directly.
 */
#include "exec.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* `name` (no '/') found executable in $PATH, into out. */
static int search_path(const char* name, char* out, size_t n) {
  const char* path = getenv("PATH");
  if (!path || !*path) path = "/usr/bin:/bin";
  for (const char* p = path;; p++) {
    const char* end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len && len + 1 + strlen(name) + 1 <= n) {
      memcpy(out, p, len);
      out[len] = '/';
      strcpy(out + len + 1, name);
      if (access(out, X_OK) == 0) return 0;
    }
    if (!end) break;
    p = end;
  }
  errno = ENOENT;
  return -1;
}

/* Appends a copy of `s` to the string area at *area; returns the copy. */
static char* put(char** area, const char* s) {
  char* c = strcpy(*area, s);
  *area += strlen(s) + 1;
  return c;
}

char** pt_exec_argv(const char* path, char* const args[], const char** file) {
  const char* emu = getenv("PROXYTRACE_EMULATOR");
  if (emu) emu += strspn(emu, " ");
  int emulated = emu && *emu;
  char self[PATH_MAX], tool[PATH_MAX];
  if (emulated) {
    if (!strcmp(path, "/proc/self/exe")) {
      ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
      if (k <= 0) return NULL;
      self[k] = 0;
      path = self;
    }
    size_t flen = strcspn(emu, " ");
    if (flen >= sizeof tool) {
      errno = ENAMETOOLONG;
      return NULL;
    }
    memcpy(tool, emu, flen);
    tool[flen] = 0;
    if (!strchr(tool, '/')) {
      char found[PATH_MAX];
      if (search_path(tool, found, sizeof found) != 0) return NULL;
      strcpy(tool, found);
    }
  }
  /* Room: every emulator word and argument, path, the file, NULL. */
  size_t nargs = 0, bytes = strlen(path) + 1 + (emulated ? strlen(tool) + 1 + strlen(emu) + 1 : 0);
  while (args[nargs]) bytes += strlen(args[nargs++]) + 1;
  size_t nvec = nargs + 2 + (emulated ? strlen(emu) / 2 + 1 : 0);
  char** out = malloc(nvec * sizeof *out + bytes);
  if (!out) return NULL;
  char* area = (char*)(out + nvec);
  size_t k = 0;
  if (!emulated) {
    *file = put(&area, path);
    for (size_t i = 0; i < nargs; i++) out[k++] = put(&area, args[i]);
  } else {
    *file = put(&area, tool);
    out[k++] = (char*)*file;
    char* words = put(&area, emu + strcspn(emu, " ")); /* the emulator's own options */
    for (char* w = strtok(words, " "); w; w = strtok(NULL, " ")) out[k++] = w;
    out[k++] = put(&area, path);
    for (size_t i = 1; i < nargs; i++) out[k++] = put(&area, args[i]);
  }
  out[k] = NULL;
  return out;
}
