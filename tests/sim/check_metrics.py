#!/usr/bin/env python3
"""check_metrics.py DIR [--ranks N] [--channels]

Checks the step metrics files the plugin wrote to DIR
(proxytrace-metrics-*.prom and .jsonl, docs/metrics.md):

* every .prom file parses with the Prometheus text parser of Debian's
  python3-prometheus-client, every family has a type, the expected
  families are there, every sample has the labels the docs promise, and
  every histogram is cumulative with its +Inf bucket equal to its count;
* every .jsonl file is a "metrics" header, its edges and an "end" line,
  each edge's histogram counts add up, and the two files of a
  communicator give the same steps and bytes per edge;
* with --ranks N there is a pair of files for each rank 0..N-1;
* with --channels the per-channel edges add up to their (peer, direction);
* every (peer, direction) edge that completed steps carries bytes, the
  receive edges too (stock NCCL and RCCL both report a receive's size).
Exits 0 when everything holds, 1 with the reasons otherwise.
"""
import glob
import json
import math
import os
import sys

from prometheus_client.parser import text_string_to_metric_families

EDGE_LABELS = {"host", "rank", "comm", "comm_name", "peer", "channel", "direction"}
COMM_LABELS = {"host", "rank", "comm", "comm_name"}
FAMILIES = {
    "proxytrace_ops": "counter", "proxytrace_ops_in_flight": "gauge", "proxytrace_steps": "counter",
    "proxytrace_bytes": "counter", "proxytrace_sized_steps": "counter", "proxytrace_busy_seconds": "counter",
    "proxytrace_throughput_bytes_per_second": "gauge", "proxytrace_send_credit_wait_seconds": "counter",
    "proxytrace_step_gpu_wait_seconds": "histogram", "proxytrace_step_network_seconds": "histogram",
    "proxytrace_step_seconds": "histogram", "proxytrace_step_bytes": "histogram",
    "proxytrace_unmeasured_ops": "counter", "proxytrace_metrics_memory_bytes": "gauge",
}

errors = []


def err(msg):
    errors.append(msg)


def edge_key(labels):
    return (labels["peer"], labels["channel"], labels["direction"])


def check_prom(path):
    """Parses one .prom file; returns {edge: {"steps": n, "bytes": n}}."""
    text = open(path).read()
    seen = {}
    out = {}
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser says why
        err(f"{path}: does not parse: {e}")
        return out
    for f in families:
        seen[f.name] = f.type
        if f.type not in ("counter", "gauge", "histogram"):
            err(f"{path}: family {f.name} has type {f.type}")
        want = COMM_LABELS if f.name in ("proxytrace_unmeasured_ops", "proxytrace_metrics_memory_bytes") else EDGE_LABELS
        series = {}
        for s in f.samples:
            names = set(s.labels) - {"le"}
            if names != want:
                err(f"{path}: {s.name} labels {sorted(names)}, want {sorted(want)}")
                continue
            if math.isnan(s.value) or s.value < 0:
                err(f"{path}: {s.name} = {s.value}")
            if f.type == "histogram":
                key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                series.setdefault(key, {"buckets": [], "count": None})
                if s.name.endswith("_bucket"):
                    series[key]["buckets"].append((float(s.labels["le"]), s.value))
                elif s.name.endswith("_count"):
                    series[key]["count"] = s.value
            elif f.name == "proxytrace_steps":
                out.setdefault(edge_key(s.labels), {})["steps"] = s.value
            elif f.name == "proxytrace_bytes":
                out.setdefault(edge_key(s.labels), {})["bytes"] = s.value
        for key, h in series.items():
            b = h["buckets"]
            les = [x[0] for x in b]
            if les != sorted(les) or not b or not math.isinf(les[-1]):
                err(f"{path}: {f.name}{dict(key)}: le bounds not ascending to +Inf")
            if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
                err(f"{path}: {f.name}{dict(key)}: buckets not cumulative")
            if b and h["count"] != b[-1][1]:
                err(f"{path}: {f.name}{dict(key)}: count {h['count']} != +Inf bucket {b[-1][1]}")
    for name, typ in FAMILIES.items():
        if seen.get(name) != typ:
            err(f"{path}: family {name} is {seen.get(name)}, want {typ}")
    return out


def check_jsonl(path):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    if not lines or lines[0].get("type") != "metrics" or lines[-1].get("type") != "end":
        err(f"{path}: not a metrics header ... end")
        return None, {}
    head, edges = lines[0], [l for l in lines if l.get("type") == "edge"]
    if head.get("schema") != 1 or lines[-1].get("edges") != len(edges) or head.get("edges") != len(edges):
        err(f"{path}: schema or edge counts wrong")
    out = {}
    for e in edges:
        for w in ("gpuWait", "network", "step"):
            h = e[w]
            if sum(c for _, c in h["buckets"]) != h["count"]:
                err(f"{path}: {w} buckets do not add up to its count")
            if h["count"] and not (0 < h["p50_ns"] <= h["p90_ns"] <= h["p99_ns"]):
                err(f"{path}: {w} quantiles out of order: {h}")
        if e["step"]["count"] != e["steps"]:
            err(f"{path}: steps {e['steps']} != step histogram count {e['step']['count']}")
        ch = "all" if e["channel"] is None else str(e["channel"])
        out[(str(e["peer"]), ch, e["dir"])] = {"steps": e["steps"], "bytes": e["bytes"], "edge": e}
    return head, out


def main():
    args = sys.argv[1:]
    d = args[0]
    ranks = int(args[args.index("--ranks") + 1]) if "--ranks" in args else None
    channels = "--channels" in args
    proms = sorted(glob.glob(os.path.join(d, "proxytrace-metrics-*.prom")))
    if not proms:
        err(f"{d}: no metrics files")
    if glob.glob(os.path.join(d, ".*.tmp")):
        err(f"{d}: temporary files left behind")
    seen_ranks = set()
    total_steps = 0
    for p in proms:
        j = p[:-len(".prom")] + ".jsonl"
        if not os.path.exists(j):
            err(f"{p}: no {j}")
            continue
        pe = check_prom(p)
        head, je = check_jsonl(j)
        if head is None:
            continue
        seen_ranks.add(head["rank"])
        if not head.get("final"):
            err(f"{j}: the last export of a finished job is not marked final")
        if set(pe) != set(je):
            err(f"{p}: edges differ between .prom {sorted(pe)} and .jsonl {sorted(je)}")
        for k in pe:
            if k in je and (pe[k].get("steps") != je[k]["steps"] or pe[k].get("bytes") != je[k]["bytes"]):
                err(f"{p}: edge {k}: .prom {pe[k]} .jsonl {je[k]['steps']} steps {je[k]['bytes']} bytes")
        for (peer, ch, dr), v in je.items():
            if ch == "all":
                total_steps += v["steps"]
                if v["steps"] and not v["bytes"]:
                    err(f"{j}: {dr} edge {'to' if dr == 'send' else 'from'} {peer} carries no bytes")
        chans = [k for k in je if k[1] != "all"]
        if channels and not chans and je:
            err(f"{j}: no channel edges with PROXYTRACE_METRICS_CHANNELS=1")
        if not channels and chans:
            err(f"{j}: channel edges without PROXYTRACE_METRICS_CHANNELS")
        for (peer, ch, dr), v in je.items():
            if ch != "all" or not channels:
                continue
            parts = sum(w["steps"] for (p2, c2, d2), w in je.items() if p2 == peer and d2 == dr and c2 != "all")
            if parts != v["steps"]:
                err(f"{j}: channels of {peer} {dr} add up to {parts} steps, the edge has {v['steps']}")
    if ranks is not None and seen_ranks != set(range(ranks)):
        err(f"{d}: files for ranks {sorted(seen_ranks)}, want 0..{ranks - 1}")
    if proms and total_steps == 0:
        err(f"{d}: no step measured")
    for e in errors:
        print("check_metrics:", e)
    if not errors:
        print(f"check_metrics: {len(proms)} communicators, {total_steps} steps: ok")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
