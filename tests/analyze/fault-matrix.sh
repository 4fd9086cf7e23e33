#!/bin/sh
# The randomized fault matrix (fault_matrix.py) as `make test` runs it: a
# fixed-seed slice, and a larger slice whose seed comes from the commit
# being tested (printed; repeat it with `make fault-matrix
# FAULT_MATRIX_SEED=N FAULT_MATRIX_JOBS=M`), so the same commit runs the same
# jobs on every run and every commit draws new ones. Every job runs on
# emulated time: its files and verdict are the same on every run, in every
# build (sanitizers, qemu) and under any load. Each slice fails on any miss
# or false culprit, and on any job whose analysis from per-node summaries
# (analyze --summary) differs from that of its dumps. FAULT_MATRIX_SLICE
# sizes the fixed slice (default 100), FAULT_MATRIX_JOBS the commit's
# (default 900), FAULT_MATRIX_MULTI the fixed slice of two and three slow
# faults (seed 4242, default 40 jobs). $1: the build folder.
B=${1:-build}
PT="$(cd "$B" && pwd)/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
py=$(command -v python3) || { echo "fault matrix: no python3"; exit 1; }
here=$(dirname "$0")
# shellcheck source=tests/common/commit-seed.sh
. "$here/../common/commit-seed.sh"
seed=${FAULT_MATRIX_SEED:-$(commit_seed)}
# Under qemu every job runs some 20 times slower: smaller slices there (10 +
# 10 + 4 jobs; the regression corpus runs whole there too).
fixed=${FAULT_MATRIX_SLICE:-100}
drawn=${FAULT_MATRIX_JOBS:-900}
multi=${FAULT_MATRIX_MULTI:-40}
if [ -n "$RUN" ]; then fixed=$((fixed / 10)); drawn=$((drawn / 90)); multi=$((multi / 10)); fi
echo "fault matrix: the commit's slice is seed $seed, $drawn jobs (repeat: make fault-matrix FAULT_MATRIX_SEED=$seed FAULT_MATRIX_JOBS=$drawn)"
rc=0
"$py" "$here/fault_matrix.py" "$B" --seed 19 --jobs "$fixed" --summaries || rc=1
# Two and three slow faults in one job (links, GPUs, proxy threads on
# distinct ranks): a fixed slice.
"$py" "$here/fault_matrix.py" "$B" --kinds slow+slow,slow+slow+slow --seed 4242 --jobs "$multi" || rc=1
"$py" "$here/fault_matrix.py" "$B" --seed "$seed" --jobs "$drawn" --summaries || rc=1
exit $rc
