/*
 * clockstep_shim.c - preloaded before libfaketime by the clockstep test,
 * so that a step of the faked wall clock reaches the waits in progress the
 * way a step of the real clock does.
 *
 * The kernel measures a wait with an absolute CLOCK_REALTIME deadline
 * (pthread_cond_timedwait on a condition variable left at its default
 * clock) against the wall clock as it is now: stepped back two hours, a
 * wait of 500 ms in progress lasts two hours and 500 ms.  libfaketime turns
 * such a deadline into a real one once, when the wait starts, so its step
 * never reaches a wait in progress -- it would hide exactly the stall the
 * test looks for.  Here a CLOCK_REALTIME wait is cut into slices of 20 ms,
 * and before each the deadline is compared with the (faked) wall clock
 * again.  A condition variable made for CLOCK_MONOTONIC goes straight to
 * glibc: libfaketime 0.9.10 with DONT_FAKE_MONOTONIC=1 returns from such a
 * wait at once, which would turn every idle loop into a busy one.
 *
 * Test code only; not thread-hostile (a mutex guards the table of
 * monotonic condition variables), but not for production use.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SLICE_NS 20000000LL
#define MAX_MONO 1024

static pthread_mutex_t mono_mu = PTHREAD_MUTEX_INITIALIZER;
static const void *mono[MAX_MONO];
static size_t nmono;

/* Records whether the condition variable at c measures CLOCK_MONOTONIC
 * (an address may be reused for another one, so both ways). */
static void note(const void *c, int is_mono)
{
    pthread_mutex_lock(&mono_mu);
    size_t i = 0;
    while (i < nmono && mono[i] != c)
        i++;
    if (is_mono && i == nmono && nmono < MAX_MONO)
        mono[nmono++] = c;
    else if (!is_mono && i < nmono)
        mono[i] = mono[--nmono];
    pthread_mutex_unlock(&mono_mu);
}

static int is_mono(const void *c)
{
    pthread_mutex_lock(&mono_mu);
    size_t i = 0;
    while (i < nmono && mono[i] != c)
        i++;
    int r = i < nmono;
    pthread_mutex_unlock(&mono_mu);
    return r;
}

int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
    static int (*next)(pthread_cond_t *, const pthread_condattr_t *);
    if (!next)
        next = (int (*)(pthread_cond_t *, const pthread_condattr_t *))dlsym(RTLD_NEXT,
                                                                            "pthread_cond_init");
    clockid_t ck = CLOCK_REALTIME;
    if (a)
        pthread_condattr_getclock(a, &ck);
    note(c, ck == CLOCK_MONOTONIC);
    return next(c, a);
}

static int64_t ns_of(const struct timespec *t)
{
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

typedef int (*timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
    static timedwait_fn next, real;
    if (!next)
        next = (timedwait_fn)dlsym(RTLD_NEXT, "pthread_cond_timedwait");
    if (is_mono(c)) {
        if (!real) {
            void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
            real = h ? (timedwait_fn)dlvsym(h, "pthread_cond_timedwait", "GLIBC_2.3.2") : NULL;
        }
        return (real ? real : next)(c, m, abs);
    }
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now); /* libfaketime's: the faked wall clock */
        int64_t left = ns_of(abs) - ns_of(&now);
        if (left <= 0)
            return ETIMEDOUT;
        int64_t at = ns_of(&now) + (left < SLICE_NS ? left : SLICE_NS);
        struct timespec slice = {.tv_sec = (time_t)(at / 1000000000),
                                 .tv_nsec = (long)(at % 1000000000)};
        int rc = next(c, m, &slice);
        if (rc != ETIMEDOUT)
            return rc;
    }
}
