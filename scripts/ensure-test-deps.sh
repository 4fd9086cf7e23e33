#!/bin/sh
# Installs what the tests need when it is missing (Debian): cmocka for the
# unit tests, python3 for the golden-file helpers. Idempotent and quiet when
# everything is already there.
set -e
missing=""
[ -f /usr/include/cmocka.h ] || missing="$missing libcmocka-dev"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
[ -z "$missing" ] && exit 0
# shellcheck disable=SC2086
exec "$(dirname "$0")/apt-install.sh" "test dependencies" $missing
