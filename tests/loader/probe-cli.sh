#!/bin/sh
# probe-cli.sh — `proxytrace probe` from the outside: exit codes for every
# kind of result, --json that parses and says the same as the exit code,
# VAR=VALUE and -i, --deep agreeing with the file-level probe, --deep
# catching what only loading can show (an undefined symbol, a constructor
# that kills the process) without harming the caller, and bad input
# getting a message that says what to do. Usage: probe-cli.sh BUILD-DIR
set -u
B=$1
PT=$B/proxytrace
# A build for another architecture runs under its emulator (scripts/run-tests.sh).
RUN=${PROXYTRACE_EMULATOR:-}
PL=$B/tests/loader/plugins
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect CODE DESCRIPTION -- ARGS...: runs the probe with a clean environment.
expect() {
  want=$1; what=$2; shift 3
  $RUN "$PT" probe -i "$@" >"$T/out" 2>"$T/err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$what: exit $got, want $want"; sed 's/^/    /' "$T/out" "$T/err"
  else
    echo "ok   $what (exit $got)"
  fi
}

cp "$PL/good.so" "$T/good.so"
cp "$PL/v6only.so" "$T/v6only.so"
cp "$PL/undef.so" "$T/undef.so"
cp "$PL/crash.so" "$T/crash.so"
printf 'not a shared object, but named like one; long enough for a header\n' >"$T/text.so"
mkdir -p "$T/rccl" "$T/lib"
cp "$PL/fakerccl.so" "$T/rccl/librccl.so"
cp "$PL/good.so" "$T/rccl/librccl-profiler-proxytrace.so"
cp "$PL/good.so" "$T/lib/libnccl-profiler-proxytrace.so"
long=$T; while [ ${#long} -lt 280 ]; do long=$long/a-long-directory-name; done
mkdir -p "$long" && cp "$PL/good.so" "$long/libx.so"

expect 0 "path to a good plugin"              -- NCCL_PROFILER_PLUGIN="$T/good.so"
expect 0 "--path"                             -- --path "$T/good.so"
expect 0 "short name on LD_LIBRARY_PATH"      -- --host nccl-2.30 --name proxytrace LD_LIBRARY_PATH="$T/lib"
expect 0 "auto-load with --rccl-dir (a file)" -- RCCL_ENABLE_PROXY_TRACE=1 --rccl-dir "$T/rccl/librccl.so"
expect 3 "nothing found"                      -- NCCL_PROFILER_PLUGIN="$T/missing.so"
expect 4 "disabled"                           -- --host nccl-2.28 NCCL_PROFILER_PLUGIN=none
expect 5 "v6-only plugin on nccl-2.28"        -- --host nccl-2.28 NCCL_PROFILER_PLUGIN="$T/v6only.so"
expect 6 "not an ELF file"                    -- NCCL_PROFILER_PLUGIN="$T/text.so"
expect 7 "value longer than 254"              -- --host nccl-2.30 NCCL_PROFILER_PLUGIN="$long/libx.so"
expect 0 "the same long value on 2.25"        -- --host nccl-2.25 NCCL_PROFILER_PLUGIN="$long/libx.so"
expect 2 "unknown host"                       -- --host nccl-9.9
expect 2 "unknown option"                     -- --frobnicate
expect 2 "option without its value"           -- --host
expect 2 "path without a slash"               -- --path good.so
expect 2 "two values at once"                 -- --path "$T/good.so" --name x
expect 2 "missing --rccl-dir"                 -- --rccl-dir "$T/nowhere"
expect 2 "bad --major"                        -- --major zero

# Messages that say what to do.
$RUN "$PT" probe -i --path good.so >"$T/out" 2>&1
grep -q "write './NAME'" "$T/out" || fail "path without '/' does not say to write ./NAME"
$RUN "$PT" probe -i --host nccl-9.9 2>"$T/err"
grep -q "nccl-2.23 ... nccl-2.30" "$T/err" || fail "unknown host does not list the profiles"
$RUN "$PT" probe -i RCCL_ENABLE_PROXY_TRACE=on >"$T/out"
grep -q "RCCL_ENABLE_PROXY_TRACE=1" "$T/out" || fail "a bad RCCL_ENABLE_PROXY_TRACE gets no advice"
$RUN "$PT" probe -i --host nccl-2.30 NCCL_PROFILER_PLUGIN="$long/libx.so" >"$T/out"
grep -q "keeps only the first 254" "$T/out" || fail "over-long value is not explained"
$RUN "$PT" probe --help | grep -q "Exit status" || fail "--help does not document the exit status"

# PROXYTRACE_LOADER_DEBUG traces every decision on stderr.
$RUN "$PT" probe -q -i PROXYTRACE_LOADER_DEBUG=1 NCCL_PROFILER_PLUGIN="$T/missing.so" 2>"$T/err"
grep -q "proxytrace-loader: probe rccl: candidate 1 '$T/missing.so' \[value\]: not found" "$T/err" ||
  fail "PROXYTRACE_LOADER_DEBUG=1 does not trace the candidates"
$RUN "$PT" probe -q -i NCCL_PROFILER_PLUGIN="$T/missing.so" 2>"$T/err"
[ ! -s "$T/err" ] || fail "the probe writes to stderr without PROXYTRACE_LOADER_DEBUG"

# -i really starts from an empty environment.
NCCL_PROFILER_PLUGIN="$T/good.so" $RUN "$PT" probe -q
[ $? -eq 0 ] || fail "the probe does not read the environment"
NCCL_PROFILER_PLUGIN="$T/good.so" $RUN "$PT" probe -q -i
[ $? -eq 3 ] || fail "-i does not clear the environment"

# --json parses, and says what the exit code says.
$RUN "$PT" probe -i --json NCCL_PROFILER_PLUGIN="$T/good.so" >"$T/json"
python3 - "$T/json" "$T/good.so" <<'PY' || fail "--json output is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True and d["status"] == "PT_OK", d
assert d["api_version"] == 6 and d["dump_hook"] is True, d
assert d["path"] == sys.argv[2] and d["mode"] == "probe", d
assert [c["outcome"] for c in d["candidates"]] == ["ok"], d
PY
$RUN "$PT" probe -i --json --host nccl-2.30 NCCL_PROFILER_PLUGIN=nothing-here >"$T/json"
python3 - "$T/json" <<'PY' || fail "--json of a failure is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False and d["status"] == "PT_ENOTFOUND", d
assert [c["source"] for c in d["candidates"]] == ["value", "short_name"], d
assert d["notes"], d
PY

# --deep loads in a child: same answer for what files can tell...
for v in "$T/good.so" "$T/missing.so" "$T/v6only.so" "$T/text.so"; do
  $RUN "$PT" probe -q -i --host nccl-2.28 NCCL_PROFILER_PLUGIN="$v"; a=$?
  $RUN "$PT" probe -q -i --host nccl-2.28 --deep NCCL_PROFILER_PLUGIN="$v"; b=$?
  [ $a -eq $b ] || fail "probe ($a) and --deep ($b) disagree on $v"
done
$RUN "$PT" probe -i --deep --json NCCL_PROFILER_PLUGIN="$T/good.so" | grep -q '"mode":"load"' ||
  fail "--deep did not load"
# The child starts through PROXYTRACE_EMULATOR when one is set (a build for
# another architecture under qemu-user). Natively, a stand-in that logs and
# runs its command shows the child going through it, with -i too.
if [ -z "$RUN" ]; then
  printf '#!/bin/sh\necho "$@" >>"%s/emu.log"\nexec "$@"\n' "$T" >"$T/emu"
  chmod +x "$T/emu"
  PROXYTRACE_EMULATOR="$T/emu" "$PT" probe -q -i --deep NCCL_PROFILER_PLUGIN="$T/good.so" ||
    fail "--deep through an emulator exits $?"
  grep -q -- "proxytrace probe --in-process" "$T/emu.log" 2>/dev/null ||
    fail "--deep did not start its child through PROXYTRACE_EMULATOR"
fi
# ...and more than files can tell, without harm to the caller.
expect 0 "probe cannot see an undefined symbol" -- NCCL_PROFILER_PLUGIN="$T/undef.so"
expect 6 "--deep sees the undefined symbol"     -- --deep NCCL_PROFILER_PLUGIN="$T/undef.so"
grep -q "pt_test_symbol_nobody_defines" "$T/out" || fail "--deep does not name the missing symbol"
expect 0 "probe does not run constructors"      -- NCCL_PROFILER_PLUGIN="$T/crash.so"
expect 1 "--deep survives a crashing plugin"    -- --deep NCCL_PROFILER_PLUGIN="$T/crash.so"
grep -q "killed the process" "$T/err" || fail "--deep does not explain the crash"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "probe CLI: all checks passed"
