/*
 * fuzz_tracedecode.c - `faultline decode`'s reader of trace-ID dumps
 * (src/symbols/tracedecode.c) on any input: no crash, no leak, and an exit
 * status of 0, 1 or 2.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fl_tracedecode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *in = fmemopen((void *)data, size, "r");
    FILE *out = fopen("/dev/null", "w");
    if (in && out) {
        int rc = fl_trace_decode_stream(in, out);
        if (rc < 0 || rc > 2)
            abort();
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    return 0;
}
