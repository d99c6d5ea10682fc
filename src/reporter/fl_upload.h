/*
 * fl_upload.h - send one crash log to a Faultline (or MojoCrash) server.
 *
 * The request is the MojoCrash one: an HTTP POST of multipart/form-data with
 * the form fields "app", "version" and "email" and one file part holding the
 * log byte for byte (filename "NAME.crashlog", Content-Type text/plain;
 * charset=utf-8).  The whole body is gzip-compressed and marked
 * "Content-Encoding: gzip" unless the caller turns that off.
 *
 * The server's answer is folded into an outcome that says what to do with
 * the log on disk; the status code, the Retry-After delay and the server's
 * reason are kept for the message.  Nothing here prints or touches files.
 *
 * Thread safety: one fl_upload per thread.  fl_upload_new() calls
 * curl_global_init() the first time, which is not thread-safe; create the
 * first uploader before starting threads.
 */
#ifndef FL_UPLOAD_H
#define FL_UPLOAD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* What to do with the log after an attempt. */
typedef enum fl_upload_outcome {
    FL_UPLOAD_DELIVERED = 0, /* 2xx: the server has it durably; delete */
    FL_UPLOAD_REJECTED,      /* 400: malformed for this server; delete, never resend */
    FL_UPLOAD_TOO_LARGE,     /* 413: the server will never take it; delete, note */
    FL_UPLOAD_RETRY,         /* 429, 503, 5xx, 408, timeout, refused, DNS: keep, retry later */
    FL_UPLOAD_FAILED,        /* 401/403/404/3xx/bad URL/local error, or an HTML page
                                where a crash server's answer was due: keep, needs a
                                person */
    FL_UPLOAD_INTERRUPTED,   /* cut by fl_upload_config.stop: keep, as it was */
} fl_upload_outcome;

/* Human name of an outcome ("delivered", "rejected", ...).  Static string. */
const char *fl_upload_outcome_name(fl_upload_outcome o);

typedef struct fl_upload_config {
    const char *url;         /* required; borrowed for the uploader's lifetime */
    const char *key;         /* sent as X-Faultline-Key; NULL or "" sends none */
    const char *user_agent;  /* NULL: "faultline-report/<version>" */
    long connect_timeout_s;  /* <= 0: 10 */
    long timeout_s;          /* whole request; <= 0: 60 */
    bool no_gzip;            /* send the body uncompressed */
    const char *cacert;      /* CA certificates (PEM) to check an https server
                                with, instead of the system's; NULL: the system's */
    /* When not NULL and it turns nonzero (a signal handler sets it), a
     * request under way is cut within a second: FL_UPLOAD_INTERRUPTED. */
    const volatile sig_atomic_t *stop;
} fl_upload_config;

/* One log to send; everything borrowed for the call. */
typedef struct fl_upload_report {
    const char *data;     /* the log's bytes, sent unchanged */
    size_t len;
    const char *filename; /* base name; ".crashlog" is appended when missing */
    const char *app;      /* form field "app"; NULL sends "" */
    const char *version;  /* form field "version"; NULL sends "" */
    const char *email;    /* form field "email"; NULL sends "" */
} fl_upload_report;

/* Longest Retry-After honoured, in seconds (a week); larger values are cut. */
#define FL_UPLOAD_MAX_RETRY_AFTER (7L * 24 * 3600)
/* Bytes of the server's answer kept for the message; the rest is dropped. */
#define FL_UPLOAD_MAX_RESPONSE (64u * 1024)

typedef struct fl_upload_result {
    fl_upload_outcome outcome;
    long status;        /* HTTP status; 0 when there was no answer */
    long retry_after_s; /* the server's Retry-After in seconds, -1 when absent */
    char id[128];       /* on 2xx: the first accepted id, "" when none was given */
    bool duplicate;     /* on 2xx: the server had that crash already (a resend) */
    char message[256];  /* the server's reason or the transport error, printable ASCII */
    bool not_crash_server; /* a 2xx, 400 or 413 came with an HTML page: a proxy's or
                              another web server's answer, not about the log
                              (outcome FL_UPLOAD_FAILED; message says what answered) */
} fl_upload_result;

typedef struct fl_upload fl_upload;

/* Returns a new uploader (caller frees with fl_upload_free) or NULL when
 * out of memory or libcurl cannot start.  The config is copied except the
 * strings, which stay borrowed. */
fl_upload *fl_upload_new(const fl_upload_config *cfg);
void fl_upload_free(fl_upload *up); /* NULL is fine */

/* Cap the time of the next sends, connecting included, to ms milliseconds
 * (below the configured timeouts; ms <= 0: no cap).  For a caller with a
 * deadline of its own, so that a request does not run past it. */
void fl_upload_cap_time(fl_upload *up, long ms);

/*
 * Send one log and wait for the answer (at most the configured timeout).
 * Always fills *res.  Returns 0 when the attempt happened (whatever the
 * server said) and -1 when it could not be made at all (out of memory, body
 * too large to build); res->outcome is then FL_UPLOAD_FAILED.
 */
int fl_upload_send(fl_upload *up, const fl_upload_report *rep, fl_upload_result *res);

#endif /* FL_UPLOAD_H */
