"""analyze(): every rank's dumps in, the verdict, the culprits and the stuck
edges out — from `proxytrace analyze --json`, the C parser and analyzer the
command line uses, never a second reader of the dump formats in Python.
The result is that command's JSON document (schema 1, docs/analyze.md) made
into plain objects, so every field it has, now or later, is there."""

import json
import os
import subprocess

from . import _native
from ._errors import AnalyzeError
from ._record import Record


class Analysis(Record):
    """The JSON document of `proxytrace analyze --json`: schema, tool,
    version, verdict ("ok", "hang", "slow", "unusable"), summary, culprits
    (commHash, rank, host, pid, peer, channel, direction, cause, opCount,
    coll, step, nSteps, scope, candidates, dependents, slowFactor, summary,
    evidence), stuck_edges, missing_ranks, behind_ranks, slow_edges,
    communicators, counts, inputs, stats. str() is the summary line."""

    def __str__(self):
        return "%s: %s" % (self.verdict, self.summary)


def _paths(paths):
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = [os.fsdecode(os.fspath(p)) for p in paths]
    if not out:
        raise ValueError("analyze() needs at least one dump file, log or directory")
    return out


def analyze(paths, *, slow_factor=None, stall_ms=None, chrome=None):
    """Read the dumps under `paths` (files — JSON lines or legacy text, logs
    with the host's prefix — or directories of them) and say where the job
    is stuck or slow.

    slow_factor  an edge this many times slower than its operation's median
                 is slow (the command's default 3; 1.5 .. 1000)
    stall_ms     an op of an on-demand dump that moved within this many ms
                 before the dump is still moving
    chrome       also write a Chrome-trace / Perfetto timeline to this file

    Returns an Analysis. A path that cannot be read is not an error: it is
    listed in `inputs` with its error, and with no dump at all the verdict
    is "unusable". Raises AnalyzeError when the command refuses the options
    or fails, with its message and exit status.
    """
    args = ["analyze", "--json"]
    if slow_factor is not None:
        args += ["--slow-factor", str(slow_factor)]
    if stall_ms is not None:
        args += ["--stall-ms", str(stall_ms)]
    if chrome is not None:
        args += ["--chrome", os.fsdecode(os.fspath(chrome))]
    # "--" is not taken by every version of the command: a path starting
    # with "-" is given as ./-name instead.
    args += [p if not p.startswith("-") else os.path.join(".", p) for p in _paths(paths)]
    cmd = [_native.find_command()] + args
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = proc.stderr.decode("utf-8", "replace")
    try:
        data = json.loads(proc.stdout.decode("utf-8", "surrogateescape"))
    except ValueError:
        data = None
    if proc.returncode not in (0, 1, 2) or not isinstance(data, dict) or "verdict" not in data:
        raise AnalyzeError("%s failed (exit %s): %s" % (" ".join(cmd[:2]), proc.returncode,
                                                       err.strip() or "no output"),
                           proc.returncode, err)
    return Analysis(data)
