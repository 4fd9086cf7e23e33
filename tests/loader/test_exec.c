/*
 * test_exec.c — how programs of this build start other programs of this
 * build (tools/exec.c): directly, or through PROXYTRACE_EMULATOR (its words,
 * its first word found in PATH, /proc/self/exe made a real path), and a
 * clear failure when the emulator cannot be found.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec.h"
#include "fixtures.h"

static void test_direct(void** state) {
  (void)state;
  unsetenv("PROXYTRACE_EMULATOR");
  char* args[] = {"proxytrace", "probe", "--deep", NULL};
  const char* file = NULL;
  char** v = pt_exec_argv("/proc/self/exe", args, &file);
  assert_non_null(v);
  assert_string_equal(file, "/proc/self/exe");
  assert_string_equal(v[0], "proxytrace");
  assert_string_equal(v[2], "--deep");
  assert_null(v[3]);
  free(v);
  setenv("PROXYTRACE_EMULATOR", "", 1); /* empty: the same */
  v = pt_exec_argv("/bin/true", args, &file);
  assert_non_null(v);
  assert_string_equal(file, "/bin/true");
  assert_string_equal(v[0], "proxytrace");
  free(v);
}

static void test_through_emulator(void** state) {
  (void)state;
  const char* dir = fx_tmpdir();
  const char* emu = fx_fmt("%s/fake-emu", dir);
  fx_write(emu, "#!/bin/sh\nexec \"$@\"\n");
  chmod(emu, 0755);
  const char* old_path = getenv("PATH");
  char* saved = old_path ? strdup(old_path) : NULL;
  setenv("PATH", fx_fmt("/nonexistent:%s", dir), 1);
  setenv("PROXYTRACE_EMULATOR", "  fake-emu -cpu  max ", 1);
  char* args[] = {"proxytrace", "probe", "--deep", NULL};
  const char* file = NULL;
  char** v = pt_exec_argv("/proc/self/exe", args, &file);
  assert_non_null(v);
  assert_string_equal(file, emu); /* found in PATH */
  assert_string_equal(v[0], emu);
  assert_string_equal(v[1], "-cpu");
  assert_string_equal(v[2], "max");
  char self[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  assert_true(k > 0);
  self[k] = 0;
  assert_string_equal(v[3], self); /* not /proc/self/exe: the emulator's own */
  assert_string_equal(v[4], "probe");
  assert_string_equal(v[5], "--deep");
  assert_null(v[6]);
  free(v);

  /* an absolute emulator is taken as it is; other paths are left alone */
  setenv("PROXYTRACE_EMULATOR", emu, 1);
  v = pt_exec_argv("/bin/true", args, &file);
  assert_non_null(v);
  assert_string_equal(v[1], "/bin/true");
  assert_string_equal(v[2], "probe");
  free(v);

  /* not in PATH: refused, with the reason */
  setenv("PROXYTRACE_EMULATOR", "pt-no-such-emulator", 1);
  errno = 0;
  assert_null(pt_exec_argv("/bin/true", args, &file));
  assert_int_equal(errno, ENOENT);

  unsetenv("PROXYTRACE_EMULATOR");
  if (saved) setenv("PATH", saved, 1);
  free(saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_direct),
      cmocka_unit_test(test_through_emulator),
  };
  return cmocka_run_group_tests_name("exec", tests, NULL, NULL);
}
