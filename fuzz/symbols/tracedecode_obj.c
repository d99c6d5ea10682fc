/*
 * tracedecode_obj.c - the trace sites of the object fuzz_tracedecode
 * decodes with: every argument type (faultline.h's i u l m q Q d D s p),
 * printf's conversions with flags, widths, precisions ('*' too) and
 * length modifiers, copied and hard-coded strings, NULL, the most
 * arguments and the longest strings.
 *
 * Built by fuzz/symbols/make_tracedecode_seeds.sh into the committed
 * tracedecode_obj.so (and, with -DFAULTLINE_TRACE_APART, into
 * tracedecode_apart.so, whose formats are in .debug_faultline_trace): the
 * seeds name these files' build ids, so they are committed, not built.
 * trace_seed_gen (tests/trace) dlopen()s them and calls tdo_trace_all().
 */
#include <float.h>
#include <limits.h>
#include <math.h> /* INFINITY, NAN: no libm */
#include <stddef.h>

#include "faultline.h"

#define TDO_API __attribute__((visibility("default")))

/* Every argument type, with the conversions that take it. */
TDO_API void tdo_trace_types(const char *copied, int n)
{
    short h = -2;
    signed char hh = -3;
    FAULTLINE_TRACE("int %d %i %5d %-5d| %+d % d %05d %.3d", n, -n, n, n, n, n, n, n);
    FAULTLINE_TRACE("short %hd %hhd %hu %hhx", h, hh, h, hh);
    FAULTLINE_TRACE("unsigned %u %o %#o %x %#x %X %#X %08x", 7u + (unsigned)n, 8u, 8u, 255u, 255u,
                    255u, 255u, 0xbeefu);
    FAULTLINE_TRACE("long %ld %li %lu %lx %lo %.0u", -1L * n, LONG_MIN, ULONG_MAX, 0xdeadUL, 9UL,
                    0u);
    FAULTLINE_TRACE("long long %lld %lli %llu %llx %#llX", LLONG_MIN, -5LL * n, ULLONG_MAX,
                    0xfeedfaceULL, 0xabcULL);
    FAULTLINE_TRACE("double %f %.2f %10.3f %-10.1f| %+e %E", n / 7.0, 3.14159, -2.5, 1.25, 1e300,
                    -1e-300);
    FAULTLINE_TRACE("double %g %G %a %A %F %#g %08.2f", 0.0001, 1e20, 1.0, -0.5, DBL_MAX, 2.0,
                    -1.5);
    FAULTLINE_TRACE("specials %f %e %g %f", (double)INFINITY, -(double)INFINITY, (double)NAN, -0.0);
    FAULTLINE_TRACE("float %f, long double %Lf %Le %Lg", 1.5f, (long double)n / 3, LDBL_MAX,
                    LDBL_MIN);
    FAULTLINE_TRACE("strings [%s] [%10s] [%-10s] [%.3s] [%s]", copied, "lit", copied, copied,
                    (const char *)NULL);
    FAULTLINE_TRACE("pointer %p %p char %c %c %%", (void *)&h, (void *)NULL, 'x', 0);
    FAULTLINE_TRACE("star width [%*d] [%-*d] [%.*s]", 6, n, 6, n, 2, copied);
    FAULTLINE_TRACE("star both [%*.*f] [%-*.*s]", 8, 2, 2.5, 7, 3, copied);
    int count;
    FAULTLINE_TRACE("n writes nothing%n, then %d", &count, n);
    FAULTLINE_TRACE("no arguments at all, 100%% sure");
}

/* The largest record: eight copied strings longer than the recorder keeps
 * (FAULTLINE_TRACE_MAX_STR), so its strings span several TRACE_BYTES
 * lines. */
TDO_API void tdo_trace_max(const char *s)
{
    FAULTLINE_TRACE("%s|%s|%s|%s|%s|%s|%s|%s", s, s, s, s, s, s, s, s);
    FAULTLINE_TRACE("%d %u %ld %lu %lld %llu %p %f", INT_MIN, UINT_MAX, LONG_MAX, ULONG_MAX,
                    LLONG_MAX, ULLONG_MAX, (void *)s, DBL_MIN);
}

/* Hard-coded strings (kept by address) next to copied ones. */
TDO_API void tdo_trace_static(const char *copied)
{
    static const char longlit[] = "a hard-coded string longer than the 256 bytes a string keeps: "
                                  "................................................................"
                                  "................................................................"
                                  "................................................................"
                                  " and this part is never shown";
    FAULTLINE_TRACE("static [%s] [%s] copied [%s] static [%s]", "hard-coded", longlit, copied, "");
}

/* A format longer than 512 bytes. */
TDO_API void tdo_trace_long_format(int n)
{
#define DOTS "................................................................"
#if !(defined(FAULTLINE_TRACE_APART) && defined(__clang__))
    FAULTLINE_TRACE("long format " DOTS DOTS DOTS DOTS DOTS DOTS DOTS DOTS DOTS " end %d", n);
#endif
#undef DOTS
}
