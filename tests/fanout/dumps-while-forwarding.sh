#!/bin/sh
# The fan-out forwarding a busy job to proxytrace and a test child while
# proxytrace's dumper thread dumps every few milliseconds and RCCL's dump
# hook runs through the fan-out at each destroy. Under `make test
# SAN=thread` ThreadSanitizer watches the forwarding, the dumps and the
# child together (a report fails the run); in every build the job must end
# well, every rank's dump files must be written and name the job's
# communicator, and the fan-out must not warn.
# $1: the build folder.
B=${1:-build}
PT="$B/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
D=$(cd "$B" && pwd)
PLUGIN="$D/librccl-profiler-proxytrace.so"
FANOUT="$D/libnccl-profiler-fanout.so"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

case "$B" in
  *-thread|*-address) ITERS=40 ;;
  *) ITERS=200 ;;
esac

for host in rccl nccl-2.32; do
  $RUN "$PT" sim --host "$host" --plugin "$FANOUT" --quiet --iters $ITERS --channels 4 \
    --env PROXYTRACE_DUMP_INTERVAL_MS=2 --env PROXYTRACE_FANOUT_HOST="$host" \
    --env PROXYTRACE_FANOUT_PLUGINS="$PLUGIN,$D/tests/fanout/libchild-dump.so" \
    --dump-dir "$T/$host" >"$T/out" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { tail -40 "$T/out"; fail "$host: sim exits $rc"; }
  n=$(ls "$T/$host"/proxytrace-*.jsonl 2>/dev/null | wc -l)
  [ "$n" -ge 8 ] || { ls "$T/$host"; fail "$host: $n dump files, want one per rank (8)"; }
  if grep -q 'proxytrace-fanout' "$T/$host"/*.log; then
    grep 'proxytrace-fanout' "$T/$host"/*.log | head -3
    fail "$host: the fan-out warned"
  fi
  grep -q '"commHash"' "$T/$host"/proxytrace-*.jsonl || fail "$host: the dumps hold no communicator"
done
echo "ok: forwarding while dumps run"
