/*
 * locate.c — where the proxytrace plugin of this program is, for the
 * commands that drive it by default (`proxytrace demo`, `proxytrace sim`).
 * In the build folder the plugin lies beside the CLI; `make install` puts
 * the CLI in $PREFIX/bin and the plugin in $PREFIX/lib (or lib64), so the
 * same program finds it from either place without being told.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

#define PLUGIN_FILE "librccl-profiler-proxytrace.so"

int pt_sim_own_plugin(char* out, size_t n) {
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) return 0;
  exe[k] = '\0';
  const char* dir = dirname(exe);
  static const char* const places[] = {"", "/../lib", "/../lib64"};
  for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
    char where[PATH_MAX + 16], real[PATH_MAX], path[PATH_MAX + 64];
    snprintf(where, sizeof where, "%s%s", dir, places[i]);
    if (!realpath(where, real)) continue;
    snprintf(path, sizeof path, "%s/%s", real, PLUGIN_FILE); /* the name, not its target */
    if (access(path, R_OK) == 0) {
      snprintf(out, n, "%s", path);
      return 1;
    }
  }
  return 0;
}
