# shellcheck shell=sh
# timed.sh — sourced by the analyzer's shell tests, after PT (the proxytrace
# binary) and RUN (the emulator command, empty natively) are set. Sets
# TIMED=1 where run times are the program's, 0 under a sanitizer or an
# emulator (qemu); NOSLOW is then the option that looks for no slowness
# ("--slow-factor 1000"), empty otherwise.
TIMED=1
case "$(readelf -d "$PT" 2>/dev/null)" in *libasan*|*libtsan*) TIMED=0 ;; esac
[ -n "$RUN" ] && TIMED=0
NOSLOW=""
[ "$TIMED" -eq 1 ] || NOSLOW="--slow-factor 1000"
