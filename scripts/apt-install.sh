#!/bin/sh
# Installs Debian packages for the build's own scripts (ensure-*-deps.sh):
# apt-get as root, through sudo otherwise, and a clear message saying what
# to run when neither is possible. Usage: apt-install.sh WHAT PACKAGE...
# (WHAT names the need in the messages: "test dependencies", ...). With
# APT_ADD_ARCH set (arm64), that architecture is added to dpkg first.
set -e
what=$1; shift
echo "$what missing: $* — installing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "error: need root (or sudo) to install: $*" >&2
    [ -n "${APT_ADD_ARCH:-}" ] && echo "       run: dpkg --add-architecture $APT_ADD_ARCH; apt-get update" >&2
    echo "       run: apt-get install -y $*" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
[ -n "${APT_ADD_ARCH:-}" ] && $SUDO dpkg --add-architecture "$APT_ADD_ARCH"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
