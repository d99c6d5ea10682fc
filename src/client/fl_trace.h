/*
 * fl_trace.h - the flight recorder's memory, shared by trace.c (which
 * records) and trace_dump.c (which reads and formats).  See trace.c.
 * SIGNAL-SAFE ZONE.
 */
#ifndef FL_TRACE_H
#define FL_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "faultline.h"

/* A ring of 64-bit words; records are claimed at `head`, an absolute word
 * position that only grows. */
typedef struct fl_ring {
    uint64_t *w;
    uint64_t mask; /* words - 1 (a power of two) */
    uint64_t head; /* next absolute word position to claim (atomic) */
} fl_ring;

extern fl_ring fl_traces, fl_crumbs;

/* Objects dlclose()d (and really unmapped) while the recorder ran: their
 * PT_LOAD span and the trace ring's head once they were gone.  An event
 * claimed below that head with its site in the span was recorded by the
 * object that left, whatever is mapped there now (another library, whose
 * sites would format it with the wrong format): the dump prints its site
 * as unreadable.  A slot is valid when its head is non-zero and the same
 * before and after lo and hi are read; an unload of a span already listed
 * updates its slot, so a plugin reloaded at one address takes one slot.
 * More distinct spans than slots: the oldest is forgotten (a limit). */
typedef struct fl_unload {
    uint64_t lo, hi, head;
} fl_unload;
#define FL_UNLOADS 32
extern fl_unload fl_unloads[FL_UNLOADS];
/* Normal context (the dlclose wrapper). */
void fl_trace_unloaded(uint64_t lo, uint64_t hi);

/* Record layout, in words: the stamp; meta (record length in words, number
 * of arguments << 16, kind << 24, the low 32 bits of the record's absolute
 * position << 32: a cheap first test for a reader that looks for records
 * word by word); time (CLOCK_REALTIME, ns); thread id;
 * the site (a trace) or 0 (a breadcrumb); one slot per argument; then the
 * copied strings, each NUL-terminated, a string slot holding its byte
 * offset from the record's start (0: a NULL pointer); then, with
 * FL_KIND_CTX, the calling context. */
enum { FL_W_STAMP, FL_W_META, FL_W_TIME, FL_W_TID, FL_W_SITE, FL_W_ARGS };
/* The thread-id word also says which string slots hold a hard-coded
 * string's address instead of an offset (bit FL_STATIC_SHIFT + i: slot i;
 * see fl_ro_same_object()).  Thread ids fit in 32 bits. */
#define FL_STATIC_SHIFT 48
#define FL_TID(rec) ((rec)[FL_W_TID] & ((1ull << FL_STATIC_SHIFT) - 1))
#define FL_STATIC(rec, i) ((rec)[FL_W_TID] >> (FL_STATIC_SHIFT + (i)) & 1)
enum { FL_KIND_TRACE = 1, FL_KIND_CRUMB = 2 };
/* In a trace record's kind: its last word is the thread's calling context
 * (faultline_context()) at the event -- only when that is not 0, so that
 * code built without -finstrument-functions pays nothing. */
#define FL_KIND_CTX 0x80
#define FL_CRUMB_CAT_MAX 32
#define FL_REC_MAX_WORDS                                                                           \
    (FL_W_ARGS + FAULTLINE_TRACE_MAX_ARGS +                                                        \
     FAULTLINE_TRACE_MAX_ARGS * ((FAULTLINE_TRACE_MAX_STR + 1 + 7) / 8) + 1)

/* The loaded objects' PT_LOAD segments as faultline_install() found them,
 * sorted by address, so that recording can tell a hard-coded string -- in
 * a read-only segment of the object that holds the trace site -- and keep
 * its address rather than a copy (trace.c).  Filled once by
 * fl_modules_init() and then only read: fl_ro_n is published last.
 * Before it, and for objects loaded later, strings are copied. */
typedef struct fl_ro_seg {
    uint64_t lo, hi;
    uint32_t obj;
    bool ro; /* not writable: the object's text and read-only data */
} fl_ro_seg;
#define FL_RO_MAX 512
extern fl_ro_seg fl_ro_segs[FL_RO_MAX];
extern unsigned fl_ro_n;
/* s lies in a read-only segment of the object that holds site (and so
 * lives as long as the site does): its address can stand for it. */
bool fl_ro_same_object(const void *site, const char *s);
/* At a dump: the object that held the kept string at addr is still
 * loaded there (its build id is where it was). */
bool fl_ro_alive(uint64_t addr);

/* The calling thread's calling context (context.c). */
uint64_t fl_context_now(void);

/* The stamp of a record that starts at absolute position pos and whose
 * other words sum (fl_trace_sum) to sum. */
uint64_t fl_trace_stamp(uint64_t pos, uint64_t sum);

/* The running checksum of a record's words after the stamp: word i (from
 * 1) adds w * (2i + 1) * K.  A writer that claimed its space and then lost
 * the CPU for a whole lap of the ring writes its words late, into the
 * record of whoever claimed that space next: the sum no longer matches,
 * and readers drop that record instead of showing a mix of the two. */
static inline uint64_t fl_trace_sum(uint64_t sum, unsigned i, uint64_t w)
{
    return sum + w * ((2 * (uint64_t)i + 1) * 0x9e3779b97f4a7c15ull);
}

/* State: a key/value table, each slot with a sequence count that is odd
 * while the slot is written. */
#define FL_STATE_KEY_MAX 64
#define FL_STATE_VALUE_MAX 256
typedef struct fl_state_slot {
    unsigned seq;
    bool used;
    char key[FL_STATE_KEY_MAX];
    char value[FL_STATE_VALUE_MAX];
} fl_state_slot;
extern fl_state_slot fl_trace_state[FAULTLINE_STATE_MAX];

#include "fl_tracefmt.h" /* fl_trace_format */

#endif /* FL_TRACE_H */
