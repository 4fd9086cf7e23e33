/*
 * rccl_host.c — the RCCL stand-in of rccl_host.h.
 */
#include "rccl_host.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

rh_log rh_captured;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void rh_open(rh_plugin* h, const char* path) {
  if (!path) path = getenv("PT_PLUGIN_SO");
  if (!path) path = "build/librccl-profiler-proxytrace.so";
  h->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h->so) fail_msg("dlopen %s: %s", path, dlerror());
  h->p = dlsym(h->so, "ncclProfiler_v6");
  h->dump = (ncclProfilerProxyTraceDump_t)dlsym(h->so, "ncclProfilerProxyTraceDump");
  assert_non_null(h->p);
  assert_non_null(h->dump);
}

void rh_close(rh_plugin* h) {
  if (h->so) dlclose(h->so);
  h->so = NULL;
}

void* rh_init(rh_plugin* h, uint64_t comm_hash, int rank, int nranks) {
  void* ctx = NULL;
  int mask = 0;
  assert_int_equal(h->p->init(&ctx, comm_hash, &mask, "test", 2, nranks, rank, rh_logger),
                   ncclSuccess);
  assert_non_null(ctx);
  /* ProxyDiag under both numberings: RCCL's before 2.31 (15) and 2.31's (16) */
  assert_int_equal(mask, ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep |
                             ncclProfileKernelCh | ncclProfileProxyDiag | ncclProfileProxyDiag_v7);
  return ctx;
}

void rh_op_start(rh_plugin* h, void* ctx, rh_op* op, const rh_op_desc* d) {
  memset(op, 0, sizeof *op);
  op->h = h;
  op->ctx = ctx;
  op->d = *d;
  if (op->d.slice_steps <= 0) op->d.slice_steps = 1;
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyOp;
  e.rank = 0;
  e.proxyOp.pid = getpid();
  e.proxyOp.channelId = (uint8_t)d->channel;
  e.proxyOp.peer = d->peer;
  e.proxyOp.nSteps = (d->raw_nsteps + op->d.slice_steps - 1) / op->d.slice_steps;
  e.proxyOp.chunkSize = d->chunk_size;
  e.proxyOp.isSend = d->is_send;
  e.proxyOp.commHash = d->comm_hash;
  e.proxyOp.opCount = d->op_count;
  e.proxyOp.traceFuncIdx = d->func;
  e.proxyOp.traceProtocol = d->proto;
  e.proxyOp.tracePattern = d->pattern;
  e.proxyOp.traceTotalBytes = d->total_bytes;
  e.proxyOp.proxyNbytes = d->nbytes;
  e.proxyOp.rawProxyNsteps = d->raw_nsteps;
  op->handle = (void*)0x1;
  assert_int_equal(h->p->startEvent(ctx, &op->handle, &e), ncclSuccess);
}

void* rh_stock_op_active(rh_plugin* h, void* ctx, int peer, int nsteps, int is_send) {
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyOp;
  e.proxyOp.pid = getpid();
  e.proxyOp.peer = peer;
  e.proxyOp.nSteps = nsteps;
  e.proxyOp.isSend = is_send;
  void* op = NULL;
  h->p->startEvent(ctx, &op, &e);
  assert_non_null(op);
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  h->p->recordEventState(op, ncclProfilerProxyOpInProgress_v4, &a);
  return op;
}

int rh_diag_state = ncclProfilerProxyDiagUpdate;

void rh_diag(rh_op* op, int kind, int64_t value, unsigned flags) {
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  a.proxyDiag.counterKind = (uint8_t)kind;
  a.proxyDiag.flags = (uint16_t)flags;
  a.proxyDiag.value = value;
  op->h->p->recordEventState(op->handle, (ncclProfilerEventState_v6_t)rh_diag_state, &a);
}

void rh_op_in_progress(rh_op* op) {
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  op->h->p->recordEventState(op->handle, ncclProfilerProxyOpInProgress_v4, &a);
}

static void step_state(rh_op* op, int step, int state, size_t size) {
  ncclProfilerEventStateArgs_v6_t a;
  memset(&a, 0, sizeof a);
  a.proxyStep.transSize = size;
  op->h->p->recordEventState(op->steps[step % 8], (ncclProfilerEventState_v6_t)state, &a);
}

static void step_start(rh_op* op, int step) {
  ncclProfilerEventDescr_v6_t e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyStep;
  e.parentObj = op->handle;
  e.proxyStep.step = step;
  op->steps[step % 8] = (void*)0x1;
  op->h->p->startEvent(op->ctx, &op->steps[step % 8], &e);
}

static void step_stop(rh_op* op, int step) { op->h->p->stopEvent(op->steps[step % 8]); }

void rh_advance(rh_op* op, int64_t posted, int64_t received, int64_t transmitted, int64_t done,
                int polls) {
  const int S = op->d.slice_steps;
  const size_t size = op->d.chunk_size > 0 ? (size_t)op->d.chunk_size : 4096;
  if (op->d.is_send) {
    while (op->posted < posted) {
      int step = (int)(op->posted / S);
      step_start(op, step);
      step_state(op, step, ncclProfilerProxyStepSendGPUWait, size);
      op->posted += S;
      rh_diag(op, ncclProxyDiagPosted, op->posted, NCCL_PROXY_DIAG_FLAG_TIMESTAMP);
      for (int k = 0; k < polls; k++) { /* waiting for the GPU: every poll */
        rh_diag(op, ncclProxyDiagRecvTail, 1000 + op->transmitted, 0);
        rh_diag(op, ncclProxyDiagTailOrHead, 1000 + op->transmitted, 0);
        rh_diag(op, ncclProxyDiagFifoSzOrHeadCache, -1, 0);
      }
    }
    while (op->transmitted < transmitted) {
      int step = (int)(op->transmitted / S);
      step_state(op, step, ncclProfilerProxyStepSendPeerWait_v4, size);
      rh_diag(op, ncclProxyDiagKernelCopyReady, op->transmitted + S, 0);
      rh_diag(op, ncclProxyDiagKernelCopyReady, 0,
              NCCL_PROXY_DIAG_FLAG_TIMESTAMP | NCCL_PROXY_DIAG_FLAG_COUNTER_SKIP);
      step_state(op, step, ncclProfilerProxyStepSendWait, size);
      op->transmitted += S;
      rh_diag(op, ncclProxyDiagTransmitted, op->transmitted, 0);
    }
    while (op->done < done) {
      int step = (int)(op->done / S);
      op->done += S;
      rh_diag(op, ncclProxyDiagDone, op->done, 0);
      step_stop(op, step);
    }
    return;
  }
  while (op->posted < posted) {
    int step = (int)(op->posted / S);
    step_start(op, step);
    op->posted += S;
    rh_diag(op, ncclProxyDiagPosted, op->posted, 0); /* recv: no timestamp */
    step_state(op, step, ncclProfilerProxyStepRecvWait, size);
  }
  while (op->received < received) {
    int step = (int)(op->received / S);
    op->received += S;
    rh_diag(op, ncclProxyDiagReceived, op->received, 0);
    step_state(op, step, ncclProfilerProxyStepRecvFlushWait, size);
  }
  while (op->transmitted < transmitted) {
    int step = (int)(op->transmitted / S);
    op->transmitted += S;
    rh_diag(op, ncclProxyDiagTransmitted, op->transmitted, 0);
    step_state(op, step, ncclProfilerProxyStepRecvGPUWait, size);
    rh_diag(op, ncclProxyDiagRecvTail, 1000 + op->transmitted, 0);
  }
  while (op->done < done) {
    for (int k = 0; k < polls; k++) { /* waiting for the GPU to consume: every poll */
      rh_diag(op, ncclProxyDiagTailOrHead, 1000 + op->done, 0);
      rh_diag(op, ncclProxyDiagFifoSzOrHeadCache, 1000 + op->done, 0);
    }
    int step = (int)(op->done / S);
    op->done += S;
    rh_diag(op, ncclProxyDiagDone, op->done, 0);
    step_stop(op, step);
  }
}

void rh_op_active(rh_plugin* h, void* ctx, rh_op* op, const rh_op_desc* d, int64_t posted,
                  int64_t received, int64_t transmitted, int64_t done, int polls) {
  rh_op_start(h, ctx, op, d);
  rh_op_in_progress(op);
  rh_advance(op, posted, received, transmitted, done, polls);
}

void rh_op_stop(rh_op* op) { op->h->p->stopEvent(op->handle); }

void rh_run_full(rh_plugin* h, void* ctx, const rh_op_desc* d, int polls) {
  rh_op op;
  rh_op_start(h, ctx, &op, d);
  rh_op_in_progress(&op);
  const int64_t n = d->raw_nsteps;
  /* Keep at most NCCL_STEPS network steps in flight, as the host does. */
  while (op.done < n) {
    int64_t window = op.done + 8 * (int64_t)op.d.slice_steps;
    int64_t p = window < n ? window : n;
    rh_advance(&op, p, p, p, p, polls);
  }
  rh_op_stop(&op);
}

/* ---- log capture ---- */

void rh_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
               const char* fmt, ...) {
  (void)flags;
  (void)line;
  char buf[1024]; /* the host's buffer size: longer messages would be cut */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&log_lock);
  const int i = atomic_load_explicit(&rh_captured.n, memory_order_relaxed);
  if (i < RH_MAX_LINES) {
    rh_captured.level[i] = level;
    rh_captured.text[i] = strdup(buf);
    rh_captured.file[i] = strdup(file ? file : "");
    atomic_store_explicit(&rh_captured.n, i + 1, memory_order_release);
  }
  pthread_mutex_unlock(&log_lock);
}

void rh_log_clear(void) {
  pthread_mutex_lock(&log_lock);
  const int n = atomic_load_explicit(&rh_captured.n, memory_order_relaxed);
  atomic_store_explicit(&rh_captured.n, 0, memory_order_release);
  for (int i = 0; i < n; i++) {
    free(rh_captured.text[i]);
    free(rh_captured.file[i]);
  }
  pthread_mutex_unlock(&log_lock);
}

const char* rh_drop_line(void) {
  for (int i = 1; i < rh_captured.n && i < 5; i++) /* a WARN said at the dump may come first */
    if (!strncmp(rh_captured.text[i], "proxytrace dropped", 18)) return rh_captured.text[i];
  return "";
}

char* rh_take_jsonl(const char* dir, const char* tag) {
  DIR* d = opendir(dir);
  char* text = NULL;
  for (struct dirent* e; d && (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 6, ".jsonl") || !strstr(e->d_name, tag)) continue;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    FILE* f = fopen(p, "r");
    assert_non_null(f);
    text = calloc(1, 1 << 20);
    assert_non_null(text);
    size_t got = fread(text, 1, (1 << 20) - 1, f);
    text[got] = 0;
    fclose(f);
    unlink(p);
    break;
  }
  if (d) closedir(d);
  return text;
}

rh_plugin rh_the_plugin;

int rh_setup(void** state) {
  (void)state;
  rh_open(&rh_the_plugin, NULL);
  return 0;
}

int rh_teardown(void** state) {
  (void)state;
  rh_log_clear();
  rh_close(&rh_the_plugin);
  return 0;
}

int rh_legacy_lines(void) {
  for (int i = 0; i < rh_captured.n; i++)
    if (strstr(rh_captured.text[i], "proxytrace progress:")) return i;
  return rh_captured.n;
}

int rh_dump(rh_plugin* h, void* ctx) {
  rh_log_clear();
  h->dump(ctx, rh_logger);
  return rh_captured.n;
}

char* rh_masked_dump(void) {
  regex_t re;
  assert_int_equal(regcomp(&re, "(createT|lastT|postT|sendT):[1-9][0-9]*", REG_EXTENDED), 0);
  size_t cap = 1024, len = 0;
  char* out = malloc(cap);
  out[0] = 0;
  for (int i = 0; i < rh_captured.n; i++) {
    const char* p = rh_captured.text[i];
    regmatch_t m[2];
    while (*p) {
      size_t need = len + strlen(p) + 16;
      if (need > cap) {
        while (need > cap) cap *= 2;
        out = realloc(out, cap);
      }
      if (regexec(&re, p, 2, m, 0) == 0) {
        len += (size_t)sprintf(out + len, "%.*s:T", (int)(m[1].rm_eo), p);
        p += m[0].rm_eo;
      } else {
        len += (size_t)sprintf(out + len, "%s", p);
        break;
      }
    }
    out[len++] = '\n';
    out[len] = 0;
  }
  regfree(&re);
  return out;
}

int rh_golden(const char* name, const char* text) {
  const char* dir = getenv("PT_GOLDEN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/%s.txt", dir ? dir : "tests/golden", name);
  if (getenv("PT_UPDATE_GOLDEN")) {
    FILE* f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return 0;
  }
  FILE* f = fopen(path, "r");
  if (!f) {
    print_error("golden file %s missing (PT_UPDATE_GOLDEN=1 writes it)\n", path);
    return -1;
  }
  static char want[1 << 20];
  size_t n = fread(want, 1, sizeof want - 1, f);
  want[n] = 0;
  fclose(f);
  if (strcmp(want, text) == 0) return 0;
  print_error("dump differs from %s\n--- want\n%s--- got\n%s", path, want, text);
  return -1;
}

/* ---- dumps captured by threads of their own ---- */

static _Thread_local rh_capture* capturing;

rh_capture* rh_capture_new(int max_records) {
  rh_capture* c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->rec = calloc((size_t)max_records, sizeof *c->rec);
  assert_non_null(c->rec);
  c->max = max_records;
  return c;
}

void rh_capture_free(rh_capture* c) {
  if (!c) return;
  free(c->rec);
  free(c);
}

static void capture_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                           const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  rh_capture* c = capturing;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (c->lines++ == 0) {
    c->header_ok = !strncmp(buf, "commDump for all active ops mapSizeMB:", 38);
  } else if (!strncmp(buf, "proxytrace dropped", 18)) {
    c->drop_line = 1;
    snprintf(c->drops, sizeof c->drops, "%s", buf);
  } else if (!strncmp(buf, "proxytrace: ", 12)) {
    c->mid_write = 1;
    snprintf(c->mid_keys, sizeof c->mid_keys, "%s", buf);
  } else if (!strncmp(buf, "proxytrace host:", 16)) {
    /* the host line: no record */
  } else if (c->nrec < c->max) {
    snprintf(c->rec[c->nrec++], sizeof c->rec[0], "%s", buf);
  }
}

void rh_capture_dump(rh_plugin* h, void* ctx, rh_capture* c) {
  char (*rec)[1024] = c->rec;
  const int max = c->max;
  memset(c, 0, sizeof *c);
  c->rec = rec;
  c->max = max;
  capturing = c;
  h->dump(ctx, capture_logger);
  capturing = NULL;
}

long rh_field(const char* line, const char* name) {
  const char* p = strstr(line, name);
  return p ? strtol(p + strlen(name), NULL, 10) : -999;
}

int rh_count_in_files(const char* d, const char* suffix, const char* needle) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cat %s/*%s 2>/dev/null | grep -F -c -- '%s'", d, suffix, needle);
  FILE* p = popen(cmd, "r");
  assert_non_null(p);
  int n = 0;
  if (fscanf(p, "%d", &n) != 1) n = 0;
  pclose(p);
  return n;
}
