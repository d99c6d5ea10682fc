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
 */
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

struct fl_notifier {
    fl_store *store;
    fl_metrics *m;
    FILE *log;
    char *url;
    CURL *curl;
    fl_ticker t;
    bool failing; /* the last send failed: said once, until one works */
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
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:o}", "event", t->kind, "text", text, "crash_id",
                          t->crash_id, "time", when, "group", g);
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

/* Send notice t, then forget it (sent, refused, too old) or set when to
 * try it again. */
static void send_one(fl_notifier *nf, fl_store_conn *c, const fl_notice *t)
{
    int64_t now = fl_now();
    if (now - t->created > NOTIFY_MAX_AGE_S) {
        FL_M_ADD(nf->m->notify_dropped, 1);
        if (nf->log)
            fprintf(nf->log,
                    "faultline serve: notify: %s of group %s dropped: not delivered for a day "
                    "(%u tries)\n",
                    t->kind, t->group_id, t->attempts - 1);
        nf->store->notice_done(c, t->id);
        return;
    }
    char *body = body_of(nf, c, t);
    if (!body) { /* the group is gone (or no memory): try later, dropped in a day */
        nf->store->notice_later(c, t->id, now + 60);
        return;
    }
    answer a;
    long retry_after = 0;
    char err[CURL_ERROR_SIZE + 64] = "";
    long status = post(nf, body, &a, &retry_after, err, sizeof err);
    free(body);
    if (status >= 200 && status < 300) {
        FL_M_ADD(nf->m->notify_sent, 1);
        if (nf->failing && nf->log)
            fprintf(nf->log, "faultline serve: notify: %s answers again\n", nf->url);
        nf->failing = false;
        nf->store->notice_done(c, t->id);
        return;
    }
    if ((status >= 300 && status < 400) ||
        (status >= 400 && status < 500 && status != 408 && status != 429)) {
        /* Refused (or sent elsewhere: --notify-url should name where):
         * sent again, it would be again. */
        FL_M_ADD(nf->m->notify_dropped, 1);
        if (nf->log)
            fprintf(nf->log, "faultline serve: notify: %s refused %s of group %s (HTTP %ld): %s\n",
                    nf->url, t->kind, t->group_id, status, a.text);
        nf->store->notice_done(c, t->id);
        return;
    }
    FL_M_ADD(nf->m->notify_failed, 1);
    int64_t wait = (int64_t)1 << (t->attempts < 12 ? t->attempts : 12);
    if (retry_after > 0)
        wait = retry_after;
    if (wait > NOTIFY_MAX_WAIT_S)
        wait = NOTIFY_MAX_WAIT_S;
    if (!nf->failing && nf->log) {
        if (status)
            snprintf(err, sizeof err, "HTTP %ld: %s", status, a.text);
        fprintf(nf->log,
                "faultline serve: notify: cannot send to %s (%s); trying again in %lld s, and "
                "saying nothing more until it works\n",
                nf->url, err, (long long)wait);
    }
    nf->failing = true;
    nf->store->notice_later(c, t->id, now + wait);
}

static void *notify_main(void *arg)
{
    fl_notifier *nf = arg;
    fl_store_conn *c = NULL;
    fl_notice t[NOTIFY_BATCH];
    while (fl_ticker_wait(&nf->t, 1000)) {
        size_t n = 0;
        if (!c && !(c = nf->store->connect(nf->store)))
            continue;
        if (nf->store->notices_claim(c, fl_now(), NOTIFY_LEASE_S,
                                     NOTIFY_MAX_WAIT_S + NOTIFY_LEASE_S, NOTIFY_BATCH, t, &n))
            continue; /* the store is failing: the workers say so */
        /* Stopping: the rest are leased, sent when the lease ends. */
        for (size_t i = 0; i < n && !fl_ticker_stopping(&nf->t); i++)
            send_one(nf, c, &t[i]);
    }
    if (c)
        nf->store->disconnect(c);
    return NULL;
}

fl_notifier *fl_notifier_start(fl_store *s, fl_metrics *m, const char *url, FILE *log, char *err,
                               size_t errlen)
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
    if (!nf || !(nf->url = strdup(url)) || !(nf->curl = curl_easy_init())) {
        if (nf)
            free(nf->url);
        free(nf);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    nf->store = s;
    nf->m = m;
    nf->log = log;
    int e = fl_ticker_start(&nf->t, notify_main, nf, "fl-notify");
    if (e) {
        snprintf(err, errlen, "cannot start the notification thread: %s", strerror(e));
        curl_easy_cleanup(nf->curl);
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
    free(nf->url);
    free(nf);
}
