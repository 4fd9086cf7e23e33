/*
 * bench_analyze.c — one analysis of the dumps under a path, with the
 * figures of the scale check: wall time, lines and MB read per second of
 * wall time and per second of one core (the process's user and system
 * time), the time of the analysis after the reading, the memory the
 * analysis held at its peak and at the end (counted by the library), and
 * the process's peak resident set.
 *
 *   bench_analyze LABEL PATH...
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "proxytrace/analyze.h"
#include "../tools/heap_tune.h" /* as the command sets it */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_analyze LABEL PATH...\n");
    return 2;
  }
  pt_heap_tune_for_analysis();
  const double t0 = now();
  pt_analysis* a;
  int rc = pt_analysis_new(&a);
  for (int i = 2; i < argc && rc == 0; i++) rc = pt_analysis_add_path(a, argv[i]);
  if (rc != 0 || pt_analysis_run(a) != 0) {
    fprintf(stderr, "bench_analyze: the analysis failed\n");
    return 1;
  }
  const double wall = now() - t0;
  pt_analysis_stats st;
  pt_analysis_get_stats(a, &st);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                     (double)ru.ru_stime.tv_usec / 1e6;
  const pt_culprit* c = pt_analysis_culprit(a, 0);
  printf("  %-11s %6llu files %9llu lines %8.1f MB  %7.3f s wall  %5.2f M lines/s  %6.0f MB/s  per core: %5.2f M lines/s "
         "%6.0f MB/s  analysis %6.3f s  peak %7.1f MiB held (%.1f at the end), RSS %7.1f MiB  %s%s%s\n",
         argv[1], (unsigned long long)st.files, (unsigned long long)st.lines, (double)st.bytes / 1e6, wall,
         (double)st.lines / wall / 1e6, (double)st.bytes / wall / 1e6, cpu > 0 ? (double)st.lines / cpu / 1e6 : 0,
         cpu > 0 ? (double)st.bytes / cpu / 1e6 : 0, st.analyze_seconds, (double)st.peak_bytes / (1 << 20),
         (double)st.bytes_held / (1 << 20), (double)ru.ru_maxrss / 1024, pt_verdict_name(pt_analysis_verdict(a)),
         c ? ": " : "", c ? c->cause_name : "");
  pt_analysis_free(a);
  return 0;
}
