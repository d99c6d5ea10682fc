/* A shared object the crash tests dlopen() after faultline_install(): it
 * must show up among the OBJECT lines, a fault inside it must unwind, and
 * a thread it starts itself must still get an alternate signal stack (its
 * pthread_create call has to reach Faultline's wrapper). */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>

static volatile uintptr_t plugin_zero;
static volatile int plugin_limit = INT_MAX;

__attribute__((noinline, visibility("default"))) void plugin_crash_here(void)
{
    *(volatile int *)plugin_zero = 1;
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, visibility("default"))) int plugin_recurse(int depth)
{
    volatile char pad[1024];
    pad[depth & 1023] = (char)depth;
    int r = depth < plugin_limit ? plugin_recurse(depth + 1) : 0;
    __asm__ volatile("" ::: "memory");
    return r + pad[(depth + 1) & 1023];
}

static void *overflow(void *arg)
{
    (void)arg;
    plugin_recurse(0);
    return 0;
}

__attribute__((visibility("default"))) int plugin_start_overflow_thread(void)
{
    pthread_t t;
    return pthread_create(&t, 0, overflow, 0);
}
