# Tests of the trace core and the plugin.
#
# tests/unit/test_*.c          cmocka tests linked with the core (libpttrace.a)
# tests/integration/test_*.c   cmocka tests that dlopen the built plugin and
#                              drive it through the ABI (rccl_host.c)
# tests/integration/*.sh       shell tests, given the build folder
UNIT_TESTS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(sort $(wildcard tests/unit/test_*.c)))
INTEG_TESTS := $(patsubst tests/integration/%.c,$(B)/tests/integration/%,\
  $(sort $(wildcard tests/integration/test_*.c)))
INTEG_SH := $(sort $(wildcard tests/integration/*.sh))
RH_OBJ := $(B)/tests/integration/rccl_host.o

TEST_TARGETS += $(UNIT_TESTS) $(INTEG_TESTS)
TEST_RUNS += $(UNIT_TESTS) $(INTEG_TESTS) $(INTEG_SH)

$(UNIT_TESTS): $(B)/tests/unit/%: $(B)/tests/unit/%.o $(TRACE_A) $(PLUGIN_OBJS)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(filter-out $(B)/src/plugin/abi_v6.o $(B)/src/plugin/dump_hook.o,$(PLUGIN_OBJS)) $(TRACE_A) -lcmocka $(LDLIBS_PT)

$(INTEG_TESTS): $(B)/tests/integration/%: $(B)/tests/integration/%.o $(RH_OBJ) $(PLUGIN_SO)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(RH_OBJ) -lcmocka $(LDLIBS_PT)

# Integration tests find the plugin of this build folder.
export PT_PLUGIN_SO = $(abspath $(PLUGIN_SO))
