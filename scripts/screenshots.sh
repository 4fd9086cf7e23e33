#!/bin/sh
# screenshots.sh — the pictures of the README, remade from the emulator
# (`make screenshots`): the --html page of an emulated 8 nodes × 8 ranks hang,
# of a 64 nodes × 8 ranks hang, of a 16 384-rank hang (2 048 nodes × 8, made
# by the bench's generator from two emulated 4 × 8 jobs), of a slow link with
# the step metrics, and a frame of `proxytrace top`, each taken by Debian's
# headless chromium into OUT-DIR. Every job runs on emulated time, so each
# page is the same on every run but for the process id (and top's clock):
# OUT-DIR/pictures.sha256 holds the digest of each page with those masked,
# which tests/docs/pictures.sh compares with the pages the tool makes now —
# a picture that no longer shows what the tool prints fails there until
# `make screenshots` remakes it. --pages-only makes the pages and their
# digests alone (no browser). Usage:
# screenshots.sh BUILD-DIR OUT-DIR [--pages-only]
set -eu
B=$(cd "$1" && pwd)
OUT=$2
PAGES_ONLY=${3:-}
PT=$B/proxytrace
PLUGIN=$B/librccl-profiler-proxytrace.so
RUN=${PROXYTRACE_EMULATOR:-}
BROWSER=
if [ -z "$PAGES_ONLY" ]; then
  BROWSER=$(command -v chromium || command -v chromium-browser) ||
    { echo "screenshots.sh: chromium is needed (apt-get install chromium)" >&2; exit 1; }
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# the jobs' folders by short names from here: the pages name them so,
# wherever the scratch folder is
cd "$T"
: >"$T/sums"
SANDBOX=
[ "$(id -u)" -eq 0 ] && SANDBOX=--no-sandbox
# digest PAGE PNG DUMPS: the page's digest, the pid of the run that wrote
# DUMPS, the scratch folder and a clock masked, under the picture's name
digest() {
  python3 - "$1" "$2" "$3" "$T" >>"$T/sums" <<'PY'
import hashlib, os, re, sys
page, png, dumps, tmp = sys.argv[1:5]
text = open(page, encoding="utf-8", errors="replace").read().replace(tmp, "DIR")
pids = sorted({m.group(1) for n in os.listdir(dumps) for m in [re.match(r"proxytrace-(?:metrics-)?[^-]*-(\d+)-r", n)] if m})
for p in pids:
    text = re.sub(r"(pid[ =]|\"pid\":|-)%s\b" % p, r"\g<1>PID", text)
text = re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", text)
print("%s  %s" % (hashlib.sha256(text.encode()).hexdigest(), os.path.basename(png)))
PY
}
shot() { # shot PAGE PNG WIDTH HEIGHT DUMPS
  digest "$1" "$2" "$5"
  [ -n "$PAGES_ONLY" ] && return 0
  HOME=$T timeout 120 "$BROWSER" --headless $SANDBOX --disable-gpu --no-first-run --user-data-dir="$T/profile" \
    --hide-scrollbars --window-size="$3,$4" --screenshot="$2" "file://$1" >/dev/null 2>&1
  [ -s "$2" ] || { echo "screenshots.sh: no picture $2" >&2; exit 1; }
  echo "$2: $(wc -c <"$2") bytes"
}
# A hung 64-rank job: rank 27's GPU stops.
$RUN "$PT" sim --plugin "$PLUGIN" --nodes 8 --ranks-per-node 8 --stall 27:0:5 --dump-dir hang --quiet >/dev/null 2>&1 || true
$RUN "$PT" analyze --html "$T/hang.html" hang >/dev/null || true
shot "$T/hang.html" "$OUT/report-hang.png" 1200 1050 hang
# The same at 512 ranks: rank 77's GPU stops.
$RUN "$PT" sim --plugin "$PLUGIN" --nodes 64 --ranks-per-node 8 --iters 1 --ops allreduce:32M --stall 77:0:5 \
  --dump-dir hang512 --quiet >/dev/null 2>&1 || true
$RUN "$PT" analyze --html "$T/hang512.html" hang512 >/dev/null || true
shot "$T/hang512.html" "$OUT/report-hang-512.png" 1200 1000 hang512
# 16 384 ranks, one of them stalled (the emulator stops at 128 nodes).
for job in hung ok; do
  stall=
  [ $job = hung ] && stall="--stall 3:0:5"
  $RUN "$PT" sim --plugin "$PLUGIN" --nodes 4 --ranks-per-node 8 --channels 1 --iters 1 --ops allreduce:1M $stall \
    --dump-dir "t-$job" --quiet >/dev/null 2>&1 || true
done
$RUN "$B/bench/gen_job" t-hung t-ok 16384 8197 hang16k >/dev/null
$RUN "$PT" analyze --html "$T/hang16k.html" hang16k >/dev/null || true
shot "$T/hang16k.html" "$OUT/report-hang-16k.png" 1200 1000 t-hung
rm -rf hang16k
# A slow link, seen in the step metrics.
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --host nccl-2.28 --nodes 4 --ranks-per-node 2 --channels 2 --iters 6 \
  --ops sendrecv:8M --slow-link 5:4 --dump-dir slow --env PROXYTRACE_METRICS_INTERVAL_MS=60000 \
  >/dev/null 2>&1 || true
$RUN "$PT" analyze --html "$T/slow.html" slow >/dev/null || true
shot "$T/slow.html" "$OUT/report-slow.png" 1200 1000 slow
# proxytrace top, one frame, as a terminal shows it.
$RUN "$PT" top slow --once >"$T/top.txt" 2>&1 || true
python3 - "$T/top.txt" "$T/top.html" <<'PY'
import html, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
open(sys.argv[2], "w").write("<!DOCTYPE html><meta charset=utf-8><body style='margin:0;background:#111'>"
                             "<pre style='color:#ddd;font:13px monospace;padding:12px;margin:0'>%s</pre>"
                             % html.escape(text))
PY
shot "$T/top.html" "$OUT/top.png" 1100 420 slow
cp "$T/sums" "$OUT/pictures.sha256"
