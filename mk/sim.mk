# The emulator (`proxytrace sim`, tools/sim/), `proxytrace demo`
# (tools/demo.c), `make demo`, and the emulator's tests (tests/sim/).
#
# The emulator's objects go straight into the CLI (before the loader
# archive on the link line, which they use). Tests link the same objects.
SIM_SRCS := $(sort $(wildcard tools/sim/*.c))
SIM_OBJS := $(SIM_SRCS:%.c=$(B)/%.o)
DEMO_OBJ := $(B)/tools/demo.o

$(SIM_OBJS) $(DEMO_OBJ): ALL_CFLAGS += -Itools -Itools/sim

CLI_OBJS += $(SIM_OBJS) $(DEMO_OBJ)
CLI_DEPS += $(LOADER_A)

# The analyzer's tests that run the emulator in-process: mk/analyze.mk is
# read before this file, when SIM_OBJS is still empty, so the objects are
# named as their prerequisites here (else they are not relinked when the
# emulator changes).
$(AT_ACCURACY) $(AT_OOM): $(SIM_OBJS)

# `make demo`: build everything (no test framework needed), then run the
# demo job with our plugin.
demo: build-all
	$(EMULATOR) $(B)/proxytrace demo --build-dir $(B)

# ---- tests -----------------------------------------------------------------
# A callback-counting plugin, built with different sets of exported tables:
#   libcount.so      ncclProfiler_v1 … _v6 and the RCCL dump hook
#   libcount-v4.so   ncclProfiler_v4 only (the host's v4 adapter)
#   libcount-v5.so   ncclProfiler_v5 only (the v5 adapter under v6 hosts)
#   libcount-v1.so   ncclProfiler_v1 only (the v1-v3 adapters)
#   libcount-nogroup.so  every table, answering NULL for the Group event
ST := $(B)/tests/sim
ST_COUNT_SRC := tests/sim/count_plugin.c
ST_PLUGINS := $(ST)/libcount.so $(ST)/libcount-v4.so $(ST)/libcount-v5.so $(ST)/libcount-v1.so \
  $(ST)/libcount-nogroup.so
ST_CFLAGS = $(ALL_CFLAGS) -Itools -Itools/sim -Itests/sim \
  -DST_DIR='"$(abspath $(ST))"' -DST_SRC_DIR='"$(abspath tests/sim)"'

$(ST)/libcount.so: EXPORTS := 0x7e
$(ST)/libcount-v4.so: EXPORTS := 0x10
$(ST)/libcount-v5.so: EXPORTS := 0x20
$(ST)/libcount-v1.so: EXPORTS := 0x02
$(ST)/libcount-nogroup.so: EXPORTS := 0x7e
$(ST)/libcount-nogroup.so: NULL_GROUP := 1
$(ST_PLUGINS): $(ST_COUNT_SRC) tests/sim/count_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fvisibility=hidden -DCOUNT_EXPORTS=$(EXPORTS) -DCOUNT_NULL_GROUP=$(or $(NULL_GROUP),0) \
	  -shared $(ALL_LDFLAGS) \
	  -o $@ $< $(LDLIBS_PT)

ST_TESTS := $(patsubst tests/sim/%.c,$(ST)/%,$(sort $(wildcard tests/sim/test_*.c)))
ST_HELPER := $(ST)/sim_helpers.o

$(ST)/%.o: tests/sim/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ST_CFLAGS) -MMD -MP -c $< -o $@

$(ST_TESTS): $(ST)/%: $(ST)/%.o $(ST_HELPER) $(SIM_OBJS) $(LOADER_A) $(ST_PLUGINS) $(PLUGIN_SO)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(ST_HELPER) $(ST_EXTRA) $(SIM_OBJS) $(LOADER_A) -lcmocka $(LDLIBS_PT) -lm

# The slow-edge matrix names slow edges from the metrics files (src/analyze/mset.c,
# its test in src/analyze/slow_test.c, its index src/analyze/map.c,
# which allocates through src/analyze/memory.c).
$(ST)/test_slow_matrix: ST_EXTRA := $(B)/src/analyze/mset.o $(B)/src/analyze/slow_test.o $(B)/src/analyze/map.o $(B)/src/analyze/memory.o $(B)/src/analyze/json.o $(B)/src/analyze/open.o
$(ST)/test_slow_matrix: $(B)/src/analyze/mset.o $(B)/src/analyze/slow_test.o $(B)/src/analyze/map.o $(B)/src/analyze/memory.o $(B)/src/analyze/json.o $(B)/src/analyze/open.o

TEST_TARGETS += $(ST_PLUGINS) $(ST_TESTS)
TEST_RUNS += $(ST_TESTS) tests/sim/cli.sh tests/sim/dump-files.sh tests/sim/dump-rotation.sh tests/sim/metrics-files.sh \
  tests/sim/top.sh tests/sim/new-hosts.sh tests/sim/same-bytes.sh tests/sim/step-unit.sh tests/sim/layout.sh \
  tests/sim/alltoall.sh tests/sim/pipeline.sh tests/sim/metrics-live.sh

# ---- benchmark ---------------------------------------------------------------
# `make bench`: the emulator as a load generator — callbacks per second from
# all its threads into the empty plugin (bench/) and into ours, same job.
SIM_BENCH_JOB := --nodes 2 --ranks-per-node 2 --channels 4 --ops allreduce:4G --iters 16 \
  --jitter 0 --recv-retry 0 --debug NONE
BENCH_RUNS += bench-sim

.PHONY: bench-sim
bench-sim: $(B)/proxytrace $(BENCH_EMPTY) $(PLUGIN_SO)
	@echo "proxytrace sim as load generator ($(SIM_BENCH_JOB)):"
	@printf "  empty plugin     "; $(EMULATOR) $(B)/proxytrace sim --plugin $(abspath $(BENCH_EMPTY)) $(SIM_BENCH_JOB) | sed -n 's/^ *callbacks: //p'
	@printf "  proxytrace       "; $(EMULATOR) $(B)/proxytrace sim --plugin $(abspath $(PLUGIN_SO)) $(SIM_BENCH_JOB) | sed -n 's/^ *callbacks: //p'
