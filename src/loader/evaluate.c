/*
 * evaluate.c — the acceptance rules, shared by the probe and the loader.
 *
 * Each candidate goes through the same steps in the same order; only
 * "open" and "look up a symbol" differ between the two backends (open.c
 * uses dlopen/dlsym, probe.c reads the ELF file), so the two can only
 * disagree where reading a file cannot predict the dynamic linker (a
 * missing dependency, a constructor that fails):
 *
 *   1. name longer than a path can be             -> too long
 *   2. same file as an earlier refused candidate  -> duplicate
 *   3. PROXYTRACE_HOME: SONAME of another major    -> wrong major
 *   4. open (backend)                             -> not found, unreadable, …
 *   5. ncclProfiler_v<native> … _v1, first found  -> else no symbol
 *   6. the table: a data object of 48 bytes, no NULL pointer -> else bad table
 *
 * The host stops at the first library it manages to open, even when that
 * one is then refused (openPluginLib returns the first handle it gets, and
 * ncclProfilerPluginLoad fails on it: v2.28.9-1 src/plugin/plugin_open.cc:75-80,
 * src/plugin/profiler.cc:59-86); the PROXYTRACE_HOME search instead moves
 * on to the next candidate.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

static const char* const slot_names[PT_TABLE_SLOTS] = {
    "name", "init", "startEvent", "stopEvent", "recordEventState", "finalize"};

int pt_debug_enabled(void) {
  const char* v = getenv("PROXYTRACE_LOADER_DEBUG");
  return v && *v && strcmp(v, "0") != 0;
}

void pt_debug(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("proxytrace-loader: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int pt_is_path(const char* name) { return strchr(name, '/') != NULL; }

pt_outcome pt_classify_errno(int err) {
  switch (err) {
    case ENOENT: return PT_CAND_NOT_FOUND;
    case EACCES:
    case EPERM: return PT_CAND_UNREADABLE;
    case ENAMETOOLONG: return PT_CAND_TOO_LONG;
    default: return PT_CAND_LOAD_ERROR;
  }
}

/* Refused by an earlier candidate that is the same file? */
static int is_duplicate(pt_res* r, size_t i) {
  pt_cand_priv* p = &r->priv[i];
  if (!p->have_id) return 0;
  for (size_t j = 0; j < i; j++) {
    pt_cand_priv* q = &r->priv[j];
    if (!q->have_id || q->dev != p->dev || q->ino != p->ino) continue;
    if (r->cands[j].outcome == PT_CAND_OK || r->cands[j].outcome == PT_CAND_NOT_TRIED) continue;
    pt_res_refuse(r, i, PT_CAND_DUPLICATE,
                  "not opened again: the same file as candidate %zu, which was refused (%s), "
                  "so it would be refused the same way",
                  j + 1, pt_outcome_name(r->cands[j].outcome));
    return 1;
  }
  return 0;
}

static void identify(pt_res* r, size_t i, const char* file) {
  struct stat st;
  if (!file || !*file || stat(file, &st) != 0) return;
  r->priv[i].have_id = 1;
  r->priv[i].dev = st.st_dev;
  r->priv[i].ino = st.st_ino;
}

/* PROXYTRACE_HOME: a SONAME "<stem>.N" with N != major is another major,
 * whatever the file is called (an unversioned dev link, say). */
static int wrong_soname(pt_res* r, size_t i) {
  pt_elf* e = NULL;
  char reason[256];
  if (pt_elf_open(r->cands[i].name, &e, reason, sizeof reason, NULL) != PT_CAND_OK) return 0;
  const char* so = pt_elf_soname(e);
  size_t n = strlen(PT_PLUGIN_STEM);
  int refused = 0;
  if (so && strncmp(so, PT_PLUGIN_STEM, n) == 0 && so[n] == '.') {
    char* end;
    long m = strtol(so + n + 1, &end, 10);
    if (end != so + n + 1 && m != r->major) {
      pt_res_refuse(r, i, PT_CAND_WRONG_MAJOR, "SONAME %s is major %ld, need %d", so, m, r->major);
      refused = 1;
    }
  }
  pt_elf_close(e);
  return refused;
}

static void no_symbol(pt_res* r, size_t i, unsigned exported, const pt_host_info* h) {
  if (!exported) {
    pt_res_refuse(r, i, PT_CAND_NO_SYMBOL,
                  "exports no ncclProfiler_v1..v7 table: not a profiler plugin (check with "
                  "'nm -D --defined-only FILE | grep ncclProfiler')");
    return;
  }
  char list[64] = "";
  for (int v = 1; v <= PT_MAX_API; v++)
    if (exported & (1u << v))
      snprintf(list + strlen(list), sizeof list - strlen(list), "%sv%d", *list ? "," : "", v);
  pt_res_refuse(r, i, PT_CAND_NO_SYMBOL,
                "exports ncclProfiler %s only; %s looks for v%d..v1: use a newer host or a "
                "plugin that also exports an older version",
                list, h->releases, h->native_version);
}

static int valid_table(pt_res* r, size_t i, const pt_sym* t, int v) {
  const size_t need = PT_TABLE_SLOTS * sizeof(void*);
  if (!t->is_object) {
    pt_res_refuse(r, i, PT_CAND_BAD_TABLE,
                  "ncclProfiler_v%d is not a data object (a table), the host would read code "
                  "as a table",
                  v);
    return 0;
  }
  if (t->size < need) {
    pt_res_refuse(r, i, PT_CAND_BAD_TABLE, "ncclProfiler_v%d is %zu bytes; a table is %zu", v,
                  t->size, need);
    return 0;
  }
  for (int k = 0; k < PT_TABLE_SLOTS; k++) {
    if (!(t->nonnull & (1u << k))) {
      pt_res_refuse(r, i, PT_CAND_BAD_TABLE,
                    "ncclProfiler_v%d.%s is NULL: the host would crash using it", v,
                    slot_names[k]);
      return 0;
    }
  }
  return 1;
}

/* The status, and (*decider) the candidate it rests on, if one does. A
 * net plugin library that has no profiler in it is the normal case, not a
 * fault of the profiler, so net candidates never decide a failure. */
static int status_of(pt_res* r, size_t accepted, size_t* decider) {
  *decider = accepted;
  if (r->nomem) return PT_ENOMEM;
  if (r->invalid) return PT_EINVAL;
  if (r->disabled) return PT_EDISABLED;
  if (accepted != (size_t)-1) return PT_OK;
  if (r->truncated) return PT_ENAMETOOLONG;
  for (size_t i = 0; i < r->pub.n_candidates; i++) {
    if (r->cands[i].source == PT_SRC_NET_PLUGIN) continue;
    *decider = i;
    switch (r->cands[i].outcome) {
      case PT_CAND_TOO_LONG: return PT_ENAMETOOLONG;
      case PT_CAND_UNREADABLE:
      case PT_CAND_NOT_ELF:
      case PT_CAND_LOAD_ERROR: return PT_ELOAD;
      case PT_CAND_WRONG_MAJOR:
      case PT_CAND_NO_SYMBOL: return PT_EINCOMPATIBLE;
      case PT_CAND_BAD_TABLE: return PT_EBADPLUGIN;
      default: break;
    }
  }
  *decider = (size_t)-1;
  return PT_ENOTFOUND;
}

/* What to do about the first candidate refused in each of these ways. */
static void hints(pt_res* r) {
  int seen_missing = 0, seen_unreadable = 0, seen_not_elf = 0;
  for (size_t i = 0; i < r->pub.n_candidates; i++) {
    const pt_candidate* c = &r->cands[i];
    const char* file = *c->file ? c->file : c->name;
    if (c->outcome == PT_CAND_NOT_FOUND && c->source == PT_SRC_VALUE && pt_is_path(c->name) &&
        !seen_missing++)
      pt_res_note(r,
                  "NCCL_PROFILER_PLUGIN names a file that does not exist: %s. Fix the path (a "
                  "relative one is taken from the current directory), or unset the variable.",
                  c->name);
    if (c->outcome == PT_CAND_UNREADABLE && !seen_unreadable++)
      pt_res_note(r,
                  "%s cannot be read by this user: make it readable (chmod a+r) and its "
                  "directories searchable (chmod a+x).",
                  file);
    if (c->outcome == PT_CAND_NOT_ELF && !seen_not_elf++)
      pt_res_note(r,
                  "%s is not a shared library (a text file, a truncated copy or a Git LFS "
                  "pointer?): copy or build the plugin again.",
                  file);
  }
}

static void closing_notes(pt_res* r, int status, size_t accepted) {
  if (status != PT_OK) hints(r);
  if (status == PT_ENOTFOUND)
    pt_res_note(r,
                "no candidate exists. To load proxytrace: NCCL_PROFILER_PLUGIN=/path/to/%s; or, "
                "with RCCL, RCCL_ENABLE_PROXY_TRACE=1 and %s beside librccl; or "
                "NCCL_PROFILER_PLUGIN=proxytrace with libnccl-profiler-proxytrace.so on "
                "LD_LIBRARY_PATH.",
                PT_PLUGIN_STEM, PT_PLUGIN_STEM);
  if (status == PT_OK && accepted < r->pub.n_candidates)
    pt_note_writable_plugin(r, r->cands[accepted].file);
  if (status == PT_OK && r->value_set && accepted < r->pub.n_candidates &&
      r->cands[accepted].source != PT_SRC_VALUE && r->cands[accepted].source != PT_SRC_SHORT_NAME &&
      r->cands[accepted].source != PT_SRC_STATIC)
    pt_res_note(r,
                "NCCL_PROFILER_PLUGIN=%s did not load (see candidate 1); the plugin comes from "
                "the %s candidate instead.",
                r->pub.value, pt_source_name(r->cands[accepted].source));
  if (r->pub.via_home)
    pt_res_note(r,
                "this answer rests on PROXYTRACE_HOME, which NCCL and RCCL themselves never "
                "read: a program using libproxytrace-loader looks there, the host does not. For "
                "the host, set NCCL_PROFILER_PLUGIN to the plugin's path.");
}

int pt_evaluate(pt_res* r, const pt_backend* be) {
  const pt_host_info* h = pt_host_info_of(r->pub.host);
  int dbg = pt_debug_enabled();
  size_t accepted = (size_t)-1;
  size_t host_opened = 0; /* 1 + index of the library the host opened */
  for (size_t i = 0; i < r->pub.n_candidates && !r->invalid && !r->disabled; i++) {
    pt_candidate* c = &r->cands[i];
    pt_cand_priv* p = &r->priv[i];
    if (p->preset) goto next;
    if (accepted != (size_t)-1) {
      c->outcome = PT_CAND_NOT_TRIED;
      goto next;
    }
    if (p->phase == PT_PHASE_HOST && host_opened) {
      pt_res_refuse(r, i, PT_CAND_NOT_TRIED,
                    "the host stops at the first library it opens (candidate %zu)", host_opened);
      goto next;
    }
    if (strlen(c->name) >= PATH_MAX) {
      pt_res_refuse(r, i, PT_CAND_TOO_LONG, "name is %zu bytes; a path holds at most %d",
                    strlen(c->name), PATH_MAX - 1);
      goto next;
    }
    if (pt_is_path(c->name)) identify(r, i, c->name);
    if (is_duplicate(r, i)) goto next;
    if (p->phase == PT_PHASE_HOME && wrong_soname(r, i)) goto next;

    pt_obj* obj = NULL;
    if (be->open(r, i, &obj) != PT_CAND_OK) goto next;
    p->opened = 1;
    if (p->phase == PT_PHASE_HOST) host_opened = i + 1;
    if (!p->have_id) {
      identify(r, i, c->file);
      if (is_duplicate(r, i)) {
        be->release(obj);
        goto next;
      }
    }

    pt_sym syms[PT_MAX_API + 1];
    char sym[32];
    for (int v = 1; v <= PT_MAX_API; v++) {
      snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
      if (be->symbol(obj, sym, &syms[v])) p->exported |= 1u << v;
    }
    pt_sym dump;
    c->has_dump_hook = be->symbol(obj, PT_DUMP_SYMBOL, &dump);
    int chosen = 0;
    for (int v = h->native_version; v >= 1 && !chosen; v--)
      if (p->exported & (1u << v)) chosen = v;
    if (!chosen) {
      no_symbol(r, i, p->exported, h);
      be->release(obj);
      goto next;
    }
    c->api_version = chosen;
    if (!valid_table(r, i, &syms[chosen], chosen)) {
      be->release(obj);
      goto next;
    }
    c->outcome = PT_CAND_OK;
    c->reason = "";
    accepted = i;
    be->accept(r, i, obj, &syms[chosen], chosen, c->has_dump_hook ? &dump : NULL);
  next:
    if (dbg)
      pt_debug("%s %s: candidate %zu '%s' [%s]: %s%s%s", r->pub.probed ? "probe" : "load",
               h->name, i + 1, *c->name ? c->name : "(main program)", pt_source_name(c->source),
               pt_outcome_name(c->outcome), *c->reason ? ": " : "", c->reason);
  }
  size_t decider;
  int status = status_of(r, accepted, &decider);
  r->pub.via_home = decider != (size_t)-1 && r->cands[decider].source == PT_SRC_HOME;
  closing_notes(r, status, accepted);
  if (r->nomem) status = PT_ENOMEM;
  r->pub.status = status;
  if (dbg)
    pt_debug("%s %s: %s", r->pub.probed ? "probe" : "load", h ? h->name : "?",
             pt_err_name(status));
  return status;
}

int pt_run(const pt_request* req, pt_host host, int probed, const pt_backend* be,
           pt_result** out) {
  return pt_run_env(req, host, probed, be, NULL, out);
}

int pt_run_env(const pt_request* req, pt_host host, int probed, const pt_backend* be,
               const char* const* envp, pt_result** out) {
  if (!out) return PT_EINVAL;
  *out = NULL;
  pt_res* r = pt_res_new(host, probed);
  if (!r) return PT_ENOMEM;
  r->envp = envp;
  pt_settings s;
  if (pt_settings_resolve(r, req, &s) == PT_OK) pt_candidates_generate(r, &s);
  int rc = pt_evaluate(r, be);
  *out = &r->pub;
  return rc;
}
