/*
 * dump.c — one consistent read of a trace (the snapshot) and the legacy
 * ProxyTrace dump printed from it (spec/rccl-proxytrace.md §3.8), safe while
 * the proxy thread records. json.c prints the same snapshot as JSON lines.
 *
 * The snapshot copies every active record (slot by slot, under each
 * record's seqlock) and then the finished ring, formats each key string and
 * sorts in the key strings' byte order (on a binary key, see "the print
 * order") — so "<h:10:0>" precedes "<h:2:0>", as
 * in legacy. Where legacy lets a finished record overwrite an active one
 * with the same key (ids restart when an opCount's bucket empties), both are
 * kept, finished records first in completion order: a live op is never
 * hidden. An op that completes while the snapshot is taken can show up twice
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
#include "trace/slab.h"

/* ---- the print order ----
 * Legacy sorts by key string in byte order. Comparing strings was 8 % of a
 * dump and qsort's indirect calls most of the rest of the sort, so each key
 * becomes a 240-bit binary key whose unsigned order is the strings' byte
 * order: every field of "<hash:count:id>" is its decimal text, one nibble per
 * character ('-' 1, '0'..'9' 2..11), padded to 20 nibbles with 15. In the
 * string, a field that is a prefix of the other's is followed by ':' or '>',
 * both above every digit and '-'; the pad above them does the same. Equal
 * keys keep the order they are sorted from (a stable merge sort): finished
 * records first in completion order, then live ones in slot order. */
typedef struct {
  uint64_t w[4];
  uint32_t idx;
} sort_key;

/* One field's characters as 20 nibbles (80 bits), pad included. */
__extension__ typedef unsigned __int128 u128;
static const char* field_nibbles(const char* p, u128* out) {
  u128 f = 0;
  unsigned len = 0;
  for (; *p && *p != ':' && *p != '>' && len < 20; p++, len++)
    f = f << 4 | (unsigned)(*p == '-' ? 1 : *p - '0' + 2);
  while (*p && *p != ':' && *p != '>') p++; /* never: a field has at most 20 */
  if (len < 20) f = f << (4 * (20 - len)) | (((u128)1 << (4 * (20 - len))) - 1);
  *out = f;
  return *p ? p + 1 : p;
}

static void make_key(sort_key* k, const char* key, uint32_t idx) {
  u128 a, b, c;
  const char* p = field_nibbles(key + 1, &a); /* past '<' */
  p = field_nibbles(p, &b);
  field_nibbles(p, &c);
  /* 3 x 80 bits, most significant first, into 4 x 64 */
  k->w[0] = (uint64_t)(a >> 16);
  k->w[1] = (uint64_t)(a & 0xffff) << 48 | (uint64_t)(b >> 32);
  k->w[2] = (uint64_t)(b & 0xffffffffu) << 32 | (uint64_t)(c >> 48);
  k->w[3] = (uint64_t)(c & 0xffffffffffffull) << 16;
  k->idx = idx;
}

static inline int key_less(const sort_key* a, const sort_key* b, int lo) {
  for (int i = lo; i < 4; i++)
    if (a->w[i] != b->w[i]) return a->w[i] < b->w[i];
  return 0;
}

/* Stable bottom-up merge sort of k[0..n) (tmp: n more), comparing from word
 * lo (the words before it are equal in every key). Runs of 16 are sorted by
 * insertion first. */
static void sort_keys(sort_key* k, sort_key* tmp, size_t n, int lo) {
  const size_t run = 16;
  for (size_t s = 0; s < n; s += run) {
    size_t e = s + run < n ? s + run : n;
    for (size_t i = s + 1; i < e; i++) {
      sort_key x = k[i];
      size_t j = i;
      while (j > s && key_less(&x, &k[j - 1], lo)) {
        k[j] = k[j - 1];
        j--;
      }
      k[j] = x;
    }
  }
  sort_key* src = k;
  sort_key* dst = tmp;
  for (size_t w = run; w < n; w *= 2) {
    for (size_t s = 0; s < n; s += 2 * w) {
      size_t m = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;
      size_t a = s, b = m, o = s;
      while (a < m && b < e) dst[o++] = key_less(&src[b], &src[a], lo) ? src[b++] : src[a++];
      while (a < m) dst[o++] = src[a++];
      while (b < e) dst[o++] = src[b++];
    }
    sort_key* t = src;
    src = dst;
    dst = t;
  }
  if (src != k) memcpy(k, src, n * sizeof *k);
}

/* d->ord: the entries in print order. -1 when out of memory. */
static int order_entries(pt_dump* d) {
  const size_t n = d->n;
  d->ord = malloc((n ? n : 1) * sizeof *d->ord);
  sort_key* k = malloc((n ? 2 * n : 1) * sizeof *k);
  if (!d->ord || !k) {
    free(k);
    return -1;
  }
  /* ring entries first, so that equal keys keep the tie order */
  size_t m = 0;
  for (size_t i = d->n_active; i < n; i++) make_key(&k[m++], d->es[i].key, (uint32_t)i);
  for (size_t i = 0; i < d->n_active; i++) make_key(&k[m++], d->es[i].key, (uint32_t)i);
  int lo = 0;
  while (lo < 4) {
    size_t i = 1;
    while (i < n && k[i].w[lo] == k[0].w[lo]) i++;
    if (i < n) break;
    lo++;
  }
  sort_keys(k, k + n, n, lo);
  for (size_t i = 0; i < n; i++) d->ord[i] = k[i].idx;
  free(k);
  return 0;
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

pt_dump* pt_trace_snapshot(pt_trace* t) {
  pt_dump* d = calloc(1, sizeof *d);
  const uint32_t used = pt_trace_slots_used(t); /* acquire: those slots are slab members */
  size_t cap = (size_t)used + PT_FINISHED_RING;
  if (d) d->es = malloc(cap * sizeof *d->es);
  if (!d || !d->es) {
    free(d);
    return NULL;
  }
  pt_clock_calibration(&d->cal);
  uint64_t head;
  d->map_size_mb = map_size_mb(t, finished_in_ring(t, &head));
  /* Active records first, then the ring (see the note at the top). */
  size_t n = 0;
  for (uint32_t i = 0; i < used; i++) {
    uint8_t st;
    if (PT_LOAD(t->slab[i].state) < PT_SLOT_ACTIVE) continue; /* cheap pre-check */
    d->es[n].mid_write = pt_op_read(&t->slab[i], &st, &d->es[n].v) == PT_READ_MID_WRITE;
    if (st != PT_SLOT_ACTIVE && st != PT_SLOT_DETACHED) continue;
    d->es[n].state = st;
    d->es[n].order = i;
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
    d->es[n].order = ring_order[i];
  }
  d->n_finished = (uint32_t)nring;
  d->n = n;
  for (size_t i = 0; i < n; i++) {
    pt_format_key(d->es[i].key, sizeof d->es[i].key, &d->es[i].v);
    d->origins |= 1u << (d->es[i].v.origin & 7u);
  }
  if (order_entries(d) != 0) {
    pt_dump_free(d);
    return NULL;
  }
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
  free(d->es);
  free(d->ord);
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
    if (pt_dump_at(d, i)->mid_write) len += snprintf(buf + len, cap - (size_t)len, " %s", pt_dump_at(d, i)->key);
  return len < (int)cap ? len : (int)cap - 1;
}

int pt_dump_text(const pt_dump* d, pt_line_fn emit, void* arg) {
  char line[PT_LINE_MAX];
  int lines = 0;
  int len = pt_format_header(line, sizeof line, d->map_size_mb);
  emit(arg, line, len);
  lines++;
  len = format_drops(d, line, sizeof line);
  if (len > 0) {
    emit(arg, line, len);
    lines++;
  }
  len = format_mid_write(d, line, sizeof line);
  if (len > 0) {
    emit(arg, line, len);
    lines++;
  }
  for (size_t i = 0; i < d->n; i++) {
    const pt_dump_entry* e = pt_dump_at(d, i);
    len = pt_format_record(line, sizeof line, &e->v, e->key, d->rank, &d->cal);
    if (len >= (int)sizeof line) len = (int)sizeof line - 1;
    emit(arg, line, len);
    lines++;
  }
  return lines;
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
