/*
 * sysinfo.c - facts about the machine and process, gathered at install time
 * so that the crash handler only copies strings.  Also the few small
 * signal-safe helpers (clock, tid, ids) the handler shares.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "fl_client.h"

/* ---- signal-safe helpers ---- */

int64_t fl_clock_ns(int clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

pid_t fl_gettid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

pid_t fl_getpid(void)
{
    return (pid_t)syscall(SYS_getpid);
}

int fl_read_small_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    if (fd < 0 || cap == 0)
        return -1;
    while (len + 1 < cap) {
        ssize_t r = read(fd, buf + len, cap - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    return (int)len;
}

/* A random version-4 UUID.  getrandom(2) is a plain system call, so this is
 * usable from the crash handler; if it fails (old kernel, seccomp) the
 * clock, pid and tid still make the id unique in practice. */
void fl_make_uuid(char out[40])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t b[16];
    long n = syscall(SYS_getrandom, b, sizeof b, 0x0001 /* GRND_NONBLOCK */);
    if (n != (long)sizeof b) {
        uint64_t x = (uint64_t)fl_clock_ns(CLOCK_REALTIME) ^ ((uint64_t)fl_getpid() << 32) ^
                     (uint64_t)fl_gettid() ^
                     (uint64_t)fl_clock_ns(CLOCK_MONOTONIC) * 0x9e3779b97f4a7c15ULL;
        for (int i = 0; i < 16; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[i] = (uint8_t)x;
        }
    }
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

/* fl-lint: install-time */
/* ---- install time ---- */

/* Writes to every page of [p, p+n) so that it is present and private now.
 * The crash handler's scratch buffers are zero-initialised statics: left
 * alone, each first write to one of their pages during the crash is a page
 * fault (about a quarter of the handler's time, measured).  The write is an
 * atomic OR with 0: the value cannot change even if another thread uses the
 * buffer at the same moment. */
void fl_prefault(void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    for (size_t off = 0; off < n; off += 4096 - ((a + off) & 4095))
        __atomic_fetch_or((unsigned char *)p + off, 0, __ATOMIC_RELAXED);
}

int fl_open_high(const char *path, int flags)
{
    int fd = open(path, flags, 0600);
    if (fd >= 0 && fd < 3) {
        /* Through syscall(): one C library import less. */
        int high = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3);
        close(fd);
        fd = high;
    }
    return fd;
}

/* Value of KEY=value in an os-release file, unquoted. */
static void os_release_value(const char *text, const char *key, char *out, size_t cap)
{
    size_t klen = strlen(key);
    const char *p = text;
    out[0] = '\0';
    while (p && *p) {
        /* No strncmp(): one import less (memcmp once the line is long enough) */
        if (fl_strnlen(p, klen) == klen && !memcmp(p, key, klen) && p[klen] == '=') {
            const char *v = p + klen + 1, *e = strchr(v, '\n');
            size_t n = e ? (size_t)(e - v) : strlen(v);
            if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
                v++;
                n -= 2;
            }
            if (n >= cap)
                n = cap - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
}

int fl_sysinfo_init(fl_state *st)
{
    struct utsname u; /* the kernel's struct new_utsname */
    if (syscall(SYS_uname, &u) == 0) {
        fl_strlcpy(st->kernel_release, u.release, sizeof st->kernel_release);
        fl_strlcpy(st->kernel_version, u.version, sizeof st->kernel_version);
        fl_strlcpy(st->machine, u.machine, sizeof st->machine);
    }
    char osr[4096];
    if (fl_read_small_file("/etc/os-release", osr, sizeof osr) > 0 ||
        fl_read_small_file("/usr/lib/os-release", osr, sizeof osr) > 0) {
        os_release_value(osr, "NAME", st->os_name, sizeof st->os_name);
        os_release_value(osr, "VERSION_ID", st->os_version, sizeof st->os_version);
        os_release_value(osr, "PRETTY_NAME", st->os_pretty, sizeof st->os_pretty);
    }
    ssize_t n = readlink("/proc/self/exe", st->exe, sizeof st->exe - 1);
    st->exe[n > 0 ? n : 0] = '\0';
    const char *fn = (const char *)getauxval(AT_EXECFN);
    if (n <= 0 && fn) {
        /* No /proc (a chroot, a container without it): the name the
         * program was started by, against the working directory when it
         * is relative -- at install, early in the program, mostly still
         * the one it was started in.  Without it the log named no
         * program, and the server could not use the file at its path. */
        size_t at = 0;
        if (fn[0] != '/' && getcwd(st->exe, sizeof st->exe - 2)) {
            at = strlen(st->exe);
            st->exe[at++] = '/';
            if (fn[0] == '.' && fn[1] == '/')
                fn += 2;
        }
        fl_strlcpy(st->exe + at, fn, sizeof st->exe - at);
    }
    st->pid = fl_getpid();
    st->install_mono_ns = fl_clock_ns(CLOCK_MONOTONIC);
    return 0;
}

/* fl-lint: signal-safe */
const char *fl_signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return NULL;
    }
}
