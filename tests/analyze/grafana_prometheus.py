#!/usr/bin/env python3
"""grafana_prometheus.py DASHBOARD WORKDIR CONFIG...

The Grafana dashboard's queries against a real Prometheus fed by real
metrics files: node_exporter's textfile collector serves the .prom files of
emulated jobs, Prometheus (both Debian's, on 127.0.0.1, free ports, a
storage folder of its own) scrapes it every second, and every panel's
expression, its variables filled in as Grafana fills them, is evaluated
through the HTTP API and compared with what the JSON lines files of the same
jobs say. Each CONFIG is NAME:DIR_A:DIR_B, the metrics folders of one job
shape written twice — a shorter run (A), then a longer one of the same seed
(B) — so that every counter moves: the folder served starts as every A,
then turns to every B (one rename), and the rate panels are evaluated over
exactly the samples from the first A scrape to the last B scrape, where
Prometheus' rate() is (last - first) / (their time apart), no
extrapolation. Each config's communicator is checked alone ($comm = its
commHash) and all together ($comm = All).

Expected values come from the .jsonl files (the other file format, a reader
of its own): per (peer, direction) edge its counts, times, bytes and
histograms — the 4-per-octave buckets folded into the Prometheus file's one
bound per power of two — and per communicator its unmeasured ops and
memory. Quantiles follow Prometheus' histogram_quantile: linear inside the
bucket the rank falls in. A panel title with no expected value here is a
failure: a new panel needs its check.

Exit 0 when every panel's every series matches (relative 1e-6), 1 otherwise.
"""
import glob
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def die(msg):
    print("FAIL:", msg)
    sys.exit(1)


# ---- the files ----

TIME_BOUNDS = [2.0 ** k / 1e9 for k in range(7, 38)] + [math.inf]  # docs/metrics.md: every power of two ns


def fold(buckets):
    """JSON buckets [[upper_ns | null, count], ...] -> counts per Prometheus bound."""
    out = [0] * len(TIME_BOUNDS)
    for upper, n in buckets:
        if upper is None:
            out[-1] += n
            continue
        k = max(7, math.ceil(math.log2(upper)))
        out[k - 7 if k <= 37 else -1] += n
    return out


def read_jsonl(folder):
    """{comm: {"hosts": {host: (unmeasured, memory)} per rank, "edges": {(host, rank, peer, dir): edge}}}"""
    comms = {}
    files = sorted(glob.glob(os.path.join(folder, "proxytrace-metrics-*.jsonl")))
    if not files:
        die(f"no metrics files in {folder}")
    for f in files:
        head = None
        for line in open(f):
            o = json.loads(line)
            if o["type"] == "metrics":
                head = o
                c = comms.setdefault(o["commHash"], {"heads": [], "edges": {}})
                c["heads"].append(o)
            elif o["type"] == "edge" and o["channel"] is None:
                key = (head["host"], str(o["rank"]), str(o["peer"]), o["dir"])
                comms[head["commHash"]]["edges"][key] = o
    return comms


# ---- Prometheus and node_exporter ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def api(port, path, **params):
    q = urllib.parse.urlencode(params, doseq=True)
    o = json.loads(get(f"http://127.0.0.1:{port}/api/v1/{path}?{q}"))
    if o.get("status") != "success":
        die(f"{path} {params}: {o}")
    return o["data"]


def wait_for(what, fn, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if fn():
                return
        except OSError:
            pass
        time.sleep(0.2)
    die(f"waited {seconds} s for {what}")


# ---- expected values, from the JSON lines ----

def quantile(q, counts):
    """Prometheus' histogram_quantile over per-bound (non-cumulative) counts."""
    cum, run = [], 0
    for n in counts:
        run += n
        cum.append(run)
    if cum[-1] == 0:
        return math.nan
    rank = q * cum[-1]
    b = next((i for i in range(len(cum) - 1) if cum[i] >= rank), len(cum) - 1)
    if b == len(cum) - 1:
        return TIME_BOUNDS[-2]
    start, count = 0.0, cum[b]
    if b > 0:
        start = TIME_BOUNDS[b - 1]
        count -= cum[b - 1]
        rank -= cum[b - 1]
    return start + (TIME_BOUNDS[b] - start) * (rank / count)


class Expect:
    """What each panel should show, from the A and B files of the chosen comms."""

    def __init__(self, a, b, comms, seconds):
        self.a, self.b, self.comms, self.s = a, b, comms, seconds

    def edges(self, side):
        for comm in self.comms:
            for key, e in side[comm]["edges"].items():
                yield (comm,) + key, e

    def delta(self, field, scale=1.0):
        """per edge: (B - A) / the seconds between, `field` scaled"""
        out = {}
        for k, e in self.edges(self.b):
            before = self.a[k[0]]["edges"].get(k[1:])
            out[k] = (e.get(field, 0) - (before.get(field, 0) if before else 0)) * scale / self.s
        return out

    def hist(self, which):
        out = {}
        for k, e in self.edges(self.b):
            before = self.a[k[0]]["edges"].get(k[1:])
            now = fold(e[which]["buckets"])
            was = fold(before[which]["buckets"]) if before else [0] * len(now)
            out[k] = [x - y for x, y in zip(now, was)]
        return out

    @staticmethod
    def group(per_edge, labels, add=lambda x, y: x + y):
        # edge key: (comm, host, rank, peer, direction)
        idx = {"comm": 0, "host": 1, "rank": 2, "peer": 3, "direction": 4}
        out = {}
        for k, v in per_edge.items():
            g = tuple(k[idx[l]] for l in labels)
            out[g] = add(out[g], v) if g in out else v
        return out

    def gauge(self, side, field):
        return {k: float(e[field]) for k, e in self.edges(side)}

    def per_comm(self, side, field):
        out = {}
        for comm in self.comms:
            for h in side[comm]["heads"]:
                out[(h["host"],)] = out.get((h["host"],), 0) + h[field]
        return out

    def sum_lists(self, x, y):
        return [p + q for p, q in zip(x, y)]

    def quantiles(self, q, which, labels):
        g = self.group(self.hist(which), labels, self.sum_lists)
        return {k: quantile(q, v) for k, v in g.items()}


EDGE = ("rank", "peer", "direction")
EDGE_OF_COMM = ("comm", "rank", "peer", "direction")

# panel title, refId -> (labels of a series, expected values at the last B scrape;
#                         at the last A scrape too for instant gauges)
PANELS = {
    ("p99 network time per edge", "A"): (EDGE, lambda x: x.quantiles(0.99, "network", EDGE)),
    ("p99 GPU wait per edge", "A"): (EDGE, lambda x: x.quantiles(0.99, "gpuWait", EDGE)),
    ("p50 step time per rank", "A"): (("rank",), lambda x: x.quantiles(0.5, "step", ("rank",))),
    ("throughput per edge", "A"): (EDGE_OF_COMM, lambda x: x.group(x.gauge(x.b, "throughput_Bps"), EDGE_OF_COMM)),
    ("bytes per second per rank", "A"): (("rank", "direction"),
                                         lambda x: x.group(x.delta("bytes"), ("rank", "direction"))),
    ("send credit wait (share of time)", "A"): (("rank", "peer"), lambda x: x.group(
        {k: v for k, v in x.delta("creditWait_ns", 1e-9).items() if k[4] == "send"}, ("rank", "peer"))),
    ("ops in flight per rank", "A"): (("rank",), lambda x: x.group(x.gauge(x.b, "inFlight"), ("rank",))),
    ("steps per second per rank", "A"): (("rank",), lambda x: x.group(x.delta("steps"), ("rank",))),
    ("busy share per edge", "A"): (EDGE_OF_COMM, lambda x: x.group(x.delta("busy_ns", 1e-9), EDGE_OF_COMM)),
    ("unmeasured ops, metrics memory", "A"): (("host",), lambda x: x.per_comm(x.b, "unmeasuredOps")),
    ("unmeasured ops, metrics memory", "B"): (("host",), lambda x: x.per_comm(x.b, "memoryBytes")),
}
# instant panels, also checked at the first scrape against the A files
INSTANT = {
    ("throughput per edge", "A"): lambda x: x.group(x.gauge(x.a, "throughput_Bps"), EDGE_OF_COMM),
    ("ops in flight per rank", "A"): lambda x: x.group(x.gauge(x.a, "inFlight"), ("rank",)),
    ("unmeasured ops, metrics memory", "A"): lambda x: x.per_comm(x.a, "unmeasuredOps"),
    ("unmeasured ops, metrics memory", "B"): lambda x: x.per_comm(x.a, "memoryBytes"),
}


def same(x, y):
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return abs(x - y) <= 1e-6 * max(abs(x), abs(y)) + 1e-12


def compare(what, result, labels, want):
    got = {}
    for r in result:
        k = tuple(r["metric"].get(l, "") for l in labels)
        if k in got:
            fail(f"{what}: two series for {dict(zip(labels, k))} (summed twice?)")
        got[k] = float(r["value"][1])
    if set(got) != set(want):
        fail(f"{what}: series {sorted(got)}, want {sorted(want)}")
        return 0
    bad = [(k, got[k], want[k]) for k in want if not same(got[k], want[k])]
    for k, g, w in bad[:4]:
        fail(f"{what} {dict(zip(labels, k))}: {g!r}, the files say {w!r} ({g / w if w else math.inf:.3g}x)")
    return len(want)


def main():
    dash_path, work = sys.argv[1], sys.argv[2]
    configs = [c.split(":") for c in sys.argv[3:]]
    dash = json.load(open(dash_path))
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    all_value = {n: v.get("allValue", ".*") for n, v in variables.items()}

    # The files: A and B of each config, read, and staged as the two folders served.
    a, b = {}, {}
    comm_of = {}
    for name, dir_a, dir_b in configs:
        ra, rb = read_jsonl(dir_a), read_jsonl(dir_b)
        if set(ra) != set(rb) or len(ra) != 1:
            die(f"{name}: A and B hold communicators {sorted(ra)} and {sorted(rb)}, want one, the same")
        comm_of[name] = next(iter(ra))
        a.update(ra)
        b.update(rb)
        for k, e in rb[comm_of[name]]["edges"].items():
            was = ra[comm_of[name]]["edges"].get(k)
            for f in ("ops", "steps", "bytes", "busy_ns", "creditWait_ns"):
                if was and e.get(f, 0) < was.get(f, 0):
                    die(f"{name}: {k} {f} went down from A to B: the runs are not one job, longer")
    if len(set(comm_of.values())) != len(configs):
        die(f"the configs share a communicator: {comm_of}")
    # One name per rank and communicator in both folders (the files' own
    # names hold the pid): a scrape that lists one folder and reads the
    # other finds every file, A or B.
    for phase, dirs in (("A", [c[1] for c in configs]), ("B", [c[2] for c in configs])):
        os.makedirs(os.path.join(work, phase))
        for d in dirs:
            for f in glob.glob(os.path.join(d, "proxytrace-metrics-*.prom")):
                head = json.loads(open(f[:-len(".prom")] + ".jsonl").readline())
                shutil.copy(f, os.path.join(work, phase, f"r{head['rank']}-{head['commHash']}.prom"))
    served = os.path.join(work, "textfile")
    os.symlink(os.path.join(work, "A"), served)

    ne_port, prom_port = free_port(), free_port()
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: proxytrace\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{ne_port}']\n")
    procs = []
    try:
        procs.append(subprocess.Popen(
            ["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{ne_port}",
             "--collector.disable-defaults", "--collector.textfile",
             f"--collector.textfile.directory={served}"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "node_exporter.log"), "w")))
        wait_for("node_exporter to serve the files",
                 lambda: "proxytrace_ops_total" in get(f"http://127.0.0.1:{ne_port}/metrics"), 20)
        scraped = get(f"http://127.0.0.1:{ne_port}/metrics")
        if "node_textfile_scrape_error 0" not in scraped:
            die("node_exporter could not read a metrics file: " +
                "".join(l for l in scraped.splitlines(True) if "textfile" in l))
        procs.append(subprocess.Popen(
            ["prometheus", f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/tsdb",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w")))
        wait_for("Prometheus to be ready", lambda: "Ready" in get(f"http://127.0.0.1:{prom_port}/-/ready"), 30)

        # A probe series that moves from A to B: its raw samples say when each phase was scraped.
        c0 = comm_of[configs[0][0]]
        key, e = next((k, e) for k, e in b[c0]["edges"].items() if e["steps"] != a[c0]["edges"][k]["steps"])
        host, rank, peer, direction = key
        probe = (f'proxytrace_steps_total{{comm="{c0}",host="{host}",rank="{rank}",peer="{peer}",'
                 f'direction="{direction}",channel="all"}}[10m]')
        va, vb = a[c0]["edges"][key]["steps"], e["steps"]

        def samples():
            r = api(prom_port, "query", query=probe)["result"]
            return [(float(t), float(v)) for t, v in r[0]["values"]] if r else []

        wait_for("two scrapes of the A files", lambda: sum(v == va for _, v in samples()) >= 2, 30)
        os.symlink(os.path.join(work, "B"), served + ".new")
        os.replace(served + ".new", served)
        wait_for("two scrapes of the B files", lambda: sum(v == vb for _, v in samples()) >= 2, 30)
        s = samples()
        if [v for _, v in s] != sorted(v for _, v in s) or set(v for _, v in s) != {va, vb}:
            die(f"the probe's samples are not A then B: {s}")
        t_first, t_last = s[0][0], s[-1][0]  # before the swap, and after it was whole
        span_ms = round((t_last - t_first) * 1000)
        print(f"ok   scraped A {sum(v == va for _, v in s)} times, B {sum(v == vb for _, v in s)} times, "
              f"over {span_ms} ms")

        # The variables' own queries: label_values(metric{...}, label).
        hosts = {h["host"] for c in b.values() for h in c["heads"]}
        got = set(api(prom_port, "label/host/values", **{"match[]": "proxytrace_ops_total"}))
        if got != hosts:
            fail(f"variable host: {sorted(got)}, the files say {sorted(hosts)}")
        got = set(api(prom_port, "label/comm/values", **{"match[]": 'proxytrace_ops_total{host=~".*"}'}))
        if got != set(comm_of.values()):
            fail(f"variable comm: {sorted(got)}, the files say {sorted(comm_of.values())}")

        targets = [(p["title"], t["refId"], t["expr"]) for p in dash["panels"] for t in p["targets"]]
        for title, ref, _ in targets:
            if (title, ref) not in PANELS:
                fail(f"panel {title!r} target {ref}: no expected value in this test")
        choices = [(name, [comm_of[name]], comm_of[name]) for name, _, _ in configs]
        choices.append(("all", list(comm_of.values()), all_value["comm"]))
        series = 0
        for name, comms, comm_value in choices:
            x = Expect(a, b, comms, span_ms / 1000)
            for title, ref, expr in targets:
                if (title, ref) not in PANELS:
                    continue
                q = (expr.replace("$__rate_interval", f"{span_ms}ms").replace("$host", all_value["host"])
                     .replace("$comm", comm_value))
                labels, want = PANELS[(title, ref)]
                what = f"{name}: {title} [{ref}]"
                series += compare(what, api(prom_port, "query", query=q, time=f"{t_last:.3f}")["result"],
                                  labels, want(x))
                if (title, ref) in INSTANT:
                    series += compare(what + " (A)", api(prom_port, "query", query=q, time=f"{t_first:.3f}")
                                      ["result"], labels, INSTANT[(title, ref)](x))
                if title in ("throughput per edge", "bytes per second per rank"):
                    steps = x.group(x.delta("steps"), labels if "peer" in labels else ("rank", "direction"))
                    flat = [k for k, v in want(x).items() if v == 0 and steps.get(k, 0) > 0 and "recv" in k]
                    if flat:
                        fail(f"{what}: receive series that moved steps read 0: {flat}")
        print(f"{'ok  ' if not failures else 'FAIL'} {len(targets)} panel queries x {len(choices)} choices of "
              f"$comm: {series} series compared with the files")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
    if failures:
        for log in ("node_exporter.log", "prometheus.log"):
            print(f"--- {log}:")
            print(open(os.path.join(work, log)).read()[-2000:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
