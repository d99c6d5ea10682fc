/*
 * fl_tracesec.h - the formats a program built with FAULTLINE_TRACE_APART
 * keeps out of its memory, and the text of its events.
 *
 * Each FAULTLINE_TRACE site of such a build adds an entry to the
 * non-allocated ELF section .debug_faultline_trace: the site's address
 * (8 bytes, little-endian, as the linker resolved it: the file's virtual
 * address), its format and its source file, each NUL-terminated.  strip
 * moves the section into the debug file.  A crash log names such an event
 * by its site (a TRACE_ID line, fl_trace_event.apart); the server and
 * `faultline decode` find the format here by the site's address in its
 * object's file.
 */
#ifndef FL_TRACESEC_H
#define FL_TRACESEC_H

#include <stddef.h>
#include <stdint.h>

#include "fl_crashlog.h"

#define FL_TRACESEC_NAME ".debug_faultline_trace"

typedef struct fl_tracesec fl_tracesec;

/* Reads the section's bytes (copied; the caller keeps data).  Returns 0,
 * or -1 with err filled: an entry cut short, no entry, out of memory. */
int fl_tracesec_parse(const void *data, size_t len, fl_tracesec **out, char *err, size_t errlen);

/* The format of the site at vaddr (the address in its object's file), and
 * its source file into *file when file is not NULL; NULL when the section
 * has no such site.  Valid until fl_tracesec_free. */
const char *fl_tracesec_find(const fl_tracesec *ts, uint64_t vaddr, const char **file);

/* How many distinct sites the section holds. */
size_t fl_tracesec_count(const fl_tracesec *ts);

/* One more owner of ts (never changed after parsing, so threads may share
 * it): each owner calls fl_tracesec_free once, the last one frees it.
 * Returns ts. */
fl_tracesec *fl_tracesec_ref(fl_tracesec *ts);
void fl_tracesec_free(fl_tracesec *ts);

/* The text of TRACE_ID event e with format fmt, as the program would
 * have written it without FAULTLINE_TRACE_APART (control bytes escaped,
 * as a TRACE line has them), into out (cap bytes, NUL-terminated).
 * Returns its length. */
size_t fl_trace_event_text(const fl_trace_event *e, const char *fmt, char *out, size_t cap);

/* The object of L that holds address addr (OBJECT's base and size), and
 * addr as that object's file has it (minus its load bias, or its base
 * when the log gives none) into *vaddr; NULL when none does. */
const fl_object *fl_crashlog_object_at(const fl_crashlog *L, uint64_t addr, uint64_t *vaddr);

#endif /* FL_TRACESEC_H */
