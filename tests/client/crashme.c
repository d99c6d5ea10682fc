/*
 * crashme.c - the program the client tests crash, one way per mode.
 *
 *   crashme MODE
 *
 * Built several times from this one source (tests/client/CMakeLists.txt):
 * -O0 with frame pointers and -O2 without, against the static and the
 * shared library, and once with malloc interposed (FL_TEST_INTERPOSE_MALLOC)
 * to prove the crash handler never touches the heap.  The test driver
 * (client_driver.c) runs it with a fresh FAULTLINE_SPOOL and checks how it
 * ends and what the crash log says.
 *
 * Every function that faults is named crash_* and is noinline, noclone and
 * ends with an empty asm so that it stays a frame of its own: the driver
 * looks for its name among the CALLSTACK frames.
 *
 * Environment read here (besides Faultline's own):
 *   FL_TEST_WORKDIR   scratch directory (the SIGBUS file lives there)
 *   FL_TEST_MARKER    file the application's own signal handler creates
 *   FL_TEST_PLUGIN    shared object dlopen()ed after install (before it in
 *                     plugin_crash_early)
 *   FL_TEST_OBJDIR    many_objects: the shared objects o0.so, o1.so, ...;
 *   FL_TEST_OBJS_BEFORE, FL_TEST_OBJS_AFTER, FL_TEST_OBJS_CLOSE
 *                     how many of them to dlopen() before install and after
 *                     it, and how many of the first to dlclose() again
 */
#undef NDEBUG /* the assert case needs assert() even in release builds */
#define _GNU_SOURCE
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <threads.h>
#include <unistd.h>

#include "faultline.h"

#if defined(__clang__)
#define NOINLINE __attribute__((noinline, used))
#else
#define NOINLINE __attribute__((noinline, noclone, used))
#endif
/* An empty asm after the fault keeps the function from ending in a tail
 * call (its frame would vanish) and from being merged with a twin. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static volatile uintptr_t zero_addr;   /* always 0, opaque to the optimizer */
static volatile int one = 1;
static volatile int recursion_limit = INT_MAX;
static const char *volatile ro_ptr = "a string literal in .rodata";
static char marker_path[4096];
static char workdir[4096];

/* ---------------------------------------------------------------- */
/* malloc interposition: after the crash starts, any call is a failure. */

#ifdef FL_TEST_INTERPOSE_MALLOC
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static volatile int heap_forbidden;

static void heap_violation(const char *what)
{
    if (!heap_forbidden)
        return;
    heap_forbidden = 0;
    /* Tell the driver which call it was, then end with a status it knows. */
    int fd = open(marker_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ssize_t w = write(fd, what, strlen(what));
        (void)w;
        close(fd);
    }
    _exit(99);
}

void *malloc(size_t n)
{
    heap_violation("malloc");
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    heap_violation("calloc");
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    heap_violation("realloc");
    return __libc_realloc(p, n);
}
void free(void *p)
{
    heap_violation("free");
    __libc_free(p);
}
void *memalign(size_t al, size_t n)
{
    heap_violation("memalign");
    return __libc_memalign(al, n);
}
void *aligned_alloc(size_t al, size_t n)
{
    heap_violation("aligned_alloc");
    return __libc_memalign(al, n);
}
int posix_memalign(void **out, size_t al, size_t n)
{
    heap_violation("posix_memalign");
    void *p = __libc_memalign(al, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}
#define FORBID_HEAP() (heap_forbidden = 1)
#else
#define FORBID_HEAP() ((void)0)
#endif

/* ---------------------------------------------------------------- */
/* The faults. */

NOINLINE int crash_null_read(void)
{
    FORBID_HEAP();
    int v = *(volatile int *)zero_addr;
    KEEP_FRAME();
    return v;
}

NOINLINE void crash_null_write(void)
{
    *(volatile int *)zero_addr = 42;
    KEEP_FRAME();
}

NOINLINE void crash_rodata_write(void)
{
    ((volatile char *)ro_ptr)[0] = 'X';
    KEEP_FRAME();
}

NOINLINE int crash_stack_overflow(int depth)
{
    volatile char pad[1024];
    pad[depth & 1023] = (char)depth;
    int r = depth < recursion_limit ? crash_stack_overflow(depth + 1) : 0;
    KEEP_FRAME();
    return r + pad[(depth + 1) & 1023]; /* use after the call: no tail call */
}

NOINLINE void crash_abort(void)
{
    abort();
    KEEP_FRAME();
}

NOINLINE void crash_assert(void)
{
    assert(one == 0);
    KEEP_FRAME();
}

NOINLINE void crash_trap(void)
{
    KEEP_FRAME();
    __builtin_trap();
}

NOINLINE int crash_divzero(void)
{
    volatile int a = 1, b = 0;
    int q = a / b;
    KEEP_FRAME();
    return q;
}

NOINLINE int crash_sigbus(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/sigbus.dat", workdir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, 2 * 4096) != 0)
        return -1;
    volatile char *p = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED || ftruncate(fd, 100) != 0)
        return -1;
    int v = p[4096 + 10]; /* the second page now lies wholly beyond EOF */
    KEEP_FRAME();
    return v;
}

NOINLINE void crash_double_free(void)
{
    char *volatile p = malloc(64);
    free(p);
    free(p); /* glibc: "free(): double free detected in tcache 2", abort */
    KEEP_FRAME();
}

/* A call through a NULL function pointer: frame 0's pc is in no module, the
 * unwinder must take the return address from the stack (x86-64) or the
 * link register (aarch64). */
NOINLINE void crash_null_call(void)
{
    void (*fn)(void) = (void (*)(void))zero_addr;
    fn();
    KEEP_FRAME();
}

/* A call into the program's own data (not executable): frame 0's pc is
 * inside an object but in no function its CFI describes. */
static unsigned char not_code[16] = {0xc3}; /* ret, were it executable */
NOINLINE void crash_data_call(void)
{
    void (*volatile fn)(void) = (void (*)(void))(uintptr_t)not_code;
    fn();
    KEEP_FRAME();
}

/* A SIGSEGV the program sends itself with a fault's code: returning from
 * the handler brings no fault back, yet the process must end with it. */
NOINLINE void crash_forged_fault(void)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGSEGV;
    si.si_code = SEGV_MAPERR;
    syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), SIGSEGV, &si);
    usleep(1000000); /* the backstop's 50 ms pass here */
    KEEP_FRAME();
}

NOINLINE void crash_thread_fault(void)
{
    *(volatile int *)zero_addr = 7;
    KEEP_FRAME();
}

/* Keeps 96 KiB of stack live above the fault so that the STACK lines are
 * not cut short by the top of the stack. */
NOINLINE int crash_deep_stack(void)
{
    volatile char big[96 * 1024];
    for (size_t i = 0; i < sizeof big; i += 512)
        big[i] = (char)i;
    int r = crash_null_read();
    KEEP_FRAME();
    return r + big[100];
}

/* ---------------------------------------------------------------- */
/* Threads. */

static pthread_barrier_t barrier;

NOINLINE void thread_idle_loop(void)
{
    for (;;)
        pause();
    KEEP_FRAME();
}

static void *idle_thread(void *arg)
{
    (void)arg;
    thread_idle_loop();
    return NULL;
}

static void *overflow_thread(void *arg)
{
    if (arg)
        pthread_barrier_wait(&barrier); /* wait until main installed */
    crash_stack_overflow(0);
    return NULL;
}

static int overflow_c11_thread(void *arg)
{
    (void)arg;
    return crash_stack_overflow(0);
}

/* A SIGEV_THREAD timer's function: on a thread the C library starts
 * itself, not through pthread_create. */
static void overflow_timer(union sigval v)
{
    (void)v;
    crash_stack_overflow(0);
}

static int timer_marker;

/* Its value arrives as given, and the thread has an alternate stack. */
NOINLINE void timer_fault(union sigval v)
{
    stack_t ss;
    if (v.sival_ptr != &timer_marker || sigaltstack(NULL, &ss) != 0 || (ss.ss_flags & SS_DISABLE)) {
        fprintf(stderr, "crashme: timer thread: value %p (want %p), alternate stack %s\n",
                v.sival_ptr, (void *)&timer_marker, (ss.ss_flags & SS_DISABLE) ? "none" : "there");
        _exit(4);
    }
    crash_null_read();
    KEEP_FRAME();
}

static sem_t mq_done;

static void mq_notified(union sigval v)
{
    (void)v;
    sem_post(&mq_done);
}

/* A message queue's SIGEV_THREAD notification calling fn(value), at
 * once: glibc starts that thread itself too, as for a timer.  rounds:
 * first this many notifications that arrive, each through a descriptor
 * of its own (the library knows a registration by its descriptor), and
 * as many registrations removed before any: more than the library keeps
 * at once (64), so each must free its room.  closed: then this many
 * registrations each closed with mq_close() while it waits, each
 * through a descriptor of its own too (a number registered again would
 * free the room by itself), more than 64: mq_close() must free it. */
static void start_mq_notify(void (*fn)(union sigval), void *value, int rounds, int closed)
{
    char name[64], buf[8];
    snprintf(name, sizeof name, "/crashme-%d", (int)getpid());
    struct mq_attr attr = {.mq_maxmsg = 1, .mq_msgsize = 8};
    mqd_t q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
    if (q == (mqd_t)-1) {
        fprintf(stderr, "crashme: mq_open: %s\n", strerror(errno));
        exit(2);
    }
    mq_unlink(name); /* the queue lives as long as q is open */
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = mq_notified;
    sem_init(&mq_done, 0, 0);
    for (int i = 0; i < rounds; i++) {
        mqd_t d = dup(q); /* left open: its number is not used again */
        if (d < 0 || mq_notify(d, &sev) != 0 || mq_send(q, "x", 1, 0) != 0 ||
            sem_wait(&mq_done) != 0 || mq_receive(q, buf, sizeof buf, NULL) != 1 ||
            mq_notify(q, &sev) != 0 || mq_notify(q, NULL) != 0) {
            fprintf(stderr, "crashme: mq round %d: %s\n", i, strerror(errno));
            exit(2);
        }
    }
    mqd_t d[100];
    for (int i = 0; i < closed && i < 100; i++)
        d[i] = dup(q);
    for (int i = 0; i < closed && i < 100; i++) {
        /* Closing any descriptor of the queue ends the registration. */
        if (d[i] < 0 || mq_notify(d[i], &sev) != 0 || mq_close(d[i]) != 0) {
            fprintf(stderr, "crashme: mq close round %d: %s\n", i, strerror(errno));
            exit(2);
        }
    }
    sev.sigev_notify_function = fn;
    sev.sigev_value.sival_ptr = value;
    if (mq_notify(q, &sev) != 0 || mq_send(q, "x", 1, 0) != 0) {
        fprintf(stderr, "crashme: mq_notify: %s\n", strerror(errno));
        exit(2);
    }
}

/* A SIGEV_THREAD timer calling fn(value) in a millisecond. */
static void start_timer(void (*fn)(union sigval), void *value)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD;
    sev.sigev_notify_function = fn;
    sev.sigev_value.sival_ptr = value;
    timer_t t;
    struct itimerspec its = {{0, 0}, {0, 1000000}};
    if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0 || timer_settime(t, 0, &its, NULL) != 0) {
        fprintf(stderr, "crashme: timer: %s\n", strerror(errno));
        exit(2);
    }
}

static void *fault_thread(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&barrier);
    crash_thread_fault();
    return NULL;
}

/* blocked_thread: a thread that inherited a mask blocking every signal,
 * as from a program that leaves signals to one sigwait() thread. */
static void *blocked_fault_thread(void *arg)
{
    (void)arg;
    crash_thread_fault();
    return NULL;
}

static void start_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) != 0) {
        fprintf(stderr, "crashme: pthread_create failed\n");
        exit(2);
    }
    pthread_detach(t);
}

static void wait_forever(void)
{
    for (;;)
        pause();
}

/* ---------------------------------------------------------------- */
/* Hooks and handlers. */

static void app_handler(int sig)
{
    (void)sig;
    int fd = open(marker_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ssize_t w = write(fd, "app handler ran\n", 16);
        (void)w;
        close(fd);
    }
}

/* An application handler that is itself broken. */
static void faulting_app_handler(int sig)
{
    app_handler(sig);
    *(volatile int *)zero_addr = sig;
}

static int faulting_get_etc(faultline_get_etc_callback cb)
{
    if (!cb("BEFORE_FAULT", "yes"))
        return 0;
    return *(volatile int *)zero_addr; /* the hook itself crashes */
}

static int etc_keys(faultline_get_etc_callback cb)
{
    return cb("TEST_KEY", "test value");
}

/* For the self-test of the heap check: a hook that does allocate. */
static int etc_keys_malloc(faultline_get_etc_callback cb)
{
    char *volatile p = malloc(16);
    free(p);
    return cb("TEST_KEY", "test value");
}

NOINLINE void crash_via_api(void)
{
    faultline_crash_now(SIGABRT);
    KEEP_FRAME();
}

static void *load_plugin(void)
{
    const char *p = getenv("FL_TEST_PLUGIN");
    void *h = p ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        fprintf(stderr, "crashme: dlopen(%s): %s\n", p ? p : "(FL_TEST_PLUGIN unset)", dlerror());
        exit(2);
    }
    return h;
}

static int env_int(const char *name)
{
    const char *e = getenv(name);
    return e ? atoi(e) : 0;
}

static void *load_object(int i)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/o%d.so", getenv("FL_TEST_OBJDIR"), i);
    void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "crashme: dlopen(%s): %s\n", p, dlerror());
        exit(2);
    }
    return h;
}

/* Counts the loaded objects as the crash log would list them: those with
 * a loaded segment. */
static int count_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_memsz) {
            ++*(int *)data;
            break;
        }
    return 0;
}

/* exit_race: a thread that ends the whole process as soon as it runs
 * again; the dump signal cuts its sleep short. */
static void *exiting_thread(void *arg)
{
    (void)arg;
    usleep(5000000);
    syscall(SYS_exit_group, 3);
    return NULL;
}

/* many_threads: more threads than a log keeps (FL_MAX_THREADS, 256), each
 * ending the process as soon as the crash sequence reaches get_etc --
 * after the threads were dumped; a thread left out of the log but not
 * parked would end it with status 3.  They wait in read() on a pipe that
 * get_etc writes to: no CPU taken while they wait. */
#define MANY_THREADS 300
static int etc_pipe[2];

static int etc_mark(faultline_get_etc_callback cb)
{
    (void)cb;
    static const char wake[MANY_THREADS] = {0};
    if (write(etc_pipe[1], wake, sizeof wake) < 0)
        return 0;
    return 1;
}

/* signal_during_log: a signal of the program's, with a handler that
 * ends the process, raised while the log is written (from get_etc): it
 * must wait until the crash has ended the process. */
static void usr1_exits(int sig)
{
    (void)sig;
    _exit(42);
}

static int etc_raise(faultline_get_etc_callback cb)
{
    (void)cb;
    raise(SIGUSR1);
    return 1;
}

/* exit_early: a get_objects hook -- the log's first part after its
 * header -- wakes a thread that then ends the process with status 3; it
 * must have been stopped before.  The log then has no OBJECT lines. */
static int objects_wake(faultline_get_objects_callback cb)
{
    (void)cb;
    if (write(etc_pipe[1], "x", 1) != 1)
        return 0;
    /* A slow disk: time enough for a thread that is not stopped to run. */
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    return 1;
}

static void *reading_thread(void *arg)
{
    (void)arg;
    char c;
    while (read(etc_pipe[0], &c, 1) < 0 && errno == EINTR)
        ;
    syscall(SYS_exit_group, 3);
    return NULL;
}

/* The child of clone(CLONE_VM): our memory, its own process. */
static int clone_vm_child(void *arg)
{
    (void)arg;
    crash_null_write();
    return 3;
}

static void install(const faultline_hooks *hooks)
{
    if (!faultline_install("crashme", "1.0", hooks)) {
        fprintf(stderr, "crashme: faultline_install failed\n");
        exit(2);
    }
}

/* install() with the default hooks but get_etc. */
static void install_etc(int (*get_etc)(faultline_get_etc_callback))
{
    faultline_hooks h;
    memset(&h, 0, sizeof h);
    h.get_etc = get_etc;
    install(&h);
}

/* vfork_orphan: the child's pid, written by the child into the memory it
 * shares with this process. */
static volatile pid_t orphan_child;

static void *crash_after_vfork(void *arg)
{
    (void)arg;
    while (!orphan_child)
        usleep(1000);
    printf("child %d\n", (int)orphan_child);
    fflush(stdout);
    crash_null_read();
    return NULL;
}

/* vfork_trace: a thread that has not traced yet vforks; the child traces
 * on it and leaves; then the thread traces and crashes. */
static void *vfork_trace_thread(void *arg)
{
    (void)arg;
    pid_t pid = vfork();
    if (pid == 0) {
        FAULTLINE_TRACE("in the child %d", (int)getpid());
        _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        exit(2);
    printf("child %d thread %d\n", (int)pid, (int)syscall(SYS_gettid));
    fflush(stdout);
    FAULTLINE_TRACE("in the parent after child %d", (int)pid);
    crash_null_read();
    return NULL;
}

/* Makes linkat() fail with EPERM, as a seccomp policy or an older kernel
 * would: only calls with AT_EMPTY_PATH (all = false), or every call.  The
 * spool must then name the log through /proc/self/fd, or by copying it.
 * Checks that the filter bites before returning 0. */
static int deny_linkat(bool all)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_linkat, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4])),
        /* flags & AT_EMPTY_PATH: denied; otherwise denied only with all. */
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, AT_EMPTY_PATH, 0, all ? 0 : 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof f / sizeof f[0]), .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
        return -1;
    /* The filter bites: an AT_EMPTY_PATH link of a real file is refused,
     * and so, with all, is a plain one. */
    char src[] = "/tmp/fl-crashme-link-XXXXXX", dst[64];
    int fd = mkstemp(src);
    if (fd < 0)
        return -1;
    snprintf(dst, sizeof dst, "%s.l", src);
    int bad = linkat(fd, "", AT_FDCWD, dst, AT_EMPTY_PATH) == 0 || errno != EPERM;
    unlink(dst);
    if (all)
        bad |= linkat(AT_FDCWD, src, AT_FDCWD, dst, 0) == 0 || errno != EPERM;
    unlink(dst);
    close(fd);
    unlink(src);
    return bad ? -1 : 0;
}

/* Makes open(O_TMPFILE) fail with EOPNOTSUPP, as on a file system without
 * it: the spool must fall back to a dot-file renamed after END.  Checks
 * that the filter bites before returning 0. */
static int deny_tmpfile(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, __O_TMPFILE, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EOPNOTSUPP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof f / sizeof f[0]), .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
        return -1;
    int fd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
    if (fd >= 0) {
        close(fd);
        return -1;
    }
    return errno == EOPNOTSUPP ? 0 : -1;
}

/* first_chance mode: the program's own look at a fault (see above). */
static sigjmp_buf probe_env;
static volatile sig_atomic_t probing;
static volatile char *guard;

static int first_chance(int sig, void *info, void *uc)
{
    const siginfo_t *si = info;
    (void)uc;
    if (sig == SIGSEGV && probing) {
        probing = 0;
        siglongjmp(probe_env, 1);
    }
    if (sig == SIGSEGV && guard && (char *)si->si_addr >= guard &&
        (char *)si->si_addr < guard + 4096)
        return mprotect((void *)guard, 4096, PROT_READ | PROT_WRITE) == 0;
    return 0;
}

/* first_chance_faults mode: a first-chance handler that itself faults,
 * on every call (a bound of its own so that a loop shows). */
static volatile int fc_calls;

static int faulting_first_chance(int sig, void *info, void *uc)
{
    (void)sig;
    (void)info;
    (void)uc;
    if (++fc_calls > 1000)
        _exit(42);
    *(volatile int *)zero_addr = 1;
    return 0;
}

enum { FORK_TIMERS = 400 };

/* fork_state mode: a thread that is always setting state. */
static void *state_setter(void *arg)
{
    (void)arg;
    for (unsigned i = 0;; i++)
        faultline_set_state("busy", i & 1 ? "odd" : "even");
    return NULL;
}

/* fork_timers mode: a thread that is always inside libfaultline's
 * mq_close() wrapper, which takes the lock of the timer and queue slots.
 * (Not timer_create() and timer_delete() of SIGEV_THREAD timers: the C
 * library's own lock there is not reset in a forked child -- glibc 2.36
 * -- and its children hang with or without libfaultline.) */
static void timer_nothing(union sigval v)
{
    (void)v;
}

static void *timer_churn(void *arg)
{
    (void)arg;
    for (;;)
        mq_close(-1);
    return NULL;
}

/* A child forked while timer_churn() may hold the wrappers' lock creates
 * and deletes a timer itself (the C library's lock is free: nothing else
 * makes timers); 0 if it did, 1 if it failed, 2 if it hung (killed after
 * 2 s; it also dies with this process). */
static int fork_one_timer(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        struct sigevent sev = {.sigev_notify = SIGEV_THREAD,
                               .sigev_notify_function = timer_nothing};
        timer_t t;
        _exit(timer_create(CLOCK_MONOTONIC, &sev, &t) == 0 && timer_delete(t) == 0 ? 0 : 1);
    }
    if (pid < 0)
        return 1;
    int st = 0;
    for (int ms = 0; ms < 2000; ms++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
        usleep(1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: crashme MODE\n");
        return 2;
    }
    const char *mode = argv[1];
    const char *e;
    if ((e = getenv("FL_TEST_MARKER")))
        snprintf(marker_path, sizeof marker_path, "%s", e);
    if ((e = getenv("FL_TEST_WORKDIR")))
        snprintf(workdir, sizeof workdir, "%s", e);
    else
        snprintf(workdir, sizeof workdir, "/tmp");

    /* Modes that need something done before install. */
    if (!strcmp(mode, "stack_overflow_thread_before")) {
        pthread_barrier_init(&barrier, NULL, 2);
        start_thread(overflow_thread, (void *)1);
        install(NULL);
        pthread_barrier_wait(&barrier);
        wait_forever();
    }
    if (!strcmp(mode, "app_handler") || !strcmp(mode, "app_handler_faults")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = strcmp(mode, "app_handler") ? faulting_app_handler : app_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
        install(NULL);
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "blocked_main") || !strcmp(mode, "blocked_thread")) {
        /* Every signal blocked -- before install on the main thread, after
         * it (through pthread_sigmask) for a thread that inherits the
         * mask.  A fault the kernel finds blocked kills the process
         * without running any handler. */
        sigset_t all;
        sigfillset(&all);
        if (!strcmp(mode, "blocked_main")) {
            sigprocmask(SIG_BLOCK, &all, NULL);
            install(NULL);
            crash_null_read();
            return 3;
        }
        install(NULL);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        start_thread(blocked_fault_thread, NULL);
        wait_forever();
    }
    if (!strcmp(mode, "hook_fault")) {
        install_etc(faulting_get_etc);
        crash_abort();
        return 3;
    }
    if (!strcmp(mode, "details") || !strcmp(mode, "nomalloc") ||
        !strcmp(mode, "nomalloc_selftest")) {
        /* One thread from before install, two after, a library loaded
         * after install, application keys, and a deep stack. */
        start_thread(idle_thread, NULL);
        install_etc(strcmp(mode, "nomalloc_selftest") ? etc_keys : etc_keys_malloc);
        start_thread(idle_thread, NULL);
        start_thread(idle_thread, NULL);
        load_plugin();
        usleep(20000); /* let the threads reach pause() */
        crash_deep_stack();
        return 3;
    }
    if (!strcmp(mode, "exit_race")) {
        /* Threads parked for the crash log must stay parked until the
         * process ends with the signal: released early, one of these ends
         * it with status 3, before the (fsync'ed) log is named. */
        setenv("FAULTLINE_FSYNC", "1", 1);
        install(NULL);
        for (int i = 0; i < 4; i++)
            start_thread(exiting_thread, NULL);
        usleep(100000);
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "exit_early")) {
        faultline_hooks h;
        memset(&h, 0, sizeof h);
        h.get_objects = objects_wake;
        install(&h);
        if (pipe(etc_pipe) != 0)
            return 2;
        start_thread(reading_thread, NULL);
        usleep(100000);
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "signal_during_log")) {
        signal(SIGUSR1, usr1_exits);
        install_etc(etc_raise);
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "emfile")) {
        /* Every descriptor taken when the crash comes: the other threads
         * must still be listed (and stopped), through the task directory
         * kept open since install. */
        install(NULL);
        start_thread(exiting_thread, NULL);
        usleep(100000);
        struct rlimit rl;
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = 64;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            return 2;
        while (open("/dev/null", O_RDONLY) >= 0)
            ;
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "many_threads")) {
        install_etc(etc_mark);
        if (pipe(etc_pipe) != 0)
            return 2;
        for (int i = 0; i < MANY_THREADS; i++)
            start_thread(reading_thread, NULL);
        usleep(100000);
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "closed_stdio")) {
        /* Started with 0, 1 and 2 closed: the library's file must not
         * take them (the program would read or write it). */
        close(0);
        close(1);
        close(2);
        install(NULL);
        if (open("/dev/null", O_RDONLY) != 0)
            return 7;
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "relative_spool")) {
        /* FAULTLINE_SPOOL relative to the directory at install; the crash
         * comes after a chdir() elsewhere. */
        char sp[4096];
        snprintf(sp, sizeof sp, "%s", getenv("FAULTLINE_SPOOL"));
        char *slash = strrchr(sp, '/');
        if (!slash || chdir(slash == sp ? "/" : (*slash = '\0', sp)) != 0)
            return 2;
        setenv("FAULTLINE_SPOOL", slash + 1, 1);
        install(NULL);
        if (chdir("/") != 0)
            return 2;
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "relative_reporter")) {
        /* FAULTLINE_REPORTER relative to the directory at install (given
         * absolute, made relative here); the crash comes after a chdir()
         * elsewhere. */
        char rep[4096];
        snprintf(rep, sizeof rep, "%s", getenv("FAULTLINE_REPORTER"));
        char *slash = strrchr(rep, '/'), rel[4200];
        if (!slash || slash == rep)
            return 2;
        snprintf(rel, sizeof rel, "./%s", slash + 1);
        *slash = '\0';
        if (chdir(rep) != 0)
            return 2;
        setenv("FAULTLINE_REPORTER", rel, 1);
        install(NULL);
        if (chdir("/") != 0)
            return 2;
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "ignored_kill")) {
        /* SIGSEGV ignored by the program: another process's kill() of it
         * stays ignored; a real fault is still a crash. */
        signal(SIGSEGV, SIG_IGN);
        install(NULL);
        pid_t pid = fork();
        if (pid == 0)
            _exit(kill(getppid(), SIGSEGV) == 0 ? 0 : 1);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            return 4; /* waitpid() broken by the signal (EINTR), or the kill failed */
        usleep(100000); /* the signal has come, and gone */
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "no_tmpfile")) {
        if (deny_tmpfile())
            return 2;
        install(NULL);
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "forked_abort")) {
        /* A crash in a child forked after install (a pre-forking server). */
        install(NULL);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            crash_abort();
            _exit(3);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid)
            return 2;
        printf("child %d %s %d\n", (int)pid, WIFSIGNALED(st) ? "signal" : "exit",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        return 0;
    }
    if (!strcmp(mode, "first_chance")) {
        /* Faults the program expects and recovers from itself, through
         * faultline_set_first_chance(): probes of an address it may not
         * read, left with siglongjmp(); a write to a page it then makes
         * writable, returned from.  No log for those; then a real crash,
         * which the handler declines, is logged. */
        install(NULL);
        faultline_set_first_chance(first_chance);
        guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (guard == MAP_FAILED)
            return 2;
        volatile int probed = 0;
        for (volatile int i = 0; i < 100; i++) {
            volatile uintptr_t bad = 16 + (uintptr_t)i;
            if (sigsetjmp(probe_env, 1) == 0) {
                probing = 1;
                (void)*(volatile int *)bad;
                probing = 0;
            } else {
                probed++;
            }
        }
        probing = 0;
        guard[100] = 7; /* faults once; the handler makes the page writable */
        printf("probed %d fixed %d\n", probed, guard[100]);
        fflush(stdout);
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "vfork") || !strcmp(mode, "clone_vm")) {
        /* A child that runs in this process's memory -- vfork(), or
         * clone(CLONE_VM) without CLONE_THREAD -- crashes before exec; then
         * this process, once the child is gone, leaves a breadcrumb and
         * crashes too.  Both crashes must be logged, each as its own
         * process's, and this one as fast as any. */
        install(NULL);
        fflush(stdout);
        pid_t pid;
        if (!strcmp(mode, "vfork")) {
            pid = vfork();
            if (pid == 0) {
                crash_null_write();
                _exit(3);
            }
        } else {
            static char stack[256 * 1024] __attribute__((aligned(16)));
            pid = clone(clone_vm_child, stack + sizeof stack, CLONE_VM | SIGCHLD, NULL);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid)
            return 2;
        /* The flight recorder's trigger (`faultline dump`), which a
         * crash in progress turns away: this process is not crashing. */
        union sigval v = {.sival_int = 77};
        char dump[4200];
        snprintf(dump, sizeof dump, "%s/trace-77.tracedump", faultline_spool_dir());
        bool dumped = sigqueue(getpid(), SIGRTMAX - 4, v) == 0 && unlink(dump) == 0;
        printf(
            "child %d %s %d\nparent %d\ndump %s\n", (int)pid, WIFSIGNALED(st) ? "signal" : "exit",
            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), (int)getpid(), dumped ? "yes" : "no");
        fflush(stdout);
        faultline_breadcrumb("test", "the child is gone");
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "vfork_orphan")) {
        /* A thread of this process crashes while the main thread waits in
         * vfork(), and ends the process; then the child, still running in
         * this memory, crashes too.  Its log must be written, at once: the
         * crash state the thread took is not released by anyone. */
        install(NULL);
        pthread_t t;
        if (pthread_create(&t, NULL, crash_after_vfork, NULL) != 0)
            return 2;
        pid_t parent = getpid();
        if (vfork() == 0) {
            orphan_child = getpid();
            while (getppid() == parent)
                usleep(1000);
            crash_null_write();
            _exit(3);
        }
        return 4; /* the thread's crash ends this process first */
    }
    if (!strcmp(mode, "vfork_trace")) {
        install(NULL);
        pthread_t t;
        if (pthread_create(&t, NULL, vfork_trace_thread, NULL) != 0)
            return 2;
        pthread_join(t, NULL);
        return 4;
    }
    if (!strcmp(mode, "pending")) {
        if (faultline_pending_crashlogs() != -1 || faultline_spool_dir() != NULL)
            return 4; /* documented values before install */
        install(NULL);
        if (faultline_install("crashme", "1.0", NULL) != 0)
            return 5; /* a second install must fail */
        printf("%d\n", faultline_pending_crashlogs());
        return 0;
    }
    if (!strcmp(mode, "pending_late")) {
        /* Counted at the first call, not at install (which does not read
         * the spool), and not again after that. */
        install(NULL);
        char p[4200];
        for (int i = 0; i < 2; i++) {
            snprintf(p, sizeof p, "%s/late-%d.crashlog", faultline_spool_dir(), i);
            FILE *f = fopen(p, "w");
            if (!f)
                return 2;
            fclose(f);
            printf("%d ", faultline_pending_crashlogs());
        }
        printf("\n");
        return 0;
    }
    if (!strcmp(mode, "many_objects")) {
        /* More objects than a log keeps (1024): loaded before install, so
         * that its table is full, and after it, found by the crash; some
         * unloaded again, whose room the crash gives to the others.
         * Prints how many are loaded at the crash. */
        static void *h[2048];
        int before = env_int("FL_TEST_OBJS_BEFORE"), after = env_int("FL_TEST_OBJS_AFTER");
        int unload = env_int("FL_TEST_OBJS_CLOSE");
        if (before < 0 || after < 0 || before + after > 2048 || unload < 0 || unload > before)
            return 2;
        for (int i = 0; i < before; i++)
            h[i] = load_object(i);
        install(NULL);
        for (int i = before; i < before + after; i++)
            h[i] = load_object(i);
        for (int i = 0; i < unload; i++)
            if (dlclose(h[i]) != 0)
                return 2;
        int n = 0;
        dl_iterate_phdr(count_object, &n);
        printf("%d\n", n);
        fflush(stdout);
        crash_null_read();
        return 3;
    }
    if (!strcmp(mode, "plugin_crash_early")) {
        /* plugin_crash with the library in the table made at install. */
        void *h = load_plugin();
        install(NULL);
        void (*fn)(void) = (void (*)(void))dlsym(h, "plugin_crash_here");
        if (!fn)
            return 2;
        fn();
        return 3;
    }
    if (!strcmp(mode, "dlclose")) {
        /* A library known at install and gone at the crash must not be
         * reported (its memory may be reused by then). */
        void *h = load_plugin();
        install(NULL);
        if (dlclose(h) != 0)
            return 2;
        crash_null_read();
        return 3;
    }

    install(NULL);
    if (!strcmp(mode, "fd_reuse")) {
        /* A daemon-like program closes every descriptor after start-up and
         * reuses the numbers: the crash log must not land in its file. */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        int fd = open(marker_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || write(fd, "APPDATA\n", 8) != 8)
            return 2;
        crash_null_read();
    }
    if (!strcmp(mode, "name_via_proc") || !strcmp(mode, "name_by_copy")) {
        if (deny_linkat(!strcmp(mode, "name_by_copy")))
            return 2;
        crash_null_read();
    }
    if (!strcmp(mode, "null_read"))
        crash_null_read();
    else if (!strcmp(mode, "null_call"))
        crash_null_call();
    else if (!strcmp(mode, "data_call"))
        crash_data_call();
    else if (!strcmp(mode, "forged_fault"))
        crash_forged_fault();
    else if (!strcmp(mode, "null_write"))
        crash_null_write();
    else if (!strcmp(mode, "rodata_write"))
        crash_rodata_write();
    else if (!strcmp(mode, "stack_overflow_main"))
        crash_stack_overflow(0);
    else if (!strcmp(mode, "stack_overflow_thread_after")) {
        start_thread(overflow_thread, NULL);
        wait_forever();
    } else if (!strcmp(mode, "stack_overflow_c11_thread")) {
        /* A C11 thread: glibc's thrd_create calls its own pthread_create,
         * not the one the library interposes. */
        thrd_t t;
        if (thrd_create(&t, overflow_c11_thread, NULL) != thrd_success)
            return 2;
        wait_forever();
    } else if (!strcmp(mode, "stack_overflow_timer_thread")) {
        start_timer(overflow_timer, NULL);
        wait_forever();
    } else if (!strcmp(mode, "stack_overflow_mq_thread")) {
        start_mq_notify(overflow_timer, NULL, 0, 0);
        wait_forever();
    } else if (!strcmp(mode, "mq_thread")) {
        start_mq_notify(timer_fault, &timer_marker, 100, 0);
        wait_forever();
    } else if (!strcmp(mode, "mq_close_thread")) {
        start_mq_notify(timer_fault, &timer_marker, 0, 100);
        wait_forever();
    } else if (!strcmp(mode, "timer_thread")) {
        /* More timers created and deleted than the library keeps at once
         * (64): deleting one frees its room. */
        for (int i = 0; i < 200; i++) {
            struct sigevent sev;
            memset(&sev, 0, sizeof sev);
            sev.sigev_notify = SIGEV_THREAD;
            sev.sigev_notify_function = timer_fault;
            timer_t t;
            if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0 || timer_delete(t) != 0)
                return 2;
        }
        start_timer(timer_fault, &timer_marker);
        wait_forever();
    } else if (!strcmp(mode, "first_chance_faults")) {
        faultline_set_first_chance(faulting_first_chance);
        crash_null_read();
    } else if (!strcmp(mode, "crash_now_num")) {
        /* faultline_crash_now() with any number: argv[2] */
        faultline_crash_now(argc > 2 ? atoi(argv[2]) : 0);
        return 3;
    } else if (!strcmp(mode, "fork_state")) {
        /* Children forked while another thread is (almost always) inside
         * faultline_set_state(): each sets a key of its own at once and
         * crashes. */
        start_thread(state_setter, NULL);
        usleep(10000);
        int crashed = 0;
        for (int i = 0; i < 6; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                if (!faultline_set_state("child", "set"))
                    _exit(1);
                crash_null_read();
            }
            int st = 0;
            if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) &&
                WTERMSIG(st) == SIGSEGV)
                crashed++;
        }
        printf("fork_state %d of 6\n", crashed);
        fflush(stdout);
        _exit(0);
    } else if (!strcmp(mode, "fork_timers")) {
        /* fork() while another thread is (often) inside libfaultline's
         * timer and queue wrappers: every child must still make a timer. */
        start_thread(timer_churn, NULL);
        usleep(10000);
        int fine = 0, hung = 0;
        for (int i = 0; i < FORK_TIMERS && !hung; i++) {
            int rc = fork_one_timer();
            fine += rc == 0;
            hung += rc == 2; /* one is enough, and the next would outlast the driver */
        }
        printf("fork_timers %d of %d%s\n", fine, FORK_TIMERS, hung ? " (a child hung)" : "");
        fflush(stdout);
        _exit(0);
    } else if (!strcmp(mode, "abort"))
        crash_abort();
    else if (!strcmp(mode, "assert"))
        crash_assert();
    else if (!strcmp(mode, "crash_now"))
        crash_via_api();
    else if (!strcmp(mode, "trap"))
        crash_trap();
    else if (!strcmp(mode, "divzero"))
        crash_divzero();
    else if (!strcmp(mode, "sigbus"))
        crash_sigbus();
    else if (!strcmp(mode, "double_free"))
        crash_double_free();
    else if (!strcmp(mode, "four_threads")) {
        pthread_barrier_init(&barrier, NULL, 4);
        for (int i = 0; i < 4; i++)
            start_thread(fault_thread, NULL);
        wait_forever();
    } else if (!strcmp(mode, "plugin_crash")) {
        void *h = load_plugin();
        void (*fn)(void) = (void (*)(void))dlsym(h, "plugin_crash_here");
        if (!fn)
            return 2;
        fn();
    } else if (!strcmp(mode, "stack_overflow_plugin_thread")) {
        /* The thread is started by the library, not by this program. */
        void *h = load_plugin();
        int (*start)(void) = (int (*)(void))dlsym(h, "plugin_start_overflow_thread");
        if (!start || start() != 0)
            return 2;
        wait_forever();
    } else if (!strcmp(mode, "spool_gone")) {
        /* Someone removed the spool after install. */
        char p[4200];
        snprintf(p, sizeof p, "%s/installation-id", faultline_spool_dir());
        if (unlink(p) != 0 || rmdir(faultline_spool_dir()) != 0)
            return 2;
        crash_null_read();
    } else if (!strcmp(mode, "efbig") || !strcmp(mode, "efbig_sigxfsz")) {
        /* Every write past 4 KiB fails with EFBIG: a full disk as far as
         * the log writer can tell.  With SIGXFSZ left at its default
         * (efbig_sigxfsz), such a write would end the process with it. */
        struct rlimit rl = {4096, 4096};
        if (!strcmp(mode, "efbig"))
            signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            return 2;
        crash_deep_stack(); /* 32 KiB of STACK lines: the log is ~70 KiB */
    } else {
        fprintf(stderr, "crashme: unknown mode %s\n", mode);
        return 2;
    }
    return 3; /* the crash did not end the process */
}
