/*
 * chrome.c — the latest dumps as a Chrome-trace / Perfetto timeline (the
 * JSON "trace event" format: traceEvents of complete "X" spans, "M"
 * metadata, "i" instants and "s"/"f" flow pairs).
 *
 *   process   one per rank ("rank 3 (node0, pid 1234)"), pid = rank + 1
 *   thread    one per (channel, direction, peer) of that rank
 *   span      an op, from its creation to its last progress; an op still
 *             active runs to the dump's time. Args: every counter, status,
 *             state, what a stuck op waits for, its culprit. Stuck ops are
 *             named "STUCK …" and coloured.
 *   flow      from each send to its receive (an arrow in Perfetto)
 *   instant   each dump, named by its trigger, on its rank's process; a
 *             desync culprit (mismatch, not_entered, stopped), "DESYNC …",
 *             at its rank's dump
 *
 * Times are microseconds from the earliest op (otherData.epoch_ns says
 * which Unix time that is). Legacy dumps have millisecond times: spans
 * shorter than that show as points.
 */
#include <inttypes.h>
#include <string.h>

#include "analyze/render.h"

static int64_t end_of(const an_item* x) {
  const an_op* op = x->op;
  int64_t e = op->progress_ns ? op->progress_ns : op->last_ns;
  if (op->state == AN_ST_ACTIVE) {
    int64_t t = x->dump->time_ns ? x->dump->time_ns : x->dump->max_last_ns;
    if (t > e) e = t;
  }
  return e > op->create_ns ? e : op->create_ns;
}

/* Thread id of an op within its rank: channel, direction, peer. */
static long tid_of(const an_op* op) { return 1 + ((long)op->channel * 2 + (op->is_send ? 0 : 1)) * 65536L + op->peer; }

static void us(FILE* f, int64_t ns, int64_t t0) { fprintf(f, "%.3f", (double)(ns - t0) / 1000.0); }

int pt_analysis_write_chrome(const pt_analysis* a, FILE* f) {
  if (!a || !f) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  int64_t t0 = 0;
  for (size_t i = 0; i < a->n_items; i++) {
    int64_t c = a->items[i].op->create_ns;
    if (c && (!t0 || c < t0)) t0 = c;
  }
  /* No op (ranks whose data stays inside their nodes): the dumps' time. */
  for (size_t ci = 0; ci < a->n_comms && !t0; ci++)
    for (int r = 0; r < a->comms[ci].nranks; r++) {
      const an_dump* d = a->comms[ci].ranks[r].dump;
      if (d && d->time_ns && (!t0 || d->time_ns < t0)) t0 = d->time_ns;
    }
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"proxytrace analyze\",\"epoch_ns\":%" PRId64 "},\n"
             "\"traceEvents\":[\n",
          t0);
  int first = 1;
#define SEP() (fputs(first ? "" : ",\n", f), first = 0)
  /* Processes and threads. */
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    const an_comm* c = &a->comms[ci];
    for (int r = 0; r < c->nranks; r++) {
      const an_dump* d = c->ranks[r].dump;
      if (!d) continue;
      char name[160];
      if (d->host[0]) snprintf(name, sizeof name, "rank %d (%s%s%d)", r, d->host, d->pid ? ", pid " : "", d->pid);
      else snprintf(name, sizeof name, "rank %d", r);
      if (!d->pid && d->host[0]) snprintf(name, sizeof name, "rank %d (%s)", r, d->host);
      SEP();
      fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"ts\":0,\"args\":{\"name\":", r + 1);
      an_put_str(f, name);
      fputs("}}", f);
      SEP();
      fprintf(f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,\"ts\":0,\"args\":{\"sort_index\":%d}}",
              r + 1, r);
      /* One instant per dump this rank's record came from. */
      int64_t t = d->time_ns ? d->time_ns : d->max_last_ns;
      if (t && t0) {
        SEP();
        fprintf(f, "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"dump (%s)\",\"cat\":\"dump\",\"pid\":%d,\"tid\":0,\"ts\":",
                an_trigger_name(d->trigger), r + 1);
        us(f, t, t0);
        fprintf(f, ",\"args\":{\"trigger\":\"%s\",\"dumpSeq\":%" PRId64 "}}", an_trigger_name(d->trigger), d->seq);
        /* A desync culprit of this rank (desync.c): an instant at its dump. */
        for (size_t k = 0; k < a->n_culprits; k++) {
          const an_culprit* q = &a->culprits[k];
          if (q->comm_index != (int)ci || q->pub.rank != r ||
              (q->pub.cause != PT_CAUSE_MISMATCH && q->pub.cause != PT_CAUSE_NOT_ENTERED && q->pub.cause != PT_CAUSE_STOPPED))
            continue;
          SEP();
          fprintf(f, "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"DESYNC (%s)\",\"cat\":\"culprit\",\"pid\":%d,\"tid\":0,\"ts\":",
                  pt_cause_name(q->pub.cause), r + 1);
          us(f, t, t0);
          fputs(",\"args\":{\"culprit\":", f);
          an_put_str(f, q->summary);
          fputs("}}", f);
        }
      }
    }
  }
  /* Items of one dump are contiguous: a thread is named once per dump. */
  size_t start = 0;
  for (size_t i = 0; i < a->n_items; i++) {
    const an_op* op = a->items[i].op;
    if (i == 0 || a->items[i].dump != a->items[i - 1].dump) start = i;
    int dup = 0;
    for (size_t j = start; j < i && !dup; j++) dup = tid_of(a->items[j].op) == tid_of(op);
    if (dup) continue;
    char name[96];
    snprintf(name, sizeof name, "ch %d %s %d", op->channel, op->is_send ? "send to" : "recv from", op->peer);
    SEP();
    fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%ld,\"ts\":0,\"args\":{\"name\":", op->rank + 1,
            tid_of(op));
    an_put_str(f, name);
    fputs("}}", f);
  }
  /* Spans. */
  for (size_t i = 0; i < a->n_items; i++) {
    const an_item* x = &a->items[i];
    const an_op* op = x->op;
    if (!op->create_ns) continue;
    const char* coll = an_op_coll(op);
    char name[128];
    snprintf(name, sizeof name, "%s%s %d->%d opCount %" PRId64 "%s%s", x->stuck ? "STUCK " : "",
             op->is_send ? "send" : "recv", op->is_send ? op->rank : op->peer, op->is_send ? op->peer : op->rank,
             op->op_count, coll ? " " : "", coll ? coll : "");
    SEP();
    fputs("{\"ph\":\"X\",\"cat\":\"proxy\",\"name\":", f);
    an_put_str(f, name);
    fprintf(f, ",\"pid\":%d,\"tid\":%ld,\"ts\":", op->rank + 1, tid_of(op));
    us(f, op->create_ns, t0);
    fputs(",\"dur\":", f);
    us(f, end_of(x), op->create_ns);
    if (x->stuck) fputs(",\"cname\":\"terrible\"", f);
    fprintf(f, ",\"args\":{\"commHash\":\"%" PRIu64 "\",\"opCount\":%" PRId64 ",\"opId\":%" PRId64
               ",\"channel\":%d,\"nSteps\":%" PRId64 ",\"nBytes\":%" PRIu64 ",\"status\":",
            op->comm, op->op_count, op->op_id, op->channel, op->n_steps, op->nbytes);
    if (op->status >= 0) an_put_str(f, an_status_names[op->status]);
    else fputs("null", f);
    fprintf(f, ",\"state\":\"%s\",\"stuck\":%s",
            op->state == AN_ST_FINISHED ? "finished" : op->state == AN_ST_DETACHED ? "detached" : "active",
            x->stuck ? "true" : "false");
    if (x->stuck) fprintf(f, ",\"waitsFor\":\"%s\"", an_wait_name((an_wait)x->wait));
    if (op->tag_known > 0) fprintf(f, ",\"userTag\":\"0x%" PRIx64 "\"", op->user_tag);
    if (x->culprit >= 0) {
      fputs(",\"culprit\":", f);
      an_put_str(f, a->culprits[x->culprit].summary);
    }
    for (int k = 0; k < AN_C_COUNT; k++) fprintf(f, ",\"%s\":%" PRId64, an_counter_json[k], op->cnt[k]);
    an_put_steps(f, x->dump, op); /* the counters' unit, and the steps in network transfers */
    fputs("}}", f);
  }
  /* Flows: send -> receive. */
  long flow = 0;
  for (size_t i = 0; i < a->n_items; i++) {
    const an_item* x = &a->items[i];
    if (!x->op->is_send || x->partner < 0) continue;
    const an_item* y = &a->items[x->partner];
    if (!x->op->create_ns || !y->op->create_ns) continue;
    /* Both ends at their span's start: inside it, whatever the rounding. */
    int64_t s_ts = x->op->create_ns, f_ts = y->op->create_ns;
    flow++;
    SEP();
    fprintf(f, "{\"ph\":\"s\",\"cat\":\"pair\",\"name\":\"send->recv\",\"id\":%ld,\"pid\":%d,\"tid\":%ld,\"ts\":", flow,
            x->op->rank + 1, tid_of(x->op));
    us(f, s_ts, t0);
    fputs("}", f);
    SEP();
    fprintf(f, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"pair\",\"name\":\"send->recv\",\"id\":%ld,\"pid\":%d,\"tid\":%ld,\"ts\":",
            flow, y->op->rank + 1, tid_of(y->op));
    us(f, f_ts, t0);
    fputs("}", f);
  }
#undef SEP
  fputs("\n]}\n", f);
  return ferror(f) ? PT_AN_EIO : 0;
}
