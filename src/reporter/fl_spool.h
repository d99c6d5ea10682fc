/*
 * fl_spool.h - the reporter's view of the crash-log spool directory.
 *
 * The spool holds finished logs named "*.crashlog" (the client library
 * renames a log to that name only once it ends with END; its temporary
 * files and its "installation-id" have other names and are never touched
 * here).  Next to a log the reporter may keep:
 *
 *   NAME.crashlog.retry   retry state of a log that could not be delivered:
 *                         "attempts N\nnext UNIXTIME\nstatus HTTP\n"
 *   .reporter.lock        flock()ed while a reporter works on the spool
 *   rejected.log          one line per log deleted without delivery (garbage,
 *                         400, 413, declined), rotated to rejected.log.1
 *
 * All calls return 0 (or a count) on success and a negative errno on
 * failure; nothing prints.  Names are base names inside the spool; a name
 * with '/' is refused.  Not thread-safe per fl_spool.
 */
#ifndef FL_SPOOL_H
#define FL_SPOOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct fl_spool fl_spool;

/* Most logs one listing returns; the rest wait for the next run. */
#define FL_SPOOL_MAX_LOGS 10000
/* rejected.log is rotated when it grows past this. */
#define FL_SPOOL_NOTES_MAX (256 * 1024)
/* Exponential backoff without Retry-After: 30 s, 60 s, ... capped at 6 h. */
#define FL_SPOOL_BACKOFF_BASE 30
#define FL_SPOOL_BACKOFF_MAX (6 * 3600)

/* The default spool: $FAULTLINE_SPOOL, else $XDG_STATE_HOME/faultline, else
 * $HOME/.local/state/faultline.  Writes into out[cap]; -ENOENT when none of
 * the variables is set, -ENAMETOOLONG when it does not fit. */
int fl_spool_default_dir(char *out, size_t cap);

/* Open the spool directory (it must exist).  *out is freed with
 * fl_spool_close(), which also drops the lock. */
int fl_spool_open(const char *dir, fl_spool **out);
void fl_spool_close(fl_spool *sp); /* NULL is fine */

/* Take the spool's exclusive lock, waiting up to wait_ms milliseconds.
 * -EWOULDBLOCK when another process still holds it; -EALREADY at once
 * when another one is already waiting for it (it will list the spool
 * after the holder is done: nothing is left behind). */
int fl_spool_lock(fl_spool *sp, int wait_ms);

/* List "*.crashlog" names, sorted, at most FL_SPOOL_MAX_LOGS.  Also removes
 * retry files whose log is gone, and Faultline's temporary files older than
 * a day (their writers died before renaming them).  *names is freed with fl_spool_names_free.
 * Returns the count. */
int fl_spool_list(fl_spool *sp, char ***names);
void fl_spool_names_free(char **names, int n);

/* Read a log (regular file, not a symlink, at most FL_CRASHLOG_MAX_BYTES).
 * *data is malloc'ed (caller frees), NUL-terminated, *len excludes the NUL.
 * -ELOOP for a symlink, -EINVAL for a non-regular file (FIFO, device...),
 * -EFBIG when too large: all of these are not logs and may be deleted. */
int fl_spool_read(fl_spool *sp, const char *name, char **data, size_t *len);

/* Delete a log and its retry file. */
int fl_spool_remove(fl_spool *sp, const char *name);
/* Seconds since NAME was last written (0 for a time ahead of the clock),
 * or -errno. */
long long fl_spool_age(fl_spool *sp, const char *name);

typedef struct fl_retry_state {
    unsigned attempts; /* failed attempts so far */
    int64_t next;      /* unix time before which the log is not sent again */
    long status;       /* HTTP status of the last attempt, 0 for no answer */
} fl_retry_state;

/* Load a log's retry state: 0 and *st filled, or -ENOENT (never failed:
 * *st zeroed).  A damaged retry file reads as -ENOENT; one that is not a
 * regular file (never opened in a way that could block) as -EINVAL,
 * *st zeroed.  A file written at
 * a wall-clock time later than now (the clock was set back since: NTP
 * after a suspend, a corrected clock) has its wait counted from now, so
 * that a step back does not add itself to the wait. */
int fl_spool_retry_load(fl_spool *sp, const char *name, fl_retry_state *st);
/* Write it atomically (temp file + rename; a FIFO or symlink under the
 * temp file's name is removed, never opened). */
int fl_spool_retry_save(fl_spool *sp, const char *name, const fl_retry_state *st);

/* Seconds to wait after the attempts-th failure: the server's Retry-After
 * when given (>= 1), else the exponential backoff with up to 25% jitter. */
long fl_spool_backoff(unsigned attempts, long retry_after_s);

/* Append one line (a '\n' is added) to rejected.log, rotating it first when
 * it has grown past FL_SPOOL_NOTES_MAX.  -EINVAL when rejected.log is not a
 * regular file (a FIFO, a device: opened without blocking, not written),
 * -ELOOP for a symlink. */
int fl_spool_note(fl_spool *sp, const char *line);

#endif /* FL_SPOOL_H */
