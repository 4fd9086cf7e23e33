/*
 * progress_out.c — the progress state (progress.h) as a dump prints it:
 * text lines after the legacy records, JSON lines after the "op" lines.
 *
 * One routine writes both: each line is a type and a list of fields, which
 * the text writes as `proxytrace <type>: key=value …` (lines a reader of
 * RCCL's format skips, as it skips the plugin's other "proxytrace" lines:
 * they carry no record fields) and the JSON as {"type":"<type>",…} objects
 * of types a schema-1 reader skips (docs/dump-json.md). A value the host did
 * not give is left out of the text and null in the JSON.
 */
#include <inttypes.h>
#include <stdio.h>

#include "trace/dump.h"
#include "trace/jline.h"

typedef struct {
  pt_jline j;
  int json;
  const pt_dump* d;
} fields;

static void begin(fields* f, const char* type, uint64_t seq) {
  f->j.len = 0;
  if (f->json) pt_jput(&f->j, "{\"type\":\"%s\",\"dumpSeq\":%" PRIu64, type, seq);
  else pt_jput(&f->j, "proxytrace %s:", type);
  if (f->json) pt_jput(&f->j, ",\"rank\":%d", f->d->rank);
  else pt_jput(&f->j, " rank=%d", f->d->rank);
}

static void num(fields* f, const char* k, int64_t v) {
  pt_jput(&f->j, f->json ? ",\"%s\":%" PRId64 : " %s=%" PRId64, k, v);
}

static void unum(fields* f, const char* k, uint64_t v) {
  pt_jput(&f->j, f->json ? ",\"%s\":%" PRIu64 : " %s=%" PRIu64, k, v);
}

/* A name; NULL: not given. */
static void name(fields* f, const char* k, const char* v) {
  if (f->json) {
    pt_jput(&f->j, ",\"%s\":", k);
    pt_jput_str(&f->j, v, 64);
  } else if (v) {
    pt_jput(&f->j, " %s=%s", k, v);
  }
}

static void code(fields* f, const char* k, int c, const char* (*nm)(int)) {
  name(f, k, c == PT_CODE_NONE ? NULL : nm(c));
}

/* Host ticks, or GPU nanoseconds (`gpu`), as Unix ns; 0: not given. */
static void when(fields* f, const char* k, uint64_t v, int gpu) {
  if (v) num(f, k, gpu ? (int64_t)v : pt_ticks_to_unix_ns(&f->d->cal, v));
  else if (f->json) pt_jput(&f->j, ",\"%s\":null", k);
}

static int end(fields* f, pt_lines* l) {
  if (f->json) pt_jput(&f->j, "}");
  pt_lines_put(l, f->j.b, (int)(f->j.len < f->j.cap ? f->j.len : f->j.cap - 1));
  return 1;
}

static const char* kind_name(int k) { return k == 0 ? "coll" : k == 1 ? "p2p" : NULL; }

static void task_ref(fields* f, const char* kind, const char* func, const char* seq, int k, int fn, uint64_t s) {
  name(f, kind, kind_name(k));
  name(f, func, k < 2 ? pt_func_name(fn) : NULL);
  if (k < 2) unum(f, seq, s);
  else if (f->json) pt_jput(&f->j, ",\"%s\":null", seq);
}

static int print(const pt_dump* d, uint64_t seq, pt_lines* l, int json) {
  const pt_progress_view* p = d->prog;
  if (!p || !pt_progress_any(p)) return 0;
  char buf[1024];
  fields f = {{buf, sizeof buf, 0}, json, d};
  int lines = 0;
  begin(&f, "progress", seq);
  unum(&f, "colls", p->n_tasks[0]);
  unum(&f, "p2ps", p->n_tasks[1]);
  unum(&f, "kernelChStarts", p->kch_starts);
  unum(&f, "kernelChStops", p->kch_stops);
  if (p->torn || json) unum(&f, "busy", p->torn);
  lines += end(&f, l);
  for (int k = 0; k < 2; k++)
    for (uint32_t i = 0; i < p->n_kept[k]; i++) {
      const pt_task_info* t = &p->task[k][i].info;
      begin(&f, k ? "p2p" : "coll", seq);
      unum(&f, "seq", t->seq);
      name(&f, "func", pt_func_name(t->func));
      unum(&f, "count", t->count);
      code(&f, "datatype", t->dtype, pt_dtype_name);
      num(&f, k ? "peer" : "root", t->root_or_peer);
      if (!k) code(&f, "algo", t->algo, pt_algo_name);
      if (!k) code(&f, "proto", t->proto, pt_proto_name);
      num(&f, "nChannels", t->nchannels);
      if (t->user_tag) pt_jput(&f.j, json ? ",\"userTag\":\"0x%" PRIx64 "\"" : " userTag=0x%" PRIx64, t->user_tag);
      when(&f, "start_ns", p->task[k][i].t_start, 0);
      lines += end(&f, l);
    }
  for (uint32_t i = 0; i < p->n_ch; i++) {
    const pt_prog_ch_view* c = &p->ch[i];
    begin(&f, "kernelCh", seq);
    num(&f, "channel", c->channel);
    unum(&f, "starts", c->starts);
    unum(&f, "stops", c->stops);
    task_ref(&f, "startKind", "startFunc", "startSeq", c->start_kind, c->start_func, c->start_seq);
    when(&f, "start_ns", c->t_start, 0);
    when(&f, "gpuStart_ns", c->gpu_start, 1);
    if (c->stops) {
      task_ref(&f, "stopKind", "stopFunc", "stopSeq", c->stop_kind, c->stop_func, c->stop_seq);
    } else if (json) {
      pt_jput(&f.j, ",\"stopKind\":null,\"stopFunc\":null,\"stopSeq\":null");
    }
    when(&f, "stop_ns", c->stops ? c->t_stop : 0, 0);
    when(&f, "gpuStop_ns", c->stops ? c->gpu_stop : 0, 1);
    lines += end(&f, l);
  }
  return lines;
}

int pt_progress_text(const pt_dump* d, pt_lines* l) { return print(d, 0, l, 0); }
int pt_progress_json(const pt_dump* d, const pt_dump_meta* m, pt_lines* l) { return print(d, m->seq, l, 1); }
