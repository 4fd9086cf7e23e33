#!/bin/sh
# proxytrace as one child of the fan-out, beside two test children: on a
# hung emulated job its dumps lead `proxytrace analyze` to the same verdict,
# culprit and stuck edges as when the emulator loads proxytrace itself
# (what depends on the clock — how many stall dumps a hold writes, the
# timing section, the pid — is left out of the comparison, and so are the
# host names: under the fan-out the emulator cannot name each rank's node,
# so the dumps carry the machine's name and the nodes come from rank
# numbering); the children
# after it still get their events (their init and dump warnings absent).
# $1: the build folder.
B=${1:-build}
PT="$B/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
D=$(cd "$B" && pwd)
PLUGIN="$D/librccl-profiler-proxytrace.so"
FANOUT="$D/libnccl-profiler-fanout.so"
KIDS="$D/tests/fanout/libchild-v6.so,$D/tests/fanout/libchild-dump.so"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

case "$B" in
  *-thread|*-address) HOLD=1.0 ;;
  *) HOLD=0.4 ;;
esac

# The verdict without what depends on the clock (no slowness looked for:
# these jobs are unpaced, and a sanitizer's or a loaded machine's timing
# would decide it).
verdict() {
  $RUN "$PT" analyze --slow-factor 1000 "$1" | sed -e 's/pid [0-9]*/pid N/' -e '/^slow links:/d' -e '/^inputs:/d' \
    -e 's/([a-z0-9_.-]*, pid N)/(HOST, pid N)/g' -e 's/#\(node[0-9]*\) (nodes by rank numbering)/\1/g'
}

for host in rccl nccl-2.30 nccl-2.32; do
  for job in "--stall 3:0:5" "--no-recv 2:1:0 --fault-call 1"; do
    name="$host-$(echo "$job" | tr -c 'a-z0-9' '_')"
    $RUN "$PT" sim --host "$host" --plugin "$PLUGIN" --quiet $job --hold "$HOLD" \
      --env PROXYTRACE_STALL_MS=100 --dump-dir "$T/$name-direct" >"$T/out" 2>&1
    [ $? -eq 3 ] || { cat "$T/out"; fail "$name direct: the job did not hang"; }
    $RUN "$PT" sim --host "$host" --plugin "$FANOUT" --quiet $job --hold "$HOLD" \
      --env PROXYTRACE_STALL_MS=100 --env PROXYTRACE_FANOUT_HOST="$host" \
      --env PROXYTRACE_FANOUT_PLUGINS="$PLUGIN,$KIDS" --dump-dir "$T/$name-fanned" >"$T/out" 2>&1
    [ $? -eq 3 ] || { cat "$T/out"; fail "$name fanned: the job did not hang"; }
    if grep -q 'proxytrace-fanout' "$T/$name-fanned"/rank*.log; then
      grep 'proxytrace-fanout' "$T/$name-fanned"/rank*.log | head -3
      fail "$name: the fan-out warned"
    fi
    verdict "$T/$name-direct" >"$T/v1"
    verdict "$T/$name-fanned" >"$T/v2"
    grep -q '^proxytrace analyze: HANG' "$T/v1" || { cat "$T/v1"; fail "$name: no hang verdict from the direct run"; }
    grep -q '^culprit 1: ' "$T/v1" || { cat "$T/v1"; fail "$name: no culprit from the direct run"; }
    diff "$T/v1" "$T/v2" >"$T/diff" || { cat "$T/diff"; fail "$name: the analysis differs under the fan-out"; }
  done
done
echo "ok: proxytrace under the fan-out, with two more children, leads to the same analysis"
