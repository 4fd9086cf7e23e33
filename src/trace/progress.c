/*
 * progress.c — the per-communicator progress state (trace.h, "progress"):
 * what the communicator was last asked to do and where its kernel channels
 * are, on every rank, whether or not its data crosses the network.
 *
 * Why this shape. A hang inside a node, or ranks that disagree about the
 * collective they are in, shows in no proxy op: data moving GPU to GPU
 * gets none. The host's task events (Coll, P2p) say what each rank called,
 * and its kernel-channel events (KernelCh) when the GPU took up and
 * finished that work. The last few of each are enough to name the rank
 * behind, the rank that never entered, or the rank that called something
 * else, so the state is a short ring per kind and one slot per channel,
 * allocated with the trace: memory does not grow with the run, and the
 * events allocate nothing, take no lock and are a few stores each.
 *
 * Writers and readers. Each entry is a few 64-bit words under a seqlock
 * (seqlock.h). Task entries are written by the launching thread, which
 * moves the ring's head after the entry (NCCL has one thread at a time
 * launch on a communicator); a dump keeps an entry only as the call its
 * place stands for, and only the consecutive calls after the last one a
 * newer call overwrote meanwhile (a gap would read as a call never made); a
 * channel's slot has one writer, the thread that polls the kernel (the proxy
 * thread; NCCL 2.31+ a profiler thread). A dump copies every entry, each
 * exactly one of its versions, or leaves it out (counted) when a writer
 * kept it busy past the reader's patience.
 *
 * Kernel-channel handles. The host stops a KernelCh event by its handle
 * alone, so the handle names the slot: the state's address (256-aligned)
 * with the channel in its low byte, tagged in the top 12 bits (0xAAB) as the
 * task handles are (trace.h): bit 63 set, so no op or step handle is one,
 * and the trace core hands such handles here only after its own kinds
 * failed (trace.c) — a ProxyStep pays nothing for them.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "trace/clock.h"
#include "trace/progress.h"
#include "trace/record.h"
#include "trace/slab.h"

#define KCH_TAG 0xAABull
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ADDR_BITS 52
#define READ_TRIES 1000

/* calloc'd, aligned by hand: the allocator hands fresh heap memory out
 * zeroed without writing it, so an idle communicator backs only the pages
 * written (the header and tasks, and the channels in use), and the state
 * sits beside the trace's other heap data (a separate mapping costs the
 * launching thread a TLB miss per event). */
pt_progress* pt_progress_create(struct pt_trace* t) {
  void* raw = calloc(1, sizeof(pt_progress) + 255);
  if (!raw) return NULL;
  pt_progress* p = (pt_progress*)(((uintptr_t)raw + 255) & ~(uintptr_t)255);
  if ((uint64_t)(uintptr_t)p >> ADDR_BITS) { /* no room for the tag: never seen on Linux */
    free(raw);
    return NULL;
  }
  p->raw = raw;
  p->trace = t;
  atomic_store_explicit(&p->magic, PT_PROG_MAGIC, memory_order_release);
  return p;
}

void pt_progress_destroy(pt_progress* p) {
  if (!p) return;
  atomic_store_explicit(&p->magic, 0, memory_order_relaxed);
  free(p->raw);
}

static void put_words(pt_seq* seq, _Atomic uint64_t* w, const uint64_t* v, int n) {
  const uint32_t odd = pt_seq_write_begin(seq);
  for (int i = 0; i < n; i++) PT_STORE(w[i], v[i]);
  pt_seq_write_end(seq, odd);
}

/* 0 with a consistent copy in v[] (of version *version), -1 when the
 * writer kept it busy. */
static int get_words(const pt_seq* seq, const _Atomic uint64_t* w, uint64_t* v, int n, uint32_t* version) {
  for (int tries = 0; tries < READ_TRIES; tries++) {
    const uint32_t s1 = pt_seq_read_begin(seq);
    if (s1 & 1u) {
      if (tries > 64) sched_yield();
      continue;
    }
    for (int i = 0; i < n; i++) v[i] = PT_LOAD(w[i]);
    if (pt_seq_read_end(seq, s1)) {
      *version = s1;
      return 0;
    }
  }
  return -1;
}

void pt_progress_task(pt_trace* t, const pt_task_info* ti) {
  pt_progress* p = t ? t->progress : NULL;
  if (!p || !ti) return;
  const int k = ti->is_p2p ? 1 : 0;
  /* The head moves once the entry is written (release): a dump reads only
   * whole entries below it. One writer per communicator: NCCL has one
   * thread at a time launch on a communicator. */
  const uint64_t n = atomic_load_explicit(&p->head[k], memory_order_relaxed);
  pt_prog_task_slot* s = &p->task[k][n % PT_PROG_OPS];
  const uint64_t v[PT_PROG_TASK_WORDS] = {
      (uint64_t)k | (uint64_t)ti->func << 8 | (uint64_t)ti->dtype << 16 | (uint64_t)ti->algo << 24 |
          (uint64_t)ti->proto << 32 | (uint64_t)ti->nchannels << 40,
      (uint32_t)ti->root_or_peer, ti->seq, ti->count, ti->user_tag, pt_ticks()};
  put_words(&s->seq, s->w, v, PT_PROG_TASK_WORDS);
  atomic_store_explicit(&p->head[k], n + 1, memory_order_release);
}

/* The slot a kernel-channel handle names, or NULL (counted as a bad handle
 * by the caller's trace-less count). */
static pt_prog_ch_slot* slot_of(pt_handle h, pt_progress** pp) {
  if (!pt_is_kch_handle(h)) return NULL;
  const uint64_t v = (uint64_t)(uintptr_t)h & ((1ull << ADDR_BITS) - 1);
  pt_progress* p = (pt_progress*)(uintptr_t)(v & ~0xffull);
  const unsigned ch = (unsigned)(v & 0xff);
  if (!p || ch >= PT_PROG_CHANNELS || atomic_load_explicit(&p->magic, memory_order_acquire) != PT_PROG_MAGIC)
    return NULL;
  *pp = p;
  return &p->ch[ch];
}

/* The kind (0 coll, 1 p2p, 2 unknown) and function of a task handle. */
static uint64_t task_of(const void* parent, uint64_t* seq) {
  const uint64_t v = (uint64_t)(uintptr_t)parent;
  if (!pt_is_task_handle(parent)) {
    *seq = 0;
    return 2 | (uint64_t)PT_FUNC_UNKNOWN << 8;
  }
  *seq = v & ((1ull << PT_TASK_SEQ_BITS) - 1);
  return (uint64_t)((v >> 52) - PT_TASK_TAG_COLL) | ((v >> 48) & (PT_FUNC_NUM - 1)) << 8;
}

/* The host clock is read only where the host gives no GPU time (API v3,
 * NCCL 2.26): one read costs more than the rest of the event. */
pt_handle pt_progress_kch_start(pt_trace* t, const void* parent, int channel, uint64_t gpu_ns) {
  pt_progress* p = t ? t->progress : NULL;
  if (!p) return NULL;
  if (UNLIKELY(channel < 0 || channel >= PT_PROG_CHANNELS)) {
    pt_trace_count(t, PT_DROP_BAD_STATE);
    return NULL;
  }
  pt_prog_ch_slot* s = &p->ch[channel];
  uint64_t seq;
  const uint64_t task = task_of(parent, &seq);
  const uint64_t starts = PT_LOAD(s->w[0]) + 1; /* its one writer */
  const uint64_t tick = gpu_ns ? 0 : pt_ticks();
  const uint32_t odd = pt_seq_write_begin(&s->seq);
  PT_STORE(s->w[0], starts);
  PT_STORE(s->w[2], task);
  PT_STORE(s->w[3], seq);
  PT_STORE(s->w[4], tick);
  PT_STORE(s->w[5], gpu_ns);
  pt_seq_write_end(&s->seq, odd);
  return (pt_handle)(uintptr_t)(KCH_TAG << 52 | (uint64_t)(uintptr_t)p | (uint64_t)channel);
}

void pt_progress_kch_gpu_stop(pt_handle h, uint64_t gpu_ns) {
  pt_progress* p;
  pt_prog_ch_slot* s = slot_of(h, &p);
  if (UNLIKELY(!s)) {
    pt_trace_count(NULL, PT_DROP_BAD_HANDLE);
    return;
  }
  const uint32_t odd = pt_seq_write_begin(&s->seq);
  PT_STORE(s->w[9], gpu_ns);
  pt_seq_write_end(&s->seq, odd);
}

void pt_progress_kch_stop(pt_handle h) {
  pt_progress* p;
  pt_prog_ch_slot* s = slot_of(h, &p);
  if (UNLIKELY(!s)) {
    pt_trace_count(NULL, PT_DROP_BAD_HANDLE);
    return;
  }
  const uint64_t stops = PT_LOAD(s->w[1]) + 1, task = PT_LOAD(s->w[2]), seq = PT_LOAD(s->w[3]);
  const uint64_t tick = PT_LOAD(s->w[5]) ? 0 : pt_ticks(); /* as the start: the GPU's times where given */
  const uint32_t odd = pt_seq_write_begin(&s->seq);
  PT_STORE(s->w[1], stops);
  PT_STORE(s->w[6], task);
  PT_STORE(s->w[7], seq);
  PT_STORE(s->w[8], tick);
  pt_seq_write_end(&s->seq, odd);
}

void pt_progress_count(pt_handle h, pt_drop_reason r) {
  pt_progress* p;
  if (slot_of(h, &p)) pt_trace_count(p->trace, r);
  else pt_trace_count(NULL, PT_DROP_BAD_HANDLE);
}

void pt_progress_read(const pt_progress* p, pt_progress_view* out) {
  memset(out, 0, sizeof *out);
  if (!p) return;
  for (int k = 0; k < 2; k++) {
    const uint64_t head = atomic_load_explicit(&p->head[k], memory_order_acquire);
    out->n_tasks[k] = head;
    const uint64_t n = head < PT_PROG_OPS ? head : PT_PROG_OPS;
    for (uint64_t i = head - n; i < head; i++) {
      const pt_prog_task_slot* s = &p->task[k][i % PT_PROG_OPS];
      uint64_t w[PT_PROG_TASK_WORDS];
      uint32_t version;
      /* Entry i is the slot's (i / 8 + 1)-th write, each adding 2 to its
       * sequence. A slot kept busy, or of a later version, is being or was
       * overwritten by a newer task since `head` was read: the writer has
       * passed this reader, so the entries kept so far are older still and
       * go too. What is kept is a run of consecutive calls up to the head
       * read, as the dump says; a gap would read as a call never made. */
      const int busy = get_words(&s->seq, s->w, w, PT_PROG_TASK_WORDS, &version) != 0;
      if (busy || version != (uint32_t)(2 * (i / PT_PROG_OPS + 1))) {
        out->torn += busy;
        out->n_kept[k] = 0;
        continue;
      }
      pt_prog_task_view* t = &out->task[k][out->n_kept[k]++];
      t->info = (pt_task_info){.is_p2p = (uint8_t)(w[0] & 0xff), .func = (uint8_t)(w[0] >> 8),
                               .dtype = (uint8_t)(w[0] >> 16), .algo = (uint8_t)(w[0] >> 24),
                               .proto = (uint8_t)(w[0] >> 32), .nchannels = (uint8_t)(w[0] >> 40),
                               .root_or_peer = (int32_t)(uint32_t)w[1], .seq = w[2], .count = w[3],
                               .user_tag = w[4]};
      t->t_start = w[5];
    }
  }
  for (int c = 0; c < PT_PROG_CHANNELS; c++) {
    const pt_prog_ch_slot* s = &p->ch[c];
    if (!PT_LOAD(s->w[0])) continue; /* never started: a hint, no copy needed */
    uint64_t w[PT_PROG_CH_WORDS];
    uint32_t version;
    if (get_words(&s->seq, s->w, w, PT_PROG_CH_WORDS, &version) != 0) {
      out->torn++;
      continue;
    }
    pt_prog_ch_view* v = &out->ch[out->n_ch++];
    *v = (pt_prog_ch_view){.channel = (uint8_t)c, .starts = w[0], .stops = w[1],
                           .start_kind = (uint8_t)(w[2] & 0xff), .start_func = (uint8_t)(w[2] >> 8),
                           .start_seq = w[3], .t_start = w[4], .gpu_start = w[5],
                           .stop_kind = (uint8_t)(w[6] & 0xff), .stop_func = (uint8_t)(w[6] >> 8),
                           .stop_seq = w[7], .t_stop = w[8], .gpu_stop = w[9]};
    out->kch_starts += w[0];
    out->kch_stops += w[1];
  }
}
