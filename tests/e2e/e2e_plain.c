/* An unmodified program: no Faultline call.  Crashes in a named function. */
#include <stdio.h>

__attribute__((noinline)) static void plain_crash(volatile int *p)
{
    *p = 7;
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    plain_crash(NULL);
    puts("unreachable");
    return 0;
}
