#!/bin/sh
# Runs libFuzzer targets for a while each (make fuzz). Usage:
#   run-fuzz.sh BUILD-DIR SECONDS TARGET...
# Each target starts from its seed corpus in tests/fuzz/corpus/<target>/,
# copied into BUILD-DIR/corpus/<target>/ (new inputs accumulate there, the
# repository is not written). A crash, leak, timeout, sanitizer report or
# failed check stops the target; its input is kept in
# BUILD-DIR/findings/<target>/ and the script fails at the end. One line per
# target: executions, time, corpus size.
B=$1; secs=$2; shift 2
failed=""
for t in "$@"; do
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
  if [ $rc -ne 0 ]; then
    failed="$failed $t"
    echo "fuzz_$t: FAILED (exit $rc) after ${execs:-?} executions; input in $findings/"
    grep -E "ERROR|check failed|SUMMARY|Test unit written" "$log" | head -n 20 | sed 's/^/   | /'
  else
    echo "fuzz_$t: ${execs:-?} executions in ${secs} s, corpus $n inputs"
  fi
done
[ -z "$failed" ] || { echo "fuzz targets failed:$failed"; exit 1; }
