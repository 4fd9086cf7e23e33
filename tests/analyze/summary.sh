#!/bin/sh
# analyze --summary (docs/analyze.md, "Past one machine"): a job of 2 048
# ranks (512 under qemu, where each of its programs starts slowly, and
# under a sanitizer, whose checks see the same code at either size) made by
# the bench's generator (bench/gen_job.c) from two emulated
# 4 x 8 jobs, one node folder per node; a summary of each node's folder;
# the analysis of the summaries against the analysis of the folders (the
# same JSON document but for the inputs read, the same exit status), and a
# summary of the summaries (a second level) the same; a desync's progress
# lines carried from JSON and from text dumps; a node with a cut
# file and an input that cannot be read carries both gaps; the options
# --summary refuses. The fault matrix checks the same equality on every
# job it draws (fault-matrix.sh, --summaries). $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
GEN="$(cd "$B" && pwd)/bench/gen_job"
py=$(command -v python3) || { echo "summary: no python3"; exit 1; }

$RUN "$PT" sim --plugin "$PLUGIN" --nodes 4 --ranks-per-node 8 --stall 3:0:5 --comm-dump 2 --dump-dir "$T/hung" \
  --quiet --debug WARN >/dev/null 2>&1
[ $? -eq 3 ] || fail "the hung template did not hang"
$RUN "$PT" sim --plugin "$PLUGIN" --nodes 4 --ranks-per-node 8 --comm-dump 2 --dump-dir "$T/ok" --quiet --debug WARN \
  >/dev/null 2>&1 || fail "the healthy template failed"
ranks=2048 stalled=1000
[ -n "$RUN" ] && ranks=512 stalled=300
case "$(readelf -d "$PT" 2>/dev/null)" in *libasan*|*libtsan*) ranks=512 stalled=300 ;; esac
nodes=$((ranks / 8))
last=$(printf "node%05d" $((nodes - 1)))
$RUN "$GEN" "$T/hung" "$T/ok" $ranks $stalled "$T/job" || fail "gen_job failed"
[ "$(ls "$T/job" | wc -l)" -eq $nodes ] || fail "gen_job wrote $(ls "$T/job" | wc -l) node folders, want $nodes"

# The JSON documents of two analyses, equal but for the inputs read.
same() {
  "$py" - "$1" "$2" <<'PY' || fail "$3"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
diff = [k for k in sorted(set(a) | set(b)) if k not in ("inputs", "stats", "skipped") and a.get(k) != b.get(k)]
if diff:
    print("differs in", diff[0], json.dumps(a.get(diff[0]))[:300], "/", json.dumps(b.get(diff[0]))[:300])
    sys.exit(1)
assert a["verdict"] == "hang" or "gaps" in a, a["verdict"]
PY
}

mkdir "$T/sum" "$T/sum2"
for n in "$T"/job/node*; do
  $RUN "$PT" analyze --summary "$T/sum/${n##*/}.jsonl" "$n" >"$T/out" || fail "analyze --summary $n exits $?: $(cat "$T/out")"
done
grep -q "^proxytrace analyze: summary written to $T/sum/$last.jsonl (of [0-9]* dumps" "$T/out" ||
  fail "analyze --summary says: $(cat "$T/out")"
grep -q '"files":8,' "$T/sum/node00000.jsonl" || fail "a node's summary does not count its 8 files"
$RUN "$PT" analyze --json "$T/job" >"$T/whole.json"; rc_whole=$?
$RUN "$PT" analyze --json "$T/sum" >"$T/via.json"; rc_via=$?
[ $rc_whole -eq 1 ] || fail "the generated job's analysis exits $rc_whole, want 1 (a hang)"
[ $rc_via -eq $rc_whole ] || fail "the summaries' analysis exits $rc_via, the dumps' $rc_whole"
same "$T/whole.json" "$T/via.json" "the summaries' analysis differs from the dumps'"
"$py" -c "import json,sys; d=json.load(open(sys.argv[1])); c=d['culprits'][0]; assert int(sys.argv[2]) in [c['rank']]+c.get('candidates',[]), c" \
  "$T/via.json" $stalled || fail "the summaries' culprit is not the node of rank $stalled"
# Summaries of summaries: 16 nodes each.
i=0
for s in "$T"/sum/*.jsonl; do
  g=$((i / 16)); mkdir -p "$T/grp$g"; cp "$s" "$T/grp$g/"; i=$((i + 1))
done
for g in "$T"/grp*; do $RUN "$PT" analyze --summary "$T/sum2/${g##*/}.jsonl" "$g" >/dev/null || fail "a second-level summary"; done
grep -q '"files":128,' "$T/sum2/grp0.jsonl" || fail "a second-level summary does not count the 128 files of its 16 nodes"
$RUN "$PT" analyze --json "$T/sum2" >"$T/via2.json"
same "$T/whole.json" "$T/via2.json" "the second-level summaries' analysis differs from the dumps'"
"$py" -c "
import json,sys
a,b=(json.load(open(p)) for p in sys.argv[1:3])
for k in ('lines','bytes','records','dumps','duplicates','errors','passedOver','textCopiesNotRead'):
    assert a['stats'][k]==b['stats'][k], (k, a['stats'][k], b['stats'][k])
" "$T/whole.json" "$T/via2.json" || fail "the summaries do not carry their nodes' input figures"
[ "$(du -sk "$T/sum" | cut -f1)" -lt "$(du -sk "$T/job" | cut -f1)" ] || fail "the summaries are not smaller than the dumps"

# A node with a cut file and an input that cannot be read: both gaps.
mkdir "$T/bad"
cp "$T"/job/node00003/* "$T/bad/"
f=$(ls "$T"/bad/*.jsonl | head -1)
head -c 3000 "$f" >"$T/cut" && mv "$T/cut" "$f" && rm "${f%.jsonl}.txt" # its text copy would be read whole
$RUN "$PT" analyze --summary "$T/bad.jsonl" "$T/bad" "$T/nonexistent" >/dev/null || fail "summary of a damaged node"
$RUN "$PT" analyze --json "$T/bad" "$T/nonexistent" >"$T/bw.json"; rc_w=$?
$RUN "$PT" analyze --json "$T/bad.jsonl" >"$T/bv.json"; rc_v=$?
[ $rc_v -eq $rc_w ] || fail "a damaged node's summary exits $rc_v, its files $rc_w"
"$py" - "$T/bw.json" "$T/bv.json" <<'PY' || fail "a damaged node's gaps differ through its summary"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
kinds = sorted(g["kind"] for g in a["gaps"])
assert "cut" in kinds and "unreadable" in kinds, kinds
assert a["gaps"] == b["gaps"], (a["gaps"], b["gaps"])
assert a["culprits"] == b["culprits"]
PY

# A desync: the progress lines travel (the calls each rank made), from
# JSON dumps and from text dumps alone, and name the same rank.
$RUN "$PT" sim --plugin "$PLUGIN" --host nccl-2.30 --nodes 3 --ranks-per-node 1 --channels 2 --ops allreduce:256K \
  --iters 2 --mismatch 2:allgather --dump-dir "$T/dsl" --env PROXYTRACE_DUMP_DIR="$T/ds" \
  --env PROXYTRACE_DUMP_INTERVAL_MS=50 --env PROXYTRACE_STALL_MS=100 --hold 0.4 --quiet >/dev/null 2>&1
[ $? -eq 3 ] || fail "the desync job did not hang"
mkdir "$T/dstxt" && cp "$T"/ds/*.txt "$T/dstxt/"
for d in ds dstxt; do
  $RUN "$PT" analyze --summary "$T/$d.sum.jsonl" "$T/$d" >/dev/null || fail "summary of the desync job ($d)"
  $RUN "$PT" analyze --json "$T/$d" >"$T/$d.w.json"
  $RUN "$PT" analyze --json "$T/$d.sum.jsonl" >"$T/$d.v.json"
  "$py" - "$T/$d.w.json" "$T/$d.v.json" <<'PY' || fail "the desync job's culprits differ through its summary ($d)"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["culprits"][0]["cause"] == "mismatch" and a["culprits"][0]["rank"] == 2, a["culprits"][0]
assert a["culprits"] == b["culprits"], (a["culprits"][0], b["culprits"][0])
PY
done

# Options: --summary writes the summary only, and never over an input.
$RUN "$PT" analyze --summary "$T/x.jsonl" --json "$T/bad" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--summary with --json exits $rc, want 2"
grep -q "writes the summary only" "$T/out" || fail "--summary with --json says: $(cat "$T/out")"
cp "$T/bad.jsonl" "$T/keep.jsonl"
$RUN "$PT" analyze --summary "$T/bad.jsonl" "$T/bad.jsonl" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--summary over its input exits $rc, want 2"
grep -q "is one of the inputs" "$T/out" || fail "--summary over its input says: $(cat "$T/out")"
cmp -s "$T/bad.jsonl" "$T/keep.jsonl" || fail "--summary over its input changed it"
$RUN "$PT" analyze --summary "$T/no/such/dir/x.jsonl" "$T/bad" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--summary into a missing folder exits $rc, want 2"
grep -q "cannot write --summary" "$T/out" || fail "--summary into a missing folder says: $(cat "$T/out")"
echo "ok"
