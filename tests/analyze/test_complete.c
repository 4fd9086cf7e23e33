/*
 * test_complete.c — what the analysis saw and what it could not: the
 * "incomplete" verdict (cut dumps, dumps short of the records their header
 * announces, ranks without a dump, dumps older than their peers'), a hang
 * still found beside missing ranks with its culprits marked possible, ranks
 * that finished cleanly (finalize dumps with no active op), dumps taken
 * while the host's mask left the proxy events out, dumps whose
 * rank the plugin did not know (rank -1), a damaged copy of a dump beside
 * its whole twin, directories read recursively (depth, links, loops,
 * what was skipped), and report files that never overwrite an input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixtures.h"

#define T0 1750000000000000000LL /* a dump time, ns */
#define MS 1000000LL

static void add(char* out, size_t n, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char* out, size_t n, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out + strlen(out), n - strlen(out), fmt, ap);
  va_end(ap);
}

/* A JSON dump header of communicator 77 (docs/dump-json.md). */
static void header(char* out, size_t n, int rank, int nranks, const char* trigger, int seq, int round, long long t,
                   int active, int finished) {
  add(out, n,
      "{\"type\":\"dump\",\"schema\":1,\"host\":\"node%d\",\"pid\":%d,\"rank\":%d,\"nRanks\":%d,\"commHash\":\"77\","
      "\"trigger\":\"%s\",\"dumpSeq\":%d,\"round\":%d,\"time_ns\":%lld,\"activeOps\":%d,\"finishedOps\":%d,"
      "\"stallMs\":100}\n",
      rank < 0 ? 9 : rank, 100 + (rank < 0 ? 9 : rank), rank, nranks, trigger, seq, round, t, active, finished);
}

/* An op line: send or receive of opCount 1, channel 0, 8 steps, `done`
 * of them done. */
static void op(char* out, size_t n, int seq, int rank, int peer, int send, int done, long long t) {
  add(out, n,
      "{\"type\":\"op\",\"dumpSeq\":%d,\"rank\":%d,\"peer\":%d,\"channel\":0,\"dir\":\"%s\",\"commHash\":\"77\","
      "\"opCount\":1,\"opId\":0,\"state\":\"%s\",\"nSteps\":8,\"counters\":{\"posted\":%d,\"kernelCopyReady\":%d,"
      "\"received\":%d,\"transmitted\":%d,\"done\":%d},\"create_ns\":%lld,\"last_ns\":%lld,\"progress_ns\":%lld}\n",
      seq, rank, peer, send ? "send" : "recv", done >= 8 ? "finished" : "active", send ? done : 8, send ? done : 0,
      send ? 0 : done, send ? done : 0, done, t - 50 * MS, t - 40 * MS, t - 40 * MS);
}

static void end(char* out, size_t n, int seq, int records) {
  add(out, n, "{\"type\":\"end\",\"dumpSeq\":%d,\"records\":%d}\n", seq, records);
}

/* A whole two-rank job, nothing stuck: rank r's dump (seq r+1). */
static void rank_dump(char* out, size_t n, int rank, const char* trigger, long long t) {
  header(out, n, rank, 2, trigger, rank + 1, 1, t, 0, 1);
  op(out, n, rank + 1, rank, 1 - rank, rank == 0, 8, t);
  end(out, n, rank + 1, 1);
}

static pt_analysis* run_two(const char* r0, const char* r1) {
  pt_analysis* a;
  assert_int_equal(pt_analysis_new(&a), 0);
  assert_int_equal(pt_analysis_add_buffer(a, "proxytrace-node0-100-r0-77.jsonl", r0, strlen(r0)), 0);
  if (r1) assert_int_equal(pt_analysis_add_buffer(a, "proxytrace-node1-101-r1-77.jsonl", r1, strlen(r1)), 0);
  assert_int_equal(pt_analysis_run(a), 0);
  return a;
}

/* Both ranks' dumps, whole, with `trigger`, analyzed. */
static pt_analysis* run_whole(char* r0, char* r1, size_t n, const char* trigger) {
  r0[0] = r1[0] = 0;
  rank_dump(r0, n, 0, trigger, T0);
  rank_dump(r1, n, 1, trigger, T0);
  return run_two(r0, r1);
}

static const pt_gap* gap_of(const pt_analysis* a, pt_gap_kind kind) {
  for (size_t i = 0; i < pt_analysis_gap_count(a); i++)
    if (pt_analysis_gap(a, i)->kind == kind) return pt_analysis_gap(a, i);
  return NULL;
}

static char* text_of(const pt_analysis* a, int verbose) {
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(pt_analysis_write_text(a, f, verbose), 0);
  fclose(f);
  return buf;
}

/* Both ranks whole: ok, no gap; the same with a finalize dump each: "2/2
 * ranks finished cleanly", and that slowness was not judged (no op
 * completed): a clean end says nothing of speed. */
static void test_whole_and_clean(void** state) {
  (void)state;
  char r0[4096], r1[4096];
  pt_analysis* a = run_whole(r0, r1, sizeof r0, "periodic");
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  assert_int_equal(pt_analysis_gap_count(a), 0);
  int clean, ranks;
  pt_analysis_finished(a, &clean, &ranks);
  assert_int_equal(clean, 0);
  assert_int_equal(ranks, 2);
  pt_analysis_free(a);
  /* finalize dumps, 0 active ops: the job ended cleanly on every rank */
  r0[0] = r1[0] = 0;
  for (int r = 0; r < 2; r++) {
    char* out = r ? r1 : r0;
    rank_dump(out, 4096, r, "periodic", T0);
    header(out, 4096, r, 2, "finalize", 10 + r, 2, T0 + 5 * MS, 0, 0);
    end(out, 4096, 10 + r, 0);
  }
  a = run_two(r0, r1);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  pt_analysis_finished(a, &clean, &ranks);
  assert_int_equal(clean, 2);
  assert_int_equal(ranks, 2);
  char* t = text_of(a, 0);
  /* and what it could not judge: no op completed, nothing to time */
  assert_non_null(strstr(t, "proxytrace analyze: OK — 2/2 ranks finished cleanly; slow links not judged: no "
                            "completed op with ns times to time\n"));
  free(t);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"finished\":{\"cleanRanks\":2,\"ranks\":2}"));
  assert_non_null(strstr(j, "\"summary\":\"2/2 ranks finished cleanly; slow links not judged: no completed op"));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
  /* a finalize dump with an active op did not finish cleanly: 1/2 */
  r1[0] = 0;
  header(r1, sizeof r1, 1, 2, "finalize", 11, 2, T0 + 5 * MS, 1, 0);
  op(r1, sizeof r1, 11, 1, 0, 0, 8, T0);
  end(r1, sizeof r1, 11, 1);
  a = run_two(r0, r1);
  pt_analysis_finished(a, &clean, &ranks);
  assert_int_equal(clean, 1);
  pt_analysis_free(a);
  /* no dump at all: not the same answer as a clean end */
  a = at_analyze_text("empty.log", "");
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_UNUSABLE);
  pt_analysis_free(a);
}

/* A stall dump cut after its header: "OK" before; now incomplete, with the
 * cut and the records it lacks. */
static void test_cut_and_short(void** state) {
  (void)state;
  char r0[4096] = "", r1[4096] = "";
  rank_dump(r0, sizeof r0, 0, "stall", T0);
  header(r1, sizeof r1, 1, 2, "stall", 2, 1, T0, 1, 1);
  op(r1, sizeof r1, 2, 1, 0, 0, 8, T0); /* the finished op; the active one is cut off */
  pt_analysis* a = run_two(r0, r1);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  assert_string_equal(pt_verdict_name(PT_VERDICT_INCOMPLETE), "incomplete");
  const pt_gap* g = gap_of(a, PT_GAP_CUT);
  assert_non_null(g);
  assert_int_equal(g->rank, 1);
  assert_int_equal(g->dump_seq, 2);
  assert_string_equal(g->path, "proxytrace-node1-101-r1-77.jsonl");
  g = gap_of(a, PT_GAP_SHORT);
  assert_non_null(g);
  assert_int_equal(g->announced, 2);
  assert_int_equal(g->read, 1);
  char* t = text_of(a, 0);
  assert_non_null(strstr(t, "proxytrace analyze: INCOMPLETE — nothing is stuck in what was read"));
  assert_non_null(strstr(t, "rank 1: dump 2 has no end: cut"));
  assert_non_null(strstr(t, "rank 1: dump 2 announces 2 records, 1 were read"));
  free(t);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"verdict\":\"incomplete\""));
  assert_non_null(strstr(j, "{\"kind\":\"cut\",\"commHash\":\"77\",\"rank\":1,"));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
  /* fewer op lines than the header announces, with its end line */
  end(r1, sizeof r1, 2, 1);
  a = run_two(r0, r1);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  assert_null(gap_of(a, PT_GAP_CUT));
  assert_non_null(gap_of(a, PT_GAP_SHORT));
  pt_analysis_free(a);
}

/* Two ranks' text dumps (the plugin's files), each one finished record;
 * `extra` comes after rank 1's headers. */
static void text_job(char* t, size_t n, const char* trigger, const char* extra) {
  const char* line = "createT:1750000000100, lastT:1750000000200, postT:0, sendT:0, cntNm:7, <77:1:0>, "
                     "[fu,pr,pa,tb,ck]:4,2,1,0,1, %d->%d(%c), chan:0, status:DONE, ns:8, nb:1, po:8, ke:%d, tail/h:0, "
                     "recvT:0, connSz/h:-1, trans:%d, flushed:0, recvd:%d, done:8\n";
  t[0] = 0;
  for (int r = 0; r < 2; r++) {
    add(t, n, "proxytrace dump seq=%d trigger=%s time_ns=1750000000300000000 host=n%d pid=%d rank=%d nRanks=2 "
              "commHash=77\ncommDump for all active ops mapSizeMB:0.00\n%s",
        r + 1, trigger, r, 5 + r, r, r ? extra : "");
    if (r) add(t, n, line, 1, 0, 'R', 0, 0, 8);
    else add(t, n, line, 0, 1, 'S', 8, 8, 0);
  }
}

/* A text dump whose file ends inside a record line: the record (its last
 * number may be cut short) is not taken and the dump is cut. */
static void test_cut_text(void** state) {
  (void)state;
  char t[4096];
  text_job(t, sizeof t, "stall", "");
  pt_analysis* a = at_analyze_text("job.log", t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  pt_analysis_free(a);
  t[strlen(t) - 3] = 0; /* "done:8\n" cut to "done" */
  a = at_analyze_text("job.log", t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  const pt_gap* g = gap_of(a, PT_GAP_CUT);
  assert_non_null(g);
  assert_int_equal(g->rank, 1);
  pt_analysis_input_info in;
  pt_analysis_input(a, 0, &in);
  assert_int_equal(in.records, 1); /* the cut record was not taken */
  pt_analysis_free(a);
  /* whole again, then a later dump of rank 1 cut inside its header lines:
   * that dump, whose records are lost, is cut — not a rank with none */
  strcat(t, ":8\n");
  char u[4096];
  snprintf(u, sizeof u, "%sproxytrace dump seq=4 trigger=finalize time_ns=1750000000400000000 host=n1 pid=6 rank=1 "
                        "nRanks=2 commHash=77\ncommDump for all active o", t);
  a = at_analyze_text("job.log", u);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  assert_int_equal(pt_analysis_gap_count(a), 1);
  g = gap_of(a, PT_GAP_CUT);
  assert_non_null(g);
  assert_int_equal(g->rank, 1);
  assert_int_equal(g->dump_seq, 4);
  pt_analysis_free(a);
}

/* A dump taken while the host's mask left the proxy events out (RAS on
 * 2.31+, "maskOff" / "proxy events off"): finished ops there prove nothing
 * of the calls since, so a job that reads clean is incomplete, with a
 * mask-off gap for that rank; the same dump with the mask on reads ok. */
static void test_mask_off(void** state) {
  (void)state;
  char r0[4096], r1[4096];
  pt_analysis* a = run_whole(r0, r1, sizeof r0, "finalize");
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  pt_analysis_free(a);
  char* h = strstr(r1, "\"stallMs\":100}");
  assert_non_null(h);
  char off[4096];
  snprintf(off, sizeof off, "%.*s\"stallMs\":100,\"maskChangedByHost\":true,\"maskOff\":true}%s", (int)(h - r1), r1,
           h + strlen("\"stallMs\":100}"));
  a = run_two(r0, off);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  const pt_gap* g = gap_of(a, PT_GAP_MASK_OFF);
  assert_non_null(g);
  assert_int_equal(g->rank, 1);
  assert_string_equal(g->kind_name, "mask-off");
  assert_int_equal(pt_analysis_gap_count(a), 1);
  static const char* const said[] = {"1 dump with the proxy events off",
                                      "rank 1: dump 2 was taken while the host's profiler mask left the proxy events out",
                                      NULL};
  char* t = text_of(a, 0);
  for (int i = 0; said[i]; i++) assert_non_null(strstr(t, said[i]));
  free(t);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"kind\":\"mask-off\""));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
  /* "maskOff":false is the mask on */
  snprintf(off, sizeof off, "%.*s\"stallMs\":100,\"maskChangedByHost\":true,\"maskOff\":false}%s", (int)(h - r1), r1,
           h + strlen("\"stallMs\":100}"));
  a = run_two(r0, off);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  pt_analysis_free(a);
  /* the text dump's host line says it too */
  char tx[4096];
  text_job(tx, sizeof tx, "finalize",
           "proxytrace host: mask: changed by the host, proxy events off (calls since are not recorded)\n");
  a = at_analyze_text("job.log", tx);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  g = gap_of(a, PT_GAP_MASK_OFF);
  assert_non_null(g);
  assert_int_equal(g->rank, 1);
  pt_analysis_free(a);
}

/* Ranks of a communicator of known size without a dump; a dump older
 * than its peers' by more than the stall time. */
static void test_missing_and_stale(void** state) {
  (void)state;
  char r0[4096] = "", r1[4096] = "";
  rank_dump(r0, sizeof r0, 0, "periodic", T0);
  pt_analysis* a = run_two(r0, NULL);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  const pt_gap* g = gap_of(a, PT_GAP_MISSING);
  assert_non_null(g);
  assert_int_equal(g->rank, 1);
  assert_int_equal(g->rank_last, 1);
  assert_int_equal(g->comm_hash, 77);
  pt_analysis_free(a);
  /* nRanks 6, ranks 0 and 3 there: ranks 1-2 and 4-5 missing, as two runs */
  char six[8192] = "";
  for (int r = 0; r < 6; r += 3) {
    header(six, sizeof six, r, 6, "periodic", r + 1, 1, T0, 0, 1);
    op(six, sizeof six, r + 1, r, 3 - r, r == 0, 8, T0);
    end(six, sizeof six, r + 1, 1);
  }
  a = at_analyze_text("six.jsonl", six);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  assert_int_equal(pt_analysis_gap_count(a), 2);
  assert_int_equal(pt_analysis_gap(a, 0)->rank, 1);
  assert_int_equal(pt_analysis_gap(a, 0)->rank_last, 2);
  assert_int_equal(pt_analysis_gap(a, 1)->rank, 4);
  assert_int_equal(pt_analysis_gap(a, 1)->rank_last, 5);
  char* t = text_of(a, 0);
  assert_non_null(strstr(t, "ranks 1-2 of communicator 77: no dump"));
  free(t);
  pt_analysis_free(a);
  /* rank 1's latest dump 500 ms before rank 0's, stall time 100 ms */
  rank_dump(r1, sizeof r1, 1, "periodic", T0 - 500 * MS);
  a = run_two(r0, r1);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  g = gap_of(a, PT_GAP_STALE);
  assert_non_null(g);
  assert_int_equal(g->rank, 1);
  assert_int_equal(g->behind_ms, 500);
  assert_int_equal(g->stall_ms, 100);
  assert_true(g->may_hold_fault);
  pt_analysis_free(a);
  /* within the stall time: whole */
  r1[0] = 0;
  rank_dump(r1, sizeof r1, 1, "periodic", T0 - 50 * MS);
  a = run_two(r0, r1);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  pt_analysis_free(a);
  /* a finalize dump 500 ms older, with an op still active (a communicator
   * destroyed while it hung): final, so never stale */
  r1[0] = 0;
  header(r1, sizeof r1, 1, 2, "finalize", 2, 1, T0 - 500 * MS, 1, 0);
  op(r1, sizeof r1, 2, 1, 0, 0, 4, T0 - 500 * MS);
  end(r1, sizeof r1, 2, 1);
  a = run_two(r0, r1);
  assert_null(gap_of(a, PT_GAP_STALE));
  pt_analysis_free(a);
  /* rank 1's finalize dump 500 ms before rank 0's latest (round 3), then a
   * periodic dump of the same process 8 ms after it: of round 2 (a dumper
   * round that began before the finalize), the finalize dump stays the
   * rank's latest, a clean end, not a stale periodic dump; of round 4 (a
   * communicator created again under the same name), the periodic dump is
   * the latest, 492 ms behind rank 0's */
  for (int later_round = 0; later_round < 2; later_round++) {
    r1[0] = 0;
    header(r1, sizeof r1, 1, 2, "finalize", 5, 3, T0 - 500 * MS, 0, 1);
    op(r1, sizeof r1, 5, 1, 0, 0, 8, T0 - 500 * MS);
    end(r1, sizeof r1, 5, 1);
    header(r1, sizeof r1, 1, 2, "periodic", 6, later_round ? 4 : 2, T0 - 492 * MS, 0, 1);
    op(r1, sizeof r1, 6, 1, 0, 0, 8, T0 - 492 * MS);
    end(r1, sizeof r1, 6, 1);
    a = run_two(r0, r1);
    assert_true(!gap_of(a, PT_GAP_STALE) == !later_round);
    int clean, ranks;
    pt_analysis_finished(a, &clean, &ranks);
    assert_int_equal(clean, later_round ? 0 : 1);
    if (!later_round) assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
    pt_analysis_free(a);
  }
}

/* A hang on the ranks that are there stays a hang (exit 1 in the CLI);
 * the ranks without a dump are possible culprits, and a culprit whose
 * evidence touches them is marked possible. */
static void test_hang_beside_missing(void** state) {
  (void)state;
  char t[8192] = "";
  /* 4 ranks on 4 nodes; rank 0 sends to 1 and waits for its GPU; rank 2's
   * receive from 3 waits for data; ranks 1 and 3 left no dump */
  header(t, sizeof t, 0, 4, "stall", 1, 1, T0, 1, 0);
  op(t, sizeof t, 1, 0, 1, 1, 3, T0);
  end(t, sizeof t, 1, 1);
  header(t, sizeof t, 2, 4, "stall", 2, 1, T0, 1, 0);
  op(t, sizeof t, 2, 2, 3, 0, 3, T0);
  end(t, sizeof t, 2, 1);
  pt_analysis* a = at_analyze_text("job.jsonl", t);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
  assert_true(pt_analysis_culprit_count(a) >= 1);
  for (size_t k = 0; k < pt_analysis_culprit_count(a); k++) assert_true(pt_analysis_culprit(a, k)->possible);
  const pt_gap* g = gap_of(a, PT_GAP_MISSING);
  assert_non_null(g);
  assert_true(g->may_hold_fault);
  char* s = text_of(a, 0);
  assert_non_null(strstr(s, "proxytrace analyze: HANG"));
  /* each named as a culprit that wrote no dump, and not listed again
   * among the possible culprits "too" */
  assert_non_null(strstr(s, "culprit 1: rank 1 wrote no dump"));
  assert_non_null(strstr(s, "2: rank 3 wrote no dump"));
  assert_null(strstr(s, "possible culprits too"));
  free(s);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"possible\":true"));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
}

/* Dumps of rank -1 (the plugin was not told the rank: NCCL 2.23-2.26 and
 * a rank with no network op) stand for ranks without a dump, not for dead
 * ones — when they are as many (per process, those of its latest round). */
static void test_unknown_rank(void** state) {
  (void)state;
  char t[8192] = "";
  /* nRanks unknown (0); ranks 0 and 3 exchange data; ranks 1 and 2 left
   * rank-unknown dumps, both in round 1 of one process */
  for (int r = 0; r < 4; r += 3) {
    header(t, sizeof t, r, 0, "stall", r + 1, 1, T0, 0, 1);
    op(t, sizeof t, r + 1, r, 3 - r, r == 0, 8, T0);
    end(t, sizeof t, r + 1, 1);
  }
  char u[8192];
  snprintf(u, sizeof u, "%s", t);
  for (int k = 0; k < 2; k++) {
    header(u, sizeof u, -1, 0, "stall", 10 + k, 1, T0, 0, 0);
    end(u, sizeof u, 10 + k, 0);
  }
  /* one round later, the same two again: still two ranks */
  for (int k = 0; k < 2; k++) {
    header(u, sizeof u, -1, 0, "stall", 12 + k, 2, T0, 0, 0);
    end(u, sizeof u, 12 + k, 0);
  }
  pt_analysis* a = at_analyze_text("job.jsonl", u);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  assert_int_equal(pt_analysis_gap_count(a), 0);
  char* s = text_of(a, 0);
  assert_non_null(strstr(s, "stand for its 2 ranks without a dump of their own"));
  free(s);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"unknown_rank_dumps\":[{\"commHash\":\"77\",\"ranks\":2,\"standFor\":[1,2],\"covered\":true}]"));
  assert_non_null(strstr(j, "\"missing_ranks\":[]"));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
  /* one such dump for two ranks without one: which it is cannot be told,
   * so both stay missing */
  snprintf(u, sizeof u, "%s", t);
  header(u, sizeof u, -1, 0, "stall", 10, 1, T0, 0, 0);
  end(u, sizeof u, 10, 0);
  a = at_analyze_text("job.jsonl", u);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  const pt_gap* g = gap_of(a, PT_GAP_MISSING);
  assert_non_null(g);
  assert_int_equal(g->rank, 1);
  assert_int_equal(g->rank_last, 2);
  s = text_of(a, 0);
  assert_non_null(strstr(s, "1 rank of communicator 77 left dumps that do not name their rank"));
  free(s);
  pt_analysis_free(a);
  /* three for two (rank 4's dump deleted, say, in a communicator no dump
   * gives the size of): the numbers disagree, so both stay missing */
  snprintf(u, sizeof u, "%s", t);
  for (int k = 0; k < 3; k++) {
    header(u, sizeof u, -1, 0, "stall", 10 + k, 1, T0, 0, 0);
    end(u, sizeof u, 10 + k, 0);
  }
  a = at_analyze_text("job.jsonl", u);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  g = gap_of(a, PT_GAP_MISSING);
  assert_non_null(g);
  assert_int_equal(g->rank_last - g->rank, 1);
  pt_analysis_free(a);
  /* nRanks 2, rank 1 without a dump, and a process whose dumps name
   * neither rank nor communicator (commHash 0: a rank that started no
   * operation): told, never dropped — beside the missing rank, as the rank
   * it may be */
  char two[4096] = "";
  rank_dump(two, sizeof two, 0, "stall", T0);
  for (int k = 0; k < 2; k++)
    add(two, sizeof two,
        "{\"type\":\"dump\",\"schema\":1,\"host\":\"node\\u0007\",\"pid\":555,\"rank\":-1,\"commHash\":\"0\","
        "\"trigger\":\"stall\",\"dumpSeq\":%d,\"round\":%d,\"time_ns\":%lld,\"activeOps\":0,\"finishedOps\":0}\n"
        "{\"type\":\"end\",\"dumpSeq\":%d,\"records\":0}\n", 20 + k, 1 + k, T0, 20 + k);
  a = at_analyze_text("job.jsonl", two);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_INCOMPLETE);
  assert_non_null(gap_of(a, PT_GAP_MISSING));
  s = text_of(a, 0);
  assert_non_null(strstr(s, "no communicator: 1 process left dumps that name neither their rank nor their communicator"));
  assert_non_null(strstr(s, ": node\\x07 pid 555 (2 dumps); a rank without a dump above may be one of them"));
  free(s);
  char* j2 = at_json(a);
  assert_non_null(strstr(j2, "\"no_communicator_dumps\":[{\"host\":\"node\\u0007\",\"pid\":555,\"dumps\":2}]"));
  pt_analysis_string_free(j2);
  pt_analysis_free(a);
  /* with no rank missing, the note names the process only */
  rank_dump(two, sizeof two, 1, "stall", T0);
  a = at_analyze_text("job.jsonl", two);
  assert_null(gap_of(a, PT_GAP_MISSING));
  s = text_of(a, 0);
  assert_non_null(strstr(s, "pid 555 (2 dumps)\n"));
  free(s);
  pt_analysis_free(a);
}

/* One dump read twice, its copies differing (the text copy cut): the whole
 * copy counts, whichever is read last. */
static void test_damaged_copy(void** state) {
  (void)state;
  char* dir = at_mkdtemp();
  char r0[4096] = "", r1[4096] = "";
  rank_dump(r0, sizeof r0, 0, "stall", T0);
  rank_dump(r1, sizeof r1, 1, "stall", T0);
  at_write(dir, "a-r0.jsonl", r0);
  at_write(dir, "a-r1.jsonl", r1);
  /* a cut copy of rank 1's dump, same sequence and time, read after it */
  char cut[4096];
  snprintf(cut, sizeof cut, "%s", r1);
  *strstr(cut, "{\"type\":\"op\"") = 0;
  at_write(dir, "b-r1.jsonl", cut);
  pt_analysis* a = at_analyze_path(dir);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  assert_int_equal(pt_analysis_gap_count(a), 0);
  pt_analysis_free(a);
  at_rmdir(dir);
}

/* Directories are read recursively (dumps/node0/…), links followed, loops
 * and files reached twice read once, hidden entries and what is deeper
 * than 8 levels skipped — each noted with why. */
static void test_recursive_dirs(void** state) {
  (void)state;
  char* dir = at_mkdtemp();
  char r0[4096] = "", r1[4096] = "", p[4608];
  rank_dump(r0, sizeof r0, 0, "periodic", T0);
  rank_dump(r1, sizeof r1, 1, "periodic", T0);
  snprintf(p, sizeof p, "%s/node0", dir);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/node1", dir);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/node0", dir);
  at_write(p, "r0.jsonl", r0);
  at_write(p, ".hidden", "garbage\n");
  snprintf(p, sizeof p, "%s/node0/up", dir);
  assert_int_equal(symlink("..", p), 0); /* a loop */
  snprintf(p, sizeof p, "%s/node1", dir);
  at_write(p, "r1.jsonl", r1);
  snprintf(p, sizeof p, "%s/node1/again.jsonl", dir);
  assert_int_equal(symlink("r1.jsonl", p), 0); /* the same file twice */
  /* nine levels down: beyond the limit */
  size_t at = (size_t)snprintf(p, sizeof p, "%s", dir);
  for (int i = 0; i < 9; i++) {
    at += (size_t)snprintf(p + at, sizeof p - at, "/d%d", i);
    assert_int_equal(mkdir(p, 0755), 0);
  }
  at_write(p, "deep.jsonl", r0);
  pt_analysis* a = at_analyze_path(dir);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  pt_analysis_stats st;
  pt_analysis_get_stats(a, &st);
  assert_int_equal(st.files, 2);
  assert_int_equal(st.duplicates, 0);
  char* s = text_of(a, 1);
  assert_non_null(strstr(s, "skipped in the directories read:"));
  assert_non_null(strstr(s, "node0/.hidden: hidden: not read"));
  assert_non_null(strstr(s, "node0/up: a link back to a directory above it (a loop): not read again"));
  /* name order: the link comes first, the file itself is the second name */
  assert_non_null(strstr(s, "node1/r1.jsonl: the same file as an input read before: read once"));
  assert_non_null(strstr(s, "/d8: deeper than 8 levels below the path given: not read"));
  free(s);
  char* j = at_json(a);
  assert_non_null(strstr(j, "\"why\":\"hidden: not read\""));
  pt_analysis_string_free(j);
  pt_analysis_free(a);
  at_rmdir(dir);
}

static char* slurp(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  char* buf = calloc(1, 1 << 16);
  size_t n = fread(buf, 1, (1 << 16) - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* A report file never goes over an input (by any name), is written whole
 * or not at all (a temporary file renamed), and one that cannot be written
 * says so. */
static void test_chrome_keeps_inputs(void** state) {
  (void)state;
  char* dir = at_mkdtemp();
  char r0[4096] = "", r1[4096] = "", p[4608];
  rank_dump(r0, sizeof r0, 0, "periodic", T0);
  rank_dump(r1, sizeof r1, 1, "periodic", T0);
  const char* in0 = at_write(dir, "r0.jsonl", r0);
  char input[4608];
  snprintf(input, sizeof input, "%s", in0);
  at_write(dir, "r1.jsonl", r1);
  snprintf(p, sizeof p, "%s/link.json", dir);
  assert_int_equal(symlink("r0.jsonl", p), 0);
  pt_analysis* a;
  assert_int_equal(pt_analysis_new(&a), 0);
  assert_int_equal(pt_analysis_add_path(a, input), 0);
  snprintf(p, sizeof p, "%s/r1.jsonl", dir);
  assert_int_equal(pt_analysis_add_path(a, p), 0);
  assert_int_equal(pt_analysis_run(a), 0);
  assert_int_equal(pt_analysis_write_chrome_path(a, input), PT_AN_EINPUT);
  snprintf(p, sizeof p, "%s/link.json", dir);
  assert_int_equal(pt_analysis_write_chrome_path(a, p), PT_AN_EINPUT); /* another name of it */
  char* kept = slurp(input);
  assert_string_equal(kept, r0);
  free(kept);
  snprintf(p, sizeof p, "%s/trace.json", dir);
  assert_int_equal(pt_analysis_write_chrome_path(a, p), 0);
  char* trace = slurp(p);
  assert_non_null(strstr(trace, "traceEvents"));
  free(trace);
  assert_int_equal(pt_analysis_write_chrome_path(a, "/nonexistent-dir-of-pt/x.json"), PT_AN_EIO);
  pt_analysis_free(a);
  /* nothing left beside the outputs: no temporary file */
  snprintf(p, sizeof p, "ls -a '%s' | grep -c tmp- >/dev/null", dir);
  assert_int_not_equal(system(p), 0);
  at_rmdir(dir);
}

/* One process of a 3D-parallel job: node0:100 is rank 1 of communicator 41
 * (its dump there is whole) and writes an empty dump that names no
 * communicator (rank 1, no op). Communicator 42's rank 1 wrote nothing, and
 * rank 0 waits on it: the empty dump is communicator 41's (its process is
 * rank 1 there), so 42's rank 1 is missing, not "behind" with a dump of no
 * op. An empty dump of a process seen nowhere still counts for its rank. */
static const char* proc_op(char* out, size_t n, uint64_t comm, const char* host, int pid, int rank, int peer, int send,
                           int done) {
  out[0] = 0;
  add(out, n,
      "{\"type\":\"dump\",\"schema\":1,\"host\":\"%s\",\"pid\":%d,\"rank\":%d,\"nRanks\":2,\"commHash\":\"%llu\","
      "\"trigger\":\"stall\",\"dumpSeq\":1,\"round\":1,\"time_ns\":%lld,\"activeOps\":%d,\"finishedOps\":%d,"
      "\"stallMs\":100}\n",
      host, pid, rank, (unsigned long long)comm, T0, done < 8, done >= 8);
  add(out, n,
      "{\"type\":\"op\",\"dumpSeq\":1,\"rank\":%d,\"peer\":%d,\"channel\":0,\"dir\":\"%s\",\"commHash\":\"%llu\","
      "\"opCount\":1,\"opId\":0,\"state\":\"%s\",\"nSteps\":8,\"counters\":{\"posted\":8,\"kernelCopyReady\":%d,"
      "\"received\":%d,\"transmitted\":%d,\"done\":%d},\"create_ns\":%lld,\"last_ns\":%lld,\"progress_ns\":%lld}\n",
      rank, peer, send ? "send" : "recv", (unsigned long long)comm, done >= 8 ? "finished" : "active", send ? 8 : 0,
      send ? 0 : done, send ? done : 0, done, T0 - 50 * MS, T0 - 40 * MS, T0 - 40 * MS);
  end(out, n, 1, 1);
  return out;
}

static void test_empty_dump_of_another_communicator(void** state) {
  (void)state;
  for (int known = 1; known >= 0; known--) {
    pt_analysis* a;
    assert_int_equal(pt_analysis_new(&a), 0);
    char t[2048];
    assert_int_equal(pt_analysis_add_buffer(a, "a0.jsonl", proc_op(t, sizeof t, 41, "node1", 101, 0, 1, 1, 8), strlen(t)), 0);
    assert_int_equal(pt_analysis_add_buffer(a, "a1.jsonl", proc_op(t, sizeof t, 41, "node0", 100, 1, 0, 0, 8), strlen(t)), 0);
    assert_int_equal(pt_analysis_add_buffer(a, "b0.jsonl", proc_op(t, sizeof t, 42, "node2", 102, 0, 1, 1, 3), strlen(t)), 0);
    t[0] = 0;
    add(t, sizeof t,
        "{\"type\":\"dump\",\"schema\":1,\"host\":\"%s\",\"pid\":%d,\"rank\":1,\"nRanks\":2,\"trigger\":\"stall\","
        "\"dumpSeq\":1,\"round\":1,\"time_ns\":%lld,\"activeOps\":0,\"finishedOps\":0,\"stallMs\":100}\n",
        known ? "node0" : "node9", known ? 100 : 999, T0);
    end(t, sizeof t, 1, 0);
    assert_int_equal(pt_analysis_add_buffer(a, "empty.jsonl", t, strlen(t)), 0);
    assert_int_equal(pt_analysis_run(a), 0);
    assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_HANG);
    const pt_culprit* q = pt_analysis_culprit(a, 0);
    assert_non_null(q);
    assert_int_equal(q->rank, 1);
    assert_int_equal(q->comm_hash, 42);
    assert_int_equal(q->cause, known ? PT_CAUSE_RANK_MISSING : PT_CAUSE_RANK_BEHIND);
    pt_analysis_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty_dump_of_another_communicator),
      cmocka_unit_test(test_whole_and_clean),   cmocka_unit_test(test_cut_and_short),
      cmocka_unit_test(test_cut_text),          cmocka_unit_test(test_missing_and_stale),
      cmocka_unit_test(test_hang_beside_missing), cmocka_unit_test(test_unknown_rank),
      cmocka_unit_test(test_damaged_copy),      cmocka_unit_test(test_recursive_dirs),
      cmocka_unit_test(test_chrome_keeps_inputs), cmocka_unit_test(test_mask_off),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
