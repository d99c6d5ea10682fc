/*
 * interpose.c - C library functions the library replaces, besides
 * pthread_create, the timers' and mq_notify (threads.c): ordinary context.
 *
 * Built without unwind tables (the library's text budget): these run
 * outside the crash (but for fl_set_sigmask() in die()), and a walk through
 * one of their frames follows its frame pointer.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <threads.h>
#include <unistd.h>

#include "fl_client.h"
#include "fl_trace.h"

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

void *fl_real_fn(void **cache, const char *name, void *fallback)
{
    void *p = *cache;
    if (!p)
        p = dlsym(RTLD_NEXT, name);
    if (!p)
        p = fallback;
    if (!p)
        errno = ENOSYS;
    return *cache = p;
}

/* ---- dlclose: the calling context's caches ----
 *
 * The -finstrument-functions hooks cache, per thread, the last two
 * modules instrumented code ran in (context.c).  Once a library is
 * dlclose()d, another one may be mapped where it was, and a cache still
 * holding the old range would give the new library's functions the old
 * one's bias and build id: values that decode to nothing, or wrongly.
 * Other threads' caches are out of reach, so dlclose() counts instead,
 * and the enter hook drops its thread's cache when the count moved: one
 * more load and compare per call, one miss per thread per dlclose().
 * Counted after the unmapping (an entry made before it is stale), and
 * before it too: a dlopen() in another thread, which the loader's lock
 * orders after the unmapping, could come before that second count. */
#ifdef __GLIBC__
/* Its own name in glibc's static archive, as __pthread_create_2_1
 * (threads.c); no -u option needed: a static program that opened a
 * library has it, as glibc's static dlopen() refers to it. */
extern int __dlclose(void *) __attribute__((weak, visibility("hidden")));
#endif
uintptr_t fl_ctx_unmaps;

/* The PT_LOAD span [d[1], d[2]) of the object whose bias is d[0]. */
static int span_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    uint64_t *d = data;
    (void)size;
    if (info->dlpi_addr != d[0])
        return 0;
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD)
            continue;
        if (lo < d[1])
            d[1] = lo;
        if (lo + ph->p_memsz > d[2])
            d[2] = lo + ph->p_memsz;
    }
    return 1;
}

FL_EXPORT int dlclose(void *h)
{
    static void *cache;
    int (*real)(void *) = (int (*)(void *))fl_real_fn(&cache, "dlclose", FL_GLIBC_OWN(__dlclose));
    __atomic_add_fetch(&fl_ctx_unmaps, 1, __ATOMIC_RELAXED);
    /* Without the C library's (a static program that never opened a
     * library), nothing is unloaded, as with RTLD_NODELETE. */
    uint64_t span[3] = {0, UINT64_MAX, 0};
    struct link_map *lm = NULL;
    if (real && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_addr) {
        span[0] = lm->l_addr;
        dl_iterate_phdr(span_cb, span);
    }
    int rc = real ? real(h) : 0;
    __atomic_add_fetch(&fl_ctx_unmaps, 1, __ATOMIC_RELAXED);
    /* Only an object that left: a dlclose() that only dropped a reference
     * leaves its events readable. */
    uint64_t again[3] = {span[0], UINT64_MAX, 0};
    if (span[2] > span[1] && (dl_iterate_phdr(span_cb, again), again[2] <= again[1]))
        fl_trace_unloaded(span[1], span[2]);
    return rc;
}

fl_unload fl_unloads[FL_UNLOADS];

void fl_trace_unloaded(uint64_t lo, uint64_t hi)
{
    static unsigned next;
    /* After the unmapping: an event claimed before this head and sited in
     * [lo, hi) is the old object's (or, rarely, one of a library another
     * thread mapped there meanwhile: shown unreadable too, never wrong). */
    uint64_t head = __atomic_load_n(&fl_traces.head, __ATOMIC_ACQUIRE) + 1; /* 0: empty */
    unsigned i = 0;
    while (i < FL_UNLOADS && !(__atomic_load_n(&fl_unloads[i].lo, __ATOMIC_RELAXED) == lo &&
                               __atomic_load_n(&fl_unloads[i].hi, __ATOMIC_RELAXED) == hi))
        i++;
    if (i == FL_UNLOADS)
        i = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % FL_UNLOADS;
    fl_unload *u = &fl_unloads[i];
    __atomic_store_n(&u->head, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&u->lo, lo, __ATOMIC_RELEASE);
    __atomic_store_n(&u->hi, hi, __ATOMIC_RELEASE);
    __atomic_store_n(&u->head, head, __ATOMIC_RELEASE);
}
