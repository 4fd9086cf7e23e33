# The model check of the record seqlock (tests/model/): src/trace/seqlock.h
# compiled with the Relacy verifier's atomics (Debian relacy-dev, C++,
# header-only), run as written and with each of its memory orders weakened.
#
# It checks the C11 memory model, not the machine, so it is a program for the
# build machine (HOSTCXX), also when ARCH cross-builds everything else, and
# it is built without sanitizers: Relacy runs its threads as fibers.
HOSTCXX ?= g++
MODEL_BIN := $(B)/tests/model/seqlock_model

$(MODEL_BIN): tests/model/seqlock_model.cpp src/trace/seqlock.h | test-deps
	@mkdir -p $(dir $@)
	$(HOSTCXX) -std=c++11 -O2 -Isrc -o $@ $<

TEST_TARGETS += $(MODEL_BIN)
TEST_RUNS += $(MODEL_BIN)
