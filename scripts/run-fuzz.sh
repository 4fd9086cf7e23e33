#!/bin/sh
# Runs libFuzzer targets for a while each (make fuzz). Usage:
#   run-fuzz.sh BUILD-DIR SECONDS TARGET...
# Each target starts from its seed corpus in tests/fuzz/corpus/<target>/,
# copied into BUILD-DIR/corpus/<target>/ (new inputs accumulate there, the
# repository is not written). A crash, leak, timeout, sanitizer report or
# failed check stops the target; its input is kept in
# BUILD-DIR/findings/<target>/ and the script fails at the end. One line per
# target: executions, time, corpus size. FUZZ_JOBS targets run at once
# (default: the cores here; each fuzzes on one core), their lines printed in
# the order given.
B=$1; secs=$2; shift 2
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
run_one() { # run_one TARGET: its line in $B/fuzz-TARGET.result, its status in .rc
  t=$1
  corpus="$B/corpus/$t"; findings="$B/findings/$t"; log="$B/fuzz-$t.log"
  mkdir -p "$corpus" "$findings"
  [ -d "tests/fuzz/corpus/$t" ] && cp -n tests/fuzz/corpus/"$t"/seed-* "$corpus"/ 2>/dev/null
  dict=""
  [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
  # Timeout per input well above any legitimate one (a dump waits at most
  # 10 ms per record); rss limit generous for ASan.
  "$B/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$findings/" $dict "$corpus" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  n=$(ls "$corpus" | wc -l)
  {
    if [ $rc -ne 0 ]; then
      echo "fuzz_$t: FAILED (exit $rc) after ${execs:-?} executions; input in $findings/"
      grep -E "ERROR|check failed|SUMMARY|Test unit written" "$log" | head -n 20 | sed 's/^/   | /'
    else
      echo "fuzz_$t: ${execs:-?} executions in ${secs} s, corpus $n inputs"
    fi
  } >"$B/fuzz-$t.result"
  echo "$rc" >"$B/fuzz-$t.rc"
}
running=0
for t in "$@"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait
    running=0
  fi
done
wait
failed=""
for t in "$@"; do
  cat "$B/fuzz-$t.result"
  [ "$(cat "$B/fuzz-$t.rc")" = 0 ] || failed="$failed $t"
done
[ -z "$failed" ] || { echo "fuzz targets failed:$failed"; exit 1; }
