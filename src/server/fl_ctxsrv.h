/*
 * fl_ctxsrv.h - the calling contexts of a stored crash, decoded on the
 * server (GET /api/v1/crashes/ID/contexts, the portal's crash page).
 *
 * A crash log from code built with -finstrument-functions carries 64-bit
 * calling contexts: CRASH_CONTEXT, THREAD_CONTEXT and the trace events'
 * TRACE_CONTEXT.  Turning one back into a stack means rebuilding the call
 * graph of the program's files and searching it (fl_ctxdecode.h): tens of
 * milliseconds to load and disassemble a program, up to seconds for a
 * value no stack gives.  So it is done on demand, off the HTTP threads:
 *
 *   - fl_ctxsrv_get() answers from a cache of results by crash id, or
 *     queues the crash for one decoder thread (at a lower priority than
 *     ingest) and says "pending"; the caller asks again.
 *   - The decoder finds each object's loadable file by build id where the
 *     symbolizer looks (uploads, debuginfod, the object's own path:
 *     fl_srvsym_find_file), keeps those built with -finstrument-functions,
 *     and keeps the last few call graphs, so the next crash of the same
 *     build costs only the searches.
 *   - A result in which some value was not decoded is kept for a minute;
 *     any result is dropped when a debug file arrives (the symbolizer's
 *     generation moves), so an executable uploaded after the crash is used
 *     at the next look.
 *
 * Threads: every function may be called from any thread.
 */
#ifndef FL_CTXSRV_H
#define FL_CTXSRV_H

#include <stddef.h>
#include <stdint.h>

struct fl_srvsym;
typedef struct fl_ctxsrv fl_ctxsrv;

typedef struct fl_ctxsrv_config {
    struct fl_srvsym *sym; /* where the files are found (borrowed) */
    uint64_t max_paths;    /* search budget per value, and twice that per
                            * crash; 0: 20,000,000 paths */
    unsigned max_depth;    /* longest stack tried; 0: 64 */
    unsigned max_queue;    /* crashes waiting for the decoder; 0: 16 */
} fl_ctxsrv_config;

/* Starts the decoder thread.  Returns NULL (err filled) on failure. */
fl_ctxsrv *fl_ctxsrv_new(const fl_ctxsrv_config *cfg, char *err, size_t errlen);
void fl_ctxsrv_free(fl_ctxsrv *cs); /* stops the thread; NULL is fine */

enum {
    FL_CTXSRV_DONE = 0,    /* *json is the answer (caller frees) */
    FL_CTXSRV_PENDING = 1, /* queued or being decoded: ask again */
    FL_CTXSRV_UNKNOWN = 2, /* fl_ctxsrv_cached: neither known nor queued */
    FL_CTXSRV_BUSY = -1,   /* the queue is full: ask later */
    FL_CTXSRV_BADLOG = -2, /* the stored log does not parse */
    FL_CTXSRV_NOMEM = -3
};

/* The decoded contexts of crash `id`, without its log: FL_CTXSRV_DONE
 * with *json from the cache, FL_CTXSRV_PENDING while it is queued or
 * being decoded, FL_CTXSRV_UNKNOWN when neither (then call fl_ctxsrv_get
 * with the log).  FL_CTXSRV_NOMEM also for a minute after the decoding of
 * the crash ran out of memory (its call graph, or its answer); a single
 * value whose search ran out of memory is "not_found" instead. */
int fl_ctxsrv_cached(fl_ctxsrv *cs, const char *id, char **json);

/* The decoded contexts of crash `id`, whose stored log is raw[0..len):
 * from the cache, at once when the log has no context, else queued.
 * The answer, as JSON text:
 *   {"crash_id":ID,"status":"done",
 *    "contexts":[{"value":"0x…","crashed":bool,"threads":[TID…],"events":N,
 *                 "status":"decoded"|"empty"|"not_found"|"no_files",
 *                 "frames":[{"function","module","address"}…],  (decoded)
 *                 "message":"…"}…],                              (otherwise)
 *    "files":[{"module","build_id","status":"used"|"not instrumented"|
 *              "missing","source"}…]}
 * Frames are innermost first; a value is listed once, with every thread
 * and the number of trace events that had it.  A crash costs at most: its
 * first 256 distinct values searched, its first 256 objects looked for,
 * twice cfg.max_paths paths in all ("omitted": threads and events whose
 * value was past the 256th). */
int fl_ctxsrv_get(fl_ctxsrv *cs, const char *id, const char *raw, size_t len, char **json);

typedef struct fl_ctxsrv_stats {
    uint64_t crashes; /* crashes decoded (not from the cache) */
    uint64_t decoded; /* values decoded to a stack */
    uint64_t missed;  /* values not decoded (no stack, no files) */
    uint64_t graphs;  /* call graphs built */
    uint64_t queued;  /* crashes waiting now */
} fl_ctxsrv_stats;
void fl_ctxsrv_get_stats(fl_ctxsrv *cs, fl_ctxsrv_stats *out);

#endif
