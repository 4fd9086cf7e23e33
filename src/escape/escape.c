/*
 * escape.c — strings made safe for JSON, a terminal and HTML (escape.h):
 * one walk over the string (what is a character, a bad byte, a control),
 * and per output only how each kind is written.
 */
#include "escape/escape.h"

#include <stdint.h>
#include <string.h>

#include "escape/utf8.h"

/* Where escaped text goes: a stream, or a buffer that is cut rather than
 * overrun (whole pieces only). */
typedef struct {
  FILE* f;
  char* b;
  size_t cap, len;
  int cut;
} sink;

static void put(sink* o, const char* p, size_t n) {
  if (o->f) {
    fwrite(p, 1, n, o->f);
    return;
  }
  if (o->cut || o->len + n + 4 > o->cap) { /* room for "..." and the NUL */
    o->cut = 1;
    return;
  }
  memcpy(o->b + o->len, p, n);
  o->len += n;
}

static int is_control(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

enum { OUT_JSON, OUT_TEXT, OUT_HTML };

/* The visible form of a control character in text and HTML. */
static void visible(sink* o, uint32_t cp) {
  char e[12];
  int n = cp == '\n' ? snprintf(e, sizeof e, "\\n") : cp == '\r' ? snprintf(e, sizeof e, "\\r")
        : cp == '\t' ? snprintf(e, sizeof e, "\\t") : cp < 0x80 ? snprintf(e, sizeof e, "\\x%02x", (unsigned)cp)
                     : snprintf(e, sizeof e, "\\u%04x", (unsigned)cp);
  put(o, e, (size_t)n);
}

static void walk(sink* o, const char* s, int out) {
  static const char fffd[] = "\xEF\xBF\xBD";
  const unsigned char* p = (const unsigned char*)s;
  size_t left = strlen(s);
  while (left) {
    uint32_t cp = 0;
    size_t n = pt_utf8_len(p, left, &cp);
    if (n == 0) { /* a bad byte */
      if (out == OUT_TEXT) {
        char e[8];
        put(o, e, (size_t)snprintf(e, sizeof e, "\\x%02x", *p));
      } else {
        put(o, fffd, 3);
      }
      n = 1;
    } else if (is_control(cp)) {
      if (out != OUT_JSON) {
        visible(o, cp);
      } else {
        char e[8];
        put(o, e, cp == '\n' ? (size_t)snprintf(e, sizeof e, "\\n") : cp == '\r' ? (size_t)snprintf(e, sizeof e, "\\r")
                  : cp == '\t' ? (size_t)snprintf(e, sizeof e, "\\t") : (size_t)snprintf(e, sizeof e, "\\u%04x", (unsigned)cp));
      }
    } else if (out == OUT_JSON && (cp == '"' || cp == '\\')) {
      put(o, cp == '"' ? "\\\"" : "\\\\", 2);
    } else if (out == OUT_TEXT && cp == '\\') {
      put(o, "\\\\", 2);
    } else if (out == OUT_HTML && cp && cp < 0x80 && strchr("<>&\"'", (int)cp)) { /* strchr sees a char: U+2026's is '&' */
      const char* ent = cp == '<' ? "&lt;" : cp == '>' ? "&gt;" : cp == '&' ? "&amp;" : cp == '"' ? "&quot;" : "&#39;";
      put(o, ent, strlen(ent));
    } else {
      put(o, (const char*)p, n);
    }
    p += n;
    left -= n;
  }
}

void pt_json_str(FILE* f, const char* s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  sink o = {.f = f};
  fputc('"', f);
  walk(&o, s, OUT_JSON);
  fputc('"', f);
}

void pt_text_str(FILE* f, const char* s) {
  sink o = {.f = f};
  if (s) walk(&o, s, OUT_TEXT);
}

const char* pt_text_esc(char* out, size_t n, const char* s) {
  if (!n) return out;
  if (n < 8) { /* no room for anything but the mark */
    out[0] = 0;
    return out;
  }
  sink o = {.b = out, .cap = n};
  if (s) walk(&o, s, OUT_TEXT);
  if (o.cut) {
    memcpy(out + o.len, "...", 3);
    o.len += 3;
  }
  out[o.len] = 0;
  return out;
}

void pt_html_str(FILE* f, const char* s) {
  sink o = {.f = f};
  if (s) walk(&o, s, OUT_HTML);
}
