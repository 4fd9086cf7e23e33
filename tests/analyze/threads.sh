#!/bin/sh
# The analysis of a directory read on several threads (analyze --threads,
# docs/analyze.md, "Large jobs") against the same analysis read in one: the
# same JSON document but for its timing and memory figures, the same
# records, the same summary, the same exit status. The folders are emulated
# jobs drawn at random (the seed is printed; THREADS_SEED repeats a run) —
# hangs, healthy runs, slow links with step metrics files beside the dumps —
# then damaged as a shared folder may be: a file cut inside a line, a rank's
# files deleted, a dump copied into a subfolder, a link to a file read
# already, a link loop, a hidden file, an unreadable file, a text copy whose
# JSON file is cut (so that it is read). $1: the build folder.
B=${1:-build}
PT="$(cd "$B" && pwd)/proxytrace"
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
RUN=${PROXYTRACE_EMULATOR:-}
T=${THREADS_KEEP:-$(mktemp -d)}
trap 'chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
py=$(command -v python3) || { echo "threads: no python3"; exit 1; }
# shellcheck source=tests/common/commit-seed.sh
. "$(dirname "$0")/../common/commit-seed.sh"
SEED=${THREADS_SEED:-$(($(commit_seed) % 65536))}
echo "threads: seed $SEED (THREADS_SEED=$SEED repeats this run)"

# The JSON documents of two analyses, equal but for the figures that
# depend on how they ran.
same_json() {
  "$py" - "$1" "$2" <<'PY' || fail "$3"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    for k in ("parseSeconds", "analyzeSeconds", "slowSeconds", "peakBytes"):
        d["stats"].pop(k, None)
if a != b:
    diff = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    print("differs in", diff[0], json.dumps(a.get(diff[0]))[:400], "/", json.dumps(b.get(diff[0]))[:400])
    sys.exit(1)
PY
}

hosts="rccl rccl-2.31 nccl-2.23 nccl-2.26 nccl-2.28 nccl-2.30 nccl-2.32"
n=0
for job in 1 2 3 4 5 6; do
  s=$((SEED + job))
  host=$(echo $hosts | tr ' ' '\n' | sed -n "$((s % 7 + 1))p")
  nodes=$((s % 4 + 2))
  rpn=$((s / 4 % 4 + 1))
  ranks=$((nodes * rpn))
  case $((job % 3)) in
  0) fault="--stall $((s % ranks)):0:$((s % 7))" ;;
  1) fault="" ;;
  2) fault="--slow-link $((s % ranks)):4 --poll-us 200" ;;
  esac
  D="$T/job$job"
  mkdir -p "$D/files"
  $RUN "$PT" sim --plugin "$PLUGIN" --host "$host" --nodes "$nodes" --ranks-per-node "$rpn" --channels 2 --seed "$s" \
    --iters 3 --comm-dump 2 $fault --dump-dir "$D/logs" --env "PROXYTRACE_DUMP_DIR=$D/files" \
    --env PROXYTRACE_STALL_MS=200 --env "PROXYTRACE_METRICS_DIR=$D/files" --env PROXYTRACE_METRICS_INTERVAL_MS=50 \
    --hold 0.4 --quiet >/dev/null 2>&1
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "job $job ($host $nodes x $rpn $fault): the emulator failed ($rc)"
  [ -n "$(ls "$D/files")" ] || fail "job $job: no file written"
  # Damage, drawn from the seed.
  files=$(ls "$D/files" | grep -v metrics)
  nf=$(echo "$files" | wc -l)
  pick() { echo "$files" | sed -n "$(($1 % nf + 1))p"; }
  f1=$(pick $s); f2=$(pick $((s / 3 + 1))); f3=$(pick $((s / 7 + 2)))
  size=$(wc -c <"$D/files/$f1")
  [ "$size" -gt 10 ] && head -c $((size * (s % 9 + 1) / 10)) "$D/files/$f1" >"$D/cut" && mv "$D/cut" "$D/files/$f1"
  [ "$f2" != "$f1" ] && rm -f "$D/files/$f2"
  mkdir -p "$D/files/node1/deeper"
  [ -f "$D/files/$f3" ] && cp "$D/files/$f3" "$D/files/node1/deeper/copy-$f3"
  [ -f "$D/files/$f3" ] && ln -s "../$f3" "$D/files/node1/link-$f3"
  ln -s .. "$D/files/node1/deeper/loop"
  echo '{"type":"dump","schema":1}' >"$D/files/.hidden.jsonl"
  echo 'not a dump' >"$D/files/zz-unreadable.jsonl"
  chmod 000 "$D/files/zz-unreadable.jsonl"
  for path in "$D/files" "$D/logs" "$D"; do
    for t in 1 2 3; do
      $RUN "$PT" analyze --threads $t --json -v "$path" >"$T/j$t.json" 2>"$T/e$t"
      echo $? >"$T/rc$t"
      $RUN "$PT" analyze --threads $t --records "$path" >"$T/r$t.jsonl" 2>/dev/null
      $RUN "$PT" analyze --threads $t --summary "$T/s$t.jsonl" "$path" >/dev/null 2>&1
    done
    for t in 2 3; do
      what="job $job ($host $nodes x $rpn $fault) $path, $t threads"
      cmp -s "$T/rc1" "$T/rc$t" || fail "$what: exit status $(cat "$T/rc$t"), one thread $(cat "$T/rc1")"
      same_json "$T/j1.json" "$T/j$t.json" "$what: the JSON report differs"
      cmp -s "$T/r1.jsonl" "$T/r$t.jsonl" || fail "$what: the records differ"
      cmp -s "$T/s1.jsonl" "$T/s$t.jsonl" || fail "$what: the summary differs"
      cmp -s "$T/e1" "$T/e$t" || fail "$what: what it printed on stderr differs"
    done
    n=$((n + 1))
  done
done
# A bad value is refused, with what it takes.
$RUN "$PT" analyze --threads 65 "$T" >/dev/null 2>"$T/err" && fail "--threads 65 was taken"
grep -q "0..64" "$T/err" || fail "--threads 65: $(cat "$T/err")"
echo "threads: $n folders read on 1, 2 and 3 threads: the same reports"
