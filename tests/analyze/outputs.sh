#!/bin/sh
# Where `analyze --chrome`, `--html` and `--summary FILE` write, when FILE
# is not a plain file: a FIFO (a reader gets the whole report, the FIFO
# stays a FIFO), a link (its target gets the report, made where the link
# points, the link stays a link; also a relative link into another
# folder), /dev/null (stays the character device it is), a directory and a
# link into a folder that is not there (a clear error, exit 2, nothing
# made); a regular file is still replaced whole, no temporary file left.
# Each run within a generous bound. $1: the build folder.
B=${1:-build}
. "$(dirname "$0")/../common/sim-setup.sh"

mkdir -p "$T/job"
$RUN "$PT" sim --plugin "$PLUGIN" --quiet --nodes 2 --ranks-per-node 2 --channels 1 --iters 2 --ops sendrecv:1M \
  --stall 1:all:1 --dump-dir "$T/job" >"$T/out" 2>&1 ; [ -n "$(ls "$T/job")" ] || { cat "$T/out"; fail "sim"; }

# out OPTION FILE: analyze with OPTION FILE; its exit status in $rc
out() {
  timeout -k 5 120 $RUN "$PT" analyze "$1" "$2" "$T/job" >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "analyze $1 $2: still running after 120 s"
}
# whole OPTION FILE: FILE holds the whole report of OPTION
whole() {
  case $1 in
    --chrome) python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$2" ;;
    --html) tail -c 200 "$2" | grep -q '</html>' ;;
    --summary) python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$2" && [ -s "$2" ] ;;
  esac || fail "$1: $2 is not the whole report"
}
want_ok() { [ $rc -eq 0 ] || [ $rc -eq 1 ] || { cat "$T/err"; fail "analyze $1 $2: exit $rc"; }; }

for opt in --chrome --html --summary; do
  n=${opt#--}
  # a regular file: replaced whole
  echo old >"$T/$n.file"
  out $opt "$T/$n.file"; want_ok $opt "$T/$n.file"; whole $opt "$T/$n.file"
  # a FIFO with a reader
  mkfifo "$T/$n.fifo"
  timeout 120 cat "$T/$n.fifo" >"$T/$n.read" &
  reader=$!
  out $opt "$T/$n.fifo"; want_ok $opt "$T/$n.fifo"
  wait $reader || fail "$opt FIFO: the reader got no end of file"
  [ -p "$T/$n.fifo" ] || fail "$opt FIFO: no longer a FIFO"
  whole $opt "$T/$n.read"
  # a link, and a relative link into another folder
  mkdir -p "$T/real" "$T/links"
  ln -s "$T/real/$n.target" "$T/$n.link"
  ln -s "../real/$n.rel" "$T/links/$n.link"
  for l in "$T/$n.link" "$T/links/$n.link"; do
    out $opt "$l"; want_ok $opt "$l"
    [ -L "$l" ] || fail "$opt $l: no longer a link"
  done
  whole $opt "$T/real/$n.target"; whole $opt "$T/real/$n.rel"
  # /dev/null, written into
  out $opt /dev/null; want_ok $opt /dev/null
  [ -c /dev/null ] || fail "$opt /dev/null: no longer a character device"
  # a directory, and a link to nothing: exit 2, said, nothing made
  mkdir "$T/$n.dir"
  out $opt "$T/$n.dir"
  [ $rc -eq 2 ] && grep -q "Is a directory" "$T/err" || { cat "$T/err"; fail "$opt DIR: exit $rc"; }
  [ -z "$(ls -A "$T/$n.dir")" ] || fail "$opt DIR: something written in it"
  # a link into a folder that is not there: exit 2, said, the link kept
  ln -s "$T/nowhere/$n" "$T/$n.dangling"
  out $opt "$T/$n.dangling"
  [ $rc -eq 2 ] && grep -q "cannot write.*No such file" "$T/err" || { cat "$T/err"; fail "$opt dangling link: exit $rc"; }
  [ -L "$T/$n.dangling" ] && [ ! -e "$T/nowhere" ] || fail "$opt dangling link: changed"
  echo "ok   $opt: a file, a FIFO, links, /dev/null, a directory, a link into nowhere"
done
[ -z "$(find "$T" -name '*.tmp-*')" ] || fail "a temporary file left: $(find "$T" -name '*.tmp-*')"
echo "outputs: every output went into what its name is"
