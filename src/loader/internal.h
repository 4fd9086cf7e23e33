/*
 * internal.h — what the loader's files share and nobody else sees.
 *
 * The loader is one pipeline:
 *
 *   request.c + conf.c       request -> settings (env, config files, checks)
 *   candidates.c             settings + host -> ordered candidate list
 *     homedir.c, version.c     (PROXYTRACE_HOME: versioned files, sorted)
 *     librccl.c                (auto-load: the directory of librccl)
 *   evaluate.c               candidate list -> outcomes, through a backend:
 *     open.c                   dlopen/dlsym          (pt_load)
 *     probe.c                  ELF file reading      (pt_probe)
 *       elf.c, search.c
 *   result.c, report.c       storage and printing of the result
 *   writable.c               notes on files and directories others can write
 *   once.c                   load-once state (pt_loader)
 *
 * Everything a probe and a load must agree on (the list, the order, the
 * acceptance rules, the status) lives in the shared stages; the two
 * backends differ only in how they open a file and look up a symbol.
 */
#ifndef PT_LOADER_INTERNAL_H
#define PT_LOADER_INTERNAL_H

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#include "proxytrace/loader.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* File-name stem of the proxytrace plugin (auto-load, PROXYTRACE_HOME). */
#define PT_PLUGIN_STEM "librccl-profiler-proxytrace.so"
/* What NCCL derives from a short name: libnccl-profiler-<name>.so. */
#define PT_NCCL_PREFIX "libnccl-profiler"
#define PT_RCCL_PREFIX "librccl-profiler" /* RCCL 2.31 short names */
#define PT_DEFAULT_NAME "libnccl-profiler.so"
#define PT_DUMP_SYMBOL "ncclProfilerProxyTraceDump"
/* The newest profiler API any host profile knows (NCCL 2.31+, RCCL 2.31). */
#define PT_MAX_API 7

/* Every ncclProfiler_vN table: name + 5 function pointers (LP64: 48 bytes). */
#define PT_TABLE_SLOTS 6

/* Candidate phases: the host stops at the first library it can open, even
 * when that one is then refused; the PROXYTRACE_HOME search falls through
 * to the next candidate on any refusal. */
enum { PT_PHASE_HOST = 0, PT_PHASE_HOME = 1 };

/* ---- result storage (result.c) ---------------------------------------- */

typedef struct {
  int phase;
  int preset;       /* outcome decided by the generator; not opened     */
  int opened;       /* passed the open step                            */
  int have_id;
  dev_t dev;
  ino_t ino;
  unsigned exported; /* bit N set: exports ncclProfiler_vN              */
} pt_cand_priv;

typedef struct {
  pt_result pub;
  pt_candidate* cands;
  pt_cand_priv* priv;
  size_t cap_cands;
  const char** notes;
  size_t cap_notes;
  char** owned;
  size_t n_owned, cap_owned;
  int nomem;
  int truncated; /* a name was cut to the host's limit                */
  int disabled;  /* value "none"                                       */
  int invalid;   /* the request was rejected                           */
  int major;     /* plugin major required under PROXYTRACE_HOME        */
  int value_set; /* NCCL_PROFILER_PLUGIN was set and not empty         */
  const char* ld_library_path; /* what the probe searches for bare names */
  const char* const* envp; /* where variables are read; NULL = the process */
} pt_res;

pt_res* pt_res_new(pt_host host, int probed);
/* Keep a copy of s (NULL stays NULL) for the life of the result. */
const char* pt_res_keep(pt_res* r, const char* s);
const char* pt_res_keepf(pt_res* r, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void pt_res_note(pt_res* r, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append a candidate; NULL when out of memory. */
pt_candidate* pt_res_add(pt_res* r, const char* name, pt_source src, int phase);
/* Refuse candidate i with an outcome and a formatted reason. */
void pt_res_refuse(pt_res* r, size_t i, pt_outcome o, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- settings (request.c, ncclconf.c) --------------------------------- */

typedef struct {
  const char* value;        /* NCCL_PROFILER_PLUGIN as the host sees it  */
  const char* origin;       /* "environment", "argument", conf path      */
  int from_path;            /* the value came from pt_request.path       */
  int from_name;            /* the value came from pt_request.name       */
  const char* rccl_flag;    /* RCCL_ENABLE_PROXY_TRACE text; NULL=unset  */
  const char* rccl_flag_origin;
  const char* rccl_dir;
  const void* rccl_anchor;
  const char* home;
  const char* net_value;    /* NCCL_NET_PLUGIN as the host sees it       */
  const char* net_origin;
  int net_default;          /* unset, and the host's default applies     */
  int net_from_argument;    /* given in the request, not the environment */
  const char* ld_library_path;
  int major;
} pt_settings;

/* Fill settings from the request (strings kept in r). Returns PT_OK or
 * PT_EINVAL with a note saying what to fix. */
int pt_settings_resolve(pt_res* r, const pt_request* req, pt_settings* s);

/* A variable of the environment the request is answered for: r->envp when
 * set (pt_probe_env), else the process environment. NULL when unset. */
const char* pt_res_getenv(const pt_res* r, const char* name);

/* Look NAME up in the host's config files as the host does (conf.c): NCCL
 * $NCCL_CONF_FILE if set and non-empty, else ~/.nccl.conf, then
 * /etc/nccl.conf; RCCL ~/.rccl.conf, then /etc/rccl.conf; the first file
 * that sets it wins. Returns the value (kept in r) and sets *origin to the
 * file, or NULL. */
const char* pt_conf_lookup(pt_res* r, const pt_host_info* h, const char* name,
                           const char** origin);

/* ---- candidates (candidates.c, homedir.c, version.c, librccl.c) ------- */

/* The one candidate generator used by pt_probe() and pt_load(). Fills the
 * candidate list and the notes of r. Returns PT_OK, or PT_EDISABLED. */
int pt_candidates_generate(pt_res* r, const pt_settings* s);

/* Append the PROXYTRACE_HOME candidates of one directory: <stem>.MAJOR,
 * then <stem>.MAJOR.* newest first (numeric), then the unversioned <stem>;
 * files of another major are listed as refused. Returns the number added. */
size_t pt_homedir_expand(pt_res* r, const char* dir, const char* stem, int major);

/* Parse the version after "<stem>." ("1", "1.10.2"): up to 3 components,
 * each a decimal number. Returns the count (1..3), or 0 if not a version. */
int pt_version_parse(const char* text, unsigned long v[3]);
/* Order for sorting: newer first (<0 when a is newer than b). */
int pt_version_cmp_newest_first(const unsigned long a[3], int na, const unsigned long b[3],
                                int nb);

/* Directory of the librccl this process uses: s->rccl_dir, else the file
 * of s->rccl_anchor (dladdr), else a loaded librccl.so* (found through
 * dl_iterate_phdr, named with dladdr). Returns 1 and fills dir, or 0. */
int pt_librccl_dir(const pt_settings* s, char* dir, size_t n, const char** how);

/* Read an integer as NCCL and RCCL read their parameters:
 * strtoll(text, NULL, 0), so leading blanks and trailing text are accepted
 * ("1abc" is 1) and a text without digits is 0; only an overflow (errno)
 * falls back to the default. Returns PT_PARAM_NUMBER (a number, nothing
 * after it), PT_PARAM_TRAILING (a number followed by other text),
 * PT_PARAM_NO_DIGITS (no number: *v = 0) or PT_PARAM_RANGE (out of range:
 * the host uses the default); *v is what the host uses, given `deflt`. */
enum { PT_PARAM_NUMBER, PT_PARAM_TRAILING, PT_PARAM_NO_DIGITS, PT_PARAM_RANGE };
int pt_parse_param(const char* text, long long deflt, long long* v);

/* Notes about a plugin file, or a PROXYTRACE_HOME directory, that every
 * user can write (writable.c). */
void pt_note_writable_plugin(pt_res* r, const char* file);
void pt_note_writable_home(pt_res* r, const char* dir);

/* ---- evaluation (evaluate.c) ------------------------------------------ */

typedef struct {
  int found;
  int is_object;       /* STT_OBJECT (a table is data, not code)       */
  size_t size;         /* st_size                                       */
  unsigned nonnull;    /* bit i: table slot i is not NULL               */
  void* addr;          /* loader only                                   */
} pt_sym;

/* An opened candidate: a dlopen handle (the loader; the probe for the main
 * program or a library already loaded) or an ELF file (the probe). */
typedef struct pt_elf pt_elf;
typedef struct pt_obj {
  void* handle;
  pt_elf* elf;
  int reused; /* the library was already loaded in this process */
} pt_obj;

typedef struct {
  /* Open candidate i. On PT_CAND_OK sets *obj and the candidate's file;
   * otherwise refuses the candidate (outcome + reason). */
  pt_outcome (*open)(pt_res* r, size_t i, pt_obj** obj);
  /* Look up a symbol. Returns 1 when found (fills *out), 0 when absent. */
  int (*symbol)(pt_obj* obj, const char* name, pt_sym* out);
  /* The candidate is accepted: fill the result from obj (keeps it). */
  void (*accept)(pt_res* r, size_t i, pt_obj* obj, const pt_sym* table, int version,
                 const pt_sym* dump);
  /* The candidate is refused after opening: release obj. */
  void (*release)(pt_obj* obj);
} pt_backend;

/* Run the candidate list through the shared acceptance rules. Returns the
 * final status, also stored in r->pub.status. */
int pt_evaluate(pt_res* r, const pt_backend* be);

/* The whole pipeline for pt_probe() and pt_load(): settings, candidates,
 * evaluation with the given backend. */
int pt_run(const pt_request* req, pt_host host, int probed, const pt_backend* be,
           pt_result** out);
/* The same, reading the environment from envp (NULL = the process's). */
int pt_run_env(const pt_request* req, pt_host host, int probed, const pt_backend* be,
               const char* const* envp, pt_result** out);

/* Shared helpers of the two backends. */
pt_outcome pt_classify_errno(int err);
/* Would the dynamic linker treat this name as a path (contains '/')? */
int pt_is_path(const char* name);

/* dlopen side (open.c), also used by the probe for objects that are
 * already in the process (looking at them runs no code). */
pt_outcome pt_dl_open(pt_res* r, size_t i, pt_obj** obj, int noload_only);
int pt_dl_symbol(pt_obj* obj, const char* name, pt_sym* out);
/* The file the dynamic linker recorded for a handle ("" = main program). */
void pt_dl_file(void* handle, int is_main, char* out, size_t n);

/* ---- ELF reading (elf.c) ---------------------------------------------- */

/* Open a file the way the dynamic linker would check it before mapping:
 * readable, regular, an ELF shared object of this machine's class and
 * architecture, not an executable. On failure returns the outcome and
 * writes the reason; `wrong_arch` is set when the only fault is the class
 * or machine (the dynamic linker skips such files while searching). */
pt_outcome pt_elf_open(const char* path, pt_elf** out, char* reason, size_t n, int* wrong_arch);
/* DT_SONAME or NULL. */
const char* pt_elf_soname(const pt_elf* e);
/* A defined, exported dynamic symbol. Returns 1 and fills *out, or 0. */
int pt_elf_symbol(const pt_elf* e, const char* name, pt_sym* out);
void pt_elf_close(pt_elf* e);

/* ---- dynamic-linker search emulation (search.c) ----------------------- */

/* Find a bare name (no '/') as dlopen would from a caller without RPATH
 * or RUNPATH: LD_LIBRARY_PATH, /etc/ld.so.cache, the system directories.
 * Files of another ELF class/machine are skipped as the dynamic linker
 * does. Returns 1 and fills path, or 0 (not found). */
int pt_search_library(const char* name, const char* ld_library_path, char* path, size_t n);

/* ---- debug trace (evaluate.c) ----------------------------------------- */

/* PROXYTRACE_LOADER_DEBUG=1: every decision goes to stderr as it happens. */
int pt_debug_enabled(void);
void pt_debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
