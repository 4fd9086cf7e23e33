#!/bin/sh
# `proxytrace analyze` as a user runs it: exit statuses (0 nothing wrong,
# 1 hang or slow, 2 unusable input or bad option, 3 --expect differs), the
# text report, the JSON document and the Chrome trace read back with
# Python's json module (the trace-event schema, not strings), the emulator's
# --truth-json and --expect, the demo's verdict, and the sqlite3 example of
# docs/analyze.md run on JSON-lines dumps. $1: the build folder.
B=${1:-build}
PT="$(cd "$B" && pwd)/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-} # a build for another architecture runs under its emulator
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
DATA="$(dirname "$0")/data"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# ---- options and exit statuses ----
$RUN "$PT" analyze --help >"$T/help" 2>&1 || fail "analyze --help exits $?"
grep -q -- "--chrome" "$T/help" || fail "analyze --help lacks --chrome"
$RUN "$PT" --help | grep -q "analyze" || fail "proxytrace --help does not list analyze"
$RUN "$PT" analyze >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "analyze without a path exits $rc, want 2"
$RUN "$PT" analyze --bogus x >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "analyze --bogus exits $rc, want 2"
grep -q -- "--bogus" "$T/out" || fail "analyze --bogus does not name the option"
$RUN "$PT" analyze --slow-factor 1 "$DATA" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--slow-factor 1 exits $rc, want 2"
grep -q "1.5..1000" "$T/out" || fail "--slow-factor 1 does not say what is accepted"
cp -r "$DATA/ring-stall" "$T/-ring"
(cd "$T" && $RUN "$PT" analyze -- -ring >"$T/out" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "analyze -- -ring (a path after --) exits $rc, want 1"
$RUN "$PT" analyze "$T/none.log" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "analyze of a missing file exits $rc, want 2"
grep -q "none.log: cannot open" "$T/out" || fail "a missing file is not named with its error"

# ---- a stalled ring in the emulator, its legacy dumps, its ground truth ----
$RUN "$PT" sim --plugin "$PLUGIN" --stall 3:0:5 --dump-dir "$T/stall" --truth-json "$T/stall.truth" --quiet \
  >"$T/out" 2>&1; rc=$?
[ $rc -eq 3 ] || fail "the hung sim exits $rc, want 3"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['type']=='truth' and d['verdict']=='hang', d; \
assert d['culprits']==[{'rank':3,'channel':0,'cause':'gpu_not_producing','exact':True,'fault':0}], d['culprits']" \
  "$T/stall.truth" || fail "--truth-json is not the expected document"
$RUN "$PT" analyze "$T/stall" >"$T/text" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "analyze of a hung job exits $rc, want 1"
head -1 "$T/text" | grep -q "^proxytrace analyze: HANG" || fail "the verdict is not the first line"
# the stall is inside node 0's part of the ring: the headline names the node
# and its ranks, then rank 3, whose send leaves the node
sed -n 2p "$T/text" | grep -q "^culprit 1: a GPU of [^ ]*.* — one of ranks 0-3, the records cannot tell which: .*; rank 3 ([^,]*, pid [0-9]*) sends to rank 4 off the node and waits for its GPU's data" ||
  fail "the culprit is not named first: $(sed -n 2p "$T/text")"
grep -q "3 -> 4 .*send  10/56 .*its GPU to produce data  \[1, origin\]" "$T/text" || fail "no stuck-edge row for 3 -> 4"
$RUN "$PT" analyze --expect "$T/stall.truth" "$T/stall" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "--expect that agrees changes the exit status to $rc"
grep -q "agrees with the ground truth" "$T/out" || fail "--expect does not say it agrees"
sed 's/"culprits":\[{"rank":3,/"culprits":[{"rank":5,/' "$T/stall.truth" >"$T/wrong.truth"
$RUN "$PT" analyze --expect "$T/wrong.truth" "$T/stall" >"$T/out" 2>&1; rc=$?
[ $rc -eq 3 ] || fail "--expect that differs exits $rc, want 3"
$RUN "$PT" analyze --expect "$T/missing.truth" "$T/stall" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--expect of a missing file exits $rc, want 2"

# ---- the headline names the node when the records can name no rank ----
# README's 8x8 job: rank 27's GPU stalls inside node 3's part of channel 0's
# ring (ranks 24-31), where no proxy op sees it; rank 31's send leaves the
# node. A person reads the culprit's line first, so that line names the node
# and all its ranks, never rank 31 alone; the JSON keeps rank 31 in "rank"
# and says "scope": "node".
$RUN "$PT" sim --plugin "$PLUGIN" --nodes 8 --ranks-per-node 8 --stall 27:0:5 --dump-dir "$T/8x8" --quiet \
  >"$T/out" 2>&1; rc=$?
[ $rc -eq 3 ] || fail "the 8x8 stall exits $rc, want 3"
$RUN "$PT" analyze "$T/8x8" >"$T/8x8.txt" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "analyze of the 8x8 stall exits $rc, want 1"
sed -n 2p "$T/8x8.txt" | grep -q "^culprit 1: a GPU of node3 — one of ranks 24-31, the records cannot tell which: channel 0 stops inside the node, where the data passes GPU to GPU without proxy ops; rank 31 (node3, pid [0-9]*) sends to rank 32 off the node and waits for its GPU's data at step [0-9]*/[0-9]* of opCount 6 (AllReduce); 15 stuck ops wait on it; the plugin's progress lines cannot tell which either: each of them called the collective and its kernels took it up" ||
  fail "the 8x8 stall's headline does not name the node first: $(sed -n 2p "$T/8x8.txt")"
# The same dumps as one machine would write them (every rank's host "vm",
# no logs): the host names cannot tell the nodes apart, and the ranks are
# taken to be numbered node by node, which the line says.
mkdir "$T/8x8-vm"
for f in "$T"/8x8/proxytrace-*; do
  sed 's/"host":"node[0-9]*"/"host":"vm"/; s/ host=node[0-9]* / host=vm /' "$f" >"$T/8x8-vm/$(basename "$f" | sed 's/-node[0-9]*-/-vm-/')"
done
$RUN "$PT" analyze "$T/8x8-vm" >"$T/8x8-vm.txt" 2>&1; rc=$?
[ $rc -eq 1 ] && ! grep -q node3 "$T/8x8-vm"/* &&
  sed -n 2p "$T/8x8-vm.txt" | grep -q "^culprit 1: a GPU of #node3 (nodes by rank numbering) — one of ranks 24-31, .*; rank 31 (vm, pid [0-9]*) sends to rank 32 off the node" ||
  fail "one host name for every rank: exit $rc, $(sed -n 2p "$T/8x8-vm.txt")"
$RUN "$PT" analyze --json "$T/8x8" >"$T/8x8.json"; rc=$?
[ $rc -eq 1 ] || fail "--json of the 8x8 stall exits $rc, want 1"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); c=d['culprits'][0]; \
assert (c['rank'], c['cause'], c['scope'], sorted(c['candidates'])) == (31, 'gpu_not_producing', 'node', list(range(24, 32))), c; \
assert c['candidates'][0] == 31, c['candidates']; \
assert c['summary'].startswith('a GPU of ') and 'one of ranks 24-31, the records cannot tell which' in c['summary'], c['summary']; \
assert d['summary'] == c['summary'], d['summary']" "$T/8x8.json" || fail "the 8x8 stall's JSON culprit"
# an exact culprit (one rank a node: a network op shows the GPU first-hand)
# keeps its headline: the rank first, scope "rank"
$RUN "$PT" sim --plugin "$PLUGIN" --nodes 4 --ranks-per-node 1 --stall 2:0:5 --dump-dir "$T/4x1" --quiet \
  >"$T/out" 2>&1
$RUN "$PT" analyze "$T/4x1" >"$T/4x1.txt" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "analyze of the 4x1 stall exits $rc, want 1"
sed -n 2p "$T/4x1.txt" | grep -q "^culprit 1: rank 2 ([^,]*, pid [0-9]*), channel 0: its GPU stopped producing data — its send to rank 3 is at step [0-9]*/[0-9]* of opCount 6 (AllReduce); [0-9]* stuck ops\? waits\? on it$" ||
  fail "an exact culprit's headline changed: $(sed -n 2p "$T/4x1.txt")"
$RUN "$PT" analyze --json "$T/4x1" | python3 -c "import json,sys; c=json.load(sys.stdin)['culprits'][0]; \
assert (c['rank'], c['scope'], c['candidates']) == (2, 'rank', [2]), c" || fail "an exact culprit's JSON scope"

# ---- the JSON document ----
$RUN "$PT" analyze --json "$T/stall" >"$T/a.json"; rc=$?
[ $rc -eq 1 ] || fail "--json of a hung job exits $rc, want 1"
python3 - "$T/a.json" <<'PY' || fail "the JSON document does not follow its schema"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == 1 and d["verdict"] == "hang", d["verdict"]
for key in ("culprits", "stuck_edges", "missing_ranks", "behind_ranks", "slow_edges", "inputs", "communicators"):
    assert isinstance(d[key], list), key
c = d["culprits"][0]
for key in ("rank", "peer", "channel", "direction", "cause", "opCount", "step", "nSteps", "evidence", "summary",
            "scope", "candidates", "dependents", "commHash", "host", "pid"):
    assert key in c, key
assert (c["rank"], c["peer"], c["channel"], c["direction"], c["cause"]) == (3, 4, 0, "send", "gpu_not_producing"), c
assert (c["opCount"], c["step"], c["nSteps"], c["dependents"]) == (6, 10, 56, 3), c
assert c["evidence"][0]["rank"] == 3 and c["evidence"][0]["origin"] is True
assert isinstance(c["commHash"], str) and int(c["commHash"]) > 0
edges = {(e["sender"], e["receiver"]) for e in d["stuck_edges"]}
assert edges == {(3, 4), (7, 0)}, edges
assert all(e["culprit"] == 0 for e in d["stuck_edges"])
assert all(i["errors"] == [] for i in d["inputs"])
assert d["missing_ranks"] == []
PY

# ---- the Chrome trace ----
$RUN "$PT" analyze --chrome "$T/trace.json" "$T/stall" >/dev/null; rc=$?
[ $rc -eq 1 ] || fail "--chrome exits $rc"
python3 - "$T/trace.json" <<'PY' || fail "the Chrome trace does not follow the trace-event format"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert ev, "no events"
for e in ev:
    for key in ("ph", "ts", "pid", "tid", "name"):
        assert key in e, (key, e)
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["ts"], (int, float))
spans = [e for e in ev if e["ph"] == "X"]
assert spans and all(e["dur"] >= 0 for e in spans)
begins = [e for e in ev if e["ph"] == "B"]
ends = [e for e in ev if e["ph"] == "E"]
assert len(begins) == len(ends)
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert len(procs) == 8 and procs[4].startswith("rank 3 ("), procs
stuck = [e for e in spans if e["args"]["stuck"]]
assert len(stuck) == 4 and all(e["name"].startswith("STUCK ") for e in stuck)
origin = [e for e in stuck if e["pid"] == 4]
assert origin and origin[0]["args"]["waitsFor"] == "gpu" and origin[0]["args"]["transmitted"] == 10
flows = {}
for e in ev:
    if e["ph"] in ("s", "f"):
        flows.setdefault(e["id"], []).append(e)
assert flows and all(sorted(x["ph"] for x in f) == ["f", "s"] for f in flows.values())
for f in flows.values():
    s = [x for x in f if x["ph"] == "s"][0]
    r = [x for x in f if x["ph"] == "f"][0]
    assert r.get("bp") == "e"
    # each end sits inside a span of its thread
    for x in (s, r):
        assert any(sp["pid"] == x["pid"] and sp["tid"] == x["tid"] and sp["ts"] <= x["ts"] <= sp["ts"] + sp["dur"]
                   for sp in spans), x
assert any(e["ph"] == "i" and e["name"].startswith("dump") for e in ev)
PY

# ---- a healthy job, a killed rank ----
$RUN "$PT" sim --plugin "$PLUGIN" --dump-dir "$T/ok" --quiet >/dev/null 2>&1 || fail "healthy sim exits $?"
# Emulated time: a healthy job's op times are the emulator's, in every
# build and under any load, so slowness is looked for everywhere.
$RUN "$PT" analyze "$T/ok" >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "analyze of a healthy job exits $rc, want 0"
head -1 "$T/out" | grep -q "OK" || fail "a healthy job is not OK"
$RUN "$PT" sim --plugin "$PLUGIN" --kill 5:3 --dump-dir "$T/kill" --truth-json "$T/kill.truth" --quiet >/dev/null 2>&1
[ -s "$T/kill.truth" ] || fail "sim --kill wrote no ground truth"
# the loggers' files: a dead rank's is empty (every emulated rank lives in
# one process, whose plugin may write dump files for the "dead" one too)
$RUN "$PT" analyze --json --expect "$T/kill.truth" "$T/kill"/rank*.log >"$T/k.json" 2>"$T/k.err"; rc=$?
[ $rc -eq 1 ] || fail "analyze of a killed rank exits $rc, want 1"
grep -q "agrees with the ground truth" "$T/k.err" || fail "the kill analysis does not agree: $(cat "$T/k.err")"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert [m['rank'] for m in d['missing_ranks']]==[5], d['missing_ranks']; \
assert d['culprits'][0]['cause']=='rank_missing' and d['culprits'][0]['rank']==5" "$T/k.json" || fail "rank 5 is not missing"

# ---- the demo: the analyzer's verdict from the dumps, checked ----
$RUN "$PT" demo --plugin "$PLUGIN" --out "$T/demo" >"$T/demo.txt" 2>&1 || fail "demo exits $?"
grep -q "culprit 1: a GPU of .* one of ranks 0-3, .* rank 3 " "$T/demo.txt" || fail "the demo's verdict does not name rank 3's node"
grep -q "agrees with the ground truth" "$T/demo.txt" || fail "the demo does not check its verdict: $(cat "$T/demo.txt")"

# ---- JSON lines: the analyzer, and the sqlite3 example of docs/analyze.md ----
$RUN "$PT" analyze "$DATA/ring-stall" >"$T/out"; rc=$?
[ $rc -eq 1 ] || fail "analyze of the JSON ring exits $rc"
sed -n 2p "$T/out" | grep -q "^culprit 1: a GPU of node0 — one of ranks 0, 1, the records cannot tell which: .*; rank 1 (node0, pid 4101) sends to rank 2 off the node" ||
  fail "the JSON ring's culprit: $(sed -n 2p "$T/out")"
# The shared library as Python's ctypes loads it (docs/analyze.md, "From C
# and other languages"), when it is of this machine's architecture. An ASan
# build's library needs its runtime loaded first; a TSan runtime cannot be
# loaded into a Python that was not built with it (it crashes), so a TSan
# build skips this.
cat >"$T/through_ctypes.py" <<'PY'
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.pt_analysis_json.restype = ctypes.c_void_p
a = ctypes.c_void_p()
assert lib.pt_analysis_new(ctypes.byref(a)) == 0
assert lib.pt_analysis_add_path(a, sys.argv[2].encode()) == 0
assert lib.pt_analysis_run(a) == 0
p = lib.pt_analysis_json(a)
d = json.loads(ctypes.string_at(p).decode())
lib.pt_analysis_string_free(ctypes.c_void_p(p))
lib.pt_analysis_free(a)
assert d["verdict"] == "hang" and d["culprits"][0]["rank"] == 1, d["culprits"][0]
PY
NEEDED="$(readelf -d "$B/libproxytrace-analyze.so" 2>/dev/null)"
if [ -z "$RUN" ] && [ "${NEEDED#*libtsan}" = "$NEEDED" ]; then
  PRE=""
  case "$NEEDED" in *libasan*) PRE="$(${CC:-cc} -print-file-name=libasan.so)" ;; esac
  LD_PRELOAD="$PRE" ASAN_OPTIONS=detect_leaks=0 python3 "$T/through_ctypes.py" "$B/libproxytrace-analyze.so" \
    "$DATA/ring-stall" || fail "the library through ctypes"
fi
DOC="$(dirname "$0")/../../docs/analyze.md"
sed -n '/^```sql sqlite3$/,/^```$/p' "$DOC" | sed '1d;$d' | sed "s|dumps/|$DATA/ring-stall/|" >"$T/q.sql"
[ -s "$T/q.sql" ] || fail "docs/analyze.md has no sqlite3 example"
sqlite3 :memory: <"$T/q.sql" >"$T/q.out" 2>&1 || fail "the sqlite3 example fails: $(cat "$T/q.out")"
cat "$T/q.out"
[ "$(sed -n 1p "$T/q.out")" = "1|2|0|6|10/56|10/56|18|10" ] || fail "sqlite3: first stuck edge is $(sed -n 1p "$T/q.out")"
[ "$(sed -n 2p "$T/q.out")" = "3|0|0|6|14/56|14/56|14|6" ] || fail "sqlite3: second stuck edge is $(sed -n 2p "$T/q.out")"
[ "$(sed -n 3p "$T/q.out")" = "origin|1|0|6|10/56" ] || fail "sqlite3: the origin is $(sed -n 3p "$T/q.out"), want rank 1"
[ "$(wc -l <"$T/q.out")" -eq 3 ] || fail "sqlite3: $(wc -l <"$T/q.out") lines, want two stuck edges and the origin"
# The same query over per-node summaries (analyze --summary): they are dump
# JSON lines too, and give the same answer.
mkdir -p "$T/sum"
for r in 0 1 2 3; do
  mkdir -p "$T/n$r" && cp "$DATA"/ring-stall/*-r$r-*.jsonl "$T/n$r/"
  $RUN "$PT" analyze --summary "$T/sum/n$r.jsonl" "$T/n$r" >/dev/null || fail "analyze --summary of rank $r exits $?"
done
sed -n '/^```sql sqlite3$/,/^```$/p' "$DOC" | sed '1d;$d' | sed "s|dumps/|$T/sum/|" >"$T/qs.sql"
sqlite3 :memory: <"$T/qs.sql" >"$T/qs.out" 2>&1 || fail "the sqlite3 example on summaries fails: $(cat "$T/qs.out")"
cmp -s "$T/q.out" "$T/qs.out" || fail "the sqlite3 example on summaries: $(cat "$T/qs.out")"
echo "ok"
