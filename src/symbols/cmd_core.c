/*
 * cmd_core.c - `faultline core CORE`: a crash log from a core dump, for
 * programs that do not run libfaultline (fl_core.h does the reading; the
 * log goes into the spool by fl_cmd_spool.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl_cmd_spool.h"
#include "fl_core.h"
#include "fl_exit.h"
#include "fl_proc.h"

static void usage(FILE *f)
{
    fputs("usage: faultline core CORE [--exe PATH] [--obj FILE|DIR]... [--app NAME]\n"
          "                      [--app-version V] [--spool DIR | -o FILE]\n"
          "       faultline core --from-kernel --spool DIR [--app NAME] [--app-version V]\n"
          "                      [--max-core-mb N] PID TID SIGNAL TIME COMM\n"
          "\n"
          "Turns an ELF core file (x86-64 or aarch64) of a crashed program into a Faultline\n"
          "crash log, so that crashes of programs without libfaultline reach the same\n"
          "reporter, server and groups: the signal, the crashing thread's stack, registers\n"
          "and raw stack memory, the other threads' stacks and the loaded objects with\n"
          "their build ids.  The program's files must be where they were (or be found by\n"
          "build id under /usr/lib/debug) for the stacks to unwind.  The log says\n"
          "CRASH_SOURCE core.\n"
          "  --exe PATH         the crashed program's file (default: found from the core)\n"
          "  --obj FILE|DIR     a program or library the crashed process had loaded, used\n"
          "                     for the module with its build id (as the core's memory\n"
          "                     has it) before the path the core names (a core from\n"
          "                     another machine: your build's files); a directory gives\n"
          "                     every such file under it; repeatable\n"
          "  --app NAME         APPLICATION_NAME (default: the executable's file name)\n"
          "  --app-version V    APPLICATION_VERSION (default: none)\n"
          "  --spool DIR        write <crash id>.crashlog into DIR atomically, with DIR's\n"
          "                     installation id, for faultline-report to send (default:\n"
          "                     $FAULTLINE_SPOOL, else $XDG_STATE_HOME/faultline, else\n"
          "                     $HOME/.local/state/faultline); then the oldest logs beyond\n"
          "                     $FAULTLINE_SPOOL_MAX (default 100, 0: all kept) are deleted\n"
          "  -o, --output FILE  write the log to FILE instead ('-': standard output)\n"
          "  --from-kernel      be the kernel's core_pattern program: the core comes on\n"
          "                     standard input, the operands are core_pattern's\n"
          "                     %P %i %s %t %e; the program's path and thread names are\n"
          "                     read from /proc/PID first; the core is kept under DIR\n"
          "                     until converted.  A process that maps libfaultline is\n"
          "                     skipped (it logged its crash itself).  Install with\n"
          "                     echo '|/usr/local/bin/faultline core --from-kernel --spool\n"
          "                     /var/spool/faultline %P %i %s %t %e' >\n"
          "                     /proc/sys/kernel/core_pattern\n"
          "  --max-core-mb N    with --from-kernel, refuse a core larger than N MiB\n"
          "                     (default 2048)\n"
          "The path of the log written goes to standard output.\n"
          "Exit: 0 done (or skipped); 1 not a core, a truncated core, another architecture,\n"
          "no threads, a core over --max-core-mb, or the log could not be written (nothing\n"
          "is left behind); 64 usage.\n",
          f);
}

/* fl_cmd_write_log's writer: the core's log, with the spool's id. */
typedef struct core_job {
    const char *core;
    fl_core_opts *opts;
} core_job;

static int write_core_log(void *arg, FILE *out, const char *install_id, char crash_id[40],
                          char *err, size_t errcap)
{
    core_job *j = arg;
    fl_core_info info;
    j->opts->install_id = install_id;
    int rc = fl_core_to_crashlog(j->core, j->opts, out, &info, err, errcap);
    if (rc == FL_CORE_OK)
        memcpy(crash_id, info.crash_id, sizeof info.crash_id);
    return rc;
}

/* Writes the log of `core` into `spool` or to `output` (fl_cmd_spool.h);
 * prints its path.  Returns an exit status, the reason on stderr. */
static int convert(const char *core, fl_core_opts *opts, const char *spool, const char *output)
{
    core_job j = {core, opts};
    int rc = fl_cmd_write_log("faultline core", spool, output, "core", write_core_log, &j);
    /* An --obj file (not one found in a directory) that no module had:
     * most likely another build's. */
    for (size_t i = 0; rc == FL_EXIT_OK && opts->objs && i < opts->objs->n; i++)
        if (opts->objs->o[i].given && !opts->objs->o[i].used)
            fprintf(stderr,
                    "faultline core: warning: --obj %s (build id %s) was not used: no module of "
                    "the core has that build id (another build?)\n",
                    opts->objs->o[i].path, opts->objs->o[i].id);
    return rc;
}

/* ---- --from-kernel: the core_pattern pipe ---- */

/* The kernel starts a core_pattern program with the core on fd 0 and
 * may leave 1 and 2 closed; a file opened later would take their number
 * and receive what is printed.  /dev/null holds 1; 2 goes to the kernel's
 * log (dmesg), where an administrator finds why a core gave no log, or
 * /dev/null where that cannot be written. */
static void hold_std_fds(void)
{
    for (int fd = 1; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0) {
            int n = fd == 2 ? open("/dev/kmsg", O_WRONLY | O_CLOEXEC) : -1;
            if (n < 0)
                n = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (n >= 0 && n != fd) {
                dup2(n, fd);
                close(n);
            }
        }
}

/* Thread tid's id in its own pid namespace, the one the kernel writes in
 * the core (the last of the NSpid line in its status), or tid itself. */
static unsigned long inner_tid(const char *proc, unsigned long tid)
{
    char path[128], line[512];
    snprintf(path, sizeof path, "%s/task/%lu/status", proc, tid);
    FILE *f = fopen(path, "re");
    unsigned long inner = tid;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        for (char *p = line + 6, *end; *p; p = end) {
            unsigned long v = strtoul(p, &end, 10);
            if (end == p)
                break;
            inner = v;
        }
        break;
    }
    if (f)
        fclose(f);
    return inner;
}

/* The names of the process's threads, while it is still there, by the
 * ids the core has: a process in a container (another pid namespace) has
 * other ids there than in /proc here. */
static size_t thread_names(const char *proc, fl_core_thread_name *out, size_t cap)
{
    char path[128];
    snprintf(path, sizeof path, "%s/task", proc);
    DIR *d = opendir(path);
    size_t n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while (n < cap && (e = readdir(d))) {
        char *end;
        unsigned long tid = strtoul(e->d_name, &end, 10);
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || *end)
            continue;
        snprintf(path, sizeof path, "%s/task/%lu/comm", proc, tid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(out[n].name, sizeof out[n].name, f)) {
            out[n].name[strcspn(out[n].name, "\n")] = '\0';
            out[n].tid = inner_tid(proc, tid);
            n++;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Copies standard input into the spool under a dot-name (the reporter
 * reads only *.crashlog), at most max bytes.  Returns 0, or -1 with the
 * reason in why and nothing left behind. */
static int save_stdin(const char *spool, long pid, uint64_t max, char *path, size_t cap, char *why,
                      size_t whycap)
{
    snprintf(path, cap, "%s/.core-%ld.XXXXXX", spool, pid);
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(why, whycap, "%.400s: %s", path, strerror(errno));
        return -1;
    }
    static char buf[1 << 16];
    uint64_t total = 0;
    for (;;) {
        ssize_t r = read(0, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, whycap, "reading the core: %s", strerror(errno));
            break;
        }
        if (r == 0) {
            if (total == 0) {
                snprintf(why, whycap, "no core on standard input");
                break;
            }
            close(fd);
            return 0;
        }
        total += (uint64_t)r;
        if (total > max) {
            snprintf(why, whycap, "the core is larger than %" PRIu64 " MiB (--max-core-mb)",
                     max >> 20);
            break;
        }
        for (ssize_t o = 0; o < r;) {
            ssize_t w = write(fd, buf + o, (size_t)(r - o));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                snprintf(why, whycap, "%.400s: %s", path, strerror(errno));
                close(fd);
                unlink(path);
                return -1;
            }
            o += w;
        }
    }
    close(fd);
    unlink(path);
    return -1;
}

/* How long process pid ran before the crash at `when` (seconds since the
 * epoch): its start (field 22 of /proc/PID/stat, clock ticks since boot)
 * after the boot (btime in /proc/stat).  false when /proc does not say. */
static bool process_uptime(const char *proc, int64_t when, int64_t *out)
{
    char path[96], buf[1024];
    snprintf(path, sizeof path, "%s/stat", proc);
    FILE *f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    /* The command name may hold anything but ends at the last ')'. */
    char *p = strrchr(buf, ')');
    unsigned long long start = 0;
    int field = 2;
    for (; p && *p && field < 22; p++)
        if (*p == ' ')
            field++;
    if (!p || field != 22 || sscanf(p, "%llu", &start) != 1)
        return false;
    long long btime = -1;
    char line[256];
    if (!(f = fopen("/proc/stat", "re")))
        return false;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lld", &btime) == 1)
            break;
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (btime < 0 || hz <= 0)
        return false;
    int64_t up = when - (btime + (int64_t)(start / (unsigned long long)hz));
    *out = up < 0 ? 0 : up; /* btime is rounded to the second */
    return true;
}

static int from_kernel(int argc, char **argv, fl_core_opts *opts, const char *spool,
                       uint64_t max_bytes)
{
    /* %P %i %s %t %e: the pid and tid (in the initial pid namespace, as
     * /proc here has them), the signal, the time, the command name (which
     * may hold blanks: the rest of the line). */
    if (argc < 5) {
        fprintf(stderr,
                "faultline core: --from-kernel wants %%P %%i %%s %%t %%e (%d given); see "
                "faultline core --help\n",
                argc);
        return FL_EXIT_USAGE;
    }
    char *end;
    long pid = strtol(argv[0], &end, 10);
    long long when = strtoll(argv[3], &end, 10);
    if (pid <= 0 || *end || when < 0) {
        fprintf(stderr,
                "faultline core: --from-kernel: '%s' or '%s' is not a pid and a time; see "
                "faultline core --help\n",
                argv[0], argv[3]);
        return FL_EXIT_USAGE;
    }
    char comm[256] = "";
    for (int i = 4; i < argc; i++) {
        size_t n = strlen(comm);
        snprintf(comm + n, sizeof comm - n, "%s%s", i > 4 ? " " : "", argv[i]);
    }
    hold_std_fds();

    /* What only the living process tells, taken before its core is read:
     * once the kernel has written all of it, the process may be gone. */
    char proc[64], link[96], exe[4096];
    snprintf(proc, sizeof proc, "/proc/%ld", pid);
    /* Its own handler logged the crash before the default action dumped
     * the core: a second log would count it twice. */
    if (fl_proc_runs_libfaultline((pid_t)pid) == 1) {
        fprintf(stderr, "faultline core: process %ld runs libfaultline, which logged the crash\n",
                pid);
        return FL_EXIT_OK;
    }
    /* A process with a root of its own (a container's, a chroot): the
     * core names its files as it saw them, so they are looked up in its
     * root, held open here because the process may be gone once its core
     * is read.  Its executable too: the path /proc shows here is not one
     * the core knows. */
    snprintf(link, sizeof link, "%s/root", proc);
    int root = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat rst, ost;
    if (root >= 0 && stat("/", &ost) == 0 && fstat(root, &rst) == 0 &&
        (rst.st_dev != ost.st_dev || rst.st_ino != ost.st_ino)) {
        opts->have_root = true;
        opts->root_fd = root;
    } else if (root >= 0) {
        close(root);
    }
    snprintf(link, sizeof link, "%s/exe", proc);
    ssize_t n = opts->have_root ? -1 : readlink(link, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    /* A program replaced while it ran: the path is still its name. */
    size_t el = strlen(exe);
    if (el > 10 && !strcmp(exe + el - 10, " (deleted)"))
        exe[el - 10] = '\0';
    if (!opts->exe && exe[0])
        opts->exe = exe;
    if (!opts->app)
        opts->app = opts->exe ? NULL : comm;
    static fl_core_thread_name names[FL_CORE_MAX_THREADS + 1];
    opts->thread_names = names;
    opts->nthread_names = thread_names(proc, names, sizeof names / sizeof names[0]);
    opts->crash_time = when;
    opts->have_uptime = process_uptime(proc, when, &opts->uptime);

    char core[4200], why[512], shown[64];
    snprintf(shown, sizeof shown, "process %ld's core", pid);
    opts->name = shown; /* the saved file is gone when the message is read */
    int rc;
    if (save_stdin(spool, pid, max_bytes, core, sizeof core, why, sizeof why) != 0) {
        fprintf(stderr, "faultline core: process %ld: %s\n", pid, why);
        rc = FL_EXIT_ERROR;
    } else {
        rc = convert(core, opts, spool, NULL);
        unlink(core);
    }
    if (opts->have_root)
        close(opts->root_fd);
    return rc;
}

static int core_main(int argc, char **argv, fl_elf_objs *objs)
{
    enum { O_EXE = 256, O_APP, O_VER, O_SPOOL, O_KERNEL, O_MAX, O_OBJ };
    static const struct option lopts[] = {
        {"exe", required_argument, NULL, O_EXE},
        {"obj", required_argument, NULL, O_OBJ},
        {"app", required_argument, NULL, O_APP},
        {"app-version", required_argument, NULL, O_VER},
        {"spool", required_argument, NULL, O_SPOOL},
        {"output", required_argument, NULL, 'o'},
        {"from-kernel", no_argument, NULL, O_KERNEL},
        {"max-core-mb", required_argument, NULL, O_MAX},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fl_core_opts opts = {.crash_time = -1};
    const char *spool = NULL, *output = NULL;
    bool kernel = false;
    uint64_t max_mb = 2048;
    optind = 1;
    opterr = 0;
    int c;
    /* With --from-kernel (written before the operands in a core_pattern
     * line), options stop at the first operand ("+"), so that the command
     * name the kernel passes last (%e) is never read as one. */
    const char *optstring = ":o:h";
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--from-kernel"))
            optstring = "+:o:h";
    while ((c = getopt_long(argc, argv, optstring, lopts, NULL)) != -1) {
        switch (c) {
        case O_EXE:
            opts.exe = optarg;
            break;
        case O_OBJ: {
            char why[256];
            if (fl_elf_objs_add(objs, optarg, FL_ELF_WANT_CODE, why, sizeof why) != 0) {
                fprintf(stderr, "faultline core: --obj %s: %s\n", optarg, why);
                return FL_EXIT_ERROR;
            }
            break;
        }
        case O_APP:
            opts.app = optarg;
            break;
        case O_VER:
            opts.app_version = optarg;
            break;
        case O_SPOOL:
            spool = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case O_KERNEL:
            kernel = true;
            break;
        case O_MAX: {
            char *end;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (*end || v == 0 || v > (1ull << 20)) {
                fprintf(stderr,
                        "faultline core: --max-core-mb wants 1 to 1048576; see faultline core "
                        "--help\n");
                return FL_EXIT_USAGE;
            }
            max_mb = v;
            break;
        }
        case 'h':
            usage(stdout);
            return FL_EXIT_OK;
        case ':':
            fprintf(stderr, "faultline core: %s needs a value; see faultline core --help\n",
                    argv[optind - 1]);
            return FL_EXIT_USAGE;
        default:
            fprintf(stderr, "faultline core: unknown option '%s'; see faultline core --help\n",
                    argv[optind - 1]);
            return FL_EXIT_USAGE;
        }
    }
    if (spool && output) {
        fprintf(stderr, "faultline core: --spool and -o exclude each other; see faultline core "
                        "--help\n");
        return FL_EXIT_USAGE;
    }
    if (kernel && objs->n) {
        fprintf(stderr, "faultline core: --obj is for a core from elsewhere, not with "
                        "--from-kernel (the files are where the process had them); see "
                        "faultline core --help\n");
        return FL_EXIT_USAGE;
    }
    if (kernel && !spool) {
        fprintf(stderr, "faultline core: --from-kernel needs --spool DIR; see faultline core "
                        "--help\n");
        return FL_EXIT_USAGE;
    }
    if (!kernel && optind + 1 != argc) {
        if (optind == argc)
            fprintf(stderr, "faultline core: no core file given; see faultline core --help\n");
        else
            fprintf(stderr,
                    "faultline core: one core file at a time (%d given); see faultline core "
                    "--help\n",
                    argc - optind);
        return FL_EXIT_USAGE;
    }
    opts.objs = objs;
    /* EXECUTABLE and OBJECT_PATH are absolute, as the client writes them. */
    char exe_abs[PATH_MAX];
    if (opts.exe && opts.exe[0] != '/' && realpath(opts.exe, exe_abs))
        opts.exe = exe_abs;
    char dir[4096];
    if (!output && !spool) {
        if (fl_cmd_default_spool(dir, sizeof dir) != 0) {
            fprintf(stderr, "faultline core: no spool (set FAULTLINE_SPOOL or use --spool)\n");
            return FL_EXIT_USAGE;
        }
        spool = dir;
    }
    if (spool && fl_cmd_mkdirs(spool) != 0) {
        fprintf(stderr, "faultline core: %s: %s\n", spool, strerror(errno));
        return FL_EXIT_ERROR;
    }
    if (kernel)
        return from_kernel(argc - optind, argv + optind, &opts, spool, max_mb << 20);
    return convert(argv[optind], &opts, spool, output);
}

int fl_cmd_core(int argc, char **argv)
{
    fl_elf_objs objs = {0};
    int rc = core_main(argc, argv, &objs);
    fl_elf_objs_free(&objs);
    return rc;
}
