#!/bin/sh
# doctor.sh — `proxytrace doctor` in the environments a job has: torch with
# its own NCCL (a stand-in torch package on PYTHONPATH), torch built for
# ROCm (RCCL's auto-load beside torch's lib/), a libnccl.so.2 found on
# LD_LIBRARY_PATH, no NCCL at all; the plugin loading or not; dump folders
# missing, not writable, node-local; a misspelt PROXYTRACE_* name; values
# the plugin rejects (judged by its own reading of them); control bytes and
# invalid UTF-8 from the environment and --host, escaped; NCCL_DEBUG
# for RCCL; `python3 -m proxytrace doctor` asking its own interpreter; and
# `proxytrace probe`'s default host, the one doctor finds.
# Each FAIL line must carry a fix; the exit status is 1 exactly when a check
# failed. Usage: doctor.sh BUILD-DIR
set -u
B=$1
PT=$B/proxytrace
RUN=${PROXYTRACE_EMULATOR:-}
PLUGIN=$(cd "$B" && pwd)/librccl-profiler-proxytrace.so
T=$(mktemp -d)
trap 'chmod -R u+w "$T"; rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# doc CODE WHAT -- ENV... : runs doctor $DARGS under env -i with ENV, checks
# the exit status, and that every FAIL line has a fix.
DARGS=
doc() {
  want=$1; what=$2; shift 3
  # shellcheck disable=SC2086
  env -i PATH="$PATH" "$@" $RUN "$PT" doctor $DARGS >"$T/out" 2>"$T/err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$what: exit $got, want $want"; sed 's/^/    /' "$T/out" "$T/err"
  elif [ "$got" -eq 1 ] && ! grep -q '^FAIL' "$T/out"; then
    fail "$what: exit 1 (a check failed) without a FAIL line"; sed 's/^/    /' "$T/out"
  elif grep '^FAIL' "$T/out" | grep -v -q 'fix:'; then
    fail "$what: a FAIL line without a fix"; sed 's/^/    /' "$T/out"
  else
    echo "ok   $what (exit $got)"
  fi
}
has() { # has PATTERN WHAT
  if grep -q -- "$1" "$T/out"; then echo "ok   $2"; else fail "$2: no '$1' in"; sed 's/^/    /' "$T/out"; fi
}

mkdir -p "$T/dumps" "$T/py/torch/lib" "$T/rocm/torch/lib" "$T/lib"
# torch with its own NCCL: what torch.cuda.nccl.version() answers.
cat >"$T/py/torch/__init__.py" <<'PY'
__version__ = "2.6.0+cu124"
class version: hip = None
class cuda:
    class nccl:
        @staticmethod
        def version(): return (2, 28, 9)
PY
cat >"$T/rocm/torch/__init__.py" <<'PY'
__version__ = "2.6.0+rocm6.2"
class version: hip = "6.2.41133"
PY
cp "$PLUGIN" "$T/rocm/torch/lib/librccl-profiler-proxytrace.so"

doc 0 "torch's NCCL, plugin by path, shared-or-local dump dir" -- PYTHONPATH="$T/py" \
  NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/dumps"
has '^ok   host .*NCCL 2.28.9 bundled with torch 2.6.0+cu124' "the host is torch's NCCL"
has "^ok   plugin .*nccl-2.28 loads .*librccl-profiler-proxytrace.so (ncclProfiler_v" "the plugin and its API"
has "^\(ok  \|warn\) dump dir .*PROXYTRACE_DUMP_DIR=$T/dumps: writable" "the dump folder is writable"
has "^ok   variables  PROXYTRACE_DUMP_DIR=$T/dumps" "every PROXYTRACE_* value is shown"
has '^ok   log level .*not needed' "NVIDIA needs no NCCL_DEBUG with a dump folder"
has '^.... clock ' "the clock is checked"
has '^doctor: ready' "the last line says ready"

doc 1 "torch's NCCL, no plugin set" -- PYTHONPATH="$T/py" PROXYTRACE_DUMP_DIR="$T/dumps"
has '^FAIL plugin .*fix: export NCCL_PROFILER_PLUGIN=' "the fix names NCCL_PROFILER_PLUGIN"

# torch too old for profiler plugins
sed 's/(2, 28, 9)/(2, 21, 5)/' "$T/py/torch/__init__.py" >"$T/init" && mkdir -p "$T/old/torch" &&
  mv "$T/init" "$T/old/torch/__init__.py"
doc 1 "torch with NCCL 2.21" -- PYTHONPATH="$T/old" NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/dumps"
has '^FAIL plugin .*NCCL 2.21.5 bundled with torch.*loads no profiler plugin' "2.21 loads no profiler"

# ROCm torch: RCCL's auto-load finds the plugin beside torch's lib/.
doc 1 "ROCm torch, NCCL_DEBUG unset" -- PYTHONPATH="$T/rocm" RCCL_ENABLE_PROXY_TRACE=1 PROXYTRACE_DUMP_DIR="$T/dumps"
has '^ok   host .*RCCL of torch 2.6.0+rocm6.2' "the host is torch's RCCL"
has "^ok   plugin .*rccl loads $T/rocm/torch/lib/librccl-profiler-proxytrace.so" "auto-load beside torch/lib"
has '^FAIL log level .*fix: export NCCL_DEBUG=WARN' "RCCL needs NCCL_DEBUG=WARN"
doc 0 "ROCm torch, NCCL_DEBUG=WARN" -- PYTHONPATH="$T/rocm" RCCL_ENABLE_PROXY_TRACE=1 NCCL_DEBUG=WARN \
  PROXYTRACE_DUMP_DIR="$T/dumps"
doc 1 "ROCm torch, RCCL_ENABLE_PROXY_TRACE unset" -- PYTHONPATH="$T/rocm" NCCL_DEBUG=WARN PROXYTRACE_DUMP_DIR="$T/dumps"
has '^FAIL plugin .*fix: export RCCL_ENABLE_PROXY_TRACE=1' "the fix names RCCL_ENABLE_PROXY_TRACE"

# No torch: libnccl.so.2 on LD_LIBRARY_PATH (a stand-in answering ncclGetVersion 22800).
FAKE=$B/tests/loader/plugins/fakerccl.so
if [ -f "$FAKE" ]; then
  cp "$FAKE" "$T/lib/libnccl.so.2"
  doc 0 "libnccl.so.2 on LD_LIBRARY_PATH" -- LD_LIBRARY_PATH="$T/lib" NCCL_PROFILER_PLUGIN="$PLUGIN" \
    PROXYTRACE_DUMP_DIR="$T/dumps"
  has "^ok   host .*NCCL 2.28.0 ($T/lib/libnccl.so.2, from the search path)" "the search path's NCCL and its version"
else
  fail "$FAKE is not built (make test builds it)"
fi

# `proxytrace probe` without --host answers for the host doctor finds (one
# finding, tools/job_host.c), and says which on stderr; --deep's child the
# same; with --host nothing is looked for.
same_host() { # same_host WHAT PROFILE ENV...: doctor's host and probe's default in env -i with ENV
  what=$1 want=$2; shift 2
  # (the emulator passed on: --deep's child starts through it)
  env -i PATH="$PATH" ${RUN:+"PROXYTRACE_EMULATOR=$RUN"} "$@" $RUN "$PT" doctor >"$T/out" 2>&1
  dhost=$(sed -n 's/^ok   host  *//p' "$T/out")
  for deep in "" --deep; do
    # shellcheck disable=SC2086
    env -i PATH="$PATH" ${RUN:+"PROXYTRACE_EMULATOR=$RUN"} "$@" $RUN "$PT" probe --json $deep >"$T/pjson" 2>"$T/perr"
    phost=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"])' "$T/pjson" 2>/dev/null)
    if [ -n "$dhost" ] && [ "$phost" = "$want" ] && grep -qF "proxytrace probe: host " "$T/perr" &&
      grep -qF ": $dhost, as proxytrace doctor finds it" "$T/perr"; then
      echo "ok   probe $deep without --host: $what, $want, as doctor's '$dhost'"
    else
      fail "probe $deep without --host, $what: host '$phost', want $want as doctor's '$dhost'"
      sed 's/^/    /' "$T/perr" "$T/out"
    fi
  done
}
same_host "torch's NCCL" nccl-2.28 PYTHONPATH="$T/py"
same_host "ROCm torch's RCCL" rccl PYTHONPATH="$T/rocm"
[ -f "$FAKE" ] && same_host "libnccl.so.2 on LD_LIBRARY_PATH" nccl-2.28 LD_LIBRARY_PATH="$T/lib"
env -i PATH="$PATH" PYTHONPATH="$T/py" $RUN "$PT" probe --host rccl >/dev/null 2>"$T/perr"
if grep -q "proxytrace probe: host " "$T/perr"; then fail "probe --host rccl still looks for a host"; cat "$T/perr"
else echo "ok   probe --host: no host looked for"; fi

# Dump folders and variables.
DARGS="--host nccl-2.28"
doc 1 "a dump folder that does not exist" -- NCCL_PROFILER_PLUGIN="$PLUGIN" \
  PROXYTRACE_DUMP_DIR="$T/nope"
has "^FAIL dump dir .*fix: mkdir -p '$T/nope'" "the fix creates the folder"
: >"$T/file"
doc 1 "a dump folder that is a file" -- NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/file"
mkdir -p "$T/ro" && chmod 0555 "$T/ro"
if [ "$(id -u)" -ne 0 ]; then
  doc 1 "a dump folder that is not writable" -- NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/ro"
  has '^FAIL dump dir .*not writable' "not writable is said"
else
  echo "ok   (not-writable folder not tried: root writes anywhere)"
fi
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  S=$(mktemp -d /dev/shm/pt-doctor-XXXXXX)
  doc 0 "a node-local (tmpfs) dump folder" -- NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$S"
  has '^warn dump dir .*node-local (tmpfs): other nodes cannot read it' "tmpfs is node-local, a warning"
  rmdir "$S"
fi
# The pip set-up: the plugin under PROXYTRACE_HOME, no NCCL_PROFILER_PLUGIN.
# NCCL never reads PROXYTRACE_HOME: the job would load no plugin — a FAIL
# whose fix names the file.
mkdir -p "$T/home/lib"
cp "$PLUGIN" "$T/home/lib/librccl-profiler-proxytrace.so.1"
doc 1 "the plugin only under PROXYTRACE_HOME" -- PROXYTRACE_HOME="$T/home" PROXYTRACE_DUMP_DIR="$T/dumps"
has "^FAIL plugin .*only through PROXYTRACE_HOME.*fix: export NCCL_PROFILER_PLUGIN=$T/home/lib/librccl-profiler-proxytrace.so.1" \
  "a plugin found only through PROXYTRACE_HOME fails, with the variable that loads it"
doc 1 "a misspelt PROXYTRACE_ variable" -- NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/dumps" \
  PROXYTRACE_DUMPDIR=/x
has '^FAIL variables .*PROXYTRACE_DUMPDIR is not a variable' "the unknown name is named"
doc 1 "a clock of another machine" -- NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/dumps" \
  PROXYTRACE_CLOCK=sundial
has '^FAIL variables .*PROXYTRACE_CLOCK=sundial' "a bad PROXYTRACE_CLOCK fails"
# Values the plugin rejects (and replaces by its default) fail, in the
# plugin's own words: doctor asks the plugin's own reading of them.
for v in PROXYTRACE_MAX_OPS=abc PROXYTRACE_STALL_MS=-1 PROXYTRACE_DUMP_MAX_MB=0 PROXYTRACE_DUMP_SIGNAL=NOPE \
  PROXYTRACE_METRICS_INTERVAL_MS=1e3 PROXYTRACE_MAX_MEMORY_MB=0 PROXYTRACE_RCCL_DIAG=99:1 PROXYTRACE_METRICS_CHANNELS=2; do
  doc 1 "$v, rejected by the plugin" -- NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/dumps" "$v"
  has "^FAIL variables  $v rejected by the plugin: ${v%%=*}='${v#*=}' .*using the default" "$v: the plugin's words"
done
doc 0 "values the plugin takes" -- NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/dumps" \
  PROXYTRACE_MAX_OPS=100 PROXYTRACE_STALL_MS=0 PROXYTRACE_DUMP_MAX_MB=0.5 PROXYTRACE_DUMP_SIGNAL=USR2
has "^ok   variables  PROXYTRACE_DUMP_SIGNAL=USR2" "a good value is ok"
# Control bytes and invalid UTF-8 from the environment and --host never
# reach the terminal raw.
ESC=$(printf '\033')
doc 1 "a value with escape sequences" -- NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/dumps" \
  "PROXYTRACE_MAX_OPS=$(printf '1\033]0;owned\007\377')" "NCCL_DEBUG=$(printf 'WARN\033[2J')" \
  "PROXYTRACE_METRICS_DIR=$(printf '%s/x\033[31m' "$T")"
if grep -q "$ESC\|$(printf '\007')\|$(printf '\377')" "$T/out" "$T/err"; then
  fail "a control byte or an invalid byte printed raw"; od -c "$T/out" | grep -m3 '033\|377'
else
  echo "ok   no control or invalid byte printed raw"
fi
has 'PROXYTRACE_MAX_OPS=1\\x1b\]0;owned\\x07\\xff rejected' "the value shown escaped"
env -i PATH="$PATH" $RUN "$PT" doctor --host "$(printf 'x\033[31m')" >"$T/out" 2>"$T/err"
if [ $? -eq 2 ] && grep -q 'x\\x1b\[31m is not a profile' "$T/err" && ! grep -q "$ESC" "$T/err"; then
  echo "ok   --host shown escaped"
else
  fail "--host with an escape sequence"; od -c "$T/err" | head -5
fi
DARGS="--no-torch --host 2.30.7"
doc 0 "--host instead of finding the release" -- NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/dumps"
has '^ok   plugin .*nccl-2.30 loads' "the --host release is the one probed"
DARGS=
env -i PATH="$PATH" $RUN "$PT" doctor --host nccl-9.99 >"$T/out" 2>&1
[ $? -eq 2 ] && echo "ok   a bad --host is a usage error (exit 2)" || fail "a bad --host: not exit 2"
env -i PATH="$PATH" $RUN "$PT" doctor --bogus >"$T/out" 2>&1
[ $? -eq 2 ] && echo "ok   an unknown option is a usage error (exit 2)" || fail "unknown option: not exit 2"

# Every variable of the README's environment table is one doctor knows.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
vars=$(sed -n '/^## Environment/,/^## /p' "$SRC/README.md" | grep -o '^| `PROXYTRACE_[A-Z_]*`' | tr -d '|` ')
[ -n "$vars" ] || fail "no PROXYTRACE_ variable found in the README's environment table"
for v in $vars; do
  env -i PATH="$PATH" "$v=1" $RUN "$PT" doctor --no-torch --host nccl-2.28 >"$T/out" 2>&1
  grep -q "$v is not a variable" "$T/out" && fail "doctor does not know $v, which the README lists"
done
echo "ok   doctor knows the $(echo $vars | wc -w) variables of the README's table"

# python3 -m proxytrace doctor asks its own interpreter's torch (a real
# interpreter, not a launcher script that needs PATH).
# Not under an emulator: the package starts the program directly.
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
if [ -n "$RUN" ]; then
  echo "ok   (python3 -m proxytrace doctor not tried: this build runs under $RUN)"
elif [ -n "$PY" ]; then
  SRC=$(cd "$(dirname "$0")/../.." && pwd)
  env -i PATH=/nonexistent PYTHONPATH="$SRC/python:$T/py" PROXYTRACE_CLI="$(cd "$B" && pwd)/proxytrace" \
    NCCL_PROFILER_PLUGIN="$PLUGIN" PROXYTRACE_DUMP_DIR="$T/dumps" "$PY" -m proxytrace doctor \
    >"$T/out" 2>&1
  rc=$?
  [ $rc -eq 0 ] && echo "ok   python3 -m proxytrace doctor (exit 0)" || { fail "python3 -m proxytrace doctor: exit $rc"; cat "$T/out"; }
  has '^ok   host .*bundled with torch 2.6.0+cu124' "python3 -m proxytrace doctor asks its own Python (no python3 on PATH)"
  env -i PATH=/nonexistent PYTHONPATH="$SRC/python:$T/py" PROXYTRACE_CLI="$(cd "$B" && pwd)/proxytrace" \
    "$PY" -m proxytrace probe >"$T/out" 2>&1
  has '^proxytrace probe: host 2.28.9: NCCL 2.28.9 bundled with torch 2.6.0+cu124' \
    "python3 -m proxytrace probe asks its own Python for the default host"
fi

[ "$failures" -eq 0 ] && echo "doctor.sh: all passed" || echo "doctor.sh: $failures failed"
[ "$failures" -eq 0 ]
