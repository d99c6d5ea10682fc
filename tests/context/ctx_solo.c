/*
 * ctx_solo: a program built with -finstrument-functions and linked with
 * libfaultline's static archive, exporting nothing -- once stripped, its
 * only sign of the hooks is their definition.  `ctx_solo crash` crashes in
 * a known stack.  tests/context/server.sh has the server decode it.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "faultline.h"

#define NOINLINE __attribute__((noinline))

NOINLINE static void solo_leaf(void)
{
    printf("SOLO_EXPECT solo_leaf solo_mid main\n");
    fflush(stdout);
    volatile uintptr_t bad = 16; /* not NULL: UBSan would stop first */
    *(volatile int *)bad = 1;
}

NOINLINE static void solo_mid(void)
{
    solo_leaf();
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    if (!faultline_install("ctx_solo", "1.0", NULL))
        return 3;
    if (argc > 1 && !strcmp(argv[1], "crash"))
        solo_mid();
    return 0;
}
