/*
 * core_lfsleep.c - a program linked with the static libfaultline that
 * installs it and waits: `faultline core --from-kernel` must see that it
 * runs libfaultline without a libfaultline*.so in its maps (its own
 * handler logs its crashes), and leave its core alone.
 */
#include <stdio.h>
#include <unistd.h>

#include "faultline.h"

int main(void)
{
    if (!faultline_install("lfsleep", "1.0", NULL)) {
        fprintf(stderr, "faultline_install failed\n");
        return 1;
    }
    puts("installed");
    fflush(stdout);
    sleep(60);
    return 0;
}
