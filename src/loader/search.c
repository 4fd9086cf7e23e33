/*
 * search.c — where dlopen finds a bare name, emulated for the probe.
 *
 * For a name without '/', glibc searches (ld.so(8)) LD_LIBRARY_PATH, then
 * /etc/ld.so.cache, then the system directories. The callers here (the
 * loader library and the proxytrace CLI) carry no RPATH or RUNPATH, so
 * those steps are empty. Observed glibc 2.36 behaviour this follows:
 *   - a missing file or one that cannot be opened (EACCES) is skipped;
 *   - any other open error (e.g. a symlink loop) ends the search;
 *   - a file of another ELF class or machine is skipped;
 *   - a directory or a non-ELF file with the name ends the search with an
 *     error (so pt_search_library returns it and the caller refuses it).
 * Not emulated: glibc-hwcaps and legacy hwcap subdirectories, $ORIGIN in
 * LD_LIBRARY_PATH, secure-mode rules. A deep probe (pt_load in a child
 * process) has none of these limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* What one directory entry says. */
enum { TRY_NEXT, TRY_FOUND, TRY_STOP };

static int try_file(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == EACCES) return TRY_NEXT;
    return TRY_STOP;
  }
  close(fd);
  pt_elf* e = NULL;
  char reason[256];
  int wrong_arch = 0;
  pt_outcome o = pt_elf_open(path, &e, reason, sizeof reason, &wrong_arch);
  pt_elf_close(e);
  if (o != PT_CAND_OK && wrong_arch) return TRY_NEXT;
  return TRY_FOUND; /* the caller opens it again and reports any fault */
}

static int search_dirs(const char* list, const char* name, char* path, size_t n, int* stop) {
  const char* p = list;
  while (p && !*stop) {
    size_t len = strcspn(p, ":;");
    char dir[PATH_MAX];
    if (len == 0)
      snprintf(dir, sizeof dir, ".");
    else
      snprintf(dir, sizeof dir, "%.*s", (int)len, p);
    snprintf(path, n, "%s/%s", dir, name);
    int t = try_file(path);
    if (t == TRY_FOUND) return 1;
    if (t == TRY_STOP) *stop = 1;
    p = p[len] ? p + len + 1 : NULL;
  }
  return 0;
}

/* /etc/ld.so.cache, "glibc-ld.so.cache1.1" format (glibc 2.32+). */
#define CACHE_MAGIC "glibc-ld.so.cache1.1"
#define CACHE_OLD_MAGIC "ld.so-1.7.0"
#define FLAG_ELF_LIBC6 0x0003

static int cache_flags_ok(int32_t flags) {
#if defined(__x86_64__)
  return flags == (FLAG_ELF_LIBC6 | 0x0300);
#elif defined(__aarch64__)
  return flags == (FLAG_ELF_LIBC6 | 0x0a00);
#else
  return (flags & 0xff) == FLAG_ELF_LIBC6;
#endif
}

static int search_cache(const char* name, char* path, size_t n, int* stop) {
  int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < 48) {
    close(fd);
    return 0;
  }
  size_t size = (size_t)st.st_size;
  const unsigned char* m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return 0;
  size_t base = 0;
  if (memcmp(m, CACHE_OLD_MAGIC, strlen(CACHE_OLD_MAGIC)) == 0 && size >= 16) {
    uint32_t nold;
    memcpy(&nold, m + 12, 4);
    base = 16 + (size_t)nold * 12;
    base = (base + 7) & ~(size_t)7;
  }
  int found = 0;
  if (base + 48 <= size && memcmp(m + base, CACHE_MAGIC, strlen(CACHE_MAGIC)) == 0) {
    uint32_t nlibs;
    memcpy(&nlibs, m + base + 20, 4);
    for (uint32_t i = 0; i < nlibs && !found && !*stop; i++) {
      size_t off = base + 48 + (size_t)i * 24;
      if (off + 24 > size) break;
      int32_t flags;
      uint32_t key, value;
      uint64_t hwcap;
      memcpy(&flags, m + off, 4);
      memcpy(&key, m + off + 4, 4);
      memcpy(&value, m + off + 8, 4);
      memcpy(&hwcap, m + off + 16, 8);
      if (!cache_flags_ok(flags) || hwcap != 0) continue;
      if (base + key >= size || base + value >= size) continue;
      const char* k = (const char*)m + base + key;
      const char* v = (const char*)m + base + value;
      if (!memchr(k, '\0', size - base - key) || !memchr(v, '\0', size - base - value)) continue;
      if (strcmp(k, name) != 0) continue;
      snprintf(path, n, "%s", v);
      int t = try_file(path);
      if (t == TRY_FOUND) found = 1;
      if (t == TRY_STOP) *stop = 1;
    }
  }
  munmap((void*)m, size);
  return found;
}

int pt_search_library(const char* name, const char* ld_library_path, char* path, size_t n) {
  int stop = 0;
  if (ld_library_path && *ld_library_path && search_dirs(ld_library_path, name, path, n, &stop))
    return 1;
  if (!stop && search_cache(name, path, n, &stop)) return 1;
  /* The directories glibc was built with: Debian-style multiarch ones
   * where they exist, else the lib64 ones, then /lib and /usr/lib. */
  const char* system_dirs = "/lib64:/usr/lib64:/lib:/usr/lib";
#if defined(__x86_64__)
  if (access("/lib/x86_64-linux-gnu", F_OK) == 0)
    system_dirs = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib:/usr/lib";
#elif defined(__aarch64__)
  if (access("/lib/aarch64-linux-gnu", F_OK) == 0)
    system_dirs = "/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/lib:/usr/lib";
#endif
  if (!stop && search_dirs(system_dirs, name, path, n, &stop)) return 1;
  return 0;
}
