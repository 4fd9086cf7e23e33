#!/bin/sh
# `proxytrace analyze --follow DIR`: its options and errors, the first read
# of a finished slow job (the whole run judged: a culprit line at once,
# exit 1) and of a healthy one (no line, exit 0); and, where run times are
# the program's (not under a sanitizer or qemu: --follow watches a live job
# on the machine's clock), the fail-slow matrix `make test` keeps
# (failslow.py --quick: a 1.5x slow link, GPU and proxy thread starting 8 s
# into a noisy job named, four healthy noisy jobs naming nothing); and a
# 2-rank job, too small for the comparable edges, whose 1.5x slow link is
# said `changed` against each edge's own history.
# $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
TIMED=1
case "$(readelf -d "$PT" 2>/dev/null)" in *libasan*|*libtsan*) TIMED=0 ;; esac
[ -n "$RUN" ] && TIMED=0

expect_rc() { # expect_rc RC WORDS ARGS...: exit status RC, WORDS on stderr
  want=$1 words=$2; shift 2
  $RUN "$PT" analyze "$@" >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc -eq "$want" ] || { cat "$T/out" "$T/err"; fail "analyze $*: exit $rc, not $want"; }
  [ -z "$words" ] || grep -q -- "$words" "$T/err" || { cat "$T/err"; fail "analyze $*: no '$words'"; }
}
mkdir "$T/empty"
expect_rc 2 "needs a value" --follow
expect_rc 2 "a number 1..86400" --follow "$T/empty" --window 0
expect_rc 2 "a number 100..3600000" --follow "$T/empty" --interval 5
expect_rc 2 "go with --follow" "$T/empty" --window 5
expect_rc 2 "watches DIR alone" --follow "$T/empty" "$T/empty"
expect_rc 2 "watches DIR alone" --follow "$T/empty" --json
expect_rc 0 "" --follow "$T/nowhere" --for 1 --interval 100
grep -q "not there yet; waiting for the plugin to create it" "$T/out" || { cat "$T/out"; fail "--follow of a folder not there yet"; }
[ "$(grep -c "not there yet" "$T/out")" -eq 1 ] || { cat "$T/out"; fail "--follow said more than once that the folder is not there"; }
mkfifo "$T/fifo"
expect_rc 2 "cannot read it" --follow "$T/fifo" --for 1
expect_rc 0 "" --follow "$T/empty" --for 0.5 --interval 100
[ ! -s "$T/out" ] || { cat "$T/out"; fail "--follow of an empty folder printed something"; }

[ "$TIMED" -eq 1 ] || { echo "follow: option checks passed (the timed checks step aside here)"; exit 0; }

job() { # job DIR FAULT...: a 3-node send/recv job in real time, metrics to DIR
  d=$1; shift; mkdir -p "$d"
  $RUN "$PT" sim --plugin "$PLUGIN" --quiet --nodes 3 --ranks-per-node 2 --channels 2 --iters 8 \
    --ops sendrecv:8M --pace 2000 "$@" --env PROXYTRACE_METRICS_INTERVAL_MS=1000 \
    --env PROXYTRACE_METRICS_DIR="$d" --dump-dir "$d/dumps" >"$T/out" 2>&1 || { cat "$T/out"; fail "sim $*"; }
}
job "$T/gpu" --slow-gpu 3:4
expect_rc 1 "" --follow "$T/gpu" --for 1 --interval 200
grep -q "culprit   rank 3 (.*): its GPU" "$T/out" || { cat "$T/out"; fail "slow GPU: no culprit line for rank 3's GPU"; }
[ "$(grep -c culprit "$T/out")" -eq 1 ] || { cat "$T/out"; fail "slow GPU: more than one culprit"; }
# started before the job: the folder appears later (a copy of the slow
# GPU job's, made while --follow waits), and is then read
$RUN "$PT" analyze --follow "$T/later" --for 4 --interval 200 >"$T/later.out" 2>&1 &
fpid=$!
sleep 1
cp -r "$T/gpu" "$T/later"
wait $fpid
grep -q "not there yet" "$T/later.out" && grep -q "culprit   rank 3 (.*): its GPU" "$T/later.out" ||
  { cat "$T/later.out"; fail "--follow started before the folder existed"; }
job "$T/ok"
expect_rc 0 "" --follow "$T/ok" --for 1 --interval 200
! grep -q "culprit\|slow " "$T/out" || { cat "$T/out"; fail "healthy job: a slow line"; }

# A group of two: a 2-rank job has too few comparable edges to judge any
# of them, but each edge has its own history. A 1.5x slow link from 8 s on
# (about +7 s on the watch's clock, which starts at the first export) is
# said `changed`, first seen after it began, and no culprit is named (which
# end is not known). Watched as it runs. (A healthy job's step times change
# with the machine's load too, and a change is a fact, not a culprit: the
# healthy jobs' changes are counted by failslow.py, not failed on here.)
d="$T/pair"; mkdir -p "$d"
$RUN "$PT" analyze --follow "$d" --window 5 --interval 500 --for 30 >"$d.follow" 2>&1 &
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --nodes 2 --ranks-per-node 1 --channels 2 --iters 400 \
  --ops sendrecv:8M --pace 1000 --noise --seed 5 --slow-link 0:1.5:8 --env PROXYTRACE_METRICS_INTERVAL_MS=1000 \
  --env PROXYTRACE_METRICS_DIR="$d" --dump-dir "$d/dumps" >"$d.sim" 2>&1 || { cat "$d.sim"; fail "sim (2 ranks)"; }
wait
after=$(sed -n 's/.* changed   rank [01] .*its own before (.*first seen .*, +\([0-9.]*\)s)$/\1/p' "$d.follow" |
  awk '$1 >= 5 { n++ } END { print n + 0 }')
[ "$after" -gt 0 ] || { cat "$d.follow"; fail "2 ranks, a 1.5x slow link from 8 s: no edge said changed after it began"; }
! grep -q "culprit" "$d.follow" || { cat "$d.follow"; fail "2 ranks: a culprit named (either end may be slow)"; }
echo "follow: 2 ranks, a 1.5x slow link from 8 s: $after edge sides said changed after it began"

python3 "$(dirname "$0")/failslow.py" "$B" --quick || fail "the fail-slow matrix"
echo "follow: all checks passed"
