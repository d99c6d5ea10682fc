/*
 * cmd_dump.c - `faultline dump PID`: the flight recorder of a running
 * process, which libfaultline writes into its spool when it gets
 * FAULTLINE_TRACE_SIGNAL (src/client/trace_dump.c), decoded into text with
 * the process's own files -- the reference's "DumpNow" from outside, for a
 * process that hangs rather than crashes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fl_crashlog.h"
#include "fl_proc.h"
#include "fl_tracedecode.h"

static void usage(FILE *f)
{
    fputs("usage: faultline dump [--spool DIR] [--signal N] [--timeout SECONDS] [--keep] [--ids] "
          "[--force] PID\n"
          "  Asks the running process PID (a program with libfaultline installed, or run with\n"
          "  LD_PRELOAD=libfaultline-preload.so) for its flight recorder: sends it its trace\n"
          "  signal, waits for the trace-ID dump it writes into its spool, and prints it as\n"
          "  text, decoded with the process's own files (as `faultline decode` does).  The\n"
          "  process goes on running.  A process that does not run libfaultline, or does not\n"
          "  catch the signal, is sent nothing.\n"
          "  --spool DIR      where the process writes its dumps (default: what it resolves\n"
          "                   from its environment: FAULTLINE_SPOOL, else\n"
          "                   $XDG_STATE_HOME/faultline, else $HOME/.local/state/faultline)\n"
          "  --signal N       the real-time signal to send (default: the process's\n"
          "                   FAULTLINE_TRACE_SIGNAL, else SIGRTMAX-4)\n"
          "  --timeout SECONDS\n"
          "                   how long to wait for the dump (default 5, up to 3600)\n"
          "  --keep           keep the dump file in the spool (its path goes to stderr)\n"
          "  --ids            print the trace-ID dump itself, not decoded\n"
          "  --force          send even when no libfaultline shows in the process (a stripped\n"
          "                   program built with the static library)\n"
          "exit status: 0 done; 1 some events could not be decoded (the dump is kept, for\n"
          "faultline decode --obj); 2 error\n",
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

/* The value of field `key` ("SigCgt:") of /proc/PID/status into out, or
 * false when it cannot be read. */
static bool status_field(pid_t pid, const char *key, char *out, size_t cap)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        if ((found = !strncmp(line, key, strlen(key))))
            snprintf(out, cap, "%s", line + strlen(key) + strspn(line + strlen(key), " \t"));
    if (f)
        fclose(f);
    return found;
}

/* Whether the process catches sig (its SigCgt mask); -1 when the status
 * cannot be read. */
static int catches(pid_t pid, int sig)
{
    char v[64];
    if (!status_field(pid, "SigCgt:", v, sizeof v))
        return -1;
    unsigned long long mask = strtoull(v, NULL, 16);
    return sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1);
}

/* Whether the process runs libfaultline: a libfaultline*.so mapped, or
 * its program defines faultline_install (the static library).  A signal
 * that something else catches may mean anything to it (systemd takes
 * SIGRTMIN+26, which is SIGRTMAX-4, to change its log target); a crash it
 * logged itself must not be logged again from its core. */
int fl_proc_runs_libfaultline(pid_t pid)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1; /* cannot tell: errno says why */
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "/libfaultline") != NULL;
    fclose(f);
    if (found)
        return 1;
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while (e && !found && (scn = elf_nextscn(e, scn))) {
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
            !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 1; i < n && !found; i++) {
            GElf_Sym sym;
            const char *name;
            found = gelf_getsym(d, (int)i, &sym) && sym.st_shndx != SHN_UNDEF &&
                    (name = elf_strptr(e, sh.sh_link, sym.st_name)) &&
                    !strcmp(name, "faultline_install");
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return found ? 1 : 0;
}

/* The process's spool as the client resolves it, from its environment,
 * seen through its root (a container) and its working directory (a
 * relative path), into out.  0; -1 when the environment does not tell; 1
 * when the path does not fit. */
static int spool_from_env(const char *env, size_t elen, pid_t pid, char *out, size_t cap)
{
    const char *v, *sub = "";
    if ((v = env_get(env, elen, "FAULTLINE_SPOOL")) && *v)
        ;
    else if ((v = env_get(env, elen, "XDG_STATE_HOME")) && *v)
        sub = "/faultline";
    else if ((v = env_get(env, elen, "HOME")) && *v)
        sub = "/.local/state/faultline";
    else
        return -1;
    int n = v[0] == '/' ? snprintf(out, cap, "/proc/%d/root%s%s", (int)pid, v, sub)
                        : snprintf(out, cap, "/proc/%d/cwd/%s%s", (int)pid, v, sub);
    return n < 0 || (size_t)n >= cap - 40 ? 1 : 0;
}

/* The process's state letter (R, S, D, T, t, Z...), or 0. */
static char proc_state(pid_t pid)
{
    char v[64];
    return status_field(pid, "State:", v, sizeof v) ? v[0] : 0;
}

/* A signal number as libfaultline takes it: real-time; 0: off. */
static int parse_sig(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || (v != 0 && (v < SIGRTMIN || v > SIGRTMAX)))
        return -1;
    *out = (int)v;
    return 0;
}

/* A signal variable of the process's environment, read as libfaultline
 * read it there (install.c): not a number, the default; 0, none; a number
 * that is no real-time signal, not_rt. */
static int env_sig(const char *s, int def, int not_rt)
{
    uint64_t v;
    if (fl_parse_u64(s, &v))
        return def;
    return v == 0 ? 0 : v >= (uint64_t)SIGRTMIN && v <= (uint64_t)SIGRTMAX ? (int)v : not_rt;
}

static int copy_out(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 2;
    char buf[8192];
    size_t n;
    bool ok = true;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0)
        ok = fwrite(buf, 1, n, stdout) == n;
    ok = ok && !ferror(f);
    fclose(f);
    return fflush(stdout) == 0 && ok ? 0 : 2;
}

int fl_cmd_dump(int argc, char **argv)
{
    static const struct option opts[] = {
        {"spool", required_argument, NULL, 's'},   {"signal", required_argument, NULL, 'S'},
        {"timeout", required_argument, NULL, 't'}, {"keep", no_argument, NULL, 'k'},
        {"ids", no_argument, NULL, 'i'},           {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},          {0, 0, 0, 0}};
    const char *spool_opt = NULL, *sig_opt = NULL;
    double timeout = 5;
    bool keep = false, ids = false, force = false;
    int c;
    optind = 1;
    opterr = 0; /* our own words, named "faultline dump" */
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
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
                fprintf(stderr, "faultline dump: --timeout %s: seconds, above 0 and up to 3600\n",
                        optarg);
                return 2;
            }
            break;
        case 'k':
            keep = true;
            break;
        case 'i':
            ids = true;
            break;
        case 'f':
            force = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            fprintf(stderr, "faultline dump: %s '%s'; see faultline dump --help\n",
                    c == ':' ? "a value is missing after" : "unknown option", argv[optind - 1]);
            return 2;
        }
    }
    if (argc - optind != 1) {
        /* One line that says what is wrong, as every command's usage
         * errors do. */
        if (optind >= argc)
            fprintf(stderr, "faultline dump: no process id given; see faultline dump --help\n");
        else
            fprintf(stderr,
                    "faultline dump: one process at a time (%d given); see faultline dump "
                    "--help\n",
                    argc - optind);
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
    /* A pidfd: the signal goes to this process, not to one that took its
     * number after it exited, and its exit ends the wait. */
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd < 0) {
        fprintf(stderr, "faultline dump: process %d: %s\n", (int)pid, strerror(errno));
        return 2;
    }
    size_t elen = 0;
    char *env = read_environ(pid, &elen);
    int rc = 2, dfd = -1;
    if (!env && !(spool_opt && sig_opt))
        fprintf(stderr,
                "faultline dump: process %d: cannot read its environment (%s): using the "
                "default signal; give --spool%s\n",
                (int)pid, strerror(errno), spool_opt ? "" : " (needed)");
    if (!env && !spool_opt)
        goto out;

    /* The signal, as libfaultline in that process chose it. */
    int sig = SIGRTMAX - 4, dsig = SIGRTMAX - 3;
    const char *s = sig_opt ? sig_opt : env_get(env, elen, "FAULTLINE_TRACE_SIGNAL");
    const char *ds = env_get(env, elen, "FAULTLINE_DUMP_SIGNAL");
    if (sig_opt && (parse_sig(s, &sig) || sig == 0)) {
        fprintf(stderr, "faultline dump: signal %s: not a real-time signal (%d to %d)\n", s,
                SIGRTMIN, SIGRTMAX);
        goto out;
    }
    /* The process's own variables, as its libfaultline read them: a value
     * it did not take as a signal (SIGRTMAX-5, 100) means what it meant
     * there, the default or none. */
    if (!sig_opt && s)
        sig = env_sig(s, SIGRTMAX - 4, 0);
    if (ds)
        dsig = env_sig(ds, SIGRTMAX - 3, SIGRTMAX - 3);
    if (sig == 0) {
        fprintf(stderr,
                "faultline dump: process %d has its trace signal turned off "
                "(FAULTLINE_TRACE_SIGNAL=%.40s)\n",
                (int)pid, s ? s : "");
        goto out;
    }
    if (sig == dsig) {
        fprintf(stderr,
                "faultline dump: signal %d is also the process's FAULTLINE_DUMP_SIGNAL: "
                "libfaultline does not take it for dumps\n",
                sig);
        goto out;
    }
    /* Never send a signal nobody catches: its default action would kill
     * the process.  Nor one that something other than libfaultline may
     * catch. */
    int runs = force ? 1 : fl_proc_runs_libfaultline(pid);
    if (runs < 0) {
        fprintf(stderr,
                "faultline dump: cannot tell whether process %d runs libfaultline: its memory "
                "map cannot be read (%s; run as its user or as root, or --force)\n",
                (int)pid, strerror(errno));
        goto out;
    }
    if (!runs) {
        fprintf(stderr,
                "faultline dump: process %d does not run libfaultline (no libfaultline*.so "
                "mapped, no faultline_install in its program); --force if it is a "
                "stripped program built with the static library\n",
                (int)pid);
        goto out;
    }
    char st = proc_state(pid);
    if (st == 'T' || st == 't' || st == 'Z') {
        fprintf(stderr, "faultline dump: process %d is %s: it cannot dump now\n", (int)pid,
                st == 'Z' ? "a zombie" : "stopped");
        goto out;
    }

    /* The spool: as the client resolves it, from the process's
     * environment, seen through its root (a container) and its working
     * directory (a relative path). */
    char spool[4200];
    char envspool[4200];
    int has_env_spool = env ? spool_from_env(env, elen, pid, envspool, sizeof envspool) : -1;
    int n = spool_opt ? snprintf(spool, sizeof spool, "%s", spool_opt)
            : has_env_spool == 0 ? snprintf(spool, sizeof spool, "%s", envspool)
                                 : -1;
    if (!spool_opt && has_env_spool != 0) {
        fprintf(stderr, has_env_spool > 0 ? "faultline dump: the spool's path is too long\n"
                                          : "faultline dump: cannot tell process %d's spool from "
                                            "its environment: give it with --spool DIR\n",
                (int)pid);
        goto out;
    }
    if (n < 0 || (size_t)n >= sizeof spool - 40) {
        fprintf(stderr, "faultline dump: the spool's path is too long\n");
        goto out;
    }
    struct stat sb, eb;
    if (stat(spool, &sb) || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "faultline dump: %s: %s (give the spool with --spool DIR)\n", spool,
                errno ? strerror(errno) : "not a directory");
        goto out;
    }
    /* The process writes into its own spool whatever --spool says: another
     * directory would be waited on in vain, and the dump left behind. */
    if (spool_opt && has_env_spool == 0 && stat(envspool, &eb) == 0 &&
        (eb.st_dev != sb.st_dev || eb.st_ino != sb.st_ino)) {
        fprintf(stderr,
                "faultline dump: process %d writes its dumps into %s (its environment's "
                "spool), not into %s\n",
                (int)pid, envspool, spool_opt);
        goto out;
    }

    /* The file the process will write is named by a number only this run
     * knows: no other run's dump, and no old one, is taken for it. */
    unsigned cookie = 0;
    while (!cookie)
        if (getrandom(&cookie, sizeof cookie, 0) != sizeof cookie)
            cookie = (unsigned)getpid() ^ (unsigned)time(NULL);
    cookie &= 0x7fffffff;
    /* The spool held open: a path through /proc/PID/root or cwd goes away
     * when the process exits, and a dump it wrote just before must still
     * be found, printed and removed.  Named by its path from here when
     * that leads to the same directory (no container), else through the
     * descriptor. */
    dfd = open(spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        fprintf(stderr, "faultline dump: %s: %s\n", spool, strerror(errno));
        goto out;
    }
    char dir[sizeof spool];
    snprintf(dir, sizeof dir, "/proc/self/fd/%d", dfd);
    char real[sizeof spool];
    ssize_t rl = readlink(dir, real, sizeof real - 41);
    if (rl > 0 && real[0] == '/') {
        real[rl] = '\0';
        if (stat(real, &eb) == 0 && eb.st_dev == sb.st_dev && eb.st_ino == sb.st_ino)
            memcpy(dir, real, (size_t)rl + 1);
    }
    char found[4300];
    snprintf(found, sizeof found, "%s/trace-%u.tracedump", dir, cookie);

    /* Checked again right before sending: an exec() in between resets the
     * handler. */
    int caught = catches(pid, sig);
    if (caught != 1) {
        if (caught < 0)
            fprintf(stderr, "faultline dump: process %d: cannot read its status\n", (int)pid);
        else
            fprintf(stderr,
                    "faultline dump: process %d does not catch signal %d: libfaultline is not "
                    "installed in it (faultline_install, or LD_PRELOAD=libfaultline-preload.so), "
                    "or it uses another signal (--signal)\n",
                    (int)pid, sig);
        goto out;
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = (int)cookie;
    if (syscall(SYS_pidfd_send_signal, pfd, sig, &si, 0) != 0) {
        fprintf(stderr, "faultline dump: process %d: %s\n", (int)pid, strerror(errno));
        goto out;
    }
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool have = false, gone = false;
    for (;;) {
        have = access(found, F_OK) == 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
        if (have || gone || waited > timeout)
            break;
        struct pollfd p = {.fd = pfd, .events = POLLIN};
        gone = poll(&p, 1, 20) == 1; /* readable: the process has exited */
    }
    if (!have) {
        if (gone)
            fprintf(stderr, "faultline dump: process %d exited before it wrote its dump\n",
                    (int)pid);
        else
            fprintf(stderr,
                    "faultline dump: process %d wrote no dump into %s within %g s (does it "
                    "handle signal %d itself?)\n",
                    (int)pid, spool, timeout, sig);
        goto out;
    }
    if (ids) {
        rc = copy_out(found);
    } else {
        char *dargv[] = {(char *)"dump", found, NULL}; /* its messages then say "dump" */
        fflush(stdout);
        rc = fl_cmd_decode(2, dargv);
    }
    /* Kept too when some events could not be decoded: for faultline decode
     * --obj, with the files the process had. */
    if (keep || rc != 0)
        fprintf(stderr, "faultline dump: the dump is %s\n", found);
    else
        unlink(found);
out:
    free(env);
    if (dfd >= 0)
        close(dfd);
    close(pfd);
    return rc;
}
