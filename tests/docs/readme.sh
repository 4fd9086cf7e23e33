#!/bin/sh
# readme.sh — the README's examples run as written and print what it says
# they print. Its emulated 8 x 8 hang: each command of the block, exit
# statuses as its comments give them, and the two report lines it shows,
# the same once the pid is masked (emulated time: the same files on every
# run). Its slow-GPU example (the emulated part; the live --follow part
# runs on real time, tests/analyze/follow.sh): the emulator quiet, `top
# --once` with rank 3's edges first, GPU-side, and `analyze` naming rank
# 3's GPU. $1: the build folder.
B=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
exec python3 - "$SRC/README.md" "$B" "$T" "${PROXYTRACE_EMULATOR:-}" <<'PY'
import re, shlex, subprocess, sys

readme, build, tmp, emu = sys.argv[1:5]
text = open(readme).read()
blocks = [(m.start(), m.group(1)) for m in re.finditer(r"```[a-z]*\n(.*?)```", text, re.S)]
failures = []


def fail(why):
    failures.append(why)
    print("FAIL: " + why)


def block_with(needle):
    found = [(at, b) for at, b in blocks if needle in b]
    if len(found) != 1:
        fail("the README holds %d blocks with %r, want 1" % (len(found), needle))
        return None, ""
    return found[0]


def commands(block):
    """The block's command lines (continuations joined), each with the exit
    status its comment gives ("# exit N"), or None."""
    out = []
    for line in block.replace("\\\n", " ").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.search(r"#\s*exit (\d+)", line)
        cmd = re.sub(r"\s+#.*$", "", line).strip()
        out.append((cmd, int(m.group(1)) if m else None))
    return out


def run(cmd):
    """A README line as written, build/proxytrace being this build's (under
    its emulator for a cross build)."""
    argv = shlex.split(cmd)
    if argv[0] == "build/proxytrace":
        argv = shlex.split(emu) + [build + "/proxytrace"] + argv[1:]
    return subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=600)


def masked(s):
    return re.sub(r"pid \d+", "pid N", s)


# ---- the emulated 8 x 8 hang ----
at, hang = block_with("--dump-dir hang-8x8")
for cmd, want in commands(hang):
    if cmd == "make":
        continue
    r = run(cmd)
    if want is not None and r.returncode != want:
        fail("%r exits %d, the README says %d: %s" % (cmd, r.returncode, want, r.stderr[-300:]))
    elif want is None and r.returncode not in (0, 1):
        fail("%r exits %d: %s" % (cmd, r.returncode, r.stderr[-300:]))
shown = next((b for a, b in blocks if a > at and b.startswith("proxytrace analyze: ")), "")
lines = shown.splitlines()
if len(lines) != 2:
    fail("the README shows %d report lines after the 8 x 8 block, want 2" % len(lines))
got = run("build/proxytrace analyze hang-8x8").stdout.splitlines()[:2]
for i, (want, have) in enumerate(zip(lines, got)):
    if masked(want) != masked(have):
        fail("the 8 x 8 report's line %d differs from the README's:\n  README: %s\n  now:    %s" % (i + 1, want, have))
if not failures:
    print("ok   the 8 x 8 hang: every command as written, and the two lines shown")

# ---- the slow GPU, on emulated time ----
n = len(failures)
at, slow = block_with("--slow-gpu 3:8")
cmds = [c for c, _ in commands(slow) if not c.endswith("&") and "--follow" not in c]
if len(cmds) != 3:
    fail("the slow-GPU block's emulated part has %d commands, want 3 (sim, top, analyze)" % len(cmds))
else:
    sim, top, analyze = (run(c) for c in cmds)
    if sim.returncode != 0 or len((sim.stdout + sim.stderr).splitlines()) > 3:
        fail("the slow-GPU job: exit %d, %d lines printed (the README's job is quiet)" % (
            sim.returncode, len((sim.stdout + sim.stderr).splitlines())))
    rows = [r for r in top.stdout.splitlines()[2:] if r.strip()]
    if top.returncode != 0 or not rows or not all(r.split()[0] == "3" and "GPU-side" in r for r in rows[:2]):
        fail("top --once does not show rank 3's edges first, GPU-side:\n" + top.stdout[:600])
    out = analyze.stdout.splitlines()
    if len(out) < 2 or not out[0].startswith("proxytrace analyze: SLOW") or \
            not out[1].startswith("culprit 1: rank 3 ") or "its GPU is slow" not in out[1]:
        fail("analyze does not name rank 3's GPU:\n" + analyze.stdout[:600])
    if len(failures) == n:
        print("ok   the slow GPU: the job quiet, top with rank 3's edges first, analyze naming its GPU")
print("readme.sh: %s" % ("%d failed" % len(failures) if failures else "all passed"))
sys.exit(1 if failures else 0)
PY
