/*
 * fl_srvutil.h - small helpers of the server: hashing, version comparison,
 * capped gzip decoding, zstd, time.  No state, thread-safe.
 */
#ifndef FL_SRVUTIL_H
#define FL_SRVUTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* SHA-256 of buf[0..len) into out[32]. */
void fl_sha256(const void *buf, size_t len, uint8_t out[32]);
/* Lowercase hex of the first n bytes of p into out (2n+1 bytes). */
void fl_hex(const uint8_t *p, size_t n, char *out);
/* The id of generation gen (1, 2, ...) of the group whose signature's
 * own id is base, once earlier generations were deleted (fl_store.h's
 * delete_group): a hash of both, 32 lowercase hex digits like the ids
 * grouping gives, into out (33 bytes).  Every server computes the same. */
void fl_group_gen_id(const char *base, int64_t gen, char out[33]);
/* A new key or token: 128 random bits (getrandom) in hex.  0, or -1 with
 * errno. */
int fl_random_key(char out[33]);
/* Equal strings, compared whole whatever differs, so that the time taken
 * says nothing about how much of a secret was right.  NULL equals nothing. */
bool fl_secret_eq(const char *a, const char *b);

/* Hands the heap freed since to the system (glibc's malloc_trim).  Called
 * after a symcache build: a large debug file's build allocates hundreds of
 * megabytes and frees them, but a thread's heap shrinks only down to its
 * highest block still in use, so a server kept some 200 MB of freed memory
 * resident for good after one 300 MB upload.  Costs a walk of the heaps:
 * for the rare builds only. */
void fl_release_heap(void);

/* Compare two application versions component by component: runs of digits
 * compare numerically ("1.10" > "1.9"), other runs byte-wise, a missing
 * component is smaller ("1.2" < "1.2.1").  NULL sorts first.  Returns <0, 0
 * or >0. */
int fl_vercmp(const char *a, const char *b);

/* Outcome of fl_gunzip. */
enum { FL_GZ_OK = 0, FL_GZ_BAD = -1, FL_GZ_TOO_BIG = -2, FL_GZ_NOMEM = -3, FL_GZ_RATIO = -4 };

/* Decode a gzip (or zlib) stream, refusing to produce more than max_out
 * bytes (FL_GZ_TOO_BIG) or more than max_ratio times the input size
 * (FL_GZ_RATIO: a gzip bomb; 0: no ratio).  On FL_GZ_OK *out (caller
 * frees, NUL-terminated) and *out_len are set. */
int fl_gunzip(const void *in, size_t in_len, size_t max_out, unsigned max_ratio, char **out,
              size_t *out_len);

/* zstd wrappers: *out is malloc'ed, caller frees.  Return 0 or -1.
 * fl_unzstd decodes one frame or several concatenated, and refuses input
 * announcing more than max_out bytes in all. */
int fl_zstd(const void *in, size_t len, int level, void **out, size_t *out_len);
int fl_unzstd(const void *in, size_t len, size_t max_out, char **out, size_t *out_len);

/* The raw logs of items[0..n) (total bytes in all), concatenated, as one
 * zstd frame at FL_RAW_ZSTD_LEVEL (fl_store.h), appended at *len to the
 * buffer *buf of *cap bytes, which grows as needed (the caller frees it).
 * The frame header records total, which fl_unzstd checks before
 * allocating.  Returns 0 or -1 (then *len is unchanged). */
struct fl_ingest_item;
int fl_raw_frame(struct fl_ingest_item *const *items, size_t n, size_t total, char **buf,
                 size_t *len, size_t *cap);

/* A JSON string of the n bytes at s, which need not be UTF-8 (a raw crash
 * log as received): the bytes as they are when they are, else a copy with
 * U+FFFD for each byte that starts no valid sequence -- JSON text holds
 * nothing else, and one such byte would fail the whole answer.  NULL on
 * OOM. */
struct json_t;
struct json_t *fl_json_text(const char *s, size_t n);

/* Wall-clock seconds and monotonic nanoseconds. */
int64_t fl_now(void);
uint64_t fl_mono_ns(void);
/* Timed waits that measure CLOCK_MONOTONIC.  A condition variable's
 * timed wait measures CLOCK_REALTIME unless told otherwise, and an
 * absolute wall-clock deadline moves with the clock: stepped back by two
 * hours (NTP after a suspend or a migration, a clock corrected by hand),
 * a wait of 500 ms in progress lasts two hours and 500 ms.  Every periodic
 * wait of the server -- workers polling the queue, the writer's probe and
 * sweep, checkpoints, the watched directory -- goes through these.
 * fl_cond_init_mono: pthread_cond_init's answer.  fl_cond_wait_ms: with mu
 * held, waits for cv at most ms milliseconds; 0 when signalled (or woken
 * spuriously), ETIMEDOUT when the time is up. */
int fl_cond_init_mono(pthread_cond_t *cv);
int fl_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms);
/* A background thread that wakes now and then until it is stopped (the
 * retention passes, the notification sender).  fl_ticker_start: 0, or an
 * errno (nothing to stop then).  fl_ticker_wait: on the ticker's thread,
 * sleeps up to ms (monotonic) or until stopped; false when it is to stop.
 * fl_ticker_stopping: whether it is, without waiting.  fl_ticker_stop:
 * tells it, joins it. */
typedef struct fl_ticker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
} fl_ticker;
int fl_ticker_start(fl_ticker *t, void *(*fn)(void *), void *arg, const char *name);
bool fl_ticker_wait(fl_ticker *t, uint64_t ms);
bool fl_ticker_stopping(fl_ticker *t);
void fl_ticker_stop(fl_ticker *t);
/* ---- The server's log.  Every line `serve` writes once its options are
 * accepted -- the banner on stdout, the log on stderr -- goes through
 * fl_log, so that an operator reading a file or `docker logs` can tell
 * when an outage began. */

/* serve --log-time: when lines start with a time stamp. */
enum { FL_LOG_TIME_AUTO, FL_LOG_TIME_ALWAYS, FL_LOG_TIME_NEVER };
/* "auto", "always" or "never" into *mode: 0, else -1. */
int fl_log_time_parse(const char *s, int *mode);
/* Whether fd is a stream into the systemd journal, which stamps each line
 * itself: JOURNAL_STREAM ("DEVICE:INODE", decimal; set by systemd for a
 * service whose stdout or stderr it connects to the journal) names fd's
 * file. */
bool fl_log_is_journal(int fd);
/* Decides, before any thread logs, whether lines to stdout and lines to
 * anything else (stderr, a FILE given to a part of the server) are
 * stamped: always, never, or (auto) unless that stream, stdout's for
 * stdout and stderr's for the rest, is the journal's.  Until called,
 * nothing is stamped. */
void fl_log_set_time(int mode);
/* Writes one line to f: "YYYY-MM-DDTHH:MM:SS.mmmZ " (UTC) when stamped,
 * then fmt's text with each line break or other control character made a
 * blank (one call, one line), then '\n'; one write(2) for a stream with a
 * descriptor, so that lines of threads and of processes sharing the file
 * do not interleave.  NULL f: nothing.  Errors are ignored: there is no
 * one to tell. */
void fl_log(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "YYYY-MM-DDTHH:MM:SSZ" (out >= 21 bytes) and "YYYY-MM-DD" (out >= 11). */
void fl_iso_time(int64_t t, char *out);
void fl_iso_day(int64_t t, char *out);

#endif
