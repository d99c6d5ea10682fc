/*
 * spool.c - the default crash-log hooks and the spool directory.
 *
 * SIGNAL-SAFE ZONE from fl_spool_start() down: no heap, no locks, no stdio,
 * no libc formatting; only open/write/fsync/rename/close/unlink and the
 * fl_line helpers.  The spool path, the installation id and the reporter's
 * argument vector are prepared by fl_spool_init() at install time.
 *
 * A log is written to ".<crash id>.tmp" and renamed to "<crash id>.crashlog"
 * only after END, so a reader never sees a partial log under the final name;
 * a failed write (full disk) leaves no *.crashlog behind at all.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* rename() only: a system call wrapper */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fl_client.h"

static int log_fd = -1;
static bool log_failed;
static char tmp_path[FL_PATH_MAX + 64];
static char final_path[FL_PATH_MAX + 64];
static char wbuf[65536]; /* lines are batched: one write() per 64 KiB */
static size_t wlen;
static char *reporter_argv[4];
extern char **environ;

/* fl-lint: install-time */
/* ---- install time ---- */

static int mkdir_p(const char *path)
{
    char tmp[FL_PATH_MAX];
    size_t n = fl_strlcpy(tmp, path, sizeof tmp);
    if (n == 0 || n >= sizeof tmp - 1)
        return -1;
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == '\0') {
            char c = tmp[i];
            tmp[i] = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
                return -1;
            tmp[i] = c;
        }
    }
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

static int join(char *out, size_t cap, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la + lb + 1 >= cap)
        return -1;
    memcpy(out, a, la);
    memcpy(out + la, b, lb + 1);
    return 0;
}

static void load_install_id(fl_state *st)
{
    char path[FL_PATH_MAX + 32], buf[64];
    if (join(path, sizeof path, st->spool, "/installation-id"))
        return;
    int n = fl_read_small_file(path, buf, sizeof buf);
    if (n >= 36) {
        memcpy(st->install_id, buf, 36);
        st->install_id[36] = '\0';
        return;
    }
    /* First run on this spool: create it.  O_EXCL so that two processes
     * starting at once agree on one id (the loser re-reads). */
    char id[40];
    fl_make_uuid(id);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        id[36] = '\n';
        ssize_t w = write(fd, id, 37);
        close(fd);
        id[36] = '\0';
        if (w == 37) {
            memcpy(st->install_id, id, 37);
            return;
        }
    }
    if (fl_read_small_file(path, buf, sizeof buf) >= 36) {
        memcpy(st->install_id, buf, 36);
        st->install_id[36] = '\0';
    } else {
        memcpy(st->install_id, id, 37); /* read-only spool: per-process id */
    }
}

int fl_spool_init(fl_state *st)
{
    const char *env = getenv("FAULTLINE_SPOOL");
    char dir[FL_PATH_MAX];
    if (env && *env) {
        fl_strlcpy(dir, env, sizeof dir);
    } else if ((env = getenv("XDG_STATE_HOME")) && *env) {
        if (join(dir, sizeof dir, env, "/faultline"))
            return -1;
    } else if ((env = getenv("HOME")) && *env) {
        if (join(dir, sizeof dir, env, "/.local/state/faultline"))
            return -1;
    } else {
        return -1;
    }
    if (strlen(dir) > FL_PATH_MAX - 64 || mkdir_p(dir) != 0)
        return -1;
    fl_strlcpy(st->spool, dir, sizeof st->spool);
    load_install_id(st);

    st->pending_logs = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] != '.' && n > 9 && !strcmp(e->d_name + n - 9, ".crashlog"))
            st->pending_logs++;
    }
    if (d)
        closedir(d);

    env = getenv("FAULTLINE_REPORTER");
    if (env && *env && strlen(env) < sizeof st->reporter) {
        fl_strlcpy(st->reporter, env, sizeof st->reporter);
        reporter_argv[0] = st->reporter;
        reporter_argv[1] = (char *)"--spool";
        reporter_argv[2] = st->spool;
        reporter_argv[3] = NULL;
    }
    env = getenv("FAULTLINE_FSYNC");
    st->do_fsync = env && *env == '1';
    return 0;
}

/* fl-lint: signal-safe */
/* ---- signal-safe ---- */

static int write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(log_fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int flush(void)
{
    if (wlen && write_all(wbuf, wlen) != 0) {
        log_failed = true;
        wlen = 0;
        return -1;
    }
    wlen = 0;
    return 0;
}

int fl_spool_start(const char *app)
{
    (void)app;
    char *p;
    size_t n;
    int e = errno;
    if (!fl_g.spool[0])
        return 0;
    /* "<spool>/.<id>.tmp" and "<spool>/<id>.crashlog" */
    n = fl_strlcpy(tmp_path, fl_g.spool, sizeof tmp_path);
    p = tmp_path + n;
    p += fl_strlcpy(p, "/.", 3);
    p += fl_strlcpy(p, fl_cur.crash_id, 40);
    fl_strlcpy(p, ".tmp", 5);
    n = fl_strlcpy(final_path, fl_g.spool, sizeof final_path);
    p = final_path + n;
    p += fl_strlcpy(p, "/", 2);
    p += fl_strlcpy(p, fl_cur.crash_id, 40);
    fl_strlcpy(p, ".crashlog", 10);

    log_fd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    errno = e;
    wlen = 0;
    log_failed = false;
    return log_fd >= 0;
}

int fl_spool_line(const char *s)
{
    size_t n = fl_strlen(s);
    if (log_fd < 0 || log_failed)
        return 0;
    if (wlen + n + 1 > sizeof wbuf && flush() != 0)
        return 0;
    if (n + 1 > sizeof wbuf) { /* cannot happen with fl_line, but be exact */
        if (write_all(s, n) != 0 || write_all("\n", 1) != 0) {
            log_failed = true;
            return 0;
        }
        return 1;
    }
    memcpy(wbuf + wlen, s, n);
    wbuf[wlen + n] = '\n';
    wlen += n + 1;
    return 1;
}

int fl_spool_end(void)
{
    if (log_fd < 0)
        return 0;
    if (flush() != 0 || log_failed || (fl_g.do_fsync && fsync(log_fd) != 0)) {
        fl_spool_abandon();
        return 0;
    }
    close(log_fd);
    log_fd = -1;
    if (rename(tmp_path, final_path) != 0) {
        unlink(tmp_path);
        return 0;
    }
    if (fl_g.do_fsync) {
        /* Make the rename itself durable. */
        int dfd = open(fl_g.spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    return 1;
}

bool fl_spool_is_open(void)
{
    return log_fd >= 0 && !log_failed;
}

void fl_spool_abandon(void)
{
    if (log_fd >= 0) {
        close(log_fd);
        log_fd = -1;
        unlink(tmp_path);
    }
}

void fl_spool_run_reporter(void)
{
    if (!reporter_argv[0])
        return;
    /* A raw clone instead of fork(): glibc's fork runs atfork handlers that
     * may take locks a crashed thread holds.  The child only execs. */
    long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
        /* New session: the reporter must outlive the crashing process's
         * group being signalled. */
        setsid();
        execve(reporter_argv[0], reporter_argv, environ);
        _exit(127);
    }
}
