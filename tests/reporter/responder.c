/*
 * responder - a scripted HTTP server for the reporter's protocol tests.
 *
 * It answers the Nth request with the Nth status of --script (the last one
 * repeats) and records what it received, so that a test can check the
 * request byte for byte and make the server say 400, 413, 429 or 503, or
 * not answer at all, on demand - things the real server cannot be made to
 * do.  Not a server implementation: it understands just enough multipart to
 * take the request apart.
 *
 *   responder --port-file F --record DIR [--script 200,429,hang]
 *             [--retry-after N | --retry-after-date N | --retry-after-raw TEXT]
 *             [--delay-ms N] [--not-http]
 *             [--max-seconds N]
 *
 * For request N (1-based) it writes into DIR:
 *   req-N.headers   "METHOD URL" then "Name: value" lines
 *   req-N.body      the body as received
 *   req-N.form      the body after gunzip (Content-Encoding: gzip), else a copy
 *   req-N.log       the content of the part that has a filename
 *   req-N.parthdr   that part's headers
 *   req-N.fields    "name=value" for every part without a filename
 *   count           N, rewritten after each request is recorded
 * Then it answers: 200 {"accepted":[{"id":"test-N"}]}, 4xx/5xx with
 * {"error":"scripted N"} (Retry-After on 429/503 when --retry-after is set;
 * 3xx and 502 answer an HTML page as web servers and proxies do, 3xx with
 * Location: http://redirect.example/api/v1/crashes),
 * "hang": no answer until the process ends, or "reset": the connection
 * closed without an answer (a proxy that chokes on one log).  A letter before a status
 * changes the body: hN an HTML page (text/html), dN an HTML page sent as
 * text/plain after blank lines ("<!doctype html>"), eN an empty body, tN
 * a plain-text "OK" (a MojoCrash server's success), aN a JSON answer
 * accepting nothing ({"accepted":[]}), xN a JSON "error" and no list.
 */
#define _GNU_SOURCE /* memmem, open_memstream */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define MAX_BODY (40u << 20)
#define MAX_SCRIPT 64

static const char *record_dir;
static int script[MAX_SCRIPT];     /* status, 0 for "hang", -1 for "reset" */
static char body_kind[MAX_SCRIPT]; /* the body: 0 the usual, or a letter (above) */
static int nscript;
static long retry_after = -1;
static long retry_after_date = -1; /* send Retry-After as an HTTP date, now + N s */
static const char *retry_after_raw; /* send this Retry-After, as it is */
static long delay_ms;
static atomic_int counter;

typedef struct req {
    char *body;
    size_t len, cap;
    bool too_big;
} req;

static void die(const char *msg)
{
    fprintf(stderr, "responder: %s\n", msg);
    exit(2);
}

static void write_file(const char *name, const void *data, size_t len)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", record_dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        die("cannot write a record file");
    if (len && fwrite(data, 1, len, f) != len)
        die("short write");
    fclose(f);
    rename(tmp, path); /* readers never see half a file */
}

static void write_n(int n, const char *ext, const void *data, size_t len)
{
    char name[64];
    snprintf(name, sizeof name, "req-%d.%s", n, ext);
    write_file(name, data, len);
}

static enum MHD_Result hdr_cb(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    (void)kind;
    FILE *f = cls;
    fprintf(f, "%s: %s\n", k, v ? v : "");
    return MHD_YES;
}

static int gunzip(const char *in, size_t len, char **out, size_t *outlen)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 15 + 16) != Z_OK)
        return -1;
    size_t cap = len * 4 + 1024, n = 0;
    char *o = malloc(cap);
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)len;
    int zr = Z_OK;
    while (o && zr != Z_STREAM_END) {
        if (n == cap) {
            if (cap >= MAX_BODY)
                break;
            char *no = realloc(o, cap * 2);
            if (!no)
                break;
            o = no;
            cap *= 2;
        }
        zs.next_out = (Bytef *)o + n;
        zs.avail_out = (uInt)(cap - n);
        zr = inflate(&zs, Z_NO_FLUSH);
        n = cap - zs.avail_out;
        if (zr != Z_OK && zr != Z_STREAM_END)
            break;
    }
    inflateEnd(&zs);
    if (zr != Z_STREAM_END || zs.avail_in != 0) {
        free(o);
        return -1;
    }
    *out = o;
    *outlen = n;
    return 0;
}

/* Split a multipart body into the files described above. */
static void take_apart(int n, const char *ctype, const char *body, size_t len)
{
    const char *b = ctype ? strstr(ctype, "boundary=") : NULL;
    if (!b)
        return;
    b += 9;
    char bnd[200] = "--";
    size_t bl = 2;
    if (*b == '"')
        b++;
    while (*b && *b != '"' && *b != ';' && bl + 1 < sizeof bnd)
        bnd[bl++] = *b++;
    bnd[bl] = '\0';

    char *fields = NULL;
    size_t flen = 0;
    FILE *ff = open_memstream(&fields, &flen);
    const char *p = memmem(body, len, bnd, bl);
    while (p) {
        p += bl;
        if ((size_t)(body + len - p) >= 2 && !memcmp(p, "--", 2))
            break; /* closing delimiter */
        if ((size_t)(body + len - p) < 2 || memcmp(p, "\r\n", 2))
            break;
        p += 2;
        const char *he = memmem(p, (size_t)(body + len - p), "\r\n\r\n", 4);
        if (!he)
            break;
        const char *content = he + 4;
        char delim[210];
        snprintf(delim, sizeof delim, "\r\n%s", bnd);
        const char *end = memmem(content, (size_t)(body + len - content), delim, strlen(delim));
        if (!end)
            break;
        char hdrs[2048];
        size_t hl = (size_t)(he - p) < sizeof hdrs - 1 ? (size_t)(he - p) : sizeof hdrs - 1;
        memcpy(hdrs, p, hl);
        hdrs[hl] = '\0';
        if (strstr(hdrs, "filename=")) {
            write_n(n, "log", content, (size_t)(end - content));
            write_n(n, "parthdr", hdrs, hl);
        } else {
            const char *nm = strstr(hdrs, "name=\"");
            if (nm) {
                nm += 6;
                const char *q = strchr(nm, '"');
                fprintf(ff, "%.*s=%.*s\n", (int)(q ? q - nm : 0), nm, (int)(end - content),
                        content);
            }
        }
        p = end + 2;
    }
    fclose(ff);
    write_n(n, "fields", fields, flen);
    free(fields);
}

static const char *port_file;
static bool not_http; /* --not-http: a banner on the port, no HTTP server */

/* The port into port_file, atomically (a test polls for it). */
static void write_port(unsigned port)
{
    char pbuf[16];
    int pl = snprintf(pbuf, sizeof pbuf, "%u\n", port);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fwrite(pbuf, 1, (size_t)pl, f) != (size_t)pl || fclose(f))
        die("cannot write the port file");
    rename(tmp, port_file);
}

static enum MHD_Result answer(struct MHD_Connection *c, int n)
{
    int at = (n - 1) < nscript ? n - 1 : nscript - 1;
    int st = script[at];
    char k = body_kind[at];
    if (delay_ms > 0) {
        struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (st == 0) {
        for (;;)
            pause(); /* "hang": the process ends us */
    }
    if (st < 0)
        return MHD_NO; /* "reset": MHD closes the connection, no answer */
    char body[128];
    bool html = k == 'h' || (!k && (st / 100 == 3 || st == 502));
    const char *ctype = html ? "text/html" : "application/json";
    if (k == 'd') {
        snprintf(body, sizeof body, "\r\n  <!doctype html>\n<title>%d</title>\n", st);
        ctype = "text/plain";
    } else if (k == 'e') {
        body[0] = '\0';
        ctype = "text/plain";
    } else if (k == 't') {
        snprintf(body, sizeof body, "OK\n");
        ctype = "text/plain";
    } else if (k == 'a') {
        snprintf(body, sizeof body, "{\"accepted\":[]}");
    } else if (k == 'x') {
        snprintf(body, sizeof body, "{\"error\":\"storage failed\"}");
    } else if (html)
        snprintf(body, sizeof body, "<html>\r\n<head><title>%d</title></head>\r\n</html>\r\n", st);
    else if (st / 100 == 2)
        snprintf(body, sizeof body, "{\"accepted\":[{\"id\":\"test-%d\"}]}", n);
    else
        snprintf(body, sizeof body, "{\"error\":\"scripted %d\"}", st);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", ctype);
    if (st / 100 == 3)
        MHD_add_response_header(r, "Location", "http://redirect.example/api/v1/crashes");
    if ((st == 429 || st == 503) && retry_after_raw) {
        MHD_add_response_header(r, "Retry-After", retry_after_raw);
    } else if ((st == 429 || st == 503) && retry_after >= 0) {
        char ra[32];
        snprintf(ra, sizeof ra, "%ld", retry_after);
        MHD_add_response_header(r, "Retry-After", ra);
    } else if ((st == 429 || st == 503) && retry_after_date >= 0) {
        char ra[64];
        time_t t = time(NULL) + retry_after_date;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(ra, sizeof ra, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        MHD_add_response_header(r, "Retry-After", ra);
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)st, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **con_cls)
{
    (void)cls;
    (void)version;
    req *q = *con_cls;
    if (!q) {
        if (!(q = calloc(1, sizeof *q)))
            return MHD_NO;
        *con_cls = q;
        return MHD_YES;
    }
    if (*size) {
        if (q->len + *size > MAX_BODY) {
            q->too_big = true;
        } else {
            if (q->len + *size > q->cap) {
                size_t cap = q->cap ? q->cap : 4096;
                while (cap < q->len + *size)
                    cap *= 2;
                char *nb = realloc(q->body, cap);
                if (!nb)
                    return MHD_NO;
                q->body = nb;
                q->cap = cap;
            }
            memcpy(q->body + q->len, data, *size);
            q->len += *size;
        }
        *size = 0;
        return MHD_YES;
    }

    int n = atomic_fetch_add(&counter, 1) + 1;
    char *hb = NULL;
    size_t hl = 0;
    FILE *hf = open_memstream(&hb, &hl);
    fprintf(hf, "%s %s\n", method, url);
    MHD_get_connection_values(c, MHD_HEADER_KIND, hdr_cb, hf);
    fclose(hf);
    write_n(n, "headers", hb, hl);
    free(hb);
    write_n(n, "body", q->body, q->len);

    const char *enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
    char *form = q->body;
    size_t flen = q->len;
    char *unz = NULL;
    if (enc && !strcasecmp(enc, "gzip")) {
        if (gunzip(q->body, q->len, &unz, &flen) == 0)
            form = unz;
        else
            form = NULL;
    }
    if (form) {
        write_n(n, "form", form, flen);
        take_apart(n, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"), form, flen);
    }
    free(unz);
    char cnt[32];
    int cl = snprintf(cnt, sizeof cnt, "%d\n", n);
    write_file("count", cnt, (size_t)cl);
    return answer(c, n);
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
                 enum MHD_RequestTerminationCode tc)
{
    (void)cls;
    (void)c;
    (void)tc;
    req *q = *con_cls;
    if (q) {
        free(q->body);
        free(q);
    }
    *con_cls = NULL;
}

int main(int argc, char **argv)
{
    long max_seconds = 120;
    const char *scr = "200";
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--not-http")) { /* takes no value */
            not_http = true;
            i--;
            continue;
        }
        if (!v)
            die("option without value");
        if (!strcmp(a, "--port-file"))
            port_file = v;
        else if (!strcmp(a, "--record"))
            record_dir = v;
        else if (!strcmp(a, "--script"))
            scr = v;
        else if (!strcmp(a, "--retry-after"))
            retry_after = strtol(v, NULL, 10);
        else if (!strcmp(a, "--retry-after-raw"))
            retry_after_raw = v;
        else if (!strcmp(a, "--retry-after-date"))
            retry_after_date = strtol(v, NULL, 10);
        else if (!strcmp(a, "--delay-ms"))
            delay_ms = strtol(v, NULL, 10);
        else if (!strcmp(a, "--max-seconds"))
            max_seconds = strtol(v, NULL, 10);
        else
            die("unknown option");
    }
    if (!port_file || !record_dir)
        die("need --port-file and --record");
    char *s = strdup(scr);
    for (char *sv = NULL, *t = strtok_r(s, ",", &sv); t && nscript < MAX_SCRIPT;
         t = strtok_r(NULL, ",", &sv)) {
        bool letter = strchr("hdetax", *t) && t[1] >= '0' && t[1] <= '9';
        body_kind[nscript] = letter ? *t : 0;
        script[nscript++] = !strcmp(t, "hang") ? 0 : !strcmp(t, "reset") ? -1 : atoi(t + letter);
    }
    free(s);
    if (!nscript)
        die("empty script");

    /* Every thread inherits this mask, so only sigwait() below sees them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (not_http) {
        /* Another service on the port: a banner, no HTTP. */
        int ls = socket(AF_INET, SOCK_STREAM, 0);
        socklen_t sl = sizeof sa;
        if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 16) ||
            getsockname(ls, (struct sockaddr *)&sa, &sl))
            die("cannot listen");
        write_port(ntohs(sa.sin_port));
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        alarm((unsigned)max_seconds);
        for (;;) {
            int c = accept(ls, NULL, NULL);
            if (c < 0)
                continue;
            static const char banner[] = "SSH-2.0-OpenSSH_9.2p1\r\n";
            char buf[4096];
            if (read(c, buf, sizeof buf) < 0 || write(c, banner, sizeof banner - 1) < 0)
                fprintf(stderr, "responder: %s\n", strerror(errno));
            close(c);
        }
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
    if (!d)
        die("cannot start the daemon");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port)
        die("no port");
    write_port(info->port);

    alarm((unsigned)max_seconds); /* a test that forgets us does not leave us behind */
    int sig;
    sigwait(&set, &sig);
    /* Hanging handlers would keep MHD_stop_daemon() waiting: just go. */
    _exit(0);
}
