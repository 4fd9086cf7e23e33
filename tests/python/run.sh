#!/bin/sh
# run.sh — the Python package's tests (tests/python/test_*.py, unittest)
# against this build folder, with Debian's python3 (/usr/bin/python3, or
# $PYTHON). In a sanitizer build the loader library needs its sanitizer
# runtime loaded first, so the interpreter starts with it in LD_PRELOAD
# (leak checking off: the interpreter keeps its memory until exit).
# Prints cmocka's summary lines so that scripts/run-tests.sh counts every
# test. Usage: run.sh BUILD-DIR
set -u
B=$(cd "$1" && pwd)
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
LIB=$B/libproxytrace-loader.so
[ -f "$LIB" ] || { echo "run.sh: $LIB is not built"; exit 1; }
case $B in
  *build-address) PT_SAN=address ;;
  *build-thread) PT_SAN=thread ;;
  *) PT_SAN= ;;
esac
if [ -n "$PT_SAN" ]; then
  rt=$(ldd "$LIB" | awk '/lib(asan|ubsan|tsan)\.so/ {print $3}' | tr '\n' ' ')
  [ -n "$rt" ] || { echo "run.sh: no sanitizer runtime among the libraries $LIB needs"; exit 1; }
  LD_PRELOAD="$rt${LD_PRELOAD:+ $LD_PRELOAD}"
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  export LD_PRELOAD ASAN_OPTIONS
fi
PT_BUILD=$B PT_SAN=$PT_SAN PT_PYTHON=$PY PROXYTRACE_LOADER_LIBRARY=$LIB PROXYTRACE_CLI=$B/proxytrace \
  PYTHONPATH=python${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 \
  exec "$PY" tests/python/runner.py
