#!/bin/sh
# device-selftest.sh — on a machine with a GPU and PyTorch (CUDA or ROCm
# build, its own NCCL or RCCL), no network needed: build what
# `proxytrace selftest` needs and run it for real, in one command, in a few
# minutes (the build, then 2-rank jobs: healthy, a GPU stall, a rank that
# never enters, and 3 rounds of the cost, each with and without the plugin).
#
#   scripts/device-selftest.sh            # from anywhere in the checkout
#   OUT=/some/folder PYTHON=/venv/bin/python JOBS=16 scripts/device-selftest.sh
#
# Everything it writes goes under $OUT (default ./device-selftest-out):
#   build.log        the build
#   environment.txt  the machine, the GPU (nvidia-smi / rocm-smi), the commit,
#                    Python, torch, the NCCL it carries and the library file
#                    loaded (what docs/selftest.md asks to record)
#   selftest.txt     the selftest's lines, as printed
#   selftest.json    its verdicts and figures
#   selftest/        each job's dumps, step metrics, per-rank logs (NCCL's
#                    INFO lines of INIT, ENV, NET and the profiler plugin)
# Exit status: the selftest's (0 passed, 1 a check failed, 3 it cannot run
# here), 4 when the build failed, 124 when it ran past its time (TIME_S,
# default 280 s for the selftest after the build).
set -u
cd "$(dirname "$0")/.." || exit 4
OUT=${OUT:-$PWD/device-selftest-out}
PY=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
TIME_S=${TIME_S:-280}
mkdir -p "$OUT" || exit 4
OUT=$(cd "$OUT" && pwd)
t0=$(date +%s)

echo "== build (make -j$JOBS: the CLI and the plugin only)"
if ! make -j"$JOBS" build/proxytrace build/librccl-profiler-proxytrace.so >"$OUT/build.log" 2>&1; then
  tail -n 30 "$OUT/build.log"
  echo "device-selftest: the build failed; $OUT/build.log"
  exit 4
fi
echo "   built in $(($(date +%s) - t0)) s"

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "machine: $(uname -srm), $(nproc 2>/dev/null) cores"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "compiler: $(${CC:-cc} --version 2>/dev/null | head -n 1)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  elif command -v rocm-smi >/dev/null 2>&1; then
    rocm-smi --showproductname 2>&1 | sed 's/^/gpu: /'
  fi
  "$PY" - <<'EOF' 2>&1
import os, sys
print("python: %s %s" % (sys.executable, sys.version.split()[0]))
try:
    import torch
except Exception as e:
    print("torch: none (%s)" % e)
    raise SystemExit(0)
print("torch: %s (cuda %s, hip %s)" % (torch.__version__, torch.version.cuda, getattr(torch.version, "hip", None)))
try:
    print("nccl (torch.cuda.nccl.version()): %s" % ".".join(str(x) for x in tuple(torch.cuda.nccl.version())[:3]))
except Exception as e:
    print("nccl: unknown (%s)" % e)
with open("/proc/self/maps") as maps:
    libs = sorted({l.split(None, 5)[-1].strip() for l in maps
                   if os.path.basename(l.split(None, 5)[-1].strip()).startswith(("libnccl.so", "librccl.so"))})
print("nccl library loaded: %s" % (", ".join(libs) or "none mapped"))
try:
    from importlib import metadata
    print("nccl wheel: %s" % (", ".join(sorted(d.metadata["Name"] + " " + d.version for d in metadata.distributions()
                                               if (d.metadata["Name"] or "").lower().startswith("nvidia-nccl")))
                              or "none"))
except Exception as e:
    print("nccl wheel: unknown (%s)" % e)
EOF
} >"$OUT/environment.txt"
sed 's/^/   /' "$OUT/environment.txt"

echo "== proxytrace selftest"
{
  NCCL_DEBUG=${NCCL_DEBUG:-INFO} NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,ENV,NET,PROFILE} \
    timeout -k 10 "$TIME_S" build/proxytrace selftest --python "$PY" --out "$OUT/selftest" \
    --json "$OUT/selftest.json" 2>&1
  echo $? >"$OUT/.selftest-status"
} | tee "$OUT/selftest.txt"
rc=$(cat "$OUT/.selftest-status")
rm -f "$OUT/.selftest-status"
echo "device-selftest: exit $rc after $(($(date +%s) - t0)) s in all; results in $OUT"
exit "$rc"
