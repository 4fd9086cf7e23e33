"""One process of a `proxytrace selftest` job on torch + NCCL (or RCCL).

Run by the selftest's TorchBackend (proxytrace/_selftest_jobs.py) as a file,
not as a module of the package, with the environment it sets: RANK,
WORLD_SIZE, MASTER_ADDR/MASTER_PORT on 127.0.0.1, NCCL_HOSTID and the
transports that send the data through NCCL's network proxy, the plugin and
its PROXYTRACE_* variables. Standard library and torch only.

  _selftest_worker.py info
      one JSON line: torch's version, the GPU, the NCCL (or RCCL) torch
      carries and the library file it loads; or "error" and "fix" when this
      Python cannot run the jobs (no torch, no GPU, no NCCL in torch).
  _selftest_worker.py run --mode MODE --rank R --ranks N --out FILE
                      [--fault-rank F --hang-s S]
      healthy      all-reduces of 1 KiB, 64 KiB, 1 MiB and 16 MiB, 8 of each
      gpu_stall    a warm-up, then rank F queues a GPU spin of about S
                   seconds on its stream before four 1 MiB all-reduces: its
                   collective kernel starts S seconds late, its GPU produces
                   no data meanwhile, and the peers' proxies wait
      not_entered  the same, rank F sleeping S seconds on the host instead
                   of calling the all-reduces
      timed        a warm-up, then a timed loop of 100 x (4 MiB + 64 KiB)
                   all-reduces, the same with and without the plugin
      Each all-reduce's result is checked. FILE gets one JSON object: the
      bytes of the all-reduces called (allreduce_bytes) and the timed
      loop's seconds (loop_seconds).
"""

import argparse
import json
import os
import sys
import time


def info():
    out = {"python": sys.executable}
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means no torch here
        out["error"] = "no torch in %s (%s: %s)" % (sys.executable, type(e).__name__, e)
        out["fix"] = ("run it with the Python that has torch (proxytrace selftest --python EXE, or "
                      "python3 -m proxytrace selftest in the job's environment), or --emulate to run the "
                      "checks on the emulator")
        return out
    out["torch"] = torch.__version__
    hip = getattr(torch.version, "hip", None)
    out["hostLib"] = "rccl" if hip else "nccl"
    if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        out["error"] = "torch %s sees no GPU (torch.cuda.is_available() is False)" % torch.__version__
        out["fix"] = "run it on a machine with an NVIDIA or AMD GPU, or --emulate to run the checks on the emulator"
        return out
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_nccl_available():
        out["error"] = "torch %s has no NCCL backend (torch.distributed.is_nccl_available() is False)" % (
            torch.__version__)
        out["fix"] = "a torch built with NCCL (the CUDA wheels are), or --emulate"
        return out
    out["gpus"] = torch.cuda.device_count()
    out["gpu"] = torch.cuda.get_device_name(0)
    try:
        v = torch.cuda.nccl.version()
        if isinstance(v, int):  # old torch: NCCL_VERSION_CODE
            v = (v // 10000, v // 100 % 100, v % 100) if v >= 10000 else (v // 1000, v // 100 % 10, v % 100)
        out["ncclVersion"] = ".".join(str(x) for x in tuple(v)[:3])
    except Exception as e:  # noqa: BLE001
        out["ncclVersion"] = None
        out["ncclVersionError"] = str(e)
    out["ncclLibrary"] = loaded_library()
    try:  # the pip wheel torch's CUDA builds depend on (nvidia-nccl-cu12, -cu13)
        from importlib import metadata
        wheels = [d.metadata["Name"] + " " + d.version for d in metadata.distributions()
                  if (d.metadata["Name"] or "").lower().startswith("nvidia-nccl")]
        out["ncclWheel"] = ", ".join(sorted(wheels)) or None
    except Exception:  # noqa: BLE001
        out["ncclWheel"] = None
    if hip:
        out["hip"] = hip
    return out


def loaded_library():
    """The libnccl / librccl file this process has mapped (torch.cuda.nccl
    loads it), or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                name = os.path.basename(path)
                if name.startswith("libnccl.so") or name.startswith("librccl.so"):
                    return path
    except OSError:
        pass
    return None


def spin_cycles(torch, seconds):
    """GPU clock cycles that torch.cuda._sleep spins for about `seconds`,
    measured on this GPU (its clock differs from model to model)."""
    cycles = 20000000
    rate = None
    for _ in range(2):  # the first one warms the GPU up
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        rate = cycles / max(start.elapsed_time(end) / 1000.0, 1e-6)
    return int(rate * seconds)


def run(args):
    import torch
    import torch.distributed as dist

    rank, n = args.rank, args.ranks
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    cycles = spin_cycles(torch, args.hang_s) if args.mode == "gpu_stall" and rank == args.fault_rank else 0
    dist.init_process_group("nccl", rank=rank, world_size=n, device_id=dev)
    moved = [0]

    def allreduce(size, times):
        x = torch.empty(size // 4, dtype=torch.float32, device=dev)
        for _ in range(times):
            x.fill_(1.0)
            dist.all_reduce(x)
            moved[0] += size
        return x

    def check(x):
        torch.cuda.synchronize()
        got = (float(x[0]), float(x[-1]))
        if got != (float(n), float(n)):
            raise SystemExit("rank %d: all_reduce of ones gave %r, not %d" % (rank, got, n))

    result = {"rank": rank, "mode": args.mode, "loop_seconds": None}
    if args.mode == "healthy":
        for size in (1 << 10, 1 << 16, 1 << 20, 1 << 24):
            check(allreduce(size, 8))
    elif args.mode in ("gpu_stall", "not_entered"):
        for size in (1 << 10, 1 << 16, 1 << 20):
            check(allreduce(size, 4))
        if rank == args.fault_rank:
            if args.mode == "gpu_stall":
                torch.cuda._sleep(cycles)  # queued before the collective, on its stream
            else:
                time.sleep(args.hang_s)
        check(allreduce(1 << 20, 4))
    elif args.mode == "timed":
        check(allreduce(1 << 22, 4))
        check(allreduce(1 << 16, 4))
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(100):
            a = allreduce(1 << 22, 1)
            b = allreduce(1 << 16, 1)
        torch.cuda.synchronize()
        result["loop_seconds"] = time.perf_counter() - t0
        check(a)
        check(b)
    result["allreduce_bytes"] = moved[0]
    dist.destroy_process_group()
    with open(args.out, "w") as f:
        json.dump(result, f)
    print("rank %d: %s done" % (rank, args.mode), flush=True)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="_selftest_worker.py")
    sub = p.add_subparsers(dest="what", required=True)
    sub.add_parser("info")
    r = sub.add_parser("run")
    r.add_argument("--mode", required=True, choices=("healthy", "gpu_stall", "not_entered", "timed"))
    r.add_argument("--rank", type=int, required=True)
    r.add_argument("--ranks", type=int, required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--fault-rank", type=int, default=-1)
    r.add_argument("--hang-s", type=float, default=0.0)
    args = p.parse_args(argv)
    if args.what == "info":
        print(json.dumps(info()))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
