/*
 * internal.h — what the emulator's files share: the host profile, the
 * plugin as the host holds it, the host-neutral event and state-argument
 * forms that abi.c turns into a given API version, and the run state.
 */
#ifndef PT_SIM_INTERNAL_H
#define PT_SIM_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl/profiler.h"
#include "nccl/profiler_v6.h"
#include "sim.h"

/* ---------------------------------------------------------------------------
 * Host profiles (host.c)
 * ------------------------------------------------------------------------- */

enum { SIM_GATE_2_23, SIM_GATE_2_26, SIM_GATE_2_28 };
enum { SIM_INITFAIL_DISABLE, SIM_INITFAIL_LOG, SIM_INITFAIL_UNLOAD };

typedef struct {
  pt_host host;
  const char* name;
  int minor;            /* 23 … 30; RCCL follows 2.29                     */
  int native;           /* profiler API version the core speaks          */
  int rccl;             /* ProxyDiag, RCCL fields, dump hook, levels      */
  int gate;             /* SIM_GATE_*                                     */
  int old_op_states;    /* 2.23-2.26: ProxyOp states 0-7, op started at
                           the first progress call                        */
  int raw_step_events;  /* 2.23: sliceSteps step events per transfer       */
  int size_after_send_records; /* 2.23: a send's transSize grows after its
                           SendTransmitted/SendWait records                */
  int recv_stop_bug;    /* 2.24-2.26: consumption stops hit the first step */
  int api_events;       /* 2.28+: GroupApi/CollApi/P2pApi/KernelLaunch    */
  int init_fail;        /* SIM_INITFAIL_*                                 */
  int finalize_needs_ctx; /* 2.28+                                        */
  int log_mask;         /* 2.29+ and RCCL: "Profiler event mask: …"       */
  int warn_level;       /* the number of WARN in the host's logger enum   */
  int api_ce;           /* 2.29+: GroupApi/CollApi gates have the CE bits */
  int v1_init_ignored;  /* 2.24-2.25: the v1->v2 adapter drops init's result */
  int diag_bit;         /* RCCL: the mask bit of ProxyDiag (15; 16 from 2.31), else 0 */
  int diag_state;       /* RCCL: the state of a ProxyDiag update (31; 32 from 2.31) */
  int kernel_thread;    /* 2.31+: KernelCh events come from a profiler thread */
  int ras;              /* 2.31+: RAS may set every rank's mask (--ras-mask) */
  int comm_from_events; /* 2.23-2.26: init has no comm arguments; a rank and its
                           communicator come with its first event */
} sim_host;

const sim_host* sim_host_of(pt_host h);
/* Host-neutral level of a level number passed to this host's logger. */
int sim_host_level(const sim_host* h, int level);

/* Gating, release by release (host.c). */
int sim_gate_group_api(const sim_host* h, int m);
int sim_gate_coll_api(const sim_host* h, int m);
int sim_gate_p2p_api(const sim_host* h, int m);
int sim_gate_kernel_launch(const sim_host* h, int m);
int sim_gate_group(const sim_host* h, int m);
int sim_gate_coll(const sim_host* h, int m, const void* group);
int sim_gate_p2p(const sim_host* h, int m, const void* group);
/* The mask a task (and every proxy op of it) carries. */
int sim_task_mask(const sim_host* h, int m, const void* group);
int sim_gate_proxy_op(const sim_host* h, int m);
int sim_gate_proxy_step(const sim_host* h, int m, const void* op_handle);
int sim_gate_step_state(const sim_host* h, const void* op_handle);
int sim_gate_kernel_ch(const sim_host* h, int m);
int sim_gate_kernel_phase(const sim_host* h, int m);
int sim_gate_diag(const sim_host* h, int m, const void* op_handle);
/* "Group Coll … " as the 2.29+ mask line lists them. */
void sim_mask_words(const sim_host* h, int mask, char* buf, size_t len);

/* ---------------------------------------------------------------------------
 * Events and state arguments in the host's own terms (abi.c)
 * ------------------------------------------------------------------------- */

typedef struct {
  uint64_t type; /* one ncclProfile* bit */
  void* parent;
  int rank;
  union {
    struct {
      int depth;
    } group_api;
    struct { /* CollApi and P2pApi */
      const char* func;
      size_t count;
      const char* dtype;
      int root;
      void* stream;
      uint64_t user_tag;
    } api;
    struct {
      void* stream;
    } launch;
    struct {
      const char* name; /* comm name (v1-v3)            */
      uint64_t comm_hash; /* (v1-v3)                      */
      uint64_t seq;
      const char* func;
      const void* sbuf;
      void* rbuf;
      size_t count;
      int root;
      const char* dtype;
      size_t traffic;   /* (v1-v2)                        */
      uint8_t nch, nwarps;
      const char* algo;
      const char* proto;
      void* group;      /* the legacy Group handle        */
      uint64_t user_tag; /* (v7)                          */
    } coll;
    struct {
      const char* name;
      uint64_t comm_hash;
      const char* func;
      void* buff;
      const char* dtype;
      size_t count;
      int peer;
      uint8_t nch;
      void* group;
      uint64_t user_tag;
    } p2p;
    struct {
      pid_t pid;
      int ch, peer, nsteps, chunk, is_send;
      int diag; /* RCCL fields filled */
      uint64_t comm_hash;
      int64_t op_count;
      int func_idx, proto, pattern;
      uint32_t total_bytes, nbytes;
      int raw;
    } op;
    struct {
      int step;
    } step;
    struct {
      int ch;
      uint64_t ptimer;
    } kch;
    struct {
      int ch, phase;
      uint64_t ptimer;
    } kphase;
  };
} sim_event;

enum {
  SIM_ARGS_NULL = 0, /* the host passes NULL                             */
  SIM_ARGS_ZERO,     /* a zeroed args object                             */
  SIM_ARGS_STEP,     /* proxyStep.transSize                              */
  SIM_ARGS_OP,       /* v1-v3 proxyOp {transSize, steps}                  */
  SIM_ARGS_CTRL,     /* proxyCtrl.appendedProxyOps                       */
  SIM_ARGS_KCH,      /* kernelCh.pTimer                                  */
  SIM_ARGS_DIAG      /* RCCL proxyDiag                                   */
};

typedef struct {
  int kind;
  size_t trans_size;
  int steps;
  int appended;
  uint64_t ptimer;
  uint8_t diag_kind;
  uint16_t diag_flags;
  int64_t diag_value;
} sim_args;

#define SIM_GARBAGE 0xCD /* what --strict writes into bytes left unset */

/* The plugin as the host holds it (plugin.c, abi.c). */
typedef struct sim_plugin {
  const sim_host* host;
  int version;        /* N of the ncclProfiler_vN bound                   */
  int strict;
  const void* table;
  ncclProfilerProxyTraceDump_t dump_hook;
  int start_mode, record_mode; /* SIM_MODE_* (abi.c)                      */
  ncclResult_t (*start)(void*, void**, void*);
  ncclResult_t (*stop)(void*);
  ncclResult_t (*record)(void*, int, void*);
  ncclResult_t (*finalize)(void*);
  _Atomic int mask;   /* the process-global ncclProfilerEventMask         */
  _Atomic int off;    /* 2.23-2.27: a failed init disabled the profiler   */
  _Atomic int ras_mask; /* 2.31+: the mask RAS set (--ras-mask), -1 = none */
  _Atomic long unwritten; /* --strict: startEvent left *eHandle as it was  */
  pthread_mutex_t mu; /* load/unload, as the host's profiler mutex        */
  int refcount;
  int live;           /* communicators that loaded and are not destroyed  */
  int warned_close;
  pt_loader* loader;
  const pt_result* loaded;
  pt_request req;
  unsigned char* guard; /* PROT_NONE pages: foreign and device pointers   */
  size_t guard_len;
} sim_plugin;

void sim_abi_bind(sim_plugin* p);
/* init through the version's signature (and adapter). */
ncclResult_t sim_abi_init(sim_plugin* p, void** ctx, uint64_t comm_hash, const char* comm_name,
                          int nnodes, int nranks, int rank, ncclDebugLogger_t logfn);
/* startEvent: returns the handle the host keeps (NULL when the plugin
 * declined, or when the event was not delivered). */
void* sim_abi_start(sim_plugin* p, void* ctx, const sim_event* ev, uint64_t* calls);
void sim_abi_record(sim_plugin* p, void* h, int state, const sim_args* a, uint64_t* calls);
void sim_abi_stop(sim_plugin* p, void* h, uint64_t* calls);
/* Would a record of `state` reach the plugin (adapters drop some)? */
int sim_abi_forwards_state(const sim_plugin* p, int state);
int sim_abi_forwards_type(const sim_plugin* p, uint64_t type);

/* ---------------------------------------------------------------------------
 * Logger (log.c)
 * ------------------------------------------------------------------------- */

void sim_log_setup(const pt_sim_config* c, const sim_host* h, int nranks, int rpn);
int sim_log_open_dumps(const pt_sim_config* c, int nranks, FILE* err);
void sim_log_close(void);
/* With --dump-dir, what the process writes to standard error from now on
 * (until sim_log_close) goes to host.log: a plugin that the host's API
 * gives no logger (v1-v3) writes its lines there, as into a job's log. */
void sim_log_capture_stderr(void);
/* A dead rank's communicator is finalized to take it away from the
 * plugin (run.c), but a dead process writes nothing at its end: what its
 * plugin dump files in `dir` (PROXYTRACE_DUMP_DIR) gained meanwhile is
 * taken back. */
typedef struct {
  int n;
  char name[8][256];
  long long size[8];
} sim_files_mark;
void sim_files_mark_rank(const char* dir, int rank, sim_files_mark* m);
void sim_files_undo(const char* dir, int rank, const sim_files_mark* m);
void sim_log_set_rank(int rank); /* the calling thread acts for `rank`   */
/* The pid the files and log lines of `rank` carry: its process's in a layout
 * (pt_sim_config.rank_pid), else this one's. */
long sim_rank_pid(int rank);
/* Emulated time (sched.c): the logger's clock, and the id it prints for
 * the calling thread (SIM_TID_*), in place of the machine's. */
struct sim_sched_s;
void sim_log_use_clock(const struct sim_sched_s* s);
void sim_log_set_tid(long tid);
#define SIM_TID_MAIN 10000
#define SIM_TID_ACTOR 10001  /* + the actor's number           */
#define SIM_TID_INIT 20000   /* + the rank: its init thread     */
#define SIM_TID_KERNEL 30000 /* + the rank: its 2.31+ profiler thread */
/* The logger handed to the plugin (host level numbering). */
void sim_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                const char* fmt, ...) __attribute__((format(printf, 5, 6)));
/* A host message at a neutral level (PT_SIM_LOG_*). */
void sim_host_log(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
const char* sim_log_path(int rank); /* dump file of a rank, or NULL */

/* ---------------------------------------------------------------------------
 * Emulated time (sched.c)
 * ------------------------------------------------------------------------- */

/* A proxy round that moved, unpaced, lasts this long in emulated time. */
#define SIM_ROUND_NS 1000u
/* A rank's thread keeps its turn while due again within this long of its
 * turn's start (sched.c): 10 emulated ms. */
#define SIM_QUANTUM_NS 10000000u
/* The timers are spawned first, at most this many (sched.c). */
#define SIM_TIMER_ACTORS 3
/* The job starts at this Unix-epoch time (2026-01-01 00:00:00 UTC): the
 * times the dumps state are the same on every run. The plugin's clock then
 * reads SIM_CLOCK0_NS (a tick of 0 means "never set"), so its epoch is
 * SIM_EPOCH_NS - SIM_CLOCK0_NS. */
#define SIM_EPOCH_NS 1767225600000000000ull
#define SIM_CLOCK0_NS 1000000000ull

typedef struct sim_actor sim_actor;
/* The actors blocked on one condition (sim_sched_block / _wake). */
typedef struct {
  sim_actor* head;
} sim_waitq;
typedef struct sim_sched_s {
  _Atomic uint64_t now; /* the emulated clock, ns from the job's start (the
                           plugin reads it: include/proxytrace/emulator.h) */
  int on;               /* emulated time; else real time                  */
  sim_actor** actors;
  sim_actor** heap;     /* the actors due, by (wake_at, id)                */
  int n, cap, nheap;
  int essential_left;
  int quitting, deadlock;
  uint64_t latest;      /* the latest time any thread reached              */
  uint64_t t0_ns;       /* real time: CLOCK_MONOTONIC at the start         */
  cpu_set_t cpu;        /* emulated: the one CPU every actor runs on       */
  int pin;
  sem_t main_go;
} sim_sched;

void sim_sched_init(sim_sched* s, int emulated);
void sim_sched_free(sim_sched* s);
/* ns since the job's start: the emulated clock, or CLOCK_MONOTONIC's. */
uint64_t sim_sched_now(const sim_sched* s);
/* A thread of the job: under emulated time an actor that runs only in its
 * turn (essential: the job lasts until every essential one ended); under
 * real time a plain thread. pthread_create's result. */
int sim_sched_spawn(sim_sched* s, int essential, void* (*fn)(void*), void* arg, pthread_t* out);
/* The latest time any thread of the job reached (its length, once over). */
uint64_t sim_sched_latest(const sim_sched* s);
/* Runs the actors until every essential one ended, then lets the others go
 * (their waits return, sim_sched_quit true). -1 when the actors deadlocked. */
int sim_sched_run(sim_sched* s);
int sim_sched_quit(const sim_sched* s);
/* Waits until `t` (ns since the start): emulated, or for real. */
void sim_sched_sleep_until(sim_sched* s, uint64_t t);
/* Emulated only (else nothing): waits in q until sim_sched_wake(q). */
void sim_sched_block(sim_sched* s, sim_waitq* q);
void sim_sched_wake(sim_sched* s, sim_waitq* q);
/* The actor of thread t runs now, whatever it waits for. */
void sim_sched_wake_thread(sim_sched* s, pthread_t t);

/* ---------------------------------------------------------------------------
 * The running job (run.c, app.c, proxy.c)
 * ------------------------------------------------------------------------- */

typedef struct sim_run sim_run;

typedef struct {
  sim_run* run;
  int rank;
  void* ctx;           /* comm->profilerContext                            */
  int inited;          /* init returned success                            */
  int dead;            /* the rank dies in this job                        */
  int destroyed;       /* its communicator was destroyed                   */
  /* app -> proxy handoff */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  sim_waitq waiters;   /* emulated: the threads waiting on cv              */
  int posted;          /* batches posted by the app thread                 */
  int finished;        /* batches the proxy thread finished                */
  int stop;            /* the proxy thread has left                         */
  int app_done;        /* the application thread has left                  */
  int last_batch;      /* last batch this rank runs                        */
  /* per batch, what the app thread left for the proxy                    */
  void** task_handle;  /* [batch * 2 + (is_send? 0 : 1)]: Coll/P2p handle  */
  int* task_mask;      /* [batch]: the mask copied into the tasks          */
  int* has_dir;        /* [batch]: bit 0 send ops, bit 1 recv ops posted   */
  uint64_t calls;      /* callbacks made by this rank's threads            */
  uint64_t app_calls;
  uint64_t coll_seq[5]; /* sequence numbers per ncclFunc_t (0..4)        */
  pthread_t app_thread, proxy_thread, init_thread;
  /* pt_sim_config.gone_at_ns: its files as they were when its process
   * died, once the job's clock has passed it (run.c) */
  sim_files_mark* gone_mark;
} sim_rank;

struct sim_run {
  const pt_sim_config* cfg;
  const sim_host* host;
  sim_plugin plugin;
  pt_sim_job* job;
  sim_rank* ranks;
  int nranks;
  pid_t pid;
  pthread_barrier_t init_barrier;
  _Atomic int hung;
  _Atomic int done;    /* every application and proxy thread has left     */
  _Atomic int64_t hang_ns; /* when the first rank hung (0 = none), for --hold */
  sim_sched sched;     /* the clock and, emulated, the schedule (sched.c)  */
  const void* emu;     /* the plugin's emulator table (v2 or v1), when emulated */
  pthread_t dumper;    /* emulated: the plugin's timers' actor             */
  sim_waitq dumper_idle; /* it waits here while the plugin has no timer    */
  int has_dumper;
  const char* files_dir; /* the plugin's dump files (dead ranks' are undone) */
};

/* Waits on a rank's condition (rk->cv under rk->mu): under emulated time
 * the actor gives up its turn until sim_broadcast; 0 once the job is being
 * wound up. */
int sim_wait(sim_run* run, sim_rank* rk);
void sim_broadcast(sim_run* run, sim_rank* rk);
/* ns since the job's start on the job's clock. */
static inline uint64_t sim_now_ns(const sim_run* run) { return sim_sched_now(&run->sched); }
/* A rank's thread ends (emulated): a dead rank whose threads have both
 * ended takes its communicator with it now, as its process would. */
void sim_rank_thread_ended(sim_run* run, sim_rank* rk);

/* faults.c */
/* The polls one phase of op waits (fractional under --pace, where a poll
 * is a time): drawn from rng; gpu_phase: the GPU's (producing, consuming),
 * else the network's; since_start_s: how long the job has run. */
double sim_phase_polls(const pt_sim_config* c, const pt_sim_op* op, int gpu_phase, double since_start_s,
                       uint64_t* rng);
int sim_fault_parse(const char* kind, const char* value, pt_sim_fault* f, FILE* err);
int sim_faults_check(const pt_sim_config* c, FILE* err);
/* --mismatch's WHAT, its parse, and the call a rank makes with it. */
enum { SIM_MISMATCH_ALLGATHER = 0, SIM_MISMATCH_REDUCESCATTER, SIM_MISMATCH_BROADCAST, SIM_MISMATCH_HALF,
       SIM_MISMATCH_NUM };
int sim_mismatch_parse(const char* s);
void sim_mismatch_call(int what, size_t count, int nranks, const char** func, size_t* out_count);
/* The skip or mismatch fault of `rank` in batch `b`, or NULL. */
const pt_sim_fault* sim_fault_desync(const pt_sim_config* c, int rank, int b);
/* One line on a fault; `slice` (sliceSteps of the ops it strikes, 0 when
 * unknown) and `scale` (the dump's steps per transfer there) add the step
 * the dump shows. */
void sim_fault_describe(const pt_sim_fault* f, int slice, int scale, char* buf, size_t len);
/* "stall", "no-recv", … as the options name them. */
const char* sim_fault_name(pt_fault_kind k);
/* A timing fault: a slow link, GPU or proxy thread (no hang; paced). */
int sim_fault_timing(pt_fault_kind k);
/* The fault as the option that sets it ("--stall 3:0:5"). */
void sim_fault_option(const pt_sim_fault* f, char* buf, size_t len);
/* truth.c: an op of the faulty call that fault f strikes, NULL when it
 * strikes none. */
const pt_sim_op* sim_fault_op(const pt_sim_config* c, const pt_sim_job* job, const pt_sim_fault* f);
/* The fault as sim_fault_describe says it, in the units of this host's
 * dumps. */
void sim_fault_line(const pt_sim_config* c, const pt_sim_job* job, const pt_sim_fault* f, char* buf, size_t len);
/* The units and the opCount of the dumps under the host: what one of the
 * op's transfers counts in the dump's counters and nSteps (RCCL's ProxyDiag
 * counters and NCCL 2.23's steps are raw steps, NCCL 2.24+'s transfers),
 * and the op's opCount there (RCCL's own; under NVIDIA NCCL the one the
 * dump format derives from the parent Coll or P2p event: docs/dump-json.md). */
int sim_dump_scale(const pt_sim_config* c, const pt_sim_op* op);
int64_t sim_dump_op_count(const pt_sim_config* c, const pt_sim_op* op);

/* pipeline.c: the batches of one iteration (a pipeline's slots, else
 * the calls). */
int sim_iter_batches(const pt_sim_config* c);
/* Does rank r make a call in batch b (a pipeline's slot has two stages)? */
static inline int sim_job_calls(const pt_sim_job* job, int r, int b) {
  return !job->pipe_lo || job->pipe_lo[b] == r || job->pipe_lo[b] + 1 == r;
}

/* plugin.c */
int sim_plugin_load(sim_plugin* p);
void sim_plugin_unload(sim_plugin* p);
int sim_comm_init(sim_run* run, sim_rank* rk);
void sim_comm_destroy(sim_run* run, sim_rank* rk, int dump);

void* sim_app_main(void* arg);
void* sim_proxy_main(void* arg);
/* A proxy thread whose ops have all been blocked for `stuck` rounds asks
 * whether to abort the hung job now: after --hang-polls rounds and, with
 * --hold, once that much wall-clock time has passed since the first rank
 * hung (meanwhile it paces the polling, 1 ms per round). */
int sim_hang_abort(sim_run* run, int stuck);
/* Foreign (another process's) pointer for rank r: inside the guard pages. */
void* sim_foreign_ptr(sim_run* run, int r, int what);

/* PRNG: xorshift64*, seeded per op (splitmix64 of the inputs). */
static inline uint64_t sim_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static inline uint64_t sim_rand(uint64_t* s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

#endif
