/*
 * store_sqlite.c - the embedded store: one SQLite database in WAL mode.
 *
 * Durability: journal_mode=WAL with synchronous=FULL, so a COMMIT returns
 * only after the WAL is fsync'ed.  Ingest batches many reports per
 * transaction (see writer.c), which is what keeps fsync from setting the
 * pace.  Each thread has its own connection; writers wait for each other
 * through busy_timeout and take the write lock up front (BEGIN IMMEDIATE)
 * so that a read-then-write transaction never deadlocks.
 *
 * Exactly-once counting: crashes.state goes 0 (raw) -> 1 (processed) or
 * 2 (failed) in the same transaction that updates the group counters, and
 * apply() does nothing for a crash whose state is not 0.  A task delivered
 * twice (its worker died before the ack) is therefore counted once.
 */
#include "fl_store.h"

#include <inttypes.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "fl_srvutil.h"

#define MAX_RAW (16u << 20)       /* FL_CRASHLOG_MAX_BYTES */
#define MAX_PROCESSED (64u << 20) /* processed JSON */
#define WAL_RESTART_FRAMES 16384  /* 64 MiB of 4 KiB pages */

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS crashes("
    "  rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, app TEXT, version TEXT,"
    "  received INTEGER NOT NULL, raw BLOB NOT NULL, raw_len INTEGER NOT NULL,"
    "  state INTEGER NOT NULL DEFAULT 0, group_id TEXT, stack_hash TEXT, processed BLOB);"
    "CREATE INDEX IF NOT EXISTS crashes_group ON crashes(group_id, rid);"
    "CREATE TABLE IF NOT EXISTS tasks("
    "  id INTEGER PRIMARY KEY, crash_id TEXT NOT NULL, lease_until INTEGER NOT NULL DEFAULT 0,"
    "  attempts INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS tasks_lease ON tasks(lease_until, id);"
    "CREATE TABLE IF NOT EXISTS groups("
    "  id TEXT PRIMARY KEY, app TEXT, signature TEXT NOT NULL, frames TEXT,"
    "  count INTEGER NOT NULL DEFAULT 0, first_seen INTEGER, last_seen INTEGER,"
    "  affected INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'open',"
    "  resolved_in TEXT, latest_version TEXT, sample_crash TEXT);"
    "CREATE INDEX IF NOT EXISTS groups_count ON groups(count DESC);"
    "CREATE TABLE IF NOT EXISTS group_days(group_id TEXT, day TEXT, count INTEGER,"
    "  PRIMARY KEY(group_id, day)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS group_versions(group_id TEXT, version TEXT, count INTEGER,"
    "  PRIMARY KEY(group_id, version)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS group_os(group_id TEXT, os TEXT, count INTEGER,"
    "  PRIMARY KEY(group_id, os)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS group_installs(group_id TEXT, install_id TEXT,"
    "  PRIMARY KEY(group_id, install_id)) WITHOUT ROWID;";

enum {
    S_BEGIN, S_COMMIT, S_ROLLBACK, S_INSERT, S_LOAD, S_STATE, S_MARK, S_GNEW, S_GGET, S_GUPD,
    S_DAY, S_VER, S_OS, S_INST, S_AFF, S_COUNT
};

static const char *const SQL[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_INSERT] = "INSERT INTO crashes(id, app, version, received, raw, raw_len) "
                 "VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT(id) DO NOTHING",
    [S_LOAD] = "SELECT raw, received, state FROM crashes WHERE id=?1",
    [S_STATE] = "SELECT state FROM crashes WHERE id=?1",
    [S_MARK] = "UPDATE crashes SET state=?2, group_id=?3, stack_hash=?4, processed=?5 "
               "WHERE id=?1",
    [S_GNEW] = "INSERT INTO groups(id, app, signature, frames, first_seen, last_seen, sample_crash)"
               " VALUES(?1,?2,?3,?4,?5,?5,?6) ON CONFLICT(id) DO NOTHING",
    [S_GGET] = "SELECT status, resolved_in, latest_version FROM groups WHERE id=?1",
    [S_GUPD] = "UPDATE groups SET count=count+1, first_seen=min(first_seen,?2),"
               " last_seen=max(last_seen,?2), status=?3,"
               " latest_version=coalesce(?4, latest_version) WHERE id=?1",
    [S_DAY] = "INSERT INTO group_days VALUES(?1,?2,1) "
              "ON CONFLICT DO UPDATE SET count=count+1",
    [S_VER] = "INSERT INTO group_versions VALUES(?1,?2,1) "
              "ON CONFLICT DO UPDATE SET count=count+1",
    [S_OS] = "INSERT INTO group_os VALUES(?1,?2,1) ON CONFLICT DO UPDATE SET count=count+1",
    [S_INST] = "INSERT INTO group_installs VALUES(?1,?2) ON CONFLICT DO NOTHING",
    [S_AFF] = "UPDATE groups SET affected=affected+1 WHERE id=?1",
};

#define EXTRA_STMTS 8

typedef struct sconn {
    fl_store_conn pub;
    sqlite3 *db;
    sqlite3_stmt *st[S_COUNT];
    /* Statements of the embedded queue, keyed by their SQL's address. */
    const char *extra_sql[EXTRA_STMTS];
    sqlite3_stmt *extra[EXTRA_STMTS];
} sconn;

typedef struct sstore {
    fl_store pub;
    char *path;
    /* The checkpointer: copies the WAL back into the database in the
     * background, so that no committing thread (the ingest writer above
     * all) pays for it. */
    pthread_t ckpt;
    bool ckpt_running, stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} sstore;

static sqlite3_stmt *stmt(sconn *c, int which)
{
    if (!c->st[which] &&
        sqlite3_prepare_v3(c->db, SQL[which], -1, SQLITE_PREPARE_PERSISTENT, &c->st[which], NULL))
        return NULL;
    sqlite3_reset(c->st[which]);
    sqlite3_clear_bindings(c->st[which]);
    return c->st[which];
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

/* Run a statement that returns no rows. */
static int done(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Waiting for the write lock: sqlite3_busy_timeout() sleeps up to 100 ms
 * at a time, far longer than a group commit holds the lock; poll every
 * 200 us instead, for at most about 30 s. */
static int busy_wait(void *arg, int count)
{
    (void)arg;
    if (count >= 150000)
        return 0;
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
    return 1;
}

static int open_db(const char *path, sqlite3 **out)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_handler(db, busy_wait, NULL);
    if (sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;"
                     "PRAGMA cache_size=-2000; PRAGMA temp_store=MEMORY;"
                     "PRAGMA wal_autocheckpoint=0;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    *out = db;
    return 0;
}

static fl_store_conn *s_connect(fl_store *st)
{
    sstore *s = (sstore *)st;
    sconn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (open_db(s->path, &c->db)) {
        free(c);
        return NULL;
    }
    c->pub.store = st;
    c->pub.data = c;
    return &c->pub;
}

static void s_disconnect(fl_store_conn *pc)
{
    if (!pc)
        return;
    sconn *c = (sconn *)pc;
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(c->st[i]);
    for (int i = 0; i < EXTRA_STMTS; i++)
        sqlite3_finalize(c->extra[i]);
    sqlite3_close(c->db);
    free(c);
}

struct sqlite3 *fl_store_sqlite_db(fl_store_conn *pc)
{
    if (!pc || strcmp(pc->store->engine, "sqlite"))
        return NULL;
    return ((sconn *)pc)->db;
}

sqlite3_stmt *fl_store_sqlite_stmt(fl_store_conn *pc, const char *sql)
{
    if (!fl_store_sqlite_db(pc))
        return NULL;
    sconn *c = (sconn *)pc;
    for (int i = 0; i < EXTRA_STMTS; i++) {
        if (c->extra_sql[i] == sql) {
            sqlite3_reset(c->extra[i]);
            sqlite3_clear_bindings(c->extra[i]);
            return c->extra[i];
        }
        if (!c->extra_sql[i]) {
            if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->extra[i], NULL))
                return NULL;
            c->extra_sql[i] = sql;
            return c->extra[i];
        }
    }
    return NULL;
}

static int s_begin(fl_store_conn *pc)
{
    sqlite3_stmt *s = stmt((sconn *)pc, S_BEGIN);
    return s ? done(s) : -1;
}

static int s_commit(fl_store_conn *pc)
{
    sqlite3_stmt *s = stmt((sconn *)pc, S_COMMIT);
    return s ? done(s) : -1;
}

static void s_rollback(fl_store_conn *pc)
{
    sconn *c = (sconn *)pc;
    if (sqlite3_get_autocommit(c->db))
        return;
    sqlite3_stmt *s = stmt(c, S_ROLLBACK);
    if (s)
        done(s);
}

static int s_insert(fl_store_conn *pc, const fl_ingest_item *it, bool *inserted)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s = stmt(c, S_INSERT);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, it->crash_id, -1, SQLITE_STATIC);
    bind_text(s, 2, it->app);
    bind_text(s, 3, it->version);
    sqlite3_bind_int64(s, 4, it->received);
    sqlite3_bind_blob(s, 5, it->zraw, (int)it->zraw_len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, (sqlite3_int64)it->raw_len);
    if (done(s))
        return -1;
    *inserted = sqlite3_changes(c->db) == 1;
    return 0;
}

static int s_load_raw(fl_store_conn *pc, const char *id, char **raw, size_t *len,
                      int64_t *received)
{
    sconn *c = (sconn *)pc;
    *raw = NULL;
    sqlite3_stmt *s = stmt(c, S_LOAD);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(s);
        return 1;
    }
    if (rc != SQLITE_ROW) {
        sqlite3_reset(s);
        return -1;
    }
    if (sqlite3_column_int(s, 2) != 0) {
        sqlite3_reset(s);
        return 2;
    }
    *received = sqlite3_column_int64(s, 1);
    int r = fl_unzstd(sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0), MAX_RAW, raw,
                      len);
    sqlite3_reset(s);
    return r;
}

static int bump(sconn *c, int which, const char *gid, const char *v)
{
    if (!v)
        return 0;
    sqlite3_stmt *s = stmt(c, which);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, v, -1, SQLITE_STATIC);
    return done(s);
}

static int s_apply(fl_store_conn *pc, const fl_processed *p)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s = stmt(c, S_STATE);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, p->crash_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    int state = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return -1;
    if (state != 0)
        return 0; /* unknown or already processed: count nothing */

    if (!(s = stmt(c, S_MARK)))
        return -1;
    sqlite3_bind_text(s, 1, p->crash_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, p->failed ? 2 : 1);
    bind_text(s, 3, p->failed ? NULL : p->group_id);
    bind_text(s, 4, p->failed ? NULL : p->stack_hash);
    if (p->zprocessed)
        sqlite3_bind_blob(s, 5, p->zprocessed, (int)p->zprocessed_len, SQLITE_STATIC);
    if (done(s))
        return -1;
    if (p->failed)
        return 0;

    if (!(s = stmt(c, S_GNEW)))
        return -1;
    sqlite3_bind_text(s, 1, p->group_id, -1, SQLITE_STATIC);
    bind_text(s, 2, p->app);
    sqlite3_bind_text(s, 3, p->signature, -1, SQLITE_STATIC);
    bind_text(s, 4, p->frames_json);
    sqlite3_bind_int64(s, 5, p->received);
    sqlite3_bind_text(s, 6, p->crash_id, -1, SQLITE_STATIC);
    if (done(s))
        return -1;

    if (!(s = stmt(c, S_GGET)))
        return -1;
    sqlite3_bind_text(s, 1, p->group_id, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_ROW) {
        sqlite3_reset(s);
        return -1;
    }
    /* Compared in place (the column texts stay valid until the reset), so
     * that versions of any length compare exactly. */
    const char *st_ = (const char *)sqlite3_column_text(s, 0);
    bool resolved = st_ && !strcmp(st_, "resolved");
    bool regressed = false, newer = false;
    if (resolved) {
        const char *ri = (const char *)sqlite3_column_text(s, 1);
        /* A crash from a version newer than the fix reopens the group; one
         * from an older version (users who did not update) does not. */
        regressed = !ri || fl_vercmp(p->version, ri) > 0;
    }
    const char *lv = (const char *)sqlite3_column_text(s, 2);
    newer = p->version && (!lv || fl_vercmp(p->version, lv) > 0);
    char status[16];
    snprintf(status, sizeof status, "%s", regressed ? "regressed" : st_ ? st_ : "open");
    sqlite3_reset(s);

    if (!(s = stmt(c, S_GUPD)))
        return -1;
    sqlite3_bind_text(s, 1, p->group_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, p->received);
    sqlite3_bind_text(s, 3, status, -1, SQLITE_TRANSIENT);
    bind_text(s, 4, newer ? p->version : NULL);
    if (done(s))
        return -1;

    char day[16];
    fl_iso_day(p->received, day);
    if (bump(c, S_DAY, p->group_id, day) || bump(c, S_VER, p->group_id, p->version) ||
        bump(c, S_OS, p->group_id, p->os))
        return -1;
    if (p->install_id) {
        if (bump(c, S_INST, p->group_id, p->install_id))
            return -1;
        if (sqlite3_changes(c->db) == 1) {
            if (!(s = stmt(c, S_AFF)))
                return -1;
            sqlite3_bind_text(s, 1, p->group_id, -1, SQLITE_STATIC);
            if (done(s))
                return -1;
        }
    }
    return 0;
}

/* ---- reads */

static json_t *time_json(sqlite3_stmt *s, int col)
{
    if (sqlite3_column_type(s, col) == SQLITE_NULL)
        return json_null();
    char b[32];
    fl_iso_time(sqlite3_column_int64(s, col), b);
    return json_string(b);
}

static json_t *text_json(sqlite3_stmt *s, int col)
{
    const unsigned char *t = sqlite3_column_text(s, col);
    return t ? json_string((const char *)t) : json_null();
}

#define GROUP_COLS                                                                                 \
    "id, app, signature, count, first_seen, last_seen, status, affected, resolved_in, "           \
    "latest_version"

static json_t *group_row(sqlite3_stmt *s)
{
    json_t *g = json_object();
    json_object_set_new(g, "id", text_json(s, 0));
    json_object_set_new(g, "app", text_json(s, 1));
    json_object_set_new(g, "signature", text_json(s, 2));
    json_object_set_new(g, "count", json_integer(sqlite3_column_int64(s, 3)));
    json_object_set_new(g, "first_seen", time_json(s, 4));
    json_object_set_new(g, "last_seen", time_json(s, 5));
    json_object_set_new(g, "status", text_json(s, 6));
    json_object_set_new(g, "affected", json_integer(sqlite3_column_int64(s, 7)));
    json_object_set_new(g, "resolved_in", text_json(s, 8));
    json_object_set_new(g, "latest_version", text_json(s, 9));
    return g;
}

static json_t *s_list_groups(fl_store_conn *pc, const fl_group_filter *f)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s = NULL;
    const char *sql =
        "SELECT " GROUP_COLS " FROM groups g WHERE (?1 IS NULL OR app=?1) AND (?3 IS NULL OR "
        "status=?3) AND (?2 IS NULL OR EXISTS(SELECT 1 FROM group_versions v WHERE "
        "v.group_id=g.id AND v.version=?2)) ORDER BY count DESC, id LIMIT ?4 OFFSET ?5";
    if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL))
        return NULL;
    bind_text(s, 1, f->app);
    bind_text(s, 2, f->version);
    bind_text(s, 3, f->status);
    sqlite3_bind_int(s, 4, (int)f->limit);
    sqlite3_bind_int(s, 5, (int)f->offset);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        json_array_append_new(arr, group_row(s));
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return NULL;
    }
    return json_pack("{s:o}", "groups", arr);
}

/* Rows of (key, count) into an array of {name: key, "count": n}. */
static json_t *counts(sqlite3 *db, const char *sql, const char *id, const char *name)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL))
        return NULL;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    json_t *a = json_array();
    while (sqlite3_step(s) == SQLITE_ROW)
        json_array_append_new(a, json_pack("{s:o,s:I}", name, text_json(s, 0), "count",
                                           (json_int_t)sqlite3_column_int64(s, 1)));
    sqlite3_finalize(s);
    return a;
}

static json_t *s_get_group(fl_store_conn *pc, const char *id, bool *notfound)
{
    sconn *c = (sconn *)pc;
    *notfound = false;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db, "SELECT " GROUP_COLS ", frames, sample_crash FROM groups WHERE id=?1",
                           -1, &s, NULL))
        return NULL;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(s);
        *notfound = rc == SQLITE_DONE;
        return NULL;
    }
    json_t *g = group_row(s);
    const char *fr = (const char *)sqlite3_column_text(s, 10);
    json_t *frames = fr ? json_loads(fr, 0, NULL) : NULL;
    json_object_set_new(g, "frames", frames ? frames : json_array());
    json_object_set_new(g, "representative_crash", text_json(s, 11));
    sqlite3_finalize(s);

    json_t *a;
    if ((a = counts(c->db, "SELECT day, count FROM group_days WHERE group_id=?1 ORDER BY day", id,
                    "day")))
        json_object_set_new(g, "days", a);
    if ((a = counts(c->db,
                    "SELECT version, count FROM group_versions WHERE group_id=?1 ORDER BY count DESC",
                    id, "version")))
        json_object_set_new(g, "versions", a);
    if ((a = counts(c->db, "SELECT os, count FROM group_os WHERE group_id=?1 ORDER BY count DESC",
                    id, "os")))
        json_object_set_new(g, "os", a);
    json_t *samples = json_array();
    if (!sqlite3_prepare_v2(c->db,
                            "SELECT id FROM crashes WHERE group_id=?1 ORDER BY rid DESC LIMIT 10",
                            -1, &s, NULL)) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        while (sqlite3_step(s) == SQLITE_ROW)
            json_array_append_new(samples, text_json(s, 0));
        sqlite3_finalize(s);
    }
    json_object_set_new(g, "sample_crashes", samples);
    return g;
}

static json_t *s_get_crash(fl_store_conn *pc, const char *id, bool *notfound)
{
    sconn *c = (sconn *)pc;
    *notfound = false;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db,
                           "SELECT raw, state, group_id, stack_hash, processed, received, app, "
                           "version FROM crashes WHERE id=?1",
                           -1, &s, NULL))
        return NULL;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(s);
        *notfound = rc == SQLITE_DONE;
        return NULL;
    }
    json_t *out = NULL;
    char *raw = NULL, *proc = NULL;
    size_t rl, pl;
    if (fl_unzstd(sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0), MAX_RAW, &raw,
                  &rl))
        goto out;
    if (sqlite3_column_type(s, 4) == SQLITE_BLOB) {
        if (fl_unzstd(sqlite3_column_blob(s, 4), (size_t)sqlite3_column_bytes(s, 4),
                      MAX_PROCESSED, &proc, &pl))
            goto out;
        out = json_loadb(proc, pl, 0, NULL);
    }
    if (!out)
        out = json_object();
    int state = sqlite3_column_int(s, 1);
    json_object_set_new(out, "id", json_string(id));
    json_object_set_new(out, "state", json_string(state == 0   ? "pending"
                                                  : state == 1 ? "processed"
                                                               : "failed"));
    json_object_set_new(out, "group_id", text_json(s, 2));
    json_object_set_new(out, "stack_hash", text_json(s, 3));
    json_object_set_new(out, "received", time_json(s, 5));
    json_object_set_new(out, "app", text_json(s, 6));
    json_object_set_new(out, "version", text_json(s, 7));
    json_object_set_new(out, "raw", json_stringn_nocheck(raw, rl));
out:
    free(raw);
    free(proc);
    sqlite3_finalize(s);
    return out;
}

static int s_set_status(fl_store_conn *pc, const char *id, const char *status,
                        const char *resolved_in)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s = NULL;
    const char *sql =
        !strcmp(status, "resolved")
            ? "UPDATE groups SET status='resolved', resolved_in=coalesce(?2, latest_version) "
              "WHERE id=?1"
            : "UPDATE groups SET status=?3, resolved_in=NULL WHERE id=?1";
    if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL))
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    bind_text(s, 2, resolved_in);
    if (sqlite3_bind_parameter_count(s) >= 3)
        sqlite3_bind_text(s, 3, status, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return -1;
    return sqlite3_changes(c->db) == 1 ? 0 : 1;
}

static int s_stats(fl_store_conn *pc, fl_store_stats *out)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s = NULL;
    memset(out, 0, sizeof *out);
    if (sqlite3_prepare_v2(c->db,
                           "SELECT (SELECT max(rid) FROM crashes), (SELECT count(*) FROM groups)",
                           -1, &s, NULL))
        return -1;
    if (sqlite3_step(s) == SQLITE_ROW) {
        out->crashes = sqlite3_column_int64(s, 0);
        out->groups = sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    return 0;
}

static void *ckpt_main(void *arg)
{
    sstore *s = arg;
    sqlite3 *db = NULL;
    if (open_db(s->path, &db))
        return NULL;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        pthread_mutex_unlock(&s->mu);
        /* PASSIVE never blocks readers or writers.  But the WAL only
         * starts over when a writer finds it entirely copied back, which a
         * steady stream of commits never allows: past WAL_RESTART_FRAMES,
         * a RESTART checkpoint holds writers off for the (short) rest of
         * the copy so that the file is reused instead of growing. */
        int logsz = 0, done_ = 0;
        sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &logsz, &done_);
        if (logsz > WAL_RESTART_FRAMES)
            sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_RESTART, NULL, NULL);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    /* A last full one so that a clean shutdown leaves a small WAL. */
    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_close(db);
    return NULL;
}

static void s_close(fl_store *st)
{
    sstore *s = (sstore *)st;
    if (!s)
        return;
    if (s->ckpt_running) {
        pthread_mutex_lock(&s->mu);
        s->stopping = true;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->ckpt, NULL);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->path);
    free(s);
}

fl_store *fl_store_sqlite_open(const char *path, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    if (open_db(path, &db)) {
        snprintf(err, errlen, "cannot open SQLite database %s", path);
        return NULL;
    }
    char *msg = NULL;
    if (sqlite3_exec(db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "cannot create the schema in %s: %s", path, msg ? msg : "?");
        sqlite3_free(msg);
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_close(db);
    sstore *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->ckpt, NULL, ckpt_main, s) == 0)
        s->ckpt_running = true;
    fl_store *p = &s->pub;
    p->engine = "sqlite";
    p->connect = s_connect;
    p->disconnect = s_disconnect;
    p->begin = s_begin;
    p->commit = s_commit;
    p->rollback = s_rollback;
    p->insert_crash = s_insert;
    p->load_raw = s_load_raw;
    p->apply = s_apply;
    p->list_groups = s_list_groups;
    p->get_group = s_get_group;
    p->get_crash = s_get_crash;
    p->set_status = s_set_status;
    p->stats = s_stats;
    p->close = s_close;
    p->data = s;
    return p;
}
