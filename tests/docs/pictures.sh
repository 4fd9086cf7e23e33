#!/bin/sh
# pictures.sh — the README's pictures show what the tool prints now: the
# pages and the top frame they were taken of, made again as `make
# screenshots` makes them (emulated jobs: the same on every run but for
# the process id and top's clock, which the digests mask), have the
# digests committed beside the pictures (docs/img/pictures.sha256). A
# change to what the analysis or the page says fails here until `make
# screenshots` remakes the pictures, in the same commit. A changed digest
# file must fail the check (a control). $1: the build folder.
B=${1:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# The pictures are the native build's: under qemu the 16 384-rank page
# takes minutes, and a sanitizer's build prints the same bytes.
if [ -n "${PROXYTRACE_EMULATOR:-}" ] || readelf -d "$B/proxytrace" 2>/dev/null | grep -q 'lib[at]san'; then
  echo "pictures: left to the native build (the pages are its own byte for byte)"
  exit 0
fi
sh "$SRC/scripts/screenshots.sh" "$B" "$T/now" --pages-only || fail "screenshots.sh --pages-only"
[ "$(wc -l <"$T/now/pictures.sha256")" -eq 5 ] || { cat "$T/now/pictures.sha256"; fail "want 5 digests"; }
if ! diff "$SRC/docs/img/pictures.sha256" "$T/now/pictures.sha256"; then
  fail "the README's pictures no longer show what the tool prints (the lines above differ): run make screenshots and commit docs/img"
fi
for png in $(awk '{print $2}' "$T/now/pictures.sha256"); do
  [ -s "$SRC/docs/img/$png" ] || fail "docs/img/$png is missing"
done
# the control: one digest off must be caught
sed '1s/^./x/' "$SRC/docs/img/pictures.sha256" >"$T/off"
! diff -q "$T/off" "$T/now/pictures.sha256" >/dev/null || fail "a changed digest was not caught"
echo "pictures: the 5 pictures show what the tool prints now"
