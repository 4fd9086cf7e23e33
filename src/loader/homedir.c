/*
 * homedir.c — the candidates of one directory under PROXYTRACE_HOME
 * (proxytrace's own search, not a host rule): first <stem>.MAJOR (the
 * SONAME link), then every <stem>.MAJOR.* newest first by numeric version
 * (installs without symlinks, such as wheels, only have these), names that
 * do not parse after those, and the unversioned <stem> last, because a dev
 * link may point at any major. Files of another major are listed as refused
 * so the report shows they were seen and why they were skipped.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

typedef struct {
  char* name;
  unsigned long v[3];
  int nv; /* 0: does not parse */
  unsigned long major;
} entry;

static int cmp_entries(const void* pa, const void* pb) {
  const entry* a = pa;
  const entry* b = pb;
  if (!a->nv != !b->nv) return a->nv ? -1 : 1; /* parsable first */
  if (a->nv) {
    int c = pt_version_cmp_newest_first(a->v, a->nv, b->v, b->nv);
    if (c) return c;
  }
  return strcmp(a->name, b->name);
}

static void add(pt_res* r, const char* dir, const char* name) {
  char path[2 * PATH_MAX + 2];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  pt_res_add(r, path, PT_SRC_HOME, PT_PHASE_HOME);
}

size_t pt_homedir_expand(pt_res* r, const char* dir, const char* stem, int major) {
  DIR* d = opendir(dir);
  if (!d) return 0;
  size_t stem_len = strlen(stem);
  entry* es = NULL;
  size_t n = 0, cap = 0;
  int have_exact = 0, have_plain = 0;
  char exact[64];
  snprintf(exact, sizeof exact, "%d", major);
  struct dirent* de;
  while ((de = readdir(d)) != NULL) {
    const char* nm = de->d_name;
    if (strncmp(nm, stem, stem_len) != 0) continue;
    if (nm[stem_len] == '\0') {
      have_plain = 1;
      continue;
    }
    if (nm[stem_len] != '.') continue;
    const char* ver = nm + stem_len + 1;
    if (!strcmp(ver, exact)) {
      have_exact = 1;
      continue;
    }
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, nm);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      entry* q = realloc(es, cap * sizeof *es);
      if (!q) {
        r->nomem = 1;
        break;
      }
      es = q;
    }
    entry* e = &es[n];
    memset(e, 0, sizeof *e);
    e->name = strdup(nm);
    if (!e->name) {
      r->nomem = 1;
      break;
    }
    /* The major is the first component; the rest may fail to parse. */
    char* end;
    e->major = strtoul(ver, &end, 10);
    if (end == ver) e->major = (unsigned long)-1;
    e->nv = pt_version_parse(ver, e->v);
    n++;
  }
  closedir(d);
  if (n > 1) qsort(es, n, sizeof *es, cmp_entries);

  size_t added = 0;
  if (have_exact) {
    char nm[PATH_MAX];
    snprintf(nm, sizeof nm, "%s.%d", stem, major);
    add(r, dir, nm);
    added++;
  }
  /* Same major first (tried), then other majors (listed as refused). */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < n; i++) {
      int same = es[i].major == (unsigned long)major;
      if (same != (pass == 0)) continue;
      add(r, dir, es[i].name);
      added++;
      if (!same && r->pub.n_candidates) {
        size_t k = r->pub.n_candidates - 1;
        r->priv[k].preset = 1;
        if (es[i].major == (unsigned long)-1)
          pt_res_refuse(r, k, PT_CAND_WRONG_MAJOR, "no major version in the name; need %s.%d*",
                        stem, major);
        else
          pt_res_refuse(r, k, PT_CAND_WRONG_MAJOR, "major %lu in the file name, need %d",
                        es[i].major, major);
      }
    }
  }
  if (have_plain) {
    add(r, dir, stem);
    added++;
  }
  for (size_t i = 0; i < n; i++) free(es[i].name);
  free(es);
  return added;
}
