#!/bin/sh
# Files planted in a shared dump folder under a dump's or a metrics file's
# name: a FIFO, a link to /dev/zero, and a file of one 16 MiB line. Every
# reader passes over them and ends — `analyze` (the folder, and such a file
# named alone), `analyze --summary`, `analyze --follow --for`, `top --once`,
# and `--follow` stopped by SIGTERM — each within a generous bound, and
# (outside sanitizers and qemu) the long line costs none of them 8 MB: no
# line longer than 1 MiB is held. $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
MEASURE=1
case "$(readelf -d "$PT" 2>/dev/null)" in *libasan*|*libtsan*) MEASURE=0 ;; esac
[ -n "$RUN" ] && MEASURE=0

# run SECONDS SIGNAL-AFTER ARGS...: proxytrace ARGS, killed after SECONDS
# (status 124), or sent SIGTERM after SIGNAL-AFTER seconds (0: never);
# "status KiB" into $T/run: the most memory it held beyond what the fork
# of the interpreter that ran it held (its figure includes that fork).
run() {
  python3 - "$@" >"$T/run" <<'PY'
import resource, subprocess, sys, os, signal
limit, term = float(sys.argv[1]), float(sys.argv[2])
cmd = os.environ.get("RUN", "").split() + [os.environ["PT"]] + sys.argv[3:]
# what the fork of this interpreter itself counts before the exec: the
# figure is what the command took beyond it
subprocess.run(["true"])
base = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(os.environ["T"] + "/out", "w") as out, open(os.environ["T"] + "/err", "w") as err:
    p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    try:
        if term:
            try:
                p.wait(timeout=term)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill(); p.wait(); rc = 124
print(rc, max(0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss - base))
PY
}
export RUN PT T

# expect WHAT STATUS... -- SECONDS TERM ARGS...: ends with one of STATUS
# within SECONDS, and (measured builds) in 8 MB more than the fork that
# started it.
expect() {
  what=$1; shift; ok=" "
  while [ "$1" != "--" ]; do ok="$ok$1 "; shift; done; shift
  run "$@"
  read -r rc kb <"$T/run"
  [ "$rc" -ne 124 ] || { cat "$T/err"; fail "$what: still running after $1 s"; }
  case "$ok" in *" $rc "*) ;; *) cat "$T/out" "$T/err"; fail "$what: exit $rc, want one of$ok";; esac
  [ "$MEASURE" -eq 0 ] || [ "$kb" -lt 8192 ] || fail "$what: $kb KiB more than its fork, over 8 MB"
  echo "ok   $what (exit $rc, +$kb KiB)"
}

mkdir -p "$T/job/dumps"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --nodes 3 --ranks-per-node 2 --channels 2 --iters 6 --ops sendrecv:8M \
  --poll-us 400 --slow-link 2:8 --env PROXYTRACE_METRICS_INTERVAL_MS=1000 --env PROXYTRACE_METRICS_DIR="$T/job" \
  --dump-dir "$T/job/dumps" >"$T/out" 2>&1 || { cat "$T/out"; fail "sim"; }
M=proxytrace-metrics-planted-r9-1.jsonl
for kind in fifo zero long; do
  cp -r "$T/job" "$T/$kind"
  case $kind in
    fifo) mkfifo "$T/$kind/$M" "$T/$kind/dumps/rank9.log" ;;
    zero) ln -s /dev/zero "$T/$kind/$M"; ln -s /dev/zero "$T/$kind/dumps/rank9.log" ;;
    long) head -c 16777216 /dev/zero | tr '\0' '{' >"$T/$kind/$M"; cp "$T/$kind/$M" "$T/$kind/dumps/rank9.log" ;;
  esac
  d=$T/$kind
  expect "$kind: analyze" 1 -- 60 0 analyze "$d"
  [ $kind = long ] || grep -q "rank9.log: not a regular file" "$T/out" ||
    { $RUN "$PT" analyze -v "$d" | grep -q "rank9.log.*not a regular file" || fail "$kind: the planted dump not said"; }
  expect "$kind: analyze FILE" 2 3 4 -- 60 0 analyze "$d/dumps/rank9.log"
  [ $kind = long ] || grep -q "not a regular file" "$T/out" "$T/err" || { cat "$T/out"; fail "$kind: FILE not said"; }
  expect "$kind: analyze --summary" 0 -- 60 0 analyze --summary "$T/$kind.summary" "$d"
  expect "$kind: analyze --follow --for 1" 1 -- 60 0 analyze --follow "$d" --for 1 --interval 200
  grep -q "culprit" "$T/out" || { cat "$T/out"; fail "$kind: --follow named no culprit"; }
  expect "$kind: analyze --follow, SIGTERM" 0 1 -- 60 1 analyze --follow "$d" --interval 200
  expect "$kind: top --once" 0 -- 60 0 top "$d" --once
  grep -q "network-side" "$T/out" || { cat "$T/out"; fail "$kind: top --once named no slow link"; }
done
# the folder --follow and top are given, a FIFO itself
mkfifo "$T/fifo-dir"
expect "--follow FIFO" 2 -- 60 0 analyze --follow "$T/fifo-dir" --for 1
expect "top FIFO" 1 -- 60 0 top "$T/fifo-dir" --once
echo "planted: every reader passed over the planted files"
