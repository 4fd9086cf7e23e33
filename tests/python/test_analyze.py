"""proxytrace.analyze() is `proxytrace analyze --json`: on the emulator's
fault scenarios (a stalled GPU, a rank that posts no receives, a dead rank,
a slow link, by op durations and by the step metrics, PXN, never-stopped
ops, desyncs, and no fault) the Python result equals
the command's document field for field, the command finds that document
in agreement with the emulator's ground truth (exactly, at node level or
within its documented limits: its own comparison, --expect; for the slow
link not under a sanitizer, whose run times are not the program's, so
that there no slowness is looked for), and
`python3 -m proxytrace analyze` prints and exits as the command; a slow
verdict from the step metrics lists its edges in slow_edges.
Unreadable paths, no dump at all and refused options behave as the command
says they do. Dumps whose strings hold bytes that are not UTF-8 and terminal
escape sequences come back as strings that print and encode as UTF-8.

These tests need a `proxytrace` with the analyze command; a build without it
skips them (and says so in the summary)."""

import json
import os
import unittest

import ptest
import proxytrace

SCENARIOS = {  # jobs of the emulator on its default RCCL profile: 2 nodes x 4 ranks
    "none": ["--iters", "2"],
    "stall": ["--stall", "3:0:5"],
    "stall on every channel": ["--stall", "5:all:3", "--channels", "4"],
    "no receives": ["--no-recv", "5"],
    "dead rank": ["--kill", "6:3"],
    "slow link": ["--slow-link", "2:8"],
    "slow link, step metrics": ["--slow-link", "2:8", "--env", "PROXYTRACE_METRICS_INTERVAL_MS=1000"],
    "pxn and a stall": ["--pxn", "1:0", "--stall", "2:0:4"],
    "never-stopped ops and a stall": ["--leak-ops", "2", "--stall", "6:0:3"],
    "a rank that skips the call": ["--skip", "2"],
    "a rank that calls another collective": ["--mismatch", "6"],
}
# How the analysis ran: its times, and its peak memory, which depends on how
# the reading threads interleaved (docs/analyze.md, "On every core").
TIMING = ("parseSeconds", "analyzeSeconds", "slowSeconds", "peakBytes")


def has_analyze():
    rc, out, err = ptest.c_cli(["analyze", "--help"])
    return rc == 0


def without_timing(doc):
    doc = dict(doc)
    doc["stats"] = {k: v for k, v in doc["stats"].items() if k not in TIMING}
    return doc


@unittest.skipUnless(has_analyze(), "this build's proxytrace has no analyze command")
class Analyze(unittest.TestCase):
    maxDiff = None

    @classmethod
    def run_job(cls, name):
        ptest.sim_job(cls.jobs[name], SCENARIOS[name])

    @classmethod
    def setUpClass(cls):
        cls.d = ptest.tmpdir_for_class(cls)
        cls.jobs = {}
        for i, name in enumerate(SCENARIOS):
            cls.jobs[name] = os.path.join(cls.d, "job%d" % i)
            cls.run_job(name)

    def expect(self, name):
        """`analyze --expect` on a job's dumps: (exit status, output). The
        jobs run on emulated time: their op times are the emulator's in every
        build and under any load, slowness included."""
        job = self.jobs[name]
        args = ["analyze", "--expect", os.path.join(job, "truth.json"), os.path.join(job, "dumps")]
        rc, out, err = ptest.c_cli(args)
        return rc, out + err

    def test_equals_the_command_on_every_fault(self):
        for name, job in self.jobs.items():
            with self.subTest(scenario=name):
                dumps = os.path.join(job, "dumps")
                rc, out, err = ptest.c_cli(["analyze", "--json", dumps])
                cli = json.loads(out)
                a = proxytrace.analyze(dumps)
                self.assertIsInstance(a, proxytrace.Analysis)
                self.assertEqual(without_timing(a.to_dict()), without_timing(cli))
                self.assertEqual(rc, {"ok": 0, "hang": 1, "slow": 1, "incomplete": 4}[a.verdict])
                # The command's own comparison with the emulator's ground truth:
                # exact, at node level or within a documented limit (exit 3: no).
                rc, out = self.expect(name)
                self.assertNotEqual(rc, 3, out)
                self.assertIn("ground truth", out)

    def test_plain_objects(self):
        a = proxytrace.analyze(os.path.join(self.jobs["stall"], "dumps"))
        c = a.culprits[0]
        self.assertEqual((a.verdict, c.rank, c.channel, c.cause),
                         ("hang", 3, 0, "gpu_not_producing"))
        self.assertEqual(a.schema, 1)
        self.assertTrue(a.stuck_edges)
        self.assertIn(c.summary.split(":")[0], str(a))
        self.assertEqual(a["verdict"], "hang")
        self.assertIsInstance(c.evidence[0].counters.posted, int)

    def test_slow_edges_of_the_step_metrics(self):
        """A slow verdict from the step metrics lists its edges in slow_edges
        (source "metrics", with sender and receiver), the same ones as
        metrics_slow_edges."""
        a = proxytrace.analyze(os.path.join(self.jobs["slow link, step metrics"], "dumps"))
        self.assertEqual((a.verdict, a.culprits[0].rank, a.culprits[0].cause), ("slow", 2, "slow_link"))
        m = [e for e in a.slow_edges if e.source == "metrics"]
        self.assertTrue(m)
        self.assertEqual([(e.rank, e.peer, e.direction, e.side, e.factor) for e in m],
                         [(e.rank, e.peer, e.direction, e.side, e.factor) for e in a.metrics_slow_edges])
        for e in m:
            self.assertIn(2, (e.sender, e.receiver))
            self.assertEqual((e.sender, e.receiver), (e.rank, e.peer) if e.direction == "send" else (e.peer, e.rank))

    def test_desync_culprits(self):
        """A desync names the rank first, with its cause and what it called."""
        for name, rank, cause, words in (("a rank that skips the call", 2, "not_entered", "never called AllReduce"),
                                         ("a rank that calls another collective", 6, "mismatch",
                                          "called AllGather")):
            with self.subTest(scenario=name):
                a = proxytrace.analyze(os.path.join(self.jobs[name], "dumps"))
                c = a.culprits[0]
                self.assertEqual((a.verdict, c.rank, c.channel, c.cause), ("hang", rank, None, cause))
                self.assertIn(words, c.summary)

    def test_origin_across_communicators(self):
        """A 3D-parallel job: the origin first, every other communicator's
        culprit a consequence of it, with its chain."""
        job = ptest.sim_job(os.path.join(self.d, "layout"), [
            "--layout", "2x2x2", "--iters", "3", "--fault-comm", "dp:1", "--stall", "1:0:3", "--fault-iter", "1",
            "--poll-us", "200", "--hold", "0.4", "--env", "PROXYTRACE_STALL_MS=100",
            "--env", "PROXYTRACE_DUMP_INTERVAL_MS=50"])
        a = proxytrace.analyze(os.path.join(job, "dumps"))
        origins = [c for c in a.culprits if c.consequenceOf is None]
        self.assertEqual([(c.rank, c.host, c.pid, c.cause) for c in origins],
                         [(1, "node2", 1035, "gpu_not_producing")])
        follows = [c for c in a.culprits if c.consequenceOf is not None]
        self.assertGreaterEqual(len({c.commHash for c in follows}), 6)
        for c in follows:
            self.assertEqual(c.consequenceOf, 1)
            self.assertIn("-> culprit 1", c.chain)

    def test_options_reach_the_command(self):
        dumps = os.path.join(self.jobs["slow link"], "dumps")
        chrome = os.path.join(self.d, "trace.json")
        a = proxytrace.analyze([dumps], slow_factor=1000, stall_ms=0, chrome=chrome)
        rc, out, err = ptest.c_cli(["analyze", "--json", "--slow-factor", "1000",
                                    "--stall-ms", "0", dumps])
        self.assertEqual(without_timing(a.to_dict()), without_timing(json.loads(out)))
        with open(chrome) as f:
            self.assertIn("traceEvents", json.load(f))
        with self.assertRaises(proxytrace.AnalyzeError) as cm:
            proxytrace.analyze(dumps, slow_factor=0.1)
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertIn("--slow-factor", str(cm.exception))
        with self.assertRaises(proxytrace.AnalyzeError) as cm:
            proxytrace.analyze(dumps, stall_ms=-1)
        self.assertIn("--stall-ms", str(cm.exception))

    def test_incomplete(self):
        # the stalled rank's dump files, cut after 5 000 bytes: nothing
        # stuck in what was read, but not the whole job
        dumps = os.path.join(self.jobs["stall"], "dumps")
        cut = os.path.join(self.d, "cut")
        os.makedirs(cut, exist_ok=True)
        src = [n for n in sorted(os.listdir(dumps)) if n.startswith("rank3")]
        self.assertTrue(src, os.listdir(dumps))
        with open(os.path.join(dumps, src[0]), "rb") as f, open(os.path.join(cut, "rank3.log"), "wb") as g:
            g.write(f.read()[:5000])
        a = proxytrace.analyze(cut)
        self.assertEqual(a.verdict, "incomplete", a.summary)
        self.assertIn("missing", {g.kind for g in a.gaps})
        rc, out, err = ptest.c_cli(["analyze", "--json", cut])
        self.assertEqual(rc, 4)
        self.assertEqual(without_timing(a.to_dict()), without_timing(json.loads(out)))
        # a --chrome file that is one of the inputs: refused, nothing written
        with self.assertRaises(proxytrace.AnalyzeError) as cm:
            proxytrace.analyze(cut, chrome=os.path.join(cut, "rank3.log"))
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertIn("one of the inputs", str(cm.exception))

    def test_unreadable_and_empty_inputs(self):
        empty = os.path.join(self.d, "empty")
        os.makedirs(empty, exist_ok=True)
        missing = os.path.join(self.d, "missing")
        a = proxytrace.analyze([empty, missing])
        self.assertEqual(a.verdict, "unusable")
        self.assertEqual([(i.path, i.format) for i in a.inputs], [(missing, "unreadable")])
        self.assertIn("No such file", a.inputs[0].error)
        with self.assertRaises(ValueError):
            proxytrace.analyze([])

    def test_module_runs_the_command(self):
        dumps = os.path.join(self.jobs["dead rank"], "dumps")
        for args in (["analyze", dumps], ["analyze", "-v", dumps], ["analyze"]):
            with self.subTest(args=args):
                self.assertEqual(ptest.python_m(args), ptest.c_cli(args))


HOSTILE_HOST = b'n\xff\xfe\xffde\\u001b]0;x\\u0007\\u001b[2J<script>'  # as the .jsonl holds it


@unittest.skipUnless(has_analyze(), "this build's proxytrace has no analyze command")
class HostileStrings(unittest.TestCase):
    """A planted header whose host holds 0xff bytes and (JSON-escaped)
    control characters: analyze() and read_dumps() round-trip it."""

    def test_strings_are_utf8_and_printable(self):
        job = ptest.sim_job(os.path.join(ptest.tmpdir(self), "job"), ["--stall", "3:0:5"])
        dumps = os.path.join(job, "dumps")
        planted = 0
        for name in sorted(os.listdir(dumps)):
            if name.endswith(".jsonl"):
                path = os.path.join(dumps, name)
                with open(path, "rb") as f:
                    data = f.read()
                # every header: the latest dump of a rank (a finalize record
                # after the stall dump) is the one the verdict names
                new = data.replace(b'"host":"', b'"host":"' + HOSTILE_HOST)
                planted += new != data
                with open(path, "wb") as f:
                    f.write(new)
        self.assertGreater(planted, 0)
        a = proxytrace.analyze(dumps)
        self.assertEqual(a.verdict, "hang")
        doc = a.to_dict()
        text = json.dumps(doc, ensure_ascii=False)
        text.encode("utf-8")  # no lone surrogate: UnicodeEncodeError otherwise
        host = a.culprits[0].host
        self.assertIn("\ufffd", host)
        self.assertIn("\x1b]0;x\x07", host)  # the escapes decoded, as JSON says
        self.assertIn("<script>", host)
        rc, out, err = ptest.c_cli(["analyze", "--json", dumps])
        self.assertEqual(without_timing(doc), without_timing(json.loads(out)))
        for args in (["analyze", dumps], ["analyze", "-v", dumps]):  # the text report, for a terminal
            rc, out, err = ptest.c_cli(args)
            self.assertEqual(rc, 1)
            self.assertIn("\\x1b]0;x\\x07", out)
            self.assertEqual([c for c in out + err if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f], [])
        hosts = {r.dump.host for r in proxytrace.read_dumps(dumps)}
        self.assertTrue(any("\ufffd" in h for h in hosts if h), hosts)
        print(hosts, file=open(os.devnull, "w", encoding="utf-8"))  # printable: no lone surrogate

if __name__ == "__main__":
    unittest.main()
