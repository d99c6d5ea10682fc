/*
 * fl_serve.h - the pieces of `faultline serve` and how they connect.
 *
 *   HTTP loops (http.c, a libmicrohttpd daemon each)
 *      | check each log (fl_crashlog_check); a pass's complete reports go
 *      | to the writer as one list (compressed here when the pass holds
 *      | 64 KiB of logs or more), their connections waiting, no answer yet
 *      v
 *   writer thread (writer.c): group commit -- one transaction, one fsync
 *      | for every request that arrived meanwhile; compresses the rest of
 *      | the batch's logs as one frame, appends them to the store's inbox
 *      | with their tasks, commits, then marks each request done and wakes
 *      | each loop once (the loop answers)
 *      v
 *   task queue (fl_queue)  ->  worker threads (worker.c): claim with a
 *      lease, parse, frames, signature, apply to the store (which counts
 *      each crash id once) + ack in one transaction.
 */
#ifndef FL_SERVE_H
#define FL_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fl_group.h"
#include "fl_health.h"
#include "fl_minidump.h"
#include "fl_queue.h"
#include "fl_store.h"

struct fl_tracesec; /* fl_tracesec.h */

/* ---- metrics: plain counters updated with relaxed atomics */

enum {
    FL_REJ_MALFORMED,
    FL_REJ_TOO_LARGE,
    FL_REJ_UNAUTHORIZED,
    FL_REJ_RATE_LIMITED,
    FL_REJ_UNAVAILABLE,
    FL_REJ_BAD_REQUEST,
    FL_REJ_TOO_SLOW, /* a request not whole within --request-timeout */
    FL_REJ_COUNT
};

typedef struct fl_metrics {
    uint64_t accepted;   /* reports answered 200 (new or duplicate) */
    uint64_t duplicates; /* of which already known */
    uint64_t rejected[FL_REJ_COUNT];
    uint64_t commits, committed_items;
    uint64_t commit_ns; /* writer time in transactions (insert to fsync), summed */
    uint64_t loop_compressed; /* reports whose raw log an HTTP thread compressed */
    uint64_t processed, processing_failed;
    uint64_t dropped_duplicates; /* second copies dropped by the workers */
    uint64_t deleted_retention;  /* crashes removed by --retention (retention.c) */
    uint64_t deleted_request;    /* crashes deleted through the API */
    uint64_t deleted_group;      /* crashes deleted with their group (DELETE /api/v1/groups/ID) */
    uint64_t notify_sent, notify_failed, notify_dropped; /* --notify-url events (notify.c) */
    uint64_t notify_digests_sent, notify_digests_failed, notify_digests_dropped; /* messages */
    uint64_t processing_ns; /* worker time per crash, summed */
    uint64_t requests;
    uint64_t republished;    /* tasks published by the sweep (queue.c) */
    uint64_t apply_conflicts; /* worker transactions that met a concurrent one, run again */
    uint64_t publish_failed; /* publishes after a commit that the queue refused */
    int64_t backlog; /* tasks not yet acknowledged (approximate) */
    fl_health health; /* does the store take writes (fl_health_init) */
} fl_metrics;

#define FL_M_ADD(field, n) __atomic_add_fetch(&(field), (n), __ATOMIC_RELAXED)
#define FL_M_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* ---- the writer (group commit) */

typedef struct fl_writer fl_writer;

/* One request's reports, waiting for their commit.  The caller owns it
 * and keeps it alive until done() ran. */
typedef struct fl_wreq {
    fl_ingest_item *items;
    size_t n;
    int result;                      /* set before done(): 0 committed, -1 failed; the
                                        loops' refusals: 1 queue full, 2 stopping */
    void (*done)(struct fl_wreq *r); /* called on the writer thread */
    void *arg;
    struct fl_wreq *next;
} fl_wreq;

/* notify(arg) is called after each commit that added tasks.  With a queue
 * outside the store, a report whose task has not reached the queue after
 * republish_after_s seconds is published again (queue.c's sweep). */
fl_writer *fl_writer_start(fl_store *s, fl_queue *q, fl_metrics *m, size_t max_pending,
                           unsigned republish_after_s, void (*notify)(void *), void *notify_arg,
                           char *err, size_t errlen);
/* Queue a linked list of requests (head..tail, n reports in all) for the
 * next batch, all or none.  Returns 0, -1 when saturated (more than
 * max_pending reports waiting) or -2 when stopping: then no done() is
 * called. */
int fl_writer_submit_list(fl_writer *w, fl_wreq *head, fl_wreq *tail, size_t n);
/* With a queue outside the store: true while the queue refused the
 * publisher's last call (a publish or a sweep: a broker away or not
 * answering), with its reason in why (len bytes) and the wall time of
 * the first failure in *since; false otherwise, and for NULL.  The
 * answers do not wait for the queue (the reports are stored), so this is
 * what shows it in /healthz.  Thread-safe. */
bool fl_writer_queue_state(fl_writer *w, char *why, size_t len, int64_t *since);
/* Sets that state before the publisher has tried the queue: a server
 * started while its broker was away (why: its reason). */
void fl_writer_queue_failed(fl_writer *w, const char *why);
/* After a commit elsewhere that marked these crashes for processing (an
 * admin route): with a queue outside the store, hands their tasks to the
 * publisher (copies; borrowed), which counts them in the backlog once
 * the queue has them, and returns at once -- a broker that does not
 * answer never holds the caller.  What it cannot publish (stopping, a
 * broker away) the sweep does.  Nothing for a queue inside the store. */
void fl_writer_publish(fl_writer *w, const char *const *ids, size_t n);
/* Commit what is queued, refuse new work from now on, join the thread.
 * The writer stays valid (submit fails) until fl_writer_free. */
void fl_writer_stop(fl_writer *w);
void fl_writer_free(fl_writer *w); /* NULL is fine */

/* ---- the workers */

typedef struct fl_workers fl_workers;

/* Room for fl_workers_config.symbols_gap's wait: 64 .dwo keys
 * ("dwo-" + 16 hex digits and a space each), a dwz build id, the NUL. */
#define FL_SYMBOLS_WAIT_MAX (64 * 21 + 2 * 64 + 1)

typedef struct fl_workers_config {
    unsigned n;       /* threads */
    unsigned lease_s; /* lease of a claimed task */
    unsigned batch;   /* tasks claimed at once */
    const fl_group_rules *rules;
    fl_symbolize_fn symbolize; /* NULL: frames are named module+offset */
    void *symbolize_ctx;
    /* Frames that tail calls left off (fl_srvsym_tailcalls), called with
     * symbolize_ctx; NULL: none are put back. */
    fl_tailcall_fn tailcalls;
    /* The server-side unwind (fl_srvsym_unwind), called with
     * symbolize_ctx: returns 1 with a better crashing-thread stack in
     * *pcs (malloc'ed), 0 to keep the client's, -1 on OOM.  May be NULL. */
    int (*unwind)(void *ctx, const fl_crashlog *log, uint64_t **pcs, size_t *n);
    /* Every thread of the minidump a crash was made from, when the store
     * kept it (fl_srvsym_unwind_dump), called with symbolize_ctx and the
     * dump: returns 1 with *stacks (fl_minidump_stacks_free), else 0.  A
     * thread takes the dump's stack when it starts at the log's pc and is
     * longer within the objects: the other threads, whose logs have only
     * their pcs (ingest does not unwind), and the crashing one when the
     * dump holds more of its stack than the log.  May be NULL. */
    int (*unwind_dump)(void *ctx, const void *dump, size_t len, fl_minidump_stack **stacks,
                       size_t *n);
    /* Called with symbolize_ctx before each batch is processed, with the
     * store's symbols version (it moves when a debug file was ingested,
     * possibly by another process): drop cached symbols when it moved
     * since the last call of any thread (fl_srvsym_symbols_changed).  May
     * be NULL. */
    void (*symbols_changed)(void *ctx, int64_t version);
    /* Called with symbolize_ctx and a build id right after a module's
     * first lookup found symbols: what would complete them.  0: nothing,
     * they are complete.  1: they came from an ELF symbol table only
     * (names, no files or lines, no inlined frames): the module's DWARF
     * would.  2: its DWARF links to a dwz file that was not found (what
     * dwz moved there, names and inlined functions, is missing): that
     * file would; its build id is put in wait (cap bytes).  3: split
     * units' .dwo files were not found (those units have lines but no
     * functions or inlined frames): wait gets their keys, "dwo-" +
     * DWO id, space-separated (the first FL_SYMBOLS_WAIT_MAX / 21), and
     * the dwz file's build id last when that is missing too; the .dwo
     * files would, and so would whole DWARF (build_id).  4: the names
     * came from a stripped file's exports (.dynsym): its other functions
     * have none, and the debug file would name them.  Either way the
     * crash is recorded as lacking those keys for the backfill, so that
     * the file, uploaded later, re-processes it (fl_srvsym_gap).  May be
     * NULL (every module found counts as complete). */
    int (*symbols_gap)(void *ctx, const char *build_id, char *wait, size_t cap);
    /* Called with symbolize_ctx for a crash's trace events whose formats
     * were kept apart (FAULTLINE_TRACE_APART): the .debug_faultline_trace
     * section of the debug file (or program) with build id build_id, path
     * the log's (may be NULL).  1 with *out (fl_tracesec_free), 0 when no
     * file or none with the section was found, -1 when the only section
     * found is damaged.  The events' modules wait for their debug files
     * like modules without symbols (the backfill).
     * May be NULL: such events then say that their format is missing. */
    int (*trace_formats)(void *ctx, const char *build_id, const char *path,
                         struct fl_tracesec **out);
    /* Called with symbolize_ctx before each crash is processed, on the
     * thread that processes it: starts the crash's budget of debuginfod
     * requests (fl_srvsym_crash_begin).  May be NULL. */
    void (*crash_begin)(void *ctx);
    /* Called with symbolize_ctx between batches, until it returns false:
     * a build id whose debug file the symbolizer got from debuginfod
     * since, into id (fl_srvsym_next_fetched).  The crashes recorded as
     * lacking it are re-queued, as an upload's are (the backfill): those
     * processed while debuginfod did not answer, or before it had the
     * file.  May be NULL. */
    bool (*symbols_fetched)(void *ctx, char *id, size_t cap);
} fl_workers_config;

fl_workers *fl_workers_start(fl_store *s, fl_queue *q, fl_metrics *m, const fl_workers_config *c,
                             char *err, size_t errlen);
/* Wake idle workers (new tasks). */
void fl_workers_notify(void *w);
/* Finish the batch in hand, join, free.  NULL is fine. */
void fl_workers_stop(fl_workers *w);
/* Group the crashes processed from now on by rules r (the caller keeps
 * owning it).  Returns once no batch uses the rules it replaces, which the
 * caller may then free.  NULL w is fine. */
void fl_workers_set_rules(fl_workers *w, const fl_group_rules *r);

/* Process one raw log of project (as load_raw() gave it; NULL or "": the
 * default), and the minidump it was made from (get_minidump(); NULL: none),
 * into a fl_processed (the worker's core, exposed for tests and the
 * fuzzer).  On success returns 0 and fills *out, which borrows
 * crash_id and project; release with fl_processed_release().  Returns -1
 * when the log does not parse. */
typedef struct fl_processed_buf {
    fl_processed p;
    char *signature, *frames_json;
    void *zprocessed;
    char group_id[33], stack_hash[33];
    char *app, *version, *os, *arch, *install_id;
    char **missing; /* build ids without symbols */
    size_t nmissing;
} fl_processed_buf;
int fl_process_log(const char *crash_id, const char *project, const char *raw, size_t len,
                   const void *dump, size_t dump_len, int64_t received, const fl_workers_config *c,
                   fl_processed_buf *out);
void fl_processed_release(fl_processed_buf *b);

/* ---- retention (retention.c) */

typedef struct fl_retention fl_retention;

/* Remove the crashes received more than keep_s seconds ago (the store's
 * expire()), a first pass within 5 s and then every keep_s/24 seconds (1 s
 * to 1 h), logging to log (may be NULL) how many went and when the store
 * fails or works again.  NULL with err when it cannot start. */
fl_retention *fl_retention_start(fl_store *s, fl_metrics *m, int64_t keep_s, FILE *log, char *err,
                                 size_t errlen);
void fl_retention_stop(fl_retention *r); /* NULL is fine */

/* ---- notifications (notify.c) */

typedef struct fl_notifier fl_notifier;

/* POST the store's notices (fl_notice: new groups, regressions) to url
 * as JSON, from a thread of its own, retrying with backoff; logs to log
 * (may be NULL) a refusal, the first failure of a run and the end of it.
 * At most digest_n events every period_s seconds go one by one, the
 * others as one digest at the period's end (digest_n 0: every event
 * alone).  Set s->notify before the workers start for them to be
 * recorded.  NULL with err when it cannot start (url not http:// or
 * https://). */
fl_notifier *fl_notifier_start(fl_store *s, fl_metrics *m, const char *url, unsigned digest_n,
                               unsigned period_s, FILE *log, char *err, size_t errlen);
void fl_notifier_stop(fl_notifier *n); /* NULL is fine */

/* ---- HTTP */

typedef struct fl_http fl_http;

typedef struct fl_http_config {
    char host[64];
    unsigned port; /* 0: any free port */
    unsigned threads;
    bool keyless_ingest;
    /* Keep an uploaded minidump beside the log it became (GET
     * /api/v1/crashes/ID/minidump); false: the log only. */
    bool keep_minidumps;
    const char *admin_token, *ingest_key; /* borrowed; NULL with health_only */
    size_t max_body, max_decoded;
    unsigned max_ratio;
    size_t max_header; /* per-connection memory for headers */
    unsigned timeout_s;
    /* A request (headers, and an ingest request's body) must arrive whole
     * within this many seconds of its first byte, however steadily it
     * trickles in; 0: no limit.  Symbol uploads are not held to it. */
    unsigned request_timeout_s;
    /* Connections one client address may hold open on each HTTP thread;
     * 0: no limit.  One client holding thousands (a slow trickle each)
     * left none for anyone else. */
    unsigned max_client_conns;
    double rate_limit; /* reports per second per key; 0: off */
    double rate_burst;
    size_t max_pending;  /* writer backlog before 503 */
    /* Bytes of ingest request data (bodies, decoded bodies, parts) held at
     * once, all requests together, before 503; 0: no limit. */
    uint64_t max_memory;
    int64_t max_backlog; /* unprocessed tasks before 503 */
    /* Symbols (NULL: the symbol endpoints answer 503). */
    struct fl_symingest *symingest; /* POST/GET /api/v1/symbols, /buildid/ */
    struct fl_srvsym *srvsym;       /* POST /api/v1/symbolicate, /symbolicate */
    struct fl_ctxsrv *ctxsrv;       /* GET /api/v1/crashes/ID/contexts */
    struct fl_srcctx *srcctx;       /* GET /api/v1/crashes/ID/source */
    uint64_t max_symbol_file;       /* largest upload -> 413 */
    const char *data_dir;           /* for /metrics: the room left on its disk */
    /* A worker's listener: /healthz and /metrics only (no writer). */
    bool health_only;
    /* --allowed-host's names, comma-separated (borrowed; NULL: none
     * given): the Host values answered besides the loopback names and
     * the listen address (fl_hostcheck.h); others are answered 421. */
    const char *allowed_hosts;
} fl_http_config;

fl_http *fl_http_start(const fl_http_config *c, fl_store *s, fl_queue *q, fl_writer *w,
                       fl_metrics *m, char *err, size_t errlen);
/* 0 when HOST:PORT (an IPv4 or IPv6 address) is free to listen on, or PORT
 * is 0; -1 with err ("cannot listen on ...: the address is in use") when
 * not.  A check before start-up, which binds again anyway. */
int fl_http_check_listen(const char *host, unsigned port, char *err, size_t errlen);
unsigned fl_http_port(fl_http *h);
/* Stop accepting connections (before the writer is drained). */
void fl_http_quiesce(fl_http *h);
void fl_http_stop(fl_http *h); /* NULL is fine */

/* The `faultline serve` command. */
int fl_cmd_serve(int argc, char **argv);

#endif
