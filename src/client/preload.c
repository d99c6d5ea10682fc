/*
 * preload.c - libfaultline-preload.so: the catcher in an unmodified program.
 *
 *   LD_PRELOAD=/usr/lib/libfaultline-preload.so FAULTLINE_APP=name \
 *   FAULTLINE_VERSION=1.2 FAULTLINE_SPOOL=dir FAULTLINE_URL=url program
 *
 * FAULTLINE_APP defaults to the program's file name, FAULTLINE_VERSION to
 * "unknown".  FAULTLINE_URL is for the reporter (FAULTLINE_REPORTER), which
 * inherits the environment.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fl_client.h"

__attribute__((constructor)) static void fl_preload_init(void)
{
    char exe[FL_PATH_MAX];
    const char *app = getenv("FAULTLINE_APP");
    const char *version = getenv("FAULTLINE_VERSION");
    if (!app || !*app) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        const char *slash = strrchr(exe, '/');
        app = slash ? slash + 1 : exe;
        if (!*app)
            app = "unknown";
    }
    if (!version || !*version)
        version = "unknown";
    char a[FAULTLINE_MAX_APPNAME], v[FAULTLINE_MAX_VERSION];
    fl_strlcpy(a, app, sizeof a);
    fl_strlcpy(v, version, sizeof v);
    faultline_install(a, v, NULL);
}
