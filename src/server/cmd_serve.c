/*
 * cmd_serve.c - `faultline serve`: options, keys, start-up and shutdown.
 *
 * Shutdown order on SIGINT/SIGTERM: stop accepting connections, let the
 * writer commit everything it was handed (those requests still get their
 * 200), stop HTTP, then let each worker finish its batch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fl_ctxsrv.h"
#include "fl_exit.h"
#include "fl_hostcheck.h"
#include "fl_serve.h"
#include "fl_srcctx.h"
#include "fl_srvsym.h"
#include "fl_srvutil.h"
#include "fl_symingest.h"
#include "fl_symstore.h"

typedef struct opts {
    char host[64];
    unsigned port;
    const char *data, *db, *queue, *role;
    unsigned workers, http_threads, lease_s, top_n;
    bool keyless;
    uint64_t max_body, max_decoded, max_ratio, max_header, timeout_s, max_pending, max_memory;
    uint64_t request_timeout_s;
    uint64_t max_client_conns;
    int64_t max_backlog;
    double rate, burst;
    const char *skip_list, *prefix_list;
    uint64_t max_symbol_file, symcache_lru, republish_after, context_max_paths;
    uint64_t db_timeout_s;
    uint64_t debuginfod_miss_s;
    bool no_remote_unwind, no_id_filter, no_keep_minidumps;
    int64_t retention_s; /* 0: crashes are kept for good */
    const char *notify_url;
    unsigned notify_digest, notify_period_s; /* --notify-digest N/PERIOD */
    bool listen_given; /* --listen on the command line */
    /* --allowed-host's values, joined by commas; [0] == '\0': none. */
    char allowed_hosts[2048];
    int log_time;      /* --log-time: FL_LOG_TIME_* */
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: faultline serve [options]\n"
            "\n"
            "  --listen ADDR:PORT   address to listen on: IPv4, [IPv6] or localhost (default\n"
            "                       127.0.0.1:8080; port 0: any free port)\n"
            "  --allowed-host NAME  a Host the server answers to, with any port (repeat it,\n"
            "                       or NAME,NAME; *.example.com: the names under it; *: any);\n"
            "                       others are answered 421 (DNS rebinding).  Always\n"
            "                       answered: localhost, 127.x.x.x, [::1] and the --listen\n"
            "                       address.  None given: only those on a loopback --listen,\n"
            "                       any Host on another.  Behind a reverse proxy that passes\n"
            "                       its Host on, or on a private network, give the names\n"
            "  --data DIR           data directory (default ./var)\n"
            "  --db URL             store: sqlite:PATH or a bare PATH (default\n"
            "                       DIR/faultline.db), or postgres://USER@HOST:PORT/DB\n"
            "                       (postgresql:// too) to share one store between\n"
            "                       servers (default $FAULTLINE_DB; password: PGPASSWORD or\n"
            "                       ~/.pgpass rather than the command line)\n"
            "  --queue URL          task queue: embedded (default: a table of the store,\n"
            "                       SQLite's or PostgreSQL's), or amqp://USER:PASS@HOST:PORT/\n"
            "                       VHOST for RabbitMQ (with --db postgres://...; default\n"
            "                       $FAULTLINE_QUEUE); amqps:// for TLS, with ?cacertfile=,\n"
            "                       &certfile=&keyfile= (else the system's CAs);\n"
            "                       ?heartbeat=S: AMQP heartbeat (default 10 s, 0: none)\n"
            "  --db-timeout S       with --db postgres://: a statement PostgreSQL has not\n"
            "                       answered within S seconds fails (503 for a report), and\n"
            "                       its connection is dropped and made again -- so that a\n"
            "                       database frozen with its sockets open stalls neither the\n"
            "                       API nor a shutdown for good (default 30, 1..86400; a new\n"
            "                       connection gets S, 10 at most; a schema upgrade at start\n"
            "                       10*S)\n"
            "  --role ROLE          all (default), api (HTTP only) or worker (processing\n"
            "                       only; with --listen it answers /healthz and /metrics)\n"
            "  --workers N          processing threads (default 2, at most 256; 0: none,\n"
            "                       reports are stored and queued for other processes)\n"
            "  --http-threads N     HTTP threads (default 2, 1..256)\n"
            "  --keyless-ingest     accept POST / without an ingest key (MojoCrash clients)\n"
            "  --max-body BYTES     largest request body (default 1048576) -> 413\n"
            "  --max-decoded BYTES  largest decompressed body (default 8388608) -> 413\n"
            "  --max-ratio N        largest gzip expansion ratio (default 100) -> 413\n"
            "  --max-header BYTES   memory per connection for the header block (default 16384,\n"
            "                       4096..1048576); more than 64 query parameters (under\n"
            "                       16384: one per 256 bytes) -> 414\n"
            "  --timeout S          idle connection timeout (default 30, 1..86400)\n"
            "  --request-timeout S  a request's headers and a report's body must arrive whole\n"
            "                       within S seconds, however steadily they trickle in\n"
            "                       (default 120, 0: off, ..86400); symbol uploads are exempt\n"
            "  --max-client-connections N  connections one client address may hold open\n"
            "                       on each HTTP thread (default 256, 0: no limit); behind\n"
            "                       a reverse proxy every client is the proxy's address\n"
            "  --rate-limit N       reports per second per ingest key, N or N/s (default 0:\n"
            "                       off) -> 429\n"
            "  --rate-burst N       burst of the rate limit (default 2*N, at least 1)\n"
            "  --max-pending N      reports waiting for a commit before 503 (default 16384)\n"
            "  --max-memory BYTES   report data all ingest requests may hold at once before\n"
            "                       503 (default 268435456, at least --max-body +\n"
            "                       --max-decoded; 0: no limit)\n"
            "  --max-backlog N      unprocessed crashes before 503 (default 1000000)\n"
            "  --lease S            lease of a claimed task (default 60, at most 86400)\n"
            "  --republish-after S  with --queue amqp://: publish again the task of a report\n"
            "                       stored S seconds ago whose task never reached the broker\n"
            "                       (a server stopped in between, a broker away; default 30,\n"
            "                       1..86400)\n"
            "  --top-frames N       frames in a signature (default 5, 1..256)\n"
            "  --skip-list FILE     function names skipped in signatures (default DIR/skip.txt)\n"
            "  --prefix-list FILE   name prefixes skipped in signatures (default DIR/prefix.txt)\n"
            "  --max-symbol-file BYTES  largest debug file upload (default 1073741824) -> 413\n"
            "  --symcache-lru N     open symcaches kept per process (default 32, 1..1024)\n"
            "  --debuginfod-miss S  a debuginfod server's \"not found\" for a build id is\n"
            "                       believed S seconds, then asked again (default 600)\n"
            "  --no-remote-unwind   keep the client's stack, and a minidump's threads at\n"
            "                       their pcs (no server-side CFI unwind)\n"
            "  --context-max-paths N  paths a calling context's search may try (default\n"
            "                       20000000; a crash's searches share twice that)\n"
            "  --no-id-filter       look every new crash id up among those stored instead of\n"
            "                       keeping a filter of them in memory (~10 bits per crash)\n"
            "  --no-keep-minidumps  keep only the crash log an uploaded minidump becomes, not\n"
            "                       the dump (it holds the process's stack memory; default:\n"
            "                       kept, GET /api/v1/crashes/ID/minidump)\n"
            "  --retention D        remove crashes received more than D ago: N days, or N\n"
            "                       followed by d, h, m or s (default 0: keep them for good);\n"
            "                       groups keep their counts\n"
            "  --notify-url URL     POST each new crash group and each regression to URL as\n"
            "                       JSON (with a \"text\" line for Slack-style webhooks); give\n"
            "                       it to the processes that process crashes\n"
            "  --notify-digest N[/P]  at most N events a period P (default 5/1m; N up to\n"
            "                       10000; P: N seconds, or N followed by s, m or h, 1 s to\n"
            "                       a day) are POSTed one by one; the others wait for the\n"
            "                       period's end and go as one digest, one a period while\n"
            "                       a storm lasts (0: every event alone); needs --notify-url\n"
            "  --log-time WHEN      start each line of the log (stderr) and of the banner\n"
            "                       (stdout) with its UTC time, 2026-01-31T12:00:00.000Z:\n"
            "                       auto (default: unless that stream is the systemd\n"
            "                       journal, named by JOURNAL_STREAM), always or never\n"
            "\n"
            "Symbols: uploads and DIR/symbols/incoming/ land in DIR/symbols/processed/,\n"
            "symcaches in DIR/symcache/, debuginfod downloads in DIR/debuginfod-cache/,\n"
            "source files shown by the portal (from debuginfod) in DIR/source-cache/.\n"
            "Environment: FAULTLINE_ADMIN_TOKEN and FAULTLINE_INGEST_KEY fix the keys;\n"
            "otherwise they are generated once and kept in DIR (a --role worker process\n"
            "has none: it serves no API).  DEBUGINFOD_URLS lists\n"
            "debuginfod servers asked for system libraries' debug files and for the\n"
            "source files of frames.  FAULTLINE_DB and\n"
            "FAULTLINE_QUEUE are the defaults of --db and --queue.\n"
            "Signals: SIGTERM or SIGINT stop (what was answered 200 is kept); SIGHUP reads\n"
            "the skip and prefix lists again (for crashes processed from then on).\n");
}

/* A usage error: one line that says what is wrong and where to look, as
 * every command's; the whole usage after it would scroll it away. */
__attribute__((format(printf, 1, 2))) static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "faultline serve: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "; see faultline serve --help\n");
    va_end(ap);
}

/* The numeric options' ranges, checked as each is read (num()) and
 * again once all are (parse_opts(): the defaults too).  Values outside
 * would start a server that cannot work: libmicrohttpd drops every
 * connection with a header block under 4 KiB, a timeout of 0 lets idle
 * clients stay for good, a limit of 0 answers every report 413 or 503,
 * a --max-backlog of 0 every report 503. */
typedef struct num_range {
    const char *name;
    size_t off; /* of its uint64_t in opts; (size_t)-1: not kept there */
    uint64_t min, max;
    const char *unit;
} num_range;
#define NOT_KEPT ((size_t)-1)
static const num_range ranges[] = {
    {"--max-body", offsetof(opts, max_body), 1024, 1ull << 31, ""},
    {"--max-decoded", offsetof(opts, max_decoded), 1024, 1ull << 34, ""},
    {"--max-ratio", offsetof(opts, max_ratio), 1, 1000000, ""},
    {"--max-header", offsetof(opts, max_header), 4096, 1u << 20, ""},
    {"--timeout", offsetof(opts, timeout_s), 1, 86400, ""},
    {"--request-timeout", offsetof(opts, request_timeout_s), 0, 86400, ""},
    {"--max-client-connections", offsetof(opts, max_client_conns), 0, 65536, ""},
    {"--max-pending", offsetof(opts, max_pending), 1, 1ull << 30, ""},
    {"--max-symbol-file", offsetof(opts, max_symbol_file), 1, 1ull << 40, ""},
    {"--context-max-paths", offsetof(opts, context_max_paths), 1, 10000000000ull, ""},
    {"--symcache-lru", offsetof(opts, symcache_lru), 1, 1024, ""},
    {"--debuginfod-miss", offsetof(opts, debuginfod_miss_s), 1, 86400, " seconds"},
    {"--republish-after", offsetof(opts, republish_after), 1, 86400, ""},
    {"--db-timeout", offsetof(opts, db_timeout_s), 1, 86400, ""},
    {"--workers", NOT_KEPT, 0, 256, ""},
    {"--http-threads", NOT_KEPT, 1, 256, ""},
    {"--top-frames", NOT_KEPT, 1, 256, ""},
    {"--lease", NOT_KEPT, 1, 86400, " seconds"},
    {"--max-backlog", NOT_KEPT, 1, UINT64_MAX, ""},
};

static const num_range *range_of(const char *opt)
{
    for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++)
        if (!strcmp(ranges[i].name, opt))
            return &ranges[i];
    return NULL;
}

/* "--workers: '-1' is out of range: 0..256". */
static void out_of_range(const num_range *r, const char *opt, const char *v)
{
    if (!r)
        usage_error("%s: '%.40s' is out of range: 0 or more", opt, v);
    else if (r->max == UINT64_MAX)
        usage_error("%s: '%.40s' is out of range: at least %" PRIu64 "%s", opt, v, r->min, r->unit);
    else
        usage_error("%s: '%.40s' is out of range: %" PRIu64 "..%" PRIu64 "%s", opt, v, r->min,
                    r->max, r->unit);
}

/* opt's value v into *out, within its range (ranges[]) when it has one:
 * 0, or -1 said.  A negative or too large number is out of range, not
 * "not a number". */
static int num(const char *opt, const char *v, uint64_t *out)
{
    if (!v) {
        usage_error("%s needs a value", opt);
        return -1;
    }
    const num_range *r = range_of(opt);
    if (fl_parse_u64(v, out)) {
        const char *d = v + (*v == '-' || *v == '+');
        if (*d && d[strspn(d, "0123456789")] == '\0')
            out_of_range(r, opt, v);
        else
            usage_error("%s: '%.40s' is not a number", opt, v);
        return -1;
    }
    if (r && (*out < r->min || *out > r->max)) {
        out_of_range(r, opt, v);
        return -1;
    }
    return 0;
}

/* --retention: N days, or N with a unit (d, h, m, s), into seconds. */
static int parse_retention(const char *v, int64_t *out)
{
    static const struct {
        char unit;
        uint64_t s;
    } units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
    char digits[24];
    size_t n = v ? strspn(v, "0123456789") : 0;
    uint64_t x, mul = 0;
    if (n && n < sizeof digits && !v[n])
        mul = 86400;
    for (size_t i = 0; n && n < sizeof digits && i < sizeof units / sizeof *units; i++)
        if (v[n] == units[i].unit && !v[n + 1])
            mul = units[i].s;
    if (mul) {
        memcpy(digits, v, n);
        digits[n] = '\0';
    }
    /* At most 100 years: beyond, keeping for good says it better. */
    if (!mul || fl_parse_u64(digits, &x) || x > 36500ull * 86400 / mul) {
        usage_error("--retention wants N days, or N followed by d, h, m or "
                    "s (e.g. 90d, 12h); 0 keeps crashes for good");
        return -1;
    }
    *out = (int64_t)(x * mul);
    return 0;
}

/* --notify-digest N[/PERIOD]: PERIOD is N followed by s, m or h (bare:
 * seconds), at most a day. */
static int parse_digest(const char *v, opts *o)
{
    static const struct {
        char unit;
        uint64_t s;
    } units[] = {{'h', 3600}, {'m', 60}, {'s', 1}};
    char num_s[24], per_s[24];
    const char *slash = v ? strchr(v, '/') : NULL;
    size_t n = slash ? (size_t)(slash - v) : v ? strlen(v) : 0;
    uint64_t x, p = 60, mul = 1;
    bool ok = n && n < sizeof num_s;
    if (ok) {
        memcpy(num_s, v, n);
        num_s[n] = '\0';
        ok = !fl_parse_u64(num_s, &x) && x <= 10000;
    }
    if (ok && slash) {
        size_t k = strspn(slash + 1, "0123456789");
        ok = k && k < sizeof per_s;
        for (size_t i = 0; ok && slash[1 + k] && i < sizeof units / sizeof *units; i++)
            if (slash[1 + k] == units[i].unit)
                mul = units[i].s;
        ok = ok && (!slash[1 + k] || (mul != 1 || slash[1 + k] == 's')) &&
             (!slash[1 + k] || !slash[2 + k]);
        if (ok) {
            memcpy(per_s, slash + 1, k);
            per_s[k] = '\0';
            ok = !fl_parse_u64(per_s, &p) && p && p <= 86400 / mul;
            p *= mul;
        }
    }
    if (!ok) {
        usage_error("--notify-digest wants N (0..10000) or N/PERIOD, the "
                    "period 1 s to a day (e.g. 5/1m, 10/30s)");
        return -1;
    }
    o->notify_digest = (unsigned)x;
    o->notify_period_s = (unsigned)p;
    return 0;
}

/* ADDR:PORT, [IPV6]:PORT or localhost:PORT. */
static int parse_listen(opts *o, const char *v)
{
    const char *colon = v ? strrchr(v, ':') : NULL;
    const char *host = v;
    size_t hlen = colon ? (size_t)(colon - v) : 0;
    if (v && v[0] == '[') { /* [::1]:8080 */
        host = v + 1;
        hlen = colon && colon > v + 1 && colon[-1] == ']' ? (size_t)(colon - v) - 2 : 0;
    }
    uint64_t port = 0;
    bool addr_ok =
        colon && hlen && hlen < sizeof o->host && !(memchr(host, ':', hlen) && host == v);
    bool parsed = addr_ok && !fl_parse_u64(colon + 1, &port);
    bool digits = addr_ok && colon[1] && !colon[1 + strspn(colon + 1, "0123456789")];
    if (addr_ok && (parsed ? port > 65535 : digits)) {
        /* The address is fine, the port a number: only its size is wrong. */
        usage_error("--listen: port %.40s is out of range (0..65535)", colon + 1);
        return -1;
    }
    if (!parsed) {
        usage_error("--listen wants ADDR:PORT, e.g. 127.0.0.1:8080 or [::1]:8080");
        return -1;
    }
    memcpy(o->host, host, hlen);
    o->host[hlen] = '\0';
    if (!strcmp(o->host, "localhost"))
        snprintf(o->host, sizeof o->host, "127.0.0.1");
    o->port = (unsigned)port;
    return 0;
}

static int parse_args(opts *o, int argc, char **argv)
{
    bool digest_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
        /* --name=value as well as --name value, as every other command
         * (getopt_long) and faultline-report take it: a unit file's
         * --listen=0.0.0.0:8080 was "unknown option" here alone. */
        char name[48];
        const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
        bool inline_v = eq && (size_t)(eq - a) < sizeof name, taken = false;
        if (inline_v) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            a = name;
            v = eq[1] ? eq + 1 : NULL; /* --data= : "needs a value" */
        }
#define TAKE (taken = true, inline_v ? v : (i++, v))
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--listen")) {
            if (!v)
                goto missing;
            if (parse_listen(o, TAKE))
                return -1;
            o->listen_given = true;
        } else if (!strcmp(a, "--allowed-host")) {
            if (!v)
                goto missing;
            size_t have = strlen(o->allowed_hosts), vn = strlen(v);
            if (have + vn + 2 > sizeof o->allowed_hosts) {
                usage_error("--allowed-host: too many names (at most %zu bytes in all)",
                            sizeof o->allowed_hosts - 1);
                return -1;
            }
            if (have)
                o->allowed_hosts[have++] = ',';
            memcpy(o->allowed_hosts + have, TAKE, vn + 1);
            if (!vn) /* "" would add nothing: said rather than ignored */
                goto missing;
        } else if (!strcmp(a, "--data")) {
            if (!(o->data = TAKE))
                goto missing;
        } else if (!strcmp(a, "--db")) {
            if (!(o->db = TAKE))
                goto missing;
        } else if (!strcmp(a, "--queue")) {
            if (!(o->queue = TAKE))
                goto missing;
        } else if (!strcmp(a, "--role")) {
            if (!(o->role = TAKE))
                goto missing;
        } else if (!strcmp(a, "--skip-list")) {
            if (!(o->skip_list = TAKE))
                goto missing;
        } else if (!strcmp(a, "--prefix-list")) {
            if (!(o->prefix_list = TAKE))
                goto missing;
        } else if (!strcmp(a, "--keyless-ingest")) {
            o->keyless = true;
        } else if (!strcmp(a, "--no-remote-unwind")) {
            o->no_remote_unwind = true;
        } else if (!strcmp(a, "--no-id-filter")) {
            o->no_id_filter = true;
        } else if (!strcmp(a, "--no-keep-minidumps")) {
            o->no_keep_minidumps = true;
        } else if (!strcmp(a, "--max-symbol-file")) {
            if (num(a, TAKE, &o->max_symbol_file))
                return -1;
        } else if (!strcmp(a, "--context-max-paths")) {
            if (num(a, TAKE, &o->context_max_paths))
                return -1;
        } else if (!strcmp(a, "--symcache-lru")) {
            if (num(a, TAKE, &o->symcache_lru))
                return -1;
        } else if (!strcmp(a, "--debuginfod-miss")) {
            if (num(a, TAKE, &o->debuginfod_miss_s))
                return -1;
        } else if (!strcmp(a, "--workers") || !strcmp(a, "--http-threads") ||
                   !strcmp(a, "--lease") || !strcmp(a, "--top-frames")) {
            if (num(a, TAKE, &n))
                return -1;
            if (!strcmp(a, "--workers"))
                o->workers = (unsigned)n;
            else if (!strcmp(a, "--http-threads"))
                o->http_threads = (unsigned)n;
            else if (!strcmp(a, "--lease"))
                o->lease_s = (unsigned)n;
            else
                o->top_n = (unsigned)n;
        } else if (!strcmp(a, "--max-body")) {
            if (num(a, TAKE, &o->max_body))
                return -1;
        } else if (!strcmp(a, "--max-decoded")) {
            if (num(a, TAKE, &o->max_decoded))
                return -1;
        } else if (!strcmp(a, "--max-ratio")) {
            if (num(a, TAKE, &o->max_ratio))
                return -1;
        } else if (!strcmp(a, "--max-header")) {
            if (num(a, TAKE, &o->max_header))
                return -1;
        } else if (!strcmp(a, "--timeout")) {
            if (num(a, TAKE, &o->timeout_s))
                return -1;
        } else if (!strcmp(a, "--request-timeout")) {
            if (num(a, TAKE, &o->request_timeout_s))
                return -1;
        } else if (!strcmp(a, "--max-client-connections")) {
            if (num(a, TAKE, &o->max_client_conns))
                return -1;
        } else if (!strcmp(a, "--notify-url")) {
            if (!(o->notify_url = TAKE))
                goto missing;
        } else if (!strcmp(a, "--notify-digest")) {
            if (!v)
                goto missing;
            if (parse_digest(TAKE, o))
                return -1;
            digest_given = true;
        } else if (!strcmp(a, "--log-time")) {
            if (!v)
                goto missing;
            if (fl_log_time_parse(TAKE, &o->log_time)) {
                usage_error("--log-time wants auto, always or never");
                return -1;
            }
        } else if (!strcmp(a, "--retention")) {
            if (!v)
                goto missing;
            if (parse_retention(TAKE, &o->retention_s))
                return -1;
        } else if (!strcmp(a, "--max-pending")) {
            if (num(a, TAKE, &o->max_pending))
                return -1;
        } else if (!strcmp(a, "--max-memory")) {
            if (num(a, TAKE, &o->max_memory))
                return -1;
        } else if (!strcmp(a, "--republish-after")) {
            if (num(a, TAKE, &o->republish_after))
                return -1;
        } else if (!strcmp(a, "--db-timeout")) {
            if (num(a, TAKE, &o->db_timeout_s))
                return -1;
        } else if (!strcmp(a, "--max-backlog")) {
            if (num(a, TAKE, &n))
                return -1;
            o->max_backlog = (int64_t)(n > INT64_MAX / 2 ? INT64_MAX / 2 : n);
        } else if (!strcmp(a, "--rate-limit") || !strcmp(a, "--rate-burst")) {
            char *end = NULL;
            if (!TAKE)
                goto missing;
            double d = strtod(v, &end);
            if (end == v || (*end && strcmp(end, "/s")) || d < 0) {
                usage_error("%s: '%.40s' is not a number", a, v);
                return -1;
            }
            if (!strcmp(a, "--rate-limit")) {
                o->rate = d;
            } else if (d < 1) {
                usage_error("--rate-burst: at least 1");
                return -1;
            } else {
                o->burst = d;
            }
        } else {
            usage_error("%s '%s'", a[0] == '-' ? "unknown option" : "unexpected argument", a);
            return -1;
        }
        if (inline_v && !taken) {
            usage_error("%s takes no value", a);
            return -1;
        }
        continue;
    missing:
        usage_error("%s needs a value", a);
        return -1;
#undef TAKE
    }
    if (o->notify_url && strncmp(o->notify_url, "http://", 7) &&
        strncmp(o->notify_url, "https://", 8)) {
        /* The scheme only: a webhook's URL is its secret. */
        const char *sep = strstr(o->notify_url, "://");
        usage_error("--notify-url %.*s%s: wants an http:// or https:// URL",
                    sep ? (int)(sep - o->notify_url > 20 ? 20 : sep - o->notify_url) : 0,
                    o->notify_url, sep ? "://..." : "(no scheme)");
        return -1;
    }
    if (digest_given && !o->notify_url) {
        /* Said, rather than a setting that silently does nothing. */
        usage_error("--notify-digest needs --notify-url");
        return -1;
    }
    if (o->allowed_hosts[0]) {
        char herr[256];
        fl_hostcheck *hc = fl_hostcheck_new(o->host, o->allowed_hosts, herr, sizeof herr);
        if (!hc) {
            usage_error("%s", herr);
            return -1;
        }
        fl_hostcheck_free(hc);
    }
    /* The ranges again, for values no option gave (ranges[]). */
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        if (ranges[i].off == NOT_KEPT)
            continue;
        uint64_t v = *(const uint64_t *)((const char *)o + ranges[i].off);
        if (v < ranges[i].min || v > ranges[i].max) {
            usage_error("%s: %" PRIu64 "..%" PRIu64 "", ranges[i].name, ranges[i].min,
                        ranges[i].max);
            return -1;
        }
    }
    /* One request holds its body and, gzip'd, its decoded text at once:
     * below that, the largest report allowed would be answered 503 for
     * ever, and its sender would retry for ever. */
    if (o->max_memory && o->max_memory < o->max_body + o->max_decoded) {
        usage_error("--max-memory %" PRIu64 " is below what one request may hold (--max-body + "
                    "--max-decoded = %" PRIu64 "): such a report would be refused for ever",
                    o->max_memory, o->max_body + o->max_decoded);
        return -1;
    }
    const char *sq = o->db && strncmp(o->db, "postgres://", 11) &&
                             strncmp(o->db, "postgresql://", 13)
                         ? o->db + (strncmp(o->db, "sqlite:", 7) ? 0 : 7)
                         : NULL;
    if (sq && (!*sq || !strcmp(sq, ":memory:") || *sq == '?' || strstr(sq, "mode=memory"))) {
        /* SQLite would give each connection a private database of its own:
         * the writer and the workers would never see each other's data. */
        usage_error("--db '%s': SQLite needs a file's path (an in-memory database would be a "
                    "different one for each connection)",
                    o->db);
        return -1;
    }
    return 0;
}

/* A database file that is not there yet, or starts as SQLite's do. */
static bool sqlite_file_ok(const char *path)
{
    char head[16];
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return n == 0 || (n == sizeof head && !memcmp(head, "SQLite format 3", 16));
}

/* Writes key into path (mode 0600): beside it first, then renamed, so
 * that a crash (or a full disk) midway leaves no empty or partial key
 * behind.  On failure err says why. */
static int write_key(const char *path, const char *key, char *err, size_t errlen)
{
    /* Ours alone: two servers starting on one data directory (two API
     * servers) would otherwise write the same file. */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %.300s: %s", tmp, strerror(errno));
        return -1;
    }
    size_t n = strlen(key);
    errno = 0;
    bool ok = write(fd, key, n) == (ssize_t)n && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    int wr_errno = errno ? errno : EIO;
    if (close(fd) && ok) {
        ok = false;
        wr_errno = errno;
    }
    if (ok && rename(tmp, path)) {
        ok = false;
        wr_errno = errno;
    }
    if (!ok) {
        snprintf(err, errlen, "cannot write %.300s: %s", path, strerror(wr_errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* A key clients can send as it is, in a header or a query: printable
 * ASCII without blanks, and short enough for out (cap).  NULL, or why not. */
static const char *key_problem(const char *k, size_t cap)
{
    if (strlen(k) >= cap)
        return "too long";
    for (const unsigned char *p = (const unsigned char *)k; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return "a blank, control or non-ASCII character in it";
    return NULL;
}

/* One of the server's two keys: its value, and whether DIR says it yet. */
typedef struct srv_key {
    const char *env;  /* the variable that fixes it (FAULTLINE_ADMIN_TOKEN) */
    const char *name; /* its file in DIR, and its name in the store (admin_token) */
    char val[128];
    /* Made at this start, or taken from the store in place of DIR's:
     * save_key() writes it into DIR once the start is past its refusals. */
    bool unsaved;
    bool shared; /* taken from the store */
} srv_key;

/* The key in the file at path into out (cap): 1, or 0 when there is no
 * file or it is empty, or -1 with err saying why it is not usable. */
static int read_key(const char *path, char *out, size_t cap, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[1024];
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!ok || !*line)
        return 0;
    const char *why = key_problem(line, cap);
    if (why) {
        snprintf(err, errlen,
                 "%.300s is not usable as a key: %s (at most %zu bytes "
                 "of printable ASCII, no blanks)",
                 path, why, cap - 1);
        return -1;
    }
    snprintf(out, cap, "%s", line);
    return 1;
}

/* The key named by k->env, else the one stored in dir/k->name, else a new
 * one, kept in memory only (k->unsaved): a start refused later must not
 * leave a key file behind that no server answered to.  On failure err
 * says why. */
static int get_key(srv_key *k, const char *dir, char *err, size_t errlen)
{
    const char *e = getenv(k->env);
    const char *why;
    if (e && *e) {
        /* Cut short or trimmed, it would be another key than the one the
         * clients were given: every request 401, nothing in the log. */
        if ((why = key_problem(e, sizeof k->val))) {
            snprintf(err, errlen,
                     "%s is not usable as a key: %s (%zu bytes; at most %zu of "
                     "printable ASCII, no blanks)",
                     k->env, why, strlen(e), sizeof k->val - 1);
            return -1;
        }
        snprintf(k->val, sizeof k->val, "%s", e);
        return 0;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, k->name);
    int r = read_key(path, k->val, sizeof k->val, err, errlen);
    if (r)
        return r > 0 ? 0 : -1;
    if (fl_random_key(k->val)) {
        snprintf(err, errlen, "cannot make a key: %s", strerror(errno));
        return -1;
    }
    k->unsaved = true;
    return 0;
}

/* Writes a key that get_key() made or share_key() took into dir, once
 * the start is past its refusals.  A made key finds the file as get_key()
 * did, without a key, unless another server on dir has written one since
 * (two started at once): that one is dir's, so it becomes this server's
 * too.  A key taken from the store replaces the file's.  On failure err
 * says why. */
static int save_key(srv_key *k, const char *dir, char *err, size_t errlen)
{
    if (!k->unsaved)
        return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, k->name);
    int r = k->shared ? 0 : read_key(path, k->val, sizeof k->val, err, errlen);
    if (r < 0 || (r == 0 && write_key(path, k->val, err, errlen)))
        return -1;
    if (k->shared)
        fl_log(stderr,
               "faultline serve: %s now holds the %s that the servers of this database share "
               "(table settings)",
               path, k->name);
    k->unsaved = false;
    return 0;
}

/* Whether err says the store or the broker is not up (yet): nothing
 * listens, no route, a timeout, PostgreSQL still starting -- as when every
 * service of a machine starts at once.  A refusal (a wrong password, no
 * such database or vhost, a certificate) is not. */
static bool not_up_yet(const char *err)
{
    static const char *const signs[] = {
        "connection refused", "no route to host", "network is unreachable", "timeout expired",
        "timed out", "the database system is starting up", "the database system is shutting down",
        "the database system is in recovery mode", "connection reset"};
    for (size_t i = 0; i < sizeof signs / sizeof *signs; i++)
        if (strcasestr(err, signs[i]))
            return true;
    return false;
}

/* At start, a store or broker not up yet is waited for rather than a
 * reason to exit (a supervisor would only start the server again and
 * again): said at once, then every 30 s, and tried every second until
 * it answers, SIGINT or SIGTERM.  open() returns NULL with err set.
 * NULL with err set to the last failure or, stopped, to "". */
static void *wait_up(void *(*open)(const char *, char *, size_t), const char *what,
                     const char *url, const sigset_t *sigs, char *err, size_t errlen)
{
    /* Monotonic: a step of the wall clock back by hours would hold the
     * next line back as long, and say a negative time so far. */
    uint64_t first = fl_mono_ns(), said = 0;
    for (;;) {
        void *x = open(url, err, errlen);
        if (x || !not_up_yet(err))
            return x;
        uint64_t now = fl_mono_ns();
        if (!said || now - said >= 30000000000ull) {
            fl_log(stderr,
                   "faultline serve: %s; waiting for %s (%.0f s so far; tried every second)", err,
                   what, (now - first) / 1e9);
            said = now;
        }
        struct timespec ts = {1, 0};
        int sig = sigtimedwait(sigs, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            fl_log(stderr, "faultline serve: stopped while waiting for %s", what);
            *err = '\0';
            return NULL;
        }
    }
}

/* --db-timeout, for open_pg (wait_up's open() takes the URL only). */
static unsigned pg_timeout_s;

static void *open_pg(const char *url, char *err, size_t errlen)
{
    return fl_store_pg_open(url, pg_timeout_s, err, errlen);
}

static void *open_amqp(const char *url, char *err, size_t errlen)
{
    return fl_queue_amqp_new(url, err, errlen);
}

/* The admin token or the default project's ingest key repeating a key of
 * another project (made through /api/v1/projects, so only a key fixed by
 * the environment can): every reporter of that project would hold the
 * admin token, or its reports would land in the default project and a
 * revoke of the key there would not stop it.  -1 with err, or 0. */
static int keys_clash(fl_store *st, fl_store_conn *c, const char *admin, const char *ingest,
                      char *err, size_t errlen)
{
    if (!strcmp(admin, ingest)) {
        /* Each was checked before it was shared; one came from the store
         * (the other servers' admin token as this one's ingest key). */
        snprintf(err, errlen,
                 "the ingest key is the admin token the servers of this database share (table "
                 "settings); give FAULTLINE_INGEST_KEY another value");
        return -1;
    }
    json_t *j = st->list_projects ? st->list_projects(c) : NULL, *pr, *kv;
    size_t i, k;
    int rc = 0;
    json_array_foreach(json_object_get(j, "projects"), i, pr)
    {
        const char *id = json_string_value(json_object_get(pr, "id"));
        if (!id || !strcmp(id, FL_PROJECT_DEFAULT))
            continue;
        json_array_foreach(json_object_get(pr, "keys"), k, kv)
        {
            const char *key = json_string_value(json_object_get(kv, "key"));
            if (rc || !key)
                continue;
            if (!strcmp(key, admin))
                snprintf(err, errlen,
                         "the admin token is an ingest key of project %.64s; give "
                         "FAULTLINE_ADMIN_TOKEN another value",
                         id);
            else if (!strcmp(key, ingest))
                snprintf(err, errlen,
                         "the ingest key is one of project %.64s's; give FAULTLINE_INGEST_KEY "
                         "another value, or revoke that key from %.64s first",
                         id, id);
            else
                continue;
            rc = -1;
        }
    }
    json_decref(j);
    return rc;
}

/* With a store that several servers share (PostgreSQL), every server must
 * answer to the same keys, or a client gets 401 from all but one: the
 * first server to start stores its key in the database, and the others
 * take that one (into their own data directory too, by save_key(), so
 * that the file says what the server uses).  A key fixed by env is
 * offered as well and wins for this server; one that differs from the
 * shared key is worth a warning, since clients of the one get 401 from
 * servers of the other. */
static int share_key(fl_store *st, fl_store_conn *c, srv_key *k, char *err, size_t errlen)
{
    if (!st->shared_value)
        return 0;
    char shared[128];
    if (st->shared_value(c, k->name, k->val, shared, sizeof shared)) {
        snprintf(err, errlen, "cannot share the %s through the store: %s", k->name, st->error(c));
        return -1;
    }
    if (!strcmp(shared, k->val))
        return 0;
    const char *e = getenv(k->env);
    if (e && *e) {
        fl_log(stderr,
               "faultline serve: warning: %s differs from the %s that the other servers of "
               "this database share (table settings); clients using the one get 401 from "
               "servers using the other",
               k->env, k->name);
        return 0;
    }
    snprintf(k->val, sizeof k->val, "%s", shared);
    k->unsaved = k->shared = true;
    return 0;
}

/* SIGHUP: the skip and prefix lists read again.  New crashes are grouped
 * by them; crashes already grouped stay where they are.  A list that
 * cannot be read leaves the rules in use. */
static void reload_rules(fl_group_rules **rules, fl_workers *workers, const char *skip,
                         const char *prefix, unsigned top_n)
{
    fl_group_rules *nr = fl_group_rules_new();
    if (!nr || fl_group_rules_load(nr, skip, prefix)) {
        fl_log(stderr,
               "faultline serve: SIGHUP: cannot read %s or %s (%s); the grouping rules in use "
               "stay",
               skip, prefix, nr ? strerror(errno) : "out of memory");
        fl_group_rules_free(nr);
        return;
    }
    fl_group_rules_set_top_n(nr, top_n);
    fl_workers_set_rules(workers, nr); /* returns once no batch uses the old */
    fl_group_rules_free(*rules);
    *rules = nr;
    fl_log(stderr, "faultline serve: SIGHUP: grouping rules read again from %s and %s", skip,
           prefix);
}

/* Opens the database's lock file and takes it (LOCK_EX or LOCK_SH)
 * without waiting.  Returns its descriptor, or -1 after saying why: `held`
 * completes "DB ..." when another process holds it the other way. */
static int lock_database(const char *lockp, int mode, const char *held, const char *dbpath)
{
    int fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        /* A read-only or full file system, a directory not ours. */
        fl_log(stderr, "faultline serve: cannot open %s: %s", lockp, strerror(errno));
        return -1;
    }
    if (flock(fd, mode | LOCK_NB)) {
        if (errno == EWOULDBLOCK)
            fl_log(stderr, "faultline serve: %s %s", dbpath, held);
        else
            fl_log(stderr, "faultline serve: cannot lock %s: %s", lockp, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* The command that runs the reporter, for the start-up line a new user
 * copies: "faultline-report" when that is the one beside this program
 * and PATH finds it (an installed pair); else the path of the one beside
 * it -- in the same directory, or in the build tree, where make run
 * leaves it (src/cli/faultline, src/reporter/faultline-report) and no
 * PATH finds it; else "faultline-report" all the same. */
static void reporter_command(char *out, size_t cap)
{
    snprintf(out, cap, "faultline-report");
    char exe[PATH_MAX], cand[PATH_MAX + 64], found[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    static const char *const beside[] = {"/faultline-report", "/../reporter/faultline-report"};
    const char *rep = NULL;
    for (size_t i = 0; i < sizeof beside / sizeof *beside && !rep; i++) {
        snprintf(cand, sizeof cand, "%s%s", exe, beside[i]);
        if (realpath(cand, found) && !access(found, X_OK))
            rep = found;
    }
    if (!rep)
        return;
    /* The one PATH finds, when it is this one: its name will do. */
    const char *path = getenv("PATH");
    for (const char *d = path; d && *d;) {
        size_t k = strcspn(d, ":");
        char onpath[PATH_MAX];
        snprintf(cand, sizeof cand, "%.*s/faultline-report", (int)k, d);
        if (k && !access(cand, X_OK)) {
            if (realpath(cand, onpath) && !strcmp(onpath, rep))
                return;
            break; /* PATH finds another one first */
        }
        d += k + (d[k] == ':');
    }
    /* Quoted when the shell would split or expand it. */
    bool plain = true;
    for (const char *c = rep; *c; c++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._+-", *c))
            plain = false;
    if (plain)
        snprintf(out, cap, "%s", rep);
    else if (!strchr(rep, '\''))
        snprintf(out, cap, "'%s'", rep);
}

/* The symbol uploads' backfill hands its tasks to the writer's publisher
 * (fl_symingest_config.publish): published on the upload's HTTP thread, a
 * broker that does not answer held it, and every connection it serves,
 * for its 5 s confirm or handshake timeout. */
static void publish_tasks(void *writer, const char *const *ids, size_t n)
{
    fl_writer_publish(writer, ids, n);
}

int fl_cmd_serve(int argc, char **argv)
{
    opts o = {.port = 8080,
              .data = "./var",
              .role = "all",
              .workers = 2,
              .http_threads = 2,
              .lease_s = 60,
              .republish_after = 30,
              .db_timeout_s = FL_STORE_PG_TIMEOUT_S,
              .top_n = 5,
              .notify_digest = 5,
              .notify_period_s = 60,
              .max_body = 1u << 20,
              .max_decoded = 8u << 20,
              .max_ratio = 100,
              .max_header = 16384,
              .timeout_s = 30,
              .request_timeout_s = 120,
              .max_client_conns = 256,
              .max_pending = 16384,
              .max_memory = 256u << 20,
              .max_backlog = 1000000,
              .max_symbol_file = 1ull << 30,
              .symcache_lru = 32,
              .debuginfod_miss_s = 600,
              .context_max_paths = 20000000};
    snprintf(o.host, sizeof o.host, "127.0.0.1");
    int pr = parse_args(&o, argc, argv);
    if (pr)
        return pr > 0 ? FL_EXIT_OK : FL_EXIT_USAGE;
    bool run_http = !strcmp(o.role, "all") || !strcmp(o.role, "api");
    bool run_workers = !strcmp(o.role, "all") || !strcmp(o.role, "worker");
    if (!run_http && !run_workers) {
        usage_error("--role must be all, api or worker");
        return FL_EXIT_USAGE;
    }
    const char *env_db = getenv("FAULTLINE_DB"), *env_queue = getenv("FAULTLINE_QUEUE");
    if (!o.db && env_db && *env_db)
        o.db = env_db;
    if (!o.queue && env_queue && *env_queue)
        o.queue = env_queue;
    bool pg = o.db && (!strncmp(o.db, "postgres://", 11) || !strncmp(o.db, "postgresql://", 13));
    bool amqp = o.queue && (!strncmp(o.queue, "amqp://", 7) || !strncmp(o.queue, "amqps://", 8));
    const char *dbsep = o.db && !pg ? strstr(o.db, "://") : NULL;
    if (dbsep && strncmp(o.db, "sqlite:", 7)) {
        /* A URL of another scheme (a typo of postgres://, mysql://) would
         * otherwise be taken as a SQLite file's path. */
        usage_error("--db %.*s://...: unknown database (a SQLite file's path, or "
                    "postgres://...)",
                    (int)(dbsep - o.db > 40 ? 40 : dbsep - o.db), o.db);
        return FL_EXIT_USAGE;
    }
    if (o.queue && !amqp && strcmp(o.queue, "embedded")) {
        /* The scheme only: the rest of a URL may hold a password. */
        const char *sep = strstr(o.queue, "://");
        usage_error("--queue %.*s%s: unknown queue (embedded, amqp:// or amqps://...)",
                    sep ? (int)(sep - o.queue) : 40, o.queue, sep ? "://..." : "");
        return FL_EXIT_USAGE;
    }
    /* The embedded queue is a table of the store's database (SQLite's or
     * PostgreSQL's), written in the transactions that store the reports;
     * RabbitMQ needs a store that remembers which tasks reached it
     * (published(), queue.c), and a SQLite file is one machine's anyway. */
    if (amqp && !pg) {
        usage_error("--queue amqp[s]://... needs --db postgres://... (with SQLite, the embedded "
                    "queue is the durable one)");
        return FL_EXIT_USAGE;
    }
    char qerr[320];
    if (amqp && fl_queue_amqp_check_url(o.queue, qerr, sizeof qerr)) {
        /* A typo of the command, said as one before anything is made or
         * waited for, not an exit 1 once the store is open. */
        usage_error("%s%s", strncmp(qerr, "--queue", 7) ? "--queue: " : "", qerr);
        return FL_EXIT_USAGE;
    }
    if (o.burst <= 0)
        o.burst = o.rate * 2 > 1 ? o.rate * 2 : 1;
    /* From here on every line is the log's (usage errors above are not:
     * they answer the person who typed the command). */
    fl_log_set_time(o.log_time);

    /* The address first: a second `make run` must not make a data
     * directory, keys and a database before it finds the first one
     * listening there. */
    if (run_http || o.listen_given) {
        char lerr[320];
        if (fl_http_check_listen(o.host, o.port, lerr, sizeof lerr)) {
            fl_log(stderr,
                   "faultline serve: %s; give another --listen ADDR:PORT (port 0: any "
                   "free one)",
                   lerr);
            return 1;
        }
    }
    struct stat dst;
    if (mkdir(o.data, 0700) && errno != EEXIST) {
        fl_log(stderr, "faultline serve: cannot create %s: %s", o.data, strerror(errno));
        return 1;
    }
    if (stat(o.data, &dst) != 0 || !S_ISDIR(dst.st_mode)) {
        fl_log(stderr, "faultline serve: --data %s: not a directory", o.data);
        return 1;
    }
    /* With the default database, the lock and SQLite's -wal and -shm
     * files are made in it (and keys, on a first start): said here, rather
     * than as the first of them that fails.  A store elsewhere may do with
     * a directory prepared ahead. */
    if (!o.db && access(o.data, W_OK | X_OK) != 0) {
        fl_log(stderr, "faultline serve: --data %s: not writable (%s)", o.data, strerror(errno));
        return 1;
    }
    char dbpath[4096], skip[4096], prefix[4096], lockp[4200];
    if (o.db)
        snprintf(dbpath, sizeof dbpath, "%s", !strncmp(o.db, "sqlite:", 7) ? o.db + 7 : o.db);
    else
        snprintf(dbpath, sizeof dbpath, "%s/faultline.db", o.data);
    if (!pg && !sqlite_file_ok(dbpath)) {
        /* Before keys, lists and symbols are written into a directory
         * that may be another program's. */
        fl_log(stderr,
               "faultline serve: %s is not an SQLite database; move it away or give "
               "another --data",
               dbpath);
        return 1;
    }
    if (!pg && run_workers && !run_http && access(dbpath, F_OK) != 0)
        /* The usual slip on a worker machine: FAULTLINE_DB not in its
         * service's environment.  An empty database of its own would
         * never get a task. */
        fl_log(stderr,
               "faultline serve: warning: --role worker on a new, empty SQLite database "
               "(%s): it only gets work from a --role api server on this machine with the "
               "same --data; to share PostgreSQL, give --db postgres://... or FAULTLINE_DB",
               dbpath);
    snprintf(skip, sizeof skip, "%s", o.skip_list ? o.skip_list : "");
    snprintf(prefix, sizeof prefix, "%s", o.prefix_list ? o.prefix_list : "");
    if (!o.skip_list)
        snprintf(skip, sizeof skip, "%s/skip.txt", o.data);
    if (!o.prefix_list)
        snprintf(prefix, sizeof prefix, "%s/prefix.txt", o.data);
    /* Beside the database, not in DIR: two servers with data directories
     * of their own may name one database with --db. */
    snprintf(lockp, sizeof lockp, "%s.lock", dbpath);

    /* A file size limit (ulimit -f) then fails the write, which is reported
     * like a full disk, instead of killing the server. */
    signal(SIGXFSZ, SIG_IGN);
    /* A --role worker process serves no API (given --listen, /healthz and
     * /metrics only), so it has no keys: it reads, makes, shares and
     * writes none, and a worker machine holds no admin token. */
    srv_key admin = {.env = "FAULTLINE_ADMIN_TOKEN", .name = "admin_token"};
    srv_key ingest = {.env = "FAULTLINE_INGEST_KEY", .name = "ingest_key"};
    char kerr[512];
    if (run_http) {
        if (get_key(&admin, o.data, kerr, sizeof kerr) ||
            get_key(&ingest, o.data, kerr, sizeof kerr)) {
            fl_log(stderr, "faultline serve: no keys: %s", kerr);
            return 1;
        }
        if (!strcmp(admin.val, ingest.val)) {
            /* Every reporter would hold the admin token. */
            fl_log(stderr, "faultline serve: the admin token and the ingest key are the same; "
                           "give FAULTLINE_ADMIN_TOKEN and FAULTLINE_INGEST_KEY different values");
            return 1;
        }
        if (strlen(admin.val) < 16)
            fl_log(stderr,
                   "faultline serve: warning: the admin token has %zu characters; one of "
                   "16 or more is harder to guess",
                   strlen(admin.val));
    }

    /* One processing process per database with role all: it may then
     * forget every lease at start (they belonged to its dead predecessor).
     * A broker gives a dead consumer's tasks back by itself, and servers
     * sharing PostgreSQL are meant to run side by side. */
    int lockfd = -1, oldlockfd = -1;
    bool sole = run_workers && run_http && !pg; /* the one processing process */
    if (run_workers && !pg) {
        /* A --role worker process holds the lock shared: workers run side
         * by side, but a --role all server, which forgets every lease at
         * its start, cannot start beside them, nor they beside it. */
        lockfd = lock_database(lockp, sole ? LOCK_EX : LOCK_SH,
                               sole ? "is in use by another server (a --role all server, or "
                                      "--role worker processes: its lock is held)"
                                    : "is served by a --role all server, which processes it "
                                      "itself; stop it, or run it as --role api",
                               dbpath);
        if (lockfd < 0)
            return 1;
    }
    if (sole) {
        /* Versions before the lock moved beside the database held
         * DIR/serve.lock instead, and would run beside this server on the
         * same database: each forgets the other's leases at start and
         * takes wall-clock leases this one reads as far ahead, so both
         * took the same reports (measured: crashes counted in a group but
         * left unprocessed, and one signature in two groups, by which
         * version took the report).  Where that file exists (an older
         * version served this directory, and may be started again by
         * mistake), hold it too. */
        char oldp[4200];
        snprintf(oldp, sizeof oldp, "%s/serve.lock", o.data);
        oldlockfd = open(oldp, O_RDWR | O_CLOEXEC);
        if (oldlockfd >= 0 && flock(oldlockfd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
            fl_log(stderr,
                   "faultline serve: %s is in use by a server of an older version "
                   "(it holds %s); stop it first",
                   o.data, oldp);
            close(oldlockfd);
            close(lockfd);
            return 1;
        }
    }

    /* Signals go to sigwait() below, never to a worker thread. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = 1;
    char err[512] = "";
    char qdown[512] = ""; /* the broker was away at start: why */
    fl_metrics m;
    memset(&m, 0, sizeof m);
    fl_health_init(&m.health, stderr);
    fl_store *store = NULL;
    fl_queue *queue = NULL;
    fl_group_rules *rules = NULL;
    fl_writer *writer = NULL;
    fl_workers *workers = NULL;
    fl_retention *retention = NULL;
    fl_notifier *notifier = NULL;
    fl_http *http = NULL;
    fl_store_conn *mc = NULL;
    fl_srvsym *sym = NULL;
    fl_ctxsrv *ctxsrv = NULL;
    fl_srcctx *srcctx = NULL;
    fl_symfetch *symfetch = NULL;
    fl_symingest *symin = NULL;
    char symdir[4096], processed[4200], cachedir[4096], dicache[4096];
    snprintf(symdir, sizeof symdir, "%s/symbols", o.data);
    snprintf(processed, sizeof processed, "%s/processed", symdir);
    snprintf(cachedir, sizeof cachedir, "%s/symcache", o.data);
    snprintf(dicache, sizeof dicache, "%s/debuginfod-cache", o.data);

    if (pg) {
        pg_timeout_s = (unsigned)o.db_timeout_s;
        if (!(store = wait_up(open_pg, "PostgreSQL", o.db, &sigs, err, sizeof err))) {
            rc = *err ? 1 : 0;
            goto out;
        }
        if (amqp && run_http) {
            /* A server that ingests does not wait for the broker: a
             * report is durable once committed in PostgreSQL, and the
             * sweep publishes the tasks no publish delivered once the
             * broker answers.  Refusing clients meanwhile would gain
             * nothing.  A refusal (a wrong password or vhost) still ends
             * the start: waiting would not mend it. */
            if (!(queue = fl_queue_amqp_new(o.queue, err, sizeof err)) && not_up_yet(err)) {
                snprintf(qdown, sizeof qdown, "%s", err);
                fl_log(stderr,
                       "faultline serve: %s; serving without RabbitMQ until it answers: reports "
                       "are stored and answered 200, and the sweep publishes their tasks once it "
                       "does (/healthz answers 200 \"degraded\" meanwhile)",
                       err);
                *err = '\0';
                queue = fl_queue_amqp_new_unconnected(o.queue, err, sizeof err);
            }
            if (!queue)
                goto out;
        } else if (amqp &&
                   !(queue = wait_up(open_amqp, "RabbitMQ", o.queue, &sigs, err, sizeof err))) {
            /* A worker has nothing to do without the broker: it waits. */
            rc = *err ? 1 : 0;
            goto out;
        }
        if (!amqp && !(queue = fl_queue_pg_new()))
            snprintf(err, sizeof err, "out of memory");
        if (!queue)
            goto out;
    } else {
        if (!(store = fl_store_sqlite_open(dbpath, err, sizeof err)))
            goto out;
        if (o.no_id_filter)
            fl_store_sqlite_no_id_filter(store);
        if (!(queue = fl_queue_embedded_new())) {
            snprintf(err, sizeof err, "out of memory");
            goto out;
        }
    }
    /* The default lists are written into DIR on the first start; a list
     * named by --skip-list/--prefix-list must be there (a typo would
     * otherwise make a file wherever the server may write). */
    if (!(rules = fl_group_rules_new()) ||
        fl_group_rules_write_defaults(o.skip_list ? NULL : skip, o.prefix_list ? NULL : prefix) ||
        fl_group_rules_load(rules, skip, prefix)) {
        snprintf(err, sizeof err, "cannot read the skip/prefix lists (%.200s, %.200s): %s", skip,
                 prefix, rules ? strerror(errno) : "out of memory");
        goto out;
    }
    fl_group_rules_set_top_n(rules, o.top_n);
    /* The symbolizer sets DEBUGINFOD_* in the environment: before any
     * thread starts. */
    if (mkdir(symdir, 0755) && errno != EEXIST) {
        snprintf(err, sizeof err, "cannot create %.300s: %s", symdir, strerror(errno));
        goto out;
    }
    if (mkdir(processed, 0755) && errno != EEXIST) {
        snprintf(err, sizeof err, "cannot create %.300s: %s", processed, strerror(errno));
        goto out;
    }
    /* A store shared across machines shares the debug files too. */
    symfetch = fl_symfetch_new(store);
    fl_srvsym_config sc = {.upload_root = processed,
                           .cache_dir = cachedir,
                           .debuginfod_cache = dicache,
                           .debuginfod_miss_s = (unsigned)o.debuginfod_miss_s,
                           .lru = (unsigned)o.symcache_lru,
                           .remote_unwind = !o.no_remote_unwind,
                           .fetch = symfetch ? fl_symfetch_fetch : NULL,
                           .fetch_ctx = symfetch};
    if (fl_srvsym_new(&sc, &sym, err, sizeof err))
        goto out;
    /* A build killed midway (kill -9 of this server's predecessor, or of
     * another process on this directory) left its private directory;
     * those of live builds stay. */
    size_t stale = 0, unfinished = 0;
    if (fl_symstore_clean(cachedir, &stale, &unfinished) != 0)
        fl_log(stderr, "faultline serve: warning: cannot read %s: %s", cachedir, strerror(errno));
    if (stale)
        fl_log(stderr, "faultline serve: removed %zu director%s a killed symcache build left in %s",
               stale, stale == 1 ? "y" : "ies", cachedir);
    if (unfinished)
        fl_log(stderr,
               "faultline serve: removed %zu unfinished symcache%s a killed build left in %s",
               unfinished, unfinished == 1 ? "" : "s", cachedir);
    if (!(mc = store->connect(store))) {
        snprintf(err, sizeof err, "cannot connect to the store");
        goto out;
    }
    if (run_http && (share_key(store, mc, &admin, err, sizeof err) ||
                     share_key(store, mc, &ingest, err, sizeof err) ||
                     keys_clash(store, mc, admin.val, ingest.val, err, sizeof err)))
        goto out;
    if (sole)
        queue->release_all(queue, mc);
    m.backlog = queue->depth(queue, mc);

    if (o.notify_url) {
        store->notify = true; /* before the workers apply anything */
        if (!(notifier = fl_notifier_start(store, &m, o.notify_url, o.notify_digest,
                                           o.notify_period_s, stderr, err, sizeof err)))
            goto out;
    }
    if (run_workers && o.workers) {
        /* Frames are symbolized through fl_srvsym (fl_symbolize_fn in
         * fl_group.h), the crashing thread re-unwound on the server, and
         * a kept minidump's other threads unwound there. */
        fl_workers_config wc = {.n = o.workers,
                                .lease_s = o.lease_s,
                                .batch = 32,
                                .rules = rules,
                                .symbolize = fl_srvsym_symbolize,
                                .tailcalls = fl_srvsym_tailcalls,
                                .symbolize_ctx = sym,
                                .unwind = fl_srvsym_unwind,
                                .unwind_dump = fl_srvsym_unwind_dump,
                                .trace_formats = fl_srvsym_trace_formats,
                                .symbols_changed = fl_srvsym_symbols_changed,
                                .symbols_gap = fl_srvsym_gap,
                                .crash_begin = fl_srvsym_crash_begin,
                                .symbols_fetched = fl_srvsym_next_fetched};
        if (!(workers = fl_workers_start(store, queue, &m, &wc, err, sizeof err)))
            goto out;
    }
    if (o.retention_s) {
        if (!(retention = fl_retention_start(store, &m, o.retention_s, stderr, err, sizeof err)))
            goto out;
        fl_log(stderr,
               "faultline: crashes are removed %" PRId64 " s after they were received "
               "(--retention)",
               o.retention_s);
    }
    /* Past the refusals (the database's lock, keys that clash, lists that
     * cannot be read, a --notify-url or --retention the store cannot
     * serve): the keys this server answers to go into DIR now, not
     * before, so that a refused start leaves no key file behind. */
    if (save_key(&admin, o.data, err, sizeof err) || save_key(&ingest, o.data, err, sizeof err))
        goto out;
    /* An IPv6 address goes in brackets in a URL. */
    char url_host[sizeof o.host + 2];
    snprintf(url_host, sizeof url_host, strchr(o.host, ':') ? "[%s]" : "%s", o.host);
    if (run_http) {
        if (!(writer = fl_writer_start(
                  store, queue, &m, (size_t)o.max_pending, (unsigned)o.republish_after,
                  workers ? fl_workers_notify : NULL, workers, err, sizeof err)))
            goto out;
        if (*qdown)
            fl_writer_queue_failed(writer, qdown);
        fl_symingest_config ic = {.symbols_dir = symdir,
                                  .cache_dir = cachedir,
                                  .store = store,
                                  .queue = queue,
                                  .publish = publish_tasks,
                                  .publish_arg = writer,
                                  .sym = sym,
                                  .notify = workers ? fl_workers_notify : NULL,
                                  .notify_arg = workers,
                                  .upload_idle_s = (unsigned)o.timeout_s};
        if (fl_symingest_new(&ic, &symin, err, sizeof err))
            goto out;
        if (fl_symingest_watch(symin)) {
            snprintf(err, sizeof err, "cannot start the symbols watcher");
            goto out;
        }
        fl_ctxsrv_config xc = {.sym = sym, .max_paths = o.context_max_paths};
        if (!(ctxsrv = fl_ctxsrv_new(&xc, err, sizeof err)))
            goto out;
        char srcdir[4200];
        snprintf(srcdir, sizeof srcdir, "%s/source-cache", o.data);
        fl_srcctx_config srcc = {.cache_dir = srcdir};
        if (fl_srcctx_new(&srcc, &srcctx, err, sizeof err))
            goto out;
        fl_http_config hc = {.port = o.port,
                             .threads = o.http_threads,
                             .keyless_ingest = o.keyless,
                             .keep_minidumps = !o.no_keep_minidumps,
                             .admin_token = admin.val,
                             .ingest_key = ingest.val,
                             .max_body = (size_t)o.max_body,
                             .max_decoded = (size_t)o.max_decoded,
                             .max_ratio = (unsigned)o.max_ratio,
                             .max_header = (size_t)o.max_header,
                             .timeout_s = (unsigned)o.timeout_s,
                             .request_timeout_s = (unsigned)o.request_timeout_s,
                             .max_client_conns = (unsigned)o.max_client_conns,
                             .rate_limit = o.rate,
                             .rate_burst = o.burst,
                             .max_pending = (size_t)o.max_pending,
                             .max_memory = o.max_memory,
                             .data_dir = o.data,
                             .max_backlog = o.max_backlog,
                             .symingest = symin,
                             .srvsym = sym,
                             .ctxsrv = ctxsrv,
                             .srcctx = srcctx,
                             .max_symbol_file = o.max_symbol_file,
                             .allowed_hosts = o.allowed_hosts[0] ? o.allowed_hosts : NULL};
        snprintf(hc.host, sizeof hc.host, "%s", o.host);
        if (!(http = fl_http_start(&hc, store, queue, writer, &m, err, sizeof err)))
            goto out;
        fl_log(stdout,
               "faultline: listening on http://%s:%u (data %s, role %s, %u workers, store %s, "
               "queue %s)",
               url_host, fl_http_port(http), o.data, o.role, workers ? o.workers : 0, store->engine,
               queue->engine);
        fl_log(stdout, "faultline: admin token: %s   (Authorization: Bearer <token>)", admin.val);
        fl_log(stdout, "faultline: ingest key:  %s   (X-Faultline-Key: <key>, or ?key=<key>)%s",
               ingest.val, o.keyless ? "; keyless POST / accepted" : "");
        fl_log(stdout,
               "faultline: portal: open http://%s:%u/ in a browser and log in with the admin "
               "token",
               url_host, fl_http_port(http));
        fl_log(stdout,
               "faultline: try  curl -H 'Authorization: Bearer %s' http://%s:%u/api/v1/groups",
               admin.val, url_host, fl_http_port(http));
        /* What a new user types next: send a crash log. */
        char rep[PATH_MAX + 2];
        reporter_command(rep, sizeof rep);
        fl_log(stdout,
               "faultline: send crash logs with  %s --url http://%s:%u/api/v1/crashes --key %s",
               rep, url_host, fl_http_port(http), ingest.val);
    } else {
        /* Only when asked: a worker beside an API server on one machine
         * would otherwise take the API's default port. */
        if (o.listen_given) {
            fl_http_config hc = {.port = o.port,
                                 .threads = 1,
                                 .max_header = (size_t)o.max_header,
                                 .timeout_s = (unsigned)o.timeout_s,
                                 .data_dir = o.data,
                                 .max_backlog = o.max_backlog,
                                 .health_only = true,
                                 .allowed_hosts = o.allowed_hosts[0] ? o.allowed_hosts : NULL};
            snprintf(hc.host, sizeof hc.host, "%s", o.host);
            if (!(http = fl_http_start(&hc, store, queue, NULL, &m, err, sizeof err)))
                goto out;
            fl_log(stdout, "faultline: listening on http://%s:%u (/healthz and /metrics only)",
                   url_host, fl_http_port(http));
        }
        fl_log(stdout, "faultline: worker running (data %s, %u workers, store %s, queue %s)",
               o.data, o.workers, store->engine, queue->engine);
    }
    fflush(stdout);

    int sig = 0;
    while (!sigwait(&sigs, &sig) && sig == SIGHUP)
        reload_rules(&rules, workers, skip, prefix, o.top_n);
    fl_log(stderr, "faultline: %s, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    rc = 0;
out:
    if (*err)
        fl_log(stderr, "faultline serve: %s", err);
    fl_retention_stop(retention);
    fl_notifier_stop(notifier);
    fl_http_quiesce(http);
    fl_writer_stop(writer); /* commits and answers what it holds */
    fl_http_stop(http);
    /* Its watcher may still notify the workers, and hand tasks to the
     * writer (whose stopped publisher leaves them to the sweep): before
     * the writer is freed. */
    fl_symingest_free(symin);
    fl_writer_free(writer);
    fl_workers_stop(workers);
    if (workers)
        fl_log(stderr,
               "faultline: stopped after processing %" PRIu64 " crashes (%" PRIu64
               " failed, %" PRIu64 " second copies dropped)",
               FL_M_GET(m.processed), FL_M_GET(m.processing_failed),
               FL_M_GET(m.dropped_duplicates));
    fl_ctxsrv_free(ctxsrv); /* after the HTTP threads that ask it */
    fl_srcctx_free(srcctx); /* after fl_http_stop waited for its fetches */
    fl_srvsym_free(sym);
    fl_symfetch_free(symfetch);
    if (store)
        store->disconnect(mc);
    if (queue && queue->close)
        queue->close(queue);
    if (store)
        store->close(store);
    fl_group_rules_free(rules);
    if (lockfd >= 0)
        close(lockfd);
    if (oldlockfd >= 0)
        close(oldlockfd);
    fl_health_destroy(&m.health);
    return rc;
}
