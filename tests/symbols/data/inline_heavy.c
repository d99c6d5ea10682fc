/* A program with deep inlining for the symbolization exactness tests:
 * chains of static inline functions across two files, loops, a recursive
 * function, a function pointer table and a noinline leaf, built with
 * -O2 -g by gcc (DWARF 5) and clang (-gdwarf-4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inline_heavy.h"

struct vec {
    unsigned *v;
    size_t n;
};

static inline unsigned get(const struct vec *a, size_t i)
{
    return i < a->n ? a->v[i] : 0;
}

static inline void put(struct vec *a, size_t i, unsigned x)
{
    if (i < a->n)
        a->v[i] = x;
}

static inline unsigned level3(const struct vec *a, size_t i)
{
    return mix2(get(a, i), get(a, i + 1)) ^ (unsigned)i;
}

static inline unsigned level2(const struct vec *a, size_t i)
{
    unsigned s = 0;
    for (size_t k = 0; k < 4; k++)
        s += level3(a, i + k) * (unsigned)(k + 1);
    return s;
}

static inline unsigned level1(struct vec *a, size_t i)
{
    unsigned s = level2(a, i);
    put(a, i, s);
    return s;
}

static void sort_small(struct vec *a)
{
    for (size_t i = 1; i < a->n; i++)
        for (size_t j = i; j > 0 && a->v[j - 1] > a->v[j]; j--)
            SWAP(a->v[j - 1], a->v[j]);
}

__attribute__((noinline)) static unsigned leaf(unsigned x)
{
    return mix(x) | 1;
}

static unsigned rec(unsigned n)
{
    if (n < 2)
        return leaf(n);
    return rec(n - 1) + mix(n) % 7 + rec(n / 2);
}

static unsigned op_add(unsigned a, unsigned b) { return level3(&(struct vec){&a, 1}, 0) + b; }
static unsigned op_xor(unsigned a, unsigned b) { return mix2(a, b) ^ b; }
static unsigned op_mul(unsigned a, unsigned b) { return (a | 1) * mix(b); }

static unsigned (*const ops[])(unsigned, unsigned) = {op_add, op_xor, op_mul};

unsigned run(struct vec *a, unsigned seed)
{
    unsigned acc = seed;
    for (size_t i = 0; i < a->n; i++)
        acc += level1(a, i);
    sort_small(a);
    for (size_t i = 0; i + 1 < a->n; i++)
        acc = ops[(a->v[i] + i) % 3](acc, a->v[i + 1]);
    return acc + rec(seed % 12);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    struct vec a = {calloc(n ? n : 1, sizeof(unsigned)), n};
    if (!a.v)
        return 1;
    for (size_t i = 0; i < n; i++)
        a.v[i] = mix((unsigned)i * 2654435761U);
    printf("%u\n", run(&a, (unsigned)argc));
    if (argc > 2 && strcmp(argv[2], "dump") == 0)
        for (size_t i = 0; i < n; i++)
            printf("%u\n", a.v[i]);
    free(a.v);
    return 0;
}
