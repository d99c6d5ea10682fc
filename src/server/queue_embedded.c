/*
 * queue_embedded.c - the durable task queue inside the SQLite store.
 *
 * A task is a row of `tasks` holding up to FL_QUEUE_BATCH_MAX crash ids
 * (separated by '\n'; n says how many): one row per ingest batch instead of
 * one per crash saves the ingest transaction most of its queue writes.
 * Claiming sets lease_until in the future for whole rows; acking a row's
 * last entry deletes it.  Because the rows live in the store's database,
 * enqueue() runs in the ingest transaction (a report is never stored
 * without its task) and ack() in the worker's apply() transaction (the
 * count update and the task completion commit together).
 *
 * Leases are seconds of CLOCK_MONOTONIC, not of the wall clock.  Every
 * process using this queue runs on the machine that holds the database
 * (SQLite's WAL needs memory shared between them), so they share that
 * clock, and nothing steps it.  Wall-clock leases did not survive a step:
 * forward by hours (NTP after a suspend or a migration), every lease held
 * expired at once and another worker took tasks still being processed;
 * back by hours, the tasks of a worker that died, or that gave its batch up
 * (a full disk), stayed leased for those hours too.  A monotonic clock
 * starts again at each boot, so the database notes the boot its leases
 * were taken in (queue_clock), and a process's first claim in another boot
 * forgets them all: their workers ended with that boot.  (Nor does the
 * clock count a suspend, which froze the workers as well.)
 */
#include "fl_queue.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "fl_srvutil.h"

static const char SQL_ENQUEUE[] = "INSERT INTO tasks(crash_id) VALUES(?1)";
static const char SQL_ENQUEUE_N[] = "INSERT INTO tasks(crash_id, n) VALUES(?1, ?2)";
static const char SQL_ACK[] = "DELETE FROM tasks WHERE id=?1";
static const char SQL_RELEASE[] = "UPDATE tasks SET lease_until=0 WHERE lease_until>?1";

/* --lease's largest value: a lease further ahead than this was not taken
 * on this clock (an older server's wall-clock lease). */
#define LEASE_MAX_S 86400

typedef struct e_queue {
    fl_queue q;
    atomic_bool clock_checked; /* check_clock() done in this process */
} e_queue;

static int64_t lease_now(void)
{
    return (int64_t)(fl_mono_ns() / 1000000000u);
}

/* This boot's id ("" when it cannot be read). */
static void boot_id(char out[64])
{
    out[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f)
        return;
    if (!fgets(out, 64, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

/* Before a process's first claim: leases taken in another boot, or on
 * another clock, are forgotten (see the top of the file).  Own
 * transaction.  0 or -1. */
static int check_clock(fl_store_conn *c, sqlite3 *db)
{
    char boot[64];
    boot_id(boot);
    if (c->store->begin(c))
        return -1;
    sqlite3_stmt *s = NULL;
    bool same = false;
    if (sqlite3_prepare_v2(db, "SELECT boot FROM queue_clock WHERE id=1", -1, &s, NULL))
        goto fail;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *was = (const char *)sqlite3_column_text(s, 0);
        same = boot[0] && was && !strcmp(was, boot);
    }
    sqlite3_finalize(s);
    s = NULL;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        goto fail;
    /* Another boot (or one that cannot be told): every lease; this boot:
     * only those no lease of this clock reaches. */
    if (sqlite3_prepare_v2(db, "UPDATE tasks SET lease_until=0 WHERE lease_until>?1", -1, &s, NULL))
        goto fail;
    sqlite3_bind_int64(s, 1, same ? lease_now() + LEASE_MAX_S : 0);
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    s = NULL;
    if (rc != SQLITE_DONE)
        goto fail;
    if (!same) {
        if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO queue_clock(id, boot) VALUES(1, ?1)", -1,
                               &s, NULL))
            goto fail;
        sqlite3_bind_text(s, 1, boot, -1, SQLITE_STATIC);
        rc = sqlite3_step(s);
        sqlite3_finalize(s);
        if (rc != SQLITE_DONE)
            goto fail;
    }
    if (c->store->commit(c))
        goto fail;
    return 0;
fail:
    c->store->rollback(c);
    return -1;
}

/* Run one of the statements above (cached by the connection). */
static int run(fl_store_conn *c, const char *sql, const char *text, int64_t i1)
{
    sqlite3_stmt *s = fl_store_sqlite_stmt(c, sql);
    if (!s)
        return -1;
    if (text)
        sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(s, 1, i1);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int e_enqueue(fl_queue *q, fl_store_conn *c, const char *crash_id)
{
    return run(c, SQL_ENQUEUE, crash_id, 0);
}

static int e_enqueue_many(fl_queue *q, fl_store_conn *c, const char *const *ids, size_t n)
{
    (void)q;
    sqlite3_stmt *s = fl_store_sqlite_stmt(c, SQL_ENQUEUE_N);
    if (!s)
        return -1;
    char text[FL_QUEUE_BATCH_MAX * FL_CRASH_ID_MAX];
    for (size_t i = 0; i < n;) {
        size_t k = 0, len = 0;
        for (; k < FL_QUEUE_BATCH_MAX && i + k < n; k++) {
            size_t l = strlen(ids[i + k]);
            if (l == 0 || l >= FL_CRASH_ID_MAX || memchr(ids[i + k], '\n', l))
                return -1; /* cannot happen: ids are checked at ingest */
            if (k)
                text[len++] = '\n';
            memcpy(text + len, ids[i + k], l);
            len += l;
        }
        sqlite3_bind_text(s, 1, text, (int)len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)k);
        int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc != SQLITE_DONE)
            return -1;
        i += k;
    }
    return 0;
}

static int e_ack(fl_queue *q, fl_store_conn *c, const fl_task *t)
{
    (void)q;
    if (!t->last)
        return 0; /* the row goes with its last entry */
    return run(c, SQL_ACK, NULL, t->id);
}

static int e_claim(fl_queue *q, fl_store_conn *c, unsigned lease_s, size_t max, fl_task *out,
                   size_t *n)
{
    e_queue *eq = (e_queue *)q;
    sqlite3 *db = fl_store_sqlite_db(c);
    *n = 0;
    if (!db)
        return -1;
    if (!atomic_load(&eq->clock_checked)) {
        if (check_clock(c, db))
            return -1;
        atomic_store(&eq->clock_checked, true);
    }
    int64_t now = lease_now();
    sqlite3_stmt *s = NULL;
    /* Whole rows only, as many as fit in max entries: the running sum of
     * n over the first rows in claim order (at most max rows can fit). */
    if (sqlite3_prepare_v2(db,
                           "UPDATE tasks SET lease_until=?1, attempts=attempts+1 WHERE id IN "
                           "(SELECT id FROM (SELECT id, sum(n) OVER (ORDER BY lease_until, id "
                           "ROWS UNBOUNDED PRECEDING) AS cum FROM tasks WHERE lease_until<=?2 "
                           "ORDER BY lease_until, id LIMIT ?3) WHERE cum<=?3) "
                           "RETURNING id, crash_id, n, attempts",
                           -1, &s, NULL))
        return -1;
    sqlite3_bind_int64(s, 1, now + lease_s);
    sqlite3_bind_int64(s, 2, now);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)max);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        fl_queue_split(sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1),
                       (unsigned)sqlite3_column_int(s, 3), max, out, n);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        *n = 0; /* the UPDATE rolled back: nothing is leased */
        return -1;
    }
    return 0;
}

static int64_t e_depth(fl_queue *q, fl_store_conn *c)
{
    sqlite3 *db = fl_store_sqlite_db(c);
    sqlite3_stmt *s = NULL;
    if (!db || sqlite3_prepare_v2(db, "SELECT total(n) FROM tasks", -1, &s, NULL))
        return -1;
    int64_t d = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return d;
}

static int e_release_all(fl_queue *q, fl_store_conn *c)
{
    return run(c, SQL_RELEASE, NULL, 0);
}

static void e_close(fl_queue *q)
{
    free(q);
}

fl_queue *fl_queue_embedded_new(void)
{
    e_queue *eq = calloc(1, sizeof *eq);
    if (!eq)
        return NULL;
    fl_queue *q = &eq->q;
    q->engine = "embedded";
    q->in_store_txn = true;
    q->enqueue = e_enqueue;
    q->enqueue_many = e_enqueue_many;
    q->claim = e_claim;
    q->ack = e_ack;
    q->depth = e_depth;
    q->release_all = e_release_all;
    q->close = e_close;
    q->data = q;
    return q;
}
