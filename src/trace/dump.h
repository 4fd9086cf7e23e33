/*
 * dump.h — the snapshot a dump prints (internal to src/trace): dump.c takes
 * it and prints the legacy text, json.c prints the JSON lines, both from the
 * same copy of the records.
 */
#ifndef PT_TRACE_DUMP_H
#define PT_TRACE_DUMP_H

#include <string.h>

#include "trace/clock.h"
#include "trace/format.h"
#include "trace/progress.h"
#include "trace/record.h"

typedef struct {
  pt_rec_view v;
  uint8_t state; /* PT_SLOT_ACTIVE, PT_SLOT_DETACHED, or PT_SLOT_FINISHED (ring) */
  uint8_t mid_write; /* copied while the proxy thread was inside a write to it (record.h) */
} pt_dump_entry;

struct pt_dump {
  void* mem;           /* dumpmem.h: es and ord live in it */
  pt_dump_entry* es;   /* live records (in print order, as a rule), then the ring */
  uint32_t* ord;       /* es indices, sorted as printed */
  size_t n;
  uint32_t n_active;   /* entries from live slots (active or detached) */
  uint32_t n_finished; /* entries from the finished ring */
  uint32_t nslots;
  unsigned origins;    /* 1 << pt_origin of every entry */
  int rank;
  double map_size_mb;
  pt_drop_stats drops;
  pt_clock_cal cal;
  int64_t time_ns; /* CLOCK_REALTIME when taken */
  unsigned notes;  /* pt_note: the trace's and the process's */
  const pt_trace* trace; /* its userTags, which live as long as it (pt_dump_user_tag) */
  pt_progress_view* prog; /* tasks and kernel channels (progress.h); NULL without */
};


/* The userTag of an entry: 0 untagged, 1 with *tag, -1 tagged but unknown. */
static inline int pt_dump_user_tag(const pt_dump* d, const pt_rec_view* v, uint64_t* tag) {
  return pt_trace_tag_of(d->trace, v->tag_ref, tag);
}

/* The i-th entry as printed. */
static inline const pt_dump_entry* pt_dump_at(const pt_dump* d, size_t i) { return &d->es[d->ord[i]]; }

/* Printing goes through the entries in key order: memory order but for the
 * ring's entries, or any order after the snapshot sorted its copies again
 * (dump.c). Each loop asks for the entry a few ahead, so that its cache
 * lines arrive while the current line is written. */
#define PT_DUMP_PREFETCH 4
static inline void pt_dump_prefetch(const pt_dump* d, size_t i) {
  if (i >= d->n) return;
  const char* p = (const char*)&d->es[d->ord[i]];
  for (size_t off = 0; off < sizeof(pt_dump_entry) + 63; off += 64) __builtin_prefetch(p + off);
}

/* Where a print loop puts its lines: into a caller's buffer (pt_out: the
 * line is written in place, then ends with '\n'), or one at a time to a
 * pt_line_fn (written in `line`, then handed over without its newline). */
#define PT_LINES_ROOM 2048 /* the longest line a loop writes in place, with the slack numfmt.h needs */
typedef struct {
  pt_out* o;
  pt_line_fn emit;
  void* arg;
  char line[PT_LINES_ROOM];
} pt_lines;

/* Where the next line (at most `room` bytes, less than the buffer's cap;
 * PT_LINES_ROOM at most in line mode) goes. */
static inline char* pt_lines_begin(pt_lines* l, size_t room) {
  if (!l->o) return l->line;
  if (l->o->cap - l->o->len < room + 1) {
    l->o->flush(l->o);
    if (l->o->cap - l->o->len < room + 1) l->o->len = 0; /* a flush that kept its bytes: overwritten, not overrun */
  }
  return l->o->buf + l->o->len;
}

/* The line begun ends at `end`. */
static inline void pt_lines_end(pt_lines* l, char* end) {
  if (!l->o) {
    l->emit(l->arg, l->line, (int)(end - l->line));
    return;
  }
  *end++ = '\n';
  l->o->len = (size_t)(end - l->o->buf);
}

/* A line written elsewhere. */
static inline void pt_lines_put(pt_lines* l, const char* s, int len) {
  if (len < 0) return;
  if (!l->o) {
    l->emit(l->arg, s, len);
    return;
  }
  if ((size_t)len >= l->o->cap) len = (int)l->o->cap - 1;
  char* p = pt_lines_begin(l, (size_t)len);
  memcpy(p, s, (size_t)len);
  pt_lines_end(l, p + len);
}

/* The progress lines after the records (progress.c's state, printed by
 * progress_out.c): text, then JSON; each returns the lines it wrote. */
int pt_progress_text(const pt_dump* d, pt_lines* l);
int pt_progress_json(const pt_dump* d, const pt_dump_meta* m, pt_lines* l);

#endif
