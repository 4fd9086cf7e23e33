/*
 * explain.c — `proxytrace probe --fanout`: what the fan-out would do with
 * PROXYTRACE_FANOUT_PLUGINS under a host profile. Each child goes through
 * the same list parser and the same loader request as in the fan-out
 * (children.c), probed from the files (no plugin code runs): the file it
 * resolves to, the API version it would be spoken to, and why a child
 * would be refused. What only loading shows (a constructor that fails, a
 * missing dependency) is left to `proxytrace probe --deep --plugin ENTRY`.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "fanout/children.h"
#include "fanout/explain.h"
#include "loader/internal.h"

static void say(FILE* f, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(FILE* f, const char* fmt, ...) {
  if (!f) return; /* --quiet */
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
}

/* 1 when the file exports the fan-out's mark. */
static int file_is_fanout(const char* path) {
  pt_elf* e = NULL;
  char reason[256];
  int wrong_arch = 0;
  if (!path || !*path || pt_elf_open(path, &e, reason, sizeof reason, &wrong_arch) != PT_CAND_OK)
    return 0;
  pt_sym sym;
  int found = pt_elf_symbol(e, FO_MARKER, &sym);
  pt_elf_close(e);
  return found;
}

int pt_fanout_explain(pt_host host, FILE* f) {
  const pt_host_info* info = pt_host_info_of(host);
  const char* value = getenv("PROXYTRACE_FANOUT_PLUGINS");
  fo_list list;
  fo_list_parse(value, &list);
  say(f, "fan-out under %s (%s): children spoken to in profiler API v%d or older\n",
          info->name, info->releases, info->native_version);
  if (list.too_long) {
    say(f, "PROXYTRACE_FANOUT_PLUGINS is longer than %d bytes: the fan-out ignores it\n",
            FO_LIST_MAX - 1);
    return PT_EINVAL;
  }
  if (!list.n) {
    say(f, "PROXYTRACE_FANOUT_PLUGINS %s: the fan-out has nothing to forward to\n",
            value ? "names no profiler" : "is not set");
    return PT_ENOTFOUND;
  }
  int ok = 0;
  for (int k = 0; k < list.n; k++) {
    pt_request req;
    fo_child_request(&req, list.entry[k]);
    pt_result* res = NULL;
    int rc = pt_probe(&req, host, &res);
    say(f, "  %d. %s\n", k + 1, list.entry[k]);
    if (!res) {
      say(f, "     refused: %s\n", pt_strerror(rc));
      continue;
    }
    if (rc != PT_OK) {
      say(f, "     refused: %s\n", pt_strerror(rc));
      for (size_t i = 0; i < res->n_candidates; i++) {
        const pt_candidate* c = &res->candidates[i];
        say(f, "       tried %s (%s): %s%s%s\n", c->name[0] ? c->name : "the main program",
            pt_source_name(c->source), pt_outcome_name(c->outcome), c->reason[0] ? ": " : "",
            c->reason);
      }
    } else if (file_is_fanout(res->path)) {
      say(f, "     -> %s\n     refused: a fan-out (it exports %s): it would forward to itself\n",
              res->path, FO_MARKER);
    } else {
      ok++;
      say(f, "     -> %s\n     spoken to in API v%d%s%s\n", res->path, res->api_version,
              res->api_version == info->native_version ? " (the host's own)" : " (translated)",
              res->has_dump_hook ? "; exports the dump hook (forwarded)" : "");
    }
    pt_result_free(res);
  }
  if (list.entry_too_long)
    say(f, "  %d entr%s longer than %d bytes ignored\n", list.entry_too_long,
            list.entry_too_long == 1 ? "y" : "ies", FO_ENTRY_MAX - 1);
  if (list.ignored)
    say(f, "  more than %d entries: '%s' and later ignored\n", FO_MAX_CHILDREN, list.ignored);
  say(f, "%d of %d would be forwarded to (in this order; finalized in reverse)\n", ok, list.n);
  return ok ? PT_OK : PT_ENOTFOUND;
}
