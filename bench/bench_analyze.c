/*
 * bench_analyze.c — one analysis of the dumps under a path, with the
 * figures of the scale check: lines read per second, time to parse and to
 * analyze, memory the analysis held at its peak (counted by the library),
 * and the process's peak resident set.
 *
 *   bench_analyze LABEL PATH
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "proxytrace/analyze.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bench_analyze LABEL PATH\n");
    return 2;
  }
  pt_analysis* a;
  if (pt_analysis_new(&a) != 0 || pt_analysis_add_path(a, argv[2]) != 0 || pt_analysis_run(a) != 0) {
    fprintf(stderr, "bench_analyze: the analysis failed\n");
    return 1;
  }
  pt_analysis_stats st;
  pt_analysis_get_stats(a, &st);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double total = st.parse_seconds + st.analyze_seconds;
  const pt_culprit* c = pt_analysis_culprit(a, 0);
  printf("  %-10s %6llu files %9llu lines %7.1f MB  %7.3f s  %10.0f lines/s  analysis %6.3f s  peak %7.1f MiB held, "
         "RSS %6.1f MiB  %s%s%s\n",
         argv[1], (unsigned long long)st.files, (unsigned long long)st.lines, (double)st.bytes / 1e6, total,
         st.parse_seconds > 0 ? (double)st.lines / st.parse_seconds : 0, st.analyze_seconds,
         (double)st.peak_bytes / (1 << 20), (double)ru.ru_maxrss / 1024, pt_verdict_name(pt_analysis_verdict(a)),
         c ? ": " : "", c ? c->cause_name : "");
  pt_analysis_free(a);
  return 0;
}
