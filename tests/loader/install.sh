#!/bin/sh
# install.sh — `make install` into a temporary DESTDIR, then, using only
# what was installed (header, pkg-config file, loader library, plugin,
# CLI), load the plugin in each of the three ways the README documents:
#   A  NCCL_PROFILER_PLUGIN=/path/to/librccl-profiler-proxytrace.so
#   B  RCCL_ENABLE_PROXY_TRACE=1 with the plugin beside librccl
#   C  NCCL_PROFILER_PLUGIN=proxytrace, libnccl-profiler-proxytrace.so on
#      LD_LIBRARY_PATH
# with a program linked against the shared and against the static loader,
# and check that `proxytrace probe` predicts each of them. The example
# program of docs/loader.md is built as the page says (pkg-config) and run,
# and the installed `proxytrace demo` and `proxytrace sim` find the
# installed plugin on their own. Usage: install.sh BUILD-DIR
set -u
B=$1
case $B in
  *build-address|*build-address-*) SAN=address; SANF="-fsanitize=address,undefined" ;;
  *build-thread|*build-thread-*) SAN=thread; SANF="-fsanitize=thread" ;;
  *) SAN=; SANF= ;;
esac
CC=${CC:-cc} # the build's compiler (a cross compiler with ARCH=), from make test
RUN=${PROXYTRACE_EMULATOR:-} # and the emulator its programs run under, if any
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
major=$(sed -n 's/^VERSION_MAJOR := //p' Makefile)
version=$major.$(sed -n 's/^VERSION_MINOR := //p' Makefile).$(sed -n 's/^VERSION_PATCH := //p' Makefile)

if ! make -s install DESTDIR="$D" PREFIX=/opt/pt SAN="$SAN" >"$D/make.log" 2>&1; then
  cat "$D/make.log"; echo "FAIL: make install"; exit 1
fi
P=$D/opt/pt
L=$P/lib

# The files and links.
for f in "lib/librccl-profiler-proxytrace.so.$version" "lib/libproxytrace-loader.so.$version" \
         lib/libproxytrace-loader.a lib/pkgconfig/proxytrace-loader.pc \
         include/proxytrace/loader.h include/proxytrace/nccl/profiler_v6.h bin/proxytrace; do
  [ -f "$P/$f" ] && [ ! -L "$P/$f" ] || fail "missing file $f"
done
link() { [ "$(readlink "$L/$1")" = "$2" ] || fail "$1 should link to $2, is '$(readlink "$L/$1")'"; }
link "librccl-profiler-proxytrace.so.$major" "librccl-profiler-proxytrace.so.$version"
link librccl-profiler-proxytrace.so "librccl-profiler-proxytrace.so.$major"
link libnccl-profiler-proxytrace.so "librccl-profiler-proxytrace.so.$major"
link "libproxytrace-loader.so.$major" "libproxytrace-loader.so.$version"
link libproxytrace-loader.so "libproxytrace-loader.so.$major"
readelf -d "$L/librccl-profiler-proxytrace.so.$version" |
  grep -q "SONAME.*\[librccl-profiler-proxytrace.so.$major\]" ||
  fail "the plugin's SONAME is not librccl-profiler-proxytrace.so.$major"
grep -q "^prefix=/opt/pt$" "$L/pkgconfig/proxytrace-loader.pc" || fail "pkg-config prefix"

# A consumer built from the installed files only.
export PKG_CONFIG_PATH="$L/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
cflags=$(pkg-config --cflags proxytrace-loader) || fail "pkg-config --cflags"
libs=$(pkg-config --libs proxytrace-loader) || fail "pkg-config --libs"
# shellcheck disable=SC2086
$CC -std=c11 -Wall -Wextra -Werror $SANF $cflags -o "$D/consumer-shared" \
  tests/loader/consumer.c $libs -Wl,-rpath,"$L" -ldl || fail "build against the shared loader"
# shellcheck disable=SC2086
$CC -std=c11 -Wall -Wextra -Werror $SANF $cflags -o "$D/consumer-static" \
  tests/loader/consumer.c "$L/libproxytrace-loader.a" -ldl -lpthread ||
  fail "build against the static loader"
cp "$B/tests/loader/plugins/fakerccl.so" "$L/librccl.so"

# use NAME HOST FILE-EXPECTED [LIB-TO-LOAD-FIRST] -- VAR=VALUE...
use() {
  name=$1; host=$2; want=$3; pre=$4; shift 5
  for c in consumer-shared consumer-static; do
    if ! env -i PATH="$PATH" "$@" $RUN "$D/$c" "$host" $pre >"$D/out" 2>&1; then
      fail "$name ($c)"; sed 's/^/    /' "$D/out"; continue
    fi
    grep -q "api=6 dump=1 path=$want " "$D/out" || { fail "$name ($c): $(cat "$D/out")"; continue; }
    echo "ok   $name ($c): $(cat "$D/out")"
  done
}
use "A: NCCL_PROFILER_PLUGIN=path" rccl "$L/librccl-profiler-proxytrace.so" "" -- \
  NCCL_PROFILER_PLUGIN="$L/librccl-profiler-proxytrace.so"
use "B: RCCL_ENABLE_PROXY_TRACE=1 beside librccl" rccl "$L/librccl-profiler-proxytrace.so" \
  "$L/librccl.so" -- RCCL_ENABLE_PROXY_TRACE=1
use "C: NCCL_PROFILER_PLUGIN=proxytrace (RCCL)" rccl "$L/libnccl-profiler-proxytrace.so" "" -- \
  NCCL_PROFILER_PLUGIN=proxytrace LD_LIBRARY_PATH="$L"
use "C: NCCL_PROFILER_PLUGIN=proxytrace (NCCL 2.30)" nccl-2.30 "$L/libnccl-profiler-proxytrace.so" \
  "" -- NCCL_PROFILER_PLUGIN=proxytrace LD_LIBRARY_PATH="$L"

# The installed CLI predicts each of them (RCCL), by files and by loading.
for deep in "" --deep; do
  $RUN "$P/bin/proxytrace" probe --host rccl -q -i $deep NCCL_PROFILER_PLUGIN="$L/librccl-profiler-proxytrace.so" ||
    fail "probe $deep A"
  $RUN "$P/bin/proxytrace" probe --host rccl -q -i $deep --rccl-dir "$L/librccl.so" RCCL_ENABLE_PROXY_TRACE=1 ||
    fail "probe $deep B"
  $RUN "$P/bin/proxytrace" probe --host rccl -q -i $deep NCCL_PROFILER_PLUGIN=proxytrace LD_LIBRARY_PATH="$L" ||
    fail "probe $deep C"
  $RUN "$P/bin/proxytrace" probe --host rccl -q -i $deep --home "$P" || fail "probe $deep PROXYTRACE_HOME"
done

# The example program of docs/loader.md, exactly as printed there.
sed -n '/^<!-- example: which-profiler.c -->$/,/^```$/p' docs/loader.md | sed '1,2d;$d' \
  >"$D/which-profiler.c"
grep -q "pt_load" "$D/which-profiler.c" || fail "docs/loader.md has no example program"
# shellcheck disable=SC2086
if $CC $SANF "$D/which-profiler.c" $cflags $libs -o "$D/which-profiler"; then
  env -i PATH="$PATH" NCCL_PROFILER_PLUGIN=proxytrace $RUN "$D/which-profiler" nccl-2.28 \
    >"$D/out" 2>&1 && fail "the example ran without the library path: a non-system prefix needs it"
  env -i PATH="$PATH" NCCL_PROFILER_PLUGIN=proxytrace LD_LIBRARY_PATH="$L" \
    $RUN "$D/which-profiler" nccl-2.28 >"$D/out" 2>&1 || fail "the example program: $(cat "$D/out")"
  grep -q "^nccl-2.28 loads $L/libnccl-profiler-proxytrace.so: ncclProfiler_v5 \"ProxyTrace\", with the dump hook$" \
    "$D/out" || fail "the example program printed: $(cat "$D/out")"
  echo "ok   docs/loader.md example: $(cat "$D/out")"
else
  fail "the example program of docs/loader.md does not build with pkg-config"
fi

# The installed CLI: its version, and demo and sim find the installed plugin.
$RUN "$P/bin/proxytrace" --version | grep -q "^proxytrace $version$" || fail "installed --version"
(cd "$D" && env -u NCCL_PROFILER_PLUGIN $RUN "$P/bin/proxytrace" demo --out "$D/demo") >"$D/out" 2>&1 ||
  fail "the installed demo: $(tail -3 "$D/out")"
grep -q "from $L/librccl-profiler-proxytrace.so" "$D/out" || fail "the installed demo does not load $L's plugin"
env -u NCCL_PROFILER_PLUGIN $RUN "$P/bin/proxytrace" sim --nodes 2 --ranks-per-node 1 --iters 1 \
  --dump-dir "$D/sim" >"$D/out" 2>&1 || fail "the installed sim exits $?: $(tail -3 "$D/out")"
grep -q "from $L/librccl-profiler-proxytrace.so" "$D/out" || fail "the installed sim does not load $L's plugin"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "install: all checks passed"
