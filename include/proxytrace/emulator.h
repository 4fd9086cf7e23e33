/*
 * emulator.h — how an emulator runs the proxytrace plugin on emulated time.
 *
 * `proxytrace sim` drives the plugin as NCCL or RCCL would, but every time
 * the plugin uses must be the emulator's, so that the same job and seed
 * give the same dump and metrics files on any machine under any load: the
 * hot path's timestamps, the stall watchdog, periodic dumps, step metrics,
 * the times the files state. The plugin exports one table for that,
 * `proxytraceEmulator_v2`, found with dlsym on the loaded plugin; a host
 * never uses it, and a plugin without it (any other) runs on real time.
 * `proxytraceEmulator_v1` is the same table without host(), for an
 * emulator that knows only that one.
 *
 *   attach(now, epoch_ns)
 *       Before the plugin's first communicator: from now on its clock is
 *       the value at `now` (nanoseconds, advanced by the emulator alone,
 *       read with relaxed atomic loads; 1 tick = 1 ns) and wall-clock time
 *       is epoch_ns + *now. The plugin then starts no dumper thread: its
 *       timers (stall checks, periodic dumps, metrics files, memory for the
 *       recording threads) run only inside tick(). Returns 0, or -1 while
 *       a communicator exists (its times came from another clock). It
 *       lasts until the last communicator is finalized (the emulator's job
 *       is over, and its clock may go): the plugin is then on real time
 *       again, and a next job attaches anew. attach(NULL, 0) ends it
 *       before any communicator was created.
 *
 *   tick()
 *       Runs every timer due at *now, and a dump asked for by the dump
 *       signal since the last tick; returns the emulated time (ns) at which
 *       the next timer is due, or UINT64_MAX when none will be until a
 *       communicator is created. The emulator calls it from one thread,
 *       while no other thread calls the plugin (its schedule is one actor at
 *       a time), at the time the last call returned and whenever it has
 *       sent the dump signal.
 *
 *   host(name)
 *       The host name of the communicators the calling thread creates from
 *       now on, in place of the machine's (gethostname): an emulator runs
 *       every rank in one process, and names each emulated node as its
 *       logs do. The dumps' and metrics files' "host" and their file names
 *       carry it ('/' and ' ' replaced, cut at 63 bytes, as the machine's
 *       name is); a communicator keeps the name it was created with. Per
 *       thread, so that communicators created at once on several threads
 *       each get their own. NULL or "": the machine's name again.
 *
 * The production cost is nil: on the CPU counter's path the hot path reads
 * the counter as before; the emulated clock is read only where the counter
 * is off, which attach() arranges.
 */
#ifndef PROXYTRACE_EMULATOR_H
#define PROXYTRACE_EMULATOR_H

#include <stdatomic.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PT_EMULATOR_SYMBOL "proxytraceEmulator_v2"
#define PT_EMULATOR_SYMBOL_V1 "proxytraceEmulator_v1"

typedef struct {
  const char* name; /* "proxytrace" */
  int (*attach)(const _Atomic uint64_t* now, int64_t epoch_ns);
  uint64_t (*tick)(void);
} proxytraceEmulator_v1_t;

typedef struct {
  const char* name; /* "proxytrace" */
  int (*attach)(const _Atomic uint64_t* now, int64_t epoch_ns);
  uint64_t (*tick)(void);
  void (*host)(const char* name);
} proxytraceEmulator_v2_t;

#ifdef __cplusplus
}
#endif

#endif
