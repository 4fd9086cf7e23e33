"""proxytrace.analyze() is `proxytrace analyze --json`: on the emulator's
fault scenarios (a stalled GPU, a rank that posts no receives, a dead rank,
a slow link, PXN, never-stopped ops, and no fault) the Python result equals
the command's document field for field, the command finds that document
in agreement with the emulator's ground truth (exactly, at node level or
within its documented limits: its own comparison, --expect; for the slow
link not under a sanitizer, whose run times are not the program's, so
that there no slowness is looked for), and
`python3 -m proxytrace analyze` prints and exits as the command.
Unreadable paths, no dump at all and refused options behave as the command
says they do.

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
    "pxn and a stall": ["--pxn", "1:0", "--stall", "2:0:4"],
    "never-stopped ops and a stall": ["--leak-ops", "2", "--stall", "6:0:3"],
}
TIMING = ("parseSeconds", "analyzeSeconds", "slowSeconds")
TIMED = ("slow link",)  # scenarios whose ground truth is a matter of run times


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
        """`analyze --expect` on a job's dumps: (exit status, output). Slowness
        is timed on a machine other tests share: a job found slow where the
        emulator injected nothing (a proxy thread not scheduled for long
        enough looks like a slow link) is run once more. Under a sanitizer the
        run times are the sanitizer's: no slowness is looked for at all (as in
        tests/analyze/json-accuracy.sh), and no timed scenario is checked."""
        job = self.jobs[name]
        args = ["analyze", "--expect", os.path.join(job, "truth.json"), os.path.join(job, "dumps")]
        if ptest.SAN:
            args[1:1] = ["--slow-factor", "1000"]
        rc, out, err = ptest.c_cli(args)
        if rc == 3 and "the verdict is slow, the ground truth says ok" in out + err:
            self.run_job(name)
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
                self.assertEqual(rc, {"ok": 0, "hang": 1, "slow": 1}[a.verdict])
                # The command's own comparison with the emulator's ground truth:
                # exact, at node level or within a documented limit (exit 3: no).
                # A slow link is timed: under a sanitizer the run times are the
                # sanitizer's, not the program's (tests/analyze/json-accuracy.sh).
                if name in TIMED and ptest.SAN:
                    continue
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


if __name__ == "__main__":
    unittest.main()
