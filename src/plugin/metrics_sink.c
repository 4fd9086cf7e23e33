/*
 * metrics_sink.c — the step metrics files (docs/metrics.md): per rank and
 * communicator, in PROXYTRACE_METRICS_DIR,
 *
 *   proxytrace-metrics-<host>-<pid>-r<rank>-<commHash>.prom    Prometheus text
 *   proxytrace-metrics-<host>-<pid>-r<rank>-<commHash>.jsonl   JSON lines
 *
 * each rewritten whole at every export: written to a hidden temporary file
 * in the same directory, then renamed over the old one, so a reader (the
 * node_exporter textfile collector, `proxytrace top`) sees the previous
 * file or the new one, never half of one. One file per communicator, not
 * per process, so a communicator's last figures stay on disk after it is
 * destroyed while the process goes on (its finalize writes them, marked
 * final). Files are created without following symbolic links, mode 0644
 * less the umask. The dumper thread writes them every
 * PROXYTRACE_METRICS_INTERVAL_MS, and finalize once more — once the
 * communicator's rank and commHash are known (NCCL 2.23-2.26 say them only
 * with its first operations).
 *
 * Nothing here stops recording: a directory that cannot be created or
 * written, or a write error, is said once through the host log, and that
 * export is skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/plugin.h"

static atomic_flag said_dir = ATOMIC_FLAG_INIT, said_write = ATOMIC_FLAG_INIT, said_mem = ATOMIC_FLAG_INIT;

/* The dumper's export and finalize's may meet on one communicator (each on
 * its own reference): one writer at a time, and none after the final one.
 * The host's logger is called after it is released, and no other lock is
 * taken under it. The fork handlers take it too (context.c). */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

void pt_metrics_fork_lock(void) { pthread_mutex_lock(&write_lock); }
void pt_metrics_fork_unlock(void) { pthread_mutex_unlock(&write_lock); }

typedef struct {
  char* b;
  size_t n, cap;
  int oom;
} membuf;

static void to_mem(void* arg, const char* line, int len) {
  membuf* m = arg;
  if (m->oom || len < 0) return;
  if (m->n + (size_t)len + 1 > m->cap) {
    size_t cap = m->cap ? m->cap : 65536;
    while (cap < m->n + (size_t)len + 1) cap *= 2;
    char* nb = realloc(m->b, cap);
    if (!nb) {
      m->oom = 1;
      return;
    }
    m->b = nb;
    m->cap = cap;
  }
  memcpy(m->b + m->n, line, (size_t)len);
  m->n += (size_t)len;
  m->b[m->n++] = '\n';
}

/* `data` to dir/name through dir/.name.tmp and a rename; errno on failure. */
static int replace_file(const char* dir, const char* name, const membuf* data) {
  char tmp[PT_DUMP_DIR_MAX + 512], path[PT_DUMP_DIR_MAX + 512];
  if (snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name) >= (int)sizeof tmp ||
      snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return ENAMETOOLONG;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return errno;
  struct stat st;
  int err = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
  for (size_t off = 0; !err && off < data->n;) {
    ssize_t w = write(fd, data->b + off, data->n - off);
    if (w > 0) off += (size_t)w;
    else if (w < 0 && errno == EINTR) continue;
    else err = w < 0 ? errno : EIO;
  }
  if (close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err) unlink(tmp);
  return err;
}

enum { SAID_NONE, SAID_DIR, SAID_WRITE, SAID_MEM };

/* Writes the two files; what to say (SAID_*) and errno in *err. */
static int write_locked(pt_ctx* c, int final, int* err) {
  const pt_dump_settings* s = pt_dump_settings_get();
  const char* dir = s->metrics_dir;
  struct stat st;
  if (stat(dir, &st) != 0 && mkdir(dir, 0755) != 0 && errno != EEXIST) {
    *err = errno;
    return SAID_DIR;
  }
  pt_metrics_snap* snap = pt_trace_metrics_snapshot(c->trace);
  membuf prom = {0}, json = {0};
  const pt_metrics_meta m = {.host = pt_sink_host_name(c), .pid = (long)pt_self_pid(),
                             .rank = pt_trace_rank(c->trace), .nranks = c->nranks > 0 ? c->nranks : 0,
                             .comm_hash = atomic_load(&c->comm_hash), .comm_name = c->name[0] ? c->name : NULL,
                             .host_lib = pt_sink_host_lib(c), .interval_ms = s->metrics_ms, .final = final};
  int said = SAID_MEM;
  if (snap && pt_metrics_prom(snap, &m, to_mem, &prom) >= 0 && pt_metrics_json(snap, &m, to_mem, &json) >= 0 &&
      !prom.oom && !json.oom) {
    char name[512];
    int base = snprintf(name, sizeof name, "proxytrace-metrics-%s-%ld-r%d-%" PRIu64, m.host, m.pid, m.rank,
                        m.comm_hash);
    *err = base > 0 && (size_t)base + 8 < sizeof name ? 0 : ENAMETOOLONG;
    if (!*err) {
      strcpy(name + base, ".prom");
      *err = replace_file(dir, name, &prom);
    }
    if (!*err) {
      strcpy(name + base, ".jsonl");
      *err = replace_file(dir, name, &json);
    }
    said = *err ? SAID_WRITE : SAID_NONE;
  }
  free(prom.b);
  free(json.b);
  pt_metrics_snap_free(snap);
  return said;
}

int pt_metrics_write(pt_ctx* c, int final) {
  const pt_dump_settings* s = pt_dump_settings_get();
  if (!pt_trace_metrics_on(c->trace) || !s->metrics_dir[0]) return 0;
  /* NCCL 2.23-2.26 say the rank with the first op and the commHash with the
   * first collective: until then nothing was measured, and a file named
   * r-1-0 would be left behind once they are known. */
  if (pt_trace_rank(c->trace) < 0 || atomic_load(&c->comm_hash) == 0) return 0;
  int err = 0, said = SAID_NONE;
  pthread_mutex_lock(&write_lock);
  if (!c->metrics_final) {
    said = write_locked(c, final, &err);
    c->metrics_final = final;
  }
  pthread_mutex_unlock(&write_lock);
  if (said == SAID_DIR && !atomic_flag_test_and_set(&said_dir))
    PT_LOG_WARN(c->log, "proxytrace: cannot create PROXYTRACE_METRICS_DIR %s: %s; no metrics files",
                s->metrics_dir, strerror(err));
  else if (said == SAID_WRITE && !atomic_flag_test_and_set(&said_write))
    PT_LOG_WARN(c->log, "proxytrace: cannot write metrics files in %s (%s); this export is skipped",
                s->metrics_dir, strerror(err));
  else if (said == SAID_MEM && !atomic_flag_test_and_set(&said_mem))
    PT_LOG_WARN(c->log, "proxytrace: no memory for a metrics export; skipped until there is");
  return said == SAID_NONE ? 0 : -1;
}

static void service_one(pt_ctx* c, void* arg) {
  (void)arg;
  pt_trace_metrics_service(c->trace);
}

void pt_metrics_service_all(void) { pt_ctx_for_each(service_one, NULL); }
