/*
 * open.c — the loading backend: pt_load() opens each candidate with
 * dlopen(RTLD_NOW | RTLD_LOCAL) as NCCL and RCCL do, so a library with an
 * undefined symbol fails here and not at its first call. A copy
 * already in the process is reused (RTLD_NOLOAD first, which is also what
 * glibc would return), never loaded twice. dlerror() text is copied at
 * once (it is per thread and overwritten by the next call) and classified
 * the way NCCL's plugin_open.cc does: "No such file or directory" means
 * not found, anything else is a real error worth showing.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define DL_MODE (RTLD_NOW | RTLD_LOCAL)

static pt_outcome classify_dlerror(const char* msg) {
  if (strstr(msg, "No such file or directory")) return PT_CAND_NOT_FOUND;
  if (strstr(msg, "Permission denied")) return PT_CAND_UNREADABLE;
  if (strstr(msg, "invalid ELF header") || strstr(msg, "file too short")) return PT_CAND_NOT_ELF;
  if (strstr(msg, "File name too long")) return PT_CAND_TOO_LONG;
  return PT_CAND_LOAD_ERROR;
}

void pt_dl_file(void* handle, int is_main, char* out, size_t n) {
  out[0] = '\0';
  if (is_main) {
    ssize_t k = readlink("/proc/self/exe", out, n - 1);
    out[k > 0 ? k : 0] = '\0';
    return;
  }
  struct link_map* lm = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
    snprintf(out, n, "%s", lm->l_name);
}

pt_outcome pt_dl_open(pt_res* r, size_t i, pt_obj** out, int noload_only) {
  const char* name = r->cands[i].name;
  int is_main = !*name;
  void* h;
  int reused = 1;
  dlerror();
  if (is_main) {
    h = dlopen(NULL, DL_MODE);
  } else {
    h = dlopen(name, DL_MODE | RTLD_NOLOAD);
    if (!h && !noload_only) {
      reused = 0;
      dlerror();
      h = dlopen(name, DL_MODE);
    }
  }
  if (!h) {
    if (noload_only) return PT_CAND_NOT_FOUND; /* not loaded: the caller looks at the file */
    const char* e = dlerror(); /* whole: a long name must not push the reason out */
    const char* msg = pt_res_keep(r, e ? e : "unknown dynamic loader error");
    pt_outcome o = classify_dlerror(msg);
    pt_res_refuse(r, i, o, "%s", msg);
    return o;
  }
  pt_obj* obj = calloc(1, sizeof *obj);
  if (!obj) {
    dlclose(h);
    r->nomem = 1;
    pt_res_refuse(r, i, PT_CAND_LOAD_ERROR, "out of memory");
    return PT_CAND_LOAD_ERROR;
  }
  obj->handle = h;
  obj->reused = reused;
  char file[PATH_MAX];
  pt_dl_file(h, is_main, file, sizeof file);
  r->cands[i].file = pt_res_keep(r, file);
  *out = obj;
  return PT_CAND_OK;
}

int pt_dl_symbol(pt_obj* obj, const char* name, pt_sym* out) {
  memset(out, 0, sizeof *out);
  dlerror();
  void* p = dlsym(obj->handle, name);
  (void)dlerror(); /* NULL without an error would be a NULL symbol: absent too */
  if (!p) return 0;
  out->found = 1;
  out->addr = p;
  Dl_info info;
  const ElfW(Sym)* sym = NULL;
  if (dladdr1(p, &info, (void**)&sym, RTLD_DL_SYMENT) && sym && info.dli_saddr == p) {
    out->size = sym->st_size;
    out->is_object = ELF64_ST_TYPE(sym->st_info) == STT_OBJECT;
  }
  if (out->is_object) {
    size_t len = out->size < PT_TABLE_SLOTS * sizeof(void*) ? out->size
                                                           : PT_TABLE_SLOTS * sizeof(void*);
    for (size_t k = 0; k < len / sizeof(void*); k++) {
      void* slot;
      memcpy(&slot, (const char*)p + k * sizeof(void*), sizeof slot);
      if (slot) out->nonnull |= 1u << k;
    }
  }
  return 1;
}

static pt_outcome load_open(pt_res* r, size_t i, pt_obj** obj) { return pt_dl_open(r, i, obj, 0); }

static void load_accept(pt_res* r, size_t i, pt_obj* obj, const pt_sym* table, int version,
                        const pt_sym* dump) {
  pt_result* pub = &r->pub;
  pub->handle = obj->handle;
  pub->api_version = version;
  pub->table = table->addr;
  pub->has_dump_hook = dump != NULL;
  if (dump) memcpy(&pub->dump_hook, &dump->addr, sizeof pub->dump_hook);
  pub->reused = obj->reused;
  pub->path = r->cands[i].file;
  char real[PATH_MAX];
  pub->realpath = pt_res_keep(r, realpath(pub->path, real) ? real : pub->path);
  const char* name;
  memcpy(&name, table->addr, sizeof name);
  pub->plugin_name = pt_res_keepf(r, "%.255s", name ? name : "");
  free(obj);
}

static void load_release(pt_obj* obj) {
  dlclose(obj->handle);
  free(obj);
}

static const pt_backend load_backend = {load_open, pt_dl_symbol, load_accept, load_release};

int pt_load(const pt_request* req, pt_host host, pt_result** out) {
  return pt_run(req, host, 0, &load_backend, out);
}
