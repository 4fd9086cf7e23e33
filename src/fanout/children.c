/*
 * children.c — parsing PROXYTRACE_FANOUT_PLUGINS and the loader request of
 * each child, shared by the fan-out and `proxytrace probe --fanout` so the
 * probe explains exactly what the fan-out will do.
 */
#include <string.h>

#include "fanout/children.h"

void fo_list_parse(const char* value, fo_list* out) {
  memset(out, 0, sizeof *out);
  if (!value || !*value) return;
  if (strlen(value) >= FO_LIST_MAX) {
    out->too_long = 1;
    return;
  }
  const char* p = value;
  while (*p) {
    const char* end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    const char* a = p;
    const char* b = end;
    while (a < b && (*a == ' ' || *a == '\t')) a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
    size_t n = (size_t)(b - a);
    if (n >= FO_ENTRY_MAX) {
      out->entry_too_long++;
    } else if (n && out->n == FO_MAX_CHILDREN) {
      if (!out->ignored) {
        memcpy(out->rest, a, n);
        out->rest[n] = '\0';
        out->ignored = out->rest;
      }
    } else if (n) {
      memcpy(out->entry[out->n], a, n);
      out->entry[out->n][n] = '\0';
      out->n++;
    }
    p = *end ? end + 1 : end;
  }
}

void fo_child_request(pt_request* req, const char* entry) {
  pt_request_init(req);
  req->plugin = entry;
}
