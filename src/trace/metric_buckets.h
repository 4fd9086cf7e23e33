/*
 * metric_buckets.h — the buckets of the step-time histograms, one formula
 * for the plugin that fills them (metrics.c) and the analyzer that reads
 * them back from the files (src/analyze/mset.c): <= 128 ns, then four per
 * octave, each holding (lower, upper], to 2^37 ns, and one above.
 */
#ifndef PT_TRACE_METRIC_BUCKETS_H
#define PT_TRACE_METRIC_BUCKETS_H

#include <stdint.h>

#define PT_METRIC_TIME_BUCKET_COUNT 122

static inline int pt_metric_time_bucket_of(uint64_t ns) {
  if (ns <= 128) return 0;
  const uint64_t x = ns - 1; /* bucket (lo, hi]: an exact bound falls in its own bucket */
  const int e = 63 - __builtin_clzll(x);
  if (e >= 37) return PT_METRIC_TIME_BUCKET_COUNT - 1;
  return 1 + (e - 7) * 4 + (int)((x >> (e - 2)) & 3);
}

static inline uint64_t pt_metric_time_bound_ns(int b) {
  if (b <= 0) return 128;
  if (b >= PT_METRIC_TIME_BUCKET_COUNT - 1) return UINT64_MAX;
  const int e = 7 + (b - 1) / 4, sub = (b - 1) % 4;
  return ((uint64_t)(5 + sub) << e) / 4;
}

#endif
