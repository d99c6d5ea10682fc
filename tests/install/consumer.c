#include <faultline.h>
#include <mojocrash.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static void consumer_crash(volatile int *p)
{
    *p = 1;
}

int main(int argc, char **argv)
{
    if (!MOJOCRASH_install("consumer", "2.0", NULL)) {
        fprintf(stderr, "install failed\n");
        return 3;
    }
    if (argc > 1 && !strcmp(argv[1], "crash"))
        consumer_crash(NULL);
    printf("spool=%s\n", faultline_spool_dir());
    return 0;
}
