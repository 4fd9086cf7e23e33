/*
 * idmap.h — legacy proxyOpId assignment: per (commHash, opCount) the next id
 * and the number of live records in that bucket (spec/rccl-proxytrace.md
 * §3.4–§3.5, activeOpIdTracker). A bucket exists while it holds a live record;
 * when the last one completes the bucket goes, so ids restart at 0 — exactly
 * what legacy does and what keeps our ids equal to legacy ids.
 *
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones), sized at creation to twice the slab's cap so it can never
 * fill: every bucket holds at least one live slot. Reserved address space
 * (vmem.h): only the pages of buckets used cost memory. A bucket's home is
 * its opCount modulo the capacity: the ops of a trace carry their
 * communicator's hash, and NCCL and RCCL count ops up from 0, collectives
 * and p2p interleaved ((count << 1) + isP2p: NCCL v2.21.5-1
 * src/enqueue.cc:1140-1142, which RCCL inherits), so buckets fill the table from its start,
 * in order, without collisions — the pages in use are the first ones and
 * then those just past the top, which pt_trace_prefault populates ahead
 * (`top`, the one field another thread reads). A second hash with the same
 * opCounts lands one entry further. Written only by the proxy thread.
 */
#ifndef PT_TRACE_IDMAP_H
#define PT_TRACE_IDMAP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t comm_hash;
  int64_t op_count;
  uint32_t next_id;
  uint32_t live; /* 0 = empty slot */
} pt_idmap_entry;

typedef struct {
  pt_idmap_entry* e;
  uint32_t mask;    /* capacity - 1, capacity a power of two */
  uint32_t buckets; /* entries in use */
  _Atomic uint32_t top; /* entries below it may have been read or written (relaxed) */
} pt_idmap;

int pt_idmap_init(pt_idmap* m, uint32_t max_live);
void pt_idmap_free(pt_idmap* m);
/* Next id for the bucket (creating it), and count one more live record. */
int64_t pt_idmap_acquire(pt_idmap* m, uint64_t comm_hash, int64_t op_count);
/* One record of the bucket is gone; the bucket goes with its last record. */
void pt_idmap_release(pt_idmap* m, uint64_t comm_hash, int64_t op_count);
size_t pt_idmap_bytes(const pt_idmap* m);
/* The entries the proxy thread has read or written lie below this: 2 + the
 * highest written (release reads the next one), buckets of a negative
 * opCount aside. Any thread. */
uint32_t pt_idmap_top(const pt_idmap* m);

#endif
