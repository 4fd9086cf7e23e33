/*
 * emit.c — the pieces of JSON the analyzer's writers share: strings (the
 * escaping every output shares, escape/escape.h), 64-bit hashes as
 * decimal strings (JSON readers that use doubles would round them), and
 * times as integers or null.
 */
#include <inttypes.h>

#include "analyze/internal.h"
#include "escape/escape.h"

void an_put_hash(FILE* f, uint64_t v) { fprintf(f, "\"%" PRIu64 "\"", v); }

void an_put_time(FILE* f, int64_t ns) {
  if (ns) fprintf(f, "%" PRId64, ns);
  else fputs("null", f);
}

void an_put_str(FILE* f, const char* s) { pt_json_str(f, s ? s : ""); }
