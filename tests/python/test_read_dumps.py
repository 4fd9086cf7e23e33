"""proxytrace.read_dumps() is `proxytrace analyze --records`: on the
emulator's dumps — RCCL's legacy text from its dump hook in the rank logs,
and the plugin's JSON-lines files of NVIDIA NCCL's stall watchdog — the
Python records equal the command's lines field for field, each record
holds what its source line in the dump says (every counter, time and key),
the ops the emulator's ground truth names as stuck are there with their
rank, peer, channel, direction and counters (those the analysis shows as
evidence), every dump's records come with all_dumps, and a dump read twice
(a rank's JSON file and its text twin, or its log) counts once."""

import json
import os
import re
import unittest

import ptest
import proxytrace

COUNTERS = ("posted", "kernelCopyReady", "rtrRecv", "rtsSend", "received", "transmitted",
            "flushed", "done", "recvTail", "tailOrHead", "fifoSzOrHeadCache")
TIMES = ("create_ns", "last_ns", "posted_ns", "send_ns", "progress_ns")
# The legacy text's label of each counter (ProxyTrace's record line).
LEGACY = {"posted": "po", "kernelCopyReady": "ke", "tailOrHead": "tail/h", "recvTail": "recvT",
          "fifoSzOrHeadCache": "connSz/h", "transmitted": "trans", "flushed": "flushed",
          "received": "recvd", "done": "done"}
# The stall watchdog needs the job held a while past the stall; the
# sanitizer builds run the emulator several times slower.
HOLD = "1.5" if ptest.SAN else "0.8"


def cli_records(args):
    rc, out, err = ptest.c_cli(["analyze", "--records"] + args)
    assert rc == 0, (args, rc, err)
    return [json.loads(line) for line in out.splitlines()]


def source_line(record):
    path, line = record["source"].rsplit(":", 1)
    with open(path, errors="surrogateescape") as f:
        for i, text in enumerate(f, 1):
            if i == int(line):
                return text
    raise AssertionError("%s has no line %s" % (path, line))


class ReadDumps(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.d = ptest.tmpdir_for_class(cls)
        cls.jobs = {  # the job hangs: exit 3
            name: ptest.sim_job(os.path.join(cls.d, name), ["--stall", "3:0:5"] + args, exits=(3,))
            for name, args in (("rccl", ["--host", "rccl"]),
                               ("nccl", ["--host", "nccl-2.28", "--hold", HOLD,
                                         "--env", "PROXYTRACE_STALL_MS=250"]))}
        rccl = os.path.join(cls.jobs["rccl"], "dumps")
        nccl = os.path.join(cls.jobs["nccl"], "dumps")
        cls.inputs = {  # what each test reads: the two forms, alone and together
            "rccl hook logs": cls.files(rccl, ".log"),
            "rccl dump files": cls.files(rccl, ".jsonl"),
            "rccl directory": [rccl],
            "nccl dump files": cls.files(nccl, ".jsonl"),
            "nccl text twins": cls.files(nccl, ".txt"),
            "nccl directory": [nccl],
        }

    @staticmethod
    def files(d, ext):
        out = sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(ext) and n != "host.log")
        assert out, (d, ext)
        return out

    def test_equals_the_command(self):
        for name, paths in self.inputs.items():
            for every in (False, True):
                with self.subTest(input=name, all_dumps=every):
                    py = proxytrace.read_dumps(paths, all_dumps=every)
                    cli = cli_records((["--all-dumps"] if every else []) + paths)
                    self.assertTrue(cli)
                    self.assertEqual(len(py), len(cli))
                    for r, c in zip(py, cli):
                        self.assertIsInstance(r, proxytrace.OpRecord)
                        self.assertEqual(sorted(r.keys()), sorted(c))
                        for k in c:
                            self.assertEqual(r.to_dict()[k], c[k], (k, c["source"]))

    def test_every_field_as_its_source_line_says(self):
        for name, paths in self.inputs.items():
            with self.subTest(input=name):
                for r in proxytrace.read_dumps(paths, all_dumps=True):
                    self.assertEqual(tuple(r.counters.keys()), COUNTERS)
                    self.assertEqual(r.key, "<%s:%d:%d>" % (r.commHash, r.opCount, r.opId))
                    line = source_line(r.to_dict())
                    if r.dump.format == "jsonl":
                        src = json.loads(line)
                        self.assertEqual(src["type"], "op")
                        self.assertEqual(src["dumpSeq"], r.dump.dumpSeq)
                        for k in ("rank", "peer", "channel", "dir", "commHash", "opCount", "opId",
                                  "key", "state", "status", "nSteps", "nBytes", "func", "proto",
                                  "pattern", "totalBytes", "chunkSize", "coll", "seq", "counters",
                                  "lastCounter") + TIMES:
                            self.assertEqual(r.to_dict()[k], src[k], (k, r.source))
                    else:
                        self.assertIn("<%s:%d:%d>" % (r.commHash, r.opCount, r.opId), line)
                        self.assertIn(", %d->%d(%s), chan:%d, status:%s," % (
                            r.rank, r.peer, "S" if r.dir == "send" else "R", r.channel, r.status), line)
                        self.assertIn(", ns:%d, nb:%d," % (r.nSteps, r.nBytes), line)
                        for k, label in LEGACY.items():
                            self.assertRegex(line, r"[ ,]%s:%d\b" % (re.escape(label), r.counters[k]))
                        # legacy times are milliseconds
                        self.assertIn("createT:%d, lastT:%d," % (r.create_ns // 10**6, r.last_ns // 10**6),
                                      line)
                        self.assertFalse(r.dump.nsTimes)

    def test_the_stuck_ops_of_the_ground_truth(self):
        for host in ("rccl", "nccl"):
            job = self.jobs[host]
            with open(os.path.join(job, "truth.json")) as f:
                truth = json.load(f)
            self.assertEqual(truth["verdict"], "hang")
            dumps = os.path.join(job, "dumps")
            a = proxytrace.analyze(dumps)
            for form in ("hook logs", "dump files") if host == "rccl" else ("dump files", "text twins"):
                records = proxytrace.read_dumps(self.inputs["%s %s" % (host, form)])
                for want in truth["culprits"]:
                    with self.subTest(host=host, form=form, culprit=want):
                        c = [c for c in a.culprits if (c.rank, c.channel) == (want["rank"], want["channel"])]
                        self.assertTrue(c, a.culprits)
                        c = c[0]
                        sends = [r for r in records
                                 if (r.rank, r.channel, r.dir, r.opCount, r.peer)
                                 == (want["rank"], want["channel"], "send", c.opCount, c.peer)]
                        self.assertEqual(len(sends), 1, [str(r) for r in records if r.rank == want["rank"]])
                        s = sends[0]
                        self.assertNotEqual(s.status, "DONE")
                        self.assertLess(s.counters.done, s.nSteps)
                        self.assertLess(s.counters.transmitted, s.nSteps)
                        self.assertEqual(s.commHash, truth["commHash"])
                        # the receive it waits on, on the peer
                        recvs = [r for r in records
                                 if (r.rank, r.peer, r.channel, r.dir, r.opCount)
                                 == (s.peer, s.rank, s.channel, "recv", s.opCount)]
                        self.assertEqual(len(recvs), 1)
                        self.assertLess(recvs[0].counters.done, recvs[0].nSteps)
                        # what the analysis shows as evidence is these records
                        ev = {(e.rank, e.dir): e for e in c.evidence}
                        for r in (s, recvs[0]):
                            if (r.rank, r.dir) in ev:
                                self.assertEqual(ev[r.rank, r.dir].counters.to_dict(), r.counters.to_dict())
                                self.assertEqual(ev[r.rank, r.dir].nSteps, r.nSteps)
                        self.assertIn((s.rank, "send"), ev)

    def test_latest_and_every_dump(self):
        paths = self.inputs["nccl dump files"]
        latest = proxytrace.read_dumps(paths)
        every = proxytrace.read_dumps(paths, all_dumps=True)
        self.assertGreater(len(every), len(latest))
        everys = [r.to_dict() for r in every]
        for r in latest:
            self.assertIn(r.to_dict(), everys)
        seqs = {}
        for r in every:
            seqs.setdefault(r.rank, set()).add(r.dump.dumpSeq)
        self.assertEqual(sorted(seqs), list(range(8)))
        self.assertTrue(any(len(s) > 1 for s in seqs.values()), seqs)
        triggers = {r.dump.trigger for r in every}
        self.assertIn("stall", triggers)
        # grouped by communicator and rank
        order = [(r.commHash, r.rank) for r in every]
        self.assertEqual(order, sorted(order, key=lambda x: (int(x[0]), x[1])))
        # one latest dump per rank
        for rank in range(8):
            self.assertEqual(len({r.dump.dumpSeq for r in latest if r.rank == rank}), 1)

    def test_a_dump_read_twice_counts_once(self):
        for host in ("rccl", "nccl"):
            with self.subTest(host=host):
                d = self.inputs["%s directory" % host]
                jsonl = self.inputs["%s dump files" % host]
                for every in (False, True):
                    both = proxytrace.read_dumps(d, all_dumps=every)
                    self.assertEqual({r.dump.format for r in both}, {"jsonl"})
                    self.assertEqual([r.to_dict() for r in both],
                                     [r.to_dict() for r in proxytrace.read_dumps(jsonl, all_dumps=every)])
        text = proxytrace.read_dumps(self.inputs["rccl hook logs"])
        self.assertEqual(len(text), len(proxytrace.read_dumps(self.inputs["rccl dump files"])))
        self.assertEqual({r.dump.format for r in text}, {"text"})

    def test_no_dump_and_bad_arguments(self):
        empty = os.path.join(self.d, "empty")
        os.makedirs(empty, exist_ok=True)
        self.assertEqual(proxytrace.read_dumps([empty, os.path.join(self.d, "missing")]), [])
        with self.assertRaises(ValueError):
            proxytrace.read_dumps([])
        rc, out, err = ptest.c_cli(["analyze", "--records", os.path.join(self.d, "missing")])
        self.assertEqual((rc, out), (0, ""))
        self.assertIn("no input held a dump", err)
        self.assertIn("missing", err)
        for args in (["--all-dumps"], ["--records", "--json"], ["--records", "-v"]):
            with self.subTest(args=args):
                rc, out, err = ptest.c_cli(["analyze"] + args + [empty])
                self.assertEqual((rc, out), (2, ""))
                self.assertIn("--records", err)

    def test_drops_as_the_dump_header_says(self):
        # a job whose plugin reclaims the slots of leaked ops: counts that
        # differ from rank to rank, in both dump forms
        job = ptest.sim_job(os.path.join(self.d, "drops"), [
            "--host", "nccl-2.28", "--leak-ops", "10", "--env", "PROXYTRACE_MAX_OPS=16"])
        dumps = os.path.join(job, "dumps")
        for ext in (".jsonl", ".txt"):
            with self.subTest(form=ext):
                records = proxytrace.read_dumps(self.files(dumps, ext), all_dumps=True)
                self.assertTrue(records)
                for r in records:
                    path = r.source.rsplit(":", 1)[0]
                    with open(path) as f:
                        text = f.read()
                    if ext == ".jsonl":
                        headers = [json.loads(line) for line in text.splitlines()
                                   if '"type":"dump"' in line]
                        want = [h["drops"] for h in headers if h["dumpSeq"] == r.dump.dumpSeq]
                        self.assertEqual(len(want), 1)
                        self.assertEqual(r.dump.drops.to_dict(), want[0])
                        self.assertGreater(r.dump.drops.opsReclaimed, 0)
                        self.assertEqual(r.dump.drops.opsDropped, 0)
                        self.assertEqual(len(r.dump.drops.keys()), 11)
                    else:  # the text has its drop line only once an op was dropped
                        self.assertNotIn("dropped or refused events", text)
                        self.assertIsNone(r.dump.drops)

    def test_str(self):
        r = proxytrace.read_dumps(self.inputs["rccl hook logs"])[0]
        self.assertEqual(str(r), "%s %d->%d(%s) chan %d" % (r.key, r.rank, r.peer,
                                                            r.dir[0].upper(), r.channel))


if __name__ == "__main__":
    unittest.main()
