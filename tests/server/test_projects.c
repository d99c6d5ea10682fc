/*
 * test_projects.c - the server's copy of the projects' ingest keys
 * (projects.c) over a real SQLite store: a key added on another server
 * (straight into the store) is found on its first use, one revoked there
 * stops working within FL_PROJECTS_TTL_S, and a key never made is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
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
} fx;

static int setup(void **st)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/fl-proj-XXXXXX");
    if (!f || !mkdtemp(f->dir))
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

static void test_lookup(void **st)
{
    fx *f = *st;
    char pr[FL_PROJECT_MAX] = "";
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "k-mobile", pr), 0);
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "", pr), 0);
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, NULL, pr), 0);

    /* Added by another server: this one read the keys less than a second
     * ago, so the first miss may not read them again -- the next one, a
     * second later, does. */
    assert_int_equal(f->s->add_project(f->c, "mobile", "k-mobile", 1), 0);
    nap_ms(1100);
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "k-mobile", pr), 1);
    assert_string_equal(pr, "mobile");
    /* A key that is a prefix, or longer: no. */
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "k-mobil", pr), 0);
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "k-mobilee", pr), 0);

    /* Added here: invalidate() makes it visible at once. */
    assert_int_equal(f->s->add_project_key(f->c, "mobile", "k-two", 2), 0);
    assert_int_equal(f->s->add_project(f->c, "desk", "k-desk", 2), 0);
    fl_projects_invalidate(f->p);
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "k-two", pr), 1);
    assert_string_equal(pr, "mobile");
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "k-desk", pr), 1);
    assert_string_equal(pr, "desk");

    /* Revoked by another server: still known until the copy is older than
     * the TTL, then refused. */
    assert_int_equal(f->s->revoke_project_key(f->c, "mobile", "k-mobile"), 0);
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "k-mobile", pr), 1);
    nap_ms(FL_PROJECTS_TTL_S * 1000 + 200);
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "k-mobile", pr), 0);
    assert_int_equal(fl_projects_lookup(f->p, f->s, f->c, "k-two", pr), 1);

    /* Without a connection the copy answers alone. */
    assert_int_equal(fl_projects_lookup(f->p, f->s, NULL, "k-desk", pr), 1);
    assert_int_equal(fl_projects_lookup(f->p, f->s, NULL, "k-none", pr), 0);
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
        cmocka_unit_test(test_id_ok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
