#define _GNU_SOURCE /* sigabbrev_np */
#include "report_util.h"

#include "fl_demangle.h"
#include "fl_file.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static void size_text(size_t bytes, char *out, size_t cap)
{
    if (bytes < 10 * 1024)
        snprintf(out, cap, "%zu bytes", bytes);
    else
        snprintf(out, cap, "%.1f KiB", (double)bytes / 1024.0);
}

void fl_report_describe(const fl_crashlog *log, size_t bytes, char *out, size_t cap)
{
    char sig[48] = "no signal";
    if (log->has_crash_signal) {
        const char *abbr = log->signal_name;
        char tmp[24];
        if (!abbr && log->crash_signal > 0 && log->crash_signal < 128 &&
            (abbr = sigabbrev_np(log->crash_signal))) {
            snprintf(tmp, sizeof tmp, "SIG%s", abbr);
            abbr = tmp;
        }
        if (abbr)
            snprintf(sig, sizeof sig, "signal %d (%.20s)", log->crash_signal, abbr);
        else
            snprintf(sig, sizeof sig, "signal %d", log->crash_signal);
    }
    char when[40] = "at an unknown time";
    if (log->has_crash_time) {
        time_t t = (time_t)log->crash_time;
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof when, "at %Y-%m-%d %H:%M:%S UTC", &tm);
    }
    char size[32], stack[32];
    size_text(bytes, size, sizeof size);
    /* The raw stack is the program's memory (local variables), which a
     * person asked to send the report should know it holds. */
    size_t nstack = 0;
    for (size_t i = 0; i < log->nstack; i++)
        nstack += log->stack[i].len;
    size_text(nstack, stack, sizeof stack);
    /* So are the trace events: what the program logged, with its values. */
    char held[96] = "", events[40] = "";
    if (log->ntrace)
        snprintf(events, sizeof events, "%zu trace event%s", log->ntrace,
                 log->ntrace == 1 ? "" : "s");
    if (nstack && log->ntrace)
        snprintf(held, sizeof held, " (%s of stack memory, %s)", stack, events);
    else if (nstack)
        snprintf(held, sizeof held, " (%s of stack memory)", stack);
    else if (log->ntrace)
        snprintf(held, sizeof held, " (%s)", events);
    int n = snprintf(out, cap, "%.60s %.40s, %s %s, %zu frame%s, %s%s",
                     log->app_name ? log->app_name : "?",
                     log->app_version ? log->app_version : "(no version)", sig, when,
                     log->ncallstack, log->ncallstack == 1 ? "" : "s", size, held);
    /* What the program said as it died -- an uncaught C++ exception, or the
     * C library's abort message: the most telling line, and text the user
     * should see before it is sent. */
    if (n < 0 || (size_t)n >= cap)
        return;
    if (log->exception_type) {
        char *type = fl_demangle_type(log->exception_type);
        const char *msg = log->exception_message;
        snprintf(out + n, cap - (size_t)n, "; uncaught %.80s%s%.120s",
                 type ? type : log->exception_type, msg ? ": " : "", msg ? msg : "");
        free(type);
    } else if (log->abort_message) {
        snprintf(out + n, cap - (size_t)n, "; %.160s", log->abort_message);
    }
    /* Bytes that would steer a terminal are shown as '?'. */
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

int fl_report_parse_seconds(const char *s, long *out)
{
    uint64_t v;
    if (!s || *s < '0' || *s > '9' || fl_parse_u64(s, &v) != 0 || v > 366u * 24 * 3600)
        return -1;
    *out = (long)v;
    return 0;
}

bool fl_report_email_ok(const char *s)
{
    if (!*s)
        return true;
    size_t n = strlen(s);
    const char *at = strchr(s, '@');
    if (n < 3 || n > 254 || !at || at == s || !at[1] || strchr(at + 1, '@'))
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return false;
    return true;
}

bool fl_report_header_ok(const char *s)
{
    for (; s && *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

const char *fl_report_url_problem(const char *url)
{
    size_t skip = !strncasecmp(url, "http://", 7) ? 7 : !strncasecmp(url, "https://", 8) ? 8 : 0;
    if (!skip)
        return strstr(url, "://") ? "only http:// and https:// are supported"
                                  : "no http:// or https:// in front";
    if (!url[skip] || strchr("/?#:", url[skip]))
        return "no host after the scheme";
    /* Then as libcurl will parse it: a port out of range, a host name
     * with a space, a broken IPv6 address would otherwise fail each log
     * at send time (exit 1) instead of being a usage error. */
    CURLU *u = curl_url();
    if (!u)
        return "out of memory checking it";
    const char *why = NULL;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    char *port = NULL;
    if (uc == CURLUE_BAD_PORT_NUMBER)
        why = "the port is not a number from 1 to 65535";
    else if (uc)
        why = curl_url_strerror(uc); /* static: "Bad hostname", ... */
    else if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && port && !strcmp(port, "0"))
        why = "the port is not a number from 1 to 65535";
    curl_free(port);
    curl_url_cleanup(u);
    return why;
}

const char *fl_report_url_hint(const char *url, long status, const char *message)
{
    if (status != 401 && status != 405)
        return NULL;
    CURLU *u = curl_url();
    char *path = NULL;
    bool wrong = false;
    if (u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
        !curl_url_get(u, CURLUPART_PATH, &path, 0) && path) {
        /* libcurl gives "/" for a URL without a path. */
        wrong = strcmp(path, "/") && strcmp(path, "/api/v1/crashes") &&
                strcmp(path, "/api/v1/crashes/");
    }
    curl_free(path);
    curl_url_cleanup(u);
    if (!wrong)
        return NULL;
    return message && strstr(message, "/api/v1/crashes")
               ? "; the URL is probably wrong"
               : "; the URL is probably wrong: crash logs go to / or /api/v1/crashes";
}

const char *fl_report_cacert_problem(const char *path)
{
    const char *bad = fl_file_problem(path);
    if (bad)
        return bad;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return strerror(errno);
    /* Read in blocks, keeping the tail of the last one, so that a tag cut
     * between two reads is found; a CA bundle is a few hundred KiB, and
     * past FL_REPORT_CACERT_SCAN a file is not one. */
    static const char tag[] = "-----BEGIN CERTIFICATE-----";
    const size_t tl = sizeof tag - 1;
    char buf[16 * 1024];
    size_t keep = 0, total = 0;
    bool found = false;
    while (!found && total < FL_REPORT_CACERT_SCAN) {
        ssize_t r = read(fd, buf + keep, sizeof buf - keep);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return strerror(e);
        }
        if (r == 0)
            break;
        total += (size_t)r;
        size_t n = keep + (size_t)r;
        found = memmem(buf, n, tag, tl) != NULL;
        keep = n < tl ? n : tl;
        memmove(buf, buf + n - keep, keep);
    }
    close(fd);
    if (found)
        return NULL;
    if (!total)
        return "an empty file, no CA certificate in it";
    return "no PEM certificate in it (no '-----BEGIN CERTIFICATE-----': a private key, a DER "
           "file?)";
}

void fl_report_printable(char *out, size_t cap, const char *s)
{
    if (!cap)
        return;
    size_t o = 0;
    for (; s && *s && o + 1 < cap; s++)
        out[o++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
    out[o] = '\0';
}
