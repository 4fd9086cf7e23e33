/*
 * sink.c — where one communicator's dump goes: the dump files and the host
 * logger. One snapshot (src/trace/dump.c) is printed to every sink, so the
 * text and the JSON of a dump hold the same records.
 *
 *   files   with PROXYTRACE_DUMP_DIR, per rank and communicator
 *           DIR/proxytrace-<host>-<pid>-r<rank>-<commHash>.txt (the banner
 *           line, then the legacy lines) and .jsonl (docs/dump-json.md),
 *           appended per dump. The directory is created (one level, 0755)
 *           at the first dump if missing. Files are opened O_NOFOLLOW and
 *           O_NONBLOCK and must be regular files, so a symlink or FIFO
 *           planted in a shared directory is refused, not followed or
 *           blocked on; mode 0644 less the umask.
 *   logger  RCCL's dump hook prints its legacy lines exactly as before.
 *           Every other trigger prints the banner and the legacy lines at
 *           the host's WARN level — or, when the files took the dump, one
 *           line saying where they are. Without a logger (API v1-v3 give
 *           none) those lines go to standard error.
 *
 * Nothing here stops recording. A directory that cannot be created or
 * written, a refused file, a full disk: one message each per process
 * through the logger; the dump goes to the logger instead, except after a
 * write error (ENOSPC …), where that dump's lines are lost and counted
 * (lostDumps in the JSON header).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/plugin.h"

#define FILE_BUF 65536

static _Atomic uint64_t dump_seq, dump_rounds, lost;

uint64_t pt_sink_lost(void) { return atomic_load(&lost); }
uint64_t pt_dump_next_round(void) { return atomic_fetch_add(&dump_rounds, 1) + 1; }

enum { SAID_MKDIR, SAID_OPEN, SAID_LINK, SAID_NOTREG, SAID_FULL, SAID_WRITE, SAID_NOMEM, SAID_NUM };
static atomic_flag said[SAID_NUM];

/* ---- the host ---- */

static char host_name[256];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void read_host_name(void) {
  if (gethostname(host_name, sizeof host_name - 1) != 0 || !host_name[0]) strcpy(host_name, "unknown");
  for (char* p = host_name; *p; p++)
    if (*p == '/' || *p == ' ') *p = '_'; /* it goes into a file name */
}

/* The host library, settled from the ops once init could not tell. */
static int host_lib(pt_ctx* c, const pt_dump* d) {
  int lib = atomic_load(&c->host_lib);
  if (lib != PT_HOSTLIB_UNKNOWN) return lib;
  const unsigned o = pt_dump_origins(d);
  if (o & (1u << PT_ORIGIN_HOST)) lib = PT_HOSTLIB_RCCL; /* RCCL's ProxyOp fields */
  else if (o) lib = PT_HOSTLIB_NCCL;
  if (lib != PT_HOSTLIB_UNKNOWN) atomic_store(&c->host_lib, lib);
  return lib;
}

static const char* host_lib_name(int lib) {
  return lib == PT_HOSTLIB_RCCL ? "rccl" : lib == PT_HOSTLIB_NCCL ? "nccl" : "unknown";
}

const char* pt_sink_host_lib(pt_ctx* c) { return host_lib_name(atomic_load(&c->host_lib)); }

const char* pt_sink_host_name(void) {
  pthread_once(&host_once, read_host_name);
  return host_name;
}

/* ---- the logger ---- */

typedef struct {
  ncclDebugLogger_t log;
  int level;
} logger;

static void log_emit(void* arg, const char* line, int len) {
  const logger* l = arg;
  if (l->log) l->log(l->level, NCCL_ALL, "proxytrace", 0, "%.*s", len, line);
  else fprintf(stderr, "%.*s\n", len, line);
}

static void say(const logger* l, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const logger* l, const char* fmt, ...) {
  char buf[PT_DUMP_DIR_MAX + 512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  log_emit((void*)l, buf, n < (int)sizeof buf ? n : (int)sizeof buf - 1);
}

static int first_time(int what) { return !atomic_flag_test_and_set(&said[what]); }

/* ---- files ---- */

/* A dump file's buffer: the formatters write their lines straight into it
 * (pt_out), and it is written out whenever full. */
typedef struct {
  pt_out o;
  int fd;
  int err; /* errno of the first failed write */
  char buf[FILE_BUF];
} fbuf;

static void fb_flush(pt_out* o) {
  fbuf* f = o->arg;
  size_t off = 0;
  while (!f->err && off < o->len) {
    ssize_t w = write(f->fd, o->buf + off, o->len - off);
    if (w > 0) off += (size_t)w;
    else if (w < 0 && errno == EINTR) continue;
    else f->err = w < 0 ? errno : EIO;
  }
  o->len = 0;
}

/* One line of the caller's, with its newline. */
static void fb_line(fbuf* f, const char* line, int len) {
  if (len < 0) return;
  if ((size_t)len + 1 > sizeof f->buf) len = (int)sizeof f->buf - 1;
  if (f->o.len + (size_t)len + 1 > sizeof f->buf) fb_flush(&f->o);
  memcpy(f->buf + f->o.len, line, (size_t)len);
  f->o.len += (size_t)len;
  f->buf[f->o.len++] = '\n';
}

static int ensure_dir(const char* dir, const logger* l) {
  struct stat st;
  if (stat(dir, &st) == 0) return 0; /* exists; whether it takes files, open says */
  if (mkdir(dir, 0755) == 0 || errno == EEXIST) return 0;
  if (first_time(SAID_MKDIR))
    say(l, "proxytrace: cannot create PROXYTRACE_DUMP_DIR %s: %s; dumps go to the host log instead",
        dir, strerror(errno));
  return -1;
}

/* A dump file, opened for appending; -1 (said once per kind) if refused. */
static int open_dump_file(const char* path, const char* dir, const logger* l) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) {
    if (errno == ELOOP) {
      if (first_time(SAID_LINK))
        say(l, "proxytrace: %s is a symbolic link: not following it; this and later such dumps go "
               "to the host log instead", path);
    } else if (errno == ENXIO) {
      if (first_time(SAID_NOTREG))
        say(l, "proxytrace: %s is not a regular file: not writing to it; the dump goes to the host "
               "log instead", path);
    } else if (first_time(SAID_OPEN)) {
      say(l, "proxytrace: cannot write dump files in PROXYTRACE_DUMP_DIR %s: %s; dumps go to the "
             "host log instead", dir, strerror(errno));
    }
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (first_time(SAID_NOTREG))
      say(l, "proxytrace: %s is not a regular file: not writing to it; the dump goes to the host "
             "log instead", path);
    close(fd);
    return -1;
  }
  return fd;
}

/* Dumps run on any thread with no registry lock (context.c): two dumps of
 * one communicator write its files one after the other, not interleaved.
 * Held only while the files are written: no logger call under it. */
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;

/* Writes one dump to its two files; 0, or -2 when lost to a write error
 * (counted, said once). */
static int write_fds(const pt_dump* d, const pt_dump_meta* m, const int fds[2], const char* where,
                     const logger* l) {
  fbuf* f = malloc(sizeof *f);
  if (!f) return -2;
  int err = 0;
  pthread_mutex_lock(&files_lock);
  for (int k = 0; k < 2; k++) {
    f->o = (pt_out){.buf = f->buf, .cap = sizeof f->buf, .len = 0, .flush = fb_flush, .arg = f};
    f->fd = fds[k];
    f->err = 0;
    if (k == 0) {
      char banner[1024];
      fb_line(f, banner, pt_dump_banner(d, m, banner, sizeof banner));
      pt_dump_text_out(d, &f->o);
    } else {
      pt_dump_json_out(d, m, &f->o);
    }
    fb_flush(&f->o);
    if (f->err && !err) err = f->err;
  }
  pthread_mutex_unlock(&files_lock);
  free(f);
  if (!err) return 0;
  atomic_fetch_add(&lost, 1);
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
    if (first_time(SAID_FULL))
      say(l, "proxytrace: no room for dump files in %s (%s): this dump is lost, and so is any "
             "later one that does not fit (counted as lostDumps); recording goes on", where, strerror(err));
  } else if (first_time(SAID_WRITE)) {
    say(l, "proxytrace: cannot write dump files in %s (%s): this dump is lost (counted as "
           "lostDumps); recording goes on", where, strerror(err));
  }
  return -2;
}

/* Text and JSON files of one dump. 0 written, -1 refused (nothing written:
 * the caller logs the dump instead), -2 lost to a write error. */
static int write_files(const pt_dump* d, const pt_dump_meta* m, const char* dir, char* path,
                       size_t path_len, const logger* l) {
  if (ensure_dir(dir, l) != 0) return -1;
  int base = snprintf(path, path_len, "%s/proxytrace-%s-%ld-r%d-%" PRIu64, dir, m->host, m->pid,
                      pt_dump_rank(d), m->comm_hash);
  if (base < 0 || (size_t)base + 8 > path_len) {
    if (first_time(SAID_OPEN))
      say(l, "proxytrace: the dump file names in PROXYTRACE_DUMP_DIR %s are too long; dumps go to "
             "the host log instead", dir);
    return -1;
  }
  int fds[2];
  strcpy(path + base, ".txt");
  fds[0] = open_dump_file(path, dir, l);
  strcpy(path + base, ".jsonl");
  fds[1] = fds[0] >= 0 ? open_dump_file(path, dir, l) : -1;
  path[base] = 0;
  if (fds[1] < 0) {
    if (fds[0] >= 0) close(fds[0]);
    return -1;
  }
  int rc = write_fds(d, m, fds, dir, l);
  close(fds[0]);
  close(fds[1]);
  return rc;
}

/* ---- one dump ---- */

/* The snapshot of `c` and what its dump says about itself; NULL when out
 * of memory. */
static pt_dump* take(pt_ctx* c, pt_trigger trig, uint64_t round, pt_dump_meta* m, logger* l, int* lib) {
  pt_dump* d = pt_trace_snapshot(c->trace);
  l->log = c->log;
  l->level = NCCL_LOG_WARN;
  if (!d) return NULL;
  *lib = host_lib(c, d);
  l->level = *lib == PT_HOSTLIB_RCCL ? RCCL_LOG_WARN : NCCL_LOG_WARN;
  if (trig == PT_TRIG_HOOK && *lib != PT_HOSTLIB_RCCL) trig = PT_TRIG_API;
  pthread_once(&host_once, read_host_name);
  *m = (pt_dump_meta){
      .host = host_name, .pid = (long)pt_self_pid(), .nranks = c->nranks > 0 ? c->nranks : 0,
      .nnodes = c->nnodes > 0 ? c->nnodes : 0, .comm_hash = atomic_load(&c->comm_hash),
      .comm_name = c->name[0] ? c->name : NULL, .host_lib = host_lib_name(*lib), .profiler_api = c->api,
      .trigger = pt_trigger_name(trig), .seq = atomic_fetch_add(&dump_seq, 1) + 1, .round = round,
      .stall_ms = pt_dump_settings_get()->stall_ms, .lost_dumps = pt_sink_lost(),
      .last_progress_ticks = pt_trace_last_progress(c->trace)};
  return d;
}

int pt_sink_dump(pt_ctx* c, pt_trigger trig, uint64_t round, pt_line_fn hook_emit, void* hook_arg) {
  pt_dump_meta m;
  logger l;
  int lib;
  pt_diag_report(c);
  pt_dump* d = take(c, trig, round, &m, &l, &lib);
  if (!d) {
    if (hook_emit) return pt_trace_dump(c->trace, hook_emit, hook_arg); /* says why */
    if (first_time(SAID_NOMEM)) say(&l, "proxytrace: no memory for a dump; dumps are skipped until there is");
    return -1;
  }
  if (trig == PT_TRIG_FINALIZE && lib == PT_HOSTLIB_RCCL) { /* RCCL's hook dumped it */
    pt_dump_free(d);
    return 0;
  }
  const pt_dump_settings* s = pt_dump_settings_get();
  int lines = hook_emit ? pt_dump_text(d, hook_emit, hook_arg) : 0;
  int files = -1;
  char path[PT_DUMP_DIR_MAX + 512];
  if (s->dump_dir[0]) files = write_files(d, &m, s->dump_dir, path, sizeof path, &l);
  if (!hook_emit) {
    if (files == 0) {
      say(&l, "proxytrace: %s dump %" PRIu64 " of rank %d (commHash %" PRIu64 ", %u active ops) written to %s.txt and .jsonl",
          m.trigger, m.seq, pt_dump_rank(d), m.comm_hash, pt_dump_active(d), path);
    } else if (files == -1) {
      char banner[1024];
      log_emit(&l, banner, pt_dump_banner(d, &m, banner, sizeof banner));
      lines = pt_dump_text(d, log_emit, &l);
    }
  }
  pt_dump_free(d);
  return lines;
}

int pt_sink_write_fds(pt_ctx* c, pt_trigger trig, int txt_fd, int json_fd) {
  pt_dump_meta m;
  logger l;
  int lib;
  pt_dump* d = take(c, trig, pt_dump_next_round(), &m, &l, &lib);
  if (!d) return -1;
  const int fds[2] = {txt_fd, json_fd};
  int rc = write_fds(d, &m, fds, "the given files", &l);
  pt_dump_free(d);
  return rc;
}
