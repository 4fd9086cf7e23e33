/*
 * summary.c — one node's evidence in one small file, so that a job too
 * large for one machine's reading is analyzed from its nodes' summaries
 * (`proxytrace analyze --summary OUT DIR` on every node, then
 * `proxytrace analyze` of the summaries; docs/analyze.md, "Past one
 * machine").
 *
 * A summary holds what the merge kept of the node's dumps and nothing
 * else: for each (communicator, rank) the latest dump whole and the active
 * records of the one before it — the stuck edges, each rank's progress
 * (its records and its progress lines: the calls it made, its kernel
 * channels), and the finished records the slow-edge judgement times (slow.c) — plus
 * the ranks that dumped no record, the dumps that did not know their rank,
 * the inputs that could not be read or had problems, and the step metrics
 * read (mset.h). Those are all the later stages look at, so an analysis of
 * the summaries of every node reaches the verdict of an analysis of every
 * dump (tests/analyze/summary.sh checks it over the fault matrix).
 *
 * It is written in the dump JSON lines (docs/dump-json.md), so the one
 * parser reads it back: a "summary" line first (the node's input
 * figures), then dumps — their header, "op" lines, an "end" line — each
 * header with a "summary" object saying what the dump was (its format,
 * whether its times are ns, its dev, whether it was cut, where it was
 * read), each op line with the line it was read from; "input" lines for
 * the inputs with a problem; the step metrics as a metrics file's lines. A
 * reader skips line types it does not know, so later kinds of evidence
 * (per-edge statistics, say) are new types of line. This file writes
 * summaries; summary_read.c reads their lines back as jsonl.c hands them
 * over.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/render.h"
#include "format/format.h"

static void put_opt(FILE* f, const char* key, int64_t v, int64_t none) {
  if (v != none) fprintf(f, ",\"%s\":%" PRId64, key, v);
}

static void put_ns(FILE* f, const char* key, int64_t ns) {
  fprintf(f, ",\"%s\":", key);
  an_put_time(f, ns);
}

static void dump_header(FILE* f, const pt_analysis* a, const an_dump* d, int64_t seq, const char* role) {
  fputs("{\"type\":\"dump\",\"schema\":" PT_FORMAT_STR(PT_FORMAT_DUMP_SCHEMA) ",\"host\":", f);
  an_put_str(f, d->host);
  fprintf(f, ",\"pid\":%d,\"rank\":%d", d->pid, d->rank);
  put_opt(f, "nRanks", d->nranks, 0);
  put_opt(f, "nNodes", d->nnodes, 0);
  if (d->has_comm) {
    fputs(",\"commHash\":", f);
    an_put_hash(f, d->comm);
  }
  if (d->comm_name[0]) { /* the name a chain across communicators shows */
    fputs(",\"commName\":", f);
    an_put_str(f, d->comm_name);
  }
  if (d->host_lib[0]) {
    fputs(",\"hostLib\":", f);
    an_put_str(f, d->host_lib);
  }
  put_opt(f, "profilerApi", d->api, 0);
  if (d->trigger != AN_TRIG_UNKNOWN) fprintf(f, ",\"trigger\":\"%s\"", an_trigger_name(d->trigger));
  fprintf(f, ",\"dumpSeq\":%" PRId64, seq);
  put_opt(f, "round", d->round, -1);
  put_opt(f, "time_ns", d->time_ns, 0);
  put_opt(f, "activeOps", d->announced_active, -1);
  put_opt(f, "finishedOps", d->announced_finished, -1);
  put_opt(f, "stallMs", d->stall_ms, -1);
  if (an_unit_name(d->step_unit)) fprintf(f, ",\"stepUnit\":\"%s\"", an_unit_name(d->step_unit));
  put_opt(f, "rotatedDumps", d->rotated, 0);
  if (d->mask_off) fputs(",\"maskOff\":true", f);
  if (d->mask_changed) fputs(",\"maskChangedByHost\":true", f);
  if (d->has_drops)
    for (int i = 0; i < AN_DROP_COUNT; i++)
      fprintf(f, "%s\"%s\":%" PRId64 "%s", i ? "," : ",\"drops\":{", an_drop_names[i], d->drops[i],
              i == AN_DROP_COUNT - 1 ? "}" : "");
  fprintf(f, ",\"summary\":{\"role\":\"%s\",\"format\":\"%s\",\"nsTimes\":%s,\"cut\":%s,\"lost\":%u", role,
          d->format == AN_FMT_TEXT ? "text" : "jsonl", d->ns_times ? "true" : "false", d->cut ? "true" : "false",
          d->lost);
  put_opt(f, "dev", d->dev, -1);
  if (d->line) {
    fputs(",\"source\":", f);
    an_put_str(f, a->inputs[d->input].path);
    fprintf(f, ",\"line\":%u", d->line);
  }
  fputs("}}\n", f);
}

/* One record as the plugin writes an op line (docs/dump-json.md), so that
 * the reader's one-pass path takes it, with the line it was read from. */
static void op_line(FILE* f, const an_op* op, int64_t seq) {
  fprintf(f, "{\"type\":\"op\",\"dumpSeq\":%" PRId64 ",\"rank\":%d,\"peer\":%d,\"channel\":%d,\"dir\":\"%s\",\"commHash\":",
          seq, op->rank, op->peer, op->channel, op->is_send ? "send" : "recv");
  an_put_hash(f, op->comm);
  fprintf(f, ",\"opCount\":%" PRId64 ",\"opId\":%" PRId64 ",\"state\":\"%s\",\"status\":", op->op_count, op->op_id,
          an_state_name(op->state));
  if (op->status >= 0 && op->status < 8) fprintf(f, "\"%s\"", an_status_names[op->status]);
  else fputs("null", f);
  fprintf(f, ",\"nSteps\":%" PRId64, op->n_steps);
  /* the unit of its counters: what a ring's chunk is in them (explain.c) */
  if (an_unit_name(op->step_unit)) fprintf(f, ",\"stepUnit\":\"%s\"", an_unit_name(op->step_unit));
  const uint64_t sizes[3] = {op->nbytes, op->total_bytes, op->chunk};
  static const char* const size_keys[3] = {"nBytes", "totalBytes", "chunkSize"};
  for (int i = 0; i < 3; i++)
    if (sizes[i] <= (uint64_t)INT64_MAX) fprintf(f, ",\"%s\":%" PRIu64, size_keys[i], sizes[i]);
  fprintf(f, ",\"func\":%d,\"proto\":%d,\"pattern\":%d", op->func, op->proto, op->pattern);
  if (op->coll[0]) {
    fputs(",\"coll\":", f);
    an_put_str(f, op->coll);
  }
  put_opt(f, "seq", op->coll_seq, -1);
  if (op->tag_known == 1) fprintf(f, ",\"userTag\":\"0x%" PRIx64 "\"", op->user_tag);
  else if (op->tag_known < 0) fputs(",\"userTag\":\"unknown\"", f);
  for (int k = 0; k < AN_C_COUNT; k++)
    fprintf(f, "%s\"%s\":%" PRId64, k ? "," : ",\"counters\":{", an_counter_json[k], op->cnt[k]);
  fputs("},\"lastCounter\":", f);
  if (op->last_counter >= 0 && op->last_counter < AN_C_COUNT) fprintf(f, "\"%s\"", an_counter_json[op->last_counter]);
  else fputs("null", f);
  put_ns(f, "create_ns", op->create_ns);
  put_ns(f, "last_ns", op->last_ns);
  put_ns(f, "posted_ns", op->posted_ns);
  put_ns(f, "send_ns", op->send_ns);
  put_ns(f, "progress_ns", op->progress_ns);
  fprintf(f, ",\"srcLine\":%u}\n", op->line);
}

/* A dump's progress lines (docs/dump-json.md, "Progress") as the plugin
 * writes them, with the fields progress.c reads back: the calls in the
 * order read (oldest first), so each keeps its place among the rank's. */
static void progress_lines(FILE* f, const an_dump* d, int64_t seq) {
  if (!d->has_progress) return;
  fprintf(f, "{\"type\":\"progress\",\"dumpSeq\":%" PRId64 ",\"colls\":%" PRId64 ",\"p2ps\":%" PRId64 "}\n", seq,
          d->n_calls[0], d->n_calls[1]);
  for (int i = 0; i < d->n_tasks; i++) {
    const an_task* t = &d->tasks[i];
    fprintf(f, "{\"type\":\"%s\",\"dumpSeq\":%" PRId64 ",\"seq\":%" PRId64 ",\"count\":%" PRIu64 ",\"%s\":%d,\"func\":",
            t->is_p2p ? "p2p" : "coll", seq, t->seq, t->count, t->is_p2p ? "peer" : "root", (int)t->root_or_peer);
    an_put_str(f, t->func);
    fputs(",\"datatype\":", f);
    an_put_str(f, t->dtype);
    if (t->algo[0]) {
      fputs(",\"algo\":", f);
      an_put_str(f, t->algo);
    }
    if (t->proto[0]) {
      fputs(",\"proto\":", f);
      an_put_str(f, t->proto);
    }
    fputs("}\n", f);
  }
  for (size_t i = 0; i < d->n_kch; i++) {
    const an_kch* k = &d->kch[i];
    fprintf(f,
            "{\"type\":\"kernelCh\",\"dumpSeq\":%" PRId64 ",\"channel\":%d,\"starts\":%" PRId64 ",\"stops\":%" PRId64
            ",\"startFunc\":",
            seq, (int)k->channel, k->starts, k->stops);
    an_put_str(f, k->start_func);
    fputs(",\"stopFunc\":", f);
    an_put_str(f, k->stop_func);
    fprintf(f, ",\"startSeq\":%" PRId64 ",\"stopSeq\":%" PRId64 ",\"startKind\":\"%s\",\"stopKind\":\"%s\"}\n",
            k->start_seq, k->stop_seq, k->start_p2p ? "p2p" : "coll", k->stop_p2p ? "p2p" : "coll");
  }
}

/* A dump carried: its header, its records, its progress lines, its end
 * (every dump is ended before the next starts, so dumps without a
 * sequence stay apart). */
static void dump_whole(FILE* f, const pt_analysis* a, const an_dump* d, const char* role, uint64_t* records) {
  dump_header(f, a, d, d->seq, role);
  for (size_t i = 0; i < d->n_ops; i++) op_line(f, &d->ops[i], d->seq);
  progress_lines(f, d, d->seq);
  fprintf(f, "{\"type\":\"end\",\"dumpSeq\":%" PRId64 ",\"records\":%zu}\n", d->seq, d->n_ops);
  *records += d->n_ops;
}

static void input_line(FILE* f, const an_input* in) {
  fputs("{\"type\":\"input\",\"path\":", f);
  an_put_str(f, in->path);
  fputs(",\"error\":", f);
  if (in->error) an_put_str(f, in->error);
  else fputs("null", f);
  fprintf(f, ",\"problems\":%d", in->n_errors);
  for (int e = 0; in->errors && e < in->n_errors && e < AN_MAX_ERRORS_KEPT; e++) {
    fprintf(f, ",\"problem%d\":{\"line\":%u,\"message\":", e, in->errors[e].line);
    an_put_str(f, in->errors[e].message ? in->errors[e].message : "");
    fputc('}', f);
  }
  fputs("}\n", f);
}

/* A histogram as the metrics file writes it ("buckets":[[upper,count],…],
 * upper null above the last; docs/metrics.md): what the statistical test
 * reads (mset.c), counts that add up across nodes. */
static void hist(FILE* f, const pt_mset* s, const pt_ms_hist* h) {
  if (!h->n) return;
  fputs(",\"buckets\":[", f);
  for (uint32_t k = 0; k < h->n; k++) {
    const uint64_t x = s->buckets[h->at + k], n = x & ((UINT64_C(1) << 56) - 1);
    const uint64_t ub = pt_ms_bucket_upper_ns((int)(x >> 56));
    if (ub == UINT64_MAX) fprintf(f, "%s[null,%" PRIu64 "]", k ? "," : "", n);
    else fprintf(f, "%s[%" PRIu64 ",%" PRIu64 "]", k ? "," : "", ub, n);
  }
  fputc(']', f);
}

static void metrics(FILE* f, const pt_mset* s) {
  static const char* const obj[PT_MS_TIMES] = {"gpuWait", "network", "step"};
  for (size_t i = 0; i < s->n;) {
    const pt_ms_edge* h = &s->e[i];
    fputs("{\"type\":\"metrics\",\"commHash\":", f);
    an_put_hash(f, h->comm);
    fputs(",\"host\":", f);
    an_put_str(f, h->host);
    fprintf(f, ",\"pid\":%ld,\"rank\":%d,\"time_ns\":%" PRId64 "}\n", h->pid, h->rank, h->time_ns);
    size_t j = i;
    for (; j < s->n && s->e[j].comm == h->comm && s->e[j].pid == h->pid && s->e[j].time_ns == h->time_ns &&
           !strcmp(s->e[j].host, h->host);
         j++) {
      const pt_ms_edge* e = &s->e[j];
      fprintf(f,
              "{\"type\":\"edge\",\"rank\":%d,\"peer\":%d,\"channel\":%d,\"dir\":\"%s\",\"ops\":%" PRIu64 ",\"steps\":%" PRIu64
              ",\"sizedSteps\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"busy_ns\":%" PRIu64 ",\"throughput_Bps\":%" PRIu64
              ",\"creditWait_ns\":%" PRIu64,
              e->rank, e->peer, e->channel, e->send ? "send" : "recv", e->ops, e->steps, e->sized_steps, e->bytes,
              e->busy_ns, e->throughput, e->credit_ns);
      for (int w = 0; w < PT_MS_TIMES; w++) {
        fprintf(f, ",\"%s\":{\"count\":%" PRIu64 ",\"sum_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64,
                obj[w], e->count[w], e->sum_ns[w], e->p50_ns[w], e->p99_ns[w]);
        hist(f, s, &e->hist[w]);
        fputc('}', f);
      }
      fputs("}\n", f);
    }
    fprintf(f, "{\"type\":\"end\",\"edges\":%zu}\n", j - i);
    i = j;
  }
}

/* The files behind the inputs: those read here, and those the summaries
 * read summarize (not the summaries, nor the inputs their dumps name). */
static uint64_t files_summarized(const pt_analysis* a) {
  return (uint64_t)(a->n_inputs - a->n_sources) - a->summaries + a->summarized_files;
}

int pt_analysis_write_summary(const pt_analysis* a, FILE* f) {
  if (!a || !f) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  uint64_t dumps = 0, records = 0;
  for (size_t i = 0; i < a->n_slots; i++) dumps += !!a->slots[i].latest + !!a->slots[i].previous + !!a->slots[i].cut;
  dumps += a->n_empty + a->n_unknown;
  for (size_t i = 0; i < a->n_slots; i++) {
    if (a->slots[i].latest) records += a->slots[i].latest->n_ops;
    if (a->slots[i].previous) records += a->slots[i].previous->n_ops;
    if (a->slots[i].cut) records += a->slots[i].cut->n_ops;
  }
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  fprintf(f, "{\"type\":\"summary\",\"schema\":1,\"tool\":\"proxytrace\",\"version\":\"%d.%d.%d\",\"host\":",
          PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH);
  an_put_str(f, host);
  fprintf(f,
          ",\"files\":%" PRIu64 ",\"lines\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"records\":%" PRIu64 ",\"dumps\":%" PRIu64
          ",\"duplicates\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"passedOver\":%" PRIu64 ",\"textCopiesNotRead\":%" PRIu64
          ",\"dumpsCarried\":%" PRIu64 ",\"recordsCarried\":%" PRIu64 "}\n",
          files_summarized(a), a->lines, a->bytes, a->records, a->dumps, a->duplicates, a->errors,
          a->passed_over, a->twins, dumps, records);
  uint64_t written = 0;
  for (size_t i = 0; i < a->n_slots; i++) {
    if (a->slots[i].previous) dump_whole(f, a, a->slots[i].previous, "previous", &written);
    if (a->slots[i].latest) dump_whole(f, a, a->slots[i].latest, "latest", &written);
    if (a->slots[i].cut) dump_whole(f, a, a->slots[i].cut, "cut", &written); /* damaged, after latest */
  }
  for (size_t i = 0; i < a->n_empty; i++) {
    const an_empty* e = &a->empty_ranks[i];
    fputs("{\"type\":\"dump\",\"schema\":" PT_FORMAT_STR(PT_FORMAT_DUMP_SCHEMA) ",\"host\":", f);
    an_put_str(f, e->host);
    fprintf(f, ",\"pid\":%d,\"rank\":%d,\"dumpSeq\":-1,\"drops\":{\"foreignPid\":%" PRId64 "}}\n", e->pid, e->rank,
            e->foreign);
    fputs("{\"type\":\"end\",\"dumpSeq\":-1,\"records\":0}\n", f);
  }
  for (size_t i = 0; i < a->n_unknown; i++) {
    const an_unknown* u = &a->unknown[i];
    fputs("{\"type\":\"dump\",\"schema\":" PT_FORMAT_STR(PT_FORMAT_DUMP_SCHEMA) ",\"host\":", f);
    an_put_str(f, u->host);
    fprintf(f, ",\"pid\":%d,\"rank\":-1,\"commHash\":", u->pid);
    an_put_hash(f, u->comm);
    if (u->trigger != AN_TRIG_UNKNOWN) fprintf(f, ",\"trigger\":\"%s\"", an_trigger_name(u->trigger));
    fprintf(f, ",\"dumpSeq\":%" PRId64, u->seq);
    put_opt(f, "round", u->round, -1);
    fputs("}\n", f);
    fprintf(f, "{\"type\":\"end\",\"dumpSeq\":%" PRId64 ",\"records\":0}\n", u->seq);
  }
  for (size_t i = 0; i < a->n_inputs; i++)
    if (a->inputs[i].error || a->inputs[i].n_errors) input_line(f, &a->inputs[i]);
  metrics(f, &a->mset);
  return ferror(f) ? PT_AN_EIO : 0;
}

int pt_analysis_write_summary_path(const pt_analysis* a, const char* path) {
  return an_write_output(a, path, pt_analysis_write_summary);
}
