#!/bin/sh
# What is not a dump: a folder of text that only looks like dumps — every
# document and source file of this repository, whose examples hold dump,
# record and metrics lines — yields no dump, no rank and no communicator
# (exit 2, "NO DUMP"), and says which files held dump-like lines among
# other text; the same files beside a hung job's dumps and logs change
# nothing of its report; a job's captured output with the application's
# own lines first is still read (the host logger's prefix marks its dump
# lines); a copy of a dump with a line of prose above it is not. $1: the
# build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"

# ---- the repository's own files, tests aside (their fixtures are dumps) ----
mkdir "$T/docs"
(cd "$ROOT" && for f in README.md Makefile docs/*.md src/*/*.c src/*/*.h include/proxytrace/*.h tools/*.c tools/sim/*.c python/*/*.py; do
  [ -f "$f" ] || continue
  mkdir -p "$T/docs/$(dirname "$f")" && cp "$f" "$T/docs/$f"
done)
n=$(find "$T/docs" -type f | wc -l)
[ "$n" -gt 100 ] || fail "only $n files of the repository were found"
$RUN "$PT" analyze "$T/docs" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "the repository's text exits $rc, want 2 (no dump): $(head -3 "$T/out")"
head -1 "$T/out" | grep -q "^proxytrace analyze: NO DUMP" || fail "the repository's text reads: $(head -1 "$T/out")"
grep -q "README.md:[0-9]*: dump-like lines without a host log prefix after other text" "$T/out" ||
  fail "README.md's example is not listed as text among other text: $(grep README "$T/out")"
grep -q "metrics.md" "$T/out" || fail "docs/metrics.md's example metrics lines are not listed"
! grep -q "culprit" "$T/out" || fail "the repository's text names a culprit"
$RUN "$PT" analyze --json "$T/docs" >"$T/docs.json" 2>/dev/null
python3 - "$T/docs.json" <<'PY' || fail "the JSON of the repository's text"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "unusable", d["verdict"]
assert not d.get("culprits"), d.get("culprits")
assert not d.get("communicators"), d.get("communicators")
PY

# ---- a hung job: its dump files and its ranks' logs ----
mkdir -p "$T/job/files" "$T/job/logs"
$RUN "$PT" sim --host rccl --plugin "$PLUGIN" --nodes 2 --ranks-per-node 2 --channels 2 --stall 3:0:5 \
  --env PROXYTRACE_DUMP_DIR="$T/job/files" --dump-dir "$T/job/logs" --quiet >/dev/null 2>&1
ls "$T/job/files"/*-r3-*.txt >/dev/null 2>&1 || fail "the job wrote no dump files"
grep -q "NCCL WARN commDump for all active ops" "$T/job/logs/rank3.log" || fail "the job's log holds no dump"
$RUN "$PT" analyze "$T/job" >"$T/alone" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "the hung job exits $rc, want 1"
grep -q "culprit 1: a GPU of .* one of ranks 2, 3, .* rank 3 " "$T/alone" || fail "the hung job's culprit: $(grep culprit "$T/alone")"

# beside the repository's text: the same report but for the inputs' counts
cp -r "$T/job" "$T/mixed"
cp -r "$T/docs" "$T/mixed/docs"
$RUN "$PT" analyze "$T/mixed" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "the hung job beside the repository's text exits $rc, want 1"
sed '/^inputs:/,$d' "$T/alone" >"$T/alone.head"
sed '/^inputs:/,$d' "$T/out" >"$T/mixed.head"
cmp -s "$T/alone.head" "$T/mixed.head" || fail "the repository's text changes the report: $(diff "$T/alone.head" "$T/mixed.head" | head -5)"

# a captured output: the application's lines first, then the host's log
# lines (their prefix marks the dump): read as before
for f in "$T/job/logs"/rank*.log; do
  { echo "epoch 1: loss 2.31 (12.5 s)"; echo "saving a checkpoint to ckpt/"; cat "$f"; } >"$f.new" && mv "$f.new" "$f"
done
rm -r "$T/job/files"
$RUN "$PT" analyze "$T/job" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "the logs after the application's lines exit $rc, want 1: $(head -3 "$T/out")"
grep -q "culprit 1: a GPU of .* one of ranks 2, 3, .* rank 3 " "$T/out" || fail "the logs after the application's lines: $(grep culprit "$T/out")"

# a copy of rank 3's dumps with a line of prose above it: not a dump
mkdir "$T/copy"
{ echo "rank 3's dump, as the plugin wrote it:"; cat "$T/mixed/files"/*-r3-*.txt; } >"$T/copy/notes.txt"
$RUN "$PT" analyze "$T/copy" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "a dump below a line of prose exits $rc, want 2: $(head -3 "$T/out")"
grep -q "notes.txt:2: dump-like lines without a host log prefix after other text" "$T/out" ||
  fail "the copy's refusal is not said: $(cat "$T/out")"
# ... and without the line of prose, it is rank 3's dump
cat "$T/mixed/files"/*-r3-*.txt >"$T/copy/notes.txt"
$RUN "$PT" analyze "$T/copy" >"$T/out" 2>&1; rc=$?
[ $rc -ne 2 ] || fail "a copy of a dump reads as no dump: $(head -3 "$T/out")"

# a metrics file whose header is cut short: its edges are not evidence
mkdir "$T/metrics"
printf '%s\n' '{"type":"metrics","schema":1,"tool":"proxytrace","rank":0,' \
  '{"type":"edge","rank":0,"peer":1,"channel":0,"dir":"send","ops":4,"steps":64,"network":{"count":64,"p50_ns":9000000}}' \
  '{"type":"end","edges":1}' >"$T/metrics/proxytrace-metrics-x-1-r0-5.jsonl"
$RUN "$PT" analyze "$T/metrics" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "a metrics file with a cut header exits $rc, want 2: $(head -3 "$T/out")"
grep -q "metrics line that is not a whole JSON object" "$T/out" || fail "the cut metrics header is not said: $(cat "$T/out")"
grep -q "metrics line with no metrics header before it" "$T/out" || fail "the headerless edge is not said: $(cat "$T/out")"
echo "   ok: $n files of the repository read as no dump; beside a hung job they change nothing"
