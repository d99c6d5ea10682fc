/*
 * fl_srcctx.h - the source lines around a frame, for the crash page
 * (GET /api/v1/crashes/ID/source?thread=T&frame=F).
 *
 * A symbolicated frame names a file (the DWARF's path, its compilation
 * directory joined) and a line.  The file itself comes from debuginfod
 * (GET /buildid/BUILDID/source/PATH, libdebuginfod's
 * debuginfod_find_source), for the frame's module's build id: never from
 * this machine's file system, since the path and build id come from a
 * crash log, i.e. from whoever reaches the ingest port.
 *
 * A file fetched is copied into DIR/source-cache/ (at most max_file
 * bytes; a larger one is refused), and libdebuginfod's own copy in its
 * cache is removed, so that the bytes are kept once, under a bound: the
 * cache holds at most cache_bytes, the files used least recently going
 * first (a hit touches the file's mtime).  A cached file is named by a
 * hash of (build id, path) and starts with both on a line of their own,
 * checked on every hit, so a collision is a miss, never another file.
 *
 * Threads: every function may be called from any thread.  fl_srcctx_get
 * with fetch=true may take up to DEBUGINFOD_TIMEOUT per server: call it
 * off the HTTP threads.
 */
#ifndef FL_SRCCTX_H
#define FL_SRCCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fl_srcctx fl_srcctx;

typedef struct fl_srcctx_config {
    const char *cache_dir; /* DATA/source-cache (made when missing; borrowed, copied) */
    uint64_t cache_bytes;  /* bound of the cache on disk; 0: FL_SRCCTX_CACHE_BYTES */
    size_t max_file;       /* largest source file fetched; 0: FL_SRCCTX_MAX_FILE */
} fl_srcctx_config;

#define FL_SRCCTX_CACHE_BYTES (64u << 20)
#define FL_SRCCTX_MAX_FILE (4u << 20)
#define FL_SRCCTX_MAX_LINE 1024  /* bytes of a line shown; the rest is cut */
#define FL_SRCCTX_MAX_CONTEXT 50 /* lines before and after, at most */

/* OUT: *out.  Returns 0, or -1 with err filled (the directory cannot be
 * made or read). */
int fl_srcctx_new(const fl_srcctx_config *cfg, fl_srcctx **out, char *err, size_t errlen);
void fl_srcctx_free(fl_srcctx *s); /* NULL is fine */

enum {
    FL_SRCCTX_OK = 0,    /* *json is the answer's object (caller decrefs) */
    FL_SRCCTX_NONE = 1,  /* no source: why says why (a 404) */
    FL_SRCCTX_FETCH = 2, /* not cached and fetch was false: ask again with fetch */
    FL_SRCCTX_ERROR = -1 /* out of memory, the cache unwritable: why says */
};

/* Lines line-context .. line+context of the file `path` (absolute) of the
 * module with build_id (hex), from the cache, else, with fetch, from
 * debuginfod.  On FL_SRCCTX_OK, *json is
 *   {"path":PATH,"line":LINE,"first":FIRST,"lines":["…",…],
 *    "source":"cache"|"debuginfod"[,"lines_cut":N]}
 * lines[i] being line FIRST+i, without its end of line, as JSON text (a
 * byte that is not UTF-8: U+FFFD), cut at FL_SRCCTX_MAX_LINE bytes
 * (lines_cut counts the lines cut). */
struct json_t;
int fl_srcctx_get(fl_srcctx *s, const char *build_id, const char *path, unsigned line,
                  unsigned context, bool fetch, struct json_t **json, char *why, size_t whylen);

#endif
