#!/bin/sh
# The `proxytrace sim` and `proxytrace demo` commands as a user runs them:
# exit statuses (0 ran, 1 could not, 2 bad option), per-rank dump files, the
# ground truth file, and the demo's summary with the stuck ops of its dumps.
# $1: the build folder.
B=${1:-build}
PT="$B/proxytrace"
COUNT="$(cd "$B/tests/sim" && pwd)/libcount.so"
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$PT" sim --help >"$T/help" 2>&1 || fail "sim --help exits $?"
grep -q -- "--stall" "$T/help" || fail "sim --help lacks --stall"

"$PT" sim --bogus >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "sim --bogus exits $rc, want 2"
grep -q -- "--bogus" "$T/out" || fail "sim --bogus does not name the option"
"$PT" sim --channels 0 >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "sim --channels 0 exits $rc, want 2"
grep -q "1..64" "$T/out" || fail "sim --channels 0 does not say what is accepted"

"$PT" sim --plugin "$T/missing.so" --quiet >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "sim with a missing plugin exits $rc, want 1"
grep -q "missing.so" "$T/out" || fail "the loader report does not name the plugin"

# Every rank's lines in its own file; the truth in another.
"$PT" sim --plugin "$COUNT" --dump-dir "$T/dumps" --truth-file "$T/truth" --stall 1:0:2 \
  --nodes 2 --ranks-per-node 2 >"$T/out" 2>&1 || fail "sim with the counting plugin exits $?"
for r in 0 1 2 3; do
  grep -q "count dump rank $r" "$T/dumps/rank$r.log" || fail "rank$r.log lacks rank $r's dump"
done
grep -q "truth: stuck rank=1" "$T/truth" || fail "the truth file lacks rank 1's stuck op"
grep -q "hung" "$T/out" || fail "the summary does not say the job hung"

# The demo: our plugin, one stalled GPU, stuck ops from the dumps.
"$PT" demo --bogus >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "demo --bogus exits $rc, want 2"
"$PT" demo --plugin "$PLUGIN" --out "$T/demo" >"$T/demo.txt" 2>&1 || fail "demo exits $?"
cat "$T/demo.txt"
grep -q "Stuck ops" "$T/demo.txt" || fail "the demo prints no stuck ops section"
grep -q "rank 3: .*3->4(S), chan:0, status:WAITING_GPU" "$T/demo.txt" || fail "the demo does not show rank 3's stuck send"
[ -s "$T/demo/rank7.log" ] || fail "the demo wrote no dump for rank 7"
# ... and they come from the stall watchdog, while the job hung
[ "$(grep -l "trigger=stall" "$T/demo"/proxytrace-*.txt | wc -l)" -eq 8 ] || fail "the demo's ranks have no stall dump"
grep -q "stall dump" "$T/demo/host.log" || fail "the demo's host.log does not say where the stall dumps went"
echo "ok"
