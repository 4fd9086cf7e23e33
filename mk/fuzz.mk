# `make fuzz`: libFuzzer targets (tests/fuzz/), built with clang and
# -fsanitize=fuzzer,address,undefined into build-fuzz/, then each run for
# FUZZ_SECONDS (default 20) from its seed corpus, tests/fuzz/corpus/<target>/
# (copied to build-fuzz/corpus/<target>/, where new inputs accumulate; the
# repository's corpus is never written). Any crash, leak, sanitizer report or
# failed check stops that target and fails the recipe; the input is left in
# build-fuzz/findings/<target>/. Run one target long:
#   make fuzz FUZZ_TARGETS=abi FUZZ_SECONDS=3600
# or the binary itself, e.g. build-fuzz/fuzz_abi -jobs=8 build-fuzz/corpus/abi.
#
#   fuzz_abi         the plugin's ABI: programs of init (v1..v6), start,
#                    record, stop, dump and finalize with random types, states
#                    and arguments, and valid, stale, NULL and other-context
#                    handles
#   fuzz_env         every environment variable the plugin and the loader
#                    parse, and the nccl.conf file
#   fuzz_elf         the loader's ELF reader on arbitrary files
#   fuzz_candidates  the loader's candidate generation and probe over random
#                    directory trees (versions, symlink loops, modes)
#   fuzz_analyze     the analyzer's readers (JSON lines, legacy text, host
#                    logs) and the analysis on what they accept; every output
#                    strict UTF-8 JSON, the text report free of control bytes
FUZZ_CC ?= clang
FZ := build-fuzz
FUZZ_SECONDS ?= 20
FUZZ_TARGETS ?= abi env elf candidates analyze
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := $(BASE_CFLAGS) -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_LDFLAGS := $(FUZZ_SAN) -fsanitize=fuzzer

# The code under test, compiled once more with coverage for the fuzzer (the
# source lists are read here: mk/loader.mk comes later).
FUZZ_PLUGIN_OBJS := $(patsubst %.c,$(FZ)/%.o,$(sort $(wildcard src/trace/*.c src/plugin/*.c)))
FUZZ_LOADER_OBJS := $(patsubst %.c,$(FZ)/%.o,$(sort $(wildcard src/loader/*.c)) src/escape/escape.c)
FUZZ_ANALYZE_OBJS := $(patsubst %.c,$(FZ)/%.o,$(sort $(wildcard src/analyze/*.c)) src/escape/escape.c)
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FZ)/fuzz_%)
# A real plugin file for the candidate trees (the loader tests' good plugin,
# built small).
FUZZ_GOOD_SO := $(FZ)/good.so

# The analyzer takes rank numbers up to 2^24; here up to 4096, so that an
# input's cost follows its size, not the rank numbers written in it (a few
# bytes naming rank 2 000 000 make a communicator of that many ranks).
$(FUZZ_ANALYZE_OBJS): FUZZ_CFLAGS += -DAN_MAX_RANK=4096

$(FZ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(FZ)/fuzz_abi: $(FZ)/tests/fuzz/fuzz_abi.o $(FUZZ_PLUGIN_OBJS)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(LDLIBS_PT)

$(FZ)/fuzz_env: $(FZ)/tests/fuzz/fuzz_env.o $(FUZZ_PLUGIN_OBJS) $(FUZZ_LOADER_OBJS)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(LDLIBS_PT)

$(FZ)/fuzz_elf: $(FZ)/tests/fuzz/fuzz_elf.o $(FUZZ_LOADER_OBJS)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(LDLIBS_PT)

$(FZ)/fuzz_analyze: $(FZ)/tests/fuzz/fuzz_analyze.o $(FUZZ_ANALYZE_OBJS)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(LDLIBS_PT) -lm

$(FZ)/fuzz_candidates: $(FZ)/tests/fuzz/fuzz_candidates.o $(FUZZ_LOADER_OBJS) | $(FUZZ_GOOD_SO)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS_PT)

$(FZ)/tests/fuzz/fuzz_candidates.o: FUZZ_CFLAGS += -DFUZZ_GOOD_SO='"$(abspath $(FUZZ_GOOD_SO))"'

$(FUZZ_GOOD_SO): tests/loader/plugins/testplugin.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -fPIC -shared -nostdlib -s -Wl,-z,noseparate-code -DPT_TEST_EXPORTS=0x7e \
	  -DPT_TEST_DUMP -Wl,-soname,librccl-profiler-proxytrace.so.1 -o $@ $<

.PHONY: fuzz fuzz-build fuzz-deps
fuzz-deps:
	@FUZZ_CC=$(FUZZ_CC) scripts/ensure-fuzz-deps.sh

# Dependencies first, then a sub-make builds the targets with them.
fuzz:
	@FUZZ_CC=$(FUZZ_CC) scripts/ensure-fuzz-deps.sh
	@$(MAKE) --no-print-directory fuzz-build
	@scripts/run-fuzz.sh $(FZ) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_BINS)

clean: clean-fuzz
.PHONY: clean-fuzz
clean-fuzz:
	rm -rf $(FZ)

-include $(shell find $(FZ) -name '*.d' 2>/dev/null)
