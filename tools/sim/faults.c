/*
 * faults.c — the faults a job can suffer, written on the command line or in
 * a scenario file, and their one-line descriptions.
 *
 *   stall RANK:CHANNEL:STEP    RANK's GPU stops producing data on CHANNEL
 *                              ("all" = every channel) from STEP on; it
 *                              still consumes what a send/recv receives
 *                              (a ring consumes what it forwards: truth.c)
 *
 * STEP counts transfers: a transfer is sliceSteps raw steps (2 for a SIMPLE
 * all-reduce, 1 otherwise), the unit NCCL 2.24+ number their ProxyStep
 * events in. The dump's counters (po, trans, done, ns) count raw steps, so
 * descriptions give the raw step too. A STEP the op does not have is
 * refused once the job is built (truth.c).
 *   no-recv RANK[:CHANNEL[:STEP]]  RANK posts no receives (from STEP; a
 *                              send/recv call with none at all is a call
 *                              to ncclRecv that never happens)
 *   slow-link RANK:FACTOR[:T]  RANK's network link is FACTOR times slower
 *                              (1.01..1000, fractions too), from T seconds
 *                              after the job starts: the network phases of
 *                              its transfers, both ends
 *   slow-gpu RANK:FACTOR[:T]   RANK's GPU is FACTOR times slower from T on:
 *                              producing the data it sends, consuming what
 *                              it receives
 *   slow-host RANK:FACTOR[:T]  RANK's proxy thread is FACTOR times slower
 *                              from T on (a starved host CPU): every phase
 *                              of its own ops, GPU and network, and the
 *                              network phases of its peers' ops with it
 *                              (they wait for its late posts and sends)
 *   kill RANK:STEP             RANK dies at STEP: no more events, no dump
 *   pxn RANK:HELPER            RANK's network sends are progressed by the
 *                              proxy of HELPER (same node), with RANK's
 *                              pid, context and parent — foreign pointers
 *                              for HELPER's plugin
 *   leak-ops [RANK:]N          N ops per batch of a non-network transport,
 *                              started and never stopped
 *   skip RANK                  RANK never makes the call: no event of it, no
 *                              op, its GPU never takes it up (desync.c of the
 *                              analyzer names it)
 *   mismatch RANK[:WHAT]       RANK calls another collective than its peers'
 *                              all-reduce: WHAT is allgather (default),
 *                              reducescatter, broadcast, or half (the same
 *                              all-reduce with half the count). The rest is
 *                              as skip: what it called has no partner, so no
 *                              op of it runs and its GPU takes up nothing
 *
 * The time a phase waits (sim_phase_polls) is drawn here too, so that
 * what a fault does to a step's time is in one place: 0..jitter polls,
 * uniform (continuous where a poll lasts), after one poll in a job that times steps (a timing fault or
 * --noise: no phase of a real GPU or link is instant); under --noise times
 * a heavy-tailed factor (Pareto, alpha 2.5, median 1: one phase in 30
 * three times as long as its draw, one in 300 ten times), the healthy
 * spread of a real fabric; and FACTOR times that on the phases a slow link,
 * GPU or proxy thread strikes once its start has passed — F times as long as it would
 * have taken, which is what a link at 1/F of its speed does.
 *
 * A scenario file holds options, one per line, without the leading "--"
 * (`stall 3:1:5`, `nodes 2`); blank lines and "#" comments are skipped.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int parse_int(const char* s, int lo, int hi, int* out) {
  char* end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

/* Splits "a:b:c" into at most `max` fields; returns how many. */
static int split(const char* s, char fields[][32], int max) {
  int n = 0;
  const char* p = s;
  while (n < max) {
    const char* c = strchr(p, ':');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == 0 || len >= 32) return -1;
    memcpy(fields[n], p, len);
    fields[n][len] = 0;
    n++;
    if (!c) return n;
    p = c + 1;
  }
  return -1; /* too many fields */
}

static int parse_double(const char* s, double lo, double hi, double* out) {
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
  *out = v;
  return 0;
}

/* RANK:FACTOR[:START] of a slow link or GPU. */
static int slow_fields(char v[][32], int n, pt_sim_fault* f) {
  const int R = 1 << 20;
  if ((n != 2 && n != 3) || parse_int(v[0], 0, R, &f->rank) || parse_double(v[1], 1.01, 1000, &f->factor) ||
      (n == 3 && parse_double(v[2], 0, 86400, &f->start_s)))
    return -1;
  f->arg = (int)lround(f->factor);
  return 0;
}

static int channel_field(const char* s, int* out) {
  if (!strcmp(s, "all") || !strcmp(s, "*")) {
    *out = -1;
    return 0;
  }
  return parse_int(s, 0, 63, out);
}

int sim_fault_parse(const char* kind, const char* value, pt_sim_fault* f, FILE* err) {
  char v[4][32];
  int n = split(value, v, 4);
  memset(f, 0, sizeof *f);
  f->channel = -1;
  const int R = 1 << 20;
  if (!strcmp(kind, "stall")) {
    f->kind = PT_FAULT_STALL;
    if (n == 3 && !parse_int(v[0], 0, R, &f->rank) && !channel_field(v[1], &f->channel) &&
        !parse_int(v[2], 0, 1 << 30, &f->step))
      return 0;
    fprintf(err, "proxytrace sim: --stall takes RANK:CHANNEL:STEP (CHANNEL may be 'all'), got '%s'\n", value);
  } else if (!strcmp(kind, "no-recv")) {
    f->kind = PT_FAULT_NO_RECV;
    if (n >= 1 && n <= 3 && !parse_int(v[0], 0, R, &f->rank) && (n < 2 || !channel_field(v[1], &f->channel)) &&
        (n < 3 || !parse_int(v[2], 0, 1 << 30, &f->step)))
      return 0;
    fprintf(err, "proxytrace sim: --no-recv takes RANK[:CHANNEL[:STEP]], got '%s'\n", value);
  } else if (!strcmp(kind, "slow-link") || !strcmp(kind, "slow-gpu") || !strcmp(kind, "slow-host")) {
    f->kind = !strcmp(kind, "slow-link") ? PT_FAULT_SLOW_LINK
              : !strcmp(kind, "slow-gpu") ? PT_FAULT_SLOW_GPU
                                          : PT_FAULT_SLOW_HOST;
    if (!slow_fields(v, n, f)) return 0;
    fprintf(err,
            "proxytrace sim: --%s takes RANK:FACTOR[:START] with FACTOR 1.01..1000 and START seconds "
            "0..86400, got '%s'\n",
            kind, value);
  } else if (!strcmp(kind, "kill")) {
    f->kind = PT_FAULT_KILL;
    if (n == 2 && !parse_int(v[0], 0, R, &f->rank) && !parse_int(v[1], 0, 1 << 30, &f->step)) return 0;
    fprintf(err, "proxytrace sim: --kill takes RANK:STEP, got '%s'\n", value);
  } else if (!strcmp(kind, "pxn")) {
    f->kind = PT_FAULT_PXN;
    if (n == 2 && !parse_int(v[0], 0, R, &f->rank) && !parse_int(v[1], 0, R, &f->arg)) return 0;
    fprintf(err, "proxytrace sim: --pxn takes RANK:HELPER, got '%s'\n", value);
  } else if (!strcmp(kind, "leak-ops")) {
    f->kind = PT_FAULT_LEAK_OPS;
    f->rank = -1;
    if (n == 1 && !parse_int(v[0], 1, 64, &f->arg)) return 0;
    if (n == 2 && !parse_int(v[0], 0, R, &f->rank) && !parse_int(v[1], 1, 64, &f->arg)) return 0;
    fprintf(err, "proxytrace sim: --leak-ops takes [RANK:]N with N 1..64, got '%s'\n", value);
  } else if (!strcmp(kind, "skip")) {
    f->kind = PT_FAULT_SKIP;
    if (n == 1 && !parse_int(v[0], 0, R, &f->rank)) return 0;
    fprintf(err, "proxytrace sim: --skip takes RANK, got '%s'\n", value);
  } else if (!strcmp(kind, "mismatch")) {
    f->kind = PT_FAULT_MISMATCH;
    if (n >= 1 && n <= 2 && !parse_int(v[0], 0, R, &f->rank)) {
      f->arg = n < 2 ? SIM_MISMATCH_ALLGATHER : sim_mismatch_parse(v[1]);
      if (f->arg >= 0) return 0;
    }
    fprintf(err, "proxytrace sim: --mismatch takes RANK[:WHAT], WHAT one of allgather, reducescatter, broadcast, "
                 "half; got '%s'\n", value);
  } else {
    fprintf(err, "proxytrace sim: unknown fault '%s'\n", kind);
  }
  return -1;
}

static const char* const mismatch_names[SIM_MISMATCH_NUM] = {"allgather", "reducescatter", "broadcast", "half"};

int sim_mismatch_parse(const char* s) {
  for (int i = 0; i < SIM_MISMATCH_NUM; i++)
    if (!strcmp(s, mismatch_names[i])) return i;
  return -1;
}

/* What a rank with a mismatch calls instead of the all-reduce of `count`
 * elements of its peers, in a job of `nranks`. */
void sim_mismatch_call(int what, size_t count, int nranks, const char** func, size_t* out_count) {
  switch (what) {
    case SIM_MISMATCH_REDUCESCATTER: *func = "ReduceScatter"; *out_count = count / (size_t)nranks; break;
    case SIM_MISMATCH_BROADCAST: *func = "Broadcast"; *out_count = count; break;
    case SIM_MISMATCH_HALF: *func = "AllReduce"; *out_count = count / 2; break;
    default: *func = "AllGather"; *out_count = count / (size_t)nranks; break;
  }
}

const pt_sim_fault* sim_fault_desync(const pt_sim_config* c, int rank, int b) {
  const int fi = c->fault_iter < 0 ? c->iters - 1 : c->fault_iter;
  const int per = sim_iter_batches(c);
  /* a pipeline's stage out of the step makes none of its calls */
  if (c->calls[0].kind == PT_SIM_PIPELINE ? b / per != fi : b != fi * per + c->fault_call) return NULL;
  for (int i = 0; i < c->n_faults; i++)
    if ((c->faults[i].kind == PT_FAULT_SKIP || c->faults[i].kind == PT_FAULT_MISMATCH) && c->faults[i].rank == rank)
      return &c->faults[i];
  return NULL;
}

/* Checks the faults against the job's shape. */
int sim_faults_check(const pt_sim_config* c, FILE* err) {
  int n = c->nodes * c->ranks_per_node;
  for (int i = 0; i < c->n_faults; i++) {
    const pt_sim_fault* f = &c->faults[i];
    if (f->rank >= n) {
      fprintf(err, "proxytrace sim: fault on rank %d, but the job has ranks 0..%d\n", f->rank, n - 1);
      return -1;
    }
    if (f->channel >= c->channels) {
      fprintf(err, "proxytrace sim: fault on channel %d, but the job has channels 0..%d\n", f->channel,
              c->channels - 1);
      return -1;
    }
    if (f->kind == PT_FAULT_PXN) {
      if (f->arg >= n || f->arg == f->rank || f->arg / c->ranks_per_node != f->rank / c->ranks_per_node) {
        fprintf(err, "proxytrace sim: --pxn %d:%d: the helper must be another rank of the same node\n", f->rank,
                f->arg);
        return -1;
      }
      /* A rank of a process does not die alone: its communicator would be
       * destroyed while the helper's proxy thread, in the same process,
       * still records its sends. */
      for (int k = 0; k < c->n_faults; k++)
        if (c->faults[k].kind == PT_FAULT_KILL && c->faults[k].rank == f->rank &&
            f->arg / c->ranks_per_process == f->rank / c->ranks_per_process) {
          fprintf(err,
                  "proxytrace sim: --kill %d with --pxn %d:%d in one process (--ranks-per-process %d): a rank of a "
                  "process cannot die alone while another of its proxy threads runs its sends\n",
                  f->rank, f->rank, f->arg, c->ranks_per_process);
          return -1;
        }
    }
  }
  return 0;
}

const char* sim_fault_name(pt_fault_kind k) {
  switch (k) {
    case PT_FAULT_STALL: return "stall";
    case PT_FAULT_NO_RECV: return "no-recv";
    case PT_FAULT_SLOW_LINK: return "slow-link";
    case PT_FAULT_KILL: return "kill";
    case PT_FAULT_PXN: return "pxn";
    case PT_FAULT_LEAK_OPS: return "leak-ops";
    case PT_FAULT_SLOW_GPU: return "slow-gpu";
    case PT_FAULT_SKIP: return "skip";
    case PT_FAULT_MISMATCH: return "mismatch";
    case PT_FAULT_SLOW_HOST: return "slow-host";
  }
  return "?";
}

int sim_fault_timing(pt_fault_kind k) {
  return k == PT_FAULT_SLOW_LINK || k == PT_FAULT_SLOW_GPU || k == PT_FAULT_SLOW_HOST;
}

void sim_fault_option(const pt_sim_fault* f, char* buf, size_t len) {
  char ch[16];
  if (f->channel < 0) snprintf(ch, sizeof ch, "all");
  else snprintf(ch, sizeof ch, "%d", f->channel);
  if (f->kind == PT_FAULT_KILL) snprintf(buf, len, "--kill %d:%d", f->rank, f->step);
  else if (f->kind == PT_FAULT_SKIP) snprintf(buf, len, "--skip %d", f->rank);
  else if (f->kind == PT_FAULT_MISMATCH) snprintf(buf, len, "--mismatch %d:%s", f->rank, mismatch_names[f->arg]);
  else if (sim_fault_timing(f->kind) && f->start_s > 0)
    snprintf(buf, len, "--%s %d:%g:%g", sim_fault_name(f->kind), f->rank, f->factor, f->start_s);
  else if (sim_fault_timing(f->kind))
    snprintf(buf, len, "--%s %d:%g", sim_fault_name(f->kind), f->rank, f->factor);
  else snprintf(buf, len, "--%s %d:%s:%d", sim_fault_name(f->kind), f->rank, ch, f->step);
}

void sim_fault_describe(const pt_sim_fault* f, int slice, int scale, char* buf, size_t len) {
  char ch[32], step[96];
  if (f->channel < 0) snprintf(ch, sizeof ch, "all channels");
  else snprintf(ch, sizeof ch, "channel %d", f->channel);
  if (slice > 1 && scale > 1)
    snprintf(step, sizeof step, "transfer %d (raw step %d in the dump's counters)", f->step,
             f->step * scale);
  else if (slice > 1)
    snprintf(step, sizeof step, "transfer %d (step %d in the dump's counters, which count transfers)",
             f->step, f->step);
  else
    snprintf(step, sizeof step, "step %d", f->step);
  switch (f->kind) {
    case PT_FAULT_STALL: snprintf(buf, len, "GPU of rank %d stops producing data on %s from %s", f->rank, ch, step); break;
    case PT_FAULT_NO_RECV: snprintf(buf, len, "rank %d posts no receives on %s from %s", f->rank, ch, step); break;
    case PT_FAULT_SLOW_LINK:
    case PT_FAULT_SLOW_GPU:
    case PT_FAULT_SLOW_HOST: {
      char from[48] = "";
      if (f->start_s > 0) snprintf(from, sizeof from, " from %gs after the start", f->start_s);
      snprintf(buf, len, "rank %d's %s is %gx slower%s", f->rank,
               f->kind == PT_FAULT_SLOW_LINK  ? "network link"
               : f->kind == PT_FAULT_SLOW_GPU ? "GPU"
                                              : "proxy thread",
               f->factor, from);
      break;
    }
    case PT_FAULT_KILL: snprintf(buf, len, "rank %d dies at %s", f->rank, step); break;
    case PT_FAULT_PXN: snprintf(buf, len, "rank %d's sends go through rank %d's proxy (PXN)", f->rank, f->arg); break;
    case PT_FAULT_SKIP: snprintf(buf, len, "rank %d never makes the call", f->rank); break;
    case PT_FAULT_MISMATCH:
      snprintf(buf, len, "rank %d calls %s instead of its peers' all-reduce", f->rank,
               f->arg == SIM_MISMATCH_HALF ? "an all-reduce of half the count" : mismatch_names[f->arg]);
      break;
    case PT_FAULT_LEAK_OPS:
      if (f->rank < 0) snprintf(buf, len, "%d never-stopped non-network ops per batch on every rank", f->arg);
      else snprintf(buf, len, "%d never-stopped non-network ops per batch on rank %d", f->arg, f->rank);
      break;
  }
}

/* Pareto with alpha 2.5 scaled to median 1: (2 u)^(-1/alpha), u in (0, 1]. */
static double heavy_tail(uint64_t* rng) {
  double u = ((double)(sim_rand(rng) >> 11) + 1) / 9007199254740992.0;
  return pow(2 * u, -1 / 2.5);
}

double sim_phase_polls(const pt_sim_config* c, const pt_sim_op* op, int gpu_phase, double since_start_s,
                       uint64_t* rng) {
  const int j = c->jitter;
  /* Paced (a poll lasts): a continuous draw over 0..jitter, as no two real
   * phases last the same nanoseconds — polls of exactly N times the pace
   * are point masses that a 5 % slower node moves across a histogram
   * bucket's bound, which reads as 25 % slower. Unpaced, whole polls. */
  double w = c->phase_base;
  if (j > 0 && c->pace_us > 0) w += (double)j * (double)(sim_rand(rng) >> 11) * (1.0 / 9007199254740992.0);
  else if (j > 0) w += (double)(sim_rand(rng) % (uint64_t)(j + 1));
  if (c->noise) w *= heavy_tail(rng);
  /* --noise-busy-node: every phase of the node's ranks a little longer */
  if (c->busy_node >= 0 && op->rank / c->ranks_per_node == c->busy_node) w *= c->busy_factor;
  const double f = gpu_phase ? op->slow_gpu : op->slow;
  if (f > 1 && since_start_s >= (gpu_phase ? op->slow_gpu_from_s : op->slow_from_s)) w *= f;
  /* A slow proxy thread is late to see every phase of its own ops end. */
  if (op->slow_host > 1 && since_start_s >= op->slow_host_from_s) w *= op->slow_host;
  return w;
}
