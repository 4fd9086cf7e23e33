#!/bin/sh
# hostile-files.sh — the loader facing files and trees it should not trust:
# truncated copies of a plugin (the file-level probe must agree with a real
# dlopen in a child, which dies of SIGBUS on most of them), symlink loops
# (as the value, on LD_LIBRARY_PATH, under PROXYTRACE_HOME, a directory
# that contains itself), world-writable files and directories (loaded as
# the host would, with a note), and `probe --deep` with a plugin whose
# constructor never returns (bounded by --timeout). Usage: hostile-files.sh BUILD-DIR
set -u
B=$1
PT=$B/proxytrace
RUN=${PROXYTRACE_EMULATOR:-} # a build for another architecture runs under its emulator
PL=$B/tests/loader/plugins
T=$(mktemp -d)
trap 'chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
STEM=librccl-profiler-proxytrace.so

# ---- truncated copies: probe and a real load agree on every cut ----------
good=$PL/good.so
size=$(wc -c <"$good")
cuts="0 1 16 63 64 65 500 831 832 1000 2048 4095 4096 4097 8191 8192 8193 12000 12287 12288"
cuts="$cuts $((size / 2)) $((size - 4096)) $((size - 1)) $size"
agree=0 truncated=0
for cut in $cuts; do
  [ "$cut" -le "$size" ] || continue
  head -c "$cut" "$good" >"$T/cut.so"
  $RUN "$PT" probe --host rccl -q -i NCCL_PROFILER_PLUGIN="$T/cut.so"; a=$?
  $RUN "$PT" probe --host rccl -q -i --deep NCCL_PROFILER_PLUGIN="$T/cut.so" 2>/dev/null; b=$?
  if [ "$a" -eq 0 ] && [ "$b" -ne 0 ] || [ "$a" -ne 0 ] && [ "$b" -eq 0 ]; then
    fail "cut at $cut of $size bytes: probe exit $a, a real load exit $b"
  else
    agree=$((agree + 1))
  fi
  if [ "$a" -ne 0 ] && $RUN "$PT" probe --host rccl -i NCCL_PROFILER_PLUGIN="$T/cut.so" | grep -q "file is truncated"; then
    truncated=$((truncated + 1))
  fi
done
echo "ok   truncated copies: probe and dlopen agree on $agree cuts, $truncated named truncated"
[ "$truncated" -ge 5 ] || fail "too few cuts are reported as truncated ($truncated)"

# ---- symlink loops ------------------------------------------------------
ln -s loop-b.so "$T/loop-a.so"
ln -s loop-a.so "$T/loop-b.so"
$RUN "$PT" probe --host rccl -i NCCL_PROFILER_PLUGIN="$T/loop-a.so" >"$T/out"; a=$?
$RUN "$PT" probe --host rccl -q -i --deep NCCL_PROFILER_PLUGIN="$T/loop-a.so" 2>/dev/null; b=$?
[ "$a" -eq 6 ] || fail "a symlink loop as the value: exit $a, want 6 (load error)"
[ "$a" -eq "$b" ] || fail "a symlink loop as the value: probe $a, --deep $b"
grep -q "Too many levels of symbolic links" "$T/out" || fail "the loop is not named"

mkdir -p "$T/ld1" "$T/ld2"
ln -s libnccl-profiler-loop.so "$T/ld1/libnccl-profiler-loop.so"
cp "$good" "$T/ld2/libnccl-profiler-loop.so"
$RUN "$PT" probe -q -i --host nccl-2.30 --name loop LD_LIBRARY_PATH="$T/ld1:$T/ld2"; a=$?
$RUN "$PT" probe -q -i --host nccl-2.30 --deep --name loop LD_LIBRARY_PATH="$T/ld1:$T/ld2" 2>/dev/null; b=$?
[ "$a" -eq "$b" ] || fail "a loop on LD_LIBRARY_PATH: probe $a, --deep $b"
[ "$a" -ne 0 ] || fail "a loop on LD_LIBRARY_PATH does not end the search (glibc stops there)"

mkdir -p "$T/home/lib"
ln -s "$STEM.1.9" "$T/home/lib/$STEM.1.9"   # loops onto itself
cp "$good" "$T/home/lib/$STEM.1.2"
ln -s . "$T/home/lib/lib"                   # a directory that contains itself
ln -s "$T/home" "$T/home/lib64"             # and one that goes back up
$RUN "$PT" probe --host rccl -i --home "$T/home" >"$T/out"; a=$?
[ "$a" -eq 0 ] || { fail "PROXYTRACE_HOME with loops: exit $a, want 0"; cat "$T/out"; }
grep -q "would load $T/home/lib/$STEM.1.2" "$T/out" || fail "the loop under PROXYTRACE_HOME is not skipped"
grep -q "Too many levels of symbolic links" "$T/out" || fail "the loop under PROXYTRACE_HOME is not named"
echo "ok   symlink loops"

# ---- world-writable places ----------------------------------------------
mkdir -p "$T/open" "$T/sticky" "$T/home2/lib"
cp "$good" "$T/open/p.so"; chmod 0777 "$T/open"
cp "$good" "$T/sticky/p.so"; chmod 01777 "$T/sticky"
$RUN "$PT" probe --host rccl -i NCCL_PROFILER_PLUGIN="$T/open/p.so" >"$T/out"; a=$?
[ "$a" -eq 0 ] || fail "a plugin in a world-writable directory: exit $a (the host loads it: want 0)"
grep -q "which every user can write (mode 0777, no sticky bit)" "$T/out" ||
  fail "no note about the world-writable directory"
$RUN "$PT" probe --host rccl -i NCCL_PROFILER_PLUGIN="$T/sticky/p.so" >"$T/out"
grep -q "every user can write" "$T/out" && fail "a sticky directory (like /tmp) gets a note"
chmod 0666 "$T/sticky/p.so"
$RUN "$PT" probe --host rccl -i NCCL_PROFILER_PLUGIN="$T/sticky/p.so" >"$T/out"
grep -q "is writable by every user (mode 0666)" "$T/out" || fail "no note about a world-writable file"
cp "$good" "$T/home2/lib/$STEM.1"; chmod 0777 "$T/home2/lib"
$RUN "$PT" probe --host rccl -i --home "$T/home2" >"$T/out"; a=$?
[ "$a" -eq 0 ] || fail "a world-writable PROXYTRACE_HOME: exit $a, want 0"
grep -q "PROXYTRACE_HOME directory $T/home2/lib is writable by every user" "$T/out" ||
  fail "no note about the world-writable PROXYTRACE_HOME directory"
$RUN "$PT" probe --host rccl -i --deep NCCL_PROFILER_PLUGIN="$T/open/p.so" >"$T/out"
grep -q "every user can write" "$T/out" || fail "--deep (a real load) gives no note"
echo "ok   world-writable files and directories"

# ---- probe --deep with a constructor that never returns ------------------
start=$(date +%s)
$RUN "$PT" probe --host rccl -i --deep --timeout 2 NCCL_PROFILER_PLUGIN="$PL/hang.so" >"$T/out" 2>"$T/err"; a=$?
took=$(($(date +%s) - start))
[ "$a" -eq 1 ] || fail "--deep on a hanging plugin: exit $a, want 1"
[ "$took" -le 10 ] || fail "--deep --timeout 2 took $took s"
grep -q "did not finish.*(after 2 s)" "$T/err" || fail "the hang is not explained"
$RUN "$PT" probe --host rccl -i --deep --json --timeout 1 NCCL_PROFILER_PLUGIN="$PL/hang.so" 2>/dev/null | python3 -c "import json,sys; o=json.load(sys.stdin); assert o[\"status\"] == \"hung\" and o[\"ok\"] is False" || fail "--deep --json on a hang prints no {\"status\":\"hung\"} object"
$RUN "$PT" probe --host rccl -i --deep --timeout 0 NCCL_PROFILER_PLUGIN="$PL/hang.so" 2>"$T/err"; a=$?
[ "$a" -eq 2 ] || fail "--timeout 0: exit $a, want 2 (usage)"
grep -q "1..86400" "$T/err" || fail "a bad --timeout does not say what is accepted"
# the file-level probe runs no code: the same plugin is fine there
$RUN "$PT" probe --host rccl -q -i NCCL_PROFILER_PLUGIN="$PL/hang.so" || fail "the file-level probe ran the constructor"
echo "ok   --deep gives up on a hanging constructor after --timeout ($took s)"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all hostile-file checks passed"
