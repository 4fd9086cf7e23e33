/*
 * once.c — load-once state, kept the way NCCL and RCCL keep theirs
 * (ncclProfilerPluginLoad in NCCL's src/plugin/profiler.cc, e.g. v2.28.9-1
 * :42-105, and RCCL's): the first pt_loader_load() runs
 * the whole search under a mutex while later callers wait; a success is
 * shared until pt_loader_unload(); a failure is sticky — never retried, so
 * a process does not re-run discovery (and constructors) on every call
 * and every caller sees the same report.
 *
 * The mutex is held across dlopen. A plugin constructor that calls back
 * into the same pt_loader would deadlock; plugins have no reason to.
 */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

enum { ST_READY = 0, ST_LOADED, ST_FAILED };

struct pt_loader {
  pthread_mutex_t lock;
  int state;
  pt_result* res;
};

int pt_loader_new(pt_loader** out) {
  if (!out) return PT_EINVAL;
  pt_loader* l = calloc(1, sizeof *l);
  if (!l) return PT_ENOMEM;
  if (pthread_mutex_init(&l->lock, NULL) != 0) {
    free(l);
    return PT_ENOMEM;
  }
  *out = l;
  return PT_OK;
}

int pt_loader_load(pt_loader* l, const pt_request* req, pt_host host, const pt_result** out) {
  if (!l || !out) return PT_EINVAL;
  pthread_mutex_lock(&l->lock);
  if (l->state == ST_READY) {
    pt_result_free(l->res);
    l->res = NULL;
    int rc = pt_load(req, host, &l->res);
    l->state = rc == PT_OK ? ST_LOADED : ST_FAILED;
  }
  const pt_result* res = l->res;
  pthread_mutex_unlock(&l->lock);
  *out = res;
  return res ? res->status : PT_ENOMEM;
}

int pt_loader_unload(pt_loader* l) {
  if (!l) return PT_EINVAL;
  pthread_mutex_lock(&l->lock);
  int rc = PT_OK;
  if (l->state == ST_LOADED) {
    rc = pt_result_close(l->res);
    pt_result_free(l->res);
    l->res = NULL;
    l->state = ST_READY;
  }
  pthread_mutex_unlock(&l->lock);
  return rc;
}

void pt_loader_free(pt_loader* l) {
  if (!l) return;
  pt_loader_unload(l);
  pt_result_free(l->res);
  pthread_mutex_destroy(&l->lock);
  free(l);
}
