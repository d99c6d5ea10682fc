/*
 * faultline - the server and the command-line tools, one binary.
 *
 * Each subcommand lives with its area (src/server, src/symbols,
 * src/reporter, ...) as `int fl_cmd_<name>(int argc, char **argv)`, where
 * argv[0] is the subcommand's name; this file only dispatches.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fl_cli.h"
#include "fl_exit.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    FL_CLI_COMMANDS
};

static void usage(FILE *out)
{
    fprintf(out, "usage: faultline <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'faultline <command> --help' shows a command's options.\n");
}

/* What went to stdout must have been written: a full disk or a closed
 * descriptor is said and fails the command (a reader that went away, as
 * `| head` does, is no news). */
static int checked(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (errno != EPIPE)
            fprintf(stderr, "faultline: writing the output: %s\n", strerror(errno));
        return rc ? rc : FL_EXIT_ERROR;
    }
    return rc;
}

static const command *find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(name, commands[i].name))
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "help")) {
        /* faultline help COMMAND: the command's own help. */
        const command *c = find(argv[2]);
        if (!c) {
            fprintf(stderr, "faultline: unknown command '%s'; see faultline --help\n", argv[2]);
            return FL_EXIT_USAGE;
        }
        char *hargv[] = {argv[2], (char *)"--help", NULL};
        return checked(c->run(2, hargv));
    }
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return checked(argc < 2 ? FL_EXIT_USAGE : FL_EXIT_OK);
    }
    if (!strcmp(argv[1], "--version")) {
        printf("faultline %s\n", FL_VERSION_STRING);
        return checked(0);
    }
    const command *c = find(argv[1]);
    if (c)
        return checked(c->run(argc - 1, argv + 1));
    /* One line that says what is wrong: the whole usage after it would
     * scroll it away. */
    fprintf(stderr, "faultline: unknown %s '%s'; see faultline --help\n",
            argv[1][0] == '-' ? "option" : "command", argv[1]);
    return FL_EXIT_USAGE;
}
