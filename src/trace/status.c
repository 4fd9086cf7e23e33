/*
 * status.c — the legacy status of an operation, computed from its counters
 * at dump time (spec/rccl-proxytrace.md §3.6; the same letters NCCL's own
 * proxy dump prints). Counters are compared as int, as legacy does.
 */
#include "proxytrace/trace.h"
#include "trace/format.h"

pt_status pt_status_of(pt_op_type type, int64_t posted64, int64_t received64,
                       int64_t transmitted64, int64_t done64, int nsteps, int window) {
  const int posted = (int)posted64, received = (int)received64;
  const int transmitted = (int)transmitted64, done = (int)done64;
  if (window <= 0) window = PT_NCCL_STEPS;
  /* done + window wraps as legacy's int sum does on its compilers (two's
   * complement), without the undefined behaviour of a signed overflow: a
   * ProxyDiag counter may hold any value (fuzz_abi: done near INT_MAX). */
  const int done_window = (int)((unsigned)done + (unsigned)window);
  if (posted < nsteps && posted < done_window) return PT_STATUS_POSTING;
  if (type == PT_OP_RECV) {
    if (received < posted) return PT_STATUS_RECEIVING;
    if (received < transmitted) return PT_STATUS_RECEIVING;
    if (transmitted < received) return PT_STATUS_FLUSHING;
    if (done < transmitted) return PT_STATUS_WAITING_GPU;
    return PT_STATUS_DONE;
  }
  if (transmitted < posted) return PT_STATUS_WAITING_GPU;
  if (done < transmitted) return PT_STATUS_SENDING;
  return PT_STATUS_DONE;
}

const pt_name* pt_status_label(pt_status s) {
  static const pt_name names[] = {PT_NAME("INIT"),        PT_NAME("POSTING"),  PT_NAME("SENDING"),
                                  PT_NAME("RECEIVING"),   PT_NAME("WAITING_GPU"), PT_NAME("FLUSHING"),
                                  PT_NAME("DONE"),        PT_NAME("ILLEGAL")};
  static const pt_name none = PT_NAME("");
  if ((unsigned)s < sizeof names / sizeof names[0]) return &names[s];
  return &none;
}

const char* pt_status_name(pt_status s) { return pt_status_label(s)->s; }
