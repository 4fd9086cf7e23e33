# proxytrace — top-level build.
#
#   make            build the plugin, the loader, the CLI
#   make demo       build, then run the demo job and print its result
#   make test       install missing test dependencies, build, run every test
#                   (ARCH=aarch64: cross-built, run under qemu-aarch64)
#   make test-real-time  only the tests that must see the machine's clock
#   make test-threads    only the tests where threads can race (CI: under TSan)
#   make bench      build and run the benchmarks (figures as side-by-side ratios)
#   make fuzz       build the libFuzzer targets with clang and run each briefly
#                   (FUZZ_SECONDS, FUZZ_TARGETS; mk/fuzz.mk)
#   make install    install under $(DESTDIR)$(PREFIX)
#   make clean
#
# SAN=address (ASan+UBSan) or SAN=thread (TSan) builds everything into its own
# folder (build-address/, build-thread/) with that sanitizer, e.g.
# `make test SAN=thread`; those builds, and DEBUG=1 (build-debug/), also
# compile the debug checks (PT_DEBUG). Each component's rules live in
# mk/<component>.mk.

VERSION_MAJOR := 1
VERSION_MINOR := 0
VERSION_PATCH := 0
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

CC ?= cc

# ARCH=aarch64 cross-builds everything for 64-bit Arm with Debian's
# gcc-aarch64-linux-gnu, into folders of its own (build-aarch64/,
# build-address-aarch64/, ...). On any other machine `make test ARCH=aarch64`
# runs the test programs under EMULATOR (default qemu-aarch64, Debian's
# qemu-user, without -L: the binaries use the arm64 libraries installed
# multiarch), and so does every program that starts another: the test runner
# exports it as PROXYTRACE_EMULATOR (tools/exec.c, the shell tests).
# SAN= together with ARCH= would need the arm64 sanitizer runtimes, which
# ensure-test-deps.sh does not install: CI runs the aarch64 leg plain.
ARCH ?=
EMULATOR ?=
ifeq ($(ARCH),)
else ifeq ($(ARCH),aarch64)
  CROSS ?= aarch64-linux-gnu-
  CC := $(CROSS)gcc
  AR := $(CROSS)ar
  ifneq ($(shell uname -m),aarch64)
    EMULATOR := $(or $(EMULATOR),qemu-aarch64)
  endif
else
  $(error ARCH must be empty or aarch64 (got '$(ARCH)'))
endif
PREFIX ?= /usr/local
DESTDIR ?=
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin

OPT ?= -O2 -g
CFLAGS ?= $(OPT)
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -fPIC $(WARN) -Iinclude -Isrc \
  -DPT_VERSION_MAJOR=$(VERSION_MAJOR) -DPT_VERSION_MINOR=$(VERSION_MINOR) \
  -DPT_VERSION_PATCH=$(VERSION_PATCH)
LDFLAGS ?=
LDLIBS_PT := -lpthread -ldl

# DEBUG=1 (own folder build-debug/): debug checks (PT_DEBUG) without a
# sanitizer; every sanitizer build has them too.
DEBUG ?=
SAN ?=
ifeq ($(SAN),)
  B := build$(if $(DEBUG),-debug)
  SAN_FLAGS :=
else ifeq ($(SAN),address)
  B := build-address
  SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
  # The sanitizer runtime of GCC up to 13 and LLVM up to 16 takes a dynamic
  # TLS block that glibc >= 2.25 malloc'd at 16 bytes past a page for a
  # pre-2.25 block with a header, and reads the two words before it as that
  # block's bounds; the leak check at exit then dies in its tracer ("Tracer
  # caught signal 11"), about one run in thirty of a program that dlopens a
  # plugin with thread-locals (google/sanitizers#1409, fixed in LLVM 17).
  # No thread-local of ours holds a heap pointer, so not following
  # __tls_get_addr hides no leak. What the caller sets comes after: it wins.
  export ASAN_OPTIONS := intercept_tls_get_addr=0$(if $(ASAN_OPTIONS),:$(ASAN_OPTIONS))
else ifeq ($(SAN),thread)
  B := build-thread
  SAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
else
  $(error SAN must be empty, address or thread (got '$(SAN)'))
endif

DEBUG_FLAGS := $(if $(SAN)$(DEBUG),-DPT_DEBUG)
B := $(B)$(if $(ARCH),-$(ARCH))

ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS) $(SAN_FLAGS) $(DEBUG_FLAGS)
ALL_LDFLAGS = $(LDFLAGS) $(SAN_FLAGS)

# Targets that components add to: ALL_TARGETS (what `make` builds),
# TEST_TARGETS (what the tests need besides that: test programs, fixture
# plugins — built only by `make test`, so `make` and `make demo` need no
# test framework), TEST_RUNS (what `make test` runs), BENCH_RUNS,
# INSTALL_STEPS.
ALL_TARGETS :=
TEST_TARGETS :=
TEST_RUNS :=
BENCH_RUNS :=
INSTALL_STEPS :=

.PHONY: all test demo bench install clean test-deps
all: build-all

# Object rule shared by every component: build/<path>.o from <path>.c.
$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# The failing allocator of the fault tests (tests/common/failalloc.h), which
# mk/tests.mk and mk/analyze.mk both link.
FA_OBJ := $(B)/tests/common/failalloc.o

# mk/plugin.mk first: others name its targets (PLUGIN_SO, TRACE_A) as prerequisites.
include mk/plugin.mk $(filter-out mk/plugin.mk,$(sort $(wildcard mk/*.mk)))

# The CLI links after every component has added its objects (mk/tools.mk).
$(CLI): $(CLI_OBJS) $(CLI_DEPS)
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJS) $(CLI_LIBS) $(LDLIBS_PT) -lm

.PHONY: build-all
build-all: $(ALL_TARGETS)

test-deps:
	@scripts/ensure-test-deps.sh $(ARCH)

# TEST_JOBS: how many tests `make test` runs at once (default: the cores
# here); the real-time tests run after them, each alone (scripts/run-tests.sh).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)

# Dependencies first (a sub-make then builds the tests against them); every
# test runs even when an earlier one fails; the recipe fails at the end if
# any did, after printing one summary line.
# SKIP_REAL_TIME=1 leaves the real-time tests out (CI runs them in a leg
# of their own, beside two CPU hogs: .ci/run).
SKIP_REAL_TIME ?=
test:
	@scripts/ensure-test-deps.sh $(ARCH)
	@$(MAKE) --no-print-directory build-all test-build
	@CC="$(CC)" PROXYTRACE_EMULATOR="$(EMULATOR)" RUN_TESTS_JOBS="$(TEST_JOBS)" RUN_TESTS_SERIAL="$(REAL_TIME_RUNS)" \
	  scripts/run-tests.sh $(B) $(if $(SKIP_REAL_TIME),$(filter-out $(REAL_TIME_RUNS),$(TEST_RUNS)),$(TEST_RUNS))

.PHONY: test-build
test-build: $(TEST_TARGETS)

# The tests that must see the machine's clock — clock calibration, the
# dumper and recording threads under signals, fork and contention, `top`,
# `analyze --follow` and the metrics files on a live folder — are all a loaded machine can
# change (every emulated job runs on emulated time): CI runs these beside
# two CPU hogs (docs/testing.md).
T_ := $(B)/tests
REAL_TIME_RUNS := $(T_)/unit/test_clock $(T_)/unit/test_seqlock $(T_)/integration/test_clock_log \
  $(T_)/integration/test_concurrency $(T_)/integration/test_dumps $(T_)/integration/test_fork \
  $(T_)/integration/test_pxn_threads $(T_)/integration/test_stress tests/integration/clock-monotonic.sh \
  tests/fanout/dumps-while-forwarding.sh tests/sim/top.sh tests/analyze/follow.sh tests/sim/metrics-live.sh
.PHONY: test-real-time test-threads
test-real-time:
	@scripts/ensure-test-deps.sh $(ARCH)
	@$(MAKE) --no-print-directory build-all test-build
	@CC="$(CC)" PROXYTRACE_EMULATOR="$(EMULATOR)" scripts/run-tests.sh $(B) $(REAL_TIME_RUNS)

# What threads can race in: the real-time tests above, every integration
# test (the plugin's threads through the real ABI), the analyzer on several
# threads, and emulated jobs end to end (the emulator's threads handing
# one baton, the plugin's timers on it, signals). CI runs these under TSan
# (docs/testing.md): the rest of the suite drives single-threaded code.
THREADS_RUNS := $(sort $(REAL_TIME_RUNS) $(filter $(T_)/integration/%,$(TEST_RUNS)) tests/analyze/threads.sh \
  $(T_)/sim/test_sched $(T_)/sim/test_sim_counts tests/sim/same-bytes.sh tests/sim/dump-files.sh tests/regress/corpus.sh)
test-threads:
	@scripts/ensure-test-deps.sh $(ARCH)
	@$(MAKE) --no-print-directory build-all test-build
	@CC="$(CC)" PROXYTRACE_EMULATOR="$(EMULATOR)" RUN_TESTS_JOBS="$(TEST_JOBS)" RUN_TESTS_SERIAL="$(REAL_TIME_RUNS)" \
	  scripts/run-tests.sh $(B) $(THREADS_RUNS)

bench: build-all $(BENCH_RUNS)

install: build-all $(INSTALL_STEPS)

clean:
	rm -rf build build-*

-include $(shell find $(B) -name '*.d' 2>/dev/null)
