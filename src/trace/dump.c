/*
 * dump.c — one consistent read of a trace (the snapshot) and the legacy
 * ProxyTrace dump printed from it (spec/rccl-proxytrace.md §3.8), safe while
 * the proxy thread records. json.c prints the same snapshot as JSON lines.
 *
 * The snapshot copies every active record (slot by slot, under each
 * record's seqlock) and then the finished ring, into memory kept from the
 * last dump (dumpmem.h), makes each record's binary sort key while its copy
 * is in cache, and sorts them in the byte order of their key strings
 * (order.h) — so "<h:10:0>" precedes "<h:2:0>", as in legacy. Where legacy
 * lets a finished record overwrite an active one with the same key (ids
 * restart when an opCount's bucket empties), both are kept, finished
 * records first in completion order: a live op is never hidden. An op that completes while the snapshot is taken can show up twice
 * (active and finished); it is missing only if 32 more ops completed after
 * it before the ring was copied (it has then left the ring, as it would have
 * for a dump started later). A ring entry is kept only as the completion it
 * stood for when the ring's head was read: an entry the writer rewrote
 * meanwhile, or kept busy past the reader's patience, is left out (see
 * pt_ring_snapshot) — its op, being completed, is still in its live slot.
 * Nor can a preempted writer hide a live record: pt_rec_read gives a copy
 * in any case, kept and marked mid-write, and the dump says which.
 *
 * mapSizeMB counts the memory holding records now: active slots, id buckets
 * and finished-ring entries, each at its C size (pt_op 256 bytes, id entry
 * 24 bytes, ring entry sizeof(pt_rec)), in MiB. Legacy counted its C++ node
 * sizes and string lengths; the figure is an estimate in both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace/dump.h"
#include "trace/dumpmem.h"
#include "trace/order.h"
#include "trace/slab.h"

/* d->ord: the entries in print order (order.h) from their keys k[]:
 * finished records first in completion order among equal keys, then live
 * ones in slot order. */
static void order_entries(pt_dump* d, const pt_order_key* k, void* scratch) {
  size_t p = 0;
  for (uint32_t i = d->n_active; i < d->n; i++) d->ord[p++] = i;
  for (uint32_t i = 0; i < d->n_active; i++) d->ord[p++] = i;
  pt_order_sort(k, d->n, d->ord, scratch);
}

static double map_size_mb(const pt_trace* t, uint64_t finished) {
  double bytes = (double)PT_LOAD(t->n_active) * sizeof(pt_op) +
                 (double)PT_LOAD(t->n_buckets) * sizeof(pt_idmap_entry) +
                 (double)finished * sizeof(pt_rec);
  return bytes / 1024.0 / 1024.0;
}

static uint64_t finished_in_ring(const pt_trace* t, uint64_t* head) {
  *head = atomic_load_explicit(&t->ring_head, memory_order_acquire);
  return *head < PT_FINISHED_RING ? *head : PT_FINISHED_RING;
}

size_t pt_ring_snapshot(const pt_trace* t, uint64_t head, pt_rec_view* out, uint64_t* order) {
  uint64_t n = head < PT_FINISHED_RING ? head : PT_FINISHED_RING;
  size_t got = 0;
  for (uint64_t s = head - n; s < head; s++) {
    uint32_t version;
    if (pt_rec_read(&t->ring[s % PT_FINISHED_RING], &out[got], NULL, NULL, &version) != 0)
      continue; /* kept busy past the reader's patience: no consistent copy to print */
    /* Slot s % 32 holds completion s after its (s / 32 + 1)-th write, each
     * write adding 2 to its sequence. Reading `head` with acquire made every
     * completion below it visible, so the slot is at that version or later;
     * later means a newer completion overwrote it after `head` was read. */
    if (version != (uint32_t)(2 * (s / PT_FINISHED_RING + 1))) continue;
    order[got++] = s;
  }
  return got;
}

#define SLAB_PREFETCH 8 /* slots read ahead: the copy is bound by memory, not by work */

pt_dump* pt_trace_snapshot(pt_trace* t) {
  pt_dump* d = calloc(1, sizeof *d);
  const uint32_t used = pt_trace_slots_used(t); /* acquire: those slots are slab members */
  size_t cap = (size_t)used + PT_FINISHED_RING;
  /* one region (dumpmem.h): the copies, the print order, the keys and the
   * sort's scratch, each 8-aligned */
  const size_t es_bytes = cap * sizeof *d->es, ord_bytes = (cap * sizeof *d->ord + 7) & ~(size_t)7,
               key_bytes = cap * sizeof(pt_order_key);
  char* mem = d ? pt_dumpmem_get(es_bytes + ord_bytes + key_bytes + pt_order_scratch_bytes(cap)) : NULL;
  if (!mem) {
    free(d);
    return NULL;
  }
  d->mem = mem;
  d->es = (pt_dump_entry*)mem;
  d->ord = (uint32_t*)(mem + es_bytes);
  pt_order_key* keys = (pt_order_key*)(mem + es_bytes + ord_bytes);
  void* scratch = mem + es_bytes + ord_bytes + key_bytes;
  pt_order_cache kc = {0};
  pt_clock_calibration(&d->cal);
  uint64_t head;
  d->map_size_mb = map_size_mb(t, finished_in_ring(t, &head));
  /* Active records first, then the ring (see the note at the top). */
  size_t n = 0;
  for (uint32_t i = 0; i < used; i++) {
    uint8_t st;
    if (i + SLAB_PREFETCH < used)
      for (size_t l = 0; l < sizeof(pt_op); l += 64) __builtin_prefetch((const char*)&t->slab[i + SLAB_PREFETCH] + l);
    if (PT_LOAD(t->slab[i].state) < PT_SLOT_ACTIVE) continue; /* cheap pre-check */
    d->es[n].mid_write = pt_op_read(&t->slab[i], &st, &d->es[n].v) == PT_READ_MID_WRITE;
    if (st != PT_SLOT_ACTIVE && st != PT_SLOT_DETACHED) continue;
    d->es[n].state = st;
    pt_order_key_make(&keys[n], &d->es[n].v, &kc); /* while the copy is in cache */
    d->origins |= 1u << (d->es[n].v.origin & 7u);
    n++;
  }
  d->n_active = (uint32_t)n;
  head = atomic_load_explicit(&t->ring_head, memory_order_acquire);
  pt_rec_view ring[PT_FINISHED_RING];
  uint64_t ring_order[PT_FINISHED_RING];
  const size_t nring = pt_ring_snapshot(t, head, ring, ring_order);
  for (size_t i = 0; i < nring; i++, n++) {
    d->es[n].v = ring[i];
    d->es[n].mid_write = 0;
    d->es[n].state = PT_SLOT_FINISHED;
    pt_order_key_make(&keys[n], &ring[i], &kc);
    d->origins |= 1u << (ring[i].origin & 7u);
  }
  d->n_finished = (uint32_t)nring;
  d->n = n;
  order_entries(d, keys, scratch);
  pt_trace_drops(t, &d->drops);
  d->nslots = t->nslots;
  d->rank = pt_trace_rank(t);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  d->time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  return d;
}

void pt_dump_free(pt_dump* d) {
  if (!d) return;
  pt_dumpmem_put(d->mem);
  free(d);
}

uint32_t pt_dump_active(const pt_dump* d) { return d->n_active; }
uint32_t pt_dump_finished(const pt_dump* d) { return d->n_finished; }
unsigned pt_dump_origins(const pt_dump* d) { return d->origins; }
int pt_dump_rank(const pt_dump* d) { return d->rank; }
int64_t pt_dump_time_ns(const pt_dump* d) { return d->time_ns; }

/* "proxytrace dropped:..." — only when something was dropped or refused, so a
 * clean run prints exactly what legacy prints. */
static int format_drops(const pt_dump* d, char* buf, size_t n) {
  int any = 0;
  for (int i = 0; i < PT_DROP_NUM; i++)
    if (i != PT_DROP_ZERO_STEPS && i != PT_DROP_OPS_RECLAIMED && d->drops.n[i]) any = 1;
  if (!any) return 0;
  int len = snprintf(buf, n, "proxytrace dropped or refused events (max ops %u):", d->nslots);
  for (int i = 0; i < PT_DROP_NUM && len < (int)n; i++)
    len += snprintf(buf + len, n - (size_t)len, " %s:%llu", pt_drop_name((pt_drop_reason)i),
                    (unsigned long long)d->drops.n[i]);
  return len < (int)n ? len : (int)n - 1;
}

/* "proxytrace: N records copied while the proxy thread was inside a write
 * ...: <keys>" — only when a live record's writer stayed inside a write for
 * the reader's whole patience (preempted), so that record's line may mix
 * that one write's before and after. It is printed all the same. */
static int format_mid_write(const pt_dump* d, char* buf, size_t cap) {
  size_t count = 0;
  for (size_t i = 0; i < d->n; i++) count += pt_dump_at(d, i)->mid_write;
  if (!count) return 0;
  int len = snprintf(buf, cap,
                     "proxytrace: %zu record%s copied while the proxy thread was inside a write "
                     "to %s (each value from just before or after it):",
                     count, count == 1 ? "" : "s", count == 1 ? "it" : "them");
  for (size_t i = 0; i < d->n && len < (int)cap; i++)
    if (pt_dump_at(d, i)->mid_write) {
      char key[PT_KEY_MAX];
      pt_format_key(key, sizeof key, &pt_dump_at(d, i)->v);
      len += snprintf(buf + len, cap - (size_t)len, " %s", key);
    }
  return len < (int)cap ? len : (int)cap - 1;
}

static int print_text(const pt_dump* d, pt_lines* l) {
  char line[PT_LINE_MAX];
  int lines = 1;
  pt_lines_put(l, line, pt_format_header(line, sizeof line, d->map_size_mb));
  int len = format_drops(d, line, sizeof line);
  if (len > 0) {
    pt_lines_put(l, line, len);
    lines++;
  }
  len = format_mid_write(d, line, sizeof line);
  if (len > 0) {
    pt_lines_put(l, line, len);
    lines++;
  }
  pt_line_memo memo = {0};
  for (size_t i = 0; i < d->n; i++) {
    pt_dump_prefetch(d, i + PT_DUMP_PREFETCH);
    char* q = pt_lines_begin(l, PT_LINE_MAX);
    pt_lines_end(l, pt_put_record(q, &pt_dump_at(d, i)->v, NULL, d->rank, &d->cal, &memo));
    lines++;
  }
  return lines;
}

int pt_dump_text(const pt_dump* d, pt_line_fn emit, void* arg) {
  pt_lines l = {.emit = emit, .arg = arg};
  return print_text(d, &l);
}

int pt_dump_text_out(const pt_dump* d, pt_out* o) {
  pt_lines l = {.o = o};
  return print_text(d, &l);
}

int pt_trace_dump(pt_trace* t, pt_line_fn emit, void* arg) {
  pt_dump* d = pt_trace_snapshot(t);
  if (d) {
    int lines = pt_dump_text(d, emit, arg);
    pt_dump_free(d);
    return lines;
  }
  char line[PT_LINE_MAX];
  uint64_t head;
  int len = pt_format_header(line, sizeof line, map_size_mb(t, finished_in_ring(t, &head)));
  emit(arg, line, len);
  len = snprintf(line, sizeof line, "proxytrace: no memory for a dump of %zu records",
                 (size_t)pt_trace_slots_used(t) + PT_FINISHED_RING);
  emit(arg, line, len);
  return -1;
}
