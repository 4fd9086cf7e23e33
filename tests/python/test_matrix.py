"""The whole loader matrix through C and through Python.

The cases are test_matrix's own (tests/loader/test_matrix.c): `test_matrix
--export DIR` builds their fixtures in DIR and prints each case, expanded.
For every case, each in fresh processes started with exactly the case's
environment (in its folder, as user nobody where the case says so):

  * test_matrix's C child prints pt_probe's JSON; the Python child
    (matrix_child.py) prints proxytrace.probe() for the process environment
    (pt_probe) and for the same environment passed as env= (pt_probe_env):
    both must hold every field of the C answer, equal, and what the case
    expects (status, API version, dump hook, reuse, file, the outcome of
    every candidate, the note).
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import ptest

HERE = os.path.dirname(os.path.abspath(__file__))
MATRIX = os.path.join(ptest.BUILD, "tests", "loader", "test_matrix")
STATE = {}


def _export():
    """Fixtures and cases, once, when the module is loaded (the test names
    come from the case list)."""
    d = tempfile.mkdtemp(prefix="pt-pymatrix-")
    os.chmod(d, 0o755)
    STATE["dir"] = d
    out = subprocess.run([MATRIX, "--export", d], stdout=subprocess.PIPE, check=True).stdout
    STATE["cases"] = [json.loads(line) for line in out.decode().splitlines()]
    return [c["name"] for c in STATE["cases"]]


def setUpModule():
    # The package, the child script and the library where nobody reads them.
    py = os.path.join(STATE["dir"], "py")
    shutil.copytree(os.path.join(ptest.PACKAGE, "proxytrace"), os.path.join(py, "proxytrace"),
                    ignore=shutil.ignore_patterns("__pycache__", "_paths.py"))
    shutil.copy(os.path.join(HERE, "matrix_child.py"), py)
    shutil.copy(ptest.LOADER, os.path.join(py, "libproxytrace-loader.so"))
    for root, dirs, files in os.walk(py):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755)
    os.chmod(py, 0o755)


def tearDownModule():
    subprocess.call(["chmod", "-R", "u+rwX", STATE["dir"]])
    shutil.rmtree(STATE["dir"], ignore_errors=True)


def _env_of(case):
    env = dict(e.split("=", 1) for e in case["env"])
    return env


def _run(argv, env, case):
    kw = {}
    if case["as_nobody"] and os.geteuid() == 0:
        kw = dict(user=65534, group=65534, extra_groups=[])
    p = subprocess.run(argv, env=env, cwd=case["cwd"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, **kw)
    return p.returncode, p.stdout.decode("utf-8", "surrogateescape"), p.stderr.decode(
        "utf-8", "replace")


def _main_program(testcase, answer, exe):
    """A STATIC_PLUGIN candidate is the program itself, which differs between
    the C child, the CLI and Python: check it is that program's file, then
    leave it out of the comparison."""
    for c in answer["candidates"]:
        if c["source"] == "main_program":
            testcase.assertEqual(os.path.realpath(c["file"]), os.path.realpath(exe))
            c["file"] = "(main program)"
            if c["outcome"] == "ok":  # the plugin is the program's own table
                testcase.assertEqual(os.path.realpath(answer["realpath"]),
                                     os.path.realpath(exe))
                answer["path"] = answer["realpath"] = "(main program)"
    return answer


class LoaderMatrix(unittest.TestCase):
    maxDiff = None

    def check_case(self, name):
        case = next(c for c in STATE["cases"] if c["name"] == name)
        env = _env_of(case)
        rc, out, err = _run([case["child"], "--case-json", "--host", case["host"]] +
                            case["args"], env, case)
        self.assertEqual(rc, 0, err)
        c_answer = _main_program(self, json.loads(out), case["child"])

        py_env = dict(env)
        if os.environ.get("LD_PRELOAD"):  # the sanitizer runtime, for the library
            py_env["LD_PRELOAD"] = os.environ["LD_PRELOAD"]
        py = os.path.join(STATE["dir"], "py")
        rc, out, err = _run([ptest.PYTHON, "-I", os.path.join(py, "matrix_child.py"),
                             os.path.join(py, "libproxytrace-loader.so"), "--host",
                             case["host"]] + case["args"], py_env, case)
        self.assertEqual(rc, 0, err)
        answers = json.loads(out)

        for how, r in answers.items():
            with self.subTest(how=how):
                _main_program(self, r, ptest.PYTHON)
                # Every field of the C answer, the same.
                self.assertEqual({k: r.get(k) for k in c_answer}, c_answer)
                self.assertEqual(r["host_info"]["name"], c_answer["host"])
                self.assertEqual(r["mode"], "probe")
                # What the case expects.
                self.assertEqual(r["status"], case["status"])
                self.assertEqual(r["api_version"], case["api"])
                self.assertEqual(r["dump_hook"], case["dump"])
                self.assertEqual(r["reused"], case["reused"])
                self.assertEqual(",".join(c["outcome"] for c in r["candidates"]),
                                 case["outcomes"])
                if case["file"] == os.path.realpath(case["child"]):
                    self.assertEqual(r["realpath"], "(main program)")  # checked above
                elif case["file"]:
                    self.assertTrue(r["ok"])
                    self.assertEqual(os.path.realpath(r["realpath"]), case["file"])
                else:
                    self.assertFalse(r["ok"])
                    self.assertIsNone(r["realpath"])
                if case["note"]:
                    self.assertTrue(any(case["note"] in n for n in r["notes"]),
                                    "no note contains %r: %r" % (case["note"], r["notes"]))
                self.assertIn("result:   ", r["report"])


def _add(name):
    def test(self):
        self.check_case(name)
    test.__doc__ = name
    return test


for _i, _name in enumerate(_export()):
    setattr(LoaderMatrix, "test_%02d" % _i, _add(_name))


if __name__ == "__main__":
    unittest.main()
