# shellcheck shell=sh
# browser.sh — sourced by the tests that load a page in Debian's headless
# chromium. find_browser NAME PT: sets BROWSER (the program, or empty) and
# HAVE_BROWSER (1 when it starts), and says why the browser checks step
# aside otherwise: no chromium, one that cannot start (browse, which the
# test defines, is tried on about:blank), or a build under a sanitizer or
# qemu, whose pages are the native build's byte for byte (emulated jobs,
# the same analysis) — the browser's checks of the native build speak for
# them, and the page's own code still runs. $T must be the test's folder.
find_browser() {
  BROWSER=$(command -v chromium || command -v chromium-browser || true)
  HAVE_BROWSER=0
  mkdir -p "$T/home"
  if [ -z "$BROWSER" ]; then
    echo "$1: SKIP the browser checks: chromium is not installed (scripts/ensure-test-deps.sh installs it)"
  elif [ -n "${PROXYTRACE_EMULATOR:-}" ] || readelf -d "$2" 2>/dev/null | grep -q 'lib[at]san'; then
    BROWSER=
    echo "$1: the browser checks step aside in a sanitizer or qemu build (its pages are the native build's, which they check)"
  elif browse "$T/probe.log" --dump-dom about:blank 2>/dev/null | grep -q '<html'; then
    HAVE_BROWSER=1
  else
    echo "$1: SKIP the browser checks: chromium cannot start (scripts/ensure-test-deps.sh installs it)"
  fi
}
