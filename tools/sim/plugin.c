/*
 * plugin.c — the host's profiler-plugin lifecycle: load once and refcount
 * per communicator, init, finalize, unload when the last communicator goes,
 * and RCCL's dump hook (spec plugin-loading.md §2.4-§2.8, §3;
 * nccl-profiler-abi.md §4).
 *
 * Finding and opening the library is the loader's job (pt_loader: the same
 * candidate rules per release, sticky failure); this file adds what the
 * host does around it: the refcount, the log lines of §2.7, the release's
 * answer to a failing init (§4.3) and the finalize rule (§4.5).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "proxytrace/emulator.h"

static void log_load_failure(sim_plugin* p, const pt_result* res) {
  const sim_host* h = p->host;
  char missing[1024];
  size_t off = 0;
  missing[0] = 0;
  for (size_t i = 0; res && i < res->n_candidates; i++) {
    const pt_candidate* c = &res->candidates[i];
    if (c->source == PT_SRC_NET_PLUGIN) continue; /* the net code logs its own */
    if (c->outcome == PT_CAND_NOT_FOUND) {
      int w = snprintf(missing + off, sizeof missing - off, " %s", c->name);
      if (w > 0 && (size_t)w < sizeof missing - off) off += (size_t)w;
    } else if (c->outcome == PT_CAND_NO_SYMBOL) {
      sim_host_log(PT_SIM_LOG_INFO, "External profiler plugin %s is unsupported", c->name);
    } else if (c->outcome != PT_CAND_NOT_TRIED && c->outcome != PT_CAND_OK) {
      sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: %s: %s", c->name, c->reason);
    }
  }
  if (missing[0]) {
    if (h->minor >= 28) sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: Could not find:%s", missing);
    else if (h->minor >= 26) sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: Could not find:%s. ", missing);
    else sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: Could not find:%s.", missing + 1);
  }
}

static void log_load_success(sim_plugin* p, const pt_result* res) {
  const sim_host* h = p->host;
  if (res->value && res->value[0]) {
    if (h->minor >= 28) sim_host_log(PT_SIM_LOG_INFO, "NCCL_PROFILER_PLUGIN set by environment to %s", res->value);
    else sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: Plugin name set by env to %s", res->value);
  }
  for (int v = h->native; v > res->api_version; v--) {
    if (h->minor >= 28) continue; /* 2.28+ logs dlsym misses at INFO only with details */
    sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: failed to find ncclProfiler_v%d%s", v,
                 h->minor <= 25 ? "." : "");
  }
  for (size_t i = 0; i < res->n_candidates; i++)
    if (res->candidates[i].outcome == PT_CAND_OK && res->candidates[i].source == PT_SRC_AUTOLOAD)
      sim_host_log(PT_SIM_LOG_INFO,
                   "PROFILER/Plugin: Loaded proxy-trace plugin from %s (RCCL_ENABLE_PROXY_TRACE=1)",
                   res->path);
  if (h->minor >= 28) {
    sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: Loaded %s (v%d)", res->plugin_name, res->api_version);
    sim_host_log(PT_SIM_LOG_INFO, "Successfully loaded external profiler plugin %s", res->path);
  } else if (h->minor >= 26) {
    sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: loaded %s", res->plugin_name);
  } else {
    sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: loaded ncclProfiler_v%d.", res->api_version);
  }
}

/* ncclProfilerPluginLoad: 0 when a table is active for this comm. */
int sim_plugin_load(sim_plugin* p) {
  pthread_mutex_lock(&p->mu);
  if (p->refcount > 0) {
    p->refcount++;
    pthread_mutex_unlock(&p->mu);
    return 0;
  }
  const pt_result* res = NULL;
  int rc = pt_loader_load(p->loader, &p->req, p->host->host, &res);
  if (rc != PT_OK) {
    /* The loader keeps the failure: every later comm fails the same way. */
    if (!p->loaded) log_load_failure(p, res);
    p->loaded = res;
    pthread_mutex_unlock(&p->mu);
    return -1;
  }
  p->loaded = res;
  p->table = res->table;
  p->version = res->api_version;
  /* NVIDIA never looks the dump hook up; RCCL does, whatever the version. */
  p->dump_hook = p->host->rccl ? (ncclProfilerProxyTraceDump_t)res->dump_hook : NULL;
  sim_abi_bind(p);
  log_load_success(p, res);
  p->refcount = 1;
  pthread_mutex_unlock(&p->mu);
  return 0;
}

/* ncclProfilerPluginUnload. */
void sim_plugin_unload(sim_plugin* p) {
  pthread_mutex_lock(&p->mu);
  if (p->refcount > 0) p->refcount--;
  if (p->refcount == 0 && p->table && p->live > 0) {
    /* 2.30+ after a failed init: the refcount drops twice for that comm and
     * reaches 0 while others still use the plugin (nccl-profiler-abi.md
     * §4.3). The host would dlclose it under them; the emulator says so and
     * keeps it mapped until the last of them is destroyed. */
    if (!p->warned_close++)
      sim_host_log(PT_SIM_LOG_WARN,
                   "emulated host: NCCL %d would close the profiler plugin now, while %d communicator%s "
                   "still use it (double unload after a failed init)",
                   p->host->minor, p->live, p->live == 1 ? "" : "s");
  } else if (p->refcount == 0 && p->table) {
    if (atomic_load(&p->off)) {
      /* 2.23-2.27 after a failed init: the table pointer is NULL here and
       * the host's log line dereferences it (spec nccl-profiler-abi.md §4.3). */
      sim_host_log(PT_SIM_LOG_WARN,
                   "emulated host: NCCL %d would dereference a NULL profiler table here "
                   "(unload after a failed init)", p->host->minor);
    } else {
      sim_host_log(PT_SIM_LOG_INFO, "PROFILER/Plugin: Closing profiler plugin %s",
                   p->loaded ? p->loaded->plugin_name : "?");
    }
    p->table = NULL;
    p->dump_hook = NULL;
    pt_loader_unload(p->loader);
  }
  pthread_mutex_unlock(&p->mu);
}

int sim_comm_init(sim_run* run, sim_rank* rk) {
  sim_plugin* p = &run->plugin;
  const sim_host* h = run->host;
  const pt_sim_config* c = run->cfg;
  rk->ctx = NULL;
  if (sim_plugin_load(p) != 0) return -1;
  pthread_mutex_lock(&p->mu);
  p->live++;
  pthread_mutex_unlock(&p->mu);
  if (atomic_load(&p->off)) return -1;
  /* proxytrace's plugin names the rank's node as its host, as the logs
   * do (log.c), not the machine every emulated rank runs on: its
   * emulator table's host(), for the communicators this thread creates. */
  pthread_mutex_lock(&p->mu);
  const proxytraceEmulator_v2_t* emu =
      p->loaded && p->loaded->handle ? dlsym(p->loaded->handle, PT_EMULATOR_SYMBOL) : NULL;
  pthread_mutex_unlock(&p->mu);
  if (emu) {
    char node[32];
    snprintf(node, sizeof node, "node%d", rk->rank / run->job->rpn);
    emu->host(node);
  }
  errno = 0;
  ncclResult_t r = sim_abi_init(p, &rk->ctx, run->job->comm_hash, c->comm_name, run->job->nodes,
                                run->nranks, rk->rank, sim_logger);
  if (emu) emu->host(NULL);
  if (r != ncclSuccess) {
    int e = errno;
    switch (h->init_fail) {
      case SIM_INITFAIL_DISABLE:
        sim_host_log(PT_SIM_LOG_WARN, "Profiler init failed with error (%d). Continue without profiler.", (int)r);
        atomic_store(&p->off, 1);
        break;
      case SIM_INITFAIL_UNLOAD:
        sim_plugin_unload(p);
        sim_host_log(PT_SIM_LOG_INFO, "Profiler init failed with error '%d': %s. Continue without profiler.",
                     (int)r, strerror(e));
        break;
      default:
        sim_host_log(PT_SIM_LOG_INFO, "Profiler init failed with error '%d': %s. Continue without profiler.",
                     (int)r, strerror(e));
        break;
    }
  } else {
    rk->inited = 1;
  }
  if (h->log_mask) {
    int m = atomic_load_explicit(&p->mask, memory_order_relaxed);
    if (m) {
      char words[256];
      sim_mask_words(h, m, words, sizeof words);
      sim_host_log(PT_SIM_LOG_INFO, "Profiler event mask: 0x%x (%d) - Enabled: %s", (unsigned)m, m, words);
    }
  }
  return r == ncclSuccess ? 0 : -1;
}

/* commFree: the dump hook (RCCL), then finalize, then unload. */
void sim_comm_destroy(sim_run* run, sim_rank* rk, int dump) {
  sim_plugin* p = &run->plugin;
  const sim_host* h = run->host;
  pthread_mutex_lock(&p->mu);
  p->live--;
  pthread_mutex_unlock(&p->mu);
  if (!p->table || atomic_load(&p->off)) {
    sim_plugin_unload(p);
    return;
  }
  if (dump && p->dump_hook && rk->ctx) p->dump_hook(rk->ctx, sim_logger);
  if (dump && run->cfg->at_destroy) run->cfg->at_destroy(run->cfg->at_destroy_arg, rk->rank, rk->ctx, sim_logger);
  if (!h->finalize_needs_ctx || rk->ctx) p->finalize(rk->ctx);
  rk->ctx = NULL;
  sim_plugin_unload(p);
}
