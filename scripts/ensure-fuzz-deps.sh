#!/bin/sh
# Installs what `make fuzz` needs when it is missing (Debian): clang and its
# libFuzzer runtime (libclang-rt-N-dev, which clang only recommends).
# Idempotent and quiet when everything is already there.
set -e
CC=${FUZZ_CC:-clang}
missing=""
command -v "$CC" >/dev/null 2>&1 || missing="clang"
if [ -z "$missing" ]; then
  rt=$("$CC" -print-file-name="libclang_rt.fuzzer-$(uname -m).a")
  [ -f "$rt" ] || missing="libclang-rt-$("$CC" -dumpversion | cut -d. -f1)-dev"
fi
[ -z "$missing" ] && exit 0
"$(dirname "$0")/apt-install.sh" "fuzzing dependencies" $missing
# clang itself may have come without its runtime
if [ "$missing" = clang ]; then exec "$0"; fi
