/*
 * srvutil.c - hashing, version comparison, capped decompression, time,
 * background tickers.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "fl_crashlog.h"
#include "fl_srvutil.h"
#include "fl_store.h"

#include <ctype.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

/* ---- SHA-256 (FIPS 180-4).  Used for crash ids of logs without CRASH_ID
 * and for group ids; a well-known hash keeps ids stable across engines. */

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + K256[i] + w[i];
        uint32_t S0 = ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22);
        uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + mj;
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

void fl_sha256(const void *buf, size_t len, uint8_t out[32])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = buf;
    size_t n = len;
    while (n >= 64) {
        sha256_block(h, p);
        p += 64;
        n -= 64;
    }
    uint8_t tail[128] = {0};
    memcpy(tail, p, n);
    tail[n] = 0x80;
    size_t tl = n + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++)
        tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha256_block(h, tail);
    if (tl == 128)
        sha256_block(h, tail + 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}

void fl_group_gen_id(const char *base, int64_t gen, char out[33])
{
    /* "deleted" and a NUL first: no signature's key (group.c) starts so. */
    char key[160];
    int n = snprintf(key, sizeof key, "deleted%c%.64s\n%lld", 0, base, (long long)gen);
    uint8_t h[32];
    fl_sha256(key, (size_t)n, h);
    fl_hex(h, 16, out);
}

void fl_hex(const uint8_t *p, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[p[i] >> 4];
        out[2 * i + 1] = d[p[i] & 15];
    }
    out[2 * n] = '\0';
}

int fl_random_key(char out[33])
{
    uint8_t rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return -1;
    fl_hex(rnd, sizeof rnd, out);
    return 0;
}

bool fl_secret_eq(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    for (size_t i = 0; i < la && i < lb; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* ---- versions */

int fl_vercmp(const char *a, const char *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    for (;;) {
        /* Skip separators so that "1.2" and "1-2" compare equal. */
        while (*a && !isalnum((unsigned char)*a))
            a++;
        while (*b && !isalnum((unsigned char)*b))
            b++;
        if (!*a || !*b)
            return (*a != 0) - (*b != 0);
        int da = isdigit((unsigned char)*a), db = isdigit((unsigned char)*b);
        if (da && db) {
            while (*a == '0' && isdigit((unsigned char)a[1]))
                a++;
            while (*b == '0' && isdigit((unsigned char)b[1]))
                b++;
            size_t la = 0, lb = 0;
            while (isdigit((unsigned char)a[la]))
                la++;
            while (isdigit((unsigned char)b[lb]))
                lb++;
            if (la != lb)
                return la < lb ? -1 : 1;
            int c = memcmp(a, b, la);
            if (c)
                return c < 0 ? -1 : 1;
            a += la;
            b += lb;
        } else if (da != db) {
            /* A number is newer than a word: "1.0.1" > "1.0.beta". */
            return da ? 1 : -1;
        } else {
            size_t la = 0, lb = 0;
            while (isalpha((unsigned char)a[la]))
                la++;
            while (isalpha((unsigned char)b[lb]))
                lb++;
            size_t m = la < lb ? la : lb;
            int c = memcmp(a, b, m);
            if (c)
                return c < 0 ? -1 : 1;
            if (la != lb)
                return la < lb ? -1 : 1;
            a += la;
            b += lb;
        }
    }
}

/* ---- compression */

int fl_gunzip(const void *in, size_t in_len, size_t max_out, unsigned max_ratio, char **out,
              size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    size_t cap = max_out;
    bool by_ratio = false; /* the ratio, not max_out, sets cap: which the caller says */
    if (max_ratio && in_len < SIZE_MAX / max_ratio && (size_t)max_ratio * in_len < cap) {
        cap = (size_t)max_ratio * in_len;
        by_ratio = true;
    }
    size_t alloc = in_len * 4 + 256;
    if (alloc > cap + 1)
        alloc = cap + 1;
    char *buf = malloc(alloc + 1);
    if (!buf)
        return FL_GZ_NOMEM;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 15 + 32) != Z_OK) { /* +32: gzip or zlib header */
        free(buf);
        return FL_GZ_NOMEM;
    }
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)in_len;
    size_t used = 0;
    int rc = FL_GZ_BAD;
    for (;;) {
        if (used == alloc) {
            if (alloc > cap) {
                rc = by_ratio ? FL_GZ_RATIO : FL_GZ_TOO_BIG;
                break;
            }
            size_t na = alloc * 2 > cap + 1 ? cap + 1 : alloc * 2;
            char *nb = realloc(buf, na + 1);
            if (!nb) {
                rc = FL_GZ_NOMEM;
                break;
            }
            buf = nb;
            alloc = na;
        }
        zs.next_out = (Bytef *)buf + used;
        zs.avail_out = (uInt)(alloc - used);
        int z = inflate(&zs, Z_NO_FLUSH);
        used = alloc - zs.avail_out;
        if (used > cap) {
            rc = by_ratio ? FL_GZ_RATIO : FL_GZ_TOO_BIG;
            break;
        }
        if (z == Z_STREAM_END) {
            rc = zs.avail_in == 0 ? FL_GZ_OK : FL_GZ_BAD; /* trailing junk */
            break;
        }
        if (z == Z_BUF_ERROR && zs.avail_in == 0) {
            rc = FL_GZ_BAD; /* truncated */
            break;
        }
        if (z != Z_OK && z != Z_BUF_ERROR) {
            rc = z == Z_MEM_ERROR ? FL_GZ_NOMEM : FL_GZ_BAD;
            break;
        }
    }
    inflateEnd(&zs);
    if (rc != FL_GZ_OK) {
        free(buf);
        return rc;
    }
    buf[used] = '\0';
    *out = buf;
    *out_len = used;
    return FL_GZ_OK;
}

/* A compression context per thread: creating one per call (what
 * ZSTD_compress does) costs more than compressing a 4 KiB log. */
static pthread_key_t cctx_key;
static pthread_once_t cctx_once = PTHREAD_ONCE_INIT;

static void cctx_free(void *p)
{
    ZSTD_freeCCtx(p);
}

static void cctx_init(void)
{
    pthread_key_create(&cctx_key, cctx_free);
}

static ZSTD_CCtx *thread_cctx(void)
{
    pthread_once(&cctx_once, cctx_init);
    ZSTD_CCtx *cx = pthread_getspecific(cctx_key);
    if (!cx && (cx = ZSTD_createCCtx()))
        pthread_setspecific(cctx_key, cx);
    return cx;
}

int fl_raw_frame(fl_ingest_item *const *items, size_t n, size_t total, char **buf, size_t *len,
                 size_t *cap)
{
    ZSTD_CCtx *cx = thread_cctx();
    if (!cx)
        return -1;
    size_t bound = ZSTD_compressBound(total);
    if (bound > *cap - *len) {
        size_t nc = *len + bound;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    ZSTD_CCtx_reset(cx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(cx, ZSTD_c_compressionLevel, FL_RAW_ZSTD_LEVEL);
    /* Small match tables: crash logs repeat each other within a few KiB,
     * and two 16 KiB tables stay in cache where level 3's default 768 KiB do
     * not -- ~10 % faster on a batch of logs, and no larger. */
    ZSTD_CCtx_setParameter(cx, ZSTD_c_hashLog, 12);
    ZSTD_CCtx_setParameter(cx, ZSTD_c_chainLog, 12);
    ZSTD_CCtx_setPledgedSrcSize(cx, total);
    ZSTD_outBuffer out = {*buf + *len, *cap - *len, 0};
    for (size_t i = 0; i < n; i++) {
        ZSTD_inBuffer in = {items[i]->raw, items[i]->raw_len, 0};
        while (in.pos < in.size)
            if (ZSTD_isError(ZSTD_compressStream2(cx, &out, &in, ZSTD_e_continue)))
                return -1;
    }
    ZSTD_inBuffer none = {NULL, 0, 0};
    for (;;) {
        size_t left = ZSTD_compressStream2(cx, &out, &none, ZSTD_e_end);
        if (ZSTD_isError(left))
            return -1; /* also: the pieces did not add up to total */
        if (left == 0)
            break;
        if (out.pos == out.size)
            return -1; /* cannot happen with ZSTD_compressBound() room */
    }
    *len += out.pos;
    return 0;
}

int fl_zstd(const void *in, size_t len, int level, void **out, size_t *out_len)
{
    ZSTD_CCtx *cx = thread_cctx();
    if (!cx)
        return -1;
    size_t bound = ZSTD_compressBound(len);
    void *buf = malloc(bound);
    if (!buf)
        return -1;
    size_t n = ZSTD_compressCCtx(cx, buf, bound, in, len, level);
    if (ZSTD_isError(n)) {
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = n;
    return 0;
}

int fl_unzstd(const void *in, size_t len, size_t max_out, char **out, size_t *out_len)
{
    /* The sum over the frames (a raw-log chunk is several, see
     * fl_raw_frame), each of which must say its size. */
    unsigned long long n = 0;
    for (size_t at = 0; at < len;) {
        unsigned long long fn = ZSTD_getFrameContentSize((const char *)in + at, len - at);
        size_t fz = ZSTD_findFrameCompressedSize((const char *)in + at, len - at);
        if (fn == ZSTD_CONTENTSIZE_ERROR || fn == ZSTD_CONTENTSIZE_UNKNOWN || ZSTD_isError(fz) ||
            fn > max_out - n)
            return -1;
        n += fn;
        at += fz;
    }
    if (len == 0)
        return -1;
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        return -1;
    size_t got = ZSTD_decompress(buf, (size_t)n, in, len);
    if (ZSTD_isError(got) || got != n) {
        free(buf);
        return -1;
    }
    buf[got] = '\0';
    *out = buf;
    *out_len = got;
    return 0;
}

/* ---- time */

int64_t fl_now(void)
{
    return (int64_t)time(NULL);
}

uint64_t fl_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int fl_cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    int rc = pthread_condattr_init(&ca);
    if (rc)
        return rc;
    if (!(rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)))
        rc = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

int fl_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms)
{
    uint64_t at = fl_mono_ns() + ms * 1000000u;
    struct timespec ts = {.tv_sec = (time_t)(at / 1000000000u),
                          .tv_nsec = (long)(at % 1000000000u)};
    return pthread_cond_timedwait(cv, mu, &ts);
}

int fl_ticker_start(fl_ticker *t, void *(*fn)(void *), void *arg, const char *name)
{
    t->stop = false;
    pthread_mutex_init(&t->mu, NULL);
    int e = fl_cond_init_mono(&t->cv);
    if (!e && (e = pthread_create(&t->th, NULL, fn, arg)))
        pthread_cond_destroy(&t->cv);
    if (e) {
        pthread_mutex_destroy(&t->mu);
        return e;
    }
    pthread_setname_np(t->th, name);
    return 0;
}

bool fl_ticker_wait(fl_ticker *t, uint64_t ms)
{
    pthread_mutex_lock(&t->mu);
    if (!t->stop)
        fl_cond_wait_ms(&t->cv, &t->mu, ms);
    bool go = !t->stop;
    pthread_mutex_unlock(&t->mu);
    return go;
}

bool fl_ticker_stopping(fl_ticker *t)
{
    pthread_mutex_lock(&t->mu);
    bool s = t->stop;
    pthread_mutex_unlock(&t->mu);
    return s;
}

void fl_ticker_stop(fl_ticker *t)
{
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->th, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
}

void fl_iso_time(int64_t t, char *out)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- the log */

/* Set once at start, read by every thread after. */
static bool log_stamp_stdout, log_stamp_other;

int fl_log_time_parse(const char *s, int *mode)
{
    static const char *const names[] = {"auto", "always", "never"};
    for (int i = 0; s && i < 3; i++)
        if (!strcmp(s, names[i])) {
            *mode = i; /* the order of FL_LOG_TIME_* */
            return 0;
        }
    return -1;
}

bool fl_log_is_journal(int fd)
{
    const char *js = getenv("JOURNAL_STREAM");
    struct stat st;
    char *end;
    if (!js || !*js || fstat(fd, &st))
        return false;
    errno = 0;
    unsigned long long dev = strtoull(js, &end, 10);
    if (errno || end == js || *end != ':')
        return false;
    const char *p = end + 1;
    unsigned long long ino = strtoull(p, &end, 10);
    return !errno && end != p && !*end && dev == (unsigned long long)st.st_dev &&
           ino == (unsigned long long)st.st_ino;
}

void fl_log_set_time(int mode)
{
    log_stamp_stdout = mode == FL_LOG_TIME_ALWAYS ||
                       (mode == FL_LOG_TIME_AUTO && !fl_log_is_journal(STDOUT_FILENO));
    log_stamp_other = mode == FL_LOG_TIME_ALWAYS ||
                      (mode == FL_LOG_TIME_AUTO && !fl_log_is_journal(STDERR_FILENO));
}

void fl_log(FILE *f, const char *fmt, ...)
{
    if (!f)
        return;
    int fd = fileno(f);
    char small[1024], *line = small;
    size_t n = 0;
    if (fd == STDOUT_FILENO ? log_stamp_stdout : log_stamp_other) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = strftime(small, sizeof small, "%Y-%m-%dT%H:%M:%S", &tm);
        n += (size_t)snprintf(small + n, sizeof small - n, ".%03ldZ ", ts.tv_nsec / 1000000);
    }
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(small + n, sizeof small - n - 1, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    if ((size_t)len >= sizeof small - n - 1) {
        /* Longer than most: formatted again into a buffer of its size
         * (an error message that quotes a long path or URL). */
        char *big = malloc(n + (size_t)len + 2);
        if (big) {
            memcpy(big, small, n);
            va_start(ap, fmt);
            vsnprintf(big + n, (size_t)len + 1, fmt, ap);
            va_end(ap);
            line = big;
        } else {
            len = (int)(sizeof small - n - 2); /* cut short rather than lost */
        }
    }
    n += (size_t)len;
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            line[i] = ' ';
    line[n++] = '\n';
    if (fd >= 0) {
        /* Past stdio: what it holds of f first, then the line in one
         * write. */
        fflush(f);
        for (size_t off = 0; off < n;) {
            ssize_t w = write(fd, line + off, n - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
    } else {
        fwrite(line, 1, n, f);
        fflush(f);
    }
    if (line != small)
        free(line);
}

void fl_iso_day(int64_t t, char *out)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 11, "%Y-%m-%d", &tm);
}

json_t *fl_json_text(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t bad = 0;
    for (size_t i = 0, k; i < n; i += k ? k : 1)
        bad += !(k = fl_utf8_seq(u + i, n - i));
    if (!bad)
        return json_stringn_nocheck(s, n);
    char *t = malloc(n + 2 * bad), *w = t; /* each bad byte: 3 bytes for 1 */
    if (!t)
        return NULL;
    for (size_t i = 0, k; i < n; i += k ? k : 1) {
        if ((k = fl_utf8_seq(u + i, n - i))) {
            memcpy(w, s + i, k);
            w += k;
        } else {
            memcpy(w, "\xef\xbf\xbd", 3);
            w += 3;
        }
    }
    json_t *j = json_stringn_nocheck(t, (size_t)(w - t));
    free(t);
    return j;
}

void fl_release_heap(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}
