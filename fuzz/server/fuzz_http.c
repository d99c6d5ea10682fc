/*
 * fuzz_http - the server's HTTP front (src/server/http.c) on raw request
 * bytes: libmicrohttpd's request parsing, the routes, the ingest key and
 * admin token, header and body limits, Content-Encoding, the multipart
 * post processor and the MojoCrash request shape, the query strings of the
 * API, and the writer and SQLite store behind ingest -- the server's own
 * code, driven in-process through fl_http_drive.h.
 *
 * How an input runs.  Once: a SQLite store, the embedded queue and a
 * writer in a fresh directory (on /dev/shm when there is one, so that a
 * commit's fsync costs nothing), no workers, a symbolizer with no debug
 * files (/api/v1/symbolicate and /symbolicate answer 404s and annotate
 * nothing), no symbol ingestion (uploads are 503) and no context decoder.
 * Per input: a socketpair, one end handed to the server, the input written
 * to the other as it drains, the loop run on this thread until the server
 * has closed the connection or has nothing left to do with what it was
 * sent (two passes with no work, nothing sent, nothing read); then the
 * connection is ended and run until the server has let go of it.
 *
 * What must hold (abort() otherwise, which libFuzzer reports):
 *  - what the server sent is a sequence of HTTP/1.x responses, each
 *    framed by its Content-Length, as long as they answer requests whose
 *    framing we follow (after those, only the next status line is
 *    checked), and after one that said "Connection: close" the server
 *    closed;
 *  - every status is one docs/http-api.md gives (or libmicrohttpd's own
 *    400/413/414/431/501/505 for what it refuses itself) -- never a 500;
 *    for a request whose framing is plain (CRLF, at most one
 *    Content-Length, no Transfer-Encoding or Expect) the answers its route
 *    documents: ingest 200/400/401/413/415/429/503, /healthz 200/503,
 *    /metrics 200, an unknown path outside /api/ and /buildid/ 404;
 *  - a plain, complete first request is answered, or its connection
 *    closed: the server never just sits on it;
 *  - a JSON body parses, and an error (4xx, 5xx) has "error";
 *  - /api/v1/symbolicate looks up (200 or 404) only addresses the docs
 *    allow: "0x" and hex digits, or decimal digits, within 64 bits;
 *  - every id an ingest 200 accepted is in the store, and its log, read
 *    back, passes the crash-log reader (fl_crashlog_check): nothing that
 *    the reader refuses is ever accepted.
 *
 * Keys: ingest "ingestkey" (X-Faultline-Key or ?key=), keyless POST /
 * accepted; admin token "admintoken" (Authorization: Bearer).
 * FUZZ_HTTP_VERBOSE=1 in the environment prints what the server answered.
 * libmicrohttpd says once a second at most that it cannot set TCP_NODELAY
 * on a local socket: harmless.  A store is left in /dev/shm (or $TMPDIR)
 * only when a sanitizer ends the run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fl_crashlog.h"
#include "fl_http_drive.h"
#include "fl_serve.h"
#include "fl_srvsym.h"

#define MAX_REQS 64
#define MAX_RESPONSE (8u << 20)

static struct {
    bool ready, failed;
    char dir[256];
    fl_metrics m;
    fl_store *store;
    fl_queue *queue;
    fl_writer *writer;
    fl_srvsym *sym;
    fl_http *http;
    fl_store_conn *sc; /* ours, to read accepted logs back */
} G;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    remove(p);
    return 0;
}

/* A broken invariant: say which, and abort for libFuzzer -- without
 * leaving the store behind (a sanitizer's report does leave it). */
static void die(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_http: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    if (G.dir[0])
        nftw(G.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    abort();
}

static void teardown(void)
{
    if (!G.ready)
        return;
    fl_writer_stop(G.writer);
    fl_http_stop(G.http);
    fl_writer_free(G.writer);
    fl_srvsym_free(G.sym);
    G.store->disconnect(G.sc);
    if (G.queue->close)
        G.queue->close(G.queue);
    G.store->close(G.store);
    fl_health_destroy(&G.m.health);
    nftw(G.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    G.ready = false;
}

static bool setup(void)
{
    char err[512] = "";
    struct stat st;
    const char *base = !stat("/dev/shm", &st) && S_ISDIR(st.st_mode) && !access("/dev/shm", W_OK)
                           ? "/dev/shm"
                           : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    snprintf(G.dir, sizeof G.dir, "%s/fuzz_http.XXXXXX", base);
    if (!mkdtemp(G.dir))
        die("mkdtemp", strerror(errno));
    /* No debuginfod: lookups stay on this machine. */
    unsetenv("DEBUGINFOD_URLS");
    char db[300], up[300], cache[300];
    snprintf(db, sizeof db, "%s/faultline.db", G.dir);
    snprintf(up, sizeof up, "%s/processed", G.dir);
    snprintf(cache, sizeof cache, "%s/symcache", G.dir);
    if (mkdir(up, 0700) || mkdir(cache, 0700))
        die("mkdir", strerror(errno));
    fl_health_init(&G.m.health, NULL);
    if (!(G.store = fl_store_sqlite_open(db, err, sizeof err)))
        die("store", err);
    if (!(G.queue = fl_queue_embedded_new()))
        die("queue", "out of memory");
    if (!(G.sc = G.store->connect(G.store)))
        die("store connection", NULL);
    fl_srvsym_config sc = {.upload_root = up, .cache_dir = cache};
    if (fl_srvsym_new(&sc, &G.sym, err, sizeof err))
        die("symbolizer", err);
    if (!(G.writer =
              fl_writer_start(G.store, G.queue, &G.m, 16384, 60, NULL, NULL, err, sizeof err)))
        die("writer", err);
    /* Limits small enough for inputs to cross them: a body over 64 KiB
     * (413), a decoded body over 256 KiB or 100 times its size (413),
     * more than 128 KiB of a request's data held (503). */
    fl_http_config hc = {.keyless_ingest = true,
                         .keep_minidumps = true,
                         .admin_token = "admintoken",
                         .ingest_key = "ingestkey",
                         .max_body = 64u << 10,
                         .max_decoded = 256u << 10,
                         .max_ratio = 100,
                         .max_header = 8192,
                         .timeout_s = 30,
                         .max_pending = 16384,
                         .max_memory = 128u << 10,
                         .max_backlog = INT64_MAX / 2,
                         .srvsym = G.sym,
                         .max_symbol_file = 1u << 20,
                         .data_dir = G.dir};
    if (!(G.http = fl_http_drive_start(&hc, G.store, G.queue, G.writer, &G.m, err, sizeof err)))
        die("http", err);
    G.ready = true;
    atexit(teardown);
    return true;
}

/* ---- the requests, as far as we can follow their framing */

typedef struct rq {
    char method[16];
    char path[256]; /* before '?' */
    bool plain;     /* framing we follow exactly (see the top) */
    bool head;
    const char *body; /* in the input */
    size_t body_len;
} rq;

static const char *find(const char *p, const char *end, const char *s)
{
    size_t n = strlen(s);
    for (; p + n <= end; p++)
        if (!memcmp(p, s, n))
            return p;
    return NULL;
}

static bool token_char(unsigned char c)
{
    return c > 0x20 && c < 0x7f && !strchr("()<>@,;:\\\"/[]?={}", c);
}

/* Reads plain requests from the start of the input into out[] and says
 * how many; stops at the first one whose framing is not plain or not
 * complete (*more: the input goes on after the last one read). */
static size_t plain_requests(const char *d, size_t size, rq *out, bool *more)
{
    const char *p = d, *end = d + size;
    size_t n = 0;
    while (p < end && n < MAX_REQS) {
        const char *hend = find(p, end, "\r\n\r\n");
        if (!hend)
            break;
        rq *r = &out[n];
        memset(r, 0, sizeof *r);
        const char *le = find(p, hend + 2, "\r\n");
        const char *sp1 = memchr(p, ' ', (size_t)(le - p));
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(le - sp1 - 1)) : NULL;
        if (!sp1 || !sp2 || sp1 == p || (size_t)(sp1 - p) >= sizeof r->method ||
            sp2 - sp1 - 1 <= 0 || (size_t)(sp2 - sp1 - 1) >= sizeof r->path || le - sp2 - 1 != 8 ||
            (memcmp(sp2 + 1, "HTTP/1.1", 8) && memcmp(sp2 + 1, "HTTP/1.0", 8)))
            break;
        bool ok = true;
        for (const char *q = p; q < sp1; q++)
            ok &= *q >= 'A' && *q <= 'Z';
        for (const char *q = sp1 + 1; q < sp2; q++)
            ok &= *q > 0x20 && *q < 0x7f && *q != '%' && *q != '#';
        if (!ok)
            break;
        memcpy(r->method, p, (size_t)(sp1 - p));
        size_t pl = strcspn(sp1 + 1, "? ");
        memcpy(r->path, sp1 + 1, pl < (size_t)(sp2 - sp1 - 1) ? pl : (size_t)(sp2 - sp1 - 1));
        r->head = !strcmp(r->method, "HEAD");
        /* Headers: "Name: value" lines, no folding, no stray CR or LF. */
        int ncl = 0;
        uint64_t cl = 0;
        for (const char *l = le + 2; ok && l < hend + 2;) {
            const char *e = find(l, hend + 2, "\r\n");
            const char *colon = memchr(l, ':', (size_t)(e - l));
            if (!colon || colon == l) {
                ok = false;
                break;
            }
            for (const char *q = l; q < colon; q++)
                ok &= token_char((unsigned char)*q);
            for (const char *q = colon + 1; q < e; q++)
                ok &= *q != '\r' && *q != '\n' && *q != '\0';
            size_t nl = (size_t)(colon - l);
            if (nl == 17 && !strncasecmp(l, "Transfer-Encoding", 17))
                ok = false;
            if (nl == 6 && !strncasecmp(l, "Expect", 6))
                ok = false;
            if (nl == 14 && !strncasecmp(l, "Content-Length", 14)) {
                const char *v = colon + 1;
                while (v < e && *v == ' ')
                    v++;
                const char *ve = e;
                while (ve > v && ve[-1] == ' ')
                    ve--;
                if (ve == v || ve - v > 9)
                    ok = false;
                for (cl = 0; ok && v < ve; v++) {
                    ok &= *v >= '0' && *v <= '9';
                    cl = cl * 10 + (uint64_t)(*v - '0');
                }
                ncl++;
            }
            l = e + 2;
        }
        if (!ok || ncl > 1 || (uint64_t)(end - (hend + 4)) < cl)
            break;
        r->plain = true;
        r->body = hend + 4;
        r->body_len = (size_t)cl;
        p = hend + 4 + cl;
        n++;
    }
    *more = p < end;
    return n;
}

/* ---- the answers */

static bool in(unsigned s, const unsigned *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == s)
            return true;
    return false;
}

#define IN(s, ...)                                                                                 \
    in((s), (const unsigned[]){__VA_ARGS__}, sizeof((unsigned[]){__VA_ARGS__}) / sizeof(unsigned))

static bool is_ingest_path(const char *p)
{
    return !strcmp(p, "/") || !strcmp(p, "/api/v1/crashes") || !strcmp(p, "/api/v1/crashes/");
}

/* An address /api/v1/symbolicate takes (docs/http-api.md): "0x" (or
 * "0X") and hex digits, or decimal digits, within 64 bits. */
static bool address_ok(const char *s)
{
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const char *d = hex ? s + 2 : s;
    size_t n = strlen(d), z = strspn(d, "0");
    if (!n || strspn(d, hex ? "0123456789abcdefABCDEF" : "0123456789") != n)
        return false;
    if (hex)
        return n - z <= 16;
    return n - z < 20 || (n - z == 20 && strcmp(d + z, "18446744073709551615") <= 0);
}

/* What a plain request's route may answer (beyond libmicrohttpd's own). */
static void check_route(const rq *r, unsigned st)
{
    char what[320];
    snprintf(what, sizeof what, "%s %s -> %u", r->method, r->path, st);
    if (IN(st, 400, 413, 414, 431))
        return; /* also libmicrohttpd's, for what it refuses itself */
    if (!strcmp(r->method, "POST") && !strcmp(r->path, "/api/v1/symbolicate") && IN(st, 200, 404)) {
        /* Looked up: every address was one the docs allow. */
        json_error_t je;
        json_t *j = json_loadb(r->body, r->body_len, 0, &je);
        json_t *a = json_object_get(j, "addresses");
        for (size_t i = 0; i < json_array_size(a); i++) {
            const char *v = json_string_value(json_array_get(a, i));
            if (v && !address_ok(v))
                die("/api/v1/symbolicate took an address the docs refuse", v);
        }
        json_decref(j);
    }
    if (!strcmp(r->method, "POST") && is_ingest_path(r->path)) {
        if (!IN(st, 200, 401, 415, 429, 503))
            die("an ingest status the docs do not give", what);
        return;
    }
    bool get = !strcmp(r->method, "GET") || r->head;
    if (!strcmp(r->path, "/healthz") && get && !IN(st, 200, 503))
        die("a /healthz status the docs do not give", what);
    if (!strcmp(r->path, "/metrics") && get && st != 200)
        die("a /metrics status the docs do not give", what);
    static const char *const known[] = {"/",           "/healthz",     "/metrics",    "/portal.js",
                                        "/portal.css", "/favicon.ico", "/symbolicate"};
    bool ours = strncmp(r->path, "/api/", 5) == 0 || strncmp(r->path, "/buildid/", 9) == 0;
    for (size_t i = 0; !ours && i < sizeof known / sizeof *known; i++)
        ours = !strcmp(r->path, known[i]);
    if (!ours && st != 404)
        die("an unknown path not answered 404", what);
}

/* Every id of an ingest 200 is stored (or deleted since, by a later request
 * of the input), and its log passes the reader. */
static void check_accepted(const char *body, size_t n)
{
    json_error_t je;
    json_t *j = json_loadb(body, n, 0, &je);
    json_t *acc = json_object_get(j, "accepted");
    if (!json_is_array(acc) || json_array_size(acc) == 0)
        die("an ingest 200 without accepted ids", body);
    for (size_t i = 0; i < json_array_size(acc); i++) {
        const char *id = json_string_value(json_object_get(json_array_get(acc, i), "id"));
        if (!id)
            die("an accepted entry without an id", body);
        char *raw = NULL, cid[FL_CRASH_ID_MAX], project[FL_PROJECT_MAX];
        size_t len = 0;
        int64_t received;
        int rc = G.store->load_raw(G.sc, id, &raw, &len, &received, cid, project);
        if (rc != 0) {
            /* Unless a later request of the input deleted it. */
            bool nf = false;
            json_t *c = G.store->get_crash(G.sc, id, &nf);
            const char *st = json_string_value(json_object_get(c, "state"));
            bool deleted = st && !strcmp(st, "deleted");
            json_decref(c);
            if (deleted)
                continue;
            die("an accepted report is not in the store", id);
        }
        fl_crashlog *log = NULL;
        fl_crashlog_error err;
        memset(&err, 0, sizeof err);
        if (fl_crashlog_check(raw, len, &log, &err)) {
            fprintf(stderr, "fuzz_http: line %u: %s\n", (unsigned)err.line, err.message);
            die("an accepted log does not pass the reader", id);
        }
        fl_crashlog_free(log);
        free(raw);
    }
    json_decref(j);
}

static const char *header(const char *h, const char *hend, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    for (const char *l = find(h, hend, "\r\n"); l && l + 2 < hend; l = find(l + 2, hend, "\r\n")) {
        const char *s = l + 2;
        if ((size_t)(hend - s) > nl + 1 && !strncasecmp(s, name, nl) && s[nl] == ':') {
            const char *v = s + nl + 1;
            while (*v == ' ')
                v++;
            const char *e = find(v, hend + 2, "\r\n");
            *vlen = (size_t)(e - v);
            return v;
        }
    }
    return NULL;
}

/* The whole answer: responses one after the other, matched with the plain
 * requests in order while there are any. */
static void check_answer(const char *a, size_t len, const rq *reqs, size_t nreq)
{
    const char *p = a, *end = a + len;
    size_t k = 0; /* final responses seen */
    while (p < end) {
        if (end - p < 13 || (memcmp(p, "HTTP/1.1 ", 9) && memcmp(p, "HTTP/1.0 ", 9)) ||
            p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
            p[12] != ' ')
            die("not a status line", p);
        unsigned st = (unsigned)((p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
        const char *hend = find(p, end, "\r\n\r\n");
        if (!hend)
            die("a response cut in its headers", p);
        const rq *r = k < nreq ? &reqs[k] : NULL;
        if (st == 100) {
            p = hend + 4;
            continue;
        }
        if (!IN(st, 200, 201, 202, 204, 400, 401, 404, 405, 409, 410, 413, 414, 415, 429, 431, 501,
                503, 505))
            die("a status the docs do not give", p);
        if (!r)
            return; /* a request we could not follow: where its answer ends is not ours to say */
        check_route(r, st);
        size_t vl;
        const char *v = header(p, hend, "Content-Length", &vl);
        uint64_t cl = 0;
        if (v) {
            char num[24];
            snprintf(num, sizeof num, "%.*s", (int)(vl < 23 ? vl : 23), v);
            if (fl_parse_u64(num, &cl))
                die("a bad Content-Length", p);
        }
        bool nobody = st == 204 || r->head;
        const char *body = hend + 4;
        /* libmicrohttpd 0.9.75 (Debian 12) sends the header block of its own
         * 400 for a Content-Length it cannot parse ("x", or "31 " with a
         * trailing blank) twice, then its HTML page, and closes: a bare
         * MHD_start_daemon() does the same, before any handler of ours
         * runs.  Its second copy is skipped here; nothing may follow the
         * page (check_close). */
        const char *again = st == 400 && end - body > 13 && !memcmp(body, p, 13)
                                ? find(body, end, "\r\n\r\n")
                                : NULL;
        if (again && find(again, end, "<title>Request malformed</title>"))
            body = again + 4;
        size_t blen = nobody ? 0 : v ? (size_t)cl : (size_t)(end - body);
        if ((size_t)(end - body) < blen)
            die("a response cut in its body", p);
        const char *ct = header(p, hend, "Content-Type", &vl);
        if (blen && ct && vl >= 16 && !strncasecmp(ct, "application/json", 16)) {
            json_error_t je;
            json_t *j = json_loadb(body, blen, 0, &je);
            if (!j)
                die("a JSON body that does not parse", p);
            if (st >= 400 && !json_is_string(json_object_get(j, "error")))
                die("an error without \"error\"", p);
            json_decref(j);
        }
        if (st == 200 && !strcmp(r->method, "POST") && is_ingest_path(r->path))
            check_accepted(body, blen);
        p = body + blen;
        k++;
    }
}

static void check_close(const char *a, size_t len, bool closed)
{
    /* After a "Connection: close" response, nothing more, and the end. */
    const char *end = a + len;
    for (const char *p = a; p < end;) {
        const char *hend = find(p, end, "\r\n\r\n");
        if (!hend)
            return;
        size_t vl;
        const char *v = header(p, hend, "Connection", &vl);
        if (v && vl == 5 && !strncasecmp(v, "close", 5)) {
            if (!closed)
                die("\"Connection: close\" and the connection stays open", p);
            return;
        }
        const char *n = find(hend + 4, end, "HTTP/1.");
        if (!n)
            return;
        p = n;
    }
}

/* ---- one input */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!G.ready && !setup())
        return 0;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv))
        die("socketpair", strerror(errno));
    if (fl_http_drive_add(G.http, sv[1]))
        die("the server refused a connection", NULL);
    static char *ans;
    if (!ans && !(ans = malloc(MAX_RESPONSE)))
        die("out of memory", NULL);
    size_t sent = 0, got = 0;
    bool closed = false, wclosed = false;
    unsigned idle = 0;
    uint64_t t0 = now_ms();
    while (idle < 2) {
        bool progress = false;
        while (!wclosed && sent < size) {
            ssize_t w = send(sv[0], data + sent, size - sent, MSG_NOSIGNAL);
            if (w > 0) {
                sent += (size_t)w;
                progress = true;
            } else {
                if (w < 0 && errno != EAGAIN && errno != EINTR)
                    wclosed = true; /* the server closed: it reads no more */
                break;
            }
        }
        int busy = fl_http_drive_run(G.http, 1000);
        if (busy < 0)
            die("the loop failed", strerror(errno));
        for (;;) {
            ssize_t r = recv(sv[0], ans + got, MAX_RESPONSE - 1 - got, 0);
            if (r > 0) {
                got += (size_t)r;
                progress = true;
                if (got == MAX_RESPONSE - 1)
                    die("an answer over 8 MiB", NULL);
                continue;
            }
            if (r == 0)
                closed = true;
            else if (errno != EAGAIN && errno != EINTR)
                closed = true; /* reset */
            break;
        }
        if (closed)
            break;
        idle = progress || busy ? 0 : idle + 1;
        if (now_ms() - t0 > 20000)
            die("the server neither answers nor lets go (20 s)", NULL);
    }
    ans[got] = '\0';
    if (getenv("FUZZ_HTTP_VERBOSE"))
        fprintf(stderr, "fuzz_http: %zu bytes in, %zu out%s, %u ms:\n%.*s\n", size, got,
                closed ? ", closed" : "", (unsigned)(now_ms() - t0), (int)(got < 2000 ? got : 2000),
                ans);
    close(sv[0]);
    /* Ours is closed; make sure the server sees the end (libmicrohttpd can
     * miss the end of a connection whose last bytes came with it), and let
     * it finish with the connection -- one connection at a time, so that
     * each input starts from none. */
    if (fl_http_connections(G.http))
        shutdown(sv[1], SHUT_RDWR);
    while (fl_http_connections(G.http)) {
        if (fl_http_drive_run(G.http, 1000) < 0)
            die("the loop failed", strerror(errno));
        if (now_ms() - t0 > 30000)
            die("the server does not let go of a closed connection (30 s)", NULL);
    }

    rq reqs[MAX_REQS];
    bool more;
    size_t nreq = plain_requests((const char *)data, size, reqs, &more);
    if (nreq && !got && !closed)
        die("a plain, complete request neither answered nor closed", (const char *)data);
    check_answer(ans, got, reqs, nreq);
    check_close(ans, got, closed);
    return 0;
}
