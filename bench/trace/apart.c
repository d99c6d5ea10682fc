/* The bench's event built with -DFAULTLINE_TRACE_APART (tracebench.c):
 * the same record, its format in .debug_faultline_trace instead of the
 * program's memory. */
#include "faultline.h"

long apart_events;
void *run_trace_apart(void *arg);

static const char *const names[] = {"alpha.example.org", "beta", "gamma-service", "d"};

void *run_trace_apart(void *arg)
{
    (void)arg;
    for (long i = 0; i < apart_events; i++)
        FAULTLINE_TRACE("request %ld from %s took %.3f ms", i, names[i & 3],
                        (double)(i & 1023) / 7);
    return 0;
}
