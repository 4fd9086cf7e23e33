#!/bin/sh
# Installs what the tests need when it is missing (Debian): cmocka for the
# unit tests, python3 for the golden-file helpers and JSON checks, sqlite3
# for the SQL example of docs/analyze.md. Idempotent and quiet when
# everything is already there.
set -e
missing=""
[ -f /usr/include/cmocka.h ] || missing="$missing libcmocka-dev"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
command -v sqlite3 >/dev/null 2>&1 || missing="$missing sqlite3"
[ -z "$missing" ] && exit 0
echo "test dependencies missing:$missing — installing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "error: need root (or sudo) to install:$missing" >&2
    echo "       run: apt-get install -y$missing" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq $missing >/dev/null
