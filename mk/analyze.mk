# The analyzer (src/analyze/, include/proxytrace/analyze.h), the
# `proxytrace analyze` command (tools/analyze.c), its tests (tests/analyze/)
# and its benchmark (bench/bench_analyze.c, `make bench-analyze`).
#
#   $(B)/libproxytrace-analyze.so   shared, SONAME libproxytrace-analyze.so.MAJOR,
#                                   exports only the pt_analysis_* API (Python
#                                   loads it with ctypes)
#   $(B)/libproxytrace-analyze.a    static; the CLI links this one
ANALYZE_SRCS := $(sort $(wildcard src/analyze/*.c))
ANALYZE_OBJS := $(ANALYZE_SRCS:%.c=$(B)/%.o) $(B)/src/escape/escape.o
ANALYZE_SONAME := libproxytrace-analyze.so.$(VERSION_MAJOR)
ANALYZE_SO := $(B)/libproxytrace-analyze.so
ANALYZE_A := $(B)/libproxytrace-analyze.a

$(ANALYZE_OBJS): ALL_CFLAGS += -fvisibility=hidden

$(ANALYZE_SO): $(ANALYZE_OBJS)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,$(ANALYZE_SONAME) -Wl,-z,defs -o $@ $(ANALYZE_OBJS) -lm -lpthread
	ln -sf libproxytrace-analyze.so $(B)/$(ANALYZE_SONAME)

$(ANALYZE_A): $(ANALYZE_OBJS)
	@rm -f $@
	$(AR) rcs $@ $(ANALYZE_OBJS)

ALL_TARGETS += $(ANALYZE_SO) $(ANALYZE_A)

CLI_OBJS += $(B)/tools/analyze.o $(B)/tools/follow.o
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

# ---- tests -----------------------------------------------------------------
#   test_parse    the readers: JSON lines, legacy text and log prefixes, bad
#                 and cut input, duplicates, latest dumps, the records handed
#                 out (--records), bounded memory
#   test_explain  pairing, causes and culprits on hand-written dumps
#   test_desync   ranks that disagree about their calls (progress lines)
#   test_escape   the one escaping rule of every output (src/escape/):
#                 JSON always UTF-8, text without control bytes, HTML
#   test_complete what the input could not show (incomplete, possible
#                 culprits, finished cleanly, rank-unknown dumps), recursive
#                 directories, report files that keep the inputs
#   test_accuracy the emulator's faults against its ground truth
#   test_oom      the command (plain, --records, -v, --html) with its Nth allocation failing, every N
#                 (tests/common/failalloc.c): the same report or "out of
#                 memory" and exit 2, nothing kept
#   cli.sh        the command: exit statuses, --json and --chrome read back
#                 with Python's json module, --expect, the demo, and the
#                 sqlite3 example of docs/analyze.md
#   json-accuracy.sh  the accuracy matrix on the plugin's JSON dump files
#   metrics.sh    slow GPUs and links named from the step metrics files
#   grafana.sh    the Grafana dashboard's metrics and labels against the
#                 Prometheus files the plugin writes
#   grafana-prometheus.sh  every panel of the dashboard evaluated by Debian's
#                 Prometheus scraping node_exporter's textfile collector,
#                 with and without per-channel metrics, against the files
#   html.sh       --html in headless chromium: no console message, the DOM
#                 holds the culprit and the stuck edges, a screenshot; a
#                 dump's <script> escaped; the heatmap of a slow job, node
#                 by node at 128 ranks as the wait graph groups them; 1 024
#                 ranks node by node; never over an input
#   page-scale.sh the page of a hang at 64, 512 and 16 384 ranks (the last
#                 from bench/gen_job.c) in chromium: the culprit, the chain
#                 and the culprit's node in the first screen, no label under
#                 an arrow, under 1 MB
#   evidence.sh   the command on cut dumps (exit 4), a hang beside missing
#                 ranks, subfolders, rank-unknown dumps, --chrome that keeps
#                 the inputs and fails before the report
#   trust.sh      the randomized trust test (trust.py): emulated jobs whose
#                 dump folders are damaged at random; never a false culprit,
#                 never "ok" for a hung job; a fixed-seed and a fresh slice
#   verdict.sh    the jobs that used to get a wrong culprit (a ring stalled at
#                 its first transfers, LL/LL128, a stall beside a dead
#                 receiver, a slow link beside a hang), against their truth
#   fault-matrix.sh  the randomized fault matrix (fault_matrix.py) on
#                 emulated time: a fixed-seed slice (FAULT_MATRIX_SLICE, 100)
#                 and a slice whose seed comes from the commit
#                 (FAULT_MATRIX_JOBS, 900); `make fault-matrix` runs
#                 FAULT_MATRIX_JOBS (default 10 000) of FAULT_MATRIX_SEED
#                 (default: the commit's), on every core
#   corpus.sh     the regression corpus (tests/regress/corpus.txt): every
#                 job any matrix or issue ever failed on, each against the
#                 outcome its line gives
#   stray.sh      what only looks like a dump: the repository's documents
#                 and sources yield no dump, beside a hung job change
#                 nothing; a captured output with the application's lines
#                 first is read; a pasted dump below prose and a metrics
#                 file with a cut header are not
#   summary.sh    analyze --summary: a generated 2 048-rank job analyzed
#                 from its nodes' summaries (and summaries of those) as
#                 from its dumps; a damaged node's gaps carried; the options
#   outputs.sh    --chrome, --html and --summary FILE into a FIFO (with a
#                 reader), a link, a relative link, /dev/null (stays a
#                 character device), a directory and a link into nowhere
#                 (exit 2), a regular file (replaced whole)
#   planted.sh    a FIFO, a link to /dev/zero and a 16 MiB line planted in a
#                 job's folder: analyze, --summary, --follow (--for, SIGTERM)
#                 and top --once end, each within a bound, and hold no line
#                 over 1 MiB
#   layers.sh     the analyzer's stages (docs/analyze.md, "How the analyzer
#                 is built"): every file of src/analyze in one stage, calls
#                 (nm over its objects) and includes only within a stage or
#                 down, no files calling each other in a circle, nothing of
#                 src/trace or src/plugin included
#   threads.sh    a directory read on 1, 2 and 3 threads (analyze
#                 --threads): the same report, records, summary and exit
#                 status, over emulated jobs drawn at random and damaged
AT := $(B)/tests/analyze
AT_UNIT := $(AT)/test_parse $(AT)/test_explain $(AT)/test_escape $(AT)/test_complete $(AT)/test_desync
AT_ACCURACY := $(AT)/test_accuracy
AT_OOM := $(AT)/test_oom
AT_CFLAGS = $(ALL_CFLAGS) -Itools -Itools/sim -Itests/analyze -Itests/common -DAT_SRC_DIR='"$(abspath tests/analyze)"'

$(AT)/%.o: tests/analyze/%.c
	@mkdir -p $(dir $@)
	$(CC) $(AT_CFLAGS) -MMD -MP -c $< -o $@

$(AT_UNIT): $(AT)/%: $(AT)/%.o $(AT)/fixtures.o $(ANALYZE_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(AT)/fixtures.o $(ANALYZE_A) -lcmocka -lm -lpthread

$(AT_ACCURACY): $(AT)/test_accuracy.o $(AT)/fixtures.o $(ANALYZE_A) $(SIM_OBJS) $(LOADER_A) $(PLUGIN_SO)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(AT)/fixtures.o $(SIM_OBJS) $(ANALYZE_A) $(LOADER_A) -lcmocka -lm $(LDLIBS_PT)

$(AT_OOM): $(AT)/test_oom.o $(AT)/fixtures.o $(FA_OBJ) $(B)/tools/analyze.o $(B)/tools/follow.o $(ANALYZE_A) $(SIM_OBJS) $(LOADER_A) $(PLUGIN_SO)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(AT)/fixtures.o $(FA_OBJ) $(B)/tools/analyze.o $(B)/tools/follow.o $(SIM_OBJS) $(ANALYZE_A) $(LOADER_A) \
	  -lcmocka -lm $(LDLIBS_PT)

# The metrics' slow-edge test checks its buckets against the plugin's own.
AT_SLOW_METRICS := $(AT)/test_slow_metrics
$(AT_SLOW_METRICS): $(AT)/test_slow_metrics.o $(ANALYZE_A) $(TRACE_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(ANALYZE_A) $(TRACE_A) -lcmocka -lm $(LDLIBS_PT)

$(AT_UNIT:%=%.o) $(AT_ACCURACY:%=%.o) $(AT_OOM:%=%.o) $(AT_SLOW_METRICS:%=%.o) $(AT)/fixtures.o: | test-deps

TEST_TARGETS += $(AT_UNIT) $(AT_ACCURACY) $(AT_OOM) $(AT_SLOW_METRICS)
TEST_RUNS += $(AT_UNIT) $(AT_ACCURACY) $(AT_OOM) $(AT_SLOW_METRICS) tests/analyze/cli.sh tests/analyze/json-accuracy.sh tests/analyze/metrics.sh tests/analyze/html.sh tests/analyze/page-scale.sh tests/analyze/grafana.sh \
  tests/analyze/grafana-prometheus.sh \
  tests/analyze/evidence.sh tests/analyze/stray.sh tests/analyze/trust.sh tests/analyze/verdict.sh tests/analyze/fault-matrix.sh \
  tests/analyze/summary.sh tests/analyze/follow.sh tests/analyze/planted.sh tests/analyze/outputs.sh tests/analyze/threads.sh \
  tests/analyze/layout-matrix.sh tests/analyze/layers.sh tests/regress/corpus.sh tests/real-time.sh

# The full-size randomized fault matrix, for the closing figures: the
# commit's seed unless FAULT_MATRIX_SEED says another, every core.
FAULT_MATRIX_JOBS ?= 10000
FAULT_MATRIX_SEED ?=
.PHONY: fault-matrix
fault-matrix: build-all
	python3 tests/analyze/fault_matrix.py $(B) --summaries --jobs $(FAULT_MATRIX_JOBS) --parallel $(shell nproc) \
	  --seed $(or $(FAULT_MATRIX_SEED),$(shell sh -c '. tests/common/commit-seed.sh; commit_seed'))

# ---- benchmark ---------------------------------------------------------------
# `make bench-analyze`: the dumps of emulated 64- and 1 024-rank jobs with a
# stalled GPU, and jobs of 1 024, 16 384 and 100 352 ranks made from
# emulated ones by bench/gen_job.c, analyzed: time, lines and MB per
# second, peak memory; the 16 384-rank job through per-node summaries too.
BENCH_ANALYZE := $(B)/bench/bench_analyze
GEN_JOB := $(B)/bench/gen_job
BENCH_RUNS += bench-analyze

$(BENCH_ANALYZE): $(B)/bench/bench_analyze.o $(ANALYZE_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(ANALYZE_A) -lm -lpthread

$(GEN_JOB): $(B)/bench/gen_job.o
	$(CC) $(ALL_LDFLAGS) -o $@ $<

TEST_TARGETS += $(GEN_JOB)

.PHONY: bench-analyze
bench-analyze: $(BENCH_ANALYZE) $(GEN_JOB) $(B)/proxytrace $(PLUGIN_SO)
	@sh bench/bench_analyze.sh $(B)
