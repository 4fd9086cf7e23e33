/*
 * metrics.c — step metrics per edge of a communicator (metrics.h says what
 * is measured and how memory is handed over): the recording side, called
 * by trace.c on the proxy thread, the service the dumper thread runs, and
 * the copy an exporter reads.
 *
 * The recording side follows the rules of the hot path: no allocation, no
 * lock, no system call. It keeps, per measured op, the time each step in
 * flight entered its phase (a ring of 8 by step number: NCCL keeps at most
 * NCCL_STEPS raw steps of an op in flight, so step s + 8 is posted only after
 * step s is done), and when a later counter moves past those steps it adds
 * one sample per transfer — per distinct entry time, so the two raw steps of
 * an RCCL slice (both posted by one update) count once — to the histograms
 * of the op's edges. Histogram counts and sums are single-writer atomics
 * (a relaxed load and a store: no locked instruction) that any thread may
 * read.
 */
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "trace/clock.h"
#include "trace/metrics.h"
#include "trace/slab.h"

#define M_LOW_WATER 8 /* free scratch entries below which the next chunk is asked for */

static inline void add(_Atomic uint64_t* a, uint64_t v) {
  atomic_store_explicit(a, atomic_load_explicit(a, RLX) + v, RLX);
}

static void want(pt_metrics* m, uint32_t what) {
  if (!(atomic_load_explicit(&m->want, RLX) & what)) atomic_fetch_or_explicit(&m->want, what, RLX);
}

/* ---- buckets ---- */

_Static_assert(PT_METRIC_TIME_BUCKET_COUNT == PT_METRIC_TIME_BUCKETS, "one bucket count");

int pt_metric_time_bucket(uint64_t ns) { return pt_metric_time_bucket_of(ns); }

uint64_t pt_metric_time_upper_ns(int b) { return pt_metric_time_bound_ns(b); }

int pt_metric_bytes_bucket(uint64_t bytes) {
  if (bytes <= 1) return 0;
  const int i = 64 - __builtin_clzll(bytes - 1);
  return i > 40 ? PT_METRIC_BYTE_BUCKETS - 1 : i;
}

uint64_t pt_metric_bytes_upper(int b) {
  return b >= PT_METRIC_BYTE_BUCKETS - 1 ? UINT64_MAX : (uint64_t)1 << (b < 0 ? 0 : b);
}

uint64_t pt_metric_time_quantile(const uint64_t h[PT_METRIC_TIME_BUCKETS], double q) {
  uint64_t n = 0;
  for (int i = 0; i < PT_METRIC_TIME_BUCKETS; i++) n += h[i];
  if (!n) return 0;
  double want_rank = q * (double)n;
  uint64_t rank = (uint64_t)want_rank;
  if ((double)rank < want_rank || rank == 0) rank++;
  uint64_t cum = 0;
  for (int i = 0; i < PT_METRIC_TIME_BUCKETS - 1; i++) {
    cum += h[i];
    if (cum >= rank) return pt_metric_time_upper_ns(i);
  }
  return pt_metric_time_upper_ns(PT_METRIC_TIME_BUCKETS - 2); /* overflow: its lower bound */
}

size_t pt_metric_edge_bytes(void) { return sizeof(pt_medge); }
size_t pt_metric_op_bytes(void) { return sizeof(pt_mop); }

/* ---- memory: made by the creator and the dumper ---- */

/* Chunk k of the scratch, its entries linked into a list ending in 0. */
static pt_mop* new_chunk(int k) {
  const uint32_t n = PT_M_CHUNK0 << k, first = PT_M_CHUNK0 * ((1u << k) - 1);
  pt_mop* c = calloc(n, sizeof *c);
  if (!c) return NULL;
  for (uint32_t j = 0; j < n; j++) c[j].next_free = (uint16_t)(j + 1 < n ? first + j + 2 : 0);
  return c;
}

static void account(pt_metrics* m, int64_t bytes) {
  atomic_fetch_add_explicit(&m->bytes, (uint64_t)bytes, RLX);
}

static int fill_spares(pt_metrics* m, int upto) {
  for (int i = 0; i < upto; i++) {
    if (atomic_load_explicit(&m->spare[i], memory_order_acquire)) continue;
    pt_medge* e = calloc(1, sizeof *e);
    if (!e) return -1;
    account(m, sizeof *e);
    atomic_store_explicit(&m->spare[i], e, memory_order_release);
  }
  return 0;
}

pt_metrics* pt_metrics_create(int channels) {
  pt_metrics* m = calloc(1, sizeof *m);
  if (!m) return NULL;
  pt_clock_cal cal;
  pt_clock_calibration(&cal);
  m->mult = (uint64_t)(cal.ns_per_tick * 4294967296.0 + 0.5);
  m->channels = channels;
  m->table_cap = PT_M_TABLE0;
  m->table = calloc(m->table_cap, sizeof *m->table);
  pt_mop* c0 = new_chunk(0);
  if (!m->table || !c0) {
    free(m->table);
    free(c0);
    free(m);
    return NULL;
  }
  atomic_store_explicit(&m->chunk[0], c0, RLX);
  m->free_head = 1;
  m->linked = 1;
  m->n_free = PT_M_CHUNK0;
  atomic_store_explicit(&m->table_cap_pub, m->table_cap, RLX);
  account(m, (int64_t)(sizeof *m + m->table_cap * sizeof *m->table + PT_M_CHUNK0 * sizeof(pt_mop)));
  /* Four edges ready: a ring's neighbours on a few channels measure from
   * the first op; more come from the dumper once these are taken. */
  if (fill_spares(m, 4) != 0) {
    pt_metrics_destroy(m);
    return NULL;
  }
  return m;
}

void pt_metrics_destroy(pt_metrics* m) {
  if (!m) return;
  for (pt_medge* e = atomic_load(&m->head); e;) {
    pt_medge* next = e->next;
    free(e);
    e = next;
  }
  for (int i = 0; i < PT_M_SPARES; i++) free(atomic_load(&m->spare[i]));
  for (int k = 0; k < PT_M_CHUNKS; k++) free(atomic_load(&m->chunk[k]));
  free(m->table);
  free(atomic_load(&m->spare_table));
  free(atomic_load(&m->retired_table));
  free(m);
}

int pt_trace_metrics_service(pt_trace* t) {
  pt_metrics* m = t ? t->metrics : NULL;
  if (!m) return 0;
  int rc = 0;
  pt_medge** old = atomic_exchange_explicit(&m->retired_table, NULL, memory_order_acquire);
  if (old) {
    account(m, -(int64_t)(atomic_load_explicit(&m->spare_table_cap, RLX) / 2 * sizeof *old));
    free(old);
  }
  const uint32_t w = atomic_exchange_explicit(&m->want, 0, RLX);
  uint32_t again = 0;
  if (w & PT_M_WANT_SCRATCH) {
    int k = 0;
    while (k < PT_M_CHUNKS && atomic_load_explicit(&m->chunk[k], memory_order_acquire)) k++;
    if (k < PT_M_CHUNKS) {
      pt_mop* c = new_chunk(k);
      if (c) {
        account(m, (int64_t)((PT_M_CHUNK0 << k) * sizeof *c));
        atomic_store_explicit(&m->chunk[k], c, memory_order_release);
      } else {
        again |= PT_M_WANT_SCRATCH;
      }
    }
  }
  if ((w & PT_M_WANT_EDGE) && fill_spares(m, PT_M_SPARES) != 0) again |= PT_M_WANT_EDGE;
  if ((w & PT_M_WANT_TABLE) && !atomic_load_explicit(&m->spare_table, memory_order_acquire)) {
    const uint32_t cap = atomic_load_explicit(&m->table_cap_pub, RLX) * 2;
    pt_medge** tb = cap ? calloc(cap, sizeof *tb) : NULL;
    if (tb) {
      account(m, (int64_t)(cap * sizeof *tb));
      atomic_store_explicit(&m->spare_table_cap, cap, RLX);
      atomic_store_explicit(&m->spare_table, tb, memory_order_release);
    } else {
      again |= PT_M_WANT_TABLE;
    }
  }
  if (again) {
    atomic_fetch_or_explicit(&m->want, again, RLX);
    rc = -1;
  }
  return rc;
}

/* ---- the recording thread ---- */

static inline pt_mop* mop_at(pt_metrics* m, uint32_t idx1) {
  const uint32_t i = idx1 - 1, k = 31u - (uint32_t)__builtin_clz((i >> 5) + 1);
  pt_mop* c = atomic_load_explicit(&m->chunk[k], RLX); /* taken with acquire before */
  return &c[i - PT_M_CHUNK0 * ((1u << k) - 1)];
}

static inline uint64_t to_ns(const pt_metrics* m, uint64_t ticks) {
  return (uint64_t)(((unsigned __int128)ticks * m->mult) >> 32);
}

static inline uint32_t edge_hash(int peer, int ch, int send) {
  uint32_t x = (uint32_t)peer * 0x9E3779B1u ^ (((uint32_t)(ch + 1) << 1) | (uint32_t)send) * 0x85EBCA77u;
  return x ^ (x >> 15);
}

static void table_put(pt_medge** tb, uint32_t cap, pt_medge* e) {
  uint32_t i = edge_hash(e->peer, e->channel, e->is_send) & (cap - 1);
  while (tb[i]) i = (i + 1) & (cap - 1);
  tb[i] = e;
}

/* A bigger table, if the dumper has handed one over and can take the old. */
static void grow_table(pt_metrics* m) {
  pt_medge** tb = atomic_load_explicit(&m->spare_table, memory_order_acquire);
  if (!tb || atomic_load_explicit(&m->retired_table, RLX)) {
    want(m, PT_M_WANT_TABLE);
    return;
  }
  const uint32_t cap = atomic_load_explicit(&m->spare_table_cap, RLX);
  if (cap <= m->table_cap) return;
  for (uint32_t i = 0; i < m->table_cap; i++)
    if (m->table[i]) table_put(tb, cap, m->table[i]);
  atomic_store_explicit(&m->spare_table, NULL, RLX);
  atomic_store_explicit(&m->retired_table, m->table, memory_order_release);
  m->table = tb;
  m->table_cap = cap;
  atomic_store_explicit(&m->table_cap_pub, cap, RLX);
}

static pt_medge* take_spare(pt_metrics* m) {
  pt_medge* got = NULL;
  int left = 0;
  for (int i = 0; i < PT_M_SPARES; i++) {
    pt_medge* e = atomic_load_explicit(&m->spare[i], memory_order_acquire);
    if (!e) continue;
    if (!got) {
      atomic_store_explicit(&m->spare[i], NULL, RLX);
      got = e;
    } else {
      left++;
    }
  }
  if (left < 2) want(m, PT_M_WANT_EDGE);
  return got;
}

/* The edge of (peer, channel, direction), made from a spare if new; NULL
 * when no memory has been handed over yet. */
static pt_medge* edge(pt_metrics* m, int peer, int ch, int send) {
  const uint32_t mask = m->table_cap - 1;
  uint32_t i = edge_hash(peer, ch, send) & mask;
  for (pt_medge* e; (e = m->table[i]); i = (i + 1) & mask)
    if (e->peer == peer && e->channel == ch && e->is_send == send) return e;
  if ((m->n_edges + 1) * 2 > m->table_cap) {
    grow_table(m);
    if ((m->n_edges + 1) * 4 > m->table_cap * 3) return NULL; /* keep probes short */
  }
  pt_medge* e = take_spare(m);
  if (!e) return NULL;
  e->peer = peer;
  e->channel = (int16_t)ch;
  e->is_send = (uint8_t)send;
  e->next = atomic_load_explicit(&m->head, RLX);
  table_put(m->table, m->table_cap, e);
  m->n_edges++;
  atomic_store_explicit(&m->head, e, memory_order_release);
  return e;
}

void pt_metrics_op_begin(pt_metrics* m, pt_op* op, uint64_t now) {
  if (!m->free_head) {
    pt_mop* c = m->linked < PT_M_CHUNKS ? atomic_load_explicit(&m->chunk[m->linked], memory_order_acquire) : NULL;
    if (c) {
      m->free_head = (uint16_t)(PT_M_CHUNK0 * ((1u << m->linked) - 1) + 1);
      m->n_free = PT_M_CHUNK0 << m->linked;
      m->linked++;
    } else {
      want(m, PT_M_WANT_SCRATCH);
      add(&m->unmeasured, 1);
      return;
    }
  }
  const int peer = PT_LOAD(op->rec.peer), ch = PT_LOAD(op->rec.channel);
  const int send = PT_LOAD(op->rec.op_type) == PT_OP_SEND;
  pt_medge* e0 = edge(m, peer, -1, send);
  pt_medge* e1 = e0 && m->channels ? edge(m, peer, ch, send) : NULL;
  if (!e0 || (m->channels && !e1)) {
    add(&m->unmeasured, 1);
    return;
  }
  const uint16_t idx = m->free_head;
  pt_mop* o = mop_at(m, idx);
  m->free_head = o->next_free;
  if (--m->n_free < M_LOW_WATER && m->linked < PT_M_CHUNKS) want(m, PT_M_WANT_SCRATCH);
  o->e[0] = e0;
  o->e[1] = e1;
  memset(o->ta, 0, sizeof o->ta);
  memset(o->tb, 0, sizeof o->tb);
  o->t_head = 0;
  o->posts = 0;
  memset(o->tid, 0, sizeof o->tid);
  o->cum = -1;
  o->pending = -1;
  o->is_send = (uint8_t)send;
  for (int k = 0; k < 2 && o->e[k]; k++) {
    pt_medge* e = o->e[k];
    add(&e->ops, 1);
    const uint32_t n = atomic_load_explicit(&e->in_flight, RLX);
    if (n == 0) atomic_store_explicit(&e->busy_since, now, RLX);
    atomic_store_explicit(&e->in_flight, n + 1, RLX);
  }
  op->mop = idx;
}

void pt_metrics_op_end(pt_metrics* m, pt_op* op, uint64_t now) {
  pt_mop* o = mop_at(m, op->mop);
  for (int k = 0; k < 2 && o->e[k]; k++) {
    pt_medge* e = o->e[k];
    const uint32_t n = atomic_load_explicit(&e->in_flight, RLX);
    if (n == 1) {
      const uint64_t since = atomic_load_explicit(&e->busy_since, RLX);
      if (now > since) add(&e->busy_ticks, now - since);
    }
    atomic_store_explicit(&e->in_flight, n ? n - 1 : 0, RLX);
  }
  o->next_free = m->free_head;
  m->free_head = op->mop;
  m->n_free++;
  op->mop = 0;
}

/* One sample of `which` (PT_METRIC_*), `ticks` long, on the op's edges. */
static inline void sample(const pt_metrics* m, const pt_mop* o, int which, uint64_t ticks) {
  const uint64_t ns = to_ns(m, ticks);
  const int b = pt_metric_time_bucket(ns);
  for (int k = 0; k < 2 && o->e[k]; k++) {
    pt_medge* e = o->e[k];
    add(&e->h[which][b], 1);
    add(&e->sum_ns[which], ns);
    if (which == PT_METRIC_STEP) add(&e->steps, 1);
  }
}

/* A send step's GPU wait starts when it was posted, or when the step
 * before it went to the network, whichever is later. */
static inline uint64_t gpu_start(const pt_mop* o, uint64_t posted) {
  return o->t_head > posted ? o->t_head : posted;
}

/* Step s is measured from ring r (its entry time is set) and is the last
 * of its transfer in [s, end): the next step was posted by another update.
 * The update, not the time, tells transfers apart: a coarse clock (an Arm
 * generic timer of tens of MHz) can stamp two posts alike. */
static inline int first_of_transfer(const pt_mop* o, const uint64_t* r, int64_t s, int64_t end) {
  return r[s & (PT_M_WINDOW - 1)] &&
         (s + 1 == end || o->tid[(s + 1) & (PT_M_WINDOW - 1)] != o->tid[s & (PT_M_WINDOW - 1)]);
}

static void sized(const pt_mop* o, pt_mop* w) {
  if (o->pending < 0) return;
  const uint64_t bytes = (uint64_t)o->pending;
  for (int k = 0; k < 2 && o->e[k]; k++) {
    pt_medge* e = o->e[k];
    add(&e->bytes, bytes);
    add(&e->sized_steps, 1);
    add(&e->hb[pt_metric_bytes_bucket(bytes)], 1);
  }
  w->pending = -1;
}

void pt_metrics_counter(pt_metrics* m, pt_op* op, unsigned kind, int64_t old, int64_t value, uint64_t now) {
  pt_mop* o = mop_at(m, op->mop);
  if (kind == PT_CNT_FIFO_SZ_OR_HEAD_CACHE) { /* RCCL send: the head step's size, -1 until ready */
    if (o->is_send && value >= 0) o->pending = value;
    return;
  }
  if (value <= old || old < 0) return; /* phases only move forward */
  const int64_t lo = value - old > PT_M_WINDOW ? value - PT_M_WINDOW : old;
  uint64_t* ta = o->ta;
  uint64_t* tb = o->tb;
#define R(s) ((s) & (PT_M_WINDOW - 1))
  switch (kind) {
    case PT_CNT_POSTED:
      o->posts++;
      for (int64_t s = lo; s < value; s++) {
        ta[R(s)] = now;
        tb[R(s)] = 0;
        o->tid[R(s)] = o->posts;
      }
      return;
    case PT_CNT_KERNEL_COPY_READY: /* send: the GPU produced the data */
      if (!o->is_send) return;
      for (int64_t s = lo; s < value; s++) {
        if (!ta[R(s)] || tb[R(s)]) continue;
        const uint64_t from = gpu_start(o, ta[R(s)]);
        if (first_of_transfer(o, ta, s, value) && now >= from) sample(m, o, PT_METRIC_GPU, now - from);
        tb[R(s)] = now;
      }
      return;
    case PT_CNT_TRANSMITTED:
      if (o->is_send) { /* isend posted; a host that said nothing of the GPU: ready now */
        for (int64_t s = lo; s < value; s++) {
          if (!ta[R(s)]) continue;
          if (!tb[R(s)]) {
            const uint64_t from = gpu_start(o, ta[R(s)]);
            if (first_of_transfer(o, ta, s, value) && now >= from) sample(m, o, PT_METRIC_GPU, now - from);
            tb[R(s)] = now;
          } else if (first_of_transfer(o, tb, s, value) && now >= tb[R(s)]) {
            for (int k = 0; k < 2 && o->e[k]; k++) add(&o->e[k]->credit_ns, to_ns(m, now - tb[R(s)]));
          }
        }
        sized(o, o);
        o->t_head = now;
      } else { /* recv: handed to the GPU */
        for (int64_t s = lo; s < value; s++) tb[R(s)] = now;
      }
      return;
    case PT_CNT_RECEIVED: /* recv: arrived */
      if (o->is_send) return;
      for (int64_t s = lo; s < value; s++)
        if (first_of_transfer(o, ta, s, value) && now >= ta[R(s)]) sample(m, o, PT_METRIC_NET, now - ta[R(s)]);
      sized(o, o);
      return;
    case PT_CNT_DONE:
      for (int64_t s = lo; s < value; s++) {
        /* send: the network finished it (from data ready); recv: the GPU
         * consumed it (from handed over) */
        if (first_of_transfer(o, tb, s, value) && now >= tb[R(s)])
          sample(m, o, o->is_send ? PT_METRIC_NET : PT_METRIC_GPU, now - tb[R(s)]);
        if (first_of_transfer(o, ta, s, value) && now >= ta[R(s)]) sample(m, o, PT_METRIC_STEP, now - ta[R(s)]);
      }
      for (int64_t s = lo; s < value; s++) ta[R(s)] = tb[R(s)] = 0;
      return;
    default:
      return;
  }
#undef R
}

void pt_metrics_size(pt_metrics* m, pt_op* op, int64_t bytes, int cumulative) {
  pt_mop* o = mop_at(m, op->mop);
  if (bytes < 0) return;
  if (!cumulative) {
    o->pending = bytes;
    return;
  }
  /* NCCL 2.23-2.26 add every transfer to the sub's transSize, which starts
   * where the proxy args' last op left it: the op's first report is only
   * the baseline. */
  if (o->cum >= 0 && bytes > o->cum) o->pending = bytes - o->cum;
  o->cum = bytes;
}

/* ---- readers ---- */

int pt_trace_metrics_on(const pt_trace* t) { return t && t->metrics; }

void pt_metrics_unmeasured_add(pt_metrics* m) { atomic_fetch_add_explicit(&m->unmeasured_lanes, 1, RLX); }

uint64_t pt_trace_metrics_unmeasured(const pt_trace* t) {
  return t && t->metrics ? atomic_load_explicit(&t->metrics->unmeasured, RLX) +
                               atomic_load_explicit(&t->metrics->unmeasured_lanes, RLX)
                         : 0;
}

size_t pt_trace_metrics_bytes(const pt_trace* t) {
  return t && t->metrics ? (size_t)atomic_load_explicit(&t->metrics->bytes, RLX) : 0;
}

size_t pt_trace_metric_edges(const pt_trace* t, pt_metric_edge_fn fn, void* arg) {
  if (!t || !t->metrics) return 0;
  const pt_metrics* m = t->metrics;
  pt_clock_cal cal;
  pt_clock_calibration(&cal);
  pt_metric_edge* v = malloc(sizeof *v);
  if (!v) return 0;
  size_t n = 0;
  for (const pt_medge* e = atomic_load_explicit(&m->head, memory_order_acquire); e; e = e->next, n++) {
    v->peer = e->peer;
    v->channel = e->channel;
    v->is_send = e->is_send;
    v->ops = PT_LOAD(e->ops);
    v->steps = PT_LOAD(e->steps);
    v->sized_steps = PT_LOAD(e->sized_steps);
    v->bytes = PT_LOAD(e->bytes);
    v->in_flight = PT_LOAD(e->in_flight);
    uint64_t busy = PT_LOAD(e->busy_ticks);
    if (v->in_flight) {
      const uint64_t since = PT_LOAD(e->busy_since), now = pt_ticks();
      if (now > since) busy += now - since;
    }
    v->busy_ns = (double)busy * cal.ns_per_tick;
    for (int w = 0; w < PT_METRIC_TIMES; w++) {
      v->sum_ns[w] = PT_LOAD(e->sum_ns[w]);
      for (int b = 0; b < PT_METRIC_TIME_BUCKETS; b++) v->h[w][b] = PT_LOAD(e->h[w][b]);
    }
    v->credit_ns = PT_LOAD(e->credit_ns);
    for (int b = 0; b < PT_METRIC_BYTE_BUCKETS; b++) v->hb[b] = PT_LOAD(e->hb[b]);
    fn(arg, v);
  }
  free(v);
  return n;
}
