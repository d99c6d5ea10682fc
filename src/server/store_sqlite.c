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
 * Ingest appends to the inbox table (no index on the random crash ids
 * there: see s_insert_crashes); a task names its inbox row, "#rid".
 *
 * Exactly-once counting: apply() moves the row from the inbox into crashes,
 * whose unique index on the id lets one row per crash id in -- a resend
 * that reached the inbox before the first copy was processed is dropped
 * there -- and crashes.state goes 0 (raw) -> 1 (processed) or 2 (failed) in
 * the same transaction that updates the group counters; apply() does
 * nothing for a crash whose state is not 0.  A task delivered twice (its
 * worker died before the ack) is therefore counted once.
 *
 * Raw logs: the reports of one ingest batch are zstd-compressed together,
 * a chunk (raw_chunks) of at most CHUNK_MAX bytes of logs, and each crash
 * row points at its slice (chunk, chunk_off, raw_len).  Reports of one
 * batch share most of their text (module paths, build ids, the format's
 * keys), so this costs a fraction of the CPU of compressing each report on
 * its own and stores less; reading one crash decompresses its chunk, and
 * each connection keeps the last chunk, since the workers read crashes in
 * the order they arrived.  A chunk is one zstd frame or several
 * concatenated: an HTTP thread may compress a large pass of logs itself
 * (fl_ingest_item.z), and the store keeps such frames and compresses the
 * rest of the chunk as one.  Rows written before chunks hold their own
 * zstd frame in crashes.raw (chunk IS NULL).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "fl_store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <sqlite3.h>
#include <zstd.h>

#include "fl_idfilter.h"
#include "fl_srvutil.h"

#define MAX_RAW (16u << 20)       /* FL_CRASHLOG_MAX_BYTES */
#define CHUNK_MAX FL_RAW_FRAME_MAX /* bytes of raw logs per chunk (a larger log: its own) */
#define CHUNK_KEEP (1u << 20)     /* a decompressed chunk up to this size stays cached */
#define MAX_PROCESSED (64u << 20) /* processed JSON */
#define WAL_RESTART_FRAMES 16384  /* 64 MiB of 4 KiB pages */
/* journal_size_limit: what a WAL past WAL_RESTART_FRAMES is cut back to
 * when it starts over.  The frames' headers, and the commits between the
 * checkpointer's passes, take it a little past 64 MiB every time: cut
 * there, it would grow the file again after each start (appending costs
 * fdatasync twice what overwriting does: "Eleventh round"). */
#define WAL_LIMIT_BYTES "75497472" /* 72 MiB */
/* The checkpointer runs a pass once commits have added this many frames
 * (512 KiB) to the WAL since its last, besides every 200 ms: see
 * ckpt_main. */
#define CKPT_STEP_FRAMES 128
/* How long a RESTART checkpoint waits for a reader (or the writer) before
 * it gives way, and how long until it tries again: see ckpt_main. */
#define CKPT_BUSY_POLLS 50 /* of 200 us: ~10-15 ms */
#define CKPT_RESTART_RETRY_NS 1000000000ull
/* The schema's generation, in the database's user_version: raised with
 * every change to SCHEMA, INDEXES or the columns added at open.  A server
 * refuses a database of a later generation -- an older binary started on
 * a database a newer one upgraded -- rather than write to tables it does
 * not know the rules of (0: before the generation was kept; 1: retention's
 * indexes; 2: notices; 3: merged groups; 4: deleted groups; 5: merges that
 * leave crashes and counters where they are, crashes_moved; 6: the
 * architectures of a group, group_arch, counted from then on; 7: the
 * minidumps crashes were made from, minidumps). */
#define SCHEMA_GEN 7

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS crashes("
    "  rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, app TEXT, version TEXT,"
    "  received INTEGER NOT NULL, raw BLOB NOT NULL, raw_len INTEGER NOT NULL,"
    "  state INTEGER NOT NULL DEFAULT 0, group_id TEXT, stack_hash TEXT, processed BLOB,"
    "  email TEXT, project TEXT, sig_group TEXT, arch_counted INTEGER NOT NULL DEFAULT 0);"
    /* Partial: a crash gets its group when processed, and ingest then
     * has one index less to write. */
    "DROP INDEX IF EXISTS crashes_group;"
    "CREATE INDEX IF NOT EXISTS crashes_grouped ON crashes(group_id, rid) "
    "WHERE group_id IS NOT NULL;"
    "CREATE TABLE IF NOT EXISTS raw_chunks(id INTEGER PRIMARY KEY, data BLOB NOT NULL);"
    /* A minidump a crash was made from, zstd-compressed, by crash id (the
     * dump's hash: a resend is the same row). */
    "CREATE TABLE IF NOT EXISTS minidumps(crash_id TEXT PRIMARY KEY, size INTEGER NOT NULL,"
    "  data BLOB NOT NULL);"
    /* Ingest's side of crashes: rows appended in arrival order and nothing
     * else -- no index on the crash id, whose random values would cost one
     * page write per report (see s_insert_crashes).  Processing moves a
     * row into crashes, where the unique index on the id makes it count
     * once.  A task names its row by rid ("#rid").  A rid can come back
     * after its row is gone (no AUTOINCREMENT: that costs a write per
     * report); a late task for it then processes the newer row, which its
     * own task then finds gone -- every row is still processed once, and
     * counting is by crash id anyway. */
    "CREATE TABLE IF NOT EXISTS inbox(rid INTEGER PRIMARY KEY, id TEXT NOT NULL,"
    "  app TEXT, version TEXT, received INTEGER NOT NULL, raw_len INTEGER NOT NULL,"
    "  chunk INTEGER NOT NULL, chunk_off INTEGER NOT NULL, email TEXT, project TEXT);"
    "CREATE TABLE IF NOT EXISTS tasks("
    "  id INTEGER PRIMARY KEY, crash_id TEXT NOT NULL, lease_until INTEGER NOT NULL DEFAULT 0,"
    "  attempts INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS tasks_lease ON tasks(lease_until, id);"
    /* The boot whose CLOCK_MONOTONIC tasks.lease_until counts (queue_embedded.c). */
    "CREATE TABLE IF NOT EXISTS queue_clock(id INTEGER PRIMARY KEY CHECK(id = 1), boot TEXT NOT "
    "NULL);"
    "CREATE TABLE IF NOT EXISTS groups("
    "  id TEXT PRIMARY KEY, app TEXT, signature TEXT NOT NULL, frames TEXT,"
    "  count INTEGER NOT NULL DEFAULT 0, first_seen INTEGER, last_seen INTEGER,"
    "  affected INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'open',"
    "  resolved_in TEXT, latest_version TEXT, sample_crash TEXT, project TEXT, merged_into TEXT);"
    "CREATE INDEX IF NOT EXISTS groups_count ON groups(count DESC);"
    "CREATE TABLE IF NOT EXISTS group_days(group_id TEXT, day TEXT, count INTEGER,"
    "  PRIMARY KEY(group_id, day)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS group_versions(group_id TEXT, version TEXT, count INTEGER,"
    "  PRIMARY KEY(group_id, version)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS group_os(group_id TEXT, os TEXT, count INTEGER,"
    "  PRIMARY KEY(group_id, os)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS group_arch(group_id TEXT, arch TEXT, count INTEGER,"
    "  PRIMARY KEY(group_id, arch)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS group_installs(group_id TEXT, install_id TEXT,"
    "  PRIMARY KEY(group_id, install_id)) WITHOUT ROWID;"
    /* Which processed crashes lacked symbols for which build id: the
     * backfill's index. */
    "CREATE TABLE IF NOT EXISTS crash_missing(build_id TEXT, crash_id TEXT,"
    "  PRIMARY KEY(build_id, crash_id)) WITHOUT ROWID;"
    /* Processing a crash clears its rows by crash id: without this index
     * that DELETE scans the table, and processing turns quadratic in the
     * number of crashes still lacking symbols. */
    "CREATE INDEX IF NOT EXISTS crash_missing_crash ON crash_missing(crash_id);"
    "CREATE TABLE IF NOT EXISTS symbols("
    "  rid INTEGER PRIMARY KEY, build_id TEXT, name TEXT, size INTEGER, status TEXT NOT NULL,"
    "  error TEXT, kind TEXT, path TEXT, uploaded INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS symbols_build_id ON symbols(build_id, rid);"
    /* Reports whose processing started and has not ended, when it had to
     * be watched (processing_started in fl_store.h): one left behind by a
     * server that died is how a report that kills processing is found. */
    "CREATE TABLE IF NOT EXISTS processing(ref TEXT PRIMARY KEY, starts INTEGER NOT NULL) "
    "WITHOUT ROWID;"
    /* Per application and day, across groups: processed crashes (kind
     * 'c'), by version ('v'), by OS ('o') and by architecture ('a', from
     * generation 6 on), and the installations that
     * crashed -- the portal's trends.  '' stands for an unknown app,
     * version or OS. */
    "CREATE TABLE IF NOT EXISTS app_days(app TEXT, day TEXT, kind TEXT, value TEXT,"
    "  count INTEGER, PRIMARY KEY(app, day, kind, value)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS app_installs(app TEXT, day TEXT, install_id TEXT,"
    "  PRIMARY KEY(app, day, install_id)) WITHOUT ROWID;"
    /* Projects other than the default and their ingest keys (fl_store.h);
     * a NULL project in crashes, inbox and groups is the default one. */
    "CREATE TABLE IF NOT EXISTS projects(id TEXT PRIMARY KEY, created INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS project_keys(key TEXT PRIMARY KEY, project TEXT NOT NULL,"
    "  created INTEGER NOT NULL);"
    /* Events waiting for `serve --notify-url` (fl_notice). */
    "CREATE TABLE IF NOT EXISTS notices(id INTEGER PRIMARY KEY, kind TEXT NOT NULL,"
    "  group_id TEXT NOT NULL, crash_id TEXT, created INTEGER NOT NULL,"
    "  attempts INTEGER NOT NULL DEFAULT 0, next_try INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS notices_due ON notices(next_try);"
    /* Deleted groups (delete_group in fl_store.h): a tombstone per id, and
     * per signature whose group was deleted the id its next crash takes
     * (generation gen of base, the id grouping gives). */
    "CREATE TABLE IF NOT EXISTS groups_deleted(id TEXT PRIMARY KEY, deleted INTEGER NOT NULL,"
    "  crashes INTEGER NOT NULL DEFAULT 0, done INTEGER NOT NULL DEFAULT 0, of_group TEXT)"
    "  WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS group_gen(base TEXT PRIMARY KEY, gen INTEGER NOT NULL,"
    "  cur TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS group_gen_cur ON group_gen(cur);";

/* Made after the columns they index exist (a database from before them
 * gets the columns first: see fl_store_sqlite_open).  Retention finds old
 * crashes by crashes_expiry, and a chunk of raw logs is dropped once
 * crashes_chunk finds no crash in it.  The first start on a database from
 * before them builds both (a read of the crashes table). */
static const char INDEXES[] =
    "CREATE INDEX IF NOT EXISTS crashes_expiry ON crashes(received) WHERE state IN (1,2);"
    "CREATE INDEX IF NOT EXISTS crashes_chunk ON crashes(chunk) WHERE chunk IS NOT NULL;"
    /* The groups merged into a group (merge_group): few, so partial. */
    "CREATE INDEX IF NOT EXISTS groups_merged ON groups(merged_into) WHERE merged_into IS NOT "
    "NULL;"
    /* The groups an installation crashed in (?install=): one row per
     * group and installation, written once, so cheap to index. */
    "CREATE INDEX IF NOT EXISTS group_installs_install ON group_installs(install_id);"
    /* Crashes a merge of generation 4 or before moved into another group
     * (sig_group: their own), which unmerge_group() has to move back;
     * merges no longer move crashes, so this index stays as small as what
     * those left. */
    "CREATE INDEX IF NOT EXISTS crashes_moved ON crashes(sig_group) WHERE sig_group IS NOT "
    "NULL;"
    /* The groups deleted with a group they were merged into, whose
     * crashes its delete erases (delete_group_step). */
    "CREATE INDEX IF NOT EXISTS groups_deleted_of ON groups_deleted(of_group) WHERE of_group IS "
    "NOT NULL;";

enum {
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_INSERT,
    S_LOAD,
    S_STATE,
    S_MARK,
    S_GNEW,
    S_GGET,
    S_GUPD,
    S_DAY,
    S_VER,
    S_OS,
    S_ARCH,
    S_INST,
    S_AFF,
    S_MISS,
    S_MISSDEL,
    S_RSTATE,
    S_REMARK,
    S_GDEC,
    S_DAYDEC,
    S_VERDEC,
    S_OSDEC,
    S_ARCHDEC,
    S_GFRAMES,
    S_CHUNKPUT,
    S_CHUNKGET,
    S_KNOWN,
    S_INBOX,
    S_ILOAD,
    S_IFIND,
    S_MOVE,
    S_IDEL,
    S_TDAY,
    S_TINST,
    S_EXPSEL,
    S_EXPDEL,
    S_SAMPLE,
    S_CHUNKDROP,
    S_GRES,
    S_GCUR,
    S_COUNT
};

static const char *const SQL[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_INSERT] = "INSERT INTO crashes(id, app, version, received, raw, raw_len, chunk, chunk_off) "
                 "VALUES(?1,?2,?3,?4,X'',?5,?6,?7) ON CONFLICT(id) DO NOTHING",
    [S_LOAD] = "SELECT raw, received, state, resym, chunk, chunk_off, raw_len, project FROM "
               "crashes WHERE id=?1",
    [S_STATE] = "SELECT state FROM crashes WHERE id=?1",
    [S_MARK] = "UPDATE crashes SET state=?2, group_id=?3, stack_hash=?4, processed=?5, "
               "install_id=?6, sig_group=NULL, arch_counted=?7 WHERE id=?1",
    [S_GNEW] = "INSERT INTO groups(id, app, signature, frames, first_seen, last_seen, sample_crash,"
               " project) VALUES(?1,?2,?3,?4,?5,?5,?6,?7) ON CONFLICT(id) DO NOTHING",
    [S_GGET] = "SELECT status, resolved_in, latest_version FROM groups WHERE id=?1",
    [S_GUPD] = "UPDATE groups SET count=count+1, first_seen=min(first_seen,?2),"
               " last_seen=max(last_seen,?2), status=coalesce(?3, status),"
               " latest_version=coalesce(?4, latest_version) WHERE id=?1",
    [S_DAY] = "INSERT INTO group_days VALUES(?1,?2,1) "
              "ON CONFLICT DO UPDATE SET count=count+1",
    [S_VER] = "INSERT INTO group_versions VALUES(?1,?2,1) "
              "ON CONFLICT DO UPDATE SET count=count+1",
    [S_OS] = "INSERT INTO group_os VALUES(?1,?2,1) ON CONFLICT DO UPDATE SET count=count+1",
    [S_ARCH] = "INSERT INTO group_arch VALUES(?1,?2,1) ON CONFLICT DO UPDATE SET count=count+1",
    [S_INST] = "INSERT INTO group_installs VALUES(?1,?2) ON CONFLICT DO NOTHING",
    [S_AFF] = "UPDATE groups SET affected=affected+1 WHERE id=?1",
    [S_MISS] = "INSERT INTO crash_missing VALUES(?1,?2) ON CONFLICT DO NOTHING",
    [S_MISSDEL] = "DELETE FROM crash_missing WHERE crash_id=?1",
    [S_RSTATE] = "SELECT state, resym, group_id, arch_counted FROM crashes WHERE id=?1",
    [S_REMARK] = "UPDATE crashes SET resym=0, group_id=?2, stack_hash=?3, processed=?4, "
                 "sig_group=NULL, arch_counted=?5 WHERE id=?1",
    [S_GDEC] = "UPDATE groups SET count=count-1, sample_crash=CASE WHEN sample_crash=?2 THEN "
               "(SELECT id FROM crashes WHERE group_id=?1 ORDER BY rid LIMIT 1) ELSE sample_crash "
               "END WHERE id=?1 RETURNING count",
    [S_DAYDEC] = "UPDATE group_days SET count=count-1 WHERE group_id=?1 AND day=?2",
    [S_VERDEC] = "UPDATE group_versions SET count=count-1 WHERE group_id=?1 AND version=?2",
    [S_OSDEC] = "UPDATE group_os SET count=count-1 WHERE group_id=?1 AND os=?2",
    [S_ARCHDEC] = "UPDATE group_arch SET count=count-1 WHERE group_id=?1 AND arch=?2",
    [S_GFRAMES] = "UPDATE groups SET frames=?2 WHERE id=?1 AND sample_crash=?3",
    [S_CHUNKPUT] = "INSERT INTO raw_chunks(data) VALUES(?1)",
    [S_CHUNKGET] = "SELECT data FROM raw_chunks WHERE id=?1",
    [S_KNOWN] = "SELECT 1 FROM crashes WHERE id=?1",
    [S_INBOX] = "INSERT INTO inbox(id, app, version, received, raw_len, chunk, chunk_off, email,"
                " project) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    [S_ILOAD] = "SELECT id, received, chunk, chunk_off, raw_len, project FROM inbox WHERE rid=?1",
    /* A pending crash named by its id, not its row (the API, tests): a walk
     * over the inbox, as long as the backlog -- never on the ingest or the
     * processing path, whose tasks name rows.  Not in the index check. */
    [S_IFIND] = NULL,
    [S_MOVE] = "INSERT INTO crashes(id, app, version, received, raw, raw_len, chunk, chunk_off, "
               "email, project) SELECT id, app, version, received, X'', raw_len, chunk, "
               "chunk_off, email, project FROM inbox WHERE rid=?1 ON CONFLICT(id) DO NOTHING",
    [S_IDEL] = "DELETE FROM inbox WHERE rid=?1",
    [S_TDAY] = "INSERT INTO app_days VALUES(?1,?2,?3,?4,1) ON CONFLICT DO UPDATE SET count=count+1",
    [S_TINST] = "INSERT INTO app_installs VALUES(?1,?2,?3) ON CONFLICT DO NOTHING",
    /* Retention (s_expire) and deletion (s_delete_crash), through the
     * indexes of INDEXES. */
    [S_EXPSEL] = "SELECT rid, id, chunk, group_id FROM crashes WHERE state IN (1,2) AND "
                 "received < ?1 AND resym=0 ORDER BY received LIMIT ?2",
    [S_EXPDEL] = "DELETE FROM crashes WHERE rid=?1",
    /* A group whose representative crash went shows its oldest left. */
    [S_SAMPLE] = "UPDATE groups SET sample_crash=(SELECT id FROM crashes WHERE group_id=?1 ORDER "
                 "BY rid LIMIT 1) WHERE id=?1 AND sample_crash=?2",
    /* A chunk goes once no crash and no inbox row points into it.  The
     * inbox is not indexed by chunk, but it is appended in the order
     * chunks are made (one writer; a chunk and its rows in one
     * transaction), so its first row has its smallest chunk.  The newest
     * chunk stays: its id would be taken again by the next one, and a
     * connection may hold the old one decompressed under that id. */
    [S_CHUNKDROP] =
        "DELETE FROM raw_chunks WHERE id=?1 AND id < (SELECT max(id) FROM raw_chunks) "
        "AND NOT EXISTS (SELECT 1 FROM crashes WHERE chunk=?1) AND ?1 < "
        "coalesce((SELECT chunk FROM inbox WHERE rid=(SELECT min(rid) FROM inbox)), ?1 + 1)",
    /* The group a group id stands for: itself, or the one it was merged
     * into (merge_group). */
    [S_GRES] = "SELECT coalesce(merged_into, id) FROM groups WHERE id=?1",
    /* The id a signature's crashes take now that its group was deleted
     * (delete_group): looked up per crash processed, in a table that
     * holds a row per deleted group only. */
    [S_GCUR] = "SELECT cur FROM group_gen WHERE base=?1",
};

/* Not in SQL[]: fl_store_sqlite_full_scans() checks those, and this one
 * walks the inbox on purpose (see S_IFIND). */
static const char SQL_IFIND[] = "SELECT rid FROM inbox WHERE id=?1 ORDER BY rid LIMIT 1";

#define EXTRA_STMTS 48

typedef struct sconn {
    fl_store_conn pub;
    sqlite3 *db;
    sqlite3_stmt *st[S_COUNT];
    /* Statements of the embedded queue, keyed by their SQL's address. */
    const char *extra_sql[EXTRA_STMTS];
    sqlite3_stmt *extra[EXTRA_STMTS];
    /* Raw-log chunks: the one being written (ingest), the last one read,
     * decompressed (chunk_id 0: none). */
    char *zbuf;
    size_t zcap;
    int64_t chunk_id;
    char *chunk;
    size_t chunk_len;
    /* SQLite's reason for the last FL_LOAD_UNAVAILABLE, kept for error():
     * resetting another statement afterwards clears the connection's. */
    char err[256];
} sconn;

typedef struct sstore {
    fl_store pub;
    char *path;
    /* The database file opened at start (see s_commit). */
    dev_t dev;
    ino_t ino;
    /* The checkpointer: copies the WAL back into the database in the
     * background, so that no committing thread (the ingest writer above
     * all) pays for it. */
    pthread_t ckpt;
    bool ckpt_running, stopping;
    bool ckpt_asked;             /* atomic: a commit asked for a pass (wal_grew) */
    int ckpt_frames;             /* atomic: the WAL's frames after the last pass */
    fl_store_wal_info ckpt_info; /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Crash ids stored here, for ingest to skip the lookup of a new one
     * (see s_insert_crashes).  Under fmu.  Every id the store stores is
     * added from the start; a thread adds those already in the database,
     * and known_ready says it is done -- until then ingest looks every id
     * up, as it does when the filter could not be had at all. */
    pthread_mutex_t fmu;
    fl_idfilter *known;
    bool known_ready, loader_running, loader_stop; /* loader_stop: atomic */
    bool known_snapshot; /* known came from the snapshot (snapshot_take) */
    pthread_t loader;
    int64_t lookups; /* S_KNOWN lookups done by ingest */
    int64_t known_est; /* ids in the database when opened, at most */
    bool known_tried;
} sstore;

static void *loader_main(void *arg);
static fl_idfilter *snapshot_take(sstore *s);
static void snapshot_path(const sstore *s, char *out, size_t n, const char *suffix);

/* The connection's prepared statement `which`, as left by its last use:
 * for a caller that resets it after each use (done()) and binds every
 * parameter -- stmt() below for the others. */
static sqlite3_stmt *stmt_bound(sconn *c, int which)
{
    const char *sql = which == S_IFIND ? SQL_IFIND : SQL[which];
    if (!c->st[which] &&
        sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->st[which], NULL))
        return NULL;
    return c->st[which];
}

static sqlite3_stmt *stmt(sconn *c, int which)
{
    sqlite3_stmt *s = stmt_bound(c, which);
    if (s) {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
    }
    return s;
}

/* bind_text() of a string that stays put until the statement is reset. */
static void bind_static(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
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
 * 200 us instead.  arg is the number of polls before giving up, as
 * BUSY_POLLS(n): BUSY_PATIENT (150,000: 30 s of sleeps, about 39 s
 * measured, a nanosleep of 200 us takes longer) for every connection, a
 * shorter one where waiting holds others up (ckpt_main). */
#define BUSY_POLLS(n) ((void *)(intptr_t)(n))
#define BUSY_PATIENT BUSY_POLLS(150000)
static int busy_wait(void *arg, int count)
{
    if (count >= (int)(intptr_t)arg)
        return 0;
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
    return 1;
}

/* On failure, SQLite's reason goes to err when given. */
static int open_db(const char *path, sqlite3 **out, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        goto fail;
    sqlite3_busy_handler(db, busy_wait, BUSY_PATIENT);
    /* journal_size_limit: a WAL that grew far past WAL_RESTART_FRAMES
     * while a long reader held the restart off is cut back when it starts
     * over; SQLite would keep the file at the largest size it ever
     * reached, a little more after each such reader. */
    if (sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;"
                     "PRAGMA cache_size=-2000; PRAGMA temp_store=MEMORY;"
                     "PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=" WAL_LIMIT_BYTES ";",
                     NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    *out = db;
    return 0;
fail:
    if (err)
        snprintf(err, errlen, "%s", sqlite3_errmsg(db)); /* "out of memory" when db is NULL */
    sqlite3_close(db);
    return -1;
}

/* SQLite's WAL hook, called by a store connection after each commit with
 * the WAL's length in frames: asks the checkpointer for a pass once the
 * WAL has grown by CKPT_STEP_FRAMES since its last (a shorter WAL than
 * then: it started over).  One wake-up per step, not one per commit. */
static int wal_grew(void *arg, sqlite3 *db, const char *name, int frames)
{
    (void)db;
    (void)name;
    sstore *s = arg;
    int last = __atomic_load_n(&s->ckpt_frames, __ATOMIC_RELAXED);
    if (frames < last)
        last = 0;
    if (frames - last >= CKPT_STEP_FRAMES &&
        !__atomic_exchange_n(&s->ckpt_asked, true, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&s->mu);
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    return SQLITE_OK;
}

static fl_store_conn *s_connect(fl_store *st)
{
    sstore *s = (sstore *)st;
    sconn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (open_db(s->path, &c->db, NULL, 0)) {
        free(c);
        return NULL;
    }
    sqlite3_wal_hook(c->db, wal_grew, s);
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
    free(c->zbuf);
    free(c->chunk);
    free(c);
}

int fl_store_sqlite_full_scans(fl_store_conn *pc, char *bad, size_t badlen)
{
    sqlite3 *db = fl_store_sqlite_db(pc);
    int n = 0;
    if (bad && badlen)
        bad[0] = '\0';
    if (!db)
        return -1;
    for (int i = 0; i < S_COUNT; i++) {
        if (!SQL[i] || !strncmp(SQL[i], "BEGIN", 5) || !strcmp(SQL[i], "COMMIT") ||
            !strcmp(SQL[i], "ROLLBACK"))
            continue;
        char q[4096];
        snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", SQL[i]);
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, q, -1, &s, NULL) != SQLITE_OK) {
            if (!n && bad)
                snprintf(bad, badlen, "cannot plan: %s", SQL[i]);
            n++;
            continue;
        }
        while (sqlite3_step(s) == SQLITE_ROW) {
            /* "SCAN t" is a full scan; "SCAN t USING ... INDEX" walks an
             * index, "SEARCH" seeks one. */
            const char *d = (const char *)sqlite3_column_text(s, 3);
            if (d && !strncmp(d, "SCAN ", 5) && !strstr(d, " USING ")) {
                if (!n && bad)
                    snprintf(bad, badlen, "%s in: %s", d, SQL[i]);
                n++;
                break;
            }
        }
        sqlite3_finalize(s);
    }
    return n;
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

/* Is the database file still at its path?  Moved or removed under a
 * running server (the data directory too), it is still open and takes
 * every write, which then goes wherever the file went, or nowhere once the
 * process ends: a report answered 200 would be lost.  SQLite itself looks
 * (SQLITE_READONLY_DBMOVED) only with a rollback journal, not in WAL mode.
 * A stat() that fails otherwise (EACCES, EIO) tells nothing: then the file
 * is taken to be there. */
static bool db_moved(const sstore *s)
{
    struct stat st;
    if (stat(s->path, &st))
        return errno == ENOENT || errno == ENOTDIR;
    return st.st_dev != s->dev || st.st_ino != s->ino;
}

static int s_commit(fl_store_conn *pc)
{
    sconn *c = (sconn *)pc;
    if (db_moved((const sstore *)pc->store)) {
        snprintf(c->err, sizeof c->err,
                 "the database file %s was removed or replaced while the server ran (put it "
                 "back, or restart the server)",
                 ((const sstore *)pc->store)->path);
        return -1;
    }
    sqlite3_stmt *s = stmt(c, S_COMMIT);
    return s ? done(s) : -1;
}

static int s_processing_ended(fl_store_conn *pc, const char *ref);

static const char *s_error(fl_store_conn *pc)
{
    sconn *c = (sconn *)pc;
    if (sqlite3_errcode(c->db) == SQLITE_OK && c->err[0])
        return c->err;
    return sqlite3_errmsg(c->db);
}

/* A database another connection holds too long, or a disk that is full
 * or failing: the same call may work later. */
static bool s_unavailable(fl_store_conn *pc)
{
    sconn *c = (sconn *)pc;
    switch (sqlite3_errcode(c->db) & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
        return true;
    default:
        return false;
    }
}

/* 64 KiB into raw_chunks under a rowid no chunk has (they count from 1),
 * committed, then deleted: as much WAL as three ingest commits. */
static int s_probe(fl_store_conn *pc)
{
    sconn *c = (sconn *)pc;
    static const char *const steps[] = {
        "BEGIN IMMEDIATE; INSERT OR REPLACE INTO raw_chunks(id, data) VALUES(-1, zeroblob(65536));"
        "COMMIT;",
        "BEGIN IMMEDIATE; DELETE FROM raw_chunks WHERE id = -1; COMMIT;"};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (sqlite3_exec(c->db, steps[i], NULL, NULL, NULL) != SQLITE_OK) {
            if (!sqlite3_get_autocommit(c->db))
                sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
    }
    return 0;
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

/* The number of items a caller's frame on items[0] covers (0: none, or one
 * that does not add up -- then the store compresses those logs itself);
 * their bytes in *raw. */
static size_t frame_run(fl_ingest_item *const *items, size_t n, size_t *raw)
{
    const fl_ingest_item *it = items[0];
    size_t k = it->zitems, sum = 0;
    if (!it->z || k == 0 || k > n)
        return 0;
    for (size_t q = 0; q < k; q++)
        sum += items[q]->raw_len;
    if ((k > 1 && sum > CHUNK_MAX) || ZSTD_findFrameCompressedSize(it->z, it->zlen) != it->zlen ||
        ZSTD_getFrameContentSize(it->z, it->zlen) != sum)
        return 0;
    *raw = sum;
    return k;
}

/* Orders a batch by crash id, then by position: the first of equal ids
 * comes first. */
static int by_id(const void *a, const void *b)
{
    const fl_ingest_item *x = *(fl_ingest_item *const *)a, *y = *(fl_ingest_item *const *)b;
    int r = strcmp(x->crash_id, y->crash_id);
    return r ? r : (x < y ? -1 : x > y);
}

/*
 * Ingest: the batch's new reports are appended to the inbox, their logs
 * compressed together into chunks.  A crash id already counted (a resend
 * of a processed crash) or met earlier in the batch is flagged duplicate
 * and not stored.  A resend of a crash still in the inbox is stored again,
 * and processing drops it: crashes' unique index on the id decides, and
 * the second row finds the id taken.
 *
 * Why not the unique index here: crash ids are random, so each insert into
 * an index of them dirties a page of its own.  A batch of 25 reports wrote
 * ~33 WAL pages instead of ~8, and ingest lost ~25 % of its rate to it
 * (docs/operations.md).  The inbox is appended to in order; the only index
 * work left is a read (S_KNOWN) -- and only for an id the filter of ids
 * already stored (fl_idfilter) cannot rule out: a random page of an index
 * as large as all crashes ever stored is a disk read once it outgrows the
 * page cache, on the writer's serial path (bench/server/large.sh: 10 M
 * crashes, the server in 512 MiB: ~26,000 reports/s, ~44,000 with it).
 */
/* "#<rid>": snprintf() took ~1,000 instructions for it, twenty times per
 * commit on the writer's serial path. */
static void ref_of(char out[FL_CRASH_ID_MAX], int64_t rid)
{
    char d[24];
    size_t n = 0;
    uint64_t v = rid < 0 ? 0 : (uint64_t)rid; /* rowids here are never negative */
    do
        d[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    out[0] = '#';
    for (size_t i = 0; i < n; i++)
        out[1 + i] = d[n - 1 - i];
    out[1 + n] = '\0';
}

/* What a project column holds: NULL for the default project. */
static const char *proj_col(const char *project)
{
    return project && project[0] && strcmp(project, FL_PROJECT_DEFAULT) ? project : NULL;
}

/* The item's minidump; a resend of it (the same crash id: its hash) is
 * the row there already. */
static int dump_put(sconn *c, const fl_ingest_item *it)
{
    sqlite3_stmt *s = fl_store_sqlite_stmt(
        &c->pub, "INSERT OR IGNORE INTO minidumps(crash_id, size, data) VALUES(?1,?2,?3)");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, it->crash_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)it->dump_size);
    sqlite3_bind_blob(s, 3, it->dump, (int)it->dump_len, SQLITE_STATIC);
    return done(s);
}

static int s_insert_crashes(fl_store_conn *pc, fl_ingest_item *const *items, size_t n)
{
    sconn *c = (sconn *)pc;
    if (n == 0)
        return 0;
    /* v: the items sorted by id; maybe[i]: items[i]'s id may be stored. */
    fl_ingest_item **v = malloc(n * (sizeof *v + sizeof(uint64_t) + sizeof(bool)));
    if (!v)
        return -1;
    uint64_t *hs = (uint64_t *)(v + n); /* the ids' filter hashes */
    bool *maybe = (bool *)(hs + n);
    memcpy(v, items, n * sizeof *v);
    qsort(v, n, sizeof *v, by_id);
    for (size_t i = 0; i < n; i++)
        v[i]->duplicate = i > 0 && !strcmp(v[i]->crash_id, v[i - 1]->crash_id);
    sstore *ss = (sstore *)c->pub.store;
    pthread_mutex_lock(&ss->fmu);
    if (!ss->known_tried) {
        /* The first ingest: a process that only processes or reads never
         * pays for the filter.  Room for half as many ids again as the
         * database had before it grows; without it (out of memory) ingest
         * looks every id up. */
        ss->known_tried = true;
        /* Capped: rowids can have gaps (it grows past this anyway). */
        int64_t e = ss->known_est < (INT64_C(1) << 26) ? ss->known_est : (INT64_C(1) << 26);
        if ((ss->known = snapshot_take(ss)))
            ss->known_ready = ss->known_snapshot = true;
        else if ((ss->known = fl_idfilter_new(e > 0 ? (size_t)e + (size_t)e / 2 : 0)) &&
                 pthread_create(&ss->loader, NULL, loader_main, ss) == 0)
            ss->loader_running = true;
        else {
            fl_idfilter_free(ss->known);
            ss->known = NULL;
        }
    }
    if (ss->known_ready) {
        /* Hashes and prefetches first: the batch's cache misses overlap. */
        for (size_t i = 0; i < n; i++) {
            hs[i] = fl_idfilter_hash(items[i]->crash_id, strlen(items[i]->crash_id));
            fl_idfilter_prefetch(ss->known, hs[i]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        maybe[i] = !items[i]->duplicate &&
                   (!ss->known_ready || fl_idfilter_maybe_h(ss->known, hs[i]));
        ss->lookups += maybe[i];
    }
    pthread_mutex_unlock(&ss->fmu);
    for (size_t i = 0; i < n; i++) {
        fl_ingest_item *it = items[i];
        it->ref[0] = '\0';
        if (!maybe[i])
            continue; /* a duplicate in the batch, or never stored: not a resend */
        sqlite3_stmt *s = stmt(c, S_KNOWN);
        if (!s)
            goto fail;
        sqlite3_bind_text(s, 1, it->crash_id, -1, SQLITE_STATIC);
        int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            goto fail;
        it->duplicate = rc == SQLITE_ROW;
    }
    /* Chunks, in arrival order.  A caller's frame is kept as it is (a
     * frame that does not add up is dropped first, and its logs are
     * compressed here).  The chunk's other new reports are compressed here
     * into one frame after the callers' -- one frame, not one per gap
     * between callers' frames: each frame costs zstd ~5 us of entropy
     * tables on top of ~1 us per log.  A chunk holds at most CHUNK_MAX
     * bytes of logs, or one larger log.  A duplicate gets no inbox row,
     * though a caller's frame still holds its bytes; a chunk of duplicates
     * only is not written.  v[0..nrows) and off[]: the rows of the chunk
     * being built; pend[0..npend): its reports to compress here; run[i]:
     * the items a good frame starting at items[i] covers, else 0. */
    size_t *off = malloc(n * (2 * sizeof *off + sizeof(fl_ingest_item *)));
    if (!off)
        goto fail;
    size_t *run = off + n;
    fl_ingest_item **pend = (fl_ingest_item **)(run + n);
    for (size_t i = 0; i < n;) {
        size_t raw, k = frame_run(items + i, n - i, &raw);
        run[i++] = k;
        for (size_t q = 1; q < k; q++)
            run[i++] = 0;
    }
    for (size_t i = 0; i < n;) {
        size_t raw = 0, zl = 0, nrows = 0, npend = 0, pend_raw = 0;
        while (i < n) {
            size_t k = run[i], add = 0;
            for (size_t q = 0; q < k; q++)
                add += items[i + q]->raw_len;
            if (!k && !items[i]->duplicate)
                add = items[i]->raw_len;
            if (raw + pend_raw > 0 && raw + pend_raw + add > CHUNK_MAX)
                break; /* the chunk is full */
            if (!k) {
                if (!items[i]->duplicate) {
                    pend[npend++] = items[i];
                    pend_raw += add;
                }
                i++;
                continue;
            }
            const fl_ingest_item *it = items[i];
            if (it->zlen > c->zcap - zl) {
                char *nb = realloc(c->zbuf, zl + it->zlen);
                if (!nb)
                    goto fail_off;
                c->zbuf = nb;
                c->zcap = zl + it->zlen;
            }
            memcpy(c->zbuf + zl, it->z, it->zlen);
            zl += it->zlen;
            for (size_t q = 0, at = raw; q < k; at += items[i + q]->raw_len, q++)
                if (!items[i + q]->duplicate) {
                    v[nrows] = items[i + q];
                    off[nrows++] = at;
                }
            raw += add;
            i += k;
        }
        if (npend) {
            if (fl_raw_frame(pend, npend, pend_raw, &c->zbuf, &zl, &c->zcap))
                goto fail_off;
            for (size_t q = 0; q < npend; raw += pend[q++]->raw_len) {
                v[nrows] = pend[q];
                off[nrows++] = raw;
            }
        }
        if (nrows == 0)
            continue;
        sqlite3_stmt *s = stmt(c, S_CHUNKPUT);
        if (!s)
            goto fail_off;
        sqlite3_bind_blob(s, 1, c->zbuf, (int)zl, SQLITE_STATIC);
        if (done(s))
            goto fail_off;
        int64_t chunk = sqlite3_last_insert_rowid(c->db);
        for (size_t r = 0; r < nrows; r++) {
            fl_ingest_item *it = v[r];
            /* Every parameter is bound below, and the item's strings
             * outlive the statement's step: no clearing, no copies. */
            if (!(s = stmt_bound(c, S_INBOX)))
                goto fail_off;
            sqlite3_bind_text(s, 1, it->crash_id, -1, SQLITE_STATIC);
            bind_static(s, 2, it->app);
            bind_static(s, 3, it->version);
            sqlite3_bind_int64(s, 4, it->received);
            sqlite3_bind_int64(s, 5, (sqlite3_int64)it->raw_len);
            sqlite3_bind_int64(s, 6, chunk);
            sqlite3_bind_int64(s, 7, (sqlite3_int64)off[r]);
            bind_static(s, 8, it->email);
            bind_static(s, 9, proj_col(it->project));
            if (done(s))
                goto fail_off;
            ref_of(it->ref, sqlite3_last_insert_rowid(c->db));
        }
        /* Now stored (if the transaction commits -- if not, the filter
         * just holds an id too many). */
        pthread_mutex_lock(&ss->fmu);
        for (size_t r = 0; ss->known && r < nrows; r++)
            fl_idfilter_add(ss->known, v[r]->crash_id, strlen(v[r]->crash_id));
        pthread_mutex_unlock(&ss->fmu);
    }
    for (size_t i = 0; i < n; i++)
        if (items[i]->dump && !items[i]->duplicate && dump_put(c, items[i]))
            goto fail_off;
    free(off);
    free(v);
    return 0;
fail_off:
    free(off);
fail:
    free(v);
    return -1;
}

/* The raw log of a crash row (caller frees *raw): its slice of chunk
 * `chunk` at `off`, or, for a row from before chunks (chunk_null), the
 * zstd frame `blob` of its own. */
static int unavailable(sconn *c)
{
    snprintf(c->err, sizeof c->err, "%s", sqlite3_errmsg(c->db));
    return FL_LOAD_UNAVAILABLE;
}

static int row_raw(sconn *c, bool chunk_null, int64_t chunk, uint64_t off, uint64_t len,
                   const void *blob, size_t blob_len, char **raw, size_t *rl)
{
    if (chunk_null)
        return fl_unzstd(blob, blob_len, MAX_RAW, raw, rl);
    if (chunk != c->chunk_id || !c->chunk) {
        sqlite3_stmt *s = stmt(c, S_CHUNKGET);
        if (!s)
            return unavailable(c);
        sqlite3_bind_int64(s, 1, chunk);
        int st = sqlite3_step(s);
        if (st != SQLITE_ROW) {
            int r = st == SQLITE_DONE ? -1 : unavailable(c); /* no such chunk: damaged */
            sqlite3_reset(s);
            return r;
        }
        free(c->chunk);
        c->chunk = NULL;
        c->chunk_id = 0;
        int r = fl_unzstd(sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0),
                          MAX_RAW + CHUNK_MAX, &c->chunk, &c->chunk_len);
        sqlite3_reset(s);
        if (r)
            return -1;
        c->chunk_id = chunk;
    }
    int rc = -1;
    if (off <= c->chunk_len && len <= c->chunk_len - off) {
        rc = FL_LOAD_UNAVAILABLE; /* out of memory, for now */
        snprintf(c->err, sizeof c->err, "out of memory");
        if ((*raw = malloc(len + 1))) {
            memcpy(*raw, c->chunk + off, len);
            (*raw)[len] = '\0';
            *rl = len;
            rc = 0;
        }
    }
    if (c->chunk_len > CHUNK_KEEP) {
        free(c->chunk);
        c->chunk = NULL;
        c->chunk_id = 0;
    }
    return rc;
}

/* The inbox row that ref names: "#rid", or a crash id that only the inbox
 * has (a walk, see S_IFIND).  Returns 1 with *rid set, 0 when there is no
 * such row, -1 on error. */
static int inbox_rid(sconn *c, const char *ref, int64_t *rid)
{
    if (ref[0] == '#') {
        char *end;
        errno = 0;
        long long v = strtoll(ref + 1, &end, 10);
        if (end == ref + 1 || *end || errno || v <= 0)
            return 0;
        *rid = v;
        return 1;
    }
    sqlite3_stmt *s = stmt(c, S_IFIND);
    if (!s) {
        unavailable(c);
        return -1;
    }
    sqlite3_bind_text(s, 1, ref, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *rid = sqlite3_column_int64(s, 0);
    else if (rc != SQLITE_DONE)
        unavailable(c);
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* The project column of s's row (column i) into project, "" for none. */
static void column_project(sqlite3_stmt *s, int i, char project[FL_PROJECT_MAX])
{
    const unsigned char *v = sqlite3_column_text(s, i);
    if (project)
        snprintf(project, FL_PROJECT_MAX, "%s", v ? (const char *)v : "");
}

static int s_load_raw(fl_store_conn *pc, const char *ref, char **raw, size_t *len,
                      int64_t *received, char id[FL_CRASH_ID_MAX], char project[FL_PROJECT_MAX])
{
    sconn *c = (sconn *)pc;
    *raw = NULL;
    if (project)
        project[0] = '\0';
    c->err[0] = '\0';
    sqlite3_stmt *s;
    int rc;
    if (ref[0] != '#') {
        /* A crash id: a processed crash (or one from before the inbox). */
        if (!(s = stmt(c, S_LOAD)))
            return unavailable(c);
        sqlite3_bind_text(s, 1, ref, -1, SQLITE_STATIC);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            int state = sqlite3_column_int(s, 2), resym = sqlite3_column_int(s, 3);
            if (state != 0 && !(state == 1 && resym)) {
                sqlite3_reset(s);
                return 2;
            }
            *received = sqlite3_column_int64(s, 1);
            column_project(s, 7, project);
            int r = row_raw(c, sqlite3_column_type(s, 4) == SQLITE_NULL,
                            sqlite3_column_int64(s, 4), (uint64_t)sqlite3_column_int64(s, 5),
                            (uint64_t)sqlite3_column_int64(s, 6), sqlite3_column_blob(s, 0),
                            (size_t)sqlite3_column_bytes(s, 0), raw, len);
            sqlite3_reset(s);
            if (r)
                return r;
            if (id)
                snprintf(id, FL_CRASH_ID_MAX, "%s", ref);
            return state == 1 ? 3 : 0;
        }
        if (rc != SQLITE_DONE) {
            unavailable(c);
            sqlite3_reset(s);
            return FL_LOAD_UNAVAILABLE;
        }
        sqlite3_reset(s);
    }
    int64_t rid;
    int r = inbox_rid(c, ref, &rid);
    if (r <= 0)
        return r < 0 ? FL_LOAD_UNAVAILABLE : 1;
    if (!(s = stmt(c, S_ILOAD)))
        return unavailable(c);
    sqlite3_bind_int64(s, 1, rid);
    rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        /* DONE: processed (moved) or dropped. */
        r = rc == SQLITE_DONE ? 1 : unavailable(c);
        sqlite3_reset(s);
        return r;
    }
    if (id)
        snprintf(id, FL_CRASH_ID_MAX, "%s", (const char *)sqlite3_column_text(s, 0));
    *received = sqlite3_column_int64(s, 1);
    column_project(s, 5, project);
    r = row_raw(c, false, sqlite3_column_int64(s, 2), (uint64_t)sqlite3_column_int64(s, 3),
                (uint64_t)sqlite3_column_int64(s, 4), NULL, 0, raw, len);
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

/* One more processed crash in its application's trends (app_days,
 * app_installs).  Not on reapply(): a crash moved to another group is
 * still the same crash of the same app. */
static int trend_add(sconn *c, const fl_processed *p)
{
    char day[16];
    fl_iso_day(p->received, day);
    const char *app = p->app ? p->app : "";
    const char *kv[4][2] = {{"c", ""},
                            {"v", p->version ? p->version : ""},
                            {"o", p->os ? p->os : ""},
                            {"a", p->arch ? p->arch : ""}};
    for (size_t i = 0; i < 4; i++) {
        sqlite3_stmt *s = stmt(c, S_TDAY);
        if (!s)
            return -1;
        sqlite3_bind_text(s, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, day, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 3, kv[i][0], -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, kv[i][1], -1, SQLITE_STATIC);
        if (done(s))
            return -1;
    }
    if (!p->install_id)
        return 0;
    sqlite3_stmt *s = stmt(c, S_TINST);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, app, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, day, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, p->install_id, -1, SQLITE_STATIC);
    return done(s);
}

static int group_add(sconn *c, const fl_processed *p, const char *tgt);
static json_t *time_json(sqlite3_stmt *s, int col);
static json_t *text_json(sqlite3_stmt *s, int col);

static int record_missing(sconn *c, const fl_processed *p)
{
    sqlite3_stmt *s = stmt(c, S_MISSDEL);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, p->crash_id, -1, SQLITE_STATIC);
    if (done(s))
        return -1;
    for (size_t i = 0; i < p->nmissing; i++) {
        if (!(s = stmt(c, S_MISS)))
            return -1;
        sqlite3_bind_text(s, 1, p->missing_build_ids[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, p->crash_id, -1, SQLITE_STATIC);
        if (done(s))
            return -1;
    }
    return 0;
}

/* The state of crash id in crashes (-1: not there).  0, or -1 on error. */
static int crash_state(sconn *c, const char *id, int *state)
{
    sqlite3_stmt *s = stmt(c, S_STATE);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    *state = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* The group id stands for, into out: itself, or the group it was merged
 * into.  0, 1 when there is no such group, -1 on error. */
static int group_resolve(sconn *c, const char *id, char out[64])
{
    sqlite3_stmt *s = stmt(c, S_GRES);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    int r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : -1;
    if (r == 0)
        snprintf(out, 64, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_reset(s);
    return r;
}

/* *p, or a copy in *q that names the crash's own group: the id grouping
 * gave, or the one that took its place when its group was deleted
 * (group_gen; cur holds it).  The crash is kept and counted there, merged
 * or not (merge_group: a merge moves neither crashes nor counters); *tgt
 * names the group that own one stands for -- itself, or the one it was
 * merged into (into holds it) --, whose status the regression rule reads
 * and writes.  0, or -1 on error. */
static int merged_target(sconn *c, const fl_processed **p, fl_processed *q, char cur[64],
                         char into[64], const char **tgt)
{
    *tgt = NULL;
    if ((*p)->failed || !(*p)->group_id)
        return 0;
    const char *gid = (*p)->group_id;
    sqlite3_stmt *s = stmt(c, S_GCUR);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        snprintf(cur, 64, "%s", (const char *)sqlite3_column_text(s, 0));
        gid = cur;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return -1;
    int r = group_resolve(c, gid, into);
    if (r < 0)
        return -1;
    *tgt = r == 0 ? into : gid; /* 1: a new group, not merged */
    if (gid != (*p)->group_id) {
        *q = **p;
        q->group_id = gid;
        *p = q;
    }
    return 0;
}

static int s_apply(fl_store_conn *pc, const fl_processed *p)
{
    sconn *c = (sconn *)pc;
    const char *ref = p->ref ? p->ref : p->crash_id;
    sqlite3_stmt *s;
    int state = -1;
    /* A signature whose group was merged into another is counted in its
     * own, and regresses the one it is merged into (one writer at a time:
     * no merge can come between). */
    fl_processed q;
    char cur[64], into[64];
    const char *tgt;
    if (merged_target(c, &p, &q, cur, into, &tgt))
        return -1;
    if (ref[0] != '#' && crash_state(c, p->crash_id, &state))
        return -1;
    if (state < 0) {
        /* In the inbox: move the row into crashes.  Its unique index on the
         * id is what counts a crash once: a resend that reached the inbox
         * before the first copy was processed finds the id taken and is
         * dropped here, counted nowhere. */
        int64_t rid;
        int r = inbox_rid(c, ref, &rid);
        if (r <= 0)
            return r; /* unknown: count nothing */
        if (!(s = stmt(c, S_MOVE)))
            return -1;
        sqlite3_bind_int64(s, 1, rid);
        if (done(s))
            return -1;
        bool moved = sqlite3_changes(c->db) == 1;
        if (!(s = stmt(c, S_IDEL)))
            return -1;
        sqlite3_bind_int64(s, 1, rid);
        if (done(s))
            return -1;
        if (!moved) /* the id was taken (1), or the row gone already (0) */
            return sqlite3_changes(c->db) == 1;
        state = 0;
    }
    if (state != 0)
        return 0; /* already processed: count nothing */

    if (!(s = stmt(c, S_MARK)))
        return -1;
    sqlite3_bind_text(s, 1, p->crash_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, p->failed ? 2 : 1);
    bind_text(s, 3, p->failed ? NULL : p->group_id);
    bind_text(s, 4, p->failed ? NULL : p->stack_hash);
    if (p->zprocessed)
        sqlite3_bind_blob(s, 5, p->zprocessed, (int)p->zprocessed_len, SQLITE_STATIC);
    bind_text(s, 6, p->failed ? NULL : p->install_id);
    sqlite3_bind_int(s, 7, !p->failed && p->arch);
    if (done(s))
        return -1;
    if (p->failed)
        return 0;
    if (record_missing(c, p) || trend_add(c, p))
        return -1;
    return group_add(c, p, tgt);
}

/* A notice of kind about p's group, when the store keeps them. */
static int notice_add(sconn *c, const char *kind, const fl_processed *p)
{
    if (!c->pub.store->notify)
        return 0;
    sqlite3_stmt *s = fl_store_sqlite_stmt(
        &c->pub, "INSERT INTO notices(kind, group_id, crash_id, created) VALUES(?1,?2,?3,?4)");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, p->group_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, p->crash_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, fl_now());
    return done(s);
}

/* A group's latest version seen (S_GGET's third column) in *newer: is
 * version newer?  0, or -1 on error. */
static int newer_than_latest(sconn *c, const char *gid, const char *version, bool *newer)
{
    *newer = false;
    if (!version)
        return 0;
    sqlite3_stmt *s = stmt(c, S_GGET);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *lv = (const char *)sqlite3_column_text(s, 2);
        *newer = !lv || fl_vercmp(version, lv) > 0;
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : -1;
}

/* One more crash in p's group (created when new): its counters, per-day,
 * per-version, per-OS counts and affected installs.  tgt (NULL: p's
 * group) is the group p's stands for -- the one it was merged into, if it
 * was --, whose status the regression rule reads and sets, and whose
 * latest version seen goes up with its members' (a merged group's other
 * numbers add up when read: merge_group). */
static int group_add(sconn *c, const fl_processed *p, const char *tgt)
{
    if (!tgt)
        tgt = p->group_id;
    bool merged = strcmp(tgt, p->group_id) != 0;
    sqlite3_stmt *s;
    if (!(s = stmt(c, S_GNEW)))
        return -1;
    sqlite3_bind_text(s, 1, p->group_id, -1, SQLITE_STATIC);
    bind_text(s, 2, p->app);
    sqlite3_bind_text(s, 3, p->signature, -1, SQLITE_STATIC);
    bind_text(s, 4, p->frames_json);
    sqlite3_bind_int64(s, 5, p->received);
    sqlite3_bind_text(s, 6, p->crash_id, -1, SQLITE_STATIC);
    bind_text(s, 7, proj_col(p->project));
    if (done(s))
        return -1;
    if (sqlite3_changes(c->db) == 1 && notice_add(c, FL_NOTICE_NEW_GROUP, p))
        return -1;

    if (!(s = stmt(c, S_GGET)))
        return -1;
    sqlite3_bind_text(s, 1, tgt, -1, SQLITE_STATIC);
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
    fl_processed t = *p;
    t.group_id = tgt; /* the notice is about the group the user sees */
    if (regressed && notice_add(c, FL_NOTICE_REGRESSED, &t))
        return -1;
    bool newer_own = newer;
    if (merged) {
        if (newer_than_latest(c, p->group_id, p->version, &newer_own))
            return -1;
        if (regressed || newer) {
            if (!(s = fl_store_sqlite_stmt(&c->pub,
                                           "UPDATE groups SET status=coalesce(?2, status), "
                                           "latest_version=coalesce(?3, latest_version) WHERE "
                                           "id=?1")))
                return -1;
            sqlite3_bind_text(s, 1, tgt, -1, SQLITE_STATIC);
            bind_text(s, 2, regressed ? "regressed" : NULL);
            bind_text(s, 3, newer ? p->version : NULL);
            if (done(s))
                return -1;
        }
    }

    if (!(s = stmt(c, S_GUPD)))
        return -1;
    sqlite3_bind_text(s, 1, p->group_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, p->received);
    bind_text(s, 3, merged ? NULL : status);
    bind_text(s, 4, newer_own ? p->version : NULL);
    if (done(s))
        return -1;

    char day[16];
    fl_iso_day(p->received, day);
    if (bump(c, S_DAY, p->group_id, day) || bump(c, S_VER, p->group_id, p->version) ||
        bump(c, S_OS, p->group_id, p->os) || bump(c, S_ARCH, p->group_id, p->arch))
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

static int run1(sconn *c, int which, const char *a, const char *b)
{
    sqlite3_stmt *s = stmt(c, which);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, a, -1, SQLITE_STATIC);
    bind_text(s, 2, b);
    return done(s);
}

/* One crash less in group gid (the crash moved away): the mirror of
 * group_add -- counts and breakdowns decremented, first/last_seen
 * recomputed from the crashes left, the crash's install no longer counted
 * in `affected` when it was that install's last crash in the group.  A
 * group left with no crash is deleted.  arch_counted: whether the crash's
 * architecture was counted in it (crashes.arch_counted: not for one
 * processed before generation 6). */
static int group_remove(sconn *c, const char *gid, const fl_processed *p, bool arch_counted)
{
    sqlite3_stmt *s = stmt(c, S_GDEC);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, p->crash_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    int64_t left = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    while (rc == SQLITE_ROW)
        rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return -1;
    char day[16];
    fl_iso_day(p->received, day);
    if (run1(c, S_DAYDEC, gid, day) || (p->version && run1(c, S_VERDEC, gid, p->version)) ||
        (p->os && run1(c, S_OSDEC, gid, p->os)) ||
        (arch_counted && p->arch && run1(c, S_ARCHDEC, gid, p->arch)))
        return -1;
    static const char *const gone[] = {
        "DELETE FROM group_days WHERE group_id=?1 AND count<=0",
        "DELETE FROM group_versions WHERE group_id=?1 AND count<=0",
        "DELETE FROM group_os WHERE group_id=?1 AND count<=0",
        "DELETE FROM group_arch WHERE group_id=?1 AND count<=0",
    };
    /* A group left with no crash goes, unless a merge ties it to others:
     * the crashes of the groups merged into it stay theirs (merge_group),
     * and a group merged into another stays merged. */
    static const char *const all[] = {
        "DELETE FROM groups WHERE id=?1 AND merged_into IS NULL AND NOT EXISTS(SELECT 1 FROM "
        "groups m WHERE m.merged_into=?1)",
        "DELETE FROM group_installs WHERE group_id=?1 AND NOT EXISTS(SELECT 1 FROM groups WHERE "
        "id=?1)",
    };
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++) {
        if (!(s = fl_store_sqlite_stmt(&c->pub, gone[i])))
            return -1;
        sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
        if (done(s))
            return -1;
    }
    if (left > 0) {
        /* The crash has already moved: what remains decides -- when the
         * crash was the first (last) one; the retention may have removed
         * older (newer) ones, which still happened, and an empty group
         * keeps its times. */
        static const char seen[] =
            "UPDATE groups SET first_seen=CASE WHEN first_seen=?2 THEN coalesce((SELECT "
            "min(received) FROM crashes WHERE group_id=?1), first_seen) ELSE first_seen END,"
            " last_seen=CASE WHEN last_seen=?2 THEN coalesce((SELECT max(received) FROM crashes "
            "WHERE group_id=?1), last_seen) ELSE last_seen END WHERE id=?1";
        static const char other[] =
            "SELECT 1 FROM crashes WHERE group_id=?1 AND install_id=?2 LIMIT 1";
        static const char drop[] = "DELETE FROM group_installs WHERE group_id=?1 AND install_id=?2";
        static const char aff[] = "UPDATE groups SET affected=affected-1 WHERE id=?1 AND affected>0";
        if (!(s = fl_store_sqlite_stmt(&c->pub, seen)))
            return -1;
        sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, p->received);
        if (done(s))
            return -1;
        if (p->install_id) {
            if (!(s = fl_store_sqlite_stmt(&c->pub, other)))
                return -1;
            sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
            sqlite3_bind_text(s, 2, p->install_id, -1, SQLITE_STATIC);
            rc = sqlite3_step(s);
            sqlite3_reset(s);
            if (rc == SQLITE_DONE) { /* the last crash of that install here */
                if (!(s = fl_store_sqlite_stmt(&c->pub, drop)))
                    return -1;
                sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
                sqlite3_bind_text(s, 2, p->install_id, -1, SQLITE_STATIC);
                if (done(s))
                    return -1;
                if (sqlite3_changes(c->db) == 1) {
                    if (!(s = fl_store_sqlite_stmt(&c->pub, aff)))
                        return -1;
                    sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
                    if (done(s))
                        return -1;
                }
            } else if (rc != SQLITE_ROW) {
                return -1;
            }
        }
    }
    if (left == 0)
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
            sqlite3_stmt *d = NULL;
            if (sqlite3_prepare_v2(c->db, all[i], -1, &d, NULL))
                return -1;
            sqlite3_bind_text(d, 1, gid, -1, SQLITE_STATIC);
            rc = sqlite3_step(d);
            sqlite3_finalize(d);
            if (rc != SQLITE_DONE)
                return -1;
        }
    return 0;
}

static int run_texts(sconn *c, const char *sql, const char *a, const char *b);

static int s_reapply(fl_store_conn *pc, const fl_processed *p)
{
    sconn *c = (sconn *)pc;
    if (p->failed)
        return 0; /* keep what the first processing found */
    fl_processed q;
    char cur[64], into[64];
    const char *tgt;
    if (merged_target(c, &p, &q, cur, into, &tgt))
        return -1;
    sqlite3_stmt *s = stmt(c, S_RSTATE);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, p->crash_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(s);
        return rc == SQLITE_DONE ? 0 : -1;
    }
    int state = sqlite3_column_int(s, 0), resym = sqlite3_column_int(s, 1);
    bool arch_counted = sqlite3_column_int(s, 3) != 0;
    char old[64] = "";
    const char *g = (const char *)sqlite3_column_text(s, 2);
    if (g)
        snprintf(old, sizeof old, "%s", g);
    sqlite3_reset(s);
    if (state != 1 || !resym)
        return 0;
    if (old[0] && strcmp(old, p->group_id)) {
        /* Its group is being deleted (its row goes first): the crash stays
         * there to be erased with it, not moved out of reach. */
        if (!(s = fl_store_sqlite_stmt(pc, "SELECT 1 FROM groups WHERE id=?1")))
            return -1;
        sqlite3_bind_text(s, 1, old, -1, SQLITE_STATIC);
        rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc == SQLITE_DONE)
            return run_texts(c, "UPDATE crashes SET resym=0 WHERE id=?1", p->crash_id, NULL);
        if (rc != SQLITE_ROW)
            return -1;
    }
    if (!(s = stmt(c, S_REMARK)))
        return -1;
    sqlite3_bind_text(s, 1, p->crash_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, p->group_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, p->stack_hash, -1, SQLITE_STATIC);
    if (p->zprocessed)
        sqlite3_bind_blob(s, 4, p->zprocessed, (int)p->zprocessed_len, SQLITE_STATIC);
    /* A crash that moves is counted in its new group, architecture and
     * all; one that stays keeps what it had. */
    bool moves = strcmp(old, p->group_id) != 0;
    sqlite3_bind_int(s, 5, moves ? p->arch != NULL : arch_counted);
    if (done(s) || record_missing(c, p))
        return -1;
    if (!moves) {
        /* Same group: only the representative frames may have improved. */
        if (!(s = stmt(c, S_GFRAMES)))
            return -1;
        sqlite3_bind_text(s, 1, p->group_id, -1, SQLITE_STATIC);
        bind_text(s, 2, p->frames_json);
        sqlite3_bind_text(s, 3, p->crash_id, -1, SQLITE_STATIC);
        return done(s);
    }
    if (old[0] && group_remove(c, old, p, arch_counted))
        return -1;
    return group_add(c, p, tgt);
}

/* ---- symbols */

static int s_add_symbol(fl_store_conn *pc, const fl_symbol_rec *r)
{
    sconn *c = (sconn *)pc;
    static const char sql[] = "INSERT INTO symbols(build_id, name, size, status, error, kind, "
                              "path, uploaded) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)";
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, sql);
    if (!s)
        return -1;
    (void)c;
    bind_text(s, 1, r->build_id);
    bind_text(s, 2, r->name);
    sqlite3_bind_int64(s, 3, r->size);
    bind_text(s, 4, r->status ? r->status : "ok");
    bind_text(s, 5, r->error);
    bind_text(s, 6, r->kind);
    bind_text(s, 7, r->path);
    sqlite3_bind_int64(s, 8, r->uploaded);
    return done(s);
}

static json_t *s_list_symbols(fl_store_conn *pc, unsigned limit)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db,
                           "SELECT build_id, name, size, status, error, kind, uploaded FROM symbols "
                           "ORDER BY rid DESC LIMIT ?1",
                           -1, &s, NULL))
        return NULL;
    sqlite3_bind_int(s, 1, (int)(limit ? limit : 1000));
    json_t *a = json_array();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *o = json_object();
        fl_store_symbol_key(o, (const char *)sqlite3_column_text(s, 0));
        json_object_set_new(o, "name", text_json(s, 1));
        json_object_set_new(o, "size", json_integer(sqlite3_column_int64(s, 2)));
        json_object_set_new(o, "status", text_json(s, 3));
        json_object_set_new(o, "error", text_json(s, 4));
        json_object_set_new(o, "kind", text_json(s, 5));
        json_object_set_new(o, "uploaded", time_json(s, 6));
        json_array_append_new(a, o);
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        json_decref(a);
        return NULL;
    }
    return json_pack("{s:o}", "symbols", a);
}

static int s_find_symbol(fl_store_conn *pc, const char *build_id, const char *kind, char *path,
                         size_t cap)
{
    static const char sql[] = "SELECT path FROM symbols WHERE build_id=?1 AND status='ok' AND "
                              "path IS NOT NULL AND (?2 IS NULL OR kind=?2) ORDER BY rid DESC "
                              "LIMIT 1";
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, sql);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, build_id, -1, SQLITE_STATIC);
    bind_text(s, 2, kind);
    int rc = sqlite3_step(s);
    int r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : -1;
    if (r == 0 && (size_t)snprintf(path, cap, "%s", sqlite3_column_text(s, 0)) >= cap)
        r = -1;
    sqlite3_reset(s);
    return r;
}

static int s_symbols_version(fl_store_conn *pc, int64_t *out)
{
    static const char sql[] = "SELECT coalesce(max(rid), 0) FROM symbols";
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, sql);
    if (!s)
        return -1;
    int rc = sqlite3_step(s);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : -1;
}

static int s_late_symbols(fl_store_conn *pc, const fl_processed *p, int64_t seen, bool *requeue)
{
    static const char q[] = "SELECT 1 FROM symbols WHERE build_id=?1 AND status='ok' AND rid>?2";
    static const char mark[] = "UPDATE crashes SET resym=1 WHERE id=?1 AND state=1";
    *requeue = false;
    if (p->failed)
        return 0;
    for (size_t i = 0; i < p->nmissing && !*requeue; i++) {
        sqlite3_stmt *s = fl_store_sqlite_stmt(pc, q);
        if (!s)
            return -1;
        sqlite3_bind_text(s, 1, p->missing_build_ids[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, seen);
        int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return -1;
        *requeue = rc == SQLITE_ROW;
    }
    if (!*requeue)
        return 0;
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, mark);
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, p->crash_id, -1, SQLITE_STATIC);
    return done(s);
}

/* Steps s to its end, its rows' first column into *ids (caller frees
 * each and the array), *n of them; 0, or -1 (nothing returned) when a step
 * or memory failed.  The caller resets or finalizes s. */
static int take_ids(sqlite3_stmt *s, char ***ids, size_t *n)
{
    int rc;
    size_t cap = 0;
    *ids = NULL;
    *n = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **nv = realloc(*ids, nc * sizeof *nv);
            if (!nv)
                break;
            *ids = nv;
            cap = nc;
        }
        if (!((*ids)[*n] = strdup((const char *)sqlite3_column_text(s, 0))))
            break;
        (*n)++;
    }
    if (rc == SQLITE_DONE)
        return 0;
    for (size_t i = 0; i < *n; i++)
        free((*ids)[i]);
    free(*ids);
    *ids = NULL;
    *n = 0;
    return -1;
}

static int s_symbols_arrived(fl_store_conn *pc, const char *build_id, size_t max, char ***ids,
                             size_t *n)
{
    sconn *c = (sconn *)pc;
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db,
                           "UPDATE crashes SET resym=1 WHERE state=1 AND id IN (SELECT crash_id "
                           "FROM crash_missing WHERE build_id=?1 LIMIT ?2) RETURNING id",
                           -1, &s, NULL))
        return -1;
    sqlite3_bind_text(s, 1, build_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
    int rc = take_ids(s, ids, n);
    sqlite3_finalize(s);
    return rc;
}

/* ---- reads */

/* An answer read by several statements reads them in one snapshot: in
 * WAL mode a worker, retention or an operator's change may commit on
 * another connection between two of them, and the answer would then
 * disagree with itself (a crash found nowhere, a total that is not its
 * list's, a count that is not its breakdowns').  *own: read_begin() began
 * the transaction, for read_end() to end; in the caller's transaction,
 * which is one snapshot already, none.  0, or -1 on error. */
static int read_begin(sconn *c, bool *own)
{
    *own = sqlite3_get_autocommit(c->db);
    if (*own && sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        *own = false;
        return -1;
    }
    return 0;
}

/* Never left open: the connection's next begin() would fail, and its
 * snapshot would keep the checkpointer from going past it. */
static void read_end(sconn *c, bool own)
{
    if (own && !sqlite3_get_autocommit(c->db) &&
        sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

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

/* The groups merged into group g (merge_group): their crashes and
 * counters stay theirs, so a group's numbers are its own and its
 * members' together -- summed here, for the few groups that have
 * members (groups_merged indexes them).  Its status, latest version and
 * representative crash are its own row's. */
/* clang-format off */
#define MEMBERS_G "(SELECT m.id FROM groups m WHERE m.merged_into=g.id)"
#define MEMBERS_1 "(SELECT m.id FROM groups m WHERE m.merged_into=?1)"
/* Rows of group ?1 and of its members. */
#define OF_GROUP " WHERE group_id=?1 OR group_id IN " MEMBERS_1
#define GROUP_COLS                                                                                 \
    "g.id, g.app, g.signature,"                                                                    \
    " g.count + coalesce((SELECT sum(m.count) FROM groups m WHERE m.merged_into=g.id), 0) AS n,"   \
    " coalesce(min(g.first_seen, (SELECT min(m.first_seen) FROM groups m"                          \
    "   WHERE m.merged_into=g.id)), g.first_seen) AS fs,"                                          \
    " coalesce(max(g.last_seen, (SELECT max(m.last_seen) FROM groups m"                            \
    "   WHERE m.merged_into=g.id)), g.last_seen) AS ls,"                                           \
    " g.status,"                                                                                   \
    " CASE WHEN EXISTS" MEMBERS_G " THEN (SELECT count(DISTINCT i.install_id) FROM"                \
    "   group_installs i WHERE i.group_id=g.id OR i.group_id IN " MEMBERS_G ")"                    \
    "   ELSE g.affected END,"                                                                      \
    " g.resolved_in, g.latest_version, coalesce(g.project, '" FL_PROJECT_DEFAULT "')"
/* clang-format on */

static json_t *group_row(sqlite3_stmt *s)
{
    json_t *g = json_object();
    json_object_set_new(g, "id", text_json(s, 0));
    json_object_set_new(g, "project", text_json(s, 10));
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

/* instr(lower()) rather than LIKE: no wildcard in q to escape. */
/* clang-format off */
#define GROUPS_WHERE                                                                               \
    " FROM groups g WHERE g.merged_into IS NULL AND (?1 IS NULL OR g.app=?1)"                      \
    " AND (?3 IS NULL OR g.status=?3)"                                                             \
    " AND (?2 IS NULL OR EXISTS(SELECT 1 FROM group_versions v WHERE v.version=?2"                 \
    "   AND (v.group_id=g.id OR v.group_id IN " MEMBERS_G ")))"                                    \
    " AND (?6 IS NULL OR coalesce(g.project, '" FL_PROJECT_DEFAULT "')=?6)"                        \
    " AND (?7 IS NULL OR instr(lower(g.signature), lower(?7)) > 0)"                                \
    " AND (?8 IS NULL OR g.id IN (SELECT coalesce(gg.merged_into, gg.id) FROM group_installs gi"   \
    "   JOIN groups gg ON gg.id=gi.group_id WHERE gi.install_id=?8))"
/* clang-format on */

/* Whether other groups are merged into group id (an error reads as no). */
static bool has_members(sconn *c, const char *id)
{
    sqlite3_stmt *s =
        fl_store_sqlite_stmt(&c->pub, "SELECT 1 FROM groups WHERE merged_into=?1 LIMIT 1");
    if (!s)
        return false;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    bool yes = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_reset(s);
    return yes;
}

static int take_ids(sqlite3_stmt *s, char ***ids, size_t *n);

/* Group id's crashes from offset on, newest first (limit of them; only
 * installation install's when not NULL): a prepared statement of rows
 * (id, received, version, install_id), for the caller to finalize; NULL
 * on error.  A group's own crashes come in the order of its index; with
 * groups merged into it, each group's newest limit + offset, through its
 * index, are merged -- rather than every crash of them sorted, which took
 * 0.24 s for a page of a group merged with one of 100,000. */
static sqlite3_stmt *crash_page(sconn *c, const char *id, const char *install, unsigned limit,
                                unsigned offset)
{
    static const char one[] = "SELECT id, received, version, install_id FROM crashes WHERE "
                              "group_id=?1 AND (?4 IS NULL OR install_id=?4) ORDER BY rid DESC "
                              "LIMIT ?2 OFFSET ?3";
    static const char part[] =
        "SELECT * FROM (SELECT rid, id, received, version, install_id FROM crashes WHERE "
        "group_id=?%zu AND (?4 IS NULL OR install_id=?4) ORDER BY rid DESC LIMIT ?5)";
    char **mem = NULL;
    size_t n = 0;
    sqlite3_stmt *s = fl_store_sqlite_stmt(&c->pub, "SELECT id FROM groups WHERE merged_into=?1");
    if (!s)
        return NULL;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = take_ids(s, &mem, &n);
    sqlite3_reset(s);
    if (rc)
        return NULL;
    /* SQLite's compound SELECTs stop at 500 parts: more members than that
     * (never seen) are read the slow way, all sorted. */
    bool all = n >= 400;
    size_t cap = all ? 512 : (n + 1) * (sizeof part + 8) + 128, len = 0;
    char *sql = n ? malloc(cap) : NULL;
    if (sql && all)
        snprintf(sql, cap,
                 "SELECT id, received, version, install_id FROM crashes WHERE (group_id=?1 OR "
                 "group_id IN " MEMBERS_1 ") AND (?4 IS NULL OR install_id=?4) ORDER BY "
                 "rid DESC LIMIT ?2 OFFSET ?3");
    else if (sql) {
        len = (size_t)snprintf(sql, cap, "SELECT id, received, version, install_id FROM (");
        for (size_t i = 0; i <= n; i++) {
            len += (size_t)snprintf(sql + len, cap - len, i ? " UNION ALL " : "");
            len += (size_t)snprintf(sql + len, cap - len, part, i ? i + 5 : 1);
        }
        snprintf(sql + len, cap - len, ") ORDER BY rid DESC LIMIT ?2 OFFSET ?3");
    }
    s = NULL;
    if ((!n || sql) && sqlite3_prepare_v2(c->db, n ? sql : one, -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 2, limit);
        sqlite3_bind_int64(s, 3, offset);
        bind_text(s, 4, install);
        if (n && !all) {
            sqlite3_bind_int64(s, 5, (int64_t)limit + offset);
            for (size_t i = 0; i < n; i++)
                sqlite3_bind_text(s, (int)i + 6, mem[i], -1, SQLITE_TRANSIENT);
        }
    }
    free(sql);
    for (size_t i = 0; i < n; i++)
        free(mem[i]);
    free(mem);
    return s;
}

static json_t *list_groups_in(sconn *c, const fl_group_filter *f)
{
    /* The page, then how many groups the filter matches (the portal's
     * "1-100 of N"; the groups table holds one row per signature, so the
     * count is cheap next to the page). */
    /* The page is among the groups with members (few) and the first
     * limit + offset of the others by their own column (which is then
     * their sum): the sums are computed for those alone, not for every
     * group matched -- 47 ms a page with 50,000 groups, where the
     * groups_count index takes 0.2 ms.  Which is why a group's own row
     * can be left out of the candidates only when nothing adds to it. */
#define GROUPS_PAGE(own, sum)                                                                      \
    "SELECT " GROUP_COLS GROUPS_WHERE " AND g.id IN (SELECT id FROM (SELECT g.id" GROUPS_WHERE     \
    " AND NOT EXISTS" MEMBERS_G " ORDER BY " own " DESC, g.id LIMIT ?4 + ?5) UNION ALL SELECT "    \
    "merged_into FROM groups WHERE merged_into IS NOT NULL) ORDER BY " sum " DESC, g.id LIMIT ?4 " \
    "OFFSET ?5"
    static const char *const page[] = {
        [FL_SORT_COUNT] = GROUPS_PAGE("g.count", "n"),
        [FL_SORT_LAST_SEEN] = GROUPS_PAGE("g.last_seen", "ls"),
        [FL_SORT_FIRST_SEEN] = GROUPS_PAGE("g.first_seen", "fs"),
    };
    const char *const sql[2] = {page[f->sort <= FL_SORT_FIRST_SEEN ? f->sort : FL_SORT_COUNT],
                                "SELECT count(*)" GROUPS_WHERE}; /* ?4, ?5: bound all the same */
    json_t *arr = json_array();
    json_int_t total = 0;
    for (int q = 0; q < 2; q++) {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(c->db, sql[q], -1, &s, NULL)) {
            json_decref(arr);
            return NULL;
        }
        bind_text(s, 1, f->app);
        bind_text(s, 2, f->version);
        bind_text(s, 3, f->status);
        sqlite3_bind_int(s, 4, (int)f->limit);
        sqlite3_bind_int(s, 5, (int)f->offset);
        bind_text(s, 6, f->project);
        bind_text(s, 7, f->q);
        bind_text(s, 8, f->install);
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            if (q == 0)
                json_array_append_new(arr, group_row(s));
            else
                total = (json_int_t)sqlite3_column_int64(s, 0);
        }
        sqlite3_finalize(s);
        if (rc != SQLITE_DONE) {
            json_decref(arr);
            return NULL;
        }
    }
    return json_pack("{s:o,s:I}", "groups", arr, "total", total);
}

/* The page and its total in one snapshot: a group made or deleted between
 * them made "total" disagree with the page. */
static json_t *s_list_groups(fl_store_conn *pc, const fl_group_filter *f)
{
    sconn *c = (sconn *)pc;
    bool own;
    if (read_begin(c, &own))
        return NULL;
    json_t *out = list_groups_in(c, f);
    read_end(c, own);
    return out;
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

static json_t *get_group_in(sconn *c, const char *asked, bool *notfound)
{
    char id[64];
    int r = group_resolve(c, asked, id);
    if (r) {
        *notfound = r == 1;
        return NULL;
    }
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(
            c->db, "SELECT " GROUP_COLS ", g.frames, g.sample_crash FROM groups g WHERE g.id=?1",
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
    const char *fr = (const char *)sqlite3_column_text(s, 11);
    json_t *frames = fr ? json_loads(fr, 0, NULL) : NULL;
    json_object_set_new(g, "frames", frames ? frames : json_array());
    json_object_set_new(g, "representative_crash", text_json(s, 12));
    sqlite3_finalize(s);

    json_t *a;
    /* Its members' breakdowns added to its own. */
    if ((a = counts(c->db,
                    "SELECT day, sum(count) FROM group_days" OF_GROUP " GROUP BY day ORDER BY day",
                    id, "day")))
        json_object_set_new(g, "days", a);
    if ((a = counts(c->db,
                    "SELECT version, sum(count) AS n FROM group_versions" OF_GROUP
                    " GROUP BY version ORDER BY n DESC, version",
                    id, "version")))
        json_object_set_new(g, "versions", a);
    if ((a = counts(c->db,
                    "SELECT os, sum(count) AS n FROM group_os" OF_GROUP
                    " GROUP BY os ORDER BY n DESC, os",
                    id, "os")))
        json_object_set_new(g, "os", a);
    if ((a = counts(c->db,
                    "SELECT arch, sum(count) AS n FROM group_arch" OF_GROUP
                    " GROUP BY arch ORDER BY n DESC, arch",
                    id, "arch")))
        json_object_set_new(g, "arch", a);
    json_t *samples = json_array();
    if ((s = crash_page(c, id, NULL, 10, 0))) {
        while (sqlite3_step(s) == SQLITE_ROW)
            json_array_append_new(samples, text_json(s, 0));
        sqlite3_finalize(s);
    }
    json_object_set_new(g, "sample_crashes", samples);
    json_t *merged = json_array();
    if (!sqlite3_prepare_v2(c->db,
                            "SELECT id, signature FROM groups WHERE merged_into=?1 ORDER BY id", -1,
                            &s, NULL)) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        while (sqlite3_step(s) == SQLITE_ROW)
            json_array_append_new(merged, json_pack("{s:o,s:o}", "id", text_json(s, 0), "signature",
                                                    text_json(s, 1)));
        sqlite3_finalize(s);
    }
    json_object_set_new(g, "merged", merged);
    return g;
}

/* The group in one snapshot: a crash processed, or a merge, between its
 * row and its breakdowns made its count disagree with them. */
static json_t *s_get_group(fl_store_conn *pc, const char *asked, bool *notfound)
{
    sconn *c = (sconn *)pc;
    bool own;
    *notfound = false;
    if (read_begin(c, &own))
        return NULL;
    json_t *out = get_group_in(c, asked, notfound);
    read_end(c, own);
    return out;
}

static json_t *get_crash_in(sconn *c, const char *id, bool *notfound);

/* The crash in one snapshot: a worker may move it from the inbox to
 * crashes between the two lookups, which would then both miss it. */
static json_t *s_get_crash(fl_store_conn *pc, const char *id, bool *notfound)
{
    sconn *c = (sconn *)pc;
    bool own;
    *notfound = false;
    if (read_begin(c, &own))
        return NULL;
    json_t *out = get_crash_in(c, id, notfound);
    read_end(c, own);
    return out;
}

static json_t *get_crash_in(sconn *c, const char *id, bool *notfound)
{
    *notfound = false;
    /* Processed, or else still in the inbox (found by a walk over it, the
     * backlog): the same columns from either. */
    static const char *const q[2] = {
        /* The group the crash shows in: its own, or the one that was
         * merged into (merge_group leaves the crash in its own). */
        "SELECT raw, state, coalesce((SELECT merged_into FROM groups WHERE id=crashes.group_id), "
        "group_id), stack_hash, processed, received, app, version, chunk, "
        "chunk_off, raw_len, email, coalesce(project, '" FL_PROJECT_DEFAULT "'), "
        "(SELECT size FROM minidumps WHERE crash_id=?1) FROM crashes WHERE id=?1",
        "SELECT X'', 0, NULL, NULL, NULL, received, app, version, chunk, chunk_off, raw_len, "
        "email, coalesce(project, '" FL_PROJECT_DEFAULT "'), (SELECT size FROM minidumps WHERE "
        "crash_id=?1) FROM inbox WHERE id=?1 ORDER BY rid LIMIT 1"};
    sqlite3_stmt *s = NULL;
    int rc = SQLITE_DONE;
    for (int i = 0; i < 2 && rc == SQLITE_DONE; i++) {
        sqlite3_finalize(s);
        s = NULL;
        if (sqlite3_prepare_v2(c->db, q[i], -1, &s, NULL))
            return NULL;
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        rc = sqlite3_step(s);
    }
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(s);
        *notfound = rc == SQLITE_DONE;
        return NULL;
    }
    json_t *out = NULL;
    char *raw = NULL, *proc = NULL;
    size_t rl, pl;
    if (sqlite3_column_int(s, 1) == 3) { /* deleted: what is left of it */
        out = json_object();
        json_object_set_new(out, "id", json_string(id));
        json_object_set_new(out, "project", text_json(s, 12));
        json_object_set_new(out, "state", json_string("deleted"));
        json_object_set_new(out, "received", time_json(s, 5));
        json_object_set_new(out, "app", text_json(s, 6));
        json_object_set_new(out, "version", text_json(s, 7));
        goto out;
    }
    if (row_raw(c, sqlite3_column_type(s, 8) == SQLITE_NULL, sqlite3_column_int64(s, 8),
                (uint64_t)sqlite3_column_int64(s, 9), (uint64_t)sqlite3_column_int64(s, 10),
                sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0), &raw, &rl))
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
    json_object_set_new(out, "project", text_json(s, 12));
    json_object_set_new(out, "state", json_string(state == 0   ? "pending"
                                                  : state == 1 ? "processed"
                                                               : "failed"));
    json_object_set_new(out, "group_id", text_json(s, 2));
    json_object_set_new(out, "stack_hash", text_json(s, 3));
    json_object_set_new(out, "received", time_json(s, 5));
    json_object_set_new(out, "app", text_json(s, 6));
    json_object_set_new(out, "version", text_json(s, 7));
    json_object_set_new(out, "email", text_json(s, 11));
    json_object_set_new(out, "raw", fl_json_text(raw, rl));
    if (sqlite3_column_type(s, 13) != SQLITE_NULL) /* the minidump it was made from, kept */
        json_object_set_new(out, "minidump_bytes", json_integer(sqlite3_column_int64(s, 13)));
out:
    free(raw);
    free(proc);
    sqlite3_finalize(s);
    return out;
}

static json_t *group_crashes_in(sconn *c, const char *asked, const char *install, unsigned limit,
                                unsigned offset, bool *notfound)
{
    char id[64];
    int r = group_resolve(c, asked, id);
    if (r) {
        *notfound = r == 1;
        return NULL;
    }
    sqlite3_stmt *s = NULL;
    /* Its crashes and its members' (a merge leaves them where they are);
     * one group's alone in the order of its index. */
    bool mem = has_members(c, id);
    if (sqlite3_prepare_v2(
            c->db,
            mem ? "SELECT (SELECT count(*) FROM groups WHERE id=?1), (SELECT count(*) "
                  "FROM crashes WHERE (group_id=?1 OR group_id IN " MEMBERS_1
                  ") AND (?2 IS NULL OR install_id=?2))"
                : "SELECT (SELECT count(*) FROM groups WHERE id=?1), (SELECT count(*) "
                  "FROM crashes WHERE group_id=?1 AND (?2 IS NULL OR install_id=?2))",
            -1, &s, NULL))
        return NULL;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    bind_text(s, 2, install);
    int rc = sqlite3_step(s);
    bool exists = rc == SQLITE_ROW && sqlite3_column_int64(s, 0) > 0;
    int64_t total = rc == SQLITE_ROW ? sqlite3_column_int64(s, 1) : 0;
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW)
        return NULL;
    if (!exists) {
        *notfound = true;
        return NULL;
    }
    if (!(s = crash_page(c, id, install, limit, offset)))
        return NULL;
    json_t *arr = json_array();
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        json_array_append_new(arr, json_pack("{s:o,s:o,s:o,s:o}", "id", text_json(s, 0), "received",
                                             time_json(s, 1), "version", text_json(s, 2),
                                             "installation", text_json(s, 3)));
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return NULL;
    }
    return json_pack("{s:o,s:I}", "crashes", arr, "total", (json_int_t)total);
}

/* The total and the page in one snapshot: a crash processed, expired or
 * deleted between them made "total" disagree with the page. */
static json_t *s_group_crashes(fl_store_conn *pc, const char *asked, const char *install,
                               unsigned limit, unsigned offset, bool *notfound)
{
    sconn *c = (sconn *)pc;
    bool own;
    *notfound = false;
    if (read_begin(c, &own))
        return NULL;
    json_t *out = group_crashes_in(c, asked, install, limit, offset, notfound);
    read_end(c, own);
    return out;
}

/* ---- projects (fl_store.h) */

/* Runs sql with text parameters v[0..n) (NULL: SQL NULL) and int64 last;
 * returns the changes it made, or -1. */
static int exec_changes(sconn *c, const char *sql, int n, const char *const *v, int64_t last)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL))
        return -1;
    for (int i = 0; i < n; i++)
        bind_static(s, i + 1, v[i]);
    if (sqlite3_bind_parameter_count(s) > n)
        sqlite3_bind_int64(s, n + 1, last);
    int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? sqlite3_changes(c->db) : -1;
}

static int s_add_project(fl_store_conn *pc, const char *id, const char *key, int64_t now)
{
    sconn *c = (sconn *)pc;
    /* Both rows or neither: its own transaction unless in the caller's. */
    bool own = sqlite3_get_autocommit(c->db);
    if (own && sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    int rc = exec_changes(c, "INSERT INTO projects VALUES(?1, ?2) ON CONFLICT DO NOTHING", 1,
                          (const char *const[]){id}, now);
    if (rc == 1 && exec_changes(c, "INSERT INTO project_keys VALUES(?1, ?2, ?3)", 2,
                                (const char *const[]){key, id}, now) != 1)
        rc = -1;
    rc = rc < 0 ? -1 : rc == 1 ? 0 : 1;
    if (own && sqlite3_exec(c->db, rc < 0 ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = -1;
    return rc;
}

static int s_add_project_key(fl_store_conn *pc, const char *id, const char *key, int64_t now)
{
    int rc = exec_changes((sconn *)pc,
                          "INSERT INTO project_keys SELECT ?1, id, ?3 FROM projects WHERE id=?2", 2,
                          (const char *const[]){key, id}, now);
    return rc < 0 ? -1 : rc == 1 ? 0 : 1;
}

static int s_revoke_project_key(fl_store_conn *pc, const char *id, const char *key)
{
    int rc = exec_changes((sconn *)pc, "DELETE FROM project_keys WHERE key=?1 AND project=?2", 2,
                          (const char *const[]){key, id}, 0);
    return rc < 0 ? -1 : rc == 1 ? 0 : 1;
}

static json_t *s_list_projects(fl_store_conn *pc)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db,
                           "SELECT p.id, p.created, k.key, k.created FROM projects p LEFT JOIN "
                           "project_keys k ON k.project=p.id ORDER BY p.id, k.created, k.key",
                           -1, &s, NULL))
        return NULL;
    json_t *arr = json_array(), *cur = NULL;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        if (!cur || strcmp(json_string_value(json_object_get(cur, "id")), id)) {
            cur = json_pack("{s:s,s:o,s:[]}", "id", id, "created", time_json(s, 1), "keys");
            json_array_append_new(arr, cur);
        }
        if (sqlite3_column_type(s, 2) != SQLITE_NULL)
            json_array_append_new(json_object_get(cur, "keys"),
                                  json_pack("{s:s,s:o}", "key", sqlite3_column_text(s, 2),
                                            "created", time_json(s, 3)));
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return NULL;
    }
    return json_pack("{s:o}", "projects", arr);
}

static int s_set_status(fl_store_conn *pc, const char *id, const char *status,
                        const char *resolved_in)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s = NULL;
    char gid[64];
    int r = group_resolve(c, id, gid);
    if (r)
        return r;
    id = gid;
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

static int s_merge_group(fl_store_conn *pc, const char *into_id, const char *from_id)
{
    sconn *c = (sconn *)pc;
    char into[64], from[64];
    int r = group_resolve(c, into_id, into);
    if (r)
        return r;
    if ((r = group_resolve(c, from_id, from)))
        return r < 0 ? r : 2;
    if (!strcmp(into, from))
        return 4;
    /* An application's groups only: the API filters and the trends are
     * per project and application.  The versions compare in C (fl_vercmp),
     * read in place. */
    sqlite3_stmt *s = fl_store_sqlite_stmt(
        pc, "SELECT coalesce(t.project, '') = coalesce(f.project, '') AND t.app IS f.app, "
            "t.latest_version, f.latest_version FROM groups t, groups f WHERE t.id=?1 AND f.id=?2");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, into, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, from, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_ROW) {
        sqlite3_reset(s);
        return -1;
    }
    bool same = sqlite3_column_int(s, 0);
    const char *tl = (const char *)sqlite3_column_text(s, 1);
    const char *fl = (const char *)sqlite3_column_text(s, 2);
    bool newer = fl && (!tl || fl_vercmp(fl, tl) > 0);
    sqlite3_reset(s);
    if (!same)
        return 3;
    /* Group rows only, however many crashes: from's crashes, counters,
     * breakdowns and installations stay its own, and into's reads add
     * them up (GROUP_COLS, MEMBERS_G), so that a merge holds the writer
     * for as long as an ingest commit, not for a second per 100,000
     * crashes (docs/operations.md), and an unmerge has nothing to move
     * back.  into's latest version is the newest of its members'. */
    static const char *const steps[] = {
        "UPDATE groups SET latest_version=(SELECT latest_version FROM groups WHERE id=?2) "
        "WHERE id=?1 AND ?3",
        /* A "new group" notice of a group merged away would announce an
         * old group as new: the merge says it is not new (regressions
         * still go, for the group they now belong to). */
        "DELETE FROM notices WHERE group_id=?2 AND kind='" FL_NOTICE_NEW_GROUP "'",
        "UPDATE notices SET group_id=?1 WHERE group_id=?2",
        "UPDATE groups SET merged_into=?1 WHERE merged_into=?2",
        "UPDATE groups SET merged_into=?1 WHERE id=?2",
    };
    /* Prepared each time: a merge is rare, and the connection's cache of
     * statements (fl_store_sqlite_stmt) is for the frequent ones. */
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(c->db, steps[i], -1, &st, NULL))
            return -1;
        sqlite3_bind_text(st, 1, into, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, from, -1, SQLITE_STATIC);
        if (sqlite3_bind_parameter_count(st) >= 3)
            sqlite3_bind_int(st, 3, newer);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return -1;
    }
    return 0;
}

static int run_texts(sconn *c, const char *sql, const char *a, const char *b);

/* Whether group id is merged into another: 0 with its id in out (64
 * bytes), 2 when it is not, 1 when there is no such group, -1 on error. */
static int merged_into(fl_store_conn *pc, const char *id, char *out)
{
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, "SELECT merged_into FROM groups WHERE id=?1");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    const char *mi = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    if (mi)
        snprintf(out, 64, "%s", mi);
    sqlite3_reset(s);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? 1 : -1;
    return mi ? 0 : 2;
}

/* Group id's latest version seen, again from its versions and its
 * members' (after an unmerge took some away); kept when none is known. */
static int latest_again(sconn *c, const char *id)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db, "SELECT DISTINCT version FROM group_versions" OF_GROUP, -1, &s,
                           NULL))
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    char *best = NULL;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        if (v && (!best || fl_vercmp(v, best) > 0)) {
            free(best);
            if (!(best = strdup(v))) {
                rc = SQLITE_NOMEM;
                break;
            }
        }
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        free(best);
        return -1;
    }
    int r = best ? run_texts(c, "UPDATE groups SET latest_version=?2 WHERE id=?1", id, best) : 0;
    free(best);
    return r;
}

static int s_unmerge_group(fl_store_conn *pc, const char *id, char *from, char ***ids, size_t *n)
{
    sconn *c = (sconn *)pc;
    *ids = NULL;
    *n = 0;
    int rc = merged_into(pc, id, from);
    if (rc)
        return rc;
    if (run_texts(c, "UPDATE groups SET merged_into=NULL WHERE id=?1", id, NULL) ||
        latest_again(c, id) || latest_again(c, from))
        return -1;
    /* Its crashes and counters never left it -- except those a merge of
     * generation 4 or before moved into from (sig_group: crashes_moved):
     * those are marked as requeue() marks one crash, processed again, and
     * moved back by reapply(), counters and all. */
    sqlite3_stmt *s;
    if (!(s = fl_store_sqlite_stmt(pc, "UPDATE crashes SET resym=1 WHERE sig_group=?2 AND "
                                       "group_id=?1 AND state=1 AND resym=0 RETURNING id")))
        return -1;
    sqlite3_bind_text(s, 1, from, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, id, -1, SQLITE_STATIC);
    rc = take_ids(s, ids, n);
    sqlite3_reset(s);
    return rc;
}

static int s_processing_started(fl_store_conn *pc, const char *ref, unsigned *before)
{
    sqlite3_stmt *s = fl_store_sqlite_stmt(
        pc, "INSERT INTO processing VALUES(?1, 1) ON CONFLICT DO UPDATE SET starts=starts+1 "
            "RETURNING starts");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, ref, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *before = (unsigned)sqlite3_column_int(s, 0) - 1;
    /* Stepped to the end, so that the autocommit transaction commits. */
    while (rc == SQLITE_ROW)
        rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int s_requeue(fl_store_conn *pc, const char *id)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s;
    int state;
    if (crash_state(c, id, &state))
        return -1;
    if (state < 0) {
        int64_t rid;
        int r = inbox_rid(c, id, &rid);
        return r < 0 ? -1 : r ? 2 : 1;
    }
    if (state == 0)
        return 2;
    if (state == 3)
        return 3;
    if (state == 1) {
        /* As symbols_arrived(): load_raw() then hands it out again, and
         * reapply() moves it to its new group if the signature changed. */
        if (!(s = fl_store_sqlite_stmt(pc, "UPDATE crashes SET resym=1 WHERE id=?1 AND resym=0")))
            return -1;
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        if (done(s))
            return -1;
        return sqlite3_changes(c->db) ? 0 : 2; /* queued to be processed again already */
    }
    /* Failed: processed as if new, counted in its group then.  What the
     * watch of a report that stopped the server knew goes too. */
    if (!(s = fl_store_sqlite_stmt(pc, "UPDATE crashes SET state=0 WHERE id=?1")))
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    if (done(s))
        return -1;
    return s_processing_ended(pc, id);
}

/* ---- deleting crashes (fl_store.h) */

/* Runs sql (a literal: cached by its address) with text a and, when not
 * NULL, text b. */
static int run_texts(sconn *c, const char *sql, const char *a, const char *b)
{
    sqlite3_stmt *s = fl_store_sqlite_stmt(&c->pub, sql);
    if (!s)
        return -1;
    bind_static(s, 1, a);
    if (b)
        bind_static(s, 2, b);
    return done(s);
}

/* Drops chunk id when nothing points into it any more (S_CHUNKDROP). */
static int chunk_drop(sconn *c, int64_t chunk)
{
    sqlite3_stmt *s = stmt(c, S_CHUNKDROP);
    if (!s)
        return -1;
    sqlite3_bind_int64(s, 1, chunk);
    if (done(s))
        return -1;
    if (sqlite3_changes(c->db) && chunk == c->chunk_id) {
        free(c->chunk);
        c->chunk = NULL;
        c->chunk_id = 0;
    }
    return 0;
}

/* A slice of a chunk's logs: one crash's raw log. */
typedef struct slice {
    uint64_t off, len;
} slice;

/* Overwrites the n slices v of chunk's logs with zeros, leaving the other
 * logs where their rows say they are: what a deleted crash's raw log held
 * is then gone from the database, not only unreachable.  One pass of
 * decompressing and compressing the chunk, however many slices. */
static int chunk_blank_all(sconn *c, int64_t chunk, const slice *v, size_t n)
{
    sqlite3_stmt *s = stmt(c, S_CHUNKGET);
    if (!s)
        return -1;
    sqlite3_bind_int64(s, 1, chunk);
    int st = sqlite3_step(s);
    if (st != SQLITE_ROW) {
        sqlite3_reset(s);
        return st == SQLITE_DONE ? 0 : -1; /* gone already: nothing to blank */
    }
    char *text = NULL;
    size_t tl = 0;
    int r = fl_unzstd(sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0),
                      MAX_RAW + CHUNK_MAX, &text, &tl);
    sqlite3_reset(s);
    if (r) { /* damaged (no log of it can be read): not kept either */
        if (!(s = fl_store_sqlite_stmt(&c->pub, "DELETE FROM raw_chunks WHERE id=?1")))
            return -1;
        sqlite3_bind_int64(s, 1, chunk);
        return done(s);
    }
    for (size_t i = 0; i < n; i++)
        if (v[i].off <= tl && v[i].len <= tl - v[i].off)
            memset(text + v[i].off, 0, v[i].len);
    void *z = NULL;
    size_t zl = 0;
    r = fl_zstd(text, tl, FL_RAW_ZSTD_LEVEL, &z, &zl);
    free(text);
    if (r)
        return -1;
    r = -1;
    if ((s = fl_store_sqlite_stmt(&c->pub, "UPDATE raw_chunks SET data=?2 WHERE id=?1"))) {
        sqlite3_bind_int64(s, 1, chunk);
        sqlite3_bind_blob(s, 2, z, (int)zl, SQLITE_STATIC);
        r = done(s);
    }
    free(z);
    if (chunk == c->chunk_id) {
        free(c->chunk);
        c->chunk = NULL;
        c->chunk_id = 0;
    }
    return r;
}

static int chunk_blank(sconn *c, int64_t chunk, uint64_t off, uint64_t len)
{
    slice one = {off, len};
    return chunk_blank_all(c, chunk, &one, 1);
}

static int delete_crash(sconn *c, const char *id, bool blank);

/* With secure_delete, the pages the deletion frees are zeroed too, not
 * only left for reuse with the old bytes in them. */
static int s_delete_crash(fl_store_conn *pc, const char *id)
{
    sconn *c = (sconn *)pc;
    if (sqlite3_exec(c->db, "PRAGMA secure_delete=ON", NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    int r = delete_crash(c, id, true);
    sqlite3_exec(c->db, "PRAGMA secure_delete=OFF", NULL, NULL, NULL);
    return r;
}

/* blank: overwrite the raw log in its chunk (false: the caller did, for
 * many crashes of a chunk at once). */
static int delete_crash(sconn *c, const char *id, bool blank)
{
    fl_store_conn *pc = &c->pub;
    if (run_texts(c, "DELETE FROM minidumps WHERE crash_id=?1", id, NULL))
        return -1;
    sqlite3_stmt *s = fl_store_sqlite_stmt(
        pc, "SELECT rid, state, chunk, chunk_off, raw_len, group_id FROM crashes WHERE id=?1");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        int64_t rid = sqlite3_column_int64(s, 0);
        int state = sqlite3_column_int(s, 1);
        bool has_chunk = sqlite3_column_type(s, 2) != SQLITE_NULL;
        int64_t chunk = sqlite3_column_int64(s, 2);
        uint64_t off = (uint64_t)sqlite3_column_int64(s, 3);
        uint64_t len = (uint64_t)sqlite3_column_int64(s, 4);
        const unsigned char *g = sqlite3_column_text(s, 5);
        char gid[64];
        snprintf(gid, sizeof gid, "%s", g ? (const char *)g : "");
        sqlite3_reset(s);
        if (state == 3)
            return 2;
        if (has_chunk && blank && chunk_blank(c, chunk, off, len))
            return -1;
        if (!(s = fl_store_sqlite_stmt(
                  pc, "UPDATE crashes SET state=3, resym=0, raw=X'', raw_len=0, chunk=NULL, "
                      "chunk_off=NULL, processed=NULL, email=NULL, install_id=NULL, "
                      "group_id=NULL, stack_hash=NULL WHERE rid=?1")))
            return -1;
        sqlite3_bind_int64(s, 1, rid);
        if (done(s) || run_texts(c, "DELETE FROM crash_missing WHERE crash_id=?1", id, NULL) ||
            run_texts(c, "DELETE FROM processing WHERE ref=?1", id, NULL))
            return -1;
        if (gid[0] && run1(c, S_SAMPLE, gid, id))
            return -1;
        return has_chunk ? chunk_drop(c, chunk) : 0;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return -1;
    /* Not processed yet: a row of the id in crashes (so that its task, and
     * any resend, finds it taken) and every copy in the inbox gone. */
    if (!(s = fl_store_sqlite_stmt(
              pc, "INSERT INTO crashes(id, app, version, received, raw, raw_len, state, project) "
                  "SELECT id, app, version, received, X'', 0, 3, project FROM inbox WHERE id=?1 "
                  "ORDER BY rid LIMIT 1")))
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    if (done(s))
        return -1;
    if (!sqlite3_changes(c->db))
        return 1;
    for (;;) {
        if (!(s = fl_store_sqlite_stmt(
                  pc, "SELECT rid, chunk, chunk_off, raw_len FROM inbox WHERE id=?1 LIMIT 1")))
            return -1;
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        if ((rc = sqlite3_step(s)) != SQLITE_ROW) {
            sqlite3_reset(s);
            return rc == SQLITE_DONE ? 0 : -1;
        }
        int64_t rid = sqlite3_column_int64(s, 0), chunk = sqlite3_column_int64(s, 1);
        uint64_t off = (uint64_t)sqlite3_column_int64(s, 2);
        uint64_t len = (uint64_t)sqlite3_column_int64(s, 3);
        sqlite3_reset(s);
        char ref[FL_CRASH_ID_MAX];
        ref_of(ref, rid);
        if (chunk_blank(c, chunk, off, len) || !(s = stmt(c, S_IDEL)))
            return -1;
        sqlite3_bind_int64(s, 1, rid);
        if (done(s) || run_texts(c, "DELETE FROM processing WHERE ref=?1", ref, NULL) ||
            chunk_drop(c, chunk))
            return -1;
    }
}

static int s_get_minidump(fl_store_conn *pc, const char *id, char **data, size_t *len)
{
    sconn *c = (sconn *)pc;
    *data = NULL;
    *len = 0;
    sqlite3_stmt *s =
        fl_store_sqlite_stmt(pc, "SELECT size, data FROM minidumps WHERE crash_id=?1");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s), r = 1;
    if (rc == SQLITE_ROW) {
        size_t want = (size_t)sqlite3_column_int64(s, 0);
        r = 0;
        if (fl_unzstd(sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1),
                      FL_MINIDUMP_MAX, data, len) ||
            *len != want) {
            r = -1;
            free(*data);
            *data = NULL;
            snprintf(c->err, sizeof c->err, "the stored minidump of %s is damaged", id);
        }
    } else if (rc != SQLITE_DONE) {
        r = -1;
    }
    sqlite3_reset(s);
    return r;
}

static int s_expire(fl_store_conn *pc, int64_t before, size_t max, size_t *n)
{
    sconn *c = (sconn *)pc;
    *n = 0;
    sqlite3_stmt *s = stmt(c, S_EXPSEL);
    if (!s)
        return -1;
    sqlite3_bind_int64(s, 1, before);
    sqlite3_bind_int64(s, 2, (int64_t)max);
    /* Read first (the rows are deleted below, under the cursor). */
    struct gone {
        int64_t rid, chunk;
        char id[FL_CRASH_ID_MAX], gid[64];
    } *g = calloc(max ? max : 1, sizeof *g);
    if (!g) {
        sqlite3_reset(s);
        return -1;
    }
    size_t k = 0;
    int rc;
    while (k < max && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const unsigned char *id = sqlite3_column_text(s, 1), *gid = sqlite3_column_text(s, 3);
        g[k].rid = sqlite3_column_int64(s, 0);
        g[k].chunk = sqlite3_column_type(s, 2) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 2);
        snprintf(g[k].id, sizeof g[k].id, "%s", id ? (const char *)id : "");
        snprintf(g[k].gid, sizeof g[k].gid, "%s", gid ? (const char *)gid : "");
        k++;
    }
    sqlite3_reset(s);
    int r = k < max && rc != SQLITE_DONE ? -1 : 0;
    for (size_t i = 0; i < k && !r; i++) {
        if (!(s = stmt(c, S_EXPDEL))) {
            r = -1;
            break;
        }
        sqlite3_bind_int64(s, 1, g[i].rid);
        r = done(s) || run1(c, S_MISSDEL, g[i].id, NULL) ||
            run_texts(c, "DELETE FROM minidumps WHERE crash_id=?1", g[i].id, NULL) ||
            (g[i].gid[0] && run1(c, S_SAMPLE, g[i].gid, g[i].id));
    }
    /* Each chunk once (a batch's crashes share theirs, and arrive in
     * order: neighbours). */
    for (size_t i = 0; i < k && !r; i++)
        if (g[i].chunk && (i == 0 || g[i].chunk != g[i - 1].chunk))
            r = chunk_drop(c, g[i].chunk);
    free(g);
    if (!r)
        *n = k;
    return r ? -1 : 0;
}

/* ---- deleting a group (fl_store.h's delete_group) */

/* Group gid goes (its crashes stay, to be erased by delete_group_step):
 * its signature's next crash takes generation gen + 1 of its base id, and
 * a tombstone keeps gid (of: the group it was merged into and deleted
 * with, or NULL). */
static int group_bury(sconn *c, const char *gid, const char *of, int64_t now)
{
    fl_store_conn *pc = &c->pub;
    char base[64], cur[33];
    int64_t gen = 1;
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, "SELECT base, gen FROM group_gen WHERE cur=?1");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    snprintf(base, sizeof base, "%s",
             rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : gid);
    if (rc == SQLITE_ROW)
        gen = sqlite3_column_int64(s, 1) + 1;
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return -1;
    fl_group_gen_id(base, gen, cur);
    if (!(s = fl_store_sqlite_stmt(pc, "INSERT INTO group_gen VALUES(?1,?2,?3) ON CONFLICT(base) "
                                       "DO UPDATE SET gen=excluded.gen, cur=excluded.cur")))
        return -1;
    sqlite3_bind_text(s, 1, base, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, gen);
    sqlite3_bind_text(s, 3, cur, -1, SQLITE_STATIC);
    if (done(s))
        return -1;
    if (!(s = fl_store_sqlite_stmt(pc, "INSERT INTO groups_deleted(id, deleted, done, of_group) "
                                       "VALUES(?1,?2,?3,?4) ON CONFLICT DO NOTHING")))
        return -1;
    sqlite3_bind_text(s, 1, gid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, now);
    sqlite3_bind_int(s, 3, 0); /* a merged group's crashes are erased with of's */
    bind_text(s, 4, of);
    return done(s);
}

static int s_delete_group(fl_store_conn *pc, const char *id, char *into)
{
    sconn *c = (sconn *)pc;
    int rc = merged_into(pc, id, into);
    if (rc <= 0)
        return rc < 0 ? -1 : 3; /* merged: refused */
    if (rc == 1) {
        int64_t when, n;
        bool fin;
        char of[64];
        int r = pc->store->group_deleted(pc, id, &when, &n, &fin, of);
        return r < 0 ? -1 : r == 1 ? 1 : fin ? 2 : 0;
    }
    /* The groups merged into it first (their ids read before the rows go). */
    char **ids = NULL;
    size_t n = 0;
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, "SELECT id FROM groups WHERE merged_into=?1");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = take_ids(s, &ids, &n);
    sqlite3_reset(s);
    int64_t now = fl_now();
    /* Each one's rows, its own and its members' (merge_group leaves them
     * theirs); their crashes and installations go by steps. */
    static const char *const gone[] = {
        "DELETE FROM groups WHERE id=?1",
        "DELETE FROM group_days WHERE group_id=?1",
        "DELETE FROM group_versions WHERE group_id=?1",
        "DELETE FROM group_os WHERE group_id=?1",
        "DELETE FROM group_arch WHERE group_id=?1",
        "DELETE FROM notices WHERE group_id=?1",
    };
    for (size_t i = 0; i <= n && !rc; i++) {
        const char *gid = i < n ? ids[i] : id;
        rc = group_bury(c, gid, i < n ? id : NULL, now);
        for (size_t j = 0; j < sizeof gone / sizeof *gone && !rc; j++)
            rc = run_texts(c, gone[j], gid, NULL);
    }
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    return rc ? -1 : 0;
}

/* Chunks whose logs one step of a group's delete blanks: each costs a
 * decompression and a compression of up to CHUNK_MAX bytes of logs
 * (~3 ms), in the transaction that holds the only writer.  A group's
 * crashes are spread over the chunks of every batch they came in, one or
 * two to a chunk when the group is a small part of the traffic: 1,000
 * crashes to a step took 4 s.  8 chunks keep a step to 30..60 ms (8 KiB
 * logs, 256 KiB chunks; the group a 50th, a quarter or all of them). */
#define DELETE_STEP_CHUNKS 8

static int s_delete_group_step(fl_store_conn *pc, const char *id, size_t max, size_t *n, bool *more)
{
    sconn *c = (sconn *)pc;
    *n = 0;
    *more = true;
    if (!max)
        return 0;
    /* The crashes of the group and of those merged into it (their
     * tombstones name it), a group at a time in the order of its index. */
    sqlite3_stmt *s = fl_store_sqlite_stmt(
        pc, "SELECT id, chunk, chunk_off, raw_len FROM crashes WHERE group_id=?1 OR group_id IN "
            "(SELECT id FROM groups_deleted WHERE of_group=?1) LIMIT ?2");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)max);
    struct gone {
        char id[FL_CRASH_ID_MAX];
        int64_t chunk; /* 0: none */
        slice sl;
    } *g = calloc(max, sizeof *g);
    int64_t chunks[DELETE_STEP_CHUNKS];
    size_t k = 0, nch = 0;
    bool full = false; /* stopped at max crashes or at DELETE_STEP_CHUNKS chunks */
    int rc = g ? SQLITE_ROW : SQLITE_NOMEM;
    while (g && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t ch = sqlite3_column_type(s, 1) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 1);
        size_t j = 0;
        while (ch && j < nch && chunks[j] != ch)
            j++;
        if (ch && j == nch) {
            if (nch == DELETE_STEP_CHUNKS) {
                full = true;
                break;
            }
            chunks[nch++] = ch;
        }
        const unsigned char *cid = sqlite3_column_text(s, 0);
        snprintf(g[k].id, sizeof g[k].id, "%s", cid ? (const char *)cid : "");
        g[k].chunk = ch;
        g[k].sl.off = (uint64_t)sqlite3_column_int64(s, 2);
        g[k].sl.len = (uint64_t)sqlite3_column_int64(s, 3);
        if (++k == max) {
            full = true;
            break;
        }
    }
    sqlite3_reset(s);
    if (!g || (rc != SQLITE_ROW && rc != SQLITE_DONE)) {
        free(g);
        return -1;
    }
    int r = 0;
    slice *sl = calloc(k ? k : 1, sizeof *sl);
    if (!sl || sqlite3_exec(c->db, "PRAGMA secure_delete=ON", NULL, NULL, NULL) != SQLITE_OK)
        r = -1;
    /* Each chunk once, its slices together; then the rows. */
    for (size_t j = 0; j < nch && !r; j++) {
        size_t m = 0;
        for (size_t i = 0; i < k; i++)
            if (g[i].chunk == chunks[j])
                sl[m++] = g[i].sl;
        r = chunk_blank_all(c, chunks[j], sl, m);
    }
    for (size_t i = 0; i < k && !r; i++)
        r = delete_crash(c, g[i].id, false) < 0 ? -1 : 0;
    if (sl)
        sqlite3_exec(c->db, "PRAGMA secure_delete=OFF", NULL, NULL, NULL);
    free(sl);
    free(g);
    if (r)
        return -1;
    bool last = false;
    if (!full) {
        /* No crash left: the installations, as many as crashes would be. */
        if (!(s = fl_store_sqlite_stmt(
                  pc, "DELETE FROM group_installs WHERE (group_id, install_id) IN (SELECT "
                      "group_id, install_id FROM group_installs WHERE group_id=?1 OR group_id IN "
                      "(SELECT id FROM groups_deleted WHERE of_group=?1) LIMIT ?2)")))
            return -1;
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, (int64_t)(max - k));
        if (done(s))
            return -1;
        last = (size_t)sqlite3_changes(c->db) < max - k;
    }
    if (!(s = fl_store_sqlite_stmt(pc, "UPDATE groups_deleted SET crashes=crashes+(id=?1)*?2, "
                                       "done=?3 WHERE id=?1 OR of_group=?1")))
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)k);
    sqlite3_bind_int(s, 3, last);
    if (done(s))
        return -1;
    *n = k;
    *more = !last;
    return 0;
}

static int s_group_deleted(fl_store_conn *pc, const char *id, int64_t *when, int64_t *crashes,
                           bool *fin, char *with)
{
    sqlite3_stmt *s = fl_store_sqlite_stmt(
        pc, "SELECT deleted, crashes, done, of_group FROM groups_deleted WHERE id=?1");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *when = sqlite3_column_int64(s, 0);
        *crashes = sqlite3_column_int64(s, 1);
        *fin = sqlite3_column_int(s, 2);
        const unsigned char *o = sqlite3_column_text(s, 3);
        snprintf(with, 64, "%s", o ? (const char *)o : "");
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : -1;
}

/* ---- notifications (fl_store.h) */

static int s_notices_claim(fl_store_conn *pc, int64_t now, unsigned lease_s, int64_t max_wait_s,
                           size_t max, fl_notice *out, size_t *n)
{
    sconn *c = (sconn *)pc;
    *n = 0;
    if (s_begin(pc))
        return -1;
    sqlite3_stmt *s = fl_store_sqlite_stmt(
        pc, "UPDATE notices SET attempts=attempts+1, next_try=?2 WHERE id IN (SELECT id FROM "
            "notices WHERE next_try<=?1 OR next_try>?4 ORDER BY id LIMIT ?3) RETURNING id, kind, "
            "group_id, crash_id, created, attempts");
    if (!s) {
        s_rollback(pc);
        return -1;
    }
    sqlite3_bind_int64(s, 1, now);
    sqlite3_bind_int64(s, 2, now + lease_s);
    sqlite3_bind_int64(s, 3, (int64_t)max);
    sqlite3_bind_int64(s, 4, now + max_wait_s);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && *n < max) {
        fl_notice *t = &out[(*n)++];
        const unsigned char *k = sqlite3_column_text(s, 1), *g = sqlite3_column_text(s, 2),
                            *cr = sqlite3_column_text(s, 3);
        t->id = sqlite3_column_int64(s, 0);
        snprintf(t->kind, sizeof t->kind, "%s", k ? (const char *)k : "");
        snprintf(t->group_id, sizeof t->group_id, "%s", g ? (const char *)g : "");
        snprintf(t->crash_id, sizeof t->crash_id, "%s", cr ? (const char *)cr : "");
        t->created = sqlite3_column_int64(s, 4);
        t->attempts = (unsigned)sqlite3_column_int(s, 5);
    }
    sqlite3_reset(s);
    if ((rc != SQLITE_DONE && rc != SQLITE_ROW) || s_commit(pc)) {
        snprintf(c->err, sizeof c->err, "%s", sqlite3_errmsg(c->db));
        s_rollback(pc);
        *n = 0;
        return -1;
    }
    return 0;
}

static int s_notice_done(fl_store_conn *pc, int64_t id)
{
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, "DELETE FROM notices WHERE id=?1");
    if (!s)
        return -1;
    sqlite3_bind_int64(s, 1, id);
    return done(s);
}

static int s_notice_later(fl_store_conn *pc, int64_t id, int64_t next_try)
{
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, "UPDATE notices SET next_try=?2 WHERE id=?1");
    if (!s)
        return -1;
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int64(s, 2, next_try);
    return done(s);
}

static int s_processing_ended(fl_store_conn *pc, const char *ref)
{
    sqlite3_stmt *s = fl_store_sqlite_stmt(pc, "DELETE FROM processing WHERE ref=?1");
    if (!s)
        return -1;
    sqlite3_bind_text(s, 1, ref, -1, SQLITE_STATIC);
    return done(s);
}

/* Appends each row of a statement with text columns 0..ncol-2 and an
 * integer last column to arr as an array.  0, or -1 on error. */
static int rows_json(sqlite3_stmt *s, int ncol, json_t *arr)
{
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *row = json_array();
        for (int i = 0; i < ncol - 1; i++)
            json_array_append_new(row, json_string((const char *)sqlite3_column_text(s, i)));
        json_array_append_new(row, json_integer(sqlite3_column_int64(s, ncol - 1)));
        json_array_append_new(arr, row);
    }
    return rc == SQLITE_DONE ? 0 : -1;
}

static json_t *trends_in(sconn *c, const char *app, const char *from_day)
{
    /* Two statements each, with and without an app, so that the primary
     * key's index serves the filtered one. */
    static const char *const q[2][3] = {
        {"SELECT day, kind, value, sum(count) FROM app_days WHERE day>=?1 GROUP BY day, kind, "
         "value",
         "SELECT day, count(DISTINCT install_id) FROM app_installs WHERE day>=?1 GROUP BY day",
         "SELECT DISTINCT app FROM app_days ORDER BY app"},
        {"SELECT day, kind, value, count FROM app_days WHERE app=?2 AND day>=?1",
         "SELECT day, count(*) FROM app_installs WHERE app=?2 AND day>=?1 GROUP BY day", NULL},
    };
    const char *const *qs = q[app != NULL];
    json_t *out = json_pack("{s:[],s:[],s:[]}", "rows", "installs", "apps");
    json_t *dst[3] = {json_object_get(out, "rows"), json_object_get(out, "installs"),
                      json_object_get(out, "apps")};
    int ncol[3] = {4, 2, 0};
    for (int i = 0; i < 3; i++) {
        const char *sql = qs[i] ? qs[i] : q[0][i];
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL)) {
            json_decref(out);
            return NULL;
        }
        sqlite3_bind_text(s, 1, from_day, -1, SQLITE_STATIC);
        if (app && qs[i])
            sqlite3_bind_text(s, 2, app, -1, SQLITE_STATIC);
        int rc = 0;
        if (ncol[i]) {
            rc = rows_json(s, ncol[i], dst[i]);
        } else {
            while ((rc = sqlite3_step(s)) == SQLITE_ROW)
                json_array_append_new(dst[i], json_string((const char *)sqlite3_column_text(s, 0)));
            rc = rc == SQLITE_DONE ? 0 : -1;
        }
        sqlite3_finalize(s);
        if (rc) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* The crashes and the installations in one snapshot: a crash processed
 * between them showed a day with more installations than crashes. */
static json_t *s_trends(fl_store_conn *pc, const char *app, const char *from_day)
{
    sconn *c = (sconn *)pc;
    bool own;
    if (read_begin(c, &own))
        return NULL;
    json_t *out = trends_in(c, app, from_day);
    read_end(c, own);
    return out;
}

static int s_stats(fl_store_conn *pc, fl_store_stats *out)
{
    sconn *c = (sconn *)pc;
    sqlite3_stmt *s = NULL;
    memset(out, 0, sizeof *out);
    if (sqlite3_prepare_v2(c->db,
                           "SELECT (SELECT coalesce(max(rid), 0) FROM crashes) + (SELECT count(*) "
                           "FROM inbox), (SELECT count(*) FROM groups WHERE merged_into IS NULL)",
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
    pthread_setname_np(pthread_self(), "fl-checkpoint");
    if (open_db(s->path, &db, NULL, 0))
        return NULL;
    /* A RESTART checkpoint holds the write lock while it waits for
     * readers, so ingest waits with it: give up after CKPT_BUSY_POLLS
     * polls of 200 us instead of 30 s. */
    sqlite3_busy_handler(db, busy_wait, BUSY_POLLS(CKPT_BUSY_POLLS));
    uint64_t restart_after = 0; /* fl_mono_ns: the next RESTART not before */
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        /* A pass every 200 ms, and one whenever commits have added
         * CKPT_STEP_FRAMES to the WAL (wal_grew).  A pass ends with an
         * fdatasync of the database, whose writes the disk takes before
         * the next commit's flush of the WAL: with passes only every
         * 200 ms under a stream of commits, each copied ~3,000 pages and
         * held the commit behind it 8-30 ms, and ingest's 99th percentile
         * was that commit (15-16 ms at 64 connections on a slow VM).  In
         * steps of 512 KiB it is ~6 ms, at the same rate (docs/
         * operations.md, "Thirteenth round"). */
        bool asked = __atomic_exchange_n(&s->ckpt_asked, false, __ATOMIC_RELAXED);
        if (!asked) {
            fl_cond_wait_ms(&s->cv, &s->mu, 200);
            if (s->stopping)
                break;
            asked = __atomic_exchange_n(&s->ckpt_asked, false, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&s->mu);
        /* PASSIVE never blocks readers or writers.  But the WAL only
         * starts over when a writer finds it entirely copied back, which a
         * steady stream of commits never allows: past WAL_RESTART_FRAMES,
         * a RESTART checkpoint holds writers off for the (short) rest of
         * the copy so that the file is reused instead of growing. */
        int logsz = 0, done_ = 0;
        sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &logsz, &done_);
        __atomic_store_n(&s->ckpt_frames, logsz, __ATOMIC_RELAXED);
        /* A reader's snapshot (an API answer over a large store, say)
         * keeps the RESTART waiting, and the write lock it holds meanwhile
         * keeps every commit waiting too: a 6 s read stopped ingest for
         * 6 s.  So it gives way after ~10 ms (CKPT_BUSY_POLLS), having copied
         * what it could, and is tried again a second later; the WAL grows
         * past WAL_RESTART_FRAMES for as long as such a reader lasts. */
        bool restart = false, deferred = false;
        if (logsz > WAL_RESTART_FRAMES && fl_mono_ns() >= restart_after) {
            if (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_RESTART, NULL, NULL) ==
                SQLITE_OK) {
                restart = true;
            } else {
                deferred = true;
                restart_after = fl_mono_ns() + CKPT_RESTART_RETRY_NS;
            }
        }
        pthread_mutex_lock(&s->mu);
        s->ckpt_info.passes++;
        s->ckpt_info.passes_asked += asked;
        s->ckpt_info.restarts += restart;
        s->ckpt_info.restarts_deferred += deferred;
        s->ckpt_info.wal_frames = logsz > 0 ? logsz : 0;
    }
    pthread_mutex_unlock(&s->mu);
    /* A last full one so that a clean shutdown leaves a small WAL: this
     * one may wait for the last readers. */
    sqlite3_busy_handler(db, busy_wait, BUSY_PATIENT);
    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_close(db);
    return NULL;
}

/* Fills the filter with the ids already stored, in ranges of LOAD_RANGE
 * rows (each its own short read transaction, so the WAL can still be
 * checkpointed meanwhile), taking fmu only to add a range, not while
 * reading it. */
#define LOAD_RANGE 8192
static void *loader_main(void *arg)
{
    sstore *s = arg;
    pthread_setname_np(pthread_self(), "fl-idload");
    sqlite3 *db = NULL;
    char(*ids)[FL_CRASH_ID_MAX] = malloc(LOAD_RANGE * sizeof *ids);
    size_t *lens = malloc(LOAD_RANGE * sizeof *lens);
    bool ok = ids && lens && !open_db(s->path, &db, NULL, 0);
    /* The inbox by rowid first, then the crash-id index by id (it covers
     * the query): in this order a row that moves from the inbox to crashes
     * meanwhile is seen in one of them at least. */
    static const char *const sql[] = {
        "SELECT id, rid FROM inbox WHERE rid>?1 ORDER BY rid LIMIT ?2",
        "SELECT id FROM crashes WHERE id>?1 ORDER BY id LIMIT ?2",
    };
    for (int t = 0; ok && t < 2; t++) {
        char after[FL_CRASH_ID_MAX] = "";
        int64_t after_rid = 0;
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, sql[t], -1, &st, NULL)) {
            ok = false;
            break;
        }
        for (;;) {
            if (__atomic_load_n(&s->loader_stop, __ATOMIC_RELAXED)) {
                ok = false;
                break;
            }
            if (t == 0)
                sqlite3_bind_int64(st, 1, after_rid);
            else
                sqlite3_bind_text(st, 1, after, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int(st, 2, LOAD_RANGE);
            size_t k = 0, rows = 0;
            int rc;
            while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *id = (const char *)sqlite3_column_text(st, 0);
                size_t n = (size_t)sqlite3_column_bytes(st, 0);
                rows++;
                if (t == 0)
                    after_rid = sqlite3_column_int64(st, 1);
                else if (id && n < FL_CRASH_ID_MAX)
                    memcpy(after, id, n + 1);
                else if (id)
                    break; /* an id too long to resume after: look every id up */
                if (!id || n >= FL_CRASH_ID_MAX)
                    continue; /* not an id ingest can be asked about */
                memcpy(ids[k], id, n + 1);
                lens[k++] = n;
            }
            sqlite3_reset(st);
            if (rc != SQLITE_DONE) {
                ok = false; /* an error, or the break above */
                break;
            }
            pthread_mutex_lock(&s->fmu);
            for (size_t i = 0; i < k; i++)
                fl_idfilter_add(s->known, ids[i], lens[i]);
            pthread_mutex_unlock(&s->fmu);
            if (rows == 0)
                break;
        }
        sqlite3_finalize(st);
    }
    if (ok) {
        pthread_mutex_lock(&s->fmu);
        s->known_ready = true;
        pthread_mutex_unlock(&s->fmu);
    }
    sqlite3_close(db);
    free(ids);
    free(lens);
    return NULL;
}

void fl_store_sqlite_no_id_filter(fl_store *st)
{
    if (!st || strcmp(st->engine, "sqlite"))
        return;
    sstore *s = (sstore *)st;
    pthread_mutex_lock(&s->fmu);
    s->known_tried = true; /* and known stays NULL: every id is looked up */
    pthread_mutex_unlock(&s->fmu);
    /* A snapshot left by an earlier start would lack what this one stores. */
    char path[PATH_MAX + 16];
    snapshot_path(s, path, sizeof path, "");
    unlink(path);
}

void fl_store_sqlite_wal_info(fl_store *st, fl_store_wal_info *out)
{
    memset(out, 0, sizeof *out);
    if (!st || strcmp(st->engine, "sqlite"))
        return;
    sstore *s = (sstore *)st;
    pthread_mutex_lock(&s->mu);
    *out = s->ckpt_info;
    pthread_mutex_unlock(&s->mu);
}

void fl_store_sqlite_known_info(fl_store *st, fl_store_known_info *out)
{
    memset(out, 0, sizeof *out);
    if (!st || strcmp(st->engine, "sqlite"))
        return;
    sstore *s = (sstore *)st;
    pthread_mutex_lock(&s->fmu);
    out->ready = s->known_ready;
    out->from_snapshot = s->known_snapshot;
    out->lookups = s->lookups;
    if (s->known) {
        out->ids = fl_idfilter_count(s->known);
        out->bytes = fl_idfilter_bytes(s->known);
    }
    pthread_mutex_unlock(&s->fmu);
}

/* ---- the filter's snapshot
 *
 * A server that stops cleanly leaves its filter of stored ids in
 * <database>.ids; the next start's first ingest takes it (and deletes it)
 * instead of reading every id stored again -- ~10 s of reads at 10 M
 * crashes, during which every new id is looked up.  Taken once: a server
 * that then crashes starts with the full read, never with a snapshot that
 * lacks the ids it stored since.  A stale snapshot (another server
 * ingested in between, a database restored from a backup) costs nothing
 * in counts: ingest never decides on the filter alone that a crash is new
 * to the counts, the workers do (see s_insert_crashes). */

static void snapshot_path(const sstore *s, char *out, size_t n, const char *suffix)
{
    snprintf(out, n, "%s.ids%s", s->path, suffix);
}

/* Written beside and renamed over, so that a crash while writing leaves no
 * half file under the name (and a half file is refused anyway). */
static void snapshot_save(sstore *s)
{
    char tmp[PATH_MAX + 16], path[PATH_MAX + 16];
    snapshot_path(s, tmp, sizeof tmp, ".tmp");
    snapshot_path(s, path, sizeof path, "");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!fp) {
        if (fd >= 0)
            close(fd);
        return;
    }
    bool ok = fl_idfilter_write(s->known, fp) == 0;
    ok &= fclose(fp) == 0;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

static fl_idfilter *snapshot_take(sstore *s)
{
    char path[PATH_MAX + 16];
    snapshot_path(s, path, sizeof path, "");
    FILE *fp = fopen(path, "rbe");
    if (!fp)
        return NULL;
    fl_idfilter *f = fl_idfilter_read(fp);
    fclose(fp);
    unlink(path); /* taken, or not a snapshot: either way not for the next start */
    return f;
}

static void s_close(fl_store *st)
{
    sstore *s = (sstore *)st;
    if (!s)
        return;
    if (s->loader_running) {
        __atomic_store_n(&s->loader_stop, true, __ATOMIC_RELAXED);
        pthread_join(s->loader, NULL);
    }
    /* Only a filter that holds every id stored: loaded, and never broken
     * (fl_idfilter_write refuses that). */
    if (s->known && s->known_ready)
        snapshot_save(s);
    fl_idfilter_free(s->known);
    pthread_mutex_destroy(&s->fmu);
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

/* SQLite keeps memory statistics by default, which takes a global mutex
 * on every allocation (sqlite3Malloc/sqlite3_free): ~3.5 % of the writer's
 * instructions per commit, and a lock every thread contends on.  Nothing
 * here reads the statistics.  It must be set before SQLite initialises,
 * so the first store opened does it, once per process; if something used
 * SQLite earlier the call fails and the default stays, harmlessly. */
static void sqlite_setup(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

fl_store *fl_store_sqlite_open(const char *path, char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sqlite_setup);
    sqlite3 *db = NULL;
    char why[256];
    struct stat dbst;
    /* A new database is made private (0600) before SQLite opens it:
     * SQLite would create it with the process's umask (0644 under the
     * usual 022), readable by every user of the machine, and it holds what
     * the 0600 key files guard -- the projects' ingest keys -- and the
     * crash logs with their users' email addresses.  The -wal and -shm
     * files take the database's mode.  An existing database keeps the mode
     * its owner gave it. */
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    if (open_db(path, &db, why, sizeof why) || stat(path, &dbst)) {
        if (db)
            snprintf(why, sizeof why, "%s", strerror(errno));
        /* "unable to open database file" does not say why; WAL mode needs
         * to create files beside the database. */
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        if (access(slash ? (dir[0] ? dir : "/") : ".", W_OK) == 0)
            snprintf(err, errlen, "cannot open the database %s: %s", path, why);
        else
            snprintf(err, errlen, "cannot open the database %s: %s (its directory: %s)", path,
                     why, strerror(errno));
        sqlite3_close(db);
        return NULL;
    }
    /* The schema is made and upgraded in one write transaction.  Processes
     * that start together on one database (--role api and --role worker
     * after an upgrade) would otherwise both find a column missing and
     * both add it, and the second stopped on "duplicate column name"; this
     * way the second waits for the first (busy_wait) and finds the columns
     * there. */
    char *msg = NULL;
    int gen = -1;
    sqlite3_stmt *gs = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) == SQLITE_OK &&
        !sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &gs, NULL) &&
        sqlite3_step(gs) == SQLITE_ROW)
        gen = sqlite3_column_int(gs, 0);
    sqlite3_finalize(gs);
    if (gen > SCHEMA_GEN) {
        snprintf(err, errlen,
                 "%s was upgraded by a newer faultline (schema generation %d; this one knows "
                 "up to %d): run that version, or restore a backup made before the upgrade",
                 path, gen, SCHEMA_GEN);
        sqlite3_close(db); /* rolls back */
        return NULL;
    }
    if (gen < 0 || sqlite3_exec(db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "cannot create the schema in %s: %s", path,
                 msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        sqlite3_close(db); /* rolls back */
        return NULL;
    }
    /* Databases from before the backfill lack crashes.resym/install_id,
     * those from before raw-log chunks crashes.chunk/chunk_off, those from
     * before batch tasks tasks.n, those from before e-mail addresses
     * crashes.email and inbox.email, those from before projects the
     * project columns (NULL there: the default project), those from
     * before merges groups.merged_into and crashes.sig_group. */
    static const char *const cols[][3] = {
        {"crashes", "resym", "ALTER TABLE crashes ADD COLUMN resym INTEGER NOT NULL DEFAULT 0"},
        {"crashes", "install_id", "ALTER TABLE crashes ADD COLUMN install_id TEXT"},
        {"crashes", "chunk", "ALTER TABLE crashes ADD COLUMN chunk INTEGER"},
        {"crashes", "chunk_off", "ALTER TABLE crashes ADD COLUMN chunk_off INTEGER"},
        {"tasks", "n", "ALTER TABLE tasks ADD COLUMN n INTEGER NOT NULL DEFAULT 1"},
        {"crashes", "email", "ALTER TABLE crashes ADD COLUMN email TEXT"},
        {"inbox", "email", "ALTER TABLE inbox ADD COLUMN email TEXT"},
        {"crashes", "project", "ALTER TABLE crashes ADD COLUMN project TEXT"},
        {"inbox", "project", "ALTER TABLE inbox ADD COLUMN project TEXT"},
        {"groups", "project", "ALTER TABLE groups ADD COLUMN project TEXT"},
        {"groups", "merged_into", "ALTER TABLE groups ADD COLUMN merged_into TEXT"},
        {"crashes", "sig_group", "ALTER TABLE crashes ADD COLUMN sig_group TEXT"},
        {"crashes", "arch_counted",
         "ALTER TABLE crashes ADD COLUMN arch_counted INTEGER NOT NULL DEFAULT 0"},
    };
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
        sqlite3_stmt *ti = NULL;
        bool has = false;
        if (!sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name=?2",
                                -1, &ti, NULL)) {
            sqlite3_bind_text(ti, 1, cols[i][0], -1, SQLITE_STATIC);
            sqlite3_bind_text(ti, 2, cols[i][1], -1, SQLITE_STATIC);
            has = sqlite3_step(ti) == SQLITE_ROW;
        }
        sqlite3_finalize(ti);
        if (!has && sqlite3_exec(db, cols[i][2], NULL, NULL, NULL) != SQLITE_OK) {
            snprintf(err, errlen, "cannot upgrade the schema in %s: %s", path,
                     sqlite3_errmsg(db));
            sqlite3_close(db);
            return NULL;
        }
    }
    char setgen[40];
    snprintf(setgen, sizeof setgen, "PRAGMA user_version=%d", SCHEMA_GEN);
    if (sqlite3_exec(db, INDEXES, NULL, NULL, NULL) != SQLITE_OK ||
        (gen < SCHEMA_GEN && sqlite3_exec(db, setgen, NULL, NULL, NULL) != SQLITE_OK) ||
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot upgrade the schema in %s: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return NULL;
    }
    /* How many ids the filter will hold to begin with: the largest rowids
     * (no fewer than the rows, read off the end of each table). */
    int64_t est = 0;
    sqlite3_stmt *es = NULL;
    if (!sqlite3_prepare_v2(db,
                            "SELECT coalesce((SELECT max(rid) FROM crashes),0)"
                            " + coalesce((SELECT max(rid) FROM inbox),0)",
                            -1, &es, NULL) &&
        sqlite3_step(es) == SQLITE_ROW)
        est = sqlite3_column_int64(es, 0);
    sqlite3_finalize(es);
    sqlite3_close(db);
    sstore *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    fl_cond_init_mono(&s->cv);
    pthread_mutex_init(&s->fmu, NULL);
    s->known_est = est;
    s->dev = dbst.st_dev;
    s->ino = dbst.st_ino;
    if (pthread_create(&s->ckpt, NULL, ckpt_main, s) == 0)
        s->ckpt_running = true;
    fl_store *p = &s->pub;
    p->engine = "sqlite";
    p->connect = s_connect;
    p->disconnect = s_disconnect;
    p->begin = s_begin;
    p->commit = s_commit;
    p->get_minidump = s_get_minidump;
    p->rollback = s_rollback;
    p->error = s_error;
    p->unavailable = s_unavailable;
    p->probe = s_probe;
    p->processing_started = s_processing_started;
    p->processing_ended = s_processing_ended;
    p->requeue = s_requeue;
    p->delete_crash = s_delete_crash;
    p->expire = s_expire;
    p->delete_group = s_delete_group;
    p->delete_group_step = s_delete_group_step;
    p->group_deleted = s_group_deleted;
    p->group_crashes = s_group_crashes;
    p->notices_claim = s_notices_claim;
    p->notice_done = s_notice_done;
    p->notice_later = s_notice_later;
    p->insert_crashes = s_insert_crashes;
    p->load_raw = s_load_raw;
    p->add_project = s_add_project;
    p->add_project_key = s_add_project_key;
    p->revoke_project_key = s_revoke_project_key;
    p->list_projects = s_list_projects;
    p->apply = s_apply;
    p->reapply = s_reapply;
    p->add_symbol = s_add_symbol;
    p->list_symbols = s_list_symbols;
    p->find_symbol = s_find_symbol;
    p->symbols_arrived = s_symbols_arrived;
    p->symbols_version = s_symbols_version;
    p->late_symbols = s_late_symbols;
    p->list_groups = s_list_groups;
    p->get_group = s_get_group;
    p->get_crash = s_get_crash;
    p->set_status = s_set_status;
    p->merge_group = s_merge_group;
    p->unmerge_group = s_unmerge_group;
    p->stats = s_stats;
    p->trends = s_trends;
    p->close = s_close;
    p->data = s;
    return p;
}
