/*
 * walk.c - ctxbench's workload: a binary tree of calls, `depth` levels of
 * three different node functions, with a log point at each leaf.
 *
 * Which node function a call goes to depends on the value it carries, so
 * the stacks at the leaves differ (a context that never changed would
 * tell nothing) and the compiler cannot fold the tree.  Each leaf records
 * one event -- its value -- into a ring, as a log point would; what
 * WALK_MODE adds to that record is what is measured:
 *   0  nothing (the baseline, and the hooks alone when instrumented)
 *   1  faultline_context(): 8 bytes
 *   2  backtrace() into the record: 8 bytes per frame
 * Built once per variant (CMakeLists.txt); WALK_SUFFIX names the copy.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <stdint.h>

#include "ctxbench.h"
#include "faultline.h"

#define NOINLINE __attribute__((noinline))
#define NOINSTR __attribute__((no_instrument_function))
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define N(f) CAT(f, WALK_SUFFIX)
#define STR_(x) #x
#define STR(x) STR_(x)

/* The children's values, one pair per node function: macros, not inline
 * functions, because -finstrument-functions keeps the hooks of inlined
 * functions and these are not calls of the program being modelled. */
#define A_LEFT(x) ((x)*0x9e3779b97f4a7c15ull + 1)
#define A_RIGHT(x) (((x) ^ ((x) >> 29)) * 0xbf58476d1ce4e5b9ull)
#define B_LEFT(x) (((x) << 7 | (x) >> 57) + 0x632be59bd9b4e019ull)
#define B_RIGHT(x) ((x)*0x94d049bb133111ebull ^ 0x2545f4914f6cdd1dull)
#define C_LEFT(x) (((x) ^ 0xd6e8feb86659fd93ull) * 5 + 3)
#define C_RIGHT(x) ((x) + ((x) >> 17) + 0x8cb92ba72f3d8dd7ull)
/* Which node function a value goes to. */
#define KIND(x) ((x) % 3)

enum { RING = 256, MAXF = 64 };

/* One record per log point; the ring keeps the last RING, as an
 * in-memory log would, and stays in the L1 cache for every variant but
 * bt, whose records are what backtrace() makes them.  Not static: GCC
 * drops the stores to a static array nothing reads, and the log point
 * with them. */
struct rec {
    uint64_t event;
#if WALK_MODE == 1
    uint64_t ctx;
#elif WALK_MODE == 2
    int n;
    void *pc[MAXF];
#endif
};
struct rec N(walk_ring)[RING];

struct walk_stats N(walk_stats);

NOINLINE static uint64_t N(leaf)(uint64_t x)
{
    x ^= x >> 31;
    struct rec *r = &N(walk_ring)[N(walk_stats).logged++ % RING];
    r->event = x;
#if WALK_MODE == 1
    N(walk_stats).ctx = r->ctx = faultline_context();
#elif WALK_MODE == 2
    r->n = backtrace(r->pc, MAXF);
    N(walk_stats).frames += (uint64_t)r->n;
    /* Every leaf is as deep as the others: a count that differs means the
     * compiler removed calls (see BARRIER below). */
    if (N(walk_stats).depth && N(walk_stats).depth != r->n)
        N(walk_stats).uneven = 1;
    N(walk_stats).depth = r->n;
#endif
    return x;
}

NOINLINE static uint64_t N(node_a)(uint64_t x, int d);
NOINLINE static uint64_t N(node_b)(uint64_t x, int d);
NOINLINE static uint64_t N(node_c)(uint64_t x, int d);

/* Calls, not a table of pointers: the calls stay direct, as most calls
 * are, and `faultline decode` sees them as such. */
#define CHILD(x, d)                                                                                \
    ((d) == 0       ? N(leaf)(x)                                                                   \
     : KIND(x) == 0 ? N(node_a)(x, d)                                                              \
     : KIND(x) == 1 ? N(node_b)(x, d)                                                              \
                    : N(node_c)(x, d))

/* The barrier after the calls: without it GCC turns the second call of a
 * function to itself into a loop (tail recursion with an accumulator) in
 * the plain builds only -- the hooks' exit call forbids it -- and the
 * copies would no longer make the same calls. */
#define BARRIER() __asm__ volatile("" ::: "memory")

NOINLINE static uint64_t N(node_a)(uint64_t x, int d)
{
    uint64_t l = CHILD(A_LEFT(x), d - 1), r = CHILD(A_RIGHT(x), d - 1);
    BARRIER();
    return l + r;
}

NOINLINE static uint64_t N(node_b)(uint64_t x, int d)
{
    uint64_t l = CHILD(B_LEFT(x), d - 1), r = CHILD(B_RIGHT(x), d - 1);
    BARRIER();
    return l ^ r;
}

NOINLINE static uint64_t N(node_c)(uint64_t x, int d)
{
    uint64_t l = CHILD(C_LEFT(x), d - 1), r = CHILD(C_RIGHT(x), d - 1);
    BARRIER();
    return l - r;
}

/* The root: 1 + (2^depth - 1) + 2^depth = 2^(depth+1) calls, 2^depth log
 * points, each under depth + 2 functions of this file. */
uint64_t N(walk)(uint64_t seed, int depth)
{
    uint64_t r = CHILD(seed, depth);
    BARRIER(); /* a frame of its own, not a tail call */
    return r;
}

/* The stack of the last leaf a walk visits (the right child all the way
 * down), innermost first, as names: what `faultline decode` must give for
 * the walk's last context.  Returns the number of names. */
NOINSTR int N(walk_path)(uint64_t seed, int depth, const char **names, int max)
{
    static const char *const node[3] = {"node_a_" STR(WALK_SUFFIX), "node_b_" STR(WALK_SUFFIX),
                                        "node_c_" STR(WALK_SUFFIX)};
    const char *down[MAXF];
    int n = 0;
    uint64_t x = seed;
    for (int d = depth; d > 0 && n < MAXF; d--) {
        int k = (int)KIND(x);
        down[n++] = node[k];
        x = k == 0 ? A_RIGHT(x) : k == 1 ? B_RIGHT(x) : C_RIGHT(x);
    }
    if (n + 2 > max)
        return -1;
    int m = 0;
    names[m++] = "leaf_" STR(WALK_SUFFIX);
    while (n > 0)
        names[m++] = down[--n];
    names[m++] = "walk_" STR(WALK_SUFFIX);
    return m;
}
