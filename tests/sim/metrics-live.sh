#!/bin/sh
# The step metrics files (docs/metrics.md) are rewritten while a job hangs:
# not final yet, the stuck ops in flight; then finalize writes them once
# more, final. Watched live from here, so the job runs on the machine's
# clock (--real-time: on emulated time its 3 s hold passes in a blink), and
# this is one of the real-time tests (make test-real-time).
# $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
CHECK="$(dirname "$0")/check_metrics.py"
. "$(dirname "$0")/../common/prometheus-python.sh"

$RUN "$PT" sim --plugin "$PLUGIN" --quiet --real-time --host rccl --stall 3:0:5 --hold 3 \
  --env PROXYTRACE_METRICS_INTERVAL_MS=100 --env PROXYTRACE_METRICS_DIR="$T/hang" --env PROXYTRACE_STALL_MS=0 \
  >"$T/out" 2>&1 &
pid=$!
seen=""
for _ in $(seq 1 100); do
  f=$(ls "$T/hang"/proxytrace-metrics-*-r3-*.jsonl 2>/dev/null | head -n 1)
  if [ -n "$f" ] && grep -q '"final":false' "$f" && grep -q '"inFlight":[1-9]' "$f"; then seen=1; break; fi
  sleep 0.1
done
wait $pid
rc=$?
[ "$rc" -eq 3 ] || { cat "$T/out"; fail "hang: sim exits $rc, want 3"; }
[ -n "$seen" ] || fail "hang: no metrics file with ops in flight while the job was held"
"$PY" "$CHECK" "$T/hang" --ranks 8 || fail "hang: metrics files"
grep -q '"final":true' "$f" || fail "hang: the last file is not final"
echo "metrics live: rewritten while the job hung, with its stuck ops in flight; final after"
