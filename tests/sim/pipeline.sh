#!/bin/sh
# A pipeline-parallel group's step (sim --ops pipeline:SIZE): the 1F1B
# schedule of --microbatches over one stage a node, each exchange a group of
# a ncclSend and/or a ncclRecv with one neighbour. Checked on 4 stages, 4
# microbatches, 2 channels, 2 steps: each stage makes as many p2p calls as
# its place gives it (stage s: M + min(3-s, M) exchanges with each
# neighbour it has); under RCCL a stage's opCount counts its own p2p calls
# (so a send and its receive differ) while "seq" is the per-peer sequence,
# the same on both ends of every exchange; the job reads OK. Then, under
# RCCL and NVIDIA NCCL: a GPU that stops in a stage's third exchange with a
# send is named first, with the stages that wait on it as its consequences
# ("follows 1") and no culprit of their own; a receive never posted, a
# stage that dies and one out of the step are named as the ground truth
# says. Then the refusals: a pipeline beside another call or with two ranks
# a node, a --fault-p2p-call past the stage's calls, --microbatches 0; and the note that
# --microbatches without a pipeline does nothing.
# $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
sim() { $RUN "$PT" sim --plugin "$PLUGIN" --quiet --nodes 4 --ranks-per-node 1 --channels 2 --iters 2 \
  --ops pipeline:4M "$@"; }

sim --host rccl --dump-dir "$T/ok" >"$T/ok.out" 2>&1 || fail "a healthy pipeline: $(cat "$T/ok.out")"
python3 - "$T/ok" <<'PY' || exit 1
import glob, json, sys
P, M, iters = 4, 4, 2
ops = {}
for r in range(P):
    f = glob.glob("%s/proxytrace-*-r%d-*.jsonl" % (sys.argv[1], r))[0]
    recs = [json.loads(x) for x in open(f)]
    last = max(x.get("dumpSeq", 0) for x in recs)
    ops[r] = [x for x in recs if x["type"] == "op" and x["dumpSeq"] == last]
for r in range(P):
    # RCCL's opCount: this stage's own p2p count << 1 | 1, one a call (the
    # dump's finished ring may hold the latest only)
    calls = (max(x["opCount"] for x in ops[r]) + 1) // 2
    W = min(P - r - 1, M)
    want = iters * ((M + W) * (r < P - 1) + (M + min(P - r, M)) * (r > 0))
    if calls != want:
        print("FAIL: stage %d made %d p2p calls, want %d" % (r, calls, want)); sys.exit(1)
    if any(x["coll"] not in ("Send", "Recv") or x["seq"] is None for x in ops[r]):
        print("FAIL: stage %d has a send or receive without its per-peer sequence" % r); sys.exit(1)
# every send meets a receive of the same (peer pair, channel, seq) where the
# receiver's dump still holds that far back; the opCounts differ
differ = met = sends = 0
for r in range(P):
    for x in ops[r]:
        if x["dir"] != "send":
            continue
        sends += 1
        theirs = [y for y in ops[x["peer"]] if y["dir"] == "recv" and y["peer"] == r and y["channel"] == x["channel"]]
        if not theirs or x["seq"] < min(y["seq"] for y in theirs):
            continue
        m = [y for y in theirs if y["seq"] == x["seq"]]
        met += 1
        if len(m) != 1:
            print("FAIL: stage %d's send #%d to %d on channel %d meets %d receives" % (r, x["seq"], x["peer"],
                                                                                     x["channel"], len(m)))
            sys.exit(1)
        differ += m[0]["opCount"] != x["opCount"]
if not differ or met * 2 < sends:
    print("FAIL: %d of %d sends met, %d by another opCount than their receive's" % (met, sends, differ)); sys.exit(1)
print("ok: the stages' calls as 1F1B gives them; each send meets its receive by sequence (%d by opCount not)" % differ)
PY
$RUN "$PT" analyze "$T/ok" >"$T/ok.txt" 2>&1
grep -q "^proxytrace analyze: OK" "$T/ok.txt" || fail "a healthy pipeline does not read OK: $(head -3 "$T/ok.txt")"

for host in rccl nccl-2.28; do
  d="$T/stall-$host"
  sim --host "$host" --stall 2:0:1 --fault-p2p-call 2 --dump-dir "$d" --truth-json "$d.json" >"$d.out" 2>&1
  [ $? -eq 3 ] || fail "$host: the stalled pipeline did not hang: $(cat "$d.out")"
  $RUN "$PT" analyze "$d" --expect "$d.json" >"$d.txt" 2>&1
  grep -q "agrees with the ground truth: hang, every culprit" "$d.txt" || fail "$host: stall: $(cat "$d.txt")"
  grep -q "^culprit 1: rank 2 .*its GPU stopped producing data" "$d.txt" || fail "$host: stall: not first: $(head -3 "$d.txt")"
  grep -q "^also" "$d.txt" && fail "$host: stall: a culprit of its own beside the stage that stopped: $(head -6 "$d.txt")"
  grep -q "^follows 1: rank 1 .* is behind: it has not called its " "$d.txt" ||
    fail "$host: stall: the upstream stage does not follow from it: $(head -6 "$d.txt")"
  $RUN "$PT" analyze --json "$d" >"$d.a.json" 2>/dev/null
  python3 - "$d.a.json" <<'PY' || fail "$host: stall: the JSON's chain"
import json, sys
doc = json.load(open(sys.argv[1]))
c = doc["culprits"]
assert c[0]["rank"] == 2 and c[0]["consequenceOf"] is None, c[0]
assert all(q["consequenceOf"] == 1 and "in another call of its own" in q["chain"] for q in c[1:]), c[1:]
PY
  for f in "--no-recv 3" "--no-recv 1 --fault-p2p-call 4" "--kill 1:0" "--skip 2"; do
    d="$T/f-$host-$(echo "$f" | tr -c 'a-z0-9' _)"
    sim --host "$host" $f --dump-dir "$d" --truth-json "$d.json" >"$d.out" 2>&1
    [ $? -eq 3 ] || fail "$host $f: no hang: $(cat "$d.out")"
    $RUN "$PT" analyze "$d" --expect "$d.json" >"$d.txt" 2>&1
    grep -q "agrees with the ground truth" "$d.txt" || fail "$host $f: $(grep -v '^ ' "$d.txt" | head -8)"
  done
done
echo "ok: a stage that stops is named first, the stages waiting on it follow from it; faults named as the truth says"

sim --ops pipeline:4M,allreduce:8M >"$T/r1" 2>&1; [ $? -eq 2 ] || fail "a pipeline beside another call ran"
grep -q "the only call, one stage a node" "$T/r1" || fail "refusal: $(cat "$T/r1")"
sim --ranks-per-node 2 >"$T/r2" 2>&1; [ $? -eq 2 ] || fail "a pipeline with two ranks a node ran"
sim --stall 3:0:1 --fault-p2p-call 40 >"$T/r3" 2>&1; [ $? -eq 2 ] || fail "a fault past the stage's calls ran"
grep -q "stage 3 has no call 40 in a step that fits it" "$T/r3" || fail "refusal: $(cat "$T/r3")"
sim --microbatches 0 >"$T/r5" 2>&1; [ $? -eq 2 ] || fail "--microbatches 0 ran"
grep -q "microbatches.*an integer 1..64" "$T/r5" || fail "refusal: $(cat "$T/r5")"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --iters 1 --microbatches 3 >"$T/r4" 2>&1
grep -q "note: --microbatches does nothing without a pipeline" "$T/r4" || fail "no note on --microbatches alone: $(cat "$T/r4")"
echo "ok: pipeline refusals"
