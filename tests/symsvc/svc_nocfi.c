/*
 * svc_nocfi.c - functions built without unwind tables (see svc_crash.c,
 * mode nocfi): -g makes gcc write their CFI to .debug_frame, which is not
 * loaded, so only a reader of the file can unwind through them.
 */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
typedef void (*svc_nocfi_fn)(int);
volatile int svc_nocfi_sink;
NOINLINE static void nocfi_inner(svc_nocfi_fn fn, int x)
{
    fn(x + 1);
    KEEP_FRAME();
}
NOINLINE static void nocfi_middle(svc_nocfi_fn fn, int x)
{
    int v[4] = {x, x, x, x};
    nocfi_inner(fn, v[x & 3]);
    svc_nocfi_sink = v[1];
    KEEP_FRAME();
}
NOINLINE void svc_nocfi_outer(svc_nocfi_fn fn, int x)
{
    nocfi_middle(fn, x * 2);
    KEEP_FRAME();
}
