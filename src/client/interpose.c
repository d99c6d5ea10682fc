/*
 * interpose.c - C library functions the library replaces, besides
 * pthread_create (threads.c): ordinary context.
 *
 * Built without unwind tables (the library's text budget): these run
 * outside the crash (but for a sigprocmask() in die()), and a walk through
 * one of their frames follows its frame pointer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <threads.h>
#include <unistd.h>

#include "fl_client.h"

/* ---- the fault signals stay unblocked ----
 *
 * A fault the kernel finds blocked (or ignored) is not delivered: the
 * process is killed at once, with no handler run.  Blocking every signal
 * (sigfillset) in all threads but one that sigwait()s is a common way to
 * write a server, and it would lose every crash of those threads.  So once
 * installed, sigprocmask() and pthread_sigmask() -- ours interpose on the
 * C library's, as pthread_create does -- never block the signals a fault
 * raises (POSIX leaves blocking them undefined), and install and every
 * thread we start unblock them (threads.c).  Like glibc's own, they never
 * block its two internal signals, 32 and 33 (cancellation, setxid). */
long fl_set_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    uint64_t w;
    if (set) {
        memcpy(&w, set, sizeof w);
        w &= ~(3ull << 31);
        if (fl_g.faults_open && how != SIG_UNBLOCK)
            w &= ~FL_FAULT_SIGS;
    }
    return syscall(SYS_rt_sigprocmask, how, set ? &w : NULL, old, sizeof w);
}

FL_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    return (int)fl_set_sigmask(how, set, old);
}

FL_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    int e = errno, rc = fl_set_sigmask(how, set, old) ? errno : 0;
    errno = e;
    return rc;
}

/* fl-lint: install-time */
/* C11 threads: glibc's thrd_create calls its own pthread_create, past
 * ours, so its threads had no alternate stack.  The start function returns
 * int, not void *; glibc calls it through the same cast (on x86-64 and
 * aarch64 the int is the low half of the register, which thrd_join
 * keeps). */
FL_EXPORT int thrd_create(thrd_t *th, thrd_start_t fn, void *arg)
{
    int rc = pthread_create((pthread_t *)th, NULL, (void *(*)(void *))(void (*)(void))fn, arg);
    return rc == 0 ? thrd_success : rc == ENOMEM ? thrd_nomem : thrd_error;
}
