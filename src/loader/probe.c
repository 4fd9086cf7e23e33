/*
 * probe.c — the file-level backend: pt_probe() decides every candidate
 * from the files alone and never maps a new library, so no plugin code
 * runs. It follows the dynamic linker step by step: a bare name is
 * searched like dlopen searches it (search.c), a file is checked as ld.so
 * checks it and its symbols and table are read from the ELF dynamic
 * section (elf.c). Objects already in the process (the main program for
 * STATIC_PLUGIN, a plugin loaded earlier) are looked at through dlsym on
 * the existing copy, which is what dlopen would return for them.
 *
 * What a file cannot tell: whether the plugin's own dependencies resolve
 * and whether its constructors succeed. For that, run pt_load() in a child
 * process (`proxytrace probe --deep`).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static void refuse_missing(pt_res* r, size_t i, const char* file) {
  char target[PATH_MAX];
  struct stat st;
  ssize_t k;
  if (lstat(file, &st) == 0 && S_ISLNK(st.st_mode) &&
      (k = readlink(file, target, sizeof target - 1)) > 0) {
    target[k] = '\0';
    pt_res_refuse(r, i, PT_CAND_NOT_FOUND,
                  "%s: No such file or directory (a symlink to '%s', which does not exist)", file,
                  target);
  } else {
    pt_res_refuse(r, i, PT_CAND_NOT_FOUND, "%s: No such file or directory", file);
  }
}

static pt_outcome probe_open(pt_res* r, size_t i, pt_obj** out) {
  const char* name = r->cands[i].name;
  /* The main program, or a copy already loaded: look at it in place. */
  if (!*name) return pt_dl_open(r, i, out, 0); /* dlopen(NULL) maps nothing */
  if (pt_dl_open(r, i, out, 1) == PT_CAND_OK) return PT_CAND_OK; /* RTLD_NOLOAD hit */
  char found[PATH_MAX];
  const char* file = name;
  if (!pt_is_path(name)) {
    if (!pt_search_library(name, r->ld_library_path, found, sizeof found)) {
      pt_res_refuse(r, i, PT_CAND_NOT_FOUND,
                    "%s: No such file or directory in LD_LIBRARY_PATH (%s), /etc/ld.so.cache or "
                    "the system directories",
                    name, r->ld_library_path && *r->ld_library_path ? r->ld_library_path : "unset");
      return PT_CAND_NOT_FOUND;
    }
    file = found;
  }
  pt_elf* e = NULL;
  char reason[512];
  pt_outcome o = pt_elf_open(file, &e, reason, sizeof reason, NULL);
  if (o == PT_CAND_NOT_FOUND) {
    refuse_missing(r, i, file);
    return o;
  }
  if (o != PT_CAND_OK) {
    pt_res_refuse(r, i, o, "%s: %s", file, reason);
    return o;
  }
  pt_obj* obj = calloc(1, sizeof *obj);
  if (!obj) {
    pt_elf_close(e);
    r->nomem = 1;
    pt_res_refuse(r, i, PT_CAND_LOAD_ERROR, "out of memory");
    return PT_CAND_LOAD_ERROR;
  }
  obj->elf = e;
  r->cands[i].file = pt_res_keep(r, file);
  *out = obj;
  return PT_CAND_OK;
}

static int probe_symbol(pt_obj* obj, const char* name, pt_sym* out) {
  if (obj->handle) return pt_dl_symbol(obj, name, out);
  return pt_elf_symbol(obj->elf, name, out);
}

static void probe_release(pt_obj* obj) {
  if (obj->handle) dlclose(obj->handle);
  pt_elf_close(obj->elf);
  free(obj);
}

static void probe_accept(pt_res* r, size_t i, pt_obj* obj, const pt_sym* table, int version,
                         const pt_sym* dump) {
  pt_result* pub = &r->pub;
  pub->api_version = version;
  pub->has_dump_hook = dump != NULL;
  pub->reused = obj->reused;
  pub->path = r->cands[i].file;
  char real[PATH_MAX];
  pub->realpath = pt_res_keep(r, realpath(pub->path, real) ? real : pub->path);
  (void)table;
  probe_release(obj);
}

static const pt_backend probe_backend = {probe_open, probe_symbol, probe_accept, probe_release};

int pt_probe(const pt_request* req, pt_host host, pt_result** out) {
  return pt_run(req, host, 1, &probe_backend, out);
}

int pt_probe_env(const pt_request* req, pt_host host, const char* const* envp,
                 pt_result** out) {
  return pt_run_env(req, host, 1, &probe_backend, envp, out);
}
