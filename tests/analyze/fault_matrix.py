#!/usr/bin/env python3
"""The randomized fault matrix: emulated jobs drawn from the whole space the
emulator offers, each analyzed from the plugin's dump files and compared with
the emulator's ground truth.

Every job is drawn from one seeded generator (printed first, so a failing run
is repeated with --seed): a host profile (every NVIDIA NCCL release profile,
rccl and rccl-2.31; --host H, repeatable, draws from those only), a topology from 2 x 1 to 32 x 8 ranks (odd shapes too), 1-8
channels, the SIMPLE, LL or LL128 protocol, a workload (all-reduce,
send/recv, both, of several sizes), and the faults: none, a stall, a receive
never posted, a kill, a slow link or GPU, a PXN send (with a stall or not; half of those with
one process a node, --ranks-per-process),
never-stopped ops beside a stall, a rank that skips a call or calls another
collective than its peers (a desync) — at any transfer the op has, the first and
the last included, in the first or the last iteration and in any call — and
two faults in one job (two stalls, a kill beside a stall, a no-recv beside a
stall). Hung jobs leave the dumps of the host's destroy (RCCL's dump hook,
NVIDIA's finalize) or, for some, of the plugin's stall watchdog while the job
is held; every job runs on the emulator's emulated time (a timing fault's
polls 500 emulated us long, others 200: --poll-us), with a periodic dump
under NVIDIA profiles so that a job that completes leaves one. A killed rank's files are
removed: all emulated ranks share one process, and a dead process writes
nothing after it dies.

Each job's outcome (`proxytrace analyze --json --expect`):
  exact      every culprit by rank, channel and cause
  node       at node level (a GPU inside a node's part of a ring, PXN)
  limit      a documented limit the analysis reports ("within a documented
             limit": a timing judgement below the evidence it needs, ms times)
  incomplete exit 4: the analysis says what it could not see, names nothing false
  nodump     a healthy job that completed without any dump (NVIDIA hosts
             dump a healthy job only periodically); a slow or hung job
             without one is missed
  missed     a culprit of the truth not named
  false      a culprit the truth does not name, or a hang called ok
The run fails on any missed, false or truth job. Usage:

  fault_matrix.py BUILD [--seed N] [--jobs N] [--parallel N] [--host H]... [--kinds K,...]
                  [--summaries] [-v]
  fault_matrix.py BUILD --corpus FILE [--parallel N] [-v]

On emulated time a job's files are the same on every run, in every build and
under any load: a job is run once, and a seed replays its slice exactly.

--corpus FILE runs a regression corpus instead (tests/regress/corpus.txt):
one job a line, `OUTCOME  JOB` with JOB as this script prints it
("nccl-2.25 4x8 ch4 SIMPLE allreduce:2M iters 3 seed 7 --slow-host 20:32
..."), and fails on any job whose outcome is not OUTCOME.

A job the proxy records cannot decide passes only where the emulator's
truth marks it so (docs/analyze.md, "The randomized fault matrix"): a
culprit "seen": false (no network op shows it first-hand), one with a
"limit" named by its rank only (a rank whose dumps name no rank), one
whose dead neighbour the truth names instead ("namedInstead"), a hang shown
only by missing dumps ("hangShows"), or one no dump can show ("hangSeen"
false). Everything else that is not named is a miss. Counted apart:
  truth      the emulator's truth is wrong — its verdict says hang though no
             network op is stuck, or a culprit it names stops nothing (the
             stuck ops are the same without its fault) and it does not mark
             it: a failure, to be fixed in the emulator

"""
import argparse
import concurrent.futures
import json
import os
import random
import re
import shutil
import shlex
import subprocess
import sys
import tempfile
import time

HOSTS = ["rccl", "nccl-2.23", "nccl-2.24", "nccl-2.25", "nccl-2.26", "nccl-2.27", "nccl-2.27.3",
         "nccl-2.28", "nccl-2.29", "nccl-2.30", "nccl-2.31", "nccl-2.32", "rccl-2.31"]
# Topologies, small ones more often (they are quick); 32 x 8 is the largest.
SMALL = [(2, 1), (2, 2), (2, 3), (2, 4), (3, 1), (3, 2), (3, 5), (4, 1), (4, 2), (5, 3), (2, 5), (7, 1),
         (3, 3), (4, 3), (6, 2), (2, 7)]
LARGE = [(16, 2), (2, 16), (32, 1), (8, 8), (5, 7), (9, 3), (32, 8), (13, 5), (4, 8), (11, 2)]
SIZES = ["256K", "1M", "2M", "4M"]
KINDS = ["none", "stall", "stall", "stall", "no-recv", "kill", "slow-link", "slow-gpu", "slow-host", "pxn", "pxn+stall",
         "leak+stall", "stall+stall", "kill+stall", "stall+no-recv", "skip", "mismatch"]
MISMATCHES = ["allgather", "reducescatter", "broadcast", "half"]
# Two and three slow faults at once (slow links, GPUs, proxy threads on
# distinct ranks, each 16x or 32x): drawn only when --kinds names them
# (fault-matrix.sh's multi-slow slice), so that the default draws stay.
MULTI_SLOW = ("slow+slow", "slow+slow+slow")
TIMING = ("slow-link", "slow-gpu", "slow-host") + MULTI_SLOW
HOLD = 0.4   # seconds a hung job is held (--hold)
# The step metrics' export interval (emulated ms). Metrics are on only in
# timing jobs, which complete: the analysis reads the final export, the
# same whatever the interval, and each export rewrites the whole file (some
# 100 KB a rank), so a short one only costs time — at 20 ms a 32x slow
# 15-rank job spent 7.2 s of its 7.9 s exporting.
METRICS_MS = int(os.environ.get("FAULT_MATRIX_METRICS_MS", "1000"))
SUMMARIES = False  # --summaries: each job analyzed from per-node summaries too



def emulated(prog):
    """The command that runs prog: under $PROXYTRACE_EMULATOR (qemu-aarch64
    for a cross-built build) where make test names one."""
    return shlex.split(os.environ.get("PROXYTRACE_EMULATOR", "")) + [prog]

def stage_calls(P, M, s):
    """Stage s's p2p calls of a 1F1B step (tools/sim/pipeline.c): (with the
    next stage, sends, receives) each."""
    W = min(P - s - 1, M)
    R = M - W
    calls = []
    prev = lambda f, b: calls.append((False, b, f))  # with s-1: sends backward, receives forward
    nxt = lambda f, b: calls.append((True, f, b))    # with s+1: sends forward, receives backward
    for _ in range(W):
        if s > 0:
            prev(True, False)
        if s < P - 1:
            nxt(True, False)
    if R > 0 and s > 0:
        prev(True, False)
    for i in range(R):
        if s < P - 1:
            nxt(True, True)
        if s > 0:
            prev(i < R - 1, True)
    for _ in range(W):
        if s < P - 1:
            nxt(False, True)
        if s > 0:
            prev(False, True)
    return calls


def fitting_calls(P, M, s, fault):
    """How many of stage s's calls a fault of this kind can strike (a stall
    one with a send, a no-recv one with a receive)."""
    calls = stage_calls(P, M, s)
    if fault == "stall":
        return sum(1 for _, snd, _ in calls if snd)
    if fault == "no-recv":
        return sum(1 for _, _, rcv in calls if rcv)
    return len(calls)


def draw_job(rng, timing=True, hosts=HOSTS, kinds=None, alltoall=None, ring=None, pipeline=None):
    host = rng.choice(hosts)
    nodes, rpn = rng.choice(LARGE) if rng.random() < 0.12 else rng.choice(SMALL)
    nranks = nodes * rpn
    kinds = kinds or KINDS
    kind = rng.choice(kinds)
    # timing faults on up to 32 ranks: a slow rank stretches the job tens of
    # emulated seconds, each dumped every 20 ms (periodic dumps), and at 64
    # ranks one job took minutes
    while kind in TIMING and (not timing or nranks > 32) and any(k not in TIMING for k in kinds):
        kind = rng.choice(kinds)
    if kind in TIMING and nranks > 32:  # only timing kinds to draw from (--kinds)
        nodes, rpn = rng.choice(SMALL)
        nranks = nodes * rpn
    if kind.startswith("pxn") and rpn < 2:
        kind = "stall"
    channels = rng.randint(1, 8) if nranks <= 64 else rng.randint(1, 2)
    proto = rng.choice(["SIMPLE", "LL", "LL128"])
    ops = rng.choice([["allreduce"], ["sendrecv"], ["allreduce", "sendrecv"], ["sendrecv", "allreduce"],
                      ["allreduce", "sendrecv", "allreduce"]])
    calls = ",".join("%s:%s" % (k, rng.choice(SIZES)) for k in ops)
    iters = rng.randint(1, 3)
    if kind in TIMING:
        iters = 3 + rng.randint(0, 2)
    job = {"host": host, "nodes": nodes, "rpn": rpn, "channels": channels, "proto": proto, "ops": calls,
           "iters": iters, "seed": rng.randint(1, 10 ** 6), "kind": kind, "call": rng.randrange(len(ops)),
           "iter": rng.choice([0, iters - 1]), "faults": []}
    rank = lambda: rng.randrange(nranks)  # noqa: E731
    chan = lambda: rng.choice(["all"] + [str(c) for c in range(channels)])  # noqa: E731
    # "S" stands for a transfer drawn once the ops' transfer count is known
    # (first, last or any); "S0" for one from the first half.
    if kind in ("stall", "leak+stall"):
        job["faults"].append(["stall", "%d:%s:S" % (rank(), chan())])
    elif kind == "no-recv":
        job["faults"].append(["no-recv", "%d:%s:S" % (rank(), chan())])
    elif kind == "kill":
        job["faults"].append(["kill", "%d:S" % rank()])
    elif kind == "slow-link":
        # 16 and 32: the emulator's NVIDIA profiles stretch an op less than
        # its factor (a factor of 8 may leave the op under --slow-factor 3)
        job["faults"].append(["slow-link", "%d:%d" % (rank(), rng.choice([16, 32]))])
    elif kind in ("slow-gpu", "slow-host"):
        job["faults"].append([kind, "%d:%d" % (rank(), rng.choice([16, 32]))])
    elif kind in MULTI_SLOW:
        for r in rng.sample(range(nranks), min(nranks, kind.count("slow"))):
            job["faults"].append([rng.choice(TIMING[:3]), "%d:%d" % (r, rng.choice([16, 32]))])
    elif kind.startswith("pxn"):
        node = rng.randrange(nodes)
        r, h = rng.sample(range(node * rpn, node * rpn + rpn), 2)
        job["faults"].append(["pxn", "%d:%d" % (r, h)])
        if kind == "pxn+stall":
            job["faults"].append(["stall", "%d:%s:S" % (r, chan())])
    elif kind == "stall+stall":
        a, b = rng.sample(range(nranks), 2) if nranks > 1 else (0, 0)
        job["faults"] += [["stall", "%d:%s:S" % (a, chan())], ["stall", "%d:%s:S" % (b, chan())]]
    elif kind == "kill+stall":
        a, b = rng.sample(range(nranks), 2)
        job["faults"] += [["kill", "%d:S" % a], ["stall", "%d:%s:S" % (b, chan())]]
    elif kind == "stall+no-recv":
        a, b = rng.sample(range(nranks), 2)
        job["faults"] += [["stall", "%d:%s:S" % (a, chan())], ["no-recv", "%d:%s:S" % (b, chan())]]
    elif kind == "skip":
        job["faults"].append(["skip", "%d" % rank()])
    elif kind == "mismatch":
        # another collective in place of an all-reduce (a send/recv-only
        # workload skips the call instead)
        ars = [i for i, k in enumerate(ops) if k == "allreduce"]
        if ars:
            job["call"] = rng.choice(ars)
            job["faults"].append(["mismatch", "%d:%s" % (rank(), rng.choice(MISMATCHES))])
        else:
            job["faults"].append(["skip", "%d" % rank()])
    if kind == "leak+stall":
        job["faults"].append(["leak-ops", "2"])
    # every job's polls last (emulated time), so that op times are the
    # emulator's draws: timing faults and healthy jobs (where a false slow
    # link would show; a PXN job without a stall is healthy too) 500 us,
    # others 200
    job["pace"] = 500 if kind in TIMING + ("none", "pxn") else 200
    job["watchdog"] = kind not in TIMING and kind != "none" and rng.random() < 0.2
    job["metrics"] = kind in TIMING and rng.random() < 0.5
    job["steps"] = [rng.choice(["first", "last", "any", "any"]) for _ in job["faults"]]
    job["u"] = rng.random()
    # PXN jobs: half of them one process per node (JAX), where the helper's
    # proxy thread records the sends into the sender's trace. Drawn from the
    # job's seed, so the draws above stay those of earlier slices.
    job["rpp"] = rpn if kind.startswith("pxn") and random.Random(job["seed"]).random() < 0.5 else 1
    # An expert-parallel all-to-all in place of the send/recv in a fifth
    # of the jobs of up to 16 ranks (each peer gets the size drawn), also
    # from the job's seed; alltoall=True: in every such job. Not beside a
    # slow fault: an all-to-all's ops of one step each time the proxy
    # thread's round over every peer more than one link, and op durations
    # missed 3 slow links of 75 (seed 2, --alltoall).
    # A reduce-scatter or an all-gather (FSDP's and ZeRO's collectives) in
    # place of each all-reduce in a fifth of the jobs but a mismatch's (a
    # mismatch replaces an all-reduce) and a slow fault's (a 32x slow proxy
    # thread on a 12-rank all-gather read as healthy, seed 777001: their
    # timing is not judged yet), also from the job's seed; ring=True: in
    # every such job.
    rrng = random.Random(job["seed"] * 7127 + 11)
    if kind != "mismatch" and kind not in TIMING and (ring if ring is not None else rrng.random() < 0.2):
        job["ops"] = ",".join(
            rrng.choice(["reducescatter", "allgather"]) + c[len("allreduce"):] if c.startswith("allreduce:") else c
            for c in job["ops"].split(","))
    arng = random.Random(job["seed"] * 104729 + 3)
    if nranks <= 16 and kind not in TIMING and (alltoall if alltoall is not None else arng.random() < 0.2):
        job["ops"] = ",".join(
            "alltoall:%dK" % (int(sz[:-1]) * (1024 if sz[-1] == "M" else 1) * nranks) if k == "sendrecv" else k + ":" + sz
            for k, sz in (c.split(":") for c in job["ops"].split(",")))
    # A pipeline group's 1F1B step (one stage a node, 2-8 stages, 1-8
    # microbatches) in place of the whole job in a sixth of the jobs with a
    # hang fault on one rank (or none), also from the job's seed;
    # pipeline=True: in every such job. The fault strikes the stage's
    # drawn call of the step that fits it (--fault-p2p-call).
    prng = random.Random(job["seed"] * 6151 + 29)
    if kind in ("stall", "no-recv", "kill", "skip", "none") and (
            pipeline if pipeline is not None else prng.random() < 0.17):
        stages = prng.randint(2, 8)
        job.update(nodes=stages, rpn=1, ops="pipeline:%s" % prng.choice(["1M", "4M", "8M"]), call=0,
                   mb=prng.randint(1, 8), channels=prng.randint(1, 4))
        job["p2p_call"] = 0
        for f in job["faults"]:
            parts = f[1].split(":")
            parts[0] = str(prng.randrange(stages))
            if len(parts) == 3 and parts[1] != "all":
                parts[1] = str(prng.randrange(job["channels"]))
            f[1] = ":".join(parts)
            job["p2p_call"] = prng.randrange(max(1, fitting_calls(stages, job["mb"], int(parts[0]), f[0])))
    # Noise a healthy cluster shows, beside every fault (docs/sim.md,
    # "Noise"), drawn from the job's seed too: heavy-tailed steps, a proxy
    # thread descheduled for milliseconds, a busy node a little slow, timers
    # (dumps) late. The analysis must name no false culprit under any.
    nrng = random.Random(job["seed"] * 7919 + 17)
    job["noise"] = []
    if nrng.random() < 0.3:
        job["noise"].append(["noise", None])
    if nrng.random() < 0.3:
        job["noise"].append(["noise-deschedule", "%g:%g" % (nrng.choice([1, 4]), nrng.choice([1, 5]))])
    if nrng.random() < 0.2:
        job["noise"].append(["noise-busy-node", "%d:%g" % (nrng.randrange(nodes), nrng.choice([1.05, 1.1]))])
    if nrng.random() < 0.3:
        job["noise"].append(["noise-late-dumps", "%g" % nrng.choice([5, 50])])
    return job


def sim_args(job, plugin):
    a = ["sim", "--host", job["host"], "--plugin", plugin, "--nodes", str(job["nodes"]), "--ranks-per-node",
         str(job["rpn"]), "--channels", str(job["channels"]), "--proto", job["proto"], "--ops", job["ops"],
         "--iters", str(job["iters"]), "--seed", str(job["seed"]), "--fault-call", str(job["call"]),
         "--fault-iter", str(job["iter"])]
    for name, val in job["faults"]:
        a += ["--" + name, val]
    if job["pace"]:
        a += ["--poll-us", str(job["pace"])]
    for name, val in job.get("noise", []):
        a += ["--" + name] + ([val] if val is not None else [])
    if job.get("rpp", 1) > 1:
        a += ["--ranks-per-process", str(job["rpp"])]
    if job.get("mb"):
        a += ["--microbatches", str(job["mb"]), "--fault-p2p-call", str(job.get("p2p_call", 0))]
    return a


STEP_RANGE = re.compile(r"give a step in 0\.\.(\d+)")


def place_steps(job, pt, plugin, env):
    """Replaces each S by a transfer the op has: asks the emulator for the
    range (a step beyond it is refused with the range)."""
    for i, (name, val) in enumerate(job["faults"]):
        if not val.endswith(":S"):
            continue
        probe = dict(job, faults=[[name, val[:-1] + "999999"]])
        r = subprocess.run(pt + sim_args(probe, plugin) + ["--quiet"], env=env, capture_output=True, text=True,
                           timeout=60)
        m = STEP_RANGE.search(r.stderr)
        last = int(m.group(1)) if m else 0
        how = job["steps"][i]
        step = 0 if how == "first" else last if how == "last" else int(job["u"] * (last + 1)) % (last + 1)
        job["faults"][i][1] = val[:-1] + str(step)


def describe(job):
    return "%s %dx%d ch%d %s %s iters %d seed %d%s" % (
        job["host"], job["nodes"], job["rpn"], job["channels"], job["proto"], job["ops"], job["iters"],
        job["seed"], "".join(" --%s %s" % (n, v) for n, v in job["faults"]) +
        (" --fault-call %d --fault-iter %d" % (job["call"], job["iter"]) if job["faults"] else "") +
        (" --poll-us %d" % job["pace"] if job["pace"] else "") +
        "".join(" --%s" % n + (" %s" % v if v is not None else "") for n, v in job.get("noise", [])) +
        (" --ranks-per-process %d" % job["rpp"] if job.get("rpp", 1) > 1 else "") +
        (" --microbatches %d --fault-p2p-call %d" % (job["mb"], job.get("p2p_call", 0)) if job.get("mb") else "") +
        (" (watchdog)" if job["watchdog"] else "") + (" (metrics)" if job["metrics"] else ""))


EMULATED_S = re.compile(r"callbacks: \d+ in ([0-9.]+) emulated s")


def dump_interval(job, pt, plugin, env, d):
    """The periodic dumps' interval (emulated ms) of a timing or healthy
    job: 20, or a hundredth of the job's emulated length where that is
    longer, so that no rank dumps more than some 100 times. A slow rank
    stretches a job to tens of emulated seconds, and at 20 ms a 32-rank
    job wrote 80 000 dumps (18 s of its 18.4); the analysis reads each
    rank's latest two. The length comes from a run of the job without
    periodic dumps (a fraction of a second)."""
    pre = subprocess.run(pt + sim_args(job, plugin) + ["--dump-dir", d + "/pre", "--env",
                                                       "PROXYTRACE_DUMP_DIR=" + d + "/pre/files"],
                         env=env, capture_output=True, text=True, timeout=300)
    shutil.rmtree(d + "/pre", ignore_errors=True)
    m = EMULATED_S.search(pre.stdout + pre.stderr)
    return max(20, int(float(m.group(1)) * 10)) if m else 20


def run_job(job, pt, plugin, base_env, top):
    """One job, run once: on emulated time its files are the same on every
    run."""
    place_steps(job, pt, plugin, dict(base_env))
    return attempt(job, pt, plugin, base_env, top)


def attempt(job, pt, plugin, base_env, top):
    d = tempfile.mkdtemp(dir=top)
    env = dict(base_env)
    try:
        args = pt + sim_args(job, plugin) + ["--dump-dir", d + "/logs", "--env", "PROXYTRACE_DUMP_DIR=" + d + "/files",
                                              "--truth-json", d + "/truth.json", "--quiet", "--hang-polls", "20"]
        nvidia = not job["host"].startswith("rccl")
        timed = job["kind"] in TIMING + ("none",)
        if nvidia or job["watchdog"]:
            # NVIDIA hosts have no dump hook, and their finalize dumps only
            # the ranks with ops still active: periodic dumps give every
            # rank's records, and a hung job is held so that each rank's
            # latest dump comes while it hangs (the stall watchdog's too)
            args += ["--env", "PROXYTRACE_DUMP_INTERVAL_MS=%d" % (dump_interval(job, pt, plugin, env, d) if timed
                                                                  else 50)]
            if not timed:
                args += ["--env", "PROXYTRACE_STALL_MS=100", "--hold", str(HOLD)]
        if job["metrics"]:
            args += ["--env", "PROXYTRACE_METRICS_INTERVAL_MS=%d" % METRICS_MS]
        t0 = time.time()
        sim = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        if sim.returncode not in (0, 3):
            return job, "error", "sim exit %d: %s" % (sim.returncode, sim.stderr.strip()[-400:]), time.time() - t0
        truth = json.load(open(d + "/truth.json"))
        if truth["verdict"] == "hang" and truth.get("hangSeen") is False:
            # the emulator marks a hang that no dump can show (no network op
            # stops: a stall on the last transfers of a rank without one)
            return job, "limit", "the truth marks a hang no dump can show: " + truth.get("limit", ""), time.time() - t0
        if sim.returncode == 0 and truth["verdict"] == "hang":
            # the emulator's truth is wrong here: its job completed (a stall
            # on the last transfers of a rank with no network op stops no
            # network op)
            return job, "truth", "the truth says hang, the job completed", time.time() - t0
        files = d + "/files"
        for r in truth.get("deadRanks", []):  # a dead process writes nothing more
            for f in os.listdir(files) if os.path.isdir(files) else []:
                if "-r%d-" % r in f:
                    os.unlink(os.path.join(files, f))
        if not os.path.isdir(files) or not os.listdir(files):
            out = "nodump"
            why = "no dump files"
            if truth["verdict"] == "slow":
                out, why = "missed", "a slow job left no dump (its periodic dumps and metrics files should show it)"
            if truth["verdict"] == "hang":
                out = "missed"
                why = "a hung job left no dump"
                if truth.get("hangShows") == "missing":
                    # the truth marks it: every stuck op is on a rank that
                    # died, whose files are gone; the others finished before
                    # any dump
                    out, why = "limit", "the truth marks a hang shown only by missing dumps: " + truth.get("limit", "")
                elif not stuck_lines(job, pt, plugin, env, job["faults"]):
                    out, why = "truth", "the truth says hang, and no network op is stuck in it"
            return job, out, why, time.time() - t0
        an = subprocess.run(pt + ["analyze", "--json", "--expect", d + "/truth.json", files], env=env,
                            capture_output=True, text=True, timeout=300)
        if SUMMARIES:
            differs = summary_route(job, pt, env, d, files)
            if differs:
                return job, "summary", differs, time.time() - t0
        out, why = classify(truth, an)
        try:
            said = json.loads(an.stdout).get("verdict")
        except ValueError:
            said = None
        if truth["verdict"] == "hang" and ((out == "false" and why == "a hang called ok") or
                                           (out in ("missed", "incomplete") and said != "hang")):
            if not stuck_lines(job, pt, plugin, env, job["faults"]) and not truth.get("deadRanks"):
                out, why = "truth", "the truth says hang, and no network op is stuck in it"
        if out == "missed" and "no culprit names" in why and truth["verdict"] == "hang":
            unseen = unshown(job, truth, an, pt, plugin, env)
            if unseen:
                # the emulator's truth names a fault that no stuck op of its
                # own shows and does not mark it ("seen": false): the truth
                # is wrong there, a failure to fix in the emulator
                out, why = "truth", "the truth names a fault that " + unseen
        return job, out, why, time.time() - t0
    finally:
        shutil.rmtree(d, ignore_errors=True)


RANK_OF = re.compile(r"-r(-?\d+)-")
SAME = ("inputs", "stats", "skipped")  # what differs by design: the files read


def summary_route(job, pt, env, d, files):
    """The job's files as its nodes would hold them (one folder per node,
    by the rank in each file's name), a summary of each node's folder
    (`analyze --summary`), and the analysis of the summaries against the
    analysis of the folders: the same document but for the inputs read,
    the same exit status, the same comparison with the truth. Returns
    what differs, or None."""
    nodes, sums = d + "/nodes", d + "/summaries"
    os.mkdir(nodes)
    os.mkdir(sums)
    for f in os.listdir(files):
        m = RANK_OF.search(f)
        node = "node%d" % (int(m.group(1)) // job["rpn"]) if m and int(m.group(1)) >= 0 else "node-unknown"
        os.makedirs(os.path.join(nodes, node), exist_ok=True)
        os.symlink(os.path.join(files, f), os.path.join(nodes, node, f))
    for node in sorted(os.listdir(nodes)):
        s = subprocess.run(pt + ["analyze", "--summary", os.path.join(sums, node + ".jsonl"), os.path.join(nodes, node)],
                           env=env, capture_output=True, text=True, timeout=300)
        if s.returncode != 0:
            return "analyze --summary of %s: exit %d: %s" % (node, s.returncode, s.stderr.strip()[-300:])
    ask = ["--json", "--expect", d + "/truth.json"]
    whole = subprocess.run(pt + ["analyze"] + ask + [nodes], env=env, capture_output=True, text=True, timeout=300)
    via = subprocess.run(pt + ["analyze"] + ask + [sums], env=env, capture_output=True, text=True, timeout=300)
    if whole.returncode != via.returncode:
        return "the summaries' exit status %d, the dumps' %d" % (via.returncode, whole.returncode)
    if whole.stderr != via.stderr:
        return "the summaries' comparison with the truth differs: %s / %s" % (via.stderr.strip()[-200:],
                                                                              whole.stderr.strip()[-200:])
    a, b = json.loads(whole.stdout), json.loads(via.stdout)
    for k in sorted(set(a) | set(b)):
        if k not in SAME and a.get(k) != b.get(k):
            return "the summaries' %s differs: %.200s / %.200s" % (k, json.dumps(b.get(k)), json.dumps(a.get(k)))
    return None


STUCK = re.compile(r"truth: stuck .*")


def stuck_lines(job, pt, plugin, env, faults):
    """The emulator's stuck ops (its --truth lines) for the job with these
    faults."""
    t = subprocess.run(pt + sim_args(dict(job, faults=faults), plugin) + ["--truth", "--quiet"], env=env,
                       capture_output=True, text=True, timeout=120)
    return sorted(m[0] for m in STUCK.finditer(t.stdout + t.stderr))


def unshown(job, truth, an, pt, plugin, env):
    """The truth's culprits the analysis misses, when each of them stops
    nothing: the emulator's stuck ops are the same without its fault (the
    truth names every fault that hits an op or a rank of the hung call, also
    one another fault kept from striking). "" when a missed one does change
    what is stuck (then the analysis missed it)."""
    try:
        doc = json.loads(an.stdout)
    except ValueError:
        return ""
    missed = []
    for c in truth["culprits"]:
        r, ch = c["rank"], c["channel"]
        found = False
        for q in doc.get("culprits", []):
            ranks = {q.get("rank")} | set(q.get("candidates") or [])
            same_ch = ch < 0 or q.get("channel") in (ch, None)
            exact = q.get("rank") == r and q.get("cause") == c["cause"]
            if same_ch and (exact or not c["exact"] and r in ranks):
                found = True
        if not found:
            missed.append(c)
    if not missed:
        return ""
    full = stuck_lines(job, pt, plugin, env, job["faults"])
    # the faults as sim_args gives them: the truth's "fault" indexes the
    # stall/no-recv/kill/... options in order, leak-ops and pxn included
    for c in missed:
        rest = [f for i, f in enumerate(job["faults"]) if i != c["fault"]]
        if stuck_lines(job, pt, plugin, env, rest) != full:
            return ""
    return ", ".join("rank %d (channel %d, %s) stops nothing" % (c["rank"], c["channel"], c["cause"]) for c in missed)


def classify(truth, an):
    """The outcome and why, from the analysis' own comparison (--expect)
    and, as a second opinion, from the culprits of its JSON document against
    the truth's: a culprit on no rank of the truth (nor with one among its
    candidates) is false whatever the comparison says."""
    lines = an.stderr.strip().splitlines()
    why = lines[-1] if lines else ""
    why = re.sub(r"^proxytrace analyze: ground truth \([^)]*\): ", "", why)
    try:
        doc = json.loads(an.stdout)
    except ValueError:
        doc = None
    expected = {c["rank"] for c in truth["culprits"]}
    if doc is not None:
        for c in doc.get("culprits", []):
            ranks = {c.get("rank")} | set(c.get("candidates") or [])
            if c.get("consequenceOf") is None and not ranks & expected:
                return "false", "culprit not in the truth: " + c.get("summary", "")[:200]
        if truth["verdict"] == "hang" and doc.get("verdict") == "ok" and not (
                truth.get("hangShows") == "missing" and "documented limit" in why):
            return "false", "a hang called ok"
    if an.returncode == 4:
        return "incomplete", why
    if "agrees with the ground truth at node level" in why:
        return "node", why
    if "agrees with the ground truth" in why:
        return "exact", why
    if "documented limit" in why or "millisecond times only" in why:
        return "limit", why
    if "is not in the ground truth" in why:
        return "false", why
    if "the verdict is" in why and doc and doc.get("verdict") not in ("ok", None) and truth["verdict"] == "ok":
        gaps = ["%s r%s %s" % (g.get("kind"), g.get("rank"), g.get("source"))
                + (" %s/%s records" % (g.get("read"), g.get("announced")) if g.get("announced") is not None else "")
                + (" %s ms behind" % g.get("behindMs") if g.get("behindMs") is not None else "")
                for g in doc.get("gaps", [])[:4]]
        return "false", why + ("; gaps: " + ", ".join(gaps) if gaps else "")
    return "missed", why


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--max-ranks", type=int, default=256)
    ap.add_argument("--corpus", default=None, help="run the jobs of this regression corpus, each against its outcome")
    ap.add_argument("--host", action="append", choices=HOSTS, help="draw only from these host profiles")
    ap.add_argument("--kinds", default=None,
                    help="draw the faults from these kinds only (comma-separated, e.g. skip,mismatch or pxn,pxn+stall)")
    ap.add_argument("--summaries", action="store_true",
                    help="also analyze each job from per-node summaries (analyze --summary) and fail where the "
                         "analysis differs from that of the dumps")
    ap.add_argument("--ring", action="store_true",
                    help="a reduce-scatter or an all-gather in place of every all-reduce (else in a fifth of the jobs)")
    ap.add_argument("--alltoall", action="store_true",
                    help="an all-to-all in place of every send/recv of a job of up to 16 ranks (else in a fifth)")
    ap.add_argument("--pipeline", action="store_true",
                    help="a pipeline group's 1F1B step in place of every job with one hang fault (else a sixth)")
    ap.add_argument("-v", "--verbose", action="store_true")
    o = ap.parse_args()
    kinds = o.kinds.split(",") if o.kinds else None
    if kinds and any(k not in KINDS + list(MULTI_SLOW) for k in kinds):
        ap.error("--kinds: each one of " + ", ".join(sorted(set(KINDS + list(MULTI_SLOW)))))
    global SUMMARIES
    SUMMARIES = o.summaries
    if o.corpus:
        return run_corpus(o)
    seed = o.seed if o.seed is not None else random.SystemRandom().randrange(1, 2 ** 31)
    print("fault matrix: seed %d, %d jobs (repeat with --seed %d --jobs %d)" % (seed, o.jobs, seed, o.jobs))
    sys.stdout.flush()
    build = os.path.abspath(o.build)
    pt = emulated(os.path.join(build, "proxytrace"))
    so = os.path.join(build, "librccl-profiler-proxytrace.so")
    top = tempfile.mkdtemp(prefix="pt-matrix-")
    # NCCL 2.27.3 loads a plugin by short name only: a link with the name it
    # looks for, on LD_LIBRARY_PATH
    os.symlink(so, os.path.join(top, "libnccl-profiler-proxytrace.so"))
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = top + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    rng = random.Random(seed)
    jobs = []
    while len(jobs) < o.jobs:
        j = draw_job(rng, True, o.host or HOSTS, kinds, True if o.alltoall else None, True if o.ring else None,
                     True if o.pipeline else None)
        if j["nodes"] * j["rpn"] <= o.max_ranks:
            jobs.append(j)
    tally = {}
    bad = []
    t0 = time.time()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=o.parallel) as ex:
            futs = [ex.submit(run_job, j, pt, "proxytrace" if j["host"] == "nccl-2.27.3" else so, env, top)
                    for j in jobs]
            for f in futs:
                job, out, why, secs = f.result()
                tally[out] = tally.get(out, 0) + 1
                if out in ("missed", "false", "error", "summary", "truth"):
                    bad.append((job, out, why))
                if o.verbose or out not in ("exact", "node"):  # every job counted apart, with its reason
                    print("%-10s %5.2fs %s: %s" % (out, secs, describe(job), why))
                    sys.stdout.flush()
    finally:
        shutil.rmtree(top, ignore_errors=True)
    order = ["exact", "node", "limit", "incomplete", "nodump", "truth", "missed", "false", "error"]
    if SUMMARIES:
        order.append("summary")
    secs = time.time() - t0
    print("fault matrix: seed %d, %d jobs in %.0f s (%.1f jobs/s): %s" % (
        seed, len(jobs), secs, len(jobs) / max(secs, 1e-9), ", ".join("%d %s" % (tally.get(k, 0), k) for k in order)))
    return 1 if bad else 0


JOB_LINE = re.compile(r"^(\S+) (\d+)x(\d+) ch(\d+) (\S+) (\S+) iters (\d+) seed (\d+)(.*)$")


def parse_job(text):
    """A job as describe() prints it, back into a job: faults and their
    steps as given, --fault-call/--fault-iter, --poll-us, --ranks-per-
    process, and the (watchdog) and (metrics) marks."""
    m = JOB_LINE.match(text.strip())
    if not m:
        raise ValueError("not a job line: " + text)
    host, nodes, rpn, ch, proto, ops, iters, seed, rest = m.groups()
    job = {"host": host, "nodes": int(nodes), "rpn": int(rpn), "channels": int(ch), "proto": proto, "ops": ops,
           "iters": int(iters), "seed": int(seed), "faults": [], "call": 0, "iter": 0, "pace": 0, "rpp": 1,
           "watchdog": "(watchdog)" in rest, "metrics": "(metrics)" in rest, "kind": "none"}
    words = rest.replace("(watchdog)", "").replace("(metrics)", "").split()
    job["noise"] = []
    i = 0
    while i < len(words):
        name = words[i][2:]
        if name == "noise":  # the one option without a value
            job["noise"].append(["noise", None])
            i += 1
            continue
        val = words[i + 1]
        i += 2
        if name == "fault-call":
            job["call"] = int(val)
        elif name == "fault-iter":
            job["iter"] = int(val)
        elif name == "poll-us":
            job["pace"] = int(val)
        elif name == "ranks-per-process":
            job["rpp"] = int(val)
        elif name == "microbatches":
            job["mb"] = int(val)
        elif name == "fault-p2p-call":
            job["p2p_call"] = int(val)
        elif name.startswith("noise"):
            job.setdefault("noise", []).append([name, val])
        else:
            job["faults"].append([name, val])
    kinds = [n for n, _ in job["faults"]]
    timing = [k for k in kinds if k in TIMING]
    if timing and len(timing) == len(kinds) and len(kinds) in (2, 3):
        job["kind"] = MULTI_SLOW[len(kinds) - 2]
    else:
        job["kind"] = timing[0] if timing and len(kinds) == 1 else "+".join(kinds) if kinds else "none"
    return job


def run_corpus(o):
    """Every job of the corpus, each against the outcome its line gives."""
    build = os.path.abspath(o.build)
    pt = emulated(os.path.join(build, "proxytrace"))
    so = os.path.join(build, "librccl-profiler-proxytrace.so")
    lines = []
    for n, raw in enumerate(open(o.corpus), 1):
        text = raw.split("#", 1)[0].strip()
        if text:
            want, job = text.split(None, 1)
            lines.append((n, want, parse_job(job)))
    top = tempfile.mkdtemp(prefix="pt-corpus-")
    os.symlink(so, os.path.join(top, "libnccl-profiler-proxytrace.so"))
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = top + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    bad = 0
    t0 = time.time()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=o.parallel) as ex:
            futs = [(n, want, ex.submit(attempt, job, pt, "proxytrace" if job["host"] == "nccl-2.27.3" else so,
                                        env, top)) for n, want, job in lines]
            for n, want, f in futs:
                job, out, why, secs = f.result()
                ok = out == want
                bad += not ok
                if o.verbose or not ok:
                    print("%s line %d: %s, want %s (%.2fs) %s: %s" % ("ok  " if ok else "FAIL", n, out, want, secs,
                                                                     describe(job), why))
                    sys.stdout.flush()
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("regression corpus %s: %d jobs in %.0f s, %d with another outcome than their line's" % (
        o.corpus, len(lines), time.time() - t0, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
