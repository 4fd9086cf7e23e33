# `make bench`: hot-path and memory figures of the plugin, side by side with
# an empty plugin (bench/). Not a test: it prints figures and fails only if
# it cannot run.
BENCH_EMPTY := $(B)/bench/libempty-profiler.so
BENCH_BIN := $(B)/bench/bench_plugin
BENCH_RUNS += bench-plugin

$(BENCH_EMPTY): $(B)/bench/empty_plugin.o
	$(CC) -shared $(ALL_LDFLAGS) -o $@ $^

$(BENCH_BIN): $(B)/bench/bench_plugin.o $(TRACE_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS_PT)

.PHONY: bench-plugin
# Three times: the default clock (the CPU counter where usable) on the v6
# table, the same on the v7 table (NCCL 2.31+), then CLOCK_MONOTONIC, so the
# clock's share of each callback shows.
bench-plugin: $(BENCH_BIN) $(BENCH_EMPTY) $(PLUGIN_SO)
	$(EMULATOR) $(BENCH_BIN) $(PLUGIN_SO) $(BENCH_EMPTY)
	PT_BENCH_TABLE=7 $(EMULATOR) $(BENCH_BIN) $(PLUGIN_SO) $(BENCH_EMPTY)
	PROXYTRACE_CLOCK=monotonic $(EMULATOR) $(BENCH_BIN) $(PLUGIN_SO) $(BENCH_EMPTY)

# Two builds side by side in one run: this one against another build's
# plugin (BENCH_BASE=path/to/librccl-profiler-proxytrace.so, e.g. of the
# main branch), in the column of the empty plugin: "added" is what this
# build costs more per callback.
.PHONY: bench-base
bench-base: $(BENCH_BIN) $(PLUGIN_SO)
	@test -n "$(BENCH_BASE)" || { echo "bench-base: set BENCH_BASE to the other build's plugin"; exit 2; }
	$(EMULATOR) $(BENCH_BIN) $(PLUGIN_SO) $(BENCH_BASE)

# The stall watchdog end to end: a 64-rank emulated job hangs; how long after
# its last progress each rank's stall dump is complete on disk (about 13 s:
# the default stall time, plus a hold).
BENCH_RUNS += bench-stall
.PHONY: bench-stall
bench-stall: $(CLI) $(PLUGIN_SO)
	@if command -v python3 >/dev/null 2>&1; then python3 bench/stall_latency.py $(CLI) $(abspath $(PLUGIN_SO)); \
	 else echo "stall latency: skipped (no python3)"; fi
