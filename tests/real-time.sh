#!/bin/sh
# No timed judgement in tests/ reads the machine's clock where an emulated
# one exists. An emulated job (proxytrace sim with this build's plugin, the
# default) is timed by the emulator's clock: the same on every run, under
# any load. A test that asks for real time (sim --pace or --real-time) or
# sizes itself by how busy or slow the machine is (a TIMED, BUSY or
# NOSLOW, a measured rate) must be one of the few that need it, listed
# below with the reason; anything else fails here, naming the file and the
# line. $1: the build folder (unused).
cd "$(dirname "$0")/.." || exit 1
fail=0

# The tests that must see real time, and why.
allowed() {
  case "$1" in
    tests/sim/top.sh) ;;              # proxytrace top refreshes on the machine's clock
    tests/analyze/follow.sh) ;;       # analyze --follow polls a folder a live job writes
    tests/sim/metrics-live.sh) ;;     # the metrics files rewritten while a live job hangs
    tests/analyze/failslow.py) ;;     # fail-slow detection while the job runs, by --follow
    tests/sim/cli.sh) ;;              # --pace and --real-time themselves: parsed, refused, summarised
    tests/sim/test_sim_cli.c) ;;      # the same options, parsed
    tests/sim/same-bytes.sh) ;;       # shows that two real-time runs differ
    tests/real-time.sh) ;;            # this list
    *) return 1 ;;
  esac
}

# Real time asked of the emulator, or a test sized by the machine's load.
pattern='--pace\b|"--pace"|--real-time|timed\.sh|\bBUSY\b|\bTIMED\b|\bNOSLOW\b'
for f in $(grep -rlE -- "$pattern" tests); do
  allowed "$f" && continue
  grep -nE -- "$pattern" "$f" | head -n 3 | sed "s|^|$f:|"
  echo "  ^ $f: real time where the emulator's exists; run the job on emulated time (drop --pace; --poll-us sets a poll's emulated length), or add the file to tests/real-time.sh with the reason"
  fail=1
done
[ "$fail" -eq 0 ] && echo "ok: only $(grep -c '^    tests/' "$0") files may use real time, each with its reason"
exit $fail
