/*
 * test_sim_truth.c — the proxytrace plugin's dumps against the emulator's
 * ground truth.
 *
 * For every host profile in `hosts` and every scenario in `scenarios`, the
 * emulator runs a small job with the plugin of this build; every rank's
 * dump (dump hook -> logger lines) is parsed and each record line is
 * matched to the op it describes. A line must describe a real op of that
 * rank, every field must equal what the host told the plugin (counters,
 * nSteps, bytes, extra info, the last counter kind, which timestamps are
 * set), and its status must be the one spec rccl-proxytrace.md §3.6 gives
 * for the op's counters — which for a stuck op is also the status the
 * oracle predicted from the faults. Every op still active must be in the
 * dump, and the dump must hold min(32, finished) finished ops (§3.4).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nccl/profiler_v6.h"
#include "sim_helpers.h"

/* Host profiles the plugin is checked in, one line each. `diag`: the host
 * sends RCCL's ProxyDiag counters, so every field of a line can be checked;
 * without it (stock NCCL) only what steps tell: nSteps, po, trans, recvd,
 * done, status. */
static const struct {
  pt_host host;
  int diag;
} hosts[] = {
    {PT_HOST_RCCL, 1},      {PT_HOST_NCCL_2_30, 0}, {PT_HOST_NCCL_2_29, 0}, {PT_HOST_NCCL_2_28, 0},
    {PT_HOST_NCCL_2_27, 0}, {PT_HOST_NCCL_2_26, 0}, {PT_HOST_NCCL_2_25, 0}, {PT_HOST_NCCL_2_24, 0},
    {PT_HOST_NCCL_2_23, 0},
    /* the v7 hosts; RCCL 2.31 sends its counters under bit 16 and state 32 */
    {PT_HOST_RCCL_2_31, 1}, {PT_HOST_NCCL_2_31, 0}, {PT_HOST_NCCL_2_32, 0},
};
/* RCCL hosts have the dump hook and RCCL's logger levels. */
static int is_rccl(pt_host h) { return h == PT_HOST_RCCL || h == PT_HOST_RCCL_2_31; }
/* nccl-2.27.3 loads no plugin by path (test_sim_counts checks that). */

typedef struct {
  const char* name;
  const char* args[12];
} scenario;

/* 2 nodes x 2 ranks. Ring of channel 0: 0 1 | 2 3 (network edges 1->2,
 * 3->0); channel 1: 1 0 | 3 2 (0->3, 2->1). Send/recv pairs: 0<->2, 1<->3. */
static const scenario scenarios[] = {
    {"healthy", {NULL}},
    {"stall", {"--stall", "1:0:3", NULL}},
    {"stall all channels", {"--stall", "2:all:1", "--hang-polls", "5", NULL}},
    {"no-recv in allreduce", {"--no-recv", "2:0:2", NULL}},
    {"no-recv in sendrecv", {"--no-recv", "3", "--fault-call", "1", NULL}},
    {"kill", {"--kill", "0:2", NULL}},
    {"slow link", {"--slow-link", "1:4", "--jitter", "2", NULL}},
    {"slow GPU, paced", {"--slow-gpu", "2:3", "--poll-us", "20", "--iters", "1", NULL}},
    {"slow proxy thread, paced", {"--slow-host", "3:3", "--poll-us", "20", "--iters", "1", NULL}},
    {"pxn", {"--pxn", "1:0", NULL}},
    /* ranks 0 and 1 in one process: rank 1's sends recorded into its trace
     * by rank 0's proxy thread, beside rank 1's own */
    {"pxn in one process", {"--ranks-per-process", "2", "--pxn", "1:0", NULL}},
    {"pxn in one process, stall", {"--ranks-per-process", "2", "--pxn", "1:0", "--stall", "1:0:3", NULL}},
    {"one process a node, pxn both ways",
     {"--ranks-per-process", "2", "--pxn", "1:0", "--pxn", "2:3", "--no-recv", "0:1:2", NULL}},
    {"leak-ops", {"--leak-ops", "2", NULL}},
    {"jitter, retries, flush", {"--jitter", "3", "--recv-retry", "0.2", "--gdr-flush", "--gpu-batch", "3", NULL}},
    {"more than 32 finished", {"--iters", "12", NULL}},
    {"LL protocol", {"--proto", "LL", "--stall", "3:1:4", NULL}},
};

static void apply_args(pt_sim_config* c, const scenario* s) {
  char* argv[16] = {"sim"};
  int argc = 1;
  for (int i = 0; s->args[i]; i++) argv[argc++] = (char*)s->args[i];
  FILE* devnull = fopen("/dev/null", "w");
  int rc = pt_sim_parse_args(c, argc, argv, devnull, stderr);
  fclose(devnull);
  assert_int_equal(rc, 0);
}

/* The op a line describes. With RCCL's fields the key names one op; stock
 * NCCL gives no opCount (and v1-v3 no commHash), so a line is matched to an
 * unmatched registered op of the same rank, peer, channel and direction in
 * the same state (active ops are unique per key: only the hung call has
 * them). `used` marks ops already matched. */
static const pt_sim_op* find_op(const pt_sim_job* job, const st_line* l, int diag, char* used) {
  const pt_sim_op* hit = NULL;
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->kind != PT_OPK_NET || op->rank != l->myRank || op->peer != l->peer || op->channel != l->chan ||
        op->is_send != (l->dir == 'S') || !op->seen.registered || used[i])
      continue;
    if (l->commHash && op->comm_hash != l->commHash) continue;
    if (diag) {
      if (op->op_count != l->opCount) continue;
      assert_null(hit); /* the key names one op */
      hit = op;
    } else {
      int done = !strcmp(l->status, "DONE");
      if (done != (op->exp_done == op->n)) continue;
      hit = op;
      break;
    }
  }
  if (hit) used[hit - job->ops] = 1;
  return hit;
}

/* `raw`: counters and nSteps in raw steps (RCCL's rawProxyNsteps, NCCL
 * 2.23's step numbering); otherwise in transfers (profiler steps). */
static void check_line(const st_line* l, const pt_sim_op* op, int diag, int raw) {
  const pt_sim_seen* s = &op->seen;
  int k = raw ? op->slice : 1;
  assert_int_equal(l->ns, raw ? op->raw : op->n);
  assert_int_equal(l->po, (long long)op->exp_posted * k);
  assert_int_equal(l->trans, (long long)op->exp_trans * k);
  assert_int_equal(l->done, (long long)op->exp_done * k);
  assert_int_equal(l->recvd, op->is_send ? 0 : (long long)op->exp_recvd * k);
  /* The status NCCL's own rules give, in raw steps (NCCL_STEPS is a window
   * of raw steps), whatever unit the counters are printed in. */
  const int64_t r = op->slice;
  const char* want = pt_sim_status(op->is_send, op->raw, (int64_t)op->exp_posted * r,
                                   op->is_send ? 0 : (int64_t)op->exp_recvd * r,
                                   (int64_t)op->exp_trans * r, (int64_t)op->exp_done * r);
  assert_string_equal(l->status, want);
  if (!diag) return;
  assert_string_equal(l->status, pt_sim_op_status(op));
  assert_int_equal(l->po, s->cnt[0]);
  assert_int_equal(l->ke, s->cnt[1]);
  assert_int_equal(l->recvd, s->cnt[4]);
  assert_int_equal(l->trans, s->cnt[5]);
  assert_int_equal(l->flushed, s->cnt[6]);
  assert_int_equal(l->done, s->cnt[7]);
  assert_int_equal(l->recvT, s->cnt[8]);
  assert_int_equal(l->tailh, s->cnt[9]);
  assert_int_equal(l->connSz, s->cnt[10]);
  assert_int_equal(l->cntNm, s->last_kind);
  assert_int_equal(l->nb, op->nbytes);
  assert_int_equal(l->fu, op->func_idx);
  assert_int_equal(l->pr, op->proto);
  assert_int_equal(l->pa, op->pattern);
  assert_int_equal(l->tb, op->total_bytes);
  assert_int_equal(l->ck, (unsigned)(op->chunk_size * op->slice));
  assert_true(l->createT > 0);
  assert_int_equal(l->lastT != 0, s->last_kind != 100);
  assert_int_equal(l->postT != 0, s->post_ts);
  assert_int_equal(l->sendT != 0, s->send_ts);
  assert_true(l->opId >= 0);
}

/* NVIDIA hosts never call the dump hook; the test calls it at destroy,
 * where RCCL would, to see what the plugin knows. */
static void dump_at_destroy(void* arg, int rank, void* ctx, ncclDebugLogger_t logfn) {
  (void)rank;
  ncclProfilerProxyTraceDump_t dump = (ncclProfilerProxyTraceDump_t)arg;
  if (ctx) dump(ctx, logfn);
}

static void run_scenario(pt_host host, int diag, const scenario* sc) {
  int raw = diag || host == PT_HOST_NCCL_2_23;
  pt_sim_config c;
  st_config(&c, host, getenv("PT_PLUGIN_SO"));
  void* so = dlopen(getenv("PT_PLUGIN_SO"), RTLD_NOW | RTLD_LOCAL);
  assert_non_null(so);
  if (!is_rccl(host)) {
    c.at_destroy = dump_at_destroy;
    c.at_destroy_arg = (void*)dlsym(so, "ncclProfilerProxyTraceDump");
    assert_non_null(c.at_destroy_arg);
    c.debug_level = PT_SIM_LOG_INFO; /* RCCL's WARN (3) is NVIDIA's INFO */
  }
  apply_args(&c, sc);
  st_capture cap;
  st_capture_init(&cap, &c, c.nodes * c.ranks_per_node);
  pt_sim_result res;
  assert_int_equal(pt_sim_run(&c, &res, stderr), 0);
  const pt_sim_job* job = &res.job;
  /* Every op that ran reached the plugin: the host sent its ProxyOp and the
   * plugin registered it — on 2.23-2.25 only if the plugin answered the
   * Group event with a handle. */
  for (size_t i = 0; i < job->n_ops; i++) {
    const pt_sim_op* op = &job->ops[i];
    if (op->kind != PT_OPK_NET || op->absent || op->why == PT_WHY_NOT_RUN || op->foreign || op->dead) continue;
    if (!op->seen.registered)
      fail_msg("rank %d peer %d chan %d batch %d: the op never reached the plugin", op->rank, op->peer, op->channel,
               op->batch);
  }
  int stuck_total = 0;
  for (int r = 0; r < job->nranks; r++) {
    if (job->dead_rank[r]) {
      assert_int_equal(st_capture_count(&cap, r, "createT:"), 0); /* the dead dump nothing */
      continue;
    }
    int finished_lines = 0, registered_done = 0, active_expected = 0, active_lines = 0;
    for (size_t i = 0; i < job->n_ops; i++) {
      const pt_sim_op* op = &job->ops[i];
      if (op->kind != PT_OPK_NET || op->rank != r || op->foreign || !op->seen.registered) continue;
      if (op->exp_done == op->n) registered_done++;
      else active_expected++;
    }
    /* The dump hook's dump; under NVIDIA hosts, a communicator destroyed
     * with ops still waiting also dumps at finalize, after a banner line
     * (and after the hook's dump) */
    /* (tables v1-v3 get no logger: that dump goes to standard error) */
    const int finalize_dumps = !is_rccl(host) && active_expected > 0 && res.api_version >= 4;
    assert_int_equal(st_capture_count(&cap, r, "commDump for all active ops mapSizeMB:"), 1 + finalize_dumps);
    assert_int_equal(st_capture_count(&cap, r, "trigger=finalize"), finalize_dumps);
    assert_int_equal(st_capture_count(&cap, r, "proxytrace dump seq="), st_capture_count(&cap, r, "trigger=finalize"));
    char* used = calloc(job->n_ops + 1, 1);
    for (int i = 0; i < cap.n[r]; i++) {
      st_line l;
      if (strstr(cap.lines[r][i], "proxytrace dump seq=")) break; /* the finalize dump follows */
      if (st_parse_line(cap.lines[r][i], &l) != 0) continue;
      assert_int_equal(l.myRank, r);
      const pt_sim_op* op = find_op(job, &l, diag, used);
      if (!op) fail_msg("rank %d: a dump line matches no op: %s", r, cap.lines[r][i]);
      assert_true(op->seen.registered);
      check_line(&l, op, diag, raw);
      if (op->exp_done == op->n) finished_lines++;
      else active_lines++;
    }
    free(used);
    assert_int_equal(active_lines, active_expected);
    assert_int_equal(finished_lines, registered_done < 32 ? registered_done : 32);
    stuck_total += active_lines;
  }
  /* A job the faults hang leaves stuck ops in the dumps; a healthy one none. */
  if (job->hung_batch >= 0 && !res.job.dead_rank[0]) assert_true(stuck_total > 0);
  if (job->hung_batch < 0) assert_int_equal(stuck_total, 0);
  pt_sim_result_free(&res);
  st_capture_free(&cap);
  pt_sim_config_release(&c);
  dlclose(so);
}

static void test_dumps_match_truth(void** state) {
  (void)state;
  for (size_t h = 0; h < sizeof hosts / sizeof hosts[0]; h++)
    for (size_t s = 0; s < sizeof scenarios / sizeof scenarios[0]; s++) {
      print_message("host %s, scenario %s\n", pt_host_name(hosts[h].host), scenarios[s].name);
      run_scenario(hosts[h].host, hosts[h].diag, &scenarios[s]);
    }
}

/* The RCCL dump goes out one WARN (level 3) line per record, each well
 * under the host's 1 KiB logger buffer (rccl-proxytrace.md §4.3). */
static void test_dump_lines_are_rccl_warn(void** state) {
  (void)state;
  pt_sim_config c;
  st_config(&c, PT_HOST_RCCL, getenv("PT_PLUGIN_SO"));
  c.debug_level = PT_SIM_LOG_WARN;
  st_capture cap;
  st_capture_init(&cap, &c, 4);
  pt_sim_result res;
  assert_int_equal(pt_sim_run(&c, &res, stderr), 0);
  for (int r = 0; r < 4; r++) {
    int records = 0;
    for (int i = 0; i < cap.n[r]; i++) {
      const char* line = cap.lines[r][i];
      if (!strstr(line, "createT:")) continue;
      records++;
      assert_non_null(strstr(line, "ncclProfilerProxyTraceDump:"));
      assert_non_null(strstr(line, " NCCL WARN "));
      assert_true(strlen(line) < 1000);
    }
    assert_true(records > 0);
  }
  pt_sim_result_free(&res);
  st_capture_free(&cap);
  /* At NCCL_DEBUG=VERSION, WARN lines are not printed. */
  st_config(&c, PT_HOST_RCCL, getenv("PT_PLUGIN_SO"));
  c.debug_level = PT_SIM_LOG_VERSION;
  st_capture_init(&cap, &c, 4);
  assert_int_equal(pt_sim_run(&c, &res, stderr), 0);
  for (int r = 0; r < 4; r++) assert_int_equal(st_capture_count(&cap, r, "createT:"), 0);
  pt_sim_result_free(&res);
  st_capture_free(&cap);
}

/* RCCL's ncclCommDump from a watchdog thread, while the proxies record:
 * every call dumps, and the final dumps still match the truth. */
static void test_comm_dump_while_running(void** state) {
  (void)state;
  static const scenario sc = {"watchdog", {"--comm-dump", "12", "--iters", "6", "--stall", "2:1:3", NULL}};
  pt_sim_config c;
  st_config(&c, PT_HOST_RCCL, getenv("PT_PLUGIN_SO"));
  apply_args(&c, &sc);
  st_capture cap;
  st_capture_init(&cap, &c, 4);
  pt_sim_result res;
  assert_int_equal(pt_sim_run(&c, &res, stderr), 0);
  for (int r = 0; r < 4; r++) {
    assert_int_equal(st_capture_count(&cap, r, "ncclCommDump() proxy-trace (profiler plugin):"), 12);
    assert_int_equal(st_capture_count(&cap, r, "commDump for all active ops mapSizeMB:"), 13);
  }
  pt_sim_result_free(&res);
  st_capture_free(&cap);
  pt_sim_config_release(&c);
}

int main(void) {
  if (!getenv("PT_PLUGIN_SO")) {
    fprintf(stderr, "PT_PLUGIN_SO is not set (run through make test)\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dumps_match_truth),
      cmocka_unit_test(test_dump_lines_are_rccl_warn),
      cmocka_unit_test(test_comm_dump_while_running),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
