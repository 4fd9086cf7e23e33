#!/bin/sh
# The regression corpus (tests/regress/corpus.txt): every emulated job that
# a fault matrix, a test or an issue ever failed on, each analyzed from its
# dump files and compared with its ground truth (fault_matrix.py --corpus);
# fails on any job whose outcome is not the one its line gives. Every leg of
# CI runs it: on emulated time the outcome is the same in every build and
# under any load. $1: the build folder.
B=${1:-build}
here=$(dirname "$0")
exec python3 "$here/../analyze/fault_matrix.py" "$B" --corpus "$here/corpus.txt"
