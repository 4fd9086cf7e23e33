/*
 * test_slow_metrics.c — the statistical judgement of the step metrics
 * (src/analyze/mset.c, slow_test.c) and its watch over time (watch.c), on
 * metrics lines made here from drawn step times, bucketed by the plugin's
 * own bucket function: the buckets read back are the plugin's; the tail is
 * exact; a mild slow link (1.3x) is named at its rank, network-side; too
 * few steps is "not enough data yet"; 200 healthy heavy-tailed jobs name no
 * culprit; a window is a later snapshot less an earlier one; and a watch
 * says slow soon after a change point, with the time first seen, and
 * recovered once the slow steps leave the window; every edge slowed
 * together is found against its own history (changed) and recovers when
 * back to its median before; one slow edge that names no culprit leaves
 * the report OK but never "no link is slow".
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analyze/internal.h"
#include "analyze/mset.h"
#include "analyze/watch.h"
#include "proxytrace/analyze.h"
#include "proxytrace/trace.h"

static void test_buckets(void** state) {
  (void)state;
  for (int b = 0; b < PT_METRIC_TIME_BUCKETS; b++) {
    assert_int_equal(pt_ms_bucket_upper_ns(b), pt_metric_time_upper_ns(b));
    assert_int_equal(pt_ms_bucket_of(pt_metric_time_upper_ns(b)), b);
  }
  assert_int_equal(PT_MS_BUCKETS, PT_METRIC_TIME_BUCKETS);
  assert_int_equal(pt_ms_bucket_of(1000), -1); /* not a bound of the plugin's */
  assert_int_equal(pt_ms_bucket_of(100), -1);
}

static void test_binomial_tail(void** state) {
  (void)state;
  double p[80], dp[81];
  const double ps[] = {0.01, 0.2, 0.5, 0.77};
  for (size_t q = 0; q < sizeof ps / sizeof *ps; q++)
    for (size_t k = 1; k <= 60; k += 7)
      for (size_t s = 0; s <= k; s++) {
        for (size_t i = 0; i < k; i++) p[i] = ps[q];
        const double exact = an_upper_tail(p, 0, k, s, dp); /* the Poisson-binomial programme */
        const double fast = an_binomial_tail(k, s, ps[q]);
        if ((double)s <= (double)k * ps[q]) assert_true(fast == 1 && exact >= 0.5 - 1e-12);
        else assert_true(fabs(fast - exact) <= 1e-9 * exact + 1e-300);
      }
  assert_true(an_binomial_tail(100000, 60000, 0.5) < 1e-200);
  assert_true(an_binomial_tail(10, 11, 0.5) == 0);
  assert_true(an_slow_claim(1e-4, 10, 0.01) && !an_slow_claim(2e-3, 10, 0.01) && !an_slow_claim(0, 0, 0.01));
}

/* ---- jobs made of drawn step times ---- */

static uint64_t rnd(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}
static double unit(uint64_t* s) { return ((double)(rnd(s) >> 11) + 1) / 9007199254740993.0; }

/* A healthy phase: 1 ms times a heavy-tailed factor (Pareto, alpha 2.5). */
static double draw(uint64_t* s) { return 1e6 * (0.5 + unit(s)) * pow(2 * unit(s), -1 / 2.5); }

enum { RANKS = 6, EDGES = 2 * RANKS };

/* Cumulative histograms of a ring job's edges: rank r sends to r + 1 and
 * receives from r - 1. */
typedef struct {
  uint64_t h[EDGES][2][PT_METRIC_TIME_BUCKETS];
  uint64_t steps[EDGES];
} job;

static int edge_rank(int i) { return i / 2; }
static int edge_send(int i) { return i % 2 == 0; }
static int edge_peer(int i) { return edge_send(i) ? (edge_rank(i) + 1) % RANKS : (edge_rank(i) + RANKS - 1) % RANKS; }

enum { ALL = -2 }; /* every edge slow together (a ring held up by a GPU with no network edge) */

/* steps more per edge; the network phases of transfers through `slow`
 * (both ends' records), or of every edge (ALL), `factor` times as long. */
static void run_steps(job* j, int steps, int slow, double factor, uint64_t* seed) {
  for (int i = 0; i < EDGES; i++)
    for (int k = 0; k < steps; k++) {
      const int hit = slow == ALL || (slow >= 0 && (edge_rank(i) == slow || edge_peer(i) == slow));
      j->h[i][PT_MS_GPU][pt_metric_time_bucket((uint64_t)draw(seed))]++;
      j->h[i][PT_MS_NET][pt_metric_time_bucket((uint64_t)(draw(seed) * (hit ? factor : 1)))]++;
      j->steps[i]++;
    }
}

static void put_hist(char* b, size_t n, const char* key, const uint64_t* h) {
  size_t at = strlen(b);
  uint64_t count = 0;
  for (int k = 0; k < PT_METRIC_TIME_BUCKETS; k++) count += h[k];
  at += (size_t)snprintf(b + at, n - at, ",\"%s\":{\"count\":%llu,\"sum_ns\":0,\"p50_ns\":0,\"p99_ns\":0,\"buckets\":[",
                         key, (unsigned long long)count);
  int first = 1;
  for (int k = 0; k < PT_METRIC_TIME_BUCKETS; k++) {
    if (!h[k]) continue;
    const uint64_t up = pt_metric_time_upper_ns(k);
    if (up == UINT64_MAX) at += (size_t)snprintf(b + at, n - at, "%s[null,%llu]", first ? "" : ",", (unsigned long long)h[k]);
    else at += (size_t)snprintf(b + at, n - at, "%s[%llu,%llu]", first ? "" : ",", (unsigned long long)up, (unsigned long long)h[k]);
    first = 0;
  }
  snprintf(b + at, n - at, "]}");
}

/* The job's metrics lines at time t (s), each to put(arg, line). */
static void job_lines(const job* j, double t, void (*put)(void*, const char*), void* arg) {
  char line[16384];
  for (int r = 0; r < RANKS; r++) {
    snprintf(line, sizeof line,
             "{\"type\":\"metrics\",\"schema\":1,\"host\":\"node%d\",\"pid\":%d,\"rank\":%d,\"commHash\":\"77\","
             "\"time_ns\":%lld}",
             r, 100 + r, r, (long long)(t * 1e9));
    put(arg, line);
    for (int i = 2 * r; i < 2 * r + 2; i++) {
      snprintf(line, sizeof line,
               "{\"type\":\"edge\",\"rank\":%d,\"peer\":%d,\"channel\":null,\"dir\":\"%s\",\"ops\":%llu,\"steps\":%llu,"
               "\"sizedSteps\":0,\"bytes\":0",
               r, edge_peer(i), edge_send(i) ? "send" : "recv", (unsigned long long)(j->steps[i] / 8),
               (unsigned long long)j->steps[i]);
      put_hist(line, sizeof line, "gpuWait", j->h[i][PT_MS_GPU]);
      put_hist(line, sizeof line, "network", j->h[i][PT_MS_NET]);
      strcat(line, "}");
      put(arg, line);
    }
  }
}

static void to_set(void* arg, const char* line) { assert_int_equal(pt_mset_line(arg, line), 1); }

/* The job's files at time t (s) read into a fresh set. */
static void snapshot(const job* j, double t, pt_mset* s) {
  memset(s, 0, sizeof *s);
  job_lines(j, t, to_set, s);
}

typedef struct {
  char* b;
  size_t n, cap;
} text;

static void to_text(void* arg, const char* line) {
  text* x = arg;
  const size_t k = strlen(line);
  if (x->n + k + 2 > x->cap) {
    x->cap = 2 * (x->n + k + 2);
    x->b = realloc(x->b, x->cap);
    assert_non_null(x->b);
  }
  memcpy(x->b + x->n, line, k);
  x->n += k;
  x->b[x->n++] = '\n';
  x->b[x->n] = 0;
}

/* The job's metrics lines, as rank `rank`'s file, through the whole
 * analysis (x keeps the text until the caller frees x->b). */
static pt_analysis* analyze_job(const job* j, int rank, text* x) {
  char name[96];
  snprintf(name, sizeof name, "proxytrace-metrics-node%d-%d-r%d-77.jsonl", rank, 100 + rank, rank);
  job_lines(j, 1, to_text, x);
  pt_analysis* a;
  assert_int_equal(pt_analysis_new(&a), 0);
  assert_int_equal(pt_analysis_add_buffer(a, name, x->b, x->n), 0);
  assert_int_equal(pt_analysis_run(a), 0);
  return a;
}

/* The analysis's text report (free it). */
static char* text_report(const pt_analysis* a) {
  char* out = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&out, &len);
  assert_non_null(f);
  assert_int_equal(pt_analysis_write_text(a, f, 0), 0);
  fclose(f);
  return out;
}

static void test_mild_slow_link(void** state) {
  (void)state;
  uint64_t seed = 42;
  job* j = calloc(1, sizeof *j);
  run_steps(j, 2000, 2, 1.3, &seed);
  pt_mset s;
  snapshot(j, 1, &s);
  assert_int_equal(s.n, EDGES);
  pt_ms_verdict v;
  assert_int_equal(pt_mset_slow(&s, &v), 0);
  assert_int_equal(v.tested, 2 * EDGES);
  assert_int_equal(v.n_culprits, 1);
  assert_int_equal(v.culprits[0].rank, 2);
  assert_int_equal(v.culprits[0].side, PT_MS_NET);
  assert_true(v.culprits[0].factor > 1.15 && v.culprits[0].factor < 1.5);
  for (size_t i = 0; i < v.n_edges; i++) {
    assert_true(v.edges[i].rank == 2 || v.edges[i].peer == 2);
    assert_true(v.edges[i].tail < 0.01 / (double)v.tested);
  }
  char why[256];
  pt_ms_verdict_words(&v, why, sizeof why);
  assert_string_equal(why, "");
  pt_ms_verdict_free(&v);
  pt_mset_free(&s);
  free(j);
}

static void test_not_enough_data(void** state) {
  (void)state;
  uint64_t seed = 7;
  job* j = calloc(1, sizeof *j);
  run_steps(j, 20, 2, 4, &seed); /* 4x slow, but 20 steps an edge */
  pt_mset s;
  snapshot(j, 1, &s);
  pt_ms_verdict v;
  assert_int_equal(pt_mset_slow(&s, &v), 0);
  assert_int_equal(v.tested, 0);
  assert_int_equal(v.n_culprits, 0);
  assert_int_equal(v.few_samples, 2 * EDGES);
  char why[256];
  pt_ms_verdict_words(&v, why, sizeof why);
  assert_non_null(strstr(why, "not enough data yet"));
  pt_ms_verdict_free(&v);
  pt_mset_free(&s);
  free(j);
}

/* 32 steps an edge in 4 ops (8 samples), half of them at 1 ms and half
 * at 2 ms on every edge: the others' share above their median bucket is
 * a half, and all 8 samples above it (a chance of 1/256) is no claim
 * among 24 sides tested. Nothing is judged: "too few samples", never "no
 * link is slow". */
static void test_too_few_samples(void** state) {
  (void)state;
  job* j = calloc(1, sizeof *j);
  for (int i = 0; i < EDGES; i++) {
    for (int side = 0; side < 2; side++) {
      j->h[i][side][pt_metric_time_bucket(1000000)] = 16;
      j->h[i][side][pt_metric_time_bucket(2000000)] = 16;
    }
    j->steps[i] = 32;
  }
  pt_mset s;
  snapshot(j, 1, &s);
  pt_ms_verdict v;
  assert_int_equal(pt_mset_slow(&s, &v), 0);
  assert_int_equal(v.tested, 2 * EDGES);
  assert_false(pt_ms_judged(&v));
  assert_int_equal(v.n_culprits, 0);
  char why[256];
  pt_ms_verdict_words(&v, why, sizeof why);
  assert_non_null(strstr(why, "too few samples: none of the 24 edge sides tested could stand out"));
  pt_ms_verdict_free(&v);
  pt_mset_free(&s);
  free(j);
}

static void test_no_false_alarms(void** state) {
  (void)state;
  int culprits = 0, flagged = 0;
  job* j = malloc(sizeof *j);
  for (int run = 0; run < 200; run++) {
    uint64_t seed = 1000 + (uint64_t)run * 7919;
    memset(j, 0, sizeof *j);
    run_steps(j, 400, -1, 1, &seed);
    pt_mset s;
    snapshot(j, 1, &s);
    pt_ms_verdict v;
    assert_int_equal(pt_mset_slow(&s, &v), 0);
    culprits += (int)v.n_culprits;
    flagged += v.n_edges > 0;
    pt_ms_verdict_free(&v);
    pt_mset_free(&s);
  }
  free(j);
  printf("200 healthy heavy-tailed jobs: %d culprits, %d with a slow edge\n", culprits, flagged);
  assert_int_equal(culprits, 0);
  assert_true(flagged <= 6); /* 1 % a judgement, and a bound: 2 expected at most */
}

static void test_since(void** state) {
  (void)state;
  uint64_t seed = 3;
  job* j = calloc(1, sizeof *j);
  run_steps(j, 300, -1, 1, &seed);
  pt_mset then, now, win;
  snapshot(j, 1, &then);
  job* before = malloc(sizeof *before);
  memcpy(before, j, sizeof *j);
  run_steps(j, 500, 2, 2, &seed);
  snapshot(j, 2, &now);
  assert_int_equal(pt_mset_since(&now, &then, &win), 0);
  assert_int_equal(win.n, EDGES);
  for (size_t i = 0; i < win.n; i++) {
    const pt_ms_edge* e = &win.e[i];
    assert_int_equal(e->steps, 500);
    assert_int_equal(e->count[PT_MS_NET], 500);
    uint64_t n = 0;
    for (uint32_t k = 0; k < e->hist[PT_MS_NET].n; k++) n += win.buckets[e->hist[PT_MS_NET].at + k] & ((1ull << 56) - 1);
    assert_int_equal(n, 500);
  }
  /* the window alone shows the slow link the whole run dilutes */
  pt_ms_verdict v;
  assert_int_equal(pt_mset_slow(&win, &v), 0);
  assert_int_equal(v.n_culprits, 1);
  assert_int_equal(v.culprits[0].rank, 2);
  pt_ms_verdict_free(&v);
  pt_mset_free(&win);
  /* counts that went down (another process under the same names): whole */
  assert_int_equal(pt_mset_since(&then, &now, &win), 0);
  for (size_t i = 0; i < win.n; i++) assert_int_equal(win.e[i].steps, 300);
  pt_mset_free(&win);
  pt_mset_free(&then);
  pt_mset_free(&now);
  free(before);
  free(j);
}

/* Every edge 1.5x slower since a moment: the comparable edges see
 * nothing (they all slowed), each edge's own history does; the same
 * steps without a change, and a history of too few steps, say nothing. */
static void test_changed(void** state) {
  (void)state;
  uint64_t seed = 5;
  job* j = calloc(1, sizeof *j);
  run_steps(j, 1500, -1, 1, &seed);
  pt_mset then, now, win;
  snapshot(j, 1, &then);
  run_steps(j, 400, ALL, 1.5, &seed);
  snapshot(j, 2, &now);
  assert_int_equal(pt_mset_since(&now, &then, &win), 0);
  pt_ms_verdict v;
  assert_int_equal(pt_mset_judge(&win, 0.01, PT_MS_MIN_FACTOR, &v), 0);
  assert_int_equal(v.n_edges, 0); /* alike: nothing stands out among them */
  pt_ms_verdict_free(&v);
  assert_int_equal(pt_mset_changed(&win, &then, 0.01, PT_MS_MIN_FACTOR, &v), 0);
  assert_int_equal(v.tested, 2 * EDGES);
  assert_int_equal(v.n_culprits, 0); /* edges only: which end is not its to say */
  assert_int_equal(v.n_edges, EDGES); /* every network side, no GPU side */
  for (size_t i = 0; i < v.n_edges; i++) {
    assert_int_equal(v.edges[i].side, PT_MS_NET);
    assert_true(v.edges[i].factor > 1.25 && v.edges[i].factor < 1.8);
    assert_true(v.edges[i].median_ns > 500000 && v.edges[i].median_ns < 2000000); /* its median before */
  }
  pt_ms_verdict_free(&v);
  pt_mset_free(&win);
  pt_mset_free(&now);
  /* too few steps before: nothing tested */
  job* k = calloc(1, sizeof *k);
  run_steps(k, 20, -1, 1, &seed);
  pt_mset few;
  snapshot(k, 1, &few);
  run_steps(k, 400, ALL, 3, &seed);
  snapshot(k, 2, &now);
  assert_int_equal(pt_mset_since(&now, &few, &win), 0);
  assert_int_equal(pt_mset_changed(&win, &few, 0.01, PT_MS_MIN_FACTOR, &v), 0);
  assert_int_equal(v.tested, 0);
  assert_int_equal(v.few_samples, 2 * EDGES);
  assert_int_equal(v.n_edges, 0);
  pt_ms_verdict_free(&v);
  pt_mset_free(&win);
  pt_mset_free(&now);
  pt_mset_free(&few);
  pt_mset_free(&then);
  free(k);
  /* healthy: the window against its own history, 200 times */
  int flagged = 0;
  for (int run = 0; run < 200; run++) {
    memset(j, 0, sizeof *j);
    uint64_t s2 = 77 + (uint64_t)run * 104729;
    run_steps(j, 1000, -1, 1, &s2);
    snapshot(j, 1, &then);
    run_steps(j, 300, -1, 1, &s2);
    snapshot(j, 2, &now);
    assert_int_equal(pt_mset_since(&now, &then, &win), 0);
    assert_int_equal(pt_mset_changed(&win, &then, 0.01, PT_MS_MIN_FACTOR, &v), 0);
    flagged += v.n_edges > 0;
    pt_ms_verdict_free(&v);
    pt_mset_free(&win);
    pt_mset_free(&now);
    pt_mset_free(&then);
  }
  printf("200 healthy windows against their own history: %d with a changed edge\n", flagged);
  assert_true(flagged <= 6); /* 1 % a judgement: 2 expected at most */
  free(j);
}

/* One edge slow beyond chance and nothing else: rank 2's receive waits 3x
 * for its GPU, its send does not (one edge of two names no culprit: a
 * thread not scheduled looks the same). The report stays OK, exit 0, but
 * says there is a slow edge, never "no link is slow", and lists it. */
static void test_slow_edge_without_culprit(void** state) {
  (void)state;
  uint64_t seed = 21;
  job* j = calloc(1, sizeof *j);
  run_steps(j, 2000, -1, 1, &seed);
  const int i = 5; /* rank 2's receive from rank 1 */
  assert_int_equal(edge_rank(i), 2);
  assert_false(edge_send(i));
  memset(j->h[i][PT_MS_GPU], 0, sizeof j->h[i][PT_MS_GPU]);
  for (int k = 0; k < 2000; k++) j->h[i][PT_MS_GPU][pt_metric_time_bucket((uint64_t)(3 * draw(&seed)))]++;
  text x = {0};
  pt_analysis* a = analyze_job(j, 2, &x);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_OK);
  assert_int_equal(pt_analysis_culprit_count(a), 0);
  char* out = text_report(a);
  printf("%s", out);
  assert_non_null(strstr(out, "OK — no op is stuck; 1 edge is slower than its comparable edges beyond chance, "
                              "too little to name a culprit (listed below)"));
  assert_null(strstr(out, "no link is slow"));
  assert_non_null(strstr(out, "rank 2 recv from rank 1: GPU wait"));
  free(out);
  char* json = pt_analysis_json(a);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"summary\":\"no op is stuck; 1 edge is slower than its comparable edges"));
  pt_analysis_string_free(json);
  pt_analysis_free(a);
  free(x.b);
  free(j);
}

/* Which side a culprit is on. Each fault slows the network waits of its
 * peers' edges with the rank (a receiver waits for a slow sender's data, a
 * sender for a slow receiver's buffers); what differs is the rank's own
 * records: a slow GPU makes its own GPU waits long, a slow NIC its own
 * network waits, a slow proxy thread every wait it times, both sides. */
enum { SLOW_LINK, SLOW_GPU, SLOW_HOST, SLOW_RING_LINK };

/* SLOW_RING_LINK: a slow link in a ring, whose data the GPU forwards —
 * the sends of the rank and of the one after it wait for their GPUs to
 * forward what arrived late (their receives' GPU waits do not). */
static void run_fault(job* j, int steps, int kind, int r, double factor, uint64_t* seed) {
  for (int i = 0; i < EDGES; i++)
    for (int k = 0; k < steps; k++) {
      const int own = edge_rank(i) == r, with = edge_peer(i) == r;
      const int fed = kind == SLOW_RING_LINK && edge_send(i) && (own || edge_rank(i) == (r + 1) % RANKS);
      const double gpu = (own && (kind == SLOW_GPU || kind == SLOW_HOST)) || fed ? factor : 1;
      const double net = with || (own && kind != SLOW_GPU) ? factor : 1;
      j->h[i][PT_MS_GPU][pt_metric_time_bucket((uint64_t)(draw(seed) * gpu))]++;
      j->h[i][PT_MS_NET][pt_metric_time_bucket((uint64_t)(draw(seed) * net))]++;
      j->steps[i]++;
    }
}

static void test_side(void** state) {
  (void)state;
  static const int sides[] = {PT_MS_NET, PT_MS_GPU, PT_MS_HOST, PT_MS_NET};
  job* j = malloc(sizeof *j);
  for (int kind = SLOW_LINK; kind <= SLOW_RING_LINK; kind++)
    for (int r = 1; r < RANKS; r += 3) {
      uint64_t seed = 500 + (uint64_t)(kind * RANKS + r);
      memset(j, 0, sizeof *j);
      run_fault(j, 2000, kind, r, 1.5, &seed);
      pt_mset s;
      snapshot(j, 1, &s);
      pt_ms_verdict v;
      assert_int_equal(pt_mset_slow(&s, &v), 0);
      printf("kind %d rank %d: %zu culprit(s), first rank %d side %d %.2fx\n", kind, r, v.n_culprits,
             v.n_culprits ? v.culprits[0].rank : -1, v.n_culprits ? v.culprits[0].side : -1,
             v.n_culprits ? v.culprits[0].factor : 0);
      assert_int_equal(v.n_culprits, 1);
      assert_int_equal(v.culprits[0].rank, r);
      assert_int_equal(v.culprits[0].side, sides[kind]);
      assert_true(v.culprits[0].factor > 1.3 && v.culprits[0].factor < 1.8);
      pt_ms_verdict_free(&v);
      pt_mset_free(&s);
    }
  /* A 4x GPU whose rank's own network waits are 1.4x too (its thread a
   * little late on a busy machine): the GPU, not the thread — a thread late
   * enough to make GPU waits 4x would make its network waits as slow. */
  uint64_t seed = 91;
  memset(j, 0, sizeof *j);
  run_fault(j, 2000, SLOW_GPU, 4, 4, &seed);
  for (int i = 0; i < EDGES; i++)
    if (edge_rank(i) == 4) {
      memset(j->h[i][PT_MS_NET], 0, sizeof j->h[i][PT_MS_NET]);
      for (int k = 0; k < 2000; k++) j->h[i][PT_MS_NET][pt_metric_time_bucket((uint64_t)(1.4 * draw(&seed)))]++;
    }
  pt_mset busy;
  snapshot(j, 1, &busy);
  pt_ms_verdict bv;
  assert_int_equal(pt_mset_slow(&busy, &bv), 0);
  for (size_t k = 0; k < bv.n_edges; k++)
    printf("busy GPU: rank %d %s %d side %d %.2fx\n", bv.edges[k].rank, bv.edges[k].send ? "send to" : "recv from",
           bv.edges[k].peer, bv.edges[k].side, bv.edges[k].factor);
  assert_int_equal(bv.n_culprits, 1);
  assert_int_equal(bv.culprits[0].rank, 4);
  assert_int_equal(bv.culprits[0].side, PT_MS_GPU);
  pt_ms_verdict_free(&bv);
  pt_mset_free(&busy);
  /* What the report says of a proxy thread: its own cause and words. */
  seed = 77;
  memset(j, 0, sizeof *j);
  run_fault(j, 2000, SLOW_HOST, 4, 2, &seed);
  text x = {0};
  pt_analysis* a = analyze_job(j, 4, &x);
  assert_int_equal(pt_analysis_verdict(a), PT_VERDICT_SLOW);
  assert_int_equal(pt_analysis_culprit_count(a), 1);
  const pt_culprit* c = pt_analysis_culprit(a, 0);
  assert_int_equal(c->cause, PT_CAUSE_SLOW_HOST);
  assert_string_equal(c->cause_name, "slow_host");
  assert_int_equal(c->rank, 4);
  char* json = pt_analysis_json(a);
  assert_non_null(strstr(json, "\"cause\":\"slow_host\""));
  pt_analysis_string_free(json);
  char* out = text_report(a);
  assert_non_null(strstr(out, "culprit 1: rank 4 (node4): its proxy thread is slow"));
  free(out);
  pt_analysis_free(a);
  free(x.b);
  free(j);
}

typedef struct {
  int slow, recovered;
  int64_t slow_at, since, recovered_at;
} seen;

static void on_event(void* arg, int what, const pt_watch_mark* m, int64_t now) {
  seen* s = arg;
  if (m->kind != PT_WATCH_CULPRIT) return;
  assert_int_equal(m->rank, 2);
  if (what == PT_WATCH_SLOW) {
    s->slow++;
    s->slow_at = now;
    s->since = m->since_ns;
  } else {
    s->recovered++;
    s->recovered_at = now;
  }
}

static void test_watch(void** state) {
  (void)state;
  uint64_t seed = 11;
  job* j = calloc(1, sizeof *j);
  pt_watch w;
  pt_watch_init(&w, 10);
  seen s = {0};
  /* one snapshot a second: healthy 60 s (a long past), slow 1.5x from 60 s
   * to 100 s, healthy again after */
  for (int t = 1; t <= 140; t++) {
    run_steps(j, 100, t > 60 && t <= 100 ? 2 : -1, 1.5, &seed);
    pt_mset now;
    snapshot(j, t, &now);
    assert_int_equal(pt_watch_update(&w, &now, on_event, &s), 1);
    assert_int_equal(pt_watch_update(&w, &now, on_event, &s), 0); /* the same files: nothing new */
    pt_mset_free(&now);
    if (t <= 60) assert_int_equal(s.slow, 0);
  }
  printf("slow said at %.0f s (first seen %.0f s), recovered at %.0f s\n", (double)s.slow_at / 1e9,
         (double)s.since / 1e9, (double)s.recovered_at / 1e9);
  assert_int_equal(s.slow, 1);
  assert_int_equal(s.recovered, 1);
  assert_true(s.since > 60 * (int64_t)1000000000 && s.since <= 70 * (int64_t)1000000000); /* within a window */
  assert_true(s.slow_at - s.since == (int64_t)1000000000); /* the second judgement confirms */
  assert_true(s.recovered_at > 100 * (int64_t)1000000000 && s.recovered_at <= 113 * (int64_t)1000000000);
  pt_watch_free(&w);
  free(j);
}

/* Files rewritten far faster than the window (every 0.3 s, a 30 s
 * window, 200 rewrites): the snapshots held stay a few (a slice of the
 * window apart), not one a rewrite — memory follows the window, not the
 * number of rewrites — and a slow link is still said. */
static void test_watch_rewrites(void** state) {
  (void)state;
  uint64_t seed = 12;
  job* j = calloc(1, sizeof *j);
  pt_watch w;
  pt_watch_init(&w, 30);
  seen s = {0};
  size_t most = 0;
  for (int k = 1; k <= 200; k++) {
    run_steps(j, 20, k > 100 ? 2 : -1, 1.5, &seed);
    pt_mset now;
    snapshot(j, 0.3 * k, &now);
    assert_int_equal(pt_watch_update(&w, &now, on_event, &s), 1);
    pt_mset_free(&now);
    if (w.n_snaps > most) most = w.n_snaps;
  }
  printf("at most %zu snapshots held over 200 rewrites of a 30 s window\n", most);
  assert_true(most <= PT_WATCH_SLICES + 2);
  assert_int_equal(s.slow, 1);
  pt_watch_free(&w);
  free(j);
}

/* Rank 1's link `link` times slow, and the GPU waits on rank 2's two
 * edges: its receive from rank 1 `carried` times as long, its send `own`
 * times. */
static void gpu_waits(job* j, double link, double carried, double own, uint64_t* seed) {
  memset(j, 0, sizeof *j);
  run_fault(j, 2000, SLOW_LINK, 1, link, seed);
  for (int i = 4; i <= 5; i++) { /* rank 2: send (4), receive (5) */
    memset(j->h[i][PT_MS_GPU], 0, sizeof j->h[i][PT_MS_GPU]);
    for (int k = 0; k < 2000; k++)
      j->h[i][PT_MS_GPU][pt_metric_time_bucket((uint64_t)(draw(seed) * (i == 5 ? carried : own)))]++;
  }
}

/* A slow link's receiver whose GPU wait on that edge is 1.8x (the network
 * hands its GPU one step at a time: each step waits alone) and, on its
 * other edge, 2x by chance: the link, not its GPU — the GPU side of an
 * edge 16x slower in the network is not the GPU's evidence. The same two
 * GPU waits with the link healthy do name the GPU. */
static void test_gpu_carried_by_network(void** state) {
  (void)state;
  job* j = malloc(sizeof *j);
  uint64_t seed = 303;
  gpu_waits(j, 16, 1.8, 2, &seed);
  pt_mset s;
  snapshot(j, 1, &s);
  pt_ms_verdict v;
  assert_int_equal(pt_mset_slow(&s, &v), 0);
  int gpu_slow = 0;
  for (size_t k = 0; k < v.n_edges; k++) gpu_slow += v.edges[k].rank == 2 && v.edges[k].side == PT_MS_GPU;
  assert_int_equal(gpu_slow, 2); /* both GPU sides are slow beyond chance */
  assert_int_equal(v.n_culprits, 1);
  assert_int_equal(v.culprits[0].rank, 1);
  assert_int_equal(v.culprits[0].side, PT_MS_NET);
  pt_ms_verdict_free(&v);
  pt_mset_free(&s);
  gpu_waits(j, 1, 1.8, 2, &seed); /* the control: the link healthy */
  snapshot(j, 1, &s);
  assert_int_equal(pt_mset_slow(&s, &v), 0);
  assert_int_equal(v.n_culprits, 1);
  assert_int_equal(v.culprits[0].rank, 2);
  assert_int_equal(v.culprits[0].side, PT_MS_GPU);
  pt_ms_verdict_free(&v);
  pt_mset_free(&s);
  free(j);
}

/* A slow GPU whose other edge has too few samples to be found slow
 * whatever its steps (5 ops of 8 steps: 10 samples, 4 steps to a sample;
 * all 10 above the others' median is a chance of 1e-3, short of the 4e-4
 * of 24 edge sides tested) is named from the edge that could be: "every
 * edge it has" counts the edges that could show it. */
static void test_gpu_one_edge_able(void** state) {
  (void)state;
  job* j = malloc(sizeof *j);
  uint64_t seed = 404;
  memset(j, 0, sizeof *j);
  run_steps(j, 2000, -1, 1, &seed);
  for (int i = 4; i <= 5; i++) { /* rank 2: send (4), receive (5, 40 steps) */
    memset(j->h[i][PT_MS_GPU], 0, sizeof j->h[i][PT_MS_GPU]);
    memset(j->h[i][PT_MS_NET], 0, sizeof j->h[i][PT_MS_NET]);
    j->steps[i] = i == 5 ? 40 : 2000;
    for (uint64_t k = 0; k < j->steps[i]; k++) {
      j->h[i][PT_MS_GPU][pt_metric_time_bucket((uint64_t)(draw(&seed) * (i == 5 ? 30 : 3)))]++;
      j->h[i][PT_MS_NET][pt_metric_time_bucket((uint64_t)draw(&seed))]++;
    }
  }
  pt_mset s;
  snapshot(j, 1, &s);
  pt_ms_verdict v;
  assert_int_equal(pt_mset_slow(&s, &v), 0);
  size_t gpu_slow = 0;
  for (size_t k = 0; k < v.n_edges; k++) gpu_slow += v.edges[k].rank == 2 && v.edges[k].side == PT_MS_GPU;
  assert_int_equal(gpu_slow, 1); /* the short edge cannot pass the test */
  assert_int_equal(v.n_culprits, 1);
  assert_int_equal(v.culprits[0].rank, 2);
  assert_int_equal(v.culprits[0].side, PT_MS_GPU);
  pt_ms_verdict_free(&v);
  pt_mset_free(&s);
  free(j);
}

/* A 16x slow link on 3 nodes of one rank (NCCL 2.25, emulated): two of
 * each group's three edges are slow (rank 1's send and the send into it),
 * so each one's others are half slow and its own median stands out from
 * no healthy baseline; the fast edge is as much an outlier. The network
 * waits of groups of three are not judged: the verdict says so, never "no
 * link is slow", however many samples (6 or 36 ops of 6 steps). The GPU
 * waits, one edge of a group per rank, are judged. */
static const char* const three_ring[] = {
    "{\"type\":\"metrics\",\"schema\":1,\"host\":\"vm\",\"pid\":5212,\"rank\":0,\"commHash\":\"3904611485556625610\",\"time_ns\":1796512107477933815}",
    "{\"type\":\"edge\",\"rank\":0,\"peer\":1,\"channel\":null,\"dir\":\"send\",\"ops\":6,\"steps\":36,\"gpuWait\":{\"count\":36,\"buckets\":[[655360,10],[1310720,10],[1572864,1],[1835008,15]]},\"network\":{\"count\":36,\"buckets\":[[25165824,5],[33554432,11],[41943040,8],[50331648,8],[58720256,4]]}}",
    "{\"type\":\"edge\",\"rank\":0,\"peer\":2,\"channel\":null,\"dir\":\"recv\",\"ops\":6,\"steps\":36,\"gpuWait\":{\"count\":36,\"buckets\":[[384,1],[512,1],[640,1],[768,2],[896,1],[1024,1],[458752,1],[524288,5],[655360,12],[1048576,1],[1310720,5],[1835008,5]]},\"network\":{\"count\":36,\"buckets\":[[655360,3],[786432,1],[1310720,3],[1835008,3],[2097152,1],[2621440,6],[3145728,3],[3670016,9],[4194304,2],[5242880,5]]}}",
    "{\"type\":\"metrics\",\"schema\":1,\"host\":\"vm\",\"pid\":5212,\"rank\":1,\"commHash\":\"3904611485556625610\",\"time_ns\":1796512107478896831}",
    "{\"type\":\"edge\",\"rank\":1,\"peer\":0,\"channel\":null,\"dir\":\"recv\",\"ops\":6,\"steps\":36,\"gpuWait\":{\"count\":36,\"buckets\":[[655360,10],[1310720,12],[1572864,2],[1835008,11],[3145728,1]]},\"network\":{\"count\":36,\"buckets\":[[8388608,1],[16777216,2],[25165824,5],[33554432,2],[41943040,4],[50331648,3],[58720256,3],[67108864,10],[83886080,6]]}}",
    "{\"type\":\"edge\",\"rank\":1,\"peer\":2,\"channel\":null,\"dir\":\"send\",\"ops\":6,\"steps\":36,\"gpuWait\":{\"count\":36,\"buckets\":[[655360,18],[1310720,7],[1572864,1],[1835008,10]]},\"network\":{\"count\":36,\"buckets\":[[16777216,5],[25165824,7],[33554432,7],[41943040,9],[50331648,2],[58720256,3],[67108864,3]]}}",
    "{\"type\":\"metrics\",\"schema\":1,\"host\":\"vm\",\"pid\":5212,\"rank\":2,\"commHash\":\"3904611485556625610\",\"time_ns\":1796512107479663974}",
    "{\"type\":\"edge\",\"rank\":2,\"peer\":0,\"channel\":null,\"dir\":\"send\",\"ops\":6,\"steps\":36,\"gpuWait\":{\"count\":36,\"buckets\":[[655360,11],[1310720,9],[1572864,2],[1835008,13],[2097152,1]]},\"network\":{\"count\":36,\"buckets\":[[1310720,4],[1835008,6],[2621440,8],[3145728,12],[3670016,6]]}}",
    "{\"type\":\"edge\",\"rank\":2,\"peer\":1,\"channel\":null,\"dir\":\"recv\",\"ops\":6,\"steps\":36,\"gpuWait\":{\"count\":36,\"buckets\":[[655360,8],[1048576,1],[1310720,9],[1572864,2],[1835008,15],[3145728,1]]},\"network\":{\"count\":36,\"buckets\":[[8388608,3],[16777216,4],[25165824,1],[33554432,2],[41943040,4],[50331648,1],[58720256,8],[67108864,8],[83886080,5]]}}",
};

/* The verdict on three_ring with each edge's ops set to `ops`. */
static void three_ring_verdict(int ops, pt_ms_verdict* v) {
  pt_mset s;
  memset(&s, 0, sizeof s);
  for (size_t i = 0; i < sizeof three_ring / sizeof *three_ring; i++) {
    char line[1024];
    const char* at = strstr(three_ring[i], "\"ops\":6,");
    if (at)
      snprintf(line, sizeof line, "%.*s\"ops\":%d,%s", (int)(at - three_ring[i]), three_ring[i], ops,
               at + strlen("\"ops\":6,"));
    else snprintf(line, sizeof line, "%s", three_ring[i]);
    assert_int_equal(pt_mset_line(&s, line), 1);
  }
  assert_int_equal(pt_mset_slow(&s, v), 0);
  pt_mset_free(&s);
}

static void test_ring_of_three(void** state) {
  (void)state;
  for (int ops = 6; ops <= 36; ops += 30) {
    pt_ms_verdict v;
    three_ring_verdict(ops, &v);
    assert_int_equal(v.tested_side[PT_MS_NET], 0);
    assert_int_equal(v.tested_side[PT_MS_GPU], 6);
    assert_int_equal(v.few_edges, 6);
    assert_true(pt_ms_judged(&v));
    assert_int_equal(v.n_culprits, 0);
    char why[256];
    pt_ms_verdict_words(&v, why, sizeof why);
    assert_non_null(strstr(why, "no network wait could stand out beyond chance (0 edge sides tested;"));
    pt_ms_verdict_free(&v);
  }
}

/* A rank's GPU 1.5x slow whose own network waits are healthy (every
 * edge's network steps half at 1 ms, half at 2 ms: the others' share above
 * their median bucket is a half): where those have the samples to stand
 * out (400 steps), the network side rules its proxy thread out; where they
 * are tested but could not stand out however slow (32 steps, 8 samples:
 * all above is a chance of 1/256 among 24 sides), they say nothing either
 * way, and the culprit says its thread is not ruled out (other_untested),
 * as where they are not tested at all. */
static void test_thread_not_ruled_out(void** state) {
  (void)state;
  job* j = malloc(sizeof *j);
  for (int net_steps = 32; net_steps <= 400; net_steps += 368) {
    uint64_t seed = 21;
    memset(j, 0, sizeof *j);
    run_steps(j, 400, -1, 1, &seed);
    for (int i = 0; i < EDGES; i++) {
      const int own = i == 4 || i == 5; /* rank 2's send and receive */
      const uint64_t half = (uint64_t)(own ? net_steps : 400) / 2;
      memset(j->h[i][PT_MS_NET], 0, sizeof j->h[i][PT_MS_NET]);
      j->h[i][PT_MS_NET][pt_metric_time_bucket(1000000)] = half;
      j->h[i][PT_MS_NET][pt_metric_time_bucket(2000000)] = half;
      if (!own) continue;
      memset(j->h[i][PT_MS_GPU], 0, sizeof j->h[i][PT_MS_GPU]);
      for (int k = 0; k < 400; k++) j->h[i][PT_MS_GPU][pt_metric_time_bucket((uint64_t)(draw(&seed) * 1.5))]++;
    }
    pt_mset s;
    snapshot(j, 1, &s);
    pt_ms_verdict v;
    assert_int_equal(pt_mset_slow(&s, &v), 0);
    assert_int_equal(v.tested, 2 * EDGES); /* rank 2's network sides are tested either way */
    assert_int_equal(v.n_culprits, 1);
    assert_int_equal(v.culprits[0].rank, 2);
    assert_int_equal(v.culprits[0].side, PT_MS_GPU);
    assert_int_equal(v.culprits[0].other_untested, net_steps == 32);
    pt_ms_verdict_free(&v);
    pt_mset_free(&s);
  }
  free(j);
}

typedef struct {
  int slow[4], recovered[4];
} sides_said;

static void on_side(void* arg, int what, const pt_watch_mark* m, int64_t now) {
  (void)now;
  sides_said* s = arg;
  if (m->kind != PT_WATCH_CULPRIT) return;
  assert_int_equal(m->rank, 2);
  if (what == PT_WATCH_SLOW) s->slow[m->side]++;
  else s->recovered[m->side]++;
}

/* A rank's proxy thread said slow covers its GPU: windows that name only
 * its GPU where its own network waits could not be tested (as at a job's
 * end, when its edges' network steps stop first) say no new culprit; once
 * its network waits are tested again and are healthy, its GPU alone is
 * slow: that is said, and the thread recovers. */
static void test_watch_thread(void** state) {
  (void)state;
  uint64_t seed = 13;
  job* j = calloc(1, sizeof *j);
  pt_watch w;
  pt_watch_init(&w, 10);
  sides_said s = {0};
  int untested = 0; /* windows that named rank 2's GPU with its network untested */
  for (int t = 1; t <= 140; t++) {
    if (t <= 20 || t > 100) {
      run_steps(j, 100, -1, 1, &seed);
    } else if (t <= 50) {
      run_fault(j, 100, SLOW_HOST, 2, 1.5, &seed);
    } else if (t <= 65) { /* rank 2's GPU waits slow, its network waits not timed */
      for (int i = 0; i < EDGES; i++)
        for (int k = 0; k < 100; k++) {
          const int own = edge_rank(i) == 2;
          j->h[i][PT_MS_GPU][pt_metric_time_bucket((uint64_t)(draw(&seed) * (own ? 1.5 : 1)))]++;
          if (!own) j->h[i][PT_MS_NET][pt_metric_time_bucket((uint64_t)draw(&seed))]++;
          j->steps[i]++;
        }
    } else {
      run_fault(j, 100, SLOW_GPU, 2, 1.5, &seed);
    }
    pt_mset now;
    snapshot(j, t, &now);
    assert_int_equal(pt_watch_update(&w, &now, on_side, &s), 1);
    pt_mset_free(&now);
    for (size_t k = 0; k < w.last.n_culprits; k++)
      untested += w.last.culprits[k].side == PT_MS_GPU && w.last.culprits[k].other_untested;
    if (t == 65) { /* named, and absorbed by the thread */
      assert_true(untested >= 2);
      assert_int_equal(s.slow[PT_MS_GPU], 0);
    }
  }
  printf("thread: said %d, recovered %d; GPU: said %d, recovered %d; network: said %d\n", s.slow[PT_MS_HOST],
         s.recovered[PT_MS_HOST], s.slow[PT_MS_GPU], s.recovered[PT_MS_GPU], s.slow[PT_MS_NET]);
  assert_int_equal(s.slow[PT_MS_HOST], 1);
  assert_int_equal(s.recovered[PT_MS_HOST], 1);
  assert_int_equal(s.slow[PT_MS_GPU], 1);
  assert_int_equal(s.recovered[PT_MS_GPU], 1);
  assert_int_equal(s.slow[PT_MS_NET], 0);
  pt_watch_free(&w);
  free(j);
}

typedef struct {
  int changed, recovered, other;
  int64_t first_said, first_since, last_recovered;
} changes;

static void on_change(void* arg, int what, const pt_watch_mark* m, int64_t now) {
  changes* c = arg;
  if (m->kind != PT_WATCH_CHANGE) {
    c->other++;
    return;
  }
  if (what == PT_WATCH_SLOW) {
    if (!c->changed++ || now < c->first_said) c->first_said = now;
    if (!c->first_since || m->since_ns < c->first_since) c->first_since = m->since_ns;
    assert_true(m->factor >= PT_MS_MIN_FACTOR && m->factor < 1.9); /* a window may straddle the change */
    assert_true(m->base_ns > 500000 && m->base_ns < 2000000);
  } else {
    c->recovered++;
    if (now > c->last_recovered) c->last_recovered = now;
  }
}

/* The watch: healthy 60 s, every edge 1.5x from 60 s to 160 s (longer
 * than the healthy past, so that the history comes to hold more slow steps
 * than healthy ones), healthy again after: each network side said changed
 * once, within a window and a confirmation, never a culprit, and each
 * recovered once, once its window is back to its median before. */
static void test_watch_change(void** state) {
  (void)state;
  uint64_t seed = 13;
  job* j = calloc(1, sizeof *j);
  pt_watch w;
  pt_watch_init(&w, 10);
  changes c = {0};
  for (int t = 1; t <= 200; t++) {
    run_steps(j, 100, t > 60 && t <= 160 ? ALL : -1, 1.5, &seed);
    pt_mset now;
    snapshot(j, t, &now);
    assert_int_equal(pt_watch_update(&w, &now, on_change, &c), 1);
    pt_mset_free(&now);
    if (t <= 60) assert_int_equal(c.changed, 0);
    if (t == 160) assert_int_equal(c.recovered, 0); /* held to its median before, not to its history */
  }
  printf("changed: %d edge sides, first seen %.0f s, said %.0f s; recovered %d, last %.0f s\n", c.changed,
         (double)c.first_since / 1e9, (double)c.first_said / 1e9, c.recovered, (double)c.last_recovered / 1e9);
  assert_int_equal(c.other, 0);
  assert_int_equal(c.changed, EDGES);
  assert_int_equal(c.recovered, EDGES);
  assert_true(c.first_since > 60 * (int64_t)1000000000 && c.first_since <= 70 * (int64_t)1000000000);
  assert_true(c.last_recovered > 160 * (int64_t)1000000000 && c.last_recovered <= 175 * (int64_t)1000000000);
  pt_watch_free(&w);
  free(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_buckets),         cmocka_unit_test(test_binomial_tail), cmocka_unit_test(test_mild_slow_link),
      cmocka_unit_test(test_not_enough_data), cmocka_unit_test(test_too_few_samples), cmocka_unit_test(test_no_false_alarms), cmocka_unit_test(test_since),
      cmocka_unit_test(test_watch),           cmocka_unit_test(test_watch_rewrites), cmocka_unit_test(test_changed),
      cmocka_unit_test(test_watch_change),    cmocka_unit_test(test_slow_edge_without_culprit),
      cmocka_unit_test(test_side),            cmocka_unit_test(test_watch_thread),
      cmocka_unit_test(test_gpu_carried_by_network), cmocka_unit_test(test_gpu_one_edge_able),
      cmocka_unit_test(test_ring_of_three), cmocka_unit_test(test_thread_not_ruled_out),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
