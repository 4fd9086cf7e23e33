#!/bin/sh
# The randomized fault matrix (fault_matrix.py) as `make test` runs it: a
# fixed-seed slice, the same jobs every run, and a fresh slice of a seed
# drawn now (printed: repeat it with `make fault-matrix
# FAULT_MATRIX_SEED=N`). Each fails on any miss or false culprit, and on
# any job whose analysis from per-node summaries (analyze --summary)
# differs from that of its dumps. Under a
# sanitizer or qemu (timed.sh) the timing faults are left out and no
# slowness is looked for. FAULT_MATRIX_SLICE sizes both slices (default 40
# each). $1: the build folder.
B=${1:-build}
PT="$(cd "$B" && pwd)/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
# shellcheck source=tests/analyze/timed.sh
. "$(dirname "$0")/timed.sh"
[ -n "$RUN" ] && { echo "fault matrix: skipped under an emulator (qemu)"; exit 0; }
extra=""
[ "$TIMED" -eq 1 ] || extra="--untimed"
jobs=${FAULT_MATRIX_SLICE:-40}
py=$(command -v python3) || { echo "fault matrix: no python3"; exit 1; }
rc=0
"$py" "$(dirname "$0")/fault_matrix.py" "$B" --seed 19 --jobs "$jobs" --summaries $extra || rc=1
"$py" "$(dirname "$0")/fault_matrix.py" "$B" --jobs "$jobs" --summaries $extra || rc=1
exit $rc
