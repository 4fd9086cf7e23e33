#!/usr/bin/env python3
"""The analyzer's stages (docs/analyze.md, "How the analyzer is built"), checked.

    layers.py NM SRC_DIR OBJ_DIR

Every file of SRC_DIR (src/analyze) belongs to one stage of STAGES, listed
from the bottom up. A file may call (its object's undefined symbols, as NM
lists them, defined by another object of OBJ_DIR) and include (its
"analyze/*.h" headers) only files of its own stage or of a stage below; no
set of files may call each other round in a circle, within a stage or
across; and nothing of the analyzer includes the recorder's or the
plugin's headers (src/trace, src/plugin): what it shares with them is the
file format, src/format/format.h. Prints each breach and exits 1, or one
line "ok: ..." and exits 0.
"""
import os
import re
import subprocess
import sys

# Bottom up. A stage sees its own files and the stages before it.
STAGES = [
    ("model", "memory.c memory.h map.c json.c emit.c open.c names.c op.c input.c slow_test.c internal.h mset.h"),
    ("evidence", "dump.c steps.c progress.c merge.c unknown.c comms.c mset.c evidence.h"),
    ("inputs", "stream.c jsonl.c legacy.c summary_read.c parse.c lines.c inputs.h"),
    ("judgements", "pair.c explain.c desync.c slow.c slow_metrics.c complete.c watch.c watch.h judge.h"),
    ("verdict", "origin.c verdict.c verdict.h"),
    ("renderers", "report_text.c report_json.c report_html.c chrome.c records.c summary.c output.c compare.c render.h"),
    ("api", "analysis.c"),
]


def main():
    nm, src, obj = sys.argv[1:4]
    stage_of, problems = {}, []
    for level, (name, files) in enumerate(STAGES):
        for f in files.split():
            stage_of[f] = (level, name)
    present = sorted(f for f in os.listdir(src) if f.endswith((".c", ".h")))
    for f in present:
        if f not in stage_of:
            problems.append(f"{f}: in no stage: add it to STAGES in {sys.argv[0]} and to docs/analyze.md")
    for f in stage_of:
        if f not in present:
            problems.append(f"{f}: in STAGES but not in {src}")

    def where(f):
        return "%s (%s)" % (f, stage_of[f][1])

    # Includes: a stage's own header and those below; never the recorder's.
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for f in present:
        if f not in stage_of:
            continue
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                m = inc.match(line)
                if not m:
                    continue
                path = m.group(1)
                if path.startswith(("trace/", "plugin/")):
                    problems.append(f"{f}:{n}: includes {path}: the analyzer shares only the file format "
                                    "(format/format.h) with the recorder")
                elif path.startswith("analyze/"):
                    h = path[len("analyze/"):]
                    if h in stage_of and stage_of[h][0] > stage_of[f][0]:
                        problems.append(f"{f}:{n}: {where(f)} includes {where(h)}, a stage above it")

    # Calls: which object defines each symbol, and which objects use it.
    defined, used = {}, {}
    objects = [f[:-2] for f in present if f.endswith(".c") and os.path.exists(os.path.join(obj, f[:-2] + ".o"))]
    for f in present:
        if f.endswith(".c") and f[:-2] not in objects:
            problems.append(f"{f}: no object in {obj}: build first")
    for o in objects:
        out = subprocess.run([nm, os.path.join(obj, o + ".o")], capture_output=True, text=True, check=True).stdout
        used[o] = set()
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRCVW":
                defined[p[2]] = o
            elif len(p) == 2 and p[0] == "U":
                used[o].add(p[1])
    edges = {o: {} for o in objects}
    for o in objects:
        for s in used[o]:
            d = defined.get(s)
            if d and d != o:
                edges[o].setdefault(d, []).append(s)
    for o in objects:
        for d, syms in sorted(edges[o].items()):
            if stage_of[d + ".c"][0] > stage_of[o + ".c"][0]:
                problems.append(f"{where(o + '.c')} calls {where(d + '.c')}, a stage above it: "
                                + " ".join(sorted(syms)))

    # Circles: Tarjan's strongly connected components, without recursion.
    index, low, on, stack, sccs, counter = {}, {}, set(), [], [], [0]
    for root in objects:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    sccs.append(sorted(comp))
    for comp in sccs:
        problems.append(f"{len(comp)} files call each other round in a circle: " + " ".join(comp))
        for o in comp:
            for d, syms in sorted(edges[o].items()):
                if d in comp:
                    problems.append(f"  {o} -> {d}: " + " ".join(sorted(syms)))

    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    n_edges = sum(len(e) for e in edges.values())
    print(f"ok: {len(present)} files in {len(STAGES)} stages "
          f"({' < '.join(name for name, _ in STAGES)}), {len(objects)} objects, {n_edges} arrows, "
          "none up, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
