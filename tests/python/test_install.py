"""Installing the package: `make install` puts it where Debian's python3
looks for that prefix and the installed package finds the library, plugin
and command installed with it (also when the tree was installed under
DESTDIR); `make install-python PYTHON=...` puts it into that interpreter's
own site-packages, and a prefix off python3's path is said;
`pip install ./python` into a virtual environment works offline (no index,
no build isolation) and into a plain venv (build isolation, no index),
ships the library, plugin and command, which the package then finds with no
variable set, and leaves nothing in the source folder; the error of a
package whose shipped library is gone names where it looked, and a python/
folder outside a checkout is refused with a message."""

import os
import shutil
import subprocess
import sys
import unittest

import ptest

# pip builds and ships the plain build (build/, by make), whatever build
# the tests run against: under a sanitizer these tests would check the
# plain leg's work again, a pip build at a time, and find nothing new.
PLAIN_ONLY = unittest.skipIf(ptest.SAN, "pip ships the plain build, checked in the plain leg")

PY_MINOR = "%d.%d" % sys.version_info[:2]
CHECK = ("import proxytrace, proxytrace._native as n, proxytrace._enable as e\n"
         "print(proxytrace.__file__)\n"
         "print(proxytrace.__version__)\n"
         "print(n.loader().path)\n"
         "print(n.find_command())\n"
         "print(e.default_plugin())\n"
         "print(proxytrace.probe('rccl', env={}, path=e.default_plugin()).status)\n")


def clean_env(**extra):
    """The environment without the settings that point at the build folder."""
    unset = dict(PYTHONPATH=None, PROXYTRACE_LOADER_LIBRARY=None, PROXYTRACE_CLI=None,
                 PROXYTRACE_HOME=None, LD_LIBRARY_PATH=None, PATH="/usr/bin:/bin")
    unset.update(extra)
    return ptest.base_env(**unset)


def pip_env(**extra):
    """clean_env() for pip and what it installs: offline, and without this
    run's make and sanitizer settings (pip's make builds the checkout's
    plain build/, whose parts the installed package loads)."""
    return clean_env(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
                     MAKEFLAGS=None, MFLAGS=None, MAKELEVEL=None, LD_PRELOAD=None, **extra)


def site_packages(venv):
    return os.path.join(venv, "lib", "python%s" % PY_MINOR, "site-packages")


class MakeInstall(unittest.TestCase):
    def install(self, prefix):
        dest = ptest.tmpdir(self)
        rc, out, err = ptest.run(["make", "-s", "install", "DESTDIR=" + dest, "PREFIX=" + prefix,
                                  "SAN=" + ptest.SAN, "PYTHON=" + ptest.PYTHON, "PYTHON_SITE=0"],
                                 cwd=ptest.REPO, env=ptest.base_env(MAKEFLAGS=None, MFLAGS=None,
                                                                    LD_PRELOAD=None))
        self.assertEqual(rc, 0, out + err)
        return dest

    def test_usr_local(self):
        dest = self.install("/usr/local")
        site = dest + "/usr/local/lib/python%s/dist-packages" % PY_MINOR
        pkg = os.path.join(site, "proxytrace")
        for f in ("__init__.py", "__main__.py", "_native.py", "_probe.py", "_paths.py"):
            self.assertTrue(os.path.isfile(os.path.join(pkg, f)), f)
        paths = {}
        with open(os.path.join(pkg, "_paths.py")) as f:
            exec(f.read(), paths)
        self.assertEqual((paths["LIBDIR"], paths["BINDIR"]), ("/usr/local/lib", "/usr/local/bin"))
        self.assertEqual(paths["LIBDIR_REL"], "../../..")
        if ptest.PYTHON == "/usr/bin/python3":  # Debian's python3 looks there
            out = subprocess.check_output([ptest.PYTHON, "-c", "import sys; print(sys.path)"],
                                          env=clean_env(), universal_newlines=True)
            self.assertIn("'/usr/local/lib/python%s/dist-packages'" % PY_MINOR, out)

        # Under DESTDIR, the package finds what was installed with it.
        rc, out, err = ptest.run([ptest.PYTHON, "-c", CHECK], env=clean_env(PYTHONPATH=site))
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0], os.path.join(pkg, "__init__.py"))
        self.assertEqual(lines[1], ptest.make_version())
        lib = dest + "/usr/local/lib"
        self.assertEqual(lines[2], os.path.join(lib, "libproxytrace-loader.so.1"))
        self.assertEqual(lines[3], dest + "/usr/local/bin/proxytrace")
        self.assertEqual(lines[4], os.path.join(lib, "librccl-profiler-proxytrace.so"))
        self.assertEqual(lines[5], "PT_OK")
        rc, out, err = ptest.run([ptest.PYTHON, "-m", "proxytrace", "probe", "--host", "rccl", "-i", "--json",
                                  "--path", lines[4]], env=clean_env(PYTHONPATH=site))
        self.assertEqual(rc, 0, err)

    def test_usr(self):
        dest = self.install("/usr")
        pkg = dest + "/usr/lib/python3/dist-packages/proxytrace"
        self.assertTrue(os.path.isfile(os.path.join(pkg, "__init__.py")))
        paths = {}
        with open(os.path.join(pkg, "_paths.py")) as f:
            exec(f.read(), paths)
        self.assertEqual(paths["LIBDIR"], "/usr/lib")


@PLAIN_ONLY
class PipInstall(unittest.TestCase):
    def test_venv_offline(self):
        """pip install ./python, in place, no build isolation: the package
        finds its shipped library, plugin and command with no variable set."""
        d = ptest.tmpdir(self)
        venv = os.path.join(d, "venv")
        env = pip_env()
        rc, out, err = ptest.run([ptest.PYTHON, "-m", "venv", "--system-site-packages", venv],
                                 env=env)
        self.assertEqual(rc, 0, out + err)
        vpy = os.path.join(venv, "bin", "python")
        before = tree(ptest.PACKAGE)
        rc, out, err = ptest.run([vpy, "-m", "pip", "install", "--no-index",
                                  "--no-build-isolation", "--no-deps", ptest.PACKAGE], env=env, cwd=d)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(tree(ptest.PACKAGE), before, "pip left files in the source folder")
        rc, out, err = ptest.run([vpy, "-m", "pip", "show", "proxytrace"], env=env)
        self.assertIn("Version: %s" % ptest.make_version(), out)
        pkg = os.path.join(site_packages(venv), "proxytrace")
        rc, out, err = ptest.run([vpy, "-c", CHECK], env=env, cwd=d)
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0], os.path.join(pkg, "__init__.py"))
        self.assertEqual(lines[1], ptest.make_version())
        self.assertEqual(lines[2], os.path.join(pkg, "lib", "libproxytrace-loader.so.1"))
        self.assertEqual(lines[3], os.path.join(pkg, "bin", "proxytrace"))
        self.assertEqual(lines[4], os.path.join(pkg, "lib", "librccl-profiler-proxytrace.so"))
        self.assertEqual(lines[5], "PT_OK")
        rc, out, err = ptest.run([vpy, "-m", "proxytrace", "probe", "--host", "rccl", "-i", "--path", lines[4]],
                                 env=env, cwd=d)
        self.assertEqual(rc, 0, err)

        # The shipped library gone: the error names the places looked in,
        # the package's own lib/ among them, and no build folder.
        os.remove(lines[2])
        rc, out, err = ptest.run([vpy, "-c", CHECK], env=env, cwd=d)
        self.assertNotEqual(rc, 0)
        self.assertIn("- shipped in this package by pip install: no libproxytrace-loader.so.1 in %s"
                      % os.path.join(pkg, "lib"), err)
        self.assertNotIn("build folder", err)
        self.assertIn("pip install --force-reinstall", err)

    def test_outside_a_checkout_is_refused(self):
        """A python/ folder copied away from its checkout has nothing to
        build the native parts from: pip says so."""
        d = ptest.tmpdir(self)
        src = os.path.join(d, "src")
        shutil.copytree(ptest.PACKAGE, src, ignore=shutil.ignore_patterns("__pycache__"))
        vpy, venv = AnyInterpreter.venv(self, d, "--system-site-packages")
        rc, out, err = ptest.run([vpy, "-m", "pip", "install", "--no-build-isolation", "--no-deps", src],
                                 env=pip_env(), cwd=d)
        self.assertNotEqual(rc, 0)
        self.assertIn("is not inside one", out + err)
        self.assertIn("pip install the python/ folder of a proxytrace checkout", out + err)


def tree(folder):
    """Every file and folder under `folder`, bytecode caches left out."""
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        out += [os.path.relpath(os.path.join(root, x), folder) for x in dirs + files]
    return sorted(out)


class AnyInterpreter(unittest.TestCase):
    def venv(self, d, *args):
        venv = os.path.join(d, "venv")
        rc, out, err = ptest.run([ptest.PYTHON, "-m", "venv"] + list(args) + [venv], env=clean_env())
        self.assertEqual(rc, 0, out + err)
        return os.path.join(venv, "bin", "python"), venv

    def test_make_install_into_a_venv(self):
        d = ptest.tmpdir(self)
        vpy, venv = self.venv(d, "--without-pip")
        # naming the interpreter is enough (the issue: it went to /usr/local)
        rc, out, err = ptest.run(["make", "-s", "install-python", "PREFIX=" + os.path.join(d, "prefix"),
                                  "PYTHON=" + vpy], cwd=ptest.REPO,
                                 env=ptest.base_env(MAKEFLAGS=None, MFLAGS=None, LD_PRELOAD=None))
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("note:", out + err)
        rc, out, err = ptest.run([vpy, "-c", "import proxytrace, proxytrace._paths as p\n"
                                  "print(proxytrace.__file__)\nprint(p.LIBDIR)"], env=clean_env(), cwd=d)
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith(os.path.join(venv, "lib")), lines[0])
        self.assertEqual(lines[1], os.path.join(d, "prefix", "lib"))

    def test_prefix_off_the_path_is_said(self):
        d = ptest.tmpdir(self)
        rc, out, err = ptest.run(["make", "-s", "install-python", "PREFIX=" + os.path.join(d, "prefix"),
                                  "PYTHON=" + ptest.PYTHON, "PYTHON_SITE=0"], cwd=ptest.REPO,
                                 env=ptest.base_env(MAKEFLAGS=None, MFLAGS=None, LD_PRELOAD=None))
        self.assertEqual(rc, 0, out + err)
        notes = [x for x in (out + err).splitlines() if x.startswith("note:")]
        self.assertEqual(len(notes), 1, out + err)
        self.assertIn("is not on the sys.path", notes[0])
        self.assertIn("make install-python PYTHON=/path/to/bin/python", notes[0])

    @PLAIN_ONLY
    def test_pip_in_a_plain_venv_offline(self):
        d = ptest.tmpdir(self)
        vpy, venv = self.venv(d)
        before = tree(ptest.PACKAGE)
        env = pip_env()
        rc, out, err = ptest.run([vpy, "-m", "pip", "install", ptest.PACKAGE], env=env, cwd=d)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(tree(ptest.PACKAGE), before, "pip left files in the source folder")
        rc, out, err = ptest.run([vpy, "-c", "import proxytrace; print(proxytrace.__file__);"
                                  " print(proxytrace.__version__)"], env=clean_env(), cwd=d)
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith(os.path.join(venv, "lib")), lines[0])
        self.assertEqual(lines[1], ptest.make_version())
        rc, out, err = ptest.run([vpy, "-m", "pip", "show", "-f", "proxytrace"], env=env)
        for f in ("proxytrace/_native.py", "proxytrace/_paths.py", "proxytrace/bin/proxytrace",
                  "proxytrace/lib/libproxytrace-loader.so.1", "proxytrace/lib/librccl-profiler-proxytrace.so"):
            self.assertIn(f, out)
        plugin = os.path.join(site_packages(venv), "proxytrace", "lib", "librccl-profiler-proxytrace.so")
        rc, out, err = ptest.run([vpy, "-m", "proxytrace", "probe", "--host", "rccl", "-i", "--path", plugin], env=env, cwd=d)
        self.assertEqual(rc, 0, out + err)  # the shipped program, as `proxytrace probe`


if __name__ == "__main__":
    unittest.main()
