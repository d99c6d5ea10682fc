/*
 * test_projects.c - the server's copy of the projects' ingest keys
 * (projects.c) over a real SQLite store: a key added on another server
 * (straight into the store) is found within a second, one revoked there
 * stops working within FL_PROJECTS_TTL_S, a key never made is refused, and
 * with the store away the copy says "try later" once it is too old.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fl_projects.h"
#include "fl_store.h"

typedef struct fx {
    char dir[32], path[64];
    fl_store *s;
    fl_store_conn *c;
    fl_projects *p;
    bool away;     /* the store cannot be reached */
    unsigned asks; /* connections asked for */
} fx;

static fl_store_conn *conn(void *arg)
{
    fx *f = arg;
    f->asks++;
    return f->away ? NULL : f->c;
}

static int setup(void **st)
{
    fx *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/fl-proj-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/db", f->dir);
    char err[256];
    if (!(f->s = fl_store_sqlite_open(f->path, err, sizeof err)) || !(f->c = f->s->connect(f->s)) ||
        !(f->p = fl_projects_new()))
        return -1;
    *st = f;
    return 0;
}

static int teardown(void **st)
{
    fx *f = *st;
    fl_projects_free(f->p);
    f->s->disconnect(f->c);
    f->s->close(f->s);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int look(fx *f, const char *key, char pr[FL_PROJECT_MAX])
{
    return fl_projects_lookup(f->p, f->s, conn, f, key, pr);
}

static void test_lookup(void **st)
{
    fx *f = *st;
    char pr[FL_PROJECT_MAX] = "";
    double t0 = now_s();
    assert_int_equal(look(f, "k-mobile", pr), 0);
    assert_int_equal(look(f, "", pr), 0);
    assert_int_equal(look(f, NULL, pr), 0);

    /* Added by another server (straight into the store): not seen by a
     * miss within a second of the last read, seen by one after it. */
    assert_int_equal(f->s->add_project(f->c, "mobile", "k-mobile", 1), 0);
    int early = look(f, "k-mobile", pr);
    if (now_s() - t0 < 0.9) /* else a loaded machine let the second pass */
        assert_int_equal(early, 0);
    nap_ms(1100);
    assert_int_equal(look(f, "k-mobile", pr), 1);
    assert_string_equal(pr, "mobile");
    /* A key that is a prefix, or longer: no. */
    assert_int_equal(look(f, "k-mobil", pr), 0);
    assert_int_equal(look(f, "k-mobilee", pr), 0);

    /* Wrong keys cost the store one read a second at most. */
    unsigned asks = f->asks;
    double t1 = now_s();
    for (int i = 0; i < 1000; i++)
        assert_int_equal(look(f, "wrong", pr), 0);
    assert_true(f->asks - asks <= 1 + (unsigned)(now_s() - t1));

    /* Added here: invalidate() makes it visible at once. */
    assert_int_equal(f->s->add_project_key(f->c, "mobile", "k-two", 2), 0);
    assert_int_equal(f->s->add_project(f->c, "desk", "k-desk", 2), 0);
    fl_projects_invalidate(f->p);
    assert_int_equal(look(f, "k-two", pr), 1);
    assert_string_equal(pr, "mobile");
    assert_int_equal(look(f, "k-desk", pr), 1);
    assert_string_equal(pr, "desk");

    /* Revoked by another server: known until the copy is due, then
     * refused (within FL_PROJECTS_TTL_S). */
    assert_int_equal(f->s->revoke_project_key(f->c, "mobile", "k-mobile"), 0);
    assert_int_equal(look(f, "k-mobile", pr), 1);
    nap_ms(FL_PROJECTS_TTL_S * 1000 + 200);
    assert_int_equal(look(f, "k-mobile", pr), 0);
    assert_int_equal(look(f, "k-two", pr), 1);
}

/* The store away: a fresh copy still answers; one too old to trust, or
 * none, says "try later" (-1) rather than yes (a revoked key) or no (a
 * new one). */
static void test_store_away(void **st)
{
    fx *f = *st;
    char pr[FL_PROJECT_MAX] = "";
    assert_int_equal(f->s->add_project(f->c, "mobile", "k-mobile", 1), 0);
    f->away = true;
    assert_int_equal(look(f, "k-mobile", pr), -1); /* never read */
    assert_int_equal(look(f, "other", pr), -1);
    f->away = false;
    nap_ms(1100);
    assert_int_equal(look(f, "k-mobile", pr), 1);
    f->away = true;
    assert_int_equal(look(f, "k-mobile", pr), 1); /* fresh */
    assert_int_equal(look(f, "other", pr), 0);
    nap_ms(FL_PROJECTS_TTL_S * 1000 + 200);
    assert_int_equal(look(f, "k-mobile", pr), -1); /* stale, and no read */
    assert_int_equal(look(f, "other", pr), -1);
    f->away = false;
    nap_ms(1100);
    assert_int_equal(look(f, "k-mobile", pr), 1); /* back */
}

static void test_id_ok(void **st)
{
    (void)st;
    const char *good[] = {"a", "mobile", "m-1_x", "0day", "abcdefghijklmnopqrstuvwxyz0123456789-_"};
    const char *bad[] = {"", "-a", "_a", "A", "mo bile", "a/b", "a.b", "é", NULL};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(fl_project_id_ok(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(fl_project_id_ok(bad[i]));
    char longest[FL_PROJECT_MAX + 1];
    memset(longest, 'a', sizeof longest);
    longest[FL_PROJECT_MAX - 1] = '\0';
    assert_true(fl_project_id_ok(longest));
    longest[FL_PROJECT_MAX - 1] = 'a';
    longest[FL_PROJECT_MAX] = '\0';
    assert_false(fl_project_id_ok(longest));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_away, setup, teardown),
        cmocka_unit_test(test_id_ok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
