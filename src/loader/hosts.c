/*
 * hosts.c — the host profiles: one row per NCCL/RCCL release family whose
 * plugin-loading rules differ (spec/plugin-loading.md §2.3, §2.4.1, §3).
 * Every rule the candidate generator applies is a flag here, so that the
 * difference between two releases can be read off one table.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#define OLD_NCCL (PT_HOSTF_PATHS | PT_HOSTF_TRIES_TWICE)
#define NEW_NCCL                                                                      \
  (PT_HOSTF_PATHS | PT_HOSTF_SHORT_NAMES | PT_HOSTF_STATIC_PLUGIN | PT_HOSTF_TRUNCATES | \
   PT_HOSTF_CONF_FILES)
#define NCCL_228 (NEW_NCCL | PT_HOSTF_NONE_DISABLES | PT_HOSTF_NET_FALLBACK)

static const pt_host_info hosts[PT_HOST_COUNT] = {
    {PT_HOST_NCCL_2_23, "nccl-2.23", "NCCL 2.23.4", 1, OLD_NCCL, 0},
    {PT_HOST_NCCL_2_24, "nccl-2.24", "NCCL 2.24.3", 2, OLD_NCCL, 0},
    {PT_HOST_NCCL_2_25, "nccl-2.25", "NCCL 2.25.1", 2, OLD_NCCL, 0},
    {PT_HOST_NCCL_2_26, "nccl-2.26", "NCCL 2.26.2-2.26.6", 3,
     PT_HOSTF_PATHS | PT_HOSTF_SHORT_NAMES | PT_HOSTF_CONF_FILES, 0},
    {PT_HOST_NCCL_2_27_3, "nccl-2.27.3", "NCCL 2.27.3", 4,
     PT_HOSTF_SHORT_NAMES | PT_HOSTF_CONF_FILES, 0},
    {PT_HOST_NCCL_2_27, "nccl-2.27", "NCCL 2.27.5-2.27.7", 4, NEW_NCCL, 254},
    {PT_HOST_NCCL_2_28, "nccl-2.28", "NCCL 2.28.3-2.28.9", 5, NCCL_228, 254},
    {PT_HOST_NCCL_2_29, "nccl-2.29", "NCCL 2.29.2-2.29.x", 6, NCCL_228, 254},
    {PT_HOST_NCCL_2_30, "nccl-2.30", "NCCL 2.30.x and master", 6, NCCL_228, 254},
    {PT_HOST_RCCL, "rccl", "RCCL (ROCm profiler-plugin era)", 6,
     NCCL_228 | PT_HOSTF_AUTOLOAD | PT_HOSTF_DUMP_HOOK, 254},
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

int pt_host_parse(const char* text, pt_host* out) {
  if (!text || !out) return PT_EINVAL;
  if (!strcasecmp(text, "rccl")) {
    *out = PT_HOST_RCCL;
    return PT_OK;
  }
  if (!strcasecmp(text, "nccl")) {
    *out = PT_HOST_NCCL_2_30;
    return PT_OK;
  }
  const char* t = text;
  if (!strncasecmp(t, "nccl-", 5)) t += 5;
  int minor, patch;
  if (!parse_release(t, &minor, &patch)) return PT_EINVAL;
  switch (minor) {
    case 23: *out = PT_HOST_NCCL_2_23; break;
    case 24: *out = PT_HOST_NCCL_2_24; break;
    case 25: *out = PT_HOST_NCCL_2_25; break;
    case 26: *out = PT_HOST_NCCL_2_26; break;
    case 27: *out = (patch >= 0 && patch < 5) ? PT_HOST_NCCL_2_27_3 : PT_HOST_NCCL_2_27; break;
    case 28: *out = PT_HOST_NCCL_2_28; break;
    case 29: *out = PT_HOST_NCCL_2_29; break;
    case 30: *out = PT_HOST_NCCL_2_30; break;
    default: return PT_EINVAL;
  }
  return PT_OK;
}
