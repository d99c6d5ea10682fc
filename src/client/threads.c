/*
 * threads.c - every thread gets an alternate signal stack, and a crash can
 * see the other threads.
 *
 * A stack overflow can only be reported if the SIGSEGV handler runs on a
 * stack other than the one that overflowed, and sigaltstack() is per
 * thread.  So: the installing thread gets one in faultline_install(); threads
 * that already exist get one by being sent the dump signal (their handler
 * maps and installs it); threads created later get one because we wrap
 * pthread_create() and set it up before the thread's own function runs,
 * freeing it again when the thread exits; so do the threads the C library
 * starts for SIGEV_THREAD timers, through our timer_create().
 *
 * On a crash, fl_threads_stop() sends the same dump signal to every other
 * thread; each one copies its registers into a slot, acknowledges, and parks
 * (bounded) so that its stack stays still while the crashing thread unwinds
 * it.  A thread that does not answer in time (signal blocked, stuck in the
 * kernel) is listed without frames.
 *
 * SIGNAL-SAFE ZONE: fl_threads_stop(), fl_threads_emit(), the dump handler and
 * fl_ensure_altstack() use system calls only (mmap, sigaltstack, tgkill,
 * getdents64, nanosleep).  The pthread_create wrapper runs in ordinary
 * context.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "fl_client.h"

#define ALTSTACK_SIZE (128 * 1024)
#define ALTSTACK_MIN (32 * 1024)

enum { CMD_NONE, CMD_ALTSTACK, CMD_DUMP };

static volatile int command;
static volatile int acks;
static volatile int released;
static bool installed;
static pthread_key_t stack_key;

static struct slot {
    volatile pid_t tid;
    volatile int state; /* 0 asked, 1 registers captured */
    fl_regs regs;
    uint64_t ctx;  /* the thread's calling context (context.c) */
    int have_ctx;
} slots[FL_MAX_THREADS];
static int nslots;
static pid_t capture_tids[FL_MAX_THREADS];

/* /proc/self/task, opened at install and kept: a crash in a process out
 * of descriptors (RLIMIT_NOFILE reached) or whose /proc is gone
 * (unmounted in its mount namespace) still finds and stops the other
 * threads.  Unstopped, one that calls exit() ends the process with its
 * own status and no log.  Used only while it is still that directory in
 * this process: a forked child, or a program that closed or reused the
 * descriptor, opens the directory afresh, as before. */
static int task_fd = -1;
static pid_t task_pid;
static dev_t task_dev;
static ino_t task_ino;

static void *map_altstack(void)
{
    /* One guard page below the stack: an overflow of the alternate stack
     * itself faults cleanly instead of corrupting a neighbour mapping. */
    void *p = mmap(NULL, ALTSTACK_SIZE + 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    mprotect(p, 4096, PROT_NONE);
    return p;
}

/* Returns the mapping it installed, or NULL if the thread already had a
 * usable alternate stack (or none could be made). */
static void *ensure_altstack(void)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE) &&
        cur.ss_size >= ALTSTACK_MIN)
        return NULL;
    void *p = map_altstack();
    if (!p)
        return NULL;
    stack_t ss;
    ss.ss_sp = (char *)p + 4096;
    ss.ss_size = ALTSTACK_SIZE;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(p, ALTSTACK_SIZE + 4096);
        return NULL;
    }
    return p;
}

void fl_ensure_altstack(void)
{
    (void)ensure_altstack();
}

static void dump_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    int saved = errno;
    /* Only signals we sent ourselves count; anything else is ignored. */
    if (!si || si->si_code != SI_TKILL || si->si_pid != fl_getpid()) {
        errno = saved;
        return;
    }
    if (command == CMD_ALTSTACK) {
        fl_ensure_altstack();
        /* rt_sigreturn re-installs the alternate stack saved in the
         * ucontext on entry (none), undoing the sigaltstack() above; so
         * hand the new one to the kernel through the ucontext as well. */
        stack_t now;
        if (uc && sigaltstack(NULL, &now) == 0 && !(now.ss_flags & SS_DISABLE))
            ((ucontext_t *)uc)->uc_stack = now;
        __atomic_add_fetch(&acks, 1, __ATOMIC_SEQ_CST);
    } else if (command == CMD_DUMP) {
        pid_t self = fl_gettid();
        for (int i = 0; i < nslots; i++) {
            if (slots[i].tid != self)
                continue;
            fl_regs_from_ucontext(&slots[i].regs, uc);
            slots[i].have_ctx = fl_context_get(&slots[i].ctx);
            __atomic_store_n(&slots[i].state, 1, __ATOMIC_SEQ_CST);
            break;
        }
        /* Park so our stack stays still while it is read, and so that we
         * cannot end the process before the log is named; bounded (2 s).
         * A thread past the log's FL_MAX_THREADS has no slot and parks
         * too.  On the futex, not in a sleep loop: hundreds of threads
         * waking every millisecond would take the cores from the crash. */
        struct timespec ts = {0, 500000000};
        for (int k = 0; k < 4 && !__atomic_load_n(&released, __ATOMIC_SEQ_CST); k++)
            syscall(SYS_futex, &released, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    }
    errno = saved;
}

const fl_dirent64 *fl_dir_next(fl_dir_reader *r)
{
    if (r->at >= r->len) {
        r->len = syscall(SYS_getdents64, r->fd, r->buf, r->cap);
        r->at = 0;
        if (r->len <= 0)
            return NULL;
    }
    const fl_dirent64 *d = (const void *)(r->buf + r->at);
    if (d->reclen == 0)
        return NULL;
    r->at += d->reclen;
    return d;
}

/* Lists up to max of our threads' ids (other than the caller) through
 * getdents64; the threads past max are counted in *more and sent sig. */
static int list_tasks(pid_t *out, int max, int sig, int *more)
{
    struct stat sb;
    int fd = __atomic_load_n(&task_fd, __ATOMIC_ACQUIRE);
    bool kept = fd >= 0 && fl_getpid() == task_pid && fstat(fd, &sb) == 0 &&
                sb.st_dev == task_dev && sb.st_ino == task_ino &&
                syscall(SYS_lseek, fd, 0, SEEK_SET) == 0;
    if (!kept)
        fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int n = 0;
    pid_t self = fl_gettid();
    if (fd < 0)
        return 0;
    char buf[4096];
    fl_dir_reader r = {.fd = fd, .buf = buf, .cap = sizeof buf};
    const fl_dirent64 *d;
    uint64_t tid;
    /* Bounded: a program creating threads as fast as it is read. */
    for (int seen = 0; seen < 1 << 18 && (d = fl_dir_next(&r)); seen++)
        if (d->name[0] != '.' && fl_parse_u64(d->name, &tid) == 0 && (pid_t)tid != self) {
            if (n < max) {
                out[n++] = (pid_t)tid;
            } else {
                ++*more;
                syscall(SYS_tgkill, fl_getpid(), (pid_t)tid, sig);
            }
        }
    if (!kept)
        close(fd);
    return n;
}

static void install_dump_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = dump_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK; /* sa_mask: empty (memset) */
    sigaction(fl_g.dump_signal, &sa, NULL);
}

static void wait_for(volatile int *counter, int want, int64_t budget_ns)
{
    int64_t end = fl_clock_ns(CLOCK_MONOTONIC) + budget_ns;
    struct timespec ts = {0, 50000};
    while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < want &&
           fl_clock_ns(CLOCK_MONOTONIC) < end)
        syscall(SYS_nanosleep, &ts, NULL);
}

/* The fault signals unblocked in this thread (interpose.c). */
static void unblock_faults(void)
{
    static const uint64_t faults = FL_FAULT_SIGS;
    fl_set_sigmask(SIG_UNBLOCK, (const sigset_t *)&faults, NULL);
}

/* fl-lint: install-time */
static void free_altstack(void *p)
{
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    munmap(p, ALTSTACK_SIZE + 4096);
}

int fl_threads_init(void)
{
    int rc = pthread_key_create(&stack_key, free_altstack);
    if (rc != 0)
        return errno = rc, -1; /* faultline_install()'s errno */
    /* The kernel's signal frame and the handler use the top ~10 KiB of the
     * alternate stack: make those pages present now, for the installing
     * thread (the one most programs crash on), if the stack is ours.  Other
     * threads' alternate stacks are left to fault in, to keep their memory
     * cost at zero. */
    char *alt = ensure_altstack();
    if (alt)
        fl_prefault(alt + 4096 + ALTSTACK_SIZE - 16384, 16384);
    fl_prefault(capture_tids, sizeof capture_tids);
    fl_prefault(slots, sizeof slots[0] * 16);
    installed = true;
    fl_g.faults_open = true;
    unblock_faults();
    if (fl_g.dump_signal <= 0)
        return 0;
    install_dump_handler();

    /* Threads that existed before install: ask each to set up its own
     * alternate stack, and wait (bounded) for the answers. */
    static pid_t tids[FL_MAX_THREADS];
    int more = 0;
    acks = 0;
    command = CMD_ALTSTACK;
    int n = list_tasks(tids, FL_MAX_THREADS, fl_g.dump_signal, &more);
    for (int i = 0; i < n; i++)
        syscall(SYS_tgkill, fl_g.pid, tids[i], fl_g.dump_signal);
    wait_for(&acks, n + more, 500 * 1000000LL);
    command = CMD_NONE;

    /* Kept for the crash (above); not as 0, 1 or 2 of a program started
     * with them closed.  Published last: a crash meanwhile opens its own. */
    int fd = fl_open_high("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0) {
        task_pid = fl_g.pid;
        task_dev = sb.st_dev;
        task_ino = sb.st_ino;
        __atomic_store_n(&task_fd, fd, __ATOMIC_RELEASE);
    } else if (fd >= 0) {
        close(fd);
    }
    return 0;
}

/* fl-lint: signal-safe */
int fl_threads_stop(int *omitted)
{
    pid_t *tids = capture_tids;
    nslots = 0;
    released = 0;
    acks = 0;
    command = CMD_DUMP; /* before the threads past the log's limit are sent it */
    *omitted = 0;
    int n = list_tasks(tids, FL_MAX_THREADS, fl_g.dump_signal, omitted);
    for (int i = 0; i < n; i++) {
        slots[i].tid = tids[i];
        slots[i].state = 0;
    }
    nslots = n;
    for (int i = 0; i < n; i++)
        syscall(SYS_tgkill, fl_cur.pid, tids[i], fl_g.dump_signal);

    /* Wait until every thread answered or 100 ms passed. */
    int64_t end = fl_clock_ns(CLOCK_MONOTONIC) + 100 * 1000000LL;
    struct timespec ts = {0, 20000};
    for (;;) {
        int done = 0;
        for (int i = 0; i < n; i++)
            done += __atomic_load_n(&slots[i].state, __ATOMIC_SEQ_CST);
        if (done == n || fl_clock_ns(CLOCK_MONOTONIC) >= end)
            break;
        syscall(SYS_nanosleep, &ts, NULL);
    }
    return n;
}

/* fl-lint: signal-safe */
void fl_threads_emit(void (*emit)(pid_t tid, const char *name, const fl_regs *regs,
                                  const uint64_t *ctx))
{
    int n = nslots;
    for (int i = 0; i < n; i++) {
        char path[64] = "/proc/self/task/", name[64];
        size_t k = fl_strlen(path);
        k += fl_fmt_u64(path + k, (uint64_t)slots[i].tid);
        fl_strlcpy(path + k, "/comm", sizeof path - k);
        int len = fl_read_small_file(path, name, sizeof name);
        if (len > 0 && name[len - 1] == '\n')
            name[len - 1] = '\0';
        if (len < 0)
            name[0] = '\0';
        bool have = __atomic_load_n(&slots[i].state, __ATOMIC_SEQ_CST) == 1;
        emit(slots[i].tid, name, have ? &slots[i].regs : NULL,
             have && slots[i].have_ctx ? &slots[i].ctx : NULL);
    }
    command = CMD_NONE;
    /* The threads stay parked until fl_threads_release(): released now,
     * one that calls exit() or _exit() would end the process before the
     * log is finished and named, with its status instead of the signal. */
}

/* fl-lint: signal-safe */
void fl_threads_release(void)
{
    __atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &released, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* fl-lint: install-time */
/* ---- pthread_create wrapper (ordinary context) ---- */

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                 void *);

struct trampoline_arg {
    void *(*fn)(void *);
    void *arg;
};

static void *trampoline(void *p)
{
    struct trampoline_arg t = *(struct trampoline_arg *)p;
    free(p);
    unblock_faults(); /* a mask from pthread_attr_setsigmask_np, or from before install */
    void *stack = ensure_altstack();
    if (stack)
        pthread_setspecific(stack_key, stack); /* freed when the thread exits */
    return t.fn(t.arg);
}

#ifdef __GLIBC__
/* The C library's own name of pthread_create in its static archive, where
 * pthread_create is weak.  A static program has no RTLD_NEXT: it reaches
 * glibc's implementation here -- when it is linked in, which the reference
 * alone (weak, as libc.so does not export the name) does not do: a -static
 * link needs -Wl,-u,__pthread_create_2_1 (docs/client.md; in a dynamic
 * link that option is an error with this hidden reference).  Hidden: the
 * shared libraries, which never run in a static program, resolve it to
 * NULL when they are linked, at no cost in dynamic symbols. */
extern int __pthread_create_2_1(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
        __attribute__((weak, visibility("hidden")));
#endif

/* ---- SIGEV_THREAD timers and message queues (ordinary context) ----
 *
 * The C library runs a SIGEV_THREAD timer's function on a thread it
 * starts itself, with its own pthread_create, past ours: that thread had
 * no alternate stack, and a stack overflow there ended the process
 * without a log.  So timer_create() is ours too: the C library gets a
 * trampoline that sets the stack up, then calls the application's
 * function.  The function and its value wait in a slot, named in the
 * sigval by index and generation, so that a notification still on its
 * way when timer_delete() frees the slot finds it gone and does nothing
 * (the timer is deleted), never another timer's.  Past TIMER_SLOTS live
 * timers of this kind, a timer is created as before, without.
 * mq_notify()'s SIGEV_THREAD notifications are the same case, with the
 * same slots: a queue notifies once, so its slot is freed when the
 * notification comes, when the queue's registration is replaced or
 * removed, or when the descriptor is closed with mq_close() (one closed
 * with close() keeps its slot until its number is registered again). */
#define TIMER_SLOTS 64

typedef int (*timer_create_fn)(clockid_t, struct sigevent *, timer_t *);
typedef int (*timer_delete_fn)(timer_t);
typedef int (*mq_notify_fn)(mqd_t, const struct sigevent *);
typedef int (*mq_close_fn)(mqd_t);

static struct {
    void (*fn)(union sigval);
    union sigval value;
    timer_t id;
    int mq;        /* the queue + 1, for mq_notify(); 0: a timer */
    uintptr_t gen; /* 0: free */
} tslots[TIMER_SLOTS];
static uintptr_t tgen;
static pthread_mutex_t tlock = PTHREAD_MUTEX_INITIALIZER;

/* A child of fork() has one thread, and none of its parent's timers or
 * queue notifications (fork(2)): every slot is stale, and the lock may
 * have been held by a thread that is not there -- the child's first
 * timer call would wait on it for good. */
static void timers_after_fork(void)
{
    memset(tslots, 0, sizeof tslots);
    tlock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}
__attribute__((constructor)) static void timers_init(void)
{
    pthread_atfork(NULL, NULL, timers_after_fork);
}

static void timer_trampoline(union sigval v)
{
    uintptr_t key = (uintptr_t)v.sival_ptr, i = key % TIMER_SLOTS;
    pthread_mutex_lock(&tlock);
    bool live = tslots[i].gen == key / TIMER_SLOTS;
    void (*fn)(union sigval) = tslots[i].fn;
    union sigval value = tslots[i].value;
    if (live && tslots[i].mq)
        tslots[i].gen = 0; /* a queue notifies once */
    pthread_mutex_unlock(&tlock);
    if (!live)
        return;
    unblock_faults();
    void *stack = ensure_altstack();
    if (stack)
        pthread_setspecific(stack_key, stack); /* freed when the thread exits */
    fn(value);
}

#ifdef __GLIBC__
/* The C library's own names in its static archive (as __pthread_create_2_1
 * below): a -static program that creates timers links with
 * -Wl,-u,___timer_create,-u,___timer_delete (docs/client.md). */
extern int ___timer_create(clockid_t, struct sigevent *, timer_t *)
    __attribute__((weak, visibility("hidden")));
extern int ___timer_delete(timer_t) __attribute__((weak, visibility("hidden")));
/* Likewise -Wl,-u,__mq_notify for mq_notify. */
extern int __mq_notify(mqd_t, const struct sigevent *) __attribute__((weak, visibility("hidden")));
#endif

/* A slot for a SIGEV_THREAD notification of sev (mq: the queue + 1, or 0
 * for a timer), and in *ours the same notification through the
 * trampoline; TIMER_SLOTS when there is none (not installed, another
 * kind of notification, or every slot taken). */
static size_t take_slot(const struct sigevent *sev, struct sigevent *ours, int mq)
{
    size_t i = 0;
    if (!installed || !sev || sev->sigev_notify != SIGEV_THREAD || !sev->sigev_notify_function)
        return TIMER_SLOTS;
    pthread_mutex_lock(&tlock);
    while (i < TIMER_SLOTS && tslots[i].gen)
        i++;
    if (i < TIMER_SLOTS) {
        *ours = *sev;
        ours->sigev_notify_function = timer_trampoline;
        ours->sigev_value.sival_ptr = (void *)(++tgen * TIMER_SLOTS + i);
        tslots[i].fn = sev->sigev_notify_function;
        tslots[i].value = sev->sigev_value;
        tslots[i].mq = mq;
        tslots[i].gen = tgen;
    }
    pthread_mutex_unlock(&tlock);
    return i;
}

FL_EXPORT int timer_create(clockid_t clock, struct sigevent *sev, timer_t *id)
{
    static void *cache;
    timer_create_fn real =
        (timer_create_fn)fl_real_fn(&cache, "timer_create", FL_GLIBC_OWN(___timer_create));
    if (!real)
        return -1;
    struct sigevent ours;
    size_t i = take_slot(sev, &ours, 0);
    if (i == TIMER_SLOTS)
        return real(clock, sev, id);
    int rc = real(clock, &ours, id);
    pthread_mutex_lock(&tlock);
    if (rc == 0)
        tslots[i].id = *id;
    else
        tslots[i].gen = 0;
    pthread_mutex_unlock(&tlock);
    return rc;
}

FL_EXPORT int timer_delete(timer_t id)
{
    static void *cache;
    timer_delete_fn real =
        (timer_delete_fn)fl_real_fn(&cache, "timer_delete", FL_GLIBC_OWN(___timer_delete));
    if (!real)
        return -1;
    int rc = real(id);
    pthread_mutex_lock(&tlock);
    for (size_t i = 0; rc == 0 && i < TIMER_SLOTS; i++)
        if (tslots[i].gen && !tslots[i].mq && tslots[i].id == id)
            tslots[i].gen = 0;
    pthread_mutex_unlock(&tlock);
    return rc;
}

FL_EXPORT int mq_notify(mqd_t q, const struct sigevent *sev)
{
    static void *cache;
    mq_notify_fn real = (mq_notify_fn)fl_real_fn(&cache, "mq_notify", FL_GLIBC_OWN(__mq_notify));
    if (!real) {
        /* A static program linked without -u,__mq_notify: what needs no
         * thread is the system call itself. */
        if (!sev || sev->sigev_notify != SIGEV_THREAD)
            return (int)syscall(SYS_mq_notify, q, sev);
        return -1;
    }
    struct sigevent ours;
    size_t i = take_slot(sev, &ours, q + 1);
    pthread_mutex_lock(&tlock);
    uintptr_t upto = tgen; /* not the slots taken from now on (by the function) */
    pthread_mutex_unlock(&tlock);
    int rc = real(q, i < TIMER_SLOTS ? &ours : sev);
    /* Registered or unregistered: the queue had no registration before,
     * or has none now, so its other slots are stale; failed: ours is. */
    pthread_mutex_lock(&tlock);
    for (size_t j = 0; j < TIMER_SLOTS; j++)
        if (tslots[j].mq == q + 1 && tslots[j].gen <= upto && (rc == 0) != (j == i))
            tslots[j].gen = 0;
    pthread_mutex_unlock(&tlock);
    return rc;
}

/* Closing the descriptor ends its registration (POSIX): its slots are
 * freed first, while no other queue can have its number (a notification
 * on its way is dropped, as after timer_delete()).  Falls back to
 * close(), which is what mq_close() is on Linux: a static program needs
 * no -u option. */
FL_EXPORT int mq_close(mqd_t q)
{
    static void *cache;
    mq_close_fn real = (mq_close_fn)fl_real_fn(&cache, "mq_close", (void *)close);
    pthread_mutex_lock(&tlock);
    for (size_t j = 0; j < TIMER_SLOTS; j++)
        if (tslots[j].mq == q + 1)
            tslots[j].gen = 0;
    pthread_mutex_unlock(&tlock);
    return real(q);
}

/* Interposes the C library's pthread_create (the dynamic linker finds ours
 * first in a program linked with libfaultline or when it is preloaded).
 * Until faultline_install() ran it only forwards. */
FL_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                             void *(*fn)(void *), void *arg)
{
    static void *cache;
    pthread_create_fn real =
        (pthread_create_fn)fl_real_fn(&cache, "pthread_create", FL_GLIBC_OWN(__pthread_create_2_1));
    if (!real)
        return EAGAIN;
    if (!installed)
        return real(th, attr, fn, arg);
    struct trampoline_arg *t = malloc(sizeof *t);
    if (!t)
        return real(th, attr, fn, arg);
    t->fn = fn;
    t->arg = arg;
    int rc = real(th, attr, trampoline, t);
    if (rc != 0)
        free(t);
    return rc;
}
