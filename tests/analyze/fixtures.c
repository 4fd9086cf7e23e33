/*
 * fixtures.c — see fixtures.h.
 */
#include "fixtures.h"

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char* at_mkdtemp(void) {
  const char* t = getenv("TMPDIR");
  char* dir = malloc(4096);
  if (!dir) return NULL;
  snprintf(dir, 4096, "%s/pt-analyze-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(dir)) {
    free(dir);
    return NULL;
  }
  return dir;
}

static int rm_entry(const char* path, const struct stat* sb, int flag, struct FTW* ftw) {
  (void)sb;
  (void)ftw;
  return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void at_rmdir(char* dir) {
  if (!dir) return;
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); /* links are removed, not followed */
  free(dir);
}

const char* at_write(const char* dir, const char* name, const char* text) {
  static char buf[8][4608];
  static int next;
  char* p = buf[next++ % 8];
  snprintf(p, sizeof buf[0], "%s/%s", dir, name);
  FILE* f = fopen(p, "w");
  if (!f) return NULL;
  fputs(text, f);
  fclose(f);
  return p;
}

pt_analysis* at_analyze_text(const char* name, const char* text) {
  pt_analysis* a;
  if (pt_analysis_new(&a) != 0) return NULL;
  if (pt_analysis_add_buffer(a, name, text, strlen(text)) != 0 || pt_analysis_run(a) != 0) {
    pt_analysis_free(a);
    return NULL;
  }
  return a;
}

pt_analysis* at_analyze_path(const char* path) {
  pt_analysis* a;
  if (pt_analysis_new(&a) != 0) return NULL;
  if (pt_analysis_add_path(a, path) != 0 || pt_analysis_run(a) != 0) {
    pt_analysis_free(a);
    return NULL;
  }
  return a;
}

const pt_culprit* at_culprit(const pt_analysis* a) { return pt_analysis_culprit(a, 0); }

char* at_json(const pt_analysis* a) { return pt_analysis_json(a); }
