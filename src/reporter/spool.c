/*
 * spool.c - listing, reading, deleting and retry bookkeeping in the spool.
 *
 * Everything goes through a directory fd (openat/unlinkat/renameat), so a
 * spool path that is renamed or replaced while we run cannot redirect a
 * delete to another directory, and a symlink planted under a log's name is
 * never followed when reading.
 */
#include "fl_spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fl_crashlog.h"

#define LOG_EXT ".crashlog"
#define RETRY_EXT ".retry"
#define LOCK_NAME ".reporter.lock"
#define WAIT_NAME ".reporter.wait"
#define NOTES_NAME "rejected.log"

struct fl_spool {
    int dirfd;
    int lockfd; /* -1 until locked */
};

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !memcmp(s + a - b, suf, b);
}

static bool bad_name(const char *name)
{
    return !name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..");
}

/* Open a file of the spool that must be a regular file.  O_NONBLOCK:
 * a FIFO under the name must not hang the reporter while it holds the
 * lock (opening one to write with no reader fails with ENXIO, to read it
 * returns at once); O_NOFOLLOW: a symlink is not followed (-ELOOP).
 * Anything not a regular file is -EINVAL.  Returns the fd or -errno. */
static int open_regular(int dirfd, const char *name, int flags, mode_t mode)
{
    int fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode);
    if (fd < 0)
        return errno == ENXIO ? -EINVAL : -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    return fd;
}

/* NAME + ".retry" into out; -ENAMETOOLONG when it does not fit. */
static int retry_name(char *out, size_t cap, const char *name)
{
    int n = snprintf(out, cap, "%s" RETRY_EXT, name);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int fl_spool_default_dir(char *out, size_t cap)
{
    const char *v;
    int n;
    if ((v = getenv("FAULTLINE_SPOOL")) && *v)
        n = snprintf(out, cap, "%s", v);
    else if ((v = getenv("XDG_STATE_HOME")) && *v)
        n = snprintf(out, cap, "%s/faultline", v);
    else if ((v = getenv("HOME")) && *v)
        n = snprintf(out, cap, "%s/.local/state/faultline", v);
    else
        return -ENOENT;
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int fl_spool_open(const char *dir, fl_spool **out)
{
    *out = NULL;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    fl_spool *sp = calloc(1, sizeof *sp);
    if (!sp) {
        close(fd);
        return -ENOMEM;
    }
    sp->dirfd = fd;
    sp->lockfd = -1;
    *out = sp;
    return 0;
}

void fl_spool_close(fl_spool *sp)
{
    if (!sp)
        return;
    if (sp->lockfd >= 0)
        close(sp->lockfd); /* releases the flock */
    close(sp->dirfd);
    free(sp);
}

/* One reporter at a time works on a spool, and one more may wait for it:
 * the waiter lists the spool only once it runs, so it sends whatever came
 * while it waited, and any other reporter started meanwhile leaves at
 * once (-EALREADY) instead of waiting too.  A program crash-looping under
 * a supervisor starts a reporter per crash (FAULTLINE_REPORTER): ten a
 * second, each waiting up to --lock-wait, were a hundred processes.  The
 * waiter gives its place up as soon as it holds the spool, so a log
 * written after its listing has a waiter of its own. */
int fl_spool_lock(fl_spool *sp, int wait_ms)
{
    if (sp->lockfd >= 0)
        return 0;
    int fd = openat(sp->dirfd, LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    int waitfd = -1;
    bool asked = false;
    for (int waited = 0;; waited += 100) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            break;
        int e = errno;
        if (e == EINTR)
            continue;
        if (e != EWOULDBLOCK || waited >= wait_ms) {
            if (waitfd >= 0)
                close(waitfd);
            close(fd);
            return -e;
        }
        if (!asked) {
            asked = true; /* a spool where the place cannot be made: wait as before */
            waitfd = openat(sp->dirfd, WAIT_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
            if (waitfd >= 0 && flock(waitfd, LOCK_EX | LOCK_NB) != 0) {
                e = errno;
                close(waitfd);
                if (e == EWOULDBLOCK) {
                    close(fd);
                    return -EALREADY;
                }
                waitfd = -1;
            }
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (waitfd >= 0)
        close(waitfd);
    sp->lockfd = fd;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void fl_spool_names_free(char **names, int n)
{
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

/* A temporary file whose writer died before renaming it -- a crash
 * handler killed in the middle of a log (".ID.tmp"), `faultline core
 * --from-kernel` killed while converting (".core-PID.XXXXXX", a saved
 * core of up to --max-core-mb), a reporter killed while noting a retry --
 * is never renamed nor removed by anyone.  After a day no writer is at it
 * still.  Faultline's names only: the writers' own in src/client/spool.c,
 * src/client/trace_dump.c, src/symbols/cmd_spool.c, cmd_core.c and here. */
#define STALE_TEMP_S (24 * 3600)

static bool stale_temp(int dirfd, const char *nm, time_t now)
{
    struct stat st;
    if (!(nm[0] == '.' &&
          (ends_with(nm, ".tmp") || !strncmp(nm, ".core-", 6) || !strncmp(nm, ".core.", 6) ||
           !strncmp(nm, ".minidump.", 10) || !strncmp(nm, ".installation-id.", 17))) &&
        !(!strncmp(nm, "trace-", 6) && ends_with(nm, ".tracedump.part")))
        return false;
    return fstatat(dirfd, nm, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
           now - st.st_mtime > STALE_TEMP_S;
}

int fl_spool_list(fl_spool *sp, char ***names)
{
    time_t now = time(NULL);
    *names = NULL;
    int fd = dup(sp->dirfd);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return -e;
    }
    rewinddir(d); /* the dup shares the offset with earlier listings */
    char **v = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (ends_with(nm, LOG_EXT RETRY_EXT)) {
            /* A retry file whose log is gone (delivered by an older
             * reporter, deleted by the user) is only clutter. */
            char log[NAME_MAX + 1];
            size_t l = strlen(nm) - strlen(RETRY_EXT);
            memcpy(log, nm, l);
            log[l] = '\0';
            struct stat st;
            if (fstatat(sp->dirfd, log, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
                unlinkat(sp->dirfd, nm, 0);
            continue;
        }
        if (stale_temp(sp->dirfd, nm, now)) {
            unlinkat(sp->dirfd, nm, 0);
            continue;
        }
        if (!ends_with(nm, LOG_EXT) || n >= FL_SPOOL_MAX_LOGS)
            continue;
        if (n == cap) {
            int nc = cap ? cap * 2 : 16;
            char **nv = realloc(v, (size_t)nc * sizeof *nv);
            if (!nv) {
                rc = -ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        if (!(v[n] = strdup(nm))) {
            rc = -ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    if (rc) {
        fl_spool_names_free(v, n);
        return rc;
    }
    if (n)
        qsort(v, (size_t)n, sizeof *v, cmp_names);
    *names = v;
    return n;
}

long long fl_spool_age(fl_spool *sp, const char *name)
{
    struct stat st;
    if (bad_name(name))
        return -EINVAL;
    if (fstatat(sp->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -errno;
    long long age = (long long)time(NULL) - (long long)st.st_mtime;
    return age > 0 ? age : 0;
}

int fl_spool_read(fl_spool *sp, const char *name, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (bad_name(name))
        return -EINVAL;
    int fd = open_regular(sp->dirfd, name, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    struct stat st;
    int rc = 0;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto out;
    }
    if ((unsigned long long)st.st_size > FL_CRASHLOG_MAX_BYTES) {
        rc = -EFBIG;
        goto out;
    }
    size_t cap = (size_t)st.st_size, got = 0;
    if (!(buf = malloc(cap + 1))) {
        rc = -ENOMEM;
        goto out;
    }
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            goto out;
        }
        if (r == 0)
            break; /* shrank under us: parse what is there */
        got += (size_t)r;
    }
    buf[got] = '\0';
    *data = buf;
    *len = got;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

int fl_spool_remove(fl_spool *sp, const char *name)
{
    char rn[NAME_MAX + 8];
    if (bad_name(name))
        return -EINVAL;
    if (retry_name(rn, sizeof rn, name) == 0)
        unlinkat(sp->dirfd, rn, 0);
    if (unlinkat(sp->dirfd, name, 0) != 0 && errno != ENOENT)
        return -errno;
    return 0;
}

int fl_spool_retry_load(fl_spool *sp, const char *name, fl_retry_state *st)
{
    memset(st, 0, sizeof *st);
    char rn[NAME_MAX + 8];
    if (bad_name(name) || retry_name(rn, sizeof rn, name))
        return -EINVAL;
    int fd = open_regular(sp->dirfd, rn, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    char text[512];
    ssize_t r = read(fd, text, sizeof text - 1);
    close(fd);
    if (r <= 0)
        return -ENOENT;
    text[r] = '\0';
    /* "key value" lines; unknown keys are ignored so that later versions
     * may add some. */
    bool have_next = false;
    int64_t written = 0; /* 0: a file of a version that did not say */
    for (char *save = NULL, *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        char *sp_ = strchr(ln, ' ');
        if (!sp_)
            continue;
        *sp_ = '\0';
        const char *v = sp_ + 1;
        uint64_t u;
        int64_t i;
        if (!strcmp(ln, "attempts") && fl_parse_u64(v, &u) == 0 && u < 1000000)
            st->attempts = (unsigned)u;
        else if (!strcmp(ln, "next") && fl_parse_i64(v, &i) == 0) {
            st->next = i;
            have_next = true;
        } else if (!strcmp(ln, "status") && fl_parse_u64(v, &u) == 0 && u < 1000)
            st->status = (long)u;
        else if (!strcmp(ln, "written") && fl_parse_i64(v, &i) == 0)
            written = i;
    }
    if (!have_next) {
        memset(st, 0, sizeof *st);
        return -ENOENT;
    }
    int64_t now = (int64_t)time(NULL);
    if (written > now) /* the clock went back: the whole wait, from now (the time that
                        * passed since it was written is not known) */
        st->next = st->next > written ? now + (st->next - written) : now;
    return 0;
}

/* Write text to name atomically: a temp file that the client never takes
 * for a log (no ".crashlog" at the end), then rename. */
static int write_atomic(fl_spool *sp, const char *name, const char *text, size_t len)
{
    char tmp[NAME_MAX + 16];
    int n = snprintf(tmp, sizeof tmp, ".%s.%ld.tmp", name, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return -ENAMETOOLONG;
    /* The name is ours alone; whatever is there (left by a dead process
     * of the same pid, or planted: a FIFO would block the open) goes, and
     * O_EXCL makes sure the file written is the one made here. */
    unlinkat(sp->dirfd, tmp, 0);
    int fd = open_regular(sp->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return fd;
    size_t off = 0;
    int rc = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            break;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0 && !rc)
        rc = -errno;
    if (!rc && renameat(sp->dirfd, tmp, sp->dirfd, name) != 0)
        rc = -errno;
    if (rc)
        unlinkat(sp->dirfd, tmp, 0);
    return rc;
}

int fl_spool_retry_save(fl_spool *sp, const char *name, const fl_retry_state *st)
{
    char rn[NAME_MAX + 8];
    if (bad_name(name) || retry_name(rn, sizeof rn, name))
        return -EINVAL;
    char text[160];
    int n = snprintf(text, sizeof text, "attempts %u\nnext %lld\nstatus %ld\nwritten %lld\n",
                     st->attempts, (long long)st->next, st->status, (long long)time(NULL));
    return write_atomic(sp, rn, text, (size_t)n);
}

long fl_spool_backoff(unsigned attempts, long retry_after_s)
{
    if (retry_after_s >= 0)
        return retry_after_s < 1 ? 1 : retry_after_s;
    long d = FL_SPOOL_BACKOFF_BASE;
    for (unsigned i = 1; i < attempts && d < FL_SPOOL_BACKOFF_MAX; i++)
        d *= 2;
    if (d > FL_SPOOL_BACKOFF_MAX)
        d = FL_SPOOL_BACKOFF_MAX;
    /* Jitter spreads out the reporters of many machines that all lost the
     * server at the same moment. */
    unsigned r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (unsigned)time(NULL) * 2654435761u;
    return d + (long)(r % (unsigned long)(d / 4 + 1));
}

int fl_spool_note(fl_spool *sp, const char *line)
{
    struct stat st;
    if (fstatat(sp->dirfd, NOTES_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_size > FL_SPOOL_NOTES_MAX)
        renameat(sp->dirfd, NOTES_NAME, sp->dirfd, NOTES_NAME ".1");
    int fd = open_regular(sp->dirfd, NOTES_NAME, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0)
        return fd;
    /* One write() per line, so concurrent appenders never interleave. */
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s\n", line);
    size_t len = n < 0 ? 0 : ((size_t)n >= sizeof buf ? sizeof buf - 1 : (size_t)n);
    if (len && buf[len - 1] != '\n')
        buf[len - 1] = '\n';
    int rc = 0;
    if (write(fd, buf, len) != (ssize_t)len)
        rc = -EIO;
    close(fd);
    return rc;
}
