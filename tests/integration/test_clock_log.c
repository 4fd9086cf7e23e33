/*
 * test_clock_log.c — what the plugin says about its clock through the host
 * logger: PROXYTRACE_CLOCK set to the other architecture's counter name is
 * reported once (WARN, with this machine's accepted values and the default)
 * and the default applies; the clock in use is said once per process at INFO
 * level, however many communicators start. Its own program: both messages
 * are once per process, and the clock is chosen at the first init.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rccl_host.h"

#if defined(__aarch64__)
#define OWN_NAME "counter"
#define OTHER_NAME "tsc"
#else
#define OWN_NAME "tsc"
#define OTHER_NAME "counter"
#endif

static void test_other_architectures_name(void** state) {
  (void)state;
  rh_plugin plugin;
  rh_open(&plugin, NULL);
  rh_log_clear();
  setenv("PROXYTRACE_CLOCK", OTHER_NAME, 1);
  void* c1 = rh_init(&plugin, 1, 0, 2);
  void* c2 = rh_init(&plugin, 2, 1, 2);
  unsetenv("PROXYTRACE_CLOCK");
  int warns = 0, infos = 0;
  for (int i = 0; i < rh_captured.n; i++) {
    const char* t = rh_captured.text[i];
    if (strstr(t, "PROXYTRACE_CLOCK='" OTHER_NAME "'")) {
      warns++;
      assert_int_equal(rh_captured.level[i], NCCL_LOG_WARN); /* no rcclGetVersion here */
      assert_non_null(strstr(t, "accepted '" OWN_NAME "' or 'monotonic'"));
      assert_non_null(strstr(t, "using the default"));
    }
    if (strstr(t, "proxytrace: clock ")) {
      infos++;
      assert_int_equal(rh_captured.level[i], NCCL_LOG_INFO);
      /* the default source, not the refused name */
#if defined(__aarch64__)
      assert_non_null(strstr(t, "proxytrace: clock counter ("));
#else
      if (!strstr(t, "proxytrace: clock tsc (") &&
          !strstr(t, "proxytrace: clock monotonic (CLOCK_MONOTONIC; this CPU's TSC is not invariant)"))
        fail_msg("unexpected clock line: %s", t);
#endif
    }
  }
  assert_int_equal(warns, 1);
  assert_int_equal(infos, 1);
  plugin.p->finalize(c1);
  plugin.p->finalize(c2);
  rh_log_clear();
  rh_close(&plugin);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_other_architectures_name),
  };
  return cmocka_run_group_tests_name("clock_log", tests, NULL, NULL);
}
