# The `proxytrace` CLI: tools/proxytrace.c plus one file (or folder) per
# subcommand. Components append their objects and libraries to CLI_OBJS,
# CLI_LIBS (link flags) and CLI_DEPS (files the link needs) in their own mk
# file; the link rule itself is in the top Makefile, after every mk file has
# been read.
CLI := $(B)/proxytrace
CLI_OBJS += $(B)/tools/proxytrace.o $(B)/tools/exec.o $(B)/tools/top.o
# Which NCCL or RCCL a job here would load (tools/job_host.c): doctor's host
# check and probe's default host.
CLI_OBJS += $(B)/tools/job_host.o
ALL_TARGETS += $(CLI)
# `proxytrace doctor` (tools/doctor.c) names the plugin's tick source with
# the plugin's own clock code, and judges the PROXYTRACE_* values with the
# plugin's own reading of them (config.c, and host.c for its logger's
# level), linked in.
CLI_OBJS += $(B)/tools/doctor.o $(B)/src/trace/clock.o $(B)/src/plugin/config.o $(B)/src/plugin/host.o
# `proxytrace selftest` (tools/selftest.c) runs the Python package's
# selftest (python/proxytrace/_selftest.py) with this build's plugin, which
# it finds as the emulator does (tools/sim/locate.c).
CLI_OBJS += $(B)/tools/selftest.o
$(B)/tools/selftest.o: ALL_CFLAGS += -Itools -Itools/sim
CLI_LIBS += $(TRACE_A)
CLI_DEPS += $(TRACE_A)

# The README's pictures (docs/img/*.png), remade from the emulator with
# headless chromium: the --html page of a hang of 64 and of 512 ranks and of
# a slow link, and a frame of `proxytrace top`.
.PHONY: screenshots
screenshots: build-all
	sh scripts/screenshots.sh $(B) docs/img
