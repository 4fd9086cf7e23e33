/*
 * watch.h — slow edges followed over time from the step metrics files as
 * the plugin rewrites them: what `proxytrace analyze --follow` prints and
 * what `proxytrace top` marks.
 *
 * Each read of the files is a snapshot; the steps of a window are the
 * latest snapshot's counts less those of the snapshot `window` seconds
 * before it (pt_mset_since), judged by the same test as a whole run
 * (mset.h). So an edge healthy for an hour and slow for the last minute
 * shows in the window as it is now, not diluted by its past (a change
 * point), and an edge that recovered stops showing once its slow steps
 * leave the window. The first read judges everything so far (the job may
 * have been slow before the watch began).
 *
 * Each window is also judged against each edge's own history, the steps
 * before the window (pt_mset_changed), once the watch has seen a window's
 * time before it (a job's first seconds are not its habit yet): an edge that became slow and stays
 * slow is said `changed` once, with its median before; the comparable
 * edges cannot see it when every edge slowed together (a GPU with no
 * network edge of its own holds up a whole ring) or when there are too
 * few of them. A changed edge is held to its median before, not to a
 * history that comes to include its own slow steps: it recovers when its
 * window's median is back under PT_MS_MIN_FACTOR times that median.
 *
 * Windows overlap from one read to the next, so each is judged at
 * PT_WATCH_ALPHA (1 % over 1000 windows) rather than 1 %, and an edge is
 * said slow, or recovered, only after PT_WATCH_CONFIRM judgements in a row
 * say so; "not enough data" changes nothing. The time an edge was first
 * seen slow is the end of the first window of that run of judgements.
 */
#ifndef PT_ANALYZE_WATCH_H
#define PT_ANALYZE_WATCH_H

#include "analyze/mset.h"

#define PT_WATCH_ALPHA (0.01 / 1000)
#define PT_WATCH_CONFIRM 2
#define PT_WATCH_SNAPS 64 /* snapshots kept at most: the window's start is among them */
/* Snapshots are kept a window's slice apart at least (the newest aside):
 * memory is a few snapshots, bounded by the window, not by how often the
 * files are rewritten. */
#define PT_WATCH_SLICES 8

enum { PT_WATCH_EDGE = 0, PT_WATCH_CULPRIT = 1, PT_WATCH_CHANGE = 2 };
enum { PT_WATCH_SLOW = 1, PT_WATCH_RECOVERED = 2 };

/* One edge side (or one culprit) the watch has seen slow. */
typedef struct {
  int kind;                    /* PT_WATCH_EDGE, PT_WATCH_CULPRIT or PT_WATCH_CHANGE */
  uint64_t comm;
  int rank, peer, channel, send; /* a culprit: channel and send -1 */
  int side;                    /* PT_MS_GPU or PT_MS_NET; a culprit's also PT_MS_HOST */
  int slow;                    /* said slow */
  int streak;                  /* judgements in a row against `slow` */
  int in_window;               /* in the latest window's verdict */
  int64_t first_ns;            /* the streak's first window's end */
  int64_t since_ns;            /* said slow: first seen of that run */
  double factor;               /* the latest window's (a change: over base_ns) */
  uint64_t base_ns;            /* a change: the edge's median before, when first seen */
  char host[64];
} pt_watch_mark;

typedef void (*pt_watch_fn)(void* arg, int what, const pt_watch_mark* m, int64_t now_ns);

typedef struct {
  an_mem mem;
  int64_t window_ns;
  pt_mset snap[PT_WATCH_SNAPS];
  int64_t snap_ns[PT_WATCH_SNAPS];
  size_t n_snaps;
  pt_watch_mark* marks;
  size_t n_marks, cap_marks;
  pt_ms_verdict last;          /* the latest window's verdict */
  pt_ms_verdict change;        /* and its edges against their own history */
  int64_t last_ns, first_ns;   /* the latest snapshot's time, the first's */
  size_t judgements;
} pt_watch;

void pt_watch_init(pt_watch* w, double window_s);
/* One read of the files (copied: the caller keeps `now`): judges the
 * window ending at it, and calls fn for each edge and culprit said slow or
 * recovered. A read whose files did not change (same latest time) judges
 * nothing. 1 when it judged, 0 when not, -1 out of memory. */
int pt_watch_update(pt_watch* w, const pt_mset* now, pt_watch_fn fn, void* arg);
/* The mark of an edge side said slow now (kind PT_WATCH_EDGE) or changed
 * (PT_WATCH_CHANGE), or NULL. */
const pt_watch_mark* pt_watch_edge_mark(const pt_watch* w, const pt_ms_edge* e, int side, int kind);
void pt_watch_free(pt_watch* w);

#endif
