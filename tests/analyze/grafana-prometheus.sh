#!/bin/sh
# grafana-prometheus.sh — every panel of docs/grafana/proxytrace-dashboard.json
# evaluated by a real Prometheus scraping a real node_exporter's textfile
# collector (Debian's prometheus and prometheus-node-exporter, on 127.0.0.1
# only), fed the metrics files of emulated jobs: without per-channel metrics
# (NCCL 2.28) and with them (PROXYTRACE_METRICS_CHANNELS=1, RCCL); each
# series of each panel equals what the jobs' JSON lines files say
# (tests/analyze/grafana_prometheus.py), and no receive series that moved
# steps reads a flat zero. Each job is run twice with one seed, 2 then 4
# iterations (the longer one hangs in its last, so ops are in flight), and
# the folder served turns from the first files to the second between
# scrapes, so every counter moves. $1: the build folder.
#
# Where the packages cannot be had (no dpkg: not a Debian machine) the test
# is skipped with a message; on Debian they are test dependencies
# (scripts/ensure-test-deps.sh) and their absence is a failure.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)

if ! command -v prometheus >/dev/null 2>&1 || ! command -v prometheus-node-exporter >/dev/null 2>&1; then
  command -v dpkg >/dev/null 2>&1 &&
    fail "prometheus or prometheus-node-exporter is not installed (make test-deps installs them)"
  echo "grafana-prometheus.sh: SKIP: not a Debian machine, and the test needs Debian's prometheus and prometheus-node-exporter"
  exit 0
fi

job() { # job NAME ITERS SIM-ARGS...: metrics of one run into $T/NAME
  name=$1; iters=$2; shift 2
  $RUN "$PT" sim --plugin "$PLUGIN" --quiet --nodes 2 --ranks-per-node 2 --channels 2 \
    --ops allreduce:1M,sendrecv:1M --iters "$iters" --dump-dir "$T/dumps-$name" \
    --env PROXYTRACE_METRICS_INTERVAL_MS=60000 --env PROXYTRACE_METRICS_DIR="$T/$name" "$@" >"$T/out" 2>&1
  rc=$?
  { [ "$iters" -eq 2 ] && [ $rc -eq 0 ]; } || { [ "$iters" -eq 4 ] && [ $rc -eq 3 ]; } ||
    { cat "$T/out"; fail "sim $name exits $rc"; }
}
job plain-a 2 --host nccl-2.28 --seed 1
job plain-b 4 --host nccl-2.28 --seed 1 --stall 1:0:3
job channels-a 2 --host rccl --seed 2 --env PROXYTRACE_METRICS_CHANNELS=1
job channels-b 4 --host rccl --seed 2 --stall 1:0:3 --env PROXYTRACE_METRICS_CHANNELS=1

mkdir "$T/work"
/usr/bin/python3 "$SRC/tests/analyze/grafana_prometheus.py" "$SRC/docs/grafana/proxytrace-dashboard.json" "$T/work" \
  "plain:$T/plain-a:$T/plain-b" "channels:$T/channels-a:$T/channels-b" || fail "the dashboard's panels"
echo "grafana-prometheus.sh: all checks passed"
