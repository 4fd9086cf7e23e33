/*
 * proxytrace/analyze.h — read every rank's proxy dumps, pair each send with
 * its receive, and name the culprit of a hung or slow job.
 *
 * One analysis reads any number of inputs — files or directories of them —
 * in any of the forms the dumps reach a user:
 *
 *   JSON lines   the plugin's dump files (`proxytrace-…-r<rank>-<hash>.jsonl`,
 *                docs/dump-json.md), one object per line;
 *   text         legacy ProxyTrace lines, bare or behind the host logger's
 *                prefix (`host:pid:tid [dev] file:line NCCL WARN …`, with or
 *                without RCCL's `[date time] `), as the plugin's text files,
 *                RCCL's log or a whole job's captured output hold them.
 *
 * Inputs are read as streams, line by line: the analysis keeps, per
 * communicator and rank, the latest dump and the one before it (to tell ops
 * that move from ops that are stuck), never the whole input (unless asked
 * to keep every dump's records, option "all-dumps"). A dump seen
 * twice (a rank's file and its log) counts once. A malformed or cut line is
 * reported with its file and line number and the rest is still read.
 *
 * Then, per communicator: every send (rank r -> peer p, channel c, opCount
 * o) is paired with the receive on p from r on c for o; what is missing is
 * found (ranks that wrote no dump, ranks behind their peers, sends without
 * receives); every stuck op is explained from both sides' counters; the
 * explanations are followed to their origins, which are the culprits.
 * docs/analyze.md has the rules, the causes and the JSON schema.
 *
 * Usage:
 *
 *   pt_analysis* a;
 *   if (pt_analysis_new(&a) != 0) abort();
 *   pt_analysis_add_path(a, "dumps/");          // files and directories
 *   pt_analysis_run(a);
 *   pt_analysis_write_text(a, stdout, 0);       // verdict, culprit, table
 *   int v = pt_analysis_verdict(a);             // PT_VERDICT_*
 *   pt_analysis_free(a);
 *
 * From Python (ctypes) or another language: pt_analysis_json() returns the
 * whole result as one JSON document (free it with pt_analysis_string_free),
 * and the culprit accessors return plain structs.
 *
 * Error convention: functions that can fail return 0 or a negative
 * PT_AN_E* code. An input that cannot be read is not an error of the call:
 * it is recorded with the input (pt_analysis_input) and in the reports; the
 * verdict is PT_VERDICT_UNUSABLE only when no input held a dump.
 *
 * Out of memory: once any allocation of an analysis has failed, it is not
 * whole (a dump or a record may be missing), and it never answers as if it
 * were: that call and every later pt_analysis_add_*, pt_analysis_run and
 * writer return PT_AN_ENOMEM (pt_analysis_json NULL) and write nothing, and
 * the verdict is PT_VERDICT_UNUSABLE; pt_analysis_free still frees it all.
 * A writer's own scratch memory failing fails that call only.
 *
 * Thread safety: one analysis belongs to one thread at a time; different
 * analyses are independent. Nothing here keeps global state.
 *
 * Link: -lproxytrace-analyze (static or shared) and -lm.
 */
#ifndef PROXYTRACE_ANALYZE_H
#define PROXYTRACE_ANALYZE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef PT_EXTERN
#if defined(__GNUC__)
#define PT_EXTERN __attribute__((visibility("default")))
#else
#define PT_EXTERN
#endif
#endif

/* Version of the JSON document pt_analysis_write_json() writes. */
#define PT_ANALYZE_SCHEMA 1

enum {
  PT_AN_OK = 0,
  PT_AN_EINVAL = -1, /* NULL argument, analysis already run, bad option  */
  PT_AN_ENOMEM = -2, /* out of memory: the analysis is not whole (above) */
  PT_AN_EIO = -3,    /* an output could not be written                   */
  PT_AN_EINPUT = -4  /* an output path is one of the inputs: not written */
};

typedef enum {
  PT_VERDICT_OK = 0,      /* nothing stuck, nothing slow                       */
  PT_VERDICT_HANG = 1,    /* ops are stuck                                     */
  PT_VERDICT_SLOW = 2,    /* nothing stuck, but a link is much slower          */
  PT_VERDICT_UNUSABLE = 3, /* no input held a dump                             */
  PT_VERDICT_INCOMPLETE = 4 /* nothing stuck or slow in what was read, but the
                               input cannot show the whole job: a dump cut or
                               short of records, ranks without a dump, a dump
                               older than its peers' (pt_analysis_gap)        */
} pt_verdict;

/* Why a culprit holds the job up (docs/analyze.md, "Causes"). */
typedef enum {
  PT_CAUSE_NONE = 0,
  PT_CAUSE_GPU_NOT_PRODUCING, /* a send waits for its GPU's data, nothing upstream starves it   */
  PT_CAUSE_GPU_NOT_CONSUMING, /* a receive waits for its GPU to consume, nothing downstream holds it */
  PT_CAUSE_NO_RECEIVE_POSTED, /* the receiver posts no buffer, or has no receive op at all      */
  PT_CAUSE_NETWORK,           /* data sent was not received, or a send never completes          */
  PT_CAUSE_RANK_MISSING,      /* the peer wrote no dump (dead, or its dump is not in the inputs) */
  PT_CAUSE_RANK_BEHIND,       /* the peer's records stop before this operation                  */
  PT_CAUSE_SEND_MISSING,      /* the peer has a dump but no record of the send                  */
  PT_CAUSE_CIRCULAR,          /* every stuck op waits on another: a cycle with no origin        */
  PT_CAUSE_SLOW_LINK,         /* a rank's links are much slower than the others'               */
  PT_CAUSE_SLOW_GPU,          /* a rank's GPU is much slower than the others' (step metrics)    */
  PT_CAUSE_MISMATCH,          /* the rank called another operation than its peers at that place */
  PT_CAUSE_NOT_ENTERED,       /* the rank never called the operation its peers are in           */
  PT_CAUSE_STOPPED,           /* the rank called it, but its GPU never took it up where its peers' did */
  PT_CAUSE_SLOW_HOST,         /* every wait a rank's proxy thread times is long: a starved host (step metrics) */
  PT_CAUSE_COUNT
} pt_cause;

/* A culprit: where a chain of waiting ops starts. Pointers stay valid until
 * the analysis is freed. */
typedef struct {
  pt_cause cause;
  const char* cause_name;   /* "gpu_not_producing", …                            */
  uint64_t comm_hash;
  int rank;                 /* the culprit rank                                  */
  int peer;                 /* the other end of the op that shows it; -1 = none  */
  int channel;              /* -1 = not one channel                              */
  int is_send;              /* the op that shows it: 1 send, 0 receive, -1 none  */
  int64_t op_count;         /* -1 = unknown                                      */
  int64_t step;             /* progress of that op (transmitted / received /
                               consumed, in the dump's step units); -1 = none    */
  int64_t n_steps;          /* -1 = none                                         */
  const char* host;         /* "" when no dump names it                          */
  int pid;                  /* 0 when unknown                                    */
  int scope_node;           /* 1: the records place the fault on rank's node but
                               not on one rank (intra-node hops have no proxy
                               ops); `candidates` lists the node's ranks         */
  const int* candidates;    /* ranks that may hold the fault (rank first)        */
  int n_candidates;
  int dependents;           /* stuck ops whose wait leads here                   */
  double slow_factor;       /* PT_CAUSE_SLOW_LINK, _SLOW_GPU: times slower than the median */
  const char* summary;      /* one line, as the text report prints it            */
  int possible;             /* 1: the evidence touches a rank whose dump is
                               missing, cut, short or older than its peers'
                               (pt_analysis_gap): the fault may be elsewhere    */
  int consequence_of;       /* -1: a culprit of its own; else the index of the
                               culprit it follows from: its rank only waits in
                               another communicator its process holds           */
  const char* chain;        /* a consequence's chain of waits to that culprit;
                               "" for a culprit of its own                      */
} pt_culprit;

/* One input file as read. */
typedef struct {
  const char* path;
  const char* format;       /* "jsonl", "text", "empty", "none", "unreadable"     */
  uint64_t lines, bytes, records, dumps, duplicates;
  int n_errors;             /* malformed lines, cut dumps, …                      */
  const char* error;        /* the file could not be read at all; else NULL       */
} pt_analysis_input_info;

typedef struct {
  uint64_t files, lines, bytes, records, dumps, duplicates, errors;
  double parse_seconds, analyze_seconds;
  size_t bytes_held;        /* memory the analysis holds now                      */
  size_t peak_bytes;        /* the most it held at any time                       */
} pt_analysis_stats;

typedef struct pt_analysis pt_analysis;

PT_EXTERN int pt_analysis_new(pt_analysis** out);
PT_EXTERN void pt_analysis_free(pt_analysis* a);

/* Options (before pt_analysis_run):
 *   "slow-factor"  an edge this many times slower than the median of its
 *                  operation's edges is slow (default 3; 1.5 .. 1000)
 *   "stall-ms"     an active op of an on-demand or periodic dump that moved
 *                  less than this long before the dump is still moving
 *                  (default: the dump's own stallMs, else 1000)
 *   "all-dumps"    1: also keep a copy of every dump read, for
 *                  pt_analysis_write_records (default 0: the latest dump of
 *                  each communicator and rank); before the first input
 * Returns PT_AN_EINVAL for an unknown name or a value out of range (or
 * "all-dumps" after an input), PT_AN_ENOMEM when out of memory. */
PT_EXTERN int pt_analysis_set_option(pt_analysis* a, const char* name, const char* value);

/* The Chrome-trace file written beside the page (a path, as given, under
 * 1 KiB): the page's Timeline section names it in place of how to write
 * one. PT_AN_EINVAL for no path or one too long. */
PT_EXTERN int pt_analysis_set_timeline_file(pt_analysis* a, const char* path);

/* Adds a file, or every regular file under a directory, recursively (in
 * name order, at most 8 levels deep; links followed; a loop or a file
 * reached twice read once; hidden entries, and what is neither file nor
 * directory, skipped and noted). A path that cannot be read is recorded as
 * an input with its error; the call still returns 0. */
PT_EXTERN int pt_analysis_add_path(pt_analysis* a, const char* path);
/* Adds an open stream, read to its end now; `name` labels it in reports. */
PT_EXTERN int pt_analysis_add_stream(pt_analysis* a, const char* name, FILE* f);
/* Adds bytes held in memory (copied as read; `data` may go after the call). */
PT_EXTERN int pt_analysis_add_buffer(pt_analysis* a, const char* name, const char* data, size_t len);

/* Merges, pairs, explains. Once per analysis; inputs cannot be added after. */
PT_EXTERN int pt_analysis_run(pt_analysis* a);

PT_EXTERN pt_verdict pt_analysis_verdict(const pt_analysis* a);
/* "ok", "hang", "slow", "unusable", "incomplete". */
PT_EXTERN const char* pt_verdict_name(pt_verdict v);
/* "gpu_not_producing", …; "unknown" outside the enum. */
PT_EXTERN const char* pt_cause_name(pt_cause c);

/* Culprits, the one holding up most ops first. NULL past the end. */
PT_EXTERN size_t pt_analysis_culprit_count(const pt_analysis* a);
PT_EXTERN const pt_culprit* pt_analysis_culprit(const pt_analysis* a, size_t i);
PT_EXTERN size_t pt_analysis_input_count(const pt_analysis* a);
PT_EXTERN int pt_analysis_input(const pt_analysis* a, size_t i, pt_analysis_input_info* out);
PT_EXTERN void pt_analysis_get_stats(const pt_analysis* a, pt_analysis_stats* out);

/* What the input could not show (docs/analyze.md, "What it could not
 * see"). Any of these makes a verdict that found nothing
 * PT_VERDICT_INCOMPLETE; a hang or a slow link found on the ranks that are
 * there is still reported, and the culprits it touches are `possible`. */
typedef enum {
  PT_GAP_MISSING = 0, /* ranks rank..rank_last of the communicator have no dump           */
  PT_GAP_CUT,         /* a rank's latest dump has no end: no JSON "end" line, or
                         its file ends inside a line                                    */
  PT_GAP_SHORT,       /* a rank's latest dump holds fewer records than its header
                         announces (`announced`, `read`), or lines of it were unreadable */
  PT_GAP_STALE,       /* a rank's latest dump is `behind_ms` older than its peers'
                         latest, more than the stall time `stall_ms`                   */
  PT_GAP_UNREADABLE,  /* an input could not be read (`path`)                            */
  PT_GAP_MASK_OFF,    /* a rank's latest dump was taken while the host's profiler mask
                         left the proxy events out (RAS on NCCL 2.31+): calls since
                         are not recorded                                               */
  PT_GAP_COUNT
} pt_gap_kind;

typedef struct {
  pt_gap_kind kind;
  const char* kind_name;    /* "missing", "cut", "short", "stale", "unreadable",
                               "mask-off"                                          */
  uint64_t comm_hash;       /* 0 for "unreadable"                                  */
  int rank, rank_last;      /* the rank (missing: the first and last of a run); -1 */
  const char* path;         /* the input holding the dump (or unreadable); NULL    */
  unsigned line;            /* where the dump starts; 0                            */
  int64_t dump_seq;         /* -1 = unknown                                        */
  int64_t announced, read;  /* short: records the header announces / read; -1     */
  int64_t behind_ms, stall_ms; /* stale; -1                                        */
  int may_hold_fault;       /* 1: the fault of a hang may be on this rank, unseen
                               (every gap but a stale stall dump, or a damaged
                               dump read in place of a whole one: a stall dump is
                               taken once its rank no longer moves)              */
  int64_t read_instead;     /* cut, short: the damaged dump came after a whole one of
                               the same process, whose dumpSeq this is: that one is
                               the rank's word (a damaged file shows nothing of what
                               the rank did); -1 = the damaged dump is the one read */
} pt_gap;

PT_EXTERN size_t pt_analysis_gap_count(const pt_analysis* a);
PT_EXTERN const pt_gap* pt_analysis_gap(const pt_analysis* a, size_t i);
/* Ranks (summed over communicators) whose latest dump is a finalize dump
 * with no active op and nothing missing, and the ranks there are: the two
 * are equal, and not 0, when the job finished cleanly on every rank. */
PT_EXTERN void pt_analysis_finished(const pt_analysis* a, int* clean, int* ranks);

/* Reports. Text: verdict, culprits, the stuck edges; `verbose` adds every
 * input, the unmatched ops and the evidence. JSON: the versioned document
 * of docs/analyze.md. Chrome: a Chrome-trace / Perfetto timeline. Each
 * returns 0 or PT_AN_EIO. */
PT_EXTERN int pt_analysis_write_text(const pt_analysis* a, FILE* f, int verbose);
PT_EXTERN int pt_analysis_write_json(const pt_analysis* a, FILE* f);
PT_EXTERN int pt_analysis_write_chrome(const pt_analysis* a, FILE* f);
/* One self-contained HTML page (inline CSS and SVG, no script, nothing to
 * load): the verdict, the culprits, the wait graph by node, the step-time
 * heatmap of the metrics files, the stuck edges, the text report.
 * 0, PT_AN_EIO, or PT_AN_ENOMEM. */
PT_EXTERN int pt_analysis_write_html(const pt_analysis* a, FILE* f);
/* The records read, one JSON object per line (docs/analyze.md, "Records"):
 * every op record of the latest dump of each communicator and rank, or of
 * every dump with the option "all-dumps" (a dump seen twice once, its JSON
 * copy); grouped by communicator hash and rank. Any time after the inputs
 * are added. 0, PT_AN_EIO, or PT_AN_ENOMEM. */
PT_EXTERN int pt_analysis_write_records(const pt_analysis* a, FILE* f);
/* A summary of the inputs (docs/analyze.md, "Past one machine"): one JSON
 * lines file of the evidence the analysis keeps — each communicator and
 * rank's latest dump and the active records of the one before, the ranks
 * that dumped no record, the rank-unknown dumps, the inputs with a
 * problem, the step metrics read — which an analysis reads back as an
 * input like any other: an analysis of the summaries of every node gives
 * the verdict of an analysis of all their dumps. Any time after the inputs
 * are added. 0, PT_AN_EIO, or PT_AN_ENOMEM; the _path form as
 * pt_analysis_write_chrome_path (never over an input, PT_AN_EINPUT). */
PT_EXTERN int pt_analysis_write_summary(const pt_analysis* a, FILE* f);
PT_EXTERN int pt_analysis_write_summary_path(const pt_analysis* a, const char* path);
/* The JSON document as a string; free with pt_analysis_string_free. NULL
 * when out of memory. */
PT_EXTERN char* pt_analysis_json(const pt_analysis* a);
/* Writes the Chrome trace to a file (for callers without FILE*): to a
 * temporary file beside it, renamed to `path` once whole, so that a failed
 * write leaves what was there. A path that is one of the files read (the
 * same file, by any name) is refused with PT_AN_EINPUT and nothing is
 * written: the dumps are the evidence. A path that is not a regular file
 * is written as a shell redirect would: a link's target gets the file
 * (made where the link points if it is not there; the link stays), a device or a FIFO is written into (no temporary file, no
 * rename), a directory is PT_AN_EIO with EISDIR. PT_AN_EIO (errno says
 * why) when it cannot be written. */
PT_EXTERN int pt_analysis_write_chrome_path(const pt_analysis* a, const char* path);
/* The HTML page to a file, the same way (never over an input, renamed once
 * whole). */
PT_EXTERN int pt_analysis_write_html_path(const pt_analysis* a, const char* path);
PT_EXTERN void pt_analysis_string_free(char* s);

/* Compares the analysis with an expected outcome: the one line of JSON
 * `proxytrace sim --truth-json` writes (docs/analyze.md, "Checking against
 * a ground truth"). Returns one of these, or PT_AN_EINVAL when `truth` is
 * not such a document; `why` (may be NULL) says what agreed or differed. */
typedef enum {
  PT_TRUTH_EXACT = 0,  /* same verdict; every culprit named by rank, channel and cause */
  PT_TRUTH_NODE = 1,   /* same verdict; a culprit the truth marks "exact": false (its
                          op has no proxy record) named by its node and channel */
  PT_TRUTH_LIMIT = 2,  /* within a documented limit: a slow link or GPU the evidence could
                          not judge (ms times, too few or too short timed ops), or a
                          slow GPU named as its rank's slow links from op durations */
  PT_TRUTH_DIFFERS = 3 /* anything else */
} pt_truth_match;
PT_EXTERN int pt_analysis_compare_truth(const pt_analysis* a, const char* truth, char* why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
