#include <stdio.h>

#include "fl_cli.h"

int fl_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("faultline %s\n", FL_VERSION_STRING);
    return 0;
}
