#!/bin/sh
# Every shell test starts the built programs through $RUN (the emulator the
# aarch64 leg names in PROXYTRACE_EMULATOR, empty on a native build): a call
# of "$PT" or "$B/proxytrace" in command position without it runs an Arm
# binary on an x86 machine, fails there with "Exec format error", and only
# the cross-built run finds out, at the end of CI. This finds it on every
# leg: the lines of tests/ and scripts/ shell files that start a built
# program directly. $1: the build folder (unused).
cd "$(dirname "$0")/../.." || exit 1
bad=$(grep -nE '(^|\$\(|[|;&!]|\bthen|\bdo|\belse)[[:space:]]*("\$PT"|\$PT\b|"\$B/proxytrace"|\$B/proxytrace\b)' \
  tests/*/*.sh scripts/run-tests.sh 2>/dev/null)
if [ -n "$bad" ]; then
  echo "FAIL: built programs started without \$RUN (the emulator of a cross-built run):"
  echo "$bad"
  exit 1
fi
n=$(ls tests/*/*.sh | wc -l)
echo "emulated-calls: $n shell tests start the built programs through \$RUN"
