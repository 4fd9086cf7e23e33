/*
 * open.c — opening a file of a dump folder to read it.
 *
 * Dump folders are shared: anybody who can write one may leave a FIFO, a
 * socket or a link to a device under a dump's or a metrics file's name. A
 * FIFO blocks the open until a writer comes, and a device such as
 * /dev/zero never ends, so only a regular file is read. The judgement is
 * one for every reader (the walk of a folder, the metrics files of `top`
 * and `--follow`), and made on the opened file itself, not on its name
 * (which may change between a look and the open): the open does not wait
 * (O_NONBLOCK), and fstat decides.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/internal.h"

const char* an_not_regular(const struct stat* sb) { return S_ISREG(sb->st_mode) ? NULL : AN_NOT_REGULAR; }

int an_open_regular(const char* path, FILE** out, struct stat* sb) {
  *out = NULL;
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat here;
  if (!sb) sb = &here;
  const int looked = fstat(fd, sb) == 0;
  if (!looked || an_not_regular(sb)) {
    const int e = errno;
    close(fd);
    errno = e;
    return looked ? 1 : -1;
  }
  /* a regular file's reads never wait; the flag goes for what comes after */
  const int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  FILE* f = fdopen(fd, "rb");
  if (!f) {
    const int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  *out = f;
  return 0;
}
