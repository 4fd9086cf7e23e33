/*
 * count_plugin.h — what the callback-counting test plugin records, read by
 * the emulator's tests through count_results() after a run.
 *
 * The plugin counts every callback by event type and state, checks that it
 * arrives on the thread the spec names for it (nccl-profiler-abi.md §6.2:
 * init on communicator-init threads, API/Group/Coll/P2p on the application
 * thread, ProxyOp/ProxyStep/ProxyCtrl/KernelCh on "NCCL Progress" threads,
 * finalize and the dump hook on the destroying thread), and keeps one record
 * per ProxyOp with per-step callback counts and the last ProxyDiag value of
 * each counter kind.
 */
#ifndef PT_TESTS_SIM_COUNT_PLUGIN_H
#define PT_TESTS_SIM_COUNT_PLUGIN_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define COUNT_MAX_OPS 2048
#define COUNT_MAX_STEPS 256 /* per-step counts kept for steps 0..255 */
#define COUNT_NTYPES 16
#define COUNT_NSTATES 32

typedef struct {
  int tag;                 /* handle tag (internal)                        */
  int version;             /* table that started it                         */
  int rank, channel, peer, is_send, nsteps, chunk;
  pid_t pid;
  long seq;                /* start order over the whole run                */
  void* ctx;
  void* parent;
  uint64_t comm_hash;      /* RCCL fields of a v6 descriptor                */
  int64_t op_count;
  int raw;
  atomic_int states[COUNT_NSTATES + 1]; /* records per state (31 = diag)   */
  atomic_int stops;
  int64_t diag[11];        /* last ProxyDiag value per kind (no skip flag)  */
  int diag_last_kind;
  int step_calls[COUNT_MAX_STEPS]; /* callbacks to each step id           */
  int step_starts[COUNT_MAX_STEPS];
  int step_max;            /* highest step id seen + 1                      */
  int double_stops;        /* a step handle stopped twice                   */
  int unstopped_restarts;  /* a step started again before being stopped     */
  /* Order and pacing, as the op's callbacks arrive. */
  int starts_total;        /* step starts so far                            */
  int open_now, open_max;  /* step handles started and not stopped          */
  int starts_at_first[COUNT_NSTATES + 1]; /* starts_total when a state (on
                              the op or a step of it) first came; -1 never */
  int step_started[COUNT_MAX_STEPS]; /* starts per step id, never undone   */
  int posted_before_start; /* SendPosted{steps} before step steps-1 started */
  int64_t post_trans[COUNT_MAX_STEPS]; /* transSize of a step's first
                              SendGPUWait/RecvWait; -1 none or NULL args   */
  int64_t op_trans[8];     /* last transSize per ProxyOp state 0-7          */
  int op_steps[8];         /* last steps per ProxyOp state 0-7              */
  int send_waits;          /* SendWait records on the op's steps            */
  int diag_transmitted;    /* TRANSMITTED updates                           */
  int diag_before_state;   /* TRANSMITTED before its step's SendWait        */
  int diag_posted;         /* POSTED updates                                */
  int diag_posted_at_tail; /* POSTED updates before the first RECV_TAIL; -1 */
  int step_states[COUNT_NSTATES + 1]; /* records per state on its steps  */
  int step_stops;          /* its step handles stopped (first stops)        */
} count_op;

typedef struct {
  atomic_long starts[COUNT_NTYPES]; /* by type bit index                    */
  atomic_long stops[COUNT_NTYPES];
  atomic_long records[COUNT_NSTATES + 1];
  atomic_long wrong_thread;          /* callbacks from the wrong thread      */
  atomic_long wrong_thread_type[COUNT_NTYPES];
  atomic_long init_calls, init_fails, finalize_calls, dump_calls;
  atomic_long init_threads_distinct; /* inits that ran on a thread of their own */
  atomic_int init_now, init_max_concurrent;
  atomic_long null_args[COUNT_NSTATES + 1]; /* records with NULL args, by state */
  atomic_long bad_ctx;               /* a context the plugin did not make   */
  atomic_long foreign_ops;           /* ProxyOp with a pid not ours          */
  atomic_int last_p2p_nch;           /* v4: p2p.nChannels byte, last seen    */
  atomic_int last_arg19_byte;        /* first byte of state-19 args          */
  atomic_int last_arg23_byte;        /* first byte of state-23 args (-1 NULL) */
  atomic_long coll_named;            /* v1-v3 coll with a name or commHash   */
  atomic_long step_transsize_set;    /* step states with transSize != 0      */
  atomic_long parent_is_group;       /* Coll whose parentObj is the Group    */
  atomic_long parent_is_api;         /* Coll/P2p whose parentObj is an API event */
  atomic_int mask_seen;              /* the mask after init                  */
  atomic_long n_ops;
  count_op ops[COUNT_MAX_OPS];
} count_results;

/* Exported by the plugin. */
typedef count_results* (*count_results_fn)(void);
typedef void (*count_reset_fn)(int mask);

#endif
