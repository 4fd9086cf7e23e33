"""python3 -m proxytrace is the proxytrace command: for every kind of probe
result and usage error, and for the other commands, the same output and the
same exit status (also when the command is killed by a signal)."""

import os
import shutil
import unittest

import ptest


class ProbeMirror(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        d = self.d = ptest.tmpdir(self)
        for name in ("good", "v6only", "undef", "crash", "nullinit"):
            shutil.copy(ptest.test_plugin(name), os.path.join(d, name + ".so"))
        with open(os.path.join(d, "text.so"), "w") as f:
            f.write("not a shared object, but named like one; long enough for a header\n")
        os.makedirs(os.path.join(d, "rccl"))
        os.makedirs(os.path.join(d, "lib"))
        shutil.copy(ptest.test_plugin("fakerccl"), os.path.join(d, "rccl", "librccl.so"))
        shutil.copy(ptest.test_plugin("good"),
                    os.path.join(d, "rccl", "librccl-profiler-proxytrace.so"))
        shutil.copy(ptest.test_plugin("good"),
                    os.path.join(d, "lib", "libnccl-profiler-proxytrace.so"))
        long_dir = d
        while len(long_dir) < 280:
            long_dir = os.path.join(long_dir, "a-long-directory-name")
        os.makedirs(long_dir)
        self.long = os.path.join(long_dir, "libx.so")
        shutil.copy(ptest.test_plugin("good"), self.long)

    def same(self, want, *args, compare_out=True):
        """Both commands, -i, --host rccl (args may name another) and args:
        the same exit status `want`, the same stderr and (unless told
        otherwise) the same stdout."""
        args = ["probe", "-i", "--host", "rccl"] + list(args)
        c = ptest.c_cli(args)
        p = ptest.python_m(args)
        self.assertEqual(c[0], want, c)
        self.assertEqual(p[0], want, p)
        self.assertEqual(p[2], c[2])
        if compare_out:
            self.assertEqual(p[1], c[1])
        return p

    def test_every_exit_status(self):
        d = self.d
        self.same(0, "NCCL_PROFILER_PLUGIN=%s/good.so" % d)
        self.same(0, "--json", "--path", "%s/good.so" % d)
        self.same(0, "--host", "nccl-2.30", "--name", "proxytrace", "LD_LIBRARY_PATH=%s/lib" % d)
        self.same(0, "RCCL_ENABLE_PROXY_TRACE=1", "--rccl-dir", "%s/rccl/librccl.so" % d)
        self.same(3, "--json", "NCCL_PROFILER_PLUGIN=%s/missing.so" % d)
        self.same(4, "--host", "nccl-2.28", "NCCL_PROFILER_PLUGIN=none")
        self.same(5, "--host", "nccl-2.28", "NCCL_PROFILER_PLUGIN=%s/v6only.so" % d)
        self.same(5, "--json", "NCCL_PROFILER_PLUGIN=%s/nullinit.so" % d)
        self.same(6, "NCCL_PROFILER_PLUGIN=%s/text.so" % d)
        self.same(7, "--host", "nccl-2.30", "NCCL_PROFILER_PLUGIN=%s" % self.long)
        self.same(2, "--plugin", "x", "--path", "%s/good.so" % d)
        self.same(2, "--path", "good.so")

    def test_usage_errors(self):
        self.same(2, "--host", "nccl-2.21")
        self.same(2, "--major", "0")
        self.same(2, "--major", "1x")
        self.same(2, "--path")
        self.same(2, "--frobnicate")
        self.same(2, "=x")
        self.same(2, "--rccl-dir", os.path.join(self.d, "missing"))
        self.same(0, "--major", " +1", "NCCL_PROFILER_PLUGIN=%s/good.so" % self.d)

    def test_quiet_and_deep(self):
        d = self.d
        p = self.same(0, "-q", "NCCL_PROFILER_PLUGIN=%s/good.so" % d)
        self.assertEqual(p[1], "")
        self.same(0, "--deep", "NCCL_PROFILER_PLUGIN=%s/good.so" % d)
        self.same(0, "--deep", "--json", "--host", "nccl-2.28",
                  "NCCL_PROFILER_PLUGIN=%s/good.so" % d)
        # what only loading shows; a crash kills only the child
        self.same(0, "NCCL_PROFILER_PLUGIN=%s/undef.so" % d)
        self.same(6, "--deep", "NCCL_PROFILER_PLUGIN=%s/undef.so" % d)
        p = self.same(1, "--deep", "NCCL_PROFILER_PLUGIN=%s/crash.so" % d)
        self.assertIn("killed the process", p[2])
        self.same(1, "--deep", "-q", "NCCL_PROFILER_PLUGIN=%s/crash.so" % d)

    def test_environment_of_this_process(self):
        """Without -i the variables come from the caller, as for the C command."""
        env = ptest.base_env(NCCL_PROFILER_PLUGIN="%s/good.so" % self.d,
                             NCCL_CONF_FILE=os.path.join(self.d, "none.conf"))
        c = ptest.c_cli(["probe", "--json", "--host", "rccl"], env=env)
        p = ptest.python_m(["probe", "--json", "--host", "rccl"], env=env)
        self.assertEqual(p, c)
        self.assertEqual(p[0], 0)

    def test_help(self):
        rc, out, err = ptest.python_m(["probe", "--help"])
        self.assertEqual((rc, out, err), ptest.c_cli(["probe", "--help"]))
        self.assertIn("usage: proxytrace probe", out)


class Commands(unittest.TestCase):
    def test_usage(self):
        for args in ([], ["--help"], ["nosuchcommand"]):
            with self.subTest(args=args):
                self.assertEqual(ptest.python_m(args), ptest.c_cli(args))
        self.assertEqual(ptest.python_m([])[0], 2)
        self.assertEqual(ptest.python_m(["--help"])[0], 0)

    def test_signal(self):
        """A command killed by signal N exits 128 + N, as a shell reports it."""
        d = ptest.tmpdir(self)
        fake = os.path.join(d, "proxytrace")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\nkill -TERM $$\n")
        os.chmod(fake, 0o755)
        rc, out, err = ptest.python_m(["probe"], env=ptest.base_env(PROXYTRACE_CLI=fake,
                                                                     LD_PRELOAD=None))
        self.assertEqual(rc, 128 + 15)

    def test_other_commands_run_the_program(self):
        for args in (["sim", "--help"], ["nosuchcommand"], ["sim", "--nodes", "x"]):
            with self.subTest(args=args):
                self.assertEqual(ptest.python_m(args), ptest.c_cli(args))
        self.assertEqual(ptest.python_m(["nosuchcommand"])[0], 2)


if __name__ == "__main__":
    unittest.main()
