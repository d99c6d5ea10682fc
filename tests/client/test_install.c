/*
 * test_install.c - faultline_install()'s errno: the value faultline.h
 * documents on each failure, and the caller's own value kept on success.
 *
 * An install holds for the life of the process, so every case runs in a
 * forked child with an environment of its own and a scratch directory;
 * the child's checks end it with status 1 (cmocka's own assertions would
 * go on with the next case inside the child).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "faultline.h"
#include "mojocrash.h"

#define CHILD_CHECK(c)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "line %d: %s (errno %d: %s)\n", __LINE__, #c, errno, strerror(errno)); \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

/* faultline_install() returned 0 with errno == want. */
#define FAILS_WITH(call, want)                                                                     \
    do {                                                                                           \
        errno = 0;                                                                                 \
        int rc_ = (call);                                                                          \
        int e_ = errno;                                                                            \
        if (rc_ != 0 || e_ != (want)) {                                                            \
            fprintf(stderr, "line %d: %s: returned %d, errno %d (%s); expected 0, %s\n", __LINE__, \
                    #call, rc_, e_, strerror(e_), #want);                                          \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Runs fn(dir) in a child with no spool variable set, dir a fresh scratch
 * directory; the case passes when the child exits with 0. */
static void in_child(void (*fn)(const char *dir))
{
    const char *t = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/fl-install-XXXXXX", t && *t ? t : "/tmp");
    assert_non_null(mkdtemp(dir));
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsetenv("FAULTLINE_SPOOL");
        unsetenv("XDG_STATE_HOME");
        unsetenv("HOME");
        unsetenv("FAULTLINE_REPORTER");
        fn(dir);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void spool_in(const char *dir, const char *rest)
{
    char p[1024];
    snprintf(p, sizeof p, "%s%s", dir, rest);
    setenv("FAULTLINE_SPOOL", p, 1);
}

/* ---- the spool ---- */

static void proc_spool(const char *dir)
{
    (void)dir;
    setenv("FAULTLINE_SPOOL", "/proc/nonexistent/x", 1);
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENOENT);
    CHILD_CHECK(faultline_spool_dir() == NULL);
}

/* A directory where no file can be made, even as root: O_TMPFILE is
 * refused (EPERM in /proc/self, EOPNOTSUPP in /proc), and so is the named
 * file the crash would then open.  Every crash's log was lost. */
static void pseudo_fs_spool(const char *dir)
{
    (void)dir;
    setenv("FAULTLINE_SPOOL", "/proc/self", 1);
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENOENT);
    CHILD_CHECK(faultline_spool_dir() == NULL);
    setenv("FAULTLINE_SPOOL", "/proc", 1);
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENOENT);
}

static void spool_under_a_file(const char *dir)
{
    char f[600];
    snprintf(f, sizeof f, "%s/file", dir);
    FILE *fp = fopen(f, "w");
    CHILD_CHECK(fp && fclose(fp) == 0);
    spool_in(dir, "/file/spool");
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENOTDIR);
    /* The spool itself a file: mkdir() finds it there (EEXIST), the
     * check after it is what fails. */
    spool_in(dir, "/file");
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENOTDIR);
}

/* Root may write anywhere: as root (CI), the case goes on as nobody, in
 * the scratch directory opened to it. */
static void not_root(const char *dir)
{
    if (geteuid() != 0)
        return;
    CHILD_CHECK(chmod(dir, 0755) == 0);
    CHILD_CHECK(setgid(65534) == 0 && setuid(65534) == 0);
}

/* DIR/ro made with mode, then (not as root) the spool DIR + rest. */
static void spool_by_ro(const char *dir, mode_t mode, const char *rest)
{
    char p[600];
    snprintf(p, sizeof p, "%s/ro", dir);
    CHILD_CHECK(mkdir(p, mode) == 0);
    not_root(dir);
    spool_in(dir, rest);
}

static void spool_unwritable_parent(const char *dir)
{
    spool_by_ro(dir, 0500, "/ro/spool");
    FAILS_WITH(faultline_install("app", "1.0", NULL), EACCES);
}

/* The spool is there but may not be written into: every crash would be
 * lost, so install fails (and says why) instead of pretending. */
static void spool_unwritable(const char *dir)
{
    spool_by_ro(dir, 0555, "/ro");
    FAILS_WITH(faultline_install("app", "1.0", NULL), EACCES);
    CHILD_CHECK(faultline_spool_dir() == NULL);
}

static void no_spool_variable(const char *dir)
{
    (void)dir;
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENOENT);
    /* Set but empty is unset. */
    setenv("FAULTLINE_SPOOL", "", 1);
    setenv("HOME", "", 1);
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENOENT);
}

static void spool_too_long(const char *dir)
{
    char p[2000];
    int n = snprintf(p, sizeof p, "%s/", dir);
    memset(p + n, 'a', sizeof p - 1 - (size_t)n);
    p[sizeof p - 1] = '\0';
    setenv("FAULTLINE_SPOOL", p, 1); /* longer than any buffer */
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENAMETOOLONG);
    p[1000] = '\0'; /* fits, but over the 960 bytes the crash leaves room for */
    setenv("FAULTLINE_SPOOL", p, 1);
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENAMETOOLONG);
    /* HOME and its suffix together too long. */
    unsetenv("FAULTLINE_SPOOL");
    p[1015] = '\0';
    setenv("HOME", p, 1);
    FAILS_WITH(faultline_install("app", "1.0", NULL), ENAMETOOLONG);
}

/* Own log hooks need no spool: a bad one is no failure, and no errno. */
static int own_start(const char *app)
{
    (void)app;
    return 1;
}

static int own_line(const char *s)
{
    (void)s;
    return 1;
}

static int own_end(void)
{
    return 1;
}

static void own_hooks_bad_spool(const char *dir)
{
    (void)dir;
    setenv("FAULTLINE_SPOOL", "/proc/nonexistent/x", 1);
    faultline_hooks h = {
        .start_crashlog = own_start, .new_crashlog_line = own_line, .end_crashlog = own_end};
    errno = EDOM;
    CHILD_CHECK(faultline_install("app", "1.0", &h));
    CHILD_CHECK(errno == EDOM);
}

/* Log hooks of the application's own: an unwritable spool is no failure. */
static void own_hooks_unwritable_spool(const char *dir)
{
    spool_by_ro(dir, 0555, "/ro");
    faultline_hooks h = {
        .start_crashlog = own_start, .new_crashlog_line = own_line, .end_crashlog = own_end};
    CHILD_CHECK(faultline_install("app", "1.0", &h));
}

/* ---- arguments, a second call ---- */

static void bad_arguments(const char *dir)
{
    spool_in(dir, "/spool");
    char longer[FAULTLINE_MAX_APPNAME + 1];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    FAILS_WITH(faultline_install(NULL, "1.0", NULL), EINVAL);
    FAILS_WITH(faultline_install("", "1.0", NULL), EINVAL);
    FAILS_WITH(faultline_install("app", NULL, NULL), EINVAL);
    FAILS_WITH(faultline_install(longer, "1.0", NULL), EINVAL);
    FAILS_WITH(faultline_install("app", longer, NULL), EINVAL);
    FAILS_WITH(MOJOCRASH_install(NULL, "1.0", NULL), EINVAL);
    /* None of them installed anything: a good call still does. */
    CHILD_CHECK(faultline_install("app", "1.0", NULL));
}

static void second_install(const char *dir)
{
    spool_in(dir, "/spool");
    CHILD_CHECK(faultline_install("app", "1.0", NULL));
    FAILS_WITH(faultline_install("app", "1.0", NULL), EALREADY);
    FAILS_WITH(faultline_install(NULL, NULL, NULL), EALREADY);
    FAILS_WITH(MOJOCRASH_install("app", "1.0", NULL), EALREADY);
    CHILD_CHECK(faultline_spool_dir() != NULL); /* the first one holds */
}

/* ---- success keeps errno ---- */

static void success_keeps_errno(const char *dir)
{
    /* A spool not made yet, with no installation id: mkdir() of its
     * parents says EEXIST and the id's read ENOENT on the way. */
    spool_in(dir, "/new/spool");
    errno = EDOM;
    CHILD_CHECK(faultline_install("app", "1.0", NULL));
    CHILD_CHECK(errno == EDOM);
    CHILD_CHECK(faultline_spool_dir() != NULL);
}

static void success_keeps_errno_zero(const char *dir)
{
    spool_in(dir, "/spool");
    errno = 0;
    CHILD_CHECK(faultline_install("app", "1.0", NULL));
    CHILD_CHECK(errno == 0);
}

/* ---- install_crash_catcher ---- */

static int catcher_fails(faultline_catcher c)
{
    (void)c;
    return 0;
}

static int catcher_fails_eperm(faultline_catcher c)
{
    (void)c;
    errno = EPERM;
    return 0;
}

static void catcher_hook_fails(const char *dir)
{
    spool_in(dir, "/spool");
    faultline_hooks h = {.install_crash_catcher = catcher_fails};
    errno = EDOM; /* not passed off as the hook's */
    int rc = faultline_install("app", "1.0", &h);
    CHILD_CHECK(rc == 0 && errno == ECANCELED);
    h.install_crash_catcher = catcher_fails_eperm;
    FAILS_WITH(faultline_install("app", "1.0", &h), EPERM);
}

#define CASE(fn)                                                                                   \
    static void test_##fn(void **st)                                                               \
    {                                                                                              \
        (void)st;                                                                                  \
        in_child(fn);                                                                              \
    }
CASE(proc_spool)
CASE(pseudo_fs_spool)
CASE(spool_under_a_file)
CASE(spool_unwritable_parent)
CASE(spool_unwritable)
CASE(own_hooks_unwritable_spool)
CASE(no_spool_variable)
CASE(spool_too_long)
CASE(own_hooks_bad_spool)
CASE(bad_arguments)
CASE(second_install)
CASE(success_keeps_errno)
CASE(success_keeps_errno_zero)
CASE(catcher_hook_fails)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_spool),
        cmocka_unit_test(test_pseudo_fs_spool),
        cmocka_unit_test(test_spool_under_a_file),
        cmocka_unit_test(test_spool_unwritable_parent),
        cmocka_unit_test(test_spool_unwritable),
        cmocka_unit_test(test_own_hooks_unwritable_spool),
        cmocka_unit_test(test_no_spool_variable),
        cmocka_unit_test(test_spool_too_long),
        cmocka_unit_test(test_own_hooks_bad_spool),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_second_install),
        cmocka_unit_test(test_success_keeps_errno),
        cmocka_unit_test(test_success_keeps_errno_zero),
        cmocka_unit_test(test_catcher_hook_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
