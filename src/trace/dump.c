/*
 * dump.c — one consistent read of a trace (the snapshot) and the legacy
 * ProxyTrace dump printed from it (spec/rccl-proxytrace.md §3.8), safe while
 * the proxy thread records. json.c prints the same snapshot as JSON lines.
 *
 * The snapshot puts the records in print order first, then copies them in
 * that order, so that both formats read the copies in memory order (read
 * in key order instead, the copies cost a cache and TLB miss each, about a
 * third of the text's time). The order: each live slot's binary sort key,
 * made from its key fields as they read (a hint: no seqlock), in the byte
 * order of the key strings (order.h) — so "<h:10:0>" precedes "<h:2:0>",
 * as in legacy. The copies: every live record in that order, under its
 * seqlock, into memory kept from the last dump (dumpmem.h); a copy whose
 * key fields are not its hint's (the slot was reused or written meanwhile)
 * is kept, and the order is then made again from the copies. Then the
 * finished ring, its entries placed among the live ones. Where legacy
 * lets a finished record overwrite an active one with the same key (ids
 * restart when an opCount's bucket empties), both are kept, finished
 * records first in completion order: a live op is never hidden. An op
 * that completes while the snapshot is taken can show up twice
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

/* d->ord when the live entries are already in print order (keys of the
 * ring's entries in rk[]): the ring's entries, sorted among themselves in
 * completion order, each placed before the first live entry whose key is
 * not below its own (a binary search over the live copies' keys). */
static void merge_ring(pt_dump* d, const pt_order_key* rk, pt_order_cache* kc) {
  const uint32_t nl = d->n_active, nr = d->n_finished;
  uint32_t r[PT_FINISHED_RING];
  for (uint32_t i = 0; i < nr; i++) { /* insertion sort: stable, at most 32 */
    uint32_t j = i;
    for (; j > 0 && pt_order_key_cmp(&rk[r[j - 1]], &rk[i]) > 0; j--) r[j] = r[j - 1];
    r[j] = i;
  }
  uint32_t a = 0, p = 0;
  for (uint32_t b = 0; b < nr; b++) {
    uint32_t lo = a, hi = nl; /* the first live entry at or above rk[r[b]] */
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      pt_order_key k;
      pt_order_key_make(&k, &d->es[mid].v, kc);
      if (pt_order_key_cmp(&k, &rk[r[b]]) < 0) lo = mid + 1;
      else hi = mid;
    }
    while (a < lo) d->ord[p++] = a++;
    d->ord[p++] = nl + r[b];
  }
  while (a < nl) d->ord[p++] = a++;
}

static double map_size_mb(const pt_trace* t) {
  double bytes = (double)pt_trace_active_ops(t) * sizeof(pt_op) +
                 (double)pt_trace_id_buckets(t) * sizeof(pt_idmap_entry) +
                 (double)pt_trace_ring_finished(t) * sizeof(pt_rec);
  return bytes / 1024.0 / 1024.0;
}

/* Finished records the trace's ring holds: of every lane, as many as the
 * one ring the dump prints (pt_trace_ring_snapshot). */
uint64_t pt_trace_ring_finished(const pt_trace* t) {
  uint64_t n = 0;
  for (uint32_t m = pt_trace_lanes_ready(t); m; m &= m - 1) {
    const uint64_t head = atomic_load_explicit(&t->lane[__builtin_ctz(m)]->ring_head, memory_order_acquire);
    n += head < PT_FINISHED_RING ? head : PT_FINISHED_RING;
  }
  return n < PT_FINISHED_RING ? n : PT_FINISHED_RING;
}

size_t pt_trace_ring_snapshot(const pt_trace* t, pt_rec_view* out) {
  uint64_t order[PT_FINISHED_RING];
  const uint32_t ready = pt_trace_lanes_ready(t);
  if (!(ready & (ready - 1))) { /* one lane (the rule): its ring as it is */
    const pt_lane* l = t->lane[ready ? __builtin_ctz(ready) : 0];
    return ready ? pt_ring_snapshot(l, atomic_load_explicit(&l->ring_head, memory_order_acquire), out, order)
                 : 0;
  }
  /* Several: every lane's ring, merged by completion time (insertion,
   * stable: lanes in index order at equal times), the newest kept. */
  pt_rec_view all[PT_FINISHED_RING * 2];
  size_t n = 0;
  for (uint32_t m = ready; m; m &= m - 1) {
    const pt_lane* l = t->lane[__builtin_ctz(m)];
    pt_rec_view lane[PT_FINISHED_RING];
    const size_t k = pt_ring_snapshot(l, atomic_load_explicit(&l->ring_head, memory_order_acquire), lane, order);
    for (size_t i = 0; i < k; i++) {
      size_t j = n++;
      for (; j > 0 && all[j - 1].t_last > lane[i].t_last; j--) all[j] = all[j - 1];
      all[j] = lane[i];
      if (n == PT_FINISHED_RING * 2) { /* keep the newest half */
        memmove(all, all + PT_FINISHED_RING, PT_FINISHED_RING * sizeof *all);
        n = PT_FINISHED_RING;
      }
    }
  }
  const size_t keep = n < PT_FINISHED_RING ? n : PT_FINISHED_RING;
  memcpy(out, all + (n - keep), keep * sizeof *out);
  return keep;
}

size_t pt_ring_snapshot(const pt_lane* t, uint64_t head, pt_rec_view* out, uint64_t* order) {
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

#define SLAB_PREFETCH 8  /* slots read ahead in slot order: the hint pass is bound by memory */
#define COPY_PREFETCH 16 /* slots read ahead in print order: each is a TLB miss as well */

/* What a live slot's sort key was made from. */
typedef struct {
  uint64_t comm_hash;
  int64_t op_count, op_id;
} key_hint;

pt_dump* pt_trace_snapshot(pt_trace* t) {
  pt_dump* d = calloc(1, sizeof *d);
  const uint32_t used = pt_trace_slots_used(t); /* acquire: those slots are slab members */
  size_t cap = (size_t)used + PT_FINISHED_RING;
  /* one region (dumpmem.h): the copies, the print order, the live slots
   * and what their keys were made from, the keys and the sort's scratch,
   * each 8-aligned */
  const size_t es_bytes = cap * sizeof *d->es, ord_bytes = (cap * sizeof *d->ord + 7) & ~(size_t)7,
               hint_bytes = cap * sizeof(key_hint), key_bytes = cap * sizeof(pt_order_key);
  char* mem =
      d ? pt_dumpmem_get(es_bytes + 2 * ord_bytes + hint_bytes + key_bytes + pt_order_scratch_bytes(cap)) : NULL;
  if (!mem) {
    free(d);
    return NULL;
  }
  d->mem = mem;
  d->es = (pt_dump_entry*)mem;
  d->ord = (uint32_t*)(mem + es_bytes);
  uint32_t* slot = (uint32_t*)(mem + es_bytes + ord_bytes);
  key_hint* hint = (key_hint*)(mem + es_bytes + 2 * ord_bytes);
  pt_order_key* keys = (pt_order_key*)(mem + es_bytes + 2 * ord_bytes + hint_bytes);
  void* scratch = mem + es_bytes + 2 * ord_bytes + hint_bytes + key_bytes;
  pt_order_cache kc = {0};
  pt_clock_calibration(&d->cal);
  d->map_size_mb = map_size_mb(t);
  /* The order first, from each live slot's key as it reads now (no
   * seqlock: a hint, checked below). */
  uint32_t m = 0;
  for (uint32_t i = 0; i < used; i++) {
    if (i + SLAB_PREFETCH < used) { /* state and the key fields: the slot's first two lines */
      __builtin_prefetch(&t->slab[i + SLAB_PREFETCH]);
      __builtin_prefetch((const char*)&t->slab[i + SLAB_PREFETCH] + 64);
    }
    const pt_op* op = &t->slab[i];
    const uint8_t st = PT_LOAD(op->state);
    if (st != PT_SLOT_ACTIVE && st != PT_SLOT_DETACHED) continue;
    hint[m] = (key_hint){PT_LOAD(op->rec.comm_hash), PT_LOAD(op->rec.op_count), PT_LOAD(op->rec.op_id)};
    pt_order_key_of(&keys[m], hint[m].comm_hash, hint[m].op_count, hint[m].op_id, &kc);
    slot[m] = i;
    d->ord[m] = m;
    m++;
  }
  pt_order_sort(keys, m, d->ord, scratch);
  /* Then the copies, under each record's seqlock, in that order: both
   * formats read them in memory order. A copy whose key is not its hint's
   * (the slot was reused or written meanwhile) is kept all the same, and
   * the entries are then sorted again from the copies' keys. */
  size_t n = 0;
  int in_order = 1;
  for (uint32_t p = 0; p < m; p++) {
    if (p + COPY_PREFETCH < m) {
      const char* ahead = (const char*)&t->slab[slot[d->ord[p + COPY_PREFETCH]]];
      for (size_t l = 0; l < sizeof(pt_op); l += 64) __builtin_prefetch(ahead + l);
    }
    uint8_t st;
    const uint32_t j = d->ord[p];
    d->es[n].mid_write = pt_op_read(&t->slab[slot[j]], &st, &d->es[n].v) == PT_READ_MID_WRITE;
    if (st != PT_SLOT_ACTIVE && st != PT_SLOT_DETACHED) continue; /* completed since: in the ring */
    d->es[n].state = st;
    const pt_rec_view* v = &d->es[n].v;
    if (v->comm_hash != hint[j].comm_hash || v->op_count != hint[j].op_count || v->op_id != hint[j].op_id)
      in_order = 0;
    d->origins |= 1u << (d->es[n].v.origin & 7u);
    n++;
  }
  d->n_active = (uint32_t)n;
  /* The ring after the live copies (see the note at the top). */
  pt_rec_view ring[PT_FINISHED_RING];
  pt_order_key rkeys[PT_FINISHED_RING];
  const size_t nring = pt_trace_ring_snapshot(t, ring);
  for (size_t i = 0; i < nring; i++, n++) {
    d->es[n].v = ring[i];
    d->es[n].mid_write = 0;
    d->es[n].state = PT_SLOT_FINISHED;
    pt_order_key_make(&rkeys[i], &ring[i], &kc);
    d->origins |= 1u << (ring[i].origin & 7u);
  }
  d->n_finished = (uint32_t)nring;
  d->n = n;
  if (in_order) {
    merge_ring(d, rkeys, &kc);
  } else {
    for (size_t i = 0; i < n; i++) pt_order_key_make(&keys[i], &d->es[i].v, &kc);
    order_entries(d, keys, scratch);
  }
  if (t->progress && (d->prog = malloc(sizeof *d->prog)) != NULL) pt_progress_read(t->progress, d->prog);
  pt_trace_drops(t, &d->drops);
  d->notes = pt_trace_notes(t);
  d->trace = t;
  d->nslots = t->nslots;
  d->rank = pt_trace_rank(t);
  d->time_ns = pt_clock_realtime_ns();
  return d;
}

void pt_dump_free(pt_dump* d) {
  if (!d) return;
  pt_dumpmem_put(d->mem);
  free(d->prog);
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
  int len = pt_format_notes(line, sizeof line, d->notes);
  if (len > 0) {
    pt_lines_put(l, line, len);
    lines++;
  }
  len = format_drops(d, line, sizeof line);
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
  return lines + pt_progress_text(d, l); /* after the legacy lines (progress_out.c) */
}

int pt_dump_text(const pt_dump* d, pt_line_fn emit, void* arg) {
  pt_lines l = {.emit = emit, .arg = arg};
  return print_text(d, &l);
}

static void count_only(void* arg, const char* line, int len) {
  (void)arg;
  (void)line;
  (void)len;
}

int pt_dump_text_lines(const pt_dump* d) { return pt_dump_text(d, count_only, NULL); }

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
  int len = pt_format_header(line, sizeof line, map_size_mb(t));
  emit(arg, line, len);
  if ((len = pt_format_notes(line, sizeof line, pt_trace_notes(t))) > 0) emit(arg, line, len);
  len = snprintf(line, sizeof line, "proxytrace: no memory for a dump of %zu records",
                 (size_t)pt_trace_slots_used(t) + PT_FINISHED_RING);
  emit(arg, line, len);
  return -1;
}
