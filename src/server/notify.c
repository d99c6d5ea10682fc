/*
 * notify.c - `serve --notify-url URL`: a new crash group, or a resolved one
 * that regressed, is POSTed to URL as JSON (a Slack- or Mattermost-style
 * incoming webhook shows its "text").
 *
 * The events are written by the workers into the store (fl_notice), in the
 * transaction that counts the crash, so none is lost to a server that dies
 * before sending it; this thread takes the due ones (the store leases them
 * so that the senders of several servers share them) and sends them one at
 * a time.  Delivery is at least once: a server killed between a 200 and
 * forgetting the notice sends it again.  A failed send (no connection, a
 * timeout, 5xx, 408, 429) is tried again after 2, 4, 8 ... seconds (an
 * hour at most; Retry-After when the receiver gives one); a refusal (any
 * other 4xx, or a redirect, which is not followed) is logged and dropped,
 * and so is an event not delivered for a day -- a notice that old is news
 * no longer.
 *
 * A storm (a bad release: hundreds of new groups in a minute) would be
 * hundreds of messages in a channel.  So at most --notify-digest N events
 * a period (a minute by default) go one by one; once a period has had N,
 * the events due wait for its end and go together as one digest -- counts
 * by kind and application, the largest groups by name and id -- which
 * takes the next period for itself: one message a period while the storm
 * lasts.  A period begins with the first message after a quiet one.  It
 * is this sender's, not the cluster's: servers sharing a PostgreSQL
 * database each send their N.  A digest is sent and retried like one
 * event, and its events are forgotten together after its 2xx.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fl_serve.h"
#include "fl_srvutil.h"

#define NOTIFY_BATCH 16
#define NOTIFY_TIMEOUT_S 10
#define NOTIFY_LEASE_S (NOTIFY_BATCH * NOTIFY_TIMEOUT_S + 60)
#define NOTIFY_MAX_WAIT_S 3600
#define NOTIFY_MAX_AGE_S 86400
#define DIGEST_MAX 1000 /* events in one digest; more wait for the next */
#define DIGEST_TOP 5    /* groups a digest names, the largest first */
#define DIGEST_APPS 10  /* applications its text names */

struct fl_notifier {
    fl_store *store;
    fl_metrics *m;
    FILE *log;
    char *url;
    CURL *curl;
    fl_ticker t;
    bool failing; /* the last send failed: said once, until one works */
    unsigned digest_n; /* events sent one by one a period; 0: no digests */
    unsigned period_s;
    uint64_t period_end; /* fl_mono_ns(); 0: no period running */
    unsigned left;       /* events the running period may still send one by one */
    fl_notice *pile;     /* DIGEST_MAX notices, for a digest */
};

/* The answer's first bytes, for the log. */
typedef struct answer {
    char text[256];
    size_t len;
} answer;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    answer *a = arg;
    size_t k = size * n, room = sizeof a->text - 1 - a->len;
    memcpy(a->text + a->len, p, k < room ? k : room);
    a->len += k < room ? k : room;
    a->text[a->len] = '\0';
    return k;
}

/* The "text" line as Slack reads it: '&', '<' and '>' escaped, as its
 * message format asks.  Names come from crash logs, which anyone with
 * the ingest key writes: an application named "<!channel>" would
 * otherwise notify a whole channel, and "<https://x|y>" show a link.
 * The JSON's other fields keep the names as they are.  Caller frees;
 * NULL on OOM. */
static char *slack_text(const char *in)
{
    size_t n = 0;
    for (const char *p = in; *p; p++)
        n += *p == '&' ? 5 : *p == '<' || *p == '>' ? 4 : 1;
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = in; *p; p++) {
        const char *e = *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : NULL;
        if (e)
            o = stpcpy(o, e);
        else
            *o++ = *p;
    }
    *o = '\0';
    return out;
}

/* What is POSTed for notice t: the event, a line of text and the group as
 * GET /api/v1/groups lists it.  NULL when the group is gone (or on OOM). */
static char *body_of(fl_notifier *nf, fl_store_conn *c, const fl_notice *t)
{
    bool gone = false;
    json_t *g = nf->store->get_group(c, t->group_id, &gone);
    if (!g)
        return NULL;
    /* The list's fields only: the days, breakdowns and frames are the
     * API's to give. */
    static const char *const drop[] = {"days", "versions", "os", "frames", "sample_crashes"};
    for (size_t i = 0; i < sizeof drop / sizeof *drop; i++)
        json_object_del(g, drop[i]);
    const char *app = json_string_value(json_object_get(g, "app"));
    const char *sig = json_string_value(json_object_get(g, "signature"));
    const char *proj = json_string_value(json_object_get(g, "project"));
    const char *ri = json_string_value(json_object_get(g, "resolved_in"));
    const char *lv = json_string_value(json_object_get(g, "latest_version"));
    char text[1024];
    bool other = proj && strcmp(proj, FL_PROJECT_DEFAULT);
    if (!strcmp(t->kind, FL_NOTICE_REGRESSED))
        snprintf(text, sizeof text,
                 "Crash group regressed in %s%s%s%s (resolved in %s, latest %s): %s",
                 app ? app : "(no application)", other ? " (project " : "", other ? proj : "",
                 other ? ")" : "", ri ? ri : "no version", lv ? lv : "unknown", sig ? sig : "");
    else
        snprintf(text, sizeof text, "New crash group in %s%s%s%s: %s",
                 app ? app : "(no application)", other ? " (project " : "", other ? proj : "",
                 other ? ")" : "", sig ? sig : "");
    char when[32];
    fl_iso_time(t->created, when);
    char *st = slack_text(text);
    json_t *j = st ? json_pack("{s:s,s:s,s:s,s:s,s:o}", "event", t->kind, "text", st, "crash_id",
                               t->crash_id, "time", when, "group", g)
                   : NULL;
    if (!st)
        json_decref(g);
    free(st);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

/* POST body: the HTTP status, 0 when none came (why in err). */
static long post(fl_notifier *nf, const char *body, answer *a, long *retry_after, char *err,
                 size_t errlen)
{
    CURL *h = nf->curl;
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    a->len = 0;
    a->text[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, nf->url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)NOTIFY_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "faultline/0.1.0");
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(hd);
    long status = 0;
    *retry_after = 0;
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s", curl_easy_strerror(rc));
        return 0;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_off_t ra = 0;
    if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        *retry_after = (long)ra;
    return status;
}

/* What came of a POST. */
typedef enum { DELIVERED, REFUSED, FAILED } outcome;

/* POST body (what: how the log names it) and say what came of it; when it
 * FAILED, *wait is when to try again: after 2^attempts seconds, or the
 * receiver's Retry-After, an hour at most. */
static outcome deliver(fl_notifier *nf, const char *body, unsigned attempts, const char *what,
                       int64_t *wait)
{
    answer a;
    long retry_after = 0;
    char err[CURL_ERROR_SIZE + 64] = "";
    long status = post(nf, body, &a, &retry_after, err, sizeof err);
    if (status >= 200 && status < 300) {
        if (nf->failing && nf->log)
            fl_log(nf->log, "faultline serve: notify: %s answers again", nf->url);
        nf->failing = false;
        return DELIVERED;
    }
    if ((status >= 300 && status < 400) ||
        (status >= 400 && status < 500 && status != 408 && status != 429)) {
        /* Refused (or sent elsewhere: --notify-url should name where):
         * sent again, it would be again. */
        if (nf->log)
            fl_log(nf->log, "faultline serve: notify: %s refused %s (HTTP %ld): %s", nf->url, what,
                   status, a.text);
        return REFUSED;
    }
    *wait = (int64_t)1 << (attempts < 12 ? attempts : 12);
    if (retry_after > 0)
        *wait = retry_after;
    if (*wait > NOTIFY_MAX_WAIT_S)
        *wait = NOTIFY_MAX_WAIT_S;
    if (!nf->failing && nf->log) {
        if (status)
            snprintf(err, sizeof err, "HTTP %ld: %s", status, a.text);
        fl_log(nf->log,
               "faultline serve: notify: cannot send to %s (%s); trying again in %lld s, and "
               "saying nothing more until it works",
               nf->url, err, (long long)*wait);
    }
    nf->failing = true;
    return FAILED;
}

/* Notice t, not delivered for a day, is dropped (true). */
static bool too_old(fl_notifier *nf, fl_store_conn *c, const fl_notice *t, int64_t now)
{
    if (now - t->created <= NOTIFY_MAX_AGE_S)
        return false;
    FL_M_ADD(nf->m->notify_dropped, 1);
    if (nf->log)
        fl_log(nf->log,
               "faultline serve: notify: %s of group %s dropped: not delivered for a day "
               "(%u tries)",
               t->kind, t->group_id, t->attempts - 1);
    nf->store->notice_done(c, t->id);
    return true;
}

/* Send notice t, then forget it (sent, refused, too old) or set when to
 * try it again. */
static void send_one(fl_notifier *nf, fl_store_conn *c, const fl_notice *t)
{
    int64_t now = fl_now();
    if (too_old(nf, c, t, now))
        return;
    char *body = body_of(nf, c, t);
    if (!body) { /* the group is gone (or no memory): try later, dropped in a day */
        nf->store->notice_later(c, t->id, now + 60);
        return;
    }
    char what[128];
    snprintf(what, sizeof what, "%s of group %s", t->kind, t->group_id);
    int64_t wait = 0;
    outcome o = deliver(nf, body, t->attempts, what, &wait);
    free(body);
    if (o == FAILED) {
        FL_M_ADD(nf->m->notify_failed, 1);
        nf->store->notice_later(c, t->id, now + wait);
        return;
    }
    FL_M_ADD(*(o == DELIVERED ? &nf->m->notify_sent : &nf->m->notify_dropped), 1);
    nf->store->notice_done(c, t->id);
}

/* ---- digests */

/* s, or its first max bytes cut at a character's start, into out. */
static const char *clip(const char *s, size_t max, char *out, size_t cap)
{
    size_t n = s ? strlen(s) : 0;
    if (n <= max)
        return s ? s : "";
    while (max && ((unsigned char)s[max] & 0xc0) == 0x80)
        max--;
    snprintf(out, cap, "%.*s...", (int)max, s);
    return out;
}

/* printf onto text[*len..cap), silently cut at cap. */
static void cat(char *text, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void cat(char *text, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(text + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (k > 0)
        *len = *len + (size_t)k < cap ? *len + (size_t)k : cap - 1;
}

static json_int_t events_of(json_t *app)
{
    return json_integer_value(json_object_get(app, FL_NOTICE_NEW_GROUP)) +
           json_integer_value(json_object_get(app, FL_NOTICE_REGRESSED));
}

static int by_events(const void *a, const void *b)
{
    json_int_t x = events_of(*(json_t *const *)a), y = events_of(*(json_t *const *)b);
    return x > y ? -1 : x < y;
}

typedef struct top {
    json_t *group;
    const fl_notice *t;
    json_int_t count;
} top;

/* What is POSTed for the n notices t (n > 1, claimed together): counts by
 * kind and by application, the DIGEST_TOP largest groups, and a text that
 * says it all in a few lines.  NULL when the store fails (or on OOM). */
static char *digest_of(fl_notifier *nf, fl_store_conn *c, const fl_notice *t, size_t n)
{
    json_t *apps = json_object(), *list = NULL, *groups = json_array();
    top tops[DIGEST_TOP] = {{0}};
    size_t ntop = 0, kinds[2] = {0, 0};
    int64_t first = t[0].created;
    char *out = NULL;
    if (!apps || !groups)
        goto done;
    for (size_t i = 0; i < n; i++) {
        bool gone = false, regressed = !strcmp(t[i].kind, FL_NOTICE_REGRESSED);
        json_t *g = nf->store->get_group(c, t[i].group_id, &gone);
        if (!g && !gone)
            goto done;
        kinds[regressed]++;
        if (t[i].created < first)
            first = t[i].created;
        /* A group gone since counts, under no application. */
        const char *proj = json_string_value(json_object_get(g, "project"));
        const char *app = json_string_value(json_object_get(g, "app"));
        /* Never written out, so a cut in a character does no harm
         * (nocheck); two names alike over 1000 bytes count as one. */
        char key[FL_PROJECT_MAX + 1024];
        snprintf(key, sizeof key, "%s\x1f%s", proj ? proj : "", app ? app : "");
        json_t *a = json_object_get(apps, key);
        if (!a) {
            a = json_pack("{s:s?,s:s?,s:i,s:i}", "project", proj, "app", app, FL_NOTICE_NEW_GROUP,
                          0, FL_NOTICE_REGRESSED, 0);
            if (!a || json_object_set_new_nocheck(apps, key, a)) {
                json_decref(g);
                goto done;
            }
        }
        const char *kind = regressed ? FL_NOTICE_REGRESSED : FL_NOTICE_NEW_GROUP;
        json_object_set_new(a, kind,
                            json_integer(json_integer_value(json_object_get(a, kind)) + 1));
        if (!g)
            continue;
        /* Among the largest?  Kept in order, the largest first. */
        json_int_t cnt = json_integer_value(json_object_get(g, "count"));
        size_t at = ntop;
        while (at && tops[at - 1].count < cnt)
            at--;
        if (at == DIGEST_TOP) {
            json_decref(g);
            continue;
        }
        if (ntop == DIGEST_TOP)
            json_decref(tops[--ntop].group);
        memmove(&tops[at + 1], &tops[at], (ntop - at) * sizeof *tops);
        tops[at] = (top){g, &t[i], cnt};
        ntop++;
    }

    /* The applications, those with the most events first. */
    size_t na = json_object_size(apps), k = 0;
    json_t **av = calloc(na ? na : 1, sizeof *av);
    if (!av || !(list = json_array())) {
        free(av);
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(apps, key, v) av[k++] = v;
    qsort(av, na, sizeof *av, by_events);

    char text[4096], when[32], cut[160], cut2[160];
    size_t len = 0;
    fl_iso_time(first, when);
    cat(text, sizeof text, &len, "Digest of %zu crash events since %s: %zu new crash group%s", n,
        when, kinds[0], kinds[0] == 1 ? "" : "s");
    if (kinds[1])
        cat(text, sizeof text, &len, ", %zu regression%s", kinds[1], kinds[1] == 1 ? "" : "s");
    cat(text, sizeof text, &len, ".");
    for (size_t i = 0; i < na; i++) {
        json_array_append(list, av[i]);
        if (i >= DIGEST_APPS)
            continue;
        const char *app = json_string_value(json_object_get(av[i], "app"));
        const char *proj = json_string_value(json_object_get(av[i], "project"));
        json_int_t nn = json_integer_value(json_object_get(av[i], FL_NOTICE_NEW_GROUP));
        json_int_t nr = json_integer_value(json_object_get(av[i], FL_NOTICE_REGRESSED));
        bool other = proj && strcmp(proj, FL_PROJECT_DEFAULT);
        cat(text, sizeof text, &len, "%s %s%s%s%s:", i ? ";" : "",
            app ? clip(app, 60, cut, sizeof cut) : "(no application)", other ? " (project " : "",
            other ? clip(proj, 60, cut2, sizeof cut2) : "", other ? ")" : "");
        if (nn)
            cat(text, sizeof text, &len, " %lld new", (long long)nn);
        if (nr)
            cat(text, sizeof text, &len, "%s %lld regressed", nn ? "," : "", (long long)nr);
    }
    if (na > DIGEST_APPS)
        cat(text, sizeof text, &len, "; and %zu more applications", na - DIGEST_APPS);
    cat(text, sizeof text, &len, ".");
    for (size_t i = 0; i < ntop; i++) {
        json_t *g = tops[i].group;
        const char *sig = json_string_value(json_object_get(g, "signature"));
        const char *app = json_string_value(json_object_get(g, "app"));
        json_int_t cnt = tops[i].count;
        cat(text, sizeof text, &len, "%s %s in %s (%lld crash%s, group %s%s)",
            i ? ";" : " Largest:", clip(sig, 120, cut, sizeof cut),
            app ? clip(app, 60, cut2, sizeof cut2) : "(no application)", (long long)cnt,
            cnt == 1 ? "" : "es", tops[i].t->group_id,
            strcmp(tops[i].t->kind, FL_NOTICE_REGRESSED) ? "" : ", regressed");
    }
    if (ntop && n > ntop)
        cat(text, sizeof text, &len, "; and %zu more events.", n - ntop);
    else if (ntop)
        cat(text, sizeof text, &len, ".");
    free(av);

    for (size_t i = 0; i < ntop; i++) {
        static const char *const drop[] = {"days", "versions", "os", "frames", "sample_crashes"};
        for (size_t d = 0; d < sizeof drop / sizeof *drop; d++)
            json_object_del(tops[i].group, drop[d]);
        json_array_append_new(groups,
                              json_pack("{s:s,s:s,s:O}", "event", tops[i].t->kind, "crash_id",
                                        tops[i].t->crash_id, "group", tops[i].group));
    }
    char now[32];
    fl_iso_time(fl_now(), now);
    char *st = slack_text(text);
    json_t *j =
        !st ? NULL
            : json_pack("{s:s,s:s,s:s,s:s,s:I,s:{s:I,s:I},s:O,s:O}", "event", "digest", "text", st,
                        "time", now, "since", when, "events", (json_int_t)n, "counts",
                        FL_NOTICE_NEW_GROUP, (json_int_t)kinds[0], FL_NOTICE_REGRESSED,
                        (json_int_t)kinds[1], "apps", list, "groups", groups);
    free(st);
    out = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
done:
    for (size_t i = 0; i < ntop; i++)
        json_decref(tops[i].group);
    json_decref(apps);
    json_decref(list);
    json_decref(groups);
    return out;
}

/* Send the n notices t (claimed together, after a period that had its
 * fill) as one digest, or the one left after those a day old are dropped
 * as itself.  Returns when to try again when the receiver failed (seconds;
 * 0 otherwise). */
static int64_t send_digest(fl_notifier *nf, fl_store_conn *c, fl_notice *t, size_t n)
{
    int64_t now = fl_now(), wait = 0;
    size_t k = 0;
    unsigned attempts = 0;
    for (size_t i = 0; i < n; i++)
        if (!too_old(nf, c, &t[i], now)) {
            if (t[i].attempts > attempts)
                attempts = t[i].attempts;
            t[k++] = t[i];
        }
    if (k <= 1) {
        if (k)
            send_one(nf, c, &t[0]);
        return 0;
    }
    char *body = digest_of(nf, c, t, k);
    if (!body) { /* the store failed (or no memory): all of them later */
        for (size_t i = 0; i < k; i++)
            nf->store->notice_later(c, t[i].id, now + 60);
        return 0;
    }
    char what[64];
    snprintf(what, sizeof what, "a digest of %zu events", k);
    outcome o = deliver(nf, body, attempts, what, &wait);
    free(body);
    if (o == FAILED) {
        FL_M_ADD(nf->m->notify_failed, k);
        FL_M_ADD(nf->m->notify_digests_failed, 1);
        for (size_t i = 0; i < k; i++)
            nf->store->notice_later(c, t[i].id, now + wait);
        return wait;
    }
    FL_M_ADD(*(o == DELIVERED ? &nf->m->notify_sent : &nf->m->notify_dropped), k);
    FL_M_ADD(*(o == DELIVERED ? &nf->m->notify_digests_sent : &nf->m->notify_digests_dropped), 1);
    for (size_t i = 0; i < k; i++)
        nf->store->notice_done(c, t[i].id);
    return 0;
}

/* One pass: the due notices, one by one while the period allows, else
 * together at its end. */
static void notify_pass(fl_notifier *nf, fl_store_conn *c)
{
    fl_store *s = nf->store;
    size_t n = 0;
    uint64_t mono = fl_mono_ns();
    bool spent = false; /* a period that had its fill ended: events may have waited */
    if (nf->period_end && mono >= nf->period_end) {
        spent = !nf->left;
        nf->period_end = 0;
    }
    if (nf->digest_n && nf->period_end && !nf->left)
        return; /* the events due wait for the period's end */
    size_t max = NOTIFY_BATCH;
    if (nf->digest_n) {
        size_t room = nf->period_end ? nf->left : nf->digest_n;
        max = spent ? DIGEST_MAX : room < NOTIFY_BATCH ? room : NOTIFY_BATCH;
    }
    if (s->notices_claim(c, fl_now(), NOTIFY_LEASE_S, NOTIFY_MAX_WAIT_S + NOTIFY_LEASE_S, max,
                         nf->pile, &n) ||
        !n)
        return; /* (failing: the workers say so) */
    if (nf->digest_n && !nf->period_end) {
        nf->period_end = mono + (uint64_t)nf->period_s * 1000000000u;
        nf->left = nf->digest_n;
    }
    if (spent && n > 1) {
        /* The digest takes the new period for itself; a receiver that
         * failed has it again when the wait is over. */
        int64_t wait = send_digest(nf, c, nf->pile, n);
        nf->left = 0;
        if (wait)
            nf->period_end = fl_mono_ns() + (uint64_t)wait * 1000000000u;
        return;
    }
    /* Stopping: the rest are leased, sent when the lease ends. */
    for (size_t i = 0; i < n && !fl_ticker_stopping(&nf->t); i++) {
        send_one(nf, c, &nf->pile[i]);
        if (nf->left)
            nf->left--;
    }
}

static void *notify_main(void *arg)
{
    fl_notifier *nf = arg;
    fl_store_conn *c = NULL;
    while (fl_ticker_wait(&nf->t, 1000)) {
        if (!c && !(c = nf->store->connect(nf->store)))
            continue;
        notify_pass(nf, c);
    }
    if (c)
        nf->store->disconnect(c);
    return NULL;
}

fl_notifier *fl_notifier_start(fl_store *s, fl_metrics *m, const char *url, unsigned digest_n,
                               unsigned period_s, FILE *log, char *err, size_t errlen)
{
    if (!s->notices_claim) {
        snprintf(err, errlen, "the %s store keeps no notifications", s->engine);
        return NULL;
    }
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
        snprintf(err, errlen, "--notify-url wants an http:// or https:// URL, not '%s'", url);
        return NULL;
    }
    /* Before any other thread of ours uses curl (it is not thread-safe). */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return NULL;
    }
    fl_notifier *nf = calloc(1, sizeof *nf);
    if (!nf || !(nf->url = strdup(url)) || !(nf->curl = curl_easy_init()) ||
        !(nf->pile = calloc(digest_n ? DIGEST_MAX : NOTIFY_BATCH, sizeof *nf->pile))) {
        if (nf) {
            if (nf->curl)
                curl_easy_cleanup(nf->curl);
            free(nf->url);
        }
        free(nf);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    nf->store = s;
    nf->m = m;
    nf->log = log;
    nf->digest_n = digest_n;
    nf->period_s = period_s ? period_s : 1;
    int e = fl_ticker_start(&nf->t, notify_main, nf, "fl-notify");
    if (e) {
        snprintf(err, errlen, "cannot start the notification thread: %s", strerror(e));
        curl_easy_cleanup(nf->curl);
        free(nf->pile);
        free(nf->url);
        free(nf);
        return NULL;
    }
    return nf;
}

void fl_notifier_stop(fl_notifier *nf)
{
    if (!nf)
        return;
    fl_ticker_stop(&nf->t);
    curl_easy_cleanup(nf->curl);
    free(nf->pile);
    free(nf->url);
    free(nf);
}
