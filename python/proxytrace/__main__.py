"""python3 -m proxytrace: the `proxytrace` command for Python installs.

`probe` is answered here through libproxytrace-loader (so it works with only
the library installed), with the options, output and exit status of
`proxytrace probe`; every other command (`analyze`, `sim`, `demo`) runs the
`proxytrace` program itself with the same arguments and exits as it does.
"""

import json
import os
import re
import subprocess
import sys

from . import _native, _probe
from ._errors import ProxytraceError

USAGE = """usage: python3 -m proxytrace <command> [options]

Commands:
  probe    show which profiler plugin a host would load, and why
  analyze  read proxytrace dumps and say where a job is stuck (runs `proxytrace analyze`)
  sim      emulate NCCL/RCCL on the CPU and drive a profiler plugin (runs `proxytrace sim`)
  demo     run the demo job with the built plugin (runs `proxytrace demo`)

Run 'python3 -m proxytrace <command> --help' for the options of one command.
"""

PROBE_USAGE = """usage: python3 -m proxytrace probe [options] [VAR=VALUE ...]

Show which profiler plugin a host would load with the current environment
(changed by the VAR=VALUE arguments), every file it would try in order, and
why each was refused. No plugin code runs unless --deep is given. The answer
comes from libproxytrace-loader, as for `proxytrace probe`.

Options:
  --host PROFILE      nccl-2.23 ... nccl-2.30, nccl-2.27.3, rccl (default rccl)
  --plugin VALUE      the NCCL_PROFILER_PLUGIN value to use
  --path FILE         an explicit plugin path (must contain '/')
  --name NAME         a short name: the host tries libnccl-profiler-NAME.so
  --rccl-dir DIR      directory of the librccl in use, for the
                      RCCL_ENABLE_PROXY_TRACE auto-load (a file: its directory)
  --home DIR          PROXYTRACE_HOME: also search DIR/lib, DIR/lib64, DIR
  --net-plugin FILE   net plugin library the host loaded (2.28+ fallback)
  --major N           plugin major required under --home (default: this build's)
  -i, --ignore-environment
                      start from an empty environment (only VAR=VALUE)
  --no-conf           do not read NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf
  --deep              load the plugin for real, in a child process
  --json              print one JSON object
  -q, --quiet         print nothing; only the exit status
  -h, --help          this text

Variables read: NCCL_PROFILER_PLUGIN, RCCL_ENABLE_PROXY_TRACE, PROXYTRACE_HOME,
LD_LIBRARY_PATH, NCCL_CONF_FILE, HOME.

Exit status:
  0  a plugin would be loaded
  1  internal error (out of memory, the --deep child crashed, no library)
  2  usage error or contradictory request
  3  no plugin found
  4  disabled (NCCL_PROFILER_PLUGIN=none)
  5  a plugin was found, but this host would not use it (wrong major,
     no ncclProfiler_vN it knows, invalid table)
  6  a file was found, but the dynamic loader refused it
  7  NCCL_PROFILER_PLUGIN is longer than this host accepts
"""

# The loader's status -> the exit status of `proxytrace probe` (tools/probe.c).
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_CODES = {
    "PT_OK": 0,
    "PT_EINVAL": EXIT_USAGE,
    "PT_ENOTFOUND": 3,
    "PT_EDISABLED": 4,
    "PT_EINCOMPATIBLE": 5,
    "PT_EBADPLUGIN": 5,
    "PT_ELOAD": 6,
    "PT_ENAMETOOLONG": 7,
}

_VALUE_OPTIONS = {"--host": "host", "--plugin": "plugin", "--path": "path", "--name": "name",
                  "--rccl-dir": "rccl_dir", "--home": "home", "--net-plugin": "net_plugin"}


class _Usage(Exception):
    pass


def _err(msg):
    sys.stderr.write("proxytrace probe: %s\n" % msg)


def _parse_probe(args):
    """Options as `proxytrace probe` reads them; -i and VAR=VALUE change this
    process's environment, as they do that command's (the --deep child
    inherits it). Returns (options, the arguments a --deep child gets)."""
    o = {"host": "rccl", "major": 0, "no_conf": False, "deep": False, "in_process": False,
         "json": False, "quiet": False, "record": False}
    child_args = []
    if "-i" in args or "--ignore-environment" in args:
        os.environ.clear()
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            sys.stdout.write(PROBE_USAGE)
            raise SystemExit(0)
        if a in ("-i", "--ignore-environment"):
            i += 1
            continue
        if a in _VALUE_OPTIONS or a == "--major":
            if i + 1 >= len(args):
                _err("%s needs a value (see --help)" % a)
                raise _Usage()
            v = args[i + 1]
            if a == "--major":
                m = int(v) if re.fullmatch(r"\s*[+-]?[0-9]+", v) else 0  # as strtol
                if not 1 <= m <= 1000:
                    _err("--major needs a positive number, got '%s'" % v)
                    raise _Usage()
                o["major"] = m
            else:
                o[_VALUE_OPTIONS[a]] = v
            child_args += [a, v]
            i += 2
            continue
        if a == "--deep":
            o["deep"] = True
        elif a in ("--no-conf", "--in-process", "--json", "--record"):
            o[a[2:].replace("-", "_")] = True
            child_args.append(a)
        elif a in ("-q", "--quiet"):
            o["quiet"] = True
            child_args.append(a)
        elif not a.startswith("-") and "=" in a and not a.startswith("="):
            var, value = a.split("=", 1)
            if len(var) >= 256:
                _err("variable name too long in '%.40s...'" % a)
                raise _Usage()
            os.environ[var] = value
        else:
            _err("unknown argument '%s' (see --help)" % a)
            raise _Usage()
        i += 1
    return o, child_args


def _probe_main(args):
    if "-h" not in args and "--help" not in args:
        _native.loader()  # found with the environment this was started with, not -i's
    try:
        o, child_args = _parse_probe(args)
    except _Usage:
        return EXIT_USAGE
    try:
        _probe.parse_host(o["host"])
    except ValueError:
        _err("unknown host profile '%s': use nccl-2.23 ... nccl-2.30, nccl-2.27.3 or rccl"
             % o["host"])
        return EXIT_USAGE

    if o["deep"]:
        cmd = _probe.child_command(["probe", "--in-process"] + child_args)
        sys.stdout.flush()
        sys.stderr.flush()
        rc = subprocess.call(cmd, env=_probe.child_environment(None))
        if rc < 0:
            if not o["quiet"]:
                _err(_probe.crash_message(rc))
            return EXIT_INTERNAL
        return rc

    options = {k: o.get(k) for k in ("plugin", "path", "name", "rccl_dir", "home",
                                     "net_plugin")}
    options["major"] = o["major"]
    options["conf_files"] = not o["no_conf"]
    try:
        json_text, text, _ = _probe._run(o["host"], None, options, load=o["in_process"])
    except FileNotFoundError as e:
        _err("--rccl-dir %s: %s" % (e.filename, os.strerror(e.errno)))
        return EXIT_USAGE
    status = json.loads(json_text)["status"]
    if o["record"]:
        sys.stdout.write(json.dumps({"result": json.loads(json_text), "report": text}) + "\n")
    elif not o["quiet"]:
        sys.stdout.write(json_text if o["json"] else text)
    return EXIT_CODES.get(status, EXIT_INTERNAL)


def run_command(args):
    """Run the `proxytrace` program with args; its exit status (128 + N when
    signal N ended it, as a shell reports it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    rc = subprocess.call([_native.find_command()] + list(args))
    return 128 - rc if rc < 0 else rc


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        (sys.stdout if argv else sys.stderr).write(USAGE)
        return 0 if argv else EXIT_USAGE
    try:
        if argv[0] == "probe":
            return _probe_main(argv[1:])
        return run_command(argv)
    except ProxytraceError as e:
        sys.stderr.write("proxytrace: %s\n" % e)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
