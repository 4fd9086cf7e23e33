/*
 * version.c — versions: this library's own, and the version suffixes of
 * shared-object file names ("libx.so.1", "libx.so.1.10.2") compared as
 * numbers, component by component. String order puts 1.9 after 1.10 and
 * picks the older library; this is the one place that decides which of two
 * versioned files is newer.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

/* PT_VERSION_MAJOR/MINOR/PATCH come from the Makefile. */
#define PT_STR_(x) #x
#define PT_STR(x) PT_STR_(x)

const char* pt_version(void) {
  return PT_STR(PT_VERSION_MAJOR) "." PT_STR(PT_VERSION_MINOR) "." PT_STR(PT_VERSION_PATCH);
}

int pt_version_parse(const char* text, unsigned long v[3]) {
  int n = 0;
  const char* p = text;
  if (!p || !*p) return 0;
  for (;;) {
    if (!isdigit((unsigned char)*p) || n == 3) return 0;
    char* end;
    errno = 0;
    unsigned long x = strtoul(p, &end, 10);
    if (errno) return 0;
    v[n++] = x;
    if (*end == '\0') break;
    if (*end != '.') return 0;
    p = end + 1;
  }
  for (int i = n; i < 3; i++) v[i] = 0;
  return n;
}

int pt_version_cmp_newest_first(const unsigned long a[3], int na, const unsigned long b[3],
                                int nb) {
  int n = na < nb ? na : nb;
  for (int i = 0; i < n; i++) {
    if (a[i] != b[i]) return a[i] > b[i] ? -1 : 1;
  }
  /* 1.2.0 is newer than 1.2: more components, same prefix. */
  if (na != nb) return na > nb ? -1 : 1;
  return 0;
}
