/*
 * verdict.h — the verdict: culprits ordered across communicators (origin.c)
 * and the run that makes every judgement in turn and decides (verdict.c,
 * pt_analysis_run of include/proxytrace/analyze.h).
 */
#ifndef PT_ANALYZE_VERDICT_H
#define PT_ANALYZE_VERDICT_H

#include "analyze/judge.h"

/* Culprits across communicators: a rank that is only absent where its
 * process is stuck in another communicator follows from the culprit there;
 * origins first (origin.c). */
int an_origin(pt_analysis* a);
/* "communicator NAME (HASH)" of communicator ci, or "communicator HASH"
 * where no dump names it (origin.c). */
void an_comm_words(const pt_analysis* a, size_t ci, char* out, size_t n);

#endif
