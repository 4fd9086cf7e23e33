#!/bin/sh
# Runs every test program given on the command line and adds up their results.
# cmocka programs report "[  PASSED  ] N test(s)." / "[  FAILED  ] N test(s),";
# a program without those lines (a shell test) counts as one test that passed
# when it exits 0. Prints one closing line "N passed, N failed" and exits
# non-zero if anything failed. Each test says how many seconds it took, and the
# slowest ten are listed before the closing line. The failing tests' last lines are repeated just
# before the closing line, so the tail of a long log says why.
#
# PROXYTRACE_EMULATOR (set by `make test ARCH=...`): the command that runs
# programs built for another architecture (e.g. qemu-aarch64). A test program
# whose ELF machine differs from this machine's runs through it; programs of
# this machine (the model check) run directly. Shell tests and the programs
# they start read the variable themselves.
B=$1; shift
EMU=${PROXYTRACE_EMULATOR:-}
export PROXYTRACE_EMULATOR="$EMU"
elf_machine() { od -An -tu2 -j18 -N2 "$1" 2>/dev/null | tr -d ' '; }
HOST_MACHINE=$(elf_machine /proc/self/exe)
runner() { [ -n "$EMU" ] && [ "$(elf_machine "$1")" != "$HOST_MACHINE" ] && echo "$EMU"; }
passed=0; failed=0; bad=""; times=""
for t in "$@"; do
  t0=$(date +%s)
  log="$B/test-logs/$(basename "$t").log"
  mkdir -p "$B/test-logs"
  echo "== $t"
  if [ "${t%.sh}" != "$t" ]; then sh "$t" "$B" >"$log" 2>&1; rc=$?
  else
    # shellcheck disable=SC2046
    $(runner "$t") "$t" >"$log" 2>&1; rc=$?
  fi
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
  if [ -z "$p$f" ]; then
    if [ $rc -eq 0 ]; then p=1; f=0; else p=0; f=1; fi
  fi
  p=${p:-0}; f=${f:-0}
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  secs=$(($(date +%s) - t0)); times="$times$secs $t
"
  if [ $rc -ne 0 ] || [ "$f" -ne 0 ]; then
    bad="$bad $t"; sed 's/^/   | /' "$log" | tail -n 60
  else
    tail -n 1 "$log" | sed 's/^/   /'
  fi
  echo "   ($secs s)"
done
# Where the time went: the slowest ten.
printf '%s' "$times" | sort -rn | head -n 10 | awk 'NR == 1 { print "slowest:" } { printf "  %5d s  %s\n", $1, $2 }'
# The failing tests' last lines once more, next to the closing line: a log
# whose head is cut keeps why they failed.
for t in $bad; do
  echo "-- why $t failed (last lines):"
  tail -n 8 "$B/test-logs/$(basename "$t").log" | sed 's/^/   | /'
done
[ -n "$bad" ] && echo "failing:$bad"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
