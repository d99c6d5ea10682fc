/* fl_symupload.h - upload one debug file to a Faultline server
 * (POST BASE/api/v1/symbols). */
#ifndef FL_SYMUPLOAD_H
#define FL_SYMUPLOAD_H

#include <stddef.h>

/* The server's base URL from what a user gives `--server`: a base URL, or
 * one ending in an API path of the server (/api/v1/crashes, the ingest URL
 * kept in FAULTLINE_URL; /api/v1/symbols; the bare ingest path "/"), with
 * or without a trailing slash; a query string (?key=...) is dropped.
 * OUT: out (cap bytes).  Returns 0, or -1 when nothing is left or it does
 * not fit. */
int fl_symupload_base_url(const char *server, char *out, size_t cap);

/* What one upload's answer says beyond its message. */
typedef struct fl_symupload_result {
    long http_status; /* 0 when no answer came */
    long retry_after; /* the answer's Retry-After in seconds (capped at a
                       * day), -1 when it had none */
    int temporary;    /* the failure may pass by itself (server away or
                       * busy: refused connection, reset, stall, 429,
                       * 502, 503, 504; out of space, 507), so sending
                       * again later may work */
} fl_symupload_result;

/* Uploads the file at path to base_url (from fl_symupload_base_url) with
 * token (may be NULL: none) as the bearer token, checking an https
 * server's certificate against the CA certificates (PEM) in cacert (NULL:
 * the system's), after the server's
 * acceptance check (fl_symcheck_debug_file: a file it would refuse is not
 * sent).  Progress goes to stderr when show_progress ("[index/count]").
 * Gives up when nothing moves for stall_s seconds (no whole-request limit:
 * a debug file may take long to send).  http:// and https:// only; an
 * answer that does not name the file's build id is a failure.  One try:
 * the caller decides whether a temporary failure is tried again.
 * OUT: *res, msg (always filled, one line, naming the file): a success
 * summary or the reason for the failure.  Returns 0 or a negative
 * FL_SYM_ code. */
int fl_symupload(const char *base_url, const char *token, const char *cacert, const char *path,
                 int show_progress, int index, int count, long stall_s, fl_symupload_result *res,
                 char *msg, size_t msglen);

#endif
