/*
 * candidates.c — the one candidate generator. Given the settings and a host
 * profile it lists, in order, every name the host would hand to dlopen:
 *
 *   NCCL_PROFILER_PLUGIN unset/empty  libnccl-profiler.so
 *   2.23-2.25                         the value, then the same value again
 *   2.26                              the value, then libnccl-profiler-<value>.so
 *   2.27.3                            lib*.so verbatim, else only the short-name form
 *   2.27.5+, RCCL                     the value (or the main program for a prefix
 *                                     of STATIC_PLUGIN), then the short-name form
 *                                     unless the value has a '/' or is lib*.so
 *   RCCL, RCCL_ENABLE_PROXY_TRACE!=0  <dir of librccl>/librccl-profiler-proxytrace.so
 *   2.28+, RCCL                       the net plugin library, if one is loaded
 *   PROXYTRACE_HOME (not a host rule) <home>/{lib,lib64,.}/librccl-profiler-proxytrace.so.*
 *
 * (spec/plugin-loading.md §2.3, §3.1, §10.2.) pt_probe() and pt_load() both
 * call this and nothing else to decide what to try, so they cannot disagree
 * about the list. Host quirks that surprise users get a note that says what
 * to do instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "internal.h"

int pt_parse_param(const char* text, long long* v) {
  if (!text || !*text) return 0;
  char* end;
  errno = 0;
  long long x = strtoll(text, &end, 0);
  if (errno || end == text || *end != '\0') return 0;
  *v = x;
  return 1;
}

static int starts_lib_ends_so(const char* v) {
  size_t n = strlen(v);
  return strncmp(v, "lib", 3) == 0 && n >= 3 && strcmp(v + n - 3, ".so") == 0;
}

/* A non-empty, case-insensitive prefix of "STATIC_PLUGIN". */
static int is_static_prefix(const char* v) {
  size_t n = strlen(v);
  return n > 0 && n <= strlen("STATIC_PLUGIN") && strncasecmp(v, "STATIC_PLUGIN", n) == 0;
}

/* libnccl-profiler-<value>.so, cut to the host's limit like the value. */
static void add_short_name(pt_res* r, const pt_host_info* h, const char* v) {
  char buf[PATH_MAX + 64];
  snprintf(buf, sizeof buf, "%s-%s.so", PT_NCCL_PREFIX, v);
  if (h->max_value && strlen(buf) > h->max_value) buf[h->max_value] = '\0';
  pt_res_add(r, buf, PT_SRC_SHORT_NAME, PT_PHASE_HOST);
}

static void host_value_candidates(pt_res* r, const pt_host_info* h, const char* v) {
  switch (h->host) {
    case PT_HOST_NCCL_2_23:
    case PT_HOST_NCCL_2_24:
    case PT_HOST_NCCL_2_25:
      pt_res_add(r, v, PT_SRC_VALUE, PT_PHASE_HOST);
      pt_res_add(r, v, PT_SRC_VALUE, PT_PHASE_HOST); /* the host really tries it twice */
      return;
    case PT_HOST_NCCL_2_26:
      pt_res_add(r, v, PT_SRC_VALUE, PT_PHASE_HOST);
      add_short_name(r, h, v);
      return;
    case PT_HOST_NCCL_2_27_3:
      if (starts_lib_ends_so(v))
        pt_res_add(r, v, PT_SRC_VALUE, PT_PHASE_HOST);
      else
        add_short_name(r, h, v);
      return;
    default:
      break;
  }
  if ((h->flags & PT_HOSTF_STATIC_PLUGIN) && is_static_prefix(v)) {
    /* dlopen(NULL) cannot fail, so nothing after it is ever tried. */
    pt_res_add(r, "", PT_SRC_STATIC, PT_PHASE_HOST);
    return;
  }
  pt_res_add(r, v, PT_SRC_VALUE, PT_PHASE_HOST);
  if (!strchr(v, '/') && !starts_lib_ends_so(v)) add_short_name(r, h, v);
}

static void notes_on_value(pt_res* r, const pt_host_info* h, const pt_settings* s,
                           const char* v) {
  if (!(h->flags & PT_HOSTF_PATHS) && strchr(v, '/'))
    pt_res_note(r,
                "%s cannot load a plugin by path (NVIDIA/nccl#1732): it only tries "
                "'libnccl-profiler-<value>.so'. Upgrade to NCCL 2.27.5 or later, or put the "
                "plugin's directory on LD_LIBRARY_PATH and set NCCL_PROFILER_PLUGIN to its short "
                "name.",
                h->releases);
  if (!(h->flags & PT_HOSTF_SHORT_NAMES) && !strchr(v, '/') &&
      (s->from_name || !strstr(v, ".so")))
    pt_res_note(r,
                "%s does not expand short names: set NCCL_PROFILER_PLUGIN=%s-%s.so (with its "
                "directory on LD_LIBRARY_PATH) or to the plugin's full path.",
                h->releases, PT_NCCL_PREFIX, v);
  if (!(h->flags & PT_HOSTF_NONE_DISABLES) && !strcasecmp(v, "none"))
    pt_res_note(r,
                "%s does not know the value 'none' (NCCL 2.28 added it) and looks for a file of "
                "that name; to run without a profiler, unset NCCL_PROFILER_PLUGIN and keep "
                "libnccl-profiler.so off the library path.",
                h->releases);
}

static void autoload_candidate(pt_res* r, const pt_host_info* h, const pt_settings* s) {
  if (!s->rccl_flag || !*s->rccl_flag) return;
  long long on = 0;
  int number = pt_parse_param(s->rccl_flag, &on);
  if (!(h->flags & PT_HOSTF_AUTOLOAD)) {
    if (!number || on)
      pt_res_note(r,
                  "%s ignores RCCL_ENABLE_PROXY_TRACE: only RCCL auto-loads %s; set "
                  "NCCL_PROFILER_PLUGIN instead.",
                  h->releases, PT_PLUGIN_STEM);
    return;
  }
  if (!number) {
    pt_res_note(r,
                "RCCL_ENABLE_PROXY_TRACE='%s' is not a number: RCCL ignores it and uses 0 (no "
                "auto-load). Set RCCL_ENABLE_PROXY_TRACE=1 to load %s from the directory of "
                "librccl.",
                s->rccl_flag, PT_PLUGIN_STEM);
    return;
  }
  if (!on) return;
  char dir[PATH_MAX];
  const char* how = "";
  if (!pt_librccl_dir(s, dir, sizeof dir, &how)) {
    pt_res_note(r,
                "RCCL_ENABLE_PROXY_TRACE=%s, but no librccl is loaded in this process, so the "
                "auto-load directory is unknown: give the directory of the librccl in use "
                "(proxytrace probe --rccl-dir DIR, or pt_request.rccl_dir).",
                s->rccl_flag);
    return;
  }
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s", dir, PT_PLUGIN_STEM);
  pt_res_add(r, path, PT_SRC_AUTOLOAD, PT_PHASE_HOST);
}

static void home_candidates(pt_res* r, const pt_settings* s) {
  struct stat st;
  if (stat(s->home, &st) != 0 || !S_ISDIR(st.st_mode)) {
    pt_res_note(r,
                "PROXYTRACE_HOME=%s is not a directory: set it to the installation prefix (the "
                "directory that holds lib/%s).",
                s->home, PT_PLUGIN_STEM);
    return;
  }
  static const char* const subdirs[] = {"lib", "lib64", ""};
  size_t added = 0;
  for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
    char dir[PATH_MAX];
    if (*subdirs[i])
      snprintf(dir, sizeof dir, "%s/%s", s->home, subdirs[i]);
    else
      snprintf(dir, sizeof dir, "%s", s->home);
    size_t n = pt_homedir_expand(r, dir, PT_PLUGIN_STEM, s->major);
    if (n) pt_note_writable_home(r, dir);
    added += n;
  }
  if (!added)
    pt_res_note(r,
                "PROXYTRACE_HOME=%s holds no %s* in lib/, lib64/ or itself: install the plugin "
                "there (make install PREFIX=%s) or unset PROXYTRACE_HOME.",
                s->home, PT_PLUGIN_STEM, s->home);
}

int pt_candidates_generate(pt_res* r, const pt_settings* s) {
  const pt_host_info* h = pt_host_info_of(r->pub.host);
  const char* v = s->value;
  int set = v && *v;

  if (set && (h->flags & PT_HOSTF_NONE_DISABLES) && !strcasecmp(v, "none")) {
    r->disabled = 1;
    pt_res_note(r,
                "NCCL_PROFILER_PLUGIN=%s disables the profiler on %s; unset it to load one.", v,
                h->releases);
    return PT_EDISABLED;
  }

  char cut[PATH_MAX + 64];
  if (set && h->max_value && strlen(v) > h->max_value) {
    snprintf(cut, sizeof cut, "%.*s", (int)h->max_value, v);
    pt_res_note(r,
                "NCCL_PROFILER_PLUGIN is %zu characters long; %s keeps only the first %zu, so it "
                "tries '%s'. Use a shorter value: a symlink with a short path, or the plugin's "
                "directory on LD_LIBRARY_PATH and its short name.",
                strlen(v), h->releases, h->max_value, cut);
    r->truncated = 1;
    v = cut;
  }

  if (!set)
    pt_res_add(r, PT_DEFAULT_NAME, PT_SRC_DEFAULT, PT_PHASE_HOST);
  else {
    host_value_candidates(r, h, v);
    notes_on_value(r, h, s, v);
  }
  autoload_candidate(r, h, s);
  if (s->net_plugin && *s->net_plugin) {
    if (h->flags & PT_HOSTF_NET_FALLBACK)
      pt_res_add(r, s->net_plugin, PT_SRC_NET_PLUGIN, PT_PHASE_HOST);
    else
      pt_res_note(r, "%s does not look for a profiler in the net plugin library.", h->releases);
  }
  if (s->home) home_candidates(r, s);
  return PT_OK;
}
