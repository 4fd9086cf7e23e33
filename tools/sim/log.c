/*
 * log.c — the host's logger (ncclDebugLog as the plugin sees it) and where
 * each rank's lines end up.
 *
 * A line is built the way the host builds it, prefix and message in one
 * 1024-byte buffer, so a plugin that logs a whole dump in one call is cut
 * exactly where the real host cuts it (spec rccl-proxytrace.md §4.3). The
 * level is read in the host's numbering (RCCL's WARN is 3, NVIDIA's 2) and
 * lines below the emulated NCCL_DEBUG level are dropped.
 *
 * All ranks live in this one process, so the rank of a line is the rank the
 * calling thread acts for (sim_log_set_rank): the init, application, proxy
 * and destroy threads of rank r all log as rank r. The prefix names the
 * rank's node as host and its local index as device, `node1:PID:TID [2]`,
 * and --dump-dir gives every rank its own file, and lines of threads that
 * act for no rank (the host's own, a plugin's background thread) host.log.
 *
 * The dump directory belongs to the run: before it starts, the rank files
 * of earlier runs (rank<N>.log, any N) go, and so do the plugin's dump
 * files (proxytrace-*.txt, .jsonl) when PROXYTRACE_DUMP_DIR names the same
 * directory, so nothing there is mistaken for this run's. After the run,
 * pt_sim_dump_summary says which ranks left no dump.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define SIM_LOG_BUF 1024 /* the host logger's buffer */

static struct {
  const pt_sim_config* cfg;
  const sim_host* host;
  int nranks, rpn;
  FILE** files;
  char** paths;
  FILE* host_file; /* --dump-dir: lines without a rank */
  int saved_stderr; /* sim_log_capture_stderr: the real one, else -1 */
  pthread_mutex_t mu;
} L = {.mu = PTHREAD_MUTEX_INITIALIZER, .saved_stderr = -1};

static _Thread_local int tl_rank = -1;

void sim_log_setup(const pt_sim_config* c, const sim_host* h, int nranks, int rpn) {
  L.cfg = c;
  L.host = h;
  L.nranks = nranks;
  L.rpn = rpn > 0 ? rpn : 1;
}

void sim_log_set_rank(int rank) { tl_rank = rank; }

long sim_rank_pid(int rank) {
  return rank >= 0 && L.cfg && L.cfg->rank_pid ? L.cfg->rank_pid[rank] : (long)getpid();
}

/* Emulated time: the logger's times are the job's, and each thread's id
 * is the one the schedule gave it, so the lines are the same every run. */
static const sim_sched* log_clock;
static _Thread_local long tl_tid;
void sim_log_use_clock(const sim_sched* s) { log_clock = s && s->on ? s : NULL; }
void sim_log_set_tid(long tid) { tl_tid = tid; }

static int has_suffix(const char* s, const char* suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* A file of an earlier run: rank<N>.log, or a plugin dump file when the
 * plugin writes its files here. */
static int earlier_run_file(const char* name, int plugin_files) {
  int n, len = 0;
  if (sscanf(name, "rank%d.log%n", &n, &len) == 1 && len > 0 && !name[len]) return 1;
  return plugin_files && !strncmp(name, "proxytrace-", 11) &&
         (has_suffix(name, ".txt") || has_suffix(name, ".jsonl"));
}

static void clear_earlier_runs(const char* dir) {
  const char* pd = getenv("PROXYTRACE_DUMP_DIR");
  const int plugin_files = pd && !strcmp(pd, dir);
  DIR* d = opendir(dir);
  if (!d) return;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (!earlier_run_file(e->d_name, plugin_files)) continue;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path) unlink(path);
  }
  closedir(d);
}

int sim_log_open_dumps(const pt_sim_config* c, int nranks, FILE* err) {
  if (!c->dump_dir || c->line_fn) return 0;
  if (mkdir(c->dump_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(err, "proxytrace sim: cannot create --dump-dir %s: %s\n", c->dump_dir, strerror(errno));
    return -1;
  }
  clear_earlier_runs(c->dump_dir);
  char host_path[4096];
  snprintf(host_path, sizeof host_path, "%s/host.log", c->dump_dir);
  L.host_file = fopen(host_path, "w");
  if (!L.host_file) {
    fprintf(err, "proxytrace sim: cannot write %s: %s\n", host_path, strerror(errno));
    return -1;
  }
  L.files = calloc((size_t)nranks, sizeof *L.files);
  L.paths = calloc((size_t)nranks, sizeof *L.paths);
  if (!L.files || !L.paths) return -1;
  for (int r = 0; r < nranks; r++) {
    size_t n = strlen(c->dump_dir) + 32;
    L.paths[r] = malloc(n);
    if (!L.paths[r]) return -1;
    snprintf(L.paths[r], n, "%s/rank%d.log", c->dump_dir, r);
    L.files[r] = fopen(L.paths[r], "w");
    if (!L.files[r]) {
      fprintf(err, "proxytrace sim: cannot write %s: %s\n", L.paths[r], strerror(errno));
      return -1;
    }
  }
  return 0;
}

void sim_log_capture_stderr(void) {
  if (!L.host_file || L.saved_stderr >= 0) return;
  fflush(stderr);
  setvbuf(L.host_file, NULL, _IOLBF, 0); /* its lines and the plugin's, in order */
  L.saved_stderr = dup(2);
  if (L.saved_stderr >= 0 && dup2(fileno(L.host_file), 2) < 0) {
    close(L.saved_stderr);
    L.saved_stderr = -1;
  }
}

void sim_log_close(void) {
  if (L.saved_stderr >= 0) {
    fflush(stderr);
    dup2(L.saved_stderr, 2);
    close(L.saved_stderr);
    L.saved_stderr = -1;
  }
  for (int r = 0; L.files && r < L.nranks; r++) {
    if (L.files[r]) fclose(L.files[r]);
    free(L.paths[r]);
  }
  free(L.files);
  free(L.paths);
  if (L.host_file) fclose(L.host_file);
  L.host_file = NULL;
  L.files = NULL;
  L.paths = NULL;
  L.cfg = NULL; /* a plugin that logs after the run logs nowhere */
}

const char* sim_log_path(int rank) {
  return (L.paths && rank >= 0 && rank < L.nranks) ? L.paths[rank] : NULL;
}

static void emit(int rank, const char* line) {
  pthread_mutex_lock(&L.mu);
  if (L.cfg && L.cfg->line_fn) {
    L.cfg->line_fn(L.cfg->line_arg, rank, line);
  } else if (L.files && rank >= 0 && rank < L.nranks && L.files[rank]) {
    fputs(line, L.files[rank]);
    fputc('\n', L.files[rank]);
  } else if (L.host_file && rank < 0) {
    fputs(line, L.host_file);
    fputc('\n', L.host_file);
  } else {
    FILE* f = rank >= 0 ? stdout : stderr;
    fputs(line, f);
    fputc('\n', f);
  }
  pthread_mutex_unlock(&L.mu);
}

static const char* level_word(int lv) {
  switch (lv) {
    case PT_SIM_LOG_ERROR: return "ERROR";
    case PT_SIM_LOG_VERSION: return "VERSION";
    case PT_SIM_LOG_WARN: return "WARN";
    case PT_SIM_LOG_INFO: return "INFO";
    case PT_SIM_LOG_ABORT: return "ABORT";
    default: return "TRACE";
  }
}

static void vlog(int lv, const char* file, int line, const char* fmt, va_list ap) {
  if (!L.cfg || lv == PT_SIM_LOG_NONE || lv > L.cfg->debug_level) return;
  char buf[SIM_LOG_BUF];
  int n = 0;
  int rank = tl_rank;
  if (L.cfg->timestamps && lv <= PT_SIM_LOG_WARN) {
    time_t t = log_clock ? (time_t)((SIM_EPOCH_NS + sim_sched_now(log_clock)) / 1000000000u) : time(NULL);
    struct tm tm;
    if (log_clock) gmtime_r(&t, &tm);
    else localtime_r(&t, &tm);
    n += (int)strftime(buf, sizeof buf, "[%F %T] ", &tm);
  }
  /* A thread acting for no rank (the host's own setup) logs as "host". */
  char where[64];
  if (rank >= 0 && L.cfg->rank_host) snprintf(where, sizeof where, "%s", L.cfg->rank_host[rank]);
  else if (rank >= 0) snprintf(where, sizeof where, "node%d", rank / L.rpn);
  else snprintf(where, sizeof where, "host");
  int dev = rank >= 0 ? (L.cfg->rank_dev ? L.cfg->rank_dev[rank] : rank % L.rpn) : -1;
  const long pid = sim_rank_pid(rank);
  long tid = log_clock && tl_tid ? tl_tid : (long)syscall(SYS_gettid);
  if (lv <= PT_SIM_LOG_WARN)
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s:%ld:%ld [%d] %s:%d NCCL %s ", where, pid, tid, dev,
                  file ? file : "", line, level_word(lv));
  else
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s:%ld:%ld [%d] NCCL %s ", where, pid, tid, dev,
                  level_word(lv));
  if (n < (int)sizeof buf) vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  /* One logger call is one line; a message that holds several lines is
   * printed as the host prints it, line breaks and all, up to the buffer. */
  char* s = buf;
  for (char* nl; (nl = strchr(s, '\n')) != NULL; s = nl + 1) {
    *nl = 0;
    if (*s) emit(rank, s);
  }
  if (*s) emit(rank, s);
}

void sim_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                const char* fmt, ...) {
  (void)flags;
  if (!L.host) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(sim_host_level(L.host, level), file, line, fmt, ap);
  va_end(ap);
}

void sim_host_log(int level, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, "profiler.cc", 0, fmt, ap);
  va_end(ap);
}

/* A dump file of the plugin (proxytrace-<host>-<pid>-r<r>-<hash>.txt or
 * .jsonl), not one of its metrics files (proxytrace-metrics-…). */
static int dump_file(const char* name, const char* tag) {
  return !strncmp(name, "proxytrace-", 11) && strncmp(name, "proxytrace-metrics-", 19) && strstr(name, tag) &&
         (has_suffix(name, ".txt") || has_suffix(name, ".jsonl"));
}

/* Dumps rank r left in this run: legacy dump headers in DIR/rank<r>.log,
 * and the bytes of the plugin's dump files of this process for rank r in
 * FILES (PROXYTRACE_DUMP_DIR; NULL: none). */
static int rank_dumps(const char* dir, const char* files, int r, long long* plugin) {
  char path[4096], tag[64], line[2048];
  struct stat st;
  int dumps = 0;
  *plugin = 0;
  snprintf(path, sizeof path, "%s/rank%d.log", dir, r);
  FILE* f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "commDump for all active ops")) dumps++;
  if (f) fclose(f);
  snprintf(tag, sizeof tag, "-%ld-r%d-", sim_rank_pid(r), r);
  DIR* d = files ? opendir(files) : NULL;
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) {
    if (!dump_file(e->d_name, tag)) continue;
    if (snprintf(path, sizeof path, "%s/%s", files, e->d_name) < (int)sizeof path && stat(path, &st) == 0)
      *plugin += (long long)st.st_size;
  }
  if (d) closedir(d);
  return dumps;
}

void sim_files_mark_rank(const char* dir, int rank, sim_files_mark* m) {
  char tag[64], path[4096];
  struct stat st;
  m->n = 0;
  snprintf(tag, sizeof tag, "-%ld-r%d-", sim_rank_pid(rank), rank);
  DIR* d = dir ? opendir(dir) : NULL;
  for (struct dirent* e; d && (e = readdir(d)) != NULL && m->n < 8;) {
    if (!dump_file(e->d_name, tag) || strlen(e->d_name) >= sizeof m->name[0]) continue;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path || stat(path, &st) != 0) continue;
    strcpy(m->name[m->n], e->d_name);
    m->size[m->n++] = (long long)st.st_size;
  }
  if (d) closedir(d);
}

void sim_files_undo(const char* dir, int rank, const sim_files_mark* m) {
  char tag[64], path[4096];
  snprintf(tag, sizeof tag, "-%ld-r%d-", sim_rank_pid(rank), rank);
  DIR* d = dir ? opendir(dir) : NULL;
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) {
    if (!dump_file(e->d_name, tag) || snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
      continue;
    int i = 0;
    while (i < m->n && strcmp(m->name[i], e->d_name)) i++;
    if (i < m->n) {
      if (truncate(path, (off_t)m->size[i]) != 0) continue;
    } else {
      unlink(path); /* made by the finalize alone */
    }
  }
  if (d) closedir(d);
}

void pt_sim_dump_summary(const pt_sim_config* c, const pt_sim_result* res, FILE* f) {
  if (!c->dump_dir || c->line_fn || !res->loaded) return;
  const pt_sim_job* job = &res->job;
  int with_files = 0, silent = 0;
  char list[1024];
  size_t off = 0;
  list[0] = 0;
  const char* files = res->files_dir[0] ? res->files_dir : NULL;
  for (int r = 0; r < job->nranks; r++) {
    long long plugin;
    const int logged = rank_dumps(c->dump_dir, files, r, &plugin);
    if (plugin > 0) with_files++;
    if (logged > 0 || plugin > 0) continue;
    silent++;
    int w = snprintf(list + off, sizeof list - off, "%s%d%s", silent > 1 ? ", " : "", r,
                     job->dead_rank[r] ? " (dead)" : "");
    if (w > 0 && (size_t)w < sizeof list - off) off += (size_t)w;
  }
  fprintf(f, "  dumps: %s/rank0.log … rank%d.log and host.log (logger lines)", c->dump_dir, job->nranks - 1);
  if (with_files)
    fprintf(f, "; %s/proxytrace-*-%d-r<R>-*.txt and .jsonl (the plugin's files, %d rank%s)", files,
            (int)getpid(), with_files, with_files == 1 ? "" : "s");
  fputc('\n', f);
  if (silent) fprintf(f, "  ranks that left no dump (none in their log, no dump file): %s\n", list);
  else fprintf(f, "  every rank left a dump\n");
}
