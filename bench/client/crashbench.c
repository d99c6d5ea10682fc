/*
 * crashbench.c - what the crash catcher costs.
 *
 *   crashbench crash N SPOOL        time from fault to process end, N crashes
 *                                   per configuration, printed as a table
 *   crashbench install N DIR SPOOL  faultline_install() with the libraries in
 *                                   DIR dlopen()ed first, N fresh processes
 *   crashbench install-once DIR     (internal) one such process
 *
 * Fault to end: the parent forks; the child installs the handler (or not),
 * writes CLOCK_MONOTONIC into shared memory right before a NULL read, and
 * the parent reads the clock again when waitpid() returns.  So the figure
 * covers the kernel's signal delivery, the whole handler (log written and
 * renamed), re-raising and the kernel tearing the process down; the
 * "no handler" row is the same path without Faultline, and the difference
 * is what Faultline adds.  Configurations are interleaved crash by crash so
 * that machine noise hits them alike.  Core dumps are off in the children.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "faultline.h"

static volatile uintptr_t zero_addr;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t pct(int64_t *v, int n, int p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    int i = (int)((int64_t)(n - 1) * p / 100);
    return v[i];
}

static void empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4096];
    while (d && (e = readdir(d))) {
        if (strstr(e->d_name, ".crashlog") || strstr(e->d_name, ".tmp")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    if (d)
        closedir(d);
}

/* ---- fault to end ---- */

/* The configurations, interleaved crash by crash.  The first three are
 * what a user gets (default hooks); the last differs only in its die()
 * hook, which stamps the clock and then lets the fault recur unhandled:
 * it splits the total into the handler's own work (fault to die()) and the
 * rest (re-raise, kernel teardown, waitpid). */
enum { CFG_NONE, CFG_FL, CFG_FL_FSYNC, CFG_FL_TRACED, CFG_FL_SPLIT, NCFG };
static const char *const cfg_name[NCFG] = {
    "no handler", "faultline, FAULTLINE_FSYNC=0", "faultline, FAULTLINE_FSYNC=1",
    "faultline, =0, recorder full", "faultline, =0, die() stamped"};

/* Shared with the children: [0] right before the fault, [1] when die()
 * starts (CFG_FL_SPLIT only). */
static volatile int64_t *stamps;

static void die_stamp(void)
{
    stamps[1] = mono_ns();
    signal(SIGSEGV, SIG_DFL); /* returning re-runs the NULL read: killed */
}

/* One crash; returns fault-to-reaped ns, and the handler's share in
 * *handler (0 when not measured). */
static int64_t one_crash(int cfg, const char *spool, int64_t *handler)
{
    stamps[0] = stamps[1] = 0;
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        struct rlimit nocore = {0, 0};
        setrlimit(RLIMIT_CORE, &nocore);
        prctl(PR_SET_DUMPABLE, 0); /* no core even with a piped core_pattern */
        setenv("FAULTLINE_SPOOL", spool, 1);
        setenv("FAULTLINE_FSYNC", cfg == CFG_FL_FSYNC ? "1" : "0", 1);
        faultline_hooks h = {0};
        if (cfg == CFG_FL_SPLIT)
            h.die = die_stamp;
        if (cfg != CFG_NONE && !faultline_install("crashbench", "1", &h))
            _exit(2);
        if (cfg == CFG_FL_TRACED) {
            /* A full flight recorder: the log gets its newest 500 events,
             * 100 breadcrumbs and some state. */
            for (int i = 0; i < 20000; i++)
                FAULTLINE_TRACE("request %d from %s took %.3f ms", i, "alpha.example.org",
                                (double)(i & 1023) / 7);
            for (int i = 0; i < 200; i++)
                faultline_breadcrumb("net", "GET /api/v1/items -> 200");
            faultline_set_state("screen", "settings");
        }
        stamps[0] = mono_ns();
        _exit(*(volatile int *)zero_addr);
    }
    int st;
    waitpid(pid, &st, 0);
    int64_t end = mono_ns();
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV || stamps[0] == 0) {
        fprintf(stderr, "crashbench: child did not crash as expected (status 0x%x)\n", st);
        exit(1);
    }
    *handler = stamps[1] ? stamps[1] - stamps[0] : 0;
    return end - stamps[0];
}

static int bench_crash(int n, const char *spool)
{
    stamps = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (stamps == MAP_FAILED || n < 1)
        return 1;
    int64_t *t[NCFG], *h = calloc((size_t)n, sizeof *h), dummy;
    for (int c = 0; c < NCFG; c++)
        t[c] = calloc((size_t)n, sizeof(int64_t));
    for (int c = 0; c < NCFG; c++) /* warm the page cache and the spool */
        one_crash(c, spool, &dummy);
    empty_dir(spool);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < NCFG; c++) {
            t[c][i] = one_crash(c, spool, c == CFG_FL_SPLIT ? &h[i] : &dummy);
            if (c != CFG_NONE)
                empty_dir(spool); /* outside the measured interval */
        }
    }
    int64_t base_med = pct(t[CFG_NONE], n, 50);
    printf("Fault to process end, %d crashes each (SIGSEGV, NULL read, fork()ed child):\n", n);
    printf("  %-30s %10s %10s %18s\n", "configuration", "median us", "p99 us",
           "added (median)");
    for (int c = 0; c < NCFG; c++) {
        int64_t med = pct(t[c], n, 50), p99 = pct(t[c], n, 99);
        char added[32] = "-";
        if (c != CFG_NONE)
            snprintf(added, sizeof added, "+%.0f us (x%.2f)", (med - base_med) / 1000.0,
                     (double)med / (double)base_med);
        printf("  %-30s %10.0f %10.0f %18s\n", cfg_name[c], med / 1000.0, p99 / 1000.0, added);
    }
    printf("  %-30s %10.0f %10.0f\n", "  of which fault -> die()", pct(h, n, 50) / 1000.0,
           pct(h, n, 99) / 1000.0);
    return 0;
}

/* ---- install cost ---- */

static int load_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4096];
    int n = 0;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".so"))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (!dlopen(p, RTLD_NOW | RTLD_LOCAL)) {
            fprintf(stderr, "crashbench: %s\n", dlerror());
            exit(1);
        }
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

static int install_once(const char *dir)
{
    int n = *dir ? load_dir(dir) : 0;
    int64_t t0 = mono_ns();
    int ok = faultline_install("crashbench", "1", NULL);
    int64_t t1 = mono_ns();
    printf("%d %lld\n", ok ? n : -1, (long long)(t1 - t0));
    return ok ? 0 : 1;
}

/* Runs `self install-once dir` n times; returns the median ns. */
static int64_t install_series(const char *self, const char *dir, const char *spool, int n,
                              int *nlibs)
{
    int64_t *v = calloc((size_t)n, sizeof *v);
    for (int i = 0; i < n; i++) {
        int pfd[2];
        if (pipe(pfd) != 0)
            exit(1);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(pfd[1], 1);
            close(pfd[0]);
            setenv("FAULTLINE_SPOOL", spool, 1);
            execl(self, self, "install-once", dir, (char *)NULL);
            _exit(127);
        }
        close(pfd[1]);
        char buf[128] = "";
        ssize_t r = read(pfd[0], buf, sizeof buf - 1);
        close(pfd[0]);
        int st;
        waitpid(pid, &st, 0);
        long long ns = 0;
        if (r <= 0 || sscanf(buf, "%d %lld", nlibs, &ns) != 2 || *nlibs < 0) {
            fprintf(stderr, "crashbench: install-once failed\n");
            exit(1);
        }
        v[i] = ns;
    }
    int64_t med = pct(v, n, 50);
    free(v);
    return med;
}

static int bench_install(const char *self, int n, const char *dir, const char *spool)
{
    int nbase = 0, nlibs = 0;
    int64_t base = install_series(self, "", spool, n, &nbase);
    int64_t many = install_series(self, dir, spool, n, &nlibs);
    printf("faultline_install(), median of %d fresh processes:\n", n);
    printf("  %-40s %12s\n", "loaded objects", "median us");
    printf("  %-40s %12.0f\n", "program's own (exe, libc, ld.so, vdso)", base / 1000.0);
    char label[64];
    snprintf(label, sizeof label, "+ %d dlopen()ed libraries", nlibs);
    printf("  %-40s %12.0f\n", label, many / 1000.0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "crash"))
        return bench_crash(atoi(argv[2]), argv[3]);
    if (argc >= 5 && !strcmp(argv[1], "install"))
        return bench_install("/proc/self/exe", atoi(argv[2]), argv[3], argv[4]);
    if (argc >= 3 && !strcmp(argv[1], "install-once"))
        return install_once(argv[2]);
    fprintf(stderr, "usage: crashbench crash N SPOOL | install N DIR SPOOL\n");
    return 2;
}
