// Call sites of C++ member functions for test_symcache (built with g++
// -O2 -g when there is one).  The test asserts the line numbers of the
// marked calls: keep them where they are.
#include <cstdlib>

struct Blob {
    char *p;
    // gcc places an out-of-line copy (perhaps a clone: .isra.0) under a
    // DIE whose abstract origin has DW_AT_specification to this one.
    __attribute__((noinline)) void release() { std::free(p); } // line 10: jmp free@plt
    ~Blob();
};

__attribute__((noinline)) Blob::~Blob()
{
    release(); // line 16: jmp to release
}

int main()
{
    Blob b{static_cast<char *>(std::malloc(16))};
    b.release();
    b.release(); // the return address test_symcache looks up
    return 0;
}

// A virtual call on one branch (test_symcache's test_calls_virtual): the
// DWARF names no callee for it (clang: DW_AT_call_target; g++: a call
// site without an origin, or none and no DW_AT_call_all_calls).
struct Runner {
    virtual int run(int *p);
};
volatile int run_sink;
int Runner::run(int *p)
{
    run_sink = *p;
    return run_sink;
}
__attribute__((noinline)) int run_direct(int *p)
{
    run_sink = *p;
    return run_sink + 2;
}
__attribute__((noinline)) int pick(Runner *r, int *p, int k)
{
    if (k == 1)
        return r->run(p);
    return run_direct(p);
}
