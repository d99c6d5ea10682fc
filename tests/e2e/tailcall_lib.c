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

/* tailcall.c's cases i and j: the program calls api_a or api_b, each of
 * which ends by jumping to lib_common, which crashes.  Both unwind to
 * "lib_common | main"; the program's DWARF names the function each call
 * went to (an external declaration, through the PLT), the library's says
 * where that one jumped. */
NOINLINE static int lib_common(volatile int *p, int k)
{
    lib_counter += k;
    return *p + k; /* p is NULL */
}

int api_a(volatile int *p)
{
    lib_counter += 7;
    return lib_common(p, 1);
}

int api_b(volatile int *p)
{
    lib_counter += 11;
    return lib_common(p, 2);
}

/* Case k: api_third jumps into a third module (tailcall_third.c), whose
 * static function of the same name is not this one. */
int third_fn(volatile int *p);

int api_third(volatile int *p)
{
    lib_counter += 17;
    return third_fn(p);
}
