/*
 * mset.h — the step metrics files of a job (docs/metrics.md) read back, and
 * the slow edges named from them: what `proxytrace top` shows and what
 * `proxytrace analyze` reports as "slow".
 *
 * A slow edge is one whose median (p50) GPU wait or network time is at
 * least `factor` times the median of the same figure over the comparable
 * edges — same communicator, same direction, same channel granularity —
 * with enough steps to mean something. Slow edges are then explained:
 *
 *   GPU-side      a rank whose own edges wait for its GPU: the culprit is
 *                 that rank's GPU (a GPU wait is the rank's own) — two
 *                 slow edges at least, or all it has.
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
 */
#ifndef PT_ANALYZE_MSET_H
#define PT_ANALYZE_MSET_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/memory.h"

enum { PT_MS_GPU = 0, PT_MS_NET = 1, PT_MS_STEP = 2, PT_MS_TIMES = 3 };

/* One edge line of a metrics file. */
typedef struct {
  uint64_t comm;
  char host[64];
  long pid;
  int rank, peer, channel, send; /* channel -1: the (peer, direction) edge */
  int64_t time_ns;               /* the file's export time */
  uint64_t ops, steps, sized_steps, bytes, busy_ns, throughput, credit_ns;
  uint64_t count[PT_MS_TIMES], sum_ns[PT_MS_TIMES], p50_ns[PT_MS_TIMES], p99_ns[PT_MS_TIMES];
} pt_ms_edge;

typedef struct {
  an_mem mem;        /* what the set holds ({0}: nothing yet) */
  pt_ms_edge* e;
  size_t n, cap;
  size_t files;      /* metrics headers read */
  size_t bad_lines;  /* lines that are not metrics JSON */
  /* the header being read */
  uint64_t comm;
  char host[64];
  long pid;
  int rank;
  int64_t time_ns;
} pt_mset;

/* One JSON line of a metrics file (others are ignored): 1 if it was a
 * metrics line, 0 if not, -1 out of memory. */
int pt_mset_line(pt_mset* s, const char* line);
/* Every proxytrace-metrics-*.jsonl of `dir` (or `path` itself if it is
 * such a file). 0, or -1 with errno. */
int pt_mset_read(pt_mset* s, const char* path);
void pt_mset_free(pt_mset* s);

/* Each edge's ratio of `which` (PT_MS_*) p50 to the median of its
 * comparable edges (0 when it has none): ratio[i] for s->e[i]. 0, or -1
 * out of memory. */
int pt_mset_ratios(const pt_mset* s, int which, double* ratio);

typedef struct {
  uint64_t comm;
  int rank, peer, channel, send;
  int side;        /* PT_MS_GPU or PT_MS_NET */
  double factor;   /* p50 over the median of comparable edges */
  uint64_t p50_ns, median_ns;
} pt_ms_slow_edge;

typedef struct {
  uint64_t comm;
  int rank;        /* the slow GPU, or the rank the slow network edges meet at */
  int peer;        /* a slow link between rank and peer; -1 */
  int side;        /* PT_MS_GPU or PT_MS_NET */
  double factor;   /* the median factor of its edges */
  size_t edges;    /* its slow edges */
  char host[64];
  long pid;
} pt_ms_culprit;

typedef struct {
  an_mem mem;      /* what the verdict holds */
  pt_ms_slow_edge* edges;
  size_t n_edges;
  pt_ms_culprit* culprits;
  size_t n_culprits, cap_culprits;
} pt_ms_verdict;

#define PT_MS_MIN_STEPS 8   /* an edge with fewer steps is not compared */
#define PT_MS_MIN_EDGES 3   /* nor is a group with fewer edges */

/* Names the slow edges and their culprits (aggregate edges only; channel
 * edges are listed with their side when slow). 0, or -1 out of memory. */
int pt_mset_slow(const pt_mset* s, double factor, pt_ms_verdict* v);
void pt_ms_verdict_free(pt_ms_verdict* v);

#endif
