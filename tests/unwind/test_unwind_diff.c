/*
 * test_unwind_diff.c - differential test against libgcc.  A profiling timer
 * interrupts a workload (libc's qsort calling back into us, snprintf,
 * strtod, memmove) at arbitrary instructions, prologues and epilogues
 * included.  The SIGPROF handler walks its own stack twice, with glibc's
 * backtrace() (libgcc's unwinder; fine in this test, never in the client)
 * and with fl_unwind, and both must list the same frames from the signal
 * frame down.  Exit status 0 = pass.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "fl_safemem.h"
#include "fl_unwind.h"
#include "unw_testutil.h"

#define MAXF 128

static fl_unwind_module g_mods[512];
static size_t g_nmods;
static volatile int g_samples, g_compared, g_mismatch;
static volatile unsigned g_sink;

static void on_prof(int sig)
{
    (void)sig;
    void *bt[MAXF];
    uint64_t pcs[MAXF];
    int nb = backtrace(bt, MAXF);
    fl_regs regs;
    fl_regs_from_current(&regs);
    size_t nf = fl_unwind(&regs, g_mods, g_nmods, pcs, MAXF);
    g_samples++;
    /* Align the two lists on the first pc they share after frame 0 (the
     * handler), then they must agree to the end. */
    for (size_t k = 1; k < nf; k++) {
        for (int j = 1; j < nb; j++) {
            if ((uint64_t)(uintptr_t)bt[j] != pcs[k])
                continue;
            size_t len = nf - k;
            if ((size_t)(nb - j) != len && !(nb == MAXF || nf == MAXF)) {
                if (g_mismatch < 5)
                    fprintf(stderr, "length differs: fl %zu frames, libgcc %d frames\n", len,
                            nb - j);
                g_mismatch++;
                return;
            }
            for (size_t i = 0; i < len && j + (int)i < nb; i++) {
                if ((uint64_t)(uintptr_t)bt[j + i] != pcs[k + i]) {
                    if (g_mismatch < 5)
                        fprintf(stderr, "frame %zu differs: fl 0x%llx, libgcc %p\n", i,
                                (unsigned long long)pcs[k + i], bt[j + i]);
                    g_mismatch++;
                    return;
                }
            }
            g_compared++;
            return;
        }
    }
    if (g_mismatch < 5)
        fprintf(stderr, "no common frame (fl %zu frames, libgcc %d)\n", nf, nb);
    g_mismatch++;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

__attribute__((noinline)) static void workload(int *v, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (int)(seed = seed * 1103515245u + 12345u);
    qsort(v, n, sizeof *v, cmp_int);
    char buf[64];
    for (int i = 0; i < 200; i++) {
        snprintf(buf, sizeof buf, "%d %.6f", v[i], v[i] / 7.0);
        g_sink += (unsigned)(long)strtod(buf + 2, NULL);
        memmove(v + 1, v, 64 * sizeof *v);
    }
}

int main(void)
{
    fl_safemem_init();
    g_nmods = unw_fill_modules(g_mods, 512, UNW_TABLE_HDR, 1);
    void *warm[4];
    backtrace(warm, 4); /* loads libgcc_s now, not in the handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 500}, {0, 500}};
    setitimer(ITIMER_PROF, &it, NULL);
    static int v[20000];
    /* Bounded by samples and by rounds (the timer needs CPU time). */
    for (unsigned round = 0; round < 2000 && g_samples < 600; round++)
        workload(v, sizeof v / sizeof v[0], round);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("%d samples, %d identical to libgcc, %d different\n", g_samples, g_compared, g_mismatch);
    return g_samples >= 100 && g_mismatch == 0 ? 0 : 1;
}
