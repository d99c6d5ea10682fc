/*
 * fl_post - a small HTTP client for the server tests (and a load source).
 *
 *   fl_post raw PORT FILE
 *       send FILE's bytes as they are (a complete HTTP request) to
 *       127.0.0.1:PORT; print the status code, a newline and the body.
 *   fl_post stream PORT KEY N CONC OUT [SEED]
 *       post N generated crash logs (distinct CRASH_IDs, a few signatures)
 *       from CONC threads; append the id of each one answered 200 to OUT,
 *       one per line, flushed as soon as the 200 is read.  Stops early
 *       when the server is gone.  Prints "sent S ok K".  FL_POST_DELAY_US
 *       in the environment: a pause before each request.
 *   fl_post check PORT TOKEN IDFILE
 *       GET /api/v1/crashes/ID for every id in IDFILE; print how many are
 *       missing (not 200, or without a group); exit 1 when any is.
 *   fl_post sum PORT TOKEN [APP]
 *       print the sum of the groups' counts (of APP when given).
 *   fl_post wait PORT TOKEN EXPECTED SECONDS [APP]
 *       poll the sum until it equals EXPECTED; exit 1 on timeout.
 *   fl_post log SEED I [APP VERSION]
 *       print generated log number I (what stream sends).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

static unsigned g_port;

/* Send req[0..len) and read the whole answer (Connection: close).
 * Returns the status code, 0 when there was no answer, and the body in
 * *body (caller frees) when body != NULL. */
static int http(const char *req, size_t len, char **body)
{
    if (body)
        *body = NULL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct timeval tv = {.tv_sec = 30};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        close(fd);
        return 0;
    }
    for (size_t off = 0; off < len;) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) {
            close(fd);
            return 0;
        }
        off += (size_t)n;
    }
    size_t cap = 65536, got = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (got == cap) {
            if (cap > (64u << 20))
                break;
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        ssize_t n = recv(fd, buf + got, cap - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = 0;
    char *b = strstr(buf, "\r\n\r\n");
    if (body && b)
        *body = strdup(b + 4);
    free(buf);
    return status;
}

static int get(const char *path, const char *token, char **body)
{
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                     "Connection: close\r\n\r\n",
                     path, token);
    return http(req, (size_t)n, body);
}

/* ---- generated logs */

static size_t gen_log(char *out, size_t cap, unsigned seed, unsigned i, const char *app,
                      const char *version)
{
    /* Four signatures; distinct crash ids; two installs per signature.  The
     * libc frame sits between the program's (a callback), not below them
     * as start-up frames do, so it is part of the signature. */
    unsigned sig = i % 4;
    uint64_t base = 0x400000, lib = 0x7f0000000000ull;
    int n = snprintf(out, cap,
                     "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME %s\n"
                     "APPLICATION_VERSION %s\nPLATFORM_NAME linux\nCPUARCH_NAME x86-64\n"
                     "PLATFORM_VERSION 6.1.0\nCRASH_SIGNAL 11\nCRASH_TIME 1700000000\n"
                     "CRASH_ID %08x-%08x-0000-0000-%012x\nINSTALL_ID %016x\n"
                     "OBJECT /usr/bin/%s/%" PRIu64 "/1048576/0\n"
                     "OBJECT /lib/libc.so.6/%" PRIu64 "/2097152/%" PRIu64 "\n"
                     "CALLSTACK %" PRIu64 "\nCALLSTACK %" PRIu64 "\nCALLSTACK %" PRIu64 "\n"
                     "CALLSTACK %" PRIu64 "\n",
                     app, version, seed, i, i, sig * 2 + (i / 4) % 2, app, base, lib, lib,
                     base + 0x1000 + sig * 0x40, lib + 0x29d90, base + 0x2000, base + 0x3000);
    /* Pad to about 4 KiB like a real log with some context. */
    for (unsigned k = 0; n > 0 && (size_t)n < cap - 200 && k < 60; k++)
        n += snprintf(out + n, cap - (size_t)n, "ETC_KEY key%u\nETC_VALUE value number %u of %u\n",
                      k, k, i);
    n += snprintf(out + n, cap - (size_t)n, "END\n");
    return (size_t)n;
}

/* ---- stream */

typedef struct stream {
    const char *key;
    unsigned n, seed;
    unsigned next, sent, ok, refused;
    FILE *out;
    pthread_mutex_t mu;
} stream;

static void *stream_main(void *arg)
{
    stream *s = arg;
    char log[8192], req[12288];
    /* FL_POST_DELAY_US: pause before each request, so that a test can be
     * sure to act in the middle of a stream. */
    const char *d = getenv("FL_POST_DELAY_US");
    unsigned delay = d ? (unsigned)strtoul(d, NULL, 10) : 0;
    for (;;) {
        if (delay)
            usleep(delay);
        pthread_mutex_lock(&s->mu);
        unsigned i = s->next++;
        bool stop = i >= s->n || s->refused > 20;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        size_t ll = gen_log(log, 4600, s->seed, i, "streamapp", "1.0");
        int hl = snprintf(req, sizeof req,
                          "POST /api/v1/crashes HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "X-Faultline-Key: %s\r\nContent-Type: text/plain\r\n"
                          "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                          s->key, ll);
        memcpy(req + hl, log, ll);
        char *body = NULL;
        int st = http(req, (size_t)hl + ll, &body);
        pthread_mutex_lock(&s->mu);
        s->sent++;
        if (st == 0)
            s->refused++;
        /* The reason of a refusal, for the test to read (stderr). */
        if (st == 503 && body)
            fprintf(stderr, "503 %s\n", body);
        if (st == 200 && body) {
            json_t *j = json_loads(body, 0, NULL);
            json_t *acc = json_object_get(j, "accepted");
            for (size_t k = 0; k < json_array_size(acc); k++) {
                fprintf(s->out, "%s\n",
                        json_string_value(json_object_get(json_array_get(acc, k), "id")));
                s->ok++;
            }
            fflush(s->out);
            json_decref(j);
        }
        pthread_mutex_unlock(&s->mu);
        free(body);
    }
    return NULL;
}

static int cmd_stream(int argc, char **argv)
{
    if (argc < 7)
        return 2;
    stream s = {.key = argv[3], .n = (unsigned)strtoul(argv[4], NULL, 10),
                .seed = argc > 7 ? (unsigned)strtoul(argv[7], NULL, 0) : 1};
    unsigned conc = (unsigned)strtoul(argv[5], NULL, 10);
    if (conc < 1 || conc > 256)
        conc = 8;
    if (!(s.out = fopen(argv[6], "a")))
        return 2;
    pthread_mutex_init(&s.mu, NULL);
    pthread_t th[256];
    for (unsigned i = 0; i < conc; i++)
        pthread_create(&th[i], NULL, stream_main, &s);
    for (unsigned i = 0; i < conc; i++)
        pthread_join(th[i], NULL);
    fclose(s.out);
    printf("sent %u ok %u\n", s.sent, s.ok);
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    FILE *f = fopen(argv[4], "r");
    if (!f)
        return 2;
    char line[256], path[512];
    unsigned missing = 0, total = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!*line)
            continue;
        total++;
        snprintf(path, sizeof path, "/api/v1/crashes/%s", line);
        char *body = NULL;
        int st = get(path, argv[3], &body);
        json_t *j = body ? json_loads(body, 0, NULL) : NULL;
        if (st != 200 || !j) {
            missing++;
            fprintf(stderr, "missing: %s (HTTP %d)\n", line, st);
        }
        json_decref(j);
        free(body);
    }
    fclose(f);
    printf("checked %u missing %u\n", total, missing);
    return missing ? 1 : 0;
}

static long long sum_counts(const char *token, const char *app)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/groups?limit=10000%s%s", app ? "&app=" : "",
             app ? app : "");
    char *body = NULL;
    if (get(path, token, &body) != 200) {
        free(body);
        return -1;
    }
    json_t *j = json_loads(body, 0, NULL);
    free(body);
    json_t *g = json_object_get(j, "groups");
    long long sum = 0;
    for (size_t i = 0; i < json_array_size(g); i++)
        sum += json_integer_value(json_object_get(json_array_get(g, i), "count"));
    json_decref(j);
    return j ? sum : -1;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "log")) {
        char buf[8192];
        size_t n = gen_log(buf, 4600, (unsigned)strtoul(argv[2], NULL, 0),
                           (unsigned)strtoul(argv[3], NULL, 0), argc > 4 ? argv[4] : "streamapp",
                           argc > 5 ? argv[5] : "1.0");
        fwrite(buf, 1, n, stdout);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: see the comment at the top of fl_post.c\n");
        return 2;
    }
    g_port = (unsigned)strtoul(argv[2], NULL, 10);
    if (!strcmp(argv[1], "raw") && argc >= 4) {
        FILE *f = fopen(argv[3], "rb");
        if (!f)
            return 2;
        static char req[1 << 20];
        size_t n = fread(req, 1, sizeof req, f);
        fclose(f);
        char *body = NULL;
        int st = http(req, n, &body);
        printf("%d\n%s\n", st, body ? body : "");
        free(body);
        return 0;
    }
    if (!strcmp(argv[1], "stream"))
        return cmd_stream(argc, argv);
    if (!strcmp(argv[1], "check"))
        return cmd_check(argc, argv);
    if (!strcmp(argv[1], "sum") && argc >= 4) {
        printf("%lld\n", sum_counts(argv[3], argc > 4 ? argv[4] : NULL));
        return 0;
    }
    if (!strcmp(argv[1], "wait") && argc >= 6) {
        long long want = strtoll(argv[4], NULL, 10), got = -1;
        time_t end = time(NULL) + strtol(argv[5], NULL, 10);
        while (time(NULL) < end) {
            got = sum_counts(argv[3], argc > 6 ? argv[6] : NULL);
            if (got == want)
                break;
            usleep(100000);
        }
        printf("%lld\n", got);
        return got == want ? 0 : 1;
    }
    fprintf(stderr, "fl_post: unknown mode\n");
    return 2;
}
