/*
 * Unit tests of the SQLite store and the embedded queue through their
 * interfaces: idempotent ingest, exactly-once apply, leases, regressions,
 * raw logs compressed in chunks.
 */
#define _GNU_SOURCE /* memmem */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "fl_queue.h"
#include "fl_srvutil.h"
#include "fl_store.h"

typedef struct fx {
    char dir[64];
    char path[128];
    fl_store *s;
    fl_queue *q;
    fl_store_conn *c;
} fx;

static int setup(void **st)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/fl-store-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/t.db", f->dir);
    char err[256];
    f->s = fl_store_sqlite_open(f->path, err, sizeof err);
    f->q = fl_queue_embedded_new();
    f->c = f->s ? f->s->connect(f->s) : NULL;
    *st = f;
    return f->c ? 0 : -1;
}

/* Removes a closed database's files: the -wal and -shm files, and the
 * snapshot of its crash ids a clean close may leave. */
static void remove_db(const char *path)
{
    char p[160];
    const char *sfx[] = {"", "-wal", "-shm", ".ids", ".ids.tmp"};
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
}

static int teardown(void **st)
{
    fx *f = *st;
    f->s->disconnect(f->c);
    f->q->close(f->q);
    f->s->close(f->s);
    remove_db(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Ingest one crash (as the writer does); returns whether it was stored,
 * and what names it to the queue in ref (when not NULL). */
static bool ingest_ref(fx *f, const char *id, const char *version, char ref[FL_CRASH_ID_MAX])
{
    const char *raw = "FAULTLINE 1\nCRASHLOG_VERSION 2\nEND\n";
    fl_ingest_item it = {.app = "app", .version = version, .received = 1700000000,
                         .raw = raw, .raw_len = strlen(raw)};
    fl_ingest_item *one = &it;
    snprintf(it.crash_id, sizeof it.crash_id, "%s", id);
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->insert_crashes(f->c, &one, 1), 0);
    if (!it.duplicate) {
        assert_true(it.ref[0] != '\0');
        assert_int_equal(f->q->enqueue(f->q, f->c, it.ref), 0);
    }
    assert_int_equal(f->s->commit(f->c), 0);
    if (ref)
        snprintf(ref, FL_CRASH_ID_MAX, "%s", it.duplicate ? "" : it.ref);
    return !it.duplicate;
}

static bool ingest(fx *f, const char *id, const char *version)
{
    return ingest_ref(f, id, version, NULL);
}

/* Process the report that ref names (NULL: the crash id does), as the
 * worker does with a task. */
static int64_t scalar(fx *f, const char *sql);

static int apply_ref(fx *f, const char *ref, const char *id, const char *group,
                     const char *version, const char *install)
{
    fl_processed p = {.crash_id = id, .ref = ref, .group_id = group, .signature = "a | b",
                      .stack_hash = "h", .app = "app", .version = version, .os = "linux",
                      .install_id = install, .received = 1700000000, .frames_json = "[]"};
    assert_int_equal(f->s->begin(f->c), 0);
    int r = f->s->apply(f->c, &p);
    assert_true(r == 0 || r == 1);
    assert_int_equal(f->s->commit(f->c), 0);
    return r;
}

static void apply(fx *f, const char *id, const char *group, const char *version,
                  const char *install)
{
    fl_processed p = {.crash_id = id, .group_id = group, .signature = "a | b",
                      .stack_hash = "h", .app = "app", .version = version, .os = "linux",
                      .install_id = install, .received = 1700000000, .frames_json = "[]"};
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->apply(f->c, &p), 0);
    assert_int_equal(f->s->commit(f->c), 0);
}

static json_t *group(fx *f, const char *id)
{
    bool nf;
    json_t *g = f->s->get_group(f->c, id, &nf);
    assert_non_null(g);
    return g;
}

/* Every per-crash statement seeks through an index (a full scan made
 * processing quadratic once: DELETE FROM crash_missing WHERE crash_id=?). */
static void test_no_full_scans(void **st)
{
    fx *f = *st;
    char bad[512];
    int n = fl_store_sqlite_full_scans(f->c, bad, sizeof bad);
    if (n != 0)
        fail_msg("%d statement(s) scan a whole table, first: %s", n, bad);
}

/* Exactly once per crash id.  A resend that arrives before the first copy
 * is processed is stored again (ingest checks only processed crashes: see
 * s_insert_crashes) and dropped when its task runs; one that arrives after
 * is refused at ingest; a task delivered twice counts once. */
static void test_idempotent(void **st)
{
    fx *f = *st;
    char r1[FL_CRASH_ID_MAX], r1b[FL_CRASH_ID_MAX], r2[FL_CRASH_ID_MAX];
    assert_true(ingest_ref(f, "c1", "1.0", r1));
    assert_true(ingest_ref(f, "c1", "1.0", r1b)); /* resent before processing */
    assert_true(ingest_ref(f, "c2", "1.0", r2));
    assert_string_not_equal(r1, r1b);
    assert_int_equal(f->q->depth(f->q, f->c), 3);
    /* A task's ref reads the report back, and says which crash it is. */
    char *raw = NULL, id[FL_CRASH_ID_MAX] = "";
    size_t len;
    int64_t rcv = 0;
    assert_int_equal(f->s->load_raw(f->c, r2, &raw, &len, &rcv, id, NULL), 0);
    assert_string_equal(id, "c2");
    assert_int_equal(rcv, 1700000000);
    assert_string_equal(raw, "FAULTLINE 1\nCRASHLOG_VERSION 2\nEND\n");
    free(raw);
    raw = NULL;
    assert_int_equal(apply_ref(f, r1, "c1", "g1", "1.0", "i1"), 0);
    assert_int_equal(apply_ref(f, r1, "c1", "g1", "1.0", "i1"), 0);  /* the same task again */
    assert_int_equal(apply_ref(f, r1b, "c1", "g1", "1.0", "i1"), 1); /* the resend: dropped */
    assert_int_equal(apply_ref(f, r1b, "c1", "g1", "1.0", "i1"), 0); /* ... and gone */
    assert_int_equal(apply_ref(f, r2, "c2", "g1", "1.0", "i1"), 0);
    apply(f, "nope", "g1", "1.0", "i1"); /* unknown crash: nothing */
    json_t *g = group(f, "g1");
    assert_int_equal(json_integer_value(json_object_get(g, "count")), 2);
    assert_int_equal(json_integer_value(json_object_get(g, "affected")), 1);
    json_decref(g);
    assert_int_equal(scalar(f, "SELECT count(*) FROM crashes"), 2);
    assert_int_equal(scalar(f, "SELECT count(*) FROM inbox"), 0); /* all moved or dropped */
    assert_false(ingest(f, "c1", "1.0")); /* processed: a resend now is refused */
    assert_int_equal(f->s->load_raw(f->c, r1b, &raw, &len, &rcv, NULL, NULL), 1);  /* dropped */
    assert_int_equal(f->s->load_raw(f->c, "c1", &raw, &len, &rcv, NULL, NULL), 2); /* processed */
    assert_int_equal(f->s->load_raw(f->c, "zz", &raw, &len, &rcv, NULL, NULL), 1); /* unknown */
    assert_int_equal(f->s->load_raw(f->c, "#999", &raw, &len, &rcv, NULL, NULL), 1);
    assert_int_equal(f->s->load_raw(f->c, "#x", &raw, &len, &rcv, NULL, NULL), 1);
    assert_null(raw);
}

/* Ingest appends to a table with no index at all: an index on the random
 * crash ids there would cost a page write per report again. */
static void test_inbox_unindexed(void **st)
{
    fx *f = *st;
    assert_int_equal(
        scalar(f, "SELECT count(*) FROM sqlite_master WHERE type='index' AND tbl_name='inbox'"), 0);
    /* A pending crash is still found by its id (API): from the inbox. */
    assert_true(ingest(f, "p1", "1.0"));
    bool nf = true;
    json_t *c = f->s->get_crash(f->c, "p1", &nf);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "state")), "pending");
    assert_string_equal(json_string_value(json_object_get(c, "raw")),
                        "FAULTLINE 1\nCRASHLOG_VERSION 2\nEND\n");
    json_decref(c);
    assert_null(f->s->get_crash(f->c, "p2", &nf));
    assert_true(nf);
}

static int64_t count_of(fx *f, const char *gid);

/* The trace hook of the tests of reads racing a worker: when the
 * reader's statement whose SQL contains `on` starts, crash `id` is
 * processed into group `group` (installation `install`) on another
 * connection, as a worker may at that very moment. */
typedef struct mover {
    fl_store *s;
    fl_store_conn *w;
    const char *on, *id, *group, *install;
    bool moved;
} mover;

static int move_on(unsigned type, void *ctx, void *p, void *x)
{
    (void)x;
    mover *m = ctx;
    const char *sql = type == SQLITE_TRACE_STMT ? sqlite3_sql(p) : NULL;
    if (!m->moved && sql && strstr(sql, m->on)) {
        m->moved = true;
        fl_processed pr = {.crash_id = m->id,
                           .group_id = m->group,
                           .signature = "a | b",
                           .stack_hash = "h",
                           .app = "app",
                           .version = "1.0",
                           .os = "linux",
                           .install_id = m->install,
                           .received = 1700000000,
                           .frames_json = "[]"};
        assert_int_equal(m->s->begin(m->w), 0);
        assert_int_equal(m->s->apply(m->w, &pr), 0);
        assert_int_equal(m->s->commit(m->w), 0);
    }
    return 0;
}

/* A worker's connection, and the hook set on the fixture's: it processes
 * crash id when the fixture's statement containing on starts. */
static mover race_on(fx *f, const char *on, const char *id, const char *group, const char *install)
{
    mover m = {.s = f->s,
               .w = f->s->connect(f->s),
               .on = on,
               .id = id,
               .group = group,
               .install = install};
    assert_non_null(m.w);
    return m;
}

static void race_start(fx *f, mover *m)
{
    sqlite3 *db = fl_store_sqlite_db(f->c);
    assert_int_equal(sqlite3_trace_v2(db, SQLITE_TRACE_STMT, move_on, m), SQLITE_OK);
}

/* The hook off; it ran (the read reached that statement). */
static void race_end(fx *f, mover *m)
{
    sqlite3_trace_v2(fl_store_sqlite_db(f->c), 0, NULL, NULL);
    assert_true(m->moved);
    f->s->disconnect(m->w);
}

/* A crash processed while the API looks it up is found, pending or
 * processed: both lookups (crashes, then the inbox) see one snapshot.
 * Without one, the first missed it in crashes and the second in the
 * inbox, and GET /api/v1/crashes/{id} answered 404 (seen once in CI). */
static void test_get_crash_while_processed(void **st)
{
    fx *f = *st;
    assert_true(ingest(f, "race1", "1.0"));
    mover m = race_on(f, "FROM inbox WHERE id=?1", "race1", "g1", "i1");
    race_start(f, &m);
    bool nf = true;
    json_t *c = f->s->get_crash(f->c, "race1", &nf);
    race_end(f, &m); /* the hook ran: the lookup went to the inbox */
    assert_non_null(c);
    assert_false(nf);
    json_decref(c);
    /* And now, from crashes. */
    c = f->s->get_crash(f->c, "race1", &nf);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "state")), "processed");
    json_decref(c);
}

/* A group read while a crash of it is processed adds up: its count is the
 * sum of its days (and versions), all read in one snapshot.  Without one,
 * the crash processed after the group's row was read showed in its
 * breakdowns and not in its count. */
static void test_get_group_while_processed(void **st)
{
    fx *f = *st;
    assert_true(ingest(f, "gr1", "1.0"));
    assert_true(ingest(f, "gr2", "1.0"));
    apply(f, "gr1", "g1", "1.0", "i1");
    mover m = race_on(f, "FROM group_days", "gr2", "g1", "i2");
    race_start(f, &m);
    json_t *g = group(f, "g1");
    race_end(f, &m);
    json_int_t n = json_integer_value(json_object_get(g, "count"));
    json_t *d = json_array_get(json_object_get(g, "days"), 0);
    json_t *v = json_array_get(json_object_get(g, "versions"), 0);
    assert_int_equal(json_integer_value(json_object_get(d, "count")), n);
    assert_int_equal(json_integer_value(json_object_get(v, "count")), n);
    assert_int_equal(json_array_size(json_object_get(g, "sample_crashes")), n);
    json_decref(g);
    assert_int_equal(count_of(f, "g1"), 2); /* and then, the crash processed */
}

/* A group's crashes read while one more is processed: "total" counts
 * the crashes listed (a page holds them all here).  Without one snapshot,
 * the total was read before the crash came and the page after. */
static void test_group_crashes_while_processed(void **st)
{
    fx *f = *st;
    assert_true(ingest(f, "gc1", "1.0"));
    assert_true(ingest(f, "gc2", "1.0"));
    apply(f, "gc1", "g1", "1.0", "i1");
    mover m = race_on(f, "LIMIT ?2 OFFSET ?3", "gc2", "g1", "i1");
    race_start(f, &m);
    bool nf = true;
    json_t *j = f->s->group_crashes(f->c, "g1", NULL, 50, 0, &nf);
    race_end(f, &m);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "total")),
                     json_array_size(json_object_get(j, "crashes")));
    json_decref(j);
}

/* The list of groups read while a crash makes a new group: "total"
 * counts the groups listed (one page holds them all).  Without one
 * snapshot, the page was read before the group came and the total
 * after. */
static void test_list_groups_while_processed(void **st)
{
    fx *f = *st;
    assert_true(ingest(f, "lg1", "1.0"));
    assert_true(ingest(f, "lg2", "1.0"));
    apply(f, "lg1", "g1", "1.0", "i1");
    mover m = race_on(f, "SELECT count(*) FROM groups g", "lg2", "g2", "i1");
    race_start(f, &m);
    fl_group_filter flt = {.limit = 10};
    json_t *l = f->s->list_groups(f->c, &flt);
    race_end(f, &m);
    assert_non_null(l);
    assert_int_equal(json_integer_value(json_object_get(l, "total")),
                     json_array_size(json_object_get(l, "groups")));
    json_decref(l);
}

/* Trends read while a crash of a new installation is processed: a day
 * has no more installations that crashed than crashes.  Without one
 * snapshot, the crashes were read before it came and the installations
 * after. */
static void test_trends_while_processed(void **st)
{
    fx *f = *st;
    assert_true(ingest(f, "tr1", "1.0"));
    assert_true(ingest(f, "tr2", "1.0"));
    apply(f, "tr1", "g1", "1.0", "i1");
    mover m = race_on(f, "FROM app_installs", "tr2", "g1", "i2");
    race_start(f, &m);
    json_t *t = f->s->trends(f->c, "app", "2023-01-01");
    race_end(f, &m);
    assert_non_null(t);
    json_int_t crashes = 0;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(t, "rows"), i, row)
    {
        if (!strcmp(json_string_value(json_array_get(row, 1)), "c"))
            crashes = json_integer_value(json_array_get(row, 3));
    }
    assert_int_equal(json_array_size(json_object_get(t, "installs")), 1); /* one day */
    json_t *day = json_array_get(json_object_get(t, "installs"), 0);
    assert_true(json_integer_value(json_array_get(day, 1)) <= crashes);
    json_decref(t);
}

static void test_leases(void **st)
{
    fx *f = *st;
    ingest(f, "t1", "1.0");
    ingest(f, "t2", "1.0");
    fl_task t[8];
    size_t n;
    assert_int_equal(f->q->claim(f->q, f->c, 60, 8, t, &n), 0);
    assert_int_equal(n, 2);
    /* Leased: nobody else gets them. */
    assert_int_equal(f->q->claim(f->q, f->c, 60, 8, t + 2, &n), 0);
    assert_int_equal(n, 0);
    /* Ack one in the apply transaction; forget the other's lease (the
     * worker died): it is delivered again, and applying twice is harmless. */
    fl_processed p = {.crash_id = t[0].crash_id, .group_id = "g", .signature = "s",
                      .stack_hash = "h", .received = 1};
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->apply(f->c, &p), 0);
    assert_int_equal(f->q->ack(f->q, f->c, &t[0]), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(f->q->release_all(f->q, f->c), 0);
    assert_int_equal(f->q->claim(f->q, f->c, 60, 8, t + 2, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(t[2].crash_id, t[1].crash_id);
    /* A lease of 0 s expires at once. */
    assert_int_equal(f->q->release_all(f->q, f->c), 0);
    assert_int_equal(f->q->claim(f->q, f->c, 0, 8, t + 3, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(f->q->claim(f->q, f->c, 0, 8, t + 3, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(f->q->depth(f->q, f->c), 1);
}

/* Crash id of version into group "gr"; then the group's status, latest
 * version and number of versions are these. */
static void crash_in_gr(fx *f, const char *id, const char *version, const char *status,
                        const char *latest, size_t nversions)
{
    ingest(f, id, version);
    apply(f, id, "gr", version, NULL);
    json_t *g = group(f, "gr");
    assert_string_equal(json_string_value(json_object_get(g, "status")), status);
    assert_string_equal(json_string_value(json_object_get(g, "latest_version")), latest);
    assert_int_equal(json_array_size(json_object_get(g, "versions")), nversions);
    json_decref(g);
}

static void test_regression(void **st)
{
    fx *f = *st;
    ingest(f, "r1", "1.2");
    apply(f, "r1", "gr", "1.2", NULL);
    assert_int_equal(f->s->set_status(f->c, "gr", "resolved", NULL), 0);
    assert_int_equal(f->s->set_status(f->c, "nope", "resolved", NULL), 1);
    json_t *g = group(f, "gr");
    assert_string_equal(json_string_value(json_object_get(g, "resolved_in")), "1.2");
    json_decref(g);
    /* An older version than the fix stays resolved; a newer one (compared
     * as versions: 1.10 > 1.2) regresses the group. */
    crash_in_gr(f, "r2", "1.1", "resolved", "1.2", 2);
    crash_in_gr(f, "r3", "1.10", "regressed", "1.10", 3);
    fl_group_filter flt = {.status = "regressed", .limit = 10};
    json_t *l = f->s->list_groups(f->c, &flt);
    assert_int_equal(json_array_size(json_object_get(l, "groups")), 1);
    json_decref(l);
    flt.status = NULL;
    flt.version = "9.9";
    l = f->s->list_groups(f->c, &flt);
    assert_int_equal(json_array_size(json_object_get(l, "groups")), 0);
    json_decref(l);
}

/* Apply with the build ids that had no symbols. */
static void apply_missing(fx *f, const char *id, const char *group, const char *missing,
                          const char *install)
{
    const char *m[1] = {missing};
    fl_processed p = {.crash_id = id, .group_id = group, .signature = group,
                      .stack_hash = "h", .app = "app", .version = "1.0", .os = "linux",
                      .install_id = install, .received = 1700000000, .frames_json = "[]",
                      .missing_build_ids = m, .nmissing = missing ? 1 : 0};
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->apply(f->c, &p), 0);
    assert_int_equal(f->s->commit(f->c), 0);
}

static int64_t count_of(fx *f, const char *gid)
{
    bool nf;
    json_t *g = f->s->get_group(f->c, gid, &nf);
    if (!g)
        return nf ? -1 : -2;
    int64_t n = json_integer_value(json_object_get(g, "count"));
    json_t *d = json_array_get(json_object_get(g, "days"), 0);
    json_t *v = json_array_get(json_object_get(g, "versions"), 0);
    /* The breakdowns move with the count. */
    assert_int_equal(json_integer_value(json_object_get(d, "count")), n);
    assert_int_equal(json_integer_value(json_object_get(v, "count")), n);
    json_decref(g);
    return n;
}

static int64_t affected_of(fx *f, const char *gid)
{
    bool nf;
    json_t *g = f->s->get_group(f->c, gid, &nf);
    assert_non_null(g);
    int64_t n = json_integer_value(json_object_get(g, "affected"));
    json_decref(g);
    return n;
}

/* Symbols arrive for build id B: crashes that lacked them are marked,
 * re-processed and moved to their new group with exact counts, once. */
static void test_backfill_regroup(void **st)
{
    fx *f = *st;
    ingest(f, "b1", "1.0");
    ingest(f, "b2", "1.0");
    ingest(f, "b3", "1.0");
    apply_missing(f, "b1", "gold", "bbbb", "i1");
    apply_missing(f, "b2", "gold", "bbbb", "i2");
    apply_missing(f, "b3", "gother", "cccc", "i1");
    assert_int_equal(count_of(f, "gold"), 2);
    assert_int_equal(affected_of(f, "gold"), 2);

    char **ids = NULL;
    size_t n = 0;
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->symbols_arrived(f->c, "bbbb", 100, &ids, &n), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);

    char *raw = NULL;
    size_t len;
    int64_t rcv;
    assert_int_equal(f->s->load_raw(f->c, "b1", &raw, &len, &rcv, NULL, NULL), 3); /* marked */
    free(raw);
    assert_int_equal(f->s->load_raw(f->c, "b3", &raw, &len, &rcv, NULL, NULL), 2); /* not marked */

    fl_processed p = {.crash_id = "b1", .group_id = "gnew", .signature = "named",
                      .stack_hash = "h2", .app = "app", .version = "1.0", .os = "linux",
                      .install_id = "i1", .received = 1700000000,
                      .frames_json = "[{\"function\":\"f\"}]"};
    for (int twice = 0; twice < 2; twice++) { /* a redelivered task moves it once */
        assert_int_equal(f->s->begin(f->c), 0);
        assert_int_equal(f->s->reapply(f->c, &p), 0);
        assert_int_equal(f->s->commit(f->c), 0);
    }
    assert_int_equal(count_of(f, "gold"), 1);
    assert_int_equal(count_of(f, "gnew"), 1);
    assert_int_equal(affected_of(f, "gold"), 1); /* i1 left with b1 */
    assert_int_equal(affected_of(f, "gnew"), 1);
    p.crash_id = "b2";
    p.install_id = "i2";
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->reapply(f->c, &p), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(count_of(f, "gold"), -1); /* emptied: deleted */
    assert_int_equal(count_of(f, "gnew"), 2);
    assert_int_equal(affected_of(f, "gnew"), 2);
    assert_int_equal(count_of(f, "gother"), 1);
    bool nf;
    json_t *c = f->s->get_crash(f->c, "b2", &nf);
    assert_string_equal(json_string_value(json_object_get(c, "group_id")), "gnew");
    json_decref(c);
    assert_int_equal(f->s->load_raw(f->c, "b2", &raw, &len, &rcv, NULL, NULL), 2); /* done */
    /* Symbols listing. */
    fl_symbol_rec r = {.build_id = "bbbb", .name = "a.debug", .size = 10, .status = "ok",
                       .kind = "debuginfo", .path = "/x/bbbb/debuginfo", .uploaded = 1};
    assert_int_equal(f->s->add_symbol(f->c, &r), 0);
    char path[64];
    assert_int_equal(f->s->find_symbol(f->c, "bbbb", NULL, path, sizeof path), 0);
    assert_string_equal(path, "/x/bbbb/debuginfo");
    assert_int_equal(f->s->find_symbol(f->c, "bbbb", "executable", path, sizeof path), 1);
    json_t *l = f->s->list_symbols(f->c, 10);
    assert_int_equal(json_array_size(json_object_get(l, "symbols")), 1);
    json_decref(l);

    /* A crash processed while its symbols arrived: re-queued once. */
    int64_t v0, v1;
    assert_int_equal(f->s->symbols_version(f->c, &v0), 0);
    ingest(f, "b4", "1.0");
    fl_symbol_rec r2 = {.build_id = "dddd", .name = "d.debug", .size = 1, .status = "ok",
                        .uploaded = 2};
    assert_int_equal(f->s->add_symbol(f->c, &r2), 0); /* arrives meanwhile */
    const char *m[1] = {"dddd"};
    fl_processed p4 = {.crash_id = "b4", .group_id = "g4", .signature = "s4", .stack_hash = "h",
                       .received = 1700000000, .missing_build_ids = m, .nmissing = 1};
    bool rq = false;
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->apply(f->c, &p4), 0);
    assert_int_equal(f->s->late_symbols(f->c, &p4, v0, &rq), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_true(rq);
    assert_int_equal(f->s->load_raw(f->c, "b4", &raw, &len, &rcv, NULL, NULL), 3);
    free(raw);
    assert_int_equal(f->s->symbols_version(f->c, &v1), 0);
    assert_true(v1 > v0);
    assert_int_equal(f->s->late_symbols(f->c, &p4, v1, &rq), 0); /* seen it: no loop */
    assert_false(rq);
}

/* A log of n bytes whose content depends on seed (not all alike, so that a
 * slice taken at the wrong offset cannot pass). */
static char *make_log(unsigned seed, size_t n)
{
    char *b = malloc(n + 1);
    assert_non_null(b);
    size_t k = (size_t)snprintf(b, n + 1, "FAULTLINE 1\nCRASHLOG_VERSION 2\nCRASH_ID s%u\n", seed);
    uint32_t x = seed * 2654435761u + 1;
    for (; k < n; k++) {
        x = x * 1103515245u + 12345u;
        b[k] = (k % 64 == 63) ? '\n' : (char)('a' + (x >> 16) % 26);
    }
    b[n] = '\0';
    return b;
}

static int64_t scalar(fx *f, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(fl_store_sqlite_db(f->c), sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void expect_raw(fx *f, const char *id, const char *want, size_t wlen)
{
    char *raw = NULL;
    size_t len = 0;
    int64_t rcv = 0;
    assert_int_equal(f->s->load_raw(f->c, id, &raw, &len, &rcv, NULL, NULL), 0);
    assert_int_equal(len, wlen);
    assert_memory_equal(raw, want, wlen);
    assert_int_equal(rcv, 1700000000);
    free(raw);
}

/* One batch: logs compressed together, each read back exactly; duplicates
 * (known before, and twice in the batch) flagged and stored once; a batch
 * larger than a chunk is split, and a log larger than a chunk stands
 * alone. */
static void test_chunks(void **st)
{
    fx *f = *st;
    assert_true(ingest(f, "known", "1.0"));
    apply(f, "known", "g", "1.0", "i");
    enum { N = 90 };
    static const size_t sizes[N] = {[7] = 300000, [8] = 17}; /* others: 5000 + i */
    fl_ingest_item it[N];
    fl_ingest_item *v[N];
    char *logs[N];
    memset(it, 0, sizeof it);
    for (int i = 0; i < N; i++) {
        size_t n = sizes[i] ? sizes[i] : 5000 + (size_t)i;
        logs[i] = make_log((unsigned)i, n);
        snprintf(it[i].crash_id, sizeof it[i].crash_id, "k%d", i);
        it[i].app = "app";
        it[i].received = 1700000000;
        it[i].raw = logs[i];
        it[i].raw_len = n;
        v[i] = &it[i];
    }
    snprintf(it[3].crash_id, sizeof it[3].crash_id, "known");
    snprintf(it[50].crash_id, sizeof it[50].crash_id, "k10"); /* twice in the batch */
    int64_t chunks0 = scalar(f, "SELECT count(*) FROM raw_chunks");
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->insert_crashes(f->c, v, N), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(it[i].duplicate, i == 3 || i == 50);
    /* 89 logs of ~5 KB and one of 300 KB: at least 3 chunks of <= 256 KiB. */
    int64_t chunks = scalar(f, "SELECT count(*) FROM raw_chunks") - chunks0;
    assert_true(chunks >= 3);
    assert_true(chunks <= 5);
    assert_int_equal(scalar(f, "SELECT count(*) FROM inbox"), N - 2); /* but the 2 dups */
    /* Read back in a scattered order, so the chunk cache is both hit and
     * missed. */
    for (int k = 0; k < N; k++) {
        int i = (k * 37) % N;
        if (i == 3 || i == 50)
            continue;
        expect_raw(f, it[i].crash_id, logs[i], it[i].raw_len);
    }
    bool nf = true;
    json_t *c = f->s->get_crash(f->c, "k7", &nf);
    assert_non_null(c);
    assert_false(nf);
    assert_int_equal(json_string_length(json_object_get(c, "raw")), sizes[7]);
    assert_memory_equal(json_string_value(json_object_get(c, "raw")), logs[7], sizes[7]);
    json_decref(c);
    for (int i = 0; i < N; i++)
        free(logs[i]);
}

/* Each stored report's ref is "#" and its inbox rowid, in decimal, for
 * small rowids and for rowids near the top of the range (a database can
 * get there: rowids are not reused in order once the largest is taken). */
static void test_refs(void **st)
{
    fx *f = *st;
    sqlite3 *db = fl_store_sqlite_db(f->c);
    static const int64_t starts[] = {0, 9, 99999, 9223372036854775000LL};
    for (size_t k = 0; k < sizeof starts / sizeof *starts; k++) {
        if (starts[k]) {
            char sql[160];
            snprintf(sql, sizeof sql,
                     "INSERT INTO inbox(rid, id, received, raw_len, chunk, chunk_off) "
                     "VALUES(%lld, 'pad%zu', 0, 0, 0, 0)",
                     (long long)starts[k], k);
            assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        }
        enum { N = 3 };
        fl_ingest_item it[N];
        fl_ingest_item *v[N];
        memset(it, 0, sizeof it);
        for (int i = 0; i < N; i++) {
            snprintf(it[i].crash_id, sizeof it[i].crash_id, "r%zu-%d", k, i);
            it[i].app = "app";
            it[i].received = 1700000000;
            it[i].raw = "FAULTLINE 1\nEND\n";
            it[i].raw_len = 16;
            v[i] = &it[i];
        }
        assert_int_equal(f->s->begin(f->c), 0);
        assert_int_equal(f->s->insert_crashes(f->c, v, N), 0);
        assert_int_equal(f->s->commit(f->c), 0);
        for (int i = 0; i < N; i++) {
            sqlite3_stmt *q = NULL;
            assert_int_equal(
                sqlite3_prepare_v2(db, "SELECT rid FROM inbox WHERE id=?1", -1, &q, NULL),
                SQLITE_OK);
            sqlite3_bind_text(q, 1, it[i].crash_id, -1, SQLITE_STATIC);
            assert_int_equal(sqlite3_step(q), SQLITE_ROW);
            char want[FL_CRASH_ID_MAX];
            snprintf(want, sizeof want, "#%lld", (long long)sqlite3_column_int64(q, 0));
            sqlite3_finalize(q);
            assert_string_equal(it[i].ref, want);
            if (starts[k])
                assert_true(atoll(it[i].ref + 1) > starts[k]);
        }
    }
}

static void wait_ready(fx *f, fl_store_known_info *ki)
{
    for (int i = 0; i < 1000; i++) {
        fl_store_sqlite_known_info(f->s, ki);
        if (ki->ready)
            return;
        usleep(10000);
    }
    fail_msg("the filter of stored crash ids was not loaded within 10 s");
}

/* Ingest looks a crash id up among those stored only when the filter of
 * stored ids cannot rule it out: new ids are (nearly) never looked up,
 * resends always are and are still flagged, before and after a restart
 * (when the filter is loaded from the database). */
static void test_known_filter(void **st)
{
    fx *f = *st;
    fl_store_known_info ki;
    fl_store_sqlite_known_info(f->s, &ki);
    assert_false(ki.ready); /* nothing ingested yet: not even started */
    assert_int_equal(ki.bytes, 0);
    assert_true(ingest(f, "old1", "1.0")); /* starts it */
    apply(f, "old1", "g", "1.0", "i");
    assert_true(ingest(f, "pend1", "1.0")); /* stays in the inbox */
    wait_ready(f, &ki);
    assert_true(ki.bytes > 0);
    int64_t l0 = ki.lookups;
    char id[32];
    for (int i = 0; i < 500; i++) {
        snprintf(id, sizeof id, "new-%d", i);
        assert_true(ingest(f, id, "1.0"));
    }
    fl_store_sqlite_known_info(f->s, &ki);
    assert_true(ki.lookups - l0 <= 25); /* ~1 % false positives, not 500 */
    assert_true(ki.ids >= 502);
    int64_t l1 = ki.lookups;
    assert_false(ingest(f, "old1", "1.0")); /* processed: flagged, not stored */
    fl_store_sqlite_known_info(f->s, &ki);
    assert_int_equal(ki.lookups, l1 + 1);

    f->s->disconnect(f->c);
    f->s->close(f->s);
    /* As after a crash: no snapshot of the filter (test_known_snapshot). */
    char err[256], snap[200];
    snprintf(snap, sizeof snap, "%s.ids", f->path);
    assert_int_equal(unlink(snap), 0);
    assert_non_null(f->s = fl_store_sqlite_open(f->path, err, sizeof err));
    assert_non_null(f->c = f->s->connect(f->s));
    assert_true(ingest(f, "after-restart", "1.0")); /* starts the loader */
    wait_ready(f, &ki);
    assert_false(ki.from_snapshot);
    assert_true(ki.ids >= 502); /* the inbox and crashes, loaded */
    int64_t l2 = ki.lookups;
    assert_false(ingest(f, "old1", "1.0"));
    /* Pending, not processed: stored again, as without the filter
     * (processing drops the second copy). */
    assert_true(ingest(f, "pend1", "1.0"));
    fl_store_sqlite_known_info(f->s, &ki);
    assert_int_equal(ki.lookups, l2 + 2); /* both known to the filter */
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof id, "new2-%d", i);
        assert_true(ingest(f, id, "1.0"));
    }
    fl_store_sqlite_known_info(f->s, &ki);
    assert_true(ki.lookups - l2 - 2 <= 15);
}

static void reopen(fx *f)
{
    char err[256];
    f->s->disconnect(f->c);
    f->s->close(f->s);
    assert_non_null(f->s = fl_store_sqlite_open(f->path, err, sizeof err));
    assert_non_null(f->c = f->s->connect(f->s));
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Flips one bit in the middle of a file. */
static void damage(const char *path)
{
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    assert_true(size > 1000);
    fseek(fp, size / 2, SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, size / 2, SEEK_SET);
    fputc(c ^ 0x10, fp);
    fclose(fp);
}

/* A clean close leaves the filter in <db>.ids; the next start's first
 * ingest takes it (no read of the stored ids) and deletes it, so a crash
 * after that starts with the read again.  A damaged snapshot is refused
 * and deleted, and the loader reads the ids instead.  --no-id-filter
 * deletes one, as it would lack what that run stores. */
static void test_known_snapshot(void **st)
{
    fx *f = *st;
    char snap[200];
    snprintf(snap, sizeof snap, "%s.ids", f->path);
    fl_store_known_info ki;
    assert_true(ingest(f, "old1", "1.0"));
    apply(f, "old1", "g", "1.0", "i");
    assert_true(ingest(f, "pend1", "1.0"));
    wait_ready(f, &ki);
    char id[32];
    for (int i = 0; i < 200; i++) {
        snprintf(id, sizeof id, "snap-%d", i);
        assert_true(ingest(f, id, "1.0"));
    }
    fl_store_sqlite_known_info(f->s, &ki);
    size_t saved = ki.ids;
    assert_false(exists(snap));
    reopen(f);
    assert_true(exists(snap));
    fl_store_sqlite_known_info(f->s, &ki);
    assert_false(ki.ready); /* taken by the first ingest, not at open */
    assert_true(ingest(f, "after", "1.0"));
    fl_store_sqlite_known_info(f->s, &ki);
    assert_true(ki.ready && ki.from_snapshot);
    assert_int_equal(ki.ids, saved + 1); /* the saved filter, plus "after" */
    assert_false(exists(snap));
    int64_t l0 = ki.lookups;
    assert_false(ingest(f, "old1", "1.0")); /* processed: still flagged */
    assert_true(ingest(f, "pend1", "1.0"));
    for (int i = 0; i < 200; i++) {
        snprintf(id, sizeof id, "snap-%d", i);
        assert_true(ingest(f, id, "1.0")); /* pending: stored again */
    }
    fl_store_sqlite_known_info(f->s, &ki);
    assert_int_equal(ki.lookups, l0 + 202); /* every one known to the filter */
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof id, "fresh-%d", i);
        assert_true(ingest(f, id, "1.0"));
    }
    fl_store_sqlite_known_info(f->s, &ki);
    assert_true(ki.lookups - l0 - 202 <= 15); /* new ids: ruled out, not looked up */

    /* Damaged: the close wrote a good one; one bit flipped in it. */
    reopen(f);
    damage(snap);
    assert_true(ingest(f, "after2", "1.0"));
    assert_false(exists(snap));
    wait_ready(f, &ki);
    assert_false(ki.from_snapshot); /* read from the database instead */
    assert_false(ingest(f, "old1", "1.0"));

    /* --no-id-filter: the snapshot goes. */
    reopen(f);
    assert_true(exists(snap));
    fl_store_sqlite_no_id_filter(f->s);
    assert_false(exists(snap));
    assert_false(ingest(f, "old1", "1.0"));
}

/* The loader reads the database in ranges of 8,192 rows: every id once,
 * across several ranges of both tables. */
static void test_known_filter_ranges(void **st)
{
    fx *f = *st;
    sqlite3 *db = fl_store_sqlite_db(f->c);
    assert_int_equal(
        sqlite3_exec(db,
                     "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)"
                     " INSERT INTO crashes(id, app, received, raw, raw_len, state)"
                     " SELECT printf('c%05d', x), 'app', 1700000000, X'', 0, 1 FROM c;"
                     "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 9000)"
                     " INSERT INTO inbox(id, app, received, raw_len, chunk, chunk_off)"
                     " SELECT printf('i%05d', x), 'app', 1700000000, 0, 0, 0 FROM c;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    assert_true(ingest(f, "start", "1.0")); /* starts the loader */
    fl_store_known_info ki;
    wait_ready(f, &ki);
    /* 29,000 from the database, "start" from ingest (and perhaps from the
     * loader too, if its scan saw the row): each read once. */
    assert_true(ki.ids >= 29001 && ki.ids <= 29002);
    /* Ids from the last range of each table are known: looked up, and the
     * processed one flagged. */
    int64_t l0 = ki.lookups;
    assert_false(ingest(f, "c19999", "1.0"));
    assert_true(ingest(f, "i08999", "1.0")); /* pending: stored again */
    fl_store_sqlite_known_info(f->s, &ki);
    assert_int_equal(ki.lookups, l0 + 2);
}

/* Without the filter (serve --no-id-filter) every id is looked up, and a
 * processed resend is still flagged. */
static void test_no_id_filter(void **st)
{
    fx *f = *st;
    fl_store_sqlite_no_id_filter(f->s);
    assert_true(ingest(f, "x1", "1.0"));
    apply(f, "x1", "g", "1.0", "i");
    char id[32];
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof id, "y-%d", i);
        assert_true(ingest(f, id, "1.0"));
    }
    assert_false(ingest(f, "x1", "1.0"));
    fl_store_known_info ki;
    fl_store_sqlite_known_info(f->s, &ki);
    assert_false(ki.ready);
    assert_int_equal(ki.bytes, 0);
    assert_int_equal(ki.lookups, 22);
}

/* Adds n rows of 3,000 random bytes to the table scratch in one
 * transaction: a WAL frame each. */
static void add_pages(sqlite3 *db, int n)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
             "INSERT INTO scratch SELECT randomblob(3000) FROM n",
             n);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
}

/* Waits (up to 10 s) until the checkpointer's passes, started as `asked`
 * says, reach n; returns what it saw last. */
static fl_store_wal_info wait_passes(fx *f, bool asked, uint64_t n)
{
    fl_store_wal_info wi;
    for (int i = 0; i < 1000; i++) {
        fl_store_sqlite_wal_info(f->s, &wi);
        if ((asked ? wi.passes_asked : wi.passes - wi.passes_asked) >= n)
            return wi;
        usleep(10000);
    }
    fail_msg("the checkpointer made %" PRIu64 " passes (%" PRIu64 " asked), not %" PRIu64,
             wi.passes, wi.passes_asked, n);
    return wi;
}

/* Commits that grow the WAL by 512 KiB ask the checkpointer for a pass
 * (its passes every 200 ms alone let a stream of commits pile up ~3,000
 * pages for one pass, and the commit behind that pass waited for the
 * disk to take them); a small commit does not, and the timer's passes go
 * on.  Without the WAL hook no pass is ever asked. */
static void test_checkpoint_steps(void **st)
{
    fx *f = *st;
    sqlite3 *db = fl_store_sqlite_db(f->c);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE scratch(b BLOB)", NULL, NULL, NULL), SQLITE_OK);
    fl_store_wal_info wi = wait_passes(f, false, 1); /* the timer runs */
    assert_int_equal(wi.passes_asked, 0);
    /* 300 rows of 3,000 bytes: a page each, more than 128 frames. */
    add_pages(db, 300);
    wi = wait_passes(f, true, 1);
    assert_true(wi.wal_frames >= 128);
    /* A small commit asks for nothing: two timer passes later (the first
     * may have begun before it), still one asked. */
    uint64_t timer = wi.passes - wi.passes_asked;
    assert_int_equal(sqlite3_exec(db, "INSERT INTO scratch VALUES (x'00')", NULL, NULL, NULL),
                     SQLITE_OK);
    wi = wait_passes(f, false, timer + 2);
    assert_int_equal(wi.passes_asked, 1);
    /* Another 512 KiB, another pass. */
    add_pages(db, 300);
    wait_passes(f, true, 2);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE scratch", NULL, NULL, NULL), SQLITE_OK);
}

/* Waits (up to 20 s) until the checkpointer's RESTART checkpoints (done,
 * or deferred when `deferred`) reach n. */
static void wait_restarts(fx *f, bool deferred, uint64_t n)
{
    fl_store_wal_info wi;
    for (int i = 0; i < 2000; i++) {
        fl_store_sqlite_wal_info(f->s, &wi);
        if ((deferred ? wi.restarts_deferred : wi.restarts) >= n)
            return;
        usleep(10000);
    }
    fail_msg("%" PRIu64 " RESTART checkpoints, %" PRIu64 " deferred; waited for %" PRIu64 " %s",
             wi.restarts, wi.restarts_deferred, n, deferred ? "deferred" : "done");
}

/* A reader that keeps an old snapshot past the WAL's 64 MiB: the RESTART
 * checkpoint that would let the WAL start over waits for it holding the
 * write lock, so it gives way after ~10 ms (tried again a second later)
 * instead of holding every commit until the reader ends (up to 30 s
 * before): a commit with 2 s of patience gets through while the reader
 * still holds.  Once the reader ends, the WAL starts over. */
static void test_checkpoint_gives_way(void **st)
{
    fx *f = *st;
    sqlite3 *db = fl_store_sqlite_db(f->c);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE scratch(b BLOB)", NULL, NULL, NULL), SQLITE_OK);
    fl_store_conn *rc = f->s->connect(f->s);
    assert_non_null(rc);
    sqlite3 *rdb = fl_store_sqlite_db(rc);
    assert_int_equal(sqlite3_exec(rdb, "BEGIN; SELECT count(*) FROM scratch", NULL, NULL, NULL),
                     SQLITE_OK);
    /* 20,000 pages: past the 16,384 frames at which the WAL starts over,
     * and past the 72 MiB it is cut back to then. */
    add_pages(db, 20000);
    wait_restarts(f, true, 1);
    sqlite3 *w = NULL;
    assert_int_equal(sqlite3_open_v2(f->path, &w, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(w, 2000);
    assert_int_equal(sqlite3_exec(w, "INSERT INTO scratch VALUES (x'01')", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(w);
    fl_store_wal_info wi;
    fl_store_sqlite_wal_info(f->s, &wi);
    assert_int_equal(wi.restarts, 0); /* the reader still holds */
    assert_int_equal(sqlite3_exec(rdb, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    wait_restarts(f, false, 1);
    f->s->disconnect(rc);
    /* The file grew to 82 MB meanwhile (20,000 frames of 4 KiB and their
     * headers); the first commit on the WAL started over cuts it back to
     * 72 MiB (journal_size_limit): it used to keep its largest size while
     * the server ran, a little more after each long reader. */
    char wal[sizeof f->path + 8];
    struct stat sb;
    snprintf(wal, sizeof wal, "%s-wal", f->path);
    assert_int_equal(stat(wal, &sb), 0);
    assert_true(sb.st_size > 72 << 20);
    add_pages(db, 1);
    assert_int_equal(stat(wal, &sb), 0);
    if (sb.st_size > 72 << 20)
        fail_msg("the WAL kept %lld bytes after it started over", (long long)sb.st_size);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE scratch", NULL, NULL, NULL), SQLITE_OK);
}

/* The store turns SQLite's memory statistics off (a global mutex on every
 * allocation): with them off, SQLite reports no memory in use. */
static void test_memstatus_off(void **st)
{
    fx *f = *st;
    assert_true(ingest(f, "m1", "1.0"));
    assert_int_equal(sqlite3_memory_used(), 0);
}

/* A caller's frame (fl_raw_frame) over v[0..k), set on v[0]; returns it. */
static char *frame(fl_ingest_item **v, size_t k, size_t claim)
{
    size_t total = 0, len = 0, cap = 0;
    char *z = NULL;
    for (size_t i = 0; i < k; i++)
        total += v[i]->raw_len;
    assert_int_equal(fl_raw_frame(v, k, total, &z, &len, &cap), 0);
    v[0]->z = z;
    v[0]->zlen = len;
    v[0]->zitems = claim;
    return z;
}

/* Frames compressed by the caller (the HTTP threads): kept as they are,
 * side by side with what the store compresses itself, in one chunk of
 * several frames; a frame that does not add up (too few logs, running
 * past the batch) is ignored and its logs compressed by the store; a
 * duplicate inside a frame gets no row; a frame of duplicates only writes
 * no chunk.  Every log reads back exactly. */
static void test_caller_frames(void **st)
{
    fx *f = *st;
    assert_true(ingest(f, "known", "1.0"));
    apply(f, "known", "g", "1.0", "i");
    enum { N = 32 };
    fl_ingest_item it[N];
    fl_ingest_item *v[N];
    char *logs[N];
    memset(it, 0, sizeof it);
    for (int i = 0; i < N; i++) {
        logs[i] = make_log(100u + (unsigned)i, 3000 + (size_t)i * 7);
        snprintf(it[i].crash_id, sizeof it[i].crash_id, "f%d", i);
        it[i].app = "app";
        it[i].received = 1700000000;
        it[i].raw = logs[i];
        it[i].raw_len = 3000 + (size_t)i * 7;
        v[i] = &it[i];
    }
    snprintf(it[4].crash_id, sizeof it[4].crash_id, "known"); /* inside frame A */
    char *za = frame(v, 10, 10);         /* A: 0..9, good */
    char *zb = frame(v + 15, 4, 5);      /* B: says 15..19, holds 15..18 */
    char *zc = frame(v + 20, 10, 10);    /* C: 20..29, good */
    char *zd = frame(v + 30, 2, 5);      /* D: would run past the batch */
    int64_t chunks0 = scalar(f, "SELECT count(*) FROM raw_chunks");
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->insert_crashes(f->c, v, N), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(it[i].duplicate, i == 4);
    /* ~100 KB of logs: one chunk, of frames A and C and the store's own. */
    assert_int_equal(scalar(f, "SELECT count(*) FROM raw_chunks") - chunks0, 1);
    assert_int_equal(scalar(f, "SELECT count(*) FROM inbox"), N - 1);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(fl_store_sqlite_db(f->c),
                                        "SELECT data FROM raw_chunks ORDER BY id DESC LIMIT 1",
                                        -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    const char *blob = sqlite3_column_blob(q, 0);
    size_t bl = (size_t)sqlite3_column_bytes(q, 0);
    assert_non_null(memmem(blob, bl, za, it[0].zlen));  /* kept, not recompressed */
    assert_non_null(memmem(blob, bl, zc, it[20].zlen));
    assert_null(memmem(blob, bl, zb, it[15].zlen));    /* ignored */
    sqlite3_finalize(q);
    for (int k = 0; k < N; k++) {
        int i = (k * 13) % N;
        if (i != 4)
            expect_raw(f, it[i].crash_id, logs[i], it[i].raw_len);
    }

    /* A frame of duplicates only: nothing stored. */
    fl_ingest_item d[3];
    fl_ingest_item *dv[3];
    memset(d, 0, sizeof d);
    for (int i = 0; i < 3; i++) {
        snprintf(d[i].crash_id, sizeof d[i].crash_id, "%s", i == 1 ? "known" : "f0");
        d[i].raw = logs[i];
        d[i].raw_len = it[i].raw_len;
        d[i].received = 1700000000;
        dv[i] = &d[i];
    }
    char *ze = frame(dv, 3, 3);
    assert_non_null(ze);
    chunks0 = scalar(f, "SELECT count(*) FROM raw_chunks");
    int64_t inbox0 = scalar(f, "SELECT count(*) FROM inbox");
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->insert_crashes(f->c, dv, 3), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    /* f0 is in the inbox, not processed: only "known" is refused at
     * ingest; f0 is stored again and dropped by processing. */
    assert_false(d[0].duplicate);
    assert_true(d[1].duplicate);
    assert_true(d[2].duplicate); /* twice in the batch */
    assert_int_equal(scalar(f, "SELECT count(*) FROM raw_chunks") - chunks0, 1);
    assert_int_equal(scalar(f, "SELECT count(*) FROM inbox") - inbox0, 1);
    free(ze);
    free(za);
    free(zb);
    free(zc);
    free(zd);
    for (int i = 0; i < N; i++)
        free(logs[i]);
}

/* fl_unzstd reads concatenated frames (a chunk) whole, and still checks
 * the announced size against its limit. */
static void test_unzstd_frames(void **st)
{
    (void)st;
    const char *a = "first frame;", *b = "second frame";
    void *za, *zb;
    size_t la, lb;
    assert_int_equal(fl_zstd(a, strlen(a), 3, &za, &la), 0);
    assert_int_equal(fl_zstd(b, strlen(b), 3, &zb, &lb), 0);
    char *both = malloc(la + lb);
    memcpy(both, za, la);
    memcpy(both + la, zb, lb);
    char *out = NULL;
    size_t ol = 0;
    assert_int_equal(fl_unzstd(both, la + lb, 1024, &out, &ol), 0);
    assert_int_equal(ol, strlen(a) + strlen(b));
    assert_memory_equal(out, "first frame;second frame", ol);
    free(out);
    assert_int_equal(fl_unzstd(both, la + lb, strlen(a) + strlen(b) - 1, &out, &ol), -1);
    assert_int_equal(fl_unzstd(both, la + lb - 1, 1024, &out, &ol), -1); /* cut short */
    assert_int_equal(fl_unzstd(both, 0, 1024, &out, &ol), -1);
    free(both);
    free(za);
    free(zb);
}

/* Tasks in batches: ingest stores one task per FL_QUEUE_BATCH_MAX crashes;
 * claim() hands out whole stored tasks, one entry per crash; only the ack
 * of a task's last entry completes it; a task not completed comes back
 * whole. */
static void test_batch_tasks(void **st)
{
    fx *f = *st;
    enum { N = 40 };
    char ids[N][16];
    const char *idp[N];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "b%d", i);
        idp[i] = ids[i];
    }
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->q->enqueue_many(f->q, f->c, idp, N), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(f->q->depth(f->q, f->c), N);
    assert_int_equal(scalar(f, "SELECT count(*) FROM tasks"), 3); /* 16 + 16 + 8 */

    /* max 20: the second task (16 more) does not fit. */
    fl_task t[64];
    size_t n = 0;
    assert_int_equal(f->q->claim(f->q, f->c, 60, 20, t, &n), 0);
    assert_int_equal(n, FL_QUEUE_BATCH_MAX);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(t[i].crash_id, ids[i]);
        assert_int_equal(t[i].id, t[0].id);
        assert_int_equal(t[i].last, i == n - 1);
    }
    assert_int_equal(f->s->begin(f->c), 0);
    for (size_t i = 0; i + 1 < n; i++)
        assert_int_equal(f->q->ack(f->q, f->c, &t[i]), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(scalar(f, "SELECT count(*) FROM tasks"), 3); /* not complete yet */
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->q->ack(f->q, f->c, &t[n - 1]), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(f->q->depth(f->q, f->c), N - FL_QUEUE_BATCH_MAX);

    /* The other two, then a worker that dies before acking: both come back
     * whole once their leases are forgotten. */
    for (int round = 0; round < 2; round++) {
        n = 0;
        assert_int_equal(f->q->claim(f->q, f->c, 60, 32, t, &n), 0);
        assert_int_equal(n, N - FL_QUEUE_BATCH_MAX);
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(t[i].crash_id, ids[FL_QUEUE_BATCH_MAX + i]);
            assert_int_equal(t[i].last, i == FL_QUEUE_BATCH_MAX - 1 || i == n - 1);
        }
        size_t again = 0;
        assert_int_equal(f->q->claim(f->q, f->c, 60, 32, t + n, &again), 0);
        assert_int_equal(again, 0); /* leased */
        if (round == 0)
            assert_int_equal(f->q->release_all(f->q, f->c), 0);
    }
    assert_int_equal(f->s->begin(f->c), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(f->q->ack(f->q, f->c, &t[i]), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(f->q->depth(f->q, f->c), 0);
    assert_int_equal(scalar(f, "SELECT count(*) FROM tasks"), 0);

    /* A single task (a re-queue) and a batch: claimed in order, whole. */
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->q->enqueue(f->q, f->c, "single"), 0);
    assert_int_equal(f->q->enqueue_many(f->q, f->c, idp, FL_QUEUE_BATCH_MAX), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    n = 0;
    assert_int_equal(f->q->claim(f->q, f->c, 60, FL_QUEUE_BATCH_MAX, t, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(t[0].crash_id, "single");
    assert_true(t[0].last);
}

/* A damaged chunk is an error for the crashes in it, not a crash of the
 * server, and the other chunks still read. */
static void test_chunk_damaged(void **st)
{
    fx *f = *st;
    assert_true(ingest(f, "a1", "1.0"));
    assert_true(ingest(f, "a2", "1.0"));
    sqlite3 *db = fl_store_sqlite_db(f->c);
    assert_int_equal(sqlite3_exec(db,
                                  "UPDATE raw_chunks SET data=substr(data,1,length(data)/2) "
                                  "WHERE id=(SELECT chunk FROM inbox WHERE id='a1')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    char *raw = NULL;
    size_t len;
    int64_t rcv;
    assert_int_equal(f->s->load_raw(f->c, "a1", &raw, &len, &rcv, NULL, NULL), -1);
    assert_null(raw);
    bool nf = true;
    assert_null(f->s->get_crash(f->c, "a1", &nf));
    assert_false(nf);
    const char *want = "FAULTLINE 1\nCRASHLOG_VERSION 2\nEND\n";
    expect_raw(f, "a2", want, strlen(want));
    /* An offset past the chunk's end (a damaged row) is an error too. */
    assert_int_equal(
        sqlite3_exec(db, "UPDATE inbox SET chunk_off=1000000 WHERE id='a2'", NULL, NULL, NULL),
        SQLITE_OK);
    assert_int_equal(f->s->load_raw(f->c, "a2", &raw, &len, &rcv, NULL, NULL), -1);
}

/* A store that cannot be read now is not a damaged log: load_raw says
 * FL_LOAD_UNAVAILABLE (the worker tries again) with the reason in
 * error(), and the same row loads once the store is back.  A chunk that is
 * gone is damage (-1: the crash fails, retrying cannot help). */
static void test_load_unavailable(void **st)
{
    fx *f = *st;
    char ref[FL_CRASH_ID_MAX];
    assert_true(ingest_ref(f, "u1", "1.0", ref));
    assert_true(ingest(f, "u2", "1.0"));
    /* Another connection moves the chunks away, as a broken or locked
     * store would hide them. */
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(f->path, &other), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(other, "ALTER TABLE raw_chunks RENAME TO raw_chunks_away", NULL, NULL, NULL),
        SQLITE_OK);
    char *raw = NULL;
    size_t len;
    int64_t rcv;
    assert_int_equal(f->s->load_raw(f->c, ref, &raw, &len, &rcv, NULL, NULL), FL_LOAD_UNAVAILABLE);
    assert_null(raw);
    assert_non_null(strstr(f->s->error(f->c), "raw_chunks"));
    assert_int_equal(f->s->load_raw(f->c, "u2", &raw, &len, &rcv, NULL, NULL), FL_LOAD_UNAVAILABLE);
    assert_int_equal(
        sqlite3_exec(other, "ALTER TABLE raw_chunks_away RENAME TO raw_chunks", NULL, NULL, NULL),
        SQLITE_OK);
    const char *want = "FAULTLINE 1\nCRASHLOG_VERSION 2\nEND\n";
    assert_int_equal(f->s->load_raw(f->c, ref, &raw, &len, &rcv, NULL, NULL), 0);
    assert_string_equal(raw, want);
    free(raw);
    raw = NULL;
    /* The chunk row gone for good: damaged. */
    assert_int_equal(sqlite3_exec(other,
                                  "DELETE FROM raw_chunks WHERE id=(SELECT chunk FROM inbox WHERE "
                                  "id='u2')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(f->s->load_raw(f->c, "u2", &raw, &len, &rcv, NULL, NULL), -1);
    assert_null(raw);
    sqlite3_close(other);
}

/* Watched processing: each start is counted durably until the processed
 * crash is recorded with processing_ended() in its transaction; a
 * rollback keeps the count. */
static void test_processing_watch(void **st)
{
    fx *f = *st;
    unsigned before = 99;
    assert_int_equal(f->s->processing_started(f->c, "#7", &before), 0);
    assert_int_equal(before, 0);
    assert_int_equal(f->s->processing_started(f->c, "#7", &before), 0);
    assert_int_equal(before, 1);
    assert_int_equal(f->s->processing_started(f->c, "#8", &before), 0);
    assert_int_equal(before, 0);
    /* Ended in a transaction that does not commit: still counted. */
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->processing_ended(f->c, "#7"), 0);
    f->s->rollback(f->c);
    assert_int_equal(scalar(f, "SELECT starts FROM processing WHERE ref='#7'"), 2);
    /* ... and in one that does: forgotten, the next start is the first. */
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->processing_ended(f->c, "#7"), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(scalar(f, "SELECT count(*) FROM processing WHERE ref='#7'"), 0);
    assert_int_equal(f->s->processing_started(f->c, "#7", &before), 0);
    assert_int_equal(before, 0);
    assert_int_equal(scalar(f, "SELECT count(*) FROM processing"), 2);
}

/* requeue(): unknown -> 1, pending -> 2, failed -> processed as new (state
 * 0, its watch forgotten), processed -> marked for reapply (load_raw 3). */
static void test_requeue(void **st)
{
    fx *f = *st;
    char ref[FL_CRASH_ID_MAX];
    assert_true(ingest_ref(f, "q1", "1.0", ref));
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->requeue(f->c, "nope"), 1);
    assert_int_equal(f->s->requeue(f->c, "q1"), 2); /* in the inbox */
    f->s->rollback(f->c);
    /* Failed at processing. */
    fl_processed p = {.crash_id = "q1", .ref = ref, .failed = true};
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->apply(f->c, &p), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    unsigned before;
    assert_int_equal(f->s->processing_started(f->c, "q1", &before), 0);
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->requeue(f->c, "q1"), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(scalar(f, "SELECT state FROM crashes WHERE id='q1'"), 0);
    assert_int_equal(scalar(f, "SELECT count(*) FROM processing"), 0);
    char *raw = NULL;
    size_t len;
    int64_t rcv;
    assert_int_equal(f->s->load_raw(f->c, "q1", &raw, &len, &rcv, NULL, NULL), 0);
    free(raw);
    raw = NULL;
    /* Now processed: counted once; requeued, it is handed out for reapply. */
    assert_int_equal(apply_ref(f, "q1", "q1", "g9", "1.0", "i1"), 0);
    assert_int_equal(scalar(f, "SELECT count FROM groups WHERE id='g9'"), 1);
    assert_int_equal(f->s->load_raw(f->c, "q1", &raw, &len, &rcv, NULL, NULL), 2);
    assert_int_equal(f->s->begin(f->c), 0);
    assert_int_equal(f->s->requeue(f->c, "q1"), 0);
    assert_int_equal(f->s->commit(f->c), 0);
    assert_int_equal(f->s->load_raw(f->c, "q1", &raw, &len, &rcv, NULL, NULL), 3);
    free(raw);
}

/* A database from before chunks: its crashes keep their own zstd frame in
 * crashes.raw, the columns are added when the store opens it, and both
 * kinds of rows read. */
/* The fixture on another database, at path (the queue shared): for the
 * tests of a database made otherwise.  close_other() closes it and removes
 * its files, as teardown() does the fixture's. */
static fx open_other(const fx *f, const char *path)
{
    char err[256];
    fx g = *f;
    snprintf(g.path, sizeof g.path, "%s", path);
    if (!(g.s = fl_store_sqlite_open(path, err, sizeof err)))
        fail_msg("%s: %s", path, err);
    g.c = g.s->connect(g.s);
    assert_non_null(g.c);
    return g;
}

static void close_other(fx *g)
{
    g->s->disconnect(g->c);
    g->s->close(g->s);
    remove_db(g->path);
}

static void test_chunk_upgrade(void **st)
{
    fx *f = *st;
    char path[160];
    snprintf(path, sizeof path, "%s/old.db", f->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "CREATE TABLE crashes(rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, app "
                     "TEXT, version TEXT, received INTEGER NOT NULL, raw BLOB NOT NULL, raw_len "
                     "INTEGER NOT NULL, state INTEGER NOT NULL DEFAULT 0, group_id TEXT, "
                     "stack_hash TEXT, processed BLOB);"
                     "CREATE TABLE tasks(id INTEGER PRIMARY KEY, crash_id TEXT NOT NULL, "
                     "lease_until INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL "
                     "DEFAULT 0);"
                     /* The inbox as it was before e-mail addresses. */
                     "CREATE TABLE inbox(rid INTEGER PRIMARY KEY, id TEXT NOT NULL, app TEXT, "
                     "version TEXT, received INTEGER NOT NULL, raw_len INTEGER NOT NULL, "
                     "chunk INTEGER NOT NULL, chunk_off INTEGER NOT NULL);"
                     /* Groups as they were before projects: one of them. */
                     "CREATE TABLE groups(id TEXT PRIMARY KEY, app TEXT, signature TEXT NOT "
                     "NULL, frames TEXT, count INTEGER NOT NULL DEFAULT 0, first_seen INTEGER, "
                     "last_seen INTEGER, affected INTEGER NOT NULL DEFAULT 0, status TEXT NOT "
                     "NULL DEFAULT 'open', resolved_in TEXT, latest_version TEXT, sample_crash "
                     "TEXT);"
                     "INSERT INTO groups(id, app, signature, count) VALUES('g-old', 'a', 's', 1);"
                     "INSERT INTO tasks(crash_id) VALUES('old');",
                     NULL, NULL, NULL),
        SQLITE_OK);
    const char *old = "FAULTLINE 1\nCRASHLOG_VERSION 2\nCRASH_ID old\nEND\n";
    void *z;
    size_t zl;
    assert_int_equal(fl_zstd(old, strlen(old), 3, &z, &zl), 0);
    sqlite3_stmt *ins = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO crashes(id, received, raw, raw_len) "
                                        "VALUES('old', 1700000000, ?1, ?2)",
                                        -1, &ins, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(ins, 1, z, (int)zl, SQLITE_STATIC);
    sqlite3_bind_int64(ins, 2, (sqlite3_int64)strlen(old));
    assert_int_equal(sqlite3_step(ins), SQLITE_DONE);
    sqlite3_finalize(ins);
    sqlite3_close(db);
    free(z);

    fx g = open_other(f, path);
    fl_store *s = g.s;
    fl_store_conn *c = g.c;
    expect_raw(&g, "old", old, strlen(old));
    /* Its pending task, from before tasks.n: one crash, claimed and done. */
    assert_int_equal(f->q->depth(f->q, c), 1);
    fl_task t;
    size_t n = 0;
    assert_int_equal(f->q->claim(f->q, c, 60, FL_QUEUE_BATCH_MAX, &t, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(t.crash_id, "old");
    assert_true(t.last);
    assert_int_equal(s->begin(c), 0);
    assert_int_equal(f->q->ack(f->q, c, &t), 0);
    assert_int_equal(s->commit(c), 0);
    assert_int_equal(f->q->depth(f->q, c), 0);
    assert_true(ingest(&g, "new", "1.0"));
    const char *want = "FAULTLINE 1\nCRASHLOG_VERSION 2\nEND\n";
    expect_raw(&g, "new", want, strlen(want));
    assert_false(ingest(&g, "old", "1.0")); /* known, old row or not */
    /* Both tables got their email and project columns: none for either
     * crash, which are the default project's. */
    bool nf = false;
    for (int i = 0; i < 2; i++) {
        json_t *j = s->get_crash(c, i ? "new" : "old", &nf);
        assert_non_null(j);
        assert_true(json_is_null(json_object_get(j, "email")));
        assert_string_equal(json_string_value(json_object_get(j, "project")), "default");
        json_decref(j);
    }
    /* And the old group is the default project's. */
    fl_group_filter gf = {.project = "default", .limit = 10};
    json_t *gl = s->list_groups(c, &gf);
    assert_non_null(gl);
    json_t *g0 = json_array_get(json_object_get(gl, "groups"), 0);
    assert_string_equal(json_string_value(json_object_get(g0, "id")), "g-old");
    assert_string_equal(json_string_value(json_object_get(g0, "project")), "default");
    json_decref(gl);
    close_other(&g);
}

/* A new database, and the -wal and -shm files beside it, are the owner's
 * alone (0600) whatever the umask: the database holds the projects'
 * ingest keys, which DIR/ingest_key guards with 0600 too, and the users'
 * crash logs.  Under umask 022 SQLite made them 0644. */
static void test_private_mode(void **st)
{
    fx *f = *st;
    char path[160], p[180];
    snprintf(path, sizeof path, "%s/private.db", f->dir);
    mode_t old = umask(022);
    fx g = open_other(f, path);
    umask(old);
    assert_true(ingest(&g, "private", "1.0")); /* a commit: -wal and -shm exist */
    const char *sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        struct stat sb;
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        assert_int_equal(stat(p, &sb), 0);
        if ((sb.st_mode & 0777) != 0600)
            fail_msg("%s has mode %03o, not 600", p, (unsigned)(sb.st_mode & 0777));
    }
    close_other(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_full_scans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idempotent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inbox_unindexed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_crash_while_processed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_group_while_processed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_crashes_while_processed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_groups_while_processed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trends_while_processed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_regression, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backfill_regroup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memstatus_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_known_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_known_filter_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_known_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_id_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_caller_frames, setup, teardown),
        cmocka_unit_test(test_unzstd_frames),
        cmocka_unit_test_setup_teardown(test_batch_tasks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunk_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processing_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requeue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunk_upgrade, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_gives_way, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
