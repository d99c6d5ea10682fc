/*
 * report_util.h - small helpers shared by faultline-report and
 * `faultline submit` (private to src/reporter).
 */
#ifndef FL_REPORT_UTIL_H
#define FL_REPORT_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "fl_crashlog.h"

/* One line that tells a person what a log is: app, version, signal, time,
 * frame count and size.  Writes into out[cap]. */
void fl_report_describe(const fl_crashlog *log, size_t bytes, char *out, size_t cap);

/* s with its control bytes (C0 and DEL: ESC, newline, ...) as '?', into
 * out[cap], cut to fit: for a file name shown on a terminal or written
 * into a line of rejected.log, where an ESC would steer the terminal and
 * a newline would forge a line. */
void fl_report_printable(char *out, size_t cap, const char *s);

/* Parse a non-negative number of seconds (at most a year); -1 on junk. */
int fl_report_parse_seconds(const char *s, long *out);

/* An email address we are willing to send: 3..254 printable, non-space
 * ASCII characters with one '@' not at either end.  "" is fine (none). */
bool fl_report_email_ok(const char *s);

/* A header value (ingest key) must not carry control characters. */
bool fl_report_header_ok(const char *s);

/* Why url cannot be a server's URL, or NULL when it can: it must start
 * with http:// or https://, name a host, and parse with libcurl's URL API
 * (a port from 1 to 65535, a valid host name).  A static string.  libcurl would otherwise guess
 * a scheme for "HOST:PORT" (ftp:// for a host named ftp.*) or try a
 * typo's first word as a host name, and the reporter would keep every log
 * as if the server were away. */
const char *fl_report_url_problem(const char *url);

/* What the line of a 401 or 405 adds when url's path is not one a crash
 * report goes to (/ or /api/v1/crashes, with or without a trailing '/'):
 * the URL is then the likelier mistake, not the key.  A static string
 * ("; the URL is probably wrong...", shorter when message, the server's
 * reason, names the ingest routes already, as Faultline's does), or NULL
 * for another status or URL (one that does not parse included). */
const char *fl_report_url_hint(const char *url, long status, const char *message);

/* Why path cannot serve as --cacert / FAULTLINE_CACERT, or NULL when it
 * can: a regular file we may read that holds at least one PEM certificate
 * ("-----BEGIN CERTIFICATE-----" within its first FL_REPORT_CACERT_SCAN
 * bytes).  An empty file, a private key or a DER file would otherwise fail
 * each request as if the server were away.  A static string or
 * strerror()'s. */
#define FL_REPORT_CACERT_SCAN (16u << 20)
const char *fl_report_cacert_problem(const char *path);

#endif
