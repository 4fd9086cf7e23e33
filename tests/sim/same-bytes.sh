#!/bin/sh
# Emulated time: the same command gives the same files on every run, quiet
# or beside two CPU hogs — byte for byte once the process id is taken out
# of names and fields. Two jobs, each run twice (the second beside the
# hogs): the README's 8x8 hang, with the stall watchdog and the dump signal
# firing while it is held, and a slow-link job with step metrics and
# periodic dumps; their dumps, metrics files, host logs, ground truth and
# the analyzer's verdicts must match. A run on real time (--pace) must not
# (its timestamps are the machine's), which shows the comparison can fail.
# $1: the build folder.
B=${1:-build}
PT="$B/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
T=$(mktemp -d)
hogs=""
trap 'kill $hogs 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

sim() { $RUN "$PT" sim --plugin "$PLUGIN" --quiet "$@"; }

# A copy of folder $1 in $2 with the pid of its run replaced by PID, in
# file names and contents, and the folder's own path by DIR (the pid and
# where the files go are what two runs may differ in). The verdict's input
# sizes are taken out too: each dump holds the pid, so a run whose pid has
# one digit more (99999, then 100000) writes files a few bytes longer; the
# files themselves are still compared whole, once normalized.
normalize() {
  python3 - "$1" "$2" <<'PY'
import os, re, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
names = sorted(os.listdir(src))
pids = [m.group(1) for m in (re.match(r"proxytrace-[^-]*-(\d+)-r", n) for n in names) if m]
# the pid where a pid is written (a file name's -PID-r, a log line's
# host:PID:tid, pid=, "pid":, "pid PID", pid="PID"), not a number that
# merely has its digits: a metrics count may equal it
pid = re.compile(r'(?m)(^[\w.-]+:){0}(?=:)|(-){0}(?=-r)|(pid=|"pid":|pid |pid="){0}\b'.format(pids[0])) if pids else None
def no_pid(text):
    return pid.sub(lambda m: next(g for g in m.groups() if g is not None) + "PID", text) if pid else text
for n in names:
    path = os.path.join(src, n)
    if not os.path.isfile(path):
        continue
    text = open(path, "rb").read().decode("utf-8", "replace").replace(src, "DIR")
    text, n = no_pid(text), no_pid(n)
    if n == "verdict.json":
        text = re.sub(r'"bytes":\d+', '"bytes":N', text)
    open(os.path.join(dst, n), "w").write(text)
PY
}

# job NAME RUN OPTIONS...: the job into $T/NAME.RUN, its truth and verdicts
# beside its files.
job() {
  name=$1 run=$2
  shift 2
  d="$T/$name.$run"
  mkdir -p "$d"
  sim --dump-dir "$d" --truth-json "$d/truth.json" "$@" >"$d/stdout" 2>&1
  echo "exit $?" >>"$d/stdout"
  # written beside the folder, then moved in: not read as its input
  $RUN "$PT" analyze --json "$d" 2>&1 | sed '/^"stats":/d' >"$d.verdict.json" # (its own timings aside)
  $RUN "$PT" analyze "$d" >"$d.verdict.txt" 2>&1
  mv "$d.verdict.json" "$d/verdict.json"
  mv "$d.verdict.txt" "$d/verdict.txt"
  normalize "$d" "$d.n"
}

same() { # same NAME: the two runs' normalized folders are identical
  if ! diff -r "$T/$1.a.n" "$T/$1.b.n" >"$T/$1.diff"; then
    head -n 20 "$T/$1.diff"
    fail "$1: two runs of the same command differ"
  fi
  n=$(ls "$T/$1.a.n" | wc -l)
  echo "ok: $1, $n files the same on both runs"
}

HANG="--nodes 8 --ranks-per-node 8 --stall 27:0:5 --hold 3 --env PROXYTRACE_STALL_MS=500
  --env PROXYTRACE_DUMP_SIGNAL=USR1 --signal-after 0.2"
SLOW="--nodes 3 --ranks-per-node 5 --ops allreduce:2M,sendrecv:1M --iters 8 --slow-link 12:10 --slow-gpu 1:10
  --env PROXYTRACE_METRICS_INTERVAL_MS=20 --env PROXYTRACE_DUMP_INTERVAL_MS=50"

# shellcheck disable=SC2086
job hang a $HANG
# shellcheck disable=SC2086
job slow a $SLOW
for _ in 1 2; do
  yes >/dev/null &
  hogs="$hogs $!"
done
# shellcheck disable=SC2086
job hang b $HANG
# shellcheck disable=SC2086
job slow b $SLOW
kill $hogs 2>/dev/null
hogs=""

grep -q "exit 3" "$T/hang.a/stdout" || fail "the hang did not hang: $(cat "$T/hang.a/stdout")"
grep -q '"trigger": *"stall"' "$T"/hang.a/*.jsonl || fail "no stall dump in the held hang"
grep -q '"trigger": *"signal"' "$T"/hang.a/*.jsonl || fail "no signal dump in the held hang"
ls "$T"/slow.a/*metrics* >/dev/null 2>&1 || fail "the slow job wrote no metrics file"
grep -q "^HANG" "$T/hang.a/verdict.txt" || grep -q "HANG" "$T/hang.a/verdict.txt" || fail "no HANG verdict: $(head -n 3 "$T/hang.a/verdict.txt")"
same hang
same slow

# The comparison can fail: real time gives other timestamps on each run.
sim --dump-dir "$T/real.a" --pace 20 --nodes 2 --ranks-per-node 2 --iters 2 >/dev/null 2>&1
sim --dump-dir "$T/real.b" --pace 20 --nodes 2 --ranks-per-node 2 --iters 2 >/dev/null 2>&1
normalize "$T/real.a" "$T/real.a.n"
normalize "$T/real.b" "$T/real.b.n"
if diff -r "$T/real.a.n" "$T/real.b.n" >/dev/null; then fail "two real-time runs gave the same bytes: the comparison sees nothing"; fi
echo "ok: two real-time runs differ, as they must"
