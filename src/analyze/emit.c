/*
 * emit.c — the pieces of JSON the writers share: strings escaped as RFC
 * 8259 asks (quotes, backslash, control characters; bytes above 0x7F pass
 * as they are, the inputs being UTF-8), 64-bit hashes as decimal strings
 * (JSON readers that use doubles would round them), and times as integers
 * or null.
 */
#include <inttypes.h>

#include "analyze/internal.h"

void an_put_str(FILE* f, const char* s) {
  fputc('"', f);
  for (const unsigned char* p = (const unsigned char*)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
  }
  fputc('"', f);
}

void an_put_hash(FILE* f, uint64_t v) { fprintf(f, "\"%" PRIu64 "\"", v); }

void an_put_time(FILE* f, int64_t ns) {
  if (ns) fprintf(f, "%" PRId64, ns);
  else fputs("null", f);
}
