/*
 * health.c - does the store take writes?  See fl_health.h.
 */
#include <string.h>

#include "fl_health.h"
#include "fl_srvutil.h"

static const char *const NAMES[FL_HEALTH_COUNT] = {"ingest", "processing"};

/* What the server does meanwhile, said once, with the first failure. */
static const char *const MEANWHILE[FL_HEALTH_COUNT] = {
    "reports are answered 503 (clients keep them and retry) until a commit succeeds",
    "the crashes stay queued and are retried",
};

const char *fl_health_path_name(int path)
{
    return path >= 0 && path < FL_HEALTH_COUNT ? NAMES[path] : "?";
}

void fl_health_init(fl_health *h, FILE *log)
{
    memset(h, 0, sizeof *h);
    for (int i = 0; i < FL_HEALTH_COUNT; i++)
        pthread_mutex_init(&h->path[i].mu, NULL);
    h->log = log;
}

void fl_health_destroy(fl_health *h)
{
    for (int i = 0; i < FL_HEALTH_COUNT; i++)
        pthread_mutex_destroy(&h->path[i].mu);
}

/* May path p log a line now, gap_s after its last one?  mu held. */
static bool may_log(const fl_health *h, const fl_health_path *p, uint64_t now, unsigned gap_s)
{
    return h->log && (!p->logged_ns || now - p->logged_ns >= (uint64_t)gap_s * 1000000000u);
}

/*
 * The lines of a path:
 *   - an episode's first failure, at least 1 s after the path's last line
 *     (else the episode goes unsaid, and its failures are counted in the
 *     next line);
 *   - while a said episode lasts, its count every FL_HEALTH_LOG_S;
 *   - its end, at once.
 * So a store that fails and recovers by turns logs two lines a second at
 * most, and the log never ends on "failed" once the store works again.
 */
/* why into out on one line: libpq's messages run over several
 * ("connection refused\n\tIs the server running...\n"), which made one
 * event several lines of the log and put control characters into
 * /healthz.  Each run of line breaks, tabs and blanks becomes one blank;
 * none at the ends. */
static void one_line(char *out, size_t cap, const char *why)
{
    size_t o = 0;
    bool blank = false;
    for (; *why && o + 1 < cap; why++) {
        if (*why == '\n' || *why == '\r' || *why == '\t' || *why == ' ') {
            blank = o > 0;
            continue;
        }
        if (blank && o + 2 < cap)
            out[o++] = ' ';
        blank = false;
        out[o++] = *why;
    }
    out[o] = '\0';
}

void fl_health_fail(fl_health *h, int path, const char *why)
{
    if (!h || path < 0 || path >= FL_HEALTH_COUNT)
        return;
    fl_health_path *p = &h->path[path];
    uint64_t now = fl_mono_ns();
    pthread_mutex_lock(&p->mu);
    p->failures++;
    p->unlogged++;
    one_line(p->why, sizeof p->why, why && *why ? why : "unknown error");
    if (p->state == FL_HEALTH_OK) {
        p->since = fl_now();
        p->since_ns = now;
        p->run = 0;
        p->announced = false;
        __atomic_store_n(&p->state, FL_HEALTH_FAILING, __ATOMIC_RELEASE);
    }
    p->run++;
    bool line = false;
    if (!p->announced && may_log(h, p, now, 1)) {
        if (p->unlogged > p->run)
            fl_log(h->log,
                   "faultline serve: storage: %s failed: %s; %s (%llu failures since the "
                   "last line)",
                   NAMES[path], p->why, MEANWHILE[path], (unsigned long long)p->unlogged);
        else
            fl_log(h->log, "faultline serve: storage: %s failed: %s; %s", NAMES[path], p->why,
                   MEANWHILE[path]);
        p->announced = line = true;
    } else if (p->announced && may_log(h, p, now, FL_HEALTH_LOG_S)) {
        fl_log(h->log, "faultline serve: storage: %s: %llu more failure%s in %.0f s (%s)",
               NAMES[path], (unsigned long long)p->unlogged, p->unlogged == 1 ? "" : "s",
               (now - p->logged_ns) / 1e9, p->why);
        line = true;
    }
    if (line) {
        p->unlogged = 0;
        p->logged_ns = now;
    }
    pthread_mutex_unlock(&p->mu);
}

void fl_health_ok(fl_health *h, int path)
{
    if (!h || path < 0 || path >= FL_HEALTH_COUNT)
        return;
    fl_health_path *p = &h->path[path];
    if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == FL_HEALTH_OK)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->state == FL_HEALTH_FAILING) {
        if (p->announced && h->log) {
            fl_log(h->log,
                   "faultline serve: storage: %s works again (after %llu failure%s over %.0f s)",
                   NAMES[path], (unsigned long long)p->run, p->run == 1 ? "" : "s",
                   (fl_mono_ns() - p->since_ns) / 1e9);
            p->unlogged = 0;
            p->logged_ns = fl_mono_ns();
        }
        p->run = 0;
        p->announced = false;
        __atomic_store_n(&p->state, FL_HEALTH_OK, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&p->mu);
}

void fl_health_get(fl_health *h, int path, fl_health_state *out)
{
    memset(out, 0, sizeof *out);
    if (!h || path < 0 || path >= FL_HEALTH_COUNT)
        return;
    fl_health_path *p = &h->path[path];
    pthread_mutex_lock(&p->mu);
    out->failing = p->state == FL_HEALTH_FAILING;
    out->failures = p->failures;
    out->run = p->run;
    out->since = p->since;
    memcpy(out->why, p->why, sizeof out->why);
    pthread_mutex_unlock(&p->mu);
}
