#!/bin/sh
# exports.sh — libproxytrace-loader.so exports exactly the functions its
# header declares (pt_*), carries the SONAME libproxytrace-loader.so.MAJOR,
# and needs nothing beyond the C library (and a sanitizer runtime in
# sanitizer builds). Usage: exports.sh BUILD-DIR
set -eu
B=$1
so=$B/libproxytrace-loader.so
major=$(sed -n 's/^VERSION_MAJOR := //p' Makefile)
fail() { echo "FAIL: $*"; exit 1; }

[ -f "$so" ] || fail "$so is not built"
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}' |
  grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | sort)
declared=$(sed -n 's/^PT_EXTERN [^(]*[ *]\(pt_[a-z_]*\)(.*/\1/p' include/proxytrace/loader.h | sort)
[ -n "$declared" ] || fail "found no PT_EXTERN declarations in loader.h"
if [ "$exported" != "$declared" ]; then
  echo "exported but not declared:"; echo "$exported" | grep -v -x -F "$declared" || true
  echo "declared but not exported:"; echo "$declared" | grep -v -x -F "$exported" || true
  fail "the export list differs from include/proxytrace/loader.h"
fi
echo "exports: $(echo "$exported" | wc -l) pt_* functions, as declared"

readelf -d "$so" | grep -q "SONAME.*\[libproxytrace-loader.so.$major\]" ||
  fail "SONAME is not libproxytrace-loader.so.$major"
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in $needed; do
  case $lib in
    libc.so.*|libdl.so.*|libpthread.so.*|libasan.so.*|libubsan.so.*|libtsan.so.*) ;;
    *) fail "unexpected dependency $lib" ;;
  esac
done
echo "SONAME libproxytrace-loader.so.$major; needs: $(echo $needed)"
