/* fl_demangle and fl_demangle_type: C++ names through the C++ runtime's
 * demangler, which Debian's libstdc++6 (a dependency of the build's
 * compilers) always provides here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fl_demangle.h"

static void expect(char *got, const char *want)
{
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void types(void **state)
{
    (void)state;
    expect(fl_demangle_type("St13runtime_error"), "std::runtime_error");
    expect(fl_demangle_type("i"), "int");
    expect(fl_demangle_type("PKc"), "char const*");
    expect(fl_demangle_type("N12_GLOBAL__N_17DerivedE"), "(anonymous namespace)::Derived");
    expect(fl_demangle_type("St12out_of_range"), "std::out_of_range");
    /* Not a type: NULL, and the caller keeps the mangled name. */
    expect(fl_demangle_type(""), NULL);
    expect(fl_demangle_type("%%% not mangled"), NULL);
    expect(fl_demangle_type("St13runtime_errorXYZ"), NULL);
}

static void names(void **state)
{
    (void)state;
    expect(fl_demangle("_Z3fooi"), "foo(int)");
    expect(fl_demangle("foo"), NULL);
    expect(fl_demangle("_Z"), NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(types), cmocka_unit_test(names)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
