/*
 * metrics_out.c — one read of a trace's step metrics (the snapshot) and the
 * two forms the dumper writes it in (docs/metrics.md):
 *
 *   Prometheus text exposition format 0.0.4, the format node_exporter's
 *   textfile collector and Prometheus read: counters, gauges and
 *   histograms with labels host, rank, comm, comm_name, peer, channel,
 *   direction. Histogram buckets are the octave bounds of the recorded
 *   buckets (every fourth bound), the same on every host, so series
 *   aggregate across ranks.
 *
 *   JSON lines: a "metrics" header per communicator, one "edge" per edge
 *   with its sums, quantiles and every non-empty bucket, an "end" line.
 *
 * Numbers are printed from integers only (seconds as "S.NNNNNNNNN"), so the
 * host's LC_NUMERIC cannot put a comma in them.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format/format.h"
#include "trace/clock.h"
#include "trace/jline.h"
#include "trace/metrics.h"
#include "trace/slab.h"

struct pt_metrics_snap {
  pt_metric_edge* e;
  size_t n, cap;
  uint64_t unmeasured, bytes;
  int64_t time_ns;
  int channels;
  int oom;
};

static void keep(void* arg, const pt_metric_edge* e) {
  pt_metrics_snap* s = arg;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    pt_metric_edge* ne = realloc(s->e, cap * sizeof *ne);
    if (!ne) {
      s->oom = 1;
      return;
    }
    s->e = ne;
    s->cap = cap;
  }
  s->e[s->n++] = *e;
}

/* (peer, channel, direction), the aggregate edge before its channels. */
static int by_edge(const void* a, const void* b) {
  const pt_metric_edge* x = a;
  const pt_metric_edge* y = b;
  if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
  if (x->is_send != y->is_send) return x->is_send ? -1 : 1;
  return (x->channel > y->channel) - (x->channel < y->channel);
}

pt_metrics_snap* pt_trace_metrics_snapshot(const pt_trace* t) {
  pt_metrics_snap* s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->time_ns = pt_clock_realtime_ns();
  s->unmeasured = pt_trace_metrics_unmeasured(t);
  s->bytes = pt_trace_metrics_bytes(t);
  s->channels = t && t->metrics ? t->metrics->channels : 0;
  pt_trace_metric_edges(t, keep, s);
  if (s->oom) {
    pt_metrics_snap_free(s);
    return NULL;
  }
  if (s->n) qsort(s->e, s->n, sizeof *s->e, by_edge);
  return s;
}

void pt_metrics_snap_free(pt_metrics_snap* s) {
  if (!s) return;
  free(s->e);
  free(s);
}

size_t pt_metrics_snap_edges(const pt_metrics_snap* s) { return s ? s->n : 0; }

/* ---- Prometheus text ---- */

typedef struct {
  char b[2048];
  int len;
} pline;

static void pput(pline* l, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void pput(pline* l, const char* fmt, ...) {
  if (l->len >= (int)sizeof l->b) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(l->b + l->len, sizeof l->b - (size_t)l->len, fmt, ap);
  va_end(ap);
  if (w > 0) l->len += w;
  if (l->len > (int)sizeof l->b - 1) l->len = (int)sizeof l->b - 1;
}

/* A label value: backslash, double quote and newline escaped (0.0.4). */
static void plabel(pline* l, const char* name, const char* v) {
  pput(l, "%s%s=\"", l->len && l->b[l->len - 1] != '{' ? "," : "", name);
  for (const char* p = v ? v : ""; *p && l->len < (int)sizeof l->b - 8; p++) {
    if (*p == '\\' || *p == '"') pput(l, "\\%c", *p);
    else if (*p == '\n') pput(l, "\\n");
    else l->b[l->len++] = *p;
  }
  pput(l, "\"");
}

/* Nanoseconds as seconds, exactly: "S.NNNNNNNNN". */
static void pseconds(pline* l, uint64_t ns) {
  pput(l, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

static void comm_labels(pline* l, const pt_metrics_meta* m) {
  char v[32];
  plabel(l, "host", m->host);
  snprintf(v, sizeof v, "%d", m->rank);
  plabel(l, "rank", v);
  snprintf(v, sizeof v, "%" PRIu64, m->comm_hash);
  plabel(l, "comm", v);
  plabel(l, "comm_name", m->comm_name);
}

static void edge_labels(pline* l, const pt_metrics_meta* m, const pt_metric_edge* e) {
  char v[32];
  comm_labels(l, m);
  snprintf(v, sizeof v, "%d", e->peer);
  plabel(l, "peer", v);
  if (e->channel < 0) snprintf(v, sizeof v, "all");
  else snprintf(v, sizeof v, "%d", e->channel);
  plabel(l, "channel", v);
  plabel(l, "direction", e->is_send ? "send" : "recv");
}

static int family(pt_line_fn emit, void* arg, const char* name, const char* type, const char* help) {
  pline l = {.len = 0};
  pput(&l, "# HELP %s %s", name, help);
  emit(arg, l.b, l.len);
  l.len = 0;
  pput(&l, "# TYPE %s %s", name, type);
  emit(arg, l.b, l.len);
  return 2;
}

enum { V_OPS, V_IN_FLIGHT, V_STEPS, V_BYTES, V_SIZED, V_BUSY, V_TPUT, V_CREDIT };

static uint64_t throughput(const pt_metric_edge* e) {
  return e->busy_ns > 0 ? (uint64_t)((double)e->bytes * 1e9 / e->busy_ns) : 0;
}

static int scalar(const pt_metrics_snap* s, const pt_metrics_meta* m, pt_line_fn emit, void* arg, int what,
                  const char* name, const char* type, const char* help) {
  int lines = family(emit, arg, name, type, help);
  for (size_t i = 0; i < s->n; i++) {
    const pt_metric_edge* e = &s->e[i];
    if (what == V_CREDIT && !e->is_send) continue;
    pline l = {.len = 0};
    pput(&l, "%s{", name);
    edge_labels(&l, m, e);
    pput(&l, "} ");
    switch (what) {
      case V_OPS: pput(&l, "%" PRIu64, e->ops); break;
      case V_IN_FLIGHT: pput(&l, "%u", e->in_flight); break;
      case V_STEPS: pput(&l, "%" PRIu64, e->steps); break;
      case V_BYTES: pput(&l, "%" PRIu64, e->bytes); break;
      case V_SIZED: pput(&l, "%" PRIu64, e->sized_steps); break;
      case V_BUSY: pseconds(&l, (uint64_t)e->busy_ns); break;
      case V_TPUT: pput(&l, "%" PRIu64, throughput(e)); break;
      default: pseconds(&l, e->credit_ns); break;
    }
    emit(arg, l.b, l.len);
    lines++;
  }
  return lines;
}

/* A histogram family: time (ns, printed in seconds) or bytes. */
static int histogram(const pt_metrics_snap* s, const pt_metrics_meta* m, pt_line_fn emit, void* arg, int which,
                     const char* name, const char* help) {
  int lines = family(emit, arg, name, "histogram", help);
  const int bytes = which < 0;
  for (size_t i = 0; i < s->n; i++) {
    const pt_metric_edge* e = &s->e[i];
    pline lab = {.len = 0};
    edge_labels(&lab, m, e);
    const uint64_t* h = bytes ? e->hb : e->h[which];
    const int nb = bytes ? PT_METRIC_BYTE_BUCKETS : PT_METRIC_TIME_BUCKETS;
    uint64_t cum = 0;
    for (int b = 0; b < nb - 1; b++) {
      cum += h[b];
      /* time: the octave bounds (bucket 0 is <= 128 ns = 2^7, then every
       * fourth bucket ends on a power of two); bytes: every bucket */
      if (!bytes && b % 4 != 0) continue;
      pline l = {.len = 0};
      pput(&l, "%s_bucket{%.*s,le=\"", name, lab.len, lab.b);
      if (bytes) pput(&l, "%" PRIu64, pt_metric_bytes_upper(b));
      else pseconds(&l, pt_metric_time_upper_ns(b));
      pput(&l, "\"} %" PRIu64, cum);
      emit(arg, l.b, l.len);
      lines++;
    }
    cum += h[nb - 1];
    pline l = {.len = 0};
    pput(&l, "%s_bucket{%.*s,le=\"+Inf\"} %" PRIu64, name, lab.len, lab.b, cum);
    emit(arg, l.b, l.len);
    l.len = 0;
    pput(&l, "%s_sum{%.*s} ", name, lab.len, lab.b);
    if (bytes) pput(&l, "%" PRIu64, e->bytes);
    else pseconds(&l, e->sum_ns[which]);
    emit(arg, l.b, l.len);
    l.len = 0;
    pput(&l, "%s_count{%.*s} %" PRIu64, name, lab.len, lab.b, cum);
    emit(arg, l.b, l.len);
    lines += 3;
  }
  return lines;
}

static int comm_scalar(pt_line_fn emit, void* arg, const pt_metrics_meta* m, const char* name, const char* type,
                       const char* help, uint64_t v) {
  int lines = family(emit, arg, name, type, help);
  pline l = {.len = 0};
  pput(&l, "%s{", name);
  comm_labels(&l, m);
  pput(&l, "} %" PRIu64, v);
  emit(arg, l.b, l.len);
  return lines + 1;
}

/* The families, in the order printed. */
static const struct {
  int what;
  const char *name, *type, *help;
} scalars[] = {
    {V_OPS, "proxytrace_ops_total", "counter", "Proxy operations registered on the edge."},
    {V_IN_FLIGHT, "proxytrace_ops_in_flight", "gauge", "Proxy operations of the edge registered and not complete."},
    {V_STEPS, "proxytrace_steps_total", "counter", "Steps (transfers) of the edge that completed."},
    {V_BYTES, "proxytrace_bytes_total", "counter", "Bytes of the edge's transfers, where the host reports them."},
    {V_SIZED, "proxytrace_sized_steps_total", "counter", "Transfers whose size the host reported."},
    {V_BUSY, "proxytrace_busy_seconds_total", "counter", "Time the edge had operations in flight."},
    {V_TPUT, "proxytrace_throughput_bytes_per_second", "gauge", "bytes_total over busy_seconds_total."},
    {V_CREDIT, "proxytrace_send_credit_wait_seconds_total", "counter",
     "Send steps: time from the GPU's data being ready to the network taking it (receiver's buffer), part of the "
     "network time."},
};
static const struct {
  int which; /* PT_METRIC_*, or -1 for bytes */
  const char *name, *help;
} histograms[] = {
    {PT_METRIC_GPU, "proxytrace_step_gpu_wait_seconds",
     "Per step: send, posted to the GPU until its data is ready; recv, handed to the GPU until consumed."},
    {PT_METRIC_NET, "proxytrace_step_network_seconds",
     "Per step: send, data ready until the network completed it; recv, receive posted until the data arrived."},
    {PT_METRIC_STEP, "proxytrace_step_seconds", "Per step: posted until done."},
    {-1, "proxytrace_step_bytes", "Per step: bytes the host reported."},
};

int pt_metrics_prom(const pt_metrics_snap* s, const pt_metrics_meta* m, pt_line_fn emit, void* arg) {
  int n = 0;
  for (size_t i = 0; i < sizeof scalars / sizeof *scalars; i++)
    n += scalar(s, m, emit, arg, scalars[i].what, scalars[i].name, scalars[i].type, scalars[i].help);
  for (size_t i = 0; i < sizeof histograms / sizeof *histograms; i++)
    n += histogram(s, m, emit, arg, histograms[i].which, histograms[i].name, histograms[i].help);
  n += comm_scalar(emit, arg, m, "proxytrace_unmeasured_ops_total", "counter",
                   "Operations not measured: no metrics memory handed over yet.", s->unmeasured);
  n += comm_scalar(emit, arg, m, "proxytrace_metrics_memory_bytes", "gauge",
                   "Memory the communicator's metrics hold.", s->bytes);
  return n;
}

/* ---- JSON lines ---- */

static void jhist(pt_jline* j, const char* key, const uint64_t* h, int nb, int bytes) {
  pt_jput(j, ",\"%s\":[", key);
  int first = 1;
  for (int b = 0; b < nb; b++) {
    if (!h[b]) continue;
    const uint64_t up = bytes ? pt_metric_bytes_upper(b) : pt_metric_time_upper_ns(b);
    if (up == UINT64_MAX) pt_jput(j, "%s[null,%" PRIu64 "]", first ? "" : ",", h[b]);
    else pt_jput(j, "%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", up, h[b]);
    first = 0;
  }
  pt_jput(j, "]");
}

int pt_metrics_json(const pt_metrics_snap* s, const pt_metrics_meta* m, pt_line_fn emit, void* arg) {
  enum { LINE = 32768 };
  char* buf = malloc(LINE);
  if (!buf) return -1;
  pt_jline j = {buf, LINE, 0};
  int lines = 0;
  pt_jput(&j, "{\"type\":\"metrics\",\"schema\":" PT_FORMAT_STR(PT_FORMAT_METRICS_SCHEMA) ",\"tool\":\"proxytrace\",\"version\":\"%d.%d.%d\",\"host\":",
          PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH);
  pt_jput_str(&j, m->host, 255);
  pt_jput(&j, ",\"pid\":%ld,\"rank\":%d,\"nRanks\":%d,\"commHash\":\"%" PRIu64 "\",\"commName\":", m->pid,
          m->rank, m->nranks, m->comm_hash);
  pt_jput_str(&j, m->comm_name && *m->comm_name ? m->comm_name : NULL, 255);
  pt_jput(&j,
          ",\"hostLib\":\"%s\",\"clock\":\"%s\",\"time_ns\":%" PRId64 ",\"intervalMs\":%u,\"final\":%s,"
          "\"channels\":%s,\"edges\":%zu,\"unmeasuredOps\":%" PRIu64 ",\"memoryBytes\":%" PRIu64 "}",
          m->host_lib ? m->host_lib : "unknown", pt_clock_source(), s->time_ns, m->interval_ms,
          m->final ? "true" : "false", s->channels ? "true" : "false", s->n, s->unmeasured, s->bytes);
  lines += pt_jline_emit(&j, emit, arg);
  static const char* const names[PT_METRIC_TIMES] = {"gpuWait", "network", "step"};
  for (size_t i = 0; i < s->n; i++) {
    const pt_metric_edge* e = &s->e[i];
    pt_jput(&j, "{\"type\":\"edge\",\"rank\":%d,\"peer\":%d,\"channel\":", m->rank, e->peer);
    if (e->channel < 0) pt_jput(&j, "null");
    else pt_jput(&j, "%d", e->channel);
    pt_jput(&j,
            ",\"dir\":\"%s\",\"ops\":%" PRIu64 ",\"inFlight\":%u,\"steps\":%" PRIu64 ",\"sizedSteps\":%" PRIu64
            ",\"bytes\":%" PRIu64 ",\"busy_ns\":%" PRIu64 ",\"throughput_Bps\":%" PRIu64,
            e->is_send ? "send" : "recv", e->ops, e->in_flight, e->steps, e->sized_steps, e->bytes,
            (uint64_t)e->busy_ns, throughput(e));
    if (e->is_send) pt_jput(&j, ",\"creditWait_ns\":%" PRIu64, e->credit_ns);
    for (int w = 0; w < PT_METRIC_TIMES; w++) {
      uint64_t n = 0;
      for (int b = 0; b < PT_METRIC_TIME_BUCKETS; b++) n += e->h[w][b];
      pt_jput(&j,
              ",\"%s\":{\"count\":%" PRIu64 ",\"sum_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p90_ns\":%" PRIu64
              ",\"p99_ns\":%" PRIu64,
              names[w], n, e->sum_ns[w], pt_metric_time_quantile(e->h[w], 0.5),
              pt_metric_time_quantile(e->h[w], 0.9), pt_metric_time_quantile(e->h[w], 0.99));
      jhist(&j, "buckets", e->h[w], PT_METRIC_TIME_BUCKETS, 0);
      pt_jput(&j, "}");
    }
    jhist(&j, "bytesBuckets", e->hb, PT_METRIC_BYTE_BUCKETS, 1);
    pt_jput(&j, "}");
    lines += pt_jline_emit(&j, emit, arg);
  }
  pt_jput(&j, "{\"type\":\"end\",\"edges\":%zu}", s->n);
  lines += pt_jline_emit(&j, emit, arg);
  free(buf);
  return lines;
}
