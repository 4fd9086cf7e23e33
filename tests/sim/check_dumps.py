#!/usr/bin/env python3
"""check_dumps.py — checks the plugin's dump files of one `proxytrace sim` run
against the emulator's ground truth (its --truth-file).

  check_dumps.py DIR TRUTH|- [--trigger NAME] [--stall-ms S --slack-ms X [--clock-ms C]]
                 [--no-trigger NAME] [--stock]

Every *.jsonl file in DIR must parse, line by line, with Python's json module
and hold whole dumps (a "dump" header, "op" lines, an "end" line whose count
matches) in the schema of docs/dump-json.md. With --trigger NAME, every rank
that has stuck ops has a dump with that trigger, and its first one:
  - names exactly the rank's stuck ops (rank, peer, channel, direction) with
    the status the truth gives (status=), active, and the truth's opCount,
    nSteps and counters (the truth speaks the dump's units);
  - with --stall-ms, was taken between S and S + X ms after the
    communicator's last progress;
  - pairs: each stuck send (rank r, peer p, channel c) has a receive on rank
    p from r on channel c with the same commHash and opCount in p's dump of
    that trigger, and each stuck receive a send likewise.
With --stock (NVIDIA hosts) every op's opCount must come from its parent Coll
or P2p event. With --no-trigger NAME no dump has that trigger. Exits 1 with a
message on the first failure.
"""
import glob
import json
import os
import re
import sys

HEADER_KEYS = ["schema", "tool", "version", "host", "pid", "rank", "nRanks", "nNodes", "commHash",
               "commName", "hostLib", "profilerApi", "clock", "trigger", "dumpSeq", "time_ns",
               "activeOps", "finishedOps", "mapSizeMB", "stallMs", "drops"]
OP_KEYS = ["dumpSeq", "rank", "peer", "channel", "dir", "commHash", "opCount", "opId", "key", "state",
           "status", "nSteps", "nBytes", "func", "proto", "pattern", "totalBytes", "chunkSize", "coll",
           "seq", "counters", "lastCounter", "create_ns", "last_ns", "posted_ns", "send_ns", "progress_ns"]
COUNTERS = ["posted", "kernelCopyReady", "rtrRecv", "rtsSend", "received", "transmitted", "flushed",
            "done", "recvTail", "tailOrHead", "fifoSzOrHeadCache"]
# The progress lines after the op lines (docs/dump-json.md, "Progress").
PROGRESS_KEYS = {
    "progress": ["dumpSeq", "rank", "colls", "p2ps", "kernelChStarts", "kernelChStops", "busy"],
    "coll": ["dumpSeq", "rank", "seq", "func", "count", "datatype", "root", "algo", "proto", "nChannels",
             "start_ns"],
    "p2p": ["dumpSeq", "rank", "seq", "func", "count", "datatype", "peer", "nChannels", "start_ns"],
    "kernelCh": ["dumpSeq", "rank", "channel", "starts", "stops", "startKind", "startFunc", "startSeq",
                 "start_ns", "gpuStart_ns", "stopKind", "stopFunc", "stopSeq", "stop_ns", "gpuStop_ns"],
}
DROPS = ["opsDropped", "opsReclaimed", "zeroStepOps", "staleHandle", "badHandle", "untrackedUpdate",
         "badCounterKind", "badState", "foreignPid", "wrongContext", "opsOverBudget"]


def fail(msg):
    print("check_dumps: FAIL: " + msg)
    sys.exit(1)


def read_dumps(path):
    """The dumps of one file, in order: (header, [ops])."""
    dumps, cur, ops, progress = [], None, [], None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                o = json.loads(line)
            except ValueError as e:
                fail("%s:%d does not parse: %s" % (path, n, e))
            t = o.get("type")
            if t == "dump":
                if cur is not None:
                    fail("%s:%d: a dump starts before the last one ended" % (path, n))
                for k in HEADER_KEYS:
                    if k not in o:
                        fail("%s:%d: header lacks %s" % (path, n, k))
                if o["schema"] != 1 or o["tool"] != "proxytrace":
                    fail("%s:%d: schema/tool" % (path, n))
                if not isinstance(o["commHash"], str) or not o["commHash"].isdigit():
                    fail("%s:%d: commHash must be a decimal string" % (path, n))
                if sorted(o["drops"]) != sorted(DROPS):
                    fail("%s:%d: drops %s" % (path, n, sorted(o["drops"])))
                cur, ops, progress = o, [], None
            elif t == "op":
                if cur is None:
                    fail("%s:%d: an op outside a dump" % (path, n))
                if progress is not None:
                    fail("%s:%d: an op after the progress lines" % (path, n))
                if "midWrite" in o and o["midWrite"] is not True:
                    fail("%s:%d: midWrite %r" % (path, n, o["midWrite"]))
                for k in OP_KEYS:
                    if k not in o:
                        fail("%s:%d: op lacks %s" % (path, n, k))
                if o["dumpSeq"] != cur["dumpSeq"] or o["commHash"] != cur["commHash"] and cur["commHash"] != "0":
                    fail("%s:%d: op of another dump" % (path, n))
                if sorted(o["counters"]) != sorted(COUNTERS):
                    fail("%s:%d: counters %s" % (path, n, sorted(o["counters"])))
                if o["dir"] not in ("send", "recv") or o["state"] not in ("active", "detached", "finished"):
                    fail("%s:%d: dir/state" % (path, n))
                if o["key"] != "<%s:%d:%d>" % (o["commHash"], o["opCount"], o["opId"]):
                    fail("%s:%d: key %s" % (path, n, o["key"]))
                ops.append(o)
            elif t == "end":
                if cur is None or o["dumpSeq"] != cur["dumpSeq"] or o["records"] != len(ops):
                    fail("%s:%d: end line does not close its dump" % (path, n))
                if cur["activeOps"] + cur["finishedOps"] != len(ops):
                    fail("%s:%d: activeOps + finishedOps != records" % (path, n))
                dumps.append((cur, ops))
                cur = None
            elif t in PROGRESS_KEYS:
                if cur is None or o["dumpSeq"] != cur["dumpSeq"]:
                    fail("%s:%d: a %s line outside its dump" % (path, n, t))
                if (t == "progress") != (progress is None):
                    fail("%s:%d: the progress line must come first, once" % (path, n))
                if sorted(o) != sorted(PROGRESS_KEYS[t] + ["type"] + (["userTag"] if "userTag" in o else [])):
                    fail("%s:%d: %s keys %s" % (path, n, t, sorted(o)))
                if t == "progress":
                    progress = o
                elif t == "kernelCh" and o["stops"] > o["starts"]:
                    fail("%s:%d: more kernel-channel stops than starts" % (path, n))
            else:
                fail("%s:%d: unknown type %r" % (path, n, t))
    if cur is not None:
        fail("%s: the last dump has no end line" % path)
    return dumps


def read_truth(path):
    stuck = []
    if path == "-":
        return stuck, set()
    pat = re.compile(r"truth: stuck rank=(\d+) peer=(\d+) chan=(\d+) ([SR]) .* opCount=(-?\d+) ns=(\d+) po=(\d+) "
                     r"recvd=(\d+) trans=(\d+) done=(\d+) status=(\w+)")
    dead = set()
    with open(path) as f:
        for line in f:
            m = re.match(r"truth: rank (\d+) is dead", line)
            if m:
                dead.add(int(m.group(1)))
            m = pat.match(line)
            if m and "pxn-proxy=" not in line:
                d = "send" if m.group(4) == "S" else "recv"
                # opCount, nSteps and the counters, in the dump's units
                want = {"opCount": int(m.group(5)), "nSteps": int(m.group(6)), "posted": int(m.group(7)),
                        "transmitted": int(m.group(9)), "done": int(m.group(10))}
                if d == "recv":
                    want["received"] = int(m.group(8))
                stuck.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), d, m.group(11), want))
    return stuck, dead


def main(argv):
    args = {"--trigger": None, "--stall-ms": None, "--slack-ms": "1000", "--clock-ms": "5", "--no-trigger": None}
    flags = set()
    pos = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in args:
            args[a] = argv[i + 1]
            i += 2
        elif a.startswith("--"):
            flags.add(a)
            i += 1
        else:
            pos.append(a)
            i += 1
    ddir, truth = pos
    stuck, dead = read_truth(truth)
    files = sorted(glob.glob(os.path.join(ddir, "proxytrace-*.jsonl")))
    by_rank = {}
    for p in files:
        dumps = read_dumps(p)
        if not dumps:
            fail("%s holds no dump" % p)
        for h, ops in dumps:
            if "--stock" in flags:
                for o in ops:
                    if o["opCountFrom"] not in ("coll", "p2p") or o["opCount"] < 0 or o["coll"] is None:
                        fail("%s: a stock NCCL op without a parent-derived opCount: %s" % (p, o["key"]))
            if args["--no-trigger"] and h["trigger"] == args["--no-trigger"]:
                fail("%s: a dump with trigger %s (%s)" % (p, h["trigger"], p))
        rank = dumps[0][0]["rank"]
        if rank in by_rank and args["--trigger"]:
            fail("two files for rank %d (one communicator per rank in the emulator)" % rank)
        by_rank[rank] = dumps
    for r in dead:
        if r in by_rank:
            fail("dead rank %d wrote dumps" % r)
    trig = args["--trigger"]
    if not trig:
        print("check_dumps: %d files parse" % len(files))
        return
    first = {}
    for r, dumps in by_rank.items():
        for h, ops in dumps:
            if h["trigger"] == trig:
                first[r] = (h, ops)
                break
    for (r, peer, ch, d, status, want) in stuck:
        if r in dead:
            continue
        if r not in first:
            fail("rank %d has stuck ops but no %s dump" % (r, trig))
        h, ops = first[r]
        hit = [o for o in ops if o["state"] == "active" and o["peer"] == peer and o["channel"] == ch and o["dir"] == d]
        if len(hit) != 1:
            fail("rank %d: stuck %s to %d on channel %d: %d active lines in the %s dump" % (r, d, peer, ch, len(hit), trig))
        if hit[0]["status"] != status:
            fail("rank %d: stuck %s to %d on channel %d: status %s, truth %s" % (r, d, peer, ch, hit[0]["status"], status))
        got = {k: hit[0]["counters"].get(k, hit[0].get(k)) for k in want}
        got["opCount"], got["nSteps"] = hit[0]["opCount"], hit[0]["nSteps"]
        if got != want:
            fail("rank %d: stuck %s to %d on channel %d: the dump says %s, the truth %s (same opCount and units)"
                 % (r, d, peer, ch, got, want))
        if args["--stall-ms"]:
            s, x = int(args["--stall-ms"]), int(args["--slack-ms"])
            late = (h["time_ns"] - h["lastProgress_ns"]) / 1e6
            if late > s + x:
                fail("rank %d: stall dump %.1f ms after its last progress, want at most %d" % (r, late, s + x))
            # The round was due: some communicator dumped in it had not
            # progressed for the stall time (--clock-ms, 5 by default: ticks
            # and CLOCK_REALTIME are calibrated, not equal; more under an
            # emulator, whose counter is not the machine's). Others in the
            # round may be younger.
            oldest = max((hh["time_ns"] - hh["lastProgress_ns"]) / 1e6 for hh, _ in first.values()
                         if hh["round"] == h["round"] and hh["lastProgress_ns"] is not None)
            if oldest < s - int(args["--clock-ms"]):
                fail("stall round %d: no communicator had stalled %d ms (at most %.1f)" % (h["round"], s, oldest))
        want = "recv" if d == "send" else "send"
        if peer in dead:
            continue
        if peer not in first:
            fail("rank %d's peer %d has no %s dump to pair with" % (r, peer, trig))
        pairs = [o for o in first[peer][1] if o["peer"] == r and o["channel"] == ch and o["dir"] == want
                 and o["commHash"] == hit[0]["commHash"] and o["opCount"] == hit[0]["opCount"]]
        if not pairs:
            fail("rank %d: stuck %s to %d on channel %d (opCount %d) has no %s on rank %d with that opCount"
                 % (r, d, peer, ch, hit[0]["opCount"], want, peer))
    for r, (h, ops) in first.items():
        active = [o for o in ops if o["state"] == "active"]
        mine = [s for s in stuck if s[0] == r]
        if len(active) != len(mine):
            fail("rank %d: %d active ops in its %s dump, %d stuck in the truth" % (r, len(active), trig, len(mine)))
    print("check_dumps: %d files, %d stuck ops found and paired in the %s dumps" % (len(files), len(stuck), trig))


if __name__ == "__main__":
    main(sys.argv[1:])
