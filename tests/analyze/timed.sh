# shellcheck shell=sh
# timed.sh — sourced by the analyzer's shell tests, after PT (the proxytrace
# binary) and RUN (the emulator command, empty natively) are set. Sets
# TIMED=1 where run times are the program's, 0 under a sanitizer or an
# emulator (qemu); NOSLOW is then the option that looks for no slowness
# ("--slow-factor 1000"), empty otherwise. Sets BUSY=1 when other work
# holds the cores right now (the CI leg beside a CPU hog): a busy loop of
# 0.3 s got under 80 % of a core. Paced emulated time keeps a few ranks'
# ops on time there, but not many threads' — an emulated job of dozens of
# ranks then has ops that are slow in fact, and a test that wants no slow
# culprit of such a job leaves that check out (saying so).
TIMED=1
case "$(readelf -d "$PT" 2>/dev/null)" in *libasan*|*libtsan*) TIMED=0 ;; esac
[ -n "$RUN" ] && TIMED=0
NOSLOW=""
[ "$TIMED" -eq 1 ] || NOSLOW="--slow-factor 1000"
BUSY=0
share=$(python3 -c '
import time
w, c = time.monotonic(), time.process_time()
while time.monotonic() - w < 0.3:
    pass
print(int(100 * (time.process_time() - c) / (time.monotonic() - w)))' 2>/dev/null)
[ -n "$share" ] && [ "$share" -lt 80 ] && BUSY=1
