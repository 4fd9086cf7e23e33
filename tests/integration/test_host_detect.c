/*
 * test_host_detect.c — the plugin tells RCCL from NVIDIA NCCL by a symbol
 * only RCCL exports (src/plugin/host.c), and logs at that host's WARN level:
 * 3 under RCCL, 2 under NVIDIA. Two fake host libraries (fakehost.c) are
 * opened RTLD_LOCAL, as a framework may open the host library; the plugin
 * finds the symbol in the library its logger belongs to. Then the RCCL one
 * is made global, and the global scope says RCCL for any logger.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nccl/profiler_v4.h"
#include "rccl_host.h"

typedef struct {
  void* so;
  ncclDebugLogger_t log;
  int (*lines)(int level);
} fakehost;

static void open_host(fakehost* h, const char* name, int flags) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", PT_FAKEHOST_DIR, name);
  h->so = dlopen(path, flags);
  assert_non_null(h->so);
  h->log = (ncclDebugLogger_t)dlsym(h->so, "fakehost_log");
  h->lines = (int (*)(int))dlsym(h->so, "fakehost_lines");
  assert_non_null(h->log);
  assert_non_null(h->lines);
}

static rh_plugin plugin;

/* Periodic dumps go through each communicator's logger (no dump files):
 * wait for a few lines at `level` from that host. */
static void expect_level(fakehost* h, int level, int other) {
  for (int i = 0; i < 3000 && h->lines(level) < 3; i++) usleep(1000);
  assert_true(h->lines(level) >= 3);
  assert_int_equal(h->lines(other), 0);
}

static void test_rccl_told_by_its_symbol(void** state) {
  (void)state;
  setenv("PROXYTRACE_STALL_MS", "0", 1);
  setenv("PROXYTRACE_DUMP_INTERVAL_MS", "5", 1);
  unsetenv("PROXYTRACE_DUMP_DIR");
  rh_open(&plugin, NULL);
  fakehost rccl, nccl;
  open_host(&rccl, "libfakehost-rccl.so", RTLD_NOW | RTLD_LOCAL);
  open_host(&nccl, "libfakehost-nccl.so", RTLD_NOW | RTLD_LOCAL);
  assert_null(dlsym(RTLD_DEFAULT, "mscclLoadAlgo")); /* not global */
  void *a = NULL, *b = NULL, *c = NULL;
  int mask = 0;
  assert_int_equal(plugin.p->init(&a, 1, &mask, "rccl", 1, 2, 0, rccl.log), ncclSuccess);
  ncclProfiler_v4_t* v4 = dlsym(plugin.so, "ncclProfiler_v4");
  assert_int_equal(v4->init(&b, &mask, "nccl", 2, 1, 2, 1, nccl.log), ncclSuccess);
  expect_level(&rccl, RCCL_LOG_WARN, NCCL_LOG_WARN);
  expect_level(&nccl, NCCL_LOG_WARN, RCCL_LOG_WARN);
  plugin.p->finalize(a);
  v4->finalize(b);
  /* The RCCL library in the global scope: RCCL, whatever the logger. */
  assert_non_null(dlopen(PT_FAKEHOST_DIR "/libfakehost-rccl.so", RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL));
  assert_non_null(dlsym(RTLD_DEFAULT, "mscclLoadAlgo"));
  int before = nccl.lines(RCCL_LOG_WARN);
  assert_int_equal(plugin.p->init(&c, 3, &mask, "nccl", 1, 2, 0, nccl.log), ncclSuccess);
  for (int i = 0; i < 3000 && nccl.lines(RCCL_LOG_WARN) < before + 3; i++) usleep(1000);
  assert_true(nccl.lines(RCCL_LOG_WARN) >= before + 3);
  plugin.p->finalize(c);
  rh_close(&plugin);
  unsetenv("PROXYTRACE_DUMP_INTERVAL_MS");
}

int main(void) {
  if (!getenv("PT_PLUGIN_SO")) {
    fprintf(stderr, "PT_PLUGIN_SO is not set (run through make test)\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_rccl_told_by_its_symbol)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
