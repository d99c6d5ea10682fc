/* A third module for tailcall.c's case k: main calls libtailbar's
 * api_third, which jumps to third_fn here, which crashes.  This library
 * has a static function named api_third too, which also ends by jumping
 * to third_fn: it is not the function main called (a call through the
 * PLT reaches exported functions only), so it must not be put back. */
#define NOINLINE __attribute__((noinline, noclone))

static volatile int third_counter;

NOINLINE int third_fn(volatile int *p)
{
    third_counter += 3;
    return *p + 3; /* p is NULL */
}

NOINLINE static int api_third(volatile int *p)
{
    third_counter += 2;
    return third_fn(p);
}

int third_other(volatile int *p)
{
    return api_third(p) + 1;
}
