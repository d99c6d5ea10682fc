/*
 * http.c - the HTTP front: libmicrohttpd, routes, limits, the JSON API.
 *
 * Ingest never blocks a thread on the disk: when a report is complete and
 * valid, it is handed to the writer and the handler returns without an
 * answer; the writer's done() callback stores the answer and wakes the
 * request's HTTP loop, whose next pass calls the handler again to send it
 * (see "the HTTP loops" below).  The answer is 200 only after the commit
 * that made the report durable.
 *
 * Limits, each answered before any work is done where possible: the body
 * (Content-Length checked up front, the stream capped), the decompressed
 * size and ratio of gzip bodies, the header block (MHD's per-connection
 * memory), idle connections (MHD's connection timeout), a per-key rate
 * (token bucket, 429 + Retry-After), and the writer's and the task queue's
 * backlog (503 + Retry-After).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <jansson.h>
#include <microhttpd.h>

#include "fl_crashlog.h"
#include "fl_ctxsrv.h"
#include "fl_hostcheck.h"
#include "fl_http_drive.h"
#include "fl_minidump.h"
#include "fl_portal.h"
#include "fl_projects.h"
#include "fl_serve.h"
#include "fl_srcctx.h"
#include "fl_srvsym.h"
#include "fl_srvutil.h"
#include "fl_symingest.h"
#include "fl_xmlsym.h"

#define MAX_PARTS 64          /* crash logs per request */
#define MAX_JSON_BODY 65536   /* PATCH bodies */
#define MAX_SYMBOLICATE_BODY (1u << 20) /* POST /api/v1/symbolicate */
#define MAX_SYMBOLICATE_ADDRS 10000
/* A report whose Content-Length is over --max-body, sent without
 * "Expect: 100-continue", is read and dropped up to this size before it is
 * answered 413 (see first_call); a larger one is answered at once.  More
 * than any Faultline client sends: a crash log is at most 16 MiB. */
#define MAX_DRAINED_BODY (64u << 20)
#define SYM_INLINE 16 /* frames per address in /api/v1/symbolicate */
#define RATE_BUCKETS 1024     /* distinct keys tracked by the rate limiter */

struct fl_http {
    fl_http_config cfg;
    fl_store *store;
    fl_queue *queue;
    fl_writer *writer;
    fl_metrics *m;
    uint64_t held;      /* bytes of ingest data requests hold (atomic) */
    struct loop *loops; /* one MHD daemon and thread each */
    unsigned nloops;
    int stop_fd;        /* eventfd, written when phase changes */
    int phase;          /* PHASE_*, read by the loops */
    unsigned port;

    /* One store connection per HTTP thread, created on first use. */
    pthread_key_t conn_key;
    pthread_mutex_t conns_mu;
    fl_store_conn **conns;
    size_t nconns;

    fl_projects *projects; /* the other projects' ingest keys */
    fl_hostcheck *hosts;   /* the Host values answered (bad_host) */
    /* The store's symbols version, last read (second of the monotonic
     * clock) and value (-1: none yet), for symbols_moved(). */
    int64_t symver_checked, symver_seen;

    /* Group deletes and source fetches running on threads of their own
     * (api_delete_group, api_source): fl_http_stop waits for them. */
    pthread_mutex_t gdel_mu;
    pthread_cond_t gdel_cv;
    unsigned gdel_running;
    unsigned src_running; /* of them, source fetches (under gdel_mu) */

    pthread_mutex_t rate_mu;
    struct bucket {
        char key[65];
        double tokens;
        uint64_t last_ns;
    } *buckets;
    size_t nbuckets;
};

/* An HTTP thread: its own libmicrohttpd daemon on its own listening
 * socket, and the reports its handlers completed in the current pass. */
struct loop {
    fl_http *h;
    struct MHD_Daemon *d;
    pthread_t th;
    bool started;
    unsigned conns;       /* open connections (atomic: /metrics reads it) */
    fl_wreq *head, *tail; /* completed in this pass, not yet handed over */
    size_t nhead;         /* reports in head..tail */
    size_t waiting;       /* requests with the writer (this thread only) */
    int efd;              /* eventfd: the writer answered some */
    int ep;               /* what the loop waits on (loop_epoll) */
    int signalled;        /* efd written since the loop last looked */
    bool at_limit;        /* an accept failed for want of descriptors (mhd_log) */
    /* compress_list(): the run being compressed, and the frame before it
     * is copied out at its size. */
    fl_ingest_item **run;
    size_t run_cap;
    char *zbuf;
    size_t zcap;
    /* Requests this loop freed, kept with their body buffers for the next
     * ones (spare_req, req_free). */
    struct req *spare[32];
    unsigned nspare;
    /* Connections held to --request-timeout (slow_scan), and when to look
     * at them next. */
    struct cctx *conns_head;
    uint64_t next_scan_ns;
    struct pollfd *scan; /* slow_scan's poll of those connections */
    size_t scan_cap;
};
static __thread struct loop *tl_loop;

/* A connection, for the request deadline: libmicrohttpd closes a
 * connection idle for --timeout, but not one that sends a byte now and
 * then, and 8,192 of those would hold every connection slot. */
typedef struct cctx {
    struct cctx *prev, *next;
    struct loop *loop;
    int fd;
    uint64_t since_ns; /* when its current request began (or could have) */
    bool exempt;       /* received whole and with us, or a symbol upload */
} cctx;
enum { PHASE_RUN, PHASE_QUIESCE, PHASE_STOP };

enum {
    K_OTHER,
    K_INGEST,
    K_PATCH,
    K_REPROCESS,
    K_SYMUP,
    K_SYMJSON,
    K_SYMXML,
    K_PROJECT,
    K_DELETE,
    K_MERGE,
    K_UNMERGE,
    K_GDELETE
};
/* An admin route asked without the admin token, its body dropped
 * (refuse_admin): apart, so that a route added to the list above needs no
 * renumbering here. */
enum { K_REFUSED = -1 };
/* ST_WAIT: with the writer, which then owns the request's state; ST_ORPHAN:
 * its connection closed meanwhile, and the writer frees it when done. */
enum { ST_RECV, ST_WAIT, ST_DONE, ST_ORPHAN };

typedef struct part {
    char *data;
    size_t len;
    bool file;
    bool email;   /* the form field "email": not a log */
    char key[64]; /* a form field's name (Breakpad's prod, ver, guid), cut short */
} part;

typedef struct req {
    fl_http *h;
    struct MHD_Connection *conn;
    int kind;
    int state;
    char *body;
    size_t len, cap;
    bool too_big;
    bool busy;      /* over --max-memory: read on, drop, answer 503 */
    int late;       /* refused at its headers, answered after its body (LATE_*) */
    const char *allow; /* K_OTHER: a method the path does not take, answered 405 after the body */
    int refused;       /* K_OTHER: REFUSED_*, answered after the body (refuse_early) */
    bool report;       /* not ingest, yet it looks like a crash report (report_like()) */
    size_t charged; /* bytes counted in h->held for this request */
    /* a symbol upload, streamed to a file */
    int fd;
    uint64_t written;
    bool werr;
    /* multipart */
    size_t nparts;
    bool parts_overflow;
    size_t parts_total;
    /* the writer's view */
    fl_wreq w;
    size_t nlogs;  /* entries of logs[] in use */
    char *decoded; /* a gunzipped body: the items point into it */
    char *rejected; /* JSON array of the parts refused when others were accepted */
    /* the answer, once known */
    bool resumed; /* the writer answered; the handler has to send it */
    struct loop *loop; /* the HTTP thread that waits for the writer */
    unsigned status;
    char *answer;
    const char *retry_after;

    /* Everything from here on is initialised when used, up to nparts and
     * nlogs: a request is allocated per POST, and zeroing these 14 KiB each
     * time showed in the ingest profile. */
    char tmppath[PATH_MAX]; /* [0] is set at allocation */
    char project[FL_PROJECT_MAX]; /* ingest: the key's project, "" for the default */
    part parts[MAX_PARTS];
    fl_ingest_item items[MAX_PARTS];
    fl_crashlog *logs[MAX_PARTS];
    char *converted[MAX_PARTS]; /* the log a minidump became, up to nlogs */
    void *dumpz[MAX_PARTS];     /* and the minidump, compressed, to keep */
    size_t dumpzl[MAX_PARTS], dumpn[MAX_PARTS];
} req;

/* ---- small helpers */

/* Sends text (taken: freed here) with its Content-Type and one more
 * header when hname is not NULL. */
static enum MHD_Result send_text_hdr(struct MHD_Connection *c, unsigned status,
                                     const char *ctype, char *text, const char *hname,
                                     const char *hvalue)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    /* A JSON answer may quote what a client sent (a 400's reason): never
     * to be sniffed into a page. */
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (hname && hvalue)
        MHD_add_response_header(r, hname, hvalue);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *ctype,
                                 char *text, const char *retry_after)
{
    return send_text_hdr(c, status, ctype, text, "Retry-After", retry_after);
}

/* An answer this large (a crash with thousands of modules and threads:
 * a 7.7 MB document, 58 MB of JSON tree) hands its freed tree back to the
 * system, which a thread's heap keeps otherwise (fl_release_heap). */
#define RELEASE_AFTER_ANSWER (1u << 20)

static char *jdump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    if (n > RELEASE_AFTER_ANSWER)
        fl_release_heap();
    char *t = realloc(s, n + 2);
    if (!t)
        return s;
    t[n] = '\n';
    t[n + 1] = '\0';
    return t;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *j,
                                 const char *retry_after)
{
    char *s = jdump(j);
    if (!s)
        return MHD_NO;
    return send_text(c, status, "application/json", s, retry_after);
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg,
                                  const char *retry_after)
{
    return send_json(c, status, json_pack("{s:s}", "error", msg), retry_after);
}

/* The query arguments a read route takes (NULL-ended), and the first it
 * does not, for the 400 of unknown_arg(). */
typedef struct {
    const char *const *known;
    const char *bad;
} arg_check;

static enum MHD_Result first_unknown(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    (void)value;
    arg_check *a = cls;
    for (const char *const *k = a->known; *k; k++)
        if (!strcmp(*k, key))
            return MHD_YES;
    a->bad = key;
    return MHD_NO; /* the first is enough */
}

/* A query argument the route does not take is refused: a misspelt filter
 * (?sortt=count, ?stauts=open) would otherwise be ignored, and an answer
 * that looks right would be the wrong one.  True when the 400 is queued
 * (*ret). */
static bool unknown_arg(struct MHD_Connection *c, const char *const *known, enum MHD_Result *ret)
{
    arg_check a = {known, NULL};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, first_unknown, &a);
    if (!a.bad)
        return false;
    char msg[512], name[64];
    size_t n = 0;
    for (const char *b = a.bad; *b && n < sizeof name - 1; b++) /* the client's bytes: shown safe */
        name[n++] = *b >= 0x20 && *b < 0x7f ? *b : '?';
    name[n] = '\0';
    int at = snprintf(msg, sizeof msg, "unknown query parameter '%s'%s", name,
                      *known ? "; this route takes " : "; this route takes none");
    for (const char *const *k = known; *k && at > 0 && (size_t)at < sizeof msg; k++)
        at += snprintf(msg + at, sizeof msg - (size_t)at, "%s%s", k == known ? "" : ", ", *k);
    *ret = send_error(c, 400, msg, NULL);
    return true;
}

/* What a refusal adds when the request looks like a crash report sent to
 * the wrong route (report_like()): a reporter given a wrong URL says so,
 * rather than asking for the admin token (a 401) or saying only "method
 * not allowed" (a 405).  The 404 of an unknown path under /api/ says the
 * same (NO_ROUTE). */
#define INGEST_HINT "not an ingest route: crash logs go to POST / or POST /api/v1/crashes"

/* Whether a POST looks like a crash report: it carries an ingest key
 * (header or ?key=) or a multipart/form-data body, which is what
 * faultline-report and the MojoCrash client send and no admin route
 * takes.  Headers only: the refusal may come before the body. */
static bool report_like(struct MHD_Connection *c, const char *method)
{
    if (strcmp(method, "POST"))
        return false;
    const char *k = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Faultline-Key");
    if (!k)
        k = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "key");
    if (k && *k)
        return true;
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    return ct && !strncasecmp(ct, "multipart/form-data", 19);
}

/* 405, with the methods the path answers to in Allow (RFC 9110 asks for
 * it) and in the body; report: the request looks like a crash report
 * (report_like()). */
static enum MHD_Result send_405(struct MHD_Connection *c, const char *allow, bool report)
{
    char *s = jdump(json_pack("{s:s,s:s}", "error",
                              report ? "method not allowed: " INGEST_HINT : "method not allowed",
                              "allow", allow));
    return s ? send_text_hdr(c, 405, "application/json", s, "Allow", allow) : MHD_NO;
}

/* One of the portal's files.  Its page runs only its own script and
 * style, talks only to this server, and cannot be framed. */
static enum MHD_Result send_asset(struct MHD_Connection *c, const char *path)
{
    const fl_portal_asset *a = fl_portal_assets;
    while (a->path && strcmp(a->path, path))
        a++;
    if (!a->path)
        return send_error(c, 404, "not found", NULL);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->size, (void *)a->bytes, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    const char *dot = strrchr(path, '.');
    MHD_add_response_header(r, "Content-Type",
                            !strcmp(dot, ".js")    ? "text/javascript; charset=utf-8"
                            : !strcmp(dot, ".css") ? "text/css; charset=utf-8"
                                                   : "text/html; charset=utf-8");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; "
                            "connect-src 'self'; img-src 'self'; base-uri 'none'; "
                            "form-action 'none'; frame-ancestors 'none'");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return rc;
}

/* Compare secrets without leaking where they differ. */

static bool admin_ok(fl_http *h, struct MHD_Connection *c)
{
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!a || strncasecmp(a, "Bearer ", 7))
        return false;
    a += 7;
    while (*a == ' ')
        a++;
    return fl_secret_eq(a, h->cfg.admin_token);
}

/* Why admin_ok() said no, for the 401: a token that is not the admin
 * token reads differently from none, so that a person pasting the ingest
 * key, or a stale token, knows which it is. */
static const char *admin_refusal(struct MHD_Connection *c, bool report)
{
    /* A crash report sent here needs another URL, not the admin token. */
    if (report)
        return INGEST_HINT " (this route takes the admin token)";
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!a || !*a)
        return "admin token required (Authorization: Bearer ...)";
    if (strncasecmp(a, "Bearer ", 7))
        return "admin token required: the Authorization header is not \"Bearer TOKEN\"";
    return "admin token required: the bearer token given is not the admin token";
}

/* A log line a second at most, the rest counted (a line per request
 * would let any client fill the log). */
typedef struct log_gate {
    pthread_mutex_t mu;
    uint64_t last_ns;
    unsigned long dropped;
} log_gate;

/* true: write the line, saying *dropped more came since the last. */
static bool log_gate_pass(log_gate *g, unsigned long *dropped)
{
    uint64_t now = fl_mono_ns();
    pthread_mutex_lock(&g->mu);
    if (g->last_ns && now - g->last_ns < 1000000000ull) {
        g->dropped++;
        pthread_mutex_unlock(&g->mu);
        return false;
    }
    *dropped = g->dropped;
    g->dropped = 0;
    g->last_ns = now;
    pthread_mutex_unlock(&g->mu);
    return true;
}

static log_gate store_err_gate = {PTHREAD_MUTEX_INITIALIZER, 0, 0};

/* A store call on sc that failed: 503 with Retry-After when the store is
 * away for now (PostgreSQL restarting, a busy or full database), as when
 * no connection could be made; else 500 -- and the store's own words go
 * to the log, since the client only gets "store error" (a database's
 * message may name tables and values a client has no business seeing). */
static enum MHD_Result store_failed(fl_http *h, struct MHD_Connection *c, fl_store_conn *sc)
{
    if (!sc || (h->store->unavailable && h->store->unavailable(sc)))
        return send_error(c, 503, "store unavailable", "5");
    unsigned long dropped;
    if (log_gate_pass(&store_err_gate, &dropped)) {
        const char *why = h->store->error ? h->store->error(sc) : NULL;
        char one[512];
        snprintf(one, sizeof one, "%s", why && *why ? why : "no message");
        for (char *p = one; *p; p++)
            if ((unsigned char)*p < 0x20)
                *p = ' ';
        if (dropped)
            fl_log(stderr,
                   "faultline serve: http: a request answered 500, the store's error: %s [%lu "
                   "more since the last line]",
                   one, dropped);
        else
            fl_log(stderr, "faultline serve: http: a request answered 500, the store's error: %s",
                   one);
    }
    return send_error(c, 500, "store error", NULL);
}

static fl_store_conn *thread_conn(fl_http *h)
{
    fl_store_conn *c = pthread_getspecific(h->conn_key);
    if (c)
        return c;
    if (!(c = h->store->connect(h->store)))
        return NULL;
    pthread_mutex_lock(&h->conns_mu);
    fl_store_conn **nv = realloc(h->conns, (h->nconns + 1) * sizeof *nv);
    if (!nv) {
        pthread_mutex_unlock(&h->conns_mu);
        h->store->disconnect(c);
        return NULL;
    }
    h->conns = nv;
    h->conns[h->nconns++] = c;
    pthread_mutex_unlock(&h->conns_mu);
    pthread_setspecific(h->conn_key, c);
    return c;
}

/* Whether the processing backlog is at --max-backlog, so that ingest
 * answers 503; *depth (may be NULL): the crashes waiting.  The counter is
 * approximate (workers in another process do not decrement it): when it
 * says full, the queue itself is asked, and the counter set to its
 * answer, so that the 503s (and /healthz) end once the workers caught up. */
static bool backlog_full(fl_http *h, int64_t *depth)
{
    if (FL_M_GET(h->m->backlog) >= h->cfg.max_backlog) {
        fl_store_conn *sc = thread_conn(h);
        int64_t d = sc ? h->queue->depth(h->queue, sc) : -1;
        if (d >= 0)
            __atomic_store_n(&h->m->backlog, d, __ATOMIC_RELAXED);
    }
    int64_t n = FL_M_GET(h->m->backlog);
    if (depth)
        *depth = n;
    return n >= h->cfg.max_backlog;
}

/* Token bucket per key; true when the request may go on.  owe: take the
 * cost whatever is left (the bucket may go below zero, and the key then
 * waits until it has refilled): the reports of a request after its first,
 * which was let in, so that the limit counts reports, not requests. */
static bool rate_take(fl_http *h, const char *key, double cost, bool owe)
{
    if (h->cfg.rate_limit <= 0)
        return true;
    if (!key)
        key = "";
    uint64_t now = fl_mono_ns();
    pthread_mutex_lock(&h->rate_mu);
    struct bucket *b = NULL;
    for (size_t i = 0; i < h->nbuckets; i++)
        if (!strncmp(h->buckets[i].key, key, sizeof h->buckets[i].key - 1)) {
            b = &h->buckets[i];
            break;
        }
    if (!b) {
        /* Beyond the cap the oldest slot is reused: a flood of random keys
         * fails authentication before it gets here anyway. */
        b = &h->buckets[h->nbuckets < RATE_BUCKETS ? h->nbuckets++ : now % RATE_BUCKETS];
        snprintf(b->key, sizeof b->key, "%s", key);
        b->tokens = h->cfg.rate_burst;
        b->last_ns = now;
    }
    b->tokens += (double)(now - b->last_ns) / 1e9 * h->cfg.rate_limit;
    if (b->tokens > h->cfg.rate_burst)
        b->tokens = h->cfg.rate_burst;
    b->last_ns = now;
    bool ok = b->tokens >= cost;
    if (ok || owe)
        b->tokens -= cost;
    pthread_mutex_unlock(&h->rate_mu);
    return ok;
}

static bool rate_ok(fl_http *h, const char *key)
{
    return rate_take(h, key, 1, false);
}

static const char *ingest_key(struct MHD_Connection *c);

/* ---- multipart, through MHD's post processor */

/* Counts n more bytes of request data against --max-memory, for all
 * requests together: a flood of large reports gets 503s (the clients keep
 * them and retry) instead of the server running out of memory.  False, and
 * nothing counted, when they would pass it. */
static bool charge(req *r, size_t n)
{
    fl_http *h = r->h;
    uint64_t held = __atomic_add_fetch(&h->held, n, __ATOMIC_RELAXED);
    if (h->cfg.max_memory && held > h->cfg.max_memory) {
        __atomic_sub_fetch(&h->held, n, __ATOMIC_RELAXED);
        return false;
    }
    r->charged += n;
    return true;
}

static void uncharge(req *r)
{
    if (r->charged)
        __atomic_sub_fetch(&r->h->held, r->charged, __ATOMIC_RELAXED);
    r->charged = 0;
}

static enum MHD_Result on_part(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *filename, const char *content_type,
                               const char *transfer_encoding, const char *data, uint64_t off,
                               size_t size)
{
    req *r = cls;
    if (off == 0) {
        if (r->nparts == MAX_PARTS) {
            r->parts_overflow = true;
            return MHD_NO;
        }
        r->parts[r->nparts] = (part){.data = NULL,
                                     .len = 0,
                                     .file = filename != NULL,
                                     .email = !filename && key && !strcmp(key, "email")};
        if (!filename && key)
            snprintf(r->parts[r->nparts].key, sizeof r->parts[r->nparts].key, "%s", key);
        r->nparts++;
    }
    if (!r->nparts)
        return MHD_NO;
    part *p = &r->parts[r->nparts - 1];
    if (size == 0)
        return MHD_YES;
    r->parts_total += size;
    if (r->parts_total > r->h->cfg.max_decoded) {
        r->too_big = true;
        return MHD_NO;
    }
    if (!charge(r, size)) {
        r->busy = true;
        return MHD_NO;
    }
    char *nd = realloc(p->data, p->len + size + 1);
    if (!nd)
        return MHD_NO;
    p->data = nd;
    memcpy(p->data + p->len, data, size);
    p->len += size;
    p->data[p->len] = '\0';
    return MHD_YES;
}

/* ---- ingest */

static void req_free(req *r);
static req *spare_req(void);

/* The answer to an ingest request the writer has committed (or refused):
 * built on the request's loop when it is sent, not on the writer thread,
 * whose every microsecond is on the path of the next batch. */
static void ingest_answer(req *r)
{
    fl_wreq *w = &r->w;
    if (w->result == 0) {
        /* Ids are hex digits and '-' (checked at parse or made by fl_hex),
         * so nothing needs escaping: printed directly, not via jansson. */
        size_t rl = r->rejected ? strlen(r->rejected) : 0;
        size_t cap = 64 + rl + w->n * (FL_CRASH_ID_MAX + 40), len = 0;
        char *a = malloc(cap);
        if (a) {
#define PUT(s, n) (memcpy(a + len, (s), (n)), len += (n))
#define PUTS(lit) PUT(lit, sizeof lit - 1)
            PUTS("{\"accepted\":[");
            for (size_t i = 0; i < w->n; i++) {
                if (i)
                    PUTS(",");
                PUTS("{\"id\":\"");
                PUT(r->items[i].crash_id, strlen(r->items[i].crash_id));
                PUTS("\"");
                if (r->items[i].duplicate)
                    PUTS(",\"duplicate\":true");
                PUTS("}");
            }
            PUTS("]");
            if (r->rejected) {
                /* The parts refused at parse time, next to the accepted
                 * ones: a request is not refused whole for one bad log. */
                PUTS(",\"rejected\":");
                PUT(r->rejected, rl);
            }
            PUTS("}\n");
            a[len] = '\0';
#undef PUTS
#undef PUT
        }
        r->status = 200;
        r->answer = a;
    } else {
        /* -1: the commit failed; 1: the writer was full; 2: stopping. */
        r->status = 503;
        r->retry_after = w->result == 1 ? "1" : "5";
        r->answer = jdump(json_pack("{s:s}", "error",
                                    w->result == 1   ? "ingest queue full, try again later"
                                    : w->result == 2 ? "the server is stopping, try again later"
                                                     : "storage unavailable, try again later"));
    }
}

/* Runs on the writer thread after the commit: counts, and hands the request
 * back to its loop, which answers it (ingest_answer). */
static void ingest_done(fl_wreq *w)
{
    req *r = w->arg;
    fl_http *h = r->h;
    if (w->result == 0) {
        size_t dups = 0;
        for (size_t i = 0; i < w->n; i++)
            dups += r->items[i].duplicate;
        FL_M_ADD(h->m->accepted, w->n);
        if (dups)
            FL_M_ADD(h->m->duplicates, dups);
    } else {
        FL_M_ADD(h->m->rejected[FL_REJ_UNAVAILABLE], 1);
    }
    r->resumed = true;
    struct loop *L = r->loop;
    /* Release: the answer is written before the loop can see ST_DONE.  From
     * here on r belongs to its loop again (not touched below), unless the
     * connection went away while we had it: then nobody else will free it. */
    if (__atomic_exchange_n(&r->state, ST_DONE, __ATOMIC_ACQ_REL) == ST_ORPHAN) {
        req_free(r);
        return;
    }
    if (!__atomic_exchange_n(&L->signalled, 1, __ATOMIC_ACQ_REL)) {
        uint64_t one = 1;
        ssize_t wr = write(L->efd, &one, sizeof one);
        (void)wr;
    }
}

static enum MHD_Result reject(req *r, int why, unsigned status, json_t *body,
                              const char *retry_after)
{
    FL_M_ADD(r->h->m->rejected[why], 1);
    r->state = ST_DONE;
    return send_json(r->conn, status, body, retry_after);
}

/* 503 for a request over --max-memory; its data is let go at once, so
 * that the requests still arriving can fit. */
static enum MHD_Result reject_busy(req *r)
{
    uncharge(r);
    r->len = 0;
    return reject(r, FL_REJ_UNAVAILABLE, 503,
                  json_pack("{s:s,s:I}", "error",
                            "too much report data in memory at once, try again later", "max_memory",
                            (json_int_t)r->h->cfg.max_memory),
                  "1");
}

/* An ingest request refused at its headers (no key, over the rate, the
 * store away) is answered after its body, read and dropped, unless the
 * client waits for a go-ahead (Expect: 100-continue) and so sends none:
 * closed under a client still sending -- a reverse proxy always is -- the
 * connection is reset, and the proxy answers its client 502 instead.
 * faultline-report then takes a wrong key for a server away, keeps every
 * log and says nothing of the key.  A body over MAX_DRAINED_BODY is not
 * read. */
enum { LATE_NONE, LATE_UNAUTHORIZED, LATE_RATE_LIMITED, LATE_UNAVAILABLE, LATE_ADMIN_AS_KEY };

/* Whether the request on c has a body to come (a length above 0, or
 * chunked). */
static bool has_body(struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    return (cl && strcmp(cl, "0")) || (te && strcasecmp(te, "identity"));
}

static bool answer_after_body(struct MHD_Connection *c)
{
    const char *ex = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
    if (ex && !strcasecmp(ex, "100-continue"))
        return false;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    uint64_t n = 0;
    if (cl && !fl_parse_u64(cl, &n))
        return n > 0 && n <= MAX_DRAINED_BODY;
    return te && strcasecmp(te, "identity");
}

static enum MHD_Result reject_ingest(req *r, int late)
{
    switch (late) {
    case LATE_UNAVAILABLE:
        return reject(r, FL_REJ_UNAVAILABLE, 503,
                      json_pack("{s:s}", "error",
                                "cannot check the ingest key now: the store is unavailable"),
                      "5");
    case LATE_UNAUTHORIZED:
        return reject(
            r, FL_REJ_UNAUTHORIZED, 401,
            json_pack("{s:s}", "error", "missing or wrong ingest key (X-Faultline-Key or ?key=)"),
            NULL);
    case LATE_ADMIN_AS_KEY:
        /* Both are printed at start-up, side by side: the wrong one is
         * easily copied.  Said as such, as a wrong token is to the admin
         * routes (admin_refusal()). */
        return reject(r, FL_REJ_UNAUTHORIZED, 401,
                      json_pack("{s:s}", "error",
                                "this is the admin token, not an ingest key (X-Faultline-Key or "
                                "?key= takes the ingest key)"),
                      NULL);
    default:
        return reject(r, FL_REJ_RATE_LIMITED, 429,
                      json_pack("{s:s}", "error", "rate limit exceeded"), "1");
    }
}

/* Refuse an ingest request now, or after its body (answer_after_body). */
static enum MHD_Result refuse_ingest(req *r, int late)
{
    if (!answer_after_body(r->conn))
        return reject_ingest(r, late);
    r->late = late;
    r->too_big = true; /* read on and drop */
    return MHD_YES;
}

/* The "email" field the reporter sends (what the user typed, maybe
 * nothing): kept with the crash when it looks like an address -- at most
 * 254 bytes, an '@', valid UTF-8 and no control characters (it reaches
 * JSON and the portal).  Anything else is dropped; never the report. */
static bool email_ok(const char *s, size_t n)
{
    if (!s || n < 3 || n > 254 || strlen(s) != n || !memchr(s, '@', n))
        return false;
    for (size_t i = 0, k; i < n; i += k) {
        unsigned char b = (unsigned char)s[i];
        /* Strict UTF-8 (fl_utf8_seq): PostgreSQL refuses the rest, and
         * with it the whole batch the address came in. */
        if (b < 0x20 || b == 0x7f || !(k = fl_utf8_seq((const unsigned char *)s + i, n - i)))
            return false;
    }
    return true;
}

/* The crash id of content that carries none (a version-1 log, a
 * minidump): the first 128 bits of its SHA-256, in hex -- in another
 * project than the default, of the project's id and that hash, so that
 * one file sent to two projects is a crash in each. */
static void content_id(const req *r, const char *data, size_t len, char hex[33])
{
    uint8_t hsh[32];
    fl_sha256(data, len, hsh);
    if (r->project[0]) {
        char both[FL_PROJECT_MAX + 32];
        size_t pl = strlen(r->project) + 1;
        memcpy(both, r->project, pl);
        memcpy(both + pl, hsh, 32);
        fl_sha256(both, pl + 32, hsh);
    }
    fl_hex(hsh, 16, hex);
}

static bool is_minidump(const char *b, size_t n)
{
    return n >= 4 && !memcmp(b, "MDMP", 4);
}

/* What Breakpad's and Crashpad's uploads say beside the minidump: the
 * product, its version and the client's id, as form fields -- or, for a
 * minidump sent as the body, as query arguments (?prod=...&ver=...). */
typedef struct md_fields {
    const char *prod, *ver, *guid;
    /* The other fields, key and value by turns (borrowed from the parts):
     * Breakpad's ptype, Crashpad's annotations (its uploader sends each
     * as a field), whatever the application added.  The log keeps them as
     * ETC pairs, the context the API and the portal show. */
    const char *etc[2 * MAX_PARTS];
    size_t netc;
} md_fields;

static void md_fields_of(req *r, md_fields *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < r->nparts; i++) {
        const part *p = &r->parts[i];
        if (p->file || !p->data || p->email)
            continue;
        if (!strcmp(p->key, "prod")) {
            f->prod = p->data;
        } else if (!strcmp(p->key, "ver")) {
            f->ver = p->data;
        } else if (!strcmp(p->key, "guid")) {
            f->guid = p->data;
        } else if (f->netc < MAX_PARTS) {
            f->etc[2 * f->netc] = p->key;
            f->etc[2 * f->netc++ + 1] = p->data;
        }
    }
    struct MHD_Connection *c = r->conn;
    if (!f->prod)
        f->prod = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "prod");
    if (!f->ver)
        f->ver = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "ver");
    if (!f->guid)
        f->guid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "guid");
}

/* An id the crash-log reader takes (8-64 hex digits and '-'). */
static bool id_like(const char *s)
{
    size_t n = s ? strlen(s) : 0, hex = 0;
    for (size_t i = 0; i < n; i++) {
        bool x = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
                 (s[i] >= 'A' && s[i] <= 'F');
        if (!x && s[i] != '-')
            return false;
        hex += x;
    }
    return hex >= 8 && n <= 64;
}

/* The crash log a minidump holds (fl_minidump.h), in r->converted[i], or
 * NULL with the reason in why.  Not unwound here, on the HTTP thread: the
 * worker's server-side unwind walks the crashing thread from the log's
 * registers, raw stack and objects with the files the server has.  Its
 * crash id is the hash of the dump (and of the project, as for a
 * version-1 log), so a client that sends it again is counted once. */
static const char *minidump_log(req *r, size_t i, const char *dump, size_t len, const md_fields *f,
                                size_t *tlen, char *why, size_t whycap)
{
    char hex[33], id[40];
    content_id(r, dump, len, hex);
    snprintf(id, sizeof id, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
    fl_minidump_opts o = {.app = f->prod && *f->prod ? f->prod : NULL,
                          .app_version = f->ver && *f->ver ? f->ver : NULL,
                          .install_id = id_like(f->guid) ? f->guid : NULL,
                          .crash_id = id,
                          .crash_time = -1,
                          .name = "the minidump",
                          .unwind = false,
                          .etc = f->etc,
                          .netc = f->netc};
    char *text = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    int rc =
        m ? fl_minidump_buf_to_crashlog(dump, len, &o, m, NULL, why, whycap) : FL_MINIDUMP_EWRITE;
    if (m && fclose(m) != 0 && rc == FL_MINIDUMP_OK)
        rc = FL_MINIDUMP_EWRITE;
    if (rc != FL_MINIDUMP_OK) {
        if (rc == FL_MINIDUMP_EWRITE)
            snprintf(why, whycap, "out of memory");
        free(text);
        return NULL;
    }
    /* The dump itself is kept too (compressed here, off the writer's
     * path): GET /api/v1/crashes/ID/minidump gives it back, for tools that
     * read minidumps and for what this conversion leaves out -- unless
     * the server keeps none (the process memory it holds). */
    if (r->h->cfg.keep_minidumps &&
        fl_zstd(dump, len, FL_RAW_ZSTD_LEVEL, &r->dumpz[i], &r->dumpzl[i])) {
        snprintf(why, whycap, "out of memory");
        free(text);
        return NULL;
    }
    r->dumpn[i] = r->dumpz[i] ? len : 0;
    r->converted[i] = text;
    *tlen = n;
    return text;
}

static bool looks_like_log(const char *b, size_t n)
{
    size_t i = 0;
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n'))
        i++;
    return (n - i >= 9 && (!memcmp(b + i, "MOJOCRASH", 9) || !memcmp(b + i, "FAULTLINE", 9))) ||
           (i < n && b[i] == '#');
}

/* The body is complete: decode, split, validate, hand to the writer. */
static enum MHD_Result ingest_finish(req *r)
{
    fl_http *h = r->h;
    struct MHD_Connection *c = r->conn;
    if (r->late)
        return reject_ingest(r, r->late);
    if (r->too_big)
        return reject(r, FL_REJ_TOO_LARGE, 413,
                      json_pack("{s:s,s:I}", "error", "request body too large", "limit",
                                (json_int_t)h->cfg.max_body),
                      NULL);
    if (r->busy)
        return reject_busy(r);
    char *body = r->body ? r->body : "";
    size_t len = r->len;
    char *decoded = NULL; /* r->decoded once the items point into it */
    const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
    if (ce && (!strcasecmp(ce, "gzip") || !strcasecmp(ce, "x-gzip") || !strcasecmp(ce, "deflate"))) {
        size_t dl;
        int g = fl_gunzip(body, len, h->cfg.max_decoded, h->cfg.max_ratio, &decoded, &dl);
        /* Which limit: a 1.5 MiB log that compresses 150 times is under
         * --max-decoded, and "too large" alone sent its sender looking
         * at the wrong one. */
        if (g == FL_GZ_TOO_BIG || g == FL_GZ_RATIO)
            return reject(r, FL_REJ_TOO_LARGE, 413,
                          json_pack("{s:s,s:I,s:i}", "error",
                                    g == FL_GZ_RATIO
                                        ? "decompressed body too large for its compressed size: "
                                          "it expands more than max_ratio times (--max-ratio)"
                                        : "decompressed body too large (--max-decoded)",
                                    "limit", (json_int_t)h->cfg.max_decoded, "max_ratio",
                                    (int)h->cfg.max_ratio),
                          NULL);
        if (g != FL_GZ_OK)
            return reject(r, FL_REJ_BAD_REQUEST, 400,
                          json_pack("{s:s}", "error", "bad gzip body"), NULL);
        if (!charge(r, dl)) {
            free(decoded);
            return reject_busy(r);
        }
        body = decoded;
        len = dl;
    } else if (ce && strcasecmp(ce, "identity")) {
        return reject(r, FL_REJ_BAD_REQUEST, 415,
                      json_pack("{s:s}", "error", "unsupported Content-Encoding"), NULL);
    }

    /* Which byte ranges are crash logs. */
    const char *logs[MAX_PARTS], *email = NULL;
    size_t lens[MAX_PARTS], nlogs = 0;
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    enum MHD_Result ret;
    /* curl --data-binary sends a raw log as x-www-form-urlencoded: a body
     * that starts like a crash log is one, whatever its type says. */
    bool urlenc = ct && !strncasecmp(ct, "application/x-www-form-urlencoded", 33) &&
                  !looks_like_log(body, len) && !is_minidump(body, len);
    if (ct && (!strncasecmp(ct, "multipart/form-data", 19) || urlenc)) {
        struct MHD_PostProcessor *pp = MHD_create_post_processor(c, 65536, on_part, r);
        if (!pp) {
            ret = reject(r, FL_REJ_BAD_REQUEST, 400,
                         json_pack("{s:s}", "error", "bad multipart/form-data (no boundary?)"),
                         NULL);
            goto out;
        }
        enum MHD_Result pr = MHD_post_process(pp, body, len);
        enum MHD_Result fr = MHD_destroy_post_processor(pp);
        if (r->too_big) {
            ret = reject(r, FL_REJ_TOO_LARGE, 413,
                         json_pack("{s:s}", "error", "decoded parts too large"), NULL);
            goto out;
        }
        if (r->busy) {
            ret = reject_busy(r);
            goto out;
        }
        if (r->parts_overflow) {
            ret = reject(r, FL_REJ_TOO_LARGE, 413,
                         json_pack("{s:s,s:i}", "error", "too many parts", "limit", MAX_PARTS),
                         NULL);
            goto out;
        }
        if ((pr != MHD_YES || fr != MHD_YES) && !urlenc) {
            ret = reject(r, FL_REJ_BAD_REQUEST, 400,
                         json_pack("{s:s}", "error", "malformed multipart/form-data body"), NULL);
            goto out;
        }
        /* File parts are crash logs; form fields (an e-mail address, ...)
         * are not -- unless there is no file part at all.  In a urlencoded
         * form (what the MojoCrash notes first described) the fields that
         * hold a crash log are the logs. */
        bool anyfile = false;
        for (size_t i = 0; i < r->nparts; i++) {
            anyfile |= r->parts[i].file;
            if (r->parts[i].email && email_ok(r->parts[i].data, r->parts[i].len))
                email = r->parts[i].data;
        }
        for (size_t i = 0; i < r->nparts; i++)
            if (r->parts[i].email)
                continue;
            else if (urlenc ? (r->parts[i].data && strstr(r->parts[i].data, "CRASHLOG_VERSION"))
                            : (r->parts[i].file || !anyfile)) {
                logs[nlogs] = r->parts[i].data ? r->parts[i].data : "";
                lens[nlogs++] = r->parts[i].len;
            }
        if (urlenc && nlogs == 0) {
            /* Not a form holding a log: let the reader say what is wrong
             * with the body as a log. */
            logs[0] = body;
            lens[0] = len;
            nlogs = 1;
        }
    } else {
        logs[0] = body;
        lens[0] = len;
        nlogs = 1;
    }
    if (nlogs == 0) {
        ret = reject(r, FL_REJ_MALFORMED, 400,
                     json_pack("{s:s}", "error", "no crash log in the request"), NULL);
        goto out;
    }

    /* Each log on its own: a bad one is refused (and named in the answer)
     * without taking the good ones of the same request with it -- a client
     * deletes what a 200 answered, so refusing the request whole would lose
     * them.  Only when every log is bad is the answer 400. */
    int64_t now = fl_now();
    size_t ngood = 0;
    json_t *bad = NULL;
    md_fields mdf;
    bool mdf_read = false;
    for (size_t i = 0; i < nlogs; i++) {
        r->logs[i] = NULL;
        r->converted[i] = NULL;
        r->dumpz[i] = NULL;
        r->dumpzl[i] = r->dumpn[i] = 0;
        r->nlogs = i + 1;
        fl_crashlog_error err;
        memset(&err, 0, sizeof err);
        if (is_minidump(logs[i], lens[i])) {
            char why[512] = "";
            size_t tl = 0;
            if (!mdf_read) {
                md_fields_of(r, &mdf);
                mdf_read = true;
            }
            const char *text = minidump_log(r, i, logs[i], lens[i], &mdf, &tl, why, sizeof why);
            if (text && !charge(r, tl + r->dumpzl[i])) {
                ret = reject_busy(r);
                goto out;
            }
            if (!text) {
                if (!bad && !(bad = json_array())) {
                    ret = reject(r, FL_REJ_UNAVAILABLE, 503,
                                 json_pack("{s:s}", "error", "out of memory"), "5");
                    goto out;
                }
                json_array_append_new(bad, json_pack("{s:s,s:i,s:s}", "error", "malformed minidump",
                                                     "part", (int)i, "reason", why));
                continue;
            }
            /* From here on, the log it became is what the request holds
             * and stores. */
            logs[i] = text;
            lens[i] = tl;
        }
        /* Checked, not parsed: only the verdict and the header are needed
         * here (the workers parse the stored text). */
        if (fl_crashlog_check(logs[i], lens[i], &r->logs[i], &err)) {
            if (!bad && !(bad = json_array())) {
                ret = reject(r, FL_REJ_UNAVAILABLE, 503,
                             json_pack("{s:s}", "error", "out of memory"), "5");
                goto out;
            }
            json_array_append_new(bad, json_pack("{s:s,s:i,s:i,s:s}", "error",
                                                 "malformed crash log", "part", (int)i, "line",
                                                 (int)err.line, "reason", err.message));
            continue;
        }
        fl_crashlog *L = r->logs[i];
        fl_ingest_item *it = &r->items[ngood++];
        if (L->crash_id) {
            snprintf(it->crash_id, sizeof it->crash_id, "%s", L->crash_id);
        } else {
            /* A version-1 log has no id: the hash of its bytes is one, so
             * that a resend of the same file is recognised. */
            content_id(r, logs[i], lens[i], it->crash_id);
        }
        it->project = r->project[0] ? r->project : NULL;
        it->app = L->app_name;
        it->version = L->app_version;
        it->email = email;
        it->received = now;
        it->raw_len = lens[i];
        /* Stays valid until the request completes: body, parts or decoded
         * belong to r.  The pass's logs are compressed together, by the
         * loop or by the writer (compress_list). */
        it->raw = logs[i];
        it->duplicate = false;
        it->z = NULL; /* compress_list() may set it, and req_free() frees it */
        it->dump = r->dumpz[i];
        it->dump_len = r->dumpzl[i];
        it->dump_size = r->dumpn[i];
    }
    if (bad && ngood == 0) {
        /* Nothing to store: the first refusal is the answer (one log: as
         * before, its part, line and reason at the top level). */
        json_t *first = json_deep_copy(json_array_get(bad, 0));
        if (json_array_size(bad) > 1)
            json_object_set(first, "rejected", bad);
        FL_M_ADD(h->m->rejected[FL_REJ_MALFORMED], json_array_size(bad) - 1);
        json_decref(bad);
        ret = reject(r, FL_REJ_MALFORMED, 400, first, NULL);
        goto out;
    }
    if (bad) {
        FL_M_ADD(h->m->rejected[FL_REJ_MALFORMED], json_array_size(bad));
        r->rejected = json_dumps(bad, JSON_COMPACT);
        json_decref(bad);
        if (!r->rejected) {
            ret = reject(r, FL_REJ_UNAVAILABLE, 503, json_pack("{s:s}", "error", "out of memory"),
                         "5");
            goto out;
        }
    }
    if (backlog_full(h, NULL)) { /* at most max_backlog wait */
        ret = reject(r, FL_REJ_UNAVAILABLE, 503,
                     json_pack("{s:s}", "error", "processing backlog full, try again later"),
                     "30");
        goto out;
    }
    /* The rate limit counts reports: the request's first was taken when it
     * began, the others are owed. */
    if (ngood > 1)
        rate_take(h, ingest_key(r->conn), (double)(ngood - 1), true);

    r->w.items = r->items;
    r->w.n = ngood;
    r->w.done = ingest_done;
    r->w.arg = r;
    r->state = ST_WAIT;
    r->decoded = decoded;
    decoded = NULL;
    /* No response yet: the loop hands this to the writer after the pass,
     * and libmicrohttpd calls the handler again until the writer answered
     * (see "the HTTP loops").  No idle timeout while it waits. */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)0);
    struct loop *L = tl_loop;
    r->loop = L;
    r->w.next = NULL;
    if (L->tail)
        L->tail->next = &r->w;
    else
        L->head = &r->w;
    L->tail = &r->w;
    L->nhead += ngood;
    ret = MHD_YES;
out:
    free(decoded);
    return ret;
}

static const char *ingest_key(struct MHD_Connection *c)
{
    const char *k = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Faultline-Key");
    if (!k)
        k = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "key");
    return k;
}

/* ---- read/admin API */

/* Whether id names a project: 1 yes, 0 no, -1 the store failed.  The
 * default project is the server's own; the others are read with
 * list_projects, which every store engine has: a project is never
 * deleted, and there are few. */
static int project_known(fl_http *h, fl_store_conn *sc, const char *id)
{
    if (!strcmp(id, FL_PROJECT_DEFAULT))
        return 1;
    if (!fl_project_id_ok(id))
        return 0;
    json_t *all = h->store->list_projects(sc);
    if (!all)
        return -1;
    int known = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(all, "projects"), i, p)
    {
        const char *pid = json_string_value(json_object_get(p, "id"));
        if (pid && !strcmp(pid, id)) {
            known = 1;
            break;
        }
    }
    json_decref(all);
    return known;
}

static enum MHD_Result api_groups(fl_http *h, struct MHD_Connection *c)
{
    fl_store_conn *sc = thread_conn(h);
    if (!sc)
        return send_error(c, 503, "store unavailable", "5");
    fl_group_filter f = {0};
    f.project = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "project");
    f.app = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "app");
    f.version = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "version");
    f.status = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "status");
    f.q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "q");
    if (f.q && !*f.q)
        f.q = NULL; /* the portal's empty search box */
    if (f.q && strlen(f.q) > 200)
        return send_error(c, 400, "q is longer than 200 bytes", NULL);
    f.install = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "install");
    if (f.install && !*f.install)
        f.install = NULL;
    const char *sort = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sort");
    if (sort && !strcmp(sort, "last_seen"))
        f.sort = FL_SORT_LAST_SEEN;
    else if (sort && !strcmp(sort, "first_seen"))
        f.sort = FL_SORT_FIRST_SEEN;
    else if (sort && strcmp(sort, "count"))
        return send_error(c, 400, "sort must be count, last_seen or first_seen", NULL);
    const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *off = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "offset");
    uint64_t v;
    /* A misspelt status would otherwise match nothing and look like "no
     * groups". */
    if (f.status && strcmp(f.status, "open") && strcmp(f.status, "resolved") &&
        strcmp(f.status, "regressed") && strcmp(f.status, "ignored"))
        return send_error(c, 400, "status must be open, resolved, regressed or ignored", NULL);
    f.limit = 100;
    if (lim) {
        if (fl_parse_u64(lim, &v) || v == 0 || v > 10000)
            return send_error(c, 400, "limit must be 1..10000", NULL);
        f.limit = (unsigned)v;
    }
    if (off) {
        if (fl_parse_u64(off, &v) || v > 100000000)
            return send_error(c, 400, "bad offset", NULL);
        f.offset = (unsigned)v;
    }
    /* As a misspelt status: an unknown project would match no group and
     * look like a project without crashes.  Checked last, as it reads
     * the store. */
    if (f.project) {
        int known = project_known(h, sc, f.project);
        if (known < 0)
            return store_failed(h, c, sc);
        if (!known) {
            /* The name is shown only when it is a project id: the
             * client's bytes otherwise. */
            char msg[200];
            snprintf(msg, sizeof msg,
                     "no such project%s%s%s (GET /api/v1/projects lists them; the default "
                     "project is 'default')",
                     fl_project_id_ok(f.project) ? " '" : "",
                     fl_project_id_ok(f.project) ? f.project : "",
                     fl_project_id_ok(f.project) ? "'" : "");
            return send_error(c, 400, msg, NULL);
        }
    }
    json_t *j = h->store->list_groups(sc, &f);
    if (!j)
        return store_failed(h, c, sc);
    return send_json(c, 200, j, NULL);
}

/* ---- trends: GET /api/v1/trends?app=APP&days=N */

#define TREND_SERIES 8 /* versions, OSes or architectures shown; the rest are "other" */

static int day_index(json_t *days, const char *day)
{
    /* Days are few (<= 366) and sorted: a binary search. */
    size_t lo = 0, hi = json_array_size(days);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp(json_string_value(json_array_get(days, mid)), day);
        if (r == 0)
            return (int)mid;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static json_t *zeros(size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(0));
    return a;
}

static void add_at(json_t *arr, int i, json_int_t n)
{
    json_t *v = json_array_get(arr, (size_t)i);
    json_integer_set(v, json_integer_value(v) + n);
}

static int by_total(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "total"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "total"));
    return x < y ? 1 : x > y ? -1 : 0;
}

/* {value: counts[]} -> [{name: value|null, total, counts}] largest first,
 * the ones after TREND_SERIES merged into one {name: "other", other: true}. */
static json_t *series(json_t *byval, const char *name, size_t ndays)
{
    size_t n = json_object_size(byval), k = 0;
    json_t **v = calloc(n ? n : 1, sizeof *v);
    const char *key;
    json_t *counts;
    json_object_foreach(byval, key, counts)
    {
        json_int_t total = 0;
        for (size_t i = 0; i < ndays; i++)
            total += json_integer_value(json_array_get(counts, i));
        v[k++] = json_pack("{s:o,s:I,s:O}", name, *key ? json_string(key) : json_null(), "total",
                           total, "counts", counts);
    }
    qsort(v, k, sizeof *v, by_total);
    json_t *out = json_array(), *other = NULL;
    for (size_t i = 0; i < k; i++) {
        if (i < TREND_SERIES) {
            json_array_append_new(out, v[i]);
            continue;
        }
        if (!other)
            other = json_pack("{s:s,s:b,s:I,s:o}", name, "other", "other", 1, "total",
                              (json_int_t)0, "counts", zeros(ndays));
        json_t *oc = json_object_get(other, "counts");
        for (size_t d = 0; d < ndays; d++)
            add_at(oc, (int)d,
                   json_integer_value(json_array_get(json_object_get(v[i], "counts"), d)));
        json_integer_set(json_object_get(other, "total"),
                         json_integer_value(json_object_get(other, "total")) +
                             json_integer_value(json_object_get(v[i], "total")));
        json_decref(v[i]);
    }
    if (other)
        json_array_append_new(out, other);
    free(v);
    return out;
}

static enum MHD_Result api_trends(fl_http *h, struct MHD_Connection *c)
{
    fl_store_conn *sc = thread_conn(h);
    if (!sc)
        return send_error(c, 503, "store unavailable", "5");
    const char *app = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "app");
    const char *nd = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "days");
    uint64_t ndays = 30;
    if (nd && (fl_parse_u64(nd, &ndays) || ndays == 0 || ndays > 366))
        return send_error(c, 400, "days must be 1..366", NULL);
    json_t *app_j = app ? json_string(app) : json_null();
    if (!app_j)
        return send_error(c, 400, "app must be UTF-8 text", NULL);
    /* The last ndays days, today (UTC) included, every one of them. */
    json_t *days = json_array();
    int64_t now = fl_now();
    char day[16];
    for (uint64_t i = ndays; i-- > 0;) {
        fl_iso_day(now - (int64_t)i * 86400, day);
        json_array_append_new(days, json_string(day));
    }
    json_t *raw = h->store->trends(sc, app, json_string_value(json_array_get(days, 0)));
    if (!raw) {
        json_decref(days);
        json_decref(app_j);
        return store_failed(h, c, sc);
    }
    json_t *crashes = zeros(ndays), *installs = zeros(ndays);
    json_t *byver = json_object(), *byos = json_object(), *byarch = json_object();
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(raw, "rows"), i, row)
    {
        int d = day_index(days, json_string_value(json_array_get(row, 0)));
        const char *kind = json_string_value(json_array_get(row, 1));
        const char *val = json_string_value(json_array_get(row, 2));
        json_int_t n = json_integer_value(json_array_get(row, 3));
        if (d < 0 || !kind || !val)
            continue; /* a day in the future (a server's clock moved back) */
        if (!strcmp(kind, "c")) {
            add_at(crashes, d, n);
            continue;
        }
        json_t *m = !strcmp(kind, "v")   ? byver
                    : !strcmp(kind, "o") ? byos
                    : !strcmp(kind, "a") ? byarch
                                         : NULL;
        if (!m)
            continue;
        json_t *counts = json_object_get(m, val);
        if (!counts)
            json_object_set_new(m, val, counts = zeros(ndays));
        add_at(counts, d, n);
    }
    json_array_foreach(json_object_get(raw, "installs"), i, row)
    {
        int d = day_index(days, json_string_value(json_array_get(row, 0)));
        if (d >= 0)
            add_at(installs, d, json_integer_value(json_array_get(row, 1)));
    }
    json_t *out =
        json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:O}", "app", app_j, "days", days, "crashes",
                  crashes, "installations", installs, "versions", series(byver, "version", ndays),
                  "os", series(byos, "os", ndays), "arch", series(byarch, "arch", ndays), "apps",
                  json_object_get(raw, "apps"));
    json_decref(byver);
    json_decref(byos);
    json_decref(byarch);
    json_decref(raw);
    if (!out)
        return send_error(c, 500, "out of memory", NULL);
    return send_json(c, 200, out, NULL);
}

static bool id_ok(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n >= FL_CRASH_ID_MAX)
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

/* A debug file stored by another process (another API server, or the
 * watched directory of a server sharing this store) moves the store's
 * symbols version: forget what the symbolizer did not find, so that the
 * next look finds it.  Workers do this before each batch; a server
 * without workers does it here, at most once a second. */
static void symbols_moved(fl_http *h, fl_store_conn *sc)
{
    int64_t now = (int64_t)(fl_mono_ns() / 1000000000ull), v = -1;
    int64_t last = __atomic_load_n(&h->symver_checked, __ATOMIC_RELAXED);
    if (!sc || !h->cfg.srvsym || now == last ||
        !__atomic_compare_exchange_n(&h->symver_checked, &last, now, false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED) ||
        h->store->symbols_version(sc, &v) || v < 0)
        return;
    int64_t seen = __atomic_exchange_n(&h->symver_seen, v, __ATOMIC_RELAXED);
    if (seen >= 0 && seen != v)
        fl_srvsym_symbols_changed(h->cfg.srvsym, v);
}

/* A crash get_crash() found deleted (fl_store.h's delete_crash): 410. */
static bool deleted(const json_t *crash)
{
    const char *st = json_string_value(json_object_get(crash, "state"));
    return st && !strcmp(st, "deleted");
}

/* The body of that 410 (takes crash). */
static json_t *deleted_error(json_t *crash, const char *id)
{
    json_t *j = json_pack("{s:s,s:s,s:O?}", "error", "the crash was deleted", "id", id, "received",
                          json_object_get(crash, "received"));
    json_decref(crash);
    return j;
}

/* The stored crash id, for a route about it (its minidump, contexts,
 * source lines); NULL when there is none to work on, with the answer --
 * 404, 410 for a deleted crash, 500 -- queued in *ret. */
static json_t *crash_for(fl_http *h, fl_store_conn *sc, struct MHD_Connection *c, const char *id,
                         enum MHD_Result *ret)
{
    bool nf = false;
    json_t *j = h->store->get_crash(sc, id, &nf);
    if (!j)
        *ret = nf ? send_error(c, 404, "no such crash", NULL) : store_failed(h, c, sc);
    else if (deleted(j))
        *ret = send_json(c, 410, deleted_error(j, id), NULL);
    else
        return j;
    return NULL;
}

/* GET /api/v1/crashes/ID/minidump: the minidump the crash was made from,
 * as its client sent it (decompressed), for tools that read minidumps
 * and for what the conversion into a log leaves out (other threads'
 * stacks, memory).  404 when none is kept: the crash came as a log, or
 * the server that took it kept none (--no-keep-minidumps). */
static enum MHD_Result api_minidump(fl_http *h, struct MHD_Connection *c, const char *id)
{
    if (!id_ok(id))
        return send_error(c, 404, "no such crash", NULL);
    fl_store_conn *sc = thread_conn(h);
    if (!sc)
        return send_error(c, 503, "store unavailable", "5");
    char *data = NULL;
    size_t len = 0;
    int rc = h->store->get_minidump(sc, id, &data, &len);
    if (rc < 0)
        return store_failed(h, c, sc);
    if (rc > 0) {
        enum MHD_Result ret;
        json_t *j = crash_for(h, sc, c, id, &ret);
        if (!j)
            return ret;
        json_decref(j);
        return send_error(c, 404,
                          h->cfg.keep_minidumps
                              ? "no minidump is kept for this crash (it came as a crash log)"
                              : "no minidump is kept for this crash (it came as a crash log, "
                                "or as a minidump while this server was started with "
                                "--no-keep-minidumps)",
                          NULL);
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return MHD_NO;
    }
    char disp[FL_CRASH_ID_MAX + 48];
    snprintf(disp, sizeof disp, "attachment; filename=\"%s.dmp\"", id); /* id_ok: no quotes */
    MHD_add_response_header(r, "Content-Type", "application/octet-stream");
    MHD_add_response_header(r, "Content-Disposition", disp);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* GET /api/v1/crashes/ID/contexts: the crash's calling contexts as
 * stacks (fl_ctxsrv.h).  202 while the decoder works on them: ask again
 * after Retry-After. */
static enum MHD_Result api_contexts(fl_http *h, struct MHD_Connection *c, const char *id)
{
    if (!id_ok(id))
        return send_error(c, 404, "no such crash", NULL);
    if (!h->cfg.ctxsrv)
        return send_error(c, 503, "no context decoder on this server", "5");
    char *json = NULL;
    fl_store_conn *sc = thread_conn(h);
    symbols_moved(h, sc);
    int rc = fl_ctxsrv_cached(h->cfg.ctxsrv, id, &json);
    if (rc == FL_CTXSRV_UNKNOWN) {
        if (!sc)
            return send_error(c, 503, "store unavailable", "5");
        enum MHD_Result ret;
        json_t *j = crash_for(h, sc, c, id, &ret);
        if (!j)
            return ret;
        json_t *raw = json_object_get(j, "raw");
        rc = fl_ctxsrv_get(h->cfg.ctxsrv, id, json_string_value(raw) ? json_string_value(raw) : "",
                           json_string_length(raw), &json);
        json_decref(j);
    }
    switch (rc) {
    case FL_CTXSRV_DONE:
        return send_text(c, 200, "application/json", json, NULL);
    case FL_CTXSRV_PENDING: {
        json_t *j = json_pack("{s:s,s:s}", "crash_id", id, "status", "pending");
        return j ? send_json(c, 202, j, "1") : MHD_NO;
    }
    case FL_CTXSRV_BUSY:
        return send_error(c, 503, "the context decoder is busy", "5");
    case FL_CTXSRV_BADLOG:
        return send_error(c, 500, "the stored log does not parse", NULL);
    default:
        return send_error(c, 500, "out of memory", NULL);
    }
}

/* A request answered on a thread of its own (a group delete, a source
 * fetch) goes back to its loop, as ingest_done() hands an ingest back: the
 * loop's next pass sends the answer, or the request is freed when its
 * client left meanwhile.  Then the thread counts itself out. */
static void hand_back(fl_http *h, req *r, bool source)
{
    r->resumed = true;
    struct loop *L = r->loop;
    if (__atomic_exchange_n(&r->state, ST_DONE, __ATOMIC_ACQ_REL) == ST_ORPHAN) {
        req_free(r); /* the client left */
    } else if (!__atomic_exchange_n(&L->signalled, 1, __ATOMIC_ACQ_REL)) {
        uint64_t one = 1;
        ssize_t wr = write(L->efd, &one, sizeof one);
        (void)wr;
    }
    pthread_mutex_lock(&h->gdel_mu);
    if (source)
        h->src_running--;
    if (--h->gdel_running == 0)
        pthread_cond_broadcast(&h->gdel_cv);
    pthread_mutex_unlock(&h->gdel_mu);
}

/* GET /api/v1/crashes/ID/source?thread=T&frame=F[&context=N]: the lines
 * around a frame's line, from debuginfod by the module's build id and the
 * frame's file (fl_srcctx.h).  A file not cached yet is fetched on a
 * thread of its own, at most SOURCE_FETCHES at once, which hands the
 * answer back to the loop as a group delete's thread does: a debuginfod
 * request may take seconds, and the loop serves other connections
 * meanwhile. */
#define SOURCE_FETCHES 4

typedef struct srcjob {
    fl_http *h;
    req *r;
    json_t *head; /* crash_id, thread, frame, function, module, build_id */
    char build_id[2 * FL_SYM_BUILD_ID_MAX + 1];
    char *path;
    unsigned line, context;
} srcjob;

/* The answer of fl_srcctx_get (takes head). */
static void source_answer(json_t *head, int rc, json_t *lines, const char *why, unsigned *status,
                          char **answer)
{
    if (rc == FL_SRCCTX_OK) {
        json_object_update(lines, head);
        json_decref(head);
        *status = 200;
        *answer = jdump(lines);
        return;
    }
    json_object_set_new(head, "error", json_string(why));
    *status = rc == FL_SRCCTX_NONE ? 404 : 500;
    *answer = jdump(head);
}

static void *source_main(void *arg)
{
    srcjob *j = arg;
    fl_http *h = j->h;
    req *r = j->r;
    pthread_setname_np(pthread_self(), "fl-source");
    json_t *lines = NULL;
    char why[512] = "";
    int rc = fl_srcctx_get(h->cfg.srcctx, j->build_id, j->path, j->line, j->context, true, &lines,
                           why, sizeof why);
    r->retry_after = NULL;
    source_answer(j->head, rc, lines, why, &r->status, &r->answer);
    free(j->path);
    free(j);
    hand_back(h, r, true);
    return NULL;
}

/* The query argument name as a number in 0..max: 0, or -1 (missing, not a
 * number, out of range). */
static int arg_uint(struct MHD_Connection *c, const char *name, uint64_t max, uint64_t *out)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
    return v && !fl_parse_u64(v, out) && *out <= max ? 0 : -1;
}

/* The build id of the object of the log that holds address addr, or of
 * the object named module when none does (a log without sizes). */
static const char *frame_build_id(json_t *crash, const char *addr, const char *module)
{
    json_t *objs = json_object_get(json_object_get(crash, "metadata"), "objects"), *o;
    uint64_t a = addr ? strtoull(addr, NULL, 16) : 0;
    const char *by_name = NULL;
    size_t i;
    json_array_foreach(objs, i, o)
    {
        const char *b = json_string_value(json_object_get(o, "base"));
        const char *id = json_string_value(json_object_get(o, "build_id"));
        const char *name = json_string_value(json_object_get(o, "name"));
        uint64_t base = b ? strtoull(b, NULL, 16) : 0;
        uint64_t size = (uint64_t)json_integer_value(json_object_get(o, "size"));
        if (!id)
            continue;
        if (addr && size && a >= base && a - base < size)
            return id;
        if (!by_name && module && name) {
            const char *slash = strrchr(name, '/');
            if (!strcmp(slash ? slash + 1 : name, module))
                by_name = id;
        }
    }
    return by_name;
}

static bool hex_id_ok(const char *s, size_t n); /* with the symbols' routes */
static void lower(char *s);

static enum MHD_Result api_source(fl_http *h, req *rq, const char *id)
{
    struct MHD_Connection *c = rq->conn;
    if (!id_ok(id))
        return send_error(c, 404, "no such crash", NULL);
    uint64_t ti = 0, fi = 0, ctx = 5;
    if (arg_uint(c, "thread", 1u << 20, &ti) || arg_uint(c, "frame", 1u << 20, &fi))
        return send_error(c, 400,
                          "thread and frame must be numbers: the thread's index in the crash's "
                          "threads (0: the crashing thread) and the frame's in its frames",
                          NULL);
    if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "context") &&
        arg_uint(c, "context", FL_SRCCTX_MAX_CONTEXT, &ctx))
        return send_error(c, 400, "context must be a number of lines, 0..50", NULL);
    if (!h->cfg.srcctx)
        return send_error(c, 503, "no source files on this server", NULL);
    fl_store_conn *sc = thread_conn(h);
    if (!sc)
        return send_error(c, 503, "store unavailable", "5");
    enum MHD_Result ret;
    json_t *crash = crash_for(h, sc, c, id, &ret);
    if (!crash)
        return ret;
    char msg[512];
    json_t *threads = json_object_get(crash, "threads");
    json_t *frames = json_object_get(json_array_get(threads, (size_t)ti), "frames");
    json_t *fr = json_array_get(frames, (size_t)fi);
    if (!fr) {
        if (!json_array_size(threads))
            snprintf(msg, sizeof msg, "the crash has no frames (%s)",
                     json_string_value(json_object_get(crash, "state")) ?: "not processed");
        else if (!frames)
            snprintf(msg, sizeof msg, "no thread %" PRIu64 ": the crash has %zu", ti,
                     json_array_size(threads));
        else
            snprintf(msg, sizeof msg, "no frame %" PRIu64 " in thread %" PRIu64 ": it has %zu", fi,
                     ti, json_array_size(frames));
        json_decref(crash);
        return send_error(c, 400, msg, NULL);
    }
    const char *file = json_string_value(json_object_get(fr, "file"));
    json_int_t line = json_integer_value(json_object_get(fr, "line"));
    const char *module = json_string_value(json_object_get(fr, "module"));
    const char *bid =
        frame_build_id(crash, json_string_value(json_object_get(fr, "address")), module);
    const char *why = NULL;
    if (!file || line <= 0)
        why = "the frame has no file and line (no debug information for its module)";
    else if (file[0] != '/')
        why = "the frame's file is not an absolute path (its DWARF has no compilation directory): "
              "debuginfod serves sources by absolute path";
    else if (strpbrk(file, "\n\r"))
        why = "the frame's file has a line break in its name";
    else if (!bid || !hex_id_ok(bid, strlen(bid)))
        why = "the frame's module has no build id in the log";
    if (why) {
        json_decref(crash);
        return send_error(c, 404, why, NULL);
    }
    json_t *head = json_pack("{s:s,s:I,s:I,s:O?,s:s?,s:s}", "crash_id", id, "thread",
                             (json_int_t)ti, "frame", (json_int_t)fi, "function",
                             json_object_get(fr, "function"), "module", module, "build_id", bid);
    srcjob *j = calloc(1, sizeof *j);
    if (!head || !j || !(j->path = strdup(file))) {
        json_decref(head);
        json_decref(crash);
        if (j)
            free(j->path);
        free(j);
        return send_error(c, 500, "out of memory", NULL);
    }
    snprintf(j->build_id, sizeof j->build_id, "%s", bid);
    lower(j->build_id);
    json_decref(crash);
    j->h = h;
    j->r = rq;
    j->head = head;
    j->line = (unsigned)(line > UINT32_MAX ? UINT32_MAX : line);
    j->context = (unsigned)ctx;
    json_t *lines = NULL;
    char whybuf[512] = "";
    int rc = fl_srcctx_get(h->cfg.srcctx, j->build_id, j->path, j->line, j->context, false, &lines,
                           whybuf, sizeof whybuf);
    if (rc != FL_SRCCTX_FETCH) {
        unsigned status = 500;
        char *a = NULL;
        source_answer(head, rc, lines, whybuf, &status, &a);
        free(j->path);
        free(j);
        return a ? send_text(c, status, "application/json", a, NULL) : MHD_NO;
    }
    pthread_mutex_lock(&h->gdel_mu);
    bool busy = h->src_running >= SOURCE_FETCHES;
    if (!busy) {
        h->src_running++;
        h->gdel_running++;
    }
    pthread_mutex_unlock(&h->gdel_mu);
    if (busy) {
        json_decref(head);
        free(j->path);
        free(j);
        return send_error(c, 503, "busy fetching other source files", "1");
    }
    /* No response yet: the thread answers (ST_WAIT), as a group delete's. */
    rq->state = ST_WAIT;
    rq->loop = tl_loop;
    tl_loop->waiting++;
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)0);
    pthread_attr_t at;
    pthread_t th;
    int e = pthread_attr_init(&at);
    if (!e) {
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        e = pthread_create(&th, &at, source_main, j);
        pthread_attr_destroy(&at);
    }
    if (e)
        source_main(j); /* no thread: fetch here, as the thread would */
    return MHD_YES;
}

/* The answer for group id, which the store does not have: 410 when it
 * was deleted (DELETE /api/v1/groups/ID), as a deleted crash's is, else
 * 404. */
static enum MHD_Result group_gone(fl_http *h, fl_store_conn *sc, struct MHD_Connection *c,
                                  const char *id)
{
    int64_t when = 0, n = 0;
    bool fin = false;
    char with[64] = "", t[32];
    int r = h->store->group_deleted(sc, id, &when, &n, &fin, with);
    if (r < 0)
        return store_failed(h, c, sc);
    if (r == 1)
        return send_error(c, 404, "no such group", NULL);
    fl_iso_time(when, t);
    return send_json(c, 410,
                     json_pack("{s:s,s:s,s:s,s:I,s:s?}", "error", "the group was deleted", "id", id,
                               "deleted", t, "crashes", (json_int_t)n, "deleted_with",
                               with[0] ? with : NULL),
                     NULL);
}

static enum MHD_Result api_get(fl_http *h, struct MHD_Connection *c, bool group, const char *id)
{
    const char *none = group ? "no such group" : "no such crash";
    if (!id_ok(id))
        return send_error(c, 404, none, NULL);
    fl_store_conn *sc = thread_conn(h);
    if (!sc)
        return send_error(c, 503, "store unavailable", "5");
    bool nf = false;
    json_t *j = group ? h->store->get_group(sc, id, &nf) : h->store->get_crash(sc, id, &nf);
    if (!j && nf && group)
        return group_gone(h, sc, c, id);
    if (!j)
        return nf ? send_error(c, 404, none, NULL) : store_failed(h, c, sc);
    if (!group && deleted(j))
        return send_json(c, 410, deleted_error(j, id), NULL);
    return send_json(c, 200, j, NULL);
}

/* GET /api/v1/groups/ID/crashes?limit=N&offset=M&install=I: the crashes
 * kept of a group, newest first; of one installation with install. */
static enum MHD_Result api_group_crashes(fl_http *h, struct MHD_Connection *c, const char *id)
{
    if (!id_ok(id))
        return send_error(c, 404, "no such group", NULL);
    const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *off = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "offset");
    uint64_t limit = 50, offset = 0;
    if (lim && (fl_parse_u64(lim, &limit) || limit == 0 || limit > 1000))
        return send_error(c, 400, "limit must be 1..1000", NULL);
    if (off && (fl_parse_u64(off, &offset) || offset > 100000000))
        return send_error(c, 400, "bad offset", NULL);
    fl_store_conn *sc = thread_conn(h);
    if (!sc)
        return send_error(c, 503, "store unavailable", "5");
    const char *install = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "install");
    bool nf = false;
    json_t *j = h->store->group_crashes(sc, id, install && *install ? install : NULL,
                                        (unsigned)limit, (unsigned)offset, &nf);
    if (!j && nf)
        return group_gone(h, sc, c, id);
    if (!j)
        return store_failed(h, c, sc);
    json_object_set_new(j, "limit", json_integer((json_int_t)limit));
    json_object_set_new(j, "offset", json_integer((json_int_t)offset));
    return send_json(c, 200, j, NULL);
}

/* DELETE /api/v1/crashes/ID: the crash's logs and e-mail address go (its
 * group keeps its counts); a second DELETE answers the same. */
static enum MHD_Result api_delete_crash(fl_http *h, struct MHD_Connection *c, const char *id)
{
    if (!id_ok(id))
        return send_error(c, 404, "no such crash", NULL);
    fl_store_conn *sc = thread_conn(h);
    if (!sc || h->store->begin(sc))
        return send_error(c, 503, "store unavailable", "5");
    int r = h->store->delete_crash(sc, id);
    if (r == 0 && h->store->commit(sc))
        r = -1;
    if (r != 0)
        h->store->rollback(sc);
    if (r == 1)
        return send_error(c, 404, "no such crash", NULL);
    if (r < 0)
        return send_error(c, 503, "store unavailable", "5");
    if (r == 0)
        FL_M_ADD(h->m->deleted_request, 1);
    return send_json(c, 200, json_pack("{s:s,s:s}", "id", id, "state", "deleted"), NULL);
}

/* DELETE /api/v1/groups/ID: the group, the groups merged into it and
 * every crash of theirs go (fl_store.h's delete_group), the crashes
 * GROUP_DELETE_BATCH to a transaction so that the (SQLite: single) writer
 * of ingest and processing gets its turn in between; a second DELETE
 * answers the same, and one that finds a delete stopped halfway (a
 * failure, a stopped server) finishes it.  The group's row goes here; the
 * crashes on a thread of the request's own, which then hands the answer
 * back to the loop as the writer does an ingest's (ingest_done): a group
 * of 100,000 crashes takes a while, and the loop serves other
 * connections meanwhile. */
#define GROUP_DELETE_BATCH 1000
#define GROUP_DELETE_PAUSE_MS 2 /* as retention.c's: SQLite's waiting writer polls */

typedef struct gdel {
    fl_http *h;
    req *r;
    char id[FL_CRASH_ID_MAX];
} gdel;

/* The answer of a delete whose crashes are all erased, or 503. */
static void gdel_answer(fl_http *h, fl_store_conn *sc, req *r, const char *id, const char *why)
{
    int64_t when = 0, n = 0;
    bool fin = false;
    char with[64];
    if (!why && h->store->group_deleted(sc, id, &when, &n, &fin, with))
        why = "store unavailable";
    r->retry_after = why ? "5" : NULL;
    r->status = why ? 503 : 200;
    r->answer = jdump(
        why ? json_pack("{s:s}", "error", why)
            : json_pack("{s:s,s:s,s:I}", "id", id, "state", "deleted", "crashes", (json_int_t)n));
}

static void *gdel_main(void *arg)
{
    gdel *g = arg;
    fl_http *h = g->h;
    req *r = g->r;
    pthread_setname_np(pthread_self(), "fl-gdelete");
    fl_store_conn *sc = h->store->connect(h->store);
    const char *why = sc ? NULL : "store unavailable";
    for (bool more = true; more && !why;) {
        if (__atomic_load_n(&h->phase, __ATOMIC_ACQUIRE) != PHASE_RUN) {
            why = "the server is stopping: the group is gone, not all its crashes yet; DELETE it "
                  "again to finish";
            break;
        }
        size_t n = 0;
        if (h->store->begin(sc) ||
            h->store->delete_group_step(sc, g->id, GROUP_DELETE_BATCH, &n, &more) ||
            h->store->commit(sc)) {
            h->store->rollback(sc);
            why = "store unavailable: the group is gone, not all its crashes yet; DELETE it again "
                  "to finish";
            break;
        }
        FL_M_ADD(h->m->deleted_group, n);
        if (more)
            nanosleep(&(struct timespec){0, GROUP_DELETE_PAUSE_MS * 1000000L}, NULL);
    }
    gdel_answer(h, sc, r, g->id, why);
    if (sc)
        h->store->disconnect(sc);
    free(g);
    hand_back(h, r, false);
    return NULL;
}

static enum MHD_Result api_delete_group(fl_http *h, req *rq, const char *id)
{
    struct MHD_Connection *c = rq->conn;
    if (!id_ok(id))
        return send_error(c, 404, "no such group", NULL);
    fl_store_conn *sc = thread_conn(h);
    if (!sc || h->store->begin(sc))
        return send_error(c, 503, "store unavailable", "5");
    char into[64] = "";
    int r = h->store->delete_group(sc, id, into);
    if (r == 0 && h->store->commit(sc))
        r = -1;
    if (r != 0)
        h->store->rollback(sc);
    if (r == 1)
        return send_error(c, 404, "no such group", NULL);
    if (r == 3) {
        char msg[192];
        snprintf(msg, sizeof msg,
                 "group %s is merged into %s: delete that group (which takes this one along), or "
                 "unmerge this one first",
                 id, into);
        return send_json(c, 409, json_pack("{s:s,s:s}", "error", msg, "merged_into", into), NULL);
    }
    if (r < 0)
        return send_error(c, 503, "store unavailable", "5");
    if (r == 2) {
        gdel_answer(h, sc, rq, id, NULL);
        char *a = rq->answer;
        rq->answer = NULL;
        return a ? send_text(c, rq->status, "application/json", a, rq->retry_after) : MHD_NO;
    }
    gdel *g = calloc(1, sizeof *g);
    if (!g)
        return send_error(c, 503, "out of memory", "5");
    g->h = h;
    g->r = rq;
    snprintf(g->id, sizeof g->id, "%s", id);
    /* No response yet: the handler is called on every pass of the loop
     * until the thread has answered (ST_WAIT); no idle timeout meanwhile. */
    rq->state = ST_WAIT;
    rq->loop = tl_loop;
    tl_loop->waiting++;
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)0);
    pthread_mutex_lock(&h->gdel_mu);
    h->gdel_running++;
    pthread_mutex_unlock(&h->gdel_mu);
    pthread_attr_t at;
    pthread_t th;
    int e = pthread_attr_init(&at);
    if (!e) {
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        e = pthread_create(&th, &at, gdel_main, g);
        pthread_attr_destroy(&at);
    }
    if (e) {
        /* No thread: erase here, as a thread would (this loop waits). */
        gdel_main(g);
    }
    return MHD_YES;
}

/* ---- projects: GET/POST /api/v1/projects, POST /api/v1/projects/ID/keys,
 * DELETE /api/v1/projects/ID/keys/KEY (fl_projects.h) */

static enum MHD_Result api_projects(fl_http *h, struct MHD_Connection *c)
{
    fl_store_conn *sc = thread_conn(h);
    if (!sc)
        return send_error(c, 503, "store unavailable", "5");
    json_t *j = h->store->list_projects ? h->store->list_projects(sc) : NULL;
    json_t *arr = json_object_get(j, "projects");
    if (!json_is_array(arr)) {
        json_decref(j);
        return store_failed(h, c, sc);
    }
    /* The default project, whose key is the server's, comes first. */
    json_array_insert_new(arr, 0,
                          json_pack("{s:s,s:n,s:[{s:s?,s:n}]}", "id", FL_PROJECT_DEFAULT, "created",
                                    "keys", "key", h->cfg.ingest_key, "created"));
    return send_json(c, 200, j, NULL);
}

static enum MHD_Result api_project_change(fl_http *h, req *r, const char *url, const char *method)
{
    struct MHD_Connection *c = r->conn;
    if (r->too_big)
        return send_error(c, 413, "body too large", NULL);
    fl_store_conn *sc = thread_conn(h);
    if (!sc || !h->store->add_project)
        return send_error(c, 503, "store unavailable", "5");
    /* url: /api/v1/projects[/ID[/keys[/KEY]]] */
    char id[FL_PROJECT_MAX] = "", key[128] = "";
    const char *p = url + 16;
    bool keys = false;
    if (*p == '/' && p[1]) {
        const char *e = strchr(++p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || n >= sizeof id)
            return send_error(c, 404, "no such project", NULL);
        memcpy(id, p, n);
        id[n] = '\0';
        if (e) {
            if (strncmp(e, "/keys", 5) || (e[5] && e[5] != '/'))
                return send_error(c, 404, "not found", NULL);
            keys = true;
            /* Before the key's form: the default key (any string the
             * environment set) is not a 404 "no such key". */
            if (!strcmp(id, FL_PROJECT_DEFAULT))
                return send_error(c, 400,
                                  "the default project's key is the server's: set it with "
                                  "FAULTLINE_INGEST_KEY",
                                  NULL);
            if (e[5] == '/' && e[6]) {
                /* Keys made here are hex: anything else is no key of ours
                 * (and never reaches the store). */
                size_t kl = strlen(e + 6);
                if (kl >= sizeof key || strspn(e + 6, "0123456789abcdef") != kl)
                    return send_error(c, 404, "no such key in that project", NULL);
                memcpy(key, e + 6, kl + 1);
            }
        }
    }
    bool post = !strcmp(method, "POST");
    if (post && !id[0]) {
        /* POST /api/v1/projects {"id": "..."}: a project and its first key. */
        json_t *b = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
        const char *want = json_string_value(json_object_get(b, "id"));
        if (!want || !fl_project_id_ok(want) || !strcmp(want, FL_PROJECT_DEFAULT)) {
            json_decref(b);
            return send_error(c, 400,
                              "expected {\"id\":\"ID\"}: 1 to 63 of a-z, 0-9, '-' and '_', "
                              "starting with a letter or digit, and not \"" FL_PROJECT_DEFAULT "\"",
                              NULL);
        }
        snprintf(id, sizeof id, "%s", want);
        json_decref(b);
        char k[33];
        if (fl_random_key(k))
            return send_error(c, 500, "no random bytes for a key", NULL);
        int rc = h->store->add_project(sc, id, k, fl_now());
        if (rc == 1)
            return send_error(c, 409, "that project exists", NULL);
        if (rc)
            return store_failed(h, c, sc);
        fl_projects_invalidate(h->projects);
        return send_json(c, 201, json_pack("{s:s,s:s}", "id", id, "ingest_key", k), NULL);
    }
    if (!keys)
        return id[0] ? send_error(c, 404, "not found", NULL)
                     : send_405(c, "GET, HEAD, POST", false);
    if (post == !!key[0]) /* POST .../keys, DELETE .../keys/KEY */
        return send_405(c, post ? "DELETE" : "POST", false);
    if (!fl_project_id_ok(id))
        return send_error(c, 404, "no such project", NULL);
    int rc;
    if (post) {
        char k[33];
        if (fl_random_key(k))
            return send_error(c, 500, "no random bytes for a key", NULL);
        if ((rc = h->store->add_project_key(sc, id, k, fl_now())) == 0) {
            fl_projects_invalidate(h->projects);
            return send_json(c, 201, json_pack("{s:s,s:s}", "id", id, "ingest_key", k), NULL);
        }
    } else if ((rc = h->store->revoke_project_key(sc, id, key)) == 0) {
        fl_projects_invalidate(h->projects);
        return send_json(c, 200, json_pack("{s:s,s:s}", "id", id, "revoked", key), NULL);
    }
    if (rc == 1)
        return send_error(c, 404, post ? "no such project" : "no such key in that project", NULL);
    return store_failed(h, c, sc);
}

static enum MHD_Result api_patch_group(fl_http *h, req *r, const char *id)
{
    struct MHD_Connection *c = r->conn;
    if (r->too_big)
        return send_error(c, 413, "body too large", NULL);
    json_error_t je;
    json_t *b = json_loadb(r->body ? r->body : "", r->len, 0, &je);
    if (!b || !json_is_object(b)) {
        json_decref(b);
        return send_error(c, 400, "body must be a JSON object", NULL);
    }
    const char *status = json_string_value(json_object_get(b, "status"));
    json_t *ri = json_object_get(b, "resolved_in");
    const char *resolved_in = json_string_value(ri);
    /* Ignored: noise an operator chose not to hear of -- never regressed,
     * so never notified (group_add() regresses resolved groups only). */
    if (!status ||
        (strcmp(status, "resolved") && strcmp(status, "open") && strcmp(status, "ignored")) ||
        (resolved_in && strcmp(status, "resolved")) || (ri && !resolved_in) ||
        (resolved_in && (!*resolved_in || strlen(resolved_in) > 100))) {
        json_decref(b);
        return send_error(c, 400,
                          "expected {\"status\":\"resolved\"[,\"resolved_in\":\"VERSION\"]}, "
                          "{\"status\":\"open\"} or {\"status\":\"ignored\"}",
                          NULL);
    }
    fl_store_conn *sc = thread_conn(h);
    int rc = -1;
    if (sc && id_ok(id))
        rc = h->store->set_status(sc, id, status, resolved_in);
    else if (sc)
        rc = 1;
    json_decref(b);
    if (rc == 1)
        return send_error(c, 404, "no such group", NULL);
    if (rc != 0)
        return store_failed(h, c, sc);
    bool nf = false;
    json_t *g = h->store->get_group(sc, id, &nf);
    /* Deleted between the two (another client's DELETE): as a GET. */
    if (!g && nf)
        return group_gone(h, sc, c, id);
    return g ? send_json(c, 200, g, NULL) : store_failed(h, c, sc);
}

/* The ID of a "PREFIX ID SUFFIX" path into out (cap bytes): false when it
 * does not fit or is no id (id_ok). */
static bool path_id(const char *url, size_t prefix, size_t suffix, char *out, size_t cap)
{
    size_t n = strlen(url) - prefix - suffix;
    if (n >= cap)
        return false;
    memcpy(out, url + prefix, n);
    out[n] = '\0';
    return id_ok(out);
}

/* "/api/v1/groups/ID/merge" */
#define MERGE_PREFIX "/api/v1/groups/"
#define MERGE_SUFFIX "/merge"
#define MERGE_MAX 100 /* groups merged by one request */
static bool is_merge(const char *url)
{
    size_t n = strlen(url), p = sizeof MERGE_PREFIX - 1, s = sizeof MERGE_SUFFIX - 1;
    return n > p + s && !strncmp(url, MERGE_PREFIX, p) && !strcmp(url + n - s, MERGE_SUFFIX);
}

/* POST /api/v1/groups/ID/merge {"groups":[ID...]}: the groups listed are
 * merged into ID, all or none (one transaction); 200 with the group. */
static enum MHD_Result api_merge_groups(fl_http *h, req *r, const char *url)
{
    struct MHD_Connection *c = r->conn;
    if (r->too_big)
        return send_error(c, 413, "body too large", NULL);
    char into[FL_CRASH_ID_MAX];
    if (!path_id(url, sizeof MERGE_PREFIX - 1, sizeof MERGE_SUFFIX - 1, into, sizeof into))
        return send_error(c, 404, "no such group", NULL);
    json_t *b = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
    json_t *from = json_object_get(b, "groups");
    size_t nf = json_array_size(from);
    bool good = json_is_array(from) && nf > 0 && nf <= MERGE_MAX;
    for (size_t i = 0; good && i < nf; i++)
        good = json_is_string(json_array_get(from, i));
    if (!good) {
        json_decref(b);
        return send_error(c, 400,
                          "expected {\"groups\":[\"ID\",...]}: 1 to 100 ids of groups to merge "
                          "into this one",
                          NULL);
    }
    fl_store_conn *sc = thread_conn(h);
    if (!sc || h->store->begin(sc)) {
        json_decref(b);
        return send_error(c, 503, "store unavailable", "5");
    }
    int rc = 0;
    char msg[160] = "";
    for (size_t i = 0; !rc && i < nf; i++) {
        const char *id = json_string_value(json_array_get(from, i));
        rc = id_ok(id) ? h->store->merge_group(sc, into, id) : 2;
        if (rc == 4) {
            rc = 0; /* merged already, or itself: nothing to do */
            continue;
        }
        if (rc == 2 || rc == 3)
            snprintf(msg, sizeof msg, "%s %.*s",
                     rc == 2 ? "no such group:"
                             : "not the same project and application as this group:",
                     64, id);
    }
    json_decref(b);
    if (!rc && h->store->commit(sc))
        rc = -1;
    if (rc) {
        h->store->rollback(sc);
        if (rc == 1)
            return send_error(c, 404, "no such group", NULL);
        if (rc == 2)
            return send_error(c, 404, msg, NULL);
        if (rc == 3)
            return send_error(c, 409, msg, NULL);
        return send_error(c, 503, "store unavailable", "5");
    }
    bool nfound = false;
    json_t *g = h->store->get_group(sc, into, &nfound);
    if (!g && nfound) /* deleted since the commit, as after a PATCH */
        return group_gone(h, sc, c, into);
    return g ? send_json(c, 200, g, NULL) : store_failed(h, c, sc);
}

/* "/api/v1/groups/ID/unmerge" */
#define UNMERGE_SUFFIX "/unmerge"
static bool is_unmerge(const char *url)
{
    size_t n = strlen(url), p = sizeof MERGE_PREFIX - 1, s = sizeof UNMERGE_SUFFIX - 1;
    return n > p + s && !strncmp(url, MERGE_PREFIX, p) && !strcmp(url + n - s, UNMERGE_SUFFIX);
}

/* After a commit that marked crashes for processing (their tasks are
 * written with it when the queue is in the store): with a broker, the
 * writer's publisher publishes them, so that a broker that does not
 * answer (its confirm and handshake wait 5 s) never holds this HTTP
 * thread and every connection it serves.  A broker that refuses: the
 * crashes are marked, and the sweep publishes them once it is back. */
static void queue_tasks(fl_http *h, fl_store_conn *sc, const char *const *ids, size_t n)
{
    if (!h->queue->in_store_txn && h->writer) {
        fl_writer_publish(h->writer, ids, n); /* counted in the backlog once published */
        return;
    }
    fl_queue_publish(h->queue, sc, ids, n);
    FL_M_ADD(h->m->backlog, (int64_t)n);
}

/* POST /api/v1/groups/ID/unmerge: group ID, merged into another, stands
 * for itself again, with its crashes and counts (a merge left them
 * there): 200.  Crashes a merge of an older version moved into the other
 * group are queued to be processed again, which moves them back: 202
 * once they are queued. */
static enum MHD_Result api_unmerge_group(fl_http *h, struct MHD_Connection *c, const char *url)
{
    char id[FL_CRASH_ID_MAX], from[64] = "";
    if (!path_id(url, sizeof MERGE_PREFIX - 1, sizeof UNMERGE_SUFFIX - 1, id, sizeof id))
        return send_error(c, 404, "no such group", NULL);
    fl_store_conn *sc = thread_conn(h);
    if (!sc || h->store->begin(sc))
        return send_error(c, 503, "store unavailable", "5");
    char **ids = NULL;
    size_t nids = 0;
    int r = h->store->unmerge_group(sc, id, from, &ids, &nids);
    for (size_t i = 0; r == 0 && h->queue->in_store_txn && i < nids; i++)
        if (h->queue->enqueue(h->queue, sc, ids[i]))
            r = -1;
    if (r == 0 && h->store->commit(sc))
        r = -1;
    if (r != 0) {
        h->store->rollback(sc);
        for (size_t i = 0; i < nids; i++)
            free(ids[i]);
        free(ids);
        return r == 1   ? send_error(c, 404, "no such group", NULL)
               : r == 2 ? send_error(c, 409, "that group is not merged into another", NULL)
                        : send_error(c, 503, "store unavailable", "5");
    }
    queue_tasks(h, sc, (const char *const *)ids, nids);
    for (size_t i = 0; i < nids; i++)
        free(ids[i]);
    free(ids);
    return send_json(c, nids ? 202 : 200,
                     json_pack("{s:s,s:s,s:I}", "id", id, "from", from, "queued", (json_int_t)nids),
                     NULL);
}

/* "/api/v1/crashes/ID/reprocess" */
#define REPROCESS_PREFIX "/api/v1/crashes/"
#define REPROCESS_SUFFIX "/reprocess"
static bool is_reprocess(const char *url)
{
    size_t n = strlen(url), p = sizeof REPROCESS_PREFIX - 1, s = sizeof REPROCESS_SUFFIX - 1;
    return n > p + s && !strncmp(url, REPROCESS_PREFIX, p) &&
           !strcmp(url + n - s, REPROCESS_SUFFIX);
}

/* POST /api/v1/crashes/ID/reprocess: 202 once its task is stored. */
static enum MHD_Result api_reprocess(fl_http *h, struct MHD_Connection *c, const char *url)
{
    char id[FL_CRASH_ID_MAX];
    if (!path_id(url, sizeof REPROCESS_PREFIX - 1, sizeof REPROCESS_SUFFIX - 1, id, sizeof id))
        return send_error(c, 404, "no such crash", NULL);
    fl_store_conn *sc = thread_conn(h);
    if (!sc || h->store->begin(sc))
        return send_error(c, 503, "store unavailable", "5");
    int r = h->store->requeue(sc, id);
    if (r == 0 && h->queue->in_store_txn && h->queue->enqueue(h->queue, sc, id))
        r = -1;
    if (r == 0 && h->store->commit(sc))
        r = -1;
    if (r != 0) {
        h->store->rollback(sc);
        if (r == 3) {
            /* The 410 every route about a deleted crash gives, with its
             * id and when it came (docs/http-api.md). */
            enum MHD_Result ret;
            json_t *j = crash_for(h, sc, c, id, &ret);
            if (!j)
                return ret;
            json_decref(j); /* not deleted after all: what requeue said */
            return send_error(c, 410, "the crash was deleted", NULL);
        }
        return r == 1   ? send_error(c, 404, "no such crash", NULL)
               : r == 2 ? send_error(c, 409, "not processed yet: it is in the queue already", NULL)
                        : send_error(c, 503, "store unavailable", "5");
    }
    const char *ids[1] = {id};
    queue_tasks(h, sc, ids, 1);
    return send_json(c, 202, json_pack("{s:s,s:s}", "id", id, "state", "queued"), NULL);
}

static enum MHD_Result metrics(fl_http *h, struct MHD_Connection *c)
{
    fl_metrics *m = h->m;
    static const char *const why[FL_REJ_COUNT] = {
        [FL_REJ_MALFORMED] = "malformed",       [FL_REJ_TOO_LARGE] = "too_large",
        [FL_REJ_UNAUTHORIZED] = "unauthorized", [FL_REJ_RATE_LIMITED] = "rate_limited",
        [FL_REJ_UNAVAILABLE] = "unavailable",   [FL_REJ_BAD_REQUEST] = "bad_request",
        [FL_REJ_TOO_SLOW] = "too_slow",
    };
    int64_t depth = -1;
    fl_store_conn *sc = thread_conn(h);
    if (sc)
        depth = h->queue->depth(h->queue, sc);
    size_t cap = 16384 + 64 * (size_t)h->nloops, n = 0; /* ~6 KiB now */
    char *s = malloc(cap);
    if (!s)
        return MHD_NO;
#define P(...) n += (size_t)snprintf(s + n, n < cap ? cap - n : 0, __VA_ARGS__)
    P("# HELP faultline_reports_accepted_total Reports answered 200 (durable).\n"
      "# TYPE faultline_reports_accepted_total counter\n"
      "faultline_reports_accepted_total %" PRIu64 "\n",
      FL_M_GET(m->accepted));
    P("# HELP faultline_reports_duplicate_total Accepted reports whose crash id was known.\n"
      "# TYPE faultline_reports_duplicate_total counter\n"
      "faultline_reports_duplicate_total %" PRIu64 "\n",
      FL_M_GET(m->duplicates));
    P("# HELP faultline_reports_rejected_total Requests refused, by reason.\n"
      "# TYPE faultline_reports_rejected_total counter\n");
    for (int i = 0; i < FL_REJ_COUNT; i++)
        P("faultline_reports_rejected_total{reason=\"%s\"} %" PRIu64 "\n", why[i],
          FL_M_GET(m->rejected[i]));
    P("# HELP faultline_ingest_commits_total Group commits (transactions) of ingest.\n"
      "# TYPE faultline_ingest_commits_total counter\n"
      "faultline_ingest_commits_total %" PRIu64 "\n"
      "# HELP faultline_ingest_committed_reports_total Reports written by those commits.\n"
      "# TYPE faultline_ingest_committed_reports_total counter\n"
      "faultline_ingest_committed_reports_total %" PRIu64 "\n"
      "# HELP faultline_ingest_commit_seconds_total Time the writer spent in those "
      "transactions, fsync included (busy share: its rate; mean commit: over the commits).\n"
      "# TYPE faultline_ingest_commit_seconds_total counter\n"
      "faultline_ingest_commit_seconds_total %.6f\n"
      "# HELP faultline_ingest_http_compressed_reports_total Reports whose raw log an HTTP "
      "thread compressed (requests with 64 KiB of logs or more); the writer compresses the "
      "rest.\n"
      "# TYPE faultline_ingest_http_compressed_reports_total counter\n"
      "faultline_ingest_http_compressed_reports_total %" PRIu64 "\n",
      FL_M_GET(m->commits), FL_M_GET(m->committed_items), (double)FL_M_GET(m->commit_ns) / 1e9,
      FL_M_GET(m->loop_compressed));
    P("# HELP faultline_ingest_held_bytes Report data (bodies, decoded bodies, parts) that "
      "ingest requests hold in memory now; at --max-memory new data is answered 503.\n"
      "# TYPE faultline_ingest_held_bytes gauge\n"
      "faultline_ingest_held_bytes %" PRIu64 "\n",
      __atomic_load_n(&h->held, __ATOMIC_RELAXED));
    struct statvfs vfs;
    if (h->cfg.data_dir && !statvfs(h->cfg.data_dir, &vfs))
        P("# HELP faultline_data_free_bytes Room left for the data directory (its file "
          "system's blocks available to the server): alert well before 0, where ingest "
          "answers 503.\n"
          "# TYPE faultline_data_free_bytes gauge\n"
          "faultline_data_free_bytes %" PRIu64 "\n"
          "# HELP faultline_data_size_bytes Size of the data directory's file system.\n"
          "# TYPE faultline_data_size_bytes gauge\n"
          "faultline_data_size_bytes %" PRIu64 "\n",
          (uint64_t)vfs.f_bavail * vfs.f_frsize, (uint64_t)vfs.f_blocks * vfs.f_frsize);
    fl_health_state hs[FL_HEALTH_COUNT]; /* one reading for both metrics */
    for (int i = 0; i < FL_HEALTH_COUNT; i++)
        fl_health_get(&m->health, i, &hs[i]);
    P("# HELP faultline_storage_failures_total Transactions the store refused (a full disk, "
      "a read-only or damaged database), by path: ingest answers 503 meanwhile, processing "
      "retries.\n"
      "# TYPE faultline_storage_failures_total counter\n");
    for (int i = 0; i < FL_HEALTH_COUNT; i++)
        P("faultline_storage_failures_total{path=\"%s\"} %" PRIu64 "\n", fl_health_path_name(i),
          hs[i].failures);
    P("# HELP faultline_storage_failing 1 while the last transaction of that path failed.\n"
      "# TYPE faultline_storage_failing gauge\n");
    for (int i = 0; i < FL_HEALTH_COUNT; i++)
        P("faultline_storage_failing{path=\"%s\"} %d\n", fl_health_path_name(i), hs[i].failing);
    fl_store_known_info ki;
    fl_store_sqlite_known_info(h->store, &ki);
    P("# HELP faultline_ingest_id_lookups_total Crash ids ingest looked up among those stored "
      "(the filter of stored ids could not rule them out: resends, 0.1-3 %% of new ids, and "
      "all until the filter is loaded).\n"
      "# TYPE faultline_ingest_id_lookups_total counter\n"
      "faultline_ingest_id_lookups_total %" PRId64 "\n"
      "# HELP faultline_ingest_id_filter_ready 1 once the filter of stored crash ids is loaded.\n"
      "# TYPE faultline_ingest_id_filter_ready gauge\n"
      "faultline_ingest_id_filter_ready %d\n"
      "# HELP faultline_ingest_id_filter_from_snapshot 1 when the filter came from the "
      "snapshot the last clean stop left, instead of reading the stored ids.\n"
      "# TYPE faultline_ingest_id_filter_from_snapshot gauge\n"
      "faultline_ingest_id_filter_from_snapshot %d\n"
      "# HELP faultline_ingest_id_filter_ids Crash ids added to that filter (one added "
      "twice, by the loader and by ingest, counts twice).\n"
      "# TYPE faultline_ingest_id_filter_ids gauge\n"
      "faultline_ingest_id_filter_ids %zu\n"
      "# HELP faultline_ingest_id_filter_bytes Memory that filter holds.\n"
      "# TYPE faultline_ingest_id_filter_bytes gauge\n"
      "faultline_ingest_id_filter_bytes %zu\n",
      ki.lookups, ki.ready ? 1 : 0, ki.from_snapshot ? 1 : 0, ki.ids, ki.bytes);
    if (!strcmp(h->store->engine, "sqlite")) {
        fl_store_wal_info wi;
        fl_store_sqlite_wal_info(h->store, &wi);
        P("# HELP faultline_sqlite_checkpoints_total Passes of the checkpointer, which copies "
          "the WAL back into the database: started by commits that grew the WAL by 512 KiB, or "
          "by its 200 ms timer.\n"
          "# TYPE faultline_sqlite_checkpoints_total counter\n"
          "faultline_sqlite_checkpoints_total{started_by=\"wal_growth\"} %" PRIu64 "\n"
          "faultline_sqlite_checkpoints_total{started_by=\"timer\"} %" PRIu64 "\n"
          "# HELP faultline_sqlite_wal_restarts_total Checkpoints that held writers off to let "
          "the WAL start over from its beginning (past 64 MiB).\n"
          "# TYPE faultline_sqlite_wal_restarts_total counter\n"
          "faultline_sqlite_wal_restarts_total %" PRIu64 "\n"
          "# HELP faultline_sqlite_wal_restarts_deferred_total Such checkpoints that gave way "
          "after ~10 ms to a reader still on an older snapshot (or the writer), instead of "
          "holding ingest for as long; tried again a second later.\n"
          "# TYPE faultline_sqlite_wal_restarts_deferred_total counter\n"
          "faultline_sqlite_wal_restarts_deferred_total %" PRIu64 "\n"
          "# HELP faultline_sqlite_wal_frames Pages in the WAL after the last checkpointer pass.\n"
          "# TYPE faultline_sqlite_wal_frames gauge\n"
          "faultline_sqlite_wal_frames %" PRId64 "\n",
          wi.passes_asked, wi.passes - wi.passes_asked, wi.restarts, wi.restarts_deferred,
          wi.wal_frames);
    }
    P("# HELP faultline_queue_depth Crashes waiting for (or leased by) a worker.\n"
      "# TYPE faultline_queue_depth gauge\n"
      "faultline_queue_depth %" PRId64 "\n",
      depth);
    P("# HELP faultline_crashes_processed_total Crashes processed by workers.\n"
      "# TYPE faultline_crashes_processed_total counter\n"
      "faultline_crashes_processed_total %" PRIu64 "\n"
      "# HELP faultline_crashes_failed_total Crashes that could not be processed.\n"
      "# TYPE faultline_crashes_failed_total counter\n"
      "faultline_crashes_failed_total %" PRIu64 "\n"
      "# HELP faultline_crashes_duplicate_total Reports dropped by workers: a crash id "
      "already counted (resent before the first copy was processed).\n"
      "# TYPE faultline_crashes_duplicate_total counter\n"
      "faultline_crashes_duplicate_total %" PRIu64 "\n"
      "# HELP faultline_crashes_deleted_total Crashes deleted by this process: by "
      "--retention (rows and all), at a request (DELETE /api/v1/crashes/ID), or with their "
      "group (DELETE /api/v1/groups/ID).\n"
      "# TYPE faultline_crashes_deleted_total counter\n"
      "faultline_crashes_deleted_total{reason=\"retention\"} %" PRIu64 "\n"
      "faultline_crashes_deleted_total{reason=\"request\"} %" PRIu64 "\n"
      "faultline_crashes_deleted_total{reason=\"group\"} %" PRIu64 "\n",
      FL_M_GET(m->processed), FL_M_GET(m->processing_failed), FL_M_GET(m->dropped_duplicates),
      FL_M_GET(m->deleted_retention), FL_M_GET(m->deleted_request), FL_M_GET(m->deleted_group));
    P("# HELP faultline_notifications_total Notices of new groups and regressions POSTed to "
      "--notify-url by this process, alone or in a digest: sent (2xx), failed (tried again "
      "later), dropped (refused with a 4xx, or not delivered for a day).\n"
      "# TYPE faultline_notifications_total counter\n"
      "faultline_notifications_total{result=\"sent\"} %" PRIu64 "\n"
      "faultline_notifications_total{result=\"failed\"} %" PRIu64 "\n"
      "faultline_notifications_total{result=\"dropped\"} %" PRIu64 "\n",
      FL_M_GET(m->notify_sent), FL_M_GET(m->notify_failed), FL_M_GET(m->notify_dropped));
    P("# HELP faultline_notification_digests_total Digests POSTed to --notify-url by this "
      "process (one message for the events of a storm, each also counted in "
      "faultline_notifications_total): sent, failed, dropped as there.\n"
      "# TYPE faultline_notification_digests_total counter\n"
      "faultline_notification_digests_total{result=\"sent\"} %" PRIu64 "\n"
      "faultline_notification_digests_total{result=\"failed\"} %" PRIu64 "\n"
      "faultline_notification_digests_total{result=\"dropped\"} %" PRIu64 "\n",
      FL_M_GET(m->notify_digests_sent), FL_M_GET(m->notify_digests_failed),
      FL_M_GET(m->notify_digests_dropped));
    uint64_t cnt = FL_M_GET(m->processed) + FL_M_GET(m->processing_failed);
    P("# HELP faultline_processing_seconds Worker time per crash.\n"
      "# TYPE faultline_processing_seconds summary\n"
      "faultline_processing_seconds_sum %.6f\n"
      "faultline_processing_seconds_count %" PRIu64 "\n",
      (double)FL_M_GET(m->processing_ns) / 1e9, cnt);
    P("# HELP faultline_queue_publish_failed_total Tasks the queue (a broker) refused "
      "after their reports were stored; the sweep publishes them later.\n"
      "# TYPE faultline_queue_publish_failed_total counter\n"
      "faultline_queue_publish_failed_total %" PRIu64 "\n"
      "# HELP faultline_queue_republished_total Tasks published by the sweep: their report "
      "was stored but its task had not reached the queue.\n"
      "# TYPE faultline_queue_republished_total counter\n"
      "faultline_queue_republished_total %" PRIu64 "\n",
      FL_M_GET(m->publish_failed), FL_M_GET(m->republished));
    if (h->writer && !h->queue->in_store_txn) {
        char qwhy[8];
        int64_t qsince;
        P("# HELP faultline_queue_failing 1 while the queue (a broker) refused the last publish "
          "or sweep: reports are stored, not processed until it answers.\n"
          "# TYPE faultline_queue_failing gauge\n"
          "faultline_queue_failing %d\n",
          fl_writer_queue_state(h->writer, qwhy, sizeof qwhy, &qsince) ? 1 : 0);
    }
    P("# HELP faultline_processing_conflicts_total Worker transactions that met a concurrent "
      "one (a deadlock between two batches) and were run again.\n"
      "# TYPE faultline_processing_conflicts_total counter\n"
      "faultline_processing_conflicts_total %" PRIu64 "\n",
      FL_M_GET(m->apply_conflicts));
    P("# HELP faultline_http_requests_total HTTP requests.\n"
      "# TYPE faultline_http_requests_total counter\n"
      "faultline_http_requests_total %" PRIu64 "\n",
      FL_M_GET(m->requests));
    P("# HELP faultline_http_connections Open connections, by HTTP thread.\n"
      "# TYPE faultline_http_connections gauge\n");
    for (unsigned i = 0; i < h->nloops; i++)
        P("faultline_http_connections{thread=\"%u\"} %u\n", i,
          __atomic_load_n(&h->loops[i].conns, __ATOMIC_RELAXED));
    if (h->cfg.srvsym) {
        /* This process's symbolizer (workers and symbolicate endpoints). */
        fl_srvsym_stats ss;
        fl_srvsym_get_stats(h->cfg.srvsym, &ss);
        P("# HELP faultline_symbol_lookups_total Frames looked up by build id.\n"
          "# TYPE faultline_symbol_lookups_total counter\n"
          "faultline_symbol_lookups_total %" PRIu64 "\n"
          "# HELP faultline_symbol_modules_missing_total Module lookups that found no debug file.\n"
          "# TYPE faultline_symbol_modules_missing_total counter\n"
          "faultline_symbol_modules_missing_total %" PRIu64 "\n"
          "# HELP faultline_symcache_opened_total Symcaches opened into the LRU.\n"
          "# TYPE faultline_symcache_opened_total counter\n"
          "faultline_symcache_opened_total %" PRIu64 "\n"
          "# HELP faultline_symcache_built_total Symcaches built from debug files.\n"
          "# TYPE faultline_symcache_built_total counter\n"
          "faultline_symcache_built_total %" PRIu64 "\n"
          "# HELP faultline_symcache_evicted_total Open symcaches closed by the LRU.\n"
          "# TYPE faultline_symcache_evicted_total counter\n"
          "faultline_symcache_evicted_total %" PRIu64 "\n"
          "# HELP faultline_symcache_build_failures_total Debug files found but unusable.\n"
          "# TYPE faultline_symcache_build_failures_total counter\n"
          "faultline_symcache_build_failures_total %" PRIu64 "\n"
          "# HELP faultline_trace_formats_read_total Sections of formats kept apart read from "
          "debug files.\n"
          "# TYPE faultline_trace_formats_read_total counter\n"
          "faultline_trace_formats_read_total %" PRIu64 "\n"
          "# HELP faultline_trace_formats_shared_total Crashes whose formats kept apart came "
          "from a section read before.\n"
          "# TYPE faultline_trace_formats_shared_total counter\n"
          "faultline_trace_formats_shared_total %" PRIu64 "\n"
          "# HELP faultline_trace_formats_damaged_total Crashes whose debug file had a damaged "
          "section of formats kept apart.\n"
          "# TYPE faultline_trace_formats_damaged_total counter\n"
          "faultline_trace_formats_damaged_total %" PRIu64 "\n"
          "# HELP faultline_tail_call_frames_total Frames that tail calls had left off, put "
          "back from the DWARF's call sites.\n"
          "# TYPE faultline_tail_call_frames_total counter\n"
          "faultline_tail_call_frames_total %" PRIu64 "\n",
          ss.lookups, ss.located_missing, ss.opened, ss.built, ss.evicted, ss.broken,
          ss.formats_read, ss.formats_shared, ss.formats_damaged, ss.tail_frames);
        const fl_symlocate_stats *ls = &ss.locate;
        P("# HELP faultline_debuginfod_requests_total Requests made to debuginfod servers.\n"
          "# TYPE faultline_debuginfod_requests_total counter\n"
          "faultline_debuginfod_requests_total %" PRIu64 "\n"
          "# HELP faultline_debuginfod_found_total Debug files found through debuginfod.\n"
          "# TYPE faultline_debuginfod_found_total counter\n"
          "faultline_debuginfod_found_total %" PRIu64 "\n"
          "# HELP faultline_debuginfod_failures_total Requests that found no usable file: the "
          "servers had none (missing), none answered (unreachable), one answered with an "
          "HTTP 5xx or 429 (server_error), or the answer was not the build id's file "
          "(refused).\n"
          "# TYPE faultline_debuginfod_failures_total counter\n"
          "faultline_debuginfod_failures_total{reason=\"missing\"} %" PRIu64 "\n"
          "faultline_debuginfod_failures_total{reason=\"unreachable\"} %" PRIu64 "\n"
          "faultline_debuginfod_failures_total{reason=\"server_error\"} %" PRIu64 "\n"
          "faultline_debuginfod_failures_total{reason=\"refused\"} %" PRIu64 "\n"
          "# HELP faultline_debuginfod_skipped_total Requests not made: the build id missed "
          "lately (remembered), no server answered lately (outage), or the crash's requests "
          "were spent (budget).\n"
          "# TYPE faultline_debuginfod_skipped_total counter\n"
          "faultline_debuginfod_skipped_total{reason=\"remembered\"} %" PRIu64 "\n"
          "faultline_debuginfod_skipped_total{reason=\"outage\"} %" PRIu64 "\n"
          "faultline_debuginfod_skipped_total{reason=\"budget\"} %" PRIu64 "\n",
          ls->debuginfod_queries, ls->found_debuginfod,
          ls->debuginfod_misses - ls->debuginfod_errors - ls->debuginfod_server_errors -
              ls->debuginfod_refused,
          ls->debuginfod_errors, ls->debuginfod_server_errors, ls->debuginfod_refused,
          ls->miss_cache_hits, ls->outage_skips, ls->budget_skips);
    }
    if (h->cfg.ctxsrv) {
        fl_ctxsrv_stats cx;
        fl_ctxsrv_get_stats(h->cfg.ctxsrv, &cx);
        P("# HELP faultline_contexts_total Calling-context values decoded for "
          "/api/v1/crashes/ID/contexts, by result.\n"
          "# TYPE faultline_contexts_total counter\n"
          "faultline_contexts_total{result=\"decoded\"} %" PRIu64 "\n"
          "faultline_contexts_total{result=\"missed\"} %" PRIu64 "\n"
          "# HELP faultline_context_graphs_built_total Call graphs built for decoding.\n"
          "# TYPE faultline_context_graphs_built_total counter\n"
          "faultline_context_graphs_built_total %" PRIu64 "\n"
          "# HELP faultline_context_queue Crashes waiting for the context decoder.\n"
          "# TYPE faultline_context_queue gauge\n"
          "faultline_context_queue %" PRIu64 "\n",
          cx.decoded, cx.missed, cx.graphs, cx.queued);
    }
#undef P
    if (n >= cap) {
        free(s);
        return send_error(c, 500, "metrics overflow", NULL);
    }
    return send_text(c, 200, "text/plain; version=0.0.4", s, NULL);
}

/* ---- symbols */

static bool hex_id_ok(const char *s, size_t n)
{
    if (n < 2 || n > 2 * FL_SYM_BUILD_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
              (s[i] >= 'A' && s[i] <= 'F')))
            return false;
    return true;
}

static void lower(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'F')
            *s = (char)(*s - 'A' + 'a');
}

/* The name the uploader gave the file: X-Faultline-Name or ?name=. */
static const char *upload_name(struct MHD_Connection *c)
{
    const char *n = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Faultline-Name");
    if (!n)
        n = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
    return n && *n ? n : "upload";
}

/* An upload refused at its headers (LATE_UNAUTHORIZED, LATE_UNAVAILABLE). */
static enum MHD_Result sym_refusal(struct MHD_Connection *c, int late)
{
    return late == LATE_UNAUTHORIZED
               ? send_error(c, 401, admin_refusal(c, report_like(c, "POST")), NULL)
               : send_error(c, 503, "symbol ingestion is not running in this process", "30");
}

static enum MHD_Result sym_upload_start(fl_http *h, req *r)
{
    struct MHD_Connection *c = r->conn;
    r->state = ST_DONE; /* until the file is open */
    int late = !admin_ok(h, c) ? LATE_UNAUTHORIZED : !h->cfg.symingest ? LATE_UNAVAILABLE : 0;
    if (late) {
        /* After the body, as ingest's refusals (answer_after_body): a
         * wrong token behind a proxy became a 502, which `symbols add`
         * retried as a server away instead of saying the token is wrong. */
        if (!answer_after_body(c))
            return sym_refusal(c, late);
        r->late = late;
        r->too_big = true; /* read on and drop (sym_upload_chunk) */
        r->state = ST_RECV;
        return MHD_YES;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    uint64_t n;
    if (cl && !fl_parse_u64(cl, &n) && n > h->cfg.max_symbol_file) {
        /* As for a report over --max-body (first_call): answered before
         * the body only to a client that waits for a go-ahead (Expect:
         * 100-continue; `symbols add` asks so for a file over 1 MiB).  One
         * already sending it -- a reverse proxy always is -- would have
         * the connection reset under it, and nginx would turn the 413
         * into a 502, which `symbols add` takes for a server away and
         * tries again.  So the body is read and dropped as it comes
         * (sym_upload_chunk: no file, no memory) and answered 413 whole.
         * Without a cap on what is drained, unlike a report's: the sender
         * has shown the admin token, and a debug file may rightly be
         * larger than any cap but the operator's own. */
        const char *ex = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
        if (ex && !strcasecmp(ex, "100-continue"))
            return send_json(c, 413,
                             json_pack("{s:s,s:I}", "error", "debug file too large", "limit",
                                       (json_int_t)h->cfg.max_symbol_file),
                             NULL);
        r->too_big = true;
        r->state = ST_RECV;
        return MHD_YES;
    }
    snprintf(r->tmppath, sizeof r->tmppath, "%.*s/upload.XXXXXX", PATH_MAX - 32,
             fl_symingest_tmpdir(h->cfg.symingest));
    r->fd = mkostemp(r->tmppath, O_CLOEXEC);
    if (r->fd < 0) {
        r->tmppath[0] = '\0';
        return send_error(c, 503, "cannot create a temporary file", "30");
    }
    /* Served to anyone by /buildid/ anyway; readable like a packaged one. */
    if (fchmod(r->fd, 0644)) {
        /* mkostemp's 0600 is only less convenient */
    }
    r->state = ST_RECV;
    return MHD_YES;
}

static void sym_upload_chunk(fl_http *h, req *r, const char *data, size_t n)
{
    if (r->too_big || r->werr)
        return; /* keep reading (and dropping) to answer (no file when too_big from the start) */
    if (r->written + n > h->cfg.max_symbol_file) {
        r->too_big = true;
        if (ftruncate(r->fd, 0)) {
            /* the file is removed when the request ends */
        }
        return;
    }
    while (n) {
        ssize_t w = write(r->fd, data, n);
        if (w <= 0) {
            r->werr = true;
            return;
        }
        data += w;
        n -= (size_t)w;
        r->written += (uint64_t)w;
    }
}

static enum MHD_Result sym_upload_finish(fl_http *h, req *r)
{
    struct MHD_Connection *c = r->conn;
    r->state = ST_DONE;
    if (r->late)
        return sym_refusal(c, r->late);
    if (r->too_big)
        return send_json(c, 413,
                         json_pack("{s:s,s:I}", "error", "debug file too large", "limit",
                                   (json_int_t)h->cfg.max_symbol_file),
                         NULL);
    if (r->werr || fsync(r->fd)) /* space may come back: say when to try again */
        return send_error(c, 507, "cannot write the file (disk full?)", "30");
    close(r->fd);
    r->fd = -1;
    fl_store_conn *sc = thread_conn(h);
    if (!sc)
        return send_error(c, 503, "store unavailable", "5");
    char id[2 * FL_SYM_BUILD_ID_MAX + 1], err[512] = "";
    int rc = fl_symingest_file(h->cfg.symingest, sc, r->tmppath, upload_name(c),
                               (long long)r->written, false, id, sizeof id, err, sizeof err);
    r->tmppath[0] = '\0'; /* consumed */
    if (rc == 1)
        return send_json(c, 400, json_pack("{s:s,s:s}", "error", "not a usable debug file",
                                           "reason", err),
                         NULL);
    if (rc == 2) /* the file is fine, the store is not: send it again */
        return send_json(c, 503,
                         json_pack("{s:s,s:s}", "error", "storage unavailable, try again later",
                                   "reason", err),
                         "5");
    if (rc)
        return send_error(c, 500, err, NULL);
    /* A .dwo file has a DWO id instead of a build id. */
    bool dwo = !strncmp(id, FL_DWO_KEY_PREFIX, strlen(FL_DWO_KEY_PREFIX));
    json_t *ans =
        json_pack("{s:s,s:I}", dwo ? "dwo_id" : "build_id",
                  dwo ? id + strlen(FL_DWO_KEY_PREFIX) : id, "size", (json_int_t)r->written);
    if (ans && err[0]) /* a note on success: the stored file was kept */
        json_object_set_new(ans, "note", json_string(err));
    return send_json(c, 201, ans, NULL);
}

static enum MHD_Result api_symbols(fl_http *h, struct MHD_Connection *c)
{
    fl_store_conn *sc = thread_conn(h);
    if (!sc)
        return send_error(c, 503, "store unavailable", "5");
    const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    uint64_t v = 1000;
    if (lim && (fl_parse_u64(lim, &v) || v == 0 || v > 100000))
        return send_error(c, 400, "limit must be 1..100000", NULL);
    json_t *j = h->store->list_symbols(sc, (unsigned)v);
    return j ? send_json(c, 200, j, NULL) : store_failed(h, c, sc);
}

/* The debuginfod protocol: GET /buildid/HEX/debuginfo|executable. */
static enum MHD_Result buildid(fl_http *h, struct MHD_Connection *c, const char *rest)
{
    const char *slash = strchr(rest, '/');
    if (!h->cfg.symingest || !slash || !hex_id_ok(rest, (size_t)(slash - rest)))
        return send_error(c, 404, "not found", NULL);
    char id[2 * FL_SYM_BUILD_ID_MAX + 1];
    memcpy(id, rest, (size_t)(slash - rest));
    id[slash - rest] = '\0';
    lower(id);
    const char *what = slash + 1;
    /* debuginfo: the debug file, else an unstripped executable (it holds
     * the DWARF too); executable: only a file with code. */
    const char *try_[2] = {NULL, NULL};
    if (!strcmp(what, "debuginfo")) {
        try_[0] = "debuginfo";
        try_[1] = "executable";
    } else if (!strcmp(what, "executable")) {
        try_[0] = "executable";
    } else {
        return send_error(c, 404, "not found", NULL);
    }
    /* A file uploaded to another server sharing the store is copied here
     * first, as the workers do: behind a load balancer, every server
     * answers for every upload. */
    if (h->cfg.srvsym) {
        symbols_moved(h, thread_conn(h));
        fl_srvsym_fetch(h->cfg.srvsym, id);
    }
    for (int i = 0; i < 2 && try_[i]; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%.*s/%s/%s", PATH_MAX - 300,
                 fl_symingest_processed_dir(h->cfg.symingest), id, try_[i]);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
            continue;
        if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
            close(fd);
            continue;
        }
        struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
        if (!resp) {
            close(fd);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
        char xf[PATH_MAX];
        snprintf(xf, sizeof xf, "/buildid/%s/%s", id, try_[i]);
        MHD_add_response_header(resp, "X-DEBUGINFOD-FILE", xf);
        char sz[32];
        snprintf(sz, sizeof sz, "%lld", (long long)st.st_size);
        MHD_add_response_header(resp, "X-DEBUGINFOD-SIZE", sz);
        enum MHD_Result rc = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        return rc;
    }
    return send_error(c, 404, "not found", NULL);
}

static bool parse_addr(json_t *a, uint64_t *out)
{
    if (json_is_integer(a) && json_integer_value(a) >= 0) {
        *out = (uint64_t)json_integer_value(a);
        return true;
    }
    /* "0x" and hex digits, or decimal digits, and nothing else: strtoull
     * would skip blanks, take a sign (" -5" is then 2^64-5) and, in base
     * 16, a second "0x" ("0x0x10" was 16). */
    const char *s = json_string_value(a);
    return s && !fl_parse_u64(s, out);
}

static json_t *frame_obj(const fl_sym_frame *f, const char *module, uint64_t addr)
{
    char ab[24];
    snprintf(ab, sizeof ab, "0x%" PRIx64, addr);
    json_t *o = json_object();
    json_object_set_new(o, "function", f && f->function[0] ? json_string(f->function) : json_null());
    json_object_set_new(o, "file", f && f->file[0] ? json_string(f->file) : json_null());
    json_object_set_new(o, "line", f && f->line ? json_integer(f->line) : json_null());
    json_object_set_new(o, "column", f && f->column ? json_integer(f->column) : json_null());
    json_object_set_new(o, "module", module ? json_string(module) : json_null());
    json_object_set_new(o, "address", json_string(ab));
    json_object_set_new(o, "inlined", json_boolean(f && f->inlined));
    return o;
}

static enum MHD_Result api_symbolicate(fl_http *h, req *r)
{
    struct MHD_Connection *c = r->conn;
    if (r->too_big)
        return send_error(c, 413, "body too large", NULL);
    if (!h->cfg.srvsym)
        return send_error(c, 503, "no symbolizer in this process", "30");
    json_error_t je;
    json_t *b = json_loadb(r->body ? r->body : "", r->len, 0, &je);
    const char *id = json_string_value(json_object_get(b, "build_id"));
    json_t *addrs = json_object_get(b, "addresses");
    const char *module = json_string_value(json_object_get(b, "module"));
    if (!b || !id || !hex_id_ok(id, strlen(id)) || !json_is_array(addrs)) {
        json_decref(b);
        return send_error(c, 400,
                          "expected {\"build_id\":\"HEX\",\"addresses\":[\"0x...\",...]}", NULL);
    }
    if (json_array_size(addrs) > MAX_SYMBOLICATE_ADDRS) {
        json_decref(b);
        return send_json(c, 413, json_pack("{s:s,s:i}", "error", "too many addresses", "limit",
                                           MAX_SYMBOLICATE_ADDRS),
                         NULL);
    }
    fl_sym_frame *fr = malloc(SYM_INLINE * sizeof *fr);
    json_t *res = json_array();
    bool any_symbols = false;
    for (size_t i = 0; fr && i < json_array_size(addrs); i++) {
        uint64_t a;
        if (!parse_addr(json_array_get(addrs, i), &a)) {
            free(fr);
            json_decref(res);
            json_decref(b);
            return send_error(c, 400, "addresses must be \"0xHEX\" strings or integers", NULL);
        }
        int n = fl_srvsym_lookup(h->cfg.srvsym, id, NULL, a, fr, SYM_INLINE);
        any_symbols |= n >= 0;
        json_t *frames = json_array();
        for (int k = 0; k < n; k++)
            json_array_append_new(frames, frame_obj(&fr[k], module, a));
        if (n <= 0)
            json_array_append_new(frames, frame_obj(NULL, module, a));
        char ab[24];
        snprintf(ab, sizeof ab, "0x%" PRIx64, a);
        json_array_append_new(res, json_pack("{s:s,s:o}", "address", ab, "frames", frames));
    }
    char idl[2 * FL_SYM_BUILD_ID_MAX + 1];
    snprintf(idl, sizeof idl, "%s", id);
    lower(idl);
    json_decref(b);
    if (!fr) {
        json_decref(res);
        return send_error(c, 500, "out of memory", NULL);
    }
    free(fr);
    if (!any_symbols && json_array_size(res)) {
        json_decref(res);
        return send_json(c, 404, json_pack("{s:s,s:s}", "error", "no debug information for this build id",
                                           "build_id", idl),
                         NULL);
    }
    return send_json(c, 200, json_pack("{s:s,s:o}", "build_id", idl, "results", res), NULL);
}

typedef struct xres {
    fl_srvsym *s;
    fl_sym_frame f[FL_XMLSYM_MAX_FRAMES];
} xres;

static size_t xml_resolve(void *ctx, const fl_xmlsym_module *mod, uint64_t rel,
                          fl_symframe *frames, size_t max)
{
    xres *x = ctx;
    if (!mod->build_id)
        return 0;
    size_t cap = max < FL_XMLSYM_MAX_FRAMES ? max : FL_XMLSYM_MAX_FRAMES;
    int n = fl_srvsym_lookup(x->s, mod->build_id, mod->path, rel, x->f, cap);
    for (int i = 0; i < n; i++) {
        frames[i].function = x->f[i].function[0] ? x->f[i].function : NULL;
        frames[i].file = x->f[i].file[0] ? x->f[i].file : NULL;
        frames[i].line = x->f[i].line;
        frames[i].column = x->f[i].column;
        frames[i].inlined = x->f[i].inlined;
    }
    return n > 0 ? (size_t)n : 0;
}

static enum MHD_Result xml_symbolicate(fl_http *h, req *r)
{
    struct MHD_Connection *c = r->conn;
    if (!h->cfg.srvsym)
        return send_error(c, 503, "no symbolizer in this process", "30");
    char *resp = NULL, err[512];
    size_t rl = 0;
    int rc;
    if (r->too_big) {
        rc = FL_XMLSYM_ETOOBIG;
        fl_xmlsym_error_response(rc, "request too large", &resp, &rl);
    } else {
        xres *x = calloc(1, sizeof *x);
        if (!x)
            return send_error(c, 500, "out of memory", NULL);
        x->s = h->cfg.srvsym;
        rc = fl_xmlsym_handle(r->body ? r->body : "", r->len, xml_resolve, x, &resp, &rl, err,
                              sizeof err);
        free(x);
    }
    if (!resp)
        return send_error(c, 500, "out of memory", NULL);
    unsigned status = rc == 0                      ? 200
                      : rc == FL_XMLSYM_ETOOBIG    ? 413
                      : rc == FL_XMLSYM_EMALFORMED || rc == FL_XMLSYM_EDOCTYPE ||
                              rc == FL_XMLSYM_ESCHEMA
                          ? 400
                          : 500;
    struct MHD_Response *m =
        MHD_create_response_from_buffer(rl, resp, MHD_RESPMEM_MUST_FREE);
    if (!m) {
        free(resp);
        return MHD_NO;
    }
    MHD_add_response_header(m, "Content-Type", "application/xml; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(c, status, m);
    MHD_destroy_response(m);
    return ret;
}

/* ---- dispatch */

/* For fl_projects_lookup(): this thread's store connection. */
static fl_store_conn *projects_conn(void *h)
{
    return thread_conn(h);
}

static bool is_ingest_path(const char *url)
{
    return !strcmp(url, "/") || !strcmp(url, "/api/v1/crashes") || !strcmp(url, "/api/v1/crashes/");
}

/* The methods a path answers to, for a 405's Allow; NULL for a path that
 * is none of ours (404).  first_call() answers 405 when the path does not
 * take the request's method -- before the admin token is asked for, so
 * that an ingest client that used the wrong method is told that, not to
 * bring a token. */
static const char *allow_of(const char *url)
{
    static const char *const get_only[] = {"/healthz",        "/metrics",        "/portal.js",
                                           "/portal.css",     "/favicon.ico",    "/api/v1/groups",
                                           "/api/v1/groups/", "/api/v1/trends",  "/api/v1/trends/"};
    for (size_t i = 0; i < sizeof get_only / sizeof *get_only; i++)
        if (!strcmp(url, get_only[i]))
            return "GET, HEAD";
    if (!strcmp(url, "/") || !strcmp(url, "/api/v1/symbols") ||
        !strcmp(url, "/api/v1/symbols/") || !strcmp(url, "/api/v1/projects") ||
        !strcmp(url, "/api/v1/projects/"))
        return "GET, HEAD, POST";
    if (is_ingest_path(url) || !strcmp(url, "/api/v1/symbolicate") ||
        !strcmp(url, "/symbolicate") || is_reprocess(url) || is_merge(url) || is_unmerge(url))
        return "POST";
    if (!strncmp(url, "/buildid/", 9))
        return "GET, HEAD";
    if (!strncmp(url, "/api/v1/groups/", 15))
        return strchr(url + 15, '/') ? "GET, HEAD" /* its /crashes */ : "GET, HEAD, PATCH, DELETE";
    if (!strncmp(url, "/api/v1/crashes/", 16) && url[16])
        return strchr(url + 16, '/') ? "GET, HEAD" /* its /contexts, /source, /minidump */
                                     : "GET, HEAD, DELETE";
    if (!strncmp(url, "/api/v1/projects/", 17) && url[17]) {
        const char *k = strchr(url + 17, '/');
        if (k && !strcmp(k, "/keys"))
            return "POST";
        if (k && !strncmp(k, "/keys/", 6) && k[6] && !strchr(k + 6, '/'))
            return "DELETE";
    }
    return NULL;
}

/* An admin route asked without the admin token: answered 401 after its
 * body, read and dropped, as ingest's refusals are (answer_after_body says
 * why: behind a reverse proxy an answer before the body became a 502), up
 * to MAX_DRAINED_BODY -- an admin route takes less -- and within
 * --request-timeout (r->late).  A client that waits for a go-ahead, or
 * says its body is larger, is answered at once. */
static enum MHD_Result refuse_admin(req *r)
{
    if (!answer_after_body(r->conn)) {
        r->state = ST_DONE;
        return send_error(r->conn, 401, admin_refusal(r->conn, r->report), NULL);
    }
    r->kind = K_REFUSED;
    r->late = LATE_UNAUTHORIZED;
    return MHD_YES;
}

/* Whether METHOD is in ALLOW ("GET, HEAD, POST"). */
static bool allows(const char *allow, const char *method)
{
    size_t n = strlen(method);
    for (const char *p = allow; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, method, n))
            return true;
        p += k;
        p += strspn(p, ", ");
    }
    return false;
}

static enum MHD_Result first_call(fl_http *h, req *r, const char *url, const char *method)
{
    struct MHD_Connection *c = r->conn;
    if (h->cfg.health_only) {
        /* A worker's listener: what a balancer and a scraper ask of it. */
        r->kind = K_OTHER;
        if (strcmp(url, "/healthz") && strcmp(url, "/metrics")) {
            r->state = ST_DONE;
            return send_error(c, 404, "not found: a worker serves /healthz and /metrics only",
                              NULL);
        }
        return MHD_YES;
    }
    if (!strcmp(method, "POST") && is_ingest_path(url)) {
        r->kind = K_INGEST;
        const char *key = ingest_key(c);
        /* Keyless means without a key: a key given is checked (a revoked
         * project key must not land in the default project). */
        bool keyless = h->cfg.keyless_ingest && !strcmp(url, "/") && !(key && *key);
        r->project[0] = '\0';
        /* The default project's key first: the common case costs no lock. */
        bool dflt = fl_secret_eq(key, h->cfg.ingest_key);
        int pr = !dflt && key && *key
                     ? fl_projects_lookup(h->projects, h->store, projects_conn, h, key, r->project)
                     : 0;
        if (pr < 0)
            return refuse_ingest(r, LATE_UNAVAILABLE);
        if (!dflt && pr == 0 && !keyless)
            /* Compared in constant time too, and only once refused: the
             * admin token is a secret as the keys are. */
            return refuse_ingest(r, fl_secret_eq(key, h->cfg.admin_token) ? LATE_ADMIN_AS_KEY
                                                                          : LATE_UNAUTHORIZED);
        if (!rate_ok(h, key))
            return refuse_ingest(r, LATE_RATE_LIMITED);
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        uint64_t n;
        if (cl && !fl_parse_u64(cl, &n) && n > h->cfg.max_body) {
            /* Answered before the body only when the client waits for a
             * go-ahead (Expect: 100-continue) and so sends none.  A client
             * already sending it -- a reverse proxy such as nginx always
             * is, whatever its client asked -- would have the connection
             * closed under it with the body unread, the kernel resets it,
             * and the proxy turns the 413 into a 502: a reporter then
             * keeps the log and tries it again every pass (and, taking a
             * 502 for a busy server, none of the logs after it).  So the
             * body is read and dropped (too_big) and answered 413 once
             * whole, within --request-timeout. */
            const char *ex = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
            if ((ex && !strcasecmp(ex, "100-continue")) || n > MAX_DRAINED_BODY)
                return reject(r, FL_REJ_TOO_LARGE, 413,
                              json_pack("{s:s,s:I}", "error", "request body too large", "limit",
                                        (json_int_t)h->cfg.max_body),
                              NULL);
            r->too_big = true;
        }
        return MHD_YES;
    }
    /* After ingest, which is most requests: a known path asked with a
     * method it does not take. */
    r->report = report_like(c, method);
    const char *allow = allow_of(url);
    if (allow && !allows(allow, method)) {
        r->kind = K_OTHER;
        if (answer_after_body(c)) {
            /* Its body first, as the refusals of ingest and the admin
             * routes: answered before it, behind a proxy the 405 becomes
             * a 502. */
            r->allow = allow;
            return MHD_YES;
        }
        r->state = ST_DONE;
        return send_405(c, allow, r->report);
    }
    if (!strcmp(method, "POST") &&
        (!strcmp(url, "/api/v1/symbols") || !strcmp(url, "/api/v1/symbols/"))) {
        r->kind = K_SYMUP;
        return sym_upload_start(h, r);
    }
    if (!strcmp(method, "POST") && (!strcmp(url, "/api/v1/symbolicate") || !strcmp(url, "/symbolicate"))) {
        if (!admin_ok(h, c))
            return refuse_admin(r);
        r->kind = url[1] == 'a' ? K_SYMJSON : K_SYMXML;
        return MHD_YES;
    }
    if (!strcmp(method, "POST") && is_reprocess(url)) {
        if (!admin_ok(h, c))
            return refuse_admin(r);
        r->kind = K_REPROCESS;
        return MHD_YES;
    }
    if (!strcmp(method, "DELETE") && !strncmp(url, "/api/v1/crashes/", 16) && url[16] &&
        !strchr(url + 16, '/')) {
        if (!admin_ok(h, c))
            return refuse_admin(r);
        r->kind = K_DELETE;
        return MHD_YES;
    }
    if (!strcmp(method, "DELETE") && !strncmp(url, "/api/v1/groups/", 15) && url[15] &&
        !strchr(url + 15, '/')) {
        if (!admin_ok(h, c))
            return refuse_admin(r);
        r->kind = K_GDELETE;
        return MHD_YES;
    }
    if ((!strcmp(method, "POST") || !strcmp(method, "DELETE")) &&
        !strncmp(url, "/api/v1/projects", 16) && (!url[16] || url[16] == '/')) {
        if (!admin_ok(h, c))
            return refuse_admin(r);
        r->kind = K_PROJECT;
        return MHD_YES;
    }
    if (!strcmp(method, "POST") && (is_merge(url) || is_unmerge(url))) {
        if (!admin_ok(h, c))
            return refuse_admin(r);
        r->kind = is_merge(url) ? K_MERGE : K_UNMERGE;
        return MHD_YES;
    }
    if (!strcmp(method, "PATCH") && !strncmp(url, "/api/v1/groups/", 15)) {
        if (!admin_ok(h, c))
            return refuse_admin(r);
        r->kind = K_PATCH;
        return MHD_YES;
    }
    /* The other admin routes.  A path under /api/ that names none is 404
     * with or without the token (route_other): a reporter given a wrong
     * URL is told that, not to bring the admin token. */
    if (!strncmp(url, "/api/", 5) && allow && !admin_ok(h, c))
        return refuse_admin(r);
    r->kind = K_OTHER;
    return MHD_YES;
}

/* 200 {"status":"ok"}, or 503 {"status":"degraded", ...} with
 *   "storage":{path: why, since, failures} while the last transaction of
 *     ingest or processing failed: this server cannot keep reports then
 *     (ingest) or falls behind (processing);
 *   "backlog":{depth, max, error} while the processing backlog is at
 *     --max-backlog (a server that ingests): ingest answers 503 then;
 * either way a balancer should send reports elsewhere.  And 200
 * {"status":"degraded", "queue":{error, since}} while the broker refused
 * the writer's last publish or sweep (away, or not answering): reports
 * are stored and answered 200, not processed until it answers.  Not a
 * 503: every API server shares the broker, and a balancer that took them
 * all out would turn away the reports they can keep. */
static enum MHD_Result healthz(fl_http *h, struct MHD_Connection *c)
{
    json_t *bad = json_object(), *body = json_pack("{s:s}", "status", "degraded");
    for (int i = 0; bad && i < FL_HEALTH_COUNT; i++) {
        fl_health_state hs;
        fl_health_get(&h->m->health, i, &hs);
        if (!hs.failing)
            continue;
        char since[32];
        fl_iso_time(hs.since, since);
        json_object_set_new(bad, fl_health_path_name(i),
                            json_pack("{s:s,s:s,s:I}", "error", hs.why, "since", since, "failures",
                                      (json_int_t)hs.run));
    }
    if (bad && json_object_size(bad))
        json_object_set(body, "storage", bad);
    json_decref(bad);
    /* A broker away or not answering: reports are still stored and
     * answered 200, but no worker gets them until it answers. */
    char qwhy[320];
    int64_t qsince = 0;
    if (fl_writer_queue_state(h->writer, qwhy, sizeof qwhy, &qsince)) {
        char since[32];
        fl_iso_time(qsince, since);
        json_object_set_new(body, "queue", json_pack("{s:s,s:s}", "error", qwhy, "since", since));
    }
    int64_t depth;
    if (!h->cfg.health_only && backlog_full(h, &depth))
        json_object_set_new(body, "backlog",
                            json_pack("{s:I,s:I,s:s}", "depth", (json_int_t)depth, "max",
                                      (json_int_t)h->cfg.max_backlog, "error",
                                      "processing backlog full"));
    size_t refusing = json_object_size(body) - 1 - (json_object_get(body, "queue") != NULL);
    if (json_object_size(body) > 1)
        return send_json(c, refusing ? 503 : 200, body, NULL);
    json_decref(body);
    return send_json(c, 200, json_pack("{s:s}", "status", "ok"), NULL);
}

/* A path under /api/ that names no route. */
#define NO_ROUTE "not found: no such route (reports go to POST /api/v1/crashes or POST /)"

static enum MHD_Result route_other(fl_http *h, req *r, const char *url, const char *method)
{
    struct MHD_Connection *c = r->conn;
    r->state = ST_DONE;
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (!strcmp(url, "/healthz"))
        return healthz(h, c);
    if (!strcmp(url, "/metrics"))
        return metrics(h, c);
    if (!strncmp(url, "/buildid/", 9))
        return buildid(h, c, url + 9);
    if (!strncmp(url, "/api/", 5)) {
        if (!allow_of(url))
            return send_error(c, 404, NO_ROUTE, NULL);
        if (!admin_ok(h, c))
            return send_error(c, 401, admin_refusal(c, report_like(c, method)), NULL);
        if (!get)
            return send_error(c, 404, "not found", NULL);
        /* The query arguments of each read route (docs/http-api.md). */
        static const char *const groups_args[] = {"project", "app",  "version", "status", "q",
                                                  "install", "sort", "limit",   "offset", NULL};
        static const char *const crashes_args[] = {"limit", "offset", "install", NULL};
        static const char *const source_args[] = {"thread", "frame", "context", NULL};
        static const char *const symbols_args[] = {"limit", NULL};
        static const char *const trends_args[] = {"app", "days", NULL};
        static const char *const no_args[] = {NULL};
        const char *const *known = no_args;
        if (!strcmp(url, "/api/v1/groups") || !strcmp(url, "/api/v1/groups/"))
            known = groups_args;
        else if (!strncmp(url, "/api/v1/groups/", 15) && strstr(url + 15, "/crashes"))
            known = crashes_args;
        else if (!strncmp(url, "/api/v1/crashes/", 16) && strstr(url + 16, "/source"))
            known = source_args;
        else if (!strcmp(url, "/api/v1/symbols") || !strcmp(url, "/api/v1/symbols/"))
            known = symbols_args;
        else if (!strcmp(url, "/api/v1/trends") || !strcmp(url, "/api/v1/trends/"))
            known = trends_args;
        enum MHD_Result refused;
        if (unknown_arg(c, known, &refused))
            return refused;
        if (!strcmp(url, "/api/v1/groups") || !strcmp(url, "/api/v1/groups/"))
            return api_groups(h, c);
        if (!strncmp(url, "/api/v1/groups/", 15)) {
            const char *tail = strchr(url + 15, '/');
            if (tail && !strcmp(tail, "/crashes")) {
                char id[64];
                size_t n = (size_t)(tail - (url + 15));
                if (n >= sizeof id)
                    return send_error(c, 404, "no such group", NULL);
                memcpy(id, url + 15, n);
                id[n] = '\0';
                return api_group_crashes(h, c, id);
            }
            if (tail)
                return send_error(c, 404, NO_ROUTE, NULL);
            return api_get(h, c, true, url + 15);
        }
        if (!strncmp(url, "/api/v1/crashes/", 16) && url[16]) {
            const char *tail = strchr(url + 16, '/');
            if (tail && (!strcmp(tail, "/contexts") || !strcmp(tail, "/source") ||
                         !strcmp(tail, "/minidump"))) {
                char id[FL_CRASH_ID_MAX];
                size_t n = (size_t)(tail - (url + 16));
                if (n >= sizeof id)
                    return send_error(c, 404, "no such crash", NULL);
                memcpy(id, url + 16, n);
                id[n] = '\0';
                return tail[1] == 'c'   ? api_contexts(h, c, id)
                       : tail[1] == 'm' ? api_minidump(h, c, id)
                                        : api_source(h, r, id);
            }
            if (tail)
                return send_error(c, 404, NO_ROUTE, NULL);
            return api_get(h, c, false, url + 16);
        }
        if (!strcmp(url, "/api/v1/symbols") || !strcmp(url, "/api/v1/symbols/"))
            return api_symbols(h, c);
        if (!strcmp(url, "/api/v1/trends") || !strcmp(url, "/api/v1/trends/"))
            return api_trends(h, c);
        if (!strcmp(url, "/api/v1/projects") || !strcmp(url, "/api/v1/projects/"))
            return api_projects(h, c);
        return send_error(c, 404, "not found", NULL);
    }
    if (get && (!strcmp(url, "/portal.js") || !strcmp(url, "/portal.css")))
        return send_asset(c, url);
    if (get && !strcmp(url, "/favicon.ico")) { /* browsers ask; nothing to show */
        struct MHD_Response *none = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
        enum MHD_Result rc = none ? MHD_queue_response(c, 204, none) : MHD_NO;
        if (none)
            MHD_destroy_response(none);
        return rc;
    }
    if (!strcmp(url, "/") && get) {
        /* A browser gets the portal; curl and scripts a line of help. */
        const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
        if (accept && strstr(accept, "text/html"))
            return send_asset(c, "/index.html");
        char *s = strdup("faultline server: POST crash logs to / or /api/v1/crashes; the API "
                         "lives under /api/v1 (docs/http-api.md); the portal is here, in a "
                         "browser.\n");
        return s ? send_text(c, 200, "text/plain; charset=utf-8", s, NULL) : MHD_NO;
    }
    return send_error(c, 404, r->report ? "not found: " INGEST_HINT : "not found", NULL);
}

/* The request on c is no longer held to --request-timeout. */
static void conn_exempt(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    cctx *x = ci ? ci->socket_context : NULL;
    if (x)
        x->exempt = true;
}

/* Shuts the connections whose request has not arrived whole within
 * --request-timeout, and those whose client has gone before its request
 * arrived whole (or between requests); libmicrohttpd then sees the socket
 * end and closes it.  Twice a second at most.
 *
 * The second because libmicrohttpd (0.9.75) misses the end of a
 * connection whose last bytes came with it: a client that sent part of a
 * request and closed left its connection open in CLOSE-WAIT until
 * --timeout (93 of 100 such connections, 2 s after), holding one of the
 * loop's 4,096 without holding a socket of its own.  A request that has
 * arrived whole (exempt) is left alone: its client may have only shut
 * its side down and still wait for the answer; so is one with bytes not
 * read yet. */
static void slow_scan(struct loop *L)
{
    unsigned limit = L->h->cfg.request_timeout_s;
    uint64_t now = fl_mono_ns();
    if (!limit || now < L->next_scan_ns)
        return;
    L->next_scan_ns = now + 500000000ull;
    size_t n = 0;
    for (cctx *x = L->conns_head; x; x = x->next) {
        if (x->exempt)
            continue;
        if (now - x->since_ns > (uint64_t)limit * 1000000000ull) {
            x->exempt = true; /* once */
            shutdown(x->fd, SHUT_RDWR);
            FL_M_ADD(L->h->m->rejected[FL_REJ_TOO_SLOW], 1);
            continue;
        }
        if (n == L->scan_cap) {
            size_t nc = n ? 2 * n : 64;
            struct pollfd *np = realloc(L->scan, nc * sizeof *np);
            if (!np)
                break; /* the others at the next scan */
            L->scan = np;
            L->scan_cap = nc;
        }
        L->scan[n++] = (struct pollfd){.fd = x->fd, .events = POLLRDHUP};
    }
    /* One poll() for all of them; the list is unchanged meanwhile (only
     * this thread changes it). */
    if (!n || poll(L->scan, n, 0) <= 0)
        return;
    for (size_t i = 0; i < n; i++) {
        /* Gone, and nothing of it left unread: bytes still in the socket
         * (a request sent with its end, on a connection accepted in this
         * pass) are libmicrohttpd's to read first. */
        int unread = 0;
        if ((L->scan[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) &&
            !ioctl(L->scan[i].fd, FIONREAD, &unread) && unread == 0)
            shutdown(L->scan[i].fd, SHUT_RDWR);
    }
}

/* A K_REFUSED request's body: counted (in written) and dropped, then
 * answered 401.  A chunked body gives no length to refuse it by at its
 * headers: past MAX_DRAINED_BODY the connection is closed. */
static enum MHD_Result refused_body(req *r, size_t *size)
{
    if (*size) {
        r->written += *size;
        *size = 0;
        return r->written > MAX_DRAINED_BODY ? MHD_NO : MHD_YES;
    }
    conn_exempt(r->conn); /* received whole */
    r->state = ST_DONE;
    return send_error(r->conn, 401, admin_refusal(r->conn, r->report), NULL);
}

/* The URL's and query's %-escapes decoded, but for %00: libmicrohttpd's
 * own decoder made it a NUL, which cut the path short, so that
 * /api/v1/crashes/ID%00/minidump was routed as /api/v1/crashes/ID.  Kept
 * as the three characters, it matches no route and no id. */
static int hexval(char ch)
{
    return ch >= '0' && ch <= '9'   ? ch - '0'
           : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                    : -1;
}

static size_t unescape_keep_nul(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    char *w = s;
    for (const char *p = s; *p;) {
        int hi = p[0] == '%' ? hexval(p[1]) : -1, lo = hi >= 0 ? hexval(p[2]) : -1;
        if (lo >= 0 && (hi | lo)) {
            *w++ = (char)(hi * 16 + lo);
            p += 3;
        } else {
            *w++ = *p++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* Headers that would let a front and this server see different requests
 * in the same bytes (request smuggling: a second request hidden in the
 * first one's body, run with whatever credentials it carries).
 * libmicrohttpd 0.9.75 takes chunked over a Content-Length, the first of
 * two Content-Lengths, and a header value with a bare CR; RFC 9112 says
 * such a request is an error and its connection is closed. */
typedef struct framing {
    unsigned cl, te;
    bool te_other, ctl;
    unsigned hosts;   /* Host headers, and the first one's value: counted */
    const char *host; /* here, as every header is looked at anyway */
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    framing *f = cls;
    if (!strcasecmp(key, "Content-Length"))
        f->cl++;
    else if (!strcasecmp(key, "Transfer-Encoding")) {
        f->te++;
        f->te_other |= !value || strcasecmp(value, "chunked");
    } else if (!strcasecmp(key, "Host") && !f->hosts++)
        f->host = value;
    for (const char *p = key; *p && !f->ctl; p++)
        f->ctl = (unsigned char)*p < 0x20 || *p == 0x7f;
    for (const char *p = value ? value : ""; *p && !f->ctl; p++)
        f->ctl = ((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f;
    return MHD_YES;
}

/* NULL, or why the request's framing is refused; *f: its headers as
 * counted. */
static const char *bad_framing(struct MHD_Connection *c, framing *f)
{
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, f);
    if (f->cl && f->te)
        return "both Content-Length and Transfer-Encoding: ambiguous framing";
    if (f->cl > 1)
        return "more than one Content-Length";
    if (f->te > 1 || f->te_other)
        return "Transfer-Encoding other than a single chunked is not supported";
    if (f->ctl)
        return "a control character in a header";
    return NULL;
}

/* The Host check (fl_hostcheck.h), against DNS rebinding: a page whose
 * name was made to resolve to this server reads, through its visitor's
 * browser, whatever needs no credentials (/metrics, /buildid/...,
 * /healthz, the portal's files).  Before any route, ingest included.
 * NULL when the request goes on or is misdirected (*misdirected: answered
 * 421 by refuse_early), else why it is a 400: RFC 9112 asks for one Host
 * in HTTP/1.1, and two could name different servers to a front and to
 * this one.  An HTTP/1.0 request may come without (no browser sends
 * one).  Only counts and compares when the check is on. */
static const char *bad_host(fl_http *h, const framing *f, const char *version, bool *misdirected)
{
    *misdirected = false;
    if (!fl_hostcheck_active(h->hosts))
        return NULL;
    if (f->hosts > 1)
        return "more than one Host header";
    if (!f->hosts)
        return strcmp(version, MHD_HTTP_VERSION_1_0) ? "no Host header (HTTP/1.1 asks for one)"
                                                     : NULL;
    *misdirected = !fl_hostcheck_ok(h->hosts, f->host);
    return NULL;
}

static log_gate misdirected_gate = {PTHREAD_MUTEX_INITIALIZER, 0, 0};

/* Refusals before any route, answered after the body (refuse_early). */
enum { REFUSED_NONE, REFUSED_HOST, REFUSED_ARGS };

/* More query parameters than this are answered 414: 64, or with a
 * --max-header under 16 KiB one per 256 bytes of it (16 at 4 KiB).
 * libmicrohttpd keeps each in the connection's memory (--max-header: 48
 * bytes a parameter besides its text, and half of it is the read buffer),
 * and when they overflow it it closes the connection without an answer --
 * ~250 of them with the default 16 KiB, ~40 with 4 KiB; its own 431 finds
 * no memory left either.  No route takes more than nine. */
static unsigned max_query_args(const fl_http *h)
{
    size_t n = h->cfg.max_header / 256;
    return n < 16 ? 16 : n > 64 ? 64 : (unsigned)n;
}

/* A request with more than max_query_args() query parameters: what
 * count_args gives libmicrohttpd to hand the handler as its *con_cls. */
static char too_many_args;

/* libmicrohttpd's URI callback (MHD_OPTION_URI_LOG_CALLBACK), which it
 * calls with the request line's target before it parses the query, in the
 * same buffer: a query of too many parameters is cut at its '?', so that
 * libmicrohttpd parses none and the handler can answer 414 (an answer the
 * client can read, not a closed connection). */
static void *count_args(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)c;
    const char *q = strchr(uri, '?');
    if (!q)
        return NULL;
    unsigned n = 1, max = max_query_args(cls);
    for (const char *p = q + 1; (p = strchr(p, '&')); p++)
        if (++n > max) {
            ((char *)q)[1] = '\0'; /* libmicrohttpd's own buffer, not a constant */
            return &too_many_args;
        }
    return NULL;
}

/* The Host of the request on c, cut short and shown safe (the client's
 * bytes, bound for JSON and the log). */
static void host_shown(struct MHD_Connection *c, char out[81])
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    size_t n = 0;
    for (; v && v[n] && n < 80; n++)
        out[n] = v[n] >= 0x20 && v[n] < 0x7f && v[n] != '\'' ? v[n] : '?';
    out[n] = '\0';
}

static enum MHD_Result send_refusal(fl_http *h, struct MHD_Connection *c, int refused)
{
    if (refused == REFUSED_ARGS) {
        char msg[128];
        unsigned max = max_query_args(h);
        snprintf(msg, sizeof msg, "too many query parameters: at most %u", max);
        return send_json(c, 414, json_pack("{s:s,s:i}", "error", msg, "limit", (int)max), NULL);
    }
    char host[81], msg[256];
    host_shown(c, host);
    snprintf(msg, sizeof msg,
             "misdirected request: Host '%s' is not a name of this server (faultline serve "
             "--allowed-host sets the names it answers to)",
             host);
    return send_json(c, 421, json_pack("{s:s,s:s}", "error", msg, "host", host), NULL);
}

/* A request refused before any route (REFUSED_*): after its body, as the
 * other refusals (answer_after_body says why).  A Host this server does
 * not answer to (421) also makes a line in the log: a reverse proxy that
 * passes its clients' Host on is told to the operator, not only to them. */
static enum MHD_Result refuse_early(req *r, int refused)
{
    unsigned long dropped;
    if (refused == REFUSED_HOST && log_gate_pass(&misdirected_gate, &dropped)) {
        char host[81];
        host_shown(r->conn, host);
        if (dropped)
            fl_log(stderr,
                   "faultline serve: http: a request for Host '%s' answered 421: not a name of "
                   "this server (--allowed-host) [%lu more since the last line]",
                   host, dropped);
        else
            fl_log(stderr,
                   "faultline serve: http: a request for Host '%s' answered 421: not a name of "
                   "this server (--allowed-host)",
                   host);
    }
    r->kind = K_OTHER;
    if (answer_after_body(r->conn)) {
        r->refused = refused;
        return MHD_YES;
    }
    r->state = ST_DONE;
    return send_refusal(r->h, r->conn, refused);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    fl_http *h = cls;
    bool many_args = *con_cls == &too_many_args;
    req *r = many_args ? NULL : *con_cls;
    if (!r) {
        if (!(r = spare_req()))
            return MHD_NO;
        r->h = h;
        r->conn = c;
        r->fd = -1;
        *con_cls = r;
        FL_M_ADD(h->m->requests, 1);
        framing f = {0};
        bool misdirected = false;
        const char *bad = bad_framing(c, &f);
        if (!bad)
            bad = bad_host(h, &f, version, &misdirected);
        if (bad) {
            r->kind = K_OTHER;
            r->state = ST_DONE;
            char *text = jdump(json_pack("{s:s}", "error", bad));
            /* Out of memory: closing the connection is the point anyway. */
            return text ? send_text_hdr(c, 400, "application/json", text, "Connection", "close")
                        : MHD_NO;
        }
        enum MHD_Result res = misdirected ? refuse_early(r, REFUSED_HOST)
                              : many_args ? refuse_early(r, REFUSED_ARGS)
                                          : first_call(h, r, url, method);
        /* Its headers are in: only a report's body is still held to the
         * request deadline (a symbol upload may rightly take minutes), the
         * body of any request refused already, and one sent to a path that
         * reads none, all dropped as they come: a client trickling a body
         * nobody reads would otherwise hold its connection for good. */
        if (r->kind != K_INGEST && !r->late && !(r->kind == K_OTHER && has_body(c)))
            conn_exempt(c);
        return res;
    }
    /* A request with the writer is called again on every pass of its loop
     * until the writer has answered: the state is the writer's to change. */
    if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == ST_WAIT)
        return MHD_YES;
    if ((r->state == ST_DONE && !r->resumed) || (r->kind == K_OTHER && *upload_data_size)) {
        /* An early answer was queued, or a body nobody reads: drop it, up
         * to MAX_DRAINED_BODY (then the connection is closed). */
        r->written += *upload_data_size;
        *upload_data_size = 0;
        return r->kind == K_OTHER && r->written > MAX_DRAINED_BODY ? MHD_NO : MHD_YES;
    }
    if (r->kind == K_OTHER) {
        conn_exempt(c); /* received whole */
        if (r->state == ST_DONE && r->resumed) {
            /* Answered by a source fetch's thread (api_source). */
            r->loop->waiting--;
            MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)h->cfg.timeout_s);
            char *a = r->answer;
            r->answer = NULL;
            r->resumed = false;
            return a ? send_text(c, r->status, "application/json", a, r->retry_after) : MHD_NO;
        }
        if (r->refused) {
            r->state = ST_DONE;
            return send_refusal(h, c, r->refused);
        }
        if (r->allow) {
            r->state = ST_DONE;
            return send_405(c, r->allow, r->report);
        }
        return route_other(h, r, url, method);
    }
    if (r->kind == K_REFUSED)
        return refused_body(r, upload_data_size);

    if (*upload_data_size && r->kind == K_SYMUP) {
        sym_upload_chunk(h, r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        size_t limit = r->kind == K_PATCH || r->kind == K_REPROCESS || r->kind == K_PROJECT ||
                               r->kind == K_DELETE || r->kind == K_MERGE || r->kind == K_UNMERGE ||
                               r->kind == K_GDELETE
                           ? MAX_JSON_BODY
                       : r->kind == K_SYMJSON ? MAX_SYMBOLICATE_BODY
                       : r->kind == K_SYMXML  ? FL_XMLSYM_MAX_REQUEST
                                              : h->cfg.max_body;
        if (r->too_big || r->len + n > limit) {
            r->too_big = true; /* keep reading (and dropping) to answer 413 */
            return MHD_YES;
        }
        if (r->kind == K_INGEST && (r->busy || !charge(r, n))) {
            /* Over --max-memory: keep reading (and dropping) to answer
             * 503, and let go of what this one holds now. */
            if (!r->busy)
                uncharge(r);
            r->busy = true;
            r->len = 0;
            return MHD_YES;
        }
        if (r->len + n + 1 > r->cap) {
            size_t nc = r->cap ? r->cap : 8192;
            while (nc < r->len + n + 1)
                nc *= 2;
            char *nb = realloc(r->body, nc);
            if (!nb)
                return MHD_NO;
            r->body = nb;
            r->cap = nc;
        }
        memcpy(r->body + r->len, upload_data, n);
        r->len += n;
        r->body[r->len] = '\0';
        return MHD_YES;
    }
    conn_exempt(c); /* received whole: the time from here on is ours */
    if (r->state == ST_DONE) {
        /* Answered by the writer: send it (none: out of memory, so close
         * the connection rather than leave the client waiting). */
        r->loop->waiting--;
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)h->cfg.timeout_s);
        if (r->kind != K_GDELETE) /* its thread made its answer */
            ingest_answer(r);
        char *a = r->answer;
        r->answer = NULL;
        r->resumed = false;
        if (!a)
            return MHD_NO;
        return send_text(c, r->status, "application/json", a, r->retry_after);
    }
    if (r->kind == K_PATCH) {
        r->state = ST_DONE;
        return api_patch_group(h, r, url + 15);
    }
    if (r->kind == K_PROJECT) {
        r->state = ST_DONE;
        return api_project_change(h, r, url, method);
    }
    if (r->kind == K_MERGE) {
        r->state = ST_DONE;
        return api_merge_groups(h, r, url);
    }
    if (r->kind == K_UNMERGE) {
        r->state = ST_DONE;
        return api_unmerge_group(h, c, url);
    }
    if (r->kind == K_REPROCESS) {
        r->state = ST_DONE;
        return api_reprocess(h, c, url);
    }
    if (r->kind == K_DELETE) {
        r->state = ST_DONE;
        return api_delete_crash(h, c, url + 16);
    }
    if (r->kind == K_GDELETE) {
        r->state = ST_DONE; /* or ST_WAIT: its thread answers */
        return api_delete_group(h, r, url + 15);
    }
    if (r->kind == K_SYMUP)
        return sym_upload_finish(h, r);
    if (r->kind == K_SYMJSON || r->kind == K_SYMXML) {
        r->state = ST_DONE;
        return r->kind == K_SYMJSON ? api_symbolicate(h, r) : xml_symbolicate(h, r);
    }
    return ingest_finish(r);
}

/* Counts each loop's connections, for /metrics: how evenly the kernel
 * spreads them is what the loops' share of the work follows. */
static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe)
{
    (void)cls;
    cctx *x = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED && tl_loop && !x) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci && (x = calloc(1, sizeof *x))) {
            x->loop = tl_loop;
            x->fd = ci->connect_fd;
            x->since_ns = fl_mono_ns();
            x->next = tl_loop->conns_head;
            if (x->next)
                x->next->prev = x;
            tl_loop->conns_head = x;
            *socket_context = x;
        }
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && x) {
        if (x->prev)
            x->prev->next = x->next;
        else
            x->loop->conns_head = x->next;
        if (x->next)
            x->next->prev = x->prev;
        free(x);
        *socket_context = NULL;
    }
    if (tl_loop) {
        __atomic_add_fetch(&tl_loop->conns, toe == MHD_CONNECTION_NOTIFY_STARTED ? 1u : -1u,
                           __ATOMIC_RELAXED);
        if (toe == MHD_CONNECTION_NOTIFY_STARTED)
            tl_loop->at_limit = false; /* accepting again */
    }
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)toe;
    /* The next request on this connection starts its clock now. */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    cctx *x = ci ? ci->socket_context : NULL;
    if (x) {
        x->since_ns = fl_mono_ns();
        x->exempt = false;
    }
    req *r = *con_cls;
    *con_cls = NULL;
    if (!r || r == (void *)&too_many_args) /* the handler never ran */
        return;
    struct loop *L = r->loop; /* set when it went to the writer */
    if (L) {
        /* The client left (or the connection failed) before its answer
         * was sent.  While the writer has the request it cannot be freed
         * here: hand it over, and the writer frees it after the commit. */
        int st = ST_WAIT;
        if (__atomic_compare_exchange_n(&r->state, &st, ST_ORPHAN, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            L->waiting--;
            return;
        }
        if (st == ST_DONE && r->resumed)
            L->waiting--; /* answered by the writer, never sent */
    }
    req_free(r);
}

/* Under AddressSanitizer every request is freed: reusing them would hide
 * a use after free from it. */
#if defined(__SANITIZE_ADDRESS__)
#define REUSE_REQUESTS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REUSE_REQUESTS 0
#endif
#endif
#ifndef REUSE_REQUESTS
#define REUSE_REQUESTS 1
#endif

/* A request as its first call finds it: one the loop kept, or a new one.
 * A request is ~18 KiB and its body buffer 8 KiB or more: with a malloc
 * and a free of each per POST, the allocator took ~3 % of the server's CPU
 * at the bench's rate. */
static req *spare_req(void)
{
    struct loop *L = tl_loop;
    req *r;
    char *body = NULL;
    size_t cap = 0;
    if (L && L->nspare) {
        r = L->spare[--L->nspare];
        body = r->body;
        cap = r->cap;
    } else if (!(r = malloc(sizeof *r))) {
        return NULL;
    }
    memset(r, 0, offsetof(req, tmppath));
    r->tmppath[0] = '\0';
    r->body = body;
    r->cap = cap;
    return r;
}

/* Everything a request owns, and the request: kept for the next request
 * when freed on its loop (not by the writer, nor at shutdown), with its
 * body buffer unless that grew past 64 KiB. */
static void req_free(req *r)
{
    uncharge(r);
    for (size_t i = 0; i < r->w.n; i++)
        free((void *)r->items[i].z);
    if (r->fd >= 0)
        close(r->fd);
    if (r->tmppath[0])
        unlink(r->tmppath); /* an upload that did not finish */
    for (size_t i = 0; i < r->nparts; i++)
        free(r->parts[i].data);
    for (size_t i = 0; i < r->nlogs; i++) {
        fl_crashlog_free(r->logs[i]);
        free(r->converted[i]);
        free(r->dumpz[i]);
    }
    free(r->answer);
    free(r->decoded);
    free(r->rejected);
    struct loop *L = tl_loop;
    if (REUSE_REQUESTS && L && L->nspare < sizeof L->spare / sizeof *L->spare) {
        if (r->cap > (64u << 10)) {
            free(r->body);
            r->body = NULL;
            r->cap = 0;
        }
        L->spare[L->nspare++] = r;
        return;
    }
    free(r->body);
    free(r);
}

/* ---- raw logs, compressed by the loops */

/* Compresses the raw logs of a pass's requests, consecutive runs of at most
 * FL_RAW_FRAME_MAX bytes (or one larger log) into one zstd frame each, set
 * on the run's first item for the store to keep (fl_ingest_item.z), when
 * the pass has at least LOOP_FRAME_MIN bytes of them.  Done here, on the
 * HTTP thread, because the writer is one thread: what it does between two
 * fsyncs sets how fast batches turn over, and compressing was ~30 % of it.
 * But zstd spends ~5 us per frame (entropy tables) on top of ~1 us per
 * 4 KiB log: a pass of 4 logs -- typical with 64 connections on 2 cores --
 * costs twice as much per log as the writer's one frame of a whole batch
 * of ~20, and measured slower overall (bench/server, alternating runs:
 * 44,100 vs 45,100 reports/s, 22.6 vs 21.4 us per report).  So smaller
 * passes are left to the writer.  On failure a run simply stays
 * uncompressed, and the store compresses it. */
#define LOOP_FRAME_MIN (64u << 10)
static void compress_run(struct loop *L, size_t k, size_t total)
{
    size_t zl = 0;
    char *z;
    if (fl_raw_frame(L->run, k, total, &L->zbuf, &zl, &L->zcap) ||
        !(z = malloc(zl)))
        return;
    memcpy(z, L->zbuf, zl);
    L->run[0]->z = z;
    L->run[0]->zlen = zl;
    L->run[0]->zitems = k;
    FL_M_ADD(L->h->m->loop_compressed, k);
}

static void compress_list(struct loop *L, fl_wreq *head, size_t n)
{
    size_t k = 0, total = 0;
    for (fl_wreq *w = head; w && total < LOOP_FRAME_MIN; w = w->next)
        for (size_t i = 0; i < w->n; i++)
            total += w->items[i].raw_len;
    if (total < LOOP_FRAME_MIN)
        return;
    if (n > L->run_cap) {
        fl_ingest_item **nr = realloc(L->run, n * sizeof *nr);
        if (!nr)
            return;
        L->run = nr;
        L->run_cap = n;
    }
    total = 0;
    for (fl_wreq *w = head; w; w = w->next)
        for (size_t i = 0; i < w->n; i++) {
            fl_ingest_item *it = &w->items[i];
            if (k && total + it->raw_len > FL_RAW_FRAME_MAX) {
                compress_run(L, k, total);
                k = total = 0;
            }
            L->run[k++] = it;
            total += it->raw_len;
        }
    if (k)
        compress_run(L, k, total);
}

/* Hands the requests this pass completed to the writer at once -- one lock
 * and one wake-up per pass, not per request -- or, when it is full or
 * stopping (or refuse), answers each 503 on the next pass. */
static void hand_over(struct loop *L, bool refuse)
{
    fl_wreq *head = L->head, *tail = L->tail;
    size_t n = L->nhead, nreq = 0;
    L->head = L->tail = NULL;
    L->nhead = 0;
    for (fl_wreq *w = head; w; w = w->next)
        nreq++;
    L->waiting += nreq;
    int rc = -2; /* refused: the server is stopping */
    if (!refuse) {
        compress_list(L, head, n);
        if (!(rc = fl_writer_submit_list(L->h->writer, head, tail, n)))
            return;
    }
    for (fl_wreq *w = head, *next; w; w = next) {
        next = w->next;
        w->result = rc == -2 ? 2 : 1;
        w->done(w);
    }
}

/* ---- the HTTP loops
 *
 * Each loop runs one libmicrohttpd daemon in its own thread, in
 * libmicrohttpd's "external" mode.  A pass of the daemon (MHD_run) reads
 * whatever the sockets have; the ingest handlers of the requests completed
 * in that pass append their reports to the loop's list and return without
 * an answer.  After the pass the loop hands the whole list to the writer
 * (one lock, one wake-up), and goes on reading.  The writer commits, and
 * for each request stores the answer and, once per batch, writes the loop's
 * eventfd; the loop's next pass calls those handlers again and they send
 * the answer.  That re-call is libmicrohttpd's documented behaviour for a
 * request that is complete but has no response and is not suspended; it
 * keeps such a connection on its ready list, which is why MHD_get_timeout()
 * says 0 while any are waiting.
 *
 * This replaced suspending each request and resuming it from the writer:
 * that cost two epoll_ctl and an eventfd write per request and woke the
 * HTTP thread per request (server CPU per report ~10 % lower now, see
 * docs/operations.md).
 *
 * The loop must not spin while its requests wait for the writer: when the
 * only work libmicrohttpd reports is "timeout 0" and requests of this loop
 * are with the writer, it waits for a socket event or the writer's eventfd
 * instead.  Other work without a socket event (rare: data already read into
 * a buffer) then waits at most one commit.
 *
 * A waiting request has no idle timeout (a commit stuck behind a locked
 * database must not cost the client its answer, as with suspend before),
 * and if its client goes away meanwhile, the writer frees it (ST_ORPHAN). */

/* One pass of a loop's daemon: read and answer what the sockets have,
 * then hand the reports completed in the pass to the writer. */
static void loop_pass(struct loop *L)
{
    MHD_run(L->d);
    slow_scan(L);
    if (L->head)
        hand_over(L, false);
}

/* How long the loop may wait for an event after a pass: -1 for as long as
 * it takes; *ready when libmicrohttpd has work to do at once and the loop
 * must not wait at all. */
static int loop_timeout(struct loop *L, bool quiesced, bool *ready)
{
    fl_http *h = L->h;
    MHD_UNSIGNED_LONG_LONG to = 0;
    int ms = -1;
    *ready = false;
    if (MHD_get_timeout(L->d, &to) == MHD_YES)
        ms = to > INT_MAX ? INT_MAX : (int)to;
    if (ms == 0) {
        /* libmicrohttpd has work without a socket event.  Requests with
         * the writer always count as such (they stay on its ready list);
         * when there are none, the work is real: do it now.  Otherwise
         * wait for the writer's answer or the sockets: other ready work
         * then waits at most one commit. */
        if (L->waiting == 0) {
            *ready = true;
            return 0;
        }
        ms = -1;
    }
    if (quiesced && (ms < 0 || ms > 50))
        ms = 50;
    if (L->conns_head && h->cfg.request_timeout_s && (ms < 0 || ms > 500))
        ms = 500; /* slow_scan */
    /* Out of descriptors, libmicrohttpd takes its listening socket out
     * of its epoll set; it puts it back at the start of a pass once a
     * connection has closed -- the pass after the one that closed it.
     * Waiting on the sockets alone, an idle loop would never make that
     * pass and never accept again.  So pass every 100 ms until a
     * connection is accepted. */
    if (L->at_limit && (ms < 0 || ms > 100))
        ms = 100;
    return ms;
}

/* Waits up to ms (-1: no limit) for the sockets, the writer or the stop
 * eventfd.  -1 when the wait failed. */
static int loop_sleep(struct loop *L, int ms)
{
    struct epoll_event ev[3];
    int k = epoll_wait(L->ep, ev, 3, ms);
    if (k < 0 && errno != EINTR)
        return -1;
    bool woken = false;
    for (int i = 0; i < k; i++)
        woken |= ev[i].data.u32 == 1;
    if (woken) {
        /* Read first, then re-arm: a done() between the two sees the
         * flag still set and does not write, and its request is seen
         * by the next pass anyway (the exchange orders it).  The other
         * order could swallow a write and leave the flag set for good. */
        uint64_t v;
        ssize_t rd = read(L->efd, &v, sizeof v);
        (void)rd;
        __atomic_exchange_n(&L->signalled, 0, __ATOMIC_ACQ_REL);
    }
    return 0;
}

static void *loop_main(void *arg)
{
    struct loop *L = arg;
    fl_http *h = L->h;
    tl_loop = L;
    char name[16];
    snprintf(name, sizeof name, "fl-http-%u", (unsigned)(L - h->loops));
    pthread_setname_np(pthread_self(), name); /* for top -H, perf, gdb */
    bool quiesced = false;
    for (;;) {
        loop_pass(L);
        int phase = __atomic_load_n(&h->phase, __ATOMIC_ACQUIRE);
        if (phase == PHASE_STOP) {
            /* The writer has stopped and answered everything it had: send
             * those answers (and the 503s just made) before the daemon
             * closes the connections.  A request that completes in these
             * last passes cannot reach the writer: it is refused (503) like
             * the others, never left waiting -- closing its connection
             * would then hand it to a writer that is gone, and it would
             * never be freed. */
            for (int pass = 0; pass < 4; pass++) {
                MHD_run(L->d);
                if (!L->head)
                    break;
                hand_over(L, true);
            }
            if (L->head)
                hand_over(L, true); /* not sent; freed with the connection */
            break;
        }
        if (phase == PHASE_QUIESCE && !quiesced) {
            MHD_socket fd = MHD_quiesce_daemon(L->d);
            if (fd != MHD_INVALID_SOCKET)
                close(fd);
            quiesced = true;
            /* The eventfd stays readable: from now on look at the phase
             * every 50 ms instead. */
            epoll_ctl(L->ep, EPOLL_CTL_DEL, h->stop_fd, NULL);
        }
        bool ready;
        int ms = loop_timeout(L, quiesced, &ready);
        if (ready)
            continue;
        if (loop_sleep(L, ms))
            break;
    }
    return NULL;
}

/* The loop's own epoll set over libmicrohttpd's (readable when that has
 * events), the writer's eventfd and the stop eventfd: registered once,
 * where poll() would register all three on every wait (~7 % of the CPU). */
static int loop_epoll(fl_http *h, struct loop *L)
{
    const union MHD_DaemonInfo *ei = MHD_get_daemon_info(L->d, MHD_DAEMON_INFO_EPOLL_FD);
    if (!ei || (L->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return -1;
    const int fds[3] = {ei->epoll_fd, L->efd, h->stop_fd};
    for (uint32_t i = 0; i < 3; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = i};
        if (epoll_ctl(L->ep, EPOLL_CTL_ADD, fds[i], &e))
            return -1;
    }
    return 0;
}

/* Stops and joins the loops and their daemons; what a loop had read but
 * not answered is dropped with its connection (the client resends). */
static void stop_loops(fl_http *h)
{
    if (!h->loops)
        return;
    __atomic_store_n(&h->phase, PHASE_STOP, __ATOMIC_RELEASE);
    uint64_t one = 1;
    ssize_t wr = write(h->stop_fd, &one, sizeof one);
    (void)wr;
    for (unsigned i = 0; i < h->nloops; i++)
        if (h->loops[i].started)
            pthread_join(h->loops[i].th, NULL);
    for (unsigned i = 0; i < h->nloops; i++)
        if (h->loops[i].d)
            MHD_stop_daemon(h->loops[i].d);
    for (unsigned i = 0; i < h->nloops; i++) {
        if (h->loops[i].efd >= 0)
            close(h->loops[i].efd);
        if (h->loops[i].ep >= 0)
            close(h->loops[i].ep);
        free(h->loops[i].run);
        free(h->loops[i].zbuf);
        free(h->loops[i].scan);
        for (unsigned k = 0; k < h->loops[i].nspare; k++) {
            free(h->loops[i].spare[k]->body);
            free(h->loops[i].spare[k]);
        }
    }
    free(h->loops);
    h->loops = NULL;
    if (h->stop_fd >= 0)
        close(h->stop_fd);
    h->stop_fd = -1;
}

/* 1 when something listens on the address (a plain bind fails with
 * EADDRINUSE), 0 when not, -1 with errno on another error. */
static int port_in_use(const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, rc = 0;
    /* As libmicrohttpd's own sockets: a connection of a previous server
     * still in TIME_WAIT does not count, and an IPv6 address is just that. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (sa->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, sa, len) != 0)
        rc = errno == EADDRINUSE ? 1 : -1;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* --listen's address into *sa (IPv4) or *sa6; -1 with err when it is
 * neither. */
static int listen_addr(const char *host, unsigned port, struct sockaddr_in *sa,
                       struct sockaddr_in6 *sa6, bool *v6, char *err, size_t errlen)
{
    memset(sa, 0, sizeof *sa);
    memset(sa6, 0, sizeof *sa6);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    sa6->sin6_family = AF_INET6;
    sa6->sin6_port = htons((uint16_t)port);
    *v6 = false;
    if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
        return 0;
    if (inet_pton(AF_INET6, host, &sa6->sin6_addr) == 1) {
        *v6 = true;
        return 0;
    }
    snprintf(err, errlen, "--listen: '%s' is not an IPv4 or IPv6 address", host);
    return -1;
}

/* 0 when the address is free (or port 0); -1 with err when something
 * listens there or it cannot be bound. */
static int check_listen(const char *host, unsigned port, const struct sockaddr_in *sa,
                        const struct sockaddr_in6 *sa6, bool v6, char *err, size_t errlen)
{
    if (port == 0)
        return 0;
    int in_use = port_in_use(v6 ? (const struct sockaddr *)sa6 : (const struct sockaddr *)sa,
                             v6 ? sizeof *sa6 : sizeof *sa);
    if (!in_use)
        return 0;
    snprintf(err, errlen, "cannot listen on %s%s%s:%u: %s", v6 ? "[" : "", host, v6 ? "]" : "",
             port, in_use > 0 ? "the address is in use" : strerror(errno));
    return -1;
}

int fl_http_check_listen(const char *host, unsigned port, char *err, size_t errlen)
{
    struct sockaddr_in sa;
    struct sockaddr_in6 sa6;
    bool v6;
    if (listen_addr(host, port, &sa, &sa6, &v6, err, errlen))
        return -1;
    return check_listen(host, port, &sa, &sa6, v6, err, errlen);
}

/* libmicrohttpd's own messages (a request it answered 431 or 400 by
 * itself, a connection it dropped, descriptors run out): one line a second
 * at most, named as ours, the rest counted -- any client could otherwise
 * write a line per request into the log, without a key. */
static log_gate mhd_log_state = {PTHREAD_MUTEX_INITIALIZER, 0, 0};

static void mhd_log_init(void)
{
    pthread_mutex_lock(&mhd_log_state.mu);
    mhd_log_state.last_ns = 0;
    mhd_log_state.dropped = 0;
    pthread_mutex_unlock(&mhd_log_state.mu);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    /* Said on the loop's thread when accept() fails (EMFILE, ENFILE,
     * ENOBUFS): see loop_main. */
    if (tl_loop && !strncmp(fmt, "Error accepting connection", 26))
        tl_loop->at_limit = true;
    unsigned long dropped;
    if (!log_gate_pass(&mhd_log_state, &dropped))
        return;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)msg[i] < 0x20)
            msg[i] = ' ';
    if (dropped)
        fl_log(stderr, "faultline serve: http: %s [%lu more messages since the last line]", msg,
               dropped);
    else
        fl_log(stderr, "faultline serve: http: %s", msg);
}

/* fl_http_start(), or with driven (fl_http_drive.h) one loop without a
 * thread or a listening socket, run by its caller. */
static fl_http *http_start(const fl_http_config *cfg, fl_store *s, fl_queue *q, fl_writer *w,
                           fl_metrics *m, bool driven, char *err, size_t errlen)
{
    fl_http *h = calloc(1, sizeof *h);
    if (h)
        h->symver_seen = -1;
    if (!h || !(h->buckets = calloc(RATE_BUCKETS, sizeof *h->buckets))) {
        free(h);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->cfg = *cfg;
    h->store = s;
    h->queue = q;
    h->writer = w;
    h->m = m;
    h->stop_fd = -1;
    pthread_key_create(&h->conn_key, NULL);
    pthread_mutex_init(&h->conns_mu, NULL);
    pthread_mutex_init(&h->rate_mu, NULL);
    pthread_mutex_init(&h->gdel_mu, NULL);
    pthread_cond_init(&h->gdel_cv, NULL);
    if (!(h->projects = fl_projects_new())) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    /* A driven loop listens nowhere: only names given are checked. */
    if (!(h->hosts = fl_hostcheck_new(driven ? NULL : cfg->host, cfg->allowed_hosts, err, errlen)))
        goto fail;

    struct sockaddr_in sa;
    struct sockaddr_in6 sa6;
    bool v6 = false;
    if (driven)
        listen_addr("127.0.0.1", 0, &sa, &sa6, &v6, err, errlen); /* not used */
    else if (listen_addr(cfg->host, cfg->port, &sa, &sa6, &v6, err, errlen))
        goto fail;
    /* Not MHD_USE_TURBO: it made no measurable difference to the CPU per
     * report, and it skips the shutdown() before close that lets an early
     * answer (413 before the body) reach a client still sending.
     * No internal thread: each loop runs its daemon itself (loop_main), so
     * that it can hand a pass's reports to the writer together and wait for
     * the writer's answers (see "the HTTP loops"). */
    unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0) |
                     (driven ? MHD_USE_NO_LISTEN_SOCKET : 0);
    mhd_log_init();
    h->nloops = cfg->threads && !driven ? cfg->threads : 1;
    if (!(h->loops = calloc(h->nloops, sizeof *h->loops)) ||
        (h->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < h->nloops; i++)
        h->loops[i].efd = h->loops[i].ep = -1;
    /* Each loop listens on a socket of its own, all bound to the address
     * with SO_REUSEPORT, so that the kernel spreads new connections evenly
     * over the loops.  One socket shared by the loops left the split to
     * whichever loop woke first -- three connections in four on one loop
     * in some runs -- and gave 4 % fewer reports/s (six alternating pairs,
     * bench/server).  SO_REUSEPORT would also let a second server of the
     * same user bind the port and silently take a share of the
     * connections: a plain bind first makes sure nobody listens there. */
    bool reuse = h->nloops > 1;
    if (reuse && check_listen(cfg->host, cfg->port, &sa, &sa6, v6, err, errlen))
        goto fail;
    for (unsigned i = 0; i < h->nloops; i++) {
        struct loop *L = &h->loops[i];
        L->h = h;
        if ((L->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
            snprintf(err, errlen, "cannot create an eventfd: %s", strerror(errno));
            goto fail;
        }
        if (i == 1) {
            /* The others bind the port the first one got (--listen :0). */
            const union MHD_DaemonInfo *bi =
                MHD_get_daemon_info(h->loops[0].d, MHD_DAEMON_INFO_BIND_PORT);
            sa.sin_port = sa6.sin6_port = htons(bi ? bi->port : (uint16_t)cfg->port);
        }
        /* Without a listening socket (driven), no options of one. */
        struct MHD_OptionItem ops[15];
        size_t k = 0;
        ops[k++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log,
                                           NULL}; /* first, MHD asks */
        if (!driven) {
            ops[k++] =
                (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, v6 ? (void *)&sa6 : (void *)&sa};
            ops[k++] =
                (struct MHD_OptionItem){MHD_OPTION_LISTENING_ADDRESS_REUSE, reuse ? 1 : 0, NULL};
            ops[k++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL};
        }
        ops[k++] =
            (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)cfg->timeout_s, NULL};
        ops[k++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                           (intptr_t)cfg->max_header, NULL};
        ops[k++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, 4096, NULL};
        if (cfg->max_client_conns && !driven)
            ops[k++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                               (intptr_t)cfg->max_client_conns, NULL};
        ops[k++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK,
                                           (intptr_t)unescape_keep_nul, NULL};
        ops[k++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)count_args, h};
        ops[k++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, h};
        ops[k++] =
            (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)conn_notify, NULL};
        ops[k++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
        L->d = MHD_start_daemon(flags, ntohs(sa.sin_port), NULL, NULL, handler, h,
                                MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
        if (!L->d) {
            snprintf(err, errlen, "cannot listen on %s%s%s:%u", v6 ? "[" : "", cfg->host,
                     v6 ? "]" : "", i ? ntohs(sa.sin_port) : cfg->port);
            goto fail;
        }
        if (loop_epoll(h, L)) {
            snprintf(err, errlen, "cannot set up the HTTP loop: %s", strerror(errno));
            goto fail;
        }
    }
    for (unsigned i = 0; i < h->nloops && !driven; i++) {
        if (pthread_create(&h->loops[i].th, NULL, loop_main, &h->loops[i])) {
            snprintf(err, errlen, "cannot start the HTTP threads");
            goto fail;
        }
        h->loops[i].started = true;
    }
    const union MHD_DaemonInfo *di =
        driven ? NULL : MHD_get_daemon_info(h->loops[0].d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : driven ? 0 : cfg->port;
    return h;
fail:
    stop_loops(h);
    pthread_key_delete(h->conn_key);
    pthread_mutex_destroy(&h->conns_mu);
    pthread_mutex_destroy(&h->rate_mu);
    pthread_mutex_destroy(&h->gdel_mu);
    pthread_cond_destroy(&h->gdel_cv);
    fl_projects_free(h->projects);
    fl_hostcheck_free(h->hosts);
    free(h->buckets);
    free(h);
    return NULL;
}

fl_http *fl_http_start(const fl_http_config *cfg, fl_store *s, fl_queue *q, fl_writer *w,
                       fl_metrics *m, char *err, size_t errlen)
{
    return http_start(cfg, s, q, w, m, false, err, errlen);
}

/* ---- driven by the caller (fl_http_drive.h) */

fl_http *fl_http_drive_start(const fl_http_config *cfg, fl_store *s, fl_queue *q, fl_writer *w,
                             fl_metrics *m, char *err, size_t errlen)
{
    return http_start(cfg, s, q, w, m, true, err, errlen);
}

int fl_http_drive_add(fl_http *h, int fd)
{
    /* libmicrohttpd wants the peer's address; nothing here reads it. */
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    if (getpeername(fd, (struct sockaddr *)&sa, &len)) {
        close(fd);
        return -1;
    }
    tl_loop = &h->loops[0];
    /* libmicrohttpd closes fd when it fails. */
    return MHD_add_connection(h->loops[0].d, fd, (const struct sockaddr *)&sa, len) == MHD_YES ? 0
                                                                                               : -1;
}

int fl_http_drive_run(fl_http *h, int wait_ms)
{
    struct loop *L = &h->loops[0];
    tl_loop = L;
    loop_pass(L);
    bool ready;
    int ms = loop_timeout(L, false, &ready);
    if (ready)
        return 1;
    if (!L->waiting)
        return 0;
    if (ms < 0 || ms > wait_ms)
        ms = wait_ms;
    return loop_sleep(L, ms) ? -1 : 1;
}

unsigned fl_http_connections(fl_http *h)
{
    unsigned n = 0;
    for (unsigned i = 0; i < h->nloops; i++)
        n += __atomic_load_n(&h->loops[i].conns, __ATOMIC_RELAXED);
    return n;
}

unsigned fl_http_port(fl_http *h)
{
    return h->port;
}

void fl_http_quiesce(fl_http *h)
{
    if (!h)
        return;
    /* A daemon is only touched by its own thread: the loops quiesce
     * themselves when they see the phase change. */
    __atomic_store_n(&h->phase, PHASE_QUIESCE, __ATOMIC_RELEASE);
    uint64_t one = 1;
    ssize_t wr = write(h->stop_fd, &one, sizeof one);
    (void)wr;
}

void fl_http_stop(fl_http *h)
{
    if (!h)
        return;
    /* Group deletes stop at their next step (the phase is no longer
     * PHASE_RUN) and hand their 503 to loops that still run. */
    if (__atomic_load_n(&h->phase, __ATOMIC_ACQUIRE) == PHASE_RUN)
        fl_http_quiesce(h);
    pthread_mutex_lock(&h->gdel_mu);
    while (h->gdel_running)
        pthread_cond_wait(&h->gdel_cv, &h->gdel_mu);
    pthread_mutex_unlock(&h->gdel_mu);
    stop_loops(h);
    for (size_t i = 0; i < h->nconns; i++)
        h->store->disconnect(h->conns[i]);
    free(h->conns);
    pthread_key_delete(h->conn_key);
    pthread_mutex_destroy(&h->conns_mu);
    pthread_mutex_destroy(&h->rate_mu);
    pthread_mutex_destroy(&h->gdel_mu);
    pthread_cond_destroy(&h->gdel_cv);
    fl_projects_free(h->projects);
    fl_hostcheck_free(h->hosts);
    free(h->buckets);
    free(h);
}
