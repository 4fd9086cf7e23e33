/*
 * numfmt.h — decimal integers written by hand into a caller's buffer, for the
 * dump's lines. A dump prints about thirty integers per record; snprintf
 * parses its format string and goes through the locale machinery for each,
 * which was most of a dump's time. These write the bytes %llu / %lld print
 * (the C locale: no grouping, '-' for negatives) and return the end of what
 * they wrote.
 *
 * Room: the caller guarantees PT_NUM_MAX bytes at p for each number. The
 * bytes between the returned end and p + PT_NUM_MAX may be overwritten (a
 * number is stored eight digits at a time), so write numbers in order and
 * never keep text after the insertion point.
 *
 * How: the digit count comes from the bit length and one comparison; a
 * value below 10^8 is split into eight decimal digits held in the bytes of
 * one 64-bit word by three multiplications (no division, no loop: the lanes
 * of the word divide by 10 000, by 100 and by 10 at once), and a larger one
 * is first cut into such eight-digit blocks by two divisions by constants.
 */
#ifndef PT_TRACE_NUMFMT_H
#define PT_TRACE_NUMFMT_H

#include <stdint.h>
#include <string.h>

#define PT_NUM_MAX 20 /* "18446744073709551615", "-9223372036854775808" */

static const uint64_t pt_pow10[20] = {1ull,
                                      10ull,
                                      100ull,
                                      1000ull,
                                      10000ull,
                                      100000ull,
                                      1000000ull,
                                      10000000ull,
                                      100000000ull,
                                      1000000000ull,
                                      10000000000ull,
                                      100000000000ull,
                                      1000000000000ull,
                                      10000000000000ull,
                                      100000000000000ull,
                                      1000000000000000ull,
                                      10000000000000000ull,
                                      100000000000000000ull,
                                      1000000000000000000ull,
                                      10000000000000000000ull};

/* Digits of v (1..20): log10 from the bit length (1233 / 4096 ~ log10 2),
 * one too many below the next power of ten. */
static inline unsigned pt_num_digits(uint64_t v) {
  v |= 1;
  const unsigned t = ((unsigned)(64 - __builtin_clzll(v)) * 1233) >> 12;
  return t + 1 - (v < pt_pow10[t]);
}

/* The eight decimal digits of x < 10^8 (leading zeros included) as ASCII in
 * the bytes of a word, the first digit in its least significant byte. */
static inline uint64_t pt_digits8(uint32_t x) {
  /* [x / 10^4, x % 10^4] in two 32-bit lanes */
  uint64_t y = (uint64_t)(x / 10000) | (uint64_t)(x % 10000) << 32;
  /* each lane (< 10^4) as [lane / 100, lane % 100] in 16-bit lanes:
   * lane * 10486 >> 20 is lane / 100 for every lane below 10^4 */
  uint64_t hi = (y * 10486) >> 20 & 0x0000007F0000007Full;
  y = hi | (y - hi * 100) << 16;
  /* each 16-bit lane (< 100) as [lane / 10, lane % 10] in bytes:
   * lane * 103 >> 10 is lane / 10 for every lane below 100 */
  hi = (y * 103) >> 10 & 0x000F000F000F000Full;
  y = hi | (y - hi * 10) << 8;
  return y + 0x3030303030303030ull;
}

/* Stores the word's bytes at p, its least significant byte first. */
static inline void pt_store8(char* p, uint64_t w) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  memcpy(p, &w, 8);
}

/* The last `nd` (1..8) of the eight digits of x, at p (8 bytes written). */
static inline char* pt_put_digits_lead(char* p, uint32_t x, unsigned nd) {
  pt_store8(p, pt_digits8(x) >> (8 * (8 - nd)));
  return p + nd;
}

static const char pt_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* v >= 100: kept out of line, so that the common short numbers below stay
 * small enough to inline at every call. */
__attribute__((noinline, unused)) static char* pt_put_u64_long(char* p, uint64_t v) {
  if (v < 100000000) return pt_put_digits_lead(p, (uint32_t)v, pt_num_digits(v));
  if (v < 10000000000000000ull) {
    const uint64_t top = v / 100000000;
    p = pt_put_digits_lead(p, (uint32_t)top, pt_num_digits(top));
    pt_store8(p, pt_digits8((uint32_t)(v - top * 100000000)));
    return p + 8;
  }
  const uint64_t top = v / 10000000000000000ull; /* 1..1844 */
  const uint64_t rest = v - top * 10000000000000000ull;
  const uint64_t mid = rest / 100000000;
  p = pt_put_digits_lead(p, (uint32_t)top, pt_num_digits(top));
  pt_store8(p, pt_digits8((uint32_t)mid));
  pt_store8(p + 8, pt_digits8((uint32_t)(rest - mid * 100000000)));
  return p + 16;
}

static inline char* pt_put_u64(char* p, uint64_t v) {
  if (v < 10) {
    *p = (char)('0' + v);
    return p + 1;
  }
  if (v < 100) { /* counters, ids, channels: most numbers of a line */
    memcpy(p, pt_digit_pairs + 2 * v, 2);
    return p + 2;
  }
  return pt_put_u64_long(p, v);
}

/* The digits of the last v / 10^8 a field printed: in a dump, successive
 * timestamps and commHashes share them (10^8 ns is 100 ms; 10^8 ms, 28
 * hours), and a hit leaves one eight-digit block to convert. Zeroed: empty. */
typedef struct {
  uint64_t hi;
  uint64_t len;
  char s[24];
} pt_num_memo;

/* pt_put_u64 through a memo. */
static inline char* pt_put_u64_memo(char* p, uint64_t v, pt_num_memo* m) {
  if (v < 100000000) return pt_put_u64(p, v);
  const uint64_t hi = v / 100000000; /* at most 12 digits */
  if (hi != m->hi) {
    m->len = (uint64_t)(pt_put_u64(m->s, hi) - m->s);
    m->hi = hi;
  }
  memcpy(p, m->s, 16);
  p += m->len;
  pt_store8(p, pt_digits8((uint32_t)(v - hi * 100000000)));
  return p + 8;
}

static inline char* pt_put_i64(char* p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return pt_put_u64(p, 0 - (uint64_t)v); /* INT64_MIN included */
  }
  return pt_put_u64(p, (uint64_t)v);
}

/* pt_put_i64 through a memo (negative values bypass it). */
static inline char* pt_put_i64_memo(char* p, int64_t v, pt_num_memo* m) {
  return v < 0 ? pt_put_i64(p, v) : pt_put_u64_memo(p, (uint64_t)v, m);
}

/* The last value of 100..10^8-1 a field printed, as its digits' word: the
 * sizes of the ops of one collective (nBytes, totalBytes, chunkSize) repeat
 * from line to line. len 0 (zeroed): empty. */
typedef struct {
  uint64_t v, word;
  uint64_t len;
} pt_size_memo;

static inline char* pt_put_u64_same(char* p, uint64_t v, pt_size_memo* m) {
  if (v < 100 || v >= 100000000) return pt_put_u64(p, v);
  if (v != m->v || !m->len) {
    m->len = pt_num_digits(v);
    m->word = pt_digits8((uint32_t)v) >> (8 * (8 - m->len));
    m->v = v;
  }
  pt_store8(p, m->word);
  return p + m->len;
}

/* A NUL-terminated string, without its NUL. The strings a dump line holds
 * are short (names): a byte loop beats a call to memcpy. */
static inline char* pt_put_str(char* p, const char* s) {
  while (*s) *p++ = *s++;
  return p;
}

#endif
