/* Unit tests of the reporter's spool bookkeeping and helpers. */
/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fl_crashlog.h"
#include "fl_spool.h"
#include "report_util.h"

static char tmpdir[256];

static int mk_tmp(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "%s/fl-rep-unit.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int rm_tmp(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static bool exists(const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return lstat(p, &st) == 0;
}

/* name's modification time, age_s seconds ago. */
static void age(const char *name, int age_s)
{
    char p[512];
    struct timespec ts[2];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= age_s;
    ts[1] = ts[0];
    assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

/* The temporary files of writers that died before renaming them go after
 * a day; younger ones (a writer may be at it), other names and what is
 * not a regular file stay. */
static void list_removes_stale_temps(void **state)
{
    (void)state;
    static const char *const stale[] = {
        ".3f2a1b4c-0000-4000-8000-000000000001.tmp", /* a crash handler's */
        ".core-4242.AbC123",                         /* faultline core --from-kernel */
        ".core.Xy7890",                              /* faultline core */
        ".minidump.Qq1234",                          /* faultline minidump */
        ".installation-id.abc",                      /* a first install's */
        ".a.crashlog.77.tmp",                        /* the reporter's retry note */
        "trace-12.tracedump.part",                   /* a flight recorder dump */
    };
    static const char *const kept[] = {".hidden", "notes.tmp", ".reporter.lock",
                                       "trace-1.tracedump", "installation-id"};
    put("a.crashlog", "x");
    for (size_t i = 0; i < sizeof stale / sizeof *stale; i++) {
        put(stale[i], "x");
        age(stale[i], 2 * 86400);
    }
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
        put(kept[i], "x");
        age(kept[i], 2 * 86400);
    }
    put(".core-1.young1", "x"); /* a conversion under way */
    age(".core-1.young1", 3600);
    char p[512];
    snprintf(p, sizeof p, "%s/.core-2.dir", tmpdir);
    assert_int_equal(mkdir(p, 0700), 0);
    fl_spool *sp;
    assert_int_equal(fl_spool_open(tmpdir, &sp), 0);
    char **names;
    int n = fl_spool_list(sp, &names);
    assert_int_equal(n, 1);
    fl_spool_names_free(names, n);
    for (size_t i = 0; i < sizeof stale / sizeof *stale; i++)
        if (exists(stale[i]))
            fail_msg("a stale temporary file stayed: %s", stale[i]);
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        if (!exists(kept[i]))
            fail_msg("not a temporary file of ours, deleted: %s", kept[i]);
    assert_true(exists(".core-1.young1"));
    assert_true(exists(".core-2.dir"));
    assert_true(exists("a.crashlog"));
    fl_spool_close(sp);
}

static void list_sorted_and_orphans(void **state)
{
    (void)state;
    put("b.crashlog", "x");
    put("a.crashlog", "x");
    put("a.crashlog.retry", "attempts 1\nnext 5\nstatus 503\n");
    put("gone.crashlog.retry", "attempts 1\nnext 5\n");
    put("installation-id", "abc");
    put(".tmp-1", "x");
    fl_spool *sp;
    assert_int_equal(fl_spool_open(tmpdir, &sp), 0);
    char **names;
    int n = fl_spool_list(sp, &names);
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "a.crashlog");
    assert_string_equal(names[1], "b.crashlog");
    fl_spool_names_free(names, n);
    assert_false(exists("gone.crashlog.retry")); /* orphan removed */
    assert_true(exists("a.crashlog.retry"));
    assert_true(exists("installation-id"));
    /* A second listing on the same spool sees the same (shared offset). */
    n = fl_spool_list(sp, &names);
    assert_int_equal(n, 2);
    fl_spool_names_free(names, n);
    assert_int_equal(fl_spool_remove(sp, "a.crashlog"), 0);
    assert_false(exists("a.crashlog"));
    assert_false(exists("a.crashlog.retry"));
    assert_int_equal(fl_spool_remove(sp, "../etc"), -EINVAL);
    fl_spool_close(sp);
}

static void retry_roundtrip(void **state)
{
    (void)state;
    fl_spool *sp;
    assert_int_equal(fl_spool_open(tmpdir, &sp), 0);
    fl_retry_state st = {.attempts = 3, .next = 1800000000, .status = 429}, got;
    assert_int_equal(fl_spool_retry_load(sp, "x.crashlog", &got), -ENOENT);
    assert_int_equal(got.attempts, 0);
    assert_int_equal(fl_spool_retry_save(sp, "x.crashlog", &st), 0);
    assert_int_equal(fl_spool_retry_load(sp, "x.crashlog", &got), 0);
    assert_int_equal(got.attempts, 3);
    assert_true(got.next == 1800000000);
    assert_int_equal(got.status, 429);
    put("y.crashlog.retry", "garbage without next\n");
    assert_int_equal(fl_spool_retry_load(sp, "y.crashlog", &got), -ENOENT);
    assert_int_equal(got.attempts, 0);
    fl_spool_close(sp);
}

static void read_refuses_links_and_fifos(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/l.crashlog", tmpdir);
    assert_int_equal(symlink("/etc/hostname", p), 0);
    snprintf(p, sizeof p, "%s/f.crashlog", tmpdir);
    assert_int_equal(mkfifo(p, 0600), 0);
    put("r.crashlog", "hello");
    fl_spool *sp;
    assert_int_equal(fl_spool_open(tmpdir, &sp), 0);
    char *data;
    size_t len;
    assert_int_equal(fl_spool_read(sp, "l.crashlog", &data, &len), -ELOOP);
    assert_int_equal(fl_spool_read(sp, "f.crashlog", &data, &len), -EINVAL);
    assert_int_equal(fl_spool_read(sp, "r.crashlog", &data, &len), 0);
    assert_int_equal(len, 5);
    assert_string_equal(data, "hello");
    free(data);
    assert_int_equal(fl_spool_read(sp, "nope.crashlog", &data, &len), -ENOENT);
    fl_spool_close(sp);
}

/* Every file the reporter opens in the spool while it holds the lock:
 * a FIFO (or a symlink) under its name is refused at once, never opened
 * in a way that blocks.  alarm() turns a hang into a failure. */
static void notes_and_retry_files_never_block(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/rejected.log", tmpdir);
    assert_int_equal(mkfifo(p, 0600), 0);
    snprintf(p, sizeof p, "%s/a.crashlog.retry", tmpdir);
    assert_int_equal(mkfifo(p, 0600), 0);
    /* The retry file's temp name, in the way before it is written. */
    snprintf(p, sizeof p, "%s/.b.crashlog.retry.%ld.tmp", tmpdir, (long)getpid());
    assert_int_equal(mkfifo(p, 0600), 0);
    put("a.crashlog", "x");
    put("b.crashlog", "x");
    fl_spool *sp;
    assert_int_equal(fl_spool_open(tmpdir, &sp), 0);
    alarm(10);
    assert_int_equal(fl_spool_note(sp, "a line"), -EINVAL);
    fl_retry_state rs = {.attempts = 9};
    assert_int_equal(fl_spool_retry_load(sp, "a.crashlog", &rs), -EINVAL);
    assert_int_equal(rs.attempts, 0);
    rs = (fl_retry_state){.attempts = 2, .next = 77, .status = 503};
    assert_int_equal(fl_spool_retry_save(sp, "b.crashlog", &rs), 0);
    fl_retry_state back;
    assert_int_equal(fl_spool_retry_load(sp, "b.crashlog", &back), 0);
    assert_int_equal(back.attempts, 2);
    /* A FIFO as the lock file does not block either. */
    snprintf(p, sizeof p, "%s/.reporter.lock", tmpdir);
    assert_int_equal(mkfifo(p, 0600), 0);
    fl_spool_lock(sp, 0);
    alarm(0);
    unlink(p);
    snprintf(p, sizeof p, "%s/rejected.log", tmpdir);
    unlink(p);
    assert_int_equal(symlink("/etc/hostname", p), 0);
    assert_int_equal(fl_spool_note(sp, "a line"), -ELOOP);
    fl_spool_close(sp);
}

static void lock_is_exclusive(void **state)
{
    (void)state;
    fl_spool *a, *b;
    assert_int_equal(fl_spool_open(tmpdir, &a), 0);
    assert_int_equal(fl_spool_open(tmpdir, &b), 0);
    assert_int_equal(fl_spool_lock(a, 0), 0);
    assert_int_equal(fl_spool_lock(b, 0), -EWOULDBLOCK);
    fl_spool_close(a);
    assert_int_equal(fl_spool_lock(b, 0), 0);
    fl_spool_close(b);
}

static void backoff(void **state)
{
    (void)state;
    assert_int_equal(fl_spool_backoff(1, 120), 120);
    assert_int_equal(fl_spool_backoff(5, 0), 1);
    for (int i = 0; i < 50; i++) {
        long d1 = fl_spool_backoff(1, -1), d3 = fl_spool_backoff(3, -1), d99 = fl_spool_backoff(99, -1);
        assert_true(d1 >= 30 && d1 <= 37);
        assert_true(d3 >= 120 && d3 <= 150);
        assert_true(d99 >= FL_SPOOL_BACKOFF_MAX && d99 <= FL_SPOOL_BACKOFF_MAX * 5 / 4);
    }
}

static void notes_rotate(void **state)
{
    (void)state;
    fl_spool *sp;
    assert_int_equal(fl_spool_open(tmpdir, &sp), 0);
    char line[900];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    for (int i = 0; i < 400; i++) /* ~360 KiB: one rotation */
        assert_int_equal(fl_spool_note(sp, line), 0);
    assert_true(exists("rejected.log.1"));
    struct stat st;
    char p[512];
    snprintf(p, sizeof p, "%s/rejected.log", tmpdir);
    assert_int_equal(stat(p, &st), 0);
    assert_true(st.st_size <= FL_SPOOL_NOTES_MAX + 1024);
    fl_spool_close(sp);
}

static void default_dir(void **state)
{
    (void)state;
    char buf[256];
    setenv("HOME", "/home/u", 1);
    unsetenv("FAULTLINE_SPOOL");
    unsetenv("XDG_STATE_HOME");
    assert_int_equal(fl_spool_default_dir(buf, sizeof buf), 0);
    assert_string_equal(buf, "/home/u/.local/state/faultline");
    setenv("XDG_STATE_HOME", "/x", 1);
    assert_int_equal(fl_spool_default_dir(buf, sizeof buf), 0);
    assert_string_equal(buf, "/x/faultline");
    setenv("FAULTLINE_SPOOL", "/s", 1);
    assert_int_equal(fl_spool_default_dir(buf, sizeof buf), 0);
    assert_string_equal(buf, "/s");
    assert_int_equal(fl_spool_default_dir(buf, 2), -ENAMETOOLONG);
    unsetenv("FAULTLINE_SPOOL");
    unsetenv("XDG_STATE_HOME");
    unsetenv("HOME");
    assert_int_equal(fl_spool_default_dir(buf, sizeof buf), -ENOENT);
}

static void helpers(void **state)
{
    (void)state;
    assert_true(fl_report_email_ok(""));
    assert_true(fl_report_email_ok("a@b.org"));
    assert_false(fl_report_email_ok("a b@c"));
    assert_false(fl_report_email_ok("@b"));
    assert_false(fl_report_email_ok("a@"));
    assert_false(fl_report_email_ok("a@b@c"));
    assert_false(fl_report_email_ok("a@b\r\nX: y"));
    assert_true(fl_report_header_ok("key-123"));
    assert_false(fl_report_header_ok("k\r\nX-Evil: 1"));
    long s;
    assert_int_equal(fl_report_parse_seconds("120", &s), 0);
    assert_int_equal(s, 120);
    assert_int_equal(fl_report_parse_seconds("-1", &s), -1);
    assert_int_equal(fl_report_parse_seconds("soon", &s), -1);
    assert_int_equal(fl_report_parse_seconds("99999999999", &s), -1);

    /* A server URL: http:// or https:// and a host, nothing libcurl would
     * have to guess. */
    assert_null(fl_report_url_problem("http://127.0.0.1:8080"));
    assert_null(fl_report_url_problem("HTTPS://crash.example.org/api/v1/crashes?key=k"));
    assert_null(fl_report_url_problem("http://[::1]:8080/"));
    assert_string_equal(fl_report_url_problem("127.0.0.1:8080"), "no http:// or https:// in front");
    assert_string_equal(fl_report_url_problem("http//host"), "no http:// or https:// in front");
    assert_string_equal(fl_report_url_problem("ftp://host/"),
                        "only http:// and https:// are supported");
    assert_string_equal(fl_report_url_problem("file:///etc"),
                        "only http:// and https:// are supported");
    assert_string_equal(fl_report_url_problem("http://"), "no host after the scheme");
    assert_string_equal(fl_report_url_problem("https:///path"), "no host after the scheme");

    const char *text = "MOJOCRASH 0.0.1\nCRASHLOG_VERSION 1\nAPPLICATION_NAME TestApp\n"
                       "APPLICATION_VERSION 1.0\nCRASH_SIGNAL 11\nCRASH_TIME 1199350192\n"
                       "CALLSTACK 1\nCALLSTACK 2\nEND\n";
    fl_crashlog *log;
    assert_int_equal(fl_crashlog_parse(text, strlen(text), &log, NULL), 0);
    char d[300];
    fl_report_describe(log, 1234, d, sizeof d);
    assert_string_equal(d, "TestApp 1.0, signal 11 (SIGSEGV) at 2008-01-03 08:49:52 UTC, 2 frames, "
                           "1234 bytes");
    fl_crashlog_free(log);
    /* A raw stack is the program's memory: said, with its size. */
    char st[32768] = "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME TestApp\n"
                     "APPLICATION_VERSION 1.0\nCALLSTACK 1\n";
    for (int i = 0; i < 161; i++) /* 161 x 64 bytes: 10,304, over 10 KiB */
        snprintf(st + strlen(st), sizeof st - strlen(st), "STACK 0x%x %0128d\n", 0x1000 + 64 * i,
                 0);
    strcat(st, "END\n");
    assert_int_equal(fl_crashlog_parse(st, strlen(st), &log, NULL), 0);
    fl_report_describe(log, 99, d, sizeof d);
    assert_string_equal(d, "TestApp 1.0, no signal at an unknown time, 1 frame, 99 bytes "
                           "(10.1 KiB of stack memory)");
    fl_crashlog_free(log);
    /* So are the trace events, with the stack or alone. */
    strcpy(st + strlen(st) - 4, "TRACE 1 2 user alice logged in\nTRACE_ID 3 2 0x10 -\nEND\n");
    assert_int_equal(fl_crashlog_parse(st, strlen(st), &log, NULL), 0);
    fl_report_describe(log, 99, d, sizeof d);
    assert_string_equal(d, "TestApp 1.0, no signal at an unknown time, 1 frame, 99 bytes "
                           "(10.1 KiB of stack memory, 2 trace events)");
    fl_crashlog_free(log);
    static const char one[] = "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME TestApp\n"
                              "CALLSTACK 1\nTRACE 1 2 x\nEND\n";
    assert_int_equal(fl_crashlog_parse(one, strlen(one), &log, NULL), 0);
    fl_report_describe(log, 99, d, sizeof d);
    assert_string_equal(d, "TestApp (no version), no signal at an unknown time, 1 frame, 99 bytes "
                           "(1 trace event)");
    fl_crashlog_free(log);
    /* What the program said as it died, its control bytes made harmless. */
    static const char *const tails[][2] = {
        {"EXCEPTION_TYPE St13runtime_error\nEXCEPTION_MESSAGE disk \x1b[2Jfull\n",
         "; uncaught std::runtime_error: disk ?[2Jfull"},
        {"EXCEPTION_TYPE i\n", "; uncaught int"},
        /* An exception's line never borrows an abort message. */
        {"EXCEPTION_TYPE i\nABORT_MESSAGE stale\n", "; uncaught int"},
        {"ABORT_MESSAGE free(): double free detected in tcache 2\n",
         "; free(): double free detected in tcache 2"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        char t[600], want[400];
        snprintf(t, sizeof t,
                 "FAULTLINE 0.1.0\nCRASHLOG_VERSION 2\nAPPLICATION_NAME TestApp\n"
                 "APPLICATION_VERSION 1.0\nCRASH_SIGNAL 6\n%sCALLSTACK 1\nEND\n",
                 tails[i][0]);
        assert_int_equal(fl_crashlog_parse(t, strlen(t), &log, NULL), 0);
        fl_report_describe(log, 99, d, sizeof d);
        snprintf(want, sizeof want,
                 "TestApp 1.0, signal 6 (SIGABRT) at an unknown time, 1 frame, 99 bytes%s",
                 tails[i][1]);
        assert_string_equal(d, want);
        fl_crashlog_free(log);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(list_sorted_and_orphans, mk_tmp, rm_tmp),
        cmocka_unit_test_setup_teardown(list_removes_stale_temps, mk_tmp, rm_tmp),
        cmocka_unit_test_setup_teardown(retry_roundtrip, mk_tmp, rm_tmp),
        cmocka_unit_test_setup_teardown(read_refuses_links_and_fifos, mk_tmp, rm_tmp),
        cmocka_unit_test_setup_teardown(notes_and_retry_files_never_block, mk_tmp, rm_tmp),
        cmocka_unit_test_setup_teardown(lock_is_exclusive, mk_tmp, rm_tmp),
        cmocka_unit_test(backoff),
        cmocka_unit_test_setup_teardown(notes_rotate, mk_tmp, rm_tmp),
        cmocka_unit_test(default_dir),
        cmocka_unit_test(helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
