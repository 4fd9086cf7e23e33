/*
 * tags.c — the userTags of a trace and the notes its dumps carry about
 * the host (trace.h).
 *
 * userTags: an open-addressing table of the distinct tags seen, PT_TAG_MAX
 * entries of one atomic word each, 0 = free. Tasks are started on the
 * application's threads, possibly several at once, so an entry is claimed
 * with one compare-and-swap and never changes after; readers (the proxy
 * thread never does; dumps do) load it relaxed. The table is allocated
 * the first time a task is tagged, never on the proxy thread's hot path,
 * and freed with the trace.
 */
#include <stdio.h>
#include <stdlib.h>

#include "trace/slab.h"

static _Atomic unsigned process_notes;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  return x ^ (x >> 33);
}

static _Atomic uint64_t* table(pt_trace* t) {
  _Atomic uint64_t* tab = atomic_load_explicit(&t->tags, memory_order_acquire);
  if (tab) return tab;
  _Atomic uint64_t* fresh = calloc(PT_TAG_MAX, sizeof *fresh);
  if (!fresh) return NULL;
  if (atomic_compare_exchange_strong_explicit(&t->tags, &tab, fresh, memory_order_acq_rel,
                                              memory_order_acquire))
    return fresh;
  free(fresh); /* another thread published one first: `tab` is it */
  return tab;
}

uint32_t pt_trace_tag_ref(pt_trace* t, uint64_t user_tag) {
  if (!t || !user_tag) return 0;
  _Atomic uint64_t* tab = table(t);
  if (!tab) return PT_TAG_REF_LOST;
  for (uint32_t i = 0, at = (uint32_t)mix(user_tag) % PT_TAG_MAX; i < PT_TAG_MAX;
       i++, at = (at + 1) % PT_TAG_MAX) {
    uint64_t cur = atomic_load_explicit(&tab[at], memory_order_relaxed);
    if (cur == 0 && atomic_compare_exchange_strong_explicit(&tab[at], &cur, user_tag,
                                                            memory_order_relaxed,
                                                            memory_order_relaxed))
      return at + 1;
    if (cur == user_tag) return at + 1;
  }
  return PT_TAG_REF_LOST;
}

int pt_trace_tag_of(const pt_trace* t, uint32_t ref, uint64_t* tag) {
  if (ref == 0) return 0;
  _Atomic uint64_t* tab = t ? atomic_load_explicit(&((pt_trace*)t)->tags, memory_order_acquire) : NULL;
  if (!tab || ref > PT_TAG_MAX) return -1;
  const uint64_t v = atomic_load_explicit(&tab[ref - 1], memory_order_relaxed);
  if (!v) return -1;
  *tag = v;
  return 1;
}

void pt_trace_tags_free(pt_trace* t) { free((void*)atomic_load_explicit(&t->tags, memory_order_relaxed)); }

void pt_trace_note(pt_trace* t, unsigned notes) {
  atomic_fetch_or_explicit(t ? &t->notes : &process_notes, notes, memory_order_relaxed);
}

void pt_trace_unnote(pt_trace* t, unsigned notes) {
  if (t) atomic_fetch_and_explicit(&t->notes, ~notes, memory_order_relaxed);
}

unsigned pt_trace_notes(const pt_trace* t) {
  unsigned n = atomic_load_explicit(&process_notes, memory_order_relaxed);
  if (t) n |= atomic_load_explicit(&((pt_trace*)t)->notes, memory_order_relaxed);
  return n;
}

int pt_format_notes(char* buf, size_t n, unsigned notes) {
  if (!notes || !n) return 0;
  const char* diag = (notes & PT_NOTE_DIAG_MISMATCH) ? "mismatch (RCCL's ProxyOp fields are not read: "
                                                       "counters come from step events)"
                     : (notes & PT_NOTE_DIAG_MISSING) ? "missing (no RCCL ProxyDiag update arrived: "
                                                       "counters come from step events)"
                                                     : NULL;
  int len = snprintf(buf, n, "proxytrace host:%s%s%s%s", diag ? " diag: " : "", diag ? diag : "",
                     (notes & (PT_NOTE_MASK_CHANGED | PT_NOTE_MASK_OFF)) ? " mask: changed by the host" : "",
                     (notes & PT_NOTE_MASK_OFF) ? ", proxy events off (calls since are not recorded)" : "");
  return len < 0 ? 0 : len < (int)n ? len : (int)n - 1;
}
