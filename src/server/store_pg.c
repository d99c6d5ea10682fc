/*
 * store_pg.c - the PostgreSQL store: one database shared by many servers.
 *
 * How this works.  Several `faultline serve` processes, on several
 * machines, ingest into and process from one database; the queue is
 * RabbitMQ (fl_queue.in_store_txn false) or the table `tasks` here, which
 * queue_pg.c writes in this store's transactions (fl_store_pg_exec()).
 * The semantics are store_sqlite.c's, and so is every JSON answer; what
 * differs is how they hold with many writers at once:
 *
 * - Ingest: one multi-row INSERT ... ON CONFLICT (id) DO NOTHING RETURNING
 *   id per batch.  The primary key on the crash id refuses a resend at
 *   once, whichever server it reached, so there is no inbox as in SQLite
 *   (whose unindexed inbox spares its single writer the random index
 *   writes; here a resend must be refused across writers anyway).  A task
 *   names its crash by the crash id (ref stays empty).  A batch's rows go
 *   in sorted by id: two writers with overlapping batches then wait for
 *   each other's ids in the same order and never deadlock.
 *
 * - Exactly once: apply() is UPDATE crashes ... WHERE id=$1 AND state=0
 *   RETURNING.  The UPDATE locks the row; a second worker applying the same
 *   crash waits for the first to commit and then, READ COMMITTED
 *   re-checking the WHERE on the new row version, finds state 1 and counts
 *   nothing.  reapply() likewise locks the crash row (SELECT ... FOR
 *   UPDATE) before it looks at resym.
 *
 * - Group counters: every counter changes in one statement (count=count+1,
 *   ON CONFLICT DO UPDATE SET count=t.count+1), never read-then-write.  The
 *   regression rule compares versions in C (fl_vercmp), so the group's row
 *   is locked (SELECT ... FOR UPDATE) before its status is read and
 *   written; the statements after the lock see every transaction that
 *   held it before (READ COMMITTED takes a snapshot per statement).
 *
 * - Reads: an answer made of several statements (a group and its
 *   breakdowns, a page and its total, the trends) reads them in one
 *   REPEATABLE READ, READ ONLY transaction (read_begin()): under READ
 *   COMMITTED each would see the writers committed by then.
 *
 * - Late symbols: symbols.rid is the symbols version, and a worker reads
 *   it before processing (symbols_version) and checks it after (late_
 *   symbols), while an upload's backfill marks the crashes that lacked it
 *   (symbols_arrived).  With one writer at a time (SQLite) one of the two
 *   always sees the other; here a worker's commit and an upload's could
 *   cross and both miss.  So add_symbol() takes the symbols table in SHARE
 *   ROW EXCLUSIVE mode (uploads one at a time: rids are then in commit
 *   order, and a version read means "every file up to it"), and
 *   late_symbols() takes it in SHARE mode (workers do not wait for each
 *   other, but an upload waits for them and they for it): whichever comes
 *   second sees what the first committed.
 *
 * - Deleted groups (delete_group): the delete locks the group's row and
 *   those merged into it in id order, removes them and gives each
 *   signature a new id (group_gen), in one transaction; its steps then
 *   erase the crashes.  A worker that read group_gen before that commit
 *   inserts the old id's row again after it (ON CONFLICT waits for the
 *   delete's lock, then finds no row): it sees the row was created, reads
 *   group_gen again and moves the crash to the new id, dropping the row
 *   it made -- so a crash is counted once, and never in a group being
 *   erased.  A re-processed crash of such a group stays in it (its old
 *   group's row is locked and found gone) and is erased with it.
 *
 * - Deadlocks: a worker applies a batch in one transaction, locking its
 *   groups in the batch's order, so two workers can deadlock.  PostgreSQL
 *   aborts one (SQLSTATE 40P01), error() says to retry, and the worker's
 *   rollback and later retry handle it like any failed transaction.
 *
 * - Raw logs: one zstd frame per crash in crashes.raw.  A caller's frame of
 *   several logs (fl_ingest_item.z) is ignored: splitting it would mean
 *   decompressing it and compressing each log again, more work than
 *   compressing the logs, which the items carry anyway.  One frame per crash
 *   lets load_raw() read one row and decompress one log.
 *
 * - Published: crashes waiting for processing (state 0, or resym) carry
 *   whether their task reached the broker (published) and since when they
 *   wait (waiting_since, the database's clock, so that servers whose clocks
 *   differ agree on an age).  Two partial indexes keep unpublished() and
 *   backlog() to the waiting crashes, not all of them.
 *
 * - Connections: one PGconn per fl_store_conn (one thread).  A connection
 *   that broke (the database restarted) is re-established by a call made
 *   outside a transaction -- the very statement that finds it broken runs
 *   again on the new one (p_execv) --; inside one, every call fails until
 *   the caller's rollback(), since the transaction's earlier work is gone.
 *
 * - Deadlines: a database that stops answering with its sockets open (its
 *   processes frozen, a paused VM: the kernel still acknowledges, so TCP
 *   keepalives never fire) would hold a synchronous libpq call for good,
 *   and with it every thread that asks the store anything -- and the
 *   shutdown that waits for them.  So each statement is sent with libpq's
 *   asynchronous calls on a nonblocking connection and its answer waited
 *   for in poll() until the store's deadline (fl_store_pg_open's
 *   timeout_s; ten times that for the schema's upgrade at open).  A
 *   statement not answered by then fails, and its connection is dropped
 *   (no cancel: a frozen server would not answer that either, and
 *   PQcancel waits for it) -- a call that broke the connection, then: it
 *   does not run again, the next call outside a transaction reconnects.
 *
 * Every value travels as a parameter; the SQL texts hold only constants
 * and placeholders.
 */
#define _GNU_SOURCE
#include "fl_store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "fl_srvutil.h"

#define MAX_RAW (16u << 20)       /* FL_CRASHLOG_MAX_BYTES */
#define MAX_PROCESSED (64u << 20) /* processed JSON */
#define SCHEMA_VERSION 1
/* Which SCHEMA below made the tables, kept in settings: change it with
 * every change to SCHEMA.  A server that finds it current runs no DDL at
 * start, because even CREATE INDEX IF NOT EXISTS locks its table against
 * writes, and would wait behind any open transaction -- and make every
 * other server's ingest wait behind it. */
#define SCHEMA_DDL "9"
/* Rows per INSERT of an ingest batch (8 parameters each) and ids per
 * published() statement: well under the protocol's 65535 parameters. */
#define INSERT_ROWS 500
#define IN_IDS 1000
/* Now, in seconds since the epoch, on the database's clock (see the
 * essay: servers' clocks may differ).  now() is the transaction's start. */
#define NOW_S "floor(extract(epoch FROM now()))::bigint"

/* Created under an advisory lock: two servers opening a new database at
 * once would otherwise race in CREATE ... IF NOT EXISTS (which checks,
 * then creates) and one would fail on a duplicate catalog row.  Text
 * columns that are compared or ordered are COLLATE "C": byte order, as in
 * SQLite, whatever the database's locale. */
static const char SCHEMA[] =
    "BEGIN;"
    "SELECT pg_advisory_xact_lock(7021584103562511);"
    "SET LOCAL client_min_messages=warning;"
    "CREATE TABLE IF NOT EXISTS fl_schema(version integer NOT NULL);"
    "CREATE SEQUENCE IF NOT EXISTS crashes_rid_seq;"
    /* rid orders a group's crashes as SQLite's rowid does: taken again
     * when the crash is processed (SQLite moves the row into crashes
     * then), so "first" and "newest" mean the same in both engines. */
    "CREATE TABLE IF NOT EXISTS crashes("
    "  id text COLLATE \"C\" PRIMARY KEY, rid bigint NOT NULL DEFAULT nextval('crashes_rid_seq'),"
    "  app text, version text, received bigint NOT NULL, raw bytea NOT NULL,"
    "  raw_len bigint NOT NULL, state smallint NOT NULL DEFAULT 0,"
    "  resym boolean NOT NULL DEFAULT false, group_id text COLLATE \"C\", stack_hash text,"
    "  processed bytea, install_id text, published boolean NOT NULL DEFAULT false,"
    "  waiting_since bigint DEFAULT " NOW_S ", email text, project text COLLATE \"C\");"
    /* Databases from before e-mail addresses.  Asked of the catalog first:
     * ALTER TABLE locks the table exclusively even when IF NOT EXISTS
     * finds the column, and would queue every server's queries behind a
     * pg_dump on each start. */
    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'crashes'::regclass"
    "  AND attname = 'email' AND NOT attisdropped) THEN"
    "  ALTER TABLE crashes ADD COLUMN email text; END IF; END $$;"
    /* And from before projects (NULL: the default project), likewise. */
    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'crashes'::regclass"
    "  AND attname = 'project' AND NOT attisdropped) THEN"
    "  ALTER TABLE crashes ADD COLUMN project text COLLATE \"C\"; END IF; END $$;"
    "CREATE INDEX IF NOT EXISTS crashes_grouped ON crashes(group_id, rid) "
    "WHERE group_id IS NOT NULL;"
    /* The waiting crashes only: backlog() counts them, unpublished() walks
     * those not published, oldest first. */
    "CREATE INDEX IF NOT EXISTS crashes_waiting ON crashes(waiting_since) "
    "WHERE state = 0 OR resym;"
    "CREATE INDEX IF NOT EXISTS crashes_unpublished ON crashes(waiting_since) "
    "WHERE NOT published AND (state = 0 OR resym);"
    /* Retention (expire()) finds the oldest processed crashes by it. */
    "CREATE INDEX IF NOT EXISTS crashes_expiry ON crashes(received) WHERE state IN (1,2);"
    "CREATE TABLE IF NOT EXISTS groups("
    "  id text COLLATE \"C\" PRIMARY KEY, app text, signature text NOT NULL, frames text,"
    "  count bigint NOT NULL DEFAULT 0, first_seen bigint, last_seen bigint,"
    "  affected bigint NOT NULL DEFAULT 0, status text NOT NULL DEFAULT 'open',"
    "  resolved_in text, latest_version text, sample_crash text, project text COLLATE \"C\","
    "  merged_into text COLLATE \"C\");"
    /* The group a crash's signature gave, when a merge counts it in another
     * (unmerge_group). */
    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'crashes'::regclass"
    "  AND attname = 'sig_group' AND NOT attisdropped) THEN"
    "  ALTER TABLE crashes ADD COLUMN sig_group text COLLATE \"C\"; END IF; END $$;"
    /* Whether the crash's architecture is counted in its group (group_arch,
     * schema_ddl 8): not for one processed before. */
    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'crashes'::regclass"
    "  AND attname = 'arch_counted' AND NOT attisdropped) THEN"
    "  ALTER TABLE crashes ADD COLUMN arch_counted boolean NOT NULL DEFAULT false; END IF; END $$;"
    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'groups'::regclass"
    "  AND attname = 'project' AND NOT attisdropped) THEN"
    "  ALTER TABLE groups ADD COLUMN project text COLLATE \"C\"; END IF; END $$;"
    /* And from before merges (merge_group). */
    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'groups'::regclass"
    "  AND attname = 'merged_into' AND NOT attisdropped) THEN"
    "  ALTER TABLE groups ADD COLUMN merged_into text COLLATE \"C\"; END IF; END $$;"
    "CREATE INDEX IF NOT EXISTS groups_merged ON groups(merged_into) WHERE merged_into IS NOT "
    "NULL;"
    "CREATE INDEX IF NOT EXISTS groups_count ON groups(count DESC, id);"
    "CREATE TABLE IF NOT EXISTS group_days(group_id text COLLATE \"C\", day text COLLATE \"C\","
    "  count bigint NOT NULL, PRIMARY KEY(group_id, day));"
    "CREATE TABLE IF NOT EXISTS group_versions(group_id text COLLATE \"C\","
    "  version text COLLATE \"C\", count bigint NOT NULL, PRIMARY KEY(group_id, version));"
    "CREATE TABLE IF NOT EXISTS group_os(group_id text COLLATE \"C\", os text COLLATE \"C\","
    "  count bigint NOT NULL, PRIMARY KEY(group_id, os));"
    "CREATE TABLE IF NOT EXISTS group_arch(group_id text COLLATE \"C\","
    "  arch text COLLATE \"C\", count bigint NOT NULL, PRIMARY KEY(group_id, arch));"
    "CREATE TABLE IF NOT EXISTS group_installs(group_id text COLLATE \"C\","
    "  install_id text COLLATE \"C\", PRIMARY KEY(group_id, install_id));"
    /* The groups an installation crashed in (?install=). */
    "CREATE INDEX IF NOT EXISTS group_installs_install ON group_installs(install_id);"
    "CREATE TABLE IF NOT EXISTS crash_missing(build_id text COLLATE \"C\","
    "  crash_id text COLLATE \"C\", PRIMARY KEY(build_id, crash_id));"
    "CREATE INDEX IF NOT EXISTS crash_missing_crash ON crash_missing(crash_id);"
    "CREATE TABLE IF NOT EXISTS symbols("
    "  rid bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, build_id text COLLATE \"C\","
    "  name text, size bigint, status text NOT NULL, error text, kind text, path text,"
    "  uploaded bigint NOT NULL, file oid);"
    "CREATE INDEX IF NOT EXISTS symbols_build_id ON symbols(build_id, rid);"
    "CREATE TABLE IF NOT EXISTS processing(ref text COLLATE \"C\" PRIMARY KEY,"
    "  starts integer NOT NULL);"
    "CREATE TABLE IF NOT EXISTS app_days(app text COLLATE \"C\", day text COLLATE \"C\","
    "  kind text COLLATE \"C\", value text COLLATE \"C\", count bigint NOT NULL,"
    "  PRIMARY KEY(app, day, kind, value));"
    "CREATE TABLE IF NOT EXISTS app_installs(app text COLLATE \"C\", day text COLLATE \"C\","
    "  install_id text COLLATE \"C\", PRIMARY KEY(app, day, install_id));"
    /* shared_value(): the keys every server of the database uses. */
    "CREATE TABLE IF NOT EXISTS settings(name text COLLATE \"C\" PRIMARY KEY,"
    "  value text NOT NULL);"
    /* The projects other than the default one, and their ingest keys
     * (the default project's key is the server's, never stored here). */
    "CREATE TABLE IF NOT EXISTS projects(id text COLLATE \"C\" PRIMARY KEY,"
    "  created bigint NOT NULL);"
    "CREATE TABLE IF NOT EXISTS project_keys(key text COLLATE \"C\" PRIMARY KEY,"
    "  project text COLLATE \"C\" NOT NULL, created bigint NOT NULL);"
    "CREATE INDEX IF NOT EXISTS project_keys_project ON project_keys(project);"
    /* queue_pg.c's tasks: up to FL_QUEUE_BATCH_MAX crash ids each. */
    "CREATE TABLE IF NOT EXISTS tasks("
    "  id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, crash_ids text NOT NULL,"
    "  n integer NOT NULL, lease_until bigint NOT NULL DEFAULT 0,"
    "  attempts integer NOT NULL DEFAULT 0);"
    /* Events waiting for `serve --notify-url` (fl_notice). */
    "CREATE TABLE IF NOT EXISTS notices("
    "  id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, kind text NOT NULL,"
    "  group_id text COLLATE \"C\" NOT NULL, crash_id text, created bigint NOT NULL,"
    "  attempts integer NOT NULL DEFAULT 0, next_try bigint NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS notices_due ON notices(next_try);"
    /* Deleted groups (delete_group): tombstones, and the id a deleted
     * group's signature takes now (generation gen of base), as in
     * store_sqlite.c. */
    "CREATE TABLE IF NOT EXISTS groups_deleted(id text COLLATE \"C\" PRIMARY KEY,"
    "  deleted bigint NOT NULL, crashes bigint NOT NULL DEFAULT 0,"
    "  done boolean NOT NULL DEFAULT false, of_group text COLLATE \"C\");"
    "CREATE TABLE IF NOT EXISTS group_gen(base text COLLATE \"C\" PRIMARY KEY,"
    "  gen bigint NOT NULL, cur text COLLATE \"C\" NOT NULL);"
    "CREATE INDEX IF NOT EXISTS group_gen_cur ON group_gen(cur);"
    /* Crashes a merge of schema_ddl 6 or before moved into another group
     * (sig_group: their own), which unmerge_group() moves back; merges no
     * longer move crashes.  And the groups deleted with the group they
     * were merged into, whose crashes its delete erases. */
    "CREATE INDEX IF NOT EXISTS crashes_moved ON crashes(sig_group) WHERE sig_group IS NOT NULL;"
    "CREATE INDEX IF NOT EXISTS groups_deleted_of ON groups_deleted(of_group) WHERE of_group IS "
    "NOT NULL;"
    /* The minidumps crashes were made from (schema_ddl 9), as in
     * store_sqlite.c. */
    "CREATE TABLE IF NOT EXISTS minidumps(crash_id text COLLATE \"C\" PRIMARY KEY,"
    "  size bigint NOT NULL, data bytea NOT NULL);"
    "INSERT INTO fl_schema SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM fl_schema);"
    "INSERT INTO settings VALUES('schema_ddl', '" SCHEMA_DDL "') "
    "ON CONFLICT (name) DO UPDATE SET value = excluded.value;"
    "COMMIT;";

/* One increment of the trends (app_days, or app_installs when install is
 * set), kept until commit(): see trend_flush(). */
typedef struct trend_inc {
    char *app, *day, *kind, *value, *install;
} trend_inc;

/* Statements prepared on this connection, by the address of their SQL
 * text (a literal, nearly always; the text is compared too, so a buffer
 * reused for another text is never taken for its old statement). */
#define P_PREPARED 64
typedef struct p_prep {
    const char *sql; /* the caller's pointer */
    char *text;      /* its text when prepared; NULL: never prepare this pointer */
} p_prep;

typedef struct pconn {
    fl_store_conn pub;
    PGconn *db;         /* NULL: dropped (p_drop), made again by p_ready() */
    const char *url;    /* the store's */
    unsigned timeout_s; /* a statement's deadline (see the essay) */
    bool txn; /* between a successful begin() and commit()/rollback() */
    /* The last p_execv() ran its statement a second time, on a new
     * connection: the first run may have committed (see p_execv). */
    bool rerun;
    p_prep prep[P_PREPARED];
    size_t nprep;
    bool symlock; /* this transaction holds symbols in SHARE mode */
    char listening[32]; /* the channel this session LISTENs to, or "" */
    trend_inc *trend;
    size_t ntrend, trend_cap;
    char err[512];
} pconn;

typedef struct pstore {
    fl_store pub;
    char *url;
    unsigned timeout_s;
} pstore;

/* ---- parameters and results */

#define P_MAXP 12

/* A statement's parameters: text, except bytea (binary).  num[] holds the
 * decimal text of integers, so the struct must stay put until executed. */
typedef struct p_args {
    int n;
    const char *v[P_MAXP];
    int len[P_MAXP], fmt[P_MAXP];
    char num[P_MAXP][24];
} p_args;

static void p_text(p_args *a, const char *s)
{
    if (a->n == P_MAXP)
        abort();    /* a statement with more parameters than P_MAXP: a bug here */
    a->v[a->n] = s; /* NULL: SQL NULL */
    a->len[a->n] = 0;
    a->fmt[a->n++] = 0;
}

static void p_int(p_args *a, int64_t x)
{
    snprintf(a->num[a->n], sizeof a->num[a->n], "%" PRId64, x);
    p_text(a, a->num[a->n]);
}

static void p_bin(p_args *a, const void *p, size_t len)
{
    if (a->n == P_MAXP)
        abort();
    a->v[a->n] = p;
    a->len[a->n] = (int)len;
    a->fmt[a->n++] = 1;
}

/* libpq's message on one line: it runs over several ("Connection
 * refused\n\tIs the server running...\n"); each run of line breaks, tabs
 * and blanks becomes one blank, none at the end. */
static void p_trim(char *s)
{
    size_t o = 0;
    bool blank = false;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '\n' || s[i] == '\r' || s[i] == '\t' || s[i] == ' ') {
            blank = o > 0;
            continue;
        }
        if (blank)
            s[o++] = ' ';
        blank = false;
        s[o++] = s[i];
    }
    s[o] = '\0';
}

static void p_seterr(pconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void p_seterr(pconn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
}

/* p_fail's words for SQLSTATE 40P01 and 40001 (p_conflict). */
#define P_CONFLICT_TEXT "the transaction met a concurrent one"

/* Why r (or the connection, when r is NULL) failed, into c->err.  A
 * deadlock or a serialization failure says that the transaction is to be
 * rolled back and retried: it is not broken, it met another one. */
static void p_fail(pconn *c, const PGresult *r)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *prim = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    char msg[400];
    snprintf(msg, sizeof msg, "%s", prim ? prim : PQerrorMessage(c->db));
    p_trim(msg);
    if (!strncmp(msg, "ERROR:  ", 8))
        memmove(msg, msg + 8, strlen(msg + 8) + 1);
    if (!msg[0])
        snprintf(msg, sizeof msg, "unknown PostgreSQL error");
    if (state && (!strcmp(state, "40P01") || !strcmp(state, "40001")))
        p_seterr(c, "%s (SQLSTATE %s): " P_CONFLICT_TEXT "; roll it back and retry it", msg, state);
    else if (PQstatus(c->db) == CONNECTION_BAD)
        p_seterr(c,
                 "%s (the connection to PostgreSQL is lost: the next call outside a "
                 "transaction reconnects)",
                 msg);
    else if (state)
        p_seterr(c, "%s (SQLSTATE %s)", msg, state);
    else
        p_seterr(c, "%s", msg);
}

static void p_prep_clear(pconn *c)
{
    for (size_t i = 0; i < c->nprep; i++)
        free(c->prep[i].text);
    c->nprep = 0;
}

/* ---- deadlines (see the essay) */

/* The monotonic time timeout_s from now. */
static uint64_t p_deadline(unsigned timeout_s)
{
    return fl_mono_ns() + (uint64_t)timeout_s * 1000000000u;
}

/* The result of the command just sent on db (its last, for a text of
 * several statements, as PQexec's), waited for until deadline; the caller
 * clears it.  NULL when the connection failed (PQerrorMessage says why)
 * or, *late set, when no answer came by the deadline: the connection is
 * then in the middle of the command, good only for PQfinish().  The
 * connection is nonblocking (p_connectdb), so sending a large statement
 * to a database that reads nothing waits here too, not in libpq.  The
 * same system calls as PQexec's wait: a poll() and a read per answer. */
static PGresult *p_await(PGconn *db, uint64_t deadline, bool *late)
{
    PGresult *last = NULL;
    *late = false;
    for (;;) {
        int f;
        while ((f = PQflush(db)) != 0 || PQisBusy(db)) {
            if (f < 0)
                goto broken;
            uint64_t now = fl_mono_ns();
            if (now >= deadline) {
                *late = true;
                goto broken;
            }
            uint64_t ms = (deadline - now + 999999) / 1000000;
            struct pollfd p = {.fd = PQsocket(db), .events = POLLIN | (f ? POLLOUT : 0)};
            if (p.fd < 0)
                goto broken;
            int n = poll(&p, 1, ms > 60000 ? 60000 : (int)ms);
            if (n < 0 && errno != EINTR)
                goto broken;
            /* Readable, or shut: PQconsumeInput finds which. */
            if (n > 0 && (p.revents & ~POLLOUT) && !PQconsumeInput(db))
                goto broken;
        }
        PGresult *r = PQgetResult(db);
        if (!r)
            return last;
        PQclear(last);
        last = r;
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH ||
            PQstatus(db) == CONNECTION_BAD)
            return last;
    }
broken:
    PQclear(last);
    return NULL;
}

/* A text without parameters on db (several statements allowed), as
 * PQexec, but within timeout_s. */
static PGresult *p_exec_text(PGconn *db, const char *sql, unsigned timeout_s, bool *late)
{
    *late = false;
    if (!PQsendQuery(db, sql))
        return NULL;
    return p_await(db, p_deadline(timeout_s), late);
}

#define P_LATE_TEXT "PostgreSQL did not answer within %u s (serve --db-timeout)"

/* c's connection closed, and what went with its session; p_ready()
 * makes a new one. */
static void p_hangup(pconn *c)
{
    PQfinish(c->db); /* nonblocking: does not wait to send its goodbye */
    c->db = NULL;
    p_prep_clear(c);
    c->listening[0] = '\0';
}

/* A statement of c not answered in time: said, and its connection
 * dropped. */
static void p_drop(pconn *c, const char *what)
{
    p_seterr(c,
             P_LATE_TEXT "%s%s; the connection to PostgreSQL is dropped: the next call outside a "
                         "transaction reconnects",
             c->timeout_s, what ? " to " : "", what ? what : "");
    p_hangup(c);
}

/* The name of sql's prepared statement on c, preparing it the first time;
 * NULL: run it unprepared -- or, when *failed is set, not at all: the
 * failed preparation (caller clears) aborted the transaction it ran in,
 * which would refuse the statement without saying why (a lock or
 * statement timeout while parsing).  Parsing and planning each statement
 * again took most of the database's time per crash; a worker runs the
 * same dozen statements for every one. */
static const char *p_prepared(pconn *c, const char *sql, int n, char name[16], PGresult **failed,
                              bool *late)
{
    /* Only these can be prepared (not BEGIN, LOCK, several statements). */
    if (strncmp(sql, "SELECT", 6) && strncmp(sql, "INSERT", 6) && strncmp(sql, "UPDATE", 6) &&
        strncmp(sql, "DELETE", 6) && strncmp(sql, "WITH", 4))
        return NULL;
    size_t i = 0;
    for (; i < c->nprep; i++)
        if (c->prep[i].sql == sql)
            break;
    if (i < c->nprep) {
        if (c->prep[i].text && !strcmp(c->prep[i].text, sql)) {
            snprintf(name, 16, "fl%u", (unsigned)i);
            return name;
        }
        free(c->prep[i].text); /* a buffer with another text now: never again */
        c->prep[i].text = NULL;
        return NULL;
    }
    if (c->nprep == P_PREPARED || !(c->prep[i].text = strdup(sql)))
        return NULL;
    snprintf(name, 16, "fl%u", (unsigned)i);
    PGresult *r = PQsendPrepare(c->db, name, sql, n, NULL)
                      ? p_await(c->db, p_deadline(c->timeout_s), late)
                      : NULL;
    if (*late) {
        free(c->prep[i].text);
        c->prep[i].text = NULL;
        return NULL;
    }
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok && PQtransactionStatus(c->db) == PQTRANS_INERROR)
        *failed = r;
    else
        PQclear(r);
    if (!ok) {
        /* Run it unprepared, which reports the error, if any (unless
         * *failed). */
        free(c->prep[i].text);
        c->prep[i].text = NULL;
        return NULL;
    }
    c->prep[i].sql = sql;
    c->nprep++;
    return name;
}

/* A process stopped inside a transaction (SIGSTOP, a paused VM, a host
 * cut off: nothing that closes its socket) would keep the transaction's
 * row locks for good, and every worker applying a crash of the same
 * groups would wait behind it.  So the server ends such a session after
 * IDLE_TXN of silence -- its client, if it ever runs again, finds the
 * connection gone and retries the batch.  Our transactions send one
 * statement after another, never waiting on anything else in between.  A
 * value set by the URL (options=-c idle_in_transaction_session_timeout=...),
 * the role or the database wins.  Best effort: an error leaves the
 * server's setting.  Short, because the wait adds up: a frozen worker's
 * second session, its statement waiting for the first one's lock, goes
 * idle in its own transaction once PostgreSQL ends the first, so a frozen
 * process with N worker threads holds its groups for up to N times this
 * (60 s with two threads at 30 s, measured in the scale-out test). */
#define IDLE_TXN "10s"
/* And the other way round: a statement whose connection the store
 * dropped at its deadline (p_drop) -- the database alive but slow, say
 * waiting for a lock -- would run on in its session until it tried to
 * answer, and a write outside a transaction would be made after its
 * caller was told it failed.  So the session looks for its client every
 * CLIENT_CHECK while a statement runs and ends when it is gone
 * (PostgreSQL 14 and later; client_connection_check_interval is unknown
 * before, and current_setting(..., true) NULL: nothing is set).  The
 * same precedence as above. */
#define CLIENT_CHECK "5s"
/* Also makes db nonblocking (see p_await).  False when the database did
 * not answer within timeout_s: db is then good only for PQfinish(). */
static bool p_session(PGconn *db, unsigned timeout_s)
{
    PQsetnonblocking(db, 1);
    bool late;
    PQclear(p_exec_text(
        db,
        "SELECT set_config('idle_in_transaction_session_timeout', '" IDLE_TXN "', false) "
        "WHERE current_setting('idle_in_transaction_session_timeout') = '0' UNION ALL "
        "SELECT set_config('client_connection_check_interval', '" CLIENT_CHECK "', false) "
        "WHERE current_setting('client_connection_check_interval', true) = '0'",
        timeout_s, &late));
    return !late;
}

static PGconn *p_connectdb(const char *url, unsigned timeout_s, bool *late);

/* A usable connection: one that broke, or was dropped, is re-established
 * here -- but not inside a transaction, whose earlier statements died
 * with it (running the rest on a new connection would commit half of
 * it). */
static int p_ready(pconn *c)
{
    if (PQstatus(c->db) == CONNECTION_OK)
        return 0;
    if (c->txn) {
        p_seterr(c, "the connection to PostgreSQL was lost in the transaction; roll it back");
        return -1;
    }
    bool late = false;
    if (c->db) {
        PQreset(c->db);
        if (PQstatus(c->db) == CONNECTION_OK && !p_session(c->db, c->timeout_s)) {
            PQfinish(c->db);
            c->db = NULL;
            late = true;
        }
    } else {
        c->db = p_connectdb(c->url, c->timeout_s, &late);
    }
    p_prep_clear(c); /* they went with the old session */
    c->listening[0] = '\0'; /* and so did LISTEN */
    if (late) {
        p_drop(c, "a new connection");
        return -1;
    }
    if (PQstatus(c->db) != CONNECTION_OK) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", c->db ? PQerrorMessage(c->db) : "out of memory");
        p_trim(msg);
        p_seterr(c, "cannot reconnect to PostgreSQL: %s", msg);
        return -1;
    }
    return 0;
}

/* Run sql with n parameters -- prepared on the connection when prep (a
 * literal: never SQL built at run time, whose every variant would take a
 * slot) --; the result (caller clears) when it succeeded,
 * else NULL with c->err set.  binary: every result column in binary (for
 * bytea; the r_ helpers read either format). */
static PGresult *p_execv(pconn *c, const char *sql, int n, const char *const *v, const int *len,
                         const int *fmt, int binary, bool prep)
{
    c->rerun = false;
    for (int attempt = 0;; attempt++) {
        if (p_ready(c))
            return NULL;
        char name[16];
        PGresult *r = NULL;
        bool late = false;
        const char *ps = !prep || (c->txn && PQtransactionStatus(c->db) == PQTRANS_INERROR)
                             ? NULL
                             : p_prepared(c, sql, n, name, &r, &late);
        if (!r && !late &&
            (ps ? PQsendQueryPrepared(c->db, ps, n, v, len, fmt, binary)
                : PQsendQueryParams(c->db, sql, n, NULL, v, len, fmt, binary)))
            r = p_await(c->db, p_deadline(c->timeout_s), &late);
        if (late) {
            /* Not run again: it may be running still, and a second wait
             * as long would double the caller's. */
            p_drop(c, NULL);
            return NULL;
        }
        if (!r && PQtransactionStatus(c->db) == PQTRANS_ACTIVE) {
            /* The wait failed (poll() did) with the statement in flight:
             * the connection would refuse every next one. */
            p_fail(c, NULL);
            p_hangup(c);
            return NULL;
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
            return r;
        /* A session the database ended while the connection sat idle (a
         * restart, a failover) is found dead only by the next statement,
         * which never reached it.  Outside a transaction that statement
         * runs once more on a new connection (p_ready() makes it): a read,
         * a BEGIN, or a single write.  Had the session died while running
         * it instead, running it twice costs no more than a claim leased
         * twice (the first lease expires); a processing start looks at
         * c->rerun; the other writes made outside transactions set a state,
         * which a second run sets again, or are written to answer the same
         * either way (the projects' keys), or look at c->rerun. */
        bool again = attempt == 0 && !c->txn && PQstatus(c->db) == CONNECTION_BAD;
        if (!again) {
            p_fail(c, r);
            PQclear(r);
            return NULL;
        }
        PQclear(r);
        c->rerun = true;
    }
}

static PGresult *p_exec(pconn *c, const char *sql, const p_args *a, int binary)
{
    return a ? p_execv(c, sql, a->n, a->v, a->len, a->fmt, binary, true)
             : p_execv(c, sql, 0, NULL, NULL, NULL, binary, true);
}

/* Run a statement whose result is not needed: 0 or -1. */
static int p_run(pconn *c, const char *sql, const p_args *a)
{
    PGresult *r = p_exec(c, sql, a, 0);
    PQclear(r);
    return r ? 0 : -1;
}

/* The number of rows a statement changed (its command tag's count). */
static int64_t p_changes(const PGresult *r)
{
    return strtoll(PQcmdTuples((PGresult *)r), NULL, 10);
}

static int64_t r_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    const char *v = PQgetvalue(r, row, col);
    if (PQfformat(r, col) == 0)
        return strtoll(v, NULL, 10);
    /* Binary: a big-endian integer of 2, 4 or 8 bytes. */
    int n = PQgetlength(r, row, col);
    uint64_t x = 0;
    for (int i = 0; i < n; i++)
        x = x << 8 | (unsigned char)v[i];
    if (n > 0 && n < 8 && ((unsigned char)v[0] & 0x80))
        x |= ~UINT64_C(0) << (8 * n);
    return (int64_t)x;
}

static bool r_bool(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return false;
    const char *v = PQgetvalue(r, row, col);
    return PQfformat(r, col) == 0 ? v[0] == 't' : v[0] != 0;
}

static const char *r_str(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static json_t *r_text_json(const PGresult *r, int row, int col)
{
    const char *s = r_str(r, row, col);
    return s ? json_string(s) : json_null();
}

static json_t *r_time_json(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return json_null();
    char b[32];
    fl_iso_time(r_i64(r, row, col), b);
    return json_string(b);
}

/* ---- connections and transactions */

/* libpq prints the server's notices to stderr by default; a library
 * does not print. */
static void p_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Keepalives, so that a database gone from the network fails calls within
 * a minute instead of hanging them; before dbname, so that the URL's own
 * settings win. */
/* A connection times out as a statement does, 10 s at most (libpq takes
 * 2 s at least).  *late: the new session did not answer its first
 * statement in time (and NULL is returned). */
static PGconn *p_connectdb(const char *url, unsigned timeout_s, bool *late)
{
    static const char *const keys[] = {
        "connect_timeout",  "keepalives", "keepalives_idle",           "keepalives_interval",
        "keepalives_count", "dbname",     "fallback_application_name", NULL};
    char ct[16];
    snprintf(ct, sizeof ct, "%u", timeout_s < 10 ? timeout_s : 10);
    const char *vals[] = {ct, "1", "30", "10", "3", url, "faultline", NULL};
    *late = false;
    PGconn *db = PQconnectdbParams(keys, vals, 1);
    if (db)
        PQsetNoticeProcessor(db, p_quiet, NULL);
    if (db && PQstatus(db) == CONNECTION_OK && !p_session(db, timeout_s)) {
        PQfinish(db);
        *late = true;
        return NULL;
    }
    return db;
}

static fl_store_conn *p_connect(fl_store *st)
{
    pstore *s = (pstore *)st;
    pconn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    bool late;
    c->url = s->url;
    c->timeout_s = s->timeout_s;
    c->db = p_connectdb(s->url, s->timeout_s, &late);
    if (!c->db || PQstatus(c->db) != CONNECTION_OK) {
        PQfinish(c->db);
        free(c);
        return NULL;
    }
    c->pub.store = st;
    c->pub.data = c;
    return &c->pub;
}

static void trend_clear(pconn *c);

static void p_disconnect(fl_store_conn *pc)
{
    if (!pc)
        return;
    pconn *c = (pconn *)pc;
    PQfinish(c->db);
    p_prep_clear(c);
    trend_clear(c);
    free(c->trend);
    free(c);
}

static void trend_clear(pconn *c)
{
    for (size_t i = 0; i < c->ntrend; i++) {
        free(c->trend[i].app);
        free(c->trend[i].day);
        free(c->trend[i].kind);
        free(c->trend[i].value);
        free(c->trend[i].install);
    }
    c->ntrend = 0;
}

static int trend_cmp(const void *a, const void *b)
{
    const trend_inc *x = a, *y = b;
    int r;
    if ((r = (x->install != NULL) - (y->install != NULL)) || (r = strcmp(x->app, y->app)) ||
        (r = strcmp(x->day, y->day)))
        return r;
    if (x->install)
        return strcmp(x->install, y->install);
    return (r = strcmp(x->kind, y->kind)) ? r : strcmp(x->value, y->value);
}

/* The trends are the hottest rows of all -- every crash of an app on a day
 * counts in the same app_days row -- so they are written last, just before
 * COMMIT, in one global order (sorted, equal increments merged): a worker
 * then takes its groups' locks first (in group order, worker.c) and the
 * trend rows last (in this order), so no two transactions wait for each
 * other in a circle, and each holds a trend row only for the commit. */
static int trend_flush(pconn *c)
{
    if (c->ntrend == 0)
        return 0;
    qsort(c->trend, c->ntrend, sizeof *c->trend, trend_cmp);
    for (size_t i = 0, j; i < c->ntrend; i = j) {
        for (j = i + 1; j < c->ntrend && !trend_cmp(&c->trend[i], &c->trend[j]); j++)
            ;
        const trend_inc *t = &c->trend[i];
        p_args a = {0};
        p_text(&a, t->app);
        p_text(&a, t->day);
        int rc;
        if (t->install) {
            p_text(&a, t->install);
            rc = p_run(c, "INSERT INTO app_installs VALUES($1,$2,$3) ON CONFLICT DO NOTHING", &a);
        } else {
            p_text(&a, t->kind);
            p_text(&a, t->value);
            p_int(&a, (int64_t)(j - i));
            rc = p_run(c,
                       "INSERT INTO app_days AS t VALUES($1,$2,$3,$4,$5) ON CONFLICT (app, day, "
                       "kind, value) DO UPDATE SET count=t.count+excluded.count",
                       &a);
        }
        if (rc)
            return -1;
    }
    trend_clear(c);
    return 0;
}

static int trend_push(pconn *c, const char *app, const char *day, const char *kind,
                      const char *value, const char *install)
{
    if (c->ntrend == c->trend_cap) {
        size_t nc = c->trend_cap ? c->trend_cap * 2 : 64;
        trend_inc *nt = realloc(c->trend, nc * sizeof *nt);
        if (!nt)
            return -1;
        c->trend = nt;
        c->trend_cap = nc;
    }
    trend_inc *t = &c->trend[c->ntrend];
    *t = (trend_inc){strdup(app), strdup(day), strdup(kind ? kind : ""), strdup(value ? value : ""),
                     install ? strdup(install) : NULL};
    if (!t->app || !t->day || !t->kind || !t->value || (install && !t->install)) {
        free(t->app);
        free(t->day);
        free(t->kind);
        free(t->value);
        free(t->install);
        p_seterr(c, "out of memory");
        return -1;
    }
    c->ntrend++;
    return 0;
}

/* One more processed crash in its application's trends (see store_sqlite.c),
 * written at commit() -- or at once for a caller outside a transaction. */
static int trend_add(pconn *c, const fl_processed *p)
{
    char day[16];
    fl_iso_day(p->received, day);
    const char *app = p->app ? p->app : "";
    if (trend_push(c, app, day, "c", "", NULL) || trend_push(c, app, day, "v", p->version, NULL) ||
        trend_push(c, app, day, "o", p->os, NULL) || trend_push(c, app, day, "a", p->arch, NULL) ||
        (p->install_id && trend_push(c, app, day, NULL, NULL, p->install_id)))
        return -1;
    return c->txn ? 0 : trend_flush(c);
}

static void p_rollback(fl_store_conn *pc);

/* A row of settings written and removed: a database that went read-only
 * or lost its disk says so. */
static int p_ping(fl_store_conn *pc)
{
    PGresult *r = p_exec((pconn *)pc, "SELECT 1", NULL, 0);
    PQclear(r);
    return r ? 0 : -1;
}

static int p_probe(fl_store_conn *pc)
{
    pconn *c = (pconn *)pc;
    return p_run(c,
                 "INSERT INTO settings(name, value) VALUES('probe', repeat('x', 8192)) "
                 "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                 NULL) ||
                   p_run(c, "DELETE FROM settings WHERE name = 'probe'", NULL)
               ? -1
               : 0;
}

static int p_begin(fl_store_conn *pc)
{
    pconn *c = (pconn *)pc;
    trend_clear(c);
    c->symlock = false;
    if (p_run(c, "BEGIN", NULL))
        return -1;
    c->txn = true;
    return 0;
}

static int p_commit(fl_store_conn *pc)
{
    pconn *c = (pconn *)pc;
    if (trend_flush(c)) {
        trend_clear(c);
        p_rollback(pc);
        return -1;
    }
    PGresult *r = p_exec(c, "COMMIT", NULL, 0);
    c->txn = false; /* over, committed or not */
    c->symlock = false;
    if (!r)
        return -1;
    /* COMMIT of a transaction that had failed answers "ROLLBACK", not an
     * error. */
    bool ok = !strcmp(PQcmdStatus(r), "COMMIT");
    PQclear(r);
    if (!ok)
        p_seterr(c, "the transaction was rolled back: a statement in it had failed");
    return ok ? 0 : -1;
}

static void p_rollback(fl_store_conn *pc)
{
    pconn *c = (pconn *)pc;
    trend_clear(c);
    c->txn = false;
    c->symlock = false;
    PGTransactionStatusType t = PQtransactionStatus(c->db);
    if (t == PQTRANS_INTRANS || t == PQTRANS_INERROR)
        PQclear(p_exec(c, "ROLLBACK", NULL, 0));
}

static const char *p_error(fl_store_conn *pc)
{
    pconn *c = (pconn *)pc;
    return c->err[0] ? c->err : "no error";
}

static bool p_conflict(fl_store_conn *pc)
{
    return strstr(((pconn *)pc)->err, P_CONFLICT_TEXT) != NULL;
}

/* The connection is down (lost, and not made again by p_ready), or the
 * transaction met another one: asked again, it may well work. */
static bool p_unavailable(fl_store_conn *pc)
{
    pconn *c = (pconn *)pc;
    return PQstatus(c->db) != CONNECTION_OK || p_conflict(pc) ||
           strstr(c->err, "connection to PostgreSQL");
}

/* ---- ingest */

/* Orders a batch by crash id, then by position: the first of equal ids
 * comes first. */
static int by_id(const void *a, const void *b)
{
    const fl_ingest_item *x = *(fl_ingest_item *const *)a, *y = *(fl_ingest_item *const *)b;
    int r = strcmp(x->crash_id, y->crash_id);
    return r ? r : (x < y ? -1 : x > y);
}

static int by_id_key(const void *key, const void *elem)
{
    return strcmp((const char *)key, (*(fl_ingest_item *const *)elem)->crash_id);
}

/* Append to the SQL text sql[0..cap) at *at (placeholders only, never a
 * value); the sizes below leave room, and a text cut short would fail to
 * parse rather than run. */
static void p_cat(char *sql, size_t cap, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void p_cat(char *sql, size_t cap, size_t *at, const char *fmt, ...)
{
    if (*at >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sql + *at, cap - *at, fmt, ap);
    va_end(ap);
    *at = n < 0 ? cap : *at + (size_t)n;
}

/* The project a row keeps: NULL for the default one however it was
 * named, so that rows from before projects and new ones of the default
 * project look alike (and "default" matches both in list_groups). */
static const char *proj_col(const char *project)
{
    return project && *project && strcmp(project, FL_PROJECT_DEFAULT) ? project : NULL;
}

/* Insert v[0..k) (distinct ids, sorted) in one statement; those the
 * database did not take (the id was stored already) are duplicates. */
static int insert_rows(pconn *c, fl_ingest_item **v, size_t k)
{
    enum { COLS = 8 };
    size_t np = k * COLS;
    const char **vals = calloc(np, sizeof *vals);
    int *lens = calloc(np, sizeof *lens), *fmts = calloc(np, sizeof *fmts);
    char(*num)[24] = calloc(2 * k, sizeof *num);
    void **z = calloc(k, sizeof *z);
    size_t cap = 256 + k * 56; /* ",($4000,...,$4000)": < 56 bytes a row */
    char *sql = malloc(cap);
    PGresult *r = NULL;
    int rc = -1;
    if (!vals || !lens || !fmts || !num || !z || !sql) {
        p_seterr(c, "out of memory");
        goto out;
    }
    size_t at = 0;
    p_cat(sql, cap, &at,
          "INSERT INTO crashes(id, app, version, received, raw, raw_len, email, project) "
          "VALUES");
    for (size_t i = 0; i < k; i++) {
        size_t p = i * COLS, zl = 0;
        const fl_ingest_item *it = v[i];
        if (fl_zstd(it->raw, it->raw_len, FL_RAW_ZSTD_LEVEL, &z[i], &zl)) {
            p_seterr(c, "cannot compress a raw log");
            goto out;
        }
        snprintf(num[2 * i], sizeof num[0], "%" PRId64, it->received);
        snprintf(num[2 * i + 1], sizeof num[0], "%zu", it->raw_len);
        vals[p] = it->crash_id;
        vals[p + 1] = it->app;
        vals[p + 2] = it->version;
        vals[p + 3] = num[2 * i];
        vals[p + 4] = z[i];
        lens[p + 4] = (int)zl;
        fmts[p + 4] = 1;
        vals[p + 5] = num[2 * i + 1];
        vals[p + 6] = it->email;
        vals[p + 7] = proj_col(it->project);
        p_cat(sql, cap, &at, "%s($%zu,$%zu,$%zu,$%zu,$%zu,$%zu,$%zu,$%zu)", i ? "," : "", p + 1,
              p + 2, p + 3, p + 4, p + 5, p + 6, p + 7, p + 8);
    }
    p_cat(sql, cap, &at, " ON CONFLICT (id) DO NOTHING RETURNING id");
    if (!(r = p_execv(c, sql, (int)np, vals, lens, fmts, 0, false)))
        goto out;
    for (size_t i = 0; i < k; i++)
        v[i]->duplicate = true;
    for (int row = 0; row < PQntuples(r); row++) {
        fl_ingest_item **hit = bsearch(PQgetvalue(r, row, 0), v, k, sizeof *v, by_id_key);
        if (hit)
            (*hit)->duplicate = false;
    }
    rc = 0;
out:
    PQclear(r);
    for (size_t i = 0; z && i < k; i++)
        free(z[i]);
    free(z);
    free(sql);
    free(num);
    free(fmts);
    free(lens);
    free(vals);
    return rc;
}

static int p_insert_crashes(fl_store_conn *pc, fl_ingest_item *const *items, size_t n)
{
    pconn *c = (pconn *)pc;
    if (n == 0)
        return 0;
    fl_ingest_item **v = malloc(n * sizeof *v);
    if (!v) {
        p_seterr(c, "out of memory");
        return -1;
    }
    memcpy(v, items, n * sizeof *v);
    qsort(v, n, sizeof *v, by_id);
    size_t nu = 0;
    for (size_t i = 0; i < n; i++) {
        v[i]->ref[0] = '\0'; /* the crash id names it */
        v[i]->duplicate = i > 0 && !strcmp(v[i]->crash_id, v[i - 1]->crash_id);
        if (!v[i]->duplicate)
            v[nu++] = v[i]; /* the distinct ids, still sorted */
    }
    int rc = 0;
    for (size_t i = 0; i < nu && rc == 0; i += INSERT_ROWS)
        rc = insert_rows(c, v + i, nu - i < INSERT_ROWS ? nu - i : INSERT_ROWS);
    /* A stored crash's minidump; a resend of it (the same crash id: its
     * hash) is the row there already. */
    for (size_t i = 0; i < nu && rc == 0; i++) {
        if (!v[i]->dump || v[i]->duplicate)
            continue;
        p_args a = {0};
        p_text(&a, v[i]->crash_id);
        p_int(&a, (int64_t)v[i]->dump_size);
        p_bin(&a, v[i]->dump, v[i]->dump_len);
        rc = p_run(c,
                   "INSERT INTO minidumps(crash_id, size, data) VALUES($1,$2,$3) ON CONFLICT "
                   "(crash_id) DO NOTHING",
                   &a);
    }
    free(v);
    return rc;
}

static int p_get_minidump(fl_store_conn *pc, const char *id, char **data, size_t *len)
{
    pconn *c = (pconn *)pc;
    *data = NULL;
    *len = 0;
    p_args a = {0};
    p_text(&a, id);
    PGresult *r = p_exec(c, "SELECT size, data FROM minidumps WHERE crash_id=$1", &a, 1);
    if (!r)
        return -1;
    int rc = 1;
    if (PQntuples(r) == 1) {
        rc = 0;
        if (fl_unzstd(PQgetvalue(r, 0, 1), (size_t)PQgetlength(r, 0, 1), FL_MINIDUMP_MAX, data,
                      len) ||
            *len != (size_t)r_i64(r, 0, 0)) {
            rc = -1;
            free(*data);
            *data = NULL;
            p_seterr(c, "the stored minidump of %s is damaged", id);
        }
    }
    PQclear(r);
    return rc;
}

static int p_load_raw(fl_store_conn *pc, const char *ref, char **raw, size_t *len,
                      int64_t *received, char id[FL_CRASH_ID_MAX], char project[FL_PROJECT_MAX])
{
    pconn *c = (pconn *)pc;
    *raw = NULL;
    if (project)
        project[0] = '\0';
    p_args a = {0};
    p_text(&a, ref);
    PGresult *r =
        p_exec(c, "SELECT raw, received, state, resym, project FROM crashes WHERE id=$1", &a, 1);
    if (!r)
        return FL_LOAD_UNAVAILABLE;
    int rc = 1;
    if (PQntuples(r) == 1) {
        int state = (int)r_i64(r, 0, 2);
        bool resym = r_bool(r, 0, 3);
        if (state != 0 && !(state == 1 && resym)) {
            rc = 2;
        } else if (fl_unzstd(PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0), MAX_RAW, raw,
                             len)) {
            *raw = NULL;
            p_seterr(c, "the stored log of %s is damaged", ref);
            rc = -1;
        } else {
            *received = r_i64(r, 0, 1);
            if (id)
                snprintf(id, FL_CRASH_ID_MAX, "%s", ref);
            const char *pj = r_str(r, 0, 4);
            if (project && pj)
                snprintf(project, FL_PROJECT_MAX, "%s", pj);
            rc = state == 1 ? 3 : 0;
        }
    }
    PQclear(r);
    return rc;
}

/* ---- processing */

static int p_processing_started(fl_store_conn *pc, const char *ref, unsigned *before)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_text(&a, ref);
    /* Outside a transaction this commits on its own, as the contract asks. */
    PGresult *r = p_exec(c,
                         "INSERT INTO processing AS t VALUES($1, 1) ON CONFLICT (ref) DO UPDATE "
                         "SET starts=t.starts+1 RETURNING starts",
                         &a, 0);
    if (!r)
        return -1;
    *before = (unsigned)(r_i64(r, 0, 0) - 1);
    PQclear(r);
    /* Run twice (p_execv): the first run may have counted this start
     * already, and a good report would be failed one server stop early.
     * Counted once then -- one too few when the first run had not
     * committed: on the side of processing a report once more. */
    if (c->rerun && *before > 0) {
        (*before)--;
        return p_run(c, "UPDATE processing SET starts=starts-1 WHERE ref=$1 AND starts>1", &a);
    }
    return 0;
}

static int p_processing_ended(fl_store_conn *pc, const char *ref)
{
    p_args a = {0};
    p_text(&a, ref);
    return p_run((pconn *)pc, "DELETE FROM processing WHERE ref=$1", &a);
}

static int p_requeue(fl_store_conn *pc, const char *id)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_text(&a, id);
    PGresult *r = p_exec(c, "SELECT state FROM crashes WHERE id=$1 FOR UPDATE", &a, 0);
    if (!r)
        return -1;
    int state = PQntuples(r) == 1 ? (int)r_i64(r, 0, 0) : -1;
    PQclear(r);
    if (state < 0)
        return 1;
    if (state == 0)
        return 2;
    if (state == 3)
        return 3;
    if (state == 1) {
        /* As symbols_arrived(): load_raw() then hands it out again, and
         * reapply() moves it to its new group if the signature changed.
         * One already marked is queued to be processed again already. */
        r = p_exec(c,
                   "UPDATE crashes SET resym=true, published=false, waiting_since=" NOW_S
                   " WHERE id=$1 AND NOT resym",
                   &a, 0);
        if (!r)
            return -1;
        int64_t changed = p_changes(r);
        PQclear(r);
        return changed ? 0 : 2;
    }
    /* Failed: processed as if new, counted in its group then.  What the
     * watch of a report that stopped the server knew goes too. */
    if (p_run(c, "UPDATE crashes SET state=0, published=false, waiting_since=" NOW_S " WHERE id=$1",
              &a))
        return -1;
    return p_processing_ended(pc, id);
}

/* ---- deleting crashes (fl_store.h) */

/* After crash id of group gid went: the group's representative crash, if
 * it was that one, becomes its oldest left (NULL when none is). */
static int sample_moved(pconn *c, const char *gid, const char *id)
{
    p_args a = {0};
    p_text(&a, gid);
    p_text(&a, id);
    return p_run(c,
                 "UPDATE groups SET sample_crash=(SELECT id FROM crashes WHERE group_id=$1 ORDER "
                 "BY rid LIMIT 1) WHERE id=$1 AND sample_crash=$2",
                 &a);
}

/* What goes with a crash wherever it went: its minidump, its build ids waiting for
 * symbols, the watch of its processing. */
static int crash_forget(pconn *c, const char *id)
{
    p_args a = {0};
    p_text(&a, id);
    return p_run(c, "DELETE FROM crash_missing WHERE crash_id=$1", &a) ||
                   p_run(c, "DELETE FROM processing WHERE ref=$1", &a) ||
                   p_run(c, "DELETE FROM minidumps WHERE crash_id=$1", &a)
               ? -1
               : 0;
}

static int p_delete_crash(fl_store_conn *pc, const char *id)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_text(&a, id);
    PGresult *r = p_exec(c, "SELECT state, group_id FROM crashes WHERE id=$1 FOR UPDATE", &a, 0);
    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return 1;
    }
    int state = (int)r_i64(r, 0, 0);
    char gid[64];
    snprintf(gid, sizeof gid, "%s", r_str(r, 0, 1) ? r_str(r, 0, 1) : "");
    PQclear(r);
    if (state == 3)
        return 2;
    /* Not waiting for anything any more (state 3, resym off): out of the
     * queue's indexes; a task still naming it finds it done (load_raw). */
    if (p_run(c,
              "UPDATE crashes SET state=3, resym=false, published=true, raw=''::bytea, "
              "raw_len=0, processed=NULL, email=NULL, install_id=NULL, group_id=NULL, "
              "stack_hash=NULL WHERE id=$1",
              &a) ||
        crash_forget(c, id))
        return -1;
    return gid[0] ? sample_moved(c, gid, id) : 0;
}

static int p_expire(fl_store_conn *pc, int64_t before, size_t max, size_t *n)
{
    pconn *c = (pconn *)pc;
    *n = 0;
    p_args a = {0};
    p_int(&a, before);
    p_int(&a, (int64_t)max);
    /* SKIP LOCKED: another server's pass, or a worker re-processing one of
     * them, takes the rows it holds; this pass the others. */
    PGresult *r =
        p_exec(c,
               "DELETE FROM crashes WHERE id IN (SELECT id FROM crashes WHERE state IN "
               "(1,2) AND received < $1 AND NOT resym ORDER BY received LIMIT $2 FOR UPDATE SKIP "
               "LOCKED) RETURNING id, group_id",
               &a, 0);
    if (!r)
        return -1;
    int rc = 0;
    int rows = PQntuples(r);
    for (int i = 0; i < rows && !rc; i++) {
        const char *id = r_str(r, i, 0), *gid = r_str(r, i, 1);
        rc = crash_forget(c, id) || (gid && sample_moved(c, gid, id)) ? -1 : 0;
    }
    PQclear(r);
    if (!rc)
        *n = (size_t)rows;
    return rc;
}

/* ---- deleting a group (fl_store.h's delete_group; as in store_sqlite.c) */

static int run_gid(pconn *c, const char *sql, const char *gid, const char *v);

/* Group gid goes: its signature's next crash takes generation gen + 1 of
 * its base id, and a tombstone keeps gid (of: the group it was merged
 * into and deleted with, or NULL).  The group_gen row is locked: two
 * deletes of one signature's groups take turns. */
static int group_bury(pconn *c, const char *gid, const char *of)
{
    p_args a = {0};
    p_text(&a, gid);
    PGresult *r = p_exec(c, "SELECT base, gen FROM group_gen WHERE cur=$1 FOR UPDATE", &a, 0);
    if (!r)
        return -1;
    char base[64], cur[33], gen[24];
    int64_t g = 1;
    snprintf(base, sizeof base, "%s", PQntuples(r) == 1 ? r_str(r, 0, 0) : gid);
    if (PQntuples(r) == 1)
        g = r_i64(r, 0, 1) + 1;
    PQclear(r);
    fl_group_gen_id(base, g, cur);
    snprintf(gen, sizeof gen, "%lld", (long long)g);
    p_args u = {0};
    p_text(&u, base);
    p_text(&u, gen);
    p_text(&u, cur);
    p_args t = {0};
    p_text(&t, gid);
    p_text(&t, "false"); /* a merged group's crashes are erased with of's */
    p_text(&t, of);
    return p_run(c,
                 "INSERT INTO group_gen AS t VALUES($1,$2::bigint,$3) ON CONFLICT (base) DO "
                 "UPDATE SET gen=excluded.gen, cur=excluded.cur",
                 &u) ||
                   p_run(c,
                         "INSERT INTO groups_deleted(id, deleted, done, of_group) VALUES($1," NOW_S
                         ",$2::boolean,$3) ON CONFLICT DO NOTHING",
                         &t)
               ? -1
               : 0;
}

static int p_group_deleted(fl_store_conn *pc, const char *id, int64_t *when, int64_t *crashes,
                           bool *fin, char *with)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_text(&a, id);
    PGresult *r =
        p_exec(c, "SELECT deleted, crashes, done, of_group FROM groups_deleted WHERE id=$1", &a, 0);
    if (!r)
        return -1;
    int rc = PQntuples(r) == 1 ? 0 : 1;
    if (!rc) {
        *when = r_i64(r, 0, 0);
        *crashes = r_i64(r, 0, 1);
        *fin = r_bool(r, 0, 2);
        snprintf(with, 64, "%s", r_str(r, 0, 3) ? r_str(r, 0, 3) : "");
    }
    PQclear(r);
    return rc;
}

/* The group's row and those merged into it are locked in id order, as
 * the workers and merge_group lock groups. */
static int p_delete_group(fl_store_conn *pc, const char *id, char *into)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_text(&a, id);
    static const char lock_sql[] = "SELECT id, merged_into FROM groups WHERE id=$1 OR "
                                   "merged_into=$1 ORDER BY id FOR UPDATE";
    PGresult *r = p_exec(c, lock_sql, &a, 0);
    if (!r)
        return -1;
    /* Again, now that the rows are ours: the statement chose them in the
     * snapshot it took before it waited for their locks, so a merge into
     * the group that committed meanwhile (merge_group holds the group's
     * row) was not among them, and would be left merged into a group
     * gone -- its id 404, not 410, and every later crash of its signature
     * failing to process.  Holding the group's row, no other merge into
     * it commits before this transaction ends.  (Such a member is locked
     * out of id order: a rare deadlock with a worker, answered 503.) */
    if (PQntuples(r) > 0) {
        PQclear(r);
        if (!(r = p_exec(c, lock_sql, &a, 0)))
            return -1;
    }
    int own = -1, rows = PQntuples(r);
    for (int i = 0; i < rows; i++)
        if (!strcmp(r_str(r, i, 0), id))
            own = i;
    if (own < 0) {
        PQclear(r);
        int64_t when, n;
        bool fin;
        char of[64];
        int rr = p_group_deleted(pc, id, &when, &n, &fin, of);
        return rr < 0 ? -1 : rr == 1 ? 1 : fin ? 2 : 0;
    }
    if (r_str(r, own, 1)) {
        snprintf(into, 64, "%s", r_str(r, own, 1));
        PQclear(r);
        return 3;
    }
    /* Each one's rows, its own and its members' (merge_group leaves them
     * theirs); their crashes and installations go by steps. */
    static const char *const gone[] = {
        "DELETE FROM groups WHERE id=$1",
        "DELETE FROM group_days WHERE group_id=$1",
        "DELETE FROM group_versions WHERE group_id=$1",
        "DELETE FROM group_os WHERE group_id=$1",
        "DELETE FROM group_arch WHERE group_id=$1",
        "DELETE FROM notices WHERE group_id=$1",
    };
    int rc = 0;
    for (int i = 0; i < rows && !rc; i++) {
        const char *gid = r_str(r, i, 0);
        rc = group_bury(c, gid, i == own ? NULL : id);
        for (size_t j = 0; j < sizeof gone / sizeof *gone && !rc; j++)
            rc = run_gid(c, gone[j], gid, NULL);
    }
    PQclear(r);
    return rc ? -1 : 0;
}

static int p_delete_group_step(fl_store_conn *pc, const char *id, size_t max, size_t *n, bool *more)
{
    pconn *c = (pconn *)pc;
    *n = 0;
    *more = true;
    if (!max)
        return 0;
    /* Each crash as delete_crash() does it, max of them in one statement. */
    p_args a = {0};
    p_text(&a, id);
    p_int(&a, (int64_t)max);
    PGresult *r = p_exec(c,
                         "WITH d AS (UPDATE crashes SET state=3, resym=false, published=true, "
                         "raw=''::bytea, raw_len=0, processed=NULL, email=NULL, install_id=NULL, "
                         "group_id=NULL, stack_hash=NULL WHERE id IN (SELECT id FROM crashes "
                         "WHERE group_id=$1 OR group_id IN (SELECT id FROM groups_deleted WHERE "
                         "of_group=$1) LIMIT $2 FOR UPDATE) RETURNING id),"
                         " m AS (DELETE FROM crash_missing WHERE crash_id IN (SELECT id FROM d)),"
                         " p AS (DELETE FROM processing WHERE ref IN (SELECT id FROM d)),"
                         " md AS (DELETE FROM minidumps WHERE crash_id IN (SELECT id FROM d))"
                         " SELECT count(*) FROM d",
                         &a, 0);
    if (!r)
        return -1;
    size_t k = (size_t)r_i64(r, 0, 0);
    PQclear(r);
    bool last = false;
    if (k < max) {
        /* No crash left: the installations, as many as crashes would be. */
        p_args b = {0};
        p_text(&b, id);
        p_int(&b, (int64_t)(max - k));
        if (!(r = p_exec(c,
                         "DELETE FROM group_installs WHERE (group_id, install_id) IN (SELECT "
                         "group_id, install_id FROM group_installs WHERE group_id=$1 OR group_id "
                         "IN (SELECT id FROM groups_deleted WHERE of_group=$1) LIMIT $2)",
                         &b, 0)))
            return -1;
        last = (size_t)p_changes(r) < max - k;
        PQclear(r);
    }
    p_args u = {0};
    p_text(&u, id);
    p_int(&u, (int64_t)k);
    p_text(&u, last ? "true" : "false");
    if (p_run(c,
              "UPDATE groups_deleted SET crashes=crashes+CASE WHEN id=$1 THEN $2::bigint ELSE 0 "
              "END, done=$3::boolean WHERE id=$1 OR of_group=$1",
              &u))
        return -1;
    *n = k;
    *more = !last;
    return 0;
}

/* ---- notifications (fl_store.h) */

static int p_notices_claim(fl_store_conn *pc, int64_t now, unsigned lease_s, int64_t max_wait_s,
                           size_t max, fl_notice *out, size_t *n)
{
    pconn *c = (pconn *)pc;
    *n = 0;
    p_args a = {0};
    p_int(&a, now);
    p_int(&a, now + lease_s);
    p_int(&a, (int64_t)max);
    p_int(&a, now + max_wait_s);
    /* SKIP LOCKED: another server's sender takes the others. */
    PGresult *r = p_exec(c,
                         "UPDATE notices SET attempts=attempts+1, next_try=$2 WHERE id IN (SELECT "
                         "id FROM notices WHERE next_try<=$1 OR next_try>$4 ORDER BY id LIMIT $3 "
                         "FOR UPDATE SKIP LOCKED) RETURNING id, kind, group_id, crash_id, "
                         "created, attempts",
                         &a, 0);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r) && *n < max; i++) {
        fl_notice *t = &out[(*n)++];
        t->id = r_i64(r, i, 0);
        snprintf(t->kind, sizeof t->kind, "%s", r_str(r, i, 1) ? r_str(r, i, 1) : "");
        snprintf(t->group_id, sizeof t->group_id, "%s", r_str(r, i, 2) ? r_str(r, i, 2) : "");
        snprintf(t->crash_id, sizeof t->crash_id, "%s", r_str(r, i, 3) ? r_str(r, i, 3) : "");
        t->created = r_i64(r, i, 4);
        t->attempts = (unsigned)r_i64(r, i, 5);
    }
    PQclear(r);
    return 0;
}

static int p_notice_done(fl_store_conn *pc, int64_t id)
{
    p_args a = {0};
    p_int(&a, id);
    return p_run((pconn *)pc, "DELETE FROM notices WHERE id=$1", &a);
}

static int p_notice_later(fl_store_conn *pc, int64_t id, int64_t next_try)
{
    p_args a = {0};
    p_int(&a, id);
    p_int(&a, next_try);
    return p_run((pconn *)pc, "UPDATE notices SET next_try=$2 WHERE id=$1", &a);
}

/* A PostgreSQL array literal of build ids (hex, or a .dwo file's key:
 * FL_DWO_KEY_PREFIX and hex; nothing to quote), for one statement instead
 * of one per id.  Caller frees; NULL on OOM. */
static char *id_array(const char *const *ids, size_t n)
{
    size_t len = 3;
    for (size_t i = 0; i < n; i++)
        len += strlen(ids[i]) + 1;
    char *out = malloc(len), *at = out;
    if (!out)
        return NULL;
    *at++ = '{';
    for (size_t i = 0; i < n; i++) {
        size_t p = strncmp(ids[i], FL_DWO_KEY_PREFIX, strlen(FL_DWO_KEY_PREFIX))
                       ? 0
                       : strlen(FL_DWO_KEY_PREFIX);
        size_t l = p + strspn(ids[i] + p, "0123456789abcdefABCDEF");
        memcpy(at, ids[i], l); /* anything else in an id is dropped */
        at += l;
        *at++ = i + 1 < n ? ',' : '}';
    }
    if (n == 0)
        *at++ = '}';
    *at = '\0';
    return out;
}

static int record_missing(pconn *c, const fl_processed *p)
{
    p_args a = {0};
    p_text(&a, p->crash_id);
    if (p_run(c, "DELETE FROM crash_missing WHERE crash_id=$1", &a))
        return -1;
    if (p->nmissing == 0)
        return 0;
    char *arr = id_array(p->missing_build_ids, p->nmissing);
    if (!arr) {
        p_seterr(c, "out of memory");
        return -1;
    }
    p_args m = {0};
    p_text(&m, arr);
    p_text(&m, p->crash_id);
    int rc = p_run(
        c, "INSERT INTO crash_missing SELECT unnest($1::text[]), $2 ON CONFLICT DO NOTHING", &m);
    free(arr);
    return rc;
}

/* A notice of kind about p's group, when the store keeps them. */
static int notice_add(pconn *c, const char *kind, const fl_processed *p)
{
    if (!c->pub.store->notify)
        return 0;
    p_args a = {0};
    p_text(&a, kind);
    p_text(&a, p->group_id);
    p_text(&a, p->crash_id);
    return p_run(
        c, "INSERT INTO notices(kind, group_id, crash_id, created) VALUES($1,$2,$3," NOW_S ")", &a);
}

/* One more crash in p's group (created when new): counters, per-day,
 * per-version, per-OS counts, affected installs and the regression rule. */
static int group_add_at(pconn *c, const fl_processed *p, int depth, const char *base);
/* base: the id grouping gave p's signature (p->group_id may be the one
 * that took its place when its group was deleted). */
static int group_add(pconn *c, const fl_processed *p, const char *base)
{
    return group_add_at(c, p, 0, base);
}

static int group_add_at(pconn *c, const fl_processed *p, int depth, const char *base)
{
    /* Created when new, and locked either way, in one round trip: the
     * regression rule reads the status and writes it back, under the row's
     * lock, so that concurrent crashes of the group take turns.  (DO UPDATE
     * rather than DO NOTHING: only it locks and returns an existing row.) */
    p_args a = {0};
    p_text(&a, p->group_id);
    p_text(&a, p->app);
    p_text(&a, p->signature);
    p_text(&a, p->frames_json);
    p_int(&a, p->received);
    p_text(&a, p->crash_id);
    /* A group belongs to the project of the crash that created it (the
     * worker's group ids are per project). */
    p_text(&a, proj_col(p->project));
    PGresult *r = p_exec(c,
                         "INSERT INTO groups AS g(id, app, signature, frames, first_seen, "
                         "last_seen, sample_crash, project) VALUES($1,$2,$3,$4,$5,$5,$6,$7) "
                         "ON CONFLICT (id) DO UPDATE SET id=g.id RETURNING status, resolved_in, "
                         "latest_version, xmax = 0, merged_into",
                         &a, 0);
    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        p_seterr(c, "group %s vanished while a crash was added to it", p->group_id);
        return -1;
    }
    /* The signature's group merged into another (found under the row's
     * lock, so a merge committed while this waited is seen): the crash is
     * still kept and counted in its own -- a merge moves neither crashes
     * nor counters, and the reads add the members' up (store_sqlite.c's
     * MEMBERS_G) --, but the status, which the regression rule reads and
     * sets, and the latest version seen are the other group's.  Holding
     * this row, the worker then locks the other out of the batch's order:
     * a rare deadlock, retried. */
    char into[64] = "";
    if (r_str(r, 0, 4))
        snprintf(into, sizeof into, "%s", r_str(r, 0, 4));
    const char *lv = r_str(r, 0, 2);
    bool newer_own = p->version && (!lv || fl_vercmp(p->version, lv) > 0);
    /* xmax 0: the row was inserted by this statement, not updated. */
    bool created = r_bool(r, 0, 3);
    if (into[0]) {
        PQclear(r);
        p_args t = {0};
        p_text(&t, into);
        if (!(r = p_exec(c,
                         "SELECT status, resolved_in, latest_version FROM groups WHERE id=$1 FOR "
                         "UPDATE",
                         &t, 0)))
            return -1;
        if (PQntuples(r) != 1) {
            PQclear(r);
            p_seterr(c, "group %s, which %s is merged into, vanished", into, p->group_id);
            return -1;
        }
    }
    const char *st = r_str(r, 0, 0);
    bool resolved = st && !strcmp(st, "resolved");
    bool regressed = false;
    if (resolved) {
        const char *ri = r_str(r, 0, 1);
        /* A crash from a version newer than the fix reopens the group; one
         * from an older version (users who did not update) does not. */
        regressed = !ri || fl_vercmp(p->version, ri) > 0;
    }
    lv = r_str(r, 0, 2);
    bool newer = p->version && (!lv || fl_vercmp(p->version, lv) > 0);
    char status[16];
    snprintf(status, sizeof status, "%s", regressed ? "regressed" : st ? st : "open");
    PQclear(r);
    if (created && base) {
        /* Created where a deleted group was?  A delete_group() that
         * committed after the caller looked the signature up (or while
         * this waited for the row it held) gave the signature a new id:
         * the row just made goes, and the crash counts there.  Read after
         * the insert, so such a commit is seen. */
        p_args g = {0};
        p_text(&g, base);
        if (!(r = p_exec(c, "SELECT cur FROM group_gen WHERE base=$1", &g, 0)))
            return -1;
        char cur[64] = "";
        if (PQntuples(r) == 1)
            snprintf(cur, sizeof cur, "%s", r_str(r, 0, 0));
        PQclear(r);
        if (cur[0] && strcmp(cur, p->group_id)) {
            if (depth >= 4) {
                p_seterr(c, "group %s deleted again and again meanwhile", base);
                return -1;
            }
            p_args m = {0};
            p_text(&m, p->crash_id);
            p_text(&m, cur);
            if (run_gid(c, "DELETE FROM groups WHERE id=$1", p->group_id, NULL) ||
                p_run(c, "UPDATE crashes SET group_id=$2 WHERE id=$1", &m))
                return -1;
            fl_processed q = *p;
            q.group_id = cur;
            return group_add_at(c, &q, depth + 1, base);
        }
    }
    fl_processed t = *p;
    if (into[0])
        t.group_id = into; /* the notice is about the group the user sees */
    if ((created && notice_add(c, FL_NOTICE_NEW_GROUP, p)) ||
        (regressed && notice_add(c, FL_NOTICE_REGRESSED, &t)))
        return -1;
    if (into[0] && (regressed || newer)) {
        p_args t2 = {0};
        p_text(&t2, into);
        p_text(&t2, regressed ? "regressed" : NULL);
        p_text(&t2, newer ? p->version : NULL);
        if (p_run(c,
                  "UPDATE groups SET status=coalesce($2::text, status), "
                  "latest_version=coalesce($3::text, latest_version) WHERE id=$1",
                  &t2))
            return -1;
    }

    /* Everything else in one statement (each round trip to the database
     * costs a worker more than the work): the breakdowns, the installation
     * (counted in affected when it is new to the group) and the counters.
     * LEAST/GREATEST: PostgreSQL's min()/max() are aggregates only. */
    char day[16];
    fl_iso_day(p->received, day);
    p_args u = {0};
    p_text(&u, p->group_id);
    p_int(&u, p->received);
    p_text(&u, into[0] ? NULL : status);
    p_text(&u, newer_own ? p->version : NULL);
    p_text(&u, p->install_id);
    p_text(&u, day);
    p_text(&u, p->version);
    p_text(&u, p->os);
    p_text(&u, p->arch);
    return p_run(c,
                 "WITH i AS (INSERT INTO group_installs SELECT $1, $5::text WHERE $5::text IS "
                 "NOT NULL ON CONFLICT DO NOTHING RETURNING 1),"
                 " d AS (INSERT INTO group_days AS t VALUES($1,$6,1) ON CONFLICT (group_id, day)"
                 " DO UPDATE SET count=t.count+1),"
                 " v AS (INSERT INTO group_versions AS t SELECT $1,$7::text,1 WHERE $7::text IS "
                 "NOT NULL ON CONFLICT (group_id, version) DO UPDATE SET count=t.count+1),"
                 " o AS (INSERT INTO group_os AS t SELECT $1,$8::text,1 WHERE $8::text IS NOT "
                 "NULL ON CONFLICT (group_id, os) DO UPDATE SET count=t.count+1),"
                 " a AS (INSERT INTO group_arch AS t SELECT $1,$9::text,1 WHERE $9::text IS NOT "
                 "NULL ON CONFLICT (group_id, arch) DO UPDATE SET count=t.count+1)"
                 " UPDATE groups SET count=count+1, first_seen=LEAST(first_seen,$2),"
                 " last_seen=GREATEST(last_seen,$2), status=coalesce($3::text, status),"
                 " latest_version=coalesce($4, latest_version),"
                 " affected=affected+(SELECT count(*) FROM i) WHERE id=$1",
                 &u);
}

static int p_apply(fl_store_conn *pc, const fl_processed *p)
{
    pconn *c = (pconn *)pc;
    /* The crash id names the report here (refs are crash ids).  state=0 in
     * the WHERE is what counts a crash once: see the essay. */
    p_args a = {0};
    p_text(&a, p->crash_id);
    p_int(&a, p->failed ? 2 : 1);
    p_text(&a, p->failed ? NULL : p->group_id);
    p_text(&a, p->failed ? NULL : p->stack_hash);
    p_bin(&a, p->zprocessed, p->zprocessed_len);
    p_text(&a, p->failed ? NULL : p->install_id);
    p_text(&a, !p->failed && p->arch ? "true" : "false");
    /* The group: the one grouping gave, or the one that took its place
     * when it was deleted (group_gen; group_add checks again). */
    PGresult *r = p_exec(c,
                         "UPDATE crashes SET state=$2, group_id=coalesce((SELECT cur FROM "
                         "group_gen WHERE base=$3), $3), stack_hash=$4, processed=$5,"
                         " install_id=$6, sig_group=NULL, rid=nextval('crashes_rid_seq'),"
                         " arch_counted=$7::boolean WHERE id=$1 AND state=0"
                         " RETURNING id, group_id",
                         &a, 0);
    if (!r)
        return -1;
    int rows = PQntuples(r);
    char gid[64] = "";
    if (rows == 1 && r_str(r, 0, 1))
        snprintf(gid, sizeof gid, "%s", r_str(r, 0, 1));
    PQclear(r);
    if (rows == 0 || p->failed)
        return 0; /* unknown or already processed: count nothing */
    fl_processed q = *p;
    q.group_id = gid;
    if (record_missing(c, p) || group_add(c, &q, p->group_id))
        return -1;
    return trend_add(c, p);
}

static int run_gid(pconn *c, const char *sql, const char *gid, const char *v)
{
    p_args a = {0};
    p_text(&a, gid);
    if (v)
        p_text(&a, v);
    return p_run(c, sql, &a);
}

/* One crash less in group gid (the crash moved away): the mirror of
 * group_add -- counts and breakdowns decremented, first/last_seen
 * recomputed from the crashes left, the crash's install no longer counted
 * in `affected` when it was that install's last crash in the group.  A
 * group left with no crash is deleted. */
static int group_remove(pconn *c, const char *gid, const fl_processed *p, bool arch_counted)
{
    /* Locked first: the statements below then read every crash committed
     * by those who held the lock before. */
    if (run_gid(c, "SELECT 1 FROM groups WHERE id=$1 FOR UPDATE", gid, NULL))
        return -1;
    p_args a = {0};
    p_text(&a, gid);
    p_text(&a, p->crash_id);
    PGresult *r = p_exec(c,
                         "UPDATE groups SET count=count-1, sample_crash=CASE WHEN sample_crash=$2"
                         " THEN (SELECT id FROM crashes WHERE group_id=$1 ORDER BY rid LIMIT 1)"
                         " ELSE sample_crash END WHERE id=$1 RETURNING count",
                         &a, 0);
    if (!r)
        return -1;
    int64_t left = PQntuples(r) == 1 ? r_i64(r, 0, 0) : -1;
    PQclear(r);
    char day[16];
    fl_iso_day(p->received, day);
    if (run_gid(c, "UPDATE group_days SET count=count-1 WHERE group_id=$1 AND day=$2", gid, day) ||
        (p->version &&
         run_gid(c, "UPDATE group_versions SET count=count-1 WHERE group_id=$1 AND version=$2", gid,
                 p->version)) ||
        (p->os &&
         run_gid(c, "UPDATE group_os SET count=count-1 WHERE group_id=$1 AND os=$2", gid, p->os)) ||
        (arch_counted && p->arch &&
         run_gid(c, "UPDATE group_arch SET count=count-1 WHERE group_id=$1 AND arch=$2", gid,
                 p->arch)))
        return -1;
    static const char *const gone[] = {
        "DELETE FROM group_days WHERE group_id=$1 AND count<=0",
        "DELETE FROM group_versions WHERE group_id=$1 AND count<=0",
        "DELETE FROM group_os WHERE group_id=$1 AND count<=0",
        "DELETE FROM group_arch WHERE group_id=$1 AND count<=0",
    };
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        if (run_gid(c, gone[i], gid, NULL))
            return -1;
    if (left > 0) {
        /* The crash has already moved: what remains decides, as in
         * store_sqlite.c (only for a time the crash set; kept when no
         * crash is left, the retention having removed them). */
        p_args sa = {0};
        p_text(&sa, gid);
        p_int(&sa, p->received);
        if (p_run(c,
                  "UPDATE groups SET first_seen=CASE WHEN first_seen=$2 THEN coalesce((SELECT "
                  "min(received) FROM crashes WHERE group_id=$1), first_seen) ELSE first_seen "
                  "END, last_seen=CASE WHEN last_seen=$2 THEN coalesce((SELECT max(received) "
                  "FROM crashes WHERE group_id=$1), last_seen) ELSE last_seen END WHERE id=$1",
                  &sa))
            return -1;
        if (p->install_id) {
            p_args i = {0};
            p_text(&i, gid);
            p_text(&i, p->install_id);
            /* The last crash of that install here: its row goes, and with
             * it one affected install. */
            if (!(r = p_exec(c,
                             "DELETE FROM group_installs WHERE group_id=$1 AND install_id=$2 AND "
                             "NOT EXISTS(SELECT 1 FROM crashes WHERE group_id=$1 AND "
                             "install_id=$2)",
                             &i, 0)))
                return -1;
            int64_t dropped = p_changes(r);
            PQclear(r);
            if (dropped == 1 &&
                run_gid(c, "UPDATE groups SET affected=affected-1 WHERE id=$1 AND affected>0", gid,
                        NULL))
                return -1;
        }
    }
    /* A group left with no crash goes, unless a merge ties it to others,
     * as in store_sqlite.c. */
    if (left == 0 &&
        (run_gid(c,
                 "DELETE FROM groups WHERE id=$1 AND merged_into IS NULL AND NOT EXISTS(SELECT 1 "
                 "FROM groups m WHERE m.merged_into=$1)",
                 gid, NULL) ||
         run_gid(c,
                 "DELETE FROM group_installs WHERE group_id=$1 AND NOT EXISTS(SELECT 1 FROM groups "
                 "WHERE id=$1)",
                 gid, NULL)))
        return -1;
    return 0;
}

static int reapply_marked(pconn *c, const fl_processed *p, const char *old, bool arch_counted);

static int p_reapply(fl_store_conn *pc, const fl_processed *p)
{
    pconn *c = (pconn *)pc;
    p_args k = {0};
    p_text(&k, p->crash_id);
    if (p->failed)
        /* Keep what the first processing found -- but no longer waiting:
         * SQLite leaves resym set, harmless there; here the crash would
         * stay in backlog() forever. */
        return p_run(c, "UPDATE crashes SET resym=false WHERE id=$1 AND state=1 AND resym", &k);
    PGresult *r =
        p_exec(c, "SELECT state, resym, group_id, arch_counted FROM crashes WHERE id=$1 FOR UPDATE",
               &k, 0);
    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return 0;
    }
    int state = (int)r_i64(r, 0, 0);
    bool resym = r_bool(r, 0, 1), arch_counted = r_bool(r, 0, 3);
    const char *g = r_str(r, 0, 2);
    char *old = strdup(g ? g : "");
    PQclear(r);
    if (!old) {
        p_seterr(c, "out of memory");
        return -1;
    }
    /* Not marked: left alone, so a task delivered twice moves it once. */
    int rc = state == 1 && resym ? reapply_marked(c, p, old, arch_counted) : 0;
    free(old);
    return rc;
}

/* The group id stands for, into out: itself, or the group it was merged
 * into.  0, 1 when there is no such group, -1 on error. */
static int group_resolve(pconn *c, const char *id, char out[64])
{
    p_args a = {0};
    p_text(&a, id);
    PGresult *r = p_exec(c, "SELECT coalesce(merged_into, id) FROM groups WHERE id=$1", &a, 0);
    if (!r)
        return -1;
    int rc = PQntuples(r) == 1 ? 0 : 1;
    if (!rc)
        snprintf(out, 64, "%s", r_str(r, 0, 0));
    PQclear(r);
    return rc;
}

/* reapply() of a crash marked and locked, from group old ("" for none);
 * arch_counted: whether its architecture is counted there. */
static int reapply_marked(pconn *c, const fl_processed *p, const char *old, bool arch_counted)
{
    /* Kept in its signature's own group, merged or not (group_add counts
     * it there and reads the status of the group it is merged into). */
    char cur[64];
    fl_processed q = *p;
    const char *base = p->group_id;
    p_args g = {0};
    p_text(&g, base);
    PGresult *r = p_exec(c, "SELECT cur FROM group_gen WHERE base=$1", &g, 0);
    if (!r)
        return -1;
    if (PQntuples(r) == 1) {
        /* Its group was deleted: the id that took its place. */
        snprintf(cur, sizeof cur, "%s", r_str(r, 0, 0));
        q.group_id = cur;
    }
    PQclear(r);
    p = &q;
    if (old[0] && strcmp(old, p->group_id)) {
        /* Its group is being deleted (the row goes first; locked here as
         * group_remove would): the crash stays to be erased with it. */
        p_args o = {0};
        p_text(&o, old);
        if (!(r = p_exec(c, "SELECT 1 FROM groups WHERE id=$1 FOR UPDATE", &o, 0)))
            return -1;
        int there = PQntuples(r);
        PQclear(r);
        if (!there) {
            p_args k = {0};
            p_text(&k, p->crash_id);
            return p_run(c, "UPDATE crashes SET resym=false WHERE id=$1", &k);
        }
    }
    /* A crash that moves is counted in its new group, architecture and
     * all; one that stays keeps what it had. */
    bool moves = strcmp(old, p->group_id) != 0;
    p_args a = {0};
    p_text(&a, p->crash_id);
    p_text(&a, p->group_id);
    p_text(&a, p->stack_hash);
    p_bin(&a, p->zprocessed, p->zprocessed_len);
    p_text(&a, (moves ? p->arch != NULL : arch_counted) ? "true" : "false");
    if (p_run(c,
              "UPDATE crashes SET resym=false, group_id=$2, stack_hash=$3, processed=$4, "
              "sig_group=NULL, arch_counted=$5::boolean WHERE id=$1",
              &a) ||
        record_missing(c, p))
        return -1;
    if (!moves) {
        /* Same group: only the representative frames may have improved. */
        p_args f = {0};
        p_text(&f, p->group_id);
        p_text(&f, p->frames_json);
        p_text(&f, p->crash_id);
        return p_run(c, "UPDATE groups SET frames=$2 WHERE id=$1 AND sample_crash=$3", &f);
    }
    if (old[0] && group_remove(c, old, p, arch_counted))
        return -1;
    return group_add(c, p, base);
}

/* ---- symbols */

/* A debug file's bytes travel as a large object, in pieces of this size,
 * each a statement of its own: libpq's lo_import() and lo_export() are
 * synchronous calls with no deadline (see the essay), and their pieces of
 * 8 KiB cost a round trip each. */
#define LO_PIECE (1u << 20)

/* path's bytes into a new large object (in c's transaction): its oid, or
 * InvalidOid with c->err set. */
static Oid lo_in(pconn *c, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = fd < 0 ? NULL : malloc(LO_PIECE);
    if (!buf) {
        p_seterr(c, "cannot keep %s in the database: %s", path,
                 fd < 0 ? strerror(errno) : "out of memory");
        if (fd >= 0)
            close(fd);
        return InvalidOid;
    }
    Oid file = InvalidOid;
    PGresult *r = p_exec(c, "SELECT lo_create(0)", NULL, 0);
    if (r)
        file = (Oid)r_i64(r, 0, 0);
    PQclear(r);
    char oid[16];
    snprintf(oid, sizeof oid, "%u", (unsigned)file);
    for (int64_t off = 0; file != InvalidOid;) {
        ssize_t n = read(fd, buf, LO_PIECE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            p_seterr(c, "cannot keep %s in the database: %s", path, strerror(errno));
        if (n <= 0) {
            if (n < 0)
                file = InvalidOid;
            break;
        }
        p_args a = {0};
        p_text(&a, oid);
        p_int(&a, off);
        p_bin(&a, buf, (size_t)n);
        if (p_run(c, "SELECT lo_put($1::oid, $2::bigint, $3::bytea)", &a))
            file = InvalidOid;
        off += n;
    }
    free(buf);
    close(fd);
    return file; /* one that failed goes with the transaction's rollback */
}

/* Large object file into the new file path (mode 0600, as lo_export()
 * made it), in c's transaction: 0, or -1 with c->err set. */
static int lo_out(pconn *c, Oid file, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        p_seterr(c, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    char oid[16];
    snprintf(oid, sizeof oid, "%u", (unsigned)file);
    int rc = 0;
    for (int64_t off = 0;;) {
        p_args a = {0};
        p_text(&a, oid);
        p_int(&a, off);
        p_int(&a, LO_PIECE);
        PGresult *r = p_exec(c, "SELECT lo_get($1::oid, $2::bigint, $3::integer)", &a, 1);
        if (!r) {
            rc = -1;
            break;
        }
        size_t n = (size_t)PQgetlength(r, 0, 0);
        const char *v = PQgetvalue(r, 0, 0);
        for (size_t done = 0; done < n;) {
            ssize_t w = write(fd, v + done, n - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                p_seterr(c, "cannot write %s: %s", path, strerror(errno));
                rc = -1;
                break;
            }
            done += (size_t)w;
        }
        PQclear(r);
        off += (int64_t)n;
        if (rc || n < LO_PIECE)
            break;
    }
    if (close(fd) && !rc) {
        p_seterr(c, "cannot write %s: %s", path, strerror(errno));
        rc = -1;
    }
    return rc;
}

static int p_add_symbol(fl_store_conn *pc, const fl_symbol_rec *r)
{
    pconn *c = (pconn *)pc;
    if (p_ready(c))
        return -1;
    /* Outside a transaction: one of its own, for the lock to last until
     * the row is committed. */
    bool own = PQtransactionStatus(c->db) == PQTRANS_IDLE;
    if (own && p_begin(pc))
        return -1;
    p_args a = {0};
    p_text(&a, r->build_id);
    p_text(&a, r->name);
    p_int(&a, r->size);
    p_text(&a, r->status ? r->status : "ok");
    p_text(&a, r->error);
    p_text(&a, r->kind);
    p_text(&a, r->path);
    p_int(&a, r->uploaded);
    /* The file's bytes, for servers on other machines (fetch_symbol): a
     * large object, streamed from the file in pieces (lo_in), before the
     * table lock below so that workers do not wait for a big upload's
     * copy. */
    int rc = 0;
    Oid file = InvalidOid;
    if (r->path && r->status && !strcmp(r->status, "ok")) {
        file = lo_in(c, r->path);
        if (file == InvalidOid)
            rc = -1;
    }
    char oid[16];
    snprintf(oid, sizeof oid, "%u", (unsigned)file);
    p_text(&a, file == InvalidOid ? NULL : oid);
    /* Uploads one at a time, rids in commit order: see the essay. */
    if (!rc)
        rc = p_run(c, "LOCK TABLE symbols IN SHARE ROW EXCLUSIVE MODE", NULL);
    if (!rc)
        rc = p_run(c,
                   "INSERT INTO symbols(build_id, name, size, status, error, kind, path, uploaded,"
                   " file) VALUES($1,$2,$3,$4,$5,$6,$7,$8,$9::oid)",
                   &a);
    if (own) {
        if (rc)
            p_rollback(pc);
        else
            rc = p_commit(pc);
    }
    return rc;
}

static json_t *p_list_symbols(fl_store_conn *pc, unsigned limit)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_int(&a, limit ? limit : 1000);
    PGresult *r = p_exec(c,
                         "SELECT build_id, name, size, status, error, kind, uploaded FROM symbols "
                         "ORDER BY rid DESC LIMIT $1",
                         &a, 0);
    if (!r)
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *o = json_object();
        fl_store_symbol_key(o, PQgetisnull(r, i, 0) ? NULL : PQgetvalue(r, i, 0));
        json_object_set_new(o, "name", r_text_json(r, i, 1));
        json_object_set_new(o, "size", json_integer(r_i64(r, i, 2)));
        json_object_set_new(o, "status", r_text_json(r, i, 3));
        json_object_set_new(o, "error", r_text_json(r, i, 4));
        json_object_set_new(o, "kind", r_text_json(r, i, 5));
        json_object_set_new(o, "uploaded", r_time_json(r, i, 6));
        json_array_append_new(arr, o);
    }
    PQclear(r);
    return json_pack("{s:o}", "symbols", arr);
}

static int p_find_symbol(fl_store_conn *pc, const char *build_id, const char *kind, char *path,
                         size_t cap)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_text(&a, build_id);
    p_text(&a, kind);
    PGresult *r = p_exec(c,
                         "SELECT path FROM symbols WHERE build_id=$1 AND status='ok' AND "
                         "path IS NOT NULL AND ($2::text IS NULL OR kind=$2::text) "
                         "ORDER BY rid DESC LIMIT 1",
                         &a, 0);
    if (!r)
        return -1;
    int rc = 1;
    if (PQntuples(r) == 1) {
        rc = 0;
        if ((size_t)snprintf(path, cap, "%s", PQgetvalue(r, 0, 0)) >= cap) {
            p_seterr(c, "the path of %s is too long", build_id);
            rc = -1;
        }
    }
    PQclear(r);
    return rc;
}

/* Copies the newest good file of build_id out of the database into
 * root/<id>/<kind>, through a temporary name, so that a reader never sees
 * half a file and two threads fetching at once both end with a whole
 * one. */
static int p_fetch_symbol(fl_store_conn *pc, const char *build_id, const char *root)
{
    pconn *c = (pconn *)pc;
    /* A build id, or a .dwo file's key (fl_store.h): a name under root. */
    size_t skip = strncmp(build_id, FL_DWO_KEY_PREFIX, strlen(FL_DWO_KEY_PREFIX))
                      ? 0
                      : strlen(FL_DWO_KEY_PREFIX);
    if (strlen(build_id) > 2 * 64 || !build_id[skip] ||
        strspn(build_id + skip, "0123456789abcdefABCDEF") != strlen(build_id + skip)) {
        p_seterr(c, "not a build id: %.40s", build_id);
        return -1;
    }
    p_args a = {0};
    p_text(&a, build_id);
    PGresult *r = p_exec(c,
                         "SELECT kind, file FROM symbols WHERE build_id=lower($1) AND status='ok'"
                         " AND file IS NOT NULL ORDER BY rid DESC LIMIT 1",
                         &a, 0);
    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return 1;
    }
    const char *kind = PQgetvalue(r, 0, 0);
    Oid file = (Oid)strtoul(PQgetvalue(r, 0, 1), NULL, 10);
    char dir[4096], dest[4200], tmp[4300];
    snprintf(dir, sizeof dir, "%s/%s", root, build_id);
    int n = snprintf(dest, sizeof dest, "%s/%s", dir,
                     !strcmp(kind, "executable")                    ? "executable"
                     : !strcmp(kind, "dwo") || !strcmp(kind, "dwp") ? "dwo"
                                                                    : "debuginfo");
    PQclear(r);
    if (n < 0 || (size_t)n >= sizeof dest) {
        p_seterr(c, "path too long under %.200s", root);
        return -1;
    }
    struct stat st;
    if (stat(dest, &st) == 0)
        return 1;
    if (mkdir(dir, 0755) && errno != EEXIST) {
        p_seterr(c, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.fetch.%d.%ld", dest, (int)getpid(), (long)gettid());
    /* A large object is read inside a transaction. */
    int rc = p_begin(pc);
    if (!rc && lo_out(c, file, tmp)) {
        char why[sizeof c->err];
        memcpy(why, c->err, sizeof why);
        p_seterr(c, "cannot copy the debug file of %s out of the database: %s", build_id, why);
        rc = -1;
    }
    if (rc) {
        p_rollback(pc);
        unlink(tmp);
        return -1;
    }
    p_commit(pc);
    if (rename(tmp, dest)) {
        p_seterr(c, "cannot store %s: %s", dest, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int p_symbols_version(fl_store_conn *pc, int64_t *out)
{
    PGresult *r = p_exec((pconn *)pc, "SELECT coalesce(max(rid), 0) FROM symbols", NULL, 0);
    if (!r)
        return -1;
    *out = r_i64(r, 0, 0);
    PQclear(r);
    return 0;
}

static int p_late_symbols(fl_store_conn *pc, const fl_processed *p, int64_t seen, bool *requeue)
{
    pconn *c = (pconn *)pc;
    *requeue = false;
    if (p->failed || p->nmissing == 0)
        return 0;
    /* Waits for an upload in flight, and holds the next off until this
     * transaction commits: one of the two sees the other (the essay).
     * Outside a transaction (there is no later commit to wait for) a lock
     * could not be taken, nor is it needed. */
    if (p_ready(c))
        return -1;
    /* Once per transaction: the lock lasts until its end. */
    if (PQtransactionStatus(c->db) != PQTRANS_IDLE && !c->symlock) {
        if (p_run(c, "LOCK TABLE symbols IN SHARE MODE", NULL))
            return -1;
        c->symlock = c->txn;
    }
    char *arr = id_array(p->missing_build_ids, p->nmissing);
    if (!arr) {
        p_seterr(c, "out of memory");
        return -1;
    }
    p_args q = {0};
    p_text(&q, arr);
    p_int(&q, seen);
    PGresult *r = p_exec(c,
                         "SELECT 1 FROM symbols WHERE build_id=ANY($1::text[]) AND status='ok' AND"
                         " rid>$2 LIMIT 1",
                         &q, 0);
    free(arr);
    if (!r)
        return -1;
    *requeue = PQntuples(r) > 0;
    PQclear(r);
    if (!*requeue)
        return 0;
    p_args a = {0};
    p_text(&a, p->crash_id);
    return p_run(c,
                 "UPDATE crashes SET resym=true, published=false, waiting_since=" NOW_S
                 " WHERE id=$1 AND state=1",
                 &a);
}

/* The first column of r's rows as strings (caller frees each and the
 * array); 0 or -1. */
static int take_ids(pconn *c, PGresult *r, char ***ids, size_t *n)
{
    size_t rows = (size_t)PQntuples(r);
    *ids = NULL;
    *n = 0;
    if (rows == 0)
        return 0;
    char **v = calloc(rows, sizeof *v);
    for (size_t i = 0; v && i < rows; i++)
        if (!(v[i] = strdup(PQgetvalue(r, (int)i, 0)))) {
            while (i > 0)
                free(v[--i]);
            free(v);
            v = NULL;
        }
    if (!v) {
        p_seterr(c, "out of memory");
        return -1;
    }
    *ids = v;
    *n = rows;
    return 0;
}

static int p_symbols_arrived(fl_store_conn *pc, const char *build_id, size_t max, char ***ids,
                             size_t *n)
{
    pconn *c = (pconn *)pc;
    *ids = NULL;
    *n = 0;
    p_args a = {0};
    p_text(&a, build_id);
    p_int(&a, max > INT64_MAX ? INT64_MAX : (int64_t)max);
    PGresult *r = p_exec(c,
                         "UPDATE crashes SET resym=true, published=false, waiting_since=" NOW_S
                         " WHERE state=1 AND id IN (SELECT crash_id FROM crash_missing WHERE "
                         "build_id=$1 LIMIT $2) RETURNING id",
                         &a, 0);
    if (!r)
        return -1;
    int rc = take_ids(c, r, ids, n);
    PQclear(r);
    return rc;
}

/* ---- reads */

/* An answer read by several statements reads them in one snapshot: under
 * READ COMMITTED each statement takes its own, and a worker, a merge or a
 * delete committing between two of them made the answer disagree with
 * itself (a total that is not its page's, a count that is not its days').
 * REPEATABLE READ takes it at the first statement after BEGIN.  c->txn
 * stays false, for p_execv(): a statement that finds the session ended (a
 * restart) still runs again on a new connection, which serves the rest of
 * the read outside the snapshot -- an answer as before rather than an
 * error.  In the caller's transaction, none: it is the caller's to end.
 * True when read_begin() began one, for read_end() to end; a BEGIN that
 * failed lets the read run as before, to report its own error. */
static bool read_begin(pconn *c)
{
    /* A broken connection says PQTRANS_UNKNOWN; BEGIN reconnects it. */
    if (c->txn || (PQstatus(c->db) == CONNECTION_OK && PQtransactionStatus(c->db) != PQTRANS_IDLE))
        return false;
    return p_run(c, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", NULL) == 0;
}

/* Never left open: the connection's next calls would run in it, read-only
 * and in an old snapshot (a BEGIN in it only warns), and it would hold
 * back vacuum.  An error of COMMIT or ROLLBACK would hide the read's,
 * which is the one error() is asked about. */
static void read_end(pconn *c, bool own)
{
    if (!own)
        return;
    PGTransactionStatusType t = PQtransactionStatus(c->db);
    if (t != PQTRANS_INTRANS && t != PQTRANS_INERROR)
        return;
    char err[sizeof c->err];
    memcpy(err, c->err, sizeof err);
    PQclear(p_exec(c, t == PQTRANS_INTRANS ? "COMMIT" : "ROLLBACK", NULL, 0));
    memcpy(c->err, err, sizeof err);
}

/* A group's numbers are its own and its members' together (merge_group
 * moves neither crashes nor counters), as store_sqlite.c's GROUP_COLS. */
/* clang-format off */
#define MEMBERS_G "(SELECT m.id FROM groups m WHERE m.merged_into=g.id)"
#define MEMBERS_1 "(SELECT m.id FROM groups m WHERE m.merged_into=$1)"
/* Rows of group $1 and of its members. */
#define OF_GROUP " WHERE group_id=$1 OR group_id IN " MEMBERS_1
#define GROUP_COLS                                                                                 \
    "g.id, g.app, g.signature,"                                                                    \
    " (g.count + coalesce((SELECT sum(m.count) FROM groups m WHERE m.merged_into=g.id),"           \
    "   0))::bigint AS n,"                                                                         \
    " LEAST(g.first_seen, (SELECT min(m.first_seen) FROM groups m"                                 \
    "   WHERE m.merged_into=g.id)) AS fs,"                                                         \
    " GREATEST(g.last_seen, (SELECT max(m.last_seen) FROM groups m"                                \
    "   WHERE m.merged_into=g.id)) AS ls,"                                                         \
    " g.status,"                                                                                   \
    " CASE WHEN EXISTS" MEMBERS_G " THEN (SELECT count(DISTINCT i.install_id) FROM"                \
    "   group_installs i WHERE i.group_id=g.id OR i.group_id IN " MEMBERS_G ")"                    \
    "   ELSE g.affected END,"                                                                      \
    " g.resolved_in, g.latest_version, g.project"
/* clang-format on */

static json_t *group_row(const PGresult *r, int i)
{
    json_t *g = json_object();
    json_object_set_new(g, "id", r_text_json(r, i, 0));
    /* Right after the id, as in store_sqlite.c: the engines' JSON is the
     * same byte for byte.  NULL: the default project. */
    const char *pj = r_str(r, i, 10);
    json_object_set_new(g, "project", json_string(pj ? pj : FL_PROJECT_DEFAULT));
    json_object_set_new(g, "app", r_text_json(r, i, 1));
    json_object_set_new(g, "signature", r_text_json(r, i, 2));
    json_object_set_new(g, "count", json_integer(r_i64(r, i, 3)));
    json_object_set_new(g, "first_seen", r_time_json(r, i, 4));
    json_object_set_new(g, "last_seen", r_time_json(r, i, 5));
    json_object_set_new(g, "status", r_text_json(r, i, 6));
    json_object_set_new(g, "affected", json_integer(r_i64(r, i, 7)));
    json_object_set_new(g, "resolved_in", r_text_json(r, i, 8));
    json_object_set_new(g, "latest_version", r_text_json(r, i, 9));
    return g;
}

/* NULL is the default project's (rows from before projects, and new
 * ones: proj_col()), and so is a row naming it.  strpos(lower()) rather
 * than LIKE: no wildcard in q to escape. */
/* clang-format off */
#define PG_GROUPS_WHERE                                                                            \
    " FROM groups g WHERE g.merged_into IS NULL AND ($1::text IS NULL OR g.app=$1::text)"          \
    " AND ($3::text IS NULL OR g.status=$3::text)"                                                 \
    " AND ($4::text IS NULL OR coalesce(g.project, '" FL_PROJECT_DEFAULT "')=$4::text)"            \
    " AND ($2::text IS NULL OR EXISTS(SELECT 1 FROM group_versions v WHERE v.version=$2::text"     \
    "   AND (v.group_id=g.id OR v.group_id IN " MEMBERS_G ")))"                                    \
    " AND ($5::text IS NULL OR strpos(lower(g.signature), lower($5::text)) > 0)"                   \
    " AND ($6::text IS NULL OR g.id IN (SELECT coalesce(gg.merged_into, gg.id) FROM"               \
    "   group_installs gi JOIN groups gg ON gg.id=gi.group_id WHERE gi.install_id=$6::text))"
/* clang-format on */

static json_t *list_groups_in(pconn *c, const fl_group_filter *f)
{
    p_args a = {0};
    p_text(&a, f->app);
    p_text(&a, f->version);
    p_text(&a, f->status);
    p_text(&a, f->project);
    p_text(&a, f->q);
    p_text(&a, f->install);
    /* How many the filter matches (the portal's "1-100 of N"). */
    PGresult *r = p_exec(c, "SELECT count(*)" PG_GROUPS_WHERE, &a, 0);
    if (!r)
        return NULL;
    json_int_t total = PQntuples(r) == 1 ? (json_int_t)r_i64(r, 0, 0) : 0;
    PQclear(r);
    /* Among the groups with members and the first limit + offset of the
     * others by their own column, as in store_sqlite.c. */
#define GROUPS_PAGE(own, sum)                                                                      \
    "SELECT " GROUP_COLS PG_GROUPS_WHERE                                                           \
    " AND g.id IN (SELECT id FROM (SELECT g.id" PG_GROUPS_WHERE " AND NOT EXISTS" MEMBERS_G        \
    " ORDER BY " own " DESC NULLS LAST, g.id LIMIT "                                               \
    "$7::bigint + $8::bigint) c UNION ALL SELECT merged_into FROM groups WHERE merged_into IS "    \
    "NOT "                                                                                         \
    "NULL) ORDER BY " sum " DESC NULLS LAST, id LIMIT $7 OFFSET $8"
    static const char *const page[] = {
        [FL_SORT_COUNT] = GROUPS_PAGE("g.count", "n"),
        [FL_SORT_LAST_SEEN] = GROUPS_PAGE("g.last_seen", "ls"),
        [FL_SORT_FIRST_SEEN] = GROUPS_PAGE("g.first_seen", "fs"),
    };
    p_int(&a, f->limit);
    p_int(&a, f->offset);
    if (!(r = p_exec(c, page[f->sort <= FL_SORT_FIRST_SEEN ? f->sort : FL_SORT_COUNT], &a, 0)))
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(arr, group_row(r, i));
    PQclear(r);
    return json_pack("{s:o,s:I}", "groups", arr, "total", total);
}

/* The total and the page in one snapshot: a group made or deleted between
 * them made "total" disagree with the page. */
static json_t *p_list_groups(fl_store_conn *pc, const fl_group_filter *f)
{
    pconn *c = (pconn *)pc;
    bool own = read_begin(c);
    json_t *out = list_groups_in(c, f);
    read_end(c, own);
    return out;
}

/* Rows of (key, count) into an array of {name: key, "count": n}; NULL on
 * error. */
static json_t *counts(pconn *c, const char *sql, const char *id, const char *name)
{
    p_args a = {0};
    p_text(&a, id);
    PGresult *r = p_exec(c, sql, &a, 0);
    if (!r)
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(arr, json_pack("{s:o,s:I}", name, r_text_json(r, i, 0), "count",
                                             (json_int_t)r_i64(r, i, 1)));
    PQclear(r);
    return arr;
}

/* Group $1's crashes ($2: installation $2's only, when not NULL), newest
 * first, $3 of them from $4 on: its own and its members' (a merge leaves
 * them where they are), each group's newest $3 + $4 through its index,
 * then merged -- rather than all of them sorted. */
#define CRASH_PAGE                                                                                 \
    "SELECT x.id, x.received, x.version, x.install_id FROM (SELECT $1::text AS gid UNION ALL "     \
    "SELECT id FROM groups WHERE merged_into=$1) m CROSS JOIN LATERAL (SELECT rid, id, received, " \
    "version, install_id FROM crashes WHERE group_id=m.gid AND ($2::text IS NULL OR "              \
    "install_id=$2::text) ORDER BY rid DESC LIMIT $3::bigint + $4::bigint) x ORDER BY x.rid DESC " \
    "LIMIT $3 OFFSET $4"

static json_t *get_group_in(pconn *c, const char *asked, bool *notfound)
{
    char id[64];
    int rr = group_resolve(c, asked, id);
    if (rr) {
        *notfound = rr == 1;
        return NULL;
    }
    p_args a = {0};
    p_text(&a, id);
    PGresult *r = p_exec(
        c, "SELECT " GROUP_COLS ", g.frames, g.sample_crash FROM groups g WHERE g.id=$1", &a, 0);
    if (!r)
        return NULL;
    if (PQntuples(r) != 1) {
        PQclear(r);
        *notfound = true;
        return NULL;
    }
    json_t *g = group_row(r, 0);
    const char *fr = r_str(r, 0, 11);
    json_t *frames = fr ? json_loads(fr, 0, NULL) : NULL;
    json_object_set_new(g, "frames", frames ? frames : json_array());
    json_object_set_new(g, "representative_crash", r_text_json(r, 0, 12));
    PQclear(r);

    /* Its members' breakdowns added to its own; ties by key, so that the
     * order is stable. */
    static const char *const q[][3] = {
        {"days", "day",
         "SELECT day, sum(count)::bigint FROM group_days" OF_GROUP " GROUP BY day ORDER BY day"},
        {"versions", "version",
         "SELECT version, sum(count)::bigint AS n FROM group_versions" OF_GROUP
         " GROUP BY version ORDER BY n DESC, version"},
        {"os", "os",
         "SELECT os, sum(count)::bigint AS n FROM group_os" OF_GROUP
         " GROUP BY os ORDER BY n DESC, os"},
        {"arch", "arch",
         "SELECT arch, sum(count)::bigint AS n FROM group_arch" OF_GROUP
         " GROUP BY arch ORDER BY n DESC, arch"},
    };
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        json_t *arr = counts(c, q[i][2], id, q[i][1]);
        if (!arr)
            goto fail;
        json_object_set_new(g, q[i][0], arr);
    }
    p_args sa = a;
    p_text(&sa, NULL);
    p_int(&sa, 10);
    p_int(&sa, 0);
    if (!(r = p_exec(c, CRASH_PAGE, &sa, 0)))
        goto fail;
    json_t *samples = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(samples, r_text_json(r, i, 0));
    PQclear(r);
    json_object_set_new(g, "sample_crashes", samples);
    if (!(r = p_exec(c, "SELECT id, signature FROM groups WHERE merged_into=$1 ORDER BY id", &a,
                     0)))
        goto fail;
    json_t *merged = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(merged, json_pack("{s:o,s:o}", "id", r_text_json(r, i, 0),
                                                "signature", r_text_json(r, i, 1)));
    PQclear(r);
    json_object_set_new(g, "merged", merged);
    return g;
fail:
    json_decref(g);
    return NULL;
}

/* The group in one snapshot: a crash processed, or a merge, between its
 * row and its breakdowns made its count disagree with them. */
static json_t *p_get_group(fl_store_conn *pc, const char *asked, bool *notfound)
{
    pconn *c = (pconn *)pc;
    *notfound = false;
    bool own = read_begin(c);
    json_t *out = get_group_in(c, asked, notfound);
    read_end(c, own);
    return out;
}

static json_t *group_crashes_in(pconn *c, const char *asked, const char *install, unsigned limit,
                                unsigned offset, bool *notfound)
{
    char id[64];
    int rr = group_resolve(c, asked, id);
    if (rr) {
        *notfound = rr == 1;
        return NULL;
    }
    p_args a = {0};
    p_text(&a, id);
    p_text(&a, install);
    PGresult *r = p_exec(c,
                         "SELECT (SELECT count(*) FROM groups WHERE id=$1), (SELECT count(*) FROM "
                         "crashes WHERE (group_id=$1 OR group_id IN " MEMBERS_1 ") AND "
                         "($2::text IS NULL OR install_id=$2::text))",
                         &a, 0);
    if (!r)
        return NULL;
    bool exists = r_i64(r, 0, 0) > 0;
    int64_t total = r_i64(r, 0, 1);
    PQclear(r);
    if (!exists) {
        *notfound = true;
        return NULL;
    }
    p_int(&a, limit);
    p_int(&a, offset);
    if (!(r = p_exec(c, CRASH_PAGE, &a, 0)))
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(arr,
                              json_pack("{s:o,s:o,s:o,s:o}", "id", r_text_json(r, i, 0), "received",
                                        r_time_json(r, i, 1), "version", r_text_json(r, i, 2),
                                        "installation", r_text_json(r, i, 3)));
    PQclear(r);
    return json_pack("{s:o,s:I}", "crashes", arr, "total", (json_int_t)total);
}

/* The total and the page in one snapshot: a crash processed, expired or
 * deleted between them made "total" disagree with the page. */
static json_t *p_group_crashes(fl_store_conn *pc, const char *asked, const char *install,
                               unsigned limit, unsigned offset, bool *notfound)
{
    pconn *c = (pconn *)pc;
    *notfound = false;
    bool own = read_begin(c);
    json_t *out = group_crashes_in(c, asked, install, limit, offset, notfound);
    read_end(c, own);
    return out;
}

static json_t *p_get_crash(fl_store_conn *pc, const char *id, bool *notfound)
{
    pconn *c = (pconn *)pc;
    *notfound = false;
    p_args a = {0};
    p_text(&a, id);
    PGresult *r = p_exec(c,
                         /* The group it shows in: its own, or the one that was
                          * merged into (merge_group leaves the crash in its own). */
                         "SELECT raw, state, coalesce((SELECT merged_into FROM groups WHERE "
                         "id=crashes.group_id), group_id), stack_hash, processed, received, app, "
                         "version, email, project, (SELECT size FROM minidumps WHERE "
                         "crash_id=$1) FROM crashes WHERE id=$1",
                         &a, 1);
    if (!r)
        return NULL;
    if (PQntuples(r) != 1) {
        PQclear(r);
        *notfound = true;
        return NULL;
    }
    json_t *out = NULL;
    char *raw = NULL, *proc = NULL;
    size_t rl, pl;
    if (r_i64(r, 0, 1) == 3) { /* deleted: what is left of it, as store_sqlite.c */
        const char *pj = r_str(r, 0, 9);
        out = json_object();
        json_object_set_new(out, "id", json_string(id));
        json_object_set_new(out, "project", json_string(pj ? pj : FL_PROJECT_DEFAULT));
        json_object_set_new(out, "state", json_string("deleted"));
        json_object_set_new(out, "received", r_time_json(r, 0, 5));
        json_object_set_new(out, "app", r_text_json(r, 0, 6));
        json_object_set_new(out, "version", r_text_json(r, 0, 7));
        goto out;
    }
    if (fl_unzstd(PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0), MAX_RAW, &raw, &rl)) {
        p_seterr(c, "the stored log of %s is damaged", id);
        goto out;
    }
    if (!PQgetisnull(r, 0, 4)) {
        if (fl_unzstd(PQgetvalue(r, 0, 4), (size_t)PQgetlength(r, 0, 4), MAX_PROCESSED, &proc,
                      &pl)) {
            p_seterr(c, "the processed crash %s is damaged", id);
            goto out;
        }
        out = json_loadb(proc, pl, 0, NULL);
    }
    if (!out)
        out = json_object();
    int state = (int)r_i64(r, 0, 1);
    json_object_set_new(out, "id", json_string(id));
    /* Set right after the id, as in store_sqlite.c. */
    const char *pj = r_str(r, 0, 9);
    json_object_set_new(out, "project", json_string(pj ? pj : FL_PROJECT_DEFAULT));
    json_object_set_new(out, "state",
                        json_string(state == 0   ? "pending"
                                    : state == 1 ? "processed"
                                                 : "failed"));
    json_object_set_new(out, "group_id", r_text_json(r, 0, 2));
    json_object_set_new(out, "stack_hash", r_text_json(r, 0, 3));
    json_object_set_new(out, "received", r_time_json(r, 0, 5));
    json_object_set_new(out, "app", r_text_json(r, 0, 6));
    json_object_set_new(out, "version", r_text_json(r, 0, 7));
    json_object_set_new(out, "email", r_text_json(r, 0, 8));
    json_object_set_new(out, "raw", fl_json_text(raw, rl));
    if (!PQgetisnull(r, 0, 10)) /* the minidump it was made from, kept */
        json_object_set_new(out, "minidump_bytes", json_integer(r_i64(r, 0, 10)));
out:
    free(raw);
    free(proc);
    PQclear(r);
    return out;
}

static int p_set_status(fl_store_conn *pc, const char *asked, const char *status,
                        const char *resolved_in)
{
    pconn *c = (pconn *)pc;
    char id[64];
    int rr = group_resolve(c, asked, id);
    if (rr)
        return rr;
    p_args a = {0};
    p_text(&a, id);
    PGresult *r;
    if (!strcmp(status, "resolved")) {
        p_text(&a, resolved_in);
        r = p_exec(c,
                   "UPDATE groups SET status='resolved', resolved_in=coalesce($2, latest_version) "
                   "WHERE id=$1",
                   &a, 0);
    } else {
        p_text(&a, status);
        r = p_exec(c, "UPDATE groups SET status=$2, resolved_in=NULL WHERE id=$1", &a, 0);
    }
    if (!r)
        return -1;
    int64_t n = p_changes(r);
    PQclear(r);
    return n == 1 ? 0 : 1;
}

/* merge_group (fl_store.h).  Both rows are locked in id order, as the
 * workers lock groups, and read again under the lock: a merge or a crash
 * that committed meanwhile is seen. */
static int p_merge_group(fl_store_conn *pc, const char *into_id, const char *from_id)
{
    pconn *c = (pconn *)pc;
    char into[64], from[64];
    int rr = group_resolve(c, into_id, into);
    if (rr)
        return rr;
    if ((rr = group_resolve(c, from_id, from)))
        return rr < 0 ? rr : 2;
    if (!strcmp(into, from))
        return 4;
    p_args a = {0};
    p_text(&a, into);
    p_text(&a, from);
    PGresult *r = p_exec(c,
                         "SELECT id, merged_into, app, coalesce(project, '" FL_PROJECT_DEFAULT
                         "'), latest_version FROM groups WHERE id IN ($1, $2) ORDER BY id FOR "
                         "UPDATE",
                         &a, 0);
    if (!r)
        return -1;
    int ti = -1, fi = -1;
    for (int i = 0; i < PQntuples(r); i++)
        if (!strcmp(r_str(r, i, 0), into))
            ti = i;
        else
            fi = i;
    if (ti < 0 || fi < 0 || r_str(r, ti, 1) || r_str(r, fi, 1)) {
        /* Emptied and removed, or merged, while this resolved the ids. */
        rr = ti < 0 ? 1 : fi < 0 ? 2 : -1;
        if (rr < 0)
            p_seterr(c, "group %s or %s was merged meanwhile: try again", into, from);
        PQclear(r);
        return rr;
    }
    const char *ta = r_str(r, ti, 2), *fa = r_str(r, fi, 2);
    const char *tl = r_str(r, ti, 4), *fl = r_str(r, fi, 4);
    bool same = !strcmp(r_str(r, ti, 3), r_str(r, fi, 3)) && !ta == !fa && (!ta || !strcmp(ta, fa));
    bool newer = fl && (!tl || fl_vercmp(fl, tl) > 0);
    PQclear(r);
    if (!same)
        return 3;
    /* As in store_sqlite.c: group rows only -- from's crashes, counters,
     * breakdowns and installations stay its own, and into's reads add
     * them up (GROUP_COLS) --; from's "new group" notice would announce an
     * old group as new, its other notices go to into. */
    p_args n = a;
    p_text(&n, newer ? "true" : "false");
    if (run_gid(c, "DELETE FROM notices WHERE group_id=$1 AND kind='" FL_NOTICE_NEW_GROUP "'", from,
                NULL))
        return -1;
    if (p_run(c,
              "UPDATE groups t SET latest_version=f.latest_version FROM groups f WHERE t.id=$1 "
              "AND f.id=$2 AND $3::boolean",
              &n))
        return -1;
    static const char *const both[] = {
        "UPDATE notices SET group_id=$1 WHERE group_id=$2",
        "UPDATE groups SET merged_into=$1 WHERE merged_into=$2",
        "UPDATE groups SET merged_into=$1 WHERE id=$2",
    };
    for (size_t i = 0; i < sizeof both / sizeof *both; i++)
        if (p_run(c, both[i], &a))
            return -1;
    return 0;
}

/* Group id's latest version seen, again from its versions and its
 * members' (after an unmerge took some away); kept when none is known. */
static int latest_again(pconn *c, const char *id)
{
    p_args a = {0};
    p_text(&a, id);
    PGresult *r = p_exec(c, "SELECT DISTINCT version FROM group_versions" OF_GROUP, &a, 0);
    if (!r)
        return -1;
    const char *best = NULL;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *v = r_str(r, i, 0);
        if (v && (!best || fl_vercmp(v, best) > 0))
            best = v;
    }
    int rc = best ? run_gid(c, "UPDATE groups SET latest_version=$2 WHERE id=$1", id, best) : 0;
    PQclear(r);
    return rc;
}

static int p_unmerge_group(fl_store_conn *pc, const char *id, char *from, char ***ids, size_t *n)
{
    pconn *c = (pconn *)pc;
    *ids = NULL;
    *n = 0;
    p_args a = {0};
    p_text(&a, id);
    PGresult *r = p_exec(c, "SELECT merged_into FROM groups WHERE id=$1", &a, 0);
    if (!r)
        return -1;
    int rc = PQntuples(r) != 1 ? 1 : !r_str(r, 0, 0) ? 2 : 0;
    if (!rc)
        snprintf(from, 64, "%s", r_str(r, 0, 0));
    PQclear(r);
    if (rc)
        return rc;
    /* Both rows change (from's latest version): locked in id order, as the
     * workers and merge_group lock groups, then read again. */
    p_args l = a;
    p_text(&l, from);
    if (!(r = p_exec(c,
                     "SELECT id, merged_into FROM groups WHERE id IN ($1, $2) ORDER BY id FOR "
                     "UPDATE",
                     &l, 0)))
        return -1;
    bool still = false;
    for (int i = 0; i < PQntuples(r); i++)
        if (!strcmp(r_str(r, i, 0), id))
            still = r_str(r, i, 1) && !strcmp(r_str(r, i, 1), from);
    PQclear(r);
    if (!still) {
        p_seterr(c, "group %s was merged or unmerged meanwhile: try again", id);
        return -1;
    }
    if (p_run(c, "UPDATE groups SET merged_into=NULL WHERE id=$1", &a) || latest_again(c, id) ||
        latest_again(c, from))
        return -1;
    /* Its crashes and counters never left it -- except those a merge of
     * schema_ddl 6 or before moved into from (sig_group: crashes_moved):
     * those are marked as requeue() marks one crash, processed again, and
     * moved back by reapply(), counters and all. */
    p_text(&a, from);
    if (!(r = p_exec(c,
                     "UPDATE crashes SET resym=true, published=false, waiting_since=" NOW_S
                     " WHERE sig_group=$1 AND group_id=$2 AND state=1 AND NOT resym RETURNING id",
                     &a, 0)))
        return -1;
    rc = take_ids(c, r, ids, n);
    PQclear(r);
    return rc;
}

/* Exact counts, where SQLite reads the largest rowid: a scan of each
 * table, fine for an occasional read, not for a per-request one.  Unlike
 * SQLite's (which leaves it 0), processed is counted. */
static json_t *trends_in(pconn *c, const char *app, const char *from_day)
{
    static const char *const q[2][2] = {
        {"SELECT day, kind, value, sum(count) FROM app_days WHERE day>=$1 GROUP BY day, kind, "
         "value",
         "SELECT day, count(DISTINCT install_id) FROM app_installs WHERE day>=$1 GROUP BY day"},
        {"SELECT day, kind, value, count FROM app_days WHERE day>=$1 AND app=$2",
         "SELECT day, count(*) FROM app_installs WHERE day>=$1 AND app=$2 GROUP BY day"},
    };
    json_t *out = json_pack("{s:[],s:[],s:[]}", "rows", "installs", "apps");
    const char *key[3] = {"rows", "installs", "apps"};
    for (int i = 0; i < 3; i++) {
        p_args a = {0};
        if (i < 2) {
            p_text(&a, from_day);
            if (app)
                p_text(&a, app);
        }
        PGresult *r = p_exec(c,
                             i < 2 ? q[app != NULL][i]
                                   : "SELECT DISTINCT app FROM app_days "
                                     "ORDER BY app",
                             &a, 0);
        if (!r) {
            json_decref(out);
            return NULL;
        }
        json_t *arr = json_object_get(out, key[i]);
        int ncol = PQnfields(r);
        for (int k = 0; k < PQntuples(r); k++) {
            if (i == 2) {
                json_array_append_new(arr, json_string(PQgetvalue(r, k, 0)));
                continue;
            }
            json_t *row = json_array();
            for (int col = 0; col < ncol - 1; col++)
                json_array_append_new(row, json_string(PQgetvalue(r, k, col)));
            json_array_append_new(row, json_integer(r_i64(r, k, ncol - 1)));
            json_array_append_new(arr, row);
        }
        PQclear(r);
    }
    return out;
}

/* The crashes and the installations in one snapshot: a crash processed
 * between them showed a day with more installations than crashes. */
static json_t *p_trends(fl_store_conn *pc, const char *app, const char *from_day)
{
    pconn *c = (pconn *)pc;
    bool own = read_begin(c);
    json_t *out = trends_in(c, app, from_day);
    read_end(c, own);
    return out;
}

static int p_stats(fl_store_conn *pc, fl_store_stats *out)
{
    memset(out, 0, sizeof *out);
    PGresult *r = p_exec((pconn *)pc,
                         "SELECT (SELECT count(*) FROM crashes), (SELECT count(*) FROM crashes "
                         "WHERE state=1), (SELECT count(*) FROM groups WHERE merged_into IS NULL)",
                         NULL, 0);
    if (!r)
        return -1;
    out->crashes = r_i64(r, 0, 0);
    out->processed = r_i64(r, 0, 1);
    out->groups = r_i64(r, 0, 2);
    PQclear(r);
    return 0;
}

/* ---- projects
 *
 * Each op is one statement: atomic on its own outside a transaction, and
 * part of the caller's inside one (p_exec() runs it either way). */

/* Runs sql ($1 id, $2 key, $3 now), which inserts one key row or none:
 * 0 when it did, 1 when not, -1 on error. */
static int key_insert(fl_store_conn *pc, const char *sql, const char *id, const char *key,
                      int64_t now)
{
    p_args a = {0};
    p_text(&a, id);
    p_text(&a, key);
    p_int(&a, now);
    PGresult *r = p_exec((pconn *)pc, sql, &a, 0);
    if (!r)
        return -1;
    int rows = PQntuples(r);
    PQclear(r);
    return rows == 1 ? 0 : 1;
}

/* The project and its first key together: the key goes in only when the
 * project did (the CTE returns no row when it existed).  Two servers
 * creating the same project at once: the second waits for the first's
 * row, inserts nothing and answers 1.  A key another project holds fails
 * the whole statement: no project without a key.
 *
 * A key is new random bytes: finding it in the project already means
 * that this very statement ran before and committed -- p_execv() runs it
 * again when the connection died before the answer came.  That run
 * answers as the first would have (0), else the client would be told
 * "exists" and never learn the key the project was made with.  The same
 * for a key added to a project. */
static int p_add_project(fl_store_conn *pc, const char *id, const char *key, int64_t now)
{
    return key_insert(pc,
                      "WITH p AS (INSERT INTO projects VALUES($1, $3) ON CONFLICT (id) DO "
                      "NOTHING RETURNING id), k AS (INSERT INTO project_keys SELECT $2, id, $3 "
                      "FROM p RETURNING 1) SELECT 1 FROM k UNION ALL SELECT 1 FROM project_keys "
                      "WHERE key=$2 AND project=$1",
                      id, key, now);
}

/* The row says which project holds the key: this one when it went in now
 * or in a first run, another one's refuses it (as a unique violation
 * would: -1); none, no such project. */
static int p_add_project_key(fl_store_conn *pc, const char *id, const char *key, int64_t now)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_text(&a, id);
    p_text(&a, key);
    p_int(&a, now);
    PGresult *r = p_exec(c,
                         "WITH k AS (INSERT INTO project_keys SELECT $2, id, $3 FROM projects "
                         "WHERE id=$1 ON CONFLICT (key) DO NOTHING RETURNING project) SELECT "
                         "project FROM k UNION ALL SELECT project FROM project_keys WHERE key=$2",
                         &a, 0);
    if (!r)
        return -1;
    int rc = PQntuples(r) == 0 ? 1 : 0;
    if (rc == 0 && strcmp(PQgetvalue(r, 0, 0), id)) {
        p_seterr(c, "the key is another project's");
        rc = -1;
    }
    PQclear(r);
    return rc;
}

static int p_revoke_project_key(fl_store_conn *pc, const char *id, const char *key)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_text(&a, id);
    p_text(&a, key);
    PGresult *r = p_exec(c, "DELETE FROM project_keys WHERE key=$2 AND project=$1", &a, 0);
    if (!r)
        return -1;
    int64_t n = p_changes(r);
    PQclear(r);
    /* Run twice (p_execv), the first run may have deleted it: gone is
     * what was asked, and "no such key" would tell the client that the
     * key it holds was never revoked.  (A key that never was answers
     * "revoked" too, then: no key works either way.) */
    return n == 1 || c->rerun ? 0 : 1;
}

/* One row per key (a project whose keys were all revoked: one row, key
 * NULL), by project, then keys oldest first, ties by key. */
static json_t *p_list_projects(fl_store_conn *pc)
{
    pconn *c = (pconn *)pc;
    PGresult *r = p_exec(c,
                         "SELECT p.id, p.created, k.key, k.created FROM projects p LEFT JOIN "
                         "project_keys k ON k.project=p.id ORDER BY p.id, k.created, k.key",
                         NULL, 0);
    if (!r)
        return NULL;
    json_t *arr = json_array(), *keys = NULL;
    const char *last = NULL;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *id = PQgetvalue(r, i, 0);
        if (!last || strcmp(last, id)) {
            keys = json_array();
            json_array_append_new(arr, json_pack("{s:s,s:o,s:o}", "id", id, "created",
                                                 r_time_json(r, i, 1), "keys", keys));
            last = id;
        }
        if (!PQgetisnull(r, i, 2))
            json_array_append_new(keys, json_pack("{s:s,s:o}", "key", PQgetvalue(r, i, 2),
                                                  "created", r_time_json(r, i, 3)));
    }
    PQclear(r);
    return json_pack("{s:o}", "projects", arr);
}

/* ---- for the broker's queue */

/* In the caller's transaction, or on its own.  The ingest writer records
 * a batch's published tasks in its next batch's transaction (writer.c),
 * which costs no flush of the log of its own. */
static int p_published(fl_store_conn *pc, const char *const *refs, size_t n)
{
    pconn *c = (pconn *)pc;
    if (n == 0)
        return 0;
    int rc = 0;
    size_t cap = 160 + IN_IDS * 8;
    char *sql = malloc(cap);
    if (!sql) {
        p_seterr(c, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n && rc == 0; i += IN_IDS) {
        size_t k = n - i < IN_IDS ? n - i : IN_IDS;
        size_t at = 0;
        /* SKIP LOCKED: a row a worker is applying (locked until its
         * commit) is left as it is -- it leaves the waiting reports anyway,
         * so the sweep never sees it -- and this never waits for a worker,
         * which may be waiting for rows this transaction holds (a
         * deadlock, when the writer's batch records these). */
        p_cat(
            sql, cap, &at,
            "UPDATE crashes SET published=true WHERE id IN (SELECT id FROM crashes WHERE id IN (");
        for (size_t j = 0; j < k; j++)
            p_cat(sql, cap, &at, "%s$%zu", j ? "," : "", j + 1);
        p_cat(sql, cap, &at, ") FOR UPDATE SKIP LOCKED)");
        PGresult *r = p_execv(c, sql, (int)k, refs + i, NULL, NULL, 0, false);
        rc = r ? 0 : -1;
        PQclear(r);
    }
    free(sql);
    return rc; /* failed: the sweep publishes those again */
}

static int p_unpublished(fl_store_conn *pc, int64_t min_age_s, size_t max, char ***refs, size_t *n)
{
    pconn *c = (pconn *)pc;
    *refs = NULL;
    *n = 0;
    p_args a = {0};
    p_int(&a, min_age_s);
    p_int(&a, max > INT64_MAX ? INT64_MAX : (int64_t)max);
    /* The WHERE repeats crashes_unpublished's predicate, for the planner to
     * use that index.  The rows taken start their wait again: another API
     * server's sweep, which runs as often, leaves them to this one for
     * min_age_s (they were published twice, once by each server), and its
     * SKIP LOCKED passes over those being taken right now.  A publish that
     * fails leaves them unpublished, for a sweep min_age_s later. */
    PGresult *r = p_exec(c,
                         "UPDATE crashes SET waiting_since = " NOW_S " WHERE id IN ("
                         "SELECT id FROM crashes WHERE NOT published AND (state = 0 OR resym) "
                         "AND waiting_since <= " NOW_S " - $1 ORDER BY waiting_since LIMIT $2 "
                         "FOR UPDATE SKIP LOCKED) RETURNING id",
                         &a, 0);
    if (!r)
        return -1;
    int rc = take_ids(c, r, refs, n);
    PQclear(r);
    return rc;
}

static int p_unpublish_stale(fl_store_conn *pc, int64_t min_age_s, size_t *n)
{
    pconn *c = (pconn *)pc;
    *n = 0;
    p_args a = {0};
    p_int(&a, min_age_s);
    PGresult *r = p_exec(c,
                         "UPDATE crashes SET published = false WHERE published AND "
                         "(state = 0 OR resym) AND waiting_since <= " NOW_S " - $1",
                         &a, 0);
    if (!r)
        return -1;
    *n = (size_t)strtoull(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return 0;
}

static int64_t p_backlog(fl_store_conn *pc)
{
    PGresult *r =
        p_exec((pconn *)pc, "SELECT count(*) FROM crashes WHERE state = 0 OR resym", NULL, 0);
    if (!r)
        return -1;
    int64_t n = r_i64(r, 0, 0);
    PQclear(r);
    return n;
}

static void p_close(fl_store *st)
{
    pstore *s = (pstore *)st;
    if (!s)
        return;
    free(s->url);
    free(s);
}

/* Two statements, each its own transaction: a server whose INSERT met
 * another's waits for it to commit, does nothing, and then reads the
 * winner's value. */
static int p_shared_value(fl_store_conn *pc, const char *name, const char *candidate, char *out,
                          size_t cap)
{
    pconn *c = (pconn *)pc;
    p_args a = {0};
    p_text(&a, name);
    p_text(&a, candidate);
    if (p_run(c, "INSERT INTO settings VALUES($1, $2) ON CONFLICT (name) DO NOTHING", &a))
        return -1;
    a.n = 1;
    PGresult *r = p_exec(c, "SELECT value FROM settings WHERE name=$1", &a, 0);
    if (!r)
        return -1;
    int rc = -1;
    if (PQntuples(r) == 1 && (size_t)PQgetlength(r, 0, 0) < cap) {
        snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
        rc = 0;
    } else {
        p_seterr(c, "setting %s: missing or longer than %zu bytes", name, cap - 1);
    }
    PQclear(r);
    return rc;
}

/* ---- for queue_pg.c */

static pconn *p_of(fl_store_conn *c)
{
    return c && c->store && !strcmp(c->store->engine, "postgres") ? (pconn *)c : NULL;
}

PGresult *fl_store_pg_exec(fl_store_conn *pc, const char *sql, int n, const char *const *v)
{
    pconn *c = p_of(pc);
    return c ? p_execv(c, sql, n, v, NULL, NULL, 0, true) : NULL;
}

/* Takes the notifications libpq has read; true when there was one. */
static bool p_drain(pconn *c)
{
    bool got = false;
    PGnotify *nf;
    while ((nf = PQnotifies(c->db))) {
        got = true;
        PQfreemem(nf);
    }
    return got;
}

int fl_store_pg_wait(fl_store_conn *pc, const char *channel, unsigned ms)
{
    pconn *c = p_of(pc);
    if (!c || c->txn || strlen(channel) >= sizeof c->listening ||
        strspn(channel, "abcdefghijklmnopqrstuvwxyz_") != strlen(channel))
        return -1;
    if (p_ready(c))
        return -1;
    if (strcmp(c->listening, channel)) {
        char sql[64];
        snprintf(sql, sizeof sql, "LISTEN %s", channel);
        PGresult *r = p_execv(c, sql, 0, NULL, NULL, NULL, 0, false);
        if (!r)
            return -1;
        PQclear(r);
        snprintf(c->listening, sizeof c->listening, "%s", channel);
    }
    /* Those read along with earlier results first: they are not on the
     * socket any more. */
    if (PQconsumeInput(c->db) == 0) {
        p_fail(c, NULL);
        return -1;
    }
    if (p_drain(c))
        return 1;
    if (ms == 0)
        return 0;
    struct pollfd p = {.fd = PQsocket(c->db), .events = POLLIN};
    int pr = poll(&p, 1, (int)ms);
    if (pr < 0)
        return errno == EINTR ? 0 : -1;
    if (pr == 0)
        return 0;
    if (PQconsumeInput(c->db) == 0) {
        p_fail(c, NULL);
        return -1;
    }
    return p_drain(c) ? 1 : 0;
}

/* The schema's upgrade at open gets this many times a statement's
 * deadline: a new index on a large table takes its time. */
#define P_DDL_FACTOR 10

fl_store *fl_store_pg_open(const char *url, unsigned timeout_s, char *err, size_t errlen)
{
    if (timeout_s == 0)
        timeout_s = FL_STORE_PG_TIMEOUT_S;
    bool late;
    PGconn *db = p_connectdb(url, timeout_s, &late);
    char msg[400];
    if (!db || PQstatus(db) != CONNECTION_OK) {
        if (late)
            snprintf(msg, sizeof msg, P_LATE_TEXT, timeout_s);
        else
            snprintf(msg, sizeof msg, "%s", db ? PQerrorMessage(db) : "out of memory");
        p_trim(msg);
        snprintf(err, errlen, "cannot connect to PostgreSQL: %s", msg);
        PQfinish(db);
        return NULL;
    }
    /* No DDL when the tables are current (see SCHEMA_DDL); a new
     * database has no settings table yet, and gets it from SCHEMA. */
    PGresult *r =
        p_exec_text(db, "SELECT value FROM settings WHERE name = 'schema_ddl'", timeout_s, &late);
    if (late) {
        snprintf(err, errlen, "cannot read the schema's version: " P_LATE_TEXT, timeout_s);
        PQfinish(db);
        return NULL;
    }
    bool found = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    bool current = found && !strcmp(PQgetvalue(r, 0, 0), SCHEMA_DDL);
    long ddl = found ? strtol(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    /* A database a newer server upgraded: this one would write to tables
     * whose rules it does not know (and set the mark back). */
    if (ddl > strtol(SCHEMA_DDL, NULL, 10)) {
        snprintf(err, errlen,
                 "the database was upgraded by a newer faultline (schema %ld; this one knows up "
                 "to %s): run that version, or restore a backup made before the upgrade",
                 ddl, SCHEMA_DDL);
        PQfinish(db);
        return NULL;
    }
    r = current ? NULL : p_exec_text(db, SCHEMA, P_DDL_FACTOR * timeout_s, &late);
    if (!current && PQresultStatus(r) != PGRES_COMMAND_OK) {
        if (late)
            snprintf(msg, sizeof msg, P_LATE_TEXT, P_DDL_FACTOR * timeout_s);
        else
            snprintf(msg, sizeof msg, "%s", PQerrorMessage(db));
        p_trim(msg);
        snprintf(err, errlen, "cannot create the schema: %s", msg);
        PQclear(r);
        PQfinish(db);
        return NULL;
    }
    PQclear(r);
    r = p_exec_text(db, "SELECT max(version) FROM fl_schema", timeout_s, &late);
    if (late) {
        snprintf(err, errlen, "cannot read the schema's version: " P_LATE_TEXT, timeout_s);
        PQfinish(db);
        return NULL;
    }
    int64_t version = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                          ? strtoll(PQgetvalue(r, 0, 0), NULL, 10)
                          : -1;
    PQclear(r);
    PQfinish(db);
    if (version != SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "the database's schema is version %" PRId64 ", this server knows version %d",
                 version, SCHEMA_VERSION);
        return NULL;
    }
    pstore *s = calloc(1, sizeof *s);
    if (!s || !(s->url = strdup(url))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->timeout_s = timeout_s;
    fl_store *p = &s->pub;
    p->engine = "postgres";
    p->connect = p_connect;
    p->disconnect = p_disconnect;
    p->begin = p_begin;
    p->commit = p_commit;
    p->get_minidump = p_get_minidump;
    p->rollback = p_rollback;
    p->error = p_error;
    p->unavailable = p_unavailable;
    p->conflict = p_conflict;
    p->insert_crashes = p_insert_crashes;
    p->probe = p_probe;
    p->ping = p_ping;
    p->processing_started = p_processing_started;
    p->requeue = p_requeue;
    p->processing_ended = p_processing_ended;
    p->load_raw = p_load_raw;
    p->apply = p_apply;
    p->reapply = p_reapply;
    p->add_symbol = p_add_symbol;
    p->list_symbols = p_list_symbols;
    p->find_symbol = p_find_symbol;
    p->fetch_symbol = p_fetch_symbol;
    p->symbols_version = p_symbols_version;
    p->late_symbols = p_late_symbols;
    p->symbols_arrived = p_symbols_arrived;
    p->list_groups = p_list_groups;
    p->get_group = p_get_group;
    p->delete_crash = p_delete_crash;
    p->expire = p_expire;
    p->delete_group = p_delete_group;
    p->delete_group_step = p_delete_group_step;
    p->group_deleted = p_group_deleted;
    p->group_crashes = p_group_crashes;
    p->notices_claim = p_notices_claim;
    p->notice_done = p_notice_done;
    p->notice_later = p_notice_later;
    p->get_crash = p_get_crash;
    p->set_status = p_set_status;
    p->merge_group = p_merge_group;
    p->unmerge_group = p_unmerge_group;
    p->stats = p_stats;
    p->add_project = p_add_project;
    p->add_project_key = p_add_project_key;
    p->revoke_project_key = p_revoke_project_key;
    p->list_projects = p_list_projects;
    p->trends = p_trends;
    p->published = p_published;
    p->unpublished = p_unpublished;
    p->unpublish_stale = p_unpublish_stale;
    p->backlog = p_backlog;
    p->shared_value = p_shared_value;
    p->close = p_close;
    p->data = s;
    return p;
}
