/*
 * job_host.c — which NCCL or RCCL a job started here would load, found as
 * the job would find it: the torch of the job's Python, when it imports
 * (torch.cuda.nccl.version(); a ROCm build's RCCL, beside torch's lib/),
 * else libnccl.so.2 / librccl.so.1 as the dynamic linker finds them
 * (ncclGetVersion). One finding for both commands that need it: `proxytrace
 * doctor` checks the plugin against it, and `proxytrace probe` answers for
 * it when no --host is given.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_host.h"

/* torch: prints "nccl <version> <libdir>" or "rccl <torch version> <libdir>". */
static const char torch_snippet[] =
    "import os,sys\n"
    "try:\n"
    " import torch\n"
    "except Exception:\n"
    " sys.exit(3)\n"
    "d=os.path.join(os.path.dirname(torch.__file__),'lib')\n"
    "if getattr(getattr(torch,'version',None),'hip',None):\n"
    " print('rccl',torch.__version__,d);sys.exit(0)\n"
    "try:\n"
    " v=torch.cuda.nccl.version()\n"
    "except Exception:\n"
    " sys.exit(4)\n"
    "if isinstance(v,int): v=(v//1000,v%1000//100,v%100) if v<20900 else (v//10000,v%10000//100,v%100)\n"
    "print('nccl','.'.join(str(x) for x in v[:3]),torch.__version__)\n";

static int from_torch(const char* python, pt_job_host* h) {
  /* The snippet goes through a file: no quoting of it for the shell. */
  char script[] = "/tmp/proxytrace-host-XXXXXX";
  int fd = mkstemp(script);
  if (fd < 0) return -1;
  FILE* sf = fdopen(fd, "w");
  if (!sf) {
    close(fd);
    unlink(script);
    return -1;
  }
  fputs(torch_snippet, sf);
  fclose(sf);
  char cmd[8192];
  /* python is the user's (an option): single-quoted, a quote inside escaped. */
  size_t n = 0;
  cmd[n++] = '\'';
  for (const char* p = python; *p && n + 8 < sizeof cmd / 2; p++) {
    if (*p == '\'') {
      memcpy(cmd + n, "'\\''", 4);
      n += 4;
    } else {
      cmd[n++] = *p;
    }
  }
  snprintf(cmd + n, sizeof cmd - n, "' '%s' 2>/dev/null", script);
  FILE* p = popen(cmd, "r");
  char line[1024] = "";
  int rc = -1;
  if (p) {
    if (!fgets(line, sizeof line, p)) line[0] = 0;
    rc = pclose(p);
  }
  unlink(script);
  char kind[8], ver[64], extra[900];
  if (rc != 0 || sscanf(line, "%7s %63s %899s", kind, ver, extra) != 3) return -1;
  if (!strcmp(kind, "rccl")) {
    snprintf(h->profile, sizeof h->profile, "rccl");
    snprintf(h->what, sizeof h->what, "RCCL of torch %s (ROCm build)", ver);
    snprintf(h->rccl_dir, sizeof h->rccl_dir, "%s", extra);
  } else {
    snprintf(h->profile, sizeof h->profile, "%s", ver);
    snprintf(h->what, sizeof h->what, "NCCL %s bundled with torch %s", ver, extra);
  }
  return 0;
}

/* libnccl.so.2 / librccl.so.1 as the dynamic linker finds them. */
static int from_search_path(pt_job_host* h) {
  static const char* const libs[] = {"libnccl.so.2", "libnccl.so", "librccl.so.1", "librccl.so"};
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    void* lib = dlopen(libs[i], RTLD_LAZY | RTLD_LOCAL);
    if (!lib) continue;
    int (*get)(int*) = (int (*)(int*))dlsym(lib, "ncclGetVersion");
    int v = 0;
    char file[4096] = "?";
    Dl_info info;
    if (get && dladdr((void*)get, &info) && info.dli_fname) snprintf(file, sizeof file, "%s", info.dli_fname);
    if (!get || get(&v) != 0 || v <= 0) {
      dlclose(lib);
      continue;
    }
    int rccl = !strncmp(libs[i], "librccl", 7);
    int major = v >= 20900 ? v / 10000 : v / 1000, minor = v >= 20900 ? v % 10000 / 100 : v % 1000 / 100;
    int patch = v % 100;
    if (rccl) {
      snprintf(h->profile, sizeof h->profile, "rccl");
      snprintf(h->what, sizeof h->what, "RCCL %d.%d.%d (%s, from the search path)", major, minor, patch, file);
      snprintf(h->rccl_dir, sizeof h->rccl_dir, "%s", file);
      char* slash = strrchr(h->rccl_dir, '/');
      if (slash) *slash = 0;
    } else {
      snprintf(h->profile, sizeof h->profile, "%d.%d.%d", major, minor, patch);
      snprintf(h->what, sizeof h->what, "NCCL %d.%d.%d (%s, from the search path)", major, minor, patch, file);
    }
    dlclose(lib);
    return 0;
  }
  return -1;
}

int pt_job_host_find(const char* python, pt_job_host* h) {
  memset(h, 0, sizeof *h);
  if (python && from_torch(python, h) == 0) return 0;
  memset(h, 0, sizeof *h);
  return from_search_path(h);
}

void pt_job_host_none(char* b, size_t n, const char* python) {
  snprintf(b, n, "no torch with NCCL/RCCL%s%s, no libnccl.so.2 or librccl.so.1 on the search path",
           python ? " for " : "", python ? python : "");
}
