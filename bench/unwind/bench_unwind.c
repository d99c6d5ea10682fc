/*
 * bench_unwind.c - cost of one unwind of a 10-deep stack (plus the frames
 * below main's caller), three ways side by side in the same run:
 *   fl_unwind        the crash path: registered PT_LOAD ranges, page cache
 *                    emptied before each unwind (stack pages cost a syscall)
 *   fl_unwind/sys    no ranges either: every first read of a page is a
 *                    process_vm_readv
 *   backtrace()      glibc's backtrace (libgcc's unwinder), the peer
 * Prints median ns per unwind over many batches.  Usage:
 *   bench_unwind [iterations]          the table
 *   bench_unwind --callgrind N         N plain fl_unwind calls, for
 *                                      callgrind --toggle-collect=fl_unwind_ex
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fl_safemem.h"
#include "fl_unwind.h"
#include "unw_testutil.h"

#define DEPTH 10
#define BATCH 100

static fl_unwind_module g_mods[512];
static size_t g_nmods;
static volatile int g_sink;

typedef enum { M_FL, M_FL_SYS, M_BT, M_CG } mode;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs `batches` batches of BATCH unwinds at the bottom of the stack and
 * stores the mean ns per unwind of each batch; returns frames per unwind. */
__attribute__((noinline)) static size_t at_bottom(mode m, int batches, double *out)
{
    uint64_t pcs[128];
    void *bt[128];
    size_t n = 0;
    for (int b = 0; b < batches; b++) {
        double t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            if (m == M_BT) {
                n = (size_t)backtrace(bt, 128);
            } else {
                fl_regs regs;
                fl_regs_from_current(&regs);
                if (m != M_CG)
                    fl_safemem_forget_pages(); /* each unwind starts cold, like a crash */
                n = fl_unwind(&regs, g_mods, g_nmods, pcs, 128);
            }
        }
        if (out)
            out[b] = (now_ns() - t0) / BATCH;
    }
    return n;
}

__attribute__((noinline)) static size_t descend(int d, mode m, int batches, double *out)
{
    size_t n = d == 0 ? at_bottom(m, batches, out) : descend(d - 1, m, batches, out);
    __asm__ volatile("" ::: "memory");
    g_sink += (int)n;
    return n;
}

int main(int argc, char **argv)
{
    fl_safemem_init();
    if (argc == 3 && !strcmp(argv[1], "--callgrind")) {
        g_nmods = unw_fill_modules(g_mods, 512, UNW_TABLE_HDR, 1);
        int n = atoi(argv[2]);
        descend(DEPTH, M_CG, n / BATCH > 0 ? n / BATCH : 1, NULL);
        return 0;
    }
    int batches = argc > 1 ? atoi(argv[1]) : 300;
    if (batches < 3)
        batches = 3;
    double *t = calloc((size_t)batches, sizeof *t);
    static const struct {
        mode m;
        const char *name;
        int ranges;
    } runs[] = {{M_BT, "backtrace() (peer)", 0},
                {M_FL, "fl_unwind (crash path)", 1},
                {M_FL_SYS, "fl_unwind, no ranges, cold", 0}};
    double med[3];
    size_t frames[3];
    for (int r = 0; r < 3; r++) {
        fl_safemem_clear_ranges();
        fl_safemem_forget_pages();
        g_nmods = unw_fill_modules(g_mods, 512, UNW_TABLE_HDR, runs[r].ranges);
        descend(DEPTH, runs[r].m, 2, NULL); /* warm up (backtrace loads libgcc_s) */
        frames[r] = descend(DEPTH, runs[r].m, batches, t);
        qsort(t, (size_t)batches, sizeof *t, cmp_d);
        med[r] = t[batches / 2];
    }
    printf("%-30s %8s %12s %10s\n", "unwinder", "frames", "median ns", "vs peer");
    for (int r = 0; r < 3; r++)
        printf("%-30s %8zu %12.0f %9.2fx\n", runs[r].name, frames[r], med[r], med[r] / med[0]);
    free(t);
    return 0;
}
