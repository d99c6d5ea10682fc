/*
 * retention.c - `serve --retention D`: crashes received more than D ago are
 * removed, in the background.
 *
 * A pass removes every processed (or failed) crash received before now - D
 * through the store's expire(), in transactions of RET_BATCH crashes so
 * that ingest, which shares the database's one writer with it, waits a few
 * milliseconds at most; groups keep their counts, per-day series and
 * breakdowns, which are small and are the history.  Passes run D/24 apart
 * (at least a second, at most an hour), so a crash outlives its retention
 * by that much at most.  Servers sharing a database may all run it: the
 * engines let concurrent passes take disjoint rows.
 *
 * Once a crash is gone, a resend of it would be stored and counted again:
 * the id is forgotten with the rest.  A reporter resends only a log whose
 * answer it never got, within its retries (hours, not days), so any D of a
 * day or more keeps exactly-once in practice; docs/operations.md says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl_serve.h"
#include "fl_srvutil.h"

#define RET_BATCH 500
#define RET_PAUSE_MS 2

struct fl_retention {
    fl_store *store;
    fl_metrics *m;
    FILE *log;
    int64_t keep_s;
    uint64_t every_ms;
    fl_ticker t;
};

/* One pass: 0, or -1 when the store failed (why into err).  Between two
 * batches a pause: SQLite's writers wait for each other by polling (every
 * 200 us, busy_wait in store_sqlite.c), and a pass that began its next
 * transaction the moment it committed one could keep ingest's writer out
 * of the gap -- not seen on a pass over 100,000 crashes (~2 s), but a
 * first pass over millions lasts minutes. */
static int pass(fl_retention *r, fl_store_conn *c, int64_t before, size_t *removed, char *err,
                size_t errlen)
{
    *removed = 0;
    for (;;) {
        size_t n = 0;
        if (r->store->begin(c) || r->store->expire(c, before, RET_BATCH, &n) ||
            r->store->commit(c)) {
            snprintf(err, errlen, "%s", r->store->error(c));
            r->store->rollback(c);
            return -1;
        }
        *removed += n;
        FL_M_ADD(r->m->deleted_retention, n);
        if (n < RET_BATCH || !fl_ticker_wait(&r->t, RET_PAUSE_MS))
            return 0;
    }
}

static void *retention_main(void *arg)
{
    fl_retention *r = arg;
    fl_store_conn *c = NULL;
    bool failing = false;
    /* The first pass soon after the start (a server stopped for a while
     * has a backlog of old crashes), then one every every_ms. */
    uint64_t wait_ms = r->every_ms < 5000 ? r->every_ms : 5000;
    while (fl_ticker_wait(&r->t, wait_ms)) {
        wait_ms = r->every_ms;
        char err[256] = "cannot connect to the store";
        size_t removed = 0;
        int rc = -1;
        int64_t before = fl_now() - r->keep_s;
        if (c || (c = r->store->connect(r->store)))
            rc = pass(r, c, before, &removed, err, sizeof err);
        if (rc && !failing && r->log)
            fl_log(r->log, "faultline serve: retention: %s (trying again in %llu s)", err,
                   (unsigned long long)(r->every_ms / 1000));
        if (!rc && failing && r->log)
            fl_log(r->log, "faultline serve: retention: working again");
        failing = rc != 0;
        if (removed && r->log) {
            char t[32];
            fl_iso_time(before, t);
            fl_log(r->log, "faultline serve: retention: removed %zu crash%s received before %s",
                   removed, removed == 1 ? "" : "es", t);
        }
    }
    if (c)
        r->store->disconnect(c);
    return NULL;
}

fl_retention *fl_retention_start(fl_store *s, fl_metrics *m, int64_t keep_s, FILE *log, char *err,
                                 size_t errlen)
{
    if (!s->expire) {
        snprintf(err, errlen, "the %s store cannot remove crashes", s->engine);
        return NULL;
    }
    fl_retention *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->store = s;
    r->m = m;
    r->log = log;
    r->keep_s = keep_s;
    int64_t every = keep_s / 24;
    r->every_ms = (uint64_t)(every < 1 ? 1 : every > 3600 ? 3600 : every) * 1000u;
    int e = fl_ticker_start(&r->t, retention_main, r, "fl-retention");
    if (e) {
        snprintf(err, errlen, "cannot start the retention thread: %s", strerror(e));
        free(r);
        return NULL;
    }
    return r;
}

void fl_retention_stop(fl_retention *r)
{
    if (!r)
        return;
    fl_ticker_stop(&r->t);
    free(r);
}
