# `proxytrace selftest` (tools/selftest.c, python/proxytrace/_selftest*.py):
# nothing to build beyond the CLI. Its tests run the checks on the emulator
# (--emulate, emulated time): tests/selftest/cli.sh the command as a user
# runs it, tests/python/test_selftest.py (with the Python package's tests)
# the checks against backends and analyzers that plant or judge wrongly.
# The run on a GPU is scripts/device-selftest.sh, outside `make test`.
#
# Not with ARCH=: the Python side runs the CLI of the build, which this
# machine's python3 cannot start when it is built for another architecture
# (as for tests/python, mk/python.mk).
ifeq ($(ARCH),)
TEST_RUNS += tests/selftest/cli.sh
endif
