/*
 * order.h — the order a dump prints its records in: legacy ProxyTrace sorts
 * by the key string "<commHash:opCount:proxyOpId>" in byte order (so
 * "<h:10:0>" precedes "<h:2:0>"). Here each key becomes a binary key with
 * the same order, made from the three integers without printing them, and
 * the keys are sorted by a stable radix sort (order.c).
 */
#ifndef PT_TRACE_ORDER_H
#define PT_TRACE_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "trace/record.h"

/* 240 bits, most significant first in w[0]; the low 16 bits of w[3] are 0. */
typedef struct {
  uint64_t w[4];
} pt_order_key;

/* The commHash part of the last key made: the records of a communicator
 * nearly all carry one commHash, coded once. Zeroed before the first key. */
typedef struct {
  uint64_t hash, w0, w1;
  int set;
} pt_order_cache;

/* The key of v's "<commHash:opCount:proxyOpId>" (%llu:%lld:%lld). */
void pt_order_key_make(pt_order_key* k, const pt_rec_view* v, pt_order_cache* cache);
/* Bytes of scratch memory pt_order_sort needs for n keys. */
size_t pt_order_scratch_bytes(size_t n);
/* ord[0..n) holds indices into k, in the order that equal keys are to keep;
 * sorts them by their keys, stably. `scratch`: pt_order_scratch_bytes(n)
 * bytes, 8-aligned. */
void pt_order_sort(const pt_order_key* k, size_t n, uint32_t* ord, void* scratch);

#endif
