#!/usr/bin/env python3
"""stall_latency.py — `make bench`: how long after the last progress of a hung
job its stall dumps are complete on disk, at the default PROXYTRACE_STALL_MS.

  stall_latency.py PROXYTRACE_CLI PLUGIN [NODES RANKS_PER_NODE]

Runs `proxytrace sim --real-time` with 8 x 8 ranks (64 communicators in one process, one
dumper thread), rank 3's GPU stalled, the hung job held 3 s past the stall
time, and PROXYTRACE_DUMP_DIR set; meanwhile it watches the directory and
notes, for each rank, when its file first holds a complete stall dump (its
"end" line). The figure per rank is that moment minus the communicator's
last progress (lastProgress_ns in the dump header; both CLOCK_REALTIME), and
for the job the last rank's file minus the job's last progress.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT_STALL_MS = 10000


def first_stall_dump(path):
    """The header of the first complete stall dump in a .jsonl file, or None."""
    head = None
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.endswith("\n"):
                    return None
                o = json.loads(line)
                if o["type"] == "dump":
                    head = o if o["trigger"] == "stall" else None
                elif o["type"] == "end" and head is not None:
                    return head
    except (OSError, ValueError):
        return None
    return None


def main(argv):
    cli, plugin = argv[0], argv[1]
    nodes, rpn = (argv[2], argv[3]) if len(argv) > 3 else ("8", "8")
    hold = DEFAULT_STALL_MS / 1000 + 3
    with tempfile.TemporaryDirectory() as d:
        # --real-time: the figure is the machine's (emulated time would give
        # the emulator's schedule, the same on every machine)
        sim = subprocess.Popen([cli, "sim", "--real-time", "--plugin", plugin, "--nodes", nodes, "--ranks-per-node", rpn,
                                "--stall", "3:0:5", "--hold", str(hold), "--dump-dir", d, "--quiet",
                                "--debug", "NONE"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seen, sizes = {}, {}
        while sim.poll() is None:
            for name in os.listdir(d):
                if not name.endswith(".jsonl") or name in seen:
                    continue
                p = os.path.join(d, name)
                size = os.stat(p).st_size
                if sizes.get(name) == size:
                    continue
                sizes[name] = size
                h = first_stall_dump(p)
                if h is not None:
                    seen[name] = (time.time_ns(), h)
            time.sleep(0.002)
        if sim.returncode != 3:  # 3: the job ran and hung, as asked
            print("stall latency: the emulator exited %d, not 3 (hung)" % sim.returncode)
            return 1
    if not seen:
        print("stall latency: no stall dump was written")
        return 1
    per_rank = sorted((t - h["lastProgress_ns"]) / 1e6 for t, h in seen.values())
    job = (max(t for t, _ in seen.values()) - max(h["lastProgress_ns"] for _, h in seen.values())) / 1e6
    n = len(per_rank)
    print("stall dump of a %sx%s-rank emulated job at PROXYTRACE_STALL_MS=%d: %d ranks' files complete "
          "%.0f / %.0f / %.0f ms (min / median / max) after their communicator's last progress; the last "
          "one %.0f ms after the job's last progress" % (nodes, rpn, DEFAULT_STALL_MS, n, per_rank[0],
                                                          per_rank[n // 2], per_rank[-1], job))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
