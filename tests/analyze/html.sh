#!/bin/sh
# html.sh — `proxytrace analyze --html FILE` in a real browser: Debian's
# chromium, headless, loads the page of an emulated hang with no console
# message (a control page with an inline script must show one, so the check
# can fail), its DOM holds the culprit and every stuck edge the JSON report
# names, and a screenshot is taken. Also: a dump whose host name holds
# <script> (escaped, never an element), a slow job's heatmap outlining the
# slow edges of the metrics (node x node at 128 ranks, grouped as the wait
# graph groups them), 1 024 ranks node by node under 256 KB, the page
# refused over an input and on a folder that cannot be written (exit
# 2, nothing left), and the same verdict and exit status as without --html.
# $1: the build folder. Without chromium (or one that cannot start) the
# browser checks are skipped with a message; the rest still runs. They
# also step aside in a sanitizer or qemu build, whose pages are the native
# build's byte for byte.
B=${1:-build}
PT="$(cd "$B" && pwd)/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

# The browser: root needs --no-sandbox; a profile folder of its own.
SANDBOX=
[ "$(id -u)" -eq 0 ] && SANDBOX=--no-sandbox
browse() { # browse OUT-LOG ARGS...: chromium headless, its log on OUT-LOG
  log=$1; shift
  HOME="$T/home" timeout 120 "$BROWSER" --headless $SANDBOX --disable-gpu --no-first-run --user-data-dir="$T/profile" \
    --enable-logging=stderr --v=0 --hide-scrollbars "$@" 2>"$log"
}
. "$(dirname "$0")/../common/browser.sh"
find_browser html.sh "$PT"
# Console messages a page produced (chromium logs them as CONSOLE lines).
console() { grep -E 'CONSOLE|Refused to|Uncaught' "$1"; }

job_hang() {
  $RUN "$PT" sim --plugin "$PLUGIN" --stall 3:0:5 --dump-dir "$T/hang" --quiet >/dev/null 2>&1
  [ $? -eq 3 ] || fail "the hung sim"
}
job_hang

# The page and the plain report agree: same exit status, and the page holds
# the verdict line.
$RUN "$PT" analyze "$T/hang" >"$T/text"; rc_text=$?
$RUN "$PT" analyze --html "$T/hang.html" "$T/hang" >"$T/text2"; rc=$?
[ $rc -eq 1 ] && [ $rc_text -eq 1 ] && ok "--html keeps the exit status (1, a hang)" || fail "--html exit $rc, text $rc_text"
cmp -s "$T/text" "$T/text2" && ok "--html leaves the text report as it is" || fail "the text report changed with --html"
# The page's Timeline section names the timeline the same run writes
# (--chrome beside --html), and says how to write one otherwise.
$RUN "$PT" analyze --html "$T/both.html" --chrome "$T/both.json" "$T/hang" >/dev/null
grep -q "this run wrote it, <code>$T/both.json</code>" "$T/both.html" && ! grep -q "write it with" "$T/both.html" &&
  grep -q "write it with <code>proxytrace analyze --chrome" "$T/hang.html" &&
  ok "the Timeline section names the --chrome file of the same run, or how to write one" ||
  fail "the Timeline section: $(grep -A1 'Timeline</h2>' "$T/both.html" | tail -1 | cut -c 1-200)"
$RUN "$PT" analyze --json "$T/hang" >"$T/hang.json"
[ -s "$T/hang.html" ] || fail "no page written"
grep -q 'data-verdict="HANG"' "$T/hang.html" && ok "the verdict leads the page" || fail "no HANG verdict in the page"
# Self-contained: nothing to load, no script.
if grep -Eiq '<script|<link|<img|<iframe|src=|@import|url\(http' "$T/hang.html"; then
  fail "the page loads something or holds a script"; grep -Eio '.{20}(<script|<link|<img|src=|@import|url\(http).{20}' "$T/hang.html" | head
else
  ok "the page loads nothing and holds no script"
fi
grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$T/hang.html" && ok "a CSP forbids loading anything" ||
  fail "no Content-Security-Policy"
# rank 3's stall is inside node 0's part of the ring: the culprit's line
# names the node and its ranks first, as the text report's does
grep -q '<div class="culprit" data-culprit-rank="3" data-cause="gpu_not_producing" data-scope="node"><b>culprit 1:</b> a GPU of [^ ]*.* — one of ranks 0-3, the records cannot tell which: ' "$T/hang.html" &&
  ok "a node-level culprit's line names the node first (data-scope=\"node\")" || fail "the node-level culprit's line"

# What the page must show: the culprit's rank and every stuck edge.
python3 - "$T/hang.json" >"$T/want" <<'PY' || fail "the JSON report"
import json, sys
d = json.load(open(sys.argv[1]))
print("culprit", d["culprits"][0]["rank"])
for e in d["stuck_edges"]:
    print("edge", e["sender"], e["receiver"])
PY
check_dom() { # check_dom FILE WHAT: FILE holds the culprit and the edges of $T/want
  while read -r kind x y; do
    case $kind in
      culprit) grep -q "data-culprit-rank=\"$x\"" "$1" && grep -q "data-rank=\"$x\" data-culprit=\"1\"" "$1" ||
                 fail "$2: culprit rank $x not marked" ;;
      edge) grep -q "<tr class=\"edge[^\"]*\" data-from=\"$x\" data-to=\"$y\"" "$1" ||
              fail "$2: stuck edge $x -> $y not in the table" ;;
    esac
  done <"$T/want"
  grep -q 'class="edge chain origin"' "$1" || fail "$2: no bold origin arrow in the wait graph"
}
n_before=$failures
check_dom "$T/hang.html" "the page"
[ $failures -eq $n_before ] && ok "the page marks the culprit, draws the origin bold, lists every stuck edge ($(grep -c edge "$T/want") edges)"

if [ $HAVE_BROWSER -eq 1 ]; then
  browse "$T/dom.log" --dump-dom "file://$T/hang.html" >"$T/dom.html"
  n_before=$failures
  check_dom "$T/dom.html" "the browser's DOM"
  [ $failures -eq $n_before ] && ok "chromium's DOM holds the culprit and every stuck edge"
  if console "$T/dom.log" >/dev/null; then fail "console messages:"; console "$T/dom.log" | head -5; else
    ok "no console message while loading the page"; fi
  browse "$T/shot.log" --window-size=1280,1000 --screenshot="$T/hang.png" "file://$T/hang.html" >/dev/null
  if [ -s "$T/hang.png" ] && head -c 8 "$T/hang.png" | od -An -c | grep -q 'P   N   G'; then
    ok "a screenshot was taken ($(wc -c <"$T/hang.png") bytes)"
  else
    fail "no screenshot"; tail -5 "$T/shot.log"
  fi
  # The console check can fail: an inline script that the same CSP blocks.
  sed 's|</body>|<script>document.title="x"</script></body>|' "$T/hang.html" >"$T/control.html"
  browse "$T/control.log" --dump-dom "file://$T/control.html" >/dev/null
  console "$T/control.log" >/dev/null && ok "the console check sees a blocked script (control page)" ||
    fail "the control page's blocked script left no console message"
fi

# A host name holding <script>: shown as text, never run or parsed.
cp -r "$T/hang" "$T/evil"
for f in "$T"/evil/*.jsonl; do
  sed 's|"host":"[^"]*"|"host":"<script>alert(1)</script>\&amp;"|g' "$f" >"$f.new" && mv "$f.new" "$f"
done
rm -f "$T"/evil/*.txt "$T"/evil/host.log
$RUN "$PT" analyze --html "$T/evil.html" "$T/evil" >/dev/null; rc=$?
[ $rc -eq 1 ] || fail "the page of the <script> dumps: exit $rc"
if grep -qi '<script' "$T/evil.html"; then fail "a dump's <script> reached the page"; else
  grep -q '&lt;script&gt;alert(1)&lt;/script&gt;&amp;amp;' "$T/evil.html" && ok "a dump's <script> is escaped text" ||
    fail "the escaped host name is not in the page"; fi
if [ $HAVE_BROWSER -eq 1 ]; then
  browse "$T/evil.log" --dump-dom "file://$T/evil.html" >"$T/evil.dom"
  if grep -qi '<script' "$T/evil.dom" || console "$T/evil.log" >/dev/null; then
    fail "chromium found a script element or logged to the console"
  else
    grep -q '&lt;script&gt;alert(1)' "$T/evil.dom" && ok "in chromium the <script> host name is text, no element" ||
      fail "the host name is not in chromium's DOM"
  fi
fi

# Never over an input, never half written.
in=$(ls "$T"/hang/*.jsonl | head -1)
cp "$in" "$T/before"
$RUN "$PT" analyze --html "$in" "$T/hang" >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q 'is one of the inputs' "$T/err" && cmp -s "$in" "$T/before" &&
  ok "--html over an input: refused, exit 2, the dump kept" || fail "--html over an input: exit $rc"
[ -s "$T/out" ] && fail "a report printed though --html failed"
$RUN "$PT" analyze --html "$T/nowhere/x.html" "$T/hang" >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q 'cannot write --html' "$T/err" && ! [ -s "$T/out" ] &&
  ok "--html into a missing folder: exit 2, one line, no report" || fail "--html into a missing folder: exit $rc"
ls "$T"/*.tmp-* >/dev/null 2>&1 && fail "a temporary file was left"

# A slow job: the heatmap outlines the slow edges the metrics name.
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --host nccl-2.28 --nodes 3 --ranks-per-node 2 --channels 2 --iters 6 \
  --ops sendrecv:8M --poll-us 400 --slow-link 4:4 --dump-dir "$T/slow" --env PROXYTRACE_METRICS_INTERVAL_MS=60000 \
  >/dev/null 2>&1
$RUN "$PT" analyze --html "$T/slow.html" --json "$T/slow" >"$T/slow.json"; rc=$?
[ $rc -eq 1 ] || fail "the slow job: exit $rc"
python3 - "$T/slow.json" >"$T/slow.want" <<'PY' || fail "the slow job's JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "slow", d["verdict"]
for e in d["metrics_slow_edges"]:
    s, r = (e["rank"], e["peer"]) if e["direction"] == "send" else (e["peer"], e["rank"])
    print(s, r)
PY
n_before=$failures
grep -q '<svg id="heatmap"' "$T/slow.html" || fail "no heatmap"
while read -r s r; do
  grep -q "class=\"cell slow\" data-from=\"$s\" data-to=\"$r\"" "$T/slow.html" || fail "slow edge $s -> $r not outlined"
done <"$T/slow.want"
[ -s "$T/slow.want" ] || fail "the slow job named no slow edge"
[ $failures -eq $n_before ] && ok "the heatmap outlines every slow edge of the metrics ($(wc -l <"$T/slow.want"))"
if [ $HAVE_BROWSER -eq 1 ]; then
  browse "$T/slow.log" --dump-dom "file://$T/slow.html" >"$T/slow.dom"
  grep -q 'class="cell slow"' "$T/slow.dom" && ! console "$T/slow.log" >/dev/null &&
    ok "chromium shows the heatmap, no console message" || fail "chromium and the heatmap"
fi

# A slow job of 128 ranks on 16 nodes: the heatmap is node x node, its
# rows the nodes the dumps name (node0 … node15, as the wait graph groups
# them), the slow link's edges outlined between node0 and its neighbours.
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --host nccl-2.28 --nodes 16 --ranks-per-node 8 --channels 1 --iters 3 \
  --ops sendrecv:8M --poll-us 400 --slow-link 4:4 --dump-dir "$T/slow128" --env PROXYTRACE_METRICS_INTERVAL_MS=60000 \
  >/dev/null 2>&1
$RUN "$PT" analyze --html "$T/slow128.html" "$T/slow128" >/dev/null; rc=$?
python3 - "$T/slow128.html" <<'PY' && ok "128 ranks slow: a 16 x 16 node heatmap labelled node0 … node15, node0's edges outlined" ||
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
heat = page[page.index('<svg id="heatmap"'):]
heat = heat[:heat.index("</svg>")]
assert 'data-mode="nodes"' in heat, "not node x node"
labels = re.findall(r'<text x="[^"]*" y="[^"]*" text-anchor="end">([^<]*)</text>', heat)
assert labels == ["node%d" % k for k in range(16)], labels
cells = re.findall(r'<rect class="cell( slow)?" data-from="(\d+)" data-to="(\d+)"', heat)
assert cells and all(0 <= int(a) < 16 and 0 <= int(b) < 16 for _, a, b in cells), cells
slow = sorted((int(a), int(b)) for s, a, b in cells if s)
assert slow and all(0 in e for e in slow), slow
PY
  fail "the 128-rank slow job's heatmap (exit $rc)"
# The same files as one machine would write them (every host "vm", no
# logs): the wait graph's nodes are then numbered by rank (#node0 …), and
# the heatmap groups by them too, not into one cell of "vm".
mkdir "$T/slow128vm"
for f in "$T"/slow128/proxytrace-*; do
  sed 's/"host":"node[0-9]*"/"host":"vm"/g; s/ host=node[0-9]* / host=vm /; s/host="node[0-9]*"/host="vm"/g' "$f" \
    >"$T/slow128vm/$(basename "$f" | sed 's/-node[0-9]*-/-vm-/')"
done
$RUN "$PT" analyze --html "$T/slow128vm.html" "$T/slow128vm" >/dev/null; rc=$?
python3 - "$T/slow128vm.html" <<'PY' && ok "128 ranks on one host name: the heatmap's nodes are the wait graph's, #node0 … #node15" ||
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
heat = page[page.index('<svg id="heatmap"'):]
labels = re.findall(r'<text x="[^"]*" y="[^"]*" text-anchor="end">([^<]*)</text>', heat[:heat.index("</svg>")])
assert labels == ["#node%d" % k for k in range(16)], labels
assert "vm" not in heat[:heat.index("</svg>")]
PY
  fail "the heatmap of 128 ranks on one host name (exit $rc)"

# 1 024 ranks on 128 nodes: the culprit's node up close, the rest one cell
# per node, a page of tens of KB (one call: the job hangs in it, and 2 048
# emulated threads take turns through it fast enough under TSan too).
# tests/analyze/page-scale.sh looks at such pages in the browser.
$RUN "$PT" sim --plugin "$PLUGIN" --nodes 128 --ranks-per-node 8 --iters 1 --ops allreduce:32M --stall 77:0:5 \
  --dump-dir "$T/big" --quiet >/dev/null 2>&1
$RUN "$PT" analyze --html "$T/big.html" "$T/big" >/dev/null; rc=$?
size=$(wc -c <"$T/big.html")
[ $rc -eq 1 ] && [ "$size" -lt 262144 ] && grep -q '<h3>Culprit 1.s node up close: node9</h3>' "$T/big.html" &&
  grep -q 'data-rank="79" data-culprit="1"' "$T/big.html" && grep -q '<p id="wait-counts" data-nodes="128" ' "$T/big.html" &&
  [ "$(grep -c '<rect class="cell' "$T/big.html")" -eq 128 ] &&
  ok "1024 ranks: culprit rank 79's node9 up close, 128 nodes in the strip, $size bytes" || fail "1024 ranks: exit $rc, $size bytes"

[ "$failures" -eq 0 ] && echo "html.sh: all passed" || echo "html.sh: $failures failed"
[ "$failures" -eq 0 ]
