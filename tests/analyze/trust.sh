#!/bin/sh
# The randomized trust test (tests/analyze/trust.py): emulated jobs — hangs,
# slow links, healthy runs — whose dump folders are damaged at random; the
# analysis may answer "incomplete" or name fewer culprits, never a culprit
# the ground truth does not name, never "ok" for a job that hung. A slice
# with a fixed seed, then one whose seed comes from the commit (printed:
# rerun with PT_TRUST_SEED=N); on emulated time both are the same on every
# run. PT_TRUST_JOBS and PT_TRUST_VARIANTS size each slice
# (default 12 jobs, 16 damaged variants each; 6 and 10 in a sanitizer
# build and under qemu). $1: the build folder.
B=${1:-build}
PY=${PYTHON:-python3}
JOBS=${PT_TRUST_JOBS:-12}
VARIANTS=${PT_TRUST_VARIANTS:-16}
case $(cd "$B" && pwd) in # a sanitizer build or qemu runs each program several times slower
  *build-address|*build-thread) JOBS=${PT_TRUST_JOBS:-6}; VARIANTS=${PT_TRUST_VARIANTS:-10} ;;
esac
[ -n "${PROXYTRACE_EMULATOR:-}" ] && JOBS=${PT_TRUST_JOBS:-6} VARIANTS=${PT_TRUST_VARIANTS:-10}
# shellcheck source=tests/common/commit-seed.sh
. "$(dirname "$0")/../common/commit-seed.sh"
FRESH=${PT_TRUST_SEED:-$(commit_seed)}
rc=0
# seed 9: its first 12 jobs hold every fault kind (stall, no-recv, slow link, none)
"$PY" "$(dirname "$0")/trust.py" "$B" 9 "$JOBS" "$VARIANTS" || rc=1
"$PY" "$(dirname "$0")/trust.py" "$B" "$FRESH" "$JOBS" "$VARIANTS" || rc=1
exit $rc
