/* One crash site reached by two different paths.  Built twice by the test
 * (gcc -O2 and clang -O1 with padding that moves every address), so the
 * same crash has different addresses in the two builds.
 *   grouping a  -> main > path_a > step_a > crash_site
 *   grouping b  -> main > path_b > step_b > crash_site
 * Compiled as C++ (g++ and clang++), crash_site's std::vector::at throws
 * std::out_of_range, which nothing catches: the process ends in
 * std::terminate and abort, and the signature must still start at the
 * code that threw, not at libstdc++'s frames (std::terminate,
 * __cxa_throw, std::__throw_out_of_range_fmt), which every uncaught
 * exception of the program shares -- unnamed offsets when the server has
 * no debug file for libstdc++.
 * With STRING_ARG (C++ only) crash_site takes a std::string too and the
 * crash is a segmentation fault: the test builds it with libstdc++ and
 * with libc++. */
#include <faultline.h>
#include <stdlib.h>
#include <string.h>
#ifdef __cplusplus
#include <string>
#include <vector>
#endif

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

#ifdef PAD
NOINLINE int padding(int x)
{
    volatile int acc = x;
    for (int i = 0; i < 64; i++)
        acc = acc * 31 + i;
    return acc;
}
#endif

#if defined(__cplusplus) && defined(STRING_ARG)
/* Built by g++ with libstdc++ and by clang++ with libc++: the toolchains
 * spell crash_site's parameter apart ("std::__cxx11::basic_string<...>",
 * "std::__1::basic_string<...>"), and the crash is one crash. */
#define CRASH_ARG NULL
NOINLINE static void crash_site(volatile int *p, const std::string &tag)
{
    *p = (int)tag.size();
    BARRIER();
}
#define CALL_SITE(p) crash_site(p, std::string("grouping"))
#elif defined(__cplusplus)
static volatile int seven = 7;
#define CRASH_ARG (&seven)
NOINLINE static void crash_site(volatile int *p)
{
    std::vector<int> v(3);
    v.at((size_t)*p) = 1; /* *p is 7: out of range */
    BARRIER();
}
#else
#define CRASH_ARG NULL
NOINLINE static void crash_site(volatile int *p)
{
    *p = 1;
    BARRIER();
}
#endif
#ifndef CALL_SITE
#define CALL_SITE(p) crash_site(p)
#endif

NOINLINE static void step_a(volatile int *p)
{
    CALL_SITE(p);
    BARRIER();
}

NOINLINE static void path_a(volatile int *p)
{
    step_a(p);
    BARRIER();
}

/* Path b must be different code, or gcc folds it into path a
 * (identical-code folding) and both crashes have one stack. */
static volatile int b_calls;

NOINLINE static void step_b(volatile int *p)
{
    b_calls += 2;
    CALL_SITE(p);
    BARRIER();
}

NOINLINE static void path_b(volatile int *p)
{
    b_calls += 3;
    step_b(p);
    BARRIER();
}

int main(int argc, char **argv)
{
    const char *v = getenv("GROUPING_VERSION");
    if (!faultline_install("groupapp", v ? v : "1.0", NULL))
        return 3;
    if (argc > 1 && !strcmp(argv[1], "a"))
        path_a(CRASH_ARG);
    if (argc > 1 && !strcmp(argv[1], "b"))
        path_b(CRASH_ARG);
    return 0;
}
