/*
 * fl_symlocate.h - find the debug information of a module by GNU build id.
 *
 * The server's worker asks "where is the DWARF (or at least a symbol
 * table) for build id B, which the crashing client had loaded from path P?"
 * and gets back a local file path plus the tier it came from.  The places
 * are tried in a fixed order, cheapest and most trusted first:
 *
 *   1. uploaded   (application tier) each upload root, as
 *                 ROOT/<id>.debug, ROOT/<id[0:2]>/<id[2:]>.debug,
 *                 ROOT/.build-id/<id[0:2]>/<id[2:]>.debug, ROOT/<id>/debuginfo,
 *                 ROOT/<id>/executable (the first that exists and fits)
 *   2. debug dir  (system tier) each debug root, default /usr/lib/debug,
 *                 as ROOT/.build-id/<id[0:2]>/<id[2:]>.debug (libc6-dbg etc.)
 *   3. debuginfod (system tier) libdebuginfod, servers from DEBUGINFOD_URLS
 *                 (or the configured list); misses are remembered for
 *                 miss_ttl_s seconds so a missing build id is not asked for
 *                 on every crash
 *   4. object     (object tier) the file at the object's path, when it
 *                 exists here, has the same build id and carries DWARF or a
 *                 .symtab (same-machine setups and tests).  An object with
 *                 full DWARF is taken before step 3 (it is as good as a
 *                 debug file, and local); one with only a .symtab after.
 *   5. exports    (object or system tier) a stripped library's own
 *                 exported symbols (.dynsym): the file at the object's
 *                 path, else debuginfod's /buildid/ID/executable.  Names
 *                 the exported functions only, within their sizes; the
 *                 crash still waits for a debug file.
 *
 * Every local candidate is opened and its build id compared before it is
 * returned, so a stale or misplaced file is never used.
 *
 * libdebuginfod takes its server list, cache directory and timeout from the
 * environment only (elfutils 0.188 has no per-client setters), so
 * fl_symlocate_new() sets DEBUGINFOD_URLS / DEBUGINFOD_CACHE_PATH /
 * DEBUGINFOD_TIMEOUT when the config names them, and DEBUGINFOD_RETRY_LIMIT
 * to 0 unless the environment sets it: libdebuginfod's default of 2
 * retries made one query of a server that does not answer cost three
 * timeouts, and the outage pause below is the better retry.  Call it
 * before starting threads that read the environment.
 *
 * debuginfod failures come in two kinds.  The servers said no (404): the
 * build id is remembered as missing (miss_ttl_s).  No server answered
 * (a timeout, a refused connection, an unknown host) or a server answered
 * with an error of its own (HTTP 5xx, or 429: busy): that is an outage,
 * not a fact about the build id, so no debuginfod request is made for
 * outage_s seconds, whatever the build id, and the log hook says so once
 * when it begins and once when a server answers again.  An answer that is
 * not the build id's file (another build id, truncated, not ELF) is
 * refused and removed from libdebuginfod's cache: left there, it was
 * served from the cache to every later query, and the build id could
 * never be found.
 *
 * Threads: one fl_symlocate may be used by any number of threads at once
 * (the miss cache is behind a mutex; each debuginfod query uses its own
 * client handle).  Nothing here is async-signal-safe.
 */
#ifndef FL_SYMLOCATE_H
#define FL_SYMLOCATE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes: 0 is success, failures are negative. */
#define FL_SYMLOC_ERRORS(X)                                                                        \
    X(FL_SYMLOC_OK, 0, "success")                                                                  \
    X(FL_SYMLOC_ENOTFOUND, -1, "no debug information found for this build id")                     \
    X(FL_SYMLOC_EINVAL, -2, "invalid argument (build id must be 2..128 hex digits)")               \
    X(FL_SYMLOC_ENOMEM, -3, "out of memory")                                                       \
    X(FL_SYMLOC_ETOOLONG, -4, "a path exceeds PATH_MAX")

enum {
#define FL_SYMLOC_ENUM_(name, value, text) name = value,
    FL_SYMLOC_ERRORS(FL_SYMLOC_ENUM_)
#undef FL_SYMLOC_ENUM_
};

/* Static text for an error code (never NULL). */
const char *fl_symlocate_strerror(int code);

/* Where a file came from.  The tier is what the server shows and what
 * decides which processor may symbolicate a frame: application = the
 * developer uploaded it; system = the distribution's debug packages or a
 * debuginfod server; object = the loaded file itself. */
typedef enum fl_symloc_tier {
    FL_SYMLOC_TIER_NONE = 0,
    FL_SYMLOC_TIER_APPLICATION,
    FL_SYMLOC_TIER_SYSTEM,
    FL_SYMLOC_TIER_OBJECT
} fl_symloc_tier;

typedef enum fl_symloc_source {
    FL_SYMLOC_SRC_NONE = 0,
    FL_SYMLOC_SRC_UPLOAD,
    FL_SYMLOC_SRC_DEBUG_DIR,
    FL_SYMLOC_SRC_DEBUGINFOD,
    FL_SYMLOC_SRC_OBJECT
} fl_symloc_source;

/* "application", "system", "object", "none" / "upload", "debug-dir", ... */
const char *fl_symlocate_tier_name(fl_symloc_tier t);
const char *fl_symlocate_source_name(fl_symloc_source s);

#define FL_SYMLOC_MAX_ROOTS 16

typedef struct fl_symlocate_config {
    /* Directories of uploaded debug files (borrowed; copied by _new). */
    const char *upload_roots[FL_SYMLOC_MAX_ROOTS];
    size_t nupload_roots;
    /* System debug roots; none given means "/usr/lib/debug". */
    const char *debug_roots[FL_SYMLOC_MAX_ROOTS];
    size_t ndebug_roots;
    /* 1: ask debuginfod (when a server list is known). */
    int use_debuginfod;
    /* NULL: keep the environment's DEBUGINFOD_URLS / cache path. */
    const char *debuginfod_urls;
    const char *debuginfod_cache;
    /* Seconds; 0 means the default (10 s connect/transfer timeout). */
    unsigned debuginfod_timeout_s;
    /* How long a debuginfod miss is remembered; 0 means 600 s. */
    unsigned miss_ttl_s;
    /* How long no request is made after no server answered; 0: 60 s. */
    unsigned outage_s;
    /* Told one line (no newline) when an outage begins or ends and when an
     * answer is refused; called from the looking-up thread, not under a
     * lock.  NULL: nothing is told. */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
    /* 1: accept the object's own file (step 4). */
    int use_object_path;
} fl_symlocate_config;

/* A config with the defaults: /usr/lib/debug, debuginfod on, object on. */
void fl_symlocate_config_init(fl_symlocate_config *cfg);

typedef struct fl_symlocate fl_symlocate;

/* Create a locator.  cfg is copied (its strings too).  Sets the
 * DEBUGINFOD_* variables named above.  OUT: *out (free with
 * fl_symlocate_free).  Returns 0 or a negative FL_SYMLOC_ code. */
int fl_symlocate_new(const fl_symlocate_config *cfg, fl_symlocate **out);
void fl_symlocate_free(fl_symlocate *loc); /* NULL is harmless */

typedef struct fl_symlocate_result {
    char path[PATH_MAX];   /* the file to read symbols/DWARF from */
    fl_symloc_tier tier;
    fl_symloc_source source;
    int has_dwarf;         /* 1: the file has .debug_info */
    int exports_only;      /* 1: no DWARF, no .symtab: names from .dynsym */
} fl_symlocate_result;

/*
 * Find debug information for build_id_hex (lowercase or uppercase hex, no
 * separators).  object_path (may be NULL) is the path the client loaded the
 * module from.  OUT: *res.  Returns 0, FL_SYMLOC_ENOTFOUND, or another
 * negative code; err (errlen may be 0) says which places were tried.
 * Thread-safe.
 */
int fl_symlocate_find(fl_symlocate *loc, const char *build_id_hex, const char *object_path,
                      fl_symlocate_result *res, char *err, size_t errlen);

/*
 * Find the module's loadable file itself (code and .eh_frame with their
 * bytes, not a debug-only file): what the remote unwinder reads CFI and
 * read-only memory from.  Order: the file at object_path when its build id
 * matches; an upload whose file has code (an unstripped upload is both);
 * debuginfod's /buildid/ID/executable (same miss cache, separate entries).
 * Same contract as fl_symlocate_find.
 */
int fl_symlocate_find_executable(fl_symlocate *loc, const char *build_id_hex,
                                 const char *object_path, fl_symlocate_result *res, char *err,
                                 size_t errlen);

/* Counters, for /metrics and tests. */
typedef struct fl_symlocate_stats {
    uint64_t lookups;
    uint64_t found_upload, found_debug_dir, found_debuginfod, found_object;
    uint64_t found_exports;       /* a file with only a .dynsym (step 5) */
    uint64_t executables_found;   /* by fl_symlocate_find_executable */
    uint64_t debuginfod_queries;  /* real requests made through libdebuginfod */
    uint64_t debuginfod_misses;
    uint64_t miss_cache_hits;     /* requests avoided by the miss cache */
    uint64_t budget_skips;        /* requests not made: the thread's budget
                                   * (fl_symlocate_budget) was spent */
    uint64_t debuginfod_errors;   /* requests no server answered (timeout,
                                   * refused connection...), part of misses */
    uint64_t debuginfod_refused;  /* answers that were not the build id's file,
                                   * part of misses */
    uint64_t debuginfod_server_errors; /* answers of HTTP 5xx or 429: an outage,
                                        * part of misses */
    uint64_t outage_skips;        /* requests not made during an outage */
} fl_symlocate_stats;

/* Starts a budget of debuginfod requests for the calling thread, until the
 * next call: once `misses` requests have found nothing (or failed) or
 * `seconds` have gone by in requests, the thread makes no more and its
 * lookups go on without debuginfod.  A server processes crash logs from
 * whoever reaches its ingest port: without a budget, one log naming a
 * thousand build ids no debuginfod server has made a thousand requests
 * (each up to the timeout) and kept a worker for minutes.  Found files do
 * not count: a genuine crash's modules are mostly there.  A skipped
 * request is not remembered as a miss.  A 0 is no limit of that kind;
 * (0, 0): no budget (the default). */
void fl_symlocate_budget(unsigned misses, unsigned seconds);

void fl_symlocate_get_stats(fl_symlocate *loc, fl_symlocate_stats *out);

/* Reads the GNU build id of an ELF file as lowercase hex into hex (cap >=
 * 2*FL_SYM_BUILD_ID_MAX+1).  OUT: *has_dwarf, *has_symtab (either may be
 * NULL).  Returns 0, or -1 when the file is not ELF or has no build id. */
int fl_symlocate_read_build_id(const char *path, char *hex, size_t cap, int *has_dwarf,
                               int *has_symtab);

#endif
