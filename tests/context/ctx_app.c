/*
 * The calling-context test program (tests/context/run.sh), built with
 * -finstrument-functions at -O0 and at -O2.  Each report prints
 *   CTX <label> <faultline_context() in hex> <the stack, innermost first>
 * where the stack is what the program's structure says it is; the script
 * decodes each value from the program's files alone and compares.
 * `ctx_app crash` crashes in a known stack while a second thread waits in
 * another, for the crash log's CRASH_CONTEXT and THREAD_CONTEXT.
 * With CTX_PLUGIN naming ctx_plugin.c's library, a report comes from it
 * too, reached through dlopen() and dlsym() (label "plugin"); `ctx_app
 * reload` is a plugin dlclose()d and another one opened in its place.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faultline.h"

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

void lib_entry(void (*cb)(void));

/* Not instrumented: reporting must not change what it reports. */
__attribute__((no_instrument_function)) void ctx_report(const char *label, const char *expect)
{
    printf("CTX %s %llx %s\n", label, faultline_context(), expect);
    fflush(stdout);
}

NOINLINE static void leaf_a(void)
{
    ctx_report("a_leaf", "leaf_a first main");
    /* A trace event carries the same context (TRACE_CONTEXT). */
    FAULTLINE_TRACE("in leaf_a %d", 1);
    BARRIER();
}

NOINLINE static void leaf_b(void)
{
    ctx_report("b_leaf", "leaf_b second main");
    BARRIER();
}

NOINLINE static void first(void)
{
    leaf_a();
    BARRIER();
}

NOINLINE static void second(void)
{
    leaf_b();
    BARRIER();
}

/* The same two functions in the other order must give another value. */
NOINLINE static void order_y(int);
NOINLINE static void order_x(int top)
{
    if (top)
        order_y(0);
    else
        ctx_report("yx", "order_x order_y main");
    BARRIER();
}

NOINLINE static void order_y(int top)
{
    if (top)
        order_x(0);
    else
        ctx_report("xy", "order_y order_x main");
    BARRIER();
}

NOINLINE static int recurse(int n)
{
    if (n == 0) {
        ctx_report("recurse3", "recurse recurse recurse recurse main");
        return 0;
    }
    int r = recurse(n - 1) + 1;
    BARRIER();
    return r;
}

/* Deeper than the hooks' ring of 8 saved values: the exits past it
 * recompute the ids (BACK below checks they undo exactly). */
static char deep_expect[21 * 8 + 8];
NOINLINE static int deep(int n)
{
    if (n == 0) {
        ctx_report("deep20", deep_expect);
        return 0;
    }
    int r = deep(n - 1) + 1;
    BARRIER();
    return r;
}

/* A signal handler built with -finstrument-functions runs on top of the
 * stack it interrupted; raise() is a C library call that is not known to
 * call back, so decode finds this only in its second stage. */
NOINLINE static void on_signal(int sig)
{
    (void)sig;
    ctx_report("signal", "on_signal raise_it main");
}

NOINLINE static void raise_it(void)
{
    raise(SIGUSR1);
    BARRIER();
}

/* At -O2 the unlikely branch goes to cold_caller.cold, a part of the
 * function with a symbol of its own, and the call is made from there. */
__attribute__((cold, noinline)) static void rare_report(int x)
{
    (void)x;
    ctx_report("cold", "rare_report cold_caller main");
}

NOINLINE static int cold_caller(int x)
{
    if (__builtin_expect(x == 42, 0)) {
        rare_report(x);
        printf("cold path %d\n", x);
        return 7;
    }
    return x;
}

NOINLINE static void from_lib(void)
{
    ctx_report("callback", "from_lib lib_inner lib_entry main");
    BARRIER();
}

static int compared;
NOINLINE static int cmp_int(const void *x, const void *y)
{
    if (!compared++)
        ctx_report("qsort", "cmp_int sort_three main");
    return *(const int *)x - *(const int *)y;
}

NOINLINE static void sort_three(void)
{
    int v[3] = {3, 1, 2};
    qsort(v, 3, sizeof v[0], cmp_int);
    BARRIER();
}

static inline __attribute__((always_inline)) void inlined_helper(void)
{
    ctx_report("inlined", "inlined_helper has_inline main");
}

NOINLINE static void has_inline(void)
{
    inlined_helper();
    BARRIER();
}

NOINLINE static void *thread_body(void *arg)
{
    (void)arg;
    ctx_report("thread", "thread_body");
    return NULL;
}

/* A plugin's function, reached only through the pointer dlsym() returns.
 * The library stays open: its functions' ids hold while it is mapped.
 * Returns the library's handle, or NULL. */
NOINLINE static void *call_plugin(const char *path, const char *fn)
{
    void *h = dlopen(path, RTLD_NOW);
    void (*run)(void) = h ? (void (*)(void))dlsym(h, fn) : NULL;
    if (!run) {
        fprintf(stderr, "ctx_app: %s\n", dlerror());
        return NULL;
    }
    run();
    BARRIER();
    return h;
}

/* ---- the crash ---- */

static volatile int parked;

NOINLINE static void park_here(void)
{
    parked = 1;
    for (;;)
        pause();
}

NOINLINE static void *parker(void *arg)
{
    (void)arg;
    park_here();
    return NULL;
}

NOINLINE static void crash_now(void)
{
    FAULTLINE_TRACE("about to crash");
    printf("CRASH_EXPECT crash_now crash_middle main\n");
    printf("THREAD_EXPECT park_here parker\n");
    fflush(stdout);
    /* Not NULL itself: UBSan would stop at a null store first. */
    volatile uintptr_t bad = 16;
    *(volatile int *)bad = 1;
}

NOINLINE static void crash_middle(void)
{
    crash_now();
    BARRIER();
}

int main(int argc, char **argv)
{
    if (!faultline_install("ctx_app", "1.0", NULL))
        return 3;
    if (argc > 1 && !strcmp(argv[1], "crash")) {
        pthread_t t;
        pthread_create(&t, NULL, parker, NULL);
        while (!parked)
            usleep(1000);
        crash_middle();
        return 4;
    }
    if (argc > 1 && !strcmp(argv[1], "reload")) {
        /* `ctx_app reload [crash]`: the plugin CTX_PLUGIN called,
         * dlclose()d, then CTX_PLUGIN2 (the same code, another build id)
         * opened -- mapped where the first one was, which REUSED says --
         * and called, or crashed in.  This thread's cache of modules held
         * the first plugin's range, bias and build id: the second one's
         * functions must get their own ids.  Here in main: the plugins'
         * reports expect call_plugin's caller to be main. */
        const char *first = getenv("CTX_PLUGIN"), *second = getenv("CTX_PLUGIN2");
        int crash = argc > 2 && !strcmp(argv[2], "crash");
        Dl_info di;
        void *h = first && second ? call_plugin(first, "plugin_run") : NULL;
        if (!h || !dladdr(dlsym(h, "plugin_run"), &di))
            return 8;
        void *base = di.dli_fbase;
        if (dlclose(h) || dlopen(first, RTLD_NOW | RTLD_NOLOAD)) {
            fprintf(stderr, "ctx_app: %s not unloaded\n", first);
            return 9;
        }
        h = dlopen(second, RTLD_NOW);
        if (!h || !dladdr(dlsym(h, "plugin_run"), &di))
            return 10;
        printf("REUSED %d\n", di.dli_fbase == base);
        if (crash)
            printf("CRASH_EXPECT plugin_fault plugin_crash call_plugin main\n");
        fflush(stdout);
        return call_plugin(second, crash ? "plugin_crash" : "plugin_run") ? 0 : 11;
    }
    unsigned long long at_main = faultline_context();
    ctx_report("main", "main");
    first();
    second();
    order_x(1);
    order_y(1);
    recurse(3);
    lib_entry(from_lib);
    sort_three();
    has_inline();
    for (int i = 0; i < 21; i++)
        strcat(deep_expect, "deep ");
    strcat(deep_expect, "main");
    deep(20);
    cold_caller(42);
    signal(SIGUSR1, on_signal);
    raise_it();
    pthread_t t;
    if (pthread_create(&t, NULL, thread_body, NULL) || pthread_join(t, NULL))
        return 5;
    if (getenv("CTX_PLUGIN") && !call_plugin(getenv("CTX_PLUGIN"), "plugin_run"))
        return 8;
    /* Every call above returned: the value is main's again. */
    printf("BACK %llx %llx\n", at_main, faultline_context());
    /* `ctx_app DIR`: the flight recorder's dumps, as text and trace IDs. */
    if (argc > 1) {
        char path[4096];
        snprintf(path, sizeof path, "%s/trace.txt", argv[1]);
        FILE *f = fopen(path, "w");
        if (!f || faultline_trace_dump_text(fileno(f)) < 0 || fclose(f))
            return 6;
        snprintf(path, sizeof path, "%s/trace.ids", argv[1]);
        f = fopen(path, "w");
        if (!f || faultline_trace_dump(fileno(f)) < 0 || fclose(f))
            return 7;
    }
    return 0;
}
