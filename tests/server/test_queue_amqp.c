/*
 * test_queue_amqp.c - the RabbitMQ queue engine against a real broker.
 *
 * Run by queue_amqp_test.sh, which starts a private broker and passes its
 * URL in FL_TEST_AMQP_URL and a command restarting it in
 * FL_TEST_AMQP_RESTART.  Every test starts from an empty queue (purged
 * through a connection of its own).  cmocka's asserts only work on the
 * main thread: other threads record what they saw, the main thread checks.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include "fl_queue.h"

#define QNAME "faultline.tasks"

static const char *url;
static int port;

static fl_queue *qnew_query(const char *query)
{
    char err[512], u[512];
    snprintf(u, sizeof u, "%s%s", url, query);
    fl_queue *q = fl_queue_amqp_new(u, err, sizeof err);
    if (!q)
        fail_msg("fl_queue_amqp_new: %s", err);
    return q;
}

static fl_queue *qnew(void)
{
    return qnew_query("");
}

/* ---- a connection of the test's own, to look behind the engine */

static amqp_connection_state_t raw_open(void)
{
    char *u = strdup(url);
    struct amqp_connection_info ci;
    assert_int_equal(amqp_parse_url(u, &ci), AMQP_STATUS_OK);
    amqp_connection_state_t st = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(st);
    assert_int_equal(amqp_socket_open(s, ci.host, ci.port), AMQP_STATUS_OK);
    amqp_rpc_reply_t r =
        amqp_login(st, ci.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, ci.user, ci.password);
    assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
    amqp_channel_open(st, 1);
    assert_int_equal(amqp_get_rpc_reply(st).reply_type, AMQP_RESPONSE_NORMAL);
    free(u);
    return st;
}

static void raw_close(amqp_connection_state_t st)
{
    amqp_channel_close(st, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(st, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(st);
}

static void purge(void)
{
    amqp_connection_state_t st = raw_open();
    amqp_queue_declare(st, 1, amqp_cstring_bytes(QNAME), 0, 1, 0, 0, amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(st).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_queue_purge(st, 1, amqp_cstring_bytes(QNAME));
    assert_int_equal(amqp_get_rpc_reply(st).reply_type, AMQP_RESPONSE_NORMAL);
    raw_close(st);
}

/* Publish bodies the engine never would. */
static void raw_publish(const char *const *bodies, size_t n)
{
    amqp_connection_state_t st = raw_open();
    amqp_basic_properties_t p = {._flags = AMQP_BASIC_DELIVERY_MODE_FLAG, .delivery_mode = 2};
    for (size_t i = 0; i < n; i++)
        assert_int_equal(amqp_basic_publish(st, 1, amqp_empty_bytes, amqp_cstring_bytes(QNAME), 0,
                                            0, &p, amqp_cstring_bytes(bodies[i])),
                         AMQP_STATUS_OK);
    raw_close(st);
}

/* ---- helpers */

static size_t claim(fl_queue *q, unsigned lease_s, size_t max, fl_task *out)
{
    size_t n = 99999;
    int rc = q->claim(q, NULL, lease_s, max, out, &n);
    if (rc)
        fail_msg("claim: %s", q->error(q) ? q->error(q) : "?");
    assert_true(n <= max);
    return n;
}

/* Claim (waiting up to 5 s in all, leasing for lease_s) until want entries came; acks each
 * claim's entries before the next unless keep. */
static size_t claim_until(fl_queue *q, unsigned lease_s, size_t want, fl_task *out, size_t cap,
                          bool keep)
{
    size_t got = 0;
    for (int i = 0; i < 25 && got < want; i++) {
        assert_true(cap - got >= FL_QUEUE_BATCH_MAX);
        size_t n = claim(q, lease_s, cap - got, out + got);
        if (!keep)
            for (size_t k = got; k < got + n; k++)
                assert_int_equal(q->ack(q, NULL, &out[k]), 0);
        got += n;
    }
    return got;
}

static void make_ids(char (*buf)[FL_CRASH_ID_MAX], const char **ids, size_t n, const char *pfx)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(buf[i], FL_CRASH_ID_MAX, "%s-%03zu", pfx, i);
        ids[i] = buf[i];
    }
}

/* Entries make whole messages: `last` on each message's final entry, the
 * same id within a message, a new one after it. */
static void assert_whole(const fl_task *t, size_t n)
{
    if (n)
        assert_true(t[n - 1].last);
    for (size_t i = 0; i + 1 < n; i++)
        assert_true(t[i].last ? t[i + 1].id != t[i].id : t[i + 1].id == t[i].id);
}

static void *empty_claim_thread(void *arg)
{
    fl_queue *q = arg;
    fl_task t[16];
    size_t n = 99;
    int rc = q->claim(q, NULL, 60, 16, t, &n);
    return (void *)(intptr_t)(rc ? -1 : (intptr_t)n);
}

/* ---- the tests */

static void test_bad_urls(void **state)
{
    (void)state;
    char err[512], u[256];
    assert_null(fl_queue_amqp_new("http://example.com/", err, sizeof err));
    assert_non_null(strstr(err, "URL"));
    /* A '/' at the end names the vhost "": said, with the way to the
     * default one, before any broker is asked. */
    assert_null(fl_queue_amqp_new("amqp://u:p@127.0.0.1:1/", err, sizeof err));
    assert_non_null(strstr(err, "empty vhost"));
    assert_non_null(strstr(err, "%2f"));
    /* The same checks without a broker (serve's argument checks): a port
     * that is no number or out of range, and no password echoed. */
    assert_int_equal(fl_queue_amqp_check_url("amqp://u:s3cret@h:notaport/x", err, sizeof err), -1);
    assert_non_null(strstr(err, "not an AMQP URL"));
    assert_null(strstr(err, "s3cret"));
    assert_int_equal(fl_queue_amqp_check_url("amqp://u:s3cret@h:70000/x", err, sizeof err), -1);
    assert_int_equal(fl_queue_amqp_check_url("amqp://u:s3cret@h:0/x", err, sizeof err), -1);
    assert_non_null(strstr(err, "port 0"));
    assert_int_equal(fl_queue_amqp_check_url("amqp://u:s3cret@h/", err, sizeof err), -1);
    assert_non_null(strstr(err, "empty vhost"));
    assert_int_equal(fl_queue_amqp_check_url("amqp://u:p@nosuchhost.invalid:5672/%2f?heartbeat=5",
                                             err, sizeof err),
                     0);

    /* A port nobody listens on. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    int freeport = ntohs(a.sin_port);
    close(fd);
    snprintf(u, sizeof u, "amqp://guest:s3cretpw@127.0.0.1:%d/%%2f", freeport);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    char want[128];
    snprintf(want, sizeof want, "cannot connect to amqp://127.0.0.1:%d: connection refused",
             freeport);
    assert_string_equal(err, want);

    /* The broker, a wrong password: refused, and the password not told. */
    snprintf(u, sizeof u, "amqp://guest:wr0ngpass@127.0.0.1:%d/%%2f", port);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    printf("wrong password: %s\n", err);
    assert_null(strstr(err, "wr0ngpass"));
    assert_non_null(strstr(err, "cannot connect to amqp://127.0.0.1:"));

    /* A vhost that does not exist. */
    snprintf(u, sizeof u, "amqp://guest:guest@127.0.0.1:%d/nosuchvhost", port);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    printf("wrong vhost: %s\n", err);
    assert_non_null(strstr(err, "cannot connect to amqp://127.0.0.1:"));
}

/* amqps://: the broker's TLS listener, its certificate checked against
 * the CA the test made (cacertfile); refused with the reason when the
 * system's CAs, which do not know that CA, are all there is; the query's
 * mistakes named. */
static void test_tls(void **state)
{
    (void)state;
    const char *tls = getenv("FL_TEST_AMQPS_URL");
    if (!tls || !*tls)
        skip();
    purge();
    char err[512], u[1400];
    fl_queue *q = fl_queue_amqp_new(tls, err, sizeof err);
    if (!q)
        fail_msg("amqps: %s", err);
    char buf[3][FL_CRASH_ID_MAX];
    const char *ids[3];
    make_ids(buf, ids, 3, "tls");
    assert_int_equal(q->enqueue_many(q, NULL, ids, 3), 0);
    fl_task t[16];
    size_t n = claim(q, 60, 16, t);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(t[i].crash_id, ids[i]);
        assert_int_equal(q->ack(q, NULL, &t[i]), 0);
    }
    q->close(q);

    /* Without the CA: the system's do not vouch for the broker. */
    snprintf(u, sizeof u, "%.*s", (int)(strchr(tls, '?') - tls), tls);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    printf("amqps without the CA: %s\n", err);
    assert_non_null(strstr(err, "cannot connect to amqps://localhost:"));
    assert_non_null(strstr(err, "TLS: "));
    assert_non_null(strstr(err, "no CA of cacertfile= or of the system signed"));
    /* verify=verify_none takes any certificate (tests only). */
    snprintf(u + strlen(u), sizeof u - strlen(u), "?verify=verify_none");
    assert_non_null(q = fl_queue_amqp_new(u, err, sizeof err));
    q->close(q);
    /* A CA file that is not there, and the query's mistakes. */
    snprintf(u, sizeof u, "%.*s?cacertfile=/nonexistent/ca.pem", (int)(strchr(tls, '?') - tls),
             tls);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/ca.pem"));
    snprintf(u, sizeof u, "%s&bogus=1", tls);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    assert_non_null(strstr(err, "unknown parameter bogus"));
    /* An empty parameter does not end the query: what follows counts. */
    snprintf(u, sizeof u, "%s&&bogus=1", tls);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    assert_non_null(strstr(err, "unknown parameter bogus"));
    /* %XX in a value: the CA file's path, its '/' written %2F. */
    char enc[600];
    size_t el = 0;
    for (const char *p = strstr(tls, "cacertfile=") + 11; *p && el < sizeof enc - 4; p++)
        el += (size_t)snprintf(enc + el, sizeof enc - el, *p == '/' ? "%%2F" : "%c", *p);
    snprintf(u, sizeof u, "%.*s?cacertfile=%s", (int)(strchr(tls, '?') - tls), tls, enc);
    assert_non_null(q = fl_queue_amqp_new(u, err, sizeof err));
    q->close(q);
    /* A '?' in the user name, not escaped: the rest, password and all,
     * reads as a query -- refused without a word of it. */
    snprintf(u, sizeof u, "amqps://gu?est:ss9word@localhost:1/");
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    assert_null(strstr(err, "ss9word"));
    assert_non_null(strstr(err, "malformed query parameter"));
    snprintf(u, sizeof u, "%s&certfile=/x.pem", tls);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    assert_non_null(strstr(err, "certfile and keyfile go together"));
    snprintf(u, sizeof u, "%s?cacertfile=/x.pem", url);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    assert_non_null(strstr(err, "need amqps://"));
    assert_null(strstr(err, "guest:guest")); /* the password never told */
}

static void test_batches(void **state)
{
    (void)state;
    purge();
    fl_queue *q = qnew();
    assert_string_equal(q->engine, "amqp");
    assert_false(q->in_store_txn);
    assert_true(q->claim_waits);
    char buf[40][FL_CRASH_ID_MAX];
    const char *ids[40];
    make_ids(buf, ids, 40, "batch");
    assert_int_equal(q->enqueue_many(q, NULL, ids, 40), 0);
    /* Confirmed means queued: the broker counts 16 + 16 + 8 -- messages. */
    assert_int_equal(q->depth(q, NULL), 3);

    /* max 20: one message per claim (the next never fits), in order. */
    fl_task t[64];
    static const size_t sizes[] = {16, 16, 8};
    size_t next = 0;
    for (size_t k = 0; k < 3; k++) {
        size_t n = claim(q, 60, 20, t);
        assert_int_equal(n, sizes[k]);
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(t[i].crash_id, ids[next + i]);
            assert_int_equal(t[i].last, i == n - 1);
            assert_int_equal(t[i].attempts, 1);
            assert_true(t[i].id == t[0].id);
        }
        for (size_t i = 0; i < n; i++)
            assert_int_equal(q->ack(q, NULL, &t[i]), 0);
        next += n;
    }
    /* Acked is gone: for us, for a fresh connection, for the broker. */
    assert_int_equal(claim(q, 60, 20, t), 0);
    pthread_t th;
    void *r;
    assert_int_equal(pthread_create(&th, NULL, empty_claim_thread, q), 0);
    pthread_join(th, &r);
    assert_int_equal((intptr_t)r, 0);
    assert_int_equal(q->depth(q, NULL), 0);

    /* A larger max: several whole messages per claim, never more. */
    assert_int_equal(q->enqueue_many(q, NULL, ids, 40), 0);
    next = 0;
    for (int k = 0; k < 10 && next < 40; k++) {
        size_t n = claim(q, 60, 40, t);
        assert_whole(t, n);
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(t[i].crash_id, ids[next + i]);
            assert_int_equal(q->ack(q, NULL, &t[i]), 0);
        }
        next += n;
    }
    assert_int_equal(next, 40);
    q->close(q);

    /* 100 ids: 7 messages; one id: one.  (A queue object that does not
     * consume: what a consumer has prefetched is not ready, not counted.) */
    q = qnew();
    char buf2[100][FL_CRASH_ID_MAX];
    const char *ids2[100];
    make_ids(buf2, ids2, 100, "many");
    assert_int_equal(q->enqueue_many(q, NULL, ids2, 100), 0);
    assert_int_equal(q->enqueue(q, NULL, "single"), 0);
    assert_int_equal(q->depth(q, NULL), 8);
    /* Not a crash id: refused before anything is published. */
    const char *bad[] = {"ok", "two\nlines"};
    assert_int_equal(q->enqueue_many(q, NULL, bad, 2), -1);
    assert_non_null(q->error(q));
    assert_int_equal(q->depth(q, NULL), 8);
    q->close(q);
    purge();
}

static int64_t fake_backlog(fl_store_conn *c)
{
    (void)c;
    return 1234;
}

static void test_depth_from_store(void **state)
{
    (void)state;
    fl_queue *q = qnew();
    fl_store s = {.engine = "fake", .backlog = fake_backlog};
    fl_store_conn c = {.store = &s};
    assert_int_equal(q->depth(q, &c), 1234);
    assert_int_equal(q->release_all(q, &c), 0);
    q->close(q);
}

static void test_malformed(void **state)
{
    (void)state;
    purge();
    char seventeen[256] = "", longline[120], huge[2001];
    for (int i = 0; i < 17; i++)
        snprintf(seventeen + strlen(seventeen), sizeof seventeen - strlen(seventeen), "%sid%d",
                 i ? "\n" : "", i);
    memset(longline, 'x', sizeof longline - 1);
    longline[sizeof longline - 1] = 0;
    memset(huge, 'y', sizeof huge - 1);
    huge[sizeof huge - 1] = 0;
    const char *bodies[] = {"", "a\n\nb", seventeen, longline, huge, "trail\n", "ok1\nok2"};
    raw_publish(bodies, 7);
    fl_queue *q = qnew();
    fl_task t[64];
    size_t n = claim_until(q, 60, 8, t, 64, false);
    assert_int_equal(n, 8);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(t[i].crash_id, "");
        assert_true(t[i].last);
    }
    assert_string_equal(t[6].crash_id, "ok1");
    assert_false(t[6].last);
    assert_string_equal(t[7].crash_id, "ok2");
    assert_true(t[7].last);
    assert_int_equal(claim(q, 60, 16, t), 0);
    assert_int_equal(q->depth(q, NULL), 0);
    q->close(q);
}

struct dying {
    fl_queue *q;
    fl_task t[16];
    size_t n;
    int rc;
};

static void *dying_worker(void *arg)
{
    struct dying *d = arg;
    d->rc = d->q->claim(d->q, NULL, 60, 16, d->t, &d->n);
    return NULL; /* no ack: the thread's connection closes as it ends */
}

static void test_dead_worker(void **state)
{
    (void)state;
    purge();
    fl_queue *q = qnew();
    const char *ids[] = {"dead-1", "dead-2", "dead-3"};
    assert_int_equal(q->enqueue_many(q, NULL, ids, 3), 0);
    struct dying d = {.q = q};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, dying_worker, &d), 0);
    pthread_join(th, NULL);
    assert_int_equal(d.rc, 0);
    assert_int_equal(d.n, 3);
    assert_int_equal(d.t[0].attempts, 1);

    fl_task t[16];
    size_t n = claim_until(q, 60, 3, t, 16, true);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(t[i].crash_id, ids[i]);
        assert_int_equal(t[i].attempts, 2);
        assert_int_equal(q->ack(q, NULL, &t[i]), 0);
    }
    assert_int_equal(claim(q, 60, 16, t), 0);
    q->close(q);
}

static void test_release(void **state)
{
    (void)state;
    purge();
    fl_queue *q = qnew();
    assert_non_null(q->release);
    const char *ids[] = {"rel-1", "rel-2"};
    assert_int_equal(q->enqueue_many(q, NULL, ids, 2), 0);
    fl_task t[16], u[16];
    assert_int_equal(claim_until(q, 60, 2, t, 16, true), 2);
    assert_int_equal(t[1].attempts, 1);
    assert_int_equal(q->release(q, NULL, t, 2), 0);
    /* Back at once, to the next claim. */
    uint64_t t0 = (uint64_t)time(NULL);
    assert_int_equal(claim(q, 60, 16, u), 2);
    assert_true((uint64_t)time(NULL) - t0 <= 1);
    assert_string_equal(u[0].crash_id, "rel-1");
    assert_int_equal(u[0].attempts, 2);
    assert_true(u[1].last);
    /* The released entries are nobody's to ack any more. */
    assert_int_equal(q->ack(q, NULL, &t[1]), -1);
    assert_non_null(q->error(q));
    assert_int_equal(q->ack(q, NULL, &u[0]), 0);
    assert_int_equal(q->ack(q, NULL, &u[1]), 0);
    assert_int_equal(claim(q, 60, 16, u), 0);
    q->close(q);
}

static void test_lease(void **state)
{
    (void)state;
    purge();
    fl_queue *q = qnew();
    assert_int_equal(q->enqueue(q, NULL, "leased"), 0);
    fl_task t[16], u[16];
    assert_int_equal(claim_until(q, 1, 1, t, 16, true), 1);
    /* Within the lease, it stays ours. */
    assert_int_equal(claim(q, 1, 16, u), 0);
    sleep(2);
    /* The lease is over: the same thread's next claim gives it back and
     * gets it again, as a second attempt. */
    assert_int_equal(claim(q, 60, 16, u), 1);
    assert_string_equal(u[0].crash_id, "leased");
    assert_int_equal(u[0].attempts, 2);
    assert_int_equal(q->ack(q, NULL, &t[0]), -1); /* the expired lease */
    assert_int_equal(q->ack(q, NULL, &u[0]), 0);
    assert_int_equal(claim(q, 60, 16, u), 0);
    assert_int_equal(q->depth(q, NULL), 0);
    q->close(q);
}

#define SHARED 20

struct consumer {
    fl_queue *q;
    pthread_barrier_t *go;
    atomic_int *total;
    char got[SHARED * 2][FL_CRASH_ID_MAX];
    int n, errors;
};

static void *consumer_main(void *arg)
{
    struct consumer *c = arg;
    fl_task t[32];
    size_t n;
    /* Consuming before anything is published, so both share from the
     * first message on. */
    if (c->q->claim(c->q, NULL, 60, 32, t, &n) || n)
        c->errors++;
    pthread_barrier_wait(c->go);
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += 20;
    while (atomic_load(c->total) < SHARED) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > end.tv_sec)
            break;
        if (c->q->claim(c->q, NULL, 60, 32, t, &n)) {
            c->errors++;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (c->n < SHARED * 2)
                snprintf(c->got[c->n++], FL_CRASH_ID_MAX, "%s", t[i].crash_id);
            usleep(10000); /* processing */
            if (c->q->ack(c->q, NULL, &t[i]))
                c->errors++;
            atomic_fetch_add(c->total, 1);
        }
    }
    return NULL;
}

static void test_two_consumers(void **state)
{
    (void)state;
    purge();
    fl_queue *q = qnew();
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 3);
    atomic_int total = 0;
    struct consumer *c = calloc(2, sizeof *c);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        c[i] = (struct consumer){.q = q, .go = &go, .total = &total};
        assert_int_equal(pthread_create(&th[i], NULL, consumer_main, &c[i]), 0);
    }
    pthread_barrier_wait(&go);
    char buf[SHARED][FL_CRASH_ID_MAX];
    const char *ids[SHARED];
    make_ids(buf, ids, SHARED, "shared");
    for (int i = 0; i < SHARED; i++)
        assert_int_equal(q->enqueue(q, NULL, ids[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    printf("consumers: %d + %d messages\n", c[0].n, c[1].n);
    assert_int_equal(c[0].errors + c[1].errors, 0);
    assert_int_equal(c[0].n + c[1].n, SHARED);
    assert_true(c[0].n > 0 && c[1].n > 0);
    for (int i = 0; i < SHARED; i++) {
        int seen = 0;
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < c[k].n; j++)
                seen += !strcmp(c[k].got[j], ids[i]);
        assert_int_equal(seen, 1);
    }
    free(c);
    assert_int_equal(q->depth(q, NULL), 0);
    q->close(q);
}

struct idle {
    fl_queue *q;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stage; /* 1: connected, 2: the queue is closed, end */
    int rc;
};

static void *idle_thread(void *arg)
{
    struct idle *d = arg;
    fl_task t[16];
    size_t n;
    d->rc = d->q->claim(d->q, NULL, 60, 16, t, &n);
    pthread_mutex_lock(&d->mu);
    d->stage = 1;
    pthread_cond_broadcast(&d->cv);
    while (d->stage != 2)
        pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
    return NULL; /* ends after close(): nothing of the queue runs now */
}

/* close() closes the connections of threads still alive (ASan's leak
 * check would see them otherwise), and their ends later do no harm. */
static void test_close_with_live_threads(void **state)
{
    (void)state;
    purge();
    fl_queue *q = qnew();
    assert_int_equal(q->enqueue(q, NULL, "held-at-close"), 0);
    struct idle d = {.q = q, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, idle_thread, &d), 0);
    pthread_mutex_lock(&d.mu);
    while (d.stage != 1)
        pthread_cond_wait(&d.cv, &d.mu);
    pthread_mutex_unlock(&d.mu);
    q->close(q);
    pthread_mutex_lock(&d.mu);
    d.stage = 2;
    pthread_cond_broadcast(&d.cv);
    pthread_mutex_unlock(&d.mu);
    pthread_join(th, NULL);
    assert_int_equal(d.rc, 0);
    /* What the thread held went back to the queue. */
    q = qnew();
    fl_task t[16];
    assert_int_equal(claim_until(q, 60, 1, t, 16, false), 1);
    assert_string_equal(t[0].crash_id, "held-at-close");
    assert_int_equal(t[0].attempts, 2);
    q->close(q);
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    assert_non_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Every connection's socket is closed: by a thread's end, by close(). */
static void test_no_fd_leak(void **state)
{
    (void)state;
    int before = count_fds();
    fl_queue *q = qnew();
    pthread_t th;
    void *r;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_create(&th, NULL, empty_claim_thread, q), 0);
        pthread_join(th, &r);
        assert_int_equal((intptr_t)r, 0);
    }
    assert_int_equal(count_fds(), before + 1); /* this thread's connection */
    q->close(q);
    assert_int_equal(count_fds(), before);
}

static void test_broker_restart(void **state)
{
    (void)state;
    const char *restart = getenv("FL_TEST_AMQP_RESTART");
    if (!restart || !*restart)
        skip();
    purge();
    fl_queue *q = qnew();
    const char *ids[] = {"before-1", "before-2", "before-3"};
    assert_int_equal(q->enqueue_many(q, NULL, ids, 3), 0);
    fl_task t[32], u[32];
    /* One message claimed and not acked, one at most delivered. */
    assert_int_equal(claim_until(q, 60, 3, t, 16, true), 3);
    assert_int_equal(q->enqueue(q, NULL, "before-4"), 0);
    assert_int_equal(system(restart), 0);

    /* The first call after finds the connection closed and says why. */
    size_t n;
    assert_int_equal(q->claim(q, NULL, 60, 32, u, &n), -1);
    assert_int_equal(n, 0);
    const char *e = q->error(q);
    assert_non_null(e);
    printf("after the restart: %s\n", e);
    assert_non_null(strstr(e, "amqp: "));
    /* Its deliveries died with it. */
    assert_int_equal(q->ack(q, NULL, &t[2]), -1);
    /* The next call connects again. */
    assert_int_equal(q->enqueue(q, NULL, "after-1"), 0);
    n = claim_until(q, 60, 5, u, 32, false);
    assert_int_equal(n, 5);
    /* Persistent messages of a durable queue survived the restart. */
    const char *want[] = {"before-1", "before-2", "before-3", "before-4", "after-1"};
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(u[i].crash_id, want[i]);
    assert_int_equal(q->depth(q, NULL), 0);
    q->close(q);
}

/* rabbitmqctl ARGS against the test's broker. */
static int ctl(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s", getenv("FL_TEST_AMQP_CTL"), args);
    return system(cmd);
}

/* A memory alarm: the broker tells the connection (connection.blocked)
 * and enqueue fails at once, saying why, rather than publishing into a
 * socket the broker no longer reads; the connection stays, and once the
 * alarm ends (connection.unblocked) enqueue works again on it, and what
 * was enqueued before and after is all there. */
static void test_alarm(void **state)
{
    (void)state;
    const char *c = getenv("FL_TEST_AMQP_CTL");
    if (!c || !*c)
        skip();
    purge();
    fl_queue *q = qnew();
    assert_int_equal(q->enqueue(q, NULL, "before-alarm"), 0);
    assert_int_equal(ctl("set_vm_memory_high_watermark 0.0000001"), 0);
    /* The alarm reaches the connection within a moment: until then an
     * enqueue still goes through. */
    int rc = 0;
    size_t early = 0;
    for (int i = 0; i < 100 && rc == 0; i++) {
        rc = q->enqueue(q, NULL, "during-alarm");
        if (rc == 0) {
            early++;
            usleep(100 * 1000);
        }
    }
    char e[512];
    snprintf(e, sizeof e, "%s", q->error(q) ? q->error(q) : "(none)");
    int again = q->enqueue(q, NULL, "during-alarm"); /* still */
    /* The alarm ends before anything is checked: the other tests need
     * the broker as it was. */
    assert_int_equal(ctl("set_vm_memory_high_watermark 0.4"), 0);
    printf("during the alarm: %s\n", e);
    assert_int_equal(rc, -1);
    assert_int_equal(again, -1);
    assert_non_null(strstr(e, "the broker blocks publishing"));
    /* What becomes of the reports is the writer's line to say, once. */
    assert_null(strstr(e, "stay stored"));
    rc = -1;
    for (int i = 0; i < 100 && rc != 0; i++) {
        rc = q->enqueue(q, NULL, "after-alarm");
        if (rc)
            usleep(100 * 1000);
    }
    assert_int_equal(rc, 0);
    /* Each enqueue that went through is there; so may be one that failed
     * (it reached the broker's socket before the block, and was read
     * after it): the writer publishes those reports again, and a crash
     * processed twice is counted once. */
    fl_task t[256];
    size_t n = claim_until(q, 60, early + 2, t, 256, false);
    assert_true(n >= early + 2);
    size_t before = 0, after = 0;
    for (size_t i = 0; i < n; i++) {
        before += !strcmp(t[i].crash_id, "before-alarm");
        after += !strcmp(t[i].crash_id, "after-alarm");
        if (strcmp(t[i].crash_id, "before-alarm") && strcmp(t[i].crash_id, "after-alarm"))
            assert_string_equal(t[i].crash_id, "during-alarm");
    }
    assert_int_equal(before, 1);
    assert_int_equal(after, 1);
    q->close(q);
    purge();
}

/* An operator deletes the queue under a consuming worker (rabbitmqctl
 * delete_queue).  The broker cancels the consumer (basic.cancel, sent to
 * clients that announce consumer_cancel_notify; without it the consumer
 * just vanishes and the worker waits for ever on a silent channel): the
 * worker's next claim fails saying so, and the one after reconnects,
 * declares the queue again and consumes what was enqueued meanwhile --
 * each message once, within seconds. */
static void test_queue_deleted(void **state)
{
    (void)state;
    const char *c = getenv("FL_TEST_AMQP_CTL");
    if (!c || !*c)
        skip();
    purge();
    fl_queue *w = qnew();
    fl_task t[64];
    assert_int_equal(w->enqueue(w, NULL, "del-before"), 0);
    assert_int_equal(claim_until(w, 60, 1, t, 64, false), 1); /* consuming */
    assert_int_equal(ctl("delete_queue " QNAME), 0);
    /* The publisher: a new connection declares the queue again, as the
     * API server's does. */
    fl_queue *p = qnew();
    char buf[40][FL_CRASH_ID_MAX];
    const char *ids[40];
    make_ids(buf, ids, 40, "del-after");
    assert_int_equal(p->enqueue_many(p, NULL, ids, 40), 0);
    int seen[40] = {0};
    size_t got = 0;
    bool cancelled = false;
    for (int i = 0; i < 100 && got < 40; i++) {
        size_t n = 0;
        if (w->claim(w, NULL, 60, 64, t, &n)) {
            const char *e = w->error(w) ? w->error(w) : "?";
            printf("claim after the delete: %s\n", e);
            cancelled |= strstr(e, "cancelled our consumer") != NULL;
            usleep(100 * 1000);
            continue;
        }
        for (size_t k = 0; k < n; k++) {
            int idx = -1;
            for (int j = 0; j < 40; j++)
                if (!strcmp(t[k].crash_id, ids[j]))
                    idx = j;
            assert_true(idx >= 0);
            seen[idx]++;
            assert_int_equal(w->ack(w, NULL, &t[k]), 0);
        }
        got += n;
    }
    assert_int_equal(got, 40);
    assert_true(cancelled);
    for (int j = 0; j < 40; j++)
        assert_int_equal(seen[j], 1);
    assert_int_equal(claim(w, 60, 64, t), 0);
    p->close(p);
    w->close(w);
}

/* A publisher whose queue was deleted under it (rabbitmqctl delete_queue,
 * no worker running to declare it again).  The broker drops a message
 * that routes to no queue -- and confirms it: the writer marked its
 * reports published, and they waited for the sweep's rescue of an empty
 * broker, never coming while other tasks wait.  Published mandatory, it
 * comes back (basic.return): the enqueue fails, leaving its reports to
 * the sweep, and declares the queue again, so that the next one (the
 * sweep's) gets there. */
static void test_publish_queue_deleted(void **state)
{
    (void)state;
    const char *c = getenv("FL_TEST_AMQP_CTL");
    if (!c || !*c)
        skip();
    purge();
    fl_queue *p = qnew();
    assert_int_equal(p->enqueue(p, NULL, "gone-before"), 0);
    assert_int_equal(ctl("delete_queue " QNAME), 0);
    char buf[2][20][FL_CRASH_ID_MAX];
    const char *lost[20], *ids[20];
    make_ids(buf[0], lost, 20, "gone-lost");
    make_ids(buf[1], ids, 20, "gone-again");
    assert_int_equal(p->enqueue_many(p, NULL, lost, 20), -1);
    const char *e = p->error(p) ? p->error(p) : "?";
    printf("publish to the deleted queue: %s\n", e);
    assert_non_null(strstr(e, "returned a message"));
    assert_int_equal(p->enqueue_many(p, NULL, ids, 20), 0);
    fl_queue *w = qnew();
    fl_task t[64];
    size_t n = claim_until(w, 60, 20, t, 64, false);
    assert_int_equal(n, 20);
    int seen[20] = {0};
    for (size_t k = 0; k < n; k++)
        for (int j = 0; j < 20; j++)
            seen[j] += !strcmp(t[k].crash_id, ids[j]);
    for (int j = 0; j < 20; j++)
        assert_int_equal(seen[j], 1);
    assert_int_equal(claim(w, 60, 64, t), 0);
    p->close(p);
    w->close(w);
    purge();
}

/* heartbeat= in the URL: seconds, 0 for none; on amqp:// too, unlike the
 * TLS parameters. */
static void test_heartbeat_url(void **state)
{
    (void)state;
    char err[512], u[512];
    const char *bad[] = {"?heartbeat=abc", "?heartbeat=-1", "?heartbeat=", "?heartbeat=99999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(u, sizeof u, "%s%s", url, bad[i]);
        assert_null(fl_queue_amqp_new(u, err, sizeof err));
        printf("%s: %s\n", bad[i], err);
        assert_non_null(strstr(err, "heartbeat"));
    }
    snprintf(u, sizeof u, "%s?heartbeat=5&cacertfile=/nonexistent", url);
    assert_null(fl_queue_amqp_new(u, err, sizeof err));
    assert_string_equal(err, "--queue URL: TLS parameters need amqps://");
    fl_queue *q = qnew_query("?heartbeat=0");
    assert_int_equal(q->enqueue(q, NULL, "hb-none"), 0);
    q->close(q);
    purge();
}

/* A thread that stays out of the engine for several heartbeat intervals
 * (a worker symbolicating a batch, a publisher with nothing to publish)
 * keeps its connection and its deliveries: the queue's heartbeat thread
 * speaks for it.  Without it the broker would close the connection after
 * 2-4 s and requeue the message, and the ack would fail. */
static void test_heartbeat_idle(void **state)
{
    (void)state;
    purge();
    fl_queue *q = qnew_query("?heartbeat=2");
    assert_int_equal(q->enqueue(q, NULL, "hb-busy-1"), 0);
    fl_task t[16];
    assert_int_equal(claim_until(q, 60, 1, t, 16, true), 1);
    assert_int_equal(t[0].attempts, 1);
    sleep(7); /* "processing": no call into the engine */
    assert_int_equal(q->ack(q, NULL, &t[0]), 0);
    /* The same connection publishes and consumes on: no error, and the
     * next message is a first delivery. */
    assert_int_equal(q->enqueue(q, NULL, "hb-busy-2"), 0);
    assert_int_equal(claim_until(q, 60, 1, t, 16, false), 1);
    assert_string_equal(t[0].crash_id, "hb-busy-2");
    assert_int_equal(t[0].attempts, 1);
    assert_int_equal(q->depth(q, NULL), 0);
    q->close(q);
}

/* A worker frozen with its socket open (SIGSTOP: a debugger, a paused VM)
 * has its deliveries given to another consumer once the broker misses its
 * heartbeats, not after the broker's consumer_timeout (30 minutes). */
static void test_heartbeat_frozen(void **state)
{
    (void)state;
    purge();
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        char err[512], u[512];
        snprintf(u, sizeof u, "%s?heartbeat=2", url);
        fl_queue *cq = fl_queue_amqp_new(u, err, sizeof err);
        if (!cq || cq->enqueue(cq, NULL, "hb-frozen"))
            _exit(2);
        fl_task ct[16];
        size_t n = 0;
        for (int i = 0; i < 25 && n == 0; i++)
            if (cq->claim(cq, NULL, 600, 16, ct, &n))
                _exit(3);
        if (n != 1 || write(p[1], "c", 1) != 1)
            _exit(4);
        raise(SIGSTOP);
        _exit(0);
    }
    close(p[1]);
    char c = 0;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
    assert_true(WIFSTOPPED(st));
    fl_queue *q = qnew();
    fl_task t[16];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    size_t n = 0;
    for (int i = 0; i < 100 && n == 0; i++) /* 20 s at most */
        n = claim(q, 60, 16, t);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("a frozen consumer's message redelivered after %.1f s\n",
           (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    assert_int_equal(n, 1);
    assert_string_equal(t[0].crash_id, "hb-frozen");
    assert_int_equal(t[0].attempts, 2);
    assert_int_equal(q->ack(q, NULL, &t[0]), 0);
    q->close(q);
}

int main(void)
{
    url = getenv("FL_TEST_AMQP_URL");
    if (!url || !*url) {
        fprintf(stderr, "FL_TEST_AMQP_URL is not set (run queue_amqp_test.sh)\n");
        return 77;
    }
    const char *p = strrchr(url, ':');
    port = p ? (int)strtol(p + 1, NULL, 10) : 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_urls),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_depth_from_store),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_dead_worker),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_lease),
        cmocka_unit_test(test_two_consumers),
        cmocka_unit_test(test_close_with_live_threads),
        cmocka_unit_test(test_no_fd_leak),
        cmocka_unit_test(test_heartbeat_url),
        cmocka_unit_test(test_heartbeat_idle),
        cmocka_unit_test(test_heartbeat_frozen),
        cmocka_unit_test(test_alarm),
        cmocka_unit_test(test_queue_deleted),
        cmocka_unit_test(test_publish_queue_deleted),
        cmocka_unit_test(test_broker_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
