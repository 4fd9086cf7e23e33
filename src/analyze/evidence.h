/*
 * evidence.h — the evidence stage: what each process wrote, per
 * communicator and rank, and what it proves. The readers (inputs.h) fill
 * it; the judgements (judge.h) read it.
 *
 *   dump.c       a dump as the readers build it; whether it is whole
 *   steps.c      an op's steps in one unit, network transfers
 *   progress.c   a dump's progress lines: the calls made, kernel channels
 *   merge.c      dumps by (communicator, rank): latest, previous, cut
 *   unknown.c    dumps of no known rank; the rounds processes dumped in
 *   comms.c      the per-communicator view: ranks, nodes, stuck items
 *   mset.c       the step metrics files (mset.h, below every stage)
 */
#ifndef PT_ANALYZE_EVIDENCE_H
#define PT_ANALYZE_EVIDENCE_H

#include "analyze/internal.h"

/* dump.c */
an_dump* an_dump_new(pt_analysis* a, uint32_t input, uint32_t line, int format);
void an_dump_free(pt_analysis* a, an_dump* d);
an_op* an_dump_add_op(pt_analysis* a, an_dump* d);
/* Records its header announces that were not read (active and finished
 * counted apart), 0 when none is missing or the header says nothing. */
int64_t an_dump_short(const an_dump* d);
/* Cut, short, or lines of it unreadable. */
int an_dump_damaged(const an_dump* d);

/* steps.c */
/* The unit of op's steps: the record's, the dump's, or what the host is
 * known to send (older dumps name none). */
int an_op_step_unit(const struct an_dump* d, const an_op* op);
/* Raw steps to a network transfer for op (sliceSteps), from what its dump
 * says of the call; 0 when the evidence does not say. */
int an_op_slice_steps(const struct an_dump* d, const an_op* op);
/* op's steps in network transfers: its nSteps (AN_C_COUNT) or a step
 * counter k converted; -1 when the unit or sliceSteps is not known. */
int64_t an_op_transfers(const struct an_dump* d, const an_op* op, int k);
/* A step count v of op (its progress, say) in network transfers, as
 * an_op_transfers; -1 when not known. */
int64_t an_value_transfers(const struct an_dump* d, const an_op* op, int64_t v);
/* The op's steps as JSON members: ,"stepUnit":…,"sliceSteps":…,"transfers":
 * {nSteps and the step counters in network transfers} (null where the unit
 * or sliceSteps is not known) — analyze --records and the Perfetto trace. */
void an_put_steps(FILE* f, const struct an_dump* d, const an_op* op);

/* ---------------------------------------------------------------------------
 * Progress lines (progress.c)
 * ------------------------------------------------------------------------- */

/* A field getter over one line, JSON or text, so that one routine reads
 * both: the integer or string named `key`; -1 / NULL when absent. */
typedef struct an_fields {
  int (*i64)(const struct an_fields* f, const char* key, int64_t* out);
  const char* (*str)(const struct an_fields* f, const char* key, char* buf, size_t n);
  const void* src;
} an_fields;
/* A progress line of `type` ("progress", "coll", "p2p", "kernelCh") into
 * dump `d`. 0, or -1 when out of memory. */
int an_progress_line(pt_analysis* a, an_dump* d, const char* type, const an_fields* f, uint32_t line);
/* The progress line types' name in `s` ("proxytrace coll: …" of a text
 * dump): the type, with *rest after the colon, or NULL. */
const char* an_progress_text_type(const char* s, const char** rest);
/* A text progress line's key=value words as an_fields. */
void an_progress_text_fields(an_fields* f, const char* words);

/* merge.c */
void an_merge(pt_analysis* a, an_dump* d);
void an_merge_empty_rank(pt_analysis* a, const an_dump* d);
void an_merge_free(pt_analysis* a);
uint64_t an_dump_fingerprint(const an_dump* d);
/* Dumps that rotation removed from the files of the latest dumps read
 * (their rotatedDumps, summed over communicators and ranks). */
uint64_t an_rotated_dumps(const pt_analysis* a);
const an_slot* an_slot_find(const pt_analysis* a, uint64_t comm, int rank);

/* unknown.c: a dump of rank -1 is kept as a rank-unknown dump of its
 * communicator; an_cover_unknown (an_build, once the ranks with a dump are
 * known) lets such dumps stand for ranks without one. */
void an_unknown_rank(pt_analysis* a, const an_dump* d);
/* The processes whose dumps name neither their rank nor their communicator
 * (commHash 0: NCCL 2.23-2.26 tell a rank both with its first operation),
 * each (host, pid) once, in the order read: calls fn(host, pid, dumps, arg)
 * and returns how many there are. */
size_t an_no_comm_processes(const pt_analysis* a, void (*fn)(const char* host, int pid, size_t dumps, void* arg),
                            void* arg);
void an_note_round(pt_analysis* a, const an_dump* d); /* every dump with a rank (an_merge) */
void an_cover_unknown(pt_analysis* a, an_comm* c);
void an_unknown_free(pt_analysis* a);

/* comms.c: the per-communicator view (an_comm, an_rank, an_item) of the
 * latest dumps, and node ids by host name. */
int an_build(pt_analysis* a);
int an_host_id(pt_analysis* a, const char* host);

#endif
