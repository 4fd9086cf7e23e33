"""`proxytrace selftest` (and `python3 -m proxytrace selftest`): does the
plugin, with this machine's NCCL or RCCL, record what happens and does the
analyzer name what went wrong? It runs a tiny job of N processes whose data
goes through NCCL's network proxy, with the plugin loaded, and checks end to
end, one line per check, each failure with its fix:

  healthy      every process's last dump shows its network ops, each op's
               counters are consistent, nothing was dropped or refused, the
               step metrics add up to the bytes the all-reduces carried
               (where the backend knows them), and `analyze` says ok
  gpu-stall    one rank's GPU spins before a collective, longer than the
               stall time: its stall watchdog dumps while it hangs, and
               `analyze` names that rank, its GPU not producing data (or
               never taking the collective up), the channel, and no other
               culprit
  not-entered  one rank sleeps on the host instead of calling the
               collective: `analyze` names it `not_entered`
  cost         the same all-reduce loop with and without the plugin, side
               by side, several rounds: the plugin's share of the time

The jobs are run by a backend (proxytrace/_selftest_jobs.py): torch.distributed
with NCCL on this machine's GPU, or the emulator (`--emulate`). The checks
here — what each job is, and how its dumps are judged — are one code for
both; a backend only runs jobs. What the dumps say is read by the C parser
and analyzer (`proxytrace analyze --json` and `--records`, through
proxytrace.analyze() and read_dumps()); the step metrics files are JSON
lines (docs/metrics.md), read as JSON.

Exit status: 0 every check passed (a check may be skipped, with its reason),
1 a check failed, 2 a bad option, 3 the selftest cannot run here (no GPU, no
torch, no NCCL in torch, no plugin; `--emulate` runs without a GPU).
"""

import argparse
import json
import os
import shutil
import sys

from . import __version__
from . import _native
from . import _selftest_jobs as jobs
from ._analyze import analyze as _analyze_paths, read_dumps as _read_dumps
from ._errors import ProxytraceError

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CANNOT_RUN = 3

CHECKS = ("healthy", "gpu-stall", "not-entered", "cost")
MARKER = ".proxytrace-selftest"

# Refused events: the host sent what the plugin could not place. A healthy
# job has none. (opsReclaimed are slots taken back from finished ops,
# zeroStepOps ops NCCL registers with no step, foreignPid PXN's events of
# another process: each normal.)
LOST = ("opsDropped", "staleHandle", "badHandle", "untrackedUpdate", "badCounterKind",
        "badState", "wrongContext")


class Analyzer:
    """How the checks read dumps: proxytrace.analyze() and read_dumps()
    (the C analyzer). The tests give the checks another to see a verdict
    that disagrees fail."""

    def analyze(self, path):
        return _analyze_paths(path)

    def read_dumps(self, path, all_dumps=False):
        return _read_dumps(path, all_dumps=all_dumps)


class Check:
    """The outcome of one check: status "ok", "FAIL" or "skip", the line
    said, the fix of a failure, figures for the JSON, the job folder."""

    def __init__(self, name, folder=None):
        self.name = name
        self.folder = folder
        self.status = "ok"
        self.text = ""
        self.fix = None
        self.figures = {}
        self.notes = []

    def fail(self, text, fix):
        self.status = "FAIL"
        self.text = text
        self.fix = fix
        return self

    def ok(self, text):
        self.status = "ok"
        self.text = text
        return self

    def skip(self, text):
        self.status = "skip"
        self.text = text
        return self

    def line(self):
        s = "%-4s %-11s %s" % (self.status, self.name, self.text)
        return s + (" — fix: %s" % self.fix if self.fix else "")

    def to_dict(self):
        return {"name": self.name, "status": self.status, "line": self.text, "fix": self.fix,
                "folder": self.folder, "figures": self.figures, "notes": self.notes}


def _ranks(ranks):
    return ", ".join(str(r) for r in sorted(ranks))


def _plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


# ---- what each check judges -----------------------------------------------------

def _ran(check, result):
    """False (and the check failed) when the job itself did not run."""
    check.notes += result.notes
    if result.ran:
        return True
    check.fail("the job did not run: %s" % result.problem, result.fix)
    return False


def _consistent(r):
    """'' when the op's step counters are in order, else what is not.
    In network transfers where the dump says them (so raw steps and
    transfers compare alike), else in the dump's own counters."""
    c = r.transfers if r.transfers is not None else r.counters
    n = c.nSteps if r.transfers is not None else r.nSteps
    chain = (("done", "transmitted", "received", "posted") if r.dir == "recv"
             else ("done", "transmitted", "posted"))
    values = [c[k] for k in chain] + [n]
    if any(v < 0 for v in values) or values != sorted(values):
        return "not %s <= nSteps %d" % (" <= ".join("%s %d" % (k, c[k]) for k in chain), n)
    if r.state == "finished" and (r.status != "DONE" or c.done != n):
        return "finished with status %s, done %d of %d" % (r.status, c.done, n)
    return ""


def _metrics(folder):
    """{rank: {"final", "unmeasuredOps", "sendBytes", "sendSteps", "sendSizedSteps", "recvBytes"}}
    from the step metrics files (JSON lines, docs/metrics.md) under folder."""
    out = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not (name.startswith("proxytrace-metrics-") and name.endswith(".jsonl")):
            continue
        head, edges = None, []
        with open(os.path.join(folder, name), errors="replace") as f:
            for line in f:
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                if o.get("type") == "metrics":
                    head = o
                elif o.get("type") == "edge" and o.get("channel") is None:
                    edges.append(o)
        if head is None:
            continue
        m = out.setdefault(head["rank"], {"final": True, "unmeasuredOps": 0, "sendBytes": 0,
                                          "sendSteps": 0, "sendSizedSteps": 0, "recvBytes": 0})
        m["final"] = m["final"] and bool(head.get("final"))
        m["unmeasuredOps"] += head.get("unmeasuredOps") or 0
        for e in edges:
            if e["dir"] == "send":
                m["sendBytes"] += e.get("bytes") or 0
                m["sendSteps"] += e.get("steps") or 0
                m["sendSizedSteps"] += e.get("sizedSteps") or 0
            else:
                m["recvBytes"] += e.get("bytes") or 0
    return out


def judge_healthy(check, spec, result, analyzer):
    if not _ran(check, result):
        return check
    records = analyzer.read_dumps(result.dumps)
    by_rank = {}
    for r in records:
        by_rank.setdefault(r.rank, []).append(r)
    missing = [r for r in range(spec.ranks) if r not in by_rank]
    check.figures["opsPerRank"] = {str(r): len(v) for r, v in sorted(by_rank.items())}
    if missing:
        return check.fail("ranks %s left no dump with a network op in %s" % (_ranks(missing), result.dumps),
                          "the plugin did not load in those processes, or their data did not go through "
                          "the network proxy: run `proxytrace doctor` in this environment and read %s"
                          % ", ".join(result.logs))
    bad = [(r, _consistent(r)) for r in records]
    bad = [(r, why) for r, why in bad if why]
    if bad:
        r, why = bad[0]
        return check.fail("%s in the last dumps have counters out of order, e.g. rank %d %s: %s (%s)"
                          % (_plural(len(bad), "op"), r.rank, r, why, r.source),
                          "keep %s and report it with the NCCL release: the plugin recorded "
                          "steps the host did not make" % result.dumps)
    lost, unknown = {}, []
    for rank, recs in sorted(by_rank.items()):
        if any(r.dump.drops is None for r in recs):
            unknown.append(rank)
            continue
        for k in LOST:  # the rank's dumps of each communicator: the most any says
            n = max(r.dump.drops[k] for r in recs)
            if n:
                lost["rank %d %s" % (rank, k)] = n
    check.figures["lost"] = lost
    if unknown:
        return check.fail("the dumps of ranks %s do not say what the plugin dropped" % _ranks(unknown),
                          "the dump folder must hold the plugin's JSON dumps (PROXYTRACE_DUMP_DIR)")
    if lost:
        dropped = any(k.endswith("opsDropped") for k in lost)
        return check.fail("the plugin lost events: %s" % ", ".join("%s %d" % kv for kv in lost.items()),
                          "raise PROXYTRACE_MAX_OPS and PROXYTRACE_MAX_MEMORY_MB" if dropped else
                          "keep %s and report it with the NCCL release: the host sent events the "
                          "plugin could not place" % result.dumps)
    metrics_text = ""
    if spec.metrics:
        m = _metrics(result.dumps)
        check.figures["metrics"] = {str(k): v for k, v in sorted(m.items())}
        no = [r for r in range(spec.ranks) if r not in m]
        if no:
            return check.fail("ranks %s wrote no step metrics (PROXYTRACE_METRICS_INTERVAL_MS was set)"
                              % _ranks(no), "read the host log lines of the plugin in %s"
                              % ", ".join(result.logs))
        notfinal = [r for r, v in m.items() if not v["final"]]
        unmeasured = {r: v["unmeasuredOps"] for r, v in m.items() if v["unmeasuredOps"]}
        if notfinal:
            return check.fail("the step metrics of ranks %s are not their final ones" % _ranks(notfinal),
                              "the processes did not destroy their communicators; read %s"
                              % ", ".join(result.logs))
        if unmeasured:
            return check.fail("the step metrics left ops unmeasured: %s" % ", ".join(
                "rank %d %d" % kv for kv in sorted(unmeasured.items())),
                "keep %s and report it: the dumper thread did not hand the recording thread "
                "room in time" % result.dumps)
        sent = sum(v["sendBytes"] for v in m.values())
        steps = sum(v["sendSteps"] for v in m.values())
        sized = sum(v["sendSizedSteps"] for v in m.values())
        check.figures["metricsSendBytes"] = sent
        check.figures["metricsSendSteps"] = steps
        check.figures["metricsSendSizedSteps"] = sized
        check.figures["payloadBytes"] = result.payload_bytes
        if steps == 0 or sent == 0 or sized == 0:
            return check.fail("the step metrics show %d bytes in %d send steps (%d with a size)" % (sent, steps, sized),
                              "keep %s and report it with the NCCL release" % result.dumps)
        if result.payload_bytes:
            # NCCL 2.23-2.26 give an op's first transfer no size (docs/metrics.md):
            # what was sent lies between the sized steps' bytes and as many again
            # per unsized step as a sized one averages
            low = sent / float(result.payload_bytes)
            high = low * steps / sized
            check.figures["metricsPayloadRatio"] = round(low, 4)
            # the simple protocol carries the data itself, LL twice its size, LL128 1/15 more
            if high < 0.99 or low > 2.1:
                return check.fail("the step metrics say %d bytes were sent%s, %.2f x the %d the all-reduces "
                                  "carry (between 1 and 2.1 x expected)"
                                  % (sent, "" if sized == steps else " in %d of %d steps" % (sized, steps),
                                     low if low > 2.1 else high, result.payload_bytes),
                                  "keep %s and report it with the NCCL release: the metrics miscount "
                                  "bytes" % result.dumps)
            metrics_text = "; metrics: %d bytes sent%s, %.2f x the all-reduces' %d" % (
                sent, "" if sized == steps else " in %d of %d steps" % (sized, steps), low, result.payload_bytes)
        else:
            metrics_text = ("; metrics: %d bytes sent in %d steps (not compared with the calls' sizes: "
                            "this backend does not say them)" % (sent, steps))
    a = analyzer.analyze(result.dumps)
    check.figures["verdict"] = a.verdict
    if a.verdict != "ok":
        return check.fail("analyze says %s on a healthy job: %s" % (a.verdict, a.summary),
                          "read `proxytrace analyze -v %s`; keep the folder and report it if the job "
                          "was healthy" % result.dumps)
    return check.ok("%s, %d ops in their last dumps, counters consistent, nothing dropped%s; analyze: ok"
                    % (_plural(spec.ranks, "rank"), len(records), metrics_text))


def _watchdog(check, spec, result, analyzer):
    """The ranks whose stall watchdog dumped (all dumps of the folder)."""
    every = analyzer.read_dumps(result.dumps, all_dumps=True)
    stalled = sorted({r.rank for r in every if r.dump.trigger == "stall"})
    signalled = sorted({r.rank for r in every if r.dump.trigger == "signal"})
    check.figures["stallDumpRanks"] = stalled
    check.figures["signalDumpRanks"] = signalled
    return stalled


def _culprits_text(a):
    return "; ".join("rank %s %s%s" % (c.rank, c.cause, "" if c.channel is None else " channel %d" % c.channel)
                     for c in a.culprits) or "no culprit"


def judge_fault(check, spec, result, analyzer, causes, what):
    """The fault jobs: the watchdog dumped while it hung, and analyze names
    the planted rank with one of `causes`, on a channel where the cause has
    one, and nothing else."""
    if not _ran(check, result):
        return check
    want = spec.fault.rank
    check.figures["plantedRank"] = want
    stalled = _watchdog(check, spec, result, analyzer)
    if not stalled:
        return check.fail("no stall watchdog dumped during the fault (%s; PROXYTRACE_STALL_MS=%d)"
                          % (what, spec.stall_ms),
                          "hold the job longer than the stall time: --hang-s above --stall-ms/1000 plus "
                          "a few seconds (the watchdog needs the stall time without progress)")
    a = analyzer.analyze(result.dumps)
    check.figures["verdict"] = a.verdict
    check.figures["culprits"] = [{"rank": c.rank, "cause": c.cause, "channel": c.channel} for c in a.culprits]
    report = "`proxytrace analyze %s`" % result.dumps
    if a.verdict != "hang":
        return check.fail("analyze says %s, not a hang, on the dumps taken during the fault (%s): %s"
                          % (a.verdict, what, a.summary),
                          "read %s; keep the folder and report it" % report)
    named = [c for c in a.culprits if c.rank == want and c.cause in causes]
    others = [c for c in a.culprits if not (c.rank == want and c.cause in causes)]
    if not named or others:
        why = ""
        if any(m.rank <= want <= m.rankLast for m in a.missing_ranks or []):
            why = " (rank %d has no dump among them, so its part cannot be read)" % want
        return check.fail("%s; analyze names %s%s" % (what, _culprits_text(a), why),
                          "read %s: either the fault did not strike rank %d as planned (the job's logs: %s) "
                          "or the analysis misjudged it; keep %s and report it"
                          % (report, want, ", ".join(result.logs), result.dumps))
    if spec.fault.kind == jobs.GPU_STALL and any(c.channel is None for c in named):
        return check.fail("analyze names rank %d's GPU but no channel" % want,
                          "keep %s and report it (%s)" % (result.dumps, report))
    chans = sorted({c.channel for c in named if c.channel is not None})
    where = (", channel%s %s" % ("s" if len(chans) > 1 else "", _ranks(chans))) if chans else ""
    signalled = check.figures["signalDumpRanks"]
    return check.ok("%s: stall dumps of ranks %s%s; analyze: rank %d%s, %s, no other culprit"
                    % (what, _ranks(stalled), "; signal dumps of ranks %s" % _ranks(signalled) if signalled else "",
                       want, where, "/".join(sorted({c.cause for c in named}))))


def judge_cost(check, base, plugged, max_overhead):
    failed = [r for r in base + plugged if not r.ran]
    for r in base + plugged:
        check.notes += r.notes
    if failed:
        return check.fail("a timed job did not run: %s" % failed[0].problem, failed[0].fix)
    without = [max(r.loop_seconds) for r in base]
    with_ = [max(r.loop_seconds) for r in plugged]
    check.figures["secondsWithout"] = [round(s, 6) for s in without]
    check.figures["secondsWith"] = [round(s, 6) for s in with_]
    ratio = min(with_) / min(without)
    mid = sorted(with_)[len(with_) // 2] / sorted(without)[len(without) // 2]
    check.figures["ratioOfBest"] = round(ratio, 4)
    check.figures["ratioOfMedians"] = round(mid, 4)
    check.figures["maxOverhead"] = max_overhead
    text = ("%d rounds of the loop, best %.3f s with the plugin vs %.3f s without: %+.1f %% (medians %+.1f %%)"
            % (len(base), min(with_), min(without), (ratio - 1) * 100, (mid - 1) * 100))
    if ratio > 1 + max_overhead:
        return check.fail("%s, above the %g %% allowed" % (text, max_overhead * 100),
                          "rerun on a quiet machine (the loop shares the GPU and the CPU with nothing "
                          "else); if it stays, keep %s and report it" % check.folder)
    return check.ok(text)


# ---- the run ------------------------------------------------------------------

def run_checks(backend, opts, analyzer=None, say=print):
    """Run the checks named in opts.checks with `backend`; the list of Check.
    `say` gets each check's line as it is judged."""
    analyzer = analyzer or Analyzer()
    out = []
    fault_rank = opts.ranks - 1

    def spec(name, **kw):
        folder = os.path.join(opts.out, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        return jobs.JobSpec(name, folder, opts.ranks, stall_ms=opts.stall_ms, hang_s=opts.hang_s, **kw)

    for name in CHECKS:
        if name not in opts.checks:
            continue
        if name == "healthy":
            s = spec(name, metrics=True)
            c = judge_healthy(Check(name, s.folder), s, backend.run(s), analyzer)
        elif name == "gpu-stall":
            s = spec(name, fault=jobs.Fault(jobs.GPU_STALL, fault_rank))
            # its send waits for its GPU's data; or, where the host posts the
            # proxy ops only once the GPU reaches the collective, its GPU never
            # took the collective up: either names its GPU
            c = judge_fault(Check(name, s.folder), s, backend.run(s), analyzer, ("gpu_not_producing", "stopped"),
                            "rank %d's GPU held %g s before the all-reduce" % (fault_rank, opts.hang_s))
        elif name == "not-entered":
            s = spec(name, fault=jobs.Fault(jobs.NOT_ENTERED, fault_rank))
            c = judge_fault(Check(name, s.folder), s, backend.run(s), analyzer, ("not_entered",),
                            "rank %d kept %g s from calling the all-reduce" % (fault_rank, opts.hang_s))
        else:
            folder = os.path.join(opts.out, name)
            c = Check(name, folder)
            if not backend.measures_cost:
                c.skip("not measured: %s" % backend.cost_skip_reason)
            else:
                shutil.rmtree(folder, ignore_errors=True)
                os.makedirs(folder)
                base, plugged = [], []
                for i in range(opts.rounds):  # side by side: without, with, without, with, ...
                    for plugin, into in ((False, base), (True, plugged)):
                        s = jobs.JobSpec("%s-%d" % ("with" if plugin else "without", i),
                                         os.path.join(folder, "%s-%d" % ("with" if plugin else "without", i)),
                                         opts.ranks, plugin=plugin, timed=True, stall_ms=opts.stall_ms)
                        os.makedirs(s.folder)
                        into.append(backend.run(s))
                judge_cost(c, base, plugged, opts.max_overhead)
        out.append(c)
        say(c.line())
    return out


def _default_plugin():
    """The plugin beside the proxytrace command (the build folder), or in
    its ../lib or ../lib64 (an installation), as the command finds its own;
    else beside libproxytrace-loader."""
    try:
        folder = os.path.dirname(os.path.realpath(_native.find_command()))
    except ProxytraceError:
        folder = None
    for sub in ("", "../lib", "../lib64") if folder else ():
        path = os.path.normpath(os.path.join(folder, sub, _native.PLUGIN_NAME))
        if os.path.exists(path):
            return path
    try:
        from ._enable import default_plugin
        return default_plugin()
    except ProxytraceError:
        return None


def parser():
    p = argparse.ArgumentParser(
        prog="proxytrace selftest",
        description="Runs a tiny job of N processes whose data goes through NCCL's network proxy, "
                    "with the plugin loaded, and checks end to end that the dumps show it and that "
                    "`proxytrace analyze` names a planted fault: one line per check, each failure "
                    "with its fix.",
        epilog="Exit status: 0 every check passed (skipped ones say why), 1 a check failed, "
               "2 a bad option, 3 the selftest cannot run here (no GPU, no torch with NCCL, "
               "no plugin; --emulate needs none of them).")
    p.add_argument("--emulate", action="store_true",
                   help="run the jobs on the emulator (proxytrace sim) instead of torch + NCCL on a GPU")
    p.add_argument("--ranks", type=int, default=2, help="processes of each job, 2..8 (default 2)")
    p.add_argument("--checks", default=",".join(CHECKS),
                   help="the checks to run, comma-separated (default %s)" % ",".join(CHECKS))
    p.add_argument("--out", default="selftest-out",
                   help="folder of each job's dumps, logs and results (default selftest-out)")
    p.add_argument("--json", metavar="FILE", help="verdicts and figures as JSON (default OUT/selftest.json)")
    p.add_argument("--stall-ms", type=int, default=2000,
                   help="PROXYTRACE_STALL_MS of the jobs, 100..60000 (default 2000)")
    p.add_argument("--hang-s", type=float, default=None,
                   help="how long a planted fault holds the job, seconds (default: the stall time "
                        "x 3, at least the stall time + 6 s)")
    p.add_argument("--rounds", type=int, default=3,
                   help="cost: rounds of the timed loop without and with the plugin, 1..20 (default 3)")
    p.add_argument("--max-overhead", type=float, default=10.0,
                   help="cost: the most the plugin may add to the loop's best time, in %% (default 10)")
    p.add_argument("--plugin", help="the plugin to load (default: the one of this build or installation)")
    p.add_argument("--host", default="nccl-2.28",
                   help="--emulate: the release the emulator plays (default nccl-2.28)")
    return p


def parse(argv):
    """The options, or SystemExit(2) with argparse's message."""
    p = parser()
    opts = p.parse_args(argv)
    checks = [c.strip() for c in opts.checks.split(",") if c.strip()]
    bad = [c for c in checks if c not in CHECKS]
    if bad or not checks:
        p.error("--checks: %s is not a check (%s)" % (", ".join(bad) or "nothing", ", ".join(CHECKS)))
    opts.checks = checks
    if not 2 <= opts.ranks <= 8:
        p.error("--ranks %d: 2..8" % opts.ranks)
    if not 100 <= opts.stall_ms <= 60000:
        p.error("--stall-ms %d: 100..60000" % opts.stall_ms)
    if opts.hang_s is None:
        opts.hang_s = max(3 * opts.stall_ms / 1000.0, opts.stall_ms / 1000.0 + 6)
    if not 0 < opts.hang_s <= 600:
        p.error("--hang-s %g: above 0, at most 600" % opts.hang_s)
    if not 1 <= opts.rounds <= 20:
        p.error("--rounds %d: 1..20" % opts.rounds)
    if not 0 <= opts.max_overhead <= 1000:
        p.error("--max-overhead %g: 0..1000" % opts.max_overhead)
    opts.max_overhead /= 100.0
    if opts.json is None:
        opts.json = os.path.join(opts.out, "selftest.json")
    return opts


def _prepare_out(out):
    """The folder belongs to the selftest: made, or one it made before
    (its marker); never a folder of other files."""
    if os.path.isdir(out) and os.listdir(out) and not os.path.exists(os.path.join(out, MARKER)):
        raise ValueError("%s holds files of something else than a selftest: name an empty or new "
                         "folder with --out" % out)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, MARKER), "w") as f:
        f.write("proxytrace selftest writes here\n")


def write_json(path, doc):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def document(backend, opts, checks, status, cannot=None):
    failed = [c.name for c in checks if c.status == "FAIL"]
    return {
        "type": "selftest", "schema": 1, "tool": "proxytrace selftest", "version": __version__,
        "backend": backend.name,
        "result": "cannot_run" if cannot else ("fail" if failed else "pass"),
        "exitStatus": status,
        "failed": failed,
        "cannotRun": {"why": cannot.why, "fix": cannot.fix} if cannot else None,
        "environment": backend.environment(),
        "options": {"ranks": opts.ranks, "checks": opts.checks, "out": opts.out, "stallMs": opts.stall_ms,
                    "hangS": opts.hang_s, "rounds": opts.rounds, "maxOverhead": opts.max_overhead,
                    "host": opts.host if opts.emulate else None},
        "checks": [c.to_dict() for c in checks],
    }


def make_backend(opts):
    if opts.emulate:
        return jobs.EmulatorBackend(_native.find_command(), opts.plugin, opts.host)
    return jobs.TorchBackend(jobs.default_python(), opts.plugin, _read_dumps)


def main(argv=None, backend=None, analyzer=None):
    """The command; its exit status. `backend` and `analyzer` replace the
    ones the options choose (the tests' fakes)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        opts = parse(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else 0
    if opts.plugin is None:
        opts.plugin = _default_plugin()
    try:
        _prepare_out(opts.out)
    except (ValueError, OSError) as e:
        sys.stderr.write("proxytrace selftest: %s\n" % e)
        return EXIT_USAGE
    try:
        backend = backend or make_backend(opts)
        backend.check()
    except (jobs.CannotRun, ProxytraceError) as e:
        cannot = e if isinstance(e, jobs.CannotRun) else jobs.CannotRun(str(e), "build it (make)")
        sys.stdout.flush()
        sys.stderr.write("proxytrace selftest: cannot run here: %s — fix: %s\n" % (cannot.why, cannot.fix))
        if backend is not None:
            write_json(opts.json, document(backend, opts, [], EXIT_CANNOT_RUN, cannot))
        return EXIT_CANNOT_RUN
    env = backend.environment()
    what = ", ".join("%s %s" % (k, env[k]) for k in ("torch", "ncclVersion", "ncclLibrary", "gpu", "host")
                     if env.get(k))
    print("selftest: %s backend%s; plugin %s; %s per job; out %s"
          % (backend.name, " (%s)" % what if what else "", opts.plugin or "(the emulator's own)",
             _plural(opts.ranks, "rank"), opts.out))
    sys.stdout.flush()

    def say(line):
        print(line)
        sys.stdout.flush()

    checks = run_checks(backend, opts, analyzer, say)
    failed = [c for c in checks if c.status == "FAIL"]
    status = EXIT_FAILED if failed else EXIT_PASSED
    write_json(opts.json, document(backend, opts, checks, status))
    print("selftest: %s; results in %s" % (
        "%s failed: %s" % (_plural(len(failed), "check"), ", ".join(c.name for c in failed)) if failed
        else "every check passed", opts.json))
    return status


if __name__ == "__main__":
    sys.exit(main())
