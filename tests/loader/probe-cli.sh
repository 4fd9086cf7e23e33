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
  $RUN "$PT" probe --host rccl -i "$@" >"$T/out" 2>"$T/err"
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
$RUN "$PT" probe --host rccl -i --path good.so >"$T/out" 2>&1
grep -q "write './NAME'" "$T/out" || fail "path without '/' does not say to write ./NAME"
$RUN "$PT" probe -i --host nccl-9.9 2>"$T/err"
grep -q "nccl-2.23 ... nccl-2.32" "$T/err" || fail "unknown host does not list the profiles"
$RUN "$PT" probe --host rccl -i RCCL_ENABLE_PROXY_TRACE=on >"$T/out"
grep -q "RCCL_ENABLE_PROXY_TRACE=1" "$T/out" || fail "a bad RCCL_ENABLE_PROXY_TRACE gets no advice"
$RUN "$PT" probe -i --host nccl-2.30 NCCL_PROFILER_PLUGIN="$long/libx.so" >"$T/out"
grep -q "keeps only the first 254" "$T/out" || fail "over-long value is not explained"
$RUN "$PT" probe --help | grep -q "Exit status" || fail "--help does not document the exit status"

# PROXYTRACE_LOADER_DEBUG traces every decision on stderr.
$RUN "$PT" probe --host rccl -q -i PROXYTRACE_LOADER_DEBUG=1 NCCL_PROFILER_PLUGIN="$T/missing.so" 2>"$T/err"
grep -q "proxytrace-loader: probe rccl: candidate 1 '$T/missing.so' \[value\]: not found" "$T/err" ||
  fail "PROXYTRACE_LOADER_DEBUG=1 does not trace the candidates"
$RUN "$PT" probe --host rccl -q -i NCCL_PROFILER_PLUGIN="$T/missing.so" 2>"$T/err"
[ ! -s "$T/err" ] || fail "the probe writes to stderr without PROXYTRACE_LOADER_DEBUG"

# -i really starts from an empty environment.
NCCL_PROFILER_PLUGIN="$T/good.so" $RUN "$PT" probe --host rccl -q
[ $? -eq 0 ] || fail "the probe does not read the environment"
NCCL_PROFILER_PLUGIN="$T/good.so" $RUN "$PT" probe --host rccl -q -i
[ $? -eq 3 ] || fail "-i does not clear the environment"

# The dump hook is reported only where the host calls it (RCCL): NVIDIA
# NCCL never looks it up.
$RUN "$PT" probe -i --host rccl NCCL_PROFILER_PLUGIN="$T/good.so" >"$T/out"
grep -q "dump hook ncclProfilerProxyTraceDump" "$T/out" || fail "rccl: the dump hook is not reported"
$RUN "$PT" probe -i --host nccl-2.28 NCCL_PROFILER_PLUGIN="$T/good.so" >"$T/out"
! grep -q "dump hook\|ProxyTraceDump" "$T/out" || fail "nccl-2.28: a dump hook NVIDIA never calls is reported"
$RUN "$PT" probe -i --json --host nccl-2.28 NCCL_PROFILER_PLUGIN="$T/good.so" >"$T/json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["host_calls_dump_hook"] is False, d' "$T/json" ||
  fail "nccl-2.28: --json says the host calls the dump hook"

# --json parses, and says what the exit code says.
version=$($RUN "$PT" --version | sed -n 's/^proxytrace //p')
[ -n "$version" ] || fail "proxytrace --version prints no version"
$RUN "$PT" probe --host rccl -i --json NCCL_PROFILER_PLUGIN="$T/good.so" >"$T/json"
python3 - "$T/json" "$T/good.so" "$version" <<'PY' || fail "--json output is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True and d["status"] == "PT_OK", d
assert d["api_version"] == 6 and d["dump_hook"] is True, d
assert d["host_calls_dump_hook"] is True, d
assert d["path"] == sys.argv[2] and d["mode"] == "probe", d
# Reading the environment (-i: nothing set), RCCL's default net library is
# the last candidate; the host stops at the plugin before it.
assert [c["outcome"] for c in d["candidates"]] == ["ok", "not_tried"], d
assert d["candidates"][1]["source"] == "net_plugin", d
assert d["version"] == sys.argv[3] and d["via_proxytrace_home"] is False, d
PY
$RUN "$PT" probe -i --json --host nccl-2.30 NCCL_PROFILER_PLUGIN=nothing-here >"$T/json"
python3 - "$T/json" <<'PY' || fail "--json of a failure is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False and d["status"] == "PT_ENOTFOUND", d
assert [c["source"] for c in d["candidates"]] == ["value", "short_name", "net_plugin"], d
assert d["notes"], d
PY

# --deep loads in a child: same answer for what files can tell...
for v in "$T/good.so" "$T/missing.so" "$T/v6only.so" "$T/text.so"; do
  $RUN "$PT" probe -q -i --host nccl-2.28 NCCL_PROFILER_PLUGIN="$v"; a=$?
  $RUN "$PT" probe -q -i --host nccl-2.28 --deep NCCL_PROFILER_PLUGIN="$v"; b=$?
  [ $a -eq $b ] || fail "probe ($a) and --deep ($b) disagree on $v"
done
$RUN "$PT" probe --host rccl -i --deep --json NCCL_PROFILER_PLUGIN="$T/good.so" | grep -q '"mode":"load"' ||
  fail "--deep did not load"
# The child starts through PROXYTRACE_EMULATOR when one is set (a build for
# another architecture under qemu-user). Natively, a stand-in that logs and
# runs its command shows the child going through it, with -i too.
if [ -z "$RUN" ]; then
  printf '#!/bin/sh\necho "$@" >>"%s/emu.log"\nexec "$@"\n' "$T" >"$T/emu"
  chmod +x "$T/emu"
  PROXYTRACE_EMULATOR="$T/emu" $RUN "$PT" probe --host rccl -q -i --deep NCCL_PROFILER_PLUGIN="$T/good.so" ||
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
$RUN "$PT" probe -i --deep --json --host nccl-2.29 NCCL_PROFILER_PLUGIN="$T/crash.so" >"$T/json" 2>/dev/null
python3 - "$T/json" <<'PY' || fail "--deep --json prints no JSON object when the plugin crashes"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "crashed" and d["ok"] is False and d["signal"] > 0, d
assert d["host"] == "nccl-2.29" and d["mode"] == "load", d
PY

# An option's value never swallows the next option; --opt=VALUE works.
expect 2 "option value that is an option"     -- --host --json
grep -q "is an option" "$T/err" || fail "a swallowed option is not explained"
expect 0 "--opt=VALUE"                         -- --host=nccl-2.28 --path="$T/good.so"
# A release no profile was checked against is named as such.
$RUN "$PT" probe -i -q --host nccl-2.28.1 2>"$T/err"; [ $? -eq 3 ] || fail "nccl-2.28.1 is not mapped"
$RUN "$PT" probe -i --host nccl-2.28.1 >/dev/null 2>"$T/err"
grep -q "2.28.1 is not a release" "$T/err" || fail "nccl-2.28.1 gets no note"
$RUN "$PT" probe -i --host nccl-2.28.9 >/dev/null 2>"$T/err"
[ ! -s "$T/err" ] || fail "a checked release gets a note: $(cat "$T/err")"
$RUN "$PT" probe -i --host nccl-2.30 --rccl-dir "$T/rccl" >/dev/null 2>"$T/err"
grep -q "rccl-dir does nothing for nccl-2.30" "$T/err" || fail "--rccl-dir under NCCL is not questioned"

# A refused request does not claim the variable is unset.
$RUN "$PT" probe --host rccl -i --plugin a --path /b/c.so >"$T/out" 2>&1
grep -q "is not set" "$T/out" && fail "a refused request says NCCL_PROFILER_PLUGIN is not set"
grep -q "the request was refused" "$T/out" || fail "a refused request is not called so"

# A duplicate says why it is not opened again.
mkdir -p "$T/dup/lib"
cp "$PL/nullinit.so" "$T/dup/lib/librccl-profiler-proxytrace.so.1.0.0"
ln -s librccl-profiler-proxytrace.so.1.0.0 "$T/dup/lib/librccl-profiler-proxytrace.so.1"
$RUN "$PT" probe --host rccl -i --home "$T/dup" >"$T/out"
grep -q "duplicate: not opened again: the same file as candidate [0-9]*, which was refused" "$T/out" ||
  fail "a duplicate does not say why it is not tried: $(grep -A1 duplicate "$T/out")"

# NCCL_NET_PLUGIN is read from the environment (2.28+ net fallback).
mkdir -p "$T/net"
cp "$PL/good.so" "$T/net/libnccl-net-mine.so"
expect 0 "profiler found in the net plugin"    -- --host nccl-2.28 NCCL_NET_PLUGIN=mine LD_LIBRARY_PATH="$T/net"
grep -q "NCCL_NET_PLUGIN=mine (environment)" "$T/out" || fail "the report does not show NCCL_NET_PLUGIN"

# An answer that rests on PROXYTRACE_HOME says so on its result line.
mkdir -p "$T/home/lib"
cp "$PL/good.so" "$T/home/lib/librccl-profiler-proxytrace.so.1"
expect 0 "found through PROXYTRACE_HOME"       -- --host nccl-2.30 PROXYTRACE_HOME="$T/home"
grep -q "^result: .*through PROXYTRACE_HOME: NCCL and RCCL themselves never look there" "$T/out" ||
  fail "the result line does not say NCCL never looks in PROXYTRACE_HOME"
$RUN "$PT" probe -i --json --host nccl-2.30 PROXYTRACE_HOME="$T/home" | grep -q '"via_proxytrace_home":true' ||
  fail "--json does not say the answer rests on PROXYTRACE_HOME"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "probe CLI: all checks passed"
