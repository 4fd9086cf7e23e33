"""enable(): make the NCCL or RCCL of this process load proxytrace.

It sets NCCL_PROFILER_PLUGIN (and the PROXYTRACE_* variables the caller
passes) in the process environment, where NCCL reads them when it creates
its first communicator, and then asks the loader whether the NCCL release
in use would load that file with this environment — so a plugin that would
be skipped is reported at once instead of after a silent run. The release is
the one torch carries when torch is importable (torch.cuda.nccl.version(),
RCCL on ROCm builds); torch is never required.
"""

import difflib
import os
import sys

from . import _native
from ._errors import EnableError
from ._probe import hosts, parse_host, probe


def _version_tuple(v):
    """torch.cuda.nccl.version(): a tuple (2, 21, 5[, suffix]) in current
    torch, NCCL_VERSION_CODE as an int in old ones."""
    if isinstance(v, int):
        if v >= 10000:  # NCCL 2.9 and later: major*10000 + minor*100 + patch
            return (v // 10000, v // 100 % 100, v % 100)
        return (v // 1000, v // 100 % 10, v % 100)
    return tuple(int(x) for x in tuple(v)[:3])


def torch_host():
    """(host profile text, what it was read from) for the torch importable
    here, or (None, why not)."""
    try:
        import torch
    except ImportError:
        return None, "torch is not importable"
    if getattr(getattr(torch, "version", None), "hip", None):
        return "rccl", "torch %s built for ROCm (RCCL)" % getattr(torch, "__version__", "?")
    try:
        v = _version_tuple(torch.cuda.nccl.version())
    except Exception as e:  # a CPU-only torch, or one without NCCL
        return None, "torch.cuda.nccl.version() failed: %s" % e
    text = ".".join(str(x) for x in v)
    return text, "NCCL %s from torch.cuda.nccl.version()" % text


def _distributed_started():
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch else None
    try:
        return bool(dist and dist.is_available() and dist.is_initialized())
    except Exception:
        return False


# The plugin's settings, enable()'s keywords: each sets PROXYTRACE_<NAME>,
# the variables the plugin reads (src/plugin/config.c; README,
# "Environment"; tests/python/test_enable.py checks the two agree).
SETTINGS = ("dump_dir", "stall_ms", "dump_signal", "dump_interval_ms", "dump_max_mb",
            "metrics_interval_ms", "metrics_dir", "metrics_channels", "max_ops",
            "max_memory_mb", "clock", "rccl_diag")
_ARGUMENTS = ("plugin_path", "host", "nccl_version")


def _variable(key):
    """PROXYTRACE_<NAME> for a keyword (stall_ms, or the variable's own
    name); TypeError, naming the keywords enable() takes, for any other."""
    name = key.upper()
    if name.startswith("PROXYTRACE_"):
        name = name[len("PROXYTRACE_"):]
    if name.lower() in SETTINGS:
        return "PROXYTRACE_" + name
    close = difflib.get_close_matches(name.lower(), SETTINGS + _ARGUMENTS, n=1)
    raise TypeError("enable() got an unexpected keyword argument %r%s; it takes %s, and one keyword "
                    "per setting of the plugin (PROXYTRACE_<NAME>): %s"
                    % (key, " (did you mean %r?)" % close[0] if close else "",
                       ", ".join(_ARGUMENTS), ", ".join(sorted(SETTINGS))))


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def default_plugin():
    """The plugin installed (or built) beside libproxytrace-loader."""
    folder = _native.loader_dir()
    if folder is None:
        raise EnableError("no plugin_path given, and the folder of %s is unknown: pass "
                          "plugin_path=" % _native.loader().path)
    path = os.path.join(folder, _native.PLUGIN_NAME)
    if not os.path.exists(path):
        raise EnableError("no plugin_path given, and there is no %s beside "
                          "libproxytrace-loader in %s: pass plugin_path="
                          % (_native.PLUGIN_NAME, folder))
    return path


def enable(plugin_path=None, *, host=None, nccl_version=None, **settings):
    """Set NCCL_PROFILER_PLUGIN (and PROXYTRACE_* variables) in this process
    and check that the NCCL/RCCL in use would load the plugin. Call it
    before torch.distributed.init_process_group().

    plugin_path   the plugin file; None = the one beside libproxytrace-loader
    host          the loader's host profile ("nccl-2.28", "rccl", ...)
    nccl_version  or the NCCL release, "2.28.9" or (2, 28, 9); when neither
                  is given, the release torch carries
    settings      the plugin's settings (SETTINGS), each a PROXYTRACE_*
                  variable: dump_dir="dumps" sets PROXYTRACE_DUMP_DIR=dumps;
                  None removes one. Another keyword (a typo, stal_ms=) is a
                  TypeError that names the valid ones; nothing is set.

    Returns the loader's ProbeResult. Raises EnableError (the environment
    left as it was) when the host would not load the plugin, naming every
    file it tried and why each was refused.
    """
    names = {key: _variable(key) for key in settings}
    if _distributed_started():
        raise EnableError("torch.distributed is already initialized: NCCL reads "
                          "NCCL_PROFILER_PLUGIN when it creates its first communicator, so "
                          "call proxytrace.enable() before init_process_group()")
    if host is not None:
        source = "host=%r" % (host,)
    elif nccl_version is not None:
        host = (".".join(str(x) for x in _version_tuple(nccl_version))
                if not isinstance(nccl_version, str) else nccl_version)
        source = "NCCL %s (nccl_version=)" % host
    else:
        host, source = torch_host()
        if host is None:
            raise EnableError("which NCCL release will load the plugin? %s; pass "
                              "nccl_version='2.28.9' or host='rccl'" % source)
    try:
        parse_host(host)
    except ValueError:
        known = "; ".join("%s (%s)" % (h.name, h.releases) for h in hosts())
        raise EnableError("%s: the loader has no profile for it, so it cannot say whether "
                          "it would load a profiler plugin (NCCL releases before the "
                          "profiler plugin interface have none). Profiles: %s"
                          % (source, known))

    plugin = os.path.abspath(_text(plugin_path)) if plugin_path is not None else default_plugin()
    changes = {"NCCL_PROFILER_PLUGIN": plugin}
    for key, value in settings.items():
        changes[names[key]] = None if value is None else _text(value)

    saved = {k: os.environ.get(k) for k in changes}
    for k, v in changes.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    result = probe(host)
    if not result.ok:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        raise EnableError("%s, profile %s, would not load %s: %s (%s). The environment is "
                          "left as it was. The loader's report:\n%s"
                          % (source, result.host_info.name, plugin, result.status,
                             result.message, result.report), result)
    return result
