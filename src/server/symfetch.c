/*
 * symfetch.c - debug files shared between servers through their store.
 *
 * Servers that share PostgreSQL may run on different machines, each with
 * its own data directory: a debug file uploaded to one API server must
 * reach the workers elsewhere.  The store keeps the file's bytes
 * (fl_store.fetch_symbol), and the symbolizer asks for a build id before
 * it looks in its own upload root (fl_srvsym_config.fetch), so the fetched
 * file is found there like a local upload, and precedes /usr/lib/debug
 * and debuginfod as an upload does.
 *
 * The symbolizer calls from worker and HTTP threads; a store connection is
 * one thread's, so each calling thread gets its own, closed when the
 * thread ends (or by fl_symfetch_free for those still alive).
 */
#include "fl_srvsym.h"

#include <pthread.h>
#include <stdlib.h>

#include "fl_store.h"

typedef struct tconn {
    fl_symfetch *owner;
    fl_store_conn *c;
    struct tconn *next, **prev;
} tconn;

struct fl_symfetch {
    fl_store *store;
    pthread_key_t key;
    pthread_mutex_t mu;
    tconn *all;
};

static void unlink_locked(tconn *t)
{
    *t->prev = t->next;
    if (t->next)
        t->next->prev = t->prev;
}

/* Thread exit: close the thread's connection. */
static void tconn_free(void *arg)
{
    tconn *t = arg;
    fl_symfetch *f = t->owner;
    pthread_mutex_lock(&f->mu);
    unlink_locked(t);
    pthread_mutex_unlock(&f->mu);
    f->store->disconnect(t->c);
    free(t);
}

fl_symfetch *fl_symfetch_new(fl_store *store)
{
    if (!store || !store->fetch_symbol)
        return NULL;
    fl_symfetch *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    if (pthread_key_create(&f->key, tconn_free)) {
        free(f);
        return NULL;
    }
    f->store = store;
    pthread_mutex_init(&f->mu, NULL);
    return f;
}

void fl_symfetch_free(fl_symfetch *f)
{
    if (!f)
        return;
    pthread_key_delete(f->key); /* no destructor runs from here on */
    while (f->all) {
        tconn *t = f->all;
        unlink_locked(t);
        f->store->disconnect(t->c);
        free(t);
    }
    pthread_mutex_destroy(&f->mu);
    free(f);
}

void fl_symfetch_fetch(void *arg, const char *build_id, const char *upload_root)
{
    fl_symfetch *f = arg;
    tconn *t = pthread_getspecific(f->key);
    if (!t) {
        if (!(t = calloc(1, sizeof *t)) || !(t->c = f->store->connect(f->store))) {
            free(t);
            return; /* the local places are still tried */
        }
        t->owner = f;
        pthread_mutex_lock(&f->mu);
        t->next = f->all;
        t->prev = &f->all;
        if (f->all)
            f->all->prev = &t->next;
        f->all = t;
        pthread_mutex_unlock(&f->mu);
        pthread_setspecific(f->key, t);
    }
    /* A failure leaves the module to the other places (and its crashes to
     * the backfill when symbols_version moves again). */
    f->store->fetch_symbol(t->c, build_id, upload_root);
}
