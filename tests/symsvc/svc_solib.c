/*
 * svc_solib.c - the stripped shared library svc_crash crashes in.  Only
 * svc_solib_entry is exported; the frames below it are static, so after
 * stripping only the debug file (served by debuginfod) can name them.
 */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static int *volatile solib_null;

NOINLINE static void solib_faulting_store(int v)
{
    *solib_null = v;
    KEEP_FRAME();
}

NOINLINE static void solib_recurse(int depth)
{
    if (depth <= 0)
        solib_faulting_store(42);
    else
        solib_recurse(depth - 1);
    KEEP_FRAME();
}

__attribute__((visibility("default"))) void svc_solib_entry(int depth)
{
    solib_recurse(depth);
    KEEP_FRAME();
}
