/*
 * submit.c - `faultline submit FILE... --server URL [--key KEY]`.
 *
 * The scriptable reporter: the same validation and the same request as
 * faultline-report, no spool, no questions, no deletion.  One line per file
 * on stdout:
 *
 *   FILE: accepted ID
 *   FILE: invalid: line N: reason          (not sent)
 *   FILE: rejected (HTTP 400): reason
 *   FILE: too large (HTTP 413): reason
 *   FILE: not delivered (HTTP 503: reason), retry after N s
 *   FILE: failed (HTTP 401: reason)
 *   FILE: failed: answered 400 with an HTML page, not a crash server's answer (...)
 *
 * Exit: 0 every file accepted; 75 some not delivered for a temporary reason
 * and nothing worse; 1 some file invalid, rejected, too large or failed;
 * 64 usage.
 */
#include "fl_reporter.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl_crashlog.h"
#include "fl_upload.h"
#include "report_util.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: faultline submit FILE|-... --server URL [--key KEY] [--email ADDR]\n"
               "                        [--connect-timeout S] [--timeout S] [--no-gzip]\n"
               "                        [--cacert FILE]\n"
               "\n"
               "Validates each crash log and sends it like faultline-report does; prints one\n"
               "line per file with the server's answer.  Files are never deleted.  A FILE\n"
               "of - is standard input (sent as stdin.crashlog).\n"
               "  -s, --server URL      ingest URL, e.g. http://HOST:8080/api/v1/crashes\n"
               "                        (default $FAULTLINE_URL; --url is the same option,\n"
               "                        as faultline-report spells it)\n"
               "  -k, --key KEY         ingest key, sent as X-Faultline-Key (default\n"
               "                        $FAULTLINE_INGEST_KEY)\n"
               "  --email ADDR          contact address sent with each report\n"
               "  --connect-timeout S   seconds to wait for a connection (default 10, at least 1)\n"
               "  --timeout S           seconds for a whole request (default 60, at least 1)\n"
               "  --no-gzip             send the request body uncompressed\n"
               "  --cacert FILE         check an https server's certificate against the CA\n"
               "                        certificates (PEM) in FILE (default $FAULTLINE_CACERT;\n"
               "                        no PEM certificate in it: usage error, 64)\n"
               "Proxies: libcurl honours http_proxy, https_proxy, all_proxy and no_proxy\n"
               "(not HTTP_PROXY).\n"
               "Exit: 0 all accepted, 75 some not delivered (try later), 1 some invalid,\n"
               "unreadable, rejected, too large (413) or failed, 64 usage.\n");
}

/* Read a whole file of at most FL_CRASHLOG_MAX_BYTES; *data malloc'ed. */
static int slurp(const char *path, char **data, size_t *len, char *why, size_t whycap)
{
    *data = NULL;
    *len = 0;
    /* "-": standard input (a dup, so that fclose leaves fd 0 alone). */
    bool in = !strcmp(path, "-");
    int fd0 = in ? dup(STDIN_FILENO) : -1;
    FILE *f = in ? (fd0 >= 0 ? fdopen(fd0, "rb") : NULL) : fopen(path, "rb");
    if (in && fd0 >= 0 && !f)
        close(fd0);
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(why, whycap, "%s", strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(why, whycap, "is a directory");
        fclose(f);
        return -1;
    }
    size_t cap = 64 * 1024, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap > FL_CRASHLOG_MAX_BYTES) {
                snprintf(why, whycap, "larger than %u bytes", FL_CRASHLOG_MAX_BYTES);
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        errno = 0;
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) {
                snprintf(why, whycap, "%s", errno ? strerror(errno) : "read error");
                break;
            }
            fclose(f);
            *data = buf;
            *len = n;
            return 0;
        }
    }
    if (!buf)
        snprintf(why, whycap, "out of memory");
    else if (!why[0])
        snprintf(why, whycap, "out of memory");
    free(buf);
    fclose(f);
    return -1;
}

int fl_cmd_submit(int argc, char **argv)
{
    enum { O_CT = 256, O_TO, O_NOGZ, O_EMAIL, O_CA };
    static const struct option lopts[] = {
        {"server", required_argument, NULL, 's'},
        {"url", required_argument, NULL, 's'},
        {"key", required_argument, NULL, 'k'},
        {"email", required_argument, NULL, O_EMAIL},
        {"connect-timeout", required_argument, NULL, O_CT},
        {"timeout", required_argument, NULL, O_TO},
        {"no-gzip", no_argument, NULL, O_NOGZ},
        {"cacert", required_argument, NULL, O_CA},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fl_upload_config cfg = {.url = getenv("FAULTLINE_URL"),
                            .key = getenv("FAULTLINE_INGEST_KEY"),
                            .cacert = getenv("FAULTLINE_CACERT")};
    const char *email = "";
    bool url_given = false, cacert_given = false;
    optind = 1;
    opterr = 0;
    int c;
    int li = -1;
    while ((c = getopt_long(argc, argv, ":s:k:h", lopts, &li)) != -1) {
        long *sec = NULL;
        switch (c) {
        case 's':
            cfg.url = optarg;
            url_given = true;
            break;
        case 'k': cfg.key = optarg; break;
        case O_EMAIL:
            if (!fl_report_email_ok(optarg)) {
                fprintf(stderr, "faultline submit: --email: not an email address\n");
                return FL_EXIT_USAGE;
            }
            email = optarg;
            break;
        case O_CT: sec = &cfg.connect_timeout_s; break;
        case O_TO: sec = &cfg.timeout_s; break;
        case O_NOGZ: cfg.no_gzip = true; break;
        case O_CA:
            cfg.cacert = optarg;
            cacert_given = true;
            break;
        case 'h': usage(stdout); return FL_EXIT_OK;
        case ':':
            fprintf(stderr,
                    "faultline submit: option %s needs a value; see faultline submit "
                    "--help\n",
                    argv[optind - 1]);
            return FL_EXIT_USAGE;
        default:
            fprintf(stderr, "faultline submit: unknown option '%s'; see faultline submit --help\n",
                    argv[optind - 1]);
            return FL_EXIT_USAGE;
        }
        if (sec && fl_report_parse_seconds(optarg, sec) != 0) {
            /* Every option taking seconds is a long one: li names it. */
            fprintf(stderr, "faultline submit: --%s: '%.40s' is not a number of seconds\n",
                    li >= 0 ? lopts[li].name : "?", optarg);
            return FL_EXIT_USAGE;
        }
        if (sec && *sec == 0) {
            /* As the reporter's: 0 is neither "no timeout" nor the default. */
            fprintf(stderr, "faultline submit: --%s: at least 1 second, not 0\n",
                    li >= 0 ? lopts[li].name : "?");
            return FL_EXIT_USAGE;
        }
        li = -1;
    }
    if (optind >= argc) {
        fprintf(stderr, "faultline submit: no crash log given; see faultline submit --help\n");
        return FL_EXIT_USAGE;
    }
    if (!cfg.url || !*cfg.url) {
        fprintf(stderr, "faultline submit: no server: use --server URL or set FAULTLINE_URL\n");
        return FL_EXIT_USAGE;
    }
    const char *urlbad = fl_report_url_problem(cfg.url);
    if (urlbad) {
        fprintf(stderr,
                "faultline submit: %s '%.200s': %s (e.g. http://HOST:8080/api/v1/crashes)\n",
                url_given ? "--server" : "FAULTLINE_URL", cfg.url, urlbad);
        return FL_EXIT_USAGE;
    }
    if (!fl_report_header_ok(cfg.key)) {
        fprintf(stderr, "faultline submit: the ingest key contains control characters\n");
        return FL_EXIT_USAGE;
    }
    if (cfg.cacert && !*cfg.cacert)
        cfg.cacert = NULL;
    const char *cabad = cfg.cacert ? fl_report_cacert_problem(cfg.cacert) : NULL;
    if (cabad) {
        fprintf(stderr, "faultline submit: %s %.200s: %s\n",
                cacert_given ? "--cacert" : "FAULTLINE_CACERT", cfg.cacert, cabad);
        return FL_EXIT_USAGE;
    }
    fl_upload *up = fl_upload_new(&cfg);
    if (!up) {
        fprintf(stderr, "faultline submit: cannot start the HTTP client\n");
        return FL_EXIT_ERROR;
    }

    bool bad = false, later = false, stdin_read = false;
    for (int i = optind; i < argc; i++) {
        /* The name as printed: control bytes as '?', so that a name with
         * an ESC or a newline neither steers the terminal nor forges a
         * line of the output a script reads. */
        char shown[4096];
        fl_report_printable(shown, sizeof shown, argv[i]);
        char *data = NULL, why[200] = "";
        size_t len = 0;
        bool from_stdin = !strcmp(argv[i], "-");
        if (from_stdin && stdin_read) {
            printf("-: unreadable: standard input was read already (- given twice)\n");
            bad = true;
            fflush(stdout);
            continue;
        }
        stdin_read = stdin_read || from_stdin;
        if (slurp(argv[i], &data, &len, why, sizeof why) != 0) {
            printf("%s: unreadable: %s\n", shown, why);
            bad = true;
            fflush(stdout);
            continue;
        }
        fl_crashlog *log = NULL;
        fl_crashlog_error err;
        if (fl_crashlog_parse(data, len, &log, &err) != 0) {
            if (err.line)
                printf("%s: invalid: line %u: %s\n", shown, err.line, err.message);
            else
                printf("%s: invalid: %s\n", shown, err.message);
            bad = true;
            free(data);
            fflush(stdout);
            continue;
        }
        fl_upload_report rep = {
            .data = data,
            .len = len,
            .filename = from_stdin ? "stdin" : argv[i],
            .app = log->app_name,
            .version = log->app_version,
            .email = email,
        };
        fl_upload_result res;
        fl_upload_send(up, &rep, &res);
        const char *hint;
        switch (res.outcome) {
        case FL_UPLOAD_DELIVERED:
            printf("%s: accepted %s%s\n", shown, res.id[0] ? res.id : "(no id given)",
                   res.duplicate ? " (a duplicate: the server had this crash already)" : "");
            break;
        case FL_UPLOAD_REJECTED:
        case FL_UPLOAD_TOO_LARGE:
            printf("%s: %s (HTTP %ld): %s\n", shown,
                   res.outcome == FL_UPLOAD_REJECTED ? "rejected" : "too large", res.status,
                   res.message);
            bad = true;
            break;
        case FL_UPLOAD_RETRY:
            if (res.status)
                printf("%s: not delivered (HTTP %ld: %s)", shown, res.status, res.message);
            else
                printf("%s: not delivered (%s)", shown, res.message);
            if (res.retry_after_s >= 0)
                printf(", retry after %ld s", res.retry_after_s);
            putchar('\n');
            later = true;
            break;
        case FL_UPLOAD_FAILED:
            if (res.not_crash_server)
                printf("%s: failed: %s\n", shown, res.message);
            else if ((hint = fl_report_url_hint(cfg.url, res.status, res.message)))
                printf("%s: failed (HTTP %ld: %s%s)\n", shown, res.status, res.message, hint);
            else if (res.status)
                printf("%s: failed (HTTP %ld: %s)\n", shown, res.status, res.message);
            else
                printf("%s: failed (%s)\n", shown, res.message);
            bad = true;
            break;
        case FL_UPLOAD_INTERRUPTED: /* submit sets no stop flag */
            printf("%s: interrupted\n", shown);
            bad = true;
            break;
        }
        fflush(stdout);
        fl_crashlog_free(log);
        free(data);
    }
    fl_upload_free(up);
    return bad ? FL_EXIT_ERROR : later ? FL_EXIT_TEMPFAIL : FL_EXIT_OK;
}
