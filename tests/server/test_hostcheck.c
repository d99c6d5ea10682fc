/*
 * Unit tests of fl_hostcheck, the Host values the HTTP front answers to
 * (DNS rebinding): the loopback default, the names given, '*', the listen
 * address, and the names refused at start.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <stdbool.h>

#include <cmocka.h>

#include "fl_hostcheck.h"

static fl_hostcheck *made(const char *listen, const char *names)
{
    char err[256] = "";
    fl_hostcheck *hc = fl_hostcheck_new(listen, names, err, sizeof err);
    if (!hc)
        fail_msg("fl_hostcheck_new(%s, %s): %s", listen, names ? names : "NULL", err);
    return hc;
}

static void test_loopback_default(void **state)
{
    (void)state;
    fl_hostcheck *hc = made("127.0.0.1", NULL);
    assert_true(fl_hostcheck_active(hc));
    const char *ok[] = {"localhost",  "localhost:8080",       "LOCALHOST.",         "a.localhost:1",
                        "127.0.0.1",  "127.0.0.1:8080",       "127.1.2.3",          "[::1]",
                        "[::1]:8080", "[0:0:0:0:0:0:0:1]:80", "[::ffff:127.0.0.1]", NULL};
    for (const char **h = ok; *h; h++)
        if (!fl_hostcheck_ok(hc, *h))
            fail_msg("refused: %s", *h);
    const char *bad[] = {"evil.example",
                         "evil.example:8080",
                         "localhost.evil.example",
                         "127.0.0.1.evil.example",
                         "xlocalhost",
                         ".localhost",
                         "x",
                         "",
                         ":8080",
                         "localhost:80x",
                         "localhost:80:80",
                         "localhost evil",
                         "[::2]",
                         "[::1",
                         "[::1]x",
                         "10.0.0.1",
                         "0.0.0.0",
                         NULL};
    for (const char **h = bad; *h; h++)
        if (fl_hostcheck_ok(hc, *h))
            fail_msg("answered: '%s'", *h);
    assert_false(fl_hostcheck_ok(hc, NULL));
    fl_hostcheck_free(hc);

    hc = made("::1", NULL);
    assert_true(fl_hostcheck_active(hc));
    assert_true(fl_hostcheck_ok(hc, "[::1]:8080"));
    assert_true(fl_hostcheck_ok(hc, "localhost"));
    assert_false(fl_hostcheck_ok(hc, "evil.example"));
    fl_hostcheck_free(hc);
}

static void test_other_listen_address_default(void **state)
{
    (void)state;
    /* Not loopback, no names given: any Host, as before the check. */
    const char *addrs[] = {"0.0.0.0", "::", "192.168.1.5", "203.0.113.7", "", NULL};
    for (const char **a = addrs; *a; a++) {
        fl_hostcheck *hc = made(*a, NULL);
        assert_false(fl_hostcheck_active(hc));
        assert_true(fl_hostcheck_ok(hc, "evil.example"));
        assert_true(fl_hostcheck_ok(hc, NULL));
        fl_hostcheck_free(hc);
    }
    fl_hostcheck *hc = made(NULL, NULL);
    assert_false(fl_hostcheck_active(hc));
    fl_hostcheck_free(hc);
}

static void test_names_given(void **state)
{
    (void)state;
    fl_hostcheck *hc = made("192.168.1.5", "crash.example.com, *.corp.example,Ops.Example.");
    assert_true(fl_hostcheck_active(hc));
    const char *ok[] = {"crash.example.com",
                        "crash.example.com:443",
                        "CRASH.EXAMPLE.COM.",
                        "a.corp.example",
                        "b.a.corp.example:8080",
                        "ops.example",
                        "192.168.1.5:8080", /* the listen address */
                        "localhost",        /* loopback: always */
                        "127.0.0.1:8080",
                        NULL};
    for (const char **h = ok; *h; h++)
        if (!fl_hostcheck_ok(hc, *h))
            fail_msg("refused: %s", *h);
    const char *bad[] = {"evil.example", "corp.example", "xcorp.example", "crash.example.com.evil",
                         "example.com",  "192.168.1.6",  "[fd00::1]",     NULL};
    for (const char **h = bad; *h; h++)
        if (fl_hostcheck_ok(hc, *h))
            fail_msg("answered: '%s'", *h);
    fl_hostcheck_free(hc);

    /* A name given on a loopback server adds to the loopback names. */
    hc = made("127.0.0.1", "crash.example.com");
    assert_true(fl_hostcheck_ok(hc, "crash.example.com"));
    assert_true(fl_hostcheck_ok(hc, "localhost:1"));
    assert_false(fl_hostcheck_ok(hc, "evil.example"));
    fl_hostcheck_free(hc);

    /* IP literals as names. */
    hc = made("0.0.0.0", "192.0.2.1,[2001:db8::1]");
    assert_true(fl_hostcheck_ok(hc, "192.0.2.1:80"));
    assert_true(fl_hostcheck_ok(hc, "[2001:DB8::1]:80"));
    assert_false(fl_hostcheck_ok(hc, "192.0.2.2"));
    fl_hostcheck_free(hc);
}

static void test_star(void **state)
{
    (void)state;
    fl_hostcheck *hc = made("127.0.0.1", "crash.example.com,*");
    assert_false(fl_hostcheck_active(hc));
    assert_true(fl_hostcheck_ok(hc, "evil.example"));
    fl_hostcheck_free(hc);
}

static void test_bad_names(void **state)
{
    (void)state;
    const char *bad[] = {
        "",     ",", "crash.example.com:8080", "a b", "[::1]:80", "*.", "*x.y", "[nope]", "a/b",
        "a,,b", NULL};
    for (const char **n = bad; *n; n++) {
        char err[256] = "";
        fl_hostcheck *hc = fl_hostcheck_new("127.0.0.1", *n, err, sizeof err);
        if (hc)
            fail_msg("taken: '%s'", *n);
        assert_non_null(strstr(err, "--allowed-host"));
    }
    char err[256] = "";
    assert_null(fl_hostcheck_new("127.0.0.1", "crash.example.com:8080", err, sizeof err));
    assert_non_null(strstr(err, "without a port"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback_default),
        cmocka_unit_test(test_other_listen_address_default),
        cmocka_unit_test(test_names_given),
        cmocka_unit_test(test_star),
        cmocka_unit_test(test_bad_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
