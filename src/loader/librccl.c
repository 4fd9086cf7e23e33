/*
 * librccl.c — where the auto-loaded plugin must be. RCCL with
 * RCCL_ENABLE_PROXY_TRACE set looks for librccl-profiler-proxytrace.so in
 * the directory of the librccl it runs from, which it finds by calling
 * dladdr on one of its own functions (RCCL's ncclProfilerPluginLoad).
 * A loader running inside an RCCL process does the same: it finds the
 * loaded librccl and asks dladdr for its file name. Callers that emulate
 * RCCL (or probe for another process) name the directory or give an
 * address inside their librccl instead.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static void dir_of(const char* file, char* dir, size_t n) {
  const char* slash = strrchr(file, '/');
  if (!slash)
    snprintf(dir, n, ".");
  else if (slash == file)
    snprintf(dir, n, "/");
  else
    snprintf(dir, n, "%.*s", (int)(slash - file), file);
}

typedef struct {
  const void* addr; /* an address inside the first librccl.so* found */
} find_ctx;

static int is_librccl(const char* path) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strncmp(base, "librccl.so", 10) == 0 && (base[10] == '\0' || base[10] == '.');
}

static int find_cb(struct dl_phdr_info* info, size_t size, void* data) {
  find_ctx* ctx = data;
  if (!info->dlpi_name || !is_librccl(info->dlpi_name)) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type == PT_LOAD) {
      ctx->addr = (const void*)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
      return 1;
    }
  }
  return 0;
}

int pt_librccl_dir(const pt_settings* s, char* dir, size_t n, const char** how) {
  if (s->rccl_dir && *s->rccl_dir) {
    snprintf(dir, n, "%s", s->rccl_dir);
    *how = "given";
    return 1;
  }
  const void* anchor = s->rccl_anchor;
  *how = "dladdr of the given address";
  if (!anchor) {
    find_ctx ctx = {NULL};
    dl_iterate_phdr(find_cb, &ctx);
    anchor = ctx.addr;
    *how = "dladdr of the loaded librccl";
  }
  if (!anchor) return 0;
  Dl_info info;
  if (!dladdr(anchor, &info) || !info.dli_fname || !*info.dli_fname) return 0;
  dir_of(info.dli_fname, dir, n);
  return 1;
}
