/*
 * judge.h — the judgements: each reads the evidence (evidence.h) and adds
 * culprits, stuck edges or gaps to the analysis.
 *
 *   pair.c          sends paired with receives
 *   explain.c       why each stuck op waits, and the chains to the culprits
 *   desync.c        ranks that disagree about their calls
 *   slow.c          links much slower than their peers (ns timestamps)
 *   slow_metrics.c  slow edges from the step metrics files
 *   complete.c      what the input could not show: gaps, possible culprits
 *   watch.c         a running job's step metrics, window by window (watch.h)
 */
#ifndef PT_ANALYZE_JUDGE_H
#define PT_ANALYZE_JUDGE_H

#include "analyze/evidence.h"

/* pair.c / explain.c / slow.c, in that order, from pt_analysis_run. */
int an_pair(pt_analysis* a);
int an_explain(pt_analysis* a);
int an_slow(pt_analysis* a);
/* The slow-edge judgement's state in words ("" when judged), for the
 * reports and the comparison with a ground truth. */
void an_slow_judgement_words(const pt_analysis* a, char* buf, size_t n);

/* A culprit of a slow job (cause PT_CAUSE_SLOW_LINK until the caller says
 * otherwise), with the host and pid of the rank's dump if there is one. */
an_culprit* an_slow_culprit(pt_analysis* a, uint64_t comm, int rank);
int an_slow_tied(pt_analysis* a, an_culprit* q, const int* peers, int n);
void an_slow_tied_words(an_culprit* q);
/* Removes the culprits `drop` says, keeping the others' order. */
void an_drop_culprits(pt_analysis* a, int (*drop)(const pt_analysis* a, const an_culprit* q));
/* slow_metrics.c: slow edges from the step metrics files, when there are
 * some; they time every step, so they replace the slow ranks op durations
 * suggested. */
int an_slow_metrics(pt_analysis* a);

/* After the explanation: the ranks of a communicator that called another
 * operation than their peers at the same place of their calls (mismatch),
 * that never called the one their peers are in (not_entered), or whose
 * GPU never took it up where their peers' did (stopped). 0 or -1 (memory). */
int an_desync(pt_analysis* a);
/* The most collective calls any rank of c made (its progress lines); 0:
 * none said (desync.c). */
int64_t an_top_call(const an_comm* c);

/* complete.c: what the input could not show. an_complete (after the
 * verdict) lists the gaps, marks the culprits they touch as possible, and
 * turns a verdict that found nothing into "incomplete" when there are
 * gaps. */
int an_complete(pt_analysis* a);
/* The newest of a communicator's ranks' latest dumps (their time), 0 none;
 * and whether rank r's latest dump is stale against it: older by more
 * than the stall time (the analysis's, else the dump's, else 1 s), and
 * not a whole finalize dump (final: its communicator was destroyed
 * there). The milliseconds it is behind, and the stall time, in
 * out[0] and out[1] (out may be NULL). */
int64_t an_comm_newest(const an_comm* c);
int an_rank_stale(const pt_analysis* a, const an_comm* c, int r, int64_t newest, int64_t out[2]);
/* "1 cut dump, 63 ranks without a dump" */
void an_gap_summary(const pt_analysis* a, char* buf, size_t n);
void an_complete_free(pt_analysis* a);

/* slow.c: an OK verdict beside slow edges that name no culprit (one edge alone,
 * an end that does not agree): "1 edge is slower than ..." into buf, and
 * how many; 0 (buf "") when there are none or the verdict is not OK.
 * buf NULL: the count alone. */
size_t an_unexplained_slow(const pt_analysis* a, char* buf, size_t n);
/* The summary of an OK verdict, in the text report's headline and the JSON
 * `summary` alike: "64/64 ranks finished cleanly" or "no op is stuck",
 * then what was found or not judged of slowness and why ("no link is
 * slow", "slow links not judged: too few timed ops …", slow edges that name
 * no culprit; " (listed below)" after those when `listed`). */
void an_ok_words(const pt_analysis* a, char* buf, size_t n, int listed);

#endif
