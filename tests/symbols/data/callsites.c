/* Call sites for test_symcache (tests/symbols/CMakeLists.txt builds it,
 * with callsites_b.c, by gcc and clang, -O2 -g and -O2 -gdwarf-4).  The
 * test asserts the line numbers of the marked calls: keep them there. */
#include <stdlib.h>

struct blob {
    char *p;
};

volatile int sink;

#ifdef __clang__
#define NOCLONE
#else
#define NOCLONE __attribute__((noclone)) /* no leaf.constprop.0: one name */
#endif

/* A tail call to a function the module does not define. */
__attribute__((noinline)) void blob_free(struct blob *b)
{
    free(b->p); /* line 21: jmp free@plt */
}

__attribute__((noinline)) NOCLONE static int leaf(int x)
{
    sink = x;
    return sink + 1;
}

/* A tail call to a function of the same file. */
__attribute__((noinline)) NOCLONE static int hop(int x)
{
    return leaf(x * 3); /* line 33: jmp leaf */
}

/* A tail call to a function of another unit (callsites_b.c), called
 * through a declaration. */
int far_away(int x);
__attribute__((noinline)) int relay(int x)
{
    return far_away(x + 1); /* line 41: jmp far_away */
}

/* Recursion: gcc inlines sum into main once and calls it out of line
 * from there, the call naming sum's abstract DIE (DW_AT_inline), which
 * the out-of-line copy's DW_AT_abstract_origin points at. */
struct node {
    struct node *l, *r;
    int v;
};
int sum(const struct node *n)
{
    if (!n)
        return 0;
    return n->v + sum(n->l) + sum(n->r);
}

int main(int argc, char **argv)
{
    (void)argv;
    struct blob b = {malloc(16)};
    blob_free(&b);
    sink = hop(argc);
    blob_free(&b); /* the return address test_symcache looks up */
    struct node x = {0, 0, argc}, y = {&x, 0, 2};
    sink = sum(&y);
    return relay(sink);
}

/* Tail calls the DWARF does not name (test_symcache's check_unknown_tails).
 * mixed jumps through a pointer on one branch: gcc writes no call site
 * for that jump and leaves DW_AT_call_all_calls off mixed; clang writes
 * one with DW_AT_call_target.  only_direct's tail calls are all direct;
 * through_ptr has nothing but a jump through a pointer. */
int (*tail_fp)(int *);
__attribute__((noinline)) NOCLONE int via_b(int *p)
{
    sink = *p;
    return sink + 1;
}
__attribute__((noinline)) NOCLONE int mixed(int *p, int k)
{
    if (k == 1)
        return tail_fp(p);
    return via_b(p);
}
__attribute__((noinline)) NOCLONE int only_direct(int *p, int k)
{
    if (k == 2)
        return via_b(p + 1);
    return via_b(p);
}
__attribute__((noinline)) NOCLONE int through_ptr(int *p)
{
    return tail_fp(p);
}
/* Its first instruction is its tail call: clang's site is its entry. */
__attribute__((noinline)) NOCLONE int first_jump(int *p)
{
    return via_b(p);
}
