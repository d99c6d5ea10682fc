/*
 * Unit tests of fl_log, the server's log line (fl_srvutil.h): one call is
 * one whole line, stamped with the UTC time when --log-time says so, the
 * systemd journal's stream recognised from JOURNAL_STREAM.
 */
#define _GNU_SOURCE /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>
#include <regex.h>
#include <stdbool.h>

#include <cmocka.h>

#include "fl_srvutil.h"

/* Whether s is "YYYY-MM-DDTHH:MM:SS.mmmZ " then rest (NULL: anything). */
static bool stamped(const char *s, const char *rest)
{
    regex_t re;
    assert_int_equal(regcomp(&re,
                             "^[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]"
                             "\\.[0-9]{3}Z ",
                             REG_EXTENDED),
                     0);
    regmatch_t m;
    bool ok = !regexec(&re, s, 1, &m, 0) && m.rm_eo == 25 && (!rest || !strcmp(s + 25, rest));
    regfree(&re);
    return ok;
}

static void test_parse(void **st)
{
    (void)st;
    int mode = -1;
    assert_int_equal(fl_log_time_parse("auto", &mode), 0);
    assert_int_equal(mode, FL_LOG_TIME_AUTO);
    assert_int_equal(fl_log_time_parse("always", &mode), 0);
    assert_int_equal(mode, FL_LOG_TIME_ALWAYS);
    assert_int_equal(fl_log_time_parse("never", &mode), 0);
    assert_int_equal(mode, FL_LOG_TIME_NEVER);
    assert_int_equal(fl_log_time_parse("Always", &mode), -1);
    assert_int_equal(fl_log_time_parse("", &mode), -1);
    assert_int_equal(fl_log_time_parse(NULL, &mode), -1);
    assert_int_equal(mode, FL_LOG_TIME_NEVER);
}

/* A line on a stream without a descriptor (a memstream): the text whole,
 * line breaks and control characters made blanks, one '\n' at the end. */
static void test_line(void **st)
{
    (void)st;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fl_log_set_time(FL_LOG_TIME_NEVER);
    fl_log(f, "faultline serve: %s: %d", "x\ny\tz\r", 42);
    fflush(f);
    assert_string_equal(buf, "faultline serve: x y z : 42\n");
    fl_log(NULL, "nothing %d", 1); /* no log: nothing, no crash */

    /* Longer than the line buffer: still whole, and one line. */
    char big[5000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[100] = '\n';
    fclose(f);
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    fl_log_set_time(FL_LOG_TIME_ALWAYS);
    fl_log(f, "%s\n", big);
    fflush(f);
    assert_int_equal(len, 25 + 4999 + 1);
    big[100] = ' ';
    char want[5001];
    snprintf(want, sizeof want, "%s\n", big);
    assert_true(stamped(buf, want));
    assert_null(memchr(buf, '\n', len - 1));
    fclose(f);
    free(buf);
    fl_log_set_time(FL_LOG_TIME_NEVER);
}

static void test_journal(void **st)
{
    (void)st;
    char path[] = "/tmp/fl-test-log.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    char v[64];
    unsetenv("JOURNAL_STREAM");
    assert_false(fl_log_is_journal(fd));
    snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)sb.st_dev,
             (unsigned long long)sb.st_ino);
    setenv("JOURNAL_STREAM", v, 1);
    assert_true(fl_log_is_journal(fd));
    /* Another file's, or not DEVICE:INODE. */
    snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)sb.st_dev,
             (unsigned long long)sb.st_ino + 1);
    setenv("JOURNAL_STREAM", v, 1);
    assert_false(fl_log_is_journal(fd));
    static const char *const bad[] = {"", ":", "1", "x:y", "1:2:3", "1:"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("JOURNAL_STREAM", bad[i], 1);
        assert_false(fl_log_is_journal(fd));
    }
    snprintf(v, sizeof v, "%llu:%llux", (unsigned long long)sb.st_dev,
             (unsigned long long)sb.st_ino);
    setenv("JOURNAL_STREAM", v, 1);
    assert_false(fl_log_is_journal(fd));
    unsetenv("JOURNAL_STREAM");
    close(fd);
    assert_false(fl_log_is_journal(fd)); /* closed: not the journal */
}

enum { THREADS = 4, LINES = 2000 };

static void *writer(void *arg)
{
    FILE *f = arg;
    static char pad[300];
    memset(pad, 'p', sizeof pad - 1);
    for (int i = 0; i < LINES; i++)
        fl_log(f, "faultline serve: thread %lu line %d %s end",
               (unsigned long)pthread_self() % 1000, i, pad);
    return NULL;
}

/* Lines of threads logging at once to one file descriptor: each whole. */
static void test_threads(void **st)
{
    (void)st;
    FILE *f = tmpfile();
    assert_non_null(f);
    fl_log_set_time(FL_LOG_TIME_ALWAYS);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, writer, f), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    fl_log_set_time(FL_LOG_TIME_NEVER);
    rewind(f);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        size_t len = strlen(line);
        assert_true(len > 30 && line[len - 1] == '\n');
        assert_true(stamped(line, NULL));
        assert_ptr_equal(strstr(line, "faultline serve: thread "), line + 25);
        assert_null(strstr(line + 26, "faultline serve:"));
        assert_string_equal(line + len - 4, "end\n");
    }
    assert_int_equal(n, THREADS * LINES);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_line),
        cmocka_unit_test(test_journal),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
