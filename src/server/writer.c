/*
 * writer.c - group commit: one thread owns ingest writes.
 *
 * The HTTP loops hand over lists of requests and go on (no thread blocks
 * on a request, see http.c).  The writer takes everything queued,
 * runs one transaction -- insert each raw crash, enqueue a task for each new
 * one -- commits (one fsync for the whole batch) and only then calls each
 * request's done(), after which its loop answers 200.  The store gets the
 * whole batch at once and compresses its raw logs as one frame (those of a
 * loop's pass large enough were compressed by the loop: see http.c and
 * store_sqlite.c).  Everything here is on the
 * serial path between two fsyncs, so it does as little as it can.  While
 * one fsync is in progress the next batch fills up, so the batch size
 * follows the load by itself.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fl_serve.h"
#include "fl_srvutil.h"

struct fl_writer {
    fl_store *store;
    fl_queue *queue;
    fl_metrics *m;
    size_t max_pending;
    void (*notify)(void *);
    void *notify_arg;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    fl_wreq *head, *tail;
    size_t pending; /* reports queued */
    bool stopping, joined;
    pthread_t th;
    fl_store_conn *conn;
    fl_ingest_item **batch; /* the items of the list being committed */
    const char **ids;       /* the new ones' refs, for their tasks */
    size_t batch_cap;
    unsigned republish_after; /* seconds; see sweep() */

    /* The publisher (a queue outside the store): the tasks of committed
     * reports, published off the writer's thread, and the sweep (see
     * publisher_main).  Under mu. */
    bool pub_on, pub_stop;
    pthread_t pub_th;
    pthread_cond_t pub_cv;   /* CLOCK_MONOTONIC */
    fl_store_conn *pub_conn; /* the sweep's; NULL: the store keeps no mark */
    char **topub, **pubdone; /* to publish; published, to record */
    size_t ntopub, topub_cap, npubdone, pubdone_cap;
    /* Whether the queue took the publisher's last call (a publish or a
     * sweep), for /healthz: the answers do not wait for it, so nothing
     * else shows a broker away.  Under mu. */
    bool q_failing;
    char q_why[320];
    int64_t q_since; /* wall time of the first failure */
};

/* Tasks waiting for the publisher at most (~50 bytes each): beyond, a
 * stuck broker leaves them to the sweep rather than to memory. */
#define PUBLISH_MAX 1000000

/* Appends n copies of ids to *arr (count *n, capacity *cap); under mu.
 * A copy that cannot be made is left out: the sweep publishes it. */
static void push_ids(char ***arr, size_t *n, size_t *cap, const char *const *ids, size_t k)
{
    if (*n + k > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *n + k)
            nc *= 2;
        char **na = realloc(*arr, nc * sizeof *na);
        if (!na)
            return;
        *arr = na;
        *cap = nc;
    }
    for (size_t i = 0; i < k; i++)
        if (((*arr)[*n] = strdup(ids[i])))
            (*n)++;
}

static void free_ids(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* The queue's state as the publisher found it (fl_writer_queue_state). */
static void queue_failed(fl_writer *w, const char *why)
{
    pthread_mutex_lock(&w->mu);
    if (!w->q_failing)
        w->q_since = fl_now();
    w->q_failing = true;
    snprintf(w->q_why, sizeof w->q_why, "%s", why && *why ? why : "unknown error");
    pthread_mutex_unlock(&w->mu);
}

static void queue_ok(fl_writer *w)
{
    pthread_mutex_lock(&w->mu);
    w->q_failing = false;
    pthread_mutex_unlock(&w->mu);
}

void fl_writer_queue_failed(fl_writer *w, const char *why)
{
    queue_failed(w, why);
}

bool fl_writer_queue_state(fl_writer *w, char *why, size_t len, int64_t *since)
{
    if (!w)
        return false;
    pthread_mutex_lock(&w->mu);
    bool failing = w->q_failing;
    if (failing) {
        snprintf(why, len, "%s", w->q_why);
        *since = w->q_since;
    }
    pthread_mutex_unlock(&w->mu);
    return failing;
}

/* The publisher's log: a broker away makes every commit's publish fail,
 * and ingest goes on answering 200, so nothing else would tell the
 * operator of an API server.  The first failure of an outage is said at
 * once with what happens to those tasks, then its count every
 * PUBLISH_LOG_S, and its end.  Publisher thread only. */
#define PUBLISH_LOG_S 10

typedef struct publog {
    bool failing;
    uint64_t failed, unlogged; /* tasks, this outage / since the last line */
    uint64_t since_ns, logged_ns;
} publog;

static void publog_fail(fl_writer *w, publog *pl, size_t n)
{
    FILE *log = w->m->health.log;
    const char *why = w->queue->error ? w->queue->error(w->queue) : NULL;
    uint64_t now = fl_mono_ns();
    queue_failed(w, why);
    pl->failed += n;
    pl->unlogged += n;
    if (!log)
        return;
    if (!pl->failing) {
        pl->failing = true;
        pl->since_ns = now;
        fl_log(log,
               "faultline serve: queue: cannot publish tasks: %s; their reports are stored "
               "(answered 200) and published again by the sweep once they have waited %u s "
               "(--republish-after) and the broker takes them",
               why ? why : "unknown error", w->republish_after);
    } else if (now - pl->logged_ns >= PUBLISH_LOG_S * 1000000000ull) {
        fl_log(log, "faultline serve: queue: %llu more tasks not published in %.0f s (%s)",
               (unsigned long long)pl->unlogged, (now - pl->logged_ns) / 1e9,
               why ? why : "unknown error");
    } else {
        return;
    }
    pl->unlogged = 0;
    pl->logged_ns = now;
}

static void publog_ok(fl_writer *w, publog *pl)
{
    FILE *log = w->m->health.log;
    queue_ok(w);
    if (!pl->failing)
        return;
    if (log) {
        fl_log(log,
               "faultline serve: queue: publishing works again (%llu tasks not published over "
               "%.0f s: the sweep publishes them)",
               (unsigned long long)pl->failed, (fl_mono_ns() - pl->since_ns) / 1e9);
    }
    memset(pl, 0, sizeof *pl);
}

/* What the publisher got confirmed, recorded in the store on conn: the
 * writer's, in the next batch's transaction, where it costs no flush of
 * the log of its own; the publisher's own before its sweep, which must
 * see it.  Lost (a batch that fails), it costs a duplicate task after
 * --republish-after. */
static void record_published(fl_writer *w, fl_store_conn *conn)
{
    pthread_mutex_lock(&w->mu);
    char **ids = w->pubdone;
    size_t n = w->npubdone;
    w->pubdone = NULL;
    w->npubdone = w->pubdone_cap = 0;
    pthread_mutex_unlock(&w->mu);
    if (n && w->store->published)
        w->store->published(conn, (const char *const *)ids, n);
    free_ids(ids, n);
}

/* The sweep (fl_queue_sweep): a report waits republish_after seconds for
 * its own publish -- which normally follows its commit within milliseconds,
 * but another server's writer may be between the two -- before the sweep
 * publishes it; every SWEEP_EVERY_S at most, and at start for what a
 * stopped server left.  It asks the broker each time (its depth), so it
 * also finds out when a broker that was away answers again. */
#define SWEEP_EVERY_S 10

static void sweep(fl_writer *w, publog *pl)
{
    record_published(w, w->pub_conn);
    size_t stale = 0;
    long n = fl_queue_sweep(w->queue, w->pub_conn, w->republish_after, &stale);
    if (n == -2) {
        /* The broker away, or not answering: /healthz says so; the log
         * has said it with the first publish that failed (publog). */
        queue_failed(w, w->queue->error ? w->queue->error(w->queue) : NULL);
        return;
    }
    if (n >= 0)
        publog_ok(w, pl);
    if (stale && w->m->health.log)
        fl_log(w->m->health.log,
               "faultline serve: queue: the broker holds no task, but %zu reports whose tasks it "
               "took %lld s ago or more still wait: publishing them again (a broker that lost "
               "its queue?)",
               stale, (long long)w->republish_after * FL_QUEUE_STALE_FACTOR);
    if (n > 0) {
        FL_M_ADD(w->m->republished, (uint64_t)n);
        /* A stale report was in the backlog already. */
        FL_M_ADD(w->m->backlog, n - (long)(stale < (size_t)n ? stale : (size_t)n));
        if (w->notify)
            w->notify(w->notify_arg);
    }
}

/* The publisher thread.  With a broker, a report is durable -- and
 * answered 200 -- once its transaction commits; waiting for the broker's
 * confirm of its task on the writer's thread as well held every answer
 * and the next batch for that round trip (ingest at 0.21 of the embedded
 * default).  Here the tasks of one commit are published while the writer
 * commits the next; the ids the broker confirmed go back to the writer,
 * which records them (store->published) on its own connection.  A task
 * this thread could not publish -- broker away, server stopped first -- is
 * the sweep's.
 *
 * The sweep runs here too, on a store connection of its own, not on the
 * writer's thread: it talks to the broker, and a broker that does not
 * answer (stopped with its sockets open, SIGSTOP, a host cut off) holds a
 * call for its timeouts -- 5 s for a confirm or a handshake, 10 s for an
 * RPC.  On the writer's thread that held every answer: ingest stalled in
 * blocks of 10-15 s.  Nothing on the writer's thread talks to the broker
 * now, so a 200 waits for the commit alone; a stalled broker only delays
 * publishing, and what waits meanwhile is published in one go once it
 * answers (or by the sweep). */
static void *publisher_main(void *arg)
{
    fl_writer *w = arg;
    pthread_setname_np(pthread_self(), "fl-publish");
    publog pl = {0};
    bool sweeps = w->pub_conn != NULL;
    uint64_t next_sweep = 0; /* at once */
    unsigned every =
        w->republish_after / 2 < SWEEP_EVERY_S ? w->republish_after / 2 : SWEEP_EVERY_S;
    if (every == 0)
        every = 1;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->ntopub && !w->pub_stop) {
            uint64_t now = fl_mono_ns();
            if (!sweeps)
                pthread_cond_wait(&w->pub_cv, &w->mu);
            else if (now >= next_sweep)
                break;
            else
                fl_cond_wait_ms(&w->pub_cv, &w->mu, (next_sweep - now) / 1000000 + 1);
        }
        if (w->pub_stop && !w->ntopub)
            break;
        if (w->ntopub) {
            char **ids = w->topub;
            size_t n = w->ntopub;
            w->topub = NULL;
            w->ntopub = w->topub_cap = 0;
            pthread_mutex_unlock(&w->mu);
            bool ok = !w->queue->enqueue_many(w->queue, NULL, (const char *const *)ids, n);
            if (ok)
                publog_ok(w, &pl);
            else
                publog_fail(w, &pl, n);
            pthread_mutex_lock(&w->mu);
            if (ok) {
                push_ids(&w->pubdone, &w->npubdone, &w->pubdone_cap, (const char *const *)ids, n);
                FL_M_ADD(w->m->backlog, (int64_t)n);
            } else {
                FL_M_ADD(w->m->publish_failed, n);
            }
            free_ids(ids, n);
            if (ok && w->notify) {
                pthread_mutex_unlock(&w->mu);
                w->notify(w->notify_arg);
                pthread_mutex_lock(&w->mu);
            }
        }
        /* Between publishes too: a steady stream of them must not put
         * the sweep off. */
        if (sweeps && !w->pub_stop && fl_mono_ns() >= next_sweep) {
            pthread_mutex_unlock(&w->mu);
            sweep(w, &pl);
            next_sweep = fl_mono_ns() + every * 1000000000ull;
            pthread_mutex_lock(&w->mu);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Lets the publisher publish what it holds, and joins it. */
static void publisher_stop(fl_writer *w)
{
    if (!w->pub_on)
        return;
    pthread_mutex_lock(&w->mu);
    w->pub_stop = true;
    pthread_cond_signal(&w->pub_cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->pub_th, NULL);
    w->pub_on = false;
}

void fl_writer_publish(fl_writer *w, const char *const *ids, size_t n)
{
    if (w->queue->in_store_txn || n == 0)
        return;
    pthread_mutex_lock(&w->mu);
    if (!w->pub_stop && w->ntopub < PUBLISH_MAX) {
        push_ids(&w->topub, &w->ntopub, &w->topub_cap, ids, n);
        pthread_cond_signal(&w->pub_cv);
    }
    pthread_mutex_unlock(&w->mu);
}

int fl_writer_submit_list(fl_writer *w, fl_wreq *head, fl_wreq *tail, size_t n)
{
    pthread_mutex_lock(&w->mu);
    if (w->stopping || w->pending + n > w->max_pending) {
        int rc = w->stopping ? -2 : -1;
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    tail->next = NULL;
    if (w->tail)
        w->tail->next = head;
    else
        w->head = head;
    w->tail = tail;
    w->pending += n;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* One transaction for the whole list.  Returns 0 when committed, the
 * number of new tasks in *added and of the reports written (not resends
 * of stored ones) in *written. */
static int commit_batch(fl_writer *w, fl_wreq *list, int64_t *added, size_t *written)
{
    fl_store *s = w->store;
    fl_store_conn *c = w->conn;
    *added = 0;
    *written = 0;
    size_t n = 0;
    for (fl_wreq *r = list; r; r = r->next)
        n += r->n;
    if (n > w->batch_cap) {
        fl_ingest_item **nb = realloc(w->batch, n * sizeof *nb);
        if (nb)
            w->batch = nb;
        const char **ni = nb ? realloc(w->ids, n * sizeof *ni) : NULL;
        if (!ni) {
            fl_health_fail(&w->m->health, FL_HEALTH_INGEST, "out of memory");
            return -1;
        }
        w->ids = ni;
        w->batch_cap = n;
    }
    n = 0;
    for (fl_wreq *r = list; r; r = r->next)
        for (size_t i = 0; i < r->n; i++)
            w->batch[n++] = &r->items[i];
    if (s->begin(c))
        goto fail;
    if (w->pub_on)
        record_published(w, c);
    if (s->insert_crashes(c, w->batch, n))
        goto fail;
    size_t nnew = 0;
    for (size_t i = 0; i < n; i++)
        if (!w->batch[i]->duplicate)
            w->ids[nnew++] = w->batch[i]->ref[0] ? w->batch[i]->ref : w->batch[i]->crash_id;
    *written = nnew;
    /* The whole batch's tasks at once: one stored task per
     * FL_QUEUE_BATCH_MAX crashes rather than one per crash. */
    if (w->queue->in_store_txn && nnew) {
        if (w->queue->enqueue_many(w->queue, c, w->ids, nnew))
            goto fail;
        *added = (int64_t)nnew;
    }
    if (s->commit(c))
        goto fail;
    fl_health_ok(&w->m->health, FL_HEALTH_INGEST);
    if (!w->queue->in_store_txn && nnew) {
        /* A store and a queue that do not share transactions: the
         * publisher publishes after the commit (and counts them).  A report
         * whose task does not reach the queue (a crash in between, a broker
         * away) is published by the sweep (writer_main). */
        pthread_mutex_lock(&w->mu);
        if (w->ntopub < PUBLISH_MAX)
            push_ids(&w->topub, &w->ntopub, &w->topub_cap, w->ids, nnew);
        else /* a broker that stopped reading (an alarm): the sweep's */
            FL_M_ADD(w->m->publish_failed, nnew);
        pthread_cond_signal(&w->pub_cv);
        pthread_mutex_unlock(&w->mu);
    }
    return 0;
fail:
    fl_health_fail(&w->m->health, FL_HEALTH_INGEST, s->error(c));
    s->rollback(c);
    return -1;
}

#define PROBE_EVERY_S 1
/* An idle writer asks a store on another machine whether it is there,
 * so that /healthz says so before a report finds out. */
#define PING_EVERY_S 5

static bool ingest_failing(fl_writer *w)
{
    return __atomic_load_n(&w->m->health.path[FL_HEALTH_INGEST].state, __ATOMIC_RELAXED) ==
           FL_HEALTH_FAILING;
}

static void *writer_main(void *arg)
{
    fl_writer *w = arg;
    pthread_setname_np(pthread_self(), "fl-writer");
    for (;;) {
        pthread_mutex_lock(&w->mu);
        bool probe = false, ping = false;
        while (!w->head && !w->stopping) {
            /* Ingest failing (a full disk) and no report coming to find
             * out when it works again -- a balancer that believes /healthz
             * sends none: the writer tries a write of its own every
             * PROBE_EVERY_S.  Working, with a store elsewhere: a ping
             * every PING_EVERY_S. */
            bool failing = w->store->probe && ingest_failing(w);
            bool pings = !failing && w->store->ping;
            if (!failing && !pings) {
                pthread_cond_wait(&w->cv, &w->mu);
                continue;
            }
            unsigned wait_s = failing ? PROBE_EVERY_S : PING_EVERY_S;
            if (fl_cond_wait_ms(&w->cv, &w->mu, wait_s * 1000ull)) {
                probe = failing;
                ping = pings;
                break; /* time to probe, or to ping */
            }
        }
        fl_wreq *list = w->head;
        w->head = w->tail = NULL;
        w->pending = 0;
        bool stop = w->stopping;
        pthread_mutex_unlock(&w->mu);
        if (!list) {
            if (stop)
                break;
            if (probe && w->store->probe(w->conn) == 0)
                fl_health_ok(&w->m->health, FL_HEALTH_INGEST);
            if (ping && w->store->ping(w->conn) != 0)
                fl_health_fail(&w->m->health, FL_HEALTH_INGEST, w->store->error(w->conn));
            continue;
        }
        int64_t added = 0;
        size_t written = 0;
        uint64_t t0 = fl_mono_ns();
        int rc = commit_batch(w, list, &added, &written);
        FL_M_ADD(w->m->commit_ns, fl_mono_ns() - t0);
        /* Resends the store had already are written by no commit: a batch
         * of them alone is no group commit, and reports per fsync
         * (committed / commits) counts the reports written. */
        if (rc == 0 && written) {
            FL_M_ADD(w->m->commits, 1);
            FL_M_ADD(w->m->committed_items, written);
        }
        if (rc == 0)
            FL_M_ADD(w->m->backlog, added);
        for (fl_wreq *r = list, *next; r; r = next) {
            next = r->next; /* done() may free r */
            r->result = rc;
            r->done(r);
        }
        if (rc == 0 && added && w->notify)
            w->notify(w->notify_arg);
    }
    /* Publish what was committed, then record it. */
    publisher_stop(w);
    record_published(w, w->conn);
    return NULL;
}

fl_writer *fl_writer_start(fl_store *s, fl_queue *q, fl_metrics *m, size_t max_pending,
                           unsigned republish_after_s, void (*notify)(void *), void *notify_arg,
                           char *err, size_t errlen)
{
    fl_writer *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->store = s;
    w->queue = q;
    w->m = m;
    w->max_pending = max_pending ? max_pending : 1;
    w->republish_after = republish_after_s;
    w->notify = notify;
    w->notify_arg = notify_arg;
    pthread_mutex_init(&w->mu, NULL);
    fl_cond_init_mono(&w->cv);
    fl_cond_init_mono(&w->pub_cv);
    if (!(w->conn = s->connect(s))) {
        snprintf(err, errlen, "writer: cannot connect to the store");
        goto fail;
    }
    if (!q->in_store_txn && s->unpublished && !(w->pub_conn = s->connect(s))) {
        snprintf(err, errlen, "writer: cannot connect to the store (for the sweep)");
        goto fail;
    }
    if (!q->in_store_txn) {
        if (pthread_create(&w->pub_th, NULL, publisher_main, w)) {
            snprintf(err, errlen, "writer: cannot start the publisher");
            goto fail;
        }
        w->pub_on = true;
    }
    if (pthread_create(&w->th, NULL, writer_main, w)) {
        snprintf(err, errlen, "writer: cannot start its thread");
        goto fail;
    }
    return w;
fail:
    publisher_stop(w);
    if (w->pub_conn)
        s->disconnect(w->pub_conn);
    if (w->conn)
        s->disconnect(w->conn);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->pub_cv);
    free(w);
    return NULL;
}

void fl_writer_stop(fl_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    bool joined = w->joined;
    w->stopping = true;
    w->joined = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (!joined)
        pthread_join(w->th, NULL);
}

void fl_writer_free(fl_writer *w)
{
    if (!w)
        return;
    fl_writer_stop(w);
    if (w->pub_conn)
        w->store->disconnect(w->pub_conn);
    w->store->disconnect(w->conn);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->pub_cv);
    free_ids(w->topub, w->ntopub);
    free_ids(w->pubdone, w->npubdone);
    free(w->batch);
    free(w->ids);
    free(w);
}
