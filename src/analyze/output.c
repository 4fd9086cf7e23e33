/*
 * output.c — report files written beside the dumps (`--chrome`): never
 * over an input, never half written.
 *
 * The dumps are the evidence of a hang; an output path that names one of
 * the files read (by any name: the same device and inode) is refused
 * before anything is written. The report goes to a temporary file in the
 * target's directory, which is renamed over the target only once it is
 * whole, so a full disk or a failed write leaves the old file (or none)
 * rather than a cut one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/internal.h"

/* 1 when `path` is one of the files the analysis read. */
static int is_input(const pt_analysis* a, const char* path) {
  struct stat sb;
  if (stat(path, &sb) != 0) return 0;
  for (size_t i = 0; i < a->n_inputs; i++)
    if (a->inputs[i].has_id && a->inputs[i].dev == (uint64_t)sb.st_dev && a->inputs[i].ino == (uint64_t)sb.st_ino)
      return 1;
  return 0;
}

int an_write_output(const pt_analysis* a, const char* path, int (*write)(const pt_analysis*, FILE*)) {
  if (!a || !path || !path[0]) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  if (is_input(a, path)) return PT_AN_EINPUT;
  const size_t n = strlen(path) + sizeof ".tmp-XXXXXX";
  char* tmp = malloc(n);
  if (!tmp) return PT_AN_ENOMEM;
  snprintf(tmp, n, "%s.tmp-XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    errno = e;
    return PT_AN_EIO;
  }
  (void)fchmod(fd, 0644); /* what a plain fopen would give under the usual umask */
  FILE* f = fdopen(fd, "w");
  int rc = f ? write(a, f) : PT_AN_EIO;
  int e = errno;
  if (f && fclose(f) != 0 && rc == 0) {
    rc = PT_AN_EIO;
    e = errno;
  }
  if (!f) close(fd);
  if (rc == 0 && rename(tmp, path) != 0) {
    rc = PT_AN_EIO;
    e = errno;
  }
  if (rc != 0) unlink(tmp);
  /* A FILE that could not get its buffer (fdopen, the first write) is
   * memory, not the disk: the caller says "out of memory". */
  if (rc == PT_AN_EIO && e == ENOMEM) rc = PT_AN_ENOMEM;
  free(tmp);
  errno = e;
  return rc;
}

int pt_analysis_write_chrome_path(const pt_analysis* a, const char* path) {
  return an_write_output(a, path, pt_analysis_write_chrome);
}
