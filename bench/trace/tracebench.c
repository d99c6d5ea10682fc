/*
 * tracebench.c - what one trace event costs the code that records it.
 *
 * FAULTLINE_TRACE stores the site, the time, the thread id and the
 * arguments, and formats nothing; the peer is what an in-memory logger
 * does: clock_gettime, then snprintf of the same format and arguments into
 * a ring of 128-byte lines.  Same events, same rounds, interleaved; one
 * thread, then two at once.  Prints the medians and the ratio.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "faultline.h"

enum { LINES = 2048, LINE = 128 };
static char ring[2][LINES][LINE]; /* one per thread: no false sharing */
static long events;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *const names[] = {"alpha.example.org", "beta", "gamma-service", "d"};

static void *run_trace(void *arg)
{
    (void)arg;
    for (long i = 0; i < events; i++)
        FAULTLINE_TRACE("request %ld from %s took %.3f ms", i, names[i & 3],
                        (double)(i & 1023) / 7);
    return NULL;
}

static void *run_snprintf(void *arg)
{
    long t = (long)arg;
    for (long i = 0; i < events; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        char *l = ring[t][i & (LINES - 1)];
        int n = snprintf(l, LINE, "%lld.%09ld ", (long long)ts.tv_sec, ts.tv_nsec);
        snprintf(l + n, LINE - (size_t)n, "request %ld from %s took %.3f ms", i, names[i & 3],
                 (double)(i & 1023) / 7);
    }
    return NULL;
}

/* The same events with each name copied to the stack first: a string
 * made at run time, which the recorder must copy. */
static void *run_trace_copied(void *arg)
{
    (void)arg;
    for (long i = 0; i < events; i++) {
        char name[32];
        strcpy(name, names[i & 3]);
        FAULTLINE_TRACE("request %ld from %s took %.3f ms", i, name, (double)(i & 1023) / 7);
    }
    return NULL;
}

/* apart.c: the same event, its format kept apart. */
extern long apart_events;
void *run_trace_apart(void *arg);

/* How many of 100,000 fresh events the recorder holds. */
static long held(void)
{
    long saved = events;
    events = 100000;
    run_trace(NULL);
    events = saved;
    FILE *f = tmpfile();
    if (!f || faultline_trace_dump_text(fileno(f)) <= 0)
        return -1;
    rewind(f);
    char line[512];
    long n = 0;
    while (fgets(line, sizeof line, f))
        n += !strncmp(line, "TRACE ", 6) && strstr(line, " request ");
    fclose(f);
    return n;
}

/* ns per event, with `threads` threads running fn at once. */
static double measure(void *(*fn)(void *), int threads)
{
    pthread_t th[2];
    double t0 = now();
    for (long t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, fn, (void *)t);
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    return (now() - t0) * 1e9 / (double)events;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    events = argc > 1 ? atol(argv[1]) : 2000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    if (events <= 0 || rounds <= 0 || rounds > 99) {
        fprintf(stderr, "usage: tracebench [EVENTS] [ROUNDS]\n");
        return 64;
    }
    printf("== trace: %ld events per thread, median of %d rounds, interleaved\n", events, rounds);
    printf("  %-44s %12s %12s %8s\n", "event: \"request %ld from %s took %.3f ms\"", "faultline",
           "snprintf", "ratio");
    for (int threads = 1; threads <= 2; threads++) {
        double a[99], b[99];
        for (int r = 0; r < rounds; r++) {
            a[r] = measure(run_trace, threads);
            b[r] = measure(run_snprintf, threads);
        }
        qsort(a, (size_t)rounds, sizeof a[0], cmp);
        qsort(b, (size_t)rounds, sizeof b[0], cmp);
        double ma = a[rounds / 2], mb = b[rounds / 2];
        char label[64];
        snprintf(label, sizeof label, "ns per event, %d thread%s (wall / events)", threads,
                 threads > 1 ? "s at once" : "");
        printf("  %-48s %12.1f %12.1f %7.2fx\n", label, ma, mb, mb / ma);
    }
    /* After faultline_install() the names (hard-coded, in this program's
     * read-only data) are kept by address, not copied: the cost per event
     * and how many events the ring holds, before and after. */
    long held_before = held();
    char spool[] = "/tmp/fl-tracebench-XXXXXX";
    if (!mkdtemp(spool) || setenv("FAULTLINE_SPOOL", spool, 1) ||
        !faultline_install("tracebench", "1.0", NULL)) {
        fprintf(stderr, "tracebench: faultline_install failed\n");
        return 1;
    }
    double a[99], c[99], d[99];
    apart_events = events;
    for (int r = 0; r < rounds; r++) {
        a[r] = measure(run_trace, 1);
        c[r] = measure(run_trace_copied, 1);
        d[r] = measure(run_trace_apart, 1);
    }
    qsort(a, (size_t)rounds, sizeof a[0], cmp);
    qsort(c, (size_t)rounds, sizeof c[0], cmp);
    qsort(d, (size_t)rounds, sizeof d[0], cmp);
    long held_after = held();
    rmdir(spool);
    printf("  after faultline_install(), 1 thread: %%s by address %.1f ns, the same names copied "
           "from the stack %.1f ns\n",
           a[rounds / 2], c[rounds / 2]);
    printf("  events the 256 KiB ring holds: %ld with the names copied, %ld with them by address "
           "(%.2fx)\n",
           held_before, held_after, (double)held_after / (double)held_before);
    printf("  formats kept apart (-DFAULTLINE_TRACE_APART), 1 thread: %.1f ns per event, "
           "%.2fx the plain build's\n",
           d[rounds / 2], d[rounds / 2] / a[rounds / 2]);
    /* The recorder must hold what was traced: the newest event is there. */
    FILE *f = tmpfile();
    if (!f || faultline_trace_dump(fileno(f)) <= 0) {
        fprintf(stderr, "tracebench: the dump failed\n");
        return 1;
    }
    return 0;
}
