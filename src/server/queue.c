/*
 * queue.c - what the callers of every queue engine share: publishing the
 * tasks of a committed transaction to a queue outside the store, and the
 * sweep that publishes what such a publish missed.
 *
 * With the embedded queue a task is written in the transaction that stores
 * its report, so neither is ever without the other.  A broker cannot take
 * part in the store's transaction: the report is committed first (its 200
 * depends on that), its task published after.  A server stopped in
 * between, or a broker that is away, would leave a stored report that no
 * task names -- never processed, never counted.  So the store remembers
 * which reports' tasks the broker confirmed (published()), and
 * fl_queue_sweep() publishes the others once they have waited a while.
 * Publishing one twice is harmless: apply() counts a crash id once.
 */
#include "fl_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fl_queue_publish(fl_queue *q, fl_store_conn *c, const char *const *ids, size_t n)
{
    if (q->in_store_txn || n == 0)
        return 0;
    if (q->enqueue_many(q, c, ids, n))
        return -1;
    /* Losing this write costs a duplicate task at most. */
    if (c->store->published)
        c->store->published(c, ids, n);
    return 0;
}

long fl_queue_sweep(fl_queue *q, fl_store_conn *c, int64_t min_age_s, size_t *stale)
{
    fl_store *s = c->store;
    *stale = 0;
    if (q->in_store_txn || !s->unpublished)
        return 0;
    /* A broker that lost its queue (rebuilt, its disk gone, the queue
     * deleted) holds none of the tasks it confirmed, and nothing would
     * publish them again: their reports would wait for ever.  When it
     * holds no message at all, reports it took FL_QUEUE_STALE_FACTOR times
     * min_age_s ago are published again.  One still in a worker's hands
     * for that long (the messages a worker holds are not counted) is then
     * delivered twice, and counted once. */
    /* The depth is also what tells a caller with nothing to publish
     * whether the broker answers: it fails (-2) when the broker did not
     * and nothing was published since. */
    int64_t depth = 0;
    if (s->unpublish_stale && q->depth && min_age_s > 0) {
        depth = q->depth(q, NULL);
        if (depth == 0 && s->unpublish_stale(c, min_age_s * FL_QUEUE_STALE_FACTOR, stale) != 0)
            *stale = 0;
    }
    long total = 0;
    for (;;) {
        char **ids = NULL;
        size_t n = 0;
        if (s->unpublished(c, min_age_s, 1000, &ids, &n))
            return -1;
        int rc = fl_queue_publish(q, c, (const char *const *)ids, n);
        for (size_t i = 0; i < n; i++)
            free(ids[i]);
        free(ids);
        if (rc)
            return -2;
        total += (long)n;
        if (n < 1000)
            return depth < 0 && total == 0 ? -2 : total;
    }
}

bool fl_queue_split(int64_t tid, const char *ids, unsigned attempts, size_t max, fl_task *out,
                    size_t *n)
{
    size_t first = *n;
    const char *p = ids ? ids : "";
    do {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (*n == max) {
            *n = first;
            return false;
        }
        fl_task *t = &out[(*n)++];
        t->id = tid;
        t->last = false;
        t->attempts = attempts;
        snprintf(t->crash_id, sizeof t->crash_id, "%.*s",
                 (int)(l < FL_CRASH_ID_MAX ? l : FL_CRASH_ID_MAX - 1), p);
        p = e ? e + 1 : NULL;
    } while (p);
    out[*n - 1].last = true;
    return true;
}

int fl_queue_backfill(fl_queue *q, fl_store *s, fl_store_conn *conn, const fl_symbol_rec *r,
                      const char *key, size_t max, fl_queue_publish_fn *publish, void *publish_arg,
                      size_t *nq, char *err, size_t errlen)
{
    char **ids = NULL;
    size_t n = 0;
    *nq = 0;
    if (s->begin(conn)) {
        snprintf(err, errlen, "%s", s->error(conn));
        return -1;
    }
    if ((r && s->add_symbol(conn, r)) || s->symbols_arrived(conn, key, max, &ids, &n))
        goto fail;
    if (q && q->in_store_txn)
        for (size_t i = 0; i < n; i++)
            if (q->enqueue(q, conn, ids[i]))
                goto fail;
    if (s->commit(conn))
        goto fail;
    /* Either way a task that does not reach the queue is the sweep's: the
     * crashes were marked unpublished with the commit. */
    if (q && !q->in_store_txn && publish)
        publish(publish_arg, (const char *const *)ids, n);
    else if (q)
        fl_queue_publish(q, conn, (const char *const *)ids, n);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    *nq = n;
    return 0;
fail:
    snprintf(err, errlen, "%s", s->error(conn)); /* before the rollback clears it */
    s->rollback(conn);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    return -1;
}
