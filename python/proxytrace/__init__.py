"""proxytrace for Python: is the profiler plugin available, would this NCCL or
RCCL load it, and what do its dumps say — answered by proxytrace's own C
code (libproxytrace-loader through ctypes, `proxytrace analyze --json` and
`--records` for dumps), never by a second implementation in Python.
Standard library only; torch is used when it is importable, never required.

    import proxytrace
    proxytrace.enable(dump_dir="dumps")        # before init_process_group()
    r = proxytrace.probe("nccl-2.28")          # the loader's answer
    r.ok, r.realpath, r.api_version, [c.outcome for c in r.candidates]
    proxytrace.is_available("rccl")
    a = proxytrace.analyze("dumps/")           # `proxytrace analyze --json`
    a.verdict, a.culprits[0].rank, a.culprits[0].cause
    for r in proxytrace.read_dumps("dumps/"):  # `proxytrace analyze --records`
        r.rank, r.peer, r.channel, r.dir, r.key, r.counters.transmitted

`python3 -m proxytrace probe|analyze ...` is the `proxytrace` command.
"""

__version__ = "1.0.0"

from ._errors import (AnalyzeError, EnableError, LibraryNotFoundError,  # noqa: E402
                      ProxytraceError)
from ._record import Record  # noqa: E402
from ._probe import ProbeResult, hosts, is_available, probe  # noqa: E402
from ._enable import enable  # noqa: E402
from ._analyze import Analysis, OpRecord, analyze, read_dumps  # noqa: E402

__all__ = [
    "probe", "is_available", "hosts", "enable", "analyze", "read_dumps",
    "ProbeResult", "Analysis", "OpRecord", "Record",
    "ProxytraceError", "LibraryNotFoundError", "EnableError", "AnalyzeError",
]
