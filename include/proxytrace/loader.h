/*
 * proxytrace/loader.h — find, check and load an NCCL/RCCL profiler plugin
 * exactly as a given NCCL or RCCL release would.
 *
 * The loader answers one question: "with these settings, which profiler
 * plugin would this host load, and if none, why not?" It answers it in two
 * ways that share one candidate generator and one set of acceptance rules:
 *
 *   pt_probe()  looks at files only (ELF dynamic symbols, relocations,
 *               SONAME) and never runs code from a plugin;
 *   pt_load()   really opens the candidates with dlopen(RTLD_NOW|RTLD_LOCAL)
 *               and returns the chosen ncclProfiler_vN table.
 *
 * For the same request both return the same candidate list with the same
 * outcome for each entry. The probe cannot see a missing dependency of a
 * plugin (a DT_NEEDED library the dynamic linker cannot find) or code that
 * fails in a constructor; run pt_load() in a child process for that
 * (`proxytrace probe --deep`).
 *
 * Usage, one-shot:
 *
 *   pt_request req;
 *   pt_request_init(&req);
 *   pt_request_from_environment(&req);      // NCCL_PROFILER_PLUGIN, …
 *   pt_host host;
 *   pt_host_parse("rccl", &host);
 *   pt_result* res;
 *   int rc = pt_load(&req, host, &res);     // rc == res->status
 *   if (rc == PT_OK) use(res->table, res->api_version, res->dump_hook);
 *   else pt_result_print(res, stderr);      // every candidate, and why
 *   pt_result_free(res);                    // keeps the library loaded
 *
 * Usage, load-once as a host does (thread-safe, failure is sticky):
 *
 *   pt_loader* l;  pt_loader_new(&l);
 *   const pt_result* res;
 *   pt_loader_load(l, &req, host, &res);    // from any number of threads
 *
 * Error convention: every function that can fail returns PT_OK (0) or a
 * negative PT_E* code; pt_strerror() says what it means. pt_probe() and
 * pt_load() also return a result (unless the code is PT_ENOMEM) whose
 * `status` equals the return value and whose notes say what to do.
 *
 * Thread safety: pt_probe() and pt_load() keep no global state and may run
 * concurrently (dlopen itself is serialised by the C library). A pt_loader
 * may be shared by any number of threads. Nothing here writes the
 * environment.
 *
 * Link: -lproxytrace-loader -ldl -lpthread (pkg-config proxytrace-loader).
 */
#ifndef PROXYTRACE_LOADER_H
#define PROXYTRACE_LOADER_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PT_EXTERN __attribute__((visibility("default")))
#else
#define PT_EXTERN
#endif

/* ---------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------- */

/* XX(code, value, message). A result's status is one of these. */
#define PT_ERRNO_MAP(XX)                                                              \
  XX(PT_OK, 0, "success")                                                            \
  XX(PT_EINVAL, -1, "invalid argument or request")                                   \
  XX(PT_ENOMEM, -2, "out of memory")                                                 \
  XX(PT_ENOTFOUND, -3, "no profiler plugin found")                                   \
  XX(PT_EDISABLED, -4, "profiler disabled (NCCL_PROFILER_PLUGIN=none)")              \
  XX(PT_EINCOMPATIBLE, -5, "plugin found but not compatible with this host")          \
  XX(PT_ELOAD, -6, "plugin found but the dynamic loader refused it")                  \
  XX(PT_EBADPLUGIN, -7, "plugin exports an invalid ncclProfiler table")              \
  XX(PT_ENAMETOOLONG, -8, "NCCL_PROFILER_PLUGIN value longer than the host accepts")

typedef enum {
#define PT_ERRNO_ENUM_(code, value, msg) code = value,
  PT_ERRNO_MAP(PT_ERRNO_ENUM_)
#undef PT_ERRNO_ENUM_
} pt_errno;

/* "no profiler plugin found" etc.; "unknown error" for other values. */
PT_EXTERN const char* pt_strerror(int err);
/* "PT_ENOTFOUND" etc.; "PT_E?" for other values. */
PT_EXTERN const char* pt_err_name(int err);

/* ---------------------------------------------------------------------------
 * Host profiles: which NCCL/RCCL release's loading rules to follow
 * ------------------------------------------------------------------------- */

typedef enum {
  PT_HOST_NCCL_2_23 = 0, /* "nccl-2.23" (2.23.4): v1 only; no short names */
  PT_HOST_NCCL_2_24,     /* "nccl-2.24" (2.24.3): v2, v1; no short names  */
  PT_HOST_NCCL_2_25,     /* "nccl-2.25" (2.25.1): v2, v1; no short names  */
  PT_HOST_NCCL_2_26,     /* "nccl-2.26" (2.26.2-6): v3..v1; value, short name */
  PT_HOST_NCCL_2_27_3,   /* "nccl-2.27.3": v4..v1; paths do not work     */
  PT_HOST_NCCL_2_27,     /* "nccl-2.27" (2.27.5-7): v4..v1               */
  PT_HOST_NCCL_2_28,     /* "nccl-2.28" (2.28.3-9): v5..v1; `none`; net fallback */
  PT_HOST_NCCL_2_29,     /* "nccl-2.29" (2.29.2-7): v6..v1               */
  PT_HOST_NCCL_2_30,     /* "nccl-2.30" (2.30.3-7, master): v6..v1       */
  PT_HOST_RCCL,          /* "rccl": v6..v1; auto-load; dump hook         */
  PT_HOST_NCCL_2_31,     /* "nccl-2.31" (2.31.2): v7..v1                 */
  PT_HOST_NCCL_2_32,     /* "nccl-2.32" (2.32.3-7): v7..v1               */
  PT_HOST_RCCL_2_31,     /* "rccl-2.31": v7..v1; librccl-profiler-NAME.so */
  PT_HOST_COUNT
} pt_host;

/* Behaviour switches of a host profile (pt_host_info.flags). */
enum {
  PT_HOSTF_NONE_DISABLES = 1u << 0,  /* value "none" (any case) disables    */
  PT_HOSTF_SHORT_NAMES = 1u << 1,    /* NAME -> libnccl-profiler-NAME.so     */
  PT_HOSTF_PATHS = 1u << 2,          /* a value with '/' is opened as is     */
  PT_HOSTF_STATIC_PLUGIN = 1u << 3,  /* prefix of STATIC_PLUGIN = main program */
  PT_HOSTF_TRUNCATES = 1u << 4,      /* names cut to pt_host_info.max_value  */
  PT_HOSTF_CONF_FILES = 1u << 5,     /* config files feed the variables      */
  PT_HOSTF_NET_FALLBACK = 1u << 6,   /* profiler looked up in the net plugin */
  PT_HOSTF_AUTOLOAD = 1u << 7,       /* RCCL_ENABLE_PROXY_TRACE auto-load    */
  PT_HOSTF_DUMP_HOOK = 1u << 8,      /* host calls ncclProfilerProxyTraceDump */
  PT_HOSTF_TRIES_TWICE = 1u << 9,    /* the value is tried twice (2.23-2.25) */
  PT_HOSTF_RCCL_CONF = 1u << 10,     /* ~/.rccl.conf, /etc/rccl.conf; no
                                        NCCL_CONF_FILE                      */
  PT_HOSTF_CONF_HOME_ENV = 1u << 11, /* ~ is $HOME (else the passwd entry)   */
  PT_HOSTF_CONF_STRIPS_CR = 1u << 12, /* a trailing '\r' is cut from a line  */
  PT_HOSTF_ENV_PLUGIN = 1u << 13,    /* 2.28.7+: variables may come from an
                                        env plugin (NCCL_ENV_PLUGIN)        */
  PT_HOSTF_RCCL_SHORT = 1u << 14     /* RCCL 2.31: NAME -> librccl-profiler-NAME.so */
};

typedef struct {
  pt_host host;
  const char* name;     /* "nccl-2.28"                                  */
  const char* releases; /* "NCCL 2.28.3-2.28.9"                         */
  int native_version;   /* newest ncclProfiler_vN known: probes N..1    */
  unsigned flags;       /* PT_HOSTF_*                                   */
  size_t max_value;     /* longest name tried (254; 4095 on 2.23-2.25)  */
} pt_host_info;

/* Accepts "nccl-2.23" … "nccl-2.30", "nccl-2.27.3", "rccl", a full release
 * such as "nccl-2.27.7" or "2.28.9" (NCCL implied), and "nccl" (newest).
 * A patch level that is no release the profiles were checked against
 * ("nccl-2.28.1") is mapped to its minor's profile; pt_host_parse_note()
 * says so. Returns PT_OK or PT_EINVAL. */
PT_EXTERN int pt_host_parse(const char* text, pt_host* out);
/* For a text pt_host_parse() accepts: NULL when it names a profile or a
 * release that profile was checked against; otherwise writes into buf a
 * sentence saying which profile stands in for it ("NCCL 2.28.1 is not a
 * release: the nccl-2.28 profile (NCCL 2.28.3-2.28.9) is used") and returns
 * buf. NULL for a text pt_host_parse() refuses. */
PT_EXTERN const char* pt_host_parse_note(const char* text, char* buf, size_t n);
/* Static description of a profile; NULL for an out-of-range value. */
PT_EXTERN const pt_host_info* pt_host_info_of(pt_host host);
/* Short name ("rccl"); "?" for an out-of-range value. */
PT_EXTERN const char* pt_host_name(pt_host host);

/* ---------------------------------------------------------------------------
 * Requests: what the user asked for
 * ------------------------------------------------------------------------- */

/* pt_request.flags */
enum {
  /* Fields left NULL are read from the process environment when the request
   * is used (NCCL_PROFILER_PLUGIN, RCCL_ENABLE_PROXY_TRACE, NCCL_NET_PLUGIN,
   * PROXYTRACE_HOME, LD_LIBRARY_PATH). Set by pt_request_from_environment(). */
  PT_REQ_ENVIRONMENT = 1u << 0,
  /* A host variable that is not in the environment is taken from the
   * host's config files, as the host does before it loads a plugin: NCCL
   * reads $NCCL_CONF_FILE (or ~/.nccl.conf), then /etc/nccl.conf; RCCL
   * reads ~/.rccl.conf, then /etc/rccl.conf. Set by
   * pt_request_from_environment(). */
  PT_REQ_CONF_FILES = 1u << 1
};

/* All strings are borrowed: they must stay valid while the request is used.
 * At most one of `plugin`, `path` and `name` may be set; all three stand for
 * the NCCL_PROFILER_PLUGIN value and go through the host's rules. */
typedef struct {
  const char* plugin;     /* NCCL_PROFILER_PLUGIN as set; NULL = unset,
                             "" = set but empty (same as unset for NCCL)   */
  const char* path;       /* an explicit file path; must contain '/'       */
  const char* name;       /* a short name ("proxytrace"); must not hold '/' */
  const char* rccl_enable_proxy_trace; /* RCCL_ENABLE_PROXY_TRACE value as
                             set ("1"); NULL = unset. RCCL reads it as an
                             integer; anything else counts as 0.          */
  const char* rccl_dir;   /* directory of the librccl in use; NULL = find
                             the loaded librccl with dladdr               */
  const void* rccl_anchor; /* or: any address inside that librccl          */
  const char* home;       /* PROXYTRACE_HOME: after the host's own rules,
                             <home>/lib, <home>/lib64 and <home> are
                             searched for librccl-profiler-proxytrace.so.*
                             of the required major. NULL = don't.         */
  const char* net_plugin; /* NCCL_NET_PLUGIN as set (a path, a name or a
                             comma-separated list), for the 2.28+ fallback
                             to the net plugin library; NULL = unset: with
                             PT_REQ_ENVIRONMENT the host's default net
                             library (libnccl-net.so, RCCL librccl-net.so)
                             is assumed, without it none                 */
  const char* ld_library_path; /* LD_LIBRARY_PATH the probe assumes for bare
                             names; pt_load() always uses the one the
                             process started with.                        */
  int major;              /* plugin major required in `home`; 0 = this
                             library's own major                          */
  unsigned flags;         /* PT_REQ_*                                     */
} pt_request;

/* Zero the request: nothing set, nothing from the environment. */
PT_EXTERN void pt_request_init(pt_request* req);
/* Mark the request to take unset fields from the environment and from the
 * nccl.conf files (the host decides whether it reads those). */
PT_EXTERN void pt_request_from_environment(pt_request* req);
/* Set one field by its environment variable name: NCCL_PROFILER_PLUGIN,
 * RCCL_ENABLE_PROXY_TRACE, NCCL_NET_PLUGIN, PROXYTRACE_HOME,
 * LD_LIBRARY_PATH. `value` is borrowed. PT_EINVAL for any other name. */
PT_EXTERN int pt_request_set_var(pt_request* req, const char* name, const char* value);

/* ---------------------------------------------------------------------------
 * Results: what was (or would be) loaded, and every candidate's fate
 * ------------------------------------------------------------------------- */

/* Where a candidate comes from. */
typedef enum {
  PT_SRC_DEFAULT = 0, /* libnccl-profiler.so: variable unset or empty    */
  PT_SRC_VALUE,       /* NCCL_PROFILER_PLUGIN verbatim                   */
  PT_SRC_SHORT_NAME,  /* libnccl-profiler-<value>.so                     */
  PT_SRC_STATIC,      /* the main program (STATIC_PLUGIN prefix)         */
  PT_SRC_AUTOLOAD,    /* librccl-profiler-proxytrace.so beside librccl   */
  PT_SRC_NET_PLUGIN,  /* the host's net plugin library (NCCL_NET_PLUGIN) */
  PT_SRC_HOME         /* PROXYTRACE_HOME search (not a host rule)        */
} pt_source;

/* What happened to a candidate. The probe and the loader use the same
 * outcomes; PT_CAND_OK means "loaded" for one and "would load" for the
 * other. */
typedef enum {
  PT_CAND_OK = 0,       /* accepted: this is the plugin                    */
  PT_CAND_NOT_TRIED,    /* an earlier candidate was accepted               */
  PT_CAND_NOT_FOUND,    /* no such file (the dynamic linker's ENOENT)      */
  PT_CAND_TOO_LONG,     /* name longer than a path may be                  */
  PT_CAND_UNREADABLE,   /* exists, permission denied                       */
  PT_CAND_NOT_ELF,      /* exists, not an ELF shared object                */
  PT_CAND_LOAD_ERROR,   /* the dynamic linker refused it (see reason)      */
  PT_CAND_WRONG_MAJOR,  /* versioned file or SONAME of another major       */
  PT_CAND_NO_SYMBOL,    /* no ncclProfiler_vN that this host probes        */
  PT_CAND_BAD_TABLE,    /* the table is too small or holds NULL pointers   */
  PT_CAND_DUPLICATE     /* same file as an earlier, refused candidate: not
                           opened again, it would be refused the same way */
} pt_outcome;

typedef struct {
  const char* name;    /* as given to dlopen; "" = the main program        */
  const char* file;    /* file it resolved to; "" when there is none       */
  pt_source source;
  pt_outcome outcome;
  int api_version;     /* N of the ncclProfiler_vN found; 0 = none         */
  int has_dump_hook;   /* exports ncclProfilerProxyTraceDump               */
  const char* reason;  /* why refused (the dlerror text or an explanation);
                          "" when accepted or not tried                    */
} pt_candidate;

/* The dump hook's type is ncclProfilerProxyTraceDump_t (nccl/profiler_v6.h);
 * cast before calling. */
typedef void (*pt_fn)(void);

typedef struct {
  int status;             /* PT_OK or a PT_E* code (== the return value)    */
  pt_host host;
  int probed;             /* 1: from pt_probe(), nothing was loaded         */
  void* handle;           /* dlopen handle; NULL when probed or failed      */
  int api_version;        /* 1..7 when status == PT_OK                      */
  const void* table;      /* ncclProfiler_v<api_version>_t*; NULL if probed */
  pt_fn dump_hook;        /* ncclProfilerProxyTraceDump or NULL             */
  int has_dump_hook;      /* also set by the probe                          */
  const char* path;       /* file loaded (as the dynamic linker names it)   */
  const char* realpath;   /* the same, symlinks resolved                    */
  const char* plugin_name; /* the table's name; "" when probed              */
  int reused;             /* the file was already loaded in this process    */
  const char* value;      /* NCCL_PROFILER_PLUGIN as used; NULL = unset     */
  const char* value_origin; /* "environment", "argument", a conf file path  */
  size_t n_candidates;
  const pt_candidate* candidates; /* in the order the host tries them       */
  size_t n_notes;
  const char* const* notes;       /* warnings and what to do                */
  int via_home;           /* the answer rests on a PROXYTRACE_HOME candidate,
                             a place NCCL and RCCL never look              */
  const char* net_value;  /* NCCL_NET_PLUGIN as used; NULL = unset          */
  const char* net_value_origin; /* "environment", "argument", a conf file  */
} pt_result;

/* Dry run: the candidate list and each candidate's outcome from the files
 * alone. Never dlopens a file that is not loaded yet, so no plugin code
 * runs. Always sets *out (except on PT_ENOMEM); returns (*out)->status. */
PT_EXTERN int pt_probe(const pt_request* req, pt_host host, pt_result** out);

/* As pt_probe(), for a process started with the environment `envp` (NULL-
 * terminated "VAR=VALUE" strings, as execve() takes) instead of this one:
 * every variable the request takes from the environment is looked up there
 * (NCCL_PROFILER_PLUGIN, RCCL_ENABLE_PROXY_TRACE, NCCL_NET_PLUGIN,
 * NCCL_ENV_PLUGIN, PROXYTRACE_HOME, LD_LIBRARY_PATH; NCCL_CONF_FILE and
 * HOME for the config files), and a variable missing there is unset even
 * when this process has it. Nothing is written to the environment. envp
 * NULL: this process's (= pt_probe). */
PT_EXTERN int pt_probe_env(const pt_request* req, pt_host host, const char* const* envp,
                           pt_result** out);

/* Load: open the candidates in order with dlopen(RTLD_NOW|RTLD_LOCAL),
 * reusing a copy already loaded, probe ncclProfiler_v<native>…_v1, look up
 * ncclProfilerProxyTraceDump, validate the table. A refused candidate is
 * closed and the next one tried. Not once-only: see pt_loader. Always sets
 * *out (except on PT_ENOMEM); returns (*out)->status. */
PT_EXTERN int pt_load(const pt_request* req, pt_host host, pt_result** out);

/* Free a result from pt_probe()/pt_load(). Does not dlclose the handle
 * (call pt_result_close() first to do so). NULL is fine. */
PT_EXTERN void pt_result_free(pt_result* res);
/* dlclose the result's handle, if any, and clear handle/table/dump_hook.
 * Returns PT_OK, or PT_ELOAD when dlclose failed. */
PT_EXTERN int pt_result_close(pt_result* res);

/* Human-readable report: the outcome, the variables used, every candidate
 * in order with its outcome and reason, and the notes. */
PT_EXTERN int pt_result_print(const pt_result* res, FILE* f);
/* The same as one JSON object (for scripts). */
PT_EXTERN int pt_result_print_json(const pt_result* res, FILE* f);

/* This library's version, "MAJOR.MINOR.PATCH". */
PT_EXTERN const char* pt_version(void);

/* "ok", "not found", … and "value", "short name", …; "?" when unknown. */
PT_EXTERN const char* pt_outcome_name(pt_outcome o);
PT_EXTERN const char* pt_source_name(pt_source s);

/* ---------------------------------------------------------------------------
 * Load-once state, as a host keeps it
 * ------------------------------------------------------------------------- */

typedef struct pt_loader pt_loader; /* opaque */

PT_EXTERN int pt_loader_new(pt_loader** out);
/* The first call runs pt_load(); every later call returns the same result,
 * whatever its arguments: success until pt_loader_unload(), failure for
 * ever (sticky, as NCCL and RCCL do). Concurrent callers wait for the first.
 * *out stays owned by the loader and is valid until pt_loader_unload() or
 * pt_loader_free(). Returns (*out)->status. */
PT_EXTERN int pt_loader_load(pt_loader* l, const pt_request* req, pt_host host,
                             const pt_result** out);
/* After a success: dlclose and go back to "not loaded", so the next
 * pt_loader_load() loads again (as a host does when its last communicator
 * is destroyed). After a failure or before any load: nothing. PT_OK. */
PT_EXTERN int pt_loader_unload(pt_loader* l);
/* Unload (if loaded) and free. NULL is fine. */
PT_EXTERN void pt_loader_free(pt_loader* l);

#ifdef __cplusplus
}
#endif
#endif /* PROXYTRACE_LOADER_H */
