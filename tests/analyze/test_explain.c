/*
 * test_explain.c — pairing, causes and culprits on hand-written JSON dumps
 * (docs/dump-json.md), one situation per test: what each side's counters
 * say, which op is the origin, what the culprit is; plus slow links, ops
 * that still move, ops that are not network ops, records without opCounts,
 * and the comparison with a ground truth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"

typedef struct {
  char* t;
  size_t n, cap;
} sb;

static void put(sb* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sb* b, const char* fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int k = vsnprintf(b->t + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (b->t && (size_t)k < b->cap - b->n) {
      b->n += (size_t)k;
      return;
    }
    b->cap = b->cap * 2 + (size_t)k + 256;
    b->t = realloc(b->t, b->cap);
  }
}

#define T0 1764470000000000000LL /* ns */

static const char* host_lib = "nccl"; /* of the dumps hdr() writes */
static const char* coll = "AllReduce"; /* of the ops op() writes: a ring's */
static int n_nodes = 0;                 /* their nNodes; 0: not said */

static void hdr(sb* b, int rank, const char* host, int nranks, int seq, const char* trigger, long long time_ns,
                long long foreign) {
  put(b,
      "{\"type\":\"dump\",\"schema\":1,\"host\":\"%s\",\"pid\":%d,\"rank\":%d,\"nRanks\":%d,\"nNodes\":%d,\"commHash\":\"42\","
      "\"hostLib\":\"%s\",\"profilerApi\":6,\"trigger\":\"%s\",\"dumpSeq\":%d,\"time_ns\":%lld,\"stallMs\":1000,"
      "\"drops\":{\"foreignPid\":%lld}}\n",
      host, 100 + rank, rank, nranks, n_nodes, host_lib, trigger, seq, time_ns, foreign);
}

typedef struct {
  int rank, peer, ch, send;
  long long opc, ns, P, K, R, T, D;
  const char* state;
  long long create, progress;
} opd;

static void op(sb* b, int seq, opd o) {
  put(b,
      "{\"type\":\"op\",\"dumpSeq\":%d,\"rank\":%d,\"peer\":%d,\"channel\":%d,\"dir\":\"%s\",\"commHash\":\"42\","
      "\"opCount\":%lld,\"opId\":0,\"state\":\"%s\",\"status\":\"WAITING_GPU\",\"nSteps\":%lld,\"nBytes\":1048576,"
      "\"coll\":\"%s\",\"counters\":{\"posted\":%lld,\"kernelCopyReady\":%lld,\"received\":%lld,\"transmitted\":%lld,"
      "\"done\":%lld},\"create_ns\":%lld,\"last_ns\":%lld,\"progress_ns\":%lld}\n",
      seq, o.rank, o.peer, o.ch, o.send ? "send" : "recv", o.opc, o.state ? o.state : "active", o.ns, coll, o.P, o.K, o.R, o.T,
      o.D, o.create ? o.create : T0, o.progress ? o.progress : T0 + 1000, o.progress ? o.progress : T0 + 1000);
}

static void end(sb* b, int seq, int n) { put(b, "{\"type\":\"end\",\"dumpSeq\":%d,\"records\":%d}\n", seq, n); }

/* One dump per rank, each holding the given ops (rank = the op's rank). */
static pt_analysis* job(int nranks, const char* const* hosts, const opd* ops, int nops, const int* skip_rank) {
  sb b = {0};
  for (int r = 0; r < nranks; r++) {
    if (skip_rank && skip_rank[r]) continue;
    hdr(&b, r, hosts ? hosts[r] : "h", nranks, r + 1, "stall", T0 + 5000000000LL, 0);
    int n = 0;
    for (int i = 0; i < nops; i++)
      if (ops[i].rank == r) {
        op(&b, r + 1, ops[i]);
        n++;
      }
    end(&b, r + 1, n);
  }
  pt_analysis* a = at_analyze_text("job.jsonl", b.t);
  free(b.t);
  assert_non_null(a);
  return a;
}

static const char* const two_hosts[] = {"n0", "n1", "n2", "n3"};

static void expect_culprit(const pt_analysis* a, int rank, pt_cause cause, int channel, int dependents) {
  const pt_culprit* c = at_culprit(a);
  assert_non_null(c);
  if (c->rank != rank || c->cause != cause) {
    pt_analysis_write_text(a, stdout, 1);
    fail_msg("culprit rank %d %s, want rank %d %s", c->rank, c->cause_name, rank, pt_cause_name(cause));
  }
  assert_int_equal(c->channel, channel);
  assert_int_equal(c->dependents, dependents);
}

/* The receiver's window is full of data its GPU does not consume; the
 * sender has data ready but no buffer: the receiver's GPU is the origin. */
static void test_credit_and_consume(void** state) {
  (void)state;
  opd ops[] = {{0, 1, 0, 1, 9, 64, 20, 12, 0, 8, 8, NULL, 0, 0}, {1, 0, 0, 0, 9, 64, 8, 0, 8, 8, 0, NULL, 0, 0}};
  pt_analysis* a = job(2, two_hosts, ops, 2, NULL);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  expect_culprit(a, 1, PT_CAUSE_GPU_NOT_CONSUMING, 0, 1);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"dir\":\"send\",\"opId\":0,\"state\":\"active\",\"status\":\"WAITING_GPU\",\"stuck\":true,"
                            "\"moving\":false,\"wait\":\"credit\""));
  assert_non_null(strstr(j, "\"wait\":\"consume\",\"origin\":true"));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
}

/* Sent but not received: the link. */
static void test_network(void** state) {
  (void)state;
  opd ops[] = {{0, 1, 2, 1, 9, 64, 24, 16, 0, 16, 16, NULL, 0, 0}, {1, 0, 2, 0, 9, 64, 24, 0, 8, 8, 8, NULL, 0, 0}};
  pt_analysis* a = job(2, two_hosts, ops, 2, NULL);
  expect_culprit(a, 0, PT_CAUSE_NETWORK, 2, 1);
  const pt_culprit* c = at_culprit(a);
  assert_int_equal(c->peer, 1);
  assert_int_equal(c->is_send, 1);
  assert_non_null(strstr(c->summary, "rank 0 transmitted 16, rank 1 received 8 of 64 steps"));
  pt_analysis_free(a);
}

/* A rank wrote no dump: the ops that wait on it name it. */
static void test_missing_rank(void** state) {
  (void)state;
  opd ops[] = {{0, 2, 0, 1, 9, 64, 8, 8, 0, 0, 0, NULL, 0, 0}, {1, 2, 1, 0, 9, 64, 8, 0, 0, 0, 0, NULL, 0, 0}};
  int skip[3] = {0, 0, 1};
  pt_analysis* a = job(3, two_hosts, ops, 2, skip);
  expect_culprit(a, 2, PT_CAUSE_RANK_MISSING, -1, 2);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"missing_ranks\":[{\"commHash\":\"42\",\"rank\":2,\"rankLast\":2,\"waitedOnBy\":2}]"));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
}

/* Every rank on one machine (host names cannot tell the nodes apart: a
 * network op joins two ranks of one name), the dumps say 2 nodes: ranks
 * 0-1 and 2-3. Rank 1, which leaves node 0, died: rank 2 waits for its
 * data, and rank 0's GPU, which cannot forward, is explained by it — or
 * stopped itself: its own receive holds 14 steps it consumed 6 of, which
 * a stopped GPU shows the same way, so it is a candidate too. */
static void test_missing_rank_numbered(void** state) {
  (void)state;
  const char* const vm[] = {"vm", "vm", "vm", "vm"};
  opd ops[] = {{2, 1, 0, 0, 6, 56, 18, 0, 10, 10, 10, NULL, 0, 0},
               {3, 0, 0, 1, 6, 56, 22, 22, 0, 14, 14, NULL, 0, 0},
               {0, 3, 0, 0, 6, 56, 14, 0, 14, 14, 6, NULL, 0, 0}};
  int skip[4] = {0, 1, 0, 0};
  n_nodes = 2;
  pt_analysis* a = job(4, vm, ops, 3, skip);
  n_nodes = 0;
  expect_culprit(a, 1, PT_CAUSE_RANK_MISSING, -1, 3);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  const pt_culprit* c = at_culprit(a);
  assert_int_equal(c->n_candidates, 2);
  assert_int_equal(c->candidates[0], 1);
  assert_int_equal(c->candidates[1], 0);
  assert_non_null(strstr(c->summary, "or rank 0's GPU stopped: its own receive from rank 3 on channel 0 holds 14 "
                                     "received steps, 6 consumed"));
  pt_analysis_free(a);
}

/* RCCL's opCounts order every operation: a rank whose records stop at
 * opCount 3 while its peer waits in 9 is behind. NVIDIA NCCL's derived
 * opCounts (per function, per peer) do not compare across operations:
 * there the peer is behind when its latest dump was taken before the op
 * began, and otherwise it has no receive for it. */
static void test_behind(void** state) {
  (void)state;
  opd ops[] = {{0, 1, 0, 0, 9, 64, 8, 0, 0, 0, 0, NULL, 0, 0},
               {1, 0, 0, 1, 3, 8, 8, 8, 0, 8, 8, "finished", 0, 0}};
  host_lib = "rccl";
  pt_analysis* a = job(2, two_hosts, ops, 2, NULL);
  host_lib = "nccl";
  expect_culprit(a, 1, PT_CAUSE_RANK_BEHIND, -1, 1);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"behind_ranks\":[{\"commHash\":\"42\",\"rank\":1,\"lastOpCount\":3,\"waitedInOpCount\":9}]"));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
  /* NVIDIA NCCL: rank 1 dumped after rank 0's receive began, with no send */
  a = job(2, two_hosts, ops, 2, NULL);
  expect_culprit(a, 1, PT_CAUSE_SEND_MISSING, 0, 1);
  pt_analysis_free(a);
  /* … or before it began (the receive is created after rank 1's dump) */
  ops[0].create = T0 + 6000000000LL;
  ops[0].progress = T0 + 6000001000LL;
  a = job(2, two_hosts, ops, 2, NULL);
  expect_culprit(a, 1, PT_CAUSE_RANK_BEHIND, -1, 1);
  assert_non_null(strstr(at_culprit(a)->summary, "its latest dump was taken before rank 0 began"));
  pt_analysis_free(a);
}

/* The peer reached the operation but has no receive for it. */
static void test_no_receive(void** state) {
  (void)state;
  opd ops[] = {{0, 1, 0, 1, 9, 64, 8, 8, 0, 0, 0, NULL, 0, 0}, {1, 0, 0, 1, 9, 64, 64, 64, 0, 64, 64, "finished", 0, 0}};
  pt_analysis* a = job(2, two_hosts, ops, 2, NULL);
  expect_culprit(a, 1, PT_CAUSE_NO_RECEIVE_POSTED, 0, 1);
  assert_int_equal(at_culprit(a)->is_send, 0);
  pt_analysis_free(a);
  /* or it stopped posting: everything posted came and was consumed */
  opd ops2[] = {{0, 1, 0, 1, 9, 64, 12, 12, 0, 4, 4, NULL, 0, 0}, {1, 0, 0, 0, 9, 64, 4, 0, 4, 4, 4, NULL, 0, 0}};
  a = job(2, two_hosts, ops2, 2, NULL);
  expect_culprit(a, 1, PT_CAUSE_NO_RECEIVE_POSTED, 0, 1);
  assert_non_null(strstr(at_culprit(a)->summary, "stopped at 4 posted of 64 steps"));
  pt_analysis_free(a);
  /* Point-to-point: the send's own buffers hold no data though its proxy
   * posted 8 to its GPU — a GPU that runs fills them whatever the receiver
   * does, so it stopped too, and is named beside the receiver that has no
   * receive; with the data there, the receiver alone. */
  coll = "Send";
  for (int ready = 0; ready < 2; ready++) {
    opd p2p[] = {{0, 1, 0, 1, 9, 64, 8, ready ? 8 : 0, 0, 0, 0, NULL, 0, 0},
                 {1, 0, 0, 1, 9, 64, 64, 64, 0, 64, 64, "finished", 0, 0}};
    a = job(2, two_hosts, p2p, 2, NULL);
    expect_culprit(a, 1, PT_CAUSE_NO_RECEIVE_POSTED, 0, 1);
    assert_int_equal(pt_analysis_culprit_count(a), ready ? 1 : 2);
    if (!ready) {
      const pt_culprit* g = pt_analysis_culprit(a, 1);
      assert_int_equal(g->rank, 0);
      assert_int_equal(g->cause, PT_CAUSE_GPU_NOT_PRODUCING);
      assert_int_equal(g->channel, 0);
    }
    pt_analysis_free(a);
  }
  coll = "AllReduce";
}

/* No send on record, and the peer's node refused foreign ops (PXN). */
static void test_send_missing_pxn(void** state) {
  (void)state;
  sb b = {0};
  hdr(&b, 0, "n0", 2, 1, "stall", T0 + 5, 0);
  op(&b, 1, (opd){0, 1, 0, 0, 9, 64, 8, 0, 0, 0, 0, NULL, 0, 0});
  end(&b, 1, 1);
  hdr(&b, 1, "n1", 2, 2, "stall", T0 + 5, 12);
  op(&b, 2, (opd){1, 0, 0, 0, 9, 64, 64, 0, 64, 64, 64, "finished", 0, 0});
  end(&b, 2, 1);
  pt_analysis* a = at_analyze_text("pxn.jsonl", b.t);
  free(b.t);
  expect_culprit(a, 1, PT_CAUSE_SEND_MISSING, 0, 1);
  assert_non_null(strstr(at_culprit(a)->summary, "refused 12 ops of another process (PXN"));
  pt_analysis_free(a);
}

/* Every stuck op waits on another: a cycle; the one that moved least. */
static void test_circular(void** state) {
  (void)state;
  const char* const hosts[] = {"a", "b"};
  opd ops[] = {{0, 1, 0, 1, 9, 64, 20, 20, 0, 12, 12, NULL, 0, 0}, {1, 0, 0, 0, 9, 64, 12, 0, 12, 12, 4, NULL, 0, 0},
               {1, 0, 0, 1, 9, 64, 20, 20, 0, 10, 10, NULL, 0, 0}, {0, 1, 0, 0, 9, 64, 10, 0, 10, 10, 2, NULL, 0, 0}};
  pt_analysis* a = job(2, hosts, ops, 4, NULL);
  expect_culprit(a, 1, PT_CAUSE_CIRCULAR, 0, 2);
  pt_analysis_free(a);
}

/* A never-progressed op to a peer on the same host is no network op. */
static void test_leaked(void** state) {
  (void)state;
  const char* const hosts[] = {"same", "same"};
  opd ops[] = {{0, 1, 0, 0, 9, 4, 0, 0, 0, 0, 0, NULL, 0, 0}};
  pt_analysis* a = job(2, hosts, ops, 1, NULL);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"leakedOps\":1"));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
}

/* Periodic dumps: an op that progressed 10 ms before the dump is moving;
 * 5 s before, it is stuck. A second dump shows whether it moved. */
static void test_moving(void** state) {
  (void)state;
  for (int late = 0; late < 2; late++) {
    sb b = {0};
    long long when = T0 + 10000000000LL;
    hdr(&b, 0, "n0", 2, 1, "periodic", when, 0);
    op(&b, 1, (opd){0, 1, 0, 1, 9, 64, 16, 8, 0, 8, 8, NULL, 0, late ? when - 5000000000LL : when - 10000000});
    end(&b, 1, 1);
    hdr(&b, 1, "n1", 2, 2, "periodic", when, 0);
    op(&b, 2, (opd){1, 0, 0, 0, 9, 64, 16, 0, 8, 8, 8, NULL, 0, late ? when - 5000000000LL : when - 10000000});
    end(&b, 2, 1);
    pt_analysis* a = at_analyze_text("p.jsonl", b.t);
    free(b.t);
    assert_int_equal(pt_analysis_verdict(a), late ? PT_VERDICT_HANG : PT_VERDICT_OK);
    pt_analysis_free(a);
  }
}

/* Records without opCounts (-1) pair among active ops. */
static void test_no_op_count(void** state) {
  (void)state;
  opd ops[] = {{0, 1, 3, 1, -1, 64, 18, 10, 0, 10, 10, NULL, 0, 0}, {1, 0, 3, 0, -1, 64, 18, 0, 10, 10, 10, NULL, 0, 0},
               {0, 1, 3, 1, -1, 8, 8, 8, 0, 8, 8, "finished", 0, 0}};
  pt_analysis* a = job(2, two_hosts, ops, 3, NULL);
  expect_culprit(a, 0, PT_CAUSE_GPU_NOT_PRODUCING, 3, 1);
  assert_int_equal(at_culprit(a)->op_count, -1);
  pt_analysis_free(a);
}

/* Point-to-point operations where every op touching rank 2 takes 8x as
 * long: slow, not hung, and rank 2 is the culprit. */
static void test_slow(void** state) {
  (void)state;
  coll = "Send";
  sb b = {0};
  const int n = 6;
  for (int r = 0; r < n; r++) {
    hdr(&b, r, two_hosts[r % 4], n, r + 1, "finalize", T0 + 9000000000LL, 0);
    int k = 0;
    for (int opc = 1; opc <= 7; opc += 2) {
      int to = (r + 3) % n, from = (r + n - 3) % n;
      long long d_send = (r == 2 || to == 2) ? 8000000 : 1000000 + 1000 * r;
      long long d_recv = (r == 2 || from == 2) ? 8000000 : 1000000 + 1000 * r;
      long long s0 = T0 + opc * 100000000LL;
      op(&b, r + 1, (opd){r, to, 0, 1, opc, 8, 8, 8, 0, 8, 8, "finished", s0, s0 + d_send});
      op(&b, r + 1, (opd){r, from, 0, 0, opc, 8, 8, 0, 8, 8, 8, "finished", s0, s0 + d_recv});
      k += 2;
    }
    end(&b, r + 1, k);
  }
  pt_analysis* a = at_analyze_text("slow.jsonl", b.t);
  free(b.t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_SLOW);
  const pt_culprit* c = at_culprit(a);
  assert_int_equal(c->rank, 2);
  assert_int_equal(c->cause, PT_CAUSE_SLOW_LINK);
  assert_true(c->slow_factor > 7 && c->slow_factor < 9);
  char why[256];
  const char* truth = "{\"type\":\"truth\",\"verdict\":\"slow\",\"culprits\":[{\"rank\":2,\"channel\":-1,\"cause\":\"slow_link\",\"exact\":true}]}";
  assert_int_equal(pt_analysis_compare_truth(a, truth, why, sizeof why), PT_TRUTH_EXACT);
  /* A slow culprit the truth marks exact must be named as it is: rank 5,
   * the link's other end, is only a candidate of rank 2's culprit — enough
   * at node level where the truth says not exact (two nodes), not where it
   * says exact. */
  int five = 0;
  for (int i = 0; i < c->n_candidates; i++) five |= c->candidates[i] == 5;
  assert_true(five);
  const char* other_end = "{\"type\":\"truth\",\"verdict\":\"slow\",\"culprits\":[{\"rank\":5,\"channel\":-1,\"cause\":\"slow_link\",\"exact\":true}]}";
  assert_int_equal(pt_analysis_compare_truth(a, other_end, why, sizeof why), PT_TRUTH_DIFFERS);
  assert_non_null(strstr(why, "no culprit names rank 5"));
  const char* other_end_node = "{\"type\":\"truth\",\"verdict\":\"slow\",\"culprits\":[{\"rank\":5,\"channel\":-1,\"cause\":\"slow_link\",\"exact\":false}]}";
  assert_int_equal(pt_analysis_compare_truth(a, other_end_node, why, sizeof why), PT_TRUTH_NODE);
  pt_analysis_free(a);
  coll = "AllReduce";
}

/* Point-to-point ops of 6 ranks, each rank sending to r+3 and receiving
 * from r-3 in the operations 1, 3, 5, … `last`: `dur(r, opc, send)` gives
 * each op's duration (ns) and `start(opc)` its creation. Each dump also
 * holds `extra` (a stuck op, or none). */
typedef long long (*dur_fn)(int rank, int opc, int send);
static pt_analysis* p2p_job(int last, dur_fn dur, long long step, const opd* extra, int n_extra) {
  sb b = {0};
  const int n = 6;
  coll = "Send";
  for (int r = 0; r < n; r++) {
    hdr(&b, r, two_hosts[r % 4], n, r + 1, "stall", T0 + 9000000000LL, 0);
    int k = 0;
    for (int opc = 1; opc <= last; opc += 2) {
      long long s0 = T0 + opc * step;
      op(&b, r + 1, (opd){r, (r + 3) % n, 0, 1, opc, 8, 8, 8, 0, 8, 8, "finished", s0, s0 + dur(r, opc, 1)});
      op(&b, r + 1, (opd){r, (r + n - 3) % n, 0, 0, opc, 8, 8, 0, 8, 8, 8, "finished", s0, s0 + dur(r, opc, 0)});
      k += 2;
    }
    for (int i = 0; i < n_extra; i++)
      if (extra[i].rank == r) {
        op(&b, r + 1, extra[i]);
        k++;
      }
    end(&b, r + 1, k);
  }
  coll = "AllReduce";
  pt_analysis* a = at_analyze_text("p2p.jsonl", b.t);
  free(b.t);
  assert_non_null(a);
  return a;
}

static int n_slow_culprits(const pt_analysis* a) {
  int n = 0;
  for (size_t k = 0; k < pt_analysis_culprit_count(a); k++) {
    const pt_culprit* c = pt_analysis_culprit(a, k);
    n += c->cause == PT_CAUSE_SLOW_LINK || c->cause == PT_CAUSE_SLOW_GPU;
  }
  return n;
}

/* Rank 2's ops of operations 7 and 9 take 8 ms against 1 ms — but they ran
 * once the hang had begun (its stuck op was created at 650 ms): that time
 * is waiting behind the stall, not a slow link. */
static long long behind_hang(int r, int opc, int send) {
  (void)send;
  return (r == 2 || r == 5) && opc >= 7 ? 8000000 : 1000000 + 1000 * r;
}

static void test_slow_behind_hang(void** state) {
  (void)state;
  const opd stuck[] = {{0, 1, 1, 1, 11, 64, 24, 16, 0, 16, 16, NULL, T0 + 650000000LL, T0 + 660000000LL},
                       {1, 0, 1, 0, 11, 64, 24, 0, 16, 16, 16, NULL, T0 + 650000000LL, T0 + 660000000LL}};
  pt_analysis* a = p2p_job(9, behind_hang, 100000000LL, stuck, 2);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  expect_culprit(a, 0, PT_CAUSE_GPU_NOT_PRODUCING, 1, 1);
  assert_int_equal(n_slow_culprits(a), 0);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"afterHang\":24,"));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
}

/* The same slowness before the hang began (operations 3, 5 and 7) is a slow
 * link, named beside the hang — and a ground truth that names only the stall now disagrees: the
 * comparison lets no culprit pass that the truth does not name. */
static long long before_hang(int r, int opc, int send) {
  (void)send;
  return (r == 2 || r == 5) && opc >= 3 && opc <= 7 ? 8000000 : 1000000 + 1000 * r;
}

static void test_slow_beside_hang_compared(void** state) {
  (void)state;
  const opd stuck[] = {{0, 1, 1, 1, 11, 64, 24, 16, 0, 16, 16, NULL, T0 + 950000000LL, T0 + 960000000LL},
                       {1, 0, 1, 0, 11, 64, 24, 0, 16, 16, 16, NULL, T0 + 950000000LL, T0 + 960000000LL}};
  pt_analysis* a = p2p_job(9, before_hang, 100000000LL, stuck, 2);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  assert_int_equal(n_slow_culprits(a), 1);
  char why[512];
  const char* truth =
      "{\"type\":\"truth\",\"verdict\":\"hang\",\"culprits\":[{\"rank\":0,\"channel\":1,\"cause\":\"gpu_not_producing\","
      "\"exact\":true}]}";
  assert_int_equal(pt_analysis_compare_truth(a, truth, why, sizeof why), PT_TRUTH_DIFFERS);
  assert_non_null(strstr(why, "is not in the ground truth"));
  pt_analysis_free(a);
}

/* Ops of tens of microseconds: a rank 8 times slower is of the order of a
 * thread not scheduled for a moment. The judgement is not made, it says
 * why, and names nobody; a ground truth that expects a slow link finds it
 * within the documented limit. */
static long long short_ops(int r, int opc, int send) {
  (void)opc;
  (void)send;
  return r == 2 || r == 5 ? 80000 : 10000 + 100 * r;
}

static void test_slow_too_short(void** state) {
  (void)state;
  pt_analysis* a = p2p_job(7, short_ops, 1000000LL, NULL, 0);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  assert_int_equal(pt_analysis_culprit_count(a), 0);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"state\":\"too_short\""));
  assert_non_null(strstr(j, "slow links not judged"));
  pt_analysis_string_free(j);
  char why[512];
  const char* truth = "{\"type\":\"truth\",\"verdict\":\"slow\",\"culprits\":[{\"rank\":2,\"channel\":-1,\"cause\":\"slow_link\",\"exact\":true}]}";
  assert_int_equal(pt_analysis_compare_truth(a, truth, why, sizeof why), PT_TRUTH_LIMIT);
  assert_non_null(strstr(why, "too short"));
  pt_analysis_free(a);
}

/* One slow op is no slow link: rank 4's dump still holds the job's first
 * op on channel 1 (its receiver's dump no longer does), a cold start 6
 * times the others; that edge has no other op. Neither rank 4 nor the
 * edge is named. */
static long long steady(int r, int opc, int send) {
  (void)opc;
  (void)send;
  return 1000000 + 1000 * r;
}

static void test_slow_one_op(void** state) {
  (void)state;
  const opd cold[] = {{4, 1, 1, 1, 1, 8, 8, 8, 0, 8, 8, "finished", T0 + 50000000LL, T0 + 56000000LL}};
  pt_analysis* a = p2p_job(7, steady, 100000000LL, cold, 1);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  assert_int_equal(pt_analysis_culprit_count(a), 0);
  pt_analysis_free(a);
}

/* A busy moment is no slow link: 20 ranks in pairs (r, r + 10), two
 * channels, operations 1, 3 and 5. Sixteen ranks run each operation at once
 * in 1 ms; in operation 3 the pairs (8, 18) and (9, 19) run it 2 s later,
 * while the machine was busy, in 4 ms — the ops that ran with them (each
 * other's) as slow. A moment slows the operations that ran in it; a slow
 * link or GPU slows every operation that crosses it (the pairs slow in all
 * three would be slow links, however late they ran: the ops of ranks that
 * lag behind slow ones are slow too, and make no baseline of their own). */
static void test_slow_busy_moment(void** state) {
  (void)state;
  sb b = {0};
  const int n = 20;
  coll = "Send";
  for (int r = 0; r < n; r++) {
    hdr(&b, r, two_hosts[r % 4], n, r + 1, "stall", T0 + 90000000000LL, 0);
    int k = 0, peer = (r + 10) % n;
    for (int opc = 1; opc <= 5; opc += 2)
      for (int ch = 0; ch < 2; ch++) {
        const int late = r % 10 >= 8 && opc == 3;
        long long s0 = T0 + opc * 10000000000LL + (late ? 2000000000LL : 0), d = late ? 4000000 : 1000000 + 1000 * r;
        op(&b, r + 1, (opd){r, peer, ch, 1, opc, 8, 8, 8, 0, 8, 8, "finished", s0, s0 + d});
        op(&b, r + 1, (opd){r, peer, ch, 0, opc, 8, 8, 0, 8, 8, 8, "finished", s0, s0 + d});
        k += 2;
      }
    end(&b, r + 1, k);
  }
  coll = "AllReduce";
  pt_analysis* a = at_analyze_text("busy.jsonl", b.t);
  free(b.t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  assert_int_equal(pt_analysis_culprit_count(a), 0);
  pt_analysis_free(a);
}

/* The comparison with a ground truth, each outcome. */
static void test_compare_truth(void** state) {
  (void)state;
  opd ops[] = {{0, 1, 0, 1, 9, 64, 24, 16, 0, 16, 16, NULL, 0, 0}, {1, 0, 0, 0, 9, 64, 24, 0, 16, 16, 16, NULL, 0, 0}};
  pt_analysis* a = job(2, two_hosts, ops, 2, NULL);
  char why[512];
  const char* exact =
      "{\"type\":\"truth\",\"verdict\":\"hang\",\"culprits\":[{\"rank\":0,\"channel\":0,\"cause\":\"gpu_not_producing\",\"exact\":true}]}";
  assert_int_equal(pt_analysis_compare_truth(a, exact, why, sizeof why), PT_TRUTH_EXACT);
  assert_non_null(strstr(why, "agrees"));
  const char* other_cause =
      "{\"type\":\"truth\",\"verdict\":\"hang\",\"culprits\":[{\"rank\":0,\"channel\":0,\"cause\":\"network\",\"exact\":true}]}";
  assert_int_equal(pt_analysis_compare_truth(a, other_cause, why, sizeof why), PT_TRUTH_DIFFERS);
  const char* node =
      "{\"type\":\"truth\",\"verdict\":\"hang\",\"culprits\":[{\"rank\":0,\"channel\":0,\"cause\":\"network\",\"exact\":false}]}";
  assert_int_equal(pt_analysis_compare_truth(a, node, why, sizeof why), PT_TRUTH_NODE);
  const char* other_rank =
      "{\"type\":\"truth\",\"verdict\":\"hang\",\"culprits\":[{\"rank\":1,\"channel\":0,\"cause\":\"gpu_not_producing\",\"exact\":false}]}";
  assert_int_equal(pt_analysis_compare_truth(a, other_rank, why, sizeof why), PT_TRUTH_DIFFERS);
  assert_int_equal(pt_analysis_compare_truth(a, "{\"type\":\"truth\",\"verdict\":\"ok\"}", why, sizeof why), PT_TRUTH_DIFFERS);
  assert_non_null(strstr(why, "the verdict is hang, the ground truth says ok"));
  assert_int_equal(pt_analysis_compare_truth(a, "{\"verdict\":\"ok\"}", why, sizeof why), PT_AN_EINVAL);
  assert_int_equal(pt_analysis_compare_truth(a, "not json", why, sizeof why), PT_AN_EINVAL);
  pt_analysis_free(a);
  /* legacy ms times cannot time a slow link: a documented limit */
  a = at_analyze_text("x.log", "commDump for all active ops mapSizeMB:0.00\ncreateT:1, lastT:2, postT:0, sendT:0, cntNm:7, "
                               "<1:1:0>, [fu,pr,pa,tb,ck]:4,2,1,0,1, 0->1(S), chan:0, status:DONE, ns:4, nb:1, po:4, "
                               "ke:4, tail/h:0, recvT:0, connSz/h:-1, trans:4, flushed:0, recvd:0, done:4\n"
                               "createT:1, lastT:2, postT:0, sendT:0, cntNm:7, "
                               "<1:1:0>, [fu,pr,pa,tb,ck]:4,2,1,0,1, 1->0(R), chan:0, status:DONE, ns:4, nb:1, po:4, "
                               "ke:0, tail/h:0, recvT:0, connSz/h:-1, trans:0, flushed:0, recvd:4, done:4\n");
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  assert_int_equal(pt_analysis_compare_truth(a, "{\"type\":\"truth\",\"verdict\":\"slow\",\"culprits\":[]}", why, sizeof why),
                   PT_TRUTH_LIMIT);
  pt_analysis_free(a);
}

static void test_api_edges(void** state) {
  (void)state;
  assert_int_equal(pt_analysis_new(NULL), PT_AN_EINVAL);
  assert_string_equal(pt_verdict_name(PT_VERDICT_SLOW), "slow");
  assert_string_equal(pt_cause_name(PT_CAUSE_NO_RECEIVE_POSTED), "no_receive_posted");
  assert_string_equal(pt_cause_name((pt_cause)99), "unknown");
  assert_int_equal(pt_analysis_verdict(NULL), PT_VERDICT_UNUSABLE);
  pt_analysis_free(NULL);
  pt_analysis* a = at_analyze_text("none", "");
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_UNUSABLE);
  assert_null(pt_analysis_culprit(a, 0));
  assert_int_equal(pt_analysis_culprit_count(a), 0);
  pt_analysis_input_info in;
  assert_int_equal(pt_analysis_input(a, 1, &in), PT_AN_EINVAL);
  pt_analysis_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_credit_and_consume), cmocka_unit_test(test_network),
      cmocka_unit_test(test_missing_rank),       cmocka_unit_test(test_missing_rank_numbered),
      cmocka_unit_test(test_behind),
      cmocka_unit_test(test_no_receive),         cmocka_unit_test(test_send_missing_pxn),
      cmocka_unit_test(test_circular),           cmocka_unit_test(test_leaked),
      cmocka_unit_test(test_moving),             cmocka_unit_test(test_no_op_count),
      cmocka_unit_test(test_slow),               cmocka_unit_test(test_compare_truth),
      cmocka_unit_test(test_slow_behind_hang),   cmocka_unit_test(test_slow_beside_hang_compared),
      cmocka_unit_test(test_slow_too_short),     cmocka_unit_test(test_slow_one_op),
      cmocka_unit_test(test_slow_busy_moment),
      cmocka_unit_test(test_api_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
