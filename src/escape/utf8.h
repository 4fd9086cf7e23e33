/*
 * utf8.h — the one test of what is UTF-8 (RFC 3629), for every writer of
 * strings: the plugin's JSON lines (src/trace/jline.c) and the analyzer's
 * and loader's outputs (escape.c). Header-only: the plugin links no
 * escape.o, and its dump formatting takes no call it does not need.
 */
#ifndef PT_ESCAPE_UTF8_H
#define PT_ESCAPE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length (1..4) of the valid UTF-8 sequence that starts at s, of at most
 * `left` bytes, or 0 if there is none there: a stray continuation byte, an
 * overlong form, a surrogate (U+D800..U+DFFF), past U+10FFFF, or cut short.
 * With `cp`, the code point of a valid sequence. */
static inline size_t pt_utf8_len(const unsigned char* s, size_t left, uint32_t* cp) {
  if (!left) return 0;
  if (s[0] < 0x80) {
    if (cp) *cp = s[0];
    return 1;
  }
  size_t n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 && s[0] < 0xF0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
  if (n == 0 || n > left) return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
  if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
  if (cp) {
    uint32_t v = s[0] & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < n; i++) v = v << 6 | (s[i] & 0x3F);
    *cp = v;
  }
  return n;
}

#endif
