/*
 * names.c — the analyzer's vocabulary: the names of counters, op states,
 * dump triggers, drop reasons, proxy statuses and step units as the files
 * write them (src/format/format.h), and the names of waits, functions,
 * causes and verdicts as the reports write them. Every stage speaks these
 * words and none owns them, so they sit below every stage.
 */
#include <stddef.h>
#include <string.h>

#include "analyze/internal.h"
#include "format/format.h"

#define NAME(i, name) [i] = name,
const char* const an_drop_names[AN_DROP_COUNT] = {PT_FORMAT_DROPS(NAME)};
#undef NAME
_Static_assert(AN_DROP_COUNT == PT_FORMAT_DROP_COUNT, "the plugin's drop reasons");

/* The plugin's triggers, after "unknown". */
#define NAME(i, name) [i + 1] = name,
static const char* const trigger_names[AN_TRIG_COUNT] = {[AN_TRIG_UNKNOWN] = "unknown", PT_FORMAT_TRIGGERS(NAME)};
#undef NAME
_Static_assert(AN_TRIG_COUNT == PT_FORMAT_TRIGGER_COUNT + 1 && AN_TRIG_API == PT_FORMAT_TRIGGER_COUNT,
               "the plugin's triggers");

const char* an_trigger_name(int t) { return t >= 0 && t < AN_TRIG_COUNT ? trigger_names[t] : "unknown"; }

const char* an_state_name(int state) {
  return state == AN_ST_FINISHED ? "finished" : state == AN_ST_DETACHED ? "detached" : "active";
}

int an_trigger_parse(const char* s) {
  for (int i = 1; i < AN_TRIG_COUNT; i++)
    if (!strcmp(s, trigger_names[i])) return i;
  return AN_TRIG_UNKNOWN;
}

/* The counters' JSON names, in counter-kind order. */
#define NAME(i, name) [i] = name,
const char* const an_counter_json[AN_C_COUNT] = {PT_FORMAT_COUNTERS(NAME)};
#undef NAME
_Static_assert(AN_C_COUNT == PT_FORMAT_COUNTER_COUNT && AN_C_FIFO == 10, "the plugin's counters");

const char* const an_status_names[8] = {"INIT", "POSTING", "SENDING", "RECEIVING",
                                        "WAITING_GPU", "FLUSHING", "DONE", "ILLEGAL"};

int an_status_parse(const char* s, size_t n) {
  for (int i = 0; i < 8; i++)
    if (strlen(an_status_names[i]) == n && !memcmp(s, an_status_names[i], n)) return i;
  return -1;
}

int an_unit_parse(const char* s, size_t n) {
  if (n == sizeof PT_FORMAT_UNIT_RAW_STEPS - 1 && !memcmp(s, PT_FORMAT_UNIT_RAW_STEPS, n)) return AN_UNIT_RAW;
  if (n == sizeof PT_FORMAT_UNIT_TRANSFERS - 1 && !memcmp(s, PT_FORMAT_UNIT_TRANSFERS, n)) return AN_UNIT_TRANSFERS;
  return AN_UNIT_UNKNOWN;
}

const char* an_unit_name(int unit) {
  return unit == AN_UNIT_RAW ? PT_FORMAT_UNIT_RAW_STEPS : unit == AN_UNIT_TRANSFERS ? PT_FORMAT_UNIT_TRANSFERS : NULL;
}

const char* an_wait_name(an_wait w) {
  static const char* const names[AN_W_COUNT] = {"none",     "gpu",          "credit",       "network",
                                                "data",     "consume",      "not_posting",  "peer_missing",
                                                "peer_behind", "peer_no_op",   "peer_cut"};
  return w >= 0 && w < AN_W_COUNT ? names[w] : "none";
}

const char* an_func_name(int f) {
  static const char* const names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                      "AllReduce", "SendRecv", "Send",    "Recv"};
  return f >= 0 && f < (int)(sizeof names / sizeof names[0]) ? names[f] : NULL;
}

const char* pt_verdict_name(pt_verdict v) {
  switch (v) {
    case PT_VERDICT_OK: return "ok";
    case PT_VERDICT_HANG: return "hang";
    case PT_VERDICT_SLOW: return "slow";
    case PT_VERDICT_INCOMPLETE: return "incomplete";
    default: return "unusable";
  }
}

int an_slow_cause(pt_cause c) {
  return c == PT_CAUSE_SLOW_LINK || c == PT_CAUSE_SLOW_GPU || c == PT_CAUSE_SLOW_HOST;
}

const char* pt_cause_name(pt_cause c) {
  static const char* const names[PT_CAUSE_COUNT] = {
      "none",         "gpu_not_producing", "gpu_not_consuming", "no_receive_posted", "network",
      "rank_missing", "rank_behind",       "send_missing",      "circular_wait",     "slow_link",
      "slow_gpu",     "mismatch",          "not_entered",       "stopped",           "slow_host"};
  return c >= 0 && c < PT_CAUSE_COUNT ? names[c] : "unknown";
}
