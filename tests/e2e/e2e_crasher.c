/* A small application with two different crashes.
 *   e2e_crasher null   -> SIGSEGV in parse_record()
 *   e2e_crasher abort  -> SIGABRT from check_invariant()
 * Before it crashes, it leaves state, a breadcrumb and trace events in the
 * flight recorder, which the processed crash must show. */
#include <faultline.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

NOINLINE static int parse_record(const char *volatile rec)
{
    int n = rec[3]; /* rec is NULL */
    BARRIER();
    return n;
}

NOINLINE static int load_file(const char *name)
{
    int r = parse_record(strcmp(name, "x") ? NULL : name);
    BARRIER();
    return r + 1;
}

NOINLINE static void check_invariant(int v)
{
    if (v != 42)
        abort();
    BARRIER();
}

int main(int argc, char **argv)
{
    const char *version = getenv("E2E_VERSION");
    if (!faultline_install("e2eapp", version ? version : "1.0", NULL))
        return 3;
    faultline_set_state("stage", "loading input");
    faultline_breadcrumb("file", "opened input.dat");
    for (int i = 0; i < 3; i++)
        FAULTLINE_TRACE("record %d of %s at %.1f%%", i, "input.dat", 100.0 * i / 3);
    if (argc > 1 && !strcmp(argv[1], "null"))
        return load_file("input");
    if (argc > 1 && !strcmp(argv[1], "abort"))
        check_invariant(argc);
    puts("no crash");
    return 0;
}
