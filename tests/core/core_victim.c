/*
 * core_victim - a multi-threaded program WITHOUT libfaultline that crashes
 * at a known place, for `faultline core` tests: main -> core_outer ->
 * core_middle -> core_inner, which writes through a NULL pointer, while
 * another thread waits in core_sleeper (blocked in pause()).  Built -O2
 * -g; noinline, and an asm barrier after each call so that no call becomes
 * a tail call and every function keeps its frame in the stack.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
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

int main(int argc, char **argv)
{
    (void)argv;
    pthread_t t;
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
