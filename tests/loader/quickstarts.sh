#!/bin/sh
# quickstarts.sh — the quick-start blocks of README.md run as written: every
# ```sh block after a "<!-- quickstart: hosts=H1,H2 -->" line is taken from
# the README, its variable settings and folder creations (also those inside
# `bash -c '...'` of an srun line) run in a clean shell, with /opt/proxytrace
# standing for this build and /shared, /tmp/proxytrace for folders of the
# test; then, in that environment, `proxytrace probe` must find the plugin
# (exit 0) and `proxytrace doctor` pass (exit 0) for each release named.
# The README must hold the five blocks (torchrun on one node and several,
# Slurm, JAX, RCCL). Usage: quickstarts.sh BUILD-DIR
set -u
B=$(cd "$1" && pwd)
RUN=${PROXYTRACE_EMULATOR:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$T/opt/proxytrace/lib" "$T/shared" "$T/tmp" "$T/bin"
ln -s "$B/librccl-profiler-proxytrace.so" "$T/opt/proxytrace/lib/librccl-profiler-proxytrace.so"
# `proxytrace` on PATH, run as the tests run it.
printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$RUN" "$B/proxytrace" >"$T/bin/proxytrace"
chmod +x "$T/bin/proxytrace"

python3 - "$SRC/README.md" "$T" <<'PY' || fail "the README's quick-start blocks could not be read"
import os, re, sys
readme, t = sys.argv[1], sys.argv[2]
text = open(readme, encoding="utf-8").read()
blocks = re.findall(r"<!-- quickstart: hosts=([\w.,-]+) -->\s*\n```sh\n(.*?)\n```", text, re.S)
heads = re.findall(r"^### (.*)$", text, re.M)
assert len(blocks) >= 5, "%d quick-start blocks in the README, want 5" % len(blocks)
keep = re.compile(r"^(export\s+)?[A-Z_][A-Z0-9_]*=|^mkdir -p ")
for n, (hosts, body) in enumerate(blocks, 1):
    body = body.replace("\\\n", " ")
    stmts = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        inner = re.search(r"bash -c '([^']*)'", line)
        parts = [p.strip() for p in inner.group(1).split(";")] if inner else [line.split("  #")[0].strip()]
        stmts += [p for p in parts if keep.match(p)]
    script = "\n".join(stmts)
    for real, test in (("/opt/proxytrace", t + "/opt/proxytrace"), ("/shared/", t + "/shared/"),
                       ("/tmp/proxytrace", t + "/tmp/proxytrace")):
        script = script.replace(real, test)
    with open(os.path.join(t, "block%d.sh" % n), "w") as f:
        f.write("set -e\nSLURM_JOB_ID=4242\n%s\n" % script)
    with open(os.path.join(t, "block%d.hosts" % n), "w") as f:
        f.write(hosts.replace(",", " "))
    print("block %d: %s; %d settings" % (n, hosts, len(stmts)))
PY

for s in "$T"/block*.sh; do
  n=${s%.sh}
  for host in $(cat "$n.hosts"); do
    env -i PATH="$T/bin:/usr/bin:/bin" HOME="$T" sh -c ". '$s' && proxytrace probe -q --host $host" \
      >"$T/out" 2>&1
    rc=$?
    [ $rc -eq 0 ] && echo "ok   $(basename "$n") $host: proxytrace probe finds the plugin" ||
      { fail "$(basename "$n") $host: probe exit $rc"; cat "$T/out" "$s"; }
    env -i PATH="$T/bin:/usr/bin:/bin" HOME="$T" sh -c ". '$s' && proxytrace doctor --no-torch --host $host" \
      >"$T/out" 2>&1
    rc=$?
    [ $rc -eq 0 ] && echo "ok   $(basename "$n") $host: proxytrace doctor passes" ||
      { fail "$(basename "$n") $host: doctor exit $rc"; cat "$T/out" "$s"; }
  done
done
[ -d "$T/shared/proxytrace/4242" ] && echo "ok   the Slurm block made its per-node folder" ||
  fail "the Slurm block made no per-node folder under /shared/proxytrace/\$SLURM_JOB_ID"

[ "$failures" -eq 0 ] && echo "quickstarts.sh: all passed" || echo "quickstarts.sh: $failures failed"
[ "$failures" -eq 0 ]
