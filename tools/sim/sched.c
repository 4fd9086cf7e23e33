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
 * next (no thread in between); a handoff costs a few microseconds, so a
 * rank's thread keeps its turn for a quantum: due again within
 * SIM_QUANTUM_NS (10 ms) of its turn's start, and before every timer, it
 * goes on at once, its own clock ahead of threads not yet at its time. A
 * proxy thread's ops move by their own draws and the faults' limits alone
 * (proxy.c), and what it waits on from another thread (posted ops) it
 * waits for by blocking, so running ahead changes no time it sees; at
 * 200 us, a poll's length, a 256-rank job with --noise made 595 000
 * handoffs (4.3 s), at 10 ms 19 000 (0.5 s). Each thread's
 * clock only goes forward; the timers (the plugin's, RCCL's watchdog, the
 * signal) run only when every thread has reached their time, so a dump
 * never sees a thread ahead of it. Real threads are kept, not coroutines:
 * the plugin sees each rank's proxy thread as a thread of its own, as under
 * NCCL.
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
  uint64_t last;       /* its own clock when it blocked                     */
  uint64_t turn;       /* its clock when its turn began                     */
  sim_waitq* on;       /* the queue it waits in (sim_sched_wake)            */
  sim_actor* next_waiter;
  int hpos;            /* its place in the heap of actors due; -1 = none    */
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
  s->latest = SIM_CLOCK0_NS;
  s->on = emulated;
  s->actors = NULL;
  s->heap = NULL;
  s->n = s->cap = s->nheap = 0;
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
  free(s->heap);
  s->actors = NULL;
  s->heap = NULL;
  s->nheap = 0;
  s->n = s->cap = 0;
  sem_destroy(&s->main_go);
}

uint64_t sim_sched_now(const sim_sched* s) {
  if (s->on) return atomic_load_explicit(&s->now, memory_order_relaxed) - SIM_CLOCK0_NS;
  return mono_ns() - s->t0_ns;
}

/* The actors due, a binary heap by (wake_at, id): the one due first on
 * top, ties to the one spawned first. The actor running is not in it, nor
 * one blocked or ended. Used by the baton's holder only. */
static int before(const sim_actor* a, const sim_actor* b) {
  return a->wake_at != b->wake_at ? a->wake_at < b->wake_at : a->id < b->id;
}

static void heap_set(sim_sched* s, int i, sim_actor* a) {
  s->heap[i] = a;
  a->hpos = i;
}

static void heap_up(sim_sched* s, int i) {
  sim_actor* a = s->heap[i];
  while (i > 0) {
    int p = (i - 1) / 2;
    if (!before(a, s->heap[p])) break;
    heap_set(s, i, s->heap[p]);
    i = p;
  }
  heap_set(s, i, a);
}

static void heap_down(sim_sched* s, int i) {
  sim_actor* a = s->heap[i];
  for (;;) {
    int c = 2 * i + 1;
    if (c >= s->nheap) break;
    if (c + 1 < s->nheap && before(s->heap[c + 1], s->heap[c])) c++;
    if (!before(s->heap[c], a)) break;
    heap_set(s, i, s->heap[c]);
    i = c;
  }
  heap_set(s, i, a);
}

static void heap_push(sim_sched* s, sim_actor* a) {
  s->heap[s->nheap] = a;
  a->hpos = s->nheap++;
  heap_up(s, a->hpos);
}

static sim_actor* heap_pop(sim_sched* s) {
  if (s->nheap == 0) return NULL;
  sim_actor* top = s->heap[0];
  top->hpos = -1;
  if (--s->nheap > 0) {
    s->heap[0] = s->heap[s->nheap];
    heap_down(s, 0);
  }
  return top;
}

/* a's wake_at went down: its place in the heap, or a place there. */
static void heap_sooner(sim_sched* s, sim_actor* a) {
  if (a->hpos < 0) heap_push(s, a);
  else heap_up(s, a->hpos);
}

/* The clock of the thread about to run. */
static void set_now(sim_sched* s, uint64_t t) {
  atomic_store_explicit(&s->now, t, memory_order_relaxed);
  if (t > s->latest) s->latest = t;
}

/* When the first timer (an actor no job thread waits on) is due. */
static uint64_t timers_due(const sim_sched* s) {
  uint64_t t = NEVER;
  for (int i = 0; i < s->n && i < SIM_TIMER_ACTORS; i++) {
    const sim_actor* a = s->actors[i];
    if (!a->done && !a->essential && a->wake_at < t) t = a->wake_at;
  }
  return t;
}

/* Hands the baton to the actor due first (the caller, `me`, included unless
 * it ended) and, when that is another, waits to get it back. */
static void pass(sim_sched* s, sim_actor* me) {
  if (me && !me->done && me->wake_at != NEVER) heap_push(s, me);
  sim_actor* next = s->quitting ? NULL : heap_pop(s);
  if (!next) {
    if (!s->quitting && s->essential_left > 0) {
      s->deadlock = 1; /* every actor waits on another: a bug of the emulator */
      fprintf(stderr, "proxytrace sim: emulated time: every thread waits on another (a bug); the job ends here\n");
    }
    sem_post(&s->main_go);
  } else {
    set_now(s, next->wake_at);
    next->turn = next->wake_at;
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
    sim_actor** nh = realloc(s->heap, (size_t)cap * sizeof *nh);
    if (!nh) return ENOMEM;
    s->heap = nh;
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
  heap_push(s, a);
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

uint64_t sim_sched_latest(const sim_sched* s) { return s->on ? s->latest - SIM_CLOCK0_NS : sim_sched_now(s); }

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
  /* Its quantum: a rank's thread due again soon keeps its turn, its own
   * clock running ahead of threads not yet at its time, as long as no
   * timer (the plugin's, the watchdog's, the signal's) is due first: the
   * timers see every thread as of their time. */
  if (me->essential && me->wake_at <= me->turn + SIM_QUANTUM_NS && me->wake_at < timers_due(s)) {
    set_now(s, me->wake_at);
    return;
  }
  pass(s, me);
}

void sim_sched_block(sim_sched* s, sim_waitq* q) {
  sim_actor* me = self;
  if (!s->on || !me || s->quitting) return;
  me->last = atomic_load_explicit(&s->now, memory_order_relaxed);
  me->wake_at = NEVER;
  me->on = q;
  me->next_waiter = q->head;
  q->head = me;
  pass(s, me);
}

/* a, blocked or due later, is due now (at its own clock if that is ahead). */
static void wake_now(sim_sched* s, sim_actor* a) {
  const uint64_t now = atomic_load_explicit(&s->now, memory_order_relaxed);
  const uint64_t at = a->wake_at == NEVER && a->last > now ? a->last : now;
  if (a->done || a->wake_at <= at) return;
  a->wake_at = at;
  heap_sooner(s, a);
}

void sim_sched_wake(sim_sched* s, sim_waitq* q) {
  if (!s->on) return;
  sim_actor* a = q->head;
  q->head = NULL;
  for (; a; a = a->next_waiter) {
    a->on = NULL;
    wake_now(s, a);
  }
}

void sim_sched_wake_thread(sim_sched* s, pthread_t t) {
  if (!s->on) return;
  for (int i = 0; i < s->n; i++) {
    sim_actor* a = s->actors[i];
    if (!pthread_equal(a->thread, t)) continue;
    if (a->on) { /* out of its queue */
      for (sim_actor** p = &a->on->head; *p; p = &(*p)->next_waiter)
        if (*p == a) {
          *p = a->next_waiter;
          break;
        }
      a->on = NULL;
    }
    wake_now(s, a);
  }
}
