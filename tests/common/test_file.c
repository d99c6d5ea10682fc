/* fl_file_problem: the check faultline-report, `faultline submit` and
 * `faultline symbols add` make of a --cacert FILE before using it. */
#include <errno.h>
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

#include "fl_file.h"

static char dir[] = "/tmp/fl-test-file.XXXXXX";

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void regular_file(void **state)
{
    (void)state;
    char p[256], l[256];
    path_of(p, sizeof p, "ca.pem");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("-----BEGIN CERTIFICATE-----\n", f);
    fclose(f);
    assert_null(fl_file_problem(p));
    /* A link to one is one: stat() follows it. */
    path_of(l, sizeof l, "link.pem");
    assert_int_equal(symlink(p, l), 0);
    assert_null(fl_file_problem(l));
}

/* Missing, a directory, a FIFO (not opened: stat() only), and unreadable
 * (not checked as root, who reads any file). */
static void unusable(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "none.pem");
    assert_string_equal(fl_file_problem(p), strerror(ENOENT));
    assert_string_equal(fl_file_problem(dir), "not a file");
    path_of(p, sizeof p, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_string_equal(fl_file_problem(p), "not a file");
    if (geteuid() == 0)
        return;
    path_of(p, sizeof p, "secret.pem");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(p, 0), 0);
    assert_string_equal(fl_file_problem(p), strerror(EACCES));
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(regular_file),
        cmocka_unit_test(unusable),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    static const char *const made[] = {"ca.pem", "link.pem", "fifo", "secret.pem"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        char p[256];
        path_of(p, sizeof p, made[i]);
        unlink(p);
    }
    rmdir(dir);
    return rc;
}
