"""proxytrace.enable(): the variables it sets (one per setting of the
plugin; another keyword is a TypeError that names them), the loader's check of the
NCCL release in use, the error (with the environment left alone) when that
release would not load the plugin, and the release read from torch.

torch is not installed where these tests run; a module named `torch` with
the attributes enable() reads (torch.version.hip, torch.cuda.nccl.version(),
torch.distributed) stands in for it, one per way torch reports its NCCL."""

import os
import re
import shutil
import sys
import types
import unittest

import ptest
import proxytrace
from proxytrace import _enable

WATCHED = ("NCCL_PROFILER_PLUGIN", "PROXYTRACE_DUMP_DIR", "PROXYTRACE_MAX_OPS",
           "PROXYTRACE_CLOCK", "NCCL_CONF_FILE", "HOME")


def fake_torch(nccl=None, hip=None, initialized=False, nccl_error=None):
    torch = types.ModuleType("torch")
    torch.__version__ = "9.9.9"
    torch.version = types.SimpleNamespace(hip=hip, cuda=None if hip else "12.8")

    def version():
        if nccl_error:
            raise RuntimeError(nccl_error)
        return nccl

    torch.cuda = types.SimpleNamespace(nccl=types.SimpleNamespace(version=version))
    torch.distributed = types.SimpleNamespace(is_available=lambda: True,
                                              is_initialized=lambda: initialized)
    return torch


class Enable(unittest.TestCase):
    def setUp(self):
        saved = {k: os.environ.get(k) for k in WATCHED}
        self.addCleanup(self.restore, saved)
        for k in WATCHED:
            os.environ.pop(k, None)
        self.d = ptest.tmpdir(self)
        os.environ["HOME"] = self.d  # no ~/.nccl.conf of the real home
        saved_torch = sys.modules.get("torch", "absent")
        sys.modules["torch"] = None  # not importable, unless a test says otherwise
        self.addCleanup(self.restore_torch, saved_torch)

    @staticmethod
    def restore(saved):
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    @staticmethod
    def restore_torch(saved):
        if saved == "absent":
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = saved

    def test_sets_the_variables_and_checks(self):
        r = proxytrace.enable(host="nccl-2.28", dump_dir=os.path.join(self.d, "dumps"),
                              PROXYTRACE_MAX_OPS=1024, clock="monotonic")
        self.assertEqual(os.environ["NCCL_PROFILER_PLUGIN"], ptest.PLUGIN)
        self.assertEqual(os.environ["PROXYTRACE_DUMP_DIR"], os.path.join(self.d, "dumps"))
        self.assertEqual(os.environ["PROXYTRACE_MAX_OPS"], "1024")
        self.assertEqual(os.environ["PROXYTRACE_CLOCK"], "monotonic")
        self.assertTrue(r.ok)
        self.assertEqual((r.host, r.api_version, r.value_origin), ("nccl-2.28", 5, "environment"))
        self.assertEqual(os.path.realpath(r.realpath), os.path.realpath(ptest.PLUGIN))

    def test_an_unknown_keyword_is_refused(self):
        """A typo is a TypeError naming the right keyword and every valid
        one, before anything is set."""
        with self.assertRaises(TypeError) as cm:
            proxytrace.enable(host="nccl-2.28", dump_dir=self.d, stal_ms=5)
        msg = str(cm.exception)
        self.assertIn("'stal_ms'", msg)
        self.assertIn("did you mean 'stall_ms'?", msg)
        for name in _enable.SETTINGS + ("plugin_path", "host", "nccl_version"):
            self.assertIn(name, msg)
        for k in ("NCCL_PROFILER_PLUGIN", "PROXYTRACE_DUMP_DIR", "PROXYTRACE_STAL_MS"):
            self.assertNotIn(k, os.environ)
        with self.assertRaises(TypeError):
            proxytrace.enable(host="nccl-2.28", PROXYTRACE_HOME="/opt")  # not a setting of the plugin

    def test_the_keywords_are_the_plugins_settings(self):
        """SETTINGS names exactly the PROXYTRACE_* variables the plugin's
        configuration reads."""
        with open(os.path.join(ptest.REPO, "src", "plugin", "config.c")) as f:
            read = set(re.findall(r'"PROXYTRACE_([A-Z_]+)"', f.read()))
        self.assertTrue(read)
        self.assertEqual({x.upper() for x in _enable.SETTINGS}, read)

    def test_default_plugin_is_beside_the_loader(self):
        self.assertEqual(os.path.realpath(_enable.default_plugin()),
                         os.path.realpath(ptest.PLUGIN))

    def test_explicit_plugin_and_removing_a_variable(self):
        os.environ["PROXYTRACE_CLOCK"] = "monotonic"
        plugin = os.path.join(self.d, "p.so")
        shutil.copy(ptest.PLUGIN, plugin)
        r = proxytrace.enable(plugin, nccl_version=(2, 23, 4), clock=None)
        self.assertNotIn("PROXYTRACE_CLOCK", os.environ)
        self.assertEqual((r.host, r.api_version, r.path), ("nccl-2.23", 1, plugin))

    def test_refusal_leaves_the_environment_and_says_why(self):
        os.environ["PROXYTRACE_DUMP_DIR"] = "before"
        v6only = os.path.join(self.d, "v6only.so")
        shutil.copy(ptest.test_plugin("v6only"), v6only)
        with self.assertRaises(proxytrace.EnableError) as cm:
            proxytrace.enable(v6only, nccl_version="2.28.9", dump_dir="after")
        e = cm.exception
        self.assertEqual(e.result.status, "PT_EINCOMPATIBLE")
        msg = str(e)
        self.assertIn("NCCL 2.28.9", msg)
        self.assertIn(v6only, msg)
        self.assertIn("PT_EINCOMPATIBLE", msg)
        self.assertIn(e.result.candidates[0].reason, msg)  # every file tried, and why
        self.assertNotIn("NCCL_PROFILER_PLUGIN", os.environ)
        self.assertEqual(os.environ["PROXYTRACE_DUMP_DIR"], "before")

    def test_path_on_2_27_3_names_the_nccl_issue(self):
        with self.assertRaises(proxytrace.EnableError) as cm:
            proxytrace.enable(ptest.PLUGIN, nccl_version="2.27.3")
        self.assertIn("NVIDIA/nccl#1732", str(cm.exception))

    def test_release_without_a_profile(self):
        with self.assertRaises(proxytrace.EnableError) as cm:
            proxytrace.enable(nccl_version=(2, 21, 5))
        msg = str(cm.exception)
        self.assertIn("NCCL 2.21.5", msg)
        self.assertIn("nccl-2.23 (NCCL 2.23.4)", msg)
        self.assertNotIn("NCCL_PROFILER_PLUGIN", os.environ)

    def test_missing_plugin_file(self):
        with self.assertRaises(proxytrace.EnableError) as cm:
            proxytrace.enable(os.path.join(self.d, "nothing.so"), host="rccl")
        self.assertIn("PT_ENOTFOUND", str(cm.exception))
        self.assertNotIn("NCCL_PROFILER_PLUGIN", os.environ)

    def test_no_torch_and_no_release(self):
        with self.assertRaises(proxytrace.EnableError) as cm:
            proxytrace.enable()
        self.assertIn("torch is not importable", str(cm.exception))
        self.assertIn("nccl_version=", str(cm.exception))

    def test_torch_nccl_tuple(self):
        sys.modules["torch"] = fake_torch(nccl=(2, 27, 3))
        with self.assertRaises(proxytrace.EnableError) as cm:
            proxytrace.enable()  # 2.27.3 cannot load by path
        self.assertIn("NCCL 2.27.3 from torch.cuda.nccl.version()", str(cm.exception))
        sys.modules["torch"] = fake_torch(nccl=(2, 27, 5, "+cuda12.8"))
        self.assertEqual(proxytrace.enable().host, "nccl-2.27")

    def test_torch_nccl_version_code(self):
        sys.modules["torch"] = fake_torch(nccl=22803)  # NCCL_VERSION_CODE of 2.28.3
        self.assertEqual(proxytrace.enable().host, "nccl-2.28")
        self.assertEqual(_enable._version_tuple(2708), (2, 7, 8))  # before 2.9

    def test_torch_on_rocm_is_rccl(self):
        sys.modules["torch"] = fake_torch(nccl=(2, 22, 3), hip="6.4")
        r = proxytrace.enable()
        self.assertEqual((r.host, r.dump_hook), ("rccl", True))

    def test_torch_without_nccl(self):
        sys.modules["torch"] = fake_torch(nccl_error="PyTorch is not compiled with NCCL")
        with self.assertRaises(proxytrace.EnableError) as cm:
            proxytrace.enable()
        self.assertIn("not compiled with NCCL", str(cm.exception))
        self.assertEqual(proxytrace.enable(host="nccl-2.29").host, "nccl-2.29")

    def test_after_init_process_group(self):
        sys.modules["torch"] = fake_torch(nccl=(2, 28, 3), initialized=True)
        with self.assertRaises(proxytrace.EnableError) as cm:
            proxytrace.enable()
        self.assertIn("before init_process_group", str(cm.exception))
        self.assertNotIn("NCCL_PROFILER_PLUGIN", os.environ)

    def test_conf_file_setting_is_overridden(self):
        """NCCL takes the environment before nccl.conf, so enable() wins
        over a stray line there (and the check says so)."""
        conf = os.path.join(self.d, "nccl.conf")
        with open(conf, "w") as f:
            f.write("NCCL_PROFILER_PLUGIN=/old/plugin.so\n")
        os.environ["NCCL_CONF_FILE"] = conf
        r = proxytrace.enable(host="nccl-2.28")
        self.assertEqual((r.ok, r.value_origin), (True, "environment"))


if __name__ == "__main__":
    unittest.main()
