"""The randomized trust test of `proxytrace analyze`: it may say less when
its input is damaged, never something false.

Each job is drawn from a seeded generator — a host profile (RCCL and NVIDIA
NCCL 2.24-2.30), a topology of 2 to 9 ranks, 1-3 channels, and a fault: a
stalled GPU, a rank that posts no receives, a slow link (paced, so that
emulated time and not the machine's load times it), or none — and run in
the emulator with the plugin's dump files on (PROXYTRACE_DUMP_DIR, a 50 ms
stall watchdog, the hung job held so every rank dumps; NVIDIA profiles,
which dump a completing job only periodically, with a 1 ms periodic dump).
The whole folder is analyzed first (the baseline); a job whose whole dumps
already disagree with the emulator's ground truth (run twice) is a case of
the fault matrix, or a completing job that the periodic timer did not dump
on every rank, not of trust: it is reported, counted, and its variants are
not drawn.

Then each job's folder is copied and damaged at random, one to three times
per variant: a file cut at a random byte, every file of a rank deleted, a
file duplicated into a subfolder, or a rank's older dumps mixed in (the
first dumps of its JSON file, in a subfolder, with or without its newest
ones), or stray text put beside the dumps (this repository's README and
documents, whose examples look like dumps). Each variant is analyzed
(`--json`), and the test fails when
  - the ground truth says the job hung and the analysis says "ok", or
  - a culprit is named that the ground truth does not name (by rank, or
    among the culprit's candidates), unless the analysis marks it
    `possible` and its rank, a candidate or a rank it gives as the reason
    (`possibleBecause`) is one whose dumps were damaged or absent;
  - a rank whose file was cut (and not deleted) is named as one that never
    called the collective (`not_entered`) or wrote no dump (`rank_missing`):
    a cut file proves that the file was cut, nothing about the rank;
  - the command crashes, or its exit status does not match its verdict.
"incomplete", "unusable", fewer culprits, or a possible culprit on a
damaged rank are honest answers. Slowness is judged only in slow-link jobs
(--slow-factor 1000 elsewhere): in the others the run times of a busy
machine would decide it, which is the fault matrix's concern.

Usage: trust.py BUILD-DIR SEED JOBS VARIANTS; prints its seed and counts.
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

B = os.path.abspath(sys.argv[1])
SEED = int(sys.argv[2])
JOBS = int(sys.argv[3])
VARIANTS = int(sys.argv[4])
PT = os.path.join(B, "proxytrace")
PLUGIN = os.path.join(B, "librccl-profiler-proxytrace.so")
RUN = os.environ.get("PROXYTRACE_EMULATOR", "").split()
HOSTS = ["rccl", "nccl-2.30", "nccl-2.29", "nccl-2.28", "nccl-2.27", "nccl-2.26", "nccl-2.24"]
TOPOS = [(2, 1), (2, 2), (2, 4), (3, 2), (4, 1), (3, 3)]
EXIT = {"ok": 0, "hang": 1, "slow": 1, "unusable": 2, "incomplete": 4}
RANK_RE = re.compile(r"-r(-?\d+)-")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STRAY = [os.path.join(ROOT, p) for p in ("README.md", "docs/dump-json.md", "docs/metrics.md", "docs/analyze.md")]


def cli(args, **kw):
    return subprocess.run(RUN + [PT] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def draw_job(rng):
    host = rng.choice(HOSTS)
    nodes, rpn = rng.choice(TOPOS)
    n = nodes * rpn
    ch = rng.randint(1, 3)
    kind = rng.choices(["stall", "no-recv", "slow-link", "none"], [45, 15, 15, 25])[0]
    args = ["--host", host, "--nodes", str(nodes), "--ranks-per-node", str(rpn), "--channels", str(ch),
            "--ops", rng.choice(["allreduce:1M", "allreduce:1M,sendrecv:1M", "sendrecv:2M"]),
            "--seed", str(rng.randint(1, 10000))]
    hang = kind in ("stall", "no-recv")
    if kind == "stall":
        # transfers 0 and 1 of a SIMPLE all-reduce on two nodes are a known
        # case of the fault matrix (the receiving rank is blamed)
        args += ["--stall", "%d:%s:%d" % (rng.randrange(n), rng.choice(["0", "all"]), rng.randint(2, 4))]
    elif kind == "no-recv":
        args += ["--no-recv", str(rng.randrange(n))]
    elif kind == "slow-link":
        args += ["--slow-link", "%d:16" % rng.randrange(n), "--poll-us", "50"]
    args += ["--iters", "2" if hang else "6"]
    if kind == "none" and host != "rccl":
        # a completing NVIDIA job is dumped only by the 1 ms timer: paced, it
        # runs long enough for every rank to be dumped
        args += ["--poll-us", "20"]
    env = ["--env", "PROXYTRACE_STALL_MS=50"]
    if hang:
        args += ["--hold", "0.3"]
    elif host != "rccl":
        env += ["--env", "PROXYTRACE_DUMP_INTERVAL_MS=1"]
    return kind, args + env


def run_job(d, args):
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    files = os.path.join(d, "files")
    p = cli(["sim", "--plugin", PLUGIN, "--quiet", "--dump-dir", os.path.join(d, "logs"),
             "--env", "PROXYTRACE_DUMP_DIR=" + files, "--truth-json", os.path.join(d, "truth.json")] + args)
    if p.returncode not in (0, 3) or not os.path.exists(os.path.join(d, "truth.json")):
        return None  # a fault this job does not have (a step beyond its ops): drawn again
    with open(os.path.join(d, "truth.json")) as f:
        truth = json.load(f)
    return truth if os.path.isdir(files) and os.listdir(files) else None


def analyze(folder, kind):
    args = ["analyze", "--json"] + ([] if kind == "slow-link" else ["--slow-factor", "1000"]) + [folder]
    p = cli(args)
    try:
        doc = json.loads(p.stdout.decode("utf-8"))
    except ValueError:
        doc = None
    return p.returncode, doc, p.stderr.decode("utf-8", "replace")


def rank_of(name):
    m = RANK_RE.search(name)
    return int(m.group(1)) if m else None


NAMED = {"true": 0, "possible": 0}


def judge(truth, rc, doc, damaged, absent, cut=frozenset()):
    """What is false in the answer (a list of reasons; empty: trustworthy).
    Counts the culprits named rightly and those named as possible."""
    if doc is None or rc not in EXIT.values():
        return ["no JSON document, exit %d" % rc]
    bad = []
    v = doc["verdict"]
    if EXIT.get(v) != rc:
        bad.append("verdict %s with exit status %d" % (v, rc))
    if truth["verdict"] == "hang" and v == "ok":
        bad.append("ok for a job that hung")
    named = {c["rank"] for c in truth.get("culprits", [])} | set(truth.get("deadRanks", []))
    unseen = damaged | absent
    for c in doc["culprits"]:
        if c["rank"] in cut and c["cause"] in ("not_entered", "rank_missing"):
            bad.append("culprit rank %d (%s), whose file was only cut" % (c["rank"], c["cause"]))
            continue
        ranks = {c["rank"]} | set(c.get("candidates") or [])
        if ranks & named:
            NAMED["true"] += 1
            continue
        if c.get("possible") and (ranks | set(c.get("possibleBecause") or [])) & unseen:
            NAMED["possible"] += 1
            continue
        bad.append("culprit rank %d (%s%s), the ground truth names %s" %
                   (c["rank"], c["cause"], ", possible" if c.get("possible") else "", sorted(named) or "none"))
    return bad


def dumps_of(path):
    """The JSON file's lines, grouped into whole dumps (header .. end)."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    out, cur = [], []
    for line in lines:
        if not line:
            continue
        cur.append(line)
        if line.startswith(b'{"type":"end"'):
            out.append(b"\n".join(cur) + b"\n")
            cur = []
    return out


def damage(rng, src, dst):
    """Copies the job's files to dst, damaged 1-3 times. Returns (what was
    done, ranks whose dumps were touched, ranks of a cut file)."""
    shutil.copytree(src, dst)
    done, touched, cut = [], set(), set()
    for _ in range(rng.randint(1, 3)):
        names = sorted(n for n in os.listdir(dst) if n.endswith((".jsonl", ".txt")))
        if not names:
            break
        what = rng.choice(["cut", "delete", "dup", "older", "stray"])
        name = rng.choice(names)
        r = rank_of(name)
        path = os.path.join(dst, name)
        if what == "cut":
            size = os.path.getsize(path)
            at = rng.randrange(size) if size else 0
            with open(path, "r+b") as f:
                f.truncate(at)
            done.append("cut %s at %d of %d bytes" % (name, at, size))
            if r is not None:
                cut.add(r)
        elif what == "delete":
            if r is None:
                continue
            tag = "-r%d-" % r
            for n in names:
                if tag in n:
                    os.unlink(os.path.join(dst, n))
            done.append("deleted rank %d" % r)
            cut.discard(r)
        elif what == "stray":
            os.makedirs(os.path.join(dst, "notes"), exist_ok=True)
            for doc in STRAY:
                shutil.copy(doc, os.path.join(dst, "notes", os.path.basename(doc)))
            done.append("stray documents put beside the dumps")
            continue  # touches no rank
        elif what == "dup":
            os.makedirs(os.path.join(dst, "dup"), exist_ok=True)
            shutil.copy(path, os.path.join(dst, "dup", name))
            done.append("duplicated %s" % name)
            continue  # touches no rank
        else:
            if not name.endswith(".jsonl"):
                continue
            ds = dumps_of(path)
            if len(ds) < 2:
                continue
            k = rng.randint(1, len(ds) - 1)
            os.makedirs(os.path.join(dst, "older"), exist_ok=True)
            with open(os.path.join(dst, "older", name), "wb") as f:
                f.write(b"".join(ds[:k]))
            newest_gone = rng.random() < 0.5
            if newest_gone:
                os.unlink(path)
                twin = path[:-len(".jsonl")] + ".txt"
                if os.path.exists(twin):
                    os.unlink(twin)
            done.append("older dumps of %s mixed in (%d of %d%s)" % (name, k, len(ds),
                                                                   ", its newest deleted" if newest_gone else ""))
            if not newest_gone:
                continue
        if r is not None:
            touched.add(r)
        elif what != "dup":
            touched.add(-1)
    return done, touched, cut


def ranks_named(folder):
    out = set()
    for _, _, files in os.walk(folder):
        for n in files:
            r = rank_of(n)
            if r is not None and r >= 0:
                out.add(r)
    return out


def main():
    top = tempfile.mkdtemp(prefix="pt-trust-")
    counts = {"jobs": 0, "variants": 0, "failures": 0, "excluded": 0}
    kinds, verdicts = {}, {}
    try:
        tries = 0
        while counts["jobs"] + counts["excluded"] < JOBS and tries < JOBS * 4:
            tries += 1
            # one generator per job and per variant: a job is drawn the
            # same whatever the machine made of the jobs before it
            kind, args = draw_job(random.Random("%d/%d" % (SEED, tries)))
            jd = os.path.join(top, "job")
            truth = run_job(jd, args)
            if truth is None:
                continue
            files = os.path.join(jd, "files")
            rc, doc, err = analyze(files, kind)
            whole = judge(truth, rc, doc, set(), set())
            if whole or (doc and doc["verdict"] != truth["verdict"]):
                truth = run_job(jd, args)  # a slow link timed on a busy machine: once more
                if truth is None:
                    continue
                rc, doc, err = analyze(files, kind)
                whole = judge(truth, rc, doc, set(), set())
                if whole or (doc and doc["verdict"] != truth["verdict"]):
                    counts["excluded"] += 1
                    print("excluded (the whole dumps do not agree with the ground truth: a case of the fault matrix, "
                          "or a completing job not dumped on every rank): sim %s: %s" %
                          (" ".join(args), "; ".join(whole) or "verdict %s, truth %s" %
                           (doc and doc["verdict"], truth["verdict"])))
                    continue
            counts["jobs"] += 1
            kinds[kind] = kinds.get(kind, 0) + 1
            nranks = truth["nRanks"]
            for v in range(VARIANTS):
                vd = os.path.join(top, "v")
                if os.path.isdir(vd):
                    shutil.rmtree(vd)
                done, touched, cut = damage(random.Random("%d/%d/%d" % (SEED, tries, v)), files, vd)
                absent = set(range(nranks)) - ranks_named(vd)
                rc, doc, err = analyze(vd, kind)
                counts["variants"] += 1
                if doc:
                    verdicts[doc["verdict"]] = verdicts.get(doc["verdict"], 0) + 1
                bad = judge(truth, rc, doc, touched, absent, cut)
                if bad:
                    counts["failures"] += 1
                    print("FALSE (seed %d, job %d, variant %d): sim %s; damage: %s" %
                          (SEED, tries, v, " ".join(args), "; ".join(done)))
                    for b in bad:
                        print("  | " + b)
                    if err.strip():
                        print("  | stderr: " + err.strip()[:300])
                    keep = os.path.join(tempfile.gettempdir(), "pt-trust-failed-%d-%d" % (SEED, counts["failures"]))
                    if not os.path.exists(keep):
                        shutil.copytree(vd, keep)
                        with open(os.path.join(keep, "truth.json"), "w") as f:
                            json.dump(truth, f)
                        print("  | the damaged folder is kept in " + keep)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("trust: seed %d: %d jobs (%s), %d damaged variants (%s); culprits named: %d the ground truth names, "
          "%d possible on a damaged rank; %d jobs excluded; %d false answers" %
          (SEED, counts["jobs"], ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items())),
           counts["variants"], ", ".join("%d %s" % (n, k) for k, n in sorted(verdicts.items())),
           NAMED["true"], NAMED["possible"], counts["excluded"], counts["failures"]))
    return 1 if counts["failures"] or counts["jobs"] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
