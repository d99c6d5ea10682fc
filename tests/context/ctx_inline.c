/*
 * Code shapes for the call graph's inlining edges, built with
 * -finstrument-functions into a library that only the allocation test
 * (test_ctxdecode_alloc.c) reads, never runs: instrumented functions
 * inlined into an instrumented host that calls others (weak edges), one
 * inlined inside another (nested spans), and inlined into a function
 * that is not instrumented itself (reached through it).  GCC keeps the
 * hooks of an inlined instrumented function wherever it lands.
 */
#define NOINLINE __attribute__((noinline))
#define INLINE static inline __attribute__((always_inline))

static volatile int sink;

__attribute__((no_instrument_function)) NOINLINE void inl_sink(int x)
{
    sink = x;
}

NOINLINE void inl_leaf1(int x)
{
    inl_sink(x);
}

NOINLINE void inl_leaf2(int x)
{
    inl_sink(x + 1);
}

INLINE void inl_inner(int x)
{
    inl_leaf1(x);
}

INLINE void inl_outer(int x)
{
    inl_sink(x);
    inl_inner(x);
    inl_leaf2(x);
    inl_sink(-x);
}

__attribute__((no_instrument_function)) NOINLINE void inl_transparent(int x)
{
    inl_outer(x);
    inl_leaf1(x);
}

void inl_calls_transparent(int x)
{
    inl_transparent(x);
}

void inl_host(int x)
{
    inl_outer(x);
    inl_leaf2(x * 2);
}
