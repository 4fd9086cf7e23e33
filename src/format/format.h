/*
 * format.h — the facts of the files the plugin writes and the analyzer
 * reads (docs/dump-json.md, docs/metrics.md), in one place: the schema
 * numbers, the names of counters, drop reasons, triggers and step units,
 * and the buckets of the step-time histograms. The plugin (src/trace,
 * src/plugin) writes with them and the analyzer (src/analyze) reads with
 * them; neither reaches into the other's code for them.
 *
 * Names come as X-macros, X(index, "name"), so that each side builds the
 * table it needs (an array of strings, the plugin's length-prefixed names,
 * literals pasted into a format) from one list.
 */
#ifndef PT_FORMAT_FORMAT_H
#define PT_FORMAT_FORMAT_H

#include <stdint.h>

/* A number as a string literal: PT_FORMAT_STR(PT_FORMAT_DUMP_SCHEMA) is "1". */
#define PT_FORMAT_STR_(x) #x
#define PT_FORMAT_STR(x) PT_FORMAT_STR_(x)

/* The "schema" of a dump's and a metrics file's header line. A reader takes
 * a newer schema for the fields of its own. */
#define PT_FORMAT_DUMP_SCHEMA 1
#define PT_FORMAT_METRICS_SCHEMA 1

/* The step counters of an op, in the order of RCCL's ProxyCounterTypes,
 * with their JSON names ("counters" of an op line, "lastCounter"). */
#define PT_FORMAT_COUNTER_COUNT 11
#define PT_FORMAT_COUNTERS(X)                                                                        \
  X(0, "posted") X(1, "kernelCopyReady") X(2, "rtrRecv") X(3, "rtsSend") X(4, "received")           \
  X(5, "transmitted") X(6, "flushed") X(7, "done") X(8, "recvTail") X(9, "tailOrHead")              \
  X(10, "fifoSzOrHeadCache")

/* The plugin's drop counters ("drops" of a dump header), in its order. */
#define PT_FORMAT_DROP_COUNT 11
#define PT_FORMAT_DROPS(X)                                                                           \
  X(0, "opsDropped") X(1, "opsReclaimed") X(2, "zeroStepOps") X(3, "staleHandle") X(4, "badHandle") \
  X(5, "untrackedUpdate") X(6, "badCounterKind") X(7, "badState") X(8, "foreignPid")                \
  X(9, "wrongContext") X(10, "opsOverBudget")

/* What made a dump ("trigger" of its header), in the plugin's order. */
#define PT_FORMAT_TRIGGER_COUNT 6
#define PT_FORMAT_TRIGGERS(X) \
  X(0, "stall") X(1, "signal") X(2, "periodic") X(3, "finalize") X(4, "hook") X(5, "api")

/* The unit of an op's nSteps and step counters ("stepUnit"): NCCL's raw
 * steps, or network transfers. */
#define PT_FORMAT_UNIT_RAW_STEPS "rawSteps"
#define PT_FORMAT_UNIT_TRANSFERS "transfers"

/* The buckets of the step-time histograms of a metrics file: <= 128 ns,
 * then four per octave, each holding (lower, upper], to 2^37 ns, and one
 * above. The plugin fills them (src/trace/metrics.c); the analyzer reads
 * the bounds back from the files and checks them against this formula. */
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
