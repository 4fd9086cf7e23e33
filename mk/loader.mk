# The loader library (src/loader/, include/proxytrace/loader.h), the
# `proxytrace probe` command, and their tests (tests/loader/).
#
#   $(B)/libproxytrace-loader.so   shared, SONAME libproxytrace-loader.so.MAJOR,
#                                  exports only the pt_* API
#   $(B)/libproxytrace-loader.a    static; the CLI links this one
LOADER_SRCS := $(sort $(wildcard src/loader/*.c))
LOADER_OBJS := $(LOADER_SRCS:%.c=$(B)/%.o) $(B)/src/escape/escape.o
LOADER_SONAME := libproxytrace-loader.so.$(VERSION_MAJOR)
LOADER_SO := $(B)/libproxytrace-loader.so
LOADER_A := $(B)/libproxytrace-loader.a
LOADER_LIBS := -ldl -lpthread

$(LOADER_OBJS): ALL_CFLAGS += -fvisibility=hidden

$(LOADER_SO): $(LOADER_OBJS)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,$(LOADER_SONAME) -o $@ $(LOADER_OBJS) $(LOADER_LIBS)
	ln -sf libproxytrace-loader.so $(B)/$(LOADER_SONAME)

$(LOADER_A): $(LOADER_OBJS)
	@rm -f $@
	$(AR) rcs $@ $(LOADER_OBJS)

ALL_TARGETS += $(LOADER_SO) $(LOADER_A)

CLI_OBJS += $(B)/tools/probe.o
CLI_LIBS += $(LOADER_A)
CLI_DEPS += $(LOADER_A)

# ---- tests -----------------------------------------------------------------
# Test plugins are built plainly (no sanitizer): they stand for plugins
# built by someone else, and the loader must cope with them as they are.
LT := $(B)/tests/loader
LT_PLUGIN_DIR := $(LT)/plugins
LT_PLUGIN_SRC := tests/loader/plugins/testplugin.c
LT_PLUGIN_CC = $(CC) -std=c11 -O1 -fPIC -shared -Wall -Wextra -Wno-unused-parameter -o $@ $<

# name  exports(bit N = ncclProfiler_vN)  extra flags  soname
define lt_plugin
$(LT_PLUGIN_DIR)/$(1).so: $(LT_PLUGIN_SRC)
	@mkdir -p $$(dir $$@)
	$$(LT_PLUGIN_CC) -DPT_TEST_EXPORTS=$(2) $(3) -Wl,-soname,$(4)
LT_PLUGINS += $(LT_PLUGIN_DIR)/$(1).so
endef
LT_PLUGINS :=
$(eval $(call lt_plugin,good,0x7e,-DPT_TEST_DUMP -DPT_TEST_MAJOR=1,librccl-profiler-proxytrace.so.1))
$(eval $(call lt_plugin,good2,0x7e,-DPT_TEST_DUMP -DPT_TEST_MAJOR=2,librccl-profiler-proxytrace.so.2))
$(eval $(call lt_plugin,v1only,0x02,,libnccl-profiler-v1only.so))
$(eval $(call lt_plugin,v5only,0x20,,libnccl-profiler-v5only.so))
$(eval $(call lt_plugin,v6only,0x40,-DPT_TEST_DUMP,libnccl-profiler-v6only.so))
$(eval $(call lt_plugin,v7only,0x80,-DPT_TEST_DUMP,librccl-profiler-v7only.so))
$(eval $(call lt_plugin,nosym,0x00,,libnccl-profiler-nosym.so))
$(eval $(call lt_plugin,nullinit,0x40,-DPT_TEST_NULL_INIT,librccl-profiler-proxytrace.so.1))
$(eval $(call lt_plugin,smalltable,0x40,-DPT_TEST_SMALL_TABLE,libnccl-profiler-small.so))
$(eval $(call lt_plugin,functable,0x40,-DPT_TEST_FUNC_TABLE,libnccl-profiler-func.so))
$(eval $(call lt_plugin,undef,0x40,-DPT_TEST_UNDEFINED,libnccl-profiler-undef.so))
$(eval $(call lt_plugin,crash,0x7e,-DPT_TEST_CRASH,libnccl-profiler-crash.so))
$(eval $(call lt_plugin,hang,0x7e,-DPT_TEST_HANG,libnccl-profiler-hang.so))

$(LT_PLUGIN_DIR)/fakerccl.so: tests/loader/plugins/fakerccl.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -fPIC -shared -Wall -Wextra -o $@ $< -Wl,-soname,librccl.so.1
LT_PLUGINS += $(LT_PLUGIN_DIR)/fakerccl.so

LT_PROGS := $(LT)/test_units $(LT)/test_elf $(LT)/test_once $(LT)/test_matrix $(LT)/test_exec \
  $(LT)/test_probe_env
# fixtures.c starts children through PROXYTRACE_EMULATOR like the CLI does.
LT_COMMON := $(B)/tests/loader/fixtures.o $(B)/tools/exec.o
$(B)/tests/loader/fixtures.o $(LT)/test_exec.o: ALL_CFLAGS += -Itools

$(LT_PROGS): $(LT)/%: $(LT)/%.o $(LT_COMMON) $(LOADER_A) | $(LT_PLUGINS)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LT_COMMON) $(LOADER_A) -lcmocka $(LOADER_LIBS)

# cmocka must be there before the tests compile.
$(LT_PROGS:%=%.o) $(LT_COMMON): | test-deps

TEST_RUNS += $(LT_PROGS) tests/loader/exports.sh tests/loader/probe-cli.sh tests/loader/install.sh \
  tests/loader/hostile-files.sh tests/loader/doctor.sh tests/loader/quickstarts.sh tests/docs/readme.sh \
  tests/docs/pictures.sh
TEST_TARGETS += $(LT_PROGS) $(LT_PLUGINS)
