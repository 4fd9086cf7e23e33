/*
 * jline.c — JSON lines in a caller's buffer (jline.h).
 */
#include "trace/jline.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "escape/utf8.h"

void pt_jput(pt_jline* j, const char* fmt, ...) {
  if (j->len >= j->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(j->b + j->len, j->cap - j->len, fmt, ap);
  va_end(ap);
  if (w > 0) j->len += (size_t)w;
  if (j->len > j->cap) j->len = j->cap;
}

void pt_jput_str(pt_jline* j, const char* s, size_t max) {
  if (!s) {
    pt_jput(j, "null");
    return;
  }
  pt_jput(j, "\"");
  const unsigned char* p = (const unsigned char*)s;
  size_t left = strnlen(s, max);
  while (left && j->len + 8 < j->cap) {
    size_t n = pt_utf8_len(p, left, NULL);
    if (n == 0) {
      pt_jput(j, "\\ufffd");
      n = 1;
    } else if (*p == '"' || *p == '\\') {
      pt_jput(j, "\\%c", *p);
    } else if (*p == '\n' || *p == '\t' || *p == '\r') {
      pt_jput(j, "\\%c", *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r');
    } else if (*p < 0x20) {
      pt_jput(j, "\\u%04x", *p);
    } else {
      memcpy(j->b + j->len, p, n);
      j->len += n;
    }
    p += n;
    left -= n;
  }
  pt_jput(j, "\"");
}

int pt_jline_emit(pt_jline* j, pt_line_fn emit, void* arg) {
  emit(arg, j->b, (int)(j->len < j->cap ? j->len : j->cap - 1));
  j->len = 0;
  return 1;
}
