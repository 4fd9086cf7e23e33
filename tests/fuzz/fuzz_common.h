/*
 * fuzz_common.h — what the libFuzzer targets share: a check that aborts
 * (libFuzzer keeps the input) with the target's name, and a reader that
 * takes bytes off the front of the input, zeros once it is used up.
 */
#ifndef PT_FUZZ_COMMON_H
#define PT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerInitialize(int* argc, char*** argv);

#define CHECK(c)                                                                       \
  do {                                                                                 \
    if (!(c)) {                                                                        \
      fprintf(stderr, "%s: check failed: %s (line %d)\n", __FILE__, #c, __LINE__);    \
      abort();                                                                         \
    }                                                                                  \
  } while (0)

typedef struct {
  const uint8_t* p;
  size_t n;
} fz_input;

static inline uint8_t fz_u8(fz_input* in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

/* k bytes, big-endian. */
static inline uint64_t fz_bytes(fz_input* in, int k) {
  uint64_t v = 0;
  for (int i = 0; i < k; i++) v = v << 8 | fz_u8(in);
  return v;
}

#endif
