#include <stdio.h>
#include <string.h>

#include "fl_cli.h"
#include "fl_exit.h"

int fl_cmd_version(int argc, char **argv)
{
    if (argc > 1) {
        if (strcmp(argv[1], "--help") && strcmp(argv[1], "-h")) {
            fprintf(stderr, "faultline version: %s '%s'; see faultline version --help\n",
                    argv[1][0] == '-' ? "unknown option" : "unexpected argument", argv[1]);
            return FL_EXIT_USAGE;
        }
        printf("usage: faultline version\n"
               "  Prints the version (also: faultline --version).\n");
        return FL_EXIT_OK;
    }
    printf("faultline %s\n", FL_VERSION_STRING);
    return FL_EXIT_OK;
}
