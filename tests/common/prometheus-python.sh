# Sourced by the tests that parse the step metrics files: sets PY to a
# python3 with prometheus_client (Debian's python3-prometheus-client, which
# make test installs; another python3 may come first on PATH), or fails
# with what to install. Needs fail() defined.
PY=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import prometheus_client' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || fail "no python3 with prometheus_client (Debian: python3-prometheus-client)"
