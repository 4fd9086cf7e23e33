# Sourced by the shell tests that drive the build's programs, once B (the build folder) is set:
# PT and PLUGIN, the build's proxytrace and plugin (absolute paths); RUN,
# what runs the build's programs ($PROXYTRACE_EMULATOR: qemu-aarch64 for a
# cross-built build); T, a temporary folder removed on exit (made writable
# first: a test may take a folder's write permission away); fail().
PT="$(cd "$B" && pwd)/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
T=$(mktemp -d)
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
