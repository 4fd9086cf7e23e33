#!/usr/bin/env python3
"""failslow.py — the fail-slow figures: mild slow links and GPUs named by
`proxytrace analyze --follow` on emulated jobs in real time, and false
alarms on healthy noisy jobs.

Each job runs `proxytrace sim` (paced: --pace 1000, a poll lasts 1 ms;
--noise: heavy-tailed healthy step times; metrics every second) while
`analyze --follow` watches its folder (--window 10, --interval 500). A
fault starts --start seconds into the job. Detection: the first `culprit`
line naming the fault's rank and side; its delay is the line's time from
the first read (+T, the plugin's first export, a second after the start)
minus the fault's start. A healthy job must print no culprit; its
`changed` lines (an edge slower than its own history: a fact, not a
culprit, and the machine's own load changes step times too) are counted
and printed.

    failslow.py BUILD [--quick] [--healthy N] [--healthy-seconds S] [--no-faults]
                [--faults K,K] [--factors F,F] [--repeat N] [--seconds S] [--parallel N]
                [--seed S]

--quick: the matrix `make test` keeps (one factor per kind, four healthy
jobs, 25-second jobs); the default is the closing matrix (factors 1.2, 1.5
and 2; a slow link, GPU and proxy thread; two hosts, two topologies, 100
healthy jobs of 30 s; --healthy-seconds makes them longer, --no-faults runs
them alone; --faults, --factors, --repeat N, N jobs of other seeds per
cell, and --seconds, the faulty jobs' length, size it). A fault counts as named when a culprit line names its rank
and kind (its GPU, its proxy thread, or its network). Exit 1 when a healthy
job names a culprit or, with --quick, a fault is missed.
"""
import argparse, os, re, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor

LINE = re.compile(r"^\S+ \+([0-9.]+)s (\w+)\s+rank (\d+)(.*)$")


def run_job(pt, plugin, job, seconds, start):
    d = tempfile.mkdtemp(prefix="pt-failslow-")
    rate = 17.0  # iterations per second of these jobs at --pace 1000 (measured)
    iters = max(20, int(seconds * rate))
    sim = [pt, "sim", "--plugin", plugin, "--quiet", "--host", job["host"], "--nodes", str(job["nodes"]),
           "--ranks-per-node", str(job["rpn"]), "--channels", "2", "--iters", str(iters), "--ops", job["ops"],
           "--pace", "1000", "--noise", "--seed", str(job["seed"]), "--env", "PROXYTRACE_METRICS_INTERVAL_MS=1000",
           "--env", "PROXYTRACE_METRICS_DIR=" + d, "--dump-dir", d + "/dumps"]
    if job["fault"]:
        sim += ["--" + job["fault"], "%d:%g:%g" % (job["rank"], job["factor"], start)]
    follow = subprocess.Popen([pt, "analyze", "--follow", d, "--window", "10", "--interval", "500", "--for",
                               str(seconds + 5)], stdout=subprocess.PIPE, text=True)
    t = time.time()
    s = subprocess.run(sim, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.time() - t
    out, _ = follow.communicate()
    subprocess.run(["rm", "-rf", d])
    if s.returncode != 0:
        return {"error": s.stderr[-300:]}
    culprits, edges, changed = [], 0, []
    for line in out.splitlines():
        m = LINE.match(line)
        edges += bool(m and m.group(2) == "slow")
        if m and m.group(2) == "changed":
            changed.append(line)
        if m and m.group(2) == "culprit":
            rest = m.group(4)
            side = "slow-gpu" if "its GPU" in rest else "slow-host" if "its proxy thread" in rest else "slow-link"
            culprits.append((float(m.group(1)), int(m.group(3)), side, line))
    return {"culprits": culprits, "edges": edges, "changed": changed, "out": out, "took": took}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--healthy", type=int, default=None)
    ap.add_argument("--healthy-seconds", type=int, default=30)
    ap.add_argument("--no-faults", action="store_true")
    ap.add_argument("--parallel", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--faults", default="slow-link,slow-gpu,slow-host",
                    help="fault kinds of the matrix, comma-separated")
    ap.add_argument("--factors", default=None, help="factors of the matrix, comma-separated (default 1.2,1.5,2)")
    ap.add_argument("--repeat", type=int, default=1, help="jobs per (host, topology, fault, factor), other seeds")
    ap.add_argument("--seconds", type=int, default=None, help="length of a faulty job (default 75; the fault "
                    "starts 10 s in, and a fault not named by the job's end counts as missed)")
    a = ap.parse_args()
    pt = os.path.abspath(os.path.join(a.build, "proxytrace"))
    plugin = os.path.abspath(os.path.join(a.build, "librccl-profiler-proxytrace.so"))
    if a.quick:
        factors, hosts, topos, seconds, start = [1.5], ["rccl"], [(3, 2)], 25, 8
        healthy = 4 if a.healthy is None else a.healthy
    else:
        factors, hosts, topos, seconds, start = [1.2, 1.5, 2.0], ["rccl", "nccl-2.28"], [(3, 2), (4, 2)], 75, 10
        healthy = 100 if a.healthy is None else a.healthy
    if a.factors:
        factors = [float(f) for f in a.factors.split(",")]
    if a.seconds:
        seconds = a.seconds
    jobs = []
    seed = a.seed
    for host in ([] if a.no_faults else hosts):
        for nodes, rpn in topos:
            for fault in a.faults.split(","):
                for f in factors:
                    for _ in range(a.repeat):
                        seed += 1
                        jobs.append({"host": host, "nodes": nodes, "rpn": rpn, "ops": "sendrecv:8M", "fault": fault,
                                     "rank": (seed * 7) % (nodes * rpn), "factor": f, "seed": seed})
    for i in range(healthy):
        host, (nodes, rpn) = hosts[i % len(hosts)], topos[i % len(topos)]
        jobs.append({"host": host, "nodes": nodes, "rpn": rpn, "ops": "sendrecv:8M", "fault": None, "rank": -1,
                     "factor": 1, "seed": 1000 + a.seed + i})
    healthy_s = min(seconds, a.healthy_seconds) if a.quick else a.healthy_seconds
    t0 = time.time()
    with ThreadPoolExecutor(a.parallel) as ex:
        results = list(ex.map(lambda j: run_job(pt, plugin, j, seconds if j["fault"] else healthy_s, start),
                              jobs))
    bad = 0
    rows = {}
    false_culprits = false_edges = false_changes = 0
    for j, r in zip(jobs, results):
        if "error" in r:
            print("ERROR", j, r["error"])
            bad = 1
            continue
        if not j["fault"]:
            false_culprits += len(r["culprits"])
            false_edges += r["edges"]
            false_changes += len(r["changed"])
            for c in r["changed"]:
                print("change said (healthy, %s %dx%d seed %d): %s" % (j["host"], j["nodes"], j["rpn"], j["seed"], c))
            for c in r["culprits"]:
                print("FALSE ALARM (healthy, %s %dx%d seed %d): %s" % (j["host"], j["nodes"], j["rpn"], j["seed"], c[3]))
            continue
        hit = [c for c in r["culprits"] if c[1] == j["rank"] and c[2] == j["fault"]]
        wrong = [c for c in r["culprits"] if not (c[1] == j["rank"] and c[2] == j["fault"])]
        delay = hit[0][0] + 1.0 - start if hit else None
        key = (j["fault"], j["factor"])
        rows.setdefault(key, []).append((delay, len(wrong)))
        print("%-9s %-9s %dx%d rank %d x%-4g (%.0f s job): %s%s" % (j["host"], j["fault"], j["nodes"], j["rpn"],
              j["rank"], j["factor"], r["took"], "named after %.1f s" % delay if hit else "NOT NAMED",
              ", %d other culprit(s)" % len(wrong) if wrong else ""))
        for c in wrong:
            print("    other: " + c[3])
    print("\nfail-slow figures (%d jobs, %.0f s):" % (len(jobs), time.time() - t0))
    print("%-10s %6s %8s %10s %12s %14s %9s %14s" % ("fault", "factor", "jobs", "named", "in 60 s", "median delay",
                                                    "slowest", "other culprit"))
    for (fault, f), v in sorted(rows.items()):
        named = [d for d, _ in v if d is not None]
        in60 = [d for d in named if d <= 60]
        med = sorted(named)[len(named) // 2] if named else float("nan")
        print("%-10s %6g %8d %9d%% %11d%% %13.1fs %8.1fs %14d" % (fault, f, len(v), 100 * len(named) // len(v),
              100 * len(in60) // len(v), med, max(named) if named else float("nan"), sum(1 for _, w in v if w)))
        if a.quick and len(named) < len(v):
            bad = 1
    print("healthy noisy jobs: %d, culprits named: %d, edges said slow: %d, edges said changed: %d" %
          (healthy, false_culprits, false_edges, false_changes))
    if false_culprits:
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
