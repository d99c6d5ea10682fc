/* A shared library whose symbols a call from another module can and
 * cannot reach (fl_symcache_symbol_named, test_symcache.c): built -O2
 * -fPIC -shared into callsites/libexports.so. */

volatile int sink;

/* Exported: global, weak, protected. */
int api_global(int x)
{
    sink += x;
    return x + 1;
}

__attribute__((weak)) int api_weak(int x)
{
    sink += 2 * x;
    return x + 2;
}

__attribute__((visibility("protected"))) int api_protected(int x)
{
    sink += 3 * x;
    return x + 3;
}

/* Not: a static function, a hidden one, an ifunc (its symbol is the
 * resolver). */
__attribute__((noinline, used)) static int api_static(int x)
{
    sink += 4 * x;
    return x + 4;
}

__attribute__((visibility("hidden"), noinline)) int api_hidden(int x)
{
    sink += 5 * x;
    return x + 5;
}

static int impl_one(int x)
{
    return api_static(x) + api_hidden(x);
}

static int (*resolve_api_ifunc(void))(int)
{
    return impl_one;
}

int api_ifunc(int x) __attribute__((ifunc("resolve_api_ifunc")));
