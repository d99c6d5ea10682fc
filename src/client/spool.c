/*
 * spool.c - the default crash-log hooks and the spool directory.
 *
 * SIGNAL-SAFE ZONE from fl_spool_start() down: no heap, no locks, no stdio,
 * no libc formatting; only open/write/fsync/rename/close/unlink and the
 * fl_line helpers.  The spool path, the installation id and the reporter's
 * argument vector are prepared by fl_spool_init() at install time.
 *
 * A log is never visible under its final "<crash id>.crashlog" name before
 * END.  The fast path: at install time an unnamed file is created in the
 * spool (O_TMPFILE) and kept open; on a crash the log is written into it
 * and linkat() gives it its name after END.  That moves the costly part of
 * creating a file (a journaled directory update, 100+ us on ext4) out of the
 * crash, and a failed write leaves nothing at all behind.  The fallback (no
 * O_TMPFILE on the file system, a forked child, the descriptor closed or
 * reused by the application) writes ".<crash id>.tmp" and renames it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
static char reporter_log[FL_PATH_MAX + 16]; /* SPOOL/reporter.log */
static char default_reporter[FL_PATH_MAX];

void fl_spool_default_reporter(const char *path)
{
    if (path && strlen(path) < sizeof default_reporter)
        fl_strlcpy(default_reporter, path, sizeof default_reporter);
}
static int pre_fd = -1;     /* the unnamed file made at install time */
static dev_t pre_dev;
static ino_t pre_ino;
static pid_t pre_pid;
static bool via_tmpfile;    /* log_fd is pre_fd */
static char pre_id[40];     /* crash id chosen at install, "" once used */
static unsigned spool_max;  /* FAULTLINE_SPOOL_MAX: finished logs kept, 0 all */
extern char **environ;

/* The length of name when it is a finished log's, "<crash id>.crashlog"
 * (not hidden), else 0.  Signal-safe. */
static size_t log_name_len(const char *name)
{
    size_t n = fl_strlen(name);
    return name[0] != '.' && n > 9 && !memcmp(name + n - 9, ".crashlog", 9) ? n : 0;
}

/* fl-lint: install-time */
/* ---- install time ---- */

/* 0, or -1 with errno from the call that failed (a component that is a
 * file: ENOTDIR, from mkdir() under it or for the last one from here). */
static int mkdir_p(const char *path)
{
    char tmp[FL_PATH_MAX];
    size_t n = fl_strlcpy(tmp, path, sizeof tmp);
    if (n == 0 || n >= sizeof tmp - 1)
        return errno = ENAMETOOLONG, -1;
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
    if (fstatat(AT_FDCWD, path, &st, 0) != 0)
        return -1;
    return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
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
    /* First run on this spool: create it.  The id is written to a file of
     * our own and linked into place, so the name never shows an empty or
     * half-written file to a process starting at the same moment; of two
     * creators, link() lets one win and the other reads the winner's id.
     * A file that is there but holds no id (an older version's creator
     * killed between create and write) is replaced. */
    char id[40], tmp[FL_PATH_MAX + 64];
    fl_make_uuid(id);
    id[36] = '\n';
    if (join(tmp, sizeof tmp, st->spool, "/.installation-id.") == 0) {
        size_t t = strlen(tmp);
        memcpy(tmp + t, id, 36);
        tmp[t + 36] = '\0';
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            if (write(fd, id, 37) == 37) {
                if (n >= 0)
                    rename(tmp, path);
                else
                    linkat(AT_FDCWD, tmp, AT_FDCWD, path, 0);
            }
            close(fd);
            unlinkat(AT_FDCWD, tmp, 0);
        }
    }
    /* Whoever won: the file's id.  None (a read-only spool): our own. */
    id[36] = '\0';
    if (fl_read_small_file(path, buf, sizeof buf) >= 36)
        memcpy(id, buf, 36);
    memcpy(st->install_id, id, 37);
}

/* 0, or the errno of a spool we may not write into (EACCES, EROFS):
 * the O_TMPFILE open is the kernel's own check, by the effective ids
 * that will write the log. */
static int prepare_tmpfile(const fl_state *st)
{
    /* O_RDWR, not O_WRONLY: where the file cannot be linked (no
     * AT_EMPTY_PATH, no /proc, a seccomp policy), the log is copied out of
     * it into a named file. */
    int fd = fl_open_high(st->spool, O_TMPFILE | O_RDWR | O_CLOEXEC);
    struct stat sb;
    if (fd < 0) {
        if (errno == EACCES || errno == EROFS)
            return errno;
        /* The file system cannot (or will not: /proc, /sys): the crash
         * opens a named file, so one must be possible -- a spool in
         * /proc/self took every crash's log away without a word. */
        char probe[FL_PATH_MAX + 32];
        if (join(probe, sizeof probe, st->spool, "/.faultline-probe") != 0)
            return 0;
        fd = fl_open_high(probe, O_CREAT | O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return errno ? errno : EACCES;
        close(fd);
        unlinkat(AT_FDCWD, probe, 0);
        return 0;
    }
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return 0;
    }
    pre_fd = fd;
    pre_dev = sb.st_dev;
    pre_ino = sb.st_ino;
    pre_pid = fl_getpid();

    /* The crash id, chosen now, and a lookup of the name the log will get:
     * it fails, and the kernel keeps that answer (a negative dentry), so
     * naming the log on a crash does not search the directory on disk
     * first (a third of linkat()'s cost on ext4). */
    char path[FL_PATH_MAX + 64];
    fl_make_uuid(pre_id);
    size_t n = fl_strlcpy(path, st->spool, sizeof path);
    if (n + 1 + 36 + 9 + 1 > sizeof path) {
        pre_id[0] = '\0';
        return 0;
    }
    path[n++] = '/';
    memcpy(path + n, pre_id, 36);
    memcpy(path + n + 36, ".crashlog", 10);
    if (fstatat(AT_FDCWD, path, &sb, 0) == 0)
        pre_id[0] = '\0'; /* taken (!): let the crash draw another */
    return 0;
}

/* The finished logs in the spool.  Counted when the application first
 * asks, not at install: a spool of 20,000 logs takes ~9 ms to read, and
 * under the preload library every process would pay for it at start. */
int fl_spool_count_logs(const char *dir)
{
    int n = 0;
    char buf[4096];
    fl_dir_reader r = {.buf = buf, .cap = sizeof buf};
    const fl_dirent64 *d;
    if ((r.fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return 0;
    while ((d = fl_dir_next(&r)) != NULL)
        n += log_name_len(d->name) != 0;
    close(r.fd);
    return n;
}

/* Sets st->spool, or fails with errno: the spool's variables all unset
 * (ENOENT), a path too long (ENAMETOOLONG), what mkdir() or realpath()
 * said, or a spool we may not write into (EACCES, EROFS: st->spool
 * is set then, for log hooks of the application's own).  st->spool_tried
 * and st->spool_from keep what was tried. */
int fl_spool_init(fl_state *st)
{
    /* Each variable, then what the spool is under it; one string, where
     * tables of pointers would cost a relocation each in the text budget. */
    static const char vars[] = "FAULTLINE_SPOOL\0\0"
                               "XDG_STATE_HOME\0/faultline\0"
                               "HOME\0/.local/state/faultline";
    char *dir = st->spool_tried;
    const char *env = NULL, *var = vars, *under = NULL;
    for (; var < vars + sizeof vars; var = under + strlen(under) + 1) {
        under = var + strlen(var) + 1;
        if ((env = getenv(var)) && *env)
            break;
    }
    st->spool_from = var < vars + sizeof vars ? var : NULL;
    if (!st->spool_from)
        return errno = ENOENT, -1;
    /* Too long for a whole path: its start, for the message. */
    if (join(dir, FL_PATH_MAX, env, under) != 0)
        fl_strlcpy(dir, env, FL_PATH_MAX);
    if (strlen(dir) > FL_PATH_MAX - 64)
        return errno = ENAMETOOLONG, -1;
    if (mkdir_p(dir) != 0)
        return -1;
    if (dir[0] != '/') {
        /* Named by the crash relative to the directory the program is in
         * by then: absolute now. */
        char abs[PATH_MAX];
        if (!realpath(dir, abs))
            return -1;
        if (strlen(abs) > FL_PATH_MAX - 64)
            return errno = ENAMETOOLONG, -1;
        fl_strlcpy(dir, abs, FL_PATH_MAX);
    }
    fl_strlcpy(st->spool, dir, sizeof st->spool);
    load_install_id(st);

    int unwritable = prepare_tmpfile(st);
    /* Pages the crash writes: present now, not faulted in by the handler.
     * 16 KiB of the buffer hold a log with a shallow stack; a longer log
     * faults in the rest (a page touched costs again at exit, so touching
     * all 64 KiB would slow the common case down). */
    fl_prefault(wbuf, 16384);
    fl_prefault(tmp_path, sizeof tmp_path);
    fl_prefault(final_path, sizeof final_path);

    env = getenv("FAULTLINE_REPORTER");
    if (!env || !*env)
        env = default_reporter;
    /* A relative path names the program from the directory the program is
     * in now; at the crash it may be elsewhere.  A name not found stays
     * as it was given. */
    char abs[PATH_MAX];
    if (*env && *env != '/' && realpath(env, abs))
        env = abs;
    if (*env && strlen(env) < sizeof st->reporter) {
        fl_strlcpy(st->reporter, env, sizeof st->reporter);
        reporter_argv[0] = st->reporter;
        reporter_argv[1] = (char *)"--spool";
        reporter_argv[2] = st->spool;
        reporter_argv[3] = NULL;
        join(reporter_log, sizeof reporter_log, st->spool, "/reporter.log");
    }
    env = getenv("FAULTLINE_FSYNC");
    st->do_fsync = env && *env == '1';
    uint64_t max;
    env = getenv("FAULTLINE_SPOOL_MAX");
    spool_max = env && fl_parse_u64(env, &max) == 0 ? (max > 1u << 30 ? 1u << 30 : (unsigned)max)
                                                    : FL_SPOOL_MAX_DEFAULT;
    return unwritable ? (errno = unwritable, -1) : 0;
}

/* fl-lint: signal-safe */
/* ---- signal-safe ---- */

/* unlinkat(), which naming the log needs anyway: one import less. */
static void unlink_tmp(void)
{
    unlinkat(AT_FDCWD, tmp_path, 0);
}

bool fl_spool_take_crash_id(char out[40])
{
    if (!pre_id[0] || fl_getpid() != pre_pid)
        return false; /* used, none, or a forked child: its own id */
    fl_strlcpy(out, pre_id, 40);
    pre_id[0] = '\0';
    return true;
}

int fl_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
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
    if (wlen && fl_write_all(log_fd, wbuf, wlen) != 0) {
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

    wlen = 0;
    log_failed = false;
    via_tmpfile = false;
    /* Use the unnamed file only if it is still ours: same process, and the
     * descriptor still refers to that empty, unnamed inode (an application
     * that closed every descriptor may have reused the number). */
    struct stat sb;
    if (pre_fd >= 0 && fl_getpid() == pre_pid && fstat(pre_fd, &sb) == 0 && sb.st_dev == pre_dev &&
        sb.st_ino == pre_ino && sb.st_nlink == 0 && sb.st_size == 0) {
        log_fd = pre_fd;
        pre_fd = -1;
        via_tmpfile = true;
        errno = e;
        return 1;
    }
    log_fd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    errno = e;
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
        if (fl_write_all(log_fd, s, n) != 0 || fl_write_all(log_fd, "\n", 1) != 0) {
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

/* Names the unnamed file.  linkat(fd, "", AT_EMPTY_PATH) links exactly the
 * inode behind the descriptor and skips a path walk through /proc (a third
 * of the cost of naming); Linux >= 6.10 allows it to the credentials that
 * opened the file, older kernels only with CAP_DAC_READ_SEARCH.  Else
 * linkat() through /proc/self/fd; without /proc, copy the log to a named
 * temporary file and rename that. */
static int name_tmpfile(void)
{
    if (linkat(log_fd, "", AT_FDCWD, final_path, AT_EMPTY_PATH) == 0)
        return 0;
    char proc[48] = "/proc/self/fd/";
    size_t n = fl_strlen(proc);
    fl_fmt_u64(proc + n, (uint64_t)log_fd);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, final_path, AT_SYMLINK_FOLLOW) == 0)
        return 0;
    int out = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0)
        return -1;
    ssize_t r;
    off_t off = 0;
    while ((r = syscall(SYS_pread64, log_fd, wbuf, sizeof wbuf, off)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || fl_write_all(out, wbuf, (size_t)r) != 0)
            break; /* r != 0: failed */
        off += r;
    }
    if (r != 0) {
        close(out);
    } else if ((!fl_g.do_fsync || syscall(SYS_fsync, out) == 0) && close(out) == 0 &&
               rename(tmp_path, final_path) == 0) {
        return 0;
    }
    unlink_tmp();
    return -1;
}

/* ---- the spool's bound
 *
 * A program that crashes at start under a supervisor that restarts it
 * writes a log a second, or ten (systemd's RestartSec is 100 ms by
 * default), and the reporter, if it runs at all, does not send them as
 * fast: the spool would fill the disk.  So after each log, the oldest
 * finished logs beyond spool_max are deleted -- of every program that
 * shares the spool, newest kept, as systemd-coredump and Crashpad prune
 * --, at most PRUNE_AT_ONCE a crash (a bound lowered on a large spool
 * comes down over the next crashes).  One getdents64 pass counts (some
 * 10 us for a hundred logs); only a spool over the bound pays a second
 * pass with an fstatat() per log, which keeps the PRUNE_AT_ONCE oldest.
 * The passes look at PRUNE_SCAN entries at most: a spool of a million
 * files (left by a version without the bound, or FAULTLINE_SPOOL_MAX=0)
 * costs a crash some 30 ms, not seconds, and loses the oldest logs among
 * those it looked at. */
#define PRUNE_AT_ONCE 8
#define PRUNE_SCAN 8192
#define PRUNE_NAME_MAX 80 /* "<crash id>.crashlog": 36 + 9, a MojoCrash id 64 + 9 */

static struct {
    int64_t age;
    char name[PRUNE_NAME_MAX];
} oldest[PRUNE_AT_ONCE]; /* the oldest first */

static void prune(void)
{
    int dfd;
    if (!spool_max || (dfd = open(fl_g.spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return;
    const char *own = final_path + fl_strlen(fl_g.spool) + 1;
    unsigned logs = 0, found = 0;
    /* Pass 0 counts the logs; pass 1 keeps the oldest regular files among
     * them but own.  wbuf is free once the log is out. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass && (logs <= spool_max || syscall(SYS_lseek, dfd, 0, SEEK_SET) != 0))
            break;
        fl_dir_reader r = {.fd = dfd, .buf = wbuf, .cap = sizeof wbuf};
        const fl_dirent64 *d;
        for (int seen = 0; seen < PRUNE_SCAN && (d = fl_dir_next(&r)); seen++) {
            struct stat sb;
            size_t n = log_name_len(d->name);
            if ((d->type != DT_REG && d->type != DT_UNKNOWN) || !n || n >= PRUNE_NAME_MAX)
                continue;
            if (!pass) {
                logs++;
                continue;
            }
            if (!strcmp(d->name, own) || fstatat(dfd, d->name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
                !S_ISREG(sb.st_mode))
                continue;
            int64_t age = sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
            unsigned at = found < PRUNE_AT_ONCE ? found++ : PRUNE_AT_ONCE;
            for (; at > 0 && age < oldest[at - 1].age; at--)
                if (at < PRUNE_AT_ONCE)
                    oldest[at] = oldest[at - 1];
            if (at < PRUNE_AT_ONCE) {
                oldest[at].age = age;
                memcpy(oldest[at].name, d->name, n + 1);
            }
        }
    }
    for (unsigned i = 0; i < found && logs > spool_max; i++, logs--)
        unlinkat(dfd, oldest[i].name, 0);
    close(dfd);
}

int fl_spool_end(void)
{
    if (log_fd < 0)
        return 0;
    if (flush() != 0 || log_failed || (fl_g.do_fsync && syscall(SYS_fsync, log_fd) != 0)) {
        fl_spool_abandon();
        return 0;
    }
    if (via_tmpfile) {
        int rc = name_tmpfile();
        close(log_fd);
        log_fd = -1;
        via_tmpfile = false;
        if (rc != 0)
            return 0;
    } else {
        close(log_fd);
        log_fd = -1;
        if (rename(tmp_path, final_path) != 0) {
            unlink_tmp();
            return 0;
        }
    }
    if (fl_g.do_fsync) {
        /* Make the new name itself durable. */
        int dfd = open(fl_g.spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            syscall(SYS_fsync, dfd);
            close(dfd);
        }
    }
    prune();
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
        if (!via_tmpfile)
            unlink_tmp(); /* an unnamed file simply vanishes */
        via_tmpfile = false;
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
         * group being signalled.  Nothing of the crashed program's
         * standard descriptors: on its terminal the reporter's question
         * would race the shell for the keys, and in its pipes our lines
         * would be its output (and keep them open).  Standard input is
         * /dev/null, so the reporter asks no one; what it says goes to
         * SPOOL/reporter.log, of its last run.  (A system call, as below:
         * one C library import less.) */
        syscall(SYS_setsid);
        /* Not the crashed thread's mask, which holds every signal but the
         * faults (catcher.c) -- nor one the program had: a reporter that
         * ignores SIGTERM would outlive any stop. */
        static const uint64_t zero[4]; /* an empty mask; the kernel's SIG_DFL sigaction */
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, zero, NULL, sizeof zero[0]);
        /* Nor SIGXFSZ ignored, as it is while the log is written (an
         * ignored signal stays ignored across execve). */
        syscall(SYS_rt_sigaction, SIGXFSZ, zero, NULL, sizeof zero[0]);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        /* Not through a symlink (whose target it would truncate), nor
         * into a FIFO (whose open would wait for a reader for ever):
         * then /dev/null. */
        int out = open(reporter_log,
                       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
        struct stat st;
        if (out >= 0 && (fstat(out, &st) || !S_ISREG(st.st_mode))) {
            close(out);
            out = -1;
        }
        if (out < 0)
            out = null;
        dup2(null, 0);
        dup2(out, 1);
        dup2(out, 2);
        syscall(SYS_execve, reporter_argv[0], reporter_argv, environ);
        /* Said where one looks when no report arrives: an empty
         * reporter.log would not tell a wrong FAULTLINE_REPORTER. */
        char msg[FL_PATH_MAX + 96];
        size_t n = fl_strlcpy(msg, "faultline: cannot run FAULTLINE_REPORTER ", sizeof msg);
        n += fl_strlcpy(msg + n, reporter_argv[0], sizeof msg - n - 32);
        n += fl_strlcpy(msg + n, ": errno ", sizeof msg - n);
        n += fl_fmt_u64(msg + n, (uint64_t)errno);
        msg[n++] = '\n';
        /* System calls, not the C library's: this raw clone's thread is
         * its parent's to the library (a sanitizer's _exit asked for the
         * thread's attributes and failed, a line in reporter.log). */
        syscall(SYS_write, 2, msg, n);
        syscall(SYS_exit_group, 127);
    }
}
