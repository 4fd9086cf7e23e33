/*
 * top.c — `proxytrace top DIR`: a terminal view of a running job's step
 * metrics, from the files the plugin rewrites in PROXYTRACE_METRICS_DIR
 * (docs/metrics.md): one row per rank, peer and direction with its
 * throughput, p50 and p99 step time and how that time splits between
 * waiting for the GPU and the network, the slowest first. Refreshed every
 * --interval; `q` or Ctrl-C leaves. `--once` prints one frame and exits,
 * for scripts.
 *
 * The rows come from the JSON lines files (.jsonl), read whole at every
 * refresh: the plugin replaces them by a rename, so a read never sees half
 * a file. Throughput is the bytes moved between two refreshes over the
 * time between them once there are two, else the file's own figure (bytes
 * over the time the edge had operations in flight).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"

#define SLOW_FACTOR 3.0 /* a row this many times its direction's median step time is marked */

typedef struct {
  char host[64];
  int rank, peer, channel; /* channel -1: every channel */
  int send;
  uint64_t comm;
  uint64_t steps, bytes, busy_ns, tput;
  uint64_t gpu_sum, net_sum, step_p50, step_p99, gpu_p50, net_p50;
  int64_t time_ns;
  double rate; /* bytes/s shown */
  double slow; /* step p50 over the median of its direction */
} row;

typedef struct {
  row* r;
  size_t n, cap;
  size_t files;
} table;

/* ---- reading the plugin's JSON lines ---- */

/* The value after "key": inside the object that starts at `from` (the
 * plugin writes keys once per object, without spaces), or NULL. */
static const char* after_key(const char* from, const char* key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char* p = strstr(from, k);
  return p ? p + strlen(k) : NULL;
}

static uint64_t num(const char* from, const char* key) {
  const char* p = from ? after_key(from, key) : NULL;
  if (!p) return 0;
  if (*p == '"') p++; /* commHash is a string */
  return strtoull(p, NULL, 10);
}

static int inum(const char* from, const char* key, int def) {
  const char* p = from ? after_key(from, key) : NULL;
  if (!p || !strncmp(p, "null", 4)) return def;
  return (int)strtol(p, NULL, 10);
}

static int add_edge(table* t, const char* line, const char* host, uint64_t comm, int64_t time_ns, int channels) {
  int ch = inum(line, "channel", -1);
  if (ch >= 0 && !channels) return 0;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    row* nr = realloc(t->r, cap * sizeof *nr);
    if (!nr) return -1;
    t->r = nr;
    t->cap = cap;
  }
  row* r = &t->r[t->n++];
  memset(r, 0, sizeof *r);
  snprintf(r->host, sizeof r->host, "%s", host);
  r->comm = comm;
  r->time_ns = time_ns;
  r->rank = inum(line, "rank", -1);
  r->peer = inum(line, "peer", -1);
  r->channel = ch;
  const char* d = after_key(line, "dir");
  r->send = d && !strncmp(d, "\"send\"", 6);
  r->steps = num(line, "steps");
  r->bytes = num(line, "bytes");
  r->busy_ns = num(line, "busy_ns");
  r->tput = num(line, "throughput_Bps");
  const char* g = after_key(line, "gpuWait");
  const char* n = after_key(line, "network");
  const char* s = after_key(line, "step");
  r->gpu_sum = num(g, "sum_ns");
  r->gpu_p50 = num(g, "p50_ns");
  r->net_sum = num(n, "sum_ns");
  r->net_p50 = num(n, "p50_ns");
  r->step_p50 = num(s, "p50_ns");
  r->step_p99 = num(s, "p99_ns");
  r->rate = (double)r->tput;
  return 0;
}

static int read_file(table* t, const char* path, int channels) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  char* line = NULL;
  size_t cap = 0;
  char host[64] = "?";
  uint64_t comm = 0;
  int64_t time_ns = 0;
  while (getline(&line, &cap, f) > 0) {
    if (!strncmp(line, "{\"type\":\"metrics\"", 17)) {
      const char* h = after_key(line, "host");
      if (h && *h == '"') {
        size_t k = 0;
        for (h++; *h && *h != '"' && k + 1 < sizeof host; h++) host[k++] = *h;
        host[k] = 0;
      }
      comm = num(line, "commHash");
      time_ns = (int64_t)num(line, "time_ns");
    } else if (!strncmp(line, "{\"type\":\"edge\"", 14)) {
      add_edge(t, line, host, comm, time_ns, channels);
    }
  }
  free(line);
  fclose(f);
  t->files++;
  return 0;
}

static int load(table* t, const char* dir, int channels) {
  t->n = t->files = 0;
  DIR* d = opendir(dir);
  if (!d) return -1;
  struct dirent* e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "proxytrace-metrics-", 19) != 0 || len < 6 || strcmp(e->d_name + len - 6, ".jsonl"))
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    read_file(t, path, channels);
  }
  closedir(d);
  return 0;
}

/* ---- ranking ---- */

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return (x > y) - (x < y);
}

/* Each row's step p50 against the median of its direction's rows. */
static void rank_rows(table* t) {
  uint64_t* v = malloc((t->n + 1) * sizeof *v);
  if (!v) return;
  for (int send = 0; send < 2; send++) {
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
      if (t->r[i].send == send && t->r[i].steps) v[k++] = t->r[i].step_p50;
    if (!k) continue;
    qsort(v, k, sizeof *v, cmp_u64);
    const double med = (double)v[(k - 1) / 2];
    for (size_t i = 0; i < t->n; i++)
      if (t->r[i].send == send) t->r[i].slow = med > 0 ? (double)t->r[i].step_p50 / med : 0;
  }
  free(v);
}

static int by_slowest(const void* a, const void* b) {
  const row* x = a;
  const row* y = b;
  if (x->slow != y->slow) return x->slow < y->slow ? 1 : -1;
  if (x->step_p99 != y->step_p99) return x->step_p99 < y->step_p99 ? 1 : -1;
  if (x->rank != y->rank) return x->rank - y->rank;
  if (x->peer != y->peer) return x->peer - y->peer;
  return x->send - y->send;
}

/* Throughput between two refreshes, where the same edge was seen before. */
static void rates(table* now, const table* before) {
  for (size_t i = 0; i < now->n; i++) {
    row* r = &now->r[i];
    for (size_t j = 0; j < before->n; j++) {
      const row* p = &before->r[j];
      if (p->comm != r->comm || p->rank != r->rank || p->peer != r->peer || p->send != r->send ||
          p->channel != r->channel || strcmp(p->host, r->host))
        continue;
      if (r->time_ns > p->time_ns && r->bytes >= p->bytes)
        r->rate = (double)(r->bytes - p->bytes) * 1e9 / (double)(r->time_ns - p->time_ns);
      break;
    }
  }
}

/* ---- printing ---- */

static void fmt_time(char* b, size_t n, uint64_t ns) {
  if (!ns) snprintf(b, n, "-");
  else if (ns < 1000) snprintf(b, n, "%" PRIu64 "ns", ns);
  else if (ns < 1000000) snprintf(b, n, "%.0fus", ns / 1e3);
  else if (ns < 1000000000) snprintf(b, n, "%.1fms", ns / 1e6);
  else snprintf(b, n, "%.2fs", ns / 1e9);
}

static void fmt_rate(char* b, size_t n, double bps, uint64_t bytes) {
  if (!bytes) snprintf(b, n, "-");
  else if (bps >= 1e9) snprintf(b, n, "%.1f GB/s", bps / 1e9);
  else if (bps >= 1e6) snprintf(b, n, "%.1f MB/s", bps / 1e6);
  else snprintf(b, n, "%.1f kB/s", bps / 1e3);
}

static void frame(FILE* out, const table* t, const char* dir, int max_rows, int clear) {
  if (clear) fputs("\x1b[H\x1b[2J", out);
  char when[32];
  time_t now = time(NULL);
  strftime(when, sizeof when, "%H:%M:%S", localtime(&now));
  fprintf(out, "proxytrace top  %s  %zu communicators, %zu edges  %s  (slowest first; q quits)\n", dir, t->files,
          t->n, when);
  fprintf(out, "%-5s %-5s %-4s %-4s %8s %11s %9s %9s %5s %5s  %s\n", "RANK", "PEER", "DIR", "CH", "STEPS",
          "THROUGHPUT", "STEP p50", "STEP p99", "GPU%", "NET%", "HOST / NOTE");
  if (!t->n) fprintf(out, "(no metrics yet: PROXYTRACE_METRICS_INTERVAL_MS and PROXYTRACE_METRICS_DIR=%s)\n", dir);
  for (size_t i = 0; i < t->n && (max_rows <= 0 || (int)i < max_rows); i++) {
    const row* r = &t->r[i];
    char tp[24], p50[16], p99[16], ch[16], note[96] = "";
    fmt_rate(tp, sizeof tp, r->rate, r->bytes);
    fmt_time(p50, sizeof p50, r->step_p50);
    fmt_time(p99, sizeof p99, r->step_p99);
    if (r->channel < 0) snprintf(ch, sizeof ch, "all");
    else snprintf(ch, sizeof ch, "%d", r->channel);
    const double both = (double)r->gpu_sum + (double)r->net_sum;
    const int gpu = both > 0 ? (int)(100.0 * (double)r->gpu_sum / both + 0.5) : 0;
    if (r->slow >= SLOW_FACTOR)
      snprintf(note, sizeof note, "  <- slow %.1fx, %s-side", r->slow, gpu >= 50 ? "GPU" : "network");
    fprintf(out, "%-5d %-5d %-4s %-4s %8" PRIu64 " %11s %9s %9s %4d%% %4d%%  %s%s\n", r->rank, r->peer,
            r->send ? "send" : "recv", ch, r->steps, tp, p50, p99, gpu, both > 0 ? 100 - gpu : 0, r->host, note);
  }
  fflush(out);
}

/* ---- the terminal ---- */

static struct termios saved;
static int raw_on;
static volatile sig_atomic_t quit;

static void restore(void) {
  if (raw_on) tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  raw_on = 0;
}

static void on_signal(int sig) {
  (void)sig;
  quit = 1;
}

static void raw_mode(void) {
  if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved) != 0) return;
  struct termios t = saved;
  t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
  t.c_cc[VMIN] = 0;
  t.c_cc[VTIME] = 0;
  if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0) {
    raw_on = 1;
    atexit(restore);
  }
}

static int term_rows(void) {
  struct winsize w;
  return ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_row > 3 ? w.ws_row - 3 : 0;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: proxytrace top DIR [--once] [--interval MS] [--rows N] [--channels]\n"
          "\n"
          "A running job's step metrics, from the files the proxytrace plugin writes to\n"
          "DIR (PROXYTRACE_METRICS_DIR; PROXYTRACE_METRICS_INTERVAL_MS turns them on):\n"
          "one row per rank, peer and direction, the slowest first — throughput, p50\n"
          "and p99 step time, and the share of step time spent waiting for the GPU and\n"
          "for the network. A row whose p50 step time is %.0fx the median of its\n"
          "direction is marked slow, GPU-side or network-side.\n"
          "\n"
          "  --once          print one frame and exit (for scripts)\n"
          "  --interval MS   refresh period (default 1000; 100..3600000)\n"
          "  --rows N        rows shown (default: what the terminal holds; --once: all)\n"
          "  --channels      also one row per channel (PROXYTRACE_METRICS_CHANNELS=1)\n"
          "\n"
          "Keys: q quits. Exit status: 0, 1 when DIR cannot be read, 2 for a bad option.\n",
          SLOW_FACTOR);
}

int pt_cmd_top(int argc, char** argv) {
  const char* dir = NULL;
  int once = 0, channels = 0, rows = -1;
  long interval = 1000;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--once")) {
      once = 1;
    } else if (!strcmp(a, "--channels")) {
      channels = 1;
    } else if ((!strcmp(a, "--interval") || !strcmp(a, "--rows")) && i + 1 < argc) {
      char* end;
      errno = 0;
      long v = strtol(argv[++i], &end, 10);
      const int is_rows = !strcmp(a, "--rows");
      if (errno || *end || end == argv[i] || (is_rows ? v < 1 || v > 1000000 : v < 100 || v > 3600000)) {
        fprintf(stderr, "proxytrace top: bad value '%s' for %s: %s\n", argv[i], a,
                is_rows ? "a number of rows 1..1000000" : "milliseconds 100..3600000");
        return 2;
      }
      if (is_rows) rows = (int)v;
      else interval = v;
    } else if (a[0] == '-') {
      fprintf(stderr, "proxytrace top: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (!dir) {
      dir = a;
    } else {
      fprintf(stderr, "proxytrace top: one directory only ('%s' and '%s')\n", dir, a);
      return 2;
    }
  }
  if (!dir) {
    usage(stderr);
    return 2;
  }
  table cur = {0}, prev = {0};
  if (load(&cur, dir, channels) != 0) {
    fprintf(stderr, "proxytrace top: cannot read %s: %s\n", dir, strerror(errno));
    return 1;
  }
  if (once) {
    rank_rows(&cur);
    qsort(cur.r, cur.n, sizeof *cur.r, by_slowest);
    frame(stdout, &cur, dir, rows, 0);
    free(cur.r);
    return 0;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  raw_mode();
  int keys = 1; /* stdin still open: read keys from it */
  while (!quit) {
    rates(&cur, &prev);
    rank_rows(&cur);
    qsort(cur.r, cur.n, sizeof *cur.r, by_slowest);
    frame(stdout, &cur, dir, rows > 0 ? rows : term_rows(), 1);
    struct pollfd p = {.fd = keys ? STDIN_FILENO : -1, .events = POLLIN};
    if (poll(&p, 1, (int)interval) > 0 && (p.revents & (POLLIN | POLLHUP))) {
      char c;
      const ssize_t got = read(STDIN_FILENO, &c, 1);
      if (got == 1 && (c == 'q' || c == 'Q')) break;
      if (got <= 0) keys = 0; /* no more keys (a closed stdin): refresh on the timer alone */
    }
    table t = prev;
    prev = cur;
    cur = t;
    load(&cur, dir, channels);
  }
  restore();
  fputs("\n", stdout);
  free(cur.r);
  free(prev.r);
  return 0;
}
