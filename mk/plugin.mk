# The trace core (src/trace) and the profiler plugin (src/plugin).
#
# libpttrace.a   the core, position-independent, for the plugin and the tests
# PLUGIN_SO      librccl-profiler-proxytrace.so: only the ABI symbols are
#                exported (-fvisibility=hidden; tests check the symbol list)
TRACE_SRCS := $(sort $(wildcard src/trace/*.c))
TRACE_OBJS := $(TRACE_SRCS:%.c=$(B)/%.o)
TRACE_A := $(B)/libpttrace.a
PLUGIN_SRCS := $(sort $(wildcard src/plugin/*.c))
PLUGIN_OBJS := $(PLUGIN_SRCS:%.c=$(B)/%.o)
PLUGIN_SO := $(B)/librccl-profiler-proxytrace.so
PLUGIN_SONAME := librccl-profiler-proxytrace.so.$(VERSION_MAJOR)

ALL_TARGETS += $(TRACE_A) $(PLUGIN_SO)

$(TRACE_OBJS) $(PLUGIN_OBJS): ALL_CFLAGS += -fvisibility=hidden

$(TRACE_A): $(TRACE_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(PLUGIN_SO): $(PLUGIN_OBJS) $(TRACE_A)
	$(CC) -shared -Wl,-soname,$(PLUGIN_SONAME) -Wl,-z,defs -Wl,--as-needed $(ALL_LDFLAGS) \
	  -o $@ $(PLUGIN_OBJS) $(TRACE_A) $(LDLIBS_PT)
