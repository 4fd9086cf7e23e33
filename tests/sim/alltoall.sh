#!/bin/sh
# An all-to-all (sim --ops alltoall:SIZE), as PyTorch's all_to_all and an
# expert-parallel MoE layer call it: one group of a ncclSend and a ncclRecv
# to each other rank. Checked on a 4x2 job: every rank has a send and a
# receive op to each rank off its node on every channel (none to its node's
# own), each a connection of its own (its step base counts that peer's
# steps only), its dumps list the P2p calls with their peers, and the job
# reads OK; a GPU that stops, a receive never posted and a rank that dies
# are named as the ground truth says; beside a send/recv, the truth's
# opCount (NVIDIA: per peer) is the dumps'; a job over 256 ranks is refused.
# $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
sim() { $RUN "$PT" sim --plugin "$PLUGIN" --quiet --nodes 4 --ranks-per-node 2 --channels 2 --iters 2 "$@"; }

sim --host rccl --ops alltoall:64M --dump-dir "$T/ok" >"$T/ok.out" 2>&1 || fail "a healthy all-to-all: $(cat "$T/ok.out")"
python3 - "$T/ok" <<'PY' || exit 1
import glob, json, sys
for r in range(8):
    f = glob.glob("%s/proxytrace-*-r%d-*.jsonl" % (sys.argv[1], r))[0]
    recs = [json.loads(x) for x in open(f)]
    last = max(x.get("dumpSeq", 0) for x in recs)
    ops = [x for x in recs if x["type"] == "op" and x["dumpSeq"] == last and x["opCount"] == 3]  # RCCL: p2p call 1
    got = sorted((x["dir"], x["peer"], x["channel"]) for x in ops)
    off = [p for p in range(8) if p // 2 != r // 2]
    want = sorted((d, p, c) for d in ("send", "recv") for p in off for c in (0, 1))
    if got != want:
        print("FAIL: rank %d's second all-to-all: ops %s, want one each way to %s on each channel" % (r, got, off))
        sys.exit(1)
    # a connection per peer: the receive's tail counts that peer's steps
    # of both calls only (shared by the peers, it would count all of them)
    bad = [x for x in ops if x["dir"] == "recv" and x["counters"]["recvTail"] != 2 * x["nSteps"]]
    if bad:
        print("FAIL: rank %d: receive tails %s, want 2 x %d" % (r, [x["counters"]["recvTail"] for x in bad],
                                                               bad[0]["nSteps"]))
        sys.exit(1)
    p2p = [x for x in recs if x["type"] == "p2p" and x["dumpSeq"] == last]
    if any(x["peer"] == r for x in p2p) or len({x["peer"] for x in p2p}) < 2 or {x["func"] for x in p2p} != {"Send", "Recv"}:
        print("FAIL: rank %d's P2p calls %s" % (r, [(x["func"], x["peer"]) for x in p2p])); sys.exit(1)
print("ok: every rank has a send and a receive to each rank off its node on each channel, a connection each, "
      "and P2p calls by peer")
PY
$RUN "$PT" analyze "$T/ok" | head -1 | grep -q "^proxytrace analyze: OK" || fail "healthy: $($RUN "$PT" analyze "$T/ok" | head -2)"

for f in "--stall 3:0:2" "--no-recv 6:1:5" "--kill 2:4" "--stall 1:all:0 --host rccl"; do
  d="$T/f$(echo "$f" | tr -c 'a-z0-9' '_')"
  # shellcheck disable=SC2086
  sim --ops alltoall:128M $f --dump-dir "$d" --truth-json "$d.truth" >"$d.out" 2>&1
  [ $? -eq 3 ] || fail "$f: the job did not hang: $(cat "$d.out")"
  $RUN "$PT" analyze --expect "$d.truth" "$d" >"$d.an" 2>&1
  grep -q "agrees with the ground truth: hang, every culprit" "$d.an" ||
    fail "$f: $(grep -E '^(culprit|also|ground)' "$d.an" | head -4)"
  echo "ok: all-to-all $f: $(grep '^culprit 1' "$d.an" | cut -c1-100)"
done

# NVIDIA numbers p2p calls per peer and direction: beside a send/recv,
# the all-to-all's peers are at other counts than the send/recv's, and the
# truth's opCount of the hung call is the dumps'
d="$T/mixed"
sim --host nccl-2.28 --ops sendrecv:4M,alltoall:128M --fault-call 1 --stall 3:0:2 --dump-dir "$d" \
  --truth-json "$d.truth" >"$d.out" 2>&1
[ $? -eq 3 ] || fail "mixed: the job did not hang: $(cat "$d.out")"
want=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["hungOpCount"])' "$d.truth")
$RUN "$PT" analyze "$d" | head -1 | grep -q "in opCount $want (" ||
  fail "mixed: the truth's hung opCount $want is not the dumps': $($RUN "$PT" analyze "$d" | head -1)"
echo "ok: beside a send/recv, the hung all-to-all's opCount ($want) is the truth's"

$RUN "$PT" sim --plugin "$PLUGIN" --quiet --nodes 65 --ranks-per-node 4 --ops alltoall:1M >"$T/big" 2>&1
[ $? -ne 0 ] && grep -q "an alltoall job has at most 256 ranks, not 260" "$T/big" || fail "260 ranks: $(cat "$T/big")"
echo "alltoall: all checks passed"
