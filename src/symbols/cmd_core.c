/*
 * cmd_core.c - `faultline core CORE`: a crash log from a core dump, for
 * programs that do not run libfaultline (fl_core.h does the reading).
 *
 * The log goes into a spool directory the way the client puts one there:
 * written under a dot-name the reporter does not look at, then renamed to
 * "<crash id>.crashlog", so faultline-report never sees half a log.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl_core.h"
#include "fl_exit.h"

static void usage(FILE *f)
{
    fputs("usage: faultline core CORE [--exe PATH] [--app NAME] [--app-version V]\n"
          "                      [--spool DIR | -o FILE]\n"
          "\n"
          "Turns an ELF core file (x86-64 or aarch64) of a crashed program into a Faultline\n"
          "crash log, so that crashes of programs without libfaultline reach the same\n"
          "reporter, server and groups: the signal, the crashing thread's stack, registers\n"
          "and raw stack memory, the other threads' stacks and the loaded objects with\n"
          "their build ids.  The program's files must be where they were (or be found by\n"
          "build id under /usr/lib/debug) for the stacks to unwind.  The log says\n"
          "CRASH_SOURCE core.\n"
          "  --exe PATH         the crashed program's file (default: found from the core)\n"
          "  --app NAME         APPLICATION_NAME (default: the executable's file name)\n"
          "  --app-version V    APPLICATION_VERSION (default: none)\n"
          "  --spool DIR        write <crash id>.crashlog into DIR atomically, with DIR's\n"
          "                     installation id, for faultline-report to send (default:\n"
          "                     $FAULTLINE_SPOOL, else $XDG_STATE_HOME/faultline, else\n"
          "                     $HOME/.local/state/faultline)\n"
          "  -o FILE            write the log to FILE instead ('-': standard output)\n"
          "The path of the log written goes to standard output.\n"
          "Exit: 0 done; 1 not a core, a truncated core, another architecture, no threads,\n"
          "or the log could not be written (nothing is left behind); 64 usage.\n",
          f);
}

/* The spool the client and the reporter default to. */
static int default_spool(char *out, size_t cap)
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

static int mkdirs(const char *dir)
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

/* The spool's installation id (src/client/spool.c names and makes it the
 * same way): read it, or create it -- written to a file of our own and
 * linked into place, so a client starting at the same moment sees either
 * no file or a whole one, and of two creators one wins. */
static int install_id(const char *spool, char id[40], char *why, size_t whycap)
{
    char path[4200], tmp[4300], fresh[40];
    snprintf(path, sizeof path, "%s/installation-id", spool);
    if (read_id(path, id) == 0)
        return 0;
    FILE *r = fopen("/proc/sys/kernel/random/uuid", "r");
    if (!r || !fgets(fresh, sizeof fresh, r) || strlen(fresh) < 36) {
        if (r)
            fclose(r);
        snprintf(why, whycap, "cannot make an installation id");
        return -1;
    }
    fclose(r);
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

int fl_cmd_core(int argc, char **argv)
{
    enum { O_EXE = 256, O_APP, O_VER, O_SPOOL };
    static const struct option lopts[] = {
        {"exe", required_argument, NULL, O_EXE},
        {"app", required_argument, NULL, O_APP},
        {"app-version", required_argument, NULL, O_VER},
        {"spool", required_argument, NULL, O_SPOOL},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fl_core_opts opts = {.crash_time = -1};
    const char *spool = NULL, *output = NULL;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:h", lopts, NULL)) != -1) {
        switch (c) {
        case O_EXE:
            opts.exe = optarg;
            break;
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
    if (optind + 1 != argc) {
        if (optind == argc)
            fprintf(stderr, "faultline core: no core file given; see faultline core --help\n");
        else
            fprintf(stderr,
                    "faultline core: one core file at a time (%d given); see faultline core "
                    "--help\n",
                    argc - optind);
        return FL_EXIT_USAGE;
    }
    if (spool && output) {
        fprintf(stderr, "faultline core: --spool and -o exclude each other; see faultline core "
                        "--help\n");
        return FL_EXIT_USAGE;
    }
    const char *core = argv[optind];
    char err[512], why[512] = "", dir[4096], id[40], tmp[4200] = "", final[4200];
    fl_core_info info;
    FILE *out = NULL;
    int rc;

    if (output) {
        if (!strcmp(output, "-")) {
            rc = fl_core_to_crashlog(core, &opts, stdout, &info, err, sizeof err);
            if (rc) {
                fprintf(stderr, "faultline core: %s\n", err);
                return FL_EXIT_ERROR;
            }
            return FL_EXIT_OK;
        }
        /* -o FILE: the same temp-and-rename, beside FILE, so a failure
         * leaves no half log under its name. */
        snprintf(final, sizeof final, "%s", output);
        snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", output);
    } else {
        if (!spool) {
            if (default_spool(dir, sizeof dir) != 0) {
                fprintf(stderr, "faultline core: no spool (set FAULTLINE_SPOOL or use --spool)\n");
                return FL_EXIT_USAGE;
            }
            spool = dir;
        }
        if (mkdirs(spool) != 0) {
            fprintf(stderr, "faultline core: %s: %s\n", spool, strerror(errno));
            return FL_EXIT_ERROR;
        }
        if (install_id(spool, id, why, sizeof why) != 0) {
            fprintf(stderr, "faultline core: %s\n", why);
            return FL_EXIT_ERROR;
        }
        opts.install_id = id;
        snprintf(tmp, sizeof tmp, "%s/.core.XXXXXX", spool);
    }
    int fd = mkstemp(tmp);
    if (fd < 0 || !(out = fdopen(fd, "w"))) {
        fprintf(stderr, "faultline core: %s: %s\n", tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return FL_EXIT_ERROR;
    }
    rc = fl_core_to_crashlog(core, &opts, out, &info, err, sizeof err);
    if (rc == FL_CORE_OK && (fflush(out) != 0 || fsync(fileno(out)) != 0)) {
        snprintf(err, sizeof err, "%.400s: %s", tmp, strerror(errno));
        rc = FL_CORE_EWRITE;
    }
    if (fclose(out) != 0 && rc == FL_CORE_OK) {
        snprintf(err, sizeof err, "%.400s: %s", tmp, strerror(errno));
        rc = FL_CORE_EWRITE;
    }
    if (rc == FL_CORE_OK && !output)
        snprintf(final, sizeof final, "%s/%s.crashlog", spool, info.crash_id);
    if (rc == FL_CORE_OK && rename(tmp, final) != 0) {
        snprintf(err, sizeof err, "%.400s: %s", final, strerror(errno));
        rc = FL_CORE_EWRITE;
    }
    if (rc != FL_CORE_OK) {
        unlink(tmp);
        fprintf(stderr, "faultline core: %s\n", err);
        return FL_EXIT_ERROR;
    }
    printf("%s\n", final);
    return FL_EXIT_OK;
}
