/*
 * mergebench - how long a merge and an unmerge of a large group hold the
 * store's writer (SQLite: the only one), and what a small ingest commit
 * waits meanwhile.
 *
 *   mergebench DIR [N]
 *
 * Stores N (default 100,000) processed crashes in group "big" and 100 in
 * group "small" (one SQLite database in DIR, 8 KiB logs, 1,000 to a
 * transaction, the way ingest and the workers write them), then times
 * merge_group(small <- big) and unmerge_group(big), each from begin() to
 * commit(), while a second thread ingests one report per transaction,
 * and prints the longest such ingest commit seen during each.  A merge
 * or unmerge is the whole transaction: its time is how long the writer
 * is held.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fl_store.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static char g_raw[8192];

static int store_batch(fl_store *s, fl_store_conn *c, const char *group, size_t from, size_t n)
{
    fl_ingest_item *it = calloc(n, sizeof *it), **pp = calloc(n, sizeof *pp);
    if (!it || !pp)
        return -1;
    for (size_t i = 0; i < n; i++) {
        snprintf(it[i].crash_id, sizeof it[i].crash_id, "%s-%08zu", group, from + i);
        it[i].app = "app";
        it[i].version = "1.0";
        it[i].received = 1700000000 + (int64_t)((from + i) % 30) * 86400;
        it[i].raw = g_raw;
        it[i].raw_len = sizeof g_raw;
        pp[i] = &it[i];
    }
    int rc = s->begin(c) || s->insert_crashes(c, pp, n);
    for (size_t i = 0; i < n && !rc; i++) {
        char inst[32];
        snprintf(inst, sizeof inst, "inst-%zu", (from + i) % 5000);
        fl_processed p = {.crash_id = it[i].crash_id,
                          .ref = it[i].ref[0] ? it[i].ref : NULL,
                          .group_id = group,
                          .signature = group,
                          .stack_hash = "h",
                          .app = "app",
                          .version = "1.0",
                          .os = "linux",
                          .install_id = inst,
                          .received = it[i].received,
                          .frames_json = "[]"};
        rc = s->apply(c, &p) < 0;
    }
    rc = rc || s->commit(c);
    if (rc)
        s->rollback(c);
    free(it);
    free(pp);
    return rc ? -1 : 0;
}

typedef struct ingester {
    fl_store *s;
    atomic_bool stop, measuring;
    double worst_ms;
    long commits;
} ingester;

static void *ingest_main(void *arg)
{
    ingester *g = arg;
    fl_store_conn *c = g->s->connect(g->s);
    for (long i = 0; c && !atomic_load(&g->stop); i++) {
        fl_ingest_item it = {
            .app = "app", .version = "1.0", .received = 1700000000, .raw = g_raw, .raw_len = 1024};
        fl_ingest_item *one = &it;
        snprintf(it.crash_id, sizeof it.crash_id, "live-%ld", i);
        bool m = atomic_load(&g->measuring);
        double t0 = now_ms();
        if (g->s->begin(c) || g->s->insert_crashes(c, &one, 1) || g->s->commit(c))
            g->s->rollback(c);
        double dt = now_ms() - t0;
        if (m && atomic_load(&g->measuring)) {
            if (dt > g->worst_ms)
                g->worst_ms = dt;
            g->commits++;
        }
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    g->s->disconnect(c);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: mergebench DIR [N]\n");
        return 2;
    }
    size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
    for (size_t i = 0; i < sizeof g_raw; i++)
        g_raw[i] = (char)('a' + (i * 7 + i / 13) % 26);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/mergebench.db", argv[1]);
    fl_store *s = fl_store_sqlite_open(path, err, sizeof err);
    fl_store_conn *c = s ? s->connect(s) : NULL;
    if (!c) {
        fprintf(stderr, "mergebench: %s\n", s ? "connect" : err);
        return 1;
    }
    double t0 = now_ms();
    if (store_batch(s, c, "small", 0, 100))
        return 1;
    for (size_t i = 0; i < n; i += 1000)
        if (store_batch(s, c, "big", i, n - i < 1000 ? n - i : 1000)) {
            fprintf(stderr, "mergebench: store: %s\n", s->error(c));
            return 1;
        }
    printf("stored %zu + 100 crashes in %.1f s\n", n, (now_ms() - t0) / 1e3);

    ingester g = {.s = s};
    pthread_t th;
    pthread_create(&th, NULL, ingest_main, &g);
    nanosleep(&(struct timespec){0, 200000000}, NULL);
    for (int round = 0; round < 2; round++) {
        g.worst_ms = 0;
        g.commits = 0;
        atomic_store(&g.measuring, true);
        char from[64] = "", **ids = NULL;
        size_t nids = 0;
        t0 = now_ms();
        int rc = s->begin(c);
        if (!rc)
            rc = round == 0 ? s->merge_group(c, "small", "big")
                            : s->unmerge_group(c, "big", from, &ids, &nids);
        if (rc || s->commit(c)) {
            fprintf(stderr, "mergebench: %s: %d %s\n", round ? "unmerge" : "merge", rc,
                    s->error(c));
            return 1;
        }
        double dt = now_ms() - t0;
        nanosleep(&(struct timespec){0, 50000000}, NULL);
        atomic_store(&g.measuring, false);
        printf("%s of a group of %zu crashes: %.1f ms in one transaction (%zu crashes to process "
               "again); longest ingest commit meanwhile %.1f ms (%ld commits)\n",
               round ? "unmerge" : "merge", n, dt, nids, g.worst_ms, g.commits);
        for (size_t i = 0; i < nids; i++)
            free(ids[i]);
        free(ids);
        bool nf;
        t0 = now_ms();
        json_t *l = s->group_crashes(c, "small", NULL, 50, 0, &nf);
        dt = now_ms() - t0;
        printf("  then group_crashes(small) first page: %.1f ms, total %lld\n", dt,
               l ? (long long)json_integer_value(json_object_get(l, "total")) : -1LL);
        json_decref(l);
        t0 = now_ms();
        l = s->get_group(c, "small", &nf);
        printf("  get_group(small): %.1f ms, count %lld\n", now_ms() - t0,
               l ? (long long)json_integer_value(json_object_get(l, "count")) : -1LL);
        json_decref(l);
        fl_group_filter f = {.limit = 50};
        t0 = now_ms();
        l = s->list_groups(c, &f);
        printf("  list_groups: %.1f ms\n", now_ms() - t0);
        json_decref(l);
    }
    atomic_store(&g.stop, true);
    pthread_join(th, NULL);
    s->disconnect(c);
    s->close(s);
    return 0;
}
