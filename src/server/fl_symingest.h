/*
 * fl_symingest.h - debug files coming into the server: uploads (POST
 * /api/v1/symbols) and the watched directory DATA/symbols/incoming/.
 *
 * Layout under DATA/symbols/:
 *   tmp/        uploads being received, and a .dwp package's links on their
 *               way to processed/ (removed or moved when done; what a
 *               killed server left is removed by the watcher)
 *   incoming/   dropped here by operators or scripts; polled every second,
 *               a file is taken once its size and mtime held still for one
 *               poll -- but one that looks truncated is left alone until
 *               it held still for PARTIAL_WAIT_S (60 s), and an empty one
 *               (cp makes the file before it writes into it) for
 *               EMPTY_WAIT_S (60 s, symingest.c); then either fails
 *   processed/<buildid>/debuginfo    a debug-only file (.debug)
 *   processed/<buildid>/executable   a file with code (unstripped binary)
 *   processed/dwo-<dwoid>/dwo        a split DWARF object (.dwo file), by DWO id
 *   processed/<name>                 a symlink per ingested file of
 *                                    incoming/, to what it became
 *   failed/<name> and failed/<name>.error   files that could not be used
 *
 * A file is accepted when it is ELF with a GNU build id and has DWARF or
 * at least a symbol table, or is a .dwo file with one split unit (its
 * DWO id stands for the build id: FL_DWO_KEY_PREFIX in fl_store.h)
 * (cheap checks, fine on an HTTP thread); its
 * symcache is then built into DATA/symcache by the watcher thread in the
 * background (or by the first worker that needs it, whichever comes
 * first).  Every ingested file, good or bad, becomes a row of the store's symbols
 * table (GET /api/v1/symbols).  Then the backfill: the processed crashes
 * that lacked symbols for that build id are marked and re-queued in one
 * transaction, and the workers regroup them.
 *
 * Threads: fl_symingest_file may be called from any number of threads
 * (each with its own store connection); the watcher is one thread.
 */
#ifndef FL_SYMINGEST_H
#define FL_SYMINGEST_H

#include <stdbool.h>
#include <stddef.h>

#include "fl_queue.h"
#include "fl_srvsym.h"
#include "fl_store.h"

typedef struct fl_symingest fl_symingest;

typedef struct fl_symingest_config {
    const char *symbols_dir; /* DATA/symbols (borrowed, copied) */
    const char *cache_dir;   /* DATA/symcache */
    fl_store *store;
    fl_queue *queue;
    /* The backfill's tasks, for a queue outside the store: handed to
     * publish(publish_arg, ...) (the writer's publisher), so that an
     * upload's HTTP thread never waits on a broker that does not answer.
     * NULL: published by the thread that ingests the file. */
    fl_queue_publish_fn *publish;
    void *publish_arg;
    fl_srvsym *sym;                /* may be NULL: told to forget a build id, and counts
                                    * the symcaches built in the background */
    void (*notify)(void *arg);     /* wake the workers; may be NULL */
    void *notify_arg;
    size_t backfill_max;           /* crashes re-queued per build id; 0: 100000 */
    unsigned upload_idle_s;        /* an upload idle this long is cut (--timeout); 0: 30.
                                    * Sets how often the watcher removes the parts
                                    * of uploads a killed server left in tmp/ */
} fl_symingest_config;

/* Creates the directories.  OUT: *out.  0, or -1 with err filled. */
int fl_symingest_new(const fl_symingest_config *cfg, fl_symingest **out, char *err,
                     size_t errlen);
/* Stops the watcher (if started) and frees.  NULL is fine. */
void fl_symingest_free(fl_symingest *g);

/* DATA/symbols/tmp, for uploads (borrowed). */
const char *fl_symingest_tmpdir(const fl_symingest *g);
/* DATA/symbols/processed (borrowed). */
const char *fl_symingest_processed_dir(const fl_symingest *g);

/*
 * Ingest the file at path (consumed: moved into processed/, or into
 * failed/ when keep_failed, else removed).  name is what the uploader
 * called it (shown by GET /api/v1/symbols).  size is its size.  conn: the
 * caller's store connection.  OUT: build_id (cap >= 129) on success: the
 * build id, or for a .dwo file FL_DWO_KEY_PREFIX + its DWO id.
 * Returns 0; 1 when the file is unusable (err says why, the failure is
 * recorded); 2 when the store could not record it (a full disk, a locked
 * database: err has the store's reason; try again later -- with
 * keep_failed the file is back at path for that); -1 on an internal error
 * (err says why).
 */
int fl_symingest_file(fl_symingest *g, fl_store_conn *conn, const char *path, const char *name,
                      long long size, bool keep_failed, char *build_id, size_t cap, char *err,
                      size_t errlen);

/* Start polling DATA/symbols/incoming/ every second.  0 or -1. */
int fl_symingest_watch(fl_symingest *g);

#endif
