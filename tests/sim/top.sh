#!/bin/sh
# `proxytrace top` on the metrics files of emulated jobs: --once names the
# slow edge first, network-side for a slow link and GPU-side for a slow GPU;
# every row, receive rows too, has a throughput; and in a real terminal
# (tmux), as a person sees it: the view of an empty directory fills in when
# the files come, throughput between refreshes is bytes over busy time (an
# idle edge keeps its file's figure, not 0), and `q` leaves; at 200x50 and
# at 80x24 each row holds on one line, under the header.
# $1: the build folder.
B=${1:-build}
PT="$(cd "$B" && pwd)/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
T=$(mktemp -d)
SOCK="pt-top-$$"
trap 'tmux -L "pt-top-$$" kill-server 2>/dev/null; tmux -L "pt-top-$$-80" kill-server 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Real time at 5 ms a poll: the step times of a healthy job then differ by
# less than 3x however busy the machine is (at 0.2 ms, and once at 2 ms, late
# wake-ups beside a CPU hog made a healthy edge "slow").
job() { # job DIR FAULT...: a 3-node send/recv job in real time, metrics to DIR
  d=$1; shift
  $RUN "$PT" sim --plugin "$PLUGIN" --quiet --nodes 3 --ranks-per-node 2 --channels 2 --iters 6 \
    --ops sendrecv:8M --pace 5000 "$@" --env PROXYTRACE_METRICS_INTERVAL_MS=1000 \
    --env PROXYTRACE_METRICS_DIR="$d" >"$T/out" 2>&1 || { cat "$T/out"; fail "sim $*"; }
}

job "$T/link" --slow-link 2:8
$RUN "$PT" top "$T/link" --once >"$T/once" || fail "top --once exits non-zero"
first=$(sed -n 3p "$T/once")
echo "$first" | grep -q "network-side" || { cat "$T/once"; fail "slow link: first row is not network-side"; }
echo "$first" | awk '{exit !($1 == 2 || $2 == 2)}' || { cat "$T/once"; fail "slow link: first row is not rank 2's"; }
[ "$(grep -c 'slow' "$T/once")" -le 5 ] || { cat "$T/once"; fail "slow link: healthy edges marked slow"; }

job "$T/gpu" --slow-gpu 3:8
$RUN "$PT" top "$T/gpu" --once >"$T/once" || fail "top --once exits non-zero"
first=$(sed -n 3p "$T/once")
echo "$first" | awk '{exit !($1 == 3)}' && echo "$first" | grep -q "GPU-side" ||
  { cat "$T/once"; fail "slow GPU: first row is not rank 3, GPU-side"; }

# one 6-rank communicator, one metrics file a rank: the header counts communicators
head -1 "$T/once" | grep -q " 1 communicator, " || { head -1 "$T/once"; fail "the header does not count 1 communicator"; }

# started before the job: --once says DIR is not there yet (exit 3)
$RUN "$PT" top "$T/not-yet" --once >"$T/once" 2>"$T/err"; rc=$?
[ $rc -eq 3 ] && grep -q "is not there (yet)" "$T/err" || { cat "$T/err"; fail "top --once on a folder not there yet: exit $rc"; }

job "$T/ok"
$RUN "$PT" top "$T/ok" --once >"$T/once" || fail "top --once exits non-zero"
! grep -q "slow [0-9]" "$T/once" || { cat "$T/once"; fail "healthy job: an edge marked slow"; }
# RCCL (the default host) reports a receive's size too: every row, send or
# receive, has a throughput.
awk 'NR > 2 && NF && $6 == "-" {bad = 1} END {exit bad}' "$T/once" ||
  { cat "$T/once"; fail "healthy job: a row without throughput"; }

# A metrics file planted with a host holding ESC ]0; (a window title): the
# view shows the escape, never the control bytes.
mkdir "$T/planted"
for f in "$T/ok"/*.jsonl; do
  sed 's/"host":"/"host":"\\u001b]0;owned\\u0007/' "$f" >"$T/planted/$(basename "$f")"
done
$RUN "$PT" top "$T/planted" --once >"$T/once" || fail "top --once on the planted files exits non-zero"
grep -q '\\x1b]0;owned\\x07' "$T/once" || { cat "$T/once"; fail "planted host: the escape is not shown"; }
! grep -q "$(printf '\033')" "$T/once" || fail "planted host: top printed an ESC byte"

# Bad input.
mkfifo "$T/fifo"
$RUN "$PT" top "$T/fifo" --once >/dev/null 2>"$T/err"
[ $? -eq 1 ] && grep -q "cannot read" "$T/err" || fail "a FIFO for DIR: want exit 1 and a message"
mkdir "$T/empty"
$RUN "$PT" top "$T/empty" --once >/dev/null 2>"$T/err"
[ $? -eq 3 ] && grep -q "no step metrics in" "$T/err" || fail "no metrics: want exit 3 and a message"
cp "$T/out" "$T/not-metrics"
$RUN "$PT" top "$T/not-metrics" >/dev/null 2>"$T/err" </dev/null
[ $? -eq 3 ] && grep -q "holds no step metrics" "$T/err" || fail "a file without metrics: want exit 3 and a message"
$RUN "$PT" top "$T/ok" --interval 5 >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q "milliseconds 100..3600000" "$T/err" || fail "bad --interval: want exit 2 and the range"

# In a terminal: starts on an empty directory, fills in, q quits.
mkdir "$T/live"
tmux -L "$SOCK" new-session -d -x 200 -y 50 "$RUN $PT top $T/live --interval 200; echo exited >$T/exited; sleep 30" ||
  fail "tmux cannot start"
screen() { tmux -L "$SOCK" capture-pane -p -t 0; }
waitfor() { # waitfor TEXT: up to 5 s for TEXT on the screen
  for _ in $(seq 1 50); do screen | grep -q "$1" && return 0; sleep 0.1; done
  screen; fail "the terminal never showed '$1'"
}
waitfor "no metrics yet"
cp "$T/link"/proxytrace-metrics-* "$T/live/"
waitfor "network-side"
screen | grep -q "^RANK  PEER" || fail "no column header on the screen"
# every line a row under the two header lines (none wraps), the widest
# columns kept
nowrap() { # nowrap FILE WHERE
  head -1 "$1" | grep -q "^proxytrace top " || { cat "$1"; fail "$2: the header is not the first line"; }
  sed -n 2p "$1" | grep -q "^RANK  PEER" || { cat "$1"; fail "$2: the column header is not the second line"; }
  awk 'NR > 2 && NF && !/^[0-9]+ +[0-9]+ +(send|recv) / {bad = 1} END {exit bad}' "$1" ||
    { cat "$1"; fail "$2: a line that is not a row (a wrapped one)"; }
}
screen >"$T/wide"
nowrap "$T/wide" "200 columns"
sed -n 2p "$T/wide" | grep -q "STEPS" && sed -n 2p "$T/wide" | grep -q "HOST" ||
  { cat "$T/wide"; fail "200 columns: STEPS or HOST left out"; }
# Throughput between refreshes is bytes over the time the edge was busy:
# the files rewritten a second later, rank 0's send edge 1 GB more in 2 s
# more busy time (500.0 MB/s), every other edge idle — which shows its
# file's figure, as --once does, not 0.
$RUN "$PT" top "$T/live" --once >"$T/before" || fail "top --once on the live folder"
python3 - "$T/live" <<'PY' || fail "rewriting the metrics files"
import glob, json, os, sys
for f in glob.glob(sys.argv[1] + "/proxytrace-metrics-*.jsonl"):
    out = []
    for line in open(f):
        o = json.loads(line)
        if o.get("type") == "metrics":
            o["time_ns"] += 10**9
        if o.get("type") == "edge" and o["rank"] == 0 and o["dir"] == "send" and o["channel"] is None:
            o["bytes"] += 10**9
            o["busy_ns"] += 2 * 10**9
        out.append(json.dumps(o, separators=(",", ":")))
    tmp = os.path.join(os.path.dirname(f), "." + os.path.basename(f) + ".tmp")
    open(tmp, "w").write("\n".join(out) + "\n")
    os.rename(tmp, f)
PY
waitfor "500.0 MB/s"
screen >"$T/after"
grep -q "^0 .* send all .* 500.0 MB/s" "$T/after" || { cat "$T/after"; fail "rank 0's send row is not 500.0 MB/s"; }
! grep -q " 0.0 kB/s" "$T/after" || { cat "$T/after"; fail "an idle edge shows 0.0 kB/s"; }
row1=$(grep "^1 .* send all " "$T/before" | awk '{print $6, $7}')
grep -q "^1 .* send all .* $row1 " "$T/after" || { cat "$T/before" "$T/after"; fail "an idle edge does not show its file's figure ($row1)"; }
tmux -L "$SOCK" send-keys -t 0 q
for _ in $(seq 1 50); do [ -f "$T/exited" ] && break; sleep 0.1; done
[ -f "$T/exited" ] || { screen; fail "q did not quit"; }

# At 80x24 no row wraps: the header stays on the first line, every row
# holds its rank, peer and direction, and the slow mark sits on its row.
# A server of its own (the first one may still be exiting).
rm -f "$T/exited"
tmux -L "$SOCK" kill-server 2>/dev/null
SOCK="pt-top-$$-80"
tmux -L "$SOCK" new-session -d -x 80 -y 24 "$RUN $PT top $T/live --interval 200; echo exited >$T/exited; sleep 30" ||
  fail "tmux cannot start at 80x24"
waitfor "network-side"
screen >"$T/narrow"
nowrap "$T/narrow" "80 columns"
grep -q "^[0-9].*<- slow [0-9.]*x, network-side" "$T/narrow" || { cat "$T/narrow"; fail "80 columns: the slow mark is not on its row"; }
tmux -L "$SOCK" send-keys -t 0 q
echo "top: all checks passed"
