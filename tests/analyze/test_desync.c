/*
 * test_desync.c — ranks that disagree about their calls, from the plugin's
 * progress lines (docs/dump-json.md, "Progress"; docs/analyze.md, causes
 * mismatch, not_entered, stopped), on hand-written dumps in both formats:
 * what differs is named, healthy dumps taken a call apart name nobody.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fixtures.h"

typedef struct {
  char t[1 << 16];
  size_t n;
} sb;

static void put(sb* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sb* b, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  b->n += (size_t)vsnprintf(b->t + b->n, sizeof b->t - b->n, fmt, ap);
  va_end(ap);
}

/* One call of a rank: function, element count, datatype, root. */
typedef struct {
  const char* func;
  long long count;
  const char* dtype;
  int root;
} call;

#define NCALLS_MAX 8
static const call ar4 = {"AllReduce", 1048576, "float32", 0};
static const call ag1 = {"AllGather", 262144, "float32", 0};

/* A rank's JSON dump: its calls (oldest first, at most 8, ending with call
 * #ncalls-1) and, when kch_func is set, channel 0's last kernel start. */
static void json_dump(sb* b, int rank, int nranks, const char* trigger, const call* calls, int ncalls,
                      const char* kch_func, long long kch_seq) {
  put(b,
      "{\"type\":\"dump\",\"schema\":1,\"host\":\"node%d\",\"pid\":%d,\"rank\":%d,\"nRanks\":%d,\"commHash\":\"42\","
      "\"hostLib\":\"nccl\",\"profilerApi\":6,\"trigger\":\"%s\",\"dumpSeq\":%d,\"time_ns\":1764470000000000000,"
      "\"stallMs\":1000,\"activeOps\":0,\"finishedOps\":0}\n",
      rank / 2, 100 + rank, rank, nranks, trigger, rank + 1);
  put(b, "{\"type\":\"progress\",\"dumpSeq\":%d,\"rank\":%d,\"colls\":%d,\"p2ps\":0,\"kernelChStarts\":%d,"
         "\"kernelChStops\":%d,\"busy\":0}\n", rank + 1, rank, ncalls, ncalls, ncalls - 1);
  /* seqNumber: per function, as NCCL numbers them */
  int seq_of[NCALLS_MAX];
  for (int i = 0; i < ncalls; i++) {
    seq_of[i] = 0;
    for (int j = 0; j < i; j++) seq_of[i] += !strcmp(calls[j].func, calls[i].func);
  }
  for (int i = ncalls > 8 ? ncalls - 8 : 0; i < ncalls; i++)
    put(b,
        "{\"type\":\"coll\",\"dumpSeq\":%d,\"rank\":%d,\"seq\":%d,\"func\":\"%s\",\"count\":%lld,\"datatype\":\"%s\","
        "\"root\":%d,\"algo\":\"RING\",\"proto\":\"SIMPLE\",\"nChannels\":2,\"start_ns\":1764469990000000000}\n",
        rank + 1, rank, seq_of[i], calls[i].func, calls[i].count, calls[i].dtype, calls[i].root);
  if (kch_func)
    put(b,
        "{\"type\":\"kernelCh\",\"dumpSeq\":%d,\"rank\":%d,\"channel\":0,\"starts\":%d,\"stops\":%d,\"startKind\":\"coll\","
        "\"startFunc\":\"%s\",\"startSeq\":%lld,\"start_ns\":null,\"gpuStart_ns\":5,\"stopKind\":null,\"stopFunc\":null,"
        "\"stopSeq\":null,\"stop_ns\":null,\"gpuStop_ns\":null}\n",
        rank + 1, rank, ncalls, ncalls - 1, kch_func, kch_seq);
  put(b, "{\"type\":\"end\",\"dumpSeq\":%d,\"records\":0}\n", rank + 1);
}

/* The same as the text dump prints it (progress_out.c). */
static void text_dump(sb* b, int rank, int nranks, const char* trigger, const call* calls, int ncalls) {
  put(b, "proxytrace dump seq=%d trigger=%s time_ns=1764470000000000000 host=node%d pid=%d rank=%d nRanks=%d "
         "commHash=42 hostLib=nccl\n", rank + 1, trigger, rank / 2, 100 + rank, rank, nranks);
  put(b, "commDump for all active ops mapSizeMB:0.00\n");
  put(b, "proxytrace progress: rank=%d colls=%d p2ps=0 kernelChStarts=0 kernelChStops=0\n", rank, ncalls);
  int seq_of[NCALLS_MAX];
  for (int i = 0; i < ncalls; i++) {
    seq_of[i] = 0;
    for (int j = 0; j < i; j++) seq_of[i] += !strcmp(calls[j].func, calls[i].func);
  }
  for (int i = 0; i < ncalls; i++)
    put(b, "proxytrace coll: rank=%d seq=%d func=%s count=%lld datatype=%s root=%d algo=RING proto=SIMPLE "
           "nChannels=2 start_ns=1764469990000000000\n", rank, seq_of[i], calls[i].func, calls[i].count,
        calls[i].dtype, calls[i].root);
}

static const pt_culprit* culprit_of(const pt_analysis* a, pt_cause cause, int rank) {
  for (size_t i = 0; i < pt_analysis_culprit_count(a); i++) {
    const pt_culprit* q = pt_analysis_culprit(a, i);
    if (q->cause == cause && q->rank == rank) return q;
  }
  return NULL;
}

static void calls_with(call* out, int n, const call* last) {
  for (int i = 0; i < n; i++) out[i] = ar4;
  if (last) out[n - 1] = *last;
}

static void test_mismatch_names_the_odd_rank(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call same[6], odd[6];
  calls_with(same, 6, &ag1);
  calls_with(odd, 6, NULL); /* rank 2 calls AllReduce where the others call AllGather */
  for (int r = 0; r < 4; r++) json_dump(&b, r, 4, "periodic", r == 2 ? odd : same, 6, NULL, 0);
  pt_analysis* a = at_analyze_text("mismatch.jsonl", b.t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  const pt_culprit* q = at_culprit(a);
  assert_int_equal(q->cause, PT_CAUSE_MISMATCH);
  assert_string_equal(q->cause_name, "mismatch");
  assert_int_equal(q->rank, 2);
  assert_int_equal(q->scope_node, 0);
  assert_int_equal(q->n_candidates, 1);
  assert_non_null(strstr(q->summary, "rank 2 called AllReduce 4 MiB float32 as collective call #5 (seq 5); "
                                     "ranks 0, 1, 3 called AllGather 1 MiB float32 (seq 0)"));
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"cause\":\"mismatch\""));
  free(j);
  /* --chrome: an instant on the rank's process (pid = rank + 1) */
  char* ct = NULL;
  size_t cn = 0;
  FILE* cf = open_memstream(&ct, &cn);
  assert_int_equal(pt_analysis_write_chrome(a, cf), 0);
  fclose(cf);
  assert_non_null(strstr(ct, "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"DESYNC (mismatch)\",\"cat\":\"culprit\",\"pid\":3,"));
  free(ct);
  pt_analysis_free(a);
}

/* Two ranks that disagree: which one is out of step cannot be told; one
 * culprit, both candidates. */
static void test_mismatch_tie(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call one[2], other[2];
  calls_with(one, 2, NULL);
  calls_with(other, 2, &ag1);
  json_dump(&b, 0, 2, "stall", one, 2, NULL, 0);
  json_dump(&b, 1, 2, "stall", other, 2, NULL, 0);
  pt_analysis* a = at_analyze_text("tie.jsonl", b.t);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  const pt_culprit* q = at_culprit(a);
  assert_int_equal(q->cause, PT_CAUSE_MISMATCH);
  assert_int_equal(q->n_candidates, 2);
  assert_int_equal(q->candidates[0], 0);
  assert_int_equal(q->candidates[1], 1);
  assert_non_null(strstr(q->summary, "no call has most of them: rank 0 called AllReduce 4 MiB float32 root 0 (seq 1); "
                                     "rank 1 called AllGather 1 MiB float32 root 0 (seq 0)"));
  pt_analysis_free(a);
}

/* A rank whose dump has no progress line while its peers' have: it made no
 * call yet (the plugin prints the lines from the first call on). */
static void test_no_call_yet(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call c[1];
  calls_with(c, 1, NULL);
  json_dump(&b, 0, 3, "stall", c, 1, NULL, 0);
  json_dump(&b, 1, 3, "stall", c, 1, NULL, 0);
  put(&b, "{\"type\":\"dump\",\"schema\":1,\"host\":\"node1\",\"pid\":102,\"rank\":2,\"nRanks\":3,\"commHash\":\"42\","
          "\"hostLib\":\"nccl\",\"profilerApi\":6,\"trigger\":\"finalize\",\"dumpSeq\":3,\"time_ns\":1764470000000000000,"
          "\"stallMs\":1000,\"activeOps\":0,\"finishedOps\":0}\n{\"type\":\"end\",\"dumpSeq\":3,\"records\":0}\n");
  pt_analysis* a = at_analyze_text("first.jsonl", b.t);
  const pt_culprit* q = culprit_of(a, PT_CAUSE_NOT_ENTERED, 2);
  assert_non_null(q);
  assert_non_null(strstr(q->summary, "it made 0 collective calls"));
  pt_analysis_free(a);
}

/* A channel whose last start is another function's call, or a p2p, is not
 * judged: it cannot be put before or after the collective. */
static void test_stopped_only_against_the_same_function(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call c[6];
  calls_with(c, 6, NULL);
  for (int r = 0; r < 4; r++) json_dump(&b, r, 4, "stall", c, 6, r == 1 ? "AllGather" : "AllReduce", r == 1 ? 9 : 5);
  pt_analysis* a = at_analyze_text("other.jsonl", b.t);
  assert_int_equal(pt_analysis_culprit_count(a), 0);
  pt_analysis_free(a);
}

/* A call inside one node (no op): every rank made it and every kernel
 * started it and never ended — a GPU of the node stopped in it. One
 * culprit, every rank a candidate; with one rank's kernel elsewhere, none. */
static void test_inside_one_node(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call c[6];
  calls_with(c, 6, NULL);
  for (int r = 0; r < 4; r++) json_dump(&b, r, 4, "finalize", c, 6, "AllReduce", 5);
  pt_analysis* a = at_analyze_text("inside.jsonl", b.t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  const pt_culprit* q = at_culprit(a);
  assert_int_equal(q->cause, PT_CAUSE_STOPPED);
  assert_int_equal(q->n_candidates, 4);
  assert_non_null(strstr(q->summary, "the call hangs inside node0: every rank (0-3) is in AllReduce"));
  pt_analysis_free(a);
  /* rank 2's kernel last started the call before: it never took this one
   * up — that rank, not the node */
  b.n = 0;
  for (int r = 0; r < 4; r++) json_dump(&b, r, 4, "stall", c, 6, "AllReduce", r == 2 ? 4 : 5);
  a = at_analyze_text("inside2.jsonl", b.t);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  q = at_culprit(a);
  assert_int_equal(q->rank, 2);
  assert_int_equal(q->n_candidates, 1);
  pt_analysis_free(a);
}

/* Only the root differs: the words say the roots. */
static void test_mismatch_of_root(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call c[3];
  const call bc0 = {"Broadcast", 1024, "int8", 0}, bc1 = {"Broadcast", 1024, "int8", 1};
  calls_with(c, 3, &bc0);
  for (int r = 0; r < 3; r++) {
    c[2] = r == 1 ? bc1 : bc0;
    json_dump(&b, r, 3, "stall", c, 3, NULL, 0);
  }
  pt_analysis* a = at_analyze_text("root.jsonl", b.t);
  const pt_culprit* q = culprit_of(a, PT_CAUSE_MISMATCH, 1);
  assert_non_null(q);
  assert_non_null(strstr(q->summary, "rank 1 called Broadcast 1 KiB int8 root 1"));
  assert_non_null(strstr(q->summary, "ranks 0, 2 called Broadcast 1 KiB int8 root 0"));
  pt_analysis_free(a);
}

static void test_not_entered(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call c[6];
  calls_with(c, 6, NULL);
  /* the rank that never called it has nothing waiting: no stall dump of its own */
  for (int r = 0; r < 4; r++) json_dump(&b, r, 4, r == 3 ? "finalize" : "stall", c, r == 3 ? 5 : 6, NULL, 0);
  pt_analysis* a = at_analyze_text("skip.jsonl", b.t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  const pt_culprit* q = at_culprit(a);
  assert_int_equal(q->cause, PT_CAUSE_NOT_ENTERED);
  assert_int_equal(q->rank, 3);
  assert_non_null(strstr(q->summary, "rank 3 never called AllReduce 4 MiB float32, collective call #5 (seq 5) that "
                                     "ranks 0-2 are in: it made 5 collective calls"));
  pt_analysis_free(a);
}

/* A communicator inside one node (no proxy op) whose ranks' finalize dumps
 * have their kernels inside the last call, and a rank that wrote no dump:
 * the ranks in the call wait on it — rank_missing, as where ops wait on a
 * rank without a dump. Without the kernels inside the call (the dumps say
 * the call ended, or nothing of it), the communicator is not stuck and the
 * missing rank is only not seen. */
static void test_missing_rank_beside_a_call_that_hangs(void** state) {
  (void)state;
  static sb b;
  call c[3];
  calls_with(c, 3, NULL);
  for (int inside = 1; inside >= 0; inside--) {
    b.n = 0;
    for (int r = 0; r < 3; r++) json_dump(&b, r, 4, "finalize", c, 3, inside ? "AllReduce" : NULL, 2);
    pt_analysis* a = at_analyze_text("tp.jsonl", b.t);
    if (!inside) {
      assert_int_not_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
      assert_null(culprit_of(a, PT_CAUSE_RANK_MISSING, 3));
      pt_analysis_free(a);
      continue;
    }
    assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
    assert_int_equal(pt_analysis_culprit_count(a), 1);
    const pt_culprit* q = culprit_of(a, PT_CAUSE_RANK_MISSING, 3);
    assert_non_null(q);
    assert_true(q->possible);
    assert_non_null(strstr(q->summary, "rank 3 wrote no dump (it died, or its dump is not among the inputs) — ranks "
                                       "0-2 are in AllReduce 4 MiB float32, collective call #2 (seq 2), and wait there"));
    char* t = NULL;
    size_t n = 0;
    FILE* f = open_memstream(&t, &n);
    pt_analysis_write_text(a, f, 0);
    fclose(f);
    assert_non_null(strstr(t, "HANG — ranks wait in a call on a rank that wrote no dump"));
    free(t);
    pt_analysis_free(a);
  }
  /* 20 of 40 without a dump: 16 named, the last with how many more */
  b.n = 0;
  for (int r = 0; r < 20; r++) json_dump(&b, r, 40, "finalize", c, 3, "AllReduce", 2);
  pt_analysis* a = at_analyze_text("tp40.jsonl", b.t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  assert_int_equal(pt_analysis_culprit_count(a), 16);
  const pt_culprit* q = culprit_of(a, PT_CAUSE_RANK_MISSING, 35);
  assert_non_null(q);
  assert_non_null(strstr(q->summary, "rank 35 wrote no dump (it died, or its dump is not among the inputs) (and 4 more "
                                     "ranks without a dump)"));
  pt_analysis_free(a);
}

/* Where a rank's calls cannot be told from the events it got, nobody is
 * named: the host changed the event mask (RAS: the dumps of
 * test_not_entered, rank 3's header saying so), or a rank's kept calls
 * skip a seqNumber of one function — a call the plugin never saw, which
 * shifts the rank's later calls against its peers' (without the rule, a
 * made-up mismatch: rank 3's AllGather against its peers' AllReduce). */
static void test_calls_that_cannot_be_compared(void** state) {
  (void)state;
  static sb b;
  call c[6], peers[6], lost[5];
  calls_with(c, 6, NULL);
  calls_with(peers, 6, NULL);
  peers[3] = ag1;
  calls_with(lost, 5, NULL);
  lost[2] = ag1;
  for (int way = 0; way < 2; way++) {
    b.n = 0;
    for (int r = 0; r < 4; r++) {
      const size_t at = b.n;
      if (way == 0) json_dump(&b, r, 4, r == 3 ? "finalize" : "stall", c, r == 3 ? 5 : 6, NULL, 0);
      else json_dump(&b, r, 4, "stall", r == 3 ? lost : peers, r == 3 ? 5 : 6, NULL, 0);
      if (r != 3) continue;
      if (way == 0) { /* the header says the host changed the mask */
        static const char ins[] = ",\"maskChangedByHost\":true";
        char* h = strstr(b.t + at, ",\"finishedOps\":0}");
        assert_non_null(h);
        memmove(h + sizeof ins - 1, h, strlen(h) + 1);
        memcpy(h, ins, sizeof ins - 1);
        b.n += sizeof ins - 1;
      } else { /* AllReduce seqs 0, 2, 3, 4: its call of seq 1 never reached the plugin */
        for (int q = 3; q >= 1; q--) {
          char from[16], to[16];
          snprintf(from, sizeof from, "\"seq\":%d,", q);
          snprintf(to, sizeof to, "\"seq\":%d,", q + 1);
          char* x = strstr(b.t + at, from);
          assert_non_null(x);
          memcpy(x, to, strlen(to));
        }
      }
    }
    pt_analysis* a = at_analyze_text(way ? "gap.jsonl" : "masked.jsonl", b.t);
    for (size_t i = 0; i < pt_analysis_culprit_count(a); i++) {
      const pt_cause k = pt_analysis_culprit(a, i)->cause;
      assert_true(k != PT_CAUSE_MISMATCH && k != PT_CAUSE_NOT_ENTERED && k != PT_CAUSE_STOPPED);
    }
    pt_analysis_free(a);
  }
}

/* Every rank called it; rank 1's kernel never took it up on channel 0. */
static void test_stopped(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call c[6];
  calls_with(c, 6, NULL);
  for (int r = 0; r < 4; r++) json_dump(&b, r, 4, "stall", c, 6, "AllReduce", r == 1 ? 4 : 5);
  pt_analysis* a = at_analyze_text("stopped.jsonl", b.t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  const pt_culprit* q = at_culprit(a);
  assert_int_equal(q->cause, PT_CAUSE_STOPPED);
  assert_int_equal(q->rank, 1);
  assert_int_equal(q->channel, 0);
  assert_non_null(strstr(q->summary, "never took it up on channel 0, where its peers' did: the channel's last kernel "
                                     "start is AllReduce seq 4"));
  pt_analysis_free(a);
}

/* Periodic dumps of a running job a call apart, kernels running: nobody. */
static void test_healthy_dumps_a_call_apart(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call c[6];
  calls_with(c, 6, NULL);
  for (int r = 0; r < 4; r++) json_dump(&b, r, 4, "periodic", c, r == 0 ? 5 : 6, "AllReduce", r == 0 ? 4 : 5);
  pt_analysis* a = at_analyze_text("healthy.jsonl", b.t);
  assert_int_equal(pt_analysis_culprit_count(a), 0);
  assert_int_not_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  pt_analysis_free(a);
}

/* Ranks whose rings no longer overlap (one far behind) compare nothing. */
static void test_no_common_call(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call c[8];
  calls_with(c, 8, NULL);
  json_dump(&b, 0, 2, "periodic", c, 8, NULL, 0);
  /* rank 1: the same calls, counted 100 further on */
  put(&b, "{\"type\":\"dump\",\"schema\":1,\"host\":\"node0\",\"pid\":101,\"rank\":1,\"nRanks\":2,\"commHash\":\"42\","
          "\"hostLib\":\"nccl\",\"profilerApi\":6,\"trigger\":\"periodic\",\"dumpSeq\":2,\"time_ns\":1764470000000000000,"
          "\"stallMs\":1000,\"activeOps\":0,\"finishedOps\":0}\n"
          "{\"type\":\"progress\",\"dumpSeq\":2,\"rank\":1,\"colls\":108,\"p2ps\":0,\"kernelChStarts\":0,"
          "\"kernelChStops\":0,\"busy\":0}\n"
          "{\"type\":\"coll\",\"dumpSeq\":2,\"rank\":1,\"seq\":107,\"func\":\"AllGather\",\"count\":1,"
          "\"datatype\":\"int8\",\"root\":0,\"algo\":null,\"proto\":null,\"nChannels\":1,\"start_ns\":1}\n"
          "{\"type\":\"end\",\"dumpSeq\":2,\"records\":0}\n");
  pt_analysis* a = at_analyze_text("apart.jsonl", b.t);
  assert_null(culprit_of(a, PT_CAUSE_MISMATCH, 1));
  assert_null(culprit_of(a, PT_CAUSE_MISMATCH, 0));
  pt_analysis_free(a);
}

/* The text dump's lines say the same. */
static void test_text_dumps(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call same[6], odd[6];
  calls_with(same, 6, &ag1);
  calls_with(odd, 6, NULL);
  for (int r = 0; r < 4; r++) text_dump(&b, r, 4, "stall", r == 0 ? odd : same, 6);
  pt_analysis* a = at_analyze_text("mismatch.txt", b.t);
  const pt_culprit* q = at_culprit(a);
  assert_non_null(q);
  assert_int_equal(q->cause, PT_CAUSE_MISMATCH);
  assert_int_equal(q->rank, 0);
  assert_non_null(strstr(q->summary, "ranks 1-3 called AllGather 1 MiB float32"));
  pt_analysis_free(a);
}

/* Progress lines out of place or broken cost nothing else. */
static void test_bad_progress_lines(void** state) {
  (void)state;
  static sb b;
  b.n = 0;
  call c[2];
  calls_with(c, 2, NULL);
  json_dump(&b, 0, 2, "stall", c, 2, NULL, 0);
  json_dump(&b, 1, 2, "stall", c, 2, NULL, 0);
  put(&b, "{\"type\":\"coll\",\"dumpSeq\":77,\"rank\":1,\"seq\":1,\"func\":\"AllReduce\"}\n"); /* no such dump */
  put(&b, "proxytrace kernelCh: rank=1 channel=x starts=1\n");                              /* no dump, bad channel */
  pt_analysis* a = at_analyze_text("bad.jsonl", b.t);
  assert_int_equal(pt_analysis_culprit_count(a), 0);
  pt_analysis_input_info in;
  assert_int_equal(pt_analysis_input(a, 0, &in), 0);
  assert_true(in.n_errors >= 1);
  pt_analysis_free(a);
}

/* A communicator of many ranks: the vote at each place in the calls and
 * the search for a peer whose kernel took the call up cost O(n log n), not
 * a comparison of every rank with every other (which took minutes at
 * 10 000 ranks: 31 s and 18 s here). The bound is far above what
 * the analysis needs, also under a sanitizer on a loaded machine. */
#define MANY 10000
static double seconds_since(const struct timespec* t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static char* many_ranks(int odd_rank, int stopped_rank) {
  static sb b;
  char* all = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&all, &len);
  assert_non_null(f);
  call same[6], odd[6];
  calls_with(same, 6, odd_rank >= 0 ? &ag1 : NULL);
  calls_with(odd, 6, NULL);
  for (int r = 0; r < MANY; r++) {
    b.n = 0;
    json_dump(&b, r, MANY, odd_rank >= 0 ? "periodic" : "stall", r == odd_rank ? odd : same, 6,
              stopped_rank >= 0 ? "AllReduce" : NULL, r == stopped_rank ? 4 : 5);
    fwrite(b.t, 1, b.n, f);
  }
  fclose(f);
  return all;
}

static void test_many_ranks(void** state) {
  (void)state;
  char* text = many_ranks(6789, -1);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pt_analysis* a = at_analyze_text("many.jsonl", text);
  const double mismatch_s = seconds_since(&t0);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  const pt_culprit* q = at_culprit(a);
  assert_int_equal(q->cause, PT_CAUSE_MISMATCH);
  assert_int_equal(q->rank, 6789);
  assert_non_null(strstr(q->summary, "rank 6789 called AllReduce 4 MiB float32 as collective call #5 (seq 5); "
                                     "ranks 0-6788, 6790-9999 called AllGather 1 MiB float32 (seq 0)"));
  pt_analysis_free(a);
  free(text);

  text = many_ranks(-1, 4321);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  a = at_analyze_text("many-stopped.jsonl", text);
  const double stopped_s = seconds_since(&t0);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  q = at_culprit(a);
  assert_int_equal(q->cause, PT_CAUSE_STOPPED);
  assert_int_equal(q->rank, 4321);
  pt_analysis_free(a);
  free(text);
  printf("%d ranks: mismatch %.2f s, stopped %.2f s\n", MANY, mismatch_s, stopped_s);
  assert_true(mismatch_s < 15.0);
  assert_true(stopped_s < 15.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mismatch_names_the_odd_rank), cmocka_unit_test(test_calls_that_cannot_be_compared), cmocka_unit_test(test_mismatch_of_root),
      cmocka_unit_test(test_not_entered),                cmocka_unit_test(test_stopped),
      cmocka_unit_test(test_missing_rank_beside_a_call_that_hangs),
      cmocka_unit_test(test_healthy_dumps_a_call_apart), cmocka_unit_test(test_no_common_call),
      cmocka_unit_test(test_text_dumps),                 cmocka_unit_test(test_bad_progress_lines),
      cmocka_unit_test(test_mismatch_tie),               cmocka_unit_test(test_no_call_yet),
      cmocka_unit_test(test_stopped_only_against_the_same_function),
      cmocka_unit_test(test_inside_one_node), cmocka_unit_test(test_many_ranks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
