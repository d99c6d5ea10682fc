/*
 * fuzz_tracedecode.c - `faultline decode`'s reader of trace-ID dumps
 * (src/symbols/tracedecode.c) on any input: no crash, no leak, and an exit
 * status of 0, 1 or 2.  Decoded with the committed objects
 * tracedecode_obj.so and tracedecode_apart.so (tracedecode_obj.c), as if
 * given with --obj: the seeds made by make_tracedecode_seeds.sh name their
 * build ids, so their events are formatted (sites, formats kept apart,
 * hard-coded strings), not only parsed.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fl_tracedecode.h"

static const char *const objs[] = {FL_TRACEDECODE_OBJ, FL_TRACEDECODE_APART};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *in = fmemopen((void *)data, size, "r");
    FILE *out = fopen("/dev/null", "w");
    if (in && out) {
        int rc = fl_trace_decode_stream_objs(in, out, objs, sizeof objs / sizeof objs[0]);
        if (rc < 0 || rc > 2)
            abort();
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    return 0;
}
