/*
 * conf.c — the host's config files. Before it loads a profiler plugin,
 * every NCCL release copies its config files into the environment without
 * overwriting (initEnv(): v2.23.4-1 src/init.cc:79, src/misc/param.cc:51-66;
 * still so in v2.30.7-1): $NCCL_CONF_FILE if set and not empty, else
 * ~/.nccl.conf, then /etc/nccl.conf. RCCL reads ~/.rccl.conf, then
 * /etc/rccl.conf, and knows no NCCL_CONF_FILE (ROCm/rccl src/misc/param.cc
 * initEnv). A stray line there is a classic reason for "my plugin did not
 * load", so the probe shows where a value came from. Unlike the host,
 * nothing is written to the environment here: the value is looked up and
 * returned.
 *
 * Line format, as the host reads it: NAME=VALUE, NAME is everything before
 * the first '=' (so "NAME = x" sets "NAME "), VALUE everything after it,
 * at most 1023 characters; lines without '=' are skipped, and so are lines
 * starting with '#' (from 2.26; before, such a line sets a variable whose
 * name starts with '#', which no one reads — the same outcome). The first
 * file, and the first line, that sets a name wins. Only the '\n' ends the
 * value: before NCCL 2.30 (and in RCCL) a '\r' of a file with Windows line
 * ends stays in it. ~ is the passwd entry's home before 2.30, $HOME from
 * 2.30 (v2.30.3-1 src/misc/param.cc:24,37).
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define CONF_VALUE_MAX 1023 /* char envValue[1024] in every release */

/* The value of NAME in the file (kept in r), or NULL. */
static const char* lookup_file(pt_res* r, const pt_host_info* h, const char* path,
                               const char* name) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  size_t nlen = strlen(name);
  const char* found = NULL;
  while (!found && (len = getline(&line, &cap, f)) != -1) {
    if (line[0] == '#') continue;
    if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
    if ((h->flags & PT_HOSTF_CONF_STRIPS_CR) && len > 0 && line[len - 1] == '\r')
      line[--len] = '\0';
    if (strncmp(line, name, nlen) != 0 || line[nlen] != '=') continue;
    char* v = line + nlen + 1;
    if (strlen(v) > CONF_VALUE_MAX) v[CONF_VALUE_MAX] = '\0';
    found = pt_res_keep(r, v);
    size_t vl = strlen(v);
    if (vl && v[vl - 1] == '\r')
      pt_res_note(r,
                  "%s in %s ends in a carriage return (the file has Windows line ends): %s keeps "
                  "it as part of the value. Save the file with Unix line ends (dos2unix).",
                  name, path, h->releases);
  }
  free(line);
  fclose(f);
  return found;
}

/* ~ as the host finds it. */
static const char* home_dir(const pt_res* r, const pt_host_info* h, char* buf, size_t n) {
  if (h->flags & PT_HOSTF_CONF_HOME_ENV) return pt_res_getenv(r, "HOME");
  struct passwd pwbuf, *pw = NULL;
  if (getpwuid_r(getuid(), &pwbuf, buf, n, &pw) != 0 || !pw) return NULL;
  return pw->pw_dir;
}

const char* pt_conf_lookup(pt_res* r, const pt_host_info* h, const char* name,
                           const char** origin) {
  char path[PATH_MAX], buf[4096];
  const int rccl = (h->flags & PT_HOSTF_RCCL_CONF) != 0;
  const char* user = rccl ? NULL : pt_res_getenv(r, "NCCL_CONF_FILE");
  const char* found = NULL;
  if (user && *user) {
    snprintf(path, sizeof path, "%s", user);
    found = lookup_file(r, h, path, name);
  } else {
    const char* home = home_dir(r, h, buf, sizeof buf);
    if (home) {
      snprintf(path, sizeof path, "%s/%s", home, rccl ? ".rccl.conf" : ".nccl.conf");
      found = lookup_file(r, h, path, name);
    }
  }
  if (!found) {
    snprintf(path, sizeof path, "%s", rccl ? "/etc/rccl.conf" : "/etc/nccl.conf");
    found = lookup_file(r, h, path, name);
  }
  if (found && origin) *origin = pt_res_keep(r, path);
  return found;
}
