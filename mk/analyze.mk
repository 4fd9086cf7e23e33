# The analyzer (src/analyze/, include/proxytrace/analyze.h) and the
# `proxytrace analyze` command (tools/analyze.c).
#
#   $(B)/libproxytrace-analyze.so   shared, SONAME libproxytrace-analyze.so.MAJOR,
#                                   exports only the pt_analysis_* API (Python
#                                   loads it with ctypes)
#   $(B)/libproxytrace-analyze.a    static; the CLI links this one
ANALYZE_SRCS := $(sort $(wildcard src/analyze/*.c))
ANALYZE_OBJS := $(ANALYZE_SRCS:%.c=$(B)/%.o)
ANALYZE_SONAME := libproxytrace-analyze.so.$(VERSION_MAJOR)
ANALYZE_SO := $(B)/libproxytrace-analyze.so
ANALYZE_A := $(B)/libproxytrace-analyze.a

$(ANALYZE_OBJS): ALL_CFLAGS += -fvisibility=hidden

$(ANALYZE_SO): $(ANALYZE_OBJS)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,$(ANALYZE_SONAME) -Wl,-z,defs -o $@ $(ANALYZE_OBJS) -lm
	ln -sf libproxytrace-analyze.so $(B)/$(ANALYZE_SONAME)

$(ANALYZE_A): $(ANALYZE_OBJS)
	@rm -f $@
	$(AR) rcs $@ $(ANALYZE_OBJS)

ALL_TARGETS += $(ANALYZE_SO) $(ANALYZE_A)

CLI_OBJS += $(B)/tools/analyze.o
CLI_LIBS += $(ANALYZE_A)
CLI_DEPS += $(ANALYZE_A)

.PHONY: install-analyze
INSTALL_STEPS += install-analyze
install-analyze: build-all
	$(INSTALL) -d $(I_LIB) $(DESTDIR)$(INCLUDEDIR)/proxytrace
	$(INSTALL) -m 0755 $(ANALYZE_SO) $(I_LIB)/libproxytrace-analyze.so.$(VERSION)
	ln -sfn libproxytrace-analyze.so.$(VERSION) $(I_LIB)/$(ANALYZE_SONAME)
	ln -sfn $(ANALYZE_SONAME) $(I_LIB)/libproxytrace-analyze.so
	$(INSTALL) -m 0644 $(ANALYZE_A) $(I_LIB)/libproxytrace-analyze.a
	$(INSTALL) -m 0644 include/proxytrace/analyze.h $(DESTDIR)$(INCLUDEDIR)/proxytrace/
