# shellcheck shell=sh
# commit-seed.sh — sourced by the randomized tests. commit_seed prints the
# seed of a test's drawn slice: from the commit being tested (its first 7
# hex digits as a number), so the same commit draws the same jobs on every
# run, and each commit draws others; 1 outside a git checkout. The tests
# print it with the one command that replays the slice.
commit_seed() {
  hex=$(git -C "$(dirname "$0")" rev-parse HEAD 2>/dev/null | cut -c1-7)
  printf '%d\n' "0x${hex:-1}"
}
