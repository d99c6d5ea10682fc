/*
 * svc_crash.c - a client program that crashes in the places the symbol
 * services must explain.
 *
 *   svc_crash abort    abort() from main: frames inside libc (raise, abort)
 *   svc_crash strlen   strlen(NULL): the faulting pc itself is in libc
 *   svc_crash qsort    a NULL store in a qsort_r comparator, reached through a
 *                      chain of noinline functions; built -O2
 *                      -fomit-frame-pointer, so only CFI unwinds it
 *   svc_crash solib    a crash inside libsvc_solib.so, which is stripped
 *                      (its debug file lives elsewhere, behind debuginfod)
 *   svc_crash nocfi    a NULL store in a callback called through three
 *                      functions of svc_nocfi.c, built without unwind tables
 *                      (their CFI is in .debug_frame only, which is not
 *                      loaded): the client's walk cannot pass them, the
 *                      server's, reading the file, can
 *
 * Faultline is installed first, so each crash leaves
 * $FAULTLINE_SPOOL/<id>.crashlog.  Every function that should be a frame
 * of its own is noinline and ends with an empty asm (no tail call).
 */
#define _GNU_SOURCE /* qsort_r */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faultline.h"

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

void svc_solib_entry(int depth);              /* libsvc_solib.so */
void svc_nocfi_outer(void (*fn)(int), int x); /* svc_nocfi.c */

static const char *volatile null_str;  /* always NULL, opaque to the optimizer */
static int *volatile null_int;
volatile int sink;

NOINLINE static void crash_abort(void)
{
    abort();
}

NOINLINE static size_t crash_strlen(void)
{
    size_t n = strlen(null_str);
    KEEP_FRAME();
    return n;
}

NOINLINE static void crash_in_compare(int x)
{
    *null_int = x;
    KEEP_FRAME();
}

NOINLINE static int compare_ints(const void *a, const void *b, void *arg)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (x == 3 || y == 3)
        crash_in_compare(x + y);
    KEEP_FRAME();
    return (x > y) - (x < y);
}

NOINLINE static void sort_numbers(int *v, size_t n)
{
    /* qsort_r, not qsort: glibc's qsort tail-calls qsort_r, and gdb shows
     * that tail call as a frame of its own (reconstructed from
     * DW_TAG_call_site, not unwound), which no stack walk can see. */
    qsort_r(v, n, sizeof *v, compare_ints, NULL);
    KEEP_FRAME();
}

NOINLINE static void prepare_and_sort(int seed)
{
    int v[8];
    for (int i = 0; i < 8; i++)
        v[i] = (seed * 7 + i * 5) % 8;
    sort_numbers(v, 8);
    sink = v[0];
    KEEP_FRAME();
}

NOINLINE static void run_qsort(void)
{
    prepare_and_sort(1);
    KEEP_FRAME();
}

NOINLINE static void run_nocfi(void)
{
    svc_nocfi_outer(crash_in_compare, 2);
    KEEP_FRAME();
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: svc_crash abort|strlen|qsort|solib|nocfi\n");
        return 2;
    }
    if (!faultline_install("svcapp", "1.0", NULL)) {
        fprintf(stderr, "faultline_install failed\n");
        return 3;
    }
    if (!strcmp(argv[1], "abort"))
        crash_abort();
    else if (!strcmp(argv[1], "strlen"))
        sink = (int)crash_strlen();
    else if (!strcmp(argv[1], "qsort"))
        run_qsort();
    else if (!strcmp(argv[1], "solib"))
        svc_solib_entry(3);
    else if (!strcmp(argv[1], "nocfi"))
        run_nocfi();
    fprintf(stderr, "svc_crash: no crash for mode %s\n", argv[1]);
    return 4;
}
