#!/bin/sh
# page-scale.sh — the --html page of a hang at 64, 512 and 16 384 ranks, as
# a person sees it in Debian's headless chromium (a 1280 x 900 window):
# the culprit's line, the chain of waits with its origin and the culprit's
# rank in its node's close-up all lie in the first screen; no label of the
# page is overdrawn by an arrow (every arrow's path, sampled each pixel and
# widened by its stroke and head, against every SVG text's box); the page
# names the culprit's rank and node and counts the job's nodes; the file
# stays under 1 MB. 64 and 512 ranks come from the emulator (8 x 8, 64 x 8);
# 16 384 ranks (2 048 x 8) from bench/gen_job.c, which builds them from two
# emulated 4 x 8 jobs (one hung) — the emulator stops at 128 nodes. The
# geometry is measured by a script added to a copy of the page without its
# Content-Security-Policy (the page itself holds none); a control page
# whose arrow runs through a label must be caught, and one whose chain is
# pushed below the first screen too, so the checks can fail.
# $1: the build folder. Without chromium, or in a sanitizer or qemu build
# (tests/common/browser.sh), the browser checks step aside with a message;
# the rest still runs.
B=${1:-build}
PT="$(cd "$B" && pwd)/proxytrace"
GEN="$(cd "$B" && pwd)/bench/gen_job"
RUN=${PROXYTRACE_EMULATOR:-}
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

SANDBOX=
[ "$(id -u)" -eq 0 ] && SANDBOX=--no-sandbox
browse() { # browse LOG ARGS...: chromium headless, its log on LOG
  log=$1; shift
  HOME="$T/home" timeout 120 "$BROWSER" --headless $SANDBOX --disable-gpu --no-first-run --user-data-dir="$T/profile" \
    --hide-scrollbars --window-size=1280,900 "$@" 2>"$log"
}
. "$(dirname "$0")/../common/browser.sh"
find_browser page-scale.sh "$PT"

# The measuring script, and a copy of a page that runs it: the result is
# written into the DOM (body's data-check), which --dump-dom prints.
cat >"$T/check.js" <<'JS'
(function () {
  var out = {h: window.innerHeight, w: window.innerWidth, overdrawn: [], edges: 0, texts: 0};
  function bottom(sel) {
    var e = document.querySelector(sel);
    return e ? Math.round(e.getBoundingClientRect().bottom) : -1;
  }
  out.culprit = bottom('.culprit');
  out.chain = bottom('#wait-chain');
  out.origin = bottom('#wait-chain g.hop.origin');
  out.node = bottom('#culprit-node g.rank[data-culprit="1"]');
  var texts = Array.prototype.slice.call(document.querySelectorAll('svg text')).map(function (t) {
    return {r: t.getBoundingClientRect(), s: t.textContent};
  }).filter(function (t) { return t.r.width > 0 && t.r.height > 0; });
  out.texts = texts.length;
  var edges = document.querySelectorAll('svg path.edge');
  out.edges = edges.length;
  for (var k = 0; k < edges.length; k++) {
    var p = edges[k], len = p.getTotalLength(), m = p.getScreenCTM();
    var sw = parseFloat(getComputedStyle(p).strokeWidth) || 1;
    var head = p.getAttribute('marker-end') ? 4 * sw : 0; /* the markers are 4 strokes long */
    for (var s = 0; s <= len; s += 1) {
      var q = p.getPointAtLength(s);
      var x = m.a * q.x + m.c * q.y + m.e, y = m.b * q.x + m.d * q.y + m.f;
      var pad = (len - s <= head ? head / 2 : sw / 2);
      for (var i = 0; i < texts.length; i++) {
        var r = texts[i].r;
        if (x > r.left - pad && x < r.right + pad && y > r.top - pad && y < r.bottom + pad) {
          if (out.overdrawn.length < 5) out.overdrawn.push(texts[i].s + ' by ' + p.getAttribute('data-from') + '->' + p.getAttribute('data-to'));
          out.overdrawn.n = (out.overdrawn.n || 0) + 1;
          break;
        }
      }
    }
  }
  out.n_overdrawn = out.overdrawn.n || 0;
  document.body.setAttribute('data-check', JSON.stringify(out));
})();
JS
measure() { # measure PAGE NAME: $T/NAME.check holds the JSON the script wrote
  python3 - "$1" "$T/check.js" "$T/$2.probe.html" <<'PY'
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
page = page.replace("</body>", "<script>" + open(sys.argv[2]).read() + "</script></body>")
open(sys.argv[3], "w", encoding="utf-8").write(page)
PY
  browse "$T/$2.log" --dump-dom "file://$T/$2.probe.html" >"$T/$2.dom"
  python3 - "$T/$2.dom" >"$T/$2.check" <<'PY'
import html, re, sys
m = re.search(r'data-check="([^"]*)"', open(sys.argv[1], encoding="utf-8").read())
print(html.unescape(m.group(1)) if m else "{}")
PY
}
# judge NAME: the first screen holds the culprit, the chain and its origin,
# and the culprit's rank up close; no label is overdrawn.
judge() {
  python3 - "$T/$1.check" "$1" <<'PY'
import json, sys
c, name = json.load(open(sys.argv[1])), sys.argv[2]
bad = []
if not c.get("h"):
    bad.append("the page was not measured")
else:
    for k in ("culprit", "chain", "origin", "node"):
        if not 0 < c[k] <= c["h"]:
            bad.append("%s ends at %s px, the first screen at %d" % (k, c[k], c["h"]))
    if c["n_overdrawn"]:
        bad.append("%d arrow points on labels: %s" % (c["n_overdrawn"], "; ".join(c["overdrawn"])))
    if not c["edges"] or not c["texts"]:
        bad.append("nothing measured: %d arrows, %d labels" % (c["edges"], c["texts"]))
print("; ".join(bad) if bad else "ok %d arrows, %d labels; culprit %d px, chain %d px, node %d px of %d" % (
    c["edges"], c["texts"], c["culprit"], c["chain"], c["node"], c["h"]))
sys.exit(1 if bad else 0)
PY
}

# page NAME DUMPS NODES: the page of a hung job and what it must hold.
page() {
  name=$1 dumps=$2 nodes=$3
  t0=$(now)
  $RUN "$PT" analyze --html "$T/$name.html" --json "$dumps" >"$T/$name.json"; rc=$?
  t1=$(now)
  [ $rc -eq 1 ] || fail "$name: analyze exit $rc, want 1 (a hang)"
  size=$(wc -c <"$T/$name.html")
  python3 - "$T/$name.json" "$T/$name.html" "$nodes" <<'PY' || fail "$name: the page does not hold what the JSON names"
import json, re, sys
d, page, nodes = json.load(open(sys.argv[1])), open(sys.argv[2], encoding="utf-8").read(), int(sys.argv[3])
c = d["culprits"][0]
r = c["rank"]
assert re.search(r'<g class="hop origin" data-rank="%d"' % r, page), "no origin box of rank %d in the chain" % r
assert re.search(r'<svg id="culprit-node"', page), "no close-up of the culprit's node"
close = page[page.index('<svg id="culprit-node"'):]
close = close[:close.index("</svg>")]
assert 'data-rank="%d" data-culprit="1"' % r in close, "rank %d not marked in its node's close-up" % r
for k in c.get("candidates") or [r]:
    assert 'data-rank="%d"' % k in close, "candidate %d not in the close-up" % k
assert re.search(r'<h3>Culprit 1.s node up close: %s</h3>' % re.escape(c["host"]), page), "the close-up does not name " + c["host"]
assert 'id="wait-counts" data-nodes="%d"' % nodes in page, "the counts do not say %d nodes" % nodes
assert page.count('class="cell') <= 4096, "the strip holds more than 4096 cells"
PY
  [ "$size" -lt 1048576 ] || fail "$name: the page is $size bytes, 1 MB or more"
  echo "     $name: page $size bytes, analyze --html in $(secs "$t0" "$t1") s"
  if [ $HAVE_BROWSER -eq 1 ]; then
    measure "$T/$name.html" "$name"
    res=$(judge "$name") && ok "$name in chromium: $res" || fail "$name in chromium: $res"
  fi
}

t0=$(now)
$RUN "$PT" sim --plugin "$PLUGIN" --nodes 8 --ranks-per-node 8 --stall 27:0:5 --dump-dir "$T/r64" --quiet >/dev/null 2>&1
[ $? -eq 3 ] || fail "the 8x8 sim did not hang"
t1=$(now)
echo "     64 ranks emulated in $(secs "$t0" "$t1") s"
page r64 "$T/r64" 8

t0=$(now)
$RUN "$PT" sim --plugin "$PLUGIN" --nodes 64 --ranks-per-node 8 --iters 1 --ops allreduce:32M --stall 77:0:5 \
  --dump-dir "$T/r512" --quiet >/dev/null 2>&1
[ $? -eq 3 ] || fail "the 64x8 sim did not hang"
t1=$(now)
echo "     512 ranks emulated in $(secs "$t0" "$t1") s"
page r512 "$T/r512" 64
rm -rf "$T/r512"

# Under an emulator (the aarch64 leg's qemu) 16 384 ranks take minutes to
# make and read, and the page's code is the same as the native build's,
# which checks them: 64 and 512 there.
if [ -n "$RUN" ]; then
  echo "     16384 ranks: left to the native build (under $RUN they take minutes)"
else
t0=$(now)
for job in hung ok; do
  stall=
  [ $job = hung ] && stall="--stall 3:0:5"
  $RUN "$PT" sim --plugin "$PLUGIN" --nodes 4 --ranks-per-node 8 --channels 1 --iters 1 --ops allreduce:1M $stall \
    --dump-dir "$T/t-$job" --quiet >/dev/null 2>&1
done
$RUN "$GEN" "$T/t-hung" "$T/t-ok" 16384 8197 "$T/r16k" >/dev/null || fail "gen_job"
t1=$(now)
echo "     16384 ranks generated in $(secs "$t0" "$t1") s"
page r16k "$T/r16k" 2048
rm -rf "$T/r16k"
fi

if [ $HAVE_BROWSER -eq 1 ]; then
  # The checks can fail: an arrow across a label, a chain below the fold.
  sed 's|<svg id="wait-chain"|<svg width="300" height="40"><text x="10" y="20">label</text><path class="edge" d="M0,16H200" stroke="#000"/></svg>&|' \
    "$T/r64.html" >"$T/crossed.html"
  measure "$T/crossed.html" crossed
  judge crossed | grep -q "arrow points on labels: label by" && ok "an arrow across a label is caught (control)" ||
    fail "the control page's crossed label was not caught: $(judge crossed)"
  sed 's|<h2>Wait graph</h2>|<div style="height:900px"></div>&|' "$T/r64.html" >"$T/low.html"
  measure "$T/low.html" low
  judge low | grep -q "chain ends at .* px, the first screen at" && ok "a chain below the first screen is caught (control)" ||
    fail "the control page's chain below the fold was not caught: $(judge low)"
fi

[ "$failures" -eq 0 ] && echo "page-scale.sh: all passed" || echo "page-scale.sh: $failures failed"
[ "$failures" -eq 0 ]
