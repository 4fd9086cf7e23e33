#!/bin/sh
# grafana.sh — docs/grafana/proxytrace-dashboard.json against what the
# plugin writes: an emulated job with the step metrics on writes its
# Prometheus text files; every metric a panel or variable queries must be a
# sample name in them (read with the parser of Debian's
# python3-prometheus-client), every label a query groups by or selects on
# must be one those samples carry, and each label value it compares with
# (channel="all") must occur. $1: the build folder.
B=${1:-build}
PT="$(cd "$B" && pwd)/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --host nccl-2.28 --nodes 2 --ranks-per-node 2 --iters 2 \
  --ops sendrecv:1M --env PROXYTRACE_METRICS_INTERVAL_MS=60000 --env PROXYTRACE_METRICS_DIR="$T/m" \
  >"$T/out" 2>&1 || { cat "$T/out"; echo "FAIL: the sim"; exit 1; }
ls "$T"/m/*.prom >/dev/null 2>&1 || { echo "FAIL: no .prom file written"; exit 1; }
/usr/bin/python3 - "$SRC/docs/grafana/proxytrace-dashboard.json" "$T/m" <<'PY'
import glob, json, re, sys
from prometheus_client.parser import text_string_to_metric_families
dash = json.load(open(sys.argv[1]))
samples = {}  # sample name -> {label: set(values)}
for f in glob.glob(sys.argv[2] + "/*.prom"):
    for fam in text_string_to_metric_families(open(f).read()):
        for s in fam.samples:
            labels = samples.setdefault(s.name, {})
            for k, v in s.labels.items():
                labels.setdefault(k, set()).add(v)
queries = [t["expr"] for p in dash["panels"] for t in p["targets"]]
queries += [v["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
assert all(p["datasource"]["type"] == "prometheus" for p in dash["panels"])
failures, checked = 0, set()
for q in queries:
    for name in re.findall(r"\bproxytrace_[a-z_]+", q):
        checked.add(name)
        if name not in samples:
            print("FAIL: %s is queried but not written (written: %s)" % (name, ", ".join(sorted(samples))))
            failures += 1
            continue
        labels = samples[name]
        sel = re.search(re.escape(name) + r"\{([^}]*)\}", q)
        for lab, op, val in re.findall(r'(\w+)\s*(=~|=)\s*"([^"]*)"', sel.group(1) if sel else ""):
            if lab not in labels:
                print("FAIL: %s has no label %s" % (name, lab)); failures += 1
            elif op == "=" and val not in labels[lab]:
                print("FAIL: %s{%s=%r}: no such value (%s)" % (name, lab, val, sorted(labels[lab]))); failures += 1
    for group in re.findall(r"by \(([^)]*)\)", q):
        names = re.findall(r"\bproxytrace_[a-z_]+", q)
        for lab in (x.strip() for x in group.split(",")):
            if not any(lab in samples.get(n, {}) for n in names):
                print("FAIL: %r groups by %s, which no queried metric carries" % (q[:60], lab)); failures += 1
    for lab in re.findall(r"label_values\(\w+[^,]*,\s*(\w+)\)", q):
        if not any(lab in samples.get(n, {}) for n in re.findall(r"\bproxytrace_[a-z_]+", q)):
            print("FAIL: label_values of %s, not a label" % lab); failures += 1
print("%s   the dashboard's %d metrics and their labels are the exporter's (%d queries)"
      % ("ok" if not failures else "FAIL", len(checked), len(queries)))
print("grafana.sh: %d passed, %d failed" % (1 if not failures else 0, 1 if failures else 0))
sys.exit(1 if failures else 0)
PY
