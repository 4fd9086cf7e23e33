/*
 * test_matrix.c — the probe and the loader against real files, one case per
 * way a plugin can be found, refused or missed.
 *
 * Every case runs in a fresh child process (this program with --case),
 * started with exactly the case's environment: the dynamic linker reads
 * LD_LIBRARY_PATH only at start-up, and a library loaded by one case must
 * not be "already loaded" in the next. The child runs pt_probe(), checks
 * that the probe loaded nothing, runs pt_load(), and prints one summary line
 * for each. The parent asserts, for every case, that the two lines are
 * identical (same status, API version, dump hook, file and the outcome of
 * every candidate in order) and that they match what the case expects.
 *
 * The Python binding runs the same cases (tests/python/test_matrix.py):
 * `test_matrix --export DIR` builds the fixtures in DIR and prints every
 * case, expanded, as one JSON line; the child started with --case-json
 * prints the probe's result as pt_result_print_json() does.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixtures.h"
#include "proxytrace/loader.h"

/* ---- the child ------------------------------------------------------------ */

static const char* outcome_key(pt_outcome o) {
  static const char* const k[] = {"ok",         "not_tried",   "not_found", "too_long",
                                  "unreadable", "not_elf",     "load_error", "wrong_major",
                                  "no_symbol",  "bad_table",   "duplicate"};
  return (unsigned)o < sizeof k / sizeof k[0] ? k[o] : "?";
}

static void summarize(const pt_result* r, char* out, size_t n) {
  char list[1024] = "";
  for (size_t i = 0; i < r->n_candidates; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "," : "",
             outcome_key(r->candidates[i].outcome));
  snprintf(out, n, "status=%s api=%d dump=%d reused=%d file=%s outcomes=%s",
           pt_err_name(r->status), r->api_version, r->has_dump_hook, r->reused,
           r->status == PT_OK ? r->realpath : "-", list);
}

static int child(int argc, char** argv, int json) {
  pt_host host = PT_HOST_RCCL;
  pt_request req;
  pt_request_init(&req);
  pt_request_from_environment(&req);
  const char* preload[4] = {0};
  int global[4] = {0};
  int npre = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--host") && pt_host_parse(argv[i + 1], &host) != PT_OK) return 90;
    if (!strcmp(argv[i], "--home")) req.home = argv[i + 1];
    if (!strcmp(argv[i], "--net-plugin")) req.net_plugin = argv[i + 1];
    if (!strncmp(argv[i], "--preload", 9) && npre < 4) {
      global[npre] = !strcmp(argv[i], "--preload-global"); /* as LD_PRELOAD would */
      preload[npre++] = argv[i + 1];
    }
  }
  for (int i = 0; i < npre; i++)
    if (!dlopen(preload[i], RTLD_NOW | (global[i] ? RTLD_GLOBAL : RTLD_LOCAL))) {
      fprintf(stderr, "preload %s: %s\n", preload[i], dlerror());
      return 91;
    }

  pt_result* p = NULL;
  pt_result* l = NULL;
  pt_probe(&req, host, &p);
  if (!p) return 92;
  if (json) {
    pt_result_print_json(p, stdout);
    pt_result_free(p);
    return 0;
  }
  /* The probe must not have mapped any candidate that was not there before. */
  int clean = 1;
  for (size_t i = 0; i < p->n_candidates; i++) {
    const char* f = p->candidates[i].file;
    if (!*f || p->candidates[i].source == PT_SRC_STATIC) continue;
    void* h = dlopen(f, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h) {
      int was_preloaded = 0;
      for (int k = 0; k < npre; k++) {
        char a[4096], b[4096];
        if (realpath(preload[k], a) && realpath(f, b) && !strcmp(a, b)) was_preloaded = 1;
      }
      if (!was_preloaded) clean = 0;
      dlclose(h);
    }
  }
  pt_load(&req, host, &l);
  if (!l) return 93;
  char sp[2048], sl[2048];
  summarize(p, sp, sizeof sp);
  summarize(l, sl, sizeof sl);
  printf("probe %s\nload %s\nclean %d\n", sp, sl, clean);
  for (size_t i = 0; i < l->n_notes; i++) printf("note %s\n", l->notes[i]);
  if (strcmp(sp, sl) != 0 || getenv("PT_MATRIX_VERBOSE")) {
    pt_result_print(p, stderr);
    pt_result_print(l, stderr);
  }
  pt_result_free(p);
  pt_result_free(l);
  return 0;
}

/* ---- the cases ------------------------------------------------------------ */

typedef struct {
  const char* name;
  const char* host;
  const char* env[6];  /* VAR=VALUE; {D} is the fixture folder, {LONG} / {HUGE} /
                          {SHORT240} values */
  const char* args[4]; /* child options, same substitutions */
  const char* cwd;     /* NULL = anywhere */
  int as_nobody;
  int status;
  int api;
  int dump;
  int reused;
  const char* file; /* expected plugin file (before realpath), NULL = none */
  const char* outcomes;
  const char* note; /* text one of the load's notes must contain, or NULL */
} mcase;

/* NCCL_NET_PLUGIN is "none" unless a case sets it, or leaves it unset with
 * this entry (unset, 2.28+ and RCCL also try the default net library). */
#define NET_UNSET "-NCCL_NET_PLUGIN"

#define GOOD "NCCL_PROFILER_PLUGIN={D}/good.so"
#define AUTO "RCCL_ENABLE_PROXY_TRACE=1"
#define RCCL_PRELOAD "--preload", "{D}/rccl/librccl.so"
#define HOME1 "{D}/home1/lib/librccl-profiler-proxytrace.so"
#define STATIC_PRELOAD "--preload-global", "{D}/good.so"
/* libnccl-profiler-<240 characters>.so cut at 254 characters. */
#define CUT_SHORT "{D}/ldlong/libnccl-profiler-{SHORT237}"

static const mcase cases[] = {
    {"path to a v1..v6 plugin (rccl)", "rccl", {GOOD}, {0}, NULL, 0, PT_OK, 6, 1, 0,
     "{D}/good.so", "ok", NULL},
    {"same plugin on nccl-2.23 takes v1 (value tried twice)", "nccl-2.23", {GOOD}, {0}, NULL, 0,
     PT_OK, 1, 1, 0, "{D}/good.so", "ok,not_tried", NULL},
    {"same plugin on nccl-2.28 takes v5", "nccl-2.28", {GOOD}, {0}, NULL, 0, PT_OK, 5, 1, 0,
     "{D}/good.so", "ok", NULL},
    {"only v1, newest host", "nccl-2.30", {"NCCL_PROFILER_PLUGIN={D}/v1only.so"}, {0}, NULL, 0,
     PT_OK, 1, 0, 0, "{D}/v1only.so", "ok", NULL},
    {"only v6 on nccl-2.28 (too new)", "nccl-2.28", {"NCCL_PROFILER_PLUGIN={D}/v6only.so"}, {0},
     NULL, 0, PT_EINCOMPATIBLE, 0, 0, 0, NULL, "no_symbol", NULL},
    {"only v6 on nccl-2.29", "nccl-2.29", {"NCCL_PROFILER_PLUGIN={D}/v6only.so"}, {0}, NULL, 0,
     PT_OK, 6, 1, 0, "{D}/v6only.so", "ok", NULL},
    {"only v7 on nccl-2.30 (too new)", "nccl-2.30", {"NCCL_PROFILER_PLUGIN={D}/v7only.so"}, {0},
     NULL, 0, PT_EINCOMPATIBLE, 0, 0, 0, NULL, "no_symbol", NULL},
    {"only v7 on nccl-2.31", "nccl-2.31", {"NCCL_PROFILER_PLUGIN={D}/v7only.so"}, {0}, NULL, 0,
     PT_OK, 7, 1, 0, "{D}/v7only.so", "ok", NULL},
    {"v1..v6 plugin on nccl-2.32 takes v6", "nccl-2.32", {GOOD}, {0}, NULL, 0, PT_OK, 6, 1, 0,
     "{D}/good.so", "ok", NULL},
    {"only v7 on rccl-2.31", "rccl-2.31", {"NCCL_PROFILER_PLUGIN={D}/v7only.so"}, {0}, NULL, 0,
     PT_OK, 7, 1, 0, "{D}/v7only.so", "ok", NULL},
    {"short name on rccl-2.31 is librccl-profiler-V.so", "rccl-2.31",
     {"NCCL_PROFILER_PLUGIN=proxytrace", "LD_LIBRARY_PATH={D}/ldpath:{D}/ldrccl"}, {0}, NULL, 0,
     PT_OK, 7, 1, 0, "{D}/ldrccl/librccl-profiler-proxytrace.so", "not_found,ok", NULL},
    {"short name on nccl-2.31 stays libnccl-profiler-V.so", "nccl-2.31",
     {"NCCL_PROFILER_PLUGIN=proxytrace", "LD_LIBRARY_PATH={D}/ldrccl:{D}/ldpath"}, {0}, NULL, 0,
     PT_OK, 6, 1, 0, "{D}/ldpath/libnccl-profiler-proxytrace.so", "not_found,ok", NULL},
    {"missing ncclProfiler symbols", "rccl", {"NCCL_PROFILER_PLUGIN={D}/nosym.so"}, {0}, NULL, 0,
     PT_EINCOMPATIBLE, 0, 0, 0, NULL, "no_symbol", NULL},
    {"table with a NULL init", "rccl", {"NCCL_PROFILER_PLUGIN={D}/nullinit.so"}, {0}, NULL, 0,
     PT_EBADPLUGIN, 0, 0, 0, NULL, "bad_table", NULL},
    {"table too small", "rccl", {"NCCL_PROFILER_PLUGIN={D}/small.so"}, {0}, NULL, 0,
     PT_EBADPLUGIN, 0, 0, 0, NULL, "bad_table", NULL},
    {"table symbol is a function", "rccl", {"NCCL_PROFILER_PLUGIN={D}/func.so"}, {0}, NULL, 0,
     PT_EBADPLUGIN, 0, 0, 0, NULL, "bad_table", NULL},
    {"not an ELF file", "rccl", {"NCCL_PROFILER_PLUGIN={D}/notelf.so"}, {0}, NULL, 0, PT_ELOAD, 0,
     0, 0, NULL, "not_elf", "is not a shared library"},
    {"empty file", "rccl", {"NCCL_PROFILER_PLUGIN={D}/empty.so"}, {0}, NULL, 0, PT_ELOAD, 0, 0, 0,
     NULL, "not_elf", NULL},
    {"unreadable file", "rccl", {"NCCL_PROFILER_PLUGIN={D}/unreadable.so"}, {0}, NULL, 1,
     PT_ELOAD, 0, 0, 0, NULL, "unreadable", "chmod a+r"},
    {"broken symlink", "rccl", {"NCCL_PROFILER_PLUGIN={D}/broken.so"}, {0}, NULL, 0,
     PT_ENOTFOUND, 0, 0, 0, NULL, "not_found", "names a file that does not exist"},
    {"symlink loop", "rccl", {"NCCL_PROFILER_PLUGIN={D}/loop.so"}, {0}, NULL, 0, PT_ELOAD, 0, 0,
     0, NULL, "load_error", NULL},
    {"a directory", "rccl", {"NCCL_PROFILER_PLUGIN={D}/home1"}, {0}, NULL, 0, PT_ELOAD, 0, 0, 0,
     NULL, "load_error", NULL},
    {"1.9 and 1.10 side by side: 1.10 wins", "nccl-2.30", {0}, {"--home", "{D}/home1"}, NULL, 0,
     PT_OK, 6, 1, 0, HOME1 ".1.10.0", "not_found,ok,not_tried", NULL},
    {"unversioned name (other major) beside .so.1", "nccl-2.30", {0}, {"--home", "{D}/home2"},
     NULL, 0, PT_OK, 6, 1, 0, "{D}/home2/lib/librccl-profiler-proxytrace.so.1",
     "not_found,ok,not_tried", NULL},
    {"only another major, also behind the unversioned name", "nccl-2.30", {0},
     {"--home", "{D}/home3"}, NULL, 0, PT_EINCOMPATIBLE, 0, 0, 0, NULL,
     "not_found,wrong_major,wrong_major", NULL},
    {"refused versioned file: the next one loads", "nccl-2.30", {0}, {"--home", "{D}/home4"},
     NULL, 0, PT_OK, 6, 1, 0, "{D}/home4/lib/librccl-profiler-proxytrace.so.1.1.0",
     "not_found,no_symbol,ok", NULL},
    {"right and wrong major", "nccl-2.30", {0}, {"--home", "{D}/home6"}, NULL, 0, PT_OK, 6, 1, 0,
     "{D}/home6/lib/librccl-profiler-proxytrace.so.1.0.0", "not_found,ok,wrong_major", NULL},
    {"same file by two names, refused once", "nccl-2.30", {0}, {"--home", "{D}/home5"}, NULL, 0,
     PT_EBADPLUGIN, 0, 0, 0, NULL, "not_found,bad_table,duplicate", NULL},
    {"same library by two names, already loaded", "rccl",
     {"NCCL_PROFILER_PLUGIN={D}/twonames/link.so"}, {"--preload", "{D}/twonames/real.so"}, NULL,
     0, PT_OK, 6, 1, 1, "{D}/twonames/real.so", "ok", NULL},
    {"value none disables (2.28+)", "nccl-2.28", {"NCCL_PROFILER_PLUGIN=NoNe"}, {0}, NULL, 0,
     PT_EDISABLED, 0, 0, 0, NULL, "", "disables the profiler"},
    {"value none is a file name on 2.27", "nccl-2.27", {"NCCL_PROFILER_PLUGIN=none"}, {0}, NULL,
     0, PT_ENOTFOUND, 0, 0, 0, NULL, "not_found,not_found", NULL},
    {"relative path", "rccl", {"NCCL_PROFILER_PLUGIN=./good.so"}, {0}, "{D}", 0, PT_OK, 6, 1, 0,
     "{D}/good.so", "ok", NULL},
    {"over-long value cut at 254 (2.30)", "nccl-2.30", {"NCCL_PROFILER_PLUGIN={LONG}"}, {0}, NULL,
     0, PT_ENAMETOOLONG, 0, 0, 0, NULL, "not_found", "keeps only the first 254"},
    {"the same long value on 2.25 (cut only at 4095)", "nccl-2.25", {"NCCL_PROFILER_PLUGIN={LONG}"}, {0},
     NULL, 0, PT_OK, 2, 1, 0, "{LONG}", "ok,not_tried", NULL},
    {"value longer than a path", "nccl-2.25", {"NCCL_PROFILER_PLUGIN={HUGE}"}, {0}, NULL, 0,
     PT_ENAMETOOLONG, 0, 0, 0, NULL, "too_long,too_long", NULL},
    {"auto-load beside a fake librccl", "rccl", {AUTO}, {RCCL_PRELOAD}, NULL, 0, PT_OK, 6, 1, 0,
     "{D}/rccl/librccl-profiler-proxytrace.so", "not_found,ok", NULL},
    {"auto-load after NCCL_PROFILER_PLUGIN failed", "rccl",
     {AUTO, "NCCL_PROFILER_PLUGIN={D}/missing.so"}, {RCCL_PRELOAD}, NULL, 0, PT_OK, 6, 1, 0,
     "{D}/rccl/librccl-profiler-proxytrace.so", "not_found,ok",
     "the plugin comes from the auto-load candidate"},
    {"auto-load flag that is not a number", "rccl", {"RCCL_ENABLE_PROXY_TRACE=yes"},
     {RCCL_PRELOAD}, NULL, 0, PT_ENOTFOUND, 0, 0, 0, NULL, "not_found",
     "Set RCCL_ENABLE_PROXY_TRACE=1"},
    {"auto-load flag ignored by NVIDIA NCCL", "nccl-2.30", {AUTO}, {RCCL_PRELOAD}, NULL, 0,
     PT_ENOTFOUND, 0, 0, 0, NULL, "not_found", NULL},
    {"host stops at the first library it opens", "rccl",
     {AUTO, "NCCL_PROFILER_PLUGIN={D}/nosym.so"}, {RCCL_PRELOAD}, NULL, 0, PT_EINCOMPATIBLE, 0, 0,
     0, NULL, "no_symbol,not_tried", NULL},
    {"short name through LD_LIBRARY_PATH", "nccl-2.28",
     {"NCCL_PROFILER_PLUGIN=proxytrace", "LD_LIBRARY_PATH={D}/nowhere:{D}/ldpath"}, {0}, NULL, 0,
     PT_OK, 5, 1, 0, "{D}/ldpath/libnccl-profiler-proxytrace.so", "not_found,ok", NULL},
    {"short name on 2.25 (not expanded)", "nccl-2.25",
     {"NCCL_PROFILER_PLUGIN=proxytrace", "LD_LIBRARY_PATH={D}/ldpath"}, {0}, NULL, 0,
     PT_ENOTFOUND, 0, 0, 0, NULL, "not_found,not_found", "does not expand short names"},
    {"path on 2.27.3 (paths broken)", "nccl-2.27.3", {GOOD}, {0}, NULL, 0, PT_ENOTFOUND, 0, 0, 0,
     NULL, "not_found", "NVIDIA/nccl#1732"},
    {"default name through LD_LIBRARY_PATH", "nccl-2.30", {"LD_LIBRARY_PATH={D}/ldpath"}, {0},
     NULL, 0, PT_OK, 1, 0, 0, "{D}/ldpath/libnccl-profiler.so", "ok", NULL},
    {"search finds a file that is not ELF", "nccl-2.30",
     {"NCCL_PROFILER_PLUGIN=libnccl-profiler-bad.so", "LD_LIBRARY_PATH={D}/ldbad:{D}/ldpath"}, {0},
     NULL, 0, PT_ELOAD, 0, 0, 0, NULL, "not_elf", NULL},
    {"STATIC_PLUGIN prefix: the main program", "nccl-2.30", {"NCCL_PROFILER_PLUGIN=static"}, {0},
     NULL, 0, PT_EINCOMPATIBLE, 0, 0, 0, NULL, "no_symbol", "prefix of STATIC_PLUGIN"},

    /* STATIC_PLUGIN from 2.23 on: dlopen(NULL) sees a plugin preloaded into
     * the global scope (LD_PRELOAD, or linked in); 2.27.3 never gets there. */
    {"STATIC_PLUGIN on 2.23: the program's own table", "nccl-2.23", {"NCCL_PROFILER_PLUGIN=s"},
     {STATIC_PRELOAD}, NULL, 0, PT_OK, 1, 1, 1, "{D}/matrix-child", "ok", NULL},
    {"STATIC_PLUGIN on 2.24", "nccl-2.24", {"NCCL_PROFILER_PLUGIN=Static"}, {STATIC_PRELOAD},
     NULL, 0, PT_OK, 2, 1, 1, "{D}/matrix-child", "ok", NULL},
    {"STATIC_PLUGIN on 2.25", "nccl-2.25", {"NCCL_PROFILER_PLUGIN=STATIC_PLUGIN"},
     {STATIC_PRELOAD}, NULL, 0, PT_OK, 2, 1, 1, "{D}/matrix-child", "ok", NULL},
    {"STATIC_PLUGIN on 2.26", "nccl-2.26", {"NCCL_PROFILER_PLUGIN=st"}, {STATIC_PRELOAD}, NULL, 0,
     PT_OK, 3, 1, 1, "{D}/matrix-child", "ok", NULL},
    {"STATIC_PLUGIN on 2.27.3: only the short name", "nccl-2.27.3", {"NCCL_PROFILER_PLUGIN=s"},
     {STATIC_PRELOAD}, NULL, 0, PT_ENOTFOUND, 0, 0, 0, NULL, "not_found", NULL},
    {"STATIC_PLUGIN on 2.27.5+", "nccl-2.27", {"NCCL_PROFILER_PLUGIN=static_plug"},
     {STATIC_PRELOAD}, NULL, 0, PT_OK, 4, 1, 1, "{D}/matrix-child", "ok", NULL},
    {"STATIC_PLUGIN on RCCL", "rccl", {"NCCL_PROFILER_PLUGIN=S"}, {STATIC_PRELOAD}, NULL, 0,
     PT_OK, 6, 1, 1, "{D}/matrix-child", "ok", NULL},

    /* Names cut at 254 characters from 2.26 (char[255]), at 4095 before. */
    {"value cut at 254 on 2.26", "nccl-2.26", {"NCCL_PROFILER_PLUGIN={LONG}"}, {0}, NULL, 0,
     PT_ENAMETOOLONG, 0, 0, 0, NULL, "not_found,not_found", "keeps only the first 254"},
    {"value cut at 254 on 2.27.3", "nccl-2.27.3",
     {"NCCL_PROFILER_PLUGIN=lib{SHORT240}{SHORT240}.so"}, {0},
     NULL, 0, PT_ENAMETOOLONG, 0, 0, 0, NULL, "not_found", "keeps only the first 254"},
    {"the short-name form cut at 254 names a file (2.26)", "nccl-2.26",
     {"NCCL_PROFILER_PLUGIN={SHORT240}", "LD_LIBRARY_PATH={D}/ldlong"}, {0}, NULL, 0, PT_OK, 3, 1,
     0, CUT_SHORT, "not_found,ok", NULL},
    {"the short-name form cut at 254 names a file (2.27.3)", "nccl-2.27.3",
     {"NCCL_PROFILER_PLUGIN={SHORT240}", "LD_LIBRARY_PATH={D}/ldlong"}, {0}, NULL, 0, PT_OK, 4, 1,
     0, CUT_SHORT, "ok", NULL},
    {"the short-name form cut at 254 names a file (2.30)", "nccl-2.30",
     {"NCCL_PROFILER_PLUGIN={SHORT240}", "LD_LIBRARY_PATH={D}/ldlong"}, {0}, NULL, 0, PT_OK, 6, 1,
     0, CUT_SHORT, "not_found,ok", NULL},
    {"value cut at 4095 on 2.24", "nccl-2.24", {"NCCL_PROFILER_PLUGIN={HUGE}"}, {0}, NULL, 0,
     PT_ENAMETOOLONG, 0, 0, 0, NULL, "too_long,too_long", "keeps only the first 4095"},

    /* 2.27.3 takes a lib*.so value only from 7 characters on. */
    {"lib.so on 2.27.3 becomes libnccl-profiler-lib.so.so", "nccl-2.27.3",
     {"NCCL_PROFILER_PLUGIN=lib.so", "LD_LIBRARY_PATH={D}/ldlib"}, {0}, NULL, 0, PT_OK, 4, 1, 0,
     "{D}/ldlib/libnccl-profiler-lib.so.so", "ok", "at least 7 characters"},
    {"lib.so on 2.27.5+ is the file itself", "nccl-2.27",
     {"NCCL_PROFILER_PLUGIN=lib.so", "LD_LIBRARY_PATH={D}/ldlib"}, {0}, NULL, 0, PT_OK, 4, 1, 0,
     "{D}/ldlib/lib.so", "ok", NULL},
    {"libx.so on 2.27.3 is the file itself", "nccl-2.27.3",
     {"NCCL_PROFILER_PLUGIN=libx.so", "LD_LIBRARY_PATH={D}/ldlib"}, {0}, NULL, 0, PT_OK, 4, 1, 0,
     "{D}/ldlib/libx.so", "ok", NULL},

    /* The 2.28+ net plugin fallback, NCCL_NET_PLUGIN read as the host does. */
    {"net plugin fallback (2.28, --net-plugin)", "nccl-2.28", {0},
     {"--net-plugin", "{D}/v5only.so"}, NULL, 0, PT_OK, 5, 0, 0, "{D}/v5only.so", "not_found,ok",
     NULL},
    {"NCCL_NET_PLUGIN path (2.28)", "nccl-2.28", {"NCCL_NET_PLUGIN={D}/netprof.so"}, {0}, NULL, 0,
     PT_OK, 5, 1, 0, "{D}/netprof.so", "not_found,ok", NULL},
    {"NCCL_NET_PLUGIN short name (2.29)", "nccl-2.29",
     {"NCCL_NET_PLUGIN=prof", "LD_LIBRARY_PATH={D}/ldnet"}, {0}, NULL, 0, PT_OK, 6, 1, 0,
     "{D}/ldnet/libnccl-net-prof.so", "not_found,not_found,ok", NULL},
    {"NCCL_NET_PLUGIN list: the first that opens (2.30)", "nccl-2.30",
     {"NCCL_NET_PLUGIN=missing,{D}/netprof.so,prof", "LD_LIBRARY_PATH={D}/ldnet"}, {0}, NULL, 0,
     PT_OK, 6, 1, 0, "{D}/netprof.so", "not_found,not_found,not_found,ok,not_tried,not_tried",
     NULL},
    {"NCCL_NET_PLUGIN unset: libnccl-net.so (2.30)", "nccl-2.30",
     {NET_UNSET, "LD_LIBRARY_PATH={D}/ldnet"}, {0}, NULL, 0, PT_OK, 6, 1, 0, "{D}/ldnet/libnccl-net.so",
     "not_found,ok", NULL},
    {"NCCL_NET_PLUGIN unset: librccl-net.so (RCCL)", "rccl",
     {NET_UNSET, "LD_LIBRARY_PATH={D}/ldnet"}, {0},
     NULL, 0, PT_OK, 6, 1, 0, "{D}/ldnet/librccl-net.so", "not_found,ok", NULL},
    {"NCCL_NET_PLUGIN=none: no net library (2.30)", "nccl-2.30",
     {"NCCL_NET_PLUGIN=None", "LD_LIBRARY_PATH={D}/ldnet"}, {0}, NULL, 0, PT_ENOTFOUND, 0, 0, 0,
     NULL, "not_found", NULL},
    {"a net library without a profiler is no fault (2.30)", "nccl-2.30",
     {"NCCL_NET_PLUGIN={D}/nosym.so"}, {0}, NULL, 0, PT_ENOTFOUND, 0, 0, 0, NULL,
     "not_found,no_symbol", NULL},
    {"no net fallback on 2.27", "nccl-2.27", {"NCCL_NET_PLUGIN={D}/netprof.so"}, {0}, NULL, 0,
     PT_ENOTFOUND, 0, 0, 0, NULL, "not_found", NULL},
    {"no net fallback once a profiler library opened (2.28)", "nccl-2.28",
     {"NCCL_PROFILER_PLUGIN={D}/nosym.so", "NCCL_NET_PLUGIN={D}/netprof.so"}, {0}, NULL, 0,
     PT_EINCOMPATIBLE, 0, 0, 0, NULL, "no_symbol,not_tried", NULL},

    /* Config files: read by every release before the profiler loads. */
    {"value from nccl.conf (2.23)", "nccl-2.23", {"NCCL_CONF_FILE={D}/nccl.conf"}, {0}, NULL, 0,
     PT_OK, 1, 1, 0, "{D}/good.so", "ok,not_tried", NULL},
    {"value from nccl.conf (2.24)", "nccl-2.24", {"NCCL_CONF_FILE={D}/nccl.conf"}, {0}, NULL, 0,
     PT_OK, 2, 1, 0, "{D}/good.so", "ok,not_tried", NULL},
    {"value from nccl.conf (2.25)", "nccl-2.25", {"NCCL_CONF_FILE={D}/nccl.conf"}, {0}, NULL, 0,
     PT_OK, 2, 1, 0, "{D}/good.so", "ok,not_tried", NULL},
    {"value from nccl.conf (2.26)", "nccl-2.26", {"NCCL_CONF_FILE={D}/nccl.conf"}, {0}, NULL, 0,
     PT_OK, 3, 1, 0, "{D}/good.so", "ok,not_tried", NULL},
    {"a path from nccl.conf on 2.27.3 (paths broken)", "nccl-2.27.3",
     {"NCCL_CONF_FILE={D}/nccl.conf"}, {0}, NULL, 0, PT_ENOTFOUND, 0, 0, 0, NULL, "not_found",
     "NVIDIA/nccl#1732"},
    {"value from nccl.conf (2.27)", "nccl-2.27", {"NCCL_CONF_FILE={D}/nccl.conf"}, {0}, NULL, 0,
     PT_OK, 4, 1, 0, "{D}/good.so", "ok", NULL},
    {"value from nccl.conf (2.28)", "nccl-2.28", {"NCCL_CONF_FILE={D}/nccl.conf"}, {0}, NULL, 0,
     PT_OK, 5, 1, 0, "{D}/good.so", "ok", NULL},
    {"NCCL_NET_PLUGIN from nccl.conf (2.29)", "nccl-2.29",
     {NET_UNSET, "NCCL_CONF_FILE={D}/netplugin.conf"},
     {0}, NULL, 0, PT_OK, 6, 1, 0, "{D}/netprof.so", "not_found,ok", NULL},
    {"CRLF nccl.conf: the '\\r' stays in the value (2.28)", "nccl-2.28",
     {"NCCL_CONF_FILE={D}/crlf.conf"}, {0}, NULL, 0, PT_ENOTFOUND, 0, 0, 0, NULL, "not_found",
     "carriage return"},
    {"CRLF nccl.conf: the '\\r' stays in the value (2.23)", "nccl-2.23",
     {"NCCL_CONF_FILE={D}/crlf.conf"}, {0}, NULL, 0, PT_ENOTFOUND, 0, 0, 0, NULL,
     "not_found,not_found", "carriage return"},
    {"CRLF nccl.conf: 2.30 cuts the '\\r'", "nccl-2.30", {"NCCL_CONF_FILE={D}/crlf.conf"}, {0},
     NULL, 0, PT_OK, 6, 1, 0, "{D}/good.so", "ok", NULL},
    {"~/.nccl.conf from $HOME (2.30)", "nccl-2.30", {"HOME={D}/confhome"}, {0}, NULL, 0, PT_OK, 6,
     1, 0, "{D}/good.so", "ok", NULL},
    {"~ is the passwd entry, not $HOME, before 2.30", "nccl-2.29", {"HOME={D}/confhome"}, {0},
     NULL, 0, PT_ENOTFOUND, 0, 0, 0, NULL, "not_found", NULL},
    {"RCCL does not read NCCL_CONF_FILE", "rccl", {"NCCL_CONF_FILE={D}/nccl.conf"}, {0}, NULL, 0,
     PT_ENOTFOUND, 0, 0, 0, NULL, "not_found", "RCCL does not read it"},
    {"an env plugin may hide variables (2.28.7+)", "nccl-2.30",
     {"NCCL_ENV_PLUGIN=libmine-env.so", GOOD}, {0}, NULL, 0, PT_OK, 6, 1, 0, "{D}/good.so", "ok",
     "answer cannot see"},
    {"an env plugin on 2.28", "nccl-2.28", {"NCCL_ENV_PLUGIN=/opt/env/libmine-env.so", GOOD},
     {0}, NULL, 0, PT_OK, 5, 1, 0, "{D}/good.so", "ok", "NCCL 2.28.7 and later"},
    {"libnccl-env.so on the library path (2.29)", "nccl-2.29",
     {"LD_LIBRARY_PATH={D}/ldenv", GOOD}, {0}, NULL, 0, PT_OK, 6, 1, 0, "{D}/good.so", "ok",
     "libnccl-env.so is on the library path"},

    /* RCCL_ENABLE_PROXY_TRACE is read with strtoll(value, NULL, 0). */
    {"auto-load flag with trailing text", "rccl", {"RCCL_ENABLE_PROXY_TRACE=1abc"},
     {RCCL_PRELOAD}, NULL, 0, PT_OK, 6, 1, 0, "{D}/rccl/librccl-profiler-proxytrace.so",
     "not_found,ok", "counts as 1"},
    {"auto-load flag in hex with a blank", "rccl", {"RCCL_ENABLE_PROXY_TRACE= 0x1"},
     {RCCL_PRELOAD}, NULL, 0, PT_OK, 6, 1, 0, "{D}/rccl/librccl-profiler-proxytrace.so",
     "not_found,ok", NULL},

    /* PROXYTRACE_HOME: the answer says NCCL itself will not look there. */
    {"PROXYTRACE_HOME from the environment", "nccl-2.30", {"PROXYTRACE_HOME={D}/home1"}, {0},
     NULL, 0, PT_OK, 6, 1, 0, HOME1 ".1.10.0", "not_found,ok,not_tried",
     "never read: a program using libproxytrace-loader"},
    {"PROXYTRACE_HOME on 2.23", "nccl-2.23", {"PROXYTRACE_HOME={D}/home1"}, {0}, NULL, 0, PT_OK,
     1, 1, 0, HOME1 ".1.10.0", "not_found,ok,not_tried", "rests on PROXYTRACE_HOME"},
    {"PROXYTRACE_HOME on RCCL", "rccl", {"PROXYTRACE_HOME={D}/home1"}, {0}, NULL, 0, PT_OK, 6, 1,
     0, HOME1 ".1.10.0", "not_found,ok,not_tried", "rests on PROXYTRACE_HOME"},
    {"PROXYTRACE_HOME decides a failure", "nccl-2.30", {"PROXYTRACE_HOME={D}/home3"}, {0}, NULL,
     0, PT_EINCOMPATIBLE, 0, 0, 0, NULL, "not_found,wrong_major,wrong_major",
     "this answer rests on PROXYTRACE_HOME"},
};
#define NCASES (sizeof cases / sizeof cases[0])

static const char* D;     /* fixture folder */
static char* long_value;  /* an existing plugin path longer than 254 */
static char* huge_value;  /* longer than PATH_MAX */
static char short240[241], short237[238]; /* "aaa…": a short name's stem */
static const char* self;  /* this program */

/* Strings made for one case; freed after it even when an assertion fails. */
static char* made[32];
static int nmade;

static char* keep(char* s) {
  assert_non_null(s);
  assert_true(nmade < 32);
  made[nmade++] = s;
  return s;
}

static int free_made(void** state) {
  (void)state;
  while (nmade) free(made[--nmade]);
  return 0;
}

/* Replace {D}, {LONG}, {HUGE}, {SHORT240}, {SHORT237}. The string lives
 * until the case ends. */
static char* expand(const char* s) {
  size_t cap = strlen(s) + 1;
  for (const char* p = s; (p = strchr(p, '{')) != NULL; p++)
    cap += strlen(huge_value) + strlen(long_value) + strlen(D) + sizeof short240;
  char* out = keep(malloc(cap));
  char* o = out;
  while (*s) {
    const char* rep = NULL;
    size_t skip = 0;
    if (!strncmp(s, "{D}", 3)) rep = D, skip = 3;
    else if (!strncmp(s, "{LONG}", 6)) rep = long_value, skip = 6;
    else if (!strncmp(s, "{HUGE}", 6)) rep = huge_value, skip = 6;
    else if (!strncmp(s, "{SHORT240}", 10)) rep = short240, skip = 10;
    else if (!strncmp(s, "{SHORT237}", 10)) rep = short237, skip = 10;
    if (rep) {
      strcpy(o, rep);
      o += strlen(rep);
      s += skip;
    } else {
      *o++ = *s++;
    }
  }
  *o = '\0';
  return out;
}

static void make_home(const char* home, const char* const files[][2], size_t n) {
  fx_mkdirs(fx_fmt("%s/%s/lib", D, home));
  for (size_t i = 0; i < n; i++) {
    const char* dst = fx_fmt("%s/%s/lib/librccl-profiler-proxytrace.so%s", D, home, files[i][0]);
    if (files[i][1][0] == '>')
      fx_symlink(files[i][1] + 1, dst);
    else
      fx_copy(fx_plugin(files[i][1]), dst);
  }
}

/* Every fixture of the cases, in dir; a copy of this program there. */
static void build_fixtures(const char* folder) {
  D = folder;
  static const char* const plugins[][2] = {
      {"good", "good"},         {"v1only", "v1only"}, {"v6only", "v6only"}, {"v7only", "v7only"},
      {"v5only", "v5only"},     {"nosym", "nosym"},   {"nullinit", "nullinit"},
      {"small", "smalltable"},  {"func", "functable"}, {"unreadable", "good"}};
  for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++)
    fx_copy(fx_plugin(plugins[i][1]), fx_fmt("%s/%s.so", D, plugins[i][0]));
  chmod(fx_fmt("%s/unreadable.so", D), 0);
  fx_write(fx_fmt("%s/notelf.so", D),
           "This file is not a shared library, whatever its name says. It is long enough\n"
           "to hold an ELF header, so the loader has to read it to tell.\n");
  fx_write(fx_fmt("%s/empty.so", D), "");
  fx_symlink(fx_fmt("%s/missing-target.so", D), fx_fmt("%s/broken.so", D));
  fx_symlink("loop2.so", fx_fmt("%s/loop.so", D));
  fx_symlink("loop.so", fx_fmt("%s/loop2.so", D));

  static const char* const home1[][2] = {{".1.9.0", "good"}, {".1.10.0", "good"}};
  static const char* const home2[][2] = {{"", "good2"}, {".1", "good"}};
  static const char* const home3[][2] = {{"", "good2"}, {".2.0.0", "good2"}};
  static const char* const home4[][2] = {{".1.2.0", "nosym"}, {".1.1.0", "good"}};
  static const char* const home5[][2] = {{".1.0.0", "nullinit"},
                                         {".1", ">librccl-profiler-proxytrace.so.1.0.0"}};
  static const char* const home6[][2] = {{".2.0.0", "good2"}, {".1.0.0", "good"}};
  make_home("home1", home1, 2);
  make_home("home2", home2, 2);
  make_home("home3", home3, 2);
  make_home("home4", home4, 2);
  make_home("home5", home5, 2);
  make_home("home6", home6, 2);

  fx_mkdirs(fx_fmt("%s/twonames", D));
  fx_copy(fx_plugin("good"), fx_fmt("%s/twonames/real.so", D));
  fx_symlink("real.so", fx_fmt("%s/twonames/link.so", D));

  fx_mkdirs(fx_fmt("%s/rccl", D));
  fx_copy(fx_plugin("fakerccl"), fx_fmt("%s/rccl/librccl.so", D));
  fx_copy(fx_plugin("good"), fx_fmt("%s/rccl/librccl-profiler-proxytrace.so", D));

  fx_mkdirs(fx_fmt("%s/ldrccl", D));
  fx_copy(fx_plugin("v7only"), fx_fmt("%s/ldrccl/librccl-profiler-proxytrace.so", D));
  fx_mkdirs(fx_fmt("%s/ldpath", D));
  fx_copy(fx_plugin("good"), fx_fmt("%s/ldpath/libnccl-profiler-proxytrace.so", D));
  fx_copy(fx_plugin("v1only"), fx_fmt("%s/ldpath/libnccl-profiler.so", D));
  fx_mkdirs(fx_fmt("%s/ldbad", D));
  fx_copy(fx_fmt("%s/notelf.so", D), fx_fmt("%s/ldbad/libnccl-profiler-bad.so", D));

  fx_write(fx_fmt("%s/nccl.conf", D),
           fx_fmt("# test configuration\nNCCL_DEBUG=INFO\nNCCL_PROFILER_PLUGIN=%s/good.so\n", D));
  fx_write(fx_fmt("%s/crlf.conf", D), fx_fmt("NCCL_PROFILER_PLUGIN=%s/good.so\r\n", D));
  fx_write(fx_fmt("%s/netplugin.conf", D), fx_fmt("NCCL_NET_PLUGIN=%s/netprof.so\n", D));
  fx_mkdirs(fx_fmt("%s/confhome", D));
  fx_write(fx_fmt("%s/confhome/.nccl.conf", D), fx_fmt("NCCL_PROFILER_PLUGIN=%s/good.so\n", D));

  /* A net plugin library that also carries a profiler. */
  fx_copy(fx_plugin("good"), fx_fmt("%s/netprof.so", D));
  fx_mkdirs(fx_fmt("%s/ldnet", D));
  static const char* const netnames[] = {"libnccl-net-prof.so", "libnccl-net.so", "librccl-net.so"};
  for (size_t i = 0; i < sizeof netnames / sizeof netnames[0]; i++)
    fx_copy(fx_plugin("good"), fx_fmt("%s/ldnet/%s", D, netnames[i]));
  fx_mkdirs(fx_fmt("%s/ldenv", D));
  fx_copy(fx_plugin("nosym"), fx_fmt("%s/ldenv/libnccl-env.so", D));

  /* lib*.so names for 2.27.3's rule. */
  fx_mkdirs(fx_fmt("%s/ldlib", D));
  static const char* const libnames[] = {"libnccl-profiler-lib.so.so", "lib.so", "libx.so"};
  for (size_t i = 0; i < sizeof libnames / sizeof libnames[0]; i++)
    fx_copy(fx_plugin("good"), fx_fmt("%s/ldlib/%s", D, libnames[i]));

  /* libnccl-profiler-<240 a>.so is 261 characters; cut at 254 it names
   * libnccl-profiler-<237 a>, which exists. */
  memset(short240, 'a', 240);
  memset(short237, 'a', 237);
  fx_mkdirs(fx_fmt("%s/ldlong", D));
  fx_copy(fx_plugin("good"), fx_fmt("%s/ldlong/libnccl-profiler-%s", D, short237));

  /* An existing plugin whose path is longer than 254 characters. */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/long", D);
  while (strlen(dir) < 270)
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/%s",
             "a-directory-name-that-makes-the-path-long");
  fx_mkdirs(dir);
  long_value = strdup(fx_fmt("%s/libgood.so", dir));
  fx_copy(fx_plugin("good"), long_value);
  assert_true(strlen(long_value) > 254);

  huge_value = malloc(5001);
  assert_non_null(huge_value);
  memset(huge_value, 'x', 5000);
  huge_value[0] = '/';
  huge_value[5000] = '\0';

  /* The children run a copy of this program from the fixture folder, which
   * user "nobody" can reach wherever the build folder is. */
  static char exe[4096];
  snprintf(exe, sizeof exe, "%s/matrix-child", D);
  fx_copy("/proc/self/exe", exe);
  self = exe;
}

static int setup(void** state) {
  (void)state;
  build_fixtures(fx_tmpdir());
  return 0;
}

static int teardown(void** state) {
  (void)state;
  free(long_value);
  free(huge_value);
  return 0;
}

/* The child's environment: exactly the case's, plus the sanitizer settings.
 * Returns the count; envp is NULL-terminated. */
static int case_env(const mcase* c, char** envp) {
  int ne = 0;
  int own_home = 0, own_net = 0;
  for (int i = 0; i < 6 && c->env[i]; i++) {
    own_home |= !strncmp(c->env[i], "HOME=", 5);
    own_net |= !strncmp(c->env[i], "NCCL_NET_PLUGIN=", 16) || !strcmp(c->env[i], NET_UNSET);
  }
  envp[ne++] = "PATH=/usr/bin:/bin";
  if (!own_home) envp[ne++] = expand("HOME={D}"); /* no ~/.nccl.conf from the real home */
  if (!own_net) envp[ne++] = "NCCL_NET_PLUGIN=none"; /* no default net library */
  static const char* const pass[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS",
                                     "LSAN_OPTIONS", "PROXYTRACE_LOADER_DEBUG"};
  for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++)
    if (getenv(pass[i])) envp[ne++] = keep(strdup(fx_fmt("%s=%s", pass[i], getenv(pass[i]))));
  for (int i = 0; i < 6 && c->env[i]; i++)
    if (strcmp(c->env[i], NET_UNSET) != 0) envp[ne++] = expand(c->env[i]);
  envp[ne] = NULL;
  return ne;
}

static void run_case(void** state) {
  const mcase* c = *state;
  char* argv[16];
  char* envp[16];
  int na = 0;
  argv[na++] = (char*)self;
  argv[na++] = "--case";
  argv[na++] = "--host";
  argv[na++] = (char*)c->host;
  for (int i = 0; i < 4 && c->args[i]; i++) argv[na++] = expand(c->args[i]);
  argv[na] = NULL;
  case_env(c, envp);
  char* cwd = c->cwd ? expand(c->cwd) : NULL;

  char out[16384];
  int rc = fx_run(argv, envp, cwd, c->as_nobody, out, sizeof out);
  assert_int_equal(rc, 0);

  char probe[4096] = "", load[4096] = "";
  const char* p = strstr(out, "probe ");
  const char* l = strstr(out, "\nload ");
  assert_non_null(p);
  assert_non_null(l);
  sscanf(p + 6, "%4095[^\n]", probe);
  sscanf(l + 6, "%4095[^\n]", load);
  /* The guarantee: the probe and the loader agree on everything. */
  assert_string_equal(probe, load);
  assert_non_null(strstr(out, "\nclean 1"));

  char real[4096] = "-";
  if (c->file) {
    assert_non_null(realpath(expand(c->file), real));
  }
  char want[8192];
  snprintf(want, sizeof want, "status=%s api=%d dump=%d reused=%d file=%s outcomes=%s",
           pt_err_name(c->status), c->api, c->dump, c->reused, real, c->outcomes);
  assert_string_equal(load, want);
  if (c->note) { /* a "note ..." line of the child contains the text */
    int found = 0;
    for (const char* n = strstr(out, "\nnote "); n && !found; n = strstr(n + 1, "\nnote ")) {
      const char* end = strchr(n + 1, '\n');
      const char* hit = strstr(n, c->note);
      found = hit && (!end || hit < end);
    }
    if (!found) fprintf(stderr, "no note contains '%s' in:\n%s", c->note, out);
    assert_true(found);
  }
}

/* ---- the cases for other test programs ------------------------------------ */

static void json_str(const char* s) {
  if (!s) {
    fputs("null", stdout);
    return;
  }
  putchar('"');
  for (const unsigned char* p = (const unsigned char*)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      printf("\\%c", *p);
    else if (*p < 0x20)
      printf("\\u%04x", *p);
    else
      putchar(*p);
  }
  putchar('"');
}

static void json_list(const char* key, char* const* items, int n) {
  printf(",\"%s\":[", key);
  for (int i = 0; i < n; i++) {
    if (i) putchar(',');
    json_str(items[i]);
  }
  putchar(']');
}

/* --export DIR: fixtures in DIR (left there), then one JSON object per case:
 * name, host, env (the child's whole environment), args (child options after
 * --host), cwd, as_nobody, child (the program to run with --case-json), and
 * what the case expects: status, api, dump, reused, file (resolved), outcomes,
 * note. */
static int export_cases(const char* dir) {
  build_fixtures(dir);
  for (size_t k = 0; k < NCASES; k++) {
    const mcase* c = &cases[k];
    char* envp[16];
    char* args[4];
    int ne = case_env(c, envp), na = 0;
    for (int i = 0; i < 4 && c->args[i]; i++) args[na++] = expand(c->args[i]);
    char real[4096] = "";
    if (c->file && !realpath(expand(c->file), real)) {
      fprintf(stderr, "case '%s': %s does not exist\n", c->name, c->file);
      return 1;
    }
    fputs("{\"name\":", stdout);
    json_str(c->name);
    fputs(",\"host\":", stdout);
    json_str(c->host);
    json_list("env", envp, ne);
    json_list("args", args, na);
    fputs(",\"cwd\":", stdout);
    json_str(c->cwd ? expand(c->cwd) : NULL);
    printf(",\"as_nobody\":%s,\"child\":", c->as_nobody ? "true" : "false");
    json_str(self);
    fputs(",\"status\":", stdout);
    json_str(pt_err_name(c->status));
    printf(",\"api\":%d,\"dump\":%s,\"reused\":%s,\"file\":", c->api,
           c->dump ? "true" : "false", c->reused ? "true" : "false");
    json_str(c->file ? real : NULL);
    fputs(",\"outcomes\":", stdout);
    json_str(c->outcomes);
    fputs(",\"note\":", stdout);
    json_str(c->note);
    fputs("}\n", stdout);
    free_made(NULL);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "--case")) return child(argc, argv, 0);
  if (argc > 1 && !strcmp(argv[1], "--case-json")) return child(argc, argv, 1);
  if (argc > 2 && !strcmp(argv[1], "--export")) {
    int rc = export_cases(argv[2]);
    teardown(NULL);
    return rc;
  }
  struct CMUnitTest tests[NCASES];
  for (size_t i = 0; i < NCASES; i++) {
    tests[i].name = cases[i].name;
    tests[i].test_func = run_case;
    tests[i].setup_func = NULL;
    tests[i].teardown_func = free_made;
    tests[i].initial_state = (void*)&cases[i];
  }
  return _cmocka_run_group_tests("loader matrix: probe == load", tests, NCASES, setup, teardown);
}
