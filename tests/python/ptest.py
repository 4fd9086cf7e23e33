"""What the Python tests share: the build folder under test (run.sh sets
PT_BUILD), the repository, and running `python3 -m proxytrace` and the C
`proxytrace` command side by side."""

import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("PT_BUILD") or os.path.join(REPO, "build")
SAN = os.environ.get("PT_SAN", "")
PYTHON = os.environ.get("PT_PYTHON") or sys.executable
CLI = os.path.join(BUILD, "proxytrace")
LOADER = os.path.join(BUILD, "libproxytrace-loader.so")
PLUGIN = os.path.join(BUILD, "librccl-profiler-proxytrace.so")
TEST_PLUGINS = os.path.join(BUILD, "tests", "loader", "plugins")
PACKAGE = os.path.join(REPO, "python")


def test_plugin(name):
    return os.path.join(TEST_PLUGINS, name + ".so")


def make_version():
    """VERSION of the top Makefile, "1.0.0"."""
    parts = {}
    with open(os.path.join(REPO, "Makefile")) as f:
        for line in f:
            for k in ("MAJOR", "MINOR", "PATCH"):
                if line.startswith("VERSION_%s := " % k):
                    parts[k] = line.split(":=")[1].strip()
    return "%s.%s.%s" % (parts["MAJOR"], parts["MINOR"], parts["PATCH"])


def base_env(**extra):
    """This process's environment (PATH, the sanitizer settings, the
    library and command under test) with `extra` on top (None removes)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run(argv, env=None, cwd=None, **kw):
    """(exit status, stdout, stderr) of argv, text mode."""
    p = subprocess.run(argv, env=env if env is not None else base_env(), cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, **kw)
    return p.returncode, p.stdout, p.stderr


def python_m(args, env=None, cwd=None):
    """python3 -m proxytrace ARGS."""
    return run([PYTHON, "-m", "proxytrace"] + list(args), env=env, cwd=cwd)


def c_cli(args, env=None, cwd=None):
    """The C proxytrace ARGS."""
    return run([CLI] + list(args), env=env, cwd=cwd)


def sim_job(folder, args, exits=(0, 3)):
    """The emulator with the plugin under test, run with ARGS: its dumps in
    FOLDER/dumps, its ground truth in FOLDER/truth.json (those of an earlier
    run there replaced). Returns FOLDER."""
    os.makedirs(os.path.join(folder, "dumps"), exist_ok=True)
    rc, out, err = c_cli(["sim", "--plugin", PLUGIN, "--quiet",
                          "--dump-dir", os.path.join(folder, "dumps"),
                          "--truth-json", os.path.join(folder, "truth.json")] + list(args))
    assert rc in exits, (args, rc, out, err)
    return folder


def tmpdir(testcase):
    """A folder that user nobody can enter, removed after the test."""
    d = tempfile.mkdtemp(prefix="pt-python-")
    os.chmod(d, 0o755)
    testcase.addCleanup(subprocess.call, ["rm", "-rf", d])
    return d


def tmpdir_for_class(cls):
    """tmpdir() for a whole test class (setUpClass)."""
    d = tempfile.mkdtemp(prefix="pt-python-")
    os.chmod(d, 0o755)
    cls.addClassCleanup(subprocess.call, ["rm", "-rf", d])
    return d
