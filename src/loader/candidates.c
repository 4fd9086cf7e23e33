/*
 * candidates.c — the one candidate generator. Given the settings and a host
 * profile it lists, in order, every name the host would hand to dlopen:
 *
 *   NCCL_PROFILER_PLUGIN unset/empty  libnccl-profiler.so
 *   a prefix of STATIC_PLUGIN         the main program (dlopen(NULL) cannot
 *                                     fail: nothing is tried after it)
 *   2.23-2.25                         the value, then the same value again
 *   2.26                              the value, then libnccl-profiler-<value>.so
 *   2.27.3                            a lib*.so value of 7 or more characters
 *                                     verbatim, else only the short-name form
 *                                     (so STATIC_PLUGIN never applies there)
 *   2.27.5+, RCCL                     the value, then the short-name form
 *                                     unless the value has a '/' or is lib*.so
 *                                     (RCCL 2.31: librccl-profiler-<value>.so)
 *   RCCL, RCCL_ENABLE_PROXY_TRACE!=0  <dir of librccl>/librccl-profiler-proxytrace.so
 *   2.28+, RCCL                       the net plugin library: each entry of
 *                                     NCCL_NET_PLUGIN (unset: libnccl-net.so;
 *                                     RCCL librccl-net.so) by the same rules
 *   PROXYTRACE_HOME (not a host rule) <home>/{lib,lib64,.}/librccl-profiler-proxytrace.so.*
 *
 * Names are cut where the host cuts them (254 characters from 2.26, 4095
 * before), but the decisions ('/', lib*.so) look at the whole value, as the
 * host's do (NVIDIA/nccl v2.23.4-1 src/misc/profiler.cc:23-88; v2.26.6-1,
 * v2.27.3-1, v2.27.5-1 src/plugin/plugin_open.cc:57-107; v2.28.9-1
 * src/plugin/plugin_open.cc:63-112, src/plugin/profiler.cc:54-68,
 * src/plugin/net.cc:280-321). pt_probe() and pt_load() both call this and
 * nothing else to decide what to try, so they cannot disagree about the
 * list. Host quirks that surprise users get a note that says what to do
 * instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "internal.h"

/* NCCL_NET_PLUGIN: at most 16 net plugins, two of them internal; a longer
 * entry than 254 characters is skipped (v2.28.9-1 src/plugin/net.cc:300-312). */
#define NET_MAX_ENTRIES 14
#define NET_MAX_ENTRY 254

int pt_parse_param(const char* text, long long deflt, long long* v) {
  char* end;
  errno = 0;
  long long x = strtoll(text, &end, 0);
  if (errno == ERANGE) {
    *v = deflt;
    return PT_PARAM_RANGE;
  }
  if (end == text) {
    *v = 0;
    return PT_PARAM_NO_DIGITS;
  }
  *v = x;
  return *end ? PT_PARAM_TRAILING : PT_PARAM_NUMBER;
}

/* Starts with "lib" and ends with ".so" (2.27.5+: the three may overlap). */
static int starts_lib_ends_so(const char* v) {
  size_t n = strlen(v);
  return strncmp(v, "lib", 3) == 0 && n >= 3 && strcmp(v + n - 3, ".so") == 0;
}

/* A non-empty, case-insensitive prefix of "STATIC_PLUGIN". */
static int is_static_prefix(const char* v) {
  size_t n = strlen(v);
  return n > 0 && n <= strlen("STATIC_PLUGIN") && strncasecmp(v, "STATIC_PLUGIN", n) == 0;
}

/* Add a name the host built in its fixed-size buffer: cut where it cuts.
 * A cut profiler name decides the status (PT_ENAMETOOLONG) and gets a note. */
static void add_cut(pt_res* r, const pt_host_info* h, const char* name, pt_source src,
                    int profiler) {
  char buf[PATH_MAX + 64];
  snprintf(buf, sizeof buf, "%s", name);
  if (h->max_value && strlen(name) > h->max_value) {
    buf[h->max_value < sizeof buf ? h->max_value : sizeof buf - 1] = '\0';
    if (profiler && !r->truncated)
      pt_res_note(r,
                  "%s is %zu characters long; %s keeps only the first %zu, so it tries '%s'. Use "
                  "a shorter value: a symlink with a short path, or the plugin's directory on "
                  "LD_LIBRARY_PATH and its short name.",
                  src == PT_SRC_SHORT_NAME ? "the short-name form of NCCL_PROFILER_PLUGIN"
                                           : "NCCL_PROFILER_PLUGIN",
                  strlen(name), h->releases, h->max_value, buf);
    if (profiler) r->truncated = 1;
  }
  pt_res_add(r, buf, src, PT_PHASE_HOST);
}

/* <prefix>-<value>.so, from the whole value (then cut, like any name). */
static void add_short(pt_res* r, const pt_host_info* h, const char* prefix, const char* v,
                      pt_source src, int profiler) {
  size_t n = strlen(prefix) + strlen(v) + 5;
  char* name = malloc(n);
  if (!name) {
    r->nomem = 1;
    return;
  }
  snprintf(name, n, "%s-%s.so", prefix, v);
  add_cut(r, h, name, src, profiler);
  free(name);
}

/* openPluginLib from 2.27.5 on, for any plugin type: the value (or, for a
 * STATIC_PLUGIN prefix, the main program), then the short-name form unless
 * the value is a path or a lib*.so name. */
static void open_plugin_lib(pt_res* r, const pt_host_info* h, const char* v, const char* prefix,
                            pt_source src, pt_source short_src, int profiler) {
  if (is_static_prefix(v)) {
    pt_res_add(r, "", profiler ? PT_SRC_STATIC : src, PT_PHASE_HOST);
    return;
  }
  add_cut(r, h, v, src, profiler);
  if (!strchr(v, '/') && !starts_lib_ends_so(v)) add_short(r, h, prefix, v, short_src, profiler);
}

static void host_value_candidates(pt_res* r, const pt_host_info* h, const char* v) {
  int static_prefix = (h->flags & PT_HOSTF_STATIC_PLUGIN) && is_static_prefix(v);
  switch (h->host) {
    case PT_HOST_NCCL_2_23:
    case PT_HOST_NCCL_2_24:
    case PT_HOST_NCCL_2_25:
      if (static_prefix) break;
      add_cut(r, h, v, PT_SRC_VALUE, 1);
      add_cut(r, h, v, PT_SRC_VALUE, 1); /* the host really tries it twice */
      return;
    case PT_HOST_NCCL_2_26:
      if (static_prefix) break;
      add_cut(r, h, v, PT_SRC_VALUE, 1);
      add_short(r, h, PT_NCCL_PREFIX, v, PT_SRC_SHORT_NAME, 1);
      return;
    case PT_HOST_NCCL_2_27_3:
      if (strlen(v) >= strlen("libX.so") && starts_lib_ends_so(v))
        add_cut(r, h, v, PT_SRC_VALUE, 1);
      else
        add_short(r, h, PT_NCCL_PREFIX, v, PT_SRC_SHORT_NAME, 1);
      return;
    default: /* RCCL 2.31 names short forms after itself (its NCCL_PROFILER_PLUGIN reference) */
      open_plugin_lib(r, h, v, (h->flags & PT_HOSTF_RCCL_SHORT) ? PT_RCCL_PREFIX : PT_NCCL_PREFIX,
                      PT_SRC_VALUE, PT_SRC_SHORT_NAME, 1);
      return;
  }
  /* 2.23-2.26: tryOpenLib turns a STATIC_PLUGIN prefix into dlopen(NULL). */
  pt_res_add(r, "", PT_SRC_STATIC, PT_PHASE_HOST);
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
  int static_prefix = (h->flags & PT_HOSTF_STATIC_PLUGIN) && is_static_prefix(v);
  if (!(h->flags & PT_HOSTF_SHORT_NAMES) && !strchr(v, '/') && !static_prefix &&
      (s->from_name || !strstr(v, ".so")))
    pt_res_note(r,
                "%s does not expand short names: set NCCL_PROFILER_PLUGIN=%s-%s.so (with its "
                "directory on LD_LIBRARY_PATH) or to the plugin's full path.",
                h->releases, PT_NCCL_PREFIX, v);
  if (static_prefix)
    pt_res_note(r,
                "'%s' is a prefix of STATIC_PLUGIN (case ignored): %s then looks for the "
                "profiler in the program itself (dlopen(NULL)) and tries no file.",
                v, h->releases);
  if (h->host == PT_HOST_NCCL_2_27_3 && starts_lib_ends_so(v) && strlen(v) < strlen("libX.so"))
    pt_res_note(r,
                "%s takes a value as a file name only when it is lib*.so and at least 7 "
                "characters long: '%s' becomes %s-%s.so.",
                h->releases, v, PT_NCCL_PREFIX, v);
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
  int kind = pt_parse_param(s->rccl_flag, 0, &on);
  if (!(h->flags & PT_HOSTF_AUTOLOAD)) {
    if (kind != PT_PARAM_NUMBER || on)
      pt_res_note(r,
                  "%s ignores RCCL_ENABLE_PROXY_TRACE: only RCCL auto-loads %s; set "
                  "NCCL_PROFILER_PLUGIN instead.",
                  h->releases, PT_PLUGIN_STEM);
    return;
  }
  /* RCCL reads it as every parameter: strtoll(value, NULL, 0). */
  if (kind == PT_PARAM_NO_DIGITS)
    pt_res_note(r,
                "RCCL_ENABLE_PROXY_TRACE='%s' is not a number: RCCL reads it as 0 (no "
                "auto-load). Set RCCL_ENABLE_PROXY_TRACE=1 to load %s from the directory of "
                "librccl.",
                s->rccl_flag, PT_PLUGIN_STEM);
  else if (kind == PT_PARAM_RANGE)
    pt_res_note(r,
                "RCCL_ENABLE_PROXY_TRACE='%s' is out of range: RCCL uses the default, 0 (no "
                "auto-load). Set RCCL_ENABLE_PROXY_TRACE=1.",
                s->rccl_flag);
  else if (kind == PT_PARAM_TRAILING)
    pt_res_note(r,
                "RCCL_ENABLE_PROXY_TRACE='%s': RCCL reads the number at its start and ignores "
                "the rest, so it counts as %lld (auto-load %s).",
                s->rccl_flag, on, on ? "on" : "off");
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

/* 2.28+: when no profiler library opened, the host looks in the library
 * its net code loaded: the first NCCL_NET_PLUGIN entry that opens, each
 * entry opened by the rules of openPluginLib (unset: the default name). */
static void net_candidates(pt_res* r, const pt_host_info* h, const pt_settings* s) {
  if (!(h->flags & PT_HOSTF_NET_FALLBACK)) {
    if (s->net_from_argument && s->net_value && *s->net_value)
      pt_res_note(r, "%s does not look for a profiler in the net plugin library.", h->releases);
    return;
  }
  const char* prefix = (h->flags & PT_HOSTF_RCCL_CONF) ? "librccl-net" : "libnccl-net";
  if (!s->net_value) {
    char name[64];
    snprintf(name, sizeof name, "%s.so", prefix);
    if (s->net_default) pt_res_add(r, name, PT_SRC_NET_PLUGIN, PT_PHASE_HOST);
    return;
  }
  if (!strcasecmp(s->net_value, "none")) return;
  char* list = strdup(s->net_value);
  if (!list) {
    r->nomem = 1;
    return;
  }
  int entries = 0;
  char* save = NULL;
  for (char* e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
    if (entries == NET_MAX_ENTRIES) {
      pt_res_note(r, "NCCL_NET_PLUGIN lists more than %d libraries: %s ignores the rest.",
                  NET_MAX_ENTRIES, h->releases);
      break;
    }
    if (strlen(e) > NET_MAX_ENTRY) {
      pt_res_note(r, "NCCL_NET_PLUGIN entry '%.40s...' is longer than %d characters: %s skips it.",
                  e, NET_MAX_ENTRY, h->releases);
      continue;
    }
    entries++;
    open_plugin_lib(r, h, e, prefix, PT_SRC_NET_PLUGIN, PT_SRC_NET_PLUGIN, 0);
  }
  free(list);
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

  if (!set)
    pt_res_add(r, PT_DEFAULT_NAME, PT_SRC_DEFAULT, PT_PHASE_HOST);
  else {
    host_value_candidates(r, h, v);
    notes_on_value(r, h, s, v);
  }
  autoload_candidate(r, h, s);
  net_candidates(r, h, s);
  if (s->home) home_candidates(r, s);
  return PT_OK;
}
