/*
 * fl_store.h - where crashes and groups live, behind a small interface.
 *
 * One implementation per file: store_sqlite.c (the embedded default, one
 * SQLite file in WAL mode) and store_pg.c (PostgreSQL, shared by many
 * servers and workers: `serve --db postgres://...`).  Everything
 * above the store -- ingest, workers, the API -- uses only these function
 * pointers, so the engines share every line above them.
 *
 * A store hands out connections (fl_store_conn), one per thread; a
 * connection is never shared between threads.  Writes happen between
 * begin() and commit(); a failed call inside a transaction leaves it to the
 * caller to rollback().  Every function returns 0 on success and -1 on
 * failure unless said otherwise.
 */
#ifndef FL_STORE_H
#define FL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

typedef struct fl_store fl_store;
typedef struct fl_store_conn fl_store_conn;

#define FL_CRASH_ID_MAX 72 /* bytes, including the NUL */

/* Raw logs are stored zstd-compressed, several to a frame (logs of one
 * batch look alike: a frame of them compresses ~25x where one log alone
 * does ~3x).  A frame holds at most FL_RAW_FRAME_MAX bytes of logs, or one
 * larger log.  Level 3 takes ~40 % fewer instructions than level 1 on such
 * a batch: it finds the long repeats and skips ahead. */
#define FL_RAW_ZSTD_LEVEL 3
/* The largest minidump get_minidump() decompresses (ingest takes 8 MiB by
 * default: --max-decoded). */
#define FL_MINIDUMP_MAX (64u << 20)
#define FL_RAW_FRAME_MAX (256u << 10)

/* A raw report accepted by ingest.  Everything borrowed. */
/* Projects: each ingest key belongs to one, and so does every crash sent
 * with it; groups are per project and application.  The default project
 * always exists, and its key is the server's (FAULTLINE_INGEST_KEY or the
 * generated one), kept outside the store; the store keeps the others and
 * their keys.  A project id is 1 to 63 of [a-z0-9_-], starting with a
 * letter or digit (fl_project_id_ok).  Rows from before projects have
 * none: they are the default project's. */
#define FL_PROJECT_MAX 64
#define FL_PROJECT_DEFAULT "default"

typedef struct fl_ingest_item {
    char crash_id[FL_CRASH_ID_MAX];
    const char *project;       /* NULL: the default project */
    const char *app, *version; /* may be NULL */
    const char *email;         /* what the user gave the reporter, or NULL */
    int64_t received;          /* seconds since the epoch */
    const char *raw;           /* the log as received, not compressed */
    size_t raw_len;
    /* Optional, on the first item of a run: the raw logs of this item and
     * the zitems - 1 after it in the array given to insert_crashes(),
     * concatenated and compressed into one zstd frame of zlen bytes (level
     * FL_RAW_ZSTD_LEVEL, at most FL_RAW_FRAME_MAX raw bytes unless it is one
     * log).  The store keeps the frame instead of compressing them again,
     * which lets ingest compress a large pass on its HTTP thread, off the
     * serial commit path.  NULL: the store compresses. */
    const void *z;
    size_t zlen, zitems;
    /* Optional: the minidump the log was made from (Breakpad, Crashpad),
     * zstd-compressed (dump_len bytes; dump_size before), kept beside the
     * log under its crash id for get_minidump().  NULL: none. */
    const void *dump;
    size_t dump_len, dump_size;
    bool duplicate; /* set by insert_crashes(): the crash id was known */
    /* Set by insert_crashes() for a stored report: what names it to
     * load_raw() and apply() -- the task to enqueue.  Empty: the crash id
     * does. */
    char ref[FL_CRASH_ID_MAX];
} fl_ingest_item;

/* The result of processing one crash.  Everything borrowed. */
typedef struct fl_processed {
    const char *crash_id;
    const char *ref; /* what the task named it by (load_raw); NULL: crash_id */
    const char *project; /* as load_raw() gave it; NULL or "": the default */
    bool failed; /* could not be processed: mark it, count nothing */
    const char *group_id, *signature, *stack_hash;
    const char *app, *version, *os, *install_id; /* may be NULL */
    const char *arch; /* CPUARCH_NAME, for the group's breakdown; may be NULL */
    int64_t received;
    const char *frames_json; /* representative frames, kept by a new group */
    const void *zprocessed;  /* processed crash (JSON), zstd-compressed */
    size_t zprocessed_len;
    /* Build ids of the modules that had no symbols (for the backfill when
     * their debug files arrive). */
    const char *const *missing_build_ids;
    size_t nmissing;
} fl_processed;

/* A split DWARF object (.dwo file) has no build id: it is stored, listed
 * and waited for (crash_missing, symbols_arrived) under this prefix + its
 * DWO id in 16 lowercase hex digits, where other files have their build
 * id; kind "dwo". */
#define FL_DWO_KEY_PREFIX "dwo-"

/* The key of a symbols row as GET /api/v1/symbols shows it, into o:
 * "build_id", and for a .dwo file (whose build_id is null) "dwo_id" too.
 * key may be NULL (a file that could not be read). */
static inline void fl_store_symbol_key(json_t *o, const char *key)
{
    size_t n = strlen(FL_DWO_KEY_PREFIX);
    bool dwo = key && !strncmp(key, FL_DWO_KEY_PREFIX, n);
    json_object_set_new(o, "build_id", key && !dwo ? json_string(key) : json_null());
    if (dwo)
        json_object_set_new(o, "dwo_id", json_string(key + n));
}

/* One ingested debug file (an upload or a file of the watched directory). */
typedef struct fl_symbol_rec {
    const char *build_id; /* NULL when the file could not be parsed; for a .dwo
                           * file, FL_DWO_KEY_PREFIX + its DWO id */
    const char *name;     /* the file name given by the uploader */
    int64_t size;
    const char *status;   /* "ok" or "failed" */
    const char *error;    /* why it failed, or NULL */
    const char *kind;     /* "debuginfo", "executable" (has code) or "dwo", or NULL */
    const char *path;     /* where it is kept on the server, or NULL */
    int64_t uploaded;     /* seconds since the epoch */
} fl_symbol_rec;

/* Orders of list_groups(): by count (largest first), by last crash or
 * by first crash (newest first); ties by id. */
typedef enum { FL_SORT_COUNT, FL_SORT_LAST_SEEN, FL_SORT_FIRST_SEEN } fl_group_sort;

typedef struct fl_group_filter {
    const char *project, *app, *version, *status; /* NULL: any */
    /* Groups whose signature contains q, ASCII letters compared without
     * case (a function or module name); NULL: any. */
    const char *q;
    /* Groups an installation (INSTALL_ID) crashed in; NULL: any. */
    const char *install;
    fl_group_sort sort;
    unsigned limit, offset;
} fl_group_filter;

/* An event for `serve --notify-url` (notify.c), kept in the store until
 * it is sent: a group's first crash ("new_group"), or a crash that made a
 * resolved group regress ("regressed"). */
#define FL_NOTICE_NEW_GROUP "new_group"
#define FL_NOTICE_REGRESSED "regressed"
typedef struct fl_notice {
    int64_t id;
    char kind[16];
    char group_id[64];
    char crash_id[FL_CRASH_ID_MAX]; /* the crash that made it */
    int64_t created;                /* seconds since the epoch */
    unsigned attempts;              /* this one included */
} fl_notice;

typedef struct fl_store_stats {
    int64_t crashes, processed, groups;
} fl_store_stats;

/* load_raw(): the store could not be read now (not: the log is damaged). */
#define FL_LOAD_UNAVAILABLE (-2)

struct fl_store_conn {
    fl_store *store;
    void *data;
};

struct fl_store {
    const char *engine; /* "sqlite", ... */
    fl_store_conn *(*connect)(fl_store *s); /* NULL on failure */
    void (*disconnect)(fl_store_conn *c);   /* NULL is fine */

    int (*begin)(fl_store_conn *c);
    int (*commit)(fl_store_conn *c);
    void (*rollback)(fl_store_conn *c);
    /* Why the last call on c that failed did, for the log and /healthz
     * (e.g. "database or disk is full"); borrowed until the next call on c.
     * Read it before rollback(), which may replace it. */
    const char *(*error)(fl_store_conn *c);
    /* Whether the last call on c that failed did because the store is
     * away for now (a connection to PostgreSQL lost and not made again, a
     * database busy, locked or full): worth asking again later (503 with
     * Retry-After), unlike a failure that will happen again.  NULL: never. */
    bool (*unavailable)(fl_store_conn *c);
    /* Whether the last call on c that failed did because its transaction
     * met a concurrent one (PostgreSQL's deadlock or serialization
     * failure): rolled back and run again, it should pass; the store
     * itself is fine.  NULL: never. */
    bool (*conflict)(fl_store_conn *c);
    /* A write of about the size of an ingest commit, committed and undone
     * (not in a transaction): does the store take writes again?  The
     * writer's, while ingest is failing and no report arrives to tell.
     * 0 when it committed.  NULL: the engine has none. */
    int (*probe)(fl_store_conn *c);
    /* A round trip that writes nothing: is the store there?  The writer's,
     * while no report arrives to tell (an idle API server whose database
     * went away).  0 when it answered.  NULL: nothing to ask (a local
     * file). */
    int (*ping)(fl_store_conn *c);

    /* Store a batch of raw reports, each unless its crash id is known
     * (then its duplicate flag is set; a crash id twice in one batch is
     * stored once).  "Known" may lag: an engine may store a resend of a
     * crash not yet processed, as long as apply() counts the crash id once.
     * Sets each stored item's ref.  Compression is the engine's business:
     * the reports of one batch are usually much alike, and compressing them
     * together costs a fraction of compressing each alone.  In a
     * transaction. */
    int (*insert_crashes)(fl_store_conn *c, fl_ingest_item *const *items, size_t n);
    /* The raw log (caller frees), when it was received and the crash id
     * (into id when not NULL) of the report that ref names: an item's ref,
     * or a crash id.  Returns 1 when there is no such report (or it was
     * dropped as a duplicate), 2 when it was already processed (nothing
     * returned), 3 when it was processed and is marked for re-processing
     * (the log is returned: process it and reapply()), -1 when the stored
     * log is damaged (it never will load), FL_LOAD_UNAVAILABLE when the
     * store could not be read (error() says why; try again later). */
    /* Processing of the report ref names is about to start, and has to be
     * watched: its task was claimed before and never finished, so a report
     * of it may stop the server whenever it is processed.  Counts the start
     * durably (own transaction) and says how many earlier starts never
     * ended.  processing_ended() forgets it, in the transaction that
     * records the processed crash. */
    int (*processing_started)(fl_store_conn *c, const char *ref, unsigned *before);
    /* Have crash id processed again (an operator's request): a failed
     * crash from the start, a processed one the way a late debug file
     * re-processes it (reapply).  Returns 0 -- the caller then enqueues id
     * in the same transaction --, 1 when there is no such crash, 2 when it
     * is not processed yet.  In a transaction. */
    int (*requeue)(fl_store_conn *c, const char *id); /* 3: the crash was deleted */
    int (*processing_ended)(fl_store_conn *c, const char *ref);
    /* project (may be NULL, as id): the report's project id, "" for the
     * default one. */
    int (*load_raw)(fl_store_conn *c, const char *ref, char **raw, size_t *len, int64_t *received,
                    char id[FL_CRASH_ID_MAX], char project[FL_PROJECT_MAX]);
    /* Record a processed crash (p->ref, or p->crash_id, names the report)
     * and update its group's counters, exactly once per crash id: a crash
     * already processed is left alone (returns 0); a second report with a
     * crash id already counted is dropped (returns 1).  In a transaction. */
    int (*apply)(fl_store_conn *c, const fl_processed *p);
    /* Re-record a crash marked for re-processing (symbols_arrived): new
     * frames and, when the signature changed, a move to the new group --
     * the old group's counters decremented, the new one's incremented, in
     * the caller's transaction.  A crash not marked is left alone
     * (returns 0), so a task delivered twice moves the crash once. */
    int (*reapply)(fl_store_conn *c, const fl_processed *p);

    /* ---- deleting crashes */
    /* Delete crash id at an operator's request (its user asked, say): its
     * raw log, processed crash and e-mail address go, and a row of the id
     * stays, state "deleted", so that a resend is neither stored nor
     * counted again.  Its group keeps its counts (they say what happened,
     * not what is kept).  A crash not processed yet never is.  Returns 0,
     * 1 when there is no such crash, 2 when it was deleted already.  In a
     * transaction. */
    int (*delete_crash)(fl_store_conn *c, const char *id);
    /* Retention: remove up to max processed (or failed) crashes received
     * before `before` (seconds since the epoch), oldest first, rows and
     * all; their groups keep their counts.  *n says how many went.  A
     * crash waiting to be processed (again) stays until it is.  In a
     * transaction; the caller commits and repeats while *n == max. */
    int (*expire)(fl_store_conn *c, int64_t before, size_t max, size_t *n);
    /* The minidump crash id was made from, as received (caller frees
     * *data): 0, 1 when none is kept (the crash came as a log, is unknown,
     * or was deleted or expired -- delete_crash(), expire() and a group's
     * delete take it with the crash), -1 on error. */
    int (*get_minidump)(fl_store_conn *c, const char *id, char **data, size_t *len);

    /* ---- deleting a whole group (DELETE /api/v1/groups/{id}), in steps
     * so that a group of 100,000 crashes does not hold the (SQLite: only)
     * writer for seconds.  delete_group() begins: the group's row goes at
     * once, with the rows of the groups merged into it, their counters
     * (per day, version, OS) and pending notices, and a tombstone of each
     * id stays (group_deleted()).  From its commit on, a crash of one of
     * their signatures starts a new group under a new id (fl_group_gen_id:
     * apply() and reapply() look the signature's current id up), so a
     * crash that arrives meanwhile is counted there, once, and never in
     * the group being erased.  Then delete_group_step() erases the
     * crashes of the group and of those merged into it (a merge leaves
     * them in their own) as delete_crash() does, max per call, then their
     * installations, and marks the tombstones done.
     * delete_group(): 0 (begun, or a delete that stopped halfway goes
     * on), 1 when there is no such group, 2 when it was deleted already
     * (done), 3 when it is merged into another, whose id goes into `into`
     * (64 bytes; nothing changed).  In a transaction. */
    int (*delete_group)(fl_store_conn *c, const char *id, char *into);
    /* Erase up to max crashes of group id, being deleted; *n says how many
     * went (added to the tombstone's count), *more whether another call
     * has work left.  In a transaction; the caller commits and repeats
     * while *more. */
    int (*delete_group_step)(fl_store_conn *c, const char *id, size_t max, size_t *n, bool *more);
    /* Group id's tombstone: 0 with when it was deleted (seconds since the
     * epoch), the crashes erased, whether the erasing is done and, for a
     * group merged into the one deleted, that one's id (`with`, 64 bytes,
     * else ""); 1 when id was never deleted.  Outside or in a
     * transaction. */
    int (*group_deleted)(fl_store_conn *c, const char *id, int64_t *when, int64_t *crashes,
                         bool *done, char *with);

    /* ---- notifications (notify.c)
     * With notify set (before the first apply()), apply() and reapply()
     * record an fl_notice in their transaction when a crash creates its
     * group or makes a resolved one regress. */
    bool notify;
    /* Take up to max notices due at now (next try reached; or set more
     * than max_wait_s ahead, which only a clock set back does), oldest
     * first: each one's attempts go up and its next try moves to now +
     * lease_s, so that another sender leaves it alone meanwhile.  Own
     * transaction. */
    int (*notices_claim)(fl_store_conn *c, int64_t now, unsigned lease_s, int64_t max_wait_s,
                         size_t max, fl_notice *out, size_t *n);
    /* Sent, or given up: forget notice id.  Outside a transaction. */
    int (*notice_done)(fl_store_conn *c, int64_t id);
    /* Failed: try notice id again at next_try.  Outside a transaction. */
    int (*notice_later)(fl_store_conn *c, int64_t id, int64_t next_try);

    /* ---- symbols */
    /* Record an ingested debug file.  Outside or inside a transaction. */
    int (*add_symbol)(fl_store_conn *c, const fl_symbol_rec *r);
    /* {"symbols":[...]}, newest first (caller decrefs); NULL on error. */
    json_t *(*list_symbols)(fl_store_conn *c, unsigned limit);
    /* The path of the newest good file for a build id (lowercase hex)
     * into path; kind (may be NULL) filters on "executable".  Returns 0,
     * 1 when there is none, -1 on error. */
    int (*find_symbol)(fl_store_conn *c, const char *build_id, const char *kind, char *path,
                       size_t cap);
    /* A version of the symbols table (grows with every ingested file), read
     * by a worker before it processes a batch. */
    int (*symbols_version)(fl_store_conn *c, int64_t *out);
    /* After apply()/reapply() of p, in the same transaction: when a debug
     * file for one of p's missing build ids arrived after `seen` (a
     * symbols_version read before processing), the upload's backfill ran
     * too early to see this crash; mark it for re-processing and set
     * *requeue so the caller enqueues it.  Re-processing reads a newer
     * version, so this cannot loop. */
    int (*late_symbols)(fl_store_conn *c, const fl_processed *p, int64_t seen, bool *requeue);
    /* Symbols for build_id arrived: mark the processed crashes that lacked
     * them for re-processing and return their ids (*ids: caller frees each
     * and the array; at most max).  In a transaction; the caller enqueues
     * a task per id in the same one. */
    int (*symbols_arrived)(fl_store_conn *c, const char *build_id, size_t max, char ***ids,
                           size_t *n);

    /* Reads, as JSON (caller decrefs); NULL with *notfound set when the
     * object does not exist, NULL alone on error. */
    json_t *(*list_groups)(fl_store_conn *c, const fl_group_filter *f);
    json_t *(*get_group)(fl_store_conn *c, const char *id, bool *notfound);
    json_t *(*get_crash)(fl_store_conn *c, const char *id, bool *notfound);
    /* Group id's crashes kept (neither removed nor deleted), newest first,
     * limit of them from offset: {"crashes":[{"id","received","version",
     * "installation"}...],"total":N}; only installation install's when
     * it is not NULL. */
    json_t *(*group_crashes)(fl_store_conn *c, const char *id, const char *install, unsigned limit,
                             unsigned offset, bool *notfound);
    /* Set a group's status ("open", "resolved"); resolving records
     * resolved_in, or the latest version seen when resolved_in is NULL.
     * Returns 1 when the group does not exist. */
    int (*set_status)(fl_store_conn *c, const char *id, const char *status,
                      const char *resolved_in);
    /* Merge group `from` into group `into` (an operator's call: two
     * signatures of one bug).  Group rows only, however many crashes
     * (a group of 100,000 used to hold the SQLite writer ~0.35..1 s):
     * from's crashes, counts, breakdowns and installations stay its own,
     * and every read of into adds those of the groups merged into it
     * (list_groups and get_group: counts, first/last seen, affected,
     * per-day, version and OS counts; group_crashes: the crashes, install
     * filter included; get_crash: a crash's group_id; list_groups'
     * version and install filters).  into keeps its own status (which a
     * later crash of from's signature can regress) and representative
     * crash, and the newest latest version; from's pending notices move
     * to into (a "new group" one is dropped).  from stays as a row that
     * forwards (merged_into): every read or change of from's id
     * (get_group, group_crashes, set_status, merge_group) acts on into.
     * Groups merged into from forward to into.  Returns 0, 1 when into
     * does not exist, 2 when from does not, 3 when they belong to
     * different projects or applications, 4 when they are one group
     * already.  In a transaction. */
    int (*merge_group)(fl_store_conn *c, const char *into, const char *from);
    /* Undo a merge: group id, merged into another, stands for itself
     * again, with its crashes and counts, which never left it (group rows
     * only, as merge_group); the group it was merged into goes into `from`
     * (64 bytes).  Crashes that a merge of an older version (SQLite
     * generation 4, PostgreSQL schema_ddl 6) moved into that group are
     * marked for re-processing (reapply() then moves each back, counters
     * and all); their ids are returned (*ids: caller frees each and the
     * array; none for a merge made since) for the caller to enqueue in the
     * same transaction.  Returns 0, 1 when there is no such group, 2 when
     * it is not merged.  In a transaction. */
    int (*unmerge_group)(fl_store_conn *c, const char *id, char *from, char ***ids, size_t *n);
    int (*stats)(fl_store_conn *c, fl_store_stats *out);

    /* ---- projects other than the default (see FL_PROJECT_MAX).  Outside
     * a transaction or in one. */
    /* Create project id with its first ingest key: 0, 1 when it exists
     * (nothing changed), -1 on error. */
    int (*add_project)(fl_store_conn *c, const char *id, const char *key, int64_t now);
    /* Another ingest key for project id (to rotate keys): 0, 1 when there
     * is no such project, -1 on error. */
    int (*add_project_key)(fl_store_conn *c, const char *id, const char *key, int64_t now);
    /* Revoke key, an ingest key of project id: 0, 1 when project id has
     * no such key, -1 on error. */
    int (*revoke_project_key)(fl_store_conn *c, const char *id, const char *key);
    /* {"projects":[{"id":…,"created":…,"keys":[{"key":…,"created":…}…]}…]},
     * by id, keys oldest first (then by key); times as the other reads
     * give them (ISO 8601, UTC).  Caller decrefs; NULL on error. */
    json_t *(*list_projects)(fl_store_conn *c);
    /* An application's trends (app NULL: all applications together) from
     * day from_day ("YYYY-MM-DD", UTC) on, counted when crashes are
     * processed: {"rows":[[day, kind, value, count]...] -- kind "c"
     * (value ""), "v" (a version) or "o" (an OS), "" for unknown --,
     * "installs":[[day, installations that crashed]...], "apps":[every
     * application name]}, sparse and in no order (the API makes it
     * dense).  Caller decrefs; NULL on error. */
    json_t *(*trends)(fl_store_conn *c, const char *app, const char *from_day);

    /* ---- for a queue outside the store (fl_queue.in_store_txn false).
     * NULL in an engine only ever used with a queue of its own database.
     * The store then keeps, per report waiting for processing, whether its
     * task reached the queue: the writer publishes after its commit, and a
     * server stopped in between (or a broker away) must not leave a report
     * that nobody will ever process. */
    /* The tasks of these refs (crash ids) were accepted by the queue.
     * In the caller's transaction or on its own; losing this write costs a
     * duplicate task at most (apply() counts a crash once). */
    int (*published)(fl_store_conn *c, const char *const *refs, size_t n);
    /* Refs of reports waiting for processing (stored, or marked for
     * re-processing by requeue()/symbols_arrived()) for at least min_age_s
     * seconds whose task never reached the queue; at most max (*refs:
     * caller frees each and the array).  The caller publishes them and
     * calls published(). */
    int (*unpublished)(fl_store_conn *c, int64_t min_age_s, size_t max, char ***refs, size_t *n);
    /* Marks unpublished the waiting crashes whose task reached the queue
     * min_age_s or more ago (a broker that lost its queue holds none of
     * them: unpublished() then gives them again).  OUT: *n, how many.
     * Returns 0 or -1.  NULL: the engine keeps no such mark. */
    int (*unpublish_stale)(fl_store_conn *c, int64_t min_age_s, size_t *n);
    /* Crashes stored and not processed yet, those marked for
     * re-processing included; -1 on error.  A queue that cannot count its
     * crashes (a broker counts messages) reports this as its depth. */
    int64_t (*backlog)(fl_store_conn *c);

    /* ---- debug files shared between servers.  NULL in an engine whose
     * servers share a data directory (SQLite: one machine).  An engine
     * that has it keeps the bytes of each good file add_symbol() records
     * (read from r->path), and fetch_symbol() copies the newest good file
     * of build_id into ROOT/<build_id>/<kind> -- the layout of an upload
     * root (fl_symlocate.h) -- unless one is there already.  Returns 0
     * when it copied a file, 1 when the store has none or ROOT has it,
     * -1 on error.  Outside a transaction. */
    int (*fetch_symbol)(fl_store_conn *c, const char *build_id, const char *root);
    /* A value every server of the store shares, such as a generated key:
     * the stored one, or candidate, stored now when none is (the first
     * server to start sets it).  0 with the value in out, -1 on error.
     * NULL in an engine of one machine (SQLite: the data directory holds
     * such values).  Outside a transaction. */
    int (*shared_value)(fl_store_conn *c, const char *name, const char *candidate, char *out,
                        size_t cap);

    void (*close)(fl_store *s); /* after every connection is gone */
    void *data;
};

/* Open (creating when needed) the SQLite store at path.  On failure returns
 * NULL and writes a reason into err. */
fl_store *fl_store_sqlite_open(const char *path, char *err, size_t errlen);

/* Open the PostgreSQL store at url (a libpq connection URI or string,
 * "postgres://user@host:port/db"), creating its tables when needed; many
 * servers may share it.  A statement not answered within timeout_s (0:
 * FL_STORE_PG_TIMEOUT_S) fails, and its connection is dropped, so that a
 * database frozen with its sockets open holds no caller for good; a new
 * connection waits as long, 10 s at most; the schema's upgrade here ten
 * times as long.  On failure returns NULL and writes a reason into err. */
#define FL_STORE_PG_TIMEOUT_S 30
fl_store *fl_store_pg_open(const char *url, unsigned timeout_s, char *err, size_t errlen);

/* For the queue inside the PostgreSQL store (queue_pg.c), which keeps its
 * tasks in the store's database and writes them in the store's
 * transactions.  fl_store_pg_exec() runs sql -- a literal: it is prepared
 * once per connection -- with n text parameters on c, inside c's
 * transaction when one is open, and returns the result (for PQclear()),
 * or NULL with the store's error() set; NULL too for another engine. */
struct pg_result *fl_store_pg_exec(fl_store_conn *c, const char *sql, int n, const char *const *v);
/* Waits up to ms for a notification on channel (an identifier of
 * lowercase letters and '_'), LISTENing to it on c's session the first
 * time (and again after a reconnection).  1 when one came or was already
 * waiting, 0 when none did, -1 on error.  Outside a transaction. */
int fl_store_pg_wait(fl_store_conn *c, const char *channel, unsigned ms);

/* The SQLite handle behind a connection of the SQLite store, for the
 * embedded queue which keeps its tasks in the same database (and so in the
 * same transactions); NULL for other engines. */
struct sqlite3 *fl_store_sqlite_db(fl_store_conn *c);
/* A prepared statement cached by the connection, keyed by the address of
 * `sql` (a string literal); reset and unbound.  Borrowed; NULL on error or
 * when the small cache is full. */
struct sqlite3_stmt *fl_store_sqlite_stmt(fl_store_conn *c, const char *sql);

/* The SQLite store's filter of stored crash ids (fl_idfilter), which lets
 * ingest skip looking up a new crash id: whether it is loaded (until then
 * every id is looked up), how many ids it holds and its memory, and how
 * many lookups ingest did.  All zero for other engines.  A clean stop
 * leaves the filter in <database>.ids for the next start to load at once
 * (and delete) instead of reading every stored id again. */
typedef struct fl_store_known_info {
    bool ready;
    bool from_snapshot; /* loaded from the snapshot a clean stop left */
    int64_t lookups;
    size_t ids, bytes;
} fl_store_known_info;
void fl_store_sqlite_known_info(fl_store *s, fl_store_known_info *out);
/* The SQLite store's checkpointer, which copies the WAL back into the
 * database in the background: its passes (asked: started because commits
 * grew the WAL by 512 KiB, the others by its 200 ms timer), the RESTART
 * checkpoints that let the WAL start over past 64 MiB and those that gave
 * way to a reader or writer holding on (tried again a second later), and
 * the WAL's length in frames after the last pass.  All zero for other
 * engines. */
typedef struct fl_store_wal_info {
    uint64_t passes, passes_asked, restarts, restarts_deferred;
    int64_t wal_frames;
} fl_store_wal_info;
void fl_store_sqlite_wal_info(fl_store *s, fl_store_wal_info *out);
/* No filter: ingest looks every crash id up (`serve --no-id-filter`, for a
 * server short of memory, and the bench's comparison).  Before the first
 * ingest. */
void fl_store_sqlite_no_id_filter(fl_store *s);

/* Checks that every statement the SQLite store runs per crash is answered
 * through an index: a full table scan there makes ingest or processing
 * quadratic in the number of crashes.  Returns how many statements scan a
 * table (0 is right) and names the first in bad[0..badlen).  For tests. */
int fl_store_sqlite_full_scans(fl_store_conn *c, char *bad, size_t badlen);

#endif
