#include <stdio.h>
#include <string.h>

#include "fl_cli.h"
#include "fl_exit.h"

int fl_cmd_version(int argc, char **argv)
{
    if (argc > 1) {
        int help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");
        if (!help)
            fprintf(stderr, "faultline version: unexpected argument '%s'\n", argv[1]);
        fprintf(help ? stdout : stderr, "usage: faultline version\n"
                                        "  Prints the version (also: faultline --version).\n");
        return help ? FL_EXIT_OK : FL_EXIT_USAGE;
    }
    printf("faultline %s\n", FL_VERSION_STRING);
    return FL_EXIT_OK;
}
