/*
 * test_trace.c - the flight recorder, from the public API.
 *
 * The formatter is checked against the C library's snprintf on the same
 * format and arguments; the ring under wrap-around and with writers and a
 * reader racing; breadcrumbs and state; a trace site that went away with
 * its library; and what a crash writes into the log.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "faultline.h"
#include "fl_trace.h" /* the ring, for the torn-record test */

/* The recorder dumped to memory, as one string. */
static char *dump_text(int *nlines)
{
    int fd = memfd_create("trace", MFD_CLOEXEC);
    assert_true(fd >= 0);
    int n = faultline_trace_dump_text(fd);
    assert_true(n >= 0);
    if (nlines)
        *nlines = n;
    off_t len = lseek(fd, 0, SEEK_END);
    char *b = malloc((size_t)len + 1);
    assert_non_null(b);
    assert_int_equal(pread(fd, b, (size_t)len, 0), len);
    b[len] = '\0';
    close(fd);
    return b;
}

/* The text of the newest TRACE line (after "TRACE time tid "). */
static char *last_trace_text(void)
{
    char *all = dump_text(NULL);
    char *last = NULL;
    for (char *p = all; (p = strstr(p, "TRACE ")); p++)
        if (p == all || p[-1] == '\n')
            last = p;
    assert_non_null(last);
    char *end = strchr(last, '\n');
    assert_non_null(end);
    *end = '\0';
    char *text = last + 6;
    for (int i = 0; i < 2; i++) { /* time, tid */
        text = strchr(text, ' ');
        assert_non_null(text);
        text++;
    }
    char *r = strdup(text);
    free(all);
    return r;
}

static int nchecked;

/* The recorder's text for a format must be what snprintf makes of it. */
#define SAME(...)                                                                                  \
    do {                                                                                           \
        char want_[4096];                                                                          \
        snprintf(want_, sizeof want_, __VA_ARGS__);                                                \
        FAULTLINE_TRACE(__VA_ARGS__);                                                              \
        char *got_ = last_trace_text();                                                            \
        if (strcmp(got_, want_))                                                                   \
            fail_msg("line %d: got \"%s\", snprintf \"%s\"", __LINE__, got_, want_);               \
        free(got_);                                                                                \
        nchecked++;                                                                                \
    } while (0)

static void integers(void **st)
{
    (void)st;
    SAME("plain text, no conversions");
    SAME("%d %i %d %d", 0, -1, INT_MAX, INT_MIN);
    SAME("%u %u %o %x %X", 0u, UINT_MAX, 8u, 0xdeadbeefu, 0xdeadbeefu);
    SAME("%ld %lu %lld %llu %lx", LONG_MIN, ULONG_MAX, LLONG_MIN, ULLONG_MAX, 0x123456789abcUL);
    SAME("%hd %hu %hhd %hhu %hx", (short)-3, (unsigned short)65535, (signed char)-128,
         (unsigned char)255, (unsigned short)0xbeef);
    SAME("%zu %zd %jd %ju %td", (size_t)12345, (ssize_t)-5, (intmax_t)-9, (uintmax_t)9,
         (ptrdiff_t)-77);
    SAME("[%5d] [%-5d] [%05d] [%+d] [% d] [%+d] [% 5d]", 42, 42, 42, 42, 42, -42, 42);
    SAME("[%.3d] [%.0d] [%.0d] [%8.3d] [%-8.3d]", 7, 0, 1, -7, 7);
    SAME("[%#o] [%#o] [%#x] [%#X] [%#x] [%#.0o] [%#8x] [%#08x]", 8u, 0u, 255u, 255u, 0u, 0u, 255u,
         255u);
    SAME("[%*d] [%-*d] [%*d] [%.*d]", 6, 1, 4, 2, -6, 3, 4, 5);
    SAME("%c%c%c [%3c] [%-3c]", 'a', 'b', 'c', 'x', 'y');
    SAME("100%% done, %d%%", 5);
    SAME("%s", "only a string");
    short sh = -12;
    unsigned char uc = 200;
    long long ll = -1234567890123LL;
    SAME("%d %d %lld", sh, uc, ll);
}

static void strings_and_pointers(void **st)
{
    (void)st;
    const char *s = "hello, world";
    SAME("[%s] [%20s] [%-20s] [%.5s] [%20.5s] [%-20.5s] [%.0s]", s, s, s, s, s, s, s);
    SAME("[%.*s] [%*s]", 3, s, 15, s);
    int x;
    SAME("%p %p", (void *)&x, (void *)s);
    SAME("[%20p] [%-20p]", (void *)&x, (void *)&x);
    SAME("%p", (void *)NULL);
    char utf8[] = "caf\xc3\xa9 \xe2\x82\xac";
    SAME("%s|%.4s", utf8, utf8);
    /* A format longer than 512 bytes is formatted whole: its conversions
     * past that byte were once left out without a word. */
#define X64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    SAME(X64 X64 X64 X64 X64 X64 X64 X64 X64 X64 " [%d] [%s]", 42, s);
#undef X64
}

static void floats(void **st)
{
    (void)st;
    static const double v[] = {0.0,
                               1.0,
                               0.1,
                               0.5,
                               1.5,
                               2.5,
                               0.95,
                               0.125,
                               0.375,
                               99.95,
                               3.141592653589793,
                               123456.789,
                               1e-5,
                               0.000123456,
                               9.9999999,
                               999999.5,
                               1e15 + 0.3,
                               6.02214076e23,
                               1.602176634e-19,
                               1e100,
                               1e-100,
                               DBL_MAX,
                               DBL_MIN,
                               4.9e-324,
                               12345678901234.5};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        for (int sign = 0; sign < 2; sign++) {
            double d = sign ? -v[i] : v[i];
            if (v[i] < 1e18) {
                SAME("%f %.0f %.1f %.3f %.10f", d, d, d, d, d);
                SAME("[%12.4f] [%-12.2f] [%012.3f] [%+.2f] [% .2f] [%#.0f]", d, d, d, d, d, d);
            }
            SAME("%e %.0e %.3e %E %.10e", d, d, d, d, d);
            SAME("%g %.3g %.10g %G %.0g", d, d, d, d, d);
            SAME("%.14e %.15g", d, d); /* 15 digits: exact everywhere */
            /* 16 and 17 digits are exact within these bounds (trace.c). */
            if (v[i] == 0 || (v[i] > 1e-20 && v[i] < 1e20))
                SAME("%.16g %.15e", d, d);
            if (v[i] == 0 || (v[i] > 1e-20 && v[i] < 1e16))
                SAME("%.17g %.16e", d, d);
            SAME("[%15.3e] [%-15g] [%+g] [%015.4g]", d, d, d, d);
        }
    }
    /* '#' keeps the point and, for %g, the zeros (not on values whose
     * rounding carries into a new digit: glibc prints 1.e+06 there). */
    SAME("%#g %#g %#g %#.3g %#.0e %#.0f", 1.5, 100.0, 0.0001, 2.0, 3.0, 4.0);
    float f = 1.25f;
    long double ld = 2.75L;
    SAME("%f %g %Lf %Lg", f, f, ld, ld);
    double inf = 1.0 / 0.0, nan = 0.0 / 0.0;
    SAME("%f %F %e %g [%8f] [%-8F]", inf, inf, -inf, -inf, inf, -inf);
    SAME("%f %F %G", nan, nan, nan);
    print_message("%d formats compared with snprintf\n", nchecked);
}

/* What printf leaves undefined gets something sensible, never a crash. */
static void mismatches(void **st)
{
    (void)st;
    char text[64];
    /* Fewer arguments than conversions: the macro would not compile, so the
     * site is built by hand. */
    static const struct faultline_trace_site two = {"a=%d b=%d c=%s", "x.c", 1, 1, {'i', 0}};
    faultline__trace(&two, two.fmt, 5);
    char *got = last_trace_text();
    assert_string_equal(got, "a=5 b=<missing> c=<missing>");
    free(got);
    /* A string conversion given a number prints the number as a pointer;
     * a number conversion given a double prints the double. */
    static const struct faultline_trace_site wrong = {"%s %d %f", "x.c", 2, 3, {'i', 'd', 'i', 0}};
    faultline__trace(&wrong, wrong.fmt, 255, 2.5, 7);
    got = last_trace_text();
    assert_string_equal(got, "0xff 2.5 7.000000");
    free(got);
    /* %n writes nothing; an unknown conversion stays as it was. */
    static const struct faultline_trace_site odd = {"x%ny %k %", "x.c", 3, 1, {'p', 0}};
    faultline__trace(&odd, odd.fmt, (void *)text);
    got = last_trace_text();
    assert_string_equal(got, "xy %k %");
    free(got);
}

/* A width or precision of more digits than a long holds is cut to 1024
 * like any over 1024: the digits once overflowed a long (undefined; a
 * negative result dropped the width, or made the precision none).
 * Found by fuzz_trace_format (fuzz/corpus/trace_format/width-overflow). */
static void huge_width_and_precision(void **st)
{
    (void)st;
    static const struct faultline_trace_site huge = {
        "[%9999999999999999999d] [%.9999999999999999999d] [%-9999999999999999999.2s]",
        "x.c",
        4,
        3,
        {'i', 'i', 's', 0}};
    static const struct faultline_trace_site cut = {
        "[%1024d] [%.1024d] [%-1024.2s]", "x.c", 5, 3, {'i', 'i', 's', 0}};
    faultline__trace(&huge, huge.fmt, 5, 6, "xyz");
    char *got = last_trace_text();
    faultline__trace(&cut, cut.fmt, 5, 6, "xyz");
    char *want = last_trace_text();
    assert_string_equal(got, want);
    assert_true(strlen(want) > 1024);
    free(got);
    free(want);
}

static void strings_are_copied(void **st)
{
    (void)st;
    char buf[600];
    strcpy(buf, "before");
    FAULTLINE_TRACE("value %s", buf);
    strcpy(buf, "after!");
    char *got = last_trace_text();
    assert_string_equal(got, "value before");
    free(got);
    /* A long string keeps its first FAULTLINE_TRACE_MAX_STR bytes; NULL is
     * "(null)"; control bytes are escaped so the line stays one line. */
    memset(buf, 'z', sizeof buf - 1);
    buf[sizeof buf - 1] = '\0';
    FAULTLINE_TRACE("%s|", buf);
    got = last_trace_text();
    assert_int_equal(strlen(got), FAULTLINE_TRACE_MAX_STR + 1);
    assert_int_equal(got[FAULTLINE_TRACE_MAX_STR], '|');
    free(got);
    const char *nul = NULL;
    FAULTLINE_TRACE("[%s] [%s]", nul, "two\nlines\t");
    got = last_trace_text();
    assert_string_equal(got, "[(null)] [two\\nlines\t]");
    free(got);
}

/* Parses "TRACE t tid seq N" lines: they must be contiguous, in order. */
static void wraps_around(void **st)
{
    (void)st;
    enum { N = 200000 };
    for (int i = 0; i < N; i++)
        FAULTLINE_TRACE("seq %d of %s", i, "the wrap test");
    int nlines;
    char *all = dump_text(&nlines);
    long first = -1, prev = -1, count = 0;
    for (char *p = all; (p = strstr(p, "\nTRACE ")); p++) {
        char *q = strstr(p, " seq ");
        if (!q || q > strchr(p + 1, '\n'))
            continue;
        long v = strtol(q + 5, NULL, 10);
        assert_true(strstr(q, " of the wrap test\n") == strchr(q, '\n') - 17);
        if (first < 0)
            first = v;
        else
            assert_int_equal(v, prev + 1);
        prev = v;
        count++;
    }
    free(all);
    assert_int_equal(prev, N - 1);
    /* 256 KiB of ~64-byte records: thousands kept, the oldest gone. */
    assert_true(count > 2000);
    assert_true(first > 0);
}

/* A record whose words changed after its stamp was written -- what a
 * writer that lost the CPU for a whole lap of the ring does to the record
 * that took its space -- is dropped, and only it. */
static void torn_record(void **st)
{
    (void)st;
    FAULTLINE_TRACE("torn test: before");
    uint64_t pos = __atomic_load_n(&fl_traces.head, __ATOMIC_SEQ_CST);
    FAULTLINE_TRACE("torn test: %s %d", "victim", 7);
    FAULTLINE_TRACE("torn test: after");
    uint64_t *w = fl_traces.w + (pos & fl_traces.mask);
    if ((w[FL_W_META] >> 32) != (pos & 0xffffffff)) { /* skipped the ring's end */
        pos += fl_traces.mask + 1 - (pos & fl_traces.mask);
        w = fl_traces.w;
    }
    assert_int_equal(w[FL_W_META] >> 32, pos & 0xffffffff);
    char *all = dump_text(NULL);
    assert_non_null(strstr(all, " torn test: victim 7\n"));
    free(all);
    for (unsigned i = FL_W_META; i < (w[FL_W_META] & 0xffff); i++) {
        w[i] ^= 1ull << (i % 64); /* one bit of one word at a time */
        all = dump_text(NULL);
        assert_null(strstr(all, " torn test: victim 7\n"));
        assert_non_null(strstr(all, " torn test: before\n"));
        assert_non_null(strstr(all, " torn test: after\n"));
        free(all);
        w[i] ^= 1ull << (i % 64);
    }
    all = dump_text(NULL);
    assert_non_null(strstr(all, " torn test: victim 7\n"));
    free(all);
}

/* Writers on 4 threads while a reader dumps again and again: every line
 * the reader gets is one some writer wrote, whole. */
enum { WRITERS = 4, PER_WRITER = 100000 };
static volatile int writers_done;

static void *writer(void *arg)
{
    long t = (long)arg;
    char word[32];
    for (long i = 0; i < PER_WRITER; i++) {
        snprintf(word, sizeof word, "w%ld-%ld", t, i * 7);
        FAULTLINE_TRACE("t=%ld i=%ld check=%ld word=%s", t, i, t * 1000003 + i, word);
    }
    return NULL;
}

static int check_line(const char *line)
{
    long t, i, c, i7, t2;
    if (strncmp(line, "TRACE ", 6))
        return 1; /* state, breadcrumbs */
    const char *p = strstr(line, "t=");
    if (!p || !strncmp(p, "t=%", 3))
        return 1;
    if (sscanf(p, "t=%ld i=%ld check=%ld word=w%ld-%ld", &t, &i, &c, &t2, &i7) != 5)
        return strstr(line, " t=") ? 0 : 1; /* a line of another test */
    return c == t * 1000003 + i && t2 == t && i7 == i * 7;
}

static void *reader(void *arg)
{
    long *bad = arg;
    while (!__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE)) {
        char *all = dump_text(NULL);
        for (char *line = strtok(all, "\n"); line; line = strtok(NULL, "\n"))
            if (!check_line(line))
                (*bad)++;
        free(all);
    }
    return NULL;
}

static void concurrent(void **st)
{
    (void)st;
    pthread_t w[WRITERS], r;
    long bad = 0;
    assert_int_equal(pthread_create(&r, NULL, reader, &bad), 0);
    for (long t = 0; t < WRITERS; t++)
        assert_int_equal(pthread_create(&w[t], NULL, writer, (void *)t), 0);
    for (int t = 0; t < WRITERS; t++)
        pthread_join(w[t], NULL);
    __atomic_store_n(&writers_done, 1, __ATOMIC_RELEASE);
    pthread_join(r, NULL);
    assert_int_equal(bad, 0);
    /* At rest: each writer's newest events are there, in order. */
    char *all = dump_text(NULL);
    long last[WRITERS];
    for (int t = 0; t < WRITERS; t++)
        last[t] = -1;
    long seen = 0;
    for (char *line = strtok(all, "\n"); line; line = strtok(NULL, "\n")) {
        long t, i;
        const char *p = strstr(line, " t=");
        if (!p || sscanf(p, " t=%ld i=%ld", &t, &i) != 2)
            continue;
        assert_int_equal(check_line(line), 1);
        assert_true(t >= 0 && t < WRITERS && i > last[t]);
        last[t] = i;
        seen++;
    }
    free(all);
    assert_true(seen > 1000);
    /* A writer that finished early may have been pushed out by the others;
     * the one that finished last is there up to its last event. */
    int complete = 0;
    for (int t = 0; t < WRITERS; t++)
        complete += last[t] == PER_WRITER - 1;
    assert_true(complete >= 1);
}

static void breadcrumbs(void **st)
{
    (void)st;
    faultline_breadcrumb("ui click", "pressed \"OK\"\non the dialog");
    faultline_breadcrumb(NULL, NULL);
    faultline_breadcrumb("net", "GET /api/v1 -> 200");
    /* Trace events do not push breadcrumbs out: they have their own ring. */
    for (int i = 0; i < 50000; i++)
        FAULTLINE_TRACE("flood %d", i);
    char *all = dump_text(NULL);
    char *a = strstr(all, " ui_click pressed \"OK\"\\non the dialog\n");
    char *b = strstr(all, " - \n");
    char *c = strstr(all, " net GET /api/v1 -> 200\n");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_true(a < b && b < c);
    /* Each is a BREADCRUMB line with a time in milliseconds of now. */
    char *line = a;
    while (line > all && line[-1] != '\n')
        line--;
    unsigned long long ms;
    assert_int_equal(sscanf(line, "BREADCRUMB %llu ", &ms), 1);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    unsigned long long now_ms = (unsigned long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    assert_true(ms <= now_ms && now_ms - ms < 60000);
    free(all);
}

static int count_lines(const char *all, const char *prefix)
{
    int n = 0;
    size_t pl = strlen(prefix);
    for (const char *p = all; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += !strncmp(p, prefix, pl);
    return n;
}

static void state(void **st)
{
    (void)st;
    assert_int_equal(faultline_set_state(NULL, "x"), 0);
    assert_int_equal(faultline_set_state("", "x"), 0);
    assert_int_equal(faultline_set_state("user", "alice"), 1);
    assert_int_equal(faultline_set_state("screen", "main"), 1);
    assert_int_equal(faultline_set_state("user", "bob"), 1);
    char *all = dump_text(NULL);
    assert_non_null(strstr(all, "STATE_KEY user\nSTATE_VALUE bob\n"));
    assert_non_null(strstr(all, "STATE_KEY screen\nSTATE_VALUE main\n"));
    assert_null(strstr(all, "alice"));
    assert_int_equal(count_lines(all, "STATE_KEY "), 2);
    free(all);
    /* Remove one; removing a key that is not there is fine. */
    assert_int_equal(faultline_set_state("screen", NULL), 1);
    assert_int_equal(faultline_set_state("never set", NULL), 1);
    /* The table holds FAULTLINE_STATE_MAX keys; a removal makes room. */
    char key[32];
    for (int i = 1; i < FAULTLINE_STATE_MAX; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(faultline_set_state(key, "v"), 1);
    }
    assert_int_equal(faultline_set_state("one too many", "v"), 0);
    assert_int_equal(faultline_set_state("k1", "changed"), 1); /* existing: fine */
    assert_int_equal(faultline_set_state("k2", NULL), 1);
    assert_int_equal(faultline_set_state("one too many", "fits now"), 1);
    /* Long keys and values are cut, not refused. */
    char longv[1000];
    memset(longv, 'v', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    assert_int_equal(faultline_set_state("k3", longv), 1);
    all = dump_text(NULL);
    assert_int_equal(count_lines(all, "STATE_KEY "), FAULTLINE_STATE_MAX);
    assert_non_null(strstr(all, "STATE_KEY one too many\nSTATE_VALUE fits now\n"));
    assert_non_null(strstr(all, "STATE_KEY k1\nSTATE_VALUE changed\n"));
    char *v3 = strstr(all, "STATE_KEY k3\nSTATE_VALUE ");
    assert_non_null(v3);
    assert_int_equal(strcspn(v3 + 25, "\n"), 255);
    free(all);
    for (int i = 1; i < FAULTLINE_STATE_MAX; i++) {
        snprintf(key, sizeof key, "k%d", i);
        faultline_set_state(key, NULL);
    }
    faultline_set_state("one too many", NULL);
    faultline_set_state("user", NULL);
}

/* A signal handler that sets state while its thread was inside
 * faultline_set_state must not wait for ever (ctest's timeout would catch
 * it); the handlers' calls mostly succeed. */
static volatile int setter_stop;
static int handler_ok, handler_refused;
static void state_handler(int sig)
{
    (void)sig;
    if (faultline_set_state("from handler", "yes"))
        __atomic_add_fetch(&handler_ok, 1, __ATOMIC_SEQ_CST);
    else
        __atomic_add_fetch(&handler_refused, 1, __ATOMIC_SEQ_CST);
}

static void *setter(void *arg)
{
    (void)arg;
    char v[16];
    for (int i = 0; !setter_stop; i++) {
        snprintf(v, sizeof v, "%d", i);
        faultline_set_state("busy", v);
    }
    return NULL;
}

static void state_in_signal_handler(void **st)
{
    (void)st;
    struct sigaction sa = {.sa_handler = state_handler};
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, setter, NULL), 0);
    for (int i = 0; i < 300; i++) {
        /* One at a time: a second signal sent while the first is pending
         * would merge with it. */
        pthread_kill(th, SIGUSR1);
        for (int w = 0; w < 100000 && __atomic_load_n(&handler_ok, __ATOMIC_SEQ_CST) +
                                              __atomic_load_n(&handler_refused, __ATOMIC_SEQ_CST) <=
                                          i;
             w++)
            usleep(10);
    }
    setter_stop = 1;
    pthread_join(th, NULL);
    assert_int_equal(handler_ok + handler_refused, 300);
    assert_true(handler_ok > 0);
    char *all = dump_text(NULL);
    assert_non_null(strstr(all, "STATE_KEY from handler\nSTATE_VALUE yes\n"));
    free(all);
    faultline_set_state("from handler", NULL);
    faultline_set_state("busy", NULL);
    signal(SIGUSR1, SIG_DFL);
}

static void dump_errors(void **st)
{
    (void)st;
    FAULTLINE_TRACE("something to dump");
    assert_int_equal(faultline_trace_dump_text(-1), -1);
    assert_int_equal(faultline_trace_dump(-1), -1);
    int p[2];
    assert_int_equal(pipe(p), 0);
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(faultline_trace_dump_text(p[1]), -1);
    assert_int_equal(faultline_trace_dump(p[1]), -1);
    close(p[1]);
}

/* dlopen()s lib and returns its tracelib_trace (*h: its handle). */
static void (*traced_fn(const char *lib, void **h))(int)
{
    *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!*h)
        fail_msg("dlopen: %s", dlerror());
    void (*fn)(int) = (void (*)(int))dlsym(*h, "tracelib_trace");
    assert_non_null(fn);
    return fn;
}

/* The site and format of a dlclose()d library are gone: the dump says so
 * and goes on. */
static void unloaded_site(void **st)
{
    (void)st;
    void *h;
    void (*fn)(int) = traced_fn(FL_TEST_TRACELIB, &h);
    fn(41);
    char *got = last_trace_text();
    assert_string_equal(got, "from the library 41");
    free(got);
    fn(42);
    assert_int_equal(dlclose(h), 0);
    FAULTLINE_TRACE("after the library");
    char *all = dump_text(NULL);
    char *gone = strstr(all, " <trace site unreadable>\n");
    assert_non_null(gone);
    assert_true(gone < strstr(all, " after the library\n"));
    free(all);
}

/* A library traced, was dlclose()d, and another one (other formats) was
 * loaded where it was: the first one's events say their site is gone
 * rather than take the second one's formats, and the second one's own
 * events are formatted as usual. */
static void replaced_site(void **st)
{
    (void)st;
    void *h;
    void (*fn)(int) = traced_fn(FL_TEST_TRACELIB, &h);
    fn(43);
    assert_int_equal(dlclose(h), 0);
    void *h2;
    void (*fn2)(int) = traced_fn(FL_TEST_TRACELIB2, &h2);
    if (fn2 != fn)
        fprintf(stderr, "replaced_site: not loaded at the same address, a weaker test\n");
    fn2(44);
    char *all = dump_text(NULL);
    assert_null(strstr(all, "WRONG FORMAT of the second library 43"));
    char *gone = strstr(all, " <trace site unreadable>\n");
    char *second = strstr(all, " WRONG FORMAT of the second library 44\n");
    assert_non_null(gone);
    assert_non_null(second);
    assert_true(gone < second);
    free(all);
    assert_int_equal(dlclose(h2), 0);
}

/* Dumps while another thread loads, traces from and dlclose()s a library:
 * its sites and formats may be unmapped between any two reads of a dump,
 * which must then say "unreadable", never fault.  Both dumps, the trace-ID
 * one refreshing the object table as it goes.  In a child (installed, so
 * the refresh runs), for 2 s; a crash is its exit status. */
static volatile int race_stop;

static void *race_dumper(void *arg)
{
    int fd = *(int *)arg;
    for (unsigned i = 0; !__atomic_load_n(&race_stop, __ATOMIC_RELAXED); i++)
        if ((i & 1 ? faultline_trace_dump(fd) : faultline_trace_dump_text(fd)) < 0)
            return (void *)1;
    return NULL;
}

static void dump_races_dlclose(void **st)
{
    (void)st;
    char spool[] = "/tmp/fl-trace-race.XXXXXX";
    assert_non_null(mkdtemp(spool));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("FAULTLINE_SPOOL", spool, 1);
        if (!faultline_install("tracetest", "1.0", NULL))
            _exit(3);
        int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        pthread_t t;
        if (fd < 0 || pthread_create(&t, NULL, race_dumper, &fd))
            _exit(4);
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            void *h = dlopen(FL_TEST_TRACELIB, RTLD_NOW | RTLD_LOCAL);
            void (*fn)(int) = h ? (void (*)(int))dlsym(h, "tracelib_trace") : NULL;
            if (!fn)
                _exit(5);
            for (int i = 0; i < 100; i++)
                fn(i);
            dlclose(h);
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) < 2000000000L);
        __atomic_store_n(&race_stop, 1, __ATOMIC_RELAXED);
        void *rc;
        pthread_join(t, &rc);
        _exit(rc ? 6 : 0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    /* The crash log a crash would have left. */
    DIR *d = opendir(spool);
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", spool, e->d_name);
        if (e->d_name[0] != '.')
            unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(spool);
    if (!WIFEXITED(status))
        fail_msg("the child died of signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* After faultline_install(), a hard-coded string argument -- in a
 * read-only segment of the object that holds the trace site -- is kept by
 * address (the reference's pointer to the hard-coded string), so its
 * record is smaller and the ring holds more events; a string anywhere
 * else is copied as before.  In a child, since install is for good. */
static char writable[] = "writable data";

/* The main program's build id bytes, found as the library finds them. */
static int note_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const void *)p;
            const char *desc = p + sizeof *nh + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID) {
                *(char **)data = (char *)desc;
                return 1;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 1; /* the main program only: it comes first */
}

static uint64_t words_of(void (*trace)(const char *), const char *s)
{
    uint64_t h0 = __atomic_load_n(&fl_traces.head, __ATOMIC_SEQ_CST);
    trace(s);
    return __atomic_load_n(&fl_traces.head, __ATOMIC_SEQ_CST) - h0;
}

static void trace_s(const char *s)
{
    FAULTLINE_TRACE("kept: %s", s);
}

#define CHILD_CHECK(c)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "hard_coded_strings: line %d: %s\n", __LINE__, #c);                    \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

static void hard_coded_strings(void **st)
{
    (void)st;
    static const char lit[] = "a hard-coded string, forty bytes or more long";
    static const char *const table[] = {"first", "second entry of a table"};
    char spool[] = "/tmp/fl-trace-static.XXXXXX";
    assert_non_null(mkdtemp(spool));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* A ring of our own events, starting at its first word: no record
         * meets the ring's end (whose skipped words words_of would count),
         * and the dump holds these events only. */
        __atomic_store_n(&fl_traces.head, 0, __ATOMIC_SEQ_CST);
        char stack[64];
        strcpy(stack, lit);
        /* Before install nothing is known: copied. */
        uint64_t before = words_of(trace_s, lit);
        setenv("FAULTLINE_SPOOL", spool, 1);
        CHILD_CHECK(faultline_install("tracetest", "1.0", NULL));
        uint64_t fixed = words_of(trace_s, lit), copied = words_of(trace_s, stack);
        CHILD_CHECK(fixed + (sizeof lit + 7) / 8 == copied);
        CHILD_CHECK(before == copied);
        char *got = last_trace_text();
        CHILD_CHECK(!strcmp(got, "kept: a hard-coded string, forty bytes or more long"));
        free(got);
        /* The thread id shares its word with the kept-slot bits: the line
         * shows the id alone. */
        char *all = dump_text(NULL), want[64];
        snprintf(want, sizeof want, " %d kept: a hard-coded", (int)gettid());
        CHILD_CHECK(strstr(all, want));
        free(all);
        /* A long one is cut as a copy is (FAULTLINE_TRACE_MAX_STR bytes). */
        static const char longlit[] =
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            "and the rest, past the cut";
        CHILD_CHECK(words_of(trace_s, longlit) == fixed);
        got = last_trace_text();
        CHILD_CHECK(strlen(got) == 6 + FAULTLINE_TRACE_MAX_STR && !strncmp(got + 6, longlit, 256));
        free(got);
        /* Kept by address, read at the dump. */
        CHILD_CHECK(words_of(trace_s, table[1]) == fixed);
        got = last_trace_text();
        CHILD_CHECK(!strcmp(got, "kept: second entry of a table"));
        free(got);
        /* Writable data may change: copied, and the dump shows the value
         * at the event. */
        CHILD_CHECK(words_of(trace_s, writable) > fixed);
        writable[0] = 'W';
        got = last_trace_text();
        CHILD_CHECK(!strcmp(got, "kept: writable data"));
        free(got);
        /* Another object's read-only string (the C library's): copied, since
         * it need not live as long as the site. */
        const char *other = strsignal(SIGSEGV);
        CHILD_CHECK(words_of(trace_s, other) > fixed);
        /* The program's build id no longer where it was (as if another
         * object had been mapped there after a dlclose): the kept string
         * is not read, and the ID dump does not name a module for it. */
        char *id = NULL;
        dl_iterate_phdr(note_cb, &id);
        CHILD_CHECK(id != NULL);
        /* Its page only; put back readable and executable, which is what
         * it was or more (a note may share a page with code). */
        char *page = (char *)((uintptr_t)id & ~(uintptr_t)4095);
        CHILD_CHECK(!mprotect(page, 4096, PROT_READ | PROT_WRITE));
        id[0] ^= 0x5a;
        trace_s(lit);
        got = last_trace_text();
        CHILD_CHECK(!strcmp(got, "kept: <string unreadable>"));
        free(got);
        id[0] ^= 0x5a;
        CHILD_CHECK(!mprotect(page, 4096, PROT_READ | PROT_EXEC));
        got = last_trace_text();
        CHILD_CHECK(!strcmp(got, "kept: a hard-coded string, forty bytes or more long"));
        free(got);
        /* Several at once, in the trace-ID dump as "@MOD:ADDR". */
        FAULTLINE_TRACE("%s=%s %d %s", table[0], lit, 7, stack);
        got = last_trace_text();
        CHILD_CHECK(!strcmp(got, "first=a hard-coded string, forty bytes or more long 7 a "
                                 "hard-coded string, forty bytes or more long"));
        free(got);
        int fd = memfd_create("ids", MFD_CLOEXEC);
        CHILD_CHECK(fd >= 0 && faultline_trace_dump(fd) > 0);
        char ids[1 << 16];
        ssize_t n = pread(fd, ids, sizeof ids - 1, 0);
        CHILD_CHECK(n > 0);
        ids[n] = '\0';
        char *last = strrchr(ids, '\n');
        while (last > ids && strncmp(last + 1, "TRACE_ID ", 9))
            last = memrchr(ids, '\n', (size_t)(last - ids));
        CHILD_CHECK(last && last[1] == 'T');
        CHILD_CHECK(strstr(last, " 4 @0:0x") && strstr(last, " 0x7 0x"));
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    rmdir(spool);
}

/* A crash writes the recorder into the log: state, breadcrumbs, then the
 * newest trace events, within the crash log's grammar. */
/* Crashes a child that traced 3,000 events (FAULTLINE_TRACE_EVENTS=events
 * when not NULL) and returns its crash log, read into log. */
static void crash_child(const char *events, char *log, size_t cap)
{
    char spool[] = "/tmp/fl-trace-test.XXXXXX";
    assert_non_null(mkdtemp(spool));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("FAULTLINE_SPOOL", spool, 1);
        if (events)
            setenv("FAULTLINE_TRACE_EVENTS", events, 1);
        if (!faultline_install("tracetest", "1.0", NULL))
            _exit(3);
        faultline_set_state("phase", "loading");
        faultline_breadcrumb("io", "opened config");
        for (int i = 0; i < 3000; i++)
            FAULTLINE_TRACE("step %d of %s", i, "loading");
        faultline_crash_now(SIGABRT);
        _exit(4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    DIR *d = opendir(spool);
    assert_non_null(d);
    char path[4096] = "";
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".crashlog"))
            snprintf(path, sizeof path, "%s/%s", spool, e->d_name);
    closedir(d);
    assert_true(path[0]);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(log, 1, cap - 1, f);
    fclose(f);
    log[n] = '\0';
    unlink(path);
    rmdir(spool);
}

static void in_the_crash_log(void **st)
{
    (void)st;
    static char log[1 << 20];
    crash_child(NULL, log, sizeof log);
    assert_non_null(strstr(log, "\nSTATE_KEY phase\nSTATE_VALUE loading\n"));
    assert_non_null(strstr(log, " io opened config\n"));
    /* The newest 500 events, contiguous, ending with the last. */
    int traces = count_lines(log, "TRACE ");
    assert_int_equal(traces, 500);
    assert_non_null(strstr(log, " step 2500 of loading\n"));
    assert_null(strstr(log, " step 2499 of loading\n"));
    assert_non_null(strstr(log, " step 2999 of loading\n"));
    assert_true(strstr(log, "\nEND\n") > strstr(log, " step 2999 of loading\n"));
    /* FAULTLINE_TRACE_EVENTS sets how many (at most 2000, to keep a log
     * well under the server's body limit); 0 leaves them out (the state
     * and breadcrumbs stay). */
    crash_child("50", log, sizeof log);
    assert_int_equal(count_lines(log, "TRACE "), 50);
    assert_non_null(strstr(log, " step 2950 of loading\n"));
    assert_null(strstr(log, " step 2949 of loading\n"));
    crash_child("100000", log, sizeof log);
    assert_int_equal(count_lines(log, "TRACE "), 2000);
    assert_non_null(strstr(log, " step 1000 of loading\n"));
    assert_null(strstr(log, " step 999 of loading\n"));
    crash_child("0", log, sizeof log);
    assert_int_equal(count_lines(log, "TRACE "), 0);
    assert_non_null(strstr(log, " io opened config\n"));
    assert_non_null(strstr(log, "\nEND\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integers),
        cmocka_unit_test(strings_and_pointers),
        cmocka_unit_test(floats),
        cmocka_unit_test(mismatches),
        cmocka_unit_test(huge_width_and_precision),
        cmocka_unit_test(strings_are_copied),
        cmocka_unit_test(hard_coded_strings),
        cmocka_unit_test(wraps_around),
        cmocka_unit_test(torn_record),
        cmocka_unit_test(concurrent),
        cmocka_unit_test(breadcrumbs),
        cmocka_unit_test(state),
        cmocka_unit_test(state_in_signal_handler),
        cmocka_unit_test(dump_errors),
        cmocka_unit_test(unloaded_site),
        cmocka_unit_test(dump_races_dlclose),
        cmocka_unit_test(replaced_site),
        cmocka_unit_test(in_the_crash_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
