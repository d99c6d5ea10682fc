/* A library built with -finstrument-functions for tests/context: a call
 * into it, a call inside it, and a call back into the program. */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

void ctx_report(const char *label, const char *expect); /* in the program */

NOINLINE static void lib_inner(void (*cb)(void))
{
    ctx_report("lib_inner", "lib_inner lib_entry main");
    cb();
}

NOINLINE void lib_entry(void (*cb)(void))
{
    lib_inner(cb);
    __asm__ volatile("" ::: "memory"); /* no tail call */
}
