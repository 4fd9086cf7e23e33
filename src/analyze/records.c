/*
 * records.c — the records the analysis read, one JSON object per line
 * (`proxytrace analyze --records`, docs/analyze.md "Records"), so that
 * other programs (the Python package's read_dumps) get every counter, time
 * and key of every op from this parser rather than from one of their own.
 *
 * Which records: those of the latest dump of each (communicator, rank), or
 * with the option "all-dumps" those of every dump read (a dump seen twice
 * once). Grouped by communicator hash, then rank; dumps in the order read.
 * Each object is the dump's "op" line of docs/dump-json.md as the parser
 * holds it, plus the dump it came from (with what its plugin dropped) and
 * where it was read.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "analyze/render.h"

static void put_int_or_null(FILE* f, int64_t v, int64_t none) {
  if (v == none) fputs("null", f);
  else fprintf(f, "%" PRId64, v);
}

static void record_json(FILE* f, const pt_analysis* a, const an_dump* d, const an_op* op) {
  fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"peer\":%d,\"channel\":%d,\"dir\":\"%s\",\"commHash\":", op->rank,
          op->peer, op->channel, op->is_send ? "send" : "recv");
  an_put_hash(f, op->comm);
  fprintf(f, ",\"opCount\":%" PRId64 ",\"opId\":%" PRId64 ",\"key\":\"<%" PRIu64 ":%" PRId64 ":%" PRId64
             ">\",\"state\":\"%s\",\"status\":",
          op->op_count, op->op_id, op->comm, op->op_count, op->op_id,
          an_state_name(op->state));
  if (op->status >= 0) an_put_str(f, an_status_names[op->status]);
  else fputs("null", f);
  fprintf(f,
          ",\"nSteps\":%" PRId64 ",\"nBytes\":%" PRIu64 ",\"func\":%d,\"proto\":%d,\"pattern\":%d,\"totalBytes\":%" PRIu64
          ",\"chunkSize\":%" PRIu64 ",\"coll\":",
          op->n_steps, op->nbytes, op->func, op->proto, op->pattern, op->total_bytes, op->chunk);
  if (op->coll[0]) an_put_str(f, op->coll);
  else fputs("null", f);
  fputs(",\"seq\":", f);
  put_int_or_null(f, op->coll_seq, -1);
  /* the steps as the dump counts them, and in network transfers */
  an_put_steps(f, d, op);
  fputs(",\"counters\":{", f);
  for (int k = 0; k < AN_C_COUNT; k++)
    fprintf(f, "%s\"%s\":%" PRId64, k ? "," : "", an_counter_json[k], op->cnt[k]);
  fputs("},\"lastCounter\":", f);
  if (op->last_counter >= 0 && op->last_counter < AN_C_COUNT) an_put_str(f, an_counter_json[op->last_counter]);
  else fputs("null", f);
  const char* tname[] = {"create_ns", "last_ns", "posted_ns", "send_ns", "progress_ns"};
  const int64_t t[] = {op->create_ns, op->last_ns, op->posted_ns, op->send_ns, op->progress_ns};
  for (int i = 0; i < 5; i++) {
    fprintf(f, ",\"%s\":", tname[i]);
    an_put_time(f, t[i]);
  }
  fprintf(f, ",\"dump\":{\"format\":\"%s\",\"nsTimes\":%s,\"host\":", d->format == AN_FMT_JSONL ? "jsonl" : "text",
          d->ns_times ? "true" : "false");
  if (d->host[0]) an_put_str(f, d->host);
  else fputs("null", f);
  fputs(",\"pid\":", f);
  put_int_or_null(f, d->pid, 0);
  fputs(",\"dev\":", f);
  put_int_or_null(f, d->dev, -1);
  fputs(",\"dumpSeq\":", f);
  put_int_or_null(f, d->seq, -1);
  fputs(",\"time_ns\":", f);
  an_put_time(f, d->time_ns);
  fputs(",\"trigger\":", f);
  if (d->trigger != AN_TRIG_UNKNOWN) an_put_str(f, an_trigger_name(d->trigger));
  else fputs("null", f);
  /* what the plugin dropped or refused before this dump (its header's
   * "drops", legacy's second line): a reader checking that nothing was
   * lost needs no reader of the header of its own */
  fputs(",\"drops\":", f);
  if (!d->has_drops) fputs("null", f);
  else
    for (int i = 0; i < AN_DROP_COUNT; i++)
      fprintf(f, "%s\"%s\":%" PRId64 "%s", i ? "," : "{", an_drop_names[i], d->drops[i],
              i == AN_DROP_COUNT - 1 ? "}" : "");
  fputs("},\"source\":", f);
  char src[600];
  snprintf(src, sizeof src, "%s:%u", a->inputs[op->input].path, op->line);
  an_put_str(f, src);
  fputs("}\n", f);
}

/* By communicator hash, then rank, then the order kept (stable). */
typedef struct {
  const an_dump* d;
  size_t at;
} an_rec_dump;

static int by_comm_rank(const void* x, const void* y) {
  const an_rec_dump* p = x;
  const an_rec_dump* q = y;
  if (p->d->comm != q->d->comm) return p->d->comm < q->d->comm ? -1 : 1;
  if (p->d->rank != q->d->rank) return p->d->rank < q->d->rank ? -1 : 1;
  return p->at < q->at ? -1 : p->at > q->at;
}

int pt_analysis_write_records(const pt_analysis* a, FILE* f) {
  if (!a || !f) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  size_t n = a->all_dumps ? a->n_every : a->n_slots;
  an_mem scratch = {0}; /* the writer's own: its failure leaves the analysis whole */
  an_rec_dump* v = an_alloc(&scratch, (n ? n : 1) * sizeof *v);
  if (!v) return PT_AN_ENOMEM;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const an_dump* d = a->all_dumps ? a->every[i] : a->slots[i].latest;
    if (d) v[m++] = (an_rec_dump){d, i};
  }
  qsort(v, m, sizeof *v, by_comm_rank);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < v[i].d->n_ops; j++) record_json(f, a, v[i].d, &v[i].d->ops[j]);
  an_free(&scratch, v);
  return ferror(f) ? PT_AN_EIO : 0;
}
