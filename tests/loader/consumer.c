/*
 * consumer.c — a program built against an installed proxytrace (headers,
 * library and pkg-config file only), used by install.sh. It loads the
 * profiler plugin the way the environment asks, for the host named by its
 * first argument; a second argument is a library to load first (a librccl
 * the RCCL auto-load can find). Prints "api=N dump=0|1 path=FILE" and exits
 * 0 when a plugin was loaded, else prints the report and exits 1.
 */
#include <dlfcn.h>
#include <stdio.h>

#include <proxytrace/loader.h>
#include <proxytrace/nccl/profiler_v6.h>

int main(int argc, char** argv) {
  pt_host host;
  if (argc < 2 || pt_host_parse(argv[1], &host) != PT_OK) {
    fprintf(stderr, "usage: consumer HOST [LIBRARY-TO-LOAD-FIRST]\n");
    return 2;
  }
  if (argc > 2 && !dlopen(argv[2], RTLD_NOW | RTLD_LOCAL)) {
    fprintf(stderr, "consumer: %s\n", dlerror());
    return 2;
  }
  pt_request req;
  pt_request_init(&req);
  pt_request_from_environment(&req);
  pt_loader* loader;
  const pt_result* res;
  if (pt_loader_new(&loader) != PT_OK) return 2;
  int rc = pt_loader_load(loader, &req, host, &res);
  if (rc != PT_OK) {
    pt_result_print(res, stderr);
    pt_loader_free(loader);
    return 1;
  }
  const ncclProfiler_v6_t* t = res->api_version == 6 ? res->table : NULL;
  printf("api=%d dump=%d path=%s name=%s\n", res->api_version, res->dump_hook != NULL,
         res->path, t && t->name ? t->name : "?");
  pt_loader_free(loader);
  return 0;
}
