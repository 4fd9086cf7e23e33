/*
 * test_sim_counts.c — the emulator driving the callback-counting plugin
 * (count_plugin.c): event counts per step, thread roles, gating, adapters,
 * strict mode, faults and determinism, each against what the spec states.
 *
 * Expected per-step sequences (nccl-profiler-abi.md §6.6-§6.7, §2.4):
 *   2.27+      send: start, SendGPUWait, SendPeerWait, SendWait, stop
 *              recv: start, RecvWait, RecvFlushWait, RecvGPUWait, stop
 *              = 5 callbacks per network step, plus InProgress once per op;
 *   2.24-2.26  send steps: start, SendGPUWait, SendWait, stop (4) and the
 *              ProxyOp states SendPosted, RemFifoWait, Transmitted, Done once
 *              per step; recv steps: start, RecvWait, RecvFlushWait,
 *              RecvGPUWait, stop (5) with RecvPosted … RecvDone on the op;
 *   2.23       the same, with one step event per raw step (sliceSteps per
 *              transfer) and nSteps in raw steps.
 * Pacing (net.cc): one phase per progress call, posting first, so a whole
 * window of NCCL_STEPS raw steps is posted, with as many step handles open,
 * before the first transfer.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "count_plugin.h"
#include "nccl/profiler.h"
#include "sim_helpers.h"

typedef struct {
  void* dl;
  count_results_fn results;
  count_reset_fn reset;
  const char* path;
} counter;

static counter open_counter(const char* file) {
  counter k = {0};
  k.path = st_path(file);
  k.dl = dlopen(k.path, RTLD_NOW | RTLD_LOCAL);
  if (!k.dl) fail_msg("cannot open %s: %s", k.path, dlerror());
  k.results = (count_results_fn)dlsym(k.dl, "count_results_get");
  k.reset = (count_reset_fn)dlsym(k.dl, "count_reset");
  assert_non_null(k.results);
  assert_non_null(k.reset);
  return k;
}

static void apply(pt_sim_config* c, const char* const* args) {
  char* argv[24] = {"sim"};
  int argc = 1;
  for (int i = 0; args && args[i]; i++) argv[argc++] = (char*)args[i];
  assert_int_equal(pt_sim_parse_args(c, argc, argv, stdout, stderr), 0);
}

/* Runs a job with the counter; the result must be freed. */
static count_results* run(counter* k, pt_host host, int mask, const char* const* args, pt_sim_result* res,
                          pt_sim_config* c) {
  st_config(c, host, k->path);
  apply(c, args);
  st_capture cap;
  st_capture_init(&cap, c, c->nodes * c->ranks_per_node);
  k->reset(mask);
  assert_int_equal(pt_sim_run(c, res, stderr), 0);
  st_capture_free(&cap);
  c->line_fn = NULL;
  return k->results();
}

/* nccl-2.27.3 runs the 2.27 core but cannot load a plugin by path
 * (test_2_27_3_refuses_paths). */
static const pt_host all_hosts[] = {PT_HOST_NCCL_2_23, PT_HOST_NCCL_2_24, PT_HOST_NCCL_2_25,
                                    PT_HOST_NCCL_2_26, PT_HOST_NCCL_2_27, PT_HOST_NCCL_2_28,
                                    PT_HOST_NCCL_2_29, PT_HOST_NCCL_2_30, PT_HOST_RCCL};

static int minor_of(pt_host h) {
  switch (h) {
    case PT_HOST_NCCL_2_23: return 23;
    case PT_HOST_NCCL_2_24: return 24;
    case PT_HOST_NCCL_2_25: return 25;
    case PT_HOST_NCCL_2_26: return 26;
    case PT_HOST_NCCL_2_27_3:
    case PT_HOST_NCCL_2_27: return 27;
    case PT_HOST_NCCL_2_28: return 28;
    case PT_HOST_NCCL_2_29: return 29;
    default: return 30;
  }
}

/* The truth op a counting record stands for: same key, k-th in start order. */
static const pt_sim_op* truth_of(const pt_sim_job* job, const count_results* R, const count_op* rec) {
  int k = 0;
  for (long i = 0; i < R->n_ops && i < COUNT_MAX_OPS; i++) {
    const count_op* o = &R->ops[i];
    if (o->rank == rec->rank && o->channel == rec->channel && o->peer == rec->peer && o->is_send == rec->is_send &&
        o->seq < rec->seq)
      k++;
  }
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->rank != rec->rank || op->channel != rec->channel || op->peer != rec->peer ||
        (op->kind == PT_OPK_NET && op->is_send) != rec->is_send || op->absent || op->why == PT_WHY_NOT_RUN)
      continue;
    if (k-- == 0) return op;
  }
  return NULL;
}

static int net_ops_run(const pt_sim_job* job) {
  int n = 0;
  for (size_t i = 0; i < job->n_ops; i++)
    if (job->ops[i].kind == PT_OPK_NET && !job->ops[i].absent && job->ops[i].why != PT_WHY_NOT_RUN) n++;
  return n;
}

static int calls_of(const pt_sim_config* c, int kind) {
  int n = 0;
  for (int i = 0; i < c->n_calls; i++) n += c->calls[i].kind == kind;
  return n * c->iters;
}

/* Transfers posted before the first one goes out: NCCL_STEPS raw steps. */
static int window_of(const pt_sim_op* op) {
  int w = 8 / op->slice;
  return w < op->n ? w : op->n;
}

static void test_step_sequences_per_host(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  const int mask = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |
                   ncclProfileProxyStep | ncclProfileProxyCtrl | ncclProfileProxyDiag;
  for (size_t h = 0; h < sizeof all_hosts / sizeof all_hosts[0]; h++) {
    pt_host host = all_hosts[h];
    int minor = minor_of(host), old = minor <= 26, raw = minor == 23, rccl = host == PT_HOST_RCCL;
    print_message("host %s\n", pt_host_name(host));
    pt_sim_config c;
    pt_sim_result res;
    count_results* R = run(&k, host, mask, NULL, &res, &c);
    int nranks = res.job.nranks, batches = res.job.n_batches;
    assert_int_equal(res.api_version, minor <= 23 ? 1 : minor <= 25 ? 2 : minor == 26 ? 3 : minor == 27 ? 4 : minor == 28 ? 5 : 6);
    assert_int_equal(R->n_ops, net_ops_run(&res.job));
    for (long i = 0; i < R->n_ops; i++) {
      const count_op* o = &R->ops[i];
      const pt_sim_op* op = truth_of(&res.job, R, o);
      assert_non_null(op);
      int steps = raw ? op->raw : op->n;
      assert_int_equal(o->nsteps, steps);
      /* args->chunkSize on 2.23, times sliceSteps from 2.24 */
      assert_int_equal(o->chunk, raw ? op->chunk_size : op->chunk_size * op->slice);
      assert_int_equal(o->step_max, steps);
      /* A window of steps is posted, all open, before the first transfer;
       * the step starts before SendPosted names it. */
      int per = raw ? op->slice : 1, w = window_of(op) * per;
      assert_int_equal(o->open_max, w);
      if (op->is_send) assert_int_equal(o->starts_at_first[old ? ncclProfilerProxyOpSendRemFifoWait
                                                                : ncclProfilerProxyStepSendPeerWait_v4], w);
      else assert_int_equal(o->starts_at_first[ncclProfilerProxyStepRecvFlushWait], w);
      assert_int_equal(o->posted_before_start, 0);
      if (rccl && op->is_send) {
        assert_int_equal(o->diag_posted_at_tail, window_of(op)); /* no poll in a call that posts */
        assert_int_equal(o->diag_before_state, 0);              /* SendWait, then TRANSMITTED */
      }
      int per_step = old ? (op->is_send ? 4 : 5) : 5;
      for (int s = 0; s < steps; s++) assert_int_equal(o->step_calls[s], per_step);
      assert_int_equal(atomic_load(&o->stops), 1);
      if (old) {
        int first = op->is_send ? ncclProfilerProxyOpSendPosted : ncclProfilerProxyOpRecvPosted;
        for (int st = first; st < first + 4; st++) assert_int_equal(atomic_load(&o->states[st]), op->n);
        assert_int_equal(atomic_load(&o->states[ncclProfilerProxyOpInProgress_v4]), 0);
      } else {
        assert_int_equal(atomic_load(&o->states[ncclProfilerProxyOpInProgress_v4]), 1);
      }
      /* ProxyDiag only where the host is RCCL. */
      assert_int_equal(atomic_load(&o->states[ncclProfilerProxyDiagUpdate]) > 0, rccl);
      assert_int_equal(o->double_stops, 0);
      assert_int_equal(o->unstopped_restarts, 0);
    }
    /* Thread roles, init concurrency, finalize, dump hook. */
    assert_int_equal(R->wrong_thread, 0);
    assert_int_equal(R->bad_ctx, 0);
    assert_int_equal(R->init_calls, nranks);
    assert_int_equal(R->init_threads_distinct, nranks);
    assert_true(atomic_load(&R->init_max_concurrent) >= 2);
    assert_int_equal(R->finalize_calls, nranks);
    assert_int_equal(R->dump_calls, rccl ? nranks : 0);
    /* Enqueue events: one Group per call; Coll per allreduce, P2p per send and recv. */
    assert_int_equal(R->starts[0], (long)nranks * batches);
    assert_int_equal(R->starts[1], (long)nranks * calls_of(&c, PT_SIM_ALLREDUCE));
    assert_int_equal(R->starts[2], (long)nranks * 2 * calls_of(&c, PT_SIM_SENDRECV));
    for (int t = 0; t < 6; t++) assert_int_equal(R->starts[t], R->stops[t]);
    assert_true(R->starts[5] > 0); /* ProxyCtrl */
    assert_int_equal(R->records[ncclProfilerProxyCtrlAppend], R->records[ncclProfilerProxyCtrlAppendEnd]);
    /* API events from 2.28 on, whose bits the mask lacks but proxy events imply. */
    assert_int_equal(R->starts[8], minor >= 28 ? (long)nranks * batches : 0);
    assert_int_equal(R->starts[9], minor >= 28 ? (long)nranks * calls_of(&c, PT_SIM_ALLREDUCE) : 0);
    assert_int_equal(R->starts[10], minor >= 28 ? (long)nranks * 2 * calls_of(&c, PT_SIM_SENDRECV) : 0);
    assert_int_equal(R->records[ncclProfilerGroupStartApiStop], minor >= 28 ? (long)nranks * batches : 0);
    assert_int_equal(R->starts[11], 0); /* KernelLaunch needs its own bit */
    /* Coll/P2p hang under the API events from 2.28 on, under the Group before. */
    if (minor >= 28) assert_int_equal(R->parent_is_group, 0);
    else assert_int_equal(R->parent_is_group, (long)nranks * calls_of(&c, PT_SIM_ALLREDUCE));
    pt_sim_result_free(&res);
    pt_sim_config_release(&c);
  }
}

/* The host, not the plugin's mask, decides: NCCL and RCCL send
 * Group/Coll/API events whenever proxy events are on (§5.2). */
static void test_gating(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  pt_sim_config c;
  pt_sim_result res;
  count_results* R = run(&k, PT_HOST_NCCL_2_29, ncclProfileProxyOp | ncclProfileProxyStep, NULL, &res, &c);
  long nr = res.job.nranks;
  assert_int_equal(R->starts[0], nr * res.job.n_batches);   /* Group */
  assert_int_equal(R->starts[1], nr * calls_of(&c, PT_SIM_ALLREDUCE)); /* Coll */
  assert_true(R->starts[2] > 0);                              /* P2p */
  assert_int_equal(R->starts[8], nr * res.job.n_batches);   /* GroupApi */
  assert_true(R->starts[9] > 0 && R->starts[10] > 0);         /* CollApi, P2pApi */
  assert_int_equal(R->starts[5], 0);                          /* no ProxyCtrl */
  assert_int_equal(R->starts[6], 0);                          /* no KernelCh */
  pt_sim_result_free(&res);

  /* 2.23-2.25: mask = P2p alone yields no P2p events, and no proxy ops. */
  R = run(&k, PT_HOST_NCCL_2_24, ncclProfileP2p, NULL, &res, &c);
  assert_int_equal(R->starts[0], nr * res.job.n_batches);
  assert_int_equal(R->starts[2], 0);
  assert_int_equal(R->starts[3], 0);
  pt_sim_result_free(&res);

  /* RCCL: ProxyDiag alone starts ProxyOps (and delivers state 31) and
   * steps (profiler.cc ncclProfilerStart{Send,Recv}ProxyStepEvent). */
  R = run(&k, PT_HOST_RCCL, ncclProfileProxyDiag, NULL, &res, &c);
  assert_int_equal(R->starts[3], net_ops_run(&res.job));
  assert_true(R->starts[4] > 0);
  assert_int_equal(R->starts[4], R->stops[4]);
  assert_true(R->records[ncclProfilerProxyStepSendWait] > 0);
  assert_true(R->records[ncclProfilerProxyDiagUpdate] > 0);
  pt_sim_result_free(&res);
  /* Not under NVIDIA, where the bit means nothing. */
  R = run(&k, PT_HOST_NCCL_2_29, ncclProfileProxyDiag | ncclProfileProxyOp, NULL, &res, &c);
  assert_int_equal(R->starts[4], 0);
  pt_sim_result_free(&res);

  /* 2.26-2.27 gate P2p without the NetPlugin bit; 2.28 with it. */
  R = run(&k, PT_HOST_NCCL_2_27, ncclProfileNetPlugin, NULL, &res, &c);
  assert_int_equal(R->starts[0], nr * res.job.n_batches);
  assert_int_equal(R->starts[1], nr * calls_of(&c, PT_SIM_ALLREDUCE));
  assert_int_equal(R->starts[2], 0);
  assert_int_equal(R->starts[3], net_ops_run(&res.job));
  pt_sim_result_free(&res);
  R = run(&k, PT_HOST_NCCL_2_28, ncclProfileNetPlugin, NULL, &res, &c);
  assert_int_equal(R->starts[2], nr * 2 * calls_of(&c, PT_SIM_SENDRECV));
  pt_sim_result_free(&res);

  /* The CE bits open GroupApi and CollApi from 2.29, not on 2.28. */
  R = run(&k, PT_HOST_NCCL_2_28, ncclProfileCeColl, NULL, &res, &c);
  assert_int_equal(R->starts[8] + R->starts[9] + R->starts[10], 0);
  pt_sim_result_free(&res);
  R = run(&k, PT_HOST_NCCL_2_29, ncclProfileCeColl, NULL, &res, &c);
  assert_int_equal(R->starts[8], nr * res.job.n_batches);
  assert_int_equal(R->starts[9], nr * calls_of(&c, PT_SIM_ALLREDUCE));
  assert_int_equal(R->starts[10], 0); /* P2pApi has no CE bit */
  pt_sim_result_free(&res);

  /* NVIDIA never sends ProxyDiag, whatever the mask says. */
  R = run(&k, PT_HOST_NCCL_2_30, 0xffff, NULL, &res, &c);
  assert_int_equal(R->records[ncclProfilerProxyDiagUpdate], 0);
  assert_true(R->starts[11] > 0); /* KernelLaunch: the mask has every bit */
  assert_int_equal(R->starts[6], R->stops[6]);
  assert_int_equal(R->starts[6], nr * res.job.channels * res.job.n_batches); /* KernelCh per channel */
  assert_int_equal(R->records[ncclProfilerKernelChStop], R->starts[6]);
  pt_sim_result_free(&res);

  /* 2.26: KernelCh without timestamps (no state 22). */
  R = run(&k, PT_HOST_NCCL_2_26, ncclProfileKernelCh | ncclProfileProxyOp, NULL, &res, &c);
  assert_true(R->starts[6] > 0);
  assert_int_equal(R->records[ncclProfilerKernelChStop], 0);
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
}

/* Version adapters (§3) and the bytes a host leaves unset (--strict). */
static void test_adapters_and_strict(void** state) {
  (void)state;
  const int mask = ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileGroupApi;
  static const char* strict[] = {"--strict", NULL};
  pt_sim_config c;
  pt_sim_result res;

  counter v4 = open_counter("libcount-v4.so");
  count_results* R = run(&v4, PT_HOST_NCCL_2_29, mask, strict, &res, &c);
  assert_int_equal(res.api_version, 4);
  assert_int_equal(atomic_load(&R->last_p2p_nch), 0xCD);   /* not copied by the v4 adapter */
  assert_int_equal(atomic_load(&R->last_arg19_byte), 0xCD); /* uninitialised args */
  assert_true(R->parent_is_group > 0);                      /* parent := parentGroup */
  assert_int_equal(R->parent_is_api, 0);
  assert_int_equal(R->starts[8] + R->starts[9] + R->starts[10], 0); /* API events dropped */
  assert_int_equal(R->records[ncclProfilerGroupStartApiStop], 0);
  assert_int_equal(R->wrong_thread, 0);
  pt_sim_result_free(&res);
  R = run(&v4, PT_HOST_NCCL_2_29, mask, NULL, &res, &c);
  assert_int_equal(atomic_load(&R->last_p2p_nch), 0);
  assert_int_equal(atomic_load(&R->last_arg19_byte), 0);
  pt_sim_result_free(&res);
  /* Natively (2.27) the v4 p2p descriptor has its channel count. */
  R = run(&v4, PT_HOST_NCCL_2_27, mask, strict, &res, &c);
  assert_int_equal(atomic_load(&R->last_p2p_nch), c.channels);
  assert_int_equal(atomic_load(&R->last_arg19_byte), 0);
  pt_sim_result_free(&res);

  counter v5 = open_counter("libcount-v5.so");
  R = run(&v5, PT_HOST_NCCL_2_30, mask, strict, &res, &c);
  assert_int_equal(res.api_version, 5);
  assert_int_equal(atomic_load(&R->last_arg19_byte), 0xCD);
  assert_int_equal(atomic_load(&R->last_arg23_byte), 0xCD); /* 23 with uninitialised args */
  assert_true(R->parent_is_api > 0);
  pt_sim_result_free(&res);
  R = run(&v5, PT_HOST_NCCL_2_28, mask, strict, &res, &c);
  assert_int_equal(atomic_load(&R->last_arg23_byte), -1); /* natively NULL */
  assert_int_equal(atomic_load(&R->last_arg19_byte), 0);  /* natively zeroed */
  pt_sim_result_free(&res);
  /* The RCCL v5 adapter swallows ProxyDiag. */
  R = run(&v5, PT_HOST_RCCL, mask | ncclProfileProxyDiag, NULL, &res, &c);
  assert_int_equal(R->records[ncclProfilerProxyDiagUpdate], 0);
  assert_int_equal(res.mask & ncclProfileProxyDiag, 0);
  pt_sim_result_free(&res);

  /* --strict notices a startEvent that does not write *eHandle. */
  counter all = open_counter("libcount.so");
  void (*lazy)(int) = (void (*)(int))dlsym(all.dl, "count_lazy_handles");
  assert_non_null(lazy);
  for (int pass = 0; pass < 2; pass++) {
    st_config(&c, PT_HOST_NCCL_2_29, all.path);
    if (pass) c.strict = 1;
    all.reset(mask);
    lazy(1);
    assert_int_equal(pt_sim_run(&c, &res, stderr), 0);
    assert_int_equal(res.unwritten_handles, pass ? (long)res.job.nranks * res.job.n_batches : 0);
    pt_sim_result_free(&res);
  }
  all.reset(mask);

  counter v1 = open_counter("libcount-v1.so");
  R = run(&v1, PT_HOST_NCCL_2_29, mask, strict, &res, &c);
  assert_int_equal(res.api_version, 1);
  assert_true(R->starts[3] > 0);
  assert_int_equal(R->records[ncclProfilerProxyOpInProgress_v4], 0);
  assert_int_equal(R->records[ncclProfilerProxyStepSendPeerWait_v4], 0);
  assert_true(R->records[ncclProfilerProxyStepSendGPUWait] > 0);
  assert_int_equal(R->step_transsize_set, 0); /* zeroed args */
  assert_int_equal(R->coll_named, 0);         /* name NULL, commHash 0 */
  pt_sim_result_free(&res);
  R = run(&v1, PT_HOST_NCCL_2_23, mask, NULL, &res, &c);
  assert_true(R->coll_named > 0); /* natively: comm name / hash in the descriptor */
  assert_int_equal(R->null_args[ncclProfilerProxyStepSendGPUWait], R->records[ncclProfilerProxyStepSendGPUWait]);
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
}

/* A v6 plugin on NCCL 2.31 runs through NVIDIA's v6 adapter
 * (src/plugin/profiler/profiler_v6.cc @889806836): KernelPhase is cleared
 * from the mask after init and never started, state 31 (KernelPhaseStop)
 * never recorded, KernelCh still comes; the descriptors are stack copies
 * the emulator poisons after each call. A v7 plugin gets the phases. */
static void test_v6_adapter_on_2_31(void** state) {
  (void)state;
  const int mask = ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep |
                   ncclProfileKernelCh | ncclProfileKernelPhase;
  static const char* strict[] = {"--strict", NULL};
  pt_sim_config c;
  pt_sim_result res;
  counter all = open_counter("libcount.so");
  count_results* R = run(&all, PT_HOST_NCCL_2_31, mask, strict, &res, &c);
  assert_int_equal(res.api_version, 6);
  assert_int_equal(res.mask & ncclProfileKernelPhase, 0);
  assert_int_equal(res.mask & ncclProfileKernelCh, ncclProfileKernelCh);
  assert_true(R->starts[6] > 0);              /* KernelCh */
  assert_int_equal(R->starts[15], 0);         /* no KernelPhase */
  assert_int_equal(R->records[31], 0);        /* no KernelPhaseStop */
  assert_true(R->records[ncclProfilerKernelChStop] > 0);
  assert_true(R->starts[3] > 0 && R->records[ncclProfilerProxyStepSendGPUWait] > 0);
  assert_int_equal(R->wrong_thread, 0);
  pt_sim_result_free(&res);
  /* The same plugin on 2.30 binds v6 natively: nothing to clear. */
  R = run(&all, PT_HOST_NCCL_2_30, mask, NULL, &res, &c);
  assert_int_equal(res.api_version, 6);
  assert_int_equal(res.mask & ncclProfileKernelPhase, ncclProfileKernelPhase); /* bit 15 means nothing there */
  assert_int_equal(R->starts[15], 0);
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
}

/* With jitter and failed irecvs, each step gets the canonical 5 callbacks
 * plus the repeats the emulator reports (SendPeerWait again, a receive step
 * started again without a stop). */
static void test_retries(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  static const char* args[] = {"--jitter", "3", "--recv-retry", "0.3", NULL};
  pt_sim_config c;
  pt_sim_result res;
  count_results* R = run(&k, PT_HOST_NCCL_2_29, ncclProfileProxyOp | ncclProfileProxyStep, args, &res, &c);
  long restarts = 0, retries = 0, steps = 0;
  for (long i = 0; i < R->n_ops; i++) {
    const count_op* o = &R->ops[i];
    const pt_sim_op* op = truth_of(&res.job, R, o);
    assert_non_null(op);
    long sum = 0;
    for (int s = 0; s < o->step_max; s++) sum += o->step_calls[s];
    assert_int_equal(sum, 5L * op->n + op->seen.retries);
    restarts += o->unstopped_restarts;
    retries += op->seen.retries;
    steps += op->n;
  }
  assert_true(restarts > 0);
  assert_true(retries > 0);
  assert_true(R->records[ncclProfilerProxyStepSendPeerWait_v4] > R->records[ncclProfilerProxyStepSendWait]);
  (void)steps;
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
}

/* --- the step facts of a stuck job, against net.cc ------------------------
 *
 * What each release's net.cc sends for one op when the network and the GPU
 * answer at once (jitter 0, no refused irecv, a GPU that keeps up), worked
 * out here from the code (docs/sim.md, "One send step and one receive step,
 * release by release") and not from the emulator: one phase per progress
 * call, posting first; a receive's call goes on past a post that got no
 * request (the step stays started, v2.28.9-1 net.cc:1432,1483); receives,
 * then flushes, then consumption (:1497,1570,1598), which stops every step
 * up to the GPU's head (:1608-1620) — on 2.24-2.26 the batch's first step
 * only (v2.25.1-1 net.cc:1460,1476). A send posts its window, then sends;
 * its steps stop one per call. */
typedef struct {
  int posted, recvd, trans, done; /* transfers, at the end                 */
  int distinct;   /* step ids started (a refused post: its step too)      */
  int stops;      /* step handles stopped, in step events                 */
  int max_open;   /* most step handles open at once, restarts aside       */
  int batches;    /* consumption calls that stopped something             */
  int post_stuck; /* the post of step `posted` is refused for good        */
} step_model;

static step_model model_recv(const pt_sim_op* op, int per, int stop_first_only) {
  step_model m = {0};
  const int W = 8 / op->slice, n = op->n;
  int open = 0;
  for (int idle = 0; idle < 2;) {
    int moved = 1;
    if (m.posted < n && m.posted < m.done + W) {
      if (m.posted < op->lim_post) {
        m.posted++;
        m.distinct = m.posted;
        open += per;
        if (open > m.max_open) m.max_open = open;
        idle = 0;
        continue;
      }
      if (!m.post_stuck) { /* started, no request: the call goes on */
        m.post_stuck = 1;
        m.distinct = m.posted + 1;
        open += per;
        if (open > m.max_open) m.max_open = open;
      }
    }
    if (m.recvd < m.posted && m.recvd < op->lim_recv) {
      m.recvd++;
    } else if (m.trans < m.recvd) {
      m.trans++;
    } else {
      int head = op->lim_consume < m.trans ? op->lim_consume : m.trans, k = head - m.done;
      if (k > 0) {
        int stopped = stop_first_only ? 1 : k * per;
        m.stops += stopped;
        open -= stopped;
        m.done = head;
        m.batches++;
      } else {
        moved = 0;
      }
    }
    idle = moved ? 0 : idle + 1;
  }
  return m;
}

static step_model model_send(const pt_sim_op* op, int per) {
  step_model m = {0};
  const int W = 8 / op->slice;
  m.trans = m.done = op->lim_tx < op->lim_ready ? op->lim_tx : op->lim_ready;
  m.posted = m.distinct = m.done + W < op->n ? m.done + W : op->n;
  m.stops = m.done * per;
  m.max_open = (W < op->n ? W : op->n) * per;
  return m;
}

/* The states of an op's phases: step states once per step a phase took it
 * through, and on 2.23-2.26 the ProxyOp's SendPosted/Transmitted/Done or
 * RecvPosted/Received/Transmitted/Done once per transfer (RecvDone also
 * where the stop missed its step; SendRemFifoWait counts isend tries,
 * checked apart). */
static void expect_phase_states(const count_op* o, const step_model* m, int is_send, int old, int per) {
  const int step_state[2][3] = {
      {ncclProfilerProxyStepRecvWait, ncclProfilerProxyStepRecvFlushWait, ncclProfilerProxyStepRecvGPUWait},
      {ncclProfilerProxyStepSendGPUWait, ncclProfilerProxyStepSendWait, -1}};
  const int steps[2][3] = {{m->posted, m->recvd, m->trans}, {m->posted, m->trans, 0}};
  for (int i = 0; i < 3; i++)
    if (step_state[is_send][i] >= 0) assert_int_equal(o->step_states[step_state[is_send][i]], steps[is_send][i] * per);
  if (!old) return;
  const int first = is_send ? ncclProfilerProxyOpSendPosted : ncclProfilerProxyOpRecvPosted;
  const int per_op[2][4] = {{m->posted, m->recvd, m->trans, m->done}, {m->posted, -1, m->trans, m->done}};
  for (int i = 0; i < 4; i++)
    if (per_op[is_send][i] >= 0) assert_int_equal(atomic_load(&o->states[first + i]), per_op[is_send][i]);
}

/* 2 nodes x 2 ranks, 2 channels: rank 1's GPU stops producing on channel 0
 * (a stuck send) and rank 2 stops posting receives on channel 1 (a stuck
 * receive), on every host profile; each op's step handles (opened, stopped,
 * left open, most open at once) and state counts as net.cc makes them. */
static void test_stuck_job_step_facts(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  static const pt_host hosts[] = {PT_HOST_NCCL_2_23, PT_HOST_NCCL_2_24, PT_HOST_NCCL_2_25, PT_HOST_NCCL_2_26,
                                  PT_HOST_NCCL_2_27, PT_HOST_NCCL_2_28, PT_HOST_NCCL_2_29, PT_HOST_NCCL_2_30,
                                  PT_HOST_RCCL,      PT_HOST_NCCL_2_31, PT_HOST_NCCL_2_32, PT_HOST_RCCL_2_31};
  static const char* jobs[][13] = {
      {"--ops", "sendrecv:8M", "--iters", "1", "--gpu-batch", "0", "--stall", "1:0:3", "--no-recv", "2:1:5", NULL},
      {"--ops", "allreduce:8M", "--iters", "1", "--gpu-batch", "0", "--stall", "1:0:3", "--no-recv", "2:1:5", NULL},
  };
  for (size_t h = 0; h < sizeof hosts / sizeof hosts[0]; h++) {
    const pt_host host = hosts[h];
    const int minor = host == PT_HOST_NCCL_2_31 || host == PT_HOST_RCCL_2_31 ? 31
                      : host == PT_HOST_NCCL_2_32                             ? 32
                                                                              : minor_of(host);
    const int old = minor <= 26, raw = minor == 23, bug = minor >= 24 && minor <= 26;
    for (int j = 0; j < 2; j++) {
      print_message("host %s, job %d\n", pt_host_name(host), j);
      pt_sim_config c;
      pt_sim_result res;
      count_results* R = run(&k, host, ncclProfileProxyOp | ncclProfileProxyStep, jobs[j], &res, &c);
      assert_true(res.hung);
      long stuck_sends = 0, stuck_recvs = 0, leaked = 0;
      for (long i = 0; i < R->n_ops; i++) {
        const count_op* o = &R->ops[i];
        const pt_sim_op* op = truth_of(&res.job, R, o);
        assert_non_null(op);
        const int per = raw ? op->slice : 1;
        step_model m = op->is_send ? model_send(op, per) : model_recv(op, per, bug);
        /* The model and the oracle agree on where the op stops. */
        assert_int_equal(m.posted, op->exp_posted);
        assert_int_equal(m.trans, op->exp_trans);
        assert_int_equal(m.done, op->exp_done);
        int distinct = 0;
        for (int s = 0; s < COUNT_MAX_STEPS; s++) distinct += o->step_started[s] > 0;
        assert_int_equal(distinct, m.distinct * per);
        assert_int_equal(o->step_stops, m.stops);
        assert_int_equal(o->double_stops, 0);
        /* A refused post leaves its step started again at every poll, each
         * start over a handle that is never stopped. */
        assert_int_equal(o->unstopped_restarts > 0, m.post_stuck);
        assert_int_equal(o->starts_total, m.distinct * per + o->unstopped_restarts);
        assert_int_equal(o->open_now, o->starts_total - m.stops);
        if (m.post_stuck) assert_true(o->open_max >= m.max_open);
        else assert_int_equal(o->open_max, m.max_open);
        leaked += o->open_now;
        expect_phase_states(o, &m, op->is_send, old, per);
        assert_int_equal(atomic_load(&o->stops), op->exp_done == op->n);
        assert_int_equal(atomic_load(&o->states[ncclProfilerProxyOpInProgress_v4]), old ? 0 : 1);
        if (op->is_send) {
          /* SendPeerWait (2.27+) or SendRemFifoWait (2.23-2.26) before every
           * isend try: once per sent step, and again at every poll where the
           * GPU's data waits for the receiver's credit; never for a step the
           * GPU did not produce. */
          const int credit = m.trans < op->n && m.trans < op->lim_ready;
          const int tries = old ? atomic_load(&o->states[ncclProfilerProxyOpSendRemFifoWait])
                                : o->step_states[ncclProfilerProxyStepSendPeerWait_v4];
          if (credit) assert_true(tries > m.trans * (old ? 1 : per));
          else assert_int_equal(tries, m.trans * (old ? 1 : per));
          if (!old)
            assert_int_equal(o->step_states[ncclProfilerProxyStepSendPeerWait_v4] > 0, m.trans > 0 || credit);
          stuck_sends += m.done < op->n;
        } else {
          if (bug) assert_int_equal(o->step_stops, m.batches);
          stuck_recvs += m.done < op->n;
        }
      }
      assert_true(stuck_sends > 0);
      assert_true(stuck_recvs > 0);
      if (bug) assert_true(leaked > 0);
      pt_sim_result_free(&res);
      pt_sim_config_release(&c);
    }
  }
}

/* 2.24-2.26 stop the first step id of a consumed receive batch for every
 * step of it: the first stop clears the slot, the others find it empty, so
 * the rest of the batch is never stopped — and nothing is stopped twice. */
static void test_recv_stop_bug(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  static const char* args[] = {"--gpu-batch", "3", "--jitter", "2", NULL};
  pt_sim_config c;
  pt_sim_result res;
  for (int pass = 0; pass < 2; pass++) {
    pt_host host = pass ? PT_HOST_NCCL_2_27 : PT_HOST_NCCL_2_25;
    count_results* R = run(&k, host, ncclProfileProxyOp | ncclProfileProxyStep, args, &res, &c);
    long left_open = 0;
    for (long i = 0; i < R->n_ops; i++) {
      const count_op* o = &R->ops[i];
      const pt_sim_op* op = truth_of(&res.job, R, o);
      assert_non_null(op);
      assert_int_equal(o->double_stops, 0);
      int open = 0;
      for (int s = 0; s < o->step_max; s++) open += o->step_starts[s];
      assert_int_equal(open, op->seen.left_open); /* no refused irecv here */
      assert_int_equal(o->open_now, open);
      if (op->is_send) assert_int_equal(open, 0);
      assert_int_equal(atomic_load(&o->stops), 1);
      if (!op->is_send && pass == 0) assert_int_equal(atomic_load(&o->states[ncclProfilerProxyOpRecvDone]), op->n);
      left_open += op->seen.left_open;
    }
    if (pass == 0) assert_true(left_open > 0);
    else assert_int_equal(left_open, 0);
    pt_sim_result_free(&res);
  }
  pt_sim_config_release(&c);
}

/* Every op's first args from the pool: step and ProxyOp arguments as each
 * release's net.cc computes them. */
static void test_state_args_per_host(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  static const char* ar[] = {"--ops", "allreduce:4M", "--iters", "1", NULL};
  static const char* p2p[] = {"--ops", "sendrecv:16M", "--iters", "1", NULL};
  const char* const* jobs[] = {ar, p2p};
  for (size_t h = 0; h < sizeof all_hosts / sizeof all_hosts[0]; h++)
    for (int j = 0; j < 2; j++) {
      pt_host host = all_hosts[h];
      int minor = minor_of(host), old = minor <= 26, raw = minor == 23;
      print_message("host %s, %s\n", pt_host_name(host), jobs[j][1]);
      pt_sim_config c;
      pt_sim_result res;
      count_results* R = run(&k, host, ncclProfileProxyOp | ncclProfileProxyStep, jobs[j], &res, &c);
      assert_int_equal(R->n_ops, net_ops_run(&res.job));
      for (long i = 0; i < R->n_ops; i++) {
        const count_op* o = &R->ops[i];
        const pt_sim_op* op = truth_of(&res.job, R, o);
        assert_non_null(op);
        int w = window_of(op), u = raw ? op->slice : 1;
        assert_true(op->n > w); /* the window is full before the first transfer */
        int64_t total = (int64_t)(op->n - 1) * op->xfer_bytes + op->last_bytes;
        if (!old) {
          /* sub->transSize: 0 until the first transfer, then the last one */
          for (int s = 0; s < w; s++) assert_int_equal(o->post_trans[s], 0);
          for (int s = w; s < op->n; s++) assert_true(o->post_trans[s] > 0);
          continue;
        }
        /* 2.23-2.26: steps in transfers (raw on 2.23), transSize summed */
        if (op->is_send) {
          assert_int_equal(o->op_steps[ncclProfilerProxyOpSendPosted], op->n * u);
          assert_int_equal(o->op_steps[ncclProfilerProxyOpSendRemFifoWait], op->n * u);
          assert_int_equal(o->op_steps[ncclProfilerProxyOpSendDone], op->n * u);
          assert_int_equal(o->op_trans[ncclProfilerProxyOpSendTransmitted], raw ? total - op->last_bytes : total);
          assert_int_equal(o->op_trans[ncclProfilerProxyOpSendDone], total);
        } else {
          assert_int_equal(o->op_steps[ncclProfilerProxyOpRecvReceived], op->n * u);
          assert_int_equal(o->op_trans[ncclProfilerProxyOpRecvReceived], total);
          assert_int_equal(o->op_trans[ncclProfilerProxyOpRecvDone], total);
        }
      }
      pt_sim_result_free(&res);
      pt_sim_config_release(&c);
    }
}

/* The host recycles proxy args without clearing them: an op of the second
 * call starts with the transSize the first call's op left in its sub. */
static void test_args_carry_over(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  static const char* args[] = {"--ops", "allreduce:4M", "--iters", "2", NULL};
  static const pt_host hosts[] = {PT_HOST_NCCL_2_25, PT_HOST_NCCL_2_29};
  for (int h = 0; h < 2; h++) {
    pt_sim_config c;
    pt_sim_result res;
    count_results* R = run(&k, hosts[h], ncclProfileProxyOp | ncclProfileProxyStep, args, &res, &c);
    int second = 0;
    for (long i = 0; i < R->n_ops; i++) {
      const count_op* o = &R->ops[i];
      const pt_sim_op* op = truth_of(&res.job, R, o);
      assert_non_null(op);
      int64_t total = (int64_t)op->n * op->xfer_bytes; /* every allreduce op moves the same */
      if (hosts[h] == PT_HOST_NCCL_2_25) {
        assert_int_equal(o->op_trans[op->is_send ? ncclProfilerProxyOpSendDone : ncclProfilerProxyOpRecvDone],
                         (op->batch + 1) * total);
      } else {
        assert_int_equal(o->post_trans[0], op->batch ? op->xfer_bytes : 0);
      }
      second += op->batch == 1;
    }
    assert_true(second > 0);
    pt_sim_result_free(&res);
    pt_sim_config_release(&c);
  }
}

/* A plugin that answers NULL for the Group event: 2.23-2.25 give the task
 * no mask, so no proxy event at all; 2.26+ send them regardless. */
static void test_null_group_handle(void** state) {
  (void)state;
  counter k = open_counter("libcount-nogroup.so");
  const int mask = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep;
  for (size_t h = 0; h < sizeof all_hosts / sizeof all_hosts[0]; h++) {
    pt_host host = all_hosts[h];
    int minor = minor_of(host);
    print_message("host %s\n", pt_host_name(host));
    pt_sim_config c;
    pt_sim_result res;
    count_results* R = run(&k, host, mask, NULL, &res, &c);
    long nr = res.job.nranks;
    assert_int_equal(R->starts[0], nr * res.job.n_batches); /* Group, answered NULL */
    if (minor <= 27) assert_int_equal(R->starts[1] + R->starts[2], 0); /* Coll/P2p need it */
    else assert_int_equal(R->starts[1], nr * calls_of(&c, PT_SIM_ALLREDUCE));
    if (minor <= 25) {
      assert_int_equal(R->starts[3], 0);
      assert_int_equal(R->starts[4], 0);
      for (int st = 0; st <= 12; st++) assert_int_equal(R->records[st], 0);
    } else {
      assert_int_equal(R->starts[3], net_ops_run(&res.job));
      assert_true(R->starts[4] > 0);
    }
    pt_sim_result_free(&res);
    pt_sim_config_release(&c);
  }
}

/* Under RCCL, the ProxyDiag counters the plugin receives end where the
 * oracle says each op stops, for faults of every kind. */
static void test_rccl_counters_match_oracle(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  static const char* s1[] = {"--stall", "1:0:3", "--jitter", "2", "--recv-retry", "0.1", NULL};
  static const char* s2[] = {"--no-recv", "2:0:2", "--gdr-flush", NULL};
  static const char* s3[] = {"--kill", "3:1", NULL};
  static const char* s4[] = {"--no-recv", "3:1", "--fault-call", "1", NULL};
  static const char* s5[] = {"--slow-link", "0:3", "--jitter", "1", "--gpu-batch", "4", NULL};
  static const char* s6[] = {"--nodes", "3", "--ranks-per-node", "3", "--channels", "3", "--stall", "4:all:2", NULL};
  const char* const* scen[] = {s1, s2, s3, s4, s5, s6};
  for (size_t i = 0; i < sizeof scen / sizeof scen[0]; i++) {
    pt_sim_config c;
    pt_sim_result res;
    count_results* R = run(&k, PT_HOST_RCCL, ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileProxyDiag,
                           scen[i], &res, &c);
    int stuck = 0;
    for (long j = 0; j < R->n_ops; j++) {
      const count_op* o = &R->ops[j];
      const pt_sim_op* op = truth_of(&res.job, R, o);
      assert_non_null(op);
      int s = op->slice;
      assert_int_equal(o->raw, op->raw);
      assert_int_equal(o->comm_hash, op->comm_hash);
      assert_int_equal(o->op_count, op->op_count);
      assert_int_equal(o->diag[ncclProxyDiagPosted], (int64_t)op->exp_posted * s);
      assert_int_equal(o->diag[ncclProxyDiagTransmitted], (int64_t)op->exp_trans * s);
      assert_int_equal(o->diag[ncclProxyDiagDone], (int64_t)op->exp_done * s);
      assert_int_equal(o->diag[ncclProxyDiagReceived], op->is_send ? 0 : (int64_t)op->exp_recvd * s);
      for (int kind = 0; kind < 11; kind++) assert_int_equal(o->diag[kind], op->seen.cnt[kind]);
      assert_int_equal(o->diag_last_kind, op->seen.last_kind);
      /* A ProxyOp is stopped when its own last step is done. */
      assert_int_equal(atomic_load(&o->stops), op->seen.stopped);
      if (op->batch != res.job.hung_batch) assert_int_equal(op->seen.stopped, 1);
      if (op->exp_done < op->n) assert_int_equal(op->seen.stopped, 0);
      if (op->exp_done < op->n) stuck++;
    }
    assert_true(res.job.hung_batch < 0 || stuck > 0);
    assert_int_equal(R->wrong_thread, 0);
    pt_sim_result_free(&res);
    pt_sim_config_release(&c);
  }
}

/* PXN ops carry another process's pid, and never-stopped ops stay so. */
static void test_pxn_and_leaks(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  static const char* pxn[] = {"--pxn", "1:0", NULL};
  static const char* leak[] = {"--leak-ops", "2", NULL};
  pt_sim_config c;
  pt_sim_result res;
  count_results* R = run(&k, PT_HOST_RCCL, ncclProfileProxyOp | ncclProfileProxyStep, pxn, &res, &c);
  long foreign = 0;
  for (size_t i = 0; i < res.job.n_ops; i++) foreign += res.job.ops[i].foreign;
  assert_true(foreign > 0);
  assert_int_equal(R->foreign_ops, foreign);
  assert_int_equal(R->wrong_thread, 0);
  pt_sim_result_free(&res);
  R = run(&k, PT_HOST_NCCL_2_29, ncclProfileProxyOp | ncclProfileProxyStep, leak, &res, &c);
  long net = net_ops_run(&res.job), leaked = 2L * res.job.nranks * res.job.n_batches;
  assert_int_equal(R->starts[3], net + leaked);
  assert_int_equal(R->stops[3], net);
  pt_sim_result_free(&res);
  /* 2.23-2.26 start ProxyOps in the network transport only. */
  R = run(&k, PT_HOST_NCCL_2_26, ncclProfileProxyOp | ncclProfileProxyStep, leak, &res, &c);
  assert_int_equal(R->starts[3], net_ops_run(&res.job));
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
}

/* Same seed, same events; another seed, other delays. */
static void test_determinism(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  static const char* a1[] = {"--jitter", "4", "--recv-retry", "0.2", "--stall", "2:1:4", "--seed", "7", NULL};
  static const char* a2[] = {"--jitter", "4", "--recv-retry", "0.2", "--stall", "2:1:4", "--seed", "8", NULL};
  pt_sim_config c;
  pt_sim_result r1, r2, r3;
  run(&k, PT_HOST_RCCL, 0xffff, a1, &r1, &c);
  run(&k, PT_HOST_RCCL, 0xffff, a1, &r2, &c);
  run(&k, PT_HOST_RCCL, 0xffff, a2, &r3, &c);
  assert_int_equal(r1.job.n_ops, r2.job.n_ops);
  assert_int_equal(r1.callbacks, r2.callbacks);
  int differ = 0;
  for (size_t i = 0; i < r1.job.n_ops; i++) {
    assert_memory_equal(&r1.job.ops[i].seen, &r2.job.ops[i].seen, sizeof r1.job.ops[i].seen);
    if (r1.job.ops[i].seen.callbacks != r3.job.ops[i].seen.callbacks) differ = 1;
  }
  assert_true(differ);
  pt_sim_result_free(&r1);
  pt_sim_result_free(&r2);
  pt_sim_result_free(&r3);
  pt_sim_config_release(&c);
}

/* A failing init, release by release (nccl-profiler-abi.md §4.3, §4.5):
 * 2.23-2.27 disable the profiler for every communicator; 2.28-2.29 log
 * and go on; 2.30 also unloads, so the refcount drops twice — the emulator
 * must survive all three and finalize only live contexts from 2.28 on. */
/* Runs the small job on `host` with the counter's `fail_fn`(1) making one
 * init fail (count_fail_rank: rank 1; count_fail_nth: the second init),
 * logging at INFO into `cap`. Free `res`, `cap` and `c` after. */
static count_results* run_failing_init(counter* k, const char* fail_fn, pt_host host, pt_sim_config* c,
                                       st_capture* cap, pt_sim_result* res) {
  void (*fail_one)(int) = (void (*)(int))dlsym(k->dl, fail_fn);
  assert_non_null(fail_one);
  st_config(c, host, k->path);
  c->debug_level = PT_SIM_LOG_INFO;
  st_capture_init(cap, c, 4);
  k->reset(ncclProfileProxyOp | ncclProfileProxyStep);
  fail_one(1);
  assert_int_equal(pt_sim_run(c, res, stderr), 0);
  count_results* R = k->results();
  assert_int_equal(R->init_fails, 1);
  return R;
}

static void test_init_failure(void** state) {
  (void)state;
  counter k = open_counter("libcount.so");
  static const pt_host hosts[] = {PT_HOST_NCCL_2_27, PT_HOST_NCCL_2_29, PT_HOST_NCCL_2_30};
  for (int i = 0; i < 3; i++) {
    pt_sim_config c;
    st_capture cap;
    pt_sim_result res;
    count_results* R = run_failing_init(&k, "count_fail_rank", hosts[i], &c, &cap, &res);
    if (i == 0) {
      assert_int_equal(st_capture_count(&cap, 1, "Profiler init failed with error (3). Continue without profiler."), 1);
      assert_int_equal(R->starts[3], 0);       /* profiling is off for everyone */
      assert_int_equal(R->finalize_calls, 0);
      int crash_notes = 0;
      for (int r = 0; r <= 4; r++) crash_notes += st_capture_count(&cap, r, "would dereference a NULL profiler table");
      assert_int_equal(crash_notes, 1);
    } else {
      assert_int_equal(st_capture_count(&cap, 1, "Profiler init failed with error '3'"), 1);
      assert_true(R->starts[3] > 0);           /* the others go on */
      assert_int_equal(R->finalize_calls, 3);  /* not the NULL context */
      int early = 0;
      for (int r = 0; r <= 4; r++) early += st_capture_count(&cap, r, "would close the profiler plugin now");
      assert_int_equal(early, i == 2 ? 1 : 0);
    }
    pt_sim_result_free(&res);
    st_capture_free(&cap);
    pt_sim_config_release(&c);
  }
}

/* 2.24-2.25 reach a v1 plugin through an adapter that drops its init
 * result (v2.24.3-1 src/misc/profiler.cc:113-120): the profiler stays on
 * and the failed communicator's events go out with its NULL context. 2.23
 * binds v1 natively and turns profiling off. */
static void test_v1_init_failure(void** state) {
  (void)state;
  counter k = open_counter("libcount-v1.so");
  static const pt_host hosts[] = {PT_HOST_NCCL_2_23, PT_HOST_NCCL_2_24, PT_HOST_NCCL_2_25};
  for (int i = 0; i < 3; i++) {
    pt_sim_config c;
    st_capture cap;
    pt_sim_result res;
    count_results* R = run_failing_init(&k, "count_fail_nth", hosts[i], &c, &cap, &res);
    int said = 0;
    for (int r = 0; r <= 4; r++) said += st_capture_count(&cap, r, "Profiler init failed");
    if (i == 0) {
      assert_int_equal(said, 1);
      assert_int_equal(R->starts[3], 0);
    } else {
      assert_int_equal(said, 0);
      assert_int_equal(R->starts[3], net_ops_run(&res.job));
      assert_true(R->bad_ctx > 0); /* the failed rank's ops carry its NULL context */
    }
    pt_sim_result_free(&res);
    st_capture_free(&cap);
    pt_sim_config_release(&c);
  }
}

/* The emulated host loads through the loader with the release's rules:
 * NCCL 2.27.3 only tries libnccl-profiler-<value>.so, so a path fails and
 * the emulator says why (plugin-loading.md §2.3.3). */
static void test_2_27_3_refuses_paths(void** state) {
  (void)state;
  pt_sim_config c;
  st_config(&c, PT_HOST_NCCL_2_27_3, st_path("libcount.so"));
  pt_sim_result res;
  FILE* err = tmpfile();
  assert_int_equal(pt_sim_run(&c, &res, err), 1);
  rewind(err);
  char buf[4096] = "";
  size_t n = fread(buf, 1, sizeof buf - 1, err);
  buf[n] = 0;
  fclose(err);
  assert_non_null(strstr(buf, "libnccl-profiler-"));
  assert_int_equal(res.loaded, 0);
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_step_sequences_per_host),
      cmocka_unit_test(test_gating),
      cmocka_unit_test(test_adapters_and_strict),
      cmocka_unit_test(test_v6_adapter_on_2_31),
      cmocka_unit_test(test_retries),
      cmocka_unit_test(test_recv_stop_bug),
      cmocka_unit_test(test_stuck_job_step_facts),
      cmocka_unit_test(test_state_args_per_host),
      cmocka_unit_test(test_args_carry_over),
      cmocka_unit_test(test_null_group_handle),
      cmocka_unit_test(test_rccl_counters_match_oracle),
      cmocka_unit_test(test_pxn_and_leaks),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_2_27_3_refuses_paths),
      cmocka_unit_test(test_init_failure),
      cmocka_unit_test(test_v1_init_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
