/*
 * report.c — print a result for people (pt_result_print) and for scripts
 * (pt_result_print_json). Both show the same facts: the outcome, the
 * variables that decided it, every candidate in the host's order with
 * what happened to it and why, and the notes that say what to do. A user
 * whose plugin did not load should find the reason here without reading
 * the host's source.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "escape/escape.h"

static const char* outcome_key(pt_outcome o) {
  switch (o) {
    case PT_CAND_OK: return "ok";
    case PT_CAND_NOT_TRIED: return "not_tried";
    case PT_CAND_NOT_FOUND: return "not_found";
    case PT_CAND_TOO_LONG: return "too_long";
    case PT_CAND_UNREADABLE: return "unreadable";
    case PT_CAND_NOT_ELF: return "not_elf";
    case PT_CAND_LOAD_ERROR: return "load_error";
    case PT_CAND_WRONG_MAJOR: return "wrong_major";
    case PT_CAND_NO_SYMBOL: return "no_symbol";
    case PT_CAND_BAD_TABLE: return "bad_table";
    case PT_CAND_DUPLICATE: return "duplicate";
  }
  return "unknown";
}

static const char* source_key(pt_source s) {
  switch (s) {
    case PT_SRC_DEFAULT: return "default";
    case PT_SRC_VALUE: return "value";
    case PT_SRC_SHORT_NAME: return "short_name";
    case PT_SRC_STATIC: return "main_program";
    case PT_SRC_AUTOLOAD: return "autoload";
    case PT_SRC_NET_PLUGIN: return "net_plugin";
    case PT_SRC_HOME: return "home";
  }
  return "unknown";
}

/* Only RCCL calls ncclProfilerProxyTraceDump: under another host the
 * symbol is exported for nothing, and the report does not mention it. */
static int calls_dump_hook(pt_host host) {
  const pt_host_info* h = pt_host_info_of(host);
  return h && (h->flags & PT_HOSTF_DUMP_HOOK);
}

int pt_result_print(const pt_result* res, FILE* f) {
  if (!res || !f) return PT_EINVAL;
  const pt_host_info* h = pt_host_info_of(res->host);
  const int hook = calls_dump_hook(res->host);
  fprintf(f, "host:     %s (%s), looks for ncclProfiler_v%d..v1\n", h ? h->name : "?",
          h ? h->releases : "?", h ? h->native_version : 0);
  fprintf(f, "mode:     %s\n",
          res->probed ? "probe (files only, no plugin code ran)" : "load (dlopen)");
  if (res->value)
    fprintf(f, "NCCL_PROFILER_PLUGIN=%s (%s)\n", res->value, res->value_origin);
  else if (res->status == PT_EINVAL)
    fprintf(f, "NCCL_PROFILER_PLUGIN: not looked at, the request was refused (see the notes)\n");
  else
    fprintf(f, "NCCL_PROFILER_PLUGIN is not set\n");
  if (res->net_value)
    fprintf(f, "NCCL_NET_PLUGIN=%s (%s)\n", res->net_value, res->net_value_origin);
  const char* home = res->via_home
                         ? " [through PROXYTRACE_HOME: NCCL and RCCL themselves never look there]"
                         : "";
  if (res->status == PT_OK) {
    fprintf(f, "result:   %s %s%s\n", res->probed ? "would load" : "loaded", res->path, home);
    if (strcmp(res->realpath, res->path) != 0) fprintf(f, "          = %s\n", res->realpath);
    fprintf(f, "          ncclProfiler_v%d", res->api_version);
    if (*res->plugin_name) fprintf(f, " \"%s\"", res->plugin_name);
    if (hook) fprintf(f, ", dump hook %s", res->has_dump_hook ? "ncclProfilerProxyTraceDump" : "absent");
    fprintf(f, "%s\n", res->reused ? ", copy already loaded in this process" : "");
  } else {
    fprintf(f, "result:   no plugin (%s: %s)%s\n", pt_err_name(res->status),
            pt_strerror(res->status), home);
  }
  if (res->n_candidates) fprintf(f, "candidates, in the order the host tries them:\n");
  for (size_t i = 0; i < res->n_candidates; i++) {
    const pt_candidate* c = &res->candidates[i];
    fprintf(f, "  %2zu. %-15s %s\n", i + 1, pt_source_name(c->source),
            *c->name ? c->name : "(main program: dlopen(NULL))");
    if (*c->file && strcmp(c->file, c->name) != 0) fprintf(f, "      file: %s\n", c->file);
    fprintf(f, "      -> %s", pt_outcome_name(c->outcome));
    if (c->outcome == PT_CAND_OK)
      fprintf(f, ": ncclProfiler_v%d%s", c->api_version,
              hook && c->has_dump_hook ? ", ncclProfilerProxyTraceDump" : "");
    if (*c->reason) fprintf(f, ": %s", c->reason);
    fputc('\n', f);
  }
  if (res->n_notes) fprintf(f, "notes:\n");
  for (size_t i = 0; i < res->n_notes; i++) fprintf(f, "  - %s\n", res->notes[i]);
  return ferror(f) ? PT_EINVAL : PT_OK;
}


static void json_kv(FILE* f, const char* key, const char* value, int comma) {
  fprintf(f, "%s\"%s\":", comma ? "," : "", key);
  pt_json_str(f, value);
}

int pt_result_print_json(const pt_result* res, FILE* f) {
  if (!res || !f) return PT_EINVAL;
  fputc('{', f);
  json_kv(f, "version", pt_version(), 0);
  json_kv(f, "host", pt_host_name(res->host), 1);
  json_kv(f, "mode", res->probed ? "probe" : "load", 1);
  json_kv(f, "status", pt_err_name(res->status), 1);
  json_kv(f, "message", pt_strerror(res->status), 1);
  fprintf(f, ",\"ok\":%s", res->status == PT_OK ? "true" : "false");
  json_kv(f, "value", res->value, 1);
  json_kv(f, "value_origin", res->value ? res->value_origin : NULL, 1);
  json_kv(f, "net_plugin", res->net_value, 1);
  json_kv(f, "net_plugin_origin", res->net_value ? res->net_value_origin : NULL, 1);
  fprintf(f, ",\"via_proxytrace_home\":%s", res->via_home ? "true" : "false");
  json_kv(f, "path", res->status == PT_OK ? res->path : NULL, 1);
  json_kv(f, "realpath", res->status == PT_OK ? res->realpath : NULL, 1);
  fprintf(f, ",\"api_version\":%d", res->api_version);
  fprintf(f, ",\"dump_hook\":%s,\"host_calls_dump_hook\":%s", res->has_dump_hook ? "true" : "false",
          calls_dump_hook(res->host) ? "true" : "false");
  json_kv(f, "plugin_name", res->plugin_name, 1);
  fprintf(f, ",\"reused\":%s", res->reused ? "true" : "false");
  fputs(",\"candidates\":[", f);
  for (size_t i = 0; i < res->n_candidates; i++) {
    const pt_candidate* c = &res->candidates[i];
    fputs(i ? ",{" : "{", f);
    json_kv(f, "name", c->name, 0);
    json_kv(f, "file", c->file, 1);
    json_kv(f, "source", source_key(c->source), 1);
    json_kv(f, "outcome", outcome_key(c->outcome), 1);
    fprintf(f, ",\"api_version\":%d,\"dump_hook\":%s", c->api_version,
            c->has_dump_hook ? "true" : "false");
    json_kv(f, "reason", c->reason, 1);
    fputc('}', f);
  }
  fputs("],\"notes\":[", f);
  for (size_t i = 0; i < res->n_notes; i++) {
    if (i) fputc(',', f);
    pt_json_str(f, res->notes[i]);
  }
  fputs("]}\n", f);
  return ferror(f) ? PT_EINVAL : PT_OK;
}
