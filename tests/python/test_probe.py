"""proxytrace.probe(), is_available() and hosts(): every option reaches the
loader's request, the answer comes back whole, and the binding's view of the
C structures is the library's (checked against include/proxytrace/loader.h
and against the library itself)."""

import ctypes
import os
import re
import shutil
import threading
import unittest

import ptest
import proxytrace
from proxytrace import _native


def header():
    with open(os.path.join(ptest.REPO, "include", "proxytrace", "loader.h")) as f:
        return f.read()


class Hosts(unittest.TestCase):
    def test_host_rules_are_the_headers_flags(self):
        flags = re.findall(r"PT_HOSTF_([A-Z_]+) = 1u << (\d+)", header())
        self.assertTrue(flags)
        self.assertEqual([(n.lower(), 1 << int(b)) for n, b in flags],
                         list(_native.HOST_RULES))

    def test_request_flags_are_the_headers(self):
        h = header()
        self.assertIn("PT_REQ_ENVIRONMENT = 1u << 0", h)
        self.assertIn("PT_REQ_CONF_FILES = 1u << 1", h)
        self.assertEqual((_native.REQ_ENVIRONMENT, _native.REQ_CONF_FILES), (1, 2))

    def test_structures_are_the_headers(self):
        """The ctypes fields, in order, are the C struct's members."""
        h = header()
        for struct, cls in (("pt_request", _native.Request), ("pt_host_info", _native.HostInfo)):
            body = h[:h.index("} %s;" % struct)].rsplit("typedef struct {", 1)[1]
            body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
            members = re.findall(r"([A-Za-z_]\w*)\s*;", body)
            self.assertEqual(members, [f[0] for f in cls._fields_], struct)

    def test_hosts_lists_every_profile(self):
        hosts = proxytrace.hosts()
        names = [h.name for h in hosts]
        self.assertEqual(names[0], "nccl-2.23")
        self.assertIn("nccl-2.27.3", names)
        self.assertEqual(names[-1], "rccl-2.31")
        self.assertIn("rccl", names)
        enum = re.search(r"typedef enum \{(.*?)\} pt_host;", header(), re.S).group(1)
        profiles = [m for m in re.findall(r"\b(PT_HOST_\w+)", enum) if m != "PT_HOST_COUNT"]
        self.assertEqual(len(names), len(profiles))
        rccl = hosts[names.index("rccl")]
        self.assertEqual(rccl.native_version, 6)
        self.assertEqual(hosts[-1].native_version, 7)
        self.assertIn("rccl_short", hosts[-1].rules)
        self.assertIn("autoload", rccl.rules)
        self.assertIn("dump_hook", rccl.rules)
        self.assertNotIn("short_names", hosts[0].rules)  # 2.23 does not expand names
        for h in hosts:  # each name parses back to itself
            self.assertEqual(proxytrace.probe(h.name, env={}).host, h.name)

    def test_releases_parse_as_the_loader_does(self):
        self.assertEqual(proxytrace.probe("2.27.3", env={}).host, "nccl-2.27.3")
        self.assertEqual(proxytrace.probe("nccl-2.27.7", env={}).host, "nccl-2.27")
        self.assertEqual(proxytrace.probe("nccl", env={}).host, "nccl-2.30")
        self.assertEqual(proxytrace.probe("RCCL", env={}).host, "rccl")

    def test_unknown_host_names_the_profiles(self):
        for bad in ("nccl-2.21", "cuda", "", 99, None):
            with self.assertRaises(ValueError) as cm:
                proxytrace.probe(bad, env={})
            if not isinstance(bad, int):
                self.assertIn("nccl-2.23", str(cm.exception))
                self.assertIn("rccl", str(cm.exception))


class Binding(unittest.TestCase):
    def test_layout_check_refuses_another_request_layout(self):
        lib = _native.loader()

        class Shorter(ctypes.Structure):
            _fields_ = _native.Request._fields_[:-2] + [("flags", ctypes.c_uint)]

        saved = _native.Request
        _native.Request = Shorter
        try:
            with self.assertRaises(proxytrace.ProxytraceError) as cm:
                _native.Loader(lib.path, ctypes.CDLL(lib.path))
        finally:
            _native.Request = saved
        self.assertIn("lays out pt_request differently", str(cm.exception))
        _native.Loader(lib.path, ctypes.CDLL(lib.path))  # the real one passes

    def test_library_under_test(self):
        self.assertEqual(os.path.realpath(_native.loader().path), os.path.realpath(ptest.LOADER))


class Probe(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.d = ptest.tmpdir(self)
        self.good = os.path.join(self.d, "good.so")
        shutil.copy(ptest.test_plugin("good"), self.good)

    def test_result_is_the_loaders_json(self):
        r = proxytrace.probe("rccl", env={}, plugin=self.good)
        self.assertIsInstance(r, proxytrace.ProbeResult)
        self.assertTrue(r.ok)
        self.assertEqual((r.status, r.message, r.mode), ("PT_OK", "success", "probe"))
        self.assertEqual((r.value, r.value_origin), (self.good, "argument"))
        self.assertEqual((r.path, r.realpath), (self.good, self.good))
        self.assertEqual((r.api_version, r.dump_hook, r.reused), (6, True, False))
        c = r.candidates[0]
        self.assertIsInstance(c, proxytrace.Record)
        self.assertEqual((c.name, c.file, c.source, c.outcome, c.api_version, c.dump_hook,
                          c.reason), (self.good, self.good, "value", "ok", 6, True, ""))
        self.assertEqual(str(r), r.report)
        self.assertIn("would load " + self.good, r.report)
        d = r.to_dict()
        self.assertEqual(d["candidates"][0]["outcome"], "ok")
        self.assertEqual(proxytrace.ProbeResult(d), r)
        self.assertEqual(r["status"], "PT_OK")

    def test_every_candidate_with_its_reason(self):
        r = proxytrace.probe("nccl-2.28", env={"LD_LIBRARY_PATH": self.d},
                             plugin="proxytrace")
        self.assertEqual(r.status, "PT_ENOTFOUND")
        self.assertEqual([(c.source, c.outcome) for c in r.candidates],
                         [("value", "not_found"), ("short_name", "not_found"),
                          ("net_plugin", "not_found")])  # the default net library
        self.assertTrue(all("No such file" in c.reason for c in r.candidates))
        self.assertTrue(r.notes)
        self.assertFalse(proxytrace.is_available("nccl-2.28", {"LD_LIBRARY_PATH": self.d},
                                                 "proxytrace"))
        shutil.copy(ptest.test_plugin("good"),
                    os.path.join(self.d, "libnccl-profiler-proxytrace.so"))
        self.assertTrue(proxytrace.is_available("nccl-2.28", {"LD_LIBRARY_PATH": self.d},
                                                "proxytrace"))

    def test_env_none_is_this_process(self):
        saved = os.environ.get("NCCL_PROFILER_PLUGIN")
        os.environ["NCCL_PROFILER_PLUGIN"] = self.good
        try:
            r = proxytrace.probe("nccl-2.29")
        finally:
            if saved is None:
                del os.environ["NCCL_PROFILER_PLUGIN"]
            else:
                os.environ["NCCL_PROFILER_PLUGIN"] = saved
        self.assertEqual((r.ok, r.value_origin, r.api_version), (True, "environment", 6))
        # and env= does not look at this process's environment
        r = proxytrace.probe("nccl-2.29", env={"NCCL_PROFILER_PLUGIN": "/x/none.so"})
        self.assertEqual(r.value, "/x/none.so")

    def test_env_values_and_errors(self):
        r = proxytrace.probe("rccl", env={b"NCCL_PROFILER_PLUGIN": os.fsencode(self.good)})
        self.assertTrue(r.ok)
        for bad in ({"A=B": "x"}, {"": "x"}, {"NCCL_PROFILER_PLUGIN": "a\0b"}):
            with self.assertRaises(ValueError):
                proxytrace.probe("rccl", env=bad)
        with self.assertRaises(TypeError):
            proxytrace.probe("rccl", env={"NCCL_PROFILER_PLUGIN": 3})

    def test_path_and_name_go_through_the_loaders_checks(self):
        r = proxytrace.probe("rccl", env={}, path="good.so")
        self.assertEqual(r.status, "PT_EINVAL")
        self.assertIn("has no '/'", r.notes[0])
        r = proxytrace.probe("rccl", env={}, path=self.good, plugin="x")
        self.assertEqual(r.status, "PT_EINVAL")
        r = proxytrace.probe("nccl-2.30", env={"LD_LIBRARY_PATH": self.d}, name="mine")
        self.assertIn(("libnccl-profiler-mine.so", "short_name"),
                      [(c.name, c.source) for c in r.candidates])
        r = proxytrace.probe("rccl", env={}, path=ptest.PLUGIN)
        self.assertEqual((r.ok, r.value_origin), (True, "argument"))

    def test_home_major_and_net_plugin(self):
        lib = os.path.join(self.d, "home", "lib")
        os.makedirs(lib)
        shutil.copy(ptest.test_plugin("good2"),
                    os.path.join(lib, "librccl-profiler-proxytrace.so.2.0.0"))
        r = proxytrace.probe("nccl-2.30", env={}, home=os.path.join(self.d, "home"))
        self.assertEqual(r.status, "PT_EINCOMPATIBLE")
        self.assertEqual(r.candidates[-1].outcome, "wrong_major")
        r = proxytrace.probe("nccl-2.30", env={}, home=os.path.join(self.d, "home"), major=2)
        self.assertTrue(r.ok)
        self.assertEqual(r.candidates[-1].source, "home")
        r = proxytrace.probe("nccl-2.28", env={}, net_plugin=ptest.test_plugin("v5only"))
        self.assertEqual((r.ok, r.candidates[-1].source, r.api_version), (True, "net_plugin", 5))
        with self.assertRaises(TypeError):
            proxytrace.probe("rccl", env={}, major="2")

    def test_rccl_dir_folder_or_file(self):
        rccl = os.path.join(self.d, "rccl")
        os.makedirs(rccl)
        shutil.copy(ptest.test_plugin("fakerccl"), os.path.join(rccl, "librccl.so"))
        shutil.copy(ptest.test_plugin("good"),
                    os.path.join(rccl, "librccl-profiler-proxytrace.so"))
        env = {"RCCL_ENABLE_PROXY_TRACE": "1"}
        for where in (rccl, os.path.join(rccl, "librccl.so")):
            r = proxytrace.probe("rccl", env=env, rccl_dir=where)
            self.assertTrue(r.ok, r.report)
            self.assertEqual([c.source for c in r.candidates if c.outcome == "ok"], ["autoload"])
        with self.assertRaises(FileNotFoundError):
            proxytrace.probe("rccl", env=env, rccl_dir=os.path.join(self.d, "missing"))

    def test_conf_files(self):
        conf = os.path.join(self.d, "nccl.conf")
        with open(conf, "w") as f:
            f.write("NCCL_PROFILER_PLUGIN=%s\n" % self.good)
        env = {"NCCL_CONF_FILE": conf, "HOME": self.d}
        r = proxytrace.probe("nccl-2.28", env=env)
        self.assertEqual((r.ok, r.value_origin), (True, conf))
        r = proxytrace.probe("nccl-2.28", env=env, conf_files=False)
        self.assertIsNone(r.value)

    def test_deep_loads_in_a_child(self):
        r = proxytrace.probe("rccl", env={}, plugin=ptest.PLUGIN, deep=True)
        self.assertEqual((r.ok, r.mode, r.plugin_name), (True, "load", "ProxyTrace"))
        self.assertEqual(r.host_info.name, "rccl")
        # what only loading shows: an undefined symbol
        r = proxytrace.probe("rccl", env={}, plugin=ptest.test_plugin("undef"))
        self.assertTrue(r.ok)
        r = proxytrace.probe("rccl", env={}, plugin=ptest.test_plugin("undef"), deep=True)
        self.assertEqual(r.status, "PT_ELOAD")
        with self.assertRaises(proxytrace.ProxytraceError) as cm:
            proxytrace.probe("rccl", env={}, plugin=ptest.test_plugin("crash"), deep=True)
        self.assertIn("killed the process", str(cm.exception))
        # the plugin was never loaded here
        with open("/proc/self/maps") as f:
            self.assertNotIn("crash.so", f.read())

    def test_concurrent_probes(self):
        results = {}

        def worker(i):
            plugin = self.good if i % 2 else os.path.join(self.d, "missing.so")
            results[i] = [proxytrace.probe("rccl", env={"NCCL_PROFILER_PLUGIN": plugin}).ok
                          for _ in range(20)]

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(8):
            self.assertEqual(results[i], [bool(i % 2)] * 20)


if __name__ == "__main__":
    unittest.main()
