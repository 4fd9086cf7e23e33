/*
 * watch.c — slow edges followed window by window (watch.h says how).
 *
 * Snapshots are whole sets, kept until a later one is `window` old; marks
 * are few (the edges and culprits ever seen slow), searched linearly.
 */
#include "analyze/watch.h"

#include <string.h>

#include "analyze/internal.h"

void pt_watch_init(pt_watch* w, double window_s) {
  memset(w, 0, sizeof *w);
  w->window_ns = (int64_t)(window_s * 1e9);
}

static int64_t latest_ns(const pt_mset* s) {
  int64_t t = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->e[i].time_ns > t) t = s->e[i].time_ns;
  return t;
}

static pt_watch_mark* find(pt_watch* w, const pt_watch_mark* k) {
  for (size_t i = 0; i < w->n_marks; i++) {
    pt_watch_mark* m = &w->marks[i];
    if (m->kind == k->kind && m->comm == k->comm && m->rank == k->rank && m->peer == k->peer &&
        m->channel == k->channel && m->send == k->send && m->side == k->side)
      return m;
  }
  return NULL;
}

/* A mark judged slow in this window (added if new). */
static int seen_slow(pt_watch* w, const pt_watch_mark* k) {
  pt_watch_mark* m = find(w, k);
  if (!m) {
    m = an_grow(&w->mem, (void**)&w->marks, &w->n_marks, &w->cap_marks, sizeof *m);
    if (!m) return -1;
    *m = *k;
    m->slow = m->streak = 0;
  }
  if (!m->slow && !m->in_window) m->base_ns = k->base_ns; /* the median before this change */
  m->in_window = 1;
  if (m->kind != PT_WATCH_CHANGE || !m->slow) m->factor = k->factor; /* a change said: over its base */
  return 0;
}

/* The culprit mark of rank's proxy thread said slow, or NULL. */
static pt_watch_mark* slow_thread(pt_watch* w, uint64_t comm, int rank) {
  for (size_t i = 0; i < w->n_marks; i++) {
    pt_watch_mark* m = &w->marks[i];
    if (m->kind == PT_WATCH_CULPRIT && m->side == PT_MS_HOST && m->slow && m->comm == comm && m->rank == rank)
      return m;
  }
  return NULL;
}

/* A culprit of this window. A rank's proxy thread covers its GPU and its
 * network: while the thread is said slow, the rank named on one side where
 * the other side could not be tested (at the job's end its peers are done
 * and their edges leave the window) is still its thread — one named where
 * the other side was tested and is not slow is that side, and the thread
 * recovers — and a side said before the thread stays said until it
 * recovers. */
static int culprit_seen(pt_watch* w, const pt_ms_culprit* c) {
  pt_watch_mark* thread = slow_thread(w, c->comm, c->rank);
  if (thread && c->side != PT_MS_HOST && c->other_untested) {
    thread->in_window = 1;
    return 0;
  }
  pt_watch_mark k = {.kind = PT_WATCH_CULPRIT, .comm = c->comm, .rank = c->rank, .peer = c->peer,
                     .channel = -1, .send = -1, .side = c->side, .factor = c->factor};
  memcpy(k.host, c->host, sizeof k.host);
  if (seen_slow(w, &k) != 0) return -1;
  for (size_t i = 0; thread && i < w->n_marks; i++) {
    pt_watch_mark* m = &w->marks[i];
    if (m->kind == PT_WATCH_CULPRIT && m->slow && m->comm == c->comm && m->rank == c->rank) m->in_window = 1;
  }
  return 0;
}

/* The same edge side among a verdict's slow edges. */
static int among(const pt_ms_verdict* v, const pt_ms_slow_edge* e) {
  for (size_t i = 0; i < v->n_edges; i++) {
    const pt_ms_slow_edge* x = &v->edges[i];
    if (x->comm == e->comm && x->rank == e->rank && x->peer == e->peer && x->channel == e->channel &&
        x->send == e->send && x->side == e->side)
      return 1;
  }
  return 0;
}

/* A change said slow is held to its median before (its history comes to
 * include its own slow steps): in the window while its median is still
 * PT_MS_MIN_FACTOR times that; too few steps in the window change nothing. */
static void still_changed(pt_watch_mark* m, const pt_mset* win) {
  for (size_t i = 0; i < win->n; i++) {
    const pt_ms_edge* e = &win->e[i];
    if (e->comm != m->comm || e->rank != m->rank || e->peer != m->peer || e->channel != m->channel ||
        e->send != m->send)
      continue;
    if (e->count[m->side] < PT_MS_MIN_SAMPLES) {
      m->in_window = m->slow;
      return;
    }
    m->factor = m->base_ns ? pt_ms_median_ns(win, e, m->side) / (double)m->base_ns : 0;
    m->in_window = m->factor >= PT_MS_MIN_FACTOR;
    return;
  }
  m->in_window = m->slow; /* not in the window: nothing new */
}

/* After a judgement: each mark's streak, and what is now said. */
static void settle(pt_watch* w, int64_t now, pt_watch_fn fn, void* arg) {
  for (size_t i = 0; i < w->n_marks; i++) {
    pt_watch_mark* m = &w->marks[i];
    if (m->in_window == m->slow) {
      m->streak = 0;
      continue;
    }
    if (m->streak++ == 0) m->first_ns = now;
    /* the first judgement covers the whole run so far: it needs no second
     * (a change is judged against a history, never at the first read) */
    if (m->streak < PT_WATCH_CONFIRM && (w->judgements > 1 || m->kind == PT_WATCH_CHANGE)) continue;
    m->slow = m->in_window;
    m->streak = 0;
    if (m->slow) m->since_ns = m->first_ns;
    if (fn) fn(arg, m->slow ? PT_WATCH_SLOW : PT_WATCH_RECOVERED, m, now);
  }
}

int pt_watch_update(pt_watch* w, const pt_mset* now, pt_watch_fn fn, void* arg) {
  const int64_t t = latest_ns(now);
  if (!now->n || (w->n_snaps && t <= w->last_ns)) return 0;
  /* The window's start: the latest snapshot `window` before t, else the
   * oldest kept; none at the first read (everything so far). */
  size_t base = 0;
  while (base + 1 < w->n_snaps && w->snap_ns[base + 1] <= t - w->window_ns) base++;
  pt_mset win;
  if (pt_mset_since(now, w->n_snaps ? &w->snap[base] : NULL, &win) != 0) return -1;
  pt_ms_verdict_free(&w->last);
  pt_ms_verdict_free(&w->change);
  int rc = pt_mset_judge(&win, w->n_snaps ? PT_WATCH_ALPHA : AN_SLOW_ALPHA, PT_MS_MIN_FACTOR, &w->last);
  /* against each edge's own history: the steps before the window, once
   * they span a window of the watch at least (a job's first seconds are
   * not yet its habit: 3 of 100 healthy noisy jobs said a change 1.12x
   * a few seconds in, against a history of one second) */
  if (!rc && w->n_snaps && w->snap_ns[base] - w->first_ns >= w->window_ns)
    rc = pt_mset_changed(&win, &w->snap[base], PT_WATCH_ALPHA, PT_MS_MIN_FACTOR, &w->change);
  if (rc != 0) {
    pt_mset_free(&win);
    return -1;
  }
  /* Keep this snapshot; drop those before the window's start. */
  for (size_t k = 0; k < base; k++) pt_mset_free(&w->snap[k]);
  memmove(w->snap, w->snap + base, (w->n_snaps - base) * sizeof *w->snap);
  memmove(w->snap_ns, w->snap_ns + base, (w->n_snaps - base) * sizeof *w->snap_ns);
  w->n_snaps -= base;
  /* Files rewritten faster than the window needs: the newest kept snapshot
   * is replaced by this one while it is within a slice of the one before
   * it, so that at most PT_WATCH_SLICES + 2 are held, however often the
   * files change (a window starts at most a slice early). */
  if (w->n_snaps >= 2 && w->snap_ns[w->n_snaps - 1] - w->snap_ns[w->n_snaps - 2] < w->window_ns / PT_WATCH_SLICES)
    pt_mset_free(&w->snap[--w->n_snaps]);
  if (w->n_snaps == PT_WATCH_SNAPS) { /* reads faster than the window needs: thin the middle */
    pt_mset_free(&w->snap[1]);
    memmove(w->snap + 1, w->snap + 2, (w->n_snaps - 2) * sizeof *w->snap);
    memmove(w->snap_ns + 1, w->snap_ns + 2, (w->n_snaps - 2) * sizeof *w->snap_ns);
    w->n_snaps--;
  }
  if (pt_mset_since(now, NULL, &w->snap[w->n_snaps]) != 0) {
    pt_mset_free(&win);
    return -1;
  }
  w->snap_ns[w->n_snaps++] = t;
  if (!w->first_ns) w->first_ns = t;
  w->last_ns = t;
  /* A window that judged nothing says nothing; a judgement that judged
   * nothing (nothing tested, or nothing that could have been found slow)
   * leaves its marks as they were. */
  const int peers = pt_ms_judged(&w->last), history = w->change.tested > 0;
  if (!peers && !history) {
    pt_mset_free(&win);
    return 1;
  }
  w->judgements++;
  for (size_t i = 0; i < w->n_marks; i++) {
    pt_watch_mark* m = &w->marks[i];
    if (m->kind != PT_WATCH_CHANGE) m->in_window = peers ? 0 : m->slow;
    else if (!history) m->in_window = m->slow;
    else if (m->slow) still_changed(m, &win);
    else m->in_window = 0;
  }
  pt_mset_free(&win);
  for (size_t i = 0; i < w->change.n_edges; i++) {
    const pt_ms_slow_edge* e = &w->change.edges[i];
    if (among(&w->last, e)) continue; /* slow among its comparable edges: said there */
    pt_watch_mark k = {.kind = PT_WATCH_CHANGE, .comm = e->comm, .rank = e->rank, .peer = e->peer,
                       .channel = e->channel, .send = e->send, .side = e->side, .factor = e->factor,
                       .base_ns = e->median_ns};
    if (seen_slow(w, &k) != 0) return -1;
  }
  for (size_t i = 0; i < w->last.n_edges; i++) {
    const pt_ms_slow_edge* e = &w->last.edges[i];
    const pt_watch_mark k = {.kind = PT_WATCH_EDGE, .comm = e->comm, .rank = e->rank, .peer = e->peer,
                             .channel = e->channel, .send = e->send, .side = e->side, .factor = e->factor};
    if (seen_slow(w, &k) != 0) return -1;
  }
  for (size_t i = 0; i < w->last.n_culprits; i++)
    if (culprit_seen(w, &w->last.culprits[i]) != 0) return -1;
  settle(w, t, fn, arg);
  return 1;
}

const pt_watch_mark* pt_watch_edge_mark(const pt_watch* w, const pt_ms_edge* e, int side, int kind) {
  for (size_t i = 0; i < w->n_marks; i++) {
    const pt_watch_mark* m = &w->marks[i];
    if (m->kind == kind && m->slow && m->comm == e->comm && m->rank == e->rank && m->peer == e->peer &&
        m->channel == e->channel && m->send == e->send && m->side == side)
      return m;
  }
  return NULL;
}

void pt_watch_free(pt_watch* w) {
  for (size_t k = 0; k < w->n_snaps; k++) pt_mset_free(&w->snap[k]);
  pt_ms_verdict_free(&w->last);
  pt_ms_verdict_free(&w->change);
  an_free(&w->mem, w->marks);
  memset(w, 0, sizeof *w);
}
