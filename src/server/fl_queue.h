/*
 * fl_queue.h - the task queue between ingest and the workers, behind a
 * small interface: one file per engine (queue_embedded.c now; RabbitMQ in
 * queue_amqp.c later).
 *
 * Delivery is at-least-once: a claimed task carries a lease; a worker that
 * dies before ack() leaves the task to be claimed again when the lease
 * expires.  Exactly-once counting comes from the store (apply() ignores a
 * crash already processed) -- and for the embedded engine also from the
 * ack happening in the same transaction as apply().
 */
#ifndef FL_QUEUE_H
#define FL_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fl_store.h"

typedef struct fl_task {
    int64_t id;
    char crash_id[FL_CRASH_ID_MAX];
} fl_task;

typedef struct fl_queue fl_queue;

struct fl_queue {
    const char *engine;
    /* true: enqueue() and ack() run inside the caller's store transaction
     * (the embedded queue keeps its tasks in the store's database); false:
     * the caller enqueues/acks after its commit. */
    bool in_store_txn;
    int (*enqueue)(fl_queue *q, fl_store_conn *c, const char *crash_id);
    /* Claim up to max tasks whose lease expired or that were never leased,
     * leasing them for lease_s seconds.  *n gets how many.  Own transaction. */
    int (*claim)(fl_queue *q, fl_store_conn *c, unsigned lease_s, size_t max, fl_task *out,
                 size_t *n);
    int (*ack)(fl_queue *q, fl_store_conn *c, const fl_task *t);
    /* Tasks not yet acknowledged, or -1. */
    int64_t (*depth)(fl_queue *q, fl_store_conn *c);
    /* Forget every lease (start-up of the only worker process). */
    int (*release_all)(fl_queue *q, fl_store_conn *c);
    void (*close)(fl_queue *q); /* NULL is fine */
    void *data;
};

/* The embedded queue: a table of the SQLite store.  Needs connections of
 * fl_store_sqlite_open()'s store.  NULL on OOM. */
fl_queue *fl_queue_embedded_new(void);

#endif
