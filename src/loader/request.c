/*
 * request.c — turn a pt_request into the settings the candidate generator
 * reads: pick each host variable (an argument, the environment or, as the
 * host does, its config files), copy every string into the result, and
 * reject contradictory or malformed requests with a note that says what to
 * change. The environment is only read, never written; it is the
 * process's, or the one pt_probe_env() was given.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#ifndef PT_VERSION_MAJOR
#define PT_VERSION_MAJOR 1
#endif

void pt_request_init(pt_request* req) {
  if (req) memset(req, 0, sizeof *req);
}

void pt_request_from_environment(pt_request* req) {
  if (req) req->flags |= PT_REQ_ENVIRONMENT | PT_REQ_CONF_FILES;
}

int pt_request_set_var(pt_request* req, const char* name, const char* value) {
  if (!req || !name || !value) return PT_EINVAL;
  if (!strcmp(name, "NCCL_PROFILER_PLUGIN"))
    req->plugin = value;
  else if (!strcmp(name, "RCCL_ENABLE_PROXY_TRACE"))
    req->rccl_enable_proxy_trace = value;
  else if (!strcmp(name, "NCCL_NET_PLUGIN"))
    req->net_plugin = value;
  else if (!strcmp(name, "PROXYTRACE_HOME"))
    req->home = value;
  else if (!strcmp(name, "LD_LIBRARY_PATH"))
    req->ld_library_path = value;
  else
    return PT_EINVAL;
  return PT_OK;
}

const char* pt_res_getenv(const pt_res* r, const char* name) {
  if (!r->envp) return getenv(name);
  size_t len = strlen(name);
  for (const char* const* e = r->envp; *e; e++)
    if (!strncmp(*e, name, len) && (*e)[len] == '=') return *e + len + 1;
  return NULL;
}

/* An explicit field, else the environment (when asked), else NULL. */
static const char* pick(pt_res* r, const char* field, const char* var, unsigned flags,
                        const char** origin) {
  if (field) {
    if (origin) *origin = "argument";
    return pt_res_keep(r, field);
  }
  if (!(flags & PT_REQ_ENVIRONMENT)) return NULL;
  const char* v = pt_res_getenv(r, var);
  if (!v) return NULL;
  if (origin) *origin = "environment";
  return pt_res_keep(r, v);
}

/* A variable the host reads through its config files too. */
static const char* host_var(pt_res* r, const pt_host_info* h, const pt_request* req,
                            const char* field, const char* var, const char** origin) {
  const char* v = pick(r, field, var, req->flags, origin);
  if (!v && (req->flags & PT_REQ_CONF_FILES) && (h->flags & PT_HOSTF_CONF_FILES))
    v = pt_conf_lookup(r, h, var, origin);
  return v;
}

/* What the probe cannot see: NCCL 2.28.7+ reads every variable through an
 * env plugin (NCCL_ENV_PLUGIN, else libnccl-env.so when it exists). */
static void env_plugin_note(pt_res* r, const pt_host_info* h, const pt_request* req,
                            const pt_settings* s) {
  if (!(h->flags & PT_HOSTF_ENV_PLUGIN) || !(req->flags & PT_REQ_ENVIRONMENT)) return;
  const char* origin = NULL;
  const char* v = host_var(r, h, req, NULL, "NCCL_ENV_PLUGIN", &origin);
  char found[PATH_MAX];
  if (v && !strcasecmp(v, "none")) return;
  if (!v && !pt_search_library("libnccl-env.so", s->ld_library_path, found, sizeof found)) return;
  pt_res_note(r,
              "%s%s%s: NCCL 2.28.7 and later read every variable through this env plugin, "
              "which may supply values (NCCL_PROFILER_PLUGIN, NCCL_NET_PLUGIN, ...) that this "
              "answer cannot see; it assumes the plugin passes the environment through. Set "
              "NCCL_ENV_PLUGIN=none to rule it out.",
              v ? "NCCL_ENV_PLUGIN=" : "libnccl-env.so is on the library path (",
              v ? v : found, v ? "" : ")");
}

static int reject(pt_res* r, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

static int reject(pt_res* r, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pt_res_note(r, "%s", msg);
  r->invalid = 1;
  return PT_EINVAL;
}

int pt_settings_resolve(pt_res* r, const pt_request* req, pt_settings* s) {
  memset(s, 0, sizeof *s);
  const pt_host_info* h = pt_host_info_of(r->pub.host);
  if (!h)
    return reject(r,
                  "unknown host profile (%d): use pt_host_parse() with nccl-2.23 ... nccl-2.30, "
                  "nccl-2.27.3 or rccl",
                  (int)r->pub.host);
  if (!req) return reject(r, "no request given: pass a pt_request set up with pt_request_init()");

  int explicit_count = (req->plugin != NULL) + (req->path != NULL) + (req->name != NULL);
  if (explicit_count > 1)
    return reject(r,
                  "set only one of: the NCCL_PROFILER_PLUGIN value, an explicit path, a short "
                  "name (all three are the same variable)");
  if (req->path) {
    if (!*req->path) return reject(r, "the explicit path is empty: give a file path");
    if (!strchr(req->path, '/'))
      return reject(r,
                    "the path '%s' has no '/', so the dynamic linker would search for it "
                    "instead of opening it: write './NAME' for a file in the current directory, "
                    "or pass NAME as a short name",
                    req->path);
    s->value = pt_res_keep(r, req->path);
    s->origin = "argument";
    s->from_path = 1;
  } else if (req->name) {
    if (!*req->name) return reject(r, "the short name is empty: give e.g. 'proxytrace'");
    if (strchr(req->name, '/'))
      return reject(r, "the short name '%s' contains '/': pass it as a path instead", req->name);
    s->value = pt_res_keep(r, req->name);
    s->origin = "argument";
    s->from_name = 1;
  } else {
    s->value = host_var(r, h, req, req->plugin, "NCCL_PROFILER_PLUGIN", &s->origin);
  }

  s->rccl_flag = host_var(r, h, req, req->rccl_enable_proxy_trace, "RCCL_ENABLE_PROXY_TRACE",
                          &s->rccl_flag_origin);
  s->net_value = host_var(r, h, req, req->net_plugin, "NCCL_NET_PLUGIN", &s->net_origin);
  s->net_from_argument = req->net_plugin != NULL;
  s->net_default = !s->net_value && (req->flags & PT_REQ_ENVIRONMENT);
  s->home = pick(r, req->home, "PROXYTRACE_HOME", req->flags, NULL);
  if (s->home && !*s->home) s->home = NULL; /* empty = unset */
  s->ld_library_path = pick(r, req->ld_library_path, "LD_LIBRARY_PATH", req->flags, NULL);
  s->rccl_dir = pt_res_keep(r, req->rccl_dir);
  s->rccl_anchor = req->rccl_anchor;
  if (req->major < 0)
    return reject(r, "the required major version is %d: give 0 (this build's) or a positive one",
                  req->major);
  s->major = req->major ? req->major : PT_VERSION_MAJOR;
  r->major = s->major;
  r->ld_library_path = s->ld_library_path;
  r->value_set = s->value && *s->value;

  r->pub.value = s->value;
  r->pub.value_origin = s->value ? s->origin : "";
  r->pub.net_value = s->net_value;
  r->pub.net_value_origin = s->net_value ? s->net_origin : "";
  if ((h->flags & PT_HOSTF_RCCL_CONF) && (req->flags & PT_REQ_CONF_FILES) &&
      (req->flags & PT_REQ_ENVIRONMENT) && pt_res_getenv(r, "NCCL_CONF_FILE"))
    pt_res_note(r,
                "NCCL_CONF_FILE is set, but RCCL does not read it: RCCL takes its settings from "
                "~/.rccl.conf and /etc/rccl.conf.");
  env_plugin_note(r, h, req, s);
  return PT_OK;
}
