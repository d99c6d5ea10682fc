/*
 * faultline - the server and the command-line tools, one binary.
 *
 * Each subcommand lives with its area (src/server, src/symbols,
 * src/reporter, ...) as `int fl_cmd_<name>(int argc, char **argv)`, where
 * argv[0] is the subcommand's name; this file only dispatches.
 */
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

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? FL_EXIT_USAGE : FL_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("faultline %s\n", FL_VERSION_STRING);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "faultline: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return FL_EXIT_USAGE;
}
