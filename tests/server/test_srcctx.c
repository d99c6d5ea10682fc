/*
 * test_srcctx.c - fl_srcctx (the source lines of GET /api/v1/crashes/ID/
 * source) against a stand-in for debuginfod: srcctx_test.sh serves
 * ROOT/buildid/ID/source/PATH over HTTP (python3 -m http.server, the same
 * URLs debuginfod answers) and names ROOT in FL_TEST_SRC_ROOT and the
 * server in DEBUGINFOD_URLS.  Here: lines cut at a character, CRLF, no
 * final newline, a line past the end, a file over the size cap, the
 * cache's bound (the least recently used go first) and a cache file of
 * another key read as a miss.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "fl_srcctx.h"
#include "fl_srvutil.h"

#define ID "0123456789abcdef0123456789abcdef01234567"

static const char *root;
static char cache[PATH_MAX];

/* Writes text as the source PATH of build id ID on the stand-in server. */
static void serve(const char *path, const char *text, size_t len)
{
    char fn[PATH_MAX * 2], cmd[PATH_MAX * 2 + 16];
    snprintf(fn, sizeof fn, "%s/buildid/%s/source%s", root, ID, path);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", fn);
    *strrchr(cmd, '/') = '\0';
    strcat(cmd, "'");
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(fn, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* The cache file of (ID, path), as srcctx.c names it. */
static void cache_file(const char *path, char *out, size_t cap)
{
    char key[PATH_MAX + 64];
    size_t a = strlen(ID), b = strlen(path);
    memcpy(key, ID, a + 1);
    memcpy(key + a + 1, path, b);
    uint8_t h[32];
    char hex[65];
    fl_sha256(key, a + 1 + b, h);
    fl_hex(h, 32, hex);
    hex[64] = '\0';
    snprintf(out, cap, "%s/%s", cache, hex);
}

static fl_srcctx *open_cache(uint64_t bound, size_t max_file)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    assert_int_equal(system(cmd), 0);
    fl_srcctx_config c = {.cache_dir = cache, .cache_bytes = bound, .max_file = max_file};
    fl_srcctx *s = NULL;
    char err[256];
    assert_int_equal(fl_srcctx_new(&c, &s, err, sizeof err), 0);
    return s;
}

/* fl_srcctx_get with fetch; the answer's "source" ("cache" or
 * "debuginfod") in src when OK. */
static int get(fl_srcctx *s, const char *path, unsigned line, unsigned ctx, json_t **j, char *src,
               char *why)
{
    int r = fl_srcctx_get(s, ID, path, line, ctx, true, j, why, 512);
    if (r == FL_SRCCTX_OK)
        snprintf(src, 16, "%s", json_string_value(json_object_get(*j, "source")));
    return r;
}

static void test_lines(void **st)
{
    (void)st;
    fl_srcctx *s = open_cache(0, 0);
    /* Line 2 is 600 two-byte characters (1,200 bytes): cut at 1,024 bytes,
     * a character's start.  CRLF line ends; no newline at the end. */
    char text[4096];
    size_t n = (size_t)snprintf(text, sizeof text, "one\r\n");
    for (int i = 0; i < 600; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "\xc3\xa9");
    n += (size_t)snprintf(text + n, sizeof text - n, "\nthree\nfour");
    serve("/src/lines.c", text, n);
    json_t *j = NULL;
    char src[16], why[512];
    assert_int_equal(fl_srcctx_get(s, ID, "/src/lines.c", 3, 1, false, &j, why, sizeof why),
                     FL_SRCCTX_FETCH);
    assert_int_equal(get(s, "/src/lines.c", 3, 5, &j, src, why), FL_SRCCTX_OK);
    assert_string_equal(src, "debuginfod");
    assert_int_equal(json_integer_value(json_object_get(j, "first")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "line")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "lines_cut")), 1);
    json_t *l = json_object_get(j, "lines");
    assert_int_equal(json_array_size(l), 4);
    assert_string_equal(json_string_value(json_array_get(l, 0)), "one");
    assert_int_equal(json_string_length(json_array_get(l, 1)), 1024);
    assert_string_equal(json_string_value(json_array_get(l, 2)), "three");
    assert_string_equal(json_string_value(json_array_get(l, 3)), "four");
    json_decref(j);
    /* From the cache now; the window at the file's end. */
    assert_int_equal(get(s, "/src/lines.c", 4, 1, &j, src, why), FL_SRCCTX_OK);
    assert_string_equal(src, "cache");
    assert_int_equal(json_integer_value(json_object_get(j, "first")), 3);
    assert_int_equal(json_array_size(json_object_get(j, "lines")), 2);
    assert_null(json_object_get(j, "lines_cut"));
    json_decref(j);
    assert_int_equal(get(s, "/src/lines.c", 5, 1, &j, src, why), FL_SRCCTX_NONE);
    assert_string_equal(why, "/src/lines.c has 4 lines: line 5 is past its end");
    /* Not at the server: said so. */
    assert_int_equal(get(s, "/src/none.c", 1, 1, &j, src, why), FL_SRCCTX_NONE);
    assert_non_null(strstr(why, "debuginfod has no source for /src/none.c"));
    fl_srcctx_free(s);
}

static void test_max_file(void **st)
{
    (void)st;
    fl_srcctx *s = open_cache(0, 100);
    char big[200];
    memset(big, 'x', sizeof big);
    serve("/src/big.c", big, sizeof big);
    json_t *j = NULL;
    char src[16], why[512];
    assert_int_equal(get(s, "/src/big.c", 1, 1, &j, src, why), FL_SRCCTX_NONE);
    assert_string_equal(why, "/src/big.c is larger than 100 bytes");
    fl_srcctx_free(s);
}

/* Fetches path, then dates its cache file t seconds after the epoch, so
 * that the order of use does not hang on the clock's resolution. */
static void fetch_at(fl_srcctx *s, const char *path, time_t t)
{
    json_t *j = NULL;
    char src[16], why[512], fn[PATH_MAX + 80];
    assert_int_equal(get(s, path, 1, 0, &j, src, why), FL_SRCCTX_OK);
    json_decref(j);
    cache_file(path, fn, sizeof fn);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    assert_int_equal(utimensat(AT_FDCWD, fn, ts, 0), 0);
}

static void test_bound(void **st)
{
    (void)st;
    /* Four files of 1,058 bytes with their headers under a bound of
     * 3,000: the third write is over it, and the cache drops to three
     * quarters (2,250): the least recently used goes. */
    char text[1000];
    memset(text, 'a', sizeof text);
    text[sizeof text - 1] = '\n';
    const char *p[4] = {"/src/b0.c", "/src/b1.c", "/src/b2.c", "/src/b3.c"};
    for (int i = 0; i < 4; i++)
        serve(p[i], text, sizeof text);
    fl_srcctx *s = open_cache(3000, 0);
    fetch_at(s, p[0], 1000);
    fetch_at(s, p[1], 2000);
    /* b0 used again: b1 is now the least recently used. */
    json_t *j = NULL;
    char src[16], why[512], fn[PATH_MAX + 80];
    assert_int_equal(get(s, p[0], 1, 0, &j, src, why), FL_SRCCTX_OK);
    assert_string_equal(src, "cache");
    json_decref(j);
    cache_file(p[0], fn, sizeof fn);
    struct timespec ts[2] = {{3000, 0}, {3000, 0}};
    assert_int_equal(utimensat(AT_FDCWD, fn, ts, 0), 0);
    fetch_at(s, p[2], 4000); /* over: b1 goes */
    cache_file(p[1], fn, sizeof fn);
    assert_int_equal(access(fn, F_OK), -1);
    cache_file(p[0], fn, sizeof fn);
    assert_int_equal(access(fn, F_OK), 0);
    cache_file(p[2], fn, sizeof fn);
    assert_int_equal(access(fn, F_OK), 0);
    fl_srcctx_free(s);
    /* A new process counts what the directory holds: the next file is
     * over the bound again, and b0, used before b2, goes. */
    fl_srcctx_config c = {.cache_dir = cache, .cache_bytes = 3000};
    char err[256];
    assert_int_equal(fl_srcctx_new(&c, &s, err, sizeof err), 0);
    fetch_at(s, p[3], 5000);
    cache_file(p[0], fn, sizeof fn);
    assert_int_equal(access(fn, F_OK), -1);
    cache_file(p[2], fn, sizeof fn);
    assert_int_equal(access(fn, F_OK), 0);
    fl_srcctx_free(s);
}

static void test_other_key(void **st)
{
    (void)st;
    fl_srcctx *s = open_cache(0, 0);
    serve("/src/k.c", "real\n", 5);
    /* The cache file of /src/k.c holding another path's text (a hash
     * collision, or a file put there): a miss, fetched again. */
    char fn[PATH_MAX + 80];
    cache_file("/src/k.c", fn, sizeof fn);
    FILE *f = fopen(fn, "w");
    assert_non_null(f);
    fprintf(f, "FLSRC1 %s\n/src/other.c\nforged\n", ID);
    assert_int_equal(fclose(f), 0);
    json_t *j = NULL;
    char src[16], why[512];
    assert_int_equal(get(s, "/src/k.c", 1, 0, &j, src, why), FL_SRCCTX_OK);
    assert_string_equal(src, "debuginfod");
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "lines"), 0)), "real");
    json_decref(j);
    fl_srcctx_free(s);
}

static void test_no_debuginfod(void **st)
{
    (void)st;
    fl_srcctx *s = open_cache(0, 0);
    char *urls = strdup(getenv("DEBUGINFOD_URLS"));
    unsetenv("DEBUGINFOD_URLS");
    json_t *j = NULL;
    char why[512];
    assert_int_equal(fl_srcctx_get(s, ID, "/src/lines.c", 1, 1, true, &j, why, sizeof why),
                     FL_SRCCTX_NONE);
    assert_non_null(strstr(why, "no debuginfod configured"));
    setenv("DEBUGINFOD_URLS", urls, 1);
    free(urls);
    fl_srcctx_free(s);
}

int main(void)
{
    root = getenv("FL_TEST_SRC_ROOT");
    if (!root || !getenv("DEBUGINFOD_URLS")) {
        fprintf(stderr, "run through srcctx_test.sh\n");
        return 1;
    }
    snprintf(cache, sizeof cache, "%s/cache", root);
    /* libdebuginfod's own cache, apart from the served tree. */
    char dc[PATH_MAX + 16];
    snprintf(dc, sizeof dc, "%s.dcache", root);
    setenv("DEBUGINFOD_CACHE_PATH", dc, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),         cmocka_unit_test(test_max_file),
        cmocka_unit_test(test_bound),         cmocka_unit_test(test_other_key),
        cmocka_unit_test(test_no_debuginfod),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
