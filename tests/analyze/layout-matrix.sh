#!/bin/sh
# The origin of a hang across communicators (layout_matrix.py) as `make
# test` runs it: every job a slice once failed on (FIXED), jobs of 1 024
# and 16 384 processes (SCALE, native builds only; about 70 s), a fixed-seed
# slice and one whose seed comes from the
# commit being tested (printed; repeat it with
# `python3 tests/analyze/layout_matrix.py build --seed N --jobs M`). Every
# job runs on emulated time, so the same commit gives the same outcomes on
# every run. Fails on any job whose first culprit is not the fault's, or
# where another communicator's culprit stands as one of its own.
# LAYOUT_MATRIX_JOBS sizes each slice (default 12), LAYOUT_MATRIX_MAX_PROCS
# its layouts. $1: the build folder.
B=${1:-build}
here=$(dirname "$0")
py=$(command -v python3) || { echo "layout matrix: no python3"; exit 1; }
# shellcheck source=tests/common/commit-seed.sh
. "$here/../common/commit-seed.sh"
jobs=${LAYOUT_MATRIX_JOBS:-12}
# LAYOUT_MATRIX_MAX_PROCS: the most processes a drawn layout has (default
# 256; under qemu, where each job runs some 20 times slower, 32 and a
# quarter of the jobs)
max=${LAYOUT_MATRIX_MAX_PROCS:-256}
[ -n "${PROXYTRACE_EMULATOR:-}" ] && jobs=$((jobs / 4 + 1)) max=32
rc=0
"$py" "$here/layout_matrix.py" "$B" --fixed || rc=1
# Jobs of 1 024 and 16 384 processes (--scale), natively: under qemu or a
# sanitizer the same code runs in the smaller jobs
case "$(readelf -d "$B/proxytrace" 2>/dev/null)" in *libasan*|*libtsan*) scale="" ;; *) scale=1 ;; esac
[ -n "${PROXYTRACE_EMULATOR:-}" ] && scale=""
[ -n "$scale" ] && { "$py" "$here/layout_matrix.py" "$B" --scale || rc=1; }
"$py" "$here/layout_matrix.py" "$B" --seed 3 --jobs "$jobs" --max-procs "$max" || rc=1
"$py" "$here/layout_matrix.py" "$B" --seed "$(commit_seed)" --jobs "$jobs" --max-procs "$max" || rc=1
exit $rc
