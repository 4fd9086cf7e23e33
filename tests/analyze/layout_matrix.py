#!/usr/bin/env python3
"""The origin of a hang across communicators: emulated parallel training
jobs (proxytrace sim --layout TPxPPxDP), a fault in one communicator, and
the analysis of the whole folder against the layout's ground truth.

Every job is drawn from one seeded generator (printed first; a failing run
is repeated with --seed): a layout (TP 1-8, PP 1-8, DP 2-64 processes, DP
drawn on a log scale and held to at most MAX_PROCS processes in all), a
host profile (every one the emulator offers), a fault (a GPU that stops in a pipeline or data-parallel
communicator, a receive never posted there, a process killed there (about
a sixth of those; a GPU that stops inside its TP group in a quarter of the
stalls of jobs with TP over 1), or a rank that never makes a call of any
communicator — a desync), the communicator it strikes, its rank
in it, the iteration, and the channels; in about a third of the jobs
whose DP has a divisor of 2-16, expert parallelism (--ep), the fault in an
EP group's all-to-all in half of those; a sharded optimizer's
reduce-scatter in the DP groups in a third; the PP groups' 1F1B step of
1-8 microbatches, a fault in a PP group striking any of its stage's calls
that fits it (--fault-p2p-call). The hang spreads to every
communicator whose members wait on a process stuck elsewhere.

Each job's outcome:
  exact    the first culprit is the fault's rank of the faulty
           communicator, with the fault's cause, and every culprit of
           another communicator is a consequence of it (consequenceOf)
  node     the same, the rank named among the first culprit's candidates
  process  the first culprit names the fault's process where it is absent
           in another communicator (a process outside every communicator
           it holds, placed by when each communicator came to wait on it:
           where those times do not tell the call it missed first)
  limit    the truth marks the fault as one no dump can show (seen: false)
  missed   the first culprit is elsewhere
  false    a culprit of another communicator stands as a culprit of its
           own (not a consequence), or a healthy job reads as a hang
The run fails on any missed or false job.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

from fault_matrix import HOSTS, emulated, fitting_calls  # the hosts; the build's programs, under its emulator; a pipeline stage's calls

# The most processes a drawn layout has (--max-procs): 8x8x4 and 2x2x64
# stay in, and a job of 256 processes takes a few seconds.
MAX_PROCS = 256
CAUSE = {"stall": ("gpu_not_producing", "gpu_not_consuming", "stopped"),
         "no-recv": ("no_receive_posted",),
         "skip": ("not_entered",),
         "kill": ("rank_missing",)}



# Every job a slice ever failed on, as describe() writes it: --fixed runs
# them all, whatever the seed.
FIXED = [
    # NCCL 2.25: process 0 waits in its TP group on process 1, which skipped
    # a DP call and whose dumps name no communicator there; process 0's
    # absence from its PP group follows process 1's absence from its own
    "nccl-2.25 --layout 2x3x2 --channels 1 --iters 3 --seed 225652 --fault-comm dp:1 --skip 0 --fault-iter 0",
    # a first pipeline stage killed in its last recv_backward: the gradient
    # sent to it fits the buffers it posted, so its neighbour got through
    # its step in the PP group's own run but was held in the layout's
    # propagation, and a DP group read its absence as a culprit of its own
    "nccl-2.27 --layout 6x3x14 --microbatches 2 --channels 2 --iters 2 --seed 296813 --fault-comm pp:13 --kill 0:0 "
    "--fault-iter 1 --fault-p2p-call 3",
    # NCCL 2.24: a process killed in a DP group; its node's other processes
    # wait in their TP group, which lacks its rank only but shows no culprit
    # of its own (no kernel records), so their PP groups' culprits stood on
    # their own: the search through the TP group's last call now reaches the
    # dead process's rank whose dumps stop (none, or stale)
    "nccl-2.24 --layout 5x4x10 --microbatches 8 --channels 1 --iters 2 --seed 288908 --fault-comm dp:16 --kill 9:1 "
    "--fault-iter 0",
    # RCCL: a first stage killed in its pipeline's send of iteration 2, its
    # latest PP dump (stale) showing the send still moving, so the PP group
    # named no culprit; its neighbour's absence from its DP group stood on
    # its own: a process with ops stuck where no culprit is named now
    # reaches the dead process's rank whose dumps stop there
    "rccl --layout 1x2x46 --microbatches 2 --channels 4 --iters 3 --seed 271567 --fault-comm pp:21 --kill 0:1 "
    "--fault-iter 2",
]

# Jobs at scale (--scale): 1 024 processes, 8 of a node, with expert
# parallelism, a GPU that stops in a DP group, the hang spread over two
# iterations; 16 384 processes (2 048 communicators, 100 352 files, about
# 0.9 GB), a GPU that stops in a PP group.
SCALE = [
    "rccl --layout 8x8x16 --ep 4 --channels 2 --iters 2 --seed 5 --fault-comm dp:5 --stall 3:0:1 --fault-iter 0",
    "nccl-2.28 --layout 16x32x32 --channels 1 --iters 1 --seed 7 --fault-comm pp:100 --stall 3:0:1 --fault-iter 0",
]


def parse(line):
    """The job describe() wrote as line."""
    w = line.split()
    a = dict(zip(w[1::2], w[2::2]))
    tp, pp, dp = (int(x) for x in a["--layout"].split("x"))
    kind, index = a["--fault-comm"].split(":")
    fault = next(k for k in CAUSE if "--" + k in a)
    return {"host": w[0], "tp": tp, "pp": pp, "dp": dp, "ep": int(a.get("--ep", 1)),
            "mb": int(a.get("--microbatches", 4)), "p2p_call": int(a.get("--fault-p2p-call", 0)),
            "dp_op": a.get("--dp-op", "allreduce"), "kind": kind, "index": int(index),
            "rank": int(a["--" + fault].split(":")[0]), "fault": fault, "arg": a["--" + fault],
            "iters": int(a["--iters"]), "iter": int(a["--fault-iter"]), "channels": int(a["--channels"]),
            "seed": int(a["--seed"])}


def draw(rng, max_procs=MAX_PROCS, only=None):
    tp, pp = rng.randint(1, 8), rng.randint(1, 8)
    dp = max(2, min(int(round(2 ** rng.uniform(1, 6))), max_procs // (tp * pp)))
    kinds = ["pp", "dp"] if pp > 1 else ["dp"]
    fault = rng.choice(["stall", "stall", "no-recv", "skip"])
    if fault == "skip" and tp > 1:
        kinds.append("tp")
    kind = rng.choice(kinds)
    count = {"tp": pp * dp, "pp": dp * tp, "dp": pp * tp}[kind]
    size = {"tp": tp, "pp": pp, "dp": dp}[kind]
    iters = rng.randint(1, 3)
    job = {"host": rng.choice(HOSTS), "tp": tp, "pp": pp, "dp": dp, "kind": kind, "index": rng.randrange(count),
           "rank": rng.randrange(size), "fault": fault, "iters": iters, "iter": rng.randrange(iters),
           "channels": rng.randint(1, 4), "seed": rng.randint(1, 10 ** 6)}
    if fault == "stall":  # a PP send/recv of 4 MiB has 2 transfers under some hosts
        job["arg"] = "%d:%s:%d" % (job["rank"], rng.choice(["all", "0"]), rng.choice([0, 1] if kind == "pp" else [0, 1, 3]))
    elif fault == "no-recv":
        job["arg"] = "%d:%s:%d" % (job["rank"], rng.choice(["all", "0"]), rng.choice([0, 1]))
    else:
        job["arg"] = str(job["rank"])
    # Expert parallelism in about a third of the jobs whose DP has a
    # divisor of 2..16, drawn from the job's seed (the draws above stay
    # those of earlier slices): EP groups of that many replicas, each an
    # all-to-all after the TP all-reduce; in half of them the fault strikes
    # an EP group instead.
    # A killed process in a sixth of the jobs whose fault strikes a PP or
    # DP group (only="kill": in every such job), from the job's seed too: it
    # dies at a transfer of the faulty call and leaves no file in any
    # communicator it holds.
    krng = random.Random(job["seed"] * 13 + 7)
    if kind in ("pp", "dp") and (only == "kill" or (only is None and krng.random() < 0.17)):
        job.update(fault="kill", arg="%d:%d" % (job["rank"], krng.choice([0, 1])))
    # A sharded optimizer's reduce-scatter in the DP groups in a third of
    # the jobs, from the job's seed.
    job["dp_op"] = "reducescatter" if random.Random(job["seed"] * 31 + 17).random() < 0.33 else "allreduce"
    erng = random.Random(job["seed"] * 7 + 1)
    job["ep"] = 1
    divisors = [e for e in range(2, min(dp, 16) + 1) if dp % e == 0]
    if divisors and erng.random() < 0.35:
        job["ep"] = erng.choice(divisors)
        if erng.random() < 0.5:
            job.update(kind="ep", index=erng.randrange(pp * tp * (dp // job["ep"])), rank=erng.randrange(job["ep"]))
            if job["fault"] == "skip":
                job["arg"] = str(job["rank"])
            elif job["fault"] == "kill":
                job["arg"] = "%d:%d" % (job["rank"], erng.choice([0, 1]))
            else:  # 4 MiB to each peer: at least 2 transfers a channel
                job["arg"] = "%d:%s:%d" % (job["rank"], erng.choice(["all", "0"]), erng.choice([0, 1]))
    # A GPU that stalls in its TP group (inside one node: NVLink, no proxy
    # op) in a quarter of the stalls of jobs with TP over 1, from the job's
    # seed: the records name the node's group, every rank a candidate.
    trng = random.Random(job["seed"] * 19 + 5)
    if tp > 1 and job["fault"] == "stall" and job["kind"] != "ep" and trng.random() < 0.25:
        job.update(kind="tp", index=trng.randrange(pp * dp), rank=trng.randrange(tp))
        job["arg"] = "%d:%s:%d" % (job["rank"], trng.choice(["all", "0"]), trng.choice([0, 1]))
    # The PP groups' microbatches a step (1-8), and for a fault in a PP
    # group which of the faulty stage's calls it strikes, from the job's
    # seed: a stall or a no-recv in any exchange of the 1F1B schedule that
    # has a send or a receive to strike.
    prng = random.Random(job["seed"] * 17 + 3)
    job["mb"] = prng.randint(1, 8) if pp > 1 else 4
    job["p2p_call"] = 0
    if job["kind"] == "pp" and job["fault"] in ("stall", "no-recv", "kill"):
        job["p2p_call"] = prng.randrange(max(1, fitting_calls(pp, job["mb"], job["rank"], job["fault"])))
    return job


def describe(j):
    return "%s --layout %dx%dx%d%s%s%s --channels %d --iters %d --seed %d --fault-comm %s:%d --%s %s --fault-iter %d%s" % (
        j["host"], j["tp"], j["pp"], j["dp"], " --ep %d" % j["ep"] if j.get("ep", 1) > 1 else "",
        " --dp-op %s" % j["dp_op"] if j.get("dp_op", "allreduce") != "allreduce" else "",
        " --microbatches %d" % j["mb"] if j.get("mb", 4) != 4 else "", j["channels"],
        j["iters"], j["seed"], j["kind"], j["index"], j["fault"], j["arg"], j["iter"],
        " --fault-p2p-call %d" % j["p2p_call"] if j.get("p2p_call", 0) else "")


def run(j, pt, plugin, top):
    d = tempfile.mkdtemp(dir=top)
    env = dict(os.environ)
    if j["host"] == "nccl-2.27.3":
        # it loads a plugin by short name only: a link with the name it looks
        # for, on LD_LIBRARY_PATH
        link = os.path.join(top, "libnccl-profiler-proxytrace.so")
        if not os.path.exists(link):
            os.symlink(plugin, link)
        env["LD_LIBRARY_PATH"] = top + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        plugin = "proxytrace"
    try:
        args = pt + ["sim", "--plugin", plugin, "--quiet", "--host", j["host"], "--layout",
                "%dx%dx%d" % (j["tp"], j["pp"], j["dp"]), "--ep", str(j.get("ep", 1)), "--dp-op",
                j.get("dp_op", "allreduce"), "--channels", str(j["channels"]), "--iters", str(j["iters"]),
                "--seed", str(j["seed"]), "--fault-comm", "%s:%d" % (j["kind"], j["index"]), "--" + j["fault"],
                j["arg"], "--fault-iter", str(j["iter"]), "--microbatches", str(j.get("mb", 4)),
                "--fault-p2p-call", str(j.get("p2p_call", 0)), "--dump-dir", d, "--truth-json", d + "/truth.json",
                "--poll-us", "200", "--hang-polls", "20", "--hold", "0.4",
                "--env", "PROXYTRACE_DUMP_INTERVAL_MS=50", "--env", "PROXYTRACE_STALL_MS=100"]
        sim = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        if sim.returncode not in (0, 3):
            return "error", "sim exit %d: %s" % (sim.returncode, sim.stderr.strip()[-300:])
        truth = json.load(open(d + "/truth.json"))
        an = subprocess.run(pt + ["analyze", "--json", d], capture_output=True, text=True, timeout=300)
        try:
            doc = json.loads(an.stdout)
        except ValueError:
            return "error", "analyze: " + an.stderr.strip()[-300:]
        return judge(j, truth, doc)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def judge(j, truth, doc):
    culprits = doc.get("culprits", [])
    name = "%s%d" % (j["kind"], j["index"])
    fc = next(c for c in truth["communicators"] if c["name"] == name)
    if truth["verdict"] != "hang":
        return ("ok", "no hang") if doc.get("verdict") in ("ok", "slow") else ("false", "a healthy job read as " +
                                                                            str(doc.get("verdict")))
    sub = fc["truth"]
    if sub is None or sub.get("verdict") != "hang":
        return "limit", "the faulty communicator does not hang (the fault strikes no call)"
    if sub.get("hangSeen") is False or any(c.get("seen") is False for c in sub.get("culprits", [])):
        return "limit", "the truth marks the fault as one no dump can show"
    proc = next(p for p in truth["processList"] if p["process"] == fc["ranks"][j["rank"]])
    # the fault's process: by the host and pid a culprit names, or, for a
    # rank that wrote no dump (a dead process names none), by the truth's
    # ranks of its communicator
    ranks_of = {c["commHash"]: c["ranks"] for c in truth["communicators"]}

    def same_proc(c):
        if c.get("host") == proc["host"] and c.get("pid") == proc["pid"]:
            return True
        rs = ranks_of.get(c.get("commHash"), [])
        return c.get("cause") == "rank_missing" and 0 <= c.get("rank", -1) < len(rs) and \
            rs[c["rank"]] == proc["process"]
    own = [c for c in culprits if c.get("consequenceOf") is None]
    old = j["host"] in ("nccl-2.23", "nccl-2.24", "nccl-2.25", "nccl-2.26")
    if old and any(c["cause"] == "rank_missing" for c in own if c["commHash"] != fc["commHash"]):
        # NCCL 2.23-2.26: a rank that never made a communicator's first call
        # never learns its rank, and its dumps cannot be placed
        return "limit", "a rank that never entered its communicator's first call has no rank in its dumps"
    others = [c for c in own if c["commHash"] != fc["commHash"] and not same_proc(c)]
    if others:
        return "false", "a culprit of communicator %s stands on its own: %s" % (others[0]["commHash"],
                                                                                others[0].get("summary", "")[:200])
    if not culprits:
        return "missed", "no culprit"
    first = culprits[0]
    if first["commHash"] != fc["commHash"]:
        if same_proc(first) and first["cause"] in ("not_entered", "rank_behind", "send_missing", "no_receive_posted",
                                                   "rank_missing"):
            # the fault's process, absent from several communicators and
            # stuck in none: the records do not tell which call it missed
            # first
            return "process", "the fault's process, named where it is absent: " + first.get("summary", "")[:100]
        return "missed", "the first culprit is in communicator %s: %s" % (first["commHash"], first.get("summary"))
    want = j["rank"]
    causes = CAUSE[j["fault"]]
    if first["rank"] == want and first["cause"] in causes:
        return "exact", first.get("summary", "")[:120]
    if first["rank"] == want and any(c.get("rank") == want and c.get("exact") is False for c in sub.get("culprits", [])):
        # the truth's own: the records name the rank, not the cause (a
        # stage's receive never called reads as a call not reached)
        return "node", first.get("summary", "")[:120]
    if want in (first.get("candidates") or []):
        return "node", first.get("summary", "")[:120]
    return "missed", "the first culprit is rank %s (%s), not rank %d: %s" % (first["rank"], first["cause"], want,
                                                                          first.get("summary", "")[:200])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--fixed", action="store_true", help="run the jobs a slice once failed on (FIXED)")
    ap.add_argument("--scale", action="store_true", help="run the jobs at scale (SCALE: 1 024 and 16 384 processes)")
    ap.add_argument("--max-procs", type=int, default=MAX_PROCS, help="the most processes a drawn layout has")
    ap.add_argument("--fault", choices=["kill"], help="make every drawn fault of a PP or DP group this one")
    ap.add_argument("-v", action="store_true")
    o = ap.parse_args()
    pt = emulated(os.path.join(os.path.abspath(o.build), "proxytrace"))
    plugin = os.path.join(os.path.abspath(o.build), "librccl-profiler-proxytrace.so")
    if o.fixed or o.scale:
        print("layout matrix: the %d jobs %s" % (len(SCALE) if o.scale else len(FIXED),
                                                "at scale" if o.scale else "a slice once failed on"))
    else:
        print("layout matrix: seed %d, %d jobs (repeat with --seed %d --jobs %d)" % (o.seed, o.jobs, o.seed, o.jobs))
    rng = random.Random(o.seed)
    jobs = [parse(x) for x in (SCALE if o.scale else FIXED)] if o.fixed or o.scale else \
        [draw(rng, o.max_procs, o.fault) for _ in range(o.jobs)]
    counts = {}
    bad = 0
    top = tempfile.mkdtemp(prefix="pt-layout-")
    try:
        for j in jobs:
            out, why = run(j, pt, plugin, top)
            counts[out] = counts.get(out, 0) + 1
            if out in ("missed", "false", "error"):
                bad += 1
            if o.v or out in ("missed", "false", "error", "limit"):
                print("%-7s %s: %s" % (out, describe(j), why))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("layout matrix: %s, %d jobs: %s" % ("scale" if o.scale else "fixed" if o.fixed else "seed %d" % o.seed,
                                              len(jobs), ", ".join(
        "%d %s" % (counts.get(k, 0), k) for k in ("exact", "node", "process", "limit", "ok", "missed", "false",
                                               "error"))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
