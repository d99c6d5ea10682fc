/*
 * symupload.c - `faultline symbols add --server URL`: upload debug files.
 *
 * Contract (docs/http-api.md): POST BASE/api/v1/symbols with the file as the
 * body answers 201 {"build_id":"..."}; the admin token goes in
 * "Authorization: Bearer".  Each file first goes through the server's own
 * acceptance check (fl_symcheck_debug_file), so a file the server would
 * refuse is refused here before any byte is sent; its build id is compared
 * with the server's answer.  The file is streamed from disk.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fl_neterr.h"
#include "fl_symcache.h"
#include "fl_symcheck.h"
#include "fl_symdwp.h"
#include "fl_symupload.h"

#define RESPONSE_CAP 4096 /* bytes of the server's answer we keep */

typedef struct resp {
    char buf[RESPONSE_CAP + 1];
    size_t len;
} resp;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    resp *r = arg;
    size_t len = size * n, k = len;
    if (k > RESPONSE_CAP - r->len)
        k = RESPONSE_CAP - r->len;
    memcpy(r->buf + r->len, p, k);
    r->len += k;
    r->buf[r->len] = '\0';
    return len;
}

typedef struct progress {
    const char *name;
    int index, count;
    int show;                 /* print "[i/n] NAME PCT%" on stderr */
    int shown_pct;            /* the percentage on the line, -1: none yet */
    long stall_s;             /* give up after this long with nothing moving */
    curl_off_t last_ul, last_dl;
    struct timespec last_move;
    int stalled;
} progress;

/* libcurl's own low-speed limit averages over the last 5 s, so an upload
 * that went out fast and then waited on a silent server would only be
 * given up 5 s late; this counts from the last byte that moved. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal;
    progress *p = arg;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (ulnow != p->last_ul || dlnow != p->last_dl || p->last_move.tv_sec == 0) {
        p->last_ul = ulnow;
        p->last_dl = dlnow;
        p->last_move = now;
    } else if ((now.tv_sec - p->last_move.tv_sec) * 1000 +
                   (now.tv_nsec - p->last_move.tv_nsec) / 1000000 >=
               p->stall_s * 1000) {
        p->stalled = 1;
        return 1; /* CURLE_ABORTED_BY_CALLBACK */
    }
    /* Drawn when the percentage changes: libcurl calls this twice for
     * every block it sends (after the read, and again from its loop),
     * and on and on while the answer is awaited, so drawing on each call
     * showed every percentage twice, and 100% many times. */
    int pct = ultotal > 0 ? (int)(ulnow * 100 / ultotal) : -1;
    if (p->show && pct >= 0 && pct != p->shown_pct) {
        fprintf(stderr, "\r[%d/%d] %s %3d%%\033[K", p->index, p->count, p->name, pct);
        p->shown_pct = pct;
    }
    return 0;
}

/* Does s[0..n) end with suffix? */
static int ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

int fl_symupload_base_url(const char *server, char *out, size_t cap)
{
    /* The ingest URL people keep in FAULTLINE_URL may carry ?key=KEY. */
    size_t n = strcspn(server, "?#");
    while (n > 0 && server[n - 1] == '/')
        n--;
    static const char *const api[] = {"/api/v1/crashes", "/api/v1/symbols"};
    for (size_t i = 0; i < sizeof api / sizeof api[0]; i++) {
        if (ends_with(server, n, api[i])) {
            n -= strlen(api[i]);
            break;
        }
    }
    while (n > 0 && server[n - 1] == '/')
        n--;
    if (n == 0 || n >= cap)
        return -1;
    memcpy(out, server, n);
    out[n] = '\0';
    return 0;
}

/* The server's answer as one line: trailing blanks and newlines dropped,
 * inner control characters shown as spaces. */
static void one_line(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20)
            s[i] = ' ';
}

/* Seconds from a Retry-After value: delay-seconds or an HTTP-date; -1
 * when it is neither. */
static long retry_after_s(const char *v)
{
    if (*v >= '0' && *v <= '9') {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end && *end != ' ')
            return -1;
        return errno || n > 86400 ? 86400 : (long)n;
    }
    time_t when = curl_getdate(v, NULL), now = time(NULL);
    if (when == (time_t)-1)
        return -1;
    return when <= now ? 0 : when - now > 86400 ? 86400 : (long)(when - now);
}

/* Failures that say nothing about the file or the request: the server is
 * away, restarting or busy. */
static int temporary_curl(CURLcode cc)
{
    return cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT ||
           cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING ||
           cc == CURLE_PARTIAL_FILE;
}

int fl_symupload(const char *base_url, const char *token, const char *cacert, const char *path,
                 int show_progress, int index, int count, long stall_s, fl_symupload_result *res,
                 char *msg, size_t msglen)
{
    *res = (fl_symupload_result){0, -1, 0};
    char why[512], dwo[17];
    fl_symcheck_info info;
    /* A .dwo file is keyed by its DWO id, which the answer names instead
     * of a build id ({"dwo_id":"..."}). */
    /* A .dwp package is kept under each DWO id it holds; the answer names
     * the first (the smallest). */
    fl_dwp *pkg = NULL;
    int rc = fl_dwp_open(path, &pkg, why, sizeof why);
    if (rc == 1) {
        snprintf(dwo, sizeof dwo, "%016" PRIx64, fl_dwp_id(pkg, 0));
        fl_dwp_close(pkg);
    } else if (rc < 0) {
        snprintf(msg, msglen, "%s: not a usable .dwp package: %s", path, why);
        return FL_SYM_ENOTELF;
    } else {
        rc = fl_symcheck_dwo_file(path, dwo, sizeof dwo, why, sizeof why);
    }
    if (rc == 0)
        rc = fl_symcheck_debug_file(path, &info, why, sizeof why);
    if (rc < 0) {
        snprintf(msg, msglen, "%s: %s", path, why);
        return rc == FL_SYMCHECK_EFILE ? FL_SYM_EIO : FL_SYM_ENOTELF;
    }
    int is_dwo = rc == 1;
    const char *hex = is_dwo ? dwo : info.build_id;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return FL_SYM_EIO;
    }
    char url[2048];
    if ((size_t)snprintf(url, sizeof url, "%s/api/v1/symbols", base_url) >= sizeof url) {
        fclose(f);
        snprintf(msg, msglen, "server URL too long");
        return FL_SYM_EINVAL;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        fclose(f);
        snprintf(msg, msglen, "cannot initialise libcurl");
        return FL_SYM_ENOMEM;
    }
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    /* A file over 1 MiB waits for the server's go-ahead (as faultline-report
     * sends a large report): a server that would refuse it (over its
     * --max-symbol-file) answers 413 before a byte of it is sent, rather
     * than after reading it all.  A smaller one goes at once, without the
     * round trip (libcurl would ask for one past 1 MiB by itself; said
     * here either way so as not to depend on its version). */
    h = curl_slist_append(h, st.st_size > (1 << 20) ? "Expect: 100-continue" : "Expect:");
    {
        /* The file's name, shown by GET /api/v1/symbols. */
        const char *base = strrchr(path, '/');
        char nh[300];
        if ((size_t)snprintf(nh, sizeof nh, "X-Faultline-Name: %s", base ? base + 1 : path) <
            sizeof nh)
            h = curl_slist_append(h, nh);
    }
    if (token && *token) {
        char auth[1024];
        if ((size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s", token) < sizeof auth)
            h = curl_slist_append(h, auth);
    }
    static resp r;
    r.len = 0;
    r.buf[0] = '\0';
    progress pr = {.name = path,
                   .index = index,
                   .count = count,
                   .show = show_progress,
                   .shown_pct = -1,
                   .stall_s = stall_s};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READDATA, f);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)st.st_size);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "faultline/0.1.0");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &pr);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    /* A server behind a TLS proxy whose certificate a private CA signed,
     * as faultline-report and submit take it. */
    if (cacert)
        curl_easy_setopt(c, CURLOPT_CAINFO, cacert);
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode cc = curl_easy_perform(c);
    long status = 0, oe = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    /* Where it went wrong and why, as faultline-report says it: "Failed
     * to connect to HOST port N ...: ... (Connection refused)". */
    char cwhy[CURL_ERROR_SIZE + 160], *ip = NULL;
    long port = 0;
    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &oe);
    curl_easy_getinfo(c, CURLINFO_PRIMARY_IP, &ip);
    curl_easy_getinfo(c, CURLINFO_PRIMARY_PORT, &port);
    fl_net_message(cwhy, sizeof cwhy, errbuf[0] ? errbuf : curl_easy_strerror(cc), oe, ip, port);
    res->http_status = status;
    struct curl_header *ra = NULL;
    if (status && curl_easy_header(c, "Retry-After", 0, CURLH_HEADER, -1, &ra) == CURLHE_OK)
        res->retry_after = retry_after_s(ra->value);
    one_line(r.buf);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    fclose(f);
    if (show_progress)
        fprintf(stderr, "\r\033[K");
    if (pr.stalled) {
        snprintf(msg, msglen, "%s: upload to %s failed: nothing moved for %ld s (--timeout)",
                 path, url, stall_s);
        res->temporary = 1;
        return FL_SYM_EIO;
    }
    if (cc != CURLE_OK) {
        /* A certificate that does not verify does not mend itself: say
         * how to name the CA that signed it. */
        snprintf(msg, msglen, "%s: upload to %s failed: %s%s", path, url, cwhy,
                 cc == CURLE_PEER_FAILED_VERIFICATION && !cacert
                     ? " (a server with a certificate of a private CA: --cacert FILE or "
                       "FAULTLINE_CACERT)"
                     : "");
        res->temporary = temporary_curl(cc);
        return FL_SYM_EIO;
    }
    if (status == 413) {
        /* Too large stays too large: failed for good, not tried again.
         * Faultline's own answer gives its limit; a proxy's (nginx's
         * client_max_body_size) does not. */
        const char *lim = strstr(r.buf, "\"limit\":");
        unsigned long long limit = lim ? strtoull(lim + 8, NULL, 10) : 0;
        if (limit)
            snprintf(msg, msglen,
                     "%s: too large for the server (HTTP 413): %lld bytes, over the %llu bytes "
                     "its --max-symbol-file allows; not uploaded (raise `faultline serve "
                     "--max-symbol-file`)",
                     path, (long long)st.st_size, limit);
        else
            snprintf(msg, msglen,
                     "%s: too large for the server (HTTP 413): %lld bytes, over its "
                     "--max-symbol-file or a proxy's body limit (nginx: client_max_body_size); "
                     "not uploaded: %.200s",
                     path, (long long)st.st_size, r.buf);
        return FL_SYM_EIO;
    }
    if (status != 200 && status != 201) {
        snprintf(msg, msglen, "%s: server answered HTTP %ld: %.200s", path, status, r.buf);
        res->temporary = status == 429 || status == 502 || status == 503 || status == 504 ||
                         status == 507;
        return FL_SYM_EIO;
    }
    if (!strstr(r.buf, hex)) {
        /* Not a Faultline server's answer for this file (a proxy, another
         * service at that URL): not counted as uploaded. */
        snprintf(msg, msglen,
                 "%s %s: HTTP %ld, but the answer does not name the file's %s (is %s a "
                 "Faultline server?): %.200s",
                 hex, path, status, is_dwo ? "DWO id" : "build id", url, r.buf);
        return FL_SYM_EIO;
    }
    snprintf(msg, msglen, "%s %s: uploaded (HTTP %ld, %lld bytes)", hex, path, status,
             (long long)st.st_size);
    return 0;
}
