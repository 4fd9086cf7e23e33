# Tests of the trace core and the plugin.
#
# tests/unit/test_*.c          cmocka tests linked with the core (libpttrace.a)
# tests/integration/test_*.c   cmocka tests that dlopen the built plugin and
#                              drive it through the ABI (rccl_host.c)
# tests/integration/*.sh       shell tests, given the build folder
# tests/common/failalloc.c     a malloc that fails the Nth call (test_faults
#                              here, the analyzer's test_oom)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(sort $(wildcard tests/unit/test_*.c)))
INTEG_TESTS := $(patsubst tests/integration/%.c,$(B)/tests/integration/%,\
  $(sort $(wildcard tests/integration/test_*.c)))
INTEG_SH := $(sort $(wildcard tests/integration/*.sh))
RH_OBJ := $(B)/tests/integration/rccl_host.o

TEST_TARGETS += $(UNIT_TESTS) $(INTEG_TESTS)
TEST_RUNS += $(UNIT_TESTS) $(INTEG_TESTS) $(INTEG_SH)

$(UNIT_TESTS): $(B)/tests/unit/%: $(B)/tests/unit/%.o $(TRACE_A) $(PLUGIN_OBJS)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(filter-out $(B)/src/plugin/abi_v6.o $(B)/src/plugin/abi_v7.o $(B)/src/plugin/dump_hook.o,$(PLUGIN_OBJS)) $(TRACE_A) -lcmocka $(LDLIBS_PT)

$(INTEG_TESTS): $(B)/tests/integration/%: $(B)/tests/integration/%.o $(RH_OBJ) $(PLUGIN_SO)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(RH_OBJ) $(INTEG_EXTRA) -lcmocka $(LDLIBS_PT)

$(B)/tests/integration/test_faults.o: ALL_CFLAGS += -Itests/common
$(B)/tests/integration/test_faults: $(FA_OBJ)
$(B)/tests/integration/test_faults: INTEG_EXTRA := $(FA_OBJ)

# Two fake host libraries for test_host_detect: one exports the symbol by
# which the plugin tells RCCL, the other does not (built plainly: they stand
# for the host, not for our code).
FAKEHOSTS := $(B)/tests/integration/libfakehost-rccl.so $(B)/tests/integration/libfakehost-nccl.so
$(B)/tests/integration/libfakehost-rccl.so: FAKE := -DFAKE_RCCL
$(FAKEHOSTS): tests/integration/fakehost.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -fPIC -shared -Wall -Wextra $(FAKE) -o $@ $<
$(B)/tests/integration/test_host_detect.o: ALL_CFLAGS += -DPT_FAKEHOST_DIR='"$(abspath $(B)/tests/integration)"'
$(B)/tests/integration/test_host_detect: $(FAKEHOSTS)
$(B)/tests/integration/test_rccl_diag.o: ALL_CFLAGS += -DPT_FAKEHOST_DIR='"$(abspath $(B)/tests/integration)"'
$(B)/tests/integration/test_rccl_diag: $(FAKEHOSTS)
TEST_TARGETS += $(FAKEHOSTS)

# Integration tests find the plugin of this build folder.
export PT_PLUGIN_SO = $(abspath $(PLUGIN_SO))
