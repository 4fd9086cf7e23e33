/*
 * sim_helpers.c — see sim_helpers.h.
 */
#include "sim_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char* st_path(const char* file) {
  static char buf[8][1024];
  static int next;
  char* b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "%s/%s", ST_DIR, file);
  return b;
}

void st_config(pt_sim_config* c, pt_host host, const char* plugin) {
  pt_sim_config_init(c);
  c->host = host;
  c->plugin = plugin;
  c->nodes = 2;
  c->ranks_per_node = 2;
  c->channels = 2;
  c->iters = 2;
  c->calls[0] = (pt_sim_call){PT_SIM_ALLREDUCE, (size_t)4 << 20};
  c->calls[1] = (pt_sim_call){PT_SIM_SENDRECV, (size_t)1 << 20};
  c->n_calls = 2;
  c->jitter = 0;
  c->recv_retry = 0;
  c->gpu_batch = 1;
  c->quiet = 1;
  c->debug_level = PT_SIM_LOG_WARN;
}

static void on_line(void* arg, int rank, const char* line) {
  st_capture* cap = arg;
  int r = (rank >= 0 && rank < cap->nranks) ? rank : cap->nranks;
  if (cap->n[r] == cap->cap[r]) {
    int nc = cap->cap[r] ? cap->cap[r] * 2 : 64;
    char** nl = realloc(cap->lines[r], (size_t)nc * sizeof *nl);
    if (!nl) return;
    cap->lines[r] = nl;
    cap->cap[r] = nc;
  }
  cap->lines[r][cap->n[r]++] = strdup(line);
}

void st_capture_init(st_capture* cap, pt_sim_config* c, int nranks) {
  memset(cap, 0, sizeof *cap);
  cap->nranks = nranks < 64 ? nranks : 64;
  c->line_fn = on_line;
  c->line_arg = cap;
}

void st_capture_free(st_capture* cap) {
  for (int r = 0; r <= 64; r++) {
    for (int i = 0; i < cap->n[r]; i++) free(cap->lines[r][i]);
    free(cap->lines[r]);
  }
  memset(cap, 0, sizeof *cap);
}

int st_capture_count(const st_capture* cap, int r, const char* needle) {
  int n = 0;
  for (int i = 0; i < cap->n[r]; i++)
    if (strstr(cap->lines[r][i], needle)) n++;
  return n;
}

int st_parse_line(const char* line, st_line* o) {
  const char* s = strstr(line, "createT:");
  if (!s) return -1;
  memset(o, 0, sizeof *o);
  int n = sscanf(s,
                 "createT:%lld, lastT:%lld, postT:%lld, sendT:%lld, cntNm:%d, <%llu:%lld:%lld>, "
                 "[fu,pr,pa,tb,ck]:%d,%d,%d,%u,%u, %d->%d(%c), chan:%d, status:%15[A-Z_], ns:%d, nb:%u, "
                 "po:%lld, ke:%lld, tail/h:%lld, recvT:%lld, connSz/h:%lld, trans:%lld, flushed:%lld, "
                 "recvd:%lld, done:%lld",
                 &o->createT, &o->lastT, &o->postT, &o->sendT, &o->cntNm, &o->commHash, &o->opCount, &o->opId,
                 &o->fu, &o->pr, &o->pa, &o->tb, &o->ck, &o->myRank, &o->peer, &o->dir, &o->chan, o->status,
                 &o->ns, &o->nb, &o->po, &o->ke, &o->tailh, &o->recvT, &o->connSz, &o->trans, &o->flushed,
                 &o->recvd, &o->done);
  return n == 29 ? 0 : -1;
}
