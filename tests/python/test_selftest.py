"""The selftest's checks (proxytrace/_selftest.py) against the emulator
backend, in emulated time: the same result on every run.

A planted GPU stall and a rank that never calls are named (rank, cause,
channel, nothing else) with 2 and 3 ranks (a stall also as `stopped`, a
GPU that never took the collective up); and each way a check can fail
does fail, with its fix, and the command exits 1: a backend that plants the
fault on the wrong rank, an analyzer whose verdict disagrees, a hang held
shorter than the stall time, records whose counters are out of order or
that show dropped ops, step metrics that disagree with the bytes the job
claims. The checks are the same code for the torch backend: only the
backend differs. Of the torch backend, what needs no GPU: each process's
environment and arguments, and its handling of a hung job (a rank without
a stall dump signalled, the folder copied) with the emulator's dumps and
stand-in processes; and its jobs end to end with a stand-in torch (no GPU,
no NCCL): the workers run, their results are read, and with no plugin
loaded every check fails with its fix. Without torch, or with a torch that sees no GPU, the
command says so and exits 3 (its worker asked the way it asks on a GPU
machine, with a stand-in torch)."""

import contextlib
import io
import json
import os
import signal
import subprocess
import time
import unittest

import ptest
from proxytrace import _selftest, _selftest_jobs
from proxytrace._analyze import Analysis, OpRecord


def emulator(cls=_selftest_jobs.EmulatorBackend):
    return cls(ptest.CLI, ptest.PLUGIN, "nccl-2.28")


def run(testcase, args, backend=None, analyzer=None):
    """(exit status, printed lines, the JSON document) of the command."""
    out = os.path.join(ptest.tmpdir(testcase), "out")
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        rc = _selftest.main(["--out", out] + list(args), backend=backend, analyzer=analyzer)
    doc = None
    if os.path.exists(os.path.join(out, "selftest.json")):
        with open(os.path.join(out, "selftest.json")) as f:
            doc = json.load(f)
    return rc, buf.getvalue().splitlines(), doc, err.getvalue()


def check_of(doc, name):
    return [c for c in doc["checks"] if c["name"] == name][0]


class WrongRank(_selftest_jobs.EmulatorBackend):
    """Plants every fault one rank further than asked."""

    def fault_options(self, fault):
        return super().fault_options(_selftest_jobs.Fault(fault.kind, (fault.rank + 1) % 2))


class ClaimsPayload(_selftest_jobs.EmulatorBackend):
    """Says the job's all-reduces carried `payload` bytes."""

    payload = None

    def run(self, spec):
        res = super().run(spec)
        res.payload_bytes = self.payload
        return res


class HalfSized(ClaimsPayload):
    """As NCCL 2.23-2.26 write them: half the send steps without a size."""

    def run(self, spec):
        res = super().run(spec)
        for name in os.listdir(spec.dump_dir):
            if name.startswith("proxytrace-metrics-") and name.endswith(".jsonl"):
                path = os.path.join(spec.dump_dir, name)
                with open(path) as f:
                    lines = [json.loads(line) for line in f]
                for o in lines:
                    if o.get("type") == "edge" and o["dir"] == "send":
                        o["sizedSteps"] //= 2
                        o["bytes"] //= 2
                with open(path, "w") as f:
                    f.writelines(json.dumps(o) + "\n" for o in lines)
        return res


class Verdict(_selftest.Analyzer):
    """The real analysis with `change` applied to its document."""

    def __init__(self, change):
        self.change = change

    def analyze(self, path):
        doc = super().analyze(path).to_dict()
        self.change(doc)
        return Analysis(doc)


class Records(_selftest.Analyzer):
    """The real records with `change` applied to the first of them."""

    def __init__(self, change):
        self.change = change

    def read_dumps(self, path, all_dumps=False):
        recs = super().read_dumps(path, all_dumps)
        if recs:
            d = recs[0].to_dict()
            self.change(d)
            recs[0] = OpRecord(d)
        return recs


class Emulated(unittest.TestCase):
    maxDiff = None

    def test_every_check_on_the_emulator(self):
        rc, lines, doc, _ = run(self, ["--emulate"], backend=emulator())
        self.assertEqual(rc, 0, lines)
        self.assertEqual([line.split()[:2] for line in lines[1:5]],
                         [["ok", "healthy"], ["ok", "gpu-stall"], ["ok", "not-entered"], ["skip", "cost"]])
        self.assertIn("every check passed", lines[-1])
        self.assertEqual((doc["result"], doc["exitStatus"], doc["backend"]), ("pass", 0, "emulator"))
        stall = check_of(doc, "gpu-stall")
        self.assertEqual(stall["figures"]["culprits"], [{"rank": 1, "cause": "gpu_not_producing", "channel": 0},
                                                        {"rank": 1, "cause": "gpu_not_producing", "channel": 1}])
        self.assertEqual(stall["figures"]["stallDumpRanks"], [0, 1])
        self.assertIn("analyze: rank 1, channels 0, 1, gpu_not_producing, no other culprit", stall["line"])
        skip = check_of(doc, "not-entered")
        self.assertEqual(skip["figures"]["culprits"], [{"rank": 1, "cause": "not_entered", "channel": None}])
        healthy = check_of(doc, "healthy")
        self.assertEqual(healthy["figures"]["verdict"], "ok")
        self.assertEqual(healthy["figures"]["opsPerRank"], {"0": 16, "1": 16})
        self.assertEqual(healthy["figures"]["lost"], {})
        self.assertGreater(healthy["figures"]["metricsSendBytes"], 0)
        self.assertIsNone(healthy["figures"]["payloadBytes"])
        self.assertIn("emulated time", check_of(doc, "cost")["line"])
        for c in doc["checks"]:
            self.assertIsNone(c["fix"])

    def test_three_ranks_the_last_one_planted(self):
        rc, lines, doc, _ = run(self, ["--emulate", "--ranks", "3", "--checks", "gpu-stall,not-entered"],
                                backend=emulator())
        self.assertEqual(rc, 0, lines)
        self.assertEqual({c["rank"] for c in check_of(doc, "gpu-stall")["figures"]["culprits"]}, {2})
        self.assertEqual(check_of(doc, "not-entered")["figures"]["culprits"],
                         [{"rank": 2, "cause": "not_entered", "channel": None}])

    def failed(self, rc, lines, doc, name):
        """The check's FAIL line, with its fix; exit 1; the JSON says so."""
        self.assertEqual(rc, 1, lines)
        line = [x for x in lines if x.split()[1:2] == [name]][0]
        self.assertTrue(line.startswith("FAIL "), line)
        self.assertIn(" — fix: ", line)
        c = check_of(doc, name)
        self.assertEqual(c["status"], "FAIL")
        self.assertTrue(c["fix"])
        self.assertEqual((doc["result"], doc["exitStatus"]), ("fail", 1))
        self.assertIn(name, doc["failed"])
        self.assertRegex(lines[-1], r"^selftest: \d checks? failed: .*\b%s\b" % name)
        return line

    def test_a_fault_planted_on_the_wrong_rank_fails(self):
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "gpu-stall,not-entered"], backend=emulator(WrongRank))
        line = self.failed(rc, lines, doc, "gpu-stall")
        self.assertIn("rank 1's GPU held 8 s before the all-reduce; analyze names rank 0 gpu_not_producing", line)
        self.assertIn("either the fault did not strike rank 1 as planned", line)
        line = self.failed(rc, lines, doc, "not-entered")
        self.assertIn("analyze names rank 0 not_entered", line)

    def test_a_verdict_that_disagrees_fails(self):
        def no_hang(doc):
            doc["verdict"], doc["culprits"], doc["summary"] = "ok", [], "nothing stuck"
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "gpu-stall"], backend=emulator(),
                                analyzer=Verdict(no_hang))
        line = self.failed(rc, lines, doc, "gpu-stall")
        self.assertIn("analyze says ok, not a hang", line)

        def another_culprit(doc):
            extra = dict(doc["culprits"][0], rank=0, cause="no_receive_posted")
            doc["culprits"].append(extra)
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "gpu-stall"], backend=emulator(),
                                analyzer=Verdict(another_culprit))
        line = self.failed(rc, lines, doc, "gpu-stall")
        self.assertIn("rank 0 no_receive_posted channel 0", line)

        def healthy_hangs(doc):
            doc["verdict"], doc["summary"] = "hang", "made up"
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "healthy"], backend=emulator(),
                                analyzer=Verdict(healthy_hangs))
        self.assertIn("analyze says hang on a healthy job: made up", self.failed(rc, lines, doc, "healthy"))

    def test_a_stall_read_as_a_gpu_that_never_took_the_call_up(self):
        # where the host posts the proxy ops only once the GPU reaches the
        # collective, the analysis says `stopped`: that names the GPU too
        def stopped(doc):
            for c in doc["culprits"]:
                c["cause"] = "stopped"
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "gpu-stall,not-entered"], backend=emulator(),
                                analyzer=Verdict(stopped))
        self.assertIn("analyze: rank 1, channels 0, 1, stopped, no other culprit", lines[1])
        self.assertIn("analyze names rank 1 stopped", self.failed(rc, lines, doc, "not-entered"))
        self.assertEqual(check_of(doc, "gpu-stall")["status"], "ok")

        def no_channel(doc):
            for c in doc["culprits"]:
                c["channel"] = None
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "gpu-stall"], backend=emulator(),
                                analyzer=Verdict(no_channel))
        self.assertIn("analyze names rank 1's GPU but no channel", self.failed(rc, lines, doc, "gpu-stall"))

    def test_a_hang_shorter_than_the_stall_time_fails(self):
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "gpu-stall", "--stall-ms", "3000",
                                       "--hang-s", "1"], backend=emulator())
        line = self.failed(rc, lines, doc, "gpu-stall")
        self.assertIn("no stall watchdog dumped", line)
        self.assertIn("--hang-s above --stall-ms/1000", line)

    def test_records_that_do_not_add_up_fail(self):
        def out_of_order(d):
            d["transfers"]["done"] = d["transfers"]["posted"] + 1
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "healthy"], backend=emulator(),
                                analyzer=Records(out_of_order))
        self.assertIn("counters out of order", self.failed(rc, lines, doc, "healthy"))

        def dropped(d):
            d["dump"]["drops"]["opsDropped"] = 3
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "healthy"], backend=emulator(),
                                analyzer=Records(dropped))
        line = self.failed(rc, lines, doc, "healthy")
        self.assertIn("the plugin lost events: rank 0 opsDropped 3", line)
        self.assertIn("raise PROXYTRACE_MAX_OPS", line)

    def test_metrics_against_the_bytes_carried(self):
        # what the emulated job's metrics say it sent: 4 all-reduces x 2
        # channels x 4 transfers of 1 MiB, from each of the 2 ranks
        sent = 4 * 2 * 4 * (1 << 20) * 2
        backend = emulator(ClaimsPayload)
        backend.payload = sent
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "healthy"], backend=backend)
        self.assertEqual(rc, 0, lines)
        self.assertIn("metrics: %d bytes sent, 1.00 x the all-reduces' %d" % (sent, sent), lines[1])
        backend.payload = sent // 4
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "healthy"], backend=backend)
        line = self.failed(rc, lines, doc, "healthy")
        self.assertIn("4.00 x the %d the all-reduces carry" % (sent // 4), line)
        backend.payload = sent * 2
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "healthy"], backend=backend)
        self.assertIn("0.50 x", self.failed(rc, lines, doc, "healthy"))
        # steps without a size count as the sized ones average
        backend = emulator(HalfSized)
        backend.payload = sent
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "healthy"], backend=backend)
        self.assertEqual(rc, 0, lines)
        self.assertIn("metrics: %d bytes sent in 32 of 64 steps, 0.50 x the all-reduces' %d" % (sent // 2, sent),
                      lines[1])
        backend.payload = sent * 2
        rc, lines, doc, _ = run(self, ["--emulate", "--checks", "healthy"], backend=backend)
        self.assertIn("sent in 32 of 64 steps, 0.50 x the %d" % (sent * 2), self.failed(rc, lines, doc, "healthy"))

    def test_options(self):
        for args in (["--ranks", "1"], ["--ranks", "9"], ["--checks", "healthy,nope"], ["--checks", ""],
                     ["--stall-ms", "50"], ["--hang-s", "0"], ["--rounds", "0"], ["--max-overhead", "-1"],
                     ["--frobnicate"]):
            with self.subTest(args=args):
                rc, lines, doc, err = run(self, ["--emulate"] + args, backend=emulator())
                self.assertEqual((rc, lines, doc), (2, [], None))
                self.assertIn("proxytrace selftest: error:", err)
        d = ptest.tmpdir(self)
        with open(os.path.join(d, "precious.txt"), "w") as f:
            f.write("not the selftest's\n")
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = _selftest.main(["--emulate", "--out", d], backend=emulator())
        self.assertEqual(rc, 2)
        self.assertIn("holds files of something else than a selftest", err.getvalue())
        self.assertEqual(os.listdir(d), ["precious.txt"])


class TorchJobs(unittest.TestCase):
    """The torch backend's part that needs no GPU: each process's
    environment, and what it does while a fault holds the job — once a
    rank's stall watchdog has dumped, a rank without a stall dump is asked
    for one by SIGUSR1, and the folder is copied as it is then."""

    def backend(self):
        import proxytrace
        b = _selftest_jobs.TorchBackend(ptest.PYTHON, ptest.PLUGIN, proxytrace.read_dumps)
        b.settle_s, b.signal_wait_s = 0.2, 0.5
        return b

    def test_environment(self):
        b = self.backend()
        d = ptest.tmpdir(self)
        spec = _selftest_jobs.JobSpec("j", d, 3, metrics=True, stall_ms=1500,
                                      fault=_selftest_jobs.Fault(_selftest_jobs.GPU_STALL, 2), hang_s=7)
        os.environ["PROXYTRACE_MAX_OPS"] = "17"  # the user's: not passed on
        self.addCleanup(os.environ.pop, "PROXYTRACE_MAX_OPS")
        envs = [b._env(spec, r, 4242) for r in range(3)]
        self.assertEqual(len({e["NCCL_HOSTID"] for e in envs}), 3)
        for r, e in enumerate(envs):
            for k, v in (("RANK", str(r)), ("WORLD_SIZE", "3"), ("MASTER_ADDR", "127.0.0.1"),
                         ("MASTER_PORT", "4242"), ("NCCL_P2P_DISABLE", "1"), ("NCCL_SHM_DISABLE", "1"),
                         ("NCCL_NET", "Socket"), ("NCCL_SOCKET_IFNAME", "lo"),
                         ("NCCL_PROFILER_PLUGIN", ptest.PLUGIN), ("PROXYTRACE_DUMP_DIR", spec.dump_dir),
                         ("PROXYTRACE_STALL_MS", "1500"), ("PROXYTRACE_DUMP_SIGNAL", "USR1"),
                         ("PROXYTRACE_METRICS_INTERVAL_MS", "1000")):
                self.assertEqual(e.get(k), v, k)
            self.assertNotIn("PROXYTRACE_MAX_OPS", e)
        self.assertEqual(b._worker_args(spec, 1)[1:], [
            _selftest_jobs._WORKER, "run", "--mode", "gpu_stall", "--rank", "1", "--ranks", "3",
            "--out", os.path.join(d, "rank1.json"), "--fault-rank", "2", "--hang-s", "7"])
        bare = _selftest_jobs.JobSpec("k", d, 2, plugin=False, timed=True)
        e = b._env(bare, 0, 1)
        self.assertFalse([k for k in e if k.startswith("PROXYTRACE_") or k == "NCCL_PROFILER_PLUGIN"])
        self.assertEqual(b._worker_args(bare, 0)[3:5], ["--mode", "timed"])

    def test_the_worker_refuses_what_it_does_not_know(self):
        for args in (["run", "--mode", "nap", "--rank", "0", "--ranks", "2", "--out", "x"], ["run"], ["sleep"]):
            p = subprocess.run([ptest.PYTHON, _selftest_jobs._WORKER] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn("usage: _selftest_worker.py", p.stderr)

    def hung(self, drop_rank):
        """The dumps of an emulated GPU stall, as a job's folder while it
        hangs (rank `drop_rank`'s files left out: a rank that never dumped),
        and two processes standing for the ranks."""
        d = ptest.tmpdir(self)
        job = ptest.sim_job(os.path.join(d, "sim"), ["--host", "nccl-2.28", "--nodes", "2", "--ranks-per-node", "1",
                                                     "--ops", "allreduce:1M", "--iters", "2", "--stall", "1:all:0",
                                                     "--hold", "3", "--env", "PROXYTRACE_STALL_MS=1000"], exits=(3,))
        spec = _selftest_jobs.JobSpec("j", os.path.join(d, "job"), 2,
                                      fault=_selftest_jobs.Fault(_selftest_jobs.GPU_STALL, 1))
        os.makedirs(spec.dump_dir)
        for name in os.listdir(os.path.join(job, "dumps")):
            if name.startswith("proxytrace-") and "-r%d-" % drop_rank not in name:
                os.link(os.path.join(job, "dumps", name), os.path.join(spec.dump_dir, name))
        procs = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
        for p in procs:
            self.addCleanup(p.wait)
            self.addCleanup(p.kill)
        return spec, procs

    def test_a_rank_without_a_stall_dump_is_signalled(self):
        spec, procs = self.hung(drop_rank=1)
        res = _selftest_jobs.JobResult(spec)
        self.backend()._take_hung_dumps(spec, procs, res, time.monotonic() + 30)
        # rank 1 (a `sleep` here, which SIGUSR1 ends) was asked; rank 0 was not
        self.assertEqual(procs[1].wait(timeout=5), -signal.SIGUSR1)
        self.assertIsNone(procs[0].poll())
        self.assertEqual(res.dumps, os.path.join(spec.folder, "hung-dumps"))
        self.assertEqual(sorted(os.listdir(res.dumps)), sorted(os.listdir(spec.dump_dir)))
        self.assertEqual(res.notes[0], "ranks 0 dumped by the stall watchdog")
        self.assertEqual(res.notes[1], "ranks 1 asked to dump by SIGUSR1 (PROXYTRACE_DUMP_SIGNAL); "
                                       "no dump came from ranks 1")

    def test_every_rank_stalled_none_signalled(self):
        spec, procs = self.hung(drop_rank=9)
        res = _selftest_jobs.JobResult(spec)
        self.backend()._take_hung_dumps(spec, procs, res, time.monotonic() + 30)
        self.assertEqual([p.poll() for p in procs], [None, None])
        self.assertEqual(res.notes[0], "ranks 0, 1 dumped by the stall watchdog")
        self.assertTrue(res.notes[1].startswith("the dumps of the hang copied to "))
        self.assertTrue(os.listdir(res.dumps))

    def test_no_stall_dump_before_the_job_ends(self):
        d = ptest.tmpdir(self)
        spec = _selftest_jobs.JobSpec("j", d, 2, fault=_selftest_jobs.Fault(_selftest_jobs.NOT_ENTERED, 1))
        os.makedirs(spec.dump_dir)
        procs = [subprocess.Popen(["true"]) for _ in range(2)]
        for p in procs:
            p.wait()
        res = _selftest_jobs.JobResult(spec)
        self.backend()._take_hung_dumps(spec, procs, res, time.monotonic() + 30)
        self.assertEqual(res.notes, ["no stall dump came while the job ran"])
        self.assertEqual(res.dumps, spec.dump_dir)


# A stand-in torch that runs the worker's code without a GPU or a network:
# an all-reduce of N ranks multiplies by N, a spin returns at once, and no
# NCCL (so no plugin) is ever loaded.
STAND_IN_TORCH = {
    "torch/__init__.py": (
        '__version__ = "9.9.9+stand-in"\n'
        'float32 = "float32"\n'
        'class version:\n    hip = None\n    cuda = "0.0"\n'
        'class device:\n    def __init__(self, kind, index=0):\n        self.index = index\n'
        'class Tensor:\n'
        '    def __init__(self, n):\n        self.n, self.value = n, 0.0\n'
        '    def fill_(self, v):\n        self.value = v\n        return self\n'
        '    def __getitem__(self, i):\n        return self.value\n'
        'def empty(n, dtype=None, device=None):\n    return Tensor(n)\n'
        'from . import cuda, distributed  # noqa\n'),
    "torch/cuda/__init__.py": (
        'spun = []\n'
        'def is_available():\n    return True\n'
        'def device_count():\n    return 1\n'
        'def get_device_name(i):\n    return "a stand-in GPU"\n'
        'def set_device(d):\n    pass\n'
        'def synchronize():\n    pass\n'
        'def _sleep(cycles):\n    spun.append(cycles)\n'
        'class Event:\n'
        '    def __init__(self, enable_timing=False):\n        pass\n'
        '    def record(self):\n        pass\n'
        '    def synchronize(self):\n        pass\n'
        '    def elapsed_time(self, other):\n        return 10.0\n'
        'class nccl:\n    @staticmethod\n    def version():\n        return (2, 99, 1)\n'),
    "torch/distributed/__init__.py": (
        '_n = [1]\n'
        'def is_available():\n    return True\n'
        'def is_nccl_available():\n    return True\n'
        'def init_process_group(backend, rank, world_size, device_id=None):\n    _n[0] = world_size\n'
        'def all_reduce(x):\n    x.value *= _n[0]\n'
        'def destroy_process_group():\n    pass\n'),
}


class StandInTorch(unittest.TestCase):
    """The torch backend's jobs end to end with a stand-in torch: each
    worker runs its mode, the backend reads their results (the bytes of
    the all-reduces, the timed loop) — and with no plugin ever loaded,
    every check fails as on a machine whose NCCL does not load it, each
    with its fix."""

    def setUp(self):
        d = ptest.tmpdir(self)
        for name, text in STAND_IN_TORCH.items():
            os.makedirs(os.path.join(d, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        # the workers inherit this process's environment
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = d + (os.pathsep + old if old else "")

        def restore():
            if old is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = old
        self.addCleanup(restore)
        import proxytrace
        self.backend = _selftest_jobs.TorchBackend(ptest.PYTHON, ptest.PLUGIN, proxytrace.read_dumps)
        self.backend.check()
        self.d = d

    def test_the_workers_and_their_results(self):
        env = self.backend.environment()
        self.assertEqual((env["torch"], env["gpu"], env["ncclVersion"]), ("9.9.9+stand-in", "a stand-in GPU", "2.99.1"))
        for n in (2, 3):
            spec = _selftest_jobs.JobSpec("h%d" % n, os.path.join(self.d, "h%d" % n), n, plugin=False)
            res = self.backend.run(spec)
            self.assertTrue(res.ran, (res.problem, res.fix))
            per_rank = 8 * ((1 << 10) + (1 << 16) + (1 << 20) + (1 << 24))
            self.assertEqual(res.payload_bytes, 2 * (n - 1) * per_rank)
            self.assertIsNone(res.loop_seconds)
        spec = _selftest_jobs.JobSpec("t", os.path.join(self.d, "t"), 2, plugin=False, timed=True)
        res = self.backend.run(spec)
        self.assertTrue(res.ran, (res.problem, res.fix))
        self.assertEqual(len(res.loop_seconds), 2)
        self.assertTrue(all(s >= 0 for s in res.loop_seconds))

    def test_no_plugin_loaded_every_check_fails_with_its_fix(self):
        out = os.path.join(self.d, "out")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = _selftest.main(["--out", out, "--checks", "healthy,gpu-stall,not-entered", "--stall-ms", "100",
                                 "--hang-s", "0.2"], backend=self.backend)
        lines = buf.getvalue().splitlines()
        self.assertEqual(rc, 1, lines)
        self.assertIn("torch backend (torch 9.9.9+stand-in, ncclVersion 2.99.1, gpu a stand-in GPU)", lines[0])
        self.assertRegex(lines[1], r"^FAIL healthy     ranks 0, 1 left no dump with a network op in .* — fix: the "
                                   r"plugin did not load in those processes.*proxytrace doctor")
        for i, name in ((2, "gpu-stall"), (3, "not-entered")):
            self.assertRegex(lines[i], r"^FAIL %s +no stall watchdog dumped during the fault .* — fix: " % name)
        with open(os.path.join(out, "selftest.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["failed"], ["healthy", "gpu-stall", "not-entered"])
        self.assertEqual(check_of(doc, "gpu-stall")["notes"], ["no stall dump came while the job ran"])


FAKE_TORCH = {  # a stand-in torch package, for what the worker asks before a job
    "missing": 'raise ImportError("this torch cannot be imported (a test)")\n',
    "no GPU": ('__version__ = "9.9.9+test"\n'
               'class version:\n    hip = None\n'
               'class cuda:\n'
               '    @staticmethod\n    def is_available():\n        return False\n'
               '    @staticmethod\n    def device_count():\n        return 0\n'),
}


class CannotRunHere(unittest.TestCase):
    def test_no_torch_no_gpu(self):
        for what, code in FAKE_TORCH.items():
            with self.subTest(torch=what):
                d = ptest.tmpdir(self)
                os.makedirs(os.path.join(d, "torch"))
                with open(os.path.join(d, "torch", "__init__.py"), "w") as f:
                    f.write(code)
                out = os.path.join(d, "out")
                env = ptest.base_env(PYTHONPATH=d + os.pathsep + ptest.PACKAGE)
                rc, stdout, stderr = ptest.python_m(["selftest", "--out", out, "--plugin", ptest.PLUGIN], env=env)
                self.assertEqual(rc, 3, (stdout, stderr))
                self.assertEqual(stdout, "")
                self.assertIn("proxytrace selftest: cannot run here: ", stderr)
                self.assertIn("--emulate", stderr)
                self.assertIn("no torch in " if what == "missing" else "torch 9.9.9+test sees no GPU", stderr)
                with open(os.path.join(out, "selftest.json")) as f:
                    doc = json.load(f)
                self.assertEqual((doc["result"], doc["exitStatus"], doc["checks"]), ("cannot_run", 3, []))
                self.assertIn(doc["cannotRun"]["why"], stderr)

    def test_no_plugin(self):
        d = ptest.tmpdir(self)
        rc, stdout, stderr = ptest.python_m(["selftest", "--emulate", "--out", os.path.join(d, "out"),
                                             "--plugin", os.path.join(d, "missing.so")])
        self.assertEqual(rc, 3, stderr)
        self.assertIn("the plugin %s does not exist" % os.path.join(d, "missing.so"), stderr)


if __name__ == "__main__":
    unittest.main()
