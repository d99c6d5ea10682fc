/* A fully static program (-static) with libfaultline.a: its threads are
 * created (the pthread_create wrapper reaches the C library's own), and a
 * crash in one of them is caught on its alternate stack. */
#include <faultline.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static volatile int depth_sink;

static int recurse(int n)
{
    volatile char pad[256];
    pad[0] = (char)n;
    depth_sink = pad[0];
    return recurse(n + 1) + pad[0];
}

static void *worker(void *arg)
{
    return arg ? (void *)(long)recurse(0) : NULL;
}

int main(int argc, char **argv)
{
    if (!faultline_install("static_thread", "1", NULL))
        return 2;
    pthread_t t;
    int rc = pthread_create(&t, NULL, worker, argc > 1 && !strcmp(argv[1], "crash") ? &t : NULL);
    if (rc != 0) {
        fprintf(stderr, "pthread_create: %s\n", strerror(rc));
        return 1;
    }
    pthread_join(t, NULL);
    return 0;
}
