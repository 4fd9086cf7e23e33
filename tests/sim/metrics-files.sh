#!/bin/sh
# The step metrics files (docs/metrics.md) of emulated jobs under RCCL and
# stock NCCL profiles: they parse with the Prometheus text parser of
# Debian's python3-prometheus-client and say the same as their JSON lines
# (tests/sim/check_metrics.py); per-channel edges on request; a hung job's
# files parse (tests/sim/metrics-live.sh watches them rewritten); a missing
# directory, bad values and an unwritable directory are said once and cost
# the job nothing.
# $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
CHECK="$(dirname "$0")/check_metrics.py"

. "$(dirname "$0")/../common/prometheus-python.sh"

sim() { $RUN "$PT" sim --plugin "$PLUGIN" --quiet "$@"; }
metrics() { echo "--env PROXYTRACE_METRICS_INTERVAL_MS=$1 --env PROXYTRACE_METRICS_DIR=$2"; }

# Healthy jobs: files for every rank, parsed and cross-checked.
for host in rccl nccl-2.25 nccl-2.28 nccl-2.30; do
  d="$T/$host"
  # shellcheck disable=SC2046
  sim --host "$host" $(metrics 50 "$d") >"$T/out" 2>&1 || { cat "$T/out"; fail "$host: sim failed"; }
  "$PY" "$CHECK" "$d" --ranks 8 || fail "$host: metrics files"
done

# Per channel on request.
# shellcheck disable=SC2046
sim --host nccl-2.29 --iters 4 $(metrics 50 "$T/ch") --env PROXYTRACE_METRICS_CHANNELS=1 >"$T/out" 2>&1 ||
  fail "channels: sim failed"
"$PY" "$CHECK" "$T/ch" --ranks 8 --channels || fail "channels: metrics files"

# A job that hangs: its files parse and cross-check, the last ones final
# (that they are rewritten while it hangs, watched live, is metrics-live.sh,
# on the machine's clock).
# shellcheck disable=SC2046
sim --host rccl --stall 3:0:5 --hold 3 $(metrics 100 "$T/hang") --env PROXYTRACE_STALL_MS=0 >"$T/out" 2>&1
rc=$?
[ "$rc" -eq 3 ] || { cat "$T/out"; fail "hang: sim exits $rc, want 3"; }
"$PY" "$CHECK" "$T/hang" --ranks 8 || fail "hang: metrics files"

# An interval without a directory: said once, metrics off, no files.
mkdir "$T/cwd"
(cd "$T/cwd" && $RUN "$PT" sim --plugin "$PLUGIN" --quiet --env PROXYTRACE_METRICS_INTERVAL_MS=50 >"$T/out" 2>&1) ||
  fail "no dir: sim failed"
[ "$(grep -c 'metrics stay off' "$T/out")" -eq 1 ] || { cat "$T/out"; fail "no dir: want one message"; }
[ -z "$(ls -A "$T/cwd")" ] || fail "no dir: files were written in the working directory"

# Bad values: one message each, naming what is accepted, and the defaults.
# shellcheck disable=SC2046
sim --env PROXYTRACE_METRICS_INTERVAL_MS=soon --env PROXYTRACE_METRICS_DIR="$T/bad" \
  --env PROXYTRACE_METRICS_CHANNELS=yes >"$T/out" 2>&1 || fail "bad values: sim failed"
grep -q "PROXYTRACE_METRICS_INTERVAL_MS='soon' is not a whole number of milliseconds" "$T/out" ||
  fail "bad interval not said"
grep -q "PROXYTRACE_METRICS_CHANNELS='yes' is not 0 or 1; using the default 0" "$T/out" || fail "bad channels not said"
[ ! -e "$T/bad" ] || fail "bad interval: metrics were on"

# A directory that cannot be made: said once, the job goes on.
: >"$T/file"
# shellcheck disable=SC2046
sim $(metrics 20 "$T/file/sub") >"$T/out" 2>&1 || fail "unwritable: sim failed"
[ "$(grep -c 'cannot create PROXYTRACE_METRICS_DIR' "$T/out")" -eq 1 ] || { cat "$T/out"; fail "unwritable: want one message"; }
echo "metrics files: all checks passed"
