/*
 * fuzz_analyze.c — libFuzzer target: the readers of `proxytrace analyze`
 * (src/analyze/) on arbitrary dump files and logs, and everything the
 * analysis does with what they accept.
 *
 * The input is up to four files, split at NUL bytes, named like what users
 * point the analyzer at (a rank's JSON lines, its text dump, a host log);
 * its first byte also picks a value for the "slow-factor" option. Each file
 * goes in as a buffer, the analysis runs, and every report is written.
 * Checks, besides no crash, hang, leak or sanitizer report: an option is
 * taken or refused with PT_AN_EINVAL, never anything else; the verdict is
 * one of the four; the culprits the count says are there; and every
 * output, whose strings come from the input, is safe on any bytes: the
 * JSON result, the --json report, the Chrome trace and each --records line
 * are strict RFC 8259 JSON in valid UTF-8 (checked by a reader and a UTF-8
 * decoder here, not the analyzer's own: no lone surrogate escape either),
 * and the text report, plain and verbose, is valid UTF-8 holding no control
 * byte but newline (no C0, DEL or C1).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "proxytrace/analyze.h"

/* ---- a strict JSON reader (RFC 8259), validity only ---- */

typedef struct {
  const char* p;
  const char* end;
  int depth;
} jr;

static void ws(jr* r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int lit(jr* r, const char* s) {
  size_t n = strlen(s);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, s, n) != 0) return 0;
  r->p += n;
  return 1;
}

static int hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int string(jr* r) {
  if (r->p >= r->end || *r->p != '"') return 0;
  for (r->p++; r->p < r->end; r->p++) {
    const unsigned char c = (unsigned char)*r->p;
    if (c == '"') {
      r->p++;
      return 1;
    }
    if (c < 0x20) return 0; /* control characters must be escaped */
    if (c != '\\') continue;
    if (++r->p >= r->end) return 0;
    switch (*r->p) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
      case 'u':
        for (int i = 0; i < 4; i++)
          if (++r->p >= r->end || !hex(*r->p)) return 0;
        if ((r->p[-3] == 'd' || r->p[-3] == 'D') && strchr("89abAB", r->p[-2])) return 0; /* no surrogates */
        break;
      default: return 0;
    }
  }
  return 0;
}

static int number(jr* r) {
  const char* s = r->p;
  if (r->p < r->end && *r->p == '-') r->p++;
  if (r->p >= r->end) return 0;
  if (*r->p == '0') r->p++;
  else if (*r->p >= '1' && *r->p <= '9') while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
  else return 0;
  if (r->p < r->end && *r->p == '.') {
    r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
  }
  if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
    r->p++;
    if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
  }
  return r->p > s;
}

static int value(jr* r);

static int members(jr* r, char close, int keyed) {
  r->p++;
  ws(r);
  if (r->p < r->end && *r->p == close) {
    r->p++;
    return 1;
  }
  for (;;) {
    ws(r);
    if (keyed) {
      if (!string(r)) return 0;
      ws(r);
      if (r->p >= r->end || *r->p++ != ':') return 0;
    }
    if (!value(r)) return 0;
    ws(r);
    if (r->p >= r->end) return 0;
    if (*r->p == ',') {
      r->p++;
      continue;
    }
    if (*r->p++ != close) return 0;
    return 1;
  }
}

static int value(jr* r) {
  ws(r);
  if (r->p >= r->end || ++r->depth > 64) return 0;
  int ok;
  switch (*r->p) {
    case '{': ok = members(r, '}', 1); break;
    case '[': ok = members(r, ']', 0); break;
    case '"': ok = string(r); break;
    case 't': ok = lit(r, "true"); break;
    case 'f': ok = lit(r, "false"); break;
    case 'n': ok = lit(r, "null"); break;
    default: ok = number(r); break;
  }
  r->depth--;
  return ok;
}

static int valid_json(const char* s, size_t n) {
  jr r = {s, s + n, 0};
  if (!value(&r)) return 0;
  ws(&r);
  return r.p == r.end;
}

/* ---- UTF-8 (RFC 3629) and control bytes ---- */

/* Every byte of s[n] belongs to a well-formed UTF-8 sequence: no stray
 * continuation, overlong form, surrogate, or code point past U+10FFFF. */
static int valid_utf8(const char* s, size_t n) {
  const unsigned char* p = (const unsigned char*)s;
  for (size_t i = 0; i < n;) {
    unsigned c = p[i], len, cp;
    if (c < 0x80) len = 1, cp = c;
    else if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return 0;
    if (i + len > n) return 0;
    for (unsigned k = 1; k < len; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (p[i + k] & 0x3F);
    }
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    i += len;
  }
  return 1;
}

/* Text for a terminal: valid UTF-8, and no C0 byte but newline, no DEL, no
 * C1 character (U+0080..U+009F, C2 80..C2 9F in UTF-8). */
static int terminal_safe(const char* s, size_t n) {
  if (!valid_utf8(s, n)) return 0;
  const unsigned char* p = (const unsigned char*)s;
  for (size_t i = 0; i < n; i++) {
    if ((p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7F) return 0;
    if (p[i] == 0xC2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F) return 0;
  }
  return 1;
}

/* What `write` puts in a stream, NUL-terminated, its length in *n (caller
 * frees); NULL when memory is short. */
static char* captured(int (*write)(const pt_analysis*, FILE*, int), const pt_analysis* a, int arg, size_t* n) {
  char* buf = NULL;
  FILE* f = open_memstream(&buf, n);
  if (!f) return NULL;
  write(a, f, arg);
  fclose(f);
  return buf;
}

static int text_v(const pt_analysis* a, FILE* f, int v) { return pt_analysis_write_text(a, f, v); }
static int json_w(const pt_analysis* a, FILE* f, int v) { return (void)v, pt_analysis_write_json(a, f); }
static int chrome_w(const pt_analysis* a, FILE* f, int v) { return (void)v, pt_analysis_write_chrome(a, f); }
static int records_w(const pt_analysis* a, FILE* f, int v) { return (void)v, pt_analysis_write_records(a, f); }

static void check_json(const char* what, const char* s, size_t n) {
  if (valid_utf8(s, n) && valid_json(s, n)) return;
  fprintf(stderr, "%s:\n%.*s\n", what, (int)n, s);
  CHECK(!"the output is strict JSON in valid UTF-8");
}

/* ---- the target ---- */

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const names[] = {"proxytrace-node0-11-r0-77.jsonl", "proxytrace-node1-12-r1-77.txt",
                                      "rank2.log", "job-output"};
  static const char* const factors[] = {"3", "1.5", "1000", "0.5", "x", "", "1e400", "nan"};
  pt_analysis* a = NULL;
  if (pt_analysis_new(&a) != 0) return 0;
  const uint8_t first = size ? data[0] : 0;
  if (size) {
    const int rc = pt_analysis_set_option(a, "slow-factor", factors[data[0] % 8]);
    CHECK(rc == 0 || rc == PT_AN_EINVAL);
    data++, size--;
  }
  size_t start = 0;
  for (int file = 0; file < 4 && start <= size; file++) {
    const uint8_t* nul = memchr(data + start, 0, size - start);
    const size_t end = nul ? (size_t)(nul - data) : size;
    const int rc = pt_analysis_add_buffer(a, names[file], (const char*)data + start, end - start);
    CHECK(rc == 0 || rc == PT_AN_ENOMEM);
    start = end + 1;
  }
  const int rc = pt_analysis_run(a);
  CHECK(rc == 0 || rc == PT_AN_ENOMEM);
  const pt_verdict v = pt_analysis_verdict(a);
  CHECK((unsigned)v <= PT_VERDICT_INCOMPLETE);
  for (size_t i = 0; i < pt_analysis_culprit_count(a); i++) CHECK(pt_analysis_culprit(a, i) != NULL);
  CHECK(pt_analysis_culprit(a, pt_analysis_culprit_count(a)) == NULL);
  size_t n = 0;
  for (int verbose = 0; verbose < 2; verbose++) {
    char* t = captured(text_v, a, verbose, &n);
    if (t && !terminal_safe(t, n)) {
      fprintf(stderr, "text report:\n%.*s\n", (int)n, t);
      CHECK(!"the text report is valid UTF-8 with no control byte but newline");
    }
    free(t);
  }
  char* out = captured(json_w, a, 0, &n);
  if (out) check_json("--json", out, n);
  free(out);
  out = captured(chrome_w, a, 0, &n);
  if (out) check_json("--chrome", out, n);
  free(out);
  out = captured(records_w, a, 0, &n);
  for (char *line = out, *nl; out && line < out + n; line = nl + 1) { /* one object a line */
    nl = memchr(line, '\n', (size_t)(out + n - line));
    if (!nl) nl = out + n;
    check_json("--records line", line, (size_t)(nl - line));
  }
  free(out);
  char* json = pt_analysis_json(a);
  if (json) {
    check_json("pt_analysis_json", json, strlen(json));
    pt_analysis_string_free(json);
  }
  pt_analysis_free(a);
  return 0;
}
