"""Finding the native parts: every place is tried in order, and when none
has the library (or the command) the error names each place and what was
there — a build folder only for the package of a source checkout. Each case runs a copy of the package in a fresh interpreter, so
that where the package sits and the environment are the case's own."""

import os
import shutil
import subprocess
import unittest

import ptest

SONAME = "libproxytrace-loader.so.1"
SHOW = ("import proxytrace, proxytrace._native as n\n"
        "print(n.loader().path)\n"
        "print(proxytrace.probe('rccl', env={}).host)\n")


def system_has_loader():
    try:
        out = subprocess.run(["/sbin/ldconfig", "-p"], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
    except OSError:
        return False
    return SONAME in out


class Finding(unittest.TestCase):
    def setUp(self):
        self.d = ptest.tmpdir(self)
        self.pkg_parent = os.path.join(self.d, "site")
        shutil.copytree(os.path.join(ptest.PACKAGE, "proxytrace"),
                        os.path.join(self.pkg_parent, "proxytrace"),
                        ignore=shutil.ignore_patterns("__pycache__", "_paths.py"))

    def env(self, **extra):
        """This environment without any of the package's own settings."""
        env = ptest.base_env(PYTHONPATH=self.pkg_parent, PROXYTRACE_LOADER_LIBRARY=None,
                             PROXYTRACE_CLI=None, PROXYTRACE_HOME=None, LD_LIBRARY_PATH=None)
        env.update(extra)
        return env

    def py(self, code, env):
        return ptest.run([ptest.PYTHON, "-c", code], env=env)

    def test_nothing_anywhere_names_every_place(self):
        rc, out, err = self.py(SHOW, self.env(PROXYTRACE_HOME=self.d))
        if system_has_loader():  # then the dynamic linker's search is the one that answers
            self.assertEqual(rc, 0, err)
            self.assertEqual(out.splitlines()[0], SONAME)
            return
        self.assertNotEqual(rc, 0)
        self.assertIn("LibraryNotFoundError: %s not found; looked in:" % SONAME, err)
        self.assertIn("- PROXYTRACE_LOADER_LIBRARY: not set", err)
        self.assertIn("- PROXYTRACE_HOME: no %s in %s/lib" % (SONAME, self.d), err)
        self.assertIn("- PROXYTRACE_HOME: no %s in %s/lib64" % (SONAME, self.d), err)
        # a copy outside a checkout has no build folder to look in: none is named
        self.assertNotIn("build folder", err)
        self.assertNotIn("%s/build" % self.d, err)
        self.assertIn("- the dynamic linker's search", err)
        self.assertIn("set PROXYTRACE_LOADER_LIBRARY", err)

    def test_explicit_file_is_the_only_place(self):
        missing = os.path.join(self.d, "missing.so")
        rc, out, err = self.py(SHOW, self.env(PROXYTRACE_LOADER_LIBRARY=missing))
        self.assertNotEqual(rc, 0)
        self.assertIn("- PROXYTRACE_LOADER_LIBRARY: %s: " % missing, err)
        self.assertIn("cannot open shared object file", err)
        self.assertNotIn("dynamic linker's search", err)
        text = os.path.join(self.d, "text.so")
        with open(text, "w") as f:
            f.write("not a library\n" * 20)
        rc, out, err = self.py(SHOW, self.env(PROXYTRACE_LOADER_LIBRARY=text))
        self.assertIn("- PROXYTRACE_LOADER_LIBRARY: %s: " % text, err)
        self.assertIn("invalid ELF header", err)

    def test_explicit_file(self):
        lib = os.path.join(self.d, "any-name.so")
        shutil.copy(ptest.LOADER, lib)
        rc, out, err = self.py(SHOW, self.env(PROXYTRACE_LOADER_LIBRARY=lib))
        self.assertEqual((rc, out.splitlines()), (0, [lib, "rccl"]), err)

    def test_proxytrace_home(self):
        for sub in ("lib", "lib64", ""):
            home = os.path.join(self.d, "home-" + (sub or "top"))
            os.makedirs(os.path.join(home, sub), exist_ok=True)
            lib = os.path.join(home, sub, SONAME)
            shutil.copy(ptest.LOADER, lib)
            rc, out, err = self.py(SHOW, self.env(PROXYTRACE_HOME=home))
            self.assertEqual((rc, out.splitlines()), (0, [os.path.normpath(lib), "rccl"]), err)

    def test_source_checkout(self):
        """python/proxytrace (beside python/pyproject.toml) of a checkout:
        the checkout's own build/, named in the error when empty."""
        checkout = os.path.join(self.d, "checkout")
        shutil.copytree(self.pkg_parent, os.path.join(checkout, "python"))
        shutil.copy(os.path.join(ptest.PACKAGE, "pyproject.toml"), os.path.join(checkout, "python"))
        os.makedirs(os.path.join(checkout, "build"))
        rc, out, err = self.py(SHOW, self.env(PYTHONPATH=os.path.join(checkout, "python")))
        if not system_has_loader():
            self.assertIn("- the build folder of this source checkout: no %s in %s/build"
                          % (SONAME, checkout), err)
            self.assertIn("Build it (make in %s)" % checkout, err)
        shutil.copy(ptest.LOADER, os.path.join(checkout, "build", "libproxytrace-loader.so"))
        rc, out, err = self.py(SHOW, self.env(PYTHONPATH=os.path.join(checkout, "python")))
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines()[0],
                         os.path.join(checkout, "build", "libproxytrace-loader.so"))

    def test_dynamic_linker_search(self):
        folder = os.path.join(self.d, "ld")
        os.makedirs(folder)
        shutil.copy(ptest.LOADER, os.path.join(folder, SONAME))
        rc, out, err = self.py(SHOW + "print(n.loader_dir())\n",
                               self.env(LD_LIBRARY_PATH=folder))
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines(), [SONAME, "rccl", folder])

    def test_command(self):
        code = "import proxytrace._native as n; print(n.find_command())"
        rc, out, err = self.py(code, self.env(PROXYTRACE_CLI=os.path.join(self.d, "nope")))
        self.assertNotEqual(rc, 0)
        self.assertIn("the proxytrace command not found; looked in:", err)
        self.assertIn("- PROXYTRACE_CLI: %s/nope is not an executable file" % self.d, err)
        home = os.path.join(self.d, "home")
        os.makedirs(os.path.join(home, "bin"))
        shutil.copy(ptest.CLI, os.path.join(home, "bin", "proxytrace"))
        rc, out, err = self.py(code, self.env(PROXYTRACE_HOME=home, PATH="/usr/bin:/bin"))
        self.assertEqual((rc, out.strip()), (0, os.path.join(home, "bin", "proxytrace")), err)
        # no command anywhere: every place is named, and the CLI mirror exits 1
        env = self.env(PROXYTRACE_HOME=self.d, PATH="/usr/bin:/bin")
        if shutil.which("proxytrace", path="/usr/bin:/bin"):
            return
        rc, out, err = self.py(code, env)
        self.assertIn("- PROXYTRACE_HOME: no proxytrace in %s/bin" % self.d, err)
        self.assertIn("- PATH: no proxytrace", err)
        rc, out, err = ptest.python_m(["sim", "--help"], env=env)
        self.assertEqual(rc, 1)
        self.assertIn("the proxytrace command not found", err)


if __name__ == "__main__":
    unittest.main()
