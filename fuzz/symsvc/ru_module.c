/* The module fuzz_remote_unwind unwinds through (fuzz/symsvc/ru_module.elf):
 * functions with different call-frame shapes -- a frame pointer, a frame
 * on the stack without one, callee-saved registers, a leaf -- and no C
 * library, so that the file is small and its addresses fixed.  Built with
 *   gcc -O2 -fno-inline -fasynchronous-unwind-tables -fpie -nostdlib -static-pie \
 *       -Wl,--build-id -Wl,--eh-frame-hdr -o ru_module.elf ru_module.c
 * Running it faults in leaf() (a write to address 0). */
volatile int sink;

__attribute__((noinline)) void leaf(int *p)
{
    *p = sink;
}

__attribute__((noinline)) int saves(int a, int b, int c)
{
    int x = a * b, y = b * c, z = a + c;
    leaf((int *)(long)sink);
    return x + y + z + sink;
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) int framed(int n)
{
    volatile char buf[64];
    for (int i = 0; i < 64; i++)
        buf[i] = (char)(n + i);
    return saves(n, buf[3], buf[9]) + buf[1];
}

__attribute__((noinline)) int big(int n)
{
    volatile long a[40];
    for (int i = 0; i < 40; i++)
        a[i] = n + i;
    return framed((int)a[n % 40]) + (int)a[7];
}

void _start(void)
{
    sink = big(5);
    for (;;)
        ;
}
