/*
 * queue_amqp.c - the task queue in RabbitMQ (rabbitmq-c), for servers that
 * share a PostgreSQL store.
 *
 * How this works.  Tasks live in one durable classic queue,
 * "faultline.tasks", on the default exchange.  A message is a task: up to
 * FL_QUEUE_BATCH_MAX crash ids separated by '\n', persistent (delivery
 * mode 2), like a row of the embedded queue.
 *
 * rabbitmq-c connections are not thread-safe, so every thread that calls in
 * gets a connection of its own (a pthread key per queue; the key's
 * destructor closes it when the thread exits, and close() closes those of
 * threads still alive).  Each connection has one channel, in confirm mode:
 * enqueue_many() publishes and then waits until the broker has confirmed
 * every message -- only a confirm says that a persistent message reached
 * the disk of the broker, and the writer marks a report published on our
 * word.  The same channel consumes (basic.consume with manual acks, started
 * by the first claim), so one frame loop (a_pump) reads everything that
 * arrives: deliveries are kept in the thread's list of held messages,
 * confirms counted, and a connection.close or channel.close drops the
 * connection with the broker's reason as this thread's error().  A dropped
 * connection is opened again by the thread's next call, except by ack()
 * and release(): a delivery tag means nothing on another connection (the
 * broker has requeued everything the old one held).
 *
 * Leases.  The broker gives a dead consumer's unacked messages to others
 * by itself when its connection closes.  A living worker that claimed and
 * never acked (processing failed) is covered by claim(): a message this
 * thread claimed and neither acked nor released within its lease is
 * nacked with requeue first.  The broker sets `redelivered` on anything
 * requeued, which is all a worker asks of attempts (> 1: suspicious).
 *
 * Prefetch (basic.qos) is the number of messages one claim can take (its
 * max / FL_QUEUE_BATCH_MAX, at least 2): the broker then hands a consumer
 * no more than it will claim next, and other processes' consumers get the
 * rest.
 *
 * Heartbeats (the URL's heartbeat=, A_HEARTBEAT_S by default).  A worker
 * frozen with its sockets open (SIGSTOP, a debugger, a paused VM, a host
 * cut off) would otherwise keep its deliveries until the broker's
 * consumer_timeout (30 minutes); with heartbeats the broker closes its
 * connection after two to three silent intervals and gives them to others.
 * But rabbitmq-c sends heartbeats only from inside its own calls, and a
 * worker symbolicating a batch, or a publisher with nothing to publish,
 * makes none for minutes.  So a thread of the queue's own (fl-amqp-hb)
 * does it for them: every quarter interval it sends a heartbeat frame on
 * each connection whose thread is not inside a call (a per-connection
 * mutex, which the heartbeat thread only ever try-locks, so a thread never
 * waits for it for longer than one send and drain), and takes in what has
 * arrived (deliveries go to the thread's held list, as the thread's own
 * a_pump would put them).  A thread inside a call needs no help: rabbitmq-c
 * sends heartbeats while it waits.  A connection the heartbeat thread
 * finds broken is dropped, and the reason kept for its thread's next call,
 * which fails with it (and the call after connects again), as if the
 * thread had found it itself.  A frozen process freezes its heartbeat
 * thread too -- which is the point.  TCP keepalive (set on our own socket)
 * also finds a vanished broker.  The broker's own consumer_timeout (30
 * minutes by default) still ends a channel that holds an unacked delivery
 * longer; keep the lease well below it.
 *
 * Alarms.  A broker low on memory or disk stops reading from connections
 * that publish, and rabbitmq-c's sends have no timeout.  So connections
 * advertise the capability connection.blocked: a_pump notes the broker's
 * connection.blocked and connection.unblocked, and enqueue fails at once
 * while blocked (the writer's reports stay unpublished for the sweep); a
 * block that comes while confirms are awaited drops the connection, as a
 * missing confirm does.
 *
 * A deleted queue.  Connections also advertise consumer_cancel_notify, so
 * the broker sends basic.cancel to the consumers of a queue an operator
 * deletes (otherwise they just stop receiving, silently, for good):
 * a_pump drops the connection on it, the claim fails saying so, and the
 * next claim connects, declares the queue again and consumes.  Until
 * someone declares it again, a message published to it routes nowhere,
 * and the broker drops it -- and confirms it all the same: the writer
 * marked its reports published, and nothing would publish them again
 * while other tasks wait in the queue (the sweep's rescue of lost tasks
 * waits for an empty queue).  So messages are published mandatory: the
 * broker sends an unroutable one back (basic.return, before its confirm),
 * enqueue fails -- its reports stay unpublished, for the sweep -- and
 * declares the queue again on its channel.
 */
#define _GNU_SOURCE
#include "fl_hex.h"
#include "fl_queue.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "fl_srvutil.h"

#define A_QUEUE "faultline.tasks"
#define A_CHANNEL 1
#define A_CONNECT_MS 5000   /* TCP connect, then the AMQP handshake */
#define A_RPC_S 10          /* any RPC (declare, qos, consume, close) */
#define A_CONFIRM_MS 5000   /* publisher confirms of one enqueue_many() */
#define A_CLAIM_WAIT_MS 200 /* claim() waits this long for a first message */
#define A_FRAME_MAX 131072  /* rabbitmq-c's default */
#define A_PREFETCH_MAX 64   /* messages */
#define A_HEARTBEAT_S 10    /* the interval we ask for; the broker may lower it */
/* A message body longer than this is not ours (malformed): ids and '\n's. */
#define A_BODY_MAX (FL_QUEUE_BATCH_MAX * FL_CRASH_ID_MAX)
/* Task ids: the delivery tag, and the thread's connection number above it,
 * so that an id from an earlier connection never names a message of the
 * current one (tags restart at 1 on every channel). */
#define A_TAG_BITS 48
#define A_TAG_MASK ((UINT64_C(1) << A_TAG_BITS) - 1)

/* A message delivered to this thread and not acked or released yet. */
typedef struct a_msg {
    struct a_msg *next;
    uint64_t tag;
    bool redelivered;
    bool bad;            /* longer than A_BODY_MAX */
    uint64_t expires_ns; /* claimed: when its lease ends; 0: not claimed yet */
    size_t len;
    size_t size; /* body_size of its header */
    char *body;
} a_msg;

typedef struct a_queue a_queue;

/* One thread's connection (or the memory of one that failed).  Its
 * thread holds io during every call of the engine; the heartbeat thread
 * try-locks it, so everything below is the thread's or, while the thread
 * is out of the engine, the heartbeat thread's. */
typedef struct a_conn {
    struct a_conn *prev, *next; /* in a_queue.conns, under a_queue.mu */
    a_queue *aq;
    pthread_mutex_t io;
    char lost[320]; /* why the heartbeat thread dropped the connection */
    amqp_connection_state_t st; /* NULL: not connected */
    uint64_t gen;               /* connections opened by this thread */
    bool consuming;
    a_msg *held, **held_end; /* complete messages, in delivery order */
    a_msg *in;               /* the message being received */
    bool in_header;          /* its content header came */
    /* Publisher confirms: sequence numbers are counted per channel from 1;
     * those of the enqueue_many() in progress are [c_lo, c_lo + c_n). */
    uint64_t published, c_lo;
    size_t c_n, c_left;
    unsigned char *c_done;
    bool c_nack;
    /* A message of it came back (basic.return: it routed to no queue);
     * the broker's reason. */
    bool c_returned;
    char returned_why[128];
    /* connection.blocked: the broker is in a memory or disk alarm and
     * reads nothing this connection publishes until connection.unblocked;
     * its reason. */
    bool blocked;
    char blocked_why[128];
} a_conn;

struct a_queue {
    fl_queue q;
    char *url; /* a copy, cut up by amqp_parse_url() */
    struct amqp_connection_info info;
    char where[300]; /* "amqp://host:port", for messages (no password) */
    /* amqps:// (info.ssl): the URL's query, as RabbitMQ's own URIs name
     * them -- cacertfile (else the system's CAs), certfile and keyfile (a
     * client certificate), verify=verify_none (no check of the broker's
     * certificate and name: tests only). */
    char *cafile, *certfile, *keyfile;
    bool verify;
    unsigned heartbeat; /* seconds; 0: none */
    pthread_key_t key;
    pthread_mutex_t mu;
    a_conn *conns;
    /* The heartbeat thread (when heartbeat > 0). */
    pthread_t hb;
    bool hb_running, hb_stop;
    pthread_mutex_t hb_mu;
    pthread_cond_t hb_cv; /* CLOCK_MONOTONIC */
};

/* This thread's last error (error()). */
static _Thread_local char a_errbuf[320];

static void a_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void a_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a_errbuf, sizeof a_errbuf, fmt, ap);
    va_end(ap);
}

static uint64_t a_ms_left(uint64_t deadline_ns)
{
    uint64_t now = fl_mono_ns();
    return deadline_ns > now ? (deadline_ns - now) / 1000000 : 0;
}

/* The broker's reason from an rpc reply, "403 ACCESS_REFUSED - ...". */
static void a_reply_text(amqp_rpc_reply_t r, char *out, size_t len)
{
    switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
        snprintf(out, len, "no error");
        break;
    case AMQP_RESPONSE_NONE:
        snprintf(out, len, "no reply");
        break;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        snprintf(out, len, "%s", amqp_error_string2(r.library_error));
        break;
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
            amqp_connection_close_t *m = r.reply.decoded;
            snprintf(out, len, "connection closed by broker (%u %.*s)", m->reply_code,
                     (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        } else if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            amqp_channel_close_t *m = r.reply.decoded;
            snprintf(out, len, "channel closed by broker (%u %.*s)", m->reply_code,
                     (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        } else {
            snprintf(out, len, "unexpected method 0x%08x from broker", (unsigned)r.reply.id);
        }
        break;
    }
}

/* ---- held messages */

static void a_msg_free(a_msg *m)
{
    if (m) {
        free(m->body);
        free(m);
    }
}

static void a_held_remove(a_conn *t, a_msg *m)
{
    for (a_msg **p = &t->held; *p; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            if (!*p)
                t->held_end = p;
            break;
        }
    a_msg_free(m);
}

static a_msg *a_held_find(a_conn *t, int64_t id)
{
    if (!t->st || ((uint64_t)id >> A_TAG_BITS) != (t->gen & 0x7fff))
        return NULL;
    for (a_msg *m = t->held; m; m = m->next)
        if (m->tag == ((uint64_t)id & A_TAG_MASK) && m->expires_ns)
            return m;
    return NULL;
}

/* ---- connections */

/* Forget the connection and all it held (the broker requeues the messages
 * when it sees the connection go).  orderly: say goodbye first (a broken
 * connection is just destroyed). */
static void a_drop(a_conn *t, bool orderly)
{
    if (t->st) {
        if (orderly)
            amqp_connection_close(t->st, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(t->st); /* closes the socket */
        t->st = NULL;
    }
    while (t->held) {
        a_msg *m = t->held;
        t->held = m->next;
        a_msg_free(m);
    }
    t->held_end = &t->held;
    a_msg_free(t->in);
    t->in = NULL;
    t->in_header = false;
    t->consuming = false;
    t->blocked = false; /* a new connection hears of an alarm anew */
    t->published = 0;
    free(t->c_done);
    t->c_done = NULL;
    t->c_n = t->c_left = 0;
}

/* Set the error from an rpc reply and drop the connection. */
static int a_fail_reply(a_conn *t, const char *what, amqp_rpc_reply_t r)
{
    char why[256];
    a_reply_text(r, why, sizeof why);
    a_err("amqp: %s: %s", what, why);
    a_drop(t, false);
    return -1;
}

static int a_fail_status(a_conn *t, const char *what, int status)
{
    a_err("amqp: %s: %s", what, amqp_error_string2(status));
    a_drop(t, false);
    return -1;
}

static void a_keepalive(int fd);

/* A TCP connection of our own rather than amqp_socket_open(): its errors
 * say why (connection refused, unknown host), and we set keepalive.  The
 * socket stays non-blocking, as rabbitmq-c expects of its sockets. */
static int a_tcp_connect(a_queue *aq, char *why, size_t whylen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", aq->info.port);
    int gai = getaddrinfo(aq->info.host, port, &hints, &res);
    if (gai) {
        snprintf(why, whylen, "%s", gai_strerror(gai));
        return -1;
    }
    int fd = -1, err = 0;
    uint64_t deadline = fl_mono_ns() + (uint64_t)A_CONNECT_MS * 1000000;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        err = errno;
        if (err == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int pr;
            do
                pr = poll(&p, 1, (int)a_ms_left(deadline));
            while (pr < 0 && errno == EINTR);
            socklen_t l = sizeof err;
            if (pr == 0)
                err = ETIMEDOUT;
            else if (pr < 0)
                err = errno;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l))
                err = errno;
            if (!err)
                break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(err ? err : ECONNREFUSED));
        if (why[0] >= 'A' && why[0] <= 'Z')
            why[0] = (char)(why[0] - 'A' + 'a');
        return -1;
    }
    a_keepalive(fd);
    return fd;
}

/* Sets the keepalive a_tcp_connect() sets, on a socket rabbitmq-c made. */
static void a_keepalive(int fd)
{
    int one = 1, idle = 30, intvl = 10, cnt = 3;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

/* OpenSSL's reason for the last failure (a certificate that does not
 * verify, ...), or rabbitmq-c's status. */
static void a_tls_why(int status, char *why, size_t whylen)
{
    unsigned long e = ERR_peek_last_error();
    char buf[200] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    /* "error:0A000086:SSL routines::certificate verify failed": the
     * reason, after the last ':'. */
    const char *reason = strrchr(buf, ':');
    const char *hint = status == AMQP_STATUS_SSL_PEER_VERIFY_FAILED
                           ? " (no CA of cacertfile= or of the system signed the broker's "
                             "certificate)"
                       : status == AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED
                           ? " (the broker's certificate is for another host name)"
                           : "";
    snprintf(why, whylen, "TLS: %s%s",
             reason && reason[1] ? reason + 1 : amqp_error_string2(status), hint);
    ERR_clear_error();
}

/* amqps://: rabbitmq-c's SSL socket opens the connection itself (it cannot
 * take ours); the broker's certificate is checked against cacertfile or
 * the system's CAs, and its name against the URL's host. */
static int a_tls_connect(a_conn *t, char *why, size_t whylen)
{
    a_queue *aq = t->aq;
    t->st = amqp_new_connection();
    amqp_socket_t *s = t->st ? amqp_ssl_socket_new(t->st) : NULL;
    if (!s) {
        snprintf(why, whylen, "out of memory (TLS)");
        return -1;
    }
    ERR_clear_error();
    int rc = aq->cafile ? amqp_ssl_socket_set_cacert(s, aq->cafile)
             : SSL_CTX_set_default_verify_paths(amqp_ssl_socket_get_context(s)) == 1
                 ? AMQP_STATUS_OK
                 : AMQP_STATUS_SSL_ERROR;
    if (rc != AMQP_STATUS_OK) {
        a_tls_why(rc, why, whylen);
        snprintf(why + strlen(why), whylen - strlen(why), " (CA certificates %s)",
                 aq->cafile ? aq->cafile : "of the system");
        return -1;
    }
    if (aq->certfile &&
        (rc = amqp_ssl_socket_set_key(s, aq->certfile, aq->keyfile)) != AMQP_STATUS_OK) {
        a_tls_why(rc, why, whylen);
        snprintf(why + strlen(why), whylen - strlen(why), " (client certificate %s)", aq->certfile);
        return -1;
    }
    amqp_ssl_socket_set_verify_peer(s, aq->verify);
    amqp_ssl_socket_set_verify_hostname(s, aq->verify);
    struct timeval tv = {A_CONNECT_MS / 1000, (A_CONNECT_MS % 1000) * 1000};
    if ((rc = amqp_socket_open_noblock(s, aq->info.host, aq->info.port, &tv)) != AMQP_STATUS_OK) {
        a_tls_why(rc, why, whylen);
        return -1;
    }
    a_keepalive(amqp_get_sockfd(t->st));
    return 0;
}

/* Connect, log in, open the channel in confirm mode and declare the queue.
 * The error says "cannot connect to amqp://host:port: why". */
static int a_open(a_conn *t)
{
    a_queue *aq = t->aq;
    char why[256];
    amqp_rpc_reply_t r;
    if (aq->info.ssl) {
        if (a_tls_connect(t, why, sizeof why))
            goto fail;
    } else {
        int fd = a_tcp_connect(aq, why, sizeof why);
        if (fd < 0)
            goto fail;
        t->st = amqp_new_connection();
        amqp_socket_t *s = t->st ? amqp_tcp_socket_new(t->st) : NULL;
        if (!s) {
            close(fd);
            snprintf(why, sizeof why, "out of memory");
            goto fail;
        }
        amqp_tcp_socket_set_sockfd(s, fd); /* the connection owns it now */
    }
    t->gen++;
    struct timeval hs = {A_CONNECT_MS / 1000, 0}, rpc = {A_RPC_S, 0};
    amqp_set_handshake_timeout(t->st, &hs);
    amqp_set_rpc_timeout(t->st, &rpc);
    /* The capability connection.blocked: the broker then says when an
     * alarm makes it stop reading what we publish, and enqueue fails at
     * once instead of blocking in a send that has no timeout.  And
     * consumer_cancel_notify: without it a consumer of a deleted queue
     * (rabbitmqctl delete_queue) just vanishes, and the worker waits on a
     * silent channel until it restarts; with it the broker sends
     * basic.cancel, and a_pump drops the connection, whose next claim
     * declares the queue again and consumes anew. */
    amqp_table_entry_t cap[] = {
        {.key = amqp_cstring_bytes("connection.blocked"),
         .value = {.kind = AMQP_FIELD_KIND_BOOLEAN, .value.boolean = 1}},
        {.key = amqp_cstring_bytes("consumer_cancel_notify"),
         .value = {.kind = AMQP_FIELD_KIND_BOOLEAN, .value.boolean = 1}},
    };
    amqp_table_entry_t prop = {
        .key = amqp_cstring_bytes("capabilities"),
        .value = {.kind = AMQP_FIELD_KIND_TABLE,
                  .value.table = {.num_entries = sizeof cap / sizeof *cap, .entries = cap}}};
    amqp_table_t props = {.num_entries = 1, .entries = &prop};
    r = amqp_login_with_properties(t->st, aq->info.vhost, 0, A_FRAME_MAX, (int)aq->heartbeat,
                                   &props, AMQP_SASL_METHOD_PLAIN, aq->info.user,
                                   aq->info.password);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        a_reply_text(r, why, sizeof why);
        goto fail;
    }
    amqp_channel_open(t->st, A_CHANNEL);
    if ((r = amqp_get_rpc_reply(t->st)).reply_type != AMQP_RESPONSE_NORMAL)
        goto fail_reply;
    amqp_confirm_select(t->st, A_CHANNEL);
    if ((r = amqp_get_rpc_reply(t->st)).reply_type != AMQP_RESPONSE_NORMAL)
        goto fail_reply;
    /* Every connection declares it (idempotent): a broker that lost its
     * data gets the queue back.  Classic is the default queue type. */
    amqp_queue_declare(t->st, A_CHANNEL, amqp_cstring_bytes(A_QUEUE), 0, 1, 0, 0, amqp_empty_table);
    if ((r = amqp_get_rpc_reply(t->st)).reply_type != AMQP_RESPONSE_NORMAL)
        goto fail_reply;
    amqp_maybe_release_buffers(t->st);
    return 0;
fail_reply:
    a_reply_text(r, why, sizeof why);
fail:
    a_err("cannot connect to %s: %s", aq->where, why);
    a_drop(t, false);
    return -1;
}

static void a_conn_free(a_conn *t)
{
    a_drop(t, true);
    pthread_mutex_destroy(&t->io);
    free(t);
}

/* The pthread key's destructor: the thread ends, and its connection. */
static void a_thread_end(void *p)
{
    a_conn *t = p;
    a_queue *aq = t->aq;
    pthread_mutex_lock(&aq->mu);
    if (t->prev)
        t->prev->next = t->next;
    else
        aq->conns = t->next;
    if (t->next)
        t->next->prev = t->prev;
    pthread_mutex_unlock(&aq->mu);
    a_conn_free(t);
}

/* This thread's connection state, locked (a_unlock() when the call is
 * done); connect: open it when it is not.  A connection the heartbeat
 * thread found broken fails this call with its reason; the next call
 * connects again. */
static a_conn *a_lock(a_queue *aq, bool connect)
{
    a_conn *t = pthread_getspecific(aq->key);
    if (!t) {
        if (!(t = calloc(1, sizeof *t))) {
            a_err("amqp: out of memory");
            return NULL;
        }
        t->aq = aq;
        t->held_end = &t->held;
        pthread_mutex_init(&t->io, NULL);
        if (pthread_setspecific(aq->key, t)) {
            pthread_mutex_destroy(&t->io);
            free(t);
            a_err("amqp: out of memory");
            return NULL;
        }
        pthread_mutex_lock(&aq->mu);
        t->next = aq->conns;
        if (t->next)
            t->next->prev = t;
        aq->conns = t;
        pthread_mutex_unlock(&aq->mu);
    }
    pthread_mutex_lock(&t->io);
    if (connect && !t->st) {
        if (t->lost[0]) {
            a_err("%s", t->lost);
            t->lost[0] = '\0';
            pthread_mutex_unlock(&t->io);
            return NULL;
        }
        if (a_open(t)) {
            pthread_mutex_unlock(&t->io);
            return NULL;
        }
    }
    return t;
}

static void a_unlock(a_conn *t)
{
    pthread_mutex_unlock(&t->io);
}

/* ---- the frame loop */

static void a_confirmed(a_conn *t, uint64_t tag, bool multiple)
{
    if (!t->c_n)
        return; /* not ours to count (none pending) */
    uint64_t lo = multiple ? t->c_lo : tag, hi = tag;
    for (uint64_t s = lo; s <= hi; s++)
        if (s >= t->c_lo && s - t->c_lo < t->c_n && !t->c_done[s - t->c_lo]) {
            t->c_done[s - t->c_lo] = 1;
            t->c_left--;
        }
}

static void a_message_done(a_conn *t)
{
    a_msg *m = t->in;
    t->in = NULL;
    t->in_header = false;
    *t->held_end = m;
    t->held_end = &m->next;
}

/* Read and handle one frame, waiting at most wait_ms.  1: a frame came;
 * 0: none in time; -1: the connection failed and was dropped. */
static int a_pump(a_conn *t, uint64_t wait_ms)
{
    amqp_frame_t f;
    struct timeval tv = {(time_t)(wait_ms / 1000), (suseconds_t)(wait_ms % 1000) * 1000};
    int rc = amqp_simple_wait_frame_noblock(t->st, &f, &tv);
    if (rc == AMQP_STATUS_TIMEOUT)
        return 0;
    if (rc != AMQP_STATUS_OK)
        return a_fail_status(t, "connection lost", rc);
    if (f.channel != 0 && f.channel != A_CHANNEL)
        return 1;
    if (f.frame_type == AMQP_FRAME_METHOD) {
        amqp_method_t *mt = &f.payload.method;
        switch (mt->id) {
        case AMQP_BASIC_DELIVER_METHOD: {
            amqp_basic_deliver_t *d = mt->decoded;
            if (t->in) {
                a_err("amqp: a delivery began before the previous one ended");
                a_drop(t, false);
                return -1;
            }
            if (!(t->in = calloc(1, sizeof *t->in))) {
                a_err("amqp: out of memory");
                a_drop(t, false);
                return -1;
            }
            t->in->tag = d->delivery_tag;
            t->in->redelivered = d->redelivered;
            break;
        }
        case AMQP_BASIC_ACK_METHOD: {
            amqp_basic_ack_t *a = mt->decoded;
            a_confirmed(t, a->delivery_tag, a->multiple);
            break;
        }
        case AMQP_BASIC_NACK_METHOD: {
            amqp_basic_nack_t *a = mt->decoded;
            if (t->c_n)
                t->c_nack = true;
            a_confirmed(t, a->delivery_tag, a->multiple);
            break;
        }
        case AMQP_CONNECTION_CLOSE_METHOD:
        case AMQP_CHANNEL_CLOSE_METHOD: {
            amqp_rpc_reply_t r = {.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION, .reply = *mt};
            char why[256];
            a_reply_text(r, why, sizeof why);
            if (mt->id == AMQP_CONNECTION_CLOSE_METHOD) {
                amqp_connection_close_ok_t ok = {0};
                amqp_send_method(t->st, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
            }
            a_err("amqp: %s", why);
            a_drop(t, false);
            return -1;
        }
        case AMQP_CONNECTION_BLOCKED_METHOD: {
            amqp_connection_blocked_t *b = mt->decoded;
            t->blocked = true;
            snprintf(t->blocked_why, sizeof t->blocked_why, "%.*s",
                     (int)(b->reason.len < 100 ? b->reason.len : 100),
                     (const char *)b->reason.bytes);
            break;
        }
        case AMQP_CONNECTION_UNBLOCKED_METHOD:
            t->blocked = false;
            break;
        case AMQP_BASIC_CANCEL_METHOD:
            /* The queue was deleted (or its node went): what this
             * connection holds is gone with it, and a new connection
             * declares the queue again (a_open) and consumes on it. */
            a_err("amqp: the broker cancelled our consumer (queue %s deleted?); consuming again "
                  "on a new connection",
                  A_QUEUE);
            a_drop(t, false);
            return -1;
        case AMQP_BASIC_RETURN_METHOD: {
            /* Unroutable: its content frames follow, and are skipped as
             * content of nothing we asked for (t->in is NULL). */
            amqp_basic_return_t *b = mt->decoded;
            if (t->c_n && !t->c_returned) {
                t->c_returned = true;
                snprintf(t->returned_why, sizeof t->returned_why, "%u %.*s", b->reply_code,
                         (int)(b->reply_text.len < 100 ? b->reply_text.len : 100),
                         (const char *)b->reply_text.bytes);
            }
            break;
        }
        default:
            break;
        }
        return 1;
    }
    if (!t->in)
        return 1; /* content of nothing we asked for */
    if (f.frame_type == AMQP_FRAME_HEADER && !t->in_header) {
        t->in_header = true;
        t->in->size = (size_t)f.payload.properties.body_size;
        if (t->in->size > A_BODY_MAX)
            t->in->bad = true;
        else if (t->in->size && !(t->in->body = malloc(t->in->size))) {
            a_err("amqp: out of memory");
            a_drop(t, false);
            return -1;
        }
        if (t->in->size == 0)
            a_message_done(t);
    } else if (f.frame_type == AMQP_FRAME_BODY && t->in_header) {
        amqp_bytes_t b = f.payload.body_fragment;
        size_t room = t->in->size - t->in->len;
        size_t k = b.len < room ? b.len : room;
        if (t->in->body)
            memcpy(t->in->body + t->in->len, b.bytes, k);
        t->in->len += k;
        if (t->in->len >= t->in->size)
            a_message_done(t);
    }
    return 1;
}

/* Take in whatever has arrived, without waiting. */
static int a_drain(a_conn *t)
{
    int r;
    while ((r = a_pump(t, 0)) == 1)
        ;
    return r;
}

/* ---- the engine */

static int a_enqueue_locked(a_conn *t, const char *const *ids, size_t n)
{
    /* A connection the broker closed while we were away says so here
     * (and the next call connects again). */
    if (a_drain(t) < 0)
        return -1;
    /* An alarm: nothing is published (the send could wait for as long as
     * the alarm lasts); the writer keeps the reports stored and
     * unpublished, and the sweep publishes them once it is over.  That
     * outcome is the caller's to say (the writer's "cannot publish tasks"
     * line does): said here too, the log line said it twice. */
    if (t->blocked) {
        a_err("amqp: the broker blocks publishing (%s: a memory or disk alarm)",
              t->blocked_why[0] ? t->blocked_why : "no reason given");
        return -1;
    }
    size_t nmsg = (n + FL_QUEUE_BATCH_MAX - 1) / FL_QUEUE_BATCH_MAX;
    if (!(t->c_done = calloc(nmsg, 1))) {
        a_err("amqp: out of memory");
        return -1;
    }
    t->c_lo = t->published + 1;
    t->c_n = t->c_left = nmsg;
    t->c_nack = false;
    t->c_returned = false;
    amqp_basic_properties_t props = {
        ._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG,
        .delivery_mode = 2, /* persistent */
        .content_type = amqp_cstring_bytes("text/plain"),
    };
    char text[A_BODY_MAX];
    for (size_t i = 0; i < n;) {
        size_t k = 0, len = 0;
        for (; k < FL_QUEUE_BATCH_MAX && i + k < n; k++) {
            size_t l = strlen(ids[i + k]);
            if (l == 0 || l >= FL_CRASH_ID_MAX || memchr(ids[i + k], '\n', l)) {
                a_err("amqp: not a crash id: \"%.*s\"", (int)(l < 80 ? l : 80), ids[i + k]);
                goto fail; /* cannot happen: ids are checked at ingest */
            }
            if (k)
                text[len++] = '\n';
            memcpy(text + len, ids[i + k], l);
            len += l;
        }
        amqp_bytes_t body = {.len = len, .bytes = text};
        /* Mandatory: a message the broker cannot route comes back
         * (the queue deleted, see the top of the file). */
        int rc = amqp_basic_publish(t->st, A_CHANNEL, amqp_empty_bytes, amqp_cstring_bytes(A_QUEUE),
                                    1, 0, &props, body);
        if (rc != AMQP_STATUS_OK)
            return a_fail_status(t, "publish", rc);
        t->published++;
        i += k;
    }
    uint64_t deadline = fl_mono_ns() + (uint64_t)A_CONFIRM_MS * 1000000;
    while (t->c_left && !t->c_nack) {
        uint64_t left = a_ms_left(deadline);
        if (left == 0) {
            /* The broker has them or not: we cannot tell, so this
             * connection goes (late confirms would confuse the next
             * call) and the caller publishes again later. */
            a_err("amqp: no confirm from the broker in %d ms", A_CONFIRM_MS);
            a_drop(t, false);
            return -1;
        }
        if (a_pump(t, left) < 0)
            return -1;
        if (t->blocked) {
            /* Blocked while we waited (RabbitMQ tells a connection when it
             * publishes during an alarm): what we sent stays unread, so
             * this connection goes, as after a missing confirm. */
            a_err("amqp: the broker blocks publishing (%s: a memory or disk alarm)",
                  t->blocked_why[0] ? t->blocked_why : "no reason given");
            a_drop(t, false);
            return -1;
        }
    }
    if (t->c_nack) {
        a_err("amqp: the broker refused (nacked) a message");
        goto fail;
    }
    if (t->c_returned) {
        /* The broker returns a message before it confirms it, so all
         * returns are in.  Which messages came back is not said (a
         * return names no sequence number): the call fails as a whole,
         * and the sweep publishes its reports again -- those that did
         * arrive twice, counted once.  The queue is declared again for
         * the sweep's publish (a worker's next connection would, but
         * there may be no worker running). */
        a_err("amqp: the broker returned a message (%s): queue %s does not exist (deleted?); "
              "declared it again",
              t->returned_why, A_QUEUE);
        free(t->c_done);
        t->c_done = NULL;
        t->c_n = t->c_left = 0;
        amqp_queue_declare(t->st, A_CHANNEL, amqp_cstring_bytes(A_QUEUE), 0, 1, 0, 0,
                           amqp_empty_table);
        amqp_rpc_reply_t r = amqp_get_rpc_reply(t->st);
        if (r.reply_type != AMQP_RESPONSE_NORMAL) {
            char why[256];
            a_reply_text(r, why, sizeof why);
            a_err("amqp: the broker returned a message (%s): queue %s does not exist "
                  "(deleted?), and declaring it again failed: %s",
                  t->returned_why, A_QUEUE, why);
            a_drop(t, false);
            return -1;
        }
        amqp_maybe_release_buffers(t->st);
        return -1;
    }
    free(t->c_done);
    t->c_done = NULL;
    t->c_n = t->c_left = 0;
    amqp_maybe_release_buffers(t->st);
    return 0;
fail:
    free(t->c_done);
    t->c_done = NULL;
    t->c_n = t->c_left = 0;
    return -1;
}

static int a_enqueue_many(fl_queue *q, fl_store_conn *c, const char *const *ids, size_t n)
{
    (void)c;
    if (n == 0)
        return 0;
    a_conn *t = a_lock(q->data, true);
    if (!t)
        return -1;
    int rc = a_enqueue_locked(t, ids, n);
    a_unlock(t);
    return rc;
}

static int a_enqueue(fl_queue *q, fl_store_conn *c, const char *crash_id)
{
    return a_enqueue_many(q, c, &crash_id, 1);
}

/* The entries of message m: its ids, or one empty entry when the body is
 * empty or not a list of at most FL_QUEUE_BATCH_MAX crash ids -- its ack
 * removes it, rather than it coming back forever.  out NULL: count only. */
static size_t a_entries(const a_conn *t, const a_msg *m, fl_task *out)
{
    size_t k = 0;
    bool ok = !m->bad && m->len > 0 && !memchr(m->body, '\0', m->len);
    for (size_t i = 0; ok && i <= m->len;) {
        const char *e = memchr(m->body + i, '\n', m->len - i);
        size_t l = e ? (size_t)(e - (m->body + i)) : m->len - i;
        if (l == 0 || l >= FL_CRASH_ID_MAX || k == FL_QUEUE_BATCH_MAX) {
            ok = false;
            break;
        }
        if (out) {
            memcpy(out[k].crash_id, m->body + i, l);
            out[k].crash_id[l] = '\0';
        }
        k++;
        i += l + 1;
    }
    if (!ok) {
        k = 1;
        if (out)
            out[0].crash_id[0] = '\0';
    }
    if (out)
        for (size_t i = 0; i < k; i++) {
            out[i].id = (int64_t)(((t->gen & 0x7fff) << A_TAG_BITS) | (m->tag & A_TAG_MASK));
            out[i].last = i + 1 == k;
            out[i].attempts = m->redelivered ? 2 : 1;
        }
    return k;
}

static a_msg *a_first_unclaimed(a_conn *t)
{
    for (a_msg *m = t->held; m; m = m->next)
        if (!m->expires_ns)
            return m;
    return NULL;
}

static int a_claim_locked(a_conn *t, unsigned lease_s, size_t max, fl_task *out, size_t *n)
{
    if (!t->consuming) {
        size_t pf = max / FL_QUEUE_BATCH_MAX;
        pf = pf < 2 ? 2 : pf > A_PREFETCH_MAX ? A_PREFETCH_MAX : pf;
        amqp_basic_qos(t->st, A_CHANNEL, 0, (uint16_t)pf, 0);
        amqp_rpc_reply_t r = amqp_get_rpc_reply(t->st);
        if (r.reply_type != AMQP_RESPONSE_NORMAL)
            return a_fail_reply(t, "basic.qos", r);
        amqp_basic_consume(t->st, A_CHANNEL, amqp_cstring_bytes(A_QUEUE), amqp_empty_bytes, 0, 0, 0,
                           amqp_empty_table);
        r = amqp_get_rpc_reply(t->st);
        if (r.reply_type != AMQP_RESPONSE_NORMAL)
            return a_fail_reply(t, "basic.consume", r);
        t->consuming = true;
    }
    /* The lease: what this thread claimed and never acked nor released
     * goes back to the queue once its lease is over. */
    uint64_t now = fl_mono_ns();
    for (a_msg *m = t->held, *next; m; m = next) {
        next = m->next;
        if (m->expires_ns && m->expires_ns <= now) {
            int rc = amqp_basic_nack(t->st, A_CHANNEL, m->tag, 0, 1);
            if (rc != AMQP_STATUS_OK)
                return a_fail_status(t, "basic.nack", rc);
            a_held_remove(t, m);
        }
    }
    if (a_drain(t) < 0)
        return -1;
    uint64_t deadline = now + (uint64_t)A_CLAIM_WAIT_MS * 1000000;
    while (!a_first_unclaimed(t)) {
        uint64_t left = a_ms_left(deadline);
        if (left == 0)
            break;
        if (a_pump(t, left) < 0)
            return -1;
    }
    if (a_drain(t) < 0)
        return -1;
    /* Whole messages, in delivery order, while they fit. */
    uint64_t expires = fl_mono_ns() + (uint64_t)lease_s * 1000000000;
    for (a_msg *m = a_first_unclaimed(t); m; m = m->next) {
        if (m->expires_ns)
            continue;
        if (*n + a_entries(t, m, NULL) > max)
            break; /* the next claim takes it */
        *n += a_entries(t, m, out + *n);
        m->expires_ns = expires;
    }
    amqp_maybe_release_buffers(t->st);
    return 0;
}

static int a_claim(fl_queue *q, fl_store_conn *c, unsigned lease_s, size_t max, fl_task *out,
                   size_t *n)
{
    (void)c;
    *n = 0;
    a_conn *t = a_lock(q->data, true);
    if (!t)
        return -1;
    int rc = a_claim_locked(t, lease_s, max, out, n);
    a_unlock(t);
    return rc;
}

static int a_ack_locked(a_conn *t, const fl_task *task)
{
    /* A connection closed by the broker would take the ack silently. */
    if (t->st && a_drain(t) < 0)
        return -1;
    a_msg *m = a_held_find(t, task->id);
    if (!m) {
        a_err("amqp: ack of a message this thread no longer holds (its connection was lost or "
              "its lease ended): the broker delivers it again");
        return -1;
    }
    int rc = amqp_basic_ack(t->st, A_CHANNEL, m->tag, 0);
    if (rc != AMQP_STATUS_OK)
        return a_fail_status(t, "basic.ack", rc);
    a_held_remove(t, m);
    return 0;
}

static int a_ack(fl_queue *q, fl_store_conn *c, const fl_task *task)
{
    (void)c;
    if (!task->last)
        return 0; /* the message goes with its last entry */
    a_conn *t = a_lock(q->data, false);
    if (!t)
        return -1;
    int rc = a_ack_locked(t, task);
    a_unlock(t);
    return rc;
}

static int a_release_locked(a_conn *t, const fl_task *tasks, size_t n)
{
    /* Any entry of a message gives the whole message back (it cannot be
     * split); the others of it then find nothing. */
    for (size_t i = 0; i < n && t->st; i++) {
        a_msg *m = a_held_find(t, tasks[i].id);
        if (!m)
            continue; /* released already, or its connection is gone */
        int rc = amqp_basic_nack(t->st, A_CHANNEL, m->tag, 0, 1);
        if (rc != AMQP_STATUS_OK)
            return a_fail_status(t, "basic.nack", rc);
        a_held_remove(t, m);
    }
    return 0;
}

static int a_release(fl_queue *q, fl_store_conn *c, const fl_task *tasks, size_t n)
{
    (void)c;
    a_conn *t = a_lock(q->data, false);
    if (!t)
        return -1;
    int rc = a_release_locked(t, tasks, n);
    a_unlock(t);
    return rc;
}

/* Crashes waiting.  The store counts them when it can (a message holds up
 * to FL_QUEUE_BATCH_MAX); otherwise this is the broker's count of ready
 * MESSAGES (not crashes, and not those delivered and unacked). */
static int64_t a_depth(fl_queue *q, fl_store_conn *c)
{
    if (c && c->store && c->store->backlog)
        return c->store->backlog(c);
    a_conn *t = a_lock(q->data, true);
    if (!t)
        return -1;
    int64_t d;
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(t->st, A_CHANNEL, amqp_cstring_bytes(A_QUEUE),
                                                     1, 0, 0, 0, amqp_empty_table);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(t->st);
    if (!ok || r.reply_type != AMQP_RESPONSE_NORMAL) {
        d = a_fail_reply(t, "queue.declare", r);
    } else {
        d = ok->message_count;
        amqp_maybe_release_buffers(t->st);
    }
    a_unlock(t);
    return d;
}

/* Nothing to forget: the broker requeued a dead process's messages when
 * its connections closed. */
static int a_release_all(fl_queue *q, fl_store_conn *c)
{
    (void)q;
    (void)c;
    return 0;
}

static const char *a_error(fl_queue *q)
{
    (void)q;
    return a_errbuf[0] ? a_errbuf : NULL;
}

/* ---- heartbeats (see the top of the file) */

/* One round: a heartbeat on each connection whose thread is out of the
 * engine, and what has arrived taken in. */
static void a_heartbeat_round(a_queue *aq)
{
    pthread_mutex_lock(&aq->mu);
    for (a_conn *t = aq->conns; t; t = t->next) {
        if (pthread_mutex_trylock(&t->io))
            continue; /* in a call: rabbitmq-c sends them while it waits */
        if (t->st && amqp_get_heartbeat(t->st) > 0) {
            amqp_frame_t f = {.frame_type = AMQP_FRAME_HEARTBEAT, .channel = 0};
            int rc = amqp_send_frame(t->st, &f);
            int dr = rc == AMQP_STATUS_OK ? a_drain(t) : a_fail_status(t, "connection lost", rc);
            if (dr < 0) /* dropped: its thread's next call says why */
                snprintf(t->lost, sizeof t->lost, "%s", a_errbuf);
            else
                amqp_maybe_release_buffers(t->st);
        }
        pthread_mutex_unlock(&t->io);
    }
    pthread_mutex_unlock(&aq->mu);
}

static void *a_heartbeat_main(void *arg)
{
    a_queue *aq = arg;
    pthread_setname_np(pthread_self(), "fl-amqp-hb");
    /* A quarter of the interval: the broker hears from us at least twice
     * in each of its checks, whatever their phase. */
    uint64_t tick_ns = (uint64_t)aq->heartbeat * 250000000;
    pthread_mutex_lock(&aq->hb_mu);
    while (!aq->hb_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t at = (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec + tick_ns;
        ts.tv_sec = (time_t)(at / 1000000000);
        ts.tv_nsec = (long)(at % 1000000000);
        while (!aq->hb_stop && pthread_cond_timedwait(&aq->hb_cv, &aq->hb_mu, &ts) != ETIMEDOUT)
            ;
        if (aq->hb_stop)
            break;
        pthread_mutex_unlock(&aq->hb_mu);
        a_heartbeat_round(aq);
        pthread_mutex_lock(&aq->hb_mu);
    }
    pthread_mutex_unlock(&aq->hb_mu);
    return NULL;
}

static int a_heartbeat_start(a_queue *aq)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&aq->hb_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&aq->hb_mu, NULL);
    if (aq->heartbeat == 0)
        return 0;
    if (pthread_create(&aq->hb, NULL, a_heartbeat_main, aq)) {
        pthread_mutex_destroy(&aq->hb_mu);
        pthread_cond_destroy(&aq->hb_cv);
        return -1;
    }
    aq->hb_running = true;
    return 0;
}

static void a_heartbeat_stop(a_queue *aq)
{
    if (aq->hb_running) {
        pthread_mutex_lock(&aq->hb_mu);
        aq->hb_stop = true;
        pthread_cond_signal(&aq->hb_cv);
        pthread_mutex_unlock(&aq->hb_mu);
        pthread_join(aq->hb, NULL);
        aq->hb_running = false;
    }
}

/* Every thread's connection closes here, those of threads still alive
 * included: they must not call in any more.  No thread may be ending
 * (running its key destructor) meanwhile. */
static void a_close(fl_queue *q)
{
    if (!q)
        return;
    a_queue *aq = q->data;
    a_heartbeat_stop(aq);
    pthread_key_delete(aq->key); /* no destructor runs from now on */
    pthread_mutex_lock(&aq->mu);
    a_conn *t = aq->conns;
    aq->conns = NULL;
    pthread_mutex_unlock(&aq->mu);
    while (t) {
        a_conn *next = t->next;
        a_conn_free(t);
        t = next;
    }
    pthread_mutex_destroy(&aq->mu);
    pthread_mutex_destroy(&aq->hb_mu);
    pthread_cond_destroy(&aq->hb_cv);
    free(aq->url);
    free(aq);
}

/* %XX decoded in place (a path with spaces, '&' or '%'). */
static void a_unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        int hi, lo;
        if (r[0] == '%' && (hi = fl_hex_digit(r[1])) >= 0 && (lo = fl_hex_digit(r[2])) >= 0) {
            *w++ = (char)(hi << 4 | lo);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* aq->url (a copy of the URL, which this cuts up) into aq->info and the
 * TLS settings of its query.  -1 with err saying what is wrong, without
 * echoing the URL: it holds the password. */
static int a_parse_url(a_queue *aq, char *err, size_t errlen)
{
    amqp_default_connection_info(&aq->info);
    aq->verify = true;
    aq->heartbeat = A_HEARTBEAT_S;
    bool tls_param = false;
    /* The query first: amqp_parse_url() knows none. */
    char *query = strchr(aq->url, '?');
    if (query)
        *query++ = '\0';
    if (amqp_parse_url(aq->url, &aq->info) != AMQP_STATUS_OK) {
        snprintf(err, errlen,
                 "not an AMQP URL (amqp[s]://USER:PASS@HOST:PORT/VHOST, PORT 1..65535)");
        return -1;
    }
    if (!aq->info.vhost[0]) {
        /* "amqp://h/": a vhost named "", which no broker has; the default
         * one is "/", which a URL writes %2f. */
        snprintf(err, errlen,
                 "the AMQP URL names an empty vhost (a '/' at its end): leave the path out for "
                 "the default vhost, or write it %%2f (amqp://USER:PASS@HOST:PORT/%%2f)");
        return -1;
    }
    for (char *kv = query, *next; kv; kv = next) {
        next = strchr(kv, '&');
        if (next)
            *next++ = '\0';
        if (!*kv)
            continue; /* "&&", a trailing '&' */
        char *v = strchr(kv, '=');
        if (v)
            *v++ = '\0';
        /* A name is echoed only when it is one: a '?' in the user name
         * would make the rest of the URL, password and all, a "name". */
        if (strspn(kv, "abcdefghijklmnopqrstuvwxyz_") != strlen(kv) || strlen(kv) > 20) {
            snprintf(err, errlen,
                     "--queue URL: a malformed query parameter (a '?' or '&' in "
                     "the user or password must be written %%3F, %%26)");
            return -1;
        }
        if (!v || !*v) {
            snprintf(err, errlen, "--queue URL: parameter %s has no value", kv);
            return -1;
        }
        a_unescape(v); /* %XX, as in any URI */
        tls_param |= strcmp(kv, "heartbeat") != 0;
        if (!strcmp(kv, "heartbeat")) {
            char *end;
            errno = 0;
            unsigned long h = strtoul(v, &end, 10);
            if (*end || errno || v[0] == '-' || h > 3600) {
                snprintf(err, errlen,
                         "--queue URL: heartbeat must be a number of seconds, 0 (none) to 3600");
                return -1;
            }
            aq->heartbeat = (unsigned)h;
        } else if (!strcmp(kv, "cacertfile"))
            aq->cafile = v;
        else if (!strcmp(kv, "certfile"))
            aq->certfile = v;
        else if (!strcmp(kv, "keyfile"))
            aq->keyfile = v;
        else if (!strcmp(kv, "verify") && (!strcmp(v, "verify_peer") || !strcmp(v, "verify_none")))
            aq->verify = !strcmp(v, "verify_peer");
        else {
            snprintf(err, errlen,
                     "--queue URL: unknown parameter %.40s (heartbeat, cacertfile, certfile, "
                     "keyfile, verify=verify_peer|verify_none)",
                     kv);
            return -1;
        }
    }
    if (tls_param && !aq->info.ssl) {
        snprintf(err, errlen, "--queue URL: TLS parameters need amqps://");
        return -1;
    }
    if (!aq->certfile != !aq->keyfile) {
        snprintf(err, errlen, "--queue URL: certfile and keyfile go together");
        return -1;
    }
    if (!aq->info.port) {
        /* No broker listens on port 0: the connection would be refused
         * for ever, and the server wait for a broker that never comes. */
        snprintf(err, errlen, "the AMQP URL names port 0 (1..65535)");
        return -1;
    }
    return 0;
}

int fl_queue_amqp_check_url(const char *url, char *err, size_t errlen)
{
    a_queue *aq = calloc(1, sizeof *aq);
    if (!aq || !(aq->url = strdup(url))) {
        snprintf(err, errlen, "out of memory");
        free(aq);
        return -1;
    }
    int rc = a_parse_url(aq, err, errlen);
    free(aq->url);
    free(aq);
    return rc;
}

static fl_queue *a_new(const char *url, bool connect, char *err, size_t errlen)
{
    a_queue *aq = calloc(1, sizeof *aq);
    if (!aq || !(aq->url = strdup(url))) {
        snprintf(err, errlen, "out of memory");
        free(aq);
        return NULL;
    }
    if (a_parse_url(aq, err, errlen))
        goto fail_url;
    const char *scheme = aq->info.ssl ? "amqps" : "amqp";
    if (strchr(aq->info.host, ':'))
        snprintf(aq->where, sizeof aq->where, "%s://[%s]:%d", scheme, aq->info.host, aq->info.port);
    else
        snprintf(aq->where, sizeof aq->where, "%s://%s:%d", scheme, aq->info.host, aq->info.port);
    if (pthread_key_create(&aq->key, a_thread_end)) {
        snprintf(err, errlen, "out of memory");
        goto fail_url;
    }
    pthread_mutex_init(&aq->mu, NULL);
    if (a_heartbeat_start(aq)) {
        snprintf(err, errlen, "cannot start the heartbeat thread");
        pthread_key_delete(aq->key);
        pthread_mutex_destroy(&aq->mu);
        goto fail_url;
    }
    fl_queue *q = &aq->q;
    q->engine = "amqp";
    q->in_store_txn = false;
    q->enqueue = a_enqueue;
    q->enqueue_many = a_enqueue_many;
    q->claim = a_claim;
    q->ack = a_ack;
    q->depth = a_depth;
    q->release_all = a_release_all;
    q->release = a_release;
    q->error = a_error;
    q->claim_waits = true;
    q->close = a_close;
    q->data = aq;
    if (!connect)
        return q;
    /* Connect now (declaring the queue), so that a wrong URL or an absent
     * broker fails here; this thread keeps the connection. */
    a_conn *t = a_lock(aq, true);
    if (t) {
        a_unlock(t);
    } else {
        snprintf(err, errlen, "%s", a_errbuf);
        a_close(q);
        return NULL;
    }
    return q;
fail_url:
    free(aq->url);
    free(aq);
    return NULL;
}

fl_queue *fl_queue_amqp_new(const char *url, char *err, size_t errlen)
{
    return a_new(url, true, err, errlen);
}

fl_queue *fl_queue_amqp_new_unconnected(const char *url, char *err, size_t errlen)
{
    return a_new(url, false, err, errlen);
}
