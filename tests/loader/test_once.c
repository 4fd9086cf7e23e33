/*
 * test_once.c — loading for real: load-once under concurrency, sticky
 * failure, unload and reload, reuse of a copy already in the process,
 * closing, and the one thing a file-level probe cannot see (an undefined
 * symbol that dlopen(RTLD_NOW) refuses), which the loader must catch.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixtures.h"
#include "proxytrace/loader.h"

/* Constructor runs of the test plugin at path (0 when not loaded). */
static int ctor_runs(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) return 0;
  int* n = dlsym(h, "pt_test_ctor_runs");
  int v = n ? *n : -1;
  dlclose(h);
  return v;
}

static int is_loaded(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL;
}

#define NTHREADS 8

typedef struct {
  pt_loader* loader;
  pt_request* req;
  pthread_barrier_t* go;
  const pt_result* res;
  int rc;
} worker;

static void* load_thread(void* arg) {
  worker* w = arg;
  pthread_barrier_wait(w->go);
  w->rc = pt_loader_load(w->loader, w->req, PT_HOST_RCCL, &w->res);
  return NULL;
}

static void test_concurrent_load_once(void** state) {
  (void)state;
  const char* d = fx_tmpdir();
  const char* path = fx_fmt("%s/libonce.so", d);
  fx_copy(fx_plugin("good"), path);
  static char keep[4096];
  snprintf(keep, sizeof keep, "%s", path);
  pt_request req;
  pt_request_init(&req);
  req.path = keep;
  pt_loader* l = NULL;
  assert_int_equal(pt_loader_new(&l), PT_OK);
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, NTHREADS);
  worker w[NTHREADS];
  pthread_t t[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    w[i] = (worker){l, &req, &go, NULL, -100};
    assert_int_equal(pthread_create(&t[i], NULL, load_thread, &w[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&go);
  for (int i = 0; i < NTHREADS; i++) {
    assert_int_equal(w[i].rc, PT_OK);
    assert_ptr_equal(w[i].res, w[0].res); /* one load, one result */
  }
  const pt_result* r = w[0].res;
  assert_int_equal(r->api_version, 6);
  assert_non_null(r->table);
  assert_non_null(r->dump_hook);
  assert_non_null(r->handle);
  assert_string_equal(r->plugin_name, "test-v6");
  assert_string_equal(*(const char* const*)r->table, "test-v6");
  assert_int_equal(ctor_runs(keep), 1);

  /* unload: closed, and the next load loads again */
  assert_int_equal(pt_loader_unload(l), PT_OK);
  assert_false(is_loaded(keep));
  assert_int_equal(pt_loader_load(l, &req, PT_HOST_NCCL_2_24, &r), PT_OK);
  assert_int_equal(r->api_version, 2); /* a new load, with the new arguments */
  assert_int_equal(ctor_runs(keep), 1);
  pt_loader_free(l);
  assert_false(is_loaded(keep));
}

static void test_failure_is_sticky(void** state) {
  (void)state;
  const char* d = fx_tmpdir();
  static char path[4096];
  snprintf(path, sizeof path, "%s/libsticky.so", d);
  pt_request req;
  pt_request_init(&req);
  req.path = path;
  pt_loader* l = NULL;
  assert_int_equal(pt_loader_new(&l), PT_OK);
  const pt_result* r1 = NULL;
  const pt_result* r2 = NULL;
  assert_int_equal(pt_loader_load(l, &req, PT_HOST_RCCL, &r1), PT_ENOTFOUND);
  fx_copy(fx_plugin("good"), path); /* now it exists... */
  assert_int_equal(pt_loader_load(l, &req, PT_HOST_RCCL, &r2), PT_ENOTFOUND);
  assert_ptr_equal(r1, r2); /* ...but a failure is never retried */
  assert_int_equal(pt_loader_unload(l), PT_OK); /* and unload does not reset it */
  assert_int_equal(pt_loader_load(l, &req, PT_HOST_RCCL, &r2), PT_ENOTFOUND);
  assert_false(is_loaded(path));
  pt_loader_free(l);
  pt_loader_free(NULL);
  assert_int_equal(pt_loader_new(NULL), PT_EINVAL);
  assert_int_equal(pt_loader_load(NULL, &req, PT_HOST_RCCL, &r1), PT_EINVAL);
  assert_int_equal(pt_loader_unload(NULL), PT_EINVAL);
}

static void test_reuse_and_close(void** state) {
  (void)state;
  const char* d = fx_tmpdir();
  static char path[4096], link[4096];
  snprintf(path, sizeof path, "%s/libreuse.so", d);
  snprintf(link, sizeof link, "%s/libreuse-link.so", d);
  fx_copy(fx_plugin("good"), path);
  fx_symlink("libreuse.so", link);
  pt_request req;
  pt_request_init(&req);
  req.path = path;
  pt_result* a = NULL;
  pt_result* b = NULL;
  assert_int_equal(pt_load(&req, PT_HOST_RCCL, &a), PT_OK);
  assert_false(a->reused);
  req.path = link; /* another name for the same file */
  assert_int_equal(pt_load(&req, PT_HOST_RCCL, &b), PT_OK);
  assert_true(b->reused);
  assert_ptr_equal(a->handle, b->handle);
  assert_ptr_equal(a->table, b->table);
  assert_string_equal(a->realpath, b->realpath);
  assert_int_equal(ctor_runs(path), 1); /* loaded once */
  assert_int_equal(pt_result_close(b), PT_OK);
  assert_null(b->handle);
  assert_null(b->table);
  assert_true(is_loaded(path)); /* a still holds it */
  assert_int_equal(pt_result_close(a), PT_OK);
  assert_false(is_loaded(path));
  pt_result_free(a);
  pt_result_free(b);
}

/* The probe reads files; it cannot know that a symbol the plugin needs is
 * defined nowhere. The loader, with RTLD_NOW, refuses it and says why. */
static void test_undefined_symbol(void** state) {
  (void)state;
  const char* d = fx_tmpdir();
  static char path[4096];
  snprintf(path, sizeof path, "%s/libundef.so", d);
  fx_copy(fx_plugin("undef"), path);
  pt_request req;
  pt_request_init(&req);
  req.path = path;
  pt_result* p = NULL;
  pt_result* l = NULL;
  assert_int_equal(pt_probe(&req, PT_HOST_RCCL, &p), PT_OK);
  assert_int_equal(pt_load(&req, PT_HOST_RCCL, &l), PT_ELOAD);
  assert_int_equal(l->candidates[0].outcome, PT_CAND_LOAD_ERROR);
  assert_non_null(strstr(l->candidates[0].reason, "pt_test_symbol_nobody_defines"));
  assert_false(is_loaded(path));
  pt_result_free(p);
  pt_result_free(l);
}

/* A refused candidate is closed again: nothing stays mapped. */
static void test_refused_is_closed(void** state) {
  (void)state;
  const char* d = fx_tmpdir();
  static char path[4096];
  snprintf(path, sizeof path, "%s/libnullinit.so", d);
  fx_copy(fx_plugin("nullinit"), path);
  pt_request req;
  pt_request_init(&req);
  req.path = path;
  pt_result* l = NULL;
  assert_int_equal(pt_load(&req, PT_HOST_RCCL, &l), PT_EBADPLUGIN);
  assert_non_null(strstr(l->candidates[0].reason, "ncclProfiler_v6.init is NULL"));
  assert_null(l->handle);
  assert_false(is_loaded(path));
  pt_result_free(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_load_once),
      cmocka_unit_test(test_failure_is_sticky),
      cmocka_unit_test(test_reuse_and_close),
      cmocka_unit_test(test_undefined_symbol),
      cmocka_unit_test(test_refused_is_closed),
  };
  return cmocka_run_group_tests_name("loader load-once", tests, NULL, NULL);
}
