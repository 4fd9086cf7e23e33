#!/usr/bin/env bash
# Runs every test program given on the command line and adds up their results.
# cmocka programs report "[  PASSED  ] N test(s)." / "[  FAILED  ] N test(s),";
# a program without those lines (a shell test) counts as one test that passed
# when it exits 0. Prints one closing line "N passed, N failed" and exits
# non-zero if anything failed. Each test says how many seconds it took, and
# the slowest ten are listed before the closing line. The failing tests' last
# lines are repeated just before the closing line, so the tail of a long log
# says why.
#
# RUN_TESTS_JOBS (default 1): how many tests run at once. Every test keeps
# its own log and temporary folders, and emulated jobs give the same files
# under any load, so running them side by side changes no result; each
# test's lines are printed when it ends. RUN_TESTS_SERIAL: the tests among
# them that must see the machine's clock (make's REAL_TIME_RUNS) — those run
# after the others, one at a time, each alone.
#
# PROXYTRACE_EMULATOR (set by `make test ARCH=...`): the command that runs
# programs built for another architecture (e.g. qemu-aarch64). A test program
# whose ELF machine differs from this machine's runs through it; programs of
# this machine (the model check) run directly. Shell tests and the programs
# they start read the variable themselves.
B=$1; shift
EMU=${PROXYTRACE_EMULATOR:-}
export PROXYTRACE_EMULATOR="$EMU"
JOBS=${RUN_TESTS_JOBS:-1}
case $JOBS in '' | *[!0-9]* | 0) JOBS=1 ;; esac
elf_machine() { od -An -tu2 -j18 -N2 "$1" 2>/dev/null | tr -d ' '; }
HOST_MACHINE=$(elf_machine /proc/self/exe)
runner() { [ -n "$EMU" ] && [ "$(elf_machine "$1")" != "$HOST_MACHINE" ] && echo "$EMU"; }
mkdir -p "$B/test-logs"
# A log per test, named by its whole path (tests/sim/cli.sh and
# tests/analyze/cli.sh may run at once).
log_of() { local n=${1#./}; echo "$B/test-logs/${n//\//_}.log"; }

# One test, its log, exit status and seconds in files of its own.
run_one() {
  local t=$1 log t0 rc
  log=$(log_of "$t")
  t0=$(date +%s)
  if [ "${t%.sh}" != "$t" ]; then sh "$t" "$B" >"$log" 2>&1; rc=$?
  else
    # shellcheck disable=SC2046
    $(runner "$t") "$t" >"$log" 2>&1; rc=$?
  fi
  echo "$rc $(($(date +%s) - t0))" >"$log.rc"
}

passed=0; failed=0; bad=""; times=""
# The result of a test that has ended: its lines, and the sums.
report() {
  local t=$1 log rc secs p f
  log=$(log_of "$t")
  read -r rc secs <"$log.rc"
  rm -f "$log.rc"
  echo "== $t"
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
  if [ -z "$p$f" ]; then
    if [ "$rc" -eq 0 ]; then p=1; f=0; else p=0; f=1; fi
  fi
  p=${p:-0}; f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  times="$times$secs $t
"
  if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
    bad="$bad $t"; sed 's/^/   | /' "$log" | tail -n 60
  else
    tail -n 1 "$log" | sed 's/^/   /'
  fi
  echo "   ($secs s)"
}

serial=" ${RUN_TESTS_SERIAL:-} "
alone=""
declare -A running=() # pid -> test
for t in "$@"; do
  case $serial in *" $t "*) alone="$alone $t"; continue ;; esac
  if [ "$JOBS" -le 1 ]; then
    run_one "$t"
    report "$t"
    continue
  fi
  while [ "${#running[@]}" -ge "$JOBS" ]; do
    wait -n
    for pid in "${!running[@]}"; do
      kill -0 "$pid" 2>/dev/null && continue
      wait "$pid"
      report "${running[$pid]}"
      unset "running[$pid]"
    done
  done
  run_one "$t" &
  running[$!]=$t
done
for pid in "${!running[@]}"; do
  wait "$pid"
  report "${running[$pid]}"
done
for t in $alone; do
  run_one "$t"
  report "$t"
done

# Where the time went: the slowest ten.
printf '%s' "$times" | sort -rn | head -n 10 | awk 'NR == 1 { print "slowest:" } { printf "  %5d s  %s\n", $1, $2 }'
# The failing tests' last lines once more, next to the closing line: a log
# whose head is cut keeps why they failed.
for t in $bad; do
  echo "-- why $t failed (last lines):"
  tail -n 8 "$(log_of "$t")" | sed 's/^/   | /'
done
[ -n "$bad" ] && echo "failing:$bad"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
