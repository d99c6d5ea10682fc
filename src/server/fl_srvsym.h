/*
 * fl_srvsym.h - the server's symbolizer: debug files by build id ->
 * symcaches -> frames, shared by the worker threads and the HTTP
 * endpoints (POST /api/v1/symbolicate, POST /symbolicate).
 *
 * How it works: a module is named by its GNU build id.  The first lookup
 * of a build id asks fl_symlocate where its debug information is (the
 * uploads under DATA/symbols/processed, /usr/lib/debug, debuginfod, the
 * object's own file), builds or opens its symcache under DATA/symcache
 * (fl_symstore), and keeps it open in a small LRU of open symcaches.
 * Lookups copy what they return while holding the LRU's lock, so an
 * eviction by another thread can never pull a string from under a caller;
 * a lookup is a binary search, so the lock is held for microseconds.  The
 * slow part -- locating and building -- runs without the lock.
 *
 * Misses are not cached here (a miss costs a few stat() calls; the
 * per-crash wrapper in worker.c asks once per module per crash;
 * debuginfod misses are remembered by fl_symlocate), so a debug file
 * uploaded a moment ago is found by the next lookup.  Only a debug file
 * that is found but cannot be built into a symcache is remembered, for
 * 10 minutes or until fl_srvsym_forget(), so that it is not rebuilt for
 * every crash.  An open symcache that lacks a file only debuginfod may
 * still bring (its dwz file; DWARF, when built from a symbol table) is
 * dropped from the LRU once the locator's memory of the miss is over
 * (debuginfod_miss_s), so that the next lookup asks again.
 *
 * Threads: every function may be called from any number of threads.
 */
#ifndef FL_SRVSYM_H
#define FL_SRVSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fl_crashlog.h"
#include "fl_group.h"
#include "fl_minidump.h"
#include "fl_symcache.h"
#include "fl_symlocate.h"

typedef struct fl_srvsym fl_srvsym;

typedef struct fl_srvsym_config {
    const char *upload_root;      /* DATA/symbols/processed (borrowed, copied) */
    const char *cache_dir;        /* DATA/symcache */
    const char *debuginfod_cache; /* DATA/debuginfod-cache, or NULL */
    unsigned debuginfod_outage_s; /* no request after no server answered; 0: 60 */
    /* How long a debuginfod miss is remembered (0: 600 s); an open
     * symcache that lacks a file (its dwz file, its DWARF) is looked up
     * again after as long, so that debuginfod is asked again. */
    unsigned debuginfod_miss_s;
    unsigned lru;                 /* open symcaches kept; 0: 32 */
    bool remote_unwind;           /* redo the crashing thread's unwind */
    /* Optional: servers sharing a store (PostgreSQL) share their debug
     * files through it.  Asked once per build id (again after a flush)
     * before the local places are tried: copy the store's file for
     * build_id, if it has one, into upload_root (ROOT/<id>/<kind>).  Any
     * thread. */
    void (*fetch)(void *ctx, const char *build_id, const char *upload_root);
    void *fetch_ctx;
} fl_srvsym_config;

/* Create the symbolizer (sets DEBUGINFOD_CACHE_PATH: call before starting
 * threads).  OUT: *out.  Returns 0, or -1 with err filled. */
int fl_srvsym_new(const fl_srvsym_config *cfg, fl_srvsym **out, char *err, size_t errlen);
void fl_srvsym_free(fl_srvsym *s); /* NULL is fine */

/* The debug file of build_id from the store shared with other servers
 * (fl_srvsym_config.fetch) into the upload root, when the store has it
 * and it was not asked for since the symbols version last moved.  Nothing
 * without a fetch. */
void fl_srvsym_fetch(fl_srvsym *s, const char *build_id);

/* Forget the open symcache of a build id (new debug file uploaded). */
void fl_srvsym_forget(fl_srvsym *s, const char *build_id);
/* Forget every open symcache (a debug file was ingested, maybe by another
 * process: the workers call it when the store's symbols version moves). */
void fl_srvsym_flush(void *s);
/* The same when the store's symbols version moved to `version`, once per
 * version: every worker sees the move before its next batch, and the
 * caches they share need forgetting once, not once a worker (which threw
 * away what the first one's batch had opened since).  The version last
 * flushed for, again, changes nothing. */
void fl_srvsym_symbols_changed(void *s, int64_t version);

/* Symbolize module-relative address rel of the module with build_id
 * (path: where the client loaded it, may be NULL).  Fills out[0..cap)
 * innermost first, strings copied.  Returns the number of frames, 0 when
 * the module has symbols but nothing covers the address, -1 when the
 * module has no symbols (none found, a broken file, no build id). */
int fl_srvsym_lookup(fl_srvsym *s, const char *build_id, const char *path, uint64_t rel,
                     fl_sym_frame *out, size_t cap);

/* What the open symcache of build_id lacks (the symbols_gap hook of
 * fl_workers_config; ctx: the fl_srvsym): 0 nothing, 1 DWARF (it holds
 * only an ELF symbol table: a debug file with DWARF would do), 2 its
 * DWARF's dwz file, whose build id goes into wait (cap bytes), 3 the .dwo
 * files of split units, found nowhere (not where the program names them,
 * not among the uploads): their keys (FL_DWO_KEY_PREFIX + DWO id) go into
 * wait, space-separated, and the dwz file's build id after them when it
 * is missing too, 4 everything but the exported functions' names (it was
 * built from a stripped file's .dynsym).  A symcache not open (evicted by another thread since
 * the lookup) answers 0: unknown counts as complete, so that a crash is
 * never re-processed for nothing. */
int fl_srvsym_gap(void *ctx, const char *build_id, char *wait, size_t cap);

/* Where the symbolizer's builds find dwz files and .dwo files (the
 * uploads, the store's shared files, debuginfod for dwz files), for
 * another builder of the same symcaches (the upload thread's prebuild):
 * fills *opts (ctx: s).  s NULL: opts zeroed. */
void fl_srvsym_build_opts(fl_srvsym *s, fl_symbuild_opts *opts);

/* The crash_begin hook of fl_workers_config (ctx: the fl_srvsym): the
 * calling thread's next crash may make debuginfod requests until
 * FL_SRVSYM_CRASH_MISSES of them found nothing or they took
 * FL_SRVSYM_CRASH_SECONDS (fl_symlocate_budget says why). */
#define FL_SRVSYM_CRASH_MISSES 8
#define FL_SRVSYM_CRASH_SECONDS 30
void fl_srvsym_crash_begin(void *ctx);

/* fl_tailcall_fn for fl_workers_config (ctx: the fl_srvsym): the frames a
 * tail call left off, from the call sites in the caller's symcache (open:
 * its frame was just looked up).  The call at ret names the function
 * called; when the callee is another function, the called one's tail
 * calls are followed (4 deep) to the callee, and what every way found
 * shares from the caller's side is the answer.  A call to another
 * module's function is followed in the callee's symcache (open too: the
 * frame above was looked up), the function found among its exports by
 * name, and only with call sites there.  0 when the symcache has no call
 * sites (built before they were kept, or from DWARF without them: gcc
 * and clang write them with -g at -O1 and above). */
size_t fl_srvsym_tailcalls(void *ctx, const char *module, const char *build_id, uint64_t ret,
                           const char *callee, const char *callee_build_id, uint64_t callee_rel,
                           uint64_t *sites, bool *exact, bool *in_callee, size_t cap);

/* fl_symbolize_fn for fl_workers_config (ctx: the fl_srvsym). */
int fl_srvsym_symbolize(void *ctx, const char *module, const char *build_id, uint64_t rel,
                        fl_sym_frame *out, size_t cap);

/* The server-side unwind hook (ctx: the fl_srvsym): run fl_remote_unwind
 * on a log with REGISTER and STACK lines and keep whichever stack
 * fl_remote_unwind_pick chooses.  Returns 1 with *pcs (caller frees) and
 * *n when the server's stack is better, 0 to keep the client's, -1 on
 * OOM. */
int fl_srvsym_unwind(void *ctx, const fl_crashlog *log, uint64_t **pcs, size_t *n);

/* The hook that unwinds every thread of a kept minidump (ctx: the
 * fl_srvsym; fl_minidump_unwind with the module files found as lookups
 * find them).  Returns 1 with *stacks (fl_minidump_stacks_free) and *n,
 * 0 when there is nothing (remote unwind off, a dump that does not read,
 * no memory). */
int fl_srvsym_unwind_dump(void *ctx, const void *dump, size_t len, fl_minidump_stack **stacks,
                          size_t *n);

/* Where the file of a build id is, through the places lookups use (the
 * store's shared files first): with `code`, the loadable file itself (an
 * executable or library with its code, as the calling-context decoder
 * reads it), else its debug information.  path: where the client loaded
 * it (may be NULL).  Fills out (cap bytes) and *source (static text:
 * "upload", "debuginfod", "object"...; may be NULL).  Returns 0, or -1
 * when no place has it. */
int fl_srvsym_find_file(fl_srvsym *s, const char *build_id, const char *path, bool code, char *out,
                        size_t cap, const char **source);

/* The formats a FAULTLINE_TRACE_APART build kept apart, for the workers'
 * trace_formats (fl_workers_config): the section of the debug file with
 * build_id, else of the program itself (unstripped), wherever
 * fl_srvsym_find_file finds them; kept for the next crashes (16 debug
 * files' worth) until a debug file arrives.  1 with *out
 * (fl_tracesec_free), 0 when neither has it, -1 when the only sections
 * found are damaged (counted in the stats). */
struct fl_tracesec;
int fl_srvsym_trace_formats(void *ctx, const char *build_id, const char *path,
                            struct fl_tracesec **out);

/* Moves whenever forget() or flush() is called: a debug file arrived, so
 * what was not found before may be found now. */
uint64_t fl_srvsym_generation(fl_srvsym *s);

typedef struct fl_srvsym_stats {
    uint64_t lookups, opened, built, evicted, located_missing;
    uint64_t broken; /* debug files found whose symcache could not be built */
    /* Formats kept apart (fl_srvsym_trace_formats): sections read from
     * debug files, and crashes that reused one already read. */
    uint64_t formats_read, formats_shared;
    uint64_t formats_damaged; /* lookups that found only a damaged section */
    uint64_t tail_frames;     /* frames put back by fl_srvsym_tailcalls */
    uint64_t fetched_dropped; /* debuginfod fetches left without a backfill */
    fl_symlocate_stats locate; /* the locator's (debuginfod requests...) */
} fl_srvsym_stats;
void fl_srvsym_get_stats(fl_srvsym *s, fl_srvsym_stats *out);

/* The symbols_fetched hook of fl_workers_config (ctx: the fl_srvsym): a
 * build id whose symcache was built from a debuginfod answer, or a dwz
 * file debuginfod gave for a symcache's build, since it was last asked,
 * into id (cap >= 129); false when there is none.  The crashes processed
 * without it (during an outage, or before debuginfod had it) are then
 * re-queued, as an upload's are. */
bool fl_srvsym_next_fetched(void *ctx, char *id, size_t cap);
/* Count a symcache built for this process outside lookups (the ingest's
 * background build of an upload's symcache) in stats.built, so that the
 * metric counts every build, not only the workers'.  NULL is fine. */
void fl_srvsym_count_built(fl_srvsym *s);

/* Debug files shared through a store (fl_store.fetch_symbol): the fetch
 * callback of fl_srvsym_config, with a store connection per calling
 * thread.  NULL when the store does not share files (or on OOM). */
struct fl_store;
typedef struct fl_symfetch fl_symfetch;
fl_symfetch *fl_symfetch_new(struct fl_store *store);
void fl_symfetch_free(fl_symfetch *f); /* after every thread that fetched is gone; NULL is fine */
void fl_symfetch_fetch(void *f, const char *build_id, const char *upload_root);

#endif
