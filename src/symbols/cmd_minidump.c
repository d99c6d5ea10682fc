/*
 * cmd_minidump.c - `faultline minidump FILE`: a crash log from a
 * Breakpad/Crashpad minidump (fl_minidump.h does the reading; the log goes
 * into the spool by fl_cmd_spool.h, as `faultline core`'s does).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fl_cmd_spool.h"
#include "fl_elffile.h"
#include "fl_exit.h"
#include "fl_minidump.h"

static void usage(FILE *f)
{
    fputs("usage: faultline minidump FILE [--app NAME] [--app-version V]\n"
          "                          [--obj FILE|DIR]... [--no-unwind] [--spool DIR | -o FILE]\n"
          "\n"
          "Turns a Linux minidump (.dmp, as Breakpad and Crashpad write them; x86-64 or\n"
          "arm64) into a Faultline crash log, so that crashes of programs that use\n"
          "Breakpad or Crashpad reach the same reporter, server and groups: the signal,\n"
          "its code and fault address, the crashing thread's stack, registers and raw\n"
          "stack memory, the other threads' stacks and names, and the loaded objects with\n"
          "their build ids.  The stacks are unwound with the objects' files where they\n"
          "are here under the path the minidump names (with the same build id) or by\n"
          "build id under /usr/lib/debug; without them a thread keeps its pc.  The log\n"
          "says CRASH_SOURCE minidump.\n"
          "  --app NAME         APPLICATION_NAME (default: a Crashpad dump's \"prod\"\n"
          "                     annotation, else the main module's file name)\n"
          "  --app-version V    APPLICATION_VERSION (default: a Crashpad dump's \"ver\"\n"
          "                     annotation, else none)\n"
          "  --obj FILE|DIR     a program or library the crashed process had loaded, used\n"
          "                     for the module with its build id before the path the\n"
          "                     dump names (a dump from another machine: your build's\n"
          "                     files); a directory gives every such file under it;\n"
          "                     repeatable\n"
          "  --no-unwind        do not unwind: each thread keeps its pc only\n"
          "  --spool DIR        write <crash id>.crashlog into DIR atomically, with DIR's\n"
          "                     installation id, for faultline-report to send (default:\n"
          "                     $FAULTLINE_SPOOL, else $XDG_STATE_HOME/faultline, else\n"
          "                     $HOME/.local/state/faultline); then the oldest logs beyond\n"
          "                     $FAULTLINE_SPOOL_MAX (default 100, 0: all kept) are deleted\n"
          "  -o, --output FILE  write the log to FILE instead ('-': standard output)\n"
          "The path of the log written goes to standard output.\n"
          "Exit: 0 done; 1 not a minidump, a truncated or malformed one, one of another\n"
          "architecture or OS, no threads, or the log could not be written (nothing is\n"
          "left behind); 64 usage.\n",
          f);
}

typedef struct md_job {
    const char *path;
    fl_minidump_opts *opts;
} md_job;

/* find_module over the --obj files (ctx: the fl_elf_objs). */
static int find_obj(void *ctx, const char *build_id, const char *dump_path, char *path, size_t cap)
{
    (void)dump_path;
    const char *p = fl_elf_objs_find(ctx, build_id);
    if (!p)
        return -1;
    snprintf(path, cap, "%s", p);
    return 0;
}

static int write_md_log(void *arg, FILE *out, const char *install_id, char crash_id[40], char *err,
                        size_t errcap)
{
    md_job *j = arg;
    fl_minidump_info info;
    j->opts->install_id = install_id;
    int rc = fl_minidump_to_crashlog(j->path, j->opts, out, &info, err, errcap);
    if (rc == FL_MINIDUMP_OK)
        memcpy(crash_id, info.crash_id, sizeof info.crash_id);
    return rc;
}

static int minidump_main(int argc, char **argv, fl_elf_objs *objs)
{
    enum { O_APP = 256, O_VER, O_SPOOL, O_NOUNWIND, O_OBJ };
    static const struct option lopts[] = {
        {"app", required_argument, NULL, O_APP},
        {"app-version", required_argument, NULL, O_VER},
        {"spool", required_argument, NULL, O_SPOOL},
        {"output", required_argument, NULL, 'o'},
        {"no-unwind", no_argument, NULL, O_NOUNWIND},
        {"obj", required_argument, NULL, O_OBJ},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    fl_minidump_opts opts = {.crash_time = -1, .unwind = true};
    const char *spool = NULL, *output = NULL;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:h", lopts, NULL)) != -1) {
        switch (c) {
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
        case O_NOUNWIND:
            opts.unwind = false;
            break;
        case O_OBJ: {
            char why[256];
            if (fl_elf_objs_add(objs, optarg, FL_ELF_WANT_CODE, why, sizeof why) != 0) {
                fprintf(stderr, "faultline minidump: --obj %s: %s\n", optarg, why);
                return FL_EXIT_ERROR;
            }
            break;
        }
        case 'h':
            usage(stdout);
            return FL_EXIT_OK;
        case ':':
            fprintf(stderr, "faultline minidump: %s needs a value; see faultline minidump --help\n",
                    argv[optind - 1]);
            return FL_EXIT_USAGE;
        default:
            fprintf(stderr,
                    "faultline minidump: unknown option '%s'; see faultline minidump --help\n",
                    argv[optind - 1]);
            return FL_EXIT_USAGE;
        }
    }
    if (objs->n && !opts.unwind) {
        fprintf(stderr, "faultline minidump: --obj has no use with --no-unwind; see faultline "
                        "minidump --help\n");
        return FL_EXIT_USAGE;
    }
    if (spool && output) {
        fprintf(stderr, "faultline minidump: --spool and -o exclude each other; see faultline "
                        "minidump --help\n");
        return FL_EXIT_USAGE;
    }
    if (optind + 1 != argc) {
        if (optind == argc)
            fprintf(stderr,
                    "faultline minidump: no minidump given; see faultline minidump --help\n");
        else
            fprintf(stderr,
                    "faultline minidump: one minidump at a time (%d given); see faultline "
                    "minidump --help\n",
                    argc - optind);
        return FL_EXIT_USAGE;
    }
    if (objs->n) {
        opts.find_module = find_obj;
        opts.find_ctx = objs;
    }
    char dir[4096];
    if (!output && !spool) {
        if (fl_cmd_default_spool(dir, sizeof dir) != 0) {
            fprintf(stderr, "faultline minidump: no spool (set FAULTLINE_SPOOL or use --spool)\n");
            return FL_EXIT_USAGE;
        }
        spool = dir;
    }
    if (spool && fl_cmd_mkdirs(spool) != 0) {
        fprintf(stderr, "faultline minidump: %s: %s\n", spool, strerror(errno));
        return FL_EXIT_ERROR;
    }
    md_job j = {argv[optind], &opts};
    int rc = fl_cmd_write_log("faultline minidump", spool, output, "minidump", write_md_log, &j);
    /* An --obj file (not one found in a directory) that no walk used:
     * most likely another build's. */
    for (size_t i = 0; rc == FL_EXIT_OK && i < objs->n; i++)
        if (objs->o[i].given && !objs->o[i].used)
            fprintf(stderr,
                    "faultline minidump: warning: --obj %s (build id %s) was not used: no "
                    "thread's pc or stack reaches a module with that build id (another build?)\n",
                    objs->o[i].path, objs->o[i].id);
    return rc;
}

int fl_cmd_minidump(int argc, char **argv)
{
    fl_elf_objs objs = {0};
    int rc = minidump_main(argc, argv, &objs);
    fl_elf_objs_free(&objs);
    return rc;
}
