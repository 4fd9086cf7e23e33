"""The jobs of `proxytrace selftest`, and the backends that run them.

The selftest's checks (proxytrace/_selftest.py) describe each job they need
as a JobSpec — how many ranks, with or without the plugin, which fault on
which rank — and hand it to a backend, which runs it and returns a
JobResult: the folder of dumps to judge (for a job with a fault, the dumps
as they were while the fault held the job), what went wrong if it did not
run, and the figures only it knows (the time of the timed loop, the bytes
the job's all-reduces had to carry). What the dumps say is judged by the
checks alone, with the same code for every backend, so a backend that
plants its fault in the wrong place fails the check instead of passing it.

Two backends:

  EmulatorBackend  `proxytrace sim`: the same job on the emulator (one
                   rank per node, NVIDIA NCCL's events), a GPU stall as
                   `--stall R:all:0`, a rank that never calls as `--skip R`,
                   held `--hang-s` emulated seconds. Runs anywhere, in
                   emulated time: the same result on every run.
  TorchBackend     real processes with torch.distributed and NCCL (or
                   RCCL) on this machine's GPU(s). Each process poses as a
                   host of its own (NCCL_HOSTID) with peer-to-peer and shared
                   memory off and sockets over loopback, so the data goes
                   through NCCL's network proxy even on one GPU. The worker
                   of each process is proxytrace/_selftest_worker.py.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from ._errors import AnalyzeError

GPU_STALL = "gpu_stall"
NOT_ENTERED = "not_entered"

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_selftest_worker.py")


class Fault:
    """A fault to plant: `kind` GPU_STALL (the rank's GPU busy with a spin
    before the collective, so it produces no data) or NOT_ENTERED (the rank
    sleeps on the host instead of calling it), on rank `rank`."""

    def __init__(self, kind, rank):
        self.kind = kind
        self.rank = rank

    def to_dict(self):
        return {"kind": self.kind, "rank": self.rank}


class JobSpec:
    """One job a check needs. `folder` belongs to the job: its dumps go to
    folder/dumps, its logs beside them."""

    def __init__(self, name, folder, ranks, *, plugin=True, fault=None, metrics=False,
                 timed=False, stall_ms=2000, hang_s=8.0):
        self.name = name
        self.folder = folder
        self.ranks = ranks
        self.plugin = plugin        # load the plugin (False: NCCL alone, for the cost)
        self.fault = fault          # a Fault, or None
        self.metrics = metrics      # PROXYTRACE_METRICS_INTERVAL_MS on
        self.timed = timed          # run the timed all-reduce loop (the cost)
        self.stall_ms = stall_ms    # PROXYTRACE_STALL_MS
        self.hang_s = hang_s        # how long the fault holds the job

    @property
    def dump_dir(self):
        return os.path.join(self.folder, "dumps")


class JobResult:
    """What a backend tells of a job it ran.

    ran            every process started and ended as the job meant
    problem, fix   why not, and what to do (None when it ran)
    dumps          the folder of dumps to judge
    logs           the files the processes wrote their output to
    loop_seconds   of a timed job: each rank's time for the timed loop
    payload_bytes  the bytes the job's all-reduces had to carry over the
                   network, all ranks together (2(N-1) x the size of
                   each call, whatever the algorithm); None when the
                   backend cannot say
    notes          what the backend did on the way, in words
    """

    def __init__(self, spec):
        self.spec = spec
        self.ran = False
        self.problem = None
        self.fix = None
        self.dumps = spec.dump_dir
        self.logs = []
        self.loop_seconds = None
        self.payload_bytes = None
        self.notes = []

    def failed(self, problem, fix):
        self.ran = False
        self.problem = problem
        self.fix = fix
        return self


class CannotRun(Exception):
    """This machine cannot run the backend's jobs: `why`, and `fix`."""

    def __init__(self, why, fix):
        super().__init__(why)
        self.why = why
        self.fix = fix


class Backend:
    """What the checks need of a backend."""

    name = "?"
    measures_cost = False    # whether a timed loop with and without the plugin means anything
    cost_skip_reason = ""    # why not, in words, when it does not

    def check(self):
        """Raise CannotRun when this machine cannot run the jobs."""

    def environment(self):
        """What the jobs run on, for the report (a dict)."""
        return {}

    def run(self, spec):
        """Run the job; a JobResult."""
        raise NotImplementedError


def _tail(path, n=6):
    try:
        with open(path, errors="replace") as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


# ---- the emulator --------------------------------------------------------------

class EmulatorBackend(Backend):
    """The jobs on `proxytrace sim`: every rank a node of its own, a 1 MiB
    all-reduce 4 times, the fault in the last one, the job held hang_s
    emulated seconds so the stall watchdog dumps it while it hangs."""

    name = "emulator"
    cost_skip_reason = ("emulated time does not show what the plugin costs (the emulator's clock "
                        "stands still while the plugin runs); `make bench` measures it")

    def __init__(self, cli, plugin=None, host="nccl-2.28"):
        self.cli = cli
        self.plugin = plugin
        self.host = host

    def check(self):
        if not (self.cli and os.access(self.cli, os.X_OK)):
            raise CannotRun("the proxytrace command is not found (%s)" % self.cli,
                            "build it (make) or set PROXYTRACE_CLI")
        if self.plugin and not os.path.exists(self.plugin):
            raise CannotRun("the plugin %s does not exist" % self.plugin,
                            "build it (make), or name it with --plugin")

    def environment(self):
        return {"backend": self.name, "emulator": self.cli, "host": self.host,
                "plugin": self.plugin}

    def fault_options(self, fault):
        """The sim's options that plant `fault`."""
        if fault.kind == GPU_STALL:
            return ["--stall", "%d:all:0" % fault.rank]
        if fault.kind == NOT_ENTERED:
            return ["--skip", str(fault.rank)]
        raise ValueError("no such fault: %r" % fault.kind)

    def sim_args(self, spec):
        args = ["sim", "--quiet", "--host", self.host, "--nodes", str(spec.ranks),
                "--ranks-per-node", "1", "--ops", "allreduce:1M", "--iters", "4",
                "--dump-dir", spec.dump_dir,
                "--truth-json", os.path.join(spec.folder, "truth.json"),
                "--env", "PROXYTRACE_STALL_MS=%d" % spec.stall_ms]
        if self.plugin:
            args += ["--plugin", self.plugin]
        if spec.metrics:
            args += ["--env", "PROXYTRACE_METRICS_INTERVAL_MS=1000"]
        if spec.fault:
            args += self.fault_options(spec.fault) + ["--hold", "%g" % spec.hang_s]
        return args

    def run(self, spec):
        res = JobResult(spec)
        if not spec.plugin or spec.timed:
            return res.failed("the emulator runs no job without the plugin or timed",
                              "ask the emulator for the healthy and fault jobs only")
        os.makedirs(spec.dump_dir, exist_ok=True)
        log = os.path.join(spec.folder, "sim.log")
        res.logs = [log]
        cmd = [self.cli] + self.sim_args(spec)
        with open(log, "w") as f:
            f.write("$ %s\n" % " ".join(cmd))
            f.flush()
            rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
        want = 3 if spec.fault else 0  # the sim's "it hung" / "it completed"
        if rc != want:
            return res.failed("proxytrace sim exited %d, not %d: %s" % (rc, want, _tail(log)),
                              "read %s" % log)
        res.ran = True
        res.notes.append("emulated %s, %d ranks on %d nodes" % (self.host, spec.ranks, spec.ranks))
        return res


# ---- torch + NCCL --------------------------------------------------------------

def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TorchBackend(Backend):
    """The jobs as real processes of torch.distributed (NCCL backend) on
    this machine, each posing as a host of its own."""

    name = "torch"
    measures_cost = True

    def __init__(self, python, plugin, read_dumps, start_timeout_s=180.0):
        self.python = python
        self.plugin = plugin
        self.read_dumps = read_dumps  # proxytrace.read_dumps, to watch a hung job's folder
        self.start_timeout_s = start_timeout_s
        self.settle_s = None      # after the first stall dump, for the other ranks' watchdogs
                                  # (None: 3 of their polls, stall/20 each, 0.3..1 s)
        self.signal_wait_s = 5.0  # for the dumps asked by signal
        self.info = None

    def check(self):
        try:
            p = subprocess.run([self.python, _WORKER, "info"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CannotRun("%s could not be asked about torch: %s" % (self.python, e),
                            "run it with the Python of the job (--python), or --emulate")
        try:
            info = json.loads(p.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise CannotRun("%s did not say what torch it has (exit %d): %s" % (
                self.python, p.returncode, p.stderr.decode("utf-8", "replace").strip()[-300:]),
                "run it with the Python of the job (--python), or --emulate")
        self.info = info
        if info.get("error"):
            raise CannotRun(info["error"], info.get("fix") or "--emulate runs the checks on the emulator")
        if not (self.plugin and os.path.exists(self.plugin)):
            raise CannotRun("the plugin librccl-profiler-proxytrace.so is not found (%s)" % self.plugin,
                            "build it (make), or name it with --plugin")

    def environment(self):
        env = {"backend": self.name, "python": self.python, "plugin": self.plugin}
        env.update({k: v for k, v in (self.info or {}).items() if k not in ("error", "fix")})
        return env

    def _env(self, spec, rank, port):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PROXYTRACE_") and k not in (
                   "NCCL_PROFILER_PLUGIN", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                   "MASTER_PORT")}
        env.update({
            "RANK": str(rank), "WORLD_SIZE": str(spec.ranks), "LOCAL_RANK": str(rank),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            # each process a host of its own, the data through the network proxy
            "NCCL_HOSTID": "proxytrace-selftest-host%d" % rank,
            "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_NET": "Socket",
            "NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_DISABLE": "1", "NCCL_NVLS_ENABLE": "0",
            "NCCL_DEBUG": os.environ.get("NCCL_DEBUG") or "WARN",
            "PYTHONUNBUFFERED": "1",
        })
        if spec.plugin:
            env.update({
                "NCCL_PROFILER_PLUGIN": self.plugin,
                "PROXYTRACE_DUMP_DIR": spec.dump_dir,
                "PROXYTRACE_STALL_MS": str(spec.stall_ms),
                "PROXYTRACE_DUMP_SIGNAL": "USR1",
            })
            if spec.metrics:
                env["PROXYTRACE_METRICS_INTERVAL_MS"] = "1000"
        return env

    def _worker_args(self, spec, rank):
        mode = "timed" if spec.timed else (spec.fault.kind if spec.fault else "healthy")
        args = [self.python, _WORKER, "run", "--mode", mode, "--rank", str(rank),
                "--ranks", str(spec.ranks), "--out", os.path.join(spec.folder, "rank%d.json" % rank)]
        if spec.fault:
            args += ["--fault-rank", str(spec.fault.rank), "--hang-s", "%g" % spec.hang_s]
        return args

    def run(self, spec):
        res = JobResult(spec)
        os.makedirs(spec.dump_dir, exist_ok=True)
        port = _free_port()
        procs = []
        for r in range(spec.ranks):
            log = os.path.join(spec.folder, "rank%d.log" % r)
            res.logs.append(log)
            with open(log, "w") as f:
                procs.append(subprocess.Popen(self._worker_args(spec, r), env=self._env(spec, r, port),
                                              stdout=f, stderr=subprocess.STDOUT,
                                              start_new_session=True))
        deadline = time.monotonic() + self.start_timeout_s + spec.hang_s
        try:
            if spec.fault and spec.plugin:
                self._take_hung_dumps(spec, procs, res, deadline)
            for r, p in enumerate(procs):
                left = deadline - time.monotonic()
                try:
                    p.wait(timeout=max(left, 0.1))
                except subprocess.TimeoutExpired:
                    return res.failed("rank %d did not end within %d s: %s" % (
                        r, self.start_timeout_s + spec.hang_s, _tail(res.logs[r])),
                        "read %s (NCCL_DEBUG=INFO shows where NCCL waits)" % res.logs[r])
        finally:
            for p in procs:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    p.wait()
        for r, p in enumerate(procs):
            if p.returncode != 0:
                return res.failed("rank %d exited %d: %s" % (r, p.returncode, _tail(res.logs[r])),
                                  "read %s" % res.logs[r])
        seconds, moved = [], 0.0
        for r in range(spec.ranks):
            try:
                with open(os.path.join(spec.folder, "rank%d.json" % r)) as f:
                    out = json.load(f)
            except (OSError, ValueError) as e:
                return res.failed("rank %d wrote no result: %s" % (r, e), "read %s" % res.logs[r])
            seconds.append(out.get("loop_seconds"))
            # a ring or a tree all-reduce of S bytes sends 2(N-1)/N x S from each rank
            moved += 2.0 * (spec.ranks - 1) / spec.ranks * out.get("allreduce_bytes", 0)
        res.loop_seconds = seconds if spec.timed else None
        res.payload_bytes = int(round(moved))
        res.ran = True
        return res

    def _take_hung_dumps(self, spec, procs, res, deadline):
        """While the fault holds the job: once a rank's stall watchdog has
        dumped (and the others' had a moment to), have every rank that has
        not dump on the signal (a rank that
        never entered the call has no op waiting, so its watchdog stays
        quiet), then copy the folder as it is: the dumps of the hang. The
        job then ends by itself (the spin or the sleep ends)."""
        def dumped(trigger):
            try:
                recs = self.read_dumps(spec.dump_dir, all_dumps=True)
            except AnalyzeError:
                return set()
            return {r.rank for r in recs if r.dump.trigger == trigger}

        # Short: a rank that never dumps on its own is signalled after it,
        # and its dump must not be older than the others' by the stall time
        # (`analyze` would read the older ones as stale).
        settle = self.settle_s if self.settle_s is not None else min(1.0, max(0.3, 3 * spec.stall_ms / 20000.0))
        stalled, first = set(), None
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            stalled = dumped("stall")
            if stalled and first is None:
                first = time.monotonic()
            if first is not None and (time.monotonic() - first > settle or len(stalled) == spec.ranks):
                break
            time.sleep(0.1)
        if not stalled:
            res.notes.append("no stall dump came while the job ran")
            return
        res.notes.append("ranks %s dumped by the stall watchdog" % _ranks(stalled))
        quiet = [r for r in range(spec.ranks) if r not in stalled and procs[r].poll() is None]
        for r in quiet:
            os.kill(procs[r].pid, signal.SIGUSR1)
        if quiet:
            wait_until = min(deadline, time.monotonic() + self.signal_wait_s)
            while time.monotonic() < wait_until and not set(quiet) <= dumped("signal"):
                time.sleep(0.1)
            got = dumped("signal") & set(quiet)
            res.notes.append("ranks %s asked to dump by SIGUSR1 (PROXYTRACE_DUMP_SIGNAL)%s" % (
                _ranks(quiet), "" if got == set(quiet) else "; no dump came from ranks %s" % _ranks(set(quiet) - got)))
        hung = os.path.join(spec.folder, "hung-dumps")
        shutil.rmtree(hung, ignore_errors=True)
        shutil.copytree(spec.dump_dir, hung)
        res.dumps = hung
        res.notes.append("the dumps of the hang copied to %s while it hung" % hung)


def _ranks(ranks):
    return ", ".join(str(r) for r in sorted(ranks))


def default_python():
    return sys.executable or "python3"
