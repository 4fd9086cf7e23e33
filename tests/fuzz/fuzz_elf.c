/*
 * fuzz_elf.c — libFuzzer target: the loader's ELF reader (src/loader/elf.c)
 * on arbitrary file contents. It reads files a user points the probe at, so
 * every offset, size and count in the file is hostile.
 *
 * The input becomes a file (a memfd, opened by its /proc path as the probe
 * opens plugins) and goes through pt_elf_open, pt_elf_soname and
 * pt_elf_symbol for every name the loader looks up. Checks, besides no crash
 * or sanitizer report: a SONAME is a NUL-terminated string inside the file;
 * a symbol the reader reports as a table has at most PT_TABLE_SLOTS slots
 * marked; a file shorter than an ELF header is never accepted.
 */
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "loader/internal.h"

static const char* const names[] = {"ncclProfiler_v1", "ncclProfiler_v2", "ncclProfiler_v3",
                                    "ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6",
                                    "ncclProfilerProxyTraceDump", ""};

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (size && write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  pt_elf* e = NULL;
  char reason[512];
  int wrong_arch = -1;
  pt_outcome o = pt_elf_open(path, &e, reason, sizeof reason, &wrong_arch);
  CHECK(wrong_arch == 0 || wrong_arch == 1);
  if (o != PT_CAND_OK) {
    CHECK(e == NULL);
    CHECK(memchr(reason, '\0', sizeof reason) && reason[0]);
  } else {
    CHECK(e != NULL);
    CHECK(size >= sizeof(ElfW(Ehdr)));
    const char* so = pt_elf_soname(e);
    if (so) {
      /* inside the mapping of the file: compare with the input bytes */
      size_t len = strnlen(so, size);
      CHECK(len < size);
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      pt_sym s;
      int found = pt_elf_symbol(e, names[i], &s);
      CHECK(found == s.found);
      if (found && s.is_object) CHECK((s.nonnull >> PT_TABLE_SLOTS) == 0);
    }
    pt_elf_close(e);
  }
  close(fd);
  return 0;
}
