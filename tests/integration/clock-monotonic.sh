#!/bin/sh
# The portable clock (CLOCK_MONOTONIC ticks, what machines without an
# invariant TSC get): the golden dumps and their timestamp checks must hold
# with it too.
set -eu
B=${1:-build}
PROXYTRACE_CLOCK=monotonic PT_PLUGIN_SO="${PT_PLUGIN_SO:-$B/librccl-profiler-proxytrace.so}" \
  ${PROXYTRACE_EMULATOR:-} "$B/tests/integration/test_rccl_dump"
