/*
 * sink.c — where one communicator's dump goes: the dump files and the host
 * logger. One snapshot (src/trace/dump.c) is printed to every sink, so the
 * text and the JSON of a dump hold the same records.
 *
 *   files   with PROXYTRACE_DUMP_DIR, per rank and communicator
 *           DIR/proxytrace-<host>-<pid>-r<rank>-<commHash>.txt (the banner
 *           line, then the legacy lines) and .jsonl (docs/dump-json.md),
 *           appended per dump, each capped by PROXYTRACE_DUMP_MAX_MB and
 *           rotated to .1.txt / .1.jsonl past it (below, "rotation"). The directory is created (with every missing folder above it, 0755)
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

/* It goes into a file name. */
static void file_safe(char* s) {
  for (char* p = s; *p; p++)
    if (*p == '/' || *p == ' ') *p = '_';
}

static void read_host_name(void) {
  if (gethostname(host_name, sizeof host_name - 1) != 0 || !host_name[0]) strcpy(host_name, "unknown");
  file_safe(host_name);
}

/* An emulator runs every rank in one process and names each one's node
 * (include/proxytrace/emulator.h, host()): per thread, read once when the
 * thread creates a communicator, which keeps it. */
static _Thread_local char thread_host[64];
static _Thread_local long thread_pid;

void pt_sink_name_thread_process(const char* host, long pid) {
  snprintf(thread_host, sizeof thread_host, "%s", host ? host : "");
  file_safe(thread_host);
  thread_pid = pid > 0 ? pid : 0;
}

void pt_sink_thread_process(char host[64], long* pid) {
  memcpy(host, thread_host, sizeof thread_host);
  *pid = thread_pid;
}

long pt_sink_pid(const pt_ctx* c) { return c->pid > 0 ? c->pid : (long)pt_self_pid(); }

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

const char* pt_sink_host_name(const pt_ctx* c) {
  if (c->host[0]) return c->host;
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
 * (pt_out), and it is written out whenever full — or, to measure a dump
 * before it is written, only counted. */
typedef struct {
  pt_out o;
  int fd;
  int err; /* errno of the first failed write */
  uint64_t count; /* bytes counted (fb_count) */
  int text_lines; /* the text dump's lines after its banner; -1 not counted yet (the size pass
                     counts them as it measures, the write pass uses them: two formattings a dump) */
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

static void fb_count(pt_out* o) {
  fbuf* f = o->arg;
  f->count += o->len;
  o->len = 0;
}

/* One line of the caller's, with its newline. */
static void fb_line(fbuf* f, const char* line, int len) {
  if (len < 0) return;
  if ((size_t)len + 1 > sizeof f->buf) len = (int)sizeof f->buf - 1;
  if (f->o.len + (size_t)len + 1 > sizeof f->buf) f->o.flush(&f->o);
  memcpy(f->buf + f->o.len, line, (size_t)len);
  f->o.len += (size_t)len;
  f->buf[f->o.len++] = '\n';
}

/* One format of a dump (0: the banner and the legacy lines; 1: JSON lines)
 * through `flush`: written to f->fd, or counted. */
static void fb_dump(fbuf* f, const pt_dump* d, const pt_dump_meta* m, int k, void (*flush)(pt_out*)) {
  f->o = (pt_out){.buf = f->buf, .cap = sizeof f->buf, .len = 0, .flush = flush, .arg = f};
  f->err = 0;
  f->count = 0;
  if (k == 0) {
    char banner[1024];
    if (f->text_lines < 0 && flush == fb_count) {
      /* counted, the order of the lines is free: the dump first, which
       * counts its lines for the banner (and the write after) */
      f->text_lines = pt_dump_text_out(d, &f->o);
      fb_line(f, banner, pt_dump_banner_lines(d, m, f->text_lines, banner, sizeof banner));
    } else {
      if (f->text_lines < 0) f->text_lines = pt_dump_text_lines(d); /* written without a count first */
      fb_line(f, banner, pt_dump_banner_lines(d, m, f->text_lines, banner, sizeof banner));
      pt_dump_text_out(d, &f->o);
    }
  } else {
    pt_dump_json_out(d, m, &f->o);
  }
  flush(&f->o);
}

/* mkdir -p, 0755 each: every missing folder of `dir`, the last one too (a
 * job's dump folder under a path made per job). 0, or -1 with errno. */
static int make_dirs(const char* dir) {
  char path[4096];
  const size_t n = strlen(dir);
  if (n == 0 || n >= sizeof path) {
    errno = n ? ENAMETOOLONG : ENOENT;
    return -1;
  }
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != 0) continue;
    const char c = path[i];
    path[i] = 0;
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
    path[i] = c;
  }
  return 0;
}

static int ensure_dir(const char* dir, const logger* l) {
  struct stat st;
  if (stat(dir, &st) == 0) return 0; /* exists; whether it takes files, open says */
  if (make_dirs(dir) == 0 || errno == EEXIST) return 0;
  if (first_time(SAID_MKDIR))
    say(l, "proxytrace: cannot create PROXYTRACE_DUMP_DIR %s: %s; dumps go to the host log instead",
        dir, strerror(errno));
  return -1;
}

/* Why a dump file was refused, said once per kind after the files lock is
 * released. */
typedef struct {
  int what; /* SAID_LINK, SAID_NOTREG, SAID_OPEN; 0 = not refused */
  int err;
} refusal;

static void say_refused(const refusal* r, const char* path, const char* dir, const logger* l) {
  if (!r->what || !first_time(r->what)) return;
  if (r->what == SAID_LINK)
    say(l, "proxytrace: %s is a symbolic link: not following it; this and later such dumps go "
           "to the host log instead", path);
  else if (r->what == SAID_NOTREG)
    say(l, "proxytrace: %s is not a regular file: not writing to it; the dump goes to the host "
           "log instead", path);
  else
    say(l, "proxytrace: cannot write dump files in PROXYTRACE_DUMP_DIR %s: %s; dumps go to the "
           "host log instead", dir, strerror(r->err));
}

/* A dump file, opened for appending; -1 (and why) if refused. */
static int open_dump_file(const char* path, refusal* r) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) {
    *r = (refusal){errno == ELOOP ? SAID_LINK : errno == ENXIO ? SAID_NOTREG : SAID_OPEN, errno};
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *r = (refusal){SAID_NOTREG, 0};
    close(fd);
    return -1;
  }
  return fd;
}

/* Dumps run on any thread with no registry lock (context.c): two dumps of
 * one communicator write its files one after the other, not interleaved,
 * and rotate them one at a time. Held only while the files are opened,
 * rotated and written: no logger call under it, and no other lock taken
 * under it. The fork handlers take it (after the registry and dumper
 * locks), so a child never inherits it held by a thread that does not
 * exist there. */
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;

void pt_sink_fork_lock(void) { pthread_mutex_lock(&files_lock); }
void pt_sink_fork_unlock(void) { pthread_mutex_unlock(&files_lock); }

/* Writes one dump to its two files (files lock held); errno of the first
 * failed write, or 0. */
static int put_dump(fbuf* f, const pt_dump* d, const pt_dump_meta* m, const int fds[2]) {
  int err = 0;
  for (int k = 0; k < 2; k++) {
    f->fd = fds[k];
    fb_dump(f, d, m, k, fb_flush);
    if (f->err && !err) err = f->err;
  }
  return err;
}

/* A dump lost to write error `err`: counted, said once; -2. */
static int lost_to(int err, const char* where, const logger* l) {
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

/* ---- rotation ----
 *
 * Each dump file is capped (PROXYTRACE_DUMP_MAX_MB): when the next dump
 * would take a file past the cap, both files of the communicator become
 * their older generation (x.txt -> x.1.txt, x.jsonl -> x.1.jsonl, the
 * previous older generation removed) and the dump starts new ones, so a
 * dump is never cut in two and the newest one is always whole. The first
 * dump of the current stall episode (the stall watchdog's first dump since
 * the last progress: where the hang began) is never removed: when the
 * generation that holds it goes, it is copied to the start of the new
 * files first, if it still reads as whole dumps. The dumps removed are
 * counted (rotatedDumps in the JSON header). To know whether a dump fits,
 * it is formatted twice: once only counted, then written. A file holding
 * one dump larger than the cap is not rotated before that dump is. Worst
 * case per communicator: 2 formats x 2 generations x the cap, plus one
 * dump (and the carried stall dump). */

/* `path` of format k (0 .txt, 1 .jsonl) and generation g (0, 1) at path+base. */
static void name_of(char* path, int base, int k, int g) {
  strcpy(path + base, g ? (k ? ".1.jsonl" : ".1.txt") : (k ? ".jsonl" : ".txt"));
}

/* The stall episode's first dump, read from the older generation about to
 * be removed: both formats, in one allocation; NULL when there is none or
 * it cannot be read (then it is lost with the generation). */
static char* read_episode(const pt_dump_files* st, char* path, int base) {
  if (st->episode_gen != 2 || st->episode_len[0] + st->episode_len[1] > ((uint64_t)1 << 32)) return NULL;
  char* b = malloc(st->episode_len[0] + st->episode_len[1] + 1);
  if (!b) return NULL;
  size_t at = 0;
  for (int k = 0; k < 2; k++) {
    name_of(path, base, k, 1);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    ssize_t r = fd >= 0 ? pread(fd, b + at, st->episode_len[k], (off_t)st->episode_off[k]) : -1;
    if (fd >= 0) close(fd);
    if (r != (ssize_t)st->episode_len[k]) {
      free(b);
      return NULL;
    }
    at += st->episode_len[k];
  }
  /* Whole dumps still, or the files were changed under us (a shared
   * directory): then nothing is carried rather than a piece. */
  static const char txt[] = "proxytrace dump seq=", json[] = "{\"type\":\"dump\"";
  const size_t t = st->episode_len[0], j = st->episode_len[1];
  if (t < sizeof txt || j < sizeof json || memcmp(b, txt, sizeof txt - 1) || memcmp(b + t, json, sizeof json - 1) ||
      b[t - 1] != '\n' || b[t + j - 1] != '\n') {
    free(b);
    return NULL;
  }
  return b;
}

/* Rotates both files (files lock held): fds[] are the new ones after. 0,
 * or -1 with *r saying why the new files were refused (fds closed). */
static int rotate(pt_dump_files* st, char* path, int base, int fds[2], refusal* r) {
  char* carried = read_episode(st, path, base);
  char older[PT_DUMP_DIR_MAX + 512];
  for (int k = 0; k < 2; k++) {
    close(fds[k]);
    fds[k] = -1;
    name_of(path, base, k, 0);
    snprintf(older, sizeof older, "%.*s%s", base, path, k ? ".1.jsonl" : ".1.txt");
    if (rename(path, older) != 0) unlink(path); /* the cap holds either way */
  }
  st->rotated += st->dumps[1] - (carried ? 1 : 0);
  st->dumps[1] = st->dumps[0];
  st->dumps[0] = 0;
  if (st->episode_gen == 1) st->episode_gen = 2;
  else if (st->episode_gen == 2 && !carried) st->episode_gen = 0;
  for (int k = 0; k < 2; k++) {
    name_of(path, base, k, 0);
    fds[k] = open_dump_file(path, r);
    if (fds[k] < 0) {
      if (k) close(fds[0]);
      free(carried);
      return -1;
    }
  }
  if (carried) {
    size_t at = 0;
    for (int k = 0; k < 2; k++) {
      fbuf tmp = {.fd = fds[k]};
      pt_out o = {.buf = carried + at, .len = st->episode_len[k], .arg = &tmp};
      fb_flush(&o);
      st->episode_off[k] = 0;
      at += st->episode_len[k];
    }
    st->episode_gen = 1;
    st->dumps[0] = 1;
    free(carried);
  }
  return 0;
}

/* Text and JSON files of one dump, rotated at the cap. 0 written, -1
 * refused (nothing written: the caller logs the dump instead), -2 lost to
 * a write error, 1 left out: the files are closed. A finalize dump closes
 * them: a dumper round that took its reference before the finalize may
 * reach the files after it, and its dump would then follow the rank's
 * last word (readers take the latest dump as where the rank stands). */
static int write_files(pt_ctx* c, pt_trigger trig, const pt_dump* d, pt_dump_meta* m, const char* dir,
                       char* path, size_t path_len, const logger* l) {
  if (ensure_dir(dir, l) != 0) return -1;
  int base = snprintf(path, path_len, "%s/proxytrace-%s-%ld-r%d-%" PRIu64, dir, m->host, m->pid,
                      pt_dump_rank(d), m->comm_hash);
  if (base < 0 || (size_t)base + 10 > path_len) {
    if (first_time(SAID_OPEN))
      say(l, "proxytrace: the dump file names in PROXYTRACE_DUMP_DIR %s are too long; dumps go to "
             "the host log instead", dir);
    return -1;
  }
  fbuf* f = malloc(sizeof *f);
  if (!f) return -2;
  f->text_lines = -1;
  const uint64_t cap = pt_dump_settings_get()->dump_max_bytes;
  pt_dump_files* st = &c->files;
  refusal r = {0};
  int fds[2] = {-1, -1}, err = 0, rc = 0;
  uint64_t size[2] = {0, 0}, len[2] = {0, 0};
  char refused[PT_DUMP_DIR_MAX + 512] = "";
  pthread_mutex_lock(&files_lock);
  if (st->rank != pt_dump_rank(d) || st->comm_hash != m->comm_hash) /* other files: what we knew is not theirs */
    *st = (pt_dump_files){.rank = pt_dump_rank(d), .comm_hash = m->comm_hash};
  if (st->closed) {
    pthread_mutex_unlock(&files_lock);
    free(f);
    path[base] = 0;
    return 1;
  }
  st->closed = trig == PT_TRIG_FINALIZE;
  for (int k = 0; k < 2 && !r.what; k++) {
    name_of(path, base, k, 0);
    fds[k] = open_dump_file(path, &r);
  }
  if (r.what) {
    snprintf(refused, sizeof refused, "%s", path);
    rc = -1;
  } else {
    m->rotated_dumps = st->rotated;
    int over = 0;
    for (int k = 0; k < 2; k++) {
      struct stat sb;
      size[k] = fstat(fds[k], &sb) == 0 ? (uint64_t)sb.st_size : 0;
      fb_dump(f, d, m, k, fb_count);
      len[k] = f->count;
      over |= size[k] > 0 && size[k] + len[k] > cap;
    }
    if (over && rotate(st, path, base, fds, &r) != 0) {
      snprintf(refused, sizeof refused, "%s", path);
      rc = -1;
    } else {
      if (over) {
        m->rotated_dumps = st->rotated;
        for (int k = 0; k < 2; k++) {
          struct stat sb;
          size[k] = fstat(fds[k], &sb) == 0 ? (uint64_t)sb.st_size : 0;
        }
      }
      /* The stall episode: a stall dump after progress starts one, which
       * lasts while nothing progresses. Each dump names the one that
       * began its episode (stallEpisodeSeq). */
      const int moved = st->episode_progress != m->last_progress_ticks;
      const int starts = trig == PT_TRIG_STALL && (!st->episode_gen || moved);
      if (starts) st->episode_seq = m->seq;
      m->episode_seq = starts || (st->episode_gen && !moved) ? st->episode_seq : 0;
      err = put_dump(f, d, m, fds);
      st->dumps[0]++;
      if (starts) {
        st->episode_gen = 1;
        st->episode_progress = m->last_progress_ticks;
        for (int k = 0; k < 2; k++) {
          struct stat sb;
          st->episode_off[k] = size[k];
          st->episode_len[k] = fstat(fds[k], &sb) == 0 && (uint64_t)sb.st_size > size[k] ? (uint64_t)sb.st_size - size[k]
                                                                                          : len[k];
        }
      } else if (st->episode_gen && moved) {
        st->episode_gen = 0;
      }
    }
  }
  pthread_mutex_unlock(&files_lock);
  for (int k = 0; k < 2; k++)
    if (fds[k] >= 0) close(fds[k]);
  free(f);
  path[base] = 0;
  if (rc == -1) {
    say_refused(&r, refused, dir, l);
    return -1;
  }
  return err ? lost_to(err, dir, l) : 0;
}

/* ---- one dump ---- */

/* The snapshot of `c` and what its dump says about itself; NULL when out
 * of memory. */
static pt_dump* take(pt_ctx* c, pt_trigger trig, uint64_t round, pt_dump_meta* m, logger* l, int* lib) {
  pt_event_mask_at_dump(c);
  pt_dump* d = pt_trace_snapshot(c->trace);
  l->log = c->log;
  l->level = NCCL_LOG_WARN;
  if (!d) return NULL;
  *lib = host_lib(c, d);
  l->level = *lib == PT_HOSTLIB_RCCL ? RCCL_LOG_WARN : NCCL_LOG_WARN;
  if (trig == PT_TRIG_HOOK && *lib != PT_HOSTLIB_RCCL) trig = PT_TRIG_API;
  *m = (pt_dump_meta){
      .host = pt_sink_host_name(c), .pid = pt_sink_pid(c), .rank_from = c->rank >= 0 ? "init" : "event",
      .nranks = c->nranks > 0 ? c->nranks : 0,
      .nnodes = c->nnodes > 0 ? c->nnodes : 0, .comm_hash = atomic_load(&c->comm_hash),
      .comm_name = c->name[0] ? c->name : NULL, .host_lib = host_lib_name(*lib), .profiler_api = c->api,
      .stock_raw_steps = pt_api_raw_steps(c->api),
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
  const pt_dump_settings* s = pt_dump_settings_get();
  /* RCCL's hook printed it to the log just before: the finalize record
   * goes only to the files. */
  const int hooked = trig == PT_TRIG_FINALIZE && lib == PT_HOSTLIB_RCCL;
  if (hooked && !s->dump_dir[0]) {
    pt_dump_free(d);
    return 0;
  }
  int lines = hook_emit ? pt_dump_text(d, hook_emit, hook_arg) : 0;
  int files = -1;
  char path[PT_DUMP_DIR_MAX + 512];
  if (s->dump_dir[0]) files = write_files(c, trig, d, &m, s->dump_dir, path, sizeof path, &l);
  if (!hook_emit) {
    /* A clean finalize record (nothing waiting) is not worth a WARN line,
     * nor one RCCL's hook has just printed. */
    const int quiet = hooked || files == 1 || (trig == PT_TRIG_FINALIZE && pt_dump_active(d) == 0);
    if (files == 0 && !quiet) {
      say(&l, "proxytrace: %s dump %" PRIu64 " of rank %d (commHash %" PRIu64 ", %u active ops) written to %s.txt and .jsonl",
          m.trigger, m.seq, pt_dump_rank(d), m.comm_hash, pt_dump_active(d), path);
    } else if (files == -1 && !quiet) {
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
  fbuf* f = malloc(sizeof *f);
  if (!f) {
    pt_dump_free(d);
    return -2;
  }
  f->text_lines = -1;
  pthread_mutex_lock(&files_lock);
  const int err = put_dump(f, d, &m, fds);
  pthread_mutex_unlock(&files_lock);
  free(f);
  pt_dump_free(d);
  return err ? lost_to(err, "the given files", &l) : 0;
}
