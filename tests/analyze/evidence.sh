#!/bin/sh
# What `proxytrace analyze` saw and keeps, as a user meets it: a cut dump
# (JSON lines and text) answers "incomplete" (exit 4) instead of "OK"; a
# hang beside ranks without a dump is still a hang (exit 1) with those
# ranks as possible culprits; dumps in subfolders (dumps/node0/…) are read;
# dumps of ranks the plugin did not know (…-r-1-…, NCCL 2.26) are not dead
# ranks; --chrome never overwrites an input and fails, before any report,
# when it cannot be written; a cut file is not a rank that never called the
# collective, nor one behind or dead. $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"

$RUN "$PT" analyze --help >"$T/help" 2>&1 || fail "analyze --help exits $?"
grep -q "4 incomplete" "$T/help" || fail "analyze --help does not give exit status 4"

# A hung NVIDIA NCCL 2.28 job, rank 3 stalled, its dump files.
$RUN "$PT" sim --host nccl-2.28 --plugin "$PLUGIN" --nodes 2 --ranks-per-node 4 --channels 2 --iters 4 \
  --stall 3:0:5 --env PROXYTRACE_DUMP_DIR="$T/files" --env PROXYTRACE_STALL_MS=50 --hold 0.3 \
  --truth-json "$T/truth.json" --quiet >"$T/sim.out" 2>&1
ls "$T/files"/*-r3-*.jsonl >/dev/null 2>&1 || { echo "this plugin writes no dump files: nothing to check"; exit 0; }
$RUN "$PT" analyze "$T/files" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "the whole hung job exits $rc, want 1"

# ---- the first 5 000 bytes of the stalled rank's stall dump ----
mkdir "$T/cut"
head -c 5000 "$T/files"/*-r3-*.jsonl >"$T/cut/r3.jsonl"
grep -q '"trigger":"stall","dumpSeq":[0-9]*,"round":[0-9]*,"time_ns":[0-9]*,"activeOps":1' "$T/cut/r3.jsonl" ||
  fail "the cut file does not start with a stall dump with one active op"
$RUN "$PT" analyze "$T/cut" >"$T/out" 2>&1; rc=$?
[ $rc -eq 4 ] || fail "a cut stall dump exits $rc, want 4: $(head -3 "$T/out")"
head -1 "$T/out" | grep -q "^proxytrace analyze: INCOMPLETE — nothing is stuck in what was read" ||
  fail "a cut stall dump reads: $(head -1 "$T/out")"
grep -q "rank 3: dump [0-9]* has no end: cut" "$T/out" || fail "the cut is not listed"
grep -q "ranks 0-2 of communicator [0-9]*: no dump" "$T/out" || fail "the missing ranks are not listed"
$RUN "$PT" analyze --json "$T/cut" >"$T/cut.json" 2>/dev/null; rc=$?
[ $rc -eq 4 ] || fail "--json of a cut dump exits $rc, want 4"
# the same cut file under a planted name holding ESC ]0; (a window title):
# the report names it with the escape shown, never the control bytes
esc=$(printf '\033')
mkdir "$T/planted"
cp "$T/cut/r3.jsonl" "$T/planted/x${esc}]0;owned${esc}[2J.jsonl"
$RUN "$PT" analyze -v "$T/planted" >"$T/out" 2>&1; rc=$?
[ $rc -eq 4 ] || fail "the planted cut file exits $rc, want 4"
grep -q 'x\\x1b\]0;owned\\x1b\[2J\.jsonl' "$T/out" || fail "the planted name is not shown escaped: $(grep -a cut "$T/out")"
! grep -q "$esc" "$T/out" || fail "the report holds an ESC byte from a file name"
python3 - "$T/cut.json" <<'PY' || fail "the JSON of a cut dump"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "incomplete", d["verdict"]
kinds = {(g["kind"], g["rank"]) for g in d["gaps"]}
assert ("cut", 3) in kinds and ("short", 3) in kinds and ("missing", 0) in kinds, kinds
assert d["finished"] == {"cleanRanks": 0, "ranks": 8}, d["finished"]
PY
# the text twin, cut the same way
rm "$T/cut/r3.jsonl"
head -c 5000 "$T/files"/*-r3-*.txt >"$T/cut/r3.txt"
$RUN "$PT" analyze "$T/cut" >"$T/out" 2>&1; rc=$?
[ $rc -eq 4 ] || fail "a cut text dump exits $rc, want 4: $(head -3 "$T/out")"
grep -q "rank 3: dump [0-9]* has no end: cut" "$T/out" || fail "the cut text dump is not listed"

# ---- a hang beside ranks without a dump: still a hang ----
mkdir "$T/part"
cp "$T/files"/*.jsonl "$T/part/"
rm "$T/part"/*-r5-* "$T/part"/*-r6-*
$RUN "$PT" analyze "$T/part" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "a hang beside missing ranks exits $rc, want 1"
head -1 "$T/out" | grep -q "HANG" || fail "a hang beside missing ranks reads $(head -1 "$T/out")"
grep -q "possible culprits too (the dumps cannot clear them): ranks 5-6" "$T/out" ||
  fail "the missing ranks are not named as possible culprits"

# ---- subfolders, as a Slurm job leaves them ----
mkdir -p "$T/nested/node0" "$T/nested/node1" "$T/nested/node1/.old"
for r in 0 1 2 3; do cp "$T/files"/*-r$r-*.jsonl "$T/nested/node0/"; done
for r in 4 5 6 7; do cp "$T/files"/*-r$r-*.jsonl "$T/nested/node1/"; done
echo garbage >"$T/nested/node1/.old/x.jsonl"
$RUN "$PT" analyze -v "$T/nested" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "dumps in subfolders exit $rc, want 1: $(head -1 "$T/out")"
sed -n 2p "$T/out" | grep -q "^culprit 1: a GPU of .* one of ranks 0-3, .* rank 3 " || fail "dumps in subfolders: $(sed -n 2p "$T/out")"
grep -q "nested/node1/.old: hidden: not read" "$T/out" || fail "-v does not list what was skipped"

# ---- --chrome keeps the evidence ----
mkdir "$T/h"
cp "$T/files"/*.jsonl "$T/h/"
victim=$(ls "$T/h"/*-r3-*.jsonl)
cp "$victim" "$T/victim.before"
$RUN "$PT" analyze --chrome "$victim" "$T/h" >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 2 ] || fail "--chrome onto an input exits $rc, want 2"
cmp -s "$victim" "$T/victim.before" || fail "--chrome overwrote an input"
grep -q "is one of the inputs: not overwritten" "$T/err" || fail "--chrome onto an input says: $(cat "$T/err")"
[ ! -s "$T/out" ] || fail "--chrome onto an input still printed a report"
$RUN "$PT" analyze --chrome "$T/no-such-dir/x.json" "$T/h" >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 2 ] || fail "--chrome into a missing folder exits $rc, want 2"
[ ! -s "$T/out" ] || fail "an output that cannot be written still printed the report first"
grep -q "cannot write --chrome" "$T/err" || fail "--chrome failure says: $(cat "$T/err")"
$RUN "$PT" analyze --chrome "$T/trace.json" "$T/h" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] && [ -s "$T/trace.json" ] || fail "--chrome to a new file exits $rc"
ls "$T" | grep -q "tmp-" && fail "a temporary file was left beside --chrome's output"

# ---- ranks the plugin did not know (NVIDIA NCCL 2.26): not dead ----
$RUN "$PT" sim --host nccl-2.26 --plugin "$PLUGIN" --nodes 3 --ranks-per-node 5 --channels 2 --ops allreduce:1M \
  --iters 2 --seed 101 --stall 9:0:6 --env PROXYTRACE_DUMP_DIR="$T/u" --env PROXYTRACE_STALL_MS=200 \
  --truth-json "$T/u.truth" --poll-us 100 --hold 0.8 --quiet >"$T/sim.out" 2>&1
if ls "$T/u"/*-r-1-*.jsonl >/dev/null 2>&1; then
  $RUN "$PT" analyze --json --expect "$T/u.truth" "$T/u" >"$T/u.json" 2>"$T/u.err"; rc=$?
  [ $rc -eq 1 ] || fail "the 2.26 job exits $rc: $(cat "$T/u.err")"
  grep -q "agrees with the ground truth" "$T/u.err" || fail "rank-unknown dumps: $(cat "$T/u.err")"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['missing_ranks']==[], d['missing_ranks']; \
assert all(c['cause']!='rank_missing' for c in d['culprits']); assert d['unknown_rank_dumps'][0]['covered']" \
    "$T/u.json" || fail "a rank-unknown dump is read as a missing rank"
fi
# ---- a cut file is not a rank that never called the collective ----
# RCCL 16x2, two GPUs stalled; rank 26's newest file cut inside its second
# dump, its first (a whole hook dump of the hung call) before it: the
# report is the uncut one's, and the cut is named with the dump read
# instead. Then the rank's only dump cut inside its records: rank 26 is
# named possible, as cut — never "never called" nor dead.
$RUN "$PT" sim --host rccl --plugin "$PLUGIN" --nodes 16 --ranks-per-node 2 --channels 4 --seed 555 \
  --stall 21:2:104 --stall 5:0:0 --env PROXYTRACE_DUMP_DIR="$T/c" --env PROXYTRACE_STALL_MS=200 --hold 2 \
  --quiet >"$T/sim.out" 2>&1
ls "$T/c"/*-r26-*[0-9].jsonl >/dev/null 2>&1 || fail "the 16x2 job wrote no dumps of rank 26"
$RUN "$PT" analyze "$T/c" >"$T/whole" 2>&1
grep -q "^culprit 1: a GPU of .* one of ranks 4, 5, .* rank 5 " "$T/whole" || fail "the uncut 16x2 job: $(head -2 "$T/whole")"
cut_at() { # cut_at FILE LINE EXTRA: keep LINE whole lines and EXTRA bytes
  head -c $(($(head -n "$2" "$1" | wc -c) + $3)) "$1" >"$1.cut" && mv "$1.cut" "$1"
}
for f in "$T/c"/*-r26-*[0-9].jsonl "$T/c"/*-r26-*[0-9].txt; do cut_at "$f" 60 37; done
$RUN "$PT" analyze "$T/c" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "the 16x2 job with a cut file exits $rc: $(head -2 "$T/out")"
sed -n '1,/^$/p' "$T/whole" >"$T/whole.head"
sed -n '1,/^$/p' "$T/out" >"$T/out.head"
cmp -s "$T/whole.head" "$T/out.head" || fail "a cut newest dump changes the culprits: $(diff "$T/whole.head" "$T/out.head")"
grep -q "rank 26: dump [0-9]* has no end: cut (.*); dump [0-9]* before it, whole, is read instead" "$T/out" ||
  fail "the set-aside cut dump is not named: $(grep 'rank 26' "$T/out")"
rm "$T/c"/*-r26-*.1.*
for f in "$T/c"/*-r26-*[0-9].jsonl "$T/c"/*-r26-*[0-9].txt; do cut_at "$f" 20 40; done
$RUN "$PT" analyze --json "$T/c" >"$T/c.json" 2>/dev/null
python3 - "$T/c.json" <<'PY' || fail "rank 26's only dump cut"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["culprits"][0]["rank"] == 5, d["culprits"][0]
for c in d["culprits"]:
    if c["rank"] == 26:
        assert c["cause"] not in ("not_entered", "rank_missing") and c["possible"], c
waits = {o["wait"] for e in d["stuck_edges"] for o in (e.get("send"), e.get("recv")) if o and o["peer"] == 26}
assert "peer_behind" not in waits and "peer_cut" in waits, waits
PY
# ---- later evidence settles an earlier stall dump ----
# A healthy 32-rank job whose stall watchdog (5 ms) fires through its
# descheduled proxy threads: hundreds of stall dumps with active ops, then
# every rank's finalize dump with all ops done and its metrics file's final
# record. The later evidence speaks: ok, every rank finished cleanly.
$RUN "$PT" sim --host nccl-2.25 --plugin "$PLUGIN" --nodes 32 --ranks-per-node 1 --channels 4 \
  --ops sendrecv:4M,allreduce:1M --seed 9001 --env PROXYTRACE_DUMP_DIR="$T/l" --env PROXYTRACE_STALL_MS=5 \
  --env PROXYTRACE_METRICS_INTERVAL_MS=100 --noise-deschedule 8:20 --poll-us 200 --truth-json "$T/l.truth" \
  --quiet >"$T/sim.out" 2>&1
[ "$(grep -l '"trigger":"stall"' "$T/l"/*.jsonl | wc -l)" -ge 16 ] || fail "the healthy job's watchdog wrote no stall dumps"
$RUN "$PT" analyze --expect "$T/l.truth" "$T/l" >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 0 ] || fail "a healthy job with stall dumps exits $rc: $(head -3 "$T/out")"
grep -q "^proxytrace analyze: OK — 32/32 ranks finished cleanly" "$T/out" || fail "the healthy job: $(head -1 "$T/out")"
echo "ok"
