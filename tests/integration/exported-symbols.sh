#!/bin/sh
# The plugin exports its ABI symbols, and the emulator's table
# (proxytraceEmulator_v1 and _v2, include/proxytrace/emulator.h), and nothing else (-fvisibility=hidden):
# a stray export could bind to a host symbol of the same name.
set -eu
B=${1:-build}
so="$B/librccl-profiler-proxytrace.so"
got=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^__\(odr_asan\|asan\|tsan\|ubsan\|sanitizer\)' | sort | tr '\n' ' ')
want="ncclProfilerProxyTraceDump ncclProfiler_v1 ncclProfiler_v2 ncclProfiler_v3 ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 ncclProfiler_v7 proxytraceEmulator_v1 proxytraceEmulator_v2 "
if [ "$got" != "$want" ]; then
  echo "exported symbols of $so: '$got', want '$want'" >&2
  exit 1
fi
# Sanitizer builds add their own symbols; those are not ours.
# Only libc, libpthread and libdl may be needed.
deps=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
for d in $deps; do
  case "$d" in
    libc.so.*|libpthread.so.*|libdl.so.*|ld-linux*|libasan.so.*|libubsan.so.*|libtsan.so.*) ;;
    *) echo "unexpected dependency $d of $so" >&2; exit 1 ;;
  esac
done
echo "exported: $got; needs: $deps"
