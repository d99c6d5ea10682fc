/* A program that knows nothing of Faultline: the LD_PRELOAD test runs it
 * with libfaultline-preload.so and expects a crash log all the same. */
#include <stdint.h>
#include <stdio.h>

static volatile uintptr_t victim_zero;

__attribute__((noinline, used)) int victim_null_read(void)
{
    int v = *(volatile int *)victim_zero;
    __asm__ volatile("" ::: "memory");
    return v;
}

int main(void)
{
    printf("victim: about to crash\n");
    fflush(stdout);
    return victim_null_read() + 3;
}
