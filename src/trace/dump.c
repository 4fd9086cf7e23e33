/*
 * dump.c — the legacy ProxyTrace dump of one trace (spec/rccl-proxytrace.md
 * §3.8), safe while the proxy thread records.
 *
 * It snapshots every active record (slot by slot, under each record's
 * seqlock) and then the finished ring, formats each key string, sorts by key
 * string in byte order — so "<h:10:0>" precedes "<h:2:0>", as in legacy — and
 * emits one line at a time. Where legacy lets a finished record overwrite an
 * active one with the same key (ids restart when an opCount's bucket
 * empties), both are printed, finished records first in completion order:
 * a live op is never hidden. An op that completes while the snapshot is taken
 * can show up twice (active and finished); it is missing only if 32 more ops
 * completed after it before the ring was copied (it has then left the ring,
 * as it would have for a dump started later). A ring entry is printed only
 * as the completion it stood for when the ring's head was read: an entry the
 * writer rewrote meanwhile, or kept busy for every try, is left out (see
 * pt_ring_snapshot).
 *
 * mapSizeMB counts the memory holding records now: active slots, id buckets
 * and finished-ring entries, each at its C size (pt_op 256 bytes, id entry
 * 24 bytes, ring entry sizeof(pt_rec)), in MiB. Legacy counted its C++ node
 * sizes and string lengths; the figure is an estimate in both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/format.h"
#include "trace/slab.h"

typedef struct {
  pt_rec_view v;
  char key[PT_KEY_MAX];
  uint8_t finished;
  uint64_t order;
} entry;

static int cmp_entry(const void* a, const void* b) {
  const entry* x = a;
  const entry* y = b;
  int c = strcmp(x->key, y->key);
  if (c) return c;
  if (x->finished != y->finished) return x->finished ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static double map_size_mb(const pt_trace* t, uint64_t finished) {
  double bytes = (double)PT_LOAD(t->n_active) * sizeof(pt_op) +
                 (double)PT_LOAD(t->n_buckets) * sizeof(pt_idmap_entry) +
                 (double)finished * sizeof(pt_rec);
  return bytes / 1024.0 / 1024.0;
}

/* "proxytrace dropped:..." — only when something was dropped or refused, so a
 * clean run prints exactly what legacy prints. */
static int format_drops(const pt_trace* t, char* buf, size_t n) {
  pt_drop_stats d;
  pt_trace_drops(t, &d);
  int any = 0;
  for (int i = 0; i < PT_DROP_NUM; i++)
    if (i != PT_DROP_ZERO_STEPS && i != PT_DROP_OPS_RECLAIMED && d.n[i]) any = 1;
  if (!any) return 0;
  int len = snprintf(buf, n, "proxytrace dropped or refused events (max ops %u):", t->nslots);
  for (int i = 0; i < PT_DROP_NUM && len < (int)n; i++)
    len += snprintf(buf + len, n - (size_t)len, " %s:%llu", pt_drop_name((pt_drop_reason)i),
                    (unsigned long long)d.n[i]);
  return len < (int)n ? len : (int)n - 1;
}

size_t pt_ring_snapshot(const pt_trace* t, uint64_t head, pt_rec_view* out, uint64_t* order) {
  uint64_t n = head < PT_FINISHED_RING ? head : PT_FINISHED_RING;
  size_t got = 0;
  for (uint64_t s = head - n; s < head; s++) {
    uint32_t version;
    if (pt_rec_read(&t->ring[s % PT_FINISHED_RING], &out[got], NULL, NULL, &version) != 0)
      continue; /* the writer kept it busy: no consistent copy to print */
    /* Slot s % 32 holds completion s after its (s / 32 + 1)-th write, each
     * write adding 2 to its sequence. Reading `head` with acquire made every
     * completion below it visible, so the slot is at that version or later;
     * later means a newer completion overwrote it after `head` was read. */
    if (version != (uint32_t)(2 * (s / PT_FINISHED_RING + 1))) continue;
    order[got++] = s;
  }
  return got;
}

int pt_trace_dump(pt_trace* t, pt_line_fn emit, void* arg) {
  char line[PT_LINE_MAX];
  pt_clock_cal cal;
  pt_clock_calibration(&cal);
  uint64_t head = atomic_load_explicit(&t->ring_head, memory_order_acquire);
  uint64_t nfin = head < PT_FINISHED_RING ? head : PT_FINISHED_RING;
  int lines = 0;

  int len = pt_format_header(line, sizeof line, map_size_mb(t, nfin));
  emit(arg, line, len);
  lines++;

  size_t cap = (size_t)t->nslots + PT_FINISHED_RING;
  entry* es = malloc(cap * sizeof *es);
  if (!es) {
    len = snprintf(line, sizeof line, "proxytrace: no memory for a dump of %zu records", cap);
    emit(arg, line, len);
    return -1;
  }
  size_t n = 0;
  /* Active records first, then the ring (see the note at the top). */
  for (uint32_t i = 0; i < t->nslots; i++) {
    uint8_t st;
    if (PT_LOAD(t->slab[i].state) < PT_SLOT_ACTIVE) continue; /* cheap pre-check */
    if (pt_op_read(&t->slab[i], &st, &es[n].v) != 0) continue;
    if (st != PT_SLOT_ACTIVE && st != PT_SLOT_DETACHED) continue;
    es[n].finished = 0;
    es[n].order = i;
    n++;
  }
  head = atomic_load_explicit(&t->ring_head, memory_order_acquire);
  pt_rec_view ring[PT_FINISHED_RING];
  uint64_t ring_order[PT_FINISHED_RING];
  size_t nring = pt_ring_snapshot(t, head, ring, ring_order);
  for (size_t i = 0; i < nring; i++, n++) {
    es[n].v = ring[i];
    es[n].finished = 1;
    es[n].order = ring_order[i];
  }
  for (size_t i = 0; i < n; i++) pt_format_key(es[i].key, sizeof es[i].key, &es[i].v);
  qsort(es, n, sizeof *es, cmp_entry);

  len = format_drops(t, line, sizeof line);
  if (len > 0) {
    emit(arg, line, len);
    lines++;
  }
  for (size_t i = 0; i < n; i++) {
    len = pt_format_record(line, sizeof line, &es[i].v, es[i].key, pt_trace_rank(t), &cal);
    if (len >= (int)sizeof line) len = (int)sizeof line - 1;
    emit(arg, line, len);
    lines++;
  }
  free(es);
  return lines;
}
