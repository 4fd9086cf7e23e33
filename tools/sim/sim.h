/*
 * sim.h — `proxytrace sim`: NCCL and RCCL emulated on the CPU, driving any
 * profiler plugin through the host's side of the profiler API.
 *
 * A run has four stages, one file each:
 *
 *   workload.c  the job: N ranks on M nodes, the calls it makes, and the
 *               schedule — every rank's send and receive proxy ops per
 *               channel and call, with nSteps from size, chunk and protocol;
 *   truth.c     the oracle: which transfer every op reaches once the faults
 *               (faults.c) have struck, and the status a dump must show;
 *   run.c       the host: load the plugin (plugin.c) through the loader,
 *               init every communicator on its own thread, one application
 *               thread (app.c) and one proxy progress thread (proxy.c) per
 *               rank, then dump and finalize at destroy;
 *   log.c       the host's logger and where each rank's lines go.
 *
 * host.c knows what differs between NCCL 2.23 … 2.30 and RCCL (gating, event
 * sequences, init/finalize rules); abi.c builds the descriptors and state
 * arguments of each profiler API version and plays the host's version
 * adapters, including the bytes a host leaves unset.
 *
 * Determinism. Every op's event sequence depends only on the seed, the job
 * and the faults: each proxy thread plays its own rank's part of a schedule
 * fixed in advance, drawing its random delays from a generator seeded per
 * op. Under emulated time (sched.c: the default with proxytrace's own
 * plugin) the interleaving of the threads and every time the plugin reads
 * are fixed too, so a run's files are the same on every machine; under real
 * time (--pace, other plugins) the interleaving varies from run to run.
 */
#ifndef PT_SIM_H
#define PT_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nccl/common.h"
#include "proxytrace/loader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Configuration
 * ------------------------------------------------------------------------- */

enum { PT_SIM_ALLREDUCE = 0, PT_SIM_SENDRECV = 1, PT_SIM_ALLTOALL = 2, PT_SIM_REDUCESCATTER = 3, PT_SIM_ALLGATHER = 4,
       PT_SIM_PIPELINE = 5 };
#define PT_SIM_MAX_MICROBATCHES 64 /* --microbatches */
#define PT_SIM_ALLTOALL_MAX_RANKS 256 /* an all-to-all keeps a step base per connection */
enum { PT_SIM_PROTO_LL = 0, PT_SIM_PROTO_LL128 = 1, PT_SIM_PROTO_SIMPLE = 2 };

#define PT_SIM_MAX_CALLS 8
#define PT_SIM_MAX_FAULTS 32
#define PT_SIM_MAX_ENV 16
#define PT_SIM_MAX_OPS 2000000 /* proxy ops per job (about 300 bytes each) */
#define PT_SIM_TIMING_PACE_US 200 /* --pace of a job with --slow-link/--slow-gpu/--slow-host */
#define PT_SIM_MAX_RAS 8

typedef struct {
  int kind;     /* PT_SIM_ALLREDUCE, _SENDRECV, _ALLTOALL, _REDUCESCATTER, _ALLGATHER,
                   _PIPELINE (one stage a node: the 1F1B schedule, pipeline.c) */
  size_t bytes; /* message size per rank */
} pt_sim_call;

typedef enum {
  PT_FAULT_STALL = 0, /* a rank's GPU stops producing data on a channel    */
  PT_FAULT_NO_RECV,   /* a rank never posts its receives                   */
  PT_FAULT_SLOW_LINK, /* a rank's network link is slow                     */
  PT_FAULT_KILL,      /* a rank dies                                       */
  PT_FAULT_PXN,       /* a rank's sends go through a local peer's proxy    */
  PT_FAULT_LEAK_OPS,  /* non-network proxy ops that are never stopped      */
  PT_FAULT_SLOW_GPU,  /* a rank's GPU produces and consumes data slowly    */
  PT_FAULT_SKIP,      /* a rank never makes the call (desync)              */
  PT_FAULT_MISMATCH,  /* a rank makes another call than its peers (desync) */
  PT_FAULT_SLOW_HOST  /* a rank's proxy thread is slow (a starved host CPU) */
} pt_fault_kind;

typedef struct {
  pt_fault_kind kind;
  int rank;    /* the faulty rank                                          */
  int channel; /* -1 = every channel                                       */
  int step;    /* transfer (profiler step) from which the fault strikes    */
  int arg;     /* slow link, slow GPU: factor rounded; pxn: helper rank; leak: ops per batch;
                  mismatch: what the rank calls instead (SIM_MISMATCH_*) */
  double factor;  /* slow link, slow GPU: how many times as long (1.05..1000) */
  double start_s; /* slow link, slow GPU: from this long after the job starts */
} pt_sim_fault;

/* Where the logger's lines go: one call per line, without the newline. */
typedef void (*pt_sim_line_fn)(void* arg, int rank, const char* line);

typedef struct {
  /* Host and plugin. */
  pt_host host;
  const char* plugin;  /* NCCL_PROFILER_PLUGIN value; NULL = environment */
  int strict;          /* garbage in unset bytes, probes with odd inputs */
  const char* env[PT_SIM_MAX_ENV]; /* NAME=VALUE set before loading      */
  int n_env;
  int debug_level;     /* PT_SIM_LOG_*: lines below it are dropped       */
  int timestamps;      /* "[%F %T] " before logger lines                 */
  const char* comm_name;

  /* Job. */
  int nodes, ranks_per_node, channels, iters;
  /* Ranks of a node driven by one process (JAX, single-controller
   * runtimes): its ranks share the pid, so a PXN send between two of them
   * is recorded into the origin's trace by the helper's proxy thread. 1
   * (one process per GPU) .. ranks_per_node, dividing it. */
  int ranks_per_process;
  pt_sim_call calls[PT_SIM_MAX_CALLS];
  int n_calls;
  int proto;
  uint64_t seed;
  int jitter;          /* extra polls per phase are drawn from 0..jitter  */
  int noise;           /* --noise: healthy phases heavy-tailed (faults.c) */
  /* Seeded noise of a healthy cluster (docs/sim.md, "Noise"): */
  double desched_rate; /* --noise-deschedule N:MS: each proxy thread is     */
  double desched_ms;   /*   descheduled MS ms, N times a second on average  */
  int busy_node;       /* --noise-busy-node N:F: every phase of node N's    */
  double busy_factor;  /*   ranks F times as long (-1: none)               */
  double late_dumps_ms; /* --noise-late-dumps MS: the plugin's timers run up
                           to MS ms late (emulated time)                   */
  int phase_base;      /* polls each phase waits before its draw: 1 in a job
                          that times steps (--slow-link, --slow-gpu,
                          --noise; pt_sim_parse_args), else 0 */
  double recv_retry;   /* chance that irecv returns no request per post   */
  int gpu_batch;       /* steps the GPU may consume between two polls, drawn
                          from 1..gpu_batch; 0 = all it was handed          */
  int gdr_flush;       /* receives are flushed (FLUSHED counter)          */
  int hang_polls;      /* polls on a hung job before it is aborted        */
  int pace_us;         /* >0: a poll of a waiting phase lasts this long,
                          <0 not given (0 but with a timing fault:
                          PT_SIM_TIMING_PACE_US, pt_sim_parse_args);
                          and an idle proxy thread sleeps (real time)     */
  double hold_s;       /* then keep polling the stuck ops this long       */
  int poll_us;         /* --poll-us: a poll's emulated length (0 = default) */
  int real_time;       /* --pace or --real-time: the machine's clock, even
                          for proxytrace's own plugin (else emulated time) */
  double signal_after_s; /* send PROXYTRACE_DUMP_SIGNAL after this long; <0 = never */
  int comm_dumps;      /* RCCL ncclCommDump rounds from a watchdog thread  */
  int kernel_ch;       /* not a flag: set when the mask asks for KernelCh  */
  /* --ras-mask T:MASK (2.31+): from batch T on (every call of every
   * iteration counts), RAS has set every rank's mask to MASK. */
  struct {
    int batch, mask;
  } ras[PT_SIM_MAX_RAS];
  int n_ras;

  /* Faults. */
  pt_sim_fault faults[PT_SIM_MAX_FAULTS];
  int n_faults;
  int fault_iter;      /* -1 = the last iteration                        */
  int fault_call;      /* index into calls[] of the batch that is hit    */
  int fault_p2p_call;  /* pipeline: the faulty stage's call of the step it
                          strikes, counting those that fit the fault (a
                          stall: with a send; a no-recv: with a receive) */
  int microbatches;    /* pipeline: microbatches a step (--microbatches)  */
  int pipe_opts;       /* --microbatches (1), --fault-p2p-call (2) given  */

  /* Output. */
  const char* dump_dir; /* rank<r>.log per rank; NULL = standard output;
                           also PROXYTRACE_DUMP_DIR unless that is set     */
  int print_truth;
  const char* truth_file;
  const char* truth_json; /* --truth-json FILE                              */
  int quiet;
  pt_sim_line_fn line_fn; /* overrides dump_dir/stdout (tests)            */
  void* line_arg;
  /* Called at each live rank's destroy, after the host's dump hook and
   * before finalize, on the destroying thread (tests: dump under hosts that
   * have no hook). `logfn` is the host's logger. */
  void (*at_destroy)(void* arg, int rank, void* ctx, ncclDebugLogger_t logfn);
  void* at_destroy_arg;

  /* A parallel layout (--layout TPxPPxDP; layout.c): every communicator of
   * it one job of pt_sim_run. layout_tp 0: none. The faults strike the
   * communicator fault_comm_kind (0 tp, 1 pp, 2 dp, 3 ep; -1 none) number
   * fault_comm_index, with its own rank numbers. layout_ep (--ep): the
   * replicas of each expert-parallel group, 0 or 1 for none. */
  int layout_tp, layout_pp, layout_dp, layout_ep;
  int layout_dp_kind; /* the DP groups' call: PT_SIM_ALLREDUCE (default) or _REDUCESCATTER */
  int fault_comm_kind, fault_comm_index;
  /* Per rank of this job, its process's host name, pid and GPU, as a
   * layout's communicator sets them (NULL: node<N>, this process's pid,
   * the rank's place on its node). */
  const char* const* rank_host;
  const long* rank_pid;
  const int* rank_dev;
  /* Per rank (NULL: none), 1 where its process is gone by the end of the
   * job — it died in another communicator (--kill in a layout): it writes
   * no finalize dump; what it wrote while it lived stays. */
  const unsigned char* rank_gone;
  /* When those processes died, from the job's start (emulated; 0: by the
   * end): what their plugin wrote after it is taken back, as a dead
   * process writes nothing. */
  uint64_t gone_at_ns;
  /* A layout's communicator: iteration it's call starts no earlier than
   * iter_at_ns + it * iter_every_ns from the job's start (emulated), its
   * place in the job's step, so that every communicator's files share one
   * timeline, as the host clocks of a real job do. 0: at once. */
  uint64_t iter_at_ns, iter_every_ns;

  char* owned[64];     /* strings read from scenario files               */
  int n_owned;
} pt_sim_config;

/* Logger levels of the emulated NCCL_DEBUG, host-neutral. */
enum {
  PT_SIM_LOG_NONE = 0,
  PT_SIM_LOG_ERROR,
  PT_SIM_LOG_VERSION,
  PT_SIM_LOG_WARN,
  PT_SIM_LOG_INFO,
  PT_SIM_LOG_ABORT,
  PT_SIM_LOG_TRACE
};

void pt_sim_config_init(pt_sim_config* c);
/* Frees what parsing a scenario file allocated. */
void pt_sim_config_release(pt_sim_config* c);
/* Parses command-line options (argv[0] is the command name). On error
 * prints a message naming the option and the accepted values to `err` and
 * returns 2; returns 1 for --help (usage printed to `out`), 0 otherwise. */
int pt_sim_parse_args(pt_sim_config* c, int argc, char** argv, FILE* out, FILE* err);
void pt_sim_usage(FILE* f);
/* The i-th option's name (without "--"), NULL past the last one. */
const char* pt_sim_option(int i, int* takes_value);

/* ---------------------------------------------------------------------------
 * The job and its ground truth
 * ------------------------------------------------------------------------- */

/* Why an op stops short of its last step (ground truth). */
typedef enum {
  PT_WHY_NONE = 0,     /* completes                                   */
  PT_WHY_GPU,          /* send: the GPU does not produce the data     */
  PT_WHY_CREDIT,       /* send: the receiver has posted no buffer     */
  PT_WHY_DATA,         /* recv: the sender's data does not arrive     */
  PT_WHY_CONSUME,      /* recv: the GPU does not consume the data     */
  PT_WHY_POST,         /* recv: receives are never posted             */
  PT_WHY_DEAD,         /* the rank is dead                            */
  PT_WHY_NOT_RUN       /* the batch never ran: the job hung before it */
} pt_why;

enum { PT_OPK_NET = 0, PT_OPK_LEAK = 1 };

/* What the plugin was told about an op, as emitted (legacy counter units). */
typedef struct {
  int64_t cnt[11];   /* last value stored per ProxyDiag counter kind     */
  int last_kind;     /* last kind that stored a value; 100 = none        */
  int post_ts;       /* a POSTED update carried the timestamp flag       */
  int send_ts;       /* a KERNEL_COPY_READY update carried it            */
  int registered;    /* entered progress: state 19 delivered (2.27+), or
                        the ProxyOp started (2.23-2.26, started there)  */
  int started;       /* the ProxyOp event was started                    */
  int stopped;       /* the ProxyOp event was stopped                    */
  int64_t callbacks; /* callbacks about this op and its steps            */
  int64_t retries;   /* step callbacks beyond the canonical sequence     */
  int left_open;     /* step handles the host never stops: the 2.24-2.26
                        receive loop stops only a batch's first step    */
} pt_sim_seen;

typedef struct {
  /* Identity. */
  int rank;          /* rank of the communicator the op belongs to       */
  int proxy_rank;    /* rank whose proxy thread progresses it (PXN)      */
  int peer, channel, is_send, batch, call, kind;
  int seq;           /* schedule order                                   */
  uint64_t comm_hash;
  int64_t op_count;
  int64_t func_seq;  /* a collective's seqNumber, counted per function; a
                      * p2p op's calls so far to its peer that way       */
  int func_idx, proto, pattern;
  uint32_t nbytes, total_bytes;
  int n;             /* transfers = profiler nSteps (2.24+)              */
  int raw;           /* raw steps (rawProxyNsteps; nSteps on 2.23)       */
  int slice;         /* sliceSteps                                       */
  int step_bytes;    /* bytes per raw step                               */
  int chunk_size;    /* args->chunkSize: step_bytes x chunkSteps         */
  int xfer_bytes;    /* bytes of one transfer                            */
  int last_bytes;    /* bytes of the last transfer                       */
  int chunk_xfers;   /* transfers per ring step (allreduce)              */
  int64_t base;      /* the connection's step base before this op (raw) */
  double slow;       /* delay factor of a slow link (network phases), 1 = none */
  double slow_gpu;   /* delay factor of a slow GPU (its own GPU phases)  */
  double slow_host;  /* delay factor of its rank's slow proxy thread (every phase it times) */
  double slow_from_s, slow_gpu_from_s, slow_host_from_s; /* from then on, after the job's start */

  /* Oracle: how far each phase gets, in transfers. */
  int lim_post;      /* recv: receives posted at most                    */
  int lim_ready;     /* send: transfers the GPU produces                 */
  int lim_tx;        /* send: transfers isend accepts (receiver credit)  */
  int lim_recv;      /* recv: transfers that arrive                      */
  int lim_consume;   /* recv: transfers the GPU consumes                 */
  int exp_posted, exp_trans, exp_recvd, exp_done; /* final, in transfers */
  pt_why why;
  int foreign;       /* PXN: progressed by another process's proxy (its
                      * plugin refuses it); a PXN op of a helper in the
                      * same process (--ranks-per-process) is not foreign:
                      * recorded into its rank's trace by that thread  */
  int absent;        /* never posted by the application (no-recv)        */
  int dead;          /* belongs to a rank that died                      */
  void* task;        /* all-to-all: the P2p handle of its peer's Send or
                      * Recv, set by its rank's application thread before
                      * the batch is posted                              */

  pt_sim_seen seen;  /* written by the proxy thread, read after join     */
} pt_sim_op;

typedef struct {
  int nranks, nodes, rpn, channels, n_calls, n_batches;
  int window;        /* NCCL_STEPS */
  uint64_t comm_hash;
  pt_sim_op* ops;    /* every op, grouped by batch, then proxy rank      */
  size_t n_ops;
  /* ops of (batch b, proxy rank r): ops[first[b*nranks+r] ..+count[...]] */
  size_t* first;
  int* count;
  int hung_batch;    /* first batch that does not complete; -1 = none
                      * (a pipeline: the batch the fault strikes)        */
  int iter_batches;  /* batches an iteration: the calls, or a pipeline's slots */
  int* pipe_lo;      /* pipeline, per batch: the lower stage of its pair   */
  int* pipe_dirs;    /* ... and the directions it moves (PT_PIPE_*)        */
  int* last_batch;   /* per rank: the last batch it runs                  */
  int fault_batch[PT_SIM_MAX_FAULTS]; /* per fault, the batch it strikes  */
  int* dead_rank;    /* per rank: 1 if it dies                           */
  int* ring;         /* per channel: the ring order, nranks entries each */
  /* Per fault (stall, no-recv), the channels (bit c, c < 64) where it
   * struck: the data got as far as its step, so it is what stops the edge,
   * not a fault upstream that starved it first. */
  uint64_t fault_struck[PT_SIM_MAX_FAULTS];
  uint64_t fault_shown[PT_SIM_MAX_FAULTS];   /* channels where a network op shows its stop first-hand */
  uint64_t fault_held[PT_SIM_MAX_FAULTS];    /* channels where a stall's node sends out nothing more for
                                                another fault downstream (ring_shown)         */
  int hung_no_net;   /* the hung batch has no op that leaves a node      */
  uint64_t fault_below[PT_SIM_MAX_FAULTS];   /* of those, channels where its receive consumed less than
                                                the hold alone lets it (a run without the stall) */
} pt_sim_job;

int pt_sim_job_build(const pt_sim_config* c, pt_sim_job* job, FILE* err);
void pt_sim_job_free(pt_sim_job* job);
/* Applies the faults and fills every op's limits and expectations.
 * Returns 0; -2 when a fault does not fit the job (a step the op does not
 * have), -1 on other errors; messages go to `err`. */
int pt_sim_truth_compute(const pt_sim_config* c, pt_sim_job* job, FILE* err);

/* Legacy status name of an op whose counters are those given (spec
 * rccl-proxytrace.md §3.6); `raw` is nSteps in raw steps. */
const char* pt_sim_status(int is_send, int raw, int64_t posted, int64_t received,
                          int64_t transmitted, int64_t done);
/* Status from what the op was told (seen counters). */
const char* pt_sim_op_status(const pt_sim_op* op);
const char* pt_sim_why_name(pt_why why);
void pt_sim_truth_print(const pt_sim_config* c, const pt_sim_job* job, FILE* f);
/* The ground truth as one line of JSON (docs/sim.md, "The ground truth as
 * JSON"): the job, the faults, the verdict a correct analysis of the dumps
 * reaches, and the culprits it names — each with whether the dumps can
 * show it on its own rank ("exact") or only on its node. */
void pt_sim_truth_json(const pt_sim_config* c, const pt_sim_job* job, FILE* f);

/* A pipeline's step (pipeline.c): the 1F1B schedule of M microbatches
 * over P stages as slots, each an exchange of the stages lo and lo + 1
 * moving forward (lo to lo + 1), backward or both. */
enum { PT_PIPE_FWD = 1, PT_PIPE_BWD = 2 };
int pt_sim_pipe_slots(int P, int M);
/* Fills lo[] and dirs[] (pt_sim_pipe_slots entries) in an order that keeps
 * every stage's own; returns their number, or -1. */
int pt_sim_pipe_schedule(int P, int M, int* lo, int* dirs);
/* Where each stage stops: stop[s] the slot it is stuck in, K when it
 * completes the step, -1 when it never enters it (enters[s] 0). held[j]
 * (NULL: none): the stages of slot j a fault holds there (PT_PIPE_HOLD_*). */
enum { PT_PIPE_HOLD_LO = 1, PT_PIPE_HOLD_HI = 2 };
void pt_sim_pipe_stops(int P, int K, const int* lo, const int* enters, const unsigned char* held, int* stop);
/* Which stages of slot j a fault of `kind` on stage `rank` from transfer
 * `step` holds, the slot's ops U transfers long and NCCL_STEPS W transfers:
 * a stall or a receive never posted both (the slot fits it); a stage that
 * dies itself, and its neighbour only where it waits on what the dead stage
 * no longer sends or takes in. */
int pt_sim_pipe_held(const int* lo, const int* dirs, int j, int rank, pt_fault_kind kind, int step, int U, int W);
/* The slot a fault of `kind` on stage `rank` strikes: its nth call of the
 * step that fits the fault; -1 when it has none. */
int pt_sim_pipe_fault_slot(int K, const int* lo, const int* dirs, int rank, pt_fault_kind kind, int nth);

/* --layout: "TPxPPxDP" and "tp|pp|dp:INDEX" (0, or -1), and the run of
 * every communicator of the layout (layout.c): 0 completed, 3 hung, 1 or 2
 * as pt_cmd_sim. */
int pt_sim_layout_parse(const char* s, int* tp, int* pp, int* dp);
int pt_sim_fault_comm_parse(const char* s, int* kind, int* index);
int pt_sim_layout_run(const pt_sim_config* c, FILE* out, FILE* err);

/* ---------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------- */

typedef struct {
  int status;              /* 0 = ran; else the sim's exit code (1, 2)   */
  int loaded;              /* a plugin was loaded                        */
  int api_version;         /* its ncclProfiler_vN                        */
  int has_dump_hook;
  char plugin_path[512];
  char plugin_name[64];
  int mask;                /* activation mask after the last init        */
  int batches_run;         /* batches every rank started                 */
  int hung;                /* the job hung (faults)                      */
  uint64_t callbacks;      /* calls into the plugin, all threads         */
  long unwritten_handles;  /* --strict: startEvent calls that left
                              *eHandle unwritten                         */
  double seconds;          /* the job's time, init to last stop (emulated
                              seconds under emulated time)                 */
  int emulated;            /* the job ran on emulated time (sched.c)      */
  int deadlock;            /* emulated: every thread waited on another (a bug) */
  double hung_at;          /* seconds from the start to the first rank's
                              hang (-1 = none); --hold counts from there   */
  int signal;              /* --signal-after: the signal number sent      */
  int signals_sent;        /* 0 or 1                                      */
  long signals_seen;       /* by the handler the host installed before
                              loading the plugin (the plugin must chain)   */
  int plugin_dump_dir;     /* this run set PROXYTRACE_DUMP_DIR to dump_dir */
  char files_dir[4096];    /* PROXYTRACE_DUMP_DIR during the run; "" none  */
  pt_sim_job job;          /* with truth; freed by pt_sim_result_free    */
} pt_sim_result;

/* Runs the job. Returns 0 when it ran (hung or not: see res->hung), 1 when
 * it could not (plugin not loaded, bad job), 2 when a fault does not fit
 * the job; messages go to `err`. One run at a time per process (the host's
 * logger is process-wide, as NCCL's is). */
int pt_sim_run(const pt_sim_config* c, pt_sim_result* res, FILE* err);

/* The proxytrace plugin that belongs to this program: beside it (the build
 * folder), else in ../lib or ../lib64 (an installation). Fills `out` and
 * returns 1, or 0 when there is none. */
int pt_sim_own_plugin(char* out, size_t n);
void pt_sim_result_free(pt_sim_result* res);
/* The closing human summary. */
void pt_sim_summary(const pt_sim_config* c, const pt_sim_result* res, FILE* f);
/* With --dump-dir: where each rank's dumps are, and which ranks left no
 * dump in this run (no legacy dump header in their log, no dump file of
 * this process). */
void pt_sim_dump_summary(const pt_sim_config* c, const pt_sim_result* res, FILE* f);

/* Parses "64M", "1G", "4096", "2K" (binary units). 0 on success. */
int pt_sim_parse_size(const char* s, size_t* out);
const char* pt_sim_call_name(int kind);
/* A ring collective (all-reduce, reduce-scatter, all-gather): 1, else 0;
 * its ring steps per loop of n ranks; NCCL's name and ncclFunc_t index. */
int pt_sim_ring_coll(int kind);
int pt_sim_ring_steps(int kind, int n);
const char* pt_sim_coll_func(int kind);
int pt_sim_coll_func_idx(int kind);
int pt_sim_func_index(const char* name); /* a collective's ncclFunc_t index by name (0..4), -1 */
const char* pt_sim_proto_name(int proto);

#ifdef __cplusplus
}
#endif
#endif
