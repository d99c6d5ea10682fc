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

/* Edit distance of a and b (insertions, deletions, substitutions and
 * swaps of two neighbours, one each), or 3 when it is more than 2: only
 * "is it a typo" is asked. */
static size_t typo_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 32 || m > 32 || (n > m ? n - m : m - n) > 2)
        return 3;
    size_t d[33][33];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m] > 2 ? 3 : d[n][m];
}

/* The command name is most likely a typo of: the closest within 2 edits,
 * fewer than its own length (so that "x" suggests nothing), the first on
 * a tie; NULL for none. */
static const char *closest(const char *name)
{
    const char *best = NULL;
    size_t bd = 3, len = strlen(name);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        size_t d = typo_distance(name, commands[i].name);
        if (d < bd && d < len) {
            bd = d;
            best = commands[i].name;
        }
    }
    return best;
}

/* An unknown command, in one line, with the command it is probably a
 * typo of. */
static int unknown_command(const char *name)
{
    const char *near = closest(name);
    fprintf(stderr, "faultline: unknown command '%s'%s%s%s; see faultline --help\n", name,
            near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
    return FL_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "help")) {
        /* faultline help COMMAND: the command's own help. */
        const command *c = find(argv[2]);
        if (!c)
            return unknown_command(argv[2]);
        char *hargv[] = {argv[2], (char *)"--help", NULL};
        return checked(c->run(2, hargv));
    }
    if (argc < 2) {
        /* A usage error like any other: one line (faultline(1)). */
        fprintf(stderr, "faultline: no command given; see faultline --help\n");
        return FL_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return checked(FL_EXIT_OK);
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
    if (argv[1][0] != '-')
        return unknown_command(argv[1]);
    fprintf(stderr, "faultline: unknown option '%s'; see faultline --help\n", argv[1]);
    return FL_EXIT_USAGE;
}
