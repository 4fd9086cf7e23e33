/*
 * ncclconf.c — the nccl.conf files. NCCL 2.26 and later (and RCCL) read
 * their variables through ncclGetEnv, which first applies
 * $NCCL_CONF_FILE (or ~/.nccl.conf when that is unset or empty) and then
 * /etc/nccl.conf to the environment without overwriting
 * (spec/plugin-loading.md §2.3.1). A stray line there is a classic reason
 * for "my plugin did not load", so the probe shows where a value came from.
 * Unlike NCCL, nothing is written to the environment here: the value is
 * looked up and returned.
 *
 * File format: one NAME=VALUE per line; lines starting with '#' and lines
 * without '=' are ignored; the end-of-line is not part of the value.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Returns the value of NAME in the file (kept in r), or NULL. */
static const char* lookup_file(pt_res* r, const char* path, const char* name) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  char line[4096];
  size_t len = strlen(name);
  const char* found = NULL;
  while (!found && fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    if (strncmp(line, name, len) != 0 || line[len] != '=') continue;
    char* v = line + len + 1;
    v[strcspn(v, "\r\n")] = '\0';
    found = pt_res_keep(r, v);
  }
  fclose(f);
  return found;
}

const char* pt_ncclconf_lookup(pt_res* r, const char* name, const char** origin) {
  char path[PATH_MAX];
  const char* user = pt_res_getenv(r, "NCCL_CONF_FILE");
  const char* found = NULL;
  if (user && *user) {
    snprintf(path, sizeof path, "%s", user);
    found = lookup_file(r, path, name);
  } else {
    const char* home = pt_res_getenv(r, "HOME");
    struct passwd pwbuf, *pw = NULL;
    char buf[4096];
    if ((!home || !*home) && getpwuid_r(getuid(), &pwbuf, buf, sizeof buf, &pw) == 0 && pw)
      home = pw->pw_dir;
    if (home) {
      snprintf(path, sizeof path, "%s/.nccl.conf", home);
      found = lookup_file(r, path, name);
    }
  }
  if (!found) {
    snprintf(path, sizeof path, "/etc/nccl.conf");
    found = lookup_file(r, path, name);
  }
  if (found && origin) *origin = pt_res_keep(r, path);
  return found;
}
