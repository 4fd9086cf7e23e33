/*
 * cli.c — `proxytrace sim`: options, help, and the closing summary.
 *
 * Every option is also a scenario-file line (faults.c). A bad option or
 * value is named together with what is accepted, and the command exits 2.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "internal.h"

void pt_sim_config_init(pt_sim_config* c) {
  memset(c, 0, sizeof *c);
  c->host = PT_HOST_RCCL;
  c->nodes = 2;
  c->ranks_per_node = 4;
  c->ranks_per_process = 1;
  c->channels = 2;
  c->iters = 4;
  c->calls[0] = (pt_sim_call){PT_SIM_ALLREDUCE, (size_t)32 << 20};
  c->calls[1] = (pt_sim_call){PT_SIM_SENDRECV, (size_t)8 << 20};
  c->n_calls = 2;
  c->proto = PT_SIM_PROTO_SIMPLE;
  c->seed = 1;
  c->jitter = 2;
  c->recv_retry = 0.02;
  c->gpu_batch = 0;
  c->hang_polls = 50;
  c->pace_us = -1; /* not given: pt_sim_parse_args decides */
  c->busy_node = -1;
  c->signal_after_s = -1;
  c->fault_comm_kind = -1;
  c->fault_iter = -1;
  c->microbatches = 4;
  c->debug_level = PT_SIM_LOG_WARN;
  const char* d = getenv("NCCL_DEBUG");
  static const char* levels[] = {"NONE", "ERROR", "VERSION", "WARN", "INFO", "ABORT", "TRACE"};
  for (int i = 0; d && i < 7; i++)
    if (!strcasecmp(d, levels[i])) c->debug_level = i;
}

void pt_sim_config_release(pt_sim_config* c) {
  for (int i = 0; i < c->n_owned; i++) free(c->owned[i]);
  c->n_owned = 0;
}

int pt_sim_parse_size(const char* s, size_t* out) {
  char* end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || s[0] == '-') return -1;
  unsigned long long mul = 1;
  if (*end) {
    switch (*end) {
      case 'k': case 'K': mul = 1ull << 10; break;
      case 'm': case 'M': mul = 1ull << 20; break;
      case 'g': case 'G': mul = 1ull << 30; break;
      default: return -1;
    }
    end++;
    if (*end == 'i') end++;
    if (*end == 'B') end++;
    if (*end) return -1;
  }
  if (v == 0 || v > (1ull << 40) / mul) return -1;
  *out = (size_t)(v * mul);
  return 0;
}

void pt_sim_usage(FILE* f) {
  fprintf(f,
"usage: proxytrace sim [options]\n"
"\n"
"Emulates NCCL or RCCL on the CPU: loads a profiler plugin the way the host\n"
"does and drives it with the host's events, threads and quirks for a job of\n"
"ranks on nodes, with faults if asked. Each rank is one communicator.\n"
"\n"
"Host and plugin:\n"
"  --host PROFILE        nccl-2.23 … nccl-2.32, nccl-2.27.3, rccl, rccl-2.31\n"
"                        (default rccl)\n"
"  --plugin VALUE        NCCL_PROFILER_PLUGIN value: a path or a name, resolved\n"
"                        by the host's rules (default: $NCCL_PROFILER_PLUGIN if\n"
"                        set, else the proxytrace plugin beside this program or\n"
"                        in its ../lib, as proxytrace demo uses)\n"
"  --env NAME=VALUE      set an environment variable before loading (repeatable;\n"
"                        e.g. the plugin's own settings)\n"
"  --strict              bytes the host leaves unset (un-zeroed adapter copies,\n"
"                        uninitialised state args, past the args object) hold\n"
"                        0xCD, and a handle the plugin does not write is noticed\n"
"  --debug LEVEL         NCCL_DEBUG of the emulated logger: NONE ERROR VERSION WARN\n"
"                        INFO ABORT TRACE (default $NCCL_DEBUG, else WARN)\n"
"  --timestamps          \"[date time] \" before WARN lines, as RCCL prints them\n"
"  --comm-name NAME      the communicator's name (config.commName; default none)\n"
"\n"
"Job:\n"
"  --layout TPxPPxDP     a parallel training job instead: TP x PP x DP processes,\n"
"                        TP a node, each holding a TP communicator (all-reduce\n"
"                        in its node), a PP one (the 1F1B schedule of\n"
"                        --microbatches between pipeline stages) and a DP one\n"
"                        (all-reduce across replicas),\n"
"                        called in that order every iteration, each call at\n"
"                        its place in the step on the job's one clock; each\n"
"                        one a job of its own into --dump-dir (needed), its\n"
"                        logs in a folder of its name (tp0, pp1, dp2 ...)\n"
"  --dp-op KIND          with --layout: the DP groups' call, allreduce (default)\n"
"                        or reducescatter (a sharded optimizer's: ZeRO, FSDP)\n"
"  --ep N                with --layout: expert parallelism, each N consecutive\n"
"                        data-parallel replicas (N divides DP, 2..256) an EP\n"
"                        communicator per TP and PP place, whose all-to-all\n"
"                        (an MoE layer's token exchange) comes after the TP\n"
"                        all-reduce (ep0, ep1 ...)\n"
"  --fault-comm KIND:I   with --layout: the communicator the faults strike\n"
"                        (tp, ep, pp or dp, the I-th of that kind), its ranks\n"
"                        numbered inside it; a process stuck there never\n"
"                        enters its later calls in the others\n"
"  --nodes N             nodes (default 2)\n"
"  --ranks-per-node N    ranks per node (default 4)\n"
"  --ranks-per-process N  ranks of a node one process drives (JAX, one process\n"
"                        per node: N = ranks per node), each with its own proxy\n"
"                        thread; divides --ranks-per-node (default 1)\n"
"  --channels N          channels, 1..64 (default 2)\n"
"  --ops LIST            calls per iteration, KIND:SIZE,… with KIND allreduce,\n"
"                        reducescatter, allgather (SIZE: the whole buffer of all\n"
"                        ranks' parts), sendrecv or alltoall (every rank sends\n"
"                        SIZE/ranks to each other rank in one group, as an\n"
"                        expert-parallel MoE layer does; up to 256 ranks), SIZE\n"
"                        like 64M (default allreduce:32M,sendrecv:8M); or\n"
"                        pipeline (alone, one stage a node): a pipeline-parallel\n"
"                        group's 1F1B step, SIZE each activation or gradient\n"
"  --microbatches M      the pipeline's microbatches a step, 1..64 (default 4)\n"
"  --iters N             iterations (default 4)\n"
"  --proto NAME          allreduce protocol: LL, LL128, SIMPLE (default SIMPLE)\n"
"  --seed N              seed of every random choice (default 1)\n"
"  --jitter N            extra polls per step phase drawn from 0..N (default 2)\n"
"  --noise               healthy step times heavy-tailed: each phase's draw\n"
"                        times a Pareto factor (alpha 2.5, median 1), as on a\n"
"                        real fabric; a healthy noisy job for false alarms\n"
"  --noise-deschedule N:MS  each proxy thread loses the CPU for MS ms, N times a\n"
"                        second on average (at random, seeded), as on a busy host\n"
"  --noise-busy-node N:F  every phase of node N's ranks F times as long (1..2):\n"
"                        a busy node, every rank a little slow\n"
"  --noise-late-dumps MS  the plugin's timers (watchdog, periodic dumps, metrics)\n"
"                        run up to MS ms late, drawn each time (emulated time):\n"
"                        dumps that reach the disk late\n"
"  --recv-retry P        chance 0..0.9 that irecv returns no request, so the step\n"
"                        is started again without a stop (default 0.02)\n"
"  --gpu-batch N         steps the GPU may consume between two polls, drawn from\n"
"                        1..N (1..8); 0: every step handed to it, as a GPU that\n"
"                        keeps up with its proxy does (default 0)\n"
"  --gdr-flush           receives are flushed (GPU Direct RDMA), FLUSHED counter\n"
"  --hang-polls N        progress rounds on a hung job before it is aborted\n"
"                        (default 50)\n"
"  --pace US             real time: each poll a waiting phase draws lasts US\n"
"                        microseconds of the machine's clock, and a proxy thread\n"
"                        with nothing to do sleeps until its next op is due\n"
"                        (0..100000; 0: polls as fast as they go). For what must\n"
"                        see real time (top, --follow on a live folder); step\n"
"                        times then carry the machine's load. Without it time is\n"
"                        emulated (see Time below)\n"
"  --real-time           real time without pacing a poll (as --pace 0, but a\n"
"                        timing fault is paced 200 us)\n"
"  --poll-us US          emulated time: each poll a waiting phase draws lasts\n"
"                        US emulated microseconds (1..100000; default 200 in a\n"
"                        job that times steps, else a proxy round lasts 1 us)\n"
"  --ras-mask T:MASK     (2.31+) from batch T on (each call of each iteration is\n"
"                        one batch, counted from 0), RAS has set every rank's\n"
"                        event mask to MASK (decimal or 0x hex; repeatable)\n"
"  --hold SECONDS        after those rounds, keep the proxy threads polling the\n"
"                        stuck ops for this long before the abort, so the\n"
"                        plugin's watchdogs and signals act as in a real hang\n"
"                        (0..3600, default 0)\n"
"  --signal-after SECONDS  send PROXYTRACE_DUMP_SIGNAL (set it with --env) to\n"
"                        the process this long after the job starts, while it\n"
"                        runs or hangs (0..3600); the emulated host's own\n"
"                        handler of that signal counts what reaches it\n"
"  --comm-dump N         RCCL only: a watchdog thread calls ncclCommDump for\n"
"                        every rank N times, while the job runs (default 0)\n"
"\n"
"Time: when sim drives proxytrace's own plugin, time is emulated: the plugin\n"
"reads the emulator's clock (its timestamps, stall watchdog, periodic dumps,\n"
"step metrics and file times), every thread of the job runs in one order fixed\n"
"by the seed, and nothing sleeps for real, so the same command gives the same\n"
"dump, metrics and truth files on any machine under any load (after the pid).\n"
"A poll of a waiting phase lasts 200 emulated us in a job that times steps (a\n"
"slow-link, slow-gpu or slow-host fault, --noise), and a proxy round 1 us. The\n"
"times the files state start at 2026-01-01 00:00:00 UTC. Any other plugin, and\n"
"--pace or --real-time, run on the machine's clock.\n"
"\n"
"Faults (strike in one call of one iteration; slow-link, slow-gpu, slow-host, pxn,\n"
"leak-ops in all).\n"
"A step S counts transfers of sliceSteps raw steps (2 for a SIMPLE all-reduce,\n"
"else 1), as NCCL 2.24+ number ProxyStep events; the dump's counters (po, trans,\n"
"done, ns) count raw steps under RCCL and NCCL 2.23, transfers under 2.24+, and\n"
"the summary and --truth say which. A step the op does not have is refused.\n"
"  --scenario FILE       read options from FILE, one per line, without \"--\"\n"
"  --stall R:C:S         rank R's GPU stops producing data on channel C (or all)\n"
"                        from transfer S (it still consumes what a send/recv\n"
"                        receives; a ring consumes only what it forwards)\n"
"  --no-recv R[:C[:S]]   rank R posts no receives (from transfer S, default 0)\n"
"  --slow-link R:F[:T]   rank R's network link is F times slower (F 1.01..1000,\n"
"                        fractions too: 1.2 is a link at 1/1.2 of its speed)\n"
"                        from T seconds after the start (default 0): the\n"
"                        network phases of its transfers, both ends, take F\n"
"                        times as long; paced (see --pace): without real\n"
"                        time, step times are the machine's noise\n"
"  --slow-gpu R:F[:T]    rank R's GPU is F times slower from T on: producing\n"
"                        what it sends, consuming what it receives; paced\n"
"  --slow-host R:F[:T]   rank R's proxy thread is F times slower from T on (a\n"
"                        starved host CPU): every wait it times, GPU and\n"
"                        network, and its peers' network waits with it; paced\n"
"  --kill R:S            rank R dies at transfer S (its dump never comes)\n"
"  --pxn R:H             rank R's network sends run on the proxy of rank H (same\n"
"                        node): foreign pid, context and parent for H's plugin;\n"
"                        H in R's process (--ranks-per-process): R's context,\n"
"                        recorded into R's trace from H's proxy thread\n"
"  --leak-ops [R:]N      N non-network proxy ops per call, started, never stopped\n"
"                        (2.27+: older hosts start a ProxyOp only in progress)\n"
"  --skip R              rank R never makes the call: no event, no op (a desync)\n"
"  --mismatch R[:WHAT]   rank R calls another collective than its peers' all-reduce:\n"
"                        allgather (default), reducescatter, broadcast, or half\n"
"                        (half the count); no op of it runs (a desync)\n"
"  --fault-iter N        iteration the faults strike in (default the last)\n"
"  --fault-call N        call of that iteration, index into --ops (default 0)\n"
"  --fault-p2p-call K    in a pipeline: the faulty stage's K-th call of the step\n"
"                        that fits the fault (with a send for --stall, with a\n"
"                        receive for --no-recv; default 0)\n"
"\n"
"Output:\n"
"  --dump-dir DIR        each rank's logger lines to DIR/rank<R>.log, lines of no\n"
"                        rank to DIR/host.log (default: standard output, and\n"
"                        standard error for lines of no rank),\n"
"                        and PROXYTRACE_DUMP_DIR=DIR for the plugin unless it is\n"
"                        set; files of earlier runs there are removed first\n"
"  --truth               print the ground truth: faults, every op, stuck ops\n"
"  --truth-file FILE     write the ground truth to FILE\n"
"  --truth-json FILE     write the ground truth as one line of JSON to FILE: the\n"
"                        faults, the verdict and the culprits a correct analysis\n"
"                        of the dumps names (proxytrace analyze --expect FILE)\n"
"  --quiet               no summary\n"
"  -h, --help            this help\n"
"An option's value may also be written --option=VALUE (needed for a value that\n"
"starts with '-').\n"
"\n"
"Exit status:\n"
"  0  the job ran and every call completed\n"
"  1  the job could not run (no plugin loaded: the loader's report says why)\n"
"  2  a bad option, or a fault the job cannot have (a step beyond the op)\n"
"  3  the job ran and hung (the faults stopped it; dumps and truth are written)\n");
}

static int bad(FILE* err, const char* opt, const char* val, const char* want) {
  fprintf(err, "proxytrace sim: bad value '%s' for --%s: %s\n", val ? val : "", opt, want);
  return 2;
}

static int to_int(const char* s, int lo, int hi, int* out) {
  char* end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static int to_double(const char* s, double lo, double hi, double* out) {
  char* end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
  *out = v;
  return 0;
}

static int to_seconds(const char* s, double* out) { return to_double(s, 0, 3600, out); }

static int parse_ops(pt_sim_config* c, const char* s) {
  char buf[512];
  if (strlen(s) >= sizeof buf) return -1;
  strcpy(buf, s);
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char* colon = strchr(tok, ':');
    if (!colon || n >= PT_SIM_MAX_CALLS) return -1;
    *colon = 0;
    if (!strcmp(tok, "allreduce")) c->calls[n].kind = PT_SIM_ALLREDUCE;
    else if (!strcmp(tok, "sendrecv")) c->calls[n].kind = PT_SIM_SENDRECV;
    else if (!strcmp(tok, "alltoall")) c->calls[n].kind = PT_SIM_ALLTOALL;
    else if (!strcmp(tok, "reducescatter")) c->calls[n].kind = PT_SIM_REDUCESCATTER;
    else if (!strcmp(tok, "allgather")) c->calls[n].kind = PT_SIM_ALLGATHER;
    else if (!strcmp(tok, "pipeline")) c->calls[n].kind = PT_SIM_PIPELINE;
    else return -1;
    if (pt_sim_parse_size(colon + 1, &c->calls[n].bytes) != 0 || c->calls[n].bytes > (1ull << 32)) return -1;
    n++;
  }
  if (n == 0) return -1;
  c->n_calls = n;
  return 0;
}

static int apply(pt_sim_config* c, const char* opt, const char* val, FILE* out, FILE* err, int depth);

/* Every option, and whether it takes a value. */
static const struct {
  const char* name;
  int value;
} options[] = {
    {"host", 1},       {"plugin", 1},     {"env", 1},        {"strict", 0},        {"debug", 1},
    {"timestamps", 0}, {"comm-name", 1},  {"nodes", 1},      {"ranks-per-node", 1}, {"channels", 1},
    {"ranks-per-process", 1},
    {"ops", 1},        {"iters", 1},      {"proto", 1},      {"seed", 1},          {"jitter", 1},
    {"recv-retry", 1}, {"gpu-batch", 1},  {"gdr-flush", 0},  {"hang-polls", 1},    {"scenario", 1},
    {"stall", 1},      {"no-recv", 1},    {"slow-link", 1},  {"kill", 1},          {"pxn", 1},
    {"leak-ops", 1},   {"fault-iter", 1}, {"fault-call", 1}, {"dump-dir", 1},      {"truth", 0},
    {"truth-file", 1}, {"quiet", 0},      {"help", 0},       {"comm-dump", 1},     {"hold", 1},
    {"layout", 1}, {"ep", 1}, {"dp-op", 1}, {"fault-comm", 1}, {"signal-after", 1}, {"truth-json", 1}, {"slow-gpu", 1},  {"pace", 1},  {"real-time", 0}, {"poll-us", 1},
    {"ras-mask", 1},   {"noise", 0}, {"noise-deschedule", 1}, {"noise-busy-node", 1}, {"noise-late-dumps", 1},          {"skip", 1},       {"mismatch", 1},    {"slow-host", 1},
    {"microbatches", 1}, {"fault-p2p-call", 1},
};

const char* pt_sim_option(int i, int* takes_value) {
  if (i < 0 || i >= (int)(sizeof options / sizeof options[0])) return NULL;
  if (takes_value) *takes_value = options[i].value;
  return options[i].name;
}

static int is_option(const char* opt) {
  for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
    if (!strcmp(opt, options[i].name)) return 1;
  return 0;
}

static int is_flag(const char* opt) {
  for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
    if (!strcmp(opt, options[i].name)) return !options[i].value;
  return 0;
}

static int read_scenario(pt_sim_config* c, const char* path, FILE* out, FILE* err, int depth) {
  if (depth > 0) {
    fprintf(err, "proxytrace sim: a scenario file cannot include another (%s)\n", path);
    return 2;
  }
  FILE* f = fopen(path, "r");
  if (!f) {
    fprintf(err, "proxytrace sim: cannot read scenario %s: %s\n", path, strerror(errno));
    return 2;
  }
  char line[1024];
  int lineno = 0, rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    char* hash = strchr(line, '#');
    if (hash) *hash = 0;
    char* s = line;
    while (*s == ' ' || *s == '\t') s++;
    size_t len = strlen(s);
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t')) s[--len] = 0;
    if (!*s) continue;
    if (s[0] == '-' && s[1] == '-') s += 2;
    char* val = s + strcspn(s, " \t=");
    if (*val) {
      *val++ = 0;
      while (*val == ' ' || *val == '\t' || *val == '=') val++;
    }
    if (!is_flag(s) && !*val) {
      fprintf(err, "proxytrace sim: %s:%d: '%s' needs a value\n", path, lineno, s);
      rc = 2;
      break;
    }
    char* keep = NULL;
    if (*val) {
      if (c->n_owned >= (int)(sizeof c->owned / sizeof c->owned[0])) {
        fprintf(err, "proxytrace sim: %s: too many lines with values\n", path);
        rc = 2;
        break;
      }
      keep = strdup(val);
      if (!keep) {
        rc = 2;
        break;
      }
      c->owned[c->n_owned++] = keep;
    }
    rc = apply(c, s, keep, out, err, depth + 1);
    if (rc == 1) rc = 0; /* --help in a file: ignored */
    if (rc) fprintf(err, "proxytrace sim: in %s line %d\n", path, lineno);
  }
  fclose(f);
  return rc;
}

static int apply(pt_sim_config* c, const char* opt, const char* val, FILE* out, FILE* err, int depth) {
  if (!strcmp(opt, "help")) {
    pt_sim_usage(out);
    return 1;
  }
  if (!strcmp(opt, "strict")) c->strict = 1;
  else if (!strcmp(opt, "timestamps")) c->timestamps = 1;
  else if (!strcmp(opt, "gdr-flush")) c->gdr_flush = 1;
  else if (!strcmp(opt, "truth")) c->print_truth = 1;
  else if (!strcmp(opt, "quiet")) c->quiet = 1;
  else if (!strcmp(opt, "host")) {
    if (pt_host_parse(val, &c->host) != PT_OK)
      return bad(err, opt, val, "one of nccl-2.23 … nccl-2.32, nccl-2.27.3, rccl, rccl-2.31");
    char note[256];
    if (pt_host_parse_note(val, note, sizeof note)) fprintf(err, "proxytrace sim: note: %s\n", note);
  } else if (!strcmp(opt, "plugin")) c->plugin = val;
  else if (!strcmp(opt, "env")) {
    if (!strchr(val, '=') || val[0] == '=') return bad(err, opt, val, "NAME=VALUE");
    if (c->n_env >= PT_SIM_MAX_ENV) return bad(err, opt, val, "at most 16 --env options");
    c->env[c->n_env++] = val;
  } else if (!strcmp(opt, "debug")) {
    static const char* levels[] = {"NONE", "ERROR", "VERSION", "WARN", "INFO", "ABORT", "TRACE"};
    int found = -1;
    for (int i = 0; i < 7; i++)
      if (!strcasecmp(val, levels[i])) found = i;
    if (found < 0) return bad(err, opt, val, "NONE, ERROR, VERSION, WARN, INFO, ABORT or TRACE");
    c->debug_level = found;
  } else if (!strcmp(opt, "comm-name")) c->comm_name = val;
  else if (!strcmp(opt, "layout")) {
    if (pt_sim_layout_parse(val, &c->layout_tp, &c->layout_pp, &c->layout_dp))
      return bad(err, opt, val, "TPxPPxDP, each 1.. (TP up to 64), 2..16384 processes (e.g. 2x2x2)");
  } else if (!strcmp(opt, "fault-comm")) {
    if (pt_sim_fault_comm_parse(val, &c->fault_comm_kind, &c->fault_comm_index))
      return bad(err, opt, val, "tp:I, ep:I, pp:I or dp:I (the I-th group of that kind)");
  } else if (!strcmp(opt, "dp-op")) {
    if (!strcmp(val, "allreduce")) c->layout_dp_kind = PT_SIM_ALLREDUCE;
    else if (!strcmp(val, "reducescatter")) c->layout_dp_kind = PT_SIM_REDUCESCATTER;
    else return bad(err, opt, val, "allreduce or reducescatter");
  } else if (!strcmp(opt, "ep")) {
    if (to_int(val, 1, PT_SIM_ALLTOALL_MAX_RANKS, &c->layout_ep)) return bad(err, opt, val, "an integer 1..256");
  }
  else if (!strcmp(opt, "nodes")) {
    if (to_int(val, 1, 128, &c->nodes)) return bad(err, opt, val, "an integer 1..128");
  } else if (!strcmp(opt, "ranks-per-node")) {
    if (to_int(val, 1, 64, &c->ranks_per_node)) return bad(err, opt, val, "an integer 1..64");
  } else if (!strcmp(opt, "ranks-per-process")) {
    if (to_int(val, 1, 64, &c->ranks_per_process)) return bad(err, opt, val, "an integer 1..64");
  } else if (!strcmp(opt, "channels")) {
    if (to_int(val, 1, 64, &c->channels)) return bad(err, opt, val, "an integer 1..64");
  } else if (!strcmp(opt, "ops")) {
    if (parse_ops(c, val)) return bad(err, opt, val, "KIND:SIZE,… with KIND allreduce, reducescatter, allgather, sendrecv, alltoall or pipeline, SIZE 1..4G (e.g. 64M)");
  } else if (!strcmp(opt, "iters")) {
    if (to_int(val, 1, 1000000, &c->iters)) return bad(err, opt, val, "an integer 1..1000000");
  } else if (!strcmp(opt, "proto")) {
    if (!strcasecmp(val, "LL")) c->proto = PT_SIM_PROTO_LL;
    else if (!strcasecmp(val, "LL128")) c->proto = PT_SIM_PROTO_LL128;
    else if (!strcasecmp(val, "SIMPLE")) c->proto = PT_SIM_PROTO_SIMPLE;
    else return bad(err, opt, val, "LL, LL128 or SIMPLE");
  } else if (!strcmp(opt, "seed")) {
    char* end;
    errno = 0;
    unsigned long long s = strtoull(val, &end, 0);
    if (errno || end == val || *end || val[0] == '-') return bad(err, opt, val, "a non-negative integer");
    c->seed = s;
  } else if (!strcmp(opt, "jitter")) {
    if (to_int(val, 0, 1000, &c->jitter)) return bad(err, opt, val, "an integer 0..1000");
  } else if (!strcmp(opt, "noise")) {
    c->noise = 1;
  } else if (!strcmp(opt, "noise-deschedule") || !strcmp(opt, "noise-busy-node")) {
    const int busy = !strcmp(opt, "noise-busy-node");
    char* end;
    errno = 0;
    double a = strtod(val, &end);
    double b = -1;
    if (!errno && *end == ':') b = strtod(end + 1, &end);
    const int ok = !errno && !*end && b >= 0 &&
                   (busy ? a >= 0 && a < 1 << 20 && a == (int)a && b >= 1.0 && b <= 2.0
                         : a >= 0 && a <= 1000 && b > 0 && b <= 1000);
    if (!ok)
      return bad(err, opt, val,
                 busy ? "NODE:FACTOR, FACTOR 1..2 (a busy node's ranks, a little slow)"
                      : "N:MS, N times a second (0..1000) for MS ms (0..1000)");
    if (busy) {
      c->busy_node = (int)a;
      c->busy_factor = b;
    } else {
      c->desched_rate = a;
      c->desched_ms = b;
    }
  } else if (!strcmp(opt, "noise-late-dumps")) {
    if (to_double(val, 0, 10000, &c->late_dumps_ms)) return bad(err, opt, val, "milliseconds 0..10000");
  } else if (!strcmp(opt, "recv-retry")) {
    if (to_double(val, 0, 0.9, &c->recv_retry)) return bad(err, opt, val, "a number 0..0.9");
  } else if (!strcmp(opt, "gpu-batch")) {
    if (to_int(val, 0, 8, &c->gpu_batch)) return bad(err, opt, val, "an integer 0..8");
  } else if (!strcmp(opt, "comm-dump")) {
    if (to_int(val, 0, 100000, &c->comm_dumps)) return bad(err, opt, val, "an integer 0..100000");
  } else if (!strcmp(opt, "hang-polls")) {
    if (to_int(val, 0, 1000000, &c->hang_polls)) return bad(err, opt, val, "an integer 0..1000000");
  } else if (!strcmp(opt, "hold") || !strcmp(opt, "signal-after")) {
    double* slot = !strcmp(opt, "hold") ? &c->hold_s : &c->signal_after_s;
    if (to_seconds(val, slot)) return bad(err, opt, val, "a number of seconds 0..3600");
  } else if (!strcmp(opt, "scenario")) {
    return read_scenario(c, val, out, err, depth);
  } else if (!strcmp(opt, "ras-mask")) {
    char* end;
    const char* colon = strchr(val, ':');
    long mask = colon ? strtol(colon + 1, &end, 0) : -1;
    int at;
    char t[16];
    if (!colon || colon - val >= (long)sizeof t || c->n_ras >= PT_SIM_MAX_RAS)
      return bad(err, opt, val, "T:MASK, at most 8 times");
    memcpy(t, val, (size_t)(colon - val));
    t[colon - val] = 0;
    if (to_int(t, 0, 1000000, &at) || mask < 0 || mask > 0x7fffffff || *end || end == colon + 1)
      return bad(err, opt, val, "T:MASK with T a batch 0..1000000 and MASK 0..0x7fffffff");
    c->ras[c->n_ras].batch = at;
    c->ras[c->n_ras].mask = (int)mask;
    c->n_ras++;
  } else if (!strcmp(opt, "pace")) {
    if (to_int(val, 0, 100000, &c->pace_us)) return bad(err, opt, val, "microseconds 0..100000");
    c->real_time = 1;
  } else if (!strcmp(opt, "real-time")) {
    c->real_time = 1;
  } else if (!strcmp(opt, "poll-us")) {
    if (to_int(val, 1, 100000, &c->poll_us)) return bad(err, opt, val, "emulated microseconds 1..100000");
  } else if (!strcmp(opt, "stall") || !strcmp(opt, "no-recv") || !strcmp(opt, "slow-link") ||
             !strcmp(opt, "slow-gpu") || !strcmp(opt, "slow-host") || !strcmp(opt, "kill") || !strcmp(opt, "pxn") ||
             !strcmp(opt, "leak-ops") || !strcmp(opt, "skip") || !strcmp(opt, "mismatch")) {
    if (c->n_faults >= PT_SIM_MAX_FAULTS) return bad(err, opt, val, "at most 32 faults");
    if (sim_fault_parse(opt, val, &c->faults[c->n_faults], err) != 0) return 2;
    c->n_faults++;
  } else if (!strcmp(opt, "fault-iter")) {
    if (to_int(val, 0, 1000000, &c->fault_iter)) return bad(err, opt, val, "an integer 0..iters-1");
  } else if (!strcmp(opt, "fault-call")) {
    if (to_int(val, 0, PT_SIM_MAX_CALLS - 1, &c->fault_call)) return bad(err, opt, val, "an index into --ops");
  } else if (!strcmp(opt, "fault-p2p-call")) {
    if (to_int(val, 0, 2 * PT_SIM_MAX_MICROBATCHES, &c->fault_p2p_call)) return bad(err, opt, val, "an integer 0..128");
    c->pipe_opts |= 2;
  } else if (!strcmp(opt, "microbatches")) {
    if (to_int(val, 1, PT_SIM_MAX_MICROBATCHES, &c->microbatches)) return bad(err, opt, val, "an integer 1..64");
    c->pipe_opts |= 1;
  } else if (!strcmp(opt, "dump-dir")) c->dump_dir = val;
  else if (!strcmp(opt, "truth-file")) c->truth_file = val;
  else if (!strcmp(opt, "truth-json")) c->truth_json = val;
  else {
    fprintf(err, "proxytrace sim: unknown option '--%s' (see proxytrace sim --help)\n", opt);
    return 2;
  }
  return 0;
}

/* Options the chosen host gives nothing to do: said, not refused (a
 * scenario file may serve several hosts). */
static void unused_options(const pt_sim_config* c, FILE* err) {
  const sim_host* h = sim_host_of(c->host);
  if (!h) return;
  /* a pipeline: --ops pipeline, or a layout's PP groups */
  const int pipeline = c->layout_tp ? c->layout_pp > 1 : c->n_calls == 1 && c->calls[0].kind == PT_SIM_PIPELINE;
  if (c->pipe_opts && !pipeline)
    fprintf(err, "proxytrace sim: note: --%s does nothing without a pipeline (--ops pipeline:SIZE, or --layout "
            "with PP over 1)\n", c->pipe_opts & 1 ? "microbatches" : "fault-p2p-call");
  if (c->n_ras && !h->ras)
    fprintf(err, "proxytrace sim: note: --ras-mask does nothing under %s: RAS sets the profiler mask "
            "from NCCL 2.31 on\n", h->name);
  if (c->comm_dumps && !h->rccl)
    fprintf(err, "proxytrace sim: note: --comm-dump does nothing under %s: only RCCL has ncclCommDump\n",
            h->name);
  for (int i = 0; i < c->n_faults; i++)
    if (c->faults[i].kind == PT_FAULT_LEAK_OPS && h->old_op_states) {
      fprintf(err,
              "proxytrace sim: note: --leak-ops does nothing under %s: before 2.27 a ProxyOp "
              "starts only when it is progressed, and these never are\n",
              h->name);
      break;
    }
}

/* A timing fault is only seen where a poll lasts: unpaced on real time, a
 * poll lasts microseconds and a step's time is the machine's noise, so no
 * analysis could tell the slow rank. Emulated or paced by default; --pace
 * 0 is refused. */
static int pace_timing_faults(pt_sim_config* c, FILE* err) {
  const char* timing = NULL;
  for (int i = 0; i < c->n_faults && !timing; i++)
    if (sim_fault_timing(c->faults[i].kind)) timing = sim_fault_name(c->faults[i].kind);
  if (timing && c->pace_us == 0) {
    fprintf(err,
            "proxytrace sim: --%s needs polls that last, but --pace is 0: unpaced, a poll lasts microseconds "
            "of the machine's time and step times are its noise, so no analysis can tell the slow rank; "
            "leave --pace out (emulated time, %d us a poll) or give --pace US\n",
            timing, PT_SIM_TIMING_PACE_US);
    return 2;
  }
  if (c->pace_us < 0) c->pace_us = c->poll_us > 0 ? c->poll_us : timing ? PT_SIM_TIMING_PACE_US : 0;
  /* A job that times steps: no phase is instant, on any rank, so a slow
   * GPU or link has something to make F times as long. */
  c->phase_base = timing || c->noise || c->busy_node >= 0;
  return 0;
}

int pt_sim_parse_args(pt_sim_config* c, int argc, char** argv, FILE* out, FILE* err) {
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "-h")) a = "--help";
    if (strncmp(a, "--", 2) != 0 || !a[2]) {
      fprintf(err, "proxytrace sim: unexpected argument '%s' (see proxytrace sim --help)\n", argv[i]);
      return 2;
    }
    char opt[64];
    const char* eq = strchr(a + 2, '=');
    size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    if (len < sizeof opt) {
      memcpy(opt, a + 2, len);
      opt[len] = 0;
    }
    if (len >= sizeof opt || !is_option(opt)) {
      fprintf(err, "proxytrace sim: unknown option '%.*s' (see proxytrace sim --help)\n", (int)(len + 2), a);
      return 2;
    }
    const char* val = NULL;
    if (is_flag(opt)) {
      if (eq) {
        fprintf(err, "proxytrace sim: --%s takes no value\n", opt);
        return 2;
      }
    } else if (eq) {
      val = eq + 1;
    } else if (i + 1 < argc && argv[i + 1][0] == '-' && argv[i + 1][1]) {
      fprintf(err,
              "proxytrace sim: --%s needs a value, but the next argument '%s' is an option (write "
              "--%s=%s if that is really the value)\n",
              opt, argv[i + 1], opt, argv[i + 1]);
      return 2;
    } else if (i + 1 < argc) {
      val = argv[++i];
    } else {
      fprintf(err, "proxytrace sim: --%s needs a value (see proxytrace sim --help)\n", opt);
      return 2;
    }
    int rc = apply(c, opt, val, out, err, 0);
    if (rc) return rc;
  }
  if (c->fault_iter >= c->iters) {
    fprintf(err, "proxytrace sim: --fault-iter %d, but the job has iterations 0..%d\n", c->fault_iter, c->iters - 1);
    return 2;
  }
  if (c->fault_call >= c->n_calls) {
    fprintf(err, "proxytrace sim: --fault-call %d, but --ops has calls 0..%d\n", c->fault_call, c->n_calls - 1);
    return 2;
  }
  for (int i = 0; i < c->n_calls && !c->layout_tp; i++)
    if (c->calls[i].kind == PT_SIM_PIPELINE && (c->n_calls > 1 || c->ranks_per_node != 1 || c->nodes < 2)) {
      fprintf(err, "proxytrace sim: --ops pipeline is a pipeline-parallel communicator's whole step: the only "
                   "call, one stage a node (--ranks-per-node 1, --nodes 2 or more, one per stage)\n");
      return 2;
    }
  if (c->ranks_per_node % c->ranks_per_process) {
    fprintf(err, "proxytrace sim: --ranks-per-process %d must divide --ranks-per-node %d (a process drives GPUs of one node)\n",
            c->ranks_per_process, c->ranks_per_node);
    return 2;
  }
  /* under --layout the faults name ranks of the communicator they strike:
   * checked against its shape there (layout.c) */
  if (!c->layout_tp && sim_faults_check(c, err) != 0) return 2;
  if (c->layout_dp_kind != PT_SIM_ALLREDUCE && !c->layout_tp) {
    fprintf(err, "proxytrace sim: --dp-op needs --layout (it is the DP groups' call)\n");
    return 2;
  }
  if (c->layout_ep > 1 && !c->layout_tp) {
    fprintf(err, "proxytrace sim: --ep needs --layout (expert-parallel groups are made of its data-parallel replicas)\n");
    return 2;
  }
  if (c->layout_ep > 1 && c->layout_dp % c->layout_ep) {
    fprintf(err, "proxytrace sim: --ep %d must divide the layout's DP %d (each EP group is %d of its replicas)\n",
            c->layout_ep, c->layout_dp, c->layout_ep);
    return 2;
  }
  if (pace_timing_faults(c, err) != 0) return 2;
  unused_options(c, err);
  return 0;
}

static void human_size(size_t b, char* buf, size_t len) {
  if (b % (1u << 30) == 0) snprintf(buf, len, "%zu GiB", b >> 30);
  else if (b % (1u << 20) == 0) snprintf(buf, len, "%zu MiB", b >> 20);
  else if (b % (1u << 10) == 0) snprintf(buf, len, "%zu KiB", b >> 10);
  else snprintf(buf, len, "%zu B", b);
}

void pt_sim_summary(const pt_sim_config* c, const pt_sim_result* res, FILE* f) {
  const pt_sim_job* job = &res->job;
  const sim_host* h = sim_host_of(c->host);
  fprintf(f, "proxytrace sim: host %s, plugin \"%s\" (ncclProfiler_v%d%s) from %s\n", h ? h->name : "?",
          res->plugin_name, res->api_version, res->has_dump_hook ? ", dump hook" : "", res->plugin_path);
  fprintf(f, "  job: %d nodes x %d ranks, %d channels, %s; %d iteration%s of", job->nodes, job->rpn,
          job->channels, pt_sim_proto_name(c->proto), c->iters, c->iters == 1 ? "" : "s");
  for (int i = 0; i < c->n_calls; i++) {
    char sz[32];
    human_size(c->calls[i].bytes, sz, sizeof sz);
    fprintf(f, "%s %s %s", i ? "," : "", pt_sim_call_name(c->calls[i].kind), sz);
  }
  fprintf(f, "; seed %llu; activation mask 0x%x", (unsigned long long)c->seed, (unsigned)res->mask);
  if (res->emulated) fprintf(f, "; emulated time");
  if (c->pace_us > 0) fprintf(f, "; %s%d us a poll", res->emulated ? "" : "paced ", c->pace_us);
  if (c->ranks_per_process > 1) fprintf(f, "; %d ranks a process", c->ranks_per_process);
  if (c->noise) fprintf(f, "; noise: heavy-tailed steps");
  if (c->desched_rate > 0)
    fprintf(f, "; noise: proxy threads descheduled %g ms, %g times a second", c->desched_ms, c->desched_rate);
  if (c->busy_node >= 0) fprintf(f, "; noise: node %d busy (%gx)", c->busy_node, c->busy_factor);
  if (c->late_dumps_ms > 0) fprintf(f, "; noise: timers up to %g ms late", c->late_dumps_ms);
  fputc('\n', f);
  for (int i = 0; i < c->n_faults; i++) {
    char d[200];
    sim_fault_line(c, job, &c->faults[i], d, sizeof d);
    fprintf(f, "  fault: %s\n", d);
  }
  if (job->hung_batch >= 0) {
    int b = job->hung_batch, stuck = 0;
    for (size_t i = 0; i < job->n_ops; i++)
      if (job->ops[i].batch == b && job->ops[i].kind == PT_OPK_NET && job->ops[i].why != PT_WHY_NONE) stuck++;
    fprintf(f, "  result: the job hung in call %d (%s, iteration %d); %d network ops stuck; aborted after %d polls",
            b % job->iter_batches % c->n_calls, pt_sim_call_name(c->calls[b % job->iter_batches % c->n_calls].kind),
            b / job->iter_batches, stuck, c->hang_polls);
    if (c->hold_s > 0) fprintf(f, " and %.1f s held", c->hold_s);
    fputc('\n', f);
  } else {
    fprintf(f, "  result: %d calls completed\n", job->n_batches);
  }
  if (c->signal_after_s >= 0) {
    if (res->signals_sent)
      fprintf(f, "  signal: %d sent %.1f s after the start; the host's own handler saw it %ld time%s\n",
              res->signal, c->signal_after_s, res->signals_seen, res->signals_seen == 1 ? "" : "s");
    else
      fprintf(f, "  signal: not sent (the job ended within %.1f s)\n", c->signal_after_s);
  }
  if (res->unwritten_handles)
    fprintf(f, "  strict: startEvent left *eHandle unwritten %ld times (it must always write it, NULL to decline)\n",
            res->unwritten_handles);
  if (res->emulated) {
    fprintf(f, "  callbacks: %llu in %.3f emulated s\n", (unsigned long long)res->callbacks, res->seconds);
  } else {
    double rate = res->seconds > 0 ? (double)res->callbacks / res->seconds : 0;
    fprintf(f, "  callbacks: %llu in %.3f s (%.2f M/s)\n", (unsigned long long)res->callbacks, res->seconds,
            rate / 1e6);
  }
}

/* The ground truth to a file, in one of its forms; 0, or 1 with a message. */
static int write_truth(const char* path, void (*form)(const pt_sim_config*, const pt_sim_job*, FILE*),
                       const pt_sim_config* c, const pt_sim_job* job) {
  FILE* f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "proxytrace sim: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  form(c, job, f);
  fclose(f);
  return 0;
}

/* No --plugin and no NCCL_PROFILER_PLUGIN (environment or --env): the
 * plugin of this build or installation, as `proxytrace demo` uses. */
static void default_plugin(pt_sim_config* c, char* buf, size_t n) {
  if (c->plugin || getenv("NCCL_PROFILER_PLUGIN")) return;
  for (int i = 0; i < c->n_env; i++)
    if (!strncmp(c->env[i], "NCCL_PROFILER_PLUGIN=", 21)) return;
  if (pt_sim_own_plugin(buf, n)) c->plugin = buf;
}

int pt_cmd_sim(int argc, char** argv) {
  pt_sim_config c;
  pt_sim_config_init(&c);
  int rc = pt_sim_parse_args(&c, argc, argv, stdout, stderr);
  if (rc) {
    pt_sim_config_release(&c);
    return rc == 1 ? 0 : 2;
  }
  char own[4096];
  default_plugin(&c, own, sizeof own);
  if (c.layout_tp) {
    rc = pt_sim_layout_run(&c, stdout, stderr);
    pt_sim_config_release(&c);
    return rc;
  }
  pt_sim_result res;
  rc = pt_sim_run(&c, &res, stderr);
  if (rc == 0) {
    if (c.print_truth) pt_sim_truth_print(&c, &res.job, stdout);
    if (c.truth_file && write_truth(c.truth_file, pt_sim_truth_print, &c, &res.job)) rc = 1;
    if (c.truth_json && write_truth(c.truth_json, pt_sim_truth_json, &c, &res.job)) rc = 1;
    if (!c.quiet) {
      pt_sim_summary(&c, &res, stdout);
      pt_sim_dump_summary(&c, &res, stdout);
    }
    if (rc == 0 && res.hung) rc = 3;
  }
  pt_sim_result_free(&res);
  pt_sim_config_release(&c);
  return rc;
}
