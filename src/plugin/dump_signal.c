/*
 * dump_signal.c — PROXYTRACE_DUMP_SIGNAL: a signal that asks for a dump, and
 * the fd that wakes the dumper thread.
 *
 * The handler is installed only when the variable asks for it, and only
 * while a communicator lives: NCCL once took SIGUSR1 unconditionally and
 * broke SLURM's preemption notice, which jobs catch on that signal
 * (NVIDIA/nccl#704). It does what a signal handler may do and nothing more
 * — an atomic flag and a write(2) to an eventfd — and then calls the
 * handler that was installed before it (a function, not SIG_DFL or
 * SIG_IGN: the default action of USR1 would end the process the user
 * asked to dump), so an application's own use of the signal goes on. At
 * the last finalize the previous disposition is restored, unless someone
 * replaced ours meanwhile. The dump itself is formatted on the dumper
 * thread.
 *
 * The wake fd lives as long as the process (a handler may run while the
 * dumper stops, and must never write to a closed, reused fd number); a fork
 * child gets its own, so its wakeups do not reach the parent's dumper.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "plugin/plugin.h"

static _Atomic int wake_fd = -1;
static _Atomic int pending;
static struct sigaction previous;
static int installed_sig; /* 0 = none; changed under context.c's lifecycle lock */

int pt_signal_wake_fd(void) {
  int fd = atomic_load(&wake_fd);
  if (fd >= 0) return fd;
  fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int expected = -1;
  if (fd >= 0 && !atomic_compare_exchange_strong(&wake_fd, &expected, fd)) {
    close(fd);
    fd = expected;
  }
  return fd;
}

void pt_signal_reset_after_fork(void) {
  int old = atomic_load(&wake_fd);
  if (old < 0) return;
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  atomic_store(&wake_fd, fd); /* a handler in this thread sees the old or the new, both open */
  close(old);
}

static void on_signal(int sig, siginfo_t* info, void* uctx) {
  const int saved = errno;
  atomic_store(&pending, 1);
  const int fd = atomic_load(&wake_fd);
  if (fd >= 0) {
    const uint64_t one = 1;
    ssize_t w = write(fd, &one, sizeof one);
    (void)w; /* EAGAIN: the counter is full, the dumper is awake anyway */
  }
  errno = saved;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(sig, info, uctx);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

int pt_signal_install(int sig, ncclDebugLogger_t log) {
  if (sig <= 0 || installed_sig) return 0;
  if (pt_signal_wake_fd() < 0) {
    PT_LOG_WARN(log, "proxytrace: cannot create the eventfd a dump signal needs (%s); no dump signal",
                strerror(errno));
    return -1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old;
  if (sigaction(sig, NULL, &old) != 0) return -1;
  previous = old; /* before ours is in place, so the handler always sees it */
  if (sigaction(sig, &sa, NULL) != 0) {
    PT_LOG_WARN(log, "proxytrace: cannot install the handler of signal %d (%s); no dump signal", sig,
                strerror(errno));
    return -1;
  }
  installed_sig = sig;
  return 0;
}

void pt_signal_uninstall(void) {
  if (!installed_sig) return;
  struct sigaction cur;
  if (sigaction(installed_sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
      cur.sa_sigaction == on_signal)
    sigaction(installed_sig, &previous, NULL);
  installed_sig = 0;
}

int pt_signal_take(void) { return atomic_exchange(&pending, 0); }
