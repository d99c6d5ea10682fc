/*
 * fl_tracefmt.h - the flight recorder's formatter (tracefmt.c), shared by
 * the client library and `faultline decode`.  Signal-safe.
 */
#ifndef FL_TRACEFMT_H
#define FL_TRACEFMT_H

#include <stddef.h>
#include <stdint.h>

/* The text of fmt (printf's conversions) over nargs argument slots of the
 * given type codes (faultline.h: i u l m q Q d D s p), into out (cap
 * bytes, always NUL-terminated, cut when full).  A slot of type 's' is a
 * byte offset into strs (strbytes long; 0: a NULL pointer), where the
 * string is NUL-terminated.  Returns the text's length (it may hold NULs:
 * %c of 0). */
size_t fl_trace_format(char *out, size_t cap, const char *fmt, const char *types, unsigned nargs,
                       const uint64_t *slots, const char *strs, size_t strbytes);

#endif /* FL_TRACEFMT_H */
