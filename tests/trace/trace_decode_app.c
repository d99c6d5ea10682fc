/* trace_decode_app IDS TEXT [LIB]: traces a bit of everything (and, with
 * LIB, from a dlopen()ed library), then writes the flight recorder both
 * ways: the trace-ID dump to IDS, the text to TEXT.  decode.sh checks that
 * `faultline decode` makes TEXT out of IDS; dump.sh, with DECODE_WAIT set,
 * that `faultline dump PID` makes TEXT out of the waiting process.
 * Built again with FAULTLINE_TRACE_APART as trace_apart_app, which
 * apart.sh compares with this build; DECODE_CRASH=1 then crashes it
 * after the dumps, for a crash log. */
#include <dlfcn.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faultline.h"

/* DECODE_OWN_SIGNAL=N: the application's own handler for N, set before
 * faultline_install(), which must leave it alone. */
static void own_handler(int sig)
{
    (void)sig;
    if (write(1, "OWN HANDLER\n", 12) < 0)
        _exit(9);
}

/* Thread-local data: its .tbss section takes no room in the image, so
 * its addresses are those of the sections after it (.data.rel.ro, where
 * the trace sites are) -- `decode` must not read a site there as zeros. */
__thread char decode_tls_scratch[1 << 16];

int main(int argc, char **argv)
{
    decode_tls_scratch[argc] = 1;
    if (argc < 3)
        return 64;
    if (getenv("DECODE_OWN_SIGNAL"))
        signal(atoi(getenv("DECODE_OWN_SIGNAL")), own_handler);
    /* DECODE_NO_INSTALL: the dump has no module table to name sites by. */
    if (!getenv("DECODE_NO_INSTALL") && !faultline_install("decodeapp", "1.0", NULL))
        return 3;
    faultline_set_state("mode", "decode test");
    faultline_breadcrumb("start", "main entered");
    char name[300];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    const char *nul = NULL;
    for (int i = 0; i < 50; i++) {
        FAULTLINE_TRACE("step %d of %u, %ld %llx [%-8s] %.3f %g %e", i, 50u, -1L * i,
                        0xfeedfaceULL + (unsigned)i, "ok", i / 7.0, i * 1e10, -i / 3.0);
        FAULTLINE_TRACE("strings %s|%s|%.5s|%s", "alpha", nul, "truncated", i % 2 ? "odd" : "even");
    }
    /* Eight long strings: the record's strings span several TRACE_BYTES
     * lines. */
    FAULTLINE_TRACE("%s %s %s %s %s %s %s %s", name, name, name, name, name, name, name, name);
    FAULTLINE_TRACE("no arguments, 100%% sure");
    /* A hard-coded string longer than the recorder keeps: the library and
     * `decode` cut it at the same byte. */
    static const char longlit[] = "a hard-coded string longer than 256 bytes: "
                                  "................................................................"
                                  "................................................................"
                                  "................................................................"
                                  "................................................................"
                                  " and this part is never shown";
    FAULTLINE_TRACE("long [%s] %d", longlit, 9);
    /* A format longer than 512 bytes: both ways give all of it.  (Several
     * literals: with FAULTLINE_TRACE_APART, clang's integrated assembler
     * takes one only.) */
#define DOTS "................................................................"
#if !(defined(FAULTLINE_TRACE_APART) && defined(__clang__))
    FAULTLINE_TRACE("long format " DOTS DOTS DOTS DOTS DOTS DOTS DOTS DOTS DOTS " end %d", 10);
#endif
#undef DOTS
    int x;
    FAULTLINE_TRACE("ptr %p char %c pct %%", (void *)&x, 'q');
    FAULTLINE_TRACE("limits %d %u %lld %llu %f", INT_MIN, UINT_MAX, LLONG_MIN, ULLONG_MAX, DBL_MAX);
    if (argc > 3) {
        void *h = dlopen(argv[3], RTLD_NOW);
        void (*fn)(int) = h ? (void (*)(int))dlsym(h, "tracelib_trace") : NULL;
        if (!fn)
            return 4;
        fn(7);
        fn(8);
    }
    faultline_breadcrumb("end", "about to dump");
    int ids = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int text = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (ids < 0 || text < 0 || faultline_trace_dump(ids) <= 0 ||
        faultline_trace_dump_text(text) <= 0)
        return 5;
    if (getenv("DECODE_CRASH"))
        *(volatile int *)(uintptr_t)argc = 0; /* a NULL (well, 3 or 4) write */
    /* DECODE_WAIT: then wait, as a hung process would, until killed --
     * for `faultline dump PID` (tests/trace/dump.sh).  DECODE_WAIT=once:
     * exit when the first signal (the dump's) ends the wait. */
    if (getenv("DECODE_WAIT")) {
        int once = !strcmp(getenv("DECODE_WAIT"), "once");
        printf("READY\n");
        fflush(stdout);
        do
            pause();
        while (!once);
    }
    return 0;
}
