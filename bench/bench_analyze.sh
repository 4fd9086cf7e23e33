#!/bin/sh
# `make bench-analyze`: the analyzer on emulated and generated jobs.
#
# Emulated: the emulator writes the dumps of a 64-rank (8 x 8) and a
# 1 024-rank (128 x 8) job whose rank 3 stalls, each rank dumping nine
# times (eight ncclCommDump rounds while it runs, one at destroy) into its
# log and into the plugin's JSON-lines and text files (three files per
# rank, each dump in each).
#
# Generated (bench/gen_job.c): jobs of 1 024, 16 384 and 100 352 ranks made
# from two emulated 4 x 8 jobs (one whose rank 3 stalls, one healthy; two
# ncclCommDump rounds), the fault placed on rank N/2 + 5, with the files a
# rank writes by default (JSON lines and text), one folder per node. The
# 16 384-rank job is analyzed through its nodes' summaries too (one
# `analyze --summary` per node folder, as a job's launcher would run them,
# then one analysis of the summaries). Each job's files are deleted once
# measured: the 100 352-rank job takes about 7 GB. Stuck (BENCH_ANALYZE_STUCK,
# default 16384): a job of that many ranks made of the stalled job alone,
# every block of 32 its own stall, so that every rank of the one
# communicator has stuck ops (512 culprits at 16 384 ranks): what costs
# per stuck op and per culprit shows there.
#
# Scale checks: 1 024 emulated ranks in at most 2 s, 16 384 generated ranks
# in at most 3 s and 100 352 in at most 20 s, at most 1 GiB held; a miss is
# printed, not failed (a shared machine's other work shows in wall time;
# the per-core figures are the program's). BENCH_ANALYZE_RANKS lists the
# generated sizes (default "1024 16384 100352"; a multiple of 32). BENCH_ANALYZE_BEFORE, the
# bench_analyze of another build (the one before a change), is run on the
# same inputs right after, for figures side by side. $1: the build folder.
B=${1:-build}
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
OUT="$B/bench/analyze"
rm -rf "$OUT"
mkdir -p "$OUT"
trap 'rm -rf "$OUT"' EXIT
check() { # label seconds limit
  awk -v s="$2" -v l="$3" 'BEGIN { exit !(s <= l) }' && echo "  scale check: $1 in $2 s (<= $3 s)" ||
    echo "  scale check: $1 in $2 s — MORE than $3 s"
}
secs_of() { echo "$1" | sed -n 's/.* MB *\([0-9.]*\) s wall.*/\1/p'; }
held_of() { echo "$1" | sed -n 's/.* peak *\([0-9.]*\) MiB held.*/\1/p'; }

echo "proxytrace analyze on emulated jobs (rank 3 stalls; 9 dumps per rank, in its log, JSON and text files):"
for job in "64 8 8" "1024 128 8"; do
  set -- $job
  "$B/proxytrace" sim --plugin "$PLUGIN" --nodes "$2" --ranks-per-node "$3" --stall 3:0:5 --comm-dump 8 \
    --dump-dir "$OUT/r$1" --quiet --debug WARN >/dev/null
  [ $? -eq 3 ] || { echo "bench-analyze: the emulator failed (the job should hang: exit status 3)"; exit 1; }
  line=$("$B/bench/bench_analyze" "$1 ranks" "$OUT/r$1") || exit 1
  echo "$line"
  [ -n "$BENCH_ANALYZE_BEFORE" ] && "$BENCH_ANALYZE_BEFORE" "before" "$OUT/r$1"
  [ "$1" = 1024 ] && check "1 024 emulated ranks" "$(secs_of "$line")" 2.0
  rm -rf "$OUT/r$1"
done

echo "proxytrace analyze on generated jobs (a GPU stall; 4 dumps per rank, JSON and text files, one folder per node):"
"$B/proxytrace" sim --plugin "$PLUGIN" --nodes 4 --ranks-per-node 8 --stall 3:0:5 --comm-dump 2 \
  --dump-dir "$OUT/hung" --quiet --debug WARN >/dev/null
[ $? -eq 3 ] || { echo "bench-analyze: the emulator failed (the job should hang: exit status 3)"; exit 1; }
"$B/proxytrace" sim --plugin "$PLUGIN" --nodes 4 --ranks-per-node 8 --comm-dump 2 --dump-dir "$OUT/ok" --quiet \
  --debug WARN >/dev/null || { echo "bench-analyze: the emulator failed (the healthy job)"; exit 1; }
for n in ${BENCH_ANALYZE_RANKS:-1024 16384 100352}; do
  "$B/bench/gen_job" "$OUT/hung" "$OUT/ok" "$n" $((n / 2 + 5)) "$OUT/g$n" || exit 1
  sync
  line=$("$B/bench/bench_analyze" "$n ranks" "$OUT/g$n") || exit 1
  echo "$line"
  [ -n "$BENCH_ANALYZE_BEFORE" ] && "$BENCH_ANALYZE_BEFORE" "before" "$OUT/g$n"
  case $n in
  16384) check "16 384 generated ranks" "$(secs_of "$line")" 3.0 ;;
  100352)
    check "100 352 generated ranks" "$(secs_of "$line")" 20.0
    awk -v m="$(held_of "$line")" 'BEGIN { exit !(m <= 1024) }' && echo "  scale check: $(held_of "$line") MiB held at the peak (<= 1 GiB)" ||
      echo "  scale check: $(held_of "$line") MiB held at the peak — MORE than 1 GiB" ;;
  esac
  if [ "$n" = 16384 ]; then
    mkdir -p "$OUT/s$n"
    t0=$(date +%s.%N)
    for d in "$OUT/g$n"/node*; do
      "$B/proxytrace" analyze --summary "$OUT/s$n/${d##*/}.jsonl" "$d" >/dev/null || exit 1
    done
    t1=$(date +%s.%N)
    nodes=$(ls "$OUT/g$n" | wc -l)
    echo "  $n ranks through summaries: $nodes nodes, one summary each in $(awk -v a="$t0" -v b="$t1" -v n="$nodes" \
      'BEGIN { printf "%.3f", (b - a) / n }') s (one after another here; each node writes its own),"\
      "$(du -sm "$OUT/s$n" | cut -f1) MB of summaries for $(du -sm "$OUT/g$n" | cut -f1) MB of dumps"
    "$B/bench/bench_analyze" "summaries" "$OUT/s$n" || exit 1
    rm -rf "$OUT/s$n"
  fi
  rm -rf "$OUT/g$n"
done
[ -n "${BENCH_ANALYZE_STUCK-16384}" ] &&
  echo "proxytrace analyze on generated jobs whose every 32-rank block stalls (one communicator, every rank stuck):"
for n in ${BENCH_ANALYZE_STUCK-16384}; do
  "$B/bench/gen_job" "$OUT/hung" "$OUT/hung" "$n" $((n / 2 + 5)) "$OUT/h$n" || exit 1
  sync
  line=$("$B/bench/bench_analyze" "$n stuck" "$OUT/h$n") || exit 1
  echo "$line"
  [ -n "$BENCH_ANALYZE_BEFORE" ] && "$BENCH_ANALYZE_BEFORE" "before" "$OUT/h$n"
  rm -rf "$OUT/h$n"
done
