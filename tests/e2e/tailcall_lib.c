/* The library half of tailcall.c's case g: bar_entry ends by jumping to
 * its static helper, which crashes.  The program has a static function
 * named helper too. */
#define NOINLINE __attribute__((noinline))

static volatile int lib_counter;

NOINLINE static int helper(volatile int *p)
{
    lib_counter += 3;
    return *p + 3; /* p is NULL */
}

int bar_entry(volatile int *p)
{
    lib_counter += 5;
    return helper(p);
}
