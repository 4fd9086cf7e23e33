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
 * one of the four; the culprits the count says are there; and the JSON
 * result — whose strings come from the input — is valid JSON (checked by a
 * strict reader here, not the analyzer's own).
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
  FILE* f = fopen("/dev/null", "w");
  CHECK(f);
  pt_analysis_write_text(a, f, first & 1);
  pt_analysis_write_json(a, f);
  pt_analysis_write_chrome(a, f);
  fclose(f);
  char* json = pt_analysis_json(a);
  if (json) {
    if (!valid_json(json, strlen(json))) {
      fprintf(stderr, "%s\n", json);
      CHECK(!"the analysis JSON is valid JSON");
    }
    pt_analysis_string_free(json);
  }
  pt_analysis_free(a);
  return 0;
}
