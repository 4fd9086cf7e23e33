/*
 * faults.h — minor page faults of the calling thread, for the tests that
 * check a recording thread takes none (tests/unit/test_prefault.c,
 * tests/integration/test_prefault.c).
 */
#ifndef PT_TEST_FAULTS_H
#define PT_TEST_FAULTS_H

#include <stdlib.h>
#include <sys/resource.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PT_TEST_SANITIZED 1
#endif
#endif
#ifndef PT_TEST_SANITIZED
#define PT_TEST_SANITIZED 0
#endif

/* Faults are counted only natively and without a sanitizer: an emulator
 * (qemu-user, PROXYTRACE_EMULATOR) takes faults of its own for the code it
 * translates, a sanitizer for its shadow memory. */
static inline int pt_test_faults_counted(void) {
  const char* emu = getenv("PROXYTRACE_EMULATOR");
  return !PT_TEST_SANITIZED && !(emu && *emu);
}

/* The calling thread's minor faults so far, -1 if unknown. */
static inline long pt_test_thread_faults(void) {
  struct rusage u;
  return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_minflt : -1;
}

#endif
