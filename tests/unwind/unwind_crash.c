/*
 * unwind_crash.c - real crashes, unwound from the signal handler.
 *
 * Usage: unwind_crash SCENARIO [TABLE] [MEM]
 *   SCENARIO  segv | abort | fpe | stack | badcall | thread
 *   TABLE     hdr (default) | scan | none      how the module table is filled
 *   MEM       ranges (default) | syscall | pipe   how fl_safe_read reaches memory
 *
 * The parent forks a child; the child installs an SA_SIGINFO handler on an
 * alternate signal stack, walks main -> chain_a -> chain_b -> chain_c ->
 * crash_<scenario> and crashes.  The handler unwinds from the ucontext with
 * fl_unwind into a static array, write()s the pcs to a pipe and _exit()s.
 * The parent (same image, so same addresses) names each pc with dladdr and
 * checks that the expected functions appear in order, ending with main.
 * Built twice: -O2 -fomit-frame-pointer and -O0 -fno-omit-frame-pointer.
 * Exit status 0 = pass.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fl_safemem.h"
#include "fl_unwind.h"

/* A real, separate frame: never inlined or cloned (clang has no noclone). */
#if defined(__clang__)
#define FRAME_FN __attribute__((noinline))
#else
#define FRAME_FN __attribute__((noinline, noclone))
#endif
#include "unw_testutil.h"

#define MAX_FRAMES 4096

static fl_unwind_module g_mods[512];
static size_t g_nmods;
static uint64_t g_pcs[MAX_FRAMES];
static uint8_t g_how[MAX_FRAMES];
static int g_out_fd = -1;
static unsigned char g_altstack[1 << 17];

volatile int g_sink;
volatile int g_zero;
volatile int g_limit = INT_MAX;
void (*volatile g_abort)(void) = abort;
void (*volatile g_badfn)(void);

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(3);
        c += w;
        n -= (size_t)w;
    }
}

static void on_crash(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si;
    fl_regs regs;
    fl_regs_from_ucontext(&regs, uc);
    fl_safemem_forget_pages();
    uint64_t n = fl_unwind_ex(&regs, g_mods, g_nmods, NULL, g_pcs, g_how, MAX_FRAMES);
    write_all(g_out_fd, &n, sizeof n);
    write_all(g_out_fd, g_pcs, n * sizeof g_pcs[0]);
    write_all(g_out_fd, g_how, n);
    _exit(0);
}

/* The chain.  noinline + noclone keep each a real function; the work after
 * each call keeps the compiler from turning it into a tail call. */
FRAME_FN int crash_segv(int x)
{
    volatile int *volatile p = NULL;
    *p = x;
    g_sink += x;
    return g_sink;
}

FRAME_FN int crash_abort(int x)
{
    g_abort();
    g_sink += x;
    return g_sink;
}

FRAME_FN int crash_fpe(int x)
{
    int r = x / g_zero;
    g_sink += r;
    return g_sink;
}

FRAME_FN int recurse(int depth)
{
    volatile char pad[512];
    pad[depth & 511] = (char)depth; /* a variable index keeps the whole array */
    if (depth > g_limit)
        return 0;
    int r = recurse(depth + 1) + pad[depth & 511];
    __asm__ volatile("" ::: "memory");
    g_sink += r;
    return r;
}

FRAME_FN int crash_stack(int x)
{
    /* A small stack limit makes the overflow come after a few hundred
     * frames, so main is still within MAX_FRAMES. */
    struct rlimit rl = {256 * 1024, 256 * 1024};
    setrlimit(RLIMIT_STACK, &rl);
    int r = recurse(x);
    g_sink += r;
    return g_sink;
}

FRAME_FN int crash_badcall(int x)
{
    g_badfn(); /* NULL: pc becomes 0, the return address is at sp */
    g_sink += x;
    return g_sink;
}

FRAME_FN int chain_c(const char *scn)
{
    int r;
    if (!strcmp(scn, "segv"))
        r = crash_segv(g_sink + 3);
    else if (!strcmp(scn, "abort"))
        r = crash_abort(g_sink + 3);
    else if (!strcmp(scn, "fpe"))
        r = crash_fpe(g_sink + 3);
    else if (!strcmp(scn, "stack"))
        r = crash_stack(g_sink);
    else
        r = crash_badcall(g_sink);
    __asm__ volatile("" ::: "memory");
    g_sink += r;
    return r + 1;
}

FRAME_FN int chain_b(const char *scn)
{
    int r = chain_c(scn);
    __asm__ volatile("" ::: "memory");
    g_sink += r;
    return r + 1;
}

FRAME_FN int chain_a(const char *scn)
{
    int r = chain_b(scn);
    __asm__ volatile("" ::: "memory");
    g_sink += r;
    return r + 1;
}

FRAME_FN void *thread_main(void *arg)
{
    int r = chain_a(arg);
    __asm__ volatile("" ::: "memory");
    g_sink += r;
    return NULL;
}

__attribute__((noinline)) int child(const char *scn, const char *table, const char *mem, int fd)
{
    g_out_fd = fd;
    unw_table_mode tm = !strcmp(table, "scan")   ? UNW_TABLE_SCAN
                        : !strcmp(table, "none") ? UNW_TABLE_NONE
                                                 : UNW_TABLE_HDR;
    fl_safemem_init();
    if (!strcmp(mem, "pipe") && fl_safemem_force_method(FL_SAFEMEM_PIPE) != 0)
        return 4;
    g_nmods =
        unw_fill_modules(g_mods, sizeof g_mods / sizeof g_mods[0], tm, !strcmp(mem, "ranges"));
    stack_t ss = {.ss_sp = g_altstack, .ss_size = sizeof g_altstack, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0)
        return 5;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    if (!strcmp(scn, "thread")) {
        /* The same NULL store at the end of the chain, on another thread:
         * the walk must end at the thread's outermost frame. */
        pthread_t t;
        if (pthread_create(&t, NULL, thread_main, (void *)"segv") != 0)
            return 7;
        pthread_join(t, NULL);
        return 6;
    }
    chain_a(scn);
    return 6; /* did not crash */
}

/* The function containing pc, by dladdr (needs -rdynamic for the
 * executable's own functions). */
static const char *name_of(uint64_t pc)
{
    Dl_info di;
    if (dladdr((void *)(uintptr_t)pc, &di) && di.dli_sname)
        return di.dli_sname;
    return "?";
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: %s segv|abort|fpe|stack|badcall|thread [hdr|scan|none] "
                "[ranges|syscall|pipe]\n",
                argv[0]);
        return 2;
    }
    const char *scn = argv[1];
    const char *table = argc > 2 ? argv[2] : "hdr";
    const char *mem = argc > 3 ? argv[3] : "ranges";
    int p[2];
    if (pipe(p) != 0)
        return 2;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        close(p[0]);
        _exit(child(scn, table, mem, p[1]));
    }
    close(p[1]);
    static unsigned char buf[8 + sizeof g_pcs + sizeof g_how];
    size_t got = 0;
    for (;;) {
        ssize_t r = read(p[0], buf + got, sizeof buf - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "FAIL: child status 0x%x (handler did not complete)\n", st);
        return 1;
    }
    uint64_t n;
    if (got < 8 || (memcpy(&n, buf, 8), n == 0 || n > MAX_FRAMES || got != 8 + n * 9)) {
        fprintf(stderr, "FAIL: bad output from child (%zu bytes)\n", got);
        return 1;
    }
    uint64_t *pcs = (uint64_t *)(buf + 8);
    const uint8_t *how = buf + 8 + n * 8;
    const char *names[MAX_FRAMES];
    int recursions = 0;
    for (uint64_t i = 0; i < n; i++) {
        /* Caller frames hold return addresses: name the call (pc - 1). */
        names[i] = name_of(i == 0 ? pcs[i] : pcs[i] - 1);
        if (!strcmp(names[i], "recurse"))
            recursions++;
        else if (i < 40 || n - i < 10)
            printf("#%-3llu 0x%016llx %s\n", (unsigned long long)i, (unsigned long long)pcs[i],
                   names[i]);
    }
    if (recursions)
        printf("(%d frames of recurse)\n", recursions);

    const char *want[8];
    int nw = 0;
    if (!strcmp(scn, "segv") || !strcmp(scn, "thread"))
        want[nw++] = "crash_segv";
    else if (!strcmp(scn, "abort"))
        want[nw++] = "abort", want[nw++] = "crash_abort";
    else if (!strcmp(scn, "fpe"))
        want[nw++] = "crash_fpe";
    else if (!strcmp(scn, "stack"))
        want[nw++] = "recurse", want[nw++] = "crash_stack";
    else
        want[nw++] = "crash_badcall";
    want[nw++] = "chain_c";
    want[nw++] = "chain_b";
    want[nw++] = "chain_a";
    want[nw++] = strcmp(scn, "thread") ? "main" : "thread_main";

    int fail = 0;
    uint64_t at = 0, last = 0;
    for (int k = 0; k < nw; k++) {
        while (at < n && strcmp(names[at], want[k]) != 0)
            at++;
        if (at == n) {
            fprintf(stderr, "FAIL: %s not found in order\n", want[k]);
            fail = 1;
            break;
        }
        last = at++;
    }
    /* The crashing function itself is frame 0 where the fault is in our code. */
    if ((!strcmp(scn, "segv") || !strcmp(scn, "fpe") || !strcmp(scn, "thread")) &&
        strcmp(names[0], want[0]) != 0) {
        fprintf(stderr, "FAIL: frame 0 is %s, not %s\n", names[0], want[0]);
        fail = 1;
    }
    if (!strcmp(scn, "stack") && recursions < 50) {
        fprintf(stderr, "FAIL: only %d recursion frames\n", recursions);
        fail = 1;
    }
    /* Between the chain's functions there must be nothing unexpected
     * (libc's own frames below abort() are not exported: unnamed). */
    for (uint64_t i = 1; i < last; i++) {
        if (!strcmp(names[i], "?") && strcmp(scn, "abort") != 0) {
            fprintf(stderr, "FAIL: unnamed frame #%llu inside the chain\n", (unsigned long long)i);
            fail = 1;
        }
    }
    /* Each frame of the chain was found the intended way: by CFI when there
     * is a table (the -O0 build's frame pointers must not hide a CFI bug),
     * by the frame-pointer chain when there is none; frame 1 of badcall is
     * the return-address guess. */
    int want_how = !strcmp(table, "none") ? FL_FRAME_FP : FL_FRAME_CFI;
    for (uint64_t i = 1; i <= last && i < n; i++) {
        int w = (!strcmp(scn, "badcall") && i == 1) ? FL_FRAME_GUESS : want_how;
        if (how[i] != w) {
            fprintf(stderr, "FAIL: frame #%llu found by method %d, expected %d\n",
                    (unsigned long long)i, how[i], w);
            fail = 1;
        }
    }
    /* The walk must end by itself (outermost frame), not by max_frames. */
    if (n >= MAX_FRAMES) {
        fprintf(stderr, "FAIL: the walk did not stop before max_frames\n");
        fail = 1;
    }
    printf("%s: %llu frames, %s\n", fail ? "FAIL" : "ok", (unsigned long long)n, scn);
    return fail;
}
