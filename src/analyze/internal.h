/*
 * internal.h — the analyzer's model: what every stage shares.
 *
 * The analyzer is built in stages, each seeing only itself and the stages
 * below it (docs/analyze.md, "How the analyzer is built";
 * tests/analyze/layers.sh checks it):
 *
 *   internal.h   the model: the structures of records, dumps, inputs and
 *                results, and the files every stage uses —
 *     memory.c     allocations counted against the analysis, and whether
 *                  one failed (memory.h)
 *     map.c        a hash index from 64-bit keys to chains of items
 *     json.c       one JSON object per line, parsed into a flat field list
 *     emit.c       JSON strings and numbers for the writers
 *     open.c       only regular files opened
 *     names.c      the vocabulary: counters, states, triggers, statuses,
 *                  units, waits, functions, causes, verdicts
 *     op.c         what one op record says by itself
 *     input.c      the inputs read, and the errors noted against them
 *     slow_test.c  the statistical test of every slow claim
 *                (mset.h, the step metrics set the analysis holds, is
 *                included here; its file mset.c is evidence)
 *   evidence.h   dumps, their steps and progress lines, the merge, the
 *                rank-unknown dumps, the per-communicator view
 *   inputs.h     the readers: lines, the parser and its formats, summaries
 *   judge.h      pairing, explanation, desync, slow edges, completeness
 *   verdict.h    culprits across communicators, the run and its verdict
 *   render.h     the reports and the files they are written to
 */
#ifndef PT_ANALYZE_INTERNAL_H
#define PT_ANALYZE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "analyze/memory.h"
#include "analyze/mset.h"
#include "proxytrace/analyze.h"

/* ---------------------------------------------------------------------------
 * Memory (memory.c)
 * ------------------------------------------------------------------------- */

/* Monotonic seconds. */
static inline double an_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
/* Copies `src` into dst[n], cut to fit. */
static inline void an_copy(char* dst, size_t n, const char* src) {
  size_t i = 0;
  for (; src && src[i] && i + 1 < n; i++) dst[i] = src[i];
  if (n) dst[i] = 0;
}

/* ---------------------------------------------------------------------------
 * Hash index (map.c): key -> chain of item indices. Keys are 64-bit mixes of
 * a tuple; callers compare the tuple, so colliding tuples only share a chain.
 * ------------------------------------------------------------------------- */

typedef struct {
  uint64_t* keys;
  int32_t* heads;
  size_t cap, used;
  int32_t* next; /* per item: the next item of its chain, -1 at the end */
  size_t n_items, items_cap;
} an_map;

int an_map_init(an_mem* m, an_map* map, size_t expect);
void an_map_free(an_mem* m, an_map* map);
/* Adds item `item` (0, 1, 2, … in order) under `key`. 0 or -1 (memory). */
int an_map_add(an_mem* m, an_map* map, uint64_t key, int32_t item);
/* First item under `key`, -1 if none; then an_map_next(). */
int32_t an_map_first(const an_map* map, uint64_t key);
static inline int32_t an_map_next(const an_map* map, int32_t item) { return map->next[item]; }
uint64_t an_mix(uint64_t h, uint64_t v);
uint64_t an_mix_str(const char* s);

/* ---------------------------------------------------------------------------
 * One JSON object per line (json.c): a flat list of fields, nested objects
 * flattened to "parent.key". Strings are decoded into the object's buffer.
 * ------------------------------------------------------------------------- */

typedef enum { AN_JV_NULL, AN_JV_BOOL, AN_JV_NUM, AN_JV_STR, AN_JV_OBJ, AN_JV_ARR } an_jtype;

typedef struct {
  char path[48];
  an_jtype type;
  const char* s; /* number: its text; string: decoded, NUL-terminated */
  size_t n;
  int truth;     /* bool */
} an_jfield;

#define AN_JSON_FIELDS 256

typedef struct {
  an_jfield f[AN_JSON_FIELDS];
  int n;
  char buf[16384];
  size_t used;
  int hint; /* where the next lookup starts */
} an_jobj;

/* 0, or -1 with `err` saying what and at which column. */
int an_json_parse(const char* s, size_t len, an_jobj* o, char* err, size_t errlen);
int an_json_whole(const char* s, size_t len);
const an_jfield* an_json_get(const an_jobj* o, const char* path);
/* A field as a 64-bit integer: a JSON integer, or (u64) a decimal string
 * too. 0, or -1 when absent, null, or not such a value. */
int an_json_i64(const an_jobj* o, const char* path, int64_t* out);
int an_json_u64(const an_jobj* o, const char* path, uint64_t* out);
int an_json_f64(const an_jobj* o, const char* path, double* out);
/* A string field, or NULL (absent, null, not a string). */
const char* an_json_str(const an_jobj* o, const char* path);
/* The field is present and null. */
int an_json_is_null(const an_jobj* o, const char* path);

/* ---------------------------------------------------------------------------
 * Records and dumps
 * ------------------------------------------------------------------------- */

/* Counter kinds, in legacy order (ProxyCounterTypes). */
enum {
  AN_C_POSTED = 0,
  AN_C_KERNEL_COPY_READY,
  AN_C_RTR_RECV,
  AN_C_RTS_SEND,
  AN_C_RECEIVED,
  AN_C_TRANSMITTED,
  AN_C_FLUSHED,
  AN_C_DONE,
  AN_C_RECV_TAIL,
  AN_C_TAIL_OR_HEAD,
  AN_C_FIFO,
  AN_C_COUNT
};

enum { AN_ST_ACTIVE = 0, AN_ST_FINISHED, AN_ST_DETACHED };
enum { AN_FMT_NONE = 0, AN_FMT_JSONL, AN_FMT_TEXT };
enum {
  AN_TRIG_UNKNOWN = 0,
  AN_TRIG_STALL,
  AN_TRIG_SIGNAL,
  AN_TRIG_PERIODIC,
  AN_TRIG_FINALIZE,
  AN_TRIG_HOOK,
  AN_TRIG_API,
  AN_TRIG_COUNT
};
/* The plugin's drop counters (pt_drop_name), in its order: index 8 is
 * foreignPid, which the merge and the pairing read. */
enum { AN_DROP_COUNT = 11 };

const char* an_trigger_name(int t);
const char* an_state_name(int state); /* "active", "finished", "detached" */
int an_trigger_parse(const char* s); /* AN_TRIG_UNKNOWN when not a name */
extern const char* const an_drop_names[AN_DROP_COUNT];
extern const char* const an_counter_json[AN_C_COUNT]; /* "posted", … */
extern const char* const an_status_names[8];          /* "INIT" … "DONE", "ILLEGAL" */
int an_status_parse(const char* s, size_t n);          /* -1 when unknown */

/* One proxy op record as a dump gives it. Times in ns since the Unix
 * epoch (legacy ms are scaled; `ns_times` of the dump says which); 0 =
 * never set. */
typedef struct {
  uint64_t comm;
  int64_t op_count, op_id;
  int32_t rank, peer, channel;
  int8_t is_send, state, status, last_counter; /* status: legacy enum, -1; last: kind, -1 */
  int64_t n_steps;
  uint64_t nbytes, total_bytes, chunk;
  int32_t func, proto, pattern;
  uint32_t line;    /* where it was read (here and below: no padding, 256 bytes) */
  int64_t cnt[AN_C_COUNT];
  int64_t create_ns, last_ns, posted_ns, send_ns, progress_ns;
  int64_t coll_seq; /* -1 = unknown */
  char coll[16];    /* "" = unknown */
  uint64_t user_tag; /* the task's userTag (NCCL 2.31+) when tag_known */
  uint32_t input;
  int8_t tag_known;  /* 1 user_tag holds it, 0 untagged, -1 tagged but unknown */
  int8_t step_unit;  /* AN_UNIT_*: the unit the record names, AN_UNIT_UNKNOWN when it names none */
} an_op;

/* The unit of an op's nSteps and step counters (docs/dump-json.md, "Step
 * units"; steps.c). */
enum { AN_UNIT_UNKNOWN = 0, AN_UNIT_RAW, AN_UNIT_TRANSFERS };
struct an_dump;
int an_unit_parse(const char* s, size_t n); /* "rawSteps", "transfers"; else AN_UNIT_UNKNOWN */
const char* an_unit_name(int unit);         /* NULL for AN_UNIT_UNKNOWN */

/* The progress lines of a dump (docs/dump-json.md, "Progress"; progress.c):
 * a collective or p2p call the rank made, and a channel's kernel. */
typedef struct {
  int8_t is_p2p;
  int32_t root_or_peer;
  int64_t seq;     /* the host's seqNumber (coll), the per-peer sequence (p2p) */
  int64_t index;   /* its place among the rank's calls of its kind, from 0 */
  uint64_t count;
  char func[16], dtype[12]; /* "" = not given */
  char algo[16], proto[8];  /* a collective's ("RING", "SIMPLE"), "" = not given */
  int64_t start_ns;         /* when the host started it (its clock), 0 = not given */
  uint32_t line;
} an_task;

typedef struct {
  int32_t channel;
  int64_t starts, stops;
  char start_func[16], stop_func[16]; /* "" = none, or no task of the plugin's */
  int64_t start_seq, stop_seq;        /* -1 = none */
  int8_t start_p2p, stop_p2p;
} an_kch;

#define AN_TASKS_KEPT 16 /* the plugin keeps 8 of each kind */

typedef struct an_dump {
  uint64_t comm;
  int has_comm;
  int rank;       /* -1 = unknown */
  int nranks, nnodes; /* 0 = unknown */
  char host[64];  /* "" = unknown */
  char comm_name[32]; /* the communicator's name (config.commName), "" = none */
  int pid, dev;   /* 0 / -1 = unknown */
  int64_t seq;    /* dumpSeq, -1 = unknown */
  int64_t time_ns;
  int trigger, api;
  int step_unit;  /* AN_UNIT_*: the header's or banner's stepUnit ("mixed" and none: unknown) */
  char host_lib[8];
  int64_t stall_ms; /* -1 = unknown */
  int64_t rotated;  /* rotatedDumps: its files' dumps removed by rotation before it; 0 = none or unknown */
  int mask_off;     /* the host's mask left the proxy events out when it was taken (RAS) */
  int mask_changed; /* the host changed the mask during the job (RAS): its calls may be missing some */
  int64_t drops[AN_DROP_COUNT];
  int has_drops;
  int format;     /* AN_FMT_* */
  int ns_times;   /* op times are ns-precise (JSON) */
  int cut;        /* JSON: no "end" line; either: its file ends inside a line */
  int64_t round;  /* JSON "round" (one per trigger of a process), -1 */
  int64_t announced_active, announced_finished; /* the header's counts, -1 */
  uint32_t lost;  /* lines of its records that could not be read */
  uint32_t input, line;
  uint64_t order; /* arrival order over the whole analysis */
  uint64_t fingerprint;
  int64_t max_last_ns;
  an_op* ops;
  size_t n_ops, cap_ops;
  /* Its progress lines (progress.c): has_progress once its "progress" line
   * was read; the calls made so far of each kind; the last calls; the
   * kernel channels. */
  int has_progress;
  int64_t n_calls[2];
  an_task* tasks; /* AN_TASKS_KEPT while read, then as many as kept; NULL: none */
  int n_tasks;
  an_kch* kch;
  size_t n_kch, cap_kch;
} an_dump;

/* The dumps of one (communicator, rank). */
typedef struct {
  uint64_t comm;
  int rank;
  an_dump* latest;
  an_dump* previous;
  /* A damaged (cut, short) dump of the process whose whole dump is
   * `latest`, written after it: it shows that a file was damaged, not what
   * the rank did; reported as a gap, `latest` speaks for the rank (merge.c) */
  an_dump* cut;
  uint32_t n_dumps;
} an_slot;

typedef struct {
  uint32_t line;
  char* message;
} an_error;

/* A rank that dumped nothing, and where (for its node): one per (rank,
 * host, pid). */
typedef struct {
  int rank;
  int pid;
  int64_t foreign; /* foreign-pid refusals its dump reported */
  char host[64];
} an_empty;

/* The key of a rank of a process (rank, host, pid): an empty dump's, and a
 * communicator's rank's whose dump names its process. */
uint64_t an_rank_proc_key(int rank, const char* host, int64_t pid);

#define AN_MAX_ERRORS_KEPT 20

/* The largest rank number the analysis takes (ranks, peers; nRanks one
 * more): 2^20, ten times the largest jobs run. A communicator whose size
 * no dump states spans the highest rank its records name, and each of its
 * ranks costs a table entry: at 2^24 one op line of 300 bytes took 15 s and
 * 1.6 GB. The fuzz build lowers it, so that what an input costs follows
 * its size rather than the numbers written in it. */
#ifndef AN_MAX_RANK
#define AN_MAX_RANK (1 << 20)
#endif

typedef struct {
  char* path;
  const char* format;
  char* error; /* could not be read */
  uint64_t lines, bytes, records, dumps, duplicates;
  int n_errors;
  an_error* errors; /* the first AN_MAX_ERRORS_KEPT, allocated with the first one
                       (a job of 100 000 files has few with a problem) */
  int rank_hint; /* from the file name (rank<R>, -r<R>-), -1 */
  uint64_t dev, ino; /* the file read (stat), when has_id */
  int has_id;
  int summary; /* a summary (summary.c): its figures are its nodes' */
} an_input;

/* A path a directory held that was not read, and why (`-v` lists them). */
typedef struct {
  char* path;
  const char* why;
} an_skip;

/* A dump whose rank the plugin did not know (rank -1: NCCL 2.23-2.26 tell
 * a rank its number with its first network op). */
typedef struct {
  uint64_t comm;
  char host[64];
  int pid;
  int64_t seq, round;
  int trigger;
} an_unknown;

/* A process that dumped a communicator under a rank number, and its latest
 * round of a trigger that dumps every communicator (-1: none). */
typedef struct {
  uint64_t comm;
  char host[64];
  int pid;
  int64_t round;
} an_process;

/* What the input could not show (complete.c); pub's strings point into
 * the inputs. */
typedef struct {
  pt_gap pub;
} an_gap;

/* ---------------------------------------------------------------------------
 * Analysis results
 * ------------------------------------------------------------------------- */

/* What a stuck op waits for (explain.c; its names: names.c). */
typedef enum {
  AN_W_NONE = 0,
  AN_W_GPU,          /* send: its GPU to produce data                    */
  AN_W_CREDIT,       /* send: the receiver to post a buffer              */
  AN_W_NETWORK,      /* send: completion; recv: data the sender sent     */
  AN_W_DATA,         /* recv: the sender's data                          */
  AN_W_CONSUME,      /* recv: its GPU to consume received data           */
  AN_W_NOT_POSTING,  /* recv: it posts no more receives                  */
  AN_W_PEER_MISSING, /* the peer wrote no dump                           */
  AN_W_PEER_BEHIND,  /* the peer's records stop before this operation    */
  AN_W_PEER_NO_OP,   /* the peer has no matching op                      */
  AN_W_PEER_CUT,     /* the peer's dump is cut: it cannot show the match */
  AN_W_COUNT
} an_wait;

const char* an_wait_name(an_wait w); /* JSON name: "gpu", "credit", … */
/* NCCL's ncclFunc_t names ("AllReduce", …), NULL outside them. */
const char* an_func_name(int func);
/* The collective or p2p call of an op: "coll" of the JSON, else funcIdx. */
const char* an_op_coll(const an_op* op);
/* The op's "pattern" (RCCL's trace info: NCCL's ncclPattern_t, v2.28.9-1
 * src/include/proxy.h:21) of a ring all-reduce; -1 where the host does not
 * say. */
#define AN_PATTERN_RING 0
#define AN_PATTERN_RING_TWICE 1
/* The op's "proto" (NCCL_PROTO_*: LL 0, LL128 1, SIMPLE 2); -1 where the
 * host does not say. */
#define AN_PROTO_SIMPLE 2
/* A point-to-point op (ncclSend/ncclRecv), not a ring's (op.c). */
int an_op_p2p(const an_op* op);
/* The op's call, the same number on every rank (op.c): what pairs a send
 * with its receive. -1 where the record gives none. */
int64_t an_op_call(const an_op* op);
struct an_dump;
/* The latest per-peer sequence of the sends to (is_send) or receives from
 * `peer` that a dump's records show (op.c); -1 when they show none. */
int64_t an_dump_p2p_latest(const struct an_dump* d, int peer, int is_send);

/* One op of the latest dumps, with what the analysis found about it. */
typedef struct {
  const an_op* op;
  const an_dump* dump;
  int32_t partner; /* index of the paired op, -1 */
  int32_t next;    /* the stuck op it waits on, -1 */
  int32_t culprit; /* index into culprits, -1 */
  int8_t stuck;    /* 1 stuck; 0 finished or moving */
  int8_t moving;   /* active, but moved since the previous dump / recently */
  int8_t leaked;   /* never progressed, intra-node peer: not a network op */
  int8_t origin;
  int8_t wait;     /* an_wait */
  int8_t cause;    /* pt_cause of an origin */
  int node;        /* node id of op->rank */
} an_item;

typedef struct {
  uint64_t comm;
  int rank;
  int referenced; /* stuck ops that wait on it */
} an_rank_ref;

typedef struct {
  uint64_t comm;
  int rank;
  int64_t last_op_count; /* highest opCount in its records */
  int64_t needed;        /* the opCount its peers wait in */
} an_behind;

/* One edge's summary in the slow-edge judgement (slow.c): counts against
 * its operations' baselines, so summaries of one edge add up. */
typedef struct {
  uint64_t comm;
  int sender, receiver, channel;
  uint32_t ops, slow_ops;
  double ratio;          /* the highest slow op's duration over its baseline */
  int64_t slow_op_count; /* opCount of its first slow op, -1 */
  int slow_operations;   /* 2: slow ops in two operations or more */
  double p_sum;          /* its ops' null chances of being slow, summed */
} an_slow_edge;

/* Why the slow-edge judgement named nobody though the dumps have ns times
 * (slow.c): it was made, or the evidence it needs was not there. */
typedef enum {
  AN_SJ_JUDGED = 0,
  AN_SJ_NONE,       /* no completed op with ns times at all */
  AN_SJ_HANG,       /* every completed op ended once the hang had begun */
  AN_SJ_FEW,        /* no operation has enough timed ops */
  AN_SJ_SHORT,      /* the operations' ops are too short to time */
  AN_SJ_PARTIAL,    /* judged, but some operations could not be (few, short) */
  AN_SJ_RING,       /* judged on ring ops only, which hide a slow link */
  AN_SJ_ALONE       /* no rank has ops of others to be compared with */
} an_slow_judgement;

typedef struct {
  an_slow_judgement state;
  uint64_t timed;       /* completed ops with a duration */
  uint64_t after_hang;  /* of those, left out: they ended once the hang began */
  uint64_t used;        /* in an operation with a baseline */
  uint64_t used_p2p;    /* of those, point-to-point ops */
  uint32_t groups, few_groups, short_groups;
  int64_t short_median_ns; /* the longest median among too-short operations */
} an_slow_evidence;

typedef struct {
  pt_culprit pub;
  int* cand;
  char summary[1024];
  char host[64];
  int32_t origin; /* item index */
  int comm_index;
  int sort_index;
  /* pub.possible: the ranks with a gap its evidence touches (complete.c),
   * the first AN_BECAUSE of them; n_because AN_BECAUSE + 1: more */
  int because[16];
  int n_because;
  /* Across communicators (origin.c): the culprit in another communicator
   * where its rank's process is stuck (-1), as which rank there; and, for
   * a consequence (pub.consequence_of), the chain from it to its origin. */
  int32_t waits_in;
  int via_rank;
  int32_t via_comm; /* the communicator (index) it is there in; -1 */
  char chain[1024];
  int8_t absent; /* it says only where its rank is not (origin.c) */
} an_culprit;
#define AN_BECAUSE 16

/* What the analysis knows of one rank of a communicator. */
typedef struct {
  const an_dump* dump;  /* latest; NULL: no dump with records */
  const an_dump* cut;   /* a damaged dump after `dump` (an_slot's cut); NULL */
  int present;          /* it dumped (records or not) */
  int node;             /* host id; -1 unknown */
  int placed;           /* no dump, node inferred from its neighbours' */
  int numbered;         /* node inferred from rank numbering, not a host name */
  int64_t max_op_count; /* highest opCount in its records, -1 */
  int host_counts;      /* its opCounts are the host's (RCCL): one order for
                           every operation of the communicator */
  int64_t seen_ns;      /* when its latest dump was taken; 0 unknown (legacy) */
  int64_t foreign;      /* foreign-pid refusals its node's dumps report */
  int waited_on;        /* stuck ops that wait on it, missing (find_missing) */
  int unknown;          /* no dump under its number, but a rank-unknown dump
                           of the communicator stands for it (unknown.c) */
  int gap;              /* its dump is missing, cut, short or stale */
} an_rank;

typedef struct {
  uint64_t comm;
  int nranks;     /* expected */
  int with_dump;
  an_rank* ranks; /* nranks */
  int64_t stuck_op_count; /* the opCount most stuck ops are in, -1 */
  char coll[16];
  uint64_t user_tag;      /* the userTag of that op, when tag_known is 1 */
  int8_t tag_known;
  size_t first_item, n_items;
  int unknown_dumps;    /* ranks the rank-unknown dumps stand for, at most */
  int unknown_finished; /* of those, ranks whose dumps there are finalize dumps */
} an_comm;

/* Host names interned to node ids, indexed by a hash of the name (a
 * communicator numbered node by node can have as many nodes as ranks). */
typedef struct {
  char** names;
  size_t n, cap;
  an_map index; /* keys.cap == 0 until the first name */
} an_hosts;

/* What a reading thread's parse hands the merge, kept until the files are
 * merged in order (lines.c): a dump for an_merge, a dump of a rank with no
 * record (an_merge_empty_rank), a dump of no known rank (an_unknown_rank). */
enum { AN_HAND_MERGE, AN_HAND_EMPTY, AN_HAND_UNKNOWN };
typedef struct {
  an_dump* d;
  int kind;
} an_handoff;

/* A file or note of a directory, in the order a serial reading meets it,
 * waiting for the reading threads (lines.c). */
typedef struct {
  char* path;
  const char* skip_why; /* a skip note, not a file */
  uint64_t dev, ino;
  int has_id;
  int twin; /* X.txt right after X.jsonl: read only if that is not whole */
  int dup;  /* (a twin) the same file as one listed or read before */
} an_pending;

struct pt_analysis {
  an_mem mem;
  /* Reading files on several threads (lines.c): how many (option
   * "threads", 0: one per processor), the files of the walk waiting for
   * them, and, in the partial analysis a thread parses one file into
   * (`defer`), what it hands on and whether the file must be read again
   * by the analysis itself (a metrics file, a summary). */
  int threads;
  int defer, serial_needed;
  an_handoff* handoffs;
  size_t n_handoffs, cap_handoffs;
  an_pending* pending;
  size_t n_pending, cap_pending;
  an_map pending_index;
  /* The step metrics files among the inputs (mset.h), and the slow edges
   * named from them. */
  pt_mset mset;
  pt_ms_verdict mslow;
  size_t n_metric_culprits;
  int ran;
  double slow_factor;
  int slow_factor_given; /* --slow-factor: also the floor of the metrics' factors */
  char timeline_file[1024]; /* the --chrome file written beside the page (pt_analysis_set_timeline_file), or "" */
  int64_t stall_ms; /* option, -1 = per dump */

  an_input* inputs;
  size_t n_inputs, cap_inputs;
  uint64_t order;
  uint64_t lines, bytes, records, dumps, duplicates, errors;
  char* block; /* the read buffer, kept from one file to the next (lines.c) */
  struct an_parser* spare_parser; /* the parser, kept likewise (parse.c) */
  size_t block_cap;
  uint64_t passed_over; /* older dumps of a dump file not parsed (lines.c) */
  /* Summaries read (summary_read.c): how many, the files they summarize, and
   * the inputs their dumps were read from on their nodes, by path. */
  uint64_t summaries, summarized_files;
  uint32_t* sources;
  size_t n_sources, cap_sources;
  an_map source_index;
  uint64_t twins;       /* text files not read: their JSON copy was read whole */
  double parse_seconds, analyze_seconds, slow_seconds; /* slow: the slow-edge judgement's part */

  an_slot* slots;
  size_t n_slots, cap_slots;
  an_map slot_index;
  /* Option "all-dumps": a copy of every dump read (a dump seen twice once,
   * its richer copy), for pt_analysis_write_records. */
  int all_dumps;
  an_dump** every;
  size_t n_every, cap_every;
  an_map every_index;
  /* Ranks whose dumps held no record and named no communicator. */
  an_empty* empty_ranks;
  size_t n_empty, cap_empty;
  an_map empty_index; /* empty_ranks by an_rank_proc_key */
  /* Dumps that did not know their rank; what directories held unread;
   * inputs read, by file identity (a file reached twice is read once). */
  an_unknown* unknown;
  size_t n_unknown, cap_unknown;
  size_t n_no_comm; /* of those, dumps that name no communicator either (commHash 0) */
  an_map unknown_index;
  an_process* processes;
  size_t n_processes, cap_processes;
  an_map process_index;
  an_skip* skipped;
  size_t n_skipped, cap_skipped;
  an_map file_index;

  /* Results. */
  pt_verdict verdict;
  an_comm* comms;
  size_t n_comms;
  an_item* items;
  size_t n_items;
  an_culprit* culprits;
  size_t n_culprits, cap_culprits;
  size_t n_origins; /* culprits of their own: the first n_origins (origin.c) */
  an_rank_ref* missing;
  size_t n_missing, cap_missing;
  an_behind* behind;
  size_t n_behind, cap_behind;
  an_slow_edge* slow;
  size_t n_slow, cap_slow;
  size_t n_stuck, n_moving, n_leaked, n_unmatched;
  int slow_possible; /* some dump had ns times */
  an_slow_evidence slow_ev; /* what the slow-edge judgement had (slow.c) */
  an_hosts hosts;
  an_gap* gaps;
  size_t n_gaps, cap_gaps;
  int clean_ranks, all_ranks; /* pt_analysis_finished */
  size_t n_desync; /* culprits of ranks that disagree about their calls (desync.c) */
};

/* ---------------------------------------------------------------------------
 * Shared by every stage
 * ------------------------------------------------------------------------- */

/* memory.c: an allocation of the analysis failed (memory.h): it is not
 * whole, and the API says so instead of answering. */
int an_failed(const pt_analysis* a);
/* `rc`, or PT_AN_ENOMEM when the analysis is not whole. */
int an_outcome(const pt_analysis* a, int rc);

/* input.c: the inputs, and an error noted against one. */
int an_input_add(pt_analysis* a, const char* path, uint32_t* out);
void an_input_free(pt_analysis* a, an_input* in); /* what it holds */
void an_input_error(pt_analysis* a, uint32_t input, uint32_t line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The longest line any reader keeps (a dump's, a metrics file's); a longer
 * one is skipped, said, and costs no more memory than this. */
#define AN_MAX_LINE (1u << 20)

/* open.c: only regular files are read (a FIFO would block, a device such
 * as /dev/zero never end). an_not_regular: NULL for a regular file, else
 * why not (AN_NOT_REGULAR). an_open_regular: 0 and *f open for reading;
 * 1 when `path` is not a regular file (nothing opened, nothing waited
 * for); -1 with errno when it cannot be opened. sb (may be NULL) gets the
 * opened file's status. */
#define AN_NOT_REGULAR "not a regular file (a fifo, socket or device)"
struct stat;
const char* an_not_regular(const struct stat* sb);
int an_open_regular(const char* path, FILE** f, struct stat* sb);

/* op.c */
void an_op_init(an_op* op);
/* Progress of an op: what it has moved (transmitted for sends, received,
 * then consumed, for receives). */
int64_t an_op_progress(const an_op* op);
/* names.c: a cause of a slow job, not a hang: slow_link, slow_gpu, slow_host. */
int an_slow_cause(pt_cause c);

/* The minimum evidence of the slow-edge judgement (docs/analyze.md). */
#define AN_SLOW_MIN_GROUP 6          /* timed ops of an operation for a baseline */
#define AN_SLOW_MIN_SPAN_NS 100000   /* its median duration, ns */
#define AN_SLOW_MIN_RANK_SLOW 3      /* slow ops of a slow rank */
#define AN_SLOW_MIN_EDGE 4           /* ops of an edge slow on its own */
#define AN_SLOW_WINDOW 8             /* ops created within 8 medians ran together */
#define AN_SLOW_WINDOW_RANKS 4       /* … given ops of 4 ranks at least */
#define AN_SLOW_ALPHA 0.01           /* chance of a false slow culprit per judgement */
#define AN_SLOW_DP_MAX 1024          /* ops of one rank tested exactly; more: Hoeffding */

/* slow_test.c: the test of every slow claim. The chance that s or more of
 * k samples are slow, each with chance p_all (the binomial tail, exact), or
 * with its own chance p[i] (Poisson-binomial; dp: k + 1 doubles). */
double an_binomial_tail(uint64_t k, uint64_t s, double p_all);
double an_upper_tail(const double* p, double p_all, size_t k, size_t s, double* dp);
/* 1 when a tail is small enough for a claim among `tested` (Bonferroni at
 * alpha, AN_SLOW_ALPHA but for a watch's windows). */
int an_slow_claim(double tail, size_t tested, double alpha);

/* emit.c: JSON output to a FILE. */
void an_put_str(FILE* f, const char* s);
void an_put_hash(FILE* f, uint64_t v); /* as a decimal string */
void an_put_time(FILE* f, int64_t ns); /* integer or null */

#endif
