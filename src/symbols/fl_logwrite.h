/*
 * fl_logwrite.h - the lines of a version-2 crash log, as the converters
 * write them (`faultline core`, core.c; `faultline minidump`,
 * minidump.c): key-value lines through the client's line builder
 * (fl_crashlog.h's fl_line, which escapes), raw STACK lines, the names of
 * signals, and the frames of a thread libdwfl unwinds.
 *
 * Every writer returns false when the stream failed (errno says why).
 */
#ifndef FL_LOGWRITE_H
#define FL_LOGWRITE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <elfutils/libdwfl.h>

#include "fl_crashlog.h"

/* A converter's error message, into err (errcap bytes; nothing when
 * NULL): "SHOWN: WHAT (details)", the details from fmt (may be NULL). */
void fl_lw_verror(char *err, size_t errcap, const char *shown, const char *what, const char *fmt,
                  va_list ap);

/* Writes a built line and its newline. */
bool fl_lw_line(FILE *out, fl_line *l);

/* Whether s is NULL or only blanks: the reader trims a value's blanks, so
 * such a value reads as none (and a required one as missing). */
bool fl_lw_blank(const char *s);

/* KEY value; nothing for a NULL or blank string. */
bool fl_lw_str(FILE *out, const char *key, const char *v);
bool fl_lw_i64(FILE *out, const char *key, int64_t v);
bool fl_lw_hex(FILE *out, const char *key, uint64_t v);

/* STACK lines of n bytes at addr, 64 a line. */
bool fl_lw_stack(FILE *out, uint64_t addr, const uint8_t *bytes, size_t n);

/* An object: OBJECT name/start/size[/bias] (the path's file name, or
 * "unknown"), OBJECT_BUILD_ID when it has one, OBJECT_PATH when the path
 * is absolute. */
bool fl_lw_object(FILE *out, const char *path, uint64_t start, uint64_t size, const uint64_t *bias,
                  const uint8_t *build_id, size_t build_id_len);

/* The crashing thread's CALLSTACK lines. */
bool fl_lw_callstack(FILE *out, const uint64_t *pcs, size_t n);

/* Another thread: THREAD tid [name], then its THREAD_FRAME lines. */
bool fl_lw_thread(FILE *out, uint64_t tid, const char *name, const uint64_t *pcs, size_t n);

/* The comment a converted log opens with: what it was made from (e.g.
 * "core dump") and who to ask. */
bool fl_lw_intro(FILE *out, const char *source);

/* SIGSEGV's name, ..., for the signals a crash ends with; NULL for others. */
const char *fl_lw_signal_name(int sig);

/* The last component of a path. */
const char *fl_lw_base_name(const char *path);

/* The pcs of thread's stack as libdwfl walks it, at most max into pcs:
 * the first is where it stopped, the others return addresses (as the
 * client writes them).  The walk ends with an error at the outermost
 * frame, or where neither CFI nor frame pointers lead on: the frames
 * before it are the stack. */
size_t fl_lw_thread_frames(Dwfl_Thread *thread, uint64_t *pcs, size_t max);

#endif /* FL_LOGWRITE_H */
