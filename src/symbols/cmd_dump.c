/*
 * cmd_dump.c - `faultline dump PID`: the flight recorder of a running
 * process, which libfaultline writes into its spool when it gets
 * FAULTLINE_TRACE_SIGNAL (src/client/trace_dump.c), decoded into text with
 * the process's own files -- the reference's "DumpNow" from outside, for a
 * process that hangs rather than crashes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fl_tracedecode.h"

static void usage(FILE *f)
{
    fputs("usage: faultline dump [--spool DIR] [--signal N] [--timeout SECONDS] [--keep] [--ids] "
          "PID\n"
          "  Asks the running process PID (a program with libfaultline installed, or run with\n"
          "  LD_PRELOAD=libfaultline-preload.so) for its flight recorder: sends it its trace\n"
          "  signal, waits for the trace-ID dump it writes into its spool, and prints it as\n"
          "  text, decoded with the process's own files (as `faultline decode` does).  The\n"
          "  process goes on running.\n"
          "  --spool DIR      where the process writes its dumps (default: what it resolves\n"
          "                   from its environment: FAULTLINE_SPOOL, else\n"
          "                   $XDG_STATE_HOME/faultline, else $HOME/.local/state/faultline)\n"
          "  --signal N       the signal to send (default: the process's\n"
          "                   FAULTLINE_TRACE_SIGNAL, else SIGRTMAX-4)\n"
          "  --timeout S      seconds to wait for the dump (default 5)\n"
          "  --keep           keep the dump file in the spool (its path goes to stderr)\n"
          "  --ids            print the trace-ID dump itself, not decoded\n"
          "exit status: 0 done; 1 some events could not be decoded; 2 error\n",
          f);
}

/* The process's environment as it started (NUL-separated), or NULL. */
static char *read_environ(pid_t pid, size_t *len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        char *nb = realloc(buf, (cap *= 2) + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static const char *env_get(const char *env, size_t len, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; env && i < len; i += strlen(env + i) + 1)
        if (!strncmp(env + i, name, nl) && env[i + nl] == '=')
            return env + i + nl + 1;
    return NULL;
}

/* Whether the process catches sig (its SigCgt mask); -1 when the status
 * cannot be read. */
static int catches(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int rc = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "SigCgt:", 7)) {
            unsigned long long mask = strtoull(line + 7, NULL, 16);
            rc = sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1);
            break;
        }
    fclose(f);
    return rc;
}

/* Names trace-PID-*.tracedump in dir, as a malloc'd NUL-separated list
 * ending with an empty name (NULL when dir cannot be read). */
static char *list_dumps(const char *dir, pid_t pid)
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "trace-%d-", (int)pid);
    size_t len = 0, pl = strlen(prefix);
    char *out = calloc(1, 1);
    struct dirent *e;
    while (out && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, pl) || n < 10 || strcmp(e->d_name + n - 10, ".tracedump"))
            continue;
        char *no = realloc(out, len + n + 2);
        if (!no) {
            free(out);
            out = NULL;
            break;
        }
        out = no;
        memcpy(out + len, e->d_name, n + 1);
        len += n + 1;
        out[len] = '\0';
    }
    closedir(d);
    return out;
}

static bool listed(const char *list, const char *name)
{
    for (const char *p = list; p && *p; p += strlen(p) + 1)
        if (!strcmp(p, name))
            return true;
    return false;
}

static int copy_out(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 2;
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (fwrite(buf, 1, n, stdout) != n)
            break;
    fclose(f);
    return fflush(stdout) == 0 ? 0 : 2;
}

int fl_cmd_dump(int argc, char **argv)
{
    static const struct option opts[] = {{"spool", required_argument, NULL, 's'},
                                         {"signal", required_argument, NULL, 'S'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"keep", no_argument, NULL, 'k'},
                                         {"ids", no_argument, NULL, 'i'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0, 0, 0, 0}};
    const char *spool_opt = NULL, *sig_opt = NULL;
    double timeout = 5;
    bool keep = false, ids = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's':
            spool_opt = optarg;
            break;
        case 'S':
            sig_opt = optarg;
            break;
        case 't':
            timeout = strtod(optarg, &end);
            if (!*optarg || *end || !(timeout > 0 && timeout <= 3600)) {
                fprintf(stderr, "faultline dump: --timeout %s: seconds, above 0\n", optarg);
                return 2;
            }
            break;
        case 'k':
            keep = true;
            break;
        case 'i':
            ids = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (argc - optind != 1) {
        usage(stderr);
        return 2;
    }
    char *end;
    errno = 0;
    long lpid = strtol(argv[optind], &end, 10);
    if (!*argv[optind] || *end || errno || lpid <= 0 || lpid > 0x3fffffff) {
        fprintf(stderr, "faultline dump: %s: not a process id\n", argv[optind]);
        return 2;
    }
    pid_t pid = (pid_t)lpid;
    if (kill(pid, 0) != 0) {
        fprintf(stderr, "faultline dump: process %d: %s\n", (int)pid, strerror(errno));
        return 2;
    }
    size_t elen = 0;
    char *env = read_environ(pid, &elen);

    /* The signal: as libfaultline in that process chose it. */
    const char *s = sig_opt ? sig_opt : env_get(env, elen, "FAULTLINE_TRACE_SIGNAL");
    int sig = SIGRTMAX - 4;
    if (s) {
        long v = strtol(s, &end, 10);
        if (!*s || *end || v < 0 || v > SIGRTMAX) {
            fprintf(stderr, "faultline dump: signal %s: not a signal number\n", s);
            goto fail;
        }
        if (v == 0) {
            fprintf(stderr,
                    "faultline dump: process %d has its trace signal turned off "
                    "(FAULTLINE_TRACE_SIGNAL=0)\n",
                    (int)pid);
            goto fail;
        }
        sig = (int)v;
    }
    /* Never send a signal nobody catches: its default action would kill
     * the process. */
    int caught = catches(pid, sig);
    if (caught != 1) {
        if (caught < 0)
            fprintf(stderr, "faultline dump: process %d: cannot read its status\n", (int)pid);
        else
            fprintf(stderr,
                    "faultline dump: process %d does not catch signal %d: it has no libfaultline "
                    "installed (faultline_install, or LD_PRELOAD=libfaultline-preload.so), or it "
                    "uses another signal (--signal)\n",
                    (int)pid, sig);
        goto fail;
    }

    /* The spool: as the client resolves it, from the process's
     * environment; a relative one from its working directory. */
    char spool[4096];
    const char *v;
    int n;
    if (spool_opt)
        n = snprintf(spool, sizeof spool, "%s", spool_opt);
    else if ((v = env_get(env, elen, "FAULTLINE_SPOOL")) && *v)
        n = v[0] == '/' ? snprintf(spool, sizeof spool, "%s", v)
                        : snprintf(spool, sizeof spool, "/proc/%d/cwd/%s", (int)pid, v);
    else if ((v = env_get(env, elen, "XDG_STATE_HOME")) && *v)
        n = snprintf(spool, sizeof spool, "%s/faultline", v);
    else if ((v = env_get(env, elen, "HOME")) && *v)
        n = snprintf(spool, sizeof spool, "%s/.local/state/faultline", v);
    else {
        fprintf(stderr,
                "faultline dump: cannot tell process %d's spool from its environment: "
                "give it with --spool DIR\n",
                (int)pid);
        goto fail;
    }
    if (n < 0 || (size_t)n >= sizeof spool) {
        fprintf(stderr, "faultline dump: the spool's path is too long\n");
        goto fail;
    }
    char *before = list_dumps(spool, pid);
    if (!before) {
        fprintf(stderr, "faultline dump: %s: %s (give the spool with --spool DIR)\n", spool,
                strerror(errno));
        goto fail;
    }
    if (kill(pid, sig) != 0) {
        fprintf(stderr, "faultline dump: process %d: %s\n", (int)pid, strerror(errno));
        free(before);
        goto fail;
    }
    char found[4096 + 300] = "";
    struct timespec t0, now, nap = {0, 20 * 1000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        char *after = list_dumps(spool, pid);
        for (const char *p = after; p && *p && !found[0]; p += strlen(p) + 1)
            if (!listed(before, p))
                snprintf(found, sizeof found, "%s/%s", spool, p);
        free(after);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
        if (found[0] || waited > timeout)
            break;
        nanosleep(&nap, NULL);
    }
    free(before);
    if (!found[0]) {
        fprintf(stderr,
                "faultline dump: process %d wrote no dump into %s within %g s (is it stopped, or "
                "does it handle signal %d itself?)\n",
                (int)pid, spool, timeout, sig);
        goto fail;
    }
    int rc;
    if (ids) {
        rc = copy_out(found);
    } else {
        char *dargv[] = {(char *)"decode", found, NULL};
        fflush(stdout);
        rc = fl_cmd_decode(2, dargv);
    }
    if (keep)
        fprintf(stderr, "faultline dump: the dump is %s\n", found);
    else
        unlink(found);
    free(env);
    return rc;
fail:
    free(env);
    return 2;
}
