#!/bin/sh
# `make bench-analyze`: the emulator writes the dumps of a 64-rank (8 x 8)
# and a 1 024-rank (128 x 8) job whose rank 3 stalls, each rank dumping
# nine times (eight ncclCommDump rounds while it runs, one at destroy) into
# its log and into the plugin's JSON-lines and text files (three files per
# rank, each dump in each); bench_analyze reads each job's files and prints
# the figures. The scale check: 1 024 ranks in at most 2 s. $1: the build
# folder.
B=${1:-build}
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
OUT="$B/bench/analyze"
rm -rf "$OUT"
mkdir -p "$OUT"
echo "proxytrace analyze on emulated jobs (rank 3 stalls; 9 dumps per rank, in its log, JSON and text files):"
for job in "64 8 8" "1024 128 8"; do
  set -- $job
  "$B/proxytrace" sim --plugin "$PLUGIN" --nodes "$2" --ranks-per-node "$3" --stall 3:0:5 --comm-dump 8 \
    --dump-dir "$OUT/r$1" --quiet --debug WARN >/dev/null
  [ $? -eq 3 ] || { echo "bench-analyze: the emulator failed (the job should hang: exit status 3)"; exit 1; }
  line=$("$B/bench/bench_analyze" "$1 ranks" "$OUT/r$1") || exit 1
  echo "$line"
  if [ "$1" = 1024 ]; then
    secs=$(echo "$line" | sed -n 's/.* MB *\([0-9.]*\) s .*/\1/p')
    awk -v s="$secs" 'BEGIN { exit !(s <= 2.0) }' && echo "  scale check: 1 024 ranks in $secs s (<= 2 s)" ||
      echo "  scale check: 1 024 ranks in $secs s — MORE than 2 s"
  fi
done
rm -rf "$OUT"
