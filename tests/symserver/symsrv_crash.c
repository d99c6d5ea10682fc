/*
 * symsrv_crash.c - the crashing client of the symbolication server tests.
 *
 *   symsrv_crash deep    a NULL store in symsrv_fault (through an inlined
 *                        helper), reached through a chain of noinline
 *                        functions: main -> symsrv_outer -> symsrv_middle
 *                        -> symsrv_fault
 *   symsrv_crash abort   abort() from symsrv_aborter: frames inside libc
 *
 * Built -O2 -g; the build splits the debug information off into
 * symsrv_crash.debug and strips the binary, so the server can only name
 * its frames from the uploaded debug file.  Faultline is installed first,
 * so each crash leaves $FAULTLINE_SPOOL/<id>.crashlog.
 */
#include <stdio.h>
#include <stdlib.h>

#include "faultline.h"

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static int *volatile null_int; /* always NULL, opaque to the optimizer */
volatile int sink;

static inline __attribute__((always_inline)) void symsrv_store(int *p, int v)
{
    *p = v * 3 + 1;
}

NOINLINE void symsrv_fault(int v)
{
    symsrv_store(null_int, v);
    KEEP_FRAME();
}

NOINLINE void symsrv_middle(int v)
{
    symsrv_fault(v + 1);
    KEEP_FRAME();
}

NOINLINE void symsrv_outer(int v)
{
    symsrv_middle(v * 2);
    KEEP_FRAME();
}

NOINLINE void symsrv_aborter(void)
{
    abort();
}

int main(int argc, char **argv)
{
    if (!faultline_install("symsrv", "1.0", NULL)) {
        fprintf(stderr, "faultline_install failed\n");
        return 2;
    }
    if (argc > 1 && argv[1][0] == 'a')
        symsrv_aborter();
    else
        symsrv_outer(argc);
    sink = 1;
    return 0;
}
