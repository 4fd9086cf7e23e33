/*
 * test_elf.c — the file-level reader the probe relies on. For every test
 * plugin the ELF reader must report the same symbols, sizes, kinds and
 * non-NULL table slots that dlsym/dladdr report on the loaded library;
 * files that are not shared objects get the outcome the dynamic linker
 * would give; corrupted files never crash it; the bare-name search finds
 * what dlopen finds.
 */
#include <dlfcn.h>
#include <fcntl.h>
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
#include "loader/internal.h"

static const char* const plugins[] = {"good",     "good2",      "v1only",    "v5only", "v6only",
                                      "nosym",    "nullinit",   "smalltable", "functable"};
static const char* const symbols[] = {"ncclProfiler_v1", "ncclProfiler_v2", "ncclProfiler_v3",
                                      "ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6",
                                      "ncclProfilerProxyTraceDump", "pt_test_major",
                                      "pt_no_such_symbol"};

static pt_elf* open_ok(const char* path) {
  pt_elf* e = NULL;
  char reason[256];
  pt_outcome o = pt_elf_open(path, &e, reason, sizeof reason, NULL);
  if (o != PT_CAND_OK) fprintf(stderr, "%s: %s\n", path, reason);
  assert_int_equal(o, PT_CAND_OK);
  assert_non_null(e);
  return e;
}

static void test_file_matches_loaded_library(void** state) {
  (void)state;
  for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++) {
    const char* path = fx_plugin(plugins[i]);
    pt_elf* e = open_ok(path);
    pt_obj obj = {dlopen(path, RTLD_NOW | RTLD_LOCAL), NULL, 0};
    assert_non_null(obj.handle);
    for (size_t k = 0; k < sizeof symbols / sizeof symbols[0]; k++) {
      pt_sym fs, ls;
      int ff = pt_elf_symbol(e, symbols[k], &fs);
      int lf = pt_dl_symbol(&obj, symbols[k], &ls);
      if (ff != lf) fprintf(stderr, "%s %s: file %d, loaded %d\n", plugins[i], symbols[k], ff, lf);
      assert_int_equal(ff, lf);
      if (!ff) continue;
      assert_int_equal(fs.is_object, ls.is_object);
      assert_int_equal(fs.size, ls.size);
      assert_int_equal(fs.nonnull, ls.nonnull);
    }
    dlclose(obj.handle);
    pt_elf_close(e);
  }
}

static void test_symbols(void** state) {
  (void)state;
  pt_elf* e = open_ok(fx_plugin("good"));
  assert_string_equal(pt_elf_soname(e), "librccl-profiler-proxytrace.so.1");
  pt_sym s;
  for (int v = 1; v <= 6; v++) {
    assert_true(pt_elf_symbol(e, symbols[v - 1], &s));
    assert_true(s.is_object);
    assert_int_equal(s.size, 48);
    assert_int_equal(s.nonnull, 0x3f);
  }
  assert_true(pt_elf_symbol(e, "ncclProfilerProxyTraceDump", &s));
  assert_false(s.is_object);
  assert_false(pt_elf_symbol(e, "nop", &s)); /* static: not exported */
  assert_false(pt_elf_symbol(e, "pt_test_symbol_nobody_defines", &s));
  pt_elf_close(e);

  e = open_ok(fx_plugin("nullinit"));
  assert_true(pt_elf_symbol(e, "ncclProfiler_v6", &s));
  assert_int_equal(s.nonnull, 0x3f & ~0x2); /* init is slot 1 */
  pt_elf_close(e);
  e = open_ok(fx_plugin("smalltable"));
  assert_true(pt_elf_symbol(e, "ncclProfiler_v6", &s));
  assert_int_equal(s.size, 16);
  pt_elf_close(e);
  e = open_ok(fx_plugin("undef"));
  assert_false(pt_elf_symbol(e, "pt_test_symbol_nobody_defines", &s)); /* undefined */
  pt_elf_close(e);
  e = open_ok(fx_plugin("good2"));
  assert_string_equal(pt_elf_soname(e), "librccl-profiler-proxytrace.so.2");
  pt_elf_close(e);
}

static pt_outcome outcome_of(const char* path, char* reason, size_t n) {
  pt_elf* e = NULL;
  pt_outcome o = pt_elf_open(path, &e, reason, n, NULL);
  pt_elf_close(e);
  return o;
}

static void test_refusals(void** state) {
  (void)state;
  const char* d = fx_tmpdir();
  char reason[256];
  fx_write(fx_fmt("%s/text", d), "a text file that is longer than an ELF header would be, so "
                                 "the magic is what gives it away\n");
  fx_write(fx_fmt("%s/short", d), "tiny");
  assert_int_equal(outcome_of(fx_fmt("%s/text", d), reason, sizeof reason), PT_CAND_NOT_ELF);
  assert_non_null(strstr(reason, "invalid ELF header"));
  assert_int_equal(outcome_of(fx_fmt("%s/short", d), reason, sizeof reason), PT_CAND_NOT_ELF);
  assert_non_null(strstr(reason, "file too short"));
  assert_int_equal(outcome_of(d, reason, sizeof reason), PT_CAND_LOAD_ERROR);
  assert_non_null(strstr(reason, "Is a directory"));
  assert_int_equal(outcome_of(fx_fmt("%s/missing", d), reason, sizeof reason), PT_CAND_NOT_FOUND);
  assert_int_equal(outcome_of(fx_fmt("%s/text/x", d), reason, sizeof reason), PT_CAND_LOAD_ERROR);
  /* This test program is an executable, not a library. */
  assert_int_equal(outcome_of("/proc/self/exe", reason, sizeof reason), PT_CAND_LOAD_ERROR);
  assert_non_null(strstr(reason, "executable"));
  void* h = dlopen("/proc/self/exe", RTLD_NOW | RTLD_LOCAL);
  assert_null(h); /* and the dynamic linker agrees */
  assert_int_equal(pt_classify_errno(2 /* ENOENT */), PT_CAND_NOT_FOUND);
  assert_int_equal(pt_classify_errno(13 /* EACCES */), PT_CAND_UNREADABLE);
}

/* Flip bytes of a real plugin in many places: the reader must refuse or
 * read it, never crash or read out of bounds (run under ASan too). */
static void test_corrupted_files(void** state) {
  (void)state;
  const char* d = fx_tmpdir();
  const char* src = fx_plugin("good");
  int fd = open(src, O_RDONLY);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  size_t n = (size_t)st.st_size;
  unsigned char* orig = malloc(n);
  unsigned char* buf = malloc(n);
  assert_non_null(orig);
  assert_non_null(buf);
  assert_int_equal(read(fd, orig, n), (ssize_t)n);
  close(fd);
  const char* path = fx_fmt("%s/mutant.so", d);
  unsigned seed = 12345;
  int read_ok = 0;
  for (int round = 0; round < 400; round++) {
    memcpy(buf, orig, n);
    size_t len = n;
    if (round % 10 == 9) len = 64 + (size_t)(seed % (n - 64)); /* truncated */
    for (int k = 0; k < 8; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = round % 2 ? (seed >> 8) % 512 : (seed >> 8) % len; /* headers, or anywhere */
      buf[at] = (unsigned char)(seed >> 3);
    }
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(out >= 0);
    assert_int_equal(write(out, buf, len), (ssize_t)len);
    close(out);
    pt_elf* e = NULL;
    char reason[256];
    if (pt_elf_open(path, &e, reason, sizeof reason, NULL) == PT_CAND_OK) {
      pt_sym s;
      for (size_t k = 0; k < sizeof symbols / sizeof symbols[0]; k++)
        pt_elf_symbol(e, symbols[k], &s);
      (void)pt_elf_soname(e);
      read_ok++;
      pt_elf_close(e);
    }
  }
  assert_true(read_ok > 0); /* some mutants still parse: the symbol code ran */
  free(orig);
  free(buf);
}

static void test_search(void** state) {
  (void)state;
  char path[4096];
  assert_true(pt_search_library("libc.so.6", NULL, path, sizeof path));
  assert_non_null(strstr(path, "libc.so.6"));
  assert_false(pt_search_library("libnccl-profiler-no-such-plugin.so", NULL, path, sizeof path));
  const char* d = fx_tmpdir();
  fx_mkdirs(fx_fmt("%s/a", d));
  fx_mkdirs(fx_fmt("%s/b", d));
  fx_copy(fx_plugin("good"), fx_fmt("%s/b/libpt-search.so", d));
  /* a missing directory and an unrelated one are skipped */
  assert_true(pt_search_library("libpt-search.so", fx_fmt("%s/none:%s/a:%s/b", d, d, d), path,
                                sizeof path));
  assert_string_equal(path, fx_fmt("%s/b/libpt-search.so", d));
  /* a symlink loop ends the search, as in glibc */
  fx_symlink("libpt-search.so", fx_fmt("%s/a/libpt-search.so", d));
  assert_false(pt_search_library("libpt-search.so", fx_fmt("%s/a:%s/b", d, d), path, sizeof path));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_file_matches_loaded_library),
      cmocka_unit_test(test_symbols),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_corrupted_files),
      cmocka_unit_test(test_search),
  };
  return cmocka_run_group_tests_name("loader ELF reader", tests, NULL, NULL);
}
