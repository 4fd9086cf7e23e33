"""The Python side of one loader-matrix case, run in a fresh interpreter
started with exactly the case's environment (as test_matrix's C child is):

  matrix_child.py LIBRARY --host H [--home DIR] [--net-plugin FILE]
                  [--preload FILE]... [--preload-global FILE]...

loads the libraries to preload as the C child does (dlopen RTLD_NOW |
RTLD_LOCAL, or RTLD_GLOBAL), then prints one JSON object: the probe of this process's
environment ("process", pt_probe) and of the same environment given as a
mapping ("env", pt_probe_env) after this process's own variables were all
changed. The package sits beside this script."""

import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxytrace  # noqa: E402
from proxytrace import _native  # noqa: E402

args = sys.argv[1:]
_native.use_loader(args.pop(0))
host, options, preload = "rccl", {}, []
for flag, value in zip(args[::2], args[1::2]):
    if flag == "--host":
        host = value
    elif flag == "--home":
        options["home"] = value
    elif flag == "--net-plugin":
        options["net_plugin"] = value
    elif flag in ("--preload", "--preload-global"):  # -global: as LD_PRELOAD would
        preload.append((value, os.RTLD_GLOBAL if flag == "--preload-global" else os.RTLD_LOCAL))
    else:
        sys.exit("matrix_child: unknown option %s" % flag)
for path, scope in preload:
    ctypes.CDLL(path, mode=os.RTLD_NOW | scope)
process = proxytrace.probe(host, **options)
# The same environment as a mapping, while this process's own says
# something else for every variable the loader reads: only env= counts.
env = dict(os.environ)
for var in ("NCCL_PROFILER_PLUGIN", "RCCL_ENABLE_PROXY_TRACE", "PROXYTRACE_HOME",
            "LD_LIBRARY_PATH", "NCCL_CONF_FILE", "HOME"):
    os.environ[var] = "/nonexistent/" + var
given = proxytrace.probe(host, env=env, **options)
print(json.dumps({"process": process.to_dict(), "env": given.to_dict()}))
