/*
 * follow.c — `proxytrace analyze --follow DIR`: the step metrics files of a
 * running job re-read as the plugin rewrites them, one line when an edge or
 * a culprit becomes slow and one when it recovers, with the time it was
 * first seen (src/analyze/watch.h says how a window is judged).
 *
 * Lines, for people and scripts alike:
 *
 *   HH:MM:SS +T.Ts slow      rank 1 send to rank 3: network 1.52x (first seen HH:MM:SS, +T.Ts)
 *   HH:MM:SS +T.Ts culprit   rank 1 (host): network-side 1.47x (first seen …)
 *   HH:MM:SS +T.Ts changed   rank 3 recv from rank 2: network 1.61x its own before (2.1 ms before; first seen …)
 *   HH:MM:SS +T.Ts recovered rank 1 send to rank 3: network (slow since HH:MM:SS, for Ns)
 *   HH:MM:SS +T.Ts waiting   not enough data yet: …   (once, until a window is judged)
 *
 * `changed` is an edge slower than its own history (healthy before, slow
 * since; watch.h): seen where the comparable edges cannot show it, when all
 * of them slowed together. Which end or side caused it is not claimed.
 *
 * Times are the metrics files' own (their export time), +T from the first
 * read; so a line says when the plugin saw it, not when it was read.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/watch.h"
#include "commands.h"
#include "escape/escape.h"

typedef struct {
  FILE* out;
  const pt_watch* w;
} sink;

static void clock_of(int64_t ns, char* b, size_t n) {
  const time_t s = (time_t)(ns / 1000000000);
  struct tm tm;
  if (!localtime_r(&s, &tm) || !strftime(b, n, "%H:%M:%S", &tm)) snprintf(b, n, "?");
}

static void say(void* arg, int what, const pt_watch_mark* m, int64_t now) {
  const sink* k = arg;
  char at[16], first[16], ch[24] = "";
  clock_of(now, at, sizeof at);
  clock_of(what == PT_WATCH_SLOW ? m->since_ns : m->since_ns, first, sizeof first);
  const double rel = (double)(now - k->w->first_ns) / 1e9, since = (double)(m->since_ns - k->w->first_ns) / 1e9;
  const char* side = m->side == PT_MS_GPU ? "GPU" : "network";
  if (m->channel >= 0) snprintf(ch, sizeof ch, ", channel %d", m->channel);
  const char* kind = m->kind == PT_WATCH_CULPRIT ? "culprit" : m->kind == PT_WATCH_CHANGE ? "changed" : "slow";
  fprintf(k->out, "%s +%.1fs %-9s ", at, rel, what == PT_WATCH_SLOW ? kind : "recovered");
  if (m->kind == PT_WATCH_CULPRIT) {
    fprintf(k->out, "rank %d", m->rank);
    if (m->host[0]) fprintf(k->out, " (%s)", PT_TEXT(m->host, sizeof m->host));
    if (m->side == PT_MS_GPU) fprintf(k->out, ": its GPU");
    else if (m->side == PT_MS_HOST) fprintf(k->out, ": its proxy thread (GPU and network waits alike)");
    else if (m->peer >= 0) fprintf(k->out, ": its network link to rank %d (either end)", m->peer);
    else fprintf(k->out, ": its network links");
  } else {
    fprintf(k->out, "rank %d %s rank %d%s: %s", m->rank, m->send ? "send to" : "recv from", m->peer, ch, side);
  }
  if (what == PT_WATCH_SLOW && m->kind == PT_WATCH_CHANGE)
    fprintf(k->out, " %.2fx its own before (%.3f ms before; first seen %s, +%.1fs)\n", m->factor,
            (double)m->base_ns / 1e6, first, since);
  else if (what == PT_WATCH_SLOW)
    fprintf(k->out, " %.2fx (first seen %s, +%.1fs)\n", m->factor, first, since);
  else
    fprintf(k->out, " (slow since %s, for %.0fs)\n", first, (double)(now - m->since_ns) / 1e9);
  fflush(k->out);
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pt_follow(const char* dir, long interval_ms, double window_s, double for_s) {
  pt_watch w;
  pt_watch_init(&w, window_s);
  sink k = {stdout, &w};
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  const int64_t until = for_s > 0 ? mono_ms() + (int64_t)(for_s * 1000) : 0;
  int rc = 0, waiting_said = 0, missing_said = 0;
  while (!stop) {
    pt_mset s = {0};
    const int read_rc = pt_mset_read(&s, dir);
    if (read_rc != 0 && errno == ENOENT) {
      /* started with the job: the plugin makes the folder when it first
       * writes, so it is waited for (said once) */
      if (!missing_said++) {
        printf("proxytrace analyze: --follow %s: not there yet; waiting for the plugin to create it "
               "(PROXYTRACE_METRICS_DIR)\n",
               PT_TEXT(dir, 4096));
        fflush(stdout);
      }
      pt_mset_free(&s);
    } else if (read_rc != 0 && errno != ENOMEM) {
      fprintf(stderr, "proxytrace analyze: --follow %s: cannot read it: %s\n", PT_TEXT(dir, 4096), strerror(errno));
      pt_mset_free(&s);
      rc = 2;
      break;
    }
    const int got = s.mem.failed ? -1 : pt_watch_update(&w, &s, say, &k);
    pt_mset_free(&s);
    if (got < 0) {
      fprintf(stderr, "proxytrace analyze: out of memory\n");
      rc = 2;
      break;
    }
    if (got > 0 && !pt_ms_judged(&w.last) && !waiting_said) {
      char why[256], at[16];
      pt_ms_verdict_words(&w.last, why, sizeof why);
      clock_of(w.last_ns, at, sizeof at);
      printf("%s +%.1fs %-9s %s\n", at, (double)(w.last_ns - w.first_ns) / 1e9, "waiting", why);
      fflush(stdout);
      waiting_said = 1;
    }
    if (until && mono_ms() >= until) break;
    const int64_t left = until ? until - mono_ms() : interval_ms;
    poll(NULL, 0, (int)(left < interval_ms ? (left > 0 ? left : 0) : interval_ms));
  }
  /* The status says how it ended: 1 when something is slow now. */
  int slow = 0;
  for (size_t i = 0; i < w.n_marks; i++) slow |= w.marks[i].slow;
  pt_watch_free(&w);
  return rc ? rc : slow;
}
