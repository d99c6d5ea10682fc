/*
 * fl_tracedecode.h - `faultline decode` (tracedecode.c): a trace-ID dump
 * (faultline_trace_dump) back into text.
 */
#ifndef FL_TRACEDECODE_H
#define FL_TRACEDECODE_H

#include <stddef.h>
#include <stdio.h>

/* The command: faultline decode [--obj FILE]... [DUMP]. */
int fl_cmd_decode(int argc, char **argv);

/* The command: faultline dump [options] PID (cmd_dump.c). */
int fl_cmd_dump(int argc, char **argv);

/* Decodes the dump read from `in` into `out` with no object files and
 * without opening the paths the dump names: every event's line says it
 * could not be decoded, the rest is checked and copied.  The fuzz
 * target's entry.  Returns 0, 1 or 2, as the command exits. */
int fl_trace_decode_stream(FILE *in, FILE *out);

/* The same with the object files objs (as --obj FILE each; still no path
 * the dump names is opened): the events of their build ids are formatted.
 * The fuzz target's entry, with fixed objects.  2 when one cannot be
 * opened. */
int fl_trace_decode_stream_objs(FILE *in, FILE *out, const char *const *objs, size_t nobjs);

#endif /* FL_TRACEDECODE_H */
