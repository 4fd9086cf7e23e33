/*
 * sched.c — emulated time: one deterministic schedule for every thread of an
 * emulated job.
 *
 * Under emulated time (the default when sim drives proxytrace's own plugin,
 * include/proxytrace/emulator.h) each thread of the job — every rank's
 * application and proxy threads, the plugin's timers, RCCL's watchdog, the
 * signal sender — is an actor: a real thread that runs only while it holds
 * the baton. An actor gives it up when it waits: until an emulated time
 * (sleep_until) or until another actor wakes it (block / wake). The next
 * holder is the actor due first, ties going to the one spawned first, and
 * the emulated clock jumps to its time. So exactly one thread runs at a
 * time, in an order fixed by the job and its seed, and the clock moves only
 * when every actor is waiting: the same job gives the same events at the
 * same emulated times on any machine under any load, and runs as fast as
 * the CPU allows (nothing sleeps for real).
 *
 * The baton is a semaphore per actor, handed directly from one actor to the
 * next (no thread in between). An actor due before every other keeps it
 * without a switch. Real threads are kept, not coroutines: the plugin sees
 * each rank's proxy thread as a thread of its own, as under NCCL.
 *
 * Under real time (--pace, or a plugin without the emulator table) nothing
 * here is used but sim_now_ns and sim_sleep_until, which read and sleep on
 * CLOCK_MONOTONIC.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

#define NEVER UINT64_MAX

struct sim_actor {
  sim_sched* s;
  int id;
  int essential;       /* the job is over when every essential actor ended */
  int done;
  uint64_t wake_at;    /* emulated ns; NEVER while blocked                  */
  const void* on;      /* what it is blocked on (sim_sched_wake)            */
  sem_t go;            /* the baton                                         */
  void* (*fn)(void*);
  void* arg;
  pthread_t thread;
};

static __thread sim_actor* self;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sim_sched_init(sim_sched* s, int emulated) {
  atomic_store(&s->now, SIM_CLOCK0_NS);
  s->on = emulated;
  s->actors = NULL;
  s->n = s->cap = 0;
  s->essential_left = 0;
  s->quitting = 0;
  s->deadlock = 0;
  s->t0_ns = mono_ns();
  sem_init(&s->main_go, 0, 0);
  /* Emulated, every actor runs on the CPU this thread is on: one thread runs
   * at a time anyway, and a handoff to a thread on the same CPU costs half
   * as much as one that wakes another CPU. */
  CPU_ZERO(&s->cpu);
  const int cpu = sched_getcpu();
  if (cpu >= 0) CPU_SET(cpu, &s->cpu);
  s->pin = emulated && cpu >= 0;
}

void sim_sched_free(sim_sched* s) {
  for (int i = 0; i < s->n; i++) {
    sem_destroy(&s->actors[i]->go);
    free(s->actors[i]);
  }
  free(s->actors);
  s->actors = NULL;
  s->n = s->cap = 0;
  sem_destroy(&s->main_go);
}

uint64_t sim_sched_now(const sim_sched* s) {
  if (s->on) return atomic_load_explicit(&s->now, memory_order_relaxed) - SIM_CLOCK0_NS;
  return mono_ns() - s->t0_ns;
}

/* The actor due first: the least (wake_at, id) among those not ended;
 * NULL when every one is blocked. Called by the baton's holder only. */
static sim_actor* due_first(sim_sched* s) {
  sim_actor* best = NULL;
  for (int i = 0; i < s->n; i++) {
    sim_actor* a = s->actors[i];
    if (a->done || a->wake_at == NEVER) continue;
    if (!best || a->wake_at < best->wake_at) best = a;
  }
  return best;
}

/* Hands the baton to the actor due first (the caller, `me`, included unless
 * it ended) and, when that is another, waits to get it back. */
static void pass(sim_sched* s, sim_actor* me) {
  sim_actor* next = s->quitting ? NULL : due_first(s);
  if (!next) {
    if (!s->quitting && s->essential_left > 0) {
      s->deadlock = 1; /* every actor waits on another: a bug of the emulator */
      fprintf(stderr, "proxytrace sim: emulated time: every thread waits on another (a bug); the job ends here\n");
    }
    sem_post(&s->main_go);
  } else {
    if (next->wake_at > atomic_load_explicit(&s->now, memory_order_relaxed))
      atomic_store_explicit(&s->now, next->wake_at, memory_order_relaxed);
    if (next == me) return;
    sem_post(&next->go);
  }
  if (me && !me->done) {
    while (sem_wait(&me->go) != 0 && errno == EINTR) {
    }
  }
}

static void* actor_main(void* arg) {
  sim_actor* a = arg;
  self = a;
  sim_log_set_tid(SIM_TID_ACTOR + a->id);
  while (sem_wait(&a->go) != 0 && errno == EINTR) {
  }
  if (!a->s->quitting) a->fn(a->arg);
  sim_sched* s = a->s;
  a->done = 1;
  if (a->essential && --s->essential_left == 0) {
    sem_post(&s->main_go); /* the job is over */
    return NULL;
  }
  if (s->quitting) {
    sem_post(&s->main_go);
    return NULL;
  }
  pass(s, a);
  return NULL;
}

int sim_sched_spawn(sim_sched* s, int essential, void* (*fn)(void*), void* arg, pthread_t* out) {
  if (!s->on) return pthread_create(out, NULL, fn, arg);
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 64;
    sim_actor** na = realloc(s->actors, (size_t)cap * sizeof *na);
    if (!na) return ENOMEM;
    s->actors = na;
    s->cap = cap;
  }
  sim_actor* a = calloc(1, sizeof *a);
  if (!a) return ENOMEM;
  a->s = s;
  a->id = s->n;
  a->essential = essential;
  a->wake_at = atomic_load(&s->now);
  a->fn = fn;
  a->arg = arg;
  sem_init(&a->go, 0, 0);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (s->pin) pthread_attr_setaffinity_np(&attr, sizeof s->cpu, &s->cpu);
  int rc = pthread_create(&a->thread, &attr, actor_main, a);
  pthread_attr_destroy(&attr);
  if (rc) {
    sem_destroy(&a->go);
    free(a);
    return rc;
  }
  s->actors[s->n++] = a;
  if (essential) s->essential_left++;
  *out = a->thread;
  return 0;
}

int sim_sched_run(sim_sched* s) {
  if (!s->on || s->n == 0) return 0;
  if (s->essential_left > 0) {
    pass(s, NULL);
    while (sem_wait(&s->main_go) != 0 && errno == EINTR) {
    }
  }
  /* The job is over: every actor still waiting (the timers, a signal not
   * yet due) is let go, one at a time, its wait returning with
   * sim_sched_quit() true. */
  s->quitting = 1;
  for (int i = 0; i < s->n; i++) {
    sim_actor* a = s->actors[i];
    if (a->done) continue;
    sem_post(&a->go);
    while (sem_wait(&s->main_go) != 0 && errno == EINTR) {
    }
  }
  return s->deadlock ? -1 : 0;
}

int sim_sched_quit(const sim_sched* s) { return s->on && s->quitting; }

void sim_sched_sleep_until(sim_sched* s, uint64_t t) {
  if (!s->on) {
    const uint64_t abs = s->t0_ns + t;
    struct timespec ts = {(time_t)(abs / 1000000000u), (long)(abs % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
    return;
  }
  sim_actor* me = self;
  if (!me || s->quitting) return;
  const uint64_t now = atomic_load_explicit(&s->now, memory_order_relaxed);
  t = t > UINT64_MAX - SIM_CLOCK0_NS ? NEVER - 1 : t + SIM_CLOCK0_NS;
  me->wake_at = t > now ? t : now;
  me->on = NULL;
  pass(s, me);
}

void sim_sched_block(sim_sched* s, const void* on) {
  sim_actor* me = self;
  if (!s->on || !me || s->quitting) return;
  me->wake_at = NEVER;
  me->on = on;
  pass(s, me);
}

void sim_sched_wake(sim_sched* s, const void* on) {
  if (!s->on) return;
  const uint64_t now = atomic_load_explicit(&s->now, memory_order_relaxed);
  for (int i = 0; i < s->n; i++) {
    sim_actor* a = s->actors[i];
    if (!a->done && a->wake_at == NEVER && a->on == on) {
      a->on = NULL;
      a->wake_at = now;
    }
  }
}

void sim_sched_wake_thread(sim_sched* s, pthread_t t) {
  if (!s->on) return;
  const uint64_t now = atomic_load_explicit(&s->now, memory_order_relaxed);
  for (int i = 0; i < s->n; i++) {
    sim_actor* a = s->actors[i];
    if (!a->done && pthread_equal(a->thread, t) && a->wake_at > now) {
      a->on = NULL;
      a->wake_at = now;
    }
  }
}
