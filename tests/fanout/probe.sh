#!/bin/sh
# `proxytrace probe --fanout`: for each PROXYTRACE_FANOUT_PLUGINS entry,
# under the host profile asked for, the file it resolves to, the API version
# the fan-out would speak to it, or why it would be refused (missing, a
# fan-out itself, a name the host does not take); exit 0 when one child
# would be forwarded to, 3 when none.
# $1: the build folder.
B=${1:-build}
PT="$B/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
D=$(cd "$B" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; cat "$T/out"; exit 1; }
probe() { $RUN "$PT" probe -i --no-conf --fanout "$@" >"$T/out" 2>&1; }

PLUGIN="$D/librccl-profiler-proxytrace.so"
V4="$D/tests/fanout/libchild-v4.so"
LIST="PROXYTRACE_FANOUT_PLUGINS=$PLUGIN, $D/nope.so ,$D/libnccl-profiler-fanout.so,$V4"

probe --host nccl-2.30 "$LIST" || fail "nccl-2.30: exit $?, want 0"
grep -q "^  1\. $PLUGIN\$" "$T/out" || fail "entry 1 not listed"
grep -q "spoken to in API v6 (the host's own); exports the dump hook" "$T/out" || fail "proxytrace not spoken to in v6"
grep -q "tried $D/nope.so (value): not found" "$T/out" || fail "the missing child is not explained"
grep -q "refused: a fan-out (it exports proxytraceFanout)" "$T/out" || fail "the loop is not refused"
grep -q "spoken to in API v4 (translated)" "$T/out" || fail "the v4 child is not spoken to in v4"
grep -q "^2 of 4 would be forwarded to" "$T/out" || fail "the count"

# The same list under NCCL 2.24: proxytrace answers with its v2 table.
probe --host nccl-2.24 "$LIST" || fail "nccl-2.24: exit $?"
grep -q "spoken to in API v2 (the host's own)" "$T/out" || fail "nccl-2.24: proxytrace not in v2"
grep -q "exports ncclProfiler v4 only" "$T/out" || fail "nccl-2.24: the v4-only child is not refused for its symbol"

# A short name is tried only where the host takes short names.
probe --host nccl-2.24 "PROXYTRACE_FANOUT_PLUGINS=proxytrace" "LD_LIBRARY_PATH=$D"
[ $? -eq 3 ] || fail "nccl-2.24 short name: want exit 3"
grep -q "short name" "$T/out" && fail "nccl-2.24 tried a short name"
probe --host nccl-2.30 "PROXYTRACE_FANOUT_PLUGINS=fanout" "LD_LIBRARY_PATH=$D"
[ $? -eq 3 ] || fail "nccl-2.30 fanout by short name: want exit 3 (refused)"
grep -q "libnccl-profiler-fanout.so" "$T/out" || fail "nccl-2.30: the short name did not resolve"

# A list the fan-out cannot take whole: each cut said, the rest explained.
NINE="$V4,a2,a3,a4,a5,a6,a7,a8,ninth"
probe --host nccl-2.30 "PROXYTRACE_FANOUT_PLUGINS=$NINE" || fail "nine entries: exit $?"
grep -q "more than 8 entries: 'ninth' and later ignored" "$T/out" || fail "the ninth entry is not said"
grep -q "^1 of 8 would be forwarded to" "$T/out" || fail "nine entries: the count"
LONG=$(printf '%0300d' 0)
probe --host nccl-2.30 "PROXYTRACE_FANOUT_PLUGINS=$LONG,$V4" || fail "long entry: exit $?"
grep -q "1 entry longer than 255 bytes ignored" "$T/out" || fail "the long entry is not said"
HUGE=$(printf '%04100d' 0)
probe --host nccl-2.30 "PROXYTRACE_FANOUT_PLUGINS=$V4,$HUGE"
[ $? -eq 2 ] || fail "a value over 4095 bytes: want exit 2"
grep -q "longer than 4095 bytes: the fan-out ignores it" "$T/out" || fail "the long value is not said"

probe --host nccl-2.30 || true
grep -q "PROXYTRACE_FANOUT_PLUGINS is not set" "$T/out" || fail "unset list not said"
echo "ok: probe --fanout"
