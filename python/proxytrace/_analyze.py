"""analyze() and read_dumps(): every rank's dumps in; the verdict, the
culprits and the stuck edges out (`proxytrace analyze --json`), or the
records themselves (`proxytrace analyze --records`) — from the C parser and
analyzer the command line uses, never a second reader of the dump formats
in Python. The results are that command's JSON (docs/analyze.md) made into
plain objects, so every field it has, now or later, is there."""

import json
import os
import subprocess

from . import _native
from ._errors import AnalyzeError
from ._record import Record


class Analysis(Record):
    """The JSON document of `proxytrace analyze --json`: schema, tool,
    version, verdict ("ok", "hang", "slow", "unusable", "incomplete"),
    summary, culprits (commHash, rank, host, pid, peer, channel, direction,
    cause, opCount, coll, step, nSteps, scope, candidates, dependents,
    slowFactor, possible, summary, evidence; consequenceOf and chain: a
    culprit that only follows, across communicators, from culprit number
    consequenceOf), stuck_edges, missing_ranks,
    behind_ranks, slow_edges (every slow edge: source "ops" for op durations,
    "metrics" for the step metrics, each with sender, receiver, channel,
    factor; metrics_slow_edges: the metrics ones alone), communicators, gaps (what the dumps could not
    show: kind "missing", "cut", "short", "stale", "unreadable" or "mask-off"),
    finished (cleanRanks, ranks), unknown_rank_dumps, no_communicator_dumps,
    skipped, counts,
    inputs, stats. str() is the summary line."""

    def __str__(self):
        return "%s: %s" % (self.verdict, self.summary)


class OpRecord(Record):
    """One proxy op record of a dump, a line of `proxytrace analyze
    --records` (docs/analyze.md, "Records"): rank, peer, channel, dir
    ("send"/"recv"), commHash, opCount, opId, key, state, status, nSteps,
    nBytes, func, proto, pattern, totalBytes, chunkSize, coll, seq,
    counters (the 11 ProxyDiag counters), lastCounter, create_ns, last_ns,
    posted_ns, send_ns, progress_ns, dump (format, nsTimes, host, pid, dev,
    dumpSeq, time_ns, trigger, drops: what the plugin had dropped or refused)
    and source ("file:line"). str() is the key."""

    def __str__(self):
        return "%s %d->%d(%s) chan %d" % (self.key, self.rank, self.peer,
                                          "S" if self.dir == "send" else "R", self.channel)


def _paths(paths, who="analyze()"):
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = [os.fsdecode(os.fspath(p)) for p in paths]
    if not out:
        raise ValueError("%s needs at least one dump file, log or directory" % who)
    # "--" is not taken by every version of the command: a path starting
    # with "-" is given as ./-name instead.
    return [p if not p.startswith("-") else os.path.join(".", p) for p in out]


def _run(args):
    """(process, its stderr as text) of the `proxytrace` command."""
    cmd = [_native.find_command()] + args
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return cmd, proc, proc.stderr.decode("utf-8", "replace")


def _failed(cmd, proc, err):
    return AnalyzeError("%s failed (exit %s): %s" % (" ".join(cmd[:2]), proc.returncode,
                                                    err.strip() or "no output"),
                        proc.returncode, err)


def read_dumps(paths, *, all_dumps=False):
    """The op records of the dumps under `paths` (files — JSON lines or
    legacy text, logs with the host's prefix — or directories of them), as
    the C parser reads them: a list of OpRecord, grouped by communicator
    hash and rank.

    all_dumps  False: the records of each communicator and rank's latest
               dump (what analyze() judges); True: of every dump, in the
               order read. A dump read twice (a rank's JSON file and its
               text twin, or its log) counts once, its JSON copy kept.

    A path that cannot be read, or lines that are not dumps, are not
    errors: they give no records (analyze(paths).inputs says what each
    path held). Raises AnalyzeError when the command fails.
    """
    args = ["analyze", "--records"] + (["--all-dumps"] if all_dumps else [])
    cmd, proc, err = _run(args + _paths(paths, "read_dumps()"))
    if proc.returncode != 0:
        raise _failed(cmd, proc, err)
    out = []
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        try:
            out.append(OpRecord(json.loads(line)))
        except ValueError:
            raise _failed(cmd, proc, "not a JSON line: %r" % line[:200])
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
    listed in `inputs` with its error (and in `gaps`), and with no dump at
    all the verdict is "unusable". When nothing is stuck or slow in what was
    read but the dumps do not show the whole job (a dump cut or short of
    records, ranks without a dump, a dump older than its peers'), the
    verdict is "incomplete" and `gaps` lists what is missing. Raises
    AnalyzeError when the command refuses the options or fails (a `chrome`
    file that cannot be written, or that is one of the inputs), with its
    message and exit status.
    """
    args = ["analyze", "--json"]
    if slow_factor is not None:
        args += ["--slow-factor", str(slow_factor)]
    if stall_ms is not None:
        args += ["--stall-ms", str(stall_ms)]
    if chrome is not None:
        args += ["--chrome", os.fsdecode(os.fspath(chrome))]
    cmd, proc, err = _run(args + _paths(paths))
    try:
        data = json.loads(proc.stdout.decode("utf-8", "surrogateescape"))
    except ValueError:
        data = None
    if proc.returncode not in (0, 1, 2, 4) or not isinstance(data, dict) or "verdict" not in data:
        raise _failed(cmd, proc, err)
    return Analysis(data)
