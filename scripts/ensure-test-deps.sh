#!/bin/sh
# Installs what the tests need when it is missing (Debian): cmocka for the
# unit tests, the Relacy verifier and a C++ compiler for the seqlock model
# check, python3 for the golden-file helpers and JSON checks, sqlite3 for the
# SQL example of docs/analyze.md, binutils (nm reads the analyzer's objects
# for its stage check, tests/analyze/layers.sh), Debian's python3-prometheus-client (its
# parser checks the metrics files), Debian's prometheus and
# prometheus-node-exporter (the Grafana dashboard's queries are evaluated
# on the metrics files as node_exporter serves them), tmux (`proxytrace top` is tested in a
# real terminal), chromium (the HTML report is loaded in a headless
# browser), and for the Python package's tests Debian's own
# /usr/bin/python3 with venv and pip (an offline `pip install` into a
# virtual environment). Idempotent and quiet when
# everything is already there.
#
# Usage: ensure-test-deps.sh [ARCH]. With ARCH=aarch64 (make test
# ARCH=aarch64) also the cross compiler, the arm64 C library and cmocka
# library the tests link and load (multiarch: dpkg --add-architecture arm64),
# and, on a machine that is not aarch64, qemu-user to run them.
set -e
arch=${1:-}
missing=""
add_arch=""
[ -f /usr/include/cmocka.h ] || missing="$missing libcmocka-dev"
[ -f /usr/include/relacy/relacy.hpp ] || missing="$missing relacy-dev"
command -v "${HOSTCXX:-g++}" >/dev/null 2>&1 || missing="$missing g++"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
command -v sqlite3 >/dev/null 2>&1 || missing="$missing sqlite3"
command -v nm >/dev/null 2>&1 || missing="$missing binutils"
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing="$missing python3-venv"
  /usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing="$missing python3-pip"
else
  missing="$missing python3 python3-venv python3-pip"
fi
[ -d /usr/lib/python3/dist-packages/prometheus_client ] || missing="$missing python3-prometheus-client"
command -v prometheus >/dev/null 2>&1 || missing="$missing prometheus"
command -v prometheus-node-exporter >/dev/null 2>&1 || missing="$missing prometheus-node-exporter"
command -v tmux >/dev/null 2>&1 || missing="$missing tmux"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
case $arch in
  "") ;;
  aarch64)
    command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 ||
      missing="$missing gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
    # The library itself, not only the (shared) header: the test programs
    # link it, and the emulator loads it from the multiarch folder.
    [ -f /usr/lib/aarch64-linux-gnu/libcmocka.so ] || missing="$missing libcmocka-dev:arm64"
    [ -f /usr/lib/aarch64-linux-gnu/libcmocka.so.0 ] || missing="$missing libcmocka0:arm64"
    if [ "$(uname -m)" != aarch64 ]; then
      command -v qemu-aarch64 >/dev/null 2>&1 || missing="$missing qemu-user"
    fi
    if command -v dpkg >/dev/null 2>&1 && [ "$(dpkg --print-architecture)" != arm64 ] &&
       ! dpkg --print-foreign-architectures | grep -qx arm64; then
      add_arch=arm64
    fi
    ;;
  *) echo "error: ARCH must be empty or aarch64 (got '$arch')" >&2; exit 1 ;;
esac
[ -z "$missing" ] && exit 0
# shellcheck disable=SC2086
APT_ADD_ARCH=$add_arch exec "$(dirname "$0")/apt-install.sh" "test dependencies" $missing
