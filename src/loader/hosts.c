/*
 * hosts.c — the host profiles: one row per NCCL/RCCL release family whose
 * plugin-loading rules differ. Every rule the candidate generator applies
 * is a flag here, so that the difference between two releases can be read
 * off one table. Where each rule comes from (NVIDIA/nccl release tags):
 *
 *   STATIC_PLUGIN prefix      every release's tryOpenLib (v2.23.4-1
 *                             src/misc/profiler.cc:28-30 … v2.30.7-1
 *                             src/plugin/plugin_open.cc); 2.27.3 never
 *                             reaches it with a value (short name only)
 *   names cut at 254          char[255] + snprintf from 2.26 (v2.26.6-1
 *                             src/plugin/plugin_open.cc:14,60,65,77);
 *                             2.23-2.25 copy into char[PATH_MAX] (4095)
 *   config files              initEnv() before the profiler loads, in
 *                             every release (v2.23.4-1 src/init.cc:79,
 *                             src/misc/param.cc:51-66); $HOME and '\r'
 *                             from 2.30 (v2.30.3-1 src/misc/param.cc:24,37)
 *   env plugin                v2.28.7-1 src/misc/param.cc:96-98
 *   net plugin fallback       v2.28.3-1 src/plugin/profiler.cc
 *   RCCL                      ~/.rccl.conf, /etc/rccl.conf (ROCm/rccl
 *                             src/misc/param.cc initEnv), auto-load and
 *                             the dump hook
 *   2.31, 2.32                v7 tried first, then v6..v1 (NVIDIA/nccl
 *                             889806836 src/plugin/profiler.cc,
 *                             ncclProfilerPluginLoad); otherwise 2.30's
 *                             rules (the stored src/plugin/plugin_open.cc,
 *                             081eafa, is 2.30's; not read at 2.31's own
 *                             commit)
 *   RCCL 2.31                 v7; a short name becomes
 *                             librccl-profiler-<name>.so (RCCL's
 *                             environment-variable reference, 2026)
 *
 * The releases each profile was checked against are listed too, so a
 * patch level that is no release can be named as such.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#define CONF PT_HOSTF_CONF_FILES
#define OLD_NCCL (PT_HOSTF_PATHS | PT_HOSTF_TRIES_TWICE | PT_HOSTF_STATIC_PLUGIN | \
                  PT_HOSTF_TRUNCATES | CONF)
#define NEW_NCCL (PT_HOSTF_PATHS | PT_HOSTF_SHORT_NAMES | PT_HOSTF_STATIC_PLUGIN | \
                  PT_HOSTF_TRUNCATES | CONF)
#define NCCL_228 (NEW_NCCL | PT_HOSTF_NONE_DISABLES | PT_HOSTF_NET_FALLBACK)
#define NCCL_230 (NCCL_228 | PT_HOSTF_ENV_PLUGIN | PT_HOSTF_CONF_HOME_ENV | PT_HOSTF_CONF_STRIPS_CR)
#define OLD_MAX (PATH_MAX - 1) /* snprintf into char[PATH_MAX] */

static const pt_host_info hosts[PT_HOST_COUNT] = {
    {PT_HOST_NCCL_2_23, "nccl-2.23", "NCCL 2.23.4", 1, OLD_NCCL, OLD_MAX},
    {PT_HOST_NCCL_2_24, "nccl-2.24", "NCCL 2.24.3", 2, OLD_NCCL, OLD_MAX},
    {PT_HOST_NCCL_2_25, "nccl-2.25", "NCCL 2.25.1", 2, OLD_NCCL, OLD_MAX},
    {PT_HOST_NCCL_2_26, "nccl-2.26", "NCCL 2.26.2-2.26.6", 3, NEW_NCCL, 254},
    {PT_HOST_NCCL_2_27_3, "nccl-2.27.3", "NCCL 2.27.3", 4,
     PT_HOSTF_SHORT_NAMES | PT_HOSTF_TRUNCATES | CONF, 254},
    {PT_HOST_NCCL_2_27, "nccl-2.27", "NCCL 2.27.5-2.27.7", 4, NEW_NCCL, 254},
    {PT_HOST_NCCL_2_28, "nccl-2.28", "NCCL 2.28.3-2.28.9", 5, NCCL_228 | PT_HOSTF_ENV_PLUGIN,
     254},
    {PT_HOST_NCCL_2_29, "nccl-2.29", "NCCL 2.29.2-2.29.7", 6, NCCL_228 | PT_HOSTF_ENV_PLUGIN,
     254},
    {PT_HOST_NCCL_2_30, "nccl-2.30", "NCCL 2.30.3-2.30.7 and master", 6, NCCL_230, 254},
    {PT_HOST_RCCL, "rccl", "RCCL (ROCm profiler-plugin era)", 6,
     NCCL_228 | PT_HOSTF_AUTOLOAD | PT_HOSTF_DUMP_HOOK | PT_HOSTF_RCCL_CONF, 254},
    {PT_HOST_NCCL_2_31, "nccl-2.31", "NCCL 2.31.2", 7, NCCL_230, 254},
    {PT_HOST_NCCL_2_32, "nccl-2.32", "NCCL 2.32.3-2.32.7", 7, NCCL_230, 254},
    {PT_HOST_RCCL_2_31, "rccl-2.31", "RCCL 2.31", 7,
     NCCL_228 | PT_HOSTF_AUTOLOAD | PT_HOSTF_DUMP_HOOK | PT_HOSTF_RCCL_CONF | PT_HOSTF_RCCL_SHORT, 254},
};

/* The releases (patch levels, NVIDIA/nccl tags v2.MINOR.PATCH-1) each
 * NCCL profile was checked against, newest last; 0 ends a list. */
static const int checked[PT_HOST_COUNT][5] = {
    {4}, {3}, {1}, {2, 3, 5, 6}, {3}, {5, 6, 7}, {3, 7, 9}, {2, 3, 7}, {3, 4, 7}, {0}, {2}, {3, 6, 7}, {0},
};

const pt_host_info* pt_host_info_of(pt_host host) {
  if ((int)host < 0 || host >= PT_HOST_COUNT) return NULL;
  return &hosts[host];
}

const char* pt_host_name(pt_host host) {
  const pt_host_info* h = pt_host_info_of(host);
  return h ? h->name : "?";
}

/* "2.27.7" -> minor 27, patch 7; patch -1 when absent. */
static int parse_release(const char* t, int* minor, int* patch) {
  char* end;
  if (strncmp(t, "2.", 2) != 0 || !isdigit((unsigned char)t[2])) return 0;
  long mi = strtol(t + 2, &end, 10);
  *patch = -1;
  if (*end == '.') {
    if (!isdigit((unsigned char)end[1])) return 0;
    long pa = strtol(end + 1, &end, 10);
    if (pa > 1000) return 0;
    *patch = (int)pa;
    if (*end == '-' && isdigit((unsigned char)end[1])) { /* tag suffix "2.27.7-1" */
      strtol(end + 1, &end, 10);
    }
  }
  if (*end != '\0' || mi > 1000) return 0;
  *minor = (int)mi;
  return 1;
}

/* The profile for a text, and the release it names (patch -1: none). */
static int parse(const char* text, pt_host* out, int* minor, int* patch) {
  *minor = 0;
  *patch = -1;
  if (!strcasecmp(text, "rccl")) {
    *out = PT_HOST_RCCL;
    return PT_OK;
  }
  if (!strcasecmp(text, "rccl-2.31")) {
    *out = PT_HOST_RCCL_2_31;
    return PT_OK;
  }
  if (!strcasecmp(text, "nccl")) {
    *out = PT_HOST_NCCL_2_30;
    return PT_OK;
  }
  const char* t = text;
  if (!strncasecmp(t, "nccl-", 5)) t += 5;
  if (!parse_release(t, minor, patch)) return PT_EINVAL;
  switch (*minor) {
    case 23: *out = PT_HOST_NCCL_2_23; break;
    case 24: *out = PT_HOST_NCCL_2_24; break;
    case 25: *out = PT_HOST_NCCL_2_25; break;
    case 26: *out = PT_HOST_NCCL_2_26; break;
    case 27: *out = (*patch >= 0 && *patch < 5) ? PT_HOST_NCCL_2_27_3 : PT_HOST_NCCL_2_27; break;
    case 28: *out = PT_HOST_NCCL_2_28; break;
    case 29: *out = PT_HOST_NCCL_2_29; break;
    case 30: *out = PT_HOST_NCCL_2_30; break;
    case 31: *out = PT_HOST_NCCL_2_31; break;
    case 32: *out = PT_HOST_NCCL_2_32; break;
    default: return PT_EINVAL;
  }
  return PT_OK;
}

int pt_host_parse(const char* text, pt_host* out) {
  if (!text || !out) return PT_EINVAL;
  int minor, patch;
  pt_host h;
  if (parse(text, &h, &minor, &patch) != PT_OK) return PT_EINVAL;
  *out = h;
  return PT_OK;
}

const char* pt_host_parse_note(const char* text, char* buf, size_t n) {
  int minor, patch;
  pt_host h;
  if (!text || !buf || !n || parse(text, &h, &minor, &patch) != PT_OK || patch < 0) return NULL;
  for (int i = 0; i < 5 && checked[h][i]; i++)
    if (checked[h][i] == patch) return NULL;
  /* The newest release of the minor (2.27 has two profiles). */
  const int* last = checked[h == PT_HOST_NCCL_2_27_3 ? PT_HOST_NCCL_2_27 : h];
  int newest = 0;
  for (int i = 0; i < 5 && last[i]; i++) newest = last[i];
  const pt_host_info* info = &hosts[h];
  if (patch > newest)
    snprintf(buf, n,
             "NCCL 2.%d.%d is newer than the releases the %s profile was checked against (%s): "
             "it is used as is",
             minor, patch, info->name, info->releases);
  else
    snprintf(buf, n, "NCCL 2.%d.%d is not a release: the %s profile (%s) is used", minor, patch,
             info->name, info->releases);
  return buf;
}
