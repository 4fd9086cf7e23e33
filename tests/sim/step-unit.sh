#!/bin/sh
# The unit of a step, per host: the same ring all-reduce (SIMPLE, sliceSteps
# 2) stuck at the same transfer on NCCL 2.23 (raw steps), 2.25 (network
# transfers) and RCCL (ProxyDiag: raw steps). Each dump's banner, JSON header
# and op records name the unit its host sends; `analyze --records` gives the
# same transfers for all three, and so do the Perfetto trace (--chrome) and
# the page's stuck edges (--html);
# and dumps of earlier versions, which name no
# unit, read the same (the unit from the profiler API and RCCL's fields).
# $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
JOB="--nodes 2 --ranks-per-node 1 --channels 1 --ops allreduce:8M --iters 1 --poll-us 100 --stall 1:0:3"
# "nSteps posted done" of each record, in transfers, sorted
transfers() {
  python3 -c '
import json, sys
rows = []
for line in sys.stdin:
    r = json.loads(line)
    t = r["transfers"]
    if t is None: sys.exit("no transfers: " + line)
    rows.append("%s %d %d %d %d" % (r["dir"], r["rank"], t["nSteps"], t["posted"], t["done"]))
print("\n".join(sorted(rows)))'
}

for host in nccl-2.23 nccl-2.25 rccl; do
  case $host in nccl-2.25) unit=transfers ;; *) unit=rawSteps ;; esac
  # shellcheck disable=SC2086
  $RUN "$PT" sim --plugin "$PLUGIN" --quiet --host $host $JOB --dump-dir "$T/$host" >/dev/null 2>&1
  [ $? -eq 3 ] || fail "$host: the stuck job did not hang"
  for f in "$T/$host"/proxytrace-*.txt; do
    head -1 "$f" | grep -q " stepUnit=$unit\$" || fail "$host: banner $(head -1 "$f")"
  done
  cat "$T/$host"/*.jsonl >"$T/$host.jsonl"
  grep '"type":"dump"' "$T/$host.jsonl" | grep -v "\"stepUnit\":\"$unit\"" && fail "$host: a header without $unit"
  grep '"type":"op"' "$T/$host.jsonl" | grep -v "\"nSteps\":[0-9]*,\"stepUnit\":\"$unit\"" && fail "$host: an op without $unit"
  # the same all-reduce, in the host's unit: 16 raw steps or 8 transfers
  case $unit in rawSteps) ns=16 ;; *) ns=8 ;; esac
  grep '"type":"op"' "$T/$host.jsonl" | grep -qv "\"nSteps\":$ns," && fail "$host: nSteps is not $ns"
  $RUN "$PT" analyze --records "$T/$host" >"$T/$host.rec" 2>/dev/null
  grep -q "\"stepUnit\":\"$unit\",\"sliceSteps\":2," "$T/$host.rec" || fail "$host: records: $(head -1 "$T/$host.rec")"
  transfers <"$T/$host.rec" >"$T/$host.tr" || fail "$host: records without transfers"
  # the Perfetto trace: each span's args name the unit and give the transfers
  $RUN "$PT" analyze --chrome "$T/$host.trace.json" "$T/$host" >/dev/null 2>&1
  python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
rows = []
for e in ev:
    if e.get("ph") != "X" or e.get("cat") != "proxy":
        continue
    a = e["args"]
    if a.get("stepUnit") != sys.argv[2]:
        sys.exit("a span without unit %s: %s" % (sys.argv[2], a))
    t = a["transfers"]
    rows.append("%s %d %d %d %d" % ("send" if e["name"].lstrip("STUCK ").startswith("send") else "recv",
                                    e["pid"] - 1, t["nSteps"], t["posted"], t["done"]))
print("\n".join(sorted(rows)))' "$T/$host.trace.json" $unit >"$T/$host.chrome.tr" || fail "$host: Perfetto: $(cat "$T/$host.chrome.tr")"
  cmp -s "$T/$host.tr" "$T/$host.chrome.tr" || fail "$host: Perfetto's transfers differ from --records': $(cat "$T/$host.chrome.tr")"
  # the page's stuck edges: their steps in transfers too
  $RUN "$PT" analyze --html "$T/$host.html" "$T/$host" >/dev/null 2>&1
  grep -o '<tr class="edge[^>]*>.*</tr>' "$T/$host.html" | sed 's/<[^>]*>/ /g; s/  */ /g' >"$T/$host.page"
  [ -s "$T/$host.page" ] || fail "$host: the page has no stuck edge"
  grep -q " raw " "$T/$host.page" && fail "$host: the page shows raw steps: $(cat "$T/$host.page")"
  # an older dump: no stepUnit anywhere — the JSON alone, then the text alone
  mkdir "$T/$host.old-json" "$T/$host.old-text"
  for f in "$T/$host"/*.jsonl; do
    sed 's/,"stepUnit":"[a-zA-Z]*"//' "$f" >"$T/$host.old-json/$(basename "$f")"
  done
  for f in "$T/$host"/*.txt; do
    sed 's/ stepUnit=[a-zA-Z]*$//' "$f" >"$T/$host.old-text/$(basename "$f")"
  done
  grep -q stepUnit "$T/$host.old-json"/* "$T/$host.old-text"/* && fail "$host: the old dumps still name a unit"
  $RUN "$PT" analyze --records "$T/$host.old-json" 2>/dev/null | transfers >"$T/$host.old.tr" ||
    fail "$host: an old JSON dump gives no transfers"
  cmp -s "$T/$host.tr" "$T/$host.old.tr" || fail "$host: an old JSON dump reads otherwise: $(cat "$T/$host.old.tr")"
  $RUN "$PT" analyze "$T/$host.old-json" 2>/dev/null | head -1 | grep -q HANG || fail "$host: old JSON: no verdict"
  $RUN "$PT" analyze --records "$T/$host.old-text" >"$T/$host.old-text.rec" 2>/dev/null ||
    fail "$host: an old text dump is not read"
  [ -s "$T/$host.old-text.rec" ] || fail "$host: an old text dump gives no records"
done
cmp -s "$T/nccl-2.23.page" "$T/nccl-2.25.page" || fail "the page: 2.23 and 2.25 differ: $(cat "$T/nccl-2.23.page") / $(cat "$T/nccl-2.25.page")"
grep -q " 3/8 " "$T/nccl-2.25.page" || fail "the page: no edge at 3 of 8 transfers: $(cat "$T/nccl-2.25.page")"
# the three agree, in transfers: the 8 of the all-reduce, stuck at the same place
cmp -s "$T/nccl-2.23.tr" "$T/nccl-2.25.tr" || fail "2.23 and 2.25 differ: $(cat "$T/nccl-2.23.tr") / $(cat "$T/nccl-2.25.tr")"
cmp -s "$T/rccl.tr" "$T/nccl-2.25.tr" || fail "RCCL and 2.25 differ: $(cat "$T/rccl.tr") / $(cat "$T/nccl-2.25.tr")"
grep -q "^send 0 8 " "$T/nccl-2.25.tr" || fail "no 8-transfer send: $(cat "$T/nccl-2.25.tr")"
# an old RCCL text dump: its records' RCCL fields say raw steps
grep -q '"stepUnit":"rawSteps","sliceSteps":2,"transfers":{"nSteps":8' "$T/rccl.old-text.rec" ||
  fail "an old RCCL text dump: $(head -1 "$T/rccl.old-text.rec")"
# an old NCCL text dump names no API: the unit is unknown, and said so
grep -q '"stepUnit":null,"sliceSteps":null,"transfers":null' "$T/nccl-2.23.old-text.rec" ||
  fail "an old NCCL 2.23 text dump: $(head -1 "$T/nccl-2.23.old-text.rec")"
echo "step units: ok"
