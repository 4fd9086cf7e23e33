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
 * refresh (src/analyze/mset.c, which also names the slow edges as
 * `proxytrace analyze` does): the plugin replaces them by a rename, so a
 * read never sees half a file. Throughput is bytes over the time the edge
 * had operations in flight, as the files state it: between two refreshes
 * once there are two and the edge was busy between them (an edge stuck with
 * ops in flight shows 0), else the file's own figure over the edge's whole
 * life (so an edge whose ops all finished shows what it moved at, not 0).
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
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "analyze/watch.h"
#include "escape/escape.h"
#include "commands.h"

/* One refresh: the edges read, and per edge what the view adds. */
typedef struct {
  pt_mset set;
  double* rate;   /* bytes/s shown */
  double* ratio;  /* step p50 over the median of comparable edges */
  int* side;      /* -1, or PT_MS_GPU / PT_MS_NET when the edge is slow */
  double* factor; /* its factor then */
  unsigned char* changed; /* 1: slower than its own history (the comparable edges see nothing) */
  size_t* order;  /* rows, the slowest first */
  size_t rows;
} view;

static void view_free(view* v) {
  pt_mset_free(&v->set);
  free(v->rate);
  free(v->ratio);
  free(v->side);
  free(v->factor);
  free(v->changed);
  free(v->order);
  memset(v, 0, sizeof *v);
}

static int same_edge(const pt_ms_edge* a, const pt_ms_edge* b) {
  return a->comm == b->comm && a->rank == b->rank && a->peer == b->peer && a->send == b->send &&
         a->channel == b->channel && a->pid == b->pid && !strcmp(a->host, b->host);
}

static const view* g_view;
static int by_slowest(const void* x, const void* y) {
  const size_t i = *(const size_t*)x, j = *(const size_t*)y;
  const double a = g_view->ratio[i], b = g_view->ratio[j];
  if (a != b) return a < b ? 1 : -1;
  const pt_ms_edge* p = &g_view->set.e[i];
  const pt_ms_edge* q = &g_view->set.e[j];
  if (p->p99_ns[PT_MS_STEP] != q->p99_ns[PT_MS_STEP]) return p->p99_ns[PT_MS_STEP] < q->p99_ns[PT_MS_STEP] ? 1 : -1;
  if (p->rank != q->rank) return p->rank - q->rank;
  if (p->peer != q->peer) return p->peer - q->peer;
  return q->send - p->send;
}

/* The slow edges `analyze --follow` names, followed across refreshes. */
static pt_watch g_watch;

/* Reads `dir` into `v`; ranks and marks its rows (the edges the watch
 * says are slow); throughput against `prev` where it has the same edge.
 * -1 when `dir` cannot be read. */
static int load(view* v, const char* dir, int channels, const view* prev) {
  view_free(v);
  if (pt_mset_read(&v->set, dir) != 0) return -1;
  const size_t n = v->set.n;
  v->rate = calloc(n + 1, sizeof *v->rate);
  v->ratio = calloc(n + 1, sizeof *v->ratio);
  v->side = malloc((n + 1) * sizeof *v->side);
  v->factor = calloc(n + 1, sizeof *v->factor);
  v->changed = calloc(n + 1, 1);
  v->order = malloc((n + 1) * sizeof *v->order);
  if (!v->rate || !v->ratio || !v->side || !v->factor || !v->changed || !v->order) return -1;
  if (pt_mset_ratios(&v->set, PT_MS_STEP, v->ratio) != 0) return -1;
  pt_watch_update(&g_watch, &v->set, NULL, NULL); /* out of memory: the marks stay as they were */
  for (size_t i = 0; i < n; i++) {
    const pt_ms_edge* e = &v->set.e[i];
    v->side[i] = -1;
    /* slow among its comparable edges; else slower than its own history */
    static const int kinds[] = {PT_WATCH_EDGE, PT_WATCH_CHANGE};
    for (size_t k = 0; k < 2 && v->side[i] < 0; k++)
      for (int side = PT_MS_GPU; side <= PT_MS_NET; side++) {
        const int kind = kinds[k];
        const pt_watch_mark* m = pt_watch_edge_mark(&g_watch, e, side, kind);
        if (m && m->factor > v->factor[i]) {
          v->side[i] = side;
          v->factor[i] = m->factor;
          v->changed[i] = kind == PT_WATCH_CHANGE;
        }
      }
    v->rate[i] = (double)e->throughput;
    for (size_t j = 0; prev && j < prev->set.n; j++) {
      const pt_ms_edge* p = &prev->set.e[j];
      if (!same_edge(p, e)) continue;
      if (e->busy_ns > p->busy_ns && e->bytes >= p->bytes)
        v->rate[i] = (double)(e->bytes - p->bytes) * 1e9 / (double)(e->busy_ns - p->busy_ns);
      break;
    }
    if (channels || e->channel < 0) v->order[v->rows++] = i;
  }
  g_view = v;
  qsort(v->order, v->rows, sizeof *v->order, by_slowest);
  return 0;
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

static int by_u64(const void* x, const void* y) {
  const uint64_t a = *(const uint64_t*)x, b = *(const uint64_t*)y;
  return (a > b) - (a < b);
}

/* The communicators the edges belong to (each rank of one writes its own
 * file: files are not communicators); 0 without memory to count them. */
static size_t communicators(const pt_mset* s) {
  if (!s->n) return 0;
  uint64_t* c = malloc(s->n * sizeof *c);
  if (!c) return 0;
  for (size_t i = 0; i < s->n; i++) c[i] = s->e[i].comm;
  qsort(c, s->n, sizeof *c, by_u64);
  size_t n = 1;
  for (size_t i = 1; i < s->n; i++) n += c[i] != c[i - 1];
  free(c);
  return n;
}

/* The columns a frame shows, narrowest terminal last: what fits drops
 * STEPS, then CH, then STEP p50, and the host gives way to a row's note. */
enum { COL_CH = 1, COL_STEPS = 2, COL_P50 = 4, COL_HOST = 8 };

/* One line of a frame, cut at `width` columns (0: not cut) — never
 * wrapped, so that each row stays on its line and the header on the screen.
 * The text is ASCII but for what PT_TEXT escaped: cut by bytes. */
static void put_line(FILE* out, const char* line, int width) {
  const size_t n = strlen(line);
  fprintf(out, "%.*s\n", width > 0 && n > (size_t)width ? width : (int)n, line);
}

static void frame(FILE* out, const view* v, const char* dir, int max_rows, int width, int clear) {
  if (clear) fputs("\x1b[H\x1b[2J", out);
  char when[32], line[1024];
  time_t now = time(NULL);
  strftime(when, sizeof when, "%H:%M:%S", localtime(&now));
  const size_t comms = communicators(&v->set);
  snprintf(line, sizeof line, "proxytrace top  %s  %zu communicator%s, %zu edges  %s  (slowest first; q quits)",
           PT_TEXT(dir, 200), comms, comms == 1 ? "" : "s", v->rows, when);
  put_line(out, line, width);
  /* The fixed columns take 76 characters, the note up to 32. */
  int cols = COL_CH | COL_STEPS | COL_P50 | COL_HOST;
  if (width > 0 && width < 110) cols &= ~COL_STEPS;
  if (width > 0 && width < 100) cols &= ~COL_CH;
  if (width > 0 && width < 90) cols &= ~COL_P50;
  if (width > 0 && width < 100) cols &= ~COL_HOST;
  char head[160] = "";
  size_t h = (size_t)snprintf(head, sizeof head, "%-5s %-5s %-4s", "RANK", "PEER", "DIR");
  if (cols & COL_CH) h += (size_t)snprintf(head + h, sizeof head - h, " %-4s", "CH");
  if (cols & COL_STEPS) h += (size_t)snprintf(head + h, sizeof head - h, " %8s", "STEPS");
  h += (size_t)snprintf(head + h, sizeof head - h, " %11s", "THROUGHPUT");
  if (cols & COL_P50) h += (size_t)snprintf(head + h, sizeof head - h, " %9s", "STEP p50");
  snprintf(head + h, sizeof head - h, " %9s %5s %5s  %s", "STEP p99", "GPU%", "NET%",
           cols & COL_HOST ? "HOST / NOTE" : "NOTE");
  put_line(out, head, width);
  if (!v->rows) {
    snprintf(line, sizeof line,
             "(no metrics yet: waiting for them in %s — PROXYTRACE_METRICS_INTERVAL_MS and PROXYTRACE_METRICS_DIR)",
             PT_TEXT(dir, 200));
    put_line(out, line, width);
  }
  for (size_t k = 0; k < v->rows && (max_rows <= 0 || (int)k < max_rows); k++) {
    const size_t i = v->order[k];
    const pt_ms_edge* r = &v->set.e[i];
    char tp[24], p50[16], p99[16], note[96] = "";
    fmt_rate(tp, sizeof tp, v->rate[i], r->bytes);
    fmt_time(p50, sizeof p50, r->p50_ns[PT_MS_STEP]);
    fmt_time(p99, sizeof p99, r->p99_ns[PT_MS_STEP]);
    const double both = (double)r->sum_ns[PT_MS_GPU] + (double)r->sum_ns[PT_MS_NET];
    const int gpu = both > 0 ? (int)(100.0 * (double)r->sum_ns[PT_MS_GPU] / both + 0.5) : 0;
    if (v->side[i] >= 0 && v->changed[i])
      snprintf(note, sizeof note, "<- %s %.1fx its own before", v->side[i] == PT_MS_GPU ? "GPU wait" : "network",
               v->factor[i]);
    else if (v->side[i] >= 0)
      snprintf(note, sizeof note, "<- slow %.1fx, %s-side", v->factor[i], v->side[i] == PT_MS_GPU ? "GPU" : "network");
    size_t n = (size_t)snprintf(line, sizeof line, "%-5d %-5d %-4s", r->rank, r->peer, r->send ? "send" : "recv");
    if (cols & COL_CH) {
      if (r->channel < 0) n += (size_t)snprintf(line + n, sizeof line - n, " %-4s", "all");
      else n += (size_t)snprintf(line + n, sizeof line - n, " %-4d", r->channel);
    }
    if (cols & COL_STEPS) n += (size_t)snprintf(line + n, sizeof line - n, " %8llu", (unsigned long long)r->steps);
    n += (size_t)snprintf(line + n, sizeof line - n, " %11s", tp);
    if (cols & COL_P50) n += (size_t)snprintf(line + n, sizeof line - n, " %9s", p50);
    n += (size_t)snprintf(line + n, sizeof line - n, " %9s %4d%% %4d%%  ", p99, gpu, both > 0 ? 100 - gpu : 0);
    if (cols & COL_HOST)
      snprintf(line + n, sizeof line - n, "%s%s%s", PT_TEXT(r->host, sizeof r->host), note[0] ? "  " : "", note);
    else
      snprintf(line + n, sizeof line - n, "%s", note);
    put_line(out, line, width);
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

/* The terminal's width, a column short of it (a terminal may wrap at the
 * last one); 0 when not a terminal. */
static int term_cols(void) {
  struct winsize w;
  return ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20 ? w.ws_col - 1 : 0;
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
          "one row per rank, peer and direction, the slowest first — throughput (bytes\n"
          "over the time the edge had operations in flight, since the last refresh if\n"
          "it had any then, else over its life), p50 and p99 step time, and the share\n"
          "of step time spent waiting for the GPU and for the network. A row whose GPU wait or network time is slower than the\n"
          "comparable rows' (same communicator, direction and step size) beyond\n"
          "chance is marked slow, GPU-side or network-side, by its median's factor,\n"
          "as `proxytrace analyze` names them (docs/metrics.md: the test); live, over\n"
          "the last 30 s of steps, as `proxytrace analyze --follow` marks them.\n"
          "\n"
          "  --once          print one frame and exit (for scripts)\n"
          "  --interval MS   refresh period (default 1000; 100..3600000)\n"
          "  --rows N        rows shown (default: what the terminal holds; --once: all)\n"
          "  --channels      also one row per channel (PROXYTRACE_METRICS_CHANNELS=1)\n"
          "\n"
          "A live view started before the job waits for DIR to appear (the plugin\n"
          "creates it when it first writes) and for the metrics in it. It fits the\n"
          "terminal's width: no line wraps; a narrow one leaves out STEPS, CH, STEP p50\n"
          "and HOST, in that order.\n"
          "\n"
          "Keys: q quits. Exit status: 0; 1 when DIR cannot be read; 2 for a bad option;\n"
          "3 when DIR is not there or holds no metrics with --once (a live view waits\n"
          "for them), or is a file that is not a metrics file.\n");
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
    } else if ((!strcmp(a, "--interval") || !strcmp(a, "--rows")) && i + 1 == argc) {
      fprintf(stderr, "proxytrace top: %s needs a value (see proxytrace top --help)\n", a);
      return 2;
    } else if (!strcmp(a, "--interval") || !strcmp(a, "--rows")) {
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
      fprintf(stderr, "proxytrace top: unknown option '%s' (see proxytrace top --help)\n", a);
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
  view cur = {0}, prev = {0};
  pt_watch_init(&g_watch, 30);
  int missing = 0; /* DIR not there yet: the plugin makes it when it first writes */
  if (load(&cur, dir, channels, NULL) != 0) {
    missing = errno == ENOENT;
    if (!missing || once) {
      if (missing)
        fprintf(stderr, "proxytrace top: %s is not there (yet): the plugin creates it when it first writes "
                "(PROXYTRACE_METRICS_DIR); a live view waits for it\n", PT_TEXT(dir, 4096));
      else
        fprintf(stderr, "proxytrace top: cannot read %s: %s\n", PT_TEXT(dir, 4096), strerror(errno));
      view_free(&cur);
      pt_watch_free(&g_watch);
      return missing ? 3 : 1;
    }
    view_free(&cur);
  }
  /* Nothing to show: said, with a status a script can test. A directory
   * may still fill in (the live view waits); a file will not. */
  struct stat st;
  const int is_file = !missing && stat(dir, &st) == 0 && !S_ISDIR(st.st_mode);
  if (cur.set.n == 0 && (once || is_file)) {
    if (is_file)
      fprintf(stderr,
              "proxytrace top: %s holds no step metrics: give the directory of the metrics files "
              "(proxytrace-metrics-*.jsonl) or one of them\n",
              dir);
    else
      fprintf(stderr,
              "proxytrace top: no step metrics in %s (yet): the plugin writes them with "
              "PROXYTRACE_METRICS_INTERVAL_MS and PROXYTRACE_METRICS_DIR=%s\n",
              dir, dir);
    view_free(&cur);
    pt_watch_free(&g_watch);
    return 3;
  }
  if (once) {
    frame(stdout, &cur, dir, rows, 0, 0);
    view_free(&cur);
    pt_watch_free(&g_watch);
    return 0;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  raw_mode();
  int keys = 1; /* stdin still open: read keys from it */
  while (!quit) {
    frame(stdout, &cur, dir, rows > 0 ? rows : term_rows(), term_cols(), 1);
    struct pollfd p = {.fd = keys ? STDIN_FILENO : -1, .events = POLLIN};
    if (poll(&p, 1, (int)interval) > 0 && (p.revents & (POLLIN | POLLHUP))) {
      char c;
      const ssize_t got = read(STDIN_FILENO, &c, 1);
      if (got == 1 && (c == 'q' || c == 'Q')) break;
      if (got <= 0) keys = 0; /* no more keys (a closed stdin): refresh on the timer alone */
    }
    view t = prev;
    prev = cur;
    cur = t;
    load(&cur, dir, channels, &prev); /* a directory gone meanwhile shows empty */
  }
  restore();
  fputs("\n", stdout);
  view_free(&cur);
  view_free(&prev);
  pt_watch_free(&g_watch);
  return 0;
}
