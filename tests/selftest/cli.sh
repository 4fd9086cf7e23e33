#!/bin/sh
# cli.sh — `proxytrace selftest` as a user runs it, on the emulator
# (--emulate, emulated time: the same result every run):
#   * every check passes, one line each (the cost skipped with its reason),
#     the JSON says the same, and `python3 -m proxytrace selftest` prints
#     the same lines;
#   * a planted stall and a rank that never enters are named with 3 ranks;
#   * a fault held shorter than the stall time fails the check, with its
#     fix, exit 1;
#   * no torch, or a torch that sees no GPU (a stand-in torch package on
#     PYTHONPATH), no Python at all, a Python without the package: the
#     command says so and exits 3; a bad option or an --out of other files
#     exits 2;
#   * --help names every option of the Python side, and the top-level
#     usage lists the command.
# The orchestration's own failures (a fault planted on the wrong rank, a
# verdict that disagrees, ...) are tests/python/test_selftest.py.
# Usage: cli.sh BUILD-DIR
set -u
B=$(cd "$1" && pwd)
PT=$B/proxytrace
RUN=${PROXYTRACE_EMULATOR:-}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# st WANT WHAT ARGS...: proxytrace selftest ARGS with this test's Python;
# exit status WANT, every FAIL line with its fix.
st() {
  want=$1; what=$2; shift 2
  $RUN "$PT" selftest --python "$PY" "$@" >"$T/out" 2>"$T/err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$what: exit $got, want $want"; sed 's/^/    /' "$T/out" "$T/err"; return 1
  fi
  if grep '^FAIL' "$T/out" | grep -v -q ' — fix: '; then
    fail "$what: a FAIL line without its fix"; sed 's/^/    /' "$T/out"; return 1
  fi
  echo "ok   $what (exit $got)"
}
json() { # json FILE PYTHON-EXPRESSION-ON-d: true or the test fails
  "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" ||
    fail "$1: not $2"
}

# ---- every check on the emulator ----
if st 0 "every check, emulated" --emulate --out "$T/all"; then
  sed 1d "$T/out" | awk '{print $1, $2}' >"$T/heads"
  printf '%s\n' "ok healthy" "ok gpu-stall" "ok not-entered" "skip cost" "selftest: every" |
    diff - "$T/heads" >/dev/null || { fail "the lines of the checks"; cat "$T/out"; }
  grep -q "^ok   gpu-stall   rank 1's GPU held 8 s before the all-reduce: stall dumps of ranks 0, 1; analyze: rank 1, channels 0, 1, gpu_not_producing, no other culprit$" "$T/out" ||
    fail "the stall's line"
  grep -q "^ok   not-entered rank 1 kept 8 s from calling the all-reduce: .*analyze: rank 1, not_entered, no other culprit$" "$T/out" ||
    fail "the missing rank's line"
  grep -q "^skip cost .*emulated time does not show what the plugin costs" "$T/out" || fail "the cost's reason"
  json "$T/all/selftest.json" 'd["result"] == "pass" and d["exitStatus"] == 0 and [c["status"] for c in d["checks"]] == ["ok", "ok", "ok", "skip"]'
  json "$T/all/selftest.json" 'd["environment"]["plugin"] == "'"$B"'/librccl-profiler-proxytrace.so"'
  for j in healthy gpu-stall not-entered; do
    ls "$T/all/$j/dumps/"proxytrace-*-r1-*.jsonl >/dev/null 2>&1 || fail "$j: no dump of rank 1 kept"
  done
  # python3 -m proxytrace selftest: the same lines (the first names the folder)
  cp "$T/out" "$T/c.out"
  (cd "$T" && PROXYTRACE_CLI=$PT PYTHONPATH=$REPO/python "$PY" -m proxytrace selftest --emulate --out all \
    --plugin "$B/librccl-profiler-proxytrace.so" >"$T/p.out" 2>&1) || fail "python3 -m proxytrace selftest: exit $?"
  sed -e 1d -e '$d' "$T/c.out" >"$T/c.lines"
  sed -e 1d -e '$d' "$T/p.out" | sed "s|all/|$T/all/|g" >"$T/p.lines"
  diff "$T/c.lines" "$T/p.lines" >/dev/null || { fail "python3 -m proxytrace selftest says other lines"; diff "$T/c.lines" "$T/p.lines"; }
fi

# ---- three ranks: the last one planted, and named ----
if st 0 "three ranks" --emulate --ranks 3 --checks gpu-stall,not-entered --out "$T/three" --json "$T/three.json"; then
  grep -q "analyze: rank 2, channels 0, 1, gpu_not_producing, no other culprit" "$T/out" || fail "3 ranks: the stall"
  grep -q "analyze: rank 2, not_entered, no other culprit" "$T/out" || fail "3 ranks: the missing rank"
  json "$T/three.json" '[c["figures"]["plantedRank"] for c in d["checks"]] == [2, 2]'
  [ -e "$T/three/selftest.json" ] && fail "--json FILE: OUT/selftest.json written too"
fi

# ---- a check that fails, with its fix ----
if st 1 "a fault held shorter than the stall time" --emulate --checks healthy,gpu-stall --stall-ms 3000 --hang-s 1 --out "$T/short"; then
  grep -q "^ok   healthy" "$T/out" || fail "short: the healthy check"
  grep -q "^FAIL gpu-stall   no stall watchdog dumped during the fault .* — fix: hold the job longer than the stall time: --hang-s above --stall-ms/1000" "$T/out" ||
    { fail "short: the FAIL line"; cat "$T/out"; }
  tail -n 1 "$T/out" | grep -q "^selftest: 1 check failed: gpu-stall; results in $T/short/selftest.json$" || fail "short: the closing line"
  json "$T/short/selftest.json" 'd["result"] == "fail" and d["failed"] == ["gpu-stall"] and d["checks"][1]["fix"]'
fi

# ---- cannot run here: exit 3, said ----
mkdir -p "$T/notorch/torch" "$T/nogpu/torch"
echo 'raise ImportError("no torch here (a test)")' >"$T/notorch/torch/__init__.py"
cat >"$T/nogpu/torch/__init__.py" <<'EOF'
__version__ = "9.9.9+test"
class version:
    hip = None
class cuda:
    @staticmethod
    def is_available():
        return False
    @staticmethod
    def device_count():
        return 0
EOF
for what in notorch nogpu; do
  if PYTHONPATH=$T/$what st 3 "$what" --out "$T/$what-out"; then
    [ -s "$T/out" ] && fail "$what: printed on stdout"
    case $what in
      notorch) grep -q "^proxytrace selftest: cannot run here: no torch in .* — fix: run it with the Python that has torch .*--emulate" "$T/err" ;;
      nogpu) grep -q "^proxytrace selftest: cannot run here: torch 9.9.9+test sees no GPU .* — fix: .*--emulate" "$T/err" ;;
    esac || { fail "$what: the message"; cat "$T/err"; }
    json "$T/$what-out/selftest.json" 'd["result"] == "cannot_run" and d["exitStatus"] == 3 and d["cannotRun"]["fix"]'
  fi
done
if st 3 "no Python" --emulate --python "$T/no-such-python" --out "$T/nopy"; then
  grep -q "cannot run here: no Python '$T/no-such-python' (No such file or directory) — fix: " "$T/err" || fail "no Python: the message"
fi
mkdir -p "$T/lone/bin" && cp "$PT" "$T/lone/bin/"
if "$T/lone/bin/proxytrace" selftest --python "$PY" --emulate --out "$T/lone-out" >"$T/out" 2>"$T/err"; then
  fail "a Python without the package: exit 0"
else
  rc=$?
  [ $rc -eq 3 ] || fail "a Python without the package: exit $rc, want 3"
  grep -q "cannot import the proxytrace package .* — fix: " "$T/err" || fail "no package: the message"
fi

# ---- bad options: exit 2, nothing run ----
st 2 "an unknown option" --emulate --frobnicate --out "$T/bad"
[ -e "$T/bad" ] && fail "an unknown option: the folder was made"
st 2 "--ranks 9" --emulate --ranks 9 --out "$T/bad"
st 2 "--python without a value" --python
mkdir -p "$T/precious" && echo mine >"$T/precious/notes.txt"
st 2 "an --out of other files" --emulate --out "$T/precious" &&
  { grep -q "holds files of something else than a selftest" "$T/err" || fail "precious: the message"; }
[ "$(ls "$T/precious")" = notes.txt ] || fail "an --out of other files was written into"

# ---- help ----
$RUN "$PT" selftest --help >"$T/help" || fail "--help: exit $?"
PYTHONPATH=$REPO/python "$PY" -m proxytrace selftest --help >"$T/pyhelp" || fail "python --help: exit $?"
grep -o -- '--[a-z][a-z-]*' "$T/pyhelp" | sort -u >"$T/opts"
[ "$(wc -l <"$T/opts")" -ge 10 ] || fail "python --help names $(wc -l <"$T/opts") options"
while read -r opt; do
  grep -q -- "$opt" "$T/help" || fail "proxytrace selftest --help does not name $opt"
done <"$T/opts"
for opt in --python --emulate --json; do grep -q -- "^  $opt " "$T/help" || fail "--help: $opt"; done
grep -q "^Exit status: 0 every check passed" "$T/help" || fail "--help: the exit statuses"
$RUN "$PT" --help | grep -q "^  selftest " || fail "proxytrace --help does not list selftest"

[ $failures -eq 0 ] && echo "ok: proxytrace selftest"
exit $((failures > 0))
