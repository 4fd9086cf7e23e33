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
echo "fuzzing dependencies missing: $missing — installing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "error: need root (or sudo) to install: $missing" >&2
    echo "       run: apt-get install -y $missing" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
# clang itself may have come without its runtime
if [ "$missing" = clang ]; then exec "$0"; fi
