# The fan-out profiler (src/fanout/): a plugin of its own that loads other
# profiler plugins (PROXYTRACE_FANOUT_PLUGINS) through the loader and
# forwards every event to each; and its tests (tests/fanout/).
#
#   $(B)/libnccl-profiler-fanout.so   NCCL_PROFILER_PLUGIN=fanout
#   $(B)/librccl-profiler-fanout.so   the same file under RCCL 2.31's naming
#
# It links the loader's static archive (position-independent, symbols
# hidden) and the plugin's host detection (src/plugin/host.c), so it exports
# only the ncclProfiler_v1..v7 tables and ncclProfilerProxyTraceDump.
FANOUT_SRCS := $(filter-out src/fanout/explain.c,$(sort $(wildcard src/fanout/*.c)))
FANOUT_OBJS := $(FANOUT_SRCS:%.c=$(B)/%.o)
FANOUT_SO := $(B)/libnccl-profiler-fanout.so
FANOUT_RCCL := $(B)/librccl-profiler-fanout.so

$(FANOUT_OBJS): ALL_CFLAGS += -fvisibility=hidden

# (mk/loader.mk is read after this file: its archive is named here.)
$(FANOUT_SO): $(FANOUT_OBJS) $(B)/src/plugin/host.o $(B)/libproxytrace-loader.a
	$(CC) -shared -Wl,-soname,libnccl-profiler-fanout.so.$(VERSION_MAJOR) -Wl,-z,defs -Wl,--exclude-libs,ALL $(ALL_LDFLAGS) \
	  -o $@ $(FANOUT_OBJS) $(B)/src/plugin/host.o $(B)/libproxytrace-loader.a $(LDLIBS_PT)
$(FANOUT_RCCL): $(FANOUT_SO)
	ln -sf $(notdir $(FANOUT_SO)) $@

ALL_TARGETS += $(FANOUT_SO) $(FANOUT_RCCL)

.PHONY: install-fanout
INSTALL_STEPS += install-fanout
install-fanout: build-all
	$(INSTALL) -d $(I_LIB)
	$(INSTALL) -m 0755 $(FANOUT_SO) $(I_LIB)/libnccl-profiler-fanout.so.$(VERSION)
	ln -sfn libnccl-profiler-fanout.so.$(VERSION) $(I_LIB)/libnccl-profiler-fanout.so.$(VERSION_MAJOR)
	ln -sfn libnccl-profiler-fanout.so.$(VERSION_MAJOR) $(I_LIB)/libnccl-profiler-fanout.so
	ln -sfn libnccl-profiler-fanout.so.$(VERSION_MAJOR) $(I_LIB)/librccl-profiler-fanout.so

# ---- tests -----------------------------------------------------------------
# Test children, one per API version (tests/fanout/child_plugin.c), and one
# v6 child with RCCL's dump hook.
FT := $(B)/tests/fanout
FT_CHILDREN := $(foreach v,1 2 3 4 5 6 7,$(FT)/libchild-v$(v).so) $(FT)/libchild-dump.so
$(FT)/libchild-v%.so: tests/fanout/child_plugin.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fvisibility=hidden -DCHILD_V=$* -shared $(ALL_LDFLAGS) -o $@ $< $(LDLIBS_PT)
$(FT)/libchild-dump.so: tests/fanout/child_plugin.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fvisibility=hidden -DCHILD_V=6 -DCHILD_DUMP -shared $(ALL_LDFLAGS) -o $@ $< $(LDLIBS_PT)

FT_MEMORY := $(FT)/test_memory
FT_TESTS := $(filter-out $(FT_MEMORY),$(patsubst tests/fanout/%.c,$(FT)/%,$(sort $(wildcard tests/fanout/test_*.c))))
$(FT)/%.o: tests/fanout/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -Itools -Itools/sim -Itests/sim -DFO_DIR='"$(abspath $(FT))"' -DFO_LIB='"$(abspath $(FANOUT_SO))"' \
	  -DST_DIR='"$(abspath $(B)/tests/sim)"' -MMD -MP -c $< -o $@
# The emulator's objects and the sim tests' helpers (mk/sim.mk, read later).
$(FT_TESTS): $(FT)/%: $(FT)/%.o $(B)/tests/sim/sim_helpers.o $(FT_CHILDREN) $(FANOUT_SO) \
  $(patsubst %.c,$(B)/%.o,$(wildcard tools/sim/*.c)) $(B)/libproxytrace-loader.a
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(B)/tests/sim/sim_helpers.o \
	  $(patsubst %.c,$(B)/%.o,$(sort $(wildcard tools/sim/*.c))) $(B)/libproxytrace-loader.a -lcmocka $(LDLIBS_PT) -lm

# The handles' memory, counted by the failing allocator (tests/common/).
$(FT_MEMORY): $(FT)/test_memory.o $(FA_OBJ) $(B)/src/fanout/ring.o $(FT_CHILDREN) $(FANOUT_SO)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(FA_OBJ) $(B)/src/fanout/ring.o -lcmocka $(LDLIBS_PT)

TEST_TARGETS += $(FT_CHILDREN) $(FT_TESTS) $(FT_MEMORY)
TEST_RUNS += $(FT_TESTS) $(FT_MEMORY) $(sort $(wildcard tests/fanout/*.sh))

# ---- benchmark ---------------------------------------------------------------
# `make bench`: the fan-out with proxytrace as its only child against
# proxytrace loaded directly, per step, and the fan-out's allocations.
BENCH_FANOUT := $(B)/bench/bench_fanout
BENCH_FORWARD := $(B)/bench/libforward-profiler.so
BENCH_RUNS += bench-fanout
$(BENCH_FANOUT): $(B)/bench/bench_fanout.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS_PT)
$(BENCH_FORWARD): $(B)/bench/forward_plugin.o
	$(CC) -shared $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS_PT)
.PHONY: bench-fanout
# Twice: proxytrace as the child, then the empty plugin (bench/), whose own
# cost is nearly nothing, so the second run shows the fan-out's alone; each
# beside a bare forwarder (bench/forward_plugin.c), the floor of any plugin
# in between.
bench-fanout: $(BENCH_FANOUT) $(PLUGIN_SO) $(FANOUT_SO) $(BENCH_EMPTY) $(BENCH_FORWARD)
	$(EMULATOR) $(BENCH_FANOUT) $(abspath $(PLUGIN_SO)) $(abspath $(FANOUT_SO)) $(abspath $(BENCH_FORWARD))
	$(EMULATOR) $(BENCH_FANOUT) $(abspath $(BENCH_EMPTY)) $(abspath $(FANOUT_SO)) $(abspath $(BENCH_FORWARD))

# `proxytrace probe --fanout` (tools/probe.c) explains the fan-out with the
# same list parser and child requests (src/fanout/children.c).
CLI_OBJS += $(B)/src/fanout/children.o $(B)/src/fanout/explain.o
