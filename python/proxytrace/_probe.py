"""probe() and is_available(): which profiler plugin a given NCCL or RCCL
release would load, answered by libproxytrace-loader itself (pt_probe,
pt_probe_env, pt_load) and returned as its own JSON report made into plain
objects. Nothing here decides anything about plugin loading: the request
is handed to the library and its answer handed back."""

import ctypes
import json
import os
import subprocess
import sys

from . import _native
from ._errors import ProxytraceError
from ._record import Record

DEFAULT_HOST = "nccl-2.30"


class ProbeResult(Record):
    """The loader's result (pt_result_print_json's fields: host, mode,
    status, message, ok, value, value_origin, path, realpath, api_version,
    dump_hook, plugin_name, reused, candidates [name, file, source, outcome,
    api_version, dump_hook, reason], notes), plus `host_info` (the profile
    and the rules it applies) and `report` (pt_result_print's text, which
    str() returns)."""

    def __str__(self):
        return self.report


def _rule_names(flags):
    """The PT_HOSTF_* rules in `flags`, by name; a bit this package does not
    know yet is kept as its value ("0x4000"), never dropped."""
    names = [name for name, bit in _native.HOST_RULES if flags & bit]
    known = 0
    for _, bit in _native.HOST_RULES:
        known |= bit
    rest = flags & ~known
    names += ["0x%x" % (1 << i) for i in range(rest.bit_length()) if rest >> i & 1]
    return names


def _host_record(info):
    return Record(
        name=info.name.decode(),
        releases=info.releases.decode(),
        native_version=info.native_version,
        max_value=info.max_value,
        rules=_rule_names(info.flags),
    )


def hosts():
    """Every host profile the loader knows, in its order: name, releases,
    native_version (newest ncclProfiler_vN), max_value (longest value kept,
    0 = no limit) and rules (the PT_HOSTF_* rules, lower case)."""
    lib = _native.loader()
    return [_host_record(lib.host_info(i)) for i in range(lib.host_count())]


def parse_host(host):
    """The loader's number for a host profile name ("nccl-2.28", "2.27.7",
    "rccl", ...). ValueError names the profiles it knows."""
    lib = _native.loader()
    if isinstance(host, int) and not isinstance(host, bool):
        if lib.host_info(host) is None:
            raise ValueError("unknown host profile number %d" % host)
        return host
    out = ctypes.c_int()
    if not isinstance(host, str) or lib.pt_host_parse(host.encode(), ctypes.byref(out)) != 0:
        names = ", ".join(h.name for h in hosts())
        raise ValueError("unknown host profile %r: use %s, a release such as 2.28.9, "
                         "or nccl (the newest)" % (host, names))
    return out.value


def _fs(value, what):
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        return os.fsencode(value)
    if isinstance(value, bytes):
        return value
    raise TypeError("%s must be a string or a path, not %s" % (what, type(value).__name__))


def _envp(env):
    """A NULL-terminated char*[] of VAR=VALUE from a mapping."""
    items = []
    for key, value in env.items():
        k = _fs(key, "an environment variable name")
        v = _fs(value, "the value of %s" % key)
        if not k or b"=" in k or b"\0" in k or b"\0" in v:
            raise ValueError("bad environment variable name or value: %r" % (key,))
        items.append(k + b"=" + v)
    arr = (ctypes.c_char_p * (len(items) + 1))(*items)
    arr[len(items)] = None
    return arr


def _rccl_dir(value):
    """As `proxytrace probe --rccl-dir`: a folder, or the librccl file itself."""
    path = os.fsdecode(_fs(value, "rccl_dir"))
    if not os.path.exists(path):
        raise FileNotFoundError(2, "rccl_dir: no such file or folder", path)
    return path if os.path.isdir(path) else (os.path.dirname(path) or ".")


def _run(host, env, options, load):
    """pt_probe/pt_probe_env (or pt_load) with the request the options say.
    Returns (the C JSON text, the report text, the host number)."""
    lib = _native.loader()
    h = parse_host(host)
    req = _native.Request()
    lib.pt_request_init(ctypes.byref(req))
    lib.pt_request_from_environment(ctypes.byref(req))
    if not options.get("conf_files", True):
        req.flags &= ~_native.REQ_CONF_FILES
    keep = []  # the request borrows these bytes
    for field in ("plugin", "path", "name", "home", "net_plugin"):
        v = _fs(options.get(field), field)
        if v is not None:
            keep.append(v)
            setattr(req, field, v)
    if options.get("rccl_dir") is not None:
        v = os.fsencode(_rccl_dir(options["rccl_dir"]))
        keep.append(v)
        req.rccl_dir = v
    major = options.get("major") or 0
    if not isinstance(major, int) or isinstance(major, bool):
        raise TypeError("major must be an int")
    req.major = major

    res = ctypes.c_void_p()
    if load:
        rc = lib.pt_load(ctypes.byref(req), h, ctypes.byref(res))
    elif env is None:
        rc = lib.pt_probe(ctypes.byref(req), h, ctypes.byref(res))
    else:
        envp = _envp(env)
        rc = lib.pt_probe_env(ctypes.byref(req), h, envp, ctypes.byref(res))
    if not res:
        raise MemoryError("libproxytrace-loader: %s" % lib.pt_strerror(rc).decode())
    try:
        json_text = _native.capture(lib.pt_result_print_json, res)
        text = _native.capture(lib.pt_result_print, res)
    finally:
        lib.pt_result_free(res)
    return json_text, text, h


def _result(json_text, text, h):
    lib = _native.loader()
    data = json.loads(json_text) if isinstance(json_text, str) else json_text
    return ProbeResult(data, host_info=_host_record(lib.host_info(h)), report=text)


_OPTIONS = ("path", "name", "rccl_dir", "home", "net_plugin", "major", "conf_files")


def probe(host=DEFAULT_HOST, env=None, plugin=None, *, path=None, name=None, rccl_dir=None,
          home=None, net_plugin=None, major=0, conf_files=True, deep=False):
    """Which profiler plugin would `host` load, and why (or why not)?

    host        a profile: "nccl-2.23" ... "nccl-2.32", "nccl-2.27.3", "rccl", "rccl-2.31",
                a release ("2.28.9"), "nccl" (the newest)
    env         the environment to answer for (a mapping, as a process
                started with exactly it); None = this process's
    plugin      the NCCL_PROFILER_PLUGIN value (instead of the variable)
    path, name  an explicit file path (with '/'), or a short name
    rccl_dir    folder (or file) of the librccl in use, for RCCL's auto-load
    home        PROXYTRACE_HOME: also search <home>/lib, lib64, <home>
    net_plugin  the net plugin library the host loaded (2.28+ fallback)
    major       plugin major required under home (0 = this build's)
    conf_files  read NCCL_CONF_FILE / ~/.nccl.conf / /etc/nccl.conf
                (on hosts that do)
    deep        load the plugin for real (pt_load) in a child process, as
                `proxytrace probe --deep` does; by default only files are
                read and no plugin code runs

    Returns a ProbeResult; `ok` says whether a plugin would load.
    """
    options = dict(plugin=plugin, path=path, name=name, rccl_dir=rccl_dir, home=home,
                   net_plugin=net_plugin, major=major, conf_files=conf_files)
    if deep:
        return _deep(host, env, options)
    return _result(*_run(host, env, options, load=False))


def is_available(host=DEFAULT_HOST, env=None, plugin=None, **options):
    """True when `host` would load a profiler plugin (probe(...).ok)."""
    return probe(host, env, plugin, **options).ok


# ---- deep=True: pt_load() in a fresh process -----------------------------------

# LD_PRELOAD as this process started (a caller may have changed it since).
_STARTED_PRELOAD = os.environ.get("LD_PRELOAD")


def _child_environment(env):
    """The child's environment: `env` (or this process's), keeping the
    LD_PRELOAD this process started with (a runtime preloaded here, such as
    a sanitizer's, must stay preloaded for the library to load)."""
    out = dict(os.environ if env is None else env)
    if _STARTED_PRELOAD and "LD_PRELOAD" not in out:
        out["LD_PRELOAD"] = _STARTED_PRELOAD
    return out


def _deep_child(request):
    """In the child: pt_load() for the request (JSON: host, options) with
    this process's environment; prints the result and the report."""
    req = json.loads(request)
    json_text, text, _ = _run(req["host"], None, req["options"], load=True)
    sys.stdout.write(json.dumps({"result": json.loads(json_text), "report": text}) + "\n")
    return 0


def _deep(host, env, options):
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lib = _native.loader().path
    lib = os.path.abspath(lib) if os.sep in lib else lib
    if options.get("rccl_dir") is not None:
        options = dict(options, rccl_dir=_rccl_dir(options["rccl_dir"]))
    for field in ("plugin", "path", "name", "rccl_dir", "home", "net_plugin"):
        if options.get(field) is not None:
            options = dict(options, **{field: os.fsdecode(_fs(options[field], field))})
    parse_host(host)
    code = ("import sys; sys.path.insert(0, %r); from proxytrace import _native, _probe; "
            "_native.use_loader(%r); sys.exit(_probe._deep_child(sys.argv[1]))"
            % (pkg_parent, lib))
    request = json.dumps({"host": host, "options": options})
    proc = subprocess.run([sys.executable, "-c", code, request], env=_child_environment(env),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode < 0:
        raise ProxytraceError("loading the plugin killed the process (signal %d): the plugin "
                              "or one of its constructors crashes" % -proc.returncode)
    try:
        out = json.loads(proc.stdout.decode("utf-8", "surrogateescape"))
    except ValueError:
        raise ProxytraceError("the deep probe's child process failed (exit %d): %s"
                              % (proc.returncode, proc.stderr.decode(errors="replace").strip()))
    return _result(out["result"], out["report"], parse_host(host))
