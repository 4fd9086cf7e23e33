#!/bin/sh
# A 3D-parallel job (sim --layout 2x2x2): 8 processes on 4 nodes, each
# holding a TP, a PP and a DP communicator; the GPU of rank 1 of DP group 1
# (process 5: node2, GPU 1) stops in iteration 1. The hang spreads to the
# TP, PP and DP groups whose members wait on a process stuck elsewhere.
# Checked: the emulator's files carry one identity per process in every
# communicator it holds; its ground truth names the origin and, per
# communicator, the ranks stuck elsewhere; `analyze` names the origin
# first, and every other communicator's culprit as a consequence of it
# (text "follows 1:" with the chain, JSON consequenceOf, the page's
# consequence blocks), none as a culprit of its own, and the same from
# per-node summaries; the same job without the fault reads OK; the same
# with expert parallelism, the fault in an EP group's all-to-all; a DP
# reduce-scatter; a killed process; a skipped TP call; a GPU that stops
# inside its TP group.
# Then the refusals: --layout without a
# folder, faults without --fault-comm, an --ep that does not divide DP or
# comes without --layout, a --dp-op without --layout or of another call.
# $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
sim() { $RUN "$PT" sim --plugin "$PLUGIN" --quiet --layout 2x2x2 --iters 3 --poll-us 200 --hold 0.4 \
  --env PROXYTRACE_DUMP_INTERVAL_MS=50 --env PROXYTRACE_STALL_MS=100 "$@"; }

mkdir "$T/hang"
sim --fault-comm dp:1 --stall 1:0:3 --fault-iter 1 --dump-dir "$T/hang" --truth-json "$T/truth.json" >"$T/sim.out" 2>&1
[ $? -eq 3 ] || fail "the job did not hang: $(cat "$T/sim.out")"
# one identity per process: process 5 is node2, pid 1035, in TP, PP and DP
# (a PP group's 1F1B step fills its files past the cap: the older generation, .1.jsonl, is the same one)
n=$(ls "$T/hang"/proxytrace-node2-1035-r*.jsonl | grep -vc '\.1\.jsonl$')
[ "$n" -eq 3 ] || fail "process 5 has $n JSON files, not one per communicator: $(ls "$T/hang" | head)"
for d in tp0 tp3 pp0 pp3 dp0 dp3; do [ -d "$T/hang/$d" ] || fail "no log folder $d"; done
python3 - "$T/truth.json" <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
def fail(m):
    print("FAIL: truth: " + m); sys.exit(1)
if t["verdict"] != "hang" or t["origin"]["communicator"] != "dp1" or t["origin"]["iteration"] != 1:
    fail("origin %s" % t["origin"])
c = {x["name"]: x for x in t["communicators"]}
if len(c) != 12 or c["dp1"]["ranks"] != [1, 5] or not c["dp1"]["faulty"]:
    fail("communicators %s" % sorted(c))
p = {x["process"]: x for x in t["processList"]}
if (p[5]["host"], p[5]["pid"], p[5]["gpu"]) != ("node2", 1035, 1):
    fail("process 5 is %s" % p[5])
# tp0 = processes 0, 1: process 1 is stuck in dp1 in iteration 1, so it
# never enters tp0's call of iteration 2
ne = c["tp0"]["notEntered"]
if c["tp0"]["hungIteration"] != 2 or ne != [{"rank": 1, "process": 1, "stuckIn": "dp1", "stuckIteration": 1}]:
    fail("tp0: %s %s" % (c["tp0"]["hungIteration"], ne))
if c["tp1"]["hungIteration"] is not None or c["dp1"]["notEntered"]:
    fail("tp1 or dp1: %s %s" % (c["tp1"], c["dp1"]["notEntered"]))
print("ok: the truth names dp1's fault and where each waiting process is")
PY
$RUN "$PT" analyze "$T/hang" >"$T/an.txt" 2>&1
[ $? -eq 1 ] || fail "analyze did not say hang: $(head -3 "$T/an.txt")"
grep -q "^culprit 1: rank 1 (node2, pid 1035), channel 0: its GPU stopped producing data" "$T/an.txt" ||
  fail "the origin is not culprit 1: $(sed -n 2,4p "$T/an.txt")"
grep -q "^also " "$T/an.txt" && fail "a second culprit of its own: $(grep '^also' "$T/an.txt" | head -3)"
follows=$(grep -c "^follows 1: " "$T/an.txt")
[ "$follows" -ge 6 ] || fail "$follows consequences, want one per other hung communicator"
grep -q "because communicator tp0 (.*) waits on rank 1 -> its process node0:1007 is rank 0 of communicator dp1" \
  "$T/an.txt" || fail "no chain from tp0 to dp1: $(grep -A1 '^follows' "$T/an.txt" | head -4)"
$RUN "$PT" analyze --json "$T/hang" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = d["culprits"]
first = c[0]
assert first["consequenceOf"] is None and first["rank"] == 1 and first["cause"] == "gpu_not_producing", first
for x in c[1:]:
    assert x["consequenceOf"] == 1 and "culprit 1" in x["chain"], x
print("ok: JSON: %d consequences of culprit 1" % (len(c) - 1))' || fail "JSON"
$RUN "$PT" analyze --html "$T/page.html" "$T/hang" >/dev/null 2>&1
c=$(grep -c 'class="consequence"' "$T/page.html")
[ "$c" -ge 6 ] && grep -q 'class="culprit" data-culprit-rank="1"' "$T/page.html" &&
  ! grep -q '<b>also ' "$T/page.html" || fail "the page: $c consequences, or another culprit of its own"
echo "ok: analyze names the origin and $follows consequences (text, JSON and the page)"
# Past one machine: a summary of each node's files (analyze --summary), and
# the summaries analyzed together give the same culprits and chains.
mkdir "$T/sums"
for n in 0 1 2 3; do
  mkdir "$T/node$n"
  ln "$T/hang"/proxytrace-node$n-* "$T/node$n/" || fail "node$n has no files"
  $RUN "$PT" analyze --summary "$T/sums/node$n.sum" "$T/node$n" >/dev/null 2>&1 || fail "summary of node$n"
done
for src in hang sums; do
  $RUN "$PT" analyze --json "$T/$src" 2>/dev/null | python3 -c '
import json, sys
for c in json.load(sys.stdin)["culprits"]:
    print(c["commHash"], c["rank"], c["cause"], c["consequenceOf"], c["chain"])' >"$T/$src.culprits"
done
[ -s "$T/sums.culprits" ] && cmp -s "$T/hang.culprits" "$T/sums.culprits" ||
  fail "the summaries' culprits differ: $(diff "$T/hang.culprits" "$T/sums.culprits" | head -4)"
echo "ok: per-node summaries give the same $(wc -l <"$T/sums.culprits") culprits and chains"

# the same job, no fault: every communicator completes
mkdir "$T/ok"
sim --dump-dir "$T/ok" >"$T/ok.out" 2>&1 || fail "a healthy layout: $(cat "$T/ok.out")"
$RUN "$PT" analyze "$T/ok" | head -1 | grep -q "^proxytrace analyze: OK" || fail "healthy: $($RUN "$PT" analyze "$T/ok" | head -2)"
echo "ok: without the fault every communicator completes and reads OK"

# Expert parallelism (--ep 2 of a 2x1x4 layout): two EP groups of two
# replicas each, an all-to-all after the TP all-reduce. The GPU of rank 1
# of ep1 (process 3: node1, GPU 1) stops in iteration 1; its TP, PP and DP
# groups wait on it. The truth lists the EP groups, of kind ep, and the
# origin there; analyze names it first, every other culprit a consequence.
mkdir "$T/ep"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --layout 2x1x4 --ep 2 --iters 3 --poll-us 200 --hold 0.4 \
  --env PROXYTRACE_DUMP_INTERVAL_MS=50 --env PROXYTRACE_STALL_MS=100 --fault-comm ep:1 --stall 1:0:1 --fault-iter 1 \
  --dump-dir "$T/ep" --truth-json "$T/ep.json" >"$T/ep.out" 2>&1
[ $? -eq 3 ] || fail "EP: the job did not hang: $(cat "$T/ep.out")"
python3 - "$T/ep.json" <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in t["communicators"]}
eps = sorted(n for n in c if c[n]["kind"] == "ep")
# EP group i of TP place t, replica group e: i = e * TP + t (PP 1)
if t["layout"]["ep"] != 2 or eps != ["ep0", "ep1", "ep2", "ep3"] or c["ep1"]["ranks"] != [1, 3]:
    print("FAIL: EP groups %s, ep1 %s" % (eps, c.get("ep1", {}).get("ranks"))); sys.exit(1)
if t["origin"]["communicator"] != "ep1" or c["ep1"]["truth"]["culprits"][0]["cause"] != "gpu_not_producing":
    print("FAIL: EP origin %s" % t["origin"]); sys.exit(1)
print("ok: EP groups of two replicas, the origin in ep1")
PY
$RUN "$PT" analyze "$T/ep" >"$T/ep.txt" 2>&1
[ $? -eq 1 ] && grep -q "^culprit 1: rank 1 (node1, pid 1021), channel 0: its GPU stopped producing data" "$T/ep.txt" &&
  grep -q "in communicator ep1 " "$T/ep.txt" && ! grep -q "^also " "$T/ep.txt" ||
  fail "EP: the origin is not the only culprit: $(grep -E '^(culprit|also|follows)' "$T/ep.txt" | head -5)"
echo "ok: EP: analyze names the origin in ep1, $(grep -c '^follows 1: ' "$T/ep.txt") consequences"

# A sharded optimizer (--dp-op reducescatter): the DP groups reduce-scatter;
# the GPU that stops there (rank 1 of dp1) is the origin, in a ReduceScatter.
mkdir "$T/rs"
sim --dp-op reducescatter --fault-comm dp:1 --stall 1:0:3 --fault-iter 1 --dump-dir "$T/rs" --truth-json "$T/rs.json" \
  >"$T/rs.out" 2>&1
[ $? -eq 3 ] || fail "reduce-scatter: the job did not hang: $(cat "$T/rs.out")"
python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in t["communicators"]}
assert c["dp1"]["truth"]["hungCallKind"] == "reducescatter", c["dp1"]["truth"]["hungCallKind"]' "$T/rs.json" ||
  fail "reduce-scatter: the truth"
$RUN "$PT" analyze "$T/rs" >"$T/rs.txt" 2>&1
grep -q "^culprit 1: rank 1 (node2, pid 1035), channel 0: its GPU stopped producing data — .*(ReduceScatter)" "$T/rs.txt" &&
  ! grep -q "^also " "$T/rs.txt" || fail "reduce-scatter: $(grep -E '^(culprit|also)' "$T/rs.txt" | head -3)"
echo "ok: a sharded optimizer's reduce-scatter in the DP groups: the origin there"

# A process killed in its DP group (--kill 1:3 in dp1: process 5, node2,
# pid 1035, in iteration 1) dies in every communicator it holds: its files
# keep only what it dumped while it lived — none is a finalize dump, each
# is older than every other process's first stall dump — so each of its
# groups (tp2, pp3, dp1) shows one rank whose dumps stop (none, or stale).
# analyze names it in dp1, where it died (its peers there came to wait
# first on the job's one timeline), its rank without a dump in pp3
# following as likely the same process, and every other culprit a
# consequence.
mkdir "$T/kill"
sim --fault-comm dp:1 --kill 1:3 --fault-iter 1 --dump-dir "$T/kill" --truth-json "$T/kill.json" >"$T/kill.out" 2>&1
[ $? -eq 3 ] || fail "kill: the job did not hang: $(cat "$T/kill.out")"
python3 - "$T/kill" <<'PY' || fail "kill: the dead process's files"
import glob, json, sys
dead, stall = [], []
for f in glob.glob(sys.argv[1] + "/*.jsonl"):
    for line in open(f):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("type") != "dump":
            continue
        if o["pid"] == 1035:
            dead.append(o)
        elif o["trigger"] == "stall":
            stall.append(o)
assert stall, "no stall dump"
first_stall = min(o["time_ns"] for o in stall)
late = [o for o in dead if o["trigger"] == "finalize" or o["time_ns"] >= first_stall]
assert not late, "dumps after it died: %s" % [(o["commHash"], o["trigger"], o["time_ns"]) for o in late]
print("ok: kill: the dead process's %d dumps were all taken while it lived" % len(dead))
PY
$RUN "$PT" analyze --json "$T/kill" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = {"8142242121119979856": "tp2", "5418903597749699306": "pp3", "3756978962554551365": "dp1"}
own = [c for c in d["culprits"] if c["consequenceOf"] is None]
assert len(own) == 1 and names.get(own[0]["commHash"]) == "dp1" and own[0]["rank"] == 1, own
same = [c for c in d["culprits"] if "likely the same process" in (c.get("chain") or "")]
assert [(names.get(c["commHash"]), c["rank"], c["cause"]) for c in same] == [("pp3", 0, "rank_missing")], same
print("ok: kill: the dead process is one culprit, in dp1, its rank without a dump in pp3 likely the same, "
      "%d consequences" % (len(d["culprits"]) - len(own)))' || fail "kill: the analysis"

# A process that never makes its TP call of iteration 1 (--skip 1 in tp2:
# process 5 again) is absent from its PP and DP groups' next calls too;
# its TP peer came to wait first on the job's timeline: analyze names it
# in tp2, the PP and DP groups following it.
mkdir "$T/skip"
sim --fault-comm tp:2 --skip 1 --fault-iter 1 --dump-dir "$T/skip" >"$T/skip.out" 2>&1
[ $? -eq 3 ] || fail "skip: the job did not hang: $(cat "$T/skip.out")"
$RUN "$PT" analyze "$T/skip" >"$T/skip.txt" 2>&1
grep -q "^culprit 1: rank 1 never called AllReduce 8 MiB float32, collective call #1" "$T/skip.txt" &&
  grep -q "^    in communicator tp2 " "$T/skip.txt" && ! grep -q "^also " "$T/skip.txt" ||
  fail "skip: $(grep -E '^(culprit|also|    in comm)' "$T/skip.txt" | head -3)"
echo "ok: skip: the process that skipped its TP call is named there, its other groups following"

# A GPU that stops inside its TP group (tp1: node1, NVLink, no proxy op):
# the group's own run hangs, its ranks' kernels stay in the call, and the
# analysis names the node's group first (every rank a candidate: no record
# shows which GPU), the PP and DP groups' culprits following it.
mkdir "$T/tp"
sim --host nccl-2.28 --fault-comm tp:1 --stall 1:0:1 --fault-iter 1 --dump-dir "$T/tp" --truth-json "$T/tp.json" >"$T/tp.out" 2>&1
[ $? -eq 3 ] || fail "tp stall: the job did not hang: $(cat "$T/tp.out")"
$RUN "$PT" analyze --json "$T/tp" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = json.load(open(sys.argv[1]))
tp1 = next(c for c in t["communicators"] if c["name"] == "tp1")
assert tp1["truth"]["verdict"] == "hang" and tp1["truth"]["culprits"][0]["exact"] is False, tp1["truth"]
c = d["culprits"]
assert c[0]["commHash"] == tp1["commHash"] and c[0]["cause"] == "stopped" and sorted(c[0]["candidates"]) == [0, 1], c[0]
assert all(q["consequenceOf"] == 1 for q in c[1:]) and len(c) > 1, c[1:]
print("ok: a GPU stopped inside its TP group: that group first, %d consequences" % (len(c) - 1))' "$T/tp.json" ||
  fail "tp stall: the analysis"

# refusals
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --layout 2x2x2 >"$T/e1" 2>&1
[ $? -eq 2 ] && grep -q "give --dump-dir" "$T/e1" || fail "no folder: $(cat "$T/e1")"
sim --stall 0:0:0 --dump-dir "$T/ok" >"$T/e2" 2>&1
[ $? -eq 2 ] && grep -q "needs --fault-comm" "$T/e2" || fail "no --fault-comm: $(cat "$T/e2")"
$RUN "$PT" sim --plugin "$PLUGIN" --layout 2x2 >"$T/e4" 2>&1
[ $? -eq 2 ] && grep -q "TPxPPxDP" "$T/e4" || fail "a bad layout: $(cat "$T/e4")"
# the faults' ranks are the faulty communicator's: rank 9 of a DP group of
# 10 processes is one (the single job's default shape has 8 ranks), rank 10
# is not (the folder is made)
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --layout 1x1x10 --fault-comm dp:0 --stall 10:0:0 --dump-dir "$T/e5d" \
  >"$T/e5" 2>&1
[ $? -eq 2 ] && grep -q "fault on rank 10, but the job has ranks 0..9" "$T/e5" || fail "rank 10 of 10: $(cat "$T/e5")"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --layout 1x1x10 --fault-comm dp:0 --stall 9:0:0 --iters 1 --poll-us 200 \
  --hang-polls 5 --dump-dir "$T/e6d" >"$T/e6" 2>&1
[ $? -eq 3 ] || fail "rank 9 of a DP group of 10: $(cat "$T/e6")"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --layout 1x1x6 --ep 4 --dump-dir "$T/e7d" >"$T/e7" 2>&1
[ $? -eq 2 ] && grep -q "ep 4 must divide the layout's DP 6" "$T/e7" || fail "--ep 4 of DP 6: $(cat "$T/e7")"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --ep 2 >"$T/e8" 2>&1
[ $? -eq 2 ] && grep -q "ep needs --layout" "$T/e8" || fail "--ep without --layout: $(cat "$T/e8")"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --dp-op reducescatter >"$T/e9" 2>&1
[ $? -eq 2 ] && grep -q "dp-op needs --layout" "$T/e9" || fail "--dp-op without --layout: $(cat "$T/e9")"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --layout 2x2x2 --dp-op reduce >"$T/e10" 2>&1
[ $? -eq 2 ] && grep -q "allreduce or reducescatter" "$T/e10" || fail "--dp-op reduce: $(cat "$T/e10")"
echo "ok: layout refusals"
