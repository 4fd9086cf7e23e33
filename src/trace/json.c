/*
 * json.c — a snapshot (dump.h) as JSON lines, schema 1 (docs/dump-json.md),
 * and the banner line that starts each dump in a text file.
 *
 * One object per line: a "dump" header, one "op" per record in the order
 * the text dump prints them, an "end" trailer — a dump without its trailer
 * was cut. Integers are printed in full (64-bit, where the legacy line
 * truncates to int), commHash as a decimal string (it may exceed
 * INT64_MAX), times as Unix-epoch nanoseconds or null when never set.
 * Strings are escaped; bytes that are not UTF-8 become U+FFFD.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "trace/dump.h"
#include "trace/jline.h"
#include "trace/slab.h"

/* "key":ns or "key":null */
static void put_time(pt_jline* j, const char* key, const pt_clock_cal* cal, uint64_t ticks) {
  if (ticks) pt_jput(j, ",\"%s\":%" PRId64, key, pt_ticks_to_unix_ns(cal, ticks));
  else pt_jput(j, ",\"%s\":null", key);
}

static const char* const counter_names[PT_CNT_NUM] = {
    "posted",      "kernelCopyReady", "rtrRecv", "rtsSend",    "received",         "transmitted",
    "flushed",     "done",            "recvTail", "tailOrHead", "fifoSzOrHeadCache"};

static const char* state_name(uint8_t s) {
  return s == PT_SLOT_FINISHED ? "finished" : s == PT_SLOT_DETACHED ? "detached" : "active";
}

static const char* origin_name(uint8_t o) {
  switch (o) {
    case PT_ORIGIN_HOST: return "host";
    case PT_ORIGIN_COLL: return "coll";
    case PT_ORIGIN_P2P: return "p2p";
    default: return "none";
  }
}

static void header(pt_jline* j, const pt_dump* d, const pt_dump_meta* m) {
  /* Hundredths by hand: printf's %f follows the host's LC_NUMERIC, which may
   * print a comma. */
  const long long mb100 = (long long)(d->map_size_mb * 100.0 + 0.5);
  pt_jput(j, "{\"type\":\"dump\",\"schema\":1,\"tool\":\"proxytrace\",\"version\":\"%d.%d.%d\",\"host\":",
      PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH);
  pt_jput_str(j, m->host, 255);
  pt_jput(j, ",\"pid\":%ld,\"rank\":%d,\"nRanks\":%d,\"nNodes\":%d,\"commHash\":\"%" PRIu64 "\",\"commName\":",
      m->pid, d->rank, m->nranks, m->nnodes, m->comm_hash);
  pt_jput_str(j, m->comm_name && *m->comm_name ? m->comm_name : NULL, 255);
  pt_jput(j, ",\"hostLib\":\"%s\",\"profilerApi\":%d,\"clock\":\"%s\",\"trigger\":\"%s\",\"dumpSeq\":%" PRIu64
         ",\"round\":%" PRIu64 ",\"time_ns\":%" PRId64 ",\"activeOps\":%u,\"finishedOps\":%u,"
         "\"mapSizeMB\":%lld.%02lld,\"stallMs\":%u",
      m->host_lib, m->profiler_api, pt_clock_source(), m->trigger, m->seq, m->round, d->time_ns,
      d->n_active, d->n_finished, mb100 / 100, mb100 % 100, m->stall_ms);
  put_time(j, "lastProgress_ns", &d->cal, m->last_progress_ticks);
  pt_jput(j, ",\"lostDumps\":%" PRIu64 ",\"maxOps\":%u,\"drops\":{", m->lost_dumps, d->nslots);
  for (int i = 0; i < PT_DROP_NUM; i++)
    pt_jput(j, "%s\"%s\":%" PRIu64, i ? "," : "", pt_drop_name((pt_drop_reason)i), d->drops.n[i]);
  pt_jput(j, "}}");
}

static void op(pt_jline* j, const pt_dump* d, const pt_dump_entry* e, uint64_t seq) {
  const pt_rec_view* v = &e->v;
  pt_jput(j,
      "{\"type\":\"op\",\"dumpSeq\":%" PRIu64 ",\"rank\":%d,\"peer\":%d,\"channel\":%d,\"dir\":\"%s\","
      "\"commHash\":\"%" PRIu64 "\",\"opCount\":%" PRId64 ",\"opId\":%" PRId64 ",\"key\":\"%s\","
      "\"state\":\"%s\",\"status\":\"%s\",\"nSteps\":%d,\"nBytes\":%u,\"func\":%d,\"proto\":%d,"
      "\"pattern\":%d,\"totalBytes\":%u,\"chunkSize\":%u,\"opCountFrom\":\"%s\",\"coll\":",
      seq, d->rank, v->peer, v->channel, v->op_type == PT_OP_SEND ? "send" : "recv", v->comm_hash,
      v->op_count, v->op_id, e->key, state_name(e->state), pt_status_name(pt_rec_status(v)), v->nsteps,
      v->nbytes, v->func_idx, v->protocol, v->pattern, v->total_bytes, v->chunk_size,
      origin_name(v->origin));
  if (v->origin == PT_ORIGIN_COLL)
    pt_jput(j, "\"%s\",\"seq\":%" PRId64, pt_func_name((int)(v->op_count % PT_FUNC_NUM)), v->op_count / PT_FUNC_NUM);
  else if (v->origin == PT_ORIGIN_P2P)
    pt_jput(j, "\"%s\",\"seq\":%" PRId64, v->op_type == PT_OP_SEND ? "Send" : "Recv", v->op_count / PT_FUNC_NUM);
  else
    pt_jput(j, "null,\"seq\":null");
  pt_jput(j, ",\"counters\":{");
  for (int k = 0; k < PT_CNT_NUM; k++)
    pt_jput(j, "%s\"%s\":%" PRId64, k ? "," : "", counter_names[k], v->counters[k]);
  pt_jput(j, "},\"lastCounter\":");
  if (v->last_kind < PT_CNT_NUM) pt_jput(j, "\"%s\"", counter_names[v->last_kind]);
  else pt_jput(j, "null");
  put_time(j, "create_ns", &d->cal, v->t_create);
  put_time(j, "last_ns", &d->cal, v->t_last);
  put_time(j, "posted_ns", &d->cal, v->t_posted);
  put_time(j, "send_ns", &d->cal, v->t_kernel);
  put_time(j, "progress_ns", &d->cal, v->t_progress);
  pt_jput(j, "}");
}


int pt_dump_json(const pt_dump* d, const pt_dump_meta* m, pt_line_fn emit, void* arg) {
  char buf[4096]; /* longest line: the header, with a 255-byte host name escaped */
  pt_jline j = {buf, sizeof buf, 0};
  int lines = 0;
  header(&j, d, m);
  lines += pt_jline_emit(&j, emit, arg);
  for (size_t i = 0; i < d->n; i++) {
    op(&j, d, &d->es[i], m->seq);
    lines += pt_jline_emit(&j, emit, arg);
  }
  pt_jput(&j, "{\"type\":\"end\",\"dumpSeq\":%" PRIu64 ",\"records\":%zu}", m->seq, d->n);
  lines += pt_jline_emit(&j, emit, arg);
  return lines;
}

int pt_dump_banner(const pt_dump* d, const pt_dump_meta* m, char* buf, size_t n) {
  int len = snprintf(buf, n,
                     "proxytrace dump seq=%" PRIu64 " trigger=%s time_ns=%" PRId64
                     " host=%s pid=%ld rank=%d nRanks=%d commHash=%" PRIu64 " hostLib=%s",
                     m->seq, m->trigger, d->time_ns, m->host ? m->host : "?", m->pid, d->rank, m->nranks,
                     m->comm_hash, m->host_lib);
  return len < (int)n ? len : (int)n - 1;
}
