/*
 * output.c — report files written beside the dumps (`--chrome`, `--html`,
 * `--summary`): never over an input, never half written, and into what
 * the name is.
 *
 * The dumps are the evidence of a hang; an output path that names one of
 * the files read (by any name: the same device and inode) is refused
 * before anything is written. A regular file (or a name not there yet)
 * gets the report through a temporary file in its directory, renamed over
 * it only once whole, so a full disk or a failed write leaves the old file
 * (or none) rather than a cut one. A name that is something else is
 * written as `cp` or a shell redirect would: a link is followed to its
 * target (which gets the temporary file and the rename, or is made where
 * the link points; the link stays a link), a device or a FIFO is written
 * into (`--chrome /dev/null` leaves /dev/null the device it is), and a
 * directory is an error (EISDIR).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/render.h"

/* 1 when `path` is one of the files the analysis read. */
static int is_input(const pt_analysis* a, const char* path) {
  struct stat sb;
  if (stat(path, &sb) != 0) return 0;
  for (size_t i = 0; i < a->n_inputs; i++)
    if (a->inputs[i].has_id && a->inputs[i].dev == (uint64_t)sb.st_dev && a->inputs[i].ino == (uint64_t)sb.st_ino)
      return 1;
  return 0;
}

/* The report through fd, which this closes: 0 or PT_AN_EIO, the errno of
 * the failure in *e. */
static int write_fd(const pt_analysis* a, int fd, int (*write)(const pt_analysis*, FILE*), int* e) {
  FILE* f = fdopen(fd, "w");
  int rc = f ? write(a, f) : PT_AN_EIO;
  *e = errno;
  if (f && fclose(f) != 0 && rc == 0) {
    rc = PT_AN_EIO;
    *e = errno;
  }
  if (!f) close(fd);
  return rc;
}

/* The report into what is not a regular file (a device, a FIFO): opened
 * for writing as it is, no temporary file, no rename. */
static int write_into(const pt_analysis* a, const char* path, int (*write)(const pt_analysis*, FILE*)) {
  const int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return PT_AN_EIO;
  int e;
  int rc = write_fd(a, fd, write, &e);
  if (rc == PT_AN_EIO && e == ENOMEM) rc = PT_AN_ENOMEM;
  errno = e;
  return rc;
}

/* The report into a regular file (or a name not there yet): a temporary
 * file beside it, renamed over it once whole. */
static int write_replacing(const pt_analysis* a, const char* path, int (*write)(const pt_analysis*, FILE*)) {
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
  int e;
  int rc = write_fd(a, fd, write, &e);
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

/* The link at `path`'s target, as a path (relative targets taken from the
 * link's folder), malloc'd; NULL with errno. */
static char* link_target(const char* path) {
  char t[PATH_MAX];
  const ssize_t n = readlink(path, t, sizeof t - 1);
  if (n < 0) return NULL;
  t[n] = 0;
  const char* slash = strrchr(path, '/');
  const int dir = t[0] == '/' || !slash ? 0 : (int)(slash - path) + 1;
  char* out = malloc((size_t)dir + (size_t)n + 1);
  if (!out) return NULL;
  memcpy(out, path, (size_t)dir);
  memcpy(out + dir, t, (size_t)n + 1);
  return out;
}

/* As a shell redirect: a link's target (followed link by link, at most
 * 40 as the kernel does), a device or FIFO written into, a directory an
 * error, a regular file or a name not there yet replaced whole. */
static int write_at(const pt_analysis* a, const char* path, int (*write)(const pt_analysis*, FILE*), int links) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return errno == ENOENT ? write_replacing(a, path, write) : PT_AN_EIO;
  if (S_ISLNK(sb.st_mode)) {
    if (links >= 40) return (errno = ELOOP, PT_AN_EIO);
    char* target = link_target(path);
    if (!target) return errno == ENOMEM ? PT_AN_ENOMEM : PT_AN_EIO;
    const int rc = write_at(a, target, write, links + 1);
    const int e = errno;
    free(target);
    errno = e;
    return rc;
  }
  if (S_ISDIR(sb.st_mode)) return (errno = EISDIR, PT_AN_EIO);
  return S_ISREG(sb.st_mode) ? write_replacing(a, path, write) : write_into(a, path, write);
}

int an_write_output(const pt_analysis* a, const char* path, int (*write)(const pt_analysis*, FILE*)) {
  if (!a || !path || !path[0]) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  if (is_input(a, path)) return PT_AN_EINPUT;
  return write_at(a, path, write, 0);
}

int pt_analysis_write_chrome_path(const pt_analysis* a, const char* path) {
  return an_write_output(a, path, pt_analysis_write_chrome);
}
