/*
 * core_victim - a multi-threaded program WITHOUT libfaultline that crashes
 * at a known place, for `faultline core` tests: main -> core_outer ->
 * core_middle -> core_inner, which writes through a NULL pointer, while
 * another thread waits in core_sleeper (blocked in pause()).  Built -O2
 * -g; noinline, and an asm barrier after each call so that no call becomes
 * a tail call and every function keeps its frame in the stack.
 *
 * With CORE_VICTIM_HOSTILE=DIR it first plays a process whose core names
 * files it should not: it loads DIR/lib.so, points that library's entry
 * in the dynamic linker's list at DIR/fifo, and unlinks DIR/lib.so, so
 * that NT_FILE names "DIR/lib.so (deleted)" (the test makes both names
 * FIFOs).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_barrier_t started;

__attribute__((noinline)) void core_sleeper_wait(void)
{
    for (;;)
        pause();
}

__attribute__((noinline)) void *core_sleeper(void *arg)
{
    (void)arg;
    /* A name of its own, for the thread names `core --from-kernel` reads. */
    pthread_setname_np(pthread_self(), "sleeper");
    pthread_barrier_wait(&started);
    core_sleeper_wait();
    __asm__ volatile("" ::: "memory");
    return NULL;
}

__attribute__((noinline)) void core_inner(volatile int *p)
{
    *p = 42; /* the fault */
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void core_middle(volatile int *p)
{
    core_inner(p);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void core_outer(volatile int *p)
{
    core_middle(p);
    __asm__ volatile("" ::: "memory");
}

static int hostile(const char *dir)
{
    static char lib[4096], fifo[4096];
    snprintf(lib, sizeof lib, "%s/lib.so", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    void *h = dlopen(lib, RTLD_NOW);
    struct link_map *lm = NULL;
    if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return -1;
    lm->l_name = fifo;
    return unlink(lib);
}

int main(int argc, char **argv)
{
    (void)argv;
    pthread_t t;
    const char *dir = getenv("CORE_VICTIM_HOSTILE");
    if (dir && hostile(dir) != 0)
        return 3;
    pthread_barrier_init(&started, NULL, 2);
    if (pthread_create(&t, NULL, core_sleeper, NULL) != 0)
        return 2;
    pthread_barrier_wait(&started);
    /* Let the sleeper reach pause() before the fault. */
    usleep(100 * 1000);
    volatile int *p = argc > 5 ? (volatile int *)&argc : NULL;
    core_outer(p);
    return 0;
}
