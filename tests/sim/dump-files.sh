#!/bin/sh
# The plugin's dump files while an emulated job hangs, in every host
# profile: with --hold and a short PROXYTRACE_STALL_MS the stall watchdog
# writes per-rank files whose JSON parses and names the stuck ops of the
# ground truth, with opCounts that pair each stuck send with its receive
# (tests/sim/check_dumps.py); a healthy job writes no stall dump; the dump
# signal dumps every rank while recording goes on and reaches the host's own
# handler too; a dead rank leaves no dump, and the summary says so. The
# jobs run on emulated time: the watchdog is timed exactly, in every build
# and under any load, so no check gets a second run.
# $1: the build folder.
B=${1:-build}
PT="$B/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-} # a build for another architecture runs under its emulator
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
CHECK="$(dirname "$0")/check_dumps.py"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

STALL=250
# The stall dump comes within one watchdog check (the stall time / 20) and
# one held poll (1 ms) of the stall time, and ticks are the emulated clock:
# no slack for a busy machine, none for the clock's calibration.
SLACK=15
CLOCK=0
HOLD=0.8
# A healthy job of several stall periods: polls of 1 emulated ms (a phase
# waits 0..2 of them), 4 iterations last about 2 emulated s.
LONG="--iters 4 --poll-us 1000"

# A cap far above what these jobs write: this test reads each rank's one
# file (rotation, PROXYTRACE_DUMP_MAX_MB, is tests/sim/dump-rotation.sh's);
# a slow machine or an emulator writes more dumps in the held time.
sim() { $RUN "$PT" sim --plugin "$PLUGIN" --quiet --env PROXYTRACE_DUMP_MAX_MB=1024 "$@"; }

# One hung run and its check: host, name, then the fault options.
hung_once() {
  rm -rf "$T/$host-$name"
  sim --host "$host" "$@" --hold "$HOLD" --env PROXYTRACE_STALL_MS=$STALL --dump-dir "$T/$host-$name" \
    --truth-file "$T/$host-$name.truth" >"$T/out" 2>&1
  rc=$?
  [ $rc -eq 3 ] || { cat "$T/out"; echo "$host $name: sim exits $rc, want 3 (hung)"; return 1; }
  grep -q "truth: stuck" "$T/$host-$name.truth" || { echo "$host $name: the job did not hang"; return 1; }
  python3 "$CHECK" "$T/$host-$name" "$T/$host-$name.truth" --trigger stall --stall-ms $STALL --slack-ms $SLACK \
    --clock-ms $CLOCK $stock
}
hung() {
  host=$1 name=$2; shift 2
  stock=--stock
  case $host in rccl*) stock= ;; esac
  hung_once "$@" || fail "$host $name"
}

for host in rccl nccl-2.23 nccl-2.24 nccl-2.25 nccl-2.26 nccl-2.27 nccl-2.28 nccl-2.29 nccl-2.30 \
  nccl-2.31 nccl-2.32 rccl-2.31; do
  hung "$host" allreduce --stall 3:0:5
  hung "$host" sendrecv --stall 1:0:1 --fault-call 1
  case $host in rccl|nccl-2.23|nccl-2.30|rccl-2.31) hung "$host" sendrecv-all --stall 2:all:0 --fault-call 1 --channels 3 ;; esac
done

# A healthy job long enough for several stall periods: no stall dump.
for host in rccl nccl-2.23 nccl-2.28; do
  sim --host "$host" $LONG --env PROXYTRACE_STALL_MS=700 --dump-dir "$T/healthy-$host" \
    --truth-file "$T/healthy.truth" >"$T/out" 2>&1 || fail "healthy $host: sim exits $?"
  python3 "$CHECK" "$T/healthy-$host" "$T/healthy.truth" --no-trigger stall || fail "healthy $host"
  ! grep -q "trigger=stall" "$T/healthy-$host"/*.txt 2>/dev/null || fail "healthy $host: a stall dump"
done

# The dump signal while the job records: every rank dumps, the host's own
# handler (installed before the plugin) still gets the signal.
for host in rccl nccl-2.29; do
  $RUN "$PT" sim --plugin "$PLUGIN" --host "$host" $LONG --env PROXYTRACE_STALL_MS=0 \
    --env PROXYTRACE_DUMP_SIGNAL=USR1 --signal-after 0.05 --dump-dir "$T/sig-$host" \
    --truth-file "$T/sig.truth" >"$T/out" 2>&1 || { cat "$T/out"; fail "signal $host: sim exits $?"; }
  grep -q "signal: 10 sent .* the host's own handler saw it 1 time" "$T/out" || { cat "$T/out"; fail "signal $host: not chained"; }
  python3 "$CHECK" "$T/sig-$host" "$T/sig.truth" || fail "signal $host"
  n=$(grep -l "trigger=signal" "$T/sig-$host"/*.txt | wc -l)
  [ "$n" -eq 8 ] || fail "signal $host: $n ranks dumped on the signal, want 8"
done

# Without a dump signal configured, --signal-after is refused.
$RUN "$PT" sim --plugin "$PLUGIN" --signal-after 1 --quiet >"$T/out" 2>&1
[ $? -eq 1 ] || fail "--signal-after without PROXYTRACE_DUMP_SIGNAL should exit 1"
grep -q "PROXYTRACE_DUMP_SIGNAL" "$T/out" || fail "--signal-after: the message does not name the variable"

# A dead rank writes nothing after it died; the summary says so.
kill_once() {
  rm -rf "$T/kill"
  $RUN "$PT" sim --plugin "$PLUGIN" --kill 0:2 --hold "$HOLD" --env PROXYTRACE_STALL_MS=$STALL --dump-dir "$T/kill" \
    --truth-file "$T/kill.truth" >"$T/out" 2>&1
  [ $? -eq 3 ] || { echo "kill: the sim should exit 3 (hung)"; return 1; }
  grep -q "ranks that left no dump (none in their log, no dump file): 0 (dead)" "$T/out" ||
    { cat "$T/out"; echo "kill: the summary does not name the dead rank"; return 1; }
  python3 "$CHECK" "$T/kill" "$T/kill.truth" --trigger stall --stall-ms $STALL --slack-ms $SLACK --clock-ms $CLOCK
}
kill_once || fail "kill"

# Files of an earlier run in the dump directory are not this run's.
touch "$T/kill/rank99.log" "$T/kill/proxytrace-old-1-r0-1.jsonl"
sim --dump-dir "$T/kill" >/dev/null 2>&1 || fail "rerun: sim exits $?"
[ ! -e "$T/kill/rank99.log" ] && [ ! -e "$T/kill/proxytrace-old-1-r0-1.jsonl" ] || fail "files of an earlier run remain"
echo "ok"
