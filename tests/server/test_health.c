/*
 * Unit tests of fl_health, the record of whether the store takes writes:
 * the state /healthz and /metrics show, and that the log gets a line per
 * change (first failure, recovery), not one per failed transaction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdbool.h>

#include <cmocka.h>

#include "fl_health.h"

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* The log so far (the stream is flushed by fl_health). */
static const char *text(FILE *f, char **buf)
{
    fflush(f);
    return *buf ? *buf : "";
}

static void test_states(void **st)
{
    (void)st;
    fl_health h;
    fl_health_init(&h, NULL);
    fl_health_state s;
    fl_health_get(&h, FL_HEALTH_INGEST, &s);
    assert_false(s.failing);
    assert_int_equal(s.failures, 0);

    fl_health_ok(&h, FL_HEALTH_INGEST); /* nothing to recover from */
    fl_health_fail(&h, FL_HEALTH_INGEST, "database or disk is full");
    fl_health_fail(&h, FL_HEALTH_INGEST, NULL);
    fl_health_get(&h, FL_HEALTH_INGEST, &s);
    assert_true(s.failing);
    assert_int_equal(s.failures, 2);
    assert_int_equal(s.run, 2);
    assert_string_equal(s.why, "unknown error"); /* the last reason */
    assert_true(s.since > 0);

    /* Paths are apart. */
    fl_health_get(&h, FL_HEALTH_PROCESSING, &s);
    assert_false(s.failing);
    assert_int_equal(s.failures, 0);

    fl_health_ok(&h, FL_HEALTH_INGEST);
    fl_health_get(&h, FL_HEALTH_INGEST, &s);
    assert_false(s.failing);
    assert_int_equal(s.failures, 2); /* ever */
    assert_int_equal(s.run, 0);      /* no log: the episode ends at once */

    /* libpq's reasons run over lines: one line, and not cut at 256. */
    char longwhy[600];
    snprintf(longwhy, sizeof longwhy,
             "connection to server at \"127.0.0.1\", port 5 failed: Connection refused\n"
             "\tIs the server running on that host and accepting TCP/IP connections?\n"
             "%300s(the connection to PostgreSQL is lost: the next call outside a transaction "
             "reconnects)\n",
             "");
    fl_health_fail(&h, FL_HEALTH_INGEST, longwhy);
    fl_health_get(&h, FL_HEALTH_INGEST, &s);
    assert_null(strpbrk(s.why, "\n\r\t"));
    assert_non_null(strstr(s.why, "Connection refused Is the server running"));
    assert_non_null(strstr(s.why, "connections? (the connection"));
    assert_non_null(strstr(s.why, "transaction reconnects)"));
    fl_health_ok(&h, FL_HEALTH_INGEST);

    /* Out-of-range paths are ignored, not a crash. */
    fl_health_fail(&h, FL_HEALTH_COUNT, "x");
    fl_health_ok(&h, -1);
    assert_string_equal(fl_health_path_name(FL_HEALTH_PROCESSING), "processing");
    fl_health_destroy(&h);
}

static void test_log_lines(void **st)
{
    (void)st;
    char *buf = NULL;
    size_t len = 0;
    FILE *log = open_memstream(&buf, &len);
    assert_non_null(log);
    fl_health h;
    fl_health_init(&h, log);

    /* A thousand failures in a row: one line, with the reason and what
     * happens meanwhile. */
    for (int i = 0; i < 1000; i++)
        fl_health_fail(&h, FL_HEALTH_INGEST, "database or disk is full");
    const char *t = text(log, &buf);
    assert_int_equal(count(t, "\n"), 1);
    assert_non_null(strstr(t, "storage: ingest failed: database or disk is full; reports are "
                              "answered 503"));

    /* The end of a said episode is logged at once, with its count. */
    fl_health_ok(&h, FL_HEALTH_INGEST);
    t = text(log, &buf);
    assert_int_equal(count(t, "\n"), 2);
    assert_non_null(strstr(t, "storage: ingest works again (after 1000 failures over "));
    fl_health_state s;
    fl_health_get(&h, FL_HEALTH_INGEST, &s);
    assert_false(s.failing);

    /* Failing and recovering by turns within the next second: no line, but
     * /healthz follows each change. */
    for (int i = 0; i < 100; i++) {
        fl_health_fail(&h, FL_HEALTH_INGEST, "disk I/O error");
        fl_health_get(&h, FL_HEALTH_INGEST, &s);
        assert_true(s.failing);
        assert_int_equal(s.run, 1);
        fl_health_ok(&h, FL_HEALTH_INGEST);
        fl_health_get(&h, FL_HEALTH_INGEST, &s);
        assert_false(s.failing);
    }
    assert_int_equal(count(text(log, &buf), "\n"), 2);

    /* A second later, the next failure is said, with the unsaid ones
     * counted; and its end. */
    usleep(1100 * 1000);
    fl_health_fail(&h, FL_HEALTH_INGEST, "disk I/O error");
    t = text(log, &buf);
    assert_int_equal(count(t, "\n"), 3);
    assert_non_null(strstr(t, "storage: ingest failed: disk I/O error; reports are answered 503 "
                              "(clients keep them and retry) until a commit succeeds (101 "
                              "failures since the last line)"));
    fl_health_ok(&h, FL_HEALTH_INGEST);
    t = text(log, &buf);
    assert_int_equal(count(t, "\n"), 4);
    assert_non_null(strstr(t, "storage: ingest works again (after 1 failure over "));

    /* A new episode on the other path: its own line. */
    fl_health_fail(&h, FL_HEALTH_PROCESSING, "attempt to write a readonly database");
    t = text(log, &buf);
    assert_int_equal(count(t, "\n"), 5);
    assert_non_null(strstr(t, "storage: processing failed: attempt to write a readonly "
                              "database; the crashes stay queued and are retried"));
    fl_health_get(&h, FL_HEALTH_PROCESSING, &s);
    assert_true(s.failing);
    assert_int_equal(s.failures, 1);
    fl_health_get(&h, FL_HEALTH_INGEST, &s);
    assert_false(s.failing);
    assert_int_equal(s.failures, 1101);

    fl_health_destroy(&h);
    fclose(log);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_log_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
