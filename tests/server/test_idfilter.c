/*
 * Unit tests of fl_idfilter, the filter of crash ids ingest has stored:
 * no id added is ever reported unseen (across growth), few ids never added
 * are reported maybe, and its counters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <stdbool.h>

#include <cmocka.h>

#include "fl_idfilter.h"

/* Crash ids shaped like libfaultline's (version-4 UUIDs), from a counter
 * through a mixer: distinct for distinct i. */
static size_t make_id(uint64_t i, char out[64])
{
    uint64_t a = i * 0x9e3779b97f4a7c15u, b = (i ^ 0x5555) * 0xc2b2ae3d27d4eb4fu;
    a ^= a >> 31;
    b ^= b >> 29;
    return (size_t)snprintf(out, 64, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
                            (unsigned)(a & 0xffff), (unsigned)(b & 0xfff),
                            (unsigned)(0x8000 | ((b >> 12) & 0x3fff)),
                            (unsigned long long)(b >> 16) & 0xffffffffffffull);
}

static void test_no_false_negatives_through_growth(void **st)
{
    (void)st;
    /* Sized for 1,000 (so for the minimum, 2^20): grows into a second and
     * a third filter on the way to 3.5 M. */
    fl_idfilter *f = fl_idfilter_new(1000);
    assert_non_null(f);
    size_t b0 = fl_idfilter_bytes(f);
    char id[64];
    enum { N = 3500000 };
    for (uint64_t i = 0; i < N; i++) {
        size_t n = make_id(i, id);
        assert_int_equal(fl_idfilter_add(f, id, n), 0);
    }
    assert_int_equal(fl_idfilter_count(f), N);
    assert_true(fl_idfilter_bytes(f) > 3 * b0);        /* it grew, twice */
    assert_true(fl_idfilter_bytes(f) < (size_t)N * 4); /* ~10 bits an id, not bytes */
    for (uint64_t i = 0; i < N; i++) {
        size_t n = make_id(i, id);
        assert_true(fl_idfilter_maybe(f, id, n));
    }
    /* Ids never added: a few percent at most say maybe (three filters of
     * ~1 % each at most here). */
    size_t fp = 0;
    enum { M = 200000 };
    for (uint64_t i = N; i < N + M; i++) {
        size_t n = make_id(i, id);
        fp += fl_idfilter_maybe(f, id, n);
    }
    assert_true(fp < M / 20);
    assert_true(fp > 0); /* it is a Bloom filter, not a set: some are expected */
    fl_idfilter_free(f);
}

static void test_sized_filter_is_tight(void **st)
{
    (void)st;
    /* One filter sized for what it holds: ~1 % false positives. */
    fl_idfilter *f = fl_idfilter_new(100000);
    assert_non_null(f);
    char id[64];
    for (uint64_t i = 0; i < 100000; i++) {
        size_t n = make_id(i, id);
        assert_int_equal(fl_idfilter_add(f, id, n), 0);
    }
    size_t fp = 0;
    for (uint64_t i = 1000000; i < 1100000; i++) {
        size_t n = make_id(i, id);
        fp += fl_idfilter_maybe(f, id, n);
    }
    assert_true(fp < 2000); /* < 2 % */
    /* Length matters: a prefix of an id added is another id. */
    size_t n = make_id(7, id);
    assert_true(fl_idfilter_maybe(f, id, n));
    size_t pfx = 0;
    for (uint64_t i = 0; i < 1000; i++) {
        n = make_id(i, id);
        pfx += fl_idfilter_maybe(f, id, n - 1);
    }
    assert_true(pfx < 50);
    fl_idfilter_free(f);
}

static void test_empty(void **st)
{
    (void)st;
    fl_idfilter *f = fl_idfilter_new(0);
    assert_non_null(f);
    assert_int_equal(fl_idfilter_count(f), 0);
    assert_false(fl_idfilter_maybe(f, "c1", 2));
    assert_false(fl_idfilter_maybe(f, "", 0));
    assert_int_equal(fl_idfilter_add(f, "c1", 2), 0);
    assert_true(fl_idfilter_maybe(f, "c1", 2));
    fl_idfilter_free(f);
    fl_idfilter_free(NULL);
}

/* The batch calls (hash, prefetch, then by hash) answer as the plain ones,
 * across a grown chain, and ids differing in one byte past the first eight
 * (the hash takes eight at a time) or only in length hash apart. */
static void test_by_hash(void **st)
{
    (void)st;
    fl_idfilter *f = fl_idfilter_new(0);
    assert_non_null(f);
    char id[64];
    enum { N = 2500000 };
    for (uint64_t i = 0; i < N; i += 2) {
        size_t n = make_id(i, id);
        assert_int_equal(fl_idfilter_add_h(f, fl_idfilter_hash(id, n)), 0);
    }
    size_t mism = 0, fp = 0;
    for (uint64_t i = 0; i < N; i++) {
        size_t n = make_id(i, id);
        uint64_t h = fl_idfilter_hash(id, n);
        fl_idfilter_prefetch(f, h);
        bool m = fl_idfilter_maybe_h(f, h);
        mism += m != fl_idfilter_maybe(f, id, n);
        if (i % 2 == 0)
            assert_true(m);
        else
            fp += m;
    }
    assert_int_equal(mism, 0);
    assert_true(fp < N / 2 / 20);
    fl_idfilter_free(f);
    assert_true(fl_idfilter_hash("0123456789abcdefX", 17) !=
                fl_idfilter_hash("0123456789abcdefY", 17));
    assert_true(fl_idfilter_hash("0123456789abcdef", 16) !=
                fl_idfilter_hash("0123456789abcdef\0", 17));
    assert_true(fl_idfilter_hash("abc", 3) != fl_idfilter_hash("abcd", 4));
}

/* fl_idfilter_read() of the file at path. */
static fl_idfilter *read_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fl_idfilter *f = fl_idfilter_read(fp);
    fclose(fp);
    return f;
}

/* A snapshot reads back as the same filter (across growth: several
 * filters), and anything that is not exactly one is refused: truncated,
 * one byte changed, one byte more, empty, another file. */
static void test_snapshot(void **st)
{
    (void)st;
    fl_idfilter *f = fl_idfilter_new(0);
    assert_non_null(f);
    char id[64];
    enum { N = 2300000 };
    for (uint64_t i = 0; i < N; i += 2)
        assert_int_equal(fl_idfilter_add(f, id, make_id(i, id)), 0);
    char path[] = "/tmp/fl-idfilter-test.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "wb");
    assert_non_null(fp);
    assert_int_equal(fl_idfilter_write(f, fp), 0);
    assert_int_equal(fclose(fp), 0);
    fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    off_t size = lseek(fd, 0, SEEK_END);
    assert_true(size > (off_t)fl_idfilter_bytes(f) - 4096);
    fl_idfilter *g = read_file(path);
    assert_non_null(g);
    assert_int_equal(fl_idfilter_count(g), fl_idfilter_count(f));
    assert_int_equal(fl_idfilter_bytes(g), fl_idfilter_bytes(f));
    for (uint64_t i = 0; i < N; i++) {
        size_t n = make_id(i, id);
        assert_int_equal(fl_idfilter_maybe(g, id, n), fl_idfilter_maybe(f, id, n));
    }
    /* It goes on growing like the original. */
    assert_int_equal(fl_idfilter_add(g, "new", 3), 0);
    assert_true(fl_idfilter_maybe(g, "new", 3));
    fl_idfilter_free(g);

    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, size / 2), 1);
    b ^= 1;
    assert_int_equal(pwrite(fd, &b, 1, size / 2), 1);
    assert_null(read_file(path)); /* one bit changed */
    b ^= 1;
    assert_int_equal(pwrite(fd, &b, 1, size / 2), 1);
    assert_non_null(g = read_file(path)); /* restored: good again */
    fl_idfilter_free(g);
    assert_int_equal(pwrite(fd, "x", 1, size), 1);
    assert_null(read_file(path)); /* a byte more */
    assert_int_equal(ftruncate(fd, size - 8), 0);
    assert_null(read_file(path)); /* truncated: no checksum */
    assert_int_equal(ftruncate(fd, 12), 0);
    assert_null(read_file(path));
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_null(read_file(path)); /* empty */
    assert_int_equal(pwrite(fd, "SQLite format 3\0 and some more bytes of a database", 48, 0), 48);
    assert_null(read_file(path)); /* another file */
    close(fd);
    unlink(path);
    fl_idfilter_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_false_negatives_through_growth),
        cmocka_unit_test(test_sized_filter_is_tight),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_by_hash),
        cmocka_unit_test(test_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
