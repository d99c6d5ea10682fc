/*
 * cmd_spool.c - a converted crash log into the spool (fl_cmd_spool.h),
 * shared by `faultline core` and `faultline minidump`.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl_cmd_spool.h"
#include "fl_core.h"
#include "fl_exit.h"

int fl_cmd_default_spool(char *out, size_t cap)
{
    const char *s = getenv("FAULTLINE_SPOOL"), *x = getenv("XDG_STATE_HOME"), *h = getenv("HOME");
    int n;
    if (s && *s)
        n = snprintf(out, cap, "%s", s);
    else if (x && *x)
        n = snprintf(out, cap, "%s/faultline", x);
    else if (h && *h)
        n = snprintf(out, cap, "%s/.local/state/faultline", h);
    else
        return -1;
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

int fl_cmd_mkdirs(const char *dir)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return -1;
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

static int read_id(const char *path, char id[40])
{
    char buf[64];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 36)
        return -1;
    memcpy(id, buf, 36);
    id[36] = '\0';
    return 0;
}

/* Read, or created -- written to a file of our own and linked into
 * place, so a client starting at the same moment sees either no file or
 * a whole one, and of two creators one wins. */
int fl_cmd_install_id(const char *spool, char id[40], char *why, size_t whycap)
{
    char path[4200], tmp[4300], fresh[40];
    snprintf(path, sizeof path, "%s/installation-id", spool);
    if (read_id(path, id) == 0)
        return 0;
    if (fl_core_uuid(fresh)) {
        snprintf(why, whycap, "cannot make an installation id");
        return -1;
    }
    fresh[36] = '\n';
    snprintf(tmp, sizeof tmp, "%s/.installation-id.%.36s", spool, fresh);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, fresh, 37) == 37)
            (void)link(tmp, path);
        close(fd);
        unlink(tmp);
    }
    if (read_id(path, id) == 0)
        return 0;
    snprintf(why, whycap, "%.400s: %s", path, strerror(errno));
    return -1;
}

/* The bound libfaultline keeps on a spool (src/client/spool.c, "the
 * spool's bound"), kept here too: `faultline core --from-kernel` writes a
 * log for every crash of the machine, and a service crashing at start
 * under a supervisor makes one a second.  After own (the log just
 * written), the oldest regular "*.crashlog" files beyond
 * FAULTLINE_SPOOL_MAX (default 100, 0: no bound) are deleted, at most
 * PRUNE_AT_ONCE a run; returns how many. */
#define SPOOL_MAX_DEFAULT 100
#define PRUNE_AT_ONCE 8

typedef struct aged {
    struct timespec mtime;
    char name[256];
} aged;

static int aged_cmp(const void *x, const void *y)
{
    const aged *a = x, *b = y;
    if (a->mtime.tv_sec != b->mtime.tv_sec)
        return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
    if (a->mtime.tv_nsec != b->mtime.tv_nsec)
        return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int prune_spool(const char *spool, const char *own)
{
    const char *env = getenv("FAULTLINE_SPOOL_MAX");
    char *end;
    unsigned long long max = SPOOL_MAX_DEFAULT;
    if (env && *env) {
        errno = 0;
        unsigned long long v = strtoull(env, &end, 0);
        if (!errno && !*end && *env != '-')
            max = v;
    }
    DIR *d = max ? opendir(spool) : NULL;
    if (!d)
        return 0;
    aged old[PRUNE_AT_ONCE + 1];
    size_t found = 0;
    unsigned long long logs = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        struct stat sb;
        if (e->d_name[0] == '.' || n <= 9 || n >= 80 || strcmp(e->d_name + n - 9, ".crashlog") ||
            (e->d_type != DT_REG && e->d_type != DT_UNKNOWN))
            continue;
        logs++;
        if (!strcmp(e->d_name, own) ||
            fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
            continue;
        /* The PRUNE_AT_ONCE oldest, in order: one slot more to sort into,
         * whose entry (the youngest) drops out. */
        size_t at = found < PRUNE_AT_ONCE ? found++ : PRUNE_AT_ONCE;
        old[at].mtime = sb.st_mtim;
        snprintf(old[at].name, sizeof old[at].name, "%s", e->d_name);
        qsort(old, at + 1, sizeof *old, aged_cmp);
    }
    int gone = 0;
    for (size_t i = 0; i < found && logs > max; i++, logs--)
        gone += unlinkat(dirfd(d), old[i].name, 0) == 0;
    closedir(d);
    return gone;
}

int fl_cmd_write_log(const char *cmd, const char *spool, const char *output, const char *tmpname,
                     fl_cmd_log_writer write_fn, void *arg)
{
    char err[512], why[512] = "", id[40], crash_id[40] = "", tmp[4200] = "", final[4200];
    FILE *out = NULL;
    int rc;

    if (output) {
        if (!strcmp(output, "-")) {
            if (write_fn(arg, stdout, NULL, crash_id, err, sizeof err)) {
                fprintf(stderr, "%s: %s\n", cmd, err);
                return FL_EXIT_ERROR;
            }
            return FL_EXIT_OK;
        }
        /* -o FILE: the same temp-and-rename, beside FILE, so a failure
         * leaves no half log under its name. */
        snprintf(final, sizeof final, "%s", output);
        snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", output);
    } else {
        if (fl_cmd_install_id(spool, id, why, sizeof why) != 0) {
            fprintf(stderr, "%s: %s\n", cmd, why);
            return FL_EXIT_ERROR;
        }
        snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", spool, tmpname);
    }
    int fd = mkstemp(tmp);
    if (fd < 0 || !(out = fdopen(fd, "w"))) {
        fprintf(stderr, "%s: %s: %s\n", cmd, tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return FL_EXIT_ERROR;
    }
    rc = write_fn(arg, out, output ? NULL : id, crash_id, err, sizeof err);
    if (rc == 0 && (fflush(out) != 0 || fsync(fileno(out)) != 0)) {
        snprintf(err, sizeof err, "%.400s: %s", tmp, strerror(errno));
        rc = -1;
    }
    if (fclose(out) != 0 && rc == 0) {
        snprintf(err, sizeof err, "%.400s: %s", tmp, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && !output)
        snprintf(final, sizeof final, "%s/%s.crashlog", spool, crash_id);
    if (rc == 0 && rename(tmp, final) != 0) {
        snprintf(err, sizeof err, "%.400s: %s", final, strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        unlink(tmp);
        fprintf(stderr, "%s: %s\n", cmd, err);
        return FL_EXIT_ERROR;
    }
    printf("%s\n", final);
    if (!output) {
        char own[64];
        snprintf(own, sizeof own, "%s.crashlog", crash_id);
        int gone = prune_spool(spool, own);
        if (gone)
            fprintf(stderr,
                    "%s: deleted the %d oldest crash log%s of %s: it holds at most "
                    "FAULTLINE_SPOOL_MAX (default %d)\n",
                    cmd, gone, gone == 1 ? "" : "s", spool, SPOOL_MAX_DEFAULT);
    }
    return FL_EXIT_OK;
}
