/*
 * seqlock_model.cpp — the record seqlock (src/trace/seqlock.h) checked by the
 * Relacy verifier (Debian relacy-dev), which runs a small program under the
 * C11/C++11 memory model, trying thread interleavings and every value a
 * relaxed load may return, and stops at the first failed assertion.
 *
 * The program: one writer publishes versions 1 and 2 of a two-field record
 * (both fields = the version, relaxed atomics, as in pt_rec); one reader
 * copies it. Whenever the reader accepts a copy, both fields must equal the
 * version its sequence names (s1 / 2): never torn, never stale.
 *
 * seqlock.h is included as it is, with Relacy's atomics behind its PT_SEQ_*
 * macros, so the orders checked are the orders the C code is built with.
 * The check runs five times: as written (must pass), and with each of the
 * four orders it relies on weakened in turn (each must fail — the proof that
 * the model can see that order's effect, and that the order is needed).
 * Exit status 0 when all five come out as expected.
 */
#include <cstdio>
#include <fstream>
#include <iostream>

#include <relacy/relacy.hpp> /* last: it redefines new, delete, malloc, free */

using rl::mo_acquire;
using rl::mo_relaxed;
using rl::mo_release;

enum mutant { AS_BUILT, NO_W_FENCE, RELAXED_E_STORE, RELAXED_A_LOAD, NO_R_FENCE, MUTANTS };
static const char* const mutant_name[MUTANTS] = {
    "as built", "writer's release fence (W) removed", "writer's end store (E) relaxed",
    "reader's begin load (A) relaxed", "reader's acquire fence (R) removed"};
static mutant weaken = AS_BUILT; /* constant during one simulation */

typedef rl::atomic<unsigned> pt_seq;

static unsigned model_load(const pt_seq* p, rl::memory_order mo, rl::debug_info_param info) {
  if (weaken == RELAXED_A_LOAD && mo == mo_acquire) mo = mo_relaxed;
  return p->load(mo, info);
}
static void model_store(pt_seq* p, unsigned v, rl::memory_order mo, rl::debug_info_param info) {
  if (weaken == RELAXED_E_STORE && mo == mo_release) mo = mo_relaxed;
  p->store(v, mo, info);
}
static void model_fence(rl::memory_order mo, rl::debug_info_param info) {
  if (weaken == NO_W_FENCE && mo == mo_release) return;
  if (weaken == NO_R_FENCE && mo == mo_acquire) return;
  rl::atomic_thread_fence(mo, info);
}

/* Relacy's memory_order_* macros add the caller's position ("mo, $"). */
#define PT_SEQ_MODEL 1
#define PT_SEQ_LOAD(p, mo) model_load((p), mo)
#define PT_SEQ_STORE(p, v, mo) model_store((p), (v), mo)
#define PT_SEQ_FENCE(mo) model_fence(mo)
#include "trace/seqlock.h"

struct seqlock_test : rl::test_suite<seqlock_test, 2> {
  pt_seq seq;
  rl::atomic<int> a, b; /* the record's fields */

  void before() {
    seq($) = 0;
    a($) = 0;
    b($) = 0;
  }

  void thread(unsigned index) {
    if (index == 0) {
      for (int version = 1; version <= 2; version++) {
        unsigned w = pt_seq_write_begin(&seq);
        a.store(version, memory_order_relaxed);
        b.store(version, memory_order_relaxed);
        pt_seq_write_end(&seq, w);
      }
      return;
    }
    for (int tries = 0; tries < 2; tries++) {
      unsigned s1 = pt_seq_read_begin(&seq);
      if (s1 & 1u) continue;
      int ca = a.load(memory_order_relaxed);
      int cb = b.load(memory_order_relaxed);
      if (!pt_seq_read_end(&seq, s1)) continue;
      RL_ASSERT(ca == (int)(s1 / 2) && cb == (int)(s1 / 2));
      return;
    }
  }
};

/* One simulation; Relacy's report goes to `out`. */
static bool run(std::ostream& out, rl::iteration_t* iterations) {
  rl::test_params p;
  p.iteration_count = 200000;
  p.search_type = rl::fair_full_search_scheduler_type;
  p.output_stream = &out;
  p.progress_stream = &out;
  bool passed = rl::simulate<seqlock_test>(p) && p.test_result == rl::test_result_success;
  *iterations = p.stop_iteration;
  return passed;
}

int main() {
  /* Relacy allocates inside a simulation from its own heap: a stream that
   * grows there must not be freed outside, so reports go to a file stream
   * (or stdout), never to a string stream. */
  std::ofstream quiet("/dev/null");
  int bad = 0;
  for (int m = AS_BUILT; m < MUTANTS; m++) {
    weaken = (mutant)m;
    rl::iteration_t n = 0;
    bool passed = run(quiet, &n);
    bool want = m == AS_BUILT;
    std::printf("%-38s %s after %llu executions: %s\n", mutant_name[m],
                passed ? "no failure" : "failure found", (unsigned long long)n,
                passed == want ? "as expected" : "WRONG");
    if (passed != want) {
      bad++;
      run(std::cout, &n); /* again, with Relacy's report */
    }
  }
  std::printf("%d passed, %d failed\n", MUTANTS - bad, bad);
  return bad ? 1 : 0;
}
