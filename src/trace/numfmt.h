/*
 * numfmt.h — decimal integers written by hand into a caller's buffer, for the
 * dump's lines. A dump prints about thirty integers per record; snprintf
 * parses its format string and goes through the locale machinery for each,
 * which was most of a dump's time. These write the bytes %llu / %lld print
 * (the C locale: no grouping, '-' for negatives) and return the end of what
 * they wrote; the caller guarantees room (PT_NUM_MAX bytes per number).
 */
#ifndef PT_TRACE_NUMFMT_H
#define PT_TRACE_NUMFMT_H

#include <stdint.h>
#include <string.h>

#define PT_NUM_MAX 20 /* "18446744073709551615", "-9223372036854775808" */

/* Digits of v (1..20). */
static inline unsigned pt_num_digits(uint64_t v) {
  unsigned n = 1;
  for (;;) {
    if (v < 10) return n;
    if (v < 100) return n + 1;
    if (v < 1000) return n + 2;
    if (v < 10000) return n + 3;
    v /= 10000;
    n += 4;
  }
}

/* Written from the last digit back, two digits per division. */
static inline char* pt_put_u64(char* p, uint64_t v) {
  static const char pairs[201] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char* const end = p + pt_num_digits(v);
  char* q = end;
  while (v >= 100) {
    const unsigned r = (unsigned)(v % 100);
    v /= 100;
    q -= 2;
    q[0] = pairs[2 * r];
    q[1] = pairs[2 * r + 1];
  }
  if (v >= 10) {
    q -= 2;
    q[0] = pairs[2 * v];
    q[1] = pairs[2 * v + 1];
  } else {
    *--q = (char)('0' + v);
  }
  return end;
}

static inline char* pt_put_i64(char* p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return pt_put_u64(p, 0 - (uint64_t)v); /* INT64_MIN included */
  }
  return pt_put_u64(p, (uint64_t)v);
}

/* A NUL-terminated string, without its NUL. The strings a dump line holds
 * are short (names, one key): a byte loop beats a call to memcpy. */
static inline char* pt_put_str(char* p, const char* s) {
  while (*s) *p++ = *s++;
  return p;
}

#endif
