/*
 * upload.c - one crash log, one HTTP POST.
 *
 * How this works: the multipart body is composed in memory (a log is at
 * most FL_CRASHLOG_MAX_BYTES, so the body is bounded), then gzip-compressed
 * as a whole with zlib, and handed to libcurl as the POST body.  We build
 * the body ourselves instead of using curl's MIME API because the
 * compression must cover the whole body, boundaries included, which is what
 * "Content-Encoding: gzip" on the request means.
 *
 * The boundary is random and checked against the log's bytes, so a log can
 * never end its own part early.  The answer is read into a capped buffer;
 * only its first line or its JSON "error"/"accepted" members are used.
 */
#define _GNU_SOURCE /* memmem */
#include "fl_upload.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <zlib.h>

#include "fl_crashlog.h"
#include "fl_neterr.h"

#ifndef FL_REPORTER_VERSION
#define FL_REPORTER_VERSION "0.0.0"
#endif

/* Room for the form fields and part headers around the log. */
#define BODY_OVERHEAD (16u * 1024)
#define BOUNDARY_LEN 40

struct fl_upload {
    fl_upload_config cfg;
    CURL *curl;
    long cap_ms; /* fl_upload_cap_time(); 0: none */
    char proxy_var[24]; /* the variable whose proxy libcurl uses for the URL, "" none */
};

/* ---- a capped byte buffer ------------------------------------------- */

typedef struct buf {
    char *p;
    size_t len, cap, max;
    bool overflow; /* something was dropped because of max */
} buf;

static int buf_add(buf *b, const void *s, size_t n)
{
    if (n == 0) /* b->p may still be NULL (a failed first allocation) */
        return 0;
    if (n > b->max - b->len) {
        b->overflow = true;
        return -1;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap = cap > b->max / 2 ? b->max : cap * 2;
        char *np = realloc(b->p, cap);
        if (!np)
            return -1;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

static int buf_str(buf *b, const char *s)
{
    return buf_add(b, s, strlen(s));
}

/* ---- the request ------------------------------------------------------ */

static int on_progress(void *stop, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return *(const volatile sig_atomic_t *)stop != 0;
}

const char *fl_upload_outcome_name(fl_upload_outcome o)
{
    switch (o) {
    case FL_UPLOAD_DELIVERED: return "delivered";
    case FL_UPLOAD_REJECTED: return "rejected";
    case FL_UPLOAD_TOO_LARGE: return "too large";
    case FL_UPLOAD_RETRY: return "not delivered";
    case FL_UPLOAD_FAILED: return "failed";
    case FL_UPLOAD_INTERRUPTED: return "interrupted";
    }
    return "?";
}

static void make_boundary(char *out, size_t n)
{
    static const char alnum[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    unsigned char rnd[BOUNDARY_LEN];
    size_t got = 0;
    while (got < sizeof rnd) {
        ssize_t r = getrandom(rnd + got, sizeof rnd - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    /* getrandom() cannot really fail on Linux >= 3.17; fall back anyway
     * to something that differs between calls. */
    for (size_t i = got; i < sizeof rnd; i++)
        rnd[i] = (unsigned char)(rand() ^ (int)clock() ^ (int)i);
    size_t pre = (size_t)snprintf(out, n, "faultline-");
    for (size_t i = 0; pre + i + 1 < n && i < 24; i++)
        out[pre + i] = alnum[rnd[i] % 36];
    out[pre + 24 < n ? pre + 24 : n - 1] = '\0';
}

/* A field value goes into the body as is, but a filename goes into a
 * header: keep only characters that cannot end or bend the header. */
static void safe_filename(char *out, size_t cap, const char *name)
{
    const char *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : (name && *name ? name : "report");
    size_t o = 0;
    for (const char *s = base; *s && o + 1 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        out[o++] = (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == ';') ? '_' : (char)c;
    }
    out[o] = '\0';
    static const char ext[] = ".crashlog";
    size_t el = sizeof ext - 1;
    if (o < el || strcmp(out + o - el, ext) != 0) {
        if (o + el + 1 > cap)
            o = cap - el - 1;
        memcpy(out + o, ext, el + 1);
    }
}

static int add_field(buf *b, const char *bnd, const char *name, const char *value)
{
    int rc = 0;
    rc |= buf_str(b, "--");
    rc |= buf_str(b, bnd);
    rc |= buf_str(b, "\r\nContent-Disposition: form-data; name=\"");
    rc |= buf_str(b, name);
    rc |= buf_str(b, "\"\r\n\r\n");
    rc |= buf_str(b, value ? value : "");
    rc |= buf_str(b, "\r\n");
    return rc ? -1 : 0;
}

static int build_body(const fl_upload_report *rep, const char *bnd, buf *b)
{
    char fname[256];
    safe_filename(fname, sizeof fname, rep->filename);
    int rc = 0;
    rc |= add_field(b, bnd, "app", rep->app);
    rc |= add_field(b, bnd, "version", rep->version);
    rc |= add_field(b, bnd, "email", rep->email);
    rc |= buf_str(b, "--");
    rc |= buf_str(b, bnd);
    rc |= buf_str(b, "\r\nContent-Disposition: form-data; name=\"report1\"; filename=\"");
    rc |= buf_str(b, fname);
    rc |= buf_str(b, "\"\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n");
    rc |= buf_add(b, rep->data, rep->len);
    rc |= buf_str(b, "\r\n--");
    rc |= buf_str(b, bnd);
    rc |= buf_str(b, "--\r\n");
    return rc ? -1 : 0;
}

/* gzip (RFC 1952) in one go; *out is malloc'ed. */
static int gzip_body(const char *in, size_t len, char **out, size_t *outlen)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    size_t cap = deflateBound(&zs, (uLong)len) + 64;
    char *o = malloc(cap);
    if (!o) {
        deflateEnd(&zs);
        return -1;
    }
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)len;
    zs.next_out = (Bytef *)o;
    zs.avail_out = (uInt)cap;
    int zr = deflate(&zs, Z_FINISH);
    size_t n = cap - zs.avail_out;
    deflateEnd(&zs);
    if (zr != Z_STREAM_END) {
        free(o);
        return -1;
    }
    *out = o;
    *outlen = n;
    return 0;
}

/* ---- the answer ------------------------------------------------------- */

typedef struct answer {
    buf body;
    long retry_after; /* -1 absent */
    bool html_type;   /* Content-Type: text/html */
} answer;

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    answer *a = ud;
    size_t len = sz * n;
    size_t room = a->body.max - a->body.len;
    buf_add(&a->body, p, len < room ? len : room); /* keep the head, drop the rest */
    return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    answer *a = ud;
    size_t len = sz * n;
    char line[256];
    size_t l = len < sizeof line - 1 ? len : sizeof line - 1;
    memcpy(line, p, l);
    line[l] = '\0';
    while (l && (line[l - 1] == '\r' || line[l - 1] == '\n'))
        line[--l] = '\0';
    if (!strncmp(line, "HTTP/", 5)) { /* a new response (after 100 Continue): start over */
        a->retry_after = -1;
        a->html_type = false;
        return len;
    }
    if (!strncasecmp(line, "Content-Type:", 13)) {
        const char *v = line + 13;
        while (*v == ' ' || *v == '\t')
            v++;
        a->html_type = !strncasecmp(v, "text/html", 9);
        return len;
    }
    if (strncasecmp(line, "Retry-After:", 12) != 0)
        return len;
    const char *v = line + 12;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t digits = strspn(v, "0123456789");
    if (digits && v[digits + strspn(v + digits, " \t\r\n")] == '\0') {
        /* Read saturating: a number too long for 64 bits is a long wait
         * all the same, cut to the longest as a large one is. */
        uint64_t secs = 0;
        for (size_t i = 0; i < digits && secs <= (uint64_t)FL_UPLOAD_MAX_RETRY_AFTER; i++)
            secs = secs * 10 + (uint64_t)(v[i] - '0');
        a->retry_after = secs > (uint64_t)FL_UPLOAD_MAX_RETRY_AFTER ? FL_UPLOAD_MAX_RETRY_AFTER
                                                                     : (long)secs;
    } else {
        time_t when = curl_getdate(v, NULL); /* the HTTP-date form */
        if (when != (time_t)-1) {
            time_t now = time(NULL);
            long d = when > now ? (long)(when - now) : 0;
            a->retry_after = d > FL_UPLOAD_MAX_RETRY_AFTER ? FL_UPLOAD_MAX_RETRY_AFTER : d;
        }
    }
    return len;
}

/* Copy printable ASCII of s[0..n) up to the first line end. */
static void printable(char *out, size_t cap, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n' || c == '\r')
            break;
        out[o++] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    out[o] = '\0';
}

/* Pull the reason (non-2xx) or the first accepted id (2xx) out of the body. */
static void read_answer(const answer *a, fl_upload_result *res)
{
    if (!a->body.len)
        return;
    json_error_t jerr;
    json_t *j = json_loadb(a->body.p, a->body.len, 0, &jerr);
    if (j && json_is_object(j)) {
        json_t *acc = json_object_get(j, "accepted");
        json_t *first = json_is_array(acc) ? json_array_get(acc, 0) : NULL;
        const char *id = json_string_value(json_object_get(first, "id"));
        if (id)
            printable(res->id, sizeof res->id, id, strlen(id));
        res->duplicate = json_is_true(json_object_get(first, "duplicate"));
        const char *e = json_string_value(json_object_get(j, "error"));
        if (!e)
            e = json_string_value(json_object_get(j, "message"));
        if (e && res->status / 100 != 2)
            printable(res->message, sizeof res->message, e, strlen(e));
        /* A 2xx that names no accepted log -- an empty "accepted" list,
         * or an "error" and no list -- did not take it: a buggy server, a
         * gateway or another application at this URL.  Deleting the log
         * on it would lose the report (contract: 200 lists what is
         * durable). */
        const char *err = json_string_value(json_object_get(j, "error")); /* not "message" */
        if (res->status / 100 == 2 && (json_is_array(acc) ? !json_array_size(acc) : err != NULL)) {
            json_t *rej = json_array_get(json_object_get(j, "rejected"), 0);
            const char *why = json_string_value(json_object_get(rej, "error"));
            if (!why)
                why = err ? err : "its \"accepted\" list is empty";
            res->outcome = FL_UPLOAD_FAILED;
            char msg[sizeof res->message];
            snprintf(msg, sizeof msg, "the server answered but accepted nothing: %s", why);
            printable(res->message, sizeof res->message, msg, strlen(msg));
        }
    } else if (res->status / 100 != 2 && a->body.p[0] != '<') {
        /* An HTML error page (a proxy's, a web server's) has no reason in
         * its first line, only "<html>": the status then says more. */
        printable(res->message, sizeof res->message, a->body.p, a->body.len);
    }
    json_decref(j);
}

/* An HTML page is a web server's or a proxy's answer, never a crash
 * server's: Faultline answers JSON, MojoCrash servers an empty or
 * plain-text body.  Told by its Content-Type, or by how the body starts
 * (a page sent as text/plain or with no type at all). */
static bool answer_is_html(const answer *a)
{
    if (a->html_type)
        return true;
    const char *p = a->body.p, *end = p + a->body.len;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    size_t left = (size_t)(end - p);
    return (left >= 9 && !strncasecmp(p, "<!DOCTYPE", 9)) ||
           (left >= 5 && !strncasecmp(p, "<html", 5));
}

static fl_upload_outcome classify_status(long st)
{
    if (st >= 200 && st < 300)
        return FL_UPLOAD_DELIVERED;
    if (st == 400)
        return FL_UPLOAD_REJECTED;
    if (st == 413)
        return FL_UPLOAD_TOO_LARGE;
    if (st == 408 || st == 429 || st >= 500)
        return FL_UPLOAD_RETRY;
    return FL_UPLOAD_FAILED; /* 3xx, 401, 403, 404, ...: the setup is wrong, not the log */
}

static fl_upload_outcome classify_curl(CURLcode cc)
{
    switch (cc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_UNKNOWN_OPTION:
    /* This machine's TLS setup, not the server: the CA file that cannot
     * be loaded, a crypto engine, a CRL file.  Retrying mends none. */
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
        return FL_UPLOAD_FAILED;
    default:
        return FL_UPLOAD_RETRY; /* refused, timed out, reset, DNS, TLS handshake... */
    }
}

/* Whether host is in a no_proxy list: "*", or an entry equal to the host
 * or, for a name, a domain it is in (a leading '.' optional),
 * case-insensitive.  As libcurl reads it, less its CIDR ranges: this only
 * words a message. */
static bool in_no_proxy(const char *host, const char *list)
{
    size_t hl = strlen(host);
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    while (list && *list) {
        while (*list == ' ' || *list == ',')
            list++;
        size_t n = strcspn(list, ", ");
        const char *e = list;
        list += n;
        if (n == 1 && *e == '*')
            return true;
        if (n && *e == '.') {
            e++;
            n--;
        }
        if (!n || n > hl || (is_ip && n != hl))
            continue;
        if (!strncasecmp(host + hl - n, e, n) && (n == hl || host[hl - n - 1] == '.'))
            return true;
    }
    return false;
}

/* The environment variable whose proxy libcurl will use for url, into
 * out ("" when none), as libcurl picks it: SCHEME_proxy (lowercase only
 * for http, where HTTP_PROXY could be set by a CGI request's Proxy:
 * header), else all_proxy / ALL_PROXY, unless no_proxy / NO_PROXY names
 * the host. */
static void proxy_in_effect(const char *url, char *out, size_t cap)
{
    out[0] = '\0';
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;
    if (!u || curl_url_set(u, CURLUPART_URL, url, 0) ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) || curl_url_get(u, CURLUPART_HOST, &host, 0))
        goto out;
    const char *np = getenv("no_proxy");
    if (!np || !*np)
        np = getenv("NO_PROXY");
    char bare[256]; /* an IPv6 host comes in brackets */
    snprintf(bare, sizeof bare, "%s", host[0] == '[' ? host + 1 : host);
    bare[strcspn(bare, "]")] = '\0';
    if (np && in_no_proxy(bare, np))
        goto out;
    char names[4][24];
    snprintf(names[0], sizeof names[0], "%.8s_proxy", scheme);
    snprintf(names[1], sizeof names[1], "%.8s_PROXY", scheme);
    for (char *c = names[1]; *c != '_'; c++)
        *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
    snprintf(names[2], sizeof names[2], "all_proxy");
    snprintf(names[3], sizeof names[3], "ALL_PROXY");
    for (int i = 0; i < 4; i++) {
        if (i == 1 && !strcmp(scheme, "http"))
            continue;
        const char *v = getenv(names[i]);
        if (v && *v) {
            snprintf(out, cap, "%.20s", names[i]);
            break;
        }
    }
out:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
}

static int add_header(struct curl_slist **l, const char *h)
{
    struct curl_slist *n = curl_slist_append(*l, h);
    if (!n)
        return -1;
    *l = n;
    return 0;
}

fl_upload *fl_upload_new(const fl_upload_config *cfg)
{
    static bool curl_ready;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return NULL;
        curl_ready = true;
    }
    fl_upload *up = calloc(1, sizeof *up);
    if (!up)
        return NULL;
    up->cfg = *cfg;
    if (up->cfg.connect_timeout_s <= 0)
        up->cfg.connect_timeout_s = 10;
    if (up->cfg.timeout_s <= 0)
        up->cfg.timeout_s = 60;
    if (!(up->curl = curl_easy_init())) {
        free(up);
        return NULL;
    }
    if (up->cfg.url)
        proxy_in_effect(up->cfg.url, up->proxy_var, sizeof up->proxy_var);
    return up;
}

void fl_upload_cap_time(fl_upload *up, long ms)
{
    up->cap_ms = ms > 0 ? ms : 0;
}

void fl_upload_free(fl_upload *up)
{
    if (!up)
        return;
    curl_easy_cleanup(up->curl);
    free(up);
}

int fl_upload_send(fl_upload *up, const fl_upload_report *rep, fl_upload_result *res)
{
    memset(res, 0, sizeof *res);
    res->outcome = FL_UPLOAD_FAILED;
    res->retry_after_s = -1;

    buf body = {.max = rep->len + BODY_OVERHEAD};
    char *gz = NULL;
    size_t gzlen = 0;
    struct curl_slist *hdrs = NULL;
    answer ans = {.body = {.max = FL_UPLOAD_MAX_RESPONSE}, .retry_after = -1};
    int rc = -1;

    char bnd[64];
    for (int tries = 0;; tries++) {
        make_boundary(bnd, sizeof bnd);
        if (!memmem(rep->data, rep->len, bnd, strlen(bnd)))
            break;
        if (tries == 8) {
            snprintf(res->message, sizeof res->message, "no usable multipart boundary");
            goto out;
        }
    }
    if (build_body(rep, bnd, &body) != 0) {
        snprintf(res->message, sizeof res->message, "out of memory building the request");
        goto out;
    }
    const char *send = body.p;
    size_t sendlen = body.len;
    if (!up->cfg.no_gzip) {
        if (gzip_body(body.p, body.len, &gz, &gzlen) != 0) {
            snprintf(res->message, sizeof res->message, "gzip failed");
            goto out;
        }
        send = gz;
        sendlen = gzlen;
    }

    char line[512];
    int hr = 0;
    snprintf(line, sizeof line, "Content-Type: multipart/form-data; boundary=%s", bnd);
    hr |= add_header(&hdrs, line);
    hr |= add_header(&hdrs, "Accept: application/json, text/plain");
    /* A small body goes at once (no 100-continue round trip).  A large
     * one waits for the server's go-ahead: a server that would refuse it
     * (over --max-body, 1 MiB by default) says 413 before it is sent,
     * where otherwise it reads the whole body first to answer -- which on
     * a slow link outlasts its --request-timeout, and the request is cut
     * with no answer, so the log would be kept and sent again every run. */
    hr |= add_header(&hdrs, sendlen > (1u << 20) ? "Expect: 100-continue" : "Expect:");
    if (!up->cfg.no_gzip)
        hr |= add_header(&hdrs, "Content-Encoding: gzip");
    if (up->cfg.key && *up->cfg.key) {
        for (const char *k = up->cfg.key; *k; k++)
            if ((unsigned char)*k < 0x20 || *k == 0x7f) { /* would split the header */
                snprintf(res->message, sizeof res->message, "the ingest key has control characters");
                goto out;
            }
        snprintf(line, sizeof line, "X-Faultline-Key: %s", up->cfg.key);
        hr |= add_header(&hdrs, line);
    }
    if (hr) {
        snprintf(res->message, sizeof res->message, "out of memory");
        goto out;
    }

    CURL *c = up->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, up->cfg.url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, send);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)sendlen);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_USERAGENT,
                     up->cfg.user_agent ? up->cfg.user_agent
                                        : "faultline-report/" FL_REPORTER_VERSION);
    long connect_ms = up->cfg.connect_timeout_s * 1000, total_ms = up->cfg.timeout_s * 1000;
    if (up->cap_ms && up->cap_ms < total_ms) /* a caller's deadline (--retry-until) */
        total_ms = up->cap_ms;
    if (connect_ms > total_ms)
        connect_ms = total_ms;
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, total_ms);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* a redirected POST is a setup error */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (up->cfg.cacert) /* a server with a certificate of a private CA */
        curl_easy_setopt(c, CURLOPT_CAINFO, up->cfg.cacert);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &ans);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &ans);
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    if (up->cfg.stop) {
        /* libcurl calls this about once a second even while nothing
         * moves, and at once when the signal wakes its poll. */
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)up->cfg.stop);
    }

    CURLcode cc = curl_easy_perform(c);
    rc = 0;
    if (cc == CURLE_ABORTED_BY_CALLBACK && up->cfg.stop && *up->cfg.stop) {
        res->outcome = FL_UPLOAD_INTERRUPTED;
        snprintf(res->message, sizeof res->message, "interrupted");
        goto out;
    }
    if (cc != CURLE_OK) {
        res->outcome = classify_curl(cc);
        long oe = 0, port = 0, connect_code = 0;
        char *ip = NULL;
        char why[CURL_ERROR_SIZE + 160];
        curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &oe);
        curl_easy_getinfo(c, CURLINFO_PRIMARY_IP, &ip);
        curl_easy_getinfo(c, CURLINFO_PRIMARY_PORT, &port);
        curl_easy_getinfo(c, CURLINFO_HTTP_CONNECTCODE, &connect_code);
        if (connect_code >= 400) {
            /* The proxy would not open a tunnel to the server (its rules,
             * its authentication): its setup, which no retry mends. */
            res->outcome = FL_UPLOAD_FAILED;
            snprintf(res->message, sizeof res->message, "the proxy in %s refused: CONNECT %ld",
                     up->proxy_var[0] ? up->proxy_var : "the environment", connect_code);
            goto out;
        }
        if (cc == CURLE_UNSUPPORTED_PROTOCOL && strstr(errbuf, "HTTP/0.9")) {
            /* Something answered that is no HTTP server (another service
             * on that port): the URL's doing, not this machine's. */
            res->not_crash_server = true;
            snprintf(res->message, sizeof res->message,
                     "what answered at %s port %ld does not speak HTTP (is the URL's port right?)",
                     ip ? ip : "the server", port);
            goto out;
        }
        fl_net_message(why, sizeof why, errbuf[0] ? errbuf : curl_easy_strerror(cc), oe, ip, port);
        char full[sizeof why + 64];
        /* curl's message names the proxy's address, the URL another one:
         * say which it is. */
        if (up->proxy_var[0])
            snprintf(full, sizeof full, "through the proxy in %s: %s", up->proxy_var, why);
        else
            snprintf(full, sizeof full, "%s", why);
        printable(res->message, sizeof res->message, full, strlen(full));
        /* A certificate that does not verify does not mend itself: say
         * how to name the CA that signed it. */
        if (cc == CURLE_PEER_FAILED_VERIFICATION && !up->cfg.cacert) {
            size_t ml = strlen(res->message);
            snprintf(res->message + ml, sizeof res->message - ml,
                     " (a server with a certificate of a private CA: --cacert FILE or "
                     "FAULTLINE_CACERT)");
        }
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
    res->outcome = classify_status(res->status);
    res->retry_after_s = ans.retry_after;
    read_answer(&ans, res);
    if (res->outcome != FL_UPLOAD_RETRY && res->outcome != FL_UPLOAD_FAILED &&
        answer_is_html(&ans)) {
        /* A 2xx, 400 or 413 that deletes the log must come from a crash
         * server.  An HTML page is a proxy's or another web server's (nginx
         * answering 400 to plain http on its https port, a captive portal's
         * 200, a front's size limit): it says nothing about the log, and
         * every log would meet it. */
        res->outcome = FL_UPLOAD_FAILED;
        res->not_crash_server = true;
        res->id[0] = '\0';
        res->duplicate = false;
        snprintf(res->message, sizeof res->message,
                 "answered %ld with an HTML page, not a crash server's answer%s", res->status,
                 res->status == 413 ? ": the front's size limit (nginx: client_max_body_size)"
                                    : " (a proxy, or another server at this URL?)");
    }
    char *loc = NULL;
    if (res->status / 100 == 3) {
        /* Not followed (a redirected POST may turn into a GET): say where
         * it points, so the person can fix the URL. */
        char where[200] = "";
        if (curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK && loc)
            printable(where, sizeof where, loc, strlen(loc));
        /* From https to plain http: the ingest key and the crash would
         * travel unencrypted; a front that does that is misconfigured or
         * not the person's. */
        char *from = NULL;
        bool downgrade = curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &from) == CURLE_OK && from &&
                         !strncasecmp(from, "https:", 6) && loc && !strncasecmp(loc, "http:", 5);
        if (where[0] && downgrade)
            snprintf(res->message, sizeof res->message,
                     "redirected from https to plain http (%.120s): not followed; check it "
                     "first: the key and the crash would travel unencrypted",
                     where);
        else if (where[0])
            snprintf(res->message, sizeof res->message,
                     "redirected to %s; use that URL (--url or FAULTLINE_URL)", where);
        else
            snprintf(res->message, sizeof res->message, "a redirect, not followed");
    }
    if (!res->message[0] && res->outcome != FL_UPLOAD_DELIVERED)
        snprintf(res->message, sizeof res->message, "no reason given");

out:
    curl_slist_free_all(hdrs);
    free(ans.body.p);
    free(body.p);
    free(gz);
    return rc;
}
