#!/bin/sh
# The profiles of NCCL 2.31, 2.32 and RCCL 2.31 (API v7) driving the plugin:
# userTags in the JSON records, the verdict and the Perfetto trace, RCCL 2.31's ProxyDiag under bit 16 with its
# counters, a numbering the plugin did not expect said once and in every
# dump ("diag":"missing"), and a host that changes the mask mid-job
# (--ras-mask), with stalls, receives never posted and a dead rank: no
# crash, the dumps say so where events show it (and "maskOff" when the host
# leaves the proxy events out at a dump), and the analyzer names the culprit
# the truth names where the records exist and, where the hung call ran
# unrecorded, says it is incomplete and names nothing. --strict poisons
# every descriptor after its call.
# $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
sim() { out=$1; shift; rm -rf "$T/$out"; $RUN "$PT" sim --plugin "$PLUGIN" --quiet --strict --dump-dir "$T/$out" "$@"; }
json() { cat "$T/$1"/*.jsonl 2>/dev/null; }

# ---- a stuck send on each new profile: found, with its userTag ----
for host in nccl-2.31 nccl-2.32 rccl-2.31; do
  sim "$host" --host "$host" --stall 3:0:5 >/dev/null 2>&1
  rc=$?
  [ $rc -eq 3 ] || fail "$host: a hung job exits $rc, want 3"
  $RUN "$PT" analyze "$T/$host" >"$T/$host.txt" 2>&1
  head -1 "$T/$host.txt" | grep -q "HANG" || fail "$host: $(head -2 "$T/$host.txt")"
  # the stuck all-reduce is call 0: the headline names its tag
  head -1 "$T/$host.txt" | grep -q "(AllReduce) in userTag 0x100 (your phase)" ||
    fail "$host: the verdict does not name the userTag: $(head -1 "$T/$host.txt")"
  $RUN "$PT" analyze --json "$T/$host" 2>/dev/null | grep -q '"userTag":"0x100"' ||
    fail "$host: the JSON report has no userTag"
  # the Perfetto trace carries it in the stuck op's args
  $RUN "$PT" analyze --chrome "$T/$host.trace.json" "$T/$host" >/dev/null 2>&1
  python3 - "$T/$host.trace.json" <<'PYEOF' || fail "$host: the --chrome trace has no userTag in a stuck op's args"
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
sys.exit(0 if any((e.get("args") or {}).get("userTag") == "0x100" for e in ev) else 1)
PYEOF
  json "$host" | grep -q '"profilerApi":7' || fail "$host: the v7 table was not bound"
  # the application tags call 0 with 0x100 and call 1 with 0x200
  json "$host" | grep -q '"userTag":"0x100"' || fail "$host: no op carries call 0's userTag"
  json "$host" | grep -q '"userTag":"0x200"' || fail "$host: no op carries call 1's userTag"
  json "$host" | grep -q '"diag":"missing"\|"diag":"mismatch"\|"maskChangedByHost":true' &&
    fail "$host: a clean job's dumps say the host misbehaved"
done
# before 2.31 there is no userTag
sim old --host nccl-2.30 --stall 3:0:5 >/dev/null 2>&1
json old | grep -q '"userTag"' && fail "nccl-2.30: an op has a userTag"
$RUN "$PT" analyze "$T/old" 2>/dev/null | head -1 | grep -q userTag && fail "nccl-2.30: the verdict names a userTag"
# RCCL 2.31: the counters came as ProxyDiag updates (bit 16, state 32)
json rccl-2.31 | grep '"type":"op"' | grep -q '"opCountFrom":"host"' ||
  fail "rccl-2.31: no op recorded from RCCL's fields"
json rccl-2.31 | grep '"opCountFrom":"host"' | grep -q '"posted":[1-9]' ||
  fail "rccl-2.31: RCCL ops have no counters"
grep -q 'ProxyDiag' "$T/rccl-2.31"/*.log && fail "rccl-2.31: a ProxyDiag warning on a clean job"

# ---- RCCL 2.31 sending ProxyDiag under a state the plugin was not told ----
sim miss --host rccl-2.31 --env PROXYTRACE_RCCL_DIAG=16:40 --stall 3:0:5 >/dev/null 2>&1
n=$(cat "$T/miss"/*.log | grep -c "ProxyDiag updates are missing")
[ "$n" -eq 1 ] || fail "missing ProxyDiag said $n times, want once"
dumps=$(json miss | grep -c '"type":"dump"')
missing=$(json miss | grep '"type":"dump"' | grep -c '"diag":"missing"')
[ "$dumps" -gt 0 ] && [ "$dumps" -eq "$missing" ] || fail "$missing of $dumps dumps say diag missing"
grep -l "proxytrace host: diag: missing" "$T/miss"/*.txt >/dev/null || fail "text dumps do not say diag missing"
$RUN "$PT" analyze "$T/miss" >"$T/miss.txt" 2>&1
head -1 "$T/miss.txt" | grep -q "OK" && fail "a hung job with missing ProxyDiag reads OK: $(head -1 "$T/miss.txt")"

# ---- RAS changes the mask mid-job (2.31+) ----
for host in nccl-2.31 nccl-2.32 rccl-2.31; do
  # off for two batches, then back, then KernelCh and ProxyCtrl on too
  sim "ras-$host" --host "$host" --stall 3:0:5 --ras-mask 1:0 --ras-mask 3:0x1801e \
    --ras-mask 5:0x1807e >/dev/null 2>&1
  rc=$?
  [ $rc -eq 3 ] || fail "$host with RAS mask changes exits $rc, want 3"
  json "ras-$host" | grep '"type":"dump"' | grep -q '"maskChangedByHost":true' ||
    fail "$host: no dump says the host changed the mask"
  $RUN "$PT" analyze "$T/ras-$host" >"$T/ras.txt" 2>&1
  head -1 "$T/ras.txt" | grep -q "HANG" || fail "$host with RAS changes: $(head -2 "$T/ras.txt")"
  # mask 0 from the start: no records, no culprit named
  sim "off-$host" --host "$host" --stall 3:0:5 --ras-mask 0:0 >/dev/null 2>&1
  $RUN "$PT" analyze "$T/off-$host" >"$T/off.txt" 2>&1
  grep -q "^culprit" "$T/off.txt" && fail "$host with mask 0 names a culprit: $(head -2 "$T/off.txt")"
done
# ---- faults beside mask flips on every v7 profile: the verdict where the
# records exist, "incomplete" where the hung call ran with the proxy events
# off (the dumps say so: maskOff) — never OK, never a culprit made up ----
for host in nccl-2.31 nccl-2.32 rccl-2.31; do
  for fault in "--stall 3:0:5" "--no-recv 4:0:3" "--kill 5:2" "--stall 1:all:2"; do
    # off for batches 1-2, back on long before the hung batch (6)
    # shellcheck disable=SC2086
    sim "on-$host" --host "$host" $fault --ras-mask 1:0 --ras-mask 3:0x1801e --truth-json "$T/on.json" \
      >/dev/null 2>&1
    $RUN "$PT" analyze --expect "$T/on.json" "$T/on-$host" >"$T/on.txt" 2>&1
    grep -q "agrees with the ground truth" "$T/on.txt" ||
      fail "$host $fault, mask back on: $(grep -m1 'ground truth (' "$T/on.txt")"
    # the hung batch runs with mask 0: nothing of it is recorded
    # shellcheck disable=SC2086
    sim "gap-$host" --host "$host" $fault --ras-mask 1:0x1801e --ras-mask 6:0 >/dev/null 2>&1
    $RUN "$PT" analyze "$T/gap-$host" >"$T/gap.txt" 2>&1
    rc=$?
    [ $rc -eq 4 ] || fail "$host $fault, hung call unrecorded: exit $rc, want 4: $(head -1 "$T/gap.txt")"
    head -1 "$T/gap.txt" | grep -q "INCOMPLETE.*with the proxy events off" ||
      fail "$host $fault: $(head -1 "$T/gap.txt")"
    grep -q "^culprit" "$T/gap.txt" && fail "$host $fault, hung call unrecorded, names a culprit"
    json "gap-$host" | grep '"type":"dump"' | grep -q '"maskOff":true' || fail "$host: no dump says maskOff"
    grep -q "proxy events off (calls since are not recorded)" "$T/gap-$host"/*.txt ||
      fail "$host: the text dumps do not say the proxy events are off"
  done
done

# a slow link read before the unrecorded hung call: its edges are shown, as
# what was read, and name no culprit — the job may be hung where the dumps
# do not reach, so "nothing is stuck, but edges are slow" is not proven
sim slowgap --host rccl-2.31 --ops sendrecv:8M --iters 8 --slow-link 5:8 --stall 1:all:2 \
  --ras-mask 1:0x1801e --ras-mask 6:0 >/dev/null 2>&1
$RUN "$PT" analyze "$T/slowgap" >"$T/slowgap.txt" 2>&1
rc=$?
[ $rc -eq 4 ] || fail "slow link beside an unrecorded hung call: exit $rc, want 4: $(head -1 "$T/slowgap.txt")"
head -1 "$T/slowgap.txt" | grep -q "INCOMPLETE — nothing is stuck in what was read.*proxy events off; [0-9]* edges* .*slow in what was read" ||
  fail "slow link beside an unrecorded hung call: $(head -1 "$T/slowgap.txt")"
grep -q "^culprit" "$T/slowgap.txt" && fail "a slow edge read before an unrecorded hang is named a culprit"
grep -Eq "^  rank (1 -> rank 5|5 -> rank 1), channel" "$T/slowgap.txt" || fail "the slow edges read are not shown"

# the option is refused where RAS cannot do it, said, not fatal
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --host nccl-2.30 --ras-mask 1:0 --iters 1 2>"$T/note" >/dev/null
grep -q "ras-mask does nothing under nccl-2.30" "$T/note" || fail "no note for --ras-mask on 2.30"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --host nccl-2.31 --ras-mask x:1 2>"$T/bad" >/dev/null
[ $? -eq 2 ] && grep -q "ras-mask" "$T/bad" || fail "a bad --ras-mask is not refused"
echo "ok"
