/* Crashes reached through tail calls.  At -O2 with -g, release_a and
 * release_b each end by jumping to the function they call (a tail call),
 * so neither is on the stack when the callee crashes: the callee returns
 * straight to main.  Both crashes then unwind to "crash_site | main" (or
 * "free | main" for the double free), one group for two bugs, unless the
 * server puts the missing frame back from the DWARF's call sites.
 *   tailcall a -> main > release_a >(tail) crash_site        SIGSEGV
 *   tailcall b -> main > release_b >(tail) crash_site        SIGSEGV
 *   tailcall c -> main > release_b >(tail) helper >(tail) crash_site
 *   tailcall d -> main > drop_a >(tail) free: a double free  SIGABRT
 *   tailcall e -> main > drop_b >(tail) free: a double free  SIGABRT
 *   tailcall f -> main > mixed >(tail, through a pointer) crash_site:
 *                 mixed's other way, through release_a, was not taken
 *   tailcall h -> main > deep0 >(tail) deep1 > ... > deep4 >(tail)
 *                 crash_site: five tail calls, of which the server
 *                 follows four (deep4 stays missing)
 * Built with WITH_LIB, linked with tailcall_lib.c's library:
 *   tailcall g -> main > route >(tail) bar_entry >(tail) helper, both in
 *                 the library: the program's own helper, which route
 *                 can reach through mid, is another function
 *   tailcall i -> main > api_a >(tail) lib_common, both in the library
 *   tailcall j -> main > api_b >(tail) lib_common: the call names api_a
 *                 / api_b, another module's function
 *   tailcall k -> main > api_third >(tail) third_fn, in a third module
 *                 that has a static api_third of its own: nothing is put
 *                 back (the frame above's module is not where the call
 *                 went, and its static function is not the one called) */
#include <faultline.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static volatile int counter;

NOINLINE int crash_site(volatile int *p)
{
    return *p + 1; /* p is NULL */
}

NOINLINE int helper(volatile int *p)
{
    counter += 5;
    return crash_site(p);
}

/* Different code each, or gcc folds them into one (identical-code
 * folding) and the two paths have one function. */
NOINLINE int release_a(volatile int *p)
{
    counter += 1;
    return crash_site(p);
}

NOINLINE int release_b(volatile int *p, int through_helper)
{
    counter += 2;
    if (through_helper)
        return helper(p);
    return crash_site(p);
}

int (*volatile crash_fp)(volatile int *) = crash_site;

NOINLINE int mixed(volatile int *p, int k)
{
    counter += 7;
    if (k == 1)
        return crash_fp(p);
    return release_a(p);
}

/* A chain longer than the server follows.  Each adds its own amount, or
 * gcc folds them into one. */
NOINLINE int deep4(volatile int *p)
{
    counter += 41;
    return crash_site(p);
}

NOINLINE int deep3(volatile int *p)
{
    counter += 31;
    return deep4(p);
}

NOINLINE int deep2(volatile int *p)
{
    counter += 23;
    return deep3(p);
}

NOINLINE int deep1(volatile int *p)
{
    counter += 19;
    return deep2(p);
}

NOINLINE int deep0(volatile int *p)
{
    counter += 3;
    return deep1(p);
}

#ifdef WITH_LIB
int bar_entry(volatile int *p);
int api_a(volatile int *p);
int api_b(volatile int *p);
int api_third(volatile int *p);

/* helper is also the name of the library's crashing function. */
NOINLINE int mid(volatile int *p)
{
    counter += 13;
    return helper(p);
}

NOINLINE int route(volatile int *p, int k)
{
    counter += 17;
    if (k)
        return mid(p);
    return bar_entry(p);
}
#endif

struct blob {
    char *data;
    int size;
};

NOINLINE void drop_a(struct blob *b)
{
    counter += b->size;
    free(b->data);
}

NOINLINE void drop_b(struct blob *b)
{
    counter -= b->size;
    free(b->data);
}

static volatile int sink;

int main(int argc, char **argv)
{
    if (!faultline_install("tailapp", "1.0", NULL))
        return 3;
    char mode = argc > 1 ? argv[1][0] : '?';
    struct blob b = {malloc(32), 32};
    memset(b.data, 1, 32);
    switch (mode) {
    case 'a':
        sink = release_a(NULL);
        break;
    case 'b':
        sink = release_b(NULL, 0);
        break;
    case 'c':
        sink = release_b(NULL, 1);
        break;
    case 'd':
        drop_a(&b);
        drop_a(&b);
        break;
    case 'e':
        drop_b(&b);
        drop_b(&b);
        break;
    case 'f':
        sink = mixed(NULL, 1);
        break;
    case 'h':
        sink = deep0(NULL);
        break;
#ifdef WITH_LIB
    case 'g':
        sink = route(NULL, 0);
        break;
    case 'i':
        sink = api_a(NULL);
        break;
    case 'j':
        sink = api_b(NULL);
        break;
    case 'k':
        sink = api_third(NULL);
        break;
#endif
    }
    sink = counter;
    return 0;
}
