/*
 * fanout.h — what the fan-out profiler's files share.
 *
 * The fan-out is a profiler plugin that loads other profiler plugins (its
 * children, PROXYTRACE_FANOUT_PLUGINS) through the project's loader and
 * forwards every event the host gives it to each child, in the child's own
 * API version. It is its own library: the proxytrace plugin itself loads no
 * plugins.
 *
 * Translation goes through one canonical event, the way NCCL's own adapters
 * work from the core's newest descriptor (NVIDIA/nccl
 * src/plugin/profiler/profiler_v1.cc … profiler_v6.cc): the host's
 * descriptor, of whatever version the host speaks, is widened into a v7
 * descriptor plus the three v1-v3 fields v4 dropped (translate.c,
 * fo_widen), and each child gets it narrowed to its version with the
 * filters and quirks of the host's adapter for that version (fo_narrow,
 * fo_narrow_state).
 */
#ifndef PT_FANOUT_H
#define PT_FANOUT_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/profiler_v1.h"
#include "nccl/profiler_v2.h"
#include "nccl/profiler_v3.h"
#include "nccl/profiler_v4.h"
#include "nccl/profiler_v5.h"
#include "nccl/profiler_v6.h"
#include "nccl/profiler_v7.h"

/* The host's event, widened. For hosts of API v4+ name, commHash and
 * trafficBytes are NULL/0, as every v1-v3 adapter of a v4+ core sets them;
 * coll/p2p parentGroup always holds the legacy Group handle (v1-v4 hosts
 * pass it as parentObj). */
typedef struct {
  ncclProfilerEventDescr_v7_t d;
  const char* name;
  uint64_t commHash;
  size_t trafficBytes;
} fo_event;

typedef union {
  ncclProfilerEventDescr_v1_t v1;
  ncclProfilerEventDescr_v2_t v2;
  ncclProfilerEventDescr_v3_t v3;
  ncclProfilerEventDescr_v4_t v4;
  ncclProfilerEventDescr_v5_t v5;
  ncclProfilerEventDescr_v6_t v6;
  ncclProfilerEventDescr_v7_t v7;
} fo_any_descr;

typedef union {
  ncclProfilerEventStateArgs_v1_t v1;
  ncclProfilerEventStateArgs_v4_t v4;
  ncclProfilerEventStateArgs_v6_t v6;
  unsigned char b[32];
} fo_any_args;

/* Host descriptor of API `host` -> canonical event. */
void fo_widen(fo_event* e, int host, const void* descr);

/* Whether the host's adapter for a child of API `child` forwards an event
 * of this type at all (a declined event: the child is not called). */
int fo_forwards_type(int host, int child, uint64_t type);

/* Canonical event -> the child's descriptor; the parent handles are set by
 * the caller (fo_parent_slots). */
void fo_narrow(fo_any_descr* out, int host, int child, const fo_event* e);

/* The places in a narrowed descriptor that hold host handles the child
 * must see as its own: parentObj, and parentGroup in v5+ coll/p2p. Returns
 * how many were written into slots[]. (Inline: every start runs it.) */
static inline int fo_parent_slots(fo_any_descr* d, int child, uint64_t type, void** slots[2]) {
  int n = 0;
  slots[n++] = &d->v4.parentObj; /* offset 8 in every version */
  if (child >= 5 && type == ncclProfileColl) slots[n++] = &d->v6.coll.parentGroup;
  else if (child >= 5 && type == ncclProfileP2p) slots[n++] = &d->v6.p2p.parentGroup;
  return n;
}

/* A state the host records, for a child of API `child`: 0 when the host's
 * adapter drops it, else 1 with *out_args pointing at the args to pass
 * (the host's own, or `buf` filled as the adapter fills its copy). */
int fo_narrow_state(int host, int child, int rccl, int state, void* args, fo_any_args* buf,
                    void** out_args);

/* Bits a child of API `child` under a host of API `host` may keep in its
 * mask after init (the adapters clear the rest). */
int fo_mask_keep(int host, int child, int rccl);

/* Whether a host of API `api` emits an event of `type` to a plugin whose
 * mask is `m` (spec nccl-profiler-abi.md §5.2 gating: a bit implies its
 * parents' events; NVIDIA/nccl src/plugin/profiler.cc, v2.23-v2.25
 * src/misc/profiler.cc). The per-handle conditions (no Coll without a
 * Group handle on 2.23-2.27, …) are fanout.c's, per child. */
int fo_gate(int api, int rccl, uint64_t type, int m);

#endif
