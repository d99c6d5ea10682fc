/*
 * fl_queue.h - the task queue between ingest and the workers, behind a
 * small interface: one file per engine (queue_embedded.c, the default, in
 * the SQLite store; queue_pg.c, in the PostgreSQL store; queue_amqp.c,
 * RabbitMQ).
 *
 * Delivery is at-least-once: a claimed task carries a lease; a worker that
 * dies before ack() leaves the task to be claimed again when the lease
 * expires.
 *
 * Ingest enqueues a batch of crashes at once (enqueue_many()), and an engine
 * may keep them as one task -- one row or message for up to
 * FL_QUEUE_BATCH_MAX crashes costs a fraction of one per crash.  claim()
 * then hands out one fl_task per crash; the entries of one stored task all
 * come in the same claim, and ack() of the entry marked `last` completes it
 * (acks of the others do nothing).  A worker therefore acks every entry it
 * claimed, as it would anyway; if it dies first, the whole stored task comes
 * back, and the store's exactly-once apply() skips the crashes done.  Exactly-once counting comes
 * from the store (apply() ignores a crash already processed) -- and for the embedded engine also
 * from the ack happening in the same transaction as apply().
 */
#ifndef FL_QUEUE_H
#define FL_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fl_store.h"

/* Crashes per stored task at most; claim()'s max must be at least this. */
#define FL_QUEUE_BATCH_MAX 16

typedef struct fl_task {
    int64_t id; /* the stored task (shared by the entries of a batch) */
    char crash_id[FL_CRASH_ID_MAX];
    bool last; /* its ack completes the stored task */
    unsigned attempts; /* claims of the stored task, this one included */
} fl_task;

typedef struct fl_queue fl_queue;

struct fl_queue {
    const char *engine;
    /* true: enqueue() and ack() run inside the caller's store transaction
     * (the embedded queue keeps its tasks in the store's database); false:
     * the caller enqueues/acks after its commit. */
    bool in_store_txn;
    /* c: the caller's store connection, through which a queue inside the
     * store writes; a queue outside it (in_store_txn false) takes NULL. */
    int (*enqueue)(fl_queue *q, fl_store_conn *c, const char *crash_id);
    /* The same for n crashes, in as few stored tasks as the engine likes. */
    int (*enqueue_many)(fl_queue *q, fl_store_conn *c, const char *const *crash_ids, size_t n);
    /* Claim up to max (>= FL_QUEUE_BATCH_MAX) crashes whose task's lease
     * expired or that were never leased, leasing them for lease_s seconds.
     * *n gets how many.  Own transaction. */
    int (*claim)(fl_queue *q, fl_store_conn *c, unsigned lease_s, size_t max, fl_task *out,
                 size_t *n);
    int (*ack)(fl_queue *q, fl_store_conn *c, const fl_task *t);
    /* Crashes whose task is not yet acknowledged, or -1. */
    int64_t (*depth)(fl_queue *q, fl_store_conn *c);
    /* Forget every lease (start-up of the only worker process). */
    int (*release_all)(fl_queue *q, fl_store_conn *c);
    /* Optional (NULL: leases expire on their own): give claimed entries
     * back now, after processing them failed, for another claim. */
    int (*release)(fl_queue *q, fl_store_conn *c, const fl_task *t, size_t n);
    /* Optional: why this thread's last failed call failed (borrowed);
     * NULL, or a NULL answer: the store's error() says. */
    const char *(*error)(fl_queue *q);
    /* claim() itself waits a little (up to ~200 ms) for tasks when there
     * are none, so the worker loops on it instead of sleeping. */
    bool claim_waits;
    void (*close)(fl_queue *q); /* NULL is fine */
    void *data;
};

/* After the commit that stored these crashes (or marked them for
 * re-processing): with a queue outside the store, publish their tasks and
 * tell the store they reached the queue.  Nothing to do for a queue inside
 * the store (its tasks were written in the transaction).  -1 when the
 * queue refused: the sweep publishes them later (queue.c). */
int fl_queue_publish(fl_queue *q, fl_store_conn *c, const char *const *crash_ids, size_t n);
/* How much longer than the sweep's age a report whose task a broker took
 * waits, while the broker holds no message, before it counts as lost. */
#define FL_QUEUE_STALE_FACTOR 10

/* Publish the tasks of reports that have waited min_age_s or more without
 * reaching the queue (a server stopped between commit and publish, a
 * broker away), and, when the broker holds no message at all, of those
 * whose task it was given FL_QUEUE_STALE_FACTOR × min_age_s or more ago
 * (a broker that lost its queue).  Returns how many; -1 when the store
 * failed (its error() says why); -2 when the queue did -- a publish, or
 * asking its depth with nothing published after (q->error() says why).
 * OUT: *stale, how many of them were of the second kind.  0 for a queue
 * inside the store. */
long fl_queue_sweep(fl_queue *q, fl_store_conn *c, int64_t min_age_s, size_t *stale);

/* For engines that keep a stored task as its crash ids separated by '\n'
 * (ids NULL: one empty entry, whose ack still removes the task): its
 * entries appended at out[*n...], the last one marked, attempts as given.
 * False, and nothing appended, when they do not all fit in max (more ids
 * than the task says: a damaged one, which then comes back when its lease
 * expires rather than being half done). */
bool fl_queue_split(int64_t task_id, const char *ids, unsigned attempts, size_t max, fl_task *out,
                    size_t *n);

/* The embedded queue: a table of the SQLite store.  Needs connections of
 * fl_store_sqlite_open()'s store.  NULL on OOM. */
fl_queue *fl_queue_embedded_new(void);

/* The queue inside the PostgreSQL store (queue_pg.c): a table of its
 * database, written in the store's transactions, claimed by many
 * processes at once.  Needs connections of fl_store_pg_open()'s store.
 * NULL on OOM. */
fl_queue *fl_queue_pg_new(void);

/* The RabbitMQ queue (queue_amqp.c) at url, "amqp://user:pass@host:port/vhost":
 * a durable queue, persistent messages of up to FL_QUEUE_BATCH_MAX crash
 * ids each, publisher confirms (enqueue returns once the broker has the
 * message), published mandatory (a message no queue takes -- the queue
 * deleted -- fails the enqueue, which declares the queue again),
 * competing consumers with manual acks.  Thread-safe: each
 * thread gets a connection of its own.  Declares the queue at once, so a
 * wrong URL fails here: NULL with a reason in err. */
fl_queue *fl_queue_amqp_new(const char *url, char *err, size_t errlen);
/* The same without connecting: each thread's first call connects (and
 * fails while the broker is away, as after a connection lost).  For an
 * API server started while its broker is not up yet: it takes reports,
 * and its sweep publishes their tasks once the broker answers.  Only the
 * URL is checked here: NULL with a reason in err. */
fl_queue *fl_queue_amqp_new_unconnected(const char *url, char *err, size_t errlen);

/* 0 when fl_queue_amqp_new() would take url as written -- its form, port,
 * vhost and query parameters -- without asking any broker; else -1 with
 * err saying what is wrong, never echoing the URL (it holds the
 * password).  For the argument checks of `faultline serve`. */
int fl_queue_amqp_check_url(const char *url, char *err, size_t errlen);

/* Publishes the tasks of crashes a commit marked for processing, for a
 * queue outside the store, without waiting for it: the ids are borrowed
 * (copy them); what it cannot publish the sweep does.  The writer's
 * publisher (fl_writer_publish) is one. */
typedef void fl_queue_publish_fn(void *arg, const char *const *ids, size_t n);

/* The backfill of a debug file (or .dwo, dwz file) for key: in one
 * transaction of conn, records r when it is not NULL (an ingested file),
 * marks the processed crashes that lacked key for re-processing (at most
 * max) and enqueues them on q (NULL: the sweep finds them).  With a queue
 * outside the store their tasks go to publish(publish_arg, ...) after the
 * commit when it is not NULL, else they are published here, on the
 * caller's thread -- which a broker that does not answer holds for its
 * timeouts (5 s).  OUT: *nq, how many.  0, or -1 with err filled and
 * nothing done.  The ingest's after an upload (publish: the writer's
 * publisher, so that no HTTP thread waits on the broker), and the
 * workers' after a debuginfod fetch (fl_workers_config.symbols_fetched;
 * NULL: a worker waits on the broker anyway). */
int fl_queue_backfill(fl_queue *q, fl_store *s, fl_store_conn *conn, const fl_symbol_rec *r,
                      const char *key, size_t max, fl_queue_publish_fn *publish, void *publish_arg,
                      size_t *nq, char *err, size_t errlen);

#endif
