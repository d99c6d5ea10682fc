/*
 * fl_health.h - does the store take writes?
 *
 * The writer (ingest) and the workers (processing) report the outcome of
 * each transaction.  A failure (a full disk, a read-only or broken
 * database) is logged at once, then its count every FL_HEALTH_LOG_S seconds
 * while it lasts, then its end (health.c says exactly when).  A store that
 * fails and recovers by turns (a nearly full disk) logs two lines a second
 * at most, not two per commit.  An operator sees why reports are answered
 * 503 without a line per request.  /healthz and /metrics read the state.
 * Thread-safe; the success path, taken after every commit, is one atomic
 * load.
 */
#ifndef FL_HEALTH_H
#define FL_HEALTH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { FL_HEALTH_INGEST, FL_HEALTH_PROCESSING, FL_HEALTH_COUNT };

#define FL_HEALTH_LOG_S 10

/* fl_health_path.state */
enum { FL_HEALTH_OK, FL_HEALTH_FAILING };

typedef struct fl_health_path {
    pthread_mutex_t mu;
    int state;          /* FL_HEALTH_OK/FAILING, read without mu */
    bool announced;     /* this episode's first line is out */
    uint64_t failures;  /* ever, for /metrics */
    uint64_t run;       /* failures in this episode */
    uint64_t unlogged;  /* failures since the last line */
    int64_t since;      /* wall time of the episode's first failure (shown) */
    uint64_t since_ns;  /* monotonic time of it (its length: a step of the
                         * wall clock would make that hours, or negative) */
    uint64_t logged_ns; /* monotonic time of the last line, 0: none */
    char why[512];      /* the last failure's reason, on one line */
} fl_health_path;

typedef struct fl_health {
    fl_health_path path[FL_HEALTH_COUNT];
    FILE *log; /* NULL: do not log */
} fl_health;

void fl_health_init(fl_health *h, FILE *log);
void fl_health_destroy(fl_health *h);
/* A transaction of `path` failed, for `why` (the store's message). */
void fl_health_fail(fl_health *h, int path, const char *why);
/* A transaction of `path` committed. */
void fl_health_ok(fl_health *h, int path);

typedef struct fl_health_state {
    bool failing;      /* the last transaction failed */
    uint64_t failures; /* ever */
    uint64_t run;      /* in this episode */
    int64_t since;     /* wall time of the episode's first failure */
    char why[512];
} fl_health_state;

void fl_health_get(fl_health *h, int path, fl_health_state *out);
/* "ingest" or "processing". */
const char *fl_health_path_name(int path);

#endif
