/*
 * preload.c - libfaultline-preload.so: the catcher in an unmodified program.
 *
 *   LD_PRELOAD=/usr/lib/libfaultline-preload.so FAULTLINE_APP=name \
 *   FAULTLINE_VERSION=1.2 FAULTLINE_SPOOL=dir FAULTLINE_URL=url program
 *
 * FAULTLINE_APP defaults to the program's file name, FAULTLINE_VERSION to
 * "unknown".  FAULTLINE_URL is where the reporter sends the logs: with it
 * and no FAULTLINE_REPORTER, the faultline-report installed beside this
 * library is started after a crash (it inherits the environment, so the
 * URL, and asks before it sends, as it always does: with no terminal and
 * no consent it keeps the log for a later run).
 *
 * When faultline_install() fails, one line on stderr says why: there is no
 * caller here to read its result, and the program's crashes would otherwise
 * vanish without a word.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fl_client.h"

#ifndef FL_REPORTER_FROM_LIBDIR
#define FL_REPORTER_FROM_LIBDIR "../bin/faultline-report"
#endif

/* PREFIX/bin/faultline-report for this library in PREFIX/lib (the path
 * between the two comes from the build), if it is there. */
static void default_reporter(void)
{
    /* FAULTLINE_REPORTER set, even empty (no reporter at all), wins. */
    const char *url = getenv("FAULTLINE_URL"), *set = getenv("FAULTLINE_REPORTER");
    Dl_info di;
    if (!url || !*url || set || !dladdr((void *)&default_reporter, &di) || !di.dli_fname)
        return;
    char p[FL_PATH_MAX];
    const char *slash = strrchr(di.dli_fname, '/');
    size_t dir = slash ? (size_t)(slash - di.dli_fname) : 0;
    if (!slash || dir + 1 + sizeof FL_REPORTER_FROM_LIBDIR > sizeof p)
        return;
    memcpy(p, di.dli_fname, dir);
    p[dir] = '/';
    memcpy(p + dir + 1, FL_REPORTER_FROM_LIBDIR, sizeof FL_REPORTER_FROM_LIBDIR);
    /* Absolute: LD_PRELOAD=./lib/... is relative to a directory the
     * program may leave before it crashes. */
    char abs[PATH_MAX];
    if (access(p, X_OK) == 0 && realpath(p, abs) && strlen(abs) < sizeof p)
        fl_spool_default_reporter(abs);
}

/* The message: a spool path and some 200 bytes more. */
#define WHY_MAX (FL_PATH_MAX + 256)

static size_t put(char *line, size_t n, const char *s)
{
    return n + fl_strlcpy(line + n, s, WHY_MAX - n);
}

/* "...: spool /proc/x (FAULTLINE_SPOOL): No such file or directory", in a
 * single write(), so that it cannot mix with another process's output. */
static void say_why(void)
{
    int f = fl_g.failed_at;
    const char *why = strerror(errno);
    char line[WHY_MAX];
    size_t n = put(line, 0, "libfaultline-preload: crashes will not be recorded: ");
    if (f == FL_FAIL_SPOOL && fl_g.spool_from) {
        n = put(line, n, "spool ");
        n = put(line, n, fl_g.spool_tried);
        n = put(line, n, " (");
        n = put(line, n, fl_g.spool_from);
        n = put(line, n, ")");
    } else {
        n = put(line, n,
                f == FL_FAIL_SPOOL     ? "no FAULTLINE_SPOOL, XDG_STATE_HOME or HOME"
                : f == FL_FAIL_MODULES ? "no loaded objects"
                : f == FL_FAIL_CATCHER ? "signal handlers"
                                       : "faultline_install");
    }
    n = put(line, n, ": ");
    n = put(line, n, why);
    line[n++] = '\n'; /* in bounds: put() stops one byte short of the end */
    if (write(2, line, n) < 0)
        return; /* no stderr: nobody to tell */
}

__attribute__((constructor)) static void fl_preload_init(void)
{
    char exe[FL_PATH_MAX];
    /* The reporter started after a crash inherits LD_PRELOAD: it must not
     * catch its own crashes under the application's name, nor start
     * another reporter from them (a reporter that crashes every time would
     * fill the spool). */
    ssize_t sn = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[sn > 0 ? sn : 0] = '\0';
    const char *self = strrchr(exe, '/');
    if (self && !strcmp(self + 1, "faultline-report"))
        return;
    const char *app = getenv("FAULTLINE_APP");
    const char *version = getenv("FAULTLINE_VERSION");
    if (!app || !*app) {
        app = self ? self + 1 : exe;
        if (!*app)
            app = "unknown";
    }
    if (!version || !*version)
        version = "unknown";
    char a[FAULTLINE_MAX_APPNAME], v[FAULTLINE_MAX_VERSION];
    fl_strlcpy(a, app, sizeof a);
    fl_strlcpy(v, version, sizeof v);
    default_reporter();
    if (!faultline_install(a, v, NULL))
        say_why();
}
