/*
 * fuzz_trace_format.c - the flight recorder's formatter on any input.
 *
 * Input: one byte for the number of arguments (0-8), 8 bytes of argument
 * types (mapped onto the codes the macro makes), then the record's words
 * after its header (argument slots, then string bytes: a slot of type 's'
 * is a byte offset into the record, as written), up to a NUL; then the
 * format string.  The text must be bounded and NUL-terminated; ASan checks
 * that nothing outside the record is read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl_trace.h" /* the record layout */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char codes[] = "iulmqQdDsp";
    if (size < 9)
        return 0;
    unsigned nargs = data[0] % (FAULTLINE_TRACE_MAX_ARGS + 1);
    char types[FAULTLINE_TRACE_MAX_ARGS + 1];
    for (unsigned i = 0; i < FAULTLINE_TRACE_MAX_ARGS; i++)
        types[i] = codes[data[1 + i] % (sizeof codes - 1)];
    types[FAULTLINE_TRACE_MAX_ARGS] = '\0';
    data += 9;
    size -= 9;
    /* The record: a header, then the input's bytes up to the first NUL
     * pair ("\0\0" ends the record part), at most a record's size. */
    size_t body = 0;
    while (body + 1 < size && !(data[body] == 0 && data[body + 1] == 0))
        body++;
    size_t maxbody = (FL_REC_MAX_WORDS - FL_W_ARGS) * 8;
    if (body > maxbody)
        body = maxbody;
    size_t words = FL_W_ARGS + (body + 7) / 8;
    if (words < FL_W_ARGS + nargs)
        words = FL_W_ARGS + nargs;
    /* Exactly the record's size on the heap, so an overread is caught. */
    uint64_t *rec = calloc(words, 8);
    if (!rec)
        return 0;
    memcpy(rec + FL_W_ARGS, data, body);
    size_t rest = size - body;
    const uint8_t *f = data + body + (rest >= 2 ? 2 : rest);
    size_t flen = rest >= 2 ? rest - 2 : 0;
    char *fmt = malloc(flen + 1);
    if (!fmt) {
        free(rec);
        return 0;
    }
    memcpy(fmt, f, flen);
    fmt[flen] = '\0';
    char out[512];
    size_t n = fl_trace_format(out, sizeof out, fmt, types, nargs, rec + FL_W_ARGS,
                               (const char *)rec, words * 8);
    if (n >= sizeof out || out[n] != '\0') /* %c of 0 may put a NUL inside */
        abort();
    free(fmt);
    free(rec);
    return 0;
}
