"""python3 -m proxytrace: the `proxytrace` command, for Python installs.

Every command (`probe`, `analyze`, `sim`, `demo`, `--help`, ...) runs the
`proxytrace` program installed or built with this package, with the same
arguments, and exits with its status: the options, the output and the exit
codes are the program's own, never a copy of them kept in step by hand.
Where the program is looked for: proxytrace/_native.py. `doctor` and
`probe` are told this interpreter (--python), so that they ask the torch of
the job's Python for the NCCL or RCCL it loads. `selftest` runs here, in
this interpreter (proxytrace/_selftest.py): its jobs use this Python's
torch; `proxytrace selftest` starts it the same way.
"""

import subprocess
import sys

from . import _native
from ._errors import ProxytraceError


def run_command(args):
    """Run the `proxytrace` program with args; its exit status (128 + N when
    signal N ended it, as a shell reports it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    rc = subprocess.call([_native.find_command()] + list(args))
    return 128 - rc if rc < 0 else rc


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["selftest"]:
        from . import _selftest
        return _selftest.main(argv[1:])
    if argv[:1] in (["doctor"], ["probe"]) and "--python" not in argv and sys.executable:
        argv[1:1] = ["--python", sys.executable]
    try:
        return run_command(argv)
    except ProxytraceError as e:
        sys.stderr.write("python3 -m proxytrace: %s\n" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
