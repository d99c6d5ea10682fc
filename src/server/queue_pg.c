/*
 * queue_pg.c - the durable task queue inside the PostgreSQL store: what
 * `--db postgres://...` uses without a `--queue`.
 *
 * The embedded queue's design (queue_embedded.c) on a database that many
 * servers share.  A task is a row of `tasks` holding up to
 * FL_QUEUE_BATCH_MAX crash ids ('\n'-separated); enqueue() runs in the
 * ingest transaction, so a report is never stored without its task -- no
 * publish after the commit, no sweep -- and ack() in the worker's apply()
 * transaction, so a crash is counted and its task completed together.
 *
 * Many workers, in many processes, claim at once: claim() leases whole
 * rows with SELECT ... FOR UPDATE SKIP LOCKED, so each takes rows no other
 * claim holds and none waits for another.  A worker that dies leaves its
 * rows leased until lease_until; the next claim after that takes them
 * again (attempts counts the claims, as in the embedded queue).
 *
 * Waiting for work: the ingest transaction also sends a notification
 * (pg_notify, delivered at its commit); a worker that found nothing
 * LISTENs and waits on its connection's socket for up to WAIT_MS
 * (claim_waits), so a report is picked up as soon as it is committed, on
 * whichever machine, without polling the table.  A notifying commit takes
 * one lock for the whole cluster, so a process notifies at most once per
 * NOTIFY_EVERY_MS: under load the workers are busy anyway, and an idle
 * one that missed a notification claims at its next WAIT_MS timeout.
 */
#include "fl_queue.h"

#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "fl_srvutil.h"

#define CHANNEL "faultline_tasks"
#define WAIT_MS 200
#define NOTIFY_EVERY_MS 20
#define NOTIFY "SELECT pg_notify('" CHANNEL "', '')"

typedef struct pg_queue {
    fl_queue q;
    uint64_t notified_ns; /* when this process last notified (atomic) */
} pg_queue;

/* Whether this enqueue is to notify: none in the last NOTIFY_EVERY_MS. */
static bool notify_now(fl_queue *q)
{
    pg_queue *pq = (pg_queue *)q;
    uint64_t now = fl_mono_ns(), last = __atomic_load_n(&pq->notified_ns, __ATOMIC_RELAXED);
    return now - last >= NOTIFY_EVERY_MS * 1000000ull &&
           __atomic_compare_exchange_n(&pq->notified_ns, &last, now, false, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
}
#define NOW_S "floor(extract(epoch FROM now()))::bigint"

/* All of a batch's ids in one parameter ('\n'-separated), cut into rows
 * of FL_QUEUE_BATCH_MAX in SQL: one round trip per ingest batch. */
_Static_assert(FL_QUEUE_BATCH_MAX == 16, "SQL_ENQUEUE_MANY cuts rows of 16");
#define ENQUEUE_MANY                                                                               \
    "WITH ids AS (SELECT x, o FROM unnest(string_to_array($1, E'\\n')) WITH ORDINALITY u(x, o)), " \
    "cut AS (SELECT (o - 1) / 16 AS k, string_agg(x, E'\\n' ORDER BY o) AS crash_ids, "            \
    "count(*) AS n FROM ids GROUP BY 1), "                                                         \
    "ins AS (INSERT INTO tasks(crash_ids, n) SELECT crash_ids, n FROM cut ORDER BY k) "
static const char SQL_ENQUEUE_MANY[] = ENQUEUE_MANY NOTIFY;
static const char SQL_ENQUEUE_MANY_QUIET[] = ENQUEUE_MANY "SELECT 1";
static const char SQL_ENQUEUE[] =
    "WITH ins AS (INSERT INTO tasks(crash_ids, n) VALUES($1, 1)) " NOTIFY;
static const char SQL_ENQUEUE_QUIET[] = "INSERT INTO tasks(crash_ids, n) VALUES($1, 1)";
static const char SQL_ACK[] = "DELETE FROM tasks WHERE id=$1";
/* Whole rows only, as many as fit in $2 entries: the running sum of n over
 * the rows locked in claim order ($2 rows at most can fit).  A row locked
 * but cut stays unleased, free again at the end of the statement. */
static const char SQL_CLAIM[] =
    "WITH c AS (SELECT id, n FROM tasks WHERE lease_until <= " NOW_S " ORDER BY id LIMIT $2 FOR "
    "UPDATE SKIP LOCKED), s AS (SELECT id, sum(n) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) "
    "AS cum FROM c) UPDATE tasks t SET lease_until = " NOW_S " + $1, attempts = t.attempts + 1 "
    "FROM s WHERE t.id = s.id AND s.cum <= $2 RETURNING t.id, t.crash_ids, t.attempts";
static const char SQL_DEPTH[] = "SELECT coalesce(sum(n), 0) FROM tasks";
/* Only the claim that leased it: a worker whose lease ran out (and whose
 * task another worker claimed since, one attempt more) gives back nothing. */
static const char SQL_RELEASE[] = "UPDATE tasks SET lease_until=0 WHERE id=$1 AND attempts=$2";
static const char SQL_RELEASE_ALL[] = "UPDATE tasks SET lease_until=0 WHERE lease_until>0";

static int run(fl_store_conn *c, const char *sql, int n, const char *const *v)
{
    PGresult *r = fl_store_pg_exec(c, sql, n, v);
    PQclear(r);
    return r ? 0 : -1;
}

static int q_enqueue(fl_queue *q, fl_store_conn *c, const char *crash_id)
{
    return run(c, notify_now(q) ? SQL_ENQUEUE : SQL_ENQUEUE_QUIET, 1, &crash_id);
}

static int q_enqueue_many(fl_queue *q, fl_store_conn *c, const char *const *ids, size_t n)
{
    if (n == 0)
        return 0;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(ids[i]);
        if (l == 0 || l >= FL_CRASH_ID_MAX || strchr(ids[i], '\n'))
            return -1; /* cannot happen: ids are checked at ingest */
        len += l + 1;
    }
    char *text = malloc(len), *p = text;
    if (!text)
        return -1;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(ids[i]);
        memcpy(p, ids[i], l);
        p += l;
        *p++ = '\n';
    }
    p[-1] = '\0';
    const char *v[] = {text};
    int rc = run(c, notify_now(q) ? SQL_ENQUEUE_MANY : SQL_ENQUEUE_MANY_QUIET, 1, v);
    free(text);
    return rc;
}

static int q_ack(fl_queue *q, fl_store_conn *c, const fl_task *t)
{
    (void)q;
    if (!t->last)
        return 0; /* the row goes with its last entry */
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)t->id);
    const char *v[] = {id};
    return run(c, SQL_ACK, 1, v);
}

static int q_claim(fl_queue *q, fl_store_conn *c, unsigned lease_s, size_t max, fl_task *out,
                   size_t *n)
{
    (void)q;
    *n = 0;
    char ls[24], mx[24];
    snprintf(ls, sizeof ls, "%u", lease_s);
    snprintf(mx, sizeof mx, "%zu", max);
    const char *v[] = {ls, mx};
    PGresult *r = fl_store_pg_exec(c, SQL_CLAIM, 2, v);
    if (!r)
        return -1;
    int rows = PQntuples(r);
    for (int i = 0; i < rows; i++)
        fl_queue_split(strtoll(PQgetvalue(r, i, 0), NULL, 10), PQgetvalue(r, i, 1),
                       (unsigned)strtoul(PQgetvalue(r, i, 2), NULL, 10), max, out, n);
    PQclear(r);
    /* Nothing: wait for a commit's notification.  Work: take the
     * notifications that came meanwhile all the same -- libpq keeps every
     * one it reads along with results, and a worker busy with a backlog
     * for hours would otherwise hold one per ingest commit. */
    if (fl_store_pg_wait(c, CHANNEL, rows == 0 ? WAIT_MS : 0) < 0 && rows == 0)
        return -1;
    return 0;
}

static int64_t q_depth(fl_queue *q, fl_store_conn *c)
{
    (void)q;
    PGresult *r = fl_store_pg_exec(c, SQL_DEPTH, 0, NULL);
    if (!r)
        return -1;
    int64_t d = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return d;
}

static int q_release(fl_queue *q, fl_store_conn *c, const fl_task *t, size_t n)
{
    (void)q;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && t[i].id == t[i - 1].id)
            continue; /* a row's entries come together */
        char id[24], at[16];
        snprintf(id, sizeof id, "%lld", (long long)t[i].id);
        snprintf(at, sizeof at, "%u", t[i].attempts);
        const char *v[] = {id, at};
        if (run(c, SQL_RELEASE, 2, v))
            return -1;
    }
    return 0;
}

static int q_release_all(fl_queue *q, fl_store_conn *c)
{
    (void)q;
    return run(c, SQL_RELEASE_ALL, 0, NULL);
}

static void q_close(fl_queue *q)
{
    free(q);
}

fl_queue *fl_queue_pg_new(void)
{
    pg_queue *pq = calloc(1, sizeof *pq);
    if (!pq)
        return NULL;
    fl_queue *q = &pq->q;
    q->engine = "postgres";
    q->in_store_txn = true;
    q->enqueue = q_enqueue;
    q->enqueue_many = q_enqueue_many;
    q->claim = q_claim;
    q->ack = q_ack;
    q->depth = q_depth;
    q->release_all = q_release_all;
    q->release = q_release;
    q->claim_waits = true;
    q->close = q_close;
    q->data = q;
    return q;
}
