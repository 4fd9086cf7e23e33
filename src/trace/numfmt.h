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

static inline char* pt_put_u64(char* p, uint64_t v) {
  char tmp[PT_NUM_MAX];
  char* e = tmp + sizeof tmp;
  char* s = e;
  do {
    *--s = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  memcpy(p, s, (size_t)(e - s));
  return p + (e - s);
}

static inline char* pt_put_i64(char* p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return pt_put_u64(p, 0 - (uint64_t)v); /* INT64_MIN included */
  }
  return pt_put_u64(p, (uint64_t)v);
}

/* A string literal or NUL-terminated string, without its NUL. */
static inline char* pt_put_str(char* p, const char* s) {
  size_t n = strlen(s);
  memcpy(p, s, n);
  return p + n;
}

#endif
