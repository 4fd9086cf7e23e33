#!/bin/sh
# Dump files under a cap (PROXYTRACE_DUMP_MAX_MB): an emulated 8-rank job
# hangs while the plugin dumps every 2 ms, once with a 1 MiB cap and once
# with the largest (no rotation in so short a run), with the same seed.
# With the cap no rank's files ever hold more than 2 formats x 2
# generations x 1 MiB plus one dump; every kept dump is whole (its JSON
# header and end line, its text banner); the analysis of the rotated folder
# gives the verdict and culprit of the unrotated one, and -v says how many
# dumps rotation removed; the first stall dump of each rank's last stall
# episode (the one that shows where the hang began, hundreds of periodic
# dumps earlier) is still there, named by every later dump. A bad value is
# said once and the default cap applies.
# Prints the dump-file sizes per rank with and without the cap.
# $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"
# Rotation needs hundreds of dumps within the held hang; under a user-mode
# emulator far fewer come in that time, so there is nothing to rotate.
[ -n "$RUN" ] && { echo "dump-rotation: skipped under an emulator ($RUN)"; exit 0; }

case "$B" in
  *-thread|*-address|*aarch64*) HOLD=2.5 ;; # several times slower: as many dumps
  *) HOLD=1.2 ;;
esac

job() { # folder, cap
  mkdir -p "$T/$1"
  $RUN "$PT" sim --plugin "$PLUGIN" --host rccl --nodes 2 --ranks-per-node 4 --seed 7 --stall 3:0:5 \
    --hold "$HOLD" --env PROXYTRACE_DUMP_DIR="$T/$1" --env PROXYTRACE_STALL_MS=100 \
    --env PROXYTRACE_DUMP_INTERVAL_MS=2 --env PROXYTRACE_DUMP_MAX_MB="$2" >"$T/$1.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 3 ] || { tail -5 "$T/$1.log"; fail "sim exited with $rc (cap $2)"; }
}
job capped 1
job plain 1048576
job bad abc

python3 - "$T" <<'PY' || exit 1
import json, os, re, sys
T = sys.argv[1]
MIB = 1 << 20

def files(d):
    """rank -> {name: bytes}"""
    out = {}
    for n in sorted(os.listdir(d)):
        m = re.match(r"proxytrace-.*-r(\d+)-\d+(\.1)?\.(txt|jsonl)$", n)
        assert m, n
        out.setdefault(int(m.group(1)), {})[n] = open(os.path.join(d, n), "rb").read()
    return out

def dumps_of(jsonl_bytes, name):
    """The dumps of one JSON lines file, each whole: (header, n_ops, bytes)."""
    out, cur, size = [], None, 0
    for line in jsonl_bytes.splitlines(keepends=True):
        o = json.loads(line)
        if o["type"] == "dump":
            assert cur is None, "%s: a dump without its end line" % name
            cur, size, ops = o, 0, 0
        assert cur is not None, "%s: a line outside a dump" % name
        size += len(line)
        if o["type"] == "op":
            ops += 1
        if o["type"] == "end":
            out.append((cur, ops, size))
            cur = None
    assert cur is None, "%s: its last dump has no end line" % name
    return out

def check(d, cap):
    fs = files(os.path.join(T, d))
    assert len(fs) == 8, (d, sorted(fs))
    sizes, rotated, biggest = {}, 0, 0
    for r, group in fs.items():
        seqs = {}
        for n, b in group.items():
            if n.endswith(".jsonl"):
                ds = dumps_of(b, n)
                seqs[n[:-6]] = [h["dumpSeq"] for h, _, _ in ds]
                biggest = max([biggest] + [s for _, _, s in ds])
                rotated = max([rotated] + [h.get("rotatedDumps", 0) for h, _, _ in ds])
        for n, b in group.items():  # the text twin holds the same dumps, each with its banner
            if n.endswith(".txt"):
                banners = [int(m) for m in re.findall(rb"^proxytrace dump seq=(\d+)", b, re.M)]
                assert b.startswith(b"proxytrace dump seq="), n
                assert banners == seqs[n[:-4]], (n, banners[:5], seqs[n[:-4]][:5])
        sizes[r] = sum(len(b) for b in group.values())
        for n, b in group.items():
            # a file passes the cap only by a dump that alone is larger
            assert len(b) <= cap or len(seqs.get(n.rsplit(".", 1)[0], [0, 0])) <= 2, (n, len(b))
    return fs, sizes, rotated, biggest

cap = 1 * MIB
fs, capped, rotated, biggest = check("capped", cap)
_, plain, plain_rotated, _ = check("plain", 1 << 40)
print("dump-file bytes per rank, cap 1 MiB:  " + " ".join("r%d %d" % kv for kv in sorted(capped.items())))
print("dump-file bytes per rank, no rotation: " + " ".join("r%d %d" % kv for kv in sorted(plain.items())))
for r, s in capped.items():
    assert s <= 4 * cap + biggest * 2, (r, s)  # 2 formats x 2 generations x cap, plus one dump (both formats)
assert rotated > 0, "the capped run never rotated"
assert plain_rotated == 0
# the unrotated run wrote more than a rank's two files hold under the cap:
# without rotation a file would have passed it (a sanitizer's slower run
# writes fewer dumps in the hold: seen 3.2 MB a rank under TSan)
assert max(plain.values()) > 2 * cap, "the unrotated run is too short to test the cap"

# The first stall dump of each rank's last stall episode is still there:
# the dump every later dump of the episode names (stallEpisodeSeq). Its
# first stall dump is the episode's only where the rank did not move after
# it (a slow run lets a rank progress after an early stall round).
carried = 0
for r in range(8):
    kept = sorted((h for n, b in fs[r].items() if n.endswith(".jsonl") for h, _, _ in dumps_of(b, n)),
                  key=lambda h: h["dumpSeq"])
    seq = kept[-1]["stallEpisodeSeq"]
    assert seq is not None, ("rank %d: its newest dump %d names no stall episode" % (r, kept[-1]["dumpSeq"]))
    seqs = [h["dumpSeq"] for h in kept]
    assert seq in seqs, ("rank %d lost the first stall dump %d of its last episode" % (r, seq))
    first = kept[seqs.index(seq)]
    assert first["trigger"] == "stall" and first["stallEpisodeSeq"] == seq, first
    # every kept dump after it is of its episode
    assert all(h["stallEpisodeSeq"] == seq for h in kept[seqs.index(seq):]), r
    # carried across a rotation: older than a kept dump of a removed generation
    carried += first["rotatedDumps"] < kept[-1]["rotatedDumps"]
assert carried > 0, "no rank's episode dump was carried across a rotation"

# A bad value: said once, the default cap (0.1 MiB) applies.
log = open(os.path.join(T, "bad.log")).read()
assert log.count("PROXYTRACE_DUMP_MAX_MB='abc' is not a number") == 1, log[:2000]
_, bad, bad_rotated, bad_biggest = check("bad", MIB // 10)
assert bad_rotated > 0 and max(bad.values()) <= 4 * (MIB // 10) + 2 * bad_biggest, bad
PY

# The same verdict and culprit with and without rotation; -v counts what rotation removed.
a=$($RUN "$PT" analyze --json "$T/capped") ; b=$($RUN "$PT" analyze --json "$T/plain")
v() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); c=d["culprits"][0]; print(d["verdict"], c["rank"], c["channel"], c["cause"], d["stats"]["rotatedDumps"] > 0)' "$1"; }
va=$(v "$a"); vb=$(v "$b")
[ "${va% *}" = "${vb% *}" ] || fail "verdict with rotation '$va', without '$vb'"
[ "${va##* }" = True ] || fail "the JSON report does not count rotated dumps: $va"
case "$va" in hang\ 3\ 0\ *) ;; *) fail "not the injected stall of rank 3: $va" ;; esac
$RUN "$PT" analyze -v "$T/capped" | grep -q "rotation (PROXYTRACE_DUMP_MAX_MB) had removed [0-9]* older dumps" ||
  fail "analyze -v does not say what rotation removed"
echo "dump-rotation: ok ($va)"
