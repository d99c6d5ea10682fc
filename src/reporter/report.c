/*
 * report.c - faultline-report: validate, ask, send, retry.
 *
 * How this works: the spool is locked, then each run makes one or more
 * passes over it.  A pass lists "*.crashlog", deletes what the shared
 * reader refuses (saying file, line and reason), skips logs whose retry
 * file says "not before T", asks the person at the terminal (or trusts
 * --yes), and sends each approved log.  The answer decides the log's fate:
 * delivered, rejected (400) and too large (413) delete it; everything
 * temporary keeps it with a retry file holding the attempt count and the
 * next allowed time (the server's Retry-After, else exponential backoff).
 * With --retry-until the run sleeps until the next log is due and makes
 * another pass, until the deadline.
 *
 * Exit: 0 all delivered or rejected, 75 some kept, 64 usage, 1 errors that
 * need a person (unreadable spool, 401/403/404 from the server, ...).
 */
#include "fl_reporter.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fl_crashlog.h"
#include "fl_spool.h"
#include "fl_upload.h"
#include "report_util.h"

#include <zlib.h> /* crc32 */

#ifndef FL_REPORTER_VERSION
#define FL_REPORTER_VERSION "0.0.0"
#endif

#define PROG "faultline-report"
#define DEFAULT_LOCK_WAIT_S 10

typedef struct opts {
    const char *spool, *url, *key, *cacert;
    char email[256];
    bool email_given, yes, show, quiet, no_gzip;
    bool now;          /* --now: logs waiting to retry are due at once */
    long retry_until;  /* seconds; -1: one pass */
    long connect_timeout, timeout, lock_wait;
} opts;

/* What a run has done so far, across passes. */
typedef struct run {
    opts *o;
    fl_spool *sp;
    fl_upload *up;
    bool interactive;
    bool send_all;     /* "all" was answered, or --yes */
    bool asked_email;
    bool stop_asking;  /* "quit" was answered */
    char **approved;   /* names a person said yes to (for later passes) */
    size_t napproved;
    unsigned delivered, rejected, kept, errors;
    int64_t next_due;  /* earliest retry time of a kept log we may send, 0: none */
    bool server_paused; /* in the last pass the server named a wait (Retry-After) */
    /* Set in a pass when the server said it is busy (429, 503, a
     * Retry-After) or two logs in a row got no answer (no connection,
     * 502, 504): the rest of the pass is kept until then
     * without a request, instead of waiting out a timeout per log or
     * sending to a server that asked us to back off. */
    int64_t hold_until;
    long hold_status;  /* 0: no answer */
    /* Set when a log got no answer (reset, timeout, 502/504 without
     * Retry-After): the next log is sent once to tell a server that is
     * away from one log that a proxy or the server chokes on.  If it gets
     * an answer, the rest of the pass goes on; if not, it holds. */
    bool probe_next;
    char hold_why[160];
    unsigned held;
    unsigned held_unsaved; /* held logs whose retry file could not be written */
    int held_errno;
    /* Set in a pass when the server refused a log for what every log
     * shares (401/403/404, a redirect: the key, the URL): the rest is
     * kept without a request, which would only be refused the same way. */
    bool refused;
    /* --retry-until's end on the monotonic clock, in ms (0: none): each
     * request is cut there, and a log reached after it is not tried. */
    int64_t deadline_ms;
    unsigned late; /* logs of this pass not tried: the deadline had come */
} run;

/* A log waiting for a decision: only what the listing and the question
 * show.  Its text is read again to be viewed or sent (loaded below), so
 * that a run's memory does not grow with the spool: 2,000 logs of 63 KB
 * took 222 MiB held whole, 12 MiB so. */
typedef struct item {
    char *name;
    char shown[NAME_MAX + 1]; /* name as printed: control bytes as '?' */
    char desc[400];           /* fl_report_describe()'s line */
    size_t len;               /* its size when listed */
    uLong crc;                /* crc32 of its text when listed */
    fl_retry_state rs;
} item;

/* A log's text and parsed form, for the time it is viewed or sent. */
typedef struct loaded {
    char *data;
    size_t len;
    fl_crashlog *log;
} loaded;

static void loaded_free(loaded *l)
{
    free(l->data);
    fl_crashlog_free(l->log);
    memset(l, 0, sizeof *l);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The signal that asked us to stop (SIGINT: Ctrl-C, SIGTERM, SIGHUP: the
 * terminal or ssh session gone), 0 while
 * none did.  The request under way is cut (fl_upload_config.stop), the
 * logs not sent stay as they are, and the run ends with its summary and
 * 128 + the signal, as a shell reports a program a signal ended. */
static volatile sig_atomic_t g_stop;

static void on_stop(int sig)
{
    g_stop = sig;
}

/* No SA_RESTART: a wait for the next retry, a prompt or libcurl's poll
 * wakes up at once. */
static void catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* Output into a pipe whose reader left (| head) fails with EPIPE
     * instead of ending the run between a delivery and its deletion's
     * line: the logs go on being sent, their lines are lost. */
    signal(SIGPIPE, SIG_IGN);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [--spool DIR] [--url URL] [--key KEY] [--yes] [--email ADDR]\n"
            "                        [--once | --retry-until SECONDS] [--now] [--show] [--quiet]\n"
            "                        [--connect-timeout S] [--timeout S] [--lock-wait S]\n"
            "                        [--no-gzip] [--cacert FILE] [--help] [--version]\n"
            "\n"
            "Validates the crash logs in the spool, asks before sending them when a\n"
            "person is at the terminal, uploads them and keeps what could not be sent.\n"
            "\n"
            "  -s, --spool DIR     spool directory (default $FAULTLINE_SPOOL, else\n"
            "                      $XDG_STATE_HOME/faultline, else ~/.local/state/faultline)\n"
            "  -u, --url URL       the server's ingest URL, e.g.\n"
            "                      http://HOST:8080/api/v1/crashes (default $FAULTLINE_URL)\n"
            "  -k, --key KEY       ingest key, sent as X-Faultline-Key (default\n"
            "                      $FAULTLINE_INGEST_KEY)\n"
            "  -y, --yes           send without asking (default: set by\n"
            "                      $FAULTLINE_REPORT_YES=1, e.g. for the reporter the\n"
            "                      client library starts after a crash)\n"
            "  --email ADDR        contact address sent with each report\n"
            "  --once              one pass over the spool (the default)\n"
            "  --retry-until S     keep retrying kept logs for up to S seconds (a last try\n"
            "                      before the end when the backoff would wait past it; no\n"
            "                      request runs past the end)\n"
            "  --now               send logs waiting to retry now, not at their next try\n"
            "                      (after fixing the URL or the key, or the server)\n"
            "  --show              print each log's full text before sending (and the\n"
            "                      strings of trace events it holds in hex, as text)\n"
            "  -q, --quiet         no per-log lines (problems are still reported)\n"
            "  --connect-timeout S seconds to wait for a connection (default 10, at least 1)\n"
            "  --timeout S         seconds for a whole request (default 60, at least 1)\n"
            "  --lock-wait S       seconds to wait for another reporter (default %d)\n"
            "  --no-gzip           send the request body uncompressed\n"
            "  --cacert FILE       check an https server's certificate against the CA\n"
            "                      certificates (PEM) in FILE, not the system's (default\n"
            "                      $FAULTLINE_CACERT); a file with no PEM certificate\n"
            "                      in it is a usage error (64)\n"
            "  -h, --help          this text\n"
            "  --version           the version\n"
            "\n"
            "Proxies: libcurl honours http_proxy, https_proxy, all_proxy and no_proxy\n"
            "(not HTTP_PROXY).\n"
            "\n"
            "Exit: 0 all delivered or rejected, 75 some kept for later, 64 usage,\n"
            "1 other errors, 130, 143 or 129 interrupted (SIGINT, SIGTERM, SIGHUP: the logs\n"
            "not sent stay).  See faultline-report(1).\n",
            DEFAULT_LOCK_WAIT_S);
}

static void say(const run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const run *r, const char *fmt, ...)
{
    if (r->o->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void note(run *r, const char *name, const char *what)
{
    char stamp[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char line[768], shown[NAME_MAX + 1];
    fl_report_printable(shown, sizeof shown, name);
    snprintf(line, sizeof line, "%s %s %s", stamp, shown, what);
    int rc = fl_spool_note(r->sp, line);
    if (rc == -EINVAL || rc == -ELOOP)
        warn("cannot write rejected.log: it is %s, not a regular file; not written to",
             rc == -ELOOP ? "a symbolic link" : "a FIFO, a device or a directory");
    else if (rc)
        warn("cannot write rejected.log: %s", strerror(-rc));
}

/* Delete a log that is not to be sent, noting why in rejected.log.
 * Returns false (having said so) when it could not be deleted: then the
 * caller must not say it was, and the log counts as kept. */
static bool drop(run *r, const char *name, const char *why)
{
    int rc = fl_spool_remove(r->sp, name);
    if (rc) {
        char shown[NAME_MAX + 1];
        fl_report_printable(shown, sizeof shown, name);
        warn("%s: %s, but it cannot be deleted: %s; kept", shown, why, strerror(-rc));
        r->errors++;
        r->kept++;
        return false;
    }
    note(r, name, why);
    return true;
}

static bool was_approved(const run *r, const char *name)
{
    for (size_t i = 0; i < r->napproved; i++)
        if (!strcmp(r->approved[i], name))
            return true;
    return false;
}

static void approve(run *r, const char *name)
{
    if (was_approved(r, name))
        return;
    char **nv = realloc(r->approved, (r->napproved + 1) * sizeof *nv);
    if (!nv)
        return; /* only costs a question in a later pass */
    r->approved = nv;
    if ((nv[r->napproved] = strdup(name)))
        r->napproved++;
}

/* Read one answer line from the person; returns its first letter
 * lowercased, or 'q' at end of input (Ctrl-D), where line is empty: an
 * answer nobody typed (fgets leaves the buffer as it was). */
static int ask(const char *prompt, char *line, size_t cap)
{
    fputs(prompt, stderr);
    fflush(stderr);
    if (!fgets(line, (int)cap, stdin)) {
        line[0] = '\0';
        fputc('\n', stderr);
        return 'q';
    }
    line[strcspn(line, "\r\n")] = '\0';
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    return (*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p;
}

static void ask_email(run *r)
{
    if (r->asked_email || r->o->email_given)
        return;
    r->asked_email = true;
    char line[256];
    for (int tries = 0; tries < 3; tries++) {
        ask("Your email address, if the developers may contact you about this crash\n"
            "(press Enter to skip): ",
            line, sizeof line);
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strlen(p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            p[--n] = '\0';
        if (fl_report_email_ok(p)) {
            snprintf(r->o->email, sizeof r->o->email, "%s", p);
            return;
        }
        fprintf(stderr, "That does not look like an email address.\n");
    }
}

/* Decide whether to send it: 'y' send, 'n' declined (delete), 'k' keep,
 * 'g' nothing more to do (it went while being viewed). */
static void print_log(FILE *f, const char *shown, const loaded *l);
static int load_log(run *r, const char *name, const char *shown, loaded *l);

static int consent(run *r, item *it, size_t idx, size_t total)
{
    if (r->send_all || was_approved(r, it->name))
        return 'y';
    if (!r->interactive || r->stop_asking)
        return 'k';
    char prompt[800], line[64];
    snprintf(prompt, sizeof prompt,
             "\nCrash report %zu of %zu: %s\n  %s\n"
             "Send it to the developers? [y]es, [n]o (delete), [v]iew, [a]ll, [q]uit: ",
             idx + 1, total, it->shown, it->desc);
    for (;;) {
        int a = ask(prompt, line, sizeof line);
        switch (a) {
        case 'y':
            return 'y';
        case 'a':
            r->send_all = true;
            return 'y';
        case 'n':
            return 'n';
        case 'q':
            r->stop_asking = true;
            return 'k';
        case 'v': {
            loaded l;
            if (load_log(r, it->name, it->shown, &l) != 0)
                return 'g'; /* gone or deleted meanwhile: said and counted */
            print_log(stderr, it->shown, &l);
            loaded_free(&l);
            break;
        }
        default:
            fprintf(stderr, "Please answer y, n, v, a or q.\n");
        }
    }
}

static void send_one(run *r, item *it, size_t idx, size_t total)
{
    bool probe = r->probe_next; /* the log before this one got no answer */
    r->probe_next = false;
    char prefix[48] = "";
    if (r->interactive && total > 1)
        snprintf(prefix, sizeof prefix, "[%zu/%zu] ", idx + 1, total);
    if (r->interactive && !r->o->quiet) {
        fprintf(stderr, "%ssending %s ...\r", prefix, it->shown);
        fflush(stderr);
    }
    /* Read and validated again: the log may have changed or gone since
     * it was listed (the spool's lock keeps other reporters out, not the
     * user or the client library). */
    loaded l;
    if (load_log(r, it->name, it->shown, &l) != 0) {
        if (r->interactive && !r->o->quiet)
            fputs("\r\033[K", stderr);
        return;
    }
    if (!r->o->yes && crc32(0L, (const Bytef *)l.data, (uInt)l.len) != it->crc) {
        /* Not what the person said yes to. */
        if (r->interactive && !r->o->quiet)
            fputs("\r\033[K", stderr);
        warn("%s: changed since it was shown; kept, to be asked about again", it->shown);
        r->kept++;
        loaded_free(&l);
        return;
    }
    fl_upload_report rep = {
        .data = l.data,
        .len = l.len,
        .filename = it->name,
        .app = l.log->app_name,
        .version = l.log->app_version,
        .email = r->o->email,
    };
    fl_upload_result res;
    fl_upload_send(r->up, &rep, &res);
    loaded_free(&l);
    if (r->interactive && !r->o->quiet)
        fputs("\r\033[K", stderr); /* wipe the "sending" line */
    char why[400];
    const char *hint;
    switch (res.outcome) {
    case FL_UPLOAD_DELIVERED: {
        int rc = fl_spool_remove(r->sp, it->name);
        if (rc) {
            /* It is on the server; resending would only be deduplicated. */
            warn("%s: delivered but cannot delete: %s", it->shown, strerror(-rc));
            r->errors++;
        }
        r->delivered++;
        say(r, "%s%s: delivered%s%s%s%s", prefix, it->shown, res.id[0] ? " (id " : "", res.id,
            res.id[0] ? ")" : "", res.duplicate ? " -- the server had it already" : "");
        return;
    }
    case FL_UPLOAD_REJECTED:
    case FL_UPLOAD_TOO_LARGE:
        snprintf(why, sizeof why, "%s the server (HTTP %ld): %s",
                 res.outcome == FL_UPLOAD_REJECTED ? "rejected by" : "too large for", res.status,
                 res.message);
        if (drop(r, it->name, why)) {
            warn("%s%s: %s; deleted, it will not be sent again", prefix, it->shown, why);
            r->rejected++;
        }
        return;
    case FL_UPLOAD_INTERRUPTED:
        /* Not the server's doing: no attempt counted, no backoff. */
        warn("%s%s: interrupted; kept", prefix, it->shown);
        r->kept++;
        return;
    case FL_UPLOAD_RETRY: {
        int64_t now = (int64_t)time(NULL);
        it->rs.attempts++;
        it->rs.status = res.status;
        long wait = fl_spool_backoff(it->rs.attempts, res.retry_after_s);
        it->rs.next = now + wait;
        if (res.retry_after_s > 0)
            r->server_paused = true;
        int rc = fl_spool_retry_save(r->sp, it->name, &it->rs);
        /* Without its retry file (a full disk) the next run sends it at
         * once: said so, not "next try in N s". */
        char next[200];
        if (rc)
            snprintf(next, sizeof next,
                     "its retry time cannot be written (%s): the next run tries it at once",
                     strerror(-rc));
        else
            snprintf(next, sizeof next, "next try in %ld s", wait);
        if (res.status)
            warn("%s%s: not delivered (HTTP %ld: %s); kept, %s", prefix, it->shown, res.status,
                 res.message, next);
        else
            warn("%s%s: not delivered (%s); kept, %s", prefix, it->shown, res.message, next);
        r->kept++;
        if (!r->next_due || it->rs.next < r->next_due)
            r->next_due = it->rs.next;
        /* The server asked for a wait (429, 503, any Retry-After): no more
         * requests in this pass.  No answer at all (or a gateway's
         * 502/504) may be this log's doing -- a proxy that resets on it,
         * a server that chokes on it -- so it ends the pass only when the
         * next log gets none either; otherwise that one log would block
         * every log behind it in name order, every run. */
        bool asked_wait = res.status == 429 || res.status == 503 || res.retry_after_s >= 0;
        bool no_answer = !res.status || res.status == 502 || res.status == 504;
        if (!asked_wait && no_answer && !probe)
            r->probe_next = true;
        else if (asked_wait || no_answer) {
            r->hold_until = it->rs.next;
            r->hold_status = res.status;
            if (res.status)
                snprintf(r->hold_why, sizeof r->hold_why, "the server answered HTTP %ld",
                         res.status);
            else
                snprintf(r->hold_why, sizeof r->hold_why, "the server did not answer");
            if (!asked_wait)
                snprintf(r->hold_why + strlen(r->hold_why),
                         sizeof r->hold_why - strlen(r->hold_why), " (for two logs in a row)");
        }
        return;
    }
    case FL_UPLOAD_FAILED:
        if (res.not_crash_server)
            warn("%s%s: failed: %s; kept", prefix, it->shown, res.message);
        else if ((hint = fl_report_url_hint(r->o->url, res.status, res.message)))
            /* Before the key's hint: a wrong route refuses any key. */
            warn("%s%s: failed (HTTP %ld: %s%s); kept", prefix, it->shown, res.status, res.message,
                 hint);
        else if (res.status == 401 && (!r->o->key || !*r->o->key))
            warn("%s%s: failed (HTTP 401: %s; no ingest key was given: --key KEY or "
                 "FAULTLINE_INGEST_KEY); kept",
                 prefix, it->shown, res.message);
        else if (res.status)
            warn("%s%s: failed (HTTP %ld: %s); kept", prefix, it->shown, res.status, res.message);
        else
            warn("%s%s: failed (%s); kept", prefix, it->shown, res.message);
        r->kept++;
        r->errors++;
        if (res.not_crash_server) {
            /* Whatever answered would answer the rest the same way. */
            r->refused = true;
            if (res.status)
                snprintf(r->hold_why, sizeof r->hold_why,
                         "HTTP %ld with an HTML page answered the one before, as it would them",
                         res.status);
            else
                snprintf(r->hold_why, sizeof r->hold_why,
                         "no HTTP server answered the one before, as none would them");
        } else if (!res.status) {
            /* This machine's setup (a CA file TLS cannot load, ...). */
            r->refused = true;
            snprintf(r->hold_why, sizeof r->hold_why,
                     "the one before failed on this machine's setup, as they would");
        } else if (res.status == 401 || res.status == 403 || res.status == 404 ||
                   res.status == 405 || res.status == 421 || res.status / 100 == 3) {
            r->refused = true;
            snprintf(r->hold_why, sizeof r->hold_why,
                     "the server answered HTTP %ld to the one before, as it would to them",
                     res.status);
        }
        return;
    }
}

/* The server is away or busy (r->hold_until): keep an approved log for
 * the same time without a request.  Its attempt count stays, as it was not
 * tried; the retry file makes later runs wait for the server too. */
static void hold(run *r, item *it)
{
    it->rs.next = r->hold_until;
    it->rs.status = r->hold_status;
    int rc = fl_spool_retry_save(r->sp, it->name, &it->rs);
    if (rc) {
        /* Said once, in the line for all the held logs. */
        r->held_unsaved++;
        r->held_errno = -rc;
    }
    r->kept++;
    r->held++;
    if (!r->next_due || it->rs.next < r->next_due)
        r->next_due = it->rs.next;
}

static void items_free(item *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
    }
    free(v);
}

/* A log that does not parse is deleted only once it is this old. */
#define FRESH_LOG_S 60

/* Read and validate one log: 0 and *l filled (loaded_free() it), or 1
 * when it is not to be sent, said and counted: gone (another tool removed
 * it), not a crash log (deleted, noted), unreadable (kept). */
static int load_log(run *r, const char *name, const char *shown, loaded *l)
{
    memset(l, 0, sizeof *l);
    int rc = fl_spool_read(r->sp, name, &l->data, &l->len);
    if (rc == -ENOENT)
        return 1; /* another tool removed it meanwhile */
    if (rc == -ELOOP || rc == -EINVAL || rc == -EFBIG) {
        const char *why = rc == -ELOOP   ? "not a crash log: a symbolic link"
                          : rc == -EFBIG ? "not a crash log: too large"
                                         : "not a crash log: not a regular file";
        if (drop(r, name, why)) {
            warn("%s: %s; deleted", shown, why);
            r->rejected++;
        }
        return 1;
    }
    if (rc) {
        warn("%s: cannot read: %s; kept", shown, strerror(-rc));
        r->kept++;
        r->errors++;
        return 1;
    }
    fl_crashlog_error err;
    if (fl_crashlog_parse(l->data, l->len, &l->log, &err) != 0) {
        char why[256];
        if (err.line)
            snprintf(why, sizeof why, "invalid crash log: line %u: %s", err.line, err.message);
        else
            snprintf(why, sizeof why, "invalid crash log: %s", err.message);
        /* Faultline's writers name a log only once it is whole; a young
         * one that does not parse may be a copy still under way (cp into
         * the spool while a reporter runs): checked again when older. */
        long long age = fl_spool_age(r->sp, name);
        if (age >= 0 && age < FRESH_LOG_S) {
            warn("%s: %s; kept: written %lld s ago, it may still be being written (checked "
                 "again once it is %d s old)",
                 shown, why, age, FRESH_LOG_S);
            r->kept++;
            loaded_free(l);
            return 1;
        }
        if (drop(r, name, why)) {
            warn("%s: %s; deleted", shown, why);
            r->rejected++;
        }
        loaded_free(l);
        return 1;
    }
    return 0;
}

/* Load and validate every log; returns the ones worth a decision now.
 * Garbage is deleted here, before any request is made. */
static int collect(run *r, item **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    char **names = NULL;
    int n = fl_spool_list(r->sp, &names);
    if (n < 0) {
        warn("cannot list the spool: %s", strerror(-n));
        r->errors++;
        return -1;
    }
    item *v = calloc((size_t)n + 1, sizeof *v);
    if (!v) {
        fl_spool_names_free(names, n);
        warn("out of memory");
        r->errors++;
        return -1;
    }
    size_t k = 0;
    int64_t now = (int64_t)time(NULL);
    for (int i = 0; i < n; i++) {
        const char *name = names[i];
        char shown[NAME_MAX + 1];
        fl_report_printable(shown, sizeof shown, name);
        loaded l;
        if (load_log(r, name, shown, &l) != 0)
            continue;
        fl_retry_state rs;
        fl_spool_retry_load(r->sp, name, &rs);
        /* A "next" further out than any backoff we write means the clock
         * went back (or the file was edited): then the log is due now. */
        if (!r->o->now && rs.next > now &&
            rs.next - now <= FL_UPLOAD_MAX_RETRY_AFTER + FL_SPOOL_BACKOFF_MAX) {
            char last[64] = "no answer";
            if (rs.status)
                snprintf(last, sizeof last, "HTTP %ld", rs.status);
            /* attempts 0: held back untried when the server was away */
            say(r, "%s: waiting to retry (%s: %s), next try in %lld s or with --now; kept", shown,
                rs.attempts ? "last try" : "not tried yet, the server's last answer", last,
                (long long)(rs.next - now));
            r->kept++;
            if ((r->send_all || was_approved(r, name)) && (!r->next_due || rs.next < r->next_due))
                r->next_due = rs.next;
            /* A busy server's wait from an earlier run (the retry file
             * keeps its answer, not whether it named the time): no last
             * try of --retry-until before it. */
            if (rs.status == 429 || rs.status == 503)
                r->server_paused = true;
            loaded_free(&l);
            continue;
        }
        v[k].name = strdup(name);
        memcpy(v[k].shown, shown, sizeof shown);
        fl_report_describe(l.log, l.len, v[k].desc, sizeof v[k].desc);
        v[k].len = l.len;
        v[k].crc = crc32(0L, (const Bytef *)l.data, (uInt)l.len);
        v[k].rs = rs;
        loaded_free(&l);
        if (!v[k].name) {
            items_free(v, k + 1);
            fl_spool_names_free(names, n);
            warn("out of memory");
            r->errors++;
            return -1;
        }
        k++;
    }
    fl_spool_names_free(names, n);
    *out = v;
    *nout = k;
    return 0;
}

/* The strings of an event whose format the program kept apart (its
 * TRACE_BYTES, hex in the log) as the text they hold: what the person is
 * asked to send should be readable.  Shown only; the log is sent as it
 * is. */
static void show_strings(FILE *f, const unsigned char *b, size_t n)
{
    fputc(' ', f);
    bool open = false;
    for (size_t i = 0; i < n; i++) {
        int c = b[i];
        if (!c) {
            if (open)
                fputc('"', f);
            open = false;
            continue;
        }
        if (!open)
            fputs(" \"", f);
        open = true;
        /* Bytes that would steer a terminal, escaped. */
        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    if (open)
        fputc('"', f);
    fputc('\n', f);
}

/* The log's full text, then the strings of its TRACE_ID events as text. */
static void print_log(FILE *f, const char *shown, const loaded *l)
{
    fwrite(l->data, 1, l->len, f);
    if (l->len && l->data[l->len - 1] != '\n')
        fputc('\n', f);
    bool any = false;
    for (size_t i = 0; i < l->log->ntrace; i++) {
        const fl_trace_event *e = &l->log->trace[i];
        if (!e->apart || !e->nbytes)
            continue;
        if (!any)
            fprintf(f, "==> %s: the strings of its trace events, as text <==\n", shown);
        any = true;
        show_strings(f, e->bytes, e->nbytes);
    }
    fflush(f);
}

static void show_full(run *r, const item *it)
{
    loaded l;
    if (load_log(r, it->name, it->shown, &l) != 0)
        return;
    printf("==> %s <==\n", it->shown);
    print_log(stdout, it->shown, &l);
    loaded_free(&l);
}

/* One pass over the spool.  Returns -1 on a usage problem (no URL). */
static int pass(run *r, bool first)
{
    item *items;
    size_t n;
    r->next_due = 0;
    r->server_paused = false;
    r->hold_until = 0;
    r->probe_next = false;
    r->held = 0;
    r->held_unsaved = 0;
    r->late = 0;
    r->refused = false;
    if (collect(r, &items, &n) != 0)
        return 0;
    if (!n) {
        items_free(items, n);
        return 0;
    }
    if ((r->send_all || r->interactive) && (!r->o->url || !*r->o->url)) {
        warn("no server to send to: use --url URL or set FAULTLINE_URL; logs kept");
        r->kept += (unsigned)n;
        items_free(items, n);
        return -1;
    }
    /* A --url was checked with the options; FAULTLINE_URL is checked once
     * there is something to send to it, as its absence is. */
    const char *url_bad = r->o->url ? fl_report_url_problem(r->o->url) : NULL;
    if ((r->send_all || r->interactive) && url_bad) {
        warn("FAULTLINE_URL '%.200s': %s (e.g. http://HOST:8080/api/v1/crashes); logs kept",
             r->o->url, url_bad);
        r->kept += (unsigned)n;
        items_free(items, n);
        return -1;
    }
    if (first && r->o->show)
        for (size_t i = 0; i < n; i++)
            show_full(r, &items[i]);

    if (!r->send_all && !r->interactive) {
        size_t waiting = 0;
        for (size_t i = 0; i < n; i++)
            waiting += !was_approved(r, items[i].name);
        if (waiting && first)
            warn("%zu crash report%s not sent: no one at a terminal to ask and no --yes "
                 "(nor FAULTLINE_REPORT_YES=1); kept in the spool",
                 waiting, waiting == 1 ? "" : "s");
    }
    if (r->interactive && !r->send_all && first) {
        fprintf(stderr, "\n%zu crash report%s waiting to be sent to %s:\n", n,
                n == 1 ? " is" : "s are", r->o->url ? r->o->url : "(no server set)");
        for (size_t i = 0; i < n; i++) {
            fprintf(stderr, "  %s: %s\n", items[i].shown, items[i].desc);
        }
    }

    for (size_t i = 0; i < n; i++) {
        item *it = &items[i];
        if (g_stop) {
            r->kept += (unsigned)(n - i);
            break;
        }
        int c = consent(r, it, i, n);
        if (g_stop && c != 'g') {
            r->kept += (unsigned)(n - i);
            break;
        }
        if (c == 'g')
            continue;
        if (c == 'k') {
            r->kept++;
            continue;
        }
        if (c == 'n') {
            if (drop(r, it->name, "declined by the user")) {
                say(r, "%s: not sent (declined); deleted", it->shown);
                r->rejected++;
            }
            continue;
        }
        approve(r, it->name);
        if (r->hold_until) {
            hold(r, it);
            continue;
        }
        if (r->refused) {
            r->kept++;
            r->held++;
            continue;
        }
        if (r->interactive && !r->o->yes) /* --yes: no questions at all */
            ask_email(r);
        if (!r->up) {
            fl_upload_config cfg = {
                .url = r->o->url,
                .key = r->o->key,
                .connect_timeout_s = r->o->connect_timeout,
                .cacert = r->o->cacert,
                .timeout_s = r->o->timeout,
                .no_gzip = r->o->no_gzip,
                .stop = &g_stop,
            };
            if (!(r->up = fl_upload_new(&cfg))) {
                warn("cannot start the HTTP client");
                r->kept += (unsigned)(n - i);
                r->errors++;
                break;
            }
        }
        if (r->deadline_ms) {
            int64_t left = r->deadline_ms - mono_ms();
            if (left <= 0) {
                r->kept++;
                r->late++;
                continue;
            }
            fl_upload_cap_time(r->up, (long)left);
        }
        send_one(r, it, i, n);
    }
    if (r->late)
        warn("%u more crash report%s not tried: --retry-until's end came; kept", r->late,
             r->late == 1 ? "" : "s");
    if (r->held && r->refused) {
        warn("%u more crash report%s not tried: %s; kept", r->held, r->held == 1 ? "" : "s",
             r->hold_why);
    } else if (r->held && r->held_unsaved == r->held) {
        /* Without their retry files (a full disk) the next run tries them
         * at once: said so, not "next try in N s". */
        warn("%u more crash report%s not tried: %s; kept, their retry times cannot be written "
             "(%s): the next run tries them at once",
             r->held, r->held == 1 ? "" : "s", r->hold_why, strerror(r->held_errno));
    } else if (r->held) {
        int64_t now = (int64_t)time(NULL);
        char unsaved[160] = "";
        if (r->held_unsaved)
            snprintf(unsaved, sizeof unsaved,
                     " (%u of them at once: their retry times cannot be written: %s)",
                     r->held_unsaved, strerror(r->held_errno));
        warn("%u more crash report%s not tried: %s; kept, next try in %lld s%s", r->held,
             r->held == 1 ? "" : "s", r->hold_why,
             (long long)(r->hold_until > now ? r->hold_until - now : 0), unsaved);
    }
    items_free(items, n);
    return 0;
}

static int parse_args(int argc, char **argv, opts *o)
{
    enum {
        O_ONCE = 256, O_RETRY, O_SHOW, O_CT, O_TO, O_LOCK, O_NOGZ, O_VERSION, O_EMAIL, O_NOW, O_CA
    };
    static const struct option lopts[] = {
        {"spool", required_argument, NULL, 's'},
        {"url", required_argument, NULL, 'u'},
        {"key", required_argument, NULL, 'k'},
        {"yes", no_argument, NULL, 'y'},
        {"email", required_argument, NULL, O_EMAIL},
        {"once", no_argument, NULL, O_ONCE},
        {"retry-until", required_argument, NULL, O_RETRY},
        {"now", no_argument, NULL, O_NOW},
        {"show", no_argument, NULL, O_SHOW},
        {"quiet", no_argument, NULL, 'q'},
        {"connect-timeout", required_argument, NULL, O_CT},
        {"timeout", required_argument, NULL, O_TO},
        {"lock-wait", required_argument, NULL, O_LOCK},
        {"no-gzip", no_argument, NULL, O_NOGZ},
        {"cacert", required_argument, NULL, O_CA},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    bool once = false, cacert_given = false;
    optind = 1;
    opterr = 0;
    int c;
    int li = -1;
    const char *bad;
    while ((c = getopt_long(argc, argv, ":s:u:k:yqh", lopts, &li)) != -1) {
        long *sec = NULL;
        switch (c) {
        case 's': o->spool = optarg; break;
        case 'u':
            if (*optarg && (bad = fl_report_url_problem(optarg))) {
                warn("--url '%.200s': %s (e.g. http://HOST:8080/api/v1/crashes)", optarg, bad);
                return FL_EXIT_USAGE;
            }
            o->url = optarg;
            break;
        case 'k': o->key = optarg; break;
        case 'y': o->yes = true; break;
        case 'q': o->quiet = true; break;
        case O_EMAIL:
            if (!fl_report_email_ok(optarg) || strlen(optarg) >= sizeof o->email) {
                warn("--email: '%.80s' is not an email address", optarg);
                return FL_EXIT_USAGE;
            }
            snprintf(o->email, sizeof o->email, "%s", optarg);
            o->email_given = true;
            break;
        case O_ONCE: once = true; break;
        case O_RETRY: sec = &o->retry_until; break;
        case O_NOW: o->now = true; break;
        case O_SHOW: o->show = true; break;
        case O_CT: sec = &o->connect_timeout; break;
        case O_TO: sec = &o->timeout; break;
        case O_LOCK: sec = &o->lock_wait; break;
        case O_NOGZ: o->no_gzip = true; break;
        case O_CA:
            o->cacert = optarg;
            cacert_given = true;
            break;
        case 'h': usage(stdout); return FL_EXIT_OK + 1000;
        case O_VERSION: printf(PROG " " FL_REPORTER_VERSION "\n"); return FL_EXIT_OK + 1000;
        case ':':
            warn("option %s needs a value; see " PROG " --help", argv[optind - 1]);
            return FL_EXIT_USAGE;
        default:
            warn("unknown option '%s'; see " PROG " --help", argv[optind - 1]);
            return FL_EXIT_USAGE;
        }
        if (sec && fl_report_parse_seconds(optarg, sec) != 0) {
            /* Every option taking seconds is a long one: li names it. */
            warn("--%s: '%.40s' is not a number of seconds", li >= 0 ? lopts[li].name : "?",
                 optarg);
            return FL_EXIT_USAGE;
        }
        if ((sec == &o->connect_timeout || sec == &o->timeout) && *sec == 0) {
            /* Refused rather than quietly taken as the default: 0 reads as
             * "no timeout" or "give up at once", and is neither. */
            warn("--%s: at least 1 second, not 0", li >= 0 ? lopts[li].name : "?");
            return FL_EXIT_USAGE;
        }
        li = -1;
    }
    if (optind < argc) {
        warn("unexpected argument '%s'; see " PROG " --help", argv[optind]);
        return FL_EXIT_USAGE;
    }
    if (once && o->retry_until >= 0) {
        warn("--once and --retry-until exclude each other");
        return FL_EXIT_USAGE;
    }
    if (o->key && !fl_report_header_ok(o->key)) {
        warn("the ingest key contains control characters");
        return FL_EXIT_USAGE;
    }
    if (o->cacert && !*o->cacert)
        o->cacert = NULL;
    bad = o->cacert ? fl_report_cacert_problem(o->cacert) : NULL;
    if (bad) {
        warn("%s %.200s: %s", cacert_given ? "--cacert" : "FAULTLINE_CACERT", o->cacert, bad);
        return FL_EXIT_USAGE;
    }
    return -1;
}

int fl_reporter_main(int argc, char **argv)
{
    opts o = {.retry_until = -1, .lock_wait = DEFAULT_LOCK_WAIT_S};
    o.url = getenv("FAULTLINE_URL");
    o.key = getenv("FAULTLINE_INGEST_KEY");
    o.cacert = getenv("FAULTLINE_CACERT");
    /* Consent given ahead, for the reporter the client library starts after
     * a crash: it has no terminal, so it can ask no one. */
    const char *yes = getenv("FAULTLINE_REPORT_YES");
    o.yes = yes && !strcmp(yes, "1");
    /* Consent is never guessed from a value: "no" or "false" must not
     * send.  Anything but 1, 0 or empty is said and taken as no. */
    if (yes && *yes && !o.yes && strcmp(yes, "0"))
        warn("FAULTLINE_REPORT_YES=%.40s: not 1 (send without asking) or 0; taken as 0", yes);
    int prc = parse_args(argc, argv, &o);
    if (prc >= 1000)
        return prc - 1000;
    if (prc >= 0)
        return prc;

    char dir[4096];
    if (o.spool) {
        snprintf(dir, sizeof dir, "%s", o.spool);
    } else {
        int rc = fl_spool_default_dir(dir, sizeof dir);
        if (rc) {
            warn("no spool directory: set FAULTLINE_SPOOL or HOME, or use --spool");
            return FL_EXIT_ERROR;
        }
    }

    run r = {.o = &o};
    r.interactive = isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
    r.send_all = o.yes;
    int rc = fl_spool_open(dir, &r.sp);
    if (rc == -ENOENT) {
        say(&r, "no spool at %s: nothing to send", dir);
        return FL_EXIT_OK;
    }
    if (rc) {
        warn("cannot open the spool %s: %s", dir, strerror(-rc));
        return FL_EXIT_ERROR;
    }
    rc = fl_spool_lock(r.sp, (int)(o.lock_wait * 1000));
    if (rc == -EWOULDBLOCK) {
        warn("another faultline-report is working on %s; leaving it to that one", dir);
        fl_spool_close(r.sp);
        return FL_EXIT_TEMPFAIL;
    }
    if (rc == -EALREADY) {
        warn("another faultline-report is working on %s and one more waits to run after it, "
             "which will send what is there; leaving it to those",
             dir);
        fl_spool_close(r.sp);
        return FL_EXIT_TEMPFAIL;
    }
    if (rc) {
        warn("cannot lock %s/.reporter.lock: %s; nothing sent, the crash logs are left as they are",
             dir, strerror(-rc));
        fl_spool_close(r.sp);
        return FL_EXIT_ERROR;
    }

    catch_stop_signals();

    /* --retry-until counts on the monotonic clock: a step of the wall
     * clock neither ends the run early nor keeps it going for the step. */
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    int64_t mono_deadline = o.retry_until >= 0 ? (int64_t)mono.tv_sec + o.retry_until : 0;
    /* A request is cut at the deadline rather than run a --timeout past
     * it.  --retry-until 0 is one pass, as --once. */
    r.deadline_ms = o.retry_until > 0 ? mono_ms() + o.retry_until * 1000 : 0;
    bool usage_problem = false, last = false;
    for (bool first = true;; first = false) {
        r.kept = 0; /* delivered and rejected add up over passes, kept is the last word */
        unsigned errors_before = r.errors;
        if (pass(&r, first) != 0) {
            usage_problem = true;
            break;
        }
        if (g_stop || last || o.retry_until < 0 || !r.kept || r.errors != errors_before ||
            !r.next_due)
            break;
        int64_t now = (int64_t)time(NULL);
        clock_gettime(CLOCK_MONOTONIC, &mono);
        int64_t wait = r.next_due > now ? r.next_due - now : 0;
        int64_t left = mono_deadline - (int64_t)mono.tv_sec;
        if (wait > left) {
            /* Our own backoff outgrew the deadline (the first wait alone
             * is 30 s or more): one last try as it ends, rather than none
             * while the person waits.  A wait the server asked for
             * (Retry-After) is kept: the logs stay for a later run. */
            if (r.server_paused || left <= 0) {
                say(&r,
                    "the next try is in %lld s, past --retry-until's end%s: the logs stay for a "
                    "later run",
                    (long long)wait, r.server_paused ? " (the server asked for the wait)" : "");
                break;
            }
            /* Early enough for its request, which is cut at the end:
             * half the time left, or a --timeout before the end when
             * that is later. */
            long timeout = o.timeout > 0 ? o.timeout : 60;
            wait = left - timeout > left / 2 ? left - timeout : left / 2;
            say(&r, "the next try is in %lld s, past --retry-until's end: one last try in %lld s",
                (long long)(r.next_due > now ? r.next_due - now : 0), (long long)wait);
            o.now = true; /* the logs waiting to retry are due then */
            last = true;
        } else if (wait > 0) {
            say(&r, "waiting %lld s for the next retry", (long long)wait);
        }
        struct timespec ts = {(time_t)wait, 0};
        while (wait > 0 && !g_stop && nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        if (g_stop)
            break;
    }
    if (g_stop)
        warn("interrupted (%s): the crash logs not delivered stay in the spool",
             g_stop == SIGINT   ? "SIGINT"
             : g_stop == SIGHUP ? "SIGHUP"
                                : "SIGTERM");

    if (!usage_problem && (r.delivered || r.rejected || r.kept))
        say(&r, "%u delivered, %u rejected or deleted, %u kept for later", r.delivered, r.rejected,
            r.kept);
    else if (!usage_problem && !r.errors)
        /* Said, as a missing spool is: silence would leave a wrong --spool
         * or FAULTLINE_SPOOL unnoticed. */
        say(&r, "nothing to send in %s", dir);
    fl_upload_free(r.up);
    fl_spool_close(r.sp);
    for (size_t i = 0; i < r.napproved; i++)
        free(r.approved[i]);
    free(r.approved);
    if (usage_problem)
        return FL_EXIT_USAGE;
    if (g_stop)
        return 128 + g_stop;
    if (r.errors)
        return FL_EXIT_ERROR;
    return r.kept ? FL_EXIT_TEMPFAIL : FL_EXIT_OK;
}
