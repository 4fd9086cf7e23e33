#!/bin/sh
# The analyzer's stages (docs/analyze.md, "How the analyzer is built"):
# every file of src/analyze in one stage of layers.py's table; calls (the
# objects' symbols, read with nm) and includes only within a stage or
# down; no files that call each other round in a circle; nothing of
# src/trace or src/plugin included. $1: the build folder.
#
# nm: ${CROSS}nm when CROSS is set, the nm beside $CC (the test runner
# passes the build's compiler: aarch64-linux-gnu-gcc), else nm. Debian's nm
# reads only its own machine's objects: when the objects are another
# machine's and no nm here reads them, the test is skipped, saying so.
B=${1:-build}
HERE=$(dirname "$0")
ROOT=$(cd "$HERE/../.." && pwd)
SRC="$ROOT/src/analyze"
OBJ="$B/src/analyze"
py=$(command -v python3) || { echo "FAIL: layers: no python3"; exit 1; }
one=$(ls "$OBJ"/*.o 2>/dev/null | head -n 1)
[ -n "$one" ] || { echo "FAIL: no object in $OBJ: build first"; exit 1; }

NM=
for cand in ${CROSS:+${CROSS}nm} ${CC:+${CC%gcc}nm} nm aarch64-linux-gnu-nm; do
  command -v "$cand" >/dev/null 2>&1 || continue
  if "$cand" "$one" >/dev/null 2>&1; then NM=$cand; break; fi
done
if [ -z "$NM" ]; then
  echo "ok (skipped: no nm here reads $one: $(file -b "$one" 2>/dev/null | cut -d, -f1-2))"
  exit 0
fi
exec "$py" "$HERE/layers.py" "$NM" "$SRC" "$OBJ"
