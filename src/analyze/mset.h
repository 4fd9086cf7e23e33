/*
 * mset.h — the step metrics files of a job (docs/metrics.md) read back, and
 * the slow edges named from them: what `proxytrace top` shows, what
 * `proxytrace analyze` reports as "slow", and what `analyze --follow`
 * judges window by window.
 *
 * Evidence: each edge's histograms of GPU wait and network time per step
 * (the plugin's buckets, four per octave), kept sparse. Statistics: the
 * edges it should resemble — same communicator, direction, granularity
 * (per peer or per channel) and size class (bytes per step, by octave) —
 * pooled, the edge itself left out; an edge needs PT_MS_MIN_SAMPLES steps
 * and its group PT_MS_MIN_EDGES such edges, or it is "not enough data
 * yet"; a group whose median step time (that side) is under
 * PT_MS_MIN_SPAN_NS is "too short" (the steps of an unpaced emulator, or
 * of a thread's own scheduling). Test: the share of its steps above the bucket of the others'
 * median, against the others' own share there (the binomial tail of
 * slow_test.c, Bonferroni over every edge and side tested, AN_SLOW_ALPHA
 * per judgement), and a median at least PT_MS_MIN_FACTOR times the
 * others': a fixed factor no longer decides, the data do. Slow edges are
 * then explained:
 *
 *   GPU-side      a rank whose own edges wait for its GPU: the culprit is
 *                 that rank's GPU (a GPU wait is the rank's own) — two
 *                 slow edges at least, or all it has that could be found slow
 *                 (an edge too short of samples to pass the test whatever
 *                 its steps says nothing either way); an edge slower in the
 *                 network by the square of its GPU factor is not its GPU's
 *                 evidence (a network that hands the GPU one step at a
 *                 time makes each step's wait its own).
 *   host-side     a rank named on one side (GPU, or network below) whose
 *                 own records are slow on the other side too, every own
 *                 edge there (two at least) at the confirmation level and
 *                 by the square root of the first side's factor at least:
 *                 every wait its proxy thread times is long, GPU and
 *                 network alike — a starved or descheduled proxy thread
 *                 (a slow GPU leaves its own network waits alone, a slow
 *                 NIC its GPU waits; both at once on one rank look the
 *                 same).
 *   network-side  the rank that most network-slow edges touch, as sender
 *                 or receiver (a slow NIC slows both ends of every transfer
 *                 through it), two slow edges at least, each confirmed by
 *                 the other end's record of the same transfers (both ends
 *                 time a slow transfer; one end alone is that rank's thread,
 *                 or its peer's GPU); when its slow edges all go to one peer, the
 *                 link between the two (either end may be the slow one).
 *                 Network time into or out of a rank whose GPU is slow is
 *                 left out: a receiver waits for a slow sender's data, a
 *                 sender for a slow receiver's buffers.
 *
 * Everything the test needs adds up: histograms are counts, a group's pool
 * is their sum, a window is a later file's counts minus an earlier one's
 * (pt_mset_since), so sets read apart (per node) merge by concatenation.
 */
#ifndef PT_ANALYZE_MSET_H
#define PT_ANALYZE_MSET_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/memory.h"

enum { PT_MS_GPU = 0, PT_MS_NET = 1, PT_MS_STEP = 2, PT_MS_TIMES = 3 };
/* A culprit's side (never an index of the times): its proxy thread, every
 * wait it times long, GPU and network alike. */
enum { PT_MS_HOST = PT_MS_TIMES };

/* The plugin's time buckets: <= 128 ns, four per octave to 2^37 ns, one
 * above (src/format/format.h, the plugin's own formula). */
#define PT_MS_BUCKETS 122
#define PT_MS_MAX_TIE 8 /* the tied peers a network-side culprit lists */
/* Bucket b's upper bound in ns (UINT64_MAX above the last), and the bucket
 * of an upper bound as the files write it (-1: not one of them). */
uint64_t pt_ms_bucket_upper_ns(int b);
int pt_ms_bucket_of(uint64_t upper_ns);

/* A sparse histogram: n entries from `at` of the set's `buckets`, each
 * (bucket << 56) | count, in bucket order. */
typedef struct {
  uint32_t at, n;
} pt_ms_hist;

/* One edge line of a metrics file. */
typedef struct {
  uint64_t comm;
  char host[64];
  long pid;
  int rank, peer, channel, send; /* channel -1: the (peer, direction) edge */
  int64_t time_ns;               /* the file's export time */
  uint64_t ops, steps, sized_steps, bytes, busy_ns, throughput, credit_ns;
  uint64_t count[PT_MS_TIMES], sum_ns[PT_MS_TIMES], p50_ns[PT_MS_TIMES], p99_ns[PT_MS_TIMES];
  pt_ms_hist hist[PT_MS_TIMES];
} pt_ms_edge;

typedef struct {
  an_mem mem;        /* what the set holds ({0}: nothing yet) */
  pt_ms_edge* e;
  size_t n, cap;
  uint64_t* buckets; /* the edges' histograms (pt_ms_hist) */
  size_t n_buckets, cap_buckets;
  size_t files;      /* metrics headers read */
  size_t bad_lines;  /* lines that are not metrics JSON */
  size_t not_regular; /* files of a metrics name that are not regular files: not read */
  /* the header being read */
  uint64_t comm;
  char host[64];
  long pid;
  int rank;
  int64_t time_ns;
} pt_mset;

/* One JSON line of a metrics file (others are ignored): 1 if it was a
 * metrics line, 0 if not (a line cut short is not: the plugin writes each
 * whole), -1 out of memory. */
int pt_mset_line(pt_mset* s, const char* line);
/* Every proxytrace-metrics-*.jsonl of `dir` (or `path` itself if it is
 * such a file) that is a regular file (others are counted in not_regular,
 * and a `path` that is neither a folder nor a regular file is ENOTDIR);
 * a line longer than AN_MAX_LINE is skipped as a bad line. 0, or -1 with
 * errno. */
int pt_mset_read(pt_mset* s, const char* path);
void pt_mset_free(pt_mset* s);

/* The steps of `now` since `then` (earlier files of the same job): into
 * `out` (a fresh set), each edge of `now` less the same edge of `then`
 * (counts, sums, histograms; quantiles from the difference); an edge not
 * in `then` whole, one whose counts went down (a new process) whole too.
 * 0, or -1 out of memory. */
int pt_mset_since(const pt_mset* now, const pt_mset* then, pt_mset* out);

/* Each edge's ratio of `which` (PT_MS_*) p50 to the median of its
 * comparable edges (0 when it has none): ratio[i] for s->e[i]. 0, or -1
 * out of memory. */
int pt_mset_ratios(const pt_mset* s, int which, double* ratio);

typedef struct {
  uint64_t comm;
  int rank, peer, channel, send;
  int side;        /* PT_MS_GPU or PT_MS_NET */
  double factor;   /* its median over the comparable edges' (interpolated in the buckets) */
  uint64_t p50_ns, median_ns;
  uint64_t samples, above; /* its steps, and those above the others' median bucket
                              (the test counts up to PT_MS_STEPS_PER_SAMPLE of an op's as one) */
  double share;    /* the others' share above it */
  double tail;     /* the chance of `above` or more at `share` */
  int able;        /* it had the samples to be found slow: all of them above would pass the test */
} pt_ms_slow_edge;

typedef struct {
  uint64_t comm;
  int rank;        /* the slow GPU, or the rank the slow network edges meet at */
  int peer;        /* a slow link between rank and peer; -1 */
  int side;        /* PT_MS_GPU, PT_MS_NET or PT_MS_HOST */
  int other_untested; /* GPU or network: none of its own edges on the other side
                         could have been found slow (untested, or too few samples),
                         so its proxy thread is not ruled out */
  double factor;   /* the median factor of its edges */
  size_t edges;    /* its slow edges */
  char host[64];
  long pid;
  /* Network side, several peers: those of its peers with as many slow
   * network edges as it has (before any was explained) — their own NICs
   * explain the edges they share with it as well, so the records cannot
   * tell which side is slow (two ranks of one node talking only to two of
   * another, one side slow). */
  int tie[PT_MS_MAX_TIE];
  int n_tie;
} pt_ms_culprit;

typedef struct {
  an_mem mem;      /* what the verdict holds */
  pt_ms_slow_edge* edges;
  size_t n_edges;
  pt_ms_culprit* culprits;
  size_t n_culprits, cap_culprits;
  /* what it had: (edge, side) pairs tested, and those left out for too
   * few steps of their own or too few comparable edges */
  size_t tested, few_samples, few_edges, short_edges;
  /* per side (PT_MS_GPU, PT_MS_NET): sides tested, and those of them
   * with the samples to be found slow (all of them above would pass) */
  size_t tested_side[2], able_side[2];
  uint64_t short_median_ns; /* the longest median of a group too short to judge */
  /* per edge of the set: bit 1 << side set when that side of it could
   * have been found slow (tested, with samples enough that all of them
   * slow would pass), so that finding nothing there says it is not; NULL:
   * none could */
  unsigned char* able;
} pt_ms_verdict;

/* Whether v judged anything: a side tested that could have been found
 * slow. Tested sides none of which could (too few samples to stand out
 * beyond chance among the sides tested, however slow) say nothing. */
static inline int pt_ms_judged(const pt_ms_verdict* v) { return v->able_side[0] + v->able_side[1] > 0; }

#define PT_MS_MIN_STEPS 8      /* an edge with fewer steps is not ranked (top, --html) */
#define PT_MS_MIN_EDGES 3      /* nor is a group with fewer edges */
/* The network side of a group is judged from 4 edges: a slow NIC slows two
 * edges of each group of a ring (its send and the send into it), and the
 * others' median of an edge of 3 is then half slow */
#define PT_MS_MIN_NET_EDGES 4
#define PT_MS_MIN_SAMPLES 32   /* steps of an edge's side before any claim on it */
#define PT_MS_MIN_FACTOR 1.1   /* and a median at least this many times the others' */
#define PT_MS_MIN_SPAN_NS 20000 /* and the others' median this long: shorter is the proxy thread's own noise */
#define PT_MS_STEPS_PER_SAMPLE 4 /* an op's steps, up to this many, are one sample */
#define PT_MS_CONFIRM 0.05     /* the other end of a network-slow edge confirms it at this tail */

/* Names the slow edges and their culprits (aggregate edges only; channel
 * edges are listed with their side when slow). 0, or -1 out of memory. */
int pt_mset_slow(const pt_mset* s, pt_ms_verdict* v);
/* The same at a chance `alpha` of a false claim and a floor `min_factor`
 * (pt_mset_slow: 0.01 and PT_MS_MIN_FACTOR). */
int pt_mset_judge(const pt_mset* s, double alpha, double min_factor, pt_ms_verdict* v);
/* An edge side's median, interpolated within its bucket as the test's
 * medians are (p50_ns is a bucket's bound). */
double pt_ms_median_ns(const pt_mset* s, const pt_ms_edge* e, int side);

/* The edges of `win` slower than their own history `before` (the same
 * edges' steps before the window; a change point: healthy for an hour,
 * slow since): each aggregate edge side with PT_MS_MIN_SAMPLES steps in
 * both, of the same size class in both (bytes per step by octave: other
 * transfers are not its history), whose history median is
 * PT_MS_MIN_SPAN_NS at least, tested by the same test with its own earlier
 * steps as the others, Bonferroni over the sides tested. It finds what
 * the comparable edges cannot: every edge of a communicator slowed
 * together (a GPU or intra-node link with no network edge of its own
 * holds up a whole ring), or a group of two. It names edges only (a slow
 * edge's factor is over its own earlier median, median_ns): which end or
 * side caused a change is the comparable edges' to say. 0, or -1 out of
 * memory. */
int pt_mset_changed(const pt_mset* win, const pt_mset* before, double alpha, double min_factor, pt_ms_verdict* v);
/* Why the verdict judged nothing, or no network wait ("not enough data
 * yet", "too few samples", …); "" when it judged both sides. */
void pt_ms_verdict_words(const pt_ms_verdict* v, char* buf, size_t n);
/* Rank `rank` of communicator `comm` in the judgement: 1 when one of its
 * edges (its own; with as_peer, also those whose far end it is) could have
 * been found slow on a side in `sides` (1 << PT_MS_GPU, 1 << PT_MS_NET), 0
 * when it has edges and none could (too few samples to stand out beyond
 * chance, however slow), -1 when it has no edge in s. */
int pt_ms_rank_able(const pt_mset* s, const pt_ms_verdict* v, uint64_t comm, int rank, unsigned sides,
                    int as_peer);
/* The tested edge sides that could not have been found slow however slow
 * (too few samples), beside a judgement: a finding of nothing does not
 * clear them. */
static inline size_t pt_ms_unable(const pt_ms_verdict* v) {
  const size_t able = v->able_side[0] + v->able_side[1];
  return v->tested > able ? v->tested - able : 0;
}
/* What the judgement had, as metrics_judgement's "state" in --json:
 * "judged", "gpu_only", "too_few_samples", "too_short" or "not_enough_data"
 * (pt_ms_verdict_words gives the reason of each but the first). */
const char* pt_ms_verdict_state(const pt_ms_verdict* v);
void pt_ms_verdict_free(pt_ms_verdict* v);

#endif
