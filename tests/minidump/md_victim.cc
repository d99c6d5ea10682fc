/*
 * md_victim - a multi-threaded C++ program with Breakpad's Linux
 * ExceptionHandler (built at test time from the npm package `minidump`,
 * see minidump_test.sh) that crashes at a known place, so that Breakpad
 * writes a real minidump for `faultline minidump` tests: main -> md_outer
 * -> md_middle -> md_inner, which writes through a NULL pointer, while a
 * second thread named "sleeper" waits in md_sleeper_wait (blocked in
 * pause()).  noinline, and an asm barrier after each call so that no call
 * becomes a tail call and every function keeps its frame in the stack.
 *
 * usage: md_victim DIR -- the minidump is written into DIR; its path is
 * printed on standard output by the callback.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/linux/handler/exception_handler.h"

static pthread_barrier_t started;

extern "C" __attribute__((noinline)) void md_sleeper_wait(void)
{
    for (;;)
        pause();
}

extern "C" __attribute__((noinline)) void *md_sleeper(void *)
{
    pthread_setname_np(pthread_self(), "sleeper");
    pthread_barrier_wait(&started);
    md_sleeper_wait();
    __asm__ volatile("" ::: "memory");
    return NULL;
}

extern "C" __attribute__((noinline)) void md_inner(volatile int *p)
{
    *p = 42; /* the fault */
    __asm__ volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void md_middle(volatile int *p)
{
    md_inner(p);
    __asm__ volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void md_outer(volatile int *p)
{
    md_middle(p);
    __asm__ volatile("" ::: "memory");
}

static bool dumped(const google_breakpad::MinidumpDescriptor &d, void *, bool ok)
{
    /* In the signal handler's context: write(2) only. */
    const char *p = d.path();
    if (write(1, p, strlen(p)) < 0 || write(1, "\n", 1) < 0)
        return ok;
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: md_victim DIR\n");
        return 64;
    }
    google_breakpad::MinidumpDescriptor desc(argv[1]);
    google_breakpad::ExceptionHandler eh(desc, NULL, dumped, NULL, true, -1);
    pthread_t t;
    pthread_barrier_init(&started, NULL, 2);
    if (pthread_create(&t, NULL, md_sleeper, NULL) != 0)
        return 2;
    pthread_barrier_wait(&started);
    usleep(100 * 1000); /* let the sleeper reach pause() */
    volatile int *p = argc > 5 ? (volatile int *)&argc : NULL;
    md_outer(p);
    return 0;
}
