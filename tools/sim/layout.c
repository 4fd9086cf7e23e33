/*
 * layout.c — a parallel training job: every process holds several
 * communicators (--layout TPxPPxDP), as Megatron-LM, DeepSpeed or
 * torchtitan build them from one world.
 *
 *   processes  TP x PP x DP, process g = (dp, pp, tp) with
 *              g = (dp * PP + pp) * TP + tp; TP processes a node (one GPU
 *              each, GPU tp of node g / TP), so node N's host is nodeN.
 *   TP groups  the TP processes of a node, one per (dp, pp): all-reduce
 *              inside the node (no network, so no proxy op: the dumps show
 *              their calls only);
 *   PP groups  one process of each pipeline stage, one per (dp, tp): the
 *              1F1B schedule of --microbatches microbatches (pipeline.c),
 *              each stage exchanging activations with the next and
 *              gradients with the one before, as many p2p calls as its
 *              place in the pipeline gives it;
 *   DP groups  one process of each data-parallel replica, one per (pp,
 *              tp): the gradient all-reduce across nodes (--dp-op
 *              reducescatter: a sharded optimizer's reduce-scatter).
 *   EP groups  (--ep N) N consecutive data-parallel replicas, one per (pp,
 *              tp, replica / N), as Megatron-LM carves expert parallelism
 *              out of data parallelism: an MoE layer's all-to-all (every
 *              member sends to every other, across nodes).
 *
 * A training step is, on every process, the same order of calls: its TP
 * all-reduce, its EP all-to-all, its PP schedule, its DP all-reduce (a
 * group of one process is left out). Each communicator is one emulated job of pt_sim_run, run
 * one after the other into one folder, with its own commHash (from the
 * seed and its place), name (tp0, pp1, dp2 ...) and ranks numbered inside
 * it; each rank names its process's host, pid and GPU (rank_host,
 * rank_pid, rank_dev), so the files of one process carry the same
 * identity in every communicator it holds.
 *
 * The faults (--stall, --no-recv, --kill, ...) strike the communicator
 * --fault-comm names, with its own rank numbers, in --fault-iter. A call
 * completes when no fault stops it and every member enters it; a process
 * stops at its first call that does not complete, so a hang spreads: a
 * member stuck in one communicator never enters its next call in another,
 * whose members that did enter wait there. Each communicator then runs up
 * to its first call that does not complete, the members that never
 * entered it as --skip (no event, no op of that call), the faults too
 * where it is theirs. The ground truth (--truth-json) names the origin and,
 * per communicator, which ranks are stuck only because their process is
 * stuck elsewhere.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

enum { LAY_TP = 0, LAY_PP, LAY_DP, LAY_EP, LAY_KINDS };
static const char* const kind_name[LAY_KINDS] = {"tp", "pp", "dp", "ep"};
/* the order of a step's calls */
static const int step_order[LAY_KINDS] = {LAY_TP, LAY_EP, LAY_PP, LAY_DP};

typedef struct {
  int kind, index, n;
  int* members; /* process of each rank of it */
  int slot;     /* its place in a step's calls */
} lay_comm;

typedef struct {
  int tp, pp, dp, ep, procs, kinds;
  int slot_kind[LAY_KINDS]; /* kind of each slot of a step */
  lay_comm* comms;
  int n_comms;
  int pipe_k;               /* a PP group's step: its slots (pipeline.c) */
  int *pipe_lo, *pipe_dirs;
} layout;

/* Parses "TPxPPxDP" (each 1..1024, TP up to 64, product 2..16384). 0, or -1. */
int pt_sim_layout_parse(const char* s, int* tp, int* pp, int* dp) {
  char x1, x2, end;
  if (sscanf(s, "%d%c%d%c%d%c", tp, &x1, pp, &x2, dp, &end) != 5 || (x1 != 'x' && x1 != 'X') ||
      (x2 != 'x' && x2 != 'X'))
    return -1;
  if (*tp < 1 || *pp < 1 || *dp < 1 || *tp > 64 || *pp > 1024 || *dp > 1024) return -1;
  const long procs = (long)*tp * *pp * *dp;
  return procs >= 2 && procs <= 16384 ? 0 : -1;
}

/* Parses "tp|pp|dp:INDEX". 0, or -1. */
int pt_sim_fault_comm_parse(const char* s, int* kind, int* index) {
  for (int k = 0; k < LAY_KINDS; k++) {
    size_t n = strlen(kind_name[k]);
    if (strncmp(s, kind_name[k], n) || s[n] != ':') continue;
    char* end;
    long v = strtol(s + n + 1, &end, 10);
    if (end == s + n + 1 || *end || v < 0 || v > 1 << 20) return -1;
    *kind = k;
    *index = (int)v;
    return 0;
  }
  return -1;
}

static int proc_of(const layout* L, int dp, int pp, int tp) { return (dp * L->pp + pp) * L->tp + tp; }

static void layout_free(layout* L) {
  for (int i = 0; i < L->n_comms; i++) free(L->comms[i].members);
  free(L->comms);
  free(L->pipe_lo);
  free(L->pipe_dirs);
}

static int layout_build(layout* L, int tp, int pp, int dp, int ep, int microbatches) {
  memset(L, 0, sizeof *L);
  if (ep < 1) ep = 1;
  L->tp = tp;
  L->pp = pp;
  L->dp = dp;
  L->ep = ep;
  L->procs = tp * pp * dp;
  const int size[LAY_KINDS] = {tp, pp, dp, ep};
  const int count[LAY_KINDS] = {pp * dp, dp * tp, pp * tp, pp * tp * (dp / ep)};
  int total = 0;
  for (int o = 0; o < LAY_KINDS; o++) {
    const int k = step_order[o];
    if (size[k] > 1) {
      L->slot_kind[L->kinds++] = k;
      total += count[k];
    }
  }
  L->comms = calloc((size_t)total + 1, sizeof *L->comms);
  if (!L->comms) return -1;
  if (pp > 1) {
    L->pipe_k = pt_sim_pipe_slots(pp, microbatches);
    L->pipe_lo = malloc(sizeof(int) * (size_t)L->pipe_k);
    L->pipe_dirs = malloc(sizeof(int) * (size_t)L->pipe_k);
    if (!L->pipe_lo || !L->pipe_dirs || pt_sim_pipe_schedule(pp, microbatches, L->pipe_lo, L->pipe_dirs) != L->pipe_k)
      return -1;
  }
  for (int s = 0; s < L->kinds; s++) {
    const int k = L->slot_kind[s];
    for (int i = 0; i < count[k]; i++) {
      lay_comm* c = &L->comms[L->n_comms++];
      c->kind = k;
      c->index = i;
      c->n = size[k];
      c->slot = s;
      if (!(c->members = malloc(sizeof(int) * (size_t)c->n))) return -1;
      /* EP group i: (replica group e, stage, TP place) = (i / (pp tp), i / tp % pp, i % tp) */
      for (int r = 0; r < c->n; r++)
        c->members[r] = k == LAY_TP   ? proc_of(L, i / pp, i % pp, r)
                        : k == LAY_PP ? proc_of(L, i / tp, r, i % tp)
                        : k == LAY_EP ? proc_of(L, i / (pp * tp) * ep + r, i / tp % pp, i % tp)
                                      : proc_of(L, r, i / tp, i % tp);
    }
  }
  return 0;
}

static lay_comm* find_comm(layout* L, int kind, int index) {
  for (int i = 0; i < L->n_comms; i++)
    if (L->comms[i].kind == kind && L->comms[i].index == index) return &L->comms[i];
  return NULL;
}

/* The communicator of `kind` that process g holds (a kind it holds). */
static lay_comm* comm_of(layout* L, int kind, int g) {
  const int tp = g % L->tp, pp = g / L->tp % L->pp, dp = g / (L->tp * L->pp);
  return find_comm(L, kind,
                   kind == LAY_TP   ? dp * L->pp + pp
                   : kind == LAY_PP ? dp * L->tp + tp
                   : kind == LAY_EP ? (dp / L->ep * L->pp + pp) * L->tp + tp
                                    : pp * L->tp + tp);
}

static int hang_kind(pt_fault_kind k) {
  return k == PT_FAULT_STALL || k == PT_FAULT_NO_RECV || k == PT_FAULT_KILL || k == PT_FAULT_SKIP ||
         k == PT_FAULT_MISMATCH;
}

/* Whether member r of communicator c cannot complete the call at step
 * position `at` (iteration it): a collective (TP, DP: a ring all-reduce)
 * completes for no member while one has not entered it or the fault
 * strikes it; a PP schedule completes for the stages that get through
 * all their exchanges (pt_sim_pipe_stops: the stages that entered it, the
 * exchange a fault strikes held), as the PP group's own run has them. */
static int call_stuck(const layout* L, const lay_comm* c, int r, int at, const int* pos, int faulty,
                      const pt_sim_config* base, int* stop) {
  const int n = c->n;
  /* a member that never calls (--skip, --mismatch) is out of the faulty call */
  char out[1024];
  memset(out, 0, (size_t)n);
  if (faulty)
    for (int f = 0; f < base->n_faults; f++)
      if ((base->faults[f].kind == PT_FAULT_SKIP || base->faults[f].kind == PT_FAULT_MISMATCH) &&
          base->faults[f].rank >= 0 && base->faults[f].rank < n)
        out[base->faults[f].rank] = 1;
#define ENTERED(j) (pos[c->members[j]] >= at && !out[j])
  if (c->kind != LAY_PP) {
    if (faulty) return 1;
    for (int j = 0; j < n; j++)
      if (!ENTERED(j)) return 1;
    return 0;
  }
  if (r > 0) return stop[r] < L->pipe_k; /* worked out for member 0, the same for all */
  int enters[1024];
  unsigned char* held = faulty ? calloc((size_t)L->pipe_k, 1) : NULL;
  for (int j = 0; j < n; j++) enters[j] = ENTERED(j);
  for (int f = 0; held && f < base->n_faults; f++) {
    const pt_sim_fault* ft = &base->faults[f];
    if ((ft->kind != PT_FAULT_STALL && ft->kind != PT_FAULT_NO_RECV && ft->kind != PT_FAULT_KILL) || ft->rank < 0 ||
        ft->rank >= n || !enters[ft->rank])
      continue;
    const int j = pt_sim_pipe_fault_slot(L->pipe_k, L->pipe_lo, L->pipe_dirs, ft->rank, ft->kind, base->fault_p2p_call);
    /* a PP call's transfers a channel: 4 MiB over the channels, 512 KiB each
     * (workload.c's SIMPLE p2p steps), NCCL_STEPS of them in flight */
    const int U = ((4 << 20) / base->channels + (512 << 10) - 1) / (512 << 10);
    if (j >= 0) held[j] |= (unsigned char)pt_sim_pipe_held(L->pipe_lo, L->pipe_dirs, j, ft->rank, ft->kind, ft->step, U, 8);
  }
  pt_sim_pipe_stops(n, L->pipe_k, L->pipe_lo, enters, held, stop);
  free(held);
  return stop[r] < L->pipe_k;
#undef ENTERED
}

/* The processes' stops: pos[g], the first call of g's sequence (iteration
 * * kinds + slot) it does not complete (iters * kinds: none). */
static void propagate(layout* L, const pt_sim_config* base, const lay_comm* fc, int fault_it, int* pos) {
  const int end = base->iters * L->kinds;
  for (int g = 0; g < L->procs; g++) pos[g] = end;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 0; i < L->n_comms; i++) {
      const lay_comm* c = &L->comms[i];
      for (int it = 0; it < base->iters; it++) {
        const int at = it * L->kinds + c->slot;
        const int faulty = c == fc && it == fault_it;
        int stop[1024]; /* a PP group's stages (call_stuck), for member 0 first */
        for (int r = 0; r < c->n; r++) {
          const int g = c->members[r];
          /* stopped there, or before (a member stuck here still counts as
           * having entered: the others' stops stand) */
          if (pos[g] <= at && (c->kind != LAY_PP || r > 0)) continue;
          if (call_stuck(L, c, r, at, pos, faulty, base, stop) && pos[g] > at) {
            pos[g] = at;
            changed = 1;
          }
        }
      }
    }
  }
}

static void comm_name(const lay_comm* c, char* out, size_t n) { snprintf(out, n, "%s%d", kind_name[c->kind], c->index); }

/* The job of communicator c (the i-th): its shape, call and seed; no
 * fault, every member entering every call. */
static void comm_job(const pt_sim_config* base, const lay_comm* c, int i, pt_sim_config* s) {
  *s = *base;
  s->n_owned = 0;
  s->layout_tp = 0;
  s->truth_json = s->truth_file = NULL;
  s->print_truth = 0;
  s->quiet = 1;
  s->comm_name = NULL;
  s->seed = base->seed * 1000003u + (uint64_t)i + 1;
  s->nodes = c->kind == LAY_TP ? 1 : c->n;
  s->ranks_per_node = c->kind == LAY_TP ? c->n : 1;
  s->ranks_per_process = 1;
  s->n_calls = 1;
  s->calls[0].kind = c->kind == LAY_PP   ? PT_SIM_PIPELINE
                     : c->kind == LAY_EP ? PT_SIM_ALLTOALL
                     : c->kind == LAY_DP ? base->layout_dp_kind
                                         : PT_SIM_ALLREDUCE;
  /* an all-to-all: 4 MiB to each member */
  s->calls[0].bytes = c->kind == LAY_TP   ? 8u << 20
                      : c->kind == LAY_PP ? 4u << 20
                      : c->kind == LAY_EP ? (size_t)c->n << 22
                                          : 32u << 20;
  s->fault_call = 0;
  s->n_faults = 0;
  s->rank_host = NULL;
  s->rank_pid = NULL;
  s->rank_dev = NULL;
  s->rank_gone = NULL;
  s->iter_at_ns = s->iter_every_ns = s->gone_at_ns = 0;
}

/* Sets (value) or unsets (NULL) an environment variable; the value it had
 * (to be freed), or NULL. */
static char* swap_env(const char* name, const char* value) {
  const char* was = getenv(name);
  char* old = was ? strdup(was) : NULL;
  if (value) setenv(name, value, 1);
  else unsetenv(name);
  return old;
}

/* Removes a folder of files (no subfolder). */
static void remove_files(const char* dir) {
  DIR* d = opendir(dir);
  char path[4096];
  for (struct dirent* e; d && (e = readdir(d)) != NULL;)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
      unlink(path);
  if (d) closedir(d);
  rmdir(dir);
}

/* One timeline for the job (pt_sim_config.iter_at_ns): a step is each
 * kind's call in turn, each in a slot as long as one step of a
 * communicator of that kind takes — its emulated time, one communicator of
 * each kind run once for one iteration with no fault, its files and logs
 * into a scratch folder removed after — and half as much again, 2 ms
 * more: a stuck call's members began to wait at its slot's time, as on
 * hosts whose clocks agree. Each slot's start in at_ns[kind]; the step's
 * length, or 0 where a run failed (every call at once). */
static uint64_t plan_steps(const layout* L, const pt_sim_config* base, uint64_t at_ns[LAY_KINDS], FILE* err) {
  const char* tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/proxytrace-sim-plan-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return 0;
  static const char* const moved[] = {"PROXYTRACE_DUMP_DIR", "PROXYTRACE_METRICS_DIR"};
  char* saved[2];
  for (int v = 0; v < 2; v++) saved[v] = swap_env(moved[v], NULL); /* the run sets the first to dir */
  uint64_t step = 0;
  int ok = 1;
  for (int o = 0; o < L->kinds && ok; o++) {
    const int k = L->slot_kind[o];
    int i = 0;
    while (i < L->n_comms && L->comms[i].kind != k) i++;
    pt_sim_config s;
    comm_job(base, &L->comms[i], i, &s);
    s.iters = 1;
    s.fault_iter = -1;
    s.dump_dir = dir;
    s.n_env = 0; /* the plugin writes into dir, and nowhere else */
    for (int e = 0; e < base->n_env; e++)
      if (strncmp(base->env[e], "PROXYTRACE_DUMP_DIR=", 20) && strncmp(base->env[e], "PROXYTRACE_METRICS_DIR=", 23))
        s.env[s.n_env++] = base->env[e];
    pt_sim_result res;
    ok = pt_sim_run(&s, &res, err) == 0 && !res.hung;
    at_ns[k] = step;
    step += (uint64_t)(res.seconds * 1.5e9) + 2000000u;
    if (res.status == 0) pt_sim_result_free(&res);
  }
  for (int v = 0; v < 2; v++) {
    if (saved[v]) setenv(moved[v], saved[v], 1);
    free(saved[v]);
  }
  remove_files(dir);
  return ok ? step : 0;
}

int pt_sim_layout_run(const pt_sim_config* base, FILE* out, FILE* err) {
  layout L;
  int rc = 0;
  if (layout_build(&L, base->layout_tp, base->layout_pp, base->layout_dp, base->layout_ep, base->microbatches) != 0) {
    fprintf(err, "proxytrace sim: out of memory\n");
    layout_free(&L);
    return 1;
  }
  lay_comm* fc = NULL;
  if (base->n_faults) {
    fc = base->fault_comm_kind >= 0 ? find_comm(&L, base->fault_comm_kind, base->fault_comm_index) : NULL;
    if (!fc) {
      fprintf(err, "proxytrace sim: --layout with faults needs --fault-comm KIND:I naming one of its "
                   "communicators (tp:0..%d, pp:0..%d, dp:0..%d, with --ep ep:0..%d, where the group has more "
                   "than one process)\n",
              L.pp * L.dp - 1, L.dp * L.tp - 1, L.pp * L.tp - 1, L.pp * L.tp * (L.dp / L.ep) - 1);
      layout_free(&L);
      return 2;
    }
  }
  if (fc) { /* the faults name ranks of the communicator they strike */
    pt_sim_config shape = *base;
    shape.nodes = fc->kind == LAY_TP ? 1 : fc->n;
    shape.ranks_per_node = fc->kind == LAY_TP ? fc->n : 1;
    shape.ranks_per_process = 1;
    if (sim_faults_check(&shape, err) != 0) {
      layout_free(&L);
      return 2;
    }
  }
  if (!base->dump_dir) {
    fprintf(err, "proxytrace sim: --layout writes into a folder: give --dump-dir DIR\n");
    layout_free(&L);
    return 2;
  }
  const int fault_it = base->fault_iter < 0 ? base->iters - 1 : base->fault_iter;
  int fault_hangs = 0;
  for (int f = 0; f < base->n_faults; f++) fault_hangs |= hang_kind(base->faults[f].kind);
  uint64_t step_at[LAY_KINDS] = {0}, step_ns = 0; /* the job's timeline (plan_steps) */
  int* pos = malloc(sizeof(int) * (size_t)L.procs);
  unsigned char* killed = calloc((size_t)L.procs, 1); /* processes a --kill takes */
  char** host = calloc((size_t)L.procs, sizeof *host);
  long* pid = malloc(sizeof(long) * (size_t)L.procs);
  int* dev = malloc(sizeof(int) * (size_t)L.procs);
  if (!pos || !host || !pid || !dev || !killed) {
    fprintf(err, "proxytrace sim: out of memory\n");
    rc = 1;
    goto out;
  }
  propagate(&L, base, fault_hangs ? fc : NULL, fault_it, pos);
  step_ns = plan_steps(&L, base, step_at, err);
  for (int f = 0; f < base->n_faults && fc; f++)
    if (base->faults[f].kind == PT_FAULT_KILL) killed[fc->members[base->faults[f].rank]] = 1;
  for (int g = 0; g < L.procs; g++) {
    char h[32];
    snprintf(h, sizeof h, "node%d", g / L.tp);
    host[g] = strdup(h);
    pid[g] = 1000 + 7 * (long)g; /* an emulated pid of its own: the files of a process name it */
    dev[g] = g % L.tp;
    if (!host[g]) rc = 1;
  }
  if (rc) goto out;
  /* The plugin's files go into the folder, each communicator's logs into
   * a folder of its own beside them (rank<r>.log would clash). */
  if (mkdir(base->dump_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(err, "proxytrace sim: cannot create %s: %s\n", base->dump_dir, strerror(errno));
    rc = 1;
    goto out;
  }
  const int set_files = !getenv("PROXYTRACE_DUMP_DIR");
  if (set_files) setenv("PROXYTRACE_DUMP_DIR", base->dump_dir, 1);
  FILE* tj = NULL;
  if (base->truth_json && !(tj = fopen(base->truth_json, "w"))) {
    fprintf(err, "proxytrace sim: cannot write %s: %s\n", base->truth_json, strerror(errno));
    rc = 1;
    goto unset;
  }
  int hung = 0, origin_seen = 0;
  if (tj) {
    fprintf(tj, "{\"type\":\"layoutTruth\",\"schema\":1,\"layout\":{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"ep\":%d},"
                "\"iters\":%d,\"processes\":%d,\"communicators\":[",
            L.tp, L.pp, L.dp, L.ep, base->iters, L.procs);
  }
  for (int i = 0; i < L.n_comms && rc == 0; i++) {
    lay_comm* c = &L.comms[i];
    char name[32], logs[4096];
    comm_name(c, name, sizeof name);
    /* its first call that does not complete, and who entered it */
    int hung_it = -1;
    for (int it = 0; it < base->iters && hung_it < 0; it++) {
      const int at = it * L.kinds + c->slot;
      for (int r = 0; r < c->n; r++)
        if (pos[c->members[r]] <= at) hung_it = it;
    }
    const int at = hung_it >= 0 ? hung_it * L.kinds + c->slot : -1;
    int entered = 0;
    for (int r = 0; r < c->n && hung_it >= 0; r++) entered += pos[c->members[r]] >= at;
    pt_sim_config s;
    comm_job(base, c, i, &s);
    s.iter_at_ns = step_at[c->kind];
    s.iter_every_ns = step_ns;
    if (c == fc && hung_it == fault_it) memcpy(s.faults, base->faults, sizeof s.faults), s.n_faults = base->n_faults;
    /* A process killed in the faulty communicator (--kill) is dead in
     * every other it holds: where it never entered the call that hangs,
     * it dies before it (no event, no dump from then on); where it made
     * every call it would, it is gone by the end (no finalize dump). What
     * it wrote while it lived stays. */
    unsigned char gone[1024];
    memset(gone, 0, sizeof gone);
    for (int r = 0; r < c->n && hung_it >= 0 && s.n_faults < PT_SIM_MAX_FAULTS; r++)
      if (pos[c->members[r]] < at) {
        s.faults[s.n_faults++] = (pt_sim_fault){.kind = PT_FAULT_SKIP, .rank = r, .channel = -1};
        if (killed[c->members[r]] && c != fc && s.n_faults < PT_SIM_MAX_FAULTS)
          s.faults[s.n_faults++] = (pt_sim_fault){.kind = PT_FAULT_KILL, .rank = r, .channel = -1};
      }
    for (int r = 0; r < c->n && r < 1024; r++) gone[r] = c != fc && killed[c->members[r]];
    s.rank_gone = gone;
    /* it died in the faulty call: at its slot's time on the job's timeline */
    if (fc && step_ns) s.gone_at_ns = (uint64_t)fault_it * step_ns + step_at[fc->kind];
    s.fault_iter = hung_it >= 0 ? hung_it : 0;
    if (hung_it >= 0 && !entered) { /* nobody gets to it: it ends before it */
      s.iters = hung_it;
      s.n_faults = 0;
      s.fault_iter = -1;
    } else if (hung_it >= 0 && c->kind == LAY_PP) {
      /* a stage through its part of the step is stuck in a later call of
       * another group: it makes none of the next step's */
      s.iters = hung_it + 1;
    }
    char* rh[1024];
    long rp[1024];
    int rd[1024];
    for (int r = 0; r < c->n && r < 1024; r++) {
      rh[r] = host[c->members[r]];
      rp[r] = pid[c->members[r]];
      rd[r] = dev[c->members[r]];
    }
    s.rank_host = (const char* const*)rh;
    s.rank_pid = rp;
    s.rank_dev = rd;
    snprintf(logs, sizeof logs, "%s/%s", base->dump_dir, name);
    if (mkdir(logs, 0777) != 0 && errno != EEXIST) {
      fprintf(err, "proxytrace sim: cannot create %s: %s\n", logs, strerror(errno));
      rc = 1;
      break;
    }
    s.dump_dir = logs;
    s.comm_name = name; /* config.commName: the dumps name it */
    pt_sim_result res;
    int ran = s.iters > 0;
    int r = ran ? pt_sim_run(&s, &res, err) : 0;
    if (r != 0) {
      rc = r;
      break;
    }
    if (ran && res.hung) hung = 1;
    if (out && !base->quiet)
      fprintf(out, "%s: %d ranks, commHash %llu, %s\n", name, c->n,
              ran ? (unsigned long long)res.job.comm_hash : 0ull,
              !ran                  ? "never called (every member is stuck before its first call)"
              : hung_it < 0         ? "completed"
              : c == fc && hung_it == fault_it ? "hangs: the fault strikes here"
                                    : "hangs: members stuck in another communicator never enter its call");
    if (tj) {
      fprintf(tj, "%s{\"name\":\"%s\",\"kind\":\"%s\",\"commHash\":\"%llu\",\"ranks\":[", i ? "," : "", name,
              kind_name[c->kind], ran ? (unsigned long long)res.job.comm_hash : 0ull);
      for (int q = 0; q < c->n; q++) fprintf(tj, "%s%d", q ? "," : "", c->members[q]);
      fprintf(tj, "],\"faulty\":%s,\"hungIteration\":", c == fc ? "true" : "false");
      if (hung_it >= 0) fprintf(tj, "%d", hung_it);
      else fputs("null", tj);
      fputs(",\"notEntered\":[", tj);
      int first = 1;
      for (int q = 0; q < c->n && hung_it >= 0; q++) {
        const int g = c->members[q];
        if (pos[g] >= at) continue;
        const lay_comm* in = comm_of(&L, L.slot_kind[pos[g] % L.kinds], g);
        char iname[32];
        comm_name(in, iname, sizeof iname);
        fprintf(tj, "%s{\"rank\":%d,\"process\":%d,\"stuckIn\":\"%s\",\"stuckIteration\":%d}", first ? "" : ",", q,
                g, iname, pos[g] / L.kinds);
        first = 0;
      }
      fputs("],\"truth\":", tj);
      if (ran) pt_sim_truth_json(&s, &res.job, tj);
      else fputs("null", tj);
      fputc('}', tj);
      if (c == fc && ran) origin_seen = 1;
    }
    if (ran) pt_sim_result_free(&res);
  }
  if (tj) {
    fputs("],\"processList\":[", tj);
    for (int g = 0; g < L.procs; g++)
      fprintf(tj, "%s{\"process\":%d,\"host\":\"%s\",\"pid\":%ld,\"gpu\":%d}", g ? "," : "", g, host[g], pid[g],
              dev[g]);
    fprintf(tj, "],\"verdict\":\"%s\",\"origin\":", hung ? "hang" : "ok");
    if (fc && origin_seen && hung) {
      char name[32];
      comm_name(fc, name, sizeof name);
      fprintf(tj, "{\"communicator\":\"%s\",\"iteration\":%d,\"faults\":%d}", name, fault_it, base->n_faults);
    } else {
      fputs("null", tj);
    }
    fputs("}\n", tj);
    if (fclose(tj) != 0 && rc == 0) rc = 1;
  }
  if (rc == 0 && hung) rc = 3;
unset:
  if (set_files) unsetenv("PROXYTRACE_DUMP_DIR");
out:
  for (int g = 0; host && g < L.procs; g++) free(host[g]);
  free(host);
  free(pid);
  free(dev);
  free(pos);
  free(killed);
  layout_free(&L);
  return rc;
}
