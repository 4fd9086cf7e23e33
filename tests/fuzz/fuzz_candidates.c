/*
 * fuzz_candidates.c — libFuzzer target: the loader's candidate generation
 * and file-level probe (src/loader/candidates.c, homedir.c, search.c,
 * probe.c) over random directory trees.
 *
 * The input is a program that builds a tree in a scratch directory —
 * directories, files (a real plugin, the same with another SONAME major,
 * truncated copies, text, empty), symlinks (to entries, to themselves, to
 * each other, to nothing) and modes (unreadable, world-writable, sticky) —
 * with names the loader looks for (lib/, lib64/, librccl-profiler-
 * proxytrace.so.1.10.2, libnccl-profiler-x.so, librccl.so ...), then probes
 * it with NCCL_PROFILER_PLUGIN, PROXYTRACE_HOME, LD_LIBRARY_PATH, the RCCL
 * auto-load directory and a host profile all chosen by the input. Every
 * symlink points inside the scratch directory, so nothing outside it is
 * touched.
 *
 * Checks, besides no crash, hang or sanitizer report: the result's status is
 * the return value; at most one candidate is accepted, exactly one when the
 * status is PT_OK, and its file exists and is a regular file; the
 * PROXYTRACE_HOME candidates of one directory and one major come newest
 * version first; the reports print.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "fuzz_result.h"
#include "loader/internal.h"

#ifndef FUZZ_GOOD_SO
#error "FUZZ_GOOD_SO: path of a real plugin (mk/fuzz.mk builds one)"
#endif

static char root[64];
static unsigned char* good;     /* a real plugin */
static unsigned char* good_v2;  /* the same, SONAME of major 2 */
static size_t good_size;

#define STEM "librccl-profiler-proxytrace.so"
static const char* const vocab[] = {
    "lib", "lib64", STEM, STEM ".1", STEM ".1.2", STEM ".1.10.2", STEM ".1.9", STEM ".2",
    STEM ".2.0.1", STEM ".1.x", STEM ".", STEM ".01", STEM ".1.2.3.4", "libnccl-profiler.so",
    "libnccl-profiler-proxytrace.so", "libnccl-profiler-x.so", "librccl.so", "librccl.so.1",
    "x", "a b", ".."};
#define NV (sizeof vocab / sizeof vocab[0])

enum { MAX_ENTRIES = 32 };
typedef struct {
  char path[512];
  int is_dir;
} entry;
static entry entries[MAX_ENTRIES];
static int n_entries;

static const char* random_entry(fz_input* in) {
  if (!n_entries) return root;
  uint8_t k = fz_u8(in);
  return k % (n_entries + 1) == (unsigned)n_entries ? root : entries[k % n_entries].path;
}

static const char* random_dir(fz_input* in) {
  for (int tries = 0; tries < 4; tries++) {
    const char* e = random_entry(in);
    if (e == root) return root;
    for (int i = 0; i < n_entries; i++)
      if (entries[i].path == e && entries[i].is_dir) return e;
  }
  return root;
}

static void add_entry(const char* path, int is_dir) {
  if (n_entries < MAX_ENTRIES) {
    snprintf(entries[n_entries].path, sizeof entries[n_entries].path, "%s", path);
    entries[n_entries++].is_dir = is_dir;
  }
}

static void write_file(const char* path, const void* data, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (n && write(fd, data, n) < 0) { /* a full scratch disk: the entry stays short */
  }
  close(fd);
  add_entry(path, 0);
}

static void build(fz_input* in) {
  const int ops = 1 + fz_u8(in) % 24;
  for (int i = 0; i < ops && in->n; i++) {
    const uint8_t op = fz_u8(in);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", random_dir(in), vocab[fz_u8(in) % NV]);
    switch (op % 6) {
      case 0:
        if (mkdir(path, 0755) == 0) add_entry(path, 1);
        break;
      case 1: write_file(path, good, good_size); break;
      case 2: write_file(path, good_v2, good_size); break;
      case 3: { /* truncated, text or empty */
        const uint8_t k = fz_u8(in);
        if (k < 200) write_file(path, good, (size_t)k * good_size / 200);
        else write_file(path, "not an ELF file, but named like one\n", 36);
        break;
      }
      case 4: { /* symlink: to an entry, to itself, to a loop partner, to nothing */
        const uint8_t k = fz_u8(in);
        char target[512];
        if (k % 4 == 0) snprintf(target, sizeof target, "%s", path);
        else if (k % 4 == 1) snprintf(target, sizeof target, "%s/missing", root);
        else snprintf(target, sizeof target, "%s", random_entry(in));
        if (symlink(target, path) == 0) add_entry(path, 0);
        break;
      }
      default: { /* a mode on an existing entry (never through a symlink out) */
        static const mode_t modes[] = {0, 0111, 0444, 0555, 0644, 0700, 0755, 0777, 01777, 0666};
        const char* e = random_entry(in);
        struct stat st;
        if (e != root && lstat(e, &st) == 0 && !S_ISLNK(st.st_mode))
          chmod(e, modes[fz_u8(in) % (sizeof modes / sizeof modes[0])]);
        break;
      }
    }
  }
}

static int rm_one(const char* path, const struct stat* st, int flag, struct FTW* f) {
  (void)st, (void)flag;
  if (f->level > 0) remove(path);
  return 0;
}

static void clean(void) {
  /* Modes first (parents before children), then everything, deepest first. */
  chmod(root, 0700);
  for (int i = 0; i < n_entries; i++) {
    struct stat st;
    if (lstat(entries[i].path, &st) == 0 && S_ISDIR(st.st_mode)) chmod(entries[i].path, 0700);
  }
  nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  n_entries = 0;
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc, (void)argv;
  snprintf(root, sizeof root, "/tmp/pt-fuzz-cand.XXXXXX");
  if (!mkdtemp(root)) abort();
  FILE* f = fopen(FUZZ_GOOD_SO, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_candidates: cannot read %s\n", FUZZ_GOOD_SO);
    abort();
  }
  good = malloc(1 << 20);
  good_size = fread(good, 1, 1 << 20, f);
  fclose(f);
  good_v2 = malloc(good_size);
  memcpy(good_v2, good, good_size);
  unsigned char* so = memmem(good_v2, good_size, STEM ".1", strlen(STEM ".1") + 1);
  if (so) so[strlen(STEM ".1") - 1] = '2';
  return 0;
}

static const char* home_dir_of(const char* name) {
  static char dir[512];
  snprintf(dir, sizeof dir, "%s", name);
  char* slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  return dir;
}

static void check_home_order(const pt_result* res, int major) {
  const pt_candidate* prev = NULL;
  unsigned long pv[3] = {0};
  int pn = 0, prev_exact = 0;
  char prev_dir[512] = "";
  for (size_t i = 0; i < res->n_candidates; i++) {
    const pt_candidate* c = &res->candidates[i];
    if (c->source != PT_SRC_HOME || c->outcome == PT_CAND_WRONG_MAJOR) {
      prev = NULL;
      continue;
    }
    const char* base = strrchr(c->name, '/');
    base = base ? base + 1 : c->name;
    if (strncmp(base, STEM ".", strlen(STEM ".")) != 0) {
      prev = NULL;
      continue;
    }
    unsigned long v[3];
    const int n = pt_version_parse(base + strlen(STEM "."), v);
    const char* dir = home_dir_of(c->name);
    /* <stem>.MAJOR (the SONAME link) leads; then versioned files, newest first */
    const int exact = n == 1 && v[0] == (unsigned long)major;
    if (prev && n && pn && !exact && !prev_exact && strcmp(dir, prev_dir) == 0 &&
        pt_version_cmp_newest_first(pv, pn, v, n) > 0) {
      pt_result_print(res, stderr);
      CHECK(!"home candidates of one directory come newest first");
    }
    prev = c;
    prev_exact = exact;
    memcpy(pv, v, sizeof pv);
    pn = n;
    snprintf(prev_dir, sizeof prev_dir, "%s", dir);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fz_input in = {data, size};
  build(&in);
  pt_request req;
  pt_request_init(&req);
  char plugin[600], ldpath[1200] = "";
  const uint8_t sel = fz_u8(&in);
  switch (sel % 4) {
    case 0: break; /* unset */
    case 1: req.plugin = vocab[fz_u8(&in) % NV]; break;
    case 2: req.plugin = "proxytrace"; break;
    default: snprintf(plugin, sizeof plugin, "%s", random_entry(&in)); req.plugin = plugin; break;
  }
  if (sel & 4) req.home = random_dir(&in);
  for (int i = 0, n = fz_u8(&in) % 3; i < n; i++) {
    size_t len = strlen(ldpath);
    snprintf(ldpath + len, sizeof ldpath - len, "%s%s", i ? ":" : "", random_dir(&in));
  }
  if (*ldpath) req.ld_library_path = ldpath;
  if (sel & 8) {
    req.rccl_enable_proxy_trace = "1";
    req.rccl_dir = random_dir(&in);
  }
  req.major = fz_u8(&in) % 3;
  const pt_host host = (pt_host)(fz_u8(&in) % PT_HOST_COUNT);
  pt_result* res = NULL;
  const int rc = pt_probe(&req, host, &res);
  if (rc == PT_ENOMEM && !res) {
    clean();
    return 0;
  }
  fz_check_result(res, rc);
  check_home_order(res, req.major ? req.major : PT_VERSION_MAJOR);
  pt_result_free(res);
  clean();
  return 0;
}
