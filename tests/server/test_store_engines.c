/*
 * Store conformance: the same assertions against every store engine,
 * through the fl_store interface only.  The engine comes from the
 * environment: FL_TEST_STORE_URL unset, a SQLite file in a temporary
 * directory; "postgres://..." the PostgreSQL store, each test starting
 * from an empty schema (tests/server/store_pg_test.sh starts a server).
 *
 * In the PostgreSQL run, test_same_json also runs one scenario into a
 * SQLite store and compares every JSON answer between the two engines.
 *
 * Where the engines may differ by contract, the test accepts either: a
 * resend of a crash not processed yet may be refused at ingest (PostgreSQL)
 * or stored and dropped when its task runs (SQLite) -- counted once
 * either way.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include <sqlite3.h>

#include "fl_queue.h"
#include "fl_srvutil.h"
#include "fl_store.h"

/* A store and a connection to it. */
typedef struct eng {
    fl_store *s;
    fl_store_conn *c;
} eng;

typedef struct fx {
    char dir[64];
    char path[128];
    const char *url; /* NULL: SQLite in dir */
    eng e;
} fx;

static const char *pg_url(void)
{
    const char *u = getenv("FL_TEST_STORE_URL");
    return u && *u ? u : NULL;
}

/* An empty schema, and deadlocks found after 50 ms rather than 1 s (the
 * concurrency test makes many; new connections take the setting). */
static void pg_reset(const char *url)
{
    PGconn *db = PQconnectdb(url);
    assert_int_equal(PQstatus(db), CONNECTION_OK);
    PGresult *r = PQexec(db, "SET client_min_messages=warning; DROP SCHEMA public CASCADE; "
                             "CREATE SCHEMA public; DO $$ BEGIN EXECUTE format('ALTER DATABASE "
                             "%I SET deadlock_timeout=%L', current_database(), '50ms'); END $$");
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("cannot reset the schema: %s", PQerrorMessage(db));
    PQclear(r);
    PQfinish(db);
}

static int open_sqlite(fx *f, eng *e)
{
    char err[256];
    e->s = fl_store_sqlite_open(f->path, err, sizeof err);
    e->c = e->s ? e->s->connect(e->s) : NULL;
    return e->c ? 0 : -1;
}

static int setup(void **st)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/fl-engines-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/t.db", f->dir);
    f->url = pg_url();
    *st = f;
    if (!f->url)
        return open_sqlite(f, &f->e);
    pg_reset(f->url);
    char err[256];
    f->e.s = fl_store_pg_open(f->url, 0, err, sizeof err);
    if (!f->e.s) {
        fprintf(stderr, "fl_store_pg_open: %s\n", err);
        return -1;
    }
    f->e.c = f->e.s->connect(f->e.s);
    return f->e.c ? 0 : -1;
}

static void close_eng(eng *e)
{
    if (e->s) {
        e->s->disconnect(e->c);
        e->s->close(e->s);
    }
    e->s = NULL;
    e->c = NULL;
}

static void rm_sqlite(const char *path)
{
    char p[200];
    const char *sfx[] = {"", "-wal", "-shm", ".ids", ".ids.tmp"};
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
}

static int teardown(void **st)
{
    fx *f = *st;
    close_eng(&f->e);
    rm_sqlite(f->path);
    char p[200];
    snprintf(p, sizeof p, "%s/other.db", f->dir);
    rm_sqlite(p);
    rmdir(f->dir);
    free(f);
    return 0;
}

static bool is_pg(const eng *e)
{
    return !strcmp(e->s->engine, "postgres");
}

/* ---- helpers, as ingest and the workers drive a store */

#define RAW "FAULTLINE 1\nCRASHLOG_VERSION 2\nEND\n"
#define T0 1700000000 /* 2023-11-14T22:13:20Z */
#define DAY 86400

/* Ingest one crash of project (NULL: the default one); returns whether it
 * was stored, and the name of its task in ref (when not NULL): its ref, or
 * its crash id. */
static bool ingest_in(eng *e, const char *project, const char *id, const char *version,
                      int64_t received, char ref[FL_CRASH_ID_MAX])
{
    fl_ingest_item it = {.project = project,
                         .app = "app",
                         .version = version,
                         .received = received,
                         .raw = RAW,
                         .raw_len = strlen(RAW)};
    fl_ingest_item *one = &it;
    snprintf(it.crash_id, sizeof it.crash_id, "%s", id);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->insert_crashes(e->c, &one, 1), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    if (ref)
        snprintf(ref, FL_CRASH_ID_MAX, "%s", it.duplicate ? "" : it.ref[0] ? it.ref : id);
    return !it.duplicate;
}

static bool ingest_at(eng *e, const char *id, const char *version, int64_t received,
                      char ref[FL_CRASH_ID_MAX])
{
    return ingest_in(e, NULL, id, version, received, ref);
}

static bool ingest(eng *e, const char *id, const char *version)
{
    return ingest_at(e, id, version, T0, NULL);
}

typedef struct crash {
    const char *id, *ref, *group, *version, *os, *install, *frames;
    const char *arch;    /* CPUARCH_NAME; NULL: none */
    const char *project; /* as load_raw() gives it; NULL: the default */
    int64_t received;
    const char *missing;   /* a build id without symbols, or NULL */
    const char *processed; /* processed JSON, or NULL */
    bool failed;
} crash;

/* Apply (or reapply) one crash in its own transaction; returns apply()'s
 * answer. */
static int apply_c(eng *e, const crash *k, bool again)
{
    const char *m[1] = {k->missing};
    void *z = NULL;
    size_t zl = 0;
    if (k->processed)
        assert_int_equal(fl_zstd(k->processed, strlen(k->processed), 3, &z, &zl), 0);
    fl_processed p = {.crash_id = k->id,
                      .ref = k->ref,
                      .project = k->project,
                      .failed = k->failed,
                      .group_id = k->group,
                      .signature = k->group ? k->group : "-",
                      .stack_hash = "h",
                      .app = "app",
                      .version = k->version,
                      .os = k->os,
                      .arch = k->arch,
                      .install_id = k->install,
                      .received = k->received ? k->received : T0,
                      .frames_json = k->frames ? k->frames : "[]",
                      .zprocessed = z,
                      .zprocessed_len = zl,
                      .missing_build_ids = m,
                      .nmissing = k->missing ? 1 : 0};
    assert_int_equal(e->s->begin(e->c), 0);
    int r = again ? e->s->reapply(e->c, &p) : e->s->apply(e->c, &p);
    assert_true(r == 0 || r == 1);
    assert_int_equal(e->s->commit(e->c), 0);
    free(z);
    return r;
}

static void apply_s(eng *e, const char *id, const char *group, const char *version,
                    const char *install)
{
    crash k = {.id = id,
               .group = group,
               .version = version,
               .os = "linux",
               .arch = "x86-64",
               .install = install};
    assert_int_equal(apply_c(e, &k, false), 0);
}

static json_t *group_of(eng *e, const char *id)
{
    bool nf = false;
    json_t *g = e->s->get_group(e->c, id, &nf);
    if (!g && !nf)
        fail_msg("get_group(%s): %s", id, e->s->error(e->c));
    return g;
}

/* A group's count, checking that the days add up to it (and the versions,
 * OSes and architectures to no more: a crash may have none); -1 when the
 * group does not exist. */
static int64_t count_of(eng *e, const char *gid)
{
    json_t *g = group_of(e, gid);
    if (!g)
        return -1;
    int64_t n = json_integer_value(json_object_get(g, "count"));
    const char *keys[] = {"days", "versions", "os", "arch"};
    for (int k = 0; k < 4; k++) {
        json_t *a = json_object_get(g, keys[k]), *v;
        size_t i;
        int64_t sum = 0;
        json_array_foreach(a, i, v) sum += json_integer_value(json_object_get(v, "count"));
        if (k == 0)
            assert_int_equal(sum, n);
        else
            assert_true(sum <= n);
    }
    json_decref(g);
    return n;
}

static int64_t int_of(eng *e, const char *gid, const char *key)
{
    json_t *g = group_of(e, gid);
    assert_non_null(g);
    int64_t n = json_integer_value(json_object_get(g, key));
    json_decref(g);
    return n;
}

static const char *str_of(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* load_raw()'s answer for ref, and the report's project into project
 * (when not NULL). */
static int load_p(eng *e, const char *ref, char project[FL_PROJECT_MAX])
{
    char *raw = NULL, pj[FL_PROJECT_MAX];
    size_t len;
    int64_t rcv;
    int r = e->s->load_raw(e->c, ref, &raw, &len, &rcv, NULL, project ? project : pj);
    free(raw);
    return r;
}

static int load(eng *e, const char *ref)
{
    return load_p(e, ref, NULL);
}

static void write_file(const char *path, const char *bytes, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

static int by_dump(const void *a, const void *b)
{
    char *x = json_dumps(*(json_t *const *)a, JSON_COMPACT);
    char *y = json_dumps(*(json_t *const *)b, JSON_COMPACT);
    int r = strcmp(x, y);
    free(x);
    free(y);
    return r;
}

/* Sorts a JSON array in place by the elements' text. */
static void sort_rows(json_t *arr)
{
    size_t n = json_array_size(arr);
    json_t **v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    qsort(v, n, sizeof *v, by_dump);
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, v[i]);
    free(v);
}

static void free_ids(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* ---- tests */

/* Duplicates: twice in one batch, stored once; a resend of a processed
 * crash, refused; one of a crash not processed yet, refused at once or
 * dropped when its task runs -- counted once either way. */
static void test_insert_duplicates(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    fl_ingest_item it[4] = {0};
    fl_ingest_item *v[4];
    const char *ids[4] = {"d-a", "d-b", "d-a", "d-c"};
    for (int i = 0; i < 4; i++) {
        snprintf(it[i].crash_id, sizeof it[i].crash_id, "%s", ids[i]);
        it[i].app = "app";
        it[i].version = "1.0";
        it[i].received = T0;
        it[i].raw = RAW;
        it[i].raw_len = strlen(RAW);
        v[i] = &it[i];
    }
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->insert_crashes(e->c, v, 4), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_false(it[0].duplicate);
    assert_false(it[1].duplicate);
    assert_true(it[2].duplicate);
    assert_false(it[3].duplicate);
    if (is_pg(e))
        for (int i = 0; i < 4; i++)
            assert_string_equal(it[i].ref, ""); /* the crash id names it */

    /* Across batches, before processing. */
    char r1[FL_CRASH_ID_MAX], r2[FL_CRASH_ID_MAX];
    snprintf(r1, sizeof r1, "%s", it[0].ref[0] ? it[0].ref : "d-a");
    bool stored = ingest_at(e, "d-a", "1.0", T0, r2);
    if (is_pg(e))
        assert_false(stored); /* the primary key knows it at once */
    assert_int_equal(apply_c(e, &(crash){.id = "d-a", .ref = r1, .group = "gd"}, false), 0);
    if (stored) /* the resend's own task: dropped */
        assert_int_equal(apply_c(e, &(crash){.id = "d-a", .ref = r2, .group = "gd"}, false), 1);
    assert_int_equal(count_of(e, "gd"), 1);
    /* After processing: refused by every engine. */
    assert_false(ingest(e, "d-a", "1.0"));
    assert_true(ingest(e, "d-d", "1.0"));
    fl_store_stats s;
    assert_int_equal(e->s->stats(e->c, &s), 0);
    assert_int_equal(s.crashes, 4); /* a dropped resend is not a crash */
    assert_int_equal(s.groups, 1);
}

/* The raw logs come back byte for byte: small and >1 MiB, text and not,
 * alone, in one batch, and from a caller's frame of several logs. */
/* The writer's probe while ingest fails: a write that commits when the
 * store takes writes, fails when it does not, and leaves nothing. */
static void test_probe(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    assert_non_null(e->s->probe);
    assert_int_equal(e->s->probe(e->c), 0);
    assert_int_equal(e->s->probe(e->c), 0); /* again: its row was removed */
    if (!is_pg(e)) {
        sqlite3 *db = fl_store_sqlite_db(e->c);
        assert_int_equal(sqlite3_exec(db, "PRAGMA query_only=1", NULL, NULL, NULL), SQLITE_OK);
        assert_int_not_equal(e->s->probe(e->c), 0);
        assert_true(sqlite3_get_autocommit(db)); /* not left in a transaction */
        assert_int_equal(sqlite3_exec(db, "PRAGMA query_only=0", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_stmt *q;
        assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM raw_chunks", -1, &q, NULL),
                         SQLITE_OK);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(q, 0), 0);
        sqlite3_finalize(q);
    }
    /* The store works as before. */
    fl_ingest_item it = {0};
    fl_ingest_item *v[1] = {&it};
    snprintf(it.crash_id, sizeof it.crash_id, "probe-after");
    it.app = "app";
    it.version = "1.0";
    it.received = T0;
    it.raw = RAW;
    it.raw_len = strlen(RAW);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->insert_crashes(e->c, v, 1), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_false(it.duplicate);
}

static void test_load_raw(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    enum { N = 5 };
    size_t lens[N] = {strlen(RAW), 0, 1536 * 1024, 3000, 70};
    char *logs[N];
    uint32_t x = 12345;
    for (int i = 0; i < N; i++) {
        logs[i] = malloc(lens[i] + 1);
        for (size_t j = 0; j < lens[i]; j++) {
            x = x * 1103515245 + 12345;
            logs[i][j] = (char)(i == 2 ? x >> 16 : 'a' + (x >> 16) % 26); /* 2: incompressible */
        }
    }
    memcpy(logs[0], RAW, lens[0]);
    lens[1] = 1; /* one byte, a NUL */
    logs[1][0] = '\0';
    fl_ingest_item it[N] = {0};
    fl_ingest_item *v[N];
    for (int i = 0; i < N; i++) {
        snprintf(it[i].crash_id, sizeof it[i].crash_id, "raw-%d", i);
        it[i].app = i ? "app" : NULL;
        it[i].version = i == 4 ? NULL : "2.0";
        it[i].received = T0 + i;
        it[i].raw = logs[i];
        it[i].raw_len = lens[i];
        v[i] = &it[i];
    }
    /* A caller's frame over items 3 and 4. */
    char *zbuf = NULL;
    size_t zlen = 0, zcap = 0;
    assert_int_equal(fl_raw_frame(v + 3, 2, lens[3] + lens[4], &zbuf, &zlen, &zcap), 0);
    it[3].z = zbuf;
    it[3].zlen = zlen;
    it[3].zitems = 2;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->insert_crashes(e->c, v, N), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    for (int i = 0; i < N; i++) {
        char *raw = NULL, id[FL_CRASH_ID_MAX] = "", pj[FL_PROJECT_MAX] = "x";
        size_t len = 0;
        int64_t rcv = 0;
        const char *ref = it[i].ref[0] ? it[i].ref : it[i].crash_id;
        assert_false(it[i].duplicate);
        assert_int_equal(e->s->load_raw(e->c, ref, &raw, &len, &rcv, id, pj), 0);
        assert_string_equal(pj, ""); /* the default project */
        assert_int_equal(len, lens[i]);
        assert_memory_equal(raw, logs[i], lens[i]);
        assert_int_equal(rcv, T0 + i);
        assert_string_equal(id, it[i].crash_id);
        free(raw);
    }
    /* The API reads a pending crash too. */
    bool nf = true;
    json_t *c = e->s->get_crash(e->c, "raw-0", &nf);
    assert_non_null(c);
    assert_string_equal(str_of(c, "state"), "pending");
    assert_string_equal(str_of(c, "raw"), RAW);
    assert_true(json_is_null(json_object_get(c, "app")));
    assert_true(json_is_null(json_object_get(c, "email")));
    json_decref(c);
    /* The address the user gave the reporter: kept, pending and processed. */
    fl_ingest_item em = {.app = "app",
                         .version = "1.0",
                         .email = "ann@example.org",
                         .received = T0,
                         .raw = RAW,
                         .raw_len = strlen(RAW)};
    fl_ingest_item *emp = &em;
    snprintf(em.crash_id, sizeof em.crash_id, "mail-1");
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->insert_crashes(e->c, &emp, 1), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    for (int pass = 0; pass < 2; pass++) {
        assert_non_null(c = e->s->get_crash(e->c, "mail-1", &nf));
        assert_string_equal(str_of(c, "email"), "ann@example.org");
        assert_string_equal(str_of(c, "state"), pass ? "processed" : "pending");
        json_decref(c);
        crash k = {
            .id = "mail-1", .ref = em.ref[0] ? em.ref : NULL, .group = "gm", .version = "1.0"};
        if (!pass)
            assert_int_equal(apply_c(e, &k, false), 0);
    }
    assert_null(e->s->get_crash(e->c, "raw-x", &nf));
    assert_true(nf);
    free(zbuf);
    for (int i = 0; i < N; i++)
        free(logs[i]);
}

/* Exactly once: a task delivered twice counts once; an unknown crash
 * counts nothing; load_raw's answers follow the crash's state. */
static void test_apply_once(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    char r1[FL_CRASH_ID_MAX], r2[FL_CRASH_ID_MAX];
    assert_true(ingest_at(e, "c1", "1.0", T0, r1));
    assert_true(ingest_at(e, "c2", "1.0", T0, r2));
    assert_int_equal(load(e, r1), 0);
    crash k = {.id = "c1", .ref = r1, .group = "g1", .version = "1.0", .install = "i1"};
    assert_int_equal(apply_c(e, &k, false), 0);
    assert_int_equal(apply_c(e, &k, false), 0); /* the same task again */
    k.id = "c2";
    k.ref = r2;
    assert_int_equal(apply_c(e, &k, false), 0);
    apply_s(e, "nope", "g1", "1.0", "i1"); /* unknown: nothing */
    assert_int_equal(count_of(e, "g1"), 2);
    assert_int_equal(int_of(e, "g1", "affected"), 1);
    assert_int_equal(load(e, "c1"), 2); /* processed */
    assert_int_equal(load(e, "zz"), 1); /* unknown */
    bool nf;
    assert_null(e->s->get_crash(e->c, "nope", &nf));
    assert_true(nf);
    /* A failed crash: marked, counted nowhere. */
    char r3[FL_CRASH_ID_MAX];
    assert_true(ingest_at(e, "c3", "1.0", T0, r3));
    assert_int_equal(apply_c(e, &(crash){.id = "c3", .ref = r3, .failed = true}, false), 0);
    json_t *c = e->s->get_crash(e->c, "c3", &nf);
    assert_string_equal(str_of(c, "state"), "failed");
    assert_true(json_is_null(json_object_get(c, "group_id")));
    json_decref(c);
    assert_int_equal(load(e, "c3"), 2);
    assert_int_equal(count_of(e, "g1"), 2);
}

/* Counters and breakdowns of one group. */
static void test_group_counters(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    struct {
        const char *id, *version, *os, *arch, *install;
        int64_t t;
    } in[] = {
        {"k1", "1.0", "linux", "x86-64", "i1", T0 + DAY},
        {"k2", "1.1", "linux", "aarch64", "i1", T0},
        {"k3", "1.1", "mac", "aarch64", "i2", T0 + 2 * DAY},
        {"k4", NULL, NULL, NULL, NULL, T0 + DAY},
        {"k5", "1.1", "linux", "aarch64", "i3", T0 + DAY},
    };
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        assert_true(ingest_at(e, in[i].id, in[i].version, in[i].t, NULL));
        crash k = {.id = in[i].id,
                   .group = "gc",
                   .version = in[i].version,
                   .os = in[i].os,
                   .arch = in[i].arch,
                   .install = in[i].install,
                   .received = in[i].t};
        assert_int_equal(apply_c(e, &k, false), 0);
    }
    json_t *g = group_of(e, "gc");
    assert_non_null(g);
    assert_int_equal(json_integer_value(json_object_get(g, "count")), 5);
    assert_int_equal(json_integer_value(json_object_get(g, "affected")), 3);
    assert_string_equal(str_of(g, "first_seen"), "2023-11-14T22:13:20Z");
    assert_string_equal(str_of(g, "last_seen"), "2023-11-16T22:13:20Z");
    assert_string_equal(str_of(g, "latest_version"), "1.1");
    assert_string_equal(str_of(g, "status"), "open");
    assert_string_equal(str_of(g, "representative_crash"), "k1");
    json_t *want = json_loads("[{\"day\":\"2023-11-14\",\"count\":1},"
                              "{\"day\":\"2023-11-15\",\"count\":3},"
                              "{\"day\":\"2023-11-16\",\"count\":1}]",
                              0, NULL);
    assert_true(json_equal(json_object_get(g, "days"), want));
    json_decref(want);
    want = json_loads("[{\"version\":\"1.1\",\"count\":3},{\"version\":\"1.0\",\"count\":1}]", 0,
                      NULL);
    assert_true(json_equal(json_object_get(g, "versions"), want));
    json_decref(want);
    want = json_loads("[{\"os\":\"linux\",\"count\":3},{\"os\":\"mac\",\"count\":1}]", 0, NULL);
    assert_true(json_equal(json_object_get(g, "os"), want));
    json_decref(want);
    want = json_loads("[{\"arch\":\"aarch64\",\"count\":3},{\"arch\":\"x86-64\",\"count\":1}]", 0,
                      NULL);
    assert_true(json_equal(json_object_get(g, "arch"), want));
    json_decref(want);
    want = json_loads("[\"k5\",\"k4\",\"k3\",\"k2\",\"k1\"]", 0, NULL);
    assert_true(json_equal(json_object_get(g, "sample_crashes"), want));
    json_decref(want);
    json_decref(g);
}

static json_int_t g_total;
static void listed(eng *e, const fl_group_filter *flt, char *out, size_t cap);

/* Resolved in 1.2: a crash from 1.1 keeps it resolved, one from 1.3
 * reopens it as regressed. */
static void test_regression(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    ingest(e, "r1", "1.2");
    apply_s(e, "r1", "gr", "1.2", NULL);
    assert_int_equal(e->s->set_status(e->c, "gr", "resolved", "1.2"), 0);
    assert_int_equal(e->s->set_status(e->c, "nope", "resolved", NULL), 1);
    json_t *g = group_of(e, "gr");
    assert_string_equal(str_of(g, "status"), "resolved");
    assert_string_equal(str_of(g, "resolved_in"), "1.2");
    json_decref(g);
    ingest(e, "r2", "1.1");
    apply_s(e, "r2", "gr", "1.1", NULL);
    g = group_of(e, "gr");
    assert_string_equal(str_of(g, "status"), "resolved");
    assert_string_equal(str_of(g, "latest_version"), "1.2");
    json_decref(g);
    ingest(e, "r3", "1.3");
    apply_s(e, "r3", "gr", "1.3", NULL);
    g = group_of(e, "gr");
    assert_string_equal(str_of(g, "status"), "regressed");
    assert_string_equal(str_of(g, "latest_version"), "1.3");
    assert_int_equal(json_array_size(json_object_get(g, "versions")), 3);
    json_decref(g);
    /* Resolved with no version: the latest seen; reopened: none. */
    assert_int_equal(e->s->set_status(e->c, "gr", "resolved", NULL), 0);
    g = group_of(e, "gr");
    assert_string_equal(str_of(g, "resolved_in"), "1.3");
    json_decref(g);
    ingest(e, "r4", "1.3");
    apply_s(e, "r4", "gr", "1.3", NULL); /* the same version as the fix: still resolved */
    g = group_of(e, "gr");
    assert_string_equal(str_of(g, "status"), "resolved");
    json_decref(g);
    assert_int_equal(e->s->set_status(e->c, "gr", "open", NULL), 0);
    g = group_of(e, "gr");
    assert_string_equal(str_of(g, "status"), "open");
    assert_true(json_is_null(json_object_get(g, "resolved_in")));
    json_decref(g);
    /* Ignored: a crash of any version leaves it so, and makes no notice. */
    assert_int_equal(e->s->set_status(e->c, "gr", "ignored", NULL), 0);
    e->s->notify = true;
    ingest(e, "r5", "9.9");
    apply_s(e, "r5", "gr", "9.9", NULL);
    e->s->notify = false;
    g = group_of(e, "gr");
    assert_string_equal(str_of(g, "status"), "ignored");
    assert_string_equal(str_of(g, "latest_version"), "9.9");
    assert_int_equal(json_integer_value(json_object_get(g, "count")), 5);
    json_decref(g);
    fl_notice t[2];
    size_t n = 9;
    assert_int_equal(e->s->notices_claim(e->c, fl_now() + 10, 60, 7200, 2, t, &n), 0);
    assert_int_equal(n, 0);
    char got[64];
    listed(e, &(fl_group_filter){.limit = 5, .status = "ignored"}, got, sizeof got);
    assert_string_equal(got, "gr");
}

/* Symbols arrive: the crashes that lacked them are marked, reapplied into
 * their new group once, the old group's counters decremented (and the
 * group deleted when emptied). */
static void test_reapply_move(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    crash b[3] = {
        {.id = "b1",
         .group = "gold",
         .version = "1.0",
         .os = "linux",
         .arch = "x86-64",
         .install = "i1",
         .missing = "bbbb"},
        {.id = "b2",
         .group = "gold",
         .version = "1.0",
         .os = "linux",
         .arch = "aarch64",
         .install = "i2",
         .missing = "bbbb",
         .received = T0 + DAY},
        {.id = "b3",
         .group = "gother",
         .version = "1.0",
         .os = "linux",
         .install = "i1",
         .missing = "cccc"},
    };
    for (int i = 0; i < 3; i++) {
        assert_true(ingest_at(e, b[i].id, "1.0", b[i].received ? b[i].received : T0, NULL));
        assert_int_equal(apply_c(e, &b[i], false), 0);
    }
    assert_int_equal(count_of(e, "gold"), 2);
    assert_int_equal(int_of(e, "gold", "affected"), 2);

    char **ids = NULL;
    size_t n = 0;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->symbols_arrived(e->c, "bbbb", 100, &ids, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 2);
    free_ids(ids, n);
    assert_int_equal(load(e, "b1"), 3); /* marked */
    assert_int_equal(load(e, "b3"), 2); /* not */

    crash m = b[0];
    m.group = "gnew";
    m.frames = "[{\"function\":\"f\"}]";
    m.missing = NULL;
    for (int twice = 0; twice < 2; twice++) /* a redelivered task moves it once */
        assert_int_equal(apply_c(e, &m, true), 0);
    assert_int_equal(count_of(e, "gold"), 1);
    assert_int_equal(count_of(e, "gnew"), 1);
    assert_int_equal(int_of(e, "gold", "affected"), 1); /* i1 left with b1 */
    assert_int_equal(int_of(e, "gnew", "affected"), 1);
    json_t *g = group_of(e, "gold");
    assert_string_equal(str_of(g, "representative_crash"), "b2");
    assert_string_equal(str_of(g, "first_seen"), "2023-11-15T22:13:20Z");
    /* b1's architecture left with it. */
    json_t *want = json_loads("[{\"arch\":\"aarch64\",\"count\":1}]", 0, NULL);
    assert_true(json_equal(json_object_get(g, "arch"), want));
    json_decref(want);
    json_decref(g);
    g = group_of(e, "gnew");
    want = json_loads("[{\"arch\":\"x86-64\",\"count\":1}]", 0, NULL);
    assert_true(json_equal(json_object_get(g, "arch"), want));
    json_decref(want);
    json_decref(g);
    m = b[1];
    m.group = "gnew";
    m.missing = NULL;
    assert_int_equal(apply_c(e, &m, true), 0);
    assert_int_equal(count_of(e, "gold"), -1); /* emptied: deleted */
    assert_int_equal(count_of(e, "gnew"), 2);
    assert_int_equal(int_of(e, "gnew", "affected"), 2);
    assert_int_equal(count_of(e, "gother"), 1);
    g = group_of(e, "gnew");
    assert_string_equal(str_of(g, "last_seen"), "2023-11-15T22:13:20Z");
    json_decref(g);
    bool nf;
    json_t *c = e->s->get_crash(e->c, "b2", &nf);
    assert_string_equal(str_of(c, "group_id"), "gnew");
    json_decref(c);
    assert_int_equal(load(e, "b2"), 2); /* done */
    /* Same group again: only the frames change, nothing is counted. */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->requeue(e->c, "b1"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    m = b[0];
    m.group = "gnew";
    m.frames = "[{\"function\":\"better\"}]";
    m.missing = NULL;
    assert_int_equal(apply_c(e, &m, true), 0);
    assert_int_equal(count_of(e, "gnew"), 2);
    g = group_of(e, "gnew");
    assert_string_equal(str_of(json_array_get(json_object_get(g, "frames"), 0), "function"),
                        "better");
    json_decref(g);
}

/* The symbols table: listing, lookup, the version, the late-symbols check. */
static void test_symbols(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    int64_t v0, v1;
    assert_int_equal(e->s->symbols_version(e->c, &v0), 0);
    assert_int_equal(v0, 0);
    /* Real files: a store that shares them between servers keeps their
     * bytes (fetch_symbol). */
    char dir[] = "/tmp/fl-symtest.XXXXXX", dpath[64], xpath[64];
    assert_non_null(mkdtemp(dir));
    snprintf(dpath, sizeof dpath, "%s/debuginfo", dir);
    snprintf(xpath, sizeof xpath, "%s/executable", dir);
    write_file(dpath, "debug bytes", 11);
    write_file(xpath, "executable bytes", 16);
    fl_symbol_rec r = {.build_id = "bbbb",
                       .name = "a.debug",
                       .size = 10,
                       .status = "ok",
                       .kind = "debuginfo",
                       .path = dpath,
                       .uploaded = T0};
    assert_int_equal(e->s->add_symbol(e->c, &r), 0); /* outside a transaction */
    fl_symbol_rec bad = {
        .name = "junk", .size = 3, .status = "failed", .error = "not ELF", .uploaded = T0 + 1};
    assert_int_equal(e->s->begin(e->c), 0); /* inside one */
    assert_int_equal(e->s->add_symbol(e->c, &bad), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    fl_symbol_rec ex = {.build_id = "bbbb",
                        .name = "a",
                        .size = 20,
                        .status = "ok",
                        .kind = "executable",
                        .path = xpath,
                        .uploaded = T0 + 2};
    assert_int_equal(e->s->add_symbol(e->c, &ex), 0);
    char path[64];
    assert_int_equal(e->s->find_symbol(e->c, "bbbb", NULL, path, sizeof path), 0);
    assert_string_equal(path, xpath); /* the newest */
    assert_int_equal(e->s->find_symbol(e->c, "bbbb", "executable", path, sizeof path), 0);
    assert_string_equal(path, xpath);
    if (e->s->fetch_symbol) {
        /* Another server's upload root: the newest file arrives there,
         * whole, once. */
        char root[80], got[128], buf[64];
        snprintf(root, sizeof root, "%s/root", dir);
        assert_int_equal(mkdir(root, 0755), 0);
        assert_int_equal(e->s->fetch_symbol(e->c, "bbbb", root), 0);
        snprintf(got, sizeof got, "%s/bbbb/executable", root);
        FILE *fp = fopen(got, "rb");
        assert_non_null(fp);
        size_t n = fread(buf, 1, sizeof buf, fp);
        fclose(fp);
        assert_int_equal(n, 16);
        assert_memory_equal(buf, "executable bytes", 16);
        assert_int_equal(e->s->fetch_symbol(e->c, "bbbb", root), 1);  /* there already */
        assert_int_equal(e->s->fetch_symbol(e->c, "cccc", root), 1);  /* none */
        assert_int_equal(e->s->fetch_symbol(e->c, "../x", root), -1); /* not a build id */
        unlink(got);
        snprintf(got, sizeof got, "%s/bbbb", root);
        rmdir(got);
        rmdir(root);
        /* A file that cannot be read is refused, not recorded half. */
        fl_symbol_rec gone = {.build_id = "eeee",
                              .name = "e",
                              .size = 1,
                              .status = "ok",
                              .kind = "debuginfo",
                              .path = "/nonexistent/fl/e",
                              .uploaded = T0};
        assert_int_equal(e->s->add_symbol(e->c, &gone), -1);
        assert_int_equal(e->s->find_symbol(e->c, "eeee", NULL, path, sizeof path), 1);
    }
    unlink(dpath);
    unlink(xpath);
    rmdir(dir);
    assert_int_equal(e->s->find_symbol(e->c, "cccc", NULL, path, sizeof path), 1);
    assert_int_equal(e->s->find_symbol(e->c, "bbbb", NULL, path, 4), -1); /* too small */
    json_t *l = e->s->list_symbols(e->c, 10);
    json_t *want = json_loads(
        "{\"symbols\":[{\"build_id\":\"bbbb\",\"name\":\"a\",\"size\":20,\"status\":\"ok\","
        "\"error\":null,\"kind\":\"executable\",\"uploaded\":\"2023-11-14T22:13:22Z\"},"
        "{\"build_id\":null,\"name\":\"junk\",\"size\":3,\"status\":\"failed\",\"error\":"
        "\"not ELF\",\"kind\":null,\"uploaded\":\"2023-11-14T22:13:21Z\"},{\"build_id\":"
        "\"bbbb\",\"name\":\"a.debug\",\"size\":10,\"status\":\"ok\",\"error\":null,\"kind\":"
        "\"debuginfo\",\"uploaded\":\"2023-11-14T22:13:20Z\"}]}",
        0, NULL);
    assert_true(json_equal(l, want));
    json_decref(want);
    json_decref(l);
    l = e->s->list_symbols(e->c, 1);
    assert_int_equal(json_array_size(json_object_get(l, "symbols")), 1);
    json_decref(l);
    assert_int_equal(e->s->symbols_version(e->c, &v1), 0);
    assert_true(v1 > v0);

    /* A crash processed while its symbols arrived: re-queued once. */
    assert_int_equal(e->s->symbols_version(e->c, &v0), 0);
    ingest(e, "s4", "1.0");
    fl_symbol_rec r2 = {
        .build_id = "dddd", .name = "d.debug", .size = 1, .status = "ok", .uploaded = T0};
    assert_int_equal(e->s->add_symbol(e->c, &r2), 0); /* arrives meanwhile */
    const char *m[1] = {"dddd"};
    fl_processed p4 = {.crash_id = "s4",
                       .group_id = "g4",
                       .signature = "s4",
                       .stack_hash = "h",
                       .received = T0,
                       .missing_build_ids = m,
                       .nmissing = 1};
    bool rq = false;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->apply(e->c, &p4), 0);
    assert_int_equal(e->s->late_symbols(e->c, &p4, v0, &rq), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_true(rq);
    assert_int_equal(load(e, "s4"), 3);
    assert_int_equal(e->s->symbols_version(e->c, &v1), 0);
    assert_int_equal(e->s->late_symbols(e->c, &p4, v1, &rq), 0); /* seen it: no loop */
    assert_false(rq);
    /* symbols_arrived: at most max ids. */
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "sx%d", i);
        ingest(e, id, "1.0");
        assert_int_equal(apply_c(e, &(crash){.id = id, .group = "gx", .missing = "eeee"}, false),
                         0);
    }
    char **ids = NULL;
    size_t n = 0;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->symbols_arrived(e->c, "eeee", 2, &ids, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 2);
    free_ids(ids, n);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->symbols_arrived(e->c, "ffff", 10, &ids, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 0);
}

/* requeue(): unknown 1, pending 2, failed -> processed as new (its watch
 * forgotten), processed -> marked for reapply, marked already 2. */
static void test_requeue(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    char ref[FL_CRASH_ID_MAX];
    assert_true(ingest_at(e, "q1", "1.0", T0, ref));
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->requeue(e->c, "nope"), 1);
    assert_int_equal(e->s->requeue(e->c, "q1"), 2);
    e->s->rollback(e->c);
    assert_int_equal(apply_c(e, &(crash){.id = "q1", .ref = ref, .failed = true}, false), 0);
    unsigned before = 9;
    assert_int_equal(e->s->processing_started(e->c, "q1", &before), 0);
    assert_int_equal(before, 0);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->requeue(e->c, "q1"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(e->s->processing_started(e->c, "q1", &before), 0);
    assert_int_equal(before, 0); /* the watch was forgotten */
    bool nf;
    json_t *c = e->s->get_crash(e->c, "q1", &nf);
    assert_string_equal(str_of(c, "state"), "pending");
    json_decref(c);
    assert_int_equal(load(e, "q1"), 0);
    assert_int_equal(apply_c(e, &(crash){.id = "q1", .group = "g9", .version = "1.0"}, false), 0);
    assert_int_equal(count_of(e, "g9"), 1);
    assert_int_equal(load(e, "q1"), 2);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->requeue(e->c, "q1"), 0);
    assert_int_equal(e->s->requeue(e->c, "q1"), 2); /* marked already: in the queue */
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(load(e, "q1"), 3);
    assert_int_equal(count_of(e, "g9"), 1);
}

/* ---- deleting crashes */

/* Ingest crash id with a raw log that names it (its "secret"), received at
 * rcv; its task's name into ref. */
static void ingest_secret(eng *e, const char *id, int64_t rcv, char ref[FL_CRASH_ID_MAX])
{
    char raw[128];
    snprintf(raw, sizeof raw,
             "FAULTLINE 1\nCRASHLOG_VERSION 2\nETC_KEY s\nETC_VALUE SECRET-%s\nEND\n", id);
    fl_ingest_item it = {.app = "app",
                         .version = "1.0",
                         .received = rcv,
                         .raw = raw,
                         .raw_len = strlen(raw),
                         .email = "user@example.org"};
    fl_ingest_item *one = &it;
    snprintf(it.crash_id, sizeof it.crash_id, "%s", id);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->insert_crashes(e->c, &one, 1), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_false(it.duplicate);
    snprintf(ref, FL_CRASH_ID_MAX, "%s", it.ref[0] ? it.ref : id);
}

/* Whether the database still holds `needle` in a raw log anywhere (SQLite:
 * every chunk decompressed; PostgreSQL: every row's raw). */
static bool db_holds(fx *f, const char *needle)
{
    bool found = false;
    if (is_pg(&f->e)) {
        PGconn *db = PQconnectdb(f->url);
        assert_int_equal(PQstatus(db), CONNECTION_OK);
        PGresult *r = PQexecParams(db, "SELECT raw FROM crashes", 0, NULL, NULL, NULL, NULL, 1);
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        for (int i = 0; i < PQntuples(r) && !found; i++) {
            char *t = NULL;
            size_t tl = 0;
            if (PQgetlength(r, i, 0) &&
                !fl_unzstd(PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), 1 << 20, &t, &tl))
                found = memmem(t, tl, needle, strlen(needle)) != NULL;
            free(t);
        }
        PQclear(r);
        PQfinish(db);
        return found;
    }
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT data FROM raw_chunks", -1, &s, NULL),
                     SQLITE_OK);
    while (!found && sqlite3_step(s) == SQLITE_ROW) {
        char *t = NULL;
        size_t tl = 0;
        assert_int_equal(fl_unzstd(sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0),
                                   1 << 20, &t, &tl),
                         0);
        found = memmem(t, tl, needle, strlen(needle)) != NULL;
        free(t);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return found;
}

static int64_t sqlite_count(fx *f, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
}

static int delete_c(eng *e, const char *id)
{
    assert_int_equal(e->s->begin(e->c), 0);
    int r = e->s->delete_crash(e->c, id);
    assert_int_equal(e->s->commit(e->c), 0);
    return r;
}

static const char *state_of(eng *e, const char *id, char *out, size_t cap)
{
    bool nf = false;
    json_t *c = e->s->get_crash(e->c, id, &nf);
    snprintf(out, cap, "%s", c ? str_of(c, "state") : nf ? "(none)" : "(error)");
    if (c && !strcmp(out, "deleted")) /* nothing of its content left */
        assert_true(!json_object_get(c, "raw") && !json_object_get(c, "email") &&
                    !json_object_get(c, "threads"));
    json_decref(c);
    return out;
}

/* delete_crash(): processed and pending crashes, their logs gone from the
 * database, the group's counts kept, a resend not counted, and what the
 * other calls make of a deleted crash. */
static void test_delete_crash(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    char r1[FL_CRASH_ID_MAX], r2[FL_CRASH_ID_MAX], r3[FL_CRASH_ID_MAX], st_[32];
    ingest_secret(e, "d1", T0, r1);
    ingest_secret(e, "d2", T0, r2);
    ingest_secret(e, "d3", T0, r3);
    assert_int_equal(load(e, r2), 0);
    crash k2 = {.id = "d2",
                .ref = r2,
                .group = "gd",
                .version = "1.0",
                .missing = "abab",
                .processed = "{\"threads\":[]}"};
    crash k3 = {
        .id = "d3", .ref = r3, .group = "gd", .version = "1.0", .processed = "{\"threads\":[]}"};
    assert_int_equal(apply_c(e, &k2, false), 0);
    assert_int_equal(apply_c(e, &k3, false), 0);
    assert_int_equal(count_of(e, "gd"), 2);
    json_t *g = group_of(e, "gd");
    assert_string_equal(str_of(g, "representative_crash"), "d2");
    json_decref(g);
    assert_true(db_holds(f, "SECRET-d2"));

    assert_int_equal(delete_c(e, "nope"), 1);
    assert_int_equal(delete_c(e, "d2"), 0);
    assert_string_equal(state_of(e, "d2", st_, sizeof st_), "deleted");
    assert_false(db_holds(f, "SECRET-d2"));
    assert_true(db_holds(f, "SECRET-d3")); /* its neighbour in the database is whole */
    bool nf;
    json_t *c3 = e->s->get_crash(e->c, "d3", &nf);
    assert_non_null(strstr(str_of(c3, "raw"), "SECRET-d3"));
    json_decref(c3);
    assert_int_equal(count_of(e, "gd"), 2); /* counts say what happened */
    g = group_of(e, "gd");
    assert_string_equal(str_of(g, "representative_crash"), "d3");
    json_t *samples = json_object_get(g, "sample_crashes");
    assert_int_equal(json_array_size(samples), 1);
    assert_string_equal(json_string_value(json_array_get(samples, 0)), "d3");
    json_decref(g);
    json_t *gc = e->s->group_crashes(e->c, "gd", NULL, 10, 0, &nf);
    assert_int_equal(json_integer_value(json_object_get(gc, "total")), 1);
    json_t *first = json_array_get(json_object_get(gc, "crashes"), 0);
    assert_string_equal(str_of(first, "id"), "d3");
    assert_string_equal(str_of(first, "version"), "1.0");
    json_decref(gc);
    assert_null(e->s->group_crashes(e->c, "no-such-group", NULL, 10, 0, &nf));
    assert_true(nf);
    assert_int_equal(delete_c(e, "d2"), 2);
    assert_int_equal(load(e, "d2"), 2);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->requeue(e->c, "d2"), 3);
    char **ids = NULL;
    size_t n = 9;
    assert_int_equal(e->s->symbols_arrived(e->c, "abab", 10, &ids, &n), 0);
    assert_int_equal(n, 0); /* its missing symbols were forgotten */
    free_ids(ids, n);
    assert_int_equal(e->s->commit(e->c), 0);
    /* A resend is neither stored again nor counted. */
    assert_false(ingest_at(e, "d2", "1.0", T0, NULL));
    assert_int_equal(count_of(e, "gd"), 2);

    /* Pending: never processed, its task finds nothing to do. */
    assert_int_equal(delete_c(e, "d1"), 0);
    assert_string_equal(state_of(e, "d1", st_, sizeof st_), "deleted");
    assert_false(db_holds(f, "SECRET-d1"));
    int l = load(e, r1);
    assert_true(l == 1 || l == 2);
    crash k1 = {.id = "d1", .ref = r1, .group = "gd1", .version = "1.0"};
    apply_c(e, &k1, false);
    assert_int_equal(count_of(e, "gd1"), -1);
    char ref[FL_CRASH_ID_MAX] = "";
    if (ingest_at(e, "d1", "1.0", T0, ref)) /* stored by an engine that looks later */
        apply_c(e, &(crash){.id = "d1", .ref = ref, .group = "gd1", .version = "1.0"}, false);
    assert_int_equal(count_of(e, "gd1"), -1);
    assert_string_equal(state_of(e, "d1", st_, sizeof st_), "deleted");
    assert_int_equal(delete_c(e, "d1"), 2);
}

/* A count from either engine's database (sql: one row, one integer). */
static int64_t db_count(fx *f, const char *sql)
{
    if (!is_pg(&f->e))
        return sqlite_count(f, sql);
    PGconn *db = PQconnectdb(f->url);
    assert_int_equal(PQstatus(db), CONNECTION_OK);
    PGresult *r = PQexec(db, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    int64_t n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(db);
    return n;
}

static bool retryable(const char *err);

/* delete_group() and its steps, each in a transaction of its own, retried
 * when it met another writer (PostgreSQL: a deadlock); returns
 * delete_group()'s answer and the steps taken and crashes erased. */
static int delete_g(eng *e, const char *id, size_t batch, int *steps, int64_t *erased)
{
    char into[64] = "";
    int r;
    for (int tries = 0;; tries++) {
        r = e->s->begin(e->c);
        if (r == 0)
            r = e->s->delete_group(e->c, id, into);
        if (r == 0 && e->s->commit(e->c))
            r = -1;
        if (r >= 0)
            break;
        const char *why = e->s->error(e->c);
        e->s->rollback(e->c);
        if (!retryable(why) || tries > 200)
            fail_msg("delete_group(%s): %s", id, why ? why : "?");
        usleep(1000);
    }
    if (r)
        e->s->rollback(e->c);
    *steps = 0;
    *erased = 0;
    for (bool more = r == 0; more;) {
        size_t n = 0;
        if (e->s->begin(e->c) || e->s->delete_group_step(e->c, id, batch, &n, &more) ||
            e->s->commit(e->c)) {
            const char *why = e->s->error(e->c);
            e->s->rollback(e->c);
            if (!retryable(why))
                fail_msg("delete_group_step(%s): %s", id, why ? why : "?");
            more = true;
            continue;
        }
        ++*steps;
        *erased += (int64_t)n;
    }
    return r;
}

/* delete_group(): every crash of the group and of those merged into it
 * erased as delete_crash() erases one, in batches; rows, counters and
 * notices gone; tombstones; a resend a duplicate; the signatures' next
 * crashes in new groups with new ids; a merged id refused. */
static void test_delete_group(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    e->s->notify = true;
    char ref[8][FL_CRASH_ID_MAX], st_[32];
    const char *ids[] = {"x1", "x2", "x3", "x4", "m1", "y1"};
    const char *grp[] = {"gx", "gx", "gx", "gx", "gm", "gy"};
    for (int i = 0; i < 6; i++)
        ingest_secret(e, ids[i], T0 + i * DAY, ref[i]);
    for (int i = 0; i < 6; i++) {
        char inst[8];
        snprintf(inst, sizeof inst, "i%d", i % 3);
        crash k = {.id = ids[i],
                   .ref = ref[i],
                   .group = grp[i],
                   .version = i % 2 ? "1.0" : "2.0",
                   .os = "linux",
                   .install = inst,
                   .received = T0 + i * DAY,
                   .missing = "cdcd",
                   .processed = "{\"threads\":[]}"};
        assert_int_equal(apply_c(e, &k, false), 0);
    }
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "gx", "gm"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(count_of(e, "gx"), 5);
    assert_int_equal(delete_c(e, "x4"), 0); /* deleted alone before: not counted again */

    int steps;
    int64_t erased;
    char into[64] = "";
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->delete_group(e->c, "gm", into), 3);
    assert_string_equal(into, "gx");
    assert_int_equal(e->s->delete_group(e->c, "nope", into), 1);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(count_of(e, "gx"), 5); /* nothing changed */

    assert_int_equal(delete_g(e, "gx", 2, &steps, &erased), 0);
    assert_int_equal(erased, 4); /* x1..x3 and m1 */
    assert_true(steps >= 3);     /* 2 + 2, then the installations */
    for (int i = 0; i < 5; i++)
        assert_string_equal(state_of(e, ids[i], st_, sizeof st_), "deleted");
    assert_string_equal(state_of(e, "y1", st_, sizeof st_), "processed");
    assert_false(db_holds(f, "SECRET-x1"));
    assert_false(db_holds(f, "SECRET-m1"));
    assert_true(db_holds(f, "SECRET-y1")); /* a neighbour is whole */
    assert_int_equal(count_of(e, "gx"), -1);
    assert_int_equal(count_of(e, "gm"), -1);
    assert_int_equal(count_of(e, "gy"), 1);
    bool nf;
    assert_null(e->s->group_crashes(e->c, "gx", NULL, 10, 0, &nf));
    assert_true(nf);
    static const char *const left[] = {
        "SELECT count(*) FROM groups WHERE id IN ('gx','gm') OR merged_into='gx'",
        "SELECT count(*) FROM group_days WHERE group_id IN ('gx','gm')",
        "SELECT count(*) FROM group_versions WHERE group_id IN ('gx','gm')",
        "SELECT count(*) FROM group_os WHERE group_id IN ('gx','gm')",
        "SELECT count(*) FROM group_arch WHERE group_id IN ('gx','gm')",
        "SELECT count(*) FROM group_installs WHERE group_id IN ('gx','gm')",
        "SELECT count(*) FROM notices WHERE group_id IN ('gx','gm')",
        "SELECT count(*) FROM crashes WHERE group_id IN ('gx','gm')",
        "SELECT count(*) FROM crash_missing WHERE crash_id IN ('x1','x2','x3','m1')",
    };
    for (size_t i = 0; i < sizeof left / sizeof *left; i++)
        if (db_count(f, left[i]) != 0)
            fail_msg("left behind: %s", left[i]);
    assert_int_equal(db_count(f, "SELECT count(*) FROM notices WHERE group_id='gy'"), 1);

    int64_t when = 0, n = 0;
    bool fin = false;
    char with[64];
    assert_int_equal(e->s->group_deleted(e->c, "gx", &when, &n, &fin, with), 0);
    assert_int_equal(n, 4);
    assert_true(fin);
    assert_string_equal(with, "");
    assert_true(when > T0);
    assert_int_equal(e->s->group_deleted(e->c, "gm", &when, &n, &fin, with), 0);
    assert_string_equal(with, "gx");
    assert_int_equal(e->s->group_deleted(e->c, "gy", &when, &n, &fin, with), 1);
    assert_int_equal(delete_g(e, "gx", 2, &steps, &erased), 2);
    assert_int_equal(delete_g(e, "gm", 2, &steps, &erased), 2);

    /* Resends are duplicates, counted nowhere. */
    assert_false(ingest_at(e, "x1", "1.0", T0, NULL));
    assert_false(ingest_at(e, "m1", "1.0", T0, NULL));
    /* The signatures' next crashes: new groups, under new ids. */
    char gx1[33], gx2[33], gm1[33];
    fl_group_gen_id("gx", 1, gx1);
    fl_group_gen_id("gx", 2, gx2);
    fl_group_gen_id("gm", 1, gm1);
    assert_string_not_equal(gx1, gm1);
    assert_true(ingest(e, "x5", "3.0"));
    apply_s(e, "x5", "gx", "3.0", "i7");
    assert_true(ingest(e, "m2", "3.0"));
    apply_s(e, "m2", "gm", "3.0", "i7");
    assert_int_equal(count_of(e, "gx"), -1);
    assert_int_equal(count_of(e, gx1), 1);
    assert_int_equal(int_of(e, gx1, "affected"), 1);
    assert_int_equal(count_of(e, gm1), 1);
    json_t *c5 = e->s->get_crash(e->c, "x5", &nf);
    assert_string_equal(str_of(c5, "group_id"), gx1);
    json_decref(c5);
    json_t *g = group_of(e, gx1);
    assert_string_equal(str_of(g, "first_seen"), "2023-11-14T22:13:20Z");
    assert_string_equal(str_of(g, "status"), "open");
    json_decref(g);
    assert_int_equal(db_count(f, "SELECT count(*) FROM notices WHERE kind='new_group'"), 3);
    /* A new group deleted in its turn: the next crash starts generation 2. */
    assert_int_equal(delete_g(e, gx1, 100, &steps, &erased), 0);
    assert_int_equal(erased, 1);
    assert_true(ingest(e, "x6", "3.0"));
    apply_s(e, "x6", "gx", "3.0", "i7");
    assert_int_equal(count_of(e, gx1), -1);
    assert_int_equal(count_of(e, gx2), 1);
    fl_group_filter flt = {.limit = 100};
    json_t *l = e->s->list_groups(e->c, &flt);
    char dump[512];
    char *t = json_dumps(l, JSON_COMPACT);
    snprintf(dump, sizeof dump, "%s", t);
    free(t);
    json_decref(l);
    assert_null(strstr(dump, "\"id\":\"gx\""));
    assert_non_null(strstr(dump, gx2));
}

/* Several crashes of a group in one chunk of raw logs, among another
 * group's, and more chunks than one step blanks (SQLite): every log of the
 * group is gone, every neighbour whole, in more than one step. */
static void test_delete_group_chunks(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    char raw[6][128];
    fl_ingest_item it[6];
    fl_ingest_item *v[6];
    for (int i = 0; i < 6; i++) {
        snprintf(raw[i], sizeof raw[i],
                 "FAULTLINE 1\nCRASHLOG_VERSION 2\nETC_KEY s\nETC_VALUE SECRET-b%d\nEND\n", i);
        it[i] = (fl_ingest_item){.app = "app",
                                 .version = "1.0",
                                 .received = T0,
                                 .raw = raw[i],
                                 .raw_len = strlen(raw[i])};
        snprintf(it[i].crash_id, sizeof it[i].crash_id, "b%d", i);
        v[i] = &it[i];
    }
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->insert_crashes(e->c, v, 6), 0); /* one batch: one chunk */
    assert_int_equal(e->s->commit(e->c), 0);
    for (int i = 0; i < 6; i++) {
        crash k = {.id = it[i].crash_id,
                   .ref = it[i].ref[0] ? it[i].ref : it[i].crash_id,
                   .group = i % 2 ? "gr" : "gq",
                   .version = "1.0"};
        assert_int_equal(apply_c(e, &k, false), 0);
    }
    char ref[FL_CRASH_ID_MAX], id[16];
    for (int i = 0; i < 12; i++) { /* a chunk each */
        snprintf(id, sizeof id, "q%d", i);
        ingest_secret(e, id, T0, ref);
        crash k = {.id = id, .ref = ref, .group = "gq", .version = "1.0"};
        assert_int_equal(apply_c(e, &k, false), 0);
    }
    int steps;
    int64_t erased;
    assert_int_equal(delete_g(e, "gq", 1000, &steps, &erased), 0);
    assert_int_equal(erased, 15);
    if (!is_pg(e))
        assert_true(steps >= 2); /* 8 chunks to a step */
    for (int i = 0; i < 6; i++) {
        char secret[32];
        snprintf(secret, sizeof secret, "SECRET-b%d", i);
        assert_int_equal(db_holds(f, secret), i % 2 == 1);
    }
    for (int i = 0; i < 12; i++) {
        char secret[32];
        snprintf(secret, sizeof secret, "SECRET-q%d", i);
        assert_false(db_holds(f, secret));
    }
    bool nf;
    json_t *c = e->s->get_crash(e->c, "b3", &nf);
    assert_non_null(strstr(str_of(c, "raw"), "SECRET-b3"));
    json_decref(c);
    assert_int_equal(count_of(e, "gr"), 3);
}

/* A crash of the deleted group's signature that is reprocessed while the
 * group is erased stays to be erased; nothing moves it out. */
static void test_delete_group_reapply(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    char r1[FL_CRASH_ID_MAX], r2[FL_CRASH_ID_MAX], st_[32];
    ingest_secret(e, "z1", T0, r1);
    ingest_secret(e, "z2", T0, r2);
    crash k1 = {.id = "z1", .ref = r1, .group = "gz", .version = "1.0", .missing = "efef"};
    crash k2 = {.id = "z2", .ref = r2, .group = "gz", .version = "1.0"};
    assert_int_equal(apply_c(e, &k1, false), 0);
    assert_int_equal(apply_c(e, &k2, false), 0);
    char **ids = NULL;
    size_t n = 0;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->symbols_arrived(e->c, "efef", 10, &ids, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 1);
    free_ids(ids, n);
    char into[64];
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->delete_group(e->c, "gz", into), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    /* Stopped here (a server stopped): asked again, it goes on. */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->delete_group(e->c, "gz", into), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    /* Its task runs now, between the delete's start and its steps, and
     * finds another signature or the same: neither moves it. */
    crash again = {.id = "z1", .ref = "z1", .group = "gz-other", .version = "1.0"};
    assert_int_equal(apply_c(e, &again, true), 0);
    assert_int_equal(count_of(e, "gz-other"), -1);
    again.group = "gz";
    assert_int_equal(apply_c(e, &again, true), 0);
    char gz1[33];
    fl_group_gen_id("gz", 1, gz1);
    assert_int_equal(count_of(e, gz1), -1);
    size_t k = 0;
    bool more = true;
    int64_t total = 0;
    while (more) {
        assert_int_equal(e->s->begin(e->c), 0);
        assert_int_equal(e->s->delete_group_step(e->c, "gz", 1, &k, &more), 0);
        assert_int_equal(e->s->commit(e->c), 0);
        total += (int64_t)k;
    }
    assert_int_equal(total, 2);
    assert_string_equal(state_of(e, "z1", st_, sizeof st_), "deleted");
    assert_string_equal(state_of(e, "z2", st_, sizeof st_), "deleted");
    if (e->s->backlog)
        assert_int_equal(e->s->backlog(e->c), 0);
}

/* expire(): the oldest processed and failed crashes first, rows and all,
 * in batches; groups keep their counts; a crash waiting to be processed
 * stays; the raw logs' space goes with the last crash that used it. */
static void test_expire(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    char r[6][FL_CRASH_ID_MAX], st_[32];
    const char *ids[6] = {"x0", "x1", "x2", "x3", "x4", "x5"};
    for (int i = 0; i < 6; i++)
        ingest_secret(e, ids[i], T0 + (i ? i - 1 : 0) * DAY, r[i]);
    /* x0 failed; x1..x3 processed into gx; x4, x5 pending, x5 the newest. */
    assert_int_equal(apply_c(e, &(crash){.id = "x0", .ref = r[0], .failed = true}, false), 0);
    for (int i = 1; i <= 3; i++) {
        crash k = {.id = ids[i],
                   .ref = r[i],
                   .group = "gx",
                   .version = "1.0",
                   .missing = "cdcd",
                   .received = T0 + (i - 1) * DAY,
                   .processed = "{\"threads\":[]}"};
        assert_int_equal(apply_c(e, &k, false), 0);
    }
    size_t n = 9;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->expire(e->c, T0 + 2 * DAY, 1, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->expire(e->c, T0 + 2 * DAY, 10, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 2); /* x0 and x1 (received at T0), x2 (T0 + 1 day) */
    for (int i = 0; i < 3; i++)
        assert_string_equal(state_of(e, ids[i], st_, sizeof st_), "(none)");
    assert_string_equal(state_of(e, "x3", st_, sizeof st_), "processed");
    assert_int_equal(count_of(e, "gx"), 3);
    json_t *g = group_of(e, "gx");
    assert_string_equal(str_of(g, "representative_crash"), "x3");
    json_decref(g);
    assert_false(db_holds(f, "SECRET-x1"));
    assert_true(db_holds(f, "SECRET-x3"));
    char **left = NULL;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->symbols_arrived(e->c, "cdcd", 10, &left, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 1); /* x3 only */
    assert_string_equal(left[0], "x3");
    free_ids(left, n);

    /* Everything is older now; the pending ones stay (x3 is marked for
     * re-processing: it stays too, until it is processed again). */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->expire(e->c, T0 + 100 * DAY, 10, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 0);
    crash k3 = {.id = "x3", .group = "gx", .version = "1.0", .received = T0 + 2 * DAY};
    assert_int_equal(apply_c(e, &k3, true), 0);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->expire(e->c, T0 + 100 * DAY, 10, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 1);
    assert_int_equal(count_of(e, "gx"), 3);
    g = group_of(e, "gx");
    assert_true(json_is_null(json_object_get(g, "representative_crash")));
    json_decref(g);
    assert_int_equal(load(e, r[4]), 0);
    assert_int_equal(load(e, r[5]), 0);
    assert_true(db_holds(f, "SECRET-x4"));
    assert_false(db_holds(f, "SECRET-x3"));
    if (!is_pg(e)) /* the chunks of x0..x3 are gone; x4's and x5's stay */
        assert_int_equal(sqlite_count(f, "SELECT count(*) FROM raw_chunks"), 2);
    /* Forgotten: a resend after its retention is a new crash. */
    assert_true(ingest_at(e, "x1", "1.0", T0 + 101 * DAY, NULL));
}

/* Ingests crash id with a minidump of n bytes (each byte seed + i) in
 * one batch of copies items (a resend within the batch); returns whether
 * it was stored (not a duplicate) and its ref. */
static bool ingest_dump(eng *e, const char *id, unsigned seed, size_t n, int copies,
                        char ref[FL_CRASH_ID_MAX])
{
    static const char raw[] = "FAULTLINE 1\nCRASHLOG_VERSION 2\nCRASH_SOURCE minidump\nEND\n";
    char *d = malloc(n);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = (char)(seed + i * (i >> 7));
    void *z = NULL;
    size_t zl = 0;
    assert_int_equal(fl_zstd(d, n, 3, &z, &zl), 0);
    free(d);
    fl_ingest_item it[2];
    fl_ingest_item *v[2] = {&it[0], &it[1]};
    for (int k = 0; k < copies; k++) {
        it[k] = (fl_ingest_item){.app = "app",
                                 .version = "1.0",
                                 .received = T0,
                                 .raw = raw,
                                 .raw_len = strlen(raw),
                                 .dump = z,
                                 .dump_len = zl,
                                 .dump_size = n};
        snprintf(it[k].crash_id, sizeof it[k].crash_id, "%s", id);
    }
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->insert_crashes(e->c, v, (size_t)copies), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    free(z);
    if (ref)
        snprintf(ref, FL_CRASH_ID_MAX, "%s", it[0].ref[0] ? it[0].ref : id);
    return !it[0].duplicate;
}

/* get_minidump()'s answer, and whether the bytes are the ones
 * ingest_dump(seed, n) sent. */
static int dump_of(eng *e, const char *id, unsigned seed, size_t n, bool *same)
{
    char *d = NULL;
    size_t len = 0;
    int r = e->s->get_minidump(e->c, id, &d, &len);
    *same = r == 0 && len == n;
    for (size_t i = 0; *same && i < n; i++)
        *same = d[i] == (char)(seed + i * (i >> 7));
    free(d);
    return r;
}

/* Minidumps kept beside their crashes: given back whole, stored once
 * however often they come, and gone with their crash -- deleted, expired
 * or deleted with its group -- and not stored again by a resend then. */
static void test_minidumps(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    char ref[4][FL_CRASH_ID_MAX], st_[32];
    bool same = false;
    assert_true(ingest_dump(e, "md1", 1, 300000, 2, ref[0])); /* twice in its batch */
    assert_int_equal(dump_of(e, "md1", 1, 300000, &same), 0);
    assert_true(same);
    /* A resend while it waits: the same row, whatever the engine does. */
    ingest_dump(e, "md1", 1, 300000, 1, NULL);
    assert_int_equal(dump_of(e, "md1", 1, 300000, &same), 0);
    assert_true(same);
    assert_int_equal(db_count(f, "SELECT count(*) FROM minidumps"), 1);
    /* None for a crash that came as a log, or for no crash. */
    char r0[FL_CRASH_ID_MAX];
    ingest_secret(e, "log1", T0, r0);
    assert_int_equal(dump_of(e, "log1", 0, 0, &same), 1);
    assert_int_equal(dump_of(e, "nope", 0, 0, &same), 1);
    /* get_crash() says whether one is kept, and its size. */
    bool nf = false;
    json_t *j = e->s->get_crash(e->c, "md1", &nf);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "minidump_bytes")), 300000);
    json_decref(j);
    j = e->s->get_crash(e->c, "log1", &nf);
    assert_non_null(j);
    assert_null(json_object_get(j, "minidump_bytes"));
    json_decref(j);
    /* Processed, it is still there. */
    crash k = {.id = "md1", .ref = ref[0], .group = "gd", .version = "1.0"};
    assert_int_equal(apply_c(e, &k, false), 0);
    assert_int_equal(dump_of(e, "md1", 1, 300000, &same), 0);
    assert_true(same);
    j = e->s->get_crash(e->c, "md1", &nf);
    assert_non_null(j);
    assert_string_equal(str_of(j, "state"), "processed");
    assert_int_equal(json_integer_value(json_object_get(j, "minidump_bytes")), 300000);
    json_decref(j);
    /* Deleted: gone, pending or processed, and a resend stores none. */
    assert_true(ingest_dump(e, "md2", 2, 5000, 1, ref[1]));
    assert_int_equal(delete_c(e, "md1"), 0);
    assert_int_equal(delete_c(e, "md2"), 0);
    assert_int_equal(dump_of(e, "md1", 1, 300000, &same), 1);
    assert_int_equal(dump_of(e, "md2", 2, 5000, &same), 1);
    j = e->s->get_crash(e->c, "md2", &nf);
    assert_non_null(j);
    assert_null(json_object_get(j, "minidump_bytes")); /* deleted */
    json_decref(j);
    assert_false(ingest_dump(e, "md1", 1, 300000, 1, NULL));
    assert_int_equal(dump_of(e, "md1", 1, 300000, &same), 1);
    /* Expired with its crash. */
    assert_true(ingest_dump(e, "md3", 3, 7000, 1, ref[2]));
    crash k3 = {.id = "md3", .ref = ref[2], .group = "gd", .version = "1.0"};
    assert_int_equal(apply_c(e, &k3, false), 0);
    size_t n = 0;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->expire(e->c, T0 + 1, 10, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_string_equal(state_of(e, "md3", st_, sizeof st_), "(none)");
    assert_int_equal(dump_of(e, "md3", 3, 7000, &same), 1);
    /* Deleted with its group. */
    assert_true(ingest_dump(e, "md4", 4, 9000, 1, ref[3]));
    crash k4 = {.id = "md4", .ref = ref[3], .group = "gq", .version = "1.0"};
    assert_int_equal(apply_c(e, &k4, false), 0);
    assert_int_equal(dump_of(e, "md4", 4, 9000, &same), 0);
    int steps;
    int64_t erased;
    assert_int_equal(delete_g(e, "gq", 10, &steps, &erased), 0);
    assert_int_equal(erased, 1);
    assert_int_equal(dump_of(e, "md4", 4, 9000, &same), 1);
    assert_int_equal(db_count(f, "SELECT count(*) FROM minidumps"), 0);
}

/* A crash re-processed into another group after the retention removed the
 * other crashes of its first one: that group keeps its first and last
 * seen (they happened), rather than taking them from no crash at all. */
static void test_expire_then_move(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    char r1[FL_CRASH_ID_MAX], r2[FL_CRASH_ID_MAX];
    assert_true(ingest_at(e, "y1", "1.0", T0, r1));
    assert_true(ingest_at(e, "y2", "1.0", T0 + DAY, r2));
    apply_c(e, &(crash){.id = "y1", .ref = r1, .group = "gz", .version = "1.0", .received = T0},
            false);
    apply_c(e,
            &(crash){.id = "y2", .ref = r2, .group = "gz", .version = "1.0", .received = T0 + DAY},
            false);
    size_t n = 0;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->expire(e->c, T0 + DAY / 2, 10, &n), 0);
    assert_int_equal(e->s->requeue(e->c, "y2"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 1);
    crash k = {.id = "y2", .group = "gw", .version = "1.0", .received = T0 + DAY};
    assert_int_equal(apply_c(e, &k, true), 0);
    assert_int_equal(count_of(e, "gw"), 1);
    assert_int_equal(count_of(e, "gz"), 1); /* y1's, removed but counted */
    json_t *g = group_of(e, "gz");
    assert_string_equal(str_of(g, "first_seen"), "2023-11-14T22:13:20Z");
    assert_string_equal(str_of(g, "last_seen"), "2023-11-15T22:13:20Z");
    json_decref(g);
}

/* Watched processing: each start counted durably until processing_ended()
 * commits; a rollback keeps the count. */
static void test_processing_watch(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    unsigned before = 99;
    assert_int_equal(e->s->processing_started(e->c, "w7", &before), 0);
    assert_int_equal(before, 0);
    assert_int_equal(e->s->processing_started(e->c, "w7", &before), 0);
    assert_int_equal(before, 1);
    assert_int_equal(e->s->processing_started(e->c, "w8", &before), 0);
    assert_int_equal(before, 0);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->processing_ended(e->c, "w7"), 0);
    e->s->rollback(e->c);
    assert_int_equal(e->s->processing_started(e->c, "w7", &before), 0);
    assert_int_equal(before, 2); /* the rollback kept both */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->processing_ended(e->c, "w7"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(e->s->processing_started(e->c, "w7", &before), 0);
    assert_int_equal(before, 0);
    assert_int_equal(e->s->processing_started(e->c, "w8", &before), 0);
    assert_int_equal(before, 1);
}

/* The ids of a list_groups answer, space-separated; its "total" in
 * g_total. */
static void listed(eng *e, const fl_group_filter *flt, char *out, size_t cap)
{
    json_t *l = e->s->list_groups(e->c, flt);
    assert_non_null(l);
    assert_true(json_is_integer(json_object_get(l, "total")));
    g_total = json_integer_value(json_object_get(l, "total"));
    json_t *v;
    size_t i;
    out[0] = '\0';
    json_array_foreach(json_object_get(l, "groups"), i, v)
    {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s", n ? " " : "", str_of(v, "id"));
    }
    json_decref(l);
}

static void test_list_groups(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    /* Counts: B 3, a 2, C 2, Z 1 (apps: B, C "other"); ties by id, bytes. */
    struct {
        const char *id, *group, *version, *app;
    } in[] = {
        {"l1", "B", "1.0", "other"}, {"l2", "B", "1.0", "other"}, {"l3", "B", "2.0", "other"},
        {"l4", "a", "1.0", "app"},   {"l5", "a", "1.0", "app"},   {"l6", "C", "2.0", "other"},
        {"l7", "C", "2.0", "other"}, {"l8", "Z", "3.0", "app"},
    };
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        ingest(e, in[i].id, in[i].version);
        fl_processed p = {.crash_id = in[i].id,
                          .group_id = in[i].group,
                          .signature = in[i].group,
                          .stack_hash = "h",
                          .app = in[i].app,
                          .version = in[i].version,
                          .received = T0,
                          .frames_json = "[]"};
        assert_int_equal(e->s->begin(e->c), 0);
        assert_int_equal(e->s->apply(e->c, &p), 0);
        assert_int_equal(e->s->commit(e->c), 0);
    }
    assert_int_equal(e->s->set_status(e->c, "C", "resolved", NULL), 0);
    char got[256];
    fl_group_filter flt = {.limit = 50};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "B C a Z");
    assert_int_equal(g_total, 4);
    flt.app = "other";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "B C");
    assert_int_equal(g_total, 2);
    flt.app = NULL;
    flt.version = "2.0";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "B C");
    flt.version = NULL;
    flt.status = "resolved";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "C");
    flt.status = "open";
    flt.app = "app";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "a Z");
    assert_int_equal(g_total, 2);
    flt.version = "3.0"; /* with the version filter too */
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "Z");
    assert_int_equal(g_total, 1);
    /* The total is every group the filter matches, whatever the page. */
    fl_group_filter page = {.limit = 2, .offset = 1};
    listed(e, &page, got, sizeof got);
    assert_string_equal(got, "C a");
    assert_int_equal(g_total, 4);
    page.offset = 10;
    listed(e, &page, got, sizeof got);
    assert_string_equal(got, "");
    assert_int_equal(g_total, 4);
    json_t *l = e->s->list_groups(e->c, &(fl_group_filter){.limit = 1});
    json_t *want = json_loads(
        "{\"groups\":[{\"id\":\"B\",\"project\":\"default\",\"app\":\"other\",\"signature\":\"B\","
        "\"count\":3,"
        "\"first_seen\":\"2023-11-14T22:13:20Z\",\"last_seen\":\"2023-11-14T22:13:20Z\","
        "\"status\":\"open\",\"affected\":0,\"resolved_in\":null,\"latest_version\":\"2.0\"}],"
        "\"total\":4}",
        0, NULL);
    assert_true(json_equal(l, want));
    json_decref(want);
    json_decref(l);
    fl_store_stats s;
    assert_int_equal(e->s->stats(e->c, &s), 0);
    assert_int_equal(s.crashes, 8);
    assert_int_equal(s.groups, 4);
    if (is_pg(e))
        assert_int_equal(s.processed, 8); /* SQLite's stats leave it 0 */
}

/* Merging: the counts, breakdowns and installations add up, the crashes
 * and a pending notice move, the merged id forwards (reads, status, later
 * crashes of its signature, which can regress the group), merges chain,
 * and groups of another application or project are refused. */
static void test_merge_groups(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    struct {
        const char *id, *group, *version, *os, *arch, *install;
        int64_t t;
    } in[] = {
        {"m1", "gm1", "1.0", "linux", "x86-64", "i1", T0},
        {"m2", "gm1", "1.1", "mac", "aarch64", "i2", T0 + DAY},
        {"m3", "gm2", "1.2", "linux", "aarch64", "i1", T0 + 2 * DAY},
        {"m4", "gm2", "1.0", "linux", "aarch64", "i3", T0},
    };
    char ref[FL_CRASH_ID_MAX];
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        if (i == 2)
            e->s->notify = true; /* gm2's new-group notice waits */
        assert_true(ingest_at(e, in[i].id, in[i].version, in[i].t, ref));
        crash k = {.id = in[i].id,
                   .ref = ref,
                   .group = in[i].group,
                   .version = in[i].version,
                   .os = in[i].os,
                   .arch = in[i].arch,
                   .install = in[i].install,
                   .received = in[i].t};
        assert_int_equal(apply_c(e, &k, false), 0);
    }
    e->s->notify = false;
    assert_int_equal(e->s->set_status(e->c, "gm1", "resolved", "1.1"), 0);

    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "nope", "gm2"), 1);
    assert_int_equal(e->s->merge_group(e->c, "gm1", "nope"), 2);
    assert_int_equal(e->s->merge_group(e->c, "gm1", "gm1"), 4);
    assert_int_equal(e->s->merge_group(e->c, "gm1", "gm2"), 0);
    assert_int_equal(e->s->merge_group(e->c, "gm2", "gm1"), 4); /* one group now */
    assert_int_equal(e->s->commit(e->c), 0);

    assert_int_equal(count_of(e, "gm1"), 4);
    json_t *g = group_of(e, "gm1");
    assert_int_equal(json_integer_value(json_object_get(g, "affected")), 3); /* i1 once */
    assert_string_equal(str_of(g, "first_seen"), "2023-11-14T22:13:20Z");
    assert_string_equal(str_of(g, "last_seen"), "2023-11-16T22:13:20Z");
    assert_string_equal(str_of(g, "latest_version"), "1.2");
    assert_string_equal(str_of(g, "status"), "resolved"); /* its own */
    assert_string_equal(str_of(g, "representative_crash"), "m1");
    json_t *want = json_loads("[{\"day\":\"2023-11-14\",\"count\":2},"
                              "{\"day\":\"2023-11-15\",\"count\":1},"
                              "{\"day\":\"2023-11-16\",\"count\":1}]",
                              0, NULL);
    assert_true(json_equal(json_object_get(g, "days"), want));
    json_decref(want);
    want = json_loads("[{\"os\":\"linux\",\"count\":3},{\"os\":\"mac\",\"count\":1}]", 0, NULL);
    assert_true(json_equal(json_object_get(g, "os"), want));
    json_decref(want);
    /* The members' architectures added to its own. */
    want = json_loads("[{\"arch\":\"aarch64\",\"count\":3},{\"arch\":\"x86-64\",\"count\":1}]", 0,
                      NULL);
    assert_true(json_equal(json_object_get(g, "arch"), want));
    json_decref(want);
    assert_int_equal(json_array_size(json_object_get(g, "versions")), 3);
    want = json_loads("[{\"id\":\"gm2\",\"signature\":\"gm2\"}]", 0, NULL);
    assert_true(json_equal(json_object_get(g, "merged"), want));
    json_decref(want);
    json_decref(g);

    /* The merged id reads as the group it went into. */
    g = group_of(e, "gm2");
    assert_string_equal(str_of(g, "id"), "gm1");
    json_decref(g);
    bool nf;
    json_t *l = e->s->group_crashes(e->c, "gm2", NULL, 10, 0, &nf);
    assert_non_null(l);
    assert_int_equal(json_integer_value(json_object_get(l, "total")), 4);
    json_decref(l);
    /* Both groups' crashes (a merge leaves them in their own), newest
     * first across the two, a page at a time. */
    l = e->s->group_crashes(e->c, "gm1", NULL, 2, 1, &nf);
    assert_non_null(l);
    json_t *pg = json_object_get(l, "crashes");
    assert_int_equal(json_array_size(pg), 2);
    assert_string_equal(str_of(json_array_get(pg, 0), "id"), "m3");
    assert_string_equal(str_of(json_array_get(pg, 1), "id"), "m2");
    json_decref(l);
    l = e->s->group_crashes(e->c, "gm1", "i1", 10, 0, &nf);
    pg = json_object_get(l, "crashes");
    assert_int_equal(json_integer_value(json_object_get(l, "total")), 2);
    assert_int_equal(json_array_size(pg), 2);
    assert_string_equal(str_of(json_array_get(pg, 0), "id"), "m3");
    assert_string_equal(str_of(json_array_get(pg, 1), "id"), "m1");
    json_decref(l);
    json_t *cr = e->s->get_crash(e->c, "m3", &nf);
    assert_string_equal(str_of(cr, "group_id"), "gm1");
    json_decref(cr);
    fl_group_filter flt = {.limit = 50};
    char got[256];
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "gm1");
    assert_int_equal(g_total, 1);
    fl_store_stats ss;
    assert_int_equal(e->s->stats(e->c, &ss), 0);
    assert_int_equal(ss.groups, 1);
    /* gm2's pending "new group" notice is gone: merged into gm1, it is
     * not a new group. */
    fl_notice t[4];
    size_t n = 0;
    assert_int_equal(e->s->notices_claim(e->c, fl_now(), 60, 7200, 4, t, &n), 0);
    assert_int_equal(n, 0);

    /* A later crash of gm2's signature counts in gm1, and 1.3 > 1.1
     * regresses it; a status set through gm2 is gm1's. */
    assert_true(ingest_at(e, "m5", "1.3", T0 + 3 * DAY, ref));
    crash k5 = {.id = "m5",
                .ref = ref,
                .group = "gm2",
                .version = "1.3",
                .os = "linux",
                .install = "i4",
                .received = T0 + 3 * DAY};
    assert_int_equal(apply_c(e, &k5, false), 0);
    assert_int_equal(count_of(e, "gm1"), 5);
    assert_int_equal(int_of(e, "gm1", "affected"), 4);
    g = group_of(e, "gm1");
    assert_string_equal(str_of(g, "status"), "regressed");
    assert_string_equal(str_of(g, "last_seen"), "2023-11-17T22:13:20Z");
    json_decref(g);
    cr = e->s->get_crash(e->c, "m5", &nf);
    assert_string_equal(str_of(cr, "group_id"), "gm1");
    json_decref(cr);
    assert_int_equal(e->s->set_status(e->c, "gm2", "resolved", NULL), 0);
    g = group_of(e, "gm1");
    assert_string_equal(str_of(g, "status"), "resolved");
    json_decref(g);

    /* Re-processed into its merged signature: stays, counted once. */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->requeue(e->c, "m3"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    crash k3 = {.id = "m3",
                .group = "gm2",
                .version = "1.2",
                .os = "linux",
                .install = "i1",
                .received = T0 + 2 * DAY};
    assert_int_equal(apply_c(e, &k3, true), 0);
    assert_int_equal(count_of(e, "gm1"), 5);

    /* Another application's group, another project's: refused. */
    assert_true(ingest_at(e, "m6", "1.0", T0, ref));
    fl_processed p = {.crash_id = "m6",
                      .ref = ref,
                      .group_id = "go",
                      .signature = "go",
                      .stack_hash = "h",
                      .app = "other",
                      .version = "1.0",
                      .received = T0,
                      .frames_json = "[]"};
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->apply(e->c, &p), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_true(ingest_in(e, "pj", "m7", "1.0", T0, ref));
    assert_int_equal(
        apply_c(e, &(crash){.id = "m7", .ref = ref, .group = "gp", .project = "pj"}, false), 0);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "gm1", "go"), 3);
    assert_int_equal(e->s->merge_group(e->c, "gm1", "gp"), 3);
    assert_int_equal(e->s->commit(e->c), 0);
    /* Applications told apart by their whole names (300 bytes, the last
     * one differing). */
    char app1[301], app2[301];
    memset(app1, 'a', 300);
    app1[300] = '\0';
    memcpy(app2, app1, sizeof app1);
    app2[299] = 'b';
    const char *longs[2][3] = {{"m10", "gl1", app1}, {"m11", "gl2", app2}};
    for (int i = 0; i < 2; i++) {
        assert_true(ingest_at(e, longs[i][0], "1.0", T0, ref));
        fl_processed lp = {.crash_id = longs[i][0],
                           .ref = ref,
                           .group_id = longs[i][1],
                           .signature = longs[i][1],
                           .stack_hash = "h",
                           .app = longs[i][2],
                           .version = "1.0",
                           .received = T0,
                           .frames_json = "[]"};
        assert_int_equal(e->s->begin(e->c), 0);
        assert_int_equal(e->s->apply(e->c, &lp), 0);
        assert_int_equal(e->s->commit(e->c), 0);
    }
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "gl1", "gl2"), 3);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(count_of(e, "go"), 1);

    /* Merged again, into a third group: gm2 forwards there too. */
    assert_true(ingest_at(e, "m8", "1.0", T0, ref));
    assert_int_equal(apply_c(e, &(crash){.id = "m8", .ref = ref, .group = "gm3"}, false), 0);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "gm3", "gm2"), 0); /* gm2 stands for gm1 */
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(count_of(e, "gm3"), 6);
    g = group_of(e, "gm2");
    assert_string_equal(str_of(g, "id"), "gm3");
    want = json_loads("[{\"id\":\"gm1\",\"signature\":\"gm1\"},{\"id\":\"gm2\",\"signature\":"
                      "\"gm2\"}]",
                      0, NULL);
    assert_true(json_equal(json_object_get(g, "merged"), want));
    json_decref(want);
    json_decref(g);
    assert_true(ingest_at(e, "m9", "1.0", T0, ref));
    assert_int_equal(apply_c(e, &(crash){.id = "m9", .ref = ref, .group = "gm2"}, false), 0);
    assert_int_equal(count_of(e, "gm3"), 7);
}

/* group_crashes()'s total for group id (installation install's, when
 * not NULL); -1 when it fails. */
static int64_t crashes_total(eng *e, const char *id, const char *install)
{
    bool nf;
    json_t *l = e->s->group_crashes(e->c, id, install, 100, 0, &nf);
    if (!l)
        return -1;
    int64_t n = json_integer_value(json_object_get(l, "total"));
    if ((size_t)n != json_array_size(json_object_get(l, "crashes")))
        n = -2; /* the page (all of them here) disagrees */
    json_decref(l);
    return n;
}

/* Unmerging: the group stands for itself again, with the crashes of its
 * signature (those merged and a later one) and their counters, at once:
 * a merge left them where they were, so nothing is re-processed. */
static void test_unmerge_group(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    struct {
        const char *id, *group, *install;
        int64_t t;
    } in[] = {
        {"u1", "gu1", "i1", T0},
        {"u2", "gu1", "i2", T0},
        {"u3", "gu2", "i1", T0 + DAY},
        {"u4", "gu2", "i3", T0 + DAY},
    };
    char ref[FL_CRASH_ID_MAX];
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        assert_true(ingest_at(e, in[i].id, "1.0", in[i].t, ref));
        crash k = {.id = in[i].id,
                   .ref = ref,
                   .group = in[i].group,
                   .version = "1.0",
                   .os = "linux",
                   .install = in[i].install,
                   .received = in[i].t};
        assert_int_equal(apply_c(e, &k, false), 0);
    }
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "gu1", "gu2"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_true(ingest_at(e, "u5", "1.0", T0 + 2 * DAY, ref));
    crash k5 = {.id = "u5",
                .ref = ref,
                .group = "gu2",
                .version = "1.0",
                .os = "linux",
                .install = "i4",
                .received = T0 + 2 * DAY};
    assert_int_equal(apply_c(e, &k5, false), 0);
    assert_int_equal(count_of(e, "gu1"), 5);
    /* Merged: gu1's crash list is both groups' (and so through gu2's id),
     * with ?install= too. */
    assert_int_equal(crashes_total(e, "gu1", NULL), 5);
    assert_int_equal(crashes_total(e, "gu2", NULL), 5);
    assert_int_equal(crashes_total(e, "gu1", "i1"), 2); /* u1, u3 */
    assert_int_equal(crashes_total(e, "gu1", "i4"), 1); /* u5, after the merge */

    char from[64] = "", **ids = NULL;
    size_t n = 9;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->unmerge_group(e->c, "nope", from, &ids, &n), 1);
    assert_int_equal(e->s->unmerge_group(e->c, "gu1", from, &ids, &n), 2);
    assert_int_equal(e->s->unmerge_group(e->c, "gu2", from, &ids, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_string_equal(from, "gu1");
    assert_int_equal(n, 0); /* nothing to process again */
    free_ids(ids, n);
    json_t *g = group_of(e, "gu2");
    assert_string_equal(str_of(g, "id"), "gu2"); /* no longer forwards */
    json_decref(g);
    g = group_of(e, "gu1");
    assert_int_equal(json_array_size(json_object_get(g, "merged")), 0);
    json_decref(g);
    assert_int_equal(load(e, "u3"), 2); /* not marked */
    assert_int_equal(crashes_total(e, "gu1", NULL), 2);
    assert_int_equal(crashes_total(e, "gu2", NULL), 3);
    assert_int_equal(crashes_total(e, "gu1", "i1"), 1);
    assert_int_equal(crashes_total(e, "gu2", "i1"), 1);
    assert_int_equal(count_of(e, "gu1"), 2);
    assert_int_equal(count_of(e, "gu2"), 3);
    assert_int_equal(int_of(e, "gu1", "affected"), 2);
    assert_int_equal(int_of(e, "gu2", "affected"), 3);
    g = group_of(e, "gu1");
    assert_string_equal(str_of(g, "last_seen"), "2023-11-14T22:13:20Z");
    json_decref(g);
    bool nf;
    json_t *cr = e->s->get_crash(e->c, "u5", &nf);
    assert_string_equal(str_of(cr, "group_id"), "gu2");
    json_decref(cr);
    char got[64];
    listed(e, &(fl_group_filter){.limit = 10}, got, sizeof got);
    assert_string_equal(got, "gu2 gu1");
    /* And the next crash of its signature stays in it. */
    assert_true(ingest_at(e, "u6", "1.0", T0, ref));
    assert_int_equal(apply_c(e, &(crash){.id = "u6", .ref = ref, .group = "gu2"}, false), 0);
    assert_int_equal(count_of(e, "gu2"), 4);
    assert_int_equal(count_of(e, "gu1"), 2);
}

/* The orders of list_groups() see a merged group's sums (its own row
 * alone would sort it elsewhere), also on a page shorter than the list:
 * s4 merged into s3 makes s3 the largest, the latest crash and the oldest
 * group. */
static void test_merge_sorted(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    struct {
        const char *group;
        int day;
    } in[] = {{"s1", 1}, {"s1", 2}, {"s1", 3}, {"s2", 2}, {"s2", 4},
              {"s3", 5}, {"s4", 0}, {"s4", 1}, {"s4", 6}};
    char ref[FL_CRASH_ID_MAX], id[16];
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        snprintf(id, sizeof id, "o%zu", i);
        int64_t t = T0 + in[i].day * DAY;
        assert_true(ingest_at(e, id, "1.0", t, ref));
        assert_int_equal(
            apply_c(e, &(crash){.id = id, .ref = ref, .group = in[i].group, .received = t}, false),
            0);
    }
    char got[64];
    fl_group_filter flt = {.limit = 1};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "s1");
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "s3", "s4"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    static const struct {
        fl_group_sort sort;
        unsigned offset;
        const char *want;
    } pages[] = {
        {FL_SORT_COUNT, 0, "s3"},      {FL_SORT_COUNT, 1, "s1"},      {FL_SORT_COUNT, 2, "s2"},
        {FL_SORT_LAST_SEEN, 0, "s3"},  {FL_SORT_LAST_SEEN, 1, "s2"},  {FL_SORT_LAST_SEEN, 2, "s1"},
        {FL_SORT_FIRST_SEEN, 0, "s2"}, {FL_SORT_FIRST_SEEN, 1, "s1"}, {FL_SORT_FIRST_SEEN, 2, "s3"},
    };
    for (size_t i = 0; i < sizeof pages / sizeof *pages; i++) {
        flt = (fl_group_filter){.limit = 1, .offset = pages[i].offset, .sort = pages[i].sort};
        listed(e, &flt, got, sizeof got);
        if (strcmp(got, pages[i].want))
            fail_msg("sort %d offset %u: %s, not %s", (int)pages[i].sort, pages[i].offset, got,
                     pages[i].want);
        assert_int_equal(g_total, 3);
    }
    flt = (fl_group_filter){.limit = 10};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "s3 s1 s2");
    assert_int_equal(count_of(e, "s3"), 4);
}

/* Runs sql (no rows) on f's database behind the store's back. */
static void db_exec(fx *f, const char *sql)
{
    if (f->url) {
        PGconn *db = PQconnectdb(f->url);
        assert_int_equal(PQstatus(db), CONNECTION_OK);
        PGresult *r = PQexec(db, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            fail_msg("%s: %s", sql, PQerrorMessage(db));
        PQclear(r);
        PQfinish(db);
        return;
    }
    sqlite3 *db = NULL;
    char *msg = NULL;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* A crash processed before the architectures were counted (SQLite
 * generation 6, PostgreSQL schema_ddl 8) and moved to another group since:
 * counted in its new group, and not taken from its old one, which never
 * had it (crashes.arch_counted).  Moved again, it takes its count along. */
static void test_arch_before_upgrade(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    crash a[2] = {
        {.id = "a1",
         .group = "ga",
         .version = "1.0",
         .os = "linux",
         .arch = "x86-64",
         .install = "i1"},
        {.id = "a2",
         .group = "ga",
         .version = "1.0",
         .os = "linux",
         .arch = "x86-64",
         .install = "i2",
         .missing = "dddd"},
    };
    for (int i = 0; i < 2; i++) {
        assert_true(ingest_at(e, a[i].id, "1.0", T0, NULL));
        assert_int_equal(apply_c(e, &a[i], false), 0);
    }
    /* a2 as a version before the counting processed it. */
    db_exec(f, "UPDATE crashes SET arch_counted=(1=0) WHERE id='a2'");
    db_exec(f, "UPDATE group_arch SET count=1 WHERE group_id='ga'");
    char **ids = NULL;
    size_t n = 0;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->symbols_arrived(e->c, "dddd", 100, &ids, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 1);
    free_ids(ids, n);
    crash m = a[1];
    m.group = "gb";
    m.missing = "eeee";
    assert_int_equal(apply_c(e, &m, true), 0);
    json_t *one = json_loads("[{\"arch\":\"x86-64\",\"count\":1}]", 0, NULL);
    json_t *g = group_of(e, "ga");
    assert_true(json_equal(json_object_get(g, "arch"), one)); /* a1's, kept */
    json_decref(g);
    g = group_of(e, "gb");
    assert_true(json_equal(json_object_get(g, "arch"), one));
    json_decref(g);

    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->symbols_arrived(e->c, "eeee", 100, &ids, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 1);
    free_ids(ids, n);
    m.group = "gc";
    m.missing = NULL;
    assert_int_equal(apply_c(e, &m, true), 0);
    g = group_of(e, "gc");
    assert_true(json_equal(json_object_get(g, "arch"), one));
    json_decref(g);
    assert_int_equal(count_of(e, "gb"), -1); /* emptied: deleted */
    g = group_of(e, "ga");
    assert_true(json_equal(json_object_get(g, "arch"), one));
    json_decref(g);
    json_decref(one);
}

/* A merge made before merges left crashes where they were (SQLite
 * generation 4, PostgreSQL schema_ddl 6) moved the crashes, counts and
 * installations of the group merged into the other, and marked each crash
 * with its own group (sig_group).  The upgrade adds the index that finds
 * those (crashes_moved); the merged group reads as before, a later crash
 * of its signature counts in its own row and reads in the merged group,
 * and an unmerge has the moved crashes processed again, which moves them
 * back, counters and all. */
static void test_unmerge_legacy(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    const char *ids[] = {"l1", "l2", "l3", "l4"}, *grp[] = {"gl1", "gl1", "gl2", "gl2"};
    const char *inst[] = {"i1", "i2", "i3", "i4"};
    char ref[FL_CRASH_ID_MAX];
    for (int i = 0; i < 4; i++) {
        assert_true(ingest_at(e, ids[i], "1.0", T0, ref));
        crash k = {.id = ids[i],
                   .ref = ref,
                   .group = grp[i],
                   .version = "1.0",
                   .os = "linux",
                   .install = inst[i],
                   .received = T0};
        assert_int_equal(apply_c(e, &k, false), 0);
    }
    /* gl2 merged into gl1 the old way. */
    close_eng(e);
    db_exec(f, "UPDATE groups SET count=4, affected=4 WHERE id='gl1';"
               "UPDATE group_days SET count=4 WHERE group_id='gl1';"
               "UPDATE group_versions SET count=4 WHERE group_id='gl1';"
               "UPDATE group_os SET count=4 WHERE group_id='gl1';"
               "DELETE FROM group_days WHERE group_id='gl2';"
               "DELETE FROM group_versions WHERE group_id='gl2';"
               "DELETE FROM group_os WHERE group_id='gl2';"
               "UPDATE group_installs SET group_id='gl1' WHERE group_id='gl2';"
               "UPDATE crashes SET group_id='gl1', sig_group='gl2' WHERE group_id='gl2';"
               "UPDATE groups SET merged_into='gl1', count=0, affected=0 WHERE id='gl2';"
               "DROP INDEX crashes_moved;");
    if (f->url) {
        db_exec(f, "UPDATE settings SET value='6' WHERE name='schema_ddl'");
        char err[256];
        e->s = fl_store_pg_open(f->url, 0, err, sizeof err);
        e->c = e->s ? e->s->connect(e->s) : NULL;
    } else {
        db_exec(f, "PRAGMA user_version=4");
        assert_int_equal(open_sqlite(f, e), 0);
        assert_int_equal(sqlite_count(f, "PRAGMA user_version"), 7);
    }
    assert_non_null(e->c);
    assert_int_equal(db_count(f, is_pg(e) ? "SELECT count(*) FROM pg_indexes WHERE "
                                            "indexname='crashes_moved'"
                                          : "SELECT count(*) FROM sqlite_master WHERE "
                                            "name='crashes_moved'"),
                     1);

    assert_int_equal(count_of(e, "gl1"), 4);
    assert_int_equal(int_of(e, "gl1", "affected"), 4);
    assert_int_equal(crashes_total(e, "gl1", NULL), 4);
    assert_int_equal(crashes_total(e, "gl2", "i3"), 1);
    /* A later crash of gl2's signature: in its own row, read in gl1. */
    assert_true(ingest_at(e, "l5", "1.0", T0 + DAY, ref));
    crash k5 = {.id = "l5",
                .ref = ref,
                .group = "gl2",
                .version = "1.0",
                .os = "linux",
                .install = "i5",
                .received = T0 + DAY};
    assert_int_equal(apply_c(e, &k5, false), 0);
    assert_int_equal(count_of(e, "gl1"), 5);
    assert_int_equal(int_of(e, "gl1", "affected"), 5);
    assert_int_equal(crashes_total(e, "gl1", NULL), 5);

    char from[64] = "", **back = NULL;
    size_t n = 0;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->unmerge_group(e->c, "gl2", from, &back, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_string_equal(from, "gl1");
    assert_int_equal(n, 2); /* l3 and l4, moved by the old merge */
    assert_true((!strcmp(back[0], "l3") && !strcmp(back[1], "l4")) ||
                (!strcmp(back[0], "l4") && !strcmp(back[1], "l3")));
    free_ids(back, n);
    assert_int_equal(count_of(e, "gl2"), 1); /* l5, until l3 and l4 are processed again */
    for (int i = 2; i < 4; i++) {
        crash k = {.id = ids[i],
                   .group = "gl2",
                   .version = "1.0",
                   .os = "linux",
                   .install = inst[i],
                   .received = T0};
        assert_int_equal(apply_c(e, &k, true), 0);
    }
    assert_int_equal(count_of(e, "gl1"), 2);
    assert_int_equal(count_of(e, "gl2"), 3);
    assert_int_equal(int_of(e, "gl1", "affected"), 2);
    assert_int_equal(int_of(e, "gl2", "affected"), 3);
    assert_int_equal(crashes_total(e, "gl1", NULL), 2);
    assert_int_equal(crashes_total(e, "gl2", NULL), 3);
    json_t *g = group_of(e, "gl1");
    assert_string_equal(str_of(json_array_get(json_object_get(g, "days"), 0), "day"), "2023-11-14");
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(g, "days"), 0), "count")),
        2);
    json_decref(g);
}

/* ?install=: the groups an installation crashed in, its crashes in a
 * group, and after a merge the merged group's installations with it. */
static void test_install_filter(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    struct {
        const char *id, *group, *install;
    } in[] = {
        {"n1", "ga", "inst-1"}, {"n2", "ga", "inst-2"}, {"n3", "gb", "inst-1"},
        {"n4", "gc", "inst-3"}, {"n5", "ga", "inst-1"}, {"n6", "gd", NULL},
    };
    char ref[FL_CRASH_ID_MAX];
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        assert_true(ingest_at(e, in[i].id, "1.0", T0 + (int64_t)i, ref));
        crash k = {.id = in[i].id,
                   .ref = ref,
                   .group = in[i].group,
                   .version = "1.0",
                   .os = "linux",
                   .install = in[i].install,
                   .received = T0 + (int64_t)i};
        assert_int_equal(apply_c(e, &k, false), 0);
    }
    char got[256];
    fl_group_filter flt = {.limit = 50, .install = "inst-1"};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "ga gb"); /* by count */
    assert_int_equal(g_total, 2);
    flt.install = "inst-3";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "gc");
    flt.install = "nobody";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "");
    assert_int_equal(g_total, 0);
    flt = (fl_group_filter){.limit = 50, .install = "inst-2", .app = "no-such-app"};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, ""); /* with the other filters, not instead */

    bool nf;
    json_t *l = e->s->group_crashes(e->c, "ga", "inst-1", 10, 0, &nf);
    assert_non_null(l);
    assert_int_equal(json_integer_value(json_object_get(l, "total")), 2);
    json_t *cr = json_object_get(l, "crashes");
    assert_int_equal(json_array_size(cr), 2);
    assert_string_equal(str_of(json_array_get(cr, 0), "id"), "n5"); /* newest first */
    assert_string_equal(str_of(json_array_get(cr, 1), "id"), "n1");
    assert_string_equal(str_of(json_array_get(cr, 1), "installation"), "inst-1");
    json_decref(l);
    l = e->s->group_crashes(e->c, "ga", "inst-1", 1, 1, &nf);
    assert_int_equal(json_integer_value(json_object_get(l, "total")), 2);
    assert_string_equal(str_of(json_array_get(json_object_get(l, "crashes"), 0), "id"), "n1");
    json_decref(l);
    l = e->s->group_crashes(e->c, "gb", "inst-2", 10, 0, &nf);
    assert_int_equal(json_integer_value(json_object_get(l, "total")), 0);
    assert_int_equal(json_array_size(json_object_get(l, "crashes")), 0);
    json_decref(l);

    /* gc merged into gb: inst-3's crash now counts there. */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "gb", "gc"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    flt = (fl_group_filter){.limit = 50, .install = "inst-3"};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "gb");
    l = e->s->group_crashes(e->c, "gc", "inst-3", 10, 0, &nf);
    assert_int_equal(json_integer_value(json_object_get(l, "total")), 1);
    assert_string_equal(str_of(json_array_get(json_object_get(l, "crashes"), 0), "id"), "n4");
    json_decref(l);
}

/* The search (q: part of the signature, letters without case) and the
 * orders by last and by first crash. */
static void test_list_sorted(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    struct {
        const char *id, *group, *sig;
        int64_t t;
    } in[] = {
        {"s1", "x", "main | Parse_Header", T0 + 2 * DAY},
        {"s2", "y", "main | read_body", T0},
        {"s3", "y", "main | read_body", T0 + 3 * DAY},
        {"s4", "z", "libfoo.so+0x10 | main", T0 + DAY},
    };
    char ref[FL_CRASH_ID_MAX];
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        assert_true(ingest_at(e, in[i].id, "1.0", in[i].t, ref));
        fl_processed p = {.crash_id = in[i].id,
                          .ref = ref,
                          .group_id = in[i].group,
                          .signature = in[i].sig,
                          .stack_hash = "h",
                          .app = "app",
                          .version = "1.0",
                          .received = in[i].t,
                          .frames_json = "[]"};
        assert_int_equal(e->s->begin(e->c), 0);
        assert_int_equal(e->s->apply(e->c, &p), 0);
        assert_int_equal(e->s->commit(e->c), 0);
    }
    char got[256];
    fl_group_filter flt = {.limit = 50};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "y x z");
    flt.sort = FL_SORT_LAST_SEEN;
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "y x z");
    flt.sort = FL_SORT_FIRST_SEEN;
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "x z y");
    flt.limit = 1;
    flt.offset = 1;
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "z");
    assert_int_equal(g_total, 3);
    flt = (fl_group_filter){.limit = 50, .q = "parse_h"};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "x");
    assert_int_equal(g_total, 1);
    flt.q = "MAIN";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "y x z");
    flt.q = "%"; /* no wildcard */
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "");
    assert_int_equal(g_total, 0);
    flt.q = "libfoo.so+0x";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "z");
}

/* ---- projects */

static void projects_are(eng *e, const char *want_text)
{
    json_t *got = e->s->list_projects(e->c);
    if (!got)
        fail_msg("list_projects: %s", e->s->error(e->c));
    json_t *want = json_loads(want_text, 0, NULL);
    assert_non_null(want);
    char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
    if (strcmp(g, w)) /* the order of the keys too: the API prints it */
        fail_msg("list_projects:\ngot:  %s\nwant: %s", g, w);
    free(g);
    free(w);
    json_decref(want);
    json_decref(got);
}

/* The project ops, outside and inside a transaction: a duplicate project
 * or a missing one changes nothing; a key is revoked only through its own
 * project; the listing is by id, keys oldest first, ties by key. */
static void test_projects(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    projects_are(e, "{\"projects\":[]}");
    assert_int_equal(e->s->add_project(e->c, "mobile", "k-m1", T0), 0);
    assert_int_equal(e->s->add_project(e->c, "mobile", "k-other", T0 + 1), 1);
    assert_int_equal(e->s->add_project(e->c, "beta", "k-b1", T0 + 2), 0);
    assert_int_equal(e->s->add_project_key(e->c, "mobile", "k-m2", T0 + 5), 0);
    assert_int_equal(e->s->add_project_key(e->c, "mobile", "k-m0", T0 + 5), 0);
    assert_int_equal(e->s->add_project_key(e->c, "nope", "k-x", T0), 1);
    /* A key another project holds: refused, and no project without a key. */
    assert_int_equal(e->s->add_project(e->c, "gamma", "k-m0", T0), -1);
    assert_int_equal(e->s->add_project_key(e->c, "beta", "k-m0", T0), -1);
    assert_int_equal(e->s->revoke_project_key(e->c, "beta", "k-m1"), 1); /* mobile's */
    assert_int_equal(e->s->revoke_project_key(e->c, "mobile", "k-zz"), 1);
    assert_int_equal(e->s->revoke_project_key(e->c, "nope", "k-m1"), 1);
    assert_int_equal(e->s->revoke_project_key(e->c, "mobile", "k-m1"), 0);
    assert_int_equal(e->s->revoke_project_key(e->c, "mobile", "k-m1"), 1);
    assert_int_equal(e->s->revoke_project_key(e->c, "beta", "k-b1"), 0);
    /* In the caller's transaction: gone with its rollback, kept by its
     * commit. */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->add_project(e->c, "alpha", "k-a1", T0 + 9), 0);
    assert_int_equal(e->s->add_project_key(e->c, "alpha", "k-a2", T0 + 9), 0);
    e->s->rollback(e->c);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->add_project(e->c, "alpha", "k-a1", T0 + 9), 0);
    assert_int_equal(e->s->add_project(e->c, "alpha", "k-a3", T0 + 9), 1);
    assert_int_equal(e->s->add_project_key(e->c, "alpha", "k-a2", T0 + 10), 0);
    assert_int_equal(e->s->revoke_project_key(e->c, "alpha", "k-a2"), 0);
    assert_int_equal(e->s->add_project_key(e->c, "beta", "k-b2", T0 + 10), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    projects_are(e, "{\"projects\":["
                    "{\"id\":\"alpha\",\"created\":\"2023-11-14T22:13:29Z\",\"keys\":["
                    "{\"key\":\"k-a1\",\"created\":\"2023-11-14T22:13:29Z\"}]},"
                    "{\"id\":\"beta\",\"created\":\"2023-11-14T22:13:22Z\",\"keys\":["
                    "{\"key\":\"k-b2\",\"created\":\"2023-11-14T22:13:30Z\"}]},"
                    "{\"id\":\"mobile\",\"created\":\"2023-11-14T22:13:20Z\",\"keys\":["
                    "{\"key\":\"k-m0\",\"created\":\"2023-11-14T22:13:25Z\"},"
                    "{\"key\":\"k-m2\",\"created\":\"2023-11-14T22:13:25Z\"}]}]}");
    /* A project whose every key is revoked is listed, with none. */
    assert_int_equal(e->s->revoke_project_key(e->c, "beta", "k-b2"), 0);
    json_t *l = e->s->list_projects(e->c);
    assert_non_null(l);
    json_t *beta = json_array_get(json_object_get(l, "projects"), 1);
    assert_string_equal(str_of(beta, "id"), "beta");
    assert_int_equal(json_array_size(json_object_get(beta, "keys")), 0);
    json_decref(l);
}

/* ---- answers lost after the commit (PostgreSQL)
 *
 * A TCP proxy between a store and the database that, when armed, closes
 * the session at the database's next answer: the statement ran, and
 * outside a transaction committed, but the store sees only a lost
 * connection -- and runs the statement again on a new one (p_execv). */

static atomic_bool lossy_arm;
static atomic_int lossy_dropped;
/* Set: the proxy forwards nothing, keeping both sockets open -- a
 * database frozen (SIGSTOP) as the store sees it. */
static atomic_bool lossy_stall;

typedef struct lossy_pair {
    int a, b; /* client side, database side */
} lossy_pair;

static void *lossy_pair_main(void *arg)
{
    lossy_pair *p = arg;
    char buf[65536];
    for (;;) {
        struct pollfd pf[2] = {{.fd = p->a, .events = POLLIN}, {.fd = p->b, .events = POLLIN}};
        if (atomic_load(&lossy_stall)) {
            usleep(10000);
            continue;
        }
        int pr = poll(pf, 2, 10);
        if (pr < 0)
            break;
        if (pr == 0)
            continue; /* to look at lossy_stall again */
        if (pf[1].revents && atomic_exchange(&lossy_arm, false)) {
            atomic_fetch_add(&lossy_dropped, 1);
            break;
        }
        int from = pf[0].revents ? 0 : 1;
        ssize_t n = read(from ? p->b : p->a, buf, sizeof buf);
        if (n <= 0 || write(from ? p->a : p->b, buf, (size_t)n) != n)
            break;
    }
    close(p->a);
    close(p->b);
    free(p);
    return NULL;
}

typedef struct lossy {
    int lfd, up_port;
    pthread_t th;
} lossy;

static void *lossy_main(void *arg)
{
    lossy *l = arg;
    for (;;) {
        int a = accept(l->lfd, NULL, NULL);
        if (a < 0)
            return NULL; /* shut down */
        lossy_pair *p = calloc(1, sizeof *p);
        struct sockaddr_in up = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)l->up_port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        p->a = a;
        p->b = socket(AF_INET, SOCK_STREAM, 0);
        pthread_t th;
        if (p->b < 0 || connect(p->b, (struct sockaddr *)&up, sizeof up) ||
            pthread_create(&th, NULL, lossy_pair_main, p)) {
            close(a);
            if (p->b >= 0)
                close(p->b);
            free(p);
            continue;
        }
        pthread_detach(th);
    }
}

/* A proxy to url's port on 127.0.0.1; *proxied: url through it. */
static void lossy_start(lossy *l, const char *url, char *proxied, size_t cap)
{
    const char *h = strstr(url, "@127.0.0.1:");
    assert_non_null(h); /* tests/lib/postgres.sh's form */
    l->up_port = atoi(h + 11);
    l->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(l->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(l->lfd, 16), 0);
    assert_int_equal(getsockname(l->lfd, (struct sockaddr *)&sa, &sl), 0);
    const char *path = strchr(h + 11, '/');
    snprintf(proxied, cap, "%.*s@127.0.0.1:%d%s", (int)(h - url), url, ntohs(sa.sin_port),
             path ? path : "");
    assert_int_equal(pthread_create(&l->th, NULL, lossy_main, l), 0);
}

static void lossy_stop(lossy *l)
{
    shutdown(l->lfd, SHUT_RDWR);
    pthread_join(l->th, NULL);
    close(l->lfd);
}

/* The project writes made outside a transaction answer as their first run
 * would have when that run committed and its answer was lost: a new
 * project is made (not "exists", its key lost to the client), a key added
 * (not a unique violation), a key revoked (not "no such key").  Each call
 * is made once first, so that the armed one is a single round trip of an
 * already prepared statement: the answer lost is the statement's own. */
static void test_pg_lost_answers(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!f->url)
        skip(); /* SQLite: no connection to lose */
    lossy l;
    char url[512], err[256];
    lossy_start(&l, f->url, url, sizeof url);
    fl_store *s = fl_store_pg_open(url, 0, err, sizeof err);
    if (!s)
        fail_msg("fl_store_pg_open through the proxy: %s", err);
    fl_store_conn *c = s->connect(s);
    assert_non_null(c);
    atomic_store(&lossy_dropped, 0);
    assert_int_equal(s->add_project(c, "lost-a", "a0", T0), 0);
    atomic_store(&lossy_arm, true);
    assert_int_equal(s->add_project(c, "lost-b", "b0", T0 + 1), 0);
    assert_int_equal(atomic_load(&lossy_dropped), 1);
    assert_int_equal(s->add_project(c, "lost-b", "b9", T0 + 1), 1); /* exists: still said */
    assert_int_equal(s->add_project_key(c, "lost-a", "a1", T0 + 2), 0);
    atomic_store(&lossy_arm, true);
    assert_int_equal(s->add_project_key(c, "lost-b", "b1", T0 + 3), 0);
    assert_int_equal(atomic_load(&lossy_dropped), 2);
    assert_int_equal(s->revoke_project_key(c, "lost-a", "a1"), 0);
    atomic_store(&lossy_arm, true);
    assert_int_equal(s->revoke_project_key(c, "lost-b", "b0"), 0);
    assert_int_equal(atomic_load(&lossy_dropped), 3);
    assert_int_equal(s->revoke_project_key(c, "lost-b", "b0"), 1); /* gone: still said */
    /* A processing start counted once, not twice. */
    unsigned before = 9;
    assert_int_equal(s->processing_started(c, "warm-ref", &before), 0);
    assert_int_equal(before, 0);
    atomic_store(&lossy_arm, true);
    assert_int_equal(s->processing_started(c, "lost-ref", &before), 0);
    assert_int_equal(atomic_load(&lossy_dropped), 4);
    assert_int_equal(before, 0);
    assert_int_equal(s->processing_started(c, "lost-ref", &before), 0);
    assert_int_equal(before, 1);
    s->disconnect(c);
    s->close(s);
    lossy_stop(&l);
    projects_are(e, "{\"projects\":["
                    "{\"id\":\"lost-a\",\"created\":\"2023-11-14T22:13:20Z\",\"keys\":["
                    "{\"key\":\"a0\",\"created\":\"2023-11-14T22:13:20Z\"}]},"
                    "{\"id\":\"lost-b\",\"created\":\"2023-11-14T22:13:21Z\",\"keys\":["
                    "{\"key\":\"b1\",\"created\":\"2023-11-14T22:13:23Z\"}]}]}");
}

/* A database that stops answering with its sockets open (the proxy
 * stalled): a call fails after the store's deadline (1 s here) instead of
 * waiting for good, says why, and counts as unavailable (retry later);
 * inside a transaction the calls after it fail at once until the
 * rollback, and nothing of the transaction is kept; once the database
 * answers again the next call reconnects and works. */
static void test_pg_deadline(void **st)
{
    fx *f = *st;
    if (!f->url)
        skip(); /* SQLite: no server to wait for */
    lossy l;
    char url[512], err[256];
    lossy_start(&l, f->url, url, sizeof url);
    fl_store *s = fl_store_pg_open(url, 1, err, sizeof err);
    if (!s)
        fail_msg("fl_store_pg_open through the proxy: %s", err);
    fl_store_conn *c = s->connect(s);
    assert_non_null(c);
    assert_int_equal(s->add_project(c, "late", "late0", T0), 0);
    atomic_store(&lossy_stall, true);
    assert_int_equal(s->ping(c), -1);
    if (!strstr(s->error(c), "did not answer within 1 s"))
        fail_msg("ping of a stalled database: %s", s->error(c));
    assert_true(s->unavailable(c));
    /* Stalled still: the new connection times out too (libpq's 2 s). */
    assert_int_equal(s->ping(c), -1);
    assert_true(s->unavailable(c));
    atomic_store(&lossy_stall, false);
    assert_int_equal(s->ping(c), 0);
    assert_int_equal(s->begin(c), 0);
    assert_int_equal(s->add_project_key(c, "late", "late1", T0 + 1), 0);
    atomic_store(&lossy_stall, true);
    assert_int_equal(s->add_project_key(c, "late", "late2", T0 + 2), -1);
    assert_non_null(strstr(s->error(c), "did not answer within 1 s"));
    atomic_store(&lossy_stall, false);
    assert_int_equal(s->add_project_key(c, "late", "late3", T0 + 3), -1);
    assert_non_null(strstr(s->error(c), "roll it back"));
    s->rollback(c);
    assert_int_equal(s->ping(c), 0);
    /* Prepared statements went with the old session: made again. */
    assert_int_equal(s->add_project(c, "late", "late9", T0), 1); /* exists */
    s->disconnect(c);
    s->close(s);
    lossy_stop(&l);
    projects_are(&f->e, "{\"projects\":[{\"id\":\"late\",\"created\":\"2023-11-14T22:13:20Z\","
                        "\"keys\":[{\"key\":\"late0\",\"created\":\"2023-11-14T22:13:20Z\"}]}]}");
}

/* Rows of sql (one count) on db. */
static long pg_count(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(db));
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return n;
}

/* A statement that timed out while the database was alive but slow (here:
 * waiting for a row lock another session holds) does not go on for good
 * in the server after its connection is dropped: the session notices its
 * client gone (client_connection_check_interval) and ends, so the write
 * the caller was told failed is not made later behind its back, when the
 * lock is released. */
static void test_pg_deadline_abandoned(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!f->url)
        skip();
    char err[256];
    assert_int_equal(e->s->add_project(e->c, "held", "held0", T0), 0);
    PGconn *holder = PQconnectdb(f->url), *look = PQconnectdb(f->url);
    assert_int_equal(PQstatus(holder), CONNECTION_OK);
    assert_int_equal(PQstatus(look), CONNECTION_OK);
    PQclear(PQexec(holder, "BEGIN"));
    PGresult *r = PQexec(holder, "INSERT INTO project_keys VALUES('held1', 'held', 0)");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    fl_store *s = fl_store_pg_open(f->url, 1, err, sizeof err);
    if (!s)
        fail_msg("fl_store_pg_open: %s", err);
    fl_store_conn *c = s->connect(s);
    assert_non_null(c);
    /* Waits for the holder's uncommitted key, past the deadline. */
    assert_int_equal(s->add_project_key(c, "held", "held1", T0 + 1), -1);
    assert_non_null(strstr(s->error(c), "did not answer within 1 s"));
    /* Its session ends within the check's interval (generously). */
    const char *waiting = "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                          "'faultline' AND wait_event_type = 'Lock'";
    long n = 1;
    for (int i = 0; i < 300 && (n = pg_count(look, waiting)) > 0; i++)
        usleep(100000);
    assert_int_equal(n, 0);
    PQclear(PQexec(holder, "ROLLBACK"));
    PQfinish(holder);
    /* Nothing of it was written once the lock went. */
    usleep(200000);
    assert_int_equal(pg_count(look, "SELECT count(*) FROM project_keys WHERE key = 'held1'"), 0);
    PQfinish(look);
    s->disconnect(c);
    s->close(s);
}

/* A debug file of several pieces (LO_PIECE, 1 MiB: store_pg.c keeps it
 * as a large object by pieces), one of exactly one piece and an empty
 * one come back out of the database byte for byte. */
static void test_pg_symbol_pieces(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!f->url)
        skip(); /* SQLite keeps no copy (fetch_symbol is PostgreSQL's) */
    static const size_t sizes[] = {(5u << 20) / 2 + 7, 1u << 20, 0};
    static const char *const ids[] = {"a1a1", "b2b2", "c3c3"};
    char dir[] = "/tmp/fl-lotest.XXXXXX", path[64], root[64], got[128];
    assert_non_null(mkdtemp(dir));
    snprintf(root, sizeof root, "%s/root", dir);
    assert_int_equal(mkdir(root, 0755), 0);
    unsigned char *want = malloc(sizes[0]), *back = malloc(sizes[0] + 1);
    assert_non_null(want);
    assert_non_null(back);
    for (size_t i = 0; i < sizes[0]; i++)
        want[i] = (unsigned char)(i * 2654435761u >> 13);
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/f%d", dir, k);
        write_file(path, (const char *)want, sizes[k]);
        fl_symbol_rec r = {.build_id = ids[k],
                           .name = "piece",
                           .size = (int64_t)sizes[k],
                           .status = "ok",
                           .kind = "debuginfo",
                           .path = path,
                           .uploaded = T0};
        assert_int_equal(e->s->add_symbol(e->c, &r), 0);
        unlink(path);
        assert_int_equal(e->s->fetch_symbol(e->c, ids[k], root), 0);
        snprintf(got, sizeof got, "%s/%s/debuginfo", root, ids[k]);
        FILE *fp = fopen(got, "rb");
        assert_non_null(fp);
        size_t n = fread(back, 1, sizes[0] + 1, fp);
        fclose(fp);
        assert_int_equal(n, sizes[k]);
        assert_memory_equal(back, want, sizes[k]);
        unlink(got);
        snprintf(got, sizeof got, "%s/%s", root, ids[k]);
        rmdir(got);
    }
    free(want);
    free(back);
    rmdir(root);
    rmdir(dir);
}

/* A report keeps its project from ingest to its group: load_raw() gives it
 * ("" for the default), apply() and reapply() make the groups theirs,
 * list_groups() filters by it ("default": the groups without one), and
 * every group and crash says which it is. */
static void test_project_crashes(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    char r[4][FL_CRASH_ID_MAX], pj[FL_PROJECT_MAX];
    assert_true(ingest_in(e, "mobile", "pm1", "1.0", T0, r[0]));
    assert_true(ingest_in(e, NULL, "pd1", "1.0", T0, r[1]));
    assert_true(ingest_in(e, "mobile", "pm2", "1.0", T0, r[2]));
    assert_true(ingest_in(e, NULL, "pd2", "1.0", T0, r[3]));
    const char *want[4] = {"mobile", "", "mobile", ""};
    for (int i = 0; i < 4; i++) {
        snprintf(pj, sizeof pj, "stale");
        assert_int_equal(load_p(e, r[i], pj), 0);
        assert_string_equal(pj, want[i]);
    }
    bool nf;
    json_t *c = e->s->get_crash(e->c, "pm1", &nf); /* pending */
    assert_non_null(c);
    assert_string_equal(str_of(c, "project"), "mobile");
    json_decref(c);
    assert_non_null(c = e->s->get_crash(e->c, "pd1", &nf));
    assert_string_equal(str_of(c, "project"), "default");
    json_decref(c);

    crash k[4] = {
        {.id = "pm1", .ref = r[0], .group = "gm", .version = "1.0", .project = "mobile"},
        {.id = "pd1", .ref = r[1], .group = "gd", .version = "1.0"},
        {.id = "pm2", .ref = r[2], .group = "gm", .version = "1.0", .project = "mobile"},
        {.id = "pd2", .ref = r[3], .group = "gd2", .version = "1.0", .project = ""},
    };
    for (int i = 0; i < 4; i++)
        assert_int_equal(apply_c(e, &k[i], false), 0);
    char got[256];
    fl_group_filter flt = {.limit = 50};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "gm gd gd2");
    flt.project = "mobile";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "gm");
    flt.project = FL_PROJECT_DEFAULT;
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "gd gd2");
    flt.project = "nope";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "");
    flt.project = "mobile";
    flt.app = "app";
    flt.status = "open";
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "gm");

    /* "project" right after "id", in every engine (the API prints them in
     * this order). */
    json_t *l = e->s->list_groups(e->c, &(fl_group_filter){.limit = 50});
    assert_non_null(l);
    const char *lp[3] = {"mobile", "default", "default"};
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(l, "groups"), i, v)
    {
        assert_string_equal(str_of(v, "project"), lp[i]);
        assert_string_equal(json_object_iter_key(json_object_iter_next(v, json_object_iter(v))),
                            "project");
    }
    json_decref(l);
    json_t *g = group_of(e, "gm");
    assert_string_equal(str_of(g, "project"), "mobile");
    assert_string_equal(json_object_iter_key(json_object_iter_next(g, json_object_iter(g))),
                        "project");
    json_decref(g);
    g = group_of(e, "gd2");
    assert_string_equal(str_of(g, "project"), "default");
    json_decref(g);
    assert_non_null(c = e->s->get_crash(e->c, "pm2", &nf));
    assert_string_equal(str_of(c, "project"), "mobile");
    assert_string_equal(str_of(c, "state"), "processed");
    json_decref(c);
    assert_non_null(c = e->s->get_crash(e->c, "pd2", &nf));
    assert_string_equal(str_of(c, "project"), "default");
    json_decref(c);

    /* Marked for re-processing: load_raw() gives the project again, and a
     * new group made by reapply() is the project's too. */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->requeue(e->c, "pm1"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    snprintf(pj, sizeof pj, "stale");
    assert_int_equal(load_p(e, "pm1", pj), 3);
    assert_string_equal(pj, "mobile");
    k[0].group = "gm2";
    k[0].ref = NULL;
    assert_int_equal(apply_c(e, &k[0], true), 0);
    assert_int_equal(count_of(e, "gm"), 1);
    g = group_of(e, "gm2");
    assert_string_equal(str_of(g, "project"), "mobile");
    json_decref(g);
    flt = (fl_group_filter){.project = "mobile", .limit = 50};
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "gm gm2");
    flt.project = FL_PROJECT_DEFAULT;
    listed(e, &flt, got, sizeof got);
    assert_string_equal(got, "gd gd2");
}

/* published/unpublished/backlog: the engines used with a broker's queue. */
static void test_published(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!e->s->published || !e->s->unpublished || !e->s->backlog)
        skip();
    for (int i = 0; i < 3; i++) {
        char id[8];
        snprintf(id, sizeof id, "p%d", i);
        assert_true(ingest(e, id, "1.0"));
    }
    assert_int_equal(e->s->backlog(e->c), 3);
    char **refs = NULL;
    size_t n = 0;
    assert_int_equal(e->s->unpublished(e->c, 0, 10, &refs, &n), 0);
    assert_int_equal(n, 3);
    free_ids(refs, n);
    assert_int_equal(e->s->unpublished(e->c, 3600, 10, &refs, &n), 0);
    assert_int_equal(n, 0); /* too young: the writer may still publish them */
    assert_int_equal(e->s->unpublished(e->c, 0, 2, &refs, &n), 0);
    assert_int_equal(n, 2);
    free_ids(refs, n);
    const char *pub[] = {"p0", "p2", "unknown"};
    assert_int_equal(e->s->published(e->c, pub, 3), 0);
    assert_int_equal(e->s->unpublished(e->c, 0, 10, &refs, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(refs[0], "p1");
    free_ids(refs, n);
    /* Processed: out of the backlog, and no longer unpublished. */
    apply_s(e, "p1", "gp", "1.0", NULL);
    crash k = {.id = "p0", .group = "gp", .missing = "abab"};
    assert_int_equal(apply_c(e, &k, false), 0);
    assert_int_equal(e->s->backlog(e->c), 1);
    assert_int_equal(e->s->unpublished(e->c, 0, 10, &refs, &n), 0);
    assert_int_equal(n, 0);
    /* Marked for re-processing (requeue, symbols_arrived): waiting and
     * unpublished again until published. */
    char **ids = NULL;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->requeue(e->c, "p1"), 0);
    assert_int_equal(e->s->symbols_arrived(e->c, "abab", 10, &ids, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 1);
    free_ids(ids, n);
    assert_int_equal(e->s->backlog(e->c), 3);
    assert_int_equal(e->s->unpublished(e->c, 0, 10, &refs, &n), 0);
    assert_int_equal(n, 2);
    free_ids(refs, n);
    const char *pub2[] = {"p0", "p1"};
    assert_int_equal(e->s->published(e->c, pub2, 2), 0);
    assert_int_equal(e->s->unpublished(e->c, 0, 10, &refs, &n), 0);
    assert_int_equal(n, 0);
    /* Reprocessed: out of the backlog. */
    k.group = "gp2";
    k.missing = NULL;
    assert_int_equal(apply_c(e, &k, true), 0);
    assert_int_equal(apply_c(e, &(crash){.id = "p1", .group = "gp", .version = "1.0"}, true), 0);
    assert_int_equal(e->s->backlog(e->c), 1);
    /* A failed re-processing keeps the crash as it was, and ends its wait. */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->requeue(e->c, "p1"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(e->s->backlog(e->c), 2);
    assert_int_equal(apply_c(e, &(crash){.id = "p1", .failed = true}, true), 0);
    assert_int_equal(e->s->backlog(e->c), 1);
    assert_int_equal(count_of(e, "gp"), 1);
    /* Many refs at once (more than one statement's worth). */
    enum { MANY = 2500 };
    fl_ingest_item *items = calloc(MANY, sizeof *items);
    fl_ingest_item **v = calloc(MANY, sizeof *v);
    const char **names = calloc(MANY, sizeof *names);
    for (int i = 0; i < MANY; i++) {
        snprintf(items[i].crash_id, sizeof items[i].crash_id, "m%05d", i);
        items[i].received = T0;
        items[i].raw = RAW;
        items[i].raw_len = strlen(RAW);
        v[i] = &items[i];
        names[i] = items[i].crash_id;
    }
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->insert_crashes(e->c, v, MANY), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(e->s->backlog(e->c), MANY + 1);
    assert_int_equal(e->s->published(e->c, names, MANY), 0);
    assert_int_equal(e->s->unpublished(e->c, 0, 10, &refs, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(e->s->backlog(e->c), MANY + 1); /* p2 and these wait, published */
    free(names);
    free(v);
    free(items);
    /* Two API servers' sweeps: the rows one takes wait again, so the
     * other's (min_age_s later at the soonest) does not publish them too. */
    /* Ages are whole seconds of the database's clock, so an age of 1 can
     * be reached a millisecond later: the second sweep asks for 3 (2 s of
     * slack for a loaded machine), which the row, 4 s old when taken,
     * would have if taking it had not restarted its wait. */
    assert_true(ingest(e, "q0", "1.0"));
    sleep(4);
    assert_int_equal(e->s->unpublished(e->c, 1, 10, &refs, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(refs[0], "q0");
    free_ids(refs, n);
    assert_int_equal(e->s->unpublished(e->c, 3, 10, &refs, &n), 0);
    assert_int_equal(n, 0);
    sleep(2); /* not published (a broker away): the next sweep's again */
    assert_int_equal(e->s->unpublished(e->c, 1, 10, &refs, &n), 0);
    assert_int_equal(n, 1);
    free_ids(refs, n);
}

/* Two transactions that lock two groups in opposite orders: PostgreSQL
 * ends one (a deadlock), and the store says that one met a concurrent
 * transaction -- to be run again, no failure of the store's (the worker
 * keeps /healthz quiet for it). */
typedef struct deadlock_half {
    eng *e;
    fl_store_conn *c;
    const char *first, *second;
    pthread_barrier_t *both_hold;
    int rc;
    bool conflict;
} deadlock_half;

static void *lock_two(void *arg)
{
    deadlock_half *d = arg;
    fl_store *s = d->e->s;
    d->rc = s->begin(d->c) || s->set_status(d->c, d->first, "ignored", NULL);
    pthread_barrier_wait(d->both_hold);
    if (!d->rc)
        d->rc = s->set_status(d->c, d->second, "ignored", NULL);
    d->conflict = d->rc && s->conflict(d->c);
    if (d->rc)
        s->rollback(d->c);
    else
        s->commit(d->c);
    return NULL;
}

static void test_conflict(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!e->s->conflict)
        skip();
    assert_true(ingest(e, "dl1", "1.0"));
    assert_true(ingest(e, "dl2", "1.0"));
    apply_s(e, "dl1", "gdla", "1.0", NULL);
    apply_s(e, "dl2", "gdlb", "1.0", NULL);
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, 2);
    deadlock_half h[2] = {
        {.e = e, .c = e->s->connect(e->s), .first = "gdla", .second = "gdlb", .both_hold = &b},
        {.e = e, .c = e->s->connect(e->s), .first = "gdlb", .second = "gdla", .both_hold = &b}};
    assert_non_null(h[0].c);
    assert_non_null(h[1].c);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, lock_two, &h[1]), 0);
    lock_two(&h[0]);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&b);
    /* One ended by the deadlock, the other done once it was. */
    assert_true((h[0].rc != 0) != (h[1].rc != 0));
    deadlock_half *ended = h[0].rc ? &h[0] : &h[1];
    assert_true(ended->conflict);
    assert_non_null(strstr(e->s->error(ended->c), "40P01"));
    deadlock_half *done = h[0].rc ? &h[1] : &h[0];
    assert_false(done->conflict);
    e->s->disconnect(h[0].c);
    e->s->disconnect(h[1].c);
}

/* ---- the same scenario in both engines, the same JSON */

static void scenario(eng *e)
{
    static const char proc[] = "{\"threads\":[{\"frames\":[{\"function\":\"main\"}]}],"
                               "\"signal\":\"SIGSEGV\",\"id\":\"overwritten\"}";
    struct {
        const char *id, *version;
        int64_t t;
    } in[] = {
        {"s1", "1.0", T0},       {"s2", "1.1", T0 + DAY}, {"s3", "1.0", T0 + 3600},
        {"s4", "2.0", T0 + DAY}, {"s5", "1.1", T0},       {"s6", "1.0", T0},
        {"s7", "2.1", T0 + 5},   {"s8", NULL, T0 + 7},
    };
    for (size_t i = 0; i < sizeof in / sizeof *in; i++)
        assert_true(ingest_at(e, in[i].id, in[i].version, in[i].t, NULL));
    assert_true(ingest_in(e, "mobile", "s9", "1.0", T0 + 8, NULL));
    crash k[] = {
        {.id = "s1",
         .group = "gA",
         .version = "1.0",
         .os = "linux",
         .install = "i1",
         .received = T0,
         .frames = "[{\"function\":\"a\"}]",
         .processed = proc},
        {.id = "s2",
         .group = "gA",
         .version = "1.1",
         .os = "mac",
         .install = "i1",
         .received = T0 + DAY,
         .missing = "ffff",
         .processed = proc},
        {.id = "s3",
         .group = "gA",
         .version = "1.0",
         .os = "linux",
         .install = "i2",
         .received = T0 + 3600},
        {.id = "s4",
         .group = "gB",
         .version = "2.0",
         .os = "linux",
         .install = "i3",
         .received = T0 + DAY,
         .frames = "[{\"function\":\"b\"}]"},
        {.id = "s5", .group = "gB", .version = "1.1", .os = NULL, .install = NULL, .received = T0},
        {.id = "s6", .failed = true, .processed = proc},
        {.id = "s9",
         .group = "gM",
         .version = "1.0",
         .os = "linux",
         .install = "i9",
         .received = T0 + 8,
         .processed = proc,
         .project = "mobile"},
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++)
        assert_int_equal(apply_c(e, &k[i], false), 0);
    fl_symbol_rec r = {.build_id = "ffff",
                       .name = "f.debug",
                       .size = 99,
                       .status = "ok",
                       .kind = "debuginfo",
                       .path = "/proc/self/cmdline", /* readable: the PG store keeps it */
                       .uploaded = T0 + 9};
    fl_symbol_rec bad = {
        .name = "x", .size = 1, .status = "failed", .error = "bad", .uploaded = T0 + 10};
    assert_int_equal(e->s->add_symbol(e->c, &r), 0);
    assert_int_equal(e->s->add_symbol(e->c, &bad), 0);
    char **ids = NULL;
    size_t n = 0;
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->symbols_arrived(e->c, "ffff", 10, &ids, &n), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(n, 1);
    free_ids(ids, n);
    crash m = k[1];
    m.group = "gB";
    m.missing = NULL;
    m.frames = "[{\"function\":\"named\"}]";
    assert_int_equal(apply_c(e, &m, true), 0);
    assert_int_equal(e->s->set_status(e->c, "gB", "resolved", "2.0"), 0);
    assert_int_equal(apply_c(e,
                             &(crash){.id = "s7",
                                      .group = "gB",
                                      .version = "2.1",
                                      .os = "linux",
                                      .install = "i3",
                                      .received = T0 + 5},
                             false),
                     0);
}

/* a and b alike, and their keys in the same order (the API prints them
 * in the order they were set). */
static bool same_json(json_t *a, json_t *b)
{
    if (!json_equal(a, b))
        return false;
    char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
    bool same = !strcmp(x, y);
    free(x);
    free(y);
    return same;
}

/* Field by field: the JSON of every read after the same scenario.  No
 * field differs between the engines, nor the order of the fields. */
static void test_same_json(void **st)
{
    fx *f = *st;
    if (!f->url)
        skip(); /* nothing to compare SQLite with */
    eng other = {0};
    fx o = *f;
    snprintf(o.path, sizeof o.path, "%s/other.db", f->dir);
    assert_int_equal(open_sqlite(&o, &other), 0);
    scenario(&f->e);
    scenario(&other);
    eng *both[2] = {&f->e, &other};
    json_t *got[2];
    const char *groups[] = {"gA", "gB", "gM"};
    const char *crashes[] = {"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"};
    for (size_t i = 0; i < sizeof groups / sizeof *groups; i++) {
        for (int k = 0; k < 2; k++)
            assert_non_null(got[k] = group_of(both[k], groups[i]));
        if (!same_json(got[0], got[1]))
            fail_msg("get_group(%s) differs:\npg:     %s\nsqlite: %s", groups[i],
                     json_dumps(got[0], 0), json_dumps(got[1], 0));
        json_decref(got[0]);
        json_decref(got[1]);
    }
    for (size_t i = 0; i < sizeof crashes / sizeof *crashes; i++) {
        bool nf;
        for (int k = 0; k < 2; k++)
            assert_non_null(got[k] = both[k]->s->get_crash(both[k]->c, crashes[i], &nf));
        if (!same_json(got[0], got[1]))
            fail_msg("get_crash(%s) differs:\npg:     %s\nsqlite: %s", crashes[i],
                     json_dumps(got[0], 0), json_dumps(got[1], 0));
        json_decref(got[0]);
        json_decref(got[1]);
    }
    fl_group_filter flts[] = {{.limit = 10},
                              {.limit = 1, .offset = 1},
                              {.status = "regressed", .limit = 5},
                              {.project = "mobile", .limit = 10},
                              {.project = FL_PROJECT_DEFAULT, .limit = 10}};
    for (size_t i = 0; i < sizeof flts / sizeof *flts; i++) {
        for (int k = 0; k < 2; k++)
            assert_non_null(got[k] = both[k]->s->list_groups(both[k]->c, &flts[i]));
        if (!same_json(got[0], got[1]))
            fail_msg("list_groups #%zu differs:\npg:     %s\nsqlite: %s", i, json_dumps(got[0], 0),
                     json_dumps(got[1], 0));
        json_decref(got[0]);
        json_decref(got[1]);
    }
    for (int k = 0; k < 2; k++)
        assert_non_null(got[k] = both[k]->s->list_symbols(both[k]->c, 10));
    assert_true(json_equal(got[0], got[1]));
    json_decref(got[0]);
    json_decref(got[1]);
    /* Trends: sparse rows in no order; the same set in both. */
    const char *tapps[] = {NULL, "app", "none"};
    for (size_t i = 0; i < sizeof tapps / sizeof *tapps; i++) {
        for (int k = 0; k < 2; k++) {
            assert_non_null(got[k] = both[k]->s->trends(both[k]->c, tapps[i], "2023-11-01"));
            sort_rows(json_object_get(got[k], "rows"));
            sort_rows(json_object_get(got[k], "installs"));
        }
        if (!json_equal(got[0], got[1]))
            fail_msg("trends(%s) differs:\npg:     %s\nsqlite: %s", tapps[i] ? tapps[i] : "all",
                     json_dumps(got[0], JSON_SORT_KEYS), json_dumps(got[1], JSON_SORT_KEYS));
        json_decref(got[0]);
        json_decref(got[1]);
    }
    fl_store_stats s[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(both[k]->s->stats(both[k]->c, &s[k]), 0);
    assert_int_equal(s[0].crashes, s[1].crashes);
    assert_int_equal(s[0].groups, s[1].groups);
    close_eng(&other);
}

/* ---- trends */

static void test_trends(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    /* Two days, two versions, an OS and an architecture unknown, installs
     * counted once a day; a failed crash and a re-applied one count
     * nothing more. */
    struct {
        const char *id, *version, *os, *arch, *install;
        int64_t t;
        bool failed;
    } in[] = {
        {"t1", "1.0", "linux", "x86-64", "i1", T0, false},
        {"t2", "1.0", "linux", "aarch64", "i1", T0, false},
        {"t3", "2.0", NULL, NULL, "i2", T0, false},
        {"t4", "2.0", "linux", "aarch64", "i1", T0 + DAY, false},
        {"t5", "2.0", "linux", "aarch64", NULL, T0 + DAY, false},
        {"t6", "2.0", "linux", "x86-64", "i9", T0, true},
    };
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        assert_true(ingest_at(e, in[i].id, in[i].version, in[i].t, NULL));
        crash k = {.id = in[i].id,
                   .group = i % 2 ? "gA" : "gB",
                   .version = in[i].version,
                   .os = in[i].os,
                   .arch = in[i].arch,
                   .install = in[i].install,
                   .received = in[i].t,
                   .failed = in[i].failed};
        assert_int_equal(apply_c(e, &k, false), 0);
        assert_int_equal(apply_c(e, &k, false), 0); /* twice: counted once */
    }
    json_t *t = e->s->trends(e->c, "app", "2023-11-14");
    assert_non_null(t);
    sort_rows(json_object_get(t, "rows"));
    sort_rows(json_object_get(t, "installs"));
    json_t *want =
        json_loads("{\"rows\":[[\"2023-11-14\",\"a\",\"\",1],[\"2023-11-14\",\"a\",\"aarch64\",1],"
                   "[\"2023-11-14\",\"a\",\"x86-64\",1],"
                   "[\"2023-11-14\",\"c\",\"\",3],[\"2023-11-14\",\"o\",\"\",1],"
                   "[\"2023-11-14\",\"o\",\"linux\",2],[\"2023-11-14\",\"v\",\"1.0\",2],"
                   "[\"2023-11-14\",\"v\",\"2.0\",1],[\"2023-11-15\",\"a\",\"aarch64\",2],"
                   "[\"2023-11-15\",\"c\",\"\",2],"
                   "[\"2023-11-15\",\"o\",\"linux\",2],[\"2023-11-15\",\"v\",\"2.0\",2]],"
                   "\"installs\":[[\"2023-11-14\",2],[\"2023-11-15\",1]],\"apps\":[\"app\"]}",
                   0, NULL);
    assert_non_null(want);
    if (!json_equal(t, want))
        fail_msg("trends: %s", json_dumps(t, JSON_SORT_KEYS));
    json_decref(t);
    /* From the second day on only. */
    assert_non_null(t = e->s->trends(e->c, NULL, "2023-11-15"));
    assert_int_equal(json_array_size(json_object_get(t, "rows")), 4);
    json_decref(t);
    json_decref(want);
}

/* ---- concurrency */

enum { C_THREADS = 4, C_IDS = 240, C_GROUPS = 3, C_TXN = 6 };

typedef struct cthread {
    fl_store *s;
    int seed;
    int retries, stored, applied, dropped;
    char err[256];
} cthread;

static bool retryable(const char *err)
{
    return err && (strstr(err, "40P01") || strstr(err, "40001") || strstr(err, "locked") ||
                   strstr(err, "busy"));
}

/* Every thread ingests every id (overlapping batches, its own order), then
 * applies every id, C_TXN to a transaction, retrying a transaction that
 * met another. */
static void *cthread_main(void *arg)
{
    cthread *t = arg;
    fl_store_conn *c = t->s->connect(t->s);
    if (!c) {
        snprintf(t->err, sizeof t->err, "connect failed");
        return NULL;
    }
    int order[C_IDS];
    for (int i = 0; i < C_IDS; i++)
        order[i] = i;
    unsigned r = (unsigned)t->seed * 2654435761u + 1;
    for (int i = C_IDS - 1; i > 0; i--) { /* a shuffle of its own */
        r = r * 1103515245 + 12345;
        int j = (int)((r >> 8) % (unsigned)(i + 1)), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    char ids[C_IDS][16];
    for (int i = 0; i < C_IDS; i++)
        snprintf(ids[i], sizeof ids[i], "cc%04d", order[i]);
    for (int at = 0; at < C_IDS && !t->err[0]; at += 20) {
        fl_ingest_item it[20] = {0};
        fl_ingest_item *v[20];
        for (int i = 0; i < 20; i++) {
            memcpy(it[i].crash_id, ids[at + i], sizeof ids[at + i]);
            it[i].app = "app";
            it[i].version = "1.0";
            it[i].received = T0;
            it[i].raw = RAW;
            it[i].raw_len = strlen(RAW);
            v[i] = &it[i];
        }
        for (int attempt = 0;; attempt++) {
            if (t->s->begin(c) == 0 && t->s->insert_crashes(c, v, 20) == 0 && t->s->commit(c) == 0)
                break;
            const char *e = t->s->error(c);
            if (!retryable(e) || attempt > 50) {
                snprintf(t->err, sizeof t->err, "ingest: %s", e);
                break;
            }
            t->s->rollback(c);
            t->retries++;
        }
        for (int i = 0; i < 20; i++)
            t->stored += !it[i].duplicate;
    }
    for (int at = 0; at < C_IDS && !t->err[0]; at += C_TXN) {
        for (int attempt = 0;; attempt++) {
            int rc = t->s->begin(c), applied = 0, dropped = 0;
            for (int i = 0; i < C_TXN && rc == 0; i++) {
                int n = order[at + i];
                char gid[8], inst[8];
                snprintf(gid, sizeof gid, "cg%d", n % C_GROUPS);
                snprintf(inst, sizeof inst, "i%d", n % 5);
                fl_processed p = {.crash_id = ids[at + i],
                                  .group_id = gid,
                                  .signature = gid,
                                  .stack_hash = "h",
                                  .app = "app",
                                  .version = "1.0",
                                  .os = "linux",
                                  .install_id = inst,
                                  .received = T0,
                                  .frames_json = "[]"};
                rc = t->s->apply(c, &p);
                dropped += rc == 1;
                applied += rc == 0;
                rc = rc == 1 ? 0 : rc;
            }
            if (rc == 0 && t->s->commit(c) == 0) {
                t->applied += applied;
                t->dropped += dropped;
                break;
            }
            const char *e = t->s->error(c);
            if (!retryable(e) || attempt > 50) {
                snprintf(t->err, sizeof t->err, "apply: %s", e);
                t->s->rollback(c);
                break;
            }
            t->s->rollback(c);
            t->retries++;
        }
    }
    t->s->disconnect(c);
    return NULL;
}

static void test_concurrency(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    pthread_t th[C_THREADS];
    cthread t[C_THREADS] = {0};
    for (int i = 0; i < C_THREADS; i++) {
        t[i].s = e->s;
        t[i].seed = i + 1;
        assert_int_equal(pthread_create(&th[i], NULL, cthread_main, &t[i]), 0);
    }
    int stored = 0, retries = 0;
    for (int i = 0; i < C_THREADS; i++) {
        pthread_join(th[i], NULL);
        if (t[i].err[0])
            fail_msg("thread %d: %s", i, t[i].err);
        stored += t[i].stored;
        retries += t[i].retries;
    }
    if (is_pg(e))
        assert_int_equal(stored, C_IDS); /* each id stored by exactly one writer */
    int64_t total = 0;
    for (int g = 0; g < C_GROUPS; g++) {
        char gid[8];
        snprintf(gid, sizeof gid, "cg%d", g);
        int64_t want = 0;
        for (int n = 0; n < C_IDS; n++)
            want += n % C_GROUPS == g;
        int64_t got = count_of(e, gid);
        assert_int_equal(got, want);
        assert_int_equal(int_of(e, gid, "affected"), 5);
        total += got;
    }
    assert_int_equal(total, C_IDS);
    for (int n = 0; n < C_IDS; n++) {
        char id[16];
        snprintf(id, sizeof id, "cc%04d", n);
        assert_int_equal(load(e, id), 2);
    }
    if (e->s->backlog)
        assert_int_equal(e->s->backlog(e->c), 0);
    printf("# concurrency: %d retried transactions\n", retries);
}

/* A merge while the threads above ingest and apply: whenever it lands
 * (before, among or after the crashes of the group merged), every crash
 * counts once, in the group merged into or in the untouched one. */
static void test_merge_concurrent(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    pthread_t th[C_THREADS];
    cthread t[C_THREADS] = {0};
    /* The groups exist before the threads start: a merge needs both. */
    for (int g = 0; g < 2; g++) {
        char id[16], gid[8];
        snprintf(id, sizeof id, "pre%d", g);
        snprintf(gid, sizeof gid, "cg%d", g);
        assert_true(ingest(e, id, "1.0"));
        apply_s(e, id, gid, "1.0", "i9");
    }
    for (int i = 0; i < C_THREADS; i++) {
        t[i].s = e->s;
        t[i].seed = i + 11;
        assert_int_equal(pthread_create(&th[i], NULL, cthread_main, &t[i]), 0);
    }
    /* Once some of cg0's crashes are counted (the rest to come). */
    for (int i = 0; i < 10000 && int_of(e, "cg0", "count") < 20; i++)
        usleep(500);
    int merge_retries = 0;
    for (;;) {
        int rc = e->s->begin(e->c);
        if (rc == 0)
            rc = e->s->merge_group(e->c, "cg0", "cg1");
        if (rc == 0 && e->s->commit(e->c) == 0)
            break;
        assert_true(rc <= 0);
        const char *why = e->s->error(e->c);
        if (!retryable(why) && !strstr(why ? why : "", "meanwhile"))
            fail_msg("merge: %s", why ? why : "?");
        e->s->rollback(e->c);
        assert_true(++merge_retries < 200);
        usleep(1000);
    }
    int64_t at_merge = int_of(e, "cg0", "count"); /* how far the threads were */
    for (int i = 0; i < C_THREADS; i++) {
        pthread_join(th[i], NULL);
        if (t[i].err[0])
            fail_msg("thread %d: %s", i, t[i].err);
    }
    int64_t want[3] = {1, 1, 0};
    for (int n = 0; n < C_IDS; n++)
        want[n % C_GROUPS]++;
    assert_int_equal(count_of(e, "cg0"), want[0] + want[1]);
    assert_int_equal(count_of(e, "cg2"), want[2]);
    assert_int_equal(int_of(e, "cg0", "affected"), 6); /* i0..i4 and i9 */
    json_t *g = group_of(e, "cg1");
    assert_string_equal(str_of(g, "id"), "cg0");
    json_decref(g);
    bool nf;
    json_t *l = e->s->group_crashes(e->c, "cg0", NULL, 1000, 0, &nf);
    assert_int_equal(json_integer_value(json_object_get(l, "total")), want[0] + want[1]);
    json_decref(l);
    printf("# merge among writers: %d retried merges, %lld crashes in the group then\n",
           merge_retries, (long long)at_merge);
}

/* A group deleted in small batches while the threads above ingest and
 * apply crashes of its signature: each crash of it is either erased with
 * it (it was counted before the delete began) or counted once in the new
 * group its signature makes -- none lost, none twice. */
static void test_delete_group_concurrent(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    pthread_t th[C_THREADS];
    cthread t[C_THREADS] = {0};
    assert_true(ingest(e, "pre0", "1.0"));
    apply_s(e, "pre0", "cg0", "1.0", "i9");
    for (int i = 0; i < C_THREADS; i++) {
        t[i].s = e->s;
        t[i].seed = i + 21;
        assert_int_equal(pthread_create(&th[i], NULL, cthread_main, &t[i]), 0);
    }
    for (int i = 0; i < 10000 && int_of(e, "cg0", "count") < 20; i++)
        usleep(500);
    int steps;
    int64_t erased;
    assert_int_equal(delete_g(e, "cg0", 5, &steps, &erased), 0);
    for (int i = 0; i < C_THREADS; i++) {
        pthread_join(th[i], NULL);
        if (t[i].err[0])
            fail_msg("thread %d: %s", i, t[i].err);
    }
    char g1[33];
    fl_group_gen_id("cg0", 1, g1);
    int64_t want = 1, deleted = 0, moved = 0; /* pre0 */
    for (int n = 0; n < C_IDS; n++)
        want += n % C_GROUPS == 0;
    for (int n = -1; n < C_IDS; n++) {
        if (n >= 0 && n % C_GROUPS)
            continue;
        char id[16];
        snprintf(id, sizeof id, n < 0 ? "pre0" : "cc%04d", n);
        bool nf;
        json_t *c = e->s->get_crash(e->c, id, &nf);
        assert_non_null(c);
        const char *state = str_of(c, "state");
        if (!strcmp(state, "deleted")) {
            deleted++;
        } else {
            assert_string_equal(state, "processed");
            assert_string_equal(str_of(c, "group_id"), g1);
            moved++;
        }
        json_decref(c);
    }
    int64_t in_new = count_of(e, g1);
    if (in_new < 0)
        in_new = 0; /* every crash came before the delete */
    assert_int_equal(deleted, erased);
    assert_int_equal(moved, in_new);
    assert_int_equal(deleted + moved, want);
    assert_int_equal(count_of(e, "cg0"), -1);
    for (int g = 1; g < C_GROUPS; g++) {
        char gid[8];
        snprintf(gid, sizeof gid, "cg%d", g);
        int64_t w = 0;
        for (int n = 0; n < C_IDS; n++)
            w += n % C_GROUPS == g;
        assert_int_equal(count_of(e, gid), w);
    }
    printf("# delete among writers: %lld erased in %d steps, %lld in the new group\n",
           (long long)erased, steps, (long long)moved);
}

/* PostgreSQL only: the per-call statements a large table would make slow
 * use the partial indexes (their predicates must match the queries'). */
static void test_pg_plans(void **st)
{
    fx *f = *st;
    if (!f->url)
        skip();
    PGconn *db = PQconnectdb(f->url);
    assert_int_equal(PQstatus(db), CONNECTION_OK);
    /* Rows as a backlog has them (most waiting crashes published), counted
     * by ANALYZE: on empty tables the planner's pick between the two
     * partial indexes over waiting_since rests on default estimates, and
     * a column added to crashes once turned it. */
    PGresult *fill = PQexec(db, "INSERT INTO crashes(id, received, raw, raw_len, state, published, "
                                "waiting_since) SELECT 'c' || i, 0, '', 0, 0, i > 10, i FROM "
                                "generate_series(1, 2000) i; ANALYZE crashes");
    assert_int_equal(PQresultStatus(fill), PGRES_COMMAND_OK);
    PQclear(fill);
    PQclear(PQexec(db, "SET enable_seqscan=off"));
    static const char *const q[][2] = {
        {"EXPLAIN SELECT count(*) FROM crashes WHERE state = 0 OR resym", "crashes_waiting"},
        {"EXPLAIN SELECT id FROM crashes WHERE NOT published AND (state = 0 OR resym) AND "
         "waiting_since <= 5 ORDER BY waiting_since LIMIT 10",
         "crashes_unpublished"},
        {"EXPLAIN DELETE FROM crash_missing WHERE crash_id='x'", "crash_missing_crash"},
    };
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        PGresult *r = PQexec(db, q[i][0]);
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        bool found = false;
        for (int k = 0; k < PQntuples(r); k++)
            found |= strstr(PQgetvalue(r, k, 0), q[i][1]) != NULL;
        if (!found)
            fail_msg("%s does not use %s", q[i][0], q[i][1]);
        PQclear(r);
    }
    PQfinish(db);
}

/* PostgreSQL only: a connection whose server side went away (a database
 * restart, here pg_terminate_backend) fails the call in flight, then the
 * next call reconnects; inside a transaction, calls fail until rollback. */
static void test_pg_reconnect(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!f->url)
        skip();
    assert_true(ingest(e, "rc1", "1.0"));
    PGconn *db = PQconnectdb(f->url);
    assert_int_equal(PQstatus(db), CONNECTION_OK);
    const char *kill = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                       "datname=current_database() AND pid<>pg_backend_pid()";
    PQclear(PQexec(db, kill));
    char *raw = NULL, pj[FL_PROJECT_MAX];
    size_t len;
    int64_t rcv;
    /* Ended while idle: the call that finds it dead runs again on a new
     * connection, and the caller never sees the restart. */
    assert_int_equal(e->s->load_raw(e->c, "rc1", &raw, &len, &rcv, NULL, pj), 0);
    free(raw);
    PQclear(PQexec(db, kill));
    usleep(100 * 1000);
    assert_int_equal(e->s->begin(e->c), 0); /* a BEGIN as well */
    e->s->rollback(e->c);
    /* Lost inside a transaction: no half transaction on a new connection. */
    assert_int_equal(e->s->begin(e->c), 0);
    PQclear(PQexec(db, kill));
    usleep(100 * 1000);
    assert_int_equal(e->s->requeue(e->c, "rc1"), -1); /* the call in flight fails */
    assert_int_equal(e->s->requeue(e->c, "rc1"), -1); /* and so does the next, until rollback */
    assert_non_null(strstr(e->s->error(e->c), "roll"));
    e->s->rollback(e->c);
    assert_int_equal(load(e, "rc1"), 0); /* back */
    PQfinish(db);
}

/* ---- reads in one snapshot (PostgreSQL) */

/* A read on a connection of its own: get_group(id), or the trends of
 * "app" when id is NULL. */
typedef struct rthread {
    fl_store *s;
    const char *id;
    json_t *out;
    char err[256];
} rthread;

static void *rthread_main(void *arg)
{
    rthread *t = arg;
    fl_store_conn *c = t->s->connect(t->s);
    if (!c) {
        snprintf(t->err, sizeof t->err, "connect failed");
        return NULL;
    }
    bool nf = false;
    t->out = t->id ? t->s->get_group(c, t->id, &nf) : t->s->trends(c, "app", "2023-11-14");
    if (!t->out)
        snprintf(t->err, sizeof t->err, "%s", nf ? "not found" : t->s->error(c));
    t->s->disconnect(c);
    return NULL;
}

/* t's read, with a writer committing change between its statements: the
 * writer holds table, which only the read's later statements read, until
 * the read waits for it (its earlier statements done), then makes change
 * and commits.  Read in one snapshot, the answer is all from before the
 * change; otherwise its later statements see the change and the earlier
 * ones did not.  No hook in the store: PostgreSQL's lock orders them. */
static void read_across(fx *f, rthread *t, const char *table, const char *change)
{
    PGconn *w = PQconnectdb(f->url), *look = PQconnectdb(f->url);
    assert_int_equal(PQstatus(w), CONNECTION_OK);
    assert_int_equal(PQstatus(look), CONNECTION_OK);
    char sql[128];
    snprintf(sql, sizeof sql, "BEGIN; LOCK TABLE %s IN ACCESS EXCLUSIVE MODE", table);
    PGresult *r = PQexec(w, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, rthread_main, t), 0);
    const char *v[1] = {table};
    bool waits = false;
    for (int i = 0; i < 2000 && !waits; i++) {
        r = PQexecParams(look,
                         "SELECT count(*) FROM pg_stat_activity a JOIN pg_locks l ON l.pid=a.pid "
                         "WHERE a.wait_event_type='Lock' AND NOT l.granted AND "
                         "l.relation=$1::regclass",
                         1, NULL, v, NULL, NULL, 0);
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        waits = atoi(PQgetvalue(r, 0, 0)) > 0;
        PQclear(r);
        if (!waits)
            usleep(5000);
    }
    r = PQexec(w, waits ? change : "SELECT 1");
    bool changed = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!changed)
        fprintf(stderr, "%s: %s", change, PQerrorMessage(w));
    r = PQexec(w, "COMMIT"); /* the read goes on */
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    pthread_join(th, NULL);
    PQfinish(look);
    PQfinish(w);
    if (!waits)
        fail_msg("the read never waited for %s", table);
    assert_true(changed);
    if (t->err[0])
        fail_msg("the read: %s", t->err);
}

/* A group deleted while a merge into it commits: the delete, which waited
 * for the merge's lock on the group's row, takes the group merged in along
 * (its row and a tombstone), not only those its first look found.  Left
 * behind, it was merged into a group that no longer existed: its id
 * answered 404 instead of 410, and every later crash of its signature
 * failed to process ("vanished") -- seen in a QA run with merges and
 * deletes arriving together. */
typedef struct delthread {
    fl_store *s;
    const char *id;
    int rc;
    char err[256];
} delthread;

static void *delthread_main(void *arg)
{
    delthread *d = arg;
    fl_store_conn *c = d->s->connect(d->s);
    char into[64] = "";
    d->rc = !c || d->s->begin(c) ? -1 : d->s->delete_group(c, d->id, into);
    if (d->rc == 0 && d->s->commit(c))
        d->rc = -1;
    if (d->rc) {
        snprintf(d->err, sizeof d->err, "%s", c ? d->s->error(c) : "no connection");
        if (c)
            d->s->rollback(c);
    }
    d->s->disconnect(c);
    return NULL;
}

static void test_pg_delete_while_merged(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!f->url)
        skip(); /* SQLite: one writer, the two never overlap */
    assert_true(ingest(e, "dm1", "1.0"));
    apply_s(e, "dm1", "gdm", "1.0", "i1");
    assert_true(ingest(e, "dm2", "1.0"));
    apply_s(e, "dm2", "gdn", "1.0", "i2");
    /* The merge holds both rows (not committed yet) ... */
    fl_store_conn *m = e->s->connect(e->s);
    assert_non_null(m);
    assert_int_equal(e->s->begin(m), 0);
    assert_int_equal(e->s->merge_group(m, "gdm", "gdn"), 0);
    /* ... while the delete looks for the group and its members, and waits. */
    delthread d = {.s = e->s, .id = "gdm"};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, delthread_main, &d), 0);
    PGconn *look = PQconnectdb(f->url);
    assert_int_equal(PQstatus(look), CONNECTION_OK);
    bool waits = false;
    for (int i = 0; i < 2000 && !waits; i++) {
        PGresult *r = PQexec(look, "SELECT count(*) FROM pg_stat_activity WHERE "
                                   "wait_event_type='Lock' AND query LIKE '%FOR UPDATE%'");
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        waits = atoi(PQgetvalue(r, 0, 0)) > 0;
        PQclear(r);
        if (!waits)
            usleep(5000);
    }
    PQfinish(look);
    assert_int_equal(e->s->commit(m), 0);
    pthread_join(th, NULL);
    e->s->disconnect(m);
    if (!waits)
        fail_msg("the delete never waited for the merge");
    if (d.rc)
        fail_msg("delete_group: %d %s", d.rc, d.err);
    /* Both rows gone, both ids tombstones. */
    assert_int_equal(db_count(f, "SELECT count(*) FROM groups WHERE id IN ('gdm','gdn')"), 0);
    int64_t when = 0, n = 0;
    bool fin = false;
    char with[64] = "";
    assert_int_equal(e->s->group_deleted(e->c, "gdn", &when, &n, &fin, with), 0);
    assert_string_equal(with, "gdm");
    /* The next crash of gdn's signature is processed (in a new group). */
    assert_true(ingest(e, "dm3", "1.0"));
    apply_s(e, "dm3", "gdn", "1.0", "i3");
}

/* A crash counted in the group (its row and its day, as a worker's apply
 * does) between the group's row and its days: the group's count is its
 * days'. */
static void test_pg_group_snapshot(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!f->url)
        skip();
    assert_true(ingest(e, "sn1", "1.0"));
    apply_s(e, "sn1", "gs", "1.0", "i1");
    assert_true(ingest(e, "sn2", "1.0"));
    apply_s(e, "sn2", "gs", "1.0", "i2");
    rthread t = {.s = e->s, .id = "gs"};
    read_across(f, &t, "group_days",
                "UPDATE groups SET count=count+1 WHERE id='gs'; UPDATE group_days SET "
                "count=count+1 WHERE group_id='gs'");
    json_int_t n = json_integer_value(json_object_get(t.out, "count")), days = 0;
    json_t *d;
    size_t i;
    json_array_foreach(json_object_get(t.out, "days"), i, d) days +=
        json_integer_value(json_object_get(d, "count"));
    if (n != 2 || days != 2)
        fail_msg("count %lld, days %lld: %s", (long long)n, (long long)days,
                 json_dumps(t.out, JSON_COMPACT));
    json_decref(t.out);
    assert_int_equal(count_of(e, "gs"), 3); /* the change, once it is read */
}

/* A day's crashes ("c") and installations in the trends of "app". */
static void trend_day(json_t *t, const char *day, json_int_t *crashes, json_int_t *installs)
{
    json_t *row;
    size_t i;
    *crashes = *installs = 0;
    json_array_foreach(json_object_get(t, "rows"), i, row)
    {
        if (!strcmp(json_string_value(json_array_get(row, 0)), day) &&
            !strcmp(json_string_value(json_array_get(row, 1)), "c"))
            *crashes = json_integer_value(json_array_get(row, 3));
    }
    json_array_foreach(json_object_get(t, "installs"), i, row)
    {
        if (!strcmp(json_string_value(json_array_get(row, 0)), day))
            *installs = json_integer_value(json_array_get(row, 1));
    }
}

/* A crash of a new installation counted in the trends (as a worker's
 * commit does) between their crashes and their installations: a day has
 * no more installations than crashes. */
static void test_pg_trends_snapshot(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!f->url)
        skip();
    assert_true(ingest(e, "tn1", "1.0"));
    apply_s(e, "tn1", "gt", "1.0", "i1");
    rthread t = {.s = e->s};
    read_across(f, &t, "app_installs",
                "UPDATE app_days SET count=count+1 WHERE app='app' AND day='2023-11-14'; "
                "INSERT INTO app_installs VALUES('app', '2023-11-14', 'i2')");
    json_int_t crashes, installs;
    trend_day(t.out, "2023-11-14", &crashes, &installs);
    if (crashes != 1 || installs != 1)
        fail_msg("%lld crashes, %lld installations: %s", (long long)crashes, (long long)installs,
                 json_dumps(t.out, JSON_COMPACT));
    json_decref(t.out);
    assert_non_null(t.out = e->s->trends(e->c, "app", "2023-11-14"));
    trend_day(t.out, "2023-11-14", &crashes, &installs);
    assert_int_equal(crashes, 2); /* the change, once it is read */
    assert_int_equal(installs, 2);
    json_decref(t.out);
}

/* A read's own transaction ends however the read does: one that failed in
 * it (a lock waited for too long, lock_timeout) says why, and the
 * connection's next read runs; the database ending the session in
 * between changes nothing either (the read's BEGIN runs again on a new
 * connection, as any call outside a transaction).  In the caller's
 * transaction a read begins and ends none: the caller's rollback() still
 * undoes what came before it. */
static void test_pg_read_ends(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!f->url)
        skip();
    assert_true(ingest(e, "re1", "1.0"));
    apply_s(e, "re1", "gr", "1.0", "i1");
    char url[512], err[256];
    snprintf(url, sizeof url, "%s%soptions=-c%%20lock_timeout%%3D100", f->url,
             strchr(f->url, '?') ? "&" : "?");
    fl_store *s = fl_store_pg_open(url, 0, err, sizeof err);
    if (!s)
        fail_msg("fl_store_pg_open: %s", err);
    fl_store_conn *c = s->connect(s);
    assert_non_null(c);
    PGconn *w = PQconnectdb(f->url);
    assert_int_equal(PQstatus(w), CONNECTION_OK);
    PGresult *r = PQexec(w, "BEGIN; LOCK TABLE group_days IN ACCESS EXCLUSIVE MODE");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    bool nf = false;
    assert_null(s->get_group(c, "gr", &nf));
    assert_false(nf);
    if (!strstr(s->error(c), "55P03")) /* lock_not_available */
        fail_msg("get_group: %s", s->error(c));
    PQclear(PQexec(w, "ROLLBACK"));
    json_t *g = s->get_group(c, "gr", &nf);
    if (!g)
        fail_msg("get_group after a failed one: %s", s->error(c));
    json_decref(g);
    r = PQexec(w, "SELECT count(*) FROM pg_stat_activity WHERE datname=current_database() AND "
                  "state LIKE 'idle in transaction%'");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "0");
    PQclear(r);
    PQclear(PQexec(w, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                      "datname=current_database() AND pid<>pg_backend_pid()"));
    usleep(100 * 1000);
    if (!(g = s->get_group(c, "gr", &nf)))
        fail_msg("get_group after a restart: %s", s->error(c));
    json_decref(g);
    fl_ingest_item it = {
        .app = "app", .version = "1.0", .received = T0, .raw = RAW, .raw_len = strlen(RAW)};
    fl_ingest_item *one = &it;
    snprintf(it.crash_id, sizeof it.crash_id, "re2");
    assert_int_equal(s->begin(c), 0);
    assert_int_equal(s->insert_crashes(c, &one, 1), 0);
    assert_non_null(g = s->get_group(c, "gr", &nf));
    json_decref(g);
    s->rollback(c);
    assert_int_equal(load(e, "re2"), 1);
    s->disconnect(c);
    s->close(s);
    PQfinish(w);
}

/* ---- the queue inside each store: embedded (SQLite), tasks (PostgreSQL) */

static fl_queue *store_queue(const eng *e)
{
    fl_queue *q = is_pg(e) ? fl_queue_pg_new() : fl_queue_embedded_new();
    assert_non_null(q);
    assert_true(q->in_store_txn);
    return q;
}

/* Enqueue n ids "<prefix><i>" in a transaction, committed or rolled back. */
static void enqueue_ids(eng *e, fl_queue *q, const char *prefix, int from, int n, bool commit)
{
    char(*ids)[32] = calloc((size_t)n, sizeof *ids);
    const char **p = calloc((size_t)n, sizeof *p);
    for (int i = 0; i < n; i++) {
        snprintf(ids[i], sizeof ids[i], "%s%d", prefix, from + i);
        p[i] = ids[i];
    }
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(q->enqueue_many(q, e->c, p, (size_t)n), 0);
    if (commit)
        assert_int_equal(e->s->commit(e->c), 0);
    else
        e->s->rollback(e->c);
    free(ids);
    free(p);
}

/* Whole stored tasks per claim, in order; the last entry of each marked;
 * the task and its count commit or roll back with the caller's
 * transaction; release() and an expired lease give a task back with one
 * more attempt. */
static void test_queue_in_store(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    fl_queue *q = store_queue(e);
    fl_task t[64];
    size_t n = 9;

    enqueue_ids(e, q, "rolled", 0, 40, false);
    assert_int_equal(q->depth(q, e->c), 0);
    assert_int_equal(q->claim(q, e->c, 60, 32, t, &n), 0);
    assert_int_equal(n, 0);

    /* 40 ids: stored tasks of 16, 16 and 8. */
    enqueue_ids(e, q, "id", 0, 40, true);
    assert_int_equal(q->depth(q, e->c), 40);
    assert_int_equal(q->claim(q, e->c, 60, 20, t, &n), 0);
    assert_int_equal(n, 16); /* the second task does not fit in 20 */
    for (size_t i = 0; i < n; i++) {
        char want[32];
        snprintf(want, sizeof want, "id%zu", i);
        assert_string_equal(t[i].crash_id, want);
        assert_int_equal(t[i].last, i == 15);
        assert_int_equal(t[i].attempts, 1);
        assert_int_equal(t[i].id, t[0].id);
    }
    size_t m = 0;
    assert_int_equal(q->claim(q, e->c, 60, 32, t + 16, &m), 0);
    assert_int_equal(m, 24);
    assert_int_equal(q->claim(q, e->c, 60, 32, t + 40, &n), 0);
    assert_int_equal(n, 0); /* all leased */

    /* An ack rolled back leaves the task; committed, it is gone. */
    assert_int_equal(e->s->begin(e->c), 0);
    for (size_t i = 0; i < 16; i++)
        assert_int_equal(q->ack(q, e->c, &t[i]), 0);
    e->s->rollback(e->c);
    assert_int_equal(q->depth(q, e->c), 40);
    assert_int_equal(e->s->begin(e->c), 0);
    for (size_t i = 0; i < 16; i++)
        assert_int_equal(q->ack(q, e->c, &t[i]), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(q->depth(q, e->c), 24);

    /* Released: claimed again at once, one attempt more.  A stale release
     * (the claim before that one) gives back nothing. */
    if (q->release) {
        assert_int_equal(q->release(q, e->c, t + 16, 24), 0);
        assert_int_equal(q->claim(q, e->c, 60, 64, t, &n), 0);
        assert_int_equal(n, 24);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(t[i].attempts, 2);
        fl_task stale[24];
        memcpy(stale, t, sizeof stale);
        for (size_t i = 0; i < 24; i++)
            stale[i].attempts = 1;
        assert_int_equal(q->release(q, e->c, stale, 24), 0);
        assert_int_equal(q->claim(q, e->c, 60, 64, t + 24, &m), 0);
        assert_int_equal(m, 0); /* still the second claim's */
    }
    /* A lease of 0 s has expired by the next claim. */
    assert_int_equal(q->release_all(q, e->c), 0);
    assert_int_equal(q->claim(q, e->c, 0, 64, t, &n), 0);
    assert_int_equal(n, 24);
    assert_int_equal(q->claim(q, e->c, 60, 64, t, &n), 0);
    assert_int_equal(n, 24);
    assert_true(t[0].attempts >= 3);
    assert_int_equal(e->s->begin(e->c), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(q->ack(q, e->c, &t[i]), 0);
    /* A single task (a re-queue) in the same transaction. */
    assert_int_equal(q->enqueue(q, e->c, "again"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(q->depth(q, e->c), 1);
    assert_int_equal(q->claim(q, e->c, 60, 16, t, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(t[0].crash_id, "again");
    assert_true(t[0].last);
    q->close(q);
}

/* fl_queue_split(), which both in-store queues use: entries in order, the
 * last marked; a task with more ids than fit gives none (it comes back
 * whole); no ids at all gives one empty entry, whose ack removes it. */
static void test_queue_split(void **st)
{
    (void)st;
    fl_task t[4];
    size_t n = 1; /* appended after what is there */
    assert_true(fl_queue_split(7, "a\nb", 3, 4, t, &n));
    assert_int_equal(n, 3);
    assert_string_equal(t[1].crash_id, "a");
    assert_string_equal(t[2].crash_id, "b");
    assert_false(t[1].last);
    assert_true(t[2].last);
    assert_int_equal(t[2].id, 7);
    assert_int_equal(t[2].attempts, 3);
    assert_false(fl_queue_split(8, "c\nd", 1, 4, t, &n)); /* 3 + 2 > 4 */
    assert_int_equal(n, 3);
    assert_true(fl_queue_split(9, NULL, 1, 4, t, &n));
    assert_int_equal(n, 4);
    assert_string_equal(t[3].crash_id, "");
    assert_true(t[3].last);
}

typedef struct qthread {
    fl_store *s;
    fl_queue *q;
    int got[2000]; /* claims of each id */
    int errors;
} qthread;

static void *qthread_main(void *arg)
{
    qthread *t = arg;
    fl_store_conn *c = t->s->connect(t->s);
    fl_task tk[32];
    int idle = 0;
    while (c && idle < 3) {
        size_t n = 0;
        if (t->q->claim(t->q, c, 600, 32, tk, &n)) {
            t->errors++;
            continue;
        }
        if (n == 0) {
            idle++;
            if (!t->q->claim_waits)
                usleep(20000);
            continue;
        }
        idle = 0;
        if (t->s->begin(c)) {
            t->errors++;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            t->got[atoi(tk[i].crash_id + 1)]++;
            t->q->ack(t->q, c, &tk[i]);
        }
        if (t->s->commit(c)) {
            t->s->rollback(c);
            t->errors++;
        }
    }
    t->s->disconnect(c);
    return NULL;
}

/* Four connections claiming at once: every task to exactly one of them. */
static void test_queue_concurrent_claims(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    fl_queue *q = store_queue(e);
    for (int b = 0; b < 2000; b += 100)
        enqueue_ids(e, q, "c", b, 100, true);
    enum { N = 4 };
    pthread_t th[N];
    qthread *t = calloc(N, sizeof *t);
    for (int i = 0; i < N; i++) {
        t[i].s = e->s;
        t[i].q = q;
        assert_int_equal(pthread_create(&th[i], NULL, qthread_main, &t[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    int busy = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(t[i].errors, 0);
        int mine = 0;
        for (int k = 0; k < 2000; k++)
            mine += t[i].got[k];
        busy += mine > 0;
    }
    for (int k = 0; k < 2000; k++) {
        int total = 0;
        for (int i = 0; i < N; i++)
            total += t[i].got[k];
        if (total != 1)
            fail_msg("task c%d claimed %d times", k, total);
    }
    assert_true(busy >= 2);
    assert_int_equal(q->depth(q, e->c), 0);
    free(t);
    q->close(q);
}

/* PostgreSQL: a committed enqueue wakes a waiting claimer on another
 * connection; a rolled-back one does not. */
static void test_pg_queue_notify(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    if (!is_pg(e))
        skip();
    fl_queue *q = store_queue(e);
    assert_true(q->claim_waits);
    fl_store_conn *w = e->s->connect(e->s);
    assert_non_null(w);
    assert_int_equal(fl_store_pg_wait(w, "faultline_tasks", 10), 0); /* LISTENs */
    enqueue_ids(e, q, "rb", 0, 3, false);
    assert_int_equal(fl_store_pg_wait(w, "faultline_tasks", 300), 0);
    enqueue_ids(e, q, "n", 0, 3, true);
    assert_int_equal(fl_store_pg_wait(w, "faultline_tasks", 10000), 1);
    assert_int_equal(fl_store_pg_wait(w, "faultline_tasks", 10), 0); /* taken */
    /* Another transaction, two tasks: woken again (past the 20 ms within
     * which a process notifies once). */
    usleep(60 * 1000);
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(q->enqueue(q, e->c, "s1"), 0);
    assert_int_equal(q->enqueue(q, e->c, "s2"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(fl_store_pg_wait(w, "faultline_tasks", 10000), 1);
    assert_int_equal(fl_store_pg_wait(w, "faultline_tasks", 10), 0);
    /* Bad channels and a connection of another engine are refused. */
    assert_int_equal(fl_store_pg_wait(w, "x; DROP TABLE tasks", 10), -1);
    assert_null(fl_store_pg_exec(NULL, "SELECT 1", 0, NULL));
    size_t n = 0;
    fl_task t[16];
    if (q->claim(q, w, 60, 16, t, &n))
        fail_msg("claim: %s", e->s->error(w));
    assert_int_equal(n, 5); /* n0-n2 in one task, s1, s2 */
    /* A busy claimer (one that finds work) takes the notifications that
     * came meanwhile too: libpq would keep them all otherwise.  (The first
     * of these commits notifies: 60 ms since the last.) */
    usleep(60 * 1000);
    for (int i = 0; i < 5; i++)
        enqueue_ids(e, q, "busy", i * 2, 2, true);
    assert_int_equal(q->claim(q, w, 60, 16, t, &n), 0);
    assert_true(n > 0);
    assert_int_equal(fl_store_pg_wait(w, "faultline_tasks", 0), 0);
    e->s->disconnect(w);
    q->close(q);
}

/* PostgreSQL only: a database from before e-mail addresses or projects
 * gets the columns at the next start; and a start does not wait for a
 * reader that holds crashes or groups (pg_dump does, for as long as the
 * dump takes), which an ALTER TABLE on every start did. */
static void test_pg_schema_upgrade(void **st)
{
    fx *f = *st;
    if (!f->url)
        skip();
    PGconn *db = PQconnectdb(f->url);
    assert_int_equal(PQstatus(db), CONNECTION_OK);
    static const char has_email[] =
        "SELECT 1 FROM pg_attribute WHERE attrelid IN ('crashes'::regclass, 'groups'::regclass)"
        " AND attname IN ('email', 'project') AND NOT attisdropped";
    /* A database from before those columns -- and before schema_ddl, so
     * that the start does not take its tables for current. */
    PQclear(PQexec(db, "ALTER TABLE crashes DROP COLUMN email; ALTER TABLE crashes DROP COLUMN "
                       "project; ALTER TABLE groups DROP COLUMN project;"
                       "DELETE FROM settings WHERE name = 'schema_ddl'"));
    PGresult *r = PQexec(db, has_email);
    assert_int_equal(PQntuples(r), 0);
    PQclear(r);
    char err[256];
    fl_store *s2 = fl_store_pg_open(f->url, 0, err, sizeof err);
    if (!s2)
        fail_msg("upgrade: %s", err);
    s2->close(s2);
    r = PQexec(db, has_email);
    assert_int_equal(PQntuples(r), 3);
    PQclear(r);
    r = PQexec(db, "BEGIN; SELECT count(*) FROM crashes, groups");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
    setenv("PGOPTIONS", "-c lock_timeout=3000", 1);
    s2 = fl_store_pg_open(f->url, 0, err, sizeof err);
    unsetenv("PGOPTIONS");
    if (!s2)
        fail_msg("a start while a reader holds crashes: %s", err);
    s2->close(s2);
    PQclear(PQexec(db, "ROLLBACK"));
    PQfinish(db);
}

/* PostgreSQL only: servers opening a new database at once all succeed
 * (the schema is created under an advisory lock), and a database of a
 * newer schema is refused. */
typedef struct opener {
    const char *url;
    fl_store *s;
    char err[256];
} opener;

/* A merge drops a pending "new group" notice of the group merged away (it
 * is no new group) and keeps a pending regression, for the group it went
 * into. */
static void test_merge_notices(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    fl_notice t[8];
    size_t n = 9;
    int64_t now = fl_now();
    char ref[FL_CRASH_ID_MAX];
    e->s->notify = true;
    assert_true(ingest_at(e, "q1", "1.0", T0, ref));
    apply_c(e, &(crash){.id = "q1", .ref = ref, .group = "qa", .version = "1.0"}, false);
    assert_int_equal(e->s->notices_claim(e->c, now, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(e->s->notice_done(e->c, t[0].id), 0); /* qa announced */
    assert_int_equal(e->s->set_status(e->c, "qa", "resolved", "1.0"), 0);
    assert_true(ingest_at(e, "q2", "1.1", T0 + 1, ref));
    apply_c(e, &(crash){.id = "q2", .ref = ref, .group = "qa", .version = "1.1"}, false);
    assert_true(ingest_at(e, "q3", "1.0", T0 + 2, ref));
    apply_c(e, &(crash){.id = "q3", .ref = ref, .group = "qb", .version = "1.0"}, false);
    assert_true(ingest_at(e, "q4", "1.0", T0 + 3, ref));
    apply_c(e, &(crash){.id = "q4", .ref = ref, .group = "qc", .version = "1.0"}, false);
    /* Pending: qa regressed, qb and qc new.  qb goes into qa, and qa
     * (regression and all) into qc, which is new itself. */
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "qa", "qb"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(e->s->notices_claim(e->c, now, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        bool reg = !strcmp(t[i].kind, FL_NOTICE_REGRESSED);
        assert_string_equal(t[i].group_id, reg ? "qa" : "qc");
        assert_string_equal(t[i].crash_id, reg ? "q2" : "q4");
        assert_int_equal(e->s->notice_later(e->c, t[i].id, now), 0);
    }
    assert_int_equal(e->s->begin(e->c), 0);
    assert_int_equal(e->s->merge_group(e->c, "qc", "qa"), 0);
    assert_int_equal(e->s->commit(e->c), 0);
    assert_int_equal(e->s->notices_claim(e->c, now, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(t[i].group_id, "qc");
    assert_true(!strcmp(t[0].kind, FL_NOTICE_REGRESSED) != !strcmp(t[1].kind, FL_NOTICE_REGRESSED));
    e->s->notify = false;
}

/* Notices: one when a crash creates its group and one when it makes a
 * resolved group regress, only with notify on; claimed, leased, retried
 * and forgotten. */
static void test_notices(void **st)
{
    fx *f = *st;
    eng *e = &f->e;
    fl_notice t[8];
    size_t n = 9;
    int64_t now = fl_now();
    char ref[FL_CRASH_ID_MAX];
    assert_true(ingest_at(e, "n0", "1.0", T0, ref));
    apply_c(e, &(crash){.id = "n0", .ref = ref, .group = "gq", .version = "1.0"}, false);
    assert_int_equal(e->s->notices_claim(e->c, now, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 0); /* notify off */
    e->s->notify = true;
    assert_true(ingest_at(e, "n1", "1.0", T0, ref));
    apply_c(e, &(crash){.id = "n1", .ref = ref, .group = "gn", .version = "1.0"}, false);
    assert_true(ingest_at(e, "n2", "1.0", T0, ref));
    apply_c(e, &(crash){.id = "n2", .ref = ref, .group = "gn", .version = "1.0"}, false);
    assert_int_equal(e->s->notices_claim(e->c, now, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(t[0].kind, FL_NOTICE_NEW_GROUP);
    assert_string_equal(t[0].group_id, "gn");
    assert_string_equal(t[0].crash_id, "n1");
    assert_int_equal(t[0].attempts, 1);
    assert_true(t[0].created >= now - 5 && t[0].created <= now + 5);
    int64_t id = t[0].id;
    assert_int_equal(e->s->notices_claim(e->c, now, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 0); /* leased */
    assert_int_equal(e->s->notices_claim(e->c, now + 61, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 1); /* the lease ran out: attempt 2 */
    assert_int_equal(t[0].attempts, 2);
    assert_int_equal(e->s->notice_later(e->c, id, now + 100000), 0);
    assert_int_equal(e->s->notices_claim(e->c, now + 61, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 1); /* further ahead than any wait: a clock set back */
    assert_int_equal(e->s->notice_later(e->c, id, now + 30), 0);
    assert_int_equal(e->s->notices_claim(e->c, now, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(e->s->notice_done(e->c, id), 0);
    assert_int_equal(e->s->notices_claim(e->c, now + 100, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 0);

    /* Resolved in 1.0: a crash of 0.9 leaves it so, one of 1.1 regresses it. */
    assert_int_equal(e->s->set_status(e->c, "gn", "resolved", "1.0"), 0);
    assert_true(ingest_at(e, "n3", "0.9", T0, ref));
    apply_c(e, &(crash){.id = "n3", .ref = ref, .group = "gn", .version = "0.9"}, false);
    assert_true(ingest_at(e, "n4", "1.1", T0, ref));
    apply_c(e, &(crash){.id = "n4", .ref = ref, .group = "gn", .version = "1.1"}, false);
    assert_int_equal(e->s->notices_claim(e->c, now, 60, 7200, 8, t, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(t[0].kind, FL_NOTICE_REGRESSED);
    assert_string_equal(t[0].crash_id, "n4");

    /* A digest's claim (notify.c): a storm's notices taken at once, oldest
     * first, put back together after a failed send and taken again
     * together, then forgotten. */
    enum { STORM = 40 };
    fl_notice *many = calloc(2 * STORM, sizeof *many);
    assert_non_null(many);
    for (int i = 0; i < STORM; i++) {
        char cid[16], g[16];
        snprintf(cid, sizeof cid, "m%02d", i);
        snprintf(g, sizeof g, "gm%02d", i);
        assert_true(ingest_at(e, cid, "1.0", T0, ref));
        apply_c(e, &(crash){.id = cid, .ref = ref, .group = g, .version = "1.0"}, false);
    }
    assert_int_equal(e->s->notices_claim(e->c, now, 60, 7200, 2 * STORM, many, &n), 0);
    assert_int_equal(n, STORM);
    for (int i = 0; i < STORM; i++) {
        char cid[16];
        snprintf(cid, sizeof cid, "m%02d", i);
        assert_string_equal(many[i].crash_id, cid);
        assert_true(!i || many[i].id > many[i - 1].id);
        assert_int_equal(e->s->notice_later(e->c, many[i].id, now + 2), 0);
    }
    assert_int_equal(e->s->notices_claim(e->c, now + 1, 60, 7200, 2 * STORM, many, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(e->s->notices_claim(e->c, now + 2, 60, 7200, 2 * STORM, many, &n), 0);
    assert_int_equal(n, STORM);
    for (int i = 0; i < STORM; i++) {
        assert_int_equal(many[i].attempts, 2);
        assert_int_equal(e->s->notice_done(e->c, many[i].id), 0);
    }
    assert_int_equal(e->s->notices_claim(e->c, now + 100, 60, 7200, 2 * STORM, many, &n), 0);
    assert_int_equal(n, 1); /* n4's regression alone, its lease over */
    free(many);
    e->s->notify = false;
}

/* A database a newer server upgraded is refused, with what to do, and
 * left as it is; the same generation opens. */
static void test_newer_schema(void **st)
{
    fx *f = *st;
    char err[256] = "";
    fl_store *s2;
    if (f->url) {
        PGconn *db = PQconnectdb(f->url);
        assert_int_equal(PQstatus(db), CONNECTION_OK);
        PQclear(PQexec(db, "UPDATE settings SET value = '99' WHERE name = 'schema_ddl'"));
        s2 = fl_store_pg_open(f->url, 0, err, sizeof err);
        PGresult *r = PQexec(db, "SELECT value FROM settings WHERE name = 'schema_ddl'");
        assert_string_equal(PQgetvalue(r, 0, 0), "99");
        PQclear(r);
        PQfinish(db);
    } else {
        close_eng(&f->e);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        s2 = fl_store_sqlite_open(f->path, err, sizeof err);
        assert_int_equal(sqlite_count(f, "PRAGMA user_version"), 99);
    }
    assert_null(s2);
    assert_non_null(strstr(err, "upgraded by a newer faultline"));
    assert_non_null(strstr(err, "restore a backup"));
    if (!f->url) { /* the current generation is written at open, and opens */
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=0", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        assert_int_equal(open_sqlite(f, &f->e), 0);
        assert_true(sqlite_count(f, "PRAGMA user_version") >= 1);
    }
}

static void *open_main(void *arg)
{
    opener *o = arg;
    o->s = fl_store_pg_open(o->url, 0, o->err, sizeof o->err);
    return NULL;
}

static void test_pg_open_race(void **st)
{
    fx *f = *st;
    if (!f->url)
        skip();
    close_eng(&f->e);
    pg_reset(f->url);
    enum { N = 4 };
    pthread_t th[N];
    opener o[N] = {0};
    for (int i = 0; i < N; i++) {
        o[i].url = f->url;
        assert_int_equal(pthread_create(&th[i], NULL, open_main, &o[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        if (!o[i].s)
            fail_msg("open %d: %s", i, o[i].err);
        if (i > 0)
            o[i].s->close(o[i].s);
    }
    f->e.s = o[0].s;
    assert_non_null(f->e.c = f->e.s->connect(f->e.s));
    assert_true(ingest(&f->e, "o1", "1.0"));
    PGconn *db = PQconnectdb(f->url);
    PQclear(PQexec(db, "UPDATE fl_schema SET version=version+1"));
    PQfinish(db);
    char err[256] = "";
    assert_null(fl_store_pg_open(f->url, 0, err, sizeof err));
    assert_non_null(strstr(err, "schema is version 2"));
    assert_null(fl_store_pg_open("postgres://nobody@127.0.0.1:1/none", 0, err, sizeof err));
    assert_non_null(strstr(err, "cannot connect"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_insert_duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_raw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_regression, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reapply_move, setup, teardown),
        cmocka_unit_test_setup_teardown(test_arch_before_upgrade, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symbols, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requeue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processing_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_group_reapply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_group_chunks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_minidumps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_then_move, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_notices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unmerge_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unmerge_legacy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_sorted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_sorted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_install_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_projects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_project_crashes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_published, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_concurrent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_group_concurrent, setup, teardown),
        cmocka_unit_test(test_queue_split),
        cmocka_unit_test_setup_teardown(test_queue_in_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_concurrent_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_queue_notify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_plans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_reconnect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_group_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_delete_while_merged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_lost_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_deadline_abandoned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_symbol_pieces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_trends_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_read_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_open_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pg_schema_upgrade, setup, teardown),
    };
    const char *u = pg_url();
    printf("# store engine: %s\n", u ? "postgres" : "sqlite");
    return cmocka_run_group_tests_name(u ? "store_engines_pg" : "store_engines_sqlite", tests, NULL,
                                       NULL);
}
